/*
 * The symbol-table cache file (src/hook/symcache.c): round trip, a flipped
 * byte anywhere refused, truncated files, another key, records a symbol
 * table could not hold (a name outside the pool, the order broken, an
 * alias left to hook, a function to hook outside the executable ranges,
 * reserved set, a range that ends before it starts), and the real read of this test's own image
 * through the cache (a miss that stores, then a hit with the same table).
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
#include <unistd.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hook_arch.h"
#include "symcache_internal.h"

static void make_key(struct symtab_cache_key *k)
{
	memset(k, 0, sizeof(*k));
	for (uint32_t i = 0; i < 20; i++)
		k->build_id[i] = (uint8_t)(0xa0 + i);
	k->build_id_len = 20;
	k->agent_hash = 0x1234;
	k->root_hash = 0;
	k->debug_ident = 0;
}

/* main (hooked), an alias of it, helper (ifunc), outside (outside_text). */
static void make_table(struct ada_hook_symtab *st)
{
	static const char names[] = "main\0_main\0helper\0outside";
	memset(st, 0, sizeof(*st));
	st->names_len = sizeof(names);
	st->names = malloc(st->names_len);
	memcpy(st->names, names, st->names_len);
	st->count = 4;
	st->fns = calloc(st->count, sizeof(*st->fns));
	st->fns[0] = (struct ada_hook_fn){
	    .offset = 0x1000, .size = 0x40, .name_off = 0, .status = ADA_HOOK_OK, .is_global = 1};
	st->fns[1] = (struct ada_hook_fn){
	    .offset = 0x1000, .size = 0x40, .name_off = 5, .status = ADA_SKIP_ALIAS};
	st->fns[2] = (struct ada_hook_fn){.offset = 0x1100,
	                                  .size = 0x10,
	                                  .name_off = 11,
	                                  .status = ADA_SKIP_IFUNC,
	                                  .is_ifunc = 1};
	st->fns[3] = (struct ada_hook_fn){
	    .offset = 0x9000, .size = 0x10, .name_off = 18, .status = ADA_SKIP_OUTSIDE_TEXT};
	st->source = ADA_SYMSRC_DEBUGLINK;
	for (uint32_t i = 0; i < 20; i++)
		st->build_id[i] = (uint8_t)(0xa0 + i);
	st->build_id_len = 20;
	st->entry = 0x1100;
	st->xr[0] = (struct ada_hook_xrange){0x1000, 0x2000};
	st->xr_count = 1;
}

static uint8_t *encoded(size_t *len)
{
	struct symtab_cache_key k;
	struct ada_hook_symtab st;
	make_key(&k);
	make_table(&st);
	uint8_t *b = NULL;
	assert_int_equal(symtab_cache_encode(&k, &st, &b, len), 0);
	ada_hook_symtab_fini(&st);
	return b;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab st, got;
	make_key(&k);
	make_table(&st);
	size_t len;
	uint8_t *b = encoded(&len);
	uint64_t ident = 7;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, &ident, false), 0);
	assert_int_equal(ident, 0);
	assert_int_equal(got.count, st.count);
	assert_int_equal(got.names_len, st.names_len);
	assert_memory_equal(got.fns, st.fns, st.count * sizeof(*st.fns));
	assert_memory_equal(got.names, st.names, st.names_len);
	assert_int_equal(got.source, st.source);
	assert_int_equal(got.entry, st.entry);
	assert_int_equal(got.xr_count, 1);
	assert_int_equal(got.xr[0].hi, 0x2000);
	assert_string_equal(ada_hook_fn_name(&got, &got.fns[2]), "helper");
	ada_hook_symtab_fini(&got);
	/* Adopted: the buffer is the name pool. */
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, true), 0);
	assert_ptr_equal(got.names, b);
	ada_hook_symtab_fini(&got); /* frees b */
	ada_hook_symtab_fini(&st);
}

static void test_flipped_byte(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab got;
	make_key(&k);
	size_t len;
	uint8_t *b = encoded(&len);
	for (size_t i = 0; i < len; i++) {
		b[i] ^= 0x10;
		int rc = symtab_cache_parse(b, len, &k, &got, NULL, false);
		/* Only the header's key fields can give -ESTALE, and only with a
		 * checksum that still holds: never here. */
		assert_int_equal(rc, -EBADMSG);
		b[i] ^= 0x10;
	}
	free(b);
}

static void test_truncated(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab got;
	make_key(&k);
	size_t len;
	uint8_t *b = encoded(&len);
	for (size_t n = 0; n < len; n++)
		assert_int_equal(symtab_cache_parse(b, n, &k, &got, NULL, false), -EBADMSG);
	free(b);
}

static void test_other_key(void **state)
{
	(void)state;
	struct symtab_cache_key k;
	struct ada_hook_symtab got;
	size_t len;
	uint8_t *b = encoded(&len);
	make_key(&k);
	k.build_id[3] ^= 1;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.agent_hash++;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.flags = 1;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.root_hash = 5;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	make_key(&k);
	k.debug_ident = 9; /* a debug file it was not read from */
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), -ESTALE);
	k.debug_ident = SYMTAB_CACHE_ANY_IDENT;
	assert_int_equal(symtab_cache_parse(b, len, &k, &got, NULL, false), 0);
	ada_hook_symtab_fini(&got);
	free(b);
}

