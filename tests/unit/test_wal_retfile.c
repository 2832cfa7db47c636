/*
 * pid_N/.retention read back by `ada recover` (src/recorder/retention.c):
 * a thread on disk gets its retired_* from its last line (a half-written
 * last line of the file does not count), one without a line
 * gets zeros, one the budget deleted whole is added with no files, the
 * retention sums are the threads'; lines ada does not write are skipped
 * and counted; a file that is not one changes nothing; no file leaves the
 * manifest's own retention as it was.
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
#include <unistd.h>

#include <cmocka.h>

#include "recorder_internal.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_retfile.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	wal_retention_remove(dir);
	return rmdir(dir);
}

static void put(const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/.retention", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A recovered manifest's threads as recover makes them from disk: 1 and 2. */
static json_t *threads_on_disk(void)
{
	return json_pack("[{s:i, s:[]}, {s:i, s:[]}]", "thread", 1, "files", "thread", 2, "files");
}

static json_int_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void test_applied(void **state)
{
	(void)state;
	put("ada-retention 1\nsymbols_deleted 0\n"
	    "thread 1 tid 101 gens 2 events 500 bytes 4096 until 900 whole 0\n"
	    "thread 3 tid 103 gens 1 events 70 bytes 512 until 950 whole 1\n"
	    "thread 4 tid 104 gens 1 events 7 bytes 1 until 1 whole 2\n"
	    "rm -rf /\n"
	    "thread 1 tid 101 gens 3 events 800 bytes 8192 until 990 whole 0\n"
	    "thread 2 tid 102 gens 1 ev");
	struct wal_retention rt;
	wal_retention_load(dir, &rt);
	assert_true(rt.found);
	assert_int_equal(rt.n, 2);
	assert_int_equal(rt.bad_lines, 2);
	json_t *man = json_pack("{s:{s:s, s:i}}", "retention", "budget", "--max-disk-mb",
	                        "budget_bytes", 4194304);
	json_t *th = threads_on_disk();
	wal_retention_apply(man, th, &rt);
	assert_int_equal(json_array_size(th), 3);
	json_t *t1 = json_array_get(th, 0), *t2 = json_array_get(th, 1),
	       *t3 = json_array_get(th, 2);
	assert_int_equal(num(t1, "retired_events"), 800); /* its last line */
	assert_int_equal(num(t1, "retired_bytes"), 8192);
	assert_int_equal(num(t1, "retired_until_ns"), 990);
	assert_true(json_is_false(json_object_get(t1, "retired_whole")));
	assert_int_equal(num(t2, "retired_events"), 0);
	assert_int_equal(num(t2, "retired_until_ns"), 0);
	assert_int_equal(num(t3, "thread"), 3);
	assert_int_equal(num(t3, "tid"), 103);
	assert_int_equal(json_array_size(json_object_get(t3, "files")), 0);
	assert_true(json_is_true(json_object_get(t3, "retired_whole")));
	json_t *r = json_object_get(man, "retention");
	assert_string_equal(json_string_value(json_object_get(r, "budget")), "--max-disk-mb");
	assert_int_equal(num(r, "retired_generations"), 4);
	assert_int_equal(num(r, "retired_events"), 870);
	assert_int_equal(num(r, "retired_bytes"), 8704);
	assert_int_equal(num(r, "retired_threads"), 1);
	assert_int_equal(num(r, "retired_until_ns"), 990);
	assert_true(json_is_false(json_object_get(r, "symbols_deleted")));
	json_decref(th);
	json_decref(man);
	wal_retention_free(&rt);
}

/* Not a retention file (or none): the manifest's own retention stays,
 * every thread says it lost nothing. */
static void test_not_one(void **state)
{
	(void)state;
	for (int k = 0; k < 2; k++) {
		if (k == 0)
			put("ada-retention 2\nsymbols_deleted 0\nthread 1 tid 1 gens 9 events 9 "
			    "bytes 9 "
			    "until 9 whole 0\n");
		else
			wal_retention_remove(dir);
		struct wal_retention rt;
		wal_retention_load(dir, &rt);
		assert_false(rt.found);
		json_t *man = json_pack("{s:{s:i}}", "retention", "retired_events", 42);
		json_t *th = threads_on_disk();
		wal_retention_apply(man, th, &rt);
		assert_int_equal(json_array_size(th), 2);
		assert_int_equal(num(json_array_get(th, 0), "retired_events"), 0);
		assert_int_equal(num(json_object_get(man, "retention"), "retired_events"), 42);
		json_decref(th);
		json_decref(man);
		wal_retention_free(&rt);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_applied, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_one, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
