/*
 * ada recorder: everything the recorder process does between the
 * shared-memory rings and the write-ahead log (src/wal).
 *
 *   - the recorder (ada_recorder): session and arena directories, the drain
 *     thread that batch-reads every ring of every arena of the session,
 *     per-thread files, retention generations (--max-disk-mb), flight
 *     windows and detail persistence, key-symbol sets, manifests, metrics,
 *     the live view, finalize;
 *   - recovery (ada_wal_recover) of a session whose recorder died.
 *
 * Threads: one recorder is driven by one drain thread; the functions
 * marked "any thread" may be called from others.
 * Errors are 0 / -errno; nothing here prints.
 */
#ifndef ADA_RECORDER_H
#define ADA_RECORDER_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atf_format.h"
#include "clock.h"
#include "ring.h"
#include "trigger.h"
#include "wal.h"

/* ---- the recorder --------------------------------------------------------- */

/* --detail: what the drain does with the detail rings (the agent fills
 * them in `triggered` and `always`; `never` has no detail ring at all). */
enum ada_detail_mode {
	ADA_DETAIL_TRIGGERED = 0, /* persist only windows (wal_detail_persist, by triggers) */
	ADA_DETAIL_ALWAYS = 1,    /* persist every record, every drain pass */
	ADA_DETAIL_NEVER = 2,     /* index lane only */
};

/* --persist-share's default: a tenth of the CPU the program could have
 * had goes to writing windows while the cores are all busy. */
#define ADA_PERSIST_SHARE_DEFAULT 10u

struct ada_recorder_opts {
	const char *out_dir; /* parent of session_YYYYMMDD_HHMMSS */
	bool vlog;           /* a verbose log (-v, --log) to vlog_fd */
	int vlog_fd;
	const char *shm_dir;     /* parent of ada-<tag>/ (default /dev/shm) */
	int drain_cpu;           /* -1: not pinned */
	uint64_t segment_bytes;  /* 0 = 64 MiB */
	uint64_t max_disk_bytes; /* 0 = unbounded */
	bool max_disk_default;   /* ignore max_disk_bytes: the default budget */
	uint64_t max_shm_bytes;  /* ceiling on the arenas' sizes; 0 = none */
	bool max_shm_default;    /* ignore max_shm_bytes: the default ceiling */
	struct ada_flush_policy flush;
	uint8_t index_format; /* enum ada_index_format (wal.h): --index-format */
	uint32_t cidx_block;  /* compact blocks' size; 0: the default (tests) */
	bool follow;          /* record children that create arenas */
	bool force_clock;     /* ts=clock even with an invariant TSC */
	/* The program's architecture (ATF_ARCH_*; 0: this machine's). Another
	 * one (an aarch64 program run by qemu-user): the recording says it,
	 * only arenas of that machine are read, and their counter, which ada
	 * cannot read itself, is converted from what they state
	 * (ada_arena_origin). */
	uint8_t target_arch;
	const char *ring_config;         /* ADA_RING_CONFIG text to pass on */
	const char *const *program_argv; /* recorded in the manifest */
	/* The flight recorder: armed from the start (more may be added while
	 * it runs, through ada_recorder_triggers()). */
	const struct ada_trigger_spec *triggers;
	size_t ntriggers;
	struct ada_trigger_opts flight; /* pre/post-roll, max windows, hold-off */
	uint32_t detail_mode;           /* enum ada_detail_mode */
	uint32_t stack_bytes;           /* manifest: stack bytes per CALL record */
	/* The share (percent) of an always-runnable thread's CPU the windows'
	 * live persist may take while the CPU is contended; 0: the default,
	 * 100: never held back (flight_yield.c). */
	uint32_t persist_share_pct;
	/* Window memory: the most bytes of detail records the windows hold
	 * in the recorder's memory, taken out of the rings, while their
	 * persist is held back (flight.c); 0: the default. */
	uint64_t window_mem_bytes;
	const char *detail_symbols; /* manifest: --detail-symbols, NULL: every function */
	/* The key-symbol spec from the start (--key-symbols, --detail-symbols,
	 * --blob; src/keysym), copied; NULL: every hooked function. */
	const struct ada_keysym_spec *key_symbols;
	/* ada attach: the process is not our child and already runs; the
	 * recording ends when ada_recorder_stop() is called (after the
	 * detach) or when every recorded process is gone. */
	bool attached;
	/* Called on the drain thread with one sentence for stderr (a thread
	 * quarantined, an arena ignored); NULL: the manifests only. */
	void (*notice)(void *arg, const char *sentence);
	void *notice_arg;
};

