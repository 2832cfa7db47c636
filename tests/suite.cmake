# A test suite that cannot quietly shrink (issue 12, item 4).
#
# With -DADA_CI=ON (tools/test.sh sets it) every piece the tests need is
# required: a missing one stops the configure with one sentence naming the
# Debian package, instead of a status line and fewer tests. Without it the
# same sentence is a status line, so a developer can build ada without the
# test tools.
#
# Fuzzers: every executable target named fuzz_* that a tests/fuzz/*.cmake
# defines (clang builds only) becomes the CTest test fuzz.<name> with the
# label `fuzz`: tests/fuzz/run_fuzzer.sh runs it for ADA_FUZZ_SECONDS from
# the committed seed corpus tests/fuzz/corpus/<name>/ and fails on a crash,
# naming the reproducer. tools/test.sh builds the target ada_fuzzers (all of
# them) in a clang build and runs `ctest -L fuzz`. A new fuzzer needs only
# its source, its target and its corpus directory.
include_guard(GLOBAL)

option(ADA_CI "Fail the configure when a piece the tests need is missing (tools/test.sh sets it)" OFF)
set(ADA_FUZZ_SECONDS 10 CACHE STRING "How long each fuzzer runs as a CTest test (label fuzz)")

# ada_sanitize_tests(<stage>... TESTS <test>...): the sanitizer stages of
# tools/test.sh (asan, ubsan, tsan) that run these tests, as CTest labels
# set where the tests are registered. Each stage selects by its label
# (`ctest -L '^asan$'`): a test runs under a sanitizer because its
# registration says so, not because its name happens to match a pattern.
# Call it after the tests' set_tests_properties(LABELS) (which replaces).
function(ada_sanitize_tests)
  cmake_parse_arguments(S "" "" "TESTS" ${ARGN})
  foreach(l ${S_UNPARSED_ARGUMENTS})
    if(NOT l MATCHES "^(asan|ubsan|tsan)$")
      message(FATAL_ERROR "ada_sanitize_tests: '${l}' is not a sanitizer stage (asan, ubsan, tsan)")
    endif()
  endforeach()
  set_property(TEST ${S_TESTS} APPEND PROPERTY LABELS ${S_UNPARSED_ARGUMENTS})
endfunction()

# ada_e2e_test(<test> <script> [NO_SKIP] [NO_WORK] [WORK <dir>] [TIMEOUT <s>]
#              [LABELS <label>...] [ENVIRONMENT <VAR=value>...] ARGS <arguments>...)
# One test that runs a Python harness of tests/integration/ (ADA_PYTHON_RUN):
#   python3 tests/integration/<script> --ada <this build's ada> --work <dir> <arguments>...
# WORK is ${CMAKE_BINARY_DIR}/itest-work unless given (NO_WORK: no --work,
# for a harness that takes it among its own arguments); TIMEOUT 150; LABELS
# e2e; exit 77 is a skip (SKIP_RETURN_CODE) unless NO_SKIP. Sanitizer stages
# are labels added after it (ada_sanitize_tests).
function(ada_e2e_test name script)
  cmake_parse_arguments(PARSE_ARGV 2 E "NO_SKIP;NO_WORK" "WORK;TIMEOUT"
                        "LABELS;ENVIRONMENT;ARGS")
  if(E_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ada_e2e_test(${name}): '${E_UNPARSED_ARGUMENTS}' before ARGS")
  endif()
  set(work --work ${CMAKE_BINARY_DIR}/itest-work)
  if(E_NO_WORK)
    set(work)
  elseif(E_WORK)
    set(work --work ${E_WORK})
  endif()
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 150)
  endif()
  if(NOT E_LABELS)
    set(E_LABELS e2e)
  endif()
  add_test(NAME ${name}
           COMMAND ${ADA_PYTHON_RUN} ${ADA_ITEST_DIR}/${script} --ada $<TARGET_FILE:ada>
                   ${work} ${E_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${E_TIMEOUT} LABELS "${E_LABELS}")
  if(NOT E_NO_SKIP)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  if(E_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${E_ENVIRONMENT}")
  endif()
endfunction()
set(ADA_ITEST_DIR ${CMAKE_CURRENT_LIST_DIR}/integration)

# ada_suite_python(): the interpreter every test runs, resolved once.
# find_package may find a launcher rather than python itself: pyenv's
# shim is a bash script that works out the version at every start (~0.8 s
# of CPU per start, more than most tests' own work). Python3_EXECUTABLE
# becomes what that interpreter calls itself (sys.executable), and
# ADA_PYTHON_RUN is how a test runs a script of tests/:
#   <python> -S -X pycache_prefix=<build>/pycache tests/run_py.py <script> <arguments>...
# -S: no site module (the harnesses use the standard library only; a .pth
# file of site-packages can import more than a harness does);
# tests/run_py.py runs the script from its bytecode cached in the build
# (a script run as `python script.py` is compiled at every start:
# ada_itest.py is 3 000 lines). A python3 that a test runs by name (a
# shell script's `python3 -`) is the same interpreter:
# ${CMAKE_BINARY_DIR}/test-bin, where python3 and python link to it, comes
# first in every test's PATH (ada_suite_finish).
macro(ada_suite_python)
  if(Python3_EXECUTABLE)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sys; print(sys.executable)"
                    OUTPUT_VARIABLE _ada_py RESULT_VARIABLE _ada_py_rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_ada_py_rc EQUAL 0 AND IS_ABSOLUTE "${_ada_py}" AND EXISTS "${_ada_py}")
      set(Python3_EXECUTABLE ${_ada_py})
    endif()
    set(ADA_PYTHON_RUN ${Python3_EXECUTABLE} -S -X pycache_prefix=${CMAKE_BINARY_DIR}/pycache
                       ${CMAKE_CURRENT_LIST_DIR}/run_py.py)
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/test-bin)
    foreach(_ada_name python3 python)
      file(CREATE_LINK ${Python3_EXECUTABLE} ${CMAKE_BINARY_DIR}/test-bin/${_ada_name} SYMBOLIC)
    endforeach()
  endif()
