# The README's first command (issue 39): tools/demo.sh with this build's ada
# and ada-demo (--built, no install and no build), in a temp dir it removes
# with ada's caches in it (--clean). The script checks its own story: the
# demo server dies of SIGSEGV alone and ada record exits with the same
# status (139), the crash window is in the manifest and a detail.atf on
# disk, and `ada crash` names render_item as frame #0 of the faulting
# thread with the bad request's id in rsi. No timing is asserted; the
# TIMEOUT is only a guard against a hang.
if(ADA_SANITIZE MATCHES "address|thread")
  return() # the agent cannot be preloaded under these runtimes (hooks.cmake)
endif()
add_test(NAME e2e.demo
         COMMAND bash ${CMAKE_SOURCE_DIR}/tools/demo.sh --built $<TARGET_FILE_DIR:ada> --clean)
set_tests_properties(e2e.demo PROPERTIES LABELS "e2e" TIMEOUT 120)
