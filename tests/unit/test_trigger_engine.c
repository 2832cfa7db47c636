/*
 * The trigger engine on synthetic index streams: symbol and latency fires,
 * window merging, hold-off, max-windows, the p99 estimator, time ranges
 * (clock injected), manual fires, stacks at death, and a trigger added
 * from another thread while the drain feeds. No clock is read: every
 * timestamp is made up.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trigger.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define T0 (100 * SEC)

/* fn_id -> name: module 1, symbols 1..4. */
static const char *names(void *ctx, uint64_t fn)
{
	(void)ctx;
	static const char *const n[] = {NULL,        "handle_request", "parse",
	                                "abort_txn", "helper",         "rare.constprop.0"};
	uint32_t sym = (uint32_t)fn;
	return (fn >> 32) == 1 && sym < 6 ? n[sym] : NULL;
}
#define FN(i) ((1ull << 32) | (i))

struct rig {
	struct ada_trigger_engine *e;
	struct ada_trigger_proc *p;
	struct ada_trigger_thread *t;
	uint32_t depth;
};

static void rig_init(struct rig *r, uint64_t pre, uint64_t post, uint32_t maxw, uint64_t hold)
{
	struct ada_trigger_opts o = {
	    .pre_ns = pre, .post_ns = post, .max_windows = maxw, .holdoff_ns = hold};
	memset(r, 0, sizeof(*r));
	assert_int_equal(ada_trigger_engine_new(&o, &r->e), 0);
	assert_int_equal(ada_trigger_proc_new(r->e, names, NULL, &r->p), 0);
	assert_int_equal(ada_trigger_thread_new(r->p, 77, &r->t), 0);
}

static void rig_fini(struct rig *r)
{
	ada_trigger_thread_free(r->t);
	ada_trigger_proc_free(r->p);
	ada_trigger_engine_free(r->e);
}

static void arm(struct rig *r, const char *text, uint64_t now)
{
	struct ada_trigger_spec s;
	assert_int_equal(ada_trigger_parse(text, &s, NULL, 0), 0);
	assert_int_equal(ada_trigger_add(r->e, &s, now, NULL), 0);
}

static void ev(struct rig *r, uint32_t kind, uint64_t fn, uint64_t ts)
{
	struct atf_index_event e = {.timestamp_ns = ts,
	                            .function_id = fn,
	                            .thread_id = 77,
	                            .event_kind = kind,
	                            .detail_seq = ATF_NO_DETAIL};
	if (kind == ATF_EVENT_CALL)
		e.call_depth = ++r->depth;
	else
		e.call_depth = r->depth--;
	ada_trigger_feed(r->t, &e, 1);
}

/* One call of fn from ts lasting dur. */
static void call(struct rig *r, uint64_t fn, uint64_t ts, uint64_t dur)
{
	ev(r, ATF_EVENT_CALL, fn, ts);
	ev(r, ATF_EVENT_RETURN, fn, ts + dur);
}

static const struct ada_trigger_window *win(struct rig *r, size_t i)
{
	return ada_trigger_window_at(r->e, i);
}

static void test_symbol_fires_window(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 1 * SEC, 500 * MS, 0, 0);
	arm(&r, "symbol=abort_*", 0);
	call(&r, FN(2), T0, 10);
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	call(&r, FN(3), T0 + SEC, 10);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	arm(&r, "symbol=rare", 0); /* matches gcc's clone rare.constprop.0 */
	call(&r, FN(5), T0 + 100 * SEC, 10);
	assert_int_equal(ada_trigger_window_count(r.e), 2);
	assert_int_equal(win(&r, 1)->fn_id, FN(5));
	const struct ada_trigger_window *w = win(&r, 0);
	assert_int_equal(w->fire_ns, T0 + SEC);
	assert_int_equal(w->from_ns, T0);
	assert_int_equal(w->to_ns, T0 + SEC + 500 * MS);
	assert_int_equal(w->fn_id, FN(3));
	assert_int_equal(w->tid, 77);
	assert_string_equal(w->trigger, "symbol=abort_*");
	rig_fini(&r);
}

/* Which armed triggers fired, by their text: the end of a recording asks,
 * rather than the symbol tables the budget may have deleted. */
static void test_fired_by_text(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 1 * SEC, 500 * MS, 0, 0);
	arm(&r, "symbol=abort_*", 0);
	arm(&r, "symbol=parse", 0);
	call(&r, FN(4), T0, 10);
	assert_false(ada_trigger_fired(r.e, "symbol=abort_*"));
	assert_false(ada_trigger_fired(r.e, "symbol=parse"));
	call(&r, FN(3), T0 + SEC, 10);
	assert_true(ada_trigger_fired(r.e, "symbol=abort_*"));
	assert_false(ada_trigger_fired(r.e, "symbol=parse"));
	assert_false(ada_trigger_fired(r.e, "symbol=helper")); /* never armed */
	rig_fini(&r);
}

