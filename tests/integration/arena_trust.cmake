# The arena as untrusted input (issue 12): t_scribble damages its own
# arena one way per mode; the recorder must stay bounded, exit, flag it
# and leave a valid session (tests/integration/arena_trust_test.sh).
add_executable(t_scribble ${CMAKE_SOURCE_DIR}/tests/targets/t_scribble.c)
target_link_libraries(t_scribble PRIVATE ada_producer ada_ring_internal)
foreach(mode head_back decided head_far tail_fwd random garbage truncate fake churn recover lag stop)
  add_test(NAME arena_trust_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/arena_trust_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:t_scribble> ${mode})
  set_tests_properties(arena_trust_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                       LABELS "wal;integration")
endforeach()
