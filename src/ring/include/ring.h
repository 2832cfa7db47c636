/*
 * ada ring: the shared-memory arena between a traced process and the
 * recorder, its per-thread SPSC rings, and the producer API.
 *
 * Protocol (who writes what, who reads it, in which order):
 *   - One arena per traced process: a file mapping (MAP_SHARED) created by
 *     the producer side (the agent, or a program linking ada_producer) and
 *     opened by the recorder's drain (and by `ada recover` after a crash).
 *   - The arena holds a control block (struct ada_arena_control), then
 *     max_threads slots; each slot has a descriptor, an index ring of
 *     32-byte events and a detail ring of variable-length records.
 *   - Index ring: the thread that owns the slot is the only producer; it
 *     fills events[head & mask] and then publishes head with a release
 *     store. The drain is the only consumer; it reads head with acquire,
 *     reads events [tail, head), then publishes tail with a release store.
 *     The producer reads tail with acquire only when its cached limit says
 *     the ring may be full.
 *   - index events in the ring carry the raw timestamp (TSC ticks, or ns
 *     when the arena's timestamp source is ADA_TS_CLOCK); the drain converts
 *     to CLOCK_BOOTTIME ns before writing them out.
 *   - Slot life: FREE -> (CAS by the first event of a thread) ACTIVE ->
 *     (thread-exit destructor) EXITED -> (drain: thread gone and ring empty)
 *     FREE. An EXITED thread may still emit a few events from later
 *     destructors; the ring stays valid until the drain frees the slot.
 *   - Detail ring: the owning thread appends [len][record] at head, in
 *     chunks (a record never crosses a chunk's end), and when there is no
 *     room advances `oldest` one whole chunk over the records it overwrites
 *     (counted as ADA_DROP_DETAIL_OVERWRITTEN). It publishes the new oldest
 *     before it writes over old bytes, so the drain's snapshot (copy, then
 *     re-read oldest: a seqlock) detects and discards a record overwritten
 *     while it was being copied instead of returning it torn.
 *   - Because the ring lives in shared pages, everything a producer
 *     published before it died (SIGKILL included) can still be drained.
 *   - The control block also holds the table of the children the process
 *     reaped itself, for the drain (ring_reaped.h).
 *   - Nothing here runs unless called: no constructors, no threads.
 */
#ifndef ADA_RING_H
#define ADA_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atf_format.h"
#include "clock.h"

#define ADA_CACHELINE 64
#define ADA_ARENA_MAGIC 0x414e455241414441ULL /* "ADAARENA" */
#define ADA_ARENA_VERSION                                                                          \
	16 /* 2: six drop reasons; 3: crash record; 4: key-symbol area; 5: spill slots;            \
	      6: window_lost; 7: keysym_unknown; 8: detail_wait, the detail ring's decided;        \
	      9: the index ring's wait_stat; 10: the crash record's registers; 11: no low          \
	      watermark; 12: the creator's machine and counter (ada_arena_origin); 13: the         \
	      other threads at a crash; 14: drop reasons fd_limit and unread_at_end; 15: the       \
	      table of reaped children; 16: a forked child's fork note and exit counts */

/* The code a forked child runs between fork() and its first traced call
 * (the atfork child handler, the producer's set-up of the child's arena):
 * gathered in one place of the agent's text, since the linker puts every
 * .text.hot.* input section together. The child has no page table
 * entries for the parent's text; each 64 KiB window of it the child
 * touches costs it a page fault, and this path would touch several. */
#define ADA_FORK_PATH __attribute__((section(".text.hot.ada_fork")))

#define ada_likely(x) __builtin_expect(!!(x), 1)
#define ada_unlikely(x) __builtin_expect(!!(x), 0)

enum ada_overflow { ADA_OVERFLOW_WAIT = 0, ADA_OVERFLOW_DROP = 1 };
enum ada_ts_source { ADA_TS_TSC = 0, ADA_TS_CLOCK = 1 };
enum ada_lane { ADA_LANE_INDEX = 0, ADA_LANE_DETAIL = 1, ADA_LANE_COUNT = 2 };
enum ada_drop_reason {
	ADA_DROP_RING_FULL = 0,          /* --overflow drop and the ring was full */
	ADA_DROP_DRAIN_LAG = 1,          /* waited, but the drain stopped moving */
	ADA_DROP_DETAIL_OVERWRITTEN = 2, /* detail ring overwrote its oldest */
	ADA_DROP_NO_SLOT = 3,            /* more live threads than slots */
	/* Counted by the recorder, never by the producer: events of a slot the
	 * drain quarantined because it broke the ring protocol (ring.h top,
	 * docs/internals.md "The arena is untrusted input"). */
	ADA_DROP_CORRUPT = 4,
	/* Counted by the recorder: events of a thread refused a thread_K/
	 * directory because its process exceeded the thread-directory rate. */
	ADA_DROP_THREAD_LIMIT = 5,
	/* Counted by the recorder (--detail triggered): detail records a
	 * trigger window wanted that its thread's ring had overwritten before
	 * the drain could persist them (docs/internals.md, "What the detail
	 * lane counts"). */
	ADA_DROP_WINDOW_LOST = 6,
	/* Counted by the agent (detail lane, one per call): a call into a
	 * module the key-symbol set in force says nothing about, while that
	 * set came from a spec given live (`ada keysym`, ADA_KEYSYM_F_LIVE):
	 * the agent decided it by the start-time rules, which may disagree
	 * with the set's (docs/internals.md, "A module the set does not
	 * know"): its detail record may be missing, or there when the set
	 * would not have it. */
	ADA_DROP_KEYSYM_UNKNOWN = 7,
	/* Counted by the agent (index lane, two per call: its CALL and its
	 * RETURN): a call a thread made after it judged the recorder gone
	 * (its drain stood still past the timeout and its process is gone or
	 * cannot be known), which the thread no longer traces
	 * (untraced_calls.recorder_gone in agent.json counts the calls). */
	ADA_DROP_RECORDER_GONE = 8,
	/* Counted by the recorder: events of a thread that got no index file
	 * because the recorder had as many files open as its limit allows
	 * (EMFILE, `ulimit -n`; ENFILE, the system's), not a full disk. */
	ADA_DROP_FD_LIMIT = 9,
	/* Counted by the recorder: events a process had published in its
	 * rings that the recording did not read before it ended (a forced
	 * stop's time ran out, or the process was still running when the
	 * recording ended, or the drain could make no progress at the end). */
	ADA_DROP_UNREAD_AT_END = 10,
	ADA_DROP_REASON_COUNT = 11,
};
/* "ring_full", "drain_lag", "detail_overwritten", "no_slot", "corrupt",
 * "thread_limit", "window_lost", "keysym_unknown", "recorder_gone",
 * "fd_limit", "unread_at_end" (manifest keys); "?" out of range. */
const char *ada_drop_reason_name(unsigned reason);
enum ada_slot_state {
	ADA_SLOT_FREE = 0,
	ADA_SLOT_ACTIVE = 1,
	ADA_SLOT_EXITED = 2,
};
/* Arena-wide flags (ada_arena_flags()), set by the producer side. */
#define ADA_ARENA_F_MLOCK_FAILED 0x1u  /* mlock refused: pages may be swapped */
#define ADA_ARENA_F_THP 0x2u           /* tmpfs THP enabled and MADV_HUGEPAGE advised */
#define ADA_ARENA_F_HUGETLB 0x4u       /* the file lives on hugetlbfs */
#define ADA_ARENA_F_EXEC_REOPENED 0x8u /* a process image exec'd and reopened it */
/* The agent registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED: the key-symbol
 * swap may use the expedited barrier (src/keysym/region.c). */
#define ADA_ARENA_F_MEMBARRIER 0x10u
/* The agent could not make its key-symbol area read-only (mprotect). */
#define ADA_ARENA_F_KEYSYM_RW 0x20u
/* (0x40 is ring_pool.h's ADA_ARENA_F_RECYCLED.) The arena's detail rings
 * are smaller than the recording asked: the whole arena did not fit under
 * the shared-memory ceiling (ada_shm_budget_take_arena). */
#define ADA_ARENA_F_DETAIL_REDUCED 0x80u

enum ada_process_state {
	ADA_PROC_RUNNING = 0,
	ADA_PROC_EXITED = 1,  /* exit()/atexit seen; exit_status is valid */
	ADA_PROC_CRASHED = 2, /* fatal signal seen; fatal_signal is valid */
};

