/*
 * Arena directories whose recorder died (src/recorder/orphans.c), in a
 * private directory standing for /dev/shm: one whose recorder is gone is
 * recovered into its session and removed (the arena files no manifest
 * named counted); one whose recorder runs, one marked manual (unless
 * `all`), one with another mode, and one whose record names another
 * session are left alone; one a live process holds a file of is left and
 * told (its holder named), then taken once that process is gone; one
 * without an owner record, old, holding only arenas of processes that
 * are gone, is removed and told, and left when any of that is not so;
 * a manual one of a dead recorder loses only its arena pool's files
 * (told, counted); and the lock ada recover and the scan share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder.h"

#define SESSION_NAME "session_20260101_000000"

struct fixture {
	char shm[64], out[64], session[128], arena[192];
	unsigned calls, walks;
	unsigned outcomes[ADA_ORPHAN_POOL_SWEPT + 1];
	pid_t holders;
	struct ada_orphan last;
};

static void found(void *arg, const struct ada_orphan *o)
{
	struct fixture *f = arg;
	f->calls++;
	f->last = *o;
	if (o->outcome <= ADA_ORPHAN_POOL_SWEPT)
		f->outcomes[o->outcome]++;
	if (o->outcome == ADA_ORPHAN_IN_USE)
		f->holders = o->holder;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	strcpy(f->shm, "/tmp/ada_orph_shm.XXXXXX");
	strcpy(f->out, "/tmp/ada_orph_out.XXXXXX");
	if (!mkdtemp(f->shm) || !mkdtemp(f->out))
		return -1;
	snprintf(f->session, sizeof(f->session), "%s/%s", f->out, SESSION_NAME);
	snprintf(f->arena, sizeof(f->arena), "%s/ada-%s-AbC123", f->shm, SESSION_NAME);
	if (mkdir(f->session, 0700) || mkdir(f->arena, 0700))
		return -1;
	int fd = open(f->arena, O_RDONLY | O_DIRECTORY);
	int a = openat(fd, "4242.ring", O_CREAT | O_WRONLY, 0600);
	int b = openat(fd, "shm.budget", O_CREAT | O_WRONLY, 0600);
	close(a);
	close(b);
	close(fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", f->shm, f->out);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* The record as a recorder that has exited wrote it (manual: under
 * ADA_NO_RECOVER_ORPHANS). */
