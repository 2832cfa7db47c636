/*
 * The persistent plan cache (plancache_internal.h): file format, parser,
 * atomic writer, path and the agent's own build-id hash.
 *
 * Role: a cache hit lets the agent skip the two expensive analyses of an
 * image (hook_arch_prepare's body sweep and discover_xref's cross-function
 * sweep); only the prologue is decoded again. The file is never trusted
 * blindly: its header must match the image exactly (build-id, size,
 * function count, symbol-table hash) and the agent that wrote it (the
 * agent's build-id, so a change in the analysis code invalidates every
 * file), and an XXH64 over header and body must match.
 *
 * Threads: the agent's init thread or a dlopen rescan (agent.lock held),
 * and the unit tests. No shared state.
 *
 * File layout (little-endian; agent_hash covers the agent's build and its
 * architecture, HOOK_ARCH_NAME, so each architecture has its own files):
 *     0  magic "ADAPLAN\0"         8
 *     8  version (3)               u32
 *    12  build_id_len              u32 (<= 64)
 *    16  build_id                  64 bytes, zero-padded
 *    80  agent_hash                u64
 *    88  module_size               u64
 *    96  fn_count                  u64
 *   104  table_hash                u64
 *   112  checksum                  u64: XXH64(body, seed XXH64(bytes 0..112))
 *   120  reserved (0)              u64
 *   128  fn_count x {status u8, patch_len u8}
 *        then, for each entry with PLAN_CACHE_PLAN, in function order,
 *        its decoded plan:
 *          insn_count u8, original[patch length],
 *          padding form: pad_rel i32 (slot - function), pad_original[5],
 *          insn_count x {offset, len, kind, disp_off, cc, reg,
 *                        has_target u8, target_rel i64 (target - function)}
 * patch_len: the low 6 bits are the bytes the patch displaces (at least
 * HOOK_ARCH_PAD_ENTRY in the padding form, PLAN_CACHE_PAD, 0x80; at least
 * 5 otherwise); PLAN_CACHE_PLAN (0x40): a decoded plan follows.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fs.h"
#include "hook_arch.h"
#include "plancache_internal.h"

#define PC_MAGIC "ADAPLAN"
/* 2: switch tables read (jump_table verdicts changed); 3: the padding
 * form (PLAN_CACHE_PAD); 4: decoded plans (PLAN_CACHE_PLAN) */
#define PC_VERSION 4u
#define PC_HDR 128
#define PC_SUM_OFF 112
#define PC_MAX_FNS (1u << 24) /* far above any real symbol table */

struct pc_hdr {
	char magic[8];
	uint32_t version;
	uint32_t build_id_len;
	uint8_t build_id[ADA_HOOK_BUILD_ID_MAX];
	uint64_t agent_hash, module_size, fn_count, table_hash, checksum, reserved;
};
_Static_assert(sizeof(struct pc_hdr) == PC_HDR, "plan cache header is 128 bytes");
_Static_assert(offsetof(struct pc_hdr, checksum) == PC_SUM_OFF, "checksum offset");
_Static_assert(sizeof(struct plan_cache_entry) == 2, "entries are 2 bytes");
/* A plan record stores every field of the plan: a field added to either
 * struct must be added to pc_plan_put() and pc_plan_get() too. */
_Static_assert(sizeof(struct hook_arch_insn) == 16, "pc_plan_put stores every insn field");
_Static_assert(sizeof(struct hook_arch_plan) == 40 + HOOK_ARCH_MAX_PATCH + HOOK_ARCH_MAX_INSNS * 16,
               "pc_plan_put stores every plan field");
_Static_assert(HOOK_ARCH_MAX_PATCH <= PLAN_CACHE_LEN, "patch lengths fit the entry's bits");
#define PC_INSN_REC 15u
/* The longest plan record: the padding form, every instruction. */
#define PC_PLAN_MAX                                                                                \
	(1u + HOOK_ARCH_MAX_PATCH + 4u + HOOK_ARCH_PAD_SLOT + HOOK_ARCH_MAX_INSNS * PC_INSN_REC)

