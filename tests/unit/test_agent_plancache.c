/*
 * The plan cache file (src/hook/plancache.c): round trip, a missing file,
 * corrupt and truncated files, a file for another build-id / agent /
 * symbol table, bad entries, the path rules and the atomic store; the
 * decoded plans it carries (rebased on load, every impossible shape
 * refused, a flipped bit anywhere refused), and the file kept as read
 * and its records walked in place, as a hit walks them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hook_mem.h"
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
	assert_int_equal(plan_cache_encode(&k, e, NULL, b, n), 0);
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
	assert_int_equal(plan_cache_parse(b, n, &k, e, NULL), 0);
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
			int r = plan_cache_parse(b, n, &k, e, NULL);
			assert_true(r == -EBADMSG || r == -ESTALE);
			assert_int_not_equal(r, 0);
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	assert_int_equal(plan_cache_parse(b, n, &k, e, NULL), 0);
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
		assert_int_equal(plan_cache_parse(b, len, &k, e, NULL), -EBADMSG);
	assert_int_equal(plan_cache_parse(NULL, 0, &k, e, NULL), -EBADMSG);
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
		int r = plan_cache_parse(b, n, &k, e, NULL);
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
		assert_int_equal(plan_cache_encode(&k, e, NULL, &b, &n), 0);
		assert_int_equal(plan_cache_parse(b, n, &k, out, NULL), -EBADMSG);
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
	assert_int_equal(plan_cache_load(p, &k, out, NULL), -ENOENT);
	assert_int_equal(plan_cache_store(p, &k, e, NULL), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), 0);
	assert_memory_equal(out, e, sizeof(e));
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, 130, SEEK_SET);
	fputc(0x42, f);
	fclose(f);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), -EBADMSG);
	assert_int_equal(truncate(p, 100), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), -EBADMSG);
	assert_int_equal(plan_cache_store(p, &k, e, NULL), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), 0);
	struct plan_cache_key other = k;
	other.build_id[0] ^= 0xff;
	assert_int_equal(plan_cache_load(p, &other, out, NULL), -ESTALE);
	snprintf(q, sizeof(q), "%s/sub/dir/x.plan.tmp.%d", dir, (int)getpid());
	assert_int_not_equal(access(q, F_OK), 0); /* no temporary left */
	unlink(p);
	/* A store prunes the same image's files of other agent builds only. */
	char a[4096], b[4096], c[4096];
	snprintf(a, sizeof(a), "%s/sub/dir/abcd-0000000000000001.plan", dir);
	snprintf(b, sizeof(b), "%s/sub/dir/abcd-0000000000000002.plan", dir);
	snprintf(c, sizeof(c), "%s/sub/dir/abce-0000000000000001.plan", dir);
	assert_int_equal(plan_cache_store(a, &k, e, NULL), 0);
	assert_int_equal(plan_cache_store(c, &k, e, NULL), 0);
	assert_int_equal(plan_cache_store(b, &k, e, NULL), 0);
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
	assert_int_equal(plan_cache_store(p, &k, e, NULL), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), 0);
	/* Private: 0700 directory, 0600 file. */
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(q, sizeof(q), "%s/plans", dir);
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(chmod(p, 0620), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), -EPERM);
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(chmod(q, 0770), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), -EPERM);
	assert_int_equal(plan_cache_store(p, &k, e, NULL), -EPERM);
	assert_int_equal(chmod(q, 0700), 0);
	/* A planted link: not read; a store replaces the link, not its target. */
	snprintf(q, sizeof(q), "%s/victim", dir);
	FILE *f = fopen(q, "w");
	assert_non_null(f);
	fputs("victim", f);
	fclose(f);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), -ELOOP);
	assert_int_equal(plan_cache_store(p, &k, e, NULL), 0);
	assert_int_equal(stat(q, &st), 0);
	assert_int_equal(st.st_size, 6);
	assert_int_equal(plan_cache_load(p, &k, out, NULL), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(plan_cache_load(p, &k, out, NULL), -EPERM);
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

/* Plans for entries 0 (two instructions, a rip-relative one), 1 (a jcc
 * and plain bytes) and 6 (the padding form), as if decoded at base. */
static void make_plans(struct hook_arch_plan *pl, uint64_t base)
{
	memset(pl, 0, N * sizeof(*pl));
	for (size_t i = 0; i < N; i++)
		pl[i].fn_addr = base + 0x100 * i;
	pl[0].patch_len = 5;
	pl[0].insn_count = 2;
	memcpy(pl[0].original, "\x55\x48\x89\xe5\x90", 5);
	pl[0].insns[0] = (struct hook_arch_insn){.offset = 0, .len = 1};
	pl[0].insns[1] = (struct hook_arch_insn){
	    .offset = 1, .len = 4, .kind = 1, .disp_off = 0, .target = base + 0x4000};
	pl[1].patch_len = 8;
	pl[1].insn_count = 2;
	memcpy(pl[1].original, "\x0f\x84\x10\x00\x00\x00\x31\xc0", 8);
	pl[1].insns[0] = (struct hook_arch_insn){
	    .offset = 0, .len = 6, .kind = 4, .cc = 4, .target = base + 0x100 + 0x16};
	pl[1].insns[1] = (struct hook_arch_insn){.offset = 6, .len = 2, .reg = 3};
	pl[6].patch_len = 16;
	pl[6].insn_count = 1;
	memset(pl[6].original, 0x90, 16);
	pl[6].insns[0] = (struct hook_arch_insn){.offset = 0, .len = 16};
	pl[6].pad_addr = pl[6].fn_addr - 12;
	memcpy(pl[6].pad_original, "\xcc\xcc\x0f\x1f\x00", 5);
}

/* make_entries() with entry 6 in the padding form. */
static void make_plan_entries(struct plan_cache_entry *e)
{
	make_entries(e);
	e[6].patch_len = 16 | PLAN_CACHE_PAD;
}

static void encode_plans(uint8_t **b, size_t *n)
{
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	struct hook_arch_plan pl[N];
	make_key(&k);
	make_plan_entries(e);
	make_plans(pl, 0x7f0000001000ull);
	assert_int_equal(plan_cache_encode(&k, e, pl, b, n), 0);
}

/* Written at one address, read at another: the same plans, every
 * address moved with the function; entries flagged, plans[] of entries
 * without a plan untouched. */
static void test_plans_round_trip(void **state)
{
	(void)state;
	uint8_t *b;
	size_t n;
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	struct hook_arch_plan got[N], want[N];
	encode_plans(&b, &n);
	make_key(&k);
	make_plans(want, 0x5550000ull);
	memset(got, 0x5a, sizeof(got));
	for (size_t i = 0; i < N; i++)
		got[i].fn_addr = want[i].fn_addr;
	assert_int_equal(plan_cache_parse(b, n, &k, e, got), 0);
	for (size_t i = 0; i < N; i++) {
		bool planned = i == 0 || i == 1 || i == 6;
		assert_int_equal(!!(e[i].patch_len & PLAN_CACHE_PLAN), planned);
		if (planned)
			assert_memory_equal(&got[i], &want[i], sizeof(got[i]));
		else
			assert_int_equal(got[i].insn_count, 0x5a5a5a5a5a5a5a5aull);
	}
	assert_int_equal(e[6].patch_len & PLAN_CACHE_LEN, 16);
	assert_true(e[6].patch_len & PLAN_CACHE_PAD);
	/* Checked without keeping them. */
	assert_int_equal(plan_cache_parse(b, n, &k, e, NULL), 0);
	free(b);
}

/* Every bit flip and every truncation of a file with plans is refused. */
static void test_plans_corrupt(void **state)
{
	(void)state;
	uint8_t *b;
	size_t n;
	struct plan_cache_key k;
	struct plan_cache_entry e[N];
	struct hook_arch_plan pl[N];
	encode_plans(&b, &n);
	make_key(&k);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			assert_int_not_equal(plan_cache_parse(b, n, &k, e, pl), 0);
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	for (size_t len = 0; len < n; len++)
		assert_int_equal(plan_cache_parse(b, len, &k, e, pl), -EBADMSG);
	free(b);
}

/* Whether a hit's walk of the file in (b, n) (a copy: the walk owns
 * it) reads every record and finds nothing else. */
static bool walk_whole(const uint8_t *b, size_t n, const struct plan_cache_key *k)
{
	struct plan_cache_entry e[N];
	struct plan_cache_file f;
	struct hook_arch_plan got;
	uint8_t *copy = malloc(n);
	assert_non_null(copy);
	memcpy(copy, b, n);
	assert_int_equal(plan_cache_open_buf(copy, n, k, e, &f), 0);
	for (size_t i = 0; i < N; i++)
		(void)plan_cache_next_plan(&f, &e[i], 0x400000 + 0x100 * i, &got);
	bool whole = plan_cache_file_whole(&f);
	plan_cache_file_free(&f);
	return whole;
}

/* Plans no decode can produce are refused even with a right checksum:
 * a gap between instructions, one beyond the patch, a displacement
 * outside its instruction, a padding slot over the entry or out of the
 * entry jump's reach. */
static void test_plans_bad_shape(void **state)
{
	(void)state;
	struct plan_cache_key k;
	struct plan_cache_entry e[N], out[N];
	struct hook_arch_plan pl[N];
	make_key(&k);
	for (int which = 0; which < 6; which++) {
		uint8_t *b;
		size_t n;
		make_plan_entries(e);
		make_plans(pl, 0x400000);
		switch (which) {
		case 0:
			pl[0].insns[1].offset = 2;
			break;
		case 1:
			pl[0].insns[1].len = 5;
			break;
		case 2:
			pl[0].insns[1].disp_off = 1;
			break;
		case 3:
			pl[6].pad_addr = pl[6].fn_addr + 8;
			break;
		case 4:
			pl[6].pad_addr = pl[6].fn_addr + 200;
			break;
		default:
			pl[6].pad_addr = pl[6].fn_addr - 140;
			break;
		}
		assert_int_equal(plan_cache_encode(&k, e, pl, &b, &n), 0);
		assert_int_equal(plan_cache_parse(b, n, &k, out, NULL), -EBADMSG);
		assert_false(walk_whole(b, n, &k)); /* the hit's walk refuses it too */
		free(b);
	}
	/* A plan that does not match its entry is not stored (the entry
	 * stays, without one). */
	uint8_t *b;
	size_t n;
	make_plan_entries(e);
	make_plans(pl, 0x400000);
	pl[1].patch_len = 7;
	assert_int_equal(plan_cache_encode(&k, e, pl, &b, &n), 0);
	assert_int_equal(plan_cache_parse(b, n, &k, out, NULL), 0);
	assert_false(out[1].patch_len & PLAN_CACHE_PLAN);
	assert_true(out[0].patch_len & PLAN_CACHE_PLAN);
	assert_true(walk_whole(b, n, &k));
	free(b);
}

/* Stored and loaded through the file: the plans come back. */
static void test_plans_store_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_plancache_XXXXXX", p[4096], cmd[4200];
	struct plan_cache_key k;
	struct plan_cache_entry e[N], out[N];
	struct hook_arch_plan pl[N], got[N];
	assert_non_null(mkdtemp(dir));
	make_key(&k);
	make_plan_entries(e);
	make_plans(pl, 0x10000);
	snprintf(p, sizeof(p), "%s/x.plan", dir);
	assert_int_equal(plan_cache_store(p, &k, e, pl), 0);
	memset(got, 0, sizeof(got));
	for (size_t i = 0; i < N; i++)
		got[i].fn_addr = pl[i].fn_addr;
	assert_int_equal(plan_cache_load(p, &k, out, got), 0);
	assert_memory_equal(&got[0], &pl[0], sizeof(pl[0]));
	assert_memory_equal(&got[6], &pl[6], sizeof(pl[6]));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The file kept as read (plan_cache_load_file): its records walked in
 * function order give the plans the parse into an array gives, rebased
 * on the addresses given; a rewind walks them again; a file with an OK
 * entry and no plan is told (plan_cache_all_planned); a walk that asks
 * for a record out of turn gets false, not another entry's plan. */
static void test_plans_walk(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_plancache_XXXXXX", p[4096], cmd[4200];
	struct plan_cache_key k;
	struct plan_cache_entry e[N], out[N];
	struct hook_arch_plan pl[N], want[N], got;
	struct plan_cache_file f;
	assert_non_null(mkdtemp(dir));
	make_key(&k);
	make_plan_entries(e);
	make_plans(pl, 0x10000);
	snprintf(p, sizeof(p), "%s/x.plan", dir);
	assert_int_equal(plan_cache_store(p, &k, e, pl), 0);
	make_plans(want, 0x7f0000002000ull);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), 0);
	assert_true(plan_cache_all_planned(out, N));
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < N; i++) {
			bool planned = i == 0 || i == 1 || i == 6;
			memset(&got, 0x5a, sizeof(got));
			assert_int_equal(plan_cache_next_plan(&f, &out[i], want[i].fn_addr, &got),
			                 planned);
			if (planned)
				assert_memory_equal(&got, &want[i], sizeof(got));
		}
		assert_int_equal(f.left, 0);
		plan_cache_file_rewind(&f, N);
	}
	/* Entry 6's record asked for first: its shape is entry 0's. */
	assert_false(plan_cache_next_plan(&f, &out[6], want[6].fn_addr, &got));
	plan_cache_file_free(&f);
	assert_null(f.buf);
	plan_cache_file_free(&f); /* empty: a no-op */
	/* An entry without a plan (its plan not storable): not all planned. */
	pl[1].patch_len = 7;
	assert_int_equal(plan_cache_store(p, &k, e, pl), 0);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), 0);
	assert_false(plan_cache_all_planned(out, N));
	plan_cache_file_free(&f);
	/* A refused file leaves f empty. */
	k.table_hash ^= 1;
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), -ESTALE);
	assert_null(f.buf);
	assert_null(f.next);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* Entries of a large file (from 64 KiB; it was once copied into a memfd
 * rather than read): make_plan_entries() then skips. */
