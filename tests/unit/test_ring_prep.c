/*
 * Slots prepared ahead of the threads that claim them (issue 32 item 1):
 * the recorder's handle populates a free slot in bounded steps and marks
 * it; a claim then takes that slot before a lower unprepared one, and
 * populates nothing; a claim that finds none ready asks the drain to
 * reclaim (slot_wanted). With a recorder, a claim of an unprepared slot
 * populates its headers only: the producer populates the index ring a
 * chunk at a time as its head reaches it (a fork child that writes ten
 * events allocates a few pages, not the ring) and marks the index part
 * whole after its first pass; its detail ring's pages come the same way,
 * a piece at a time as its records reach them, never a record past them,
 * and a later owner of the slot populates none of them again; the
 * recorder marks the slot whole once it has populated the rest. A slot
 * the recorder prepared is mapped by its producers a chunk at a time,
 * not faulted in a page at a time.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"

#define CONFIG "max_threads=8,index_events=1024,detail_bytes=262144"

struct fx {
	char dir[64];
	char path[128];
	struct ada_arena *prod; /* the target's handle */
	struct ada_arena *rec;  /* the recorder's */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-test-prep-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/arena", f->dir);
	struct ada_arena_config c;
	if (ada_arena_config_parse(CONFIG, strlen(CONFIG), &c) != 0 ||
	    ada_arena_create(f->path, &c, &f->prod, NULL) != 0 ||
	    ada_arena_open(f->path, &f->rec) != 0)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	ada_arena_close(f->rec);
	ada_arena_close(f->prod);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static uint32_t pop_bits(const struct ada_arena *a, uint32_t s)
{
	return atomic_load(&a->desc[s].populated);
}

/* Prepares slot s with the recorder's handle in steps of `step` bytes;
 * returns the number of steps. */
static int prepare_all(struct ada_arena *rec, uint32_t s, unsigned what, uint64_t step)
{
	uint64_t done = 0;
	int steps = 0, rc;
	while ((rc = ada_arena_slot_prepare(rec, s, what, &done, step)) == 0) {
		steps++;
		assert_true(steps < 10000);
	}
	assert_int_equal(rc, 1);
	return steps + 1;
}

static void test_prepared_slot_claimed_first(void **state)
{
	struct fx *f = *state;
	assert_false(ada_arena_slot_populated(f->rec, 1));
	/* Bounded steps: a slot of over 256 KiB in 64 KiB steps takes more
	 * than four calls. */
	assert_true(prepare_all(f->rec, 1, ADA_PREP_POPULATE, 65536) > 4);
	assert_true(ada_arena_slot_populated(f->rec, 1));
	assert_true(pop_bits(f->prod, 1) & RING_POP_PAGES);
	assert_false(ada_arena_slot_populated(f->rec, 0));
	/* Done is done: another call changes nothing. */
	uint64_t done = UINT64_MAX / 2;
	assert_int_equal(ada_arena_slot_prepare(f->rec, 1, ADA_PREP_POPULATE, &done, 4096), 1);

	/* Slot 0 is free and lower; the prepared slot wins. */
	assert_false(ada_arena_take_slot_wanted(f->rec));
	assert_int_equal(ring_slot_claim(f->prod, 1005), 1);
	assert_false(ada_arena_take_slot_wanted(f->rec)); /* a ready slot: nothing asked */
	struct ada_slot_info si;
	ada_arena_slot_info(f->rec, 1, &si);
	assert_int_equal(si.state, ADA_SLOT_ACTIVE);
	assert_int_equal(si.tid, 1005);

	/* None ready now: the lowest free slot, populated by the claim (no
	 * recorder known to this handle: the whole region), and the drain
	 * is asked to reclaim. */
	assert_int_equal(ring_slot_claim(f->prod, 1006), 0);
	assert_true(ada_arena_take_slot_wanted(f->rec));
	assert_int_equal(pop_bits(f->prod, 0) & (RING_POP_PAGES | RING_POP_INDEX),
	                 RING_POP_PAGES | RING_POP_INDEX);
	/* The next one takes the lowest still free, whatever its tid. */
	assert_int_equal(ring_slot_claim(f->prod, 1007), 2);
	assert_false(pop_bits(f->prod, 3));
}

