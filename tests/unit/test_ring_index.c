/*
 * Unit tests of src/ring: the index ring (wrap-around, full/empty,
 * watermarks, drop policies and their counters), slot life (claim, exit,
 * free, reuse with a generation bump), sizing, and the config text.
 *
 * Each test makes its own arena in a fresh directory and hands it to the
 * producer API; the test's main thread is the producer and also plays the
 * drain (peek/release), so everything here is deterministic.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"
#include "ring_internal.h"

struct fixture {
	char dir[64];
	char path[128];
	struct ada_arena *a;
};

static int fx_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-ring-test-XXXXXX");
	if (!mkdtemp(f->dir)) {
		snprintf(f->dir, sizeof(f->dir), "/tmp/ada-ring-test-XXXXXX");
		if (!mkdtemp(f->dir))
			return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/arena.ring", f->dir);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fixture *f = *state;
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(f->a);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct ada_arena *fx_arena(struct fixture *f, uint32_t threads, uint64_t events,
                                  uint32_t overflow)
{
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = threads;
	c.index_events = events;
	c.overflow = overflow;
	assert_int_equal(ada_arena_create(f->path, &c, &f->a, NULL), 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(f->a);
	return f->a;
}

/* The slot the calling thread produces into (after its first event). */
static uint32_t my_slot(void)
{
	assert_non_null(ada_producer_tls.events);
	return ada_producer_tls.slot;
}

/* Wait marker pairs drain_slot() saw (a producer waited for room). */
static uint64_t drained_waits;

/* Consumes up to max events of a slot, checking function ids run on from
 * *next (wait markers, in BEGIN/END pairs, between them); returns how many
 * were consumed. */
static size_t drain_slot(struct ada_arena *a, uint32_t slot, uint64_t *next, size_t max)
{
	static bool in_wait;
	size_t total = 0;
	while (total < max) {
		const struct atf_index_event *e;
		size_t n = ada_index_ring_peek(a, slot, &e);
		if (n == 0)
			break;
		if (n > max - total)
			n = max - total;
		for (size_t i = 0; i < n; i++) {
			if (ada_wait_marker(e[i].event_kind, e[i].call_depth)) {
				assert_int_equal(e[i].call_depth == ADA_WAIT_MARKER_BEGIN,
				                 !in_wait);
				in_wait = !in_wait;
				drained_waits += !in_wait;
				continue;
			}
			assert_false(in_wait);
			assert_int_equal(e[i].function_id, *next);
			assert_int_equal(e[i].detail_seq, ATF_NO_DETAIL);
			(*next)++;
		}
		ada_index_ring_release(a, slot, n);
		total += n;
	}
	return total;
}

/* The creator states its machine, its counter's rate and one (counter,
 * boottime) pair read side by side (ada_arena_origin: how a recorder of
 * another architecture converts the events); a reader's open sees them. */
static void test_origin(void **state)
{
	struct fixture *f = *state;
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t before = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t c0 = ada_tsc();
	struct ada_arena *a = fx_arena(f, 1, 64, ADA_OVERFLOW_DROP), *r = NULL;
	uint64_t c1 = ada_tsc();
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t after = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	assert_int_equal(ada_arena_open(f->path, &r), 0);
	struct ada_arena_origin o;
	ada_arena_origin(r, &o);
	assert_int_equal(o.machine, ada_arena_native_machine());
	assert_int_equal(o.counter_hz, ada_counter_hz());
	assert_true(o.anchor_counter >= c0 && o.anchor_counter <= c1);
	assert_true(o.anchor_ns >= before && o.anchor_ns <= after);
	ada_arena_close(r);
	(void)a;
}

