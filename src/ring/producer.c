/*
 * ada ring: the producer's cold path -- slot claim on a thread's first
 * event, the full-ring policy (wait, bounded by the drain's heartbeat, or
 * drop), thread exit, fork, and setting up the process's arena from the
 * environment.
 *
 * Threads: every traced thread (ada_producer_slow() from ada_emit(), in hook
 * context: it may make syscalls and call pthread_* but never allocates on
 * the common path and never takes a lock); process setup (init_from_env,
 * set_arena) from the agent's init or a test's main.
 *
 * Waiting for the drain is bounded by the recorder's life, not by its
 * speed: when the drain's heartbeat has stood still for the drain timeout
 * (2 s) the producer asks whether the recorder process is still there
 * (producer_recorder_running: its pid and start time from the budget
 * file, /proc/PID/stat). Running, sleeping or stopped by a tracer -- a
 * drain starved on a loaded machine, a debugger -- it waits on; gone, or
 * stopped by a signal, or unknown (no budget file: a test's arena, an
 * older recorder), it drops (drain_lag); so it does when the recorder
 * runs but removed the arena's name (it refused the arena: a reused pid,
 * and never drains it). A recorder gone (or unknown)
 * sets `lagging`, and the hook handlers stop tracing the thread until the
 * heartbeat moves; one stopped by a signal sets `stalled`: every event
 * drops here at once, counted, until the heartbeat moves, and the thread
 * stays traced (no call goes uncounted while it waits to be continued).
 *
 * Producer TLS states:
 *   UNCLAIMED --first event, arena set--> OWNING (events != NULL)
 *   UNCLAIMED --no free slot--> NOSLOT (drops counted; claim retried every
 *                                       PRODUCER_RETRY drops)
 * In every state but OWNING, head == limit == 0, so ada_emit() always comes
 * here and returns at once. An OWNING thread of an ADA_TS_CLOCK arena also
 * keeps limit == 0 (its true bound is `room`), so each of its events is
 * written here, with clock_gettime, and the fast path has no clock test. An OWNING thread keeps its
 * slot to the end; the pthread key destructor marks the slot EXITED and later events still go to
 * the ring, which stays valid until the drain frees it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ring_internal.h"

enum { PRODUCER_UNCLAIMED = 0, PRODUCER_OWNING = 1, PRODUCER_NOSLOT = 2 };
#define PRODUCER_RETRY 1024u
#define PRODUCER_SPINS 256u
#define PRODUCER_YIELDS_PER_CLOCK 16u
/* A wait for ring space ends when the ring has room for its two markers
 * (ADA_WAIT_MARKER_BEGIN/END) and the event that waited. */
#define PRODUCER_WAIT_ROOM 3u
/* The fast path comes to the cold path at every 2^-SHIFT of the ring,
 * but not more often than every PRODUCER_BELL_MIN events (8 192 events
 * of a 2 MiB ring, 512 of a spill slot's: once a lap), where it rings
 * the drain's doorbell if the drain sleeps. */
#define PRODUCER_BELL_SHIFT 3u
#define PRODUCER_BELL_MIN 1024u

/* Events between two looks at the doorbell (a power of two). */
static inline uint64_t producer_bell_chunk(const struct ada_producer *p)
{
	uint64_t cap = p->mask + 1, chunk = cap >> PRODUCER_BELL_SHIFT;
	uint64_t least = cap < PRODUCER_BELL_MIN ? cap : PRODUCER_BELL_MIN;
	return chunk > least ? chunk : least;
}

/* The room a wait ends with: its markers, the event and a pending wait's
 * markers (producer_pend_wait), which go first. */
static inline uint32_t producer_wait_room(const struct ada_producer *p)
{
	return PRODUCER_WAIT_ROOM + (p->wpend_end ? 2u : 0u);
}
/* Index ring events populated at a lazy slot's first chunk and at most
 * per chunk (64 KiB and 512 KiB of 32-byte events). */
#define PRODUCER_POP_FIRST 2048u
#define PRODUCER_POP_MAX 16384u
/* Detail ring bytes populated at its first piece and at most per piece
 * (ada_detail_populate): a thread's first record (its start) waits for
 * four pages, not sixteen. */
#define PRODUCER_DPOP_FIRST (16u << 10)
#define PRODUCER_DPOP_MAX (512u << 10)

/* Weak: the agent defines it as the first member of its own TLS block
 * (src/hook/handlers.c, handlers_tls), so that its handlers reach the
 * shadow stack and the producer through one GOT load. */
__thread struct ada_producer ada_producer_tls __attribute__((tls_model("initial-exec"), weak));
__thread uint32_t ada_producer_depth __attribute__((tls_model("initial-exec")));

/* The process's arena. Set once at init (or after fork); read by every
 * thread's slow path. */
static struct ada_arena *_Atomic producer_arena;
static _Atomic uint64_t producer_lag_ns = 2000000000ull;
static pthread_key_t producer_key;
static bool producer_key_ok; /* written once under pthread_once */
static pthread_once_t producer_key_once = PTHREAD_ONCE_INIT;

/* The heartbeat value one thread found standing still for the timeout,
 * plus one (0: none). Every thread of the process drops at once while the
 * beat still reads so: a recorder that died costs the process one timeout,
 * not one per thread. Relaxed: a hint; the heartbeat itself decides. */
static _Atomic uint64_t producer_dead_beat;
/* The same for a recorder stopped by a signal (its events drop at once,
 * counted, and the threads stay traced: ada_producer.stalled). */
static _Atomic uint64_t producer_stall_beat;

