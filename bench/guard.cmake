# bench/emit_guard: the producer hot path alone, for bench/callgrind_guard.sh
# (mode emit). Built in the default build so the perf test can run it.
foreach(lib ada_producer ada_ring)
  if(TARGET ${lib})
    add_executable(emit_guard ${CMAKE_CURRENT_SOURCE_DIR}/emit_guard.c)
    target_compile_options(emit_guard PRIVATE -O2)
    target_link_libraries(emit_guard PRIVATE ${lib})
    set_target_properties(emit_guard PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
    break()
  endif()
endforeach()
if(NOT TARGET emit_guard)
  message(STATUS "bench: no producer library (ada_producer) yet; emit_guard not built")
endif()

# bench/hooked_guard: fib in two callgrind-bracketed phases, for
# bench/callgrind_guard.sh (mode hooked: the real hooked path under ada record).
add_executable(hooked_guard ${CMAKE_CURRENT_SOURCE_DIR}/hooked_guard.c)
target_compile_options(hooked_guard PRIVATE -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls)
set_target_properties(hooked_guard PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
