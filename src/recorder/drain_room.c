/*
 * The drain's pacing arithmetic: how much room each ring it read has
 * left and how fast its thread writes, for the nap after a busy pass
 * (drain.c drain_nap()) and the windows' detail budget (flight.c).
 *
 * Threads: the drain thread only. Every value read from the arena is
 * bounded by the checked slot read (ada_slot_read_checked) before use.
 */
#include "ring.h"
#include "arena_internal.h"
#include "drain_internal.h"

#define DRAIN_NAP_SPILL_FILL_PCT 12u           /* a spill slot's ring: at most this full */
#define DRAIN_NAP_SLOW_US 2000u                /* drain_nap_slow(): the longest nap */
#define DRAIN_NAP_SLOW_MARGIN 2u               /* ... room for this x each thread's rate */
#define DRAIN_NAP_IDLE_NS_PER_KEV (1ull << 29) /* a thread that wrote nothing since */
#define DRAIN_NAP_RATE_NS 200000ull            /* nap_rate(): the shortest span measured */

/* Room left in slot s's ring with used events in it (events the producer
 * may still write before it waits; 0 for a ring filled to its high
 * watermark, the arena configuration's hw, default half), or UINT64_MAX
 * for a spill slot's ring (512 events: no nap could be short enough for
 * it) that is at most a little full (DRAIN_NAP_SPILL_FILL_PCT), which
 * does not stop the nap. The events taken but not yet released count as
 * used: they stay in the ring until their write completes
 * (docs/format.md). */
static uint64_t room_left(const struct wal_proc *p, uint32_t s, uint64_t used)
{
	uint64_t cap = ada_arena_slot_events(p->arena, s);
	uint32_t fill = ada_ring_fill_pct(used, 0, cap);
	if (cap < p->ring_events)
		return fill > DRAIN_NAP_SPILL_FILL_PCT ? 0 : UINT64_MAX;
	/* At the high watermark: the drain is behind, or the disk is (the
	 * producer refills what each write completion frees). */
	if (used >= cap || fill >= p->high_watermark_pct)
		return 0;
	return cap - used;
}

/* For the flight recorder's detail budget: the least room any ring read
 * this pass had left when read (room_left(); 0 stops the windows'
 * detail in this pass). */
void drain_note_room(struct ada_recorder *r, const struct wal_proc *p, uint32_t s,
                     const struct ada_slot_info *si)
{
	uint64_t room = room_left(p, s, si->head - si->tail); /* <= cap: ada_slot_read_checked */
	r->pass_room_min = room < r->pass_room_min ? room : r->pass_room_min;
}

/* For drain_nap(): the room slot s's ring has once this pass took and
 * released what it could, with the head its last look saw (the events
 * its producer wrote meanwhile, those past a wrap point and those whose
 * write is pending all count); 0 when the take stopped at its budget. */
void drain_note_room_after(struct ada_recorder *r, const struct wal_proc *p, uint32_t s, bool cut,
                           uint64_t ns_per_kev)
{
	uint64_t room = cut ? 0 : room_left(p, s, ada_slot_unconsumed(p->arena, s));
	r->pass_room_after = room < r->pass_room_after ? room : r->pass_room_after;
	/* For drain_nap()'s longer nap: how long this room lasts at
	 * DRAIN_NAP_SLOW_MARGIN times the thread's rate (nap_rate(); 0: a
	 * spill slot's ring, no room, or no rate known). */
	uint64_t ns = 0;
	if (ns_per_kev && room < (1ull << 32)) /* <= 2^32 x 2^29 */
		ns = room * ns_per_kev / (1024u * DRAIN_NAP_SLOW_MARGIN);
	r->pass_slow_ns = ns < r->pass_slow_ns ? ns : r->pass_slow_ns;
}

