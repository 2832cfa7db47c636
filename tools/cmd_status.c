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
 * The totals use the words and the counts of the `ada record` summary
 * line: events written, not written (disk full), deleted by the disk
 * budget, drops by reason, processes untraced (shared-memory ceiling).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "fs.h"
#include "manifest.h"
#include "ring.h"
#include "wal.h"

struct status_tot {
	uint32_t procs, dead;
	uint64_t written, lost, retired;
	uint64_t drops[ADA_DROP_REASON_COUNT];
	uint64_t untraced, shm_ceiling, shm_peak;
	bool disk_full, live_shm;
};

static uint64_t status_u64(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
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
	       "processes untraced, %llu delayed\n",
	       (double)v.reserved / 1048576.0, (unsigned long long)v.arenas,
	       (double)v.ceiling / 1048576.0, (double)v.peak / 1048576.0,
	       (unsigned long long)v.refused_procs, (unsigned long long)v.waited_procs);
	t->live_shm = true;
	t->untraced = v.refused_procs;
	t->shm_ceiling = v.ceiling;
	t->shm_peak = v.peak;
}

/* Per live thread: how much detail its ring holds now (the pre-roll a
 * trigger firing now could get), as the drain measured it last second. */
static void status_detail(struct ada_arena *a)
{
	if (!ada_arena_config_of(a)->detail_bytes)
		return;
	for (uint32_t s = 0; s < ada_arena_max_threads(a); s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(a, s, &si);
		if (si.state == ADA_SLOT_FREE)
			continue;
		printf("  thread %u (tid %u): detail ring holds %.3f s\n", si.thread_seq, si.tid,
		       (double)si.detail_span_ns / 1e9);
	}
}

static void status_live(const char *dir, struct ada_arena *a, struct status_tot *t)
{
	struct ada_metrics *m = ada_arena_metrics(a);
	uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT], by[ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, d);
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
		by[k] = d[0][k] + d[1][k];
		t->drops[k] += by[k];
	}
	char drops[256];
	status_drops_text(by, drops, sizeof(drops));
	uint64_t written = status_u64(&m->events_written[0]);
	t->written += written;
	printf("%s: recording, pid %d, %llu events written, %s, %llu events/s, ring fill max "
	       "%u%%, latency p50 %.2f ms p99 %.2f ms, drain heartbeat %llu\n",
	       dir, (int)ada_arena_pid(a), (unsigned long long)written, drops,
	       (unsigned long long)status_u64(&m->events_per_sec[0]),
	       atomic_load_explicit(&m->ring_fill_pct_max, memory_order_relaxed),
	       (double)status_u64(&m->batch_latency_ns_p50) / 1e6,
	       (double)status_u64(&m->batch_latency_ns_p99) / 1e6,
	       (unsigned long long)ada_arena_heartbeat(a));
	status_detail(a);
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
	const char *ab = json_is_true(json_object_get(man, "abnormal")) ? " (abnormal)" : "";
	if (json_is_integer(sig))
		snprintf(buf, cap, "exit signal %lld%s", (long long)json_integer_value(sig), ab);
	else if (json_is_integer(st))
		snprintf(buf, cap, "exit status %lld%s", (long long)json_integer_value(st), ab);
	else
		snprintf(buf, cap, "exit unknown%s", ab);
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
	printf(
	    "%s: %s, %llu events written, %llu not written (disk full), %llu deleted by the disk "
	    "budget, %s, %.2f M events/s, latency p50 %.2f ms p99 %.2f ms, %s%s\n",
	    dir, ada_manifest_state(man), (unsigned long long)written, (unsigned long long)lost,
	    (unsigned long long)retired, drops,
	    json_number_value(json_object_get(mt, "events_per_sec")) / 1e6,
	    (double)status_int(mt, "batch_latency_ns_p50") / 1e6,
	    (double)status_int(mt, "batch_latency_ns_p99") / 1e6, ex,
	    full ? ", the disk filled up" : "");
	json_t *q = json_object_get(man, "quarantined");
	for (size_t i = 0; i < json_array_size(q); i++)
		printf("  quarantined: %s\n",
		       json_string_value(json_object_get(json_array_get(q, i), "reason")));
	t->written += written;
	t->lost += lost;
	t->retired += retired;
	t->disk_full |= full;
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
		t->drops[k] += by[k];
	if (!t->live_shm) { /* each manifest has the session's counts when written */
		json_t *shm = json_object_get(man, "shm");
		if (status_int(shm, "untraced_processes") > t->untraced)
			t->untraced = status_int(shm, "untraced_processes");
		if (status_int(shm, "peak_bytes") > t->shm_peak)
			t->shm_peak = status_int(shm, "peak_bytes");
		t->shm_ceiling = status_int(shm, "ceiling_bytes");
	}
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
		status_live(dir, a, t);
		ada_arena_close(a);
	} else {
		printf("%s: recording, the process has ended and the recorder (pid %d) is "
		       "finishing its files\n",
		       dir, (int)rpid);
	}
	status_shm_live(t, json_string_value(json_object_get(man, "arena_dir")));
}

static int status_pid(const char *dir, struct status_tot *t)
{
	json_t *man;
	if (ada_manifest_read(dir, &man) < 0) {
		ada_log("%s: no readable manifest.json", dir);
		return 1;
	}
	const char *state = ada_manifest_state(man);
	t->procs++;
	if (state && !strcmp(state, "recording"))
		status_recording(dir, man, t);
	else
		status_done(dir, man, t);
	json_decref(man);
	return 0;
}

static void status_session(const char *dir, const struct status_tot *t)
{
	char drops[256];
	status_drops_text(t->drops, drops, sizeof(drops));
	printf("%s: %u process%s, %llu events written, %llu not written (disk full), %llu deleted "
	       "by the disk budget, %s, %llu processes untraced (shared-memory ceiling %.1f MiB, "
	       "peak %.1f MiB)%s",
	       dir, t->procs, t->procs == 1 ? "" : "es", (unsigned long long)t->written,
	       (unsigned long long)t->lost, (unsigned long long)t->retired, drops,
	       (unsigned long long)t->untraced, (double)t->shm_ceiling / 1048576.0,
	       (double)t->shm_peak / 1048576.0, t->disk_full ? ", the disk filled up" : "");
	if (t->dead)
		printf(", %u process%s left unfinished by a recorder that died", t->dead,
		       t->dead == 1 ? "" : "es");
	printf("\n");
}

int cmd_status(int argc, char **argv)
{
	if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc == 2 ? stdout : stderr,
		        "usage: ada status DIR   (a session or pid_N directory)\n");
		return argc == 2 ? 0 : 2;
	}
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
	if (!n) {
		ada_log("'%s' holds no pid_N directories", argv[1]);
		return 1;
	}
	status_session(argv[1], &t);
	return bad;
}
