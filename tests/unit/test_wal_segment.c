/*
 * The segment writer end to end: N events through io_uring into
 * preallocated segments, finalize, then an independent check of the bytes
 * (header, events, footer, CRC-32 with zlib, truncated tail). Also:
 * finalize of an unfinished file with a zeroed preallocated tail (what
 * `ada recover` does), appending leftovers, the flush-policy parser and the
 * latency histogram.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "atf.h"
#include "cidx.h"
#include "wal.h"
#include "wal_internal.h"

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	/* ADA_TEST_WAL_DIR=/dev/shm (the .tmpfs tests): files on tmpfs, written
	 * in the calling thread (segment.c, wal_buf_write_inline) */
	const char *dir = getenv("ADA_TEST_WAL_DIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/ada_wal_seg_XXXXXX", dir && *dir ? dir : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The files are on tmpfs, whose steps below 1 MiB double from 16 KiB
 * (grow.c), whichever path writes them (segment.c, inline_write). */
static bool test_on_tmpfs(void)
{
	struct statfs sf;
	return statfs(tmpdir, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

static struct atf_index_event ev_make(uint64_t i)
{
	struct atf_index_event e = {
	    .timestamp_ns = 1000 + i * 7,
	    .function_id = (3ull << 32) | (i % 1000),
	    .thread_id = 4242,
	    .event_kind = (uint32_t)(i % 2 ? ATF_EVENT_RETURN : ATF_EVENT_CALL),
	    .call_depth = 1,
	    .detail_seq = ATF_NO_DETAIL,
	};
	return e;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
}

/* Checks a finalized index file holding events ev_make(first..first+n). */
static void check_file(const char *path, uint64_t n, uint64_t first)
{
	size_t len;
	uint8_t *buf = slurp(path, &len);
	assert_int_equal(len, 64 + n * 32 + 64);
	struct atf_index_header h;
	struct atf_index_footer f;
	memcpy(&h, buf, 64);
	memcpy(&f, buf + len - 64, 64);
	assert_memory_equal(h.magic, "ATI2", 4);
	assert_int_equal(h.event_size, 32);
	assert_int_equal(h.event_count, (uint32_t)n);
	assert_int_equal(h.events_offset, 64);
	assert_int_equal(h.footer_offset, 64 + n * 32);
	assert_int_equal(h.clock_type, ATF_CLOCK_BOOTTIME);
	assert_int_equal(h.os, ATF_OS_LINUX);
	assert_memory_equal(f.magic, "2ITA", 4);
	assert_int_equal(f.event_count, n);
	assert_int_equal(f.bytes_written, n * 32);
	assert_int_equal(f.checksum, (uint32_t)crc32(0, buf + 64, (uInt)(n * 32)));
	if (n) {
		struct atf_index_event e0 = ev_make(first), el = ev_make(first + n - 1);
		assert_int_equal(h.time_start_ns, e0.timestamp_ns);
		assert_int_equal(h.time_end_ns, el.timestamp_ns);
		assert_int_equal(f.time_start_ns, e0.timestamp_ns);
	}
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event e = ev_make(first + i);
		assert_memory_equal(buf + 64 + i * 32, &e, 32);
	}
	free(buf);
}

static void write_events(struct ada_wal_file *f, uint64_t from, uint64_t n, size_t chunk)
{
	struct atf_index_event *tmp = malloc(chunk * sizeof(*tmp));
	for (uint64_t i = 0; i < n;) {
		size_t k = n - i < chunk ? (size_t)(n - i) : chunk;
		for (size_t j = 0; j < k; j++)
			tmp[j] = ev_make(from + i + j);
		assert_int_equal(ada_wal_file_append(f, tmp, k), k);
		i += k;
	}
	free(tmp);
}

static void test_write_finalize(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	/* small buffers and segments: many writes in flight, several segments */
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/index.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 256 * 1024};
	o.flush.mode = ADA_FLUSH_BYTES;
	o.flush.value = 100000;
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	struct ada_wal_file *dup;
	assert_int_equal(ada_wal_file_open(io, path, &o, &dup), -17 /* EEXIST */);
	const uint64_t n = 100003; /* ~3.2 MB: 12+ segments, 49 buffers */
	write_events(f, 0, n, 777);
	ada_wal_io_submit_stale(io, true);
	ada_wal_io_reap(io, false);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.events, n);
	assert_int_equal(s.bytes, 64 + n * 32 + 64);
	assert_int_equal(s.lost, 0);
	check_file(path, n, 0);
	assert_true(ada_lat_hist_quantile(ada_wal_io_latency(io), 0.5) > 0);
	ada_wal_io_free(io);
	unlink(path);
}

