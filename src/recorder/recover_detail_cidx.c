/*
 * ada recover, the detail lane against a compact index (ATC1): the
 * pieces recover_detail.c needs where its index file is compact.
 *
 * Threads: the single thread of `ada recover`.
 *
 * A compact file keeps its links (detail_seq) in a table written at
 * finish, not in its events: a recorder killed before the finish left
 * none on disk. The detail file is the link log (each record names its
 * index_seq), so the pass gives every kept record's link again: the
 * file, finished already by recover.c, is opened through the wal's disk
 * steps (ada_wal_disk_scan), its old links dropped (ada_wal_disk_relink),
 * the kept ones added, and its tail written again at close. Events are
 * read from a read-only mapping, one decoded block at a time (the records
 * come in index order, so each block is decoded once).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cidx.h"
#include "detail_internal.h"
#include "fs.h"
#include "recorder_internal.h"

struct rd_cidx {
	struct ada_wal_disk_file df;
	void *map;
	size_t len;
	struct ada_cidx_dec *dec;
	struct atf_index_event *blk; /* block blk_no's events */
	size_t blk_no;
};

bool rd_index_is_compact(const char *path)
{
	uint8_t m[4];
	int fd = -1;
	if (ada_fs_open_file(AT_FDCWD, path, O_RDONLY, &fd) < 0)
		return false;
	bool c = pread(fd, m, sizeof(m), 0) == (ssize_t)sizeof(m) && ada_cidx_is_compact(m, 4);
	close(fd);
	return c;
}

static void rd_cidx_unmap(struct rd_cidx *c)
{
	ada_cidx_dec_free(c->dec);
	c->dec = NULL;
	free(c->blk);
	c->blk = NULL;
	if (c->map && c->map != MAP_FAILED)
		munmap(c->map, c->len);
	c->map = NULL;
}

int rd_cidx_open(int fd, struct rd_cidx **out, uint64_t *n)
{
	struct rd_cidx *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int r = ada_wal_disk_scan(fd, &c->df);
	if (r == 0 && !c->df.final)
		r = -EPROTO; /* recover.c finishes the index first */
	if (r == 0) {
		c->len = (size_t)c->df.size;
		c->map = mmap(NULL, c->len, PROT_READ, MAP_PRIVATE, fd, 0);
		r = c->map == MAP_FAILED ? -errno : ada_cidx_dec_open(c->map, c->len, 0, &c->dec);
	}
	if (r == 0) {
		size_t ns = ada_cidx_dec_scratch_events(c->dec);
		c->blk = calloc(ns ? ns : 1, sizeof(*c->blk));
		r = c->blk ? 0 : -ENOMEM;
	}
	if (r < 0) {
		rd_cidx_unmap(c);
		if (c->df.cx) /* scanned: finish frees what it took, writes nothing */
			(void)ada_wal_disk_finish(&c->df, false, NULL);
		free(c);
		return r == -EBADMSG ? -EPROTO : r;
	}
	c->blk_no = SIZE_MAX;
	*n = ada_cidx_dec_count(c->dec);
	ada_wal_disk_relink(&c->df);
	*out = c;
	return 0;
}

int rd_cidx_event(struct rd_cidx *c, uint64_t i, struct atf_index_event *ev)
{
	size_t b = ada_cidx_dec_block_of(c->dec, i);
	if (b >= ada_cidx_dec_nblocks(c->dec))
		return -ERANGE;
	if (b != c->blk_no) {
		c->blk_no = SIZE_MAX;
		int r = ada_cidx_dec_block(c->dec, b, c->blk);
		if (r < 0)
			return r;
		c->blk_no = b;
	}
	uint64_t first;
	uint32_t nev;
	uint64_t ts;
	ada_cidx_dec_block_info(c->dec, b, &first, &nev, &ts);
	*ev = c->blk[i - first];
	return 0;
}

int rd_cidx_link(struct rd_cidx *c, uint64_t i, uint32_t v)
{
	return ada_wal_disk_link(&c->df, i, v);
}

int rd_cidx_close(struct rd_cidx *c)
{
	rd_cidx_unmap(c); /* before the file is written again and cut */
	int r = ada_wal_disk_finish(&c->df, false, NULL);
	free(c);
	return r;
}

void rd_cidx_note_sizes(const char *dir, json_t *files)
{
	size_t i;
	json_t *o;
	json_array_foreach(files, i, o)
	{
		const char *enc = json_string_value(json_object_get(o, "encoding"));
		const char *name = json_string_value(json_object_get(o, "file"));
		char p[PATH_MAX];
		struct stat st;
		if (!enc || strcmp(enc, "compact") || !name)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (ada_fs_lstat_path(p, &st) == 0 && S_ISREG(st.st_mode))
			json_object_set_new(o, "bytes", json_integer((json_int_t)st.st_size));
	}
}
