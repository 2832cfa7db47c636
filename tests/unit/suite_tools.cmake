# The suite's own tools: tools/test_summary.py's floors on tests and on test
# cases (tests/unit/test_summary_floors.py).
add_test(NAME suite_summary_floors
         COMMAND ${ADA_PYTHON_RUN} ${CMAKE_CURRENT_LIST_DIR}/test_summary_floors.py
                 ${CMAKE_SOURCE_DIR}/tools ${CMAKE_BINARY_DIR}/suite_summary_work)
