/*
 * What the live-control commands share (ada arm, disarm, trigger, status
 * PID): reaching a recording's control socket (src/control: discovery from
 * a pid or a directory) with one plain sentence when that fails, one call
 * (cmd_ctl_command: a command's options, the call, its exit status), and
 * the one status formatter -- used for a live recording's `status`
 * answer and for the same object built from a finished session's
 * manifests, so both read alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "control.h"
#include "fs.h"
#include "manifest.h"
#include "ring.h"

int cmd_ctl_open(const char *target, int *fd)
{
	char why[512];
	int rc = ada_control_open(target, fd, why, sizeof(why));
	if (rc < 0) {
		ada_log("%s", why);
		return -1;
	}
	return 0;
}

int cmd_ctl_call(int fd, const char *method, json_t *params, json_t **result)
{
	char why[512];
	int rc = ada_control_call(fd, method, params, result, why, sizeof(why));
	if (rc != 0) {
		ada_log("%s", why);
		return -1;
	}
	return 0;
}

int cmd_ctl_command(int argc, char **argv, const char *method, cmd_ctl_parse_fn parse,
                    json_t **result)
{
	json_t *params = json_object();
	int fd, rc = parse(argc, argv, params);
	*result = NULL;
	if (rc) {
		json_decref(params);
		return rc > 0 ? 0 : 2;
	}
	if (cmd_ctl_open(argv[optind], &fd) < 0) {
		json_decref(params);
		return 1;
	}
	rc = cmd_ctl_call(fd, method, params, result);
	close(fd);
	return rc < 0 ? 1 : 0;
}

/* ---- the formatter ---- */

/* The manifests' warnings in the status object (distinct sentences kept)
 * and the text lines that show them. */
#define CMD_CTL_WARNINGS_MAX 16
#define CMD_CTL_WARNINGS_SHOWN 4

