# src/keysym unit tests (cmocka): containers, density rule, blobs.
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  foreach(t test_keysym_containers)
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
    target_include_directories(${t} PRIVATE ${CMOCKA_INCLUDE_DIR})
    target_link_libraries(${t} PRIVATE ada_keysym ada_keysym_internal ada_dep_roaring ${CMOCKA_LIBRARY})
    add_test(NAME ${t} COMMAND ${t})
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 LABELS keysym TIMEOUT 300)
  endforeach()
endif()
# The swap under 8 threads (also in the TSan stage: tools/test.sh).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_keysym_swap ${CMAKE_CURRENT_LIST_DIR}/test_keysym_swap.c)
  target_include_directories(test_keysym_swap PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_keysym_swap PRIVATE ada_keysym ada_keysym_internal ada_producer ${CMOCKA_LIBRARY}
                        Threads::Threads)
  add_test(NAME test_keysym_swap COMMAND test_keysym_swap)
  set_tests_properties(test_keysym_swap PROPERTIES SKIP_RETURN_CODE 77 LABELS keysym TIMEOUT 600)
endif()
