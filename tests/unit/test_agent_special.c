/*
 * The special functions by name (agent_special.c, agent_special_of_name):
 * every special name gives its kind; its prefixes, its extensions, the
 * names sharing its first 8 bytes (those the name filter cannot tell
 * apart) and a byte changed anywhere give none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent_internal.h"

static const struct {
	const char *name;
	enum agent_special kind;
} specials[] = {
    {"_Unwind_RaiseException", AGENT_SP_UNWIND},
    {"_Unwind_Resume", AGENT_SP_UNWIND},
    {"_Unwind_Resume_or_Rethrow", AGENT_SP_UNWIND},
    {"_Unwind_ForcedUnwind", AGENT_SP_FORCED},
    {"pthread_exit", AGENT_SP_FORCED},
    {"__cxa_begin_catch", AGENT_SP_CATCH},
    {"exit", AGENT_SP_EXIT},
    {"_exit", AGENT_SP_EXIT},
    {"_Exit", AGENT_SP_EXIT},
    {"quick_exit", AGENT_SP_EXIT},
    {"dlopen", AGENT_SP_DL},
    {"dlmopen", AGENT_SP_DL},
    {"dlclose", AGENT_SP_DL},
    {"_dl_catch_exception", AGENT_SP_DL},
    {"_dl_catch_error", AGENT_SP_DL},
    {"execve", AGENT_SP_EXEC},
    {"execveat", AGENT_SP_EXEC},
    {"fexecve", AGENT_SP_EXEC},
    {"_ZN8greenlet8Greenlet13g_switchstackEv", AGENT_SP_SWITCH},
    {"g_switchstack", AGENT_SP_SWITCH},
};
#define N_SPECIALS (sizeof(specials) / sizeof(specials[0]))

static bool is_special(const char *name)
{
	for (size_t i = 0; i < N_SPECIALS; i++)
		if (!strcmp(specials[i].name, name))
			return true;
	return false;
}

static void test_specials(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_SPECIALS; i++)
		assert_int_equal(agent_special_of_name(specials[i].name), specials[i].kind);
}

/* Prefixes, extensions and one-byte changes of every special name (the
 * filter passes every name sharing a special's first 8 bytes: the compare
 * after it decides). */
static void test_near_misses(void **state)
{
	(void)state;
	char b[128];
	size_t checked = 0;
	for (size_t i = 0; i < N_SPECIALS; i++) {
		const char *s = specials[i].name;
		size_t n = strlen(s);
		for (size_t k = 0; k < n; k++) {
			snprintf(b, sizeof(b), "%.*s", (int)k, s);
			assert_true(is_special(b) || agent_special_of_name(b) == AGENT_SP_NONE);
			snprintf(b, sizeof(b), "%s", s);
			b[k] = b[k] == 'x' ? 'y' : 'x';
			assert_true(is_special(b) || agent_special_of_name(b) == AGENT_SP_NONE);
			checked += 2;
		}
		snprintf(b, sizeof(b), "%s2", s);
		assert_int_equal(agent_special_of_name(b), AGENT_SP_NONE);
		snprintf(b, sizeof(b), "%s@@GLIBC_2.2.5", s);
		assert_int_equal(agent_special_of_name(b), AGENT_SP_NONE);
	}
	assert_true(checked > 400);
	assert_int_equal(agent_special_of_name("_Unwind_Find_FDE"), AGENT_SP_NONE);
	assert_int_equal(agent_special_of_name("_dl_catch_exceptio"), AGENT_SP_NONE);
	assert_int_equal(agent_special_of_name("__libc_start_main"), AGENT_SP_NONE);
	assert_int_equal(agent_special_of_name(""), AGENT_SP_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_specials),
	    cmocka_unit_test(test_near_misses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
