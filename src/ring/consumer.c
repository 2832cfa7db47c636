/*
 * ada ring: the consumer's trust boundary. Every value the drain (or
 * `ada recover`) takes from a slot's shared bytes enters here, is checked
 * once against what the protocol allows, and is remembered in the
 * handle's private struct ring_consumer; a slot that breaks the protocol
 * is quarantined and never read again.
 *
 * Threads: the drain thread of the recorder (or single-threaded `ada
 * recover`); one consumer per handle. The producer side never calls this.
 *
 * What is checked, and why it cannot be a false alarm for an honest
 * producer (the protocol is in ring.h and slots.c):
 *   - tail: only the consumer stores it, so the shared tail always equals
 *     the private one; anything else is a scribble ("tail moved").
 *   - head: the producer only adds to it, and never past tail + capacity
 *     (it rereads tail before it may overwrite), so head never goes back
 *     and head - tail <= capacity.
 *   - state: FREE, CLAIMING, ACTIVE or EXITED; ACTIVE/EXITED never turn
 *     FREE except through ada_arena_slot_free() (ours), EXITED never turns
 *     ACTIVE again.
 *   - identity: tid, thread_seq and generation are stored before the
 *     release store of ACTIVE and never change while the slot is owned; a
 *     new owner after our free has generation + 1; a tid is 1..PID_MAX.
 * Values seen while a slot is FREE or CLAIMING are not remembered: a
 * claim in progress may already have bumped the generation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "ring_internal.h"

#define CONS_UNSEEN 0xffu       /* before the first look at the slot */
#define CONS_PID_MAX (1u << 22) /* PID_MAX_LIMIT on 64-bit Linux */

/* Seeds the consumer state of slots [cons_ready, n): the one read of the
 * shared tail we accept as it is -- where a previous consumer (a recorder
 * that died) left it; 0 below cons_fresh (the arena was made here). Slots past the arena's used
 * count are seeded when they first come into use, so the drain never touches the pages of spill
 * slots no thread claimed. */
static void cons_seed(struct ada_arena *a, uint32_t n)
{
	for (uint32_t s = a->cons_ready; s < n && s < a->nslots; s++) {
		struct ring_consumer *c = &a->cons[s];
		/* A slot never claimed has tail 0, and reading it would fault
		 * in (allocate) a page of its ring: every traced process's
		 * arena has max_threads of them. A target that claims otherwise
		 * is caught by the head check (the shared tail must be ours). */
		bool unclaimed = s < a->cons_fresh ||
		                 !atomic_load_explicit(&a->desc[s].populated, memory_order_relaxed);
		c->tail = unclaimed ? 0
		                    : atomic_load_explicit(&ring_index_hdr(a, s)->tail,
		                                           memory_order_relaxed);
		c->head = c->tail;
		c->state = CONS_UNSEEN;
		a->cons_ready = s + 1;
	}
}

/* A forked child's consumer entries of its parent's arena (advised
 * MADV_WIPEONFORK before the fork: zero pages here, as a new mapping's),
 * kept by ring_consumers_keep for the child's own arena: no munmap and
 * mmap of the same size. Set-up path only (the child's one thread). */
static struct {
	void *m;
	size_t bytes;
} cons_spare;

ADA_FORK_PATH static size_t cons_bytes(const struct ada_arena *a)
{
	size_t bytes = (size_t)a->nslots * sizeof(*a->cons);
	return bytes ? bytes : 1;
}

/* fresh: the arena was just made here, so every shared tail is 0 and
 * seeding need not read one (each read would fault in, and allocate, a
 * page of a slot no thread may ever claim).
 * Mapped, not calloc'ed: the entries are zero pages until a slot is
 * seeded, so a forked child's new arena (which only produces) pays no
 * memset of an entry per slot -- a MiB at the default sizes, which
 * malloc hands out from the heap (and clears) once it saw a free of that
 * size, as the child's own close of its parent's arena is. */
