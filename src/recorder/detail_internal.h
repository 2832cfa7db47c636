/* The recorder's detail lane (detail_file.c, detail_persist.c, loss.c,
 * recover_detail.c): private declarations of its files and of those that
 * drive it (the drain, the flight recorder, manifests, recovery). */
#ifndef ADA_DETAIL_INTERNAL_H
#define ADA_DETAIL_INTERNAL_H

#include "recorder_internal.h"

/* ---- the detail lane on the drain side (detail_file.c, detail_persist.c) ----
 * Threads: the drain thread only, like everything of a wal_thread. */

/* ---- what the detail lane counts as lost (loss.c) ---- */

/* The drops as reported: the arena's counters (arena) with the
 * recorder's own reasons (wal_drop_is_recorders(), window_lost) from rec.
 * With --detail triggered, detail_overwritten is not a drop (a flight
 * recorder overwrites what no window wanted): out carries 0 for it and
 * *overwritten the records overwritten that no window wanted (the
 * arena's count less rec's window_lost). With --detail always the drop
 * is rec's detail_overwritten (records overwritten before the drain
 * persisted them: the gaps its looks found) and *overwritten the rest of
 * the arena's count (persisted, then overwritten: the ring lapping).
 * A caller that cannot know the loss (ada recover) passes the arena's
 * count in rec: an upper bound. */
void wal_drops_account(const uint64_t arena[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT],
                       const uint64_t rec[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT],
                       uint32_t detail_mode, uint64_t out[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT],
                       uint64_t *overwritten);
/* The drop reasons the recorder counts (its rec_drops), never the
 * producer: the arena's counters of these are not read. */
static inline bool wal_drop_is_recorders(int k)
{
	return k == ADA_DROP_CORRUPT || k == ADA_DROP_THREAD_LIMIT || k == ADA_DROP_FD_LIMIT ||
	       k == ADA_DROP_UNREAD_AT_END;
}
/* Detail records a thread's ring overwrote before the drain decided them
 * (persisted or passed over) that no look counted yet, from one look at
 * the ring: the ring's overwritten counter (the records before its
 * oldest), decided_in_ring (records the look found that were decided
 * before), decided (records decided, ever) and counted (the records
 * earlier looks counted so). Exact when the counter is; one read low
 * makes this one low and the next look's high by as much. */
uint64_t wal_gap_count(uint64_t decided_in_ring, uint64_t overwritten, uint64_t decided,
                       uint64_t counted);
/* One such gap: how many records, and the times they lie between. */
struct wal_gap {
	uint64_t records;
	uint64_t lo_ns; /* newer than this: the last record decided, or the thread's first event */
	uint64_t hi_ns; /* older than this: the oldest record left in the ring (or now) */
	bool exact;     /* records is exact (the ring's counter stood still around the look) */
};
/* How many of g's records window [from_ns, to_ns] wanted: all of them when
 * the gap lies inside it, none when outside; across an edge, a share in
 * proportion to the time inside (then *estimated is set, as when g is not
 * exact). */
uint64_t wal_gap_share(const struct wal_gap *g, uint64_t from_ns, uint64_t to_ns, bool *estimated);
/* The records of a thread's gaps that no window wanted when they were
 * found: a window created later (its trigger fired later, its pre-roll
 * reaching back over them) wanted them too, so they are its shortfall
 * then, not overwritten records no one asked for. Kept per thread, the
 * oldest two merged when full: their count stays exact, their span wider
 * (a share of them then is estimated). */
#define WAL_GAPS_KEPT 8
struct wal_gaps_kept {
	struct wal_gap g[WAL_GAPS_KEPT];
	unsigned n;
};
/* Keeps what no window took of a gap (g->records of them). */
void wal_gaps_keep(struct wal_gaps_kept *k, const struct wal_gap *g);
/* Takes window [from_ns, to_ns]'s share (wal_gap_share) of each kept gap
 * out of k and returns how many records that is. */
uint64_t wal_gaps_take(struct wal_gaps_kept *k, uint64_t from_ns, uint64_t to_ns, bool *estimated);

/* The functions whose records filled a detail ring, by bytes: a small
 * space-saving list (Metwally et al.): a function not listed takes the
 * smallest entry's place and count, which it keeps as its error, so
 * bytes - err is a lower bound of its bytes and bytes an upper one, and
 * the heaviest functions stay listed. */
