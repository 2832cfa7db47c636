/*
 * The drain side of the detail lane (src/recorder, src/wal): the CRC-32 fold of a
 * 4-byte patch, the detail.atf writer against the format library's own
 * writer (golden bytes), detail_seq back-patches in the staging buffer, in
 * flight and on disk (the footer CRC stays right: validated), in buffers
 * held back for them (wal_file_hold: byte for byte), and
 * wal_detail_persist() end to end on a real arena: ring position ->
 * index_seq, links both ways, windows, the high-water mark, deferred
 * records and records whose index event is in an earlier generation.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "atf.h"
#include "ring.h"
#include "detail_internal.h"
#include "detail_pd.h"
#include "recorder_internal.h"
#include "wal_internal.h"

static char tmpdir[256];
static int tmpfd = -1;

static int setup(void **state)
{
	(void)state;
	/* ADA_TEST_WAL_DIR=/dev/shm (the .tmpfs tests): files on tmpfs, written
	 * in the calling thread (segment.c, wal_buf_write_inline) */
	const char *dir = getenv("ADA_TEST_WAL_DIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/ada_wal_detail_XXXXXX", dir && *dir ? dir : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	tmpfd = open(tmpdir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	return tmpfd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	close(tmpfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
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

static void count_problem(void *ctx, enum ada_atf_severity sev, const char *path, uint64_t off,
                          const char *msg)
{
	(void)ctx;
	(void)sev;
	print_message("validate: %s @%llu: %s\n", path, (unsigned long long)off, msg);
}

static struct ada_atf_report report(void)
{
	return (struct ada_atf_report){.fn = count_problem};
}

/* ---- CRC fold ---- */

static void test_crc_delta(void **state)
{
	(void)state;
	enum { N = 10000 };
	uint8_t *b = malloc(N);
	srand(7);
	for (int i = 0; i < N; i++)
		b[i] = (uint8_t)rand();
	uint32_t crc = (uint32_t)crc32(0, b, N);
	for (int t = 0; t < 200; t++) {
		uint64_t k = (uint64_t)rand() % (N - 3);
		uint32_t old, v = (uint32_t)rand();
		memcpy(&old, b + k, 4);
		memcpy(b + k, &v, 4);
		crc ^= wal_crc32_patch_delta(old ^ v, k, N);
		assert_int_equal(crc, (uint32_t)crc32(0, b, N));
	}
	free(b);
}

/* The batched fold (wal_crcbat_add/fold) on two files' events sections:
 * patches at random offsets and in random order, dense runs and sparse
 * ones (folded early), the batch moving between the files, the files
 * growing between patches. Each file's CRC must equal a full recompute
 * and the old one-combine-per-patch sum at every fold. */
static void test_crc_batch(void **state)
{
	(void)state;
	enum { CAP = 3u << 20 };
	struct ada_wal_io io;
	memset(&io, 0, sizeof(io));
	struct ada_wal_file f[2];
	uint8_t *b[2];
	uint32_t old_crc[2];
	memset(f, 0, sizeof(f));
	srand(11);
	for (int j = 0; j < 2; j++) {
		b[j] = malloc(CAP);
		for (uint32_t i = 0; i < CAP; i++)
			b[j][i] = (uint8_t)rand();
		f[j].io = &io;
		uint64_t len = (1u << 20) + (uint64_t)j * 4096;
		f[j].end = ATF_HEADER_SIZE + len;
		f[j].crc = (uint32_t)crc32(0, b[j], (uInt)len);
		old_crc[j] = f[j].crc;
	}
	uint32_t folds = 0;
	for (int t = 0; t < 20000; t++) {
		int j = (rand() % 8) == 0; /* file 1 now and then: the batch moves */
		uint64_t len = f[j].end - ATF_HEADER_SIZE;
		int kind = rand() % 100;
		if (kind == 0 && len + 65536 <= CAP) { /* the file grows */
			uint32_t n = (uint32_t)(rand() % 65536);
			f[j].crc = (uint32_t)crc32(f[j].crc, b[j] + len, n);
			old_crc[j] = (uint32_t)crc32(old_crc[j], b[j] + len, n);
			f[j].end += n;
			continue;
		}
		uint64_t k;
		if (kind < 80) /* dense: near the end, in rough order */
			k = len - 4 - (uint64_t)(rand() % (len < 8192 ? len - 3 : 8192));
		else if (kind < 95) /* anywhere, any alignment */
			k = (uint64_t)rand() % (len - 3);
		else /* the ends of the section */
			k = (kind & 1) ? 0 : len - 4;
		uint32_t old, v = (uint32_t)rand();
		memcpy(&old, b[j] + k, 4);
		memcpy(b[j] + k, &v, 4);
		wal_crcbat_add(&f[j], k, old ^ v);
		old_crc[j] ^= wal_crc32_patch_delta(old ^ v, k, len);
		if (rand() % 500 == 0) {
			wal_crcbat_fold(&io);
			folds++;
			for (int q = 0; q < 2; q++)
				if (io.crcbat_file != &f[q]) {
					uint64_t l = f[q].end - ATF_HEADER_SIZE;
					assert_int_equal(f[q].crc,
					                 (uint32_t)crc32(0, b[q], (uInt)l));
					assert_int_equal(f[q].crc, old_crc[q]);
				}
		}
	}
	assert_true(folds > 0);
	wal_crcbat_fold(&io);
	assert_null(io.crcbat_file);
	for (int j = 0; j < 2; j++) {
		uint64_t l = f[j].end - ATF_HEADER_SIZE;
		assert_int_equal(f[j].crc, (uint32_t)crc32(0, b[j], (uInt)l));
		assert_int_equal(f[j].crc, old_crc[j]);
		free(b[j]);
	}
	/* the scratch is all zeros again after the folds */
	for (uint32_t i = 0; i < WAL_CRCBAT_CAP; i++)
		if (io.crcbat[i]) {
			fail_msg("scratch byte %u not cleared", i);
		}
	free(io.crcbat);
}

/* ---- detail.atf writer: the same bytes as the format library's writer ---- */

struct rec_bytes {
	struct atf_detail_event_header h;
	struct atf_detail_function_payload p;
	uint8_t stack[64];
} __attribute__((packed));

static void rec_fill(struct rec_bytes *r, uint32_t seq, uint16_t type, uint16_t stack)
{
	memset(r, 0, sizeof(*r));
	r->p.function_id = (2ull << 32) | seq;
	for (int i = 0; i < 8; i++)
		r->p.x_regs[i] = seq * 100 + (uint64_t)i;
	r->p.lr = 0x401000 + seq;
	r->p.fp = 0x7ff0000;
	r->p.sp = 0x7ff0100 - seq * 16;
	r->p.stack_size = stack;
	for (int i = 0; i < stack; i++)
		r->stack[i] = (uint8_t)(seq + i);
	r->h = (struct atf_detail_event_header){
	    .total_length = (uint32_t)(24 + 100 + stack),
	    .event_type = type,
	    .flags = 0,
	    .index_seq = seq * 2,
	    .thread_id = 77,
	    .timestamp = 5000 + seq,
	};
}

static void test_dfile_golden(void **state)
{
	(void)state;
	struct wal_dfile *d;
	assert_int_equal(wal_dfile_open(tmpfd, "detail.atf", 77, WAL_ARCH, &d), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/golden.atf", tmpdir);
	struct ada_atf_file_info info = {
	    .thread_id = 77, .arch = ATF_ARCH_X86_64, .os = ATF_OS_LINUX};
	struct ada_atf_writer *w;
	assert_int_equal(ada_atf_writer_new(path, true, &info, &w), 0);
	static const uint16_t stacks[] = {16, 0, 64, 3, 0};
	for (uint32_t i = 0; i < 5; i++) {
		struct rec_bytes r;
		rec_fill(&r, i + 1, i % 2 ? ATF_DETAIL_FUNCTION_RETURN : ATF_DETAIL_FUNCTION_CALL,
		         stacks[i]);
		assert_int_equal(wal_dfile_append(d, &r.h, &r.p, r.stack), 0);
		assert_int_equal(ada_atf_writer_detail(w, &r.h), 0);
	}
	assert_int_equal(wal_dfile_count(d), 5);
	/* a length that does not match the payload is refused */
	struct rec_bytes bad;
	rec_fill(&bad, 9, ATF_DETAIL_FUNCTION_CALL, 8);
	bad.h.total_length++;
	assert_int_equal(wal_dfile_append(d, &bad.h, &bad.p, bad.stack), -EINVAL);
	struct wal_dfile_end end;
	assert_int_equal(wal_dfile_finish(d, &end), 0);
	assert_int_equal(end.kept, 5);
	assert_false(end.invalid);
	uint64_t bytes = end.file_bytes;
	assert_int_equal(ada_atf_writer_finish(w), 0);
	size_t la, lb;
	uint8_t *a = slurp("detail.atf", &la), *b = slurp("golden.atf", &lb);
	assert_int_equal(la, bytes);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	/* the errata's fixed points, checked by hand */
	uint64_t events = 5 * 124 + 16 + 64 + 3;
	assert_memory_equal(a, "ATD2", 4);
	assert_int_equal(a[4], 1);
	assert_int_equal(a[6], 1); /* x86_64 */
	assert_int_equal(a[7], 4); /* Linux */
	uint64_t v;
	memcpy(&v, a + 20, 8);
	assert_int_equal(v, 64); /* events_offset at 20 (errata 2) */
	memcpy(&v, a + 36, 8);
	assert_int_equal(v, events);
	memcpy(&v, a + 44, 8);
	assert_int_equal(v, 2); /* index_seq_start */
	memcpy(&v, a + 52, 8);
	assert_int_equal(v, 10); /* index_seq_end */
	assert_int_equal(la, 64 + events + 64);
	assert_memory_equal(a + 64 + events, "2DTA", 4);
	uint32_t crc;
	memcpy(&crc, a + 64 + events + 4, 4);
	assert_int_equal(crc, (uint32_t)crc32(0, a + 64, (uInt)events));
	struct ada_atf_report rep = report();
	struct ada_atf_vfile vf;
	ada_atf_validate_detail_buf("detail.atf", a, la, &rep, &vf);
	assert_int_equal(rep.errors, 0);
	free(a);
	free(b);
}

/* ---- back-patches of an index file ---- */

#define DSEQ_OFF offsetof(struct atf_index_event, detail_seq) /* in an event */

static struct atf_index_event ev_make(uint64_t i)
{
	return (struct atf_index_event){
	    .timestamp_ns = 1000 + i * 7,
	    .function_id = (3ull << 32) | (i / 2),
	    .thread_id = 4242,
	    .event_kind = (uint32_t)(i % 2 ? ATF_EVENT_RETURN : ATF_EVENT_CALL),
	    .call_depth = 1,
	    .detail_seq = ATF_NO_DETAIL,
	};
}

static struct ada_wal_file *index_open(struct ada_wal_io *io, const char *name, uint32_t tid)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	struct ada_wal_file_opts fo = {.thread_id = tid,
	                               .clock_type = ATF_CLOCK_BOOTTIME,
	                               .arch = ATF_ARCH_X86_64,
	                               .segment_bytes = 1 << 20};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_openat(io, tmpfd, name, path, &fo, &f), 0);
	return f;
}

static void append_events(struct ada_wal_file *f, uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < from + n; i++) {
		struct atf_index_event e = ev_make(i);
		assert_int_equal(ada_wal_file_append(f, &e, 1), 1);
	}
}

/* A compact file's recent window (segment_cidx.c): the last cidx_recent
 * events read back with their time, function, kind and link, the file's
 * thread; an older one, one not committed and one whose time does not fit
 * the window's 62 bits answer -ENOENT; a link stays with its event, not
 * with the slot a later event reuses. */
static void test_cidx_recent_window(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16, .max_buffers = 8, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, "c.atf");
	struct ada_wal_file_opts fo = {.thread_id = 4242,
	                               .clock_type = ATF_CLOCK_BOOTTIME,
	                               .arch = ATF_ARCH_X86_64,
	                               .segment_bytes = 1 << 20,
	                               .index_format = ADA_INDEX_COMPACT,
	                               .cidx_recent = 64};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_openat(io, tmpfd, "c.atf", path, &fo, &f), 0);
	append_events(f, 0, 200);
	struct atf_index_event e;
	for (uint64_t i = 136; i < 200; i++) {
		struct atf_index_event want = ev_make(i);
		want.call_depth = 0; /* not kept */
		assert_int_equal(wal_file_event_read(f, i, &e), 0);
		assert_memory_equal(&e, &want, sizeof(e));
	}
	assert_int_equal(wal_file_event_read(f, 135, &e), -ENOENT);
	assert_int_equal(wal_file_event_read(f, 200, &e), -ENOENT);
	assert_int_equal(wal_file_patch_detail_seq(f, 190, 7), 0);
	assert_int_equal(wal_file_event_read(f, 190, &e), 0);
	assert_int_equal(e.detail_seq, 7);
	assert_int_equal(wal_file_event_read(f, 191, &e), 0);
	assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
	append_events(f, 200, 64); /* 254 takes 190's place */
	assert_int_equal(wal_file_event_read(f, 190, &e), -ENOENT);
	assert_int_equal(wal_file_event_read(f, 254, &e), 0);
	assert_int_equal(e.timestamp_ns, ev_make(254).timestamp_ns);
	assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
	struct atf_index_event far = ev_make(264);
	far.timestamp_ns = 1ull << 62;
	assert_int_equal(ada_wal_file_append(f, &far, 1), 1);
	assert_int_equal(wal_file_event_read(f, 264, &e), -ENOENT);
	struct ada_wal_file_summary sum;
	assert_int_equal(ada_wal_file_finalize(f, &sum), 0);
	assert_int_equal(sum.events, 265);
	ada_wal_io_free(io);
}

