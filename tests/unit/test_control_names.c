/*
 * What a function glob matches in a recording (src/control/names.c) and
 * the `arm` method's use of it: a made-up session with one process and one
 * module table in its pid_N/ (hooked rare_event, mid, busy.constprop.0;
 * excluded helper), and one in an older session's pid_N/modules/, then
 * globs that match, match only an unhooked function, match nothing with a
 * near name, and a session with no table at all. `arm` refuses a glob
 * that matches nothing, naming the near name, and arms it with
 * "pending": true.
 */
#define _GNU_SOURCE
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

#include "control.h"

static char names_dir[64];

static const char names_syms[] = "ada-symbols 1\n"
                                 "module_id 1\n"
                                 "path /bin/made-up\n"
                                 "load_base 0x1000\n"
                                 "functions 4\n"
                                 "F 0 1000 10 hooked rare_event\n"
                                 "F 1 1010 10 hooked mid\n"
                                 "F 2 1020 10 hooked busy.constprop.0\n"
                                 "F 3 1030 10 excluded helper\n";

static void names_write(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(names_syms, f);
	fclose(f);
}

static int names_setup(void **state)
{
	(void)state;
	char path[160];
	snprintf(names_dir, sizeof(names_dir), "/tmp/ada-names-XXXXXX");
	assert_non_null(mkdtemp(names_dir));
	snprintf(path, sizeof(path), "%s/pid_7", names_dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/pid_7/module_1.syms", names_dir);
	names_write(path);
	snprintf(path, sizeof(path), "%s/pid_8", names_dir); /* no table yet */
	assert_int_equal(mkdir(path, 0700), 0);
	return 0;
}

static int names_teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", names_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_names_match(void **state)
{
	(void)state;
	struct ada_names_match m;
	assert_int_equal(ada_control_names_match(names_dir, "rare_*", &m), 0);
	assert_int_equal(m.hooked, 1);
	assert_int_equal(m.scanned, 3);
	assert_int_equal(ada_control_names_match(names_dir, "busy", &m), 0);
	assert_int_equal(m.hooked, 1); /* the clone suffix is not the user's */
	assert_int_equal(ada_control_names_match(names_dir, "helper", &m), 0);
	assert_int_equal(m.hooked, 0);
	assert_int_equal(m.skipped, 1);
	assert_string_equal(m.skip_why, "excluded");
}

static void test_names_near(void **state)
{
	(void)state;
	struct ada_names_match m;
	char line[400];
	assert_int_equal(ada_control_names_match(names_dir, "rare_evnt", &m), 0);
	assert_int_equal(m.hooked, 0);
	assert_true(m.nnear >= 1);
	assert_string_equal(m.near[0], "rare_event");
	ada_names_match_sentence("symbol=rare_evnt", &m, line, sizeof(line));
	assert_string_equal(line, "symbol=rare_evnt matches no hooked function; near: rare_event");
	assert_int_equal(ada_control_names_match(names_dir, "RARE", &m), 0);
	assert_string_equal(m.near[0], "rare_event"); /* contained, case ignored */
	assert_int_equal(ada_control_names_match(names_dir, "zzzzzzzz", &m), 0);
	assert_int_equal(m.nnear, 0);
}

static void test_names_no_table(void **state)
{
	(void)state;
	struct ada_names_match m;
	char path[160];
	snprintf(path, sizeof(path), "%s/pid_8", names_dir);
	/* pid_8 is no session: nothing under it is pid_N, nothing scanned */
	assert_int_equal(ada_control_names_match(path, "x", &m), 0);
	assert_int_equal(m.scanned, 0);
	assert_true(ada_control_names_match("/nonexistent-ada-dir", "x", &m) < 0);
}

/* A session recorded before the module files moved up: its table in
 * pid_N/modules/, read all the same. */
static void test_names_old_layout(void **state)
{
	(void)state;
	struct ada_names_match m;
	char old[96], path[160];
	snprintf(old, sizeof(old), "%s/old", names_dir);
	assert_int_equal(mkdir(old, 0700), 0);
	snprintf(path, sizeof(path), "%s/pid_3", old);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/pid_3/modules", old);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/pid_3/modules/module_1.syms", old);
	names_write(path);
	assert_int_equal(ada_control_names_match(old, "rare_*", &m), 0);
	assert_int_equal(m.hooked, 1);
	assert_int_equal(m.scanned, 3);
}

static char *names_call(struct ada_control *c, const char *line)
{
	char *resp = NULL;
	ada_control_handle(c, line, strlen(line), &resp);
	assert_non_null(resp);
	return resp;
}

static void test_names_arm(void **state)
{
	(void)state;
	struct ada_trigger_engine *e;
	struct ada_trigger_opts o = {.pre_ns = 1000000000ull, .post_ns = 1000000000ull};
	assert_int_equal(ada_trigger_engine_new(&o, &e), 0);
	struct ada_control_host h = {.trig = e, .session_fd = -1, .session_dir = names_dir};
	struct ada_control *c;
	assert_int_equal(ada_control_new(&h, &c), 0);
	char *r = names_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"arm\","
	                        "\"params\":{\"trigger\":\"symbol=rare_evnt\"}}");
	assert_non_null(strstr(r, "-32000"));
	assert_non_null(strstr(r, "near: rare_event"));
	free(r);
	struct ada_trigger_spec s[4];
	assert_int_equal(ada_trigger_list(e, s, 4), 0); /* nothing armed */
	r = names_call(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"arm\","
	                  "\"params\":{\"trigger\":\"symbol=rare_evnt\",\"pending\":true}}");
	assert_non_null(strstr(r, "\"matched\":0"));
	assert_non_null(strstr(r, "\"near\":[\"rare_event\"]"));
	free(r);
	r = names_call(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"arm\","
	                  "\"params\":{\"trigger\":\"symbol=mid\"}}");
	assert_non_null(strstr(r, "\"matched\":1"));
	free(r);
	r = names_call(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"arm\","
	                  "\"params\":{\"trigger\":\"crash\"}}");
	assert_non_null(strstr(r, "\"matched\":null"));
	free(r);
	assert_int_equal(ada_trigger_list(e, s, 4), 3);
	ada_control_free(c);
	ada_trigger_engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_match),    cmocka_unit_test(test_names_near),
	    cmocka_unit_test(test_names_no_table), cmocka_unit_test(test_names_old_layout),
	    cmocka_unit_test(test_names_arm),
	};
	return cmocka_run_group_tests(tests, names_setup, names_teardown);
}
