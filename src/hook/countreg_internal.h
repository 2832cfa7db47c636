/*
 * The registry of counting threads (agent_count.c): who may read a
 * thread's counters, and when its thread may flush and free them. Private
 * to src/hook; the protocol here so the unit test (test_agent_countreg.c)
 * runs exactly this code with threads and blocks of its own.
 *
 * An entry holds 0 (free), a registered thread's block (its counters'
 * address, 8-aligned), or one of the states below. Three parties:
 *   - the thread itself, at its exit (countreg_exit_take): it swaps its
 *     block for EXITING, adds its counters into the process's ended
 *     threads' totals and frees the entry (countreg_exit_done);
 *   - the final sum, at the process's exit (under agent.lock): it swaps a
 *     block for READING, reads it, and leaves DONE (the thread, ending
 *     later, then only unmaps: its counts are in the final sum);
 *   - the live snapshot (the budget thread, at most once a second, under
 *     agent.lock, so never at the same time as the final sum): it freezes
 *     every block (the block's address or-ed with LIVE), reads the ended
 *     threads' totals and the frozen blocks, and puts every address back.
 * A thread that finds its entry frozen or READING waits (pauses, bounded)
 * until it is its block again (and swaps it then) or DONE; past the bound
 * it leaves block and entry as they are, mapped: whoever reads the entry
 * later (the next snapshot, the final sum) reads its counts, so nothing is
 * lost or counted twice either way.
 *
 * Why every block is frozen before any is read, and the totals read
 * between the two: a block read and put back at once could be flushed
 * into the totals before they are read (counted twice); totals read
 * before the blocks could miss a thread that flushes in between (its
 * block gone, its flush not in what was read). With every block frozen
 * first, a thread's counts are in exactly one of the two: its block if it
 * was frozen, the totals if it ended before the pass reached its entry (a
 * pass that finds EXITING waits until the entry is free). The snapshot is
 * exact for the moment the pass ended, but for the running threads'
 * counts, which their own plain adds keep raising while they are read.
 *
 * The includer defines, before including this file:
 *   COUNTREG_PAUSE(spin)  what a waiter does in its spin-th wait (a CPU
 *                         relax, then yields: the reader is a thread of
 *                         the agent's own, which may be descheduled)
 * and may define COUNTREG_STEP() (nothing by default): what a reader does
 * between two entries (the unit test yields there, so that threads exit
 * in the middle of its passes), and COUNTREG_PEEKED() (nothing by
 * default): what a reader does between its look at an entry and its
 * claim (the unit test has the entry's thread exit there and a new one
 * register the same block address, as mmap gives back the pages just
 * unmapped).
 */
#ifndef ADA_COUNTREG_INTERNAL_H
#define ADA_COUNTREG_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef COUNTREG_PAUSE
#error "define COUNTREG_PAUSE(spin) before including countreg_internal.h"
#endif

#ifndef COUNTREG_STEP
#define COUNTREG_STEP() ((void)0)
#endif

#ifndef COUNTREG_PEEKED
#define COUNTREG_PEEKED() ((void)0)
#endif

#define COUNTREG_EXITING ((uintptr_t)1) /* its thread is adding it to the totals */
#define COUNTREG_READING ((uintptr_t)2) /* the final sum is reading it */
#define COUNTREG_DONE ((uintptr_t)3)    /* the final sum has read it */
#define COUNTREG_LIVE ((uintptr_t)1)    /* or-ed into a block: the live snapshot reads it */
/* Waits of a thread (or the snapshot) for an entry held by another, at
 * most: past 64 relaxes each pause yields, so this is seconds, far
 * beyond the microseconds the holder keeps it. */
#define COUNTREG_WAIT_MAX (1u << 20)

/* The block an entry names (frozen or not), 0 for a free entry or a state. */
static inline uintptr_t countreg_block(uintptr_t v)
{
	return v > COUNTREG_DONE ? v & ~COUNTREG_LIVE : 0;
}

enum countreg_exit {
	COUNTREG_EXIT_FLUSH, /* the entry is EXITING: flush, then countreg_exit_done */
	COUNTREG_EXIT_READ,  /* the final sum read the block: free it, flush nothing */
	COUNTREG_EXIT_KEEP,  /* held past the bound: leave block and entry alone */
};

/* The exiting thread's take of its entry e, whose block is me. */
static inline enum countreg_exit countreg_exit_take(_Atomic uintptr_t *e, uintptr_t me)
{
	for (uint32_t spin = 0; spin < COUNTREG_WAIT_MAX; spin++) {
		uintptr_t v = me;
		/* Acquire (both ways): pairs with the readers' release of the
		 * entry (the snapshot's put back, the final sum's DONE): their
		 * reads of the block happen before this thread zeroes or frees it. */
		if (atomic_compare_exchange_strong_explicit(
		        e, &v, COUNTREG_EXITING, memory_order_acquire, memory_order_acquire))
			return COUNTREG_EXIT_FLUSH;
		if (v == COUNTREG_DONE)
			return COUNTREG_EXIT_READ;
		COUNTREG_PAUSE(spin); /* frozen (me | LIVE) or READING: its reader puts it back */
	}
	return COUNTREG_EXIT_KEEP;
}

/* After the flush: the entry is free. Release: pairs with the readers'
 * acquire loads, which then see the totals with this thread's counts in. */
static inline void countreg_exit_done(_Atomic uintptr_t *e)
{
	atomic_store_explicit(e, 0, memory_order_release);
}