#define BIG 40000

/* Overwrites the file at p in place with junk, then truncates it. */
static void clobber(const char *p)
{
	struct stat sb;
	char junk[4096];
	assert_int_equal(stat(p, &sb), 0);
	memset(junk, 0x5a, sizeof(junk));
	int fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	for (off_t at = 0; at < sb.st_size; at += (off_t)sizeof(junk))
		assert_int_equal(pwrite(fd, junk, sizeof(junk), at), (ssize_t)sizeof(junk));
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
}

/* A large file is read into private memory: the file rewritten in place
 * and truncated after the load changes none of the plans walked from
 * it; a byte flipped in the file, or a file cut short, is refused as a
 * small one is; in the start-up scan and after it alike. */
static void test_plans_private(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_plancache_XXXXXX", p[4096], cmd[4200];
	struct plan_cache_key k;
	struct plan_cache_entry *e = calloc(BIG, sizeof(*e)), *out = calloc(BIG, sizeof(*out));
	struct hook_arch_plan *pl = calloc(BIG, sizeof(*pl)), want[N], got;
	struct plan_cache_file f;
	assert_non_null(e);
	assert_non_null(out);
	assert_non_null(pl);
	assert_non_null(mkdtemp(dir));
	hook_seccomp_window(true); /* as at the agent's start-up scan */
	make_key(&k);
	k.fn_count = BIG;
	make_plan_entries(e);
	for (size_t i = N; i < BIG; i++)
		e[i] = (struct plan_cache_entry){ADA_SKIP_TOO_SHORT, 0};
	make_plans(pl, 0x10000);
	snprintf(p, sizeof(p), "%s/x.plan", dir);
	assert_int_equal(plan_cache_store(p, &k, e, pl), 0);
	make_plans(want, 0x7f0000002000ull);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), 0);
	clobber(p);
	for (size_t i = 0; i < BIG; i++) {
		bool planned = i == 0 || i == 1 || i == 6;
		uint64_t at = i < N ? want[i].fn_addr : 0x7f0000100000ull + i;
		assert_int_equal(out[i].status, e[i].status);
		assert_int_equal(plan_cache_next_plan(&f, &out[i], at, &got), planned);
		if (planned)
			assert_memory_equal(&got, &want[i], sizeof(got));
	}
	assert_true(plan_cache_file_whole(&f));
	plan_cache_file_free(&f);
	assert_null(f.buf);
	/* The clobbered file: refused. */
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), -EBADMSG);
	assert_null(f.buf);
	/* A byte flipped in a plan record, or the file cut short: refused. */
	assert_int_equal(plan_cache_store(p, &k, e, pl), 0);
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_true(sb.st_size >= (64 << 10));
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	uint8_t byte;
	off_t at = sb.st_size - 8;
	assert_int_equal(pread(fd, &byte, 1, at), 1);
	byte ^= 0x10;
	assert_int_equal(pwrite(fd, &byte, 1, at), 1);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), -EBADMSG);
	byte ^= 0x10;
	assert_int_equal(pwrite(fd, &byte, 1, at), 1);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), 0);
	plan_cache_file_free(&f);
	assert_int_equal(ftruncate(fd, sb.st_size - 1), 0);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), -EBADMSG);
	close(fd);
	/* After the start-up scan (the window closed): the same. */
	hook_seccomp_window(false);
	assert_int_equal(plan_cache_store(p, &k, e, pl), 0);
	assert_int_equal(plan_cache_load_file(p, &k, out, &f), 0);
	clobber(p);
	assert_true(plan_cache_next_plan(&f, &out[0], want[0].fn_addr, &got));
	assert_memory_equal(&got, &want[0], sizeof(got));
	plan_cache_file_free(&f);
	free(e);
	free(out);
	free(pl);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A cached plan is used only when the image still holds the bytes it was
 * decoded from (and a padding slot the bytes it kept), inside the
 * module's readable memory. */