static void test_claim_with_recorder_leaves_detail(void **state)
{
	struct fx *f = *state;
	f->prod->rec_pid = getpid(); /* as if a recorder drained this arena */
	assert_int_equal(ring_slot_claim(f->prod, 1003), 0);
	uint32_t b = pop_bits(f->prod, 0);
	assert_int_equal(b, RING_POP_RESERVED | RING_POP_HEADERS); /* the rest comes as used */
	assert_false(ada_arena_slot_populated(f->rec, 0));
	struct ada_index_hdr *h = ring_index_hdr(f->prod, 0);
	assert_int_equal(atomic_load(&h->head), 0);
	prepare_all(f->rec, 0, ADA_PREP_POPULATE, 1u << 20);
	assert_true(ada_arena_slot_populated(f->rec, 0));
	assert_true(pop_bits(f->prod, 0) & RING_POP_INDEX);

	/* A slot freed with its index part populated is ready for the next
	 * thread: the claim takes it before the lower free ones. */
	atomic_store(&f->prod->desc[4].populated, RING_POP_RESERVED | RING_POP_INDEX);
	assert_int_equal(ring_slot_claim(f->prod, 1007), 4);
	/* So is one a lazy claim used (its headers there, its index ring in
	 * part): taken first, nothing populated again at the claim. */
	atomic_store(&f->prod->desc[5].populated, RING_POP_RESERVED | RING_POP_HEADERS);
	assert_int_equal(ring_slot_claim(f->prod, 1008), 5);
	assert_int_equal(pop_bits(f->prod, 5), RING_POP_RESERVED | RING_POP_HEADERS);
}

/* Pages of [p, p + len) in memory (mincore; the mapping is shared). */
static size_t resident_pages(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
	size_t n = ((uintptr_t)p + len - lo + 4095) / 4096, k = 0;
	unsigned char *v = calloc(n, 1);
	assert_non_null(v);
	assert_int_equal(mincore((void *)lo, n * 4096, v), 0);
	for (size_t i = 0; i < n; i++)
		k += v[i] & 1;
	free(v);
	return k;
}

/* With a recorder the producer populates its index ring as it goes:
 * 2048 events first, then as many as it wrote (at most 16384 at once:
 * 2048, 2048, 4096, 8192 here);
 * the pages past pop_end are not there, every event lands, and the slot
 * is marked once the whole ring is (the next owner populates nothing). */
static void test_producer_populates_as_it_goes(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada-test-lazy-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/arena", dir);
	static const char cfgtxt[] = "max_threads=2,index_events=16384,detail_bytes=0";
	struct ada_arena_config c;
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_config_parse(cfgtxt, strlen(cfgtxt), &c), 0);
	assert_int_equal(ada_arena_create(path, &c, &a, NULL), 0);
	a->rec_pid = getpid(); /* as if a recorder drained this arena */
	ada_producer_set_arena(a);
	ada_emit(7, ATF_EVENT_CALL, 0);
	struct ada_producer *p = &ada_producer_tls;
	uint32_t s = p->slot;
	const struct atf_index_event *ev = ring_index_events(a, s);
	size_t ring = 16384 * sizeof(*ev);
	assert_int_equal(pop_bits(a, s), RING_POP_RESERVED | RING_POP_HEADERS);
	assert_int_equal(p->pop_end, 2048);
	/* The first 64 KiB (and a page of the header's), not the 512 KiB. */
	assert_true(resident_pages(ev, ring) <= 17);
	uint64_t ends[] = {2048, 4096, 8192, 16384};
	for (int k = 0; k < 4; k++) {
		while (p->head < ends[k])
			ada_emit(7 + p->head, ATF_EVENT_CALL, 0);
		assert_int_equal(p->head, ends[k]);
		if (k < 3) { /* the next chunk comes with the next event */
			assert_int_equal(p->pop_end, ends[k]);
			assert_false(pop_bits(a, s) & RING_POP_INDEX);
		}
	}
	assert_int_equal(p->pop_end, UINT64_MAX);
	assert_true(pop_bits(a, s) & RING_POP_INDEX);
	uintptr_t lo = (uintptr_t)ev & ~(uintptr_t)4095;
	assert_int_equal(resident_pages(ev, ring), ((uintptr_t)ev + ring - lo + 4095) / 4096);
	for (uint64_t i = 1; i < 16384; i++) /* nothing lost or misplaced */
		assert_int_equal(ev[i].function_id, 7 + i);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, drops);
	assert_int_equal(drops[ADA_LANE_INDEX][ADA_DROP_NO_SLOT], 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	unlink(path);
	rmdir(dir);
}

