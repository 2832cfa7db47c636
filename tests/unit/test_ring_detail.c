/*
 * Unit tests of src/ring's detail lane: variable-length records, overwrite
 * of the oldest with drop counting, incremental snapshots, the padding at
 * the wrap point, and a producer overwriting records while the drain copies
 * them (no record may come back torn -- run under ThreadSanitizer too).
 * The chunked reserve (ring.h, ada_detail_enter_chunk) is checked against
 * a model written from its contract alone: pads at chunk ends, a record
 * exactly filling a chunk, the largest record, the exact overwritten count
 * through many laps, in rings of 4, 8 and 16 chunks. A ring that ends
 * where its mapping ends takes laps of records although the writer's
 * prefetch (ada_detail_prefetch) asks for lines past that end.
 * ada_detail_ring_ends() (the oldest and newest records without a copy of
 * the ring) agrees with a full snapshot through laps, pads and whole-chunk
 * records, and under a concurrent producer returns only intact pairs.
 * With detail_wait (--detail always --detail-overflow wait) a full ring
 * waits for the drain's `decided` before it frees a chunk: exactly when the
 * chunk holds undecided records, never before the ring is full; a drain
 * thread that publishes what it copied gets every record, none lost; a
 * drain that stops deciding costs one timeout, then the ring overwrites
 * (counted) without waiting again until decided moves.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"
#include "ring_internal.h" /* the detail header and words, the ends' test hook */

#define DETAIL 4096u

struct fixture {
	char dir[64];
	char path[128];
	struct ada_arena *a;
	uint64_t *buf; /* snapshot buffer, DETAIL bytes */
	uint32_t slot; /* the slot the records go to */
	bool gap;      /* an earlier snapshot lost bytes and returned nothing */
};

static int fx_setup_cfg(void **state, bool wait)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-ring-test-XXXXXX");
	if (!mkdtemp(f->dir)) {
		snprintf(f->dir, sizeof(f->dir), "/tmp/ada-ring-test-XXXXXX");
		if (!mkdtemp(f->dir))
			return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/arena.ring", f->dir);
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = 2;
	c.index_events = 64;
	c.detail_bytes = DETAIL;
	c.detail_wait = wait;
	if (ada_arena_create(f->path, &c, &f->a, NULL) != 0)
		return -1;
	f->buf = malloc(DETAIL);
	ada_producer_reset_thread();
	ada_producer_set_arena(f->a);
	/* Claim this thread's slot now (an index event) so tests know it. */
	ada_emit(0, ATF_EVENT_CALL, 1);
	f->slot = ada_producer_tls.slot;
	const struct atf_index_event *e;
	ada_index_ring_release(f->a, f->slot, ada_index_ring_peek(f->a, f->slot, &e));
	*state = f;
	return 0;
}

static int fx_setup(void **state)
{
	return fx_setup_cfg(state, false);
}

static int fx_setup_wait(void **state)
{
	return fx_setup_cfg(state, true);
}

static int fx_teardown(void **state)
{
	struct fixture *f = *state;
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(f->a);
	unlink(f->path);
	rmdir(f->dir);
	free(f->buf);
	free(f);
	return 0;
}

/* A self-checking record: seq, its length, and bytes derived from seq. */
static uint32_t rec_make(uint8_t *out, uint32_t seq)
{
	uint32_t len = 8 + (seq * 37) % 200; /* 8..207 bytes, most not 8-aligned */
	memcpy(out, &seq, 4);
	memcpy(out + 4, &len, 4);
	for (uint32_t i = 8; i < len; i++)
		out[i] = (uint8_t)(seq * 7 + i);
	return len;
}

static uint32_t rec_check(const uint8_t *rec, uint32_t len)
{
	uint32_t seq, l;
	assert_true(len >= 8);
	memcpy(&seq, rec, 4);
	memcpy(&l, rec + 4, 4);
	assert_int_equal(l, len);
	for (uint32_t i = 8; i < len; i++)
		if (rec[i] != (uint8_t)(seq * 7 + i))
			fail_msg("record %u torn at byte %u", seq, i);
	return seq;
}

/* Snapshot from `from`, check every record and that seqs run on from
 * *next (a gap is allowed only when lost_bytes says so). Returns count. */
static uint64_t snap_check(struct fixture *f, uint64_t *from, uint32_t *next, bool gap_ok)
{
	struct ada_detail_snapshot s;
	assert_int_equal(ada_detail_ring_snapshot(f->a, f->slot, *from, f->buf, DETAIL, &s), 0);
	size_t off = 0;
	uint32_t len;
	const uint8_t *r;
	uint64_t n = 0;
	while ((r = ada_detail_rec_next(f->buf, s.bytes, &off, &len))) {
		uint32_t seq = rec_check(r, len);
		if (n == 0 && (s.lost_bytes || f->gap) && gap_ok)
			assert_true(seq >= *next);
		else if (seq != *next)
			fail_msg("seq %u expected %u: rec %llu of snapshot from %llu begin %llu "
			         "end %llu lost %llu recs %llu",
			         seq, *next, (unsigned long long)n, (unsigned long long)*from,
			         (unsigned long long)s.begin, (unsigned long long)s.end,
			         (unsigned long long)s.lost_bytes, (unsigned long long)s.records);
		*next = seq + 1;
		n++;
	}
	assert_int_equal(off, s.bytes);
	assert_int_equal(n, s.records);
	/* Records lost with none returned: the gap shows in the next one. */
	f->gap = n == 0 ? (f->gap || s.lost_bytes) : false;
	*from = s.end;
	return n;
}

static void test_push_and_snapshot(void **state)
{
	struct fixture *f = *state;
	uint8_t rec[256];
	for (uint32_t i = 0; i < 10; i++)
		assert_true(ada_detail_push(rec, rec_make(rec, i)));
	uint64_t from = 0;
	uint32_t next = 0;
	assert_int_equal(snap_check(f, &from, &next, false), 10);
	assert_int_equal(snap_check(f, &from, &next, false), 0); /* incremental: nothing new */
	for (uint32_t i = 10; i < 13; i++)
		assert_true(ada_detail_push(rec, rec_make(rec, i)));
	assert_int_equal(snap_check(f, &from, &next, false), 3);
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 0);
	assert_int_equal(si.head, 1); /* one index event, from fx_setup() */
}

