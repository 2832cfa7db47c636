# A target that fills its arena directory with empty files named like
# arenas (issue 35 item 1): the recorder must admit each name in O(1),
# tell each kind of refusal once with a count, keep its manifests small,
# stop on SIGTERM (also one the program ignores while it floods on) and
# leave a valid session
# (tests/integration/arena_flood_test.sh).
add_executable(t_flood ${CMAKE_SOURCE_DIR}/tests/targets/t_flood.c)
target_link_libraries(t_flood PRIVATE ada_producer)
foreach(mode taken absent hold endless)
  add_test(NAME arena_flood_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/arena_flood_test.sh
                   $<TARGET_FILE:ada> $<TARGET_FILE:t_flood> ${mode})
  set_tests_properties(arena_flood_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       LABELS "wal;integration")
endforeach()
