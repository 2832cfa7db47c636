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
if(ADA_SANITIZE MATCHES "address|thread")
  return() # they record with the agent, which a sanitized build cannot preload
endif()
foreach(case narrow key_file blob gap live_gap bad)
  ada_e2e_test(e2e.keysym_${case} keysym_test.py NO_WORK
               ARGS --target ${ADA_TGT_DIR}/t_control_O2
                    --work ${CMAKE_BINARY_DIR}/keysym-work ${case})
endforeach()