const char *cmd_ctl_near_names(const json_t *near, char *buf, size_t len)
{
	size_t i, used = 0;
	json_t *v;
	buf[0] = '\0';
	json_array_foreach(near, i, v)
	{
		int n = snprintf(buf + used, len - used, "%s%s",
		                 i ? ", " : "; near: ", json_string_value(v));
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}

static json_int_t fmt_int(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void fmt_drops(FILE *f, json_t *st)
{
	json_t *d = json_object_get(st, "drops"), *ps = json_object_get(st, "drops_per_sec");
	json_int_t total = 0;
	const char *k;
	json_t *v;
	json_object_foreach(d, k, v) total += json_integer_value(v);
	fprintf(f, ", drops %lld", (long long)total);
	bool any = false;
	json_object_foreach(d, k, v)
	{
		json_int_t rate = fmt_int(ps, k);
		if (!json_integer_value(v) && !rate)
			continue;
		fprintf(f, "%s%s %lld", any ? ", " : " (", k, (long long)json_integer_value(v));
		if (json_is_integer(json_object_get(ps, k)))
			fprintf(f, " %lld/s", (long long)rate);
		any = true;
	}
	if (any)
		fputc(')', f);
}

/* "detail held 0.5-2.5 s in 3 rings" (the pre-roll a fire now could get). */
static void fmt_rings(FILE *f, json_t *st)
{
	json_t *rings = json_object_get(st, "rings");
	size_t i, n = json_array_size(rings);
	if (!n)
		return;
	double lo = 1e30, hi = 0;
	json_t *r;
	json_array_foreach(rings, i, r)
	{
		double s = json_number_value(json_object_get(r, "detail_sec"));
		lo = s < lo ? s : lo;
		hi = s > hi ? s : hi;
	}
	fprintf(f, ", detail held %.2f", lo);
	if (hi > lo)
		fprintf(f, "-%.2f", hi);
	fprintf(f, " s in %zu ring%s", n, n == 1 ? "" : "s");
}

static void fmt_usage(FILE *f, const char *who, json_t *u)
{
	if (!json_is_object(u))
		return;
	json_t *pct = json_object_get(u, "cpu_pct");
	fprintf(f, ", %s ", who);
	if (json_is_number(pct))
		fprintf(f, "%.1f%% CPU ", json_number_value(pct));
	fprintf(f, "%.1f MiB", (double)fmt_int(u, "rss_bytes") / 1048576.0);
}

/* The hooks, how long hooking and an attach's pause took, and the
 * drain's write-batch latency: what the recorder itself costs and how
 * fast its disk answers. */
static void fmt_hooks(FILE *f, json_t *st)
{
	json_t *h = json_object_get(st, "hooks"), *b = json_object_get(st, "batch_latency_ms");
	fprintf(f, ", hooks %lld installed %lld skipped", (long long)fmt_int(h, "installed"),
	        (long long)fmt_int(h, "skipped"));
	if (json_number_value(json_object_get(h, "hook_time_ms_max")) > 0)
		fprintf(f, " in %.1f ms",
		        json_number_value(json_object_get(h, "hook_time_ms_max")));
	if (fmt_int(h, "agent_json_too_large") > 0)
		fprintf(
		    f, " (the agent.json of %lld process%s is over %u MiB: its hooks not counted)",
		    (long long)fmt_int(h, "agent_json_too_large"),
		    fmt_int(h, "agent_json_too_large") == 1 ? "" : "es", ADA_AGENT_JSON_MAX >> 20);
	json_t *co = json_object_get(h, "count_only");
	if (fmt_int(co, "functions") > 0)
		fprintf(f, ", %lld count-only (%zu moved by the budget)",
		        (long long)fmt_int(co, "functions"),
		        json_array_size(json_object_get(co, "moved_by_budget")));
	if (json_is_number(json_object_get(st, "attach_pause_ms")))
		fprintf(f, ", attach paused the program %.1f ms",
		        json_number_value(json_object_get(st, "attach_pause_ms")));
	if (json_is_object(b))
		fprintf(f, ", write batches p50 %.2f ms p99 %.2f ms",
		        json_number_value(json_object_get(b, "p50")),
		        json_number_value(json_object_get(b, "p99")));
}

const char *cmd_ctl_span(uint64_t ns, char *buf, size_t cap)
{
	if (ns >= 1000000000ull)
		snprintf(buf, cap, "%.3g s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, cap, "%.3g ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.3g us", (double)ns / 1e3);
	return buf;
}

/* ", N wanted records not written (reason n, ...)" from a window's
 * window_missed, when any; only the reasons ada knows are read (the
 * reply is the other side's: its keys are not printed). */
static void fmt_window_missed(FILE *f, json_t *m)
{
	json_int_t n = 0;
	bool first = true;
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
		n += fmt_int(m, ada_window_miss_name(k)) > 0 ? fmt_int(m, ada_window_miss_name(k))
		                                             : 0;
	if (n <= 0)
		return;
	fprintf(f, ", %lld wanted records not written (", (long long)n);
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++) {
		json_int_t c = fmt_int(m, ada_window_miss_name(k));
		if (c <= 0)
			continue;
		fprintf(f, "%s%s %lld", first ? "" : ", ", ada_window_miss_name(k), (long long)c);
		first = false;
	}
	fprintf(f, "; not drops)");
}

/* A line per recent window of a live recording: the pre-roll its rings
 * reached so far of what it asked and its records; a shortfall is what
 * the rings overwrote first, never drops (the manifest says why). */
static void fmt_recent_windows(FILE *f, json_t *w)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(w, "recent"), i, e)
	{
		char a[32], b[32];
		json_int_t lost = fmt_int(e, "window_lost");
		fprintf(f, "  window %lld (%s%s): pre-roll %s %s of %s, %lld detail records",
		        (long long)fmt_int(e, "id"),
		        json_string_value(json_object_get(e, "trigger")),
		        json_is_true(json_object_get(e, "persisted")) ? "" : ", being written",
		        lost ? "achieved" : "so far",
		        cmd_ctl_span((uint64_t)fmt_int(e, "pre_achieved_ns"), a, 32),
		        cmd_ctl_span((uint64_t)fmt_int(e, "pre_roll_ns"), b, 32),
		        (long long)fmt_int(e, "records"));
		if (lost)
			fprintf(f, ", %lld wanted records already overwritten (not drops)",
			        (long long)lost);
		fmt_window_missed(f, json_object_get(e, "window_missed"));
		fputc('\n', f);
	}
}

/* "  drain: N passes, N sleeps (N rung, N looks_found), N looks, N
 * empty_rings, N averted", in the
 * manifests' words, and first, when it happened, that the drain polls
 * instead of sleeping, and why. */
