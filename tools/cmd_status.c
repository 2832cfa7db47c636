/*
 * ada status DIR: what a recording is doing now (or did), per process, and
 * for a session a last line with its totals.
 * DIR is a session or a pid_N directory. For a process still recording,
 * the numbers come live from its shared-memory arena (the metrics the
 * drain publishes there once a second: events/s, drops/s by reason, ring
 * fill, encode-to-disk latency p50/p99, and the drain's heartbeat); for a
 * finished one, from its manifest. A manifest that says "recording" is
 * believed only while its recorder runs (pid and start time, alive.c): a
 * recorder that died is said so, with what to do.
 *
 * For a session, a last line: the same one-line summary as `ada status
 * PID`, live or from the manifests.
 *
 * ada status PID, and --json / --watch: the live one-line view from the
 * recording's control socket (the `status` method, docs/control.md), or,
 * once the recording has ended, the same object built from its manifests
 * and printed by the same formatter (cmd_ctl.c).
 *
 * The totals use the words and the counts of the `ada record` summary
 * line: events written, not written (disk full), deleted by the disk
 * budget, drops by reason, processes untraced (shared-memory ceiling).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "cmd.h"
#include "control.h"
#include "fs.h"
#include "manifest.h"
#include "ring.h"
#include "read.h"
#include "recorder.h"

struct status_tot {
	uint32_t procs, dead;
	uint64_t written, lost, retired;
	/* The index files' bytes and their events (bytes per event); a live
	 * process adds its published ratio times its events. */
	double index_bytes;
	uint64_t index_events;
	uint64_t drops[ADA_DROP_REASON_COUNT];
	uint64_t untraced, shm_ceiling, shm_peak;
	uint64_t reduced;    /* recorded with smaller detail rings (the ceiling) */
	uint64_t pid_reused; /* arenas of a reused pid: not read (manifests' shm) */
	/* processes whose exit status nothing told; reapers' notes lost
	 * (manifests' wait_statuses, the session's counts when written) */
	uint64_t exit_unknown, notes_overwritten, notes_refused;
	bool disk_full, live_shm;
};

