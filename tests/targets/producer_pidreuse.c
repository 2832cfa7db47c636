/*
 * Test target for a reused pid (tests/integration/pidreuse_test.sh): links
 * the producer API (no agent). Child A sets up its arena, emits KA events
 * (function_id 1 << 32 | seq) and exits; then the parent makes the kernel
 * give pid A to child B (root: /proc/sys/kernel/ns_last_pid = A - 1, then
 * fork), which emits KB events (2 << 32 | seq) and exits. The recorder must
 * tell B's arena as not read, and keep pid_A/ A's alone. When B comes:
 *
 *   after   once the recorder has finished A (it removes
 *           <ADA_ARENA_DIR>/<A>.ring): B makes a new <A>.ring.
 *   during  while the recorder reads A: A waits until the drain has
 *           opened its arena (its heartbeat), the parent stops the
 *           recorder (SIGSTOP: its parent, `ada record`; the wait is for
 *           a state, never a time), then A exits, B runs with <A>.ring
 *           still there (the recorder cannot have removed it), and the
 *           recorder is continued. B must not adopt A's arena (an exec
 *           would): before, B's events went into A's and pid_A/.
 *   early   the recorder is stopped before A starts: it opens A's arena
 *           only after B has pid A, and B stays alive until the recorder
 *           has finished A (<A>.ring removed): the pid alone would say A
 *           is alive (B is), and the recorder would wait for B forever.
 *   orphan  A is a grandchild with no arena: its parent exits, A (now
 *           the recorder's: it is the child subreaper) exits 3 and the
 *           recorder reaps it; once it has, B gets pid A, emits and exits
 *           0. The recorder kept its note of A's reap (for an arena that
 *           shows up after the reap) for good and gave it to B's arena:
 *           B finished at its admission with A's exit status 3.
 *
 * usage: producer_pidreuse KA KB [after|during|early|orphan]   prints "pid A" on
 *        stdout; exits 0, or 77 when it cannot force the pid (not root,
 *        no ns_last_pid, or other processes took pid A every time), other
 *        codes on failure. ADA_TEST_HOLD_FILE: see hold().
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

/* The bound on every wait for a state of the recorder: generous, since a
 * busy machine is slow, never wrong. */
#define WAIT_POLLS 12000 /* x 10 ms = 120 s */

static void nap(void)
{
	nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
}

/* ADA_TEST_B_SIDE_KB=N: B, as an agent would, writes a symbol file of N
 * KiB into pid_<its pid>/ of the session: A's directory, which
 * the recorder finished (issue 35: a reused pid's agent wrote there, and
 * the disk budget never counted it). */
static int side_file(void)
{
	const char *kb = getenv("ADA_TEST_B_SIDE_KB"), *sd = getenv("ADA_SESSION_DIR");
	if (!kb || !sd)
		return 0;
	char path[4096];
	snprintf(path, sizeof(path), "%s/pid_%d", sd, (int)getpid());
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return 14;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/module_99.syms");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 14;
	char buf[1024];
	memset(buf, 'S', sizeof(buf));
	for (long i = strtol(kb, NULL, 10); i > 0; i--)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			close(fd);
			return 14;
		}
	close(fd);
	return 0;
}