static void fmt_drain(FILE *f, json_t *d)
{
	if (!json_is_object(d))
		return;
	const char *why = json_string_value(json_object_get(d, "polling"));
	fprintf(f, "  drain: ");
	if (why)
		fprintf(f, "polling every 1 ms instead of sleeping while idle: %s; ", why);
	else if (!json_is_true(json_object_get(d, "doorbell")))
		fprintf(f, "no doorbell (polling every 1 ms); ");
	fprintf(f,
	        "%lld passes, %lld sleeps (%lld rung, %lld looks_found), %lld looks, %lld "
	        "empty_rings, %lld averted\n",
	        (long long)fmt_int(d, "passes"), (long long)fmt_int(d, "sleeps"),
	        (long long)fmt_int(d, "rung"), (long long)fmt_int(d, "looks_found"),
	        (long long)fmt_int(d, "looks"), (long long)fmt_int(d, "empty_rings"),
	        (long long)fmt_int(d, "averted"));
}

/* "  --overhead-budget: counts still cost ~N % of pid P's CPU ...;
 * --exclude-symbol A,B,... would bring them to ~M %": hooks.count_only's
 * over_budget (src/recorder/exclude_hint.c, the summary line's rule), its
 * first ADA_AGENT_EXCL_SHOWN names, whole, and how many more. */
static void fmt_over_budget(FILE *f, json_t *ob)
{
	json_t *ex = json_object_get(ob, "exclude"), *e;
	size_t i, shown = 0;
	bool live = !json_is_true(json_object_get(ob, "final")); /* its process runs */
	if (!json_is_object(ob) || !json_array_size(ex))
		return;
	fprintf(f,
	        "  --overhead-budget: counts %scost ~%.0f %% of pid %lld's CPU (%.1f M calls at "
	        "~%.1f ns, an estimate%s); --exclude-symbol ",
	        live ? "" : "still ", json_number_value(json_object_get(ob, "counts_cost_pct")),
	        (long long)fmt_int(ob, "pid"), (double)fmt_int(ob, "counted_calls") / 1e6,
	        (double)fmt_int(ob, "count_cost_ps") / 1e3, live ? ", the counts so far" : "");
	json_array_foreach(ex, i, e)
	{
		if (i == ADA_AGENT_EXCL_SHOWN || !json_is_string(e))
			break;
		fprintf(f, "%s%s", i ? "," : "", json_string_value(e));
		shown++;
	}
	if (shown < json_array_size(ex))
		fprintf(f, " and %zu more (hooks.count_only.over_budget in --json)",
		        json_array_size(ex) - shown);
	fprintf(f, " would bring them to ~%.0f %% (docs/hooks.md, Pathological symbols)\n",
	        json_number_value(json_object_get(ob, "would_cost_pct")));
}

/* Processes the shared-memory ceiling left out or gave less detail: the
 * sentences of the summary and the manifests, one a line. */
static void fmt_shm(FILE *f, json_t *shm)
{
	const char *keys[] = {"reduced_why", "untraced_why", "arena_failed_why"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *why = json_string_value(json_object_get(shm, keys[i]));
		if (why)
			fprintf(f, "  shared memory: %s\n", why);
	}
}

/* "  warning: pid P: SENTENCE" for the first CMD_CTL_WARNINGS_SHOWN of
 * the status's warnings (the manifests'), then how many more --json
 * lists or counts. The sentences were made printable where they were
 * read (ada_control_printable_json). */
static void fmt_warnings(FILE *f, json_t *st)
{
	json_t *list = json_object_get(st, "warnings"), *e;
	size_t i, n = json_array_size(list);
	json_int_t more = fmt_int(st, "warnings_omitted");
	more = more > 0 ? more : 0;
	json_array_foreach(list, i, e)
	{
		const char *text = json_string_value(json_object_get(e, "text"));
		if (i == CMD_CTL_WARNINGS_SHOWN || !text)
			break;
		if (fmt_int(e, "pid") > 0)
			fprintf(f, "  warning: pid %lld: %s", (long long)fmt_int(e, "pid"), text);
		else /* live: the recording's, every manifest has it */
			fprintf(f, "  warning: every process: %s", text);
		if (fmt_int(e, "processes") > 1)
			fprintf(f, " (and %lld more process%s)",
			        (long long)fmt_int(e, "processes") - 1,
			        fmt_int(e, "processes") == 2 ? "" : "es");
		fputc('\n', f);
	}
	more += (json_int_t)(n - i); /* listed, not shown */
	if (more > 0)
		fprintf(f, "  warning: and %lld more (--json)\n", (long long)more);
}