/* Past its first 1 MiB a file asks for its next segment through io_uring
 * once three quarters of the current one are used (segment.c,
 * wal_grow_ahead), so
 * the drain never waits in fallocate for the file's writes in flight:
 * the allocation runs ahead of the events by a segment, the segments
 * are counted as before, and finalize cuts the tail allocated ahead. */
static void test_grow_ahead(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/index.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 1 << 20};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	/* 64 KiB, then up to 1 MiB: allocated when needed, as before. */
	const uint64_t first = (768 * 1024 - 64) / 32 - 4096;
	write_events(f, 0, first, 1000);
	assert_int_equal(ada_wal_file_disk_bytes(f), 1 << 20);
	/* Past three quarters of the 1 MiB: the next MiB is asked for ahead. */
	write_events(f, first, 8192, 1000);
	while (ada_wal_file_disk_bytes(f) < 2u << 20)
		assert_true(ada_wal_io_reap(io, true) > 0);
	assert_int_equal(ada_wal_file_disk_bytes(f), 2 << 20);
	assert_int_equal(ada_wal_io_open_bytes(io), 2 << 20);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 2 << 20);
	/* Up to 2.83 MiB of events: 3 MiB entered, a fourth allocated ahead. */
	const uint64_t n = (2900 * 1024 - 64) / 32;
	write_events(f, first + 8192, n - first - 8192, 1000);
	while (ada_wal_file_disk_bytes(f) < 4u << 20)
		assert_true(ada_wal_io_reap(io, true) > 0);
	ada_wal_io_submit_stale(io, true);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.events, n);
	/* Entered by the events: 64 KiB (4 KiB blocks, one segment), to 1
	 * MiB, two of 1 MiB (on tmpfs 64 KiB doubling to 1 MiB: five, then
	 * the two); the one allocated ahead and never entered is cut, not
	 * counted. */
	assert_int_equal(s.segments, test_on_tmpfs() ? 7 : 4);
	assert_int_equal(ada_wal_io_open_bytes(io), 0);
	check_file(path, n, 0);
	ada_wal_io_free(io);
	unlink(path);
}

/* A short file (a short thread's or a subshell's few KiB of index) is
 * allocated a 4 KiB block at a time on every file system (grow.c
 * wal_small_step): finalize's ftruncate then frees no block it never
 * wrote, which on ext4 with `discard` cost ~1 ms a thread (64 KiB first
 * steps). A compact file takes no more events per reserve than fit in
 * its blocks at their longest (wal_cidx_small): its worst-case bound
 * (~63 bytes an event, 1.7 KiB of block openings) would allocate blocks
 * its 3-5 bytes an event never fill. */
static void test_first_step(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/index.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 1 << 20};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	assert_int_equal(ada_wal_file_disk_bytes(f), 4096);
	write_events(f, 0, 200, 100); /* 6.4 KB */
	ada_wal_io_submit_stale(io, true);
	assert_int_equal(ada_wal_file_disk_bytes(f), 8192); /* 6.5 KB with header and footer */
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.segments, 1);
	check_file(path, 200, 0);
	unlink(path);
	/* Compact: 400 events, ring-sized batches, in one block. */
	o.index_format = ADA_INDEX_COMPACT;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	const uint64_t n = 400;
	write_events(f, 0, n, 200);
	ada_wal_io_submit_stale(io, true);
	assert_int_equal(ada_wal_file_disk_bytes(f), 4096);
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.events, n);
	assert_int_equal(s.lost, 0);
	assert_int_equal(s.segments, 1);
	assert_true(s.bytes > 64 && s.bytes <= 4096);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal((uint64_t)st.st_size, s.bytes);
	assert_true(st.st_blocks * 512 <= 4096); /* nothing allocated past it */
	size_t len;
	uint8_t *buf = slurp(path, &len);
	struct ada_cidx_dec *d;
	assert_int_equal(ada_cidx_dec_open(buf, len, 0, &d), 0);
	assert_int_equal(ada_cidx_dec_count(d), n);
	struct atf_index_event *all = calloc(n, sizeof(*all));
	assert_int_equal(ada_cidx_dec_all(d, all), 0);
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event e = ev_make(i);
		assert_memory_equal(&all[i], &e, sizeof(e));
	}
	free(all);
	ada_cidx_dec_free(d);
	free(buf);
	ada_wal_io_free(io);
	unlink(path);
}