endmacro()

# ada_suite_require(<found> <what is missing> <what is lost> <Debian package>)
function(ada_suite_require found what lost pkg)
  if(found)
    return()
  endif()
  set(msg "ada tests: ${what} is missing, so ${lost}: install ${pkg} (tools/bootstrap.sh does)")
  if(ADA_CI)
    message(FATAL_ERROR "${msg}")
  else()
    message(STATUS "${msg}")
  endif()
endfunction()

# Looked up here, before the tests/*/*.cmake files that use them.
find_package(Python3 COMPONENTS Interpreter)
ada_suite_python()
find_program(ADA_CLANG clang)
find_program(ADA_CLANGXX clang++)
find_program(ADA_VALGRIND valgrind)
find_program(ADA_STRACE strace)
find_file(ADA_LIBC_A libc.a PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib NO_DEFAULT_PATH)
# The end-to-end tests that record with the agent need python3 for their
# harnesses and a build whose agent can be preloaded into an ordinary
# program: not an address or thread sanitizer build (its runtime must come
# first in a process, and the programs are not built with it).
set(ADA_E2E_AGENT FALSE)
if(Python3_EXECUTABLE AND NOT ADA_SANITIZE MATCHES "address|thread")
  set(ADA_E2E_AGENT TRUE)
endif()

set(_cmocka FALSE)
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  set(_cmocka TRUE)
endif()
ada_suite_require("${_cmocka}" "cmocka (cmocka.h, libcmocka)" "no unit test is built" libcmocka-dev)
ada_suite_require("${Python3_EXECUTABLE}" "python3" "no end-to-end test runs" python3)
ada_suite_require("${ADA_CLANG}" "clang" "the clang-built end-to-end targets are left out" clang)
ada_suite_require("${ADA_CLANGXX}" "clang++" "the clang-built end-to-end targets are left out" clang)
ada_suite_require("${ADA_VALGRIND}" "valgrind" "the hot-path instruction guard skips" valgrind)
ada_suite_require("${ADA_STRACE}" "strace" "the record option tests cannot see fsync and CPU pinning" strace)
ada_suite_require("${ADA_LIBC_A}" "libc.a" "the static-binary bad-input test is left out" libc6-dev)

if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  check_c_source_compiles("
    #include <stddef.h>
    #include <stdint.h>
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n > 1 && d[0] == 1; }"
    ADA_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  ada_suite_require("${ADA_HAVE_LIBFUZZER}" "libFuzzer (clang -fsanitize=fuzzer)"
                    "no fuzzer can be built" libclang-rt-14-dev)
endif()

# ada_fuzz_target(<name> <libraries> <harness source>): the executable
# fuzz_<name> (clang only, not built by default): the harness plus the
# sources of each library (a ;-list, e.g. "ada_recorder;ada_wal"), rebuilt
# with libFuzzer's coverage, with the libraries' include directories,
# definitions, options and link libraries (less the ones listed, whose
# sources are in), so a new dependency of a library cannot break the fuzz
# build unseen.
function(ada_fuzz_target name libs harness)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    return()
  endif()
  set(t fuzz_${name})
  set(abs)
  foreach(lib ${libs})
    get_target_property(srcs ${lib} SOURCES)
    get_target_property(dir ${lib} SOURCE_DIR)
    foreach(s ${srcs})
      if(IS_ABSOLUTE ${s})
        list(APPEND abs ${s})
      else()
        list(APPEND abs ${dir}/${s})
      endif()
    endforeach()
  endforeach()
  add_executable(${t} ${harness} ${abs})
  foreach(lib ${libs})
    target_include_directories(${t} PRIVATE $<TARGET_PROPERTY:${lib},INCLUDE_DIRECTORIES>)
    target_compile_definitions(${t} PRIVATE $<TARGET_PROPERTY:${lib},COMPILE_DEFINITIONS>)
    target_compile_options(${t} PRIVATE $<TARGET_PROPERTY:${lib},COMPILE_OPTIONS>)
    get_target_property(deps ${lib} LINK_LIBRARIES)
    if(deps)
      list(REMOVE_ITEM deps ${libs})
      target_link_libraries(${t} PRIVATE ${deps})
    endif()
  endforeach()
  target_compile_options(${t} PRIVATE -fsanitize=fuzzer,address)
  target_link_options(${t} PRIVATE -fsanitize=fuzzer,address)
  set_target_properties(${t} PROPERTIES EXCLUDE_FROM_ALL TRUE)