void cmd_ctl_print_status(FILE *f, const char *name, json_t *st)
{
	json_t *procs = json_object_get(st, "processes");
	json_t *w = json_object_get(st, "windows"), *ks = json_object_get(st, "keysym_version");
	bool live = json_is_true(json_object_get(st, "recording"));
	/* every process, listed or not (the list holds 64 at most) */
	size_t np = json_array_size(procs) + (size_t)fmt_int(st, "processes_omitted");
	size_t nfin = (size_t)fmt_int(st, "processes_finished");
	fprintf(f, "%s: %s, %zu process%s", name, live ? "recording" : "ended", np,
	        np == 1 ? "" : "es");
	if (live && nfin > 0 && nfin <= np)
		fprintf(f, " (%zu running)", np - nfin);
	if (json_is_number(json_object_get(st, "uptime_sec")))
		fprintf(f, ", up %.1f s", json_number_value(json_object_get(st, "uptime_sec")));
	fprintf(f, ", %lld events", (long long)fmt_int(st, "events"));
	if (json_is_integer(json_object_get(st, "events_per_sec")))
		fprintf(f, " (%lld/s)", (long long)fmt_int(st, "events_per_sec"));
	if (fmt_int(st, "index_events") > 0)
		fprintf(f, ", index %.2f bytes/event",
		        (double)fmt_int(st, "index_bytes") / (double)fmt_int(st, "index_events"));
	fmt_drops(f, st);
	if (json_is_true(json_object_get(st, "disk_full")))
		fprintf(f, ", DISK FULL: writing stopped, %lld events not written",
		        (long long)fmt_int(st, "events_not_written"));
	if (fmt_int(st, "ring_waits") > 0)
		fprintf(f, ", waited %lld time%s (%.3f s) for ring space",
		        (long long)fmt_int(st, "ring_waits"),
		        fmt_int(st, "ring_waits") == 1 ? "" : "s",
		        json_number_value(json_object_get(st, "ring_waited_sec")));
	if (fmt_int(st, "detail_overwritten"))
		fprintf(f, ", %lld older detail records overwritten in memory (not drops)",
		        (long long)fmt_int(st, "detail_overwritten"));
	if (live)
		fprintf(f, ", ring fill max %lld%%", (long long)fmt_int(st, "ring_fill_pct_max"));
	fmt_rings(f, st);
	fmt_hooks(f, st);
	/* "persisted" counts windows written to their end: a window the
	 * recording ended inside has its records on disk too, so the line
	 * says closed, and for a finished session how many the end cut. */
	json_int_t wtotal = fmt_int(w, "total"), wclosed = fmt_int(w, "persisted");
	fprintf(f, ", windows %lld (%lld closed", (long long)wtotal, (long long)wclosed);
	if (!live && wtotal > wclosed)
		fprintf(f, ", %lld cut short by the end of the recording",
		        (long long)(wtotal - wclosed));
	fputc(')', f);
	if (json_is_integer(json_object_get(st, "detail_records")))
		fprintf(f, ", %lld detail records persisted",
		        (long long)fmt_int(st, "detail_records"));
	/* --detail always: the price of keeping every record, when paid. */
	if (fmt_int(st, "detail_waits") > 0)
		fprintf(f, " (the program waited %lld time%s, %.3f s in all, for room)",
		        (long long)fmt_int(st, "detail_waits"),
		        fmt_int(st, "detail_waits") == 1 ? "" : "s",
		        json_number_value(json_object_get(st, "detail_waited_sec")));
	fprintf(f, ", %lld trigger%s armed",
	        (long long)fmt_int(json_object_get(st, "triggers"), "armed"),
	        fmt_int(json_object_get(st, "triggers"), "armed") == 1 ? "" : "s");
	if (json_is_integer(ks))
		fprintf(f, ", key symbols v%lld", (long long)json_integer_value(ks));
	/* Module ids that version says nothing about (module 0, the agent's
	 * own code, always): the agent decides them from its start-time set. */
	if (json_is_integer(ks) && json_is_integer(json_object_get(st, "keysym_unknown")))
		fprintf(f, " (%lld module%s unknown)", (long long)fmt_int(st, "keysym_unknown"),
		        fmt_int(st, "keysym_unknown") == 1 ? "" : "s");
	fmt_usage(f, "recorder", json_object_get(st, "recorder"));
	fmt_usage(f, "target", json_object_get(st, "target"));
	fputc('\n', f);
	fmt_shm(f, json_object_get(st, "shm"));
	fmt_drain(f, json_object_get(st, "drain"));
	fmt_over_budget(f,
	                json_object_get(json_object_get(json_object_get(st, "hooks"), "count_only"),
	                                "over_budget"));
	fmt_recent_windows(f, w);
	fmt_warnings(f, st);
}

