/*
 * Test target for the flight recorder (issue 8): a busy loop of many
 * functions, then one event the triggers must catch.
 *   segv      busy, then fault_here(0x1111, 0x2222, 0x3333) writes through
 *             NULL: SIGSEGV (139 under a shell);
 *   abort     busy, then abort_here() calls abort(): SIGABRT (134);
 *   overflow  busy, then overflow_here() recurses until the stack runs out:
 *             SIGSEGV on a thread with no stack left (139);
 *   recover   busy, then installs its own SIGSEGV handler (after the agent)
 *             and recovers from three faults by siglongjmp: exit 0;
 *   slow      work() 1000 times; the 500th call sleeps 60 ms (the only slow
 *             call, deterministic), then exit 0;
 *   symbol    busy, rare_event() once, a little busy again: exit 0;
 *   manual    busy, SIGUSR2 to the parent when it is `ada record` (the
 *             agent's ADA_SESSION_DIR is set), waits until the parent has
 *             taken the signal (/proc status, no timing), busy again: exit 0.
 *   killrec   under ada record (--detail always): waits until the drain has
 *             started this thread's detail.atf, SIGKILLs the recorder (its
 *             parent), waits until it is gone (reparented: no timing), then
 *             faults like segv: nobody drains the crash; `ada recover` must.
 *   sysv      busy, then sysv_signal(SIGSEGV, h): h recovers from one fault
 *             (siglongjmp); the handler is one-shot, so the second fault
 *             kills: SIGSEGV (139);
 *   bsd       busy, bsd_signal(SIGSEGV, h): three faults recovered, then
 *             bsd_signal(SIGSEGV, SIG_DFL) and a fault that kills (139);
 *   aborth    busy, a SIGABRT handler that returns, then abort_here():
 *             glibc's abort() re-raises with the default action (134);
 *   overflowh busy, a SIGSEGV handler without SA_ONSTACK (it would recover),
 *             then overflow_here(): the kernel cannot run that handler on
 *             an exhausted stack, so the process dies of SIGSEGV (139);
 *   nostack   busy, a SIGSEGV handler without SA_ONSTACK that reports
 *             whether it runs on an alternate stack (never, untraced) and
 *             recovers: prints it, exit 0.
 *   stoprec   under ada record: SIGSTOPs the recorder (its parent), waits
 *             until it is stopped (/proc state T: no timing), runs a busy
 *             loop that overfills a small detail ring, SIGCONTs it: exit 0.
 *   stopfill  stoprec with busy(5000): 100 000 events, three times a
 *             1 MiB index ring, while the recorder is stopped: the program
 *             waits for ring space until the drain timeout, then drops.
 *   stallfill stopfill with the recorder's drain thread alone stopped (a
 *             ptrace stop, as a debugger's, or a drain starved of CPU:
 *             the recorder is there, only slow) for 5 s, longer than the
 *             drain timeout: the program waits, nothing drops.
 *   lapped    busy; under ada record waits until the drain has started this
 *             thread's detail.atf (records persisted: no timing), then busy
 *             again, which overwrites them in a small ring: exit 0.
 *   deferred  (ADA_TEST_WINDOW_PAUSE, --post-roll-sec 1) rare_event(), then,
 *             with the drain held before its first copy of the window,
 *             busy(200) inside the post-roll: their index events are not
 *             taken yet when the drain copies; it goes on only once the
 *             clock is past the window's end and closing slack: exit 0.
 *   spent     (ADA_TEST_WINDOW_PAUSE, --pre-roll-sec 0 --post-roll-sec 2
 *             --stack-bytes 512) rare_event(), busy(1000) inside the
 *             post-roll while the drain is held (some 7 MiB of records:
 *             more than one window pass may write), then, past the
 *             window's end, rare_event() again: a second window of its
 *             own, whose first copy comes while the first window's copy
 *             is still cut short by the pass's budget: exit 0.
 * Every function is noinline, and prints nothing but one line at the end
 * (the harness compares stdout traced and untraced).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))
static volatile unsigned long sink;
/* Arguments read from memory, so gcc cannot specialise the callees on them
 * (a .constprop clone would not receive them in registers). */
