# The drain's doorbell (docs/internals.md, "The doorbell: an idle drain
# sleeps"): a traced program idle for seconds costs the drain (nearly) no
# passes (idle_test.py: the manifest's drain counts, a bound that grows
# with the run's length), and every call after the idle time is recorded
# exactly (ada_itest.py's target checks, the same program).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE OR ADA_SANITIZE MATCHES "^(address|thread)$")
  return() # hooks.cmake says why
endif()
add_test(NAME e2e.idle_passes
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/idle_test.py
                 --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                 --name idle_passes -- ${ADA_TGT_DIR}/t_idle_O2)
set_tests_properties(e2e.idle_passes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "e2e")
add_test(NAME e2e.idle_exact
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ada_itest.py
                 --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                 --name idle_exact target -- ${ADA_TGT_DIR}/t_idle_O2 3)
set_tests_properties(e2e.idle_exact PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "e2e")
# A program that rings the doorbell constantly: the drain paces itself to
# its old polling (each ring that found nothing is followed by a 1 ms
# poll) and loses nothing (idle_test.py --ringer).
add_executable(producer_ringer ${CMAKE_SOURCE_DIR}/tests/targets/producer_ringer.c)
target_link_libraries(producer_ringer PRIVATE ada_producer)
add_test(NAME e2e.idle_ringer
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/idle_test.py
                 --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                 --name idle_ringer --ringer -- $<TARGET_FILE:producer_ringer>)
set_tests_properties(e2e.idle_ringer PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "e2e")
# The futex refuses to wait (ADA_TEST_BELL_REFUSED=1): the drain polls
# as before the doorbell, and the manifest, the summary line and `ada
# status` say so (idle_test.py --refused).
add_test(NAME e2e.idle_refused
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/idle_test.py
                 --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                 --name idle_refused --refused --secs 1 -- ${ADA_TGT_DIR}/t_idle_O2)
set_tests_properties(e2e.idle_refused PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "e2e")
