/*
 * Spare thread directories (src/recorder/spares.c): the maker makes
 * .thread_spares/s<N>/index.atf ahead; a spare moved into place is a
 * thread_K/ (0700) with an empty index.atf (0600) whose descriptors the
 * caller gets; none is made before two threads found none (a one-thread
 * program makes none); a name already there keeps the spare for the next thread;
 * at the stop every spare left is removed with .thread_spares; the sweep
 * `ada recover` runs removes what a killed recorder left and nothing else
 * (a link planted there stays, its target untouched); a .thread_spares
 * planted before the start turns the pool off (counted), never used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder.h"
#include "spares.h"

static char dir[128];
static int sfd = -1;

static int setup(void **state)
{
	(void)state;
	const char *base = getenv("ADA_TEST_WAL_DIR");
	snprintf(dir, sizeof(dir), "%s/ada_spares.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	sfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return sfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[192];
	close(sfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Waits (bounded: 20 s) until the maker has made n spares; the counts'
 * values are asserted, never how long they took. */
static void wait_made(struct wal_spares *s, uint64_t n)
{
	struct wal_spares_counts c;
	for (int i = 0; i < 20000; i++) {
		wal_spares_counts(s, &c);
		if (c.made >= n)
			return;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	fail_msg("the maker made %llu spares, not %llu", (unsigned long long)c.made,
	         (unsigned long long)n);
}

/* The first threads find none: the maker starts after SPARES_FIRST (2). */
static void prime(struct wal_spares *s, int pfd)
{
	int dfd, ffd;
	for (int i = 0; i < 2; i++)
		assert_int_equal(wal_spares_use(s, pfd, "thread_0", &dfd, &ffd), -EAGAIN);
}

static mode_t mode_at(const char *rel, off_t *size)
{
	struct stat st;
	if (fstatat(sfd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	if (size)
		*size = st.st_size;
	return st.st_mode;
}

static void test_used_kept_removed(void **state)
{
	(void)state;
	struct wal_spares *s;
	assert_int_equal(wal_spares_new(sfd, &s), 0);
	assert_int_equal(mkdirat(sfd, "pid_1", 0700), 0);
	int pfd = openat(sfd, "pid_1", O_RDONLY | O_DIRECTORY);
	assert_true(pfd >= 0);
	/* Nothing made before it is wanted: a one-thread program gets none. */
	struct wal_spares_counts c;
	wal_spares_counts(s, &c);
	assert_int_equal(c.made, 0);
	assert_int_equal(mode_at(WAL_SPARES_DIR, NULL), 0);
	prime(s, pfd);
	wait_made(s, 2);

	int dfd = -1, ffd = -1;
	assert_int_equal(wal_spares_use(s, pfd, "thread_1", &dfd, &ffd), 0);
	off_t size = -1;
	mode_t m = mode_at("pid_1/thread_1", NULL);
	assert_true(S_ISDIR(m) && (m & 07777) == 0700);
	m = mode_at("pid_1/thread_1/index.atf", &size);
	assert_true(S_ISREG(m) && (m & 07777) == 0600);
	assert_int_equal(size, 0);
	/* The descriptors are the files now named so. */
	struct stat a, b;
	assert_int_equal(fstat(ffd, &a), 0);
	assert_int_equal(fstatat(sfd, "pid_1/thread_1/index.atf", &b, 0), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	assert_int_equal(fstat(dfd, &a), 0);
	assert_int_equal(fstatat(sfd, "pid_1/thread_1", &b, 0), 0);
	assert_true(a.st_ino == b.st_ino);
	assert_int_equal(write(ffd, "x", 1), 1);
	close(ffd);
	close(dfd);

	/* A name already there: refused, the spare kept for the next (two
	 * were made, one used: one is ready, whatever the maker does now). */
	assert_int_equal(mkdirat(pfd, "thread_2", 0700), 0);
	assert_int_equal(wal_spares_use(s, pfd, "thread_2", &dfd, &ffd), -EEXIST);
	wal_spares_counts(s, &c);
	assert_int_equal(c.taken_names, 1);
	assert_int_equal(c.used, 1);
	assert_int_equal(mode_at("pid_1/thread_2/index.atf", NULL), 0);
	assert_int_equal(wal_spares_use(s, pfd, "thread_3", &dfd, &ffd), 0);
	close(ffd);
	close(dfd);

	wal_spares_stop(s);
	wal_spares_counts(s, &c);
	assert_int_equal(c.used, 2);
	assert_int_equal(c.removed, c.made - c.used);
	assert_int_equal(c.left, 0);
	assert_int_equal(c.make_failed + c.move_failed, 0);
	assert_int_equal(mode_at(WAL_SPARES_DIR, NULL), 0);
	/* After the stop nothing is handed out: the caller makes its own. */
	assert_int_equal(wal_spares_use(s, pfd, "thread_4", &dfd, &ffd), -ENODEV);
	m = mode_at("pid_1/thread_1/index.atf", &size);
	assert_int_equal(size, 1);
	wal_spares_free(s);
	wal_spares_free(NULL);
	assert_int_equal(wal_spares_use(NULL, pfd, "thread_4", &dfd, &ffd), -ENODEV);
	close(pfd);
}

/* Threads that find the list empty are counted and make the target grow;
 * every use is one of the counts. */
static void test_counts_add_up(void **state)
{
	(void)state;
	struct wal_spares *s;
	assert_int_equal(wal_spares_new(sfd, &s), 0);
	assert_int_equal(mkdirat(sfd, "pid_2", 0700), 0);
	int pfd = openat(sfd, "pid_2", O_RDONLY | O_DIRECTORY);
	unsigned got = 0, none = 0;
	for (unsigned k = 0; k < 200; k++) {
		char name[32];
		int dfd, ffd;
		snprintf(name, sizeof(name), "thread_%u", k);
		int rc = wal_spares_use(s, pfd, name, &dfd, &ffd);
		if (rc == 0) {
			got++;
			close(dfd);
			close(ffd);
		} else {
			assert_int_equal(rc, -EAGAIN);
			none++;
		}
	}
	wal_spares_stop(s);
	struct wal_spares_counts c;
	wal_spares_counts(s, &c);
	assert_int_equal(c.used, got);
	assert_int_equal(c.empty, none);
	assert_int_equal(c.removed, c.made - c.used);
	assert_int_equal(mode_at(WAL_SPARES_DIR, NULL), 0);
	wal_spares_free(s);
	close(pfd);
}

static void put(const char *rel, const char *text)
{
	int fd = openat(sfd, rel, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	if (text)
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* What a killed recorder leaves: whole spares, one half made in new/, and
 * things that are not spares, which stay. */
static void test_sweep(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR, 0700), 0);
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR "/s1", 0700), 0);
	put(WAL_SPARES_DIR "/s1/index.atf", NULL);
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR "/new", 0700), 0);
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR "/new/s2", 0700), 0);
	unsigned removed, kept;
	wal_spares_sweep(sfd, &removed, &kept);
	assert_int_equal(removed, 2);
	assert_int_equal(kept, 0);
	assert_int_equal(mode_at(WAL_SPARES_DIR, NULL), 0);

	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR, 0700), 0);
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR "/s3", 0700), 0);
	put(WAL_SPARES_DIR "/s3/index.atf", "events"); /* not empty: not a spare */
	assert_int_equal(mkdirat(sfd, "elsewhere", 0700), 0);
	put("elsewhere/index.atf", NULL);
	assert_int_equal(symlinkat("../elsewhere", sfd, WAL_SPARES_DIR "/s4"), 0);
	put(WAL_SPARES_DIR "/s5", NULL); /* a file */
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR "/s6", 0700), 0);
	put(WAL_SPARES_DIR "/s6/index.atf", NULL);
	put(WAL_SPARES_DIR "/s6/other", NULL);
	wal_spares_sweep(sfd, &removed, &kept);
	assert_int_equal(removed, 0);
	assert_int_equal(kept, 4);
	assert_true(S_ISDIR(mode_at(WAL_SPARES_DIR, NULL)));
	assert_true(S_ISREG(mode_at("elsewhere/index.atf", NULL)));
	assert_true(S_ISREG(mode_at(WAL_SPARES_DIR "/s3/index.atf", NULL)));

	/* Nothing there: nothing to do, nothing kept. */
	wal_spares_sweep(sfd, &removed, &kept);
	assert_int_equal(removed, 0);
	assert_int_equal(kept, 4);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", dir, WAL_SPARES_DIR);
	assert_int_equal(system(cmd), 0);
	wal_spares_sweep(sfd, &removed, &kept);
	assert_int_equal(removed + kept, 0);
}

