# A session's owner swaps a thread_K, a pid_N (a directory in the middle
# of every path below it) or an index file for a symbolic link while a
# root command reads or recovers it: the command refuses it in one
# sentence, exits 1, and reads and writes nothing through the link
# (tests/integration/session_links_test.sh; the swap is made at a fixed
# point by an LD_PRELOAD shim, session_links_shim.c). A small recording of
# producer_kill (no agent).
add_library(adat_session_links_shim MODULE ${CMAKE_CURRENT_LIST_DIR}/session_links_shim.c)
target_link_libraries(adat_session_links_shim PRIVATE dl)
foreach(mode report_thread dump_pid validate_thread export_pid report_file recover_pid)
  add_test(NAME session_links_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/session_links_test.sh $<TARGET_FILE:ada>
                   $<TARGET_FILE:producer_kill> $<TARGET_FILE:adat_session_links_shim> ${mode})
  set_tests_properties(session_links_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
                       LABELS "atf;integration")
endforeach()
