/*
 * Unit tests of the consumer's trust boundary (src/ring/consumer.c): an
 * arena made by ada_arena_create() is written the way an honest producer
 * writes it (no false alarm over a whole slot life and reuse) and the way
 * a scribbling one does (each check fires with its fault code, the slot
 * is quarantined, never read again, and its counters leave the totals).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"

#define CAP 64u

struct fx {
	char path[64];
	struct ada_arena *a;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/dev/shm/ada-test-consumer-%d", (int)getpid());
	unlink(f->path);
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 2;
	cfg.index_events = CAP;
	assert_int_equal(ada_arena_create(f->path, &cfg, &f->a, NULL), 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	ada_arena_close(f->a);
	unlink(f->path);
	free(f);
	return 0;
}

/* What the producer does: claim (tid, seq, generation + 1, ACTIVE) and
 * publish n events after the current head. */
static void honest_claim(struct ada_arena *a, uint32_t s, uint32_t tid, uint32_t seq)
{
	struct ada_slot_desc *d = &a->desc[s];
	atomic_store(&d->tid, tid);
	atomic_store(&d->thread_seq, seq);
	atomic_fetch_add(&d->generation, 1);
	atomic_store(&d->state, ADA_SLOT_ACTIVE);
}

static void honest_emit(struct ada_arena *a, uint32_t s, uint32_t n)
{
	struct ada_index_hdr *h = ring_index_hdr(a, s);
	atomic_fetch_add(&h->head, n);
}

static uint64_t drain_all(struct ada_arena *a, uint32_t s)
{
	const struct atf_index_event *ev;
	size_t k;
	uint64_t n = 0;
	while ((k = ada_index_ring_peek(a, s, &ev)) > 0) {
		ada_index_ring_release(a, s, k);
		n += k;
	}
	return n;
}

static void test_honest_life_and_reuse(void **state)
{
	struct fx *f = *state;
	struct ada_slot_info si;
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_int_equal(si.state, ADA_SLOT_FREE);
	honest_claim(f->a, 0, 100, 0);
	honest_emit(f->a, 0, CAP); /* a full ring is allowed */
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_int_equal(si.head - si.tail, CAP);
	assert_int_equal(drain_all(f->a, 0), CAP);
	honest_emit(f->a, 0, 10);
	atomic_store(&f->a->desc[0].state, ADA_SLOT_EXITED);
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_int_equal(si.state, ADA_SLOT_EXITED);
	assert_int_equal(drain_all(f->a, 0), 10);
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_int_equal(ada_arena_slot_free(f->a, 0), 0);
	honest_claim(f->a, 0, 101, 1); /* reuse: generation 2, positions go on */
	honest_emit(f->a, 0, 5);
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_int_equal(si.generation, 2);
	assert_int_equal(si.tid, 101);
	assert_int_equal(drain_all(f->a, 0), 5);
	assert_false(ada_slot_fault(f->a, 0, NULL));
}

/* Every scribble: the fault code, -EPROTO from then on, peek 0. */
static void expect_quarantined(struct ada_arena *a, uint32_t s, uint32_t code)
{
	struct ada_slot_info si;
	struct ada_slot_fault fl;
	const struct atf_index_event *ev;
	assert_int_equal(ada_slot_read_checked(a, s, &si), -EPROTO);
	assert_true(ada_slot_fault(a, s, &fl));
	assert_int_equal(fl.code, code);
	assert_int_equal(ada_index_ring_peek(a, s, &ev), 0);
	assert_int_equal(ada_slot_read_checked(a, s, &si), -EPROTO);
	char text[256];
	assert_true(ada_slot_fault_text(&fl, text, sizeof(text)) > 0);
}

static void claimed(struct fx *f, uint32_t n)
{
	struct ada_slot_info si;
	honest_claim(f->a, 0, 100, 0);
	honest_emit(f->a, 0, n);
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
}

static void test_head_back(void **state)
{
	struct fx *f = *state;
	claimed(f, 20);
	atomic_store(&ring_index_hdr(f->a, 0)->head, 15);
	expect_quarantined(f->a, 0, ADA_FAULT_HEAD_BACK);
	assert_int_equal(ada_slot_unconsumed(f->a, 0), 20); /* what it knew was there */
}

static void test_head_ahead(void **state)
{
	struct fx *f = *state;
	claimed(f, 20);
	atomic_store(&ring_index_hdr(f->a, 0)->head, CAP + 1);
	expect_quarantined(f->a, 0, ADA_FAULT_HEAD_AHEAD);
}