/* A thread that takes a slot an earlier lazy owner used continues where
 * that one's pages end: nothing populated again at its first event. */
static void test_next_owner_continues(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada-test-lazy2-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/arena", dir);
	static const char cfgtxt[] = "max_threads=2,index_events=16384,detail_bytes=0";
	struct ada_arena_config c;
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_config_parse(cfgtxt, strlen(cfgtxt), &c), 0);
	assert_int_equal(ada_arena_create(path, &c, &a, NULL), 0);
	a->rec_pid = getpid();
	ada_producer_set_arena(a);
	struct ada_producer *p = &ada_producer_tls;
	for (int i = 0; i < 100; i++)
		ada_emit(1, ATF_EVENT_CALL, 0);
	uint32_t s = p->slot;
	assert_int_equal(p->pop_end, 2048);
	/* The thread ends; the drain reads its 100 events and frees the slot. */
	ada_producer_reset_thread();
	atomic_store(&a->desc[s].state, ADA_SLOT_EXITED);
	struct ada_slot_info si;
	const struct atf_index_event *e;
	assert_int_equal(ada_slot_read_checked(a, s, &si), 0);
	ada_index_ring_release(a, s, ada_index_ring_peek(a, s, &e));
	assert_int_equal(ada_slot_read_checked(a, s, &si), 0);
	assert_int_equal(ada_arena_slot_free(a, s), 0);
	/* The next thread: the same slot (ready), its pages known. */
	ada_emit(2, ATF_EVENT_CALL, 0);
	assert_int_equal(p->slot, s);
	assert_int_equal(p->head, 101);
	assert_int_equal(p->pop_end, 2048);
	assert_int_equal(p->pop_left, 16384 - 2048);
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	unlink(path);
	rmdir(dir);
}

/* An arena of one slot per thread with a 1 MiB detail ring (64 KiB
 * chunks) drained, as it were, by a recorder: its claims are lazy. */
static struct ada_arena *detail_arena(char *dir, char *path, size_t cap)
{
	assert_non_null(mkdtemp(dir));
	snprintf(path, cap, "%s/arena", dir);
	static const char cfgtxt[] = "max_threads=2,index_events=4096,detail_bytes=1048576";
	struct ada_arena_config c;
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_config_parse(cfgtxt, strlen(cfgtxt), &c), 0);
	assert_int_equal(ada_arena_create(path, &c, &a, NULL), 0);
	a->rec_pid = getpid();
	ada_producer_set_arena(a);
	return a;
}

static void detail_arena_close(struct ada_arena *a, const char *dir, const char *path)
{
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	unlink(path);
	rmdir(dir);
}

/* One record of `len` bytes whose words say its number k. */
static void detail_rec(uint32_t k, uint32_t len)
{
	uint64_t w[128] = {0};
	for (uint32_t i = 0; i < len / 8; i++)
		w[i] = (uint64_t)k << 32 | i;
	assert_true(ada_detail_push(w, len));
}

/* The detail ring's pages come a piece at a time as records reach them
 * (ring.h, "The first lap's pages"): none at the claim, 16 KiB at the
 * first record, then as much as was written, up to 512 KiB at once
 * (16, 32, 64, 128, 256, 512 KiB here, then the whole 1 MiB); no record goes past the populated
 * pages; the header keeps how far for the next owner. Every record lands, in order, and none is
 * counted as dropped. */
