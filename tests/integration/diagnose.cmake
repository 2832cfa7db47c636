# ada diagnose (issue 10 item 4): each failing check in both output forms,
# and ada record refusing with the same sentence (tests/integration/diagnose_test.py).
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE)
  message(STATUS "ada tests: no python3, so no diagnose tests (install python3)")
  return()
endif()
set(ADA_DIAG_STATIC "")
set(ADA_DIAG_T ${CMAKE_BINARY_DIR}/tests/targets)
if(ADA_LIBC_A)
  set(ADA_DIAG_STATIC --static ${ADA_DIAG_T}/t_static)
endif()
# functions: ada diagnose --functions over t_pad (docs/diagnose.md).
foreach(case static setuid missing deadpid traced otheruser nondumpable live functions)
  ada_e2e_test(e2e.diagnose_${case} diagnose_test.py TIMEOUT 120 LABELS integration
               WORK ${CMAKE_BINARY_DIR}/diagnose-work
               ARGS --dynamic ${ADA_DIAG_T}/t_exec_child_O2 ${ADA_DIAG_STATIC}
                    --pad ${ADA_DIAG_T}/t_pad_O2 ${case})
endforeach()