struct ada_recorder;
struct ada_keysym_spec;
struct json_t;

/* Replaces the recording's key-symbol spec (consumes spec) and waits (at
 * most 20 s, a run-away guard) until the drain has built and published the set it means in
 * every live process. *result (new reference): {"version": N,
 * "processes": [{pid, version, members, modules: [{id, container,
 * members}], xxh64, ...} or {pid, error}]}. 0; -ENOTSUP (--detail never),
 * -ETIMEDOUT; why gets one sentence. Any thread. */
int ada_recorder_keysym_set(struct ada_recorder *r, struct ada_keysym_spec *spec,
                            struct json_t **result, char *why, size_t cap);
/* The version of the last set published (0: none yet). Any thread. */
uint64_t ada_recorder_keysym_version(struct ada_recorder *r);
/* What that version covers (new reference; NULL: none yet or no memory):
 * {"version", "pid" (the process it was published in), "entries" (module
 * ids below it have a directory entry), "unknown" (how many of those the
 * set says nothing about: their .syms not read when it was built),
 * "unknown_ids" (the first 16 of them)}. A module id >= entries or listed
 * there is decided by the agent's own start-time set. Any thread. */
struct json_t *ada_recorder_keysym_cover(struct ada_recorder *r);

/* Records a trigger window wanted that were neither written nor
 * overwritten by its ring (those are window_lost), by reason: their index
 * events were never taken (a forced stop's time ran out, the slot was
 * quarantined); their link named no index event (the target's record);
 * a walk of the thread's ring had passed over them before the window was
 * created or reached back so far (the detail file keeps ring order); a
 * thread's file ended with no room left under the disk budget for them
 * (--max-disk-mb: its windows' part is written at once at its end). */
enum ada_window_miss {
	ADA_MISS_UNREAD_AT_END = 0,
	ADA_MISS_BAD_LINK = 1,
	ADA_MISS_PASSED_OVER = 2,
	ADA_MISS_DISK_BUDGET = 3,
	ADA_WINDOW_MISS_COUNT = 4,
};
/* "unread_at_end", "bad_link", "passed_over", "disk_budget" (manifest keys). */
static inline const char *ada_window_miss_name(unsigned k)
{
	static const char *const n[ADA_WINDOW_MISS_COUNT] = {"unread_at_end", "bad_link",
	                                                     "passed_over", "disk_budget"};
	return k < ADA_WINDOW_MISS_COUNT ? n[k] : "?";
}

/* What the summary takes from the processes' agent.json (docs/hooks.md),
 * folded once per process by the recorder when its final manifest read
 * the file (agent_sums.c), so the summary reads no file again, and a
 * process the disk budget retired still counts. */
#define ADA_AGENT_STRIPPED_MAX 16 /* images without symbols told of, at most */
#define ADA_AGENT_EXCL_SHOWN 12   /* names the summary line shows */

struct ada_agent_sums {
	/* untraced_calls shadow_full, unmatched_return, nested_signal;
	 * stack_switches switches, frames_cut; untraced_calls recorder_gone */
	int64_t untraced[6];
	/* count_only: calls counted, functions, moved by the budget (the
	 * first six named in moved), recalled from an earlier run */
	int64_t counted[4];
	char moved[1024];
	char hot[512]; /* the first process's hot_functions, "name N %, ..." */
	/* count_only.over_budget of the process whose counts cost the most
	 * (exclude_hint.c): its counted calls, the percents, its names (at
	 * most ADA_AGENT_EXCL_SHOWN of them in excl, all counted in excl_n) */
	int64_t excl_calls, excl_n;
	double excl_cost_pct, excl_would_pct;
	char excl[768];
	/* images whose functions came from .eh_frame: path and count, once
	 * per path */
	uint32_t nstripped;
	struct {
		char path[PATH_MAX];
		int64_t functions;
	} stripped[ADA_AGENT_STRIPPED_MAX];
};

/* What --exclude-symbol would save a budget run whose counts cost more
 * than its budget (exclude_hint.c, docs/manifest.md count_only.over_budget):
 * from a count_only section (agent.json's, the manifest's), a new object
 * with the estimated costs and the functions to exclude, most calls first;
 * NULL when within the budget, without a budget or a CPU time. One rule
 * for the manifest (final counts only), the summary line and `ada status`
 * (live: the counts the agent last wrote). Cheap when within the budget
 * (one pass, no allocation); bounded (4096 functions, 64 names). */
