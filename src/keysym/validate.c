/*
 * Checking a blob completely before anyone relies on it (the recorder
 * before it publishes, `ada keysym` on what it is given, the fuzzer on
 * garbage). Not hook context. The hook-context test does not depend on
 * this check for memory safety (every load is masked into its region);
 * this is what makes its answers mean what the builder meant.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>

#include "keysym_internal.h"

struct ks_check {
	const uint8_t *blob;
	size_t len;
	uint64_t dir_end; /* first byte after the directory */
	uint64_t next;    /* bodies come in directory order, no overlap */
	const char *why;
};

static int ks_bad(struct ks_check *c, const char *why)
{
	c->why = why;
	return -EBADMSG;
}

static int ks_check_body(struct ks_check *c, const struct ada_keysym_mod *e, uint64_t bytes)
{
	if (e->off % ADA_KEYSYM_ALIGN || e->off < c->next || e->off < c->dir_end ||
	    bytes > c->len || e->off > c->len - bytes)
		return ks_bad(c, "a container lies outside the set or overlaps another");
	c->next = e->off + bytes;
	return 0;
}

static int ks_check_bitset(struct ks_check *c, const struct ada_keysym_mod *e)
{
	if (e->param == 0 || e->param % 64 || e->param > ADA_KEYSYM_MAX_INDEX)
		return ks_bad(c, "a bitset container has an impossible size");
	int err = ks_check_body(c, e, e->param / 8);
	if (err)
		return err;
	uint64_t n = 0, w;
	for (uint32_t i = 0; i < e->param / 64; i++) {
		memcpy(&w, c->blob + e->off + 8 * (uint64_t)i, 8);
		n += (uint64_t)__builtin_popcountll(w);
	}
	return n == e->members ? 0 : ks_bad(c, "a bitset container's member count is wrong");
}

/* Every used slot: its key hashes to its control byte and to a home
 * group within the probe bound; no key twice; the count adds up. */
static int ks_check_hash_slots(struct ks_check *c, const struct ada_keysym_mod *e,
                               roaring_bitmap_t *seen)
{
	uint32_t gbits = e->param & 0xff, maxp = e->param >> 8;
	uint64_t groups = (uint64_t)1 << gbits, n = 0;
	for (uint64_t g = 0; g < groups; g++) {
		const uint8_t *gp = c->blob + e->off + 64 * g;
		for (uint32_t s = ADA_KEYSYM_GROUP_SLOTS; s < 16; s++)
			if (gp[s] != ADA_KEYSYM_EMPTY)
				return ks_bad(c,
				              "a hash group's spare control bytes are not empty");
		for (uint32_t s = 0; s < ADA_KEYSYM_GROUP_SLOTS; s++) {
			uint32_t key;
			memcpy(&key, gp + 16 + 4 * s, 4);
			if (gp[s] == ADA_KEYSYM_EMPTY)
				continue;
			uint64_t h = ada_keysym_hash(key), home = (h >> 32) & (groups - 1);
			if (key >= ADA_KEYSYM_MAX_INDEX || gp[s] != (h >> 57) ||
			    ((g - home) & (groups - 1)) > maxp ||
			    !roaring_bitmap_add_checked(seen, key))
				return ks_bad(c,
				              "a hash slot holds a key that does not belong there");
			n++;
		}
	}
	return n == e->members ? 0 : ks_bad(c, "a hash container's member count is wrong");
}

static int ks_check_hash(struct ks_check *c, const struct ada_keysym_mod *e)
{
	uint32_t gbits = e->param & 0xff, maxp = e->param >> 8;
	if (gbits > ADA_KEYSYM_MAX_GROUP_BITS || maxp > ADA_KEYSYM_MAX_PROBE)
		return ks_bad(c, "a hash container has an impossible size or probe bound");
	int err = ks_check_body(c, e, (uint64_t)64 << gbits);
	if (err)
		return err;
	roaring_bitmap_t *seen = roaring_bitmap_create();
	if (!seen)
		return -ENOMEM;
	err = ks_check_hash_slots(c, e, seen);
	roaring_bitmap_free(seen);
	return err;
}

/* Our walk of the image must give the directory stored in front of it,
 * and CRoaring must accept the image as a frozen view of that size. */
static int ks_check_roaring(struct ks_check *c, const struct ada_keysym_mod *e)
{
	if (e->param < 4)
		return ks_bad(c, "a CRoaring container is too short");
	int err = ks_check_body(c, e, KS_ROARING_IMG_OFF + (uint64_t)e->param);
	if (err)
		return err;
	const uint8_t *body = c->blob + e->off, *img = body + KS_ROARING_IMG_OFF;
	uint64_t dir[ADA_KEYSYM_CHUNKS], card;
	if (ks_frozen_dir(img, e->param, e->off + KS_ROARING_IMG_OFF, dir, &card) ||
	    memcmp(dir, body, sizeof(dir)))
		return ks_bad(c, "a CRoaring container's image or directory is damaged");
	const roaring_bitmap_t *v = roaring_bitmap_frozen_view((const char *)img, e->param);
	if (!v)
		return ks_bad(c, "CRoaring rejects a container's frozen image");
	uint64_t vcard = roaring_bitmap_get_cardinality(v);
	roaring_bitmap_free((roaring_bitmap_t *)v);
	if (vcard != card || card != e->members)
		return ks_bad(c, "a CRoaring container's member count is wrong");
	return 0;
}

