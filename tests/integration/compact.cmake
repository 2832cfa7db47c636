# The compact index (--index-format compact, issue 31) end to end: round
# trips through `ada export --format atf` checked by atf_check.py, against
# ATF v2 recordings of the same programs (compact_test.py); and flight
# recorder scenarios (detail links, crashes, a killed recorder's
# recovery) recorded with ATF v2 written directly, --index-format atf, the
# default being compact (ada_itest.py reads ADA_TEST_INDEX_FORMAT).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
ada_e2e_test(e2e.compact_roundtrip compact_test.py TIMEOUT 300
             ARGS ${ADA_TGT_DIR}/t_recursion_O2 ${ADA_TGT_DIR}/t_funcptr_O2)
# The same for the events that are not plain calls and returns: C++
# exceptions unwinding traced frames (with traced destructors run while
# they pass), longjmp and siglongjmp out of traced frames, signal
# handlers entered inside traced calls, and a recursion deeper than a
# block's open frames.
ada_e2e_test(e2e.compact_roundtrip_unwind compact_test.py TIMEOUT 300
             ARGS "${ADA_TGT_DIR}/t_cxx_O2 dtor" "${ADA_TGT_DIR}/t_cxx_O2 libthrow"
                  "${ADA_TGT_DIR}/t_setjmp_O2 longjmp" "${ADA_TGT_DIR}/t_setjmp_O2 siglongjmp"
                  "${ADA_TGT_DIR}/t_signal_O2 sync" "${ADA_TGT_DIR}/t_deep_O2 20000")
foreach(s crash_segv recover_killed always_wait always_lapped preroll_disk symbol
          crash_recovered)
  ada_e2e_test(e2e.atf_flight_${s} ada_itest.py ENVIRONMENT ADA_TEST_INDEX_FORMAT=atf
               ARGS --name atf_flight_${s} flight ${s} ${ADA_TGT_DIR}/t_flight_O2)
endforeach()
# An export of a compact recording with a damaged block: no partial ATF v2
# file left, none described as converted (export_damaged_test.sh).
add_test(NAME e2e.compact_export_damaged
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/export_damaged_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_recursion_O2)
set_tests_properties(e2e.compact_export_damaged PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
                     LABELS e2e)
# Retention: at one --max-disk-mb the compact index keeps at least 6 times
# the events of history ATF v2 keeps (counted from the files, issue 31).
ada_e2e_test(e2e.compact_retention retention_test.py TIMEOUT 300
             ARGS --budget-mb 4 --min-ratio 6 $<TARGET_FILE:bw_fib_plain> 30)
# The same at 1 MiB with a program of about half a second: its symbol files
# (a quarter of the budget) used to be counted only by the drain's first
# once-a-second scan, after the program had ended, and the session ended
# over its budget by them.
ada_e2e_test(e2e.compact_retention_short retention_test.py TIMEOUT 300
             WORK ${CMAKE_BINARY_DIR}/itest-work/short
             ARGS --budget-mb 1 --min-ratio 6 $<TARGET_FILE:bw_fib_plain> 28)
# And with --detail always, whose detail files are most of the bytes: a
# generation rotates on its index and detail files together (a current
# detail.atf grew to many times the budget before); the ratio is not the
# point here (the detail lane's bytes are the same in both encodings).
ada_e2e_test(e2e.retention_detail_always retention_test.py TIMEOUT 300
             WORK ${CMAKE_BINARY_DIR}/itest-work/detail_always
             ARGS --budget-mb 16 --min-ratio 0 --record-args "--detail always --detail-mb 16"
                  $<TARGET_FILE:bw_fib_plain> 26)
# The budget at every instant (issue 35, the soak): windows write detail
# files all along; the drain counts them as it writes and makes room before
# the windows' persist and a thread's end, audited where the budget must
# hold (test hook ADA_TEST_BUDGET_AUDIT). A 24 MiB budget: bounded output.
add_test(NAME e2e.budget_instant
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/budget_instant_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_trigrate_O2)
set_tests_properties(e2e.budget_instant PROPERTIES TIMEOUT 150 LABELS "e2e")
# The files being written fill the budget (four busy threads at 8 MiB,
# the soak's disk samples): the largest are ended early so the budget has
# generations to delete; a watcher samples the session's own tmpfs
# (statvfs: atomic) and the audit checks the drain's points.
add_test(NAME e2e.budget_writers
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/budget_writers_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_trigrate_O2)
set_tests_properties(e2e.budget_writers PROPERTIES TIMEOUT 150 LABELS "e2e")
# The same with trigger windows open all along (--detail-mb 1, a symbol
# trigger every 100 ms): a file ended early writes its windows' part of
# its detail ring at once; the budget keeps room for it and the end writes
# no more than what is left (what it cannot keep counted disk_budget).
add_test(NAME e2e.budget_windows
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/budget_writers_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_trigrate_O2 windows)
set_tests_properties(e2e.budget_windows PROPERTIES TIMEOUT 150 LABELS "e2e")
# The same with 16 MiB detail rings under a 16 MiB budget: an early end
# takes its ring's rest in slices while its thread goes on, and no
# record its thread made meanwhile is decided a bad link.
add_test(NAME e2e.budget_windows_big
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/budget_writers_test.sh $<TARGET_FILE:ada>
                 ${ADA_TGT_DIR}/t_trigrate_O2 windows_big)
set_tests_properties(e2e.budget_windows_big PROPERTIES TIMEOUT 150 LABELS "e2e")
