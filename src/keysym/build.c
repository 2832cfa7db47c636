/*
 * Building a key-symbol set and writing its blob (recorder side; the CLI
 * and tests too). Not hook context: this allocates and calls CRoaring.
 *
 * Members are collected per module in CRoaring bitmaps (the library made
 * for sets of 32-bit ids); ks_plan() then picks each module's container by
 * density (ada_keysym_choose), builds the hash groups or the frozen image
 * it needs, and ada_keysym_builder_write() lays the blob out: header,
 * directory by module id, bodies at 64-byte offsets (keysym.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

#include "keysym_internal.h"

struct ks_mod {
	roaring_bitmap_t *rb; /* NULL: module not declared */
	uint32_t range;       /* symbol indexes < range; 0: largest member + 1 */
	/* The plan (ks_plan), valid while b->planned: */
	uint32_t kind, param;
	uint64_t members, body; /* body bytes, a multiple of 64 */
	uint8_t *groups;        /* HASH: the built groups */
	char *frozen;           /* ROARING: the frozen image */
};

struct ada_keysym_builder {
	struct ks_mod *mods; /* indexed by module id */
	uint32_t cap;        /* entries in mods */
	uint32_t all;
	uint32_t live;  /* ADA_KEYSYM_F_LIVE */
	uint32_t force; /* tests: ks_builder_force() */
	int planned;
};

static uint64_t ks_round64(uint64_t n)
{
	return (n + 63) & ~(uint64_t)63;
}

const char *ada_keysym_kind_name(unsigned kind)
{
	static const char *const names[] = {"none", "bitset", "roaring", "hash", "full", "unknown"};
	return kind < ADA_KEYSYM_KIND_COUNT ? names[kind] : "?";
}

uint64_t ada_keysym_mask_for(size_t len)
{
	uint64_t m = 63;
	while (m < len - 1 && m < UINT64_MAX / 2)
		m = m * 2 + 1;
	return m;
}

void ada_keysym_info_fini(struct ada_keysym_info *info)
{
	if (info) {
		free(info->mods);
		info->mods = NULL;
		info->n_mods = 0;
	}
}

enum ada_keysym_kind ada_keysym_choose(uint64_t n, uint64_t range, uint64_t runs)
{
	if (n == 0)
		return ADA_KEYSYM_NONE;
	if (n >= range)
		return ADA_KEYSYM_FULL;
	/* Small module (the bitset is at most 8 KiB) or dense (at most 4
	 * bytes of bitset a member): one load, one bit. */
	if (range <= 65536 || n * 32 >= range)
		return ADA_KEYSYM_BITSET;
	/* Clustered (runs of 4 or more on average): CRoaring's run and
	 * bitset containers hold them in a few bytes; scattered members get
	 * one cache line each in the hash set. */
	if (runs * 4 <= n)
		return ADA_KEYSYM_ROARING;
	return ADA_KEYSYM_HASH;
}

static void ks_unplan(struct ada_keysym_builder *b)
{
	for (uint32_t i = 0; i < b->cap; i++) {
		free(b->mods[i].groups);
		free(b->mods[i].frozen);
		b->mods[i].groups = NULL;
		b->mods[i].frozen = NULL;
	}
	b->planned = 0;
}

