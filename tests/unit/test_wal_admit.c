/*
 * Who may join a recording (src/recorder/arena_check.c): the ppid parsed
 * from /proc/PID/stat text, and the walk up the ancestors to the recorder
 * over a made-up process table. The case that refused a real child in
 * fork-heavy runs: a read of /proc/PID/stat racing the parent's wait,
 * which the kernel answers with ppid 0 once the task is released; that
 * child is gone, not a stranger. And the pids the recorder reaped before
 * their arena was admitted: kept until admitted or a scan passed. And the
 * shortcut of a forked child: a parent the recorder records, alive, ends
 * the walk (real processes).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "arena_internal.h"
#include "recorder_internal.h"

static void test_stat_ppid(void **state)
{
	(void)state;
	assert_int_equal(wal_stat_ppid("4777 (probe) R 4776 4751 15085 0 -1 4194368"), 4776);
	/* A zombie not yet reaped still names its parent. */
	assert_int_equal(wal_stat_ppid("4777 (probe) Z 4776 4751 15085 0 -1"), 4776);
	/* The comm may hold ") " and look like fields. */
	assert_int_equal(wal_stat_ppid("12 (a) R 99 (b) S 77 1 1 0 -1"), 77);
	/* Reaped: state X, with or without the parent it had. */
	assert_int_equal(wal_stat_ppid("2511 (forkexec) X 0 0 0 0 -1 4194372"), -1);
	assert_int_equal(wal_stat_ppid("2511 (forkexec) X 2484 2484 15085 0 -1"), -1);
	/* Read while the reap released it: Z with ppid 0 (no pgid, no sid). */
	assert_int_equal(wal_stat_ppid("2511 (forkexec) Z 0 0 0 0 -1 4194372"), -1);
	/* Alive with its parent outside our pid namespace: 0, not gone. */
	assert_int_equal(wal_stat_ppid("40 (sh) S 0 40 40 0 -1"), 0);
	assert_int_equal(wal_stat_ppid(""), -1);
	assert_int_equal(wal_stat_ppid("12 (noclose R 1"), -1);
	assert_int_equal(wal_stat_ppid("12 (x) R"), -1);
}

/* A made-up process table: stat text per pid, NULL for no such pid. */
struct table {
	pid_t pid[8];
	const char *stat[8];
	int reads;
};

static pid_t table_ppid(pid_t pid, void *arg)
{
	struct table *t = arg;
	t->reads++;
	for (int i = 0; i < 8; i++)
		if (t->pid[i] == pid && t->stat[i])
			return wal_stat_ppid(t->stat[i]);
	return -1;
}

enum { RECORDER = 100, PROGRAM = 101, CHILD = 102, GRANDCHILD = 103, STRANGER = 200 };

static void test_chain(void **state)
{
	(void)state;
	struct table t = {
	    .pid = {PROGRAM, CHILD, GRANDCHILD, STRANGER, 1, 150},
	    .stat = {"101 (prog) S 100 1 1", "102 (prog) R 101 1 1", "103 (prog) R 102 1 1",
	             "200 (x) S 150 1 1", "1 (init) S 0 1 1", "150 (bash) S 1 1 1"},
	};
	assert_int_equal(wal_ppid_chain(PROGRAM, RECORDER, table_ppid, &t), 1);
	assert_int_equal(wal_ppid_chain(CHILD, RECORDER, table_ppid, &t), 1);
	assert_int_equal(wal_ppid_chain(GRANDCHILD, RECORDER, table_ppid, &t), 1);
	/* A stranger's chain ends at pid 1. */
	assert_int_equal(wal_ppid_chain(STRANGER, RECORDER, table_ppid, &t), -2);
	/* A pid nobody holds: gone. */
	assert_int_equal(wal_ppid_chain(300, RECORDER, table_ppid, &t), 0);
}

/* The child's stat read as the program's wait4 released it: gone (read
 * what it left), never "not a descendant". */
