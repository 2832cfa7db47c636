/*
 * libFuzzer target for the compact index (src/atf/cidx.h). The first input
 * byte picks what the rest is:
 *   0  a compact file image, untrusted: opened strict and salvage, every
 *      block decoded, get(seq) and find(ts) at a few places, the links,
 *      the encoder's resume after the whole blocks (ada recover), the
 *      export to ATF v2, the ATF reader on the same bytes (get() of
 *      every event, the sequential walk) and the open that reads block
 *      headers with pread, against the one through memory (truncated
 *      blocks, lying lengths, varints that never end, a block table
 *      pointing anywhere);
 *   2  the same as 0 after the harness rewrote every CRC the bytes let it
 *      find (each block's along the walk, the footer's), so that mutated
 *      event bytes reach the decoder's body instead of stopping at a CRC;
 *   1  ATF v2 index events (32 bytes each): encoded into small blocks,
 *      decoded, and compared byte for byte - the encoder must be exact for
 *      any values, not only the ones the hooks write.
 * Seeds: tests/fuzz/corpus/cidx/, written by tests/unit/test_atf_cidx with
 * ADA_CIDX_SEEDS=DIR, and real_*: files of real recordings (fib, 4 KiB
 * blocks, with and without links) and their damaged forms - a write torn
 * inside a block, lying lengths and counts, varints that never end, a
 * block table pointing anywhere - written by cidx_real_seeds.py. Built
 * only with clang (see cidx.cmake).
 */
#define _GNU_SOURCE /* memfd_create */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atf.h"
#include "cidx.h"

static void fuzz_decoder_queries(const struct ada_cidx_dec *d)
{
	size_t nb = ada_cidx_dec_nblocks(d);
	uint64_t n = ada_cidx_dec_count(d);
	struct atf_index_event *scratch = malloc(ada_cidx_dec_scratch_events(d) * sizeof(*scratch));
	struct atf_index_event ev;

	if (!scratch)
		return;
	for (size_t b = 0; b < nb; b++)
		(void)ada_cidx_dec_block(d, b, scratch);
	for (uint64_t s = 0; n && s < 4; s++)
		(void)ada_cidx_dec_get(d, (n - 1) * s / 3, scratch, &ev);
	(void)ada_cidx_dec_find(d, 0, scratch);
	(void)ada_cidx_dec_find(d, 1000000000ull, scratch);
	(void)ada_cidx_dec_find(d, UINT64_MAX, scratch);
	(void)ada_cidx_dec_link(d, n / 2);
	free(scratch);
	struct ada_cidx_iter it;
	const struct atf_index_event *span;
	long k = 0;
	if (ada_cidx_iter_init(&it, d, n / 3) == 0)
		while ((k = ada_cidx_iter_next(&it, &span)) > 0)
			(void)span[k - 1].timestamp_ns;
	ada_cidx_iter_fini(&it);
}

static int fuzz_walk_run(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	uint64_t *next = ctx;
	if (seq != *next || n == 0)
		abort(); /* runs follow on */
	*next = seq + n;
	(void)ev[n - 1].timestamp_ns;
	return 0;
}

/* The reader's sequential walk, whole and from the middle. */
static void fuzz_walk(const struct ada_atf_index *ix)
{
	uint64_t c = ada_atf_index_count(ix), next = 0;
	int r = ada_atf_index_walk(ix, 0, UINT64_MAX, fuzz_walk_run, &next);
	if ((r == 0 && next != c) || next > c)
		abort();
	next = c / 2;
	(void)ada_atf_index_walk(ix, c / 2, c, fuzz_walk_run, &next);
}

/* The open that reads block headers with pread (ada_cidx_dec_open_fd(),
 * the readers'), the image in a memory file: it must find what the open
 * through memory finds. */
static void fuzz_open_fd(const uint8_t *p, size_t n, unsigned flags)
{
	static int fd = -1;
	struct ada_cidx_dec *a = NULL, *b = NULL;
	if (fd < 0)
		fd = memfd_create("fuzz_cidx_in", 0);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, p, n, 0) != (ssize_t)n)
		return;
	int ea = ada_cidx_dec_open(p, n, flags, &a);
	int eb = ada_cidx_dec_open_fd(p, n, fd, flags, &b);
	if (ea != eb || (!ea && (ada_cidx_dec_count(a) != ada_cidx_dec_count(b) ||
	                         ada_cidx_dec_nblocks(a) != ada_cidx_dec_nblocks(b))))
		abort();
	ada_cidx_dec_free(a);
	ada_cidx_dec_free(b);
}

