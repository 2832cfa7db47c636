/*
 * What --exclude-symbol would save a budget run whose counts still cost
 * more than its budget (issue 32 item 6, PR-003, PR-005): a process's
 * count_only section (agent.json, as the agent wrote it at its exit) gets
 * an over_budget object naming its most counted functions, most calls
 * first, as many as bring the counts' estimated cost within half the
 * budget (the rest of it left to events, start-up and drain), at most
 * EXCL_NAMES. A count's cost is a documented constant, not a measurement
 * of this run: the middle of what a count cost in the
 * long sqlite3, perl and python runs (docs/benchmarks.md). One rule for
 * every reader: the manifest (wal_exclude_hint), hence the summary line
 * (agent_sums.c) and a finished session's `ada status`, and the live
 * `ada status` (src/control/method_status.c, from agent.json as the agent
 * last wrote it) all call ada_exclude_hint_of. Threads: the drain thread
 * (the final manifest), the control thread (status); no state.
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
 * the list's commas, one word to paste. Printable ASCII only: the name
 * is the target's (its symbol table, or an agent.json it wrote), and the
 * summary line and `ada status` print the list as it is, on root's
 * terminal (a control byte there is an escape sequence). */
static bool excl_name_ok(const char *n)
{
	if (!n || !*n || strpbrk(n, ",*?[]"))
		return false;
	for (const unsigned char *c = (const unsigned char *)n; *c; c++)
		if (*c < 0x21 || *c > 0x7e)
			return false;
	return true;
}

/* The calls of co's functions, summed (saturating: the file is the
 * target's); the number of functions with calls in *n. */
static int64_t excl_total(json_t *co, size_t *n)
{
	size_t i;
	json_t *e;
	int64_t total = 0;
	*n = 0;
	json_array_foreach(json_object_get(co, "functions"), i, e)
	{
		json_int_t calls = json_integer_value(json_object_get(e, "calls"));
		if (calls <= 0 || *n == EXCL_FNS_MAX)
			continue;
		(*n)++;
		if (__builtin_add_overflow(total, (int64_t)calls, &total))
			total = INT64_MAX;
	}
	return total;
}

/* The functions of co with calls, sorted (excl_cmp), at most n of them
 * (excl_total's count). */
static size_t excl_collect(json_t *co, struct excl_fn *fns, size_t n_max)
{
	size_t i, n = 0;
	json_t *e;
	json_array_foreach(json_object_get(co, "functions"), i, e)
	{
		json_int_t calls = json_integer_value(json_object_get(e, "calls"));
		if (calls <= 0 || n == n_max)
			continue;
		const char *name = json_string_value(json_object_get(e, "name"));
		fns[n].name = name ? name : "";
		fns[n++].calls = calls;
	}
	qsort(fns, n, sizeof(*fns), excl_cmp);
	return n;
}

/* Percent of base, one decimal. */
static double excl_pct(double cost_ns, double base_ns)
{
	return (double)(int64_t)(cost_ns / base_ns * 1000.0 + 0.5) / 10.0;
}

/* The cost of calls counts, ns (the constant above). */
static double excl_cost_ns(int64_t calls)
{
	return (double)calls * EXCL_COUNT_PS / 1000.0;
}

/* The names to exclude, most calls first, until the calls left cost
 * within half the budget; *left the calls left. */
static json_t *excl_names(const struct excl_fn *fns, size_t n, json_int_t budget, double base,
                          int64_t *left)
{
	json_t *names = json_array();
	for (size_t i = 0; names && i < n && json_array_size(names) < EXCL_NAMES; i++) {
		if (excl_cost_ns(*left) * 200.0 <= (double)budget * base)
			break;
		if (!excl_name_ok(fns[i].name))
			continue;
		json_array_append_new(names, json_string(fns[i].name));
		*left = *left > fns[i].calls ? *left - fns[i].calls : 0;
	}
	return names;
}

json_t *ada_exclude_hint_of(json_t *co)
{
	json_int_t budget = json_integer_value(json_object_get(co, "overhead_budget_pct"));
	json_int_t cpu = json_integer_value(json_object_get(co, "cpu_ns"));
	if (!json_is_object(co) || budget <= 0 || cpu <= 0)
		return NULL;
	size_t n;
	int64_t total = excl_total(co, &n);
	double cost = excl_cost_ns(total), base = (double)cpu - cost;
	/* The untraced CPU, estimated: what is left without the counts.
	 * Within the budget (the common case, and every call of a status
	 * poll that finds it so): no list made, nothing sorted. */
	if (base <= 0 || cost * 100.0 <= (double)budget * base)
		return NULL;
	struct excl_fn *fns = calloc(n, sizeof(*fns));
	if (!fns)
		return NULL; /* a hint, not data: nothing is lost */
	n = excl_collect(co, fns, n);
	int64_t left = total;
	json_t *names = excl_names(fns, n, budget, base, &left);
	free(fns);
	return json_pack("{s:I, s:I, s:f, s:o, s:I, s:f}", "count_cost_ps",
	                 (json_int_t)EXCL_COUNT_PS, "counted_calls", (json_int_t)total,
	                 "counts_cost_pct", excl_pct(cost, base), "exclude", names, "exclude_calls",
	                 (json_int_t)(total - left), "would_cost_pct",
	                 excl_pct(excl_cost_ns(left), base));
}

void wal_exclude_hint(json_t *co)
{
	if (!json_is_true(json_object_get(co, "final")))
		return; /* the manifest's: only the exit's counts */
	json_t *ob = ada_exclude_hint_of(co);
	if (ob)
		json_object_set_new(co, "over_budget", ob);
}
