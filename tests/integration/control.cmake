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
if(ADA_SANITIZE MATCHES "address|thread")
  # They record with the agent, which a sanitized build cannot preload.
  return()
endif()
foreach(case arm note status malformed never peer registry always retitle held fakeserver windows
             forkheap wake looks idlepools overbudget killswept killsafe)
  ada_e2e_test(control_${case} control_test.py NO_WORK LABELS integration
               ARGS --target ${ADA_TGT_DIR}/t_control_O2
                    --work ${CMAKE_BINARY_DIR}/control-work ${case})
endforeach()

# ada serve: the per-user control daemon (issue 36 item 4).
ada_e2e_test(e2e.serve serve_test.py NO_SKIP TIMEOUT 300
             ARGS --target ${ADA_TGT_DIR}/t_recursion_O0)

# `ada status` while the drain is held in the middle of a publish (issue 35).
add_test(NAME control_status_paused
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/status_paused_test.sh $<TARGET_FILE:ada>)
set_tests_properties(control_status_paused PROPERTIES TIMEOUT 150 LABELS "integration")

# The manifests' warnings in `ada status` (live: the drain's view; finished:
# the manifests), and count_only.uncalled in `ada flame` and `ada report
# --json` (status_warnings_test.sh; skipped, 77, without capsh).
add_test(NAME control_status_warnings
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/status_warnings_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_control_O2)
set_tests_properties(control_status_warnings PROPERTIES TIMEOUT 60 LABELS "integration"
                                                        SKIP_RETURN_CODE 77)

# An agent.json temporary the agent left (its write cut short) is removed
# when the process finishes, and said (agent_tmp_test.sh).
add_test(NAME control_agent_tmp
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/agent_tmp_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_control_O2)
set_tests_properties(control_agent_tmp PROPERTIES TIMEOUT 60 LABELS "integration")
# The sweep reads at most 100 000 names of a pid_N/ the target filled, and
# says it stopped there.
add_test(NAME control_agent_tmp_cap
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/agent_tmp_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_control_O2 cap)
set_tests_properties(control_agent_tmp_cap PROPERTIES TIMEOUT 120 LABELS "integration")

# A warning the recorder rewrites with a count (ignored arenas of one
# kind) is shown current by the live `ada status` (status_refused_test.sh).
add_test(NAME control_status_refused
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/status_refused_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_control_O2)
set_tests_properties(control_status_refused PROPERTIES TIMEOUT 80 LABELS "integration")
