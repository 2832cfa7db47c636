/*
 * src/keysym containers against a reference set: every container (bitset,
 * CRoaring frozen view, hash set) on random and adversarial member sets
 * (empty, full, one member, all but one, ids at both ends of the range),
 * the density rule, blob round trips, and garbage rejected (blobs and
 * CRoaring portable bitmaps).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <roaring/roaring.h>

#include "keysym.h"
#include "keysym_internal.h"

/* xorshift: reproducible random sets. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

struct blob {
	uint8_t *p;
	size_t len;
};

static struct blob blob_build(struct ada_keysym_builder *b, struct ada_keysym_info *info)
{
	struct blob bl = {NULL, ada_keysym_builder_size(b)};
	assert_true(bl.len >= 64);
	bl.p = aligned_alloc(64, bl.len);
	assert_non_null(bl.p);
	assert_int_equal(ada_keysym_builder_write(b, 7, bl.p, bl.len, info), 0);
	const char *why = NULL;
	struct ada_keysym_info vinfo;
	int err = ada_keysym_validate(bl.p, bl.len, &vinfo, &why);
	if (err)
		print_message("validate: %s\n", why);
	assert_int_equal(err, 0);
	if (info) {
		assert_int_equal(vinfo.members, info->members);
		assert_int_equal(vinfo.xxh64, info->xxh64);
		assert_int_equal(vinfo.n_mods, info->n_mods);
	}
	ada_keysym_info_fini(&vinfo);
	return bl;
}

/* Checks every index of the module's range (and beyond it), the
 * neighbouring module ids and a far one against ref. */
static void check_against(const struct blob *bl, uint32_t mod, const uint8_t *ref, uint32_t range)
{
	for (uint32_t i = 0; i < range + 130; i++) {
		bool want = i < range && ref[i];
		uint64_t id = (uint64_t)mod << 32 | i;
		if (ada_keysym_contains(bl->p, bl->len, id) != want)
			fail_msg("module %u index %u range %u: want %d", mod, i, range, want);
		assert_false(ada_keysym_contains(bl->p, bl->len, id + (1ull << 32)));
		assert_false(ada_keysym_contains(bl->p, bl->len, (uint64_t)0xffffff << 32 | i));
	}
	assert_false(ada_keysym_contains(bl->p, bl->len, (uint64_t)mod << 32 | 0xffffffffu));
	assert_false(ada_keysym_contains(bl->p, bl->len, (uint64_t)mod << 32 | (1u << 24)));
}

/* Builds module 3 (module 1 declared empty) with kind forced, compares. */
static void run_case(uint32_t kind, const uint8_t *ref, uint32_t range)
{
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	ks_builder_force(b, kind);
	assert_int_equal(ada_keysym_builder_module(b, 1, 10), 0);
	assert_int_equal(ada_keysym_builder_module(b, 3, range), 0);
	uint64_t n = 0;
	for (uint32_t i = 0; i < range; i++)
		if (ref[i]) {
			assert_int_equal(ada_keysym_builder_add(b, 3, &i, 1), 0);
			n++;
		}
	struct ada_keysym_info info;
	struct blob bl = blob_build(b, &info);
	assert_int_equal(info.members, n);
	if (n) {
		assert_int_equal(info.n_mods, 1);
		assert_int_equal(info.mods[0].module_id, 3);
		assert_int_equal(info.mods[0].kind, kind);
	} else {
		assert_int_equal(info.n_mods, 0);
	}
	check_against(&bl, 3, ref, range);
	ada_keysym_info_fini(&info);
	free(bl.p);
	ada_keysym_builder_free(b);
}

enum shape { EMPTY, FULL, ONE_LOW, ONE_HIGH, ONE_MID, BUT_LOW, BUT_HIGH, RAND1, RAND50, RUNS };

