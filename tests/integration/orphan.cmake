# Arenas whose recorder was killed are recovered by the next ada command
# that starts (issue 38): tests/integration/orphan_test.sh. They run
# without the ADA_NO_RECOVER_ORPHANS=1 the rest of the suite runs with,
# each in a /dev/shm of its own (the script's mount namespace and tmpfs;
# root only, skipped otherwise): their scans, `ada recover --all` most of
# all, would otherwise take the recordings other tests kill on purpose.
# One at a time still (RESOURCE_LOCK), as they always ran.
foreach(mode ls optout young unadmitted other_user)
  add_test(NAME orphan_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/orphan_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> ${mode} $<TARGET_FILE:producer_raceb>)
  set_tests_properties(orphan_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK ada_orphans LABELS "recorder;integration")
endforeach()