int ada_keysym_builder_new(struct ada_keysym_builder **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void ada_keysym_builder_free(struct ada_keysym_builder *b)
{
	if (!b)
		return;
	ks_unplan(b);
	for (uint32_t i = 0; i < b->cap; i++)
		if (b->mods[i].rb)
			roaring_bitmap_free(b->mods[i].rb);
	free(b->mods);
	free(b);
}

void ada_keysym_builder_set_all(struct ada_keysym_builder *b)
{
	ks_unplan(b);
	b->all = 1;
}

void ada_keysym_builder_set_live(struct ada_keysym_builder *b)
{
	b->live = 1; /* a header flag only: the plan stays */
}

int ada_keysym_builder_module(struct ada_keysym_builder *b, uint32_t module_id, uint32_t range)
{
	if (module_id >= ADA_KEYSYM_MAX_MODULES || range > ADA_KEYSYM_MAX_INDEX)
		return -EINVAL;
	ks_unplan(b);
	if (module_id >= b->cap) {
		uint32_t cap = b->cap ? b->cap : 8;
		while (cap <= module_id)
			cap *= 2;
		struct ks_mod *m = realloc(b->mods, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		memset(m + b->cap, 0, (cap - b->cap) * sizeof(*m));
		b->mods = m;
		b->cap = cap;
	}
	struct ks_mod *m = &b->mods[module_id];
	if (!m->rb && !(m->rb = roaring_bitmap_create()))
		return -ENOMEM;
	if (range && roaring_bitmap_get_cardinality(m->rb) &&
	    roaring_bitmap_maximum(m->rb) >= range)
		return -EINVAL;
	m->range = range;
	return 0;
}

static int ks_limit_ok(const struct ks_mod *m, uint32_t idx)
{
	return idx < ADA_KEYSYM_MAX_INDEX && (m->range == 0 || idx < m->range);
}

int ada_keysym_builder_add(struct ada_keysym_builder *b, uint32_t module_id, const uint32_t *idx,
                           size_t n)
{
	if (module_id >= b->cap || !b->mods[module_id].rb) {
		int err = ada_keysym_builder_module(b, module_id, 0);
		if (err)
			return err;
	}
	struct ks_mod *m = &b->mods[module_id];
	for (size_t i = 0; i < n; i++)
		if (!ks_limit_ok(m, idx[i]))
			return -EINVAL;
	ks_unplan(b);
	roaring_bitmap_add_many(m->rb, n, idx);
	return 0;
}

/* A deserialized bitmap is input (CRoaring's safe deserializer checks
 * sizes, not order: keys may repeat): its values must come out strictly
 * increasing, below 2^24, and as many as its containers claim; they are
 * copied into a fresh bitmap, well formed by construction. */
struct ks_walk {
	roaring_bitmap_t *out;
	uint64_t n;
	int64_t prev;
	int err;
};
static bool ks_walk_one(uint32_t v, void *arg)
{
	struct ks_walk *w = arg;
	if ((int64_t)v <= w->prev || v >= ADA_KEYSYM_MAX_INDEX) {
		w->err = (int64_t)v <= w->prev ? -EBADMSG : -ERANGE;
		return false;
	}
	roaring_bitmap_add(w->out, v);
	w->prev = v;
	w->n++;
	return true;
}

int ada_keysym_builder_add_portable(struct ada_keysym_builder *b, uint32_t module_id,
                                    const void *buf, size_t len)
{
	size_t need = roaring_bitmap_portable_deserialize_size(buf, len);
	if (need == 0 || need != len)
		return -EBADMSG;
	roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe(buf, len);
	if (!r)
		return -EBADMSG;
	struct ks_walk w = {roaring_bitmap_create(), 0, -1, 0};
	int err = w.out ? 0 : -ENOMEM;
	if (!err) {
		roaring_iterate(r, ks_walk_one, &w);
		err = w.err;
	}
	if (!err && w.n != roaring_bitmap_get_cardinality(r))
		err = -EBADMSG;
	if (!err && (module_id >= b->cap || !b->mods[module_id].rb))
		err = ada_keysym_builder_module(b, module_id, 0);
	if (!err && w.n && !ks_limit_ok(&b->mods[module_id], (uint32_t)w.prev))
		err = -ERANGE;
	if (!err) {
		ks_unplan(b);
		roaring_bitmap_or_inplace(b->mods[module_id].rb, w.out);
	}
	if (w.out)
		roaring_bitmap_free(w.out);
	roaring_bitmap_free(r);
	return err;
}

/* ---- the plan: one container per module ---- */

struct ks_runs {
	uint64_t runs;
	int64_t prev;
};
static bool ks_count_run(uint32_t v, void *arg)
{
	struct ks_runs *r = arg;
	r->runs += (int64_t)v != r->prev + 1;
	r->prev = v;
	return true;
}

struct ks_fill {
	uint8_t *groups;
	uint64_t gmask;
	uint32_t maxp;
	int full;
};
/* Puts idx in the first group from its home with a free slot; records
 * the longest probe. Gives up past ADA_KEYSYM_MAX_PROBE (the caller grows
 * the table). */
static bool ks_hash_put(uint32_t idx, void *arg)
{
	struct ks_fill *f = arg;
	uint64_t h = ada_keysym_hash(idx), g0 = (h >> 32) & f->gmask;
	for (uint32_t p = 0; p <= ADA_KEYSYM_MAX_PROBE; p++) {
		uint8_t *g = f->groups + ((g0 + p) & f->gmask) * 64;
		for (uint32_t s = 0; s < ADA_KEYSYM_GROUP_SLOTS; s++) {
			if (g[s] != ADA_KEYSYM_EMPTY)
				continue;
			g[s] = (uint8_t)(h >> 57);
			memcpy(g + 16 + 4 * s, &idx, 4);
			f->maxp = p > f->maxp ? p : f->maxp;
			return true;
		}
	}
	f->full = 1;
	return false;
}

static int ks_plan_hash(struct ks_mod *m)
{
	uint32_t gbits = 0;
	while (((uint64_t)ADA_KEYSYM_GROUP_SLOTS * 7 / 8) << gbits < m->members)
		gbits++;
	for (; gbits <= ADA_KEYSYM_MAX_GROUP_BITS; gbits++) {
		size_t bytes = (size_t)64 << gbits;
		struct ks_fill f = {malloc(bytes), ((uint64_t)1 << gbits) - 1, 0, 0};
		if (!f.groups)
			return -ENOMEM;
		for (size_t g = 0; g < bytes; g += 64) {
			memset(f.groups + g, ADA_KEYSYM_EMPTY, 16);
			memset(f.groups + g + 16, 0xff, 48);
		}
		roaring_iterate(m->rb, ks_hash_put, &f);
		if (!f.full) {
			m->groups = f.groups;
			m->param = gbits | f.maxp << 8;
			m->body = bytes;
			return 0;
		}
		free(f.groups);
	}
	m->kind = ADA_KEYSYM_BITSET; /* ids that defeat the hash: the bitset takes any */
	return 0;
}

static int ks_plan_roaring(struct ks_mod *m)
{
	roaring_bitmap_t *r = roaring_bitmap_copy(m->rb);
	if (!r)
		return -ENOMEM;
	roaring_bitmap_run_optimize(r);
	size_t n = roaring_bitmap_frozen_size_in_bytes(r);
	m->frozen = aligned_alloc(32, (n + 31) & ~(size_t)31);
	if (!m->frozen) {
		roaring_bitmap_free(r);
		return -ENOMEM;
	}
	roaring_bitmap_frozen_serialize(r, m->frozen);
	roaring_bitmap_free(r);
	m->param = (uint32_t)n;
	m->body = ks_round64(KS_ROARING_IMG_OFF + n);
	return 0;
}

void ks_builder_force(struct ada_keysym_builder *b, uint32_t kind)
{
	ks_unplan(b);
	b->force = kind;
}

static int ks_plan_mod(struct ks_mod *m, uint32_t force)
{
	m->members = roaring_bitmap_get_cardinality(m->rb);
	uint32_t range = m->range;
	if (range == 0)
		range = m->members ? roaring_bitmap_maximum(m->rb) + 1 : 0;
	struct ks_runs runs = {0, -2};
	roaring_iterate(m->rb, ks_count_run, &runs);
	m->kind = ada_keysym_choose(m->members, range, runs.runs);
	if (force && m->members)
		m->kind = force;
	m->param = range;
	m->body = 0;
	int err = 0;
	if (m->kind == ADA_KEYSYM_HASH)
		err = ks_plan_hash(m);
	else if (m->kind == ADA_KEYSYM_ROARING)
		err = ks_plan_roaring(m);
	if (!err && m->kind == ADA_KEYSYM_BITSET) {
		m->param = (uint32_t)((range + 63) & ~(uint64_t)63);
		m->body = ks_round64(m->param / 8);
	}
	return err;
}

/* Module ids 0..n-1 get directory entries: up to the highest declared. */
static uint32_t ks_dir_entries(const struct ada_keysym_builder *b)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < b->cap; i++)
		if (b->mods[i].rb)
			n = i + 1;
	return b->all ? 0 : n;
}

