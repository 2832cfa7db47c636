/*
 * The compact index (src/atf/cidx.h): round trips of synthetic streams,
 * every block alone, get(seq) and find(ts) against brute force, links set
 * in the events and back-patched after the fact, salvage of truncated and
 * damaged files, and the ATF reader serving a compact file's events.
 * Prints bytes per event for the fib-like and mixed streams.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <cmocka.h>

#include "cidx.h"
#include "cidx_streams.h"

struct img {
	uint8_t *p;
	size_t len;
};

static struct img encode(const struct atf_index_event *ev, size_t n, uint32_t block_size,
                         const uint64_t *ls, const uint32_t *ld, size_t nl)
{
	struct ada_atf_file_info info;
	struct ada_cidx_enc *e;
	struct img im;

	ada_atf_file_info_native(&info, 4242);
	assert_int_equal(ada_cidx_enc_new(block_size, &e), 0);
	assert_int_equal(ada_cidx_write_mem(e, &info, ev, n, ls, ld, nl, &im.p, &im.len), 0);
	ada_cidx_enc_free(e);
	return im;
}

static void assert_events_equal(const struct atf_index_event *a, const struct atf_index_event *b,
                                size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (memcmp(&a[i], &b[i], sizeof(a[i]))) {
			print_error("event %zu: ts %llu/%llu fid %llx/%llx tid %u/%u kind %u/%u "
			            "depth %x/%x detail %u/%u\n",
			            i, (unsigned long long)a[i].timestamp_ns,
			            (unsigned long long)b[i].timestamp_ns,
			            (unsigned long long)a[i].function_id,
			            (unsigned long long)b[i].function_id, a[i].thread_id,
			            b[i].thread_id, a[i].event_kind, b[i].event_kind,
			            a[i].call_depth, b[i].call_depth, a[i].detail_seq,
			            b[i].detail_seq);
			fail();
		}
	}
}

/* Decodes im every way there is and compares with want[0..n). */
static void check_image(const struct img *im, const struct atf_index_event *want, size_t n)
{
	struct ada_cidx_dec *d;
	struct atf_index_event *all = calloc(n ? n : 1, sizeof(*all)), ev;

	assert_int_equal(ada_cidx_dec_open(im->p, im->len, 0, &d), 0);
	assert_int_equal(ada_cidx_dec_count(d), n);
	assert_int_equal(ada_cidx_dec_all(d, all), 0);
	assert_events_equal(all, want, n);
	/* Each block alone, last first. */
	struct atf_index_event *scratch = calloc(ada_cidx_dec_scratch_events(d), sizeof(*scratch));
	for (size_t b = ada_cidx_dec_nblocks(d); b-- > 0;) {
		uint64_t first, t0;
		uint32_t k;
		ada_cidx_dec_block_info(d, b, &first, &k, &t0);
		assert_int_equal(ada_cidx_dec_block(d, b, scratch), 0);
		assert_events_equal(scratch, want + first, k);
		assert_int_equal(t0, want[first].timestamp_ns);
	}
	/* get(seq) at random seqs and the edges. */
	for (uint64_t i = 0; n && i < 200; i++) {
		uint64_t s = i < 2 ? (i ? n - 1 : 0) : (i * 2654435761u) % n;
		assert_int_equal(ada_cidx_dec_get(d, s, scratch, &ev), 0);
		assert_events_equal(&ev, &want[s], 1);
	}
	assert_int_equal(ada_cidx_dec_get(d, n, scratch, &ev), -ERANGE);
	/* The streaming iterator, from the start and from the middle. */
	for (uint64_t from = 0; from <= n; from += n / 2 + 1) {
		struct ada_cidx_iter it;
		const struct atf_index_event *span;
		uint64_t at = from;
		long k;
		assert_int_equal(ada_cidx_iter_init(&it, d, from), 0);
		while ((k = ada_cidx_iter_next(&it, &span)) > 0) {
			assert_events_equal(span, want + at, (size_t)k);
			at += (uint64_t)k;
		}
		assert_int_equal(k, 0);
		assert_int_equal(at, n);
		ada_cidx_iter_fini(&it);
	}
	ada_cidx_dec_free(d);
	free(scratch);
	free(all);
}

/* find(ts) == the first seq with ts >= T, for sorted streams. */
static void check_find(const struct img *im, const struct atf_index_event *want, size_t n)
{
	struct ada_cidx_dec *d;

	assert_int_equal(ada_cidx_dec_open(im->p, im->len, 0, &d), 0);
	struct atf_index_event *scratch = calloc(ada_cidx_dec_scratch_events(d), sizeof(*scratch));
	for (uint64_t i = 0; i < 300; i++) {
		uint64_t s = (i * 2654435761u) % n, t = want[s].timestamp_ns + (i % 3) - 1, lo = 0;
		if (i == 0)
			t = 0;
		if (i == 1)
			t = UINT64_MAX;
		while (lo < n && want[lo].timestamp_ns < t)
			lo++;
		assert_int_equal(ada_cidx_dec_find(d, t, scratch), lo);
	}
	ada_cidx_dec_free(d);
	free(scratch);
}

static double bytes_per_event(const struct img *im, size_t n)
{
	return (double)im->len / (double)n;
}

static void roundtrip_fib(void **state)
{
	struct cs_gen g;

	(void)state;
	cs_init(&g, 500000, 1);
	cs_fib_stream(&g);
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	printf("cidx: fib-like   %zu events, %.3f bytes/event (ATF v2: 32)\n", g.n,
	       bytes_per_event(&im, g.n));
	assert_true(bytes_per_event(&im, g.n) <= 4.0);
	check_image(&im, g.ev, g.n);
	check_find(&im, g.ev, g.n);
	free(im.p);
	free(g.ev);
}

