# libFuzzer target for the control socket's request handler
# (src/control/rpc.c and the methods' params checks); clang only. CI runs
# it as fuzz.control from tests/fuzz/corpus/control/ (tests/suite.cmake).
ada_fuzz_target(control ada_control ${CMAKE_CURRENT_LIST_DIR}/fuzz_control.c)