static int ks_plan(struct ada_keysym_builder *b)
{
	if (b->planned)
		return 0;
	uint32_t n = ks_dir_entries(b);
	for (uint32_t i = 0; i < n; i++) {
		if (!b->mods[i].rb)
			continue;
		int err = ks_plan_mod(&b->mods[i], b->force);
		if (err) {
			ks_unplan(b);
			return err;
		}
	}
	b->planned = 1;
	return 0;
}

size_t ada_keysym_builder_size(struct ada_keysym_builder *b)
{
	if (ks_plan(b))
		return 0;
	uint32_t n = ks_dir_entries(b);
	uint64_t bytes = ks_round64(sizeof(struct ada_keysym_header) + 16 * (uint64_t)n);
	for (uint32_t i = 0; i < n; i++)
		if (b->mods[i].rb)
			bytes += b->mods[i].body;
	return bytes;
}

/* ---- writing ---- */

static bool ks_set_bit(uint32_t v, void *arg)
{
	uint64_t *w = arg;
	w[v / 64] |= 1ull << (v % 64);
	return true;
}

static void ks_write_body(const struct ks_mod *m, uint8_t *blob, uint64_t off)
{
	uint8_t *body = blob + off;
	memset(body, 0, m->body);
	if (m->kind == ADA_KEYSYM_BITSET)
		roaring_iterate(m->rb, ks_set_bit, body);
	else if (m->kind == ADA_KEYSYM_HASH)
		memcpy(body, m->groups, m->body);
	else if (m->kind == ADA_KEYSYM_ROARING) {
		uint64_t dir[ADA_KEYSYM_CHUNKS], card;
		memcpy(body + KS_ROARING_IMG_OFF, m->frozen, m->param);
		/* Our own image: the walk cannot fail (validate.c checks again). */
		ks_frozen_dir(body + KS_ROARING_IMG_OFF, m->param, off + KS_ROARING_IMG_OFF, dir,
		              &card);
		memcpy(body, dir, sizeof(dir));
	}
}

