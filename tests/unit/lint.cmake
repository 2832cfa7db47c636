# The self-tests of the tree's lints (tools/check-*.py) on crafted inputs
# in tests/data: a lint that finds nothing proves nothing until it is
# shown to find what it should.
add_test(NAME lint_check_comments
  COMMAND ${ADA_PYTHON_RUN} ${CMAKE_CURRENT_LIST_DIR}/test_check_comments.py
          ${CMAKE_SOURCE_DIR}/tools/check-comments.py ${CMAKE_SOURCE_DIR}/tests/data/check-comments
          ${CMAKE_CURRENT_BINARY_DIR}/lint_check_comments_work)
