# Stripped code is traced (issue 33 item 3): a stripped copy of
# tests/targets/t_threads recorded with its functions found from .eh_frame
# (named by offset, exact counts, the warning naming the module), named
# from its debug file by .gnu_debuglink or by build-id, at recording time
# and after it (ada dump, ada report). The checks are in stripped_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE OR NOT CMAKE_OBJCOPY)
  message(STATUS "ada tests: no python3 or objcopy, so no stripped-image tests")
  return()
endif()
if(ADA_SANITIZE MATCHES "^(address|thread)$")
  return() # they record with the agent, which a sanitized build cannot preload
endif()
foreach(opt O2 O2nopie)
  foreach(case offsets debuglink build_id after)
    if(opt STREQUAL "O2nopie" AND NOT case STREQUAL "offsets")
      continue()
    endif()
    add_test(NAME e2e.stripped_${case}.${opt}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/stripped_test.py
                     --ada $<TARGET_FILE:ada> --work ${CMAKE_BINARY_DIR}/stripped-work/${opt}
                     --stripped ${ADA_TGT_DIR}/t_threads_${opt}_stripped
                     --unstripped ${ADA_TGT_DIR}/t_threads_${opt} ${case})
    set_tests_properties(e2e.stripped_${case}.${opt} PROPERTIES SKIP_RETURN_CODE 77
                         TIMEOUT 150 LABELS "e2e")
  endforeach()
endforeach()