/* A snapshot cut at a limit ends after its last whole record and says so
 * (cut); the next one from its end goes on with the next record, none
 * twice, none left out, across chunk pads; each record's ring position
 * (ada_detail_rec_ring_pos) is a place a snapshot can start from and
 * whose first record is that one. */
static void test_snapshot_part_and_positions(void **state)
{
	struct fixture *f = *state;
	uint8_t rec[256];
	for (uint32_t i = 0; i < 14; i++) /* under 3 KiB: no lap of the 4 KiB ring */
		assert_true(ada_detail_push(rec, rec_make(rec, i)));
	uint64_t from = 0, pos[14];
	uint32_t next = 0, parts = 0;
	for (;;) {
		struct ada_detail_snapshot s;
		assert_int_equal(
		    ada_detail_ring_snapshot_part(f->a, f->slot, from, 300, f->buf, DETAIL, &s), 0);
		assert_true(s.end - s.begin <= 300);
		assert_int_equal(s.lost_bytes, 0);
		size_t off = 0;
		uint32_t len;
		const uint8_t *r;
		while ((r = ada_detail_rec_next(f->buf, s.bytes, &off, &len))) {
			assert_int_equal(rec_check(r, len), next);
			pos[next++] = ada_detail_rec_ring_pos(&s, r);
		}
		parts++;
		from = s.end;
		if (!s.cut)
			break;
	}
	assert_int_equal(next, 14);
	assert_true(parts > 3);
	for (uint32_t i = 0; i < 14; i++) {
		struct ada_detail_snapshot s;
		assert_int_equal(
		    ada_detail_ring_snapshot(f->a, f->slot, pos[i], f->buf, DETAIL, &s), 0);
		assert_int_equal(s.begin, pos[i]);
		assert_int_equal(s.records, 14 - i);
		size_t off = 0;
		uint32_t len;
		const uint8_t *r = ada_detail_rec_next(f->buf, s.bytes, &off, &len);
		assert_non_null(r);
		assert_int_equal(rec_check(r, len), i);
	}
}

static void test_overwrite_oldest_counts(void **state)
{
	struct fixture *f = *state;
	uint8_t rec[256];
	uint32_t total = 500; /* ~60 KB through a 4 KB ring */
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < total; i++) {
		uint32_t len = rec_make(rec, i);
		bytes += 8 + ((len + 7) & ~7u);
		assert_true(ada_detail_push(rec, len));
	}
	uint64_t from = 0;
	uint32_t next = 0;
	uint64_t kept = snap_check(f, &from, &next, true);
	assert_int_equal(next, total); /* the newest records are all there */
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	uint64_t over = si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	assert_int_equal(over + kept, total); /* each record kept or counted */
	assert_true(kept > 10);
	assert_true(bytes > 10 * DETAIL);
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(f->a, tot);
	assert_int_equal(tot[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], over);
}

/* A drain that falls behind learns how much it lost and resumes intact. */
static void test_snapshot_after_lag(void **state)
{
	struct fixture *f = *state;
	uint8_t rec[256];
	uint32_t i = 0, next = 0;
	uint64_t from = 0;
	for (; i < 5; i++)
		ada_detail_push(rec, rec_make(rec, i));
	assert_int_equal(snap_check(f, &from, &next, false), 5);
	for (; i < 300; i++)
		ada_detail_push(rec, rec_make(rec, i));
	struct ada_detail_snapshot s;
	assert_int_equal(ada_detail_ring_snapshot(f->a, f->slot, from, f->buf, DETAIL, &s), 0);
	assert_true(s.lost_bytes > 0);
	assert_int_equal(s.begin, from + s.lost_bytes);
	assert_true(snap_check(f, &from, &next, true) > 0);
	assert_int_equal(next, 300);
}

static void test_limits(void **state)
{
	struct fixture *f = *state;
	static uint8_t big[DETAIL];
	uint32_t max = ada_detail_max_record(f->a);
	assert_int_equal(max, DETAIL / 4 - 8);
	assert_true(ada_detail_push(big, max));
	assert_true(ada_detail_push(big, 0)); /* empty records are records */
	assert_false(ada_detail_push(big, max + 1));
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_RING_FULL], 1);
	struct ada_detail_snapshot s;
	assert_int_equal(ada_detail_ring_snapshot(f->a, 0, 0, f->buf, DETAIL - 1, &s), -EINVAL);
	assert_int_equal(ada_detail_ring_snapshot(f->a, 9, 0, f->buf, DETAIL, &s), -EINVAL);
	assert_int_equal(ada_detail_ring_snapshot(f->a, f->slot, 3, f->buf, DETAIL, &s), 0);
	assert_int_equal(s.records, 0); /* a misaligned `from` copies nothing */
	assert_int_equal(ada_detail_ring_snapshot(f->a, f->slot, 0, f->buf, DETAIL, &s), 0);
	assert_int_equal(s.records, 2);
	/* The iterator refuses a malformed buffer instead of running off it. */
	size_t off = 0;
	uint32_t len;
	uint32_t bogus[2] = {4096, 0};
	assert_null(ada_detail_rec_next(bogus, sizeof(bogus), &off, &len));
}

