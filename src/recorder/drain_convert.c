/*
 * The drain's conversion of a ring's events into a thread's index file:
 * each event checked (wal_event_bad), its counter time made
 * CLOCK_BOOTTIME ns by the recorder's clock, written straight into the
 * file's staging buffer a chunk at a time, fed to the trigger engine and
 * committed (drain.c takes the events from the ring and releases them).
 * A compact file's events mostly take the fused pass instead
 * (drain_fused(): cidx.h ada_cidx_enc_put_ring), one pass per event from
 * the ring into the coded block and the trigger's stack; the events it
 * stops at come back here, one or a doubling run at a time.
 *
 * Threads: the drain thread only (drain.c).
 * Invariants: a thread's output timestamps never decrease (clamped); a
 * batch with a bad event is converted again event by event up to it, and
 * the slot is quarantined there.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "ring.h"
#include "arena_internal.h"
#include "detail_internal.h"
#include "drain_internal.h"

#define DRAIN_CHUNK 256u /* events converted, fed and CRCed together: 8 KiB */

/* The general loop: any piece of the clock per event (a batch that
 * straddles a re-anchor), each event checked with wal_event_bad(). */
static uint64_t drain_convert_any(const struct ada_tsc_clock *clk, bool use_tsc,
                                  const struct atf_index_event *src, struct atf_index_event *dst,
                                  size_t k, uint64_t last, uint32_t tid, uint64_t ts_max,
                                  uint32_t *bad)
{
	uint32_t acc = 0;
	for (size_t i = 0; i < k; i++) {
		struct atf_index_event e = src[i];
		acc |= wal_event_bad(&e, tid, ts_max);
		uint64_t ts = use_tsc ? ada_tsc_clock_to_ns(clk, e.timestamp_ns) : e.timestamp_ns;
		ts = ts < last ? last : ts;
		last = ts;
		e.timestamp_ns = ts;
		dst[i] = e;
	}
	*bad = acc;
	return last;
}

/* The piece of the clock for a batch that starts with src[0]: the one
 * ada_tsc_clock_to_ns() takes for it. A drain that runs behind (a loaded
 * machine) converts events older than the newest re-anchor; each batch
 * still takes the fast loop unless it straddles a re-anchor. *hi becomes
 * the largest raw value of that piece (the next one's tsc0 - 1). */
static struct ada_tsc_map drain_piece(const struct ada_tsc_clock *c,
                                      const struct atf_index_event *src, uint64_t *hi)
{
	uint32_t i = c->n ? c->n - 1 : 0;
	uint64_t first;
	memcpy(&first, &src[0].timestamp_ns, sizeof(first)); /* checked with the batch */
	while (i > 0 && first < c->maps[i].tsc0) {
		*hi = c->maps[i].tsc0 - 1 < *hi ? c->maps[i].tsc0 - 1 : *hi;
		i--;
	}
	return c->maps[i];
}

/* One event of the hot loop (wal_convert_batch()): four 64-bit words in,
 * the converted four out, the checks folded into the accumulators. */
#define DRAIN_CONVERT_ONE(IN, OUT)                                                                 \
	do {                                                                                       \
		uint64_t w0, w1, w2, w3;                                                           \
		memcpy(&w0, (IN), 8);                                                              \
		memcpy(&w1, (IN) + 8, 8);                                                          \
		memcpy(&w2, (IN) + 16, 8);                                                         \
		memcpy(&w3, (IN) + 24, 8);                                                         \
		uint64_t d = w0 - tsc0;                                                            \
		d_max = d > d_max ? d : d_max;                                                     \
		uint64_t x2 = w2 ^ tid;                                                            \
		acc2 |= x2 | (x2 - kind_one);                                                      \
		acc3 |= w3 ^ seq_hi;                                                               \
		uint64_t ts = ns0 + (uint64_t)(((unsigned __int128)d * mult) >> 32);               \
		ts = ts < last ? last : ts;                                                        \
		last = ts;                                                                         \
		memcpy((OUT), &ts, 8);                                                             \
		memcpy((OUT) + 8, &w1, 8);                                                         \
		memcpy((OUT) + 16, &w2, 8);                                                        \
		memcpy((OUT) + 24, &w3, 8);                                                        \
	} while (0)

