/* manifest.json write/read and .syms parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <cmocka.h>

#include "manifest.h"
#include "symbols.h"

static void manifest_roundtrip(void **state)
{
	char dir[] = "/tmp/ada_atf_manifest_XXXXXX", path[128];
	json_t *doc, *back;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(ada_manifest_read(dir, &back), -ENOENT);
	assert_null(back);
	doc = ada_manifest_new(77);
	json_object_set_new(doc, "threads",
	                    json_pack("[{s:i, s:i, s:[{s:I}, {s:I}]}]", "thread", 3, "tid", 1234,
	                              "files", "events", (json_int_t)5, "events", (json_int_t)7));
	assert_int_equal(ada_manifest_write(dir, doc), 0);
	snprintf(path, sizeof(path), "%s/manifest.json.tmp", dir);
	assert_int_equal(access(path, F_OK), -1); /* renamed away */
	assert_int_equal(ada_manifest_read(dir, &back), 0);
	assert_true(json_equal(doc, back));
	assert_string_equal(ada_manifest_state(back), "recording");
	struct ada_manifest_thread t;
	assert_int_equal(ada_manifest_thread_get(back, 0, &t), 0);
	assert_int_equal(t.thread, 3);
	assert_int_equal(t.events, 12);
	assert_int_equal(ada_manifest_tid_of(back, 3), 1234);
	assert_int_equal(ada_manifest_tid_of(back, 4), 0);
	json_decref(back);
	/* Threads listed out of the order of their numbers (as the drain met
	 * them): each is found wherever it is, a missing one is 0. */
	json_t *many = ada_manifest_new(78), *arr = json_array();
	static const int order[] = {2, 0, 5, 1, 3, 7, 4, 6};
	for (size_t i = 0; i < 8; i++)
		json_array_append_new(
		    arr, json_pack("{s:i, s:i}", "thread", order[i], "tid", 100 + order[i]));
	json_object_set_new(many, "threads", arr);
	for (uint32_t k = 0; k < 8; k++)
		assert_int_equal(ada_manifest_tid_of(many, k), 100 + k);
	assert_int_equal(ada_manifest_tid_of(many, 8), 0);
	assert_int_equal(ada_manifest_tid_of(many, 1000), 0);
	json_decref(many);
	json_decref(doc);
	/* damaged: half a document, or JSON that is not ours */
	assert_int_equal(ada_manifest_parse("{\"format\": \"ada-man", 19, &back), -EBADMSG);
	assert_int_equal(ada_manifest_parse("[1,2]", 5, &back), -EBADMSG);
	assert_int_equal(ada_manifest_parse("{\"format\":\"x\"}", 14, &back), -EBADMSG);
	json_t *num = json_integer(3);
	assert_int_equal(ada_manifest_write(dir, num), -EINVAL);
	json_decref(num);
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	unlink(path);
	rmdir(dir);
}

static const char table[] = "F 0 10 5 hooked alpha\nF 2 20 9 too_short beta gamma\n";

static void syms_parse_good(void **state)
{
	char buf[512];
	struct ada_syms_module *m;

	(void)state;
	snprintf(buf, sizeof(buf),
	         "ada-symbols 1\n# c\nmodule_id 4\npath /a b/lib.so\nbuild_id -\n"
	         "load_base 0x7f00\ntable_xxh64 %016llx\nfunctions 2\nnew_key whatever\n%s",
	         (unsigned long long)XXH64(table, strlen(table), 0), table);
	assert_int_equal(ada_syms_parse(buf, strlen(buf), &m, NULL), 0);
	assert_int_equal(m->module_id, 4);
	assert_string_equal(m->path, "/a b/lib.so");
	assert_null(m->build_id);
	assert_int_equal(m->load_base, 0x7f00);
	assert_true(m->has_table_xxh64);
	assert_int_equal(m->table_xxh64, m->computed_xxh64);
	assert_int_equal(m->nfuncs, 2);
	assert_string_equal(ada_syms_find(m, 2)->name, "beta gamma");
	assert_string_equal(ada_syms_find(m, 2)->status, "too_short");
	assert_int_equal(ada_syms_find(m, 0)->offset, 0x10);
	assert_null(ada_syms_find(m, 1));
	assert_null(ada_syms_find(m, 3));
	ada_syms_module_free(m);
}

static void syms_parse_bad(void **state)
{
	struct ada_syms_module *m = NULL;
	uint64_t line;
	const char *bad[] = {
	    "",
	    "ada-symbols 3\nmodule_id 1\n",
	    "ada-symbols 1\npath /x\n", /* no module_id */
	    "ada-symbols 1\nmodule_id x\n",
	    "ada-symbols 1\nmodule_id 1\nF 0 zz 5 hooked a\n",
	    "ada-symbols 1\nmodule_id 1\nF 0 10 5 hooked\n", /* no name */
	    "ada-symbols 1\nmodule_id 1\nF 99999999999 10 5 hooked a\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ada_syms_parse(bad[i], strlen(bad[i]), &m, &line), -EBADMSG);
		assert_null(m);
	}
	assert_int_equal(ada_syms_parse(bad[4], strlen(bad[4]), &m, &line), -EBADMSG);
	assert_int_equal(line, 3);
}

static void syms_hash_mismatch_detected(void **state)
{
	const char *s =
	    "ada-symbols 1\nmodule_id 1\ntable_xxh64 0000000000000001\nF 0 10 5 hooked a\n";
	struct ada_syms_module *m;

	(void)state;
	assert_int_equal(ada_syms_parse(s, strlen(s), &m, NULL), 0);
	assert_int_not_equal(m->table_xxh64, m->computed_xxh64);
	assert_int_equal(m->computed_xxh64, XXH64("F 0 10 5 hooked a\n", 18, 0));
	ada_syms_module_free(m);
}

/* A name is shown on terminals: its control characters (an escape
 * sequence a hostile image's symbol or a rewritten file carries; C1's
 * CSI as UTF-8) come out as '?', other UTF-8 (an e acute) as it is; the
 * table's hash is the file's bytes. */
static void syms_control_bytes_masked(void **state)
{
	const char *line = "F 0 10 5 hooked a\033]0;x\007b\tc\177\302\233d\303\251\n";
	char buf[256];
	struct ada_syms_module *m;

	(void)state;
	snprintf(buf, sizeof(buf), "ada-symbols 1\nmodule_id 1\n%s", line);
	assert_int_equal(ada_syms_parse(buf, strlen(buf), &m, NULL), 0);
	assert_string_equal(ada_syms_find(m, 0)->name, "a?]0;x?b?c??d\303\251");
	assert_int_equal(m->computed_xxh64, XXH64(line, strlen(line), 0));
	ada_syms_module_free(m);
}

/* Every prefix parses or fails cleanly, inside the buffer (ASan). */
static void syms_every_prefix_safe(void **state)
{
	const char *s =
	    "ada-symbols 1\nmodule_id 1\nload_base 0x10\nF 0 10 5 hooked a\nF 1 20 5 hooked b\n";
	struct ada_syms_module *m;

	(void)state;
	for (size_t n = 0; n <= strlen(s); n++) {
		char *b = malloc(n ? n : 1);
		memcpy(b, s, n);
		if (ada_syms_parse(b, n, &m, NULL) == 0)
			ada_syms_module_free(m);
		free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(manifest_roundtrip),     cmocka_unit_test(syms_parse_good),
	    cmocka_unit_test(syms_parse_bad),         cmocka_unit_test(syms_hash_mismatch_detected),
	    cmocka_unit_test(syms_every_prefix_safe), cmocka_unit_test(syms_control_bytes_masked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
