# bench/keysym_bench: ns per key-symbol membership test per container at
# 1 K, 100 K and 10 M members, cache-hot and cache-cold. Not a test; run it
# by hand on a quiet machine (docs/benchmarks.md).
add_executable(keysym_bench ${CMAKE_CURRENT_SOURCE_DIR}/keysym_bench.c)
target_compile_options(keysym_bench PRIVATE -O2)
target_link_libraries(keysym_bench PRIVATE ada_keysym ada_keysym_internal)
set_target_properties(keysym_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