/* The fused pass's larger room (ada_wal_file_reserve_ring): a compact
 * file gives more than its chunk only where its allocation already holds
 * the larger count's longest bytes (not in the first 64 KiB, yes once
 * the file has its 1 MiB), its chunk (dst_cap) for the general way;
 * never more than asked; an ATF v2 file as the plain reserve. */
static void test_cidx_reserve_ring(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16, .max_buffers = 8, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, "rr.atf");
	struct ada_wal_file_opts fo = {.thread_id = 4242,
	                               .clock_type = ATF_CLOCK_BOOTTIME,
	                               .arch = ATF_ARCH_X86_64,
	                               .segment_bytes = 1 << 20,
	                               .index_format = ADA_INDEX_COMPACT};
	struct ada_wal_file *f, *v2 = index_open(io, "rr2.atf", 4242);
	assert_int_equal(ada_wal_file_openat(io, tmpfd, "rr.atf", path, &fo, &f), 0);
	struct atf_index_event *dst;
	size_t cap = 0;
	/* Below 64 KiB what fits in its first 4 KiB block at the events'
	 * longest, not its chunk (segment_cidx.c wal_cidx_small). */
	size_t first = ada_wal_file_reserve_ring(f, 4096, &dst, &cap);
	assert_true(first >= WAL_CIDX_SMALL_LEAST && first < WAL_CIDX_CHUNK);
	assert_int_equal(cap, first);
	assert_int_equal(f->alloc, 4096);
	uint64_t n = 0;
	while (f->alloc < (1u << 20) && n < 400000) {
		append_events(f, n, 1000);
		n += 1000;
	}
	assert_true(f->alloc >= (1u << 20));
	assert_int_equal(ada_wal_file_reserve_ring(f, 4096, &dst, &cap), ADA_WAL_RING_CHUNK);
	assert_int_equal(cap, WAL_CIDX_CHUNK);
	assert_int_equal(ada_wal_file_reserve_ring(f, 1000, &dst, &cap), 1000);
	assert_int_equal(ada_wal_file_reserve_ring(f, 100, &dst, &cap), 100);
	assert_int_equal(cap, 100);
	assert_int_equal(ada_wal_file_reserve_ring(v2, 4096, &dst, &cap),
	                 ada_wal_file_reserve(v2, 4096, &dst));
	assert_int_equal(cap, ada_wal_file_reserve(v2, 4096, &dst));
	struct ada_wal_file_summary sum;
	assert_int_equal(ada_wal_file_finalize(f, &sum), 0);
	assert_int_equal(sum.events, n);
	assert_int_equal(ada_wal_file_finalize(v2, &sum), 0);
	ada_wal_io_free(io);
}

/* Appends event i to both files, with B's window switched as the drain
 * does it between two takes: off from the start, on for [20000, 30000)
 * and [45000, 50000). */
static void decoded_append(struct ada_wal_file *a, struct ada_wal_file *b, uint64_t i)
{
	if (i == 20000 || i == 45000)
		ada_wal_file_keep_recent(b, true);
	if (i == 30000 || i == 50000)
		ada_wal_file_keep_recent(b, false);
	struct atf_index_event e = ev_make(i);
	assert_int_equal(ada_wal_file_append(a, &e, 1), 1);
	assert_int_equal(ada_wal_file_append(b, &e, 1), 1);
	if (i % 9973 == 10) { /* a link, kept or not */
		assert_int_equal(wal_file_patch_detail_seq(a, i, (uint32_t)i / 10), 0);
		assert_int_equal(wal_file_patch_detail_seq(b, i, (uint32_t)i / 10), 0);
	}
}

/* A window the drain does not fill (ada_wal_file_keep_recent): the
 * events it did not keep read back as the kept ones do, decoded from
 * their blocks wherever the blocks are (the staging buffer, the open
 * block, the file: two small buffers make most of them the file's; with
 * direct writes a block's last bytes may be in the carry), with their
 * links; the file's bytes are the same either way. */
static void decoded_run(int direct)
{
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {
	    .buffer_bytes = 1 << 16, .max_buffers = 2, .queue_depth = 2, .direct = direct};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct ada_wal_file *f[2];
	const char *names[2] = {"ka.atf", "kb.atf"};
	for (int k = 0; k < 2; k++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[k]);
		struct ada_wal_file_opts fo = {.thread_id = 4242,
		                               .clock_type = ATF_CLOCK_BOOTTIME,
		                               .arch = ATF_ARCH_X86_64,
		                               .segment_bytes = 1 << 20,
		                               .index_format = ADA_INDEX_COMPACT,
		                               .cidx_recent = 65536,
		                               .cidx_block = 4096};
		assert_int_equal(ada_wal_file_openat(io, tmpfd, names[k], path, &fo, &f[k]), 0);
	}
	ada_wal_file_keep_recent(f[1], false);
	for (uint64_t i = 0; i < 60000; i++) {
		decoded_append(f[0], f[1], i);
		if (i == 33333 || i == 59999) /* reads while the window is off */
			for (uint64_t j = 0; j <= i; j++) {
				struct atf_index_event ea, eb;
				assert_int_equal(wal_file_event_read(f[0], j, &ea), 0);
				assert_int_equal(wal_file_event_read(f[1], j, &eb), 0);
				assert_memory_equal(&ea, &eb, sizeof(ea));
				assert_int_equal(eb.timestamp_ns, ev_make(j).timestamp_ns);
				assert_int_equal(eb.function_id, ev_make(j).function_id);
				assert_int_equal(eb.event_kind, ev_make(j).event_kind);
				assert_int_equal(eb.detail_seq,
				                 j % 9973 == 10 ? (uint32_t)j / 10 : ATF_NO_DETAIL);
			}
	}
	struct atf_index_event e;
	assert_int_equal(wal_file_event_read(f[1], 60000, &e), -ENOENT);
	struct ada_wal_file_summary sum;
	for (int k = 0; k < 2; k++)
		assert_int_equal(ada_wal_file_finalize(f[k], &sum), 0);
	size_t la, lb;
	uint8_t *a = slurp("ka.atf", &la), *b = slurp("kb.atf", &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(a);
	free(b);
	ada_wal_io_free(io);
}

static void test_cidx_recent_decoded(void **state)
{
	(void)state;
	decoded_run(-1);
}

static void test_cidx_recent_decoded_direct(void **state)
{
	(void)state;
	if (tmpfd < 0) {
		print_message("skipped: no directory here takes O_DIRECT outside tmpfs "
		              "(/var/tmp, the working directory)\n");
		skip();
	}
	decoded_run(1);
}

/* A recent window bigger than its first size grows as the events come:
 * after each doubling every event it held is still there with its link;
 * at its most it wraps as a window of that size does. */
static void test_cidx_recent_grows(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16, .max_buffers = 8, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, "g.atf");
	struct ada_wal_file_opts fo = {.thread_id = 4242,
	                               .clock_type = ATF_CLOCK_BOOTTIME,
	                               .arch = ATF_ARCH_X86_64,
	                               .segment_bytes = 1 << 20,
	                               .index_format = ADA_INDEX_COMPACT,
	                               .cidx_recent = 16384};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_openat(io, tmpfd, "g.atf", path, &fo, &f), 0);
	struct atf_index_event e;
	append_events(f, 0, 100);
	assert_int_equal(wal_file_patch_detail_seq(f, 3, 11), 0);
	append_events(f, 100, 4000); /* past the first size (4096): grown */
	assert_int_equal(wal_file_patch_detail_seq(f, 4099, 12), 0);
	append_events(f, 4100, 8000); /* and again */
	for (uint64_t i = 0; i < 12100; i += 7) {
		assert_int_equal(wal_file_event_read(f, i, &e), 0);
		assert_int_equal(e.timestamp_ns, ev_make(i).timestamp_ns);
		assert_int_equal(e.function_id, ev_make(i).function_id);
	}
	assert_int_equal(wal_file_event_read(f, 3, &e), 0);
	assert_int_equal(e.detail_seq, 11);
	assert_int_equal(wal_file_event_read(f, 4099, &e), 0);
	assert_int_equal(e.detail_seq, 12);
	append_events(f, 12100, 8000); /* at its most (16384): it wraps */
	assert_int_equal(wal_file_event_read(f, 3715, &e), -ENOENT);
	assert_int_equal(wal_file_event_read(f, 4099, &e), 0);
	assert_int_equal(e.detail_seq, 12);
	assert_int_equal(wal_file_event_read(f, 20099, &e), 0);
	assert_int_equal(e.timestamp_ns, ev_make(20099).timestamp_ns);
	struct ada_wal_file_summary sum;
	assert_int_equal(ada_wal_file_finalize(f, &sum), 0);
	assert_int_equal(sum.events, 20100);
	ada_wal_io_free(io);
}

/* A compact file opened with the recent window of opts.cidx_recent
 * events; its events are from + i, i = 0..n. */
static struct ada_wal_file *recent_file(struct ada_wal_io *io, const char *name, uint32_t recent,
                                        uint64_t from, uint64_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	struct ada_wal_file_opts fo = {.thread_id = 4242,
	                               .clock_type = ATF_CLOCK_BOOTTIME,
	                               .arch = ATF_ARCH_X86_64,
	                               .segment_bytes = 1 << 20,
	                               .index_format = ADA_INDEX_COMPACT,
	                               .cidx_recent = recent};
	struct ada_wal_file *f;
	assert_int_equal(ada_wal_file_openat(io, tmpfd, name, path, &fo, &f), 0);
	append_events(f, from, n);
	return f;
}

/* A compact file's link table grows its allocation a small step at a
 * time, each no larger than ada_wal_file_link_room() said before the link:
 * the disk budget pays it with the record it links (detail_persist.c
 * pd_record_room). A whole segment's step here took up to 4 MiB past the
 * room a thread's end was given (e2e.budget_windows_big). */