static void test_latency_centred_on_return(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 1 * SEC, 1 * SEC, 0, 0);
	arm(&r, "p99=function:handle_request>50ms", 0);
	for (int i = 0; i < 999; i++)
		call(&r, FN(1), T0 + (uint64_t)i * MS, 10000); /* 10 us */
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	call(&r, FN(1), T0 + 2 * SEC, 60 * MS);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	const struct ada_trigger_window *w = win(&r, 0);
	uint64_t ret = T0 + 2 * SEC + 60 * MS;
	assert_int_equal(w->fire_ns, ret);
	assert_int_equal(w->from_ns, ret - SEC);
	assert_int_equal(w->to_ns, ret + SEC);
	assert_int_equal(w->duration_ns, 60 * MS);
	assert_int_equal(w->threshold_ns, 50 * MS);
	/* Exactly the threshold is not slower than it. */
	call(&r, FN(1), T0 + 10 * SEC, 50 * MS);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	rig_fini(&r);
}

/* Nested calls: the outer one is slow, the inner ones are not. */
static void test_latency_nested(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	arm(&r, "latency=function:handle_*>1ms", 0);
	ev(&r, ATF_EVENT_CALL, FN(1), T0);
	call(&r, FN(2), T0 + 1, 100);
	call(&r, FN(1), T0 + 200, 100); /* recursion: inner handle_request, fast */
	ev(&r, ATF_EVENT_RETURN, FN(1), T0 + 5 * MS);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	assert_int_equal(win(&r, 0)->duration_ns, 5 * MS);
	rig_fini(&r);
}

static void test_merge_overlapping(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	arm(&r, "symbol=parse", 0);
	call(&r, FN(2), T0, 1);
	call(&r, FN(2), T0 + SEC, 1);     /* overlaps: merged, extended */
	call(&r, FN(2), T0 + 5 * SEC, 1); /* apart: a new window */
	assert_int_equal(ada_trigger_window_count(r.e), 2);
	assert_int_equal(win(&r, 0)->from_ns, T0 - SEC);
	assert_int_equal(win(&r, 0)->to_ns, T0 + 2 * SEC);
	assert_int_equal(win(&r, 0)->fires, 2);
	assert_int_equal(win(&r, 1)->fire_ns, T0 + 5 * SEC);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.fires, 3);
	assert_int_equal(st.merged, 1);
	/* A closed window that a later fire overlaps reopens. */
	ada_trigger_window_close(r.e, 1);
	assert_true(win(&r, 1)->closed);
	call(&r, FN(2), T0 + 6 * SEC, 1);
	assert_false(win(&r, 1)->closed);
	assert_int_equal(win(&r, 1)->to_ns, T0 + 7 * SEC);
	rig_fini(&r);
}

static void test_holdoff(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 100 * MS, 100 * MS, 0, 2 * SEC);
	arm(&r, "symbol=parse", 0);
	for (int i = 0; i < 50; i++) /* every 100 ms for 5 s */
		call(&r, FN(2), T0 + (uint64_t)i * 100 * MS, 1);
	/* fires at 0, 2 s, 4 s pass; the rest are held off */
	assert_int_equal(ada_trigger_window_count(r.e), 3);
	assert_int_equal(win(&r, 1)->fire_ns, T0 + 2 * SEC);
	assert_int_equal(win(&r, 2)->fire_ns, T0 + 4 * SEC);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.fires, 50);
	assert_int_equal(st.held_off, 47);
	rig_fini(&r);
}

/* Latency and p99 triggers escalate through the hold-off: a call slower
 * than every one that fired since the hold-off began gets its window (a
 * call barely over a p99 must not hide the outlier after it); one no
 * slower is held off; a new hold-off period forgets the old worst. */
static void test_holdoff_escalation(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 10 * MS, 10 * MS, 0, 2 * SEC);
	arm(&r, "p99=function:handle_request>1ms", 0);
	uint64_t t = T0;
	/* durations in ms, calls 100 ms apart: 2 fires; 1.5 held (not
	 * slower than 2); 60 escalates; 3 and 60 held (not slower than 60);
	 * 61 escalates; then, past 2 s after the last fire, 2 fires again. */
	static const uint64_t dur_us[] = {2000, 1500, 60000, 3000, 60000, 61000};
	for (size_t k = 0; k < sizeof(dur_us) / sizeof(dur_us[0]); k++) {
		call(&r, FN(1), t, dur_us[k] * 1000);
		t += 100 * MS;
	}
	t += 3 * SEC;
	call(&r, FN(1), t, 2 * MS);
	assert_int_equal(ada_trigger_window_count(r.e), 4);
	assert_int_equal(win(&r, 0)->duration_ns, 2 * MS);
	assert_int_equal(win(&r, 1)->duration_ns, 60 * MS);
	assert_int_equal(win(&r, 2)->duration_ns, 61 * MS);
	assert_int_equal(win(&r, 3)->duration_ns, 2 * MS);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.fires, 7);
	assert_int_equal(st.held_off, 3);
	assert_int_equal(st.escalated, 2);
	rig_fini(&r);
}