static void test_no_detail_ring(void **state)
{
	struct fixture *f = *state;
	char path[160];
	snprintf(path, sizeof(path), "%s/nodetail.ring", f->dir);
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = 1;
	c.index_events = 64;
	struct ada_arena *a;
	assert_int_equal(ada_arena_create(path, &c, &a, NULL), 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(a);
	assert_false(ada_detail_push("x", 1));
	assert_int_equal(ada_detail_max_record(a), 0);
	struct ada_detail_snapshot s;
	assert_int_equal(ada_detail_ring_snapshot(a, 0, 0, f->buf, DETAIL, &s), -EINVAL);
	ada_producer_reset_thread();
	ada_producer_set_arena(f->a);
	ada_arena_close(a);
	unlink(path);
}

/* ---- the chunked layout, against a model ----
 * The model knows only the contract: chunks of C bytes, a record (8-byte
 * header + len padded to 8) never crosses a chunk's end, and a ring of n
 * chunks holds the last n chunks written into; the records of every chunk
 * before those were overwritten, each counted once. */
struct model {
	uint64_t c, n;     /* chunk bytes, chunks in the ring */
	uint64_t k, off;   /* chunk records go to, offset in it */
	uint64_t per[512]; /* records written into chunk k (k < 512) */
	uint64_t total;
	bool started;
};

static void model_push(struct model *m, uint32_t len)
{
	uint64_t need = 8 + ((len + 7) & ~7ull);
	if (!m->started) {
		m->started = true;
	} else if (m->off + need > m->c) {
		m->k++;
		m->off = 0;
	}
	assert_true(m->k < 512);
	m->per[m->k]++;
	m->off += need;
	m->total++;
}

/* Records overwritten so far (every chunk more than n behind k). */
static uint64_t model_over(const struct model *m)
{
	uint64_t o = 0;
	for (uint64_t i = 0; i + m->n <= m->k; i++)
		o += m->per[i];
	return o;
}

/* An arena of one slot with a detail ring of d bytes, this thread's. */
static struct ada_arena *chunk_arena(struct fixture *f, uint64_t d, char *path, size_t cap)
{
	snprintf(path, cap, "%s/chunk%llu.ring", f->dir, (unsigned long long)d);
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = 1;
	c.index_events = 64;
	c.detail_bytes = d;
	struct ada_arena *a;
	assert_int_equal(ada_arena_create(path, &c, &a, NULL), 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(a);
	return a;
}

static void chunk_arena_done(struct fixture *f, struct ada_arena *a, const char *path)
{
	ada_producer_reset_thread();
	ada_producer_set_arena(f->a);
	ada_arena_close(a);
	unlink(path);
}

static uint64_t chunk_over(struct ada_arena *a)
{
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	return si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
}

/* Snapshot of slot 0 from 0: records == the model's kept ones, the newest
 * last, in order and intact; begin is the oldest chunk kept. */
static void chunk_check(struct ada_arena *a, const struct model *m, uint32_t last_seq, uint64_t d)
{
	uint64_t *buf = malloc(d);
	struct ada_detail_snapshot s;
	assert_int_equal(ada_detail_ring_snapshot(a, 0, 0, buf, d, &s), 0);
	uint64_t over = model_over(m);
	assert_int_equal(chunk_over(a), over);
	assert_int_equal(s.records, m->total - over);
	if (m->k >= m->n)
		assert_int_equal(s.begin, (m->k - m->n + 1) * m->c);
	assert_int_equal(s.end, m->k * m->c + m->off);
	size_t off = 0;
	uint32_t len, want = last_seq + 1 - (uint32_t)s.records;
	const uint8_t *r;
	while ((r = ada_detail_rec_next(buf, s.bytes, &off, &len)))
		assert_int_equal(rec_check(r, len), want++);
	assert_int_equal(want, last_seq + 1);
	free(buf);
}

/* Pushes seq as a self-checking record of len bytes (len >= 8). */
static void chunk_push(struct model *m, uint32_t seq, uint32_t len)
{
	static uint8_t rec[ADA_DETAIL_CHUNK_MIN * 8];
	memcpy(rec, &seq, 4);
	memcpy(rec + 4, &len, 4);
	for (uint32_t i = 8; i < len; i++)
		rec[i] = (uint8_t)(seq * 7 + i);
	assert_true(ada_detail_push(rec, len));
	model_push(m, len);
}

/* 4 KiB: four chunks of 1 KiB. A record that fits the rest of a chunk
 * exactly needs no pad; the next starts the next chunk. One that does
 * not fit leaves a pad word to the chunk's end. */
static void test_chunk_pad_and_exact_fill(void **state)
{
	struct fixture *f = *state;
	char path[160];
	struct ada_arena *a = chunk_arena(f, 4096, path, sizeof(path));
	struct model m = {.c = 1024, .n = 4};
	struct ada_producer *p = &ada_producer_tls;
	uint32_t seq = 0;
	for (int i = 0; i < 8; i++) /* 8 x (8 + 120) = one chunk, exactly */
		chunk_push(&m, seq++, 120);
	assert_int_equal(ada_detail_max_record(a), 1016);
	assert_int_equal(p->dpos, 1024);
	assert_int_equal(p->dstop, 1024); /* not entered yet: nothing to pad */
	chunk_push(&m, seq++, 120);
	assert_int_equal(p->dpos, 1024 + 128);
	assert_int_equal(p->dstop, 2048);
	/* 1152 + 7 x 112 = 1936: 112 bytes left, a record of 120 needs 128 */
	for (int i = 0; i < 7; i++)
		chunk_push(&m, seq++, 104);
	assert_int_equal(p->dpos, 1936);
	chunk_push(&m, seq++, 120);
	uint64_t pad = atomic_load_explicit(&p->dwords[1936 / 8], memory_order_relaxed);
	assert_int_equal(pad, ADA_DETAIL_PAD_BIT | 112);
	assert_int_equal(p->dpos, 2048 + 128);
	chunk_check(a, &m, seq - 1, 4096);
	assert_int_equal(chunk_over(a), 0);
	chunk_arena_done(f, a, path);
}

/* The largest record fills a chunk alone: the ring keeps the last four
 * and counts every earlier one, exactly. */
static void test_chunk_largest_record(void **state)
{
	struct fixture *f = *state;
	char path[160];
	struct ada_arena *a = chunk_arena(f, 4096, path, sizeof(path));
	struct model m = {.c = 1024, .n = 4};
	uint32_t max = ada_detail_max_record(a);
	for (uint32_t seq = 0; seq < 10; seq++)
		chunk_push(&m, seq, max);
	assert_int_equal(chunk_over(a), 6);
	chunk_check(a, &m, 9, 4096);
	assert_false(ada_detail_push("x", max + 1)); /* one byte more: refused, counted */
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_RING_FULL], 1);
	chunk_arena_done(f, a, path);
}

/* Many laps of mixed lengths (short ones, ones that leave pads, whole
 * chunks) in rings of 4, 8 and 16 chunks (16: the chunk freed and the one
 * entered share a mark): the overwritten count is exact at every step. */
