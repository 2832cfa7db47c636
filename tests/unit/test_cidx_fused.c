/*
 * The drain's fused pass (ada_cidx_enc_put_ring(), ada_trigger_calls_begin())
 * against the general way (convert, ada_cidx_enc_put(), ada_trigger_feed())
 * on the same ring records: the same coded bytes, block for block, and the
 * same trigger stack and counters. The stream mixes what the fused pass
 * takes (recursion, calls of functions seen in the block, their returns)
 * with everything it must leave to the general way: functions not cached,
 * gaps past 65 us, time going back, recursion deeper than the encoder's
 * 64 known frames and the trigger's 256, exceptions, signal and wait
 * markers, detail links, another thread id, returns that match nothing,
 * times past the conversion's bound, a frame at depth 0. The trigger
 * stacks are compared every 6400 events, the recent window the detail
 * lane reads at the end. The general way gets the events in
 * other chunk sizes than the fused one, so block ends that depended on
 * chunking would show. No clock is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cidx.h"
#include "trigger.h"

#define TID 77u
#define NEV 400000u
#define TSC0 1000u
#define NS0 5000000000ull
#define MULT 2576980378ull /* 0.6 ns a tick, << 32 */
#define BLOCK 4096u

/* The conversion's slope and the stream's first raw time: MULT and near
 * TSC0 unless a test says otherwise (test_fused_far_ticks). */
static uint64_t t_mult = MULT;
static uint64_t t_raw0 = TSC0 + 100000;
/* The gaps past the tag's 65 us, in ticks (0: 200000-300000). */
static uint64_t t_gap;
/* The stream's events (at most NEV). */
static size_t t_nev = NEV;
/* A second piece of the clock from raw time t_tsc1 on (0: none), at
 * t_ns1, with the slope t_mult too: a re-anchor inside the stream. */
static uint64_t t_tsc1, t_ns1;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

struct gen {
	struct atf_index_event *ev;
	size_t n;
	uint64_t raw;
	uint32_t depth;
	uint64_t fid[1024]; /* the open frames' functions, by depth */
};

/* The steps between events span the tag's escape too (test_fused_escapes):
 * its edges at 31 ns and at 65566 ns, and all between. */
static bool wide_steps;

/* A step of the wide streams, in ticks (0.6 ns each): below the escape,
 * around 31 ns (45-64 ticks: 27-38 ns), anywhere up to past the tag's
 * most, around the most (65566 ns: 109276.7 ticks). */
static uint64_t wide_step(void)
{
	switch (rnd(4)) {
	case 0:
		return 1 + rnd(40);
	case 1:
		return 45 + rnd(20);
	case 2:
		return 1 + rnd(110000);
	default:
		return 109268 + rnd(20);
	}
}

static void put(struct gen *g, uint32_t kind, uint64_t fid, uint32_t depth)
{
	uint32_t r = rnd(1000);
	if (r < 3)
		g->raw += t_gap ? t_gap : 200000 + rnd(100000); /* a gap past the tag's 65 us */
	else if (r < 5 && g->raw > TSC0 + 100)
		g->raw -= 60; /* back in time: clamped */
	else
		g->raw += wide_steps ? wide_step() : 1 + rnd(40);
	g->ev[g->n++] = (struct atf_index_event){.timestamp_ns = g->raw,
	                                         .function_id = fid,
	                                         .thread_id = TID,
	                                         .event_kind = kind,
	                                         .call_depth = depth,
	                                         .detail_seq = ATF_NO_DETAIL};
}

static void call(struct gen *g, uint64_t fid)
{
	g->depth++;
	g->fid[g->depth & 1023] = fid;
	put(g, ATF_EVENT_CALL, fid, g->depth);
}

static void ret(struct gen *g)
{
	put(g, ATF_EVENT_RETURN, g->fid[g->depth & 1023], g->depth);
	g->depth--;
}

static uint64_t pick_fid(void)
{
	uint32_t r = rnd(100);
	if (r < 60)
		return 0x100000001ull; /* recursion: the last called */
	if (r < 97)
		return 0x100000000ull | (2 + rnd(300)); /* seen in the block, mostly */
	return 0x200000000ull | rnd(1u << 30);          /* new: spelled out */
}

