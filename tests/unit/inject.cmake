# src/inject against a running program: every thread stopped, dlopen and a
# call run in it, resumed as it was (tests/unit/test_inject.c). The target
# (tests/targets/t_attach.c) and the library it loads are ordinary
# programs, built like tests/targets (no sanitizer).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
# The registers of an injected call, without a target: runs in the arm64
# cross build under qemu-user too (label qemu), which cannot ptrace.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_inject_arch ${CMAKE_CURRENT_LIST_DIR}/test_inject_arch.c)
  target_include_directories(test_inject_arch PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_inject_arch PRIVATE ada_inject_internal ${CMOCKA_LIBRARY})
  add_test(NAME inject_arch COMMAND test_inject_arch)
  set_tests_properties(inject_arch PROPERTIES LABELS "inject;qemu")
  ada_sanitize_tests(asan ubsan TESTS inject_arch)
endif()
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY AND NOT CMAKE_CROSSCOMPILING)
  ada_test_target(attach O2 SOURCES ${ADA_TGT_SRC}/t_attach.c)
  add_library(adat_inject_lib SHARED ${ADA_TGT_SRC}/t_inject_lib.c)
  set_target_properties(adat_inject_lib PROPERTIES
    COMPILE_OPTIONS "-O2;${ADA_TGT_WARN}" LINK_OPTIONS ""
    OUTPUT_NAME t_inject PREFIX "lib" LIBRARY_OUTPUT_DIRECTORY ${ADA_TGT_DIR})
  add_executable(test_inject ${CMAKE_CURRENT_LIST_DIR}/test_inject.c)
  target_include_directories(test_inject PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_inject PRIVATE ada_inject ${CMOCKA_LIBRARY} ${CMAKE_DL_LIBS})
  target_compile_definitions(test_inject PRIVATE
    T_ATTACH="$<TARGET_FILE:adat_attach_O2>" T_LIB="$<TARGET_FILE:adat_inject_lib>")
  add_dependencies(test_inject adat_attach_O2 adat_inject_lib)
  add_test(NAME inject_threads COMMAND test_inject)
  set_tests_properties(inject_threads PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                       LABELS "inject")
  # The injector (maps, ELF symbols, registers) under ASan and UBSan; the
  # target is an ordinary program either way.
  ada_sanitize_tests(asan ubsan TESTS inject_threads)
endif()