static void test_cidx_link_room(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16, .max_buffers = 8, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	enum { N = 120000 };
	struct ada_wal_file *f = recent_file(io, "l.atf", 64, 0, N);
	unsigned grows = 0;
	/* In order, then again out of order (each link at its longest): the
	 * second pass outgrows whatever the events' segments left free. */
	for (uint64_t k = 0; k < 2 * N; k++) {
		uint64_t i = k < N ? k : k - N;
		uint64_t room = ada_wal_file_link_room(f), a0 = ada_wal_file_disk_bytes(f);
		assert_int_equal(wal_file_patch_detail_seq(f, i, (uint32_t)k), 0);
		uint64_t a1 = ada_wal_file_disk_bytes(f);
		assert_true(a1 - a0 <= room);
		grows += a1 > a0;
	}
	assert_true(grows > 0); /* else the links never outgrew the allocation */
	struct ada_wal_file_summary sum;
	assert_int_equal(ada_wal_file_finalize(f, &sum), 0);
	assert_int_equal(sum.events, N);
	ada_wal_io_free(io);
}

/* A finished file's recent window goes to the next file (a thread per
 * request: no window mapped, faulted in and unmapped per thread): the
 * next file takes it, grown as it was, reads back only its own events,
 * and none of the earlier owner's links; at most WAL_RECENT_SPARES are
 * kept, the largest, none larger than a file may have. */
static void test_cidx_recent_reused(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16, .max_buffers = 8, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct ada_wal_file_summary sum;
	struct atf_index_event e;
	struct ada_wal_file *a = recent_file(io, "ra.atf", 16384, 0, 100);
	assert_int_equal(wal_file_patch_detail_seq(a, 3, 11), 0);
	assert_int_equal(wal_file_patch_detail_seq(a, 5, 12), 0);
	append_events(a, 100, 5000); /* grown to 8192 */
	assert_int_equal(ada_wal_file_finalize(a, &sum), 0);
	assert_int_equal(io->nrecent_spare, 1);
	assert_int_equal(io->recent_spare[0].n, 8192);

	struct ada_wal_file *b = recent_file(io, "rb.atf", 16384, 20000, 100);
	assert_int_equal(io->recent_reused, 1);
	assert_int_equal(io->nrecent_spare, 0);
	assert_int_equal(wal_file_patch_detail_seq(b, 5, 13), 0);
	for (uint64_t i = 0; i < 100; i++) {
		assert_int_equal(wal_file_event_read(b, i, &e), 0);
		assert_int_equal(e.timestamp_ns, ev_make(20000 + i).timestamp_ns);
		assert_int_equal(e.function_id, ev_make(20000 + i).function_id);
		assert_int_equal(e.detail_seq, i == 5 ? 13 : ATF_NO_DETAIL); /* a's 3 -> 11: none */
	}
	assert_int_equal(wal_file_event_read(b, 100, &e), -ENOENT); /* a's 100: not b's */
	append_events(b, 20100, 9000); /* past the taken 8192: grown again, links kept */
	assert_int_equal(wal_file_event_read(b, 5, &e), 0);
	assert_int_equal(e.detail_seq, 13);
	assert_int_equal(wal_file_event_read(b, 3, &e), 0);
	assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
	assert_int_equal(ada_wal_file_finalize(b, &sum), 0);
	assert_int_equal(sum.events, 9100);
	assert_int_equal(io->recent_spare[0].n, 16384);

	/* A file whose window may be smaller does not take a larger one. */
	struct ada_wal_file *c = recent_file(io, "rc.atf", 4096, 0, 10);
	assert_int_equal(io->recent_reused, 1);
	assert_int_equal(ada_wal_file_finalize(c, &sum), 0);
	assert_int_equal(io->nrecent_spare, 2);

	/* Six files end at once: all six windows stay (fewer than
	 * WAL_RECENT_SPARES, within WAL_RECENT_SPARE_BYTES). */
	struct ada_wal_file *many[6];
	char name[32];
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "rm%d.atf", i);
		many[i] = recent_file(io, name, 1u << 16, 0, 4096u * (uint64_t)(i + 1));
	}
	assert_int_equal(io->recent_reused, 3); /* the 16384 and the 4096 */
	for (int i = 0; i < 6; i++)
		assert_int_equal(ada_wal_file_finalize(many[i], &sum), 0);
	assert_int_equal(io->nrecent_spare, 6);
	uint64_t total = 0;
	for (uint32_t i = 0; i < io->nrecent_spare; i++)
		total += io->recent_spare[i].n;
	assert_int_equal(total, 8192 + 3 * 16384 + 2 * 32768);

	/* WAL_RECENT_SPARES + 2 small files (a thread per request) end at
	 * once: WAL_RECENT_SPARES stay, the smallest went, the six's five
	 * larger than these among those kept. */
	enum { NSMALL = WAL_RECENT_SPARES + 2 };
	struct ada_wal_file *small[NSMALL];
	for (int i = 0; i < NSMALL; i++) {
		snprintf(name, sizeof(name), "rs%d.atf", i);
		small[i] = recent_file(io, name, 8192, 0, 100);
	}
	for (int i = 0; i < NSMALL; i++)
		assert_int_equal(ada_wal_file_finalize(small[i], &sum), 0);
	assert_int_equal(io->nrecent_spare, WAL_RECENT_SPARES);
	uint32_t larger = 0;
	for (uint32_t i = 0; i < io->nrecent_spare; i++)
		larger += io->recent_spare[i].n >= 16384;
	assert_int_equal(larger, 5);
	ada_wal_io_free(io);
}

static void test_patch_everywhere(void **state)
{
	(void)state;
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 4096, .max_buffers = 8, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct ada_wal_file *f = index_open(io, "index.atf", 4242);
	append_events(f, 0, 100); /* 3200 bytes: all in the staging buffer */
	struct atf_index_event e;
	assert_int_equal(wal_file_patch_detail_seq(f, 10, 0), 0); /* in the buffer */
	assert_int_equal(wal_file_event_read(f, 10, &e), 0);
	assert_int_equal(e.detail_seq, 0);
	ada_wal_file_submit(f);
	assert_int_equal(wal_file_patch_detail_seq(f, 20, 1), 0); /* in flight: queued */
	assert_int_equal(wal_file_event_read(f, 20, &e), 0);
	assert_int_equal(e.function_id, ev_make(20).function_id);
	while (ada_wal_file_durable(f) < 100)
		assert_true(ada_wal_io_reap(io, true) >= 0);
	append_events(f, 100, 300); /* more buffers; the first ones on disk */
	ada_wal_file_submit(f);
	while (ada_wal_file_durable(f) < 400)
		assert_true(ada_wal_io_reap(io, true) >= 0);
	assert_int_equal(wal_file_patch_detail_seq(f, 5, 2), 0); /* on disk: pwrite */
	assert_int_equal(wal_file_event_read(f, 5, &e), 0);      /* read back from disk */
	assert_int_equal(e.detail_seq, 2);
	assert_int_equal(wal_file_patch_detail_seq(f, 399, 3), 0);
	assert_int_equal(wal_file_patch_detail_seq(f, 400, 4), -ENOENT); /* not committed */
	wal_file_set_has_detail(f);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(f, &s), 0);
	ada_wal_io_free(io);

	size_t len;
	uint8_t *b = slurp("index.atf", &len);
	assert_int_equal(len, 64 + 400 * 32 + 64);
	const struct atf_index_event *ev = (const void *)(b + 64);
	static const uint32_t at[] = {10, 20, 5, 399};
	for (uint32_t k = 0; k < 4; k++)
		assert_int_equal(ev[at[k]].detail_seq, k);
	uint32_t flags;
	memcpy(&flags, b + 8, 4);
	assert_int_equal(flags & ATF_INDEX_FLAG_HAS_DETAIL, ATF_INDEX_FLAG_HAS_DETAIL);
	struct ada_atf_report rep = report();
	struct ada_atf_vfile vf;
	ada_atf_validate_index_buf("index.atf", b, len, &rep, &vf); /* CRC checked */
	assert_int_equal(rep.errors, 0);
	free(b);
}

/* wal_file_hold: patches of events in held buffers go into the buffer
 * (no pwrite, nothing queued), and the file written is the reference's
 * byte for byte. Random rounds on two files sharing a small pool (so a
 * buffer shortage writes held buffers and the half-the-pool cap cuts in):
 * appends of random lengths, holds on and off, submits, reaps, and
 * patches of random events wherever they are (held, staging, in flight,
 * on disk); reads checked against the reference as they go; at the end
 * every byte and the footer's CRC against the reference. */
struct held_ref {
	struct ada_wal_file *f;
	uint32_t *seq; /* the reference detail_seq per event */
	uint64_t n;
};

static void held_patch_some(struct held_ref *h, uint32_t *next)
{
	uint32_t k = (uint32_t)rand() % 40;
	for (uint32_t j = 0; j < k && h->n; j++) {
		/* half among the last 600 events (held, staging), half anywhere */
		uint64_t lo = rand() % 2 && h->n > 600 ? h->n - 600 : 0;
		uint64_t i = lo + (uint64_t)rand() % (h->n - lo);
		if (h->seq[i] != ATF_NO_DETAIL)
			continue;
		assert_int_equal(wal_file_patch_detail_seq(h->f, i, *next), 0);
		h->seq[i] = (*next)++;
	}
}

/* Whether event i is in a write still in flight: its buffer is read as
 * it was sent, without the patches queued behind it (the existing rule:
 * a read there sees ATF_NO_DETAIL until the write completes). */
static bool held_in_flight(const struct ada_wal_file *f, uint64_t i)
{
	uint64_t off = 64 + i * 32;
	for (const struct wal_buf *b = f->fifo_head; b; b = b->fifo_next)
		if (!b->complete && off >= b->off && off < b->off + b->len)
			return true;
	return false;
}

static void held_check_reads(struct held_ref *h)
{
	for (int j = 0; j < 8 && h->n; j++) {
		uint64_t i = (uint64_t)rand() % h->n;
		struct atf_index_event e;
		assert_int_equal(wal_file_event_read(h->f, i, &e), 0);
		assert_int_equal(e.timestamp_ns, ev_make(i).timestamp_ns);
		if (e.detail_seq != h->seq[i]) {
			assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
			assert_true(held_in_flight(h->f, i));
		}
	}
}

static void held_check_file(const char *name, const struct held_ref *h, uint32_t crc_footer)
{
	size_t len;
	uint8_t *b = slurp(name, &len);
	assert_int_equal(len, 64 + h->n * 32 + 64);
	uLong crc = crc32(0, Z_NULL, 0);
	for (uint64_t i = 0; i < h->n; i++) {
		struct atf_index_event want = ev_make(i);
		want.detail_seq = h->seq[i];
		assert_memory_equal(b + 64 + i * 32, &want, 32);
		crc = crc32(crc, (const Bytef *)&want, 32);
	}
	assert_int_equal((uint32_t)crc, crc_footer);
	struct ada_atf_report rep = report();
	struct ada_atf_vfile vf;
	ada_atf_validate_index_buf(name, b, len, &rep, &vf); /* CRC checked again */
	assert_int_equal(rep.errors, 0);
	free(b);
}

