/*
 * disk_bench: what the disk and the page cache cost per byte, without ada.
 * Not a test; run it by hand (docs/benchmarks.md, "The drain"):
 *
 *   build/bench/disk_bench FILE MODE BLOCK_KIB IN_FLIGHT TOTAL_MIB [options]
 *     MODE: direct    O_DIRECT (no page-cache copy)
 *           dontcache buffered with RWF_DONTCACHE (what the drain writes)
 *           buffered  plain buffered writes
 *           writebehind  plain buffered writes from the thread (pwrite),
 *                     each block's write-back started at once
 *                     (sync_file_range WRITE) and waited for IN_FLIGHT
 *                     blocks later (WAIT_BEFORE|WRITE|WAIT_AFTER), its
 *                     pages then dropped (POSIX_FADV_DONTNEED)
 *     options: --no-prealloc (no fallocate of the whole file first),
 *              --overwrite (write the whole file once, untimed, fdatasync
 *              and drop its cached pages, then time writing it again:
 *              blocks already written, which the file system need not
 *              convert from "unwritten" at each completion),
 *              --fixed (registered buffers and a fixed file),
 *              --shift N (every write N bytes past a page boundary, as
 *              ada's files put events at 64 + 32 n; not with direct),
 *              --keep-size (fallocate with FALLOC_FL_KEEP_SIZE, as the
 *              export allocates ahead), --sync (each write by pwritev2
 *              from the thread, one at a time, not through io_uring)
 *
 * It writes TOTAL_MIB through one io_uring with IN_FLIGHT writes of
 * BLOCK_KIB each in flight, then fdatasync, and prints MB/s to the last
 * completion and to the end of the fdatasync, and the process's CPU (its
 * own and its io_uring workers', which are its threads) per 32 bytes: per
 * index event. FILE is removed at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080 /* Linux 6.14+ (uapi linux/fs.h) */
#endif
#define DB_MAX_INFLIGHT 256u

struct db_opts {
	const char *path, *mode;
	size_t block, total, shift;
	unsigned inflight;
	int prealloc, fixed, overwrite, keep_size, sync;
};

static double db_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double db_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int db_parse(int argc, char **argv, struct db_opts *o)
{
	if (argc < 6)
		return -1;
	*o = (struct db_opts){.path = argv[1], .mode = argv[2], .prealloc = 1};
	o->block = (size_t)strtoul(argv[3], NULL, 10) << 10;
	o->inflight = (unsigned)strtoul(argv[4], NULL, 10);
	o->total = (size_t)strtoul(argv[5], NULL, 10) << 20;
	for (int i = 6; i < argc; i++) {
		if (!strcmp(argv[i], "--no-prealloc"))
			o->prealloc = 0;
		else if (!strcmp(argv[i], "--fixed"))
			o->fixed = 1;
		else if (!strcmp(argv[i], "--overwrite"))
			o->overwrite = 1;
		else if (!strcmp(argv[i], "--keep-size"))
			o->keep_size = 1;
		else if (!strcmp(argv[i], "--sync"))
			o->sync = 1;
		else if (!strcmp(argv[i], "--shift") && i + 1 < argc)
			o->shift = (size_t)strtoul(argv[++i], NULL, 10);
		else
			return -1;
	}
	if (strcmp(o->mode, "direct") && strcmp(o->mode, "dontcache") &&
	    strcmp(o->mode, "buffered") && strcmp(o->mode, "writebehind"))
		return -1;
	if (!o->block || o->block % 4096 || !o->inflight || o->inflight > DB_MAX_INFLIGHT ||
	    o->total < o->block || (o->shift && !strcmp(o->mode, "direct")))
		return -1;
	return 0;
}

static void db_prep(struct io_uring *ring, const struct db_opts *o, int fd, char *buf, unsigned idx,
                    size_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (o->fixed) {
		io_uring_prep_write_fixed(sqe, 0, buf, (unsigned)o->block, off + o->shift,
		                          (int)idx);
		sqe->flags |= IOSQE_FIXED_FILE;
	} else {
		io_uring_prep_write(sqe, fd, buf, (unsigned)o->block, off + o->shift);
	}
	sqe->rw_flags = !strcmp(o->mode, "dontcache") ? RWF_DONTCACHE : 0;
	io_uring_sqe_set_data(sqe, (void *)(uintptr_t)idx);
}

/* writebehind, and --sync of the other modes: one write at a time from
 * the thread; writebehind keeps o->inflight blocks in write-back. */
