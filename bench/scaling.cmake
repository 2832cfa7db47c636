# bench.scaling_smoke: bench/scaling.py and its workloads at tiny sizes
# (issue 13 item 3). Label bench: no CI stage runs it (they exclude bench);
# `ctest -L bench` does. Not in sanitizer builds (the workloads and the
# runner assume a plain Release-like ada).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND NOT ADA_SANITIZE)
  add_test(NAME bench.scaling_smoke
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scaling_smoke.sh ${CMAKE_BINARY_DIR})
  # As every test but orphan_* (tests/suite.cmake's ada_suite_finish,
  # which sees only the tests of tests/): no recording another test
  # killed is this one's scans' to touch.
  set_tests_properties(bench.scaling_smoke PROPERTIES LABELS bench TIMEOUT 600
                       ENVIRONMENT ADA_NO_RECOVER_ORPHANS=1)
endif()
