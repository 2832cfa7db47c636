/*
 * --trigger SPEC parsing: every form, every bad form with its message,
 * durations and fractional seconds.
 */
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
	    cmocka_unit_test(test_forms),      cmocka_unit_test(test_bad_forms),
	    cmocka_unit_test(test_durations),  cmocka_unit_test(test_seconds),
	    cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