/* Arenas this process stopped producing into (ada_producer_retire_arena),
 * whose ranges hold private zero pages until ada_producer_reap_retired().
 * Touched only with every other thread stopped (ada attach). */
static struct ada_arena *producer_retired;

int ada_producer_retire_arena(void)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a)
		return 0;
	ada_producer_set_arena(NULL);
	/* MAP_FIXED replaces the shared mapping in one step: the recording's
	 * pages are let go (RssShmem), and whatever still holds an address
	 * in the range -- a thread stopped in the middle of an event, a
	 * frame open at the detach whose return is still recorded, the
	 * key-symbol area's readers -- finds private memory there, zero
	 * until it writes, never a hole. */
	void *p = mmap(a->base, a->map_size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	int err = p == MAP_FAILED ? -errno : 0;
	int e2 = ring_budget_retire(a->budget);
	a->retired_next = producer_retired;
	producer_retired = a;
	return err ? err : e2;
}

size_t ada_producer_reap_retired(void)
{
	size_t n = 0;
	while (producer_retired) {
		struct ada_arena *a = producer_retired;
		producer_retired = a->retired_next;
		ada_arena_close(a); /* munmap of the range, the budget page; frees */
		n++;
	}
	return n;
}

ADA_FORK_PATH void ada_producer_set_arena(struct ada_arena *a)
{
	/* Another arena (a fork child's): its drain's heartbeat is its own. */
	atomic_store_explicit(&producer_dead_beat, 0, memory_order_relaxed);
	atomic_store_explicit(&producer_stall_beat, 0, memory_order_relaxed);
	/* Publishes the initialised handle; pairs with ada_producer_arena(). */
	atomic_store_explicit(&producer_arena, a, memory_order_release);
}

ADA_FORK_PATH struct ada_arena *ada_producer_arena(void)
{
	/* Pairs with the release store in ada_producer_set_arena(). */
	return atomic_load_explicit(&producer_arena, memory_order_acquire);
}

void ada_producer_count_detail(struct ada_producer *p, enum ada_drop_reason why)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a || (unsigned)why >= ADA_DROP_REASON_COUNT)
		return; /* not recording: nothing to count into */
	/* Our own slot (in this arena: a fork child's handle was reset):
	 * its single-writer counter; else the arena's shared total. */
	if (p->state == PRODUCER_OWNING && p->arena == a)
		ring_slot_drop(a, p->slot, ADA_LANE_DETAIL, why);
	else
		ring_arena_drop(a, ADA_LANE_DETAIL, why);
}

/* This process's drain_lag drops: those of its slots that were ever
 * claimed (ada_arena_drop_totals would read every slot's counters, and
 * so fault in a page of each ring no thread claimed -- in every forked
 * child that writes its agent.json). */
static uint64_t producer_drain_lag_drops(struct ada_arena *a)
{
	uint64_t n = atomic_load_explicit(&a->ctl->drops[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG],
	                                  memory_order_relaxed);
	uint32_t used = ring_slots_used(a);
	for (uint32_t s = 0; s < used; s++) {
		if (!atomic_load_explicit(&a->desc[s].populated, memory_order_relaxed))
			continue;
		n += atomic_load_explicit(
		    &ring_index_hdr(a, s)->drops[ADA_LANE_INDEX][ADA_DROP_DRAIN_LAG],
		    memory_order_relaxed);
	}
	return n;
}

void ada_producer_count_gone(struct ada_producer *p)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a)
		return; /* detached, or a child that records nothing */
	/* Two events: the call's CALL and the RETURN it will not get. */
	if (p->state == PRODUCER_OWNING && p->arena == a) {
		ring_slot_drop(a, p->slot, ADA_LANE_INDEX, ADA_DROP_RECORDER_GONE);
		ring_slot_drop(a, p->slot, ADA_LANE_INDEX, ADA_DROP_RECORDER_GONE);
	} else {
		ring_arena_drop(a, ADA_LANE_INDEX, ADA_DROP_RECORDER_GONE);
		ring_arena_drop(a, ADA_LANE_INDEX, ADA_DROP_RECORDER_GONE);
	}
}

bool ada_producer_drain_gone(uint64_t *dropped)
{
	struct ada_arena *a = ada_producer_arena();
	*dropped = 0;
	if (!a)
		return false;
	*dropped = producer_drain_lag_drops(a);
	uint64_t dead = atomic_load_explicit(&producer_dead_beat, memory_order_relaxed);
	return dead != 0 && dead == ada_arena_heartbeat(a) + 1;
}

bool ada_producer_drain_back(void)
{
	const struct ada_producer *p = &ada_producer_tls;
	return p->arena && ada_arena_heartbeat(p->arena) != p->lag_beat;
}

void ada_producer_set_drain_timeout_ms(uint32_t ms)
{
	atomic_store_explicit(&producer_lag_ns, (uint64_t)ms * 1000000u, memory_order_relaxed);
}

