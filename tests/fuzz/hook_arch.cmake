# libFuzzer target for the hook layer's parsers (hook_arch_prepare,
# hook_maps_parse); clang only, like fuzz_atf. Build:
#   CC=clang cmake -S . -B build-fuzz -DADA_SANITIZE=address
#   cmake --build build-fuzz --target fuzz_hook_arch
#   build-fuzz/fuzz_hook_arch -max_total_time=60
if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
  get_target_property(ADA_HOOK_ARCH_SOURCES ada_hook_arch SOURCES)
  list(TRANSFORM ADA_HOOK_ARCH_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/hook/)
  add_executable(fuzz_hook_arch ${CMAKE_CURRENT_LIST_DIR}/fuzz_hook_arch.c ${ADA_HOOK_ARCH_SOURCES})
  target_include_directories(fuzz_hook_arch PRIVATE ${CMAKE_SOURCE_DIR}/src/hook
    ${CMAKE_SOURCE_DIR}/src/hook/x86_64 ${CAPSTONE_INCLUDE_DIR})
  target_compile_options(fuzz_hook_arch PRIVATE -fsanitize=fuzzer,address)
  target_link_options(fuzz_hook_arch PRIVATE -fsanitize=fuzzer,address)
  target_link_libraries(fuzz_hook_arch PRIVATE ada_dep_capstone Threads::Threads)
  set_target_properties(fuzz_hook_arch PROPERTIES EXCLUDE_FROM_ALL TRUE)
endif()
