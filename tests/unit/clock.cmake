# src/clock: the architecture's cycle counter and its rate
# (tests/unit/test_clock_counter.c). Label qemu: the arm64 stage runs it
# in the aarch64 cross build under qemu-user as well.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_clock_counter ${CMAKE_CURRENT_LIST_DIR}/test_clock_counter.c)
  target_include_directories(test_clock_counter PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_clock_counter PRIVATE ada_clock ${CMOCKA_LIBRARY})
  add_test(NAME clock_counter COMMAND test_clock_counter)
  set_tests_properties(clock_counter PROPERTIES LABELS "qemu" TIMEOUT 60)
  ada_sanitize_tests(asan ubsan TESTS clock_counter)
endif()