static void test_empty_then_wraparound(void **state)
{
	struct ada_arena *a = fx_arena(*state, 2, 64, ADA_OVERFLOW_DROP);
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(a, 0, &e), 0); /* no slot yet: empty */
	assert_int_equal(ada_index_ring_peek(a, 1, &e), 0);
	uint64_t next = 0, emitted = 0;
	/* 10 rounds of 40 events through a 64-event ring: crosses the wrap
	 * point several times, at different offsets. */
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 40; i++)
			ada_emit(emitted++, ATF_EVENT_CALL, 1);
		assert_int_equal(drain_slot(a, my_slot(), &next, SIZE_MAX), 40);
	}
	assert_int_equal(next, 400);
	assert_int_equal(ada_index_ring_peek(a, my_slot(), &e), 0);
	struct ada_slot_info si;
	ada_arena_slot_info(a, my_slot(), &si);
	assert_int_equal(si.head, 400);
	assert_int_equal(si.tail, 400);
	assert_int_equal(si.state, ADA_SLOT_ACTIVE);
	assert_int_equal(si.tid, (uint32_t)getpid()); /* the main thread */
	for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
		assert_int_equal(si.drops[ADA_LANE_INDEX][r], 0);
}

static void test_peek_stops_at_wrap_point(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	uint64_t next = 0;
	for (int i = 0; i < 50; i++)
		ada_emit((uint64_t)i, ATF_EVENT_CALL, 1);
	assert_int_equal(drain_slot(a, 0, &next, 50), 50);
	for (int i = 50; i < 100; i++)
		ada_emit((uint64_t)i, ATF_EVENT_RETURN, 1);
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(a, 0, &e), 14); /* 50..63 */
	assert_int_equal(e[0].event_kind, ATF_EVENT_RETURN);
	assert_int_equal(drain_slot(a, 0, &next, 14), 14);
	assert_int_equal(ada_index_ring_peek(a, 0, &e), 36); /* the rest, from index 0 */
	assert_int_equal(drain_slot(a, 0, &next, SIZE_MAX), 36);
	assert_int_equal(next, 100);
}

static void test_full_drop_policy_counts(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	for (int i = 0; i < 100; i++)
		ada_emit((uint64_t)i, ATF_EVENT_CALL, 1);
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.head - si.tail, 64);
	assert_int_equal(si.fill_pct, 100);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 36);
	uint64_t next = 0;
	assert_int_equal(drain_slot(a, 0, &next, SIZE_MAX), 64); /* the first 64 kept */
	ada_emit(1000, ATF_EVENT_CALL, 1);                       /* room again: accepted */
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(a, 0, &e), 1);
	assert_int_equal(e[0].function_id, 1000);
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, tot);
	assert_int_equal(tot[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 36);
	assert_int_equal(tot[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG], 0);
}

static void test_watermarks(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	assert_int_equal(ada_ring_fill_pct(10, 10, 64), 0);
	assert_int_equal(ada_ring_fill_pct(74, 10, 64), 100);
	assert_int_equal(ada_ring_fill_pct(42, 10, 64), 50);
	for (int i = 0; i < 31; i++) /* 31/64 = 48 % */
		ada_emit((uint64_t)i, ATF_EVENT_CALL, 1);
	assert_int_equal(ada_arena_slot_fill_pct(a, 0), 48);
	assert_false(ada_arena_above_high_watermark(a, 0));
	ada_emit(31, ATF_EVENT_CALL, 1); /* 32/64 = 50 % = hw, the default */
	assert_true(ada_arena_above_high_watermark(a, 0));
	uint64_t next = 0;
	drain_slot(a, 0, &next, 1); /* 31 left = 48 % */
	assert_false(ada_arena_above_high_watermark(a, 0));
}

/* WAIT policy with no drain at all: the producer must give up after the
 * drain timeout (DRAIN_LAG), and then drop at once while the heartbeat
 * stands still; a heartbeat makes it wait again. */
static void test_wait_policy_drain_lag(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_WAIT);
	ada_producer_set_drain_timeout_ms(20);
	for (int i = 0; i < 64; i++)
		ada_emit((uint64_t)i, ATF_EVENT_CALL, 1);
	ada_emit(64, ATF_EVENT_CALL, 1); /* waits ~20 ms, then drops */
	ada_emit(65, ATF_EVENT_CALL, 1); /* drops at once */
	/* One wait, counted with its duration: it gave up only once the
	 * heartbeat had stood still for the timeout (a bound the logic
	 * guarantees, not a timing). The drop at once is no wait. */
	uint64_t waits, ns;
	ada_index_ring_waits(a, 0, &waits, &ns);
	assert_int_equal(waits, 1);
	assert_true(ns >= 20000000u);
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG], 2);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 0);
	assert_int_equal(si.head, 64);
	uint64_t next = 0;
	drain_slot(a, 0, &next, 3);
	ada_arena_drain_heartbeat(a);
	/* Room for the wait's markers and the event: the wait that ended in
	 * the drop goes in first (producer_pend_wait), then the event. */
	ada_emit(64, ATF_EVENT_CALL, 1);
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.head, 67);
	uint64_t waits2, ns2;
	ada_index_ring_waits(a, 0, &waits2, &ns2);
	assert_int_equal(waits2, 1); /* room: no wait */
	assert_int_equal(ns2, ns);
	ada_producer_set_drain_timeout_ms(2000);
}

