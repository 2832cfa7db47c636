/*
 * Slot exhaustion under the WAIT policy: an arena with 2 slots, 8 threads
 * that start one after another (each after the previous one exited), and a
 * drain thread that frees EXITED slots only when a producer asks for one
 * (ada_arena_take_slot_wanted) — as the recorder does between its periodic
 * reclaims. Every thread must get a slot and every event must arrive; no
 * NO_SLOT drop may be counted.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"
#include "test_arena.h"

#define THREADS 8
#define EVENTS 100

static _Atomic int stop;
static _Atomic uint64_t drained;

static void *producer_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < EVENTS; i++)
		ada_emit(1, ATF_EVENT_CALL, 1);
	return NULL;
}

static void drain_all(struct ada_arena *a)
{
	for (uint32_t s = 0; s < ada_arena_max_threads(a); s++) {
		const struct atf_index_event *ev;
		size_t n;
		while ((n = ada_index_ring_peek(a, s, &ev)) > 0) {
			ada_index_ring_release(a, s, n);
			drained += n;
		}
	}
}

static void *drain_main(void *arg)
{
	struct ada_arena *a = arg;
	while (!stop) {
		drain_all(a);
		ada_arena_drain_heartbeat(a);
		if (!ada_arena_take_slot_wanted(a)) {
			sched_yield();
			continue;
		}
		for (uint32_t s = 0; s < ada_arena_max_threads(a); s++)
			if (ada_arena_slot_reclaimable(a, s))
				ada_arena_slot_free(a, s);
	}
	drain_all(a);
	return NULL;
}

static void test_wait_for_slot(void **state)
{
	(void)state;
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 2;
	cfg.index_events = 1024;
	cfg.overflow = ADA_OVERFLOW_WAIT;
	struct ada_arena *a = test_arena_new(&cfg);
	ada_producer_set_arena(a);

	pthread_t drain;
	pthread_create(&drain, NULL, drain_main, a);
	for (int i = 0; i < THREADS; i++) {
		pthread_t t;
		pthread_create(&t, NULL, producer_main, NULL);
		pthread_join(t, NULL);
	}
	stop = 1;
	pthread_join(drain, NULL);

	assert_int_equal(drained, (uint64_t)THREADS * EVENTS);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, drops);
	assert_int_equal(drops[ADA_LANE_INDEX][ADA_DROP_NO_SLOT], 0);
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_wait_for_slot)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
