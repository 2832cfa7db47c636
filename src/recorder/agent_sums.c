/*
 * What the summary line takes from every process's agent.json (the calls
 * the agents did not trace, count-only functions and the budget's moves,
 * the hottest functions, the images without symbols), added up when the
 * process's first final manifest reads the file (manifest.c), so the
 * summary reads no file again. Threads: the drain thread; the sums are
 * read after it is joined (ada_recorder_wait).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "manifest.h"
#include "recorder_internal.h"

/* untraced_calls to s[0..2]: shadow_full, unmatched_return,
 * nested_signal (the agent's own work is not the program's calls); its
 * stack_switches to s[3..4]: switches, frames_cut; the calls after it
 * judged the recorder gone to s[5]. */
static void sums_untraced(json_t *a, int64_t s[6])
{
	json_t *u = json_object_get(a, "untraced_calls");
	static const char *const keys[3] = {"shadow_full", "unmatched_return", "nested_signal"};
	for (int k = 0; k < 3; k++) {
		json_int_t v = json_integer_value(json_object_get(u, keys[k]));
		if (v > 0)
			s[k] += v;
	}
	/* The drain stood still past the producers' timeout: the agent
	 * stopped tracing (docs/hooks.md, untraced_calls.recorder_gone). */
	json_int_t gone = json_integer_value(json_object_get(u, "recorder_gone"));
	if (gone > 0)
		s[5] += gone;
	/* Returns not traced: frames cut by a stack switch (greenlet). */
	json_t *w = json_object_get(a, "stack_switches");
	static const char *const wkeys[2] = {"switches", "frames_cut"};
	for (int k = 0; k < 2; k++) {
		json_int_t v = json_integer_value(json_object_get(w, wkeys[k]));
		if (v > 0)
			s[3 + k] += v;
	}
}

/* The images whose functions came from .eh_frame (no symbol table), once
 * per path, at most ADA_AGENT_STRIPPED_MAX. */
static void sums_stripped(json_t *a, struct ada_agent_sums *s)
{
	size_t i, k;
	json_t *m;
	json_array_foreach(json_object_get(a, "modules"), i, m)
	{
		const char *path = json_string_value(json_object_get(m, "path"));
		json_int_t n = json_integer_value(json_object_get(m, "fde_functions"));
		if (!path || n <= 0 || strlen(path) >= sizeof(s->stripped[0].path))
			continue;
		for (k = 0; k < s->nstripped && strcmp(s->stripped[k].path, path); k++)
			;
		if (k < s->nstripped || s->nstripped == ADA_AGENT_STRIPPED_MAX)
			continue;
		strcpy(s->stripped[s->nstripped].path, path);
		s->stripped[s->nstripped++].functions = n;
	}
}

/* A string member's value, or "" (the budget's "moved" is one). */
static const char *sums_str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "";
}

/* n added to *to when positive, saturating: agent.json is the target's,
 * and its counts are summed over the processes. */
static void sums_add(int64_t *to, json_int_t n)
{
	if (n > 0)
		*to = n > INT64_MAX - *to ? INT64_MAX : *to + n;
}

/* Count-only functions and hot spots (docs/hooks.md, "Count-only
 * functions", "Overhead budget"): the budget's first six moves named in
 * moved, the counted calls and functions to counted[0..1], the moves to
 * counted[2], the functions recalled from an earlier run's moves to
 * counted[3]; the first hot_functions list seen kept in hot. */
static void sums_count_only(json_t *a, struct ada_agent_sums *s)
{
	json_t *e, *co = json_object_get(a, "count_only");
	size_t i;
	/* The functions never called are not listed, only counted (an older
	 * agent.json lists them all and has neither uncalled nor recalled). */
	json_t *recalled = json_object_get(co, "recalled");
	s->counted[1] += ada_count_only_uncalled(co);
	sums_add(&s->counted[3], json_integer_value(recalled));
	json_array_foreach(json_object_get(co, "functions"), i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		sums_add(&s->counted[0], json_integer_value(json_object_get(e, "calls")));
		s->counted[1]++;
		if (!json_is_integer(recalled) && !strcmp(sums_str(e, "moved"), "recalled"))
			s->counted[3]++; /* the budget moved it in an earlier run */
		if (strcmp(sums_str(e, "moved"), "budget"))
			continue;
		if (s->counted[2]++ >= 6)
			continue; /* the rest: a count, ada status lists them all */
		size_t u = strlen(s->moved);
		snprintf(s->moved + u, sizeof(s->moved) - u,
		         "%s%s (%lld calls/s, mean %lld ns, after %lld ms)", u ? ", " : "",
		         name ? name : "?",
		         (long long)json_integer_value(json_object_get(e, "calls_per_s")),
		         (long long)json_integer_value(json_object_get(e, "mean_ns")),
		         (long long)json_integer_value(json_object_get(e, "moved_after_ms")));
	}
	json_array_foreach(json_object_get(a, "hot_functions"), i, e)
	{
		size_t u = strlen(s->hot);
		if (i == 0 && u)
			break; /* one process's list is enough */
		const char *name = json_string_value(json_object_get(e, "name"));
		snprintf(s->hot + u, sizeof(s->hot) - u, "%s%s %lld %%", i ? ", " : "",
		         name ? name : "?",
		         (long long)json_integer_value(json_object_get(e, "share_pct")));
	}
}

/* The over_budget hint (exclude_hint.c) of the process with the most
 * counted calls: "name,name,..." in excl. */
static void sums_exclude(json_t *a, struct ada_agent_sums *s)
{
	json_t *o = json_object_get(json_object_get(a, "count_only"), "over_budget"), *e;
	json_int_t calls = json_integer_value(json_object_get(o, "counted_calls"));
	size_t i;
	if (!json_is_object(o) || calls <= s->excl_calls)
		return;
	s->excl_calls = calls;
	s->excl_cost_pct = json_number_value(json_object_get(o, "counts_cost_pct"));
	s->excl_would_pct = json_number_value(json_object_get(o, "would_cost_pct"));
	s->excl[0] = '\0';
	s->excl_n = (int64_t)json_array_size(json_object_get(o, "exclude"));
	json_array_foreach(json_object_get(o, "exclude"), i, e)
	{
		size_t u = strlen(s->excl);
		const char *n = json_string_value(e);
		if (!n || i == ADA_AGENT_EXCL_SHOWN || u + strlen(n) + 2 > sizeof(s->excl))
			break; /* whole names only: the list stays one to paste */
		snprintf(s->excl + u, sizeof(s->excl) - u, "%s%s", u ? "," : "", n);
	}
}

void wal_agent_sums_fold(struct ada_agent_sums *s, json_t *a)
{
	sums_exclude(a, s);
	sums_untraced(a, s->untraced);
	sums_stripped(a, s);
	sums_count_only(a, s);
}