struct ada_arena_config {
	uint32_t max_threads;
	uint32_t overflow;         /* enum ada_overflow */
	uint64_t index_events;     /* per-thread index ring capacity, power of two */
	uint64_t detail_bytes;     /* per-thread detail ring bytes, power of two; 0 = none */
	uint32_t timestamp_source; /* enum ada_ts_source */
	/* Fill % from which the drain hurries: no nap between passes, no
	 * trigger window's detail written in the pass (src/recorder/drain.c,
	 * drain_note_room). */
	uint32_t high_watermark_pct;
	/* log2 of the key-symbol area's bytes (ADA_KEYSYM_AREA_MIN_LOG2 ..
	 * _MAX_LOG2), 0: no area (ada_arena_keysym_area()). */
	uint32_t keysym_log2;
	/* Spill slots: spill_threads more slots after the max_threads full
	 * ones, for threads that find those taken, with index rings of
	 * spill_events (a power of two, ADA_RING_MIN_EVENTS ..
	 * min(index_events, ADA_SPILL_MAX_EVENTS)) and detail rings of
	 * ada_spill_detail_bytes(). Their pages are populated, and counted
	 * against the shared-memory ceiling, only when a thread first claims
	 * one, so the memory scales with the threads alive at once. 0 and 0:
	 * none (then a thread that finds every slot taken waits or drops,
	 * ada_producer_slow()). */
	uint32_t spill_threads;
	uint32_t spill_events;
	/* 1: a thread whose detail ring is full waits for the drain to have
	 * decided the records it would overwrite (--detail always with
	 * --detail-overflow wait; "Waiting for the drain" below), bounded by
	 * the drain's progress; 0: it overwrites them (counted). */
	uint32_t detail_wait;
	/* No padding: the control block's copy of this struct is checked byte
	 * for byte when an arena is opened (ada_arena_config_valid); a field
	 * added or removed keeps the 32-bit fields even in number. */
};

/* Defaults used by ada_arena_config_parse() for keys not given. */
#define ADA_ARENA_DEFAULT_MAX_THREADS 64u
#define ADA_ARENA_DEFAULT_INDEX_EVENTS (1u << 16) /* 2 MiB per thread */
#define ADA_ARENA_DEFAULT_DETAIL_BYTES 0u
#define ADA_ARENA_DEFAULT_HW_PCT 50u
/* What `ada record` adds by default: slots for 16 384 threads at once in
 * all, those past max_threads with 16 KiB index rings (512 events) and
 * 8 KiB detail rings (docs/internals.md "Threads and slots"). */
#define ADA_ARENA_DEFAULT_THREAD_LIMIT 16384u
#define ADA_ARENA_DEFAULT_SPILL_EVENTS 512u
#define ADA_SPILL_DETAIL_BYTES 8192u
/* Limits checked by ada_arena_config_valid(). */
#define ADA_ARENA_MAX_THREADS_LIMIT 4096u
#define ADA_ARENA_SLOTS_LIMIT 65536u /* max_threads + spill_threads */
#define ADA_SPILL_MAX_EVENTS (1u << 16)
#define ADA_RING_MIN_EVENTS 64u
#define ADA_RING_MAX_EVENTS (1ull << 28)
#define ADA_DETAIL_MIN_BYTES 4096u
#define ADA_DETAIL_MAX_BYTES (1ull << 30)
/* A detail ring is cut into chunks: ADA_DETAIL_CHUNKS of them, or fewer
 * in rings under 16 KiB, whose chunks stay ADA_DETAIL_CHUNK_MIN bytes (the
 * largest record is a chunk less its header word: 1016 bytes at least).
 * A full ring frees one chunk at a time (ring.h, ada_detail_enter_chunk). */
#define ADA_DETAIL_CHUNKS 16u
#define ADA_DETAIL_CHUNK_MIN 1024u
#define ADA_KEYSYM_AREA_MIN_LOG2 12u
#define ADA_KEYSYM_AREA_MAX_LOG2 28u
/* Longest buffer ada_arena_config_format() writes, NUL included. */
#define ADA_ARENA_CONFIG_TEXT_MAX 256
/* Detail ring bytes of a spill slot: min(detail_bytes, ADA_SPILL_DETAIL_BYTES). */
static inline uint64_t ada_spill_detail_bytes(const struct ada_arena_config *cfg)
{
	return cfg->detail_bytes < ADA_SPILL_DETAIL_BYTES ? cfg->detail_bytes
	                                                  : ADA_SPILL_DETAIL_BYTES;
}

/* Published by the drain, read by `ada status` and the end-of-run summary. */
struct ada_metrics {
	_Atomic uint64_t events_per_sec[ADA_LANE_COUNT];
	_Atomic uint64_t drops_per_sec[ADA_DROP_REASON_COUNT];
	_Atomic uint32_t ring_fill_pct_max; /* fullest ring at the last sample */
	/* The index files' bytes per event so far, in hundredths (drain
	 * writes, `ada status` shows; the one-time 0 before a tick: none). */
	_Atomic uint32_t index_centibytes_per_event;
	_Atomic uint64_t batch_latency_ns_p50; /* encode-to-disk */
	_Atomic uint64_t batch_latency_ns_p99;
	_Atomic uint64_t events_written[ADA_LANE_COUNT];
};

struct ada_slot_info {
	uint32_t state; /* enum ada_slot_state */
	uint32_t tid;
	uint32_t thread_seq; /* N of thread_N in the session */
	uint32_t generation; /* bumps every time the slot is claimed */
	uint64_t head, tail; /* index ring positions (head - tail = backlog) */
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	uint32_t fill_pct;       /* index ring fill, 0..100 */
	uint32_t exec_orphaned;  /* 1: its process image exec'd; free when empty */
	uint64_t detail_span_ns; /* ns of records its detail ring held at the drain's last tick */
};

struct ada_arena; /* process-local handle */

/* ---- arena life (not hook context) ---- */

/* Creates the arena file at path (O_EXCL), sizes (fallocate: a full tmpfs
 * fails here, not with SIGBUS later), maps, pre-faults and mlocks it, with
 * huge pages when the file system gives them (ada_arena_flags() says).
 * mlock refusal is not an error: *mlock_failed tells (may be NULL), and
 * ADA_ARENA_F_MLOCK_FAILED in the file tells the recorder.
 * Returns 0 or -errno (-EINVAL bad config, -EEXIST, -ENOMEM, ...). */
int ada_arena_create(const char *path, const struct ada_arena_config *cfg, struct ada_arena **out,
                     bool *mlock_failed);
/* Maps an existing arena (drain, recover). -EPROTO when the file is not an
 * arena or its layout does not match this build, or path is not a regular
 * file (a link, a device, a FIFO: refused before anything opens it for
 * reading or writing), -EISDIR a directory. */
int ada_arena_open(const char *path, struct ada_arena **out);
void ada_arena_close(struct ada_arena *a); /* NULL is a no-op */
const struct ada_arena_config *ada_arena_config_of(const struct ada_arena *a);
/* Bytes an arena with this config occupies (0 when the config is invalid). */
uint64_t ada_arena_size_for(const struct ada_arena_config *cfg);
/* What a process reserves against the shared-memory ceiling when it
 * creates its arena: the whole size but the spill slots, which are
 * reserved one by one as threads first claim them (0: invalid config). */
uint64_t ada_arena_budget_size_for(const struct ada_arena_config *cfg);
/* Recorder: bytes of spill slots the process reserved so far (the count
 * comes from the arena: clamped to spill_threads), released with the
 * arena's budget size when the arena is removed. */
uint64_t ada_arena_spill_bytes_taken(const struct ada_arena *a);
/* Capacity in events for a peak rate (events/s) and a burst window (ms)
 * (BP-004):  K = next_pow2(ceil(events_per_sec * burst_ms / 1000)),
 * clamped to [ADA_RING_MIN_EVENTS, ADA_RING_MAX_EVENTS]. Example: 10 M
 * events/s over a 50 ms burst = 500 000 -> 524 288 events (16 MiB). */
uint64_t ada_ring_capacity_for_rate(uint64_t events_per_sec, uint64_t burst_ms);

/* ---- config text (ADA_RING_CONFIG) ---- */
/* Fills cfg with the defaults above (overflow wait, timestamps tsc). */
void ada_arena_config_default(struct ada_arena_config *cfg);
/* 0 when cfg is usable, else -EINVAL (powers of two, limits above,
 * 0 < low < high <= 100). */
int ada_arena_config_valid(const struct ada_arena_config *cfg);
/* Writes e.g. "max_threads=64,index_events=65536,detail_bytes=0,
 * overflow=wait,ts=tsc,hw=75,lw=25" (then keysym_bytes, spill_threads,
 * spill_events when not 0, and detail_overflow=wait when detail_wait). Returns the length, or
 * -ENOSPC when cap is too small (ADA_ARENA_CONFIG_TEXT_MAX always suffices). */
int ada_arena_config_format(const struct ada_arena_config *cfg, char *buf, size_t cap);
/* Parses (buf, len) -- not NUL-terminated -- over the defaults: keys
 * max_threads, index_events, detail_bytes (decimal), overflow=wait|drop,
 * ts=tsc|clock, hw, lw (percent), keysym_bytes, spill_threads,
 * spill_events, detail_overflow=overwrite|wait. -EINVAL on an unknown key, a bad
 * number, or a result ada_arena_config_valid() rejects. */
