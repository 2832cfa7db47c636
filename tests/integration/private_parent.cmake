# The second-user tests (control_peer, e2e.diagnose_otheruser and
# _nondumpable) once more from a checkout under a 0700 directory, as where
# users clone ada (tests/integration/private_parent_test.py): copies, no
# build. Root only; the test skips (77) otherwise.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
ada_e2e_test(e2e.private_parent private_parent_test.py NO_WORK TIMEOUT 300 LABELS integration
             ARGS --control-target ${ADA_TGT_DIR}/t_control_O2
                  --dynamic ${CMAKE_BINARY_DIR}/tests/targets/t_exec_child_O2
                  --scripts ${CMAKE_CURRENT_LIST_DIR})
