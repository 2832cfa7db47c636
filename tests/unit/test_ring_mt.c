/*
 * Multi-thread test of src/ring: 4 producer threads emit known sequences
 * through small index rings (WAIT policy, so they block often) while one
 * consumer thread drains every slot concurrently, as the recorder's drain
 * does. Every event must arrive exactly once, in order per thread, with no
 * drop. Built and run under ThreadSanitizer in CI (-DADA_SANITIZE=thread):
 * the acquire/release pairs of head and tail are what make it race-free.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"

#define PRODUCERS 4
#define SLOTS 6

struct shared {
	struct ada_arena *a;
	uint64_t per_thread;
	_Atomic int producers_done;
	uint64_t got[PRODUCERS]; /* next expected sequence number, per producer */
	uint64_t waits;          /* wait marker pairs seen (the producers waited) */
	bool in_wait[SLOTS];     /* a slot's BEGIN seen, its END not yet */
	char error[160];         /* the consumer's first complaint; checked in main */
};

static void *producer_main(void *arg)
{
	struct shared *s = arg;
	static _Atomic uint32_t ids;
	uint32_t me = atomic_fetch_add(&ids, 1) % PRODUCERS;
	for (uint64_t i = 0; i < s->per_thread; i++) {
		/* function_id carries (producer, sequence); kinds alternate. */
		uint64_t fn = ((uint64_t)me << 40) | i;
		if (i & 1)
			ada_emit_return(fn);
		else
			ada_emit_call(fn);
	}
	atomic_fetch_add(&s->producers_done, 1);
	return NULL;
}

/* Checks one event against what its producer must have sent next. cmocka
 * asserts may only run on the test's thread, so this reports in s->error. */
static bool check_event(struct shared *s, const struct atf_index_event *e)
{
	uint32_t who = (uint32_t)(e->function_id >> 40);
	uint64_t seq = e->function_id & ((1ull << 40) - 1);
	uint32_t kind = (seq & 1) ? ATF_EVENT_RETURN : ATF_EVENT_CALL;
	if (who >= PRODUCERS || seq != s->got[who] || e->event_kind != kind || e->call_depth != 1 ||
	    e->detail_seq != ATF_NO_DETAIL) {
		snprintf(s->error, sizeof(s->error),
		         "bad event: producer %u seq %llu kind %u depth %u (expected seq %llu)",
		         who, (unsigned long long)seq, e->event_kind, e->call_depth,
		         who < PRODUCERS ? (unsigned long long)s->got[who] : 0ull);
		return false;
	}
	s->got[who]++;
	return true;
}

/* A wait marker (the producer waited for room): a BEGIN, then its END. */
static bool check_wait(struct shared *s, uint32_t slot, const struct atf_index_event *e)
{
	bool begin = e->call_depth == ADA_WAIT_MARKER_BEGIN;
	if (begin == s->in_wait[slot] || e->function_id != 0 || e->detail_seq != ATF_NO_DETAIL) {
		snprintf(s->error, sizeof(s->error), "slot %u: wait marker %#x out of place", slot,
		         e->call_depth);
		return false;
	}
	s->in_wait[slot] = begin;
	s->waits += !begin;
	return true;
}

/* Checks and consumes what one slot holds. Returns the producers' own
 * events consumed (wait markers are not theirs). */
static uint64_t consume_slot(struct shared *s, uint32_t slot)
{
	const struct atf_index_event *e;
	size_t n = ada_index_ring_peek(s->a, slot, &e), own = 0;
	for (size_t i = 0; i < n; i++) {
		bool wait = ada_wait_marker(e[i].event_kind, e[i].call_depth);
		if (wait ? !check_wait(s, slot, &e[i]) : !check_event(s, &e[i]))
			break;
		own += !wait;
	}
	ada_index_ring_release(s->a, slot, n);
	return own;
}

static void *consumer_main(void *arg)
{
	struct shared *s = arg;
	uint64_t want = s->per_thread * PRODUCERS, have = 0;
	while (have < want && !s->error[0]) {
		uint64_t round = 0;
		ada_arena_drain_heartbeat(s->a);
		for (uint32_t slot = 0; slot < SLOTS; slot++)
			round += consume_slot(s, slot);
		have += round;
		if (round == 0)
			sched_yield();
	}
	return NULL;
}

/* pthread_join() returns when the kernel clears the thread's tid, a moment
 * before the task is gone from tgkill's view; the drain simply retries
 * later, and so do we (bounded, no timing involved). */
static bool reclaimable_soon(struct ada_arena *a, uint32_t slot)
{
	for (int i = 0; i < 1000000; i++) {
		if (ada_arena_slot_reclaimable(a, slot))
			return true;
		sched_yield();
	}
	return false;
}

static void run(uint64_t per_thread, uint64_t ring_events)
{
	char dir[] = "/dev/shm/ada-ring-mt-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/arena.ring", dir);
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = SLOTS;
	c.index_events = ring_events;
	struct shared s = {.per_thread = per_thread};
	assert_int_equal(ada_arena_create(path, &c, &s.a, NULL), 0);
	/* The mapping is all we need: a killed run leaves nothing in /dev/shm. */
	unlink(path);
	rmdir(dir);
	ada_producer_set_arena(s.a);
	pthread_t prod[PRODUCERS], cons;
	assert_int_equal(pthread_create(&cons, NULL, consumer_main, &s), 0);
	for (int i = 0; i < PRODUCERS; i++)
		assert_int_equal(pthread_create(&prod[i], NULL, producer_main, &s), 0);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(prod[i], NULL);
	pthread_join(cons, NULL);
	if (s.error[0])
		fail_msg("%s", s.error);
	for (int i = 0; i < PRODUCERS; i++)
		assert_int_equal(s.got[i], per_thread);
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(s.a, tot);
	for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
		assert_int_equal(tot[ADA_LANE_INDEX][r], 0);
	/* Each producer thread exited: its slot is EXITED, drained, free-able. */
	uint32_t exited = 0;
	for (uint32_t slot = 0; slot < SLOTS; slot++) {
		struct ada_slot_info si;
		ada_arena_slot_info(s.a, slot, &si);
		if (si.state == ADA_SLOT_EXITED) {
			exited++;
			assert_true(reclaimable_soon(s.a, slot));
			assert_int_equal(ada_arena_slot_free(s.a, slot), 0);
		}
	}
	assert_int_equal(exited, PRODUCERS);
	ada_producer_set_arena(NULL);
	ada_arena_close(s.a);
}

static void test_four_producers_small_ring(void **state)
{
	(void)state;
	run(200000, 64); /* the ring is full most of the time: waits galore */
}

static void test_four_producers_large_ring(void **state)
{
	(void)state;
	run(300000, 1 << 14);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_four_producers_small_ring),
	    cmocka_unit_test(test_four_producers_large_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