/* ---- the same object from a finished session's manifests ---- */

static void man_add_drops(json_t *st, json_t *man)
{
	json_t *d = json_object_get(st, "drops"), *lane;
	const char *ln;
	json_object_foreach(json_object_get(man, "drops"), ln, lane)
	{
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
			const char *name = ada_drop_reason_name((unsigned)k);
			json_int_t n = json_integer_value(json_object_get(lane, name));
			json_object_set_new(d, name,
			                    json_integer(fmt_int(d, name) + (n > 0 ? n : 0)));
		}
	}
}

/* The manifest's final count_only into hooks.count_only, as the live
 * status sums the agents' (src/control/method_status.c). */
static void man_add_count_only(json_t *h, json_t *man)
{
	json_t *co = json_object_get(h, "count_only"),
	       *moved = json_object_get(co, "moved_by_budget");
	json_int_t fns = fmt_int(co, "functions"), calls = fmt_int(co, "calls");
	/* never called: counted, not listed */
	fns += (json_int_t)ada_count_only_uncalled(json_object_get(man, "count_only"));
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(json_object_get(man, "count_only"), "functions"), i, e)
	{
		json_int_t n = fmt_int(e, "calls");
		fns++;
		if (n > 0) /* saturating: the file is the target's */
			calls = n > INT64_MAX - calls ? INT64_MAX : calls + n;
		const char *why = json_string_value(json_object_get(e, "moved"));
		if (why && !strcmp(why, "budget") && json_array_size(moved) < 64)
			json_array_append_new(
			    moved,
			    json_pack("{s:I,s:O?,s:I,s:I,s:I}", "pid", fmt_int(man, "pid"), "name",
			              json_object_get(e, "name"), "calls_per_s",
			              fmt_int(e, "calls_per_s"), "mean_ns", fmt_int(e, "mean_ns"),
			              "moved_after_ms", fmt_int(e, "moved_after_ms")));
	}
	json_object_set_new(co, "functions", json_integer(fns));
	json_object_set_new(co, "calls", json_integer(calls));
	/* The manifest's exclude hint (final counts), of the process with the
	 * most counted calls, as the live status and the summary keep it. */
	json_t *ob = json_object_get(json_object_get(man, "count_only"), "over_budget");
	if (json_is_object(ob) &&
	    fmt_int(ob, "counted_calls") >
	        fmt_int(json_object_get(co, "over_budget"), "counted_calls")) {
		json_t *c = json_deep_copy(ob);
		json_object_set_new(c, "pid", json_integer(fmt_int(man, "pid")));
		json_object_set_new(c, "final", json_true()); /* the manifest's only when final */
		json_object_set_new(co, "over_budget", c);
	}
}

/* The shared-memory ceiling's counts are the recording's, as the drain's:
 * the manifest that counts the most processes left out or cut down is the
 * latest. */
static void man_add_shm(json_t *st, json_t *man)
{
	json_t *shm = json_object_get(man, "shm"), *had = json_object_get(st, "shm");
	if (json_is_object(shm) &&
	    (!json_is_object(had) ||
	     fmt_int(shm, "untraced_processes") + fmt_int(shm, "reduced_processes") +
	             fmt_int(shm, "arena_failed_processes") >=
	         fmt_int(had, "untraced_processes") + fmt_int(had, "reduced_processes") +
	             fmt_int(had, "arena_failed_processes")))
		json_object_set(st, "shm", shm);
}

