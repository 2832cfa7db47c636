/*
 * status -> what the recording is doing now (OB-001): events/s, drops/s
 * by reason, ring fill, seconds of detail each ring holds, hooks installed
 * and skipped, windows persisted, key-symbol version, recorder and target
 * CPU and memory. The counts come from the view the drain published last
 * (at most a second old); CPU and memory from /proc now. docs/control.md
 * lists every field; `ada status --json` prints this object as it is.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control_internal.h"
#include "fs.h"
#include "manifest.h"

static const char *status_detail_name(uint32_t m)
{
	return m == ADA_DETAIL_ALWAYS ? "always" : m == ADA_DETAIL_NEVER ? "never" : "triggered";
}

/* What the agents said about their hooks, summed over the processes. */
struct status_hook_sum {
	json_int_t installed, skipped;
	json_int_t time_us_max;                      /* the slowest process's hook_time_us.total */
	json_int_t count_only_fns, count_only_calls; /* --count-only, budget moves */
	json_t *moved;        /* --overhead-budget's moves: pid, name, when, why */
	json_t *over;         /* the over_budget hint of the process with the most counted calls */
	json_int_t too_large; /* agent.json files past ADA_AGENT_JSON_MAX: not read */
};

#define STATUS_MOVED_MAX 64 /* moves listed; the count says the rest */

/* The exclude hint of a count_only section (the manifest's rule,
 * ada_exclude_hint_of) as the agent last wrote it, kept when its process
 * has more counted calls than the one kept: the summary line's choice.
 * Until the process's exit (final: false) the counts are every thread's
 * so far (the agent's live snapshot, docs/hooks.md "Live counts") and the
 * CPU time as of the same write. */
static void status_over_budget_of(json_t *co, pid_t pid, struct status_hook_sum *sum)
{
	json_t *ob = ada_exclude_hint_of(co);
	if (!ob)
		return;
	json_int_t calls = json_integer_value(json_object_get(ob, "counted_calls"));
	if (sum->over && calls <= json_integer_value(json_object_get(sum->over, "counted_calls"))) {
		json_decref(ob);
		return;
	}
	json_object_set_new(ob, "pid", json_integer(pid));
	json_object_set_new(ob, "final", json_boolean(json_is_true(json_object_get(co, "final"))));
	json_decref(sum->over);
	sum->over = ob;
}

/* agent.json's count_only (docs/hooks.md): its functions and calls summed,
 * the budget's moves listed with their pid, its exclude hint. */
static void status_count_only_of(json_t *a, pid_t pid, struct status_hook_sum *sum)
{
	size_t i;
	json_t *e, *co = json_object_get(a, "count_only");
	/* The functions never called: counted, not listed (hooks.md). */
	sum->count_only_fns += ada_count_only_uncalled(co);
	json_array_foreach(json_object_get(co, "functions"), i, e)
	{
		json_t *calls = json_object_get(e, "calls"), *name = json_object_get(e, "name");
		sum->count_only_fns++;
		/* Saturating: the file is the target's (its counts may lie). */
		json_int_t n = json_integer_value(calls);
		if (n > 0)
			sum->count_only_calls = n > INT64_MAX - sum->count_only_calls
			                            ? INT64_MAX
			                            : sum->count_only_calls + n;
		const char *moved = json_string_value(json_object_get(e, "moved"));
		if (!moved || strcmp(moved, "budget") || !json_is_string(name) ||
		    json_array_size(sum->moved) >= STATUS_MOVED_MAX)
			continue;
		json_array_append_new(
		    sum->moved,
		    json_pack("{s:i,s:O,s:I,s:I,s:I}", "pid", (int)pid, "name", name, "calls_per_s",
		              json_integer_value(json_object_get(e, "calls_per_s")), "mean_ns",
		              json_integer_value(json_object_get(e, "mean_ns")), "moved_after_ms",
		              json_integer_value(json_object_get(e, "moved_after_ms"))));
	}
	status_over_budget_of(json_object_get(a, "count_only"), pid, sum);
}

/* pid_N/agent.json (written by the agent inside the target: input, read
 * whole up to ADA_AGENT_JSON_MAX bytes, the ceiling every agent.json
 * reader keeps; one past it is counted in too_large, not read) adds its
 * installed and skipped hook counts and the time its hooking took. */
