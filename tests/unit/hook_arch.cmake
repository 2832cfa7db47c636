# Tests of the x86_64 hook layer and hook_mem (owner: hook-arch).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(_ha ${CMAKE_CURRENT_SOURCE_DIR}/unit)

  add_executable(test_hook_reloc ${_ha}/test_hook_reloc.c)
  target_include_directories(test_hook_reloc PRIVATE ${CMOCKA_INCLUDE_DIR} ${CAPSTONE_INCLUDE_DIR})
  target_link_libraries(test_hook_reloc PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_reloc COMMAND test_hook_reloc)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_reloc)

  add_executable(test_hook_copy ${_ha}/test_hook_copy.c)
  target_include_directories(test_hook_copy PRIVATE ${CMOCKA_INCLUDE_DIR} ${CAPSTONE_INCLUDE_DIR})
  target_link_libraries(test_hook_copy PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_copy COMMAND test_hook_copy)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_copy)

  add_executable(test_hook_mem ${_ha}/test_hook_mem.c)
  target_include_directories(test_hook_mem PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_hook_mem PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_mem COMMAND test_hook_mem)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_mem)

  # The trampolines call the handlers without aligning the stack: nothing
  # reachable from them may call out of handlers.c before realigning
  # (tools/check-handler-align.py reads the built agent's code). The
  # layout it checks is the optimised one: Release builds only.
  if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT ADA_SANITIZE)
    add_test(NAME hook_arch_align
      COMMAND ${CMAKE_SOURCE_DIR}/tools/check-handler-align.py $<TARGET_FILE:ada_agent>
              $<TARGET_OBJECTS:ada_agent>)
    set_tests_properties(hook_arch_align PROPERTIES SKIP_RETURN_CODE 77)
  endif()

  # Handlers are built as the agent's: general registers only, so xmm/x87
  # values pass through untouched.
  add_library(test_hook_handlers OBJECT ${_ha}/test_hook_handlers.c)
  target_compile_options(test_hook_handlers PRIVATE -mgeneral-regs-only -O2)
  target_include_directories(test_hook_handlers PRIVATE $<TARGET_PROPERTY:ada_hook_arch,INTERFACE_INCLUDE_DIRECTORIES>)
  # Sanitizer instrumentation would call into the runtime from hook context.
  set_source_files_properties(${_ha}/test_hook_handlers.c PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all")

  foreach(opt O0 O2)
    add_library(test_hook_ctargets_${opt} OBJECT ${_ha}/test_hook_ctargets.c)
    target_compile_definitions(test_hook_ctargets_${opt} PRIVATE HT_SUFFIX=${opt})
    target_compile_options(test_hook_ctargets_${opt} PRIVATE -${opt} -fno-sanitize=all)
    add_executable(test_hook_clobber_${opt} ${_ha}/test_hook_clobber.c ${_ha}/test_hook_targets.S
      $<TARGET_OBJECTS:test_hook_ctargets_${opt}> $<TARGET_OBJECTS:test_hook_handlers>)
    target_compile_definitions(test_hook_clobber_${opt} PRIVATE HT_SUFFIX=${opt})
    target_include_directories(test_hook_clobber_${opt} PRIVATE ${CMOCKA_INCLUDE_DIR} ${_ha})
    target_link_libraries(test_hook_clobber_${opt} PRIVATE ada_hook_arch ${CMOCKA_LIBRARY} ${CMAKE_DL_LIBS} Threads::Threads)
    set_target_properties(test_hook_clobber_${opt} PROPERTIES ENABLE_EXPORTS ON)
    add_test(NAME hook_arch_clobber_${opt} COMMAND test_hook_clobber_${opt})
    ada_sanitize_tests(asan ubsan TESTS hook_arch_clobber_${opt})
  endforeach()
  # The index lane's fast form over a TLS block laid out as the agent's.
  add_executable(test_hook_fast ${_ha}/test_hook_fast.c ${_ha}/test_hook_targets.S)
  # detail_rec_internal.h: the C handlers' record writers, the reference.
  target_include_directories(test_hook_fast PRIVATE ${CMOCKA_INCLUDE_DIR} ${_ha}
    ${PROJECT_SOURCE_DIR}/src/hook)
  target_link_libraries(test_hook_fast PRIVATE ada_hook_arch ada_ring_internal ${CMOCKA_LIBRARY})
  # The fake C handlers run in hook context: no sanitizer runtime there.
  set_source_files_properties(${_ha}/test_hook_fast.c PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all")
  add_test(NAME hook_arch_fast COMMAND test_hook_fast)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_fast)
endif()

# The fast length table against capstone over real libraries.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(test_hook_len ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_len.c)
  target_include_directories(test_hook_len PRIVATE ${CMOCKA_INCLUDE_DIR} ${CAPSTONE_INCLUDE_DIR}
    ${LIBELF_INCLUDE_DIR} ${CMAKE_SOURCE_DIR}/src/hook/x86_64)
  target_link_libraries(test_hook_len PRIVATE ada_hook_arch ada_dep_elf ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_len COMMAND test_hook_len)
  set_tests_properties(hook_arch_len PROPERTIES SKIP_RETURN_CODE 77)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_len)
