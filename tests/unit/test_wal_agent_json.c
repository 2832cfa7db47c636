/*
 * agent.json parsed with its "modules" list kept (src/recorder/agent_json.c):
 * a second file with the same list's bytes gets the kept parse, and
 * whatever the file, the result equals json_loadb's of the whole file
 * (the list where the full parse puts it, nothing else changed); files
 * that would fool a text search (the markers nested in another object, a
 * later "modules" key, no markers) are parsed whole.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit),
	    cmocka_unit_test(test_fooled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
