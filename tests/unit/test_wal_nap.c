/*
 * The nap after a busy pass for slow threads (src/recorder/drain_room.c):
 * past drain_nap()'s longest room-bound nap, as long as every ring read
 * has room for a margin over the fastest rate its thread was measured
 * at, at most DRAIN_NAP_SLOW_US; never longer for a ring whose rate is
 * unknown, whose take stopped at its budget, that has no room or whose
 * thread waited for ring space. The times are the test's own: a rate
 * measured over at least the time the test set is at most the rate it
 * wrote, so every bound below holds however late the test runs.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"
#include "drain_internal.h"

#define CAP 65536u
#define NAP_US 500u /* drain.c DRAIN_NAP_US */
#define MARGIN 2u   /* drain_room.c DRAIN_NAP_SLOW_MARGIN */

struct fx {
	char path[64];
	struct ada_arena *a;
	struct wal_proc p;
	struct wal_thread t;
	struct ada_recorder *r;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/dev/shm/ada-test-nap-%d", (int)getpid());
	unlink(f->path);
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 1;
	cfg.index_events = CAP;
	assert_int_equal(ada_arena_create(f->path, &cfg, &f->a, NULL), 0);
	f->p.arena = f->a;
	f->p.ring_events = CAP;
	f->p.high_watermark_pct = 50;
	f->r = calloc(1, sizeof(*f->r));
	f->r->pass_room_after = UINT64_MAX;
	f->r->pass_slow_ns = UINT64_MAX;
	f->r->pass_fill_ns = UINT64_MAX;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	ada_arena_close(f->a);
	unlink(f->path);
	free(f->r);
	free(f);
	return 0;
}

/* The thread wrote `wrote` events since a look `ago_ns` before now, and
 * `left` of them are still in the ring after the take: the rate's note,
 * then the room's. Returns the rate noted (ns per 1 024 events). */
static uint64_t pass(struct fx *f, uint64_t wrote, uint64_t ago_ns, uint64_t left, bool cut)
{
	struct ada_slot_info si = {0};
	si.head = f->t.fill_head + wrote;
	si.tail = f->t.fill_head;
	f->t.fill_ns = ago_ns ? wal_now_ns() - ago_ns : 0;
	uint64_t kev = drain_note_fill(f->r, &f->p, 0, &f->t, &si);
	f->a->cons[0].head = si.head;
	f->a->cons[0].tail = si.head - left;
	drain_note_room_after(f->r, &f->p, 0, cut, kev);
	return kev;
}

/* 1 024 events in at least 1 ms (1 M events/s at most) with the ring all
 * but empty: the nap is the longest there is. */
static void test_slow_thread_naps_longest(void **state)
{
	struct fx *f = *state;
	assert_true(pass(f, 1024, 1000000, 16, false) >= 1000000);
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), 2000);
}

/* The rate bounds the nap: room for CAP - 1 024 events at MARGIN x the
 * rate of 8 192 events in at least 300 us is at least 1.18 ms. */
static void test_rate_bounds_nap(void **state)
{
	struct fx *f = *state;
	pass(f, 8192, 300000, 1024, false);
	uint64_t us = drain_nap_slow(f->r, NAP_US, NAP_US);
	assert_true(us >= (CAP - 1024) * 300 / 8192 / MARGIN && us <= 2000);
}

/* A thread once measured fast keeps the nap short when a later look finds
 * it slower (descheduled, say): its next burst runs at the fast rate. */
static void test_fastest_rate_kept(void **state)
{
	struct fx *f = *state;
	f->t.nap_kev = 10000; /* 102 M events/s: the room lasts 315 us */
	pass(f, 1024, 1000000, 16, false);
	assert_int_equal(f->t.nap_kev, 10000);
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), NAP_US);
}

/* A thread that waited for ring space since the last look: the drain was
 * late, no longer nap. */
static void test_waited_no_longer_nap(void **state)
{
	struct fx *f = *state;
	f->t.ring_waits = 1;
	pass(f, 1024, 1000000, 16, false);
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), NAP_US);
	f->r->pass_slow_ns = UINT64_MAX;
	pass(f, 1024, 1000000, 16, false); /* no wait since */
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), 2000);
}

/* A room-bound nap shorter than its longest is the drain's: the rings
 * have less room than a fast thread needs, whatever the rate says. */
static void test_short_room_nap_kept(void **state)
{
	struct fx *f = *state;
	pass(f, 1024, 1000000, 16, false);
	assert_int_equal(drain_nap_slow(f->r, 200, NAP_US), 200);
}

/* No longer nap for a take cut at its budget, a ring at its high
 * watermark or a rate not known yet (a thread's first pass). */
static void test_no_longer_nap(void **state)
{
	struct fx *f = *state;
	pass(f, 1024, 1000000, 16, true);
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), NAP_US);
	f->r->pass_slow_ns = UINT64_MAX;
	pass(f, 1024, 1000000, CAP / 2, false);
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), NAP_US);
	f->r->pass_slow_ns = UINT64_MAX;
	assert_int_equal(pass(f, 1024, 0, 16, false), 0);
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), NAP_US);
}

/* A thread that wrote nothing since is bounded by its fastest rate, no
 * more; and no ring read at all leaves the room-bound nap. */
static void test_idle_ring_bounds_nothing(void **state)
{
	struct fx *f = *state;
	assert_int_equal(drain_nap_slow(f->r, NAP_US, NAP_US), NAP_US);
	pass(f, 1024, 100000, 1024, false);
	uint64_t before = f->r->pass_slow_ns;
	pass(f, 0, 100000, 0, false);
	assert_int_equal(f->r->pass_slow_ns, before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_slow_thread_naps_longest, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_rate_bounds_nap, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fastest_rate_kept, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_waited_no_longer_nap, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_short_room_nap_kept, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_no_longer_nap, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_idle_ring_bounds_nothing, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