/* One odd event (or a few) of the kinds the fused pass leaves alone. */
static void odd(struct gen *g)
{
	switch (rnd(9)) {
	case 8: /* a frame at depth 0 (a longjmp seen late), returned from */
		put(g, ATF_EVENT_CALL, 0x100000002ull, 0);
		put(g, ATF_EVENT_RETURN, 0x100000002ull, 0);
		g->depth = 0;
		break;
	case 0: /* an exception closing the innermost frame */
		if (g->depth) {
			put(g, ATF_EVENT_EXCEPTION, g->fid[g->depth & 1023], g->depth);
			g->depth--;
		}
		break;
	case 1: /* a fatal-signal marker */
		put(g, ATF_EVENT_EXCEPTION, 0x7000, ADA_SIGNAL_MARKER_FLAG | 11);
		break;
	case 2: /* a wait for ring space */
		put(g, ATF_EVENT_EXCEPTION, 0, ADA_WAIT_MARKER_BEGIN);
		put(g, ATF_EVENT_EXCEPTION, 0, ADA_WAIT_MARKER_END);
		break;
	case 3: /* a detail link */
		call(g, pick_fid());
		g->ev[g->n - 1].detail_seq = (uint32_t)g->n;
		break;
	case 4: /* another thread id */
		call(g, pick_fid());
		g->ev[g->n - 1].thread_id = TID + 1;
		break;
	case 5: /* a return that matches nothing */
		if (g->depth) {
			put(g, ATF_EVENT_RETURN, 0x300000000ull, g->depth);
			g->depth--;
		}
		break;
	case 6: /* a call that skips a depth */
		g->depth++;
		call(g, pick_fid());
		break;
	default: /* an unknown kind */
		put(g, 9, 0x1234, g->depth);
		break;
	}
}

static void make_stream(struct gen *g)
{
	g->ev = calloc(NEV + 4096, sizeof(*g->ev));
	assert_non_null(g->ev);
	g->raw = t_raw0;
	while (g->n < t_nev) {
		uint32_t r = rnd(10000);
		if (r < 3) { /* recursion past both stacks, then back */
			uint32_t to = g->depth + 300;
			while (g->depth < to)
				call(g, 0x100000001ull);
			while (g->depth > to - 300)
				ret(g);
		} else if (r < 30) {
			odd(g);
		} else if (g->depth < 3 || (g->depth < 40 && rnd(2))) {
			call(g, pick_fid());
		} else {
			ret(g);
		}
	}
}

struct side {
	struct ada_cidx_enc *enc;
	struct ada_cidx_out o;
	struct ada_trigger_engine *e;
	struct ada_trigger_proc *p;
	struct ada_trigger_thread *t;
	uint64_t last;
	size_t fused;
	/* The recent window (struct ada_cidx_keep), when kept: the general
	 * way writes it as the wal's commit does (wal_cidx_keep()). */
	struct ada_cidx_recent *win;
	uint64_t nkept;
	/* The window not filled (the drain's switch between takes,
	 * ada_wal_file_keep_recent()): events pass its slots untouched. */
	bool keep_off;
	/* The fused pass took an event from past (one past d_max). */
	const struct atf_index_event *past;
	bool took_past;
};

#define WIN (1u << 19) /* past NEV: every event's copy stays */

static const char *no_names(void *ctx, uint64_t fn)
{
	(void)ctx;
	(void)fn;
	return "f";
}

static void side_init(struct side *s, size_t n, bool trig, bool keep)
{
	memset(s, 0, sizeof(*s));
	if (keep) {
		s->win = calloc(WIN, sizeof(*s->win));
		assert_non_null(s->win);
	}
	assert_int_equal(ada_cidx_enc_new(BLOCK, &s->enc), 0);
	s->o.len = sizeof(struct ada_cidx_file_header);
	s->o.cap = s->o.len + n * 64 + 2 * BLOCK;
	s->o.p = calloc(1, s->o.cap);
	assert_non_null(s->o.p);
	if (!trig)
		return;
	struct ada_trigger_opts opts = {.pre_ns = 1000, .post_ns = 1000, .max_windows = 4};
	assert_int_equal(ada_trigger_engine_new(&opts, &s->e), 0);
	assert_int_equal(ada_trigger_proc_new(s->e, no_names, NULL, &s->p), 0);
	assert_int_equal(ada_trigger_thread_new(s->p, TID, &s->t), 0);
}

static void side_fini(struct side *s)
{
	ada_cidx_enc_free(s->enc);
	free(s->o.p);
	free(s->win);
	ada_trigger_thread_free(s->t);
	ada_trigger_proc_free(s->p);
	ada_trigger_engine_free(s->e);
}

