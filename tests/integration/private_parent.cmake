# The second-user tests (control_peer, e2e.diagnose_otheruser and
# _nondumpable) once more from a checkout under a 0700 directory, as where
# users clone ada (tests/integration/private_parent_test.py): copies, no
# build. Root only; the test skips (77) otherwise.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE OR ADA_SANITIZE MATCHES "^(address|thread)$")
  return() # control.cmake says why
endif()
add_test(NAME e2e.private_parent
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/private_parent_test.py
                 --ada $<TARGET_FILE:ada> --control-target ${ADA_TGT_DIR}/t_control_O2
                 --dynamic ${CMAKE_BINARY_DIR}/tests/targets/t_exec_child_O2
                 --scripts ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(e2e.private_parent PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     LABELS "integration")
