# src/wal, src/recorder and src/clock unit tests (cmocka).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  foreach(t test_wal_tsc test_wal_segment test_wal_retention test_wal_detail test_wal_live
            test_wal_loss test_wal_orphans test_wal_dfile test_wal_retfile test_wal_admit
            test_wal_prep test_flight_yield test_wal_retire test_wal_agent_sums test_wal_agent_json
            test_wal_nap test_wal_budget_seal test_wal_ring_table test_wal_guard test_wal_recover
            test_wal_live_retire test_wal_agent_tmp test_wal_spares test_wal_fork_files)
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
    target_include_directories(${t} PRIVATE ${CMOCKA_INCLUDE_DIR})
    target_link_libraries(${t} PRIVATE ada_recorder ada_recorder_internal ada_wal_internal ada_producer ${CMOCKA_LIBRARY} ada_dep_z
                          ada_dep_uring)
    add_test(NAME ${t} COMMAND ${t})
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 LABELS wal)
    ada_sanitize_tests(asan ubsan tsan TESTS ${t})
  endforeach()
  # The same on tmpfs, whose writes the drain thread makes itself
  # (docs/internals.md, "Writes to tmpfs in the drain thread").
  foreach(t test_wal_segment test_wal_detail test_wal_spares)
    add_test(NAME ${t}.tmpfs COMMAND ${t})
    set_tests_properties(${t}.tmpfs PROPERTIES SKIP_RETURN_CODE 77 LABELS wal
                         ENVIRONMENT ADA_TEST_WAL_DIR=/dev/shm)
    ada_sanitize_tests(asan ubsan tsan TESTS ${t}.tmpfs)
  endforeach()
endif()
# The budget scan's test fails a realloc of the recorder's (its wrapper).
if(TARGET test_wal_budget_seal)
  target_link_options(test_wal_budget_seal PRIVATE -Wl,--wrap=realloc)
endif()
# The live view's test fails the growth of its running list the same way.
if(TARGET test_wal_live_retire)
  target_link_options(test_wal_live_retire PRIVATE -Wl,--wrap=realloc)
endif()
# The nap's test sets the consumer's view of a ring (ring_internal.h).
if(TARGET test_wal_nap)
  target_link_libraries(test_wal_nap PRIVATE ada_ring_internal)
endif()