static void test_max_windows(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 10 * MS, 10 * MS, 2, 0);
	arm(&r, "symbol=parse", 0);
	for (int i = 0; i < 10; i++)
		call(&r, FN(2), T0 + (uint64_t)i * SEC, 1);
	assert_int_equal(ada_trigger_window_count(r.e), 2);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.over_max, 8);
	/* A fire that overlaps an existing window still extends it. */
	call(&r, FN(2), T0 + SEC + 5 * MS, 1);
	assert_int_equal(win(&r, 1)->to_ns, T0 + SEC + 5 * MS + 10 * MS);
	/* A death is never refused. */
	assert_true(ada_trigger_fire_crash(r.e, T0 + 20 * SEC, 77) == false); /* no crash armed */
	arm(&r, "crash", 0);
	assert_true(ada_trigger_fire_crash(r.e, T0 + 20 * SEC, 77));
	assert_int_equal(ada_trigger_window_count(r.e), 3);
	assert_int_equal(win(&r, 2)->from_ns, T0 + 20 * SEC - 10 * MS);
	assert_int_equal(win(&r, 2)->to_ns, T0 + 20 * SEC);
	rig_fini(&r);
}

static void test_p2_estimator(void **state)
{
	(void)state;
	struct ada_trigger_p2 p;
	ada_trigger_p2_init(&p);
	assert_true(ada_trigger_p2_value(&p) == 0);
	ada_trigger_p2_add(&p, 3);
	ada_trigger_p2_add(&p, 7);
	assert_true(ada_trigger_p2_value(&p) == 7); /* few samples: the maximum */
	/* A deterministic permutation of 1..10000: p99 ~ 9900. */
	ada_trigger_p2_init(&p);
	for (uint64_t i = 0; i < 10000; i++)
		ada_trigger_p2_add(&p, (double)((i * 7919) % 10000 + 1));
	double v = ada_trigger_p2_value(&p);
	if (fabs(v - 9900) > 100)
		fail_msg("p99 of 1..10000 estimated as %f", v);
	/* Exponential-ish tail: 99 % at 10, 1 % at 1000 -> p99 between them. */
	ada_trigger_p2_init(&p);
	for (int i = 0; i < 20000; i++)
		ada_trigger_p2_add(&p, i % 100 == 99 ? 1000.0 : 10.0 + (i % 7));
	v = ada_trigger_p2_value(&p);
	assert_true(v >= 10 && v <= 1000);
}

static void test_p99_trigger(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	arm(&r, "p99=function:handle_request", 0);
	/* Below 100 calls nothing fires, however slow (20x the others). */
	for (int i = 0; i < 99; i++)
		call(&r, FN(1), T0 + (uint64_t)i * MS, i == 50 ? 20000 : 1000 + (uint64_t)(i % 10));
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	for (int i = 0; i < 3000; i++)
		call(&r, FN(1), T0 + SEC + (uint64_t)i * MS, 1000 + (uint64_t)(i % 10));
	size_t before = ada_trigger_window_count(r.e);
	call(&r, FN(1), T0 + 100 * SEC, 50 * MS); /* the outlier */
	assert_int_equal(ada_trigger_window_count(r.e), before + 1);
	const struct ada_trigger_window *w = win(&r, before);
	assert_int_equal(w->duration_ns, 50 * MS);
	if (w->threshold_ns >= 2000 || w->threshold_ns < 1000)
		fail_msg("p99 estimate %llu, windows before %zu",
		         (unsigned long long)w->threshold_ns, before);
	rig_fini(&r);
}

static void test_time_range(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, 2 * SEC, 3 * SEC, 0, 0);
	arm(&r, "time=10:30-10:45", 0);
	uint32_t t1029 = 10 * 3600 + 29 * 60;
	ada_trigger_tick(r.e, T0, t1029);
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	/* 10:31:10 at T0 + 130 s: the range began 70 s earlier. */
	ada_trigger_tick(r.e, T0 + 130 * SEC, t1029 + 130);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	const struct ada_trigger_window *w = win(&r, 0);
	assert_int_equal(w->fire_ns, T0 + 60 * SEC);
	assert_int_equal(w->from_ns, T0 + 58 * SEC);
	assert_int_equal(w->to_ns, T0 + 60 * SEC + 15 * 60 * SEC + 3 * SEC);
	/* Later ticks in the same range do not fire again. */
	ada_trigger_tick(r.e, T0 + 500 * SEC, t1029 + 500);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	rig_fini(&r);

	/* Across midnight: 23:50-00:10, first seen at 00:05. */
	rig_init(&r, 0, 0, 0, 0);
	arm(&r, "time=23:50-00:10", 0);
	ada_trigger_tick(r.e, T0 + 1000 * SEC, 300);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	assert_int_equal(win(&r, 0)->fire_ns, T0 + 1000 * SEC - 900 * SEC);
	assert_int_equal(win(&r, 0)->to_ns, T0 + 1000 * SEC + 300 * SEC);
	ada_trigger_tick(r.e, T0 + 2000 * SEC, 1300); /* 00:21: outside */
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	rig_fini(&r);
}

static void test_manual(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	assert_int_equal(ada_trigger_fire_manual(r.e, T0), 0);
	ada_trigger_tick(r.e, T0, 0);
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.manual_ignored, 1);
	arm(&r, "manual", T0);
	assert_int_equal(ada_trigger_fire_manual(r.e, T0 + SEC), 0);
	ada_trigger_tick(r.e, T0 + 2 * SEC, 0);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	assert_int_equal(win(&r, 0)->fire_ns, T0 + SEC);
	rig_fini(&r);
}