static void roundtrip_mixed(void **state)
{
	struct cs_gen g;

	(void)state;
	cs_init(&g, 500000, 2);
	cs_mixed_stream(&g);
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	printf("cidx: mixed(200) %zu events, %.3f bytes/event (ATF v2: 32)\n", g.n,
	       bytes_per_event(&im, g.n));
	assert_true(bytes_per_event(&im, g.n) <= 6.0);
	check_image(&im, g.ev, g.n);
	check_find(&im, g.ev, g.n);
	free(im.p);
	free(g.ev);
}

/* Recursion far beyond the 64 frames a block header carries, across
 * small blocks, two functions alternating, then the unwinding returns. */
static void roundtrip_deep(void **state)
{
	struct cs_gen g;

	(void)state;
	cs_init(&g, 20000, 3);
	for (int i = 0; i < 3000; i++)
		cs_call(&g, 3, atf_function_id(1, 10 + (i % 3 == 0)));
	for (int i = 0; i < 3000; i++)
		cs_ret(&g, 4, ATF_EVENT_RETURN);
	struct img im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	check_image(&im, g.ev, g.n);
	check_find(&im, g.ev, g.n);
	free(im.p);
	free(g.ev);
}

/* Frames leaving by EXCEPTION (an unwind of several), a longjmp (a RETURN
 * that skips frames), wait markers, a fatal-signal marker, a depth restart
 * at 1. */
static void roundtrip_exceptions_and_signals(void **state)
{
	struct cs_gen g;

	(void)state;
	cs_init(&g, 10000, 4);
	for (int r = 0; r < 50; r++) {
		for (int i = 0; i < 8; i++)
			cs_call(&g, 7, atf_function_id(2, 30 + (uint32_t)i));
		for (int i = 0; i < 5; i++)
			cs_ret(&g, 9, ATF_EVENT_EXCEPTION);
		/* longjmp: the RETURN of depth 1 while 3 frames are open */
		cs_emit(&g, 11, g.stack[0], ATF_EVENT_RETURN, 1);
		g.depth = 0;
		cs_call(&g, 0, atf_function_id(2, 99)); /* delta 0: equal time */
		cs_ret(&g, 0, ATF_EVENT_RETURN);
	}
	cs_call(&g, 5, atf_function_id(3, 1));
	/* ada's wait markers (docs/format.md) inside an open frame */
	cs_emit(&g, 3, 0, ATF_EVENT_EXCEPTION, ADA_WAIT_MARKER_BEGIN);
	cs_emit(&g, 70000, 0, ATF_EVENT_EXCEPTION, ADA_WAIT_MARKER_END);
	cs_emit(&g, 5, 0xdeadbeefull, ATF_EVENT_EXCEPTION, ADA_SIGNAL_MARKER_FLAG | 11);
	cs_emit(&g, 5, 0, ATF_EVENT_EXCEPTION, ADA_SIGNAL_MARKER_FLAG | 6);
	struct img im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	check_image(&im, g.ev, g.n);
	check_find(&im, g.ev, g.n); /* equal timestamps: the first of them */
	free(im.p);
	free(g.ev);
}

/* Values the model never guesses: time jumps of 2^40 ns and 2^63,
 * timestamps going back, huge function ids, other thread ids, kinds 0 and
 * 7, depths that are not the next, all over, plus random events. */
static void roundtrip_odd_values(void **state)
{
	struct cs_gen g;

	(void)state;
	cs_init(&g, 30000, 5);
	cs_call(&g, 1ull << 40, UINT64_MAX);
	cs_call(&g, 0, 0);
	cs_call(&g, 1ull << 63, 0x7fffffffffffffffull);
	cs_emit(&g, 0, 5, ATF_EVENT_CALL, UINT32_MAX);
	cs_emit(&g, (uint64_t)-5, 5, ATF_EVENT_RETURN, 7); /* back in time */
	g.tid = 1;
	cs_emit(&g, 1, 5, 0, 0);
	g.tid = 4242;
	cs_emit(&g, 1, 5, 7, 3);
	/* Frames at depth 0: a RETURN at 0 leaves cur at 0 (not -1) on
	 * every path, the encoder's general one (a link sends it there) and
	 * the decoder's fast one (found by fuzz_cidx). */
	for (int i = 0; i < 3; i++) {
		cs_emit(&g, 1, 9, ATF_EVENT_CALL, 0);
		cs_emit(&g, 1, 9, ATF_EVENT_RETURN, 0);
		g.ev[g.n - 1].detail_seq = (uint32_t)i;
		cs_emit(&g, 1, 9, 77, 0);
		cs_emit(&g, 1, 9, ATF_EVENT_CALL, 1);
		cs_emit(&g, 1, 9, ATF_EVENT_RETURN, 1);
	}
	while (g.n < g.cap) {
		uint64_t r = cs_rand(&g), r2 = cs_rand(&g);
		g.tid = r & 0x100 ? (uint32_t)r2 : 4242;
		cs_emit(&g, r & 0x200 ? r2 : r % 50, r & 0x400 ? r2 : (r >> 20) % 9,
		        (uint32_t)(r >> 11) % 5,
		        r & 0x800 ? (uint32_t)(r2 >> 7) : (uint32_t)(r >> 13) % 6);
	}
	struct img im = encode(g.ev, g.n, 8192, NULL, NULL, 0);
	check_image(&im, g.ev, g.n);
	free(im.p);
	free(g.ev);
}

/* Links in the events, and after the fact (the back-patch of a window
 * decided later), one replaced; the decoder applies them in every path. */
