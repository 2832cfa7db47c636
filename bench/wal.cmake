# bench/wal_bench: events/s through rings, drain and io_uring to disk, and
# encode-to-disk latency at 10 M events/s. Not a test; run it by hand.
add_executable(wal_bench ${CMAKE_CURRENT_SOURCE_DIR}/wal_bench.c)
target_compile_options(wal_bench PRIVATE -O2)
target_link_libraries(wal_bench PRIVATE ada_recorder ada_producer)
set_target_properties(wal_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
# bench/disk_bench: the disk's write bandwidth and the page-cache copy's CPU
# per byte (O_DIRECT, RWF_DONTCACHE, buffered) without ada. By hand.
add_executable(disk_bench ${CMAKE_CURRENT_SOURCE_DIR}/disk_bench.c)
target_compile_options(disk_bench PRIVATE -O2)
target_link_libraries(disk_bench PRIVATE ada_dep_uring)
set_target_properties(disk_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
