# The reading commands, run as root, on a session the traced program (or
# its user) shaped: a FIFO where a file belongs must not hang them, and
# nothing is written through a link planted where output goes, and no
# control byte of theirs reaches the terminal
# (tests/integration/hostile_read_test.sh). No program is recorded.
foreach(mode export_fifo export_link ls_escape crash_note ls_json_utf8)
  add_test(NAME hostile_read_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/hostile_read_test.sh $<TARGET_FILE:ada> ${mode})
  set_tests_properties(hostile_read_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
                       LABELS "atf;integration")
  ada_sanitize_tests(asan ubsan TESTS hostile_read_${mode})
endforeach()
# The export's durability: every directory it wrote synced, the one -o DIR
# was made in too (tests/integration/export_sync_test.sh, strace -y).
add_test(NAME export_atf_synced COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/export_sync_test.sh
                                        $<TARGET_FILE:ada>)
set_tests_properties(export_atf_synced PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
                     LABELS "atf;integration")
