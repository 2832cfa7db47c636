# Key-symbol sets end to end (issue 9 parts 4, 5): ada keysym narrowing the
# set of a running tests/targets/t_control.c, --key-symbols, --blob and
# their refusals. The checks are in keysym_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE)
  message(STATUS "ada tests: no python3, so no key-symbol end-to-end tests (install python3)")
  return()
endif()
if(ADA_SANITIZE MATCHES "^(address|thread)$")
  return() # they record with the agent, which a sanitized build cannot preload
endif()
foreach(case narrow key_file blob gap live_gap bad)
  add_test(NAME e2e.keysym_${case}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/keysym_test.py
                   --ada $<TARGET_FILE:ada> --target ${ADA_TGT_DIR}/t_control_O2
                   --work ${CMAKE_BINARY_DIR}/keysym-work ${case})
  set_tests_properties(e2e.keysym_${case} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 150
                       LABELS "e2e")
endforeach()