uint64_t plan_cache_table_hash(const struct ada_hook_symtab *st)
{
	/* Chained rather than XXH64_update: gcc 12 warns (array-bounds) on
	 * the inlined streaming code. A link per 128 functions, not one per
	 * function: XXH64's set-up and finish per 24 bytes were most of it
	 * (an exec'd image hashes libc's 6 620 at every start; exe10). The
	 * value is the key of files named by the agent's own build-id hash,
	 * so a new way of chaining meets no file of the old one. */
	enum { CHUNK = 128 };
	uint64_t v[CHUNK * 3], h = st->count;
	for (size_t i = 0; i < st->count;) {
		size_t n = 0;
		for (; n < CHUNK && i < st->count; n++, i++) {
			const struct ada_hook_fn *f = &st->fns[i];
			v[3 * n] = f->offset;
			v[3 * n + 1] = f->size;
			v[3 * n + 2] = f->status;
		}
		h = XXH64(v, n * 3 * sizeof(v[0]), h);
	}
	return h;
}

static uint64_t pc_checksum(const uint8_t *hdr, const uint8_t *body, size_t body_len)
{
	return XXH64(body, body_len, XXH64(hdr, PC_SUM_OFF, 0));
}

static int pc_key_matches(const struct pc_hdr *h, const struct plan_cache_key *key)
{
	return h->build_id_len == key->build_id_len &&
	       !memcmp(h->build_id, key->build_id, key->build_id_len) &&
	       h->agent_hash == key->agent_hash && h->module_size == key->module_size &&
	       h->fn_count == key->fn_count && h->table_hash == key->table_hash;
}

static int pc_entry_valid(const struct plan_cache_entry *e)
{
	unsigned len = e->patch_len & PLAN_CACHE_LEN;
	if (e->status == PLAN_CACHE_UNKNOWN)
		return 1;
	if (e->status >= ADA_SKIP_REASON_COUNT)
		return 0;
	if (e->status == ADA_HOOK_OK && (e->patch_len & PLAN_CACHE_PAD))
		return len >= HOOK_ARCH_PAD_ENTRY && len <= HOOK_ARCH_MAX_PATCH;
	if (e->status == ADA_HOOK_OK)
		return len >= HOOK_ARCH_MIN_PATCH && len <= HOOK_ARCH_MAX_PATCH;
	return e->patch_len == 0;
}

/* Little-endian scalars at p (the file's byte order on every host ada
 * runs on; memcpy keeps unaligned reads defined). */