static int emit(uint64_t id, uint64_t k)
{
	int rc = ada_producer_init_from_env();
	if (rc < 0) {
		fprintf(stderr, "producer_pidreuse: child %llu: no arena (%s)\n",
		        (unsigned long long)id, strerror(-rc));
		return 3;
	}
	for (uint64_t seq = 0; seq < k; seq++)
		ada_emit(id << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	return id == 2 ? side_file() : 0;
}

/* Whether path exists; waits (bounded) until it does not when gone. */
static bool wait_gone(const char *path)
{
	struct stat st;
	for (int i = 0; lstat(path, &st) == 0; i++) {
		if (i == WAIT_POLLS)
			return false;
		nap();
	}
	return true;
}

/* Whether every thread of process pid is stopped (state T), after the
 * SIGSTOP we sent: waits (bounded) until they are. */
static bool wait_stopped(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (int i = 0; i < WAIT_POLLS; i++, nap()) {
		DIR *d = opendir(dir);
		if (!d)
			return false;
		bool all = true;
		int n = 0;
		for (struct dirent *de; (de = readdir(d));) {
			if (de->d_name[0] == '.')
				continue;
			char path[384], buf[512];
			snprintf(path, sizeof(path), "%s/%s/stat", dir, de->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
			if (fd >= 0)
				close(fd);
			if (r <= 0)
				continue; /* a thread that ended */
			buf[r] = '\0';
			char *q = strrchr(buf, ')');
			all &= q && (q[2] == 'T' || q[2] == 't');
			n++;
		}
		closedir(d);
		if (all && n > 0)
			return true;
	}
	return false;
}

static pid_t stopped_rec; /* the recorder we stopped, to continue */

static void cont_recorder(void)
{
	if (stopped_rec > 0)
		kill(stopped_rec, SIGCONT);
	stopped_rec = 0;
}

/* Stops `ada record` (our parent: it runs the drain) and waits until it
 * is stopped. */
static int stop_recorder(void)
{
	pid_t rec = getppid();
	char path[64], comm[32] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)rec);
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	if (strcmp(comm, "ada\n")) {
		fprintf(stderr, "producer_pidreuse: the parent is not ada record (%s)\n", comm);
		return 9;
	}
	stopped_rec = rec;
	if (kill(rec, SIGSTOP) != 0 || !wait_stopped(rec)) {
		fprintf(stderr, "producer_pidreuse: cannot stop the recorder\n");
		return 9;
	}
	return 0;
}

/* A for "during": emits, then holds until the drain has read its arena
 * (the drain beats the heartbeat when it drains a slot) and the parent
 * says go (closes the pipe), so the recorder has it open when stopped. */
static int emit_held(uint64_t k, int ready, int go)
{
	int rc = emit(1, k);
	if (rc)
		return rc;
	for (int i = 0; ada_arena_heartbeat(ada_producer_arena()) == 0; i++) {
		if (i == WAIT_POLLS)
			return 10;
		nap();
	}
	char c = 1;
	if (write(ready, &c, 1) != 1)
		return 11;
	return read(go, &c, 1) == 0 ? 0 : 11;
}

/* B for "early": emits, says so, then stays alive until the recorder has
 * finished A (removed A's arena). */
static int emit_stay(uint64_t k, int ready, const char *a_ring)
{
	int rc = emit(2, k);
	if (rc)
		return rc;
	if (!ada_arena_pid_reused(ada_producer_arena()))
		return 12; /* adopted A's arena */
	char c = 1;
	if (write(ready, &c, 1) != 1)
		return 11;
	return wait_gone(a_ring) ? 0 : 13;
}

/* A start time is in clock ticks (10 ms at USER_HZ 100): a process
 * started within A's tick with A's pid would pass for A across an exec
 * (ring.h, ada_arena_start_time). Naturally the kernel would have had to
 * hand out every other pid first; a chosen pid (ns_last_pid, as here)
 * can be that quick, so B is forked only once the boot-time clock, which
 * start times count, is past A's tick. A's start time is read from its
 * zombie (before the reap). */
static int wait_past_tick_of(pid_t a)
{
	siginfo_t si;
	if (waitid(P_PID, (id_t)a, &si, WEXITED | WNOWAIT) != 0)
		return -1;
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)a);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	uint64_t ticks = n > 0 ? ada_stat_start_ticks(buf, (size_t)n) : 0;
	long hz = sysconf(_SC_CLK_TCK);
	if (!ticks || hz <= 0)
		return -1;
	for (int i = 0; i < WAIT_POLLS; i++, nap()) {
		struct timespec now;
		clock_gettime(CLOCK_BOOTTIME, &now);
		uint64_t t = (uint64_t)now.tv_sec * (uint64_t)hz +
		             (uint64_t)now.tv_nsec / (1000000000u / (uint64_t)hz);
		if (t > ticks)
			return 0;
	}
	return -1;
}

/* "orphan": A as a grandchild, reparented to the recorder, which reaps
 * it (A waits for the reparenting, then exits 3 without an arena).
 * Returns A's pid once it is reaped (no such process), -1 on failure. */
static pid_t orphan_reaped(void)
{
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) != 0)
		return -1;
	pid_t m = fork();
	if (m < 0)
		return -1;
	if (m == 0) {
		pid_t me = getpid(), a = fork();
		if (a == 0) {
			for (int i = 0; getppid() == me && i < WAIT_POLLS; i++)
				nap();
			_exit(3);
		}
		_exit(a > 0 && write(fd[1], &a, sizeof(a)) == (ssize_t)sizeof(a) ? 0 : 1);
	}
	close(fd[1]);
	pid_t a = -1;
	int st;
	if (read(fd[0], &a, sizeof(a)) != (ssize_t)sizeof(a) || waitpid(m, &st, 0) != m ||
	    !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		a = -1;
	close(fd[0]);
	for (int i = 0; a > 0 && (kill(a, 0) == 0 || errno != ESRCH); i++) {
		if (i == WAIT_POLLS)
			return -1;
		nap();
	}
	return a;
}

