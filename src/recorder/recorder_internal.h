/* ada recorder: private declarations shared by the files of src/recorder. */
#ifndef ADA_RECORDER_INTERNAL_H
#define ADA_RECORDER_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"
#include "ring.h"
#include "ring_pool.h"
#include "recorder.h"
#include "wal.h"
#include "wal_crc.h"
#include "wait_notes.h"

/* mkdir -p for one level below an existing directory; EEXIST is fine. */
int wal_mkdir(const char *path);

/* ---- recorder ---- */

struct ada_arena;

/* One retired-or-kept generation index.g<G>.atf of a thread. */
struct wal_gen {
	struct wal_thread *t;
	uint32_t g;
	uint64_t bytes, events, first_seq, t0, t1;
	uint64_t detail_bytes; /* its detail.g<G>.atf on disk, whole blocks (0: none) */
	uint8_t encoding;      /* enum ada_index_format */
	bool cut;              /* ended early for the budget's room (drain_budget_cut) */
};

/* One thread_K of one process. */
struct wal_thread {
	struct wal_proc *p;
	uint32_t seq, tid, slot;
	char *dir;              /* for messages; files are made relative to dir_fd */
	int dir_fd;             /* thread_K while in use (wal_thread_dir()), else -1 */
	bool has_dir;           /* thread_K/ was made */
	struct ada_wal_file *f; /* NULL once finalized */
	uint64_t last_ts;       /* output timestamps never go back */
	uint64_t first_ts;      /* of its first event (0: none yet; detail_persist.c) */
	uint64_t pending;       /* ring events taken (staged or lost), not released */
	uint64_t file_released; /* events of the current file released */
	uint64_t lost_pending;  /* lost events among pending (always the last) */
	uint64_t ring_next;     /* ring position of the next event to take */
	uint32_t slot_gen;
	uint64_t base_seq; /* global index_seq of the current file's event 0 */
	uint32_t next_gen;
	struct wal_gen *gens; /* kept generations, oldest first */
	size_t ngens, capgens;
	uint64_t retired_events, retired_bytes;
	uint32_t retired_gens;
	/* The newest time the budget deleted events up to (0: none): the
	 * thread's events before it are gone (manifest, docs/format.md). */
	uint64_t retired_until_ns;
	/* Its final index.atf and detail.atf were deleted by the budget too
	 * (a finished thread's last generation), and thread_K/ with them. */
	bool final_retired;
	struct ada_wal_file_summary last; /* of the current file once final */
	/* The disk budget's count of its detail files (budget.c): the open
	 * detail.atf as last counted, and the final one once closed (whole
	 * blocks, 0: none). */
	uint64_t detail_counted, last_detail_bytes;
	uint64_t lost;
	uint64_t segments, flushes, syncs; /* over all its files (manifest) */
	bool done;
	bool summed; /* finalized: in its process's done_sums (wal_thread_closed) */
	struct ada_trigger_thread *trig; /* open frames, latency (flight.c) */
	/* What each window persisted here (flight.c): windows fw_base to
	 * nfw - 1, by index; fw[0] is window fw_base's. Keyed from the first
	 * window that reached the thread, so that a thread started late in a
	 * recording of many windows does not hold one entry per window before. */
	struct wal_flight_tw *fw;
	size_t fw_base, nfw;
	bool rotate_waited; /* its rotation waits for window memory (wal_flight_rotate_later) */
	/* Its current file is ended at its next drain, whatever its size, so
	 * that the budget can delete it (drain.c drain_budget_cut). */
	bool budget_cut;
	/* What no window took of its gaps yet (flight.c; NULL: none) */
	struct wal_gaps_kept *gaps_kept;
	/* Records windows' walks passed over (before their ranges) that no
	 * window created or widened since reached (flight.c; NULL: none) */
	struct wal_gaps_kept *passed_kept;
	/* Ring position -> index_seq: the current file's event i is ring
	 * position file_ring_base + i, for positions below file_ring_hole
	 * (the first event the file lost, e.g. disk full; MAX: none). */
	uint64_t file_ring_base, file_ring_hole;
	struct wal_tdetail *dt; /* detail lane state (detail_persist.c); NULL until used */
	/* No index file for it (drain_discard() counts its events as
	 * refuse_why): over the thread-directory rate (arena_check.c), or the
	 * recorder at its limit of open files. */
	bool refused;
	enum ada_drop_reason refuse_why;
	uint64_t detail_span_ns; /* what its detail ring held at the last tick (live view) */
	/* Its detail ring's newest record's time as drain_keep_ended() last
	 * found it, and the ring's head then: an ended thread's ring does not
	 * move, so each reclaim pass that keeps its slot reads one word
	 * instead of walking a chunk of records again (keep_head 0: none). */
	uint64_t keep_head, keep_newest_ns;
	/* The times it waited for index ring space and the ns (the slot's
	 * wait_stat, read forward-only: drain.c drain_sync_waits) */
	uint64_t ring_waits, ring_wait_ns;
	/* Its ring's head and the time at the previous pass: how fast the
	 * thread fills it (drain.c drain_note_fill, for the windows' budget) */
	uint64_t fill_head, fill_ns;
	/* Its fastest rate measured, ns per 1 024 events (0: none yet), and
	 * ring_waits at the last look (drain_room.c nap_rate, for the nap) */
	uint64_t nap_kev, nap_waits;
};

/* thread_K/'s descriptor (fs.h, opened relative to pid_N), opened on
 * first use and kept until wal_thread_dir_close(); -1 when the thread has
 * no directory or it cannot be opened. The drain keeps no descriptor per
 * thread between uses: 10 000 threads alive at once hold 10 000 index
 * files open already, and RLIMIT_NOFILE is often not much more. */
int wal_thread_dir(struct wal_thread *t);
void wal_thread_dir_close(struct wal_thread *t);