static void test_patch_held(void **state)
{
	(void)state;
	enum { MAXEV = 200000 };
	struct ada_wal_io *io;
	/* 128 events a buffer, 6 buffers: at most 3 held */
	struct ada_wal_io_opts o = {.buffer_bytes = 4096, .max_buffers = 6, .queue_depth = 8};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct held_ref h[2] = {{.f = index_open(io, "a.atf", 4242)},
	                        {.f = index_open(io, "b.atf", 4242)}};
	for (int k = 0; k < 2; k++) {
		h[k].seq = malloc(MAXEV * sizeof(uint32_t));
		for (uint64_t i = 0; i < MAXEV; i++)
			h[k].seq[i] = ATF_NO_DETAIL;
	}
	srand(11);
	uint32_t next[2] = {0, 0};
	/* Deterministic first: a hold over 2.5 buffers, every event patched
	 * in memory. */
	wal_file_hold(h[0].f, true);
	append_events(h[0].f, 0, 320);
	h[0].n = 320;
	for (uint64_t i = 0; i < 320; i++) {
		assert_int_equal(wal_file_patch_detail_seq(h[0].f, i, next[0]), 0);
		h[0].seq[i] = next[0]++;
	}
	assert_int_equal(h[0].f->patch_by[WAL_PATCH_MEM], 320);
	assert_int_equal(h[0].f->patch_by[WAL_PATCH_QUEUED] + h[0].f->patch_by[WAL_PATCH_DISK], 0);
	assert_int_equal(h[0].f->nheld, 2);
	wal_file_hold(h[0].f, false);
	assert_int_equal(h[0].f->nheld, 0);
	for (int round = 0; round < 400; round++) {
		struct held_ref *x = &h[rand() % 2];
		bool hold = rand() % 4 != 0;
		wal_file_hold(x->f, hold);
		uint64_t n = (uint64_t)rand() % 700;
		if (x->n + n > MAXEV)
			n = MAXEV - x->n;
		append_events(x->f, x->n, n);
		x->n += n;
		assert_true(x->f->nheld <= 3);
		held_patch_some(x, &next[x - h]);
		if (rand() % 5 == 0)
			ada_wal_file_submit(x->f);
		held_check_reads(x);
		held_patch_some(x, &next[x - h]);
		if (rand() % 4 == 0) /* as each wal_detail_persist ends */
			assert_int_equal(wal_dwin_flush(x->f), 0);
		held_check_reads(x);
		if (rand() % 3 == 0)
			wal_file_hold(x->f, false);
		if (rand() % 3 == 0)
			assert_true(ada_wal_io_reap(io, rand() % 2) >= 0);
		/* durable counts only events whose write completed */
		for (int k = 0; k < 2; k++)
			assert_true(64 + ada_wal_file_durable(h[k].f) * 32 <=
			            h[k].f->submitted_end);
	}
	for (int k = 0; k < 2; k++) {
		wal_file_hold(h[k].f, false);
		ada_wal_file_submit(h[k].f);
	}
	while (io->inflight)
		assert_true(ada_wal_io_reap(io, true) >= 0);
	for (int k = 0; k < 2; k++)
		assert_int_equal(ada_wal_file_durable(h[k].f), h[k].n);
	/* Every way was taken, and the memory one most (the holds). */
	for (int k = 0; k < 2; k++) {
		const uint64_t *by = h[k].f->patch_by;
		print_message("file %d: %llu events, patches mem %llu queued %llu disk %llu "
		              "window %llu\n",
		              k, (unsigned long long)h[k].n, (unsigned long long)by[WAL_PATCH_MEM],
		              (unsigned long long)by[WAL_PATCH_QUEUED],
		              (unsigned long long)by[WAL_PATCH_DISK],
		              (unsigned long long)by[WAL_PATCH_WINDOW]);
		assert_true(by[WAL_PATCH_MEM] > 0 && by[WAL_PATCH_WINDOW] > 0);
		assert_int_equal(h[k].f->patch_failed, 0);
		assert_int_equal(by[WAL_PATCH_MEM] + by[WAL_PATCH_QUEUED] + by[WAL_PATCH_DISK] +
		                     by[WAL_PATCH_WINDOW],
		                 next[k]);
	}
	struct ada_wal_file_summary s[2];
	assert_int_equal(ada_wal_file_finalize(h[0].f, &s[0]), 0); /* held or not: ends it */
	assert_int_equal(ada_wal_file_finalize(h[1].f, &s[1]), 0);
	ada_wal_io_free(io);
	held_check_file("a.atf", &h[0], s[0].crc);
	held_check_file("b.atf", &h[1], s[1].crc);
	free(h[0].seq);
	free(h[1].seq);
}

/* The disk window (dwin.c), deterministic: 65 536 durable events linked
 * in order, each read first (as wal_detail_persist does), cost one pread
 * and one pwrite per window instead of one of each per link: 2 MiB of
 * events from offset 64 in windows that start on their first event's
 * 4 KiB page, [64, 65 600), then [64 KiB k, 64 KiB (k + 1)) for k = 1..31,
 * then [2 MiB, 2 MiB + 64): 33. A read of a link not written back yet
 * sees it (the window, not the file); the last window reaches the file
 * only at finalize; the bytes and the footer's CRC match the reference. */
static void test_patch_window(void **state)
{
	(void)state;
	enum { N = 65536 };
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 18,
	                            .max_buffers = 4,
	                            .queue_depth = 8,
	                            .direct = -1 /* the buffered layout's counts */};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct held_ref h = {.f = index_open(io, "w.atf", 4242), .n = N};
	h.seq = malloc(N * sizeof(uint32_t));
	append_events(h.f, 0, N);
	ada_wal_file_submit(h.f);
	while (ada_wal_file_durable(h.f) < N)
		assert_true(ada_wal_io_reap(io, true) >= 0);
	struct atf_index_event e;
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(wal_file_event_read(h.f, i, &e), 0);
		assert_int_equal(e.timestamp_ns, ev_make(i).timestamp_ns);
		assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
		assert_int_equal(wal_file_patch_detail_seq(h.f, i, i), 0);
		h.seq[i] = i;
		assert_int_equal(wal_file_event_read(h.f, i, &e), 0); /* not on the file yet */
		assert_int_equal(e.detail_seq, i);
	}
	assert_int_equal(h.f->patch_by[WAL_PATCH_WINDOW], N);
	assert_int_equal(h.f->patch_by[WAL_PATCH_DISK] + h.f->patch_by[WAL_PATCH_MEM] +
	                     h.f->patch_by[WAL_PATCH_QUEUED],
	                 0);
	assert_int_equal(io->dwin_fills, 33);
	assert_int_equal(io->dwin_writebacks, 32); /* the last one is still dirty */
	/* The last window's links are only in memory: the file says no
	 * detail there until the write-back (finalize's, here). */
	uint32_t v;
	assert_int_equal(pread(h.f->fd, &v, 4, 64 + (N - 1) * 32ull + DSEQ_OFF), 4);
	assert_int_equal(v, ATF_NO_DETAIL);
	assert_int_equal(pread(h.f->fd, &v, 4, 64 + DSEQ_OFF), 4); /* the first window is */
	assert_int_equal(v, 0);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(h.f, &s), 0);
	assert_int_equal(io->dwin_writebacks, 33);
	assert_null(io->dwin_file);
	ada_wal_io_free(io);
	held_check_file("w.atf", &h, s.crc);
	free(h.seq);
}

/* Patches of events whose write is in flight are queued; when that write
 * completes they go into its buffer's data, and one pwrite of the span
 * they cover writes them all (wal_patches_apply), not one each. */
static void test_patch_queued_span(void **state)
{
	(void)state;
	enum { N = 4096 }; /* two buffers of 2 048 events */
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16,
	                            .max_buffers = 4,
	                            .queue_depth = 8,
	                            .direct = -1 /* the buffered layout's counts */};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct held_ref h = {.f = index_open(io, "q.atf", 4242), .n = N};
	if (h.f->inline_write) { /* tmpfs: every write completes as it is sent */
		struct ada_wal_file_summary s0;
		assert_int_equal(ada_wal_file_finalize(h.f, &s0), 0);
		ada_wal_io_free(io);
		print_message("skipped: on tmpfs every write completes as it is sent: none "
		              "is queued for a patch to find (the case runs on a disk "
		              "directory, in test_wal_detail)\n");
		skip();
	}
	h.seq = malloc(N * sizeof(uint32_t));
	for (uint32_t i = 0; i < N; i++)
		h.seq[i] = ATF_NO_DETAIL;
	append_events(h.f, 0, N); /* both buffers sent, neither reaped */
	assert_int_equal(ada_wal_file_durable(h.f), 0);
	uint32_t next = 0;
	for (uint32_t i = 3; i < N - 5; i++) { /* every event of both, but the ends */
		assert_int_equal(wal_file_patch_detail_seq(h.f, i, next), 0);
		h.seq[i] = next++;
	}
	assert_int_equal(h.f->patch_by[WAL_PATCH_QUEUED], N - 8);
	while (ada_wal_file_durable(h.f) < N)
		assert_true(ada_wal_io_reap(io, true) >= 0);
	assert_int_equal(io->patch_spans, 2);
	assert_int_equal(h.f->npatch, 0);
	assert_int_equal(h.f->patch_failed, 0);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(h.f, &s), 0);
	ada_wal_io_free(io);
	held_check_file("q.atf", &h, s.crc);
	free(h.seq);
}

/* A write-back that fails (the file descriptor made read-only under the
 * writer): each link is tried alone, fails again, is counted in
 * patch_failed and its CRC change taken back; the window is dropped and
 * the next links fill it anew. The file keeps "no detail" at the lost
 * links and its footer's CRC says so. */
static void test_patch_window_fail(void **state)
{
	(void)state;
	enum { N = 4096 };
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 1 << 16,
	                            .max_buffers = 4,
	                            .queue_depth = 8,
	                            .direct = -1 /* the buffered layout's counts */};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct held_ref h = {.f = index_open(io, "x.atf", 4242), .n = N};
	h.seq = malloc(N * sizeof(uint32_t));
	for (uint32_t i = 0; i < N; i++)
		h.seq[i] = ATF_NO_DETAIL;
	append_events(h.f, 0, N);
	ada_wal_file_submit(h.f);
	while (ada_wal_file_durable(h.f) < N)
		assert_true(ada_wal_io_reap(io, true) >= 0);
	uint32_t next = 0;
	for (uint32_t i = 10; i < 60; i += 7) { /* lost: never in h.seq */
		assert_int_equal(wal_file_patch_detail_seq(h.f, i, next++), 0);
	}
	int saved = dup(h.f->fd), ro = open(h.f->path, O_RDONLY | O_CLOEXEC);
	assert_true(saved >= 0 && ro >= 0);
	assert_true(dup2(ro, h.f->fd) == h.f->fd);
	assert_int_equal(wal_dwin_flush(h.f), -EBADF);
	assert_true(dup2(saved, h.f->fd) == h.f->fd);
	close(saved);
	close(ro);
	assert_int_equal(h.f->patch_failed, 8);
	assert_int_equal(ada_wal_io_links_failed(io), 8);
	assert_null(io->dwin_file);
	assert_int_equal(wal_dwin_flush(h.f), 0); /* nothing left to write */
	struct atf_index_event e;
	assert_int_equal(wal_file_event_read(h.f, 17, &e), 0); /* read anew: as the file */
	assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
	for (uint32_t i = 11; i < N; i += 5) {
		assert_int_equal(wal_file_patch_detail_seq(h.f, i, next), 0);
		h.seq[i] = next++;
	}
	assert_int_equal(h.f->patch_failed, 8);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(h.f, &s), 0);
	ada_wal_io_free(io);
	held_check_file("x.atf", &h, s.crc);
	free(h.seq);
}

/* ---- direct writes (segment.c, "Direct writes") ---- */

/* A directory whose file system takes O_DIRECT and is not tmpfs: /var/tmp,
 * else the working directory (the build directory under ctest). */
