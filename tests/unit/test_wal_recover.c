/*
 * `ada recover` (src/recorder/recover.c) on a session whose recorder was
 * killed between a thread directory's mkdir and its index file's
 * creation: thread_K/ is there, empty. Recover takes the session (the
 * manifest is marked recovered), lists no file for that thread and sorts
 * nothing: qsort's array is NULL then (the undefined-behaviour build
 * checks). No arena: the manifest names none.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
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

#include "manifest.h"
#include "recorder_internal.h"

#define RECOVER_PID 4194301 /* past the default pid_max: no such process */

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_recover.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_empty_thread_dir(void **state)
{
	(void)state;
	char pid_dir[128], tdir[160];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, RECOVER_PID);
	snprintf(tdir, sizeof(tdir), "%s/thread_0", pid_dir);
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	assert_int_equal(mkdir(tdir, 0700), 0);
	json_t *m = ada_manifest_new(RECOVER_PID);
	json_object_set_new(m, "state", json_string("recording"));
	json_object_set_new(m, "clock", json_pack("{s:s}", "source", "clock_gettime"));
	assert_int_equal(ada_manifest_write(pid_dir, m), 0);
	json_decref(m);

	struct ada_recover_report rep = {0};
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.files, 0);
	assert_int_equal(rep.events_on_disk, 0);
	json_t *man = NULL;
	assert_int_equal(ada_manifest_read(pid_dir, &man), 0);
	assert_string_equal(ada_manifest_state(man), "recovered");
	json_decref(man);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_empty_thread_dir, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
