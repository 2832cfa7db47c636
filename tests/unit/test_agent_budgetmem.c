/*
 * The budget's memory of an image (src/hook/budgetmem.c): round trip,
 * every single-bit flip refused, a file of another symbol table (stale,
 * told apart from damage), an index out of the table, a truncated or
 * oversized file, the path rules and the store and load through the file
 * system (a missing file, a link planted where the file goes is replaced,
 * never followed, each refusal's own errno; the largest file).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "budgetmem_internal.h"

#define N 9

static struct ada_hook_fn fns[N];

static void make_table(struct ada_hook_symtab *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < N; i++) {
		fns[i].offset = 0x1000 + 0x40 * i;
		fns[i].size = 0x20 + i;
	}
	st->fns = fns;
	st->count = N;
	for (uint32_t i = 0; i < 20; i++)
		st->build_id[i] = (uint8_t)(0xb0 + i);
	st->build_id_len = 20;
}

static const uint32_t idx[3] = {1, 4, 8};

static void test_round_trip(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	uint8_t *b, mark[N] = {0};
	size_t n;
	make_table(&st);
	assert_int_equal(budgetmem_encode(&st, idx, 3, &b, &n), 0);
	assert_int_equal(budgetmem_parse(b, n, &st, mark), 3);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(mark[i], i == 1 || i == 4 || i == 8);
	free(b);
}

static void test_corrupt(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	uint8_t *b, mark[N];
	size_t n;
	make_table(&st);
	assert_int_equal(budgetmem_encode(&st, idx, 3, &b, &n), 0);
	for (size_t bit = 0; bit < n * 8; bit++) {
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		memset(mark, 0, sizeof(mark));
		assert_int_equal(budgetmem_parse(b, n, &st, mark), -EBADMSG);
		for (uint32_t i = 0; i < N; i++)
			assert_int_equal(mark[i], 0); /* nothing marked from a bad file */
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(budgetmem_parse(b, cut, &st, mark), -EBADMSG);
	free(b);
}

/* Another table (a function's size changed, one function less) is
 * refused as stale (told apart from damage: the recall counts each);
 * an index past the table (a valid checksum over it) as corrupt. */
static void test_other_table(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	uint8_t *b, mark[N + 1] = {0};
	size_t n;
	make_table(&st);
	assert_int_equal(budgetmem_encode(&st, idx, 3, &b, &n), 0);
	fns[2].size++;
	assert_int_equal(budgetmem_parse(b, n, &st, mark), -ESTALE);
	make_table(&st);
	st.count = N - 1;
	assert_int_equal(budgetmem_parse(b, n, &st, mark), -ESTALE);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(mark[i], 0);
	free(b);
	make_table(&st);
	const uint32_t bad[2] = {2, N};
	assert_int_equal(budgetmem_encode(&st, bad, 2, &b, &n), 0);
	assert_int_equal(budgetmem_parse(b, n, &st, mark), -EBADMSG);
	assert_int_equal(mark[2], 0);
	free(b);
	uint32_t many[BUDGETMEM_MAX + 1] = {0};
	assert_int_equal(budgetmem_encode(&st, many, BUDGETMEM_MAX + 1, &b, &n), -EINVAL);
}

static void test_path(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	char p[4096];
	make_table(&st);
	assert_int_equal(budgetmem_path("/c/ada", &st, p, sizeof(p)), 0);
	assert_string_equal(p, "/c/ada/b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3.moved");
	assert_int_equal(budgetmem_path("rel", &st, p, sizeof(p)), -ENOENT);
	assert_int_equal(budgetmem_path(NULL, &st, p, sizeof(p)), -ENOENT);
	st.build_id_len = 0;
	assert_int_equal(budgetmem_path("/c/ada", &st, p, sizeof(p)), -ENOENT);
}

static void test_store_load(void **state)
{
	(void)state;
	struct ada_hook_symtab st;
	char dir[] = "/tmp/ada_budgetmem_XXXXXX", p[4096], cmd[4200];
	uint8_t mark[N] = {0};
	make_table(&st);
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/x.moved", dir);
	assert_int_equal(budgetmem_load(p, &st, mark), -ENOENT); /* none yet */
	/* A link planted where the file goes: replaced, never followed. */
	char target[4200];
	snprintf(target, sizeof(target), "%s/target", dir);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(budgetmem_store(p, &st, idx, 3), 0);
	struct stat sb;
	assert_int_equal(lstat(p, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_not_equal(access(target, F_OK), 0);
	assert_int_equal(budgetmem_load(p, &st, mark), 3);
	assert_int_equal(mark[4], 1);
	/* Each refusal with its own reason (the recall counts them:
	 * agent.json's count_only.budget_memory). */
	fns[0].size++;
	assert_int_equal(budgetmem_load(p, &st, mark), -ESTALE);
	make_table(&st);
	assert_int_equal(chmod(p, 0620), 0); /* another user's group may write it */
	assert_int_equal(budgetmem_load(p, &st, mark), -EPERM);
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(truncate(p, 20), 0); /* shorter than any file */
	assert_int_equal(budgetmem_load(p, &st, mark), -EBADMSG);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The largest file (one index per count-only slot a process has) goes
 * through the file system whole; one index more is refused when encoded,
 * and a file that long, written by hand, when loaded. */
static void test_store_load_max(void **state)
{
	(void)state;
	enum { M = BUDGETMEM_MAX + 1 };
	struct ada_hook_symtab st;
	char dir[] = "/tmp/ada_budgetmem_XXXXXX", p[4096], cmd[4200];
	struct ada_hook_fn *many = calloc(M, sizeof(*many));
	uint32_t *ix = calloc(M, sizeof(*ix));
	uint8_t *mark = calloc(M, 1), *b;
	size_t n;
	assert_non_null(many);
	assert_non_null(ix);
	assert_non_null(mark);
	make_table(&st);
	for (uint32_t i = 0; i < M; i++) {
		many[i].offset = 0x1000 + 0x10 * i;
		many[i].size = 0x10;
		ix[i] = i;
	}
	st.fns = many;
	st.count = M;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/x.moved", dir);
	assert_int_equal(budgetmem_store(p, &st, ix + 1, BUDGETMEM_MAX), 0);
	assert_int_equal(budgetmem_load(p, &st, mark), (int)BUDGETMEM_MAX);
	for (uint32_t i = 0; i < M; i++)
		assert_int_equal(mark[i], i != 0);
	/* One more: the header's count and the length agree, the size does not. */
	assert_int_equal(budgetmem_encode(&st, ix, M, &b, &n), -EINVAL);
	assert_int_equal(budgetmem_encode(&st, ix, BUDGETMEM_MAX, &b, &n), 0);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fwrite(b + n - 12, 1, 4, f), 4); /* an index more */
	assert_int_equal(fclose(f), 0);
	memset(mark, 0, M);
	assert_true(budgetmem_load(p, &st, mark) < 0);
	for (uint32_t i = 0; i < M; i++)
		assert_int_equal(mark[i], 0);
	free(b);
	free(many);
	free(ix);
	free(mark);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_other_table), cmocka_unit_test(test_path),
	    cmocka_unit_test(test_store_load),  cmocka_unit_test(test_store_load_max),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