static bool direct_dir_pick(void)
{
	static const char *const roots[] = {"/var/tmp", "."};
	for (size_t k = 0; k < 2; k++) {
		snprintf(tmpdir, sizeof(tmpdir), "%s/ada_wal_direct_XXXXXX", roots[k]);
		if (!mkdtemp(tmpdir))
			continue;
		struct statfs sf;
		char probe[300];
		snprintf(probe, sizeof(probe), "%s/probe", tmpdir);
		int fd = open(probe, O_CREAT | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
		bool ok = fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type != 0x01021994 /* tmpfs */;
		if (fd >= 0)
			close(fd);
		unlink(probe);
		if (ok) {
			tmpfd = open(tmpdir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
			return tmpfd >= 0;
		}
		rmdir(tmpdir);
	}
	return false;
}

static int setup_direct(void **state)
{
	(void)state;
	tmpfd = -1;
	tmpdir[0] = 0;
	direct_dir_pick(); /* none: the test skips, saying why */
	return 0;
}

static int teardown_direct(void **state)
{
	int r = tmpfd >= 0 ? teardown(state) : 0;
	tmpfd = -1;
	return r;
}

static int setup_none(void **state)
{
	(void)state;
	tmpfd = -1;
	return 0;
}

/* One file written by a fixed random script (seed 23), through direct
 * writes (direct 1) or buffered ones (-1): appends of 0..299 events over
 * 8 KiB buffers (two blocks, so buffers end inside blocks), holds on and
 * off, submits of every kind (padded, whole blocks only, stale), reaps,
 * and detail_seq patches of recent and random events -- in staging, the
 * carry, held buffers, in flight and on disk --, the has-detail flag
 * early (block 0 still in memory), and a last partial block whose carry
 * is patched after its padded write. */
static void direct_script(const char *name, int direct, struct held_ref *h, uint32_t *crc)
{
	enum { MAXEV = 200000 };
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 8192,
	                            .max_buffers = 6,
	                            .queue_depth = 8,
	                            .stage_ms = 60000,
	                            .direct = direct};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	h->f = index_open(io, name, 4242);
	uint32_t files, fallbacks;
	const char *why;
	assert_int_equal(ada_wal_io_direct(io, &files, &fallbacks, &why), direct > 0);
	assert_int_equal(files, direct > 0 ? 1 : 0);
	assert_int_equal(fallbacks, 0);
	h->seq = malloc(MAXEV * sizeof(uint32_t));
	for (uint64_t i = 0; i < MAXEV; i++)
		h->seq[i] = ATF_NO_DETAIL;
	h->n = 0;
	uint32_t next = 0;
	srand(23);
	for (int round = 0; round < 700; round++) {
		wal_file_hold(h->f, rand() % 3 != 0);
		uint64_t n = (uint64_t)rand() % 300;
		append_events(h->f, h->n, n);
		h->n += n;
		held_patch_some(h, &next);
		switch (rand() % 6) {
		case 0:
			ada_wal_file_submit(h->f);
			break;
		case 1:
			ada_wal_file_submit_blocks(h->f);
			break;
		case 2:
			ada_wal_io_submit_stale(io, true);
			break;
		default:
			break;
		}
		if (round == 2)
			wal_file_set_has_detail(h->f);
		held_check_reads(h);
		held_patch_some(h, &next);
		if (rand() % 2)
			wal_file_hold(h->f, false);
		if (rand() % 3 == 0)
			assert_true(ada_wal_io_reap(io, rand() % 2) >= 0);
		/* durable counts only events a completed write covered */
		assert_true(64 + ada_wal_file_durable(h->f) * 32 <= h->f->submitted_end);
	}
	wal_file_hold(h->f, false);
	/* a partial last block, written padded, then its carry patched */
	uint64_t n = 5;
	while ((64 + (h->n + n) * 32) % 4096 == 0)
		n++;
	append_events(h->f, h->n, n);
	h->n += n;
	ada_wal_file_submit(h->f);
	assert_int_equal(wal_file_patch_detail_seq(h->f, h->n - 1, next), 0);
	h->seq[h->n - 1] = next++;
	const uint64_t *by = h->f->patch_by;
	print_message("%s: %llu events, patches mem %llu queued %llu disk %llu window %llu\n", name,
	              (unsigned long long)h->n, (unsigned long long)by[WAL_PATCH_MEM],
	              (unsigned long long)by[WAL_PATCH_QUEUED],
	              (unsigned long long)by[WAL_PATCH_DISK],
	              (unsigned long long)by[WAL_PATCH_WINDOW]);
	assert_true(by[WAL_PATCH_MEM] > 0 && by[WAL_PATCH_QUEUED] > 0 &&
	            by[WAL_PATCH_DISK] + by[WAL_PATCH_WINDOW] > 0);
	assert_int_equal(by[WAL_PATCH_MEM] + by[WAL_PATCH_QUEUED] + by[WAL_PATCH_DISK] +
	                     by[WAL_PATCH_WINDOW],
	                 next);
	if (direct > 0) /* the carry was used, and is patched now */
		assert_true(h->f->carry && h->f->carry_len);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(h->f, &s), 0);
	assert_int_equal(s.events, h->n);
	*crc = s.crc;
	assert_int_equal(ada_wal_io_direct(io, &files, &fallbacks, &why), direct > 0);
	assert_int_equal(fallbacks, 0); /* no direct write refused */
	ada_wal_io_free(io);
}

/* The same script through direct and buffered writes: the two files are
 * the reference's byte for byte (events, patches, header flag, footer
 * CRC), so identical, and validate. */
static void test_direct_identical(void **state)
{
	(void)state;
	if (tmpfd < 0) {
		print_message("skipped: no directory here takes O_DIRECT outside tmpfs "
		              "(/var/tmp, the working directory)\n");
		skip();
	}
	struct held_ref h[2];
	uint32_t crc[2];
	direct_script("direct.atf", 1, &h[0], &crc[0]);
	direct_script("buffered.atf", -1, &h[1], &crc[1]);
	assert_int_equal(h[0].n, h[1].n);
	assert_int_equal(crc[0], crc[1]);
	held_check_file("direct.atf", &h[0], crc[0]);
	held_check_file("buffered.atf", &h[1], crc[1]);
	size_t la, lb;
	uint8_t *a = slurp("direct.atf", &la), *b = slurp("buffered.atf", &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	uint32_t flags;
	memcpy(&flags, a + offsetof(struct atf_index_header, flags), 4);
	assert_int_equal(flags & ATF_INDEX_FLAG_HAS_DETAIL, ATF_INDEX_FLAG_HAS_DETAIL);
	free(a);
	free(b);
	free(h[0].seq);
	free(h[1].seq);
}

/* Where direct writes are not used, the file is written buffered, and the
 * manifest's count and reason say why: tmpfs (its page cache is the
 * file), staging buffers that are not whole blocks. */
static void test_direct_fallback(void **state)
{
	(void)state;
	struct statfs sf;
	if (statfs("/dev/shm", &sf) != 0 || sf.f_type != 0x01021994) {
		print_message("skipped: /dev/shm is not tmpfs here\n");
		skip();
	}
	snprintf(tmpdir, sizeof(tmpdir), "/dev/shm/ada_wal_direct_XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	tmpfd = open(tmpdir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	assert_true(tmpfd >= 0);
	struct ada_wal_io *io;
	struct ada_wal_io_opts o = {.buffer_bytes = 8192, .max_buffers = 4, .direct = 1};
	assert_int_equal(ada_wal_io_new(&o, &io), 0);
	struct held_ref h = {.f = index_open(io, "index.atf", 4242)};
	uint32_t files, fallbacks;
	const char *why;
	assert_true(ada_wal_io_direct(io, &files, &fallbacks, &why)); /* wanted */
	assert_int_equal(files, 0);
	assert_int_equal(fallbacks, 1);
	assert_string_equal(why, "tmpfs");
	assert_false(h.f->direct);
	h.seq = malloc(1000 * sizeof(uint32_t));
	for (uint32_t i = 0; i < 1000; i++)
		h.seq[i] = ATF_NO_DETAIL;
	append_events(h.f, 0, 999);
	h.n = 999;
	for (uint32_t i = 0; i < 999; i += 37) {
		assert_int_equal(wal_file_patch_detail_seq(h.f, i, i), 0);
		h.seq[i] = i;
	}
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(h.f, &s), 0);
	/* a second file with buffers not whole blocks: the first reason stays */
	ada_wal_io_free(io);
	held_check_file("index.atf", &h, s.crc);
	struct ada_wal_io_opts o2 = {.buffer_bytes = 6144, .max_buffers = 4, .direct = 1};
	assert_int_equal(ada_wal_io_new(&o2, &io), 0);
	h.f = index_open(io, "index2.atf", 4242);
	assert_true(ada_wal_io_direct(io, &files, &fallbacks, &why));
	assert_int_equal(files, 0);
	assert_int_equal(fallbacks, 1);
	assert_string_equal(why, "staging buffers not whole 4 KiB blocks");
	assert_int_equal(ada_wal_file_finalize(h.f, &s), 0);
	ada_wal_io_free(io);
	free(h.seq);
}

/* ---- wal_detail_persist on a real arena ---- */

#define FN(i) ((5ull << 32) | (i))

struct pfx {
	struct ada_arena *a;
	char arena_path[512];
	uint32_t slot;
	uint64_t n; /* index events emitted */
};

/* One call or return: its index event, then a detail record linked to it
 * (the agent's layout, ring.h ADA_DREC_*), with 24 stack bytes on calls. */
static void emit_one(struct pfx *x, uint64_t fn, bool call)
{
	struct ada_producer *p = &ada_producer_tls;
	/* Distinct timestamps, so that windows cut between two events. */
	static uint64_t last;
	while (ada_producer_clock_ns() <= last)
		;
	last = ada_producer_clock_ns();
	if (call)
		ada_emit_call(fn);
	else
		ada_emit_return(fn);
	uint64_t link = p->head - 1, end;
	uint32_t words = call ? ADA_DREC_CALL_WORDS + 3 : ADA_DREC_RETURN_WORDS;
	_Atomic uint64_t *w = ada_detail_reserve(p, words * 8, &end);
	assert_non_null(w);
	ada_detail_put(w, ADA_DREC_TS, p->events[link & p->mask].timestamp_ns);
	ada_detail_put(w, ADA_DREC_LINK, link);
	ada_detail_put(w, ADA_DREC_FN, fn);
	ada_detail_put(w, ADA_DREC_META,
	               ada_drec_meta(call ? ATF_DETAIL_FUNCTION_CALL : ATF_DETAIL_FUNCTION_RETURN,
	                             0, call ? 24 : 0));
	for (uint32_t i = ADA_DREC_REGS; i < words; i++)
		ada_detail_put(w, i, link * 1000 + i);
	ada_detail_commit(p, end);
	x->n++;
}

static void pfx_open(struct pfx *x)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->arena_path, sizeof(x->arena_path), "%s/arena", tmpdir);
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	c.max_threads = 2;
	c.index_events = 1024;
	c.detail_bytes = 1 << 16;
	c.timestamp_source = ADA_TS_CLOCK; /* raw timestamps are ns: no TSC clock needed */
	assert_int_equal(ada_arena_create(x->arena_path, &c, &x->a, NULL), 0);
	ada_producer_set_arena(x->a);
}

static void pfx_close(struct pfx *x)
{
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(x->a);
	unlink(x->arena_path);
}

/* The drain's part: the ring's events [skip, n) into the file, as if the
 * first `skip` had gone to an earlier generation. */
static void take(struct pfx *x, struct wal_thread *t, uint64_t skip, uint64_t upto)
{
	const struct atf_index_event *ev;
	size_t k = ada_index_ring_peek(x->a, t->slot, &ev);
	assert_true(k >= upto);
	for (uint64_t i = t->ring_next; i < upto; i++)
		if (i >= skip)
			assert_int_equal(ada_wal_file_append(t->f, &ev[i], 1), 1);
	t->ring_next = upto;
}