ADA_FORK_PATH int ring_consumers_init(struct ada_arena *a, bool fresh)
{
	size_t bytes = cons_bytes(a);
	void *m = cons_spare.bytes == bytes ? cons_spare.m : NULL;
	a->cons_wiped = m != NULL; /* advised already: the flag stays with the mapping */
	if (!m) {
		ring_consumers_drop_spare();
		m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	cons_spare.m = NULL;
	cons_spare.bytes = 0;
	if (m == MAP_FAILED)
		return -ENOMEM;
	a->cons = m;
	a->cons_ready = 0;
	a->hw_seen = 0;
	uint32_t used = ring_slots_used(a);
	a->hw_seen = used;
	/* Made here: seeded when first looked at, as it would be now (tail
	 * 0), so that a process that only produces (a forked child) writes
	 * none of the entries' pages. An entry not seeded is never read as
	 * seeded: every reader seeds it, or stops at cons_ready. */
	if (fresh)
		a->cons_fresh = used;
	else
		cons_seed(a, used);
	return 0;
}

ADA_FORK_PATH void ring_consumers_free(struct ada_arena *a)
{
	if (a->cons)
		munmap(a->cons, cons_bytes(a));
	a->cons = NULL;
}

bool ring_consumers_wipe_on_fork(struct ada_arena *a)
{
#ifdef MADV_WIPEONFORK
	if (!a->cons_wiped && a->cons)
		a->cons_wiped = madvise(a->cons, cons_bytes(a), MADV_WIPEONFORK) == 0;
#endif
	return a->cons_wiped;
}

ADA_FORK_PATH void ring_consumers_keep(struct ada_arena *a)
{
	if (!a->cons || !a->cons_wiped)
		return;
	ring_consumers_drop_spare();
	cons_spare.m = a->cons;
	cons_spare.bytes = cons_bytes(a);
	a->cons = NULL;
}

ADA_FORK_PATH void ring_consumers_drop_spare(void)
{
	if (cons_spare.m)
		munmap(cons_spare.m, cons_spare.bytes);
	cons_spare.m = NULL;
	cons_spare.bytes = 0;
}

uint32_t ada_arena_slots_used(struct ada_arena *a)
{
	uint32_t v = ring_slots_used(a); /* clamped to nslots, never below hw_seen */
	a->hw_seen = v;
	cons_seed(a, v);
	return v;
}

static int cons_fault(struct ada_arena *a, uint32_t slot, enum ada_ring_fault code, uint64_t x,
                      uint64_t y, uint64_t z)
{
	struct ring_consumer *c = &a->cons[slot];
	if (c->fault.code == ADA_FAULT_NONE)
		c->fault = (struct ada_slot_fault){.code = code, .x = x, .y = y, .z = z};
	return -EPROTO;
}

void ada_slot_quarantine(struct ada_arena *a, uint32_t slot, enum ada_ring_fault code, uint64_t x,
                         uint64_t y, uint64_t z)
{
	if (slot < a->nslots)
		cons_fault(a, slot, code, x, y, z);
}

bool ada_slot_fault(const struct ada_arena *a, uint32_t slot, struct ada_slot_fault *out)
{
	if (slot >= a->nslots || a->cons[slot].fault.code == ADA_FAULT_NONE)
		return false;
	if (out)
		*out = a->cons[slot].fault;
	return true;
}

uint64_t ada_slot_unconsumed(const struct ada_arena *a, uint32_t slot)
{
	if (slot >= a->nslots)
		return 0;
	return a->cons[slot].head - a->cons[slot].tail;
}

bool ada_arena_idle(const struct ada_arena *a)
{
	/* The doorbell's fences order this look after the drain's ASLEEP
	 * (ada_shm_budget_bell_arm). Acquire: pairs with the release store
	 * of the state in arena_set_state(); slot_wanted relaxed, a hint
	 * (ada_arena_take_slot_wanted). */
	if (atomic_load_explicit(&a->ctl->process_state, memory_order_acquire) !=
	        ADA_PROC_RUNNING ||
	    atomic_load_explicit(&a->ctl->slot_wanted, memory_order_relaxed) != 0)
		return false; /* ending, or a thread waits for a slot */
	uint32_t used = ring_slots_used(a);
	if (used != a->hw_seen || used > a->cons_ready)
		return false; /* a slot above the ones seen was claimed */
	for (uint32_t s = 0; s < used; s++) {
		const struct ring_consumer *c = &a->cons[s];
		if (c->fault.code != ADA_FAULT_NONE)
			continue; /* quarantined: never read again */
		/* Pairs with the release stores of state in ring_slot_claim()
		 * and the producer's exit destructor. */
		uint32_t st = atomic_load_explicit(&a->desc[s].state, memory_order_acquire);
		uint32_t seen = st == RING_SLOT_CLAIMING ? ADA_SLOT_FREE : st;
		if (seen != c->state)
			return false; /* claimed, ended or scribbled: a pass looks */
		if (st == ADA_SLOT_FREE)
			continue;
		/* Pairs with the release store of head in ada_emit(). */
		if (atomic_load_explicit(&ring_index_hdr(a, s)->head, memory_order_acquire) !=
		    c->head)
			return false;
	}
	return true;
}

/* The head check: shared tail untouched, head monotonic and within one
 * ring of what was consumed. 0 and *head, or -EPROTO (quarantined). */
int ring_cons_head(struct ada_arena *a, uint32_t slot, uint64_t *head)
{
	cons_seed(a, slot + 1);
	struct ring_consumer *c = &a->cons[slot];
	if (c->fault.code != ADA_FAULT_NONE)
		return -EPROTO;
	struct ada_index_hdr *h = ring_index_hdr(a, slot);
	uint64_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed); /* ours */
	if (tail != c->tail)
		return cons_fault(a, slot, ADA_FAULT_TAIL_MOVED, tail, c->tail, 0);
	/* Pairs with the release store of head in ada_emit(): the events in
	 * [tail, head) are fully written once we see head. */
	uint64_t v = atomic_load_explicit(&h->head, memory_order_acquire);
	if (v < c->head)
		return cons_fault(a, slot, ADA_FAULT_HEAD_BACK, v, c->head, 0);
	uint64_t cap = ring_slot_events(a, slot);
	if (v - c->tail > cap)
		return cons_fault(a, slot, ADA_FAULT_HEAD_AHEAD, v, c->tail, cap);
	c->head = v;
	*head = v;
	return 0;
}