static void test_stack_and_crash_marker(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	ev(&r, ATF_EVENT_CALL, FN(1), T0);
	ev(&r, ATF_EVENT_CALL, FN(2), T0 + 1);
	call(&r, FN(4), T0 + 2, 1);
	ev(&r, ATF_EVENT_CALL, FN(3), T0 + 5);
	struct atf_index_event m = {.timestamp_ns = T0 + 6,
	                            .function_id = 0x10,
	                            .event_kind = ATF_EVENT_EXCEPTION,
	                            .call_depth = ADA_TRIGGER_CRASH_DEPTH_FLAG | 11};
	ada_trigger_feed(r.t, &m, 1);
	struct ada_trigger_frame f[8];
	uint32_t depth;
	size_t n = ada_trigger_thread_stack(r.t, f, 8, &depth);
	assert_int_equal(n, 3);
	assert_int_equal(depth, 3);
	assert_int_equal(f[0].fn_id, FN(3)); /* innermost first */
	assert_int_equal(f[1].fn_id, FN(2));
	assert_int_equal(f[2].fn_id, FN(1));
	uint64_t addr;
	assert_int_equal(ada_trigger_thread_crash(r.t, &addr), 11);
	assert_int_equal(addr, 0x10);
	/* A longjmp-style EXCEPTION at depth 2 closes frames 3 and 2. */
	struct atf_index_event x = {.timestamp_ns = T0 + 7,
	                            .function_id = FN(2),
	                            .event_kind = ATF_EVENT_EXCEPTION,
	                            .call_depth = 2};
	ada_trigger_feed(r.t, &x, 1);
	n = ada_trigger_thread_stack(r.t, f, 8, &depth);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].fn_id, FN(1));
	rig_fini(&r);
}

/* ada's wait for ring space between the CALL and the RETURN of fn. */
static void wait_marks(struct rig *r, uint64_t from, uint64_t to)
{
	struct atf_index_event m[2] = {
	    {.timestamp_ns = from,
	     .thread_id = 77,
	     .event_kind = ATF_EVENT_EXCEPTION,
	     .call_depth = ADA_WAIT_MARKER_BEGIN,
	     .detail_seq = ATF_NO_DETAIL},
	    {.timestamp_ns = to,
	     .thread_id = 77,
	     .event_kind = ATF_EVENT_EXCEPTION,
	     .call_depth = ADA_WAIT_MARKER_END,
	     .detail_seq = ATF_NO_DETAIL},
	};
	ada_trigger_feed(r->t, m, 2);
}

/* ada's waits are not the program's time: a call that only waited longer
 * than the threshold does not fire (nor do the markers themselves); a
 * call slow without its waits fires with the wait-free duration, its
 * caller's waits counted once (nested), and p99 learns wait-free
 * durations. The markers close no frame and are no crash. */
static void test_waits_never_fire(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	arm(&r, "latency=function:*>1ms", 0);
	ev(&r, ATF_EVENT_CALL, FN(1), T0);
	ev(&r, ATF_EVENT_CALL, FN(2), T0 + 100);
	wait_marks(&r, T0 + 200, T0 + 200 + 40 * MS); /* inside parse and handle_request */
	ev(&r, ATF_EVENT_RETURN, FN(2), T0 + 300 + 40 * MS);
	wait_marks(&r, T0 + 400 + 40 * MS, T0 + 400 + 90 * MS); /* inside handle_request */
	ev(&r, ATF_EVENT_RETURN, FN(1), T0 + 500 + 90 * MS);
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	assert_int_equal(ada_trigger_thread_crash(r.t, NULL), 0);
	uint32_t depth = 9;
	assert_int_equal(ada_trigger_thread_stack(r.t, NULL, 0, &depth), 0);
	assert_int_equal(depth, 0);
	/* Slow without its wait: fires with 2 ms, not 2 ms + 30 ms. */
	ev(&r, ATF_EVENT_CALL, FN(1), T0 + SEC);
	wait_marks(&r, T0 + SEC + MS, T0 + SEC + 31 * MS);
	ev(&r, ATF_EVENT_RETURN, FN(1), T0 + SEC + 32 * MS);
	size_t n = ada_trigger_window_count(r.e);
	assert_int_equal(n, 1);
	const struct ada_trigger_window *w = win(&r, n - 1);
	assert_int_equal(w->fn_id, FN(1));
	assert_int_equal(w->duration_ns, 2 * MS);
	assert_int_equal(w->threshold_ns, MS);
	/* An END without its BEGIN (cut off) takes nothing out. */
	struct atf_index_event end = {.timestamp_ns = T0 + 10 * SEC + 1,
	                              .thread_id = 77,
	                              .event_kind = ATF_EVENT_EXCEPTION,
	                              .call_depth = ADA_WAIT_MARKER_END,
	                              .detail_seq = ATF_NO_DETAIL};
	ev(&r, ATF_EVENT_CALL, FN(1), T0 + 10 * SEC);
	ada_trigger_feed(r.t, &end, 1);
	ev(&r, ATF_EVENT_RETURN, FN(1), T0 + 10 * SEC + 5 * MS);
	assert_int_equal(ada_trigger_window_count(r.e), n + 1);
	assert_int_equal(win(&r, n)->duration_ns, 5 * MS);
	rig_fini(&r);
}

