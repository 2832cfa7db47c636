/*
 * ATF readers: index and detail files mapped read-only, under the SIGBUS
 * guard (atf_guard.c: a file that shrinks under a reader reads as zeros
 * past its new end, and ada_atf_*_shrank() says so).
 *
 * Threads: any; a reader is immutable after open, so several threads may
 * read one concurrently. Nothing here writes.
 *
 * Invariants after a successful open:
 *   index:  events_offset + count * 32 <= map length, so get(seq) for
 *           seq < count never leaves the mapping;
 *   detail: off[i] + total_length(i) <= map length for every i < count and
 *           total_length(i) >= 24, so get(seq) hands out whole events.
 * Whatever a header claims, these bounds come from the file length.
 */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_internal.h"
#include "cidx.h"
#include "fs.h"

/* atf_map_file(); with keep, the file stays open and *keep is its
 * descriptor (-1 when none is left open: an error, an empty file). */
static int atf_map_file_keep(const char *path, struct atf_map *m, int *keep)
{
	struct stat st;
	int fd, err = 0;

	memset(m, 0, sizeof(*m));
	if (keep)
		*keep = -1;
	/* Never through a link (nor one in the middle of a session's path:
	 * ada_fs_root_add); never blocked by a FIFO planted in a session. */
	err = ada_fs_open_path(path, O_RDONLY | O_NONBLOCK, 0, &fd);
	if (err)
		return err;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto close_fd;
	}
	m->len = (size_t)st.st_size;
	m->owned = true;
	if (m->len == 0)
		goto close_fd; /* nothing to map; base stays NULL */
	int slot;
	err = atf_guard_map(fd, m->len, &m->base, &slot);
	if (err) {
		m->len = 0;
		goto close_fd;
	}
	m->guard = slot + 1;
	if (keep) {
		*keep = fd;
		return 0;
	}
close_fd:
	close(fd);
	return err;
}

int atf_map_file(const char *path, struct atf_map *m)
{
	return atf_map_file_keep(path, m, NULL);
}

int atf_map_file_whole(const char *path, struct atf_map *m)
{
	int fd = -1, err = atf_map_file_keep(path, m, &fd);
	if (fd >= 0) {
		atf_guard_test_shrink(fd, m->len);
		close(fd);
	}
	return err;
}

void atf_map_release(struct atf_map *m)
{
	if (m->owned && m->base)
		atf_guard_unmap(m->base, m->len, m->guard - 1);
	memset(m, 0, sizeof(*m));
}

bool atf_map_shrank(const struct atf_map *m)
{
	return m->guard && atf_guard_shrank(m->guard - 1);
}

char *atf_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* ---------------------------------------------------------------- index */

struct ada_atf_index {
	struct atf_map map;
	struct atf_index_header hdr;
	const uint8_t *events;
	uint64_t count;
	/* A compact file (cidx.h): its events decoded block by block as they
	 * are asked for (index_ensure) into decoded, an address range for all
	 * of them whose pages are touched only then; ready[b]: block b is
	 * there. The chunked readers' ada_atf_index_done() gives the pages
	 * back and clears their blocks, so memory stays a chunk, as the
	 * mapping of an ATF v2 file does. */
	struct atf_index_event *decoded;
	size_t decoded_len;
	struct ada_cidx_dec *dec;
	uint8_t *ready;     /* per block: BLK_READY, BLK_BAD or 0 */
	size_t nready;      /* blocks kept (those before a bad one with SALVAGE) */
	size_t last_blk;    /* the block the last lookup found */
	uint64_t undecoded; /* blocks found not to decode since open */
	int open_fd;        /* the mapped file while opening (-1: none) */
};

/* ready[] of a compact file's block: decoded in place, or found not to
 * decode (its events read as zeros; counted once in undecoded). */
enum { BLK_READY = 1, BLK_BAD = 2 };

static void index_decoded_free(struct ada_atf_index *ix)
{
	if (ix->decoded)
		munmap(ix->decoded, ix->decoded_len);
	ada_cidx_dec_free(ix->dec);
	free(ix->ready);
	ix->decoded = NULL;
	ix->dec = NULL;
	ix->ready = NULL;
}

/* The block holding seq (< count): the last one found, else a search. */
static size_t index_block_of(struct ada_atf_index *ix, uint64_t seq)
{
	uint64_t first, t0;
	uint32_t k;
	ada_cidx_dec_block_info(ix->dec, ix->last_blk, &first, &k, &t0);
	if (seq - first < k) /* wraps when seq < first */
		return ix->last_blk;
	ix->last_blk = ada_cidx_dec_block_of(ix->dec, seq);
	return ix->last_blk;
}