endif()

# Same verdicts with and without the fast length table, over real libraries.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(test_hook_verdicts ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_verdicts.c)
  target_include_directories(test_hook_verdicts PRIVATE ${CMOCKA_INCLUDE_DIR}
    ${CMAKE_SOURCE_DIR}/src/hook ${CMAKE_SOURCE_DIR}/src/hook/x86_64)
  target_link_libraries(test_hook_verdicts PRIVATE ada_agent_core ada_hook_arch ada_dep_elf
    ${CMOCKA_LIBRARY} Threads::Threads)
  add_test(NAME hook_arch_verdicts COMMAND test_hook_verdicts)
  # The two-thread analysis alone (the thread-sanitizer stage runs this one).
  add_test(NAME hook_arch_verdicts_threads COMMAND test_hook_verdicts threads)
  set_tests_properties(hook_arch_verdicts hook_arch_verdicts_threads PROPERTIES SKIP_RETURN_CODE 77)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_verdicts)
  ada_sanitize_tests(asan ubsan tsan TESTS hook_arch_verdicts_threads)
endif()

# The emitter's bytes for every stub kind, against golden files
# (tests/data/x86_emit_golden/; `test_hook_emit_golden --write DIR`
# writes them).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(test_hook_emit_golden ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_emit_golden.c)
  target_include_directories(test_hook_emit_golden PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_compile_definitions(test_hook_emit_golden PRIVATE
    ADA_EMIT_GOLDEN_DIR="${CMAKE_SOURCE_DIR}/tests/data/x86_emit_golden")
  target_link_libraries(test_hook_emit_golden PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_emit_golden COMMAND test_hook_emit_golden)
endif()

# The code writer's instructions against capstone's decoding.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(test_hook_x86_writer ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_x86_writer.c)
  target_include_directories(test_hook_x86_writer PRIVATE ${CMOCKA_INCLUDE_DIR}
    ${CAPSTONE_INCLUDE_DIR} ${CMAKE_SOURCE_DIR}/src/hook/x86_64)
  target_link_libraries(test_hook_x86_writer PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_x86_writer COMMAND test_hook_x86_writer)
endif()

# The arm64 hook layer's portable core (src/hook/arm64/), byte for byte:
# relocation of every PC-relative class, trampolines, patches, verdicts.
# Plain C over 32-bit words, so it runs on any host (well under a second).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_hook_a64 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_a64.c)
  target_include_directories(test_hook_a64 PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_hook_a64 PRIVATE ada_hook_a64 ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_a64_reloc COMMAND test_hook_a64)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_a64_reloc)
  # Random words of every PC-relative class against capstone's AArch64
  # decoding (32 000 cases, well under a second).
  add_executable(test_hook_a64_cs ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_a64_cs.c)
  target_include_directories(test_hook_a64_cs PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_hook_a64_cs PRIVATE ada_hook_a64 ada_dep_capstone ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_a64_capstone COMMAND test_hook_a64_cs)
  ada_sanitize_tests(asan ubsan TESTS hook_arch_a64_capstone)
endif()

# The arm64 layer end to end on aarch64 (natively, or in a cross build
# under the toolchain's CMAKE_CROSSCOMPILING_EMULATOR, qemu-aarch64):
# functions of every relocation class hooked in place and called, with
# fake handlers taking each contract path.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  add_executable(test_hook_a64_run ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_a64_run.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_a64_targets.S)
  target_include_directories(test_hook_a64_run PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_hook_a64_run PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  # The fake handlers run inside hooked functions: no sanitizer runtime there.
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_a64_run.c
    PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all")
  add_test(NAME hook_arch_a64_run COMMAND test_hook_a64_run)
  # Label qemu: the arm64_unit stage runs it (the count block's exact
  # count and kept registers, test_count_block), under a second.
  set_tests_properties(hook_arch_a64_run PROPERTIES LABELS "qemu" TIMEOUT 60)
endif()