static void test_chunk_laps_exact(void **state)
{
	struct fixture *f = *state;
	static const uint64_t sizes[] = {4096, 8192, 65536};
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		uint64_t d = sizes[z];
		char path[160];
		struct ada_arena *a = chunk_arena(f, d, path, sizeof(path));
		uint32_t max = ada_detail_max_record(a);
		struct model m = {.c = max + 8u, .n = d / (max + 8u)};
		assert_int_equal(m.n, d == 4096 ? 4 : d == 8192 ? 8 : 16);
		uint32_t seq = 0;
		while (m.k < 500 - 1) {
			uint32_t len = 8 + (seq * 131) % 300;
			if (seq % 97 == 0)
				len = max; /* a whole chunk */
			chunk_push(&m, seq, len);
			if (seq % 61 == 0)
				assert_int_equal(chunk_over(a), model_over(&m));
			seq++;
		}
		chunk_check(a, &m, seq - 1, d);
		assert_true(model_over(&m) > 0);
		chunk_arena_done(f, a, path);
	}
}

struct writer {
	uint32_t count;
	_Atomic int done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t rec[256];
	for (uint32_t i = 0; i < w->count; i++)
		ada_detail_push(rec, rec_make(rec, i));
	atomic_store(&w->done, 1);
	return NULL;
}

/* The producer overwrites while the drain snapshots: every record returned
 * must be intact and in order; gaps are allowed (overwritten records). */
static void test_concurrent_overwrite_never_torn(void **state)
{
	struct fixture *f = *state;
	struct writer w = {.count = 200000};
	pthread_t t;
	ada_detail_push("", 0); /* the main thread, in f->slot, stays out of it */
	f->slot ^= 1;           /* the writer takes the other of the two slots */
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	uint64_t from = 0, seen = 0, snaps = 0;
	uint32_t next = 0;
	while (!atomic_load(&w.done) || snaps == 0) {
		seen += snap_check(f, &from, &next, true);
		snaps++;
	}
	pthread_join(t, NULL);
	seen += snap_check(f, &from, &next, true);
	assert_int_equal(next, w.count); /* the last record was seen */
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	/* Everything not seen was overwritten, and counted as such (the
	 * drain may also lose records it skipped, so seen + over >= count). */
	assert_true(seen + si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] >= w.count);
	print_message("snapshots %llu, records seen %llu of %u\n", (unsigned long long)snaps,
	              (unsigned long long)seen, w.count);
}

/* rec_make with a chosen length (>= 8). */
static uint32_t rec_make_len(uint8_t *out, uint32_t seq, uint32_t len)
{
	memcpy(out, &seq, 4);
	memcpy(out + 4, &len, 4);
	for (uint32_t i = 8; i < len; i++)
		out[i] = (uint8_t)(seq * 7 + i);
	return len;
}

/* The seq of the record at buf + off (len bytes, snapshot format). */
static uint32_t ends_seq(const uint64_t *buf, uint64_t off, uint64_t len)
{
	size_t o = 0;
	uint32_t rl;
	const uint8_t *r = ada_detail_rec_next((const uint8_t *)buf + off, len, &o, &rl);
	assert_non_null(r);
	assert_int_equal(o, len);
	return rec_check(r, rl);
}

/* ada_detail_ring_ends() agrees with a full snapshot's first and last. */
static void ends_vs_snapshot(struct fixture *f, uint64_t *eb)
{
	struct ada_detail_snapshot s;
	assert_int_equal(ada_detail_ring_snapshot(f->a, f->slot, 0, f->buf, DETAIL, &s), 0);
	struct ada_detail_ends e;
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_int_equal(e.found, s.records > 0);
	if (!s.records)
		return;
	size_t off = 0;
	uint32_t len, first = 0, last = 0;
	const uint8_t *r;
	for (uint64_t n = 0; (r = ada_detail_rec_next(f->buf, s.bytes, &off, &len)); n++) {
		uint32_t seq = rec_check(r, len);
		if (n == 0)
			first = seq;
		last = seq;
	}
	assert_int_equal(ends_seq(eb, e.first_off, e.first_len), first);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), last);
}

/* Through many laps of a 4-chunk ring (short records, ones that leave
 * pads at chunk ends, whole-chunk ones, the empty ring first): the ends
 * read without copying the ring are the full snapshot's first and last. */
static void test_ends_match_snapshot(void **state)
{
	struct fixture *f = *state;
	uint64_t *eb = malloc(DETAIL);
	static uint8_t rec[DETAIL];
	uint32_t max = ada_detail_max_record(f->a);
	ends_vs_snapshot(f, eb); /* empty */
	for (uint32_t seq = 0; seq < 3000; seq++) {
		uint32_t len = 8 + (seq * 131) % 300;
		if (seq % 97 == 0)
			len = max; /* a whole chunk */
		else if (seq % 41 == 0)
			len = max / 2 + 8; /* leaves a pad before the next such one */
		assert_true(ada_detail_push(rec, rec_make_len(rec, seq, len)));
		ends_vs_snapshot(f, eb);
	}
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_true(si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] > 2000); /* many laps */
	struct ada_detail_ends e;
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, 2 * (max + 8) - 8, &e), -EINVAL);
	assert_int_equal(ada_detail_ring_ends(f->a, 9, eb, DETAIL, &e), -EINVAL);
	free(eb);
}

/* The ring_detail_ends_test_hook: the producer (this thread, f->slot)
 * pushes `push` records of 64 bytes at the worst moment, between the walk
 * of the newest chunk and the copy of its last record. */
struct overtake {
	uint32_t push, calls;
};
static void ends_overtake(void *ctx)
{
	struct overtake *o = ctx;
	static uint8_t rec[64];
	o->calls++;
	for (uint32_t i = 0; i < o->push; i++)
		assert_true(ada_detail_push(rec, rec_make_len(rec, 900000 + i, 56)));
}

/* A chunk boundary: records that end exactly at a chunk's end; the ends
 * read in place (the newest one alone copied, at one chunk into buf). */
