/*
 * What the summary takes from the processes' agent.json, summed by the
 * recorder as each final manifest reads the file (src/recorder/agent_sums.c,
 * wal_manifest_agent): the calls left untraced by reason, the stack
 * switches, count-only functions and the budget's moves (the first six
 * named), the first hot_functions list, the images without symbols once
 * per path; and the final manifest of a process adds its agent.json once,
 * however often it is written, and never again from the manifest kept.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder_internal.h"

/* One process's agent.json: untraced calls u (shadow_full, nested_signal,
 * unmatched_return, recorder_gone), a stripped image, count-only functions. */
static json_t *agent(json_int_t u, const char *stripped, json_int_t fde, json_t *co, json_t *hot)
{
	json_t *a = json_pack(
	    "{s:{s:I,s:I,s:I,s:I,s:I},s:{s:I,s:I},s:[{s:s,s:I},{s:s,s:I}],s:o,s:o}",
	    "untraced_calls", "agent_work", (json_int_t)1000, "shadow_full", u, "nested_signal",
	    2 * u, "unmatched_return", 3 * u, "recorder_gone", 4 * u, "stack_switches", "switches",
	    u, "frames_cut", 5 * u, "modules", "path", stripped, "fde_functions", fde, "path",
	    "/lib/libc.so.6", "fde_functions", (json_int_t)0, "count_only", co ? co : json_object(),
	    "hot_functions", hot ? hot : json_array());
	assert_non_null(a);
	return a;
}

static json_t *moved_fn(const char *name, const char *moved, json_int_t calls)
{
	return json_pack("{s:s,s:I,s:s,s:I,s:I,s:I}", "name", name, "calls", calls, "moved", moved,
	                 "calls_per_s", (json_int_t)1000, "mean_ns", (json_int_t)40,
	                 "moved_after_ms", (json_int_t)7);
}

static void test_fold_sums(void **state)
{
	(void)state;
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	json_t *fns = json_array();
	for (int i = 0; i < 8; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		json_array_append_new(fns, moved_fn(name, "budget", 10));
	}
	json_array_append_new(fns, moved_fn("r", "recalled", 5));
	json_array_append_new(fns, moved_fn("g", "glob", 1));
	json_t *a1 = agent(1, "/usr/bin/bash", 605, json_pack("{s:o}", "functions", fns),
	                   json_pack("[{s:s,s:I},{s:s,s:I}]", "name", "hot1", "share_pct",
	                             (json_int_t)60, "name", "hot2", "share_pct", (json_int_t)30));
	json_t *a2 = agent(10, "/usr/bin/bash", 605, NULL,
	                   json_pack("[{s:s,s:I}]", "name", "other", "share_pct", (json_int_t)99));
	json_t *a3 = agent(100, "/usr/bin/seq", 104, NULL, NULL);
	wal_agent_sums_fold(s, a1);
	wal_agent_sums_fold(s, a2);
	wal_agent_sums_fold(s, a3);
	assert_int_equal(s->untraced[0], 111);     /* shadow_full */
	assert_int_equal(s->untraced[1], 3 * 111); /* unmatched_return */
	assert_int_equal(s->untraced[2], 2 * 111); /* nested_signal */
	assert_int_equal(s->untraced[3], 111);     /* switches */
	assert_int_equal(s->untraced[4], 5 * 111); /* frames_cut */
	assert_int_equal(s->untraced[5], 4 * 111); /* recorder_gone */
	assert_int_equal(s->counted[0], 8 * 10 + 5 + 1);
	assert_int_equal(s->counted[1], 10);
	assert_int_equal(s->counted[2], 8);
	assert_int_equal(s->counted[3], 1);
	assert_non_null(strstr(s->moved, "f0 (1000 calls/s, mean 40 ns, after 7 ms), f1"));
	assert_non_null(strstr(s->moved, "f5 (1000"));
	assert_null(strstr(s->moved, "f6")); /* the first six named */
	assert_string_equal(s->hot, "hot1 60 %, hot2 30 %");
	assert_int_equal(s->nstripped, 2);
	assert_string_equal(s->stripped[0].path, "/usr/bin/bash");
	assert_int_equal(s->stripped[0].functions, 605);
	assert_string_equal(s->stripped[1].path, "/usr/bin/seq");
	json_decref(a1);
	json_decref(a2);
	json_decref(a3);
	free(s);
}