static void pc_put(uint8_t **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

/* Appends plan's record at *p (room for PC_PLAN_MAX bytes). */
static void pc_plan_put(uint8_t **p, const struct hook_arch_plan *plan, unsigned len, bool pad)
{
	uint8_t count = (uint8_t)plan->insn_count;
	pc_put(p, &count, 1);
	pc_put(p, plan->original, len);
	if (pad) {
		int32_t rel = (int32_t)(plan->pad_addr - plan->fn_addr);
		pc_put(p, &rel, sizeof(rel));
		pc_put(p, plan->pad_original, HOOK_ARCH_PAD_SLOT);
	}
	for (size_t k = 0; k < plan->insn_count; k++) {
		const struct hook_arch_insn *in = &plan->insns[k];
		uint8_t b[7] = {in->offset, in->len, in->kind,       in->disp_off,
		                in->cc,     in->reg, in->target != 0};
		int64_t rel = in->target ? (int64_t)(in->target - plan->fn_addr) : 0;
		pc_put(p, b, sizeof(b));
		pc_put(p, &rel, sizeof(rel));
	}
}

/* Whether function e's plan can be stored: decoded, its shape one
 * pc_plan_get() accepts. */
static bool pc_plan_storable(const struct plan_cache_entry *e, const struct hook_arch_plan *plan)
{
	return e->status == ADA_HOOK_OK && plan->insn_count >= 1 &&
	       plan->insn_count <= HOOK_ARCH_MAX_INSNS &&
	       plan->patch_len == (e->patch_len & PLAN_CACHE_LEN) &&
	       !(plan->pad_addr != 0) == !(e->patch_len & PLAN_CACHE_PAD);
}

/* The padding slot [rel, rel + HOOK_ARCH_PAD_SLOT) from the function's
 * start: outside the len bytes the entry displaces, within the entry
 * jump's reach. */
static bool pc_pad_rel_ok(int64_t rel, unsigned len)
{
	int64_t from = rel - HOOK_ARCH_PAD_ENTRY;
	return (rel >= (int64_t)len || rel + HOOK_ARCH_PAD_SLOT <= 0) &&
	       from >= -(int64_t)HOOK_ARCH_PAD_REACH_BACK && from <= HOOK_ARCH_PAD_REACH_FWD;
}

/* Reads one instruction record into in, rebased on fn; false when its
 * shape is impossible (it must start where the last one ended, end
 * within the len displaced bytes, a rip displacement inside it). */
static bool pc_insn_get(const uint8_t *p, uint64_t fn, unsigned at, unsigned len,
                        struct hook_arch_insn *in)
{
	int64_t rel;
	memcpy(&rel, p + 7, sizeof(rel));
	*in = (struct hook_arch_insn){.offset = p[0],
	                              .len = p[1],
	                              .kind = p[2],
	                              .disp_off = p[3],
	                              .cc = p[4],
	                              .reg = p[5],
	                              .target = p[6] ? fn + (uint64_t)rel : 0};
	return p[0] == at && p[1] >= 1 && at + p[1] <= len && p[6] <= 1 && (p[6] || rel == 0) &&
	       (p[3] == 0 || p[3] + 4u <= p[1]);
}

/* Reads the plan record of an entry e at *p (left bytes remain) into
 * plan (NULL: checked only), rebased on plan->fn_addr. Advances *p.
 * False when it is truncated or has an impossible shape. */
static bool pc_plan_get(const uint8_t **p, size_t *left, const struct plan_cache_entry *e,
                        struct hook_arch_plan *plan)
{
	unsigned len = e->patch_len & PLAN_CACHE_LEN;
	bool pad = e->patch_len & PLAN_CACHE_PAD;
	const uint8_t *q = *p;
	if (*left < 1u + len)
		return false;
	unsigned count = q[0];
	size_t need = 1u + len + (pad ? 4u + HOOK_ARCH_PAD_SLOT : 0) + count * PC_INSN_REC;
	if (count < 1 || count > HOOK_ARCH_MAX_INSNS || *left < need)
		return false;
	struct hook_arch_plan tmp, *out = plan ? plan : &tmp;
	uint64_t fn = plan ? plan->fn_addr : 0;
	/* A copy of a zero plan, not memset: gcc makes that a `rep stos`,
	 * whose start-up was most of a hit's walk over libc's records. */
	static const struct hook_arch_plan zero;
	*out = zero;
	out->fn_addr = fn;
	out->patch_len = len;
	out->insn_count = count;
	memcpy(out->original, q + 1, len);
	q += 1 + len;
	if (pad) {
		int32_t rel;
		memcpy(&rel, q, sizeof(rel));
		if (!pc_pad_rel_ok(rel, len))
			return false;
		out->pad_addr = fn + (uint64_t)(int64_t)rel;
		memcpy(out->pad_original, q + 4, HOOK_ARCH_PAD_SLOT);
		q += 4 + HOOK_ARCH_PAD_SLOT;
	}
	unsigned at = 0;
	for (unsigned k = 0; k < count; k++, q += PC_INSN_REC) {
		if (!pc_insn_get(q, fn, at, len, &out->insns[k]))
			return false;
		at += out->insns[k].len;
	}
	*p = q;
	*left -= need;
	return true;
}

/* The header (checksum and key) and the entries of a file in (buf,
 * len): out[0 .. fn_count) filled and checked. 0, -EBADMSG or -ESTALE. */
static int pc_parse_head(const uint8_t *buf, size_t len, const struct plan_cache_key *key,
                         struct plan_cache_entry *out)
{
	struct pc_hdr h;
	if (!buf || len < PC_HDR)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, PC_MAGIC, sizeof(PC_MAGIC)) || h.version != PC_VERSION ||
	    h.build_id_len > ADA_HOOK_BUILD_ID_MAX || h.fn_count > PC_MAX_FNS || h.reserved ||
	    len - PC_HDR < h.fn_count * sizeof(struct plan_cache_entry))
		return -EBADMSG;
	if (pc_checksum(buf, buf + PC_HDR, len - PC_HDR) != h.checksum)
		return -EBADMSG;
	if (!pc_key_matches(&h, key))
		return -ESTALE;
	memcpy(out, buf + PC_HDR, h.fn_count * sizeof(struct plan_cache_entry));
	for (size_t i = 0; i < h.fn_count; i++) {
		if (!pc_entry_valid(&out[i]))
			return -EBADMSG;
	}
	return 0;
}