/* The conversion put_ring() makes (cv below): ns = NS0 + ((raw - TSC0) *
 * t_mult >> 32), clamped to the last. */
static void convert(struct side *s, const struct atf_index_event *src, struct atf_index_event *dst,
                    size_t n)
{
	for (size_t i = 0; i < n; i++) {
		dst[i] = src[i];
		const bool two = t_tsc1 && src[i].timestamp_ns >= t_tsc1;
		uint64_t ts =
		    (two ? t_ns1 : NS0) +
		    (uint64_t)(((unsigned __int128)(src[i].timestamp_ns - (two ? t_tsc1 : TSC0)) *
		                t_mult) >>
		               32);
		s->last = dst[i].timestamp_ns = ts < s->last ? s->last : ts;
	}
}

/* The general way: converted, coded, fed. */
static void general(struct side *s, const struct atf_index_event *src, size_t n)
{
	struct atf_index_event tmp[512];
	assert_true(n <= 512);
	convert(s, src, tmp, n);
	if (s->keep_off)
		s->nkept += n;
	for (size_t i = 0; s->win && !s->keep_off && i < n; i++) {
		uint64_t ts = tmp[i].timestamp_ns;
		s->win[s->nkept++ & (WIN - 1)] = (struct ada_cidx_recent){
		    ts >= 1ull << 62 ? 0 : ts | (uint64_t)tmp[i].event_kind << 62,
		    tmp[i].function_id};
	}
	int err = 0;
	assert_int_equal(ada_cidx_enc_put(s->enc, tmp, n, &s->o, &err), n);
	assert_int_equal(err, 0);
	if (s->t)
		ada_trigger_feed(s->t, tmp, n);
}

/* The drain's way (drain_chunk_fused()): the fused pass, and each event
 * it stops at the general way. d_max leaves the stream's last times to
 * the general way too. */
static void fused(struct side *s, const struct atf_index_event *src, size_t n, uint64_t d_max)
{
	size_t i = 0;
	while (i < n) {
		/* The piece of the first event, as the drain picks it
		 * (drain_piece()): the first piece ends before the second. */
		const bool two = t_tsc1 && src[i].timestamp_ns >= t_tsc1;
		const uint64_t end1 = t_tsc1 ? t_tsc1 - 1 - TSC0 : UINT64_MAX;
		struct ada_cidx_ring_conv cv = {.tsc0 = two ? t_tsc1 : TSC0,
		                                .ns0 = two ? t_ns1 : NS0,
		                                .mult = t_mult,
		                                .d_max = two ? d_max - (t_tsc1 - TSC0)
		                                             : (d_max < end1 ? d_max : end1),
		                                .last = s->last,
		                                .tid = TID,
		                                .depth_max = 1u << 24};
		struct ada_cidx_calls calls, *cp = NULL;
		if (s->t && ada_trigger_calls_begin(s->t, &calls))
			cp = &calls;
		struct ada_cidx_keep keep = {s->win, WIN - 1, s->nkept};
		const bool kept = s->win && !s->keep_off;
		size_t k = s->t && !cp ? 0
		                       : ada_cidx_enc_put_ring(s->enc, src + i, n - i, &cv, cp,
		                                               kept ? &keep : NULL, &s->o);
		s->nkept = kept ? keep.next : s->nkept + k;
		if (cp)
			ada_trigger_calls_end(s->t, cp);
		s->last = cv.last;
		s->fused += k;
		s->took_past |= k && s->past && src + i + k > s->past;
		i += k;
		if (i < n)
			general(s, src + i++, 1);
	}
}

static void compare_stacks(const struct side *a, const struct side *b)
{
	static struct ada_trigger_frame fa[ADA_TRIGGER_STACK_FRAMES], fb[ADA_TRIGGER_STACK_FRAMES];
	uint32_t da, db;
	size_t na = ada_trigger_thread_stack(a->t, fa, ADA_TRIGGER_STACK_FRAMES, &da);
	size_t nb = ada_trigger_thread_stack(b->t, fb, ADA_TRIGGER_STACK_FRAMES, &db);
	assert_int_equal(na, nb);
	assert_int_equal(da, db);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(fa[i].fn_id, fb[i].fn_id);
		assert_int_equal(fa[i].call_ns, fb[i].call_ns);
		assert_int_equal(fa[i].depth, fb[i].depth);
	}
	struct ada_trigger_stats sa, sb;
	ada_trigger_get_stats(a->e, &sa);
	ada_trigger_get_stats(b->e, &sb);
	assert_memory_equal(&sa, &sb, sizeof(sa));
}