struct waiter {
	uint64_t count;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	for (uint64_t i = 0; i < w->count; i++)
		ada_emit(i, ATF_EVENT_CALL, 1);
	return NULL;
}

/* WAIT policy is lossless: a producer blocked on a full ring goes on as
 * soon as the drain makes room. */
static void test_wait_policy_lossless(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_WAIT);
	struct waiter w = {.count = 5000};
	drained_waits = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	uint64_t next = 0;
	while (next < w.count) {
		ada_arena_drain_heartbeat(a);
		drain_slot(a, 0, &next, SIZE_MAX);
		sched_yield();
	}
	pthread_join(t, NULL);
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.head, 5000 + 2 * drained_waits); /* two markers a wait */
	for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
		assert_int_equal(si.drops[ADA_LANE_INDEX][r], 0);
}

static void *one_event_main(void *arg)
{
	ada_emit((uint64_t)(uintptr_t)arg, ATF_EVENT_CALL, 1);
	return NULL;
}

static void run_one_event_thread(uint64_t fn)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, one_event_main, (void *)(uintptr_t)fn), 0);
	pthread_join(t, NULL);
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

static void test_slot_claim_exit_free_reuse(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.state, ADA_SLOT_FREE);
	assert_int_equal(si.generation, 0);
	run_one_event_thread(7);
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.state, ADA_SLOT_EXITED); /* the key destructor ran */
	assert_int_equal(si.generation, 1);
	assert_int_equal(si.thread_seq, 0);
	assert_false(ada_arena_slot_reclaimable(a, 0)); /* not drained yet */
	assert_int_equal(ada_arena_slot_free(a, 0), -EBUSY);
	uint64_t next = 7;
	assert_int_equal(drain_slot(a, 0, &next, SIZE_MAX), 1);
	assert_true(reclaimable_soon(a, 0)); /* joined: tid is gone */
	/* The thread's waits for ring space (as if it had waited) go with
	 * it: the next owner starts from 0. */
	_Atomic uint64_t *ws = ring_index_hdr(a, 0)->wait_stat;
	atomic_store(&ws[0], 3);
	atomic_store(&ws[1], 12345);
	assert_int_equal(ada_arena_slot_free(a, 0), 0);
	uint64_t waits, ns;
	ada_index_ring_waits(a, 0, &waits, &ns);
	assert_int_equal(waits, 0);
	assert_int_equal(ns, 0);
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.state, ADA_SLOT_FREE);
	run_one_event_thread(8); /* reuses the only slot */
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.generation, 2);
	assert_int_equal(si.thread_seq, 1);
	assert_int_equal(si.head, 2); /* positions continue */
	next = 8;
	assert_int_equal(drain_slot(a, 0, &next, SIZE_MAX), 1);
	assert_int_equal(ada_arena_slot_free(a, 99), -EINVAL);
}

static void test_no_slot_drops(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	ada_emit(1, ATF_EVENT_CALL, 1); /* main thread takes the only slot */
	run_one_event_thread(2);        /* no slot: dropped and counted */
	run_one_event_thread(3);
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, tot);
	assert_int_equal(tot[ADA_LANE_INDEX][ADA_DROP_NO_SLOT], 2);
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(a, 0, &e), 1);
	assert_int_equal(e[0].function_id, 1);
}

