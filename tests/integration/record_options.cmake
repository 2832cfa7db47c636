# End-to-end tests of every `ada record` option and of `ada status`
# (tests/integration/record_options.py): one CTest test e2e.opt.<case> per
# `def case_<case>` of the script, and e2e.opt.coverage, which fails for an
# option of `ada record --help` or `ada attach --help` that the option table
# (tools/record_table.c, its tests column) does not map to a registered test. Plain builds only, like the other e2e tests (the agent is
# preloaded into unsanitized programs).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/record_options.py _ro_cases REGEX "^def case_[a-z0-9_]+\\(")
foreach(c ${_ro_cases})
  string(REGEX REPLACE "^def case_([a-z0-9_]+)\\(.*" "\\1" c "${c}")
  ada_e2e_test(e2e.opt.${c} record_options.py TIMEOUT 300 ARGS --targets ${ADA_TGT_DIR} ${c})
endforeach()
# ctest_names.txt: every registered test, written by tests/suite.cmake.
ada_e2e_test(e2e.opt.coverage record_options.py TIMEOUT 60
             ARGS --tests ${CMAKE_BINARY_DIR}/ctest_names.txt coverage)