uint64_t ks_blob_xxh64(const uint8_t *blob, size_t len)
{
	static const uint8_t zero[8];
	size_t at = offsetof(struct ada_keysym_header, xxh64);
	XXH64_state_t st;
	XXH64_reset(&st, 0);
	XXH64_update(&st, blob, at);
	XXH64_update(&st, zero, 8);
	XXH64_update(&st, blob + at + 8, len - at - 8);
	return XXH64_digest(&st);
}

void ks_info_uncovered(struct ada_keysym_info *info, uint32_t module_id)
{
	if (info->uncovered < ADA_KEYSYM_INFO_UNCOVERED_IDS)
		info->uncovered_ids[info->uncovered] = module_id;
	info->uncovered++;
}

static int ks_info_fill(const struct ada_keysym_builder *b, uint32_t n,
                        const struct ada_keysym_header *h, struct ada_keysym_info *info)
{
	memset(info, 0, sizeof(*info));
	info->version = h->version;
	info->members = h->members;
	info->bytes = h->bytes;
	info->xxh64 = h->xxh64;
	info->all = h->flags & ADA_KEYSYM_F_ALL;
	info->live = !!(h->flags & ADA_KEYSYM_F_LIVE);
	info->entries = h->n_mods;
	if (n && !(info->mods = calloc(n, sizeof(*info->mods))))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct ks_mod *m = &b->mods[i];
		if (!m->rb)
			ks_info_uncovered(info, i);
		if (!m->rb || m->kind == ADA_KEYSYM_NONE)
			continue;
		info->mods[info->n_mods++] =
		    (struct ada_keysym_mod_info){i, m->kind, m->members, m->body};
	}
	return 0;
}

int ada_keysym_builder_write(struct ada_keysym_builder *b, uint64_t version, void *dst, size_t cap,
                             struct ada_keysym_info *info)
{
	if ((uintptr_t)dst % ADA_KEYSYM_ALIGN)
		return -EINVAL;
	size_t need = ada_keysym_builder_size(b);
	if (need == 0)
		return -ENOMEM;
	if (cap < need)
		return -ENOSPC;
	uint8_t *blob = dst;
	uint32_t n = ks_dir_entries(b);
	struct ada_keysym_header h = {.magic = ADA_KEYSYM_MAGIC,
	                              .format = ADA_KEYSYM_FORMAT,
	                              .flags = (b->all ? ADA_KEYSYM_F_ALL : 0) |
	                                       (b->live ? ADA_KEYSYM_F_LIVE : 0),
	                              .bytes = need,
	                              .n_mods = n,
	                              .version = version};
	uint64_t off = ks_round64(sizeof(h) + 16 * (uint64_t)n);
	memset(blob, 0, off);
	for (uint32_t i = 0; i < n; i++) {
		const struct ks_mod *m = &b->mods[i];
		/* Not declared: the set knows nothing of this module (its .syms
		 * was not read), which is not "no member" (keysym.h). */
		struct ada_keysym_mod e = {m->rb ? ADA_KEYSYM_NONE : ADA_KEYSYM_UNCOVERED, 0, 0, 0};
		if (m->rb && m->kind != ADA_KEYSYM_NONE) {
			e = (struct ada_keysym_mod){m->kind, m->param, (uint32_t)off,
			                            (uint32_t)m->members};
			ks_write_body(m, blob, off);
			off += m->body;
			h.members += m->members;
		}
		memcpy(blob + sizeof(h) + 16 * (uint64_t)i, &e, sizeof(e));
	}
	memcpy(blob, &h, sizeof(h));
	h.xxh64 = ks_blob_xxh64(blob, need);
	memcpy(blob, &h, sizeof(h));
	return info ? ks_info_fill(b, n, &h, info) : 0;
}

bool ada_keysym_contains(const void *blob, size_t len, uint64_t fn_id)
{
	return ada_keysym_contains_at(blob, ada_keysym_mask_for(len), 0, fn_id);
}
