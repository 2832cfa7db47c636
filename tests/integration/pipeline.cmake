# Recording pipeline end to end: producer_kill links the producer API
# (no agent) and is recorded with `ada record --no-agent`; producer_check
# reads the session independently; the driver also runs `ada validate`.
add_executable(producer_kill ${CMAKE_SOURCE_DIR}/tests/targets/producer_kill.c)
target_link_libraries(producer_kill PRIVATE ada_producer)
add_executable(producer_check ${CMAKE_SOURCE_DIR}/tests/targets/producer_check.c)
target_link_libraries(producer_check PRIVATE ada_atf_format ada_dep_z)
foreach(mode exact kill maxdisk recover rotate_kill enospc badinput)
  add_test(NAME pipeline_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/pipeline_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> ${mode})
  set_tests_properties(pipeline_${mode} PROPERTIES SKIP_RETURN_CODE 77 LABELS "wal;integration")
  ada_sanitize_tests(asan ubsan tsan TESTS pipeline_${mode})
endforeach()
# The same with the compact index (--index-format compact): producer_check
# reads the `ada export --format atf` copy (pipeline_test.sh check()).
foreach(mode exact kill maxdisk recover rotate_kill enospc)
  add_test(NAME pipeline_compact_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/pipeline_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> ${mode})
  set_tests_properties(pipeline_compact_${mode} PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT "ADA_TEST_INDEX_FORMAT=compact" LABELS "wal;integration")
endforeach()
