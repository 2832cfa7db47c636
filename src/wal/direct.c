/*
 * Direct writes of the segment writer (docs/internals.md, "Direct
 * writes"): which files are written with O_DIRECT, the descriptor's flag,
 * the fall back to buffered writes, and a buffer's partial last block
 * carried to the next one. segment.c sends the writes.
 *
 * Threads: the drain thread only, like the rest of the segment writer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf.h"
#include "wal_internal.h"

/* The file's one descriptor carries O_DIRECT while its direct writes are
 * issued and not while it is read or written buffered -- only switched
 * when none of its writes is in flight (a write takes the flags when the
 * kernel issues it). One descriptor a file: 10 000 threads alive at once
 * have 10 000 files open. */
int wal_fd_mode(struct ada_wal_file *f, bool direct)
{
	if (f->fd_direct == direct)
		return 0;
	int fl = fcntl(f->fd, F_GETFL);
	if (fl < 0 || fcntl(f->fd, F_SETFL, direct ? fl | O_DIRECT : fl & ~O_DIRECT) < 0)
		return -errno;
	f->fd_direct = direct;
	return 0;
}

/* f falls back to buffered writes (counted, the first reason kept). */
static void wal_direct_note(struct ada_wal_io *io, const char *why)
{
	io->direct_fallbacks++;
	if (!io->direct_reason[0])
		snprintf(io->direct_reason, sizeof(io->direct_reason), "%s", why);
}

/* f's writes go buffered from now on, once its direct writes in flight
 * (but busy of them: the caller's) are done: never both at once. */
void wal_direct_off(struct ada_wal_file *f, const char *why, uint32_t busy)
{
	if (!f->direct)
		return;
	while (f->inflight > busy)
		if (ada_wal_io_reap(f->io, true) < 0)
			break;
	f->direct = false;
	wal_direct_note(f->io, why);
}

/* A buffer of a direct file leaves staging: its partial last block (if
 * any) is copied to the carry, where the next staging buffer starts, and
 * -- with pad -- written zero-padded too. The buffer then answers only for
 * its whole blocks (len); the carry, and the buffer it goes into, for the
 * rest. */
void wal_direct_cut(struct ada_wal_file *f, struct wal_buf *b, bool pad)
{
	uint64_t end = b->off + b->len, aend = end & ~(uint64_t)(WAL_BLOCK - 1);
	if (b->off % WAL_BLOCK) {
		wal_direct_off(f, "a buffer not on a block boundary", 0); /* never: a bug */
		return;
	}
	if (aend == end)
		return;
	if (!f->carry && posix_memalign((void **)&f->carry, WAL_BLOCK, WAL_BLOCK) != 0) {
		f->carry = NULL;
		wal_direct_off(f, "no memory for the carry block", 0);
		return;
	}
	uint32_t tail = (uint32_t)(end - aend);
	memcpy(f->carry, b->data + (aend - b->off), tail);
	f->carry_off = aend;
	f->carry_len = tail;
	f->carry_dirty = false;
	if (!pad) { /* the tail's events are not durable with this write */
		b->wlen = b->len = (uint32_t)(aend - b->off);
		b->ev_end = (aend - ATF_HEADER_SIZE) / ATF_INDEX_EVENT_SIZE;
		return;
	}
	/* Zeros past the last event, as in the preallocated file: recovery
	 * of an unfinished file stops at them. buffer_bytes is whole blocks,
	 * so the padded block fits the buffer. */
	b->wlen = (uint32_t)(aend - b->off) + WAL_BLOCK;
	memset(b->data + b->len, 0, b->wlen - b->len);
	b->len = (uint32_t)(aend - b->off);
	b->pad = true;
}

/* Turns O_DIRECT on for f's events' writes, where it is worth it and the
 * file system takes it; off again (wal_fd_mode) for the buffered accesses
 * (header, patches, reads, footer), which come only when none of the
 * file's direct writes is in flight. */
void wal_direct_open(struct ada_wal_file *f)
{
	struct ada_wal_io *io = f->io;
	if (io->buffer_bytes % WAL_BLOCK) {
		wal_direct_note(io, "staging buffers not whole 4 KiB blocks");
		return;
	}
	/* tmpfs takes O_DIRECT (Linux 6.6+) but copies all the same: its page
	 * cache is the file. */
	if (f->tmpfs) {
		wal_direct_note(io, "tmpfs");
		return;
	}
	/* A compact file writes about a byte an event: its page-cache copy is
	 * a 32nd of ATF v2's, and a buffered write completes once copied, so
	 * its ring space comes back without waiting for the device (the
	 * program waits less and runs faster: docs/benchmarks.md, "Writes to
	 * tmpfs in the drain thread"). */
	if (f->cx && !io->direct_compact) {
		wal_direct_note(io, "compact index (buffered)");
		return;
	}
	if (wal_fd_mode(f, true) < 0) {
		char why[64];
		snprintf(why, sizeof(why), "O_DIRECT refused: %s", strerror(errno));
		wal_direct_note(io, why);
		return;
	}
	/* No read-ahead for the buffered reads (events read back, the
	 * patches' read-modify-write): only the pages asked for. */
	(void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
	f->direct = f->direct_used = true;
	io->direct_files++;
}