/* p99 learns the program's durations: a run of calls that each waited
 * 20x their own time does not raise the estimate, so the outlier fires. */
static void test_waits_p99(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	arm(&r, "p99=function:handle_request", 0);
	for (int i = 0; i < 3000; i++) {
		uint64_t t = T0 + (uint64_t)i * MS;
		ev(&r, ATF_EVENT_CALL, FN(1), t);
		if (i % 2)
			wait_marks(&r, t + 10, t + 10 + 20000);
		ev(&r, ATF_EVENT_RETURN, FN(1), t + 1000 + (i % 2 ? 20000 : 0));
	}
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	call(&r, FN(1), T0 + 100 * SEC, 5000);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	assert_int_equal(win(&r, 0)->duration_ns, 5000);
	rig_fini(&r);
}

/* Deep recursion keeps the innermost frames and counts the others. */
static void test_stack_bounded(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	for (int i = 0; i < 1000; i++)
		ev(&r, ATF_EVENT_CALL, FN(i % 2 ? 2 : 4), T0 + (uint64_t)i);
	struct ada_trigger_frame f[ADA_TRIGGER_STACK_FRAMES + 4];
	uint32_t depth;
	size_t n = ada_trigger_thread_stack(r.t, f, ADA_TRIGGER_STACK_FRAMES + 4, &depth);
	assert_int_equal(n, ADA_TRIGGER_STACK_FRAMES);
	assert_int_equal(depth, 1000);
	assert_int_equal(f[0].depth, 1000);
	assert_int_equal(f[n - 1].depth, 1000 - ADA_TRIGGER_STACK_FRAMES + 1);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.stack_dropped, 1000 - ADA_TRIGGER_STACK_FRAMES);
	rig_fini(&r);
}

/* Triggers only fire on events at or after the time they were added. */
static void test_added_later(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	arm(&r, "symbol=parse", T0 + 10 * SEC);
	call(&r, FN(2), T0, 1);
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	call(&r, FN(2), T0 + 10 * SEC, 1);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	/* remove: no more fires */
	struct ada_trigger_spec s[4];
	assert_int_equal(ada_trigger_list(r.e, s, 4), 1);
	assert_true(ada_trigger_armed(r.e, ADA_TRIGGER_SYMBOL));
	rig_fini(&r);
}

struct adder {
	struct ada_trigger_engine *e;
	uint32_t id;
	atomic_int done;
};

static void *adder_main(void *arg)
{
	struct adder *a = arg;
	struct ada_trigger_spec s;
	ada_trigger_parse("symbol=abort_txn", &s, NULL, 0);
	ada_trigger_add(a->e, &s, T0 + 500 * SEC, &a->id);
	atomic_store(&a->done, 1);
	return NULL;
}

/* A trigger added from another thread while the drain feeds: the feed
 * picks it up, and only events at or after its time fire it (run under
 * TSan in CI). The feeder keeps feeding events from before that time until
 * the adder is done, then 500 events after it. */
static void test_add_while_feeding(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, MS, MS, 1000, 0);
	struct adder a = {.e = r.e};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, adder_main, &a), 0);
	uint64_t i = 0;
	while (!atomic_load(&a.done))
		call(&r, FN(3), T0 + (i++ % 1000) * 1000, 1); /* all before T0 + 500 s */
	for (uint64_t k = 0; k < 500; k++)
		call(&r, FN(3), T0 + (500 + k) * SEC, 1);
	pthread_join(th, NULL);
	assert_int_equal(ada_trigger_window_count(r.e), 500);
	assert_int_equal(win(&r, 0)->fire_ns, T0 + 500 * SEC);
	assert_int_equal(ada_trigger_remove(r.e, a.id), 0);
	assert_int_equal(ada_trigger_remove(r.e, a.id), -2);
	call(&r, FN(3), T0 + 2000 * SEC, 1);
	assert_int_equal(ada_trigger_window_count(r.e), 500);
	rig_fini(&r);
}

/* Unknown names are asked again; names resolve per function once. */
static int lookups;
static const char *counting_names(void *ctx, uint64_t fn)
{
	lookups++;
	return names(ctx, fn);
}

static void test_verdict_cache(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	ada_trigger_proc_free(r.p);
	ada_trigger_thread_free(r.t);
	assert_int_equal(ada_trigger_proc_new(r.e, counting_names, NULL, &r.p), 0);
	assert_int_equal(ada_trigger_thread_new(r.p, 77, &r.t), 0);
	arm(&r, "symbol=nothing_matches", 0);
	lookups = 0;
	for (int i = 0; i < 100; i++)
		call(&r, FN(1 + (uint32_t)(i % 4)), T0 + (uint64_t)i, 1);
	assert_int_equal(lookups, 4);
	for (int i = 0; i < 10; i++)
		call(&r, (7ull << 32) | 1, T0 + 1000, 1); /* unknown module */
	assert_int_equal(lookups, 14);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.unresolved, 10);
	rig_fini(&r);
}