int ada_arena_config_parse(const char *buf, size_t len, struct ada_arena_config *cfg);

/* ---- shared process state (agent writes, recorder reads) ---- */
int32_t ada_arena_pid(const struct ada_arena *a);
/* The creator's start time: the low 32 bits of field 22 of its
 * /proc/PID/stat (clock ticks since boot), 0 when unknown. exec keeps a
 * process's start time; a later process given the same pid has another,
 * so (pid, start time) tells an exec from a reused pid (env.c, the
 * drain). Untrusted on the recorder's side: only ever compared. */
uint32_t ada_arena_start_time(const struct ada_arena *a);
/* What made the arena's timestamps, as its creator wrote it once at
 * creation: the ELF machine of the code that stamps the events (EM_X86_64
 * or EM_AARCH64: open refuses any other), the counter's frequency where
 * the architecture states it (arm64's CNTFRQ_EL0; 0 on x86_64) and one
 * (counter, CLOCK_BOOTTIME ns) pair read side by side at creation. A
 * recorder that cannot read that counter itself (an aarch64 program run
 * by qemu-user, recorded by an x86_64 ada) converts the events with
 * these. Untrusted on the recorder's side: the caller checks them. */
struct ada_arena_origin {
	uint32_t machine;
	uint64_t counter_hz;
	uint64_t anchor_counter, anchor_ns;
};
void ada_arena_origin(const struct ada_arena *a, struct ada_arena_origin *out);
/* This build's ELF machine (the value a producer of this build writes). */
uint32_t ada_arena_native_machine(void);
/* Producer: this process's arena is <pid>.<start ticks>.ring -- it found
 * an earlier process's <pid>.ring (its pid reused before the recorder
 * had finished that process), which the recorder tells and does not read;
 * pid_<pid>/ there is the earlier process's, not ours to write (false for NULL). */
bool ada_arena_pid_reused(const struct ada_arena *a);
/* Field 22 (start time, clock ticks since boot) of the /proc/PID/stat
 * text (buf, n), not NUL-terminated: fields are counted from the last ')'
 * (the command name, field 2, may hold spaces and ')'). 0 when the text
 * has no complete decimal field 22. */
uint64_t ada_stat_start_ticks(const char *buf, size_t n);
void ada_arena_set_exited(struct ada_arena *a, int status);
void ada_arena_set_crashed(struct ada_arena *a, int signo);
/* The crash record: the must-not-drop lane of a fatal signal (BP-001). It
 * lives in the control block, so a dying thread never waits for ring space
 * and nothing can drop it; the drain turns it into the crashing thread's
 * last index event (an EXCEPTION marker, docs/format.md). */
#define ADA_CRASH_NREGS ATF_SIGNAL_NREGS
struct ada_crash_info {
	int32_t signo;
	int32_t code; /* si_code */
	uint32_t tid; /* the faulting thread */
	uint32_t reserved;
	uint64_t addr;   /* si_addr for a fault (si_code > 0), else 0 */
	uint64_t ts_raw; /* the arena's raw timestamp (TSC, or ns with ts=clock) */
	/* The faulting thread's registers from the signal context, in the
	 * order of atf_detail_signal_payload.regs (atf_format.h); all 0 when
	 * the handler had no context. */
	uint64_t regs[ADA_CRASH_NREGS];
};
/* Crash handler (async-signal-safe: atomics only). The first thread to
 * call it wins; returns false when a crash was already recorded. Also sets
 * the process state to CRASHED. */
bool ada_arena_record_crash(struct ada_arena *a, const struct ada_crash_info *ci);
/* Drain / recover: true and *out once a crash record is complete. The
 * values come from the traced process: the caller checks them. */
bool ada_arena_crash_info(const struct ada_arena *a, struct ada_crash_info *out);
/* The other threads at a crash: where each was when the crash handler
 * looked (/proc/self/task/TID/syscall, after the crash record). how says
 * whether they were read (ADA_OTHERS_*); seen counts the other threads
 * found, of which the first ADA_CRASH_OTHERS are kept. */
#define ADA_CRASH_OTHERS 64
enum ada_crash_others_how {
	ADA_OTHERS_NONE = 0,    /* not recorded (no crash, or an older agent) */
	ADA_OTHERS_READ = 1,    /* read from /proc */
	ADA_OTHERS_SECCOMP = 2, /* not read: a seccomp filter may refuse or kill */
	ADA_OTHERS_NO_PROC = 3, /* not read: /proc/self/task cannot be opened */
};
#define ADA_CRASH_RUNNING INT32_MIN /* nr of a thread that was running: no pc */
struct ada_crash_thread {
	uint32_t tid;
	int32_t nr;      /* the system call it was blocked in; -1: blocked outside one */
	uint64_t sp, pc; /* its user stack pointer and pc; 0 when running */
};
/* Crash handler (async-signal-safe: atomics only), by the thread whose
 * ada_arena_record_crash() won. */
void ada_arena_record_crash_others(struct ada_arena *a, uint32_t how,
                                   const struct ada_crash_thread *t, uint32_t n, uint32_t seen);
/* Drain / recover: how (ADA_OTHERS_NONE until recorded), the threads into
 * out (*n of them, at most ADA_CRASH_OTHERS) and how many were seen. The
 * values come from the traced process: the caller checks them. */
uint32_t ada_arena_crash_others(const struct ada_arena *a,
                                struct ada_crash_thread out[ADA_CRASH_OTHERS], uint32_t *n,
                                uint32_t *seen);
uint32_t ada_arena_process_state(const struct ada_arena *a, int *status_or_signal);
/* ADA_ARENA_F_* (mlock refused, huge pages used, exec reopen). */
uint32_t ada_arena_flags(const struct ada_arena *a);
/* Whether this handle's mapping is mlocked (process-local). */
bool ada_arena_mlocked(const struct ada_arena *a);
struct ada_metrics *ada_arena_metrics(struct ada_arena *a);
void ada_arena_drain_heartbeat(struct ada_arena *a);     /* drain: "I am alive" */
uint64_t ada_arena_heartbeat(const struct ada_arena *a); /* beats so far */
/* Drain: true (once) when a producer is waiting for a free slot, so the
 * drain should reclaim EXITED slots now rather than at its next tick. */
bool ada_arena_take_slot_wanted(struct ada_arena *a);
/* Drain: a signature of the EXITED slots among [0, used) (which slots and
 * their generations; 0: none), so that a thread's end is seen at the
 * drain's next pass and its slot freed for the next thread before a
 * fresh one is prepared. A few relaxed loads per slot; a hint only. */
uint64_t ada_arena_exited_sig(const struct ada_arena *a, uint32_t used);
/* Sum over every slot (live ones and those freed before) plus the drops
 * that had no slot to go to (ADA_DROP_NO_SLOT, in the index lane). */
void ada_arena_drop_totals(const struct ada_arena *a,
                           uint64_t out[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT]);

/* ---- the key-symbol area (src/keysym: the blobs and the swap) ----
 * A power-of-two area at the end of the arena, page aligned. The recorder
 * writes key-symbol blobs into it and publishes the current one by
 * storing its offset in *cur (release); the agent maps the area read-only
 * and reads *cur with acquire before each membership test. *cur is
 * ADA_KEYSYM_CUR_LOCAL until the recorder publishes: the agent uses its
 * own set. NULL / 0 when the arena has no area. */
#define ADA_KEYSYM_CUR_LOCAL UINT64_MAX
uint8_t *ada_arena_keysym_area(const struct ada_arena *a, uint64_t *bytes);
_Atomic uint64_t *ada_arena_keysym_cur(const struct ada_arena *a);
/* Producer side: sets ADA_ARENA_F_* bits (relaxed: read by the drain). */
void ada_arena_set_flags(struct ada_arena *a, uint32_t flags);

/* ---- drain side (the single consumer of every ring) ---- */
/* Slots in all: max_threads + spill_threads. */
uint32_t ada_arena_max_threads(const struct ada_arena *a);
/* Slots [0, n) may have been claimed: every full slot and the spill slots up to the highest
 * ever claimed (a count the producers keep in the arena: never less than seen before, never
 * more than the slots). Loops over slots stop here, so an arena with thousands of spill slots
 * costs the drain only the ones threads used. The first call that sees new slots sets their
 * consumer state up (the consumer's thread only). */