static void mark_dead_at(const char *arena, bool manual, const char *session)
{
	pid_t c = fork();
	if (c == 0) {
		if (manual)
			setenv("ADA_NO_RECOVER_ORPHANS", "1", 1);
		_exit(ada_orphan_mark(arena, session) == 0 ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void mark_dead(struct fixture *f, bool manual, const char *session)
{
	mark_dead_at(f->arena, manual, session);
}

static unsigned scan(struct fixture *f, bool all)
{
	struct ada_orphan_opts o = {
	    .shm_dir = f->shm, .all = all, .found = found, .arg = f, .proc_walks = &f->walks};
	unsigned taken = 99;
	assert_int_equal(ada_orphans_recover(&o, &taken), 0);
	return taken;
}

static bool exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

static void test_recovered_and_removed(void **state)
{
	struct fixture *f = *state;
	mark_dead(f, false, f->session);
	assert_int_equal(scan(f, false), 1);
	assert_int_equal(f->calls, 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_RECOVERED);
	assert_int_equal(f->last.unread, 1); /* 4242.ring: no pid_4242 manifest named it */
	assert_false(exists(f->arena));
	assert_int_equal(scan(f, false), 0); /* nothing left to take */
}

static void test_live_recorder_left(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(ada_orphan_mark(f->arena, f->session), 0); /* this process: alive */
	assert_int_equal(scan(f, true), 0);
	assert_int_equal(f->calls, 0);
	assert_true(exists(f->arena));
}

static void test_manual_only_by_hand(void **state)
{
	struct fixture *f = *state;
	mark_dead(f, true, f->session);
	assert_int_equal(scan(f, false), 0);
	assert_int_equal(f->calls, 0);
	assert_true(exists(f->arena));
	assert_int_equal(scan(f, true), 1);
	assert_false(exists(f->arena));
}

/* Files named in the arena directory d, made empty (or a link to the
 * session when link). */
static void make_in(const char *d, const char *name, const char *link)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", d, name);
	if (link) {
		assert_int_equal(symlink(link, path), 0);
		return;
	}
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static bool exists_in(const char *d, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", d, name);
	return exists(path);
}

/* A killed recorder's manual directory (a test's teardown SIGKILLs the
 * recorder under ADA_NO_RECOVER_ORPHANS): its arena pool's files hold no
 * events and are removed and told, counted, while the arena and the
 * record stay for `ada recover --all`; a link and a name that is no
 * pool's are not touched. The next scan has nothing to do with it (no
 * walk of /proc); --all then takes the rest, the link's target kept. */
static void test_manual_pool_swept(void **state)
{
	struct fixture *f = *state;
	make_in(f->arena, "pool.0", NULL);
	make_in(f->arena, "pool.7", NULL);
	make_in(f->arena, "pool.8", NULL); /* no pool's name (8 places) */
	make_in(f->arena, "pool.1", f->session);
	mark_dead(f, true, f->session);
	assert_int_equal(scan(f, false), 0);
	assert_int_equal(f->calls, 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_POOL_SWEPT);
	assert_int_equal(f->last.pooled, 2);
	assert_false(exists_in(f->arena, "pool.0") || exists_in(f->arena, "pool.7"));
	assert_true(exists_in(f->arena, "pool.8") && exists_in(f->arena, "pool.1"));
	assert_true(exists_in(f->arena, "4242.ring") && exists_in(f->arena, "recorder"));
	unsigned walks = f->walks;
	assert_int_equal(scan(f, false), 0);
	assert_int_equal(f->calls, 1);
	assert_int_equal(f->walks, walks);
	assert_int_equal(scan(f, true), 1);
	assert_false(exists(f->arena));
	assert_true(exists(f->session));
}

/* A recorder killed with its pool full: the scan recovers the directory
 * and says how many pool files went with it. */
static void test_pool_counted_recovered(void **state)
{
	struct fixture *f = *state;
	make_in(f->arena, "pool.3", NULL);
	mark_dead(f, false, f->session);
	assert_int_equal(scan(f, false), 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_RECOVERED);
	assert_int_equal(f->last.pooled, 1);
	assert_false(exists(f->arena));
}

static void test_not_private_left(void **state)
{
	struct fixture *f = *state;
	mark_dead(f, false, f->session);
	assert_int_equal(chmod(f->arena, 0750), 0);
	assert_int_equal(scan(f, true), 0);
	assert_int_equal(f->calls, 0);
	assert_true(exists(f->arena));
}

static void test_other_session_left(void **state)
{
	struct fixture *f = *state;
	char other[192];
	snprintf(other, sizeof(other), "%s/session_20250101_000000", f->out);
	mark_dead(f, false, other); /* not the session the directory's name says */
	assert_int_equal(scan(f, true), 0);
	assert_int_equal(f->calls, 0); /* young: a recorder may still be writing it */
	assert_true(exists(f->arena));
}

static void test_held_then_taken(void **state)
{
	struct fixture *f = *state;
	mark_dead(f, false, f->session);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t h = fork();
	if (h == 0) {
		char path[256];
		snprintf(path, sizeof(path), "%s/4242.ring", f->arena);
		int fd = open(path, O_RDONLY);
		(void)!write(p[1], "x", 1);
		pause();
		close(fd);
		_exit(0);
	}
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(scan(f, false), 0);
	assert_int_equal(f->calls, 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_IN_USE);
	assert_int_equal(f->last.holder, h);
	assert_true(exists(f->arena));
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(scan(f, false), 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_RECOVERED);
	assert_false(exists(f->arena));
}

/* The shm directory reached through a link (/dev/shm -> /run/shm): a
 * process holding a file of the directory is still its holder (the
 * scan compares real paths), so the directory is left, not taken. */
static void test_held_through_link(void **state)
{
	struct fixture *f = *state;
	mark_dead(f, false, f->session);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t h = fork();
	if (h == 0) {
		char path[256];
		snprintf(path, sizeof(path), "%s/4242.ring", f->arena);
		int fd = open(path, O_RDONLY);
		(void)!write(p[1], "x", 1);
		pause();
		close(fd);
		_exit(0);
	}
	char c, link[80];
	assert_int_equal(read(p[0], &c, 1), 1);
	snprintf(link, sizeof(link), "%s.link", f->out);
	assert_int_equal(symlink(f->shm, link), 0);
	struct ada_orphan_opts o = {
	    .shm_dir = link, .found = found, .arg = f, .proc_walks = &f->walks};
	unsigned taken = 99;
	int rc = ada_orphans_recover(&o, &taken);
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	unlink(link);
	close(p[0]);
	close(p[1]);
	assert_int_equal(rc, 0);
	assert_int_equal(taken, 0);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_IN_USE);
	assert_int_equal(f->last.holder, h);
	assert_true(exists(f->arena));
}

/* A pid no process has (a child that has been reaped). */
static pid_t dead_pid(void)
{
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	assert_int_equal(waitpid(c, NULL, 0), c);
	return c;
}

/* The arena directory without an owner record, holding the arena name
 * (and the budget file), made old enough for the scan to look at it
 * (old: mtime two minutes back). */
static void unmarked(struct fixture *f, const char *name, bool old)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/4242.ring", f->arena);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", f->arena, name);
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	struct timespec t[2] = {{.tv_sec = time(NULL) - 120}, {.tv_sec = time(NULL) - 120}};
	if (old)
		assert_int_equal(utimensat(AT_FDCWD, f->arena, t, 0), 0);
}

