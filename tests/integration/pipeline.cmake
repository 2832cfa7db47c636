# Recording pipeline end to end: producer_kill links the producer API
# (no agent) and is recorded with `ada record --no-agent`; producer_check
# reads the session independently; the driver also runs `ada validate`.
add_executable(producer_kill ${CMAKE_SOURCE_DIR}/tests/targets/producer_kill.c)
target_link_libraries(producer_kill PRIVATE ada_producer)
add_executable(producer_check ${CMAKE_SOURCE_DIR}/tests/targets/producer_check.c)
target_link_libraries(producer_check PRIVATE ada_atf_format ada_dep_z)
foreach(mode exact kill maxdisk recover serial_kill serial_kill_old serial_kill_lie rotate_kill retention_recover enospc
             badinput)
  add_test(NAME pipeline_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/pipeline_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> ${mode})
  set_tests_properties(pipeline_${mode} PROPERTIES SKIP_RETURN_CODE 77 LABELS "wal;integration")
  ada_sanitize_tests(asan ubsan tsan TESTS pipeline_${mode})
endforeach()
# The same with ATF v2 written directly (--index-format atf; the plain
# pipeline_* record ada's default, the compact index, which producer_check
# reads through its `ada export --format atf` copy: atf_view.sh).
foreach(mode exact kill maxdisk recover rotate_kill retention_recover enospc)
  add_test(NAME pipeline_atf_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/pipeline_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> ${mode})
  set_tests_properties(pipeline_atf_${mode} PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT "ADA_TEST_INDEX_FORMAT=atf" LABELS "wal;integration")
endforeach()
