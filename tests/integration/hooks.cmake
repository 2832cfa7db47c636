# End-to-end tests of `ada record` (issue 4): record the programs of
# tests/targets/ and hold each trace against the calls the program counted
# itself; trace real Debian programs; feed `ada record` bad input. The
# harness is tests/integration/ada_itest.py; it exits 77 (skip) only while
# the ada binary says a command is not implemented.
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)

if(NOT Python3_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
endif()
if(NOT Python3_EXECUTABLE)
  message(STATUS "ada tests: no python3, so no end-to-end hook tests (install python3)")
  return()
endif()
# The harness's own checks, on hand-made traces: they must catch bad ones.
add_test(NAME itest.harness_selftest
         COMMAND ${ADA_PYTHON_RUN} ${CMAKE_CURRENT_LIST_DIR}/ada_itest.py --ada none
                 --work ${CMAKE_BINARY_DIR}/itest-work --name selftest selftest)

if(ADA_SANITIZE MATCHES "address|thread")
  # A sanitized libada_agent.so cannot be preloaded into an unsanitized program.
  message(STATUS "ada tests: end-to-end hook tests are not registered with ADA_SANITIZE=${ADA_SANITIZE}")
  return()
endif()

set(T ${ADA_TGT_DIR})

# ada_itest(<test name> <harness arguments>...)
function(ada_itest name)
  ada_e2e_test(e2e.${name} ada_itest.py ARGS --name ${name} ${ARGN})
endfunction()

set(ADA_ITEST_LEVELS O0 O2 O3)
if(ADA_CLANG AND ADA_CLANGXX)
  list(APPEND ADA_ITEST_LEVELS clangO2)
endif()
foreach(opt ${ADA_ITEST_LEVELS})
  ada_itest(threads.${opt} target -- ${T}/t_threads_${opt})
  ada_itest(recursion.${opt} target -- ${T}/t_recursion_${opt})
  ada_itest(funcptr.${opt} target -- ${T}/t_funcptr_${opt})
  ada_itest(setjmp.${opt} target -- ${T}/t_setjmp_${opt})
  ada_itest(signal.${opt} target -- ${T}/t_signal_${opt} sync)
  foreach(mode throw rethrow dtor local threads libthrow)
    ada_itest(cxx_${mode}.${opt} target -- ${T}/t_cxx_${opt} ${mode})
  endforeach()
endforeach()
foreach(opt O2 O3)
  ada_itest(tailcall.${opt} target -- ${T}/t_tailcall_${opt})
endforeach()
if(ADA_CLANG AND ADA_CLANGXX)
  ada_itest(tailcall.clangO2 target -- ${T}/t_tailcall_clangO2)
endif()
ada_itest(threads.O2cet target -- ${T}/t_threads_O2cet)
ada_itest(threads.O2nopie target -- ${T}/t_threads_O2nopie)
ada_itest(cxx_dtor.O2nopie target -- ${T}/t_cxx_O2nopie dtor)
ada_itest(threads_many.O2 target -- ${T}/t_threads_O2 many)
ada_itest(threads_heavy.O2 target -- ${T}/t_threads_O2 heavy)
# Rings of ~1024 events (K = 100000/s x 10 ms): producers wait all the time
# (--ring-waits: every thread the program started did). A fifth of heavy's
# calls fills such a ring many times over (here and in the two below).
ada_itest(threads_tinyring.O2 target --ring-waits --record-opt=--peak-rate --record-opt=100000
          --record-opt=--burst-ms --record-opt=10 -- ${T}/t_threads_O2 heavy 5)
# --exclude-symbol / --include / --exclude: what is left out has no events,
# everything else is still exact.
ada_itest(exclude_symbol.O2 target --record-opt=--exclude-symbol --record-opt=work_*
          --absent work_* -- ${T}/t_threads_O2)
# --count-only (docs/hooks.md, "Count-only functions"): the hottest leaves
# write no events; their CALLs in the trace plus the manifest's counts are
# exactly the program's calls, with many threads and with the index lane.
ada_itest(count_only target --count-only leaf --count-only work_a -- ${T}/t_threads_O2 heavy)
# The same with the count blocks' pointer form (what a program that uses
# %gs gets; x86_64: t_threads exits 4 when leaf's block is not the form
# T_COUNT_FORM names, so each test proves its form).
ada_itest(count_only_ptr target --count-only leaf --count-only work_a -- ${T}/t_threads_O2 heavy)
set_property(TEST e2e.count_only APPEND PROPERTY ENVIRONMENT T_COUNT_FORM=gs)
set_property(TEST e2e.count_only_ptr APPEND PROPERTY ENVIRONMENT
             "ADA_TEST_COUNT_NO_GS=1;T_COUNT_FORM=ptr")
# The %gs form with each worker pointing %gs at memory of its own for its
# work_b calls (T_GS_MOVE: t_threads exits 5 when a count landed there):
# the blocks find no tag at gs:[-8] and take the trampoline, so those leaf
# calls are events and the counts stay exact.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  ada_itest(count_only_gs_moved target --count-only leaf --count-only work_a --
            ${T}/t_threads_O2 heavy)
  set_property(TEST e2e.count_only_gs_moved APPEND PROPERTY ENVIRONMENT T_GS_MOVE=1)
