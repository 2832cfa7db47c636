/*
 * bench/cidx_bench: the compact index codec (src/atf/cidx.h) on synthetic
 * streams (tests/unit/cidx_streams.h): encode ns/event as the drain would
 * call it (chunks of 4096 events into 256 KiB buffers, sealed at each
 * buffer), decode M events/s of the whole file (the readers' path), the
 * export to ATF v2 (decode + CRC-32 of the 32-byte events) and bytes per
 * event. Single-threaded; by hand, not a test:
 *   build/bench/cidx_bench [events]
 *   build/bench/cidx_bench FILE.atf...   (the same on recorded index files)
 *   build/bench/cidx_bench --ring [events [reps]]   (the drain's fused pass,
 *       ada_cidx_enc_put_ring, on the same streams as ring events)
 *   build/bench/cidx_bench --ring-file FILE.atf...   (the fused pass on
 *       recorded events; CIDX_BENCH_REPS, default 5; a hash of the bytes;
 *       CIDX_BENCH_ONE_FID, CIDX_BENCH_DT=N: one function, N ns deltas;
 *       CIDX_BENCH_HEAD=N: the first N events, in cache from rep to rep)
 *   build/bench/cidx_bench --sink FILE.atf...   (a compact file's export,
 *       ada_cidx_file_to_atf_fd as `ada export --format atf` calls it, into
 *       /dev/null: its wall and CPU time and peak RSS, without the cost of
 *       the output file's pages; for exports too big for the scratch disk)
 */
#include <emmintrin.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cidx.h"
#include "cidx_streams.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* the machine is shared: CPU time */
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The drain's shape: chunks of 4096 events just written by the conversion
 * (copied into a staging array first, untimed, so they are in L2 as in
 * the drain), put into a 256 KiB buffer sealed when it cannot take more.
 * Returns the best ns/event of reps runs, encode time only. */
static double bench_encode(const struct atf_index_event *ev, size_t n, int reps)
{
	static uint8_t buf[256 << 10];
	static struct atf_index_event stage[4096];
	double best = 1e9;

	for (int r = 0; r < reps; r++) {
		struct ada_cidx_enc *e;
		struct ada_cidx_out o = {buf, 0, sizeof(buf)};
		size_t done = 0;
		double t = 0;
		int err;
		if (ada_cidx_enc_new(0, &e))
			exit(1);
		while (done < n) {
			size_t want = n - done < 4096 ? n - done : 4096, k = 0;
			memcpy(stage, ev + done, want * sizeof(*ev));
			double t0 = now_s();
			while (k < want) {
				size_t got = ada_cidx_enc_put(e, stage + k, want - k, &o, &err);
				k += got;
				if (k < want) {
					ada_cidx_enc_seal(e, &o);
					o.len = 0;
				}
			}
			t += now_s() - t0;
			done += want;
		}
		ada_cidx_enc_seal(e, &o);
		best = t / (double)n * 1e9 < best ? t / (double)n * 1e9 : best;
		ada_cidx_enc_free(e);
	}
	return best;
}

/* The streaming path (ada_cidx_iter): block by block into one buffer that
 * stays in L2, the events summed so nothing is elided. Returns the best
 * seconds of reps runs. */
static double bench_stream_blocks(const struct ada_cidx_dec *d, int reps)
{
	double best = 1e9;
	uint64_t sum = 0;

	for (int r = 0; r < reps; r++) {
		struct ada_cidx_iter it;
		const struct atf_index_event *ev;
		long k;
		double t0 = now_s();
		if (ada_cidx_iter_init(&it, d, 0))
			exit(1);
		while ((k = ada_cidx_iter_next(&it, &ev)) > 0)
			sum += ev[k - 1].timestamp_ns;
		if (k < 0)
			exit(1);
		ada_cidx_iter_fini(&it);
		double dt = now_s() - t0;
		best = dt < best ? dt : best;
	}
	return sum == 1 ? 0 : best;
}

