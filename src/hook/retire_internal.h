/*
 * Shadow stacks of ended threads, kept until their thread is gone (hook
 * context, cold path). Private to src/hook; the logic of handlers.c's
 * retired table, here so the unit test runs exactly this code with its
 * own "is the thread gone" and "unmap" (as shadow_internal.h does for the
 * shadow stack).
 *
 * A thread's exit destructor runs before glibc's own teardown of the
 * thread (freeing its malloc cache), whose calls are traced too, on that
 * same shadow stack: it cannot be unmapped there, and nothing runs later
 * on that thread. So the destructor leaves the mapping here with the
 * thread's tid (retire_put). Once the kernel no longer knows that tid,
 * the mapping is free: a thread that starts takes it as its own shadow
 * stack (retire_take) -- no mmap, no mprotect and no page faults on its
 * way to its first traced call, and no munmap (a TLB shootdown on every
 * CPU the process ran on) on the ended thread's -- and whoever next
 * starts or ends a thread unmaps those beyond RETIRE_KEEP, and those
 * whose stack had grown (retire_reclaim). A reused tid only delays that.
 *
 * Threads: any thread, concurrently, from its first traced call or its
 * exit destructor. The includer defines, before including this file:
 *   RETIRE_GONE(tid)   true when no thread tid exists any more in the
 *                      process (handlers.c: tgkill signal 0 gives ESRCH)
 *   RETIRE_UNMAP(addr) unmaps the mapping at addr
 *
 * Entry protocol: addr 0 = free; RETIRE_BUSY = claimed by one thread
 * (filling it, or checking and maybe taking or unmapping it); anything
 * else = a mapping (page-aligned) or-ed with RETIRE_GREW and
 * RETIRE_DEAD, published with its tid by the release store of addr. A
 * reclaimer (or taker) claims an entry BEFORE it asks whether its thread
 * is gone, and puts it back if not: had it asked first and claimed after
 * (a CAS from the address it read), the entry could meanwhile have been
 * reclaimed by another thread, its address mapped again by the kernel for
 * a new thread's shadow stack and retired by that thread into the same
 * entry (retire_put takes the first free one): the CAS would succeed on
 * the same address (ABA) and unmap (or hand out) the new thread's stack
 * while its teardown still runs on it -- the program died of SIGSEGV
 * under heavy load. RETIRE_DEAD is set only by the claimer that saw the
 * thread gone, on the entry it holds: nothing can retire into a held
 * entry, so the flag stays with that thread's mapping.
 */
#ifndef ADA_RETIRE_INTERNAL_H
#define ADA_RETIRE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef RETIRE_GONE
#error "define RETIRE_GONE(tid) before including retire_internal.h"
#endif
#ifndef RETIRE_UNMAP
#error "define RETIRE_UNMAP(addr) before including retire_internal.h"
#endif

#define RETIRE_SLOTS 256u
#define RETIRE_BUSY 1u
/* Flags in an entry's address: the mapping's usable part had grown past
 * a new stack's (unmapped, not reused: a reuser starts from the first
 * part, and the grown part's pages would stay for nothing); its thread
 * is known gone (no more tgkill for it). */
#define RETIRE_GREW 2u
#define RETIRE_DEAD 4u
#define RETIRE_FLAGS 7u
/* Mappings of gone threads kept for threads to come: a burst of ended
 * threads keeps this many (their few touched pages each), the rest are
 * unmapped. */
#define RETIRE_KEEP 16u

struct retire_table {
	struct {
		_Atomic uintptr_t addr;
		_Atomic int32_t tid;
	} e[RETIRE_SLOTS];
};

/* Claims entry i when it holds a mapping (*a: its address and flags);
 * false when it is free or held by another thread. Acquire: pairs with
 * the release stores of addr in retire_put() and retire_hold_back(), so
 * tid is the one published with *a. */