endif()
ada_itest(count_only_index target --count-only leaf --count-only work_* --record-opt=--detail
          --record-opt=never -- ${T}/t_threads_O2 many)
# --overhead-budget 10: leaf and work_a (the hottest, shortest) are moved
# to count-only while the four threads call them (each thread runs until
# it sees leaf's patch lead to a count block, then as long again): events
# before the move plus counts after it are the program's calls (x86_64:
# the block it saw must be the inline form, else t_threads exits 3). The four
# threads run in a forked child (budget_fork), whose budget thread is its
# own (fork copies only the forking thread), so the test proves the
# budget in the parent that started it and in the child. The disk
# budget is off so that no old generation is deleted before the check.
# Then (--recalled) the same again under the same plan cache: leaf starts
# count-only ("recalled", remembered by build-id) and the counts stay
# exact.
ada_itest(overhead_budget target --nondeterministic --moved leaf --recalled
          --record-opt=--overhead-budget
          --record-opt=10 --record-opt=--max-disk-mb --record-opt=0 -- ${T}/t_threads_O2
          budget_fork)
# ~1 M events before the move, read back by the harness: 30 s idle, 80 s
# on a loaded machine.
set_tests_properties(e2e.overhead_budget PROPERTIES TIMEOUT 300)
# A thread per request (t_threads budget_serial): no thread lives through
# two ticks, so leaf moves only by the budget's judgement of the threads
# no tick judged alone; the counts stay exact across the move.
ada_itest(overhead_budget_serial target --nondeterministic --moved leaf
          --record-opt=--overhead-budget --record-opt=10 -- ${T}/t_threads_O2 budget_serial)
set_tests_properties(e2e.overhead_budget_serial PROPERTIES TIMEOUT 300)
ada_itest(include_module.O2 target --record-opt=--include --record-opt=t_threads_O2
          --absent-module libc.so* -- ${T}/t_threads_O2)
ada_itest(exclude_module.O2 target --record-opt=--exclude --record-opt=libc.so*
          --absent-module libc.so* -- ${T}/t_funcptr_O2)
ada_itest(prologue.O2 target -- ${T}/t_prologue_O2)
# The count blocks' copy form (docs/hooks.md, "Count-only functions"):
# every asm entry shape of t_prologue count-only (a rip-relative operand,
# a branch inside the copied bytes and one out of them, a tail jmp, a
# jmp over dead bytes, a loop, a switch dispatch, the padding form), each
# counted exactly; T_COPY_FORM: t_prologue exits 7 unless each got the
# copy form and pro_callind (a call in its first bytes) the inline one.
# The same with the blocks' pointer form (push r11 ... pop r11 before the
# copy).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  ada_itest(count_copy target --count-only pro_* -- ${T}/t_prologue_O2)
  set_property(TEST e2e.count_copy APPEND PROPERTY ENVIRONMENT T_COPY_FORM=1)
  ada_itest(count_copy_ptr target --count-only pro_* -- ${T}/t_prologue_O2)
  set_property(TEST e2e.count_copy_ptr APPEND PROPERTY ENVIRONMENT
               "T_COPY_FORM=1;ADA_TEST_COUNT_NO_GS=1")
