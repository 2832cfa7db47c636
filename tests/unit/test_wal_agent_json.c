/*
 * agent.json parsed with its "modules" list kept (src/recorder/agent_json.c):
 * a second file with the same list's bytes gets the kept parse, and
 * whatever the file, the result equals json_loadb's of the whole file
 * (the list where the full parse puts it, nothing else changed); files
 * that would fool a text search (the markers nested in another object, a
 * later "modules" key, no markers) are parsed whole. A forked child's
 * file that is still its parent's (src/recorder/agent_inherit.c) is made
 * the child's, and written back over the link without touching the
 * parent's file.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder_internal.h"

static int converted; /* conversions made */

static json_t *convert(json_t *raw)
{
	converted++;
	return json_pack("{s:I}", "n", (json_int_t)json_array_size(raw));
}

/* The agent's layout (src/hook/agent.c agent_json_body), pid and list
 * given. */
static char *agent_text(int pid, const char *mods)
{
	char *s = NULL;
	assert_true(
	    asprintf(&s,
	             "{\n  \"pid\": %d,\n  \"installed\": 5,\n  \"trampoline_bytes\": 4096,\n"
	             "  \"modules\": [\n%s  ],\n  \"not_hooked\": [],\n  \"argv\": [\"a\"]\n}\n",
	             pid, mods) > 0);
	return s;
}

static const char MODS[] =
    "    {\"module_id\": 1, \"path\": \"/bin/x\", \"load_base\": \"0x1000\"},\n"
    "    {\"module_id\": 2, \"path\": \"/lib/y\", \"load_base\": \"0x2000\"}\n";

/* The parse of text through c equals json_loadb's; *hit: the kept list. */
static void parse_same(struct wal_agent_cache *c, const char *text, bool *hit)
{
	json_t *want = json_loadb(text, strlen(text), 0, NULL), *out = NULL;
	int before = converted;
	json_t *got = wal_agent_parse(c, text, strlen(text), convert, &out);
	assert_true(json_equal(want, got));
	if (out) { /* the conversion of the file's own list */
		json_t *mine = convert(json_object_get(want, "modules"));
		converted--;
		assert_true(json_equal(mine, out));
		json_decref(mine);
	}
	*hit = out && converted == before;
	json_decref(want);
	json_decref(got);
	json_decref(out);
}

static void test_hit(void **state)
{
	(void)state;
	struct wal_agent_cache c = {0};
	bool hit;
	char *t1 = agent_text(10, MODS), *t2 = agent_text(11, MODS);
	parse_same(&c, t1, &hit);
	assert_false(hit); /* the first: parsed whole, kept */
	assert_non_null(c.text);
	parse_same(&c, t2, &hit);
	assert_true(hit);
	char *t3 = agent_text(12, "    {\"module_id\": 3}\n");
	parse_same(&c, t3, &hit);
	assert_false(hit); /* another list: parsed, kept instead */
	parse_same(&c, t3, &hit);
	assert_true(hit);
	char *t4 = agent_text(13, "");
	parse_same(&c, t4, &hit);
	assert_false(hit);
	free(t1);
	free(t2);
	free(t3);
	free(t4);
	wal_agent_cache_free(&c);
}

static void test_fooled(void **state)
{
	(void)state;
	struct wal_agent_cache c = {0};
	bool hit;
	char *t1 = agent_text(10, MODS);
	parse_same(&c, t1, &hit);
	/* The markers nested inside another object, the real list empty. */
	char *t2 = NULL;
	assert_true(asprintf(&t2,
	                     "{\n  \"pid\": 1,\n  \"x\": {\"y\": 1,\n  \"modules\": [\n%s  ],\n"
	                     "  \"not_hooked\": []},\n  \"modules\": []\n}\n",
	                     MODS) > 0);
	parse_same(&c, t2, &hit);
	assert_false(hit);
	/* A later top-level "modules" replaces the list. */
	char *t3 = NULL;
	assert_true(asprintf(&t3,
	                     "{\n  \"pid\": 1,\n  \"modules\": [\n%s  ],\n  \"not_hooked\": [],\n"
	                     "  \"modules\": [7]\n}\n",
	                     MODS) > 0);
	parse_same(&c, t3, &hit);
	assert_false(hit);
	/* No markers (another writer's layout), and text that is not JSON. */
	const char *t4 = "{\"pid\": 1, \"modules\": [{\"module_id\": 1}]}";
	parse_same(&c, t4, &hit);
	assert_false(hit);
	const char *t5 = "{\n  \"modules\": [\n    {\"module_id\": 1}\n  ],\n  \"not_hooked\": [";
	json_t *out = NULL;
	assert_null(wal_agent_parse(&c, t5, strlen(t5), convert, &out));
	assert_null(out);
	free(t1);
	free(t2);
	free(t3);
	wal_agent_cache_free(&c);
}

