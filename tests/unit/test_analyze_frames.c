/* src/analyze: frame pairing (returns, exceptions, open frames, orphans,
 * unmatched ends, the signal marker), self time, duration histograms and
 * demangling. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analyze.h"

#define MAXF 32
struct seen {
	size_t n;
	struct ada_frame f[MAXF];
	enum ada_frame_end how[MAXF];
	uint32_t sig;
	uint64_t addr, unmatched;
};

static void on_leave(void *ctx, const struct ada_frame *f, enum ada_frame_end how,
                     struct ada_frame *parent)
{
	struct seen *s = ctx;
	(void)parent;
	if (s->n < MAXF) {
		s->f[s->n] = *f;
		s->how[s->n] = how;
	}
	s->n++;
}

static void on_marker(void *ctx, uint64_t ts, uint32_t sig, uint64_t addr)
{
	struct seen *s = ctx;
	(void)ts;
	s->sig = sig;
	s->addr = addr;
}

static void on_unmatched(void *ctx, const struct atf_index_event *ev, uint32_t src, uint64_t seq)
{
	struct seen *s = ctx;
	(void)ev;
	(void)src;
	(void)seq;
	s->unmatched++;
}

static struct ada_frames *walker(struct seen *s)
{
	static const struct ada_frames_ops ops = {
	    .leave = on_leave, .marker = on_marker, .unmatched = on_unmatched};
	struct ada_frames *w;
	memset(s, 0, sizeof(*s));
	assert_int_equal(ada_frames_new(&ops, s, &w), 0);
	return w;
}

static void push(struct ada_frames *w, uint64_t ts, uint32_t kind, uint64_t fid, uint32_t depth)
{
	static uint64_t seq;
	struct atf_index_event ev = {.timestamp_ns = ts,
	                             .function_id = fid,
	                             .thread_id = 1,
	                             .event_kind = kind,
	                             .call_depth = depth,
	                             .detail_seq = ATF_NO_DETAIL};
	ada_frames_push(w, &ev, 0, seq++);
}

#define C ATF_EVENT_CALL
#define R ATF_EVENT_RETURN
#define X ATF_EVENT_EXCEPTION

/* main(100..700) { a(200..400) { b(250..300) } c(500..550, exception) } */
static void pairs_and_self_time(void **state)
{
	struct seen s;
	struct ada_frames *w = walker(&s);

	(void)state;
	push(w, 100, C, 1, 1);
	push(w, 200, C, 2, 2);
	push(w, 250, C, 3, 3);
	push(w, 300, R, 3, 3);
	push(w, 400, R, 2, 2);
	push(w, 500, C, 4, 2);
	push(w, 550, X, 4, 2);
	push(w, 700, R, 1, 1);
	ada_frames_finish(w);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.f[0].function_id, 3); /* innermost ends first */
	assert_int_equal(s.f[1].end_ns - s.f[1].call_ns, 200);
	assert_int_equal(s.f[1].child_ns, 50);
	assert_int_equal(s.how[2], ADA_END_EXCEPTION);
	assert_int_equal(s.f[3].child_ns, 250); /* a and the exception exit of c */
	const struct ada_frames_stats *st = ada_frames_stats(w);
	assert_int_equal(st->calls, 4);
	assert_int_equal(st->returns, 3);
	assert_int_equal(st->exceptions, 1);
	assert_int_equal(st->open + st->orphans + st->unmatched, 0);
	ada_frames_free(w);
}

/* A crash: the marker closes nothing, the frames stay open, innermost first. */
static void open_frames_and_marker(void **state)
{
	struct seen s;
	struct ada_frames *w = walker(&s);

	(void)state;
	push(w, 100, C, 1, 1);
	push(w, 110, C, 2, 2);
	push(w, 120, C, 3, 3);
	push(w, 130, X, 0xdead, ADA_SIGNAL_MARKER_FLAG | 11);
	assert_int_equal(ada_frames_depth(w), 3);
	assert_int_equal(ada_frames_at(w, 2)->function_id, 3);
	assert_null(ada_frames_at(w, 3));
	assert_int_equal(s.sig, 11);
	assert_int_equal(s.addr, 0xdead);
	ada_frames_finish(w);
	assert_int_equal(s.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(s.how[i], ADA_END_OPEN);
		assert_int_equal(s.f[i].end_ns, 130);
		assert_int_equal(s.f[i].function_id, 3 - i);
	}
	assert_int_equal(ada_frames_stats(w)->open, 3);
	assert_int_equal(ada_frames_stats(w)->markers, 1);
	ada_frames_free(w);
}

