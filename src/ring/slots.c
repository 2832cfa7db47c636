/*
 * ada ring: slot life and the index ring's consumer side.
 *
 * Threads: ring_slot_claim() runs on a traced thread's first event (slow
 * path, any number of threads at once, lock-free by CAS). Everything else
 * here is the drain's (one consumer thread in the recorder), plus
 * `ada recover` on a dead process's leftover arena.
 *
 * Slot protocol (desc->state):
 *   FREE --CAS by a producer--> CLAIMING --store-release--> ACTIVE
 *   ACTIVE --thread-exit destructor / exec reopen--> EXITED
 *   EXITED --drain, ring empty, thread gone--> FREE (store-release)
 * Index positions head/tail are never reset: a reused slot's producer
 * continues from the head it finds, which equals tail (the ring is empty
 * when freed), so a drain that still holds an old tail stays consistent.
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring_internal.h"

static uint32_t slot_state(const struct ada_arena *a, uint32_t slot)
{
	/* Pairs with the release stores of state in ring_slot_claim(),
	 * ada_arena_slot_free() and the producer's exit destructor: a reader
	 * that sees ACTIVE sees tid, thread_seq and generation. */
	return atomic_load_explicit(&a->desc[slot].state, memory_order_acquire);
}

/* FREE -> CLAIMING -> ACTIVE for slot s, or false (taken meanwhile, or
 * *err: its pages could not be had). */
