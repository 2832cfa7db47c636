# Live control end to end (issue 9): ada arm/disarm/trigger/status on a
# running tests/targets/t_control.c, the JSON-RPC socket straight, and
# (as root) another user refused. The checks are in control_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE)
  message(STATUS "ada tests: no python3, so no live-control tests (install python3)")
  return()
endif()
if(ADA_SANITIZE MATCHES "^(address|thread)$")
  # They record with the agent, which a sanitized build cannot preload.
  return()
endif()
foreach(case arm note status malformed never peer registry always retitle held fakeserver windows
             forkheap wake looks)
  add_test(NAME control_${case}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/control_test.py
                   --ada $<TARGET_FILE:ada> --target ${ADA_TGT_DIR}/t_control_O2
                   --work ${CMAKE_BINARY_DIR}/control-work ${case})
  set_tests_properties(control_${case} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                       LABELS "integration")
endforeach()

# ada serve: the per-user control daemon (issue 36 item 4).
if(Python3_EXECUTABLE AND NOT ADA_SANITIZE MATCHES "^(address|thread)$")
  add_test(NAME e2e.serve
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/serve_test.py
                   --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                   --target ${ADA_TGT_DIR}/t_recursion_O0)
  set_tests_properties(e2e.serve PROPERTIES TIMEOUT 300 LABELS "e2e")
endif()

# `ada status` while the drain is held in the middle of a publish (issue 35).
add_test(NAME control_status_paused
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/status_paused_test.sh $<TARGET_FILE:ada>)
set_tests_properties(control_status_paused PROPERTIES TIMEOUT 150 LABELS "integration")