uint64_t ada_producer_clock_ns(void)
{
	/* ADA_TS_CLOCK arenas carry CLOCK_BOOTTIME ns: the drain keeps them. */
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t producer_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Thread exit: the slot's thread is going away; tell the drain. */
static void producer_thread_exit(void *unused)
{
	(void)unused;
	struct ada_producer *p = &ada_producer_tls;
	if (p->state != PRODUCER_OWNING || !p->arena)
		return;
	uint32_t expect = ADA_SLOT_ACTIVE;
	/* Release: a drain that sees EXITED also sees every event published
	 * so far (belt and braces: head's own release covers them). Pairs
	 * with the acquire in slot_state() (slots.c). */
	atomic_compare_exchange_strong_explicit(&p->arena->desc[p->slot].state, &expect,
	                                        ADA_SLOT_EXITED, memory_order_release,
	                                        memory_order_relaxed);
	/* A drain asleep frees the slot (and takes the ring's last events)
	 * now, not at its next timer: the next thread finds it. */
	ada_shm_budget_ring(p->arena->budget);
}

static void producer_key_create(void)
{
	producer_key_ok = pthread_key_create(&producer_key, producer_thread_exit) == 0;
}

static void producer_register_exit(void)
{
	pthread_once(&producer_key_once, producer_key_create);
	if (producer_key_ok)
		pthread_setspecific(producer_key, (void *)1);
}

/* Our own state, read again from memory: a second `ada attach` zeroes a
 * stopped thread's producer state from the attaching thread
 * (agent_attach.c, attach_reset_producers), possibly while this thread
 * was stopped inside producer_wait(). It must then give up its event
 * (the finished recording's) instead of using the zeroed fields. */
static bool producer_was_reset(const struct ada_producer *p, const struct ada_arena *a)
{
	return *(struct ada_arena *const volatile *)&p->arena != a;
}

/* Rereads tail of slot in a (the caller's copies, not p's fields: see
 * producer_was_reset); true when there is room for `need` more events. */
static bool producer_room_at(struct ada_producer *p, struct ada_arena *a, uint32_t slot,
                             uint32_t need)
{
	struct ada_index_hdr *h = ring_index_hdr(a, slot);
	/* Pairs with the release store of tail in ada_index_ring_release():
	 * the drain has finished reading the events we may now overwrite. */
	uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
	p->room = tail + p->mask + 1;
	/* The fast path stops where the populated pages do, too, and at the
	 * next eighth of the ring: the chunk at which this thread looks
	 * whether the drain sleeps (producer_bell), from this cold path. */
	uint64_t chunk = producer_bell_chunk(p);
	uint64_t bell = (p->head | (chunk - 1)) + 1;
	uint64_t lim = p->room < p->pop_end ? p->room : p->pop_end;
	p->limit = p->ts_clock || p->wpend_end ? 0 : lim < bell ? lim : bell;
	return p->head + need <= p->room;
}

static bool producer_refresh_limit_at(struct ada_producer *p, struct ada_arena *a, uint32_t slot)
{
	return producer_room_at(p, a, slot, 1);
}

/* Rereads tail; true when there is room for one more event. */
static bool producer_refresh_limit(struct ada_producer *p)
{
	return producer_refresh_limit_at(p, p->arena, p->slot);
}

/* A claimed slot's detail ring is empty at 0 (ada_arena_slot_free
 * reset it); anything else is damage from the program, and the ring
 * starts again at 0 all the same (our own slot now: nobody else writes
 * head or oldest, and a drain that saw more finds head behind its `from`
 * and copies nothing until it restarts from 0). The first record enters
 * chunk 0 through the slow reserve (dstop == dpos). */
static void producer_detail_restart(struct ada_producer *p, struct ada_detail_hdr *dh)
{
	if (atomic_load_explicit(&dh->head, memory_order_relaxed) != 0 ||
	    atomic_load_explicit(&dh->oldest, memory_order_relaxed) != 0) {
		atomic_store_explicit(&dh->oldest, 0, memory_order_relaxed);
		atomic_store_explicit(&dh->head, 0, memory_order_relaxed);
	}
	p->dpos = p->dold = p->dstop = p->dcend = 0;
	p->dcount = 0;
	memset(p->dmark, 0, sizeof(p->dmark));
}

/* Where the new owner's populating of its detail ring starts (ring.h,
 * "The first lap's pages"): a slot its claim populated whole (no
 * recorder, or a spill slot) needs none; a lazy one goes on from what its
 * earlier owners of this process populated (the header's pop: ours, so
 * only bounded here). */
static void producer_detail_pop_start(struct ada_producer *p, struct ada_arena *a, uint32_t slot,
                                      struct ada_detail_hdr *dh)
{
	uint64_t pop = ring_slot_lazy(a, slot)
	                   ? atomic_load_explicit(&dh->pop, memory_order_relaxed)
	                   : p->dbytes;
	p->dpop = pop >= p->dbytes ? UINT64_MAX : pop;
	p->dpop_retry = 0;
}

/* Whether slot's index ring needs nothing more from its producer: its
 * pages exist and are mapped here. A lazy slot the recorder prepared
 * (drain_prep.c) has them only in the recorder's mapping: its producers
 * map them a chunk at a time over a lap (producer_populate), each chunk
 * one madvise where the first touch of each page would take a fault
 * (issue 32 item 1: 32 of them a request in bench/workloads'
 * `thread_start serve`, over each slot's first lap). A claim that
 * populated the whole slot (no recorder, a spill slot) did so here. */
static bool producer_pages_ready(const struct ada_arena *a, uint32_t slot, uint32_t pop)
{
	if (!(pop & (RING_POP_INDEX | RING_POP_PAGES)))
		return false;
	return (pop & RING_POP_MAPPED) || !ring_slot_lazy(a, slot);
}

static void producer_adopt(struct ada_producer *p, struct ada_arena *a, uint32_t slot, uint32_t tid)
{
	struct ada_index_hdr *h = ring_index_hdr(a, slot);
	p->arena = a;
	p->slot = slot;
	p->tid = tid;
	p->tid_call = tid | (uint64_t)ATF_EVENT_CALL << 32;
	p->tid_return = tid | (uint64_t)ATF_EVENT_RETURN << 32;
	p->events = ring_index_events(a, slot);
	p->mask = ring_slot_events(a, slot) - 1; /* a spill slot's ring is smaller */
	p->wpend_begin = p->wpend_end = 0;       /* a wait belongs to the ring it happened on */
	p->head_pub = &h->head;
	/* Our own slot now: nobody else writes head. */
	p->head = atomic_load_explicit(&h->head, memory_order_relaxed);
	p->ts_clock = a->cfg.timestamp_source == ADA_TS_CLOCK;
	p->lagging = 0;
	uint64_t dbytes = ring_slot_detail_bytes(a, slot);
	if (dbytes) {
		struct ada_detail_hdr *dh = ring_detail_hdr(a, slot);
		p->dwords = ring_detail_words(a, slot);
		p->dhead = &dh->head;
		p->doldest = &dh->oldest;
		p->dlost = &h->drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
		p->dbytes = dbytes;
		p->dshift = ada_detail_chunk_shift(dbytes);
		/* as ada_detail_max_record(): a chunk less the header word */
		p->dmax = (uint32_t)((1ull << p->dshift) - RING_DETAIL_HDR);
		p->dwait = a->cfg.detail_wait;
		p->ddecided = &dh->decided;
		p->dwaits = dh->wait_stat;
		p->dstall = UINT64_MAX; /* no wait has given up */
		producer_detail_restart(p, dh);
		producer_detail_pop_start(p, a, slot, dh);
	}
	/* Acquire: pairs with the release stores of the RING_POP_* bits (the
	 * recorder's or an earlier owner's): their pages are there. */
	uint32_t pop = atomic_load_explicit(&a->desc[slot].populated, memory_order_acquire);
	p->pop_left = producer_pages_ready(a, slot, pop) ? 0 : ring_slot_events(a, slot);
	p->pop_end = p->pop_left ? p->head : UINT64_MAX;
	if (p->pop_left) { /* where an earlier owner left its pages, when it makes sense */
		uint64_t end = atomic_load_explicit(&h->pop_end, memory_order_relaxed);
		uint64_t left = atomic_load_explicit(&h->pop_left, memory_order_relaxed);
		if (left && left <= p->pop_left && end >= p->head && end - p->head <= p->mask) {
			p->pop_end = end;
			p->pop_left = left;
		}
	}
	p->retry = 0;
	p->state = PRODUCER_OWNING;
	producer_refresh_limit(p);
}

/* The next chunk of a lazily claimed slot's index ring (ring_slot_populate
 * left it to us): PRODUCER_POP_FIRST events first, then as many as are
 * done so far (a short-lived thread populates little, a busy one makes
 * few calls), at most PRODUCER_POP_MAX at once. Once every page of the
 * ring is there -- ours, or the recorder's (drain_prep.c) -- the slot is
 * marked so for the next owner. False when the pages cannot be had
 * (/dev/shm full): the event is dropped and counted (no_slot, as a claim
 * without memory is), and the next PRODUCER_RETRY events are too before
 * the next try. Cold: one madvise per chunk. */
static bool producer_populate(struct ada_producer *p)
{
	struct ada_arena *a = p->arena;
	struct ada_slot_desc *d = &a->desc[p->slot];
	if (p->retry > 0) {
		p->retry--;
		ring_slot_drop(a, p->slot, ADA_LANE_INDEX, ADA_DROP_NO_SLOT);
		return false;
	}
	/* Acquire: pairs with the release in ada_arena_slot_prepare(). */
	uint32_t pop = atomic_load_explicit(&d->populated, memory_order_acquire);
	if (!producer_pages_ready(a, p->slot, pop)) {
		/* The pages exist (the recorder's): only map them here. */
		bool exist = (pop & (RING_POP_INDEX | RING_POP_PAGES)) != 0;
		uint64_t done = ring_slot_events(a, p->slot) - p->pop_left;
		uint64_t n = done < PRODUCER_POP_FIRST ? PRODUCER_POP_FIRST
		             : done > PRODUCER_POP_MAX ? PRODUCER_POP_MAX
		                                       : done;
		n = n < p->pop_left ? n : p->pop_left;
		int saved = errno; /* the program's: madvise's failure is ours */
		int rc = exist ? ring_map_events(a, p->slot, p->pop_end, n)
		               : ring_populate_events(a, p->slot, p->pop_end, n);
		errno = saved;
		if (rc != 0 && exist) { /* the first touches will map them */
			p->pop_left = 0;
			p->pop_end = UINT64_MAX;
			return true;
		}
		if (rc != 0) {
			p->retry = PRODUCER_RETRY;
			ring_slot_drop(a, p->slot, ADA_LANE_INDEX, ADA_DROP_NO_SLOT);
			return false;
		}
		p->pop_end += n;
		p->pop_left -= n;
		struct ada_index_hdr *h = ring_index_hdr(a, p->slot);
		atomic_store_explicit(&h->pop_end, p->pop_end, memory_order_relaxed);
		atomic_store_explicit(&h->pop_left, p->pop_left, memory_order_relaxed);
		if (p->pop_left)
			return true;
		/* Release: the pages above exist (and are mapped in this
		 * process) for the slot's next owner; pairs with the acquire
		 * loads in producer_adopt() and ring_slot_populate(). */
		atomic_fetch_or_explicit(&d->populated, RING_POP_INDEX | RING_POP_MAPPED,
		                         memory_order_release);
	}
	p->pop_left = 0;
	p->pop_end = UINT64_MAX;
	return true;
}

/* Whether the drain that stood still for the timeout is only slow: its
 * recorder process is there and not stopped by a signal. Cold: a few
 * raw system calls (ring_recorder_state). */
static bool producer_recorder_running(const struct ada_arena *a)
{
	return ring_recorder_state(a->rec_pid, a->rec_start) == RING_RECORDER_RUNNING;
}

/* WAIT policy with every slot taken: ask the drain to reclaim now and wait,
 * yielding. While some slot is EXITED (its thread gone, waiting for the
 * drain to finish its files), as long as the drain's heartbeat moves:
 * lossless like a full ring; a dead recorder costs one timeout. While
 * every slot belongs to a live thread, only as long as those threads show
 * progress (events, ends: ring_slots_progress): threads that hold their
 * slots and wait -- at a barrier for the very threads that want a slot --
 * never end, so after the drain timeout without progress the thread goes
 * on, its events dropped and counted (NO_SLOT), and claims again
 * PRODUCER_RETRY drops later. Never a wait for ever. */
static int producer_wait_for_slot(struct ada_arena *a, uint32_t tid)
{
	bool exited;
	uint64_t beat = ada_arena_heartbeat(a), since = producer_mono_ns();
	uint64_t prog = ring_slots_progress(a, &exited);
	if (atomic_load_explicit(&producer_dead_beat, memory_order_relaxed) == beat + 1 ||
	    atomic_load_explicit(&producer_stall_beat, memory_order_relaxed) == beat + 1)
		return -ENOSPC; /* another thread found the recorder gone or stopped */
	for (uint32_t n = 1;; n++) {
		atomic_store_explicit(&a->ctl->slot_wanted, 1, memory_order_relaxed);
		ada_shm_budget_ring(a->budget); /* a drain asleep: come and reclaim */
		sched_yield();
		int slot = ring_slot_claim(a, tid);
		if (slot != -ENOSPC)
			return slot;
		if (n % PRODUCER_YIELDS_PER_CLOCK)
			continue;
		uint64_t now = producer_mono_ns(), b = ada_arena_heartbeat(a);
		uint64_t p = ring_slots_progress(a, &exited);
		if (exited ? b != beat : p != prog) {
			beat = b;
			prog = p;
			since = now;
		} else if (now - since >=
		           atomic_load_explicit(&producer_lag_ns, memory_order_relaxed)) {
			if (exited && producer_recorder_running(a)) {
				since = now; /* a slow drain, not a dead one */
				continue;
			}
			if (exited) /* the drain did not free it: gone */
				atomic_store_explicit(&producer_dead_beat, b + 1,
				                      memory_order_relaxed);
			return -ENOSPC;
		}
	}
}

static bool producer_claim(struct ada_producer *p)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a)
		return false; /* not recording: nothing to count into */
	if (p->state == PRODUCER_NOSLOT && p->retry > 0) {
		p->retry--;
		ring_arena_drop(a, ADA_LANE_INDEX, ADA_DROP_NO_SLOT);
		return false;
	}
	uint32_t tid = (uint32_t)gettid();
	int slot = ring_slot_claim(a, tid);
	if (slot == -ENOSPC && a->cfg.overflow == ADA_OVERFLOW_WAIT)
		slot = producer_wait_for_slot(a, tid);
	if (slot < 0) {
		p->state = PRODUCER_NOSLOT;
		p->retry = PRODUCER_RETRY;
		ring_arena_drop(a, ADA_LANE_INDEX, ADA_DROP_NO_SLOT);
		return false;
	}
	producer_register_exit();
	producer_adopt(p, a, (uint32_t)slot, tid);
	return true;
}

