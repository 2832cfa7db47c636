/*
 * Post-mortem crash capture in the agent: fatal-signal handlers on a
 * per-thread alternate stack, the crash record, and the interposed
 * sigaction()/signal() that keep the agent's handler first in line.
 *
 * Threads: the handler runs in the faulting thread (on the alternate stack,
 * so a stack overflow is still handled); agent_crash_thread_start/exit in
 * each thread (first traced call / thread exit); the interposers in
 * whichever thread changes a disposition.
 *
 * Protocol:
 *   - For each watched signal (crash_signals[]) the kernel disposition is
 *     the agent's handler unless the program asked for SIG_IGN; what the
 *     program asked for (its "view") is kept in crash_view[] and is what
 *     sigaction() reports back, so the program sees its own handlers.
 *   - The handler calls the program's handler first, if it has one (before
 *     or after the agent was loaded), and returns when it returns: a
 *     program that recovers from its own SIGSEGV (JVM, GC) records no crash.
 *   - Only a death is recorded: with the default action (or SIG_IGN of a
 *     fault, which the kernel turns into a death too), the handler writes
 *     the crash record into the arena's control block (must-not-drop: no
 *     ring, no wait; ada_arena_record_crash), sets the real disposition
 *     back to SIG_DFL and lets the signal happen again: a kernel fault
 *     (SEGV/BUS/ILL/FPE with si_code > 0) by returning to the faulting
 *     instruction, which faults again with the same siginfo; anything
 *     else by raise(), delivered as the handler returns. The process dies
 *     of the same signal, with the same status and core dump.
 *   - crash_view[] writers take crash_lock with every signal blocked (a
 *     handler in the same thread cannot re-enter it); the handler reads
 *     without the lock: a disposition changed by another thread while a
 *     fault is being handled may be seen old or new, as with the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ring.h"

#define CRASH_EXPORT __attribute__((visibility("default")))
#define CRASH_ALTSTACK_MIN (64u << 10)

/* glibc's own entry point (the same function as sigaction, exported under
 * this name too): the agent calls it, never its own interposer. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
static struct sigaction crash_view[NSIG]; /* what the program asked for */
static _Atomic bool crash_watched[NSIG];  /* the agent manages this signal */
static atomic_flag crash_lock = ATOMIC_FLAG_INIT;
static _Atomic uint64_t crash_chained; /* program handlers called */

static __thread void *crash_alt __attribute__((tls_model("initial-exec")));
static __thread size_t crash_alt_len __attribute__((tls_model("initial-exec")));

/* ---- the handler ---- */