#define WAL_FILL_TOP 8u
struct wal_fill {
	uint64_t fn[WAL_FILL_TOP], bytes[WAL_FILL_TOP], err[WAL_FILL_TOP];
	uint64_t total; /* every record's bytes */
};
/* Counts a record of fn of len bytes (flight.c). */
void wal_fill_add(struct wal_fill *f, uint64_t fn, uint64_t len);

/* What one wal_detail_persist() call did (and saw). */
struct wal_detail_stats {
	uint64_t records;      /* detail events appended to detail.atf by this call */
	uint64_t bytes;        /* bytes they took in detail.atf */
	uint64_t oldest_ns;    /* timestamp of the oldest record the ring still held (0: empty) */
	uint64_t newest_ns;    /* ... and of the newest */
	uint64_t overwritten;  /* records the ring overwrote since the previous call on this
	                          thread (persisted before or not: gap says which were not) */
	uint64_t unlinked;     /* records in the window NOT persisted because their index event
	                          could not be patched (in a retired generation, lost to a full
	                          disk, or not matching the record): counted, never silent */
	uint64_t fd_limited;   /* records not persisted because their detail file could not be
	                          opened at the recorder's limit of open files (fd_limit drops) */
	uint64_t deferred;     /* records in the window whose index event the drain has not
	                          taken yet: left for a later call */
	uint64_t waiting;      /* of those, the ones not past to_ns by their own timestamp
	                          (the index lane's, clamped, is never earlier): the
	                          window waits for them */
	uint64_t waiting_in;   /* of those, the ones not before from_ns either: the window's
	                          by their own timestamp (at the thread's last copy, never
	                          to be taken: the window's unread_at_end) */
	uint64_t bad_link;     /* records in the window (by their own timestamp) linked at or
	                          past the index ring's head (pd_index_head): no event of theirs exists,
	                          decided and left out (the window's bad_link) */
	struct wal_gap passed; /* records before from_ns this call passed over: decided, so
	                          a window created later that reaches over them cannot have
	                          them (flight.c: its passed_over) */
	struct wal_gap gap;    /* records overwritten before any call decided them, found by
	                          this call (a window's wal_gap_share of it is window_lost) */
	uint64_t over_budget;  /* records in the window decided unwritten at a thread's end,
	                          past its at_end budget: the disk budget had no room left
	                          for them (the window's disk_budget) */
	bool budget_spent;     /* the call stopped at its byte budget: records are left */
	struct wal_fill *fill; /* the caller's (wal_detail_persist_window), or NULL: every
	                          record the call decided is counted in it */
};

/* Persists, from thread t's detail ring, every record with
 * from_ns <= timestamp <= to_ns (CLOCK_BOOTTIME ns, the index lane's clock)
 * that no earlier call persisted, in order, to t's thread_K/detail.atf
 * (created on the first record; the index file's has_detail_file flag is
 * set then), and back-patches each linked index event's detail_seq, in the
 * staging buffer or on disk (wal_file_patch_detail_seq). Records are
 * decided once: a later call never persists a record older than one an
 * earlier call persisted (per-thread high-water mark of ring positions).
 * Best called right after the thread's index events were taken in a
 * drain pass (records whose index event is not taken yet are deferred).
 * st may be NULL; its counts are also added to the thread's totals (the
 * manifest's per-thread "detail"). 0, or -errno (the file could not be
 * created or written; the index file stays valid). */
int wal_detail_persist(struct ada_recorder *r, struct wal_thread *t, uint64_t from_ns,
                       uint64_t to_ns, struct wal_detail_stats *st);
/* Window memory, the first of a window's two steps (issue 32): takes
 * the records of t's detail ring that no earlier take took, up to the
 * first one newer than horizon_ns (no open window wants it yet), out of
 * the ring into the recorder's memory (r->flight.mem_*), at most room
 * bytes of them (less: r->flight.mem_full counted, the rest left in the
 * ring). A copy, nothing encoded: cheap enough for every pass whatever
 * the yield says, so records wait in memory for the second step instead
 * of in a ring the program overwrites. The thread's first take looks at
 * the whole ring (the pre-roll); later ones copy from where the last
 * stopped, and count what the ring overwrote before a take reached it
 * (st->gap, loss.c: its windows' window_lost; st->oldest_ns: the oldest
 * record that look found untaken). st->records / st->bytes: taken. 0 or
 * -errno. */