static void fill(uint8_t *ref, uint32_t range, enum shape s)
{
	memset(ref, s == FULL || s == BUT_LOW || s == BUT_HIGH, range);
	if (s == ONE_LOW)
		ref[0] = 1;
	if (s == ONE_HIGH)
		ref[range - 1] = 1;
	if (s == ONE_MID)
		ref[range / 2] = 1;
	if (s == BUT_LOW)
		ref[0] = 0;
	if (s == BUT_HIGH)
		ref[range - 1] = 0;
	for (uint32_t i = 0; (s == RAND1 || s == RAND50) && i < range; i++)
		ref[i] = (rng() % 100) < (s == RAND1 ? 1u : 50u);
	for (uint32_t i = 0; s == RUNS && i < range; i += 1 + rng() % 200) {
		uint32_t len = 1 + rng() % 40;
		for (uint32_t j = i; j < range && j < i + len; j++)
			ref[j] = 1;
		i += len;
	}
}

static void test_containers_adversarial(void **state)
{
	(void)state;
	static const uint32_t ranges[] = {1, 2, 63, 64, 65, 1000, 65535, 65536, 65537, 200003};
	static const uint32_t kinds[] = {ADA_KEYSYM_BITSET, ADA_KEYSYM_ROARING, ADA_KEYSYM_HASH};
	uint8_t *ref = malloc(200003);
	assert_non_null(ref);
	for (size_t k = 0; k < 3; k++)
		for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++)
			for (int s = EMPTY; s <= RUNS; s++) {
				fill(ref, ranges[r], (enum shape)s);
				run_case(kinds[k], ref, ranges[r]);
			}
	free(ref);
}

/* The last index a module can have (2^24 - 1), and ids in the top chunk. */
static void test_containers_range_end(void **state)
{
	(void)state;
	static const uint32_t kinds[] = {ADA_KEYSYM_ROARING, ADA_KEYSYM_HASH, ADA_KEYSYM_BITSET};
	uint32_t top = ADA_KEYSYM_MAX_INDEX - 1, ids[] = {0, 65535, 65536, top - 65536, top};
	for (size_t k = 0; k < 3; k++) {
		struct ada_keysym_builder *b;
		assert_int_equal(ada_keysym_builder_new(&b), 0);
		ks_builder_force(b, kinds[k]);
		assert_int_equal(ada_keysym_builder_add(b, 5, ids, 5), 0);
		struct blob bl = blob_build(b, NULL);
		for (size_t i = 0; i < 5; i++) {
			assert_true(ada_keysym_contains(bl.p, bl.len, 5ull << 32 | ids[i]));
			assert_false(ada_keysym_contains(bl.p, bl.len, 5ull << 32 | (ids[i] ^ 1)));
		}
		free(bl.p);
		uint32_t over = ADA_KEYSYM_MAX_INDEX;
		assert_int_equal(ada_keysym_builder_add(b, 5, &over, 1), -EINVAL);
		ada_keysym_builder_free(b);
	}
}

