/*
 * ada keysym: key-symbol sets (which functions' calls enter the detail
 * ring), their position-independent serialized form, and the one O(1)
 * membership test the agent's hook handlers run.
 *
 * Protocol (who writes what, who reads it):
 *   - The recorder builds a set (struct ada_keysym_builder: per module, the
 *     member symbol indexes, held in CRoaring bitmaps while building) and
 *     writes it as one blob: a 64-byte header, a directory of 16-byte
 *     entries indexed by module id, then one container body per module.
 *     Every reference inside the blob is a byte offset from the blob's
 *     start, never a pointer, so the blob means the same in any process
 *     and at any address.
 *   - Per module the container is chosen by the density of its members
 *     (ada_keysym_choose()): a dense bitset, a CRoaring frozen bitmap with
 *     an O(1) chunk directory in front of it, or a flat open-addressing
 *     hash set whose groups are one cache line each.
 *   - The agent only reads blobs, through ada_keysym_lookup_at(): every
 *     load it makes is masked into the region that holds the blob, so a
 *     blob that is malformed, or rewritten while it is read, can give a
 *     wrong answer but never a read outside the region, and every loop is
 *     bounded by a constant. ada_keysym_validate() checks a blob
 *     completely (the recorder runs it before it publishes; the fuzzer
 *     feeds it garbage).
 *   - Which blob is current, and when an old one may be reused, is the
 *     region protocol below (struct ada_keysym_region, the RCU swap).
 *
 * Nothing here allocates or calls a library from ada_keysym_lookup_at()
 * and what it inlines: it is hook context (ADA_HOOKCTX).
 */
#ifndef ADA_KEYSYM_H
#define ADA_KEYSYM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADA_KEYSYM_MAGIC 0x314d59534b414441ULL /* "ADAKSYM1" */
#define ADA_KEYSYM_FORMAT 1u
#define ADA_KEYSYM_ALIGN 64u
/* Symbol indexes are below 2^24 (docs/internals.md: module ids too). */
#define ADA_KEYSYM_MAX_INDEX (1u << 24)
#define ADA_KEYSYM_MAX_MODULES (1u << 24)
/* Header flag: every function of every module is a member (the default). */
#define ADA_KEYSYM_F_ALL 0x1u
/* Header flag: built from a spec given while the program ran (`ada
 * keysym`), not the start-time one. The agent decides a module this set
 * says nothing about from its own set, built from the start-time rules:
 * with this flag those rules may differ from the set's, so the agent
 * counts each such decision (ADA_DROP_KEYSYM_UNKNOWN, handlers.c). */
#define ADA_KEYSYM_F_LIVE 0x2u

enum ada_keysym_kind {
	ADA_KEYSYM_NONE = 0,    /* no member in this module */
	ADA_KEYSYM_BITSET = 1,  /* param: bits (a multiple of 64) */
	ADA_KEYSYM_ROARING = 2, /* param: bytes of the CRoaring frozen image */
	ADA_KEYSYM_HASH = 3,    /* param: log2(groups) | max probe << 8 */
	ADA_KEYSYM_FULL = 4,    /* every function of this module */
	/* The builder was not told about this module (the recorder had not
	 * read its .syms yet: a gap below a module it had read): the set says
	 * nothing about it, as for a module id >= n_mods. No body, param,
	 * offset and members 0. */
	ADA_KEYSYM_UNCOVERED = 5,
	ADA_KEYSYM_KIND_COUNT = 6,
};
/* "none", "bitset", "roaring", "hash", "full", "unknown" (manifest values). */
const char *ada_keysym_kind_name(unsigned kind);

struct ada_keysym_header { /* 64 bytes at offset 0 of a blob */
	uint64_t magic;
	uint32_t flags;  /* ADA_KEYSYM_F_*; with n_mods: one 8-byte load in the test */
	uint32_t n_mods; /* directory entries: module ids 0..n_mods-1 */
	uint64_t bytes;  /* the whole blob, a multiple of 64 */
	uint32_t format;
	uint32_t reserved;
	uint64_t members; /* sum over modules (FULL counts its range) */
	uint64_t version; /* the set's version, given by its builder */
	uint64_t xxh64;   /* XXH64 (seed 0) of the blob with this field 0 */
	uint64_t reserved2;
};
_Static_assert(sizeof(struct ada_keysym_header) == 64, "keysym header is one cache line");

