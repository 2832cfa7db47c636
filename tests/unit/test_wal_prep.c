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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_short_processes_get_none),
	    cmocka_unit_test(test_aged_gets_one),
	    cmocka_unit_test(test_young_few_threads_get_none),
	    cmocka_unit_test(test_started_threads_get_more),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