/* ada's waits for ring space (wait markers) are not the program's time:
 * main(100..1000) { a(200..600) { wait 300..500 } wait 700..800 }, and a
 * cut-off END (no BEGIN) takes nothing out. Durations, child and self
 * times leave them out, so self times still add up; a marker is no signal
 * and closes nothing. */
static void waits_left_out(void **state)
{
	struct seen s;
	struct ada_frames *w = walker(&s);

	(void)state;
	push(w, 100, C, 1, 1);
	push(w, 150, X, 0, ADA_WAIT_MARKER_END); /* its BEGIN was cut off */
	push(w, 200, C, 2, 2);
	push(w, 300, X, 0, ADA_WAIT_MARKER_BEGIN);
	push(w, 500, X, 0, ADA_WAIT_MARKER_END);
	assert_int_equal(ada_frames_depth(w), 2);
	push(w, 600, R, 2, 2);
	push(w, 700, X, 0, ADA_WAIT_MARKER_BEGIN);
	push(w, 800, X, 0, ADA_WAIT_MARKER_END);
	push(w, 1000, R, 1, 1);
	ada_frames_finish(w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.f[0].wait_ns, 200);
	assert_int_equal(ada_frame_ns(&s.f[0]), 200);
	assert_int_equal(s.f[1].wait_ns, 300);
	assert_int_equal(ada_frame_ns(&s.f[1]), 600);
	assert_int_equal(s.f[1].child_ns, 200); /* a without its wait */
	const struct ada_frames_stats *st = ada_frames_stats(w);
	assert_int_equal(st->waits, 2);
	assert_int_equal(st->wait_ns, 300);
	assert_int_equal(st->markers + st->exceptions + st->unmatched + st->bad_kind, 0);
	assert_int_equal(s.sig, 0);
	ada_frames_free(w);
}

/* Ends whose CALL is not there (a retired generation), a depth jump that
 * leaves frames behind, a return of another function, an unknown kind. */
static void unpaired_events_are_counted(void **state)
{
	struct seen s;
	struct ada_frames *w = walker(&s);

	(void)state;
	push(w, 100, R, 5, 3); /* its CALL is gone */
	push(w, 110, R, 6, 2);
	push(w, 120, C, 1, 1);
	push(w, 130, C, 2, 2);
	push(w, 140, C, 3, 3);
	push(w, 150, C, 4, 2); /* 2 and 3 never ended: orphans */
	push(w, 160, R, 9, 2); /* not the function at depth 2 */
	push(w, 170, 7, 1, 1);
	push(w, 180, R, 4, 2);
	push(w, 190, R, 1, 1);
	ada_frames_finish(w);
	const struct ada_frames_stats *st = ada_frames_stats(w);
	assert_int_equal(st->unmatched, 3);
	assert_int_equal(s.unmatched, 3);
	assert_int_equal(st->orphans, 2);
	assert_int_equal(st->bad_kind, 1);
	assert_int_equal(st->open, 0);
	assert_int_equal(s.how[0], ADA_END_ORPHAN);
	assert_int_equal(s.f[0].function_id, 3);
	assert_int_equal(s.how[1], ADA_END_ORPHAN);
	assert_int_equal(s.how[2], ADA_END_RETURN); /* 4: 150..180 */
	assert_int_equal(s.f[2].end_ns - s.f[2].call_ns, 30);
	assert_int_equal(s.f[3].child_ns, 30); /* orphans are not timed */
	ada_frames_free(w);
}

/* Deep recursion grows the stack; the walker is reusable after finish. */
static void deep_stack_and_reuse(void **state)
{
	struct seen s;
	struct ada_frames *w = walker(&s);

	(void)state;
	for (uint32_t d = 1; d <= 5000; d++)
		push(w, d, C, 7, d);
	assert_int_equal(ada_frames_depth(w), 5000);
	for (uint32_t d = 5000; d >= 1; d--)
		push(w, 10000 - d, R, 7, d);
	assert_int_equal(ada_frames_depth(w), 0);
	ada_frames_finish(w);
	push(w, 20000, C, 8, 1);
	ada_frames_finish(w);
	assert_int_equal(ada_frames_stats(w)->open, 1);
	assert_int_equal(ada_frames_stats(w)->returns, 5000);
	ada_frames_free(w);
}