static void roundtrip_links(void **state)
{
	struct cs_gen g;
	uint64_t ls[4] = {10, 20, 30, 10};
	uint32_t ld[4] = {100, 101, 0, 7};

	(void)state;
	cs_init(&g, 100000, 6);
	cs_mixed_stream(&g);
	struct atf_index_event *want = malloc(g.n * sizeof(*want));
	for (size_t i = 0; i < g.n; i++)
		if (i % 97 == 5)
			g.ev[i].detail_seq = (uint32_t)(i / 97);
	memcpy(want, g.ev, g.n * sizeof(*want));
	for (int i = 0; i < 4; i++)
		want[ls[i]].detail_seq = ld[i];
	struct img im = encode(g.ev, g.n, 0, ls, ld, 4);
	check_image(&im, want, g.n);
	struct ada_cidx_dec *d;
	assert_int_equal(ada_cidx_dec_open(im.p, im.len, 0, &d), 0);
	assert_int_equal(ada_cidx_dec_link(d, 10), 7);
	assert_int_equal(ada_cidx_dec_link(d, 11), ATF_NO_DETAIL);
	ada_cidx_dec_free(d);
	free(im.p);
	free(want);
	free(g.ev);
}

/* The encoder's buffer API as the drain would use it: small caller
 * buffers, sealed and written out one after the other. */
static void enc_small_buffers(void **state)
{
	struct ada_atf_file_info info;
	struct ada_cidx_file_header h;
	struct ada_cidx_enc *e;
	struct cs_gen g;
	uint8_t *file = calloc(1, 8 << 20), chunk[6000];
	size_t flen = sizeof(h), done = 0, tail;
	int err;

	(void)state;
	cs_init(&g, 200000, 7);
	cs_mixed_stream(&g);
	ada_atf_file_info_native(&info, 4242);
	assert_int_equal(ada_cidx_enc_new(ADA_CIDX_BLOCK_MIN, &e), 0);
	while (done < g.n) {
		struct ada_cidx_out o = {chunk, 0, sizeof(chunk)};
		size_t want = g.n - done < 777 ? g.n - done : 777; /* a drain chunk */
		done += ada_cidx_enc_put(e, g.ev + done, want, &o, &err);
		assert_int_equal(err, 0);
		ada_cidx_enc_seal(e, &o);
		memcpy(file + flen, chunk, o.len);
		flen += o.len;
		assert_int_equal(ada_cidx_enc_offset(e), flen);
	}
	assert_int_equal(ada_cidx_enc_count(e), g.n);
	assert_int_equal(ada_cidx_enc_link(e, g.n, 1), -ERANGE);
	assert_int_equal(
	    ada_cidx_enc_finish(e, &info, file + flen, ada_cidx_enc_tail_size(e), &tail, &h), 0);
	memcpy(file, &h, sizeof(h));
	struct img im = {file, flen + tail};
	check_image(&im, g.ev, g.n);
	ada_cidx_enc_free(e);
	free(file);
	free(g.ev);
}

/* Finishes e into a buffer of exactly ada_cidx_enc_tail_size(e) bytes
 * (a writer counts the tail against its disk budget from that size ahead):
 * returns the bytes finish wrote, checked to fit. */
static size_t tail_finish(struct ada_cidx_enc *e)
{
	struct ada_atf_file_info info;
	struct ada_cidx_file_header h;
	size_t cap = ada_cidx_enc_tail_size(e), len = 0;
	uint8_t *buf = malloc(cap);

	ada_atf_file_info_native(&info, 4242);
	assert_int_equal(ada_cidx_enc_finish(e, &info, buf, cap, &len, &h), 0);
	assert_true(len <= cap);
	free(buf);
	return len;
}

/* The tail's size: exact while links come in seq order (events that carry
 * one, back-patches past the last), a bound when they do not (a window's
 * links before the last linked event, a link replaced), whatever the
 * gaps of seq and detail. */
static void tail_size_bound(void **state)
{
	static const uint32_t details[] = {0, 1, 2, 1000000, 5, 4000000000u, 3, 0, 77};
	struct cs_gen g;
	struct ada_cidx_enc *e;
	uint8_t *buf = malloc(8 << 20);
	int err;

	(void)state;
	cs_init(&g, 50000, 9);
	cs_mixed_stream(&g);
	for (size_t i = 0; i < g.n; i++) /* in order, with every size of gap */
		if (i % 3001 == 2 || i == 100 || i == 101)
			g.ev[i].detail_seq = details[i % 9];
	for (int pass = 0; pass < 2; pass++) {
		struct ada_cidx_out o = {buf, 64, 8 << 20};
		assert_int_equal(ada_cidx_enc_new(ADA_CIDX_BLOCK_MIN, &e), 0);
		assert_int_equal(ada_cidx_enc_put(e, g.ev, g.n, &o, &err), g.n);
		ada_cidx_enc_seal(e, &o);
		assert_int_equal(ada_cidx_enc_link(e, g.n - 1, 4000000000u), 0); /* past the last */
		if (pass == 0) { /* in order: exact */
			size_t want = ada_cidx_enc_tail_size(e);
			assert_int_equal(tail_finish(e), want);
		} else { /* a back-patch before the last, one replaced: bounded */
			assert_int_equal(ada_cidx_enc_link(e, 7, 1), 0);
			assert_int_equal(ada_cidx_enc_link(e, 100, 3999999999u), 0);
			assert_int_equal(ada_cidx_enc_link(e, g.n - 1, 0), 0);
			(void)tail_finish(e);
		}
		ada_cidx_enc_free(e);
	}
	free(buf);
	free(g.ev);
}

/* An unfinished file (no tail, zeros after the last block), a file cut
 * anywhere, a byte changed in a block: strict open refuses, salvage gives
 * the whole blocks before the damage, exactly. */
