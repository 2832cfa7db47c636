# libFuzzer target for the hook layer's parsers (hook_arch_prepare,
# hook_maps_parse); clang only, like fuzz_atf.
# CI runs it as the test fuzz.hook_arch from tests/fuzz/corpus/hook_arch/ (tests/suite.cmake).
# Built from ada_hook_arch's own sources and settings (tests/suite.cmake).
ada_fuzz_target(hook_arch ada_hook_arch ${CMAKE_CURRENT_LIST_DIR}/fuzz_hook_arch.c)