json_t *ada_exclude_hint_of(json_t *co);

/* The statuses of children reaped by their traced parent (wait_notes.c):
 * processes finished with their exit status unknown, and the notes of
 * reaped children overwritten in their reaper's table before the
 * recorder read them, or refused (torn, implausible). */
struct ada_wait_status_counts {
	uint64_t unknown, overwritten, refused;
};

struct ada_record_summary {
	uint64_t events;
	uint64_t drops;
	uint64_t disk_bytes;
	uint64_t index_bytes, index_events; /* of the index files: bytes per event */
	uint64_t lost_enospc;
	double seconds;
	uint64_t latency_p50_ns, latency_p99_ns;
	bool disk_full;
	bool abnormal;
	int exit_status; /* shell-style: status, or 128 + signal */
	uint32_t processes;
	/* the disk budget (0: unbounded) and what it deleted */
	uint64_t budget_bytes;
	bool budget_default;
	uint64_t retired_gens, retired_events, retired_bytes;
	uint64_t retired_threads; /* of retired_gens: a finished thread's last file */
	/* of retired_gens: a live thread's file ended early so that the budget
	 * could delete it (the files being written filled the budget) */
	uint64_t retired_cut;
	/* detail records a failed write cut from their files (the files
	 * sealed valid without them), and detail files removed because not
	 * even that could be done */
	uint64_t detail_cut, detail_removed;
	/* processes whose manifest could not be written even at the end */
	uint32_t manifests_failed;
	/* shared memory: the ceiling (0: none), the most used at once, the
	 * processes that ran untraced because of it, and what the end found
	 * left in the arena directory (removed) */
	uint64_t shm_ceiling, shm_peak, untraced_procs;
	uint32_t shm_leftover;
	/* the ceiling's page as the end read it: the sentences saying why
	 * processes ran untraced or got smaller detail rings
	 * (ada_shm_budget_untraced_why, _reduced_why) */
	struct ada_shm_budget_view shm;
	/* arenas of processes that took the pid of an earlier one of this
	 * recording (finished, or still being read): told, not read (drain.c
	 * drain_pid_reused, drain_reused_while_read) */
	uint32_t pid_reused;
	/* processes whose exit status nothing told, and the notes of reaped
	 * children lost in their reaper's table (wait_notes.c) */
	struct ada_wait_status_counts wait_statuses;
	/* processes whose arena came from the arena pool, and those after the
	 * first that made theirs anew (a fallback: shm.c wal_shm_pool_admitted) */
	uint64_t pool_hits, pool_misses;
	uint64_t drops_by[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT]; /* summed */
	/* The detail lane (docs/internals.md, "What the detail lane counts"):
	 * the mode, the trigger windows, detail records persisted, and the
	 * records the rings overwrote that no window wanted (--detail
	 * triggered: not drops), and the windows' shortfall: records they
	 * wanted that the rings had overwritten (window_lost, not drops
	 * either), the shortest pre-roll a window achieved and what it asked
	 * (0, 0: none fell short). */
	uint32_t detail_mode; /* enum ada_detail_mode */
	uint64_t windows, detail_records, detail_overwritten;
	uint64_t window_lost, pre_asked_ns, pre_got_ns;
	/* Passes whose live persist of the windows was held back for the
	 * program while the CPU was contended (flight_yield.c; 0: none). */
	uint64_t windows_yielded;
	/* Records windows wanted that were neither written nor overwritten,
	 * by reason (enum ada_window_miss): not drops either, told beside
	 * window_lost. */
	uint64_t window_missed[ADA_WINDOW_MISS_COUNT];
	/* The detail ring per thread that achieved pre_got_ns (0: not known):
	 * with it, the rate the ring filled at, the reason told. */
	uint64_t pre_ring_bytes;
	/* Bytes per thread a detail ring would have needed to hold what the
	 * windows lost at this run's rate (wal_flight_ring_suggest; 0: none). */
	uint64_t detail_ring_suggest;
	/* The functions whose records filled the rings of the window that lost
	 * the most, fewest first, that a detail set without them would have
	 * held ("" when none would: wal_flight_fill_hint) */
	char fill_hint[160];
	/* --detail always: times a thread waited for detail room, and the ns */
	uint64_t detail_waits, detail_waited_ns;
	/* --overflow wait: times a thread waited for index ring space (the
	 * drain ran behind), and the ns */
	uint64_t ring_waits, ring_waited_ns;
	/* CPU time of the drain thread alone (CLOCK_THREAD_CPUTIME_ID at its
	 * end): the recorder's process CPU minus this is mostly the kernel's
	 * io_uring workers (the page-cache copy) and the caller's thread. */
	uint64_t drain_cpu_ns;
	/* errno the doorbell's futex refused to wait with: the drain polled
	 * every millisecond from then on (0: it never did) */
	int drain_polling_err;
	struct ada_agent_sums agents; /* every process's agent.json, summed */
};