static void salvage(void **state)
{
	struct cs_gen g;
	struct ada_cidx_dec *d;

	(void)state;
	cs_init(&g, 50000, 8);
	cs_mixed_stream(&g);
	struct img im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	struct ada_cidx_file_header h;
	memcpy(&h, im.p, sizeof(h));
	for (size_t cut = 0; cut < im.len; cut += 997) {
		if (cut >= 64)
			assert_int_not_equal(ada_cidx_dec_open(im.p, cut, 0, &d), 0);
		int err = ada_cidx_dec_open(im.p, cut, ADA_ATF_OPEN_SALVAGE, &d);
		if (cut < 64) {
			assert_int_equal(err, -EBADMSG);
			continue;
		}
		assert_int_equal(err, 0);
		uint64_t n = ada_cidx_dec_count(d);
		assert_true(n <= g.n);
		struct atf_index_event *all = calloc(n + 1, sizeof(*all));
		assert_int_equal(ada_cidx_dec_all(d, all), 0);
		assert_events_equal(all, g.ev, n);
		free(all);
		ada_cidx_dec_free(d);
	}
	/* A changed byte in the third block: two blocks survive. */
	uint8_t *bad = malloc(im.len);
	memcpy(bad, im.p, im.len);
	assert_int_equal(ada_cidx_dec_open(bad, im.len, 0, &d), 0);
	uint64_t first;
	uint32_t k;
	uint64_t t0;
	ada_cidx_dec_block_info(d, 2, &first, &k, &t0);
	ada_cidx_dec_free(d);
	size_t off = 64;
	for (int b = 0; b < 2; b++) {
		struct ada_cidx_block_header bh;
		memcpy(&bh, bad + off, sizeof(bh));
		off += bh.total_len;
	}
	bad[off + 200] ^= 0x40;
	assert_int_equal(ada_cidx_dec_open(bad, im.len, ADA_ATF_OPEN_SALVAGE, &d), 0);
	assert_int_equal(ada_cidx_dec_count(d), first);
	ada_cidx_dec_free(d);
	free(bad);
	free(im.p);
	free(g.ev);
}

/* Two decoders of one image agree: the same result, blocks and events. */
static void assert_same_open(const struct img *im, size_t len, int fd, unsigned flags)
{
	struct ada_cidx_dec *a = NULL, *b = NULL;
	int ea = ada_cidx_dec_open(im->p, len, flags, &a);
	int eb = ada_cidx_dec_open_fd(im->p, len, fd, flags, &b);
	assert_int_equal(eb, ea);
	if (ea) {
		return;
	}
	assert_int_equal(ada_cidx_dec_count(b), ada_cidx_dec_count(a));
	assert_int_equal(ada_cidx_dec_nblocks(b), ada_cidx_dec_nblocks(a));
	assert_int_equal(ada_cidx_dec_nlinks(b), ada_cidx_dec_nlinks(a));
	for (size_t k = 0; k < ada_cidx_dec_nblocks(a); k++) {
		uint64_t oa, ob;
		uint32_t la, lb;
		ada_cidx_dec_block_span(a, k, &oa, &la);
		ada_cidx_dec_block_span(b, k, &ob, &lb);
		assert_true(oa == ob && la == lb);
	}
	ada_cidx_dec_free(a);
	ada_cidx_dec_free(b);
}

/* An export large enough for the direct writer (several staging buffers
 * in turn, a padded last one cut off) writes the bytes of the in-memory
 * export, whichever way the file system takes it. */
static void export_fd_large(void **state)
{
	struct cs_gen g;
	uint8_t *v2;
	size_t v2len;
	(void)state;
	cs_init(&g, 300000, 9);
	cs_mixed_stream(&g);
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	assert_int_equal(ada_cidx_to_atf(im.p, im.len, 0, &v2, &v2len), 0);
	assert_true(v2len > (8u << 20) && v2len % 4096 != 0);
	FILE *tf = tmpfile();
	assert_non_null(tf);
	assert_int_equal(ada_cidx_to_atf_fd(im.p, im.len, 0, fileno(tf)), 0);
	assert_int_equal(lseek(fileno(tf), 0, SEEK_END), (off_t)v2len);
	uint8_t *got = malloc(v2len);
	assert_non_null(got);
	assert_int_equal(pread(fileno(tf), got, v2len, 0), (ssize_t)v2len);
	assert_memory_equal(got, v2, v2len);
	free(got);
	free(v2);
	fclose(tf);
	free(im.p);
	free(g.ev);
}

/* An export into a file on tmpfs (a memfd: shmem) takes the page cache
 * path, not O_DIRECT (cidx_export.c export_out_init()): the same bytes. */
static void export_fd_tmpfs(void **state)
{
	struct cs_gen g;
	struct statfs sf;
	uint8_t *v2;
	size_t v2len;
	(void)state;
	int fd = memfd_create("cidx_export", 0);
	if (fd < 0 || fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC) {
		if (fd >= 0)
			close(fd);
		skip();
	}
	cs_init(&g, 200000, 11);
	cs_mixed_stream(&g);
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	assert_int_equal(ada_cidx_to_atf(im.p, im.len, 0, &v2, &v2len), 0);
	assert_true(v2len > (4u << 20));
	assert_int_equal(ada_cidx_to_atf_fd(im.p, im.len, 0, fd), 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)v2len);
	uint8_t *got = malloc(v2len);
	assert_non_null(got);
	assert_int_equal(pread(fd, got, v2len, 0), (ssize_t)v2len);
	assert_memory_equal(got, v2, v2len);
	free(got);
	free(v2);
	close(fd);
	free(im.p);
	free(g.ev);
}

/* The export of a compact file into a file on the disk (the test's
 * working directory: the build tree) goes buffered with RWF_DONTCACHE, and
 * where that is refused (ADA_CIDX_EXPORT_NO_DONTCACHE: as a kernel before
 * 6.14) falls back to O_DIRECT, padded pieces cut off at the end, as when
 * O_DIRECT is asked for: the bytes of the in-memory export every way, and
 * the way taken told. On tmpfs all go through the page cache (the bytes
 * still checked). */
