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
if(ADA_SANITIZE MATCHES "address|thread")
  return() # they record with the agent, which a sanitized build cannot preload
endif()
# ada_stripped_test(<test name> <t_NAME_OPT> <case> [--arg A]...)
function(ada_stripped_test name prog case)
  ada_e2e_test(e2e.stripped_${name} stripped_test.py
               WORK ${CMAKE_BINARY_DIR}/stripped-work/${name}
               ARGS --stripped ${ADA_TGT_DIR}/t_${prog}_stripped
                    --unstripped ${ADA_TGT_DIR}/t_${prog} ${ARGN} ${case})
endfunction()
foreach(case offsets debuglink build_id after cache)
  ada_stripped_test(${case}.O2 threads_O2 ${case})
endforeach()
ada_stripped_test(offsets.O2nopie threads_O2nopie offsets)
# C++: exceptions through functions found from .eh_frame; gcc's .cold
# blocks (landing pads behind a nop among them) must stay unhooked.
foreach(mode throw rethrow dtor local threads libthrow)
  ada_stripped_test(offsets_cxx_${mode}.O2 cxx_O2 offsets --arg ${mode})
endforeach()