static void hist_quantiles(void **state)
{
	struct ada_hist h, h2;

	(void)state;
	ada_hist_init(&h);
	ada_hist_init(&h2);
	assert_int_equal(ada_hist_quantile(&h, 0.5), 0);
	for (uint64_t v = 1; v <= 1000; v++)
		assert_int_equal(ada_hist_add(&h, v * 1000), 0);
	assert_int_equal(h.min, 1000);
	assert_int_equal(h.max, 1000000);
	uint64_t p50 = ada_hist_quantile(&h, 0.5), p99 = ada_hist_quantile(&h, 0.99);
	assert_true(p50 >= 500000 - 500000 / 32 && p50 <= 500000 + 500000 / 32);
	assert_true(p99 >= 990000 - 990000 / 32 && p99 <= 990000 + 990000 / 32);
	assert_int_equal(ada_hist_quantile(&h, 1.0), 1000000); /* clamped to max */
	for (uint64_t v = 0; v < 32; v++)                      /* exact below 32 */
		ada_hist_add(&h2, v);
	assert_int_equal(ada_hist_quantile(&h2, 0.5), 15);
	assert_int_equal(ada_hist_merge(&h, &h2), 0);
	assert_int_equal(h.count, 1032);
	assert_int_equal(h.min, 0);
	ada_hist_add(&h2, UINT64_MAX);
	assert_int_equal(ada_hist_quantile(&h2, 1.0), UINT64_MAX);
	ada_hist_fini(&h);
	ada_hist_fini(&h2);
}

static void demangling(void **state)
{
	enum ada_demangle m;
	char *s;

	(void)state;
	assert_int_equal(ada_demangle_parse("simple", &m), 0);
	assert_int_equal(m, ADA_DEMANGLE_SIMPLE);
	assert_int_not_equal(ada_demangle_parse("fancy", &m), 0);
	s = ada_name_demangle("_ZN2ns6Widget4pokeEi", ADA_DEMANGLE_FULL);
	assert_string_equal(s, "ns::Widget::poke(int)");
	free(s);
	s = ada_name_demangle("_ZN2ns6Widget4pokeEi", ADA_DEMANGLE_SIMPLE);
	assert_string_equal(s, "ns::Widget::poke");
	free(s);
	assert_null(ada_name_demangle("_ZN2ns6Widget4pokeEi", ADA_DEMANGLE_NO));
	assert_null(ada_name_demangle("main", ADA_DEMANGLE_FULL));
	assert_null(ada_name_demangle("_Z", ADA_DEMANGLE_FULL)); /* not a whole name */
}

/* ---- pieces: cut anywhere, stitched, the same as one walk ---- */

/* One ended frame, as far as a walk decides it. */
struct rec {
	uint64_t fid, call_ns, end_ns, child_ns, wait_ns, call_seq, end_seq;
	uint32_t how, depth;
};
struct recs {
	size_t n, cap;
	struct rec *r;
};

static void rec_add(struct recs *v, struct rec r)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 1024;
		v->r = realloc(v->r, v->cap * sizeof(*v->r));
		assert_non_null(v->r);
	}
	v->r[v->n++] = r;
}

static void rec_leave(void *ctx, const struct ada_frame *f, enum ada_frame_end how,
                      struct ada_frame *parent)
{
	(void)parent;
	rec_add(ctx, (struct rec){f->function_id, f->call_ns, f->end_ns, f->child_ns, f->wait_ns,
	                          f->call_seq, f->end_seq, how, f->depth});
}

static int rec_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct rec));
}

/* A stream with everything a walk meets: returns and exceptions, depth
 * jumps (orphans), ends of calls never seen, wrong functions, waits
 * (ends without a begin too), signal markers, time going back. */
static size_t rand_events(struct atf_index_event *ev, size_t n, unsigned seed)
{
	uint32_t d = 3, fids[64] = {0};
	uint64_t ts = 1000;
	srand(seed);
	for (size_t i = 0; i < n; i++) {
		int r = rand() % 100;
		struct atf_index_event e = {.thread_id = 1, .detail_seq = ATF_NO_DETAIL};
		ts += (uint64_t)(rand() % 50);
		if (r < 2)
			ts -= ts > 30 ? 30 : 0; /* backwards */
		e.timestamp_ns = ts;
		if (r < 48) {
			d = r < 3 ? (uint32_t)(rand() % 8) + 1 : d + 1; /* a jump: orphans */
			d = d < 60 ? d : 60;
			fids[d] = (uint64_t)(rand() % 5) + 1;
			e.event_kind = ATF_EVENT_CALL;
			e.function_id = fids[d];
			e.call_depth = d;
		} else if (r < 92) {
			e.event_kind = r < 88 ? ATF_EVENT_RETURN : ATF_EVENT_EXCEPTION;
			e.function_id = r == 60 ? 99 : fids[d]; /* a wrong function now and then */
			e.call_depth = d;
			d = d ? d - 1 : (uint32_t)(rand() % 4); /* below the first: unmatched */
		} else if (r < 97) {
			e.event_kind = ATF_EVENT_EXCEPTION;
			e.call_depth = r < 95 ? ADA_WAIT_MARKER_BEGIN : ADA_WAIT_MARKER_END;
		} else {
			e.event_kind = ATF_EVENT_EXCEPTION;
			e.call_depth = ADA_SIGNAL_MARKER_FLAG | 11;
		}
		ev[i] = e;
	}
	return n;
}