static void test_detail_populates_as_it_goes(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada-test-dpop-XXXXXX", path[64];
	struct ada_arena *a = detail_arena(dir, path, sizeof(path));
	ada_emit(1, ATF_EVENT_CALL, 0);
	struct ada_producer *p = &ada_producer_tls;
	uint32_t s = p->slot;
	const size_t ring = 1u << 20;
	const void *dw = ring_detail_words(a, s);
	struct ada_detail_hdr *dh = ring_detail_hdr(a, s);
	assert_int_equal(pop_bits(a, s), RING_POP_RESERVED | RING_POP_HEADERS);
	assert_true(resident_pages(dw, ring) <= 1); /* the header's page at most */
	assert_int_equal(p->dpop, 0);
	uint64_t pieces[] = {16u << 10,  32u << 10,  64u << 10, 128u << 10,
	                     256u << 10, 512u << 10, 1u << 20};
	int piece = 0;
	uint32_t k = 0;
	while (p->dpop != UINT64_MAX) {
		uint64_t before = p->dpop;
		detail_rec(k, 200 + (k * 8) % 400); /* 200..592 bytes */
		k++;
		if (p->dpop != before) {
			assert_true(piece < 7);
			uint64_t want = pieces[piece++];
			assert_int_equal(p->dpop, want == ring ? UINT64_MAX : want);
			assert_int_equal(atomic_load(&dh->pop), want);
			/* populated: just what was asked, not the ring */
			size_t res = resident_pages(dw, ring);
			assert_true(res >= want / 4096 && res <= want / 4096 + 1);
		}
		/* Never a record past the pages that exist. */
		assert_true(p->dpos <= p->dpop);
		assert_true(p->dstop <= p->dpop && p->dstop <= p->dcend);
	}
	assert_int_equal(piece, 7);
	assert_true(resident_pages(dw, ring) >= ring / 4096);
	/* Every record there, in order. */
	struct ada_detail_snapshot snap;
	uint64_t *buf = malloc(ring);
	assert_non_null(buf);
	assert_int_equal(ada_detail_ring_snapshot(a, s, 0, buf, ring, &snap), 0);
	assert_int_equal(snap.records, k);
	size_t off = 0;
	uint32_t len, n = 0;
	const uint64_t *r;
	while ((r = ada_detail_rec_next(buf, snap.bytes, &off, &len)))
		assert_int_equal(r[0] >> 32, n++);
	assert_int_equal(n, k);
	free(buf);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, drops);
	assert_int_equal(drops[ADA_LANE_DETAIL][ADA_DROP_NO_SLOT], 0);
	detail_arena_close(a, dir, path);
}

/* The slot's next owner starts its records at 0 again and populates
 * nothing its predecessor did; a damaged header (the target's memory)
 * only costs a populate from 0. Without a recorder the claim populated
 * the whole slot: nothing to do. */
static void test_detail_next_owner_continues(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada-test-dpop2-XXXXXX", path[64];
	struct ada_arena *a = detail_arena(dir, path, sizeof(path));
	struct ada_producer *p = &ada_producer_tls;
	for (uint32_t k = 0; k < 300; k++) /* 300 x 400 bytes: two pieces */
		detail_rec(k, 392);
	uint32_t s = p->slot;
	assert_int_equal(p->dpop, 128u << 10);
	/* The thread ends; the drain frees the slot. */
	ada_producer_reset_thread();
	atomic_store(&a->desc[s].state, ADA_SLOT_EXITED);
	struct ada_slot_info si;
	const struct atf_index_event *e;
	assert_int_equal(ada_slot_read_checked(a, s, &si), 0);
	ada_index_ring_release(a, s, ada_index_ring_peek(a, s, &e));
	assert_int_equal(ada_slot_read_checked(a, s, &si), 0);
	assert_int_equal(ada_arena_slot_free(a, s), 0);
	detail_rec(0, 392);
	assert_int_equal(p->slot, s);
	assert_int_equal(p->dpos, 400);
	assert_int_equal(p->dpop, 128u << 10); /* nothing populated again */
	/* A bogus pop (past the ring) is not believed. */
	ada_producer_reset_thread();
	atomic_store(&a->desc[s].state, ADA_SLOT_EXITED);
	assert_int_equal(ada_slot_read_checked(a, s, &si), 0);
	ada_index_ring_release(a, s, ada_index_ring_peek(a, s, &e));
	assert_int_equal(ada_slot_read_checked(a, s, &si), 0);
	assert_int_equal(ada_arena_slot_free(a, s), 0);
	atomic_store(&ring_detail_hdr(a, s)->pop, 3u << 20);
	detail_rec(0, 392);
	assert_int_equal(p->dpop, UINT64_MAX); /* past the ring: taken as whole */
	detail_arena_close(a, dir, path);
	/* No recorder: the claim populated everything. */
	char dir2[] = "/dev/shm/ada-test-dpop3-XXXXXX", path2[64];
	a = detail_arena(dir2, path2, sizeof(path2));
	a->rec_pid = 0;
	detail_rec(0, 392);
	assert_int_equal(p->dpop, UINT64_MAX);
	detail_arena_close(a, dir2, path2);
}