static void test_tail_moved(void **state)
{
	struct fx *f = *state;
	claimed(f, 20);
	atomic_store(&ring_index_hdr(f->a, 0)->tail, 3);
	expect_quarantined(f->a, 0, ADA_FAULT_TAIL_MOVED);
}

static void test_state_unknown(void **state)
{
	struct fx *f = *state;
	atomic_store(&f->a->desc[1].state, 9);
	expect_quarantined(f->a, 1, ADA_FAULT_STATE);
	assert_int_equal(ada_slot_read_checked(f->a, 0, &(struct ada_slot_info){0}), 0);
}

static void test_transitions(void **state)
{
	struct fx *f = *state;
	claimed(f, 0);
	atomic_store(&f->a->desc[0].state, ADA_SLOT_FREE); /* only the drain frees */
	expect_quarantined(f->a, 0, ADA_FAULT_TRANSITION);
	honest_claim(f->a, 1, 7, 1);
	assert_int_equal(ada_slot_read_checked(f->a, 1, &(struct ada_slot_info){0}), 0);
	atomic_store(&f->a->desc[1].state, ADA_SLOT_EXITED);
	assert_int_equal(ada_slot_read_checked(f->a, 1, &(struct ada_slot_info){0}), 0);
	atomic_store(&f->a->desc[1].state, ADA_SLOT_ACTIVE); /* EXITED never lives again */
	expect_quarantined(f->a, 1, ADA_FAULT_TRANSITION);
}

static void test_identity(void **state)
{
	struct fx *f = *state;
	claimed(f, 0);
	atomic_store(&f->a->desc[0].thread_seq, 5); /* changed while owned */
	expect_quarantined(f->a, 0, ADA_FAULT_IDENTITY);
	honest_claim(f->a, 1, 0, 1); /* tid 0 */
	expect_quarantined(f->a, 1, ADA_FAULT_TID);
}

static void test_generation_skips(void **state)
{
	struct fx *f = *state;
	struct ada_slot_info si;
	claimed(f, 0);
	atomic_store(&f->a->desc[0].state, ADA_SLOT_EXITED);
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_int_equal(ada_arena_slot_free(f->a, 0), 0);
	atomic_store(&f->a->desc[0].generation, 7); /* not generation + 1 */
	honest_claim(f->a, 0, 100, 1);
	expect_quarantined(f->a, 0, ADA_FAULT_IDENTITY);
}

static void test_quarantined_counters_left_out(void **state)
{
	struct fx *f = *state;
	claimed(f, 1);
	atomic_store(&ring_index_hdr(f->a, 0)->drops[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 1u << 30);
	uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(f->a, d);
	assert_int_equal(d[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 1u << 30);
	ada_slot_quarantine(f->a, 0, ADA_FAULT_EVENT, 0, ADA_EVENT_BAD_KIND, 9);
	ada_arena_drop_totals(f->a, d);
	assert_int_equal(d[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 0);
	assert_false(ada_arena_slot_reclaimable(f->a, 0));
	assert_int_equal(ada_arena_slot_free(f->a, 0), -EBUSY);
}

/* ada_slot_idle(): the drain's skip of a free slot says FREE only where
 * the full read would only say FREE again: never before the first read,
 * not once the slot is claimed (the full read then takes the new owner),
 * not after a free of a slot the consumer saw owned (its transition check
 * must run), not for a quarantined slot. */
static void test_idle_skip(void **state)
{
	struct fx *f = *state;
	struct ada_slot_info si;
	assert_false(ada_slot_idle(f->a, 0)); /* never read yet */
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	assert_true(ada_slot_idle(f->a, 0));
	assert_false(ada_slot_idle(f->a, 5)); /* past the slots */
	honest_claim(f->a, 0, 100, 0);
	assert_false(ada_slot_idle(f->a, 0)); /* claimed since */
	assert_int_equal(ada_slot_read_checked(f->a, 0, &si), 0);
	atomic_store(&f->a->desc[0].state, ADA_SLOT_FREE); /* only the drain frees */
	assert_false(ada_slot_idle(f->a, 0));
	expect_quarantined(f->a, 0, ADA_FAULT_TRANSITION);
	assert_false(ada_slot_idle(f->a, 0));
	assert_int_equal(ada_slot_read_checked(f->a, 1, &si), 0);
	assert_true(ada_slot_idle(f->a, 1));
	ada_slot_quarantine(f->a, 1, ADA_FAULT_EVENT, 0, 0, 0);
	assert_false(ada_slot_idle(f->a, 1)); /* the read reports the fault */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_honest_life_and_reuse, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_idle_skip, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_head_back, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_head_ahead, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_tail_moved, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_state_unknown, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_transitions, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_identity, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_generation_skips, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_quarantined_counters_left_out, fx_setup,
	                                    fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