uint32_t ada_arena_slots_used(struct ada_arena *a);
/* Preparing slots ahead of the threads that will claim them, so that a
 * thread's start waits for neither page allocation nor mlock (the
 * recorder's drain thread; ring_slot_populate skips whatever is done).
 * ADA_PREP_POPULATE allocates the pages of the slot's region (a FREE
 * full slot: the claimer then finds them there); ADA_PREP_LOCK mlocks
 * them in the caller's mapping -- a page locked in any mapping of the file
 * stays resident, so the recorder's lock holds for the target. Works
 * from byte *done of the region, at most max_bytes per call (bounding the
 * drain's pause); returns 1 once the whole region is done, 0 when more is
 * left (*done advanced), or -errno: -EPERM mlock refused
 * (ADA_ARENA_F_MLOCK_FAILED set in the arena, for the manifest), else
 * the populate's (-ENOMEM: no memory for the pages). */
#define ADA_PREP_POPULATE 1u
/* Free full slots the recorder keeps prepared at most (fewer for a
 * process that starts few threads: drain_prep.c); a claim looks for them
 * up to this many past the highest slot ever claimed. */
#define ADA_SLOT_SPARES 4u
#define ADA_PREP_LOCK 2u
/* Only the index part and the headers (marked ready once populated): the
 * detail ring's pages are its thread's (ada_detail_populate). */
#define ADA_PREP_NO_DETAIL 4u
int ada_arena_slot_prepare(struct ada_arena *a, uint32_t slot, unsigned what, uint64_t *done,
                           uint64_t max_bytes);
/* Locks slot's detail ring from byte *locked up to where its threads
 * populated it (the header's pop, bounded), at most max_bytes a call: 1
 * whole, 0 more may come (*locked advanced), -EPERM (flagged), -EINVAL. */
int ada_arena_slot_lock_detail(struct ada_arena *a, uint32_t slot, uint64_t *locked,
                               uint64_t max_bytes);
/* Whether slot's pages are all there / its index part's are (the target's
 * word: a hint for which slots to prepare, trusted for nothing more). */
bool ada_arena_slot_populated(const struct ada_arena *a, uint32_t slot);
bool ada_arena_slot_index_ready(const struct ada_arena *a, uint32_t slot);
/* Index ring capacity of one slot (a full or a spill slot); 0 bad slot. */
uint64_t ada_arena_slot_events(const struct ada_arena *a, uint32_t slot);
void ada_arena_slot_info(const struct ada_arena *a, uint32_t slot, struct ada_slot_info *out);
/* Contiguous run of published, not yet consumed events from the consumer's
 * tail (up to the wrap point), head checked as ada_slot_read_checked()
 * does. Returns the count (0 when the slot is quarantined, now or
 * before); *events points into the ring. */
size_t ada_index_ring_peek(struct ada_arena *a, uint32_t slot,
                           const struct atf_index_event **events);
/* Copies the (at most n, at most half the ring's) events published last
 * before head into out, oldest first; returns how many. For estimates
 * only (the agent's --overhead-budget sampler): the producer may be
 * writing past head meanwhile, so a copy may hold a newer event in place
 * of an old one. */
size_t ada_index_ring_recent(const struct ada_arena *a, uint32_t slot, uint64_t head,
                             struct atf_index_event *out, size_t n);
/* Consumes n events peeked above (release store of tail); n is clamped to
 * what was published. No-op on a quarantined slot. */
void ada_index_ring_release(struct ada_arena *a, uint32_t slot, size_t n);
/* Drain: the slot's thread is gone and its ring is empty: make it FREE.
 * Its drop counters are folded into the arena totals. Returns 0, -EBUSY
 * when the index ring is not empty or the slot is ACTIVE, -EINVAL bad slot. */
int ada_arena_slot_free(struct ada_arena *a, uint32_t slot);
/* Drain helper: true when the slot is EXITED, its index ring is empty and
 * its thread is gone (exec-orphaned, or tgkill(pid, tid, 0) says ESRCH).
 * Makes one syscall; call it at the drain's slow cadence. */
bool ada_arena_slot_reclaimable(struct ada_arena *a, uint32_t slot);

/* ---- the consumer's trust boundary (consumer.c) ----
 * The target writes the arena: every shared value the drain uses is
 * checked once, in ada_slot_read_checked() and ada_index_ring_peek(),
 * against what the protocol allows (consumer.c says what and why). A slot
 * that breaks the protocol is quarantined: peek returns 0 and
 * read_checked -EPROTO from then on, the slot is never read, freed or
 * counted again, and ada_slot_fault() says what was wrong. */
enum ada_ring_fault {
	ADA_FAULT_NONE = 0,
	ADA_FAULT_STATE,      /* x = state value */
	ADA_FAULT_TRANSITION, /* x = state before, y = state now */
	ADA_FAULT_IDENTITY,   /* x = generation, y = expected, z = tid */
	ADA_FAULT_TID,        /* x = tid */
	ADA_FAULT_HEAD_BACK,  /* x = head, y = head seen before */
	ADA_FAULT_HEAD_AHEAD, /* x = head, y = tail, z = capacity */
	ADA_FAULT_TAIL_MOVED, /* x = shared tail, y = ours */
	ADA_FAULT_EVENT,      /* x = ring position, y = ADA_EVENT_BAD_*, z = value */
	ADA_FAULT_MAPPING,    /* x = file size now, y = size needed */
	ADA_FAULT_SEQ_REUSED, /* x = thread_seq another thread already has */
};
enum {
	ADA_EVENT_BAD_KIND = 1, /* not CALL, RETURN or EXCEPTION */
	ADA_EVENT_BAD_THREAD,   /* thread_id is not the slot's tid */
	ADA_EVENT_BAD_DETAIL,   /* detail_seq set by the producer (only the drain sets it) */
	ADA_EVENT_BAD_DEPTH,    /* call_depth beyond any stack */
	ADA_EVENT_BAD_TIME,     /* timestamp after the drain read the ring */
};
struct ada_slot_fault {
	uint32_t code; /* enum ada_ring_fault */
	uint32_t reserved;
	uint64_t x, y, z;
};
/* Reads one slot's descriptor and index positions, checked. 0: out is valid (FREE, or
 * ACTIVE/EXITED with identity and head within the rules; out->tail is the consumer's own
 * position). -EPROTO: quarantined (now or before). -EINVAL: bad slot. ada_slot_idle(): FREE now
 * and at the last read, no fault, so that read would say FREE again; one load (consumer.c). */
int ada_slot_read_checked(struct ada_arena *a, uint32_t slot, struct ada_slot_info *out);
bool ada_slot_idle(const struct ada_arena *a, uint32_t slot);
/* The drain found something wrong in the slot's data (e.g. an event):
 * quarantine it. Only the first fault is kept. */
void ada_slot_quarantine(struct ada_arena *a, uint32_t slot, enum ada_ring_fault code, uint64_t x,
                         uint64_t y, uint64_t z);
/* True (and *out, may be NULL) when the slot is quarantined. */
bool ada_slot_fault(const struct ada_arena *a, uint32_t slot, struct ada_slot_fault *out);
/* Events published (head last accepted) and not yet released: at most the
 * ring's capacity. */
uint64_t ada_slot_unconsumed(const struct ada_arena *a, uint32_t slot);
/* One sentence fragment ("its ring head went back from 9 to 3"); returns
 * what snprintf returns. */
int ada_slot_fault_text(const struct ada_slot_fault *f, char *buf, size_t cap);
/* Like ada_arena_open(), from an open descriptor (not consumed): the
 * recorder keeps the descriptor to check the file's owner and size. */
int ada_arena_open_fd(int fd, struct ada_arena **out);
/* Where the handle's mapping is (for a SIGBUS guard) and what file size
 * it needs. */
void ada_arena_mapping(const struct ada_arena *a, const void **base, uint64_t *size);

/* Drain: publishes how many ns of detail records the slot's ring holds
 * (read back by ada_arena_slot_info(), for `ada status`). */
void ada_arena_slot_set_detail_span(struct ada_arena *a, uint32_t slot, uint64_t span_ns);

/* ---- watermarks (drain) ---- */
/* Fill of a ring in percent, rounded down: 100 * (head - tail) / capacity. */
static inline uint32_t ada_ring_fill_pct(uint64_t head, uint64_t tail, uint64_t capacity)
{
	uint64_t used = head - tail;
	if (capacity == 0)
		return 0;
	return used >= capacity ? 100u : (uint32_t)(used * 100u / capacity);
}
uint32_t ada_arena_slot_fill_pct(const struct ada_arena *a, uint32_t slot);
/* fill >= high_watermark_pct: the drain should hurry. */
bool ada_arena_above_high_watermark(const struct ada_arena *a, uint32_t slot);

/* ---- detail ring (drain side) ----
 * Records are opaque bytes (DetailEventHeader + payload, by convention).
 * The snapshot writes them into buf as a sequence of
 * struct ada_detail_rec { len; pos8 } + len bytes, padded to 8 bytes;
 * iterate with ada_detail_rec_next(). */
