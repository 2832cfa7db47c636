/*
 * Process life around the hooks: fork, thread exit, crash signals,
 * dlopen/dlclose (not hook context, though some of it is reached from the
 * handlers' cold paths with the guard set). The crash handlers themselves
 * are in agent_crash.c.
 *
 * Threads: the atfork handlers run in the forking thread (prepare, parent)
 * and in the child's only thread; the thread-exit destructor in each
 * exiting thread; the crash handler in the faulting thread;
 * agent_dl_changed in the thread whose dlopen/dlclose just returned. All
 * shared state changes happen under agent.lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ring.h"

static pthread_key_t process_key;
static bool process_key_ok;

/* ---- threads ---- */

static void process_thread_exit(void *arg)
{
	(void)arg;
	agent_count_thread_exit();
	agent_shadow_thread_exit();
	agent_crash_thread_exit();
}

void agent_thread_started(void)
{
	if (process_key_ok)
		pthread_setspecific(process_key, (void *)1);
	agent_crash_thread_start();
	agent_count_thread_start();
}

/* ---- fork ---- */

static void process_prepare(void)
{
	agent_guard_enter(); /* the fork's own libc work runs untraced (counted) */
	pthread_mutex_lock(&agent.lock);
	agent_untraced_fork_prepare();
	ada_producer_fork_prepare(); /* last: the closer to the fork, the likelier one tick */
}

static void process_parent(void)
{
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
}

/* --no-follow: the child and whatever it execs record nothing. */
ADA_FORK_PATH static void process_child_unfollow(void)
{
	agent_hot.active = 0;
	agent_guard_enter(); /* for good: the hook handlers' fast path tests only the guard */
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	unsetenv("LD_PRELOAD");
	unsetenv("ADA_SESSION_DIR");
	unsetenv("ADA_ARENA_DIR");
	unsetenv("ADA_RING_CONFIG");
	unsetenv("ADA_HOOK_CONFIG");
	unsetenv("ADA_PLAN_CACHE");
}

ADA_FORK_PATH static void process_child(void)
{
	pthread_mutex_init(&agent.lock, NULL);
	agent_shadow_after_fork();
	if (!agent.cfg.follow) {
		process_child_unfollow();
	} else {
		agent_count_after_fork();
		ada_producer_reset_thread();
		/* What the constructor read: the environment may be gone. */
		int err = ada_producer_init(agent.env.arena_dir, agent.env.ring_config);
		agent_hot.pid = getpid();
		if (err) {
			agent_hot.active = 0;
			agent_guard_enter(); /* for good, as in process_child_unfollow() */
			/* The shm ceiling (the recorder tells), or the recording
			 * ended (the program outlives it): untraced, quietly. A
			 * file system's EDQUOT is not the ceiling: said. */
			if (!ada_producer_refused())
				agent_log("child %d: cannot open its arena (%s); not traced",
				          (int)getpid(), strerror(-err));
		}
		/* The parent's arena is gone from this process: its area too. */
		agent_keysym_attach();
		if (!err) {
			agent_write_files_forked();
			agent_budget_after_fork();
		}
	}
	agent_guard_leave();
}

/* At exit agent.json is written once more, with the untraced-call
 * counts of the run (the recorder folds it into the manifest after the
 * process is gone); a forked child that left its files to the recorder
 * puts those counts into its arena instead (agent_write_files_at_exit). */
static void process_at_exit(void)
{
	if (!agent_hot.active || agent_hot.pid != getpid())
		return;
	agent_guard_enter();
	pthread_mutex_lock(&agent.lock);
	agent_count_exiting();
	agent_budget_exit();
	agent_write_files_at_exit();
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
}

int agent_process_setup(void)
{
	process_key_ok = pthread_key_create(&process_key, process_thread_exit) == 0;
	int err = pthread_atfork(process_prepare, process_parent, process_child);
	if (err) {
		agent_log("cannot register fork handlers (%s); nothing is traced", strerror(err));
		return -err;
	}
	atexit(process_at_exit);
	err = agent_crash_setup();
	if (err)
		agent_log(
		    "cannot install crash handlers (%s); crashes are seen only by the recorder",
		    strerror(-err));
	return 0;
}

/* ---- dlopen / dlclose ---- */

static int process_dl_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1; /* the counters are the same in every call: one is enough */
}

/* Called at every return of dlopen/dlclose/_dl_catch_* (often nested, and
 * also for dlsym): the loader's load/unload counters say whether anything
 * changed since the last scan, for the price of one callback. */
void agent_dl_changed(void)
{
	/* Counters of the last scan; written under agent.lock, read without
	 * (a stale value only costs a scan that finds nothing new). */
	static _Atomic unsigned long long seen_adds, seen_subs;
	unsigned long long now[2] = {0, 0};
	int saved = errno; /* dlopen's caller may look at errno */
	dl_iterate_phdr(process_dl_counts, now);
	if (now[0] != 0 && now[0] == atomic_load_explicit(&seen_adds, memory_order_relaxed) &&
	    now[1] == atomic_load_explicit(&seen_subs, memory_order_relaxed)) {
		errno = saved;
		return;
	}
	pthread_mutex_lock(&agent.lock);
	atomic_store_explicit(&seen_adds, now[0], memory_order_relaxed);
	atomic_store_explicit(&seen_subs, now[1], memory_order_relaxed);
	size_t first_new = agent_scan();
	/* The new modules' symbol files now (the recorder names their
	 * events by them); agent.json too, unless the budget thread will. */
	if (agent_budget_json_later())
		agent_write_syms_from(first_new);
	else
		agent_write_files(false, first_new);
	pthread_mutex_unlock(&agent.lock);
	errno = saved;
}

extern void *__libc_stack_end; /* the loader's: glibc's own main-thread stack test */

void agent_note_main_stack(void)
{
	struct rlimit rl;
	uint64_t lo, hi;
	if (getrlimit(RLIMIT_STACK, &rl) == 0 &&
	    hook_mem_main_stack(agent.mem, (uint64_t)(uintptr_t)__libc_stack_end,
	                        (uint64_t)rl.rlim_cur, &lo, &hi) == 0) {
		agent.main_stack_lo = lo;
		agent.main_stack_hi = hi;
		agent.main_stack_pid = getpid();
	}
}

/* pthread_getattr_np gives the thread's stack; for the main thread glibc
 * reads /proc/self/maps and the stack rlimit, 60-140 us with the agent's
 * mappings (an exec'd image's first traced call): the main thread of the
 * process that started the agent takes the same bounds from the start-up's
 * snapshot instead (agent_note_main_stack). Either way [lo, hi) is mapped
 * from the current rsp up to hi, which is all the snapshots read. */
void agent_thread_stack(uint64_t *lo, uint64_t *hi)
{
	pthread_attr_t at;
	void *addr = NULL;
	size_t size = 0;
	*lo = *hi = 0;
	pid_t pid = getpid();
	if (agent.main_stack_pid == pid && gettid() == pid) {
		*lo = agent.main_stack_lo;
		*hi = agent.main_stack_hi;
		return;
	}
	if (pthread_getattr_np(pthread_self(), &at) != 0)
		return;
	if (pthread_attr_getstack(&at, &addr, &size) == 0 && addr && size) {
		*lo = (uint64_t)(uintptr_t)addr;
		*hi = *lo + size;
	}
	pthread_attr_destroy(&at);
}
