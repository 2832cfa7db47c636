/*
 * The symbol-table cache (symcache_internal.h; docs/hooks.md,
 * "Symbol-table cache"). Not hook context: the agent's start-up and
 * dlopen scans, under agent.lock.
 *
 * File layout (native byte order: a cache is this machine's):
 *   names   names_len bytes, NUL-separated, ending in a NUL, in the
 *           functions' order (sc_pool_fill), then zeros to a multiple of 8
 *   fns     count records: offset, size (8 bytes each), name_off (4),
 *           status, is_ifunc, is_global, reserved (1 each)
 *   header  "ADASYMT" + version byte, the key (build-id length and bytes,
 *           flags, agent hash, root hash, debug identity, and for a
 *           table from .dynsym the image's file-name hash), source, entry,
 *           n_fde, xr_count and the ranges, count, names_len, the
 *           .gnu_debuglink name, checksum
 * The names come first so that the buffer the file was read into is the
 * table's name pool as it is (no copy, no second allocation to fault in),
 * and the records, 8-aligned there and laid out as struct ada_hook_fn,
 * its function array as they are (version 3: libc's 155 KiB array was
 * allocated, populated and filled anew by every exec'd image; exe10);
 * the header is found at the end. The checksum is XXH64 over the header
 * (checksum field zero) and the rest.
 * Everything read is checked before use: the file is input like any
 * other (a cache another run of a changed agent, or a disk fault, left).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fs.h"
#include "hook_arch.h"
#include "plancache_internal.h"
#include "symcache_internal.h"

#define SC_MAGIC "ADASYMT"
#define SC_VERSION 3u
/* Bounds of what a file may hold: more functions or name bytes than any
 * image has are a broken file, not a big image. */
#define SC_MAX_FNS (1u << 24)
#define SC_MAX_NAMES (1u << 28)
#define SC_FN_BYTES 24u
/* The names' bytes with the zeros after them: the records start there. */
#define SC_POOL_PAD(n) (((size_t)(n) + 7u) & ~(size_t)7u)

/* A record is an ada_hook_fn's bytes (native order): the parse takes the
 * records of a read buffer as the table's array without a copy. */
_Static_assert(sizeof(struct ada_hook_fn) == SC_FN_BYTES, "record size");
_Static_assert(offsetof(struct ada_hook_fn, offset) == 0 &&
                   offsetof(struct ada_hook_fn, size) == 8 &&
                   offsetof(struct ada_hook_fn, name_off) == 16 &&
                   offsetof(struct ada_hook_fn, status) == 20 &&
                   offsetof(struct ada_hook_fn, is_ifunc) == 21 &&
                   offsetof(struct ada_hook_fn, is_global) == 22 &&
                   offsetof(struct ada_hook_fn, reserved) == 23,
               "record layout");