/* Walks ev whole, then in pieces cut at cuts[], and compares. */
static void stitch_check(const struct atf_index_event *ev, size_t n, const size_t *cut, size_t ncut)
{
	struct ada_frames_ops ops = {.leave = rec_leave};
	struct recs one = {0}, many = {0};
	struct ada_frames *w1, *w, *p;
	assert_int_equal(ada_frames_new(&ops, &one, &w1), 0);
	ada_frames_push_many(w1, ev, n, 0, 0);
	ada_frames_finish(w1);
	assert_int_equal(ada_frames_new(&ops, &many, &w), 0);
	for (size_t k = 0; k <= ncut; k++) {
		size_t b = k ? cut[k - 1] : 0, e = k < ncut ? cut[k] : n;
		struct recs piece = {0};
		assert_int_equal(ada_frames_new(&ops, &piece, &p), 0);
		ada_frames_part_begin(p);
		ada_frames_push_many(p, ev + b, e - b, 0, b);
		int err = ada_frames_stitch(w, p);
		if (err == -EAGAIN) {
			ada_frames_push_many(w, ev + b, e - b, 0, b);
		} else {
			assert_int_equal(err, 0);
			for (size_t i = 0; i < piece.n; i++)
				rec_add(&many, piece.r[i]);
		}
		free(piece.r);
		ada_frames_free(p);
	}
	ada_frames_finish(w);
	const struct ada_frames_stats *a = ada_frames_stats(w1), *b = ada_frames_stats(w);
	assert_memory_equal(a, b, sizeof(*a));
	assert_int_equal(one.n, many.n);
	if (one.n) { /* none: both NULL, which qsort and memcmp may not take */
		qsort(one.r, one.n, sizeof(*one.r), rec_cmp);
		qsort(many.r, many.n, sizeof(*many.r), rec_cmp);
		assert_memory_equal(one.r, many.r, one.n * sizeof(*one.r));
	}
	free(one.r);
	free(many.r);
	ada_frames_free(w1);
	ada_frames_free(w);
}

static void pieces_stitch_to_one_walk(void **state)
{
	enum { N = 20000 };
	struct atf_index_event *ev = malloc(N * sizeof(*ev));
	size_t cut[16];
	(void)state;
	assert_non_null(ev);
	for (unsigned seed = 1; seed <= 60; seed++) {
		rand_events(ev, N, seed);
		size_t ncut = (size_t)(rand() % 16), at = 0;
		for (size_t k = 0; k < ncut; k++) /* ascending; empty pieces too */
			cut[k] = at += (size_t)(rand() % (N / 8));
		for (size_t k = 0; k < ncut; k++)
			cut[k] = cut[k] < N ? cut[k] : N;
		stitch_check(ev, N, cut, ncut);
	}
	free(ev);
}

/* A piece of nothing but ends of calls never seen keeps one op each: past
 * the bound it is walked again whole, with the same result. */
static void pieces_keep_bounded(void **state)
{
	enum { N = 150000 };
	struct atf_index_event *ev = calloc(N, sizeof(*ev));
	size_t cut[2] = {10, 140000};
	(void)state;
	assert_non_null(ev);
	for (size_t i = 0; i < N; i++)
		ev[i] = (struct atf_index_event){.timestamp_ns = 100 + i,
		                                 .function_id = 7,
		                                 .thread_id = 1,
		                                 .event_kind = ATF_EVENT_RETURN,
		                                 .call_depth = 1,
		                                 .detail_seq = ATF_NO_DETAIL};
	stitch_check(ev, N, cut, 2);
	free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(pairs_and_self_time),  cmocka_unit_test(open_frames_and_marker),
	    cmocka_unit_test(waits_left_out),       cmocka_unit_test(unpaired_events_are_counted),
	    cmocka_unit_test(deep_stack_and_reuse), cmocka_unit_test(hist_quantiles),
	    cmocka_unit_test(demangling),           cmocka_unit_test(pieces_stitch_to_one_walk),
	    cmocka_unit_test(pieces_keep_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