/* A spare prepared without its detail ring (ADA_PREP_NO_DETAIL): the
 * index part and the headers populated, marked ready (INDEX, not
 * PAGES), none of the detail ring's records' pages; its thread then
 * populates a piece and the recorder locks up to the header's pop, and
 * no further, until the ring is whole. */
static void test_prepare_without_detail(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada-test-dprep-XXXXXX", path[64];
	struct ada_arena *a = detail_arena(dir, path, sizeof(path));
	struct ada_arena *rec = NULL;
	assert_int_equal(ada_arena_open(path, &rec), 0);
	assert_int_equal(prepare_all(rec, 1, ADA_PREP_POPULATE | ADA_PREP_NO_DETAIL, 1u << 20), 1);
	assert_int_equal(pop_bits(a, 1), RING_POP_INDEX);
	assert_true(ada_arena_slot_index_ready(rec, 1));
	assert_false(ada_arena_slot_populated(rec, 1));
	const size_t ring = 1u << 20;
	const uint8_t *dw = (const uint8_t *)ring_detail_words(a, 1);
	assert_true(resident_pages(dw + 4096, ring - 4096) == 0);
	const struct atf_index_event *ev = ring_index_events(a, 1);
	uintptr_t lo = (uintptr_t)ev & ~(uintptr_t)4095;
	assert_int_equal(resident_pages(ev, 4096 * sizeof(*ev)),
	                 ((uintptr_t)ev + 4096 * sizeof(*ev) - lo + 4095) / 4096);
	/* The ready slot is claimed first; its thread populates 16 KiB. */
	detail_rec(0, 392);
	struct ada_producer *p = &ada_producer_tls;
	assert_int_equal(p->slot, 1);
	assert_int_equal(p->dpop, 16u << 10);
	uint64_t locked = 0;
	int rc = ada_arena_slot_lock_detail(rec, 1, &locked, 1u << 20);
	if (rc == -EPERM) { /* no mlock here: said in the arena, nothing more to see */
		assert_true(ada_arena_flags(rec) & ADA_ARENA_F_MLOCK_FAILED);
	} else {
		assert_int_equal(rc, 0);
		assert_int_equal(locked, 16u << 10);
		/* Nothing new populated: nothing locked, nothing populated by it. */
		assert_int_equal(ada_arena_slot_lock_detail(rec, 1, &locked, 1u << 20), 0);
		assert_int_equal(locked, 16u << 10);
		assert_true(resident_pages(dw, ring) <= (16u << 10) / 4096 + 1);
		/* In steps of max_bytes, to the whole ring. */
		while (p->dpop != UINT64_MAX)
			detail_rec(1, 392);
		assert_int_equal(ada_arena_slot_lock_detail(rec, 1, &locked, 256u << 10), 0);
		assert_int_equal(locked, 272u << 10);
		while ((rc = ada_arena_slot_lock_detail(rec, 1, &locked, 256u << 10)) == 0)
			;
		assert_int_equal(rc, 1);
		assert_int_equal(locked, ring);
	}
	assert_int_equal(ada_arena_slot_lock_detail(rec, 9, &locked, 4096), -EINVAL);
	assert_int_equal(ada_arena_slot_lock_detail(rec, 1, NULL, 4096), -EINVAL);
	ada_arena_close(rec);
	detail_arena_close(a, dir, path);
}

/* Pages of [p, p + len) mapped in this mapping (/proc/self/pagemap's
 * present bit: the page-table entry, not the page cache). */
static size_t mapped_pages(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
	size_t n = ((uintptr_t)p + len - lo + 4095) / 4096, k = 0;
	FILE *f = fopen("/proc/self/pagemap", "rb");
	assert_non_null(f);
	assert_int_equal(fseeko(f, (off_t)(lo / 4096 * 8), SEEK_SET), 0);
	for (size_t i = 0; i < n; i++) {
		uint64_t e = 0;
		assert_int_equal(fread(&e, sizeof(e), 1, f), 1);
		k += e >> 63;
	}
	fclose(f);
	return k;
}