/* Creates the session directory (with a suffix when the name is taken) and
 * the arena directory. -errno on failure, with nothing left behind. */
int ada_recorder_new(const struct ada_recorder_opts *o, struct ada_recorder **out);
const char *ada_recorder_session_dir(const struct ada_recorder *r);
const char *ada_recorder_arena_dir(const struct ada_recorder *r);
/* The session directory, opened once (O_NOFOLLOW): create files under it
 * with src/fs. Owned by the recorder: do not close. */
int ada_recorder_session_fd(const struct ada_recorder *r);
/* True when the drain uses raw TSC (arena timestamp source ADA_TS_TSC). */
bool ada_recorder_uses_tsc(const struct ada_recorder *r);
/* Starts the drain thread. main_pid is the spawned program (our child);
 * the recorder reaps every descendant (it should be a child subreaper).
 * Attached (opts.attached): main_pid is the process attached to, not our
 * child; it and its descendants are recorded. */
int ada_recorder_start(struct ada_recorder *r, pid_t main_pid);
/* Joins the drain: returns once every process is gone and everything is
 * written and finalized. */
int ada_recorder_wait(struct ada_recorder *r, struct ada_record_summary *sum);
/* Asks the drain to stop soon (within 2 s) whatever the program does:
 * it drains what it can, finalizes every file and manifest, and
 * ada_recorder_wait() returns. Async-signal-safe (one atomic store). */
void ada_recorder_stop(struct ada_recorder *r);
/* Wakes the drain should it sleep (its doorbell: every ring idle), so it
 * looks at once for what the caller changed: a child that ended
 * (SIGCHLD), a stop, a manual fire, a key-symbol set, a trigger armed,
 * removed or fired through the control socket. Any thread,
 * async-signal-safe (an atomic add and at most one futex wake). */
void ada_recorder_wake(struct ada_recorder *r);
/* Removes the session directory (only before start: bad-input paths). */
void ada_recorder_discard(struct ada_recorder *r);
void ada_recorder_free(struct ada_recorder *r);
/* The recording's trigger engine: any thread may add or remove triggers
 * and fire manual ones through it (src/trigger/trigger.h), while it runs. */
struct ada_trigger_engine *ada_recorder_triggers(struct ada_recorder *r);
/* ada attach: when the attach happened (CLOCK_REALTIME ns) and how long
 * every thread of the process was stopped to attach and to detach (ns;
 * 0: not yet). Any thread; the manifests written afterwards carry them
 * (`"attached": true`, `"attach": {...}`). */
void ada_recorder_set_attach(struct ada_recorder *r, uint64_t realtime_ns, uint64_t pause_ns,
                             uint64_t detach_pause_ns);
/* Async-signal-safe: asks for a manual fire now (SIGUSR2 to `ada record`). */
void ada_recorder_request_manual(struct ada_recorder *r);

/* ---- the live view (the control socket, `ada status PID`) ----
 *
 * Protocol: the drain builds a view in its own buffer once a second (and
 * at its 10 ms cadence when events, windows or processes changed), then
 * publishes it with pthread_mutex_trylock + memcpy: a busy lock skips the
 * publish (the next pass retries), so a reader never holds the drain up;
 * the last view (ended) takes the lock, as there is no next pass. Readers
 * copy the published view out under the same mutex (a memcpy: bounded). */
#define ADA_LIVE_MAX_PROCS 64
#define ADA_LIVE_MAX_RINGS 256
#define ADA_LIVE_MAX_WINDOWS 64
#define ADA_LIVE_MAX_WARNINGS 16

/* What window i has persisted so far over every thread (flight.c): its
 * records, those its rings overwrote first (not drops), and the pre-roll
 * achieved (the farthest back a thread's ring reached; 0: none yet). */
