/*
 * The compact index as strict ATF v2: the export (header, the decoded
 * events, footer with the CRC-32 of errata 3) and the validator's entry
 * for compact files, which checks the compact structure and then runs the
 * ATF v2 rules on the exported form.
 *
 * Threads: any (no shared state). Callers: the validator
 * (ada_atf_validate_index_buf() on an "ATC1" file), tools that export.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

int ada_cidx_to_atf(const void *buf, size_t len, unsigned flags, uint8_t **out, size_t *out_len)
{
	struct ada_cidx_dec *d;
	struct atf_index_header h;
	struct atf_index_footer f;
	size_t bad;
	int err = ada_cidx_dec_open(buf, len, flags, &d);

	if (err)
		return err;
	const struct ada_cidx_file_header *c = ada_cidx_dec_header(d);
	struct ada_atf_file_info info = {c->thread_id, c->arch, c->os, c->clock_type,
	                                 c->flags & ATF_INDEX_FLAG_HAS_DETAIL};
	uint64_t n = ada_cidx_dec_count(d);
	uint8_t *p = malloc(2 * ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE);
	if (!p) {
		ada_cidx_dec_free(d);
		return -ENOMEM;
	}
	struct atf_index_event *ev = (void *)(p + ATF_HEADER_SIZE);
	n = export_blocks(d, ev, &bad);
	ada_cidx_dec_free(d);
	if (bad != SIZE_MAX && !(flags & ADA_ATF_OPEN_SALVAGE)) {
		free(p);
		return -EBADMSG;
	}
	uint64_t t0 = n ? ev[0].timestamp_ns : 0, t1 = n ? ev[n - 1].timestamp_ns : 0;
	ada_atf_index_header_fill(&h, &info, n, t0, t1);
	ada_atf_index_footer_fill(&f, ada_atf_crc32(0, ev, n * ATF_INDEX_EVENT_SIZE), n, t0, t1);
	memcpy(p, &h, sizeof(h));
	memcpy(p + ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE, &f, sizeof(f));
	*out = p;
	*out_len = 2 * ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE;
	return 0;
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
static int export_stream(const struct ada_cidx_dec *d, const uint8_t *map, int fd,
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
		err = export_write(fd, ev, (size_t)k * ATF_INDEX_EVENT_SIZE,
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
static int export_fd(const void *buf, size_t len, int in, unsigned flags, int fd)
{
	struct ada_cidx_dec *d;
	struct atf_index_header h;
	struct atf_index_footer f;
	int err = ada_cidx_dec_open_fd(buf, len, in, flags, &d);
	if (err)
		return err;
	const struct ada_cidx_file_header *c = ada_cidx_dec_header(d);
	struct ada_atf_file_info info = {c->thread_id, c->arch, c->os, c->clock_type,
	                                 c->flags & ATF_INDEX_FLAG_HAS_DETAIL};
	struct export_sum sum = {0};
	bool bad = false;
	/* The placeholder: a reader of an incomplete file sees no header. */
	err = export_write(fd, memset(&h, 0, sizeof(h)), sizeof(h), 0);
	if (!err)
		err = export_stream(d, in >= 0 ? buf : NULL, fd, &sum, &bad);
	ada_cidx_dec_free(d);
	if (!err && bad && !(flags & ADA_ATF_OPEN_SALVAGE))
		err = -EBADMSG;
	if (err)
		return err;
	uint64_t end = ATF_HEADER_SIZE + sum.n * ATF_INDEX_EVENT_SIZE;
	ada_atf_index_header_fill(&h, &info, sum.n, sum.t0, sum.t1);
	ada_atf_index_footer_fill(&f, sum.crc, sum.n, sum.t0, sum.t1);
	err = export_write(fd, &f, sizeof(f), end);
	if (!err && bad && ftruncate(fd, (off_t)(end + sizeof(f))) < 0)
		err = -errno; /* a bad block's pieces written past the footer */
	return err ? err : export_write(fd, &h, sizeof(h), 0);
}

int ada_cidx_to_atf_fd(const void *buf, size_t len, unsigned flags, int fd)
{
	return export_fd(buf, len, -1, flags, fd);
}

int ada_cidx_file_to_atf_fd(int in, size_t len, unsigned flags, int fd)
{
	if (len == 0)
		return -EBADMSG;
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, in, 0);
	if (map == MAP_FAILED)
		return -errno;
	int err = export_fd(map, len, in, flags, fd);
	munmap(map, len);
	return err;
}

static void cv_report(struct ada_atf_report *r, const char *path, uint64_t off, const char *msg)
{
	r->errors++;
	if (r->fn)
		r->fn(r->ctx, ADA_ATF_ERROR, path, off, msg);
}

/* The compact structure: finished and consistent, every block decoding. */
static bool cv_structure(const char *path, const void *buf, size_t len, struct ada_atf_report *r)
{
	struct ada_cidx_dec *d;
	char msg[256];
	size_t bad;

	if (ada_cidx_dec_open(buf, len, 0, &d) == 0) {
		struct atf_index_event *ev = malloc((ada_cidx_dec_count(d) + 1) * sizeof(*ev));
		if (!ev) {
			ada_cidx_dec_free(d);
			cv_report(r, path, 0, "compact index (ATC1): out of memory to decode it");
			return false;
		}
		export_blocks(d, ev, &bad);
		if (bad != SIZE_MAX) {
			uint64_t first, t0;
			uint32_t k;
			ada_cidx_dec_block_info(d, bad, &first, &k, &t0);
			snprintf(msg, sizeof(msg),
			         "compact index (ATC1): block %zu (events %" PRIu64 "..) does not "
			         "decode: CRC-32 or coded events damaged",
			         bad, first);
			cv_report(r, path, 0, msg);
		}
		free(ev);
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

void ada_cidx_validate_buf(const char *path, const void *buf, size_t len, struct ada_atf_report *r,
                           struct ada_atf_vfile *info)
{
	uint8_t *v2;
	size_t v2len;

	memset(info, 0, sizeof(*info));
	bool ok = cv_structure(path, buf, len, r);
	if (ada_cidx_to_atf(buf, len, ADA_ATF_OPEN_SALVAGE, &v2, &v2len))
		return;
	/* The event rules, on what a reader gets; offsets are of that form. */
	char *vpath = atf_strdup_printf("%s (as ATF v2)", path);
	ada_atf_validate_index_buf(vpath ? vpath : path, v2, v2len, r, info);
	info->usable = info->usable && ok;
	free(vpath);
	free(v2);
}