/* Since the agent lists only the functions called: uncalled adds to the
 * functions' count, recalled replaces counting the entries; a negative or
 * non-integer uncalled/recalled (a hostile file) adds nothing. */
static void test_fold_uncalled(void **state)
{
	(void)state;
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	json_t *fns = json_array();
	json_array_append_new(fns, moved_fn("r", "recalled", 5));
	json_array_append_new(fns, moved_fn("g", "start", 2));
	json_t *a1 = agent(0, "/bin/x", 1,
	                   json_pack("{s:o,s:I,s:I}", "functions", fns, "uncalled",
	                             (json_int_t)4000, "recalled", (json_int_t)3),
	                   NULL);
	json_t *a2 = agent(
	    0, "/bin/x", 1,
	    json_pack("{s:[],s:I,s:s}", "functions", "uncalled", (json_int_t)-9, "recalled", "x"),
	    NULL);
	wal_agent_sums_fold(s, a1);
	wal_agent_sums_fold(s, a2);
	assert_int_equal(s->counted[0], 7);
	assert_int_equal(s->counted[1], 4002);
	assert_int_equal(s->counted[3], 3); /* not 4: the listed one is among the 3 */
	json_decref(a1);
	json_decref(a2);
	free(s);
}

/* The calls and recalled counts are the target's (agent.json): only
 * positive ones add, and the sums over processes saturate, never wrap. */
static void test_fold_saturates(void **state)
{
	(void)state;
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	for (int k = 0; k < 2; k++) {
		json_t *fns = json_array();
		json_array_append_new(fns, moved_fn("big", "start", INT64_MAX));
		json_array_append_new(fns, moved_fn("neg", "start", -5));
		json_t *a = agent(0, "/bin/x", 1,
		                  json_pack("{s:o,s:I,s:I}", "functions", fns, "uncalled",
		                            (json_int_t)0, "recalled", (json_int_t)INT64_MAX),
		                  NULL);
		wal_agent_sums_fold(s, a);
		json_decref(a);
	}
	assert_int_equal(s->counted[0], INT64_MAX);
	assert_int_equal(s->counted[1], 4);
	assert_int_equal(s->counted[3], INT64_MAX);
	free(s);
}

static void test_fold_bad_input(void **state)
{
	(void)state;
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	json_t *a = json_pack("{s:s,s:{s:I},s:i,s:[i]}", "untraced_calls", "x", "stack_switches",
	                      "switches", (json_int_t)-5, "count_only", 3, "modules", 1);
	wal_agent_sums_fold(s, a);
	json_t *empty = json_object();
	wal_agent_sums_fold(s, empty);
	json_decref(empty);
	for (int i = 0; i < 6; i++)
		assert_int_equal(s->untraced[i], 0);
	assert_int_equal(s->counted[1], 0);
	assert_int_equal(s->nstripped, 0);
	/* More images without symbols than are told: the first 16. */
	for (int i = 0; i < ADA_AGENT_STRIPPED_MAX + 4; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/bin/p%d", i);
		json_t *b = agent(0, path, 1, NULL, NULL);
		wal_agent_sums_fold(s, b);
		json_decref(b);
	}
	assert_int_equal(s->nstripped, ADA_AGENT_STRIPPED_MAX);
	json_decref(a);
	free(s);
}

/* wal_manifest_agent adds the pid directory's agent.json when given sums,
 * and not when given none (a manifest built again, ada recover). */
