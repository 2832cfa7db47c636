# End-to-end tests of every `ada record` option and of `ada status`
# (tests/integration/record_options.py): one CTest test e2e.opt.<case> per
# `def case_<case>` of the script, and e2e.opt.coverage, which fails for an
# option of `ada record --help` or `ada attach --help` that the option table
# (tools/record_table.c, its tests column) does not map to a registered test. Plain builds only, like the other e2e tests (the agent is
# preloaded into unsanitized programs).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE OR ADA_SANITIZE MATCHES "^(address|thread)$")
  return()
endif()
set(_ro ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/record_options.py
    --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/record_options.py _ro_cases REGEX "^def case_[a-z0-9_]+\\(")
foreach(c ${_ro_cases})
  string(REGEX REPLACE "^def case_([a-z0-9_]+)\\(.*" "\\1" c "${c}")
  add_test(NAME e2e.opt.${c} COMMAND ${_ro} --targets ${ADA_TGT_DIR} ${c})
  set_tests_properties(e2e.opt.${c} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS e2e)
endforeach()
# ctest_names.txt: every registered test, written by tests/suite.cmake.
add_test(NAME e2e.opt.coverage COMMAND ${_ro} --tests ${CMAKE_BINARY_DIR}/ctest_names.txt coverage)
set_tests_properties(e2e.opt.coverage PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS e2e)
