/*
 * The segment writer: thread_K/index.atf files appended through one
 * io_uring, in preallocated segments.
 *
 * Threads: the drain thread only (ada_wal_io and every ada_wal_file are
 * its private data).
 *
 * Layout of a file while it is written:
 *   [header placeholder: magic, identity, footer_offset 0][events ...]
 *   [zeros up to the allocation (fallocate, one segment at a time)]
 * and after finalize: [final header][events][footer], tail cut off.
 *
 * Staging: the drain reserves room in the file's current staging buffer,
 * converts events straight into it and commits them; the CRC-32 (zlib) is
 * extended over the committed bytes while they are still in cache. A full
 * buffer, or one staged longer than stage_ms, is submitted as one write at
 * its file offset -- or, while the file is held (wal_file_hold), kept back
 * on its held list, in order, until the hold ends. Buffers return to the pool when their completion
 * is reaped; the time from the buffer's first event to the completion is the encode-to-disk
 * latency. Invariants: file offsets are handed out in commit order, so the bytes [64, end) are
 * exactly the committed events; the allocation always keeps ATF_FOOTER_SIZE bytes free behind the
 * last event so the footer can be written even when the disk is full.
 *
 * Direct writes (docs/internals.md, "Direct writes"): where the file system takes O_DIRECT, the
 * events' writes are O_DIRECT (fcntl on the one descriptor) in whole 4 KiB blocks; a buffer that
 * leaves staging with a partial last block writes it zero-padded (or, submit_blocks, not at all)
 * and carries it to the next staging buffer. Every byte has one holder (staging, carry, held, in
 * flight, file) and patches go there; buffered accesses (patches, reads, footer) come only while
 * none of the file's direct writes is in flight, to blocks no direct write will write again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stddef.h>
#include <stdlib.h>
#include <zlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "atf.h"
#include "fs.h"
#include "wal_internal.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef EXT4_SUPER_MAGIC
#define EXT4_SUPER_MAGIC 0xEF53 /* ext2, ext3 and ext4 */
#endif
#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080 /* Linux 6.14+ (uapi linux/fs.h) */
#endif

static uint64_t wal_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_BOOTTIME, the events' clock (ada_boottime_ns() of src/clock, which
 * the wal stands below): a batch's encode-to-disk latency. */
static uint64_t wal_boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ada_wal_io_new(const struct ada_wal_io_opts *o, struct ada_wal_io **out)
{
	struct ada_wal_io *io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->qd = o && o->queue_depth ? o->queue_depth : 256;
	io->ahead_room = UINT64_MAX;
	io->buffer_bytes = o && o->buffer_bytes ? o->buffer_bytes : (1u << 20);
	io->buffer_bytes &= ~(uint32_t)(ATF_INDEX_EVENT_SIZE - 1);
	/* The pool's bytes, not its count, absorb a disk that stalls: 96 MiB
	 * whatever the buffers' size (96 of 1 MiB, 384 of 256 KiB), at most
	 * 384 (in flight at once: below the completion queue's 2 x 256). */
	uint32_t pool = (96u << 20) / (io->buffer_bytes ? io->buffer_bytes : 1);
	io->max_buffers = o && o->max_buffers ? o->max_buffers
	                  : pool < 96         ? 96
	                  : pool > 384        ? 384
	                                      : pool;
	io->stage_ns = (uint64_t)(o && o->stage_ms ? o->stage_ms : 5) * 1000000ull;
	/* ADA_WAL_CACHED=1: plain buffered writes (to compare, docs/benchmarks.md) */
	io->dontcache = !getenv("ADA_WAL_CACHED");
	/* ADA_WAL_DIRECT=0: buffered index writes (the old path, to compare);
	 * =1 (or opts direct > 0): compact files direct too (wal_direct_open) */
	const char *d = getenv("ADA_WAL_DIRECT");
	io->direct = o && o->direct ? o->direct > 0 : !(d && !strcmp(d, "0"));
	io->direct_compact = o && o->direct ? o->direct > 0 : d && !strcmp(d, "1");
	/* ADA_WAL_URING_TMPFS=1: tmpfs writes through io_uring's worker (to compare) */
	const char *u = getenv("ADA_WAL_URING_TMPFS");
	io->uring_tmpfs = u && !strcmp(u, "1");
	const char *cu = getenv("ADA_WAL_CX_URING");
	io->cx_uring = cu && !strcmp(cu, "1");
	const char *da = getenv("ADA_WAL_DIRECT_ASYNC");
	io->direct_async = !(da && !strcmp(da, "0"));
	int r = io_uring_queue_init(io->qd, &io->ring, 0);
	if (r < 0) {
		free(io);
		return r;
	}
	*out = io;
	return 0;
}

int ada_wal_io_hold(struct ada_wal_io *io, int fd)
{
	return io_uring_register_files(&io->ring, &fd, 1);
}

void ada_wal_io_free(struct ada_wal_io *io)
{
	if (!io)
		return;
	while (io->inflight > 0 && ada_wal_io_reap(io, true) >= 0)
		;
	/* A file ada_wal_io_hold() registered is let go by the ring's
	 * teardown, which the kernel runs in a worker after the ring's close:
	 * the session's file system, unmounted right after `ada record`
	 * returned, was still busy. Every write has landed above: let go of
	 * it now (-ENXIO when none was registered). */
	(void)io_uring_unregister_files(&io->ring);
	io_uring_queue_exit(&io->ring);
	while (io->free) {
		struct wal_buf *b = io->free;
		io->free = b->next;
		free(b->data);
		free(b);
	}
	wal_dwin_release(io->dwin_file);
	wal_cidx_spares_free(io);
	free(io->dwin);
	free(io->crcbat);
	free(io);
}