static void test_chain_child_reaped_during_read(void **state)
{
	(void)state;
	struct table t = {
	    .pid = {PROGRAM, CHILD},
	    .stat = {"101 (prog) S 100 1 1", "102 (prog) Z 0 0 0 0 -1"},
	};
	assert_int_equal(wal_ppid_chain(CHILD, RECORDER, table_ppid, &t), 0);
	t.stat[1] = "102 (prog) X 0 0 0 0 -1";
	assert_int_equal(wal_ppid_chain(CHILD, RECORDER, table_ppid, &t), 0);
}

/* An ancestor released under the walk: -1, for the caller to walk again
 * (its children were reparented to the recorder, a subreaper). */
static void test_chain_parent_reaped_during_read(void **state)
{
	(void)state;
	struct table t = {
	    .pid = {PROGRAM, CHILD, GRANDCHILD},
	    .stat = {"101 (prog) S 100 1 1", "102 (prog) Z 0 0 0 0 -1", "103 (prog) R 102 1 1"},
	};
	assert_int_equal(wal_ppid_chain(GRANDCHILD, RECORDER, table_ppid, &t), -1);
	t.stat[2] = "103 (prog) R 100 1 1";
	assert_int_equal(wal_ppid_chain(GRANDCHILD, RECORDER, table_ppid, &t), 1);
}

/* A live process whose parent is outside our pid namespace (ppid 0) is
 * a stranger, as is a chain that loops (a made-up table only) or is
 * longer than any tree we made: bounded. */
static void test_chain_strangers(void **state)
{
	(void)state;
	struct table t = {
	    .pid = {STRANGER, 300, 301},
	    .stat = {"200 (x) S 0 1 1", "300 (x) S 301 1 1", "301 (x) S 300 1 1"},
	};
	assert_int_equal(wal_ppid_chain(STRANGER, RECORDER, table_ppid, &t), -2);
	t.reads = 0;
	assert_int_equal(wal_ppid_chain(300, RECORDER, table_ppid, &t), -2);
	assert_int_equal(t.reads, 4096);
}

/* The pids the recorder reaped before their arena was admitted
 * (struct wal_reaped). Each entry was kept for the whole recording and
 * applied to any arena of its pid: one per orphan reaped, and a later
 * process given a reaped pid (the kernel reuses pids: 32 768 by default)
 * was taken as reaped the moment it was admitted, with the earlier
 * process's status, and finished at once. Times are the ctimes' clock
 * (CLOCK_REALTIME_COARSE), in ns. */
static void test_reaped(void **state)
{
	(void)state;
	struct wal_reaped e = {0};
	int st = -1;
	/* Reaped at 100, its arena (named at 50) admitted: taken once. */
	assert_int_equal(wal_reaped_add(&e, 500, 7 << 8, 100), 0);
	assert_true(wal_reaped_has(&e, 500, 50));
	assert_true(wal_reaped_take(&e, 500, 50, &st));
	assert_int_equal(st, 7 << 8);
	assert_false(wal_reaped_has(&e, 500, INT64_MIN));
	assert_false(wal_reaped_take(&e, 500, 50, &st));
	/* An arena named after the reap, or within its clock tick (ctimes
	 * are coarse), is taken for a later process's: not the reaped one's,
	 * and the entry goes with its admission. */
	st = -1;
	assert_int_equal(wal_reaped_add(&e, 501, 3 << 8, 100), 0);
	assert_false(wal_reaped_has(&e, 501, 101));
	assert_false(wal_reaped_has(&e, 501, 100));
	assert_true(wal_reaped_has(&e, 501, 99));
	assert_false(wal_reaped_take(&e, 501, 100, &st));
	assert_int_equal(st, -1);
	assert_false(wal_reaped_has(&e, 501, INT64_MIN));
	/* Reaped with no arena (not traced): the first scan that began after
	 * the reap forgets it once it read the whole directory... */
	uint64_t s1 = wal_reaped_scan_begin(&e);
	assert_int_equal(wal_reaped_add(&e, 600, 1, 200), 0); /* during scan s1 */
	wal_reaped_scanned(&e, s1);
	assert_true(wal_reaped_has(&e, 600, 0)); /* s1 may have read that name first */
	uint64_t s2 = wal_reaped_scan_begin(&e);
	assert_true(wal_reaped_has(&e, 600, 0)); /* ... not while it reads */
	assert_int_equal(wal_reaped_add(&e, 601, 2, 300), 0);
	wal_reaped_scanned(&e, s2);
	assert_false(wal_reaped_has(&e, 600, INT64_MIN));
	assert_true(wal_reaped_has(&e, 601, 0));
	assert_false(wal_reaped_take(&e, 600, 0, &st));
	/* A pid reaped twice (reused in between): the later reap decides. */
	assert_int_equal(wal_reaped_add(&e, 601, 4, 400), 0);
	assert_true(wal_reaped_take(&e, 601, 350, &st));
	assert_int_equal(st, 4);
	assert_false(wal_reaped_has(&e, 601, INT64_MIN));
	/* Bounded by the reaps between two scans, not by the recording: a
	 * million orphans reaped, a scan every hundred. */
	size_t most = 0;
	for (int i = 0; i < 1000000; i++) {
		if (i % 100 == 0)
			wal_reaped_scanned(&e, wal_reaped_scan_begin(&e));
		assert_int_equal(wal_reaped_add(&e, 1000 + i % 30000, i, i), 0);
		most = e.cap > most ? e.cap : most;
	}
	assert_true(most <= 256);
	wal_reaped_free(&e);
	assert_int_equal(e.n, 0);
}