struct sc_hdr {
	char magic[7];
	uint8_t version;
	uint8_t build_id[ADA_HOOK_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint32_t flags;
	uint64_t agent_hash;
	uint64_t root_hash;
	uint64_t debug_ident;
	uint32_t source;
	uint32_t xr_count;
	uint64_t entry;
	uint64_t n_fde;
	struct ada_hook_xrange xr[ADA_HOOK_MAX_XRANGES];
	uint64_t count;
	uint64_t names_len;
	uint64_t base_hash;                     /* a .dynsym table's: key->base_hash */
	char debuglink[ADA_HOOK_DEBUGLINK_MAX]; /* st->debuglink, NUL-padded */
	uint64_t checksum;
};

/* Tables the image's .dynsym made (with .eh_frame's functions or not):
 * valid while no debug file for the image is installed. */
static bool sc_from_dynsym(uint32_t source)
{
	return source == ADA_SYMSRC_DYNSYM || source == ADA_SYMSRC_EHFRAME;
}

static uint64_t sc_checksum(const struct sc_hdr *h, const uint8_t *body, size_t body_len)
{
	struct sc_hdr z = *h;
	z.checksum = 0;
	XXH64_state_t s;
	XXH64_reset(&s, 0);
	XXH64_update(&s, &z, sizeof(z));
	XXH64_update(&s, body, body_len);
	return XXH64_digest(&s);
}

/* The bytes of a name pool holding st's names in function order (a name
 * two functions share in a row once); 0 when a name is not inside st's
 * pool or the total passes SC_MAX_NAMES. */
static size_t sc_pool_len(const struct ada_hook_symtab *st)
{
	size_t len = 0;
	for (size_t i = 0; i < st->count; i++) {
		uint32_t off = st->fns[i].name_off;
		if (off >= st->names_len)
			return 0;
		if (i && off == st->fns[i - 1].name_off)
			continue;
		len += strnlen(st->names + off, st->names_len - off) + 1;
		if (len > SC_MAX_NAMES)
			return 0;
	}
	return len ? len : 1; /* no function: one NUL */
}

/* Copies st's names into pool in function order (the order every later
 * walk takes: the verdicts, the .syms lines), so that a process reading
 * the file reads its names front to back instead of all over a pool in
 * the symbol table's order, and writes each record's name_off for it. */
static void sc_pool_fill(const struct ada_hook_symtab *st, uint8_t *pool, uint8_t *recs)
{
	uint32_t w = 0, last = 0;
	pool[0] = '\0';
	for (size_t i = 0; i < st->count; i++, recs += SC_FN_BYTES) {
		uint32_t off = st->fns[i].name_off;
		if (!i || off != st->fns[i - 1].name_off) {
			size_t n = strnlen(st->names + off, st->names_len - off);
			memcpy(pool + w, st->names + off, n);
			pool[w + n] = '\0';
			last = w;
			w += (uint32_t)n + 1;
		}
		memcpy(recs + 16, &last, 4);
	}
}

int symtab_cache_encode(const struct symtab_cache_key *key, const struct ada_hook_symtab *st,
                        uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (st->count > SC_MAX_FNS || st->names_len > SC_MAX_NAMES || st->names_len == 0 ||
	    st->xr_count > ADA_HOOK_MAX_XRANGES || st->build_id_len > ADA_HOOK_BUILD_ID_MAX)
		return -EINVAL;
	size_t names_len = sc_pool_len(st);
	if (names_len == 0)
		return -EINVAL;
	size_t body = st->count * SC_FN_BYTES + SC_POOL_PAD(names_len);
	uint8_t *b = malloc(sizeof(struct sc_hdr) + body);
	if (!b)
		return -ENOMEM;
	memset(b + names_len, 0, SC_POOL_PAD(names_len) - names_len);
	struct sc_hdr h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SC_MAGIC, sizeof(h.magic));
	h.version = SC_VERSION;
	memcpy(h.build_id, key->build_id, key->build_id_len);
	h.build_id_len = key->build_id_len;
	h.flags = key->flags;
	h.agent_hash = key->agent_hash;
	h.root_hash = key->root_hash;
	h.debug_ident = key->debug_ident;
	h.source = (uint32_t)st->source;
	h.xr_count = (uint32_t)st->xr_count;
	h.entry = st->entry;
	h.n_fde = st->n_fde;
	memcpy(h.xr, st->xr, sizeof(h.xr));
	h.count = st->count;
	h.names_len = names_len;
	if (sc_from_dynsym(h.source))
		h.base_hash = key->base_hash;
	size_t link_len = strnlen(st->debuglink, sizeof(st->debuglink));
	if (link_len == sizeof(h.debuglink)) {
		free(b);
		return -EINVAL;
	}
	memcpy(h.debuglink, st->debuglink, link_len);
	uint8_t *p = b + SC_POOL_PAD(names_len);
	sc_pool_fill(st, b, p); /* the names and each record's name_off */
	for (size_t i = 0; i < st->count; i++, p += SC_FN_BYTES) {
		const struct ada_hook_fn *f = &st->fns[i];
		memcpy(p, &f->offset, 8);
		memcpy(p + 8, &f->size, 8);
		p[20] = f->status;
		p[21] = f->is_ifunc;
		p[22] = f->is_global;
		p[23] = f->reserved;
	}
	h.checksum = sc_checksum(&h, b, body);
	memcpy(b + body, &h, sizeof(h));
	*out = b;
	*out_len = sizeof(h) + body;
	return 0;
}