/* Under a disk budget no segment is allocated ahead past the rotation
 * size (ahead_limit): the file grows there when its events need it, as
 * before, so the files being written take no more of the budget. */
static void test_grow_ahead_limit(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/index.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 1 << 20,
	                              .ahead_limit = 2 << 20};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	/* 1.9 MiB of events: the second MiB came ahead (within the limit),
	 * the third may not. */
	const uint64_t n = (1900 * 1024 - 64) / 32;
	write_events(f, 0, n, 1000);
	ada_wal_io_submit_stale(io, true);
	while (ada_wal_io_reap(io, true) > 0)
		;
	assert_int_equal(ada_wal_file_disk_bytes(f), 2 << 20);
	/* Past it: grown when needed. */
	write_events(f, n, 8192, 1000);
	assert_int_equal(ada_wal_file_disk_bytes(f), 3 << 20);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.segments,
	                 test_on_tmpfs() ? 7 : 4); /* tmpfs: 64 KiB, doubling to 1 MiB in four */
	check_file(path, n + 8192, 0);
	ada_wal_io_free(io);
	unlink(path);
}

/* A segment ahead takes only what the disk budget has left (the drain
 * sets it, ada_wal_io_set_ahead_room): with no room the file grows when
 * its events need it, as before; with room, ahead, and the room shrinks. */
static void test_grow_ahead_room(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/index.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 1 << 20};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	ada_wal_io_set_ahead_room(io, 0);
	const uint64_t n = (900 * 1024 - 64) / 32; /* past 3/4 of the first MiB */
	write_events(f, 0, n, 1000);
	ada_wal_io_submit_stale(io, true);
	while (ada_wal_io_reap(io, true) > 0)
		;
	assert_int_equal(ada_wal_file_disk_bytes(f), 1 << 20);
	ada_wal_io_set_ahead_room(io, (1 << 20) + 4096);
	write_events(f, n, 100, 100);
	while (ada_wal_file_disk_bytes(f) < 2u << 20)
		assert_true(ada_wal_io_reap(io, true) > 0);
	ada_wal_io_submit_stale(io, true);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	/* the one ahead never entered; tmpfs: 64 KiB, doubling to 1 MiB in four */
	assert_int_equal(s.segments, test_on_tmpfs() ? 5 : 2);
	check_file(path, n + 100, 0);
	ada_wal_io_free(io);
	unlink(path);
}

/* Near the disk budget a file grows by small steps (near_budget_step, or
 * a quarter of the room when that is more), never a whole segment it
 * would leave mostly unwritten: with no room the events' growth is one
 * small step, not the 1 MiB segment; with little room the step ahead is
 * small too; with much room it is the whole segment again. */
static void test_grow_near_budget(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/index.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 1 << 20,
	                              .near_budget_step = 64 * 1024};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	ada_wal_io_set_ahead_room(io, 0);
	const uint64_t n = (1024 * 1024 + 16 * 1024) / 32; /* just past the first MiB */
	write_events(f, 0, n, 1000);
	ada_wal_io_submit_stale(io, true);
	while (ada_wal_io_reap(io, true) > 0)
		;
	assert_int_equal(ada_wal_file_disk_bytes(f), (1 << 20) + 64 * 1024);
	/* Little room: the step ahead is near_budget_step (room / 4 is less). */
	ada_wal_io_set_ahead_room(io, 200 * 1024);
	write_events(f, n, 1024, 100); /* 32 KiB more: past 3/4 of that step */
	while (ada_wal_file_disk_bytes(f) < (1 << 20) + 128 * 1024)
		assert_true(ada_wal_io_reap(io, true) > 0);
	ada_wal_io_submit_stale(io, true);
	while (ada_wal_io_reap(io, true) > 0)
		;
	assert_int_equal(ada_wal_file_disk_bytes(f), (1 << 20) + 128 * 1024);
	/* Much room: whole segments ahead again. */
	ada_wal_io_set_ahead_room(io, 64u << 20);
	write_events(f, n + 1024, 2048, 100); /* into the step ahead, past 3/4 of it */
	while (ada_wal_file_disk_bytes(f) < (2 << 20) + 128 * 1024)
		assert_true(ada_wal_io_reap(io, true) > 0);
	ada_wal_io_submit_stale(io, true);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	check_file(path, n + 1024 + 2048, 0);
	ada_wal_io_free(io);
	unlink(path);
}