/* Block b, found not to decode: its events read as zeros (never past
 * their room), and it is counted once for ada_atf_index_undecoded().
 * Cold, and kept out of line: inlined into the walk, GCC's dangling-pointer
 * check follows the out-parameters below into the walk's callback. */
__attribute__((cold, noinline)) static void index_block_bad(struct ada_atf_index *ix, size_t b)
{
	uint64_t first, t0;
	uint32_t k;

	if (b >= ix->nready || ix->ready[b] == BLK_BAD)
		return;
	ada_cidx_dec_block_info(ix->dec, b, &first, &k, &t0);
	if (ix->ready[b] == BLK_READY)
		memset(ix->decoded + first, 0, (size_t)k * sizeof(*ix->decoded));
	ix->ready[b] = BLK_BAD;
	ix->undecoded++;
}

/* Blocks of events [seq, seq + n) decoded in place (n >= 1, inside count).
 * Open checked every block's CRC, not its coded events: one that does not
 * decode (or whose bytes changed under the mapping) reads as zeros. */
static void index_ensure(const struct ada_atf_index *cix, uint64_t seq, uint64_t n)
{
	struct ada_atf_index *ix = (struct ada_atf_index *)cix; /* allocated non-const */
	size_t b = index_block_of(ix, seq), last = index_block_of(ix, seq + n - 1);
	for (; b <= last && b < ix->nready; b++) {
		if (ix->ready[b])
			continue;
		uint64_t first, t0;
		uint32_t k;
		ada_cidx_dec_block_info(ix->dec, b, &first, &k, &t0);
		if (ada_cidx_dec_block(ix->dec, b, ix->decoded + first)) {
			ix->ready[b] = BLK_READY; /* so that the zeros cover what it wrote */
			index_block_bad(ix, b);
			continue;
		}
		ix->ready[b] = BLK_READY;
	}
}

/* The count the footer vouches for, or -1 when header/footer/length disagree. */
static int64_t index_strict_count(const struct atf_map *m, const struct atf_index_header *h)
{
	struct atf_index_footer f;
	uint64_t span;

	if (h->footer_offset < h->events_offset || !ATF_READ(&f, m->base, m->len, h->footer_offset))
		return -1;
	span = h->footer_offset - h->events_offset;
	if (memcmp(f.magic, ATF_INDEX_FOOTER_MAGIC, 4) || span % ATF_INDEX_EVENT_SIZE ||
	    f.event_count != span / ATF_INDEX_EVENT_SIZE ||
	    h->event_count != (uint32_t)f.event_count)
		return -1;
	return (int64_t)f.event_count;
}

static bool index_event_is_zero(const uint8_t *p)
{
	static const uint8_t zero[ATF_INDEX_EVENT_SIZE];
	return !memcmp(p, zero, sizeof(zero));
}

/* Every whole event between events_offset and the end (or a footer found in
 * the last 64 bytes); a preallocated all-zero tail is not events. */
static uint64_t index_salvage_count(const struct atf_map *m, const struct atf_index_header *h)
{
	uint64_t end = m->len;

	if (end >= h->events_offset + ATF_FOOTER_SIZE &&
	    !memcmp(m->base + end - ATF_FOOTER_SIZE, ATF_INDEX_FOOTER_MAGIC, 4))
		end -= ATF_FOOTER_SIZE;
	uint64_t n = (end - h->events_offset) / ATF_INDEX_EVENT_SIZE;
	while (n &&
	       index_event_is_zero(m->base + h->events_offset + (n - 1) * ATF_INDEX_EVENT_SIZE))
		n--;
	return n;
}

/* The ATF v2 header a compact file stands for: its identity, the events
 * decoded, the time range of those events. */
static void index_compact_header(struct ada_atf_index *ix, const struct ada_cidx_file_header *c,
                                 uint64_t t0, uint64_t t1)
{
	struct ada_atf_file_info info = {
	    .thread_id = c->thread_id,
	    .arch = c->arch,
	    .os = c->os,
	    .clock_type = c->clock_type,
	    .has_detail = c->flags & ATF_INDEX_FLAG_HAS_DETAIL,
	};
	uint64_t n = ix->count;

	ada_atf_index_header_fill(&ix->hdr, &info, n, n ? t0 : 0, n ? t1 : 0);
	ix->hdr.version = ATF_VERSION;
}