static void test_manifest_agent_sums(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_agent_sums.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	json_t *a = agent(7, "/usr/bin/bash", 3, NULL, NULL);
	char path[128];
	snprintf(path, sizeof(path), "%s/agent.json", dir);
	assert_int_equal(json_dump_file(a, path, 0), 0);
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	json_t *root = json_object();
	wal_manifest_agent(root, dfd, s, NULL, NULL, NULL);
	assert_int_equal(s->untraced[0], 7);
	assert_non_null(json_object_get(root, "hook"));
	assert_non_null(json_object_get(root, "modules"));
	json_decref(root);
	root = json_object();
	wal_manifest_agent(root, dfd, NULL, NULL, NULL, NULL);
	assert_int_equal(s->untraced[0], 7);
	assert_non_null(json_object_get(root, "hook"));
	json_decref(root);
	json_decref(a);
	free(s);
	unlink(path);
	close(dfd);
	rmdir(dir);
}

/* A count_only section: budget pct, cpu_ns, final, n functions f0.. with
 * calls[i]; names[i] when given. */
static json_t *co_of(json_int_t pct, json_int_t cpu, bool final, int n, const json_int_t *calls,
                     const char *const *names)
{
	json_t *fns = json_array();
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		json_array_append_new(fns,
		                      json_pack("{s:s,s:I,s:s}", "name", names ? names[i] : name,
		                                "calls", calls[i], "moved", "start"));
	}
	return json_pack("{s:b,s:I,s:I,s:o}", "final", final, "overhead_budget_pct", pct, "cpu_ns",
	                 cpu, "functions", fns);
}

/* The hint (exclude_hint.c): most calls first, ties by name, globs and
 * comma names passed over, as many as bring the counts within half the
 * budget; nothing when within it, without a budget, or in the manifest
 * when not final (ada_exclude_hint_of, as `ada status` asks it, still
 * answers); the sums
 * keep the process with the most counted calls. */
static void test_exclude_hint(void **state)
{
	(void)state;
	/* 10 M calls at 1.2 ns = 12 ms of 112 ms: 12 % of the 100 ms left. */
	static const json_int_t calls[5] = {1000000, 4000000, 2000000, 2000000, 1000000};
	static const char *const names[5] = {"e", "a", "c", "b*", "d"};
	json_t *co = co_of(10, 112000000, true, 5, calls, names);
	wal_exclude_hint(co);
	json_t *ob = json_object_get(co, "over_budget");
	assert_non_null(ob);
	assert_int_equal(json_integer_value(json_object_get(ob, "counted_calls")), 10000000);
	assert_true(json_real_value(json_object_get(ob, "counts_cost_pct")) == 12.0);
	/* a (4 M) leaves 7.2 ms, over 5 ms; b* passed over; c (2 M) leaves 4.8. */
	json_t *ex = json_object_get(ob, "exclude");
	assert_int_equal(json_array_size(ex), 2);
	assert_string_equal(json_string_value(json_array_get(ex, 0)), "a");
	assert_string_equal(json_string_value(json_array_get(ex, 1)), "c");
	assert_int_equal(json_integer_value(json_object_get(ob, "exclude_calls")), 6000000);
	assert_true(json_real_value(json_object_get(ob, "would_cost_pct")) == 4.8);
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	json_t *a = json_pack("{s:O}", "count_only", co);
	wal_agent_sums_fold(s, a);
	assert_string_equal(s->excl, "a,c");
	assert_int_equal(s->excl_calls, 10000000);
	json_decref(a);
	json_decref(co);
	/* Within the budget (10 M calls of 300 ms), not final, no budget. */
	co = co_of(10, 300000000, true, 5, calls, names);
	wal_exclude_hint(co);
	assert_null(json_object_get(co, "over_budget"));
	json_decref(co);
	co = co_of(10, 112000000, false, 5, calls, names);
	wal_exclude_hint(co);
	assert_null(json_object_get(co, "over_budget"));
	/* Not final, as `ada status` reads agent.json while recording: the
	 * same rule, asked directly (the manifest's keeps to final counts). */
	ob = ada_exclude_hint_of(co);
	ex = json_object_get(ob, "exclude");
	assert_int_equal(json_array_size(ex), 2);
	assert_string_equal(json_string_value(json_array_get(ex, 0)), "a");
	assert_string_equal(json_string_value(json_array_get(ex, 1)), "c");
	assert_true(json_real_value(json_object_get(ob, "would_cost_pct")) == 4.8);
	json_decref(ob);
	json_decref(co);
	/* Calls summed saturating (the file is the target's: no overflow,
	 * the undefined-behaviour build checks), more than the CPU: no hint. */
	static const json_int_t huge[2] = {INT64_MAX, INT64_MAX};
	co = co_of(10, 112000000, false, 2, huge, names);
	assert_null(ada_exclude_hint_of(co));
	json_decref(co);
	co = co_of(0, 112000000, true, 5, calls, names);
	wal_exclude_hint(co);
	assert_null(json_object_get(co, "over_budget"));
	json_decref(co);
	/* At most 64 names, ties by name (f0, f1, f10, f11 ...); the sums
	 * show the first 12. */
	json_int_t many[80];
	for (int i = 0; i < 80; i++)
		many[i] = 250000;
	co = co_of(10, 30000000, true, 80, many, NULL);
	wal_exclude_hint(co);
	ex = json_object_get(json_object_get(co, "over_budget"), "exclude");
	assert_int_equal(json_array_size(ex), 64);
	assert_string_equal(json_string_value(json_array_get(ex, 2)), "f10");
	/* A process with fewer counted calls does not replace the kept one. */
	a = json_pack("{s:O}", "count_only", co);
	wal_agent_sums_fold(s, a);
	assert_int_equal(s->excl_calls, 20000000);
	assert_int_equal(s->excl_n, 64);
	assert_string_equal(s->excl, "f0,f1,f10,f11,f12,f13,f14,f15,f16,f17,f18,f19");
	json_decref(a);
	json_decref(co);
	co = co_of(10, 112000000, true, 5, calls, names);
	wal_exclude_hint(co);
	a = json_pack("{s:O}", "count_only", co);
	wal_agent_sums_fold(s, a);
	assert_int_equal(s->excl_calls, 20000000);
	assert_int_equal(strncmp(s->excl, "f0,f1,f10", 9), 0);
	json_decref(a);
	json_decref(co);
	free(s);
}