struct ada_detail_rec {
	uint32_t len;  /* record bytes after this header */
	uint32_t pos8; /* its ring position less the snapshot's begin, in 8-byte words */
};
#define ADA_DETAIL_REC_ALIGN 8u
/* The slot's detail ring head now (0 without a ring or a bad slot): for a
 * reader that only wants to know whether records were added since it last
 * looked (the post-roll's copies, src/recorder/flight.c). */
uint64_t ada_detail_ring_head(struct ada_arena *a, uint32_t slot);
/* Largest record the ring accepts: a chunk (ada_detail_chunk_shift) minus the header. */
uint32_t ada_detail_max_record(const struct ada_arena *a);
/* Drain: every record of the slot's detail ring that links below `link`
 * (an index ring position) is decided, persisted or not (UINT64_MAX: this
 * drain decides no more). What a producer waiting for room reads
 * (ring.h, "Waiting for the drain"); stored only when it changes. */
void ada_detail_ring_set_decided(struct ada_arena *a, uint32_t slot, uint64_t link);
/* Drain: how many times the slot's thread waited for decided, and the ns
 * it spent waiting (0 and 0 without a detail ring). Values from the
 * target's memory: shown, never used to size anything. */
void ada_detail_ring_waits(struct ada_arena *a, uint32_t slot, uint64_t *waits, uint64_t *ns);
/* Drain: how many times the slot's thread waited for index ring space
 * (--overflow wait: the drain ran behind) and the ns it spent waiting.
 * Values from the target's memory: shown, never used to size anything. */
void ada_index_ring_waits(struct ada_arena *a, uint32_t slot, uint64_t *waits, uint64_t *ns);
struct ada_detail_snapshot {
	uint64_t begin;      /* ring position of the first record returned */
	uint64_t end;        /* position after the last one (pass as `from` next time) */
	uint64_t records;    /* records written into buf */
	uint64_t bytes;      /* bytes written into buf */
	uint64_t lost_bytes; /* ring bytes in [from, begin) overwritten before
	                        they could be copied (their records are gone) */
	bool cut;            /* ada_detail_ring_snapshot_part stopped at its limit
	                        before head: records follow end */
};
/* Copies the records in [max(from, oldest), head) of the slot's detail ring
 * into buf. A record overwritten during the copy is detected (seqlock
 * re-check of oldest) and left out, never returned torn. Pass from = 0 the
 * first time, then snap->end; ada_arena_slot_free() restarts the ring at 0,
 * so a new generation of the slot starts again from 0. cap must be >=
 * detail_bytes and buf 8-byte aligned.
 * Returns 0, -EINVAL (bad slot, no detail ring, cap too small, buf misaligned). */
int ada_detail_ring_snapshot(struct ada_arena *a, uint32_t slot, uint64_t from, void *buf,
                             size_t cap, struct ada_detail_snapshot *snap);
/* The same, copying at most `limit` bytes of the ring from where it
 * starts: snap->end is then the position after the last whole record
 * copied (the next call's `from`); cap >= the smaller of limit and
 * detail_bytes. A drain may copy a little at a time. */
int ada_detail_ring_snapshot_part(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t limit,
                                  void *buf, size_t cap, struct ada_detail_snapshot *snap);
/* The slot's oldest and newest records, read without copying the ring:
 * the oldest record's bytes and, after a walk of the header words of the
 * chunk holding the newest (in place, bounded), the newest record's bytes
 * (each at most a chunk), with the same seqlock re-check as the
 * snapshot. Into buf (8-byte aligned, cap >= 2 chunks: detail_bytes
 * suffices) as snapshot-format records at first_off / last_off (read them
 * with ada_detail_rec_next(buf + off, len, ...)). found false: the ring is
 * empty. Returns 0, -EINVAL (as the snapshot), or -EAGAIN when the producer
 * overtook the read or the ring's words do not walk plainly: then take a
 * full ada_detail_ring_snapshot() instead. */
struct ada_detail_ends {
	uint64_t first_off, first_len, last_off, last_len;
	bool found;
};
int ada_detail_ring_ends(struct ada_arena *a, uint32_t slot, void *buf, size_t cap,
                         struct ada_detail_ends *e);
/* Iterates a snapshot buffer: returns the next record (and its length) at
 * *off, advancing *off, or NULL at the end / on a malformed buffer. */
const void *ada_detail_rec_next(const void *buf, size_t len, size_t *off, uint32_t *rec_len);
/* The ring position of a record ada_detail_rec_next() returned from snap's
 * buffer: a later snapshot from it starts at that record (a drain that
 * persists part of a snapshot goes on from there). */
uint64_t ada_detail_rec_ring_pos(const struct ada_detail_snapshot *snap, const void *rec);

/* ---- producer side (the agent, tests, bench) ---- */

struct ada_producer {
	struct atf_index_event *events; /* NULL until this thread owns a slot */
	uint64_t mask;
	uint64_t head;  /* private copy of the published head */
	uint64_t limit; /* fast path may write while head < limit (0: always slow) */
	_Atomic uint64_t *head_pub;
	/* The event's 8 bytes thread_id | event_kind << 32 for a CALL and for
	 * a RETURN, so the fast path writes them in one store (set with tid). */
	uint64_t tid_call, tid_return;
	uint32_t tid;
	uint32_t slot;
	uint32_t ts_clock; /* 1 when the arena's timestamps come from clock_gettime */
	uint32_t state;    /* producer-private: unclaimed / owning / disabled */
	/* Cold fields: only the slow path and the detail lane touch these. */
	uint64_t room; /* head may reach this without rereading tail */
	/* The index ring's pages exist up to event pop_end (UINT64_MAX: all
	 * of them); pop_left events are still to populate, a chunk at a time
	 * as head reaches pop_end (ada_producer_slow). */
	uint64_t pop_end, pop_left;
	struct ada_arena *arena; /* the arena the slot belongs to */
	uint64_t lag_beat;       /* heartbeat seen when the drain was declared lagging */
	/* 1: the recorder is gone (or unknown): drop at once while the
	 * heartbeat stays lag_beat, and the hook handlers stop tracing this
	 * thread meanwhile (src/hook/handlers.c) */
	uint32_t lagging;
	uint32_t retry; /* drops left before the next claim (no slot) or populate (no memory) */
	/* 1: the recorder is stopped by a signal: every event drops at once
	 * (counted, drain_lag) while the heartbeat stays lag_beat; the thread
	 * stays traced, so tracing goes on exactly when the drain does */
	uint32_t stalled;
	/* Detail ring of the owned slot (all 0 / NULL without one): set when
	 * the slot is claimed; see ada_detail_reserve(). */
	_Atomic uint64_t *dwords;  /* the ring's bytes as 8-byte words */
	_Atomic uint64_t *dhead;   /* published end of committed records */
	_Atomic uint64_t *doldest; /* start of the oldest intact record */
	_Atomic uint64_t *dlost;   /* the slot's ADA_DROP_DETAIL_OVERWRITTEN counter */
	uint64_t dbytes;           /* ring size (power of two) */
	uint32_t dmax;             /* largest record length; 0: no detail ring */
	uint32_t dwait;            /* the arena's detail_wait (ada_detail_would_wait) */
	uint64_t dpos, dold; /* private copies of *dhead and *doldest (we are their only writer) */
	/* The fast reserve may end a record at or before dstop: the end of
	 * the chunk records go to now (dcend), which was freed when the slow
	 * reserve entered it (ada_detail_enter_chunk), or where the ring's
	 * pages are populated (dpop), whichever comes first. Equal to dpos
	 * (the first record after a claim) sends the next record to the slow
	 * path. */
	uint64_t dstop;
	uint32_t dshift; /* log2 of the ring's chunk bytes (ada_detail_chunk_shift) */
	/* Records committed since the slot was claimed (mod 2^32), and its
	 * value when each of the last ADA_DETAIL_CHUNKS chunks was entered,
	 * by chunk number mod ADA_DETAIL_CHUNKS: a chunk's record count is
	 * the difference of two marks, so freeing one reads no ring memory. */
	uint32_t dcount;
	uint32_t dmark[ADA_DETAIL_CHUNKS];
	/* dwait only. The drain's decided link (ada_detail_hdr.decided) and,
	 * by chunk number mod ADA_DETAIL_CHUNKS, the index head when each of
	 * the last chunks was entered: every record of chunk k links below
	 * dlink[k + 1], so chunk k may be overwritten once decided reaches it. */
	_Atomic uint64_t *ddecided;
	_Atomic uint64_t *dwaits; /* the slot's wait_stat: waits, ns waited */
	uint64_t dlink[ADA_DETAIL_CHUNKS];
	/* The decided value at which the last wait gave up (the drain made no
	 * progress for the drain timeout): no new wait until it moves, so a
	 * stuck drain costs a thread one timeout, not one per chunk. */
	uint64_t dstall;
	/* Slow path only (the fast path's fields keep their lines). dcend: the
	 * chunk's end; dpop: in the first lap, the pages exist in this process's
	 * mapping below it (UINT64_MAX: all; "The first lap's pages"). */
	uint64_t dcend;
	uint64_t dpop;
	uint32_t dpop_retry; /* records dropped before the next try (no memory) */
	/* A wait the ring had no room to mark when it ended (it ended in a
	 * drop, or a detail wait found the index ring full): its raw begin
	 * and end, written before the next event that finds room (end 0:
	 * none). While one is pending, limit stays 0 so that event takes the
	 * slow path. Later such waits before then extend it. */
	uint64_t wpend_begin, wpend_end;
};

