/*
 * wal_bench: sustained events/s from producer threads through the rings,
 * the drain and io_uring into index files on disk, and the drain's
 * encode-to-disk latency at a paced rate. Not a test; run it by hand:
 *
 *   build/bench/wal_bench [--out DIR] [--events N] [--secs S] [--only 1|2|3]
 *   (WAL_BENCH_FLUSH=off|interval:MS|... sets the flush policy;
 *   WAL_BENCH_INDEX=atf|compact the index encoding, compact by default as
 *   for `ada record`)
 *
 * It records itself: the parent is the recorder (src/recorder's ada_recorder,
 * exactly what `ada record --no-agent` runs), the child is this program
 * re-executed in producer mode (WAL_BENCH_CHILD=threads:events:rate),
 * which links the producer API. Three runs:
 *   1. one producer thread, as fast as it can (N events);
 *   2. two producer threads, N/2 events each;
 *   3. one thread paced at 10 M events/s for S seconds: latency p50/p99.
 * For each: events, drops, events/s from the first event to the last byte
 * on disk (CLOCK_BOOTTIME of the first event vs the end of finalize), and
 * the whole-run wall time (process start, arena set-up and finalize in),
 * and the recorder's CPU per event: the whole process (drain + io_uring
 * workers), then split into the drain thread's own CPU and the rest (the
 * kernel's io_uring workers: the page-cache copy).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cidx.h"
#include "ring.h"
#include "recorder.h"

struct child_args {
	uint64_t events; /* per thread */
	uint64_t rate;   /* events/s per thread; 0 = flat out */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void *child_worker(void *arg)
{
	const struct child_args *a = arg;
	/* CALL k then RETURN k at depth 1: a well-nested stream, as a program
	 * emits (returns that match no call would send every event down the
	 * trigger engine's mismatch path, which no real recording takes). */
	if (!a->rate) {
		for (uint64_t i = 0; i < a->events; i++)
			ada_emit(i >> 1, i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
		return NULL;
	}
	/* Paced: bursts of 1000 events on a schedule of rate events/s. */
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < a->events; i += 1000) {
		uint64_t due = t0 + i * 1000000000ull / a->rate;
		while (now_ns() < due)
			;
		for (uint64_t j = i; j < i + 1000 && j < a->events; j++)
			ada_emit(j >> 1, j & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	}
	return NULL;
}

static int child_main(const char *spec)
{
	unsigned threads = 1;
	struct child_args a = {0};
	unsigned long long ev = 0, rate = 0;
	if (sscanf(spec, "%u:%llu:%llu", &threads, &ev, &rate) != 3 || threads == 0 || threads > 16)
		return 2;
	a.events = ev;
	a.rate = rate;
	if (ada_producer_init_from_env() < 0)
		return 3;
	pthread_t th[16];
	for (unsigned t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, child_worker, &a);
	for (unsigned t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	return 0;
}

/* Earliest time_start_ns of the index files under dir (first event). */
static uint64_t first_event_ns(const char *dir, int depth)
{
	uint64_t best = UINT64_MAX;
	DIR *d = opendir(dir);
	if (!d)
		return best;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR && depth < 3) {
			uint64_t v = first_event_ns(p, depth + 1);
			best = v < best ? v : best;
		} else if (!strncmp(de->d_name, "index", 5)) {
			/* ATF v2 or compact: both headers have time_start_ns at 48. */
			struct atf_index_header h;
			struct ada_cidx_file_header c;
			int fd = open(p, O_RDONLY);
			bool ok = fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h);
			memcpy(&c, &h, sizeof(c));
			uint64_t n = ok && !memcmp(h.magic, ADA_CIDX_MAGIC, 4) ? c.event_count
			                                                       : h.event_count;
			if (ok && n && h.time_start_ns < best)
				best = h.time_start_ns;
			if (fd >= 0)
				close(fd);
		}
	}
	closedir(d);
	return best;
}