static void test_ends_chunk_boundary(void **state)
{
	struct fixture *f = *state;
	uint64_t *eb = malloc(DETAIL);
	static uint8_t rec[DETAIL];
	uint32_t max = ada_detail_max_record(f->a);
	uint64_t c = max + 8;
	assert_true(ada_detail_push(rec, rec_make_len(rec, 0, max))); /* chunk 0, whole */
	struct ada_detail_ends e;
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_true(e.found);
	assert_int_equal(e.first_off, 0);
	assert_int_equal(e.first_len, c);
	assert_int_equal(e.last_off, c);
	assert_int_equal(e.last_len, c);
	assert_int_equal(ends_seq(eb, e.first_off, e.first_len), 0);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), 0);
	/* chunk 1: two records that fill it exactly, then one in chunk 2 */
	assert_true(ada_detail_push(rec, rec_make_len(rec, 1, (uint32_t)(c / 2 - 8))));
	assert_true(ada_detail_push(rec, rec_make_len(rec, 2, (uint32_t)(c / 2 - 8))));
	assert_int_equal(ada_detail_ring_head(f->a, f->slot), 2 * c);
	ends_vs_snapshot(f, eb);
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), 2);
	assert_int_equal(e.last_len, c / 2);
	/* chunk 2: a record that leaves a pad when the next one does not fit */
	assert_true(ada_detail_push(rec, rec_make_len(rec, 3, (uint32_t)(c / 2))));
	assert_true(ada_detail_push(rec, rec_make_len(rec, 4, (uint32_t)(c / 2))));
	assert_int_equal(ada_detail_ring_head(f->a, f->slot), 3 * c + c / 2 + 8);
	ends_vs_snapshot(f, eb);
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), 4);
	assert_int_equal(ends_seq(eb, e.first_off, e.first_len), 0);
	/* the most records a chunk holds: c / 8 empty ones (8 bytes each)
	 * fill the newest chunk, so the walk takes all its c / 8 rounds */
	for (uint64_t k = 0; k < c / 8 && ada_detail_ring_head(f->a, f->slot) % c; k++)
		assert_true(ada_detail_push("", 0));
	for (uint64_t k = 0; k < c / 8; k++)
		assert_true(ada_detail_push("", 0));
	assert_int_equal(ada_detail_ring_head(f->a, f->slot) % c, 0);
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_true(e.found);
	assert_int_equal(e.last_off, c);
	assert_int_equal(e.last_len, 8);
	assert_int_equal(eb[c / 8], 0); /* its header: length 0 */
	free(eb);
}

/* What the target can write (positions and words in its arena): every
 * shape the walk cannot take plainly is -EAGAIN, never a record that is
 * not one; and a producer that overtakes the read between its walk and
 * its copy (the test hook) is -EAGAIN too, while one that only adds
 * records after the head it loaded is not (the ends as of that head). */
static void test_ends_untrusted_and_overtaken(void **state)
{
	struct fixture *f = *state;
	uint64_t *eb = malloc(DETAIL);
	static uint8_t rec[DETAIL];
	for (uint32_t seq = 0; seq < 200; seq++) /* several laps, pads */
		assert_true(ada_detail_push(rec, rec_make_len(rec, seq, 8 + (seq * 131) % 300)));
	ends_vs_snapshot(f, eb);
	struct ada_detail_hdr *h = ring_detail_hdr(f->a, f->slot);
	_Atomic uint64_t *words = ring_detail_words(f->a, f->slot);
	uint64_t c = ada_detail_max_record(f->a) + 8, d = DETAIL;
	uint64_t head = atomic_load(&h->head), oldest = atomic_load(&h->oldest);
	uint64_t cs = (head - 8) & ~(c - 1);
	assert_true(oldest > 0 && oldest % c == 0 && head - oldest <= d && cs > oldest);
	_Atomic uint64_t *w0 = &words[(cs & (d - 1)) / 8];
	uint64_t saved = atomic_load(w0);
	struct ada_detail_ends e;
	/* positions: misaligned head, oldest past head, more than a ring,
	 * oldest not a chunk start */
	const uint64_t bad[][2] = {{head + 4, oldest},
	                           {head, head + c},
	                           {head, oldest - c - d},
	                           {head, oldest + 8},
	                           {UINT64_MAX - 7, oldest}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		atomic_store(&h->head, bad[i][0]);
		atomic_store(&h->oldest, bad[i][1]);
		assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), -EAGAIN);
	}
	atomic_store(&h->head, head);
	atomic_store(&h->oldest, oldest);
	/* words of the newest chunk: zero, reserved bits, a step past head, a
	 * pad past the ring, a huge length */
	const uint64_t badw[] = {0,
	                         saved | 1ull << 40,
	                         head - cs,
	                         ADA_DETAIL_PAD_BIT | (head - cs + 8),
	                         ADA_DETAIL_PAD_BIT | 0xfffffff8ull,
	                         0xfffffff0ull};
	for (size_t i = 0; i < sizeof(badw) / sizeof(badw[0]); i++) {
		atomic_store(w0, badw[i]);
		assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), -EAGAIN);
	}
	/* the newest chunk only pads (up to head): no newest record there */
	atomic_store(w0, ADA_DETAIL_PAD_BIT | (head - cs));
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), -EAGAIN);
	atomic_store(w0, saved);
	ends_vs_snapshot(f, eb);
	/* overtaken between the walk and the copy: two laps of records */
	struct overtake o = {.push = 2 * DETAIL / 64};
	ring_detail_ends_test_ctx = &o;
	ring_detail_ends_test_hook = ends_overtake;
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), -EAGAIN);
	assert_int_equal(o.calls, 1);
	/* not overtaken: the hook adds one record after the head the read
	 * loaded, in the chunk that head is in (small records first, until
	 * it has room: no chunk is entered, so oldest stays) */
	uint32_t last = 900000 + o.push - 1;
	for (uint32_t k = 0; k < c / 16; k++) {
		uint64_t at = ada_detail_ring_head(f->a, f->slot) & (c - 1);
		if (at != 0 && c - at >= 64)
			break;
		last = 800000 + k;
		assert_true(ada_detail_push(rec, rec_make_len(rec, last, 8)));
	}
	uint64_t at = ada_detail_ring_head(f->a, f->slot) & (c - 1);
	assert_true(at != 0 && c - at >= 64);
	o.push = 1;
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_int_equal(o.calls, 2);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), last); /* as of its head */
	ring_detail_ends_test_hook = NULL;
	ring_detail_ends_test_ctx = NULL;
	ends_vs_snapshot(f, eb); /* at rest: the snapshot's ends, the hook's record last */
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), 900000);
	free(eb);
}