int plan_cache_parse(const uint8_t *buf, size_t len, const struct plan_cache_key *key,
                     struct plan_cache_entry *out, struct hook_arch_plan *plans)
{
	int err = pc_parse_head(buf, len, key, out);
	if (err)
		return err;
	size_t table = key->fn_count * sizeof(struct plan_cache_entry);
	const uint8_t *p = buf + PC_HDR + table;
	size_t left = len - PC_HDR - table;
	for (size_t i = 0; i < key->fn_count; i++) {
		bool has_plan =
		    out[i].status == ADA_HOOK_OK && (out[i].patch_len & PLAN_CACHE_PLAN);
		if (has_plan && !pc_plan_get(&p, &left, &out[i], plans ? &plans[i] : NULL))
			return -EBADMSG;
	}
	return left == 0 ? 0 : -EBADMSG;
}

int plan_cache_open_buf(uint8_t *buf, size_t len, const struct plan_cache_key *key,
                        struct plan_cache_entry *out, struct plan_cache_file *f)
{
	memset(f, 0, sizeof(*f));
	int err = pc_parse_head(buf, len, key, out);
	if (err)
		return err;
	f->buf = buf;
	f->len = len;
	plan_cache_file_rewind(f, key->fn_count);
	return 0;
}

void plan_cache_reseal(uint8_t *buf, size_t len, const struct plan_cache_key *key)
{
	struct pc_hdr h;
	if (len < PC_HDR || key->build_id_len > ADA_HOOK_BUILD_ID_MAX)
		return;
	memcpy(&h, buf, sizeof(h));
	memcpy(h.magic, PC_MAGIC, sizeof(PC_MAGIC));
	h.version = PC_VERSION;
	h.build_id_len = key->build_id_len;
	memset(h.build_id, 0, sizeof(h.build_id));
	memcpy(h.build_id, key->build_id, key->build_id_len);
	h.agent_hash = key->agent_hash;
	h.module_size = key->module_size;
	h.fn_count = key->fn_count;
	h.table_hash = key->table_hash;
	memcpy(buf, &h, sizeof(h));
	h.checksum = pc_checksum(buf, buf + PC_HDR, len - PC_HDR);
	memcpy(buf + PC_SUM_OFF, &h.checksum, sizeof(h.checksum));
}

bool plan_cache_all_planned(const struct plan_cache_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (e[i].status == ADA_HOOK_OK && !(e[i].patch_len & PLAN_CACHE_PLAN))
			return false;
	}
	return true;
}

bool plan_cache_next_plan(struct plan_cache_file *f, const struct plan_cache_entry *e,
                          uint64_t fn_addr, struct hook_arch_plan *out)
{
	if (f->bad || e->status != ADA_HOOK_OK || !(e->patch_len & PLAN_CACHE_PLAN))
		return false;
	out->fn_addr = fn_addr;
	/* A record that is not one ends the walk: the records after it
	 * cannot be told apart. */
	f->bad = !f->next || !pc_plan_get(&f->next, &f->left, e, out);
	return !f->bad;
}

bool plan_cache_file_whole(const struct plan_cache_file *f)
{
	return f->buf && !f->bad && f->left == 0;
}

void plan_cache_file_rewind(struct plan_cache_file *f, uint64_t fn_count)
{
	size_t at = PC_HDR + fn_count * sizeof(struct plan_cache_entry);
	f->next = f->buf && at <= f->len ? f->buf + at : NULL;
	f->left = f->next ? f->len - at : 0;
	f->bad = false;
}

uint64_t plan_cache_file_sum(const struct plan_cache_file *f)
{
	uint64_t sum = 0;
	if (f->buf && f->len >= PC_HDR)
		memcpy(&sum, f->buf + PC_SUM_OFF, sizeof(sum));
	return sum;
}

void plan_cache_file_free(struct plan_cache_file *f)
{
	free(f->buf);
	memset(f, 0, sizeof(*f));
}

