# Private, link-proof files end to end (issue 12 item 2): modes under umask
# 000, planted links never written through, link loops in a session, and
# (as root) refusals of places a throwaway user owns or can write.
if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE)
  message(STATUS "ada tests: no python3, so no private-file tests (install python3)")
  return()
endif()
if(ADA_SANITIZE MATCHES "address|thread")
  # They record with the agent, which a sanitized build cannot preload.
  message(STATUS "ada tests: private-file tests are not registered with ADA_SANITIZE=${ADA_SANITIZE}")
  return()
endif()
foreach(case modes planted threads loop root)
  ada_e2e_test(private_${case} private_test.py TIMEOUT 300 LABELS integration
               WORK ${CMAKE_BINARY_DIR}/private-work
               ARGS --threads $<TARGET_FILE:adat_threads_O2> ${case})
endforeach()
