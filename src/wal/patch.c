/*
 * detail_seq patches of an index file's events, and reads of its
 * committed events (wal.h; wal_internal.h has the protocol): each 4-byte
 * change goes where the event's bytes are now (staging, held, carry, a
 * write in flight, the disk window, the file) and its CRC change is
 * batched (wal_crcbat_*) and folded before anything reads the file's CRC.
 *
 * Threads: the drain thread only, like the rest of the segment writer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "wal_internal.h"

static bool wal_in(uint64_t off, uint32_t len, uint64_t at, uint32_t n)
{
	return off >= at && off + len <= at + n;
}

/* Where the len bytes at file offset off are in memory: the staging
 * buffer, the carry or a held buffer (not yet written: *sent NULL), or a
 * buffer handed to the kernel (*sent, in flight or complete); NULL when
 * only the file has them. The ranges do not overlap: a buffer that left
 * staging answers for its whole blocks only (wal_direct_cut). */
static uint8_t *wal_locate(struct ada_wal_file *f, uint64_t off, uint32_t len,
                           struct wal_buf **sent)
{
	*sent = NULL;
	struct wal_buf *c = f->cur;
	if (c && wal_in(off, len, c->off, c->len))
		return c->data + (off - c->off);
	if (f->carry_len && wal_in(off, len, f->carry_off, f->carry_len))
		return f->carry + (off - f->carry_off);
	for (struct wal_buf *b = f->held_head; b; b = b->next)
		if (wal_in(off, len, b->off, b->len))
			return b->data + (off - b->off);
	for (struct wal_buf *b = f->fifo_head; b; b = b->fifo_next)
		if (wal_in(off, len, b->off, b->len)) {
			*sent = b;
			return b->data + (off - b->off);
		}
	return NULL;
}

/* The part of [off, off + len) that [at, at + n) of src holds, copied
 * into dst (dst[0] is off). */
static void wal_overlay(const uint8_t *src, uint64_t at, uint32_t n, uint8_t *dst, uint64_t off,
                        uint32_t len)
{
	uint64_t lo = at > off ? at : off, hi = at + n < off + len ? at + n : off + len;
	if (src && lo < hi)
		memcpy(dst + (lo - off), src + (lo - at), (size_t)(hi - lo));
}

