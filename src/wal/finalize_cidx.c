/*
 * Finalizing a compact index file (ATC1, cidx.h) from what is on disk:
 * the ada_wal_disk_* steps of finalize.c for a file whose header says
 * "ATC1" (`ada recover`, and the drain when a write failed).
 *
 * Threads: single-threaded, as finalize.c.
 *
 * An unfinished compact file is [header placeholder][sealed blocks][zeros
 * or a torn block...]. The scan resumes an encoder after its whole
 * CRC-valid blocks (ada_cidx_enc_resume: the model is the state after the
 * last one); appended events are coded into memory and written at the end
 * of those blocks; finish seals, writes the tail (link table, block table,
 * footer) and the header, and cuts the file. A finished file is left as
 * it is unless events or links are added; then its links are taken over
 * and the tail written again after its blocks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atf.h"
#include "cidx.h"
#include "wal_internal.h"

struct wal_cidx_disk {
	struct ada_cidx_enc *enc;
	struct ada_cidx_file_header h;
	uint64_t end;          /* where the coded bytes of o go */
	struct ada_cidx_out o; /* appended events, coded, not written yet */
	bool linked;           /* links added after the scan */
	bool relink;           /* the caller gives every link (drop the file's) */
	bool has_detail;       /* the final header says has_detail_file */
	/* A finished file's decoder: its links go into the new tail unless
	 * relink (at finish, the image unmapped: it reads the link table it
	 * copied at open). */
	struct ada_cidx_dec *final_links;
};