/* The rate a longer nap is sized by: the fastest t was ever measured at
 * over at least DRAIN_NAP_RATE_NS (the rate it runs at; a wall-clock rate
 * is lower whenever it is descheduled, in a syscall or waiting, and a
 * nap sized by that left a fast thread's next burst to fill its ring: a
 * recent fastest rate forgotten an eighth a pass still made fib wait
 * more for ring space under load). None while it has not been measured
 * (0; a thread that wrote nothing since its first look does not bound
 * the nap) or when it waited for ring space since the last look (the
 * drain was late). */
static uint64_t nap_rate(struct wal_thread *t, uint64_t ns_per_kev, uint64_t dt)
{
	bool waited = t->ring_waits != t->nap_waits;
	t->nap_waits = t->ring_waits;
	if (ns_per_kev && ns_per_kev < DRAIN_NAP_IDLE_NS_PER_KEV && dt >= DRAIN_NAP_RATE_NS &&
	    (!t->nap_kev || ns_per_kev < t->nap_kev))
		t->nap_kev = ns_per_kev;
	if (waited || !ns_per_kev)
		return 0;
	return t->nap_kev ? t->nap_kev : ns_per_kev == DRAIN_NAP_IDLE_NS_PER_KEV ? ns_per_kev : 0;
}

/* For the windows' detail budget (flight.c): how long t's ring would
 * take to fill at the rate its thread wrote since the previous pass; the
 * least over the pass is r->pass_fill_ns. Returns that rate as ns per
 * 1 024 events, for drain_nap(): nap_rate() of it (0: no longer nap). */
uint64_t drain_note_fill(struct ada_recorder *r, const struct wal_proc *p, uint32_t s,
                         struct wal_thread *t, const struct ada_slot_info *si)
{
	uint64_t now = wal_now_ns(), cap = ada_arena_slot_events(p->arena, s);
	uint64_t used = si->head - si->tail, wrote = si->head - t->fill_head;
	uint64_t dt = now - t->fill_ns, ns_per_kev = 0;
	if (t->fill_ns && wrote > 0 && wrote <= cap && used <= cap) {
		double fill = (double)(cap - used) * (double)dt / (double)wrote;
		uint64_t ns = fill < 1e18 ? (uint64_t)fill : UINT64_MAX;
		r->pass_fill_ns = ns < r->pass_fill_ns ? ns : r->pass_fill_ns;
		double kev = (double)dt * 1024.0 / (double)wrote;
		ns_per_kev = kev < (double)DRAIN_NAP_IDLE_NS_PER_KEV ? (uint64_t)kev
		                                                     : DRAIN_NAP_IDLE_NS_PER_KEV;
	} else if (t->fill_ns && wrote == 0 && used <= cap) {
		ns_per_kev = DRAIN_NAP_IDLE_NS_PER_KEV; /* idle since: its fastest rate bounds */
	}
	t->fill_head = si->head;
	t->fill_ns = now;
	return nap_rate(t, ns_per_kev, dt);
}

/* The nap past cap_us (drain_nap()'s longest) for slow threads, when the
 * room-bound nap us reached it: as long as every ring read has room for
 * DRAIN_NAP_SLOW_MARGIN times its thread's fastest rate (nap_rate(); at
 * most DRAIN_NAP_SLOW_US; us when that is shorter, or when a ring's rate
 * is unknown or it is a spill slot's).
 * A thread a few times slower than the fastest a nap allows for left
 * passes a few times smaller than a fast one's, and each pass's fixed
 * costs (the nap's wake-up, the write, the slot scan) were a large part
 * of the drain's CPU per event (docs/benchmarks.md, "Longer naps for
 * slow threads"). A thread whose rate jumps more than the margin during
 * the nap may wait for ring space until the nap ends. */
uint64_t drain_nap_slow(const struct ada_recorder *r, uint64_t us, uint64_t cap_us)
{
	if (r->pass_slow_ns == UINT64_MAX || us < cap_us)
		return us;
	uint64_t slow = r->pass_slow_ns / 1000u;
	slow = slow > DRAIN_NAP_SLOW_US ? DRAIN_NAP_SLOW_US : slow;
	return slow > us ? slow : us;
}