struct io_uring_sqe *wal_sqe(struct ada_wal_io *io)
{
	while (io->inflight >= io->qd)
		if (ada_wal_io_reap(io, true) < 0)
			break;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	if (!sqe) {
		io_uring_submit(&io->ring);
		sqe = io_uring_get_sqe(&io->ring);
	}
	return sqe;
}

static void wal_complete_write(struct ada_wal_io *io, struct wal_buf *b, int res);

/* A tmpfs file's write, done here and completed at once. tmpfs takes no
 * non-blocking write, so io_uring hands each one to a worker it wakes
 * (a cross-CPU wake-up that costs the drain more than the copy of a
 * compact write), and the ring's events stay unreleased until that
 * worker ran (docs/benchmarks.md, "Writes to tmpfs in the drain
 * thread"). The page cache is the file: once pwrite returned, the bytes
 * are there whatever happens to the recorder. */
static void wal_buf_write_inline(struct ada_wal_io *io, struct wal_buf *b)
{
	struct iovec v = {b->data + b->done, b->wlen - b->done};
	b->dontcache = io->dontcache && !b->f->cached;
	ssize_t n =
	    pwritev2(b->f->fd, &v, 1, (off_t)(b->off + b->done), b->dontcache ? RWF_DONTCACHE : 0);
	wal_complete_write(io, b, n < 0 ? -errno : (int)n);
}

static void wal_buf_write(struct ada_wal_io *io, struct wal_buf *b)
{
	struct ada_wal_file *f = b->f;
	if (f->inline_write && !f->direct) {
		b->direct = false;
		wal_buf_write_inline(io, b);
		return;
	}
	struct io_uring_sqe *sqe = wal_sqe(io);
	/* A direct write skips the page-cache copy (the kernel's CPU per
	 * event, half the recorder's on fib): whole blocks from the aligned
	 * buffer straight to the device (segment.c, "Direct writes"). */
	if (f->direct && wal_fd_mode(f, true) < 0)
		wal_direct_off(f, "O_DIRECT refused (fcntl)", 0);
	b->direct = f->direct;
	if (!b->direct)
		(void)wal_fd_mode(f, false); /* a fallen-back file: none in flight */
	io_uring_prep_write(sqe, f->fd, b->data + b->done, b->wlen - b->done, b->off + b->done);
	/* Uncached buffered writes: the pages are written back and dropped
	 * right away, so the next writes reuse recently freed pages instead
	 * of taking ever new ones (in a VM every new page costs the host a
	 * fault: the page-cache copy was half the recorder's CPU on fib).
	 * Durability is that of any buffered write. Kernels or file systems
	 * without it (tmpfs) answer -EOPNOTSUPP: then plain writes from there
	 * on, and each write refused is sent again without it. */
	b->dontcache = !b->direct && io->dontcache;
	if (b->dontcache)
		sqe->rw_flags = RWF_DONTCACHE;
	/* A direct write's set-up (pinning the buffer's pages, the extent
	 * mapping, the bios) in io_uring's worker, not in the drain thread
	 * that submits: measured with wal_bench, that brought the drain's own
	 * CPU per event down to the buffered path's. */
	if (b->direct && io->direct_async)
		sqe->flags |= IOSQE_ASYNC;
	io_uring_sqe_set_data(sqe, b);
	io->inflight++;
	io_uring_submit(&io->ring);
}

/* A cached file's pages below upto (rounded down to a page) that the
 * flush before this one wrote back (a second ago at the default
 * interval), from where the last drop stopped, leave the page cache:
 * what RWF_DONTCACHE did at every write, once a flush, so a long
 * recording does not fill the page cache with its files (nor evict the
 * program's), and the next writes take pages freed recently. Page 0 stays
 * (finalize rewrites the header). Pages still dirty or under write-back
 * stay too (the kernel skips them); failure costs only memory. The drain
 * thread's call: no write-back to start (the flush did), so it only
 * frees pages: a page per ~4 000 events of a compact file. */
static void wal_drop_behind(struct ada_wal_file *f, uint64_t upto)
{
	upto &= ~(uint64_t)(WAL_BLOCK - 1);
	if (upto <= f->dropped_end)
		return;
	(void)posix_fadvise(f->fd, (off_t)f->dropped_end, (off_t)(upto - f->dropped_end),
	                    POSIX_FADV_DONTNEED);
	f->dropped_end = upto;
}

/* Sync ops carry the file pointer with the low bit set. */
void wal_sync(struct ada_wal_file *f, bool full)
{
	struct ada_wal_io *io = f->io;
	struct io_uring_sqe *sqe = wal_sqe(io);
	if (full) {
		io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
		sqe->flags |= IOSQE_IO_DRAIN; /* after the writes already queued */
	} else {
		uint64_t len = f->submitted_end - f->flushed_end;
		/* nbytes 0 means "to the end of the file" for larger ranges */
		io_uring_prep_sync_file_range(sqe, f->fd, len > UINT32_MAX ? 0 : (unsigned)len,
		                              f->flushed_end, SYNC_FILE_RANGE_WRITE);
	}
	io_uring_sqe_set_data(sqe, (void *)((uintptr_t)f | 1u));
	if (full)
		f->syncs++;
	else
		f->flushes++;
	f->sync_inflight++;
	io->inflight++;
	uint64_t behind = f->flushed_end; /* the last flush's range ends here */
	f->flushed_end = f->submitted_end;
	f->last_flush_ns = wal_mono_ns();
	io_uring_submit(&io->ring);
	if (f->cached && !full)
		wal_drop_behind(f, behind);
}