/* The finished file's links, taken over by the resumed encoder. */
static int wal_cidx_disk_keep_links(struct wal_cidx_disk *c, const struct ada_cidx_dec *d)
{
	uint64_t n = ada_cidx_dec_count(d), left = ada_cidx_dec_nlinks(d);
	for (uint64_t i = 0; i < n && left; i++) {
		uint32_t v = ada_cidx_dec_link(d, i);
		if (v == ATF_NO_DETAIL)
			continue;
		left--;
		int r = ada_cidx_enc_link(c->enc, i, v);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Count and time range of the image's whole blocks; final when the file
 * is finished and consistent. */
static int wal_cidx_disk_read(struct ada_wal_disk_file *df, const void *img, size_t len)
{
	struct wal_cidx_disk *c = df->cx;
	struct ada_cidx_dec *d = NULL;
	df->final = ada_cidx_dec_open(img, len, 0, &d) == 0;
	if (!df->final && ada_cidx_dec_open(img, len, ADA_ATF_OPEN_SALVAGE, &d) < 0)
		d = NULL;
	uint64_t n = d ? ada_cidx_dec_count(d) : 0;
	int r = 0;
	if (n) {
		size_t ns = ada_cidx_dec_scratch_events(d);
		struct atf_index_event *scr = calloc(ns ? ns : 1, sizeof(*scr)), ev;
		uint64_t first_seq, ts0;
		uint32_t nev;
		ada_cidx_dec_block_info(d, 0, &first_seq, &nev, &ts0);
		r = scr ? ada_cidx_dec_get(d, n - 1, scr, &ev) : -ENOMEM;
		df->s = (struct ada_wal_scan){n, ts0, r == 0 ? ev.timestamp_ns : ts0, 0};
		free(scr);
	}
	if (df->final) {
		struct ada_cidx_footer ft;
		memcpy(&ft, (const uint8_t *)img + len - sizeof(ft), sizeof(ft));
		df->s.crc = ft.crc;
	}
	if (r == 0)
		r = ada_cidx_enc_resume(c->enc, img, len, &c->end);
	if (r == 0 && df->final)
		c->final_links = d;
	else
		ada_cidx_dec_free(d);
	return r;
}

int wal_cidx_disk_scan(struct ada_wal_disk_file *df)
{
	struct wal_cidx_disk *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	df->cx = c;
	if (pread(df->fd, &c->h, sizeof(c->h), 0) != (ssize_t)sizeof(c->h))
		return -EPROTO;
	int r = ada_cidx_enc_new(c->h.block_size, &c->enc);
	if (r < 0)
		return r == -EINVAL ? -EPROTO : r;
	void *img = mmap(NULL, df->size, PROT_READ, MAP_PRIVATE, df->fd, 0);
	if (img == MAP_FAILED)
		return -errno;
	r = wal_cidx_disk_read(df, img, df->size);
	munmap(img, df->size);
	return r == -EBADMSG ? -EPROTO : r;
}

void wal_cidx_disk_free(struct ada_wal_disk_file *df)
{
	if (!df->cx)
		return;
	ada_cidx_enc_free(df->cx->enc);
	ada_cidx_dec_free(df->cx->final_links);
	free(df->cx->o.p);
	free(df->cx);
	df->cx = NULL;
}

static int wal_cidx_disk_grow(struct ada_cidx_out *o)
{
	size_t cap = o->cap ? o->cap * 2 : 1u << 20;
	uint8_t *p = realloc(o->p, cap);
	if (!p)
		return -ENOMEM;
	o->p = p;
	o->cap = cap;
	return 0;
}

int wal_cidx_disk_append(struct ada_wal_disk_file *df, const struct atf_index_event *ev, size_t n)
{
	struct wal_cidx_disk *c = df->cx;
	uint64_t last = df->s.t1;
	for (size_t i = 0; i < n; i++) {
		struct atf_index_event e = ev[i];
		if (e.timestamp_ns < last) /* as finalize.c's: time never goes back */
			e.timestamp_ns = last;
		int err = 0;
		while (ada_cidx_enc_put(c->enc, &e, 1, &c->o, &err) == 0) {
			int r = err ? err : wal_cidx_disk_grow(&c->o);
			if (r < 0)
				return r;
		}
		if (df->s.events++ == 0)
			df->s.t0 = e.timestamp_ns;
		last = df->s.t1 = e.timestamp_ns;
	}
	return 0;
}

void wal_cidx_disk_relink(struct ada_wal_disk_file *df)
{
	df->cx->relink = df->cx->linked = df->cx->has_detail = true;
}

int wal_cidx_disk_link(struct ada_wal_disk_file *df, uint64_t index_seq, uint32_t detail_seq)
{
	int r = ada_cidx_enc_link(df->cx->enc, index_seq, detail_seq);
	if (r == 0)
		df->cx->linked = true;
	return r;
}

int wal_cidx_disk_finish(struct ada_wal_disk_file *df, bool appended,
                         struct ada_wal_file_summary *sum)
{
	struct wal_cidx_disk *c = df->cx;
	struct ada_wal_file_summary v = {.events = df->s.events,
	                                 .time_start_ns = df->s.t0,
	                                 .time_end_ns = df->s.t1,
	                                 .encoding = ADA_INDEX_COMPACT};
	int r = 0;
	if (df->final && !appended && !c->linked) {
		v.crc = df->s.crc;
		v.bytes = df->size;
		goto out;
	}
	struct ada_atf_file_info info = {c->h.thread_id, c->h.arch, c->h.os, c->h.clock_type,
	                                 c->has_detail ||
	                                     (c->h.flags & ATF_INDEX_FLAG_HAS_DETAIL) != 0};
	if (c->final_links && !c->relink)
		r = wal_cidx_disk_keep_links(c, c->final_links);
	ada_cidx_enc_seal(c->enc, &c->o);
	if (r == 0 && c->o.len)
		r = wal_pwrite_all(df->fd, c->o.p, c->o.len, c->end);
	uint64_t off = ada_cidx_enc_offset(c->enc);
	size_t cap = ada_cidx_enc_tail_size(c->enc), len = 0;
	uint8_t *tail = malloc(cap);
	struct ada_cidx_file_header h;
	if (r == 0)
		r = tail ? ada_cidx_enc_finish(c->enc, &info, tail, cap, &len, &h) : -ENOMEM;
	if (r == 0)
		r = wal_pwrite_all(df->fd, tail, len, off);
	if (r == 0)
		r = wal_pwrite_all(df->fd, &h, sizeof(h), 0);
	if (r == 0 && ftruncate(df->fd, (off_t)(off + len)) < 0)
		r = -errno;
	if (r == 0) {
		struct ada_cidx_footer ft;
		memcpy(&ft, tail + len - sizeof(ft), sizeof(ft));
		v.crc = ft.crc;
		v.bytes = off + len;
	}
	free(tail);
out:
	if (sum)
		*sum = v;
	wal_cidx_disk_free(df);
	return r;
}