endif()
# Functions shorter than the patch or with a branch into it, hooked in the
# padding form (docs/hooks.md) — padding after, before (also where the
# function before needs none) and inside the function —, counted exactly;
# those without usable padding stay unhooked with their reason.
ada_itest(pad.O2 target --absent nopad3 --absent hostile3 --absent pad_hinner
          --absent pad_nowaive
          --syms-status pad_short3=hooked --syms-status pad_short4=hooked
          --syms-status pad_loop=hooked --syms-status pad_longloop=hooked
          --syms-status pad_one=hooked --syms-status nopad3=too_short
          --syms-status hostile3=too_short --syms-status pad_inner=hooked
          --syms-status pad_waive=hooked --syms-status nowaive_prev=hooked
          --syms-status pad_hinner=branch_into_patch
          --syms-status pad_nowaive=branch_into_patch -- ${T}/t_pad_O2)
# --overhead-budget moves a padding-form function (pad_short3: its entry's
# jmp rel8 leads to the padding's jmp rel32, the one re-aimed): events
# before the move plus counts after it are its calls; then recalled. The
# program is single-threaded: the budget's thread is not recorded.
ada_itest(pad_budget.O2 target --nondeterministic --moved pad_short3 --recalled
          --threads-per-process 1
          --record-opt=--overhead-budget --record-opt=10 --record-opt=--max-disk-mb
          --record-opt=0 -- ${T}/t_pad_O2 budget)
# The same with the budget thread held after its move, out of agent.lock,
# until the exit (ADA_TEST_BUDGET_HOLD, agent_budget.c): the program ends
# while the thread is where a loaded machine once preempted it, and the
# exit must still remember the move (its pending write is set with the
# move, under the lock): the second run recalls it.
ada_itest(pad_budget_hold.O2 target --nondeterministic --moved pad_short3 --recalled
          --threads-per-process 1
          --record-opt=--overhead-budget --record-opt=10 --record-opt=--max-disk-mb
          --record-opt=0 -- ${T}/t_pad_O2 budget)
set_property(TEST e2e.pad_budget_hold.O2 APPEND PROPERTY ENVIRONMENT ADA_TEST_BUDGET_HOLD=1)
ada_itest(ucontext.O2 target --calls-only -- ${T}/t_ucontext_O2)
# 300 switches each way through traced wrappers: frames left behind on the
# other stack return late, coro()'s own only at the end (the grave keeps one
# entry per slot, so 300 burials of coro_yield's do not push it out).
ada_itest(ucontext_many.O2 target --calls-only -- ${T}/t_ucontext_O2 300)
# The detail lane (issue 8): registers, return values and stack bytes of
# known calls with --detail always; no detail file with never; a narrowed set.
ada_itest(detail_always.O2 detail always -- ${T}/t_detail_O2)
ada_itest(detail_always.O0 detail always -- ${T}/t_detail_O0)
ada_itest(detail_never.O2 detail never -- ${T}/t_detail_O2)
ada_itest(detail_symbols.O2 detail --symbols dt_add6,dt_pair always -- ${T}/t_detail_O2)
ada_itest(detail_stack32.O2 detail --stack-bytes 32 always -- ${T}/t_detail_O2)
ada_itest(detail_bad_options detail bad -- ${T}/t_detail_O2)
ada_itest(signal_async.O2 target --nondeterministic -- ${T}/t_signal_O2 async)
ada_itest(signal_async.O0 target --nondeterministic -- ${T}/t_signal_O0 async)
# The index lane alone (--detail never; every test above runs the detail
# lane's C handlers, the default): its trampolines take the machine-code
# fast form (hook_arch.h, "Fast form"), whose every decline goes to the C
# handlers: signals landing anywhere in it (nested calls, the side queue's
# flush), longjmp and exceptions (frames to pop), tail calls, threads and
# rings so small that producers wait (the ring's slow path), fork (the
# child inherits frames), dlopen's rescan, stack switches.
set(ADA_IDX --record-opt=--detail --record-opt=never)
foreach(opt O0 O2)
  ada_itest(index_signal.${opt} target ${ADA_IDX} -- ${T}/t_signal_${opt} sync)
  # 200 signals as signal_async: the harness's time grows with the events
  # the busy loop makes while the sender waits for a CPU (1000 timed out
  # once in 20 runs under load); `async N` sends more by hand.
  ada_itest(index_signal_async.${opt} target ${ADA_IDX} --nondeterministic
            -- ${T}/t_signal_${opt} async)
  ada_itest(index_setjmp.${opt} target ${ADA_IDX} -- ${T}/t_setjmp_${opt})
  foreach(mode throw rethrow threads)
    ada_itest(index_cxx_${mode}.${opt} target ${ADA_IDX} -- ${T}/t_cxx_${opt} ${mode})
  endforeach()