/* A producer laps the ring while the drain reads the ends: every pair
 * returned is intact (no torn record) and in order, and a read the producer
 * overtook says so (-EAGAIN) rather than returning stale bytes. */
static void test_ends_concurrent_overtaken(void **state)
{
	struct fixture *f = *state;
	struct writer w = {.count = 200000};
	pthread_t t;
	uint64_t *eb = malloc(DETAIL);
	ada_detail_push("", 0); /* the main thread, in f->slot, stays out of it */
	f->slot ^= 1;           /* the writer takes the other of the two slots */
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	uint64_t ok = 0, again = 0;
	while (!atomic_load(&w.done) || ok == 0) {
		struct ada_detail_ends e;
		int rc = ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e);
		if (rc == -EAGAIN) {
			again++;
			continue;
		}
		assert_int_equal(rc, 0);
		if (!e.found)
			continue;
		uint32_t a = ends_seq(eb, e.first_off, e.first_len);
		uint32_t b = ends_seq(eb, e.last_off, e.last_len);
		assert_true(a <= b);
		ok++;
	}
	pthread_join(t, NULL);
	ends_vs_snapshot(f, eb); /* at rest: the snapshot's ends exactly */
	struct ada_detail_ends e;
	assert_int_equal(ada_detail_ring_ends(f->a, f->slot, eb, DETAIL, &e), 0);
	assert_int_equal(ends_seq(eb, e.last_off, e.last_len), w.count - 1);
	print_message("ends read %llu, overtaken %llu\n", (unsigned long long)ok,
	              (unsigned long long)again);
	free(eb);
}

/* The writer's prefetch runs up to ADA_DETAIL_PREFETCH_AHEAD plus a record
 * past the ring's end (ring.h, ada_detail_prefetch): a ring whose last byte
 * is the last of its mapping, before an inaccessible page, takes laps of
 * records of every size through reserve/put/commit (the slow reserve
 * included: pads, chunk entries) without a fault, and the last lap reads
 * back whole. The primitives run on a producer of its own, no arena. */
static void test_ring_at_mapping_end(void **state)
{
	(void)state;
	const uint64_t d = 4096, page = (uint64_t)sysconf(_SC_PAGESIZE);
	const uint64_t span = (d + page - 1) / page * page; /* then the inaccessible page */
	uint8_t *m =
	    mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + span, page, PROT_NONE), 0);
	_Atomic uint64_t head = 0, oldest = 0, lost = 0;
	struct ada_producer p = {
	    .dwords = (_Atomic uint64_t *)(void *)(m + span - d),
	    .dhead = &head,
	    .doldest = &oldest,
	    .dlost = &lost,
	    .dbytes = d,
	    .dmax = (uint32_t)((1ull << ada_detail_chunk_shift(d)) - ADA_DETAIL_HDR_BYTES),
	    .dshift = ada_detail_chunk_shift(d),
	};
	uint32_t n = 0;
	for (; head < 40 * d; n++) {
		uint32_t len = (n * 37) % (p.dmax + 1), words = (len + 7) / 8;
		uint64_t end;
		_Atomic uint64_t *w = ada_detail_reserve(&p, len, &end);
		assert_non_null(w);
		for (uint32_t i = 0; i < words; i++)
			ada_detail_put(w, i, (uint64_t)n << 32 | i);
		ada_detail_commit(&p, end);
	}
	/* Walk the intact records, oldest first: consecutive numbers, each
	 * one's words as written, up to the head. */
	uint64_t pos = atomic_load(&oldest), walked = 0;
	uint32_t want = UINT32_MAX;
	while (pos < head) {
		uint64_t w0 = atomic_load(&p.dwords[(pos & (d - 1)) / 8]);
		uint64_t step = ada_detail_step(w0, d);
		assert_true(step != 0);
		if (!(w0 & ADA_DETAIL_PAD_BIT)) {
			uint32_t len = (uint32_t)w0, words = (len + 7) / 8;
			uint64_t first =
			    words ? atomic_load(&p.dwords[((pos + 8) & (d - 1)) / 8]) : 0;
			uint32_t rec = words ? (uint32_t)(first >> 32) : want + 1;
			if (want != UINT32_MAX)
				assert_int_equal(rec, want + 1);
			want = rec;
			for (uint32_t i = 0; i < words; i++)
				assert_int_equal(
				    atomic_load(&p.dwords[((pos + 8 + 8ull * i) & (d - 1)) / 8]),
				    (uint64_t)rec << 32 | i);
			walked++;
		}
		pos += step;
	}
	assert_int_equal(pos, head);
	assert_int_equal(want, n - 1);
	assert_true(walked > 0);
	/* Every record was committed once: intact ones plus overwritten ones. */
	assert_int_equal(walked + atomic_load(&lost), n);
	munmap(m, span + page);
}

/* ada_producer_count_detail (the agent's keysym_unknown count): into the
 * calling thread's slot once it holds one, into the arena's total before
 * (a fresh thread state: no slot), nowhere without an arena; the totals
 * hold both, exactly. */
static void test_count_detail(void **state)
{
	struct fixture *f = *state;
	for (int i = 0; i < 3; i++)
		ada_producer_count_detail(&ada_producer_tls, ADA_DROP_KEYSYM_UNKNOWN);
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_KEYSYM_UNKNOWN], 3);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_KEYSYM_UNKNOWN], 0);
	struct ada_producer saved = ada_producer_tls;
	ada_producer_reset_thread(); /* no slot yet */
	ada_producer_count_detail(&ada_producer_tls, ADA_DROP_KEYSYM_UNKNOWN);
	ada_producer_count_detail(&ada_producer_tls, ADA_DROP_REASON_COUNT); /* ignored */
	ada_producer_set_arena(NULL);
	ada_producer_count_detail(&ada_producer_tls, ADA_DROP_KEYSYM_UNKNOWN); /* nowhere */
	ada_producer_set_arena(f->a);
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_KEYSYM_UNKNOWN], 3);
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(f->a, tot);
	assert_int_equal(tot[ADA_LANE_DETAIL][ADA_DROP_KEYSYM_UNKNOWN], 4);
	ada_producer_tls = saved;
	assert_string_equal(ada_drop_reason_name(ADA_DROP_KEYSYM_UNKNOWN), "keysym_unknown");
}

