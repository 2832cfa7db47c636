/*
 * Synthetic index event streams for the compact index's tests and bench
 * (tests/unit/test_atf_cidx.c, bench/cidx_bench.c): what the hooks emit
 * for a recursive fib and for a program of 200 functions, and the edges
 * (deep recursion, unwinds, signal markers, time jumps, odd values).
 * Deterministic: a xorshift generator seeded by the caller.
 */
#ifndef ADA_TEST_CIDX_STREAMS_H
#define ADA_TEST_CIDX_STREAMS_H

#include <stdint.h>
#include <stdlib.h>

#include "atf_format.h"

struct cs_gen {
	struct atf_index_event *ev;
	size_t n, cap;
	uint64_t ts, rng;
	uint32_t tid;
	uint32_t depth;
	uint64_t stack[4096];
};

static inline uint64_t cs_rand(struct cs_gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static inline void cs_init(struct cs_gen *g, size_t cap, uint64_t seed)
{
	g->ev = calloc(cap ? cap : 1, sizeof(*g->ev));
	g->n = 0;
	g->cap = cap;
	g->ts = 1000000000ull + seed;
	g->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	g->tid = 4242;
	g->depth = 0;
}

static inline void cs_emit(struct cs_gen *g, uint64_t dt, uint64_t fid, uint32_t kind,
                           uint32_t depth)
{
	if (g->n == g->cap)
		return;
	g->ts += dt;
	g->ev[g->n++] = (struct atf_index_event){g->ts, fid, g->tid, kind, depth, ATF_NO_DETAIL};
}

static inline void cs_call(struct cs_gen *g, uint64_t dt, uint64_t fid)
{
	g->stack[g->depth % 4096] = fid;
	g->depth++;
	cs_emit(g, dt, fid, ATF_EVENT_CALL, g->depth);
}

static inline void cs_ret(struct cs_gen *g, uint64_t dt, uint32_t kind)
{
	cs_emit(g, dt, g->stack[(g->depth - 1) % 4096], kind, g->depth);
	g->depth--;
}

/* fib(k), one function, deltas of 2..40 ns (the hooks' own cost and a
 * few instructions of body). */
static inline void cs_fib(struct cs_gen *g, unsigned k)
{
	cs_call(g, 2 + cs_rand(g) % 39, atf_function_id(1, 17));
	if (k >= 2) {
		cs_fib(g, k - 1);
		cs_fib(g, k - 2);
	}
	cs_ret(g, 2 + cs_rand(g) % 39, ATF_EVENT_RETURN);
}

static inline void cs_fib_stream(struct cs_gen *g)
{
	while (g->n < g->cap)
		cs_fib(g, 20);
}

/* 200 functions in 3 modules, a random call tree up to depth 24: the
 * callee is skewed (a few functions take most calls), deltas 5..300 ns. */
static inline void cs_mixed_stream(struct cs_gen *g)
{
	while (g->n < g->cap) {
		uint64_t r = cs_rand(g);
		bool call = g->depth == 0 || (g->depth < 24 && (r & 0xff) < 124);
		if (call) {
			uint32_t f = (uint32_t)((r >> 8) % 200);
			f = (r >> 40) & 1 ? f % 20 : f; /* half the calls to 20 of them */
			cs_call(g, 5 + (r >> 16) % 296, atf_function_id(1 + f % 3, 100 + f * 7));
		} else {
			cs_ret(g, 5 + (r >> 16) % 296, ATF_EVENT_RETURN);
		}
	}
}

#endif
