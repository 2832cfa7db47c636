/* Private to src/inject: what the call (inject_call.c) needs of the stop. */
#ifndef ADA_INJECT_INTERNAL_H
#define ADA_INJECT_INTERNAL_H

#include "inject.h"

/* The architecture's half: struct inject_regs and its accessors, the
 * call frame, the vector state's register set. One line per
 * architecture. */
#if defined(__x86_64__)
#include "x86_64/inject_arch.h"
#elif defined(__aarch64__)
#include "arm64/inject_arch.h"
#else
#error "no inject architecture for this target (src/inject/<arch>/inject_arch.h)"
#endif

/* /proc/PID/mem, open read-write while the threads are held. */
int inject_mem_fd(const struct ada_inject *in);
/* The thread calls are made on: the first one stopped by our interrupt
 * (not in a signal-delivery stop, not exited); 0 when none. */
pid_t inject_call_tid(const struct ada_inject *in);
/* Collects the exit of every held thread but except that has exited
 * (marks it gone): when the process dies during a call, the kernel
 * reports its leader's exit only after every other thread's exit has
 * been collected by us, its tracer. */
void inject_reap_exits(struct ada_inject *in, pid_t except);
/* The time limit of a call in ns (0: none; ada_inject_set_call_timeout). */
uint64_t inject_call_timeout(const struct ada_inject *in);
/* Its registers as stopped (NULL when none). */
const struct inject_regs *inject_call_regs(const struct ada_inject *in);

#endif