static uint64_t status_u64(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static uint64_t status_int(json_t *o, const char *key);

/* The session's counts of unknown exit statuses, as the latest manifest
 * says them (each holds them as when it was written: the largest). */
static void status_wait_counts(json_t *w, struct status_tot *t)
{
	uint64_t v;
	if ((v = status_int(w, "unknown_processes")) > t->exit_unknown)
		t->exit_unknown = v;
	if ((v = status_int(w, "overwritten")) > t->notes_overwritten)
		t->notes_overwritten = v;
	if ((v = status_int(w, "refused")) > t->notes_refused)
		t->notes_refused = v;
}

static uint64_t status_int(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v > 0 ? (uint64_t)v : 0;
}

/* "drops N (ring_full a, ...)", as `ada record` prints it. */
static void status_drops_text(const uint64_t d[ADA_DROP_REASON_COUNT], char *buf, size_t cap)
{
	uint64_t total = 0;
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
		total += d[k];
	size_t used = (size_t)snprintf(buf, cap, "drops %llu", (unsigned long long)total);
	bool any = false;
	for (int k = 0; k < ADA_DROP_REASON_COUNT && used < cap; k++) {
		if (!d[k])
			continue;
		int w = snprintf(buf + used, cap - used, "%s%s %llu", any ? ", " : " (",
		                 ada_drop_reason_name((unsigned)k), (unsigned long long)d[k]);
		if (w < 0 || (size_t)w >= cap - used)
			return;
		used += (size_t)w;
		any = true;
	}
	if (any && used + 2 <= cap)
		memcpy(buf + used, ")", 2);
}

/* The recording's shared memory, live from <arena dir>/shm.budget. */
static void status_shm_live(struct status_tot *t, const char *arena_dir)
{
	char path[PATH_MAX];
	struct ada_shm_budget *b;
	if (t->live_shm || !arena_dir ||
	    snprintf(path, sizeof(path), "%s/%s", arena_dir, ADA_SHM_BUDGET_NAME) >=
	        (int)sizeof(path) ||
	    ada_shm_budget_open(path, &b) != 0)
		return;
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	ada_shm_budget_close(b);
	printf("  shared memory: %.1f MiB in %llu arenas, ceiling %.1f MiB, peak %.1f MiB, %llu "
	       "processes untraced, %llu with smaller detail rings, %llu delayed\n",
	       (double)v.reserved / 1048576.0, (unsigned long long)v.arenas,
	       (double)v.ceiling / 1048576.0, (double)v.peak / 1048576.0,
	       (unsigned long long)(v.refused_procs + v.failed_procs),
	       (unsigned long long)v.reduced_procs, (unsigned long long)v.waited_procs);
	t->live_shm = true;
	t->untraced = v.refused_procs + v.failed_procs; /* the ceiling's, and arenas not made */
	t->reduced = v.reduced_procs;
	t->shm_ceiling = v.ceiling;
	t->shm_peak = v.peak;
}

/* Per live thread: how much detail its ring holds now (the pre-roll a
 * trigger firing now could get), as the drain measured it last second. */
static void status_detail(struct ada_arena *a)
{
	if (!ada_arena_config_of(a)->detail_bytes)
		return;
	uint32_t used = ada_arena_slots_used(a);
	for (uint32_t s = 0; s < used; s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(a, s, &si);
		if (si.state == ADA_SLOT_FREE)
			continue;
		printf("  thread %u (tid %u): detail ring holds %.3f s\n", si.thread_seq, si.tid,
		       (double)si.detail_span_ns / 1e9);
	}
}

/* --detail triggered (the default, and what a manifest without a mode
 * meant): a detail ring overwriting what no window wanted is not a drop. */
static bool status_triggered(json_t *man)
{
	const char *m = json_string_value(json_object_get(json_object_get(man, "detail"), "mode"));
	return !m || !strcmp(m, "triggered");
}

static void status_live(const char *dir, json_t *man, struct ada_arena *a, struct status_tot *t)
{
	struct ada_metrics *m = ada_arena_metrics(a);
	uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT], by[ADA_DROP_REASON_COUNT];
	uint64_t over = 0;
	ada_arena_drop_totals(a, d);
	if (status_triggered(man)) {
		over = d[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
		d[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 0;
	}
	/* A window's shortfall is the recorder's count and no drop (the
	 * manifest's detail.window_lost); the arena's slot is the target's. */
	d[ADA_LANE_INDEX][ADA_DROP_WINDOW_LOST] = d[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 0;
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
		by[k] = d[0][k] + d[1][k];
		t->drops[k] += by[k];
	}
	char drops[256];
	status_drops_text(by, drops, sizeof(drops));
	uint64_t written = status_u64(&m->events_written[0]);
	double bpe =
	    atomic_load_explicit(&m->index_centibytes_per_event, memory_order_relaxed) / 100.0;
	t->written += written;
	t->index_bytes += bpe * (double)written;
	t->index_events += written;
	printf("%s: recording, pid %d, %llu events written, %s, %llu events/s, index %.2f "
	       "bytes/event, ring fill max %u%%, latency p50 %.2f ms p99 %.2f ms, drain heartbeat "
	       "%llu\n",
	       dir, (int)ada_arena_pid(a), (unsigned long long)written, drops,
	       (unsigned long long)status_u64(&m->events_per_sec[0]), bpe,
	       atomic_load_explicit(&m->ring_fill_pct_max, memory_order_relaxed),
	       (double)status_u64(&m->batch_latency_ns_p50) / 1e6,
	       (double)status_u64(&m->batch_latency_ns_p99) / 1e6,
	       (unsigned long long)ada_arena_heartbeat(a));
	status_detail(a);
	if (over)
		printf("  flight recorder: %llu older detail records overwritten in memory (not "
		       "drops)\n",
		       (unsigned long long)over);
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
		if (by[k])
			printf("  drops %s: index %llu, detail %llu (%llu/s)\n",
			       ada_drop_reason_name((unsigned)k), (unsigned long long)d[0][k],
			       (unsigned long long)d[1][k],
			       (unsigned long long)status_u64(&m->drops_per_sec[k]));
}

/* Drops by reason from a manifest's "drops": {lane: {reason: n}}. */
static void status_man_drops(json_t *man, uint64_t by[ADA_DROP_REASON_COUNT])
{
	json_t *drops = json_object_get(man, "drops");
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
		by[k] = 0;
		const char *name = ada_drop_reason_name((unsigned)k);
		const char *lane;
		json_t *v;
		json_object_foreach(drops, lane, v) by[k] += status_int(v, name);
	}
}

/* "exit status 3", "exit signal 9", or "exit unknown" when the manifest
 * knows neither (a recovered process whose agent said nothing). */
static void status_exit_text(json_t *man, char *buf, size_t cap)
{
	json_t *ex = json_object_get(man, "exit");
	json_t *sig = json_object_get(ex, "signal"), *st = json_object_get(ex, "status");
	const char *state = json_string_value(json_object_get(man, "state"));
	const char *ab = json_is_true(json_object_get(man, "abnormal")) ? " (abnormal)"
	                 : state && !strcmp(state, "recovered") ? " (recovered by ada recover)"
	                                                        : "";
	if (json_is_integer(sig))
		snprintf(buf, cap, "exit signal %lld%s", (long long)json_integer_value(sig), ab);
	else if (json_is_integer(st))
		snprintf(buf, cap, "exit status %lld%s", (long long)json_integer_value(st), ab);
	else
		snprintf(buf, cap, "exit unknown%s", ab);
}

#define STATUS_WINDOWS_SHOWN 16u

/* The records window w wanted that were neither written nor overwritten,
 * with their reasons (the manifest's window_missed), when any. */
static void status_window_missed(const json_t *w)
{
	const json_t *m = json_object_get(w, "window_missed"), *v;
	const char *k;
	uint64_t n = 0;
	json_object_foreach((json_t *)m, k, v) n += status_int((json_t *)m, k);
	if (!n)
		return;
	printf(", %llu wanted records not written (", (unsigned long long)n);
	bool first = true;
	json_object_foreach((json_t *)m, k, v)
	{
		uint64_t c = status_int((json_t *)m, k);
		if (c)
			printf("%s%s %llu", first ? "" : ", ", k, (unsigned long long)c);
		first = first && !c;
	}
	printf("; not drops)");
}

/* One line per window of this process (the first STATUS_WINDOWS_SHOWN):
 * the pre-roll it achieved (the farthest a thread's ring reached) of what
 * it asked, its records, and when the rings had overwritten some, that
 * shortfall (not drops) with what filled them. */
static void status_windows(json_t *man)
{
	const json_t *ws = json_object_get(json_object_get(man, "flight_recorder"), "windows");
	uint64_t ring = status_int(json_object_get(man, "detail"), "ring_bytes");
	const json_t *w, *th;
	size_t i, j;
	json_array_foreach(ws, i, w)
	{
		if (i == STATUS_WINDOWS_SHOWN) {
			printf("  ... %zu more windows (ada windows DIR)\n",
			       json_array_size(ws) - i);
			break;
		}
		uint64_t got = 0, lost = status_int((json_t *)w, "window_lost");
		json_array_foreach(json_object_get(w, "threads"), j, th)
		{
			uint64_t g = status_int((json_t *)th, "pre_achieved_ns");
			got = g > got ? g : got;
		}
		char a[32], b[32];
		/* Without losses the rings held all of it the threads had: reached
		 * back to their first records (or to the window's start). */
		printf("  window %llu (%s): pre-roll %s %s of %s, %llu detail records",
		       (unsigned long long)status_int((json_t *)w, "id"),
		       json_string_value(json_object_get(w, "trigger")),
		       lost ? "achieved" : "whole, back to the first record:",
		       cmd_ctl_span(got, a, 32),
		       cmd_ctl_span(status_int((json_t *)w, "pre_roll_ns"), b, 32),
		       (unsigned long long)status_int((json_t *)w, "records"));
		if (lost) {
			printf(", %llu wanted records already overwritten (not drops)",
			       (unsigned long long)lost);
			if (ring && got) /* the reason: the rate the ring filled at */
				printf(
				    ": a %.3g MiB ring per thread held %s of detail (%.3g MiB/s)",
				    (double)ring / (1 << 20), cmd_ctl_span(got, a, 32),
				    (double)ring / (1 << 20) / ((double)got / 1e9));
			rd_window_fillers(stdout, w, "; the rings filled with", "");
		}
		status_window_missed(w);
		printf("\n");
	}
}

/* A finished process's counts (its manifest, or its retired line) into t. */
static void status_add_done(json_t *man, struct status_tot *t)
{
	json_t *mt = json_object_get(man, "metrics");
	uint64_t by[ADA_DROP_REASON_COUNT];
	status_man_drops(man, by);
	t->written += status_int(mt, "events_written");
	t->index_bytes += (double)status_int(mt, "index_bytes");
	t->index_events += status_int(mt, "index_events");
	t->lost += status_int(man, "lost_events");
	t->retired += status_int(json_object_get(man, "retention"), "retired_events");
	t->disk_full |= json_is_true(json_object_get(man, "disk_full"));
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
		t->drops[k] += by[k];
	json_t *shm = json_object_get(man, "shm");
	/* The recorder's own count: in each manifest as it was when written. */
	if (status_int(shm, "pid_reused_arenas") > t->pid_reused)
		t->pid_reused = status_int(shm, "pid_reused_arenas");
	status_wait_counts(json_object_get(man, "wait_statuses"), t);
	if (!t->live_shm) { /* each manifest has the session's counts when written */
		uint64_t untraced = status_int(shm, "untraced_processes") +
		                    status_int(shm, "arena_failed_processes");
		if (untraced > t->untraced)
			t->untraced = untraced;
		if (status_int(shm, "reduced_processes") > t->reduced)
			t->reduced = status_int(shm, "reduced_processes");
		if (status_int(shm, "peak_bytes") > t->shm_peak)
			t->shm_peak = status_int(shm, "peak_bytes");
		t->shm_ceiling = status_int(shm, "ceiling_bytes");
	}
}

static void status_done(const char *dir, json_t *man, struct status_tot *t)
{
	json_t *mt = json_object_get(man, "metrics");
	uint64_t by[ADA_DROP_REASON_COUNT];
	status_man_drops(man, by);
	char drops[256], ex[64];
	status_drops_text(by, drops, sizeof(drops));
	status_exit_text(man, ex, sizeof(ex));
	uint64_t written = status_int(mt, "events_written");
	uint64_t lost = status_int(man, "lost_events");
	uint64_t retired = status_int(json_object_get(man, "retention"), "retired_events");
	bool full = json_is_true(json_object_get(man, "disk_full"));
	uint64_t ib = status_int(mt, "index_bytes"), ie = status_int(mt, "index_events");
	printf(
	    "%s: %s, %llu events written, %llu not written (disk full), %llu deleted by the disk "
	    "budget, %s, %.2f M events/s, index %.2f bytes/event, latency p50 %.2f ms p99 %.2f "
	    "ms, %s%s\n",
	    dir, ada_manifest_state(man), (unsigned long long)written, (unsigned long long)lost,
	    (unsigned long long)retired, drops,
	    json_number_value(json_object_get(mt, "events_per_sec")) / 1e6,
	    ie ? (double)ib / (double)ie : 0.0,
	    (double)status_int(mt, "batch_latency_ns_p50") / 1e6,
	    (double)status_int(mt, "batch_latency_ns_p99") / 1e6, ex,
	    full ? ", the disk filled up" : "");
	json_t *q = json_object_get(man, "quarantined");
	for (size_t i = 0; i < json_array_size(q); i++)
		printf("  quarantined: %s\n",
		       json_string_value(json_object_get(json_array_get(q, i), "reason")));
	status_windows(man);
	status_add_done(man, t);
}

/* The retired processes (retired.jsonl): counted in the totals, and one
 * line for all of them. */
struct status_ret {
	struct status_tot *t, sum;
	uint32_t abnormal;
};

static int status_retired_one(json_t *line, void *arg)
{
	struct status_ret *s = arg;
	s->t->procs++;
	s->sum.procs++;
	status_add_done(line, s->t);
	status_add_done(line, &s->sum);
	s->abnormal += json_is_true(json_object_get(json_object_get(line, "exit"), "abnormal"));
	return 0;
}

static int status_retired(const char *dir, struct status_tot *t)
{
	struct status_ret s = {.t = t};
	uint64_t bad = 0;
	int n = ada_retired_foreach(dir, status_retired_one, &s, &bad);
	if (n < 0)
		ada_log("%s/%s: cannot be read (%s)", dir, ADA_RETIRED_NAME, strerror(-n));
	if (bad)
		ada_log("%s/%s: %llu lines are not a retired process's, skipped", dir,
		        ADA_RETIRED_NAME, (unsigned long long)bad);
	if (n <= 0)
		return n < 0 ? -1 : 0;
	char drops[256];
	status_drops_text(s.sum.drops, drops, sizeof(drops));
	printf("%s: %u process%s retired (finished, every file deleted by the disk budget; one "
	       "line each in %s): %llu events written, %llu not written (disk full), %llu deleted "
	       "by the disk budget, %s, %u ended abnormally\n",
	       dir, s.sum.procs, s.sum.procs == 1 ? "" : "es", ADA_RETIRED_NAME,
	       (unsigned long long)s.sum.written, (unsigned long long)s.sum.lost,
	       (unsigned long long)s.sum.retired, drops, s.abnormal);
	return n;
}

static void status_recording(const char *dir, json_t *man, struct status_tot *t)
{
	pid_t rpid = (pid_t)status_int(man, "recorder_pid");
	if (!ada_recorder_alive(rpid, status_int(man, "recorder_start_ticks"))) {
		printf("%s: recording stopped: its recorder (pid %d) is gone; the files hold what "
		       "was written: run `ada recover %s` to finalize them\n",
		       dir, (int)rpid, dir);
		t->dead++;
		return;
	}
	const char *arena = json_string_value(json_object_get(man, "arena"));
	struct ada_arena *a = NULL;
	if (arena && ada_arena_open(arena, &a) == 0) {
		status_live(dir, man, a, t);
		ada_arena_close(a);
	} else {
		printf("%s: recording, the process has ended and the recorder (pid %d) is "
		       "finishing its files\n",
		       dir, (int)rpid);
	}
	status_shm_live(t, json_string_value(json_object_get(man, "arena_dir")));
}

/* The count-only functions and --overhead-budget's moves (docs/hooks.md):
 * the manifest's count_only, or while recording the agent's agent.json
 * (rewritten after each move; its counts are then the ended threads'). */
static void status_count_only(const char *dir, json_t *man)
{
	json_t *co = json_incref(json_object_get(man, "count_only")), *e;
	char path[PATH_MAX];
	int fd = -1;
	size_t i;
	if (!co && (size_t)snprintf(path, sizeof(path), "%s/agent.json", dir) < sizeof(path) &&
	    ada_fs_open_file(AT_FDCWD, path, O_RDONLY, &fd) == 0) {
		json_t *a = ada_json_loadfd(fd, ADA_AGENT_JSON_MAX);
		close(fd);
		ada_control_printable_json(a); /* the agent's (the target's) file */
		co = json_incref(json_object_get(a, "count_only"));
		json_decref(a);
	}
	json_t *fns = json_object_get(co, "functions");
	/* The functions never called: counted, not listed (hooks.md). */
	long long n = (long long)(json_array_size(fns) + ada_count_only_uncalled(co));
	if (n == 0) {
		json_decref(co);
		return;
	}
	long long calls = 0;
	json_array_foreach(fns, i, e)
	{
		/* saturating, none below 0: the file is the target's */
		json_int_t c = json_integer_value(json_object_get(e, "calls"));
		if (c > 0)
			calls = c > LLONG_MAX - calls ? LLONG_MAX : calls + c;
	}
	printf("  count-only: %lld functions, %lld calls counted%s\n", n, calls,
	       json_is_true(json_object_get(co, "final")) ? "" : " so far (threads that ended)");
	json_array_foreach(fns, i, e)
	{
		const char *moved = json_string_value(json_object_get(e, "moved"));
		if (!moved || strcmp(moved, "budget"))
			continue;
		printf("  moved by --overhead-budget: %s (%lld calls/s, mean %lld ns, after %lld "
		       "ms)\n",
		       json_string_value(json_object_get(e, "name")),
		       (long long)json_integer_value(json_object_get(e, "calls_per_s")),
		       (long long)json_integer_value(json_object_get(e, "mean_ns")),
		       (long long)json_integer_value(json_object_get(e, "moved_after_ms")));
	}
	json_decref(co);
}

/* A pid_N directory with no manifest yet in a recording that answers on
 * its control socket: a process younger than its first manifest (the
 * recorder writes it 20 ms after admission, drain_early_manifest). */
static bool status_young(const char *dir, struct status_tot *t)
{
	char session[PATH_MAX], why[256];
	const char *slash = strrchr(dir, '/');
	int fd;
	if (!slash || (size_t)(slash - dir) >= sizeof(session))
		return false;
	memcpy(session, dir, (size_t)(slash - dir));
	session[slash - dir] = 0;
	if (ada_control_open(session, &fd, why, sizeof(why)) != 0)
		return false;
	close(fd);
	printf("%s: recording, started moments ago (no manifest yet: the first is written once "
	       "a process has run 20 ms)\n",
	       dir);
	t->procs++;
	return true;
}

static int status_pid(const char *dir, struct status_tot *t)
{
	json_t *man;
	int err = ada_manifest_read(dir, &man);
	if (err == -ENOENT && status_young(dir, t))
		return 0;
	if (err < 0) {
		ada_log("%s: no readable manifest.json", dir);
		return 1;
	}
	ada_control_printable_json(man); /* pid_N/ may be the target's: input */
	const char *state = ada_manifest_state(man);
	t->procs++;
	if (state && !strcmp(state, "recording"))
		status_recording(dir, man, t);
	else
		status_done(dir, man, t);
	status_count_only(dir, man);
	json_decref(man);
	return 0;
}

static void status_session(const char *dir, const struct status_tot *t)
{
	char drops[256];
	status_drops_text(t->drops, drops, sizeof(drops));
	printf("%s: %u process%s, %llu events written, %llu not written (disk full), %llu deleted "
	       "by the disk budget, %s, index %.2f bytes/event, %llu processes untraced and %llu "
	       "with smaller detail rings (shared-memory ceiling %.1f MiB, peak %.1f MiB)%s",
	       dir, t->procs, t->procs == 1 ? "" : "es", (unsigned long long)t->written,
	       (unsigned long long)t->lost, (unsigned long long)t->retired, drops,
	       t->index_events ? t->index_bytes / (double)t->index_events : 0.0,
	       (unsigned long long)t->untraced, (unsigned long long)t->reduced,
	       (double)t->shm_ceiling / 1048576.0, (double)t->shm_peak / 1048576.0,
	       t->disk_full ? ", the disk filled up" : "");
	if (t->pid_reused)
		printf(", %llu process%s not recorded (a reused pid)",
		       (unsigned long long)t->pid_reused, t->pid_reused == 1 ? "" : "es");
	if (t->exit_unknown || t->notes_overwritten || t->notes_refused)
		printf(", %llu process%s exit status unknown (%llu reaped-child note%s overwritten "
		       "in the reaper's table before read, %llu refused)",
		       (unsigned long long)t->exit_unknown, t->exit_unknown == 1 ? "'s" : "es'",
		       (unsigned long long)t->notes_overwritten,
		       t->notes_overwritten == 1 ? "" : "s", (unsigned long long)t->notes_refused);
	if (t->dead)
		printf(", %u process%s left unfinished by a recorder that died", t->dead,
		       t->dead == 1 ? "" : "es");
	printf("\n");
}

static void status_print(json_t *st, const char *name, bool json);

/* The session's one-line summary, by the one formatter of `ada status PID`:
 * live from the control socket while it answers, else from the manifests
 * (not for a recorder that died: its manifests say "recording"). */
static void status_summary(const char *dir, const struct status_tot *t)
{
	int fd;
	json_t *st = NULL;
	char why[512];
	if (ada_control_open(dir, &fd, why, sizeof(why)) == 0) {
		if (ada_control_call(fd, "status", NULL, &st, why, sizeof(why)) != 0)
			st = NULL;
		close(fd);
	}
	if (!st && !t->dead)
		st = cmd_ctl_status_from_manifests(dir);
	if (st)
		status_print(st, "summary", false); /* not "DIR:": the totals line is */
	json_decref(st);
}

/* The per-process report of DIR (a session or a pid_N directory). */
static int status_dir(char **argv)
{
	struct status_tot t = {0};
	const char *base = strrchr(argv[1], '/');
	base = base && base[1] ? base + 1 : argv[1];
	if (!strncmp(base, "pid_", 4))
		return status_pid(argv[1], &t);
	DIR *d = opendir(argv[1]);
	if (!d) {
		ada_log("cannot open '%s': %s", argv[1], strerror(errno));
		return 2;
	}
	int n = 0, bad = 0, links = 0;
	struct dirent *de;
	/* Bounded, and no link followed: a loop planted in a session ends. */
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
		links += k == ADA_FS_LINK;
		if (k != ADA_FS_DIR || strncmp(de->d_name, "pid_", 4))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", argv[1], de->d_name);
		bad |= status_pid(p, &t);
		n++;
	}
	closedir(d);
	if (links)
		ada_log("skipped %d symbolic link%s in '%s' (ada never follows a link it did not "
		        "create)",
		        links, links == 1 ? "" : "s", argv[1]);
	int ret = status_retired(argv[1], &t);
	bad |= ret < 0;
	n += ret > 0 ? ret : 0;
	if (!n) {
		ada_log("'%s' holds no pid_N directories", argv[1]);
		return 1;
	}
	status_session(argv[1], &t);
	status_summary(argv[1], &t);
	return bad;
}

