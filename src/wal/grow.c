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

/* The step of a file below WAL_FIRST_SEGMENT: one block (4 KiB), on
 * every file system. What finalize's ftruncate cuts off is the tail
 * allocated and never written, and on ext4 freeing blocks is a journalled
 * update and, with the `discard` mount option, a discard of them, where a
 * cut inside the last block frees nothing: with a 64 KiB first step that
 * cut was most of what a short thread's file cost the drain (issue 32;
 * docs/benchmarks.md, "A short thread's file on ext4"). On tmpfs a step
 * is pages cleared at once and freed again by that ftruncate. From 64 KiB
 * to 1 MiB a tmpfs file's steps double (64 KiB ... 1 MiB), a disk file's
 * take the rest at once. */
static uint64_t wal_small_step(const struct ada_wal_file *f)
{
	if (f->alloc < WAL_FIRST_SEGMENT)
		return WAL_BLOCK;
	return f->alloc < WAL_SECOND_END - f->alloc ? f->alloc : WAL_SECOND_END - f->alloc;
}

/* The next segment's size: 4 KiB blocks up to 64 KiB, then up to 1 MiB,
 * then doubling up to --segment-mb: the many short-lived threads of a
 * program do not each reserve 64 MiB, nor 10 000 threads alive at once
 * 1 MiB each; a file past 1 MiB grows as it always did. */
static uint64_t wal_next_step(const struct ada_wal_file *f)
{
	uint64_t step = f->alloc < WAL_FIRST_SEGMENT || (f->tmpfs && f->alloc < WAL_SECOND_END)
	                    ? wal_small_step(f)
	                : f->alloc < WAL_SECOND_END ? WAL_SECOND_END - f->alloc
	                                            : f->alloc;
	uint64_t most = f->opts.segment_bytes;
	if (f->tmpfs && most > WAL_TMPFS_STEP)
		most = WAL_TMPFS_STEP; /* tmpfs: wal_internal.h */
	return step > most ? most : step;
}

/* The step that takes the allocation past what the events need
 * (shortfall more than it has), beyond wal_next_step(): to a whole block
 * while that stays below WAL_FIRST_SEGMENT (see wal_small_step), to a
 * whole WAL_MIN_SEGMENT from there. */
static uint64_t wal_round_step(const struct ada_wal_file *f, uint64_t shortfall)
{
	uint64_t to = f->alloc + shortfall;
	uint64_t g = to <= WAL_FIRST_SEGMENT ? WAL_BLOCK : WAL_MIN_SEGMENT;
	return (to + g - 1) / g * g - f->alloc;
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

/* Counts a step allocated outside wal_grow_ahead(). The steps that
 * start below WAL_FIRST_SEGMENT are one segment with the first, as the
 * single 64 KiB step they replace was: the rotate flush policy and
 * --safe act once a segment (wal_on_rotate), and a short file would
 * otherwise sync up to 16 times. */
static void wal_grown(struct ada_wal_file *f, uint64_t step)
{
	if (f->alloc == 0 || f->alloc >= WAL_FIRST_SEGMENT)
		f->segments++;
	f->alloc += step;
	f->io->alloc_open += step;
	wal_room_take(f->io, step);
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
			step = wal_round_step(f, shortfall);
		if (fallocate(f->fd, 0, (off_t)f->alloc, (off_t)step) == 0) {
			wal_grown(f, step);
			continue;
		}
		int err = -errno;
		if (err != -ENOSPC)
			return err;
		/* Nearly full: take what fits, in ever smaller steps (whole
		 * blocks below WAL_FIRST_SEGMENT, whole segments past it). */
		uint64_t g = f->alloc < WAL_FIRST_SEGMENT ? WAL_BLOCK : WAL_MIN_SEGMENT;
		for (step = step / 2 / g * g; step >= g; step = step / 2 / g * g)
			if (fallocate(f->fd, 0, (off_t)f->alloc, (off_t)step) == 0)
				break;
		if (step < g)
			return err;
		wal_grown(f, step);
	}
	return 0;
}

int wal_grow_tail(struct ada_wal_file *f, uint64_t need)
{
	if (f->alloc < need + ATF_FOOTER_SIZE)
		wal_grow_wait(f);
	if (f->alloc >= need + ATF_FOOTER_SIZE)
		return 0;
	uint64_t step = wal_round_step(f, need + ATF_FOOTER_SIZE - f->alloc);
	if (fallocate(f->fd, 0, (off_t)f->alloc, (off_t)step) < 0)
		return -errno;
	wal_grown(f, step);
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
