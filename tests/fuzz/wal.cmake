# libFuzzer target for the src/wal parsers (cpuinfo flags, --flush text,
# the recovery scan of unfinished index files); clang only, like fuzz_atf.
# CI runs it as the test fuzz.wal from tests/fuzz/corpus/wal/ (tests/suite.cmake).
# Built from ada_wal's own sources and settings (tests/suite.cmake).
ada_fuzz_target(wal ada_wal ${CMAKE_CURRENT_LIST_DIR}/fuzz_wal.c)