/* ADA_WAL_URING_TMPFS=1 changes who writes a tmpfs file (io_uring's
 * worker, not the calling thread), not what the file system is: its
 * steps stay tmpfs's (16 KiB first) and it takes no O_DIRECT. */
static char uring_dir[] = "/dev/shm/ada_wal_uring_XXXXXX";
static bool uring_made;

/* Removes the directory of test_uring_tmpfs_is_tmpfs, failed or not. */
static int uring_teardown(void **state)
{
	(void)state;
	char cmd[64];
	unsetenv("ADA_WAL_URING_TMPFS");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", uring_dir);
	return !uring_made || system(cmd) == 0 ? 0 : -1;
}

static void test_uring_tmpfs_is_tmpfs(void **state)
{
	(void)state;
	char *dir = uring_dir, path[64];
	struct statfs sf;
	if (!(uring_made = mkdtemp(dir) != NULL))
		skip();
	if (statfs(dir, &sf) != 0 || sf.f_type != TMPFS_MAGIC)
		skip();
	setenv("ADA_WAL_URING_TMPFS", "1", 1);
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 64 * 1024, .max_buffers = 8, .direct = 1};
	int rc = ada_wal_io_new(&io_o, &io);
	unsetenv("ADA_WAL_URING_TMPFS");
	assert_int_equal(rc, 0);
	snprintf(path, sizeof(path), "%s/index.atf", dir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 1 << 20};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	assert_true(f->tmpfs);
	assert_false(f->inline_write); /* io_uring's, as asked */
	assert_false(f->direct);
	write_events(f, 0, 200, 100);
	ada_wal_io_submit_stale(io, true);
	assert_int_equal(ada_wal_file_disk_bytes(f), 8 * 1024); /* tmpfs's steps */
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	check_file(path, 200, 0);
	ada_wal_io_free(io);
}

/* A file system that refuses uncached writes (tmpfs answers RWF_DONTCACHE
 * with -EOPNOTSUPP): every write in flight when the refusal comes is
 * written again without it; nothing is lost, the file is exact. Many
 * small buffers so that several are in flight at once. */
static void test_dontcache_refused(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada_wal_dc_XXXXXX", path[64];
	if (!mkdtemp(dir)) {
		print_message("skip: no /dev/shm: the refusal path is not exercised here\n");
		skip();
	}
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 4096, .max_buffers = 32};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	snprintf(path, sizeof(path), "%s/index.atf", dir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .segment_bytes = 256 * 1024};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	const uint64_t n = 20011;
	write_events(f, 0, n, 1000);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.events, n);
	assert_int_equal(s.lost, 0);
	check_file(path, n, 0);
	ada_wal_io_free(io);
	unlink(path);
	rmdir(dir);
}

/* More files than staging buffers, each holding a partly filled one: the
 * pool must send staged buffers out instead of losing events. */
static void test_more_files_than_buffers(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 4096, .max_buffers = 2, .stage_ms = 60000};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	struct ada_wal_file *f[5];
	char path[5][300];
	struct ada_wal_file_opts o = {
	    .thread_id = 7, .clock_type = ATF_CLOCK_BOOTTIME, .arch = ATF_ARCH_X86_64};
	for (int i = 0; i < 5; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/many%d.atf", tmpdir, i);
		assert_int_equal(ada_wal_file_open(io, path[i], &o, &f[i]), 0);
	}
	for (uint64_t round = 0; round < 300; round++)
		for (int i = 0; i < 5; i++) {
			struct atf_index_event e = ev_make(round);
			assert_int_equal(ada_wal_file_append(f[i], &e, 1), 1);
		}
	for (int i = 0; i < 5; i++) {
		struct ada_wal_file_summary s;
		assert_int_equal(ada_wal_file_finalize(f[i], &s), 0);
		assert_int_equal(s.lost, 0);
		check_file(path[i], 300, 0);
		unlink(path[i]);
	}
	ada_wal_io_free(io);
}