extern __thread struct ada_producer ada_producer_tls __attribute__((tls_model("initial-exec")));

/* Process-wide: the arena this process produces into (NULL: not recording). */
void ada_producer_set_arena(struct ada_arena *a);
struct ada_arena *ada_producer_arena(void);
/* Hook context, cold: counts one detail-lane drop of reason `why` for
 * the calling thread (its slot's counter; before it holds one, the
 * arena's total, atomic add). Nothing when not recording. */
void ada_producer_count_detail(struct ada_producer *p, enum ada_drop_reason why);
/* Hook context, cold: a call the calling thread leaves untraced because
 * it judged the recorder gone: its CALL and RETURN counted as index-lane
 * drops, ADA_DROP_RECORDER_GONE (where ada_producer_count_detail counts).
 * Nothing when not recording. */
void ada_producer_count_gone(struct ada_producer *p);
/* Not hook context; every other thread of the process stopped (ada
 * attach's detach): the process stops producing (ada_producer_arena() is
 * NULL from here) and gives the recording's shared memory back at once:
 * the arena's range and its budget page become private anonymous memory
 * at the same addresses, holding no page until written. A thread stopped
 * in the middle of an event, or a frame open at the detach whose return
 * is still recorded, writes there harmlessly instead of into a hole. The
 * handle is kept (threads may hold it) until ada_producer_reap_retired().
 * 0 or -errno (the arena stays as it was mapped, and is retired all the
 * same). */
int ada_producer_retire_arena(void);
/* Not hook context: unmaps and frees what ada_producer_retire_arena()
 * kept; the count. Only when no thread can hold an address in those
 * ranges: every other thread stopped, its producer state reset, and none
 * inside a hook (ada attach's next attach checks it). */
size_t ada_producer_reap_retired(void);
/* After fork, in the child: forget the parent's slot in this thread. */
void ada_producer_reset_thread(void);
/* Sets up this process's arena from the environment: ADA_ARENA_DIR (required;
 * -ENOENT when unset: not recording) and ADA_RING_CONFIG (optional; defaults
 * otherwise). Creates <dir>/<pid>.ring.tmp.<random>, initialises it and renames it to
 * <dir>/<pid>.ring; when <pid>.ring exists already (this process called
 * exec) opens it and marks the ACTIVE slots of the old image EXITED
 * (exec-orphaned). In a forked child it drops the parent's arena first.
 * mlock refusal shows in ada_arena_flags(). Returns 0 or -errno
 * (-EINVAL bad ADA_RING_CONFIG, -EPROTO foreign <pid>.ring, ...). */
int ada_producer_init_from_env(void);
/* The same with the values given (NULL: unset): the agent passes what it
 * read at start-up (the program may have changed its environment since). */
int ada_producer_init(const char *arena_dir, const char *ring_config);
/* After a failed ada_producer_init(): true when the recording refused the
 * process (its shared-memory ceiling, -EDQUOT from the reservation, or it
 * had ended, -ESRCH), which the recorder counts and tells once for all;
 * false for any other failure, a file system's own -EDQUOT (a quota on
 * the arena directory) included, which is counted in the budget page
 * (ada_shm_budget_failed) and is the caller's to say. */
bool ada_producer_refused(void);
/* Atfork prepare: a clock reading that lets the child's init skip /proc. */
void ada_producer_fork_prepare(void);

/* ---- the recording's shared-memory ceiling: ring_shm.h ---- */
#include "ring_shm.h"
/* How long a full ring waits for a drain whose heartbeat stands still
 * before it asks whether the recorder is there (default 2000 ms): when it
 * runs (a slow drain) the wait goes on; when it is gone or stopped by a
 * signal, or cannot be known, the event drops with ADA_DROP_DRAIN_LAG. */
void ada_producer_set_drain_timeout_ms(uint32_t ms);
/* Whether a thread of this process found the drain gone (its heartbeat
 * stood still for the timeout) and it has not beaten since; *dropped gets
 * the process's index events dropped for that so far (ADA_DROP_DRAIN_LAG).
 * Not hook context (reads the arena's counters over every slot). */
bool ada_producer_drain_gone(uint64_t *dropped);
/* Hook context: whether the drain the calling thread found gone
 * (ada_producer.lagging) has beaten since (a recorder that was only
 * stopped). Two loads. */
bool ada_producer_drain_back(void);
/* Detail lane of the calling thread (claims a slot on first use). Copies
 * (rec, len) into the detail ring, overwriting the oldest records when full
 * (each counted as ADA_DROP_DETAIL_OVERWRITTEN). Returns false when not
 * recording, the arena has no detail ring, no slot is free, or
 * len > ada_detail_max_record() (counted as ADA_DROP_RING_FULL in the
 * detail lane). No syscall, lock or libc call once the thread owns a
 * slot; like ada_producer_slow() it is compiled without
 * -mgeneral-regs-only, so hook code saves vector state around it. */
bool ada_detail_push(const void *rec, uint32_t len);
/* Hook context, cold, with the program's vector state saved: waits (spin,
 * then sched_yield) until ada_detail_would_wait() turns false, or the
 * drain's decided has not moved for the drain timeout (then p->dstall:
 * the reserve overwrites, the drain counts the loss). Returns true when
 * the room came. */
bool ada_detail_wait_room(struct ada_producer *p, uint32_t len);

/* ---- detail ring, producer side, written in place (hook context) ----
 * A record in the ring is one header word (its length in the low 32 bits)
 * and len bytes padded to 8. The ring is cut into chunks of C bytes
 * (ada_detail_chunk_shift) and a record never crosses a chunk's end:
 * when it does not fit in the rest of the chunk, a pad word
 * (ADA_DETAIL_PAD_BIT | bytes to the chunk's end) fills the rest and the
 * record starts the next chunk. The owning thread enters each chunk
 * whole: when the ring is full, that frees the chunk one lap behind by
 * moving `oldest` one chunk on (ADA_DROP_DETAIL_OVERWRITTEN counts the
 * records it held, from two marks of the thread's record count: nothing
 * of the old chunk is read). Then records go in with one bounds check
 * each (ada_detail_reserve_fast, which also asks for the cache lines
 * 2 KiB ahead: ada_detail_prefetch), their words stored with
 * ada_detail_put() and published with ada_detail_commit(). Everything is
 * inline and integer-only, so the agent's handlers (compiled with
 * -mgeneral-regs-only) write a record with no call and no vector register;
 * ada_detail_push() is the same code for a record already in memory.
 * Invariants (producer side): oldest, dcend are chunk starts, oldest <=
 * dpos <= dcend <= oldest + d, dstop = min(dcend, dpop); the records of
 * [oldest, dpos) are whole. */
#define ADA_DETAIL_PAD_BIT (1ull << 63)
#define ADA_DETAIL_HDR_BYTES 8u

/* log2 of the chunk bytes of a ring of d bytes (a power of two >=
 * ADA_DETAIL_MIN_BYTES): d / ADA_DETAIL_CHUNKS, at least
 * ADA_DETAIL_CHUNK_MIN. */
static inline uint32_t ada_detail_chunk_shift(uint64_t d)
{
	uint64_t c = d / ADA_DETAIL_CHUNKS;
	if (c < ADA_DETAIL_CHUNK_MIN)
		c = ADA_DETAIL_CHUNK_MIN;
	return (uint32_t)__builtin_ctzll(c);
}

/* Bytes the record or pad whose header word is w occupies; 0 when w is not
 * a plausible header (then the caller stops walking). */
static inline uint64_t ada_detail_step(uint64_t w, uint64_t d)
{
	uint64_t n = w & 0xffffffffull;
	uint64_t step = (w & ADA_DETAIL_PAD_BIT) ? n : ADA_DETAIL_HDR_BYTES + ((n + 7) & ~7ull);
	if ((w & ~(ADA_DETAIL_PAD_BIT | 0xffffffffull)) != 0 || step == 0 || step > d ||
	    (step & 7) != 0)
		return 0;
	return step;
}

/* Enters the chunk starting at s (== p->dcend). In a full ring (s is a
 * whole ring ahead of oldest: the steady state of --detail triggered) it
 * holds the chunk one lap behind, the oldest: oldest moves past it, and
 * its records are the count between its mark and the next chunk's (both
 * entered since the mark of s's number was last set: the ring has at
 * least 4 chunks, at most ADA_DETAIL_CHUNKS). Returns the records freed. */
