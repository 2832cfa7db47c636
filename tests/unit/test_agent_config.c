/*
 * ADA_HOOK_CONFIG parsing and the verdicts it gives (src/hook/agent_config.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hook.h"

static int parse(const char *s, struct ada_hook_config *c)
{
	return ada_hook_config_parse(s, strlen(s), c);
}

static void test_defaults(void **state)
{
	(void)state;
	struct ada_hook_config c;
	assert_int_equal(parse("", &c), 0);
	assert_true(c.follow);
	assert_true(c.defaults);
	assert_true(ada_hook_config_module_wanted(&c, "/lib/x86_64-linux-gnu/libc.so.6"));
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "malloc"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "setjmp"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "__sigsetjmp"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "vfork"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_Unwind_Find_FDE"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "main.cold"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "f.cold.3"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "coldstart"), ADA_HOOK_OK);
	/* An infix as long as the name, or one byte longer. */
	assert_int_equal(ada_hook_config_symbol_verdict(&c, ".cold"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, ".col"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "FunctionCallbackInfo"),
	                 ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "FunctionCallbackInf"), ADA_HOOK_OK);
	/* The infix after false starts on its first byte, at the very end,
	 * and never: each place its first byte occurs is tried. */
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "a..co.col.cold"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "a..co.col.colt.c"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "x.c.co.col"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_ZNK4v8FFunctionCallbackInfo"),
	                 ADA_SKIP_EXCLUDED);
	/* V8's C entries and API callbacks (node). */
	assert_int_equal(ada_hook_config_symbol_verdict(
	                     &c, "_ZN2v88internal18Runtime_ThrowErrorEiPmPNS0_7IsolateE"),
	                 ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(
	                     &c, "_ZN4node2fs4OpenERKN2v820FunctionCallbackInfoINS1_5ValueEEE"),
	                 ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_ZN2v88internal4Heap7CollectEv"),
	                 ADA_HOOK_OK);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("defaults=0", &c), 0);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "setjmp"), ADA_HOOK_OK);
	assert_true(c.cache);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("cache=0", &c), 0);
	assert_false(c.cache);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("cache=maybe", &c), -EINVAL);
	ada_hook_config_fini(&c);
	/* One analysis thread unless asked (a second one changes glibc's
	 * mode for the program: docs/hooks.md). */
	assert_int_equal(parse("", &c), 0);
	assert_int_equal(c.analysis_threads, 1);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("analysis-threads=2", &c), 0);
	assert_int_equal(c.analysis_threads, 2);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("analysis-threads=1", &c), 0);
	assert_int_equal(c.analysis_threads, 1);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("analysis-threads=3", &c), -EINVAL);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("analysis-threads=", &c), -EINVAL);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("analysis-threads=22", &c), -EINVAL);
	ada_hook_config_fini(&c);
	/* --count-only's live counts' thread unless count-live=0 (docs/hooks.md,
	 * "Live counts"). */
	assert_int_equal(parse("count-only=leaf", &c), 0);
	assert_true(c.count_live);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("count-only=leaf;count-live=0", &c), 0);
	assert_false(c.count_live);
	assert_int_equal(c.n_count_only, 1);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("count-live=maybe", &c), -EINVAL);
	ada_hook_config_fini(&c);
}

/* Every name default excludes exactly its name (the verdict compares a
 * name with them only when the hash of its first 8 bytes says it may be
 * one): not its prefixes, extensions or names sharing its first 8 bytes;
 * the prefix default every name starting with it, itself included. */
static void test_default_names(void **state)
{
	(void)state;
	static const char *const names[] = {
	    "setjmp",
	    "_setjmp",
	    "__sigsetjmp",
	    "sigsetjmp",
	    "getcontext",
	    "swapcontext",
	    "__start_context",
	    "vfork",
	    "__vfork",
	    "clone",
	    "__clone",
	    "clone3",
	    "__clone3",
	    "__clone_internal",
	    "__tls_get_addr",
	    "__libc_start_main",
	    "__libc_start_call_main",
	};
	struct ada_hook_config c;
	char b[64];
	assert_int_equal(parse("", &c), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);
		assert_int_equal(ada_hook_config_symbol_verdict(&c, names[i]), ADA_SKIP_EXCLUDED);
		snprintf(b, sizeof(b), "%s2", names[i]);
		assert_int_equal(ada_hook_config_symbol_verdict(&c, b), ADA_HOOK_OK);
		snprintf(b, sizeof(b), "%.*s", (int)(n - 1), names[i]);
		bool other = false; /* "_setjm" is no default, "__clone" is */
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			other = other || !strcmp(b, names[k]);
		assert_int_equal(ada_hook_config_symbol_verdict(&c, b),
		                 other ? ADA_SKIP_EXCLUDED : ADA_HOOK_OK);
		snprintf(b, sizeof(b), "%s", names[i]);
		b[n - 1] = b[n - 1] == 'x' ? 'y' : 'x';
		assert_int_equal(ada_hook_config_symbol_verdict(&c, b), ADA_HOOK_OK);
	}
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_Unwind_"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_Unwind_Resume"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_Unwind"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "_Unwinds"), ADA_HOOK_OK);
	ada_hook_config_fini(&c);
}

static void test_globs(void **state)
{
	(void)state;
	struct ada_hook_config c;
	assert_int_equal(parse("exclude=libz*,*/libssl.so.3;include-symbol=http_*,main;"
	                       "exclude-symbol=http_debug*;follow=0",
	                       &c),
	                 0);
	assert_false(c.follow);
	assert_false(ada_hook_config_module_wanted(&c, "/usr/lib/libz.so.1"));
	assert_false(ada_hook_config_module_wanted(&c, "/usr/lib/libssl.so.3"));
	assert_true(ada_hook_config_module_wanted(&c, "/usr/lib/libcrypto.so.3"));
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "http_get"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "main"), ADA_HOOK_OK);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "http_debug_dump"), ADA_SKIP_EXCLUDED);
	assert_int_equal(ada_hook_config_symbol_verdict(&c, "malloc"), ADA_SKIP_EXCLUDED);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("include=prog;include=libfoo.so*", &c), 0);
	assert_int_equal(c.n_mod_include, 2);
	assert_true(ada_hook_config_module_wanted(&c, "/home/u/prog"));
	assert_true(ada_hook_config_module_wanted(&c, "/home/u/libfoo.so.2"));
	assert_false(ada_hook_config_module_wanted(&c, "/lib/libc.so.6"));
	ada_hook_config_fini(&c);
}

static void test_bad(void **state)
{
	(void)state;
	struct ada_hook_config c;
	assert_int_equal(parse("colour=blue", &c), -EINVAL);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("follow=yes", &c), -EINVAL);
	ada_hook_config_fini(&c);
	assert_int_equal(parse("exclude", &c), -EINVAL);
	ada_hook_config_fini(&c);
	char big[2048] = "exclude=";
	for (int i = 0; i < ADA_HOOK_MAX_GLOBS + 1; i++)
		strcat(big, "a,");
	assert_int_equal(parse(big, &c), -E2BIG);
	ada_hook_config_fini(&c);
	/* not NUL-terminated: only len bytes count */
	assert_int_equal(ada_hook_config_parse("follow=0garbage", 8, &c), 0);
	assert_false(c.follow);
	ada_hook_config_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_default_names),
	    cmocka_unit_test(test_globs),
	    cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