struct ada_live_window_got {
	uint64_t records, lost, pre_achieved_ns;
	uint64_t missed[ADA_WINDOW_MISS_COUNT]; /* neither written nor overwritten, by reason */
};

/* The drain's passes and its sleeps on the doorbell (the manifests'
 * `drain`, docs/manifest.md; drain_sleep.c). */
struct ada_live_drain {
	bool doorbell;   /* the drain sleeps while every ring is idle */
	int polling_err; /* errno the futex refused to wait with: polling since (0: never) */
	uint64_t passes, sleeps, rung, empty_rings, averted;
	/* looks at the rings during sleeps, and the sleeps they ended (events
	 * below a producer's chunk, which ring no bell) */
	uint64_t looks, looks_found;
};

/* "the doorbell's futex refused to wait (STRERROR)": why the drain polls
 * (the manifests' and `ada status`'s drain.polling) into buf; NULL when
 * err is 0 (it does not). */
const char *ada_drain_polling_why(int err, char *buf, size_t cap);
/* d as the manifests' and `ada status`'s `drain` object (a new reference;
 * manifest.c). */
struct json_t *ada_drain_json(const struct ada_live_drain *d);

struct ada_live_proc {
	pid_t pid;
	bool finished;
	uint32_t threads, ring_fill_pct; /* live threads; fill max over the last second */
	uint64_t events;                 /* written */
};

struct ada_live_ring {
	pid_t pid;
	uint32_t thread, tid;
	uint64_t detail_span_ns; /* seconds of detail its ring holds, in ns */
};

/* A warning sentence of the recording (the manifests' `warnings`): the
 * first process that said it (0: the recording's, every manifest has
 * it) and how many processes did. */
struct ada_live_warning {
	pid_t pid;
	pid_t last; /* the last process counted in processes (live.c) */
	uint32_t processes;
	char text[512]; /* a sentence is at most 511 bytes (wal_note) */
};

struct ada_recorder_live {
	uint64_t seq;            /* publishes so far; 0: none yet */
	uint64_t at_ns;          /* CLOCK_BOOTTIME of the publish */
	uint64_t start_ns;       /* CLOCK_BOOTTIME when the drain started */
	uint32_t detail_mode;    /* enum ada_detail_mode */
	bool ended;              /* the drain finished: the final view */
	uint64_t events;         /* written, every process */
	uint64_t events_per_sec; /* over the last second */
	/* the index files' bytes (headers included, deleted ones too) and
	 * the events in them: the encoding's bytes per event */
	uint64_t index_bytes, index_events;
	uint64_t drops[ADA_DROP_REASON_COUNT];
	uint64_t drops_per_sec[ADA_DROP_REASON_COUNT];
	/* --detail triggered: records the rings overwrote that no window
	 * wanted (a flight recorder's normal turnover, not a drop) */
	uint64_t detail_overwritten;
	uint64_t detail_records; /* persisted so far (not with --detail never) */
	/* --detail always: the times the program's threads waited for the
	 * drain to persist detail records (their ring full), and the ns */
	uint64_t detail_waits, detail_waited_ns;
	/* the times the program's threads waited for index ring space (the
	 * drain ran behind), and the ns */
	uint64_t ring_waits, ring_waited_ns;
	uint32_t ring_fill_pct_max;
	/* the drain's write batches: submit to completion, p50 and p99 */
	uint64_t batch_latency_p50_ns, batch_latency_p99_ns;
	/* ada attach: how long the target was stopped to attach (0: not
	 * attached, or not yet) */
	uint64_t attach_pause_ns;
	/* the disk filled: writing stopped, these events were not written */
	bool disk_full;
	uint64_t events_not_written;
	/* procs[]: the running processes first (in the order they came),
	 * then the most recently finished, ADA_LIVE_MAX_PROCS at most */
	uint32_t nprocs, procs_omitted;
	uint32_t procs_finished; /* processes finished so far (all of them) */
	/* arenas of later processes given the pid of an earlier process of
	 * the recording: not read, so never counted finished (drain_arena.c) */
	uint32_t pid_reused_arenas;
	/* the statuses of children reaped by their traced parent
	 * (wait_notes.c): processes finished with their status unknown, and
	 * reapers' notes overwritten before read or refused */
	struct ada_wait_status_counts wait_statuses;
	/* the arena pool's hits and misses so far (the summary's) */
	uint64_t pool_hits, pool_misses;
	/* the shared-memory ceiling's page: processes untraced or given
	 * smaller detail rings because of it, and why (shm.c) */
	struct ada_shm_budget_view shm;
	struct ada_live_proc procs[ADA_LIVE_MAX_PROCS];
	uint32_t nrings, rings_omitted;
	struct ada_live_ring rings[ADA_LIVE_MAX_RINGS];
	uint64_t windows_total, windows_closed; /* closed = persisted to their end */
	uint32_t nwindows;                      /* windows[]: the most recent ones */
	struct ada_trigger_window windows[ADA_LIVE_MAX_WINDOWS];
	struct ada_live_window_got windows_got[ADA_LIVE_MAX_WINDOWS];
	struct ada_trigger_stats trig;
	uint64_t manual_dropped;
	struct ada_live_drain drain;
	/* What the recorder's heap keeps for reuse (src/recorder/heap.c),
	 * bounded and following the load, not the processes: the index
	 * writer's staging buffers (made: in use or free), the windows'
	 * memory (held and pooled blocks), the detail snapshot buffer, the
	 * recent-event windows finished index files left for the next. */
	uint64_t heap_staging_bytes, heap_window_bytes, heap_snapshot_bytes, heap_spare_bytes;
	/* The first ADA_LIVE_MAX_WARNINGS distinct warning sentences, and
	 * how many more were said (not told apart) */
	uint32_t nwarnings;
	uint64_t warnings_omitted;
	struct ada_live_warning warnings[ADA_LIVE_MAX_WARNINGS];
};