static inline uint32_t ada_detail_enter_chunk(struct ada_producer *p, uint64_t s)
{
	uint64_t k = s >> p->dshift;
	uint32_t lost = 0;
	if (s - p->dold >= p->dbytes) {
		uint64_t k0 = p->dold >> p->dshift; /* == k - chunks in the ring */
		lost = p->dmark[(k0 + 1) % ADA_DETAIL_CHUNKS] - p->dmark[k0 % ADA_DETAIL_CHUNKS];
		p->dold += (uint64_t)1 << p->dshift;
		/* Ordered before the stores that overwrite the chunk by their
		 * release: a drain that reads one of them sees this oldest (the
		 * seqlock re-check in ada_detail_ring_snapshot()). */
		atomic_store_explicit(p->doldest, p->dold, memory_order_relaxed);
	}
	p->dmark[k % ADA_DETAIL_CHUNKS] = p->dcount;
	p->dlink[k % ADA_DETAIL_CHUNKS] = p->head;
	p->dcend = s + ((uint64_t)1 << p->dshift);
	p->dstop = p->dcend < p->dpop ? p->dcend : p->dpop;
	return lost;
}

/* ---- Waiting for the drain (--detail always, detail_wait) ----
 * A flight recorder overwrites its oldest records; with --detail always
 * every record is wanted, so a thread about to free a chunk whose
 * records the drain has not decided yet waits for it, as the index lane
 * waits for ring space (--overflow wait). Only here, where a reserve
 * enters a new chunk of a full ring (once per chunk, never in the
 * trampolines' machine code, which sends every chunk change to C): the
 * hook calls ada_detail_would_wait() before ada_detail_reserve() and,
 * when true, ada_detail_wait_room() with the program's vector registers
 * saved (it calls sched_yield and clock_gettime). The records of the chunk
 * that entering the next one frees (the oldest, k0) link below dlink[k0
 * + 1]; the drain publishes `decided` after each persist: the records
 * linking below it are decided. */
static inline bool ada_detail_chunk_decided(const struct ada_producer *p)
{
	uint64_t k0 = p->dold >> p->dshift;
	/* Acquire: pairs with the drain's release store of decided after it
	 * copied the chunk (wal_detail_persist), so its reads come before
	 * the stores that overwrite the chunk. */
	uint64_t dec = atomic_load_explicit(p->ddecided, memory_order_acquire);
	return dec >= p->dlink[(k0 + 1) % ADA_DETAIL_CHUNKS] || dec == p->dstall;
}

/* True when reserving len bytes now would overwrite records the drain has
 * not decided (and this thread should wait, ada_detail_wait_room()). */
static inline bool ada_detail_would_wait(const struct ada_producer *p, uint32_t len)
{
	uint64_t need = ADA_DETAIL_HDR_BYTES + (((uint64_t)len + 7) & ~7ull);
	if (!p->dwait || p->dpos + need <= p->dcend || p->dcend - p->dold < p->dbytes)
		return false; /* off, room in this chunk, or the ring not full yet */
	return !ada_detail_chunk_decided(p);
}

/* How far ahead of a record being written its writer asks for the ring's
 * cache lines (ada_detail_prefetch). The ring is written once a lap and,
 * in --detail triggered, read only when a window is persisted: in a ring
 * larger than the core's L2, every line of it is a miss the record's
 * stores would otherwise wait for. 2 KiB is about ten records (some
 * hundred nanoseconds) ahead, far enough to hide a miss to memory, near
 * enough that the lines are still in L1 when the stores come. */
#define ADA_DETAIL_PREFETCH_AHEAD 2048u
#define ADA_DETAIL_LINE_BYTES 64u

/* Asks for, to be written, the cache lines of the `bytes` bytes
 * ADA_DETAIL_PREFETCH_AHEAD past `at` (a record's header word): one
 * instruction a line, ceil(bytes / 64) of them (at most
 * ADA_DETAIL_PREFETCH_AHEAD / 64), unrolled when bytes is a constant.
 * Consecutive records ask for consecutive spans, so every line of the
 * ring is asked for once before the record that writes it. A hint, not
 * an access: it orders nothing (no partner) and never faults, so the
 * address is not wrapped at the ring's end -- the first 2 KiB of each lap
 * are not prefetched, and up to 2 KiB plus a record past the ring's end
 * (whatever the arena holds there, or nothing mapped) are asked for
 * once a lap. prefetchw where the compiler targets it (-mprfchw),
 * else prefetcht0 (x86_64: a line no other core holds arrives exclusive,
 * so the store still needs no second request); PRFM PSTL1KEEP on arm64. */
static inline void ada_detail_prefetch(const _Atomic uint64_t *at, uint64_t bytes)
{
	uintptr_t ahead = (uintptr_t)at + ADA_DETAIL_PREFETCH_AHEAD;
	for (uint64_t q = 0; q < bytes && q < ADA_DETAIL_PREFETCH_AHEAD; q += ADA_DETAIL_LINE_BYTES)
		__builtin_prefetch((const void *)(ahead + q), 1, 3);
}

/* ---- The first lap's pages ----
 * No claim populates the detail ring: its thread does, a piece at a time
 * as its records reach it, once per slot and process (ada_detail_hdr.pop).
 * dstop stops the fast reserve at dpop (no test of its own); the slow
 * path asks ada_detail_would_populate() and calls ada_detail_populate(),
 * a madvise (hook handlers: vector state saved, as for the wait). */
static inline bool ada_detail_would_populate(const struct ada_producer *p, uint32_t len)
{
	uint64_t need = ADA_DETAIL_HDR_BYTES + (((uint64_t)len + 7) & ~7ull);
	/* where the record will start: here, or the next chunk past a pad */
	uint64_t at = p->dpos + need > p->dcend ? p->dcend : p->dpos;
	return p->dpop != UINT64_MAX && at + need > p->dpop;
}

/* Populates past dpop for a record of len bytes: 16 KiB, then as much as
 * written, at most 512 KiB. False: no pages (/dev/shm full); the record is
 * to be dropped, counted here (detail no_slot), as are the next 1024. */
__attribute__((cold)) bool ada_detail_populate(struct ada_producer *p, uint32_t len);

/* The cold half of ada_detail_reserve(): the record does not fit in the
 * rest of the chunk (a pad, then the next chunk), or passes dpop (written
 * all the same, its pages faulted in), or no ring / too long (NULL). */
__attribute__((noinline, cold)) static _Atomic uint64_t *
ada_detail_reserve_slow(struct ada_producer *p, uint32_t len, uint64_t *end)
{
	if (p->dmax == 0 || len > p->dmax)
		return NULL;
	uint64_t d = p->dbytes, pos = p->dpos, lost = 0;
	uint64_t need = ADA_DETAIL_HDR_BYTES + (((uint64_t)len + 7) & ~7ull);
	if (pos + need > p->dcend) {
		if (pos != p->dcend) { /* release: as the record's words (ada_detail_put) */
			_Atomic uint64_t *pad = &p->dwords[(pos & (d - 1)) / 8];
			atomic_store_explicit(pad, ADA_DETAIL_PAD_BIT | (p->dcend - pos),
			                      memory_order_release);
			/* The lines a record there would have asked for. */
			ada_detail_prefetch(pad, p->dcend - pos);
		}
		pos = p->dcend;
		/* The pad is ours from now on, whether or not a record is
		 * committed after it (the next reserve starts past it). */
		p->dpos = pos;
		lost = ada_detail_enter_chunk(p, pos);
	}
	_Atomic uint64_t *w = &p->dwords[(pos & (d - 1)) / 8];
	ada_detail_prefetch(w, need);
	/* Release: pairs with the acquire loads of the drain's copy. */
	atomic_store_explicit(w, len, memory_order_release);
	*end = pos + need;
	if (lost != 0) /* single writer while the slot is owned */
		atomic_store_explicit(p->dlost,
		                      atomic_load_explicit(p->dlost, memory_order_relaxed) + lost,
		                      memory_order_relaxed);
	return w + 1;
}

/* One payload word of a reserved record. Release (a plain mov on x86_64):
 * a drain whose acquire load reads it also sees the oldest stored before
 * (pairs with the acquire loads in ada_detail_ring_snapshot()'s copy). */
static inline void ada_detail_put(_Atomic uint64_t *dst, uint64_t i, uint64_t v)
{
	atomic_store_explicit(&dst[i], v, memory_order_release);
}

/* The calling thread's reserve: NULL when it has no detail ring or len is
 * too long for it (ada_detail_reserve_fast: NULL whenever the slow path is
 * needed, for callers that keep it out of line). The common case (room
 * left in the current chunk, which was freed whole when entered) is one
 * bounds check against dstop and one store. len <= dmax is not tested
 * there: the smallest chunk takes records up to ADA_DETAIL_CHUNK_MIN - 8
 * bytes, and the callers whose len is not a constant that small
 * (ada_detail_push) test it first. */