static void wal_stage_unlink(struct ada_wal_file *f)
{
	struct ada_wal_io *io = f->io;
	if (!f->staged)
		return;
	if (f->stage_prev)
		f->stage_prev->stage_next = f->stage_next;
	else
		io->stage_head = f->stage_next;
	if (f->stage_next)
		f->stage_next->stage_prev = f->stage_prev;
	f->stage_prev = f->stage_next = NULL;
	f->staged = false;
}

/* Hands f's buffer b, the next in file order, to the kernel. */
static void wal_buf_send(struct ada_wal_file *f, struct wal_buf *b)
{
	f->inflight++;
	if (b->off + b->wlen > f->submitted_end)
		f->submitted_end = b->off + b->wlen;
	b->sent = true;
	if (b->pad)
		f->pad_inflight = b; /* before the write: a completion reaped meanwhile sees it */
	b->complete = false;
	b->fifo_next = NULL;
	if (f->fifo_tail)
		f->fifo_tail->fifo_next = b;
	else
		f->fifo_head = b;
	f->fifo_tail = b;
	wal_buf_write(f->io, b);
	const struct ada_flush_policy *p = &f->opts.flush;
	if (p->mode == ADA_FLUSH_BYTES && f->submitted_end - f->flushed_end >= p->value)
		wal_sync(f, false);
}

/* Whether b may go to the kernel now: not while a padded write of its
 * first block (the carry it starts with) is in flight -- two writes of
 * one block in flight at once may land in either order. */
static bool wal_can_send(const struct ada_wal_file *f, const struct wal_buf *b)
{
	const struct wal_buf *p = f->pad_inflight;
	return !p || b->off >= p->off + p->wlen;
}

/* Writes f's held buffers, oldest first (they precede everything staged
 * after them, so file order holds), up to one that must wait for a padded
 * write (its completion sends the rest). Returns the buffers sent. A
 * completion reaped inside (wal_sqe) does not recurse: this loop looks
 * again. */
static uint32_t wal_held_send(struct ada_wal_file *f)
{
	uint32_t n = 0;
	if (f->sending)
		return 0;
	f->sending = true;
	while (f->held_head && wal_can_send(f, f->held_head)) {
		struct wal_buf *b = f->held_head;
		f->held_head = b->next;
		if (!f->held_head)
			f->held_tail = NULL;
		f->nheld--;
		f->io->nheld--;
		wal_buf_send(f, b);
		n++;
	}
	f->sending = false;
	return n;
}

/* Makes b f's staging buffer: after the carry (the last partial block,
 * written again with what follows), or on a direct file's first block
 * after the header placeholder, else at the committed end. */
void wal_stage(struct ada_wal_file *f, struct wal_buf *b, uint64_t staged_at)
{
	f->cur = b;
	b->f = f;
	b->off = f->end;
	b->len = b->done = 0;
	if (f->carry_len) {
		b->off = f->carry_off;
		memcpy(b->data, f->carry, f->carry_len);
		b->len = f->carry_len;
		f->carry_len = 0;
		f->carry_dirty = false;
	} else if (f->direct && f->end == ATF_HEADER_SIZE) {
		/* the same bytes as on disk (open, wal_file_set_has_detail) */
		b->off = 0;
		wal_header_placeholder(f, b->data);
		b->len = ATF_HEADER_SIZE;
	}
	b->first_ts = 0;
	b->sent = false;
	b->staged_at = staged_at;
	struct ada_wal_io *io = f->io;
	f->stage_next = io->stage_head;
	f->stage_prev = NULL;
	if (io->stage_head)
		io->stage_head->stage_prev = f;
	io->stage_head = f;
	f->staged = true;
}

/* Ends staging of the current buffer: to the kernel, or to the held list
 * while f is held (wal_file_hold). A direct file's partial last block is
 * written padded (and again with what follows), or, with blocks_only,
 * left to the next buffer (then a buffer of less than a block stays). */
void wal_submit_cur_how(struct ada_wal_file *f, bool blocks_only)
{
	struct wal_buf *b = f->cur, *tail_buf = NULL;
	if (!b)
		return;
	if (f->cx) /* only whole blocks leave staging, each one whole */
		wal_cidx_seal(f);
	uint64_t end = b->off + b->len, staged_at = b->staged_at;
	/* A compact file's partial 4 KiB page is written padded: its events
	 * are not at a fixed offset to stay staged by. */
	blocks_only = blocks_only && f->direct && end % WAL_BLOCK && !f->cx;
	if (blocks_only) {
		if ((end & ~(uint64_t)(WAL_BLOCK - 1)) <= b->off)
			return; /* less than a block: it stays */
		/* The partial block's events stay staged, in a buffer of their
		 * own (the stale submit writes them in time). */
		tail_buf = wal_buf_get(f->io);
		if (f->cur != b) { /* a shortage sent every staged buffer, b too */
			if (tail_buf) {
				wal_buf_put(f->io, tail_buf);
			}
			return;
		}
		blocks_only = tail_buf != NULL; /* none: written padded */
	}
	f->cur = NULL;
	wal_stage_unlink(f);
	if (b->len == 0) {
		wal_buf_put(f->io, b);
		return;
	}
	b->ev_end = f->events; /* now: a held buffer's file grows on */
	b->wlen = b->len;
	b->pad = false;
	if (f->direct)
		wal_direct_cut(f, b, !blocks_only);
	/* Through the held list even when not held: behind a buffer waiting
	 * for a padded write (wal_can_send), in file order. */
	b->next = NULL;
	if (f->held_tail)
		f->held_tail->next = b;
	else
		f->held_head = b;
	f->held_tail = b;
	f->nheld++;
	f->io->nheld++;
	if (tail_buf)
		wal_stage(f, tail_buf, staged_at); /* takes the carry */
	if (!f->hold)
		wal_held_send(f);
	/* Never more than half the pool kept back: past it, those waiting for
	 * a padded write wait here for its completion (rare: half the pool
	 * staged during one write). */
	while (f->nheld > f->io->max_buffers / 2) {
		wal_held_send(f);
		if (f->nheld <= f->io->max_buffers / 2 || !f->pad_inflight ||
		    ada_wal_io_reap(f->io, true) < 0)
			break;
	}
}

