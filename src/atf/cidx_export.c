/*
 * The compact index as strict ATF v2: the export (header, the decoded
 * events, footer with the CRC-32 of errata 3) and the validator's entry
 * for compact files, which checks the compact structure and then runs the
 * ATF v2 rules on the exported form.
 *
 * Threads: any (no shared state but export_ring_lock, held only while a
 * ring is mapped or unmapped). Callers: the validator
 * (ada_atf_validate_index_buf() on an "ATC1" file), tools that export.
 */
#define _GNU_SOURCE /* O_DIRECT, fallocate */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <liburing.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "atf_internal.h"
#include "cidx.h"

/* Decodes whole blocks into ev while they decode; returns the events. */
static uint64_t export_blocks(const struct ada_cidx_dec *d, struct atf_index_event *ev,
                              size_t *bad_block)
{
	uint64_t n = 0;

	*bad_block = SIZE_MAX;
	for (size_t b = 0; b < ada_cidx_dec_nblocks(d); b++) {
		uint64_t first, t0;
		uint32_t k;
		ada_cidx_dec_block_info(d, b, &first, &k, &t0);
		if (ada_cidx_dec_block(d, b, ev + first)) {
			*bad_block = b;
			break;
		}
		n = first + k;
	}
	return n;
}

#define EXPORT_HUGE_BYTES (2u << 20) /* a transparent huge page */

/* A big decode buffer asks for transparent huge pages: the decode wrote
 * every 4 KiB page of it for the first time, and their faults were a fifth
 * of `ada validate`'s time on a big compact file. Advice: an error (no
 * THP) changes nothing. */