/* ---- live: the control socket ---- */

static volatile sig_atomic_t status_stop;

static void status_on_signal(int sig)
{
	(void)sig;
	status_stop = 1;
}

static void status_usage(FILE *f)
{
	fprintf(f, "usage: ada status PID|DIR [--json] [--watch]\n"
	           "\n"
	           "What a recording is doing: events/s, drops/s by reason, ring fill, seconds\n"
	           "of detail each ring holds, hooks, windows, triggers, key-symbol version,\n"
	           "recorder and target CPU and memory. PID is any traced process of a running\n"
	           "recording (or `ada record` itself); DIR a session or pid_N directory (without\n"
	           "--json or --watch: a report per process, live or from the manifests).\n"
	           "  --json   print the status object (docs/control.md) instead of a line\n"
	           "  --watch  refresh once a second until Ctrl-C or the end of the recording\n");
}

static void status_print(json_t *st, const char *name, bool json)
{
	if (json) {
		char *s = json_dumps(st, JSON_COMPACT);
		if (s)
			printf("%s\n", s);
		free(s);
	} else {
		cmd_ctl_print_status(stdout, name, st);
	}
	fflush(stdout);
}

/* The recording in session dir has ended: its summary from the manifests. */
static int status_ended(const char *target, const char *dir, bool json)
{
	json_t *st = cmd_ctl_status_from_manifests(dir);
	if (!st) {
		ada_log("cannot read the session directory '%s'", dir);
		return 1;
	}
	status_print(st, target, json);
	json_decref(st);
	return 0;
}