endforeach()
ada_itest(index_tailcall.O2 target ${ADA_IDX} -- ${T}/t_tailcall_O2)
ada_itest(index_recursion.O2 target ${ADA_IDX} -- ${T}/t_recursion_O2)
ada_itest(index_threads_heavy.O2 target ${ADA_IDX} -- ${T}/t_threads_O2 heavy)
ada_itest(index_threads_tinyring.O2 target ${ADA_IDX} --ring-waits --record-opt=--peak-rate
          --record-opt=100000 --record-opt=--burst-ms --record-opt=10
          -- ${T}/t_threads_O2 heavy 5)
ada_itest(index_fork_threads.O2 target ${ADA_IDX} --expect-pids 2 -- ${T}/t_fork_O2 threads)
ada_itest(index_dlopen.O2 target ${ADA_IDX} --own-module libt_dlib.so
          -- ${T}/t_dlopen_O2 ${T}/libt_dlib.so)
ada_itest(index_ucontext.O2 target ${ADA_IDX} --calls-only -- ${T}/t_ucontext_O2)
ada_itest(index_pthread_exit.O2 target ${ADA_IDX} -- ${T}/t_pthread_exit_O2)
ada_itest(index_exit_nested.O2 target ${ADA_IDX} --expect-status 3 -- ${T}/t_crash_O2 exit)
# The detail lane with a set that takes some functions and leaves the
# others out (--detail always --detail-symbols): the enter stub's
# membership test sends a function outside the set down the index lane's
# machine-code fast path and a member to the detail handlers (hook_arch.h,
# "Fast form"). Besides the index events, every call/return of a function
# in the set must have its detail record and no other one any; the same
# hard cases as the index lane's, the variable-length snapshot
# (--stack-bytes 32), and a detail ring too small to keep the records
# (each missing one counted). Asynchronous signals: a call in a handler
# that interrupted a hook takes the side path, which writes no detail
# record (docs/internals.md), so those checks are loose (here nearly every
# signal lands inside a hook: the same on the C handlers).
set(ADA_DSET "--detail-set=[a-m]*,*throw*")
foreach(opt O0 O2)
  ada_itest(detail_set_signal.${opt} target ${ADA_DSET} -- ${T}/t_signal_${opt} sync)
  ada_itest(detail_set_signal_async.${opt} target ${ADA_DSET} --detail-loose
            --nondeterministic -- ${T}/t_signal_${opt} async)
  ada_itest(detail_set_setjmp.${opt} target ${ADA_DSET} -- ${T}/t_setjmp_${opt})
  foreach(mode throw rethrow threads)
    ada_itest(detail_set_cxx_${mode}.${opt} target ${ADA_DSET} -- ${T}/t_cxx_${opt} ${mode})
  endforeach()
endforeach()
ada_itest(detail_set_tailcall.O2 target ${ADA_DSET} -- ${T}/t_tailcall_O2)
ada_itest(detail_set_recursion.O2 target ${ADA_DSET} -- ${T}/t_recursion_O2)
# (threads heavy: in the two tiny-ring tests below, tinydetail at full size.)
ada_itest(detail_set_stack32.O2 target ${ADA_DSET} --record-opt=--stack-bytes
          --record-opt=32 -- ${T}/t_threads_O2)
ada_itest(detail_set_tinyring.O2 target ${ADA_DSET} --ring-waits --record-opt=--peak-rate
          --record-opt=100000 --record-opt=--burst-ms --record-opt=10
          -- ${T}/t_threads_O2 heavy 5)
ada_itest(detail_set_tinydetail.O2 target ${ADA_DSET} --detail-loose --record-opt=--detail-mb
          --record-opt=1 -- ${T}/t_threads_O2 heavy)