/* ada_producer_count_gone (a call the agent leaves untraced after it
 * judged the recorder gone): two index-lane recorder_gone drops a call,
 * where ada_producer_count_detail counts -- the slot once the thread
 * holds one, the arena's total before, nowhere without an arena. */
static void test_count_gone(void **state)
{
	struct fixture *f = *state;
	for (int i = 0; i < 3; i++)
		ada_producer_count_gone(&ada_producer_tls);
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_RECORDER_GONE], 6);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_RECORDER_GONE], 0);
	struct ada_producer saved = ada_producer_tls;
	ada_producer_reset_thread(); /* no slot yet */
	ada_producer_count_gone(&ada_producer_tls);
	ada_producer_set_arena(NULL);
	ada_producer_count_gone(&ada_producer_tls); /* nowhere */
	ada_producer_set_arena(f->a);
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(f->a, tot);
	assert_int_equal(tot[ADA_LANE_INDEX][ADA_DROP_RECORDER_GONE], 8);
	assert_int_equal(tot[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG], 0);
	ada_producer_tls = saved;
	assert_string_equal(ada_drop_reason_name(ADA_DROP_RECORDER_GONE), "recorder_gone");
}

/* ---- detail_wait: a full ring waits for the drain's decided ---- */

/* The index position each record's event took (wait_push): a wait for
 * detail room puts its two markers in the index ring after that event
 * (docs/format.md, "Wait markers"), so record i no longer links at
 * base + i once the producer waited; the drain decides by these. */
static _Atomic uint64_t wait_links[4096];

/* One index event (so the producer's head, the records' link space, moves
 * on) and record `seq`; the index ring is released at once (64 events). */
static void wait_push(struct fixture *f, uint8_t *rec, uint32_t seq)
{
	ada_emit(seq, ATF_EVENT_CALL, 1);
	if (seq < 4096) /* read by the drain after the record: the ring's release orders it */
		atomic_store_explicit(&wait_links[seq], ada_producer_tls.head - 1,
		                      memory_order_relaxed);
	const struct atf_index_event *e;
	ada_index_ring_release(f->a, f->slot, ada_index_ring_peek(f->a, f->slot, &e));
	assert_true(ada_detail_push(rec, rec_make(rec, seq)));
}

/* Single thread, no timing: would_wait turns true exactly when the next
 * reserve would free a chunk holding records not decided, and a decided
 * past that chunk's next chunk's first record lets it go. */
static void test_wait_decided_exact(void **state)
{
	struct fixture *f = *state;
	struct ada_producer *p = &ada_producer_tls;
	uint8_t rec[256];
	uint64_t base = p->head; /* record i links at base + i */
	uint32_t i = 0;
	/* Fill until a reserve would have to free chunk 0. */
	while (!ada_detail_would_wait(p, rec_make(rec, i))) {
		assert_true(i < 1000);
		wait_push(f, rec, i++);
	}
	assert_true(p->dstop - p->dold >= p->dbytes); /* only a full ring waits */
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_int_equal(si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 0);
	/* Chunk 1's first record: entering chunk 1 set dlink[1]. */
	uint64_t need = p->dlink[1];
	assert_true(need > base && need <= base + i);
	ada_detail_ring_set_decided(f->a, f->slot, need - 1);
	assert_true(ada_detail_would_wait(p, rec_make(rec, i)));
	ada_detail_ring_set_decided(f->a, f->slot, need);
	assert_false(ada_detail_would_wait(p, rec_make(rec, i)));
	wait_push(f, rec, i++); /* frees chunk 0 without waiting */
	uint64_t waits, ns;
	ada_detail_ring_waits(f->a, f->slot, &waits, &ns);
	assert_int_equal(waits, 0); /* nothing waited: nothing counted */
	/* The whole ring decided for good: no wait however far it goes. */
	ada_detail_ring_set_decided(f->a, f->slot, UINT64_MAX);
	for (uint32_t k = 0; k < 300; k++) {
		assert_false(ada_detail_would_wait(p, rec_make(rec, i)));
		wait_push(f, rec, i++);
	}
}

struct wait_drain {
	struct fixture *f;
	uint32_t total;
	uint32_t seen; /* records copied, in order */
	bool gap;      /* a snapshot reported lost bytes */
	_Atomic bool stop;
};

/* The drain's side: copy what is new, then publish it as decided. */
static void *wait_drain_main(void *arg)
{
	struct wait_drain *w = arg;
	uint64_t *buf = aligned_alloc(8, DETAIL);
	uint64_t from = 0;
	while (w->seen < w->total && !atomic_load(&w->stop)) {
		struct ada_detail_snapshot s;
		if (ada_detail_ring_snapshot(w->f->a, w->f->slot, from, buf, DETAIL, &s) != 0)
			break;
		w->gap |= s.lost_bytes != 0;
		size_t off = 0;
		uint32_t len;
		const uint8_t *r;
		while ((r = ada_detail_rec_next(buf, s.bytes, &off, &len))) {
			uint32_t seq;
			memcpy(&seq, r, 4);
			if (seq != w->seen)
				w->gap = true;
			w->seen = seq + 1;
		}
		from = s.end;
		if (w->seen) /* past the link of the last record copied */
			ada_detail_ring_set_decided(
			    w->f->a, w->f->slot,
			    atomic_load_explicit(&wait_links[w->seen - 1], memory_order_relaxed) +
			        1);
		sched_yield();
	}
	free(buf);
	return NULL;
}

/* A producer ~60 rings ahead of a drain that decides what it copied: it
 * waits whenever it would overwrite, so the drain sees every record, in
 * order, and nothing is lost. */
static void test_wait_concurrent_lossless(void **state)
{
	struct fixture *f = *state;
	struct wait_drain w = {.f = f, .total = 2000};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wait_drain_main, &w), 0);
	uint8_t rec[256];
	for (uint32_t i = 0; i < w.total; i++)
		wait_push(f, rec, i);
	pthread_join(th, NULL);
	assert_false(w.gap);
	assert_int_equal(w.seen, w.total);
	assert_true(ada_producer_tls.dstall == UINT64_MAX); /* never gave up */
}