static void export_fd_fallback(void **state)
{
	struct cs_gen g;
	struct statfs sf;
	uint8_t *v2;
	size_t v2len;
	char in_path[] = "cidx_export_in_XXXXXX", out_path[] = "cidx_export_out_XXXXXX";
	(void)state;
	cs_init(&g, 200000, 13);
	cs_mixed_stream(&g);
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	assert_int_equal(ada_cidx_to_atf(im.p, im.len, 0, &v2, &v2len), 0);
	assert_true(v2len > (4u << 20) && v2len % 4096 != 0);
	int in = mkstemp(in_path);
	assert_true(in >= 0);
	unlink(in_path);
	assert_int_equal(pwrite(in, im.p, im.len, 0), (ssize_t)im.len);
	bool tmpfs = fstatfs(in, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
	uint8_t *got = malloc(v2len);
	assert_non_null(got);
	static const unsigned flags[] = {0, ADA_CIDX_EXPORT_NO_DONTCACHE,
	                                 ADA_CIDX_EXPORT_DIRECT_ONLY};
	static const enum ada_cidx_export_how want[] = {
	    ADA_CIDX_EXPORT_DONTCACHE, ADA_CIDX_EXPORT_DIRECT_FALLBACK, ADA_CIDX_EXPORT_DIRECT};
	for (size_t i = 0; i < 3; i++) {
		strcpy(out_path + sizeof(out_path) - 7, "XXXXXX");
		int fd = mkstemp(out_path);
		assert_true(fd >= 0);
		unlink(out_path);
		enum ada_cidx_export_how how = (enum ada_cidx_export_how) - 1;
		assert_int_equal(ada_cidx_file_to_atf_fd(in, im.len, flags[i], fd, &how), 0);
		if (tmpfs)
			assert_int_equal(how, ADA_CIDX_EXPORT_PLAIN);
		else if (i == 0) /* the fallback on a kernel without RWF_DONTCACHE */
			assert_true(how == want[0] || how == ADA_CIDX_EXPORT_DIRECT_FALLBACK);
		else
			assert_int_equal(how, want[i]);
		assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)v2len);
		memset(got, 0, v2len);
		assert_int_equal(pread(fd, got, v2len, 0), (ssize_t)v2len);
		assert_memory_equal(got, v2, v2len);
		close(fd);
	}
	free(got);
	close(in);
	free(v2);
	free(im.p);
	free(g.ev);
}

/* The open that reads block headers with pread (ada_cidx_dec_open_fd(),
 * the readers' and the export's) finds what the walk through memory
 * finds: whole files, cut ones, a damaged block (SALVAGE stops before
 * it), blocks smaller and larger than its 4 KiB window; a file shorter
 * than the image (a short read) ends the walk there. The export from the
 * file writes the bytes the export from memory writes. */
static void open_fd_reads_headers(void **state)
{
	struct cs_gen g;
	static const uint32_t sizes[] = {ADA_CIDX_BLOCK_MIN, 65536};

	(void)state;
	cs_init(&g, 60000, 8);
	cs_mixed_stream(&g);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct img im = encode(g.ev, g.n, sizes[z], NULL, NULL, 0);
		FILE *tf = tmpfile();
		assert_non_null(tf);
		int fd = fileno(tf);
		assert_int_equal(pwrite(fd, im.p, im.len, 0), (ssize_t)im.len);
		for (size_t cut = 64; cut <= im.len; cut += cut + 4999 < im.len ? 4999 : 1) {
			assert_same_open(&im, cut, fd, 0);
			assert_same_open(&im, cut, fd, ADA_ATF_OPEN_SALVAGE);
			if (cut == im.len)
				break;
		}
		/* The file shorter than the image: the walk ends at its end. */
		struct ada_cidx_dec *d;
		assert_int_equal(ftruncate(fd, (off_t)(im.len / 2)), 0);
		assert_int_equal(ada_cidx_dec_open_fd(im.p, im.len, fd, 0, &d), -EBADMSG);
		assert_int_equal(ada_cidx_dec_open_fd(im.p, im.len, fd, ADA_ATF_OPEN_SALVAGE, &d),
		                 0);
		assert_true(ada_cidx_dec_count(d) > 0 && ada_cidx_dec_count(d) < g.n);
		uint64_t off;
		uint32_t len;
		ada_cidx_dec_block_span(d, ada_cidx_dec_nblocks(d) - 1, &off, &len);
		assert_true(off + len <= im.len / 2);
		ada_cidx_dec_free(d);
		/* A damaged block: SALVAGE stops before it either way. */
		assert_int_equal(ada_cidx_dec_open(im.p, im.len, 0, &d), 0);
		ada_cidx_dec_block_span(d, 2, &off, &len);
		ada_cidx_dec_free(d);
		im.p[off + len - 3] ^= 0x40;
		assert_int_equal(pwrite(fd, im.p, im.len, 0), (ssize_t)im.len);
		assert_same_open(&im, im.len, fd, ADA_ATF_OPEN_SALVAGE);
		assert_int_equal(ada_cidx_dec_open_fd(im.p, im.len, fd, ADA_ATF_OPEN_SALVAGE, &d),
		                 0);
		assert_int_equal(ada_cidx_dec_nblocks(d), 2);
		ada_cidx_dec_free(d);
		im.p[off + len - 3] ^= 0x40;
		assert_int_equal(pwrite(fd, im.p, im.len, 0), (ssize_t)im.len);
		/* The export from the file and from memory: the same bytes. */
		FILE *ta = tmpfile(), *tb = tmpfile();
		assert_true(ta && tb);
		assert_int_equal(ada_cidx_to_atf_fd(im.p, im.len, 0, fileno(ta)), 0);
		assert_int_equal(ada_cidx_file_to_atf_fd(fd, im.len, 0, fileno(tb), NULL), 0);
		off_t na = lseek(fileno(ta), 0, SEEK_END), nb = lseek(fileno(tb), 0, SEEK_END);
		assert_true(na == nb && na == (off_t)(128 + g.n * 32));
		uint8_t *va = malloc((size_t)na), *vb = malloc((size_t)nb);
		assert_int_equal(pread(fileno(ta), va, (size_t)na, 0), na);
		assert_int_equal(pread(fileno(tb), vb, (size_t)nb, 0), nb);
		assert_memory_equal(va, vb, (size_t)na);
		free(va);
		free(vb);
		fclose(ta);
		fclose(tb);
		fclose(tf);
		free(im.p);
	}
	free(g.ev);
}

