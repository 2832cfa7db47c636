/*
 * --trigger SPEC parsing: every form, every bad form with its message,
 * durations and fractional seconds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "trigger.h"

static struct ada_trigger_spec parse_ok(const char *text)
{
	struct ada_trigger_spec s;
	char why[256] = "";
	int rc = ada_trigger_parse(text, &s, why, sizeof(why));
	if (rc != 0)
		fail_msg("'%s' refused: %s", text, why);
	assert_string_equal(s.text, text);
	return s;
}

/* The message must name the bad part and carry an example (--trigger). */
static void parse_bad(const char *text, const char *names)
{
	struct ada_trigger_spec s;
	char why[256] = "";
	assert_int_equal(ada_trigger_parse(text, &s, why, sizeof(why)), -22);
	if (!strstr(why, names))
		fail_msg("message for '%s' does not name '%s': %s", text, names, why);
	if (!strstr(why, "crash") && !strstr(why, "--trigger "))
		fail_msg("message for '%s' has no example: %s", text, why);
	assert_null(strchr(why, '\n'));
}

static void test_forms(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("crash").kind, ADA_TRIGGER_CRASH);
	assert_int_equal(parse_ok("manual").kind, ADA_TRIGGER_MANUAL);
	struct ada_trigger_spec s = parse_ok("symbol=abort_*");
	assert_int_equal(s.kind, ADA_TRIGGER_SYMBOL);
	assert_string_equal(s.glob, "abort_*");
	s = parse_ok("p99=function:handle_request>50ms");
	assert_int_equal(s.kind, ADA_TRIGGER_LATENCY);
	assert_string_equal(s.glob, "handle_request");
	assert_int_equal(s.threshold_ns, 50000000);
	s = parse_ok("latency=function:h*>200us");
	assert_int_equal(s.kind, ADA_TRIGGER_LATENCY);
	assert_int_equal(s.threshold_ns, 200000);
	s = parse_ok("p99=function:fib>1.5s");
	assert_int_equal(s.threshold_ns, 1500000000ull);
	s = parse_ok("p99=function:fib");
	assert_int_equal(s.kind, ADA_TRIGGER_P99);
	assert_string_equal(s.glob, "fib");
	s = parse_ok("latency=function:fib");
	assert_int_equal(s.kind, ADA_TRIGGER_P99);
	s = parse_ok("time=10:30-10:45");
	assert_int_equal(s.kind, ADA_TRIGGER_TIME);
	assert_int_equal(s.from_sec, 10 * 3600 + 30 * 60);
	assert_int_equal(s.to_sec, 10 * 3600 + 45 * 60);
	s = parse_ok("time=23:50-00:10"); /* across midnight */
	assert_int_equal(s.from_sec, 23 * 3600 + 50 * 60);
	assert_int_equal(s.to_sec, 600);
}

