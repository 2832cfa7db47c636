# bench/ring_bench: producer ns/event and events/s through the index ring,
# with a concurrent consumer thread. Not a test; run it by hand.
find_package(Threads REQUIRED)
add_executable(ring_bench ${CMAKE_CURRENT_SOURCE_DIR}/ring_bench.c)
target_compile_options(ring_bench PRIVATE -O2)
target_link_libraries(ring_bench PRIVATE ada_producer Threads::Threads)
set_target_properties(ring_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
