/*
 * ada ring, private: the arena's byte layout and the process-local handle.
 *
 * Layout of an arena file (every part starts on a cache line):
 *
 *   [struct ada_arena_control]                     (control block)
 *   [struct ada_slot_desc] x (max_threads + spill_threads)  (slot descriptors)
 *   per full slot, slot_stride bytes each:
 *     [struct ada_index_hdr]                       head | tail | drops
 *     [struct atf_index_event] x index_events      (index ring)
 *     [struct ada_detail_hdr]                      head | oldest
 *     [uint8_t] x detail_bytes                     (detail ring; absent when 0)
 *   per spill slot, spill_stride bytes each: the same with spill_events
 *     and ada_spill_detail_bytes()
 *   [uint8_t] x 2^keysym_log2, page aligned         (key-symbol area; absent when 0)
 *
 * Slots are numbered 0 .. max_threads + spill_threads - 1, the full ones
 * first; the file is sparse and a slot region gets its pages when a
 * thread claims it (ring_slot_populate).
 *
 * The geometry (offsets, stride) is computed from the config by
 * ring_geometry(); the creator stores it in the control block and
 * ada_arena_open() recomputes it and insists on equality, so a handle
 * only ever uses geometry it computed itself (never trusts shared bytes).
 */
#ifndef ADA_RING_INTERNAL_H
#define ADA_RING_INTERNAL_H

#include <limits.h>
#include <stddef.h>

#include "ring.h"
#include "ring_bell.h"
#include "ring_pool.h"
#include "ring_reaped.h"

#define RING_ALIGN(x) (((x) + (uint64_t)ADA_CACHELINE - 1) & ~((uint64_t)ADA_CACHELINE - 1))

/* Internal slot state: a thread that won the FREE -> CLAIMING CAS fills in
 * tid/thread_seq, then stores ACTIVE. ada_arena_slot_info() shows it as
 * FREE so the drain never sees a half-initialised slot. */
#define RING_SLOT_CLAIMING 3u

/* ada_slot_desc.populated bits. */
#define RING_POP_RESERVED 1u /* counted against the ceiling (spill slots) */
#define RING_POP_PAGES 2u    /* every page of the slot's region exists */
#define RING_POP_INDEX 4u    /* the index part's pages exist (arena.c) */
#define RING_POP_HEADERS 8u  /* the headers' pages exist (a lazy claim's: arena.c) */
/* The index part's pages are mapped in the target's own mapping too (its
 * producers went once round the ring populating or mapping them:
 * producer.c); without it, pages the recorder prepared in its mapping
 * cost the target a fault each over their first lap. Cleared at exec. */
#define RING_POP_MAPPED 16u

/* One entry of the table of reaped children (reaped.c): seq is 2*pos + 1
 * while position pos is written into it, 2*pos + 2 once it is whole. */
struct ring_reaped_entry {
	_Atomic uint64_t seq;
	_Atomic uint64_t ts_raw;
	_Atomic uint32_t pid;
	_Atomic uint32_t status;
	_Atomic uint64_t check; /* ring_reaped_check(seq, pid, status, ts_raw) */
};

struct ada_arena_control {
	/* Written once by the creator before the file is renamed into place. */
	uint64_t magic; /* ADA_ARENA_MAGIC, stored last at creation */
	uint32_t version;
	uint32_t control_size; /* sizeof(struct ada_arena_control) */
	uint64_t layout_size;  /* bytes of the whole arena */
	uint64_t desc_offset;
	uint64_t slots_offset;
	uint64_t slot_stride;
	uint64_t detail_offset; /* of the detail header, within a slot region */
	struct ada_arena_config config;
	int32_t pid;
	/* The creator's start time, the low 32 bits of field 22 of
	 * /proc/self/stat (clock ticks since boot; 0: unknown). exec keeps it,
	 * a later process given the same pid has another: an arena of our pid
	 * is adopted only when it matches (env.c). */
	uint32_t start_time;