static volatile long arg_a = 0x1111, arg_b = 0x2222, arg_c = 0x3333, arg_abort = 0x4444,
                     arg_rare = 7;
static int *volatile null_ptr;

NOINL static void leaf_a(unsigned long x)
{
	sink += x;
}
NOINL static void leaf_b(unsigned long x)
{
	sink ^= x;
}
NOINL static void leaf_c(unsigned long x)
{
	sink += x * 3;
}
NOINL static void mid_1(unsigned long x)
{
	leaf_a(x);
	leaf_b(x);
}
NOINL static void mid_2(unsigned long x)
{
	leaf_b(x);
	leaf_c(x);
}
NOINL static void mid_3(unsigned long x)
{
	leaf_c(x);
	leaf_a(x);
}
NOINL static void top(unsigned long x)
{
	mid_1(x);
	mid_2(x);
	mid_3(x);
}

NOINL static void busy(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		top(i);
}

NOINL static void fault_here(long a, long b, long c)
{
	sink = (unsigned long)(a + b + c);
	*null_ptr = (int)a; /* SIGSEGV */
	sink++;
}

NOINL static void abort_here(long a)
{
	sink = (unsigned long)a;
	abort();
}

static volatile int forever = 1; /* the compiler cannot see that it never ends */
NOINL static unsigned long overflow_here(unsigned long n)
{
	volatile char pad[512];
	pad[0] = (char)n;
	if (!forever)
		return n;
	return overflow_here(n + 1) + pad[0]; /* not a tail call */
}

static sigjmp_buf recover_jb;
static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(recover_jb, 1);
}

NOINL static int recover_run(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	volatile int recovered = 0;
	for (int i = 0; i < 3; i++)
		if (!sigsetjmp(recover_jb, 1))
			fault_here(i, 0, 0);
		else
			recovered++;
	return recovered;
}

NOINL static void work(int i)
{
	if (i == 500) {
		struct timespec ts = {0, 60 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	sink += (unsigned long)i;
}

NOINL static void rare_event(long code)
{
	sink += (unsigned long)code;
}

/* Until the parent has taken our SIGUSR2 off its pending sets. */
NOINL static void wait_parent_took(pid_t ppid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)ppid);
	for (;;) {
		FILE *f = fopen(path, "r");
		if (!f)
			return;
		int pending = 0;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "ShdPnd:", 7) || !strncmp(line, "SigPnd:", 7))
				pending |= (strtoull(line + 7, NULL, 16) >> (SIGUSR2 - 1)) & 1;
		fclose(f);
		if (!pending)
			return;
		sched_yield();
	}
}

extern sighandler_t sysv_signal(int, sighandler_t);
extern sighandler_t bsd_signal(int, sighandler_t);

NOINL static void sysv_run(void)
{
	sysv_signal(SIGSEGV, on_segv);
	if (!sigsetjmp(recover_jb, 1))
		fault_here(arg_a, arg_b, arg_c); /* recovered */
	fault_here(arg_a, arg_b, arg_c);         /* one-shot: the default action now */
}

NOINL static void bsd_run(void)
{
	bsd_signal(SIGSEGV, on_segv);
	for (int i = 0; i < 3; i++)
		if (!sigsetjmp(recover_jb, 1))
			fault_here(i, 0, 0);
	bsd_signal(SIGSEGV, SIG_DFL);
	fault_here(arg_a, arg_b, arg_c);
}

static void on_abrt(int sig)
{
	(void)sig;
	sink += 1; /* returns: abort() goes on */
}

static volatile int handler_on_alt = -1;
static void on_segv_where(int sig)
{
	(void)sig;
	stack_t ss;
	handler_on_alt = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
	siglongjmp(recover_jb, 1);
}

NOINL static void overflowh_run(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv; /* siglongjmp: would recover, if it could run */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	if (!sigsetjmp(recover_jb, 1))
		sink = overflow_here(0);
	printf("recovered from a stack overflow\n"); /* never, traced or not */
}

NOINL static void nostack_run(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv_where; /* no SA_ONSTACK */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	if (!sigsetjmp(recover_jb, 1))
		fault_here(arg_a, arg_b, arg_c);
	printf("handler on an alternate stack: %d\n", handler_on_alt);
}