/* A target's arena drained, as it were, by a recorder (its claims are
 * lazy) and the recorder's own handle of it; torn down even when the test
 * fails (no arena left in /dev/shm). */
struct pmap_fx {
	char dir[64], path[96];
	struct ada_arena *a, *rec;
};

static int pmap_setup(void **state)
{
	struct pmap_fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-test-pmap-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/arena", f->dir);
	static const char cfgtxt[] = "max_threads=2,index_events=16384,detail_bytes=0";
	struct ada_arena_config c;
	if (ada_arena_config_parse(cfgtxt, strlen(cfgtxt), &c) != 0 ||
	    ada_arena_create(f->path, &c, &f->a, NULL) != 0 ||
	    ada_arena_open(f->path, &f->rec) != 0)
		return -1;
	f->a->rec_pid = getpid(); /* as if a recorder drained this arena */
	*state = f;
	return 0;
}

static int pmap_teardown(void **state)
{
	struct pmap_fx *f = *state;
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(f->rec);
	ada_arena_close(f->a);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A spare the recorder prepared has its index ring's pages in the file
 * and in the recorder's mapping, not in the target's: its producer maps
 * them a chunk at a time as its head reaches them (2048 events, then as
 * many as written), one madvise each instead of a fault per page at the
 * first touch, and marks the slot MAPPED after the lap; the slot's next
 * owner then maps nothing (issue 32 item 1). Every event lands. */
static void test_prepared_slot_mapped_as_it_goes(void **state)
{
	struct pmap_fx *f = *state;
	struct ada_arena *a = f->a, *rec = f->rec;
	prepare_all(rec, 1, ADA_PREP_POPULATE | ADA_PREP_NO_DETAIL, 1u << 20);
	assert_int_equal(pop_bits(a, 1), RING_POP_INDEX);
	const struct atf_index_event *ev = ring_index_events(a, 1);
	size_t ring = 16384 * sizeof(*ev), chunk = 2048 * sizeof(*ev);
	uintptr_t lo = (uintptr_t)ev & ~(uintptr_t)4095;
	size_t all = ((uintptr_t)ev + ring - lo + 4095) / 4096;
	assert_int_equal(resident_pages(ev, ring), all); /* in the file */
	assert_int_equal(mapped_pages(ev, ring), 0);     /* not mapped here */

	ada_producer_set_arena(a);
	ada_emit(7, ATF_EVENT_CALL, 0);
	struct ada_producer *p = &ada_producer_tls;
	assert_int_equal(p->slot, 1); /* the ready slot */
	assert_int_equal(p->pop_end, 2048);
	/* The first chunk's pages mapped at once (faults: 1 page here); past
	 * it, no more than the kernel's fault-around maps with them (64 KiB). */
	size_t first = ((uintptr_t)ev + chunk - lo + 4095) / 4096;
	assert_int_equal(mapped_pages((const void *)lo, first * 4096), first);
	assert_true(mapped_pages((const void *)(lo + first * 4096), (all - first) * 4096) < 16);
	uint64_t ends[] = {2048, 4096, 8192, 16384};
	for (int k = 0; k < 4; k++) {
		while (p->head < ends[k])
			ada_emit(7 + p->head, ATF_EVENT_CALL, 0);
		if (k < 3) {
			assert_int_equal(p->pop_end, ends[k]);
			assert_false(pop_bits(a, 1) & RING_POP_MAPPED);
		}
	}
	assert_int_equal(p->pop_end, UINT64_MAX);
	assert_int_equal(pop_bits(a, 1), RING_POP_INDEX | RING_POP_MAPPED);
	assert_int_equal(mapped_pages(ev, ring), all);
	for (uint64_t i = 1; i < 16384; i++)
		assert_int_equal(ev[i].function_id, 7 + i);

	/* The thread ends, the drain reads its events and frees the slot;
	 * the next owner finds the slot's pages mapped: nothing to do. */
	ada_producer_reset_thread();
	atomic_store(&a->desc[1].state, ADA_SLOT_EXITED);
	struct ada_slot_info si;
	const struct atf_index_event *e;
	assert_int_equal(ada_slot_read_checked(rec, 1, &si), 0);
	ada_index_ring_release(rec, 1, ada_index_ring_peek(rec, 1, &e));
	assert_int_equal(ada_slot_read_checked(rec, 1, &si), 0);
	assert_int_equal(ada_arena_slot_free(rec, 1), 0);
	ada_emit(8, ATF_EVENT_CALL, 0);
	assert_int_equal(p->slot, 1);
	assert_int_equal(p->pop_end, UINT64_MAX);
	assert_int_equal(p->pop_left, 0);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, drops);
	assert_int_equal(drops[ADA_LANE_INDEX][ADA_DROP_NO_SLOT], 0);
}