/* A made-up stream with leaf pairs among everything that must not be
 * skipped as a pair: a full frame stack, a CALL that unwinds, a RETURN of
 * another function, exceptions, crash markers. */
static size_t leaf_stream(struct atf_index_event *out, size_t max)
{
	uint64_t x = 88172645463325252ull;
	uint32_t d = 0;
	size_t n = 0;
	while (n + 2 <= max) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t pick = (uint32_t)(x % 100), fn = (uint32_t)(x >> 40) % 5;
		struct atf_index_event a = {.timestamp_ns = T0 + n,
		                            .function_id = FN(fn),
		                            .thread_id = 77,
		                            .event_kind = ATF_EVENT_CALL,
		                            .detail_seq = ATF_NO_DETAIL};
		struct atf_index_event b = a;
		b.timestamp_ns++;
		b.event_kind = ATF_EVENT_RETURN;
		if (pick < 45) { /* a leaf call; now and then the RETURN names another */
			a.call_depth = b.call_depth = d + 1;
			b.function_id = pick < 3 ? FN(fn + 1) : a.function_id;
			if (pick == 44) /* a pair whose RETURN reads as a crash marker */
				a.call_depth = b.call_depth = ADA_TRIGGER_CRASH_DEPTH_FLAG | 11;
			if (pick == 43) /* a RETURN at another depth */
				b.call_depth = d + 2;
			if (pick == 42) /* an exception closes it */
				b.event_kind = ATF_EVENT_EXCEPTION;
			if (pick == 41) /* the same function called again at that depth */
				b.event_kind = ATF_EVENT_CALL;
			out[n++] = a;
			out[n++] = b;
			continue;
		}
		if (pick < 70) { /* deeper (past the frame stack's bound too) */
			a.call_depth = ++d;
			if (pick >= 65 && d > 3)
				a.call_depth = d = d / 2; /* a CALL that unwinds */
		} else if (pick < 92 && d) {
			a.event_kind = ATF_EVENT_RETURN;
			a.call_depth = d--;
		} else if (pick < 97) {
			a.event_kind = ATF_EVENT_EXCEPTION;
			a.call_depth = d = d / 3;
		} else if (pick < 98) {
			a.event_kind = ATF_EVENT_EXCEPTION; /* a crash marker: closes nothing */
			a.call_depth = ADA_TRIGGER_CRASH_DEPTH_FLAG | 11;
		} else { /* deep recursion with leaf calls: past the frame stack's bound */
			for (int k = 0; k < 400 && n + 3 <= max; k++) {
				a.call_depth = ++d;
				out[n++] = a;
				b.function_id = a.function_id;
				b.call_depth = a.call_depth = d + 1;
				out[n++] = a;
				b.timestamp_ns = a.timestamp_ns + 1;
				out[n++] = b;
				a.timestamp_ns += 2;
			}
			continue;
		}
		out[n++] = a;
	}
	return n;
}

/* Leaf pairs skipped in a batch leave the frames, the depth, the crash
 * and every count exactly as the same events fed one at a time. */
static void test_leaf_pairs_as_single_events(void **state)
{
	(void)state;
	enum { N = 200000 };
	struct atf_index_event *s = calloc(N, sizeof(*s));
	assert_non_null(s);
	size_t n = leaf_stream(s, N);
	struct rig a, b;
	rig_init(&a, SEC, SEC, 0, 0);
	rig_init(&b, SEC, SEC, 0, 0);
	uint64_t x = 1;
	for (size_t from = 0, to; from < n; from = to) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		to = from + 1 + (size_t)(x >> 58); /* batches of 1 to 64 events */
		to = to < n ? to : n;
		ada_trigger_feed(a.t, s + from, to - from); /* leaf pairs skipped */
		for (size_t j = from; j < to; j++)
			ada_trigger_feed(b.t, &s[j], 1); /* never a pair */
		struct ada_trigger_frame fa[ADA_TRIGGER_STACK_FRAMES], fb[ADA_TRIGGER_STACK_FRAMES];
		uint32_t da, db;
		size_t na = ada_trigger_thread_stack(a.t, fa, ADA_TRIGGER_STACK_FRAMES, &da);
		size_t nb = ada_trigger_thread_stack(b.t, fb, ADA_TRIGGER_STACK_FRAMES, &db);
		assert_int_equal(na, nb);
		assert_int_equal(da, db);
		for (size_t k = 0; k < na; k++) {
			assert_int_equal(fa[k].fn_id, fb[k].fn_id);
			assert_int_equal(fa[k].call_ns, fb[k].call_ns);
			assert_int_equal(fa[k].depth, fb[k].depth);
		}
		struct ada_trigger_stats sa, sb;
		ada_trigger_get_stats(a.e, &sa);
		ada_trigger_get_stats(b.e, &sb);
		assert_memory_equal(&sa, &sb, sizeof(sa));
		assert_int_equal(ada_trigger_thread_crash(a.t, NULL),
		                 ada_trigger_thread_crash(b.t, NULL));
	}
	struct ada_trigger_stats st; /* the stream reached every case */
	ada_trigger_get_stats(a.e, &st);
	assert_true(st.stack_dropped > 0);
	assert_true(st.stack_mismatch > 0);
	assert_int_equal(ada_trigger_thread_crash(a.t, NULL), 11);
	rig_fini(&a);
	rig_fini(&b);
	free(s);
}