/* A recorder killed while writing (`ada recover`): the file holds a header
 * placeholder, whole blocks, part of the next one and zeros. Resuming
 * after the whole blocks, putting the events the ring still held, adding
 * the links again from the detail file's index_seqs and finishing gives
 * the file every event and link of the uninterrupted recording. */
static void recover_after_kill(void **state)
{
	struct ada_atf_file_info info;
	struct ada_cidx_file_header h;
	struct ada_cidx_enc *e;
	struct cs_gen g;
	uint64_t end;
	size_t tail;
	int err;

	(void)state;
	cs_init(&g, 60000, 14);
	cs_mixed_stream(&g);
	for (size_t i = 0; i < g.n; i++)
		if (i % 1000 == 7)
			g.ev[i].detail_seq = (uint32_t)(i / 1000);
	struct img full = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	/* The crash: header placeholder, blocks up to the 5th, half of the
	 * 6th, then the preallocated zeros. */
	uint8_t *file = calloc(1, full.len + 65536);
	size_t off = 64;
	for (int b = 0; b < 5; b++) {
		struct ada_cidx_block_header bh;
		memcpy(&bh, full.p + off, sizeof(bh));
		off += bh.total_len;
	}
	memcpy(file + 64, full.p + 64, off - 64 + 1000);
	ada_atf_file_info_native(&info, 4242);
	ada_cidx_file_header_fill(&h, &info, ADA_CIDX_BLOCK_MIN);
	memcpy(file, &h, sizeof(h));
	/* Recovery. */
	assert_int_equal(ada_cidx_enc_new(ADA_CIDX_BLOCK_MIN, &e), 0);
	assert_int_equal(ada_cidx_enc_resume(e, file, full.len, &end), 0);
	assert_int_equal(end, off);
	uint64_t have = ada_cidx_enc_count(e);
	assert_true(have > 0 && have < g.n);
	struct ada_cidx_out o = {file + end, 0, full.len + 65536 - end};
	struct atf_index_event *rest = malloc((g.n - have) * sizeof(*rest));
	memcpy(rest, g.ev + have, (g.n - have) * sizeof(*rest));
	for (size_t i = 0; i < g.n - have; i++)
		rest[i].detail_seq = ATF_NO_DETAIL; /* their links come from the log */
	assert_int_equal(ada_cidx_enc_put(e, rest, g.n - have, &o, &err), g.n - have);
	ada_cidx_enc_seal(e, &o);
	for (size_t i = 0; i < g.n; i++) /* the detail file's index_seq of record k */
		if (g.ev[i].detail_seq != ATF_NO_DETAIL)
			assert_int_equal(ada_cidx_enc_link(e, i, g.ev[i].detail_seq), 0);
	uint8_t *tailp = file + end + o.len;
	assert_int_equal(ada_cidx_enc_finish(e, &info, tailp, ada_cidx_enc_tail_size(e), &tail, &h),
	                 0);
	memcpy(file, &h, sizeof(h));
	struct img rec = {file, end + o.len + tail};
	check_image(&rec, g.ev, g.n);
	ada_cidx_enc_free(e);
	free(rest);
	free(file);
	free(full.p);
	free(g.ev);
}

/* The ATF reader opens a compact file and serves its events as ATF v2. */
static void atf_reader_reads_compact(void **state)
{
	struct cs_gen g;
	struct ada_atf_index *ix;

	(void)state;
	cs_init(&g, 100000, 9);
	cs_fib_stream(&g);
	g.ev[77].detail_seq = 3;
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	assert_int_equal(ada_atf_index_open_mem(im.p, im.len, 0, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), g.n);
	for (size_t i = 0; i < g.n; i++)
		assert_events_equal(ada_atf_index_get(ix, i), &g.ev[i], 1);
	const struct atf_index_header *h = ada_atf_index_header(ix);
	assert_memory_equal(h->magic, ATF_INDEX_MAGIC, 4);
	assert_int_equal(h->event_size, 32);
	assert_int_equal(h->time_start_ns, g.ev[0].timestamp_ns);
	assert_int_equal(h->time_end_ns, g.ev[g.n - 1].timestamp_ns);
	assert_int_equal(ada_atf_index_lower_bound(ix, g.ev[500].timestamp_ns),
	                 ada_atf_index_lower_bound(ix, g.ev[500].timestamp_ns));
	ada_atf_index_free(ix);
	/* Unfinished (the tail cut off): strict refuses, salvage reads. */
	struct ada_cidx_file_header fh;
	memcpy(&fh, im.p, sizeof(fh));
	struct ada_cidx_footer f;
	memcpy(&f, im.p + fh.footer_offset, sizeof(f));
	assert_int_equal(ada_atf_index_open_mem(im.p, f.link_offset, 0, &ix), -EBADMSG);
	assert_int_equal(ada_atf_index_open_mem(im.p, f.link_offset, ADA_ATF_OPEN_SALVAGE, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), g.n);
	ada_atf_index_free(ix);
	free(im.p);
	free(g.ev);
}