static void status_hooks_of(int session_fd, pid_t pid, struct status_hook_sum *sum)
{
	char name[64];
	int fd = -1;
	struct stat st;
	size_t n = 0;
	snprintf(name, sizeof(name), "pid_%d/agent.json", (int)pid);
	if (session_fd < 0 || ada_fs_open_file(session_fd, name, O_RDONLY, &fd) < 0)
		return;
	/* Its size first: one past the ceiling is not read at all. */
	bool over = fstat(fd, &st) == 0 && (uint64_t)st.st_size > ADA_AGENT_JSON_MAX;
	char *buf = over ? NULL : ada_json_readfd(fd, ADA_AGENT_JSON_MAX, &n);
	sum->too_large += over;
	close(fd);
	json_t *a = buf ? json_loadb(buf, n, 0, NULL) : NULL;
	free(buf);
	json_t *in = json_object_get(a, "installed");
	if (json_is_integer(in) && json_integer_value(in) > 0)
		sum->installed += json_integer_value(in);
	json_t *t = json_object_get(json_object_get(a, "hook_time_us"), "total");
	if (json_is_integer(t) && json_integer_value(t) > sum->time_us_max)
		sum->time_us_max = json_integer_value(t);
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(a, "skipped"), k,
	                    v) if (json_is_integer(v) && json_integer_value(v) > 0) sum->skipped +=
	    json_integer_value(v);
	status_count_only_of(a, pid, sum);
	json_decref(a);
}

static json_t *status_hooks(struct ada_control *c)
{
	struct status_hook_sum sum = {.moved = json_array()};
	for (uint32_t i = 0; i < c->live->nprocs; i++)
		status_hooks_of(c->h.session_fd, c->live->procs[i].pid, &sum);
	return json_pack("{s:I,s:I,s:f,s:I,s:{s:I,s:I,s:o,s:o*}}", "installed", sum.installed,
	                 "skipped", sum.skipped, "hook_time_ms_max", (double)sum.time_us_max / 1e3,
	                 "agent_json_too_large", sum.too_large, "count_only", "functions",
	                 sum.count_only_fns, "calls", sum.count_only_calls, "moved_by_budget",
	                 sum.moved, "over_budget", sum.over);
}

static json_t *status_drops(const uint64_t *d)
{
	json_t *o = json_object();
	for (int k = 0; o && k < ADA_DROP_REASON_COUNT; k++)
		json_object_set_new(o, ada_drop_reason_name((unsigned)k),
		                    json_integer((json_int_t)d[k]));
	return o;
}

static json_t *status_procs(const struct ada_recorder_live *v)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < v->nprocs; i++) {
		const struct ada_live_proc *p = &v->procs[i];
		json_array_append_new(
		    a, json_pack("{s:i,s:b,s:i,s:i,s:I}", "pid", (int)p->pid, "finished",
		                 p->finished, "threads", (int)p->threads, "ring_fill_pct",
		                 (int)p->ring_fill_pct, "events", (json_int_t)p->events));
	}
	return a;
}

static json_t *status_rings(const struct ada_recorder_live *v)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < v->nrings; i++) {
		const struct ada_live_ring *r = &v->rings[i];
		json_array_append_new(a, json_pack("{s:i,s:i,s:i,s:f}", "pid", (int)r->pid,
		                                   "thread", (int)r->thread, "tid", (int)r->tid,
		                                   "detail_sec", (double)r->detail_span_ns / 1e9));
	}
	return a;
}

/* The last STATUS_RECENT_WINDOWS windows with what each got so far: the
 * per-window lines of `ada status PID`. */
#define STATUS_RECENT_WINDOWS 5

static json_t *status_recent_windows(const struct ada_recorder_live *v)
{
	json_t *a = json_array();
	uint32_t first =
	    v->nwindows > STATUS_RECENT_WINDOWS ? v->nwindows - STATUS_RECENT_WINDOWS : 0;
	for (uint32_t i = first; a && i < v->nwindows; i++)
		json_array_append_new(a, ctl_window_json(&v->windows[i], &v->windows_got[i]));
	return a;
}

static json_t *status_triggers(struct ada_control *c)
{
	const struct ada_trigger_stats *s = &c->live->trig;
	struct ada_trigger_spec sp[ADA_TRIGGER_MAX];
	size_t armed = ada_trigger_list(c->h.trig, sp, ADA_TRIGGER_MAX);
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "armed", (json_int_t)armed, "fires",
	                 (json_int_t)s->fires, "held_off", (json_int_t)s->held_off, "escalated",
	                 (json_int_t)s->escalated, "over_max_windows", (json_int_t)s->over_max,
	                 "merged", (json_int_t)s->merged, "manual_ignored",
	                 (json_int_t)s->manual_ignored, "manual_dropped",
	                 (json_int_t)c->live->manual_dropped);
}