static inline _Atomic uint64_t *ada_detail_reserve_fast(struct ada_producer *p, uint32_t len,
                                                        uint64_t *end)
{
	uint64_t pos = p->dpos;
	uint64_t e = pos + ADA_DETAIL_HDR_BYTES + (((uint64_t)len + 7) & ~7ull);
	if (ada_unlikely(e > p->dstop))
		return NULL; /* a pad and the next chunk, or no ring: the slow path */
	_Atomic uint64_t *w = &p->dwords[(pos & (p->dbytes - 1)) / 8];
	ada_detail_prefetch(w, e - pos);
	/* Release: pairs with the acquire loads of the drain's copy. */
	atomic_store_explicit(w, len, memory_order_release);
	*end = e;
	return w + 1;
}

static inline _Atomic uint64_t *ada_detail_reserve(struct ada_producer *p, uint32_t len,
                                                   uint64_t *end)
{
	_Atomic uint64_t *w = ada_detail_reserve_fast(p, len, end);
	return ada_likely(w != NULL) ? w : ada_detail_reserve_slow(p, len, end);
}

/* Publishes the reserved record (and counts it for the chunk marks);
 * pairs with the acquire load of head in ada_detail_ring_snapshot(). */
static inline void ada_detail_commit(struct ada_producer *p, uint64_t end)
{
	p->dpos = end;
	p->dcount++;
	atomic_store_explicit(p->dhead, end, memory_order_release);
}

/* Layout of the records the agent writes into the detail ring (8-byte
 * words; the drain turns them into ATF detail events, src/recorder):
 *   [0] raw timestamp of the linked index event (TSC, or ns in ADA_TS_CLOCK
 *       arenas) -- the same value, so both files carry one time
 *   [1] index ring position of the linked index event (the producer's head
 *       when it was written): the drain maps it to the file's index_seq
 *   [2] function_id
 *   [3] ATF detail event type (bits 0-15), flags (16-31), stack bytes
 *       captured (32-47)
 *   CALL:   [4..9] rdi rsi rdx rcx r8 r9, [10] rax, [11] return address,
 *           [12] rbp, [13] rsp at entry, [14..] the stack snapshot
 *   RETURN: [4] rax, [5] rdx, [6] return address, [7] rbp, [8] rsp after
 *           the return */
enum {
	ADA_DREC_TS = 0,
	ADA_DREC_LINK = 1,
	ADA_DREC_FN = 2,
	ADA_DREC_META = 3,
	ADA_DREC_REGS = 4,
	ADA_DREC_CALL_WORDS = 14,  /* words before the stack snapshot */
	ADA_DREC_RETURN_WORDS = 9, /* a return record, whole */
	/* --detail-fp: type ATF_DETAIL_FUNCTION_CALL_FP / RETURN_FP, the same
	 * words and then xmm0..xmm7 ([14..21], before the stack snapshot) /
	 * xmm0, xmm1 ([9..10]), the low 64 bits of each. */
	ADA_DREC_CALL_FP_WORDS = 22,
	ADA_DREC_RETURN_FP_WORDS = 11,
};
#define ADA_DREC_F_STACK_CLIPPED 0x1u /* the stack ended before the bytes asked */
#define ADA_DREC_F_OFF_STACK 0x2u     /* rsp outside the thread's known stack: none taken */
static inline uint64_t ada_drec_meta(uint32_t type, uint32_t flags, uint32_t stack_bytes)
{
	return (uint64_t)(type & 0xffff) | (uint64_t)(flags & 0xffff) << 16 |
	       (uint64_t)(stack_bytes & 0xffff) << 32;
}

/* Cold path: claims a slot, waits or drops when full. Returns true when
 * there is room for one event at p->head (and, except in ADA_TS_CLOCK
 * arenas, p->head < p->limit). With no arena or no
 * free slot it keeps limit == head so every event comes back here cheaply:
 * no arena costs one load; no slot counts ADA_DROP_NO_SLOT and retries the
 * claim every 1024 drops. */
__attribute__((cold)) bool ada_producer_slow(struct ada_producer *p);
uint64_t ada_producer_clock_ns(void); /* clock_gettime fallback */

/* The arena's raw timestamp: cycle counter, or CLOCK_BOOTTIME ns. */
static inline uint64_t ada_timestamp_raw(const struct ada_producer *p)
{
	if (ada_unlikely(p->ts_clock))
		return ada_producer_clock_ns();
	return ada_tsc();
}

/* Stores the cycle counter into e->timestamp_ns (at offset 0). On x86_64
 * as two 32-bit stores of edx:eax (ada_tsc_put, clock.h). */
static inline void ada_event_put_tsc(struct atf_index_event *e)
{
#if defined(__x86_64__)
	ada_tsc_put(e); /* timestamp_ns is at 0 */
#else
	e->timestamp_ns = ada_tsc();
#endif
}

/* Cold path of ada_emit(): claims a slot, waits or drops when full, and
 * writes the event itself (with clock_gettime time in ADA_TS_CLOCK
 * arenas, whose threads keep limit == 0 so that every event comes here and
 * the fast path needs no clock test). */
__attribute__((cold)) void ada_producer_emit_slow(struct ada_producer *p, uint64_t function_id,
                                                  uint32_t kind, uint32_t depth);

/* thread_id and event_kind in one 8-byte store: precomputed for the two
 * kinds the hot path emits (kind is a constant there once inlined). */
_Static_assert(offsetof(struct atf_index_event, event_kind) ==
                   offsetof(struct atf_index_event, thread_id) + 4,
               "event_kind follows thread_id");
static inline void ada_event_put_tid_kind(const struct ada_producer *p, struct atf_index_event *e,
                                          uint32_t kind)
{
	uint64_t w = kind == ATF_EVENT_CALL     ? p->tid_call
	             : kind == ATF_EVENT_RETURN ? p->tid_return
	                                        : p->tid | (uint64_t)kind << 32;
	__builtin_memcpy(&e->thread_id, &w, sizeof(w)); /* one mov; no libc in hook context */
}

/* Hook context: no syscall, no libc, no allocation on the common path.
 * About 20 instructions + rdtsc: TLS loads, one compare, six stores.
 * p is this thread's ada_producer_tls: the agent's handlers name it
 * through their own TLS block (handlers.c, handlers_tls), which saves
 * them one GOT load per event. */
static inline void ada_emit_to(struct ada_producer *p, uint64_t function_id, uint32_t kind,
                               uint32_t depth)
{
	uint64_t head = p->head;
	if (ada_unlikely(head >= p->limit)) {
		ada_producer_emit_slow(p, function_id, kind, depth);
		return;
	}
	struct atf_index_event *e = &p->events[head & p->mask];
	ada_event_put_tsc(e);
	e->function_id = function_id;
	ada_event_put_tid_kind(p, e, kind);
	e->call_depth = depth;
	e->detail_seq = ATF_NO_DETAIL;
	p->head = head + 1;
	/* Orders the event stores above before the new head; pairs with the
	 * acquire load of head in ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, head + 1, memory_order_release);
}

static inline void ada_emit(uint64_t function_id, uint32_t kind, uint32_t depth)
{
	ada_emit_to(&ada_producer_tls, function_id, kind, depth);
}

/* ada_emit()'s fast path for a caller that has tested head < limit (the
 * detail lane's handlers): also gives the event's raw timestamp, which the
 * detail record carries too (one 64-bit store of it here, so the record
 * never reloads it through the event's two 32-bit halves). */
static inline uint64_t ada_emit_fast_ts(struct ada_producer *p, uint64_t function_id, uint32_t kind,
                                        uint32_t depth)
{
	uint64_t head = p->head;
	struct atf_index_event *e = &p->events[head & p->mask];
	uint64_t ts = ada_tsc();
	e->timestamp_ns = ts;
	e->function_id = function_id;
	ada_event_put_tid_kind(p, e, kind);
	e->call_depth = depth;
	e->detail_seq = ATF_NO_DETAIL;
	p->head = head + 1;
	/* As in ada_emit(): pairs with the acquire load of head in
	 * ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, head + 1, memory_order_release);
	return ts;
}

/* Convenience for programs that link the producer API directly and keep
 * no shadow stack of their own: depth is tracked per thread here. */
extern __thread uint32_t ada_producer_depth __attribute__((tls_model("initial-exec")));
static inline void ada_emit_call(uint64_t function_id)
{
	ada_emit(function_id, ATF_EVENT_CALL, ++ada_producer_depth);
}
static inline void ada_emit_return(uint64_t function_id)
{
	ada_emit(function_id, ATF_EVENT_RETURN, ada_producer_depth--);
}

#include "ring_fork.h" /* a forked child's note of its files (ada_arena_fork_*) */

#endif