static void producer_pause(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Drops this event: the drain's heartbeat has stood still for the timeout
 * and its recorder is gone (or unknown: lagging) or stopped by a signal
 * (stalled). Until the heartbeat moves, further full-ring events drop at
 * once. */
static bool producer_drain_lagging(struct ada_producer *p, struct ada_arena *a, uint32_t slot,
                                   uint64_t beat, bool stalled)
{
	_Atomic uint64_t *hint = stalled ? &producer_stall_beat : &producer_dead_beat;
	/* Stored only when it changes: every thread passes here for each
	 * event while the recorder is gone, and a store each time would
	 * bounce this line between their cores. */
	if (atomic_load_explicit(hint, memory_order_relaxed) != beat + 1)
		atomic_store_explicit(hint, beat + 1, memory_order_relaxed);
	p->lagging = !stalled;
	p->stalled = stalled;
	p->lag_beat = beat;
	ring_slot_drop(a, slot, ADA_LANE_INDEX, ADA_DROP_DRAIN_LAG);
	return false;
}

/* Counts one wait for ring space that began at t0 and returns `r`: in
 * the slot's index header (we are its only writer while we own it), for
 * the manifest, `ada status` and the summary line -- what the drain
 * running behind cost the program. Not after a fork reset the slot
 * (the parent's thread owns it). */
static bool producer_wait_counted(struct ada_producer *p, struct ada_arena *a, uint32_t slot,
                                  uint64_t t0, bool r)
{
	if (producer_was_reset(p, a))
		return r;
	uint64_t ns = producer_mono_ns() - t0;
	_Atomic uint64_t *w = ring_index_hdr(a, slot)->wait_stat;
	/* Relaxed: counters the drain shows, ordered with nothing. */
	atomic_store_explicit(&w[0], atomic_load_explicit(&w[0], memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	atomic_store_explicit(&w[1], atomic_load_explicit(&w[1], memory_order_relaxed) + ns,
	                      memory_order_relaxed);
	return r;
}

/* Writes one wait marker at head (the caller made room for it). */
static void producer_put_marker(struct ada_producer *p, uint64_t ts, uint32_t which)
{
	struct atf_index_event *e = &p->events[p->head & p->mask];
	e->timestamp_ns = ts;
	e->function_id = 0;
	e->thread_id = p->tid;
	e->event_kind = ATF_EVENT_EXCEPTION;
	e->call_depth = which;
	e->detail_seq = ATF_NO_DETAIL;
	p->head++;
}

/* A wait from raw0 to now that the ring has no room to mark: kept to be
 * marked before the next event that finds room (producer_pending_put).
 * A second one before then extends the first (the events between were
 * dropped, or there were none). */
static void producer_pend_wait(struct ada_producer *p, uint64_t raw0)
{
	if (!p->wpend_end)
		p->wpend_begin = raw0;
	p->wpend_end = ada_timestamp_raw(p);
	p->limit = 0; /* the next event comes to the slow path to write it */
}

/* Writes the pending wait's markers when the ring has room for them and
 * one event; true when none is left pending. */
static bool producer_pending_put(struct ada_producer *p, struct ada_arena *a, uint32_t slot)
{
	if (!p->wpend_end)
		return true;
	if (producer_was_reset(p, a) || !p->events || !producer_room_at(p, a, slot, 3))
		return false;
	producer_put_marker(p, p->wpend_begin, ADA_WAIT_MARKER_BEGIN);
	producer_put_marker(p, p->wpend_end, ADA_WAIT_MARKER_END);
	p->wpend_begin = p->wpend_end = 0;
	/* Orders the marker stores before the new head; pairs with the
	 * acquire load of head in ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, p->head, memory_order_release);
	producer_room_at(p, a, slot, 1); /* the fast path's limit again */
	return true;
}

/* The wait that began at raw time t0 ended with room for its markers and
 * the event that waited: the markers go in first, so the wait lies in the
 * trace between the event before it and the one that waited (whose time
 * is taken after the wait), inside the frames open around it; readers
 * take its length out of their durations (docs/format.md, "Wait
 * markers"). Not after a reset: the slot is not ours any more. */
static bool producer_wait_marked(struct ada_producer *p, struct ada_arena *a, uint32_t slot,
                                 uint64_t t0, uint64_t raw0)
{
	if (producer_was_reset(p, a))
		return false;
	producer_pending_put(p, a, slot); /* room for it was waited for too */
	producer_put_marker(p, raw0, ADA_WAIT_MARKER_BEGIN);
	producer_put_marker(p, ada_timestamp_raw(p), ADA_WAIT_MARKER_END);
	/* Orders the marker stores before the new head; pairs with the
	 * acquire load of head in ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, p->head, memory_order_release);
	return producer_wait_counted(p, a, slot, t0, true);
}

/* WAIT policy: spin, then yield, rereading tail, for as long as the drain
 * shows signs of life or its recorder runs (a heartbeat standing still on
 * a loaded machine is no death). Lossless while the recorder runs; a dead
 * or signal-stopped recorder costs each thread one timeout, then drops
 * without waiting. Every wait is counted with its duration
 * (producer_wait_counted) and, when it ends with room, marked in the
 * ring (producer_wait_marked). */
static bool producer_wait(struct ada_producer *p)
{
	struct ada_arena *a = p->arena;
	uint32_t slot = p->slot;
	uint64_t beat = ada_arena_heartbeat(a);
	if ((p->lagging && beat == p->lag_beat) ||
	    atomic_load_explicit(&producer_dead_beat, memory_order_relaxed) == beat + 1)
		return producer_drain_lagging(p, a, slot, beat, false);
	if ((p->stalled && beat == p->lag_beat) ||
	    atomic_load_explicit(&producer_stall_beat, memory_order_relaxed) == beat + 1)
		return producer_drain_lagging(p, a, slot, beat, true);
	p->lagging = p->stalled = 0;
	uint64_t t0 = producer_mono_ns(), raw0 = ada_timestamp_raw(p);
	for (uint32_t i = 0; i < PRODUCER_SPINS; i++) {
		producer_pause();
		if (producer_was_reset(p, a))
			return false;
		if (producer_room_at(p, a, slot, producer_wait_room(p)))
			return producer_wait_marked(p, a, slot, t0, raw0);
	}
	uint64_t since = producer_mono_ns();
	for (uint32_t n = 1;; n++) {
		sched_yield();
		if (producer_was_reset(p, a))
			return false;
		if (producer_room_at(p, a, slot, producer_wait_room(p)))
			return producer_wait_marked(p, a, slot, t0, raw0);
		if (n % PRODUCER_YIELDS_PER_CLOCK)
			continue;
		uint64_t now = producer_mono_ns(), b = ada_arena_heartbeat(a);
		if (b != beat) {
			beat = b;
			since = now;
		} else if (now - since >=
		           atomic_load_explicit(&producer_lag_ns, memory_order_relaxed)) {
			enum ring_recorder st = ring_recorder_state(a->rec_pid, a->rec_start);
			/* Running, but it removed our arena's name: it refused the
			 * arena (a reused pid) and will never drain it. */
			if (st == RING_RECORDER_RUNNING && !ring_arena_published(a))
				st = RING_RECORDER_GONE;
			if (st == RING_RECORDER_RUNNING) {
				since = now; /* slow, not dead: wait on */
				continue;
			}
			producer_pend_wait(p, raw0); /* marked once the ring has room */
			return producer_wait_counted(
			    p, a, slot, t0,
			    producer_drain_lagging(p, a, slot, beat, st == RING_RECORDER_STOPPED));
		}
	}
}

/* The drain's doorbell, from the cold path only: every event before this
 * one is published (head's release store), and so is a claim's slot
 * state; a drain that sleeps is woken (one syscall per sleep, whoever
 * rings first), one that is awake costs a fence and a load. */
static void producer_bell(struct ada_producer *p)
{
	struct ada_arena *a = p->state == PRODUCER_OWNING ? p->arena : NULL;
	/* An ADA_TS_CLOCK arena sends every event here: only at its chunks. */
	if (a && (!p->ts_clock || (p->head & (producer_bell_chunk(p) - 1)) == 0))
		ada_shm_budget_ring(a->budget);
}

bool ada_producer_slow(struct ada_producer *p)
{
	if (p->state != PRODUCER_OWNING && !producer_claim(p))
		return false;
	if (p->head >= p->pop_end && !producer_populate(p))
		return false;
	producer_bell(p); /* before a wait for room, too: the drain makes it */
	if (producer_refresh_limit(p) && producer_pending_put(p, p->arena, p->slot))
		return true;
	if (p->arena->cfg.overflow == ADA_OVERFLOW_DROP) {
		ring_slot_drop(p->arena, p->slot, ADA_LANE_INDEX, ADA_DROP_RING_FULL);
		return false;
	}
	return producer_wait(p);
}

void ada_producer_emit_slow(struct ada_producer *p, uint64_t function_id, uint32_t kind,
                            uint32_t depth)
{
	if (!ada_producer_slow(p))
		return;
	/* One read of each (producer_was_reset): zeroed after this, they
	 * still point into the old arena, which stays mapped. */
	struct atf_index_event *events = *(struct atf_index_event *volatile *)&p->events;
	_Atomic uint64_t *head_pub = *(_Atomic uint64_t *volatile *)&p->head_pub;
	if (!events || !head_pub)
		return;
	uint64_t head = p->head;
	struct atf_index_event *e = &events[head & p->mask];
	e->timestamp_ns = ada_timestamp_raw(p);
	e->function_id = function_id;
	e->thread_id = p->tid;
	e->event_kind = kind;
	e->call_depth = depth;
	e->detail_seq = ATF_NO_DETAIL;
	p->head = head + 1;
	/* Same as in ada_emit(): pairs with the acquire load of head in
	 * ada_index_ring_peek(). */
	atomic_store_explicit(head_pub, head + 1, memory_order_release);
}

/* Whether this thread's producer state is all zeros (never claimed a
 * slot), read word by word: no libc, nothing but the TLS block touched. */
ADA_FORK_PATH static bool producer_tls_zero(void)
{
	_Static_assert(sizeof(struct ada_producer) % sizeof(uint64_t) == 0, "whole words");
	const uint64_t *w = (const uint64_t *)&ada_producer_tls;
	uint64_t any = 0;
	for (size_t i = 0; i < sizeof(struct ada_producer) / sizeof(uint64_t); i++)
		any |= w[i];
	return any == 0;
}

ADA_FORK_PATH void ada_producer_reset_thread(void)
{
	/* A forked child's copy of the parent's slot must never be written:
	 * the parent thread still owns it. Each store only when needed: in a
	 * forked child a store copies its page (a fault) even when it
	 * writes what is there. */
	if (!producer_tls_zero())
		memset(&ada_producer_tls, 0, sizeof(ada_producer_tls));
	if (ada_producer_depth)
		ada_producer_depth = 0;
	/* pthread_once is done once any slot was claimed; before that there
	 * is no key and nothing to forget. */
	if (producer_key_ok && pthread_getspecific(producer_key))
		pthread_setspecific(producer_key, NULL);
}

/* Counts one wait that began at t0 in the slot (we are its only writer). */
static void detail_wait_count(struct ada_producer *p, uint64_t t0)
{
	uint64_t ns = producer_mono_ns() - t0;
	_Atomic uint64_t *w = p->dwaits;
	/* Relaxed: counters the drain shows, ordered with nothing. */
	atomic_store_explicit(&w[0], atomic_load_explicit(&w[0], memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	atomic_store_explicit(&w[1], atomic_load_explicit(&w[1], memory_order_relaxed) + ns,
	                      memory_order_relaxed);
}

/* A wait for detail room that began at raw time raw0 ended (with room or
 * giving up): its markers go into the index ring after the event whose
 * record waited (producer_wait_marked); when the index ring has no room
 * for both (not waited for here: a wait inside a wait), before the next
 * event that finds room (producer_pend_wait). */
static void detail_wait_marked(struct ada_producer *p, uint64_t raw0)
{
	struct ada_arena *a = p->arena;
	if (producer_was_reset(p, a) || !p->events)
		return;
	if (p->wpend_end || !producer_room_at(p, a, p->slot, 2)) {
		producer_pend_wait(p, raw0); /* after the pending one, in order */
		return;
	}
	producer_put_marker(p, raw0, ADA_WAIT_MARKER_BEGIN);
	producer_put_marker(p, ada_timestamp_raw(p), ADA_WAIT_MARKER_END);
	/* Orders the marker stores before the new head; pairs with the
	 * acquire load of head in ada_index_ring_peek(). */
	atomic_store_explicit(p->head_pub, p->head, memory_order_release);
}

/* The wait that began at t0 (0: none began; raw0 its raw time) ends, with
 * or without room: counted and marked either way. */
static bool detail_wait_done(struct ada_producer *p, uint64_t t0, uint64_t raw0, bool room)
{
	if (t0)
		detail_wait_count(p, t0);
	if (t0)
		detail_wait_marked(p, raw0);
	return room;
}

/* Gives up on the drain: its decided stood still for the timeout. */
static bool detail_wait_stalled(struct ada_producer *p, uint64_t dec, uint64_t t0, uint64_t raw0)
{
	p->dstall = dec;
	return detail_wait_done(p, t0, raw0, false);
}

bool ada_detail_wait_room(struct ada_producer *p, uint32_t len)
{
	struct ada_arena *a = p->arena;
	if (!a || !p->ddecided)
		return true;
	uint64_t beat = ada_arena_heartbeat(a);
	/* A recorder another thread found dead or stopped: do not wait at all. */
	if (atomic_load_explicit(&producer_dead_beat, memory_order_relaxed) == beat + 1 ||
	    atomic_load_explicit(&producer_stall_beat, memory_order_relaxed) == beat + 1)
		return detail_wait_stalled(
		    p, atomic_load_explicit(p->ddecided, memory_order_relaxed), 0, 0);
	ada_shm_budget_ring(a->budget); /* the drain decides: it must be awake */
	uint64_t t0 = producer_mono_ns(), raw0 = ada_timestamp_raw(p);
	for (uint32_t i = 0; i < PRODUCER_SPINS; i++) {
		producer_pause();
		if (producer_was_reset(p, a))
			return false; /* the slot is not ours any more: count nothing */
		if (!ada_detail_would_wait(p, len))
			return detail_wait_done(p, t0, raw0, true);
	}
	uint64_t dec = atomic_load_explicit(p->ddecided, memory_order_relaxed);
	uint64_t since = producer_mono_ns(), hb = ada_arena_heartbeat(a);
	for (uint32_t n = 1;; n++) {
		sched_yield();
		if (producer_was_reset(p, a))
			return false;
		if (!ada_detail_would_wait(p, len))
			return detail_wait_done(p, t0, raw0, true);
		if (n % PRODUCER_YIELDS_PER_CLOCK)
			continue;
		/* Bounded by the drain's progress on this ring, not by its
		 * heartbeat alone: a drain that beats but decides nothing more
		 * for this thread (its files failed, say) must not hold the
		 * program for ever. */
		uint64_t now = producer_mono_ns();
		uint64_t d = atomic_load_explicit(p->ddecided, memory_order_relaxed);
		if (d != dec) {
			dec = d;
			since = now;
			hb = ada_arena_heartbeat(a);
		} else if (now - since >=
		           atomic_load_explicit(&producer_lag_ns, memory_order_relaxed)) {
			/* The whole drain stood still (no heartbeat either) with
			 * its recorder running: starved, not stuck. */
			uint64_t b = ada_arena_heartbeat(a);
			if (b == hb && producer_recorder_running(a)) {
				since = now;
				continue;
			}
			return detail_wait_stalled(p, d, t0, raw0);
		}
	}
}

bool ada_detail_populate(struct ada_producer *p, uint32_t len)
{
	struct ada_arena *a = p->arena;
	if (!a || p->dpop == UINT64_MAX)
		return true;
	if (p->dpop_retry > 0) {
		p->dpop_retry--;
		ring_slot_drop(a, p->slot, ADA_LANE_DETAIL, ADA_DROP_NO_SLOT);
		return false;
	}
	uint64_t need = ADA_DETAIL_HDR_BYTES + (((uint64_t)len + 7) & ~7ull);
	uint64_t at = p->dpos + need > p->dcend ? p->dcend : p->dpos;
	uint64_t n = p->dpop < PRODUCER_DPOP_FIRST ? PRODUCER_DPOP_FIRST
	             : p->dpop > PRODUCER_DPOP_MAX ? PRODUCER_DPOP_MAX
	                                           : p->dpop;
	uint64_t end = p->dpop + n > at + need ? p->dpop + n : at + need;
	end = (end + 4095) & ~(uint64_t)4095;
	int saved = errno; /* the program's: madvise's failure is ours */
	int rc = ring_populate_detail(a, p->slot, p->dpop, end);
	errno = saved;
	if (rc != 0) {
		p->dpop_retry = PRODUCER_RETRY;
		ring_slot_drop(a, p->slot, ADA_LANE_DETAIL, ADA_DROP_NO_SLOT);
		return false;
	}
	/* Relaxed: read by the slot's next owner, which claims it after the
	 * drain freed it (ada_arena_slot_free's release store of FREE, after
	 * its acquire load of our EXITED, orders this before that claim). */
	atomic_store_explicit(&ring_detail_hdr(a, p->slot)->pop, end < p->dbytes ? end : p->dbytes,
	                      memory_order_relaxed);
	p->dpop = end < p->dbytes ? end : UINT64_MAX;
	p->dstop = p->dcend < p->dpop ? p->dcend : p->dpop;
	return true;
}

bool ada_detail_push(const void *rec, uint32_t len)
{
	struct ada_producer *p = &ada_producer_tls;
	if (p->state != PRODUCER_OWNING && !producer_claim(p))
		return false;
	if (len <= p->dmax && ada_unlikely(ada_detail_would_wait(p, len)))
		ada_detail_wait_room(p, len);
	if (len <= p->dmax && ada_unlikely(ada_detail_would_populate(p, len)) &&
	    !ada_detail_populate(p, len))
		return false; /* counted there */
	uint64_t end;
	_Atomic uint64_t *w = len <= p->dmax ? ada_detail_reserve(p, len, &end) : NULL;
	if (!w) {
		if (p->arena->cfg.detail_bytes)
			ring_slot_drop(p->arena, p->slot, ADA_LANE_DETAIL, ADA_DROP_RING_FULL);
		return false;
	}
	const uint8_t *src = rec;
	uint32_t off = 0, i = 0;
	for (; off + 8 <= len; off += 8, i++) {
		uint64_t v;
		memcpy(&v, src + off, 8);
		ada_detail_put(w, i, v);
	}
	if (off < len) {
		uint64_t v = 0; /* the tail, zero-padded, little-endian */
		memcpy(&v, src + off, len - off);
		ada_detail_put(w, i, v);
	}
	ada_detail_commit(p, end);
	return true;
}