int wal_file_read_span(struct ada_wal_file *f, uint64_t off, uint32_t len, uint8_t *dst)
{
	struct wal_buf *b;
	if (off + len > f->bad_from)
		return -EIO;
	const uint8_t *p = wal_locate(f, off, len, &b);
	if (p) {
		memcpy(dst, p, len);
		return 0;
	}
	/* Across buffers (a direct file's carry): the file, its writes in
	 * flight waited for, then every byte memory holds on top (what is
	 * not written yet reads short). */
	wal_file_quiesce(f);
	memset(dst, 0, len);
	for (uint32_t got = 0; got < len;) {
		ssize_t n = pread(f->fd, dst + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (uint32_t)n;
	}
	if (f->cur)
		wal_overlay(f->cur->data, f->cur->off, f->cur->len, dst, off, len);
	wal_overlay(f->carry, f->carry_off, f->carry_len, dst, off, len);
	for (b = f->held_head; b; b = b->next)
		wal_overlay(b->data, b->off, b->len, dst, off, len);
	for (b = f->fifo_head; b; b = b->fifo_next)
		wal_overlay(b->data, b->off, b->len, dst, off, len);
	return 0;
}

/* Sets the 4 bytes at file offset off to v: in memory when they are not
 * written yet (the write carries them), queued behind their write in
 * flight, else pwrite -- never a buffered write of a block with a direct
 * write in flight or still to come. */
static int wal_patch4(struct ada_wal_file *f, uint64_t off, uint32_t v, enum wal_patch_way *way)
{
	struct wal_buf *b;
	uint8_t *p = wal_locate(f, off, 4, &b), *w;
	if (p && !b) { /* staging, carry or held: the write will carry it */
		memcpy(p, &v, 4);
		if (f->carry && p >= f->carry && p < f->carry + WAL_BLOCK)
			f->carry_dirty = true; /* its padded write is formed already */
		*way = WAL_PATCH_MEM;
	} else if (!p && off >= ATF_HEADER_SIZE &&
	           (w = wal_dwin_event(f, off - WAL_DSEQ_OFF)) != NULL) {
		/* durable: in the disk window, written back later (dwin.c) */
		memcpy(w + WAL_DSEQ_OFF, &v, 4);
		wal_dwin_mark(f->io, off - WAL_DSEQ_OFF);
		*way = WAL_PATCH_WINDOW;
	} else if ((p && !b->complete) || (f->direct_used && f->inflight > 0)) {
		/* behind its write in flight, or (written) behind the file's
		 * direct writes in flight: wal_patches_apply */
		if (f->npatch == f->cappatch) {
			size_t nc = f->cappatch ? f->cappatch * 2 : 64;
			struct wal_patch *np = realloc(f->patches, nc * sizeof(*np));
			if (!np)
				return -ENOMEM;
			f->patches = np;
			f->cappatch = nc;
		}
		bool written = !p || b->complete;
		f->patches[f->npatch++] = (struct wal_patch){off, v, written};
		if (written && p)
			memcpy(p, &v, 4); /* still listed: read there */
		*way = written ? WAL_PATCH_DISK : WAL_PATCH_QUEUED;
	} else {
		int r = wal_fd_mode(f, false);
		if (r == 0)
			r = wal_pwrite_all(f->fd, &v, 4, off);
		if (r < 0)
			return r;
		if (p) /* written, still listed (one before it is in flight): read there */
			memcpy(p, &v, 4);
		*way = WAL_PATCH_DISK;
	}
	return 0;
}

int wal_file_event_read(struct ada_wal_file *f, uint64_t i, struct atf_index_event *out)
{
	if (i >= f->events)
		return -ENOENT;
	if (f->cx)
		return wal_cidx_event_read(f, i, out);
	uint64_t off = ATF_HEADER_SIZE + i * ATF_INDEX_EVENT_SIZE;
	if (off >= f->bad_from)
		return -EIO;
	struct wal_buf *b;
	const uint8_t *p = wal_locate(f, off, sizeof(*out), &b);
	if (p) { /* an event lies wholly inside one buffer (buffers hold whole events) */
		memcpy(out, p, sizeof(*out));
		return 0;
	}
	const uint8_t *w = wal_dwin_event(f, off);
	if (w) { /* durable: the window holds it as the file does, links included */
		memcpy(out, w, sizeof(*out));
		return 0;
	}
	wal_file_quiesce(f); /* and its ready patches written */
	ssize_t n = pread(f->fd, out, sizeof(*out), (off_t)off);
	return n == (ssize_t)sizeof(*out) ? 0 : (n < 0 ? -errno : -EIO);
}

uint32_t ada_wal_crc32(uint32_t crc, const void *p, size_t n)
{
	return wal_crc32(crc, p, n);
}

const char *ada_wal_crc32_impl(void)
{
	return WAL_CRC32_IMPL;
}

uint32_t wal_crc32_patch_delta(uint32_t d, uint64_t k, uint64_t len)
{
	static const uint8_t zero[4];
	uint8_t db[4];
	memcpy(db, &d, 4);
	/* The linear part of crc32 over d alone, then carried over the
	 * len - k - 4 bytes that follow it (leading bytes add nothing). */
	uint32_t lin = (uint32_t)crc32(0, db, 4) ^ (uint32_t)crc32(0, zero, 4);
	return (uint32_t)crc32_combine(lin, 0, (z_off_t)(len - k - 4));
}

uint64_t ada_wal_file_link_room(const struct ada_wal_file *f)
{
	return f->cx ? wal_cidx_link_room(f) : 0;
}

int wal_file_patch_detail_seq(struct ada_wal_file *f, uint64_t i, uint32_t v)
{
	if (i >= f->events)
		return -ENOENT;
	if (f->cx) /* the encoder's link table (memory until finish) */
		return wal_cidx_link(f, i, v);
	uint64_t off = ATF_HEADER_SIZE + i * ATF_INDEX_EVENT_SIZE +
	               offsetof(struct atf_index_event, detail_seq);
	if (off >= f->bad_from)
		return -EIO;
	uint32_t d = v ^ ATF_NO_DETAIL;
	enum wal_patch_way way;
	int r = wal_patch4(f, off, v, &way);
	if (r < 0)
		return r;
	f->patch_by[way]++;
	wal_crcbat_add(f, off - ATF_HEADER_SIZE, d);
	return 0;
}

int wal_file_unlink_detail(struct ada_wal_file *f, uint64_t i, uint32_t v)
{
	if (i >= f->events || v == ATF_NO_DETAIL)
		return i >= f->events ? -ENOENT : 0;
	if (f->cx)
		return ada_wal_file_unlink_detail_from(f, v) < 0 ? -ENOMEM : 0;
	uint64_t off = ATF_HEADER_SIZE + i * ATF_INDEX_EVENT_SIZE +
	               offsetof(struct atf_index_event, detail_seq);
	if (off >= f->bad_from)
		return -EIO;
	enum wal_patch_way way;
	int r = wal_patch4(f, off, ATF_NO_DETAIL, &way);
	if (r < 0)
		return r;
	f->patch_by[way]++;
	/* The same XOR difference as the link's: applied twice, none. */
	wal_crcbat_add(f, off - ATF_HEADER_SIZE, v ^ ATF_NO_DETAIL);
	return 0;
}

bool ada_wal_file_is_compact(const struct ada_wal_file *f)
{
	return f->cx != NULL;
}

int64_t ada_wal_file_unlink_detail_from(struct ada_wal_file *f, uint32_t detail_seq)
{
	if (f->cx)
		return (int64_t)wal_cidx_unlink_from(f, detail_seq);
	int64_t n = 0;
	for (uint64_t i = 0; i < f->events; i++) {
		struct atf_index_event ev;
		if (wal_file_event_read(f, i, &ev) < 0)
			break; /* events past a failed write are not in the file */
		if (ev.detail_seq == ATF_NO_DETAIL || ev.detail_seq < detail_seq)
			continue;
		int r = wal_file_unlink_detail(f, i, ev.detail_seq);
		if (r < 0)
			return r;
		n++;
	}
	return n;
}

void wal_crcbat_fold(struct ada_wal_io *io)
{
	struct ada_wal_file *f = io->crcbat_file;
	if (!f)
		return;
	uint8_t *p = io->crcbat + (io->crcbat_lo - io->crcbat_base);
	size_t span = (size_t)(io->crcbat_hi - io->crcbat_lo);
	/* zlib's crc32(c, x) = ~R(~c, x) with R the bare register update,
	 * linear in (state, data): an initial value of ~0 leaves R(0, x), the
	 * linear part of x alone (what wal_crc32_patch_delta builds from
	 * crc(d) ^ crc(zeros)). Then carried over the bytes after the span. */
	uint32_t lin = ~wal_crc32(0xffffffffu, p, span);
	uint64_t after = f->end - ATF_HEADER_SIZE - io->crcbat_hi;
	f->crc ^= after ? (uint32_t)crc32_combine(lin, 0, (z_off_t)after) : lin;
	memset(p, 0, span);
	io->crcbat_file = NULL;
	io->crcbat_n = 0;
}

void wal_crcbat_add(struct ada_wal_file *f, uint64_t k, uint32_t d)
{
	struct ada_wal_io *io = f->io;
	if (!io->crcbat && !(io->crcbat = calloc(1, WAL_CRCBAT_CAP))) {
		/* no scratch: one combine per patch, as exact */
		f->crc ^= wal_crc32_patch_delta(d, k, f->end - ATF_HEADER_SIZE);
		return;
	}
	if (io->crcbat_file == f) {
		uint64_t lo = k < io->crcbat_lo ? k : io->crcbat_lo;
		uint64_t hi = k + 4 > io->crcbat_hi ? k + 4 : io->crcbat_hi;
		if (k < io->crcbat_base || k + 4 > io->crcbat_base + WAL_CRCBAT_CAP ||
		    hi - lo > (uint64_t)(io->crcbat_n + 1) * WAL_CRCBAT_PER)
			wal_crcbat_fold(io);
		else {
			io->crcbat_lo = lo;
			io->crcbat_hi = hi;
		}
	} else {
		wal_crcbat_fold(io);
	}
	if (!io->crcbat_file) {
		/* room both ways: the drain patches in rough event order, not
		 * strictly increasing */
		io->crcbat_file = f;
		io->crcbat_base = k > WAL_CRCBAT_CAP / 2 ? k - WAL_CRCBAT_CAP / 2 : 0;
		io->crcbat_lo = k;
		io->crcbat_hi = k + 4;
	}
	uint8_t *p = io->crcbat + (k - io->crcbat_base);
	uint32_t x;
	memcpy(&x, p, 4);
	x ^= d;
	memcpy(p, &x, 4);
	io->crcbat_n++;
}

void wal_file_set_has_detail(struct ada_wal_file *f)
{
	if (f->has_detail)
		return;
	f->has_detail = true;
	enum wal_patch_way way;
	/* block 0 may be a direct file's staging buffer or carry */
	(void)wal_patch4(f, offsetof(struct atf_index_header, flags), ATF_INDEX_FLAG_HAS_DETAIL,
	                 &way);
}