static void wal_submit_cur(struct ada_wal_file *f)
{
	wal_submit_cur_how(f, false);
}

void wal_file_hold(struct ada_wal_file *f, bool on)
{
	f->hold = on;
	if (!on)
		wal_held_send(f);
}

/* A buffer shortage: every file's held buffers go to the kernel, so their
 * completions can refill the pool. */
static uint32_t wal_io_send_held(struct ada_wal_io *io)
{
	uint32_t n = 0;
	for (struct ada_wal_file *f = io->files; f && io->nheld; f = f->file_next)
		n += wal_held_send(f);
	return n;
}

void ada_wal_io_submit_stale(struct ada_wal_io *io, bool force)
{
	uint64_t now = wal_mono_ns();
	struct ada_wal_file *f = io->stage_head, *next;
	for (; f; f = next) {
		next = f->stage_next;
		if (force || now - f->cur->staged_at >= io->stage_ns)
			wal_submit_cur(f);
	}
	/* The interval flush policy is checked here, once per drain pass. */
	for (f = io->files; f; f = f->file_next) {
		const struct ada_flush_policy *p = &f->opts.flush;
		if (p->mode == ADA_FLUSH_INTERVAL && f->submitted_end > f->flushed_end &&
		    now - f->last_flush_ns >= p->value * 1000000ull)
			wal_sync(f, false);
	}
}

/* The queued detail_seq patches inside b's range, now that its write is
 * done (ok) or failed (then they are counted: the event is not on disk).
 * b's data is what the file now holds there: the patches go into it and
 * one pwrite of the span they cover writes them all (a --detail
 * triggered window links thousands of events in flight at once); a span
 * that fails is tried patch by patch, as each was before, and one that
 * fails again is lost: counted, and its CRC change taken back (the file
 * keeps "no detail" there).
 *
 * A file with direct writes gets buffered writes only while none of its
 * direct writes is in flight: the page cache works in folios larger than
 * a block, and a buffered access next to a direct write in flight can
 * leave a folio holding that block's old bytes (read back wrong, written
 * back later). Until then the patches wait, ready (in b's data already),
 * and the file's last completion writes them one by one. */
static bool wal_patch_in(const struct wal_patch *p, const struct wal_buf *b)
{
	return p->off >= b->off && p->off + 4 <= b->off + b->len;
}

static void wal_patches_apply(struct ada_wal_file *f, struct wal_buf *b, bool ok)
{
	bool defer = f->direct_used && f->inflight > 0;
	if (!defer && f->npatch)
		(void)wal_fd_mode(f, false); /* else the pwrites fail: patch_failed */
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < f->npatch && ok; i++) {
		const struct wal_patch *p = &f->patches[i];
		if (p->ready || !wal_patch_in(p, b))
			continue;
		memcpy(b->data + (p->off - b->off), &p->val, 4);
		lo = p->off < lo ? p->off : lo;
		hi = p->off + 4 > hi ? p->off + 4 : hi;
	}
	bool span = false;
	if (!defer && lo < hi) {
		f->io->patch_spans++;
		span = wal_pwrite_all(f->fd, b->data + (lo - b->off), (size_t)(hi - lo), lo) == 0;
	}
	size_t keep = 0;
	for (size_t i = 0; i < f->npatch; i++) {
		struct wal_patch p = f->patches[i];
		if (!p.ready && !wal_patch_in(&p, b)) {
			f->patches[keep++] = p;
			continue;
		}
		if (!p.ready && !ok) {
			wal_link_failed(f); /* the event is not on the file (bad_from) */
			continue;
		}
		if (defer) {
			p.ready = true;
			f->patches[keep++] = p;
		} else if ((p.ready || !span) && wal_pwrite_all(f->fd, &p.val, 4, p.off) < 0) {
			wal_link_failed(f);
			wal_crcbat_add(f, p.off - ATF_HEADER_SIZE, p.val ^ ATF_NO_DETAIL);
		}
	}
	f->npatch = keep;
}

void wal_file_quiesce(struct ada_wal_file *f)
{
	while (f->direct_used && f->inflight > 0)
		if (ada_wal_io_reap(f->io, true) < 0)
			break;
	(void)wal_fd_mode(f, false);
}