static int db_write_sync(const struct db_opts *o, int fd, char **bufs)
{
	int behind = !strcmp(o->mode, "writebehind");
	int flags = !strcmp(o->mode, "dontcache") ? RWF_DONTCACHE : 0;
	for (size_t off = 0, i = 0; off + o->block <= o->total; off += o->block, i++) {
		struct iovec v = {bufs[i % o->inflight], o->block};
		if (pwritev2(fd, &v, 1, (off_t)(off + o->shift), flags) != (ssize_t)o->block) {
			perror("disk_bench: pwritev2");
			return -1;
		}
		if (!behind)
			continue;
		sync_file_range(fd, (off_t)(off + o->shift), (off_t)o->block,
		                SYNC_FILE_RANGE_WRITE);
		size_t lag = (size_t)o->inflight * o->block;
		if (off >= lag) {
			off_t old = (off_t)(off - lag + o->shift);
			sync_file_range(fd, old, (off_t)o->block,
			                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			                    SYNC_FILE_RANGE_WAIT_AFTER);
			posix_fadvise(fd, old, (off_t)o->block, POSIX_FADV_DONTNEED);
		}
	}
	return 0;
}

/* Keeps o->inflight writes in flight until o->total bytes are written. */
static int db_write_all(struct io_uring *ring, const struct db_opts *o, int fd, char **bufs)
{
	if (o->sync || !strcmp(o->mode, "writebehind"))
		return db_write_sync(o, fd, bufs);
	unsigned freeb[DB_MAX_INFLIGHT], nfree = o->inflight;
	for (unsigned i = 0; i < o->inflight; i++)
		freeb[i] = i;
	size_t off = 0, done = 0;
	while (done < o->total) {
		for (; nfree && off + o->block <= o->total; off += o->block) {
			nfree--;
			db_prep(ring, o, fd, bufs[freeb[nfree]], freeb[nfree], off);
		}
		io_uring_submit(ring);
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(ring, &cqe);
		while (r == 0) {
			if (cqe->res != (int)o->block) {
				fprintf(stderr, "disk_bench: write returned %d\n", cqe->res);
				return -1;
			}
			freeb[nfree++] = (unsigned)(uintptr_t)io_uring_cqe_get_data(cqe);
			done += o->block;
			io_uring_cqe_seen(ring, cqe);
			r = io_uring_peek_cqe(ring, &cqe);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct db_opts o;
	if (db_parse(argc, argv, &o) < 0) {
		fprintf(stderr,
		        "usage: disk_bench FILE direct|dontcache|buffered BLOCK_KIB IN_FLIGHT "
		        "TOTAL_MIB [--no-prealloc] [--keep-size] [--overwrite] [--fixed] [--sync] "
		        "[--shift N]\n");
		return 2;
	}
	int fd = open(
	    o.path, O_WRONLY | O_CREAT | O_EXCL | (strcmp(o.mode, "direct") ? 0 : O_DIRECT), 0600);
	if (fd < 0) {
		perror("disk_bench: open (the file must not exist)");
		return 1;
	}
	struct io_uring ring;
	char *bufs[DB_MAX_INFLIGHT];
	struct iovec iov[DB_MAX_INFLIGHT];
	int rc = 1;
	if (o.prealloc && fallocate(fd, o.keep_size ? FALLOC_FL_KEEP_SIZE : 0, 0,
	                            (off_t)(o.total + o.shift)) != 0)
		perror("disk_bench: fallocate");
	if (io_uring_queue_init(o.inflight * 2, &ring, 0) < 0)
		goto out;
	for (unsigned i = 0; i < o.inflight; i++) {
		if (posix_memalign((void **)&bufs[i], 4096, o.block) != 0)
			goto out;
		memset(bufs[i], (int)i + 1, o.block);
		iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = o.block};
	}
	if (o.fixed && (io_uring_register_buffers(&ring, iov, o.inflight) < 0 ||
	                io_uring_register_files(&ring, &fd, 1) < 0))
		goto out;
	/* --overwrite: the same writes once first, untimed, made durable and
	 * their pages dropped, so the timed pass finds written blocks. */
	if (o.overwrite && (db_write_all(&ring, &o, fd, bufs) < 0 || fdatasync(fd) != 0 ||
	                    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0))
		goto out;
	double t0 = db_now(), c0 = db_cpu();
	if (db_write_all(&ring, &o, fd, bufs) < 0)
		goto out;
	double t1 = db_now();
	fdatasync(fd);
	double t2 = db_now(), cpu = db_cpu() - c0, mb = (double)o.total / 1e6;
	printf("%-9s block %5zu KiB in flight %3u%s%s%s%s%s%s: %6.0f MB/s to the last completion, "
	       "%6.0f MB/s with fdatasync; CPU %.2f s = %.2f ns per 32 bytes\n",
	       o.mode, o.block >> 10, o.inflight, o.prealloc ? "" : " no-prealloc",
	       o.prealloc && o.keep_size ? " keep-size" : "", o.sync ? " sync" : "",
	       o.overwrite ? " overwrite" : "", o.fixed ? " fixed" : "", o.shift ? " shifted" : "",
	       mb / (t1 - t0), mb / (t2 - t0), cpu, cpu * 1e9 / ((double)o.total / 32));
	rc = 0;
out:
	close(fd);
	unlink(o.path);
	return rc;
}