	/* Process state: the agent writes (exit / fatal signal), the drain reads. */
	alignas(ADA_CACHELINE) _Atomic uint32_t process_state;
	_Atomic int32_t exit_info; /* exit status or signal number */
	_Atomic uint32_t flags;    /* ADA_ARENA_F_* */

	/* Crash record (ada_arena_record_crash): the first crashing thread
	 * wins crash_tid by CAS, fills the rest, then stores crash_ready with
	 * release; the drain reads crash_ready with acquire first. */
	alignas(ADA_CACHELINE) _Atomic uint32_t crash_tid;
	_Atomic uint32_t crash_ready;
	_Atomic int32_t crash_signo;
	_Atomic int32_t crash_code;
	_Atomic uint64_t crash_addr;
	_Atomic uint64_t crash_ts;
	_Atomic uint64_t crash_regs[ADA_CRASH_NREGS];
	/* The other threads (ada_arena_record_crash_others): the fields
	 * first, then others_how with release; the drain's acquire reads it
	 * first. */
	_Atomic uint32_t others_how, others_n, others_seen;
	struct {
		_Atomic uint32_t tid;
		_Atomic int32_t nr;
		_Atomic uint64_t sp, pc;
	} others[ADA_CRASH_OTHERS];

	alignas(ADA_CACHELINE) _Atomic uint64_t heartbeat;       /* drain only */
	alignas(ADA_CACHELINE) _Atomic uint32_t next_thread_seq; /* every producer */
	_Atomic uint32_t slot_wanted; /* a producer waits for a free slot */
	/* Producers: 1 + the highest slot ever claimed (atomic max); the
	 * drain reads it as a loop bound, clamped (ada_arena_slots_used). */
	_Atomic uint32_t slots_hw;
	/* Producers: spill slots reserved against the shared-memory ceiling
	 * (each once, when first populated); the recorder releases that many
	 * spill strides, clamped to spill_threads, with the arena. */
	_Atomic uint32_t spill_taken;
	/* Drops with no slot (NO_SLOT) and the folded counters of freed slots. */
	alignas(ADA_CACHELINE) _Atomic uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	alignas(ADA_CACHELINE) struct ada_metrics metrics;
	/* Key-symbol swap (src/keysym/keysym.h): the recorder stores the
	 * current blob's offset in the area with release; the agent's
	 * handlers load it with acquire. ADA_KEYSYM_CUR_LOCAL until then. */
	alignas(ADA_CACHELINE) _Atomic uint64_t keysym_cur;
	uint64_t keysym_offset; /* of the area in the arena (geometry) */
	/* Written once by the creator, before the magic (ada_arena_origin). */
	uint32_t machine;
	uint32_t origin_reserved;
	uint64_t counter_hz;
	uint64_t anchor_counter, anchor_ns;
	/* Children the process reaped (ring_reaped.h, reaped.c): every
	 * writer adds to reaped_head; the entries are seqlocked each. */
	alignas(ADA_CACHELINE) _Atomic uint64_t reaped_head;
	alignas(ADA_CACHELINE) struct ring_reaped_entry reaped[ADA_REAPED_SLOTS];
	/* A forked child's note (forknote.c): the child writes the note
	 * then stores fork_state with release; the recorder's acquire reads
	 * it first. Likewise fork_exit and fork_exit_state at the exit. */
	alignas(ADA_CACHELINE) _Atomic uint32_t fork_state;
	_Atomic uint32_t fork_exit_state;
	struct ada_fork_note fork_note;
	struct ada_fork_exit fork_exit;
};

