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
 *   - A program handler installed without SA_ONSTACK runs where the kernel
 *     would have run it: on the interrupted stack, below its red zone
 *     (hook_arch_call_on_stack), not on the alternate stack the agent's
 *     handler runs on. When the fault looks like a stack overflow (a
 *     SIGSEGV/SIGBUS whose address lies within 64 KiB below the
 *     interrupted rsp, or just above it), the kernel could not have
 *     delivered the signal to such a handler: the process dies, as it
 *     would untraced, and the crash is recorded.
 *   - glibc's abort() re-raises SIGABRT after a program handler returns,
 *     having reset the disposition with its internal sigaction, which no
 *     interposer sees: that death never reaches the agent's handler. So a
 *     SIGABRT the process sent itself is recorded (thread, time) before
 *     the program's handler runs; a crash record is only a crash if the
 *     process then dies of that signal (the recorder reads the exit
 *     status, docs/manifest.md), so a handler that survives it (longjmp)
 *     leaves no crash behind. The record is first-wins: a program that
 *     survives its own abort and later dies of another signal gets that
 *     death reported without a faulting thread (caught: false).
 *   - glibc's sysv_signal/__sysv_signal, bsd_signal and ssignal set the
 *     disposition through its internal sigaction too: interposed here like
 *     signal(). A program calling __sigaction or the raw syscall itself
 *     still bypasses the agent (not interposed: the agent uses them).
 *   - crash_view[] writers take crash_lock with every signal blocked (a
 *     handler in the same thread cannot re-enter it); the handler reads
 *     without the lock: a disposition changed by another thread while a
 *     fault is being handled may be seen old or new, as with the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
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

typedef void (*crash_fn)(int, siginfo_t *, void *);

#define CRASH_OVERFLOW_REACH (64ull << 10) /* fault this far below rsp: overflow */

/* The fault is the interrupted stack running out: a kernel fault whose
 * address lies just below (or at) the interrupted rsp. */
static bool crash_is_overflow(int sig, const siginfo_t *si, const void *uc)
{
	if ((sig != SIGSEGV && sig != SIGBUS) || si->si_code <= 0)
		return false;
	uintptr_t sp = hook_arch_uc_sp(uc), addr = (uintptr_t)si->si_addr;
	return addr <= sp + 4096 && sp - addr < CRASH_OVERFLOW_REACH;
}

/* Where a handler without SA_ONSTACK runs: 0 for here (this handler is not
 * on an alternate stack, or the interrupted code was on it already), else
 * the interrupted stack below its red zone, as the kernel would pick. */
static uintptr_t crash_handler_sp(const void *uc)
{
	stack_t cur;
	if (sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_ONSTACK))
		return 0;
	uintptr_t sp = hook_arch_uc_sp(uc), lo = (uintptr_t)cur.ss_sp;
	if (sp >= lo && sp - lo < cur.ss_size)
		return 0;
	return (sp - HOOK_ARCH_REDZONE) & ~(uintptr_t)15;
}