/* Every event decodes back as converted (links aside: the table is
 * written at finish). */
static void check_decodes(const struct side *s, const struct atf_index_event *src, size_t n)
{
	struct ada_cidx_dec *d;
	struct ada_atf_file_info info;
	struct ada_cidx_file_header h;
	ada_atf_file_info_native(&info, TID);
	ada_cidx_file_header_fill(&h, &info, BLOCK);
	memcpy(s->o.p, &h, sizeof(h));
	assert_int_equal(ada_cidx_dec_open(s->o.p, s->o.len, ADA_ATF_OPEN_SALVAGE, &d), 0);
	assert_int_equal(ada_cidx_dec_count(d), n);
	struct atf_index_event *out = calloc(n, sizeof(*out)), *want = calloc(n, sizeof(*want));
	assert_non_null(out);
	assert_non_null(want);
	assert_int_equal(ada_cidx_dec_all(d, out), 0);
	struct side conv = {.last = 0};
	convert(&conv, src, want, n);
	for (size_t i = 0; i < n; i++)
		want[i].detail_seq = ATF_NO_DETAIL;
	assert_memory_equal(out, want, n * sizeof(*out));
	free(out);
	free(want);
	ada_cidx_dec_free(d);
}

/* The window slots of stretch [at, end) of the events. */
#define STRETCH 6400u
static bool stretch_kept(size_t at, bool toggle)
{
	return !toggle || (at / STRETCH) % 3 != 1;
}

/* trig: with a trigger thread; names: a trigger that wants names is armed
 * (the fused pass then takes nothing); keep: the recent window; toggle:
 * the fused side's window is not filled for every third stretch, as the
 * drain switches it between takes (the general side fills all of it). */
static void run_toggled(bool trig, bool names, bool keep, bool toggle)
{
	struct gen g = {0};
	rng = 0x9E3779B97F4A7C15ull;
	make_stream(&g);
	struct side a, b;
	side_init(&a, g.n, trig, keep);
	side_init(&b, g.n, trig, keep);
	if (names) {
		struct ada_trigger_spec sp;
		assert_int_equal(ada_trigger_parse("latency=function:g*>1ms", &sp, NULL, 0), 0);
		assert_int_equal(ada_trigger_add(a.e, &sp, 0, NULL), 0);
		assert_int_equal(ada_trigger_add(b.e, &sp, 0, NULL), 0);
	}
	/* The last 1000 events' raw times are past d_max. */
	uint64_t d_max = g.ev[g.n - 1000].timestamp_ns - TSC0 - 1;
	b.past = g.ev + g.n - 1000;
	/* Stretches of 6400 events (25 general chunks, 64 fused ones): the
	 * trigger stacks compared at each end, not only the last. */
	for (size_t at = 0; at < g.n; at += STRETCH) {
		const size_t end = g.n - at < STRETCH ? g.n : at + STRETCH;
		b.keep_off = !stretch_kept(at, toggle);
		for (size_t i = at; i < end; i += 256)
			general(&a, g.ev + i, end - i < 256 ? end - i : 256);
		for (size_t i = at; i < end; i += 100)
			fused(&b, g.ev + i, end - i < 100 ? end - i : 100, d_max);
		if (trig)
			compare_stacks(&a, &b);
	}
	ada_cidx_enc_seal(a.enc, &a.o);
	ada_cidx_enc_seal(b.enc, &b.o);
	assert_int_equal(ada_cidx_enc_count(a.enc), g.n);
	assert_int_equal(ada_cidx_enc_count(b.enc), g.n);
	assert_int_equal(a.o.len, b.o.len);
	assert_memory_equal(a.o.p, b.o.p, a.o.len);
	assert_int_equal(ada_cidx_enc_offset(a.enc), ada_cidx_enc_offset(b.enc));
	assert_int_equal(ada_cidx_enc_tail_size(a.enc), ada_cidx_enc_tail_size(b.enc));
	if (names)
		assert_int_equal(b.fused, 0);
	else /* most events went the fused way: this compared something */
		assert_true(b.fused > g.n / 2);
	assert_true(b.fused < g.n - 1000);
	assert_false(b.took_past); /* the general way converts what d_max leaves */
	if (trig)
		compare_stacks(&a, &b);
	if (keep) {
		assert_int_equal(a.nkept, g.n);
		assert_int_equal(b.nkept, g.n);
		for (size_t at = 0; at < g.n; at += STRETCH) {
			const size_t len =
			    (g.n - at < STRETCH ? g.n - at : STRETCH) * sizeof(*a.win);
			if (stretch_kept(at, toggle)) {
				assert_memory_equal(a.win + at, b.win + at, len);
			} else { /* untouched: calloc's zeros */
				static const struct ada_cidx_recent zero[STRETCH];
				assert_memory_equal(b.win + at, zero, len);
			}
		}
	}
	check_decodes(&b, g.ev, g.n);
	side_fini(&a);
	side_fini(&b);
	free(g.ev);
}

