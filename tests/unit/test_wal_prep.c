/*
 * How many spare slots the drain prepares for a process
 * (src/recorder/drain_prep.c, drain_prep_spares_for): none for a young
 * process that started no thread, which is what a fork child, an exec'd
 * child and a short command are. An exec'd child has one thread per image
 * (the fork child's and the new image's first), and was counted as a
 * process that started a second thread: the drain populated and locked
 * half of the spares for every compiler a make ran, and freed them again
 * a moment later. Nor does a young process that started a few threads
 * (fibthreads: two workers at once, a 0.2 s run) get any: it claimed none
 * of its two and paid the drain ~6 ms a run for them; once aged, one
 * unless its threads keep coming.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drain_internal.h"
#include "recorder_internal.h"

static void test_short_processes_get_none(void **state)
{
	(void)state;
	assert_int_equal(drain_prep_spares_for(0, 0, false, true, false), 0);
	assert_int_equal(drain_prep_spares_for(1, 1, false, true, false), 0);
	/* fork + exec: the fork child's thread and the new image's. */
	assert_int_equal(drain_prep_spares_for(2, 2, false, true, false), 0);
	/* exec'd twice (sh -c that execs its command). */
	assert_int_equal(drain_prep_spares_for(3, 3, false, true, false), 0);
	/* A main thread whose tid the recorder could not match (another pid
	 * namespace): counted as threads, as before. */
	assert_int_equal(drain_prep_spares_for(2, 0, true, true, false), ADA_SLOT_SPARES / 2);
}

static void test_young_few_threads_get_none(void **state)
{
	(void)state;
	/* Started one, two, six threads (a worker pool started at once). */
	assert_int_equal(drain_prep_spares_for(2, 1, false, true, false), 0);
	assert_int_equal(drain_prep_spares_for(3, 1, false, true, false), 0);
	assert_int_equal(drain_prep_spares_for(7, 1, false, true, false), 0);
	/* exec'd, then started a thread. */
	assert_int_equal(drain_prep_spares_for(3, 2, false, true, false), 0);
	assert_int_equal(drain_prep_spares_for(2, 0, false, true, false), 0);
	/* A thread started after another ended (a thread per request):
	 * half of them while young; never for a process that started none. */
	assert_int_equal(drain_prep_spares_for(3, 1, false, true, true), ADA_SLOT_SPARES / 2);
	assert_int_equal(drain_prep_spares_for(2, 2, false, true, true), 0);
	assert_int_equal(drain_prep_spares_for(3, 1, true, false, true), 1);
}

static void test_aged_gets_one(void **state)
{
	(void)state;
	assert_int_equal(drain_prep_spares_for(1, 1, true, true, false), 1);
	assert_int_equal(drain_prep_spares_for(2, 2, true, true, false), 1);
	/* Its few threads all came long ago (workers started at its start):
	 * one, as for a single-threaded process. */
	assert_int_equal(drain_prep_spares_for(3, 1, true, false, false), 1);
	assert_int_equal(drain_prep_spares_for(7, 1, true, false, false), 1);
	assert_int_equal(drain_prep_spares_for(1, 1, true, false, false), 1);
}

static void test_started_threads_get_more(void **state)
{
	(void)state;
	/* Once aged, while threads keep coming. */
	assert_int_equal(drain_prep_spares_for(2, 1, true, true, false), ADA_SLOT_SPARES / 2);
	/* exec'd, then started a thread. */
	assert_int_equal(drain_prep_spares_for(3, 2, true, true, false), ADA_SLOT_SPARES / 2);
	/* A thread per request: all of them at any age. */
	assert_int_equal(drain_prep_spares_for(8, 1, false, true, false), ADA_SLOT_SPARES);
	assert_int_equal(drain_prep_spares_for(9, 2, true, true, false), ADA_SLOT_SPARES);
	/* More images than threads is not a count the drain makes: no
	 * underflow, the threads as they are. */
	assert_int_equal(drain_prep_spares_for(2, 5, true, true, false), ADA_SLOT_SPARES / 2);
}

/* A process's slot tables (drain_arena.c): the entries written are
 * cleared when it ends and the mapping handed to the next process of the
 * same thread limit, zero throughout; tables with many slots written are
 * unmapped instead. */
static void test_slot_tables_kept_zero(void **state)
{
	(void)state;
	struct wal_proc p = {.max_threads = 4096};
	assert_int_equal(drain_slot_tables_new(&p), 0);
	void *first = p.by_slot;
	drain_slot_touch(&p, 3);
	p.by_slot[3] = (struct wal_thread *)&p;
	p.slot_dlocked[3] = 77;
	drain_slot_touch(&p, 0);
	p.slot_noted[0] = p.slot_locked[0] = 1;
	assert_int_equal(p.slot_tables_hi, 4);
	drain_slot_tables_free(&p);
	assert_null(p.by_slot);
	struct wal_proc q = {.max_threads = 4096};
	assert_int_equal(drain_slot_tables_new(&q), 0);
	assert_ptr_equal(q.by_slot, first); /* the kept one */
	for (uint32_t s = 0; s < q.max_threads; s++)
		assert_true(!q.by_slot[s] && !q.slot_dlocked[s] && !q.slot_noted[s] &&
		            !q.slot_locked[s]);
	/* Too many slots written: not cleared (false), unmapped at free. */
	drain_slot_touch(&q, 4000);
	assert_false(drain_slot_tables_clear(&q));
	q.slot_locked[4000] = 1;
	drain_slot_tables_free(&q);
	struct wal_proc r = {.max_threads = 4096};
	assert_int_equal(drain_slot_tables_new(&r), 0);
	assert_int_equal(r.slot_locked[4000], 0);
	/* Another thread limit: a mapping of its own size. */
	struct wal_proc o = {.max_threads = 16};
	assert_int_equal(drain_slot_tables_new(&o), 0);
	assert_int_equal(o.slot_tables_len, 16 * 18);
	drain_slot_tables_free(&o);
	drain_slot_tables_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_short_processes_get_none),
	    cmocka_unit_test(test_slot_tables_kept_zero),
	    cmocka_unit_test(test_aged_gets_one),
	    cmocka_unit_test(test_young_few_threads_get_none),
	    cmocka_unit_test(test_started_threads_get_more),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
