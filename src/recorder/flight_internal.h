/* The flight recorder's windows as each thread saw them: private to
 * flight.c, which counts them, and flight_json.c, which writes them into
 * the manifest. Threads: the drain thread only. */
#ifndef ADA_FLIGHT_INTERNAL_H
#define ADA_FLIGHT_INTERNAL_H

#include "detail_internal.h"
#include "recorder_internal.h"

/* One window as one thread saw it. */
struct wal_flight_tw {
	uint64_t records, bytes, unlinked, overwritten;
	/* Records of the window its ring overwrote before they were persisted
	 * (loss.c); estimated when a gap crossed the window's edge. */
	uint64_t lost;
	bool lost_estimated;
	uint64_t oldest_ns; /* oldest record its ring held at the first persist (0: empty) */
	uint64_t newest_ns; /* newest record its ring held at the last persist */
	uint32_t calls, errors;
	/* What the last copy saw: while none of it changes (the ring's head,
	 * the index events taken, the file's ring mapping, the window's
	 * bounds), another copy would decide nothing new, so the post-roll's
	 * 10 ms ticks skip it (counted in `skipped`). */
	uint64_t seen_head, seen_next, seen_base, seen_hole, seen_from, seen_to;
	/* The records takes had put in window memory by then: a take since
	 * (this pass's, before the copy) holds records no walk decided yet. */
	uint64_t seen_taken;
	uint64_t skipped;
	bool spent; /* the last copy stopped at the pass's budget: records are left */
	/* Records of the window the last copy found whose index events the
	 * drain had not taken yet: the window does not close without them. */
	uint64_t waiting;
	uint64_t waiting_in; /* of those, the window's by their own timestamp */
	/* Records it wanted that were neither written nor overwritten, by
	 * reason (enum ada_window_miss); estimated: a share of a kept span
	 * that crossed its edge. */
	uint64_t missed[ADA_WINDOW_MISS_COUNT];
	bool missed_estimated;
	struct wal_fill fill; /* the functions whose records the copies found */
};

/* What window wi persisted on t (flight.c), NULL when it is not held. */
static inline struct wal_flight_tw *wal_flight_tw_of(const struct wal_thread *t, size_t wi)
{
	return wi >= t->fw_base && wi < t->nfw ? &t->fw[wi - t->fw_base] : NULL;
}

/* The pre-roll window w achieved on a thread whose ring held records
 * back to oldest_ns (the first copy's oldest record). */
static inline uint64_t wal_flight_pre_achieved(const struct ada_trigger_window *w,
                                               uint64_t oldest_ns)
{
	uint64_t from = oldest_ns > w->from_ns ? oldest_ns : w->from_ns;
	return from < w->fire_ns ? w->fire_ns - from : 0;
}

/* Window wi of p as the manifest's flight_recorder.windows[] has it. */
json_t *wal_flight_window_json(const struct ada_trigger_window *w, const struct wal_proc *p,
                               size_t wi);

#endif
