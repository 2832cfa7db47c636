/*
 * bench/cidx_bench: the compact index codec (src/atf/cidx.h) on synthetic
 * streams (tests/unit/cidx_streams.h): encode ns/event as the drain would
 * call it (chunks of 4096 events into 256 KiB buffers, sealed at each
 * buffer), decode M events/s of the whole file (the readers' path), the
 * export to ATF v2 (decode + CRC-32 of the 32-byte events) and bytes per
 * event. Single-threaded; by hand, not a test:
 *   build/bench/cidx_bench [events]
 *   build/bench/cidx_bench FILE.atf...   (the same on recorded index files)
 *   build/bench/cidx_bench --sink FILE.atf...   (a compact file's export,
 *       ada_cidx_file_to_atf_fd as `ada export --format atf` calls it, into
 *       /dev/null: its wall and CPU time and peak RSS, without the cost of
 *       the output file's pages; for exports too big for the scratch disk)
 */
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

/* A walk's events, in place (ada_atf_index_walk_fn). */
static int bench_file_take(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	memcpy((struct atf_index_event *)ctx + seq, ev, n * sizeof(*ev));
	return 0;
}

/* A recorded index file (ATF v2 or compact) as the stream. */
static int bench_file(const char *path)
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
	bench_stream(path, &g);
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
	int err = ada_cidx_file_to_atf_fd(in, (size_t)st.st_size, 0, out);
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

	if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9')) {
		int err = 0;
		for (int i = 1; i < argc; i++)
			err |= bench_file(argv[i]);
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
