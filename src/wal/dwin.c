/*
 * The disk window: one cached span of an index file's durable events,
 * so that the detail_seq links of a --detail triggered window (whose
 * pre-roll events were written before the trigger fired) cost one pread
 * and one pwrite per WAL_DWIN_BYTES of events instead of one of each per
 * link (wal_internal.h: wal_dwin_event).
 *
 * Threads: the drain thread only (the window belongs to the io, which is
 * the drain's private data).
 *
 * Invariant: while io->dwin_file is f, the bytes [dwin_lo, dwin_hi) of
 * f are the window's, patches included, except that the patches (marked)
 * may not be on the file yet. It holds because the span lies in f's
 * durable prefix at the fill, and nothing else writes there: the writer
 * writes only past it (buffers in flight, staging, held), queued patches
 * only into buffers past it, and wal_file_patch_detail_seq goes to the
 * file directly only for events the window does not hold. So the window
 * stays right after the prefix grows, and a read of it is a read of the
 * file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf.h"
#include "wal_internal.h"

#define DWIN_ALIGN 4096u /* a window starts on a page (also an event boundary) */
#define DWIN_DSEQ offsetof(struct atf_index_event, detail_seq)

/* One past the last byte the window may hold: the end of the events
 * whose writes completed in order (their queued patches applied), and
 * never a byte of a failed write. */
static uint64_t dwin_limit(const struct ada_wal_file *f)
{
	uint64_t lim = ATF_HEADER_SIZE + f->durable * ATF_INDEX_EVENT_SIZE;
	/* A direct file writes its partial last block again (the carry,
	 * segment.c "Direct writes"): whole blocks only. */
	if (f->direct_used)
		lim &= ~(uint64_t)(DWIN_ALIGN - 1);
	return lim < f->bad_from ? lim : f->bad_from;
}

static int dwin_pread_all(int fd, uint8_t *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO; /* short: the prefix is on the file */
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static void dwin_clean(struct ada_wal_io *io)
{
	io->dwin_npatch = 0;
	io->dwin_dlo = io->dwin_dhi = 0;
	memset(io->dwin_marks, 0, sizeof(io->dwin_marks));
}

/* Reads the span around off (a durable event's offset, below lim). */
static int dwin_fill(struct ada_wal_file *f, uint64_t off, uint64_t lim)
{
	struct ada_wal_io *io = f->io;
	if (!io->dwin) {
		void *b = NULL;
		if (posix_memalign(&b, DWIN_ALIGN, WAL_DWIN_BYTES) != 0)
			return -ENOMEM;
		io->dwin = b;
	}
	int r = wal_dwin_release(io->dwin_file); /* another span, maybe another file */
	(void)r; /* a lost link is counted there (patch_failed); this fill does not need it */
	uint64_t lo = off & ~(uint64_t)(DWIN_ALIGN - 1);
	if (lo < ATF_HEADER_SIZE)
		lo = ATF_HEADER_SIZE; /* never the header: wal_file_set_has_detail writes it */
	uint64_t hi = lo + WAL_DWIN_BYTES < lim ? lo + WAL_DWIN_BYTES : lim;
	io->dwin_fills++;
	wal_file_quiesce(f); /* no buffered read beside a direct write in flight */
	r = dwin_pread_all(f->fd, io->dwin, (size_t)(hi - lo), lo);
	if (r < 0)
		return r;
	io->dwin_file = f;
	io->dwin_lo = lo;
	io->dwin_hi = hi;
	dwin_clean(io);
	return 0;
}

uint8_t *wal_dwin_event(struct ada_wal_file *f, uint64_t off)
{
	struct ada_wal_io *io = f->io;
	uint64_t lim = dwin_limit(f);
	if (off + ATF_INDEX_EVENT_SIZE > lim)
		return NULL;
	bool in =
	    io->dwin_file == f && off >= io->dwin_lo && off + ATF_INDEX_EVENT_SIZE <= io->dwin_hi;
	if (!in && dwin_fill(f, off, lim) < 0)
		return NULL;
	return io->dwin + (off - io->dwin_lo);
}

void wal_dwin_mark(struct ada_wal_io *io, uint64_t off)
{
	uint64_t j = (off - io->dwin_lo) / ATF_INDEX_EVENT_SIZE;
	uint64_t bit = 1ull << (j % 64);
	if (io->dwin_marks[j / 64] & bit)
		return; /* patched again: the write-back carries the last value */
	io->dwin_marks[j / 64] |= bit;
	uint64_t lo = off + DWIN_DSEQ, hi = lo + 4;
	if (io->dwin_npatch == 0 || lo < io->dwin_dlo)
		io->dwin_dlo = lo;
	if (io->dwin_npatch == 0 || hi > io->dwin_dhi)
		io->dwin_dhi = hi;
	io->dwin_npatch++;
}

/* The write-back failed: each marked patch once more on its own, as
 * before the window. One that fails again is lost: counted, and its CRC
 * change taken back so that the footer's CRC matches what the file holds
 * -- unless a read of the 4 bytes says the failed span write had put it
 * there after all. Returns the first error of a lost patch, or 0. */
static int dwin_one_by_one(struct ada_wal_file *f)
{
	struct ada_wal_io *io = f->io;
	int first = 0;
	for (uint32_t w = 0; w < WAL_DWIN_MARK_WORDS; w++)
		for (uint64_t m = io->dwin_marks[w]; m; m &= m - 1) {
			uint64_t j = w * 64u + (uint64_t)__builtin_ctzll(m);
			uint64_t off = io->dwin_lo + j * ATF_INDEX_EVENT_SIZE + DWIN_DSEQ;
			uint32_t v, got;
			memcpy(&v, io->dwin + (off - io->dwin_lo), 4);
			int r = wal_pwrite_all(f->fd, &v, 4, off);
			if (r == 0 ||
			    (dwin_pread_all(f->fd, (uint8_t *)&got, 4, off) == 0 && got == v))
				continue;
			wal_link_failed(f);
			wal_crcbat_add(f, off - ATF_HEADER_SIZE, v ^ ATF_NO_DETAIL);
			if (!first)
				first = r;
		}
	return first;
}

int wal_dwin_flush(struct ada_wal_file *f)
{
	struct ada_wal_io *io = f ? f->io : NULL;
	if (!io || io->dwin_file != f || io->dwin_npatch == 0)
		return 0;
	io->dwin_writebacks++;
	wal_file_quiesce(f); /* no buffered write beside a direct write in flight */
	int r = wal_pwrite_all(f->fd, io->dwin + (io->dwin_dlo - io->dwin_lo),
	                       (size_t)(io->dwin_dhi - io->dwin_dlo), io->dwin_dlo);
	if (r < 0) {
		r = dwin_one_by_one(f);
		io->dwin_file = NULL; /* what the file holds there is no longer known */
	}
	dwin_clean(io);
	return r;
}

int wal_dwin_release(struct ada_wal_file *f)
{
	if (!f || f->io->dwin_file != f)
		return 0;
	int r = wal_dwin_flush(f);
	f->io->dwin_file = NULL;
	return r;
}
