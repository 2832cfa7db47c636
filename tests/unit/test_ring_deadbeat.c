/*
 * A recorder that died costs the process one drain timeout, not one per
 * thread (issue 14): no drain runs here, so the heartbeat never moves. The
 * first thread fills its ring, waits the (short) timeout and drops; then
 * the timeout is raised to an hour and a second thread fills its ring: it
 * must drop at once -- were it to wait, the test would hang until CTest's
 * run-away timeout kills it. Every event is counted (written or
 * drain_lag), none lost silently.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"
#include "test_arena.h"

#define RING 1024
#define EVENTS (3 * RING)

static void *producer_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < EVENTS; i++)
		ada_emit(1, ATF_EVENT_CALL, 1);
	return NULL;
}

static void run_thread(void)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, producer_main, NULL), 0);
	pthread_join(t, NULL);
}

static void test_dead_drain_once(void **state)
{
	(void)state;
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 4;
	cfg.index_events = RING;
	cfg.overflow = ADA_OVERFLOW_WAIT;
	struct ada_arena *a = test_arena_new(&cfg);
	ada_producer_set_arena(a);

	ada_producer_set_drain_timeout_ms(50);
	run_thread();
	ada_producer_set_drain_timeout_ms(3600u * 1000u);
	run_thread();

	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, drops);
	/* Each thread wrote one ring's worth; the rest was counted. */
	assert_int_equal(drops[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG], 2 * (EVENTS - RING));
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

/* A wait that ends in a drop (the drain stood still for the timeout) is
 * still marked: the ring had no room then, so its markers go in before
 * the first event that finds room once the drain is back. */
static void test_drop_wait_marked(void **state)
{
	(void)state;
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 2;
	cfg.index_events = 64;
	cfg.overflow = ADA_OVERFLOW_WAIT;
	struct ada_arena *a = test_arena_new(&cfg);
	ada_producer_reset_thread();
	ada_producer_set_arena(a);
	ada_producer_set_drain_timeout_ms(20);
	for (uint64_t k = 1; k <= 65; k++) /* the 65th waits, then drops */
		ada_emit(k, ATF_EVENT_CALL, 1);
	struct ada_producer *p = &ada_producer_tls;
	assert_true(p->wpend_end != 0);
	const struct atf_index_event *e;
	uint32_t slot = p->slot;
	size_t n = ada_index_ring_peek(a, slot, &e);
	assert_int_equal(n, 64);
	ada_index_ring_release(a, slot, n);
	ada_arena_drain_heartbeat(a); /* the drain is back */
	ada_emit(66, ATF_EVENT_CALL, 1);
	n = ada_index_ring_peek(a, slot, &e);
	assert_int_equal(n, 3);
	assert_true(ada_wait_marker(e[0].event_kind, e[0].call_depth) &&
	            e[0].call_depth == ADA_WAIT_MARKER_BEGIN);
	assert_true(ada_wait_marker(e[1].event_kind, e[1].call_depth) &&
	            e[1].call_depth == ADA_WAIT_MARKER_END);
	assert_true(e[0].timestamp_ns < e[1].timestamp_ns &&
	            e[1].timestamp_ns <= e[2].timestamp_ns);
	assert_int_equal(e[2].function_id, 66);
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, drops);
	assert_int_equal(drops[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG], 1); /* event 65, counted */
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_drop_wait_marked),
	                                   cmocka_unit_test(test_dead_drain_once)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