ada_itest(detail_set_fork_threads.O2 target ${ADA_DSET} --expect-pids 2
          -- ${T}/t_fork_O2 threads)
# Exact: a dlopen'ed module's functions are members at once, whether the
# published set covers the module yet or not (one without a directory entry
# for it leaves the answer to the agent's own set); dlopen/dlclose are
# special functions, which get no detail record (the harness knows).
ada_itest(detail_set_dlopen.O2 target ${ADA_DSET} --own-module libt_dlib.so
          -- ${T}/t_dlopen_O2 ${T}/libt_dlib.so)
# Exact too for a call from another thread into a dlopen'ed library the
# moment its trampolines go live, before dlopen() returned (the agent's test
# hook ADA_TEST_DL_PAUSE stops it right there, tests/targets/t_dlwin.c): the
# agent's own set covers a module before any of its patches is applied.
ada_itest(detail_set_dlwindow.O2 target ${ADA_DSET} -- ${T}/t_dlwin_O2 ${T}/libt_dlwlib.so)
set_tests_properties(e2e.detail_set_dlwindow.O2 PROPERTIES ENVIRONMENT "ADA_TEST_DL_PAUSE=61,62")
ada_itest(detail_set_ucontext.O2 target ${ADA_DSET} --calls-only -- ${T}/t_ucontext_O2)
# A 4 MiB detail ring: with 64 MiB per thread, thread start-up is slow
# enough (under load) that t4's pthread_testcancel loop makes millions of
# events before main cancels it.
ada_itest(detail_set_pthread_exit.O2 target ${ADA_DSET} --record-opt=--detail-mb
          --record-opt=4 -- ${T}/t_pthread_exit_O2)
ada_itest(detail_set_exit_nested.O2 target ${ADA_DSET} --expect-status 3
          -- ${T}/t_crash_O2 exit)
ada_itest(pthread_exit.O0 target -- ${T}/t_pthread_exit_O0)
ada_itest(pthread_exit.O2 target -- ${T}/t_pthread_exit_O2)
ada_itest(dlopen.O2 target --own-module libt_dlib.so -- ${T}/t_dlopen_O2 ${T}/libt_dlib.so)
# Under --overhead-budget a dlopen writes the module's symbol files at
# once and leaves agent.json to the budget thread or the exit: written
# twice (the start, the exit), the module listed all the same.
ada_itest(dlopen_budget.O2 target --own-module libt_dlib.so --record-opt=--overhead-budget
          --record-opt=10 --agent-json-module libt_dlib.so --agent-json-writes-max 2
          -- ${T}/t_dlopen_O2 ${T}/libt_dlib.so)
# Cold start (issue 13): the start-up analysis shared with a helper thread
# gives the verdicts the cache then serves warm, and again on a second cold run.
ada_e2e_test(e2e.cold_start coldstart_test.py NO_SKIP WORK ${CMAKE_BINARY_DIR}/itest-work/cold_start
             ARGS -- ${T}/t_threads_O2)
# libelf loaded by the agent at its first ELF read, not with it: cold,
# the dlopen's rescan finds libelf and libz and leaves them unhooked as the
# agent's; warm (every table cached), they are never loaded.
ada_e2e_test(e2e.lazy_libelf lazy_libelf_test.py NO_SKIP
             WORK ${CMAKE_BINARY_DIR}/itest-work/lazy_libelf
             ARGS -- ${T}/t_dlopen_O2 ${T}/libt_dlib.so)
# Shared patched text: a copy of each patched text written cold and mapped
# warm, the same bytes in memory either way; a zeroed, unpatched, truncated
# or group-writable copy refused and written again; exact counts of a fork
# + exec tree cold and warm (agent_sharedtext.c).
ada_e2e_test(e2e.shared_text shared_text_test.py NO_SKIP
             WORK ${CMAKE_BINARY_DIR}/itest-work/shared_text
             ARGS -- ${T}/t_textsum_O2 ${T}/t_fork_O2 exec ${T}/t_exec_child_O2)