static void bench_stream(const char *name, struct cs_gen *g)
{
	struct ada_atf_file_info info;
	struct ada_cidx_enc *e;
	struct ada_cidx_dec *d;
	uint8_t *img;
	size_t len;
	struct atf_index_event *out = malloc(g->n * sizeof(*out));

	ada_atf_file_info_native(&info, g->tid);
	if (!out || ada_cidx_enc_new(0, &e) ||
	    ada_cidx_write_mem(e, &info, g->ev, g->n, NULL, NULL, 0, &img, &len) ||
	    ada_cidx_dec_open(img, len, 0, &d))
		exit(1);
	ada_cidx_enc_free(e);
	double enc = bench_encode(g->ev, g->n, 5), dec = 1e9, exp = 1e9;
	for (int r = 0; r < 5; r++) {
		double t0 = now_s();
		if (ada_cidx_dec_all(d, out))
			exit(1);
		double t1 = now_s();
		uint32_t crc = ada_atf_crc32(0, out, g->n * sizeof(*out));
		double t2 = now_s();
		dec = t1 - t0 < dec ? t1 - t0 : dec;
		exp = t2 - t0 < exp ? t2 - t0 : exp;
		if (memcmp(out, g->ev, g->n * sizeof(*out)) || crc == 1)
			exit(2);
	}
	double blk = bench_stream_blocks(d, 5);
	printf("%-6s %9zu events  %.3f bytes/event  encode %.2f ns/event  decode: whole file %.0f, "
	       "streaming by block %.0f M events/s  export to ATF v2 (decode + crc32) %.0f M "
	       "events/s\n",
	       name, g->n, (double)len / (double)g->n, enc, (double)g->n / dec * 1e-6,
	       (double)g->n / blk * 1e-6, (double)g->n / exp * 1e-6);
	ada_cidx_dec_free(d);
	free(img);
	free(out);
}

/* The drain's fused pass (ada_cidx_enc_put_ring) on a stream made ring
 * events again (raw counter times at 0.6 ns a tick), in the drain's
 * chunks of 256, with the trigger's stack (calls) and the recent window
 * (keep) or without: each event the pass stops at goes the general way
 * (converted, put(), pushed or popped, kept) as drain_chunk_fused()
 * sends it. Returns the best ns/event of reps runs; *fused_out the share
 * of events the fused pass took. */
#define RING_MULT 2576980378ull /* 0.6 ns a tick, << 32 */
#define RING_WIN (1u << 20)     /* the recent window, in events */
/* FNV-1a of every byte the last run sealed: equal bytes for an A/B.
 * Its time (a byte at a time, ~1 ns a byte) is not the pass's: summed
 * in ring_hash_s and taken out of the run's. */
static uint64_t ring_hash;
static double ring_hash_s;
static void ring_hash_buf(const struct ada_cidx_out *o)
{
	const double t0 = now_s();
	for (size_t i = 0; i < o->len; i++)
		ring_hash = (ring_hash ^ o->p[i]) * 0x100000001b3ull;
	ring_hash_s += now_s() - t0;
}