/* The staging pool gives back what a peak of open files made (issue 35:
 * the soak's recorder kept every buffer of its busiest moment): a buffer
 * is freed once it stayed free over a whole interval between two trims,
 * never one a file holds, and the pool makes new ones for the next peak. */
static void test_pool_trim(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 4096, .max_buffers = 16, .stage_ms = 60000};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	struct ada_wal_file_opts o = {
	    .thread_id = 7, .clock_type = ATF_CLOCK_BOOTTIME, .arch = ATF_ARCH_X86_64};
	struct ada_wal_file *f[8];
	char path[8][300];
	uint32_t made, free_now;
	for (int peak = 0; peak < 2; peak++) {
		for (int i = 0; i < 8; i++) {
			snprintf(path[i], sizeof(path[i]), "%s/peak%d.atf", tmpdir, i);
			assert_int_equal(ada_wal_file_open(io, path[i], &o, &f[i]), 0);
			struct atf_index_event e = ev_make((uint64_t)i);
			assert_int_equal(ada_wal_file_append(f[i], &e, 1), 1);
		}
		/* Eight files each stage a buffer: none is free, none goes. */
		ada_wal_io_buffers(io, &made, &free_now);
		assert_true(made >= 8);
		assert_int_equal(ada_wal_io_trim(io), 0);
		ada_wal_io_buffers(io, &made, &free_now);
		assert_true(made >= 8);
		/* Seven end: their buffers are free, but only from now on. */
		for (int i = 1; i < 8; i++) {
			struct ada_wal_file_summary s;
			assert_int_equal(ada_wal_file_finalize(f[i], &s), 0);
			check_file(path[i], 1, (uint64_t)i);
			unlink(path[i]);
		}
		assert_int_equal(ada_wal_io_trim(io), 0);
		/* An interval in which one more event came to the open file:
		 * its buffer stays, every buffer no one took is freed. */
		struct atf_index_event e = ev_make(1);
		assert_int_equal(ada_wal_file_append(f[0], &e, 1), 1);
		ada_wal_io_buffers(io, &made, &free_now);
		uint32_t was = made, unused = free_now;
		assert_true(unused >= 7);
		assert_int_equal(ada_wal_io_trim(io), unused);
		ada_wal_io_buffers(io, &made, &free_now);
		assert_int_equal(made, was - unused);
		assert_int_equal(free_now, 0);
		assert_true(made >= 1);
		struct ada_wal_file_summary s;
		assert_int_equal(ada_wal_file_finalize(f[0], &s), 0);
		assert_int_equal(s.lost, 0);
		unlink(path[0]);
	}
	/* Everything ended: two trims leave nothing made. */
	(void)ada_wal_io_trim(io);
	(void)ada_wal_io_trim(io);
	ada_wal_io_buffers(io, &made, &free_now);
	assert_int_equal(made, 0);
	ada_wal_io_free(io);
}

