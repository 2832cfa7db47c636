/*
 * The registry of counting threads (src/hook/countreg_internal.h): the
 * same inline functions agent_count.c runs, with threads and blocks of
 * the test's own. Workers register a block, count a known number of
 * calls into it and exit (flush into the totals, free the entry, poison
 * the block as its unmap would) while a reader takes live snapshots or
 * the final sum, each under a mutex as agent.lock: every snapshot taken
 * after the workers' counting is exactly their calls (each counted once,
 * whether its thread ended before the pass or was frozen), a snapshot
 * never reads a poisoned block, and successive snapshots never go down.
 * The reader waits between entries (COUNTREG_STEP), so exits land in
 * the middle of its passes: a snapshot that reads each block and puts it
 * back at once, the totals after, fails test_live_exact (counted twice).
 * Many rounds; meant for the TSan build too (-DADA_SANITIZE=thread).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define COUNTREG_PAUSE(spin) ((spin) < 64 ? (void)0 : (void)sched_yield())
/* Between two entries the reader waits a little (a yield would give the
 * CPU away for a time slice on a loaded machine): exits land inside its
 * passes. */
static void step(void)
{
	for (volatile int k = 0; k < 2000; k++)
		;
}
#define COUNTREG_STEP() step()
static void peeked(void);
#define COUNTREG_PEEKED() peeked()
#include "countreg_internal.h"

#define NREG 16u    /* registry entries */
#define NW 4u       /* workers */
#define NSLOT 4u    /* counters per block */
#define CALLS 1000u /* calls a worker counts per life, per counter */
#define ROUNDS 300u
#define POISON 0xdeaddeaddeaddeadull

static _Atomic uintptr_t reg[NREG];
static _Atomic uint64_t dead[NSLOT];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* agent.lock's part */
/* Each worker's block, 8-aligned as a mapping's counters are. */
static uint64_t blocks[NW][NSLOT] __attribute__((aligned(64)));

/* A round: workers count, then (all together with the reader) exit; the
 * reader checks what is left before the next round starts. */
static pthread_barrier_t counted, exited, checked;
static bool final_mode;

/* The owner's count: a plain add as a count block's, made of relaxed
 * accesses for the sanitizer (one aligned load and store each). */
