# Tests of the x86_64 hook layer and hook_mem (owner: hook-arch).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(_ha ${CMAKE_CURRENT_SOURCE_DIR}/unit)

  add_executable(test_hook_reloc ${_ha}/test_hook_reloc.c)
  target_include_directories(test_hook_reloc PRIVATE ${CMOCKA_INCLUDE_DIR} ${CAPSTONE_INCLUDE_DIR})
  target_link_libraries(test_hook_reloc PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_reloc COMMAND test_hook_reloc)

  add_executable(test_hook_mem ${_ha}/test_hook_mem.c)
  target_include_directories(test_hook_mem PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_hook_mem PRIVATE ada_hook_arch ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_mem COMMAND test_hook_mem)

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
endif()

# The fast length table against capstone over real libraries.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(test_hook_len ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hook_len.c)
  target_include_directories(test_hook_len PRIVATE ${CMOCKA_INCLUDE_DIR} ${CAPSTONE_INCLUDE_DIR}
    ${LIBELF_INCLUDE_DIR} ${CMAKE_SOURCE_DIR}/src/hook/x86_64)
  target_link_libraries(test_hook_len PRIVATE ada_hook_arch ada_dep_elf ${CMOCKA_LIBRARY})
  add_test(NAME hook_arch_len COMMAND test_hook_len)
  set_tests_properties(hook_arch_len PROPERTIES SKIP_RETURN_CODE 77)
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
endif()