static void test_empty_file(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	assert_int_equal(ada_wal_io_new(NULL, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/empty.atf", tmpdir);
	struct ada_wal_file_opts o = {
	    .thread_id = 1, .clock_type = ATF_CLOCK_BOOTTIME, .arch = ATF_ARCH_X86_64};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	assert_int_equal(ada_wal_file_finalize(f, NULL), 0);
	check_file(path, 0, 0);
	ada_wal_io_free(io);
	unlink(path);
}

/* An unfinished file: header placeholder, events, zeroed preallocated tail
 * (as left by a recorder that died), then finalized from disk, with
 * leftovers appended. */
static void test_finalize_zero_tail(void **state)
{
	(void)state;
	char path[300];
	snprintf(path, sizeof(path), "%s/crashed.atf", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	struct atf_index_header h = {0};
	memcpy(h.magic, "ATI2", 4);
	h.endian = 1;
	h.version = 1;
	h.arch = ATF_ARCH_X86_64;
	h.os = ATF_OS_LINUX;
	h.thread_id = 4242;
	h.clock_type = ATF_CLOCK_BOOTTIME;
	h.event_size = 32;
	h.events_offset = 64;
	assert_int_equal(pwrite(fd, &h, 64, 0), 64);
	const uint64_t n = 5000;
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event e = ev_make(i);
		assert_int_equal(pwrite(fd, &e, 32, (off_t)(64 + i * 32)), 32);
	}
	assert_int_equal(ftruncate(fd, 1 << 20), 0); /* the zero tail */
	close(fd);
	struct atf_index_event extra[10];
	for (int i = 0; i < 10; i++)
		extra[i] = ev_make(n + (uint64_t)i);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_finalize_path(path, extra, 10, &s), 0);
	assert_int_equal(s.events, n + 10);
	check_file(path, n + 10, 0);
	/* finalizing a final file again changes nothing */
	assert_int_equal(ada_wal_finalize_path(path, NULL, 0, &s), 0);
	assert_int_equal(s.events, n + 10);
	check_file(path, n + 10, 0);
	/* and appending to a final file extends it validly */
	struct atf_index_event more = ev_make(n + 10);
	assert_int_equal(ada_wal_finalize_path(path, &more, 1, &s), 0);
	check_file(path, n + 11, 0);
	unlink(path);
}

/* Garbage after the events (a torn write) ends the scan; not an index
 * file at all is -EPROTO. */
static void test_finalize_torn(void **state)
{
	(void)state;
	char path[300];
	snprintf(path, sizeof(path), "%s/torn.atf", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct atf_index_header h = {0};
	memcpy(h.magic, "ATI2", 4);
	h.event_size = 32;
	h.events_offset = 64;
	assert_int_equal(pwrite(fd, &h, 64, 0), 64);
	for (uint64_t i = 0; i < 100; i++) {
		struct atf_index_event e = ev_make(i);
		assert_int_equal(pwrite(fd, &e, 32, (off_t)(64 + i * 32)), 32);
	}
	assert_int_equal(pwrite(fd, "garbage!", 8, 64 + 100 * 32 + 8), 8);
	assert_int_equal(pwrite(fd, "x", 1, 64 + 100 * 32 + 100), 1);
	close(fd);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_finalize_path(path, NULL, 0, &s), 0);
	assert_int_equal(s.events, 100);
	check_file(path, 100, 0);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(
	    write(fd, "not an index file at all, sorry.................................", 64), 64);
	close(fd);
	assert_int_equal(ada_wal_finalize_path(path, NULL, 0, &s), -71 /* EPROTO */);
	unlink(path);
}

static void test_flush_parse(void **state)
{
	(void)state;
	struct ada_flush_policy p = {0};
	assert_int_equal(ada_flush_parse("off", &p), 0);
	assert_int_equal(p.mode, ADA_FLUSH_OFF);
	assert_int_equal(ada_flush_parse("interval:250", &p), 0);
	assert_int_equal(p.mode, ADA_FLUSH_INTERVAL);
	assert_int_equal(p.value, 250);
	assert_int_equal(ada_flush_parse("bytes:4m", &p), 0);
	assert_int_equal(p.mode, ADA_FLUSH_BYTES);
	assert_int_equal(p.value, 4u << 20);
	assert_int_equal(ada_flush_parse("rotate", &p), 0);
	assert_int_equal(p.mode, ADA_FLUSH_ROTATE);
	assert_int_equal(ada_flush_parse("interval:", &p), -22);
	assert_int_equal(ada_flush_parse("interval:-5", &p), -22);
	assert_int_equal(ada_flush_parse("bytes:12q", &p), -22);
	assert_int_equal(ada_flush_parse("sometimes", &p), -22);
}

static void test_latency_hist(void **state)
{
	(void)state;
	struct ada_lat_hist h;
	memset(&h, 0, sizeof(h));
	assert_int_equal(ada_lat_hist_quantile(&h, 0.5), 0);
	for (uint64_t i = 1; i <= 1000; i++)
		ada_lat_hist_add(&h, i * 1000000); /* 1..1000 ms */
	uint64_t p50 = ada_lat_hist_quantile(&h, 0.5), p99 = ada_lat_hist_quantile(&h, 0.99);
	/* buckets are 1/8 of a power of two wide: within 12.5 % */
	assert_true(p50 >= 500000000ull && p50 <= 563000000ull);
	assert_true(p99 >= 990000000ull && p99 <= 1114000000ull);
}

/* The files' CRC (ISA-L, libdeflate or zlib: whichever the build found)
 * gives zlib's crc32() values for every length 0..1100 at every alignment
 * 0..63 (ISA-L and libdeflate switch code paths at 16, 64, 256 and more
 * bytes and on alignment), chained across every split point of lengths up
 * to 600 from a non-zero seed, and over the drain's 8 KiB chunks. Where
 * the recorder clears the AVX-512 upper state after ISA-L
 * (wal_internal.h), XGETBV(1) must show the ymm/zmm upper halves clean. */
#if defined(__x86_64__)
#include <cpuid.h>
static bool crc_xinuse_ok(void)
{
	unsigned a, b, c, d;
	if (!__builtin_cpu_supports("avx512f") || __get_cpuid_max(0, NULL) < 0xd)
		return false;
	__cpuid_count(0xd, 1, a, b, c, d);
	return (a >> 2) & 1; /* XGETBV with ECX = 1 */
}
static uint64_t crc_xinuse(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}
#endif

static void test_crc32_matches_zlib(void **state)
{
	(void)state;
	enum { MAXLEN = 1100, ALIGN = 64, BIG = 4 * 8192 };
	static unsigned char buf[BIG + ALIGN];
	uint64_t x = 0x9E3779B97F4A7C15ull; /* xorshift: fixed, not all-zero bytes */
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	const char *impl = ada_wal_crc32_impl();
	assert_true(!strcmp(impl, "isa-l") || !strcmp(impl, "libdeflate") || !strcmp(impl, "zlib"));
	for (size_t a = 0; a < ALIGN; a++)
		for (size_t n = 0; n <= MAXLEN; n++)
			assert_int_equal(ada_wal_crc32(0, buf + a, n),
			                 (uint32_t)crc32(0, buf + a, (uInt)n));
	for (size_t n = 0; n <= 600; n += 5) {
		uint32_t want = (uint32_t)crc32(0x12345678u, buf + 3, (uInt)n);
		for (size_t k = 0; k <= n; k++)
			assert_int_equal(ada_wal_crc32(ada_wal_crc32(0x12345678u, buf + 3, k),
			                               buf + 3 + k, n - k),
			                 want);
	}
	for (size_t a = 0; a < ALIGN; a += 8) { /* the drain: 8 KiB chunks, chained */
		uint32_t c = 0;
		for (size_t k = 0; k < BIG; k += 8192)
			c = ada_wal_crc32(c, buf + a + k, 8192);
		assert_int_equal(c, (uint32_t)crc32(0, buf + a, BIG));
	}
#if defined(__x86_64__)
	if (crc_xinuse_ok()) {
		(void)ada_wal_crc32(0, buf, 8192);
		uint64_t in_use = crc_xinuse();
		/* bit 2: ymm upper halves, bit 6: zmm0-15 upper halves */
		assert_int_equal(in_use & (1u << 2 | 1u << 6), 0);
	}
#endif
}

/* A compact file on ext4 or xfs is written in the calling thread with
 * plain buffered writes (segment.c, wal_cached_open): each buffer sent
 * is durable when the call returns (no write waits in io_uring), and each
 * flush drops the pages the flush before it wrote back (wal_drop_behind):
 * page 0 (the header, rewritten at finalize) and the pages not yet
 * flushed stay. The file reads back exact. Skipped on other file systems
 * (then the files go through io_uring, as the other tests check). */
static void test_compact_inline_cached(void **state)
{
	(void)state;
	struct statfs sf;
	const char *u = getenv("ADA_WAL_CX_URING");
	if (statfs(tmpdir, &sf) != 0 ||
	    (sf.f_type != EXT4_SUPER_MAGIC && sf.f_type != XFS_SUPER_MAGIC) ||
	    (u && !strcmp(u, "1"))) {
		print_message("skip: %s is not on ext4 or xfs\n", tmpdir);
		skip();
	}
	struct ada_wal_io *io;
	struct ada_wal_io_opts io_o = {.buffer_bytes = 16 * 1024, .max_buffers = 8};
	assert_int_equal(ada_wal_io_new(&io_o, &io), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/cx.atf", tmpdir);
	struct ada_wal_file_opts o = {.thread_id = 4242,
	                              .clock_type = ATF_CLOCK_BOOTTIME,
	                              .arch = ATF_ARCH_X86_64,
	                              .index_format = ADA_INDEX_COMPACT};
	o.flush.mode = ADA_FLUSH_BYTES;
	o.flush.value = 64 * 1024;
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_open(io, path, &o, &f), 0);
	assert_int_equal(ada_wal_io_inline_files(io), 1);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	const uint64_t n = 300000, chunk = 1000;
	for (uint64_t i = 0; i < n; i += chunk) {
		write_events(f, i, chunk, chunk);
		ada_wal_file_submit(f);
		assert_int_equal(ada_wal_file_durable(f), i + chunk); /* written in the call */
		if (i % (20 * chunk) == 0)
			assert_int_equal(fdatasync(fd), 0); /* the drop finds them clean */
	}
	uint64_t dropped = f->dropped_end, end = ada_wal_file_bytes(f);
	assert_true(dropped >= 256 * 1024 && dropped < end);
	void *m = mmap(NULL, (size_t)end, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	size_t pages = (size_t)((end + 4095) / 4096);
	unsigned char *in = calloc(pages, 1);
	assert_int_equal(mincore(m, (size_t)end, in), 0);
	size_t resident = 0;
	for (size_t p = 1; p < dropped / 4096; p++)
		resident += in[p] & 1;
	assert_int_equal(resident, 0);
	assert_true(in[0] & 1);                /* the header's page stays */
	assert_true(in[(end - 1) / 4096] & 1); /* written since the last flush */
	munmap(m, (size_t)end);
	free(in);
	close(fd);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	assert_int_equal(s.events, n);
	assert_int_equal(s.lost, 0);
	ada_wal_io_free(io);
	struct ada_atf_index *ix;
	assert_int_equal(ada_atf_index_open(path, 0, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), n);
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event e = ev_make(i);
		assert_memory_equal(ada_atf_index_get(ix, i), &e, sizeof(e));
	}
	ada_atf_index_free(ix);
	unlink(path);
}

/* ada_wal_io_hold: a lock on the held descriptor outlives the
 * descriptor itself (closed, as a killed recorder's are) until the ring
 * goes, and goes with it: what `ada recover` waits on. */
static void test_hold_keeps_lock(void **state)
{
	(void)state;
	struct ada_wal_io *io = NULL;
	assert_int_equal(ada_wal_io_new(NULL, &io), 0);
	int held = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int other = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(held >= 0 && other >= 0);
	assert_int_equal(flock(held, LOCK_SH | LOCK_NB), 0);
	assert_int_equal(ada_wal_io_hold(io, held), 0);
	close(held);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	ada_wal_io_free(io);
	/* The ring's teardown is the kernel's, after the close: bounded. */
	int rc = -1;
	for (int i = 0; i < 5000 && rc != 0; i++) {
		rc = flock(other, LOCK_EX | LOCK_NB);
		if (rc != 0)
			usleep(1000);
	}
	assert_int_equal(rc, 0);
	close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_finalize),
	    cmocka_unit_test(test_first_step),
	    cmocka_unit_test(test_grow_ahead),
	    cmocka_unit_test(test_grow_ahead_limit),
	    cmocka_unit_test(test_grow_ahead_room),
	    cmocka_unit_test(test_grow_near_budget),
	    cmocka_unit_test(test_more_files_than_buffers),
	    cmocka_unit_test(test_pool_trim),
	    cmocka_unit_test(test_empty_file),
	    cmocka_unit_test(test_finalize_zero_tail),
	    cmocka_unit_test(test_finalize_torn),
	    cmocka_unit_test(test_flush_parse),
	    cmocka_unit_test(test_latency_hist),
	    cmocka_unit_test(test_dontcache_refused),
	    cmocka_unit_test(test_compact_inline_cached),
	    cmocka_unit_test_teardown(test_uring_tmpfs_is_tmpfs, uring_teardown),
	    cmocka_unit_test(test_crc32_matches_zlib),
	    cmocka_unit_test(test_hold_keeps_lock),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