/* The hot loop: copies k events, TSC -> ns on the piece of the clock of
 * the first (drain_piece()), clamped to stay >= last. Every check of
 * wal_event_bad() is kept, folded into three accumulators over the batch
 * so that they stay in registers and one test after the loop says
 * whether any event may have failed; drain_convert_bad() then asks
 * wal_event_bad() event by event, so an accumulator may only ever say
 * too much (a false alarm costs a second pass), never too little:
 *   - x2 = (thread_id ^ tid) | event_kind << 32: an event is fine when
 *     its low half is 0 and its kind 1..3. ORing x2 and x2 - 2^32 over
 *     the batch leaves only bits 32-33 set exactly when every low half is
 *     0, no kind is >= 4 (bit 34 or above of x2) and none is 0 (x2 - 2^32
 *     borrows into bits 32-63); the low half never borrows: 2^32 has none;
 *   - x3 = call_depth | (detail_seq ^ ATF_NO_DETAIL) << 32: fine when it is
 *     at most WAL_MAX_DEPTH. Their OR is at least their largest, so an OR
 *     at most WAL_MAX_DEPTH means every one is (the OR can pass the bound
 *     when none does only with a depth of exactly 2^24: a false alarm);
 *   - d = raw - tsc0: the largest d above hi - tsc0 means a raw
 *     timestamp beyond ts_max or beyond the piece, or one older than the
 *     piece (d wrapped): the batch straddles a re-anchor, or holds a bad
 *     timestamp; drain_convert_any() then converts the batch again, event
 *     by event, and says which (a maximum, not an OR: d of events close
 *     in time ORed would often pass the bound).
 * The event moves as four 64-bit words held in registers, stored as four
 * scalar stores: a copy through a stack array made the compiler store
 * the new timestamp (8 bytes) and load it back as half of a 16-byte
 * vector, a store-forwarding stall that took 3/4 of the drain's samples
 * in this loop (perf, wal_bench). Two events (one 64-byte line) per
 * iteration: one prefetch of each side per line.
 * ts=clock arenas use the identity map (tsc0 0, mult 2^32, shift 32). */
uint64_t wal_convert_batch(const struct ada_tsc_clock *clk, bool use_tsc,
                           const struct atf_index_event *src, struct atf_index_event *dst, size_t k,
                           uint64_t last, uint32_t tid, uint64_t ts_max, uint32_t *bad)
{
	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "w2/w3 below are little-endian");
	_Static_assert(sizeof(struct atf_index_event) == 32 &&
	                   offsetof(struct atf_index_event, thread_id) == 16 &&
	                   offsetof(struct atf_index_event, event_kind) == 20 &&
	                   offsetof(struct atf_index_event, call_depth) == 24 &&
	                   offsetof(struct atf_index_event, detail_seq) == 28,
	               "the event is four 64-bit words");
	_Static_assert(ATF_EVENT_CALL == 1 && ATF_EVENT_RETURN == 2 && ATF_EVENT_EXCEPTION == 3,
	               "the kinds are 1..3 (wal_event_bad())");
	if (k == 0) {
		*bad = 0;
		return last;
	}
	struct ada_tsc_map m = {.mult = 1ull << 32, .shift = 32};
	uint64_t hi = ts_max; /* the largest raw value the piece converts */
	if (use_tsc)
		m = drain_piece(clk, src, &hi);
	if (m.shift != 32)
		return drain_convert_any(clk, use_tsc, src, dst, k, last, tid, ts_max, bad);
	const uint64_t tsc0 = m.tsc0, ns0 = m.ns0, mult = m.mult;
	const uint64_t last_in = last, seq_hi = (uint64_t)ATF_NO_DETAIL << 32;
	const uint64_t kind_one = 1ull << 32;
	uint64_t d_max = 0, acc2 = 0, acc3 = 0;
	const char *in = (const char *)src;
	char *out = (char *)dst;
	const char *pair_end = in + (k & ~(size_t)1) * 32;
	for (; in != pair_end; in += 64, out += 64) {
		/* The ring lines were just written on the producer's core: ask
		 * for them ahead (cache-to-cache misses dominate this loop). The
		 * staging buffer was last touched a pool cycle ago: ask for its
		 * lines ahead too, for writing, or each store's read for
		 * ownership stalls the loop. Both 2 KiB ahead lowered the drain's
		 * CPU per event; the ring's distance alone changed nothing
		 * (docs/benchmarks.md, "The staging buffer asked for ahead"). Past the end of
		 * the batch or buffer they ask for nothing useful, harmlessly. */
		__builtin_prefetch(in + 64 * 32);
		__builtin_prefetch(out + 64 * 32, 1);
		DRAIN_CONVERT_ONE(in, out);
		DRAIN_CONVERT_ONE(in + 32, out + 32);
	}
	if (k & 1)
		DRAIN_CONVERT_ONE(in, out);
	if (d_max > (hi >= tsc0 ? hi - tsc0 : 0))
		return drain_convert_any(clk, use_tsc, src, dst, k, last_in, tid, ts_max, bad);
	/* The conditions of wal_event_bad(), over the whole batch (which
	 * one failed: drain_convert_bad() asks wal_event_bad() again). */
	*bad = ((acc2 & ~(3ull << 32)) != 0) | (acc3 > WAL_MAX_DEPTH) << 3;
	return last;
}
#undef DRAIN_CONVERT_ONE

