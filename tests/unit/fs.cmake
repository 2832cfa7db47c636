# Unit tests of src/fs (private, link-proof files; no-follow walks; trust).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_fs_files ${CMAKE_CURRENT_LIST_DIR}/test_fs_files.c)
  target_include_directories(test_fs_files PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_fs_files PRIVATE ada_fs ${CMOCKA_LIBRARY})
  add_test(NAME fs_files COMMAND test_fs_files)
  set_tests_properties(fs_files PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
  ada_sanitize_tests(asan ubsan TESTS fs_files)
endif()
# Session roots: no link followed anywhere below the directory a command
# was named (tests/unit/test_fs_root.c).
if(CMOCKA_INCLUDE_DIR AND CMOCKA_LIBRARY)
  add_executable(test_fs_root ${CMAKE_CURRENT_LIST_DIR}/test_fs_root.c)
  target_include_directories(test_fs_root PRIVATE ${CMOCKA_INCLUDE_DIR})
  target_link_libraries(test_fs_root PRIVATE ada_fs ${CMOCKA_LIBRARY})
  add_test(NAME fs_root COMMAND test_fs_root)
  set_tests_properties(fs_root PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
  ada_sanitize_tests(asan ubsan TESTS fs_root)
endif()