/* The export to ATF v2, into one memory file reused for every input. */
static void fuzz_export(const uint8_t *p, size_t n, unsigned flags)
{
	static int fd = -1;
	if (fd < 0)
		fd = memfd_create("fuzz_cidx", 0);
	if (fd < 0 || ftruncate(fd, 0) < 0)
		return;
	(void)ada_cidx_to_atf_fd(p, n, flags, fd);
}

static void fuzz_image(const uint8_t *p, size_t n)
{
	struct ada_cidx_dec *d;
	struct ada_atf_index *ix;
	struct ada_cidx_enc *e;
	uint64_t end;

	/* ada recover's resume after the whole blocks. */
	if (!ada_cidx_enc_new(0, &e)) {
		if (!ada_cidx_enc_resume(e, p, n, &end) && end > n)
			abort();
		ada_cidx_enc_free(e);
	}

	for (unsigned fl = 0; fl < 2; fl++) {
		if (!ada_cidx_dec_open(p, n, fl, &d)) {
			fuzz_decoder_queries(d);
			ada_cidx_dec_free(d);
		}
		fuzz_export(p, n, fl);
		fuzz_open_fd(p, n, fl);
		if (!ada_atf_index_open_mem(p, n, fl, &ix)) {
			uint64_t c = ada_atf_index_count(ix);
			fuzz_walk(ix);
			for (uint64_t i = 0; i < c; i++)
				(void)ada_atf_index_get(ix, i)->timestamp_ns;
			(void)ada_atf_index_lower_bound(ix, 12345);
			ada_atf_index_free(ix);
		}
	}
}

/* Rewrites the CRC of every block the walk reaches and of the tail. */
static void fix_crcs(uint8_t *p, size_t n)
{
	struct ada_cidx_file_header h;
	struct ada_cidx_block_header bh;
	struct ada_cidx_footer f;
	uint64_t pos;

	if (n < sizeof(h))
		return;
	memcpy(&h, p, sizeof(h));
	for (pos = h.blocks_offset; pos >= sizeof(h) && pos <= n && n - pos >= sizeof(bh);
	     pos += bh.total_len) {
		memcpy(&bh, p + pos, sizeof(bh));
		if (bh.total_len < sizeof(bh) || bh.total_len > n - pos)
			break;
		bh.crc = ada_atf_crc32(0, p + pos + 8, bh.total_len - 8);
		memcpy(p + pos + 4, &bh.crc, 4);
	}
	if (h.footer_offset < n && n - h.footer_offset >= sizeof(f)) {
		memcpy(&f, p + h.footer_offset, sizeof(f));
		if (f.link_offset <= h.footer_offset) {
			f.crc =
			    ada_atf_crc32(0, p + f.link_offset, h.footer_offset - f.link_offset);
			memcpy(p + h.footer_offset + 4, &f.crc, 4);
		}
	}
}

/* Events in, the same events out; a difference is a crash. */
static void fuzz_roundtrip(const uint8_t *p, size_t n)
{
	size_t k = n / sizeof(struct atf_index_event);
	struct atf_index_event *ev = malloc((k ? k : 1) * sizeof(*ev)), *out;
	struct ada_atf_file_info info;
	struct ada_cidx_enc *e;
	struct ada_cidx_dec *d;
	uint8_t *img;
	size_t len;

	if (!ev)
		return;
	memcpy(ev, p, k * sizeof(*ev));
	ada_atf_file_info_native(&info, 1);
	if (ada_cidx_enc_new(ADA_CIDX_BLOCK_MIN, &e) ||
	    ada_cidx_write_mem(e, &info, ev, k, NULL, NULL, 0, &img, &len))
		abort();
	ada_cidx_enc_free(e);
	out = malloc((k ? k : 1) * sizeof(*out));
	if (!out || ada_cidx_dec_open(img, len, 0, &d) || ada_cidx_dec_count(d) != k ||
	    ada_cidx_dec_all(d, out) || memcmp(out, ev, k * sizeof(*ev)))
		abort();
	ada_cidx_dec_free(d);
	free(out);
	free(img);
	free(ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] == 0)
		fuzz_image(data + 1, size - 1);
	else if (data[0] == 1)
		fuzz_roundtrip(data + 1, size - 1);
	else if (data[0] == 2) {
		uint8_t *copy = malloc(size);
		if (!copy)
			return 0;
		memcpy(copy, data + 1, size - 1);
		fix_crcs(copy, size - 1);
		fuzz_image(copy, size - 1);
		free(copy);
	}
	return 0;
}