int plan_cache_encode(const struct plan_cache_key *key, const struct plan_cache_entry *e,
                      const struct hook_arch_plan *plans, uint8_t **out, size_t *out_len)
{
	size_t table = key->fn_count * sizeof(*e), n_plans = 0;
	for (size_t i = 0; plans && i < key->fn_count; i++)
		n_plans += pc_plan_storable(&e[i], &plans[i]);
	uint8_t *b = malloc(PC_HDR + table + n_plans * PC_PLAN_MAX);
	if (!b)
		return -ENOMEM;
	struct pc_hdr h = {.version = PC_VERSION,
	                   .build_id_len = key->build_id_len,
	                   .agent_hash = key->agent_hash,
	                   .module_size = key->module_size,
	                   .fn_count = key->fn_count,
	                   .table_hash = key->table_hash};
	memcpy(h.magic, PC_MAGIC, sizeof(PC_MAGIC));
	memcpy(h.build_id, key->build_id, key->build_id_len);
	memcpy(b, &h, sizeof(h));
	uint8_t *p = b + PC_HDR + table;
	for (size_t i = 0; i < key->fn_count; i++) {
		struct plan_cache_entry w = e[i];
		w.patch_len &= (uint8_t)~PLAN_CACHE_PLAN;
		if (plans && pc_plan_storable(&w, &plans[i])) {
			w.patch_len |= PLAN_CACHE_PLAN;
			pc_plan_put(&p, &plans[i], w.patch_len & PLAN_CACHE_LEN,
			            w.patch_len & PLAN_CACHE_PAD);
		}
		memcpy(b + PC_HDR + i * sizeof(w), &w, sizeof(w));
	}
	size_t body = (size_t)(p - b) - PC_HDR;
	h.checksum = pc_checksum(b, b + PC_HDR, body);
	memcpy(b + PC_SUM_OFF, &h.checksum, sizeof(h.checksum));
	*out = b;
	*out_len = PC_HDR + body;
	return 0;
}

/* The bytes [addr, addr + len) as mem holds them, or NULL when no one
 * region holds them all. */
static const uint8_t *pc_mem_at(const struct hook_arch_memview *mem, uint64_t addr, uint64_t len)
{
	for (size_t k = 0; k < mem->n; k++) {
		const struct hook_arch_region *r = &mem->v[k];
		if (addr >= r->addr && addr - r->addr <= r->len && len <= r->len - (addr - r->addr))
			return r->bytes + (addr - r->addr);
	}
	return NULL;
}

bool plan_cache_fits(const struct hook_arch_memview *mem, const struct hook_arch_plan *plan,
                     unsigned patch_len)
{
	const uint8_t *code = pc_mem_at(mem, plan->fn_addr, plan->patch_len);
	if (plan->patch_len != patch_len || !code || memcmp(code, plan->original, plan->patch_len))
		return false;
	if (!plan->pad_addr)
		return true;
	/* The slot may begin inside a multi-byte nop of the gap: its bytes
	 * alone need not read as fill. */
	const uint8_t *slot = pc_mem_at(mem, plan->pad_addr, HOOK_ARCH_PAD_SLOT);
	return slot && !memcmp(slot, plan->pad_original, HOOK_ARCH_PAD_SLOT);
}