struct walk_got {
	struct atf_index_event *ev;
	uint64_t first, next, runs;
};

/* ada_atf_index_walk()'s callback: runs follow on, each copied. */
static int walk_collect(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	struct walk_got *w = ctx;
	assert_int_equal(seq, w->next);
	assert_true(n >= 1);
	memcpy(w->ev + (seq - w->first), ev, n * sizeof(*ev));
	w->next = seq + n;
	w->runs++;
	return 0;
}

static int walk_once(struct ada_atf_index *ix, uint64_t b, uint64_t e, struct walk_got *w)
{
	w->first = w->next = b;
	w->runs = 0;
	return ada_atf_index_walk(ix, b, e, walk_collect, w);
}

/* The sequential walk of a compact file of many blocks: every event once,
 * in order, links applied, from any start; the bounds found by block;
 * a block whose CRC holds but whose events do not decode ends the walk,
 * reads as zeros through get() and is counted once. */
static void atf_reader_walks_compact(void **state)
{
	struct cs_gen g;
	struct ada_atf_index *ix;
	struct ada_cidx_dec *d;
	uint64_t b, e;

	(void)state;
	cs_init(&g, 100000, 11);
	cs_fib_stream(&g);
	g.ev[4097].detail_seq = 5;
	g.ev[60001].detail_seq = 6;
	struct img im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	struct walk_got w = {.ev = calloc(g.n, sizeof(*w.ev))};
	assert_int_equal(ada_atf_index_open_mem(im.p, im.len, 0, &ix), 0);
	assert_int_equal(walk_once(ix, 0, UINT64_MAX, &w), 0);
	assert_int_equal(w.next, g.n);
	assert_events_equal(w.ev, g.ev, g.n);
	assert_int_equal(walk_once(ix, 1234, 56789, &w), 0);
	assert_int_equal(w.next, 56789);
	assert_events_equal(w.ev, g.ev + 1234, 56789 - 1234);
	ada_atf_index_range(ix, 0, UINT64_MAX, &b, &e);
	assert_true(b == 0 && e == g.n);
	for (size_t i = 0; i < g.n; i += 7919) { /* the bounds against brute force */
		uint64_t t = g.ev[i].timestamp_ns, lo = 0, up = 0;
		while (lo < g.n && g.ev[lo].timestamp_ns < t)
			lo++;
		while (up < g.n && g.ev[up].timestamp_ns <= t)
			up++;
		assert_int_equal(ada_atf_index_lower_bound(ix, t), lo);
		assert_int_equal(ada_atf_index_upper_bound(ix, t), up);
	}
	assert_int_equal(ada_atf_index_undecoded(ix), 0);
	ada_atf_index_free(ix);

	/* Block 3's first coded byte made an invalid sub-op, its CRC made good. */
	uint64_t off, first3, t3;
	uint32_t len, k3, nframes;
	assert_int_equal(ada_cidx_dec_open(im.p, im.len, 0, &d), 0);
	assert_true(ada_cidx_dec_nblocks(d) > 5);
	ada_cidx_dec_block_span(d, 3, &off, &len);
	ada_cidx_dec_block_info(d, 3, &first3, &k3, &t3);
	ada_cidx_dec_free(d);
	memcpy(&nframes, im.p + off + 40, 4);
	im.p[off + 64 + nframes * 12] = 0x1f;
	uint32_t crc = ada_atf_crc32(0, im.p + off + 8, len - 8);
	memcpy(im.p + off + 4, &crc, 4);
	assert_int_equal(ada_atf_index_open_mem(im.p, im.len, 0, &ix), 0);
	assert_int_equal(walk_once(ix, 0, g.n, &w), -EBADMSG);
	assert_int_equal(w.next, first3);
	assert_events_equal(w.ev, g.ev, first3);
	assert_int_equal(ada_atf_index_undecoded(ix), 1);
	const struct atf_index_event *z = ada_atf_index_get(ix, first3 + 1);
	assert_true(z->timestamp_ns == 0 && z->event_kind == 0);
	assert_events_equal(ada_atf_index_get(ix, first3 + k3), &g.ev[first3 + k3], 1);
	assert_int_equal(ada_atf_index_undecoded(ix), 1);
	ada_atf_index_free(ix);
	/* Its ATF v2 form: refused strict; with SALVAGE the blocks before it,
	 * the pieces of it written cut off, a strict v2 file. */
	FILE *tf = tmpfile();
	assert_non_null(tf);
	assert_int_equal(ada_cidx_to_atf_fd(im.p, im.len, 0, fileno(tf)), -EBADMSG);
	assert_int_equal(ftruncate(fileno(tf), 0), 0);
	assert_int_equal(ada_cidx_to_atf_fd(im.p, im.len, ADA_ATF_OPEN_SALVAGE, fileno(tf)), 0);
	size_t v2len = (size_t)lseek(fileno(tf), 0, SEEK_END);
	assert_int_equal(v2len, 128 + first3 * 32);
	uint8_t *v2 = malloc(v2len);
	assert_int_equal(pread(fileno(tf), v2, v2len, 0), (ssize_t)v2len);
	assert_int_equal(ada_atf_index_open_mem(v2, v2len, 0, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), first3);
	assert_events_equal(ada_atf_index_span(ix, 0, first3), g.ev, first3);
	ada_atf_index_free(ix);
	free(v2);
	fclose(tf);
	free(w.ev);
	free(im.p);
	free(g.ev);
}

/* Export to strict ATF v2: the v2 reader (strict) and the validator take
 * it; the validator takes the compact file itself too. */
