/*
 * A file's allocation: segments of growing size (wal_next_step), the next
 * one allocated ahead through io_uring (IORING_OP_FALLOCATE) once part of
 * the current one is used, within what the disk budget has left
 * (ahead_room) and the rotation size (ahead_limit); a synchronous
 * fallocate when the events reach the end first.
 *
 * Threads: the drain thread only, like the rest of the segment writer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wal_internal.h"

/* A tmpfs file's step below 1 MiB: 16 KiB, then doubling, up to 1 MiB
 * exactly. There a step is pages allocated and cleared at once, and the
 * finalize's ftruncate frees what the last one left unwritten: a short
 * process's few KiB of index (a shell's subshell) paid for a whole
 * 64 KiB step twice (issue 32; docs/benchmarks.md). From 1 MiB on the
 * steps are the disk's. */
static uint64_t wal_tmpfs_step(const struct ada_wal_file *f)
{
	if (f->alloc < WAL_TMPFS_FIRST)
		return WAL_TMPFS_FIRST - f->alloc;
	return f->alloc < WAL_SECOND_END - f->alloc ? f->alloc : WAL_SECOND_END - f->alloc;
}

/* The next segment's size: 64 KiB, then up to 1 MiB, then doubling up
 * to --segment-mb: the many short-lived threads of a program do not each
 * reserve 64 MiB, nor 10 000 threads alive at once 1 MiB each; a file
 * past 64 KiB grows as it always did. */
static uint64_t wal_next_step(const struct ada_wal_file *f)
{
	uint64_t step = f->tmpfs && f->alloc < WAL_SECOND_END ? wal_tmpfs_step(f)
	                : f->alloc < WAL_FIRST_SEGMENT        ? WAL_FIRST_SEGMENT
	                : f->alloc < WAL_SECOND_END           ? WAL_SECOND_END - f->alloc
	                                                      : f->alloc;
	uint64_t most = f->opts.segment_bytes;
	if (f->tmpfs && most > WAL_TMPFS_STEP)
		most = WAL_TMPFS_STEP; /* tmpfs: wal_internal.h */
	return step > most ? most : step;
}

/* Under a disk budget, a step takes at most a quarter of what the budget
 * has left (ahead_room), and no less than near_budget_step: the part of a
 * file allocated and not yet written is disk the budget counts, and near
 * the budget a whole segment of it per file made retention delete older
 * generations for room no event used (pipeline_maxdisk: four threads each
 * a segment ahead under UBSan kept no older generation). */
static uint64_t wal_room_step(const struct ada_wal_file *f, uint64_t step)
{
	uint64_t room = f->io->ahead_room;
	if (room == UINT64_MAX || !f->opts.near_budget_step)
		return step;
	uint64_t fit = room / 4 > f->opts.near_budget_step ? room / 4 : f->opts.near_budget_step;
	return step < fit ? step : fit;
}

/* Takes bytes allocated outside wal_grow_ahead() off what the budget has
 * left for the next steps. */
static void wal_room_take(struct ada_wal_io *io, uint64_t bytes)
{
	if (io->ahead_room != UINT64_MAX)
		io->ahead_room = io->ahead_room > bytes ? io->ahead_room - bytes : 0;
}

/* Waits for f's allocation ahead, if one is in flight. */
static void wal_grow_wait(struct ada_wal_file *f)
{
	while (f->grow_inflight)
		if (ada_wal_io_reap(f->io, true) < 0)
			break;
}

/* Grows the allocation so that need bytes (plus the footer) fit; tries a
 * whole segment (a smaller one near the disk budget, but at least what the
 * events need), then smaller steps when the disk is nearly full. Here
 * the drain itself waits: for the allocation ahead if one is in flight
 * (usually done long before), else for fallocate, which on ext4 waits
 * for every direct write in flight on the file. */
