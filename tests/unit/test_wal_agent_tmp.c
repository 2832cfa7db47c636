/*
 * The sweep of a finished process's pid_N/ for its agent's unfinished
 * agent.json temporaries (src/recorder/agent_tmp.c): regular files of
 * exactly the agent's name are removed; entries of that name that are no
 * regular file (a link, a directory: planted) are left and counted; and
 * a directory the target filled with names is read up to the cap only,
 * which is said (capped), not walked to its end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs.h"
#include "recorder_internal.h"

static char dir[64];
static int dfd = -1;

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_agent_tmp.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void plant(const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static void plant_others(unsigned n)
{
	char name[32];
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "other_%u", i);
		plant(name);
	}
}

static void test_sweep_removes_and_counts(void **state)
{
	(void)state;
	struct wal_agent_tmp_sweep s;
	plant("agent.json.tmp.0123456789abcdef");
	plant("agent.json.tmp.0123456789abcdee");
	plant("agent.json.tmp.0123"); /* not the agent's name */
	assert_int_equal(symlinkat("/etc/passwd", dfd, "agent.json.tmp.fedcba9876543210"), 0);
	assert_int_equal(mkdirat(dfd, "agent.json.tmp.00000000000000aa", 0700), 0);
	plant_others(20);
	wal_agent_tmp_sweep_dir(dfd, ADA_FS_WALK_MAX_ENTRIES, &s);
	assert_int_equal(s.removed, 2);
	assert_int_equal(s.planted, 2);
	assert_false(s.capped);
	assert_int_equal(faccessat(dfd, "agent.json.tmp.0123456789abcdef", F_OK, 0), -1);
	assert_int_equal(faccessat(dfd, "agent.json.tmp.0123", F_OK, 0), 0);
	assert_int_equal(
	    faccessat(dfd, "agent.json.tmp.fedcba9876543210", F_OK, AT_SYMLINK_NOFOLLOW), 0);
}

/* More entries than the cap: the sweep stops and says so. */
static void test_sweep_capped(void **state)
{
	(void)state;
	struct wal_agent_tmp_sweep s;
	plant_others(200);
	wal_agent_tmp_sweep_dir(dfd, 50, &s);
	assert_true(s.capped);
	/* Exactly at the cap ("." and ".." counted): not capped. */
	lseek(dfd, 0, SEEK_SET);
	wal_agent_tmp_sweep_dir(dfd, 202, &s);
	assert_false(s.capped);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sweep_removes_and_counts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sweep_capped, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
