# The flight recorder end to end (issue 8): crashes (NULL write, abort,
# stack overflow, a program that recovers from its own SIGSEGV), latency,
# symbol and manual (SIGUSR2) triggers, bad trigger options, on
# tests/targets/t_flight.c. The checks are in ada_itest.py (cmd_flight).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
foreach(s crash_segv crash_abort crash_overflow crash_recovered latency symbol manual
          max_windows holdoff bad_options recover_killed time_whole time_wrap time_never
          signal_sysv signal_bsd signal_abort_handler signal_nostack always_overwrite
          signal_overflow_handler triggered_overwrite window_lost window_lost_yield
          window_share_full
          always_lapped preroll_disk
          always_wait always_wait_stopped index_wait_stopped index_wait_stalled checker_catches
          p99_auto window_deferred window_spent)
  ada_e2e_test(e2e.flight_${s} ada_itest.py
               ARGS --name flight_${s} flight ${s} ${ADA_TGT_DIR}/t_flight_O2)
endforeach()
# Window memory (issue 32): every live persist held back over a busy
# program (tests/targets/t_trigrate.c).
foreach(s window_mem window_mem_full)
  add_test(NAME e2e.flight_${s}
           COMMAND ${ADA_PYTHON_RUN} ${CMAKE_CURRENT_LIST_DIR}/ada_itest.py
                   --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                   --name flight_${s} flight ${s} ${ADA_TGT_DIR}/t_trigrate_O2)
  set_tests_properties(e2e.flight_${s} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                       LABELS "e2e")
endforeach()
# Threads around a crash (issue 34): one started just before it, one that
# ended inside the pre-roll (tests/targets/t_latethread.c).
foreach(s late_thread ended_thread)
  ada_e2e_test(e2e.flight_${s} ada_itest.py
               ARGS --name flight_${s} flight ${s} ${ADA_TGT_DIR}/t_latethread_O2)
endforeach()
# Threads ending with a window open: window memory bounded
# (tests/targets/t_threads.c heavy).
ada_e2e_test(e2e.flight_end_memory ada_itest.py
             ARGS --name flight_end_memory flight end_memory ${ADA_TGT_DIR}/t_threads_O2)
# A thread per request under --detail always: every call exact and linked
# while the drain hands each file's recent window to the next file.
ada_e2e_test(e2e.flight_serial_threads ada_itest.py
             ARGS --name flight_serial_threads flight serial_threads
                  ${ADA_TGT_DIR}/t_manythreads_O2)
