# ada's own waits for ring space are in the trace and out of the program's
# durations (issue 32 item 4): a 64-event ring makes t_waits wait; report,
# dump and a latency trigger are held against the wait markers and the
# program's own timing. Checks: waits_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
ada_e2e_test(e2e.waits_in_trace waits_test.py TIMEOUT 240
             ARGS --name waits_in_trace --calls 5000 -- ${ADA_TGT_DIR}/t_waits_O2)
