/*
 * ada status DIR: what a recording is doing now (or did), per process.
 * DIR is a session or a pid_N directory. For a process still recording,
 * the numbers come live from its shared-memory arena (the metrics the
 * drain publishes there once a second: events/s, drops/s by reason, ring
 * fill, encode-to-disk latency p50/p99, and the drain's heartbeat); for a
 * finished one, from its manifest.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "manifest.h"
#include "ring.h"

static const char *const status_reason[ADA_DROP_REASON_COUNT] = {"ring_full", "drain_lag",
                                                                 "detail_overwritten", "no_slot"};

static uint64_t status_u64(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void status_live(const char *dir, struct ada_arena *a)
{
	struct ada_metrics *m = ada_arena_metrics(a);
	uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, d);
	printf("%s: recording, pid %d, %llu events written, %llu events/s, ring fill max %u%%, "
	       "latency p50 %.2f ms p99 %.2f ms, drain heartbeat %llu\n",
	       dir, (int)ada_arena_pid(a), (unsigned long long)status_u64(&m->events_written[0]),
	       (unsigned long long)status_u64(&m->events_per_sec[0]),
	       atomic_load_explicit(&m->ring_fill_pct_max, memory_order_relaxed),
	       (double)status_u64(&m->batch_latency_ns_p50) / 1e6,
	       (double)status_u64(&m->batch_latency_ns_p99) / 1e6,
	       (unsigned long long)ada_arena_heartbeat(a));
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
		if (d[0][k] + d[1][k])
			printf("  drops %s: index %llu, detail %llu (%llu/s)\n", status_reason[k],
			       (unsigned long long)d[0][k], (unsigned long long)d[1][k],
			       (unsigned long long)status_u64(&m->drops_per_sec[k]));
}

static void status_done(const char *dir, json_t *man)
{
	json_t *mt = json_object_get(man, "metrics");
	json_t *ex = json_object_get(man, "exit");
	printf("%s: %s, %lld events, %.2f M events/s, latency p50 %.2f ms p99 %.2f ms, exit "
	       "%s%lld%s\n",
	       dir, ada_manifest_state(man),
	       (long long)json_integer_value(json_object_get(mt, "events_written")),
	       json_number_value(json_object_get(mt, "events_per_sec")) / 1e6,
	       (double)json_integer_value(json_object_get(mt, "batch_latency_ns_p50")) / 1e6,
	       (double)json_integer_value(json_object_get(mt, "batch_latency_ns_p99")) / 1e6,
	       json_is_integer(json_object_get(ex, "signal")) ? "signal " : "status ",
	       (long long)json_integer_value(json_is_integer(json_object_get(ex, "signal"))
	                                         ? json_object_get(ex, "signal")
	                                         : json_object_get(ex, "status")),
	       json_is_true(json_object_get(man, "abnormal")) ? " (abnormal)" : "");
}

static int status_pid(const char *dir)
{
	json_t *man;
	if (ada_manifest_read(dir, &man) < 0) {
		ada_log("%s: no readable manifest.json", dir);
		return 1;
	}
	const char *state = ada_manifest_state(man);
	const char *arena = json_string_value(json_object_get(man, "arena"));
	struct ada_arena *a = NULL;
	if (state && !strcmp(state, "recording") && arena && ada_arena_open(arena, &a) == 0) {
		status_live(dir, a);
		ada_arena_close(a);
	} else if (state && !strcmp(state, "recording")) {
		printf(
		    "%s: recording, but its arena is gone: the recorder died? try `ada recover`\n",
		    dir);
	} else {
		status_done(dir, man);
	}
	json_decref(man);
	return 0;
}

int cmd_status(int argc, char **argv)
{
	if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc == 2 ? stdout : stderr,
		        "usage: ada status DIR   (a session or pid_N directory)\n");
		return argc == 2 ? 0 : 2;
	}
	const char *base = strrchr(argv[1], '/');
	base = base && base[1] ? base + 1 : argv[1];
	if (!strncmp(base, "pid_", 4))
		return status_pid(argv[1]);
	DIR *d = opendir(argv[1]);
	if (!d) {
		ada_log("cannot open '%s': %s", argv[1], strerror(errno));
		return 2;
	}
	int n = 0, bad = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "pid_", 4))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", argv[1], de->d_name);
		bad |= status_pid(p);
		n++;
	}
	closedir(d);
	if (!n) {
		ada_log("'%s' holds no pid_N directories", argv[1]);
		return 1;
	}
	return bad;
}