/* What a recording's end that could not empty its directory leaves (an
 * arena that landed after it, or one it could not list): no record, an
 * arena whose process is gone. Nobody can read or recover it: removed,
 * told with the count. */
static void test_unmarked_dead_removed(void **state)
{
	struct fixture *f = *state;
	char name[64];
	snprintf(name, sizeof(name), "%d.ring", (int)dead_pid());
	unmarked(f, name, true);
	assert_int_equal(scan(f, false), 0); /* nothing recovered into a session */
	assert_int_equal(f->calls, 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_REMOVED);
	assert_int_equal(f->last.unread, 1);
	assert_false(exists(f->arena));
}

/* ... the same, half made (the temporary name of env.c) */
static void test_unmarked_tmp_removed(void **state)
{
	struct fixture *f = *state;
	char name[64];
	snprintf(name, sizeof(name), "%d.12345.ring.tmp.5f8263067d784ead", (int)dead_pid());
	unmarked(f, name, true);
	scan(f, false);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_REMOVED);
	assert_false(exists(f->arena));
}

/* An arena whose pid /proc lists (here: this process's), a name that is
 * not an arena's, or a directory younger than a minute: left. */
static void test_unmarked_alive_left(void **state)
{
	struct fixture *f = *state;
	char name[64];
	snprintf(name, sizeof(name), "%d.ring", (int)getpid());
	unmarked(f, name, true);
	scan(f, true);
	assert_int_equal(f->calls, 1);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_UNKNOWN);
	assert_true(exists(f->arena));
}

static void test_unmarked_stranger_left(void **state)
{
	struct fixture *f = *state;
	char name[64];
	snprintf(name, sizeof(name), "%d.ring", (int)dead_pid());
	unmarked(f, name, false);
	unmarked(f, "notes.txt", true);
	scan(f, true);
	assert_int_equal(f->last.outcome, ADA_ORPHAN_UNKNOWN);
	assert_true(exists(f->arena));
}

