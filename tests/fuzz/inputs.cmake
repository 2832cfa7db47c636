# libFuzzer target for the small formats read from where a user or another
# process can write: ADA_HOOK_CONFIG, plan cache files, the TSC cache line,
# key-symbol rules files, symbol-table cache files (fuzz_inputs.c). Seeds:
# tests/fuzz/corpus/inputs/.
ada_fuzz_target(inputs "ada_agent_core;ada_clock;ada_keysym" ${CMAKE_CURRENT_LIST_DIR}/fuzz_inputs.c)