static void export_huge(void *p, size_t len)
{
	uintptr_t lo = ((uintptr_t)p + EXPORT_HUGE_BYTES - 1) & ~(uintptr_t)(EXPORT_HUGE_BYTES - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(EXPORT_HUGE_BYTES - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* d's events decoded once into a new ATF v2 form (*out, *out_len): header,
 * the events of the blocks before the first that does not decode (*bad,
 * SIZE_MAX: none), footer. */
static int export_dec(const struct ada_cidx_dec *d, uint8_t **out, size_t *out_len, size_t *bad)
{
	struct atf_index_header h;
	struct atf_index_footer f;
	const struct ada_cidx_file_header *c = ada_cidx_dec_header(d);
	struct ada_atf_file_info info = {c->thread_id, c->arch, c->os, c->clock_type,
	                                 c->flags & ATF_INDEX_FLAG_HAS_DETAIL};
	uint64_t n = ada_cidx_dec_count(d);
	uint8_t *p = malloc(2 * ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE);
	if (!p)
		return -ENOMEM;
	export_huge(p, 2 * ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE);
	struct atf_index_event *ev = (void *)(p + ATF_HEADER_SIZE);
	n = export_blocks(d, ev, bad);
	uint64_t t0 = n ? ev[0].timestamp_ns : 0, t1 = n ? ev[n - 1].timestamp_ns : 0;
	ada_atf_index_header_fill(&h, &info, n, t0, t1);
	ada_atf_index_footer_fill(&f, ada_atf_crc32(0, ev, n * ATF_INDEX_EVENT_SIZE), n, t0, t1);
	memcpy(p, &h, sizeof(h));
	memcpy(p + ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE, &f, sizeof(f));
	*out = p;
	*out_len = 2 * ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE;
	return 0;
}

int ada_cidx_to_atf(const void *buf, size_t len, unsigned flags, uint8_t **out, size_t *out_len)
{
	struct ada_cidx_dec *d;
	size_t bad;
	int err = ada_cidx_dec_open(buf, len, flags, &d);

	if (err)
		return err;
	err = export_dec(d, out, out_len, &bad);
	ada_cidx_dec_free(d);
	if (!err && bad != SIZE_MAX && !(flags & ADA_ATF_OPEN_SALVAGE)) {
		free(*out);
		return -EBADMSG;
	}
	return err;
}

static int export_write(int fd, const void *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t k =
		    pwrite(fd, (const uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		done += (size_t)k;
	}
	return 0;
}

#define EXPORT_DROP_BYTES (8u << 20) /* a mapped input's bytes given back at a time */

/* The stream has read the mapped input's bytes [*from, to): every 8 MiB
 * they leave the resident set (the page cache keeps them), so that an
 * export's memory stays a few MiB whatever the file's size. map NULL:
 * the caller's buffer, not ours to drop. */
static void export_drop(const uint8_t *map, uint64_t *from, uint64_t to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!map || to < *from || to - *from < EXPORT_DROP_BYTES)
		return;
	uintptr_t lo = ((uintptr_t)map + *from + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)map + to) & ~(page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: an error changes nothing */
	*from = to;
}

/* The output of an export. A regular file is written from
 * EXPORT_DIRECT_NBUF staging buffers in turn, each written by io_uring
 * while the next one fills, into space allocated ahead (fallocate): the
 * ATF v2 form is 32 bytes an event, and plain buffered writes left the
 * kernel's copy and ext4's block-by-block delayed allocation most of an
 * export's CPU while its writeback trailed the disk. The writes are
 * buffered with RWF_DONTCACHE (write-back started at each write, the pages
 * dropped once written), which this machine's ext4 took faster than
 * O_DIRECT, the final fdatasync included, on a second CPU (io_uring's
 * worker copies into the page cache while the next piece decodes:
 * docs/benchmarks.md, "The export's write mode"). A kernel or file system
 * without RWF_DONTCACHE (before 6.14; EOPNOTSUPP, EINVAL) takes O_DIRECT,
 * whole aligned pieces at aligned offsets, as before; one that refuses
 * that too (EINVAL) the page cache; the first piece, written
 * synchronously, finds out, and the way taken is told (enum
 * ada_cidx_export_how). Anything that is not an empty regular file (a pipe, /dev/null), a small
 * export or a ring that cannot be had takes the page cache. So does a file on tmpfs, which is page
 * cache only: there a staged write is the same copy into its pages, after
 * a copy into the staging buffer and the allocation of every page ahead
 * (fallocate): more CPU than writing each decoded piece while it is in
 * cache (docs/benchmarks.md). The bytes are the same every way, and on
 * disk when the export returns (export_fd(): fdatasync). */
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080 /* Linux 6.14+ (uapi linux/fs.h) */
#endif
#define EXPORT_DIRECT_BYTES (2u << 20)
#define EXPORT_DIRECT_NBUF 4u
#define EXPORT_DIRECT_ALIGN 4096u /* the largest logical block size in use */
/* A smaller export gains nothing from a ring and its buffers. */
#define EXPORT_DIRECT_MIN (2ull * EXPORT_DIRECT_BYTES)
struct export_out {
	int fd;
	bool staged;                       /* through the ring, else plain writes */
	bool dontcache;                    /* staged writes carry RWF_DONTCACHE */
	bool refuse;                       /* ADA_CIDX_EXPORT_NO_DONTCACHE (tests) */
	bool odirect;                      /* O_DIRECT set on fd (staged, not dontcache) */
	struct io_uring ring;              /* while staged and past the first piece */
	uint8_t *buf[EXPORT_DIRECT_NBUF];  /* EXPORT_DIRECT_BYTES each */
	uint32_t busy[EXPORT_DIRECT_NBUF]; /* bytes of a write in flight, 0 when free */
	uint32_t cur, inflight;
	size_t len;                   /* bytes staged in buf[cur] */
	uint64_t off;                 /* file offset of buf[cur][0] */
	int fl;                       /* the fd's status flags before O_DIRECT */
	int err;                      /* the first failed write's */
	enum ada_cidx_export_how how; /* the way the bulk went */
};

/* A ring is mapped and unmapped under this lock. liburing maps its rings
 * with system calls of its own, which ThreadSanitizer does not see: the
 * export's workers (one ring per file) got a ring where another thread's
 * unmapped one had been, and its first writes looked like a race with the
 * other thread's last ones. The lock orders the two threads' use of those
 * bytes as the kernel does; once per file, it costs nothing measurable. */
static pthread_mutex_t export_ring_lock = PTHREAD_MUTEX_INITIALIZER;

static int export_ring_init(struct io_uring *ring, unsigned entries)
{
	pthread_mutex_lock(&export_ring_lock);
	int r = io_uring_queue_init(entries, ring, 0);
	pthread_mutex_unlock(&export_ring_lock);
	return r;
}

static void export_ring_exit(struct io_uring *ring)
{
	pthread_mutex_lock(&export_ring_lock);
	io_uring_queue_exit(ring);
	pthread_mutex_unlock(&export_ring_lock);
}

/* Back to what the fd was; the buffers freed. */
static void export_out_release(struct export_out *o)
{
	if (o->odirect)
		(void)fcntl(o->fd, F_SETFL, o->fl); /* a failure shows in the next write */
	if (o->staged)
		export_ring_exit(&o->ring);
	o->staged = o->dontcache = o->odirect = false;
	for (uint32_t i = 0; i < EXPORT_DIRECT_NBUF; i++) {
		free(o->buf[i]);
		o->buf[i] = NULL;
	}
}

/* total: the file's final size, for the space allocated ahead. flags:
 * ADA_CIDX_EXPORT_DIRECT_ONLY, ADA_CIDX_EXPORT_NO_DONTCACHE (cidx.h). */
static void export_out_init(struct export_out *o, int fd, uint64_t total, unsigned flags)
{
	struct stat st;
	*o = (struct export_out){.fd = fd, .how = ADA_CIDX_EXPORT_PLAIN};
	o->fl = fcntl(fd, F_GETFL);
	struct statfs sf;
	if (total < EXPORT_DIRECT_MIN || o->fl < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != 0 || (fstatfs(fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC))
		return;
	for (uint32_t i = 0; i < EXPORT_DIRECT_NBUF; i++)
		if (posix_memalign((void **)&o->buf[i], EXPORT_DIRECT_ALIGN, EXPORT_DIRECT_BYTES)) {
			o->buf[i] = NULL;
			export_out_release(o);
			return;
		}
	if (export_ring_init(&o->ring, EXPORT_DIRECT_NBUF) < 0) {
		export_out_release(o);
		return;
	}
	o->staged = true;
	o->dontcache = !(flags & ADA_CIDX_EXPORT_DIRECT_ONLY);
	o->refuse = (flags & ADA_CIDX_EXPORT_NO_DONTCACHE) != 0;
	o->how = o->dontcache ? ADA_CIDX_EXPORT_DONTCACHE : ADA_CIDX_EXPORT_DIRECT;
	/* Advice: without it the writes allocate as they go. KEEP_SIZE, so
	 * a failed export is no longer than what it wrote. */
	(void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)total);
}

/* Takes one completion: its buffer is free again. */
static void export_out_reap(struct export_out *o)
{
	struct io_uring_cqe *cqe;
	int r = io_uring_wait_cqe(&o->ring, &cqe);
	if (r < 0) { /* the ring itself failed: nothing more will complete */
		o->err = o->err ? o->err : r;
		o->inflight = 0;
		memset(o->busy, 0, sizeof(o->busy));
		return;
	}
	uint32_t i = (uint32_t)io_uring_cqe_get_data64(cqe);
	if (cqe->res != (int)o->busy[i % EXPORT_DIRECT_NBUF] && !o->err)
		o->err = cqe->res < 0 ? cqe->res : -EIO;
	io_uring_cqe_seen(&o->ring, cqe);
	o->busy[i % EXPORT_DIRECT_NBUF] = 0;
	o->inflight--;
}

/* The first piece (buf[0], o->len bytes, len padded), written
 * synchronously: does the file take RWF_DONTCACHE, else O_DIRECT? A
 * file that takes neither goes through the page cache from here on. */
static int export_out_first(struct export_out *o, uint32_t len)
{
	if (o->dontcache) {
		struct iovec v = {o->buf[0], o->len};
		errno = EOPNOTSUPP;
		ssize_t k = o->refuse ? -1 : pwritev2(o->fd, &v, 1, 0, RWF_DONTCACHE);
		if (k == (ssize_t)o->len)
			return 0;
		if (k >= 0 || (errno != EOPNOTSUPP && errno != EINVAL))
			return k < 0 ? -errno : -EIO;
		o->dontcache = false; /* not here: O_DIRECT, as before 6.14 */
		o->how = ADA_CIDX_EXPORT_DIRECT_FALLBACK;
	}
	ssize_t k = -1;
	if (fcntl(o->fd, F_SETFL, o->fl | O_DIRECT) == 0) {
		o->odirect = true;
		k = pwrite(o->fd, o->buf[0], len, 0);
	}
	if (k < 0 && (!o->odirect || errno == EINVAL)) {
		uint8_t *b = o->buf[0];
		o->buf[0] = NULL;
		export_out_release(o);
		o->how = ADA_CIDX_EXPORT_PLAIN;
		int r = export_write(o->fd, b, o->len, 0);
		free(b);
		return r ? r : 1;
	}
	return k == (ssize_t)len ? 0 : k < 0 ? -errno : -EIO;
}

/* Sends buf[cur] (len bytes; with O_DIRECT zero-padded to the alignment,
 * cut off at finish) and moves to the next buffer, once its write is
 * done. */
static int export_out_send(struct export_out *o)
{
	uint32_t len =
	    (uint32_t)((o->len + EXPORT_DIRECT_ALIGN - 1) & ~(size_t)(EXPORT_DIRECT_ALIGN - 1));
	memset(o->buf[o->cur] + o->len, 0, len - o->len);
#if defined(__x86_64__)
	_mm_sfence(); /* export_stage()'s streamed stores before the write reads them */
#endif
	if (o->off == 0) {
		int r = export_out_first(o, len);
		if (r) { /* < 0: failed; 1: written through the page cache */
			if (r > 0)
				o->off = o->len, o->len = 0;
			return r < 0 ? r : 0;
		}
	} else {
		struct io_uring_sqe *sqe =
		    io_uring_get_sqe(&o->ring); /* a free buffer has a free entry */
		if (!sqe)
			return -EBUSY;
		len = o->dontcache ? (uint32_t)o->len : len;
		io_uring_prep_write(sqe, o->fd, o->buf[o->cur], len, o->off);
		sqe->rw_flags = o->dontcache ? RWF_DONTCACHE : 0;
		io_uring_sqe_set_data64(sqe, o->cur);
		int r = io_uring_submit(&o->ring);
		if (r < 0)
			return r;
		o->busy[o->cur] = len;
		o->inflight++;
	}
	o->off += o->len;
	o->len = 0;
	o->cur = (o->cur + 1) % EXPORT_DIRECT_NBUF;
	while (o->busy[o->cur] && !o->err)
		export_out_reap(o);
	return o->err;
}

/* Copies len bytes into a staging buffer with stores that bypass the
 * cache where they can (x86-64, 16-byte aligned, whole 64-byte lines):
 * the buffer is only read again by the disk's DMA, and ordinary stores
 * first fetched each of its cold lines (the copy was half an export's
 * CPU); an sfence in export_out_send() orders them before the write. */
static void export_stage(uint8_t *dst, const uint8_t *src, size_t len)
{
#if defined(__x86_64__)
	if (len % 64 == 0 && (uintptr_t)dst % 16 == 0 && (uintptr_t)src % 16 == 0) {
		__m128i *d = (void *)dst;
		const __m128i *s = (const void *)src;
		for (size_t i = 0; i < len / 16; i += 4) {
			_mm_stream_si128(d + i, _mm_load_si128(s + i));
			_mm_stream_si128(d + i + 1, _mm_load_si128(s + i + 1));
			_mm_stream_si128(d + i + 2, _mm_load_si128(s + i + 2));
			_mm_stream_si128(d + i + 3, _mm_load_si128(s + i + 3));
		}
		return;
	}
#endif
	memcpy(dst, src, len);
}

/* The next len bytes of the file, at off (every byte before it written
 * or staged). */
static int export_out_put(struct export_out *o, const void *p, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		if (!o->staged)
			return export_write(o->fd, (const uint8_t *)p + done, len - done,
			                    off + done);
		size_t k = EXPORT_DIRECT_BYTES - o->len < len - done ? EXPORT_DIRECT_BYTES - o->len
		                                                     : len - done;
		export_stage(o->buf[o->cur] + o->len, (const uint8_t *)p + done, k);
		o->len += k;
		done += k;
		int r = o->len == EXPORT_DIRECT_BYTES ? export_out_send(o) : 0;
		if (r)
			return r;
	}
	return 0;
}

/* The staged rest written, every write waited for; the padding, and past
 * a failed or salvaged export the space allocated ahead, cut off; the fd
 * as it came. */
static int export_out_finish(struct export_out *o)
{
	int r = o->staged && o->len ? export_out_send(o) : 0;
	while (o->staged && o->inflight)
		export_out_reap(o);
	r = r ? r : o->err;
	if (!r && o->staged && ftruncate(o->fd, (off_t)o->off) < 0)
		r = -errno;
	export_out_release(o);
	return r;
}

/* What the ATF v2 file holds so far: events, their CRC-32, time range. */
struct export_sum {
	uint64_t n, t0, t1;
	uint32_t crc;
};

/* Decodes and writes the events from offset ATF_HEADER_SIZE a piece at a
 * time (the iterator's buffer, still in cache when the kernel copies it),
 * the CRC-32 and time range kept as they go. At the first block that does
 * not decode (*bad) the sum goes back to the whole blocks before it, as
 * SALVAGE reads (the pieces of it written are overwritten by the footer
 * or cut off by the caller). */
static int export_stream(const struct ada_cidx_dec *d, const uint8_t *map, struct export_out *out,
                         struct export_sum *sum, bool *bad)
{
	struct ada_cidx_iter it;
	const struct atf_index_event *ev;
	struct export_sum s = {0}, whole = {0};
	uint64_t dropped = 0, off;
	uint32_t len;
	long k = 0;
	int err = ada_cidx_iter_init(&it, d, 0);

	while (!err && (k = ada_cidx_iter_next(&it, &ev)) > 0) {
		s.t0 = s.n ? s.t0 : ev[0].timestamp_ns;
		s.t1 = ev[k - 1].timestamp_ns;
		s.crc = ada_atf_crc32(s.crc, ev, (size_t)k * ATF_INDEX_EVENT_SIZE);
		err = export_out_put(out, ev, (size_t)k * ATF_INDEX_EVENT_SIZE,
		                     ATF_HEADER_SIZE + s.n * ATF_INDEX_EVENT_SIZE);
		s.n += (uint64_t)k;
		if (!it.left) { /* a block's last piece: it decoded whole */
			whole = s;
			ada_cidx_dec_block_span(d, it.block - 1, &off, &len);
			export_drop(map, &dropped, off + len);
		}
	}
	ada_cidx_iter_fini(&it);
	*bad = !err && k < 0;
	*sum = *bad ? whole : s;
	return err;
}

/* ada_cidx_to_atf_fd(); in >= 0: buf maps the file in, read at open
 * with pread and given back as the stream goes (export_drop()). */
static int export_fd(const void *buf, size_t len, int in, unsigned flags, int fd,
                     enum ada_cidx_export_how *how)
{
	struct ada_cidx_dec *d;
	struct atf_index_header h;
	struct atf_index_footer f;
	unsigned oflags = flags & ~(ADA_CIDX_EXPORT_DIRECT_ONLY | ADA_CIDX_EXPORT_NO_DONTCACHE);
	int err = ada_cidx_dec_open_fd(buf, len, in, oflags, &d);
	if (err)
		return err;
	if (in >= 0)
		atf_guard_test_shrink(in, len);
	const struct ada_cidx_file_header *c = ada_cidx_dec_header(d);
	struct ada_atf_file_info info = {c->thread_id, c->arch, c->os, c->clock_type,
	                                 c->flags & ATF_INDEX_FLAG_HAS_DETAIL};
	struct export_sum sum = {0};
	struct export_out out;
	bool bad = false;
	export_out_init(&out, fd,
	                2 * ATF_HEADER_SIZE + ada_cidx_dec_count(d) * ATF_INDEX_EVENT_SIZE, flags);
	/* The placeholder: a reader of an incomplete file sees no header. */
	err = export_out_put(&out, memset(&h, 0, sizeof(h)), sizeof(h), 0);
	if (!err)
		err = export_stream(d, in >= 0 ? buf : NULL, &out, &sum, &bad);
	int fin = export_out_finish(&out);
	if (how)
		*how = out.how;
	err = err ? err : fin;
	ada_cidx_dec_free(d);
	if (!err && bad && !(oflags & ADA_ATF_OPEN_SALVAGE))
		err = -EBADMSG;
	if (err)
		return err;
	uint64_t end = ATF_HEADER_SIZE + sum.n * ATF_INDEX_EVENT_SIZE;
	ada_atf_index_header_fill(&h, &info, sum.n, sum.t0, sum.t1);
	ada_atf_index_footer_fill(&f, sum.crc, sum.n, sum.t0, sum.t1);
	err = export_write(fd, &f, sizeof(f), end);
	if (!err && bad && ftruncate(fd, (off_t)(end + sizeof(f))) < 0)
		err = -errno; /* a bad block's pieces written past the footer */
	err = err ? err : export_write(fd, &h, sizeof(h), 0);
	/* Durable at return, whichever way the bulk went: with RWF_DONTCACHE
	 * this waits for the write-back started at each write; after O_DIRECT
	 * it writes the header, footer and the extents' conversion. */
	if (!err && fdatasync(fd) < 0 && errno != EINVAL)
		err = -errno;
	return err;
}

int ada_cidx_to_atf_fd(const void *buf, size_t len, unsigned flags, int fd)
{
	return export_fd(buf, len, -1, flags, fd, NULL);
}

int ada_cidx_file_to_atf_fd(int in, size_t len, unsigned flags, int fd,
                            enum ada_cidx_export_how *how)
{
	if (len == 0)
		return -EBADMSG;
	const uint8_t *map;
	int slot;
	int err = atf_guard_map(in, len, &map, &slot);
	if (err)
		return err;
	err = export_fd(map, len, in, flags, fd, how);
	/* A file that shrank under the mapping read as zeros past its new
	 * end: what was written is not its conversion. */
	if (atf_guard_shrank(slot) && (!err || err == -EBADMSG))
		err = -ESTALE;
	atf_guard_unmap(map, len, slot);
	return err;
}

static void cv_report(struct ada_atf_report *r, const char *path, uint64_t off, const char *msg)
{
	r->errors++;
	if (r->fn)
		r->fn(r->ctx, ADA_ATF_ERROR, path, off, msg);
}

/* The compact structure: finished and consistent, every block decoding.
 * That one decode is also the file's ATF v2 form (*v2, *v2len): what
 * ada_cidx_to_atf() with SALVAGE makes of a file whose every block
 * decodes; NULL when the structure is not right. */
static bool cv_structure(const char *path, const void *buf, size_t len, struct ada_atf_report *r,
                         uint8_t **v2, size_t *v2len)
{
	struct ada_cidx_dec *d;
	char msg[256];
	size_t bad;

	*v2 = NULL;
	if (ada_cidx_dec_open(buf, len, 0, &d) == 0) {
		if (export_dec(d, v2, v2len, &bad)) {
			ada_cidx_dec_free(d);
			cv_report(r, path, 0, "compact index (ATC1): out of memory to decode it");
			return false;
		}
		if (bad != SIZE_MAX) {
			uint64_t first, t0;
			uint32_t k;
			ada_cidx_dec_block_info(d, bad, &first, &k, &t0);
			snprintf(msg, sizeof(msg),
			         "compact index (ATC1): block %zu (events %" PRIu64 "..) does not "
			         "decode: CRC-32 or coded events damaged",
			         bad, first);
			cv_report(r, path, 0, msg);
			free(*v2);
			*v2 = NULL;
		}
		ada_cidx_dec_free(d);
		return bad == SIZE_MAX;
	}
	if (ada_cidx_dec_open(buf, len, ADA_ATF_OPEN_SALVAGE, &d) == 0) {
		snprintf(msg, sizeof(msg),
		         "compact index (ATC1) not finished or inconsistent (footer, block table, "
		         "counts or link table); %" PRIu64
		         " events in %zu whole blocks are readable "
		         "(ada recover finishes a recording's files)",
		         ada_cidx_dec_count(d), ada_cidx_dec_nblocks(d));
		ada_cidx_dec_free(d);
	} else {
		snprintf(msg, sizeof(msg), "compact index (ATC1): unusable header");
	}
	cv_report(r, path, 0, msg);
	return false;
}

void atf_cidx_validate_keep(const char *path, const void *buf, size_t len, struct ada_atf_report *r,
                            struct ada_atf_vfile *info, uint8_t **keep, size_t *keep_len)
{
	uint8_t *v2;
	size_t v2len;

	memset(info, 0, sizeof(*info));
	if (keep)
		*keep = NULL;
	bool ok = cv_structure(path, buf, len, r, &v2, &v2len);
	/* A damaged file: the event rules on what a salvaging reader gets. */
	if (!v2 && ada_cidx_to_atf(buf, len, ADA_ATF_OPEN_SALVAGE, &v2, &v2len))
		return;
	/* The event rules, on what a reader gets; offsets are of that form. */
	char *vpath = atf_strdup_printf("%s (as ATF v2)", path);
	ada_atf_validate_index_buf(vpath ? vpath : path, v2, v2len, r, info);
	info->usable = info->usable && ok;
	free(vpath);
	if (keep && ok) {
		*keep = v2;
		*keep_len = v2len;
		return;
	}
	free(v2);
}

void ada_cidx_validate_buf(const char *path, const void *buf, size_t len, struct ada_atf_report *r,
                           struct ada_atf_vfile *info)
{
	atf_cidx_validate_keep(path, buf, len, r, info, NULL, NULL);
}