static bool slot_try_claim(struct ada_arena *a, uint32_t s, uint32_t tid, int *err)
{
	struct ada_slot_desc *d = &a->desc[s];
	uint32_t expect = ADA_SLOT_FREE;
	if (atomic_load_explicit(&d->state, memory_order_relaxed) != expect)
		return false;
	/* Acquire: pairs with the release store of FREE in
	 * ada_arena_slot_free(), so the drain's last tail and the zeroed
	 * counters are visible to the new owner. */
	if (!atomic_compare_exchange_strong_explicit(&d->state, &expect, RING_SLOT_CLAIMING,
	                                             memory_order_acquire, memory_order_relaxed))
		return false;
	int rc = ring_slot_populate(a, s);
	if (rc != 0) {
		/* No memory for the rings (/dev/shm full, or the ceiling for a
		 * spill slot): give the slot back; the caller counts a NO_SLOT
		 * drop. */
		atomic_store_explicit(&d->state, ADA_SLOT_FREE, memory_order_relaxed);
		*err = rc;
		return false;
	}
	atomic_store_explicit(&d->tid, tid, memory_order_relaxed);
	atomic_store_explicit(
	    &d->thread_seq,
	    atomic_fetch_add_explicit(&a->ctl->next_thread_seq, 1, memory_order_relaxed),
	    memory_order_relaxed);
	atomic_fetch_add_explicit(&d->generation, 1, memory_order_relaxed);
	atomic_store_explicit(&d->exec_orphaned, 0, memory_order_relaxed);
	atomic_store_explicit(&d->detail_span_ns, 0, memory_order_relaxed);
	/* The drain's loop bound covers s before s can be ACTIVE: relaxed,
	 * ordered before the state by the release below (a drain that sees
	 * ACTIVE and not yet the bound gets it at its next pass anyway). */
	uint32_t hw = atomic_load_explicit(&a->ctl->slots_hw, memory_order_relaxed);
	while (hw < s + 1 &&
	       !atomic_compare_exchange_weak_explicit(&a->ctl->slots_hw, &hw, s + 1,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
	/* Publishes tid/thread_seq/generation; pairs with slot_state(). */
	atomic_store_explicit(&d->state, ADA_SLOT_ACTIVE, memory_order_release);
	return true;
}

/* A free full slot whose pages are there already -- one the recorder
 * prepared ahead (ada_arena_slot_prepare) or a freed one (whose detail
 * ring's pages the recorder may still be populating, and whose index
 * ring's its earlier owner may have populated only in part:
 * ring_slot_populate) -- so that the thread's start waits for no page
 * allocation. The lowest
 * first: threads that come and go (a thread per request) then cycle
 * through a few slots and touch no more pages than they need; the
 * recorder prepares the lowest free slots too, so the search stops a few
 * past the highest slot ever claimed. -1: none (or taken meanwhile). */
static int slot_claim_ready(struct ada_arena *a, uint32_t tid)
{
	uint32_t n = a->cfg.max_threads;
	/* Relaxed: a loop bound; the claim's CAS carries the ordering. */
	uint32_t hw = atomic_load_explicit(&a->ctl->slots_hw, memory_order_relaxed);
	uint32_t span = hw + ADA_SLOT_SPARES < n ? hw + ADA_SLOT_SPARES : n;
	int err = 0;
	for (uint32_t s = 0; s < span; s++) {
		struct ada_slot_desc *d = &a->desc[s];
		/* Relaxed: hints; slot_try_claim() re-reads both in order. */
		if (atomic_load_explicit(&d->state, memory_order_relaxed) != ADA_SLOT_FREE ||
		    !(atomic_load_explicit(&d->populated, memory_order_relaxed) &
		      (RING_POP_PAGES | RING_POP_INDEX | RING_POP_HEADERS)))
			continue;
		if (slot_try_claim(a, s, tid, &err))
			return (int)s;
	}
	return -1;
}

/* A ready full slot (slot_claim_ready), else the lowest free full slot,
 * else the lowest free spill slot. Lowest first, not spread over the
 * slots (by tid, say): a process whose threads come and go before the
 * recorder has a spare ready -- its first threads, or one that starts
 * them faster than the drain frees them -- then reuses a few slots, whose
 * pages stay for their next owners, rather than scattering its threads
 * over slots the recorder must then populate and lock one by one (and
 * free with the arena). Threads starting at once each skip the slots
 * taken before them: a load each, a failed CAS at worst. */
int ring_slot_claim(struct ada_arena *a, uint32_t tid)
{
	int ready = slot_claim_ready(a, tid);
	if (ready >= 0)
		return ready;
	/* None ready: ask the drain to free ended threads' slots and prepare
	 * spares at its next pass rather than at its next reclaim round, so
	 * the next thread finds one (relaxed: a hint, as in
	 * producer_wait_for_slot). */
	if (!atomic_load_explicit(&a->ctl->slot_wanted, memory_order_relaxed))
		atomic_store_explicit(&a->ctl->slot_wanted, 1, memory_order_relaxed);
	int err = 0;
	for (uint32_t s = 0; s < a->nslots; s++) {
		if (slot_try_claim(a, s, tid, &err))
			return (int)s;
		if (err)
			return -ENOMEM;
	}
	return -ENOSPC;
}

uint64_t ring_slots_progress(const struct ada_arena *a, bool *any_exited)
{
	uint64_t sig = 0;
	*any_exited = false;
	uint32_t used = ring_slots_used(a);
	for (uint32_t s = 0; s < used; s++) {
		/* Relaxed: only a hint whether waiting can help; the claim's CAS
		 * carries the ordering. */
		uint32_t st = atomic_load_explicit(&a->desc[s].state, memory_order_relaxed);
		*any_exited |= st == ADA_SLOT_EXITED;
		sig += st + atomic_load_explicit(&a->desc[s].generation, memory_order_relaxed) +
		       atomic_load_explicit(&ring_index_hdr(a, s)->head, memory_order_relaxed);
	}
	return sig;
}

uint32_t ada_arena_max_threads(const struct ada_arena *a)
{
	return a->nslots;
}

uint64_t ada_arena_slot_events(const struct ada_arena *a, uint32_t slot)
{
	return slot < a->nslots ? ring_slot_events(a, slot) : 0;
}

void ada_arena_slot_info(const struct ada_arena *a, uint32_t slot, struct ada_slot_info *out)
{
	*out = (struct ada_slot_info){0};
	if (slot >= a->nslots)
		return;
	const struct ada_slot_desc *d = &a->desc[slot];
	uint32_t st = slot_state(a, slot);
	out->state = st == RING_SLOT_CLAIMING || st > ADA_SLOT_EXITED ? ADA_SLOT_FREE : st;
	out->tid = atomic_load_explicit(&d->tid, memory_order_relaxed);
	out->thread_seq = atomic_load_explicit(&d->thread_seq, memory_order_relaxed);
	out->generation = atomic_load_explicit(&d->generation, memory_order_relaxed);
	out->exec_orphaned = atomic_load_explicit(&d->exec_orphaned, memory_order_relaxed);
	out->detail_span_ns = atomic_load_explicit(&d->detail_span_ns, memory_order_relaxed);
	/* Free and never claimed (no RING_POP_* bit: every claim sets one):
	 * its header says 0 everywhere, and reading it would allocate a page
	 * of its ring (relaxed: a hint; one claimed meanwhile shows next
	 * time). */
	if (out->state == ADA_SLOT_FREE &&
	    !atomic_load_explicit(&d->populated, memory_order_relaxed))
		return;
	struct ada_index_hdr *h = ring_index_hdr(a, slot);
	/* Pairs with the release store of head in ada_emit(). */
	out->head = atomic_load_explicit(&h->head, memory_order_acquire);
	out->tail = atomic_load_explicit(&h->tail, memory_order_relaxed); /* ours */
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int r = 0; r < ADA_DROP_REASON_COUNT; r++)
			out->drops[l][r] =
			    atomic_load_explicit(&h->drops[l][r], memory_order_relaxed);
	out->fill_pct = ada_ring_fill_pct(out->head, out->tail, ring_slot_events(a, slot));
}

size_t ada_index_ring_peek(struct ada_arena *a, uint32_t slot,
                           const struct atf_index_event **events)
{
	*events = NULL;
	uint64_t head;
	if (slot >= a->nslots || ring_cons_head(a, slot, &head) != 0)
		return 0;
	uint64_t tail = a->cons[slot].tail;
	uint64_t cap = ring_slot_events(a, slot);
	uint64_t n = head - tail; /* <= cap: ring_cons_head() checked it */
	if (n == 0)
		return 0;
	uint64_t off = tail & (cap - 1);
	if (n > cap - off)
		n = cap - off; /* contiguous up to the wrap point */
	*events = ring_index_events(a, slot) + off;
	return (size_t)n;
}

size_t ada_index_ring_recent(const struct ada_arena *a, uint32_t slot, uint64_t head,
                             struct atf_index_event *out, size_t n)
{
	if (slot >= a->nslots)
		return 0;
	uint64_t cap = ring_slot_events(a, slot);
	if (n > cap / 2)
		n = (size_t)(cap / 2);
	if (n > head)
		n = (size_t)head;
	const struct atf_index_event *ev = ring_index_events(a, slot);
	for (size_t i = 0; i < n; i++)
		out[i] = ev[(head - n + i) & (cap - 1)];
	return n;
}

void ada_index_ring_release(struct ada_arena *a, uint32_t slot, size_t n)
{
	if (slot >= a->nslots || n == 0 || ada_slot_fault(a, slot, NULL))
		return;
	struct ring_consumer *c = &a->cons[slot];
	if (n > c->head - c->tail)
		n = (size_t)(c->head - c->tail); /* never past what was published */
	c->tail += n;
	/* Our reads of the consumed events happen before the producer may
	 * overwrite them; pairs with the acquire load of tail in
	 * producer_refresh_limit() (producer.c). */
	atomic_store_explicit(&ring_index_hdr(a, slot)->tail, c->tail, memory_order_release);
}

static void slot_fold_drops(struct ada_arena *a, uint32_t slot)
{
	struct ada_index_hdr *h = ring_index_hdr(a, slot);
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int r = 0; r < ADA_DROP_REASON_COUNT; r++) {
			uint64_t v =
			    atomic_exchange_explicit(&h->drops[l][r], 0, memory_order_relaxed);
			atomic_fetch_add_explicit(&a->ctl->drops[l][r], v, memory_order_relaxed);
		}
}