static bool crash_is_handler(const struct sigaction *sa)
{
	return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

/* The program's handler, as the kernel would have run it. */
static void crash_chain(int sig, siginfo_t *si, void *uc, const struct sigaction *prog)
{
	if (prog->sa_flags & SA_RESETHAND) /* one-shot: its view is SIG_DFL from now */
		crash_view[sig].sa_handler = SIG_DFL;
	atomic_fetch_add_explicit(&crash_chained, 1, memory_order_relaxed);
	if (prog->sa_flags & SA_SIGINFO)
		prog->sa_sigaction(sig, si, uc);
	else
		prog->sa_handler(sig);
}

static uint64_t crash_timestamp(struct ada_arena *a)
{
	if (ada_arena_config_of(a)->timestamp_source == ADA_TS_CLOCK)
		return ada_producer_clock_ns();
	return ada_tsc();
}

static bool crash_refaults(int sig, const siginfo_t *si)
{
	return si->si_code > 0 && si->si_code != SI_KERNEL &&
	       (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
}

static void crash_handler(int sig, siginfo_t *si, void *uc)
{
	agent_guard_enter(); /* the agent's own calls (errno, raise...) are not traced */
	int saved = errno;
	struct sigaction prog = crash_view[sig];
	if (crash_is_handler(&prog)) {
		errno = saved;
		agent_guard_leave(); /* the program's handler is traced */
		crash_chain(sig, si, uc, &prog);
		return;
	}
	/* SIG_IGN: a signal sent by someone is ignored, as it would be; a fault
	 * kills the process whatever the disposition. */
	if (prog.sa_handler == SIG_IGN && si->si_code <= 0) {
		errno = saved;
		agent_guard_leave();
		return;
	}
	struct ada_arena *a = ada_producer_arena();
	if (a && agent_hot.pid == getpid()) {
		struct ada_crash_info ci = {
		    .signo = sig,
		    .code = si->si_code,
		    .tid = (uint32_t)gettid(),
		    .addr = si->si_code > 0 ? (uint64_t)(uintptr_t)si->si_addr : 0,
		    .ts_raw = crash_timestamp(a),
		};
		ada_arena_record_crash(a, &ci);
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	__sigaction(sig, &dfl, NULL);
	if (!crash_refaults(sig, si))
		raise(sig); /* blocked while we run: delivered as we return */
	errno = saved;
	/* The guard stays set: this thread is about to die. */
}

/* Installs the agent's handler for sig with the program's mask and flags. */
static int crash_install(int sig, const struct sigaction *prog)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = crash_handler;
	sa.sa_mask = prog->sa_mask;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | (prog->sa_flags & (SA_RESTART | SA_NODEFER));
	return __sigaction(sig, &sa, NULL);
}

/* ---- interposed sigaction() and signal() ---- */

static void crash_lock_take(sigset_t *saved)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
	while (atomic_flag_test_and_set_explicit(&crash_lock, memory_order_acquire))
		; /* held by another thread for a few instructions */
}

static void crash_lock_drop(const sigset_t *saved)
{
	/* Pairs with the acquire in crash_lock_take(). */
	atomic_flag_clear_explicit(&crash_lock, memory_order_release);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

static int crash_set(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t saved;
	crash_lock_take(&saved);
	struct sigaction prev = crash_view[sig];
	int rc = 0;
	if (act) {
		rc = act->sa_handler == SIG_IGN ? __sigaction(sig, act, NULL)
		                                : crash_install(sig, act);
		if (rc == 0)
			crash_view[sig] = *act;
	}
	crash_lock_drop(&saved);
	if (rc == 0 && old)
		*old = prev;
	return rc;
}

CRASH_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig > 0 && sig < NSIG &&
	    atomic_load_explicit(&crash_watched[sig], memory_order_acquire))
		return crash_set(sig, act, old);
	return __sigaction(sig, act, old);
}

/* glibc's signal(): BSD semantics (handler stays, SA_RESTART, the signal
 * blocked while its handler runs). */
CRASH_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (sig > 0 && sig < NSIG)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ---- set-up ---- */

/* Each thread gets an alternate signal stack of its own, unless the
 * program gave it one: a stack overflow leaves no room on the thread's
 * stack for the handler. Called with the guard set; keeps errno. */
void agent_crash_thread_start(void)
{
	int saved = errno;
	stack_t cur;
	if (crash_alt || sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE)) {
		errno = saved;
		return;
	}
	long min = sysconf(_SC_MINSIGSTKSZ);
	size_t len = CRASH_ALTSTACK_MIN;
	while (min > 0 && len < (size_t)min * 4)
		len *= 2;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p != MAP_FAILED) {
		stack_t ss = {.ss_sp = p, .ss_size = len, .ss_flags = 0};
		if (sigaltstack(&ss, NULL) == 0) {
			crash_alt = p;
			crash_alt_len = len;
		} else {
			munmap(p, len);
		}
	}
	errno = saved;
}

/* Thread exit: the stack goes, if it is still the one in use. */
void agent_crash_thread_exit(void)
{
	stack_t cur;
	if (!crash_alt || sigaltstack(NULL, &cur) < 0)
		return;
	if (cur.ss_sp == crash_alt && !(cur.ss_flags & SS_ONSTACK)) {
		stack_t off = {.ss_flags = SS_DISABLE};
		sigaltstack(&off, NULL);
		munmap(crash_alt, crash_alt_len);
	}
	crash_alt = NULL;
}

/* After fork: the child's thread has the forking thread's stack (copied
 * mapping): keep it. */

uint64_t agent_crash_chained(void)
{
	return atomic_load_explicit(&crash_chained, memory_order_relaxed);
}

int agent_crash_setup(void)
{
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++) {
		int sig = crash_signals[i];
		if (__sigaction(sig, NULL, &crash_view[sig]) != 0)
			return -errno;
		/* Ignored on purpose (inherited): leave it, but keep watching. */
		if (crash_view[sig].sa_handler != SIG_IGN &&
		    crash_install(sig, &crash_view[sig]) != 0)
			return -errno;
		/* Publishes crash_view[sig]; pairs with the acquire in sigaction(). */
		atomic_store_explicit(&crash_watched[sig], true, memory_order_release);
	}
	agent_crash_thread_start(); /* the initial thread */
	return 0;
}