/* The recorder's CPU and memory; of its heap in use, the pools kept for
 * reuse (bounded, following the load): the rest is what it holds for
 * the processes (docs/internals.md, "Memory over many processes"). */
static json_t *status_recorder(struct ada_control *c, const struct ada_recorder_live *v)
{
	json_t *o = ctl_proc_usage(c, false);
	json_object_set_new(o, "heap_pools_bytes",
	                    json_pack("{s:I,s:I,s:I,s:I}", "staging",
	                              (json_int_t)v->heap_staging_bytes, "windows",
	                              (json_int_t)v->heap_window_bytes, "snapshot",
	                              (json_int_t)v->heap_snapshot_bytes, "index_spares",
	                              (json_int_t)v->heap_spare_bytes));
	return o;
}

/* The session's counts of unknown exit statuses (wait_notes.c). */
static json_t *status_wait(const struct ada_recorder_live *v)
{
	const struct ada_wait_status_counts *w = &v->wait_statuses;
	return json_pack("{s:I,s:I,s:I}", "unknown_processes", (json_int_t)w->unknown,
	                 "overwritten", (json_int_t)w->overwritten, "refused",
	                 (json_int_t)w->refused);
}

/* The shared-memory ceiling as the manifests' `shm` says it: processes
 * that ran untraced, or got smaller detail rings, and why; the arena
 * pool's hits and misses (a miss: a process made its arena anew). */
static json_t *status_shm(const struct ada_recorder_live *v)
{
	const struct ada_shm_budget_view *s = &v->shm;
	char why[512];
	json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ceiling_bytes",
	                      (json_int_t)s->ceiling, "in_use_bytes", (json_int_t)s->reserved,
	                      "peak_bytes", (json_int_t)s->peak, "arenas", (json_int_t)s->arenas,
	                      "untraced_processes", (json_int_t)s->refused_procs,
	                      "delayed_processes", (json_int_t)s->waited_procs, "reduced_processes",
	                      (json_int_t)s->reduced_procs);
	if (!o)
		return json_null();
	json_object_set_new(o, "pool_hits", json_integer((json_int_t)v->pool_hits));
	json_object_set_new(o, "pool_misses", json_integer((json_int_t)v->pool_misses));
	json_object_set_new(o, "reduced_why",
	                    ada_shm_budget_reduced_why(s, why, sizeof(why)) ? json_string(why)
	                                                                    : json_null());
	json_object_set_new(o, "untraced_why",
	                    ada_shm_budget_untraced_why(s, why, sizeof(why)) ? json_string(why)
	                                                                     : json_null());
	json_object_set_new(o, "arena_failed_processes", json_integer((json_int_t)s->failed_procs));
	json_object_set_new(o, "arena_failed_why",
	                    ada_shm_budget_failed_why(s, why, sizeof(why)) ? json_string(why)
	                                                                   : json_null());
	return o;
}

/* The warning sentences the recording kept (the manifests' `warnings`,
 * docs/control.md): pid (0: the recording's, in every manifest), text,
 * processes; one that is not UTF-8 is counted with the rest. */
static void status_warnings(json_t *o, const struct ada_recorder_live *v)
{
	json_t *a = json_array();
	json_int_t omitted = (json_int_t)v->warnings_omitted;
	for (uint32_t i = 0; a && i < v->nwarnings && i < ADA_LIVE_MAX_WARNINGS; i++) {
		const struct ada_live_warning *w = &v->warnings[i];
		json_t *e = json_pack("{s:i,s:s,s:i}", "pid", (int)w->pid, "text", w->text,
		                      "processes", (int)w->processes);
		if (e)
			json_array_append_new(a, e);
		else
			omitted++;
	}
	json_object_set_new(o, "warnings", a ? a : json_array());
	json_object_set_new(o, "warnings_omitted", json_integer(omitted));
}