static void test_drops_survive_slot_free(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	struct waiter w = {.count = 70}; /* 6 over capacity */
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	pthread_join(t, NULL);
	uint64_t next = 0;
	drain_slot(a, 0, &next, SIZE_MAX);
	assert_int_equal(ada_arena_slot_free(a, 0), 0);
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 0); /* folded */
	uint64_t tot[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, tot);
	assert_int_equal(tot[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 6);
}

static void test_process_state_and_heartbeat(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	int info = -1;
	assert_int_equal(ada_arena_pid(a), getpid());
	assert_int_equal(ada_arena_process_state(a, &info), ADA_PROC_RUNNING);
	ada_arena_set_exited(a, 3);
	assert_int_equal(ada_arena_process_state(a, &info), ADA_PROC_EXITED);
	assert_int_equal(info, 3);
	ada_arena_set_crashed(a, 11);
	assert_int_equal(ada_arena_process_state(a, &info), ADA_PROC_CRASHED);
	assert_int_equal(info, 11);
	assert_int_equal(ada_arena_heartbeat(a), 0);
	ada_arena_drain_heartbeat(a);
	ada_arena_drain_heartbeat(a);
	assert_int_equal(ada_arena_heartbeat(a), 2);
	struct ada_metrics *m = ada_arena_metrics(a);
	atomic_store(&m->events_written[ADA_LANE_INDEX], 42);
	struct ada_arena *b;
	struct fixture *f = *state;
	assert_int_equal(ada_arena_open(f->path, &b), 0); /* a second mapping sees it */
	assert_int_equal(atomic_load(&ada_arena_metrics(b)->events_written[ADA_LANE_INDEX]), 42);
	assert_int_equal(ada_arena_heartbeat(b), 2);
	ada_arena_close(b);
}

/* The crash record: absent until written, first thread wins, seen by a
 * second mapping (the drain), and the process state follows. */
static void test_crash_record(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 64, ADA_OVERFLOW_DROP);
	struct ada_crash_info ci;
	assert_false(ada_arena_crash_info(a, &ci));
	struct ada_crash_info w = {.signo = 11, .code = 1, .tid = 4242, .addr = 0x10, .ts_raw = 99};
	assert_true(ada_arena_record_crash(a, &w));
	struct ada_crash_info w2 = {.signo = 6, .tid = 4243};
	assert_false(ada_arena_record_crash(a, &w2)); /* a second death: the first stands */
	struct ada_arena *b;
	struct fixture *f = *state;
	assert_int_equal(ada_arena_open(f->path, &b), 0);
	assert_true(ada_arena_crash_info(b, &ci));
	assert_int_equal(ci.signo, 11);
	assert_int_equal(ci.code, 1);
	assert_int_equal(ci.tid, 4242);
	assert_int_equal(ci.addr, 0x10);
	assert_int_equal(ci.ts_raw, 99);
	int info = 0;
	assert_int_equal(ada_arena_process_state(b, &info), ADA_PROC_CRASHED);
	assert_int_equal(info, 11);
	ada_arena_close(b);
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ts=clock: every event takes the slow path and carries CLOCK_BOOTTIME ns;
 * ts=tsc: raw cycle counts, non-decreasing on one thread. */
static void test_timestamp_sources(void **state)
{
	struct fixture *f = *state;
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = 1;
	c.index_events = 64;
	c.overflow = ADA_OVERFLOW_DROP;
	c.timestamp_source = ADA_TS_CLOCK;
	assert_int_equal(ada_arena_create(f->path, &c, &f->a, NULL), 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(f->a);
	uint64_t t0 = boottime_ns();
	for (int i = 0; i < 100; i++) /* 36 over capacity: still counted */
		ada_emit_call((uint64_t)i);
	uint64_t t1 = boottime_ns();
	assert_int_equal(ada_producer_tls.limit, 0);
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(f->a, 0, &e), 64);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(e[i].function_id, i);
		assert_int_equal(e[i].call_depth, i + 1);
		assert_true(e[i].timestamp_ns >= t0 && e[i].timestamp_ns <= t1);
		if (i)
			assert_true(e[i].timestamp_ns >= e[i - 1].timestamp_ns);
	}
	struct ada_slot_info si;
	ada_arena_slot_info(f->a, 0, &si);
	assert_int_equal(si.drops[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 36);
	ada_producer_depth = 0;
}

