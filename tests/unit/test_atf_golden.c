/* The golden session: a fresh generation is byte-for-byte the checked-in
 * tests/data/golden, it validates clean, and its manifest and symbols read
 * back through the library. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "atf.h"
#include "atf_golden.h"
#include "manifest.h"
#include "symbols.h"

static char tmp_root[] = "/tmp/ada_atf_golden_XXXXXX";

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmp_root))
		return -1;
	return golden_write(tmp_root);
}

static int teardown(void **state)
{
	char cmd[256];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
	return system(cmd) == 0 ? 0 : -1;
}

static void bytes_equal_checked_in(void **state)
{
	(void)state;
	for (const char *const *f = golden_files; *f; f++) {
		char a[512], b[512];
		size_t la, lb;
		snprintf(a, sizeof(a), "%s/%s", tmp_root, *f);
		snprintf(b, sizeof(b), "%s/%s", ADA_GOLDEN_DIR, *f);
		uint8_t *pa = slurp(a, &la), *pb = slurp(b, &lb);
		assert_non_null(pa);
		if (!pb)
			fail_msg("%s is missing: regenerate with atf_gen_golden tests/data/golden",
			         b);
		assert_int_equal(la, lb);
		assert_memory_equal(pa, pb, la);
		free(pa);
		free(pb);
	}
}

static void report_fail(void *ctx, enum ada_atf_severity sev, const char *path, uint64_t off,
                        const char *msg)
{
	(void)ctx;
	(void)sev;
	print_message("%s: offset %llu: %s\n", path, (unsigned long long)off, msg);
}

static void validates_clean(void **state)
{
	struct ada_atf_report r = {.fn = report_fail};
	char dir[512];

	(void)state;
	for (int t = 0; t < 2; t++) {
		snprintf(dir, sizeof(dir), "%s/%s/thread_%d", ADA_GOLDEN_DIR, GOLDEN_PID_DIR, t);
		assert_int_equal(ada_atf_validate_thread(dir, &r), 0);
	}
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.warnings, 0);
}

static void names_and_links_resolve(void **state)
{
	char pid_dir[512];
	json_t *doc;
	struct ada_symtab *st;
	struct ada_atf_tree *tree;
	const char *name, *mod;

	(void)state;
	snprintf(pid_dir, sizeof(pid_dir), "%s/%s", ADA_GOLDEN_DIR, GOLDEN_PID_DIR);
	assert_int_equal(ada_manifest_read(pid_dir, &doc), 0);
	assert_string_equal(ada_manifest_state(doc), "complete");
	assert_int_equal(ada_manifest_pid(doc), GOLDEN_PID);
	assert_int_equal(ada_manifest_tid_of(doc, 1), 4243);
	assert_int_equal(ada_manifest_module_count(doc), 2);
	assert_int_equal(ada_symtab_load(pid_dir, doc, NULL, NULL, &st), 0);
	assert_true(ada_symtab_resolve(st, atf_function_id(1, 3), &name, &mod));
	assert_string_equal(name, "worker");
	assert_string_equal(mod, "/usr/bin/golden-demo");
	assert_false(ada_symtab_resolve(st, atf_function_id(2, 7), &name, &mod));
	assert_null(name);
	assert_string_equal(mod, "/usr/lib/libgolden.so"); /* from the manifest */
	assert_false(ada_symtab_resolve(st, atf_function_id(9, 0), &name, &mod));
	assert_null(mod);
	ada_symtab_free(st);
	json_decref(doc);

	assert_int_equal(ada_atf_tree_scan(ADA_GOLDEN_DIR, &tree), 0);
	assert_int_equal(tree->npids, 1);
	assert_int_equal(tree->pids[0].pid, GOLDEN_PID);
	assert_int_equal(tree->pids[0].nthreads, 2);
	struct ada_atf_thread *t;
	assert_int_equal(ada_atf_thread_open(tree->pids[0].thread_dirs[0], 0, &t), 0);
	const struct ada_atf_index *ix = t->gen[0].index;
	const struct ada_atf_detail *d = t->gen[0].detail;
	assert_non_null(d);
	/* forward and back, O(1) both ways */
	const struct atf_detail_event_header *de =
	    ada_atf_detail_get(d, ada_atf_index_get(ix, 4)->detail_seq);
	assert_int_equal(de->index_seq, 4);
	assert_int_equal(ada_atf_index_get(ix, de->index_seq)->detail_seq, 1);
	ada_atf_thread_free(t);
	ada_atf_tree_free(tree);
}

/* A pc at a fatal signal (ada crash's frame #0): the function whose extent
 * holds it, hooked or not; else module+offset inside the module's
 * functions' span; else nothing. golden-demo is loaded at 0x555555554000:
 * main [0x1139, +42), foo, bar, worker [0x11a0, +64), tiny [0x11f0, +3). */
static void addresses_resolve(void **state)
{
	const uint64_t base = 0x555555554000ull;
	char pid_dir[512];
	json_t *doc;
	struct ada_symtab *st;
	struct ada_symtab_addr at;

	(void)state;
	snprintf(pid_dir, sizeof(pid_dir), "%s/%s", ADA_GOLDEN_DIR, GOLDEN_PID_DIR);
	assert_int_equal(ada_manifest_read(pid_dir, &doc), 0);
	assert_int_equal(ada_symtab_load(pid_dir, doc, NULL, NULL, &st), 0);
	assert_true(ada_symtab_by_addr(st, base + 0x11f2, &at)); /* too_short: still named */
	assert_int_equal(at.function_id, atf_function_id(1, 4));
	assert_string_equal(at.name, "tiny");
	assert_string_equal(at.module, "/usr/bin/golden-demo");
	assert_int_equal(at.offset, 2);
	assert_true(ada_symtab_by_addr(st, base + 0x1139, &at));
	assert_string_equal(at.name, "main");
	assert_int_equal(at.offset, 0);
	assert_true(ada_symtab_by_addr(st, base + 0x11df, &at)); /* worker's last byte */
	assert_string_equal(at.name, "worker");
	assert_int_equal(at.offset, 63);
	assert_true(ada_symtab_by_addr(st, base + 0x1165, &at)); /* between main and foo */
	assert_int_equal(at.function_id, 0);
	assert_null(at.name);
	assert_string_equal(at.module, "/usr/bin/golden-demo");
	assert_int_equal(at.offset, 0x1165);
	assert_false(ada_symtab_by_addr(st, base + 0x11f3, &at)); /* past every function */
	assert_null(at.module);
	assert_false(ada_symtab_by_addr(st, base - 1, &at));
	ada_symtab_free(st);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bytes_equal_checked_in),
	    cmocka_unit_test(validates_clean),
	    cmocka_unit_test(names_and_links_resolve),
	    cmocka_unit_test(addresses_resolve),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