void ctl_method_status(struct ctl_call *k)
{
	struct ada_control *c = k->c;
	if (!ctl_live(k))
		return;
	const struct ada_recorder_live *v = c->live;
	json_t *ks = c->h.keysym_version ? json_integer((json_int_t)c->h.keysym_version(c->h.ctx))
	                                 : json_null();
	json_t *o = json_pack(
	    "{s:b,s:f,s:s,s:I,s:I,s:o,s:o,s:i,s:o,s:i,s:o,s:i,s:o,s:{s:I,s:I,s:o},s:o,s:o,s:o}",
	    "recording", !v->ended, "uptime_sec", (double)(v->at_ns - v->start_ns) / 1e9,
	    "detail_mode", status_detail_name(v->detail_mode), "events", (json_int_t)v->events,
	    "events_per_sec", (json_int_t)v->events_per_sec, "drops", status_drops(v->drops),
	    "drops_per_sec", status_drops(v->drops_per_sec), "ring_fill_pct_max",
	    (int)v->ring_fill_pct_max, "processes", status_procs(v), "processes_omitted",
	    (int)v->procs_omitted, "rings", status_rings(v), "rings_omitted", (int)v->rings_omitted,
	    "hooks", status_hooks(c), "windows", "total", (json_int_t)v->windows_total, "persisted",
	    (json_int_t)v->windows_closed, "recent", status_recent_windows(v), "triggers",
	    status_triggers(c), "keysym_version", ks, "wait_statuses", status_wait(v));
	if (o) {
		if (v->detail_mode != ADA_DETAIL_NEVER)
			json_object_set_new(o, "detail_records",
			                    json_integer((json_int_t)v->detail_records));
		if (v->detail_mode == ADA_DETAIL_TRIGGERED) /* information, not a drop */
			json_object_set_new(o, "detail_overwritten",
			                    json_integer((json_int_t)v->detail_overwritten));
		/* what the index encoding costs on disk */
		json_object_set_new(o, "index_bytes", json_integer((json_int_t)v->index_bytes));
		json_object_set_new(o, "index_events", json_integer((json_int_t)v->index_events));
		/* what the drain running behind cost the program */
		json_object_set_new(o, "ring_waits", json_integer((json_int_t)v->ring_waits));
		json_object_set_new(o, "ring_waited_sec",
		                    json_real((double)v->ring_waited_ns / 1e9));
		json_object_set_new(o, "disk_full", json_boolean(v->disk_full));
		json_object_set_new(o, "processes_finished",
		                    json_integer((json_int_t)v->procs_finished));
		/* a later process given a recorded pid: never among those */
		json_object_set_new(o, "pid_reused_arenas",
		                    json_integer((json_int_t)v->pid_reused_arenas));
		/* nor one the shared-memory ceiling left out */
		json_object_set_new(o, "shm", status_shm(v));
		status_warnings(o, v);
		json_object_set_new(o, "events_not_written",
		                    json_integer((json_int_t)v->events_not_written));
		json_object_set_new(o, "batch_latency_ms",
		                    json_pack("{s:f,s:f}", "p50",
		                              (double)v->batch_latency_p50_ns / 1e6, "p99",
		                              (double)v->batch_latency_p99_ns / 1e6));
		/* the drain's passes and sleeps, in the manifests' words */
		json_object_set_new(o, "drain", ada_drain_json(&v->drain));
		if (v->attach_pause_ns)
			json_object_set_new(o, "attach_pause_ms",
			                    json_real((double)v->attach_pause_ns / 1e6));
		if (v->detail_mode == ADA_DETAIL_ALWAYS) { /* what keeping them all costs */
			json_object_set_new(o, "detail_waits",
			                    json_integer((json_int_t)v->detail_waits));
			json_object_set_new(o, "detail_waited_sec",
			                    json_real((double)v->detail_waited_ns / 1e9));
		}
		json_t *cover = c->h.keysym_cover ? c->h.keysym_cover(c->h.ctx) : NULL;
		/* The cover's `unknown` once more at the top, beside
		 * keysym_version: what `ada status` prints. */
		json_t *unk = json_object_get(cover, "unknown");
		json_object_set_new(o, "keysym_unknown", unk ? json_incref(unk) : json_null());
		json_object_set_new(o, "keysym_cover", cover ? cover : json_null());
		json_object_set_new(o, "recorder", status_recorder(c, v));
		json_object_set_new(o, "target", ctl_proc_usage(c, true)); /* reads c->live again */
		json_object_set_new(
		    o, "control",
		    json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:i,s:s?}", "clients",
		              (int)c->nclients, "refused_peers", (json_int_t)c->refused_peers,
		              "refused_busy", (json_int_t)c->refused_busy, "evicted_idle",
		              (json_int_t)c->evicted, "timed_out", (json_int_t)c->timed_out,
		              "oversized_lines", (json_int_t)c->oversized, "slow_lane_requests",
		              (json_int_t)c->slow.handed, "slow_lane_busy", c->slow.client_id != 0,
		              "registered_pids", (int)c->nreg, "registry_error",
		              c->reg_error ? strerror(c->reg_error) : NULL));
	}
	k->result = o;
}
