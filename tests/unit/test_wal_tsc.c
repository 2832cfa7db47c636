/*
 * TSC -> CLOCK_BOOTTIME conversion: calibration, accuracy against a
 * synthetic clock, monotonicity across re-anchors (with drift and with
 * clock steps both ways), and the /proc/cpuinfo invariant-TSC parser.
 * Everything is fed synthetic (tsc, ns) pairs: no timing in the test.
 * The calibration cache (parse, store/load, links, modes) and a clock
 * seeded from a known slope; one test converts the real TSC and asserts
 * only ordering and consistency with CLOCK_BOOTTIME (generous bounds).
 * The drain's convert loop (wal_convert_batch) against a plain reference
 * over random batches with hostile events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <errno.h>

#include "clock.h"
#include "arena_internal.h"
#include "recorder_internal.h"

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

static void test_seed(void **state)
{
	(void)state;
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 3000, ns_of(3000));
	uint64_t mult = (1ull << 32) / 3; /* 3 GHz, as ns_of() */
	ada_tsc_clock_seed(&c, mult);
	assert_true(ada_tsc_clock_ready(&c));
	uint64_t t = 3000 + 3ull * 1000000; /* 1 ms later */
	uint64_t err = ada_tsc_clock_to_ns(&c, t) - ns_of(t) + 2;
	assert_true(err <= 4);
	/* A sample closer to the base than the calibration baseline keeps
	 * the seed's slope (no short-baseline estimate: only the slew of the
	 * 5 ns error), and time goes on. */
	uint64_t before = ada_tsc_clock_to_ns(&c, t);
	assert_true(ada_tsc_clock_sample(&c, t, ns_of(t) + 5));
	uint64_t got = c.maps[c.n - 1].mult;
	assert_true(got >= mult && got - mult <= mult / 1000);
	assert_true(ada_tsc_clock_to_ns(&c, t + 1) >= before);
}