struct ada_slot_desc {
	alignas(ADA_CACHELINE) _Atomic uint32_t state; /* enum ada_slot_state + CLAIMING */
	_Atomic uint32_t tid;
	_Atomic uint32_t thread_seq;
	_Atomic uint32_t generation;
	_Atomic uint32_t exec_orphaned;
	/* RING_POP_* bits, kept when the slot is freed and reused. The
	 * producer that claims the slot sets RESERVED, INDEX and, when it
	 * populated the whole region, PAGES (RESERVED alone: a spill slot
	 * reserved against the ceiling whose populate failed; RESERVED and
	 * HEADERS: a lazy claim, whose producer adds INDEX after its ring's
	 * first lap: ring_populate_events); the recorder
	 * sets INDEX and PAGES on a full slot it populated
	 * (ada_arena_slot_prepare). */
	_Atomic uint32_t populated;
	/* Drain writes once a second, `ada status` reads: how many ns of
	 * records the slot's detail ring holds (newest - oldest timestamp). */
	_Atomic uint64_t detail_span_ns;
};

struct ada_index_hdr {
	alignas(ADA_CACHELINE) _Atomic uint64_t head; /* producer writes */
	/* Producer writes (single writer, on a wait only), drain reads: the
	 * waits for ring space (ada_producer_slow with --overflow wait) and
	 * the ns they took. In head's line: written only when the ring is
	 * full, read by a drain that reads head anyway. */
	_Atomic uint64_t wait_stat[2];
	/* Producer only (relaxed), in a slot claimed lazily (RING_POP_HEADERS
	 * without INDEX): its index ring's pages exist up to event pop_end,
	 * pop_left events short of a whole lap -- what the slot's next owner,
	 * which continues from the same head, starts from (producer.c). */
	_Atomic uint64_t pop_end, pop_left;
	alignas(ADA_CACHELINE) _Atomic uint64_t tail; /* drain writes */
	/* Producer adds (it is the only one while the slot is owned); the
	 * drain reads, and zeroes them in ada_arena_slot_free() once the
	 * thread is gone. */
	alignas(ADA_CACHELINE) _Atomic uint64_t drops[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
};

struct ada_detail_hdr {
	alignas(ADA_CACHELINE) _Atomic uint64_t head;   /* end of committed records */
	alignas(ADA_CACHELINE) _Atomic uint64_t oldest; /* start of the oldest intact record */
	/* Drain writes, producer reads (--detail always with
	 * detail_overflow=wait, ring.h "Waiting for the drain"): every record
	 * whose link (index ring position) is below this was persisted or
	 * decided; UINT64_MAX: never wait (the drain will decide no more).
	 * Beside oldest: the producer reads it once per chunk it enters. */
	_Atomic uint64_t decided;
	/* Producer writes (single writer, on a wait only), drain reads: the
	 * waits for decided (ada_detail_wait_room) and the ns they took. */
	_Atomic uint64_t wait_stat[2];
	/* Producer only (relaxed), in a lazily claimed slot: the ring's pages
	 * are populated in this process's mapping below this byte (its
	 * owners' ada_detail_populate), what the slot's next owner, which
	 * starts again from 0, need not populate again. Kept when the slot is
	 * freed; trusted for nothing but that (a bad value costs a populate). */
	_Atomic uint64_t pop;
};

_Static_assert(sizeof(struct ada_slot_desc) == ADA_CACHELINE, "one line per slot descriptor");
_Static_assert((ADA_REAPED_SLOTS & (ADA_REAPED_SLOTS - 1)) == 0, "reaped slots: a power of two");
_Static_assert(sizeof(struct ring_reaped_entry) == 32, "two reaped entries per line");
_Static_assert(sizeof(struct ada_index_hdr) % ADA_CACHELINE == 0, "index header in lines");
_Static_assert(sizeof(struct ada_detail_hdr) % ADA_CACHELINE == 0, "detail header in lines");

/* Detail record header word in the ring: len in the low 32 bits; a pad
 * record (skips to the ring's start) has RING_DETAIL_PAD set. */
#define RING_DETAIL_PAD (1ull << 63)
#define RING_DETAIL_HDR 8u

struct ring_geometry {
	uint64_t desc_offset;
	uint64_t desc_lock_end; /* pre-faulted and locked: [0, desc_lock_end) */
	uint64_t slots_offset;
	uint64_t slot_stride;
	uint64_t detail_offset;
	uint64_t spill_offset; /* first spill slot */
	uint64_t spill_stride; /* 0: no spill slots */
	uint64_t spill_detail_offset;
	uint64_t keysym_offset; /* page aligned; == total - area bytes */
	uint64_t total;
};

/* What one spill slot counts against the shared-memory ceiling: its
 * rings and its descriptor. */
static inline uint64_t ring_spill_budget_unit(const struct ring_geometry *g)
{
	return g->spill_stride + sizeof(struct ada_slot_desc);
}

/* The consumer's private view of one slot (consumer.c): the truth about
 * how far it consumed, and what it last accepted from the shared bytes. */
struct ring_consumer {
	uint64_t tail;  /* consumed up to here; the shared tail only mirrors it */
	uint64_t head;  /* highest head accepted: never goes back */
	uint32_t state; /* last state accepted (CONS_UNSEEN before the first look) */
	uint32_t generation, thread_seq, tid; /* of the last owner seen */
	bool gen_known;
	struct ada_slot_fault fault; /* code != NONE: quarantined */
};

struct ada_arena {
	uint8_t *base;
	uint64_t map_size;
	struct ada_arena_control *ctl;
	struct ada_slot_desc *desc;
	struct ada_arena_config cfg; /* validated private copy */
	struct ring_geometry geo;
	struct ring_consumer *cons; /* nslots entries, set up up to cons_ready */
	bool cons_wiped;            /* cons is advised MADV_WIPEONFORK */
	uint32_t nslots;            /* max_threads + spill_threads */
	uint32_t cons_ready;        /* cons[0, cons_ready) seeded (consumer thread) */
	uint32_t cons_fresh;        /* cons[0, cons_fresh) seed with tail 0 (made here) */
	uint32_t hw_seen;           /* highest slots_hw accepted (consumer thread) */
	int32_t pid;                /* from the control block, read once at open */
	uint32_t start_time;        /* likewise (ada_arena_start_time) */
	bool pid_reused;            /* producer: ours is <pid>.<ticks>.ring (env.c) */
	bool mlocked;
	/* Producer side: populate with reads (a recycled arena on tmpfs,
	 * arena_populate_range), else with writes. */
	bool populate_read;
	/* Producer side: the arena is on tmpfs, so pages that exist are mapped
	 * with reads (ring_map_events), else with writes. */
	bool map_read;
	/* Producer side: the recording's budget file (NULL: none), for the
	 * spill slots' reservations. */
	struct ada_shm_budget *budget;
	/* Producer side: the recorder that drains this arena, as its budget
	 * file names it (pid, start ticks; 0: unknown), asked whether it is
	 * still there when the drain's heartbeat stands still (producer.c). */
	int32_t rec_pid;
	uint64_t rec_start;
	/* Producer side: the name the arena was published under and its
	 * inode (ino 0: gone at set-up; NULL: not known), asked with the
	 * recorder when the heartbeat stands still: a recorder that removed
	 * the name (it refused the arena: a reused pid) never drains it. */
	char *pub_path;
	uint64_t pub_ino;
	/* Producer side: the file's inode as its maker saw it (0: not
	 * known), so that publishing it needs no stat of the name. */
	uint64_t file_ino;
	/* Producer side: slot 0's index and detail headers are mapped here
	 * already (a recycled arena: ring_pool_fresh), so its first claim
	 * maps them no more. */
	bool slot0_mapped;
	/* Producer side: the next arena this process retired (producer.c,
	 * ada_producer_retire_arena), NULL at the end of the list. */
	struct ada_arena *retired_next;
};

/* What a producer learns of its recorder (procstat.c). */
enum ring_recorder {
	RING_RECORDER_UNKNOWN = 0, /* no pid known, or /proc does not say */
	RING_RECORDER_RUNNING = 1, /* running or sleeping, or stopped by a tracer: a stall */
	RING_RECORDER_STOPPED = 2, /* stopped by a signal (SIGSTOP, SIGTSTP) */
	RING_RECORDER_GONE = 3,    /* no such process, a zombie, or its pid reused */
};
/* The state of the recorder pid that started at start (clock ticks since
 * boot, field 22 of /proc/PID/stat; 0: not compared). Cold hook context:
 * raw system calls only, errno kept. */
enum ring_recorder ring_recorder_state(int32_t pid, uint64_t start);
/* Whether a's arena file is still published under its name (false: the
 * name is gone or is another file's; true also when it cannot be told).
 * Cold hook context, like ring_recorder_state(). */
bool ring_arena_published(const struct ada_arena *a);
/* env.c: the start time in clock ticks (hz a second, as /proc/PID/stat
 * counts them) of a process the kernel stamped between before_ns and
 * after_ns (CLOCK_BOOTTIME): true with *ticks when both fall in one tick;
 * false when they do not, before_ns is 0, or hz does not divide a second. */
bool ring_start_ticks_between(uint64_t before_ns, uint64_t after_ns, long hz, uint64_t *ticks);
/* shm_budget.c: the budget page b maps becomes a private zero page at the
 * same address (the recording's shared page is let go; a late reader or
 * writer touches its own page). b stays valid for ada_shm_budget_close(). */
int ring_budget_retire(struct ada_shm_budget *b);
/* In a forked child: maps b's page, inherited without its page table
 * entry, with one call rather than the fault of its first touch. */
void ring_budget_map(struct ada_shm_budget *b);
/* The recording of b ended (ada_shm_budget_end): no arena is to be made
 * for it. False for NULL (no budget file). */
bool ring_budget_ended(const struct ada_shm_budget *b);
/* shm_budget.c: the recorder named in dir's budget file (0 and 0: none). */
void ring_budget_recorder(const char *dir, int32_t *pid, uint64_t *start);

/* 0 and fills g, or -EINVAL when cfg is not valid. */
int ring_geometry(const struct ada_arena_config *cfg, struct ring_geometry *g);
/* What an arena's maker needs of its file system, from one fstatfs of
 * the file (ring_arena_fs; zeros when fstatfs fails). */
struct ring_fs {
	uint64_t type;  /* f_type: TMPFS_MAGIC, HUGETLBFS_MAGIC, ... */
	uint64_t bsize; /* f_bsize (hugetlbfs: the huge page size) */
};
void ring_arena_fs(int fd, struct ring_fs *fs);
/* Before a fork: what every arena's maker asks once per process (whether
 * tmpfs gives huge pages) is asked here, in the parent, so that its
 * children inherit the answer: a process that adopted its arena (after
 * exec) never asked. */
void ring_arena_fork_prepare(void);
/* The file size an arena of size bytes needs on that file system
 * (hugetlbfs: whole huge pages). */
uint64_t ring_fs_file_size(const struct ring_fs *fs, uint64_t size);
/* The same, with fd's fstatfs. */
uint64_t ring_arena_file_size(int fd, uint64_t size);
/* The size of a path buffer for a name of need bytes (its NUL too):
 * need, at most PATH_MAX (a longer name then fails as it did in a
 * PATH_MAX buffer). The forked child's set-up sizes its buffers by it
 * (variable-length arrays): three PATH_MAX arrays took it 12 KiB down the
 * stack, pages its parent had touched, so a copy-on-write fault each
 * (issue 32). */
static inline size_t ring_path_cap(size_t need)
{
	return need < PATH_MAX ? need : PATH_MAX;
}
/* A pool file (pool.c) renamed to path, the arena's new temporary name,
 * and opened: its descriptor (and *fs, *ino: its file system and inode),
 * or -1 when the pool had none fit for an arena of total bytes (a new
 * file is made then). */
int ring_pool_take(const char *path, uint64_t total, struct ring_fs *fs, uint64_t *ino);
/* Whether a taken pool file, mapped as a (geometry, config and
 * populate_read set), has zeros wherever a new file's maker expects
 * them: the pages the pool zeroes, for this layout. On tmpfs it maps
 * those pages first, a call per run of them (and sets slot0_mapped when
 * all were). */
bool ring_pool_fresh(struct ada_arena *a);
/* Maps [start, end) of a's mapping, pages the file has (tmpfs: with
 * reads); 0 or -errno. */
int ring_map_pages(struct ada_arena *a, uint64_t start, uint64_t end);

static inline bool ring_slot_is_spill(const struct ada_arena *a, uint32_t slot)
{
	return slot >= a->cfg.max_threads;
}

static inline struct ada_index_hdr *ring_index_hdr(const struct ada_arena *a, uint32_t slot)
{
	uint64_t off =
	    ring_slot_is_spill(a, slot)
	        ? a->geo.spill_offset + a->geo.spill_stride * (uint64_t)(slot - a->cfg.max_threads)
	        : a->geo.slots_offset + a->geo.slot_stride * slot;
	return (struct ada_index_hdr *)(a->base + off);
}

static inline uint64_t ring_slot_stride(const struct ada_arena *a, uint32_t slot)
{
	return ring_slot_is_spill(a, slot) ? a->geo.spill_stride : a->geo.slot_stride;
}

/* Index ring capacity of the slot (a power of two). */
static inline uint64_t ring_slot_events(const struct ada_arena *a, uint32_t slot)
{
	return ring_slot_is_spill(a, slot) ? a->cfg.spill_events : a->cfg.index_events;
}

/* Detail ring bytes of the slot (0: none). */
static inline uint64_t ring_slot_detail_bytes(const struct ada_arena *a, uint32_t slot)
{
	return ring_slot_is_spill(a, slot) ? ada_spill_detail_bytes(&a->cfg) : a->cfg.detail_bytes;
}

static inline struct atf_index_event *ring_index_events(const struct ada_arena *a, uint32_t slot)
{
	return (struct atf_index_event *)(ring_index_hdr(a, slot) + 1);
}

static inline struct ada_detail_hdr *ring_detail_hdr(const struct ada_arena *a, uint32_t slot)
{
	uint64_t off =
	    ring_slot_is_spill(a, slot) ? a->geo.spill_detail_offset : a->geo.detail_offset;
	return (struct ada_detail_hdr *)((uint8_t *)ring_index_hdr(a, slot) + off);
}

/* Slots that may have been claimed, for loops that must not touch the
 * pages of the others: max(what the consumer accepted, the arena's count
 * clamped to nslots), at least max_threads. Read-only (no seeding). */
static inline uint32_t ring_slots_used(const struct ada_arena *a)
{
	uint32_t v = atomic_load_explicit(&a->ctl->slots_hw, memory_order_relaxed);
	if (v > a->nslots)
		v = a->nslots;
	if (v < a->hw_seen)
		v = a->hw_seen;
	return v < a->cfg.max_threads ? a->cfg.max_threads : v;
}

/* The detail bytes as 8-byte words, accessed with relaxed atomics so the
 * drain's concurrent copy is a defined (seqlock) read, not a data race. */
static inline _Atomic uint64_t *ring_detail_words(const struct ada_arena *a, uint32_t slot)
{
	return (_Atomic uint64_t *)(ring_detail_hdr(a, slot) + 1);
}

/* Allocates and seeds a->cons (fresh: the arena was just created, its
 * shared tails are all 0); 0 or -ENOMEM. */
int ring_consumers_init(struct ada_arena *a, bool fresh);
/* Gives a->cons back (ada_arena_close). */
void ring_consumers_free(struct ada_arena *a);
/* Before a fork: a's consumer entries come to the child as zero pages
 * (MADV_WIPEONFORK, once per mapping); whether they will. */
bool ring_consumers_wipe_on_fork(struct ada_arena *a);
/* In a forked child, before a (the parent's handle) is closed: its
 * consumer entries, zero here when ring_consumers_wipe_on_fork said so,
 * are kept for the next ring_consumers_init of the same size (the
 * child's own arena) instead of unmapped. */
void ring_consumers_keep(struct ada_arena *a);
/* Unmaps the entries ring_consumers_keep kept and no arena took. */
void ring_consumers_drop_spare(void);
/* 0 and the checked head, or -EPROTO (the slot is quarantined now). */
int ring_cons_head(struct ada_arena *a, uint32_t slot, uint64_t *head);
/* The consumer freed the slot: the next owner must be a new generation. */
void ring_cons_freed(struct ada_arena *a, uint32_t slot);

/* mlocks the whole mapping; on refusal sets ADA_ARENA_F_MLOCK_FAILED. */
void ring_arena_lock(struct ada_arena *a, bool *mlock_failed);
/* ada_arena_create() with the creator's start time stored in the control
 * block (the low 32 bits of its start ticks; 0: unknown, which is what
 * ada_arena_create() stores). */
int ring_arena_create(const char *path, const struct ada_arena_config *cfg, uint32_t start_time,
                      struct ada_arena **out, bool *mlock_failed);
/* Populates (and, without a recorder, mlocks) one slot's rings at its
 * claim: with a recorder, a full slot's headers only (the producer
 * populates its index ring as it goes: ring_populate_events); 0 or
 * -errno (-ENOMEM: no room). */
int ring_slot_populate(struct ada_arena *a, uint32_t slot);
/* Populates the pages of the index ring events [from, from + n) of slot
 * (positions, taken modulo the ring); 0 or -errno (-ENOMEM: no room). */
int ring_populate_events(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t n);
/* Maps into this process's mapping the pages of the index ring events
 * [from, from + n) of slot, pages that exist already (the recorder
 * prepared them in its own mapping); 0 or -errno. */
int ring_map_events(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t n);
/* Populates the pages of slot's detail ring bytes [from, to) (ring
 * offsets, clamped to the ring); 0 or -errno (-ENOMEM: no room). */
int ring_populate_detail(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t to);
/* Whether a claim of slot leaves the rings' pages to its producer and the
 * recorder (ring_slot_populate: a full slot with a recorder) rather than
 * populating (and locking) the whole slot itself. */
bool ring_slot_lazy(const struct ada_arena *a, uint32_t slot);
/* Producer side of claiming: FREE -> ACTIVE with tid and a new thread_seq
 * (a ready slot first, else the lowest free one). Returns the slot, or
 * -ENOSPC when none is free. */
int ring_slot_claim(struct ada_arena *a, uint32_t tid);
/* A number that changes whenever a slot holder makes progress (emits an
 * event, ends, its slot is freed or claimed), and whether some slot is
 * EXITED (its thread gone, its ring not yet freed by the drain). */
uint64_t ring_slots_progress(const struct ada_arena *a, bool *any_exited);
/* Producer: counts one drop in the slot (single writer while owned). */
void ring_slot_drop(struct ada_arena *a, uint32_t slot, enum ada_lane lane,
                    enum ada_drop_reason why);
/* Anyone: counts one drop in the arena totals (atomic add). */
void ring_arena_drop(struct ada_arena *a, enum ada_lane lane, enum ada_drop_reason why);
/* Tests only (test_ring_detail.c): when set, ada_detail_ring_ends() calls
 * it once, after its walk of the newest chunk and before it copies the
 * newest record and re-checks oldest, so a test can make the producer
 * overtake the read at exactly that point. NULL in every program. */
extern void (*ring_detail_ends_test_hook)(void *ctx);
extern void *ring_detail_ends_test_ctx;

#endif