/* One traced process (one arena, one pid_N directory). */
struct wal_proc {
	pid_t pid;
	char *dir;            /* for messages; files are made relative to dir_fd */
	int dir_fd;           /* pid_N, opened once (fs.h); -1 when there is none */
	int dir_err;          /* -EMFILE/-ENFILE: there is none for the limit of open files */
	bool manifest_failed; /* its last manifest write failed (written again at the end) */
	char *arena_path;
	struct ada_arena *arena;
	/* Its arena's config and flags as the last manifest with the arena
	 * read them: a manifest written again once the arena is gone (a
	 * warning the recording added later, drain_restate) still has its
	 * `ring` (ring_known). */
	struct ada_arena_config ring_cfg;
	uint32_t ring_flags;
	bool ring_known;
	uint32_t max_threads;
	uint64_t ring_events;        /* index ring capacity per thread */
	uint32_t high_watermark_pct; /* its arena's hw: drain_note_room() */
	uint8_t arch;                /* ATF_ARCH_* of its code (its files say it) */
	struct wal_thread **by_slot;
	struct wal_thread **threads;
	size_t nthreads, capthreads;
	/* The thread_seq of every thread of threads[], an open-addressing set
	 * (seq + 1; 0: empty; at most half full): a new slot's number is
	 * checked against it in O(1) (drain.c drain_seq_taken). */
	uint64_t *seq_set;
	size_t seq_cap;
	/* The threads not finalized yet, in threads[] order (a slot each at
	 * most: as many as its arena's slots; finalized ones, at most as many
	 * again, wait there to be dropped in one pass), and what the finalized ones
	 * add up to (their lost events, index bytes and events, ring waits:
	 * fixed from then on; the budget's retirements move bytes within a
	 * thread, they do not change its sums). The sums and the live view walk the open
	 * ones only, not every thread the process ever had (issue 32 item 1:
	 * a session of 20 000 short threads spent 10 % of its drain's CPU in
	 * the live view's walks of them). */
	struct wal_thread **open;
	size_t nopen, capopen;
	size_t open_closed; /* finalized ones still in open[] (skipped: summed) */
	struct wal_thread_sums {
		uint64_t lost, index_bytes, index_events, ring_waits, ring_wait_ns;
		uint64_t detail_records, detail_waits, detail_wait_ns;
	} done_sums;
	bool reaped, gone, finished, our_child, fork_seen; /* fork_seen: fork_files.c */
	bool vanished; /* gone before we opened its arena: drain once, never wait */
	/* When it was admitted, and whether its early manifest ("recording")
	 * is written: only once it outlives WAL_EARLY_MANIFEST_NS (drain_arena.c,
	 * drain_early_manifest); a shorter process gets its final one only. */
	uint64_t admit_ns;
	bool early_manifest;
	/* Its pid is another process's now (start times differ, drain.c
	 * drain_creator_gone): /proc/PID says nothing about it. */
	bool pid_taken;
	int pidfd; /* -1 unless it is not our child */
	int wstatus;
	/* Not reaped by us: the status from its zombie or its reaper's table
	 * (wait_notes.c) when other_known; exit_unknown: none from anywhere. */
	bool other_known, exit_unknown, exit_unknown_counted;
	int other_status;
	/* Its arena's making in the arena's raw time (0 unknown): only a later reap
	 * of its pid is its; its own table of reaped children read to reaped_cursor. */
	uint64_t born_raw, reaped_cursor;
	uint64_t gone_ns; /* when first seen gone with no status: waited for */
	uint64_t events, events_at_tick;
	uint64_t drops_at_tick[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	uint32_t fill_max;
	uint32_t fill_last; /* fill_max of the last completed tick (live view) */
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT]; /* as reported (wal_drops_fold) */
	uint64_t side_bytes; /* files the drain does not write (budget.c) */
	bool side_final;     /* finished and scanned: side_bytes is final */
	/* Bit K: thread_K/ holds only files the drain counts itself (set
	 * when its first index file is made): the scan does not descend into
	 * it (budget.c wal_budget_dir_sealed). Seqs below WAL_SEALED_MAX. */
	uint64_t *sealed;
	uint32_t sealed_words;
	/* Per seq (sealed_words x 64): a sealed thread_K/'s st_blocks + 1 as
	 * the scan last read them, 0 unknown: read again only once an entry
	 * was made in it (wal_budget_dir_sealed), not at every scan of a
	 * process with thousands of finished threads. NULL: not kept. */
	uint32_t *sealed_blocks;
	/* A later process was given its pid (its arena refused): that one's
	 * agent writes into pid_N/ all the same (module files, agent.json), so
	 * pid_N/ is scanned again until the pid is free (budget.c). */
	bool side_watch;
	/* Finished, and the budget deleted some of its files since its
	 * manifest was written: the manifest is written again. */
	bool retention_stale;
	/* The budget deleted its module_<ID>.syms: every thread's files were
	 * gone and no reader needs its names any more (drain.c). */
	bool syms_retired;
	/* pid_N/.retention was written (retention.c): removed at the end;
	 * the thread lines of its last whole write, the lines appended since. */
	bool retention_saved;
	uint32_t retention_lines, retention_appended;
	/* pid_N/.ring_slots, open for writing (ring_table.c); the puts that
	 * failed, the first one's -errno, its warning's index in warnings */
	bool ring_table_open;
	int ring_table_fd;
	uint32_t ring_table_fails;
	int ring_table_err;
	size_t ring_table_warn;
	/* flight.c */
	struct ada_trigger_proc *trig;
	struct ada_symtab *syms; /* names for the triggers and the stacks at death */
	uint64_t syms_at;        /* last (re)load, boottime ns */
	json_t *crash;           /* manifest "crash" once it died of a signal */
	/* The faulting thread whose fatal-signal marker still waits for its
	 * signal context record (written at its finalize: wal_flight_context),
	 * the marker's position in its index file and time, and the record. */
	struct wal_thread *crash_thread;
	uint64_t crash_seq, crash_ns;
	struct ada_crash_info crash_ci;
	/* The recorder's own counts (corrupt, thread_limit, window_lost): never from the
	 * arena, whose counters the target could write. */
	uint64_t rec_drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	/* The arena's counters as last read (wal_drops_read); p->drops is
	 * them with rec_drops, as reported (wal_drops_fold, loss.c). */
	uint64_t arena_drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	uint64_t detail_overwritten; /* not wanted by a window (loss.c): information */
	/* Records windows wanted that were neither written nor overwritten,
	 * by reason (enum ada_window_miss, flight.c) */
	uint64_t window_missed[ADA_WINDOW_MISS_COUNT];
	/* wal_flight_ring_suggest() when its manifest was last written (the
	 * summary's, after the threads are gone) */
	uint64_t detail_ring_suggest;
	/* The shortest pre-roll a window achieved on one of its threads, and
	 * what it asked (wal_flight_preroll_short; 0, 0: none short), and the
	 * detail ring of that thread (0: a spill slot's, or not known) */
	uint64_t pre_asked_ns, pre_got_ns, pre_ring_bytes;
	/* wal_flight_fill_hint() of the window that lost the most records, and
	 * that count, when its manifest was last written (the summary's) */
	char fill_hint[160];
	uint64_t fill_hint_lost;
	uint8_t *slot_noted; /* max_threads: 1 once its quarantine was reported */
	/* drain_prep.c: max_threads, 1 once the slot's pages are locked in
	 * our mapping (or that failed); the spare being prepared (-1: none)
	 * and the claimed slot being locked (UINT32_MAX: none), with the
	 * bytes of each done; whether mlock was refused; whether a spare's
	 * pages could not be had (not tried again before the next scan);
	 * whether it lived long enough for a spare. */
	uint8_t *slot_locked;
	uint64_t *slot_dlocked;  /* max_threads: detail ring bytes locked (its pop then) */
	size_t slot_tables_len;  /* the one mapping by_slot starts: drain_slot_tables_new() */
	uint32_t slot_tables_hi; /* every entry at or past it is zero: drain_slot_touch() */
	bool prep_started;       /* drain_prepare_slots() ran once */
	int64_t prep_slot;
	uint64_t prep_done;
	uint32_t lock_slot;
	uint64_t lock_done;
	bool lock_refused, prep_backoff, prep_aged;
	/* drain_prep.c: the threads seen at its last look, and when that
	 * count last grew (CLOCK_MONOTONIC): whether threads keep coming;
	 * the threads seen when one first ended (0: none yet), so that a
	 * thread started after it shows threads come and go. */
	size_t prep_threads, prep_ended_at;
	uint64_t prep_thread_ns;
	/* drain.c: threads that were an image's first (tid == pid): one per
	 * image, so a process that exec'd counts more than one without having
	 * started a thread (drain_prep.c sizes its spares by threads started). */
	uint32_t images;
	/* drain_prep.c: the EXITED slots seen at the last reclaim
	 * (ada_arena_exited_sig) and the passes left to try again for one
	 * whose thread was still on its way out. */
	uint64_t exited_sig;
	uint32_t reclaim_retries;
	json_t *quarantine;  /* [{thread, tid, slot, reason, ...}] for the manifest */
	json_t *warnings;    /* this process's sentences (with r->warnings) */
	size_t man_warnings; /* r->warnings' size when its manifest was written */
	size_t live_warned;  /* live.c: its warnings already in the live view's */
	bool live_mlock;     /* live.c: its refused mlock told there */
	bool mlock_refused;  /* its arena said so at a tick or a manifest's write */
	double dir_tokens;   /* thread-directory budget (token bucket) */
	uint64_t dir_tokens_ns;
	uint32_t dirs_refused;
	int arena_fd;                      /* -1: none; kept to check the file's size */
	uint64_t opened_ns, drops_read_ns; /* CLOCK_MONOTONIC */
	ino_t arena_ino;           /* its arena file: a later <pid>.ring is another process's */
	bool drops_bad, arena_bad; /* drop counters scribbled: frozen; mapping faulted */
	/* exec_watch.c: the executable last seen, when it changed (0: not
	 * pending), whether an exec without the agent was told. */
	bool exe_known, exec_told;
	dev_t exe_dev;
	ino_t exe_ino;
	uint64_t exe_changed_ns;
	/* key-symbol sets (keysym_sets.c) */
	struct ada_keysym_region *ks_region; /* NULL until the first publish */
	uint64_t ks_gen;                     /* the spec generation its set was built from */
	/* pid_N/'s mtime at the last look and its .syms' names and inodes
	 * then, hashed (a new thread_K/ moves the mtime, not the set). */
	uint64_t ks_mods_seen_ns, ks_mods_mtime, ks_mods_sig;
	uint64_t ks_version; /* of its current set; 0: the agent's own */
	json_t *ks_versions; /* manifest: every version published */
	json_t *ks_last;     /* the last of them */
	uint64_t ks_versions_dropped, ks_failed;
	/* ks_region's counts when the process finished and the region was
	 * freed (wal_keysym_proc_finished): the manifests written after. */
	uint64_t ks_published, ks_reclaimed, ks_syscall_quiescent, ks_unreclaimable;
	/* Its final manifest took agent.json in (hook, modules, program,
	 * count_only): later writes take them from that manifest, never from
	 * an agent.json a later process given its pid wrote over it. */
	bool agent_final;
	bool agent_summed; /* its agent.json added to the recording's sums (once) */
	/* Its retired line could not be written (retire.c): it keeps its
	 * directory, and is not tried again. */
	bool retire_failed;
};