static void test_prepare_lock(void **state)
{
	struct fx *f = *state;
	uint64_t done = 0;
	int rc =
	    ada_arena_slot_prepare(f->rec, 2, ADA_PREP_POPULATE | ADA_PREP_LOCK, &done, UINT64_MAX);
	/* Locked, or refused (no CAP_IPC_LOCK, a small RLIMIT_MEMLOCK, a
	 * sanitizer's mlock) and said in the arena for the manifest. */
	if (rc == -EPERM)
		assert_true(ada_arena_flags(f->rec) & ADA_ARENA_F_MLOCK_FAILED);
	else
		assert_int_equal(rc, 1);
	/* Bad arguments. */
	assert_int_equal(ada_arena_slot_prepare(f->rec, 8, ADA_PREP_POPULATE, &done, 4096),
	                 -EINVAL);
	assert_int_equal(ada_arena_slot_prepare(f->rec, 2, ADA_PREP_POPULATE, NULL, 4096), -EINVAL);
	assert_int_equal(ada_arena_slot_prepare(f->rec, 2, ADA_PREP_POPULATE, &done, 0), -EINVAL);
}

/* The drain's hint that a thread ended (ada_arena_exited_sig): 0 while
 * no slot is EXITED, a value that changes with each slot that ends (and
 * with its generation: the next owner of the same slot), 0 again once
 * the slots are freed; slots at or past `used` are not looked at. */
static void test_exited_sig(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ring_slot_claim(f->prod, 1001), 0);
	assert_int_equal(ring_slot_claim(f->prod, 1002), 1);
	uint32_t used = ada_arena_slots_used(f->rec); /* every full slot */
	assert_int_equal(ada_arena_exited_sig(f->rec, used), 0);
	atomic_store(&f->prod->desc[1].state, ADA_SLOT_EXITED);
	uint64_t one = ada_arena_exited_sig(f->rec, used);
	assert_true(one != 0);
	assert_int_equal(ada_arena_exited_sig(f->rec, 1), 0);
	atomic_store(&f->prod->desc[0].state, ADA_SLOT_EXITED);
	uint64_t two = ada_arena_exited_sig(f->rec, used);
	assert_true(two != 0 && two != one);
	/* Both freed (their rings are empty): none ended any more. */
	assert_int_equal(ada_arena_slot_free(f->rec, 0), 0);
	assert_int_equal(ada_arena_slot_free(f->rec, 1), 0);
	assert_int_equal(ada_arena_exited_sig(f->rec, used), 0);
	/* Slot 1's next owner ends: another value than its first owner's. */
	assert_int_equal(ring_slot_claim(f->prod, 1003), 0);
	assert_int_equal(ring_slot_claim(f->prod, 1004), 1);
	atomic_store(&f->prod->desc[1].state, ADA_SLOT_EXITED);
	uint64_t again = ada_arena_exited_sig(f->rec, used);
	assert_true(again != 0 && again != one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_prepared_slot_claimed_first, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_claim_with_recorder_leaves_detail, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_prepare_lock, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_exited_sig, fx_setup, fx_teardown),
	    cmocka_unit_test(test_producer_populates_as_it_goes),
	    cmocka_unit_test(test_next_owner_continues),
	    cmocka_unit_test(test_detail_populates_as_it_goes),
	    cmocka_unit_test(test_detail_next_owner_continues),
	    cmocka_unit_test(test_prepare_without_detail),
	    cmocka_unit_test_setup_teardown(test_prepared_slot_mapped_as_it_goes, pmap_setup,
	                                    pmap_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