static void test_choose(void **state)
{
	(void)state;
	assert_int_equal(ada_keysym_choose(0, 100, 0), ADA_KEYSYM_NONE);
	assert_int_equal(ada_keysym_choose(100, 100, 1), ADA_KEYSYM_FULL);
	assert_int_equal(ada_keysym_choose(1, 65536, 1), ADA_KEYSYM_BITSET);           /* small */
	assert_int_equal(ada_keysym_choose(40000, 1 << 20, 40000), ADA_KEYSYM_BITSET); /* dense */
	assert_int_equal(ada_keysym_choose(1000, 1 << 20, 100), ADA_KEYSYM_ROARING);   /* runs */
	assert_int_equal(ada_keysym_choose(1000, 1 << 20, 1000), ADA_KEYSYM_HASH);     /* sparse */
	/* The builder applies it: a large module, scattered or clustered. */
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	assert_int_equal(ada_keysym_builder_module(b, 1, 1 << 22), 0);
	assert_int_equal(ada_keysym_builder_module(b, 2, 1 << 22), 0);
	assert_int_equal(ada_keysym_builder_module(b, 4, 5000), 0);
	for (uint32_t i = 0; i < 3000; i++) {
		uint32_t sparse = (uint32_t)(rng() % (1 << 22)), run = 100000 + i;
		assert_int_equal(ada_keysym_builder_add(b, 1, &sparse, 1), 0);
		assert_int_equal(ada_keysym_builder_add(b, 2, &run, 1), 0);
	}
	uint32_t all[5000];
	for (uint32_t i = 0; i < 5000; i++)
		all[i] = i;
	assert_int_equal(ada_keysym_builder_add(b, 4, all, 5000), 0);
	struct ada_keysym_info info;
	struct blob bl = blob_build(b, &info);
	assert_int_equal(info.n_mods, 3);
	assert_int_equal(info.mods[0].kind, ADA_KEYSYM_HASH);
	assert_int_equal(info.mods[1].kind, ADA_KEYSYM_ROARING);
	assert_int_equal(info.mods[2].kind, ADA_KEYSYM_FULL);
	assert_true(ada_keysym_contains(bl.p, bl.len, 4ull << 32 | 4999));
	ada_keysym_info_fini(&info);
	free(bl.p);
	/* Every function: one flag, no directory. */
	ada_keysym_builder_set_all(b);
	bl = blob_build(b, &info);
	assert_int_equal(bl.len, 64);
	assert_true(info.all);
	assert_true(ada_keysym_contains(bl.p, bl.len, 77ull << 32 | 12345));
	ada_keysym_info_fini(&info);
	free(bl.p);
	ada_keysym_builder_free(b);
}

/* A module id the blob has no directory entry for (>= n_mods: the
 * recorder built it before it read that module): the inline test asks,
 * the whole lookup says ADA_KEYSYM_UNKNOWN (the agent then asks its own
 * set), and the blob-only test says "not a member"; the "every function"
 * flag still answers for every module. */
static void test_unknown_module(void **state)
{
	(void)state;
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	assert_int_equal(ada_keysym_builder_module(b, 2, 64), 0);
	uint32_t five = 5;
	assert_int_equal(ada_keysym_builder_add(b, 2, &five, 1), 0);
	struct blob bl = blob_build(b, NULL);
	const struct ada_keysym_header *h = (const void *)bl.p;
	assert_int_equal(h->n_mods, 3);
	uint64_t mask = ada_keysym_mask_for(bl.len);
	const uint8_t *p = bl.p;
	assert_int_equal(ada_keysym_test(p, mask, 0, 2ull << 32 | 5), 1);
	assert_int_equal(ada_keysym_test(p, mask, 0, 2ull << 32 | 6), 0);
	assert_int_equal(ada_keysym_lookup_at(p, mask, 0, 2ull << 32 | 6), 0);
	/* Module 1, never declared, below a declared one: an uncovered entry,
	 * which says as little as no entry. */
	assert_int_equal(ada_keysym_test(p, mask, 0, 1ull << 32 | 5), ADA_KEYSYM_ASK);
	assert_int_equal(ada_keysym_lookup_at(p, mask, 0, 1ull << 32 | 5), ADA_KEYSYM_UNKNOWN);
	assert_false(ada_keysym_contains_at(p, mask, 0, 1ull << 32 | 5));
	static const uint64_t unknown[] = {3ull << 32 | 5, 9ull << 32, 0xffffffull << 32 | 5,
	                                   0xffffffffull << 32 | 5};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		assert_int_equal(ada_keysym_test(p, mask, 0, unknown[i]), ADA_KEYSYM_ASK);
		assert_int_equal(ada_keysym_lookup_at(p, mask, 0, unknown[i]), ADA_KEYSYM_UNKNOWN);
		assert_false(ada_keysym_contains_at(p, mask, 0, unknown[i]));
		assert_false(ada_keysym_contains(bl.p, bl.len, unknown[i]));
	}
	free(bl.p);
	/* An empty set: no entry at all, every module unknown. */
	ada_keysym_builder_free(b);
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	bl = blob_build(b, NULL);
	assert_int_equal(((const struct ada_keysym_header *)(const void *)bl.p)->n_mods, 0);
	mask = ada_keysym_mask_for(bl.len);
	assert_int_equal(ada_keysym_test(bl.p, mask, 0, 0), ADA_KEYSYM_ASK);
	assert_int_equal(ada_keysym_lookup_at(bl.p, mask, 0, 1ull << 32 | 1), ADA_KEYSYM_UNKNOWN);
	assert_false(ada_keysym_contains(bl.p, bl.len, 1ull << 32 | 1));
	free(bl.p);
	ada_keysym_builder_set_all(b);
	bl = blob_build(b, NULL);
	mask = ada_keysym_mask_for(bl.len);
	assert_int_equal(ada_keysym_test(bl.p, mask, 0, 9ull << 32 | 5), 1);
	assert_int_equal(ada_keysym_lookup_at(bl.p, mask, 0, 9ull << 32 | 5), 1);
	free(bl.p);
	ada_keysym_builder_free(b);
}