/* The program's handler, as the kernel would have run it. */
static void crash_chain(int sig, siginfo_t *si, void *uc, const struct sigaction *prog)
{
	if (prog->sa_flags & SA_RESETHAND) /* one-shot: its view is SIG_DFL from now */
		crash_view[sig].sa_handler = SIG_DFL;
	atomic_fetch_add_explicit(&crash_chained, 1, memory_order_relaxed);
	/* A one-argument handler called with three: the x86_64 calling
	 * convention ignores the extra ones (the kernel does the same). */
	crash_fn fn = (prog->sa_flags & SA_SIGINFO) ? prog->sa_sigaction
	                                            : (crash_fn)(void (*)(void))prog->sa_handler;
	uintptr_t sp = (prog->sa_flags & SA_ONSTACK) ? 0 : crash_handler_sp(uc);
	if (sp)
		hook_arch_call_on_stack(sig, si, uc,
		                        (void (*)(int, void *, void *))(void (*)(void))fn, sp);
	else
		fn(sig, si, uc);
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

_Static_assert(HOOK_ARCH_UC_NREGS == ADA_CRASH_NREGS, "the crash record holds every register");

/* ---- the other threads (docs/hooks.md, "Crash signals") ---- */

/* Decimal digits of s[0..n) as a number; 0 when there are none or any
 * other character. */
static uint32_t crash_dec(const char *s, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > UINT32_MAX / 10)
			return 0;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* One thread's /proc/self/task/TID/syscall text, t->tid set: "running",
 * or "NR [6 args] SP PC" (NR -1, without the arguments, when it is blocked
 * outside a system call), the numbers after NR in hex. */
static bool crash_parse_syscall(const char *b, size_t n, struct ada_crash_thread *t)
{
	uint64_t v[8];
	size_t k = 0, i = 0;
	if (n >= 7 && !memcmp(b, "running", 7)) {
		t->nr = ADA_CRASH_RUNNING;
		t->sp = t->pc = 0;
		return true;
	}
	bool neg = n > 0 && b[0] == '-';
	size_t j = neg;
	while (j < n && b[j] >= '0' && b[j] <= '9')
		j++;
	if (j == (size_t)neg || j - neg > 6)
		return false;
	t->nr = (int32_t)crash_dec(b + neg, j - neg) * (neg ? -1 : 1);
	for (i = j; i + 3 < n && k < 8 && b[i] == ' ' && b[i + 1] == '0' && b[i + 2] == 'x';) {
		uint64_t x = 0;
		size_t d = 0;
		for (i += 3; i < n && d < 16; i++, d++) {
			char c = b[i];
			int h = c >= '0' && c <= '9'   ? c - '0'
			        : c >= 'a' && c <= 'f' ? c - 'a' + 10
			                               : -1;
			if (h < 0)
				break;
			x = x << 4 | (uint64_t)h;
		}
		v[k++] = x;
	}
	if (k < 2 || k != (t->nr < 0 ? 2u : 8u))
		return false;
	t->sp = v[k - 2];
	t->pc = v[k - 1];
	return true;
}

/* "/proc/self/task/TID/syscall" into p (64 bytes). */
static void crash_task_path(char *p, uint32_t tid)
{
	static const char head[] = "/proc/self/task/", tail[] = "/syscall";
	char d[10];
	size_t n = 0, k = sizeof(head) - 1;
	do
		d[n++] = (char)('0' + tid % 10);
	while ((tid /= 10) && n < sizeof(d));
	memcpy(p, head, k);
	while (n)
		p[k++] = d[--n];
	memcpy(p + k, tail, sizeof(tail));
}

static bool crash_read_thread(struct ada_crash_thread *t)
{
	char path[64], b[256];
	crash_task_path(path, t->tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false; /* it ended meanwhile */
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	if (n <= 0 || !crash_parse_syscall(b, (size_t)n, t))
		return false;
	/* Stopped in a trampoline's copy of a function's first instructions
	 * (a system call among them): the function's own pc. */
	uint64_t moved = t->pc ? agent_tmap_pc(t->pc) : 0;
	if (moved)
		t->pc = moved;
	return true;
}

struct crash_dirent {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
	uint8_t type;
	char name[];
};

/* Every other thread of the process, where it is now: a thread blocked in
 * a system call (most threads that are not running: a lock, a sleep, a
 * read) has its user pc and sp there; a running one says so. Nothing is
 * sent to them (no signal: they may block it, own it, or see EINTR), and
 * /proc reads do not stop them. Not under a seccomp filter: it may refuse
 * or kill on open(). Bounded: ADA_CRASH_OTHERS threads read, the rest
 * counted; each is open/read/close (async-signal-safe system calls). */
static void crash_others(struct ada_arena *a, uint32_t self)
{
	struct ada_crash_thread t[ADA_CRASH_OTHERS];
	uint32_t n = 0, seen = 0;
	/* A process without a filter (0) can make any system call. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0) {
		ada_arena_record_crash_others(a, ADA_OTHERS_SECCOMP, t, 0, 0);
		return;
	}
	int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		ada_arena_record_crash_others(a, ADA_OTHERS_NO_PROC, t, 0, 0);
		return;
	}
	char buf[4096] __attribute__((aligned(8)));
	long got;
	while ((got = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long o = 0; o < got;) {
			const struct crash_dirent *e = (const void *)(buf + o);
			if (e->reclen == 0 || o + e->reclen > got)
				break;
			o += e->reclen;
			uint32_t tid = crash_dec(e->name, strnlen(e->name, 16));
			if (tid == 0 || tid == self)
				continue;
			seen++;
			if (n < ADA_CRASH_OTHERS) {
				t[n].tid = tid;
				n += crash_read_thread(&t[n]);
			}
		}
	}
	close(dir);
	ada_arena_record_crash_others(a, ADA_OTHERS_READ, t, n, seen);
}

/* The crash record of this signal, in the must-not-drop lane, with the
 * interrupted registers (uc: NULL when there is no context), then where
 * the other threads are. */
static void crash_record(int sig, const siginfo_t *si, const void *uc)
{
	struct ada_arena *a = ada_producer_arena();
	if (a && agent_hot.pid == getpid()) {
		struct ada_crash_info ci = {
		    .signo = sig,
		    .code = si->si_code,
		    .tid = (uint32_t)gettid(),
		    .addr = si->si_code > 0 ? (uint64_t)(uintptr_t)si->si_addr : 0,
		    .ts_raw = crash_timestamp(a),
		};
		if (uc)
			hook_arch_uc_regs(uc, ci.regs);
		if (ada_arena_record_crash(a, &ci))
			crash_others(a, ci.tid);
	}
}

/* The thread dies at the function's own pc (hook_arch_uc_set_pc) without
 * running anything there: the bytes at that pc are the patch, not the
 * instruction that faulted. The same signal with the same siginfo (a
 * thread may queue any si_code to itself) is queued to this thread and
 * unblocked in the context the handler returns to, so the kernel delivers
 * it, with its default action, before that pc runs: the core and the exit
 * status are those of the original fault. */
static void crash_requeue(int sig, siginfo_t *si, void *uc)
{
	sigdelset(&((ucontext_t *)uc)->uc_sigmask, sig);
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, si) != 0)
		raise(sig); /* refused: the same signal, as SI_TKILL */
}

/* A SIGABRT this process sent itself (abort(), raise()). */
static bool crash_self_abort(int sig, const siginfo_t *si)
{
	return sig == SIGABRT && (si->si_code == SI_TKILL || si->si_code == SI_USER) &&
	       si->si_pid == getpid();
}

static void crash_handler(int sig, siginfo_t *si, void *uc)
{
	agent_guard_enter(); /* the agent's own calls (errno, raise...) are not traced */
	int saved = errno;
	struct sigaction prog = crash_view[sig];
	/* A handler the kernel could not have run (no SA_ONSTACK, no stack
	 * left): the process dies, as it would untraced. */
	bool unrunnable = !(prog.sa_flags & SA_ONSTACK) && crash_is_overflow(sig, si, uc);
	if (crash_is_handler(&prog) && !unrunnable) {
		if (crash_self_abort(sig, si))
			crash_record(sig, si, uc); /* abort() re-raises behind our back */
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
	/* A fault in a trampoline's copy of the function's first
	 * instructions: the pc the function's own copy would have had. */
	uint64_t moved = uc ? agent_tmap_pc(hook_arch_uc_pc(uc)) : 0;
	if (moved)
		hook_arch_uc_set_pc(uc, moved);
	crash_record(sig, si, uc);
	/* The program's return addresses back on this thread's stack, so a
	 * core dump (and a debugger) sees the stack as untraced. Only this
	 * thread's: the others run on, and their shadow stacks may be
	 * mid-update (docs/hooks.md, "Fatal signals"). */
	agent_shadow_restore_for_crash((const uint64_t *)hook_arch_uc_sp(uc), hook_arch_uc_lr(uc));
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	__sigaction(sig, &dfl, NULL);
	if (moved)
		crash_requeue(sig, si, uc);
	else if (!crash_refaults(sig, si))
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

/* signal() and its relatives through the interposed sigaction(). */
static sighandler_t crash_signal_as(int sig, sighandler_t handler, int flags, bool block_self)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (block_self && sig > 0 && sig < NSIG)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal(), bsd_signal() and ssignal() (one function): BSD
 * semantics (handler stays, SA_RESTART, the signal blocked while its
 * handler runs). */
CRASH_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return crash_signal_as(sig, handler, SA_RESTART, true);
}

CRASH_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return crash_signal_as(sig, handler, SA_RESTART, true);
}

CRASH_EXPORT sighandler_t ssignal(int sig, sighandler_t handler)
{
	return crash_signal_as(sig, handler, SA_RESTART, true);
}

/* System V semantics: one-shot (SA_RESETHAND), the signal not blocked
 * while its handler runs (SA_NODEFER), no SA_RESTART. */
CRASH_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return crash_signal_as(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

CRASH_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	return crash_signal_as(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

/* ---- set-up ---- */

/* Alternate stacks of ended threads, kept for the next threads to start:
 * a thread-per-request server would otherwise map one and unmap it for
 * every request (two system calls and, for the unmap, a TLB shootdown on
 * the other CPUs: the costliest part of an ended thread's teardown in a
 * virtual machine). A cell holds a stack no thread uses (its thread
 * disabled it before putting it here) or NULL; a take exchanges a cell
 * with NULL and a put fills an empty one by compare-and-swap, so a stack
 * is in at most one cell or one thread's hands (no ABA: nothing is
 * compared but NULL). All of one length (crash_alt_size, the same for
 * the whole process). */
#define CRASH_ALT_CACHE 16u
static _Atomic(void *) crash_alt_cache[CRASH_ALT_CACHE];

static size_t crash_alt_size(void)
{
	long min = sysconf(_SC_MINSIGSTKSZ);
	size_t len = CRASH_ALTSTACK_MIN;
	while (min > 0 && len < (size_t)min * 4)
		len *= 2;
	return len;
}

static void *crash_alt_take(void)
{
	for (uint32_t i = 0; i < CRASH_ALT_CACHE; i++) {
		/* Relaxed load: a hint which cell to try. Acquire exchange:
		 * pairs with the release CAS in crash_alt_put(), so the
		 * putter's sigaltstack(SS_DISABLE) came before our use. */
		if (!atomic_load_explicit(&crash_alt_cache[i], memory_order_relaxed))
			continue;
		void *p = atomic_exchange_explicit(&crash_alt_cache[i], NULL, memory_order_acquire);
		if (p)
			return p;
	}
	return NULL;
}

/* True when the stack went into the cache; false: every cell is full. */
static bool crash_alt_put(void *p)
{
	for (uint32_t i = 0; i < CRASH_ALT_CACHE; i++) {
		void *z = NULL;
		/* Release: pairs with the acquire exchange in crash_alt_take(). */
		if (atomic_compare_exchange_strong_explicit(
		        &crash_alt_cache[i], &z, p, memory_order_release, memory_order_relaxed))
			return true;
	}
	return false;
}

/* Each thread gets an alternate signal stack of its own, unless the
 * program gave it one: a stack overflow leaves no room on the thread's
 * stack for the handler. One that an ended thread left (crash_alt_take)
 * first, else a new mapping. Called with the guard set; keeps errno.
 * After fork the child's thread has the forking thread's alternate stack
 * (a copied mapping): crash_alt stays set and it is kept. */
void agent_crash_thread_start(void)
{
	int saved = errno;
	stack_t cur;
	if (crash_alt || sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE)) {
		errno = saved;
		return;
	}
	size_t len = crash_alt_size();
	void *p = crash_alt_take();
	if (!p) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
	}
	if (p) {
		stack_t ss = {.ss_sp = p, .ss_size = len, .ss_flags = 0};
		if (sigaltstack(&ss, NULL) == 0) {
			crash_alt = p;
			crash_alt_len = len;
		} else if (!crash_alt_put(p)) {
			munmap(p, len);
		}
	}
	errno = saved;
}

/* Thread exit: the stack goes, if it is still the one in use: disabled
 * first (a signal during the rest of the teardown runs on the thread's
 * own stack), then kept for the next thread (or unmapped when the cache
 * is full). */
void agent_crash_thread_exit(void)
{
	stack_t cur;
	if (!crash_alt || sigaltstack(NULL, &cur) < 0)
		return;
	if (cur.ss_sp == crash_alt && !(cur.ss_flags & SS_ONSTACK)) {
		stack_t off = {.ss_flags = SS_DISABLE};
		bool off_ok = sigaltstack(&off, NULL) == 0;
		if (!off_ok || crash_alt_len != crash_alt_size() || !crash_alt_put(crash_alt))
			munmap(crash_alt, crash_alt_len);
	}
	crash_alt = NULL;
}

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