int wal_detail_take(struct ada_recorder *r, struct wal_thread *t, uint64_t horizon_ns,
                    uint64_t room, struct wal_detail_stats *st);
/* Frees the window-memory blocks kept for reuse (the recorder's end). */
void wal_detail_pool_free(struct ada_recorder *r);
/* Bytes of t's records in window memory (taken, not decided yet). */
uint64_t wal_detail_taken_bytes(const struct wal_thread *t);
/* The records the thread's takes put in window memory, ever: one more
 * than at an earlier read means records no walk decided yet. */
uint64_t wal_detail_taken_records(const struct wal_thread *t);
/* The second step: a trigger window's records in t's window memory
 * (wal_detail_take), decided in ring order as wal_detail_persist() does,
 * in bounded steps while the program runs. budget (NULL: none; the
 * thread's or process's end, a rotation: a take of everything left in
 * the ring comes first, its gap in st->gap): detail bytes the call may
 * persist and its deadline; it stops at the record that would go past
 * either (st->budget_spent) and takes off what it wrote. Decided records
 * leave window memory. first: unused (every call goes on from the first
 * record left undecided). st->fill, set by the caller (NULL: not
 * counted), counts every record the call decided. 0 or -errno, as
 * wal_detail_persist(). */
int wal_detail_persist_window(struct ada_recorder *r, struct wal_thread *t, uint64_t from_ns,
                              uint64_t to_ns, bool first, struct wal_detail_budget *budget,
                              struct wal_detail_stats *st);
/* How much detail t's ring holds right now: timestamps of its oldest and
 * newest records (0, 0 when empty or there is no detail ring). 0 or -errno. */
int wal_detail_ring_span(struct ada_recorder *r, struct wal_thread *t, uint64_t *oldest_ns,
                         uint64_t *newest_ns);
/* t's index file is about to be finalized (gen == UINT32_MAX) or rotated
 * to generation gen: finishes detail.atf (renamed detail.g<gen>.atf with
 * the index file). Records of the ring not persisted by then stay out.
 * Returns the whole blocks the closed file keeps on disk (0: none), for
 * the disk budget. */
uint64_t wal_detail_close(struct ada_recorder *r, struct wal_thread *t, uint32_t gen);
/* The next wal_detail_persist() of t is its last before its file ends
 * (--detail always): it looks at the whole ring once more, so a loss a
 * look counted low from a lagging counter is counted in full. */
void wal_detail_settle(struct wal_thread *t);
/* Frees t's detail state (after wal_detail_close). */
void wal_detail_free(struct wal_thread *t);
/* Bytes of t's current detail.atf so far (0 without one): the disk
 * budget rotates a generation on its index and detail files together. */
uint64_t wal_detail_file_bytes(const struct wal_thread *t);
/* Adds what t's ring overwrote since the last call to its count (the
 * manifest's threads[].detail.overwritten), before its file ends. */
void wal_detail_sync_overwritten(struct wal_thread *t);
/* Detail records persisted, every thread of p. */
uint64_t wal_detail_proc_records(const struct wal_proc *p);
/* One thread's detail records persisted, and its waits for detail room
 * (--detail always) and their ns: what wal_thread_closed adds up. */
void wal_detail_thread_sums(const struct wal_thread *t, uint64_t *records, uint64_t *waits,
                            uint64_t *ns);
/* The times p's threads waited for index ring space, and the ns (drain.c). */
void wal_proc_ring_waits(const struct wal_proc *p, uint64_t *waits, uint64_t *ns);
/* --detail always: the times p's threads waited for detail room, and the ns. */
void wal_detail_proc_waits(const struct wal_proc *p, uint64_t *waits, uint64_t *ns);
/* Appends the signal context record of ci (docs/format.md, "Signal
 * context records") linked to t's index event seq (the fatal-signal
 * marker, time ns), after every record persisted so far. 0 or -errno. */
int wal_detail_append_signal(struct wal_thread *t, uint64_t seq, uint64_t ns,
                             const struct ada_crash_info *ci);