/* A gap: modules 1 and 3 declared (3 without members), 0, 2 and 4 not,
 * 5 with members. Declared without members is "not a member" (NONE);
 * never declared below the highest declared is ADA_KEYSYM_UNCOVERED:
 * ask, then unknown, as for an id past the directory. The entry is all
 * zero but its kind, validate insists, and the info counts it and names
 * its id; a damaged uncovered entry is refused. */
static void test_uncovered_module(void **state)
{
	(void)state;
	struct ada_keysym_builder *b;
	struct ada_keysym_info info;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	uint32_t one = 1, seven = 7;
	assert_int_equal(ada_keysym_builder_add(b, 1, &one, 1), 0);
	assert_int_equal(ada_keysym_builder_module(b, 3, 64), 0);
	assert_int_equal(ada_keysym_builder_add(b, 5, &seven, 1), 0);
	struct blob bl = blob_build(b, &info);
	const uint8_t *p = bl.p;
	uint64_t mask = ada_keysym_mask_for(bl.len);
	const struct ada_keysym_mod *dir = (const void *)(p + 64);
	assert_int_equal(((const struct ada_keysym_header *)(const void *)p)->n_mods, 6);
	static const uint32_t kinds[6] = {ADA_KEYSYM_UNCOVERED, ADA_KEYSYM_BITSET,
	                                  ADA_KEYSYM_UNCOVERED, ADA_KEYSYM_NONE,
	                                  ADA_KEYSYM_UNCOVERED, ADA_KEYSYM_BITSET};
	for (uint32_t m = 0; m < 6; m++) {
		assert_int_equal(dir[m].kind, kinds[m]);
		uint64_t id = (uint64_t)m << 32 | 1;
		int want = kinds[m] == ADA_KEYSYM_UNCOVERED ? ADA_KEYSYM_UNKNOWN : m == 1;
		assert_int_equal(ada_keysym_lookup_at(p, mask, 0, id), want);
		assert_int_equal(ada_keysym_test(p, mask, 0, id),
		                 kinds[m] == ADA_KEYSYM_UNCOVERED ? ADA_KEYSYM_ASK : m == 1);
		assert_int_equal(ada_keysym_contains_at(p, mask, 0, id), m == 1);
	}
	assert_int_equal(ada_keysym_lookup_at(p, mask, 0, 5ull << 32 | 7), 1);
	assert_int_equal(info.entries, 6);
	assert_int_equal(info.uncovered, 3);
	assert_int_equal(info.uncovered_ids[0], 0);
	assert_int_equal(info.uncovered_ids[1], 2);
	assert_int_equal(info.uncovered_ids[2], 4);
	assert_int_equal(info.n_mods, 2); /* modules with members only */
	assert_string_equal(ada_keysym_kind_name(ADA_KEYSYM_UNCOVERED), "unknown");
	ada_keysym_info_fini(&info);
	/* The validator reads the same back. */
	struct ada_keysym_info back;
	const char *why = NULL;
	assert_int_equal(ada_keysym_validate(bl.p, bl.len, &back, &why), 0);
	assert_int_equal(back.uncovered, 3);
	assert_int_equal(back.uncovered_ids[2], 4);
	ada_keysym_info_fini(&back);
	/* An uncovered entry with a member count, re-checksummed: refused. */
	struct ada_keysym_mod *e2 = (void *)(bl.p + 64 + 16 * 2);
	e2->members = 1;
	struct ada_keysym_header *h = (void *)bl.p;
	h->xxh64 = ks_blob_xxh64(bl.p, bl.len);
	assert_int_equal(ada_keysym_validate(bl.p, bl.len, NULL, &why), -EBADMSG);
	assert_string_equal(why, "an uncovered module entry is not zero");
	free(bl.p);
	ada_keysym_builder_free(b);
}

