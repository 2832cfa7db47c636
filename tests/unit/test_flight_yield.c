/*
 * The windows' live persist yielding to the program while the CPU is
 * contended (src/recorder/flight_yield.c): the CPU an interval allows
 * from the drain's own run and wait times, and the test hook that makes
 * every interval contended (the e2e flight_window_lost_yield scenario
 * uses it to hold every live persist back).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "recorder_internal.h"

#define MS 1000000ull

static void test_allow_uncontended(void **state)
{
	(void)state;
	/* A drain that waited at most a twentieth of the interval: no cap. */
	assert_true(wal_flight_yield_allow(100 * MS, 30 * MS, 0, 10) == UINT64_MAX);
	assert_true(wal_flight_yield_allow(100 * MS, 30 * MS, 5 * MS, 10) == UINT64_MAX);
	assert_true(wal_flight_yield_allow(100 * MS, 0, 0, 10) == UINT64_MAX);
	assert_true(wal_flight_yield_allow(0, 0, 7 * MS, 10) == UINT64_MAX); /* no interval */
}

static void test_allow_contended(void **state)
{
	(void)state;
	/* Ran a quarter of its runnable time: a thread always runnable got a
	 * quarter of the 100 ms, and the persist a tenth of that. */
	assert_int_equal(wal_flight_yield_allow(100 * MS, 20 * MS, 60 * MS, 10), 2500000);
	/* Just over a twentieth waited: capped. */
	assert_int_equal(wal_flight_yield_allow(100 * MS, 40 * MS, 5 * MS + 1, 10),
	                 (uint64_t)(100.0 * MS * 40 * MS / (45.0 * MS + 1) * 10 / 100.0));
	/* It never ran: nothing. */
	assert_int_equal(wal_flight_yield_allow(100 * MS, 0, 50 * MS, 10), 0);
	/* Large values do not overflow: a day's interval. */
	uint64_t day = 86400000ull * MS;
	uint64_t a = wal_flight_yield_allow(day, day / 2, day / 2, 10);
	assert_true(a + 1 >= day / 20 && a <= day / 20);
}

static void test_allow_share(void **state)
{
	(void)state;
	/* --persist-share: half of the quarter an always-runnable thread got;
	 * 100 is never capped, however contended. */
	assert_int_equal(wal_flight_yield_allow(100 * MS, 20 * MS, 60 * MS, 50), 12500000);
	assert_true(wal_flight_yield_allow(100 * MS, 20 * MS, 60 * MS, 100) == UINT64_MAX);
	assert_true(wal_flight_yield_allow(100 * MS, 0, 50 * MS, 100) == UINT64_MAX);
}

static void test_first_interval_uncapped(void **state)
{
	(void)state;
	unsetenv("ADA_TEST_FLIGHT_CONTENDED");
	struct wal_flight_yield y;
	wal_flight_yield_init(&y, 0);
	/* No earlier reading to compare with: the first interval is free. */
	assert_true(wal_flight_yield_room(&y, 1000 * MS) == UINT64_MAX);
	assert_int_equal(y.contended, 0);
	/* Within the interval the verdict stands; the CPU taken is counted. */
	wal_flight_yield_begin(&y);
	wal_flight_yield_end(&y);
	assert_true(wal_flight_yield_room(&y, 1050 * MS) == UINT64_MAX);
	assert_int_equal(y.used_ns, y.cpu_ns);
	wal_flight_yield_fini(&y);
}

static void test_capped_room_shrinks(void **state)
{
	(void)state;
	unsetenv("ADA_TEST_FLIGHT_CONTENDED");
	struct wal_flight_yield y;
	wal_flight_yield_init(&y, 0);
	(void)wal_flight_yield_room(&y, 1000 * MS);
	/* A contended verdict for this interval: what is used comes off. */
	y.allow_ns = 3 * MS;
	y.used_ns = 1 * MS;
	assert_int_equal(wal_flight_yield_room(&y, 1010 * MS), 2 * MS);
	y.used_ns = 4 * MS;
	assert_int_equal(wal_flight_yield_room(&y, 1020 * MS), 0);
	wal_flight_yield_fini(&y);
}

static void test_forced(void **state)
{
	(void)state;
	setenv("ADA_TEST_FLIGHT_CONTENDED", "1", 1);
	struct wal_flight_yield y;
	wal_flight_yield_init(&y, 0);
	unsetenv("ADA_TEST_FLIGHT_CONTENDED");
	assert_int_equal(wal_flight_yield_room(&y, 1000 * MS), 0);
	assert_int_equal(wal_flight_yield_room(&y, 1050 * MS), 0);
	assert_int_equal(y.contended, 1);
	assert_int_equal(wal_flight_yield_room(&y, 1100 * MS), 0);
	assert_int_equal(y.contended, 2);
	wal_flight_yield_fini(&y);
	/* --persist-share 100: contended intervals counted, never held back. */
	setenv("ADA_TEST_FLIGHT_CONTENDED", "1", 1);
	wal_flight_yield_init(&y, 100);
	unsetenv("ADA_TEST_FLIGHT_CONTENDED");
	assert_true(wal_flight_yield_room(&y, 1000 * MS) == UINT64_MAX);
	assert_true(wal_flight_yield_room(&y, 1100 * MS) == UINT64_MAX);
	assert_int_equal(y.contended, 2);
	wal_flight_yield_fini(&y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allow_uncontended),
	    cmocka_unit_test(test_allow_contended),
	    cmocka_unit_test(test_allow_share),
	    cmocka_unit_test(test_first_interval_uncapped),
	    cmocka_unit_test(test_capped_room_shrinks),
	    cmocka_unit_test(test_forced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