struct pdrain {
	struct ada_recorder r;
	struct wal_proc p;
	struct wal_thread t;
	struct ada_wal_io *io;
};

static void pdrain_open(struct pdrain *d, struct pfx *x, const char *index_name, uint64_t base)
{
	memset(d, 0, sizeof(*d));
	d->r.use_tsc = false;
	d->r.arch = d->p.arch = WAL_ARCH;
	d->p.arena = x->a;
	d->t.p = &d->p;
	d->t.slot = ada_producer_tls.slot;
	d->t.tid = ada_producer_tls.tid;
	d->t.dir_fd = tmpfd;
	d->t.file_ring_base = base;
	d->t.file_ring_hole = UINT64_MAX;
	/* small: little locked memory; buffered: the window counts below are
	 * the buffered layout's (direct files: test_direct_identical) */
	struct ada_wal_io_opts o = {.queue_depth = 8, .direct = -1};
	assert_int_equal(ada_wal_io_new(&o, &d->io), 0);
	d->t.f = index_open(d->io, index_name, d->t.tid);
}

static void pdrain_close(struct pdrain *d)
{
	wal_detail_close(&d->r, &d->t, UINT32_MAX);
	struct ada_wal_file_summary s;
	assert_int_equal(ada_wal_file_finalize(d->t.f, &s), 0);
	d->t.f = NULL;
	wal_detail_free(&d->t);
	wal_detail_pool_free(&d->r);
	ada_wal_io_free(d->io);
	free(d->r.dsnap.buf);
	free(d->r.dsnap.ends); /* the span tick's (wal_detail_ring_span) */
	free(d->p.sealed);     /* a new detail file unseals its folder (wal_budget_dir_sealed) */
	free(d->p.sealed_blocks);
	d->p.sealed = NULL;
	d->p.sealed_blocks = NULL;
	d->p.sealed_words = 0;
}

/* validate: both files, and every link both ways */
static void check_links(uint64_t want_detail)
{
	size_t il, dl;
	uint8_t *ib = slurp("index.atf", &il), *db = slurp("detail.atf", &dl);
	struct ada_atf_report rep = report();
	struct ada_atf_vfile vf;
	ada_atf_validate_index_buf("index.atf", ib, il, &rep, &vf);
	ada_atf_validate_detail_buf("detail.atf", db, dl, &rep, &vf);
	ada_atf_validate_links_buf("index.atf", ib, il, "detail.atf", db, dl, &rep);
	assert_int_equal(rep.errors, 0);
	assert_int_equal(vf.count, want_detail);
	/* and by hand: every detail event points at an index event that
	 * points back, with its registers as the producer wrote them */
	struct ada_atf_index *ix;
	struct ada_atf_detail *dd;
	assert_int_equal(ada_atf_index_open_mem(ib, il, 0, &ix), 0);
	assert_int_equal(ada_atf_detail_open_mem(db, dl, 0, &dd), 0);
	for (uint64_t j = 0; j < ada_atf_detail_count(dd); j++) {
		const struct atf_detail_event_header *e = ada_atf_detail_get(dd, j);
		const struct atf_index_event *ie = ada_atf_index_get(ix, e->index_seq);
		assert_int_equal(ie->detail_seq, j);
		assert_int_equal(e->timestamp, ie->timestamp_ns);
		const struct atf_detail_function_payload *p = ada_atf_detail_function(e, NULL);
		assert_non_null(p);
		assert_int_equal(p->function_id, ie->function_id);
		assert_int_equal(e->event_type, ie->event_kind == ATF_EVENT_CALL ? 3 : 4);
		assert_int_equal(p->stack_size, ie->event_kind == ATF_EVENT_CALL ? 24 : 0);
	}
	ada_atf_detail_free(dd);
	ada_atf_index_free(ix);
	free(ib);
	free(db);
}

/* n call and return pairs of FN(first), FN(first + 1), ... */
static void emit_pairs(struct pfx *x, uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		emit_one(x, FN(i), true);
		emit_one(x, FN(i), false);
	}
}

/* The window cases' one thread: what its producer emitted (ev[i] the i-th
 * index event), its drain's index.atf opened and the first events taken;
 * flight adds the recorder's windows over it (wscene_flight). */
struct wscene {
	struct pfx x;
	struct pdrain d;
	const struct atf_index_event *ev;
	struct wal_thread *threads[1], *open[1];
	bool flight;
};

/* The producer's part begins: the arena is the calling thread's. */
static void wscene_arena(struct wscene *s)
{
	memset(s, 0, sizeof(*s));
	pfx_open(&s->x);
}

/* After the producer's part (wscene_arena, then its events emitted): the
 * drain's file opened at ring position 0 and the events [0, taken) in it. */
static void wscene_drain(struct wscene *s, uint64_t taken)
{
	assert_int_equal(ada_index_ring_peek(s->x.a, ada_producer_tls.slot, &s->ev), s->x.n);
	pdrain_open(&s->d, &s->x, "index.atf", 0);
	take(&s->x, &s->d.t, 0, taken);
}

/* pairs call and return pairs emitted, the first `taken` events taken */
static void wscene_open(struct wscene *s, uint64_t pairs, uint64_t taken)
{
	wscene_arena(s);
	emit_pairs(&s->x, 0, pairs);
	wscene_drain(s, taken);
}

/* The recorder in triggered detail mode over the scene's thread (flight.c),
 * on a real trigger engine with a manual trigger: windows
 * [fire - pre_ns, fire + post_ns]. */
static void wscene_flight(struct wscene *s, uint64_t pre_ns, uint64_t post_ns)
{
	s->threads[0] = s->open[0] = &s->d.t;
	s->d.p.threads = s->threads;
	s->d.p.nthreads = 1;
	s->d.p.open = s->open; /* not finalized: drain.c drain_thread_new's */
	s->d.p.nopen = 1;
	s->d.r.o.detail_mode = ADA_DETAIL_TRIGGERED;
	struct ada_trigger_opts o = {.pre_ns = pre_ns, .post_ns = post_ns, .max_windows = 8};
	struct ada_trigger_spec spec;
	char why[128];
	assert_int_equal(ada_trigger_parse("manual", &spec, why, sizeof(why)), 0);
	assert_int_equal(ada_trigger_engine_new(&o, &s->d.r.flight.trig), 0);
	assert_int_equal(ada_trigger_add(s->d.r.flight.trig, &spec, 0, NULL), 0);
	/* No wall-time deadline within a pass (each test gives its pass its
	 * room in bytes): under a loaded CI's sanitizer build the 20 ms one
	 * ran out before the pass took what the test expects. */
	s->d.r.flight.pass_max_ns = 1ull << 40;
	s->flight = true;
}

/* A manual fire at fire_ns, the engine's clock then at now_ns; returns
 * how many windows the engine holds. */
static size_t wscene_fire(struct wscene *s, uint64_t fire_ns, uint64_t now_ns)
{
	assert_int_equal(ada_trigger_fire_manual(s->d.r.flight.trig, fire_ns), 0);
	ada_trigger_tick(s->d.r.flight.trig, now_ns, 0);
	return ada_trigger_window_count(s->d.r.flight.trig);
}

/* wal_detail_persist_window over the events [i, j]'s timestamps */
static int window_ev(struct wscene *s, uint64_t i, uint64_t j, bool first,
                     struct wal_detail_stats *st)
{
	return wal_detail_persist_window(&s->d.r, &s->d.t, s->ev[i].timestamp_ns,
	                                 s->ev[j].timestamp_ns, first, NULL, st);
}

/* Both files finalized, the arena gone (check_links reads the files). */
static void wscene_close(struct wscene *s)
{
	if (s->flight) {
		wal_flight_free(&s->d.p);
		wal_flight_fini(&s->d.r);
	}
	pdrain_close(&s->d);
	pfx_close(&s->x);
}

/* 400 more pairs (800 records, the index ring holds 1 024 events) after
 * the scene's first 40 events, all taken into the file: the detail ring
 * (64 KiB) turns over every record of the first 40. */
static void wscene_lap(struct wscene *s)
{
	emit_pairs(&s->x, 100, 400);
	take(&s->x, &s->d.t, 0, 840);
}

/* wal_detail_take on the scene's thread: its records up to horizon_ns
 * into window memory, room bytes of it at the most. */
static int wscene_take(struct wscene *s, uint64_t horizon_ns, uint64_t room,
                       struct wal_detail_stats *st)
{
	return wal_detail_take(&s->d.r, &s->d.t, horizon_ns, room, st);
}

static void test_persist_all(void **state)
{
	(void)state;
	struct wscene s;
	/* taken up to 36: the last 4 records must wait (deferred) */
	wscene_open(&s, 20, 36);
	struct wal_detail_stats st;
	assert_int_equal(wal_detail_persist(&s.d.r, &s.d.t, 0, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 36);
	assert_int_equal(st.deferred, 4);
	assert_int_equal(st.unlinked, 0);
	assert_true(st.oldest_ns > 0 && st.newest_ns >= st.oldest_ns);
	uint64_t first_ns = st.oldest_ns;
	/* a second call adds nothing twice */
	assert_int_equal(wal_detail_persist(&s.d.r, &s.d.t, 0, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 0);
	take(&s.x, &s.d.t, 0, 40);
	assert_int_equal(wal_detail_persist(&s.d.r, &s.d.t, 0, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 4);
	uint64_t o, n;
	assert_int_equal(wal_detail_ring_span(&s.d.r, &s.d.t, &o, &n), 0);
	assert_true(o > 0 && n >= o);
	/* The ring's ends (ada_detail_ring_ends): its first and last records. */
	assert_int_equal(o, first_ns);
	assert_int_equal(n, st.newest_ns);
	wscene_close(&s);
	check_links(40);
}

/* A window's records whose index events are not taken yet wait
 * (deferred); those not past the window's end by their own timestamp are
 * the ones the window must wait for before it closes (waiting, flight.c):
 * a window that closed without them left them neither written nor
 * counted. */
static void test_persist_waiting(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 30);
	struct wal_detail_stats st = {0};
	/* the window [10, 33]: 10..29 written, 30..39 deferred, 30..33 its own */
	assert_int_equal(window_ev(&s, 10, 33, true, &st), 0);
	assert_int_equal(st.records, 20);
	assert_int_equal(st.deferred, 10);
	assert_int_equal(st.waiting, 4);
	assert_int_equal(st.waiting_in, 4);
	/* a window that starts inside them: 30..39 deferred, 30..35 not past
	 * its end, 32..35 its own by their timestamps (the ones its thread's
	 * last copy counts as unread_at_end should their events never come) */
	struct wal_detail_stats st2 = {0};
	assert_int_equal(window_ev(&s, 32, 35, false, &st2), 0);
	assert_int_equal(st2.records, 0);
	assert_int_equal(st2.deferred, 10);
	assert_int_equal(st2.waiting, 6);
	assert_int_equal(st2.waiting_in, 4);
	/* taken: the next copy writes them, nothing waits */
	take(&s.x, &s.d.t, 0, 40);
	assert_int_equal(window_ev(&s, 10, 33, false, &st), 0);
	assert_int_equal(st.records, 4);
	assert_int_equal(st.deferred, 0);
	assert_int_equal(st.waiting, 0);
	wscene_close(&s);
	check_links(24);
}

/* Window memory (wal_detail_take): records taken out of the ring are
 * persisted from memory after the ring overwrote them; a take without
 * room takes nothing and says so; a take stops at the horizon (what no
 * open window wants yet stays in the ring); what the ring overwrote
 * before a take reached it is the gap, exactly; decided records leave
 * memory. */
static void test_take_memory(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 20);
	uint64_t t9 = s.ev[9].timestamp_ns, t39 = s.ev[39].timestamp_ns;
	struct wal_detail_stats st;
	/* no room: nothing taken, the budget named */
	assert_int_equal(wscene_take(&s, UINT64_MAX, 0, &st), 0);
	assert_int_equal(st.records, 0);
	assert_true(st.budget_spent);
	assert_int_equal(wal_detail_taken_bytes(&s.d.t), 0);
	/* the horizon: 0..9 taken, 10.. left in the ring */
	assert_int_equal(wscene_take(&s, t9, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 10);
	assert_false(st.budget_spent);
	assert_int_equal(st.gap.records, 0);
	assert_true(wal_detail_taken_bytes(&s.d.t) > 0);
	uint64_t held = s.d.r.flight.mem_bytes;
	assert_int_equal(held, wal_detail_taken_bytes(&s.d.t));
	/* the rest (a live take: straight into the block); then the ring
	 * laps many times over every one of them */
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 30);
	assert_int_equal(s.d.r.flight.mem_bytes, held); /* one block holds them all */
	wscene_lap(&s);
	struct ada_slot_info si;
	ada_arena_slot_info(s.x.a, s.d.t.slot, &si);
	assert_true(si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] > 40);
	/* the window [0, 39], with a budget: all 40 from memory */
	struct wal_detail_budget b = {.bytes = UINT64_MAX, .deadline_ns = UINT64_MAX};
	struct wal_detail_stats pst = {0};
	assert_int_equal(wal_detail_persist_window(&s.d.r, &s.d.t, 0, t39, false, &b, &pst), 0);
	assert_int_equal(pst.records, 40);
	assert_int_equal(pst.unlinked, 0);
	assert_false(pst.budget_spent);
	/* decided, they left memory; the next take finds the records the
	 * ring overwrote before any take reached them: exactly those */
	assert_int_equal(wal_detail_taken_bytes(&s.d.t), 0);
	assert_int_equal(s.d.r.flight.mem_bytes, 0);
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	ada_arena_slot_info(s.x.a, s.d.t.slot, &si);
	assert_int_equal(st.gap.records,
	                 si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] - 40);
	assert_int_equal(st.records + st.gap.records, 800);
	wscene_close(&s);
	check_links(40);
}