endfunction()

# Called at the end of tests/CMakeLists.txt, when every tests/*/*.cmake has
# run: writes the names of all tests to ctest_names.txt (e2e.opt.coverage
# checks that each option's tests exist) and registers the fuzzers.
function(ada_suite_finish)
  get_property(tests DIRECTORY PROPERTY TESTS)
  # A recording a test kills is that test's to recover: no other test's
  # ada command takes it (and such recordings are marked manual), but
  # the orphan_* tests, which are about that (tests/integration/orphan.cmake).
  foreach(t ${tests})
    if(NOT t MATCHES "^orphan_")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ADA_NO_RECOVER_ORPHANS=1)
    endif()
  endforeach()
  # python3 by name is the interpreter of ada_suite_python, not a
  # launcher in front of it (PATH as ctest has it, test-bin first).
  if(Python3_EXECUTABLE AND tests)
    if(CMAKE_VERSION VERSION_LESS 3.22)
      set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT
                   "PATH=${CMAKE_BINARY_DIR}/test-bin:$ENV{PATH}")
    else()
      set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT_MODIFICATION
                   "PATH=path_list_prepend:${CMAKE_BINARY_DIR}/test-bin")
    endif()
  endif()
  list(JOIN tests "\n" names)
  file(WRITE ${CMAKE_BINARY_DIR}/ctest_names.txt "${names}\n")
  ada_suite_costs()
  ada_suite_fuzzers()
endfunction()

# The longest tests start first: CTest starts the tests of higher COST
# first, and without Testing/Temporary/CTestCostData.txt (a fresh clone,
# CI) every test costs 0 and they start in registration order, so a 30 s
# test registered late ran alone at the end of `ctest -j2`. COST from
# tests/costs.txt ("seconds name", a Release run's times); a name that is
# no test here (the cross build's, a test renamed) is passed over. Once
# the build has a cost data file, CTest's own measured times come first.
function(ada_suite_costs)
  file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/costs.txt lines REGEX "^[0-9]")
  foreach(l ${lines})
    # Two ifs: ${CMAKE_MATCH_2} in the matching if would be expanded
    # before the match sets it.
    if(l MATCHES "^([0-9.]+) +([^ ]+)$")
      if(TEST ${CMAKE_MATCH_2})
        set_tests_properties(${CMAKE_MATCH_2} PROPERTIES COST ${CMAKE_MATCH_1})
      endif()
    endif()
  endforeach()
endfunction()

function(ada_suite_fuzzers)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    return() # libFuzzer is clang's: tools/test.sh has a clang build for them
  endif()
  set(fdir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
  add_custom_target(ada_fuzzers)
  # Every tests/fuzz/fuzz_NAME.c must be built as the target fuzz_NAME.
  file(GLOB srcs ${fdir}/fuzz_*.c ${fdir}/fuzz_*.cc ${fdir}/fuzz_*.cpp)
  foreach(src ${srcs})
    get_filename_component(t ${src} NAME_WE)
    if(NOT TARGET ${t})
      ada_suite_require(FALSE "the target ${t} for tests/fuzz/${t}.c"
        "that fuzzer never runs (define it in a tests/fuzz/*.cmake)" "nothing: it is a build bug")
    endif()
  endforeach()
  get_property(targets DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(NOT t MATCHES "^fuzz_" OR NOT type STREQUAL "EXECUTABLE")
      continue()
    endif()
    string(REGEX REPLACE "^fuzz_" "" name ${t})
    add_dependencies(ada_fuzzers ${t})
    if(TEST fuzz.${name})
      continue() # registered by its own .cmake
    endif()
    add_test(NAME fuzz.${name}
      COMMAND sh ${fdir}/run_fuzzer.sh $<TARGET_FILE:${t}> ${fdir}/corpus/${name}
              ${CMAKE_BINARY_DIR}/fuzz-work/${name} ${ADA_FUZZ_SECONDS})
    math(EXPR limit "${ADA_FUZZ_SECONDS} + 120")
    set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT ${limit})
  endforeach()
endfunction()