/* portable bitmap -> builder -> blob -> members back out: the same set;
 * a blob copied elsewhere means the same (no pointer inside). */
static void test_roundtrip(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		roaring_bitmap_t *r = roaring_bitmap_create();
		uint32_t range = 1 + (uint32_t)(rng() % 3000000);
		uint32_t n = (uint32_t)(rng() % 5000);
		for (uint32_t i = 0; i < n; i++)
			roaring_bitmap_add(r, (uint32_t)(rng() % range));
		if (round % 3 == 0)
			roaring_bitmap_add_range(r, range / 3, range / 3 + rng() % 20000);
		size_t plen = roaring_bitmap_portable_size_in_bytes(r);
		char *pbuf = malloc(plen);
		roaring_bitmap_portable_serialize(r, pbuf);
		struct ada_keysym_builder *b;
		assert_int_equal(ada_keysym_builder_new(&b), 0);
		assert_int_equal(ada_keysym_builder_add_portable(b, 2, pbuf, plen), 0);
		struct ada_keysym_info info;
		struct blob bl = blob_build(b, &info);
		uint8_t *copy = aligned_alloc(64, bl.len);
		memcpy(copy, bl.p, bl.len);
		memset(bl.p, 0xa5, bl.len);
		roaring_bitmap_t *back = roaring_bitmap_create();
		uint32_t top =
		    roaring_bitmap_get_cardinality(r) ? roaring_bitmap_maximum(r) + 70000 : 10;
		for (uint32_t i = 0; i < top && i < ADA_KEYSYM_MAX_INDEX; i++)
			if (ada_keysym_contains(copy, bl.len, 2ull << 32 | i))
				roaring_bitmap_add(back, i);
		assert_true(roaring_bitmap_equals(r, back));
		assert_int_equal(info.members, roaring_bitmap_get_cardinality(r));
		assert_int_equal(ada_keysym_validate(copy, bl.len, NULL, NULL), 0);
		ada_keysym_info_fini(&info);
		roaring_bitmap_free(back);
		roaring_bitmap_free(r);
		free(copy);
		free(bl.p);
		free(pbuf);
		ada_keysym_builder_free(b);
	}
}

static void expect_bad_portable(const void *buf, size_t len, int want)
{
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	assert_int_equal(ada_keysym_builder_add_portable(b, 1, buf, len), want);
	ada_keysym_builder_free(b);
}