static void test_bad_forms(void **state)
{
	(void)state;
	parse_bad("", "empty");
	parse_bad("crsh", "'crsh' is not a trigger");
	parse_bad("sym=foo", "'sym' is not a trigger");
	parse_bad("symbol=", "symbol=");
	parse_bad("symbol=a b", "'a b'");
	parse_bad("p99=handle>50ms", "p99=function:GLOB");
	parse_bad("p99=function:>50ms", "p99=function:");
	parse_bad("p99=function:f>50", "'50'");
	parse_bad("p99=function:f>fast", "'fast'");
	parse_bad("p99=function:f>0ms", "'0ms'");
	parse_bad("p99=function:f>5 ms", "'5 ms'");
	parse_bad("latency=f>1ms", "latency=function:GLOB");
	parse_bad("time=10:30", "'10:30'");
	parse_bad("time=25:00-26:00", "'25:00-26:00'");
	parse_bad("time=10:60-11:00", "'10:60-11:00'");
	parse_bad("time=10:30-10:30", "empty");
	parse_bad("time=1:30-2:30", "'1:30-2:30'");
	char lng[400];
	memset(lng, 'a', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	memcpy(lng, "symbol=", 7);
	parse_bad(lng, "longer than");
	struct ada_trigger_spec s;
	assert_int_equal(ada_trigger_parse("crash!", &s, NULL, 0), -22); /* why may be NULL */
}

static void test_durations(void **state)
{
	(void)state;
	uint64_t ns;
	assert_int_equal(ada_trigger_parse_duration("750ns", &ns), 0);
	assert_int_equal(ns, 750);
	assert_int_equal(ada_trigger_parse_duration("200us", &ns), 0);
	assert_int_equal(ns, 200000);
	assert_int_equal(ada_trigger_parse_duration("0.5ms", &ns), 0);
	assert_int_equal(ns, 500000);
	assert_int_equal(ada_trigger_parse_duration("2s", &ns), 0);
	assert_int_equal(ns, 2000000000ull);
	const char *bad[] = {"",
	                     "ms",
	                     "5",
	                     "5m",
	                     "5 ms",
	                     "-5ms",
	                     "5ms5",
	                     "1.2.3s",
	                     "s",
	                     ".ms",
	                     "99999999999999999999s"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ada_trigger_parse_duration(bad[i], &ns) == 0)
			fail_msg("'%s' accepted", bad[i]);
}

static void test_seconds(void **state)
{
	(void)state;
	uint64_t ns;
	assert_int_equal(ada_trigger_parse_seconds("1", &ns), 0);
	assert_int_equal(ns, 1000000000ull);
	assert_int_equal(ada_trigger_parse_seconds("0.25", &ns), 0);
	assert_int_equal(ns, 250000000ull);
	assert_int_equal(ada_trigger_parse_seconds("2.5", &ns), 0);
	assert_int_equal(ns, 2500000000ull);
	assert_int_equal(ada_trigger_parse_seconds("0", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(ada_trigger_parse_seconds(".5", &ns), 0);
	assert_int_equal(ns, 500000000ull);
	const char *bad[] = {"", "-1", "1s", "abc", "1..2", ".", "1e3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ada_trigger_parse_seconds(bad[i], &ns) == 0)
			fail_msg("'%s' accepted", bad[i]);
}

/* Every unit, fractions and exponents: the one grammar of durations. */
static void test_duration_units(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		uint64_t ns;
	} good[] = {{"1ns", 1},
	            {"1us", 1000},
	            {"1ms", 1000000},
	            {"1s", 1000000000ull},
	            {"0ns", 0},
	            {".5us", 500},
	            {"5.ms", 5000000},
	            {"1.5s", 1500000000ull},
	            {"0.0000000015s", 1}, /* finer than 1 ns: dropped */
	            {"2.7ns", 2},
	            {"007ms", 7000000},
	            {"1e3us", 1000000},
	            {"1E3ns", 1000},
	            {"2.5e-1s", 250000000ull},
	            {"1e+2ms", 100000000ull},
	            {"1e-12s", 0},
	            {"0e999s", 0}};
	uint64_t ns;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = 12345;
		if (ada_trigger_parse_duration(good[i].text, &ns) != 0 || ns != good[i].ns)
			fail_msg("'%s': %llu, want %llu", good[i].text, (unsigned long long)ns,
			         (unsigned long long)good[i].ns);
	}
}

/* A number without its unit is -EDOM, whatever its form. */
static void test_duration_unit_required(void **state)
{
	(void)state;
	const char *bare[] = {"50", "0", "1.5", ".5", "1e3", "18446744073709551616"};
	uint64_t ns;
	for (size_t i = 0; i < sizeof(bare) / sizeof(bare[0]); i++)
		if (ada_trigger_parse_duration(bare[i], &ns) != -EDOM)
			fail_msg("'%s' is not refused as a number without a unit", bare[i]);
	struct ada_trigger_spec s;
	char why[400];
	assert_int_equal(ada_trigger_parse("p99=function:f>50", &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "unit"));
	assert_int_equal(ada_trigger_parse("p99=function:f>50ms", &s, why, sizeof(why)), 0);
	assert_int_equal(s.threshold_ns, 50000000ull);
}

/* UINT64_MAX ns is the largest duration; one more is -ERANGE. */
static void test_duration_overflow(void **state)
{
	(void)state;
	uint64_t ns;
	assert_int_equal(ada_trigger_parse_duration("18446744073709551615ns", &ns), 0);
	assert_true(ns == UINT64_MAX);
	assert_int_equal(ada_trigger_parse_duration("18446744073.709551615s", &ns), 0);
	assert_true(ns == UINT64_MAX);
	const char *over[] = {"18446744073709551616ns",
	                      "18446744073.709551616s",
	                      "18446744074s",
	                      "99999999999999999999s",
	                      "1e20ns",
	                      "1e1000000000s",
	                      "18446744073709552us"};
	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++)
		if (ada_trigger_parse_duration(over[i], &ns) != -ERANGE)
			fail_msg("'%s' is not refused as too long", over[i]);
	assert_int_equal(ada_trigger_parse_seconds("18446744074", &ns), -ERANGE);
}

/* No sign: a negative duration (or a '+') is no duration. */
static void test_duration_negative(void **state)
{
	(void)state;
	const char *bad[] = {"-5ms", "-0ns", "+5ms", "-1e3us", "5e-ms", "5e",        "1es",
	                     "e3ms", " 5ms", "5ms ", "0x10ms", "infs",  "5\xc2\xb5s"};
	uint64_t ns;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ada_trigger_parse_duration(bad[i], &ns) != -EINVAL)
			fail_msg("'%s' is not refused", bad[i]);
	assert_int_equal(ada_trigger_parse_seconds("-1", &ns), -EINVAL);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(ada_trigger_kind_name(ADA_TRIGGER_CRASH), "crash");
	assert_string_equal(ada_trigger_kind_name(ADA_TRIGGER_P99), "p99");
	assert_string_equal(ada_trigger_kind_name(ADA_TRIGGER_TIME), "time");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forms),
	    cmocka_unit_test(test_bad_forms),
	    cmocka_unit_test(test_durations),
	    cmocka_unit_test(test_seconds),
	    cmocka_unit_test(test_duration_units),
	    cmocka_unit_test(test_duration_unit_required),
	    cmocka_unit_test(test_duration_overflow),
	    cmocka_unit_test(test_duration_negative),
	    cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