/* Any thread: copies the last published view into *out (about 60 KiB:
 * not on a small stack). -EAGAIN when the drain has not published yet. */
int ada_recorder_live(struct ada_recorder *r, struct ada_recorder_live *out);

/* Start time of a process (field 22 of /proc/PID/stat, clock ticks since
 * boot); 0 when it does not exist. */
uint64_t ada_proc_start_ticks(pid_t pid);
/* Whether the recorder pid that started at start_ticks is still running
 * (pid and start time: a reused pid is not it). start_ticks 0: pid only. */
bool ada_recorder_alive(pid_t pid, uint64_t start_ticks);

/* ---- recovery --------------------------------------------------------------- */

struct ada_recover_report {
	uint32_t pids;
	uint32_t files;
	uint32_t files_already_final;
	uint64_t events_on_disk;
	uint64_t events_from_arena;
	uint32_t arenas_found;
	uint32_t errors;
	uint32_t links_skipped; /* symbolic links met in the session, not followed */
	uint32_t quarantined;   /* slots that broke the ring protocol */
	uint64_t corrupt_drops; /* events left in them, not written */
	/* pid_N/.ring_slots records that did not fit their ring (stale or
	 * lying), not used; ring events not written again because they were
	 * no later than their index file's last event (a missing or stale
	 * record's fallback: duplicates never) */
	uint32_t ring_records_rejected;
	uint64_t events_skipped_by_time;
	/* Processes not finalized by the recorder whose arena was gone: what
	 * their rings still held is not recovered. One sentence for all (the
	 * caller's); each process's manifest names its arena in `warnings`.
	 * A finalized process's arena, removed by the recorder once drained,
	 * is not counted: nothing of it is missing. */
	uint32_t arenas_gone;
	/* <session>/.thread_spares: spare thread directories a killed
	 * recorder left, removed; entries there not recognised, left */
	uint32_t spares_removed, spares_kept;
	/* Set by the caller (kept across the call): one sentence per thread
	 * quarantined or arena lost, for stderr. NULL: the manifests only. */
	void (*notice)(void *arg, const char *sentence);
	void *notice_arg;
};

/* Recovers every pid_N under dir (a session or a pid directory): drains
 * leftover arenas named by the manifests (checked as the drain checks
 * them, at most one ring's worth per slot, through a fixed buffer),
 * finalizes every index file, writes manifests with state "recovered"
 * that carry the arena's drop counters and the exit status or signal
 * its agent recorded. 0, -ENOENT (no pid dirs),
 * -EBUSY (the recorder of a process is still running: left alone), -errno. */
int ada_wal_recover(const char *dir, struct ada_recover_report *rep);

/* ---- arenas whose recorder died (orphans.c) ----------------------------- */

/* The owner record in every arena directory (orphans.c tells its format). */
#define ADA_ORPHAN_OWNER_NAME "recorder"

