/* Private to src/inject: what the call (inject_call.c) needs of the stop. */
#ifndef ADA_INJECT_INTERNAL_H
#define ADA_INJECT_INTERNAL_H

#include <sys/user.h>

#include "inject.h"

/* /proc/PID/mem, open read-write while the threads are held. */
int inject_mem_fd(const struct ada_inject *in);
/* The thread calls are made on: the first one stopped by our interrupt
 * (not in a signal-delivery stop, not exited); 0 when none. */
pid_t inject_call_tid(const struct ada_inject *in);
/* Its registers as stopped (NULL when none). */
const struct user_regs_struct *inject_call_regs(const struct ada_inject *in);

#endif
