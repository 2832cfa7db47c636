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
 * patch_len with PLAN_CACHE_PAD (0x80) set: the padding form, its entry
 * displacing the low 7 bits' bytes (at least HOOK_ARCH_PAD_ENTRY).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
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
 * form (PLAN_CACHE_PAD) */
#define PC_VERSION 3u
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

uint64_t plan_cache_table_hash(const struct ada_hook_symtab *st)
{
	/* Chained rather than XXH64_update: gcc 12 warns (array-bounds) on
	 * the inlined streaming code. */
	uint64_t h = st->count;
	for (size_t i = 0; i < st->count; i++) {
		const struct ada_hook_fn *f = &st->fns[i];
		uint64_t v[3] = {f->offset, f->size, f->status};
		h = XXH64(v, sizeof(v), h);
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
	if (e->status == PLAN_CACHE_UNKNOWN)
		return 1;
	if (e->status >= ADA_SKIP_REASON_COUNT)
		return 0;
	if (e->status == ADA_HOOK_OK && (e->patch_len & PLAN_CACHE_PAD))
		return (e->patch_len & ~PLAN_CACHE_PAD) >= HOOK_ARCH_PAD_ENTRY &&
		       (e->patch_len & ~PLAN_CACHE_PAD) <= HOOK_ARCH_MAX_PATCH;
	if (e->status == ADA_HOOK_OK)
		return e->patch_len >= HOOK_ARCH_MIN_PATCH && e->patch_len <= HOOK_ARCH_MAX_PATCH;
	return e->patch_len == 0;
}

int plan_cache_parse(const uint8_t *buf, size_t len, const struct plan_cache_key *key,
                     struct plan_cache_entry *out)
{
	struct pc_hdr h;
	if (!buf || len < PC_HDR)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, PC_MAGIC, sizeof(PC_MAGIC)) || h.version != PC_VERSION ||
	    h.build_id_len > ADA_HOOK_BUILD_ID_MAX || h.fn_count > PC_MAX_FNS || h.reserved ||
	    len - PC_HDR != h.fn_count * sizeof(struct plan_cache_entry))
		return -EBADMSG;
	if (pc_checksum(buf, buf + PC_HDR, len - PC_HDR) != h.checksum)
		return -EBADMSG;
	if (!pc_key_matches(&h, key))
		return -ESTALE;
	memcpy(out, buf + PC_HDR, len - PC_HDR);
	for (size_t i = 0; i < h.fn_count; i++) {
		if (!pc_entry_valid(&out[i]))
			return -EBADMSG;
	}
	return 0;
}

int plan_cache_encode(const struct plan_cache_key *key, const struct plan_cache_entry *e,
                      uint8_t **out, size_t *out_len)
{
	size_t body = key->fn_count * sizeof(*e);
	uint8_t *b = malloc(PC_HDR + body);
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
	memcpy(b + PC_HDR, e, body);
	h.checksum = pc_checksum(b, b + PC_HDR, body);
	memcpy(b + PC_SUM_OFF, &h.checksum, sizeof(h.checksum));
	*out = b;
	*out_len = PC_HDR + body;
	return 0;
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

int plan_cache_load(const char *path, const struct plan_cache_key *key,
                    struct plan_cache_entry *out)
{
	/* Through a walk that trusts only directories and links of root's
	 * and ours (fs.h): a cache under a HOME another user owns or can
	 * write -- as `sudo -E` passes it -- is never read. */
	struct stat sb;
	int fd, err = ada_fs_open_private(path, &fd, &sb);
	if (err)
		return err;
	size_t want = PC_HDR + key->fn_count * sizeof(*out);
	/* Only a file of exactly the expected size can match: read no more. */
	if (!err && (uint64_t)sb.st_size != want)
		err = -EBADMSG;
	uint8_t *buf = err ? NULL : malloc(want);
	if (!err && !buf)
		err = -ENOMEM;
	size_t got = 0;
	while (!err && got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			err = r < 0 ? -errno : -EBADMSG;
		else
			got += (size_t)r;
	}
	close(fd);
	if (!err)
		err = plan_cache_parse(buf, got, key, out);
	free(buf);
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
		if (n > 5 && !strncmp(de->d_name, base, plen) && de->d_name[plen] == '-' &&
		    !strcmp(de->d_name + n - 5, ".plan") && strcmp(de->d_name, base))
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int plan_cache_store(const char *path, const struct plan_cache_key *key,
                     const struct plan_cache_entry *e)
{
	uint8_t *b = NULL;
	size_t n = 0;
	const char *base;
	int dfd = -1, err = plan_cache_encode(key, e, &b, &n);
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

/* The NT_GNU_BUILD_ID note among an image's PT_NOTE segments, hashed. */
static uint64_t pc_note_hash(const struct dl_phdr_info *info)
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
			    !memcmp(p + sizeof(nh), "GNU", 4) && nh.n_descsz > 0)
				return XXH64(p + sizeof(nh) + name, nh.n_descsz, 0) | 1;
			p += sizeof(nh) + name + desc;
			left -= sizeof(nh) + name + desc;
		}
	}
	return 0;
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