# The program clears or replaces its environment, then dlopens and forks
# (issue 14: nginx's workers): the library is hooked, the child recorded.
# Children started with an explicit environment that lacks LD_PRELOAD and
# ADA_*, or after clearenv(): recorded when following (the agent puts its
# variables back), not recorded with --no-follow (it takes them out).
# Every way of starting a child (tests/targets/t_envexec.c): the exec
# family, execveat, fexecve, vfork + execve, posix_spawn{,p} with an
# explicit environment, and after clearenv() the environ-using ones,
# system() and popen() included.
foreach(mode execve execveat fexecve execle execvpe vfork spawn spawnp
             execl execv execvp execlp system popen)
  ada_itest(envexec_${mode}.O2 target --expect-pids 2 --own-module t_exec_child_O2
            -- ${T}/t_envexec_O2 ${mode} ${T}/t_exec_child_O2)
endforeach()
# uftrace's posix_spawn test, our way: two programs spawned with an
# explicit environment, parent and both children counted exactly.
ada_itest(pspawn.O2 target --expect-pids 3 -- ${T}/t_pspawn_O2)
ada_itest(pspawn_nofollow.O2 target --record-opt=--no-follow --expect-pids 1
          -- ${T}/t_pspawn_O2)
# --no-follow: no agent in the child (its table says whether the agent was
# mapped), nothing of the child in the session or in /dev/shm.
foreach(mode execve fexecve vfork spawn spawnp execl system popen)
  ada_itest(envexec_${mode}_nofollow.O2 target --record-opt=--no-follow --expect-pids 1
            --own-module t_exec_child_O2 -- ${T}/t_envexec_O2 ${mode} ${T}/t_exec_child_O2)
endforeach()
ada_itest(spawn_nofollow.O2 target --record-opt=--no-follow --expect-pids 1
          --own-module t_exec_child_O2 -- ${T}/t_spawn_O2 ${T}/t_exec_child_O2)
foreach(mode clearenv unsetenv environ)
  ada_itest(env_${mode}.O2 target --expect-pids 2 --own-module libt_dlib.so
            -- ${T}/t_env_O2 ${mode} ${T}/libt_dlib.so)
endforeach()
# Children reaped by their traced parent (waitpid, waitid, wait, wait4),
# killed by SIGTERM/SIGKILL or exiting: each one's manifest has its status
# or signal.
ada_itest(reap.O2 target --expect-pids 5 --child-exit reap_term=signal:15
          --child-exit reap_kill=signal:9 --child-exit reap__exit5=status:5
          --child-exit reap_exit3=status:3 -- ${T}/t_reap_O2)
# .preinit_array and constructor functions run before main: counted once.
ada_itest(preinit.O2 target -- ${T}/t_preinit_O2)
ada_itest(fork_exec.O2 target --expect-pids 2 --own-module t_exec_child_O2
          -- ${T}/t_fork_O2 exec ${T}/t_exec_child_O2)
# The exec'd image with a warm plan cache decodes nothing; a tampered entry
# is rejected, counted and analysed again, counts exact (issue 32 item 2).
ada_e2e_test(e2e.exec_plan_cache execcache_test.py NO_SKIP
             WORK ${CMAKE_BINARY_DIR}/itest-work/exec_plan_cache
             ARGS -- ${T}/t_fork_O2 exec ${T}/t_exec_child_O2)
# The module files in pid_N/ itself (no pid_N/modules/): a fork + exec and
# a fork tree under a shell, every manifest's symbols a file of pid_N/,
# the exec'd and forked children's functions named; the same session
# made old (its files moved into pid_N/modules/) reads the same, and an
# atf export copies the files beside the manifests.
ada_e2e_test(e2e.flat_modules flat_modules_test.py NO_SKIP
             ARGS -- ${T}/t_fork_O2 ${T}/t_exec_child_O2)
ada_itest(fork_exec_nofollow.O2 target --expect-pids 1 --record-opt=--no-follow
          -- ${T}/t_fork_O2 exec ${T}/t_exec_child_O2)
ada_itest(fork.O2 target --expect-pids 2 -- ${T}/t_fork_O2 fork)
ada_itest(exec_chain.O2 target --expect-pids 1 -- ${T}/t_exec_child_O2 chain 3)
ada_itest(fork_threads.O2 target --expect-pids 2 -- ${T}/t_fork_O2 threads)
# Fork children write no module files: a tree of 7 processes, each with
# exact counts, shares one .syms file per module (hard links) and each
# child's agent.json says it wrote none (issue 32).
ada_itest(fork_shared_syms.O2 target --expect-pids 7 --shared-modules
          -- ${T}/t_fork_O2 tree)