static int ks_check_entry(struct ks_check *c, const struct ada_keysym_mod *e)
{
	switch (e->kind) {
	case ADA_KEYSYM_NONE:
		return e->param || e->off || e->members
		           ? ks_bad(c, "an empty module entry is not zero")
		           : 0;
	case ADA_KEYSYM_UNCOVERED:
		return e->param || e->off || e->members
		           ? ks_bad(c, "an uncovered module entry is not zero")
		           : 0;
	case ADA_KEYSYM_FULL:
		return e->param == 0 || e->param > ADA_KEYSYM_MAX_INDEX || e->members != e->param
		           ? ks_bad(c, "a full module entry has an impossible size")
		           : 0;
	case ADA_KEYSYM_BITSET:
		return ks_check_bitset(c, e);
	case ADA_KEYSYM_HASH:
		return ks_check_hash(c, e);
	case ADA_KEYSYM_ROARING:
		return ks_check_roaring(c, e);
	default:
		return ks_bad(c, "a module entry has an unknown container type");
	}
}

static int ks_check_header(struct ks_check *c, struct ada_keysym_header *h)
{
	if (c->len < sizeof(*h) || c->len % ADA_KEYSYM_ALIGN ||
	    (uintptr_t)c->blob % ADA_KEYSYM_ALIGN)
		return ks_bad(c, "the set is not a whole number of aligned 64-byte lines");
	memcpy(h, c->blob, sizeof(*h));
	if (h->magic != ADA_KEYSYM_MAGIC || h->format != ADA_KEYSYM_FORMAT)
		return ks_bad(c, "this is not an ada key-symbol set of format 1");
	if (h->bytes != c->len || h->flags & ~(ADA_KEYSYM_F_ALL | ADA_KEYSYM_F_LIVE) ||
	    h->reserved || h->reserved2)
		return ks_bad(c, "the set's header is damaged");
	if (h->n_mods > ADA_KEYSYM_MAX_MODULES || ((h->flags & ADA_KEYSYM_F_ALL) && h->n_mods))
		return ks_bad(c, "the set's module count is impossible");
	c->dir_end = sizeof(*h) + 16 * (uint64_t)h->n_mods;
	if (c->dir_end > c->len)
		return ks_bad(c, "the set's module directory is cut short");
	if (ks_blob_xxh64(c->blob, c->len) != h->xxh64)
		return ks_bad(c, "the set's XXH64 does not match its bytes");
	return 0;
}

static int ks_info_from_blob(const struct ks_check *c, const struct ada_keysym_header *h,
                             struct ada_keysym_info *info)
{
	memset(info, 0, sizeof(*info));
	info->version = h->version;
	info->members = h->members;
	info->bytes = h->bytes;
	info->xxh64 = h->xxh64;
	info->all = h->flags & ADA_KEYSYM_F_ALL;
	info->live = !!(h->flags & ADA_KEYSYM_F_LIVE);
	info->entries = h->n_mods;
	if (h->n_mods && !(info->mods = calloc(h->n_mods, sizeof(*info->mods))))
		return -ENOMEM;
	for (uint32_t i = 0; i < h->n_mods; i++) {
		struct ada_keysym_mod e;
		memcpy(&e, c->blob + sizeof(*h) + 16 * (uint64_t)i, sizeof(e));
		if (e.kind == ADA_KEYSYM_UNCOVERED)
			ks_info_uncovered(info, i);
		else if (e.kind != ADA_KEYSYM_NONE)
			info->mods[info->n_mods++] =
			    (struct ada_keysym_mod_info){i, e.kind, e.members, 0};
	}
	return 0;
}

int ada_keysym_validate(const void *buf, size_t len, struct ada_keysym_info *info, const char **why)
{
	struct ks_check c = {buf, len, 0, 0, NULL};
	struct ada_keysym_header h;
	uint64_t members = 0;
	int err = ks_check_header(&c, &h);
	for (uint32_t i = 0; !err && i < h.n_mods; i++) {
		struct ada_keysym_mod e;
		memcpy(&e, c.blob + sizeof(h) + 16 * (uint64_t)i, sizeof(e));
		err = ks_check_entry(&c, &e);
		members += e.members;
	}
	if (!err && members != h.members)
		err = ks_bad(&c, "the set's member count does not add up");
	if (why)
		*why = err == -ENOMEM ? "out of memory while checking the set" : c.why;
	if (!err && info)
		err = ks_info_from_blob(&c, &h, info);
	return err;
}