static int run(const char *self, const char *out, const char *name, unsigned threads,
               uint64_t per_thread, uint64_t rate)
{
	char ring_cfg[ADA_ARENA_CONFIG_TEXT_MAX], spec[64];
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 4;
	cfg.index_events = 1u << 20; /* 32 MiB per thread */
	bool tsc = ada_tsc_invariant();
	cfg.timestamp_source = tsc ? ADA_TS_TSC : ADA_TS_CLOCK;
	ada_arena_config_format(&cfg, ring_cfg, sizeof(ring_cfg));
	const char *argv[] = {self, NULL};
	struct ada_recorder_opts o = {
	    .out_dir = out,
	    .drain_cpu = -1,
	    .follow = true,
	    .force_clock = !tsc,
	    .ring_config = ring_cfg,
	    .program_argv = argv,
	    .flush = {.mode = ADA_FLUSH_INTERVAL, .value = 1000},
	};
	const char *ix = getenv("WAL_BENCH_INDEX"); /* compact (default) or atf */
	o.index_format = ix && !strcmp(ix, "atf") ? ADA_INDEX_ATF : ADA_INDEX_COMPACT;
	const char *fl = getenv("WAL_BENCH_FLUSH"); /* e.g. off, interval:1000 */
	if (fl && ada_flush_parse(fl, &o.flush) < 0)
		return 1;
	struct ada_recorder *r;
	int rc = ada_recorder_new(&o, &r);
	if (rc < 0) {
		fprintf(stderr, "wal_bench: cannot create a session in %s: %s\n", out,
		        strerror(-rc));
		return 1;
	}
	snprintf(spec, sizeof(spec), "%u:%llu:%llu", threads, (unsigned long long)per_thread,
	         (unsigned long long)rate);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	uint64_t main0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t t0 = ada_boottime_ns();
	pid_t pid = fork();
	if (pid == 0) {
		setenv("ADA_ARENA_DIR", ada_recorder_arena_dir(r), 1);
		setenv("ADA_RING_CONFIG", ring_cfg, 1);
		setenv("WAL_BENCH_CHILD", spec, 1);
		execl(self, self, (char *)NULL);
		_exit(127);
	}
	struct ada_record_summary s;
	ada_recorder_start(r, pid);
	rc = ada_recorder_wait(r, &s);
	uint64_t t_end = ada_boottime_ns();
	uint64_t main_cpu = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - main0;
	getrusage(RUSAGE_SELF, &ru1);
	double rec_cpu =
	    tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime) + tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	/* The process's CPU is the drain thread, this main thread (fork and
	 * wait: nearly nothing) and the kernel's io_uring workers, which are
	 * threads of this process: what is left is their copy into the page
	 * cache (and what the write path costs them). */
	double drain_cpu = (double)s.drain_cpu_ns / 1e9;
	double other_cpu = rec_cpu - drain_cpu - (double)main_cpu / 1e9;
	uint64_t first = first_event_ns(ada_recorder_session_dir(r), 0);
	double flow = first < t_end ? (double)(t_end - first) / 1e9 : 0;
	printf("%-26s threads %u events %llu drops %llu  %.1f M ev/s first-event-to-disk "
	       "(%.3f s)  %.1f M ev/s whole run (%.3f s)  latency p50 %.2f ms p99 %.2f ms%s\n",
	       name, threads, (unsigned long long)s.events, (unsigned long long)s.drops,
	       flow > 0 ? (double)s.events / flow / 1e6 : 0, flow,
	       (double)s.events / ((double)(t_end - t0) / 1e9) / 1e6, (double)(t_end - t0) / 1e9,
	       (double)s.latency_p50_ns / 1e6, (double)s.latency_p99_ns / 1e6,
	       rc < 0 ? "  (recorder error)" : "");
	double ev = s.events ? (double)s.events : 1;
	printf("%-26s recorder CPU (drain + io_uring workers) %.2f s = %.1f ns/event\n", "",
	       rec_cpu, rec_cpu * 1e9 / ev);
	printf("%-26s drain thread CPU %.2f s = %.1f ns/event; page-cache share (io_uring "
	       "workers) %.2f s = %.1f ns/event\n",
	       "", drain_cpu, drain_cpu * 1e9 / ev, other_cpu, other_cpu * 1e9 / ev);
	fflush(stdout);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ada_recorder_session_dir(r));
	ada_recorder_free(r);
	if (system(cmd) != 0)
		fprintf(stderr, "wal_bench: could not remove the session\n");
	return rc < 0;
}

int main(int argc, char **argv)
{
	const char *spec = getenv("WAL_BENCH_CHILD");
	if (spec)
		return child_main(spec);
	const char *out = "/tmp/ada_wal_bench";
	uint64_t events = 200000000ull, secs = 5, only = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
		else if (!strcmp(argv[i], "--events"))
			events = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--secs"))
			secs = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--only")) /* 1, 2 or 3: one of the runs */
			only = strtoull(argv[i + 1], NULL, 10);
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 1;
	self[n] = '\0';
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int bad = 0;
	if (!only || only == 1)
		bad |= run(self, out, "one producer, flat out", 1, events, 0);
	if (!only || only == 2)
		bad |= run(self, out, "two producers, flat out", 2, events / 2, 0);
	if (!only || only == 3)
		bad |= run(self, out, "one producer at 10 M/s", 1, secs * 10000000ull, 10000000ull);
	return bad;
}