static void wal_complete_write(struct ada_wal_io *io, struct wal_buf *b, int res)
{
	struct ada_wal_file *f = b->f;
	if (res == -EINVAL && b->direct) {
		/* The device or file system refused the direct write (alignment
		 * it needs beyond 4 KiB, or none at all): this file is written
		 * buffered from here on, this write first. */
		wal_direct_off(f, "a direct write was refused (EINVAL)", 1);
		wal_buf_write(io, b);
		return;
	}
	if ((res == -EOPNOTSUPP || res == -EINVAL) && b->dontcache) {
		io->dontcache = false; /* not here: the same write without it */
		io->dontcache_refused++;
		wal_buf_write(io, b);
		return;
	}
	if (res == -EAGAIN || res == -EINTR || (res > 0 && b->done + (uint32_t)res < b->wlen)) {
		if (res > 0)
			b->done += (uint32_t)res;
		wal_buf_write(io, b); /* short write or retry: the rest again */
		return;
	}
	if (res < 0) {
		if (!f->error)
			f->error = res;
		if (b->off < f->bad_from)
			f->bad_from = b->off;
		if (res == -ENOSPC)
			io->disk_full = true;
	} else {
		io->bytes_written += b->wlen;
		if (b->first_ts) {
			/* A TSC-converted timestamp can lead the kernel's clock by
			 * the calibration error: count that as zero, not 2^64. */
			uint64_t now = wal_boottime_ns();
			ada_lat_hist_add(&io->lat, now > b->first_ts ? now - b->first_ts : 0);
		}
	}
	f->inflight--;
	b->complete = true;
	bool unblock = f->pad_inflight == b;
	if (unblock)
		f->pad_inflight = NULL;
	wal_patches_apply(f, b, res >= 0);
	/* Durability advances over the in-order prefix of completed writes:
	 * the drain releases ring space only up to there. */
	while (f->fifo_head && f->fifo_head->complete) {
		struct wal_buf *h = f->fifo_head;
		f->fifo_head = h->fifo_next;
		if (!f->fifo_head)
			f->fifo_tail = NULL;
		f->durable = h->ev_end;
		wal_buf_put(io, h);
	}
	if (unblock && !f->hold)
		wal_held_send(f); /* the buffers waiting for that block */
}

/* The allocation ahead completed (wal_grow_ahead): the segment is the
 * file's now (counted in segments when the events enter it); an error
 * (ENOSPC above all) leaves the next growth to wal_grow(), which takes
 * what fits in smaller steps, as before. */
static void wal_grow_done(struct ada_wal_file *f, int res)
{
	f->grow_inflight = false;
	if (res < 0) {
		f->grow_err = res;
		f->io->alloc_open -= f->grow_len; /* counted at the submission */
		return;
	}
	if (f->alloc != f->grow_off) {
		f->io->alloc_open -= f->grow_len;
		return; /* cannot happen: wal_grow() waits for it first */
	}
	f->ahead_start = f->alloc;
	f->alloc += f->grow_len; /* in alloc_open since wal_grow_ahead() */
}

int ada_wal_io_reap(struct ada_wal_io *io, bool wait)
{
	struct io_uring_cqe *cqe;
	int n = 0;
	if (wait && io->inflight > 0) {
		int r = io_uring_wait_cqe(&io->ring, &cqe);
		if (r < 0 && r != -EINTR)
			return r;
	}
	while (io_uring_peek_cqe(&io->ring, &cqe) == 0) {
		uintptr_t ud = (uintptr_t)io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&io->ring, cqe);
		io->inflight--;
		n++;
		if ((ud & 3u) == 2u) {
			wal_grow_done((struct ada_wal_file *)(ud & ~(uintptr_t)3u), res);
		} else if (ud & 1u) {
			struct ada_wal_file *f = (struct ada_wal_file *)(ud & ~(uintptr_t)1u);
			f->sync_inflight--;
			if (res < 0 && res != -EINVAL && !f->error)
				f->error = res;
		} else {
			wal_complete_write(io, (struct wal_buf *)ud, res);
		}
	}
	return n;
}

bool ada_wal_io_quiet(const struct ada_wal_io *io)
{
	return io->inflight == 0 && io->nheld == 0;
}

uint64_t ada_wal_io_due_ns(const struct ada_wal_io *io)
{
	uint64_t now = wal_mono_ns(), due = UINT64_MAX;
	/* As ada_wal_io_submit_stale() decides: a staged buffer once it is
	 * stage_ns old, an interval flush once its period passed. */
	for (const struct ada_wal_file *f = io->stage_head; f; f = f->stage_next) {
		uint64_t at = f->cur->staged_at + io->stage_ns;
		due = at < due ? at : due;
	}
	for (const struct ada_wal_file *f = io->files; f; f = f->file_next) {
		const struct ada_flush_policy *p = &f->opts.flush;
		if (p->mode != ADA_FLUSH_INTERVAL || f->submitted_end <= f->flushed_end)
			continue;
		uint64_t at = f->last_flush_ns + p->value * 1000000ull;
		due = at < due ? at : due;
	}
	return due == UINT64_MAX ? due : due > now ? due - now : 0;
}

void ada_wal_io_wait(struct ada_wal_io *io, uint32_t usec)
{
	if (io->inflight == 0) {
		usleep(usec);
		return;
	}
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = (long long)usec * 1000};
	if (io_uring_wait_cqe_timeout(&io->ring, &cqe, &ts) == 0)
		ada_wal_io_reap(io, false);
}

struct wal_buf *wal_buf_get(struct ada_wal_io *io)
{
	for (;;) {
		struct wal_buf *b = io->free;
		if (b) {
			io->free = b->next;
			if (--io->n_free < io->free_low)
				io->free_low = io->n_free;
			return b;
		}
		if (io->n_buffers < io->max_buffers) {
			b = calloc(1, sizeof(*b));
			if (b && posix_memalign((void **)&b->data, 4096, io->buffer_bytes) == 0) {
				io->n_buffers++;
				return b;
			}
			free(b);
			if (io->n_buffers == 0)
				return NULL;
		}
		if (io->nheld && wal_io_send_held(io) > 0)
			continue; /* none sent: they wait for a padded write, reaped below */
		if (io->inflight == 0 && io->stage_head) {
			ada_wal_io_submit_stale(io, true); /* every buffer is staged: send them */
			if (io->free)
				continue; /* tmpfs files' writes: completed in the call */
		}
		if (io->inflight == 0)
			return NULL;
		if (ada_wal_io_reap(io, true) < 0)
			return NULL;
	}
}