struct ada_keysym_mod { /* 16 bytes, directory entry of one module id */
	uint32_t kind;  /* enum ada_keysym_kind */
	uint32_t param; /* per kind, see the enum */
	uint32_t off;   /* body offset from the blob's start, 64-aligned */
	uint32_t members;
};
_Static_assert(sizeof(struct ada_keysym_mod) == 16, "keysym directory entry");

/* Hash set: a group is one cache line, 16 control bytes (slot i holds
 * h2 = the hash's top 7 bits, or ADA_KEYSYM_EMPTY) and 12 uint32 keys. */
#define ADA_KEYSYM_GROUP_SLOTS 12u
#define ADA_KEYSYM_EMPTY 0x80u
#define ADA_KEYSYM_MAX_PROBE 7u
#define ADA_KEYSYM_MAX_GROUP_BITS 20u
/* Roaring body: a directory of 256 uint64 (one per high-16-bit chunk of
 * the symbol index: type | (count-1) << 8 | offset << 32, offset from the
 * blob's start), then CRoaring's frozen image, 32-byte aligned. */
#define ADA_KEYSYM_CHUNKS 256u
enum ada_keysym_chunk {
	KS_CHUNK_NONE = 0,
	KS_CHUNK_BITSET = 1,
	KS_CHUNK_ARRAY = 2,
	KS_CHUNK_RUN = 3
};

/* ---- the hook-context test ----
 * Every load goes through ks_rd*(): the offset is masked into [0, mask]
 * (the region is mask + 1 bytes, a power of two) and aligned down to the
 * load's size, so no value in the blob can steer a load out of it. The
 * common path (the header word, the module's entry, one bitset word) is
 * inline and uses 8-byte loads only, with one mask for all; hash and
 * CRoaring containers are looked up out of line (ks_contains_other). */
static inline uint64_t ks_rd64(const uint8_t *base, uint64_t mask, uint64_t off)
{
	return *(const uint64_t *)(const void *)(base + (off & mask & ~(uint64_t)7));
}
static inline uint32_t ks_rd32(const uint8_t *base, uint64_t mask, uint64_t off)
{
	return *(const uint32_t *)(const void *)(base + (off & mask & ~(uint64_t)3));
}
static inline uint32_t ks_rd16(const uint8_t *base, uint64_t mask, uint64_t off)
{
	return *(const uint16_t *)(const void *)(base + (off & mask & ~(uint64_t)1));
}
/* An 8-byte load with a mask already aligned (mask & ~7). */
static inline uint64_t ks_ld8(const uint8_t *base, uint64_t mask8, uint64_t off)
{
	return *(const uint64_t *)(const void *)(base + (off & mask8));
}

static inline uint64_t ada_keysym_hash(uint32_t idx)
{
	return (uint64_t)idx * 0x9e3779b97f4a7c15ull;
}

/* Bytes of the group equal to b (SWAR: candidates, confirmed by the key
 * compare; a borrow can only add a false candidate above a true one). */