/* The agent's counting sections as a parent's file has them. */
static const char PARENT[] =
    "{\n  \"pid\": 100,\n  \"hook_time_us\": {\"total\": 900},\n  \"installed\": 5,\n"
    "  \"symbol_files\": {\"written\": 3, \"shared\": 0, \"share_failed\": 1, "
    "\"bodies_written\": 3},\n  \"agent_json_writes\": 2,\n"
    "  \"untraced_calls\": {\"agent_work\": 3300, \"shadow_full\": 4},\n"
    "  \"unmatched_returns\": {\"returns\": 1, \"threads_stopped\": 1},\n"
    "  \"stack_switches\": {\"switches\": 2, \"frames_cut\": 7},\n"
    "  \"recorder_gone\": {\"noticed\": true, \"drain_lag_drops\": 5},\n"
    "  \"hot_functions\": [{\"name\": \"f\", \"pct\": 50}],\n"
    "  \"exit_counts\": \"arena\",\n"
    "  \"modules\": [{\"module_id\": 1}, {\"module_id\": 2, \"unloaded\": true}, "
    "{\"module_id\": 3, \"unloaded\": false}],\n  \"argv\": [\"a\"]\n}\n";

static json_int_t geti(json_t *a, const char *sec, const char *key)
{
	json_t *o = sec ? json_object_get(a, sec) : a;
	assert_true(json_is_integer(json_object_get(o, key)));
	return json_integer_value(json_object_get(o, key));
}

static void test_inherit(void **state)
{
	(void)state;
	json_t *a = json_loads(PARENT, 0, NULL), *orig = json_deep_copy(a);
	assert_non_null(a);
	/* Its own: untouched. */
	assert_false(wal_agent_inherit(a, 100));
	assert_true(json_equal(a, orig));
	/* A child's: the child's pid, the writer's, every count at zero. */
	assert_true(wal_agent_inherit(a, 200));
	assert_int_equal(geti(a, NULL, "pid"), 200);
	assert_int_equal(geti(a, NULL, "inherited_from"), 100);
	assert_int_equal(geti(a, NULL, "agent_json_writes"), 0);
	assert_int_equal(geti(a, "symbol_files", "written"), 0);
	assert_int_equal(geti(a, "symbol_files", "shared"), 2); /* the loaded modules */
	assert_int_equal(geti(a, "symbol_files", "share_failed"), 0);
	assert_int_equal(geti(a, "symbol_files", "bodies_written"), 0);
	assert_int_equal(geti(a, "untraced_calls", "agent_work"), 0);
	assert_int_equal(geti(a, "untraced_calls", "shadow_full"), 0);
	assert_int_equal(geti(a, "unmatched_returns", "returns"), 0);
	assert_int_equal(geti(a, "stack_switches", "frames_cut"), 0);
	assert_int_equal(geti(a, "recorder_gone", "drain_lag_drops"), 0);
	assert_true(json_is_false(json_object_get(json_object_get(a, "recorder_gone"), "noticed")));
	assert_null(json_object_get(a, "hot_functions"));
	/* the parent's exit counts, folded into its file before the child's
	 * was made from it: not the child's */
	assert_null(json_object_get(a, "exit_counts"));
	/* What the fork did not change is the parent's. */
	assert_int_equal(geti(a, NULL, "installed"), 5);
	assert_int_equal(geti(a, "hook_time_us", "total"), 900);
	assert_true(json_equal(json_object_get(a, "modules"), json_object_get(orig, "modules")));
	assert_true(json_equal(json_object_get(a, "argv"), json_object_get(orig, "argv")));
	/* Made once: the child's own now. */
	assert_false(wal_agent_inherit(a, 200));
	/* No integer pid: not told whose, left alone. */
	json_t *b = json_pack("{s:s}", "pid", "100");
	assert_false(wal_agent_inherit(b, 200));
	json_decref(b);
	json_decref(orig);
	json_decref(a);
}

/* Written back over the child's link to its parent's file: the child's
 * name gets the child's file, the parent's keeps the parent's. */
static void test_inherit_write(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/ada-inherit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char *d = mkdtemp(path);
	assert_non_null(d);
	char parent[4200], child[4200];
	snprintf(parent, sizeof(parent), "%s/parent.json", d);
	snprintf(child, sizeof(child), "%s/agent.json", d);
	FILE *f = fopen(parent, "w");
	assert_non_null(f);
	fputs(PARENT, f);
	fclose(f);
	assert_int_equal(link(parent, child), 0);
	json_t *a = json_loads(PARENT, 0, NULL);
	assert_true(wal_agent_inherit(a, 200));
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(wal_agent_inherit_write(dfd, a), 0);
	close(dfd);
	json_t *got = json_load_file(child, 0, NULL), *kept = json_load_file(parent, 0, NULL);
	assert_true(json_equal(got, a));
	json_t *want = json_loads(PARENT, 0, NULL);
	assert_true(json_equal(kept, want));
	struct stat st;
	assert_int_equal(stat(parent, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	json_decref(want);
	json_decref(kept);
	json_decref(got);
	json_decref(a);
	unlink(child);
	unlink(parent);
	rmdir(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit),
	    cmocka_unit_test(test_fooled),
	    cmocka_unit_test(test_inherit),
	    cmocka_unit_test(test_inherit_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