/* Encodes st (changed by the caller after make_table) and parses it. */
static int parse_changed(void (*change)(struct ada_hook_symtab *))
{
	struct symtab_cache_key k;
	struct ada_hook_symtab st, got;
	make_key(&k);
	make_table(&st);
	change(&st);
	uint8_t *b = NULL;
	size_t len;
	int rc = symtab_cache_encode(&k, &st, &b, &len);
	if (rc == 0) {
		rc = symtab_cache_parse(b, len, &k, &got, NULL, false);
		if (rc == 0)
			ada_hook_symtab_fini(&got);
	}
	free(b);
	ada_hook_symtab_fini(&st);
	return rc;
}

static void name_outside(struct ada_hook_symtab *st)
{
	st->fns[2].name_off = (uint32_t)st->names_len;
}
static void unsorted(struct ada_hook_symtab *st)
{
	st->fns[2].offset = 0x800;
}
static void alias_hooked(struct ada_hook_symtab *st)
{
	st->fns[1].status = ADA_HOOK_OK;
}
static void hooked_outside(struct ada_hook_symtab *st)
{
	st->fns[3].status = ADA_HOOK_OK;
}
static void hooked_past_end(struct ada_hook_symtab *st)
{
	st->fns[0].size = 0x1001; /* 0x1000 + 0x1001 > 0x2000 */
}
static void reserved_set(struct ada_hook_symtab *st)
{
	st->fns[0].reserved = 1;
}
static void bad_status(struct ada_hook_symtab *st)
{
	st->fns[2].status = ADA_SKIP_REASON_COUNT;
}
static void pool_unterminated(struct ada_hook_symtab *st)
{
	st->names[st->names_len - 1] = 'x';
}
static void range_reversed(struct ada_hook_symtab *st)
{
	st->xr[0] = (struct ada_hook_xrange){0x2000, 0x1000};
	st->fns[0].status = ADA_SKIP_OUTSIDE_TEXT; /* no function relies on it */
}
static void dynsym_source(struct ada_hook_symtab *st)
{
	st->source = ADA_SYMSRC_DYNSYM;
}

static void test_bad_records(void **state)
{
	(void)state;
	assert_int_equal(parse_changed(name_outside), -EBADMSG);
	assert_int_equal(parse_changed(unsorted), -EBADMSG);
	assert_int_equal(parse_changed(alias_hooked), -EBADMSG);
	assert_int_equal(parse_changed(hooked_outside), -EBADMSG);
	assert_int_equal(parse_changed(hooked_past_end), -EBADMSG);
	assert_int_equal(parse_changed(reserved_set), -EBADMSG);
	assert_int_equal(parse_changed(bad_status), -EBADMSG);
	assert_int_equal(parse_changed(pool_unterminated), -EBADMSG);
	assert_int_equal(parse_changed(range_reversed), -EBADMSG);
	/* A .dynsym table is never one the cache holds. */
	assert_int_equal(parse_changed(dynsym_source), -EBADMSG);
}

/* This test's own image, through the cache: the first read stores, the
 * second hits, and both are what ada_hook_symtab_read_ex reads. */
static void test_read_own_image(void **state)
{
	(void)state;
	char dir[] = "/tmp/ada_symcache_XXXXXX";
	if (!mkdtemp(dir))
		skip();
	struct symtab_cache_key k = {.agent_hash = 0x77};
	k.build_id_len = symtab_cache_mem_build_id((uint64_t)(uintptr_t)&test_read_own_image,
	                                           k.build_id, sizeof(k.build_id));
	if (k.build_id_len == 0) {
		rmdir(dir);
		skip(); /* built without a build-id */
	}
	struct ada_hook_symtab direct, first, second;
	assert_int_equal(ada_hook_symtab_read_ex("/proc/self/exe", NULL, 0, &direct), 0);
	if (direct.source != ADA_SYMSRC_SYMTAB) {
		ada_hook_symtab_fini(&direct);
		rmdir(dir);
		skip(); /* stripped: not a table the cache holds */
	}
	bool hit = true;
	assert_int_equal(symtab_cache_read(dir, "/proc/self/exe", NULL, &k, &first, &hit), 0);
	assert_false(hit);
	assert_int_equal(symtab_cache_read(dir, "/proc/self/exe", NULL, &k, &second, &hit), 0);
	assert_true(hit);
	assert_int_equal(second.count, direct.count);
	assert_int_equal(second.names_len, direct.names_len);
	assert_memory_equal(second.fns, direct.fns, direct.count * sizeof(*direct.fns));
	assert_memory_equal(second.names, direct.names, direct.names_len);
	ada_hook_symtab_fini(&direct);
	ada_hook_symtab_fini(&first);
	ada_hook_symtab_fini(&second);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_flipped_byte),
	    cmocka_unit_test(test_truncated),   cmocka_unit_test(test_other_key),
	    cmocka_unit_test(test_bad_records), cmocka_unit_test(test_read_own_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