void wal_buf_put(struct ada_wal_io *io, struct wal_buf *b)
{
	b->next = io->free;
	io->free = b;
	io->n_free++;
}

uint32_t ada_wal_io_trim(struct ada_wal_io *io)
{
	uint32_t n = 0;
	for (struct wal_buf *b; n < io->free_low && (b = io->free); n++) {
		io->free = b->next;
		free(b->data);
		free(b);
	}
	io->n_free -= n;
	io->n_buffers -= n;
	io->free_low = io->n_free;
	return n;
}

void ada_wal_io_buffers(const struct ada_wal_io *io, uint32_t *made, uint32_t *free_now)
{
	*made = io->n_buffers;
	*free_now = io->n_free;
}

const struct ada_lat_hist *ada_wal_io_latency(const struct ada_wal_io *io)
{
	return &io->lat;
}

bool ada_wal_io_uncached(const struct ada_wal_io *io, uint32_t *refused)
{
	if (refused)
		*refused = io->dontcache_refused;
	return io->dontcache;
}

bool ada_wal_io_direct(const struct ada_wal_io *io, uint32_t *files, uint32_t *fallbacks,
                       const char **reason)
{
	if (files)
		*files = io->direct_files;
	if (fallbacks)
		*fallbacks = io->direct_fallbacks;
	if (reason)
		*reason = io->direct_reason[0] ? io->direct_reason : NULL;
	return io->direct;
}

uint32_t ada_wal_io_inline_files(const struct ada_wal_io *io)
{
	return io->inline_files;
}

uint64_t ada_wal_io_links_failed(const struct ada_wal_io *io)
{
	return io->links_failed;
}

bool ada_wal_io_disk_full(const struct ada_wal_io *io)
{
	return io->disk_full;
}

uint64_t ada_wal_file_bytes(const struct ada_wal_file *f)
{
	return f->end;
}

uint64_t ada_wal_io_bytes_written(const struct ada_wal_io *io)
{
	return io->bytes_written;
}

void ada_wal_io_final(const struct ada_wal_io *io, uint64_t *bytes, uint64_t *events)
{
	*bytes = io->final_bytes;
	*events = io->final_events;
}

uint32_t ada_wal_io_buffer_bytes(const struct ada_wal_io *io)
{
	return io->buffer_bytes;
}

/* ---- files ---- */