/* The state letter of pid in /proc/pid/stat ('T': stopped; 0: gone). */
NOINL static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

NOINL static void stoprec_run(unsigned long n)
{
	pid_t rec = getppid();
	if (!getenv("ADA_SESSION_DIR")) { /* untraced: the same work */
		busy(n);
		return;
	}
	kill(rec, SIGSTOP);
	for (char st; (st = proc_state(rec)) != 'T' && st != 't' && st != 0;)
		sched_yield();
	busy(n);
	kill(rec, SIGCONT);
}

/* The tid of rec's thread named name, 0 when there is none. */
NOINL static pid_t thread_named(pid_t rec, const char *name)
{
	char dir[64], path[400], comm[32];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)rec);
	DIR *d = opendir(dir);
	struct dirent *de;
	pid_t tid = 0;
	while (d && !tid && (de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s/comm", dir, de->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)))
			tid = atoi(de->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

/* stallfill's helper: stops the drain thread (ptrace: only that thread,
 * the recorder process runs on), holds it 5 s, lets it go. The tracer is
 * this thread, so it does all three. */
static _Atomic int stall_state; /* 0 starting, 1 stopped, -1 could not */

static void *stall_thread(void *arg)
{
	pid_t tid = *(pid_t *)arg;
	int st;
	if (!tid || ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
		stall_state = -1;
		return NULL;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || waitpid(tid, &st, __WALL) != tid) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		stall_state = -1;
		return NULL;
	}
	stall_state = 1;
	struct timespec ts = {5, 0}; /* the stall: longer than the 2 s drain timeout */
	while (nanosleep(&ts, &ts) != 0)
		;
	ptrace(PTRACE_DETACH, tid, 0, 0);
	return NULL;
}

NOINL static int stall_run(unsigned long n)
{
	if (!getenv("ADA_SESSION_DIR")) { /* untraced: the same work */
		busy(n);
		return 0;
	}
	pid_t tid = thread_named(getppid(), "ada-drain");
	pthread_t th;
	if (pthread_create(&th, NULL, stall_thread, &tid) != 0)
		return -1;
	while (stall_state == 0)
		sched_yield();
	if (stall_state > 0)
		busy(n);
	pthread_join(th, NULL);
	return stall_state > 0 ? 0 : -1;
}

/* True once some thread_K/detail.atf of this process exists. */
NOINL static int detail_started(const char *session)
{
	char dir[4096], path[4096 + 300];
	snprintf(dir, sizeof(dir), "%s/pid_%d", session, (int)getpid());
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	int found = 0;
	struct stat st;
	while (!found && (de = readdir(d)))
		if (!strncmp(de->d_name, "thread_", 7)) {
			snprintf(path, sizeof(path), "%s/%s/detail.atf", dir, de->d_name);
			found = stat(path, &st) == 0 && st.st_size > 64;
		}
	closedir(d);
	return found;
}

/* Kills the recorder once it has written detail, then faults. A run-away
 * guard only (the drain writes within a few passes): 10 000 000 rounds.
 * The wait makes few events (the harness gives a ring of 512 Ki events,
 * which the whole run does not fill even if the drain takes none). */
NOINL static void killrec_run(void)
{
	const char *session = getenv("ADA_SESSION_DIR");
	pid_t rec = getppid();
	if (!session)
		return;
	for (long i = 0; i < 10000000 && !detail_started(session); i++)
		sched_yield();
	kill(rec, SIGKILL);
	while (getppid() == rec)
		sched_yield();
	busy(50); /* in the rings only now: recover must drain them */
	fault_here(arg_a, arg_b, arg_c);
}

/* The window pause (ADA_TEST_WINDOW_PAUSE=FILE, flight.c): its file, once
 * the drain made it and waits in its window pass (a line more in
 * FILE.seen); NULL untraced (the same work, no waits). A run-away guard
 * only: 60 s. */
NOINL static const char *window_held(void)
{
	const char *f = getenv("ADA_TEST_WINDOW_PAUSE");
	if (!f || !*f || !getenv("ADA_SESSION_DIR"))
		return NULL;
	for (int i = 0; i < 6000 && access(f, F_OK) != 0; i++)
		usleep(10000);
	char seen[4096];
	snprintf(seen, sizeof(seen), "%s.seen", f);
	FILE *o = access(f, F_OK) == 0 ? fopen(seen, "a") : NULL;
	if (o) { /* the harness counts the holds the program saw */
		fputs("held\n", o);
		fclose(o);
	}
	return f;
}

static unsigned long long boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Until CLOCK_BOOTTIME (the index lane's clock) reaches ns. Few calls
 * (10 ms naps): their records share the detail ring with the windows'. */
static void until_ns(unsigned long long ns)
{
	while (boot_ns() < ns)
		usleep(10000);
}

/* deferred: the post-roll's records wait for their index events while
 * the window's end and the drain's closing slack (100 ms) go by. */
NOINL static void deferred_run(void)
{
	rare_event(arg_rare);
	unsigned long long fired = boot_ns();
	const char *f = window_held();
	busy(200);
	if (f) {
		until_ns(fired + 1300000000ull); /* the 1 s post-roll, the slack, a margin */
		unlink(f);
	}
}

/* spent: two windows on one thread, the first one's copy cut short by a
 * pass's budget when the second's first copy comes. */
NOINL static void spent_run(void)
{
	rare_event(arg_rare);
	unsigned long long fired = boot_ns();
	const char *f = window_held();
	busy(1000);
	if (f)
		until_ns(fired + 2010000000ull); /* past the 2 s post-roll */
	rare_event(arg_rare);
	if (f) {
		unlink(f);
		f = window_held(); /* the second window's first pass */
		if (f)
			unlink(f);
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "segv";
	if (!strcmp(m, "slow")) {
		for (int i = 0; i < 1000; i++)
			work(i);
		printf("slow done\n");
		return 0;
	}
	if (!strcmp(m, "deferred") || !strcmp(m, "spent")) {
		busy(50);
		if (!strcmp(m, "deferred"))
			deferred_run();
		else
			spent_run();
		printf("%s done\n", m);
		return 0;
	}
	busy(5000);
	if (!strcmp(m, "segv")) {
		fault_here(arg_a, arg_b, arg_c);
	} else if (!strcmp(m, "abort")) {
		abort_here(arg_abort);
	} else if (!strcmp(m, "overflow")) {
		sink = overflow_here(0);
	} else if (!strcmp(m, "recover")) {
		printf("recovered %d\n", recover_run());
		return 0;
	} else if (!strcmp(m, "symbol")) {
		rare_event(arg_rare);
		busy(200); /* short: its detail must not push rare_event's out of the ring */
	} else if (!strcmp(m, "sysv")) {
		sysv_run();
	} else if (!strcmp(m, "bsd")) {
		bsd_run();
	} else if (!strcmp(m, "aborth")) {
		signal(SIGABRT, on_abrt);
		abort_here(arg_abort);
	} else if (!strcmp(m, "overflowh")) {
		overflowh_run();
	} else if (!strcmp(m, "nostack")) {
		nostack_run();
		return 0;
	} else if (!strcmp(m, "stoprec")) {
		stoprec_run(1000);
	} else if (!strcmp(m, "stopfill")) {
		stoprec_run(5000);
	} else if (!strcmp(m, "stallfill")) {
		if (stall_run(5000) != 0) {
			fprintf(stderr,
			        "t_flight: cannot stop the recorder's drain thread (ptrace)\n");
			return 3;
		}
	} else if (!strcmp(m, "killrec")) {
		killrec_run();
	} else if (!strcmp(m, "lapped")) {
		const char *session = getenv("ADA_SESSION_DIR");
		/* A run-away guard only, as killrec's. */
		for (long i = 0; session && i < 10000000 && !detail_started(session); i++)
			sched_yield();
		busy(5000);
	} else if (!strcmp(m, "manual")) {
		if (getenv("ADA_SESSION_DIR")) { /* under ada record: the parent is the recorder */
			kill(getppid(), SIGUSR2);
			wait_parent_took(getppid());
		}
		busy(5000);
	}
	printf("%s done\n", m);
	return 0;
}
