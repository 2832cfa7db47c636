/*
 * The plan cache file (src/hook/plancache.c): round trip, a missing file,
 * corrupt and truncated files, a file for another build-id / agent /
 * symbol table, bad entries, the path rules and the atomic store.
 */
#define _GNU_SOURCE
#include <errno.h>
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

#include "plancache_internal.h"

#define N 7

static void make_key(struct plan_cache_key *k)
{
	memset(k, 0, sizeof(*k));
	for (uint32_t i = 0; i < 20; i++)
		k->build_id[i] = (uint8_t)(0xa0 + i);
	k->build_id_len = 20;
	k->agent_hash = 0x1234567890abcdefull;
	k->module_size = 0x200000;
	k->fn_count = N;
	k->table_hash = 0xfeedfacecafebeefull;
}

static void make_entries(struct plan_cache_entry *e)
{
	const struct plan_cache_entry v[N] = {
	    {ADA_HOOK_OK, 5},         {ADA_HOOK_OK, 8},        {ADA_SKIP_BRANCH_INTO_PATCH, 0},
	    {ADA_SKIP_JUMP_TABLE, 0}, {PLAN_CACHE_UNKNOWN, 0}, {ADA_SKIP_TOO_SHORT, 0},
	    {ADA_HOOK_OK, 16},
	};
	memcpy(e, v, sizeof(v));
}

static void encode(uint8_t **b, size_t *n)
{
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	make_key(&k);
	make_entries(e);
	assert_int_equal(plan_cache_encode(&k, e, b, n), 0);
	assert_int_equal(*n, 128 + 2 * N);
}

static void test_round_trip(void **state)
{
	(void)state;
	uint8_t *b;
	size_t n;
	struct plan_cache_key k;
	struct plan_cache_entry e[N], want[N];
	encode(&b, &n);
	make_key(&k);
	make_entries(want);
	memset(e, 0x55, sizeof(e));
	assert_int_equal(plan_cache_parse(b, n, &k, e), 0);
	assert_memory_equal(e, want, sizeof(e));
	free(b);
}

/* Every single-bit flip anywhere in the file is refused. */
static void test_corrupt(void **state)
{
	(void)state;
	uint8_t *b;
	size_t n;
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	encode(&b, &n);
	make_key(&k);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			int r = plan_cache_parse(b, n, &k, e);
			assert_true(r == -EBADMSG || r == -ESTALE);
			assert_int_not_equal(r, 0);
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	assert_int_equal(plan_cache_parse(b, n, &k, e), 0);
	free(b);
}

static void test_truncated(void **state)
{
	(void)state;
	uint8_t *b;
	size_t n;
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	encode(&b, &n);
	make_key(&k);
	for (size_t len = 0; len < n; len++)
		assert_int_equal(plan_cache_parse(b, len, &k, e), -EBADMSG);
	assert_int_equal(plan_cache_parse(NULL, 0, &k, e), -EBADMSG);
	free(b);
}

/* A valid file written for another key is stale, whichever part differs. */
static void test_mismatch(void **state)
{
	(void)state;
	uint8_t *b;
	size_t n;
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	encode(&b, &n);
	for (int which = 0; which < 6; which++) {
		make_key(&k);
		switch (which) {
		case 0:
			k.build_id[3] ^= 1;
			break;
		case 1:
			k.build_id_len = 19;
			break;
		case 2:
			k.agent_hash++;
			break;
		case 3:
			k.module_size += 4096;
			break;
		case 4:
			k.table_hash ^= 1;
			break;
		default:
			k.fn_count = N - 1;
			break;
		}
		int r = plan_cache_parse(b, n, &k, e);
		/* a different count also changes the expected length */
		assert_true(which == 5 ? r == -ESTALE || r == -EBADMSG : r == -ESTALE);
	}
	free(b);
}

/* Entries that no analysis can produce are refused even when the
 * checksum is right (a writer bug, or a crafted file). */
static void test_bad_entries(void **state)
{
	(void)state;
	struct plan_cache_key k;
	struct plan_cache_entry e[N], out[N];
	const struct plan_cache_entry bad[] = {
	    {ADA_HOOK_OK, 4},
	    {ADA_HOOK_OK, 17},
	    {ADA_SKIP_REASON_COUNT, 0},
	    {ADA_SKIP_JUMP_TABLE, 5},
	};
	make_key(&k);
	for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
		uint8_t *b;
		size_t n;
		make_entries(e);
		e[2] = bad[j];
		assert_int_equal(plan_cache_encode(&k, e, &b, &n), 0);
		assert_int_equal(plan_cache_parse(b, n, &k, out), -EBADMSG);
		free(b);
	}
}

static void test_path(void **state)
{
	(void)state;
	struct plan_cache_key k;
	char p[4096];
	make_key(&k);
	assert_int_equal(plan_cache_path("/c", &k, p, sizeof(p)), 0);
	assert_string_equal(p, "/c/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3-1234567890abcdef.plan");
	/* The directory comes from the recorder (ADA_PLAN_CACHE), never from
	 * the program's HOME or XDG_CACHE_HOME (issue 34). */
	setenv("ADA_PLAN_CACHE", "/x/ada/plans", 1);
	setenv("XDG_CACHE_HOME", "/y", 1);
	setenv("HOME", "/h", 1);
	assert_int_equal(plan_cache_path(NULL, &k, p, sizeof(p)), 0);
	assert_true(!strncmp(p, "/x/ada/plans/a0a1", 17));
	setenv("ADA_PLAN_CACHE", "relative", 1); /* invalid: no cache */
	assert_int_equal(plan_cache_path(NULL, &k, p, sizeof(p)), -ENOENT);
	unsetenv("ADA_PLAN_CACHE"); /* the program alone with the agent: none */
	assert_int_equal(plan_cache_path(NULL, &k, p, sizeof(p)), -ENOENT);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	char d[64];
	assert_int_equal(plan_cache_dir("/p", d, sizeof(d)), 0);
	assert_string_equal(d, "/p");
	assert_int_equal(plan_cache_dir(NULL, d, sizeof(d)), -ENOENT);
	assert_int_equal(plan_cache_dir("/long/path", d, 4), -ENAMETOOLONG);
	assert_int_equal(plan_cache_path("/c", &k, p, 20), -ENAMETOOLONG);
	k.build_id_len = 0;
	assert_int_equal(plan_cache_path("/c", &k, p, sizeof(p)), -ENOENT);
}

