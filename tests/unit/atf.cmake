# Tests of src/atf and of `ada validate` / `ada dump`.
set(ATF_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# The golden session generator (also used by the golden test).
add_library(atf_golden STATIC ${ATF_TEST_DIR}/atf_golden.c)
target_link_libraries(atf_golden PUBLIC ada_atf ada_dep_xxhash)
add_executable(atf_gen_golden ${ATF_TEST_DIR}/atf_gen_golden.c)
target_link_libraries(atf_gen_golden PRIVATE atf_golden)

if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  foreach(t format reader validate golden manifest cidx symdebug jsondump guard)
    add_executable(test_atf_${t} ${ATF_TEST_DIR}/test_atf_${t}.c)
    target_include_directories(test_atf_${t} PRIVATE ${CMOCKA_INCLUDE_DIR} ${ATF_TEST_DIR})
    target_link_libraries(test_atf_${t} PRIVATE ada_atf atf_golden ada_dep_xxhash ${CMOCKA_LIBRARY})
    add_test(NAME atf_${t} COMMAND test_atf_${t})
    set_tests_properties(atf_${t} PROPERTIES SKIP_RETURN_CODE 77)
    ada_sanitize_tests(asan ubsan TESTS atf_${t})
  endforeach()
  # The guard's readers run on threads: under TSan too.
  ada_sanitize_tests(tsan TESTS atf_guard)
  target_compile_definitions(test_atf_golden PRIVATE
    ADA_GOLDEN_DIR="${CMAKE_SOURCE_DIR}/tests/data/golden")
  # json_dump.c's private declaration (atf_internal.h) and the golden manifest
  target_link_libraries(test_atf_jsondump PRIVATE ada_atf_internal)
  target_compile_definitions(test_atf_jsondump PRIVATE
    ADA_GOLDEN_DIR="${CMAKE_SOURCE_DIR}/tests/data/golden")
endif()

# `ada validate` / `ada dump` on the golden session and corrupted copies.
add_test(NAME atf_cli
  COMMAND sh ${ATF_TEST_DIR}/test_atf_cli.sh $<TARGET_FILE:ada>
          ${CMAKE_SOURCE_DIR}/tests/data/golden ${CMAKE_CURRENT_BINARY_DIR}/atf_cli_work)
set_tests_properties(atf_cli PROPERTIES SKIP_RETURN_CODE 77)

# The compact index (src/atf/cidx.h) through the CLI: `ada validate`, `ada
# dump`, `ada report` on the golden session rewritten as ATC1.
add_executable(atf_to_cidx ${ATF_TEST_DIR}/atf_to_cidx.c)
target_link_libraries(atf_to_cidx PRIVATE ada_atf)
add_test(NAME atf_cidx_cli
  COMMAND sh ${ATF_TEST_DIR}/test_atf_cidx_cli.sh $<TARGET_FILE:ada> $<TARGET_FILE:atf_to_cidx>
          ${CMAKE_SOURCE_DIR}/tests/data/golden ${CMAKE_CURRENT_BINARY_DIR}/atf_cidx_cli_work)
set_tests_properties(atf_cidx_cli PROPERTIES SKIP_RETURN_CODE 77)
ada_sanitize_tests(asan ubsan TESTS atf_cli atf_cidx_cli)