static inline bool retire_hold(struct retire_table *t, uint32_t i, uintptr_t *a)
{
	/* Relaxed: only a hint of which entries to claim; the CAS is what
	 * orders. */
	*a = atomic_load_explicit(&t->e[i].addr, memory_order_relaxed);
	return *a > RETIRE_BUSY &&
	       atomic_compare_exchange_strong_explicit(&t->e[i].addr, a, RETIRE_BUSY,
	                                               memory_order_acquire, memory_order_relaxed);
}

/* Puts a held entry back (a: the mapping and its flags). Release: pairs
 * with the next claimer's acquire CAS. */
static inline void retire_hold_back(struct retire_table *t, uint32_t i, uintptr_t a)
{
	atomic_store_explicit(&t->e[i].addr, a, memory_order_release);
}

/* Frees a held entry, whose mapping was taken or unmapped. Release: pairs
 * with the CAS in retire_put() (the unmap is done before the entry is
 * taken again). */
static inline void retire_hold_free(struct retire_table *t, uint32_t i)
{
	atomic_store_explicit(&t->e[i].addr, 0, memory_order_release);
}

/* Whether the held entry's thread is gone, *a gaining RETIRE_DEAD when it
 * is (asked of the kernel once per mapping). */
static inline bool retire_held_gone(struct retire_table *t, uint32_t i, uintptr_t *a)
{
	if (*a & RETIRE_DEAD)
		return true;
	if (!RETIRE_GONE(atomic_load_explicit(&t->e[i].tid, memory_order_relaxed)))
		return false;
	*a |= RETIRE_DEAD;
	return true;
}

/* A mapping whose thread is gone, to be the calling thread's shadow
 * stack (its first part usable, as a new one's); 0 when there is none.
 * Those known gone first: no system call for them. */
static inline uintptr_t retire_take(struct retire_table *t)
{
	for (uint32_t pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
			uintptr_t a = atomic_load_explicit(&t->e[i].addr, memory_order_relaxed);
			if (a <= RETIRE_BUSY || (a & RETIRE_GREW) ||
			    (pass == 0 && !(a & RETIRE_DEAD)) || !retire_hold(t, i, &a))
				continue;
			if (a & RETIRE_GREW || !retire_held_gone(t, i, &a)) {
				retire_hold_back(t, i, a); /* still in its teardown */
				continue;
			}
			retire_hold_free(t, i);
			return a & ~(uintptr_t)RETIRE_FLAGS;
		}
	}
	return 0;
}

/* Unmaps the retired mappings whose threads are gone, but for `keep` of
 * them (not grown) left for threads to come. */
static inline void retire_reclaim(struct retire_table *t, uint32_t keep)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
		uintptr_t a;
		if (!retire_hold(t, i, &a)) /* claimed first: no ABA */
			continue;
		if (!retire_held_gone(t, i, &a) || (!(a & RETIRE_GREW) && kept++ < keep)) {
			retire_hold_back(t, i,
			                 a); /* in its teardown (or the tid reused), or kept */
			continue;
		}
		RETIRE_UNMAP(a & ~(uintptr_t)RETIRE_FLAGS);
		retire_hold_free(t, i);
	}
}

/* Leaves the mapping at map (page-aligned; grew: its usable part is
 * bigger than a new one's), owned by thread tid, for retire_take() and
 * retire_reclaim(); false when every entry is taken (the caller then
 * unmaps it itself). */
static inline bool retire_put(struct retire_table *t, uintptr_t map, int32_t tid, bool grew)
{
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
		uintptr_t z = 0;
		/* Acquire: pairs with the release of the free store in
		 * retire_hold_free() (the entry's old mapping is gone). */
		if (!atomic_compare_exchange_strong_explicit(
		        &t->e[i].addr, &z, RETIRE_BUSY, memory_order_acquire, memory_order_relaxed))
			continue;
		atomic_store_explicit(&t->e[i].tid, tid, memory_order_relaxed);
		/* Release: pairs with the acquire CAS in retire_hold(). */
		atomic_store_explicit(&t->e[i].addr, map | (grew ? RETIRE_GREW : 0u),
		                      memory_order_release);
		return true;
	}
	return false;
}

#endif