/* The frame stack as docs/internals.md states it, event by event: a CALL
 * at depth d first closes the frames deeper than d - 1, a RETURN or an
 * EXCEPTION at d those deeper than d and then its own (or counts a
 * mismatch), a crash marker closes nothing; the innermost
 * ADA_TRIGGER_STACK_FRAMES frames are kept. */
struct model {
	struct ada_trigger_frame *f; /* f[lo..top) open, innermost last */
	size_t lo, top;
	uint64_t dropped, mismatch;
	int crash;
};

static void model_feed(struct model *m, const struct atf_index_event *e)
{
	uint32_t d = e->call_depth;
	if (e->event_kind == ATF_EVENT_CALL) {
		while (d && m->top > m->lo && m->f[m->top - 1].depth > d - 1)
			m->top--, m->mismatch++;
		m->f[m->top++] = (struct ada_trigger_frame){
		    .fn_id = e->function_id, .call_ns = e->timestamp_ns, .depth = d};
		if (m->top - m->lo > ADA_TRIGGER_STACK_FRAMES)
			m->lo++, m->dropped++;
		return;
	}
	if (d & ADA_TRIGGER_CRASH_DEPTH_FLAG) {
		m->crash = (int)(d & ~ADA_TRIGGER_CRASH_DEPTH_FLAG);
		return;
	}
	while (m->top > m->lo && m->f[m->top - 1].depth > d)
		m->top--, m->mismatch++;
	if (m->top > m->lo && m->f[m->top - 1].depth == d &&
	    m->f[m->top - 1].fn_id == e->function_id)
		m->top--;
	else
		m->mismatch++;
}

static void model_check(const struct model *m, struct rig *r)
{
	struct ada_trigger_frame f[ADA_TRIGGER_STACK_FRAMES];
	uint32_t depth;
	size_t n = ada_trigger_thread_stack(r->t, f, ADA_TRIGGER_STACK_FRAMES, &depth);
	assert_int_equal(n, m->top - m->lo);
	assert_int_equal(depth, n ? m->f[m->top - 1].depth : 0);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(f[k].fn_id, m->f[m->top - 1 - k].fn_id);
		assert_int_equal(f[k].call_ns, m->f[m->top - 1 - k].call_ns);
		assert_int_equal(f[k].depth, m->f[m->top - 1 - k].depth);
	}
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r->e, &st);
	assert_int_equal(st.stack_dropped, m->dropped);
	assert_int_equal(st.stack_mismatch, m->mismatch);
	assert_int_equal(ada_trigger_thread_crash(r->t, NULL), m->crash);
}

/* The feed's three loops (plain: no trigger wants names; fast; general)
 * keep the stack the model keeps, in batches of
 * 1 to 64 events, while a latency trigger is armed (frames get masks),
 * removed (masked frames still open) and armed again. */
static void test_stack_matches_model(void **state)
{
	(void)state;
	enum { N = 200000 };
	struct atf_index_event *s = calloc(N, sizeof(*s));
	struct model m = {.f = calloc(N, sizeof(*m.f))};
	assert_non_null(s);
	assert_non_null(m.f);
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	/* At depth 0: a RETURN on an empty stack matches nothing, whatever the
	 * frame memory behind it holds. */
	s[0] = (struct atf_index_event){T0, FN(1), 77, ATF_EVENT_CALL, 0, ATF_NO_DETAIL};
	s[1] = (struct atf_index_event){T0 + 1, FN(1), 77, ATF_EVENT_RETURN, 0, ATF_NO_DETAIL};
	s[2] = (struct atf_index_event){T0 + 2, 0, 77, ATF_EVENT_RETURN, 0, ATF_NO_DETAIL};
	ada_trigger_feed(r.t, s, 3);
	for (size_t j = 0; j < 3; j++)
		model_feed(&m, &s[j]);
	model_check(&m, &r);
	assert_int_equal(m.mismatch, 1);
	size_t n = leaf_stream(s, N);
	struct ada_trigger_spec spec;
	assert_int_equal(ada_trigger_parse("latency=function:parse>1s", &spec, NULL, 0), 0);
	uint32_t id = 0;
	bool armed = false;
	uint64_t x = 7;
	for (size_t from = 0, to; from < n; from = to) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		to = from + 1 + (size_t)(x >> 58);
		to = to < n ? to : n;
		if ((from / 20000) % 2 != armed) { /* 20 000 events plain, 20 000 armed */
			if (armed)
				assert_int_equal(ada_trigger_remove(r.e, id), 0);
			else
				assert_int_equal(ada_trigger_add(r.e, &spec, 0, &id), 0);
			armed = !armed;
		}
		ada_trigger_feed(r.t, s + from, to - from);
		for (size_t j = from; j < to; j++)
			model_feed(&m, &s[j]);
		model_check(&m, &r);
	}
	assert_true(m.dropped > 0 && m.mismatch > 0 && m.crash == 11); /* every case reached */
	rig_fini(&r);
	free(m.f);
	free(s);
}