/* The manifest's warnings (docs/manifest.md): the first
 * CMD_CTL_WARNINGS_MAX distinct sentences, each with the first pid whose
 * manifest said it and how many processes' did; sentences past those
 * counted in warnings_omitted (not told apart). Bounded: a manifest is
 * the target's to write. */
static void man_add_warnings(json_t *st, json_t *man)
{
	json_t *list = json_object_get(st, "warnings"), *w;
	size_t i;
	json_array_foreach(json_object_get(man, "warnings"), i, w)
	{
		json_t *e = NULL;
		if (!json_is_string(w))
			continue;
		for (size_t j = 0; !e && j < json_array_size(list); j++)
			if (json_equal(json_object_get(json_array_get(list, j), "text"), w))
				e = json_array_get(list, j);
		if (e && fmt_int(e, "last_pid") != fmt_int(man, "pid")) /* once a process */
			json_object_set_new(e, "processes",
			                    json_integer(fmt_int(e, "processes") + 1));
		if (e)
			json_object_set_new(e, "last_pid", json_integer(fmt_int(man, "pid")));
		else if (json_array_size(list) < CMD_CTL_WARNINGS_MAX)
			json_array_append_new(
			    list, json_pack("{s:I,s:O,s:i,s:I}", "pid", fmt_int(man, "pid"), "text",
			                    w, "processes", 1, "last_pid", fmt_int(man, "pid")));
		else
			json_object_set_new(st, "warnings_omitted",
			                    json_integer(fmt_int(st, "warnings_omitted") + 1));
	}
}

static void man_add_counts(json_t *st, json_t *man)
{
	json_t *m = json_object_get(man, "metrics"), *hook = json_object_get(man, "hook");
	json_t *fr = json_object_get(man, "flight_recorder"), *h = json_object_get(st, "hooks");
	json_int_t ev = fmt_int(m, "events_written");
	json_object_set_new(st, "events", json_integer(fmt_int(st, "events") + (ev > 0 ? ev : 0)));
	json_int_t ib = fmt_int(m, "index_bytes"), ie = fmt_int(m, "index_events");
	json_object_set_new(st, "index_bytes",
	                    json_integer(fmt_int(st, "index_bytes") + (ib > 0 ? ib : 0)));
	json_object_set_new(st, "index_events",
	                    json_integer(fmt_int(st, "index_events") + (ie > 0 ? ie : 0)));
	json_int_t rw = fmt_int(m, "ring_waits"), rns = fmt_int(m, "ring_waited_ns");
	json_object_set_new(st, "ring_waits",
	                    json_integer(fmt_int(st, "ring_waits") + (rw > 0 ? rw : 0)));
	json_object_set_new(st, "ring_waited_sec",
	                    json_real(json_number_value(json_object_get(st, "ring_waited_sec")) +
	                              (rns > 0 ? (double)rns / 1e9 : 0)));
	man_add_drops(st, man);
	/* The drain's counts are the recording's: each manifest has them as
	 * they were when it was written; the one of the most passes is the
	 * latest. */
	json_t *dr = json_object_get(man, "drain");
	if (json_is_object(dr) &&
	    fmt_int(dr, "passes") >= fmt_int(json_object_get(st, "drain"), "passes"))
		json_object_set(st, "drain", dr);
	man_add_shm(st, man);
	json_array_append_new(
	    json_object_get(st, "processes"),
	    json_pack("{s:I,s:b,s:I}", "pid", fmt_int(man, "pid"), "finished", 1, "events", ev));
	json_int_t sk = 0;
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(hook, "skipped"), k, v) sk += json_integer_value(v);
	json_object_set_new(h, "installed",
	                    json_integer(fmt_int(h, "installed") + fmt_int(hook, "installed")));
	json_object_set_new(h, "skipped", json_integer(fmt_int(h, "skipped") + sk));
	double ms = (double)fmt_int(json_object_get(hook, "hook_time_us"), "total") / 1e3;
	if (ms > json_number_value(json_object_get(h, "hook_time_ms_max")))
		json_object_set_new(h, "hook_time_ms_max", json_real(ms));
	man_add_count_only(h, man);
	/* Windows are the recording's: every manifest lists all of them. */
	json_t *w = json_object_get(st, "windows"), *wins = json_object_get(fr, "windows");
	if ((json_int_t)json_array_size(wins) > fmt_int(w, "total")) {
		json_int_t closed = 0;
		size_t i;
		json_array_foreach(wins, i, v) closed += json_is_true(json_object_get(v, "closed"));
		json_object_set_new(w, "total", json_integer((json_int_t)json_array_size(wins)));
		json_object_set_new(w, "persisted", json_integer(closed));
	}
	json_object_set_new(
	    json_object_get(st, "triggers"), "armed",
	    json_integer((json_int_t)json_array_size(json_object_get(fr, "triggers"))));
	const char *mode =
	    json_string_value(json_object_get(json_object_get(man, "detail"), "mode"));
	if (mode)
		json_object_set_new(st, "detail_mode", json_string(mode));
	if (mode && strcmp(mode, "never")) {
		json_int_t rec = fmt_int(json_object_get(man, "detail"), "records");
		json_object_set_new(
		    st, "detail_records",
		    json_integer(fmt_int(st, "detail_records") + (rec > 0 ? rec : 0)));
	}
	if (mode && !strcmp(mode, "always")) { /* the waits for room */
		json_t *d = json_object_get(man, "detail");
		json_int_t waits = fmt_int(d, "waits"), ns = fmt_int(d, "waited_ns");
		json_object_set_new(
		    st, "detail_waits",
		    json_integer(fmt_int(st, "detail_waits") + (waits > 0 ? waits : 0)));
		json_object_set_new(
		    st, "detail_waited_sec",
		    json_real(json_number_value(json_object_get(st, "detail_waited_sec")) +
		              (ns > 0 ? (double)ns / 1e9 : 0)));
	}
	if (mode && !strcmp(mode, "triggered")) { /* information, not a drop */
		json_int_t over = fmt_int(json_object_get(man, "detail"), "overwritten");
		json_object_set_new(
		    st, "detail_overwritten",
		    json_integer(fmt_int(st, "detail_overwritten") + (over > 0 ? over : 0)));
	}
}