/* The rest of a gap a live take counted from a moving counter: a take
 * whose counter, read before the program overwrote past it, counted
 * nothing still leaves the gap short, and the thread's end looks for the
 * rest even when the takes had taken everything the ring holds (nothing
 * new to copy). Counted once, exactly. */
static void test_take_end_rest(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 40);
	struct wal_detail_stats st;
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 40);
	/* the ring turns over: a live take finds the gap, exactly */
	wscene_lap(&s);
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	uint64_t gap = st.gap.records, taken = 40 + st.records;
	assert_true(gap > 0);
	assert_int_equal(st.records + gap, 800);
	/* as if its counter had been read before the program overwrote past
	 * where the last take stopped: nothing counted, from a moving counter */
	struct wal_tdetail *dt = s.d.t.dt;
	dt->gap_counted -= gap;
	dt->gap_short = false;
	struct wal_detail_stats gs = {0};
	pd_gap(&s.d.t, dt, dt->taken + dt->gap_counted, 0, dt->taken, 0, false, &gs);
	assert_int_equal(gs.gap.records, 0);
	assert_true(dt->gap_short);
	/* nothing new in the ring; the end counts the rest */
	assert_int_equal(wscene_take(&s, UINT64_MAX, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.gap.records, gap);
	assert_false(dt->gap_short);
	/* again: nothing more */
	assert_int_equal(wscene_take(&s, UINT64_MAX, UINT64_MAX, &st), 0);
	assert_int_equal(st.gap.records, 0);
	struct wal_detail_budget b = {.bytes = UINT64_MAX, .deadline_ns = UINT64_MAX};
	struct wal_detail_stats pst = {0};
	assert_int_equal(wal_detail_persist_window(&s.d.r, &s.d.t, 0, UINT64_MAX, false, &b, &pst),
	                 0);
	assert_int_equal(pst.records, taken);
	wscene_close(&s);
	check_links(taken);
}

/* detail.overwritten (the manifest's) counts each record the ring
 * overwrote once: on a thread's first take, on a live take that got no
 * block (no room: its first round reads no counter), on the next take and
 * at the thread's end it equals the slot's counter. */
static void test_take_overwritten_once(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 40);
	struct wal_detail_stats st;
	struct ada_slot_info si;
	struct wal_detail_budget b = {.bytes = UINT64_MAX, .deadline_ns = UINT64_MAX};
	struct wal_detail_stats pst = {0};
	/* the first take: nothing overwritten yet */
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 40);
	assert_int_equal(s.d.t.dt->overwritten, 0);
	/* the ring turns over; a live take counts its counter */
	wscene_lap(&s);
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	ada_arena_slot_info(s.x.a, s.d.t.slot, &si);
	uint64_t over = si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	assert_true(over > 0);
	assert_int_equal(s.d.t.dt->overwritten, over);
	/* decided, window memory is empty: a take without room gets no block */
	assert_int_equal(wal_detail_persist_window(&s.d.r, &s.d.t, 0, UINT64_MAX, false, &b, &pst),
	                 0);
	assert_int_equal(wal_detail_taken_bytes(&s.d.t), 0);
	emit_pairs(&s.x, 600, 40);
	take(&s.x, &s.d.t, 840, 920);
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, 0, &st), 0);
	assert_int_equal(st.records, 0);
	assert_true(st.budget_spent);
	ada_arena_slot_info(s.x.a, s.d.t.slot, &si);
	over = si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	assert_true(s.d.t.dt->overwritten <= over);
	/* the next take, with room: every record counted once */
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, UINT64_MAX, &st), 0);
	assert_true(st.records > 0);
	assert_int_equal(s.d.t.dt->overwritten, over);
	/* the same before the thread's end: its take and the counter's last
	 * read (flight.c) */
	assert_int_equal(wal_detail_persist_window(&s.d.r, &s.d.t, 0, UINT64_MAX, false, &b, &pst),
	                 0);
	assert_int_equal(wal_detail_taken_bytes(&s.d.t), 0);
	emit_pairs(&s.x, 700, 40);
	take(&s.x, &s.d.t, 920, 1000);
	assert_int_equal(wscene_take(&s, UINT64_MAX - 1, 0, &st), 0);
	assert_true(st.budget_spent);
	assert_int_equal(wscene_take(&s, UINT64_MAX, UINT64_MAX, &st), 0);
	wal_detail_sync_overwritten(&s.d.t);
	ada_arena_slot_info(s.x.a, s.d.t.slot, &si);
	assert_int_equal(s.d.t.dt->overwritten,
	                 si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN]);
	wscene_close(&s);
}

/* A record linked past the index ring's head names no event (the target
 * wrote it): it is decided at once, counted as a bad link when its own
 * timestamp is in the window, never waited for (a window would stay open
 * for ever), counted once however many looks find it, and the records
 * after it are written as if it were not there. */
static void test_persist_bad_link(void **state)
{
	(void)state;
	struct wscene s;
	wscene_arena(&s);
	emit_pairs(&s.x, 0, 5);
	struct ada_producer *p = &ada_producer_tls;
	uint64_t end;
	_Atomic uint64_t *w = ada_detail_reserve(p, ADA_DREC_RETURN_WORDS * 8, &end);
	assert_non_null(w);
	ada_detail_put(w, ADA_DREC_TS, ada_producer_clock_ns());
	ada_detail_put(w, ADA_DREC_LINK, p->head + 100); /* no such event, ever */
	ada_detail_put(w, ADA_DREC_FN, FN(99));
	ada_detail_put(w, ADA_DREC_META, ada_drec_meta(ATF_DETAIL_FUNCTION_RETURN, 0, 0));
	for (uint32_t i = ADA_DREC_REGS; i < ADA_DREC_RETURN_WORDS; i++)
		ada_detail_put(w, i, 0);
	ada_detail_commit(p, end);
	emit_pairs(&s.x, 5, 5);
	wscene_drain(&s, 20);
	struct wal_detail_stats st = {0};
	assert_int_equal(
	    wal_detail_persist_window(&s.d.r, &s.d.t, 0, UINT64_MAX - 1, true, NULL, &st), 0);
	assert_int_equal(st.records, 20);
	assert_int_equal(st.bad_link, 1);
	assert_int_equal(st.deferred, 0);
	assert_int_equal(st.waiting, 0);
	assert_int_equal(st.unlinked, 0);
	/* a window's whole look again: decided before, not counted twice */
	assert_int_equal(
	    wal_detail_persist_window(&s.d.r, &s.d.t, 0, UINT64_MAX - 1, true, NULL, &st), 0);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.bad_link, 0);
	assert_int_equal(st.waiting, 0);
	wscene_close(&s);
	check_links(20);
}

/* A window's walk passes over the records before its range for good
 * (the detail file keeps ring order): their count and time span, for a
 * window created later that reaches back over them (flight.c counts
 * its share as passed_over). */
static void test_persist_passed(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 10, 20);
	const struct atf_index_event *ev = s.ev;
	struct wal_detail_stats st = {0};
	assert_int_equal(window_ev(&s, 12, 15, true, &st), 0);
	assert_int_equal(st.records, 4);
	assert_int_equal(st.passed.records, 12);
	assert_int_equal(st.passed.lo_ns, ev[0].timestamp_ns);
	assert_int_equal(st.passed.hi_ns, ev[11].timestamp_ns);
	assert_true(st.passed.exact);
	/* a window earlier in time, created now: nothing of it can be
	 * written any more (its share of the span above is its loss) */
	bool est = false;
	uint64_t share = wal_gap_share(&st.passed, ev[4].timestamp_ns, ev[7].timestamp_ns, &est);
	/* shared by time, and the events' times are the clock's (a test
	 * preempted between two of them moves the share): the same sum */
	double part = (double)(ev[7].timestamp_ns - ev[4].timestamp_ns) /
	              (double)(ev[11].timestamp_ns - ev[0].timestamp_ns);
	assert_int_equal(share, (uint64_t)(12.0 * part + 0.5));
	assert_true(est);
	struct wal_detail_stats st2 = {0};
	assert_int_equal(window_ev(&s, 4, 7, true, &st2), 0);
	assert_int_equal(st2.records, 0);
	assert_int_equal(st2.passed.records, 0);
	wscene_close(&s);
	check_links(4);
}

/* A window created after another one's walk passed over its records
 * (earlier in time: its fire reached the drain later) cannot have them
 * (the detail file keeps ring order): flight.c counts its share of the
 * span passed over as its passed_over (window_missed), an estimate here
 * (the span crosses its edge), and nothing is written for it. */
static void test_flight_passed_over(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 40);
	const struct atf_index_event *ev = s.ev;
	struct wal_proc *p = &s.d.p;
	/* windows [fire - x, fire + x] around ev[10] and ev[34] that cannot
	 * meet (x is a quarter of the time between them): a span taken from a
	 * few events' own times is long when a loaded machine preempted the
	 * emitting thread among them, and the two windows then merged */
	uint64_t span = (ev[34].timestamp_ns - ev[10].timestamp_ns) / 4;
	wscene_flight(&s, span, span);
	/* the later window first: its walk passes over records 0..~29 */
	assert_int_equal(wscene_fire(&s, ev[34].timestamp_ns, ev[39].timestamp_ns), 1);
	wal_flight_thread_end(&s.d.r, &s.d.t, UINT64_MAX);
	uint64_t written = wal_detail_proc_records(p);
	assert_true(written > 0 && written < 40);
	assert_int_equal(p->window_missed[ADA_MISS_PASSED_OVER], 0);
	/* then one earlier in time */
	assert_int_equal(wscene_fire(&s, ev[10].timestamp_ns, ev[39].timestamp_ns), 2);
	wal_flight_thread_end(&s.d.r, &s.d.t, UINT64_MAX);
	assert_int_equal(wal_detail_proc_records(p), written); /* nothing late */
	assert_true(p->window_missed[ADA_MISS_PASSED_OVER] > 0);
	assert_true(p->window_missed[ADA_MISS_PASSED_OVER] <= 40 - written);
	/* every event taken: nothing waits at its last copy */
	wal_flight_thread_unread(&s.d.r, &s.d.t);
	assert_int_equal(p->window_missed[ADA_MISS_UNREAD_AT_END], 0);
	assert_int_equal(p->window_missed[ADA_MISS_BAD_LINK], 0);
	wscene_close(&s);
}