/* A latency trigger armed while calls are open judges them at their
 * RETURN with their true duration, though their CALLs were kept while no
 * trigger wanted names (the plain loop). */
static void test_latency_armed_while_open(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	struct atf_index_event b[] = {
	    {T0, FN(1), 77, ATF_EVENT_CALL, 1, ATF_NO_DETAIL},
	    {T0 + MS, FN(2), 77, ATF_EVENT_CALL, 2, ATF_NO_DETAIL},
	    {T0 + 2 * MS, FN(4), 77, ATF_EVENT_CALL, 3, ATF_NO_DETAIL},
	    {T0 + 3 * MS, FN(4), 77, ATF_EVENT_RETURN, 3, ATF_NO_DETAIL},
	    {T0 + 4 * MS, FN(4), 77, ATF_EVENT_CALL, 3, ATF_NO_DETAIL},
	};
	ada_trigger_feed(r.t, b, 5);
	arm(&r, "latency=function:handle_*>10ms", T0 + 5 * MS);
	struct atf_index_event a[] = {
	    {T0 + 6 * MS, FN(4), 77, ATF_EVENT_RETURN, 3, ATF_NO_DETAIL},
	    {T0 + 30 * MS, FN(2), 77, ATF_EVENT_RETURN, 2, ATF_NO_DETAIL},
	    {T0 + 50 * MS, FN(1), 77, ATF_EVENT_RETURN, 1, ATF_NO_DETAIL},
	};
	ada_trigger_feed(r.t, a, 3);
	assert_int_equal(ada_trigger_window_count(r.e), 1);
	assert_int_equal(win(&r, 0)->fn_id, FN(1));
	assert_int_equal(win(&r, 0)->duration_ns, 50 * MS);
	assert_int_equal(win(&r, 0)->fire_ns, T0 + 50 * MS);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.stack_mismatch, 0);
	rig_fini(&r);
}

/* A latency trigger disarmed while its call is open judges nothing at
 * that RETURN, whichever loop takes it. */
static void test_latency_disarmed_while_open(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, SEC, SEC, 0, 0);
	struct ada_trigger_spec spec;
	uint32_t id;
	assert_int_equal(ada_trigger_parse("latency=function:parse>1ms", &spec, NULL, 0), 0);
	assert_int_equal(ada_trigger_add(r.e, &spec, T0, &id), 0);
	ev(&r, ATF_EVENT_CALL, FN(2), T0 + 100 * MS);
	assert_int_equal(ada_trigger_remove(r.e, id), 0);
	ev(&r, ATF_EVENT_RETURN, FN(2), T0 + 200 * MS); /* the plain loop pops it */
	assert_int_equal(ada_trigger_add(r.e, &spec, T0, &id), 0);
	ev(&r, ATF_EVENT_CALL, FN(2), T0 + 300 * MS);
	ev(&r, ATF_EVENT_CALL, FN(4), T0 + 301 * MS);
	assert_int_equal(ada_trigger_remove(r.e, id), 0);
	struct atf_index_event u = {/* closes FN(4) unmatched, then FN(2): the general path */
	                            T0 + 400 * MS, FN(2), 77, ATF_EVENT_RETURN, 1, ATF_NO_DETAIL};
	ada_trigger_feed(r.t, &u, 1);
	assert_int_equal(ada_trigger_window_count(r.e), 0);
	struct ada_trigger_stats st;
	ada_trigger_get_stats(r.e, &st);
	assert_int_equal(st.stack_mismatch, 1);
	assert_int_equal(ada_trigger_thread_stack(r.t, NULL, 0, NULL), 0);
	rig_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbol_fires_window),
	    cmocka_unit_test(test_fired_by_text),
	    cmocka_unit_test(test_latency_centred_on_return),
	    cmocka_unit_test(test_latency_nested),
	    cmocka_unit_test(test_merge_overlapping),
	    cmocka_unit_test(test_holdoff),
	    cmocka_unit_test(test_holdoff_escalation),
	    cmocka_unit_test(test_max_windows),
	    cmocka_unit_test(test_p2_estimator),
	    cmocka_unit_test(test_p99_trigger),
	    cmocka_unit_test(test_time_range),
	    cmocka_unit_test(test_manual),
	    cmocka_unit_test(test_stack_and_crash_marker),
	    cmocka_unit_test(test_stack_bounded),
	    cmocka_unit_test(test_added_later),
	    cmocka_unit_test(test_add_while_feeding),
	    cmocka_unit_test(test_verdict_cache),
	    cmocka_unit_test(test_leaf_pairs_as_single_events),
	    cmocka_unit_test(test_stack_matches_model),
	    cmocka_unit_test(test_latency_armed_while_open),
	    cmocka_unit_test(test_latency_disarmed_while_open),
	    cmocka_unit_test(test_waits_never_fire),
	    cmocka_unit_test(test_waits_p99),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
