/*
 * What the detail lane counts as lost (src/recorder/loss.c): detail_overwritten
 * is a drop with --detail always only for the records overwritten before
 * the drain persisted them, and information with --detail triggered
 * (less the window_lost records, which are drops); the gap a look at a
 * ring finds (records overwritten before the drain decided them),
 * including the shortfall of a look that read a moving counter; and a
 * window's share of a gap (inside, outside, across an edge).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ring.h"
#include "detail_internal.h"
#include "recorder_internal.h"

typedef uint64_t drops_t[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];

static void fill(drops_t arena, drops_t rec)
{
	memset(arena, 0, sizeof(drops_t));
	memset(rec, 0, sizeof(drops_t));
	arena[ADA_LANE_INDEX][ADA_DROP_RING_FULL] = 3;
	arena[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 1000;
	arena[ADA_LANE_INDEX][ADA_DROP_CORRUPT] = 77; /* the target's: ignored */
	arena[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 55;
	rec[ADA_LANE_INDEX][ADA_DROP_CORRUPT] = 2;
	rec[ADA_LANE_INDEX][ADA_DROP_THREAD_LIMIT] = 4;
	rec[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 40;
	rec[ADA_LANE_INDEX][ADA_DROP_RING_FULL] = 9; /* not the recorder's to count */
}

static void test_account_triggered(void **state)
{
	(void)state;
	drops_t arena, rec, out;
	uint64_t over = 0;
	fill(arena, rec);
	wal_drops_account(arena, rec, ADA_DETAIL_TRIGGERED, out, &over);
	assert_int_equal(out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 0);
	assert_int_equal(over, 960); /* overwritten, less what windows wanted */
	/* A window's shortfall is no drop (the manifest's detail.window_lost). */
	assert_int_equal(out[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST], 0);
	assert_int_equal(out[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 3);
	assert_int_equal(out[ADA_LANE_INDEX][ADA_DROP_CORRUPT], 2);
	assert_int_equal(out[ADA_LANE_INDEX][ADA_DROP_THREAD_LIMIT], 4);
	/* More window_lost than the counter shows (a counter read low):
	 * never below zero. */
	rec[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 2000;
	wal_drops_account(arena, rec, ADA_DETAIL_TRIGGERED, out, &over);
	assert_int_equal(over, 0);
}

static void test_account_always(void **state)
{
	(void)state;
	drops_t arena, rec, out;
	uint64_t over = 0;
	fill(arena, rec);
	rec[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 0;
	/* Every overwritten record persisted first: the ring lapping, no drop. */
	wal_drops_account(arena, rec, ADA_DETAIL_ALWAYS, out, &over);
	assert_int_equal(out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 0);
	assert_int_equal(over, 1000);
	/* 300 of them overwritten before the drain persisted them: those are
	 * the drops, the other 700 information. */
	rec[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 300;
	wal_drops_account(arena, rec, ADA_DETAIL_ALWAYS, out, &over);
	assert_int_equal(out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 300);
	assert_int_equal(over, 700);
	assert_int_equal(out[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 3);
	/* A counter read low: never below zero. */
	rec[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 5000;
	wal_drops_account(arena, rec, ADA_DETAIL_ALWAYS, out, &over);
	assert_int_equal(out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 5000);
	assert_int_equal(over, 0);
	/* ada recover cannot know which were persisted: it passes the
	 * arena's count, every overwritten record a drop (an upper bound). */
	rec[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 1000;
	wal_drops_account(arena, rec, ADA_DETAIL_ALWAYS, out, &over);
	assert_int_equal(out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 1000);
	assert_int_equal(over, 0);
	rec[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 0;
	/* In place, as `ada recover` calls it. */
	wal_drops_account(arena, rec, ADA_DETAIL_TRIGGERED, arena, &over);
	assert_int_equal(over, 1000);
	assert_int_equal(arena[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN], 0);
	assert_int_equal(arena[ADA_LANE_INDEX][ADA_DROP_CORRUPT], 2);
}

static void test_gap_count(void **state)
{
	(void)state;
	/* First look: 500 overwritten, nothing decided: all a gap. */
	assert_int_equal(wal_gap_count(0, 500, 0, 0), 500);
	/* The same look again: already counted. */
	assert_int_equal(wal_gap_count(0, 500, 0, 500), 0);
	/* 300 decided since, 100 of them still in the ring, 200 of them
	 * overwritten (800 before the oldest): no new gap. */
	assert_int_equal(wal_gap_count(100, 700, 300, 500), 0);
	/* The ring lost the 100 too and 50 undecided after them. */
	assert_int_equal(wal_gap_count(0, 850, 300, 500), 50);
	/* A look that read the counter low (480 for 500): 480 now, the 20
	 * more at the next steady look, though it finds decided records. */
	assert_int_equal(wal_gap_count(0, 480, 0, 0), 480);
	assert_int_equal(wal_gap_count(10, 500, 10, 480), 20);
	/* A counter lower than what is known (scribbled): no gap. */
	assert_int_equal(wal_gap_count(0, 5, 300, 500), 0);
}

static void test_gap_share(void **state)
{
	(void)state;
	bool est = false;
	struct wal_gap g = {.records = 100, .lo_ns = 1000, .hi_ns = 2000, .exact = true};
	assert_int_equal(wal_gap_share(&g, 0, 5000, &est), 100); /* inside */
	assert_false(est);
	assert_int_equal(wal_gap_share(&g, 1000, 2000, &est), 100); /* exactly */
	assert_false(est);
	assert_int_equal(wal_gap_share(&g, 2001, 5000, &est), 0); /* after */
	assert_int_equal(wal_gap_share(&g, 0, 999, &est), 0);     /* before */
	assert_false(est);
	assert_int_equal(wal_gap_share(&g, 1500, 5000, &est), 50); /* across from */
	assert_true(est);
	est = false;
	assert_int_equal(wal_gap_share(&g, 0, 1250, &est), 25); /* across to */
	assert_true(est);
	est = false;
	g.exact = false; /* inside, from a moving counter */
	assert_int_equal(wal_gap_share(&g, 0, 5000, &est), 100);
	assert_true(est);
	est = false;
	struct wal_gap point = {.records = 7, .lo_ns = 3000, .hi_ns = 3000, .exact = true};
	assert_int_equal(wal_gap_share(&point, 3000, 3000, &est), 7);
	assert_int_equal(wal_gap_share(&point, 3001, 4000, &est), 0);
	assert_false(est);
	struct wal_gap none = {.records = 0, .lo_ns = 1, .hi_ns = 2, .exact = true};
	assert_int_equal(wal_gap_share(&none, 0, 10, &est), 0);
	assert_int_equal(wal_gap_share(&g, 10, 5, &est), 0); /* an empty window */
}

/* Gaps found before a window existed: a window created later takes its
 * share of them (its pre-roll reached over them), each record once. */
static void test_gaps_kept(void **state)
{
	(void)state;
	struct wal_gaps_kept k = {0};
	bool est = false;
	/* No window wanted 100 records between 1000 and 2000. */
	wal_gaps_keep(
	    &k, &(struct wal_gap){.records = 100, .lo_ns = 1000, .hi_ns = 2000, .exact = true});
	assert_int_equal(k.n, 1);
	/* A window after it takes nothing of it. */
	assert_int_equal(wal_gaps_take(&k, 2001, 3000, &est), 0);
	assert_false(est);
	/* A window created later whose pre-roll reaches over half of it. */
	assert_int_equal(wal_gaps_take(&k, 1500, 3000, &est), 50);
	assert_true(est);
	/* The rest, once: a window over all of it gets the 50 left, estimated. */
	est = false;
	assert_int_equal(wal_gaps_take(&k, 0, 5000, &est), 50);
	assert_true(est);
	assert_int_equal(k.n, 0);
	assert_int_equal(wal_gaps_take(&k, 0, 5000, &est), 0);
	/* A gap wholly inside the later window: exact. */
	est = false;
	wal_gaps_keep(&k,
	              &(struct wal_gap){.records = 7, .lo_ns = 100, .hi_ns = 200, .exact = true});
	assert_int_equal(wal_gaps_take(&k, 50, 300, &est), 7);
	assert_false(est);
	/* Nothing to keep. */
	wal_gaps_keep(&k, &(struct wal_gap){.records = 0, .lo_ns = 1, .hi_ns = 2});
	assert_int_equal(k.n, 0);
	/* Full: the oldest merge, the count stays whole. */
	uint64_t sum = 0;
	for (unsigned i = 0; i < WAL_GAPS_KEPT + 3; i++) {
		wal_gaps_keep(&k, &(struct wal_gap){.records = i + 1,
		                                    .lo_ns = 1000 * i,
		                                    .hi_ns = 1000 * i + 500,
		                                    .exact = true});
		sum += i + 1;
	}
	assert_int_equal(k.n, WAL_GAPS_KEPT);
	assert_false(k.g[0].exact);
	assert_int_equal(k.g[0].lo_ns, 0);
	est = false;
	assert_int_equal(wal_gaps_take(&k, 0, UINT64_MAX, &est), sum);
	assert_true(est); /* the merged one */
	assert_int_equal(k.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_account_triggered), cmocka_unit_test(test_account_always),
	    cmocka_unit_test(test_gap_count),         cmocka_unit_test(test_gap_share),
	    cmocka_unit_test(test_gaps_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