/* An arena refused (not ours, or a reused pid's), keyed on its inode: a
 * later file under the same name is another process's, looked at anew.
 * pid 0 marks a free entry of the set. */
struct wal_ignored {
	pid_t pid;
	ino_t ino;
};

/* Why an arena was refused (drain_arena.c): each reason is told once,
 * and its manifest warning then counts the arenas refused for it. */
enum wal_refusal {
	WAL_REFUSE_NOT_OURS,     /* not a regular file of the recording's user */
	WAL_REFUSE_OTHER_PID,    /* says it belongs to another process */
	WAL_REFUSE_STRANGER,     /* not a descendant of the recorded program */
	WAL_REFUSE_REUSED_AFTER, /* a reused pid, after its process ended */
	WAL_REFUSE_REUSED_WHILE, /* a reused pid, while its process was read */
	WAL_REFUSE_OTHER_ARCH,   /* another machine's code, or a counter it cannot convert */
	WAL_REFUSE_COUNT
};

/* Arena admission (drain_arena.c): the arenas refused, an open-addressing
 * hash set of at most WAL_IGNORED_MAX entries (a directory of fake names
 * costs one look-up per name and bounded memory), and per reason how
 * many were refused and where its warning is in r->warnings. */
struct wal_admit {
	struct wal_ignored *set;
	size_t n, cap;  /* entries used; slots (a power of two, or 0) */
	bool full_told; /* said that refusals are no longer remembered */
	uint64_t refused[WAL_REFUSE_COUNT];
	size_t warn_at[WAL_REFUSE_COUNT];
	char *first[WAL_REFUSE_COUNT]; /* the first refusal's sentence */
};

/* The disk budget (budget.c) and retention (drain.c: rotation, retiring
 * the oldest generation). */
struct wal_budget {
	uint64_t gen_bytes;   /* rotate a thread's file past this */
	uint64_t disk_closed; /* bytes of finalized files still on disk */
	bool warned;          /* over it with nothing left to delete: told */
	bool is_default;      /* max_disk_bytes is the default, not --max-disk-mb */
	bool retire_told;     /* said that the budget deletes data */
	uint64_t side_bytes;  /* every file but the index and detail files, last scan */
	/* The open detail files, counted as they are written (budget.c
	 * wal_budget_detail_sync): a busy thread's grows megabytes between
	 * two scans. Closed ones are in disk_closed. */
	uint64_t detail_open;
	/* Room kept free for the side files written before the next scan
	 * (budget.c wal_budget_scan): the program's agents write them, so
	 * the drain cannot count them as it does its own. */
	uint64_t side_margin;
	uint64_t scan_ns;    /* when side_bytes was last scanned (CLOCK_MONOTONIC) */
	uint64_t scan_every; /* the next scan's delay: doubles up to a second */
	uint64_t retired_gens, retired_events, retired_bytes;
	uint64_t retired_threads; /* whole threads deleted (their last generation too) */
	uint64_t retired_cut;     /* generations ended early for room (drain_budget_cut) */
	uint64_t cut_pass;        /* the drain pass (bell.passes) of the last marks' walk */
	size_t stale_procs;       /* finished processes with retention_stale set */
	uint64_t retired_syms;    /* processes whose symbol files went (syms_retired) */
	/* ADA_TEST_BUDGET_AUDIT (budget.c wal_budget_audit): whether it is
	 * set, the audits made, the worst shortfall of the drain's count of
	 * its files and the worst excess over the budget. */
	bool audit_on;
	uint64_t audits, audit_short, audit_over;
};

/* ada attach (ada_recorder_set_attach, recorder.c): set by the main
 * thread, read by the drain's manifests (manifest.c); set is published
 * last (release). */
struct wal_attach {
	_Atomic uint64_t time_ns, pause_ns, detach_pause_ns;
	_Atomic int set;
};

/* What the live persist of the windows may still do in a pass: detail
 * bytes, and a deadline (CLOCK_MONOTONIC ns) read every few records
 * (detail_persist.c, flight.c). */
struct wal_detail_budget {
	uint64_t bytes;
	uint64_t deadline_ns;
	uint32_t until_clock; /* records before the next clock read */
	/* A thread's end under the disk budget (flight.c
	 * wal_flight_thread_end): as with no budget, everything left in the
	 * ring is taken first, but a record past bytes is decided unwritten
	 * and counted (st->over_budget, the window's disk_budget), not left
	 * for a later call: there is none for this file. */
	bool at_end;
};

/* The windows' live persist yielding to the program while the CPU is
 * contended (flight_yield.c). The drain thread's. */
struct wal_flight_yield {
	/* /proc/thread-self/schedstat, open when fd_state is 1 (0: not tried
	 * yet, 2: none); a zeroed struct closes nothing. */
	int fd;
	uint8_t fd_state;
	bool forced;               /* test hook ADA_TEST_FLIGHT_CONTENDED=1 */
	uint32_t share_pct;        /* --persist-share (100: never held back) */
	bool have;                 /* run_ns, delay_ns were read */
	uint64_t at_ns;            /* the interval's start (CLOCK_MONOTONIC) */
	uint64_t run_ns, delay_ns; /* the drain's schedstat then */
	uint64_t allow_ns;         /* persist CPU the interval allows (UINT64_MAX: no cap) */
	uint64_t used_ns;          /* ... and took so far */
	uint64_t cpu_at;           /* the drain's CPU time when the pass's persist began */
	/* Counts, the whole run (manifest flight_recorder.counts): intervals
	 * found contended, passes whose live persist was held back, and the
	 * CPU the live persist took. */
	uint64_t contended, held, cpu_ns;
};
/* The persist CPU an interval of wall_ns allows after one in which the
 * drain ran run_ns and waited delay_ns for a CPU: UINT64_MAX (no cap)
 * when it waited at most a twentieth of wall_ns or share_pct is 100;
 * else share_pct percent of what an always-runnable thread got,
 * wall_ns * run_ns / (run_ns + delay_ns). */
uint64_t wal_flight_yield_allow(uint64_t wall_ns, uint64_t run_ns, uint64_t delay_ns,
                                uint32_t share_pct);
/* share_pct 0: ADA_PERSIST_SHARE_DEFAULT. */
void wal_flight_yield_init(struct wal_flight_yield *y, uint32_t share_pct);
void wal_flight_yield_fini(struct wal_flight_yield *y);
/* The persist CPU left to this interval (UINT64_MAX: no cap; 0: hold
 * back), starting a new interval when the last one is over. */
uint64_t wal_flight_yield_room(struct wal_flight_yield *y, uint64_t now_ns);
/* The calling thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t wal_flight_cpu_ns(void);
/* Around a pass's live persist: its CPU, taken from the interval's room. */
void wal_flight_yield_begin(struct wal_flight_yield *y);
void wal_flight_yield_end(struct wal_flight_yield *y);