static void run(bool trig, bool names, bool keep)
{
	run_toggled(trig, names, keep, false);
}

static void test_fused_no_trigger(void **state)
{
	(void)state;
	run(false, false, false);
}

static void test_fused_trigger_stack(void **state)
{
	(void)state;
	run(true, false, false);
}

static void test_fused_recent_window(void **state)
{
	(void)state;
	run(true, false, true);
	run(false, false, true);
}

static void test_fused_trigger_wants_names(void **state)
{
	(void)state;
	run(true, true, true);
}

/* The window switched off and on between takes: the same bytes, the
 * kept stretches' window as the general way's, the others untouched. */
static void test_fused_window_switched(void **state)
{
	(void)state;
	run_toggled(true, false, true, true);
	run_toggled(false, false, true, true);
}

/* Steps that take the tag's u16 escape, at its edges and between: the
 * same bytes both ways (the fused pass codes the tag in its own way,
 * cidx_ring.c ring_tag()). */
static void test_fused_escapes(void **state)
{
	(void)state;
	wide_steps = true;
	run(false, false, false);
	run(true, false, true);
	wide_steps = false;
}

/* Raw times 2^32 ticks and more past the piece's start, crossing a
 * multiple of 2^32 inside a pass, gaps of seconds, with a fast, a 1 ns
 * and a slow counter's slope: the fused pass converts from a start it moves on by
 * k * 2^32 ticks (cidx_ring.c ring_rebase()), and must give the times
 * the general way's 128-bit product gives. */
static void test_fused_far_ticks(void **state)
{
	(void)state;
	static const uint64_t mults[] = {MULT, 1ull << 32, 178956970667ull /* 41.67 ns */};
	t_nev = NEV / 4; /* ~2 M ticks a stream */
	for (size_t i = 0; i < sizeof(mults) / sizeof(mults[0]); i++) {
		t_mult = mults[i];
		/* The boundary falls in the stream's middle. */
		t_raw0 = TSC0 + (3ull << 32) - 1000000;
		run(true, false, true);
		/* Gaps of 2^64 / mult ticks (~4.3 s): past the moved start's
		 * 64-bit reach, where d * mult would wrap to about the last
		 * time; the general way must take them. */
		t_raw0 = TSC0 + (5ull << 32) + 12345;
		t_gap = UINT64_MAX / t_mult + 1;
		run(false, false, false);
		t_gap = 0;
		/* A re-anchor in the middle, 5 ns back: the encoder's moved
		 * start is the first piece's, and must not be taken for the
		 * second's. */
		t_raw0 = TSC0 + (3ull << 32) - 1000000;
		t_tsc1 = t_raw0 + 1000000;
		t_ns1 = NS0 + (uint64_t)(((unsigned __int128)(t_tsc1 - TSC0) * t_mult) >> 32) - 5;
		run(true, false, false);
		t_tsc1 = 0;
	}
	t_nev = NEV;
	t_mult = MULT;
	t_raw0 = TSC0 + 100000;
}

/* Leaf pairs one after another (cidx_ring.c ring_leaves(), the pass's
 * loop for them): the pass stops exactly at the first event it must leave
 * to the general way, wherever it falls in a pair - a raw time past d_max
 * or past the 64-bit product's reach, a step past the tag's most, a
 * RETURN with a detail link, a RETURN at another depth - and codes the
 * same bytes as the general way with the stop anywhere; a new function
 * (spelled out) and a time back (clamped) the pass's loop takes after the
 * leaf loop left them (a time before the pass's start, the general way). */
enum leaf_odd {
	LEAF_DMAX,
	LEAF_WRAP,
	LEAF_GAP,
	LEAF_LINK,
	LEAF_DEPTH,
	LEAF_NEW,
	LEAF_BACK,
	LEAF_ODDS
};

