# libFuzzer target for the src/atf parsers (index, detail, links, .syms,
# manifest). libFuzzer needs clang; with gcc this target is skipped.
# Build: CC=clang cmake -S . -B build-fuzz -DADA_SANITIZE=address
#        cmake --build build-fuzz --target fuzz_atf
#        build-fuzz/fuzz_atf -max_total_time=60 build-fuzz/fuzz_corpus
# The seed corpus is made from tests/data/golden by the fuzz_atf_seeds step.
if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
  # The library is rebuilt with coverage instrumentation for the fuzzer.
  get_target_property(ADA_ATF_SOURCES ada_atf SOURCES)
  list(TRANSFORM ADA_ATF_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/atf/)
  add_executable(fuzz_atf ${CMAKE_CURRENT_LIST_DIR}/fuzz_atf.c ${ADA_ATF_SOURCES})
  target_include_directories(fuzz_atf PRIVATE ${CMAKE_SOURCE_DIR}/src/atf)
  target_compile_options(fuzz_atf PRIVATE -fsanitize=fuzzer,address)
  target_link_options(fuzz_atf PRIVATE -fsanitize=fuzzer,address)
  target_link_libraries(fuzz_atf PRIVATE ada_dep_z ada_dep_xxhash ada_dep_jansson)
  set_target_properties(fuzz_atf PROPERTIES EXCLUDE_FROM_ALL TRUE)
  # Seeds: each golden file prefixed with the selector byte of its parser.
  set(G ${CMAKE_SOURCE_DIR}/tests/data/golden/pid_4242)
  add_custom_target(fuzz_atf_seeds
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/fuzz_corpus
    COMMAND sh -c "printf '\\000' | cat - ${G}/thread_0/index.atf > ${CMAKE_BINARY_DIR}/fuzz_corpus/index"
    COMMAND sh -c "printf '\\001' | cat - ${G}/thread_0/detail.atf > ${CMAKE_BINARY_DIR}/fuzz_corpus/detail"
    COMMAND sh -c "printf '\\003' | cat - ${G}/modules/module_1.syms > ${CMAKE_BINARY_DIR}/fuzz_corpus/syms"
    COMMAND sh -c "printf '\\004' | cat - ${G}/manifest.json > ${CMAKE_BINARY_DIR}/fuzz_corpus/manifest"
    VERBATIM)
  add_dependencies(fuzz_atf fuzz_atf_seeds)
endif()
