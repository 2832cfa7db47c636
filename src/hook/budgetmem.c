/*
 * The budget's memory of an image (budgetmem_internal.h): file format,
 * parser, path and atomic writer.
 *
 * The file (little-endian):
 *    0  magic "ADAMOVE1"
 *    8  table hash                u64 (budgetmem_table_hash)
 *   16  function count            u32 (the symbol table's)
 *   20  n                         u32 (<= BUDGETMEM_MAX)
 *   24  n function indices        u32 each, every one < the count
 *   ..  XXH64 of all before       u64
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "budgetmem_internal.h"
#include "fs.h"

#define BM_MAGIC "ADAMOVE1"
#define BM_HDR 24u

uint64_t budgetmem_table_hash(const struct ada_hook_symtab *st)
{
	/* Chained, as plan_cache_table_hash; the status is left out: it
	 * changes while the agent installs. */
	uint64_t h = st->count;
	for (size_t i = 0; i < st->count; i++) {
		uint64_t v[2] = {st->fns[i].offset, st->fns[i].size};
		h = XXH64(v, sizeof(v), h);
	}
	return h;
}

int budgetmem_path(const char *dir, const struct ada_hook_symtab *st, char *out, size_t cap)
{
	char hex[2 * ADA_HOOK_BUILD_ID_MAX + 1];
	if (!dir || dir[0] != '/' || st->build_id_len == 0 ||
	    st->build_id_len > ADA_HOOK_BUILD_ID_MAX)
		return -ENOENT; /* no identity, or no place: not remembered */
	for (size_t i = 0; i < st->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", st->build_id[i]);
	int n = snprintf(out, cap, "%s/%s.moved", dir, hex);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int budgetmem_encode(const struct ada_hook_symtab *st, const uint32_t *idx, uint32_t n,
                     uint8_t **out, size_t *len)
{
	if (n > BUDGETMEM_MAX || st->count > UINT32_MAX)
		return -EINVAL;
	size_t sz = BM_HDR + 4u * n + 8u;
	uint8_t *b = malloc(sz);
	if (!b)
		return -ENOMEM;
	uint64_t th = budgetmem_table_hash(st);
	uint32_t cnt = (uint32_t)st->count;
	memcpy(b, BM_MAGIC, 8);
	memcpy(b + 8, &th, 8);
	memcpy(b + 16, &cnt, 4);
	memcpy(b + 20, &n, 4);
	memcpy(b + BM_HDR, idx, 4u * n);
	uint64_t sum = XXH64(b, sz - 8, 0);
	memcpy(b + sz - 8, &sum, 8);
	*out = b;
	*len = sz;
	return 0;
}

int budgetmem_parse(const uint8_t *buf, size_t len, const struct ada_hook_symtab *st, uint8_t *mark)
{
	uint64_t th, sum;
	uint32_t cnt, n;
	if (len < BM_HDR + 8u || memcmp(buf, BM_MAGIC, 8))
		return -EBADMSG;
	memcpy(&th, buf + 8, 8);
	memcpy(&cnt, buf + 16, 4);
	memcpy(&n, buf + 20, 4);
	if (n > BUDGETMEM_MAX || len != BM_HDR + 4u * (size_t)n + 8u)
		return -EBADMSG;
	memcpy(&sum, buf + len - 8, 8);
	if (sum != XXH64(buf, len - 8, 0))
		return -EBADMSG;
	/* Whole and sound: written for another table (the image's symbols
	 * read differently), which the caller counts apart from damage. */
	if (cnt != st->count || th != budgetmem_table_hash(st))
		return -ESTALE;
	for (uint32_t k = 0; k < n; k++) { /* all checked before any is marked */
		uint32_t i;
		memcpy(&i, buf + BM_HDR + 4u * k, 4);
		if (i >= cnt)
			return -EBADMSG;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i;
		memcpy(&i, buf + BM_HDR + 4u * k, 4);
		mark[i] = 1;
	}
	return (int)n;
}

int budgetmem_load(const char *path, const struct ada_hook_symtab *st, uint8_t *mark)
{
	enum { MAX = BM_HDR + 4u * BUDGETMEM_MAX + 8u };
	void *buf = NULL;
	size_t got = 0;
	/* Trusts only directories and links of root's and ours (fs.h), as
	 * the plan cache: a file another user could write is never read. On
	 * the heap: 16 KiB at most, on a stack ada attach does not choose. */
	int err = ada_fs_read_private(path, BM_HDR + 8u, MAX, NULL, &buf, &got);
	if (!err)
		err = budgetmem_parse(buf, got, st, mark);
	free(buf);
	return err;
}

int budgetmem_store(const char *path, const struct ada_hook_symtab *st, const uint32_t *idx,
                    uint32_t n)
{
	uint8_t *b = NULL;
	size_t len = 0;
	const char *base;
	int dfd = -1, err = budgetmem_encode(st, idx, n, &b, &len);
	if (!err)
		err = ada_fs_walk_parent(path, ADA_FS_WALK_CREATE, &dfd, &base);
	if (!err) /* a reader sees the old file or the whole new one */
		err = ada_fs_replace(dfd, base, b, len, false);
	if (dfd >= 0)
		close(dfd);
	free(b);
	return err;
}