/* The flight recorder (flight.c). */
struct wal_flight {
	struct ada_trigger_engine *trig;
	_Atomic uint64_t manual_requests; /* SIGUSR2: any thread / signal handler */
	uint64_t manual_seen, manual_dropped;
	uint64_t win_gen_seen; /* windows persisted up to this engine version */
	/* Detail bytes the live persist may still write in this pass; a call
	 * stopped by it leaves a backlog, taken up by the next passes. */
	struct wal_detail_budget budget; /* the pass's (flight_persist) */
	/* The most detail bytes the next pass may write: the room the disk
	 * budget made for it (drain.c drain_budget_window_room; 0: no limit). */
	uint64_t pass_room;
	/* The most wall time a pass's persist may take; 0: FLIGHT_PASS_MAX_NS.
	 * Unit tests set it long: 20 ms of wall time is a deadline a loaded
	 * machine (a sanitizer build beside other builds) misses. */
	uint64_t pass_max_ns;
	uint64_t passes;
	bool backlog;
	/* A copy found records of its window whose index events the drain
	 * had not taken yet (their window stays open until they are in). */
	bool waiting;
	struct wal_flight_yield yield; /* the CPU the live persist may take */
	bool yield_held;               /* this pass's budget is 0 for the program's sake */
	/* Window memory (detail_persist.c wal_detail_take): the records the
	 * open windows want, taken out of the detail rings every pass into
	 * the recorder's memory, where they wait for the live persist (the
	 * part the yield holds back) instead of in a ring the program
	 * overwrites. At most mem_limit bytes (every thread's together);
	 * mem_full: passes in which a take stopped at it (what it left in
	 * the ring may be overwritten: window_lost). */
	uint64_t mem_bytes, mem_peak, mem_limit, mem_full;
	void *mem_pool; /* free blocks kept for reuse (detail_persist.c) */
	uint32_t mem_pool_n;
	bool mem_pool_used;   /* a block taken since heap.c's last look */
	uint64_t take_cpu_ns; /* the takes' CPU, the whole run */
	/* Rotations put off while a thread's records waited in window
	 * memory (wal_flight_rotate_later), and rotations made with records
	 * still there (their persist, unbudgeted, made at once). */
	uint64_t rotate_deferred, rotate_forced;
};

/* The detail ring snapshot buffer (detail_persist.c), as large as the
 * largest ring a window or an end copied; used: taken since heap.c's
 * last look, which frees it when not (a recording with big rings does
 * not hold their size between windows). ends: the once-a-second span
 * tick's own, two chunks of the largest ring (ada_detail_ring_ends). */
struct wal_dsnap {
	void *buf;
	size_t cap;
	bool used;
	void *ends;
	size_t ends_cap;
};

/* Shared memory (shm.c). */
#define WAL_SHM_HELD_MAX 64u /* refused arenas whose reservation is kept track of */
struct wal_shm {
	struct ada_shm_budget *budget;   /* the ceiling's page; NULL after the end */
	struct ada_shm_budget_view last; /* its last values, once closed */
	bool told;                       /* said that a process ran untraced */
	bool told_reduced;               /* said that one got smaller detail rings */
	bool told_failed;                /* said that one could not make its arena */
	uint32_t leftover;               /* entries the end found in the arena dir */
	/* The arena directory, opened at the start and kept for the end: a
	 * recorder at its limit of open files must still list it to empty it
	 * (-1: none, or handed to the end). */
	int dir_fd;
	/* Arenas refused while their maker runs (wal_shm_hold): each holds the
	 * reservation its maker made, given back once the maker has ended. */
	struct ada_arena *held[WAL_SHM_HELD_MAX];
	uint32_t nheld;
	/* The arena pool's entries (src/ring/pool.c): pool.<k>'s kept bytes,
	 * reserved while its name is there (0: none); arenas pooled so far;
	 * files the recorder made for it (wal_shm_pool_fill) and could not
	 * make (-EOPNOTSUPP off tmpfs, a full /dev/shm ...); processes whose
	 * arena came from the pool (hits) and, past the recording's first
	 * process, that made theirs anew (misses: each a fallback, its pages
	 * allocated on its own path); processes admitted. */
	uint64_t pool_held[ADA_ARENA_POOL_SLOTS];
	uint64_t pooled, pool_made, pool_make_failed, pool_hits, pool_misses, admitted;
	bool pool_make_off; /* the arena directory is not tmpfs: no file made */
};

/* The drain's sleep while every ring is idle (drain_sleep.c; the doorbell
 * is src/ring/shm_budget.c's). Counts for the manifests' `drain`. */
struct wal_bell {
	/* The budget page, whose word the drain waits on: mapped from
	 * wal_shm_setup until ada_recorder_free (a signal handler may ring it
	 * after wal_shm_finish). NULL: no doorbell, the drain polls. */
	struct ada_shm_budget *page;
	_Atomic uint64_t wake_req; /* ada_recorder_wake(): any thread, signal handlers */
	uint64_t wake_seen;        /* drain: wake_req at the start of the pass */
	uint64_t wake_ticked;      /* wake_seen of the last pass that ran the 10 ms tick */
	uint64_t tick_seen_ns;     /* last_reclaim_ns when wake_ticked was taken */
	uint64_t names_seen;       /* drain: the page's count of arena names last read */
	uint64_t passes;           /* drain passes */
	uint64_t sleeps;           /* waits on the doorbell */
	uint64_t rung;             /* of those, ended by a ring */
	uint64_t empty;            /* rings after which the pass found nothing to do */
	uint64_t averted;          /* sleeps the last look called off (work came) */
	uint64_t looks;            /* looks at the rings during sleeps (DRAIN_LOOK_NS) */
	uint64_t looks_found;      /* sleeps such a look ended: work a ring did not say */
	bool woken;                /* the pass follows a ring */
	bool paced;                /* the last ring was empty: poll once before sleeping */
	int refused;               /* -errno: the futex would not wait; polling since */
};

/* The counts of the manifests' and `ada status`'s `drain` (drain_sleep.c;
 * the drain thread). */
void drain_bell_counts(const struct ada_recorder *r, struct ada_live_drain *out);

/* Room for the final manifests on a full disk (reserve.c). */
struct wal_reserve {
	int fd; /* <session>/.reserve, -1: none */
	uint64_t bytes;
	bool used; /* a manifest needed it: the disk was full */
};

/* A process's counts as the recording's totals sum them: the summary,
 * the live view and the retired processes' sums each fold their
 * processes into one (wal_proc_fold), so a count is added here once.
 * Every count is summed whatever the detail mode: a mode's counts that
 * do not apply are 0 or told only as the mode says where they are told. */