static void test_garbage_portable(void **state)
{
	(void)state;
	roaring_bitmap_t *r = roaring_bitmap_create();
	roaring_bitmap_add_range(r, 10, 5000);
	roaring_bitmap_add(r, 70000);
	size_t n = roaring_bitmap_portable_size_in_bytes(r);
	char *buf = calloc(1, n + 16);
	roaring_bitmap_portable_serialize(r, buf);
	for (size_t cut = 0; cut < n; cut++) /* every truncation */
		expect_bad_portable(buf, cut, -EBADMSG);
	expect_bad_portable(buf, n + 16, -EBADMSG); /* bytes after the bitmap */
	for (int i = 0; i < 2000; i++) {            /* random bytes */
		char junk[256];
		for (size_t j = 0; j < sizeof(junk); j++)
			junk[j] = (char)rng();
		struct ada_keysym_builder *b;
		assert_int_equal(ada_keysym_builder_new(&b), 0);
		int err = ada_keysym_builder_add_portable(b, 1, junk, 1 + rng() % sizeof(junk));
		assert_true(err == 0 || err == -EBADMSG || err == -ERANGE);
		ada_keysym_builder_free(b);
	}
	roaring_bitmap_add(r, ADA_KEYSYM_MAX_INDEX); /* above every symbol index */
	n = roaring_bitmap_portable_size_in_bytes(r);
	buf = realloc(buf, n);
	roaring_bitmap_portable_serialize(r, buf);
	expect_bad_portable(buf, n, -ERANGE);
	/* Above the module's declared range. */
	roaring_bitmap_remove(r, ADA_KEYSYM_MAX_INDEX);
	n = roaring_bitmap_portable_size_in_bytes(r);
	roaring_bitmap_portable_serialize(r, buf);
	struct ada_keysym_builder *b;
	assert_int_equal(ada_keysym_builder_new(&b), 0);
	assert_int_equal(ada_keysym_builder_module(b, 1, 60000), 0);
	assert_int_equal(ada_keysym_builder_add_portable(b, 1, buf, n), -ERANGE);
	ada_keysym_builder_free(b);
	free(buf);
	roaring_bitmap_free(r);
}

/* A valid blob with its checksum refreshed after a change: the structure
 * checks must catch what the checksum no longer does. */
static void refresh(uint8_t *p, size_t len)
{
	struct ada_keysym_header h;
	memcpy(&h, p, sizeof(h));
	h.xxh64 = ks_blob_xxh64(p, len);
	memcpy(p, &h, sizeof(h));
}

static void test_garbage_blob(void **state)
{
	(void)state;
	static const uint32_t kinds[] = {ADA_KEYSYM_BITSET, ADA_KEYSYM_ROARING, ADA_KEYSYM_HASH};
	for (size_t k = 0; k < 3; k++) {
		struct ada_keysym_builder *b;
		assert_int_equal(ada_keysym_builder_new(&b), 0);
		ks_builder_force(b, kinds[k]);
		for (uint32_t i = 0; i < 3000; i++) {
			uint32_t v = (uint32_t)(rng() % 150000);
			assert_int_equal(ada_keysym_builder_add(b, 2, &v, 1), 0);
		}
		struct blob bl = blob_build(b, NULL);
		uint8_t *t = aligned_alloc(64, bl.len);
		const char *why;
		/* Any flipped bit: the checksum. */
		for (int i = 0; i < 300; i++) {
			memcpy(t, bl.p, bl.len);
			t[rng() % bl.len] ^= (uint8_t)(1u << (rng() % 8));
			why = NULL;
			assert_int_equal(ada_keysym_validate(t, bl.len, NULL, &why), -EBADMSG);
			assert_non_null(why);
		}
		/* Truncated (whole lines): header size or structure. */
		for (size_t cut = 0; cut < bl.len; cut += 64)
			assert_int_equal(ada_keysym_validate(bl.p, cut, NULL, NULL), -EBADMSG);
		/* Flipped bits with a fresh checksum: the structure checks; and
		 * the masked test never reads outside the region (ASan). */
		int caught = 0;
		for (int i = 0; i < 3000; i++) {
			memcpy(t, bl.p, bl.len);
			size_t at = 64 + rng() % (bl.len - 64);
			t[at] ^= (uint8_t)(1u << (rng() % 8));
			refresh(t, bl.len);
			caught += ada_keysym_validate(t, bl.len, NULL, NULL) == -EBADMSG;
			uint64_t mask = ada_keysym_mask_for(bl.len);
			uint8_t *region = aligned_alloc(64, mask + 1);
			memset(region, 0, mask + 1);
			memcpy(region, t, bl.len);
			for (int q = 0; q < 50; q++)
				(void)ada_keysym_contains_at(region, mask, 0,
				                             2ull << 32 | (rng() & 0xffffff));
			free(region);
		}
		print_message("%s: %d of 3000 re-checksummed bit flips rejected\n",
		              ada_keysym_kind_name(kinds[k]), caught);
		assert_true(caught > 0);
		/* A body offset past the end. */
		memcpy(t, bl.p, bl.len);
		uint32_t far = (uint32_t)bl.len;
		memcpy(t + 64 + 16 * 2 + 8, &far, 4);
		refresh(t, bl.len);
		assert_int_equal(ada_keysym_validate(t, bl.len, NULL, &why), -EBADMSG);
		free(t);
		free(bl.p);
		ada_keysym_builder_free(b);
	}
	/* Random bytes, random lengths; and random bytes behind a valid header. */
	uint8_t *junk = aligned_alloc(64, 4096);
	for (int i = 0; i < 2000; i++) {
		for (size_t j = 0; j < 4096; j++)
			junk[j] = (uint8_t)rng();
		size_t len = 64 * (rng() % 65);
		if (i % 2) {
			struct ada_keysym_header h = {.magic = ADA_KEYSYM_MAGIC,
			                              .format = 1,
			                              .bytes = len,
			                              .n_mods = (uint32_t)(rng() % 8)};
			memcpy(junk, &h, sizeof(h));
			if (len >= 64)
				refresh(junk, len);
		}
		int err = ada_keysym_validate(junk, len, NULL, NULL);
		assert_true(err == -EBADMSG || err == 0);
		(void)ada_keysym_contains_at(junk, 4095, 0, rng());
	}
	free(junk);
}