static void test_unmarked_young_left(void **state)
{
	struct fixture *f = *state;
	char name[64];
	snprintf(name, sizeof(name), "%d.ring", (int)dead_pid());
	unmarked(f, name, false);
	scan(f, true);
	assert_int_equal(f->calls, 0);
	assert_true(exists(f->arena));
}

/* A process that opens path/4242.ring in each of the n directories and
 * waits (killed by the test); returns once they are open. */
static pid_t hold_files(char (*dirs)[192], int n)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t h = fork();
	if (h == 0) {
		for (int i = 0; i < n; i++) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/4242.ring", dirs[i]);
			if (open(path, O_RDONLY) < 0)
				_exit(1);
		}
		(void)!write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	close(p[1]); /* a child that failed: end of file, not a wait */
	char c;
	ssize_t got = read(p[0], &c, 1);
	close(p[0]);
	if (got != 1)
		kill(h, SIGKILL);
	assert_int_equal(got, 1);
	return h;
}

/* Directories that stay cost one walk of /proc between them, not one
 * each, and are decided as one at a time was: two of a dead recorder a
 * live process holds (IN_USE, that process named), one without a record,
 * old, held (left without a word), one without a record holding a dead
 * process's arena (removed), and one whose recorder runs (no walk). */
static void test_one_walk_for_all(void **state)
{
	struct fixture *f = *state;
	char d[5][192];
	for (int i = 0; i < 5; i++) {
		snprintf(d[i], sizeof(d[i]), "%s/ada-%s-Walk0%d", f->shm, SESSION_NAME, i);
		assert_int_equal(mkdir(d[i], 0700), 0);
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%d.ring", d[i], i == 3 ? (int)dead_pid() : 4242);
		int fd = open(path, O_CREAT | O_WRONLY, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	mark_dead_at(d[0], false, f->session);
	mark_dead_at(d[1], false, f->session);
	assert_int_equal(ada_orphan_mark(d[4], f->session), 0); /* this process: alive */
	struct timespec t[2] = {{.tv_sec = time(NULL) - 120}, {.tv_sec = time(NULL) - 120}};
	assert_int_equal(utimensat(AT_FDCWD, d[2], t, 0), 0);
	assert_int_equal(utimensat(AT_FDCWD, d[3], t, 0), 0);
	pid_t h = hold_files(d, 3);
	struct ada_orphan_opts o = {
	    .shm_dir = f->shm, .found = found, .arg = f, .proc_walks = &f->walks};
	unsigned taken = 99;
	int rc = ada_orphans_recover(&o, &taken);
	kill(h, SIGKILL); /* before any assertion: never left behind */
	waitpid(h, NULL, 0);
	assert_int_equal(rc, 0);
	assert_int_equal(taken, 0);
	assert_int_equal(f->walks, 1);
	assert_int_equal(f->calls, 3);
	assert_int_equal(f->outcomes[ADA_ORPHAN_IN_USE], 2);
	assert_int_equal(f->holders, h);
	assert_int_equal(f->outcomes[ADA_ORPHAN_REMOVED], 1);
	assert_false(exists(d[3]));
	for (int i = 0; i < 5; i++)
		assert_true(i == 3 || exists(d[i]));
}

/* ada recover and the scan exclude each other on the session, also when
 * recover is named a pid directory of it. */
static void test_recover_lock(void **state)
{
	struct fixture *f = *state;
	char pid_dir[256];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_7", f->session);
	int lock = -1;
	assert_int_equal(ada_recover_lock(pid_dir, &lock), 0);
	int fd = open(f->session, O_RDONLY | O_DIRECTORY); /* another open file: another lock */
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	close(lock);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
}

int main(void)
{
	unsetenv("ADA_NO_RECOVER_ORPHANS"); /* the suite sets it; the record must not say manual */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_recovered_and_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_live_recorder_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_manual_only_by_hand, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_manual_pool_swept, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_counted_recovered, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_private_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_other_session_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_held_then_taken, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_held_through_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recover_lock, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unmarked_dead_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unmarked_tmp_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unmarked_alive_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unmarked_stranger_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unmarked_young_left, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_walk_for_all, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