/* Per-thread totals for the manifest (NULL when the thread never used it). */
json_t *wal_detail_thread_json(const struct wal_thread *t);

/* detail.atf itself (detail_file.c). */
struct wal_dfile;
/* Creates name in dirfd (O_EXCL, no link followed, private: fs.h). */
int wal_dfile_open(int dirfd, const char *name, uint32_t tid, uint8_t arch, struct wal_dfile **out);
/* Appends one event; h->total_length must be 24 + 100 + p->stack_size. */
int wal_dfile_append(struct wal_dfile *d, const struct atf_detail_event_header *h,
                     const struct atf_detail_function_payload *p, const void *stack);
/* Appends a type 6/7 event: the payload, xmm (ATF_DETAIL_XMM_WORDS words),
 * the stack; h->total_length must be 24 + 100 + 64 + p->stack_size. */
int wal_dfile_append_fp(struct wal_dfile *d, const struct atf_detail_event_header *h,
                        const struct atf_detail_function_payload *p, const uint64_t *xmm,
                        const void *stack);
/* Appends one event of another type: h->total_length must be 24 + len. */
int wal_dfile_append_raw(struct wal_dfile *d, const struct atf_detail_event_header *h,
                         const void *payload, size_t len);
uint64_t wal_dfile_count(const struct wal_dfile *d);
/* The first write that failed (-errno; every append after it fails too),
 * 0: none. */
int wal_dfile_error(const struct wal_dfile *d);
/* The file's bytes so far: header and events appended (buffered too). */
uint64_t wal_dfile_bytes(const struct wal_dfile *d);
/* An index event linked to a detail record (index_seq, detail_seq). */
struct wal_dfile_link {
	uint64_t index_seq, detail_seq;
};
/* What wal_dfile_finish() left. */
struct wal_dfile_end {
	uint64_t appended;   /* records appended */
	uint64_t kept;       /* of those, in the finished file: fewer when a write failed */
	uint64_t file_bytes; /* the finished file's size */
	int error;           /* the write that failed (-errno), 0: none */
	bool invalid;        /* not even the cut file could be sealed: remove it */
	/* When a write failed: the links of the records appended after the
	 * last write that completed (kept or not: those at or past kept are
	 * the caller's to unlink; with invalid, the earlier ones were never
	 * listed and the index file keeps them, see wal_detail_close). */
	size_t nunsure;
	struct wal_dfile_link *unsure;
};
/* Writes footer and final header, truncates, closes, frees. When a write
 * failed (ENOSPC: a full disk), the file is cut back to its last record
 * whose bytes all reached it and sealed so, a valid file of end->kept
 * records; end->invalid when even that failed. 0 or -errno. */
int wal_dfile_finish(struct wal_dfile *d, struct wal_dfile_end *end);

/* ada recover (recover_detail.c): finalizes the detail file dpath that a
 * killed recorder left unfinished, against its index file ipath (final
 * already): keeps the whole, linked prefix of its events, restores index
 * links whose patch was lost, clears those naming no kept record. 0
 * (also when dpath was final: st->unfinished false), -EPROTO (not a
 * detail file, or the index file is not final), -errno. */
struct wal_recover_detail {
	bool unfinished;
	uint64_t records;        /* kept */
	uint64_t bytes_dropped;  /* the file's tail after them (a torn or unlinked record) */
	uint64_t links_restored; /* index events whose detail_seq was set again */
	uint64_t links_cleared;  /* index links that named no kept record */
};
int wal_recover_detail_file(const char *ipath, const char *dpath, struct wal_recover_detail *st);
/* recover_detail_cidx.c: a compact index in that pass (finished by
 * recover.c): events read block by block, links given again. */
struct rd_cidx;
bool rd_index_is_compact(const char *path);
int rd_cidx_open(int fd, struct rd_cidx **out, uint64_t *n);
int rd_cidx_event(struct rd_cidx *c, uint64_t i, struct atf_index_event *ev);
int rd_cidx_link(struct rd_cidx *c, uint64_t i, uint32_t v);
int rd_cidx_close(struct rd_cidx *c); /* writes the tail again, frees c */
/* The recovered manifest's entries (files) of compact files under dir:
 * their bytes as they are now, after that pass. */
void rd_cidx_note_sizes(const char *dir, struct json_t *files);

#endif