/* A link planted as .thread_spares: the maker cannot make its directory,
 * the pool is off and says why, the link and its target stay. */
static void test_planted_link(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(sfd, "target", 0700), 0);
	assert_int_equal(symlinkat("target", sfd, WAL_SPARES_DIR), 0);
	struct wal_spares *s;
	assert_int_equal(wal_spares_new(sfd, &s), 0);
	prime(s, sfd);
	struct wal_spares_counts c = {0};
	for (int i = 0; i < 20000 && !c.make_failed; i++) {
		wal_spares_counts(s, &c);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(c.make_failed, 1);
	assert_int_equal(c.make_err, -EEXIST);
	assert_int_equal(c.empty, 2);
	int dfd, ffd;
	assert_int_equal(wal_spares_use(s, sfd, "thread_1", &dfd, &ffd), -ENODEV);
	wal_spares_free(s);
	assert_true(S_ISLNK(mode_at(WAL_SPARES_DIR, NULL)));
	assert_true(S_ISDIR(mode_at("target", NULL)));
	assert_int_equal(mode_at("target/s0", NULL), 0);
}

/* ada recover removes them from a session and counts them. */
static void test_recover_report(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR, 0700), 0);
	assert_int_equal(mkdirat(sfd, WAL_SPARES_DIR "/s7", 0700), 0);
	put(WAL_SPARES_DIR "/s7/index.atf", NULL);
	struct ada_recover_report rep = {0};
	assert_int_equal(ada_wal_recover(dir, &rep), -ENOENT); /* no pid_N */
	assert_int_equal(rep.spares_removed, 1);
	assert_int_equal(rep.spares_kept, 0);
	assert_int_equal(mode_at(WAL_SPARES_DIR, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_used_kept_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_counts_add_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_planted_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recover_report, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
