# arm64 under qemu-user (issue 37, docs/arm64.md): the native ada records
# the end-to-end targets of an aarch64 cross build (cmake/aarch64-linux-gnu.cmake)
# run by qemu-aarch64 with the cross-built agent, and holds each trace
# against the calls the program counted, as tests/integration/hooks.cmake
# does on x86_64 (the untraced run goes through qemu too: --emulator).
# --expect-arch arm64: the manifests, the files' headers and the crash
# context say arm64, and the clock came from the program's counter.
# Registered only when the native build is configured with
# -DADA_ARM64_BUILD=<cross build> (tools/test.sh's arm64 stage, which
# builds what they need there first), label arm64: the release stage is
# as without them. Emulated, not timed: nothing here measures.
set(ADA_ARM64_BUILD "" CACHE PATH
    "An aarch64 cross build whose agent and targets the arm64 tests record under qemu-user")
if(NOT ADA_ARM64_BUILD OR NOT Python3_EXECUTABLE OR ADA_SANITIZE)
  return()
endif()
find_program(ADA_QEMU_AARCH64 qemu-aarch64)
ada_suite_require("${ADA_QEMU_AARCH64}" "qemu-aarch64" "no arm64 test runs" qemu-user)
# The C library's root as ada record chooses it (tools/record_emul.c).
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(_a64_default_root /)
else()
  set(_a64_default_root /usr/aarch64-linux-gnu)
endif()
set(ADA_ARM64_ROOT ${_a64_default_root} CACHE PATH "qemu-aarch64 -L for the arm64 tests")
set(_a64_root ${ADA_ARM64_ROOT})
set(_a64 ${ADA_ARM64_BUILD}/tests/targets)

# ada_arm64_test(<test name> <harness arguments>...): arm64.<name>.
function(ada_arm64_test name)
  ada_e2e_test(arm64.${name} ada_itest.py TIMEOUT 120 LABELS arm64
               WORK ${CMAKE_BINARY_DIR}/arm64-work
               ENVIRONMENT ADA_AGENT_ARM64=${ADA_ARM64_BUILD}/libada_agent.so
                           ADA_QEMU_AARCH64=${ADA_QEMU_AARCH64} ADA_QEMU_SYSROOT=${_a64_root}
               ARGS --name arm64_${name} --emulator "${ADA_QEMU_AARCH64} -L ${_a64_root}"
                    ${ARGN})
endfunction()

# What they need of the cross build (tools/test.sh builds these targets
# there: ada_agent adat_threads_O2 adat_fork_O2 adat_dlopen_O2 adat_dlib
# adat_setjmp_O2 adat_signal_O2 adat_crash_O2 adat_cxx_O2 adat_flight_O2).
set(_arch --expect-arch arm64)
ada_arm64_test(threads.O2 target ${_arch} -- ${_a64}/t_threads_O2)
ada_arm64_test(fork.O2 target ${_arch} --expect-pids 2 -- ${_a64}/t_fork_O2 fork)
ada_arm64_test(dlopen.O2 target ${_arch} --own-module libt_dlib.so
               -- ${_a64}/t_dlopen_O2 ${_a64}/libt_dlib.so)
ada_arm64_test(setjmp.O2 target ${_arch} -- ${_a64}/t_setjmp_O2)
ada_arm64_test(signal.O2 target ${_arch} -- ${_a64}/t_signal_O2 sync)
ada_arm64_test(cxx_throw.O2 target ${_arch} -- ${_a64}/t_cxx_O2 throw)
ada_arm64_test(cxx_threads.O2 target ${_arch} -- ${_a64}/t_cxx_O2 threads)
ada_arm64_test(crash_segv.O2 target ${_arch} --expect-status 139 --expect-signal 11
               -- ${_a64}/t_crash_O2)
# The far patch form (agent_far.c): with ADA_HOOK_FAR_TEST every module
# gets its trampoline block beyond `b`'s reach, so every function is
# patched with adrp/add/br x16 (as in a module wider than +-128 MiB);
# the counts are exact and every hooked function of the program took
# the far form.
ada_arm64_test(far_threads.O2 target ${_arch} --far-form t_threads_O2
               -- ${_a64}/t_threads_O2)