# The parent's module_1.syms replaced by a copy before it forks (another
# file under the same name): its children do not link it, they write their
# own (counted share_failed), which their children link.
ada_itest(fork_shared_syms_replaced.O2 target --expect-pids 7 --shared-modules
          --replaced-module module_1.syms -- ${T}/t_fork_O2 tree replace)
# The leaves end with _exit: no exit handler runs, so each leaf's
# agent.json is the one it linked from its parent at the fork, made its
# own by the recorder (pid, counts at zero, inherited_from); every other
# child writes its own once, at exit (issue 32).
ada_itest(fork_inherited_json.O2 target --expect-pids 7 --shared-modules --inherited-json 4
          -- ${T}/t_fork_O2 tree _exit)
# --count-only on (nearly) the whole tree, libc's functions included, all
# but child_* (traced, so each child has events to check): every call of
# the program's functions an event or an exact count in every process,
# and each process lists only the count-only functions it called, the
# others counted in uncalled (each fork child listed the 4 096 slots,
# nearly all zero: issue 32).
ada_itest(fork_count_only_all.O2 target --expect-pids 7 --count-only "[!c]*" --count-only-called
          -- ${T}/t_fork_O2 tree)
ada_itest(posix_spawn.O2 target --expect-pids 3 --own-module t_exec_child_O2
          -- ${T}/t_spawn_O2 ${T}/t_exec_child_O2)
# The same binary exec'd twice (and beside its parent, which loads the
# same libc): every module's body is written once in the session and
# linked by the others, counts exact in every process (issue 32).
ada_itest(spawn_shared_bodies.O2 target --expect-pids 3 --own-module t_exec_child_O2
          --shared-bodies -- ${T}/t_spawn_O2 ${T}/t_exec_child_O2)
# Between two runs of the same program every body in the session's store
# is replaced by a file that is none: the second refuses each, writes and
# stores its own; counts exact, validate clean.
set(PLANT_CHILD ${T}/t_exec_child_O2)
configure_file(${CMAKE_CURRENT_LIST_DIR}/plant_bodies.sh.in
               ${CMAKE_BINARY_DIR}/plant_bodies.sh @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
ada_itest(planted_bodies.O2 target --expect-pids 5 --own-module t_exec_child_O2
          --planted-bodies -- ${T}/t_envexec_O2 system ${CMAKE_BINARY_DIR}/plant_bodies.sh
          ${T}/t_exec_child_O2)
ada_itest(exec_chain_shared_bodies.O2 target --expect-pids 1 --shared-bodies
          -- ${T}/t_exec_child_O2 chain 3)
ada_itest(vfork_exec.O2 target --expect-pids 3 --own-module t_exec_child_O2
          -- ${T}/t_spawn_O2 ${T}/t_exec_child_O2 vfork)
ada_itest(crash_segv.O2 target --expect-status 139 --expect-signal 11 -- ${T}/t_crash_O2)
ada_itest(crash_abort.O2 target --expect-status 134 --expect-signal 6 -- ${T}/t_crash_O2 abort)
ada_itest(exit_nested.O2 target --expect-status 3 -- ${T}/t_crash_O2 exit)
ada_itest(crash_sigkill.O2 target --expect-status 137 --expect-signal 9 -- ${T}/t_crash_O2 kill)
ada_itest(ctrl_c.O2 target --interrupt 2 --expect-status 130 --expect-signal 2
          -- ${T}/t_crash_O2 wait)

foreach(prog ls ls_on_path ls_fds ls_missing gzip sort sh_pipeline yes_head cmake_version python3)
  ada_itest(debian_${prog} debian ${prog})
endforeach()

foreach(kind nonexistent notonpath noprogram directory nonelf badinterp)
  ada_itest(bad_${kind} bad ${kind})
endforeach()
ada_itest(bad_setuid bad setuid --setuid-src ${T}/t_exec_child_O2)
if(TARGET adat_static_O2)
  ada_itest(bad_static bad static --static $<TARGET_FILE:adat_static_O2>)
endif()
