/*
 * What --exclude-symbol would save a budget run whose counts still cost
 * more than its budget (issue 32 item 6, PR-003, PR-005): a process's
 * count_only section (agent.json, as the agent wrote it at its exit) gets
 * an over_budget object naming its most counted functions, most calls
 * first, as many as bring the counts' estimated cost within half the
 * budget (the rest of it left to events, start-up and drain), at most
 * EXCL_NAMES. A count's cost is a documented constant, not a measurement
 * of this run: the middle of what a count cost in the
 * long sqlite3, perl and python runs (docs/benchmarks.md). Threads: the
 * drain thread, when the process's final manifest takes its agent.json.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recorder_internal.h"

#define EXCL_COUNT_PS 1200 /* a count's cost, ps (above) */
#define EXCL_NAMES 64      /* names at most: bounded, as a manifest is */
#define EXCL_FNS_MAX 4096  /* the agent's counters per process */

struct excl_fn {
	const char *name;
	int64_t calls;
};

/* Most calls first; equal calls by name, so the order is the same in
 * every run. */
static int excl_cmp(const void *pa, const void *pb)
{
	const struct excl_fn *a = pa, *b = pb;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* A name --exclude-symbol takes back as itself: not a glob, not cut by
 * the list's commas. */
static bool excl_name_ok(const char *n)
{
	return n && *n && !strpbrk(n, ",*?[]");
}

/* The functions of co with calls, sorted (excl_cmp); their count, the
 * calls of all of them in *total. */
static size_t excl_collect(json_t *co, struct excl_fn *fns, int64_t *total)
{
	size_t i, n = 0;
	json_t *e;
	*total = 0;
	json_array_foreach(json_object_get(co, "functions"), i, e)
	{
		json_int_t calls = json_integer_value(json_object_get(e, "calls"));
		if (calls <= 0 || n == EXCL_FNS_MAX)
			continue;
		*total += calls;
		fns[n].name = json_string_value(json_object_get(e, "name"));
		fns[n++].calls = calls;
	}
	for (i = 0; i < n; i++)
		if (!fns[i].name)
			fns[i].name = "";
	qsort(fns, n, sizeof(*fns), excl_cmp);
	return n;
}

/* Percent of base, one decimal. */
static double excl_pct(double cost_ns, double base_ns)
{
	return (double)(int64_t)(cost_ns / base_ns * 1000.0 + 0.5) / 10.0;
}

void wal_exclude_hint(json_t *co)
{
	json_int_t budget = json_integer_value(json_object_get(co, "overhead_budget_pct"));
	json_int_t cpu = json_integer_value(json_object_get(co, "cpu_ns"));
	if (!json_is_object(co) || budget <= 0 || cpu <= 0 ||
	    !json_is_true(json_object_get(co, "final")))
		return;
	struct excl_fn *fns = calloc(EXCL_FNS_MAX, sizeof(*fns));
	if (!fns)
		return; /* a hint, not data: nothing is lost */
	int64_t total;
	size_t n = excl_collect(co, fns, &total);
	double cost = (double)total * EXCL_COUNT_PS / 1000.0, base = (double)cpu - cost;
	/* The untraced CPU, estimated: what is left without the counts. */
	if (base <= 0 || cost * 100.0 <= (double)budget * base) {
		free(fns);
		return;
	}
	json_t *names = json_array();
	int64_t left = total;
	for (size_t i = 0; i < n && json_array_size(names) < EXCL_NAMES; i++) {
		if ((double)left * EXCL_COUNT_PS / 1000.0 * 200.0 <= (double)budget * base)
			break;
		if (!excl_name_ok(fns[i].name))
			continue;
		json_array_append_new(names, json_string(fns[i].name));
		left -= fns[i].calls;
	}
	free(fns);
	json_object_set_new(co, "over_budget",
	                    json_pack("{s:I, s:I, s:f, s:o, s:I, s:f}", "count_cost_ps",
	                              (json_int_t)EXCL_COUNT_PS, "counted_calls", (json_int_t)total,
	                              "counts_cost_pct", excl_pct(cost, base), "exclude", names,
	                              "exclude_calls", (json_int_t)(total - left), "would_cost_pct",
	                              excl_pct((double)left * EXCL_COUNT_PS / 1000.0, base)));
}
