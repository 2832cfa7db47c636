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
 *   - Detail ring: the owning thread appends [len][record] at head and, when
 *     there is no room, advances `oldest` over the records it overwrites
 *     (counted as ADA_DROP_DETAIL_OVERWRITTEN). It publishes the new oldest
 *     before it writes over old bytes, so the drain's snapshot (copy, then
 *     re-read oldest: a seqlock) detects and discards a record overwritten
 *     while it was being copied instead of returning it torn.
 *   - Because the ring lives in shared pages, everything a producer
 *     published before it died (SIGKILL included) can still be drained.
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

#define ADA_CACHELINE 64
#define ADA_ARENA_MAGIC 0x414e455241414441ULL /* "ADAARENA" */
#define ADA_ARENA_VERSION 1

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
	ADA_DROP_REASON_COUNT = 4,
};
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

enum ada_process_state {
	ADA_PROC_RUNNING = 0,
	ADA_PROC_EXITED = 1,  /* exit()/atexit seen; exit_status is valid */
	ADA_PROC_CRASHED = 2, /* fatal signal seen; fatal_signal is valid */
};

struct ada_arena_config {
	uint32_t max_threads;
	uint32_t overflow;           /* enum ada_overflow */
	uint64_t index_events;       /* per-thread index ring capacity, power of two */
	uint64_t detail_bytes;       /* per-thread detail ring bytes, power of two; 0 = none */
	uint32_t timestamp_source;   /* enum ada_ts_source */
	uint32_t high_watermark_pct; /* fill % at which the drain hurries */
	uint32_t low_watermark_pct;  /* fill % the drain drains down to */
	uint32_t reserved;
};

/* Defaults used by ada_arena_config_parse() for keys not given. */
#define ADA_ARENA_DEFAULT_MAX_THREADS 64u
#define ADA_ARENA_DEFAULT_INDEX_EVENTS (1u << 16) /* 2 MiB per thread */
#define ADA_ARENA_DEFAULT_DETAIL_BYTES 0u
#define ADA_ARENA_DEFAULT_HW_PCT 75u
#define ADA_ARENA_DEFAULT_LW_PCT 25u
/* Limits checked by ada_arena_config_valid(). */
#define ADA_ARENA_MAX_THREADS_LIMIT 4096u
#define ADA_RING_MIN_EVENTS 64u
#define ADA_RING_MAX_EVENTS (1ull << 28)
#define ADA_DETAIL_MIN_BYTES 4096u
#define ADA_DETAIL_MAX_BYTES (1ull << 30)
/* Longest buffer ada_arena_config_format() writes, NUL included. */
#define ADA_ARENA_CONFIG_TEXT_MAX 192

