# The cycle-exact guard of the hot path (bench/callgrind_guard.sh): fails when
# the instructions per recorded event grow > 10 % above
# bench/callgrind_baseline.txt. Instruction counts, not time; < 1 minute.
# Skips (77) without valgrind, in non-Release builds and under sanitizers.
add_test(NAME perf_callgrind_guard
  COMMAND ${CMAKE_SOURCE_DIR}/bench/callgrind_guard.sh ${CMAKE_BINARY_DIR}
          --build-type "${CMAKE_BUILD_TYPE}" --sanitize "${ADA_SANITIZE}")
set_tests_properties(perf_callgrind_guard PROPERTIES LABELS perf SKIP_RETURN_CODE 77
  TIMEOUT 120)

# The same guard for the detail lane (issue 8): capture of every call with
# 128-byte stacks, and a detail set that excludes the measured function
# (which must stay within a few instructions of the index lane); and a
# count-only function (mode count: instructions per call, and events +
# counts = every call).
foreach(cfg detail_all detail_excluded count_only)
  add_test(NAME perf_callgrind_guard_${cfg}
    COMMAND ${CMAKE_SOURCE_DIR}/bench/callgrind_guard.sh ${CMAKE_BINARY_DIR}
            --baseline ${CMAKE_SOURCE_DIR}/bench/callgrind_baseline_${cfg}.txt
            --build-type "${CMAKE_BUILD_TYPE}" --sanitize "${ADA_SANITIZE}")
  set_tests_properties(perf_callgrind_guard_${cfg} PROPERTIES LABELS perf
    SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