/* Waits a second between refreshes; true when it is time to stop (Ctrl-C,
 * or the server closed: the recording ended). */
static bool status_pause(int fd, bool *ended)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r = poll(&p, 1, 1000);
	if (r > 0) /* nothing is asked: readable means closed */
		*ended = true;
	return status_stop || r > 0;
}

static int status_socket(const char *target, const char *dir, int fd, bool json, bool watch)
{
	bool tty = watch && !json && isatty(STDOUT_FILENO), ended = false;
	for (;;) {
		json_t *st = NULL;
		char why[512];
		int rc = ada_control_call(fd, "status", NULL, &st, why, sizeof(why));
		if (rc == -ECONNRESET && watch) {
			ended = true;
			break;
		}
		if (rc != 0) {
			if (status_stop)
				break;
			ada_log("%s", why);
			return 1;
		}
		if (tty)
			printf("\033[H\033[J"); /* like top: the screen is the view */
		status_print(st, target, json);
		json_decref(st);
		if (!watch || status_pause(fd, &ended))
			break;
	}
	if (ended)
		return status_ended(target, dir, json);
	return 0;
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, 0, 'j'},
	                                     {"watch", no_argument, 0, 'w'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	bool json = false, watch = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h' || c == '?') {
			status_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
		json |= c == 'j';
		watch |= c == 'w';
	}
	if (optind != argc - 1) {
		status_usage(stderr);
		return 2;
	}
	const char *target = argv[optind];
	struct stat st;
	bool is_dir = stat(target, &st) == 0 && S_ISDIR(st.st_mode);
	if (is_dir)
		cmd_session_root(target);
	if (is_dir && !json && !watch)
		return status_dir((char *[]){argv[0], (char *)target, NULL});
	struct sigaction sa = {.sa_handler = status_on_signal}; /* no SA_RESTART: poll returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int fd = -1;
	char why[512], dir[PATH_MAX];
	/* The session first: once the recording ends, its manifests are there. */
	int rc = ada_control_session_of(target, dir, sizeof(dir), why, sizeof(why));
	if (rc == 0)
		rc = ada_control_open(target, &fd, why, sizeof(why));
	if (rc == -ECONNREFUSED && is_dir)
		return status_ended(target, dir, json);
	if (rc < 0) {
		ada_log("%s", why);
		return 1;
	}
	rc = status_socket(target, dir, fd, json, watch);
	close(fd);
	return rc;
}
