# A file cut short under the reading commands: said in one sentence, exit
# 1, never a SIGBUS (tests/integration/shrink_read_test.sh). A small
# recording of producer_kill (no agent).
foreach(mode report dump chrome atf flame validate)
  add_test(NAME shrink_read_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shrink_read_test.sh $<TARGET_FILE:ada>
                   $<TARGET_FILE:producer_kill> ${mode})
  set_tests_properties(shrink_read_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
                       LABELS "atf;integration")
  ada_sanitize_tests(asan ubsan TESTS shrink_read_${mode})
endforeach()