/* ADA_KEYSYM_SEEDS=DIR: writes the fuzzer's seeds (tests/fuzz/keysym.cmake). */
static void write_seed(const char *dir, const char *name, uint8_t sel, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(&sel, 1, 1, f);
	fwrite(p, 1, n, f);
	fclose(f);
}

static void write_seeds(const char *dir)
{
	static const uint32_t kinds[] = {ADA_KEYSYM_BITSET, ADA_KEYSYM_ROARING, ADA_KEYSYM_HASH};
	for (size_t k = 0; k < 3; k++) {
		struct ada_keysym_builder *b;
		ada_keysym_builder_new(&b);
		ks_builder_force(b, kinds[k]);
		for (uint32_t i = 0; i < 40; i++) {
			uint32_t v = i < 20 ? 70000 + i : (uint32_t)(rng() % 140000);
			ada_keysym_builder_add(b, 1 + (i & 1), &v, 1);
		}
		struct blob bl = blob_build(b, NULL);
		write_seed(dir, ada_keysym_kind_name(kinds[k]), 0, bl.p, bl.len);
		free(bl.p);
		ada_keysym_builder_free(b);
	}
	roaring_bitmap_t *r = roaring_bitmap_create();
	roaring_bitmap_add_range(r, 100, 300);
	roaring_bitmap_add(r, 70000);
	for (int i = 0; i < 50; i++)
		roaring_bitmap_add(r, 200000 + 7 * i);
	roaring_bitmap_run_optimize(r);
	size_t n = roaring_bitmap_portable_size_in_bytes(r);
	char *buf = malloc(n);
	roaring_bitmap_portable_serialize(r, buf);
	write_seed(dir, "portable", 1, buf, n);
	free(buf);
	roaring_bitmap_free(r);
}

int main(void)
{
	if (getenv("ADA_KEYSYM_SEEDS")) {
		write_seeds(getenv("ADA_KEYSYM_SEEDS"));
		return 0;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_containers_adversarial),
	    cmocka_unit_test(test_containers_range_end),
	    cmocka_unit_test(test_choose),
	    cmocka_unit_test(test_unknown_module),
	    cmocka_unit_test(test_uncovered_module),
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_garbage_portable),
	    cmocka_unit_test(test_garbage_blob),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
