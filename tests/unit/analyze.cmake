# Tests of src/analyze and of the reading commands (report, export, flame,
# crash, dump filters, graph, windows, ls) on the golden session: small,
# exact, sanitizer-clean (tools/test.sh runs analyze_* under ASan and UBSan).
set(ANALYZE_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_analyze_frames ${ANALYZE_TEST_DIR}/test_analyze_frames.c)
  target_include_directories(test_analyze_frames PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_analyze_frames PRIVATE ada_analyze ${CMOCKA_LIBRARY})
  add_test(NAME analyze_frames COMMAND test_analyze_frames)
  add_executable(test_analyze_callgraph ${ANALYZE_TEST_DIR}/test_analyze_callgraph.c)
  target_include_directories(test_analyze_callgraph PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_analyze_callgraph PRIVATE ada_analyze ${CMOCKA_LIBRARY})
  add_test(NAME analyze_callgraph COMMAND test_analyze_callgraph)
  ada_sanitize_tests(asan ubsan TESTS analyze_frames analyze_callgraph)
endif()
add_test(NAME analyze_cli
  COMMAND ${ADA_PYTHON_RUN} ${ANALYZE_TEST_DIR}/test_analyze_cli.py $<TARGET_FILE:ada>
          ${CMAKE_SOURCE_DIR}/tests/data/golden ${CMAKE_CURRENT_BINARY_DIR}/analyze_cli_work)
ada_sanitize_tests(asan ubsan TESTS analyze_cli)
# The reading commands on several threads (tools/read_par.h) against one:
# report and export of a made-up session cut in small pieces.
add_test(NAME analyze_parallel
  COMMAND ${ADA_PYTHON_RUN} ${ANALYZE_TEST_DIR}/test_read_parallel.py $<TARGET_FILE:ada>
          $<TARGET_FILE:atf_to_cidx> ${CMAKE_CURRENT_BINARY_DIR}/analyze_parallel_work)
ada_sanitize_tests(asan ubsan tsan TESTS analyze_parallel)
