# libFuzzer target for the src/wal parsers (cpuinfo flags, --flush text,
# the recovery scan of unfinished index files); clang only, like fuzz_atf.
#   CC=clang cmake -S . -B build-fuzz -DADA_SANITIZE=address
#   cmake --build build-fuzz --target fuzz_wal
#   build-fuzz/fuzz_wal -max_total_time=60
if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
  # The library is rebuilt with coverage instrumentation for the fuzzer.
  get_target_property(ADA_WAL_SOURCES ada_wal SOURCES)
  list(TRANSFORM ADA_WAL_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/wal/)
  add_executable(fuzz_wal ${CMAKE_CURRENT_LIST_DIR}/fuzz_wal.c ${ADA_WAL_SOURCES})
  target_include_directories(fuzz_wal PRIVATE ${CMAKE_SOURCE_DIR}/src/wal)
  target_compile_options(fuzz_wal PRIVATE -fsanitize=fuzzer,address)
  target_link_options(fuzz_wal PRIVATE -fsanitize=fuzzer,address)
  target_link_libraries(fuzz_wal PRIVATE ada_atf ada_ring ada_dep_uring ada_dep_z ada_dep_jansson Threads::Threads)
  set_target_properties(fuzz_wal PROPERTIES EXCLUDE_FROM_ALL TRUE)
endif()