static void test_cache_parse(void **state)
{
	(void)state;
	const char *id = "06d6fa58-f731-403b-b865-174659edddac";
	char ok[128];
	snprintf(ok, sizeof(ok), "ada-tsc 1 %s 1654372101\n", id);
	uint64_t m = 0;
	assert_int_equal(ada_tsc_cache_parse(ok, strlen(ok), id, &m), 0);
	assert_int_equal(m, 1654372101ull);
	const char *bad[] = {
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac 1654372101",      /* no newline */
	    "ada-tsc 2 06d6fa58-f731-403b-b865-174659edddac 1654372101\n",    /* version */
	    "ada-tsc 1 16d6fa58-f731-403b-b865-174659edddac 1654372101\n",    /* other boot */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac 1654372101\nx\n", /* junk */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac +1654372101\n",   /* sign */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac 12\n",            /* 350 GHz */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac 9999999999999\n", /* 430 kHz */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac\n",               /* no slope */
	    "ada-tsc1 06d6fa58-f731-403b-b865-174659edddac 1654372101\n",     /* the fuzzer's: */
	    "ada-tsc 1\t06d6fa58-f731-403b-b865-174659edddac\t1654372101\n",  /* no space */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac  1654372101\n",   /* two */
	    "ada-tsc 1 06d6fa58-f731-403b-b865-174659edddac 99999999999999999999999\n",
	    "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ada_tsc_cache_parse(bad[i], strlen(bad[i]), id, &m), -EBADMSG);
	char nul[sizeof(ok)];
	memcpy(nul, ok, sizeof(ok));
	nul[12] = '\0';
	assert_int_equal(ada_tsc_cache_parse(nul, strlen(ok), id, &m), -EBADMSG);
}

/* arm64's generic timer states its rate (CNTFRQ_EL0): the slope comes
 * from it, for the rates real machines and qemu use, and nothing
 * implausible is taken. */
static void test_mult_from_hz(void **state)
{
	(void)state;
	uint64_t m = 0;
	assert_true(ada_tsc_mult_from_hz(62500000, &m)); /* qemu: 16 ns per tick */
	assert_int_equal(m, 16ull << 32);
	assert_true(ada_tsc_mult_from_hz(1000000000, &m)); /* 1 GHz: 1 ns */
	assert_int_equal(m, 1ull << 32);
	assert_true(ada_tsc_mult_from_hz(19200000, &m)); /* 52.083 ns */
	assert_int_equal(m, ((1000000000ull << 32) / 19200000));
	assert_true(ada_tsc_mult_from_hz(24000000, &m));
	m = 7;
	assert_false(ada_tsc_mult_from_hz(0, &m));
	assert_false(ada_tsc_mult_from_hz(100000, &m));          /* 100 kHz */
	assert_false(ada_tsc_mult_from_hz(100000000000ull, &m)); /* 100 GHz */
	assert_int_equal(m, 7);
#if defined(__aarch64__)
	/* The machine's own counter (qemu's, under qemu-user). */
	assert_true(ada_tsc_kernel_mult(&m));
	assert_true(ada_tsc_invariant());
#endif
}

static void test_cache_store_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_tsc_cache_XXXXXX", path[256], link_to[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sub/tsc", dir);
	uint64_t m = 0, want = (1ull << 32) / 3;
	assert_int_equal(ada_tsc_cache_load(path, &m), -ENOENT);
	assert_int_equal(ada_tsc_cache_store(path, want), 0); /* creates sub/ (0700) */
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(ada_tsc_cache_load(path, &m), 0);
	assert_int_equal(m, want);
	assert_int_equal(ada_tsc_cache_store(path, 5), -EINVAL); /* not a plausible slope */
	/* Writable by others: refused. */
	assert_int_equal(chmod(path, 0622), 0);
	assert_int_not_equal(ada_tsc_cache_load(path, &m), 0);
	/* A link planted at the name is never followed: load refuses it,
	 * store replaces the link and leaves its target alone. */
	snprintf(link_to, sizeof(link_to), "%s/target", dir);
	FILE *f = fopen(link_to, "w");
	assert_non_null(f);
	fputs("keep\n", f);
	fclose(f);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(link_to, path), 0);
	assert_int_not_equal(ada_tsc_cache_load(path, &m), 0);
	assert_int_equal(ada_tsc_cache_store(path, want), 0);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	char buf[16] = {0};
	f = fopen(link_to, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "keep\n");
	assert_int_equal(ada_tsc_cache_load(path, &m), 0);
	unlink(path);
	unlink(link_to);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
}

/* The real TSC through a clock seeded from the kernel's or the cached
 * slope (measured here when neither exists): converted times never go
 * back and stay inside the CLOCK_BOOTTIME reads around them, give or take
 * a bound far above any slope error (no timing is asserted). */
static void test_real_clock_consistent(void **state)
{
	(void)state;
	if (!ada_tsc_invariant()) {
		print_message("skip: no invariant TSC: the recorder uses clock_gettime; nothing "
		              "to check\n");
		skip();
	}
	uint64_t tsc, ns, mult;
	ada_tsc_sample_pair(&tsc, &ns);
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, tsc, ns);
	enum ada_tsc_calib how = ada_tsc_known_mult(&mult);
	if (how != ADA_TSC_MEASURED)
		ada_tsc_clock_seed(&c, mult);
	while (!ada_tsc_clock_ready(&c)) {
		usleep(1000);
		ada_tsc_sample_pair(&tsc, &ns);
		ada_tsc_clock_sample(&c, tsc, ns);
	}
	uint64_t prev = 0;
	for (int i = 0; i < 20000; i++) {
		if (i % 5000 == 4999) { /* re-anchors on the way */
			ada_tsc_sample_pair(&tsc, &ns);
			ada_tsc_clock_sample(&c, tsc, ns);
		}
		uint64_t t0 = ada_boottime_ns();
		uint64_t x = ada_tsc_clock_to_ns(&c, ada_tsc_read());
		uint64_t t1 = ada_boottime_ns();
		uint64_t tol = 50000000ull + (t1 - c.base_ns) / 100; /* 50 ms + 1 % */
		assert_true(x >= prev);
		assert_true(x + tol >= t0);
		assert_true(x <= t1 + tol);
		prev = x;
	}
}