static double bench_ring(const struct atf_index_event *raw, size_t n, bool stack, bool kept,
                         int reps, double *fused_out)
{
	static uint8_t buf[256 << 10];
	static struct ada_cidx_call fr[256];
	struct ada_cidx_recent *win = aligned_alloc(64, RING_WIN * sizeof(*win));
	double best = 1e9;

	if (!win)
		exit(1);
	memset(win, 0, RING_WIN * sizeof(*win));
	for (int r = 0; r < reps; r++) {
		struct ada_cidx_enc *e;
		struct ada_cidx_out o = {buf, 0, sizeof(buf)};
		struct ada_cidx_calls calls = {fr, 256, 0, 0, 0};
		struct ada_cidx_keep keep = {win, RING_WIN - 1, 0};
		uint64_t last = 0;
		size_t fused = 0;
		int err;
		if (ada_cidx_enc_new(0, &e))
			exit(1);
		ring_hash = 0xcbf29ce484222325ull;
		ring_hash_s = 0;
		double t0 = now_s();
		for (size_t done = 0; done < n;) {
			size_t want = n - done < 256 ? n - done : 256, k = 0;
			while (k < want) {
				struct ada_cidx_ring_conv cv = {.tsc0 = 0,
				                                .ns0 = 0,
				                                .mult = RING_MULT,
				                                .d_max = UINT64_MAX / RING_MULT,
				                                .last = last,
				                                .tid = raw[0].thread_id,
				                                .depth_max = 1u << 24};
				size_t f = ada_cidx_enc_put_ring(e, raw + done + k, want - k, &cv,
				                                 stack ? &calls : NULL,
				                                 kept ? &keep : NULL, &o);
				last = cv.last;
				k += f;
				fused += f;
				if (k == want)
					break;
				struct atf_index_event x = raw[done + k];
				uint64_t ts =
				    (uint64_t)(((unsigned __int128)x.timestamp_ns * RING_MULT) >>
				               32);
				x.timestamp_ns = last = ts < last ? last : ts;
				while (ada_cidx_enc_put(e, &x, 1, &o, &err) == 0) {
					ada_cidx_enc_seal(e, &o);
					ring_hash_buf(&o);
					o.len = 0;
				}
				if (stack && x.event_kind == ATF_EVENT_CALL)
					fr[calls.head++ & 255] =
					    (struct ada_cidx_call){.call_ns = x.timestamp_ns,
					                           .fn_id = x.function_id,
					                           .depth = x.call_depth};
				else if (stack && calls.n)
					calls.head--;
				if (stack) {
					calls.head &= 255;
					calls.n = x.event_kind == ATF_EVENT_CALL
					              ? (calls.n < 256 ? calls.n + 1 : 256)
					              : (calls.n ? calls.n - 1 : 0);
				}
				if (kept) /* non-temporal, as the drain's (wal_cidx_keep()) */
					_mm_stream_si128(
					    (__m128i *)(void *)&win[keep.next++ & (RING_WIN - 1)],
					    _mm_set_epi64x(
					        (long long)x.function_id,
					        (long long)(x.timestamp_ns | (uint64_t)x.event_kind
					                                         << 62)));
				k++;
			}
			done += want;
		}
		ada_cidx_enc_seal(e, &o);
		double t = now_s() - t0 - ring_hash_s;
		ring_hash_buf(&o);
		best = t / (double)n * 1e9 < best ? t / (double)n * 1e9 : best;
		*fused_out = (double)fused / (double)n;
		ada_cidx_enc_free(e);
	}
	free(win);
	return best;
}

/* The stream as ring events: times in counter ticks. */
static void bench_ring_stream(const char *name, const struct cs_gen *g, int reps)
{
	struct atf_index_event *raw = malloc(g->n * sizeof(*raw));
	if (!raw)
		exit(1);
	for (size_t i = 0; i < g->n; i++) {
		raw[i] = g->ev[i];
		raw[i].timestamp_ns = g->ev[i].timestamp_ns * 5 / 3;
	}
	printf("%-6s fused pass, ns/event (share fused):", name);
	/* CIDX_BENCH_VARIANT=0..3 runs one (bit 0 stack, bit 1 keep): for callgrind. */
	const char *only = getenv("CIDX_BENCH_VARIANT");
	for (int v = 0; v < 4; v++) {
		if (only && atoi(only) != v)
			continue;
		double share = 0, ns = bench_ring(raw, g->n, v & 1, v & 2, reps, &share);
		printf("  %s%s %.2f (%.3f, bytes %016llx)", v & 1 ? "stack" : "-",
		       v & 2 ? "+keep" : "", ns, share, (unsigned long long)ring_hash);
	}
	printf("\n");
	free(raw);
}

/* A walk's events, in place (ada_atf_index_walk_fn). */
static int bench_file_take(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	memcpy((struct atf_index_event *)ctx + seq, ev, n * sizeof(*ev));
	return 0;
}

/* A recorded index file (ATF v2 or compact) as the stream: the codec's
 * figures, or (ring) the fused pass's on its events made ring events. */