struct wal_proc_sums {
	uint64_t detail_records, detail_overwritten, detail_waits, detail_waited_ns;
	uint64_t ring_waits, ring_waited_ns, window_lost, drops;
	uint64_t window_missed[ADA_WINDOW_MISS_COUNT];
	uint64_t drops_by[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	/* The shortest pre-roll a window achieved (pre_got_ns), what it asked
	 * and its ring's bytes: 0, 0 when none fell short. */
	uint64_t pre_asked_ns, pre_got_ns, pre_ring_bytes;
	uint64_t detail_ring_suggest; /* the largest asked */
	/* The fill hint of the process that lost the most (fill_hint_lost). */
	uint64_t fill_hint_lost;
	char fill_hint[160];
};

/* p's counts added to s (recorder.c). */
void wal_proc_fold(struct wal_proc_sums *s, const struct wal_proc *p);

/* The processes retired (retire.c): their lines in <session>/retired.jsonl
 * and, for the recording's totals (rec_summary, the live view), their
 * sums. */
struct wal_retired {
	int fd; /* retired.jsonl, -1 until the first line */
	uint32_t procs;
	uint64_t failed;  /* lines that could not be written: those processes kept */
	bool fail_told;   /* the first such failure was said (wal_note) */
	uint32_t pending; /* processes the budget emptied since the last look */
	/* Finished processes held (not retired) now, and the most a look for
	 * processes to retire left: the test hook ADA_TEST_BUDGET_AUDIT's
	 * (budget.c). */
	size_t finished_held, held_max;
	struct wal_proc_sums sums;
	/* Per window (by its index): what it got of the retired processes. */
	struct ada_live_window_got *win;
	size_t nwin;
};

/* Retires the finished processes the budget emptied (retire.c), with a
 * budget only: all, after the side files' scan and at the end; else only
 * when the budget emptied a process since (pending). */
void wal_retire_procs(struct ada_recorder *r, bool all);
void wal_retire_fini(struct ada_recorder *r);
/* The retired line of a process's final manifest man (a new object). */
json_t *wal_retired_line(json_t *man);
/* Window wi's counts of the retired processes added to g (live view). */
void wal_retired_window_got(const struct ada_recorder *r, size_t wi, struct ada_live_window_got *g);
/* procs[i] is about to leave r->procs (retired): the live view folds it
 * first if it had not, and the verbose log forgets it. */
void wal_live_proc_retiring(struct ada_recorder *r, size_t i);
void wal_vlog_proc_retiring(struct ada_recorder *r, size_t i);
/* Frees p and everything it holds (recorder.c). */
void wal_proc_free(struct wal_proc *p);

struct wal_live;
struct wal_spares;
struct wal_keysym;

/* agent_json.c: the last "modules" list of an agent.json parsed (its
 * text, its parse, and that converted for the manifest) and the
 * unguessable stand-in that takes its place in the next file's parse. */
struct wal_agent_cache {
	uint64_t token; /* 0: not drawn yet */
	char *text;
	size_t len;
	json_t *raw, *out;
};

/* The processes the recorder reaped before their arena was admitted
 * (arena_check.c): their wait status, for that admission. An entry goes
 * when the admission takes it, or at the end of the first complete scan
 * of the arena directory that began after the reap: a process's arena is
 * named before the process can be reaped, so that scan saw it. And it
 * applies only to an arena named (its ctime) before the reap: one named
 * after it is a later process's, given the pid. Kept for good and applied to any
 * arena of the pid, an entry was one per orphan reaped for the whole
 * recording, and a later process given the pid was taken for reaped the
 * moment it was admitted (finished at once, with another's status). */
struct wal_reaped_pid {
	pid_t pid;
	int status;
	uint64_t scan;     /* scans begun when it was reaped */
	int64_t reaped_ns; /* CLOCK_REALTIME_COARSE of the reap (the ctimes' clock) */
};
struct wal_reaped {
	struct wal_reaped_pid *v;
	size_t n, cap;
	uint64_t scans; /* scans of the arena directory begun */
};

struct ada_recorder {
	struct ada_recorder_opts o;
	json_t *man_building; /* wal_manifest_write's root while it builds (drain thread) */
	/* Every process's agent.json, as its first final manifest read it:
	 * the summary's (drain thread; read after the join). */
	struct ada_agent_sums agent_sums;
	struct wal_agent_cache agent_cache; /* final manifests' agent.json */
	char *out_dir, *session_dir, *arena_dir, *ring_config;
	int session_fd; /* session_dir, opened once: pid_N are made under it */
	char **argv_copy;
	struct ada_wal_io *io;
	struct ada_tsc_clock clk;
	enum ada_tsc_calib tsc_calib; /* where the first piece's slope came from */
	bool use_tsc, started, discarded;
	/* The program's architecture (ATF_ARCH_*: the files and manifests
	 * say it) and whether its counter is one ada cannot read (another
	 * architecture: the clock comes from the arenas' anchors,
	 * wal_clock_anchor()). */
	uint8_t arch;
	bool foreign_counter;
	pthread_t thr;
	pid_t main_pid;
	struct wal_proc **procs;
	size_t nprocs, capprocs;
	struct wal_reaped reaped;         /* pids reaped before their arena showed up */
	struct wal_wait_notes wait_notes; /* children reaped by their traced parent */
	struct wal_admit admit;           /* arenas refused: each file looked at once */
	uint32_t pid_reused;       /* arenas of a later process given a recorded pid: not read */
	uint32_t fd_limit_told;    /* threads that got no file at the limit of open files */
	uint32_t unread_told;      /* processes with events unread at the end (drain_end.c) */
	bool fd_limit_detail_told; /* a detail file refused by it: said (detail_persist.c) */
	uint64_t fork_made, fork_refused[4]; /* fork notes (fork_files.h, wal_fork_refusal) */
	bool manifest_fail_told;             /* a manifest write failed: said (manifest.c) */
	bool main_reaped, no_children;
	int main_status;
	uint64_t main_exit_ns; /* drain: when the main process was reaped */
	bool left_running;     /* drain: gave up on descendants still running */
	uint64_t start_ns, end_ns;
	struct ada_wall_anchor wall; /* the manifests' wall-clock anchor, read at start */
	uint64_t drain_cpu_ns;       /* the drain thread's own CPU time, taken at its end */
	uint64_t last_tick_ns, last_anchor_ns, last_reclaim_ns;
	uint64_t last_poll_ns; /* drain_pass(): the last waitpid for dead children */
	/* The last drain pass: events taken (drain_pass(): the waitpid
	 * cadence), the least room (events) a ring it read had left when
	 * read (the windows' detail budget, flight.c; 0: a ring at its high
	 * watermark or a small ring filling) and once its take and release
	 * were done (drain_nap(); 0 also when a take stopped at its budget:
	 * the drain is behind). */
	uint64_t pass_events, pass_room_min, pass_room_after;
	/* The least time any ring's room after its take lasts at a margin
	 * over its thread's rate (drain_nap(); UINT64_MAX: no ring moved). */
	uint64_t pass_slow_ns;
	/* The least time any ring read this pass would take to fill at the
	 * rate its thread wrote since the previous pass (UINT64_MAX: none
	 * moved): what the windows' detail may take of the pass (flight.c). */
	uint64_t pass_fill_ns;
	uint64_t events_total, lost_total;
	/* Detail records cut from detail files a failed write left short, and
	 * detail files removed because they could not be sealed (pd_after_cut). */
	uint64_t detail_cut, detail_removed;
	bool detail_cut_told;
	size_t heap_finished_trimmed; /* heap.c: processes finished at the last trim */
	uint64_t heap_pool_ns;        /* heap.c: the staging pool's last trim (CLOCK_MONOTONIC) */
	_Atomic int stop_req;         /* ada_recorder_stop(): async-signal-safe */
	uint64_t stop_at_ns;          /* drain: when it saw the request */
	uint64_t stop_deadline_ns;    /* drain: rings are drained until here */
	int error;
	json_t *warnings;
	int manifest_error;        /* the first manifest that could not be written */
	uint64_t self_start_ticks; /* ours, for `ada status` (alive.c) */
	/* The state of each concern, owned by the file named (its _setup or
	 * _init fills it, its _fini or _end undoes it). */
	struct wal_budget budget;   /* the disk budget and retention (budget.c, drain.c) */
	struct wal_attach attach;   /* ada attach's times (recorder.c, manifest.c) */
	struct wal_flight flight;   /* the trigger engine, manual fires (flight.c) */
	struct wal_dsnap dsnap;     /* the detail ring snapshot (detail_persist.c) */
	struct wal_shm shm;         /* the shared-memory ceiling (shm.c) */
	struct wal_bell bell;       /* the drain's sleep and doorbell (drain_sleep.c) */
	struct wal_reserve reserve; /* the final manifests' room (reserve.c) */
	struct wal_spares *spares;  /* thread directories made ahead (spares.c); NULL: none */
	struct wal_live *live;      /* the live view (live.c) */
	struct wal_keysym *ks;      /* key-symbol sets (keysym_sets.c) */
	struct wal_vlog *vlog;      /* -v / --log (vlog.c); NULL: no log */
	struct wal_retired retired; /* processes retired (retire.c) */
};

uint64_t wal_proc_drops(const struct wal_proc *p);
uint64_t wal_proc_lost(const struct wal_proc *p); /* events not written (disk full) */
/* t's index files (kept, retired and current) and the events in them. */
void wal_thread_index_bytes(const struct wal_thread *t, uint64_t *bytes, uint64_t *events);
/* t is finalized (drain_thread_finalize: nothing drains it any more,
 * its counts are final): out of its process's open threads, its counts
 * into the finalized ones' sums. Again: nothing. */
void wal_thread_closed(struct wal_thread *t);
/* The bytes of its index files (kept, retired and current, headers
 * included) and the events in them: the encoding's bytes per event. */
void wal_proc_index_bytes(const struct wal_proc *p, uint64_t *bytes, uint64_t *events);

/* budget.c: the default budget for a session under dir (10 % of the free
 * space, at most 4 GiB, at least 1 MiB); bytes rounded up to whole blocks;
 * the scans of the files the drain does not write; retirement counts. */
uint64_t wal_budget_default(const char *dir);
uint64_t wal_round_block(uint64_t bytes);
void wal_budget_scan_proc(struct wal_proc *p);
/* p's thread_<seq>/ sealed (it holds only index and detail files, which
 * the drain counts: the scans count the directory's own blocks and do
 * not open it) or not (a file is open in it, or seq is reused); called
 * too (sealed) whenever the drain makes an entry in it: its blocks are
 * read again at the next scan. */
#define WAL_SEALED_MAX (1u << 20)
void wal_budget_dir_sealed(struct wal_proc *p, uint32_t seq, bool sealed);
void wal_budget_scan(struct ada_recorder *r);
void wal_budget_retired(struct ada_recorder *r, uint64_t events, uint64_t bytes);
/* t's open detail.atf as the budget counts it (detail_open), set to its
 * size now: after every write to it (detail_persist.c). */
void wal_budget_detail_sync(struct ada_recorder *r, struct wal_thread *t);
/* t's detail.atf was closed (file_bytes: what stays on disk, 0 when it was
 * removed): it leaves detail_open; returns its whole blocks, for the
 * caller to count where the file goes (a generation, the final files). */
uint64_t wal_budget_detail_closed(struct ada_recorder *r, struct wal_thread *t,
                                  uint64_t file_bytes);
void wal_budget_overrun(struct ada_recorder *r);
/* A detail file's header, footer and last block: the room its end takes. */
#define WAL_FILE_ENDS (64ull << 10)
/* Whether a trigger window is open (--detail triggered). */
bool wal_window_open(const struct ada_recorder *r);
/* The room a thread of p ending with a window open takes at once. */
uint64_t wal_budget_end_room(const struct ada_recorder *r, const struct wal_proc *p);
/* What the budget keeps deletable ahead of need (drain.c hold). */
uint64_t wal_budget_ahead(const struct ada_recorder *r);
/* t's current index and detail files, as the budget counts them. */
uint64_t wal_budget_current_bytes(const struct wal_thread *t);
/* Marks the largest files being written to end early until they hold
 * want bytes; returns the bytes of those marked (budget.c). */
uint64_t wal_budget_cut(struct ada_recorder *r, uint64_t want);
/* Test hook ADA_TEST_BUDGET_AUDIT=FILE: init reads it (drain start),
 * audit measures the session's index and detail files against counted
 * (the drain's count of them) and the budget, end writes the worst to
 * FILE. */
void wal_budget_audit_init(struct ada_recorder *r);
void wal_budget_audit(struct ada_recorder *r, uint64_t counted);
void wal_budget_audit_end(struct ada_recorder *r);
/* Deletes the session's oldest file the budget may delete (budget.c): a
 * thread's oldest generation, a finished thread's final files, else the
 * symbol files of a finished process left with no thread file. false:
 * nothing left to delete. */
bool wal_retire_oldest(struct ada_recorder *r);
/* Writes again the manifests of finished processes the budget deleted
 * files of since they were written. */
void wal_manifests_restale(struct ada_recorder *r);
/* Once a second per process: an exec that left the agent behind is said
 * (exec_watch.c). now: CLOCK_MONOTONIC ns. */
void wal_exec_watch(struct ada_recorder *r, struct wal_proc *p, uint64_t now);
/* A warning for p's manifest (every manifest when p is NULL) and stderr
 * (through o.notice). */
void wal_note(struct ada_recorder *r, struct wal_proc *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* One sentence for stderr only, through o.notice (nothing when it is
 * NULL): the recorder never prints itself. */
void wal_notice(struct ada_recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes one thread-directory token of p (false: over the rate; counted). */
bool wal_thread_dir_allowed(struct wal_proc *p, uint64_t now_ns);

uint64_t wal_now_ns(void); /* CLOCK_MONOTONIC */

/* shm.c: the shared-memory ceiling and the arena directory's end. */
int wal_shm_setup(struct ada_recorder *r);
void wal_shm_release(struct ada_recorder *r, struct wal_proc *p);
void wal_shm_read(const struct ada_recorder *r, struct ada_shm_budget_view *v);
void wal_shm_tick(struct ada_recorder *r);
/* An arena about to be refused (its name removed, path still naming
 * it): its maker reserved the arena's size in the shared budget before
 * creating it, and only arenas the recorder reads give it back when they
 * are finished. It is kept mapped (its header tells the size and the
 * maker) and its reservation is given back once its maker has ended
 * (wal_shm_tick); past WAL_SHM_HELD_MAX, at once. Not an arena: nothing. */
void wal_shm_hold(struct ada_recorder *r, const char *path);
/* Held arenas whose maker has ended give their reservation back: on the
 * reclaim pass, so a process waiting for room (shm_budget.c) gets it. */
void wal_shm_held_tick(struct ada_recorder *r);
/* A free place in the arena pool (src/ring/pool.c), the entries taken
 * since given back first; -1 when none (no budget file, the pool full). */
int wal_shm_pool_slot(struct ada_recorder *r);
/* The scrubbed arena a of a finished process that is gone, published at
 * path, renamed into the pool's place k for the next process that makes
 * an arena, its kept pages counted against the ceiling; false when it is
 * not (the ceiling, the name taken): the caller removes it as before. */
bool wal_shm_pool_put(struct ada_recorder *r, const struct ada_arena *a, const char *path, int k);
/* A process of the recording has just been admitted with arena a: its
 * hit or miss counted, and, once the program forks (a's is not the first
 * arena), the pool topped up with new files for arenas of a's size. */
void wal_shm_pool_admitted(struct ada_recorder *r, const struct ada_arena *a);
/* The top-up alone. */
void wal_shm_pool_fill(struct ada_recorder *r, const struct ada_arena *a);
/* Test hooks' hold (drain_end.c): creates the file f (when set) and
 * waits until the test removes it, 60 s at most. */
void wal_test_hold(const char *f);
/* The drain decided the recording ends, before its last scan of the arena
 * directory: no process makes an arena from then on (shm.budget says so),
 * so every arena published is either that scan's or removed by its maker. */
void wal_shm_end(struct ada_recorder *r);
void wal_shm_finish(struct ada_recorder *r);
/* `ada recover`: removes an arena directory once only shm.budget, the
 * owner record and the arena pool's files (no events) are left. */
void wal_shm_remove_dir(const char *dir);

/* Test hook for `ada recover` (drain.c): ADA_TEST_KILL_AT=NAME makes the
 * recorder SIGKILL itself at the named point, where a real kill can land
 * (a window too short to hit from outside); NAME@N at its Nth pass. Only
 * the drain thread calls it. */
void wal_kill_point(const char *name);

/* retention.c: what the budget deleted from a process not finished yet,
 * in pid_N/.retention for `ada recover` (the recorder may die); t: the
 * thread the budget just deleted a file of (NULL: the file whole). */
void wal_retention_save(struct wal_proc *p, const struct wal_thread *t);
void wal_retention_drop(struct wal_proc *p); /* its final manifest says it now */
struct wal_retention_thread {
	uint32_t seq, tid, gens;
	uint64_t events, bytes, until_ns;
	bool whole;
	bool listed;    /* a thread of the recovered manifest took it */
	uint32_t order; /* its line's place in the file: the last one counts */
};
struct wal_retention {
	bool found; /* a .retention was read */
	bool symbols_deleted;
	struct wal_retention_thread *threads;
	size_t n;
	uint64_t bad_lines; /* lines that were not one ada writes: skipped */
};
/* Reads pid_dir/.retention (none, or not one: rt->found false). */
void wal_retention_load(const char *pid_dir, struct wal_retention *rt);
void wal_retention_remove(const char *pid_dir);
void wal_retention_free(struct wal_retention *rt);
/* Sets the manifest's per-thread retired_* and retired_whole in threads
 * (adding the threads the budget deleted whole) and, when rt was read,
 * the sums in man's `retention`. */
void wal_retention_apply(json_t *man, json_t *threads, struct wal_retention *rt);

/* ring_table.c: pid_N/.ring_slots, which ring positions each thread's
 * unfinished index file holds (file event i = ring position base + i of
 * slot `slot` holding generation `gen` of thread `seq`), for `ada
 * recover`. put: at each new index.atf of t (0, or -errno: not written,
 * counted in p); failed: one put's failure in p's warnings (the count
 * kept current in one sentence); drop: its final manifest is written;
 * close: the recorder's end; drained: the process is finished (every
 * ring drained, every file final) but its final manifest could not be
 * written, said in the table (0, or -errno: not said) before its arena
 * is removed, so that recover does not take the arena for lost. */
#define WAL_RING_TABLE_REC 32u
int wal_ring_table_put(struct wal_proc *p, const struct wal_thread *t);
int wal_ring_table_drained(struct wal_proc *p);
void wal_ring_table_failed(struct ada_recorder *r, struct wal_proc *p);
void wal_ring_table_drop(struct wal_proc *p);
void wal_ring_table_close(struct wal_proc *p);
struct wal_ring_base {
	uint32_t slot, seq, gen;
	uint64_t base;
	/* The G the file gets when rotated (index.g<G>.atf): a record whose
	 * G names a file already rotated is stale (ring_table.c). */
	uint32_t file_gen;
};
#define WAL_RING_FILE_GEN_NONE UINT32_MAX /* an ARS1 record: not known */
struct wal_ring_table {
	bool found;              /* a .ring_slots was read */
	bool drained;            /* it says the recorder drained the process (ARSD) */
	struct wal_ring_base *v; /* the records that passed the checks, by seq */
	size_t n;
	uint64_t bad; /* records that were not one the drain writes: skipped */
};
void wal_ring_table_load(const char *pid_dir, struct wal_ring_table *tb);
bool wal_ring_table_find(const struct wal_ring_table *tb, uint32_t seq, struct wal_ring_base *out);
/* Thread seq's record: tb's, or in a session recorded before the table
 * thread_dir/.ring_base's (its file generation not known). */
bool wal_ring_table_lookup(const struct wal_ring_table *tb, const char *thread_dir, uint32_t seq,
                           struct wal_ring_base *out);
/* True when a record of file generation file_gen is stale: one of the
 * thread's index file names (n of them) is index.g<G>.atf with G at or
 * past it, the file it described rotated since (a rotation's put that
 * failed left it); its base is not the current file's. */
bool wal_ring_table_rotated(uint32_t file_gen, char *const *names, size_t n);
void wal_ring_table_remove(const char *pid_dir);
void wal_ring_table_free(struct wal_ring_table *tb);

/* reserve.c: the final manifests' room on a full disk. */
void wal_reserve_setup(struct ada_recorder *r);
int wal_manifest_commit(struct ada_recorder *r, int dirfd, json_t *root);
void wal_reserve_end(struct ada_recorder *r);
int wal_manifest_write(struct ada_recorder *r, struct wal_proc *p, const char *state);
/* Frees the manifest a fault in the arena (WAL_GUARDED) cut short in
 * wal_manifest_write: its siglongjmp skips the write's json_decref. */
void wal_manifest_abandon(struct ada_recorder *r);

/* live.c: the live view (wal.h). init/fini on the caller's thread;
 * wal_live_publish on the drain (force: once a second and at the end;
 * otherwise only when the windows changed). */
int wal_live_init(struct ada_recorder *r);
void wal_live_fini(struct ada_recorder *r);
void wal_live_publish(struct ada_recorder *r, bool force, bool ended);
/* Drain: events taken, a window or a process since the last view (or a
 * view waiting for a reader to leave): the next 10 ms tick publishes it,
 * so the drain does not sleep past that tick. */
bool wal_live_stale(const struct ada_recorder *r);
/* The finished processes the view has folded so far: how many, and their
 * events (test_wal_live_retire). */
void wal_live_finished_sums(const struct ada_recorder *r, uint32_t *procs, uint64_t *events);

/* keysym_sets.c: the recorder's key-symbol sets (drain tick, manifest). */
struct ada_keysym_spec;
int wal_keysym_init(struct ada_recorder *r, const struct ada_keysym_spec *initial);
void wal_keysym_fini(struct ada_recorder *r);
/* The spec in force (NULL: --detail never, or every function). */
const struct ada_keysym_spec *wal_keysym_spec(const struct ada_recorder *r);
void wal_keysym_tick(struct ada_recorder *r);
/* Whether the key-symbol sets need the drain's 10 ms tick while it
 * sleeps (a spec with rules: new modules to follow). */
bool wal_keysym_timed(const struct ada_recorder *r);
void wal_keysym_proc_free(struct wal_proc *p);
/* p finished: its key-symbol region (the published sets' snapshots of
 * the arena's threads, up to the whole thread limit each) is freed, its
 * counts kept for the manifests written later. */
void wal_keysym_proc_finished(struct wal_proc *p);
json_t *wal_keysym_json(const struct ada_recorder *r, const struct wal_proc *p);
/* The longest .syms file, and version 2 body, the recorder reads. */
#define WAL_KS_SYMS_MAX (64u << 20)
/* A process's module_<ID>.syms (the target's file: bounded, no links) into
 * a new buffer; wal_is_syms_name() says which names are ones. */
int wal_syms_read(int dirfd, const char *name, char **buf, size_t *len);
bool wal_is_syms_name(const char *name);

/* agent.json's text buf[0..len) parsed as json_loadb does; when the
 * file's "modules" list has the bytes of c's, that list is not parsed
 * again: *out is c's conversion of it (a new reference); else *out is
 * the conversion convert made of the file's list when c keeps it now,
 * or NULL. c NULL: parsed whole. */
json_t *wal_agent_parse(struct wal_agent_cache *c, const char *buf, size_t len,
                        json_t *(*convert)(json_t *raw), json_t **out);
void wal_agent_cache_free(struct wal_agent_cache *c);

/* manifest.c: pid_N/agent.json (hook counts, timings, untraced calls,
 * modules) into the manifest as "hook", "modules" and "program" (the
 * image that ran last), the exit counts fx or own folded in; nothing when
 * it is missing. What each argument is: manifest.c. */
void wal_manifest_agent(json_t *root, int pid_dir_fd, struct ada_agent_sums *sums,
                        struct wal_agent_cache *cache, const struct ada_fork_exit *fx,
                        const struct ada_fork_exit *own);

/* agent_inherit.c: a is pid's agent.json; when its "pid" is another's
 * (a forked child that ended without writing its own: it links its
 * parent's at the fork), made pid's: its counts as the fork left them,
 * "inherited_from" the other pid; true then. */
bool wal_agent_inherit(json_t *a, pid_t pid);
/* a written as pid_N/agent.json (temporary file and rename). */
int wal_agent_inherit_write(int pid_dir_fd, const json_t *a);
/* agent_tmp.c: p is gone; the agent.json temporaries its agent left in
 * pid_N/ (an _exit or a fatal signal in the middle of a write) removed,
 * regular files only, and said in p's warnings. Returns how many. */
unsigned wal_agent_tmp_sweep(struct ada_recorder *r, struct wal_proc *p);
/* What one sweep did. */
struct wal_agent_tmp_sweep {
	unsigned removed; /* the agent's temporaries (regular files), removed */
	unsigned planted; /* entries of that name that were no regular file: left */
	bool capped;      /* max entries read and more there: the rest not looked at */
};
/* The sweep of the directory fd (read from its current offset, at most
 * max entries, "." and ".." counted); fd stays the caller's. */
void wal_agent_tmp_sweep_dir(int fd, unsigned max, struct wal_agent_tmp_sweep *s);

/* agent_sums.c: what the summary takes from one agent.json (a), added
 * to s: the calls not traced, count-only functions and the budget's
 * moves, the hottest functions, the images without symbols. */
void wal_agent_sums_fold(struct ada_agent_sums *s, json_t *a);
/* A final count_only section of a budget run whose counts cost more than
 * the budget gets over_budget: the functions to --exclude-symbol, most
 * calls first, and the estimated costs (exclude_hint.c, docs/manifest.md). */
void wal_exclude_hint(json_t *co);

/* vlog.c: the verbose log (`-v`, `--log`), on the drain thread. */
int wal_vlog_init(struct ada_recorder *r);
void wal_vlog_fini(struct ada_recorder *r);
void wal_vlog_tick(struct ada_recorder *r);
void wal_vlog(struct ada_recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* flight.c: the flight recorder's side of the drain. */
int wal_flight_init(struct ada_recorder *r);
void wal_flight_fini(struct ada_recorder *r);
void wal_flight_proc_start(struct ada_recorder *r, struct wal_proc *p);
void wal_flight_thread_start(struct wal_thread *t);
void wal_flight_free(struct wal_proc *p);
void wal_flight_tick(struct ada_recorder *r);
/* After a pass took the rings' events: a new or extended window has its
 * pre-roll persisted at once, before the rings overwrite it. */
void wal_flight_after_pass(struct ada_recorder *r);
/* t's index file is about to be finalized or rotated: the open windows
 * take what they want of its ring first, room detail bytes of it at most
 * (the disk budget's; UINT64_MAX: all), the rest counted (disk_budget). */
void wal_flight_thread_end(struct ada_recorder *r, struct wal_thread *t, uint64_t room);
/* Whether t's rotation (its files at bytes, a generation gen_bytes) waits:
 * records of t in window memory link to events of the file a rotation
 * finalizes, so it would persist them all at once, whatever the yield
 * says. It waits while they are there, up to half a generation more
 * (then made, counted as forced). */
bool wal_flight_rotate_later(struct ada_recorder *r, struct wal_thread *t, uint64_t bytes,
                             uint64_t gen_bytes);
void wal_flight_proc_end(struct ada_recorder *r, struct wal_proc *p);
/* heap.c: a fixed mmap threshold (once, before the drain starts), and the
 * arenas trimmed at the drain's tick after a process finished. */
void wal_heap_setup(void);
void wal_heap_tick(struct ada_recorder *r);
/* The heap's pools into the live view (its heap_*_bytes; heap.c). */
void wal_heap_pools(const struct ada_recorder *r, struct ada_recorder_live *v);

/* The thread is finalized: its trigger state (open frames, about 12 KiB)
 * goes; nothing evaluates its events any more. A process that starts a
 * thread per request would otherwise keep every one's to its end. */
void wal_flight_thread_finished(struct wal_thread *t);
/* The process is finished: its trigger state (threads', and its verdict
 * tables) and its symbol table go (flight_name() reloads the table
 * should a later rewrite of its manifest ask for a name), so that a
 * recording of many short processes does not keep every one's. */
void wal_flight_proc_finished(struct wal_proc *p);
/* t is about to be finalized: when it holds its process's fatal-signal
 * marker, the signal context record linked to it, the last of its detail
 * file (after every window's records). */
void wal_flight_context(struct ada_recorder *r, struct wal_thread *t);
/* The manifest's crash.context of a crash record: the faulting thread's
 * registers at the signal, by the names of arch (ATF_ARCH_*: flight.c;
 * recover.c). */
json_t *wal_crash_context_json(const struct ada_crash_info *ci, uint8_t arch);
/* The manifest's crash.other_threads from the arena's record of them
 * (docs/manifest.md); NULL when there is none. */
json_t *wal_crash_others_json(const struct ada_arena *a);
void wal_flight_manifest(json_t *root, struct ada_recorder *r, struct wal_proc *p);
/* t's file ends for good (its thread ended, its slot was quarantined, the
 * recording stopped): records its windows' last copies found waiting for
 * index events that will never be taken now are those windows'
 * unread_at_end (window_missed). After wal_flight_thread_end(). */
void wal_flight_thread_unread(struct ada_recorder *r, struct wal_thread *t);
/* {"unread_at_end": n, "bad_link": n, "passed_over": n} (the manifest's
 * window_missed). */
json_t *wal_window_missed_json(const uint64_t missed[ADA_WINDOW_MISS_COUNT]);
/* Records of t the windows wanted and its ring had overwritten (window_lost). */
uint64_t wal_flight_thread_lost(const struct wal_thread *t);
/* The detail ring (bytes per thread) that would have held every record
 * the windows of p wanted at the rate its rings filled: the largest over
 * its threads and windows of ring bytes x (persisted + window_lost) /
 * persisted; 0 when no window lost a record (or none was persisted). */
uint64_t wal_flight_ring_suggest(const struct wal_proc *p);
/* The functions whose leaving the detail set would have held p's window
 * that lost the most records (the manifest's hold_without of that
 * window), as "a, b" in buf; "" when none lost any, when the listed
 * fillers are not enough, or when the names do not fit in len. */
void wal_flight_fill_hint(const struct ada_recorder *r, const struct wal_proc *p, char *buf,
                          size_t len);
/* Keeps in p->pre_asked_ns / pre_got_ns the shortest pre-roll a window of
 * p achieved on a thread that lost records of it (window_lost), when it
 * is shorter than the one kept (the summary reads it after the threads
 * are gone). */
void wal_flight_preroll_short(struct ada_recorder *r, struct wal_proc *p);
/* What window wi got so far over every process and thread (live view). */
void wal_flight_window_got(const struct ada_recorder *r, size_t wi, struct ada_live_window_got *g);
static inline void wal_flight_feed(struct wal_thread *t, const struct atf_index_event *ev, size_t n)
{
	if (t->trig)
		ada_trigger_feed(t->trig, ev, n);
}
/* Atomically replaces manifest.json in the directory dirfd (a private
 * temporary file with an unpredictable name + renameat; fs.h). */
int wal_json_write_atomic(int dirfd, json_t *root);

/* ---- ada recover's steps on files (recover_files.c) ---------------------- */

/* qsort order of index file names: index.g<G>.atf by G, index.atf last. */
int rec_gen_cmp(const void *a, const void *b);
/* The first len bytes of fd are zeros, or fewer exist: a header never
 * written (the recorder died between the file's creation and it). */
bool rec_never_written(int fd, size_t len);
/* A new index.atf in thread directory tfd, the drain's header: 0, -errno. */
int rec_new_index(int tfd, uint32_t tid, uint8_t arch);
/* pid_dir's manifest, or a new one when it is lost or damaged. */
json_t *rec_manifest_load(const char *pid_dir);

/* ---- ada recover's arena search (recover_find.c) ------------------------ */

/* Whether man (a pid_N's manifest) says its recorder still runs (pid and
 * start time: a reused pid is not it): two drains of one ring would
 * corrupt both the ring and the files. */
bool rec_recorder_running(json_t *man);
/* Whether name is pid_<N>. */
bool rec_is_pid_dir(const char *name);
/* Whether arena (a manifest's: input) is a file right in adir. */
bool rec_arena_in_dir(const char *arena, const char *adir);
/* adir (a manifest's arena_dir: input) opened into *dfd when it is a
 * directory ada could have made for an arena: named <dir>/ada-*, its
 * parent reached by ada_fs_walk_parent (every
 * directory on the way root's or ours and not writable by others, unless
 * a sticky one of root's such as /dev/shm), itself not a link, a
 * directory of the effective user's, mode 0700 (mkdtemp's). 0; -EPERM (a
 * name, place, owner or mode ada would not have made), -ELOOP (a link),
 * -ENOENT (gone), other -errno; *dfd -1 on error. */
int rec_arena_dir_open(const char *adir, int *dfd);
/* A process whose manifest (man, of pid_dir) names no arena: man gains
 * "arena" (<pid>.ring in the session's arena directory) and "arena_dir"
 * (and a sibling's clock and arch). 1 when found, 0 when not or nothing
 * to find, -EBUSY when the recorder still runs. */
int rec_name_arena(const char *pid_dir, json_t *man);
/* Arenas of the session dir's arena directory that the recorder never
 * admitted (no pid_N): each that opens as an arena gets its pid_N, and
 * recover_pid(pid_dir, arg) is called on it. 0, or -EBUSY when the
 * recorder still runs. */
int rec_unadmitted(const char *dir, int (*recover_pid)(const char *pid_dir, void *arg), void *arg);
/* Recovers one pid_N directory (recover.c): its thread files finalized,
 * its arena drained, its manifest written. 0 or -EBUSY (its recorder
 * runs). */
int rec_pid(const char *pid_dir, struct ada_recover_report *rep);
/* ada recover: removes the spare thread directories a killed recorder
 * left in the session dir (spares.c), counted in rep, and says what it
 * left there. */
void wal_spares_recover(const char *dir, struct ada_recover_report *rep);

/* p's per-slot tables (by_slot, slot_dlocked, slot_noted, slot_locked),
 * max_threads entries each, in one anonymous mapping (drain_arena.c): its
 * pages come zeroed when first touched (a short process pays a page of
 * each, not the thread limit's whole tables, as calloc past glibc's mmap
 * threshold did); or one an ended process left, cleared. 0 or -ENOMEM. */
int drain_slot_tables_new(struct wal_proc *p);
/* Unmaps them (none: nothing) and forgets their pointers. */
void drain_slot_tables_free(struct wal_proc *p);

#endif
