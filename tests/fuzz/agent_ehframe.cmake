# libFuzzer target for the agent's .eh_frame reader (discover_ehframe.c) on
# a file's bytes, as symbols.c uses it for a stripped program. Seeds:
# tests/fuzz/corpus/agent_ehframe/ (the .eh_frame_hdr segment of gcc -O2
# programs, with its offset in front: fuzz_agent_ehframe.c).
ada_fuzz_target(agent_ehframe ada_agent_core ${CMAKE_CURRENT_LIST_DIR}/fuzz_agent_ehframe.c)
