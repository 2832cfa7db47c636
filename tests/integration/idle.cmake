# The drain's doorbell (docs/internals.md, "The doorbell: an idle drain
# sleeps"): a traced program idle for seconds costs the drain (nearly) no
# passes (idle_test.py: the manifest's drain counts, a bound that grows
# with the run's length), and every call after the idle time is recorded
# exactly (ada_itest.py's target checks, the same program).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
ada_e2e_test(e2e.idle_passes idle_test.py
             ARGS --name idle_passes -- ${ADA_TGT_DIR}/t_idle_O2)
ada_e2e_test(e2e.idle_exact ada_itest.py
             ARGS --name idle_exact target -- ${ADA_TGT_DIR}/t_idle_O2 3)
# A program that rings the doorbell constantly: the drain paces itself to
# its old polling (each ring that found nothing is followed by a 1 ms
# poll) and loses nothing (idle_test.py --ringer).
add_executable(producer_ringer ${CMAKE_SOURCE_DIR}/tests/targets/producer_ringer.c)
target_link_libraries(producer_ringer PRIVATE ada_producer)
ada_e2e_test(e2e.idle_ringer idle_test.py
             ARGS --name idle_ringer --ringer -- $<TARGET_FILE:producer_ringer>)
# The futex refuses to wait (ADA_TEST_BELL_REFUSED=1): the drain polls
# as before the doorbell, and the manifest, the summary line and `ada
# status` say so (idle_test.py --refused).
ada_e2e_test(e2e.idle_refused idle_test.py
             ARGS --name idle_refused --refused --secs 1 -- ${ADA_TGT_DIR}/t_idle_O2)