static int bench_file(const char *path, int ring)
{
	struct ada_atf_index *ix;
	struct cs_gen g = {0};

	if (ada_atf_index_open(path, 0, &ix)) {
		fprintf(stderr, "%s: not a valid ATF v2 index file\n", path);
		return 1;
	}
	g.n = ada_atf_index_count(ix);
	g.ev = malloc((g.n ? g.n : 1) * sizeof(*g.ev));
	if (!g.ev || !g.n)
		return 1;
	/* A walk, not get(0): a compact file's get() decodes one block. */
	int err = ada_atf_index_walk(ix, 0, g.n, bench_file_take, g.ev);
	ada_atf_index_free(ix);
	if (err) {
		fprintf(stderr, "%s: does not decode\n", path);
		free(g.ev);
		return 1;
	}
	g.tid = g.ev[0].thread_id;
	/* CIDX_BENCH_HEAD=N: the first N events alone (a ring's worth stays
	 * in the cache from one rep to the next, as the drain's ring lines
	 * are in a cache when it reads them). */
	const char *head = getenv("CIDX_BENCH_HEAD");
	if (head && strtoull(head, NULL, 0) && strtoull(head, NULL, 0) < g.n)
		g.n = strtoull(head, NULL, 0);
	if (ring) {
		/* From 0, in the synthetic streams' ns (bench_ring_stream()). */
		for (size_t i = g.n; i-- > 0;)
			g.ev[i].timestamp_ns -= g.ev[0].timestamp_ns;
		/* What the stream's ids or times cost (docs/benchmarks.md,
		 * mixd2): CIDX_BENCH_ONE_FID makes every function one,
		 * CIDX_BENCH_DT=N every delta N ns (the call tree kept). */
		const bool one = getenv("CIDX_BENCH_ONE_FID") != NULL;
		const char *dt = getenv("CIDX_BENCH_DT");
		const uint64_t step = dt ? strtoull(dt, NULL, 0) : 0;
		for (size_t i = 0; i < g.n; i++) {
			g.ev[i].function_id = one ? 77 : g.ev[i].function_id;
			g.ev[i].timestamp_ns = dt ? i * step : g.ev[i].timestamp_ns;
		}
		bench_ring_stream(path, &g, ring);
	} else {
		bench_stream(path, &g);
	}
	free(g.ev);
	return 0;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --sink: a compact file exported into /dev/null as the CLI exports it. */
static int bench_sink(const char *path)
{
	int in = open(path, O_RDONLY | O_CLOEXEC), out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct stat st;
	struct rusage ru;
	struct timespec c0, c1;

	if (in < 0 || out < 0 || fstat(in, &st)) {
		fprintf(stderr, "%s: cannot open\n", path);
		return 1;
	}
	struct ada_atf_index *ix;
	uint64_t n = 0;
	if (ada_atf_index_open(path, 0, &ix) == 0) {
		n = ada_atf_index_count(ix);
		ada_atf_index_free(ix);
	}
	double w0 = wall_s();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	int err = ada_cidx_file_to_atf_fd(in, (size_t)st.st_size, 0, out, NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	double w = wall_s() - w0;
	double c = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
	getrusage(RUSAGE_SELF, &ru);
	printf("%s: %llu events, export to /dev/null: %s, wall %.3f s (%.1f M events/s), CPU %.3f "
	       "s (%.1f M events/s), peak RSS %ld KiB\n",
	       path, (unsigned long long)n, err ? "failed" : "ok", w, (double)n / w * 1e-6, c,
	       (double)n / c * 1e-6, ru.ru_maxrss);
	close(in);
	close(out);
	return err != 0;
}

int main(int argc, char **argv)
{
	struct cs_gen g;

	if (argc > 2 && !strcmp(argv[1], "--sink")) {
		int err = 0;
		for (int i = 2; i < argc; i++)
			err |= bench_sink(argv[i]);
		return err;
	}

	if (argc > 2 && !strcmp(argv[1], "--ring-file")) {
		const char *reps = getenv("CIDX_BENCH_REPS");
		int err = 0;
		for (int i = 2; i < argc; i++)
			err |= bench_file(argv[i], reps ? atoi(reps) : 5);
		return err;
	}
	if (argc > 1 && !strcmp(argv[1], "--ring")) {
		size_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 4000000;
		int reps = argc > 3 ? atoi(argv[3]) : 5;
		cs_init(&g, n, 1);
		cs_fib_stream(&g);
		bench_ring_stream("fib", &g, reps);
		free(g.ev);
		if (getenv("CIDX_BENCH_FIB_ONLY"))
			return 0;
		cs_init(&g, n, 2);
		cs_mixed_stream(&g);
		bench_ring_stream("mixed", &g, reps);
		free(g.ev);
		return 0;
	}
	if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9')) {
		int err = 0;
		for (int i = 1; i < argc; i++)
			err |= bench_file(argv[i], 0);
		return err;
	}
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 4000000;
	cs_init(&g, n, 1);
	cs_fib_stream(&g);
	bench_stream("fib", &g);
	free(g.ev);
	cs_init(&g, n, 2);
	cs_mixed_stream(&g);
	bench_stream("mixed", &g);
	free(g.ev);
	return 0;
}