#define INDEX_DROP_BYTES (8u << 20) /* a compact file's bytes given back at a time */

/* index_compact_drop() once min bytes are read. */
static void index_compact_drop_min(const struct ada_atf_index *ix, uint64_t *from, uint64_t to,
                                   uint64_t min)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!ix->map.owned || to < *from || to - *from < min)
		return;
	uintptr_t lo = ((uintptr_t)ix->map.base + *from + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)ix->map.base + to) & ~(page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: an error changes nothing */
	*from = to;
}

/* The walk has read a compact file's bytes [*from, to): every 8 MiB they
 * leave the resident set (the page cache keeps them), so that a walk's
 * RSS stays a few MiB of the file however long it is, as an ATF v2 walk's
 * does. A caller's buffer (_open_mem()) is not ours to drop. */
static void index_compact_drop(const struct ada_atf_index *ix, uint64_t *from, uint64_t to)
{
	index_compact_drop_min(ix, from, to, INDEX_DROP_BYTES);
}

/* Every block decoded once into scratch: the count (the blocks before the
 * first one that does not decode) and the time range. The SALVAGE open of
 * a file whose first or last block does not decode. */
static int index_compact_scan(struct ada_atf_index *ix, uint64_t *t0, uint64_t *t1)
{
	struct ada_cidx_dec *d = ix->dec;
	struct atf_index_event *scratch =
	    malloc((ada_cidx_dec_scratch_events(d) + 1) * sizeof(*scratch));
	uint64_t dropped = 0, off;
	uint32_t len;
	int err = 0;

	if (!scratch)
		return -ENOMEM;
	ix->count = 0;
	for (size_t b = 0; b < ada_cidx_dec_nblocks(d); b++) {
		uint64_t first, ts;
		uint32_t k;
		ada_cidx_dec_block_info(d, b, &first, &k, &ts);
		err = ada_cidx_dec_block(d, b, scratch);
		if (err)
			break;
		if (k && !ix->count)
			*t0 = scratch[0].timestamp_ns;
		if (k)
			*t1 = scratch[k - 1].timestamp_ns;
		ix->count = first + k;
		ix->nready = b + 1;
		ada_cidx_dec_block_span(d, b, &off, &len);
		index_compact_drop(ix, &dropped, off + len);
	}
	free(scratch);
	return err;
}

/* The timestamp of event seq, decoded through an iterator (a piece of
 * its block). -EBADMSG, -ENOMEM. */
static int index_compact_ts(const struct ada_cidx_dec *d, uint64_t seq, uint64_t *ts)
{
	struct ada_cidx_iter it;
	const struct atf_index_event *ev;
	int err = ada_cidx_iter_init(&it, d, seq);
	long k = err ? err : ada_cidx_iter_next(&it, &ev);

	if (k > 0)
		*ts = ev->timestamp_ns;
	ada_cidx_iter_fini(&it); /* ev was its buffer */
	return k > 0 ? 0 : k < 0 ? (int)k : -EBADMSG;
}

/* The count and time range of a compact file: every block's CRC checked
 * (the salvage walk of ada_cidx_dec_open() did it already; one pass over
 * the bytes, cheap beside decoding them), its first and last blocks
 * decoded; the blocks between decode when first read (the sequential
 * walk and get() count one that does not: ada_atf_index_undecoded()). */
static int index_compact_ends(struct ada_atf_index *ix, unsigned flags, uint64_t *t0, uint64_t *t1)
{
	uint64_t dropped = 0, off;
	uint32_t len;

	/* The open read a file's block headers with pread
	 * (ada_cidx_dec_open_fd()): of the mapping, only the header's and
	 * the tail's pages are in; the CRC pass below holds 8 MiB at a time. */
	ix->count = ada_cidx_dec_count(ix->dec);
	ix->nready = ada_cidx_dec_nblocks(ix->dec);
	for (size_t b = 0; !(flags & ADA_ATF_OPEN_SALVAGE) && b < ix->nready; b++) {
		if (!ada_cidx_dec_block_whole(ix->dec, b))
			return -EBADMSG;
		ada_cidx_dec_block_span(ix->dec, b, &off, &len);
		index_compact_drop(ix, &dropped, off + len);
	}
	if (!ix->count)
		return 0;
	int err = index_compact_ts(ix->dec, 0, t0);
	return err ? err : index_compact_ts(ix->dec, ix->count - 1, t1);
}