/* Published by the drain, read by `ada status` and the end-of-run summary. */
struct ada_metrics {
	_Atomic uint64_t events_per_sec[ADA_LANE_COUNT];
	_Atomic uint64_t drops_per_sec[ADA_DROP_REASON_COUNT];
	_Atomic uint32_t ring_fill_pct_max; /* fullest ring at the last sample */
	_Atomic uint32_t reserved;
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
	uint32_t fill_pct;      /* index ring fill, 0..100 */
	uint32_t exec_orphaned; /* 1: its process image exec'd; free when empty */
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
 * arena or its layout does not match this build. */
int ada_arena_open(const char *path, struct ada_arena **out);
void ada_arena_close(struct ada_arena *a); /* NULL is a no-op */
const struct ada_arena_config *ada_arena_config_of(const struct ada_arena *a);
/* Bytes an arena with this config occupies (0 when the config is invalid). */
uint64_t ada_arena_size_for(const struct ada_arena_config *cfg);
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
 * overflow=wait,ts=tsc,hw=75,lw=25". Returns the length, or -ENOSPC when
 * cap is too small (ADA_ARENA_CONFIG_TEXT_MAX always suffices). */
int ada_arena_config_format(const struct ada_arena_config *cfg, char *buf, size_t cap);
/* Parses (buf, len) -- not NUL-terminated -- over the defaults: keys
 * max_threads, index_events, detail_bytes (decimal), overflow=wait|drop,
 * ts=tsc|clock, hw, lw (percent). -EINVAL on an unknown key, a bad
 * number, or a result ada_arena_config_valid() rejects. */
int ada_arena_config_parse(const char *buf, size_t len, struct ada_arena_config *cfg);

/* ---- shared process state (agent writes, recorder reads) ---- */
int32_t ada_arena_pid(const struct ada_arena *a);
void ada_arena_set_exited(struct ada_arena *a, int status);
void ada_arena_set_crashed(struct ada_arena *a, int signo);
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
/* Sum over every slot (live ones and those freed before) plus the drops
 * that had no slot to go to (ADA_DROP_NO_SLOT, in the index lane). */
void ada_arena_drop_totals(const struct ada_arena *a,
                           uint64_t out[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT]);

/* ---- drain side (the single consumer of every ring) ---- */
uint32_t ada_arena_max_threads(const struct ada_arena *a);
void ada_arena_slot_info(const struct ada_arena *a, uint32_t slot, struct ada_slot_info *out);
/* Contiguous run of published, not yet consumed events from tail (up to the
 * wrap point). Returns the count; *events points into the ring. */
size_t ada_index_ring_peek(struct ada_arena *a, uint32_t slot,
                           const struct atf_index_event **events);
/* Consumes n events peeked above (release store of tail). */
void ada_index_ring_release(struct ada_arena *a, uint32_t slot, size_t n);
/* Drain: the slot's thread is gone and its ring is empty: make it FREE.
 * Its drop counters are folded into the arena totals. Returns 0, -EBUSY
 * when the index ring is not empty or the slot is ACTIVE, -EINVAL bad slot. */
int ada_arena_slot_free(struct ada_arena *a, uint32_t slot);
/* Drain helper: true when the slot is EXITED, its index ring is empty and
 * its thread is gone (exec-orphaned, or tgkill(pid, tid, 0) says ESRCH).
 * Makes one syscall; call it at the drain's slow cadence. */
bool ada_arena_slot_reclaimable(const struct ada_arena *a, uint32_t slot);

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
/* fill >= high_watermark_pct: the drain should hurry (drain this ring now,
 * shorter sleeps) until ada_arena_below_low_watermark() says it may relax. */
bool ada_arena_above_high_watermark(const struct ada_arena *a, uint32_t slot);
bool ada_arena_below_low_watermark(const struct ada_arena *a, uint32_t slot);

/* ---- detail ring (drain side) ----
 * Records are opaque bytes (DetailEventHeader + payload, by convention).
 * The snapshot writes them into buf as a sequence of
 * struct ada_detail_rec { len; reserved } + len bytes, padded to 8 bytes;
 * iterate with ada_detail_rec_next(). */
struct ada_detail_rec {
	uint32_t len;      /* record bytes after this header */
	uint32_t reserved; /* 0 */
};
#define ADA_DETAIL_REC_ALIGN 8u
/* Largest record the ring accepts: a quarter of detail_bytes minus the header. */
uint32_t ada_detail_max_record(const struct ada_arena *a);
struct ada_detail_snapshot {
	uint64_t begin;      /* ring position of the first record returned */
	uint64_t end;        /* position after the last one (pass as `from` next time) */
	uint64_t records;    /* records written into buf */
	uint64_t bytes;      /* bytes written into buf */
	uint64_t lost_bytes; /* ring bytes in [from, begin) overwritten before
	                        they could be copied (their records are gone) */
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
/* Iterates a snapshot buffer: returns the next record (and its length) at
 * *off, advancing *off, or NULL at the end / on a malformed buffer. */
const void *ada_detail_rec_next(const void *buf, size_t len, size_t *off, uint32_t *rec_len);

/* ---- producer side (the agent, tests, bench) ---- */

struct ada_producer {
	struct atf_index_event *events; /* NULL until this thread owns a slot */
	uint64_t mask;
	uint64_t head;  /* private copy of the published head */
	uint64_t limit; /* fast path may write while head < limit (0: always slow) */
	_Atomic uint64_t *head_pub;
	uint32_t tid;
	uint32_t slot;
	uint32_t ts_clock; /* 1 when the arena's timestamps come from clock_gettime */
	uint32_t state;    /* producer-private: unclaimed / owning / disabled */
	/* Cold fields: only the slow path and the detail lane touch these. */
	uint64_t room;           /* head may reach this without rereading tail */
	struct ada_arena *arena; /* the arena the slot belongs to */
	uint64_t lag_beat;       /* heartbeat seen when the drain was declared lagging */
	uint32_t lagging;        /* 1: drop at once while the heartbeat stays lag_beat */
	uint32_t retry;          /* no slot: drops left before the next claim attempt */
};

extern __thread struct ada_producer ada_producer_tls __attribute__((tls_model("initial-exec")));

/* Process-wide: the arena this process produces into (NULL: not recording). */
void ada_producer_set_arena(struct ada_arena *a);
struct ada_arena *ada_producer_arena(void);
/* After fork, in the child: forget the parent's slot in this thread. */
void ada_producer_reset_thread(void);
/* Sets up this process's arena from the environment: ADA_ARENA_DIR (required;
 * -ENOENT when unset: not recording) and ADA_RING_CONFIG (optional; defaults
 * otherwise). Creates <dir>/<pid>.tmp, initialises it and renames it to
 * <dir>/<pid>.ring; when <pid>.ring exists already (this process called
 * exec) opens it and marks the ACTIVE slots of the old image EXITED
 * (exec-orphaned). In a forked child it drops the parent's arena first.
 * mlock refusal shows in ada_arena_flags(). Returns 0 or -errno
 * (-EINVAL bad ADA_RING_CONFIG, -EPROTO foreign <pid>.ring, ...). */
int ada_producer_init_from_env(void);
/* How long a full ring waits for a drain whose heartbeat stands still
 * before it drops with ADA_DROP_DRAIN_LAG (default 2000 ms). */
void ada_producer_set_drain_timeout_ms(uint32_t ms);
/* Detail lane of the calling thread (claims a slot on first use). Copies
 * (rec, len) into the detail ring, overwriting the oldest records when full
 * (each counted as ADA_DROP_DETAIL_OVERWRITTEN). Returns false when not
 * recording, the arena has no detail ring, no slot is free, or
 * len > ada_detail_max_record() (counted as ADA_DROP_RING_FULL in the
 * detail lane). No syscall, lock or libc call once the thread owns a
 * slot; like ada_producer_slow() it is compiled without
 * -mgeneral-regs-only, so hook code saves vector state around it. */
bool ada_detail_push(const void *rec, uint32_t len);

/* Cold path: claims a slot, waits or drops when full. Returns true when
 * there is room for one event at p->head (and, except in ADA_TS_CLOCK
 * arenas, p->head < p->limit). With no arena or no
 * free slot it keeps limit == head so every event comes back here cheaply:
 * no arena costs one load; no slot counts ADA_DROP_NO_SLOT and retries the
 * claim every 1024 drops. */
__attribute__((cold)) bool ada_producer_slow(struct ada_producer *p);
uint64_t ada_producer_clock_ns(void); /* clock_gettime fallback */

/* The cycle counter (TSC on x86_64, CNTVCT on arm64). */
static inline uint64_t ada_tsc(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
#error "no cycle counter for this architecture"
#endif
}

/* The arena's raw timestamp: cycle counter, or CLOCK_BOOTTIME ns. */
static inline uint64_t ada_timestamp_raw(const struct ada_producer *p)
{
	if (ada_unlikely(p->ts_clock))
		return ada_producer_clock_ns();
	return ada_tsc();
}

/* Stores the cycle counter into e->timestamp_ns. On x86_64 as two 32-bit
 * stores of edx:eax, which saves the shift-and-or of ada_tsc(). */
typedef uint32_t ada_u32_alias __attribute__((may_alias, aligned(1)));
static inline void ada_event_put_tsc(struct atf_index_event *e)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	ada_u32_alias *w = (ada_u32_alias *)(void *)e; /* timestamp_ns is at 0 */
	w[0] = lo;
	w[1] = hi;
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

/* Hook context: no syscall, no libc, no allocation on the common path.
 * About 20 instructions + rdtsc: TLS loads, one compare, six stores. */
static inline void ada_emit(uint64_t function_id, uint32_t kind, uint32_t depth)
{
	struct ada_producer *p = &ada_producer_tls;
	uint64_t head = p->head;
	if (ada_unlikely(head >= p->limit)) {
		ada_producer_emit_slow(p, function_id, kind, depth);
		return;
	}
	struct atf_index_event *e = &p->events[head & p->mask];
	ada_event_put_tsc(e);
	e->function_id = function_id;
	e->thread_id = p->tid;
	e->event_kind = kind;
	e->call_depth = depth;
	e->detail_seq = ATF_NO_DETAIL;
	p->head = head + 1;
	/* Orders the event stores above before the new head; pairs with the
	 * acquire load of head in ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, head + 1, memory_order_release);
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

#endif
