/* src/analyze: the call graph around one function (callgraph.c): its own
 * numbers over every frame, the tree below its outermost calls (recursion
 * is a node, not a root), the callers by distinct path, and open frames
 * counted but not timed, on hand-made event streams. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analyze.h"

#define C ATF_EVENT_CALL
#define R ATF_EVENT_RETURN
#define X ATF_EVENT_EXCEPTION

enum { F_MAIN = 1, F_A, F_B, F_F, F_G };

static bool is_f(void *ctx, uint64_t fid)
{
	(void)ctx;
	return fid == F_F;
}

static void push(struct ada_callgraph *g, uint64_t ts, uint32_t kind, uint64_t fid, uint32_t depth)
{
	static uint64_t seq;
	struct atf_index_event ev = {.timestamp_ns = ts,
	                             .function_id = fid,
	                             .thread_id = 1,
	                             .event_kind = kind,
	                             .call_depth = depth,
	                             .detail_seq = ATF_NO_DETAIL};
	ada_frames_push(ada_callgraph_walker(g), &ev, 0, seq++);
}

/* The node under parent for fid (NONE when there is none). */
static uint32_t child(const struct ada_callgraph_node *n, uint32_t parent, uint64_t fid)
{
	for (uint32_t c = n[parent].first_child; c != ADA_CALLGRAPH_NONE; c = n[c].next_sibling)
		if (n[c].function_id == fid)
			return c;
	return ADA_CALLGRAPH_NONE;
}

/*
 * main 0..1000 {
 *   a 100..500 { f 200..450 { f 250..400 { g 300..350 } } }
 *   b 600..900 { f 650..700 { g 660..670 } }
 * }
 */
static void recursion_is_a_node(void **state)
{
	struct ada_callgraph *g;
	const struct ada_callgraph_node *n;
	const struct ada_callgraph_caller *c;
	(void)state;

	assert_int_equal(ada_callgraph_new(is_f, NULL, &g), 0);
	push(g, 0, C, F_MAIN, 1);
	push(g, 100, C, F_A, 2);
	push(g, 200, C, F_F, 3);
	push(g, 250, C, F_F, 4);
	push(g, 300, C, F_G, 5);
	push(g, 350, R, F_G, 5);
	push(g, 400, R, F_F, 4);
	push(g, 450, R, F_F, 3);
	push(g, 500, R, F_A, 2);
	push(g, 600, C, F_B, 2);
	push(g, 650, C, F_F, 3);
	push(g, 660, C, F_G, 4);
	push(g, 670, R, F_G, 4);
	push(g, 700, R, F_F, 3);
	push(g, 900, R, F_B, 2);
	push(g, 1000, R, F_MAIN, 1);
	ada_frames_finish(ada_callgraph_walker(g));
	assert_int_equal(ada_callgraph_sort(g), 0);

	/* Every frame of f, as ada report: 3 calls, 250 + 150 + 50 ns, self
	 * 100 + 100 + 40. */
	const struct ada_callgraph_stats *st = ada_callgraph_stats(g);
	assert_int_equal(st->fn.calls, 3);
	assert_int_equal(st->fn.total_ns, 450);
	assert_int_equal(st->fn.self_ns, 240);
	assert_int_equal(st->root_function_id, F_F);

	/* The tree: root f (the 2 outermost calls), f below it, g below both. */
	assert_int_equal(ada_callgraph_nodes(g, &n), 4);
	assert_int_equal(n[0].c.calls, 2);
	assert_int_equal(n[0].c.total_ns, 300);
	assert_int_equal(n[0].c.self_ns, 140);
	uint32_t inner = child(n, 0, F_F), g1 = child(n, 0, F_G);
	assert_int_not_equal(inner, ADA_CALLGRAPH_NONE);
	assert_int_not_equal(g1, ADA_CALLGRAPH_NONE);
	assert_int_equal(n[inner].c.calls, 1);
	assert_int_equal(n[inner].c.total_ns, 150);
	assert_int_equal(n[inner].depth, 1);
	assert_int_equal(n[g1].c.total_ns, 10);
	uint32_t g2 = child(n, inner, F_G);
	assert_int_equal(n[g2].c.total_ns, 50);
	assert_int_equal(n[g2].depth, 2);
	/* Children by total, largest first: f (150) before g (10). */
	assert_int_equal(n[0].first_child, inner);

	/* Callers: main > a (250 ns) first, then main > b (50 ns). */
	assert_int_equal(ada_callgraph_callers(g, &c), 2);
	assert_int_equal(c[0].len, 2);
	assert_int_equal(ada_callgraph_path(g, &c[0])[0], F_MAIN);
	assert_int_equal(ada_callgraph_path(g, &c[0])[1], F_A);
	assert_int_equal(c[0].c.total_ns, 250);
	assert_int_equal(ada_callgraph_path(g, &c[1])[1], F_B);
	assert_int_equal(c[1].c.calls, 1);
	ada_callgraph_free(g);
}

/* f at the bottom of the stack, left open (a crash): counted, not timed;
 * then a second thread's f, left by an exception. */
static void open_and_exception(void **state)
{
	struct ada_callgraph *g;
	const struct ada_callgraph_node *n;
	const struct ada_callgraph_caller *c;
	(void)state;

	assert_int_equal(ada_callgraph_new(is_f, NULL, &g), 0);
	push(g, 10, C, F_F, 1);
	push(g, 20, C, F_G, 2);
	push(g, 30, R, F_G, 2);
	ada_frames_finish(ada_callgraph_walker(g));
	push(g, 100, C, F_F, 1);
	push(g, 130, X, F_F, 1);
	ada_frames_finish(ada_callgraph_walker(g));
	assert_int_equal(ada_callgraph_sort(g), 0);

	const struct ada_callgraph_stats *st = ada_callgraph_stats(g);
	assert_int_equal(st->fn.calls, 2);
	assert_int_equal(st->fn.open, 1);
	assert_int_equal(st->fn.exceptions, 1);
	assert_int_equal(st->fn.total_ns, 30);
	assert_int_equal(ada_callgraph_nodes(g, &n), 2);
	assert_int_equal(n[0].c.calls, 2);
	assert_int_equal(n[0].c.open, 1);
	assert_int_equal(n[0].c.total_ns, 30);
	assert_int_equal(n[1].c.total_ns, 10);
	/* Both at the bottom of a stack: one caller path, empty. */
	assert_int_equal(ada_callgraph_callers(g, &c), 1);
	assert_int_equal(c[0].len, 0);
	assert_int_equal(c[0].c.calls, 2);
	ada_callgraph_free(g);
}

/* A function never called: no tree, no callers. */
static void never_called(void **state)
{
	struct ada_callgraph *g;
	const struct ada_callgraph_node *n;
	const struct ada_callgraph_caller *c;
	(void)state;

	assert_int_equal(ada_callgraph_new(is_f, NULL, &g), 0);
	push(g, 10, C, F_MAIN, 1);
	push(g, 20, R, F_MAIN, 1);
	ada_frames_finish(ada_callgraph_walker(g));
	assert_int_equal(ada_callgraph_sort(g), 0);
	assert_int_equal(ada_callgraph_stats(g)->fn.calls, 0);
	assert_int_equal(ada_callgraph_nodes(g, &n), 0);
	assert_int_equal(ada_callgraph_callers(g, &c), 0);
	ada_callgraph_free(g);
	ada_callgraph_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(recursion_is_a_node),
	    cmocka_unit_test(open_and_exception),
	    cmocka_unit_test(never_called),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