static void test_plans_fit(void **state)
{
	(void)state;
	struct hook_arch_plan pl[N];
	uint8_t text[0x800];
	const uint64_t base = 0x7f0000001000ull;
	memset(text, 0xcc, sizeof(text));
	make_plans(pl, base + 0x100);
	/* function 0 at base + 0x100, function 6 at base + 0x700 */
	memcpy(text + 0x100, pl[0].original, pl[0].patch_len);
	memcpy(text + 0x700, pl[6].original, pl[6].patch_len);
	memcpy(text + 0x700 - 12, pl[6].pad_original, HOOK_ARCH_PAD_SLOT);
	struct hook_arch_region r = {base, sizeof(text), text};
	struct hook_arch_memview mv = {&r, 1};
	assert_true(plan_cache_fits(&mv, &pl[0], 5));
	assert_true(plan_cache_fits(&mv, &pl[6], 16));
	assert_false(plan_cache_fits(&mv, &pl[0], 6)); /* not the entry's length */
	text[0x104] ^= 1;                              /* the image changed, or the file lies */
	assert_false(plan_cache_fits(&mv, &pl[0], 5));
	text[0x104] ^= 1;
	text[0x700 - 10] ^= 1; /* the padding slot is not what it was */
	assert_false(plan_cache_fits(&mv, &pl[6], 16));
	text[0x700 - 10] ^= 1;
	struct hook_arch_region short_r = {base, 0x703, text}; /* ends inside the patch */
	struct hook_arch_memview mv2 = {&short_r, 1};
	assert_false(plan_cache_fits(&mv2, &pl[6], 16));
	struct hook_arch_region late = {base + 0x6f8, 0x100, text + 0x6f8}; /* slot outside */
	struct hook_arch_memview mv3 = {&late, 1};
	assert_false(plan_cache_fits(&mv3, &pl[6], 16));
	struct hook_arch_memview none = {NULL, 0};
	assert_false(plan_cache_fits(&none, &pl[0], 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_truncated),        cmocka_unit_test(test_mismatch),
	    cmocka_unit_test(test_bad_entries),      cmocka_unit_test(test_path),
	    cmocka_unit_test(test_store_load),       cmocka_unit_test(test_untrusted),
	    cmocka_unit_test(test_self_hash),        cmocka_unit_test(test_plans_round_trip),
	    cmocka_unit_test(test_plans_corrupt),    cmocka_unit_test(test_plans_bad_shape),
	    cmocka_unit_test(test_plans_store_load), cmocka_unit_test(test_plans_fit),
	    cmocka_unit_test(test_plans_walk),       cmocka_unit_test(test_plans_private),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
