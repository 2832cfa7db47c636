# ada attach end to end (issue 10): a running program with busy threads and
# one in read() attached to twice, its output and exit status unchanged;
# refusals that leave the target untouched (tests/integration/attach_test.py).
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE)
  message(STATUS "ada tests: no python3, so no attach tests (install python3)")
  return()
endif()
if(ADA_SANITIZE MATCHES "address|thread")
  # The agent is loaded into an unsanitized program: not with a sanitizer.
  message(STATUS "ada tests: attach tests are not registered with ADA_SANITIZE=${ADA_SANITIZE}")
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
# A thread held inside a prologue while it is patched (case move).
ada_test_target(attach_move O2 SOURCES ${ADA_TGT_SRC}/t_attach_move.c)
# Threads created all the time (case spawn).
ada_test_target(attach_spawn O2 SOURCES ${ADA_TGT_SRC}/t_attach_spawn.c)
# A thread holding the loader's lock in a constructor (case loader_lock).
ada_test_target(attach_lock O2 SOURCES ${ADA_TGT_SRC}/t_attach_lock.c)
add_library(adat_attach_lock_lib SHARED ${ADA_TGT_SRC}/t_attach_lock_lib.c)
set_target_properties(adat_attach_lock_lib PROPERTIES
  COMPILE_OPTIONS "-O2;${ADA_TGT_WARN}" LINK_OPTIONS ""
  OUTPUT_NAME t_attach_lock PREFIX "lib" LIBRARY_OUTPUT_DIRECTORY ${ADA_TGT_DIR})
add_dependencies(adat_attach_lock_O2 adat_attach_lock_lib)
set(ADA_ATTACH_T ${CMAKE_BINARY_DIR}/tests/targets)
set(ADA_ATTACH_STATIC "")
if(ADA_LIBC_A)
  set(ADA_ATTACH_STATIC --static ${ADA_ATTACH_T}/t_static)
endif()
foreach(case threads trigger move spawn loader_lock nopid traced static otheruser duration
             budget)
  ada_e2e_test(e2e.attach_${case} attach_test.py TIMEOUT 300 LABELS integration
               WORK ${CMAKE_BINARY_DIR}/attach-work
               ARGS --target ${ADA_ATTACH_T}/t_attach_O2 ${ADA_ATTACH_STATIC}
                    --control ${ADA_ATTACH_T}/t_control_O2
                    --move ${ADA_ATTACH_T}/t_attach_move_O2
                    --spawn ${ADA_ATTACH_T}/t_attach_spawn_O2
                    --lock ${ADA_ATTACH_T}/t_attach_lock_O2
                    --lock-lib ${ADA_ATTACH_T}/libt_attach_lock.so ${case})
endforeach()
# The index lane alone (--detail never): the trampolines' machine-code fast
# form emitted into a running process, attached to twice (hook_arch.h).
foreach(case threads move)
  ada_e2e_test(e2e.attach_index_${case} attach_test.py TIMEOUT 300 LABELS integration
               WORK ${CMAKE_BINARY_DIR}/attach-work-index
               ARGS --target ${ADA_ATTACH_T}/t_attach_O2
                    --move ${ADA_ATTACH_T}/t_attach_move_O2
                    --attach-opt=--detail --attach-opt=never ${case})
endforeach()
