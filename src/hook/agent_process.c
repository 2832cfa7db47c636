/*
 * Process life around the hooks: fork, thread exit, crash signals,
 * dlopen/dlclose (not hook context, though some of it is reached from the
 * handlers' cold paths with the guard set).
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
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ring.h"

static pthread_key_t process_key;
static bool process_key_ok;

static const int process_crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
static struct sigaction process_old_sa[NSIG];

/* ---- threads ---- */

static void process_thread_exit(void *arg)
{
	(void)arg;
	agent_shadow_thread_exit();
}

void agent_thread_started(void)
{
	if (process_key_ok)
		pthread_setspecific(process_key, (void *)1);
}

/* ---- fork ---- */

static void process_prepare(void)
{
	agent_guard_enter(); /* the fork's own libc work runs untraced (counted) */
	pthread_mutex_lock(&agent.lock);
}

static void process_parent(void)
{
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
}

/* --no-follow: the child and whatever it execs record nothing. */
static void process_child_unfollow(void)
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
}

static void process_child(void)
{
	pthread_mutex_init(&agent.lock, NULL);
	agent_shadow_after_fork();
	if (!agent.cfg.follow) {
		process_child_unfollow();
	} else {
		ada_producer_reset_thread();
		int err = ada_producer_init_from_env();
		agent_hot.pid = getpid();
		if (err) {
			agent_hot.active = 0;
			agent_guard_enter(); /* for good, as in process_child_unfollow() */
			agent_log("child %d: cannot open its arena (%s); not traced", (int)getpid(),
			          strerror(-err));
		} else {
			agent_write_files(true, 0);
		}
	}
	agent_guard_leave();
}

/* ---- crash signals ---- */

static void process_crash(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = &process_old_sa[sig];
	agent_guard_enter();
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		agent_guard_leave();
		old->sa_sigaction(sig, si, uc); /* the program's own handler, set before us */
		return;
	}
	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL &&
	    old->sa_handler != SIG_IGN) {
		agent_guard_leave();
		old->sa_handler(sig);
		return;
	}
	if (ada_producer_arena())
		ada_arena_set_crashed(ada_producer_arena(), sig);
	/* Default disposition back, then the signal again: it is blocked
	 * while we run, so it is delivered as we return and the process
	 * dies of it exactly as it would have (core dump included). */
	sigaction(sig, old, NULL);
	raise(sig);
	agent_guard_leave();
}

static int process_install_crash_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = process_crash;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(process_crash_signals) / sizeof(int); i++) {
		int sig = process_crash_signals[i];
		if (sigaction(sig, NULL, &process_old_sa[sig]) != 0)
			return -errno;
		if (process_old_sa[sig].sa_handler == SIG_IGN)
			continue; /* ignored on purpose (inherited): leave it so */
		if (sigaction(sig, &sa, NULL) != 0)
			return -errno;
	}
	return 0;
}

/* At exit agent.json is written once more, with the untraced-call
 * counts of the run (the recorder folds it into the manifest after the
 * process is gone). */
static void process_at_exit(void)
{
	if (!agent_hot.active || agent_hot.pid != getpid())
		return;
	agent_guard_enter();
	pthread_mutex_lock(&agent.lock);
	agent_write_files(false, agent.n_mods);
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
	err = process_install_crash_handlers();
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
	agent_write_files(false, first_new);
	pthread_mutex_unlock(&agent.lock);
	errno = saved;
}