/* ADA_TEST_HOLD_FILE=path: the program (the parent) lives on, once B has
 * ended, until path exists, so that the test can ask the live recorder
 * (`ada status --json`) about B's refused arena; 0, or 15 when it never
 * came. */
static int hold(void)
{
	const char *f = getenv("ADA_TEST_HOLD_FILE");
	struct stat st;
	for (int i = 0; f && lstat(f, &st) != 0; i++) {
		if (i == WAIT_POLLS)
			return 15;
		nap();
	}
	return 0;
}

static int reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The next fork's pid: last + 1, unless another process forks between. */
static int set_last_pid(pid_t last)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)last);
	int rc = write(fd, buf, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

static int run(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: producer_pidreuse KA KB [after|during|early]\n");
		return 2;
	}
	uint64_t ka = strtoull(argv[1], NULL, 10), kb = strtoull(argv[2], NULL, 10);
	const char *mode = argc == 4 ? argv[3] : "after";
	bool during = !strcmp(mode, "during"), early = !strcmp(mode, "early");
	bool orphan = !strcmp(mode, "orphan");
	if (!during && !early && !orphan && strcmp(mode, "after"))
		return 2;
	const char *dir = getenv("ADA_ARENA_DIR");
	if (!dir)
		return 2;
	int ready[2], go[2];
	if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0)
		return 4;
	if (early) {
		int rc = stop_recorder();
		if (rc)
			return rc;
	}
	pid_t a = orphan ? orphan_reaped() : fork();
	if (a < 0)
		return 4;
	if (a == 0) {
		close(ready[0]);
		close(go[1]);
		_exit(during ? emit_held(ka, ready[1], go[0]) : emit(1, ka));
	}
	close(go[0]);
	if (during) {
		char c;
		if (read(ready[0], &c, 1) != 1)
			return 5;
		int rc = stop_recorder();
		if (rc)
			return rc;
		close(go[1]); /* A may end now */
	}
	if (!orphan && (wait_past_tick_of(a) != 0 || reap(a) != 0))
		return 5;
	printf("pid %d\n", (int)a);
	fflush(stdout);
	char ring[4096];
	snprintf(ring, sizeof(ring), "%s/%d.ring", dir, (int)a);
	struct stat st;
	if (!during && !early && !orphan && !wait_gone(ring)) {
		/* The recorder finished A when it removed A's arena. */
		fprintf(stderr, "producer_pidreuse: %s never removed\n", ring);
		return 6;
	}
	if ((during || early) && lstat(ring, &st) != 0) {
		fprintf(stderr, "producer_pidreuse: %s gone while the recorder is stopped\n", ring);
		return 6;
	}
	/* Another process may fork between the write and ours: try again. A
	 * child that did not get pid A exits untraced. */
	for (int tries = 0; tries < 200; tries++) {
		if (set_last_pid(a - 1) != 0) {
			fprintf(stderr,
			        "producer_pidreuse: cannot write ns_last_pid (%s): skipped\n",
			        strerror(errno));
			cont_recorder();
			return 77;
		}
		pid_t b = fork();
		if (b < 0)
			return 4;
		if (b == 0) {
			if (getpid() != a)
				_exit(0);
			_exit(early ? emit_stay(kb, ready[1], ring) : emit(2, kb));
		}
		if (b == a && early) {
			char c;
			if (read(ready[0], &c, 1) != 1)
				return 5;
			cont_recorder(); /* the recorder finishes A; then B ends */
		}
		int rc = reap(b);
		if (rc != 0) {
			fprintf(stderr, "producer_pidreuse: child B exited with %d\n", rc);
			cont_recorder();
			return 5;
		}
		if (b == a) {
			if (during)
				cont_recorder();
			return hold();
		}
	}
	cont_recorder();
	fprintf(stderr, "producer_pidreuse: other processes took pid %d 200 times: skipped\n",
	        (int)a);
	return 77;
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);
	cont_recorder(); /* on every way out: never leave it stopped */
	return rc;
}
