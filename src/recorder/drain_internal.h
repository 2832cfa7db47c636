/* The drain's steps shared by its files. Threads: the drain thread only.
 *   drain.c       the loop: passes over the rings, convert, rotate, budget;
 *   drain_room.c  the rings' room and rates after a pass (the nap's length);
 *   drain_arena.c new arenas and processes (admission, pid_N);
 *   drain_prep.c  slots prepared ahead of the threads that claim them,
 *                 and ended threads' slots kept for the pre-roll;
 *   drain_end.c   the end of a process (reaped, gone, lost) and of the
 *                 recording (descendants left running, a stop request). */
#ifndef ADA_DRAIN_INTERNAL_H
#define ADA_DRAIN_INTERNAL_H

#include "recorder_internal.h"

/* The drain's cadences. An idle drain polls from 50 us up to
 * DRAIN_IDLE_MAX_US between passes (or sleeps on the doorbell:
 * drain_sleep.c); every DRAIN_RECLAIM_NS it frees ended threads' slots,
 * ticks the triggers and key-symbol sets; every DRAIN_TICK_NS the
 * metrics, the live view and the clock. */
#define DRAIN_IDLE_MAX_US 1000u
#define DRAIN_RECLAIM_NS 10000000ull
#define DRAIN_TICK_NS 1000000000ull
/* A process that ends within this of its admission gets one manifest,
 * the final one: the early one (about half the recorder's work for a
 * short process) would be rewritten at once. A recorder that dies in that
 * time leaves such a process without one: `ada recover` finalizes its
 * files from what is on disk and cannot drain its arena. */
#define WAL_EARLY_MANIFEST_NS 20000000ull

/* drain_room.c: the pacing's arithmetic over the rings a pass read. */
/* For the windows' detail budget: the least room any ring read this pass
 * had (r->pass_room_min; 0 at a high watermark or a small ring filling). */
void drain_note_room(struct ada_recorder *r, const struct wal_proc *p, uint32_t s,
                     const struct ada_slot_info *si);
/* How long t's ring takes to fill at its thread's rate since the previous
 * pass (r->pass_fill_ns); returns that rate in ns per 1 024 events. */
uint64_t drain_note_fill(struct ada_recorder *r, const struct wal_proc *p, uint32_t s,
                         struct wal_thread *t, const struct ada_slot_info *si);
/* Once slot s's take is done: its room (r->pass_room_after; 0 when cut
 * at the budget) and how long that lasts at its rate (r->pass_slow_ns). */
void drain_note_room_after(struct ada_recorder *r, const struct wal_proc *p, uint32_t s, bool cut,
                           uint64_t ns_per_kev);
/* The nap after a busy pass, lengthened for slow threads (us: the nap the
 * room allows; cap_us: its longest). */
uint64_t drain_nap_slow(const struct ada_recorder *r, uint64_t us, uint64_t cap_us);

/* drain.c */
/* Grows arr (elements of elem bytes, *cap of them) to hold need; NULL
 * when out of memory (arr is kept). */
void *drain_grow(void *arr, size_t *cap, size_t need, size_t elem);
/* thread_sums.c: p's set of thread numbers (threads[]'s seq). Whether
 * seq is one of them; seq into it (after drain_seq_room); room for one
 * thread more, the set grown when needed (-ENOMEM). */
bool drain_seq_taken(const struct wal_proc *p, uint32_t seq);
void drain_seq_put(struct wal_proc *p, uint32_t seq);
int drain_seq_room(struct wal_proc *p);
/* drain_convert.c: converts n ring events of t into its file; returns
 * the events consumed (fewer when the slot was quarantined at a bad one). */
size_t drain_convert(struct ada_recorder *r, struct wal_thread *t,
                     const struct atf_index_event *src, size_t n);
/* Drains up to budget events of slot s of p; returns how many it took. */
size_t drain_slot(struct ada_recorder *r, struct wal_proc *p, uint32_t s, size_t budget);
/* t's last events are in: finalizes its index (and detail) file. */
void drain_thread_finalize(struct ada_recorder *r, struct wal_thread *t);
/* A counter ada cannot read (r->foreign_counter): an arena's (counter, ns)
 * pair and the slope of its stated frequency make the clock's first
 * piece, or re-anchor it (ada_tsc_clock_sample) once it has one. */
void drain_clock_anchor(struct ada_recorder *r, uint64_t counter, uint64_t ns, uint64_t mult);

/* drain_arena.c */
struct wal_proc *drain_find(struct ada_recorder *r, pid_t pid);
/* An arena file appeared under the arena directory as name: admits it
 * and starts recording its process (or ignores it, said once). */
void drain_open_arena(struct ada_recorder *r, const char *name);
void drain_scan_dir(struct ada_recorder *r);
/* Writes p's early manifest ("recording", what `ada recover` needs) once
 * it has run WAL_EARLY_MANIFEST_NS since its admission and is not finished
 * (each drain pass). */
void drain_early_manifest(struct ada_recorder *r, struct wal_proc *p, uint64_t now);
/* Reads the arena directory when the budget page's count of names moved
 * since the last read (ada_shm_budget_named), or when due (a maker
 * without the page does not count its name); true when it moved. */