static void export_and_validate(void **state)
{
	struct cs_gen g;
	struct ada_atf_index *ix;
	struct ada_atf_report r = {0};
	struct ada_atf_vfile v;
	uint8_t *v2;
	size_t v2len;

	(void)state;
	cs_init(&g, 50000, 10);
	cs_fib_stream(&g);
	struct img im = encode(g.ev, g.n, 0, NULL, NULL, 0);
	assert_int_equal(ada_cidx_to_atf(im.p, im.len, 0, &v2, &v2len), 0);
	assert_int_equal(v2len, 128 + 32 * g.n);
	assert_memory_equal(v2, ATF_INDEX_MAGIC, 4);
	assert_int_equal(ada_atf_index_open_mem(v2, v2len, 0, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), g.n);
	assert_events_equal(ada_atf_index_get(ix, 0), g.ev, g.n);
	ada_atf_index_free(ix);
	ada_atf_validate_index_buf("v2", v2, v2len, &r, &v);
	assert_int_equal(r.errors, 0);
	ada_cidx_validate_buf("c", im.p, im.len, &r, &v);
	assert_int_equal(r.errors, 0);
	assert_true(v.usable);
	assert_int_equal(v.count, g.n);
	im.p[64 + 64 + 10] ^= 1; /* an event of block 0 */
	ada_atf_validate_index_buf("c", im.p, im.len, &r, &v);
	assert_true(r.errors > 0);
	assert_false(v.usable);
	free(v2);
	free(im.p);
	free(g.ev);
}

static void empty_file(void **state)
{
	struct ada_cidx_dec *d;
	struct atf_index_event ev = {0};

	(void)state;
	struct img im = encode(&ev, 0, 0, NULL, NULL, 0);
	assert_int_equal(ada_cidx_dec_open(im.p, im.len, 0, &d), 0);
	assert_int_equal(ada_cidx_dec_count(d), 0);
	assert_int_equal(ada_cidx_dec_find(d, 5, &ev), 0);
	ada_cidx_dec_free(d);
	free(im.p);
}

/* The fuzzer's seeds (tests/fuzz/corpus/cidx/): selector byte 0 and a
 * compact image, or 1 and raw ATF v2 events. */
static void seed_write(const char *dir, const char *name, uint8_t sel, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(&sel, 1, 1, f) != 1 || fwrite(p, 1, n, f) != n || fclose(f))
		fprintf(stderr, "cannot write %s\n", path);
}

static void seeds(const char *dir)
{
	struct cs_gen g;
	uint64_t ls[2] = {3, 40};
	uint32_t ld[2] = {0, 1};

	cs_init(&g, 3000, 11);
	cs_fib_stream(&g);
	struct img im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, ls, ld, 2);
	seed_write(dir, "image_fib", 0, im.p, im.len);
	struct ada_cidx_file_header h;
	struct ada_cidx_footer f;
	memcpy(&h, im.p, sizeof(h));
	memcpy(&f, im.p + h.footer_offset, sizeof(f));
	seed_write(dir, "image_fib_unfinished", 0, im.p, f.link_offset);
	seed_write(dir, "events_fib", 1, g.ev, 200 * sizeof(*g.ev));
	free(im.p);
	free(g.ev);
	cs_init(&g, 3000, 12);
	cs_mixed_stream(&g);
	g.ev[10].detail_seq = 5;
	im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	seed_write(dir, "image_mixed", 0, im.p, im.len);
	free(im.p);
	free(g.ev);
	cs_init(&g, 300, 13);
	for (int i = 0; i < 40; i++)
		cs_call(&g, 1ull << (i % 60), atf_function_id(2, (uint32_t)i));
	cs_emit(&g, 5, 0xdeadbeefull, ATF_EVENT_EXCEPTION, ADA_SIGNAL_MARKER_FLAG | 11);
	while (g.n < g.cap) {
		uint64_t r = cs_rand(&g);
		g.tid = r & 0x100 ? (uint32_t)r : 4242;
		cs_emit(&g, r & 0x200 ? r >> 3 : r % 50, r & 0x400 ? r >> 5 : (r >> 20) % 9,
		        (uint32_t)(r >> 11) % 5, (uint32_t)(r >> 13) % 6);
	}
	im = encode(g.ev, g.n, ADA_CIDX_BLOCK_MIN, NULL, NULL, 0);
	seed_write(dir, "image_odd", 0, im.p, im.len);
	seed_write(dir, "events_odd", 1, g.ev, g.n * sizeof(*g.ev));
	free(im.p);
	free(g.ev);
	im = encode(NULL, 0, 0, NULL, NULL, 0);
	seed_write(dir, "image_empty", 0, im.p, im.len);
	free(im.p);
}

int main(void)
{
	if (getenv("ADA_CIDX_SEEDS")) {
		seeds(getenv("ADA_CIDX_SEEDS"));
		return 0;
	}

	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(roundtrip_fib),
	    cmocka_unit_test(roundtrip_mixed),
	    cmocka_unit_test(roundtrip_deep),
	    cmocka_unit_test(roundtrip_exceptions_and_signals),
	    cmocka_unit_test(roundtrip_odd_values),
	    cmocka_unit_test(roundtrip_links),
	    cmocka_unit_test(enc_small_buffers),
	    cmocka_unit_test(tail_size_bound),
	    cmocka_unit_test(salvage),
	    cmocka_unit_test(open_fd_reads_headers),
	    cmocka_unit_test(export_fd_large),
	    cmocka_unit_test(export_fd_tmpfs),
	    cmocka_unit_test(export_fd_fallback),
	    cmocka_unit_test(recover_after_kill),
	    cmocka_unit_test(atf_reader_reads_compact),
	    cmocka_unit_test(atf_reader_walks_compact),
	    cmocka_unit_test(export_and_validate),
	    cmocka_unit_test(empty_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
