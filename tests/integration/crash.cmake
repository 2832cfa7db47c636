# The moment of a crash (issue 33 items 1 and 4): frame #0 from the signal
# context for a function no mechanism hooks (store3: 3 bytes, no padding)
# and for one the padding form hooks (store4: 4 bytes, faulting in its
# trampoline's copy), and gdb's
# backtrace at the re-raised fault under ada equal to untraced (the
# hijacked return addresses put back); and item 5, float and double
# arguments and returns in the detail lane. Checks: crash_test.py.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()
set(T ${ADA_TGT_DIR})
# ada_crash_test(<name> <check> <program and arguments>...)
function(ada_crash_test name check)
  ada_e2e_test(e2e.crash_${name} crash_test.py TIMEOUT 300
               WORK ${CMAKE_BINARY_DIR}/crash-work/${name} ARGS ${check} -- ${ARGN})
endfunction()
ada_crash_test(frame0_store3.O2 frame0 ${T}/t_crash0_O2 3)
ada_crash_test(frame0_store4.O2 frame0 ${T}/t_crash0_O2 4)
ada_crash_test(gdb_store4.O2 gdb ${T}/t_crash0_O2 4)
# A fault in a hooked function's first instructions (its trampoline's
# relocated copies): frame #0 and gdb's frame 0 are the function itself.
ada_crash_test(frame0_load0.O2 frame0 ${T}/t_crash0_O2 l)
ada_crash_test(frame0_load3.O2 frame0 ${T}/t_crash0_O2 m)
# A count-only leaf faulting past its fifth instruction, in its count
# block's copy (the copy form): frame #0 is still the function itself.
ada_crash_test(frame0_countcopy.O2 frame0 ${T}/t_crash0_O2 c)
# (gdb at offset 0 of a copy: gdb_store4; here a later copy.)
ada_crash_test(gdb_load3.O2 gdb ${T}/t_crash0_O2 m)
ada_crash_test(gdb_inner.O2 gdb ${T}/t_crash_O2 segv)
# The other threads at the crash: where each was (its pc from /proc).
ada_crash_test(threads.O2 threads ${T}/t_crashmt_O2)
# Float and double arguments and returns in the detail lane (--detail-fp).
ada_e2e_test(e2e.detail_fp.O2 crash_test.py NO_SKIP TIMEOUT 300
             WORK ${CMAKE_BINARY_DIR}/crash-work/detail_fp ARGS fp -- ${T}/t_fparg_O2)