int wal_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* A compact file on a local disk's ext4 or xfs is written in the drain
 * thread with plain buffered writes (docs/internals.md, "Compact files
 * on ext4 and xfs are written in the drain thread"). Its writes are a byte an event, 16-64
 * KiB each, at any offset: RWF_DONTCACHE dropped each write's last
 * partial page after write-back, so the next write, starting in it, read
 * it back from the disk first (synchronously), and started a write-back
 * of its own, all in io_uring's worker, which the drain woke for every
 * write -- the drain and the worker together cost twice tmpfs's per
 * event on fib (docs/benchmarks.md, "The drain on the disk"). A plain
 * buffered write of a page-cache page is a copy, as on tmpfs; write-back
 * is the flush's (sync_file_range, every second by default), and the
 * pages it wrote are dropped at the next one (wal_drop_behind). Only
 * local file systems whose buffered writes wait for neither a device, a
 * server (NFS) nor a daemon (FUSE): ext4 and xfs; others go through
 * io_uring as before. */
static void wal_cached_open(struct ada_wal_file *f)
{
	f->inline_write = f->cached = true;
	f->dropped_end = WAL_BLOCK;
}

int ada_wal_file_open(struct ada_wal_io *io, const char *path, const struct ada_wal_file_opts *o,
                      struct ada_wal_file **out)
{
	return ada_wal_file_openat(io, AT_FDCWD, path, path, o, out);
}

int ada_wal_file_openat(struct ada_wal_io *io, int dirfd, const char *name, const char *path,
                        const struct ada_wal_file_opts *o, struct ada_wal_file **out)
{
	int fd;
	int r = ada_fs_create(dirfd, name, O_RDWR, &fd);
	return r < 0 ? r : ada_wal_file_adopt(io, fd, dirfd, name, path, o, out);
}

int ada_wal_file_adopt(struct ada_wal_io *io, int fd, int dirfd, const char *name, const char *path,
                       const struct ada_wal_file_opts *o, struct ada_wal_file **out)
{
	struct ada_wal_file *f = calloc(1, sizeof(*f));
	if (!f) {
		unlinkat(dirfd, name, 0);
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	f->io = io;
	f->opts = *o;
	if (!f->opts.segment_bytes)
		f->opts.segment_bytes = 64ull << 20;
	if (f->opts.segment_bytes < WAL_MIN_SEGMENT)
		f->opts.segment_bytes = WAL_MIN_SEGMENT;
	f->end = f->submitted_end = f->flushed_end = ATF_HEADER_SIZE;
	f->bad_from = UINT64_MAX;
	f->last_flush_ns = wal_mono_ns();
	int r = -ENOMEM;
	f->path = strdup(path);
	if (!f->path)
		goto err_unlink;
	struct statfs sf;
	bool fs_known = fstatfs(f->fd, &sf) == 0;
	/* tmpfs: what the file system is (its steps, no O_DIRECT); whether
	 * its writes are the drain's own is the write path's choice apart
	 * (ADA_WAL_URING_TMPFS=1 sends them through io_uring, to compare). */
	f->tmpfs = fs_known && sf.f_type == TMPFS_MAGIC;
	f->inline_write = f->tmpfs && !io->uring_tmpfs;
	if (o->index_format == ADA_INDEX_COMPACT && (r = wal_cidx_new(f)) < 0)
		goto err_unlink;
	uint8_t h[ATF_HEADER_SIZE];
	wal_header_placeholder(f, h);
	r = wal_grow(f, ATF_HEADER_SIZE);
	if (r == 0)
		r = wal_pwrite_all(f->fd, h, sizeof(h), 0);
	if (r < 0)
		goto err_unlink;
	if (io->direct)
		wal_direct_open(f);
	if (f->cx && !f->direct && !f->tmpfs && !io->cx_uring && fs_known &&
	    (sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC))
		wal_cached_open(f);
	io->inline_files += f->inline_write;
	f->file_next = io->files;
	if (io->files)
		io->files->file_prev = f;
	io->files = f;
	*out = f;
	return 0;
err_unlink:
	io->alloc_open -= f->alloc;
	if (r == -ENOSPC)
		io->disk_full = true;
	unlinkat(dirfd, name, 0);
	close(f->fd);
	wal_cidx_free(f);
	free(f->path);
	free(f);
	return r;
}

size_t ada_wal_file_reserve(struct ada_wal_file *f, size_t max, struct atf_index_event **dst)
{
	if (f->full || f->error || max == 0)
		return 0;
	if (!f->cur) {
		struct wal_buf *b = wal_buf_get(f->io);
		if (!b)
			return 0;
		wal_stage(f, b, wal_mono_ns());
	}
	/* A compact file's room is its chunk; its bytes at their longest. */
	size_t room =
	    f->cx ? WAL_CIDX_CHUNK : (f->io->buffer_bytes - f->cur->len) / ATF_INDEX_EVENT_SIZE;
	size_t n = max < room ? max : room;
	if (f->cx && f->alloc < WAL_FIRST_SEGMENT)
		n = wal_cidx_small(f, n);
	uint64_t need = f->end + (f->cx ? wal_cidx_bound_at(f->cx, n) + wal_cidx_tail(f)
	                                : n * ATF_INDEX_EVENT_SIZE);
	uint32_t seg = f->segments;
	int r = need + ATF_FOOTER_SIZE > f->alloc ? wal_grow(f, need) : 0;
	if (f->ahead_start && need + ATF_FOOTER_SIZE > f->ahead_start) {
		f->ahead_start = 0; /* the events enter the segment allocated ahead */
		f->segments++;
	}
	/* One flush policy step per new segment (a big batch on a small file
	 * can take two at once). */
	for (uint32_t k = seg; seg > 0 && k < f->segments; k++)
		wal_on_rotate(f);
	if (r == 0) {
		wal_grow_ahead(f, need);
	} else {
		if (r == -ENOSPC)
			f->io->disk_full = true;
		f->full = true;
		f->error = r;
		uint64_t fit = f->alloc - ATF_FOOTER_SIZE - f->end;
		if (f->cx) /* the tail's room is not the events' */
			fit = fit > wal_cidx_tail(f) ? fit - wal_cidx_tail(f) : 0;
		n = f->cx ? wal_cidx_fit(fit) : fit / ATF_INDEX_EVENT_SIZE;
	}
	*dst = f->cx ? wal_cidx_chunk(f) : (struct atf_index_event *)(f->cur->data + f->cur->len);
	return n;
}

/* The fused pass's per-call costs (set-up, the trigger's calls, the reserve) come once a chunk:
 * a larger one pays them less often (docs/benchmarks.md, "The drain outside the fused pass"),
 * given only where its reserve does no more than the chunk's (no growth, no segment entered, the
 * file not full), so growth, rotation and the flush policy stay where they were. */
size_t ada_wal_file_reserve_ring(struct ada_wal_file *f, size_t max, struct atf_index_event **dst,
                                 size_t *dst_cap)
{
	size_t n = ada_wal_file_reserve(f, max, dst);
	*dst_cap = n;
	if (!f->cx || n < WAL_CIDX_CHUNK || max <= n || f->full || f->error)
		return n;
	size_t big = max < ADA_WAL_RING_CHUNK ? max : ADA_WAL_RING_CHUNK;
	uint64_t need = f->end + wal_cidx_bound(big) + wal_cidx_tail(f) + ATF_FOOTER_SIZE;
	if (need > f->alloc || (f->ahead_start && need > f->ahead_start))
		return n;
	return big;
}

void ada_wal_file_commit(struct ada_wal_file *f, size_t n)
{
	if (n == 0)
		return;
	struct wal_buf *b = f->cur;
	if (!b) { /* an earlier commit of the same reserve found no buffer */
		f->lost += n;
		return;
	}
	if (f->cx) {
		(void)wal_cidx_commit(f, n, b->staged_at);
		return;
	}
	const struct atf_index_event *ev = (const void *)(b->data + b->len);
	uint32_t bytes = (uint32_t)(n * ATF_INDEX_EVENT_SIZE);
	f->crc = wal_crc32(f->crc, ev, bytes);
	if (f->events == 0)
		f->t_start = ev[0].timestamp_ns;
	if (b->first_ts == 0)
		b->first_ts = ev[0].timestamp_ns;
	f->t_end = ev[n - 1].timestamp_ns;
	f->events += n;
	b->len += bytes;
	f->end += bytes;
	if (b->len + ATF_INDEX_EVENT_SIZE > f->io->buffer_bytes)
		wal_submit_cur(f);
}

size_t ada_wal_file_append(struct ada_wal_file *f, const struct atf_index_event *ev, size_t n)
{
	size_t done = 0;
	while (done < n) {
		struct atf_index_event *dst;
		size_t k = ada_wal_file_reserve(f, n - done, &dst);
		if (k == 0)
			break;
		memcpy(dst, ev + done, k * sizeof(*dst));
		ada_wal_file_commit(f, k);
		done += k;
	}
	f->lost += n - done;
	return done;
}

uint64_t ada_wal_file_durable(const struct ada_wal_file *f)
{
	return f->durable;
}

void ada_wal_file_submit(struct ada_wal_file *f)
{
	wal_submit_cur(f);
}

void ada_wal_file_submit_blocks(struct ada_wal_file *f)
{
	wal_submit_cur_how(f, true);
}

void ada_wal_file_discard(struct ada_wal_file *f, size_t n)
{
	f->lost += n;
}

uint64_t ada_wal_file_last_ts(const struct ada_wal_file *f)
{
	return f->t_end;
}

uint64_t ada_wal_file_events(const struct ada_wal_file *f)
{
	return f->events;
}

uint64_t ada_wal_file_disk_bytes(const struct ada_wal_file *f)
{
	return f->alloc;
}

uint64_t ada_wal_io_open_bytes(const struct ada_wal_io *io)
{
	return io->alloc_open;
}

void ada_wal_io_set_ahead_room(struct ada_wal_io *io, uint64_t bytes)
{
	io->ahead_room = bytes;
}

uint64_t ada_wal_file_lost(const struct ada_wal_file *f)
{
	return f->lost;
}

uint64_t ada_wal_file_patch_failed(const struct ada_wal_file *f)
{
	return f->patch_failed;
}

int ada_wal_file_error(const struct ada_wal_file *f)
{
	return f->error;
}

static void wal_file_unlink_list(struct ada_wal_file *f)
{
	struct ada_wal_io *io = f->io;
	wal_stage_unlink(f);
	io->alloc_open -= f->alloc;
	if (f->file_prev)
		f->file_prev->file_next = f->file_next;
	else
		io->files = f->file_next;
	if (f->file_next)
		f->file_next->file_prev = f->file_prev;
}

/* Writes footer + final header behind the committed events and cuts the
 * preallocated tail. */
static int wal_write_final(struct ada_wal_file *f, struct ada_wal_file_summary *s)
{
	struct atf_index_header h;
	struct atf_index_footer ft;
	wal_fill_header(&h, f->opts.thread_id, f->opts.arch, f->opts.clock_type);
	if (f->has_detail)
		h.flags |= ATF_INDEX_FLAG_HAS_DETAIL;
	wal_fill_final(&h, &ft, s);
	int r = wal_pwrite_all(f->fd, &ft, sizeof(ft), h.footer_offset);
	if (r == 0)
		r = wal_pwrite_all(f->fd, &h, sizeof(h), 0);
	if (r == 0 && ftruncate(f->fd, (off_t)(h.footer_offset + ATF_FOOTER_SIZE)) < 0)
		r = -errno;
	if (r == 0 && f->opts.flush.safe) {
		if (fdatasync(f->fd) < 0)
			r = -errno;
		else
			f->syncs++;
	}
	s->bytes = h.footer_offset + ATF_FOOTER_SIZE;
	return r;
}

int ada_wal_file_finalize(struct ada_wal_file *f, struct ada_wal_file_summary *sum)
{
	struct ada_wal_file_summary s = {0};
	/* The window's patches first (the file is cut below). */
	wal_dwin_release(f);
	wal_file_hold(f, false);
	wal_submit_cur(f);
	/* The allocation ahead too: its completion names f, and a fallocate
	 * after the truncate below would grow the file again. */
	while (f->inflight > 0 || f->sync_inflight > 0 || f->grow_inflight)
		if (ada_wal_io_reap(f->io, true) < 0)
			break;
	(void)wal_fd_mode(f, false); /* the rest is buffered */
	/* A patch of the carried block after its padded write was formed,
	 * with no later buffer to write it: every write is done, so a
	 * buffered one is safe now. */
	if (f->carry_dirty && f->carry_len && f->bad_from == UINT64_MAX) {
		int cr = wal_pwrite_all(f->fd, f->carry, f->carry_len, f->carry_off);
		if (cr < 0 && !f->error)
			f->error = cr;
	}
	/* s.crc below reads f->crc: every patch's change in, and the take-back
	 * of any lost one (the window's, a queued one's at its completion). */
	if (f->io->crcbat_file == f)
		wal_crcbat_fold(f->io);
	wal_file_unlink_list(f);
	int r;
	if (f->bad_from != UINT64_MAX) {
		/* A write failed: keep the events before the hole, rebuilt from
		 * what reached the file. */
		uint64_t keep = f->bad_from;
		if (ftruncate(f->fd, (off_t)keep) < 0) {
			/* the scan below stops at the hole's zeros anyway */
		}
		r = ada_wal_finalize_fd(f->fd, NULL, 0, &s);
		s.lost = f->lost + (f->cx ? f->events - (r == 0 ? s.events : 0)
		                          : (f->end - keep) / ATF_INDEX_EVENT_SIZE);
	} else {
		s.events = f->events;
		s.crc = f->crc;
		s.time_start_ns = f->t_start;
		s.time_end_ns = f->t_end;
		s.lost = f->lost;
		r = f->cx ? wal_cidx_write_final(f, &s) : wal_write_final(f, &s);
	}
	s.error = f->error ? f->error : r;
	s.segments = f->segments;
	s.encoding = f->cx ? ADA_INDEX_COMPACT : ADA_INDEX_ATF;
	f->io->final_bytes += s.bytes;
	f->io->final_events += s.events;
	s.flushes = f->flushes;
	s.syncs = f->syncs;
	if (f->fd >= 0)
		close(f->fd);
	if (sum)
		*sum = s;
	wal_cidx_free(f);
	free(f->carry);
	free(f->patches);
	free(f->path);
	free(f);
	return s.error;
}