int ada_arena_slot_free(struct ada_arena *a, uint32_t slot)
{
	if (slot >= a->nslots)
		return -EINVAL;
	uint64_t head;
	if (slot_state(a, slot) != ADA_SLOT_EXITED || ring_cons_head(a, slot, &head) != 0 ||
	    head != a->cons[slot].tail)
		return -EBUSY;
	slot_fold_drops(a, slot);
	/* The next owner's waits start from 0 (the drain took this thread's
	 * when it finalized it). */
	_Atomic uint64_t *iw = ring_index_hdr(a, slot)->wait_stat;
	atomic_store_explicit(&iw[0], 0, memory_order_relaxed);
	atomic_store_explicit(&iw[1], 0, memory_order_relaxed);
	if (ring_slot_detail_bytes(a, slot)) {
		/* A new owner starts with an empty detail ring at position 0
		 * (no producer exists now, so the drain may write both). */
		struct ada_detail_hdr *dh = ring_detail_hdr(a, slot);
		atomic_store_explicit(&dh->oldest, 0, memory_order_relaxed);
		atomic_store_explicit(&dh->head, 0, memory_order_relaxed);
		atomic_store_explicit(&dh->decided, 0, memory_order_relaxed);
		atomic_store_explicit(&dh->wait_stat[0], 0, memory_order_relaxed);
		atomic_store_explicit(&dh->wait_stat[1], 0, memory_order_relaxed);
	}
	ring_cons_freed(a, slot);
	/* Publishes the zeroed counters and the drained tail to the next
	 * owner; pairs with the acquire CAS in ring_slot_claim(). */
	atomic_store_explicit(&a->desc[slot].state, ADA_SLOT_FREE, memory_order_release);
	return 0;
}

