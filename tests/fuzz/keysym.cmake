# libFuzzer target for src/keysym (blob validation, the masked hook-context
# test, CRoaring portable input). Seeds: tests/fuzz/corpus/keysym/, made by
# tests/unit/test_keysym_containers (ADA_KEYSYM_SEEDS=DIR): selector byte 0
# and a blob of each container kind, 1 and a portable bitmap.
ada_fuzz_target(keysym ada_keysym ${CMAKE_CURRENT_LIST_DIR}/fuzz_keysym.c)