/* A pass whose take had no room (the pass's budget below a block) then
 * one whose take copies the window's records into window memory, the
 * ring unchanged since the first pass's copy: the second pass's walk
 * still decides them (flight_copy_same counts the takes). Skipped as
 * "nothing new in the ring", they stayed in window memory undecided, the
 * window closed without them and their blocks stayed until the thread's
 * end (control_idlepools under load). */
static void test_flight_take_then_walk(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 40);
	const struct atf_index_event *ev = s.ev;
	struct ada_recorder *r = &s.d.r;
	uint64_t span = ev[39].timestamp_ns - ev[0].timestamp_ns + 1;
	wscene_flight(&s, span, span);
	struct wal_proc *procs[1] = {&s.d.p};
	r->procs = procs;
	r->nprocs = 1;
	r->pass_room_min = 1;
	r->pass_fill_ns = 1ull << 41; /* the pass's time: its most (18 min: no deadline) */
	r->flight.yield.forced = true;
	r->flight.yield.share_pct = 100; /* never held back */
	assert_int_equal(wscene_fire(&s, ev[20].timestamp_ns, ev[39].timestamp_ns), 1);
	/* the first pass: room for no block, nothing taken, a backlog */
	r->flight.pass_room = PD_BLOCK / 2;
	wal_flight_after_pass(r);
	assert_true(r->flight.backlog);
	assert_int_equal(wal_detail_proc_records(&s.d.p), 0);
	assert_int_equal(wal_detail_taken_bytes(&s.d.t), 0);
	/* the next: the take copies all 40, the walk decides them */
	r->flight.pass_room = 0;
	wal_flight_after_pass(r);
	assert_false(r->flight.backlog);
	assert_int_equal(wal_detail_proc_records(&s.d.p), 40);
	assert_int_equal(wal_detail_taken_bytes(&s.d.t), 0);
	r->procs = NULL;
	r->nprocs = 0;
	wscene_close(&s);
	check_links(40);
}

/* A pass whose take found window memory already holding the pass's
 * budget (another thread's blocks, their records waiting for their index
 * events) after the window's end: the take waits for the next pass, and
 * the window stays open for it (a backlog). Without one the window
 * closed at that pass, and its 40 records were never taken: neither
 * written nor counted. */
static void test_flight_take_memory_full(void **state)
{
	(void)state;
	struct wscene s;
	wscene_open(&s, 20, 40);
	const struct atf_index_event *ev = s.ev;
	struct ada_recorder *r = &s.d.r;
	uint64_t span = ev[39].timestamp_ns - ev[0].timestamp_ns + 1;
	wscene_flight(&s, span, span);
	struct wal_proc *procs[1] = {&s.d.p};
	r->procs = procs;
	r->nprocs = 1;
	r->pass_room_min = 1;
	r->pass_fill_ns = 1ull << 41;
	r->flight.yield.forced = true;
	r->flight.yield.share_pct = 100;
	assert_int_equal(wscene_fire(&s, ev[20].timestamp_ns, ev[39].timestamp_ns), 1);
	/* past the window's end and its close slack (flight.c, 100 ms) */
	while (ada_boottime_ns() < ev[20].timestamp_ns + span + 150000000ull)
		usleep(10000);
	r->flight.pass_room = PD_BLOCK / 2;
	r->flight.mem_bytes = PD_BLOCK; /* another thread's block, held */
	wal_flight_after_pass(r);
	assert_true(r->flight.backlog);
	assert_false(ada_trigger_window_at(r->flight.trig, 0)->closed);
	r->flight.mem_bytes = 0; /* that block decided and freed */
	r->flight.pass_room = 0;
	wal_flight_after_pass(r);
	assert_false(r->flight.backlog);
	assert_int_equal(wal_detail_proc_records(&s.d.p), 40);
	r->procs = NULL;
	r->nprocs = 0;
	wscene_close(&s);
	check_links(40);
}

/* One window over the scene's 40 records, ended at once with room detail
 * bytes (wal_flight_thread_end: a thread's file ending under the disk
 * budget); returns the records written, *missed its disk_budget count,
 * *bytes the detail file's. */
static uint64_t end_with_room(uint64_t room, uint64_t *missed, uint64_t *bytes)
{
	struct wscene s;
	wscene_open(&s, 20, 40);
	const struct atf_index_event *ev = s.ev;
	uint64_t span = ev[39].timestamp_ns - ev[0].timestamp_ns + 1;
	wscene_flight(&s, span, span);
	assert_int_equal(wscene_fire(&s, ev[20].timestamp_ns, ev[39].timestamp_ns), 1);
	wal_flight_thread_end(&s.d.r, &s.d.t, room);
	uint64_t written = wal_detail_proc_records(&s.d.p);
	*missed = s.d.p.window_missed[ADA_MISS_DISK_BUDGET];
	*bytes = wal_detail_file_bytes(&s.d.t);
	wscene_close(&s);
	assert_int_equal(teardown(NULL), 0); /* a new directory for the next scene */
	assert_int_equal(setup(NULL), 0);
	return written;
}

/* A thread's file ending with a window open writes no more detail than
 * the disk budget's room (drain.c drain_budget_thread_end_room): the
 * records past it are decided unwritten and counted as the window's
 * disk_budget, every record of the window either written or counted. */
static void test_flight_end_room(void **state)
{
	(void)state;
	uint64_t missed, all_bytes;
	assert_int_equal(end_with_room(UINT64_MAX, &missed, &all_bytes), 40);
	assert_int_equal(missed, 0);
	assert_true(all_bytes > 64);
	uint64_t bytes, room = (all_bytes - 64) / 2; /* half the records' bytes */
	uint64_t written = end_with_room(room, &missed, &bytes);
	assert_true(written > 0 && written < 40);
	assert_int_equal(written + missed, 40);
	assert_true(bytes <= 64 + room); /* the header and what fit */
	assert_int_equal(end_with_room(0, &missed, &bytes), 0);
	assert_int_equal(missed, 40);
}

/* A recording of an aarch64 program: a RETURN record's two value words
 * are x0:x1, so they land in x_regs[0..1], not x86_64's rax:rdx slots
 * (docs/format.md, the arm64 table); a CALL's are as on x86_64. */
static void test_persist_arm64_return(void **state)
{
	(void)state;
	struct wscene s;
	wscene_arena(&s);
	emit_pairs(&s.x, 1, 1);
	wscene_drain(&s, 2);
	s.d.r.arch = s.d.p.arch = ATF_ARCH_ARM64;
	struct wal_detail_stats st;
	assert_int_equal(wal_detail_persist(&s.d.r, &s.d.t, 0, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 2);
	wscene_close(&s);
	size_t dl;
	uint8_t *db = slurp("detail.atf", &dl);
	struct ada_atf_detail *dd;
	assert_int_equal(ada_atf_detail_open_mem(db, dl, 0, &dd), 0);
	assert_int_equal(ada_atf_detail_count(dd), 2);
	for (uint64_t j = 0; j < 2; j++) {
		const struct atf_detail_event_header *e = ada_atf_detail_get(dd, j);
		const struct atf_detail_function_payload *p = ada_atf_detail_function(e, NULL);
		assert_non_null(p);
		uint64_t w0 = e->index_seq * 1000 + ADA_DREC_REGS; /* emit_one's words */
		assert_int_equal(p->x_regs[0], w0);
		if (e->event_type == ATF_DETAIL_FUNCTION_RETURN) {
			assert_int_equal(p->x_regs[1], w0 + 1);
			assert_int_equal(p->x_regs[6], 0);
			assert_int_equal(p->x_regs[7], 0);
			assert_int_equal(p->lr, w0 + 2);
		}
	}
	ada_atf_detail_free(dd);
	free(db);
}

/* Windows: only records in [from, to], each once; the first 6 events were
 * in an earlier generation (file_ring_base 6): their records are counted
 * as unlinked, never written. */
static void test_persist_windows(void **state)
{
	(void)state;
	struct pfx x;
	pfx_open(&x);
	emit_pairs(&x, 0, 30);
	const struct atf_index_event *ev;
	assert_int_equal(ada_index_ring_peek(x.a, ada_producer_tls.slot, &ev), 60);
	uint64_t t20 = ev[20].timestamp_ns, t29 = ev[29].timestamp_ns;
	struct pdrain d;
	pdrain_open(&d, &x, "index.atf", 6);
	take(&x, &d.t, 6, 60);
	/* On disk before the window is persisted (a pre-roll's events): the
	 * links go through the disk window, on the file when the call returns. */
	ada_wal_file_submit(d.t.f);
	while (ada_wal_file_durable(d.t.f) < 54)
		assert_true(ada_wal_io_reap(d.io, true) >= 0);
	struct wal_detail_stats st;
	/* a window over the generation boundary: 0..5 unlinked, 6..29 written */
	assert_int_equal(wal_detail_persist(&d.r, &d.t, 0, t29, &st), 0);
	assert_int_equal(st.unlinked, 6);
	assert_int_equal(st.records, 24);
	assert_int_equal(d.t.f->patch_by[WAL_PATCH_WINDOW], 24);
	assert_int_equal(d.io->dwin_fills, 1);
	assert_int_equal(d.io->dwin_writebacks, 1);
	for (uint32_t i = 0; i < 54; i++) { /* the file itself, not the window */
		uint32_t v;
		assert_int_equal(pread(d.t.f->fd, &v, 4, 64 + i * 32ull + DSEQ_OFF), 4);
		assert_int_equal(v, i < 24 ? i : ATF_NO_DETAIL);
	}
	/* an overlapping window writes only what is new: 30..39 */
	assert_int_equal(wal_detail_persist(&d.r, &d.t, t20, ev[39].timestamp_ns, &st), 0);
	assert_int_equal(st.records, 10);
	assert_int_equal(st.unlinked, 0);
	/* a later window skips 40..49 for good and writes 50..59 */
	assert_int_equal(wal_detail_persist(&d.r, &d.t, ev[50].timestamp_ns, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 10);
	assert_int_equal(wal_detail_persist(&d.r, &d.t, 0, UINT64_MAX, &st), 0);
	assert_int_equal(st.records, 0);
	pdrain_close(&d);
	check_links(44);
	pfx_close(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc_delta),
	    cmocka_unit_test(test_crc_batch),
	    cmocka_unit_test_setup_teardown(test_dfile_golden, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch_everywhere, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch_held, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch_window_fail, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_patch_queued_span, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_direct_identical, setup_direct, teardown_direct),
	    cmocka_unit_test_setup_teardown(test_direct_fallback, setup_none, teardown_direct),
	    cmocka_unit_test_setup_teardown(test_persist_all, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_persist_waiting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_take_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_take_end_rest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_take_overwritten_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_persist_arm64_return, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_persist_bad_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_persist_passed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flight_passed_over, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flight_end_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flight_take_then_walk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flight_take_memory_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_recent_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_link_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_reserve_ring, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_recent_grows, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_recent_reused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_recent_decoded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cidx_recent_decoded_direct, setup_direct,
	                                    teardown_direct),
	    cmocka_unit_test_setup_teardown(test_persist_windows, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