/* State and identity of an owned slot (ACTIVE or EXITED) against what we
 * saw before. */
static int cons_check_owner(struct ada_arena *a, uint32_t slot, uint32_t st,
                            const struct ada_slot_info *si)
{
	struct ring_consumer *c = &a->cons[slot];
	if (si->tid == 0 || si->tid > CONS_PID_MAX)
		return cons_fault(a, slot, ADA_FAULT_TID, si->tid, 0, 0);
	bool owned_before = c->state == ADA_SLOT_ACTIVE || c->state == ADA_SLOT_EXITED;
	if (owned_before) {
		if (c->state == ADA_SLOT_EXITED && st == ADA_SLOT_ACTIVE)
			return cons_fault(a, slot, ADA_FAULT_TRANSITION, c->state, st, 0);
		if (si->generation != c->generation || si->thread_seq != c->thread_seq ||
		    si->tid != c->tid)
			return cons_fault(a, slot, ADA_FAULT_IDENTITY, si->generation,
			                  c->generation, si->tid);
	} else if (c->gen_known && si->generation != c->generation + 1) {
		/* A new owner after our free: exactly one claim happened. */
		return cons_fault(a, slot, ADA_FAULT_IDENTITY, si->generation, c->generation + 1,
		                  si->tid);
	}
	c->generation = si->generation;
	c->thread_seq = si->thread_seq;
	c->tid = si->tid;
	c->gen_known = true;
	return 0;
}

static void cons_load_desc(const struct ada_arena *a, uint32_t slot, struct ada_slot_info *out)
{
	const struct ada_slot_desc *d = &a->desc[slot];
	/* Relaxed: the acquire load of state before us orders them (see
	 * slot_state() in slots.c). */
	out->tid = atomic_load_explicit(&d->tid, memory_order_relaxed);
	out->thread_seq = atomic_load_explicit(&d->thread_seq, memory_order_relaxed);
	out->generation = atomic_load_explicit(&d->generation, memory_order_relaxed);
	out->exec_orphaned = atomic_load_explicit(&d->exec_orphaned, memory_order_relaxed) != 0;
}

/* The drain visits every full slot (--max-threads of them) each pass;
 * for one that is free, as it was at the last full read, that read would
 * clear its 224-byte out (a rep stos: 2-3 % of the drain's samples on
 * fib) only to say FREE again. One load of the shared state instead. */
bool ada_slot_idle(const struct ada_arena *a, uint32_t slot)
{
	if (slot >= a->cons_ready)
		return false; /* not seeded yet: the full read seeds it */
	const struct ring_consumer *c = &a->cons[slot];
	if (c->state != ADA_SLOT_FREE || c->fault.code != ADA_FAULT_NONE)
		return false;
	/* Relaxed: nothing is read after a FREE; a claim published
	 * meanwhile (the release store of ACTIVE in slot_try_claim()) is
	 * seen by this load or by the next pass's, as by the acquire load
	 * in ada_slot_read_checked(), which reads the rest. */
	return atomic_load_explicit(&a->desc[slot].state, memory_order_relaxed) == ADA_SLOT_FREE;
}