/* A batch held an event the producer cannot have written: convert again,
 * one event at a time, up to the first bad one, so what is kept is
 * exactly what was checked (the shared ring may change between two
 * reads), and quarantine the slot there. Returns the events kept. */
static size_t drain_convert_bad(const struct ada_recorder *r, struct wal_thread *t,
                                const struct atf_index_event *src, struct atf_index_event *dst,
                                size_t k, uint64_t ts_max, uint64_t pos)
{
	size_t j = 0;
	uint32_t why = 0;
	for (; j < k; j++) {
		struct atf_index_event e = src[j];
		if (wal_event_bad(&e, t->tid, ts_max))
			break;
		uint64_t ts =
		    r->use_tsc ? ada_tsc_clock_to_ns(&r->clk, e.timestamp_ns) : e.timestamp_ns;
		t->last_ts = e.timestamp_ns = ts < t->last_ts ? t->last_ts : ts;
		dst[j] = e;
	}
	if (j < k) {
		struct atf_index_event e = src[j];
		uint64_t value = 0;
		wal_events_first_bad(&e, 1, t->tid, ts_max, &why, &value);
		ada_slot_quarantine(t->p->arena, t->slot, ADA_FAULT_EVENT, pos + j, why, value);
	}
	return j;
}

/* Raw timestamps of events published before now are at most now; ns
 * (ts=clock arenas) are checked by the clamp only. A counter ada cannot
 * read (another architecture's) stands now where its clock puts it. */
static uint64_t drain_ts_max(const struct ada_recorder *r)
{
	if (!r->use_tsc)
		return UINT64_MAX;
	uint64_t now = r->foreign_counter ? ada_tsc_clock_counter_at(&r->clk, ada_boottime_ns())
	                                  : ada_tsc_read();
	return now > UINT64_MAX - WAL_TSC_SLACK ? UINT64_MAX : now + WAL_TSC_SLACK;
}

/* One chunk the general way: k events converted into dst (the reserve's
 * room), fed to the triggers and committed. Returns the events consumed
 * (fewer than k when the slot was quarantined at a bad event). */
static size_t drain_chunk(struct ada_recorder *r, struct wal_thread *t,
                          const struct atf_index_event *src, struct atf_index_event *dst, size_t k,
                          uint64_t ts_max, uint64_t pos)
{
	uint32_t bad;
	uint64_t before = t->last_ts;
	t->last_ts =
	    wal_convert_batch(&r->clk, r->use_tsc, src, dst, k, t->last_ts, t->tid, ts_max, &bad);
	if (ada_unlikely(bad)) {
		t->last_ts = before;
		size_t j = drain_convert_bad(r, t, src, dst, k, ts_max, pos);
		wal_flight_feed(t, dst, j); /* triggers judge the converted stream */
		ada_wal_file_commit(t->f, j);
		return j; /* j == k: the first read was bad, the second one fine */
	}
	if (ada_unlikely(!t->first_ts)) /* the detail lane's lower bound (loss.c) */
		t->first_ts = dst[0].timestamp_ns;
	wal_flight_feed(t, dst, k); /* triggers judge the converted stream */
	ada_wal_file_commit(t->f, k);
	return k;
}

/* The fused pass (ada_wal_file_put_ring()): the ring events from src on,
 * converted on the piece of the clock of the first, coded and fed to the
 * trigger's stack in one pass; returns the events taken, 0 when the
 * general way must take the next one (or every one: ATF v2, the detail
 * lane's recent window, a trigger that wants names). */
static size_t drain_fused(struct ada_recorder *r, struct wal_thread *t,
                          const struct atf_index_event *src, size_t n, uint64_t ts_max)
{
	struct ada_tsc_map m = {.mult = 1ull << 32, .shift = 32};
	uint64_t hi = ts_max;
	if (!t->first_ts)
		return 0; /* the first event sets it (drain_chunk()) */
	if (r->use_tsc)
		m = drain_piece(&r->clk, src, &hi);
	if (m.shift != 32)
		return 0;
	struct ada_cidx_ring_conv cv = {.tsc0 = m.tsc0,
	                                .ns0 = m.ns0,
	                                .mult = m.mult,
	                                .d_max = hi >= m.tsc0 ? hi - m.tsc0 : 0,
	                                .last = t->last_ts,
	                                .tid = t->tid,
	                                .depth_max = WAL_MAX_DEPTH};
	struct ada_cidx_calls calls, *cp = NULL;
	if (t->trig) {
		if (!ada_trigger_calls_begin(t->trig, &calls))
			return 0;
		cp = &calls;
	}
	size_t k = ada_wal_file_put_ring(t->f, src, n, &cv, cp);
	if (cp)
		ada_trigger_calls_end(t->trig, cp);
	t->last_ts = cv.last;
	return k;
}