set_property(TEST arm64.far_threads.O2 APPEND PROPERTY ENVIRONMENT ADA_HOOK_FAR_TEST=1)
# --count-only on arm64 (a64_count.c): leaf and work_a write no events;
# their CALLs plus the manifest's counts are the program's own counts.
ada_arm64_test(count_only target ${_arch} --count-only leaf --count-only work_a
               -- ${_a64}/t_threads_O2 heavy)
# --overhead-budget on arm64: leaf moved to count-only while the threads
# call it (its `b` re-aimed at a count block); events before the move
# plus counts after it are the program's calls. At most 2^20 rounds
# before a move (the untraced run under qemu never sees one: 16 M would
# take it 12 s); the move comes after a few hundred ms of tracing. Not
# in the arm64 stage (label arm64_slow: ctest -L arm64_slow): the harness
# reads the ~700 000 events before the move, 13 s at load 7, 30 s at 17.
ada_arm64_test(overhead_budget target ${_arch} --nondeterministic --moved leaf
               --record-opt=--overhead-budget --record-opt=10 --record-opt=--max-disk-mb
               --record-opt=0 -- ${_a64}/t_threads_O2 budget 20)
set_tests_properties(arm64.overhead_budget PROPERTIES LABELS arm64_slow)
# The flight recorder's crash window (--trigger crash): the detail window
# before the fault, the signal context record with the registers.
ada_arm64_test(flight_crash_segv flight crash_segv ${_a64}/t_flight_O2)
# The crash-time restore (agent_crash.c, shadow_restore_for_crash): the
# core qemu-user writes for the guest, read by gdb-multiarch, names the
# same frames under ada as untraced (x30 saved in the hooked frames and
# in the context put back before the signal is re-raised). ~2 s.
add_test(NAME arm64.crash_core
         COMMAND ${ADA_PYTHON_RUN} ${CMAKE_CURRENT_LIST_DIR}/arm64_core.py
                 --ada $<TARGET_FILE:ada> --qemu ${ADA_QEMU_AARCH64} --root ${_a64_root}
                 --gdb gdb-multiarch --work ${CMAKE_BINARY_DIR}/arm64-work/core
                 -- ${_a64}/t_crash_O2 segv)
set_tests_properties(arm64.crash_core PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS arm64
  ENVIRONMENT "ADA_AGENT_ARM64=${ADA_ARM64_BUILD}/libada_agent.so;ADA_QEMU_AARCH64=${ADA_QEMU_AARCH64};ADA_QEMU_SYSROOT=${_a64_root};ADA_NO_RECOVER_ORPHANS=1")
# The plan cache under qemu: the second recording hits for every module.
add_test(NAME arm64.plan_cache
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/arm64_cache.sh $<TARGET_FILE:ada>
                 ${_a64}/t_setjmp_O2 ${CMAKE_BINARY_DIR}/arm64-work/cache)
set_tests_properties(arm64.plan_cache PROPERTIES TIMEOUT 60 LABELS arm64
  ENVIRONMENT "ADA_AGENT_ARM64=${ADA_ARM64_BUILD}/libada_agent.so;ADA_QEMU_AARCH64=${ADA_QEMU_AARCH64};ADA_QEMU_SYSROOT=${_a64_root};ADA_NO_RECOVER_ORPHANS=1")
# What runs it is missing or wrong: one sentence, exit 2, no session; and
# ada attach to a process qemu-user runs, refused (no ptrace of guests).
add_test(NAME arm64.bad_agent
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/arm64_bad.sh $<TARGET_FILE:ada>
                 $<TARGET_FILE:ada_agent> ${_a64}/t_setjmp_O2 ${CMAKE_BINARY_DIR}/arm64-work/bad
                 ${ADA_QEMU_AARCH64} ${_a64}/t_threads_O2 budget)
set_tests_properties(arm64.bad_agent PROPERTIES TIMEOUT 60 LABELS arm64
  ENVIRONMENT "ADA_AGENT_ARM64=${ADA_ARM64_BUILD}/libada_agent.so;ADA_QEMU_SYSROOT=${_a64_root}")
