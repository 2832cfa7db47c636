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

/* The most events one block holds (the decode buffer's size). */
static uint32_t export_max_block(const struct ada_cidx_dec *d)
{
	uint32_t most = 0;
	for (size_t b = 0; b < ada_cidx_dec_nblocks(d); b++) {
		uint64_t first, t0;
		uint32_t k;
		ada_cidx_dec_block_info(d, b, &first, &k, &t0);
		most = k > most ? k : most;
	}
	return most;
}

/* Decodes and writes the blocks from offset ATF_HEADER_SIZE, the CRC-32
 * and time range kept as they go; stops at the first bad block. */
static int export_stream(const struct ada_cidx_dec *d, struct atf_index_event *ev, int fd,
                         uint64_t *n, uint32_t *crc, uint64_t *t0, uint64_t *t1, bool *bad)
{
	*n = *t0 = *t1 = 0;
	*crc = 0;
	*bad = false;
	for (size_t b = 0; b < ada_cidx_dec_nblocks(d); b++) {
		uint64_t first, ts;
		uint32_t k;
		ada_cidx_dec_block_info(d, b, &first, &k, &ts);
		if (ada_cidx_dec_block(d, b, ev)) {
			*bad = true;
			return 0;
		}
		if (!k)
			continue;
		*t0 = *n ? *t0 : ev[0].timestamp_ns;
		*t1 = ev[k - 1].timestamp_ns;
		*crc = ada_atf_crc32(*crc, ev, (size_t)k * ATF_INDEX_EVENT_SIZE);
		int err = export_write(fd, ev, (size_t)k * ATF_INDEX_EVENT_SIZE,
		                       ATF_HEADER_SIZE + *n * ATF_INDEX_EVENT_SIZE);
		if (err)
			return err;
		*n += k;
	}
	return 0;
}

int ada_cidx_to_atf_fd(const void *buf, size_t len, unsigned flags, int fd)
{
	struct ada_cidx_dec *d;
	struct atf_index_header h;
	struct atf_index_footer f;
	int err = ada_cidx_dec_open(buf, len, flags, &d);
	if (err)
		return err;
	const struct ada_cidx_file_header *c = ada_cidx_dec_header(d);
	struct ada_atf_file_info info = {c->thread_id, c->arch, c->os, c->clock_type,
	                                 c->flags & ATF_INDEX_FLAG_HAS_DETAIL};
	struct atf_index_event *ev = malloc(((size_t)export_max_block(d) + 1) * sizeof(*ev));
	uint64_t n = 0, t0 = 0, t1 = 0;
	uint32_t crc = 0;
	bool bad = false;
	err = ev ? 0 : -ENOMEM;
	if (!err) /* the placeholder: a reader of an incomplete file sees no header */
		err = export_write(fd, memset(&h, 0, sizeof(h)), sizeof(h), 0);
	if (!err)
		err = export_stream(d, ev, fd, &n, &crc, &t0, &t1, &bad);
	free(ev);
	ada_cidx_dec_free(d);
	if (!err && bad && !(flags & ADA_ATF_OPEN_SALVAGE))
		err = -EBADMSG;
	if (err)
		return err;
	ada_atf_index_header_fill(&h, &info, n, t0, t1);
	ada_atf_index_footer_fill(&f, crc, n, t0, t1);
	err = export_write(fd, &f, sizeof(f), ATF_HEADER_SIZE + n * ATF_INDEX_EVENT_SIZE);
	return err ? err : export_write(fd, &h, sizeof(h), 0);
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