int plan_cache_dir(const char *given, char *out, size_t cap)
{
	/* Absolute only: a relative one would land in the program's working
	 * directory. */
	if (!given || given[0] != '/')
		return -ENOENT;
	int n = snprintf(out, cap, "%s", given);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int plan_cache_path(const char *dir, const struct plan_cache_key *key, char *out, size_t cap)
{
	char hex[2 * ADA_HOOK_BUILD_ID_MAX + 1], envdir[PATH_MAX];
	if (key->build_id_len == 0)
		return -ENOENT; /* no identity: never cached */
	for (size_t i = 0; i < key->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", key->build_id[i]);
	if (!dir) {
		int err = plan_cache_dir(secure_getenv("ADA_PLAN_CACHE"), envdir, sizeof(envdir));
		if (err)
			return err;
		dir = envdir;
	}
	if (!dir[0])
		return -ENOENT;
	int n =
	    snprintf(out, cap, "%s/%s-%016llx.plan", dir, hex, (unsigned long long)key->agent_hash);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int plan_cache_load_file(const char *path, const struct plan_cache_key *key,
                         struct plan_cache_entry *out, struct plan_cache_file *f)
{
	/* Only a file within the sizes the key allows can match: read no
	 * more. */
	uint64_t least = PC_HDR + key->fn_count * (uint64_t)sizeof(*out);
	void *buf = NULL;
	size_t got = 0;
	memset(f, 0, sizeof(*f));
	/* Through a walk that trusts only directories and links of root's
	 * and ours (fs.h): a cache under a HOME another user owns or can
	 * write -- as `sudo -E` passes it -- is never read. Read, not
	 * mapped: private memory from here on, every walk reads the same
	 * bytes whatever happens to the file (populated in one call, then
	 * read: docs/benchmarks.md, "An exec'd child's start-up, part by
	 * part"). */
	int err = ada_fs_read_private(path, least, least + key->fn_count * (uint64_t)PC_PLAN_MAX,
	                              NULL, &buf, &got);
	if (!err)
		err = plan_cache_open_buf(buf, got, key, out, f);
	if (err)
		free(buf);
	return err;
}

int plan_cache_load(const char *path, const struct plan_cache_key *key,
                    struct plan_cache_entry *out, struct hook_arch_plan *plans)
{
	struct plan_cache_file f;
	int err = plan_cache_load_file(path, key, out, &f);
	if (!err)
		err = plan_cache_parse(f.buf, f.len, key, out, plans);
	plan_cache_file_free(&f);
	return err;
}

/* Removes the files of the same image written by other agent builds
 * (<build-id>-<other hash>.plan): they can never match again, and a
 * rebuilt agent would otherwise leave one more file per image each time. */
static void pc_prune(int dfd, const char *base)
{
	const char *dash = strrchr(base, '-');
	if (!dash)
		return;
	size_t plen = (size_t)(dash - base); /* "<build-id>" */
	DIR *d = ada_fs_opendir(dfd, ".");
	if (!d)
		return;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		size_t n = strlen(de->d_name);
		bool ours = (n > 5 && !strcmp(de->d_name + n - 5, ".plan")) ||
		            (n > 4 && !strcmp(de->d_name + n - 4, ".fit")); /* agent_text.c */
		if (ours && !strncmp(de->d_name, base, plen) && de->d_name[plen] == '-' &&
		    strncmp(de->d_name, base, strlen(base) - 5))
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int plan_cache_store(const char *path, const struct plan_cache_key *key,
                     const struct plan_cache_entry *e, const struct hook_arch_plan *plans)
{
	uint8_t *b = NULL;
	size_t n = 0;
	const char *base;
	int dfd = -1, err = plan_cache_encode(key, e, plans, &b, &n);
	if (!err)
		err = ada_fs_walk_parent(path, ADA_FS_WALK_CREATE, &dfd, &base);
	/* Private temporary file, renameat: a reader sees the old file or the
	 * whole new one, and a planted link is replaced, never followed. */
	if (!err)
		err = ada_fs_replace(dfd, base, b, n, false);
	if (!err)
		pc_prune(dfd, base);
	if (dfd >= 0)
		close(dfd);
	free(b);
	return err;
}

struct pc_self {
	uint64_t addr;
	uint64_t hash;
};

const uint8_t *agent_note_build_id(const struct dl_phdr_info *info, size_t *len)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz;
		while (left >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p, sizeof(nh));
			size_t name = (nh.n_namesz + 3) & ~3u, desc = (nh.n_descsz + 3) & ~3u;
			if (sizeof(nh) + name + desc > left)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p + sizeof(nh), "GNU", 4) && nh.n_descsz > 0) {
				*len = nh.n_descsz;
				return p + sizeof(nh) + name;
			}
			p += sizeof(nh) + name + desc;
			left -= sizeof(nh) + name + desc;
		}
	}
	return NULL;
}

/* The NT_GNU_BUILD_ID note among an image's PT_NOTE segments, hashed. */
static uint64_t pc_note_hash(const struct dl_phdr_info *info)
{
	size_t len = 0;
	const uint8_t *id = agent_note_build_id(info, &len);
	return id ? XXH64(id, len, 0) | 1 : 0;
}

static int pc_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct pc_self *s = arg;
	(void)size;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz) {
			s->hash = pc_note_hash(info);
			return 1;
		}
	}
	return 0;
}

uint64_t plan_cache_self_hash(uint64_t self_addr)
{
	struct pc_self s = {self_addr, 0};
	dl_iterate_phdr(pc_self_cb, &s);
	/* The architecture too, said outright: an arm64 agent's plans are
	 * never an x86_64 agent's (their build-ids differ already; a cache
	 * directory shared by both, as ada record's default is for a
	 * program run under qemu-user, must not rely on that alone). */
	return s.hash ? s.hash ^ XXH64(HOOK_ARCH_NAME, sizeof(HOOK_ARCH_NAME) - 1, 0) : 0;
}