/* A compact index (cidx.h), read as ATF v2 events: by pointer, as from a
 * v2 file, each block decoded when first asked for; or walked in order
 * (ada_atf_index_walk()), each block decoded once into a small buffer.
 * The address range is bounded by the file (a coded event takes a byte
 * at least) and only what get() and span() touch is backed. */
static int index_init_compact(struct ada_atf_index *ix, unsigned flags)
{
	struct ada_cidx_file_header c;
	uint64_t t0 = 0, t1 = 0;
	int err = ada_cidx_dec_open_fd(ix->map.base, ix->map.len, ix->open_fd, flags, &ix->dec);

	if (err)
		return err;
	c = *ada_cidx_dec_header(ix->dec);
	err = index_compact_ends(ix, flags, &t0, &t1);
	if (err == -EBADMSG && (flags & ADA_ATF_OPEN_SALVAGE))
		err = index_compact_scan(ix, &t0, &t1);
	if (err == -ENOMEM || (err && !(flags & ADA_ATF_OPEN_SALVAGE)))
		return err;
	ix->decoded_len = (size_t)(ix->count ? ix->count : 1) * sizeof(*ix->decoded);
	void *p = mmap(NULL, ix->decoded_len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ix->ready = calloc(ix->nready + 1, 1);
	if (p == MAP_FAILED || !ix->ready) {
		if (p != MAP_FAILED)
			munmap(p, ix->decoded_len);
		return -ENOMEM;
	}
	ix->decoded = p;
	ix->events = (const uint8_t *)ix->decoded;
	index_compact_header(ix, &c, t0, t1);
	return 0;
}

static int index_init(struct ada_atf_index *ix, unsigned flags)
{
	struct atf_index_header *h = &ix->hdr;

	if (ada_cidx_is_compact(ix->map.base, ix->map.len))
		return index_init_compact(ix, flags);
	if (!ATF_READ(h, ix->map.base, ix->map.len, 0) || memcmp(h->magic, ATF_INDEX_MAGIC, 4) ||
	    h->event_size != ATF_INDEX_EVENT_SIZE || h->events_offset < ATF_HEADER_SIZE ||
	    h->events_offset > ix->map.len)
		return -EBADMSG;
	int64_t n = index_strict_count(&ix->map, h);
	if (n < 0 && !(flags & ADA_ATF_OPEN_SALVAGE))
		return -EBADMSG;
	ix->count = n >= 0 ? (uint64_t)n : index_salvage_count(&ix->map, h);
	ix->events = ix->map.base + h->events_offset;
	return 0;
}

/* fd: the file m maps, for the compact open's reads of its block headers
 * (ada_cidx_dec_open_fd()); -1 for an image in memory. */
static int index_new(struct atf_map *m, int fd, unsigned flags, struct ada_atf_index **out)
{
	struct ada_atf_index *ix = calloc(1, sizeof(*ix));
	int err;

	if (!ix)
		return -ENOMEM;
	ix->map = *m;
	ix->open_fd = fd;
	err = index_init(ix, flags);
	ix->open_fd = -1;
	if (err) {
		index_decoded_free(ix);
		free(ix);
		return err;
	}
	*out = ix;
	return 0;
}

int ada_atf_index_open(const char *path, unsigned flags, struct ada_atf_index **out)
{
	struct atf_map m;
	int fd;
	int err = atf_map_file_keep(path, &m, &fd);

	if (err)
		return err;
	err = index_new(&m, fd, flags, out);
	if (!err && fd >= 0 && !(flags & ADA_ATF_OPEN_SALVAGE)) /* not a count's pre-pass */
		atf_guard_test_shrink(fd, m.len);
	if (fd >= 0)
		close(fd);
	if (err)
		atf_map_release(&m);
	return err;
}

int ada_atf_index_open_mem(const void *buf, size_t len, unsigned flags, struct ada_atf_index **out)
{
	struct atf_map m = {.base = buf, .len = len, .owned = false};
	return index_new(&m, -1, flags, out);
}

void ada_atf_index_free(struct ada_atf_index *ix)
{
	if (!ix)
		return;
	atf_map_release(&ix->map);
	index_decoded_free(ix);
	free(ix);
}

bool ada_atf_index_shrank(const struct ada_atf_index *ix)
{
	return atf_map_shrank(&ix->map);
}

const struct atf_index_header *ada_atf_index_header(const struct ada_atf_index *ix)
{
	return &ix->hdr;
}

uint64_t ada_atf_index_count(const struct ada_atf_index *ix)
{
	return ix->count;
}

const struct atf_index_event *ada_atf_index_get(const struct ada_atf_index *ix, uint64_t seq)
{
	if (seq >= ix->count)
		return NULL;
	if (ix->decoded)
		index_ensure(ix, seq, 1);
	return (const struct atf_index_event *)(ix->events + seq * ATF_INDEX_EVENT_SIZE);
}

const struct atf_index_event *ada_atf_index_span(const struct ada_atf_index *ix, uint64_t seq,
                                                 uint64_t n)
{
	if (seq >= ix->count || n == 0 || n > ix->count - seq)
		return NULL;
	if (ix->decoded)
		index_ensure(ix, seq, n);
	return (const struct atf_index_event *)(ix->events + seq * ATF_INDEX_EVENT_SIZE);
}

/* Decoded events [lo, hi) (byte offsets, whole pages) given back: the
 * blocks they touch are decoded again when next asked for. */
static void index_decoded_drop(const struct ada_atf_index *cix, uintptr_t lo, uintptr_t hi)
{
	struct ada_atf_index *ix = (struct ada_atf_index *)cix; /* allocated non-const */
	uintptr_t base = (uintptr_t)ix->decoded;
	uint64_t first = (lo - base) / ATF_INDEX_EVENT_SIZE;
	uint64_t end = (hi - base + ATF_INDEX_EVENT_SIZE - 1) / ATF_INDEX_EVENT_SIZE;
	end = end < ix->count ? end : ix->count;
	if (first >= end)
		return;
	size_t b = index_block_of(ix, first), last = index_block_of(ix, end - 1);
	madvise((void *)lo, hi - lo, MADV_DONTNEED); /* zero-fill pages from here on */
	for (; b <= last && b < ix->nready; b++)
		ix->ready[b] = ix->ready[b] == BLK_BAD ? BLK_BAD : 0;
}

void ada_atf_index_done(const struct ada_atf_index *ix, uint64_t begin, uint64_t end)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;

	if ((!ix->map.owned && !ix->decoded) || begin >= end || end > ix->count)
		return; /* a caller's buffer is not ours to drop */
	/* Whole pages strictly inside the range: a page shared with events
	 * still to be read stays. */
	lo = ((uintptr_t)(ix->events + begin * ATF_INDEX_EVENT_SIZE) + page - 1) & ~(page - 1);
	hi = (uintptr_t)(ix->events + end * ATF_INDEX_EVENT_SIZE) & ~(page - 1);
	if (hi > lo && ix->decoded)
		index_decoded_drop(ix, lo, hi);
	else if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: an error changes nothing */
}