/* A drain that decides nothing more: one wait of the drain timeout, then
 * the ring overwrites (counted) and waits no more while decided stands. */
static void test_wait_stalled_drain(void **state)
{
	struct fixture *f = *state;
	struct ada_producer *p = &ada_producer_tls;
	uint8_t rec[256];
	uint32_t i = 0;
	ada_producer_set_drain_timeout_ms(20);
	while (!ada_detail_would_wait(p, rec_make(rec, i))) {
		assert_true(i < 1000);
		wait_push(f, rec, i++);
	}
	assert_false(ada_detail_wait_room(p, rec_make(rec, i))); /* gave up */
	assert_int_equal(p->dstall, 0);
	uint64_t waits, ns;
	ada_detail_ring_waits(f->a, f->slot, &waits, &ns);
	assert_int_equal(waits, 1); /* counted, with the time it took */
	assert_true(ns > 0);
	for (uint32_t k = 0; k < 300; k++) {
		assert_false(ada_detail_would_wait(p, rec_make(rec, i)));
		wait_push(f, rec, i++);
	}
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, f->slot, &si);
	assert_true(si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] > 0);
	/* Decided moves (not far enough): the next full chunk waits again. */
	ada_detail_ring_set_decided(f->a, f->slot, 1);
	bool again = false;
	for (uint32_t k = 0; k < 300 && !again; k++) {
		again = ada_detail_would_wait(p, rec_make(rec, i));
		if (!again)
			wait_push(f, rec, i++);
	}
	assert_true(again);
	ada_producer_set_drain_timeout_ms(2000);
}

/* The markers of the n events at the ring's tail: BEGIN, END, then the
 * CALL of function fn, in time order. */
static void expect_marked_wait(struct fixture *f, uint64_t fn)
{
	const struct atf_index_event *e;
	size_t n = ada_index_ring_peek(f->a, f->slot, &e);
	assert_int_equal(n, 3); /* 64 events went before: the same place in the ring */
	assert_true(ada_wait_marker(e[0].event_kind, e[0].call_depth) &&
	            e[0].call_depth == ADA_WAIT_MARKER_BEGIN);
	assert_true(ada_wait_marker(e[1].event_kind, e[1].call_depth) &&
	            e[1].call_depth == ADA_WAIT_MARKER_END);
	assert_int_equal(e[2].function_id, fn);
	assert_true(e[0].timestamp_ns < e[1].timestamp_ns);
	assert_true(e[1].timestamp_ns <= e[2].timestamp_ns);
	ada_index_ring_release(f->a, f->slot, n);
}

/* A detail wait that gives up while the index ring is full has nowhere
 * to put its markers: they go in before the next event that finds room,
 * not lost (the wait is in the trace, its length out of durations). */
static void test_wait_marked_when_index_full(void **state)
{
	struct fixture *f = *state;
	struct ada_producer *p = &ada_producer_tls;
	uint8_t rec[256];
	uint32_t i = 0;
	ada_producer_set_drain_timeout_ms(20);
	while (!ada_detail_would_wait(p, rec_make(rec, i))) {
		assert_true(i < 1000);
		wait_push(f, rec, i++);
	}
	for (uint64_t k = 0; k < 64; k++) /* the index ring full, nothing released */
		ada_emit(10000 + k, ATF_EVENT_CALL, 1);
	assert_false(ada_detail_wait_room(p, rec_make(rec, i))); /* gave up */
	assert_true(p->wpend_end != 0 && p->limit == 0);
	const struct atf_index_event *e;
	uint64_t next = 10000; /* in two pieces where the ring wraps */
	for (size_t n; (n = ada_index_ring_peek(f->a, f->slot, &e)) > 0;) {
		for (size_t k = 0; k < n; k++)
			assert_int_equal(e[k].function_id, next++);
		ada_index_ring_release(f->a, f->slot, n);
	}
	assert_int_equal(next, 10064);
	ada_emit(20000, ATF_EVENT_CALL, 1);
	expect_marked_wait(f, 20000);
	assert_int_equal(p->wpend_end, 0);
	ada_producer_set_drain_timeout_ms(2000);
}

/* The config text carries detail_overflow=wait both ways, and only then. */
static void test_wait_config_text(void **state)
{
	(void)state;
	struct ada_arena_config c, back;
	char buf[ADA_ARENA_CONFIG_TEXT_MAX];
	ada_arena_config_default(&c);
	c.detail_bytes = DETAIL;
	int n = ada_arena_config_format(&c, buf, sizeof(buf));
	assert_true(n > 0 && !strstr(buf, "detail_overflow"));
	c.detail_wait = 1;
	n = ada_arena_config_format(&c, buf, sizeof(buf));
	assert_true(n > 0 && strstr(buf, ",detail_overflow=wait"));
	assert_int_equal(ada_arena_config_parse(buf, (size_t)n, &back), 0);
	assert_int_equal(back.detail_wait, 1);
	const char *ow = "detail_bytes=4096,detail_overflow=overwrite";
	assert_int_equal(ada_arena_config_parse(ow, strlen(ow), &back), 0);
	assert_int_equal(back.detail_wait, 0);
	const char *bad = "detail_bytes=4096,detail_overflow=later";
	assert_int_equal(ada_arena_config_parse(bad, strlen(bad), &back), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_push_and_snapshot, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_part_and_positions, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_overwrite_oldest_counts, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_after_lag, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_limits, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_no_detail_ring, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_chunk_pad_and_exact_fill, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_chunk_largest_record, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_chunk_laps_exact, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_overwrite_never_torn, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_ends_match_snapshot, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_ends_concurrent_overtaken, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_ends_chunk_boundary, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_ends_untrusted_and_overtaken, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_count_detail, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_count_gone, fx_setup, fx_teardown),
	    cmocka_unit_test(test_ring_at_mapping_end),
	    cmocka_unit_test_setup_teardown(test_wait_decided_exact, fx_setup_wait, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_wait_concurrent_lossless, fx_setup_wait,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_wait_stalled_drain, fx_setup_wait, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_wait_marked_when_index_full, fx_setup_wait,
	                                    fx_teardown),
	    cmocka_unit_test(test_wait_config_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