bool drain_names(struct ada_recorder *r, bool due);
void drain_free_proc(struct wal_proc *p);
/* The arena's maker is gone and its pid another process's (the start
 * time the arena keeps is not that process's); false when unknown. */
bool drain_creator_gone(const struct wal_proc *p);

/* drain_prep.c */
/* Prepares p's spare slots and locks its claimed ones, a bounded share
 * per call. Spares are looked for at every call; scan (the drain's
 * reclaim cadence): also claimed slots to lock, and a spare whose pages
 * could not be had is tried again. */
void drain_prepare_slots(struct wal_proc *p, bool scan);
/* Spares wanted for a process that had threads threads (ended ones too),
 * images of them an image's first (its start and each exec), and has or
 * has not lived past the age of a short command (aged): none while it
 * is young and started fewer than DRAIN_PREP_CHURN threads (a fork child,
 * an exec'd one, a short command, a program that starts a worker or two
 * would cost a slot's pages each and the drain's time for nothing),
 * once aged one, or half of ADA_SLOT_SPARES if it started a second
 * thread and its newest thread came within that age (recent: threads
 * keep coming); half of them at any age once a thread started after
 * another ended (churn); all of them once it started DRAIN_PREP_CHURN
 * (threads that come and go faster than a drain starved of CPU frees
 * their slots). */
uint32_t drain_prep_spares_for(size_t threads, uint32_t images, bool aged, bool recent, bool churn);
/* Whether p's slots are to be reclaimed at this pass although the
 * drain's reclaim cadence has not come: a thread ended since the last
 * reclaim (its slot is EXITED), or one the last reclaim found still on
 * its way out (a few passes more). A thread per request then finds the
 * slot its predecessor used, its pages there, rather than a fresh one
 * the drain must populate. */
bool drain_reclaim_due(struct wal_proc *p);
/* After a reclaim: waiting is the EXITED slots it neither freed nor kept
 * (their threads not gone yet). */
void drain_reclaim_done(struct wal_proc *p, uint32_t waiting);
/* One reclaim round's view for drain_keep_ended: p's free full slots,
 * counted on first need (-1: not yet), and the slots kept so far. */
struct drain_keep {
	int64_t free_full;
	uint32_t kept;
};
/* Whether the slot of t, a thread that ended, is kept a while rather
 * than freed: its detail may still be wanted by a window (drain_prep.c,
 * "Kept"). */
bool drain_keep_ended(struct ada_recorder *r, struct wal_proc *p, struct wal_thread *t,
                      struct drain_keep *k);

/* Whether p's slots have work the drain does a step of per pass
 * (a spare or a claimed slot being prepared, an ended thread's slot to
 * look at again): no sleep on the doorbell meanwhile. */
bool drain_prep_pending(const struct wal_proc *p);

/* drain_sleep.c */
/* At the start of a pass: counts it and notes the wakes asked so far. */
void drain_bell_pass(struct ada_recorder *r);
/* After every pass (busy: it took events or names): once the idle polls
 * have backed off to DRAIN_IDLE_MAX_US (idle_us), sleeps on the doorbell
 * until a producer rings, a wake is asked or the next timer is due, and
 * returns true; false when the drain must poll instead (busy, work in
 * flight, a timer due within a poll, no doorbell, the last ring was
 * empty, the last look before the sleep found a change): then the
 * caller naps or waits idle_us as before. */
bool drain_sleep(struct ada_recorder *r, bool busy, uint32_t idle_us);

/* drain_end.c */
/* The recording is over: every process finished (or, attached, the
 * detach came), or the descendants left running had their grace. */
bool drain_done(struct ada_recorder *r);
/* ada_recorder_stop() was asked and its grace ran out: finalize now. */
bool drain_stop_now(struct ada_recorder *r);
/* Test hook: ADA_TEST_END_PAUSE=FILE holds the end (drain_end.c). */
void drain_end_pause(void);
void drain_arena_lost(struct ada_recorder *r, struct wal_proc *p, uint64_t size);
/* The arena file shrank under its mapping (*size: its size now). */
bool drain_arena_shrunk(struct wal_proc *p, uint64_t *size);
/* Reaps every child that ended; true when one was. */
bool drain_waitpids(struct ada_recorder *r);
/* Processes gone (all: every one, at the end) get their last drain and
 * are finished. */
void drain_check_gone(struct ada_recorder *r, bool all);
/* Finalizes every file and the manifest of p, which is gone. */
void drain_finish_proc(struct ada_recorder *r, struct wal_proc *p);

/* p's slot tables at a process's end (drain_slot_tables_free): tables
 * whose written entries are few are cleared and kept for the next process
 * (a few of them) rather than unmapped: a munmap a process, whose TLB
 * flush reaches every core the recorder's threads ran on, and the next
 * one's mmap and first-touch faults (issue 32: each `$(...)` subshell).
 * Zeroes the entries written (drain_slot_touch) when they are few; false
 * (untouched) when not. */
bool drain_slot_tables_clear(struct wal_proc *p);
/* Every write of an entry of slot s in p's tables says so first: what a
 * kept mapping must clear. */
static inline void drain_slot_touch(struct wal_proc *p, uint32_t s)
{
	if (s >= p->slot_tables_hi)
		p->slot_tables_hi = s + 1;
}

#endif