int wal_grow(struct ada_wal_file *f, uint64_t need)
{
	if (f->alloc < need + ATF_FOOTER_SIZE)
		wal_grow_wait(f);
	while (f->alloc < need + ATF_FOOTER_SIZE) {
		uint64_t step = wal_room_step(f, wal_next_step(f));
		uint64_t shortfall = need + ATF_FOOTER_SIZE - f->alloc;
		if (step < shortfall)
			step =
			    (shortfall + WAL_MIN_SEGMENT - 1) / WAL_MIN_SEGMENT * WAL_MIN_SEGMENT;
		if (fallocate(f->fd, 0, (off_t)f->alloc, (off_t)step) == 0) {
			f->alloc += step;
			f->io->alloc_open += step;
			wal_room_take(f->io, step);
			f->segments++;
			continue;
		}
		int err = -errno;
		if (err != -ENOSPC)
			return err;
		/* Nearly full: take what fits, in ever smaller steps. */
		for (step /= 2; step >= WAL_MIN_SEGMENT; step /= 2)
			if (fallocate(f->fd, 0, (off_t)f->alloc, (off_t)step) == 0)
				break;
		if (step < WAL_MIN_SEGMENT)
			return err;
		f->alloc += step;
		f->io->alloc_open += step;
		wal_room_take(f->io, step);
		f->segments++;
	}
	return 0;
}

int wal_grow_tail(struct ada_wal_file *f, uint64_t need)
{
	if (f->alloc < need + ATF_FOOTER_SIZE)
		wal_grow_wait(f);
	if (f->alloc >= need + ATF_FOOTER_SIZE)
		return 0;
	uint64_t shortfall = need + ATF_FOOTER_SIZE - f->alloc;
	uint64_t step = (shortfall + WAL_MIN_SEGMENT - 1) / WAL_MIN_SEGMENT * WAL_MIN_SEGMENT;
	if (fallocate(f->fd, 0, (off_t)f->alloc, (off_t)step) < 0)
		return -errno;
	f->alloc += step;
	f->io->alloc_open += step;
	wal_room_take(f->io, step);
	f->segments++;
	return 0;
}

/* Asks io_uring for the next segment while a quarter of this one is
 * still free (files past their first 1 MiB, which have segments worth
 * it). Under a disk budget the segment ahead counts against it: never
 * past the rotation size (ahead_limit) nor beyond what the budget has
 * left (ahead_room), so that it never makes the drain retire a
 * generation the events themselves would not have (pipeline_maxdisk,
 * four threads in step under ThreadSanitizer, kept none): a
 * kernel worker waits in fallocate for the file's direct writes in
 * flight, the drain goes on draining. On ext4 fallocate holds the inode
 * lock while it waits, so the writes sent meanwhile wait in their
 * workers too (the disk's queue empties once per segment, as before);
 * the staging pool and the rings absorb that. Found under a tight
 * blkio write throttle: the drain sat in ext4_fallocate/inode_dio_wait for
 * seconds, its heartbeat still, and the program's threads judged the
 * recorder gone (docs/internals.md, "Growing a file ahead"). */
void wal_grow_ahead(struct ada_wal_file *f, uint64_t need)
{
	if (f->grow_inflight || f->ahead_start || f->grow_err || f->full || f->error ||
	    f->alloc < WAL_SECOND_END)
		return; /* one segment ahead at most */
	uint64_t step = wal_room_step(f, wal_next_step(f));
	uint64_t used = need + ATF_FOOTER_SIZE;
	if (used < f->alloc && f->alloc - used > step / 4)
		return;
	if ((f->opts.ahead_limit && f->alloc + step > f->opts.ahead_limit) ||
	    step > f->io->ahead_room)
		return; /* wal_grow() grows it when needed, as before */
	if (f->io->ahead_room != UINT64_MAX)
		f->io->ahead_room -= step;
	struct io_uring_sqe *sqe = wal_sqe(f->io);
	io_uring_prep_fallocate(sqe, f->fd, 0, (off_t)f->alloc, (off_t)step);
	/* file pointers are 8-aligned: tag 2 (sync ops carry 1) */
	io_uring_sqe_set_data(sqe, (void *)((uintptr_t)f | 2u));
	f->grow_off = f->alloc;
	f->grow_len = step;
	f->grow_inflight = true;
	/* Counted from now: the blocks may be the file's before the
	 * completion is reaped, and the budget must not miss them then. */
	f->io->alloc_open += step;
	f->io->inflight++;
	io_uring_submit(&f->io->ring);
}

/* A new segment began: the rotate flush policy and --safe act here. */
void wal_on_rotate(struct ada_wal_file *f)
{
	const struct ada_flush_policy *p = &f->opts.flush;
	if (p->safe)
		wal_sync(f, true);
	else if (p->mode == ADA_FLUSH_ROTATE && f->submitted_end > f->flushed_end)
		wal_sync(f, false);
}