/* Miss (no file), store, hit; a corrupt file on disk is a miss and is
 * replaced by the next store; another build-id's file is not used. */
static void test_store_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_plancache_XXXXXX", p[4096], q[4096];
	struct plan_cache_key k;
	struct plan_cache_entry e[N], out[N];
	assert_non_null(mkdtemp(dir));
	make_key(&k);
	make_entries(e);
	snprintf(p, sizeof(p), "%s/sub/dir/x.plan", dir);
	assert_int_equal(plan_cache_load(p, &k, out), -ENOENT);
	assert_int_equal(plan_cache_store(p, &k, e), 0);
	assert_int_equal(plan_cache_load(p, &k, out), 0);
	assert_memory_equal(out, e, sizeof(e));
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, 130, SEEK_SET);
	fputc(0x42, f);
	fclose(f);
	assert_int_equal(plan_cache_load(p, &k, out), -EBADMSG);
	assert_int_equal(truncate(p, 100), 0);
	assert_int_equal(plan_cache_load(p, &k, out), -EBADMSG);
	assert_int_equal(plan_cache_store(p, &k, e), 0);
	assert_int_equal(plan_cache_load(p, &k, out), 0);
	struct plan_cache_key other = k;
	other.build_id[0] ^= 0xff;
	assert_int_equal(plan_cache_load(p, &other, out), -ESTALE);
	snprintf(q, sizeof(q), "%s/sub/dir/x.plan.tmp.%d", dir, (int)getpid());
	assert_int_not_equal(access(q, F_OK), 0); /* no temporary left */
	unlink(p);
	/* A store prunes the same image's files of other agent builds only. */
	char a[4096], b[4096], c[4096];
	snprintf(a, sizeof(a), "%s/sub/dir/abcd-0000000000000001.plan", dir);
	snprintf(b, sizeof(b), "%s/sub/dir/abcd-0000000000000002.plan", dir);
	snprintf(c, sizeof(c), "%s/sub/dir/abce-0000000000000001.plan", dir);
	assert_int_equal(plan_cache_store(a, &k, e), 0);
	assert_int_equal(plan_cache_store(c, &k, e), 0);
	assert_int_equal(plan_cache_store(b, &k, e), 0);
	assert_int_not_equal(access(a, F_OK), 0);
	assert_int_equal(access(b, F_OK), 0);
	assert_int_equal(access(c, F_OK), 0);
	unlink(b);
	unlink(c);
	snprintf(q, sizeof(q), "%s/sub/dir", dir);
	rmdir(q);
	snprintf(q, sizeof(q), "%s/sub", dir);
	rmdir(q);
	rmdir(dir);
}

/* A cache file or directory another user could have written is never
 * used: a link, a group/other-writable file or directory, a file owned by
 * someone else (root only: chown). */
static void test_untrusted(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_plancache_XXXXXX", p[4096], q[4096], cmd[4200];
	struct plan_cache_key k;
	struct plan_cache_entry e[N], out[N];
	assert_non_null(mkdtemp(dir));
	make_key(&k);
	make_entries(e);
	snprintf(p, sizeof(p), "%s/plans/x.plan", dir);
	assert_int_equal(plan_cache_store(p, &k, e), 0);
	assert_int_equal(plan_cache_load(p, &k, out), 0);
	/* Private: 0700 directory, 0600 file. */
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(q, sizeof(q), "%s/plans", dir);
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(chmod(p, 0620), 0);
	assert_int_equal(plan_cache_load(p, &k, out), -EPERM);
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(chmod(q, 0770), 0);
	assert_int_equal(plan_cache_load(p, &k, out), -EPERM);
	assert_int_equal(plan_cache_store(p, &k, e), -EPERM);
	assert_int_equal(chmod(q, 0700), 0);
	/* A planted link: not read; a store replaces the link, not its target. */
	snprintf(q, sizeof(q), "%s/victim", dir);
	FILE *f = fopen(q, "w");
	assert_non_null(f);
	fputs("victim", f);
	fclose(f);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(plan_cache_load(p, &k, out), -ELOOP);
	assert_int_equal(plan_cache_store(p, &k, e), 0);
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_size, 6);
	assert_int_equal(plan_cache_load(p, &k, out), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(plan_cache_load(p, &k, out), -EPERM);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	if (geteuid() != 0) { /* the rest ran; say what did not */
		print_message("skip: not root: the foreign-owner case (chown) is not exercised\n");
		skip();
	}
}

/* The running test has a build-id (gcc's default): a non-zero hash. */
static void test_self_hash(void **state)
{
	(void)state;
	uint64_t h = plan_cache_self_hash((uint64_t)(uintptr_t)&test_self_hash);
	assert_true(h != 0);
	assert_int_equal(h, plan_cache_self_hash((uint64_t)(uintptr_t)&test_path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_truncated),   cmocka_unit_test(test_mismatch),
	    cmocka_unit_test(test_bad_entries), cmocka_unit_test(test_path),
	    cmocka_unit_test(test_store_load),  cmocka_unit_test(test_untrusted),
	    cmocka_unit_test(test_self_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
