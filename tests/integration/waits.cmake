# ada's own waits for ring space are in the trace and out of the program's
# durations (issue 32 item 4): a 64-event ring makes t_waits wait; report,
# dump and a latency trigger are held against the wait markers and the
# program's own timing. Checks: waits_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE OR ADA_SANITIZE MATCHES "^(address|thread)$")
  return() # hooks.cmake says why
endif()
add_test(NAME e2e.waits_in_trace
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/waits_test.py
                 --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                 --name waits_in_trace --calls 5000 -- ${ADA_TGT_DIR}/t_waits_O2)
set_tests_properties(e2e.waits_in_trace PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240
                     LABELS "e2e")