/* The names are the target's (its symbol table, an agent.json it
 * wrote) and the summary line and `ada status` print the list as it is:
 * a name with a control byte (an escape sequence for root's terminal), a
 * space or a byte past ASCII is passed over like a glob, its calls left
 * in the counts the hint would leave. */
static void test_exclude_hint_odd_names(void **state)
{
	(void)state;
	static const json_int_t calls[5] = {4000000, 3000000, 2000000, 1000000, 1000000};
	static const char *const names[5] = {"\033]0;pwned\a", "a b", "caf\xc3\xa9", "x\x7f", "ok"};
	json_t *co = co_of(10, 112000000, true, 5, calls, names);
	wal_exclude_hint(co);
	json_t *ob = json_object_get(co, "over_budget");
	assert_non_null(ob);
	json_t *ex = json_object_get(ob, "exclude");
	assert_int_equal(json_array_size(ex), 1);
	assert_string_equal(json_string_value(json_array_get(ex, 0)), "ok");
	assert_int_equal(json_integer_value(json_object_get(ob, "exclude_calls")), 1000000);
	struct ada_agent_sums *s = calloc(1, sizeof(*s));
	json_t *a = json_pack("{s:O}", "count_only", co);
	wal_agent_sums_fold(s, a);
	assert_string_equal(s->excl, "ok");
	json_decref(a);
	json_decref(co);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fold_sums),
	    cmocka_unit_test(test_fold_uncalled),
	    cmocka_unit_test(test_fold_saturates),
	    cmocka_unit_test(test_fold_bad_input),
	    cmocka_unit_test(test_manifest_agent_sums),
	    cmocka_unit_test(test_exclude_hint),
	    cmocka_unit_test(test_exclude_hint_odd_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
