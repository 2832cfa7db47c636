# libFuzzer target for `ada recover`'s arena reader (src/recorder/recover.c)
# on an arena image; clang only. CI runs it as fuzz.recover from
# tests/fuzz/corpus/recover/ (tests/suite.cmake).
ada_fuzz_target(recover "ada_recorder;ada_wal" ${CMAKE_CURRENT_LIST_DIR}/fuzz_recover.c)
if(TARGET fuzz_recover)
  target_link_libraries(fuzz_recover PRIVATE ada_ring_internal)
endif()