/* One manifest: its counts and its warnings. */
static void man_add(json_t *st, json_t *man)
{
	man_add_counts(st, man);
	man_add_warnings(st, man);
}

/* A retired process's line (retired.jsonl) has the manifest's keys the
 * totals read: added as its manifest was. */
static int man_add_retired(json_t *line, void *st)
{
	man_add(st, line);
	return 0;
}

json_t *cmd_ctl_status_from_manifests(const char *session)
{
	json_t *st = json_pack(
	    "{s:b,s:I,s:{},s:[],s:[],s:{s:I,s:I,s:f,s:I,s:{s:I,s:I,s:[]}},s:{s:I,s:I},s:{s:I},s:n,"
	    "s:n,s:n,s:n,s:n,s:[],s:I}",
	    "recording", 0, "events", (json_int_t)0, "drops", "processes", "rings", "hooks",
	    "installed", (json_int_t)0, "skipped", (json_int_t)0, "hook_time_ms_max", 0.0,
	    "agent_json_too_large", (json_int_t)0, "count_only", "functions", (json_int_t)0,
	    "calls", (json_int_t)0, "moved_by_budget", "windows", "total", (json_int_t)0,
	    "persisted", (json_int_t)0, "triggers", "armed", (json_int_t)0, "keysym_version",
	    "keysym_unknown", "keysym_cover", "recorder", "target", "warnings", "warnings_omitted",
	    (json_int_t)0);
	DIR *d = st ? ada_fs_opendir(AT_FDCWD, session) : NULL;
	if (!d) {
		json_decref(st);
		return NULL;
	}
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		char p[PATH_MAX];
		json_t *man;
		if (ada_fs_entry_kind(dirfd(d), de) != ADA_FS_DIR ||
		    strncmp(de->d_name, "pid_", 4) ||
		    snprintf(p, sizeof(p), "%s/%s", session, de->d_name) >= (int)sizeof(p) ||
		    ada_manifest_read(p, &man) < 0)
			continue;
		man_add(st, man);
		json_decref(man);
	}
	closedir(d);
	(void)ada_retired_foreach(session, man_add_retired, st, NULL);
	size_t k; /* last_pid was the walk's own */
	json_t *w;
	json_array_foreach(json_object_get(st, "warnings"), k, w) json_object_del(w, "last_pid");
	/* pid_N/ is writable by the target's user: what its manifests said
	 * is shown as the live client shows a server's answer. */
	ada_control_printable_json(st);
	return st;
}
