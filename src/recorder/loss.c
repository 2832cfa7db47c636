/*
 * What the detail lane counts as lost, and what it does not
 * (docs/internals.md, "What the detail lane counts").
 *
 * With --detail triggered every thread's detail ring fills in memory all
 * the time and only windows around fires are persisted: the ring
 * overwriting records no window asked for is the flight recorder working,
 * not a loss. So the arena's detail_overwritten counter (counted by the
 * producer in every mode: the hot path does not know the mode) is shown
 * as information there, and the records a window did want but no longer
 * found in the ring are the window's shortfall, counted by the recorder as
 * window_lost and told as what the window achieved, not as a drop.
 * With --detail always every record was wanted: the records the drain
 * found overwritten before it persisted them (the gap of each look,
 * wal_gap_count) are the detail_overwritten drops, counted by the
 * recorder; the ring overwriting records already persisted is the ring
 * lapping, information like triggered's turnover.
 *
 * Pure functions of their arguments (unit-tested in test_wal_loss.c);
 * the drain thread calls them.
 */
#include <string.h>

#include "detail_internal.h"
#include "recorder_internal.h"

void wal_drops_account(const uint64_t arena[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT],
                       const uint64_t rec[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT],
                       uint32_t detail_mode, uint64_t out[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT],
                       uint64_t *overwritten)
{
	/* Read before out is written: the caller may pass arena as out. */
	uint64_t over = arena[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	uint64_t lost = rec[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST];
	uint64_t gone = rec[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
			out[l][k] = wal_drop_is_recorders(k) ? rec[l][k] : arena[l][k];
		}
	/* What a window wanted and its ring no longer held is the window's
	 * shortfall, told as what it achieved (the manifest's windows and
	 * detail.window_lost, the summary), not a drop: nothing the program
	 * did went unrecorded in the index lane. */
	out[ADA_LANE_INDEX][ADA_DROP_WINDOW_LOST] = out[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 0;
	if (detail_mode == ADA_DETAIL_ALWAYS) {
		/* The records lost are among the overwritten ones: what is
		 * left was persisted before its slot was reused. */
		out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = gone;
		*overwritten = over > gone ? over - gone : 0;
		return;
	}
	if (detail_mode != ADA_DETAIL_TRIGGERED) {
		*overwritten = over; /* never: no ring, nothing to count */
		return;
	}
	/* The window_lost records are among the overwritten ones: what is
	 * left is what no window wanted. */
	*overwritten = over > lost ? over - lost : 0;
	out[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] = 0;
}

uint64_t wal_gap_count(uint64_t decided_in_ring, uint64_t overwritten, uint64_t decided,
                       uint64_t counted)
{
	/* Records are decided in push order, so the decided ones still in
	 * the ring are its oldest: every record before them was overwritten,
	 * either decided (decided - decided_in_ring of them) or not (the
	 * gaps: those counted before, and a new one). A look that read the
	 * counter while it moved passes a value below the truth: its
	 * shortfall shows here at the next look that reads it steady. */
	uint64_t have = overwritten + decided_in_ring, known = decided + counted;
	return have > known ? have - known : 0;
}

uint64_t wal_gap_share(const struct wal_gap *g, uint64_t from_ns, uint64_t to_ns, bool *estimated)
{
	if (g->records == 0 || from_ns > to_ns)
		return 0;
	uint64_t lo = g->lo_ns, hi = g->hi_ns > g->lo_ns ? g->hi_ns : g->lo_ns;
	if (hi < from_ns || lo > to_ns)
		return 0; /* wholly outside */
	if (!g->exact)
		*estimated = true;
	if (lo >= from_ns && hi <= to_ns)
		return g->records; /* wholly inside */
	/* Across an edge of the window: which of the records were inside
	 * cannot be known any more (they are gone); share them by time. */
	*estimated = true;
	uint64_t a = lo > from_ns ? lo : from_ns, b = hi < to_ns ? hi : to_ns;
	double part = (double)(b - a) / (double)(hi - lo);
	uint64_t n = (uint64_t)((double)g->records * part + 0.5);
	return n > g->records ? g->records : n;
}

void wal_gaps_keep(struct wal_gaps_kept *k, const struct wal_gap *g)
{
	if (g->records == 0)
		return;
	if (k->n >= WAL_GAPS_KEPT) { /* full: the oldest two become one */
		struct wal_gap *a = &k->g[0], *b = &k->g[1];
		a->records += b->records;
		a->lo_ns = a->lo_ns < b->lo_ns ? a->lo_ns : b->lo_ns;
		a->hi_ns = a->hi_ns > b->hi_ns ? a->hi_ns : b->hi_ns;
		a->exact = false;
		memmove(b, b + 1, (size_t)(k->n - 2) * sizeof(*b));
		k->n--;
	}
	k->g[k->n++] = *g;
}

uint64_t wal_gaps_take(struct wal_gaps_kept *k, uint64_t from_ns, uint64_t to_ns, bool *estimated)
{
	uint64_t taken = 0;
	unsigned j = 0;
	for (unsigned i = 0; i < k->n && i < WAL_GAPS_KEPT; i++) {
		struct wal_gap g = k->g[i];
		uint64_t n = wal_gap_share(&g, from_ns, to_ns, estimated);
		n = n > g.records ? g.records : n;
		taken += n;
		g.records -= n;
		if (n && g.records) /* the rest: spread over the whole span no more */
			g.exact = false;
		if (g.records)
			k->g[j++] = g;
	}
	k->n = j;
	return taken;
}
