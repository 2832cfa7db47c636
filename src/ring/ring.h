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
 *   - Because the ring lives in shared pages, everything a producer
 *     published before it died (SIGKILL included) can still be drained.
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
	ADA_DROP_RING_FULL = 0,         /* --overflow drop and the ring was full */
	ADA_DROP_DRAIN_LAG = 1,         /* waited, but the drain stopped moving */
	ADA_DROP_DETAIL_OVERWRITTEN = 2,/* detail ring overwrote its oldest */
	ADA_DROP_NO_SLOT = 3,           /* more live threads than slots */
	ADA_DROP_REASON_COUNT = 4,
};
enum ada_slot_state {
	ADA_SLOT_FREE = 0,
	ADA_SLOT_ACTIVE = 1,
	ADA_SLOT_EXITED = 2,
};
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
	uint32_t high_watermark_pct; /* fill % at which the drain hurries */
	uint32_t low_watermark_pct;  /* fill % the drain drains down to */
	uint32_t reserved;
};

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
	uint32_t state;      /* enum ada_slot_state */
	uint32_t tid;
	uint32_t thread_seq; /* N of thread_N in the session */
	uint32_t generation; /* bumps every time the slot is claimed */
	uint64_t head, tail; /* index ring positions (head - tail = backlog) */
	uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
};

struct ada_arena; /* process-local handle */

/* ---- arena life (not hook context) ---- */

/* Creates the arena file at path (O_EXCL), sizes, maps, pre-faults and
 * mlocks it. mlock refusal is not an error: *mlock_failed tells (may be NULL).
 * Returns 0 or -errno (-EINVAL bad config, -EEXIST, -ENOMEM, ...). */
int ada_arena_create(const char *path, const struct ada_arena_config *cfg,
		     struct ada_arena **out, bool *mlock_failed);
/* Maps an existing arena (drain, recover). -EPROTO when the file is not an
 * arena or its layout does not match this build. */
int ada_arena_open(const char *path, struct ada_arena **out);
void ada_arena_close(struct ada_arena *a); /* NULL is a no-op */
const struct ada_arena_config *ada_arena_config_of(const struct ada_arena *a);
/* Bytes an arena with this config occupies. */
uint64_t ada_arena_size_for(const struct ada_arena_config *cfg);
/* Capacity in events for a peak rate (events/s) and a burst window (ms),
 * rounded up to a power of two: K = rate x window (BP-004). */
uint64_t ada_ring_capacity_for_rate(uint64_t events_per_sec, uint64_t burst_ms);

/* ---- shared process state (agent writes, recorder reads) ---- */
int32_t ada_arena_pid(const struct ada_arena *a);
void ada_arena_set_exited(struct ada_arena *a, int status);
void ada_arena_set_crashed(struct ada_arena *a, int signo);
uint32_t ada_arena_process_state(const struct ada_arena *a, int *status_or_signal);
struct ada_metrics *ada_arena_metrics(struct ada_arena *a);
void ada_arena_drain_heartbeat(struct ada_arena *a); /* drain: "I am alive" */
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
/* Drain: the slot's thread is gone and its ring is empty: make it FREE. */
void ada_arena_slot_free(struct ada_arena *a, uint32_t slot);

/* ---- producer side (the agent, tests, bench) ---- */

struct ada_producer {
	struct atf_index_event *events; /* NULL until this thread owns a slot */
	uint64_t mask;
	uint64_t head;  /* private copy of the published head */
	uint64_t limit; /* head may reach this without rereading tail */
	_Atomic uint64_t *head_pub;
	uint32_t tid;
	uint32_t slot;
	uint32_t ts_clock; /* 1 when the arena's timestamps come from clock_gettime */
	uint32_t state;    /* producer-private: unclaimed / owning / disabled */
};

extern __thread struct ada_producer ada_producer_tls
	__attribute__((tls_model("initial-exec")));

/* Process-wide: the arena this process produces into (NULL: not recording). */
void ada_producer_set_arena(struct ada_arena *a);
struct ada_arena *ada_producer_arena(void);
/* After fork, in the child: forget the parent's slot in this thread. */
void ada_producer_reset_thread(void);

/* Cold path: claims a slot, waits or drops when full. Returns true when
 * p->head < p->limit afterwards (room for one event). */
bool ada_producer_slow(struct ada_producer *p);
uint64_t ada_producer_clock_ns(void); /* clock_gettime fallback */

static inline uint64_t ada_timestamp_raw(const struct ada_producer *p)
{
	if (ada_unlikely(p->ts_clock))
		return ada_producer_clock_ns();
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

/* Hook context: no syscall, no libc, no allocation on the common path. */
static inline void ada_emit(uint64_t function_id, uint32_t kind, uint32_t depth)
{
	struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit) && !ada_producer_slow(p))
		return;
	struct atf_index_event *e = &p->events[p->head & p->mask];
	e->timestamp_ns = ada_timestamp_raw(p);
	e->function_id = function_id;
	e->thread_id = p->tid;
	e->event_kind = kind;
	e->call_depth = depth;
	e->detail_seq = ATF_NO_DETAIL;
	p->head++;
	/* Orders the event stores above before the new head; pairs with the
	 * acquire load of head in ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, p->head, memory_order_release);
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