/* Claims entry e for a reader: its block (v), now marked as final's
 * READING or as the live snapshot's frozen v | LIVE; or 0 (free, a state,
 * already claimed, or EXITING past the bound). An entry found EXITING is
 * waited for: once free, that thread's counts are in the totals, which
 * the reader reads after its claims. */
static inline uintptr_t countreg_claim(_Atomic uintptr_t *e, bool final)
{
	for (uint32_t spin = 0; spin < COUNTREG_WAIT_MAX; spin++) {
		/* Acquire: pairs with countreg_exit_done's release (the flush
		 * is in the totals this reader reads next). */
		uintptr_t v = atomic_load_explicit(e, memory_order_acquire);
		if (v == COUNTREG_EXITING) {
			COUNTREG_PAUSE(spin);
			continue;
		}
		if (v <= COUNTREG_DONE || (v & COUNTREG_LIVE))
			return 0;
		COUNTREG_PEEKED();
		/* Acquire on success: pairs with countreg_exit_done's release
		 * too. Between the load above and this CAS the entry's thread
		 * may have flushed and freed it and a new thread registered a
		 * block at the same address (mmap gives the unmapped pages
		 * back): the CAS then succeeds on the new thread's value, and
		 * the totals read after it must hold the old one's flush.
		 * Relaxed on failure: the entry is read again (acquire). */
		uintptr_t mark = final ? COUNTREG_READING : v | COUNTREG_LIVE;
		if (atomic_compare_exchange_strong_explicit(e, &v, mark, memory_order_acquire,
		                                            memory_order_relaxed))
			return v;
	}
	return 0;
}

/* The live snapshot's freeze of entry e: the block frozen (to read, then
 * countreg_put_back), or 0. */
static inline uintptr_t countreg_freeze(_Atomic uintptr_t *e)
{
	return countreg_claim(e, false);
}

/* The snapshot is done with the block b frozen in e. Release: pairs with
 * countreg_exit_take's acquire CAS (the reads of the block happen before
 * its thread may zero and unmap it). */
static inline void countreg_put_back(_Atomic uintptr_t *e, uintptr_t b)
{
	atomic_store_explicit(e, b, memory_order_release);
}

/* The final sum's take of entry e: its block, now READING (to read, then
 * countreg_final_done), or 0 (free, read, or flushed: count_dead has it). */
static inline uintptr_t countreg_final_take(_Atomic uintptr_t *e)
{
	return countreg_claim(e, true);
}

/* The final sum has read entry e's block. Release: pairs with
 * countreg_exit_take's acquire (the block is read before its thread
 * frees it). */
static inline void countreg_final_done(_Atomic uintptr_t *e)
{
	atomic_store_explicit(e, COUNTREG_DONE, memory_order_release);
}

/* One counter of a block: one aligned 8-byte load, which no add of the
 * block's owner tears (x86_64, arm64): its count blocks' plain `add`
 * (x86_64/x86_emit_count.c, arm64/a64_count.c) may raise it meanwhile, so
 * the value is as of some moment of the read; a parked thread's is exact
 * (its stores long since visible: coherence). */
static inline uint64_t countreg_load(const uint64_t *n)
{
	return __atomic_load_n(n, __ATOMIC_RELAXED);
}

/* The live snapshot of nreg entries (under agent.lock, so never with the
 * final sum): every block frozen, then the totals dead, then each frozen
 * block read and put back; out[0..used) the sums. frozen: nreg indexes
 * of scratch. */
static inline void countreg_sum_live(_Atomic uintptr_t *reg, uint32_t nreg, _Atomic uint64_t *dead,
                                     uint32_t used, uint64_t *out, uint16_t *frozen)
{
	uint32_t nf = 0;
	for (uint32_t i = 0; i < nreg; i++) {
		if (countreg_freeze(&reg[i]))
			frozen[nf++] = (uint16_t)i;
		COUNTREG_STEP();
	}
	/* Relaxed: each flush in it was published by its entry's release of
	 * 0, which the freezes' acquire loads saw (or it comes later, from a
	 * thread that registered after the pass: not in the blocks read). */
	for (uint32_t c = 0; c < used; c++)
		out[c] = atomic_load_explicit(&dead[c], memory_order_relaxed);
	for (uint32_t k = 0; k < nf; k++) {
		_Atomic uintptr_t *e = &reg[frozen[k]];
		/* Relaxed: frozen, only this thread changes it. */
		uintptr_t b = countreg_block(atomic_load_explicit(e, memory_order_relaxed));
		for (uint32_t c = 0; c < used; c++)
			out[c] += countreg_load((const uint64_t *)b + c);
		countreg_put_back(e, b);
		COUNTREG_STEP();
	}
}

/* The final sum of nreg entries (the process's exit, under agent.lock):
 * each block taken, read and left DONE, then the totals added;
 * out[0..used) the sums. */
static inline void countreg_sum_final(_Atomic uintptr_t *reg, uint32_t nreg, _Atomic uint64_t *dead,
                                      uint32_t used, uint64_t *out)
{
	for (uint32_t c = 0; c < used; c++)
		out[c] = 0;
	for (uint32_t i = 0; i < nreg; i++) {
		uintptr_t b = countreg_final_take(&reg[i]);
		if (b) {
			for (uint32_t c = 0; c < used; c++)
				out[c] += countreg_load((const uint64_t *)b + c);
			countreg_final_done(&reg[i]);
		}
		COUNTREG_STEP();
	}
	/* Relaxed: every flush was published by its entry's release of 0,
	 * which the takes' acquire loads saw. */
	for (uint32_t c = 0; c < used; c++)
		out[c] += atomic_load_explicit(&dead[c], memory_order_relaxed);
}

#endif
