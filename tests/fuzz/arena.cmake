# libFuzzer target for the consumer's checked reads of an arena image
# (src/ring/consumer.c, slots.c); clang only. CI runs it as fuzz.arena from
# tests/fuzz/corpus/arena/ (tests/suite.cmake).
ada_fuzz_target(arena ada_ring ${CMAKE_CURRENT_LIST_DIR}/fuzz_arena.c)
