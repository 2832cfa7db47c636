# libFuzzer target for the src/atf parsers (index, detail, links, .syms,
# manifest). libFuzzer needs clang; with gcc this target is skipped.
# CI runs it as the test fuzz.atf (tests/suite.cmake, tools/test.sh):
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DADA_SANITIZE=address
#   cmake --build build-fuzz --target ada_fuzzers && ctest --test-dir build-fuzz -L fuzz
# Seeds: tests/fuzz/corpus/atf/, each golden file of tests/data/golden
# prefixed with the selector byte of its parser (0 index, 1 detail, 2 links
# with the cut byte, 3 .syms, 4 manifest).
# Built from ada_atf's own sources and settings (tests/suite.cmake).
ada_fuzz_target(atf ada_atf ${CMAKE_CURRENT_LIST_DIR}/fuzz_atf.c)