static inline uint64_t ks_match_byte(uint64_t w, uint32_t b)
{
	uint64_t v = w ^ (0x0101010101010101ull * b);
	return (v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull;
}

static inline bool ks_hash_group_has(const uint8_t *base, uint64_t mask, uint64_t g, uint32_t idx,
                                     uint32_t h2)
{
	for (uint32_t half = 0; half < 2; half++) {
		uint64_t m = ks_match_byte(ks_rd64(base, mask, g + 8 * half), h2);
		while (m) { /* at most 8 rounds: one per byte */
			uint32_t slot = half * 8 + (uint32_t)__builtin_ctzll(m) / 8;
			if (ks_rd32(base, mask, g + 16 + 4 * slot) == idx)
				return true;
			m &= m - 1;
		}
	}
	return false;
}

static inline bool ks_hash_has(const uint8_t *base, uint64_t mask, uint64_t body, uint32_t param,
                               uint32_t idx)
{
	uint32_t gbits = param & 0xff, probes = (param >> 8) & ADA_KEYSYM_MAX_PROBE;
	uint64_t h = ada_keysym_hash(idx), gmask = ((uint64_t)1 << (gbits & 31)) - 1;
	uint64_t g0 = (h >> 32) & gmask;
	for (uint32_t p = 0; p <= probes; p++) {
		uint64_t g = body + ((g0 + p) & gmask) * 64;
		if (ks_hash_group_has(base, mask, g, idx, (uint32_t)(h >> 57)))
			return true;
	}
	return false;
}

/* Binary search of n sorted uint16 at off (array chunk); n <= 4096. */
static inline bool ks_array_has(const uint8_t *base, uint64_t mask, uint64_t off, uint32_t n,
                                uint32_t lo16)
{
	uint32_t lo = 0, hi = n;
	for (int step = 0; step < 14 && lo < hi; step++) {
		uint32_t mid = (lo + hi) / 2, v = ks_rd16(base, mask, off + 2 * (uint64_t)mid);
		if (v == lo16)
			return true;
		if (v < lo16)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* n runs (value, length-1) at off, sorted by value; n <= 32768. */
static inline bool ks_run_has(const uint8_t *base, uint64_t mask, uint64_t off, uint32_t n,
                              uint32_t lo16)
{
	uint32_t lo = 0, hi = n; /* first run with value > lo16 */
	for (int step = 0; step < 17 && lo < hi; step++) {
		uint32_t mid = (lo + hi) / 2;
		if (ks_rd16(base, mask, off + 4 * (uint64_t)mid) <= lo16)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	uint64_t r = off + 4 * (uint64_t)(lo - 1);
	return lo16 - ks_rd16(base, mask, r) <= ks_rd16(base, mask, r + 2);
}

static inline bool ks_roaring_has(const uint8_t *base, uint64_t mask, uint64_t blob, uint64_t body,
                                  uint32_t idx)
{
	uint32_t key = idx >> 16, lo16 = idx & 0xffff;
	if (key >= ADA_KEYSYM_CHUNKS)
		return false;
	uint64_t d = ks_rd64(base, mask, body + 8 * (uint64_t)key);
	uint32_t type = d & 0xff, n = (uint32_t)((d >> 8) & 0xffff) + 1;
	uint64_t off = blob + (d >> 32);
	if (type == KS_CHUNK_BITSET)
		return (ks_rd64(base, mask, off + (lo16 >> 6) * 8) >> (lo16 & 63)) & 1;
	if (type == KS_CHUNK_ARRAY)
		return ks_array_has(base, mask, off, n, lo16);
	if (type == KS_CHUNK_RUN)
		return ks_run_has(base, mask, off, n, lo16);
	return false;
}

/* The inline part of the test: 1 member, 0 not, ADA_KEYSYM_ASK for a
 * hash or CRoaring container, and for a module the blob says nothing
 * about: no directory entry (module id >= n_mods: the recorder built the
 * set before it read that module's symbols, or the module was loaded
 * after) or an ADA_KEYSYM_UNCOVERED entry (a gap: the recorder had read a
 * module with a higher id but not this one); then ada_keysym_lookup_at()
 * answers, out of line. For fn_id ((module_id << 32) | symbol_index) and
 * the blob at offset `blob` of the region [base, base + mask]. Hook
 * context: no call, no loop, four loads.
 *
 * A blob that says nothing about a module does not say "not a member".
 * The agent answers such a module from its own set (the start-time
 * rules: handlers.c, agent_detail_ask); everyone else (recorder, tools,
 * ada_keysym_contains_at) takes it as "not a member of this blob"
 * (docs/internals.md, "Key-symbol sets"). */
#define ADA_KEYSYM_ASK 2
/* ada_keysym_lookup_at(): the blob says nothing about the module (no
 * entry, or an ADA_KEYSYM_UNCOVERED one). */
#define ADA_KEYSYM_UNKNOWN 3
static inline int ada_keysym_test(const uint8_t *base, uint64_t mask, uint64_t blob, uint64_t fn_id)
{
	uint64_t m8 = mask & ~(uint64_t)7, m = fn_id >> 32;
	uint32_t idx = (uint32_t)fn_id;
	uint64_t h = ks_ld8(base, m8, blob + offsetof(struct ada_keysym_header, flags));
	if (h & ADA_KEYSYM_F_ALL) /* flags | n_mods << 32 */
		return 1;
	if (m >= h >> 32)
		return ADA_KEYSYM_ASK; /* no entry: ada_keysym_lookup_at() says so */
	uint64_t e = blob + sizeof(struct ada_keysym_header) + 16 * m;
	uint64_t kp = ks_ld8(base, m8, e); /* kind | param << 32 */
	uint32_t kind = (uint32_t)kp, param = (uint32_t)(kp >> 32);
	if (kind == ADA_KEYSYM_BITSET) {
		uint64_t body = blob + (uint32_t)ks_ld8(base, m8, e + 8);
		return idx < param && ((ks_ld8(base, m8, body + (idx >> 6) * 8) >> (idx & 63)) & 1);
	}
	if (kind == ADA_KEYSYM_FULL)
		return 1;
	/* hash, CRoaring, uncovered (and a kind no blob that passed
	 * ada_keysym_validate() has): out of line. */
	return kind == ADA_KEYSYM_NONE ? 0 : ADA_KEYSYM_ASK;
}

/* The whole test (what ada_keysym_test leaves to ask too): 1 member, 0
 * not, ADA_KEYSYM_UNKNOWN when the blob says nothing about the module
 * (its id >= n_mods, or its entry is ADA_KEYSYM_UNCOVERED; the caller
 * decides, see ada_keysym_test); 0 for a kind no valid blob has. Hook context:
 * O(1) (every loop has a constant bound), no lock, no allocation, no
 * library. */
__attribute__((noinline, unused)) static int
ada_keysym_lookup_at(const uint8_t *base, uint64_t mask, uint64_t blob, uint64_t fn_id)
{
	int r = ada_keysym_test(base, mask, blob, fn_id);
	if (r != ADA_KEYSYM_ASK)
		return r;
	uint64_t m = fn_id >> 32;
	if (m >= ks_rd32(base, mask, blob + offsetof(struct ada_keysym_header, n_mods)))
		return ADA_KEYSYM_UNKNOWN;
	uint64_t e = blob + sizeof(struct ada_keysym_header) + 16 * m;
	uint32_t kind = ks_rd32(base, mask, e), param = ks_rd32(base, mask, e + 4);
	uint64_t body = blob + ks_rd32(base, mask, e + 8);
	if (kind == ADA_KEYSYM_HASH)
		return ks_hash_has(base, mask, body, param, (uint32_t)fn_id);
	if (kind == ADA_KEYSYM_ROARING)
		return ks_roaring_has(base, mask, blob, body, (uint32_t)fn_id);
	return kind == ADA_KEYSYM_UNCOVERED ? ADA_KEYSYM_UNKNOWN : 0;
}

/* Membership in this blob alone: a module it says nothing about (no
 * entry, or an uncovered one) is not a member of it: the blob holds no
 * member there, and whoever needs to tell "not a member" from "unknown"
 * (the agent) calls ada_keysym_lookup_at(). Recorder, tools, tests. */
__attribute__((unused)) static inline bool
ada_keysym_contains_at(const uint8_t *base, uint64_t mask, uint64_t blob, uint64_t fn_id)
{
	return ada_keysym_lookup_at(base, mask, blob, fn_id) == 1;
}

/* The smallest power of two >= len, minus one: the mask that
 * ada_keysym_contains_at() needs for a blob standing alone in a buffer of
 * that power-of-two size (the caller allocates it). */
uint64_t ada_keysym_mask_for(size_t len);

/* ---- building (recorder side, and the agent outside hook context) ---- */

struct ada_keysym_builder;

/* Per module, what the writer chose (the manifest's keysym versions). */
struct ada_keysym_mod_info {
	uint32_t module_id;
	uint32_t kind;
	uint64_t members;
	uint64_t bytes; /* body bytes */
};
#define ADA_KEYSYM_INFO_UNCOVERED_IDS 16u
struct ada_keysym_info {
	uint64_t version;
	uint64_t members;
	uint64_t bytes;
	uint64_t xxh64;
	uint32_t all;                     /* ADA_KEYSYM_F_ALL */
	uint32_t live;                    /* ADA_KEYSYM_F_LIVE */
	uint32_t n_mods;                  /* entries in mods[] (modules with a container) */
	struct ada_keysym_mod_info *mods; /* owned by whoever filled it: ada_keysym_info_fini() */
	/* The header's n_mods: the directory's entries. A module id below it
	 * the builder was not told about has an ADA_KEYSYM_UNCOVERED entry;
	 * it, and every id at or above `entries`, is unknown to the set
	 * (ada_keysym_test). */
	uint32_t entries;
	uint32_t uncovered; /* ADA_KEYSYM_UNCOVERED entries (not in mods[]) */
	/* The first of them by id (up to ADA_KEYSYM_INFO_UNCOVERED_IDS). */
	uint32_t uncovered_ids[ADA_KEYSYM_INFO_UNCOVERED_IDS];
};
void ada_keysym_info_fini(struct ada_keysym_info *info);

/* 0, -ENOMEM. */
int ada_keysym_builder_new(struct ada_keysym_builder **out);
void ada_keysym_builder_free(struct ada_keysym_builder *b);
/* Every function of every module (the default set). */
void ada_keysym_builder_set_all(struct ada_keysym_builder *b);
/* The header gets ADA_KEYSYM_F_LIVE (the recorder: a spec set by `ada
 * keysym`, not the start-time one). */
void ada_keysym_builder_set_live(struct ada_keysym_builder *b);
/* Declares module `module_id` with `range` functions (symbol indexes
 * < range; 0: not known, the largest member + 1 is used). A module id
 * below the highest declared one that is never declared gets an
 * ADA_KEYSYM_UNCOVERED entry (the set says nothing about it), a declared
 * one without members a NONE entry (not a member). 0, -EINVAL
 * (id or range out of bounds), -ENOMEM. */
int ada_keysym_builder_module(struct ada_keysym_builder *b, uint32_t module_id, uint32_t range);
/* Adds members (any order, duplicates fine). 0, -EINVAL (an index >= the
 * module's range or ADA_KEYSYM_MAX_INDEX), -ENOMEM. */
int ada_keysym_builder_add(struct ada_keysym_builder *b, uint32_t module_id, const uint32_t *idx,
                           size_t n);
/* Adds the members of a CRoaring portable-serialized bitmap (`ada keysym
 * --blob`), checked first: 0, -EBADMSG (not a whole, valid portable
 * bitmap, or bytes after it), -ERANGE (a member >= the module's range),
 * -EINVAL, -ENOMEM. */
int ada_keysym_builder_add_portable(struct ada_keysym_builder *b, uint32_t module_id,
                                    const void *buf, size_t len);
/* Bytes the blob will take (a multiple of 64); 0 on -ENOMEM. */
size_t ada_keysym_builder_size(struct ada_keysym_builder *b);
/* Writes the blob (ada_keysym_builder_size() bytes) into dst, 64-byte
 * aligned, and fills info (may be NULL). 0, -ENOSPC (cap too small),
 * -EINVAL (dst misaligned), -ENOMEM. */
int ada_keysym_builder_write(struct ada_keysym_builder *b, uint64_t version, void *dst, size_t cap,
                             struct ada_keysym_info *info);

/* The density rule (docs/internals.md "Key-symbol sets"): n members among
 * `range` symbol indexes, in `runs` runs of consecutive indexes. */
enum ada_keysym_kind ada_keysym_choose(uint64_t n, uint64_t range, uint64_t runs);

/* Checks a blob completely: header, directory, every container (hash
 * groups where their keys hash to, CRoaring's own check of the frozen
 * image and the chunk directory against it), members and XXH64. buf must
 * be 64-byte aligned. 0 or -EBADMSG; *why (may be NULL) gets a static
 * sentence saying what is wrong. Fills info when not NULL. */
int ada_keysym_validate(const void *buf, size_t len, struct ada_keysym_info *info,
                        const char **why);

/* A standalone blob's membership test (not hook context: validates
 * nothing, the caller did): for tests and tools. */
bool ada_keysym_contains(const void *blob, size_t len, uint64_t fn_id);

/* ---- specs: what the user asked for (spec.c) ----
 * Rules MODULE_GLOB:SYMBOL_GLOB (fnmatch; the module glob matches the
 * module's path or its file name) and CRoaring portable bitmaps by module
 * id. An empty spec means every hooked function. */
struct ada_keysym_spec;
struct ada_syms_module; /* src/atf/symbols.h */
int ada_keysym_spec_new(struct ada_keysym_spec **out);
void ada_keysym_spec_free(struct ada_keysym_spec *s);
bool ada_keysym_spec_is_all(const struct ada_keysym_spec *s);
/* A copy of s (NULL: an empty spec). 0, -ENOMEM. */
int ada_keysym_spec_copy(const struct ada_keysym_spec *s, struct ada_keysym_spec **out);
size_t ada_keysym_spec_rules(const struct ada_keysym_spec *s);
/* Rule i (< ada_keysym_spec_rules()): its two globs. */
void ada_keysym_spec_rule(const struct ada_keysym_spec *s, size_t i, const char **mod,
                          const char **sym);
/* One rule; a line without ':' is *:SYMBOL_GLOB. 0, -EINVAL (why), -ENOMEM. */
int ada_keysym_spec_add_rule(struct ada_keysym_spec *s, const char *line, size_t len, char *why,
                             size_t cap);
/* `--key-symbols FILE` text: one rule a line, '#' comments, blank lines;
 * at least one rule. 0, -EINVAL (why names the line), -ENOMEM. */
int ada_keysym_spec_parse_file(struct ada_keysym_spec *s, const char *buf, size_t len, char *why,
                               size_t cap);
/* A portable bitmap for one module id, checked now (copied). 0, -EBADMSG,
 * -ERANGE (why), -ENOMEM. */
int ada_keysym_spec_add_blob(struct ada_keysym_spec *s, uint32_t module_id, const void *buf,
                             size_t len, char *why, size_t cap);
/* Fills b with the set the spec means for a process with these modules
 * (its parsed .syms files). 0, -ERANGE (a blob beyond its module: why),
 * -EINVAL, -ENOMEM. */
int ada_keysym_spec_build(const struct ada_keysym_spec *s,
                          const struct ada_syms_module *const *mods, size_t n,
                          struct ada_keysym_builder *b, char *why, size_t cap);

/* ---- the swap (recorder side, region.c; docs/internals.md) ----
 * One region per traced process: the arena's key-symbol area (ring.h:
 * ada_arena_keysym_area / _cur). Blobs are written into free ranges of it
 * and published with one release store of their offset; a replaced blob's
 * range is reused only after every thread that might read it has moved
 * on (an event published after the swap, gone, or in a system call). */

/* One thread of the target as the caller sees it now: key names one
 * thread's hold of a ring slot (slot << 32 | generation), events the
 * count it has published (the slot's head, read with acquire). A thread
 * that holds no slot (it has not published yet, or there was none for
 * it) has key ADA_KEYSYM_NO_SLOT | tid: it may be inside contains()
 * before its first event. */
#define ADA_KEYSYM_NO_SLOT (1ull << 63)
struct ada_keysym_thread {
	uint64_t key;
	uint64_t events;
	uint32_t tid;
	uint32_t reserved;
};
struct ada_keysym_target {
	int pid;            /* for /proc/PID/task/TID/syscall; 0: not checked */
	int expedited;      /* the target registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED */
	size_t max_threads; /* most threads threads() reports */
	/* Fills out with the target's threads that hold a slot; returns how
	 * many, or -errno. */
	int (*threads)(void *ctx, struct ada_keysym_thread *out, size_t cap);
	void *ctx;
};
struct ada_keysym_region_stats {
	uint64_t published, reclaimed;
	uint64_t syscall_quiescent; /* threads taken as quiescent in a system call */
	uint64_t barrier_failed;    /* membarrier refused: that blob is never reused */
	uint64_t unreclaimable;     /* blobs kept for good (barrier or memory failed) */
	uint64_t retired_now, bytes_used;
};
struct ada_keysym_region;

/* area: bytes (a power of two, >= 4096) the target reads; cur: the word
 * it loads. 0, -EINVAL, -ENOMEM. */
int ada_keysym_region_new(uint8_t *area, uint64_t bytes, _Atomic uint64_t *cur,
                          struct ada_keysym_region **out);
void ada_keysym_region_free(struct ada_keysym_region *r); /* the area is not touched */
/* Copies a blob (validated by the caller) into a free range, publishes
 * it, runs the barrier and retires the blob it replaced. 0; -ENOSPC (it
 * can never fit), -EBUSY (no room while a thread may still read old sets:
 * why names it; try again later); why gets one sentence. */
int ada_keysym_region_publish(struct ada_keysym_region *r, const void *blob, size_t len,
                              const struct ada_keysym_target *t, char *why, size_t cap);
/* Frees the ranges of retired blobs whose grace period is over; returns
 * how many stay retired (*stuck_tid, may be NULL: a thread holding one). */
size_t ada_keysym_region_reclaim(struct ada_keysym_region *r, const struct ada_keysym_target *t,
                                 uint32_t *stuck_tid);
void ada_keysym_region_stats(const struct ada_keysym_region *r, struct ada_keysym_region_stats *s);
/* /proc/PID/task/TID/syscall says the thread is blocked in a system call. */
bool ada_keysym_thread_in_syscall(int pid, uint32_t tid);

#endif
