/*
 * The agent's fprintf (agent_printf.c) against snprintf: every row is
 * formatted by both and must read the same, the subset the agent formats
 * itself (negatives with zero padding, INT_MIN, LONG_MIN, widths, l and z
 * lengths) and the formats it must hand to vfprintf (%5s, %-3d, %ls, %lc,
 * %%, precisions). The agent's own formats stay its own (no vfprintf on
 * agent.json's path).
 */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <cmocka.h>

#include "agent_printf_internal.h"

__attribute__((format(printf, 1, 2))) static char *agent_fmt(const char *fmt, ...)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	va_list ap;
	va_start(ap, fmt);
	agent_vprintf(f, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Both formatters over the same arguments; the line names the row. */
#define SAME(...)                                                                                  \
	do {                                                                                       \
		char want_[256];                                                                   \
		snprintf(want_, sizeof(want_), __VA_ARGS__);                                       \
		char *got_ = agent_fmt(__VA_ARGS__);                                               \
		if (strcmp(got_, want_))                                                           \
			fail_msg("line %d: agent \"%s\", snprintf \"%s\"", __LINE__, got_, want_); \
		free(got_);                                                                        \
	} while (0)

static void test_numbers(void **state)
{
	(void)state;
	SAME("%d %d %d", 0, 7, -7);
	SAME("%05d|%5d|%05d|%5d", -3, -3, 3, 3);
	SAME("%02d|%01d|%0d", -3, -3, -3);
	SAME("%d|%011d|%012d", INT_MIN, INT_MIN, INT_MIN);
	SAME("%d %u %x", INT_MAX, UINT_MAX, UINT_MAX);
	SAME("%ld|%020ld|%ld", LONG_MIN, LONG_MIN, LONG_MAX);
	SAME("%lu %lx %016lx", ULONG_MAX, ULONG_MAX, 0xabcUL);
	SAME("%zu %zx %zd %05zd", SIZE_MAX, (size_t)255, (ssize_t)-1, (ssize_t)-42);
	SAME("%" PRIu64 " %" PRIx64 " %" PRIu32 " %016" PRIx64, UINT64_MAX, (uint64_t)1, UINT32_MAX,
	     (uint64_t)0xdead);
	SAME("%99d|%099d|%2x", -1, -1, 0x1234);
}

static void test_text(void **state)
{
	(void)state;
	SAME("%s|%c|%s", "abc", 'x', "");
	SAME("[%5s][%-5s][%.2s][%5c][%-3d]", "ab", "ab", "abc", 'y', 4);
	SAME("%ls|%lc|%5ls", L"wide", (wint_t)L'w', L"ab");
	SAME("100%% %d%%", 5);
	SAME("%+d % d %#x %.3d %hd %hhu %lld %5.1f", 5, 5, 255, 7, (short)-2, (unsigned char)200,
	     LLONG_MIN, 2.25);
}

/* agent.json's formats are formatted by the agent itself (agent.c). */
static void test_ours(void **state)
{
	(void)state;
	assert_true(agent_fmt_ours("%s\"%s\": %" PRIu64));
	assert_true(agent_fmt_ours("\"%016" PRIx64 "\", "));
	assert_true(agent_fmt_ours("{\"module_id\": %" PRIu32 ", %zu %c %d %u %lx"));
	assert_false(agent_fmt_ours("%5s"));
	assert_false(agent_fmt_ours("%5c"));
	assert_false(agent_fmt_ours("%ls"));
	assert_false(agent_fmt_ours("%lc"));
	assert_false(agent_fmt_ours("%zs"));
	assert_false(agent_fmt_ours("%%"));
	assert_false(agent_fmt_ours("%100d"));
	assert_false(agent_fmt_ours("%d%"));
}

/* The forked child's names by hand, as snprintf makes them. */
static void test_names(void **state)
{
	(void)state;
	char out[64], want[64];
	assert_true(agent_name_dec(out, sizeof(out), "module_", 0, ".syms"));
	assert_string_equal(out, "module_0.syms");
	assert_true(agent_name_dec(out, sizeof(out), "module_", 4294967295ull, ".syms"));
	assert_string_equal(out, "module_4294967295.syms");
	assert_true(agent_pid_path(out, sizeof(out), "/s/d", 12345, "agent.json"));
	snprintf(want, sizeof(want), "%s/pid_%d/%s", "/s/d", 12345, "agent.json");
	assert_string_equal(out, want);
	/* Exactly fitting, one byte short, nothing, a negative pid. */
	size_t n = strlen(want) + 1;
	assert_true(agent_pid_path(out, n, "/s/d", 12345, "agent.json"));
	assert_string_equal(out, want);
	assert_false(agent_pid_path(out, n - 1, "/s/d", 12345, "agent.json"));
	assert_false(agent_pid_path(out, 0, "/s/d", 12345, "agent.json"));
	assert_false(agent_pid_path(out, sizeof(out), "/s/d", -1, "agent.json"));
	assert_true(agent_name_dec(out, 15, "module_", 12, ".syms"));
	assert_false(agent_name_dec(out, 14, "module_", 12, ".syms"));
	assert_false(agent_name_dec(out, 8, "module_", 1, ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_ours),
	    cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