bool ada_arena_slot_reclaimable(struct ada_arena *a, uint32_t slot)
{
	struct ada_slot_info si;
	if (ada_slot_read_checked(a, slot, &si) != 0 || si.state != ADA_SLOT_EXITED ||
	    si.head != si.tail)
		return false;
	if (si.exec_orphaned)
		return true;
	/* Signal 0 checks existence only; tgkill also checks the thread
	 * group, so a tid recycled by another process reads as gone. A tid
	 * recycled inside this process only delays the free. EPERM means
	 * the thread exists. The pid is the one read at open. */
	return syscall(SYS_tgkill, (long)a->pid, (long)si.tid, 0) != 0 && errno == ESRCH;
}

uint32_t ada_arena_slot_fill_pct(const struct ada_arena *a, uint32_t slot)
{
	if (slot >= a->nslots)
		return 0;
	/* Pairs with the release store of head in ada_emit(); clamped to
	 * 100 by ada_ring_fill_pct() whatever the shared head says. */
	uint64_t head = atomic_load_explicit(&ring_index_hdr(a, slot)->head, memory_order_acquire);
	return ada_ring_fill_pct(head, a->cons[slot].tail, ring_slot_events(a, slot));
}

bool ada_arena_above_high_watermark(const struct ada_arena *a, uint32_t slot)
{
	return ada_arena_slot_fill_pct(a, slot) >= a->cfg.high_watermark_pct;
}

bool ada_arena_take_slot_wanted(struct ada_arena *a)
{
	if (!atomic_load_explicit(&a->ctl->slot_wanted, memory_order_relaxed))
		return false;
	/* Only a hint to reclaim early; the slot states carry the ordering. */
	return atomic_exchange_explicit(&a->ctl->slot_wanted, 0, memory_order_relaxed) != 0;
}

uint64_t ada_arena_exited_sig(const struct ada_arena *a, uint32_t used)
{
	uint64_t sig = 0;
	bool any = false;
	used = used < a->nslots ? used : a->nslots;
	for (uint32_t s = 0; s < used; s++) {
		/* Relaxed: a hint when to reclaim; drain_reclaim reads each slot
		 * again with acquire (slot_state) before it frees one. */
		if (atomic_load_explicit(&a->desc[s].state, memory_order_relaxed) !=
		    ADA_SLOT_EXITED)
			continue;
		uint64_t gen = atomic_load_explicit(&a->desc[s].generation, memory_order_relaxed);
		sig += ((uint64_t)(s + 1) << 32 | gen) * 0x9E3779B97F4A7C15ull;
		any = true;
	}
	return sig || !any ? sig : 1;
}

void ada_arena_slot_set_detail_span(struct ada_arena *a, uint32_t slot, uint64_t span_ns)
{
	if (slot < a->nslots) /* relaxed: a statistic, read alone */
		atomic_store_explicit(&a->desc[slot].detail_span_ns, span_ns, memory_order_relaxed);
}