#define INDEX_WALK_CHUNK (1u << 20) /* ATF v2 events a run: 32 MiB of the mapping */

/* The walk of an ATF v2 file: runs of its mapping, each given back. */
static int index_walk_v2(const struct ada_atf_index *ix, uint64_t begin, uint64_t end,
                         ada_atf_index_walk_fn fn, void *ctx)
{
	for (uint64_t k = begin; k < end; k += INDEX_WALK_CHUNK) {
		uint64_t n = end - k < INDEX_WALK_CHUNK ? end - k : INDEX_WALK_CHUNK;
		int r =
		    fn(ctx, (const struct atf_index_event *)(ix->events + k * ATF_INDEX_EVENT_SIZE),
		       k, n);
		ada_atf_index_done(ix, k, k + n); /* RSS stays a run, not the file */
		if (r)
			return r;
	}
	return 0;
}

/* The walk of a compact file's events [begin, end): on a block that does
 * not decode, -EBADMSG with *bad the first seq of the piece that did not. */
static int index_walk_compact(const struct ada_atf_index *ix, uint64_t begin, uint64_t end,
                              ada_atf_index_walk_fn fn, void *ctx, uint64_t *bad, bool piece)
{
	const struct atf_index_event *ev;
	struct ada_cidx_iter it;
	long k = 0;
	uint64_t dropped, off;
	uint32_t len;

	ada_cidx_dec_block_span(ix->dec, ada_cidx_dec_block_of(ix->dec, begin), &dropped, &len);
	int r = ada_cidx_iter_init(&it, ix->dec, begin);
	for (uint64_t seq = begin; !r && seq < end && (k = ada_cidx_iter_next(&it, &ev)) > 0;) {
		uint64_t n = (uint64_t)k < end - seq ? (uint64_t)k : end - seq;
		r = fn(ctx, ev, seq, n);
		seq += n;
		if (!it.left) { /* a block read whole: its bytes are done with */
			ada_cidx_dec_block_span(ix->dec, it.block - 1, &off, &len);
			index_compact_drop(ix, &dropped, off + len);
		}
	}
	/* A piece is short: what it read leaves now, not 8 MiB later. */
	if (piece && it.block) {
		ada_cidx_dec_block_span(ix->dec, it.block - 1, &off, &len);
		index_compact_drop_min(ix, &dropped, off + len, 0);
	}
	/* it.seq: the first event of the piece that did not decode. */
	*bad = !r && k < 0 ? it.seq : UINT64_MAX;
	ada_cidx_iter_fini(&it);
	return !r && k < 0 ? (int)k : r;
}

