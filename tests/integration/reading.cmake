# The reading commands end to end (issue 11): report, names, dump filters,
# Chrome export, flame graphs, crash stacks, ls, a damaged session, and the
# exports in speedscope in headless Chromium. Checks: reading_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE OR ADA_SANITIZE MATCHES "^(address|thread)$")
  return() # hooks.cmake says why
endif()
set(T ${ADA_TGT_DIR})
# ada_read_test(<name> <check> <program and arguments>...)
function(ada_read_test name check)
  add_test(NAME e2e.read_${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/reading_test.py
                   --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/itest-work
                   --name read_${name} ${check} -- ${ARGN})
  set_tests_properties(e2e.read_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 200
                       LABELS "e2e")
endfunction()
ada_read_test(report_threads report ${T}/t_threads_O2)
ada_read_test(report_recursion report ${T}/t_recursion_O0)
ada_read_test(names_cxx names ${T}/t_cxx_O0 dtor)
