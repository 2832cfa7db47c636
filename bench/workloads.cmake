# Bench workloads (bench/workloads/), each built three ways in one CMake run:
#   bench/plain/<name>  -O2 -fno-omit-frame-pointer       (ada, uftrace -P . with capstone)
#   bench/pg/<name>     the same plus -pg                  (uftrace's mcount mode)
#   bench/pfe/<name>    plus -fpatchable-function-entry=5  (uftrace -P . on 5-NOP entries;
#                       x86_64 needs 5 NOPs, see man uftrace-record, PATCHABLE FUNCTION ENTRY)
# Only plain fib is in the default build (the perf guard needs it); the rest
# builds with `cmake --build B --target bench_workloads` (bench/run.sh does).
find_package(Threads REQUIRED)
find_package(Python3 COMPONENTS Interpreter)

set(BW_DIR ${CMAKE_CURRENT_SOURCE_DIR}/workloads)
set(BW_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
add_custom_target(bench_workloads)

# Counts index events per function in a session (bench/bench.py uses it).
add_executable(atf_count ${CMAKE_CURRENT_SOURCE_DIR}/atf_count.c)
target_link_libraries(atf_count PRIVATE ada_atf ada_atf_format)
set_target_properties(atf_count PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
add_dependencies(bench_workloads atf_count)

# ada_bench_workload(NAME SOURCES... [FLAGS flags...] [LIBS libs...] [IN_ALL])
function(ada_bench_workload name)
  cmake_parse_arguments(BW "IN_ALL" "" "SOURCES;FLAGS;LIBS" ${ARGN})
  foreach(variant plain pg pfe)
    set(tgt bw_${name}_${variant})
    if(BW_IN_ALL AND variant STREQUAL "plain")
      add_executable(${tgt} ${BW_SOURCES})
    else()
      add_executable(${tgt} EXCLUDE_FROM_ALL ${BW_SOURCES})
    endif()
    target_include_directories(${tgt} PRIVATE ${BW_DIR})
    target_compile_options(${tgt} PRIVATE -O2 -g -fno-omit-frame-pointer ${BW_FLAGS})
    target_link_libraries(${tgt} PRIVATE ${BW_LIBS})
    if(variant STREQUAL "pg")
      target_compile_options(${tgt} PRIVATE -pg)
      target_link_options(${tgt} PRIVATE -pg)
    elseif(variant STREQUAL "pfe")
      target_compile_options(${tgt} PRIVATE -fpatchable-function-entry=5)
    endif()
    set_target_properties(${tgt} PROPERTIES OUTPUT_NAME ${name}
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/${variant})
    add_dependencies(bench_workloads ${tgt})
  endforeach()
endfunction()

ada_bench_workload(fib SOURCES ${BW_DIR}/fib.c FLAGS -fno-optimize-sibling-calls IN_ALL)
ada_bench_workload(fibthreads SOURCES ${BW_DIR}/fibthreads.c FLAGS -fno-optimize-sibling-calls
                   LIBS Threads::Threads)
ada_bench_workload(latency SOURCES ${BW_DIR}/latency.c)
# Thread start and a thread-per-request loop (bench/thread_start.py).
ada_bench_workload(thread_start SOURCES ${BW_DIR}/thread_start.c LIBS Threads::Threads)

if(Python3_Interpreter_FOUND)
  foreach(kind mixed startup attach scale10 scale200 scale5000)
    add_custom_command(OUTPUT ${BW_GEN_DIR}/${kind}_gen.c
      COMMAND ${CMAKE_COMMAND} -E make_directory ${BW_GEN_DIR}
      COMMAND ${Python3_EXECUTABLE} ${BW_DIR}/gen_workloads.py ${kind} ${BW_GEN_DIR}/${kind}_gen.c
      DEPENDS ${BW_DIR}/gen_workloads.py
      COMMENT "Generating bench workload ${kind}")
  endforeach()
  ada_bench_workload(mixed SOURCES ${BW_DIR}/mixed.c ${BW_GEN_DIR}/mixed_gen.c)
  ada_bench_workload(threads SOURCES ${BW_DIR}/threads.c ${BW_GEN_DIR}/mixed_gen.c
                     LIBS Threads::Threads)
  ada_bench_workload(startup SOURCES ${BW_GEN_DIR}/startup_gen.c)
  # ada attach's pause (bench/attach_bench.py): 10 000 functions, 2 threads.
  ada_bench_workload(attach SOURCES ${BW_GEN_DIR}/attach_gen.c LIBS Threads::Threads)
  # Scaling (bench/scaling.py, issue 13 item 3): 10, 200 and 5000 hot
  # functions on 1..8 threads.
  foreach(n 10 200 5000)
    ada_bench_workload(scale${n} SOURCES ${BW_GEN_DIR}/scale${n}_gen.c LIBS Threads::Threads)
  endforeach()
else()
  message(STATUS "bench: python3 not found; mixed, threads and startup workloads not built")
endif()