/* C, not our descendant (its parent X exited: C went to init or a
 * subreaper above us), and G, C's child: the walk from G never reaches
 * us. Recorded and alive, C vouches for G under ada record (one read:
 * check_recorded_alive); not when attached, not once marked vanished,
 * not once it exited (its pidfd readable). */
static void test_recorded_parent(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t x = fork();
	assert_true(x >= 0);
	if (x == 0) {
		if (fork() == 0) {
			pid_t pids[2] = {getpid(), fork()};
			alarm(20); /* both gone even when an assertion stops the test */
			if (pids[1] == 0)
				for (;;)
					pause();
			(void)!write(fds[1], pids, sizeof(pids));
			for (;;)
				pause();
		}
		_exit(0);
	}
	assert_int_equal(waitpid(x, NULL, 0), x);
	pid_t pids[2];
	assert_int_equal(read(fds[0], pids, sizeof(pids)), (ssize_t)sizeof(pids));
	pid_t c = pids[0], g = pids[1];
	assert_true(c > 0 && g > 0);
	close(fds[0]);
	close(fds[1]);
	struct ada_recorder *r = calloc(1, sizeof(*r));
	struct wal_proc *p = calloc(1, sizeof(*p)), *procs[1] = {p};
	assert_non_null(r);
	assert_non_null(p);
	p->pid = c;
	p->pidfd = (int)syscall(SYS_pidfd_open, c, 0);
	assert_true(p->pidfd >= 0);
	r->procs = procs;
	r->nprocs = 1;
	char why[256];
	assert_int_equal(wal_pid_check(r, g, 0, why, sizeof(why)), 1);
	p->vanished = true; /* its pidfd may be a later holder's */
	assert_int_equal(wal_pid_check(r, g, 0, why, sizeof(why)), -1);
	p->vanished = false;
	r->o.attached = true; /* an orphan there went to init */
	r->main_pid = getpid();
	assert_int_equal(wal_pid_check(r, g, 0, why, sizeof(why)), -1);
	r->o.attached = false;
	r->main_pid = 0;
	kill(c, SIGKILL);
	struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(wal_pid_check(r, g, 0, why, sizeof(why)), -1);
	kill(g, SIGKILL);
	close(p->pidfd);
	free(p);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stat_ppid),
	    cmocka_unit_test(test_chain),
	    cmocka_unit_test(test_chain_child_reaped_during_read),
	    cmocka_unit_test(test_chain_parent_reaped_during_read),
	    cmocka_unit_test(test_chain_strangers),
	    cmocka_unit_test(test_reaped),
	    cmocka_unit_test(test_recorded_parent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
