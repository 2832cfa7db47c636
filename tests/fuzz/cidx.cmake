# libFuzzer target for the compact index (src/atf/cidx.h): the decoder on
# untrusted images (selector byte 0) and the encoder's exactness on any
# events (selector 1); clang only. CI runs it as fuzz.cidx from
# tests/fuzz/corpus/cidx/ (tests/suite.cmake), seeds written by
# tests/unit/test_atf_cidx with ADA_CIDX_SEEDS=DIR.
# Built from ada_atf's own sources and settings (tests/suite.cmake).
ada_fuzz_target(cidx ada_atf ${CMAKE_CURRENT_LIST_DIR}/fuzz_cidx.c)