/* ---- the drain's convert loop vs a plain reference ---- */

static uint64_t cv_rng = 0x9e3779b97f4a7c15ull;
static uint64_t cv_next(void)
{
	cv_rng ^= cv_rng << 13;
	cv_rng ^= cv_rng >> 7;
	cv_rng ^= cv_rng << 17;
	return cv_rng;
}

#define CV_TID 0x00c0ffeeu

/* One event of the stream at raw time *t: mostly what a producer writes,
 * one in ~300 something wal_event_bad() rejects (or a corner it accepts). */
static struct atf_index_event cv_event(uint64_t *t, uint64_t ts_max, bool use_tsc)
{
	uint64_t r = cv_next();
	if (r % 100 == 0) /* out of order: the clamp's business, not a bad event */
		*t -= *t > 60000 ? cv_next() % 60000 : 0;
	else
		*t += use_tsc ? cv_next() % 17000 : cv_next() % 6000;
	struct atf_index_event e = {
	    .timestamp_ns = *t,
	    .function_id = cv_next(),
	    .thread_id = CV_TID,
	    .event_kind = 1 + (uint32_t)(cv_next() % 3),
	    .call_depth = (uint32_t)(cv_next() % 3000),
	    .detail_seq = ATF_NO_DETAIL,
	};
	if ((r >> 20) % 300 != 0)
		return e;
	switch ((r >> 40) % 14) {
	case 0:
		e.event_kind = 0;
		break;
	case 1:
		e.event_kind = 4;
		break;
	case 2:
		e.event_kind = 0x80000001u;
		break;
	case 3:
		e.event_kind = 0xffffffffu;
		break;
	case 4:
		e.thread_id ^= 1u << (cv_next() % 32);
		break;
	case 5:
		e.thread_id = 0;
		break;
	case 6:
		e.detail_seq = (uint32_t)cv_next() & 0xfffffffe;
		break;
	case 7:
		e.call_depth = WAL_MAX_DEPTH + 1 + (uint32_t)(cv_next() % 1000);
		break;
	case 8:
		e.call_depth = 0xffffffffu;
		break;
	case 9:
		e.timestamp_ns = ts_max + 1 + cv_next() % 1000000;
		break;
	case 10:
		e.timestamp_ns = UINT64_MAX;
		break;
	case 11:
		e.timestamp_ns = cv_next() % 1000;
		break; /* before the clock's first piece */
	case 12:
		e.call_depth = WAL_MAX_DEPTH;
		break; /* the deepest one accepted */
	default:
		e.event_kind = 3;
		e.call_depth = 0;
		break;
	}
	return e;
}

static uint64_t cv_reference(const struct ada_tsc_clock *c, bool use_tsc,
                             const struct atf_index_event *src, struct atf_index_event *dst,
                             size_t k, uint64_t last, uint64_t ts_max, uint32_t *bad)
{
	uint32_t acc = 0;
	for (size_t i = 0; i < k; i++) {
		struct atf_index_event e;
		memcpy(&e, &src[i], sizeof(e));
		acc |= wal_event_bad(&e, CV_TID, ts_max);
		uint64_t ts = use_tsc ? ada_tsc_clock_to_ns(c, e.timestamp_ns) : e.timestamp_ns;
		last = e.timestamp_ns = ts < last ? last : ts;
		memcpy(&dst[i], &e, sizeof(e));
	}
	*bad = acc;
	return last;
}

/* wal_convert_batch() must say "bad" for every batch the reference
 * rejects (false alarms only with a depth of exactly WAL_MAX_DEPTH), and
 * for every batch it accepts write the reference's bytes and return its
 * last timestamp. Batches of 0-300 at any alignment (odd starts, odd
 * sizes), across the clock's re-anchors, with events before its first
 * piece and beyond ts_max; TSC and ts=clock arenas. */
