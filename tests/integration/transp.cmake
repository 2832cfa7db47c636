# Programs run under ada exactly as without it (issue 14):
# tests/integration/transp_test.py. Release build only (the agent is
# preloaded into ordinary programs).
include(${CMAKE_CURRENT_LIST_DIR}/../targets/targets.cmake)
if(NOT ADA_E2E_AGENT)
  return() # tests/suite.cmake says why
endif()

# ada_transp(<case> <program and arguments>...)
function(ada_transp case)
  ada_e2e_test(e2e.transp.${case} transp_test.py TIMEOUT 300
               WORK ${CMAKE_BINARY_DIR}/transp-work ARGS ${case} -- ${ARGN})
endfunction()

# ada creates nothing in the program's HOME or working directory (issue 34).
ada_transp(home /bin/sh)
# root without ~/.cache keeps its plan cache in /var/cache/ada (0700).
ada_transp(root_cache /bin/true)
# A program started through a link is named by the link (issue 36).
ada_transp(linkname ${ADA_TGT_DIR}/t_threads_O2)

# Code that is not C: left alone when it has no unwind information,
# resynchronised (never an abort) when it was hooked anyway.
ada_transp(nocfi ${ADA_TGT_DIR}/t_nonc_O2 nocfi)
ada_transp(resync ${ADA_TGT_DIR}/t_nonc_O2 cfi)
# A forked child's counts of calls not traced are its own, not its parent's.
ada_transp(resync_fork ${ADA_TGT_DIR}/t_nonc_O2 cfi-fork)

# More live threads than slots (issue 14 item 4). The arena's 64 full
# slots are followed by spill slots (small rings, memory taken as threads
# first claim them) up to --thread-limit (default 16 384): 200 threads at
# a barrier and 1 000 alive at once (15 times the full slots) are recorded
# exactly with the defaults; 2 000 short threads, 100 alive at a time,
# likewise (spill slots freed and reused: those a wave needs past the 64
# full slots are taken again by each of the 20 waves, and the ended
# threads are many times the 256 entries of the shadow stacks' retire
# table). Past --thread-limit 100, 200 threads at a barrier run on: the loss is counted
# (no_slot), never a wait for ever.
function(ada_transp_exact name calls)
  ada_e2e_test(e2e.transp.${name} transp_test.py NO_SKIP TIMEOUT 300
               WORK ${CMAKE_BINARY_DIR}/transp-work ARGS --calls ${calls} exact -- ${ARGN})
endfunction()
ada_e2e_test(e2e.transp.slots_full transp_test.py NO_SKIP TIMEOUT 300
             WORK ${CMAKE_BINARY_DIR}/transp-work
             ARGS --record-opt=--thread-limit --record-opt=100 slots_full
                  -- ${ADA_TGT_DIR}/t_manythreads_O2 barrier 200)
ada_transp_exact(barrier_200 mt_work=4000 ${ADA_TGT_DIR}/t_manythreads_O2 barrier 200)
ada_transp_exact(alive_1000 mt_work=20000 ${ADA_TGT_DIR}/t_manythreads_O2 barrier 1000)
ada_transp_exact(threads_2000 mt_work=6000 ${ADA_TGT_DIR}/t_manythreads_O2 waves 2000 100)
# A thread per request (issue 32 item 1): 200 threads one after another,
# 1 500 calls each, on slots the recorder prepared and their producers map
# a chunk at a time over each slot's first lap, each freed for the next
# as soon as its thread's last events are written (docs/internals.md,
# "Ring slots"): exact.
ada_transp_exact(serial_200 mt_work=300000 ${ADA_TGT_DIR}/t_manythreads_O2 serial 200 1500)
# 10 000 threads alive at once (64 KiB stacks), meeting at a barrier:
# exact counts, nothing dropped or lost, and the shared memory stays
# within 512 MiB (64 full slots of 3 MiB and 9 937 spill slots of
# 24.6 KiB: 430 MiB; full rings for all would be 30 GiB). The recorder
# holds one index file per live thread (ada raises its own
# RLIMIT_NOFILE soft limit, not the program's).
ada_e2e_test(e2e.transp.alive_10000 transp_test.py NO_SKIP TIMEOUT 300
             WORK ${CMAKE_BINARY_DIR}/transp-work
             ARGS --calls mt_work=200000 --max-shm-mb 512 exact
                  -- ${ADA_TGT_DIR}/t_manythreads_O2 barrier 10000)

# The recorder SIGKILLed while 16 threads are half way through 100 000
# calls each: the program runs on to the same output (one drain timeout,
# not one per thread) and its agent.json counts the events dropped.
ada_transp(recorder_killed ${ADA_TGT_DIR}/t_manythreads_O2 busy 16 100000)

# An exec by a raw system call with an environment of its own (python's
# ctypes: syscall(SYS_execve, "/bin/sleep", ...)): the new image runs
# untraced, and ada says so (src/recorder/exec_watch.c).
ada_transp(raw_exec ${Python3_EXECUTABLE})

# A recursion a million frames deep: the shadow stack grows as deep as the
# thread goes, every call and return recorded.
ada_e2e_test(e2e.transp.deep transp_test.py NO_SKIP TIMEOUT 600
             WORK ${CMAKE_BINARY_DIR}/transp-work
             ARGS --calls deep=1000000 exact -- ${ADA_TGT_DIR}/t_deep_O2 1000000)

# Signals as `env` or `time` would pass them: the program inherits ada's
# ignored SIGHUP/SIGINT/SIGQUIT and blocked SIGUSR1 (nohup, a background
# job); SIGINT and SIGQUIT sent to ada alone reach the program.
ada_transp(sigdisp ${Python3_EXECUTABLE})
ada_transp(sigforward ${Python3_EXECUTABLE})

# Real programs from Debian's packages (tools/bootstrap.sh installs them;
# without one the case skips, saying which): nginx, master and one worker,
# serving 100 requests and stopping on SIGQUIT.
ada_transp(nginx nginx)
# greenlet switches stacks by copying slices of them; gevent runs on it.
ada_transp(greenlet python3)
ada_transp(gevent python3)
# V8's generated code reads the return addresses of the C++ functions it
# calls (the default exclude list leaves them alone).
ada_transp(node node)
# `nohup ada record -- sleep 2 &` survives the terminal's SIGHUP. A program
# that leaves a background child ignoring SIGINT: ada says so, finalizes
# (after the grace period, or at once on a second Ctrl-C) and the child
# goes on untraced.
ada_transp(nohup)
ada_transp(leftover)
ada_transp(leftover_interrupt)
# A text file without #! runs as a shell would run it (/bin/sh); the
# manifest's program follows exec.
ada_transp(noshebang)
ada_transp(program_exec)