int ada_slot_read_checked(struct ada_arena *a, uint32_t slot, struct ada_slot_info *out)
{
	*out = (struct ada_slot_info){0};
	if (slot >= a->nslots)
		return -EINVAL;
	cons_seed(a, slot + 1);
	struct ring_consumer *c = &a->cons[slot];
	if (c->fault.code != ADA_FAULT_NONE)
		return -EPROTO;
	/* Pairs with the release stores of state in ring_slot_claim(), the
	 * producer's exit destructor and ada_arena_slot_free(). */
	uint32_t st = atomic_load_explicit(&a->desc[slot].state, memory_order_acquire);
	if (st > RING_SLOT_CLAIMING)
		return cons_fault(a, slot, ADA_FAULT_STATE, st, 0, 0);
	out->head = out->tail = c->tail;
	if (st == ADA_SLOT_FREE || st == RING_SLOT_CLAIMING) {
		if (c->state == ADA_SLOT_ACTIVE || c->state == ADA_SLOT_EXITED)
			return cons_fault(a, slot, ADA_FAULT_TRANSITION, c->state, ADA_SLOT_FREE,
			                  0);
		c->state = ADA_SLOT_FREE;
		out->state = ADA_SLOT_FREE;
		return 0;
	}
	cons_load_desc(a, slot, out);
	int rc = cons_check_owner(a, slot, st, out);
	if (rc == 0)
		rc = ring_cons_head(a, slot, &out->head);
	if (rc)
		return rc;
	c->state = st;
	out->state = st;
	struct ada_index_hdr *h = ring_index_hdr(a, slot);
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
			out->drops[l][r] =
			    atomic_load_explicit(&h->drops[l][r], memory_order_relaxed);
	out->fill_pct = ada_ring_fill_pct(out->head, out->tail, ring_slot_events(a, slot));
	return 0;
}

/* After ada_arena_slot_free(): the next owner must come with generation + 1. */
void ring_cons_freed(struct ada_arena *a, uint32_t slot)
{
	a->cons[slot].state = ADA_SLOT_FREE;
}

static const char *cons_event_field(uint64_t why)
{
	switch (why) {
	case ADA_EVENT_BAD_KIND:
		return "event_kind";
	case ADA_EVENT_BAD_THREAD:
		return "thread_id";
	case ADA_EVENT_BAD_DETAIL:
		return "detail_seq";
	case ADA_EVENT_BAD_DEPTH:
		return "call_depth";
	default:
		return "timestamp";
	}
}

int ada_slot_fault_text(const struct ada_slot_fault *f, char *buf, size_t cap)
{
	unsigned long long x = f->x, y = f->y, z = f->z;
	switch (f->code) {
	case ADA_FAULT_STATE:
		return snprintf(buf, cap,
		                "its slot state is %llu, which the ring protocol does not know", x);
	case ADA_FAULT_TRANSITION:
		return snprintf(
		    buf, cap,
		    "its slot went from state %llu to %llu, a step the ring protocol forbids", x,
		    y);
	case ADA_FAULT_IDENTITY:
		return snprintf(
		    buf, cap,
		    "its slot's generation became %llu (expected %llu) or its tid or thread "
		    "number changed while it owned the slot",
		    x, y);
	case ADA_FAULT_TID:
		return snprintf(buf, cap, "its slot claims tid %llu, outside 1..%u", x,
		                CONS_PID_MAX);
	case ADA_FAULT_HEAD_BACK:
		return snprintf(buf, cap, "its ring head went back from %llu to %llu", y, x);
	case ADA_FAULT_HEAD_AHEAD:
		return snprintf(
		    buf, cap,
		    "its ring head %llu is more than the ring's %llu events past what was "
		    "consumed (%llu)",
		    x, z, y);
	case ADA_FAULT_TAIL_MOVED:
		return snprintf(buf, cap,
		                "its ring tail was moved to %llu by the program (only the recorder "
		                "moves it; it was %llu)",
		                x, y);
	case ADA_FAULT_EVENT:
		return snprintf(buf, cap, "event %llu of its ring has an impossible %s (%llu)", x,
		                cons_event_field(y), z);
	case ADA_FAULT_SEQ_REUSED:
		return snprintf(buf, cap,
		                "its slot claims thread number %llu, which another thread of the "
		                "process already has",
		                x);
	case ADA_FAULT_MAPPING:
		return snprintf(buf, cap,
		                "its arena file shrank to %llu bytes (it needs %llu): the pages "
		                "are gone",
		                x, y);
	default:
		return snprintf(buf, cap, "no fault");
	}
}