static void leaf_case(enum leaf_odd odd, size_t k)
{
	enum { PRE = 5, N = 61 };
	struct atf_index_event ev[PRE + N];
	uint64_t raw = TSC0 + 1000;
	ev[0] =
	    (struct atf_index_event){raw, 0x100000009ull, TID, ATF_EVENT_CALL, 1, ATF_NO_DETAIL};
	for (size_t i = 1; i < PRE + N; i++) {
		const size_t pair = (i - 1) / 2;
		raw += 10;
		const uint64_t fid = 0x100000000ull | (pair % 3 ? 2 + pair % 2 : 7);
		ev[i] = (struct atf_index_event){
		    raw, fid,          TID, (i - 1) % 2 ? ATF_EVENT_RETURN : ATF_EVENT_CALL,
		    2,   ATF_NO_DETAIL};
	}
	/* k: the event (past PRE) the pass must stop at */
	struct atf_index_event *at = &ev[PRE + k];
	uint64_t d_max = UINT64_MAX;
	switch (odd) {
	case LEAF_DMAX:
		d_max = at->timestamp_ns - TSC0 - 1;
		break;
	case LEAF_WRAP:
		/* 2^64 / MULT ticks (4.3 s) later, the next event back: past
		 * the pass's 64-bit product, which wraps to about the last
		 * time (a CALL taken on its RETURN's checks alone would be
		 * coded 4.3 s early) */
		at->timestamp_ns += UINT64_MAX / MULT + 1;
		break;
	case LEAF_GAP: /* 120 us: past the tag's 65 */
		for (size_t i = PRE + k; i < PRE + N; i++)
			ev[i].timestamp_ns += 200000;
		break;
	case LEAF_LINK:
		at->detail_seq = 5;
		break;
	case LEAF_DEPTH: /* a CALL deeper than the last RETURN left, or a
	                  * RETURN of another depth than its CALL's */
		at->call_depth = 3;
		break;
	case LEAF_NEW: /* a function not cached: spelled out, and cached */
		at->function_id = 0x200000000ull | k;
		at[at->event_kind == ATF_EVENT_RETURN ? -1 : 1].function_id = at->function_id;
		break;
	default:
		at->timestamp_ns -= 25; /* before the last */
		break;
	}
	struct side a, b;
	side_init(&a, PRE + N, false, false);
	side_init(&b, PRE + N, false, false);
	general(&a, ev, PRE + N);
	general(&b, ev, PRE); /* the functions cached, a pair's RETURN last */
	struct ada_cidx_ring_conv cv = {.tsc0 = TSC0,
	                                .ns0 = NS0,
	                                .mult = MULT,
	                                .d_max = d_max,
	                                .last = b.last,
	                                .tid = TID,
	                                .depth_max = 1u << 24};
	const size_t took = ada_cidx_enc_put_ring(b.enc, ev + PRE, N, &cv, NULL, NULL, &b.o);
	b.last = cv.last;
	if (odd == LEAF_NEW) /* the pass's loop takes it */
		assert_int_equal(took, N);
	else if (odd == LEAF_BACK) /* a time before the pass's moved start
	                            * (cidx_ring.c ring_rebase()) stops it */
		assert_true(took >= k);
	else
		assert_int_equal(took, k);
	for (size_t i = PRE + took; i < PRE + N; i++)
		general(&b, ev + i, 1);
	ada_cidx_enc_seal(a.enc, &a.o);
	ada_cidx_enc_seal(b.enc, &b.o);
	assert_int_equal(a.o.len, b.o.len);
	assert_memory_equal(a.o.p, b.o.p, a.o.len);
	side_fini(&a);
	side_fini(&b);
}

static void test_fused_leaf_stops(void **state)
{
	(void)state;
	for (int odd = 0; odd < LEAF_ODDS; odd++)
		for (size_t k = 1; k < 40; k++)
			leaf_case((enum leaf_odd)odd, k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fused_no_trigger),
	    cmocka_unit_test(test_fused_trigger_stack),
	    cmocka_unit_test(test_fused_recent_window),
	    cmocka_unit_test(test_fused_trigger_wants_names),
	    cmocka_unit_test(test_fused_window_switched),
	    cmocka_unit_test(test_fused_escapes),
	    cmocka_unit_test(test_fused_far_ticks),
	    cmocka_unit_test(test_fused_leaf_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
