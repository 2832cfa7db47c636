/*
 * The manifest's writer (src/atf/json_dump.c) gives json_dumps(doc,
 * JSON_INDENT(2) | JSON_PRESERVE_ORDER)'s text byte for byte: on the
 * golden manifest, on a tree of every kind of value (empty containers,
 * nesting, negative and extreme integers, reals, escapes and control
 * characters, UTF-8, keys that need escaping, an embedded NUL), on
 * random trees; and fails where jansson fails (a string that is not
 * UTF-8).
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atf_internal.h"

static void same_as_jansson(const json_t *doc)
{
	char *want = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	size_t n = 0;
	char *got = ada_json_dumps_indent2(doc, &n);
	assert_non_null(want);
	assert_non_null(got);
	assert_int_equal(n, strlen(want));
	assert_string_equal(got, want);
	free(want);
	free(got);
}

static void test_golden(void **state)
{
	(void)state;
	json_error_t e;
	json_t *m = json_load_file(ADA_GOLDEN_DIR "/pid_4242/manifest.json", 0, &e);
	assert_non_null(m);
	same_as_jansson(m);
	json_decref(m);
}

static void test_kinds(void **state)
{
	(void)state;
	json_t *o = json_object();
	json_object_set_new(o, "empty_o", json_object());
	json_object_set_new(o, "empty_a", json_array());
	json_object_set_new(o, "min", json_integer(INT64_MIN));
	json_object_set_new(o, "max", json_integer(INT64_MAX));
	json_object_set_new(o, "zero", json_integer(0));
	json_object_set_new(o, "neg", json_integer(-42));
	json_object_set_new(o, "r1", json_real(0.1));
	json_object_set_new(o, "r2", json_real(1e300));
	json_object_set_new(o, "r3", json_real(-2.0));
	json_object_set_new(o, "r4", json_real(1.5e-7));
	json_object_set_new(o, "t", json_true());
	json_object_set_new(o, "f", json_false());
	json_object_set_new(o, "n", json_null());
	json_object_set_new(o, "esc", json_string("a\"b\\c/d\b\f\n\r\t\x01\x1f\x7f end"));
	json_object_set_new(o, "utf8",
	                    json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \"q\""));
	json_object_set_new(o, "key \"quoted\"\n", json_string(""));
	json_object_set_new(o, "nul", json_stringn("a\0b", 3));
	json_t *deep = json_array();
	json_t *cur = deep;
	for (int i = 0; i < 40; i++) { /* deeper than the indent table */
		json_t *next = i % 2 ? json_array() : json_object();
		if (json_is_array(cur))
			json_array_append_new(cur, next);
		else
			json_object_set_new(cur, "k", next);
		cur = next;
	}
	json_array_append_new(deep, json_pack("[i, s, [], {}]", 1, "x"));
	json_object_set_new(o, "deep", deep);
	same_as_jansson(o);
	json_t *a = json_pack("[{}, [], i, s]", 1, "s");
	assert_non_null(a);
	same_as_jansson(a);
	same_as_jansson(json_object_get(o, "empty_o"));
	json_decref(a);
	json_decref(o);
}

/* A random tree of depth at most d (xorshift, fixed seed). */
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static json_t *random_tree(int d)
{
	static const char *const strs[] = {
	    "", "plain", "tab\there", "q\"", "/usr/lib/x.so", "\xc3\xa9t\xc3\xa9", "0x7fff0000"};
	switch (d > 0 ? rnd() % 7 : rnd() % 5) {
	case 0:
		return json_integer((json_int_t)(rnd() >> (rnd() % 64)) * (rnd() % 2 ? 1 : -1));
	case 1:
		return json_string(strs[rnd() % (sizeof(strs) / sizeof(strs[0]))]);
	case 2:
		return json_real((double)(int64_t)rnd() / (double)(1 + rnd() % 1000000));
	case 3:
		return rnd() % 2 ? json_true() : json_null();
	case 4:
		return json_false();
	case 5: {
		json_t *a = json_array();
		for (uint64_t i = 0, n = rnd() % 5; i < n; i++)
			json_array_append_new(a, random_tree(d - 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (uint64_t i = 0, n = rnd() % 6; i < n; i++) {
			char k[24];
			snprintf(k, sizeof(k), "k%u", (unsigned)(rnd() % 50));
			json_object_set_new(o, k, random_tree(d - 1));
		}
		return o;
	}
	}
}

static void test_random(void **state)
{
	(void)state;
	for (int i = 0; i < 500; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "v", random_tree(6));
		same_as_jansson(o);
		json_decref(o);
	}
}

static void test_refusals(void **state)
{
	(void)state;
	json_t *o = json_object();
	json_object_set_new(o, "bad", json_stringn_nocheck("a\xff", 2));
	assert_null(json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER));
	assert_null(ada_json_dumps_indent2(o, NULL));
	json_decref(o);
	json_t *s = json_string("scalar");
	assert_null(ada_json_dumps_indent2(s, NULL)); /* json_dumps refuses a scalar too */
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden),
	    cmocka_unit_test(test_kinds),
	    cmocka_unit_test(test_random),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
