/*
 * The cycle counter of this build's architecture (src/clock/clock.h):
 * x86_64's TSC states no rate (ada_counter_hz() is 0: it is measured);
 * arm64's generic timer does (CNTFRQ_EL0), so the clock is usable as it is
 * and its slope comes from that rate. Runs natively and, in the aarch64
 * cross build, under qemu-user (label qemu), whose counter is emulated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"

static void test_counter_rate(void **state)
{
	(void)state;
	uint64_t hz = ada_counter_hz(), mult = 0;
#if defined(__aarch64__)
	assert_true(hz >= 1000000 && hz <= 20000000000ull);
	assert_true(ada_tsc_mult_from_hz(hz, &mult));
	uint64_t kmult = 0;
	assert_true(ada_tsc_kernel_mult(&kmult)); /* the architecture's, not the perf page's */
	assert_int_equal(kmult, mult);
	assert_true(ada_tsc_invariant());
#else
	assert_int_equal(hz, 0);
	assert_false(ada_tsc_mult_from_hz(hz, &mult));
#endif
}

/* The counter advances with time at the rate it states (arm64), within a
 * wide margin: a loaded machine and qemu only stretch the wait. */
static void test_counter_advances(void **state)
{
	(void)state;
	uint64_t t0 = ada_tsc(), n0 = ada_boottime_ns();
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	uint64_t t1 = ada_tsc(), n1 = ada_boottime_ns();
	assert_true(t1 > t0);
	uint64_t mult;
	if (ada_tsc_mult_from_hz(ada_counter_hz(), &mult)) {
		uint64_t ns = (uint64_t)(((unsigned __int128)(t1 - t0) * mult) >> 32);
		assert_true(ns >= (n1 - n0) / 2 && ns <= (n1 - n0) * 2);
	}
}

/* The clock's inverse (the drain's bound on a counter it cannot read). */
static void test_counter_at(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 1000, 5000000000ull);
	assert_int_equal(ada_tsc_clock_counter_at(&c, 6000000000ull), UINT64_MAX); /* no piece */
	struct ada_tsc_map m = {
	    .tsc0 = 1000, .ns0 = 5000000000ull, .mult = 16ull << 32, .shift = 32};
	ada_tsc_clock_set(&c, &m);
	assert_int_equal(ada_tsc_clock_counter_at(&c, 5000000000ull + 16000), 2000);
	assert_int_equal(ada_tsc_clock_counter_at(&c, 1), 1000); /* before the anchor */
	assert_int_equal(ada_tsc_clock_to_ns(&c, ada_tsc_clock_counter_at(&c, 7000000000ull)),
	                 7000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_rate),
	    cmocka_unit_test(test_counter_advances),
	    cmocka_unit_test(test_counter_at),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