/* True when ADA_NO_RECOVER_ORPHANS is set (not empty, not "0"): no scan
 * on the command's start, and a recording made so is marked manual (only
 * `ada recover --all` or `ada recover DIR` take it). */
bool ada_orphans_disabled(void);
/* Writes the owner record of arena_dir: this process as the recorder of
 * session_dir (absolute). 0, -ENAMETOOLONG, -errno. */
int ada_orphan_mark(const char *arena_dir, const char *session_dir);

enum ada_orphan_outcome {
	ADA_ORPHAN_RECOVERED,  /* recovered into its session, the directory removed */
	ADA_ORPHAN_IN_USE,     /* a process still maps or holds it (holder): left */
	ADA_ORPHAN_NO_SESSION, /* its session is missing or not the user's: left */
	ADA_ORPHAN_FAILED,     /* recover failed (error): left */
	ADA_ORPHAN_UNKNOWN,    /* no usable owner record, old and unheld: left, told */
	/* No owner record, old and unheld, only arenas of processes that are
	 * gone (a recording's end that could not empty it): removed, told */
	ADA_ORPHAN_REMOVED,
	/* Marked manual (kept for `ada recover --all`), its recorder gone,
	 * unheld: only its arena pool's files (no events) removed (pooled),
	 * the arenas and the record left for recover; told */
	ADA_ORPHAN_POOL_SWEPT,
};

struct ada_orphan {
	const char *arena_dir;   /* shm_dir/ada-<name>-XXXXXX */
	const char *session_dir; /* from its owner record; NULL: unknown */
	int64_t started;         /* CLOCK_REALTIME s when the recording started */
	uint32_t outcome;        /* enum ada_orphan_outcome */
	int error;               /* errno for NO_SESSION, FAILED, UNKNOWN */
	pid_t holder;            /* IN_USE: a process that maps or holds it */
	uint32_t unread;         /* RECOVERED: arena files no manifest named; REMOVED: arenas */
	uint32_t pooled;         /* pool.<k> files removed (RECOVERED, REMOVED, POOL_SWEPT) */
	const struct ada_recover_report *rep; /* RECOVERED: what recover did */
};

struct ada_orphan_opts {
	const char *shm_dir; /* NULL: /dev/shm */
	bool all;            /* also recordings marked manual (ada recover --all) */
	/* One call per arena directory decided (not for a live recorder's). */
	void (*found)(void *arg, const struct ada_orphan *o);
	/* Optional: -1 refuses a session (as root: cmd_root_check_recover). */
	int (*check)(void *arg, const char *session_dir);
	/* Recover's sentences (ada_recover_report.notice). */
	void (*notice)(void *arg, const char *sentence);
	void *arg;
	/* Optional: the walks of /proc the scan made are added here (one for
	 * every ORPHAN_BATCH directories that need one; tests). */
	unsigned *proc_walks;
};

/* Locks the session of dir (a session, or the session above a pid_N)
 * for its recovery: flock LOCK_EX on the directory, not waited for
 * (ada recover and the scan below both take it; a live recorder holds
 * LOCK_SH on it all its life, so a session being recorded is never
 * recovered, whatever its pid looks like from here). *out: the
 * descriptor to close when done. 0, -EBUSY (a recorder or another
 * recovery holds it), -errno. */
int ada_recover_lock(const char *dir, int *out);
/* ada_recover_lock(), asked again every 10 ms for up to ms while it says
 * -EBUSY: a killed recorder's lock goes only once its last write landed
 * (recorder.c), a few tens of ms after its death; another recovery or
 * an orphan scan's sweep holds it for a few ms. */
int ada_recover_lock_wait(const char *dir, int *out, unsigned ms);

/* The arena directory under shm_dir (an ada-<name>-XXXXXX of the
 * effective user) whose owner record names session (absolute), into out:
 * for recover, when no manifest of the session names it. 0, -ENOENT,
 * -EBUSY (its recorder still runs), -ENAMETOOLONG, -errno. */
int ada_orphan_arena_dir(const char *shm_dir, const char *session, char *out, size_t cap);

/* Finds the effective user's arena directories under shm_dir whose
 * recorder is gone, recovers each into its session (ada_wal_recover) and
 * removes it; *taken counts those. 0, or -errno when shm_dir cannot be
 * listed. */
int ada_orphans_recover(const struct ada_orphan_opts *o, unsigned *taken);

#endif
