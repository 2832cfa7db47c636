# Arenas whose recorder was killed are recovered by the next ada command
# that starts (issue 38): tests/integration/orphan_test.sh. They scan the
# user's whole /dev/shm, so they run one at a time (RESOURCE_LOCK), and
# without the ADA_NO_RECOVER_ORPHANS=1 the rest of the suite runs with.
foreach(mode ls optout young unadmitted other_user)
  add_test(NAME orphan_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/orphan_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> ${mode} $<TARGET_FILE:producer_raceb>)
  set_tests_properties(orphan_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK ada_orphans LABELS "recorder;integration")
endforeach()
