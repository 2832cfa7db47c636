/*
 * TSC -> CLOCK_BOOTTIME conversion: calibration, accuracy against a
 * synthetic clock, monotonicity across re-anchors (with drift and with
 * clock steps both ways), and the /proc/cpuinfo invariant-TSC parser.
 * Everything is fed synthetic (tsc, ns) pairs: no timing in the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wal.h"

/* A 3 GHz TSC: ns = tsc / 3, starting at an arbitrary boot offset. */
static uint64_t ns_of(uint64_t tsc)
{
	return 5000000000ull + tsc / 3;
}

static void test_calibration_needs_baseline(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 3000, ns_of(3000));
	assert_false(ada_tsc_clock_sample(&c, 3000 + 3 * 1000000, ns_of(3000 + 3 * 1000000)));
	assert_false(ada_tsc_clock_ready(&c));
	uint64_t t = 3000 + 3ull * ADA_TSC_CALIB_MIN_NS;
	assert_true(ada_tsc_clock_sample(&c, t, ns_of(t)));
	assert_true(ada_tsc_clock_ready(&c));
}

static void test_accuracy(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 1000, ns_of(1000));
	uint64_t t = 1000 + 3ull * 10000000; /* 10 ms baseline */
	ada_tsc_clock_sample(&c, t, ns_of(t));
	/* Within 1 ns per second of distance from the anchor, plus rounding. */
	for (uint64_t s = 0; s < 100; s++) {
		uint64_t x = 1000 + s * 3000000000ull + 12345;
		uint64_t want = ns_of(x), got = ada_tsc_clock_to_ns(&c, x);
		uint64_t err = got > want ? got - want : want - got;
		assert_true(err <= 2 + s);
	}
}

/* The real TSC runs 100 ppm fast relative to the first estimate, and the
 * clock is sampled every second: the map must stay monotonic and converge. */
static void test_reanchor_drift_monotonic(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 0, 1000000000ull);
	ada_tsc_clock_sample(&c, 3000000ull * 10, 1000000000ull + 10000000ull); /* 3.000 GHz */
	uint64_t prev = 0;
	uint64_t tsc_per_s = 3000300000ull; /* actual: 100 ppm more ticks per second */
	for (uint64_t s = 1; s <= 40; s++) {
		uint64_t tsc = 30000000ull + s * tsc_per_s;
		uint64_t ns = 1000000000ull + 10000000ull + s * 1000000000ull;
		/* conversions of TSC values before this sample, in order */
		for (uint64_t k = 0; k < 64; k++) {
			uint64_t x = tsc - tsc_per_s + k * (tsc_per_s / 64);
			uint64_t v = ada_tsc_clock_to_ns(&c, x);
			assert_true(v >= prev);
			prev = v;
		}
		ada_tsc_clock_sample(&c, tsc, ns);
	}
	/* After 40 re-anchors the error is far below the initial drift rate. */
	uint64_t tsc = 30000000ull + 41 * tsc_per_s;
	uint64_t want = 1000000000ull + 10000000ull + 41 * 1000000000ull;
	uint64_t got = ada_tsc_clock_to_ns(&c, tsc);
	uint64_t err = got > want ? got - want : want - got;
	assert_true(err < 20000); /* < 20 us after 41 s of a 100 ppm drift (4.1 ms uncorrected) */
}

/* The clock jumps back 300 ms (e.g. NTP step on the sample): converted
 * time must not go back; it slews instead. */
static void test_clock_step_back_never_reverses(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 0, ns_of(0));
	ada_tsc_clock_sample(&c, 30000000, ns_of(30000000));
	uint64_t before = ada_tsc_clock_to_ns(&c, 3000000000ull);
	ada_tsc_clock_sample(&c, 3000000000ull, ns_of(3000000000ull) - 300000000ull);
	uint64_t prev = before;
	for (uint64_t x = 3000000000ull; x < 9000000000ull; x += 1000003) {
		uint64_t v = ada_tsc_clock_to_ns(&c, x);
		assert_true(v >= prev);
		prev = v;
	}
	/* and a step forward is absorbed the same way */
	ada_tsc_clock_sample(&c, 9000000000ull, ns_of(9000000000ull) + 400000000ull);
	for (uint64_t x = 9000000000ull; x < 12000000000ull; x += 999983) {
		uint64_t v = ada_tsc_clock_to_ns(&c, x);
		assert_true(v >= prev);
		prev = v;
	}
}

/* The history keeps the last ADA_TSC_HISTORY pieces; conversions of old
 * values still use the piece that covered them. */
static void test_history(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 0, ns_of(0));
	ada_tsc_clock_sample(&c, 30000000, ns_of(30000000));
	for (uint64_t s = 1; s < 40; s++)
		ada_tsc_clock_sample(&c, s * 3000000000ull, ns_of(s * 3000000000ull));
	assert_int_equal(c.n, ADA_TSC_HISTORY);
	for (uint32_t i = 1; i < c.n; i++) {
		assert_true(c.maps[i].tsc0 > c.maps[i - 1].tsc0);
		/* continuity at each join */
		uint64_t a = ada_tsc_map_apply(&c.maps[i - 1], c.maps[i].tsc0);
		assert_int_equal(a, c.maps[i].ns0);
	}
}

static void test_set_anchor(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	struct ada_tsc_map m = {.tsc0 = 1000, .ns0 = 777, .mult = 1ull << 31, .shift = 32};
	ada_tsc_clock_set(&c, &m);
	assert_true(ada_tsc_clock_ready(&c));
	assert_int_equal(ada_tsc_clock_to_ns(&c, 3000), 777 + 1000);
	assert_int_equal(ada_tsc_clock_to_ns(&c, 0), 777 - 500);
}

static void test_cpuinfo(void **state)
{
	(void)state;
	const char *yes =
	    "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good nonstop_tsc cpuid\n"
	    "processor\t: 1\nflags\t\t: fpu constant_tsc nonstop_tsc\n";
	const char *no = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good\n";
	const char *partial = "flags\t\t: constant_tsc nonstop_tsc_x\n";
	const char *none = "processor\t: 0\nmodel name\t: x\n";
	assert_int_equal(ada_tsc_invariant_from_cpuinfo(yes, strlen(yes)), 1);
	assert_int_equal(ada_tsc_invariant_from_cpuinfo(no, strlen(no)), 0);
	assert_int_equal(ada_tsc_invariant_from_cpuinfo(partial, strlen(partial)), 0);
	assert_int_equal(ada_tsc_invariant_from_cpuinfo(none, strlen(none)), -22);
	/* bounded by len: the second processor's flags are not seen */
	assert_int_equal(ada_tsc_invariant_from_cpuinfo(no, 10), -22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_calibration_needs_baseline),
	    cmocka_unit_test(test_accuracy),
	    cmocka_unit_test(test_reanchor_drift_monotonic),
	    cmocka_unit_test(test_clock_step_back_never_reverses),
	    cmocka_unit_test(test_history),
	    cmocka_unit_test(test_set_anchor),
	    cmocka_unit_test(test_cpuinfo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