void symtab_cache_reseal(uint8_t *buf, size_t len)
{
	struct sc_hdr h;
	if (len < sizeof(h))
		return;
	memcpy(&h, buf + len - sizeof(h), sizeof(h));
	h.checksum = sc_checksum(&h, buf, len - sizeof(h));
	memcpy(buf + len - sizeof(h), &h, sizeof(h));
}

static bool sc_key_matches(const struct sc_hdr *h, const struct symtab_cache_key *key)
{
	return h->build_id_len == key->build_id_len &&
	       !memcmp(h->build_id, key->build_id, key->build_id_len) && h->flags == key->flags &&
	       h->agent_hash == key->agent_hash && h->root_hash == key->root_hash &&
	       (key->debug_ident == SYMTAB_CACHE_ANY_IDENT || h->debug_ident == key->debug_ident) &&
	       (!sc_from_dynsym(h->source) || h->base_hash == key->base_hash);
}

/* The header's own fields within what an ada_hook_symtab can be. */
static bool sc_hdr_sound(const struct sc_hdr *h)
{
	if (memcmp(h->magic, SC_MAGIC, sizeof(h->magic)) || h->version != SC_VERSION ||
	    h->build_id_len == 0 || h->build_id_len > ADA_HOOK_BUILD_ID_MAX ||
	    h->xr_count > ADA_HOOK_MAX_XRANGES || h->count > SC_MAX_FNS || h->names_len == 0 ||
	    h->names_len > SC_MAX_NAMES || h->n_fde > h->count)
		return false;
	for (size_t i = 0; i < h->xr_count; i++) {
		if (h->xr[i].lo > h->xr[i].hi)
			return false; /* sc_in_text relies on it */
	}
	/* The debuglink name as ada_fs_debuglink_name gives one: terminated
	 * inside its field, a name and never a path; only a .dynsym table
	 * (the read looked for that debug file and found none) has one. */
	size_t link_len = strnlen(h->debuglink, sizeof(h->debuglink));
	if (link_len == sizeof(h->debuglink) || memchr(h->debuglink, '/', link_len) ||
	    (link_len && !sc_from_dynsym(h->source)))
		return false;
	/* .eh_frame's functions make an "ehframe" table, and only they. */
	if (h->source == ADA_SYMSRC_EHFRAME)
		return h->n_fde > 0;
	return h->n_fde == 0 &&
	       (h->source == ADA_SYMSRC_SYMTAB || h->source == ADA_SYMSRC_DEBUGLINK ||
	        h->source == ADA_SYMSRC_DYNSYM);
}

static bool sc_in_text(const struct sc_hdr *h, const struct ada_hook_fn *f)
{
	for (size_t i = 0; i < h->xr_count; i++) {
		if (f->offset >= h->xr[i].lo && f->size <= h->xr[i].hi - h->xr[i].lo &&
		    f->offset - h->xr[i].lo <= h->xr[i].hi - h->xr[i].lo - f->size)
			return true;
	}
	return false;
}

/* One function record, checked against what ada_hook_symtab_read_ex
 * makes (symbols.c, symtab_judge): its name inside the pool, its flags
 * booleans, reserved 0, its status a verdict, the table sorted by offset
 * (symbol_index order), a function at the offset of the one before it an
 * alias, one to be hooked inside an executable range. */
static bool sc_fn_ok(const struct sc_hdr *h, const struct ada_hook_fn *f,
                     const struct ada_hook_fn *prev)
{
	if (f->name_off >= h->names_len || f->is_ifunc > 1 || f->is_global > 1 || f->reserved ||
	    f->status >= ADA_SKIP_REASON_COUNT)
		return false;
	if (prev && (f->offset < prev->offset ||
	             (f->offset == prev->offset && f->status != ADA_SKIP_ALIAS)))
		return false;
	return f->status != ADA_HOOK_OK || sc_in_text(h, f);
}

