# Tests of the agent (src/hook: discovery, symbols, .syms files, options,
# shadow stack). Owner: agent.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  set(_ag ${CMAKE_CURRENT_LIST_DIR})
  # ehframe's functions are x86_64 assembly.
  set(_ag_tests symbols shadow retire syms config plancache symcache budgetmem detail pad printf)
  if(ADA_ARCH STREQUAL "x86_64")
    list(APPEND _ag_tests ehframe)
  endif()
  foreach(t ${_ag_tests})
    add_executable(test_agent_${t} ${_ag}/test_agent_${t}.c)
    target_include_directories(test_agent_${t} PRIVATE ${CMOCKA_INCLUDE_DIR})
    target_link_libraries(test_agent_${t} PRIVATE ada_agent_core ada_hook_internal ${CMOCKA_LIBRARY} ${CMAKE_DL_LIBS})
    add_test(NAME agent_${t} COMMAND test_agent_${t})
    set_tests_properties(agent_${t} PROPERTIES SKIP_RETURN_CODE 77)
    ada_sanitize_tests(asan ubsan TESTS agent_${t})
  endforeach()
  # The shadow stack as on arm64 (the return point kept in the body's
  # frame, below its slot: SHADOW_RET_IN_FRAME), on any host.
  add_executable(test_agent_shadow_inframe ${_ag}/test_agent_shadow.c)
  target_compile_definitions(test_agent_shadow_inframe PRIVATE SHADOW_RET_IN_FRAME=1)
  target_include_directories(test_agent_shadow_inframe PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_agent_shadow_inframe PRIVATE ada_agent_core ada_hook_internal
    ${CMOCKA_LIBRARY})
  add_test(NAME agent_shadow_inframe COMMAND test_agent_shadow_inframe)
  ada_sanitize_tests(asan ubsan TESTS agent_shadow_inframe)
  # The far form's BTI note test (agent_far.c is the shared agent's: built
  # into the test itself; on x86_64 only its note reader has a body).
  add_executable(test_agent_far ${_ag}/test_agent_far.c ${PROJECT_SOURCE_DIR}/src/hook/agent_far.c)
  target_include_directories(test_agent_far PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_agent_far PRIVATE ada_agent_core ada_hook_internal ${CMOCKA_LIBRARY})
  add_test(NAME agent_far COMMAND test_agent_far)
  ada_sanitize_tests(asan ubsan TESTS agent_far)
  # A plan cache hit's check read from the file (agent_text.c, the shared
  # agent's: built into the test itself).
  add_executable(test_agent_text ${_ag}/test_agent_text.c ${PROJECT_SOURCE_DIR}/src/hook/agent_text.c
    ${PROJECT_SOURCE_DIR}/src/hook/agent_sharedtext.c)
  target_include_directories(test_agent_text PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_agent_text PRIVATE ada_agent_core ada_hook_internal ${CMOCKA_LIBRARY})
  add_test(NAME agent_text COMMAND test_agent_text)
  ada_sanitize_tests(asan ubsan TESTS agent_text)
  # Trampolines staged and copied into their block (agent_stage.c, the
  # shared agent's: built into the test itself).
  add_executable(test_agent_stage ${_ag}/test_agent_stage.c ${PROJECT_SOURCE_DIR}/src/hook/agent_stage.c)
  target_include_directories(test_agent_stage PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_agent_stage PRIVATE ada_agent_core ada_hook_internal ${CMOCKA_LIBRARY})
  add_test(NAME agent_stage COMMAND test_agent_stage)
  ada_sanitize_tests(asan ubsan TESTS agent_stage)
  # The special functions by name (agent_special.c, the shared agent's:
  # built into the test itself).
  add_executable(test_agent_special ${_ag}/test_agent_special.c
    ${PROJECT_SOURCE_DIR}/src/hook/agent_special.c)
  target_include_directories(test_agent_special PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_agent_special PRIVATE ada_agent_core ada_hook_internal
    ${CMOCKA_LIBRARY} Threads::Threads)
  add_test(NAME agent_special COMMAND test_agent_special)
  ada_sanitize_tests(asan ubsan TESTS agent_special)
  # The counting threads' registry (countreg_internal.h): exits racing
  # live snapshots and the final sum, many rounds; TSan too.
  add_executable(test_agent_countreg ${_ag}/test_agent_countreg.c)
  target_include_directories(test_agent_countreg PRIVATE ${CMOCKA_INCLUDE_DIR}
    ${PROJECT_SOURCE_DIR}/src/hook)
  target_link_libraries(test_agent_countreg PRIVATE ${CMOCKA_LIBRARY} Threads::Threads)
  add_test(NAME agent_countreg COMMAND test_agent_countreg)
  ada_sanitize_tests(asan ubsan tsan TESTS agent_countreg)
  # dladdr1 must see the test's own functions: export them.
  set_target_properties(test_agent_symbols PROPERTIES ENABLE_EXPORTS ON)
  target_link_libraries(test_agent_syms PRIVATE ada_atf)
  # test_agent_detail builds key-symbol blobs (agent_detail_ask).
  target_link_libraries(test_agent_detail PRIVATE ada_keysym)
endif()