static int index_walk(const struct ada_atf_index *ix, uint64_t begin, uint64_t end,
                      ada_atf_index_walk_fn fn, void *ctx, uint64_t *bad, bool piece)
{
	*bad = UINT64_MAX;
	end = end < ix->count ? end : ix->count;
	if (begin >= end)
		return 0;
	if (!ix->dec)
		return index_walk_v2(ix, begin, end, fn, ctx);
	return index_walk_compact(ix, begin, end, fn, ctx, bad, piece);
}

int ada_atf_index_walk(const struct ada_atf_index *cix, uint64_t begin, uint64_t end,
                       ada_atf_index_walk_fn fn, void *ctx)
{
	uint64_t bad;
	int r = index_walk(cix, begin, end, fn, ctx, &bad, false);

	if (bad != UINT64_MAX)
		ada_atf_index_note_bad(cix, bad);
	return r;
}

int ada_atf_index_walk_piece(const struct ada_atf_index *ix, uint64_t begin, uint64_t end,
                             ada_atf_index_walk_fn fn, void *ctx, uint64_t *bad)
{
	return index_walk(ix, begin, end, fn, ctx, bad, true);
}

void ada_atf_index_note_bad(const struct ada_atf_index *cix, uint64_t seq)
{
	struct ada_atf_index *ix = (struct ada_atf_index *)cix; /* allocated non-const */

	if (ix->dec && seq < ix->count)
		index_block_bad(ix, ada_cidx_dec_block_of(ix->dec, seq));
}

uint64_t ada_atf_index_piece_end(const struct ada_atf_index *ix, uint64_t seq, uint64_t want)
{
	uint64_t end = want < ix->count - seq ? seq + want : ix->count;

	if (seq >= ix->count)
		return ix->count;
	if (!ix->dec || end == ix->count)
		return end;
	size_t b = ada_cidx_dec_block_of(ix->dec, end);
	uint64_t first, t0;
	uint32_t k;
	ada_cidx_dec_block_info(ix->dec, b, &first, &k, &t0);
	return first > seq ? first : first + k; /* to a block's first event */
}

uint64_t ada_atf_index_undecoded(const struct ada_atf_index *ix)
{
	return ix->undecoded;
}

static uint64_t index_ts(const struct ada_atf_index *ix, uint64_t seq)
{
	return ada_atf_index_get(ix, seq)->timestamp_ns;
}

/* The seqs a bound lies in: [0, count), narrowed for a compact file to
 * one block by the blocks' first times (sorted in a valid file; on any
 * other the search still ends inside [0, count]), so that the search
 * decodes one block, not one per step. */
static void index_bound_blocks(const struct ada_atf_index *ix, uint64_t t, bool strict,
                               uint64_t *lo, uint64_t *hi)
{
	size_t a = 0, z = ix->nready;
	uint64_t first, ts;
	uint32_t k;

	*lo = 0;
	*hi = ix->count;
	if (!ix->dec || !z)
		return;
	/* a: the blocks whose first event is before the bound. */
	while (a < z) {
		size_t mid = a + (z - a) / 2;
		ada_cidx_dec_block_info(ix->dec, mid, &first, &k, &ts);
		if (strict ? ts <= t : ts < t)
			a = mid + 1;
		else
			z = mid;
	}
	if (a == 0) {
		*hi = 0;
		return;
	}
	ada_cidx_dec_block_info(ix->dec, a - 1, &first, &k, &ts);
	*lo = first;
	*hi = first + k < ix->count ? first + k : ix->count;
}

/* Binary search for the first seq with ts > t (strict) or ts >= t. On a
 * file that is not sorted (invalid) it still terminates inside [0, count]. */