static void count(uint64_t *n)
{
	__atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static uint32_t reg_take(uintptr_t b)
{
	for (uint32_t i = 0;; i = (i + 1) % NREG) {
		uintptr_t z = 0;
		if (atomic_compare_exchange_strong_explicit(&reg[i], &z, b, memory_order_relaxed,
		                                            memory_order_relaxed))
			return i;
	}
}

/* The exit destructor's part (agent_count_thread_exit). */
static void worker_exit(uint32_t i, uint64_t *n)
{
	switch (countreg_exit_take(&reg[i], (uintptr_t)n)) {
	case COUNTREG_EXIT_FLUSH:
		for (uint32_t c = 0; c < NSLOT; c++) {
			atomic_fetch_add_explicit(&dead[c],
			                          __atomic_load_n(&n[c], __ATOMIC_RELAXED),
			                          memory_order_relaxed);
			__atomic_store_n(&n[c], 0, __ATOMIC_RELAXED);
		}
		countreg_exit_done(&reg[i]);
		break;
	case COUNTREG_EXIT_READ:
		break;
	case COUNTREG_EXIT_KEEP:
		fail_msg("an entry was held past the bound");
	}
	for (uint32_t c = 0; c < NSLOT; c++) /* "unmapped": a reader must not see it */
		__atomic_store_n(&n[c], POISON, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
	uint64_t *n = blocks[(uintptr_t)arg];
	for (uint32_t r = 0; r < ROUNDS; r++) {
		for (uint32_t c = 0; c < NSLOT; c++)
			__atomic_store_n(&n[c], 0, __ATOMIC_RELAXED);
		uint32_t i = reg_take((uintptr_t)n);
		for (uint32_t k = 0; k < CALLS; k++)
			for (uint32_t c = 0; c < NSLOT; c++)
				count(&n[c]);
		pthread_barrier_wait(&counted);
		worker_exit(i, n);
		pthread_barrier_wait(&exited);
		pthread_barrier_wait(&checked);
	}
	return NULL;
}

static uint64_t total(const uint64_t *per)
{
	uint64_t t = 0;
	for (uint32_t c = 0; c < NSLOT; c++) {
		assert_true(per[c] < POISON / 2); /* a block read after its thread freed it */
		t += per[c];
	}
	return t;
}

static uint64_t snapshot(uint64_t *out)
{
	static uint16_t frozen[NREG];
	pthread_mutex_lock(&lock);
	countreg_sum_live(reg, NREG, dead, NSLOT, out, frozen);
	pthread_mutex_unlock(&lock);
	return total(out);
}

static uint64_t final_sum(uint64_t *out)
{
	pthread_mutex_lock(&lock);
	countreg_sum_final(reg, NREG, dead, NSLOT, out);
	pthread_mutex_unlock(&lock);
	return total(out);
}

static void run(bool fin)
{
	pthread_t th[NW];
	final_mode = fin;
	memset(blocks, 0, sizeof(blocks));
	for (uint32_t c = 0; c < NSLOT; c++)
		atomic_store(&dead[c], 0);
	for (uint32_t i = 0; i < NREG; i++)
		atomic_store(&reg[i], 0);
	pthread_barrier_init(&counted, NULL, NW + 1);
	pthread_barrier_init(&exited, NULL, NW + 1);
	pthread_barrier_init(&checked, NULL, NW + 1);
	for (uintptr_t w = 0; w < NW; w++)
		assert_int_equal(pthread_create(&th[w], NULL, worker, (void *)w), 0);
	uint64_t per[NSLOT], base = 0;
	for (uint32_t r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&counted);
		/* The workers exit while this reads: before, during or after. */
		uint64_t want = base + (uint64_t)NW * CALLS * NSLOT;
		uint64_t got = final_mode ? final_sum(per) : snapshot(per);
		assert_int_equal(got, want);
		for (uint32_t c = 0; c < NSLOT; c++)
			assert_int_equal(per[c], want / NSLOT);
		pthread_barrier_wait(&exited);
		/* Every worker gone: only the totals (a final sum left DONE
		 * behind, which the next round's registrations skip). */
		if (final_mode) {
			for (uint32_t i = 0; i < NREG; i++)
				if (atomic_load(&reg[i]) == COUNTREG_DONE)
					atomic_store(&reg[i], 0);
			for (uint32_t c = 0; c < NSLOT; c++)
				atomic_store(&dead[c], 0);
		} else {
			assert_int_equal(snapshot(per), want);
			base = want;
		}
		pthread_barrier_wait(&checked);
	}
	for (uintptr_t w = 0; w < NW; w++)
		pthread_join(th[w], NULL);
	pthread_barrier_destroy(&counted);
	pthread_barrier_destroy(&exited);
	pthread_barrier_destroy(&checked);
}

/* Exits during live snapshots: each exact, nothing counted twice. */
static void test_live_exact(void **state)
{
	(void)state;
	run(false);
}

/* Exits during the final sum: exact, each thread once. */
static void test_final_exact(void **state)
{
	(void)state;
	run(true);
}

/* Snapshots while the owners count: never down, never above what they
 * counted, never a freed block; exact once they stop. */
static _Atomic uint64_t truth;
static _Atomic bool stop;
static void *counter(void *arg)
{
	uint64_t *n = blocks[(uintptr_t)arg];
	while (!atomic_load(&stop)) {
		for (uint32_t c = 0; c < NSLOT; c++)
			__atomic_store_n(&n[c], 0, __ATOMIC_RELAXED);
		uint32_t i = reg_take((uintptr_t)n);
		for (uint32_t k = 0; k < CALLS; k++) {
			atomic_fetch_add(&truth, 1); /* before the count: a snapshot <= truth */
			count(&n[0]);
		}
		worker_exit(i, n);
	}
	return NULL;
}

static void test_live_monotone(void **state)
{
	(void)state;
	pthread_t th[NW];
	memset(blocks, 0, sizeof(blocks));
	for (uint32_t c = 0; c < NSLOT; c++)
		atomic_store(&dead[c], 0);
	for (uint32_t i = 0; i < NREG; i++)
		atomic_store(&reg[i], 0);
	for (uintptr_t w = 0; w < NW; w++)
		assert_int_equal(pthread_create(&th[w], NULL, counter, (void *)w), 0);
	uint64_t per[NSLOT], last = 0;
	for (uint32_t r = 0; r < 300; r++) {
		uint64_t got = snapshot(per);
		assert_true(got >= last);
		assert_true(got <= atomic_load(&truth));
		last = got;
	}
	atomic_store(&stop, true);
	for (uintptr_t w = 0; w < NW; w++)
		pthread_join(th[w], NULL);
	assert_int_equal(snapshot(per), atomic_load(&truth));
}

/* A reader looks at an entry (its block b), and before its claim the
 * entry's thread exits (flushes, frees the entry) and a new thread
 * registers a block at the same address b (mmap gives back the pages
 * just unmapped): the claim succeeds on the new value, and the totals it
 * reads next must hold the first thread's flush. Forced here by
 * COUNTREG_PEEKED; the two threads meet only through relaxed flags, so
 * the sanitizer (TSan) sees an order between the flush and the reader
 * only if the claim itself acquires it (a relaxed claim: a data race on
 * aba_flushed). */
static uint64_t aba_block[1];
static uint64_t aba_flushed; /* plain: written before the exit's release */
static _Atomic uintptr_t aba_reg[1];
static _Atomic uint64_t aba_dead[1];
static _Atomic int aba_go, aba_done, aba_take;
static bool aba_armed;

static void *aba_thread(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&aba_go, memory_order_relaxed))
		sched_yield();
	/* The thread exits: its 5 counts into the totals. */
	enum countreg_exit x = countreg_exit_take(&aba_reg[0], (uintptr_t)aba_block);
	atomic_store_explicit(&aba_take, (int)x, memory_order_relaxed);
	atomic_fetch_add_explicit(&aba_dead[0], __atomic_load_n(&aba_block[0], __ATOMIC_RELAXED),
	                          memory_order_relaxed);
	aba_flushed = 1;
	countreg_exit_done(&aba_reg[0]);
	/* A new thread, its block at the same address, nothing counted yet. */
	__atomic_store_n(&aba_block[0], 0, __ATOMIC_RELAXED);
	uintptr_t z = 0;
	atomic_compare_exchange_strong_explicit(&aba_reg[0], &z, (uintptr_t)aba_block,
	                                        memory_order_relaxed, memory_order_relaxed);
	atomic_store_explicit(&aba_done, 1, memory_order_relaxed);
	return NULL;
}

static void peeked(void)
{
	if (!aba_armed)
		return;
	aba_armed = false;
	atomic_store_explicit(&aba_go, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&aba_done, memory_order_relaxed))
		sched_yield();
}

static void test_claim_same_address(void **state)
{
	(void)state;
	static uint16_t frozen[1];
	uint64_t out[1];
	pthread_t th;
	__atomic_store_n(&aba_block[0], 5, __ATOMIC_RELAXED);
	atomic_store(&aba_reg[0], (uintptr_t)aba_block);
	assert_int_equal(pthread_create(&th, NULL, aba_thread, NULL), 0);
	aba_armed = true;
	countreg_sum_live(aba_reg, 1, aba_dead, 1, out, frozen);
	assert_int_equal(aba_flushed, 1);
	assert_int_equal(out[0], 5);
	assert_int_equal(atomic_load(&aba_reg[0]), (uintptr_t)aba_block); /* put back */
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&aba_take), COUNTREG_EXIT_FLUSH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_live_exact),
	    cmocka_unit_test(test_final_exact),
	    cmocka_unit_test(test_live_monotone),
	    cmocka_unit_test(test_claim_same_address),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