static void test_tsc_timestamps(void **state)
{
	struct ada_arena *a = fx_arena(*state, 1, 1024, ADA_OVERFLOW_DROP);
	uint64_t t0 = ada_tsc();
	for (int i = 0; i < 1000; i++)
		ada_emit((uint64_t)i, ATF_EVENT_CALL, 1);
	uint64_t t1 = ada_tsc();
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(a, 0, &e), 1000);
	for (int i = 0; i < 1000; i++) {
		assert_true(e[i].timestamp_ns >= t0 && e[i].timestamp_ns <= t1);
		if (i)
			assert_true(e[i].timestamp_ns >= e[i - 1].timestamp_ns);
		assert_int_equal(e[i].thread_id, (uint32_t)getpid());
	}
}

static void test_capacity_for_rate(void **state)
{
	(void)state;
	assert_int_equal(ada_ring_capacity_for_rate(10000000, 50), 524288); /* 500 000 */
	assert_int_equal(ada_ring_capacity_for_rate(1000, 1000), 1024);
	assert_int_equal(ada_ring_capacity_for_rate(1024, 1000), 1024); /* exact power */
	assert_int_equal(ada_ring_capacity_for_rate(1025, 1000), 2048);
	assert_int_equal(ada_ring_capacity_for_rate(0, 100), ADA_RING_MIN_EVENTS);
	assert_int_equal(ada_ring_capacity_for_rate(UINT64_MAX, UINT64_MAX), ADA_RING_MAX_EVENTS);
}

static void test_size_for(void **state)
{
	(void)state;
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	uint64_t s1 = ada_arena_size_for(&c);
	assert_true(s1 > c.max_threads * c.index_events * 32);
	assert_int_equal(s1 % ADA_CACHELINE, 0);
	c.detail_bytes = 1 << 16;
	assert_true(ada_arena_size_for(&c) >= s1 + (uint64_t)c.max_threads * (1 << 16));
	c.index_events = 1000; /* not a power of two */
	assert_int_equal(ada_arena_size_for(&c), 0);
}

static void test_config_round_trip(void **state)
{
	(void)state;
	struct ada_arena_config c, d;
	ada_arena_config_default(&c);
	c.max_threads = 300;
	c.index_events = 1 << 20;
	c.detail_bytes = 1 << 16;
	c.overflow = ADA_OVERFLOW_DROP;
	c.timestamp_source = ADA_TS_CLOCK;
	c.high_watermark_pct = 90;
	char buf[ADA_ARENA_CONFIG_TEXT_MAX];
	int n = ada_arena_config_format(&c, buf, sizeof(buf));
	assert_true(n > 0);
	assert_string_equal(buf, "max_threads=300,index_events=1048576,detail_bytes=65536,"
	                         "overflow=drop,ts=clock,hw=90");
	assert_int_equal(ada_arena_config_parse(buf, (size_t)n, &d), 0);
	assert_memory_equal(&c, &d, sizeof(c));
	assert_int_equal(ada_arena_config_format(&c, buf, 10), -ENOSPC);
	/* The key-symbol area: a power of two in bytes, kept as its log2. */
	c.keysym_log2 = ADA_KEYSYM_AREA_MAX_LOG2;
	n = ada_arena_config_format(&c, buf, sizeof(buf));
	assert_true(n > 0 && strstr(buf, ",keysym_bytes=268435456"));
	assert_int_equal(ada_arena_config_parse(buf, (size_t)n, &d), 0);
	assert_memory_equal(&c, &d, sizeof(c));
	assert_int_equal(ada_arena_config_parse("keysym_bytes=3000", 17, &d), -EINVAL);
	assert_int_equal(ada_arena_config_parse("keysym_bytes=1024", 17, &d), -EINVAL);
	c.keysym_log2 = 0;
	/* Partial text keeps the defaults; the parser takes (buf, len). */
	assert_int_equal(ada_arena_config_parse("overflow=drop,XXXX", 13, &d), 0);
	assert_int_equal(d.overflow, ADA_OVERFLOW_DROP);
	assert_int_equal(d.index_events, ADA_ARENA_DEFAULT_INDEX_EVENTS);
	assert_int_equal(ada_arena_config_parse("", 0, &d), 0);
}