int symtab_cache_parse(uint8_t *buf, size_t len, const struct symtab_cache_key *key,
                       struct ada_hook_symtab *out, uint64_t *stored_ident, bool adopt)
{
	struct sc_hdr h;
	if (len < sizeof(h))
		return -EBADMSG;
	size_t body = len - sizeof(h);
	memcpy(&h, buf + body, sizeof(h));
	if (!sc_hdr_sound(&h) || body != h.count * SC_FN_BYTES + SC_POOL_PAD(h.names_len))
		return -EBADMSG;
	if (sc_checksum(&h, buf, body) != h.checksum)
		return -EBADMSG;
	if (!sc_key_matches(&h, key))
		return -ESTALE;
	if (buf[h.names_len - 1] != '\0')
		return -EBADMSG; /* every name ends inside the pool */
	size_t pad = SC_POOL_PAD(h.names_len);
	for (size_t i = h.names_len; i < pad; i++) {
		if (buf[i])
			return -EBADMSG; /* the zeros after the names */
	}
	uint8_t *recs = buf + pad;
	/* Adopted (and 8-aligned, as malloc's are): the records are checked
	 * where they are and become the table's array (fns_in_names). */
	bool in_place = adopt && ((uintptr_t)recs & (_Alignof(struct ada_hook_fn) - 1)) == 0;
	struct ada_hook_fn *fns = in_place ? (struct ada_hook_fn *)(void *)recs
	                                   : malloc((h.count ? h.count : 1) * sizeof(*fns));
	char *pool = adopt ? (char *)buf : malloc(h.names_len);
	if (!fns || !pool) {
		if (!in_place)
			free(fns);
		return -ENOMEM;
	}
	if (!in_place) {
		/* Every record is written below: in one call, not a fault a page. */
		ada_fs_populate(fns, h.count * sizeof(*fns));
		memcpy(fns, recs, h.count * sizeof(*fns)); /* the same bytes (the asserts above) */
	}
	for (size_t i = 0; i < h.count; i++) {
		if (!sc_fn_ok(&h, &fns[i], i ? &fns[i - 1] : NULL)) {
			if (!in_place)
				free(fns);
			if (!adopt)
				free(pool);
			return -EBADMSG;
		}
	}
	if (!adopt)
		memcpy(pool, buf, h.names_len);
	memset(out, 0, sizeof(*out));
	out->fns = fns;
	out->fns_in_names = in_place;
	out->count = h.count;
	out->names = pool;
	out->names_len = h.names_len;
	out->source = (enum ada_symtab_source)h.source;
	memcpy(out->build_id, h.build_id, h.build_id_len);
	out->build_id_len = h.build_id_len;
	out->entry = h.entry;
	memcpy(out->xr, h.xr, sizeof(out->xr));
	out->xr_count = h.xr_count;
	out->n_fde = h.n_fde;
	memcpy(out->debuglink, h.debuglink, sizeof(out->debuglink));
	if (stored_ident)
		*stored_ident = h.debug_ident;
	return 0;
}

uint64_t symtab_cache_file_ident(const char *path)
{
	struct stat s;
	if (stat(path, &s) != 0 || !S_ISREG(s.st_mode))
		return 0;
	uint64_t v[5] = {(uint64_t)s.st_dev, (uint64_t)s.st_ino, (uint64_t)s.st_size,
	                 (uint64_t)s.st_mtim.tv_sec, (uint64_t)s.st_mtim.tv_nsec};
	return XXH64(v, sizeof(v), 0) | 1;
}