static uint64_t index_bound(const struct ada_atf_index *ix, uint64_t t, bool strict)
{
	uint64_t lo, hi;

	index_bound_blocks(ix, t, strict, &lo, &hi);
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint64_t ts = index_ts(ix, mid);
		if (strict ? ts <= t : ts < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t ada_atf_index_lower_bound(const struct ada_atf_index *ix, uint64_t ts)
{
	return index_bound(ix, ts, false);
}

uint64_t ada_atf_index_upper_bound(const struct ada_atf_index *ix, uint64_t ts)
{
	return index_bound(ix, ts, true);
}

void ada_atf_index_range(const struct ada_atf_index *ix, uint64_t from, uint64_t to,
                         uint64_t *begin, uint64_t *end)
{
	const struct atf_index_header *h = &ix->hdr;

	*begin = *end = 0;
	if (!ix->count || from > to)
		return;
	/* The header's range lets a file outside [from, to] be skipped without
	 * touching its events; only trust it when it is ordered. */
	bool ordered = h->time_start_ns <= h->time_end_ns && h->time_start_ns == index_ts(ix, 0) &&
	               h->time_end_ns == index_ts(ix, ix->count - 1);
	if (ordered && (h->time_end_ns < from || h->time_start_ns > to))
		return;
	/* The whole file: no search (a search of a compact file decodes). */
	if (ordered && from <= h->time_start_ns && to >= h->time_end_ns) {
		*end = ix->count;
		return;
	}
	*begin = index_bound(ix, from, false);
	*end = index_bound(ix, to, true);
	if (*end < *begin)
		*end = *begin;
}

/* --------------------------------------------------------------- detail */

struct ada_atf_detail {
	struct atf_map map;
	struct atf_detail_header hdr;
	uint64_t *off; /* byte offset of each event in the mapping */
	uint64_t count;
};

static int detail_push(struct ada_atf_detail *d, uint64_t *cap, uint64_t off)
{
	if (d->count == *cap) {
		uint64_t ncap = *cap ? *cap * 2 : 64;
		uint64_t *p = realloc(d->off, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->off = p;
		*cap = ncap;
	}
	d->off[d->count++] = off;
	return 0;
}

/* Walks total_length over [start, end); returns the offset where the walk
 * stopped (== end when every event fit exactly). */
static int detail_walk(struct ada_atf_detail *d, uint64_t start, uint64_t end, uint64_t *stop)
{
	uint64_t cap = 0, pos = start;
	uint32_t tl;

	while (pos < end && ATF_READ(&tl, d->map.base, end, pos)) {
		if (tl < ATF_DETAIL_EVENT_HEADER_SIZE || tl > end - pos)
			break;
		int err = detail_push(d, &cap, pos);
		if (err)
			return err;
		pos += tl;
	}
	*stop = pos;
	return 0;
}

static int detail_init(struct ada_atf_detail *d, unsigned flags)
{
	struct atf_detail_header *h = &d->hdr;
	struct atf_detail_footer f;
	uint64_t end, stop;
	bool strict_ok;

	if (!ATF_READ(h, d->map.base, d->map.len, 0) || memcmp(h->magic, ATF_DETAIL_MAGIC, 4) ||
	    h->events_offset < ATF_HEADER_SIZE || h->events_offset > d->map.len)
		return -EBADMSG;
	strict_ok = h->bytes_length <= d->map.len - h->events_offset &&
	            ATF_READ(&f, d->map.base, d->map.len, h->events_offset + h->bytes_length) &&
	            !memcmp(f.magic, ATF_DETAIL_FOOTER_MAGIC, 4);
	if (!strict_ok && !(flags & ADA_ATF_OPEN_SALVAGE))
		return -EBADMSG;
	end = strict_ok ? h->events_offset + h->bytes_length : d->map.len;
	int err = detail_walk(d, h->events_offset, end, &stop);
	if (err)
		return err;
	if (!(flags & ADA_ATF_OPEN_SALVAGE) && (stop != end || d->count != h->event_count))
		return -EBADMSG;
	return 0;
}

static int detail_new(struct atf_map *m, unsigned flags, struct ada_atf_detail **out)
{
	struct ada_atf_detail *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return -ENOMEM;
	d->map = *m;
	err = detail_init(d, flags);
	if (err) {
		free(d->off);
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

int ada_atf_detail_open(const char *path, unsigned flags, struct ada_atf_detail **out)
{
	struct atf_map m;
	int err = atf_map_file(path, &m);

	if (err)
		return err;
	err = detail_new(&m, flags, out);
	if (err)
		atf_map_release(&m);
	return err;
}

int ada_atf_detail_open_mem(const void *buf, size_t len, unsigned flags,
                            struct ada_atf_detail **out)
{
	struct atf_map m = {.base = buf, .len = len, .owned = false};
	return detail_new(&m, flags, out);
}

void ada_atf_detail_free(struct ada_atf_detail *d)
{
	if (!d)
		return;
	atf_map_release(&d->map);
	free(d->off);
	free(d);
}

bool ada_atf_detail_shrank(const struct ada_atf_detail *d)
{
	return atf_map_shrank(&d->map);
}

const struct atf_detail_header *ada_atf_detail_header(const struct ada_atf_detail *d)
{
	return &d->hdr;
}

uint64_t ada_atf_detail_count(const struct ada_atf_detail *d)
{
	return d->count;
}

const struct atf_detail_event_header *ada_atf_detail_get(const struct ada_atf_detail *d,
                                                         uint64_t seq)
{
	if (seq >= d->count)
		return NULL;
	return (const struct atf_detail_event_header *)(d->map.base + d->off[seq]);
}

const struct atf_detail_function_payload *
ada_atf_detail_function(const struct atf_detail_event_header *ev, const uint8_t **stack)
{
	const uint32_t xmm = ada_atf_detail_is_fp(ev->event_type) ? ATF_DETAIL_XMM_WORDS * 8 : 0;
	const uint32_t fixed =
	    ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(struct atf_detail_function_payload) + xmm;
	const struct atf_detail_function_payload *p;

	if ((ev->event_type != ATF_DETAIL_FUNCTION_CALL &&
	     ev->event_type != ATF_DETAIL_FUNCTION_RETURN && !xmm) ||
	    ev->total_length < fixed)
		return NULL;
	p = (const void *)((const uint8_t *)ev + ATF_DETAIL_EVENT_HEADER_SIZE);
	if (p->stack_size > ev->total_length - fixed)
		return NULL;
	if (stack)
		*stack = (const uint8_t *)p + sizeof(*p) + xmm;
	return p;
}

bool ada_atf_detail_is_fp(uint32_t type)
{
	return type == ATF_DETAIL_FUNCTION_CALL_FP || type == ATF_DETAIL_FUNCTION_RETURN_FP;
}

bool ada_atf_detail_is_call(uint32_t type)
{
	return type == ATF_DETAIL_FUNCTION_CALL || type == ATF_DETAIL_FUNCTION_CALL_FP;
}

const uint64_t *ada_atf_detail_xmm(const struct atf_detail_event_header *ev)
{
	const struct atf_detail_function_payload *p = ada_atf_detail_function(ev, NULL);
	if (!p || !ada_atf_detail_is_fp(ev->event_type))
		return NULL;
	return (const uint64_t *)(const void *)((const uint8_t *)p + sizeof(*p));
}

const struct atf_detail_signal_payload *
ada_atf_detail_signal(const struct atf_detail_event_header *ev)
{
	if (ev->event_type != ATF_DETAIL_SIGNAL_CONTEXT ||
	    ev->total_length !=
	        ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(struct atf_detail_signal_payload))
		return NULL;
	return (const void *)((const uint8_t *)ev + ATF_DETAIL_EVENT_HEADER_SIZE);
}

const char *ada_atf_signal_reg_name(uint32_t i)
{
	static const char *const names[ATF_SIGNAL_NREGS] = {
	    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
	    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip", "rflags",
	};
	return i < ATF_SIGNAL_NREGS ? names[i] : "?";
}

const char *ada_atf_signal_reg_name_for(uint8_t arch, uint32_t i)
{
	static const char *const arm64[ATF_SIGNAL_NREGS] = {
	    "x0", "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "sp", "x7",
	    "x8", "x16", "x17", "x18", "x19", "x29", "x30", "pc", "pstate",
	};
	if (arch != ATF_ARCH_ARM64)
		return ada_atf_signal_reg_name(i);
	return i < ATF_SIGNAL_NREGS ? arm64[i] : "?";
}

const char *ada_atf_kind_name(uint32_t kind)
{
	switch (kind) {
	case ATF_EVENT_CALL:
		return "call";
	case ATF_EVENT_RETURN:
		return "return";
	case ATF_EVENT_EXCEPTION:
		return "exception";
	default:
		return NULL;
	}
}
