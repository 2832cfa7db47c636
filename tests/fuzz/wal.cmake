# libFuzzer target for the parsers of src/wal and src/clock (cpuinfo
# flags, --flush text, the scan of unfinished index files); clang only,
# like fuzz_atf. CI runs it as the test fuzz.wal from tests/fuzz/corpus/wal/
# (tests/suite.cmake). Built from ada_wal's and ada_clock's own sources and
# settings (tests/suite.cmake).
ada_fuzz_target(wal "ada_wal;ada_clock" ${CMAKE_CURRENT_LIST_DIR}/fuzz_wal.c)
