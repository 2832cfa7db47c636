# Bounded disk and shared memory, honest accounting (issue 12 items 3, 5):
# tests/integration/bounded_test.sh. Heavy (tens of millions of events, a
# thousand processes): Release build only, each under a timeout.
add_executable(producer_fork ${CMAKE_SOURCE_DIR}/tests/targets/producer_fork.c)
target_link_libraries(producer_fork PRIVATE ada_producer)
foreach(mode budget forks forks_pool forks_agent forks_budget retire shm_ceiling shm_small diskfull
             diskfull_late agree dead manifest_lost)
  add_test(NAME bounded_${mode}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bounded_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> $<TARGET_FILE:producer_fork> ${mode})
  set_tests_properties(bounded_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       LABELS "wal;integration")
endforeach()
# A full disk while detail.atf is written, and the budget over many
# processes' symbol files (programs under the agent).
foreach(mode diskfull_detail forks_budget_agent arena_quota)
  add_test(NAME bounded_${mode}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bounded_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:producer_kill>
                   $<TARGET_FILE:producer_check> $<TARGET_FILE:producer_fork> ${mode}
                   $<TARGET_FILE:bw_fib_plain>)
  set_tests_properties(bounded_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       LABELS "wal;integration")
endforeach()

# A pid reused within one recording (root: forced through ns_last_pid),
# in a pid namespace of its own: writing the machine's ns_last_pid moved
# the pid counter of every test running beside it back (bounded_forks
# then met reused pids within its own recording in CI), which made it
# RUN_SERIAL, run alone at the end of the suite with one core idle.
add_executable(producer_pidreuse ${CMAKE_SOURCE_DIR}/tests/targets/producer_pidreuse.c)
target_link_libraries(producer_pidreuse PRIVATE ada_producer)
add_test(NAME bounded_pidreuse
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pidreuse_test.sh
                 $<TARGET_FILE:ada> $<TARGET_FILE:producer_pidreuse> $<TARGET_FILE:producer_check>)
set_tests_properties(bounded_pidreuse PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "wal;integration")

# Race B (issue 35): a child's pid given to a stranger before the recorder
# looked at the child's arena; forced in a pid namespace of its own (root).
add_executable(producer_raceb ${CMAKE_SOURCE_DIR}/tests/targets/producer_raceb.c)
target_link_libraries(producer_raceb PRIVATE ada_producer)
add_test(NAME bounded_raceb
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/raceb_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:producer_raceb>)
set_tests_properties(bounded_raceb PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "wal;integration")

# A child reaped while the recorder reads its /proc/PID/stat (issue 35):
# gone, never "not a descendant". In a pid namespace of its own (root),
# where no refusal is right: 1000 fork + _exit children, each recorded.
add_executable(t_forkreap ${CMAKE_SOURCE_DIR}/tests/targets/t_forkreap.c)
add_test(NAME bounded_reaprace
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/reaprace_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:ada_agent> $<TARGET_FILE:t_forkreap>)
set_tests_properties(bounded_reaprace PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "wal;integration")

# Children reaped by their traced parent get their exact exit status from
# its arena's table of reaped children; a table that wrapped while the
# recorder was stopped (by the program: deterministic) counts each
# overwritten note and leaves that child's status null, never wrong.
add_test(NAME bounded_waitnotes
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/waitnotes_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:t_forkreap>)
set_tests_properties(bounded_waitnotes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     LABELS "wal;integration")

# The end of a recording whose drain is behind (issue 35): a child that
# ended before the last drain is read whole, what a process still running
# had in its rings is counted (unread_at_end), nothing silently. The lag is
# made by a test hook (ADA_TEST_END_PAUSE), not by loading the machine.
add_executable(producer_endlag ${CMAKE_SOURCE_DIR}/tests/targets/producer_endlag.c)
target_link_libraries(producer_endlag PRIVATE ada_producer)
add_test(NAME bounded_endlag
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/endlag_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:producer_endlag>)
set_tests_properties(bounded_endlag PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
                     LABELS "wal;integration")
ada_sanitize_tests(asan ubsan TESTS bounded_endlag) # the end's counting code, 5 s
# A program that outlives the recording leaves nothing in /dev/shm: a
# process it starts as the recorder clears the arena directory (a test
# hook, ADA_TEST_SHM_PAUSE, holds it there) or after makes no arena.
add_test(NAME bounded_outlive
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/endlag_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:producer_endlag> outlive)
set_tests_properties(bounded_outlive PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
                     LABELS "wal;integration")

# A pid given to a stranger while the recorder has not yet finished the
# ended child that had it is never named as a descendant still running
# (issue 35); forced in a pid namespace of its own (root), as raceb.
add_test(NAME bounded_reusedleft
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/reusedleft_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:producer_endlag>)
set_tests_properties(bounded_reusedleft PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                     LABELS "wal;integration")

# A refused arena's shared-memory reservation is given back once its
# maker has ended (issue 35, the soak's ceiling).
add_executable(producer_gate ${CMAKE_SOURCE_DIR}/tests/targets/producer_gate.c)
target_link_libraries(producer_gate PRIVATE ada_producer)
add_test(NAME bounded_shmheld
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shmheld_test.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:producer_gate>)
set_tests_properties(bounded_shmheld PROPERTIES TIMEOUT 300 LABELS "wal;integration")
