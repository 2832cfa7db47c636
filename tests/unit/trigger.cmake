# src/trigger unit tests (cmocka).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  foreach(t test_trigger_parse test_trigger_engine)
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
    target_include_directories(${t} PRIVATE ${CMOCKA_INCLUDE_DIR})
    target_link_libraries(${t} PRIVATE ada_trigger ${CMOCKA_LIBRARY} Threads::Threads m)
    add_test(NAME ${t} COMMAND ${t})
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 LABELS trigger)
    ada_sanitize_tests(asan ubsan tsan TESTS ${t})
  endforeach()
endif()

# The drain's fused pass (cidx.h ada_cidx_enc_put_ring, the trigger's
# calls_begin/end) against the general way: the same bytes and stack.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_cidx_fused ${CMAKE_CURRENT_LIST_DIR}/test_cidx_fused.c)
  target_include_directories(test_cidx_fused PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_cidx_fused PRIVATE ada_trigger ada_atf ${CMOCKA_LIBRARY} Threads::Threads)
  add_test(NAME test_cidx_fused COMMAND test_cidx_fused)
  set_tests_properties(test_cidx_fused PROPERTIES SKIP_RETURN_CODE 77 LABELS "trigger;compact")
  ada_sanitize_tests(asan ubsan TESTS test_cidx_fused)
endif()