static void test_config_rejects(void **state)
{
	(void)state;
	static const char *bad[] = {
	    "max_threads=0",
	    "max_threads=99999",
	    "index_events=1000",
	    "index_events=32",
	    "detail_bytes=5000",
	    "detail_bytes=1024",
	    "overflow=maybe",
	    "ts=hpet",
	    "hw=0",
	    "hw=101",
	    "lw=10", /* the low watermark is no more: an unknown key */
	    "nokey=1",
	    "max_threads",
	    "max_threads=-1",
	    "max_threads= 4",
	    "index_events=99999999999999999999",
	    "max_threads=4294967296",
	};
	struct ada_arena_config d;
	ada_arena_config_default(&d);
	struct ada_arena_config keep = d;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = ada_arena_config_parse(bad[i], strlen(bad[i]), &d);
		if (r != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_memory_equal(&d, &keep, sizeof(d)); /* untouched on error */
	}
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(buf, 1, len, fp), len);
	fclose(fp);
}

static void test_open_rejects_garbage(void **state)
{
	struct fixture *f = *state;
	struct ada_arena *b = NULL;
	char junk[8192];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	write_file(f->path, junk, sizeof(junk));
	assert_int_equal(ada_arena_open(f->path, &b), -EPROTO);
	write_file(f->path, junk, 10); /* shorter than the control block */
	assert_int_equal(ada_arena_open(f->path, &b), -EPROTO);
	write_file(f->path, junk, 0);
	assert_int_equal(ada_arena_open(f->path, &b), -EPROTO);
	unlink(f->path);
	assert_int_equal(ada_arena_open(f->path, &b), -ENOENT);
	assert_int_equal(ada_arena_open(f->dir, &b), -EISDIR);
	assert_null(b);
}

/* A real arena, then damaged one way at a time: each must be refused. */
static void test_open_rejects_damaged_arena(void **state)
{
	struct fixture *f = *state;
	struct ada_arena *a = fx_arena(f, 2, 64, ADA_OVERFLOW_DROP);
	ada_emit(1, ATF_EVENT_CALL, 1);
	uint64_t size = ada_arena_size_for(ada_arena_config_of(a));
	uint8_t *copy = malloc(size);
	FILE *fp = fopen(f->path, "rb");
	assert_int_equal(fread(copy, 1, size, fp), size);
	fclose(fp);
	char other[160];
	snprintf(other, sizeof(other), "%s/damaged.ring", f->dir);
	struct ada_arena *b;
	write_file(other, copy, size); /* intact copy opens */
	assert_int_equal(ada_arena_open(other, &b), 0);
	ada_arena_close(b);
	write_file(other, copy, size - 64); /* truncated */
	assert_int_equal(ada_arena_open(other, &b), -EPROTO);
	/* One byte at a time over the control block's fixed part: magic,
	 * version, control size, layout size, four offsets (56 bytes), then
	 * the config. Each flip must be refused. */
	for (size_t off = 0; off < 56 + sizeof(struct ada_arena_config); off++) {
		copy[off] ^= 0x40;
		write_file(other, copy, size);
		int r = ada_arena_open(other, &b);
		if (r != -EPROTO)
			fail_msg("byte %zu flipped: open returned %d", off, r);
		copy[off] ^= 0x40;
	}
	free(copy);
	unlink(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_origin, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_then_wraparound, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_peek_stops_at_wrap_point, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_full_drop_policy_counts, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_watermarks, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_wait_policy_drain_lag, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_wait_policy_lossless, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_slot_claim_exit_free_reuse, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_no_slot_drops, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_drops_survive_slot_free, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_crash_record, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_process_state_and_heartbeat, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_timestamp_sources, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_tsc_timestamps, fx_setup, fx_teardown),
	    cmocka_unit_test(test_capacity_for_rate),
	    cmocka_unit_test(test_size_for),
	    cmocka_unit_test(test_config_round_trip),
	    cmocka_unit_test(test_config_rejects),
	    cmocka_unit_test_setup_teardown(test_open_rejects_garbage, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_open_rejects_damaged_arena, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