/* A chunk of k events (the reserve's room, dst_cap of them in dst): the
 * fused pass takes what it can, and each event it stops at goes the
 * general way (drain_chunk(), dst_cap at most at a time), then the fused
 * pass again. A chunk while a trigger
 * wants names goes the general way whole; events the fused pass keeps
 * stopping at soon (a stack deeper than the trigger keeps, a function
 * new at every other event) go in runs that double until the fused pass
 * again takes a stretch of FUSED_STRETCH events, so such a stream costs
 * a few calls, not two per event. Returns the events consumed, as
 * drain_chunk(). */
#define FUSED_STRETCH 64
static size_t drain_chunk_fused(struct ada_recorder *r, struct wal_thread *t,
                                const struct atf_index_event *src, struct atf_index_event *dst,
                                size_t dst_cap, size_t k, uint64_t ts_max, uint64_t pos)
{
	size_t i = 0, run = 1;
	struct ada_cidx_calls calls;
	/* a trigger that wants names: the whole chunk the general way */
	const bool names = t->trig && !ada_trigger_calls_begin(t->trig, &calls);
	if (t->trig && !names)
		ada_trigger_calls_end(t->trig, &calls);
	while (i < k) {
		size_t f = names ? 0 : drain_fused(r, t, src + i, k - i, ts_max);
		i += f;
		if (i == k)
			break;
		run = names ? k : f >= FUSED_STRETCH ? 1 : run;
		size_t g = run < k - i ? run : k - i;
		g = g < dst_cap ? g : dst_cap; /* dst holds dst_cap events */
		size_t got = drain_chunk(r, t, src + i, dst, g, ts_max, pos + i);
		if (got < g)
			return i + got;
		i += g;
		run *= 2;
	}
	return k;
}

/* Whether the events taken now go into a compact file's recent window
 * (ada_wal_file_keep_recent()): the detail persist reads an event back
 * only for a record it writes, which --detail always does for every one
 * and --detail triggered only inside a window; so, triggered, kept only
 * while a trigger is armed or a window open. Asked at each take: a
 * trigger armed live (`ada arm`) turns it on for the next one; a window
 * whose pre-roll reaches further back reads those events by decoding
 * their blocks (segment_cidx.c), as far back as the window would. */
static bool drain_keep_recent(const struct ada_recorder *r)
{
	if (r->o.detail_mode != ADA_DETAIL_TRIGGERED)
		return true; /* always: every record; never: no window to keep */
	return r->flight.trig && ada_trigger_may_window(r->flight.trig);
}

/* Converts n ring events into t's file; returns the events consumed
 * (fewer than n when the slot was quarantined at a bad event). One chunk
 * at a time, so that the trigger engine's pass and the CRC-32 (in the
 * commit) read the converted events from L1, where the conversion just
 * wrote them (a whole 1 MiB staging buffer between passes went to L2);
 * a compact file's chunk mostly takes the fused pass, with no converted
 * copy at all. */
size_t drain_convert(struct ada_recorder *r, struct wal_thread *t,
                     const struct atf_index_event *src, size_t n)
{
	size_t done = 0;
	const uint64_t ts_max = drain_ts_max(r);
	if (t->f)
		ada_wal_file_keep_recent(t->f, drain_keep_recent(r));
	while (done < n) {
		struct atf_index_event *dst;
		const bool fused = r->o.index_format == ADA_INDEX_COMPACT;
		size_t chunk = fused ? ADA_WAL_RING_CHUNK : DRAIN_CHUNK, cap = 0;
		size_t want = n - done < chunk ? n - done : chunk;
		size_t k = !t->f   ? 0
		           : fused ? ada_wal_file_reserve_ring(t->f, want, &dst, &cap)
		                   : ada_wal_file_reserve(t->f, want, &dst);
		if (k == 0) { /* disk full or the file failed: count, keep going */
			if (t->file_ring_hole == UINT64_MAX) /* detail links stop here */
				t->file_ring_hole = t->ring_next + done;
			if (t->refused) { /* no file since a rotation: drain_fd_limit() */
				t->p->rec_drops[ADA_LANE_INDEX][t->refuse_why] += n - done;
				return n;
			}
			t->lost += n - done;
			t->lost_pending += n - done;
			r->lost_total += n - done;
			return n;
		}
		size_t got =
		    fused ? drain_chunk_fused(r, t, src + done, dst, cap, k, ts_max,
		                              t->ring_next + done)
		          : drain_chunk(r, t, src + done, dst, k, ts_max, t->ring_next + done);
		if (got < k)
			return done + got;
		done += k;
	}
	return done;
}