static void cv_run(bool use_tsc)
{
	enum { N = 200000 };
	struct ada_tsc_clock c;
	ada_tsc_clock_init(&c, 0, ns_of(0));
	ada_tsc_clock_sample(&c, 30000000, ns_of(30000000));
	/* Re-anchors every 10^8 ticks (~12000 events), slewing to a clock
	 * that drifts a little each time; all kept (ADA_TSC_HISTORY). */
	for (uint64_t j = 1; j <= 12; j++)
		ada_tsc_clock_sample(&c, j * 100000000ull, ns_of(j * 100000000ull) + j * 700);
	assert_true(c.n > 10 && c.n < ADA_TSC_HISTORY);
	struct atf_index_event *src = calloc(N + 1, sizeof(*src));
	struct atf_index_event *got = calloc(N + 1, sizeof(*got));
	struct atf_index_event *want = calloc(N + 1, sizeof(*want));
	assert_non_null(src);
	assert_non_null(got);
	assert_non_null(want);
	/* the stream ends near 1.74 * 10^9 ticks, past the last re-anchor */
	uint64_t t = 40000000, ts_max = use_tsc ? 1900000000ull : UINT64_MAX;
	for (size_t i = 0; i < N; i++)
		src[i] = cv_event(&t, ts_max == UINT64_MAX ? t + 500000000ull : ts_max, use_tsc);
	size_t clean = 0, rejected = 0, alarms = 0, one_piece = 0;
	uint64_t last = 0;
	for (size_t at = 0; at < N;) {
		size_t k = cv_next() % 301, o = cv_next() % 2;
		k = k > N - at ? N - at : k;
		if (cv_next() % 8 == 0) /* a new start for the clamp (and past a UINT64_MAX) */
			last = cv_next() % 2 ? 0 : src[at].timestamp_ns;
		uint32_t bad_got = 0xdead, bad_want;
		uint64_t lg = wal_convert_batch(&c, use_tsc, src + at, got + o, k, last, CV_TID,
		                                ts_max, &bad_got);
		uint64_t lw = cv_reference(&c, use_tsc, src + at, want, k, last, ts_max, &bad_want);
		bool deepest = false;
		for (size_t i = 0; i < k; i++)
			deepest |= src[at + i].call_depth == WAL_MAX_DEPTH;
		if (bad_want) {
			assert_int_not_equal(bad_got, 0);
			rejected++;
			/* the drain converts such a batch again, event by event */
		} else if (bad_got) {
			assert_true(deepest); /* the only false alarm the loop may raise */
			alarms++;
		} else {
			assert_int_equal(lg, lw);
			assert_memory_equal(got + o, want, k * sizeof(*want));
			last = lw;
			clean++;
			/* on one piece of the clock: the loop's fast path */
			uint32_t p = c.n - 1;
			while (use_tsc && p > 0 && src[at].timestamp_ns < c.maps[p].tsc0)
				p--;
			bool one = k > 0;
			for (size_t i = 0; i < k && use_tsc; i++)
				one &=
				    src[at + i].timestamp_ns >= c.maps[p].tsc0 &&
				    (p + 1 == c.n || src[at + i].timestamp_ns < c.maps[p + 1].tsc0);
			one_piece += one;
		}
		if (bad_want || bad_got) /* go on past the batch as the reference says */
			last = lw;
		at += k ? k : 1;
	}
	/* every kind of batch happened */
	assert_true(clean > 200);
	assert_true(rejected > 100);
	assert_true(alarms > 0);
	assert_true(one_piece > 200);
	assert_true(one_piece < clean || !use_tsc); /* and batches across a re-anchor */
	free(src);
	free(got);
	free(want);
}

static void test_convert_batch_matches_reference(void **state)
{
	(void)state;
	cv_run(true);
	cv_run(false);
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
	    cmocka_unit_test(test_seed),
	    cmocka_unit_test(test_cache_parse),
	    cmocka_unit_test(test_mult_from_hz),
	    cmocka_unit_test(test_cache_store_load),
	    cmocka_unit_test(test_real_clock_consistent),
	    cmocka_unit_test(test_convert_batch_matches_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
