/* The arena as untrusted input (arena_check.c): the checks of what the
 * drain and `ada recover` read from a target's shared memory. */
#ifndef ADA_ARENA_INTERNAL_H
#define ADA_ARENA_INTERNAL_H

#include <setjmp.h>

#include "recorder_internal.h"

/* ---- the arena as untrusted input (arena_check.c) ---- */

/* Plausibility bounds of the event fields the drain checks. */
#define WAL_MAX_DEPTH (1u << 24)   /* deeper than any stack can be */
#define WAL_TSC_SLACK (1ull << 30) /* cross-CPU skew we tolerate, ticks */
#define WAL_THREAD_DIR_BURST 256.0 /* thread_K/ directories at once */
#define WAL_THREAD_DIR_RATE 64.0   /* ... and per second after that */

/* Nonzero (an ADA_EVENT_BAD_* code) when e is not an event the producer
 * can have written for thread tid before time ts_max: a frame event, or
 * one of the wait markers a producer writes after waiting for ring space
 * (ADA_WAIT_MARKER_BEGIN/END; a signal marker never comes through the
 * ring). Branch-free, so the drain's copy loop ORs it over a batch and
 * looks closer only when the batch has a bad one (a batch with a wait
 * marker is looked at again: rare, once per wait). */
static inline uint32_t wal_event_bad(const struct atf_index_event *e, uint32_t tid, uint64_t ts_max)
{
	uint32_t wait = (uint32_t)ada_wait_marker(e->event_kind, e->call_depth);
	uint32_t bad = (e->event_kind - 1u > 2u) | (e->thread_id != tid) << 1 |
	               (e->detail_seq != ATF_NO_DETAIL) << 2 |
	               ((e->call_depth > WAL_MAX_DEPTH) & !wait) << 3 |
	               (e->timestamp_ns > ts_max) << 4;
	return bad;
}
/* The drain's convert loop (drain.c): copies k ring events src to dst,
 * raw TSC -> ns through clk when use_tsc (else the value is kept), each
 * timestamp clamped to stay >= the one before (last: the thread's newest
 * so far). Returns the new last. *bad is 0 when wal_event_bad(tid, ts_max)
 * accepts every event; non-zero when one may not (then dst is to be
 * converted again event by event; it may be a false alarm). */
uint64_t wal_convert_batch(const struct ada_tsc_clock *clk, bool use_tsc,
                           const struct atf_index_event *src, struct atf_index_event *dst, size_t k,
                           uint64_t last, uint32_t tid, uint64_t ts_max, uint32_t *bad);
/* First event of ev[0..n) that wal_event_bad() rejects (n when none), with
 * the ADA_EVENT_BAD_* reason and the offending value. */
size_t wal_events_first_bad(const struct atf_index_event *ev, size_t n, uint32_t tid,
                            uint64_t ts_max, uint32_t *why, uint64_t *value);
/* Reports slot's quarantine once: a sentence naming pid, thread and what
 * was wrong in the manifest's "quarantined" and "warnings" and through
 * the notice callback; counts the events left in the ring as corrupt. */
void wal_note_quarantine(struct ada_recorder *r, struct wal_proc *p, uint32_t slot,
                         const struct wal_thread *t, uint64_t pending);
/* SIGBUS safety: the target may truncate its arena file under our
 * mapping (docs/internals.md). Reads of an arena run inside
 * WAL_GUARDED(); a SIGBUS at an address of that arena's mapping jumps to
 * on_fault instead of killing the recorder. Guards nest; only the
 * innermost is live. wal_guard_install() sets the process-wide handler
 * once (a SIGBUS elsewhere keeps its default action). */
struct wal_guard {
	sigjmp_buf env;
	const uint8_t *lo, *hi;
	struct wal_guard *prev;
};
int wal_guard_install(void);
void wal_guard_push(struct wal_guard *g, const struct ada_arena *a);
void wal_guard_pop(struct wal_guard *g);
#define WAL_GUARDED(arena, body, on_fault)                                                         \
	do {                                                                                       \
		struct wal_guard wal_g_;                                                           \
		wal_guard_push(&wal_g_, (arena));                                                  \
		if (sigsetjmp(wal_g_.env, 0) == 0) {                                               \
			body;                                                                      \
			wal_guard_pop(&wal_g_);                                                    \
		} else {                                                                           \
			wal_guard_pop(&wal_g_);                                                    \
			on_fault;                                                                  \
		}                                                                                  \
	} while (0)

/* Reads the arena's drop totals into p->drops when they are plausible
 * (monotonic, no faster than the slots could drop); else freezes them and
 * says so. */
void wal_drops_read(struct ada_recorder *r, struct wal_proc *p);
/* p->drops as reported: the arena's with the recorder-counted reasons,
 * detail_overwritten per the detail mode (wal_drops_account). */
void wal_drops_fold(const struct ada_recorder *r, struct wal_proc *p);
/* Whether the arena of pid named at named_ns (its ctime)
 * may be recorded: 1 alive and a descendant of this process (or reaped by
 * us after that), 0 gone already (drain once, never wait
 * for it), -1 alive and not ours (ignore it; a sentence in why). */
int wal_pid_check(struct ada_recorder *r, pid_t pid, int64_t named_ns, char *why, size_t cap);
/* struct wal_reaped (recorder_internal.h): pid reaped with status st at
 * now_ns (CLOCK_REALTIME_COARSE: the clock the kernel stamps ctimes
 * with, so an arena named after the reap never has an earlier ctime);
 * -ENOMEM when it could not be kept (its process is then read as gone,
 * its status from the agent). An entry applies to an arena named
 * strictly before the reap: one named within the same tick is taken for
 * a later process's (its status then comes from the agent). */
int wal_reaped_add(struct wal_reaped *e, pid_t pid, int st, int64_t now_ns);
/* Whether pid was reaped after named_ns (an arena's ctime; INT64_MIN:
 * whenever), and is not admitted or forgotten. */
bool wal_reaped_has(const struct wal_reaped *e, pid_t pid, int64_t named_ns);
/* The admission of pid's arena named at named_ns: takes pid's entries
 * out; true, with the status in *st, when the newest is the reap of that
 * arena's process (reaped after named_ns). */
bool wal_reaped_take(struct wal_reaped *e, pid_t pid, int64_t named_ns, int *st);
/* A scan of the arena directory begins: its number, for wal_reaped_scanned. */
uint64_t wal_reaped_scan_begin(struct wal_reaped *e);
/* The scan numbered began read the whole directory: the entries reaped
 * before it began are forgotten. */
void wal_reaped_scanned(struct wal_reaped *e, uint64_t began);
void wal_reaped_free(struct wal_reaped *e);
/* The ppid in the text of a /proc/PID/stat (NUL-terminated; the comm may
 * hold ") "): -1 when unparsable or the process is reaped (state X, or
 * the ppid 0 a read racing the reap gets: a parent it does not have);
 * 0 for a live process whose parent is outside our pid namespace. */
int wal_stat_ppid(const char *buf);
/* One walk up pid's ancestors, ppid_of(q, arg) giving q's parent (-1 gone):
 * 1 it reached root, 0 pid itself is gone, -1 an ancestor vanished under
 * the walk (its children are reparented: walk again), -2 the chain ends
 * elsewhere (pid 1, a parent outside the pid namespace, too long). */
int wal_ppid_chain(pid_t pid, pid_t root, pid_t (*ppid_of)(pid_t, void *), void *arg);

#endif