uint64_t symtab_cache_debug_ident(const char *root, const uint8_t *build_id, size_t len)
{
	char hex[2 * ADA_HOOK_BUILD_ID_MAX + 1], path[PATH_MAX];
	if (len == 0 || len > ADA_HOOK_BUILD_ID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	if (ada_fs_debug_build_id_path(root ? root : "/usr/lib/debug", hex, path, sizeof(path)))
		return 0;
	return symtab_cache_file_ident(path);
}

static int sc_path(const char *dir, const struct symtab_cache_key *key, char *out, size_t cap)
{
	char hex[2 * ADA_HOOK_BUILD_ID_MAX + 1];
	if (!dir || dir[0] != '/' || key->build_id_len == 0 ||
	    key->build_id_len > ADA_HOOK_BUILD_ID_MAX)
		return -ENOENT;
	for (size_t i = 0; i < key->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", key->build_id[i]);
	int n = snprintf(out, cap, "%s/%s-%016llx-%x.symtab", dir, hex,
	                 (unsigned long long)key->agent_hash, (unsigned)key->flags);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

bool symtab_cache_no_debug_file(const char *debug_root, const char *image,
                                const struct symtab_cache_key *key, const char *link)
{
	const char *root = debug_root ? debug_root : "/usr/lib/debug";
	char cand[PATH_MAX];
	struct stat s;
	if (symtab_cache_debug_ident(root, key->build_id, key->build_id_len) != 0)
		return false;
	for (unsigned i = 0; link && link[0] && i < ADA_FS_DEBUGLINK_PLACES; i++) {
		/* Anything there at all (a file of another build, a link):
		 * the read would have looked at it, so the table is read. */
		int err = ada_fs_debuglink_path(root, image, link, i, cand, sizeof(cand));
		if (err == -ENAMETOOLONG || (err == 0 && lstat(cand, &s) == 0))
			return false;
	}
	return true;
}

/* The cached table, when the file matches and, for a debug file's table,
 * that debug file is still the one it was read from; for a .dynsym
 * table, when no debug file has been installed since. */
static int sc_load(const char *path, const char *image, const char *debug_root,
                   struct symtab_cache_key *key, struct ada_hook_symtab *st)
{
	void *buf = NULL;
	size_t got = 0;
	uint64_t ident = 0;
	/* Through a walk that trusts only directories and links of root's
	 * and ours (fs.h), as the plan cache's files are read; into private
	 * memory, populated in one call before the read (fs.h): its records
	 * become the table's array and get its statuses written. */
	int err = ada_fs_read_private(path, sizeof(struct sc_hdr),
	                              sizeof(struct sc_hdr) + (uint64_t)SC_MAX_FNS * SC_FN_BYTES +
	                                  SC_MAX_NAMES,
	                              NULL, &buf, &got);
	key->debug_ident = SYMTAB_CACHE_ANY_IDENT;
	if (!err)
		err = symtab_cache_parse(buf, got, key, st, &ident, true);
	if (err)
		free(buf); /* else buf is st's name pool now */
	if (!err && ident != 0 &&
	    ident != symtab_cache_debug_ident(debug_root, key->build_id, key->build_id_len)) {
		ada_hook_symtab_fini(st);
		memset(st, 0, sizeof(*st));
		err = -ESTALE; /* its debug file changed or went: read afresh */
	}
	if (!err && sc_from_dynsym(st->source) &&
	    !symtab_cache_no_debug_file(debug_root, image, key, st->debuglink)) {
		ada_hook_symtab_fini(st);
		memset(st, 0, sizeof(*st));
		err = -ESTALE; /* a debug file appeared: it names the functions now */
	}
	return err;
}

/* Removes the files of the same image and flags written by other agent
 * builds (<build-id>-<other hash>-<flags>.symtab): they never match
 * again (the plan cache prunes its own files the same way). */
static void sc_prune(int dfd, const char *base)
{
	const char *dash = strchr(base, '-'), *tail = strrchr(base, '-');
	if (!dash || !tail || dash == tail)
		return;
	size_t plen = (size_t)(dash - base), tlen = strlen(tail); /* "-<flags>.symtab" */
	DIR *d = ada_fs_opendir(dfd, ".");
	if (!d)
		return;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		size_t n = strlen(de->d_name);
		if (n > plen + tlen && !strncmp(de->d_name, base, plen + 1) &&
		    !strcmp(de->d_name + n - tlen, tail) && strcmp(de->d_name, base))
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* Stores st when it came from a .symtab: the image's own (identified by
 * the build-id alone), or its debug file's found by build-id (whose
 * identity is recorded); or from .dynsym (and .eh_frame) when no debug
 * file is anywhere the read looks (a load checks that again). Not a
 * table from a debug file found only by .gnu_debuglink, whose identity
 * is not recorded. Best effort: a cache. */
static void sc_store(const char *path, const char *image, const char *debug_root,
                     struct symtab_cache_key *key, const struct ada_hook_symtab *st)
{
	if (st->build_id_len != key->build_id_len ||
	    memcmp(st->build_id, key->build_id, key->build_id_len))
		return; /* the file on disk is not the build that is mapped */
	key->debug_ident = 0;
	if (st->source == ADA_SYMSRC_DEBUGLINK)
		key->debug_ident =
		    symtab_cache_debug_ident(debug_root, key->build_id, key->build_id_len);
	if (sc_from_dynsym(st->source) &&
	    !symtab_cache_no_debug_file(debug_root, image, key, st->debuglink))
		return;
	if (st->source != ADA_SYMSRC_SYMTAB && !sc_from_dynsym(st->source) &&
	    (st->source != ADA_SYMSRC_DEBUGLINK || !key->debug_ident))
		return;
	uint8_t *b = NULL;
	size_t n = 0;
	const char *base;
	int dfd = -1, err = symtab_cache_encode(key, st, &b, &n);
	if (!err)
		err = ada_fs_walk_parent(path, ADA_FS_WALK_CREATE, &dfd, &base);
	/* Private temporary file, renameat: a reader sees the old file or
	 * the whole new one, and a planted link is replaced, never followed. */
	if (!err && ada_fs_replace(dfd, base, b, n, false) == 0)
		sc_prune(dfd, base);
	if (dfd >= 0)
		close(dfd);
	free(b);
}

int symtab_cache_read(const char *dir, const char *path, const char *debug_root,
                      struct symtab_cache_key *key, struct ada_hook_symtab *st, bool *hit,
                      bool *refused)
{
	char cpath[PATH_MAX];
	*hit = *refused = false;
	key->root_hash = debug_root ? XXH64(debug_root, strlen(debug_root), 0) : 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path; /* what .eh_frame's function names start with */
	key->base_hash = XXH64(base, strlen(base), 0);
	bool on = sc_path(dir, key, cpath, sizeof(cpath)) == 0;
	int load = on ? sc_load(cpath, path, debug_root, key, st) : -ENOENT;
	if (load == 0) {
		*hit = true;
		return 0;
	}
	*refused = load != -ENOENT; /* a file there, not used: untrusted, broken, stale */
	int err = ada_hook_symtab_read_ex(path, debug_root, key->flags, st);
	if (!err && on)
		sc_store(cpath, path, debug_root, key, st);
	return err;
}

struct sc_mem {
	uint64_t addr;
	uint8_t *out;
	size_t cap, len;
};

/* The NT_GNU_BUILD_ID note among an image's PT_NOTE segments, as mapped,
 * copied when it fits out. */
static size_t sc_note_build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap)
{
	size_t len = 0;
	const uint8_t *id = agent_note_build_id(info, &len);
	if (!id || len > cap)
		return 0;
	memcpy(out, id, len);
	return len;
}

static int sc_mem_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sc_mem *m = arg;
	(void)size;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && m->addr >= lo && m->addr < lo + ph->p_memsz) {
			m->len = sc_note_build_id(info, m->out, m->cap);
			return 1;
		}
	}
	return 0;
}

uint32_t symtab_cache_mem_build_id(uint64_t addr, uint8_t *out, size_t cap)
{
	struct sc_mem m = {addr, out, cap, 0};
	dl_iterate_phdr(sc_mem_cb, &m);
	return (uint32_t)m.len;
}
