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
 * thread's tid (retire_put), and whoever next starts or ends a thread
 * unmaps those whose thread the kernel no longer knows (retire_reclaim).
 * A reused tid only delays that.
 *
 * Threads: any thread, concurrently, from its first traced call or its
 * exit destructor. The includer defines, before including this file:
 *   RETIRE_GONE(tid)   true when no thread tid exists any more in the
 *                      process (handlers.c: tgkill signal 0 gives ESRCH)
 *   RETIRE_UNMAP(addr) unmaps the mapping at addr
 *
 * Entry protocol: addr 0 = free; RETIRE_BUSY = claimed by one thread
 * (filling it, or checking and maybe unmapping it); anything else = a
 * mapping, published with its tid by the release store of addr. A
 * reclaimer claims an entry BEFORE it asks whether its thread is gone, and
 * puts it back if not: had it asked first and claimed after (a CAS from
 * the address it read), the entry could meanwhile have been reclaimed by
 * another thread, its address mapped again by the kernel for a new
 * thread's shadow stack and retired by that thread into the same entry
 * (retire_put takes the first free one): the CAS would succeed on the
 * same address (ABA) and unmap the new thread's stack while its teardown
 * still runs on it -- the program died of SIGSEGV under heavy load.
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

struct retire_table {
	struct {
		_Atomic uintptr_t addr;
		_Atomic int32_t tid;
	} e[RETIRE_SLOTS];
};

/* Unmaps the retired mappings whose threads are gone. */
static inline void retire_reclaim(struct retire_table *t)
{
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
		/* Relaxed: only a hint of which entries to claim; the CAS
		 * below is what orders. */
		uintptr_t a = atomic_load_explicit(&t->e[i].addr, memory_order_relaxed);
		if (a <= RETIRE_BUSY)
			continue;
		/* Claimed first (see the entry protocol: no ABA). Acquire:
		 * pairs with the release store of addr in retire_put() (and of
		 * a put-back below), so tid is the one published with a. */
		if (!atomic_compare_exchange_strong_explicit(
		        &t->e[i].addr, &a, RETIRE_BUSY, memory_order_acquire, memory_order_relaxed))
			continue;
		int32_t tid = atomic_load_explicit(&t->e[i].tid, memory_order_relaxed);
		if (!RETIRE_GONE(tid)) {
			/* Still in its teardown (or the tid is reused: later).
			 * Release: pairs with the next claimer's acquire CAS. */
			atomic_store_explicit(&t->e[i].addr, a, memory_order_release);
			continue;
		}
		RETIRE_UNMAP(a);
		/* Release: pairs with the CAS in retire_put() (the unmap is
		 * done before the entry is taken again). */
		atomic_store_explicit(&t->e[i].addr, 0, memory_order_release);
	}
}

/* Leaves the mapping at map, owned by thread tid, for retire_reclaim();
 * false when every entry is taken (the caller then unmaps it itself). */
static inline bool retire_put(struct retire_table *t, uintptr_t map, int32_t tid)
{
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
		uintptr_t z = 0;
		/* Acquire: pairs with the release of the free store in
		 * retire_reclaim() (the entry's old mapping is unmapped). */
		if (!atomic_compare_exchange_strong_explicit(
		        &t->e[i].addr, &z, RETIRE_BUSY, memory_order_acquire, memory_order_relaxed))
			continue;
		atomic_store_explicit(&t->e[i].tid, tid, memory_order_relaxed);
		/* Release: pairs with the acquire CAS in retire_reclaim(). */
		atomic_store_explicit(&t->e[i].addr, map, memory_order_release);
		return true;
	}
	return false;
}

#endif
