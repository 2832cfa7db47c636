/*
 * The status of children the program reaps itself (not hook context;
 * issue 14).
 *
 * The recorder learns a process's exit status from waitpid when it reaps
 * it (it is the child subreaper), or from the agent when the process
 * called exit() or died of a signal the agent catches. A child reaped by
 * its own traced parent and killed by a signal no agent sees (SIGTERM,
 * SIGKILL: multiprocessing's pool workers) would end with status and
 * signal unknown. So the agent exports the wait family: each calls the
 * real function and, when it reaped a child (not WNOWAIT, not a stop or a
 * continue), notes the child's pid, its raw wait status and the time in
 * the table of reaped children of this process's own arena
 * (ring_reaped.h). The drain reads the table and
 * gives the status to the recorded child of that pid that started before
 * the reap (src/recorder/wait_notes.c). No file: a reap costs a few
 * stores, not a new inode per child.
 *
 * Threads: any, also from a signal handler (a SIGCHLD handler that
 * reaps): atomics and the arena's timestamp only (the cycle counter, or
 * clock_gettime with ts=clock); errno is kept.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ring.h"
#include "ring_reaped.h"

#define WAIT_EXPORT __attribute__((visibility("default")))

static struct {
	pid_t (*wait4)(pid_t, int *, int, struct rusage *);
	int (*waitid)(idtype_t, id_t, siginfo_t *, int);
} wait_st;

static void *wait_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Resolved here, so that a wrapper called from a signal handler does not
 * call dlsym; on first use only when the agent did not start. */
void agent_wait_setup(void)
{
	wait_st.wait4 = wait_next("wait4");
	wait_st.waitid = wait_next("waitid");
}

/* The arena's raw timestamp, as its events carry it (ada_timestamp_raw). */
static uint64_t wait_timestamp(const struct ada_arena *a)
{
	if (ada_arena_config_of(a)->timestamp_source == ADA_TS_CLOCK)
		return ada_producer_clock_ns();
	return ada_tsc();
}

static void wait_note(pid_t pid, int status)
{
	struct ada_arena *a = ada_producer_arena(); /* NULL: not recording, or detached */
	if (pid <= 0 || !a || !(WIFEXITED(status) || WIFSIGNALED(status)))
		return;
	int saved = errno;
	ada_arena_note_reaped(a, (int32_t)pid, status, wait_timestamp(a));
	errno = saved;
}

#define WAIT_REAL(field, name)                                                                     \
	do {                                                                                       \
		if (!wait_st.field)                                                                \
			wait_st.field = wait_next(name);                                           \
	} while (0)

WAIT_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	WAIT_REAL(wait4, "wait4");
	if (!wait_st.wait4) {
		errno = ENOSYS;
		return -1;
	}
	int st = 0;
	pid_t r = wait_st.wait4(pid, &st, options, ru);
	if (r > 0) {
		if (status)
			*status = st;
		wait_note(r, st);
	}
	return r;
}

WAIT_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	return wait4(pid, status, options, NULL);
}

WAIT_EXPORT pid_t wait(int *status)
{
	return wait4(-1, status, 0, NULL);
}

WAIT_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	return wait4(-1, status, options, ru);
}

WAIT_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	WAIT_REAL(waitid, "waitid");
	if (!wait_st.waitid) {
		errno = ENOSYS;
		return -1;
	}
	int r = wait_st.waitid(idtype, id, info, options);
	if (r == 0 && info && !(options & WNOWAIT) && info->si_pid > 0) {
		if (info->si_code == CLD_EXITED)
			wait_note(info->si_pid, (info->si_status & 0xff) << 8);
		else if (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)
			wait_note(info->si_pid, (info->si_status & 0x7f) |
			                            (info->si_code == CLD_DUMPED ? 0x80 : 0));
	}
	return r;
}
