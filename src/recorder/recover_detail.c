/*
 * ada recover, the detail lane: finalizes a detail file a killed recorder
 * left unfinished (the placeholder header, events appended, no footer),
 * against its index file, which recover.c has finalized first, so that
 * both pass `ada validate` with their links intact.
 *
 * Threads: the single thread of `ada recover`.
 *
 * What a kill leaves (detail_persist.c): the drain patches an index
 * event's detail_seq first and appends the record to a 256 KiB buffer
 * after, so the index file can hold links to records that never reached
 * the detail file, and the detail file can end inside a record. Repair:
 *   - keep the longest prefix of detail events that are whole and sane
 *     (length, type, stack size) and link back to an index event of the
 *     same timestamp and function whose detail_seq is theirs or unset
 *     (then set: the patch was lost), with index_seq strictly increasing;
 *   - clear (to "no detail") every index link that does not name a kept
 *     record, adjusting the index file's CRC for each patch;
 *   - write the detail footer and header, truncate after the footer.
 * Everything read is untrusted: lengths are bounded before use, reads are
 * preads checked for their size, and a file that is not what it should be
 * is left alone (reported by the caller).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "cidx.h"
#include "fs.h"
#include "recorder_internal.h"

#define RD_MAX_EVENT                                                                               \
	(ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(struct atf_detail_function_payload) +               \
	 ATF_DETAIL_STACK_MAX)
#define RD_CHUNK 4096u /* index events per read in the link pass */

struct rd_index {
	int fd;
	struct atf_index_header h;
	struct atf_index_footer ft;
	uint64_t n; /* events */
	bool patched;
	/* A compact index (ATC1): read block by block, its links given
	 * again from the records kept (recover_detail_cidx.c) */
	struct rd_cidx *cx;
};

static bool rd_detail_final(int fd, const struct atf_detail_header *h, uint64_t size)
{
	struct atf_detail_footer f;
	if (h->events_offset != ATF_HEADER_SIZE || h->bytes_length > size ||
	    ATF_HEADER_SIZE + h->bytes_length + ATF_FOOTER_SIZE != size)
		return false;
	if (pread(fd, &f, sizeof(f), (off_t)(ATF_HEADER_SIZE + h->bytes_length)) != sizeof(f))
		return false;
	return !memcmp(f.magic, ATF_DETAIL_FOOTER_MAGIC, 4) && f.event_count == h->event_count &&
	       f.bytes_length == h->bytes_length;
}

/* True when the file's first bytes (up to a header's worth) are all zero. */
static bool rd_all_zero(int fd, uint64_t size)
{
	uint8_t b[ATF_HEADER_SIZE];
	size_t len = size < sizeof(b) ? (size_t)size : sizeof(b);
	if (pread(fd, b, len, 0) != (ssize_t)len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* The index file, final (recover.c finalized it). */
static int rd_index_open(const char *path, struct rd_index *ix)
{
	struct stat st;
	memset(ix, 0, sizeof(*ix));
	int rc = ada_fs_open_file(AT_FDCWD, path, O_RDWR, &ix->fd);
	if (rc < 0)
		return rc;
	if (pread(ix->fd, &ix->h, sizeof(ix->h), 0) == sizeof(ix->h) &&
	    ada_cidx_is_compact(&ix->h, sizeof(ix->h))) {
		rc = rd_cidx_open(ix->fd, &ix->cx, &ix->n);
		if (rc < 0)
			close(ix->fd);
		return rc;
	}
	if (fstat(ix->fd, &st) < 0 || pread(ix->fd, &ix->h, sizeof(ix->h), 0) != sizeof(ix->h) ||
	    memcmp(ix->h.magic, ATF_INDEX_MAGIC, 4) ||
	    ix->h.footer_offset + ATF_FOOTER_SIZE != (uint64_t)st.st_size ||
	    pread(ix->fd, &ix->ft, sizeof(ix->ft), (off_t)ix->h.footer_offset) != sizeof(ix->ft) ||
	    memcmp(ix->ft.magic, ATF_INDEX_FOOTER_MAGIC, 4) ||
	    ix->ft.event_count * ATF_INDEX_EVENT_SIZE + ATF_HEADER_SIZE != ix->h.footer_offset) {
		close(ix->fd);
		return -EPROTO;
	}
	ix->n = ix->ft.event_count;
	return 0;
}

/* Sets index event i's detail_seq to v, keeping the footer's CRC true. */
static int rd_patch(struct rd_index *ix, uint64_t i, uint32_t old, uint32_t v)
{
	if (ix->cx)
		return rd_cidx_link(ix->cx, i, v);
	uint64_t off = ATF_HEADER_SIZE + i * ATF_INDEX_EVENT_SIZE + 28;
	int r = wal_pwrite_all(ix->fd, &v, sizeof(v), off);
	if (r < 0)
		return r;
	ix->ft.checksum ^=
	    wal_crc32_patch_delta(old ^ v, off - ATF_HEADER_SIZE, ix->n * ATF_INDEX_EVENT_SIZE);
	ix->patched = true;
	return 0;
}

/* One detail event at off, whole and sane, linking to an index event
 * that matches it; 1 kept, 0 stop here, <0 error. */
static int rd_one(int dfd, uint64_t size, uint64_t off, uint64_t k, int64_t prev_seq,
                  struct rd_index *ix, uint8_t *buf, struct wal_recover_detail *st)
{
	struct atf_detail_event_header eh;
	struct atf_detail_function_payload p;
	struct atf_index_event ev;
	if (off + sizeof(eh) > size || pread(dfd, &eh, sizeof(eh), (off_t)off) != sizeof(eh))
		return 0;
	if (eh.total_length < sizeof(eh) + sizeof(p) || eh.total_length > RD_MAX_EVENT ||
	    off + eh.total_length > size ||
	    (eh.event_type != ATF_DETAIL_FUNCTION_CALL &&
	     eh.event_type != ATF_DETAIL_FUNCTION_RETURN))
		return 0;
	if (pread(dfd, buf, eh.total_length, (off_t)off) != (ssize_t)eh.total_length)
		return 0;
	memcpy(&p, buf + sizeof(eh), sizeof(p));
	if (sizeof(eh) + sizeof(p) + p.stack_size != eh.total_length ||
	    (int64_t)eh.index_seq <= prev_seq || eh.index_seq >= ix->n || k >= ATF_NO_DETAIL)
		return 0;
	uint64_t ioff = ATF_HEADER_SIZE + (uint64_t)eh.index_seq * ATF_INDEX_EVENT_SIZE;
	if (ix->cx ? rd_cidx_event(ix->cx, eh.index_seq, &ev) < 0
	           : pread(ix->fd, &ev, sizeof(ev), (off_t)ioff) != sizeof(ev))
		return 0;
	uint32_t kind =
	    eh.event_type == ATF_DETAIL_FUNCTION_CALL ? ATF_EVENT_CALL : ATF_EVENT_RETURN;
	if (ev.timestamp_ns != eh.timestamp || ev.function_id != p.function_id ||
	    ev.event_kind != kind || (ev.detail_seq != k && ev.detail_seq != ATF_NO_DETAIL))
		return 0;
	if (ev.detail_seq == ATF_NO_DETAIL || ix->cx) {
		int r = rd_patch(ix, eh.index_seq, ATF_NO_DETAIL, (uint32_t)k);
		if (r < 0)
			return r;
		st->links_restored += ev.detail_seq == ATF_NO_DETAIL;
	}
	return 1;
}

/* Clears every index link that names no kept record (seq_of[d]: the
 * index_seq of kept record d). */
static int rd_clear_links(struct rd_index *ix, const uint32_t *seq_of, uint64_t kept,
                          struct wal_recover_detail *st)
{
	struct atf_index_event *ev = malloc(RD_CHUNK * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	int r = 0;
	for (uint64_t i = 0; i < ix->n && r == 0; i += RD_CHUNK) {
		size_t k = ix->n - i < RD_CHUNK ? (size_t)(ix->n - i) : RD_CHUNK;
		off_t off = (off_t)(ATF_HEADER_SIZE + i * ATF_INDEX_EVENT_SIZE);
		if (pread(ix->fd, ev, k * sizeof(*ev), off) != (ssize_t)(k * sizeof(*ev))) {
			r = -EIO;
			break;
		}
		for (size_t j = 0; j < k && r == 0; j++) {
			uint32_t d = ev[j].detail_seq;
			if (d == ATF_NO_DETAIL || (d < kept && seq_of[d] == i + j))
				continue;
			r = rd_patch(ix, i + j, d, ATF_NO_DETAIL);
			st->links_cleared++;
		}
	}
	free(ev);
	return r;
}

static int rd_index_close(struct rd_index *ix)
{
	if (ix->cx) {
		int r = rd_cidx_close(ix->cx);
		close(ix->fd);
		return r;
	}
	int r = 0;
	if (ix->patched)
		r = wal_pwrite_all(ix->fd, &ix->ft, sizeof(ix->ft), ix->h.footer_offset);
	if (r == 0 && !(ix->h.flags & ATF_INDEX_FLAG_HAS_DETAIL)) {
		/* The detail file exists: the flag says so (validate checks). */
		uint32_t flags = ix->h.flags | ATF_INDEX_FLAG_HAS_DETAIL;
		r = wal_pwrite_all(ix->fd, &flags, sizeof(flags),
		                   offsetof(struct atf_index_header, flags));
	}
	close(ix->fd);
	return r;
}

int wal_recover_detail_file(const char *ipath, const char *dpath, struct wal_recover_detail *st)
{
	memset(st, 0, sizeof(*st));
	int dfd = -1, rc = ada_fs_open_file(AT_FDCWD, dpath, O_RDWR, &dfd);
	if (rc < 0)
		return rc;
	struct stat sb;
	struct atf_detail_header h;
	if (fstat(dfd, &sb) < 0) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	uint64_t size = (uint64_t)sb.st_size;
	/* Killed between creating the file and writing its placeholder
	 * header: nothing was written, it is finished as an empty file. */
	bool headerless = false;
	if (pread(dfd, &h, sizeof(h), 0) != sizeof(h) || memcmp(h.magic, ATF_DETAIL_MAGIC, 4)) {
		if (!rd_all_zero(dfd, size)) {
			close(dfd);
			return -EPROTO;
		}
		headerless = true;
		memset(&h, 0, sizeof(h));
	}
	/* Finished by the drain: but a compact index keeps its links in
	 * memory until its own finish, so its links are given again from
	 * the records (the detail file is the link log), the file kept. */
	bool dfinal = !headerless && rd_detail_final(dfd, &h, size);
	struct rd_index ix;
	if (dfinal && !rd_index_is_compact(ipath)) {
		close(dfd);
		return 0;
	}
	if ((rc = rd_index_open(ipath, &ix)) < 0) {
		close(dfd);
		return rc;
	}
	if (dfinal)
		size -= ATF_FOOTER_SIZE;
	if (headerless)
		h.thread_id = ix.h.thread_id;
	st->unfinished = !dfinal;
	uint8_t *buf = malloc(RD_MAX_EVENT);
	uint32_t *seq_of = NULL;
	uint64_t cap = 0, k = 0, off = ATF_HEADER_SIZE, bytes = 0;
	uint64_t t0 = 0, t1 = 0, s0 = 0, s1 = 0;
	uint32_t crc = 0;
	int64_t prev = -1;
	rc = buf ? 0 : -ENOMEM;
	while (rc == 0) {
		int one = rd_one(dfd, size, off, k, prev, &ix, buf, st);
		if (one <= 0) {
			rc = one;
			break;
		}
		const struct atf_detail_event_header *eh = (const void *)buf;
		if (k == cap) {
			cap = cap ? cap * 2 : 1024;
			uint32_t *n = realloc(seq_of, cap * sizeof(*seq_of));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			seq_of = n;
		}
		seq_of[k] = eh->index_seq;
		if (k == 0) {
			t0 = eh->timestamp;
			s0 = eh->index_seq;
		}
		t1 = eh->timestamp;
		s1 = eh->index_seq;
		prev = eh->index_seq;
		crc = wal_crc32(crc, buf, eh->total_length);
		off += eh->total_length;
		bytes += eh->total_length;
		k++;
	}
	st->records = k;
	st->bytes_dropped = size > off ? size - off : 0;
	if (rc == 0 && !ix.cx) /* a compact index has only the links given */
		rc = rd_clear_links(&ix, seq_of, k, st);
	int rc2 = rd_index_close(&ix);
	if (rc == 0)
		rc = rc2;
	if (rc == 0 && !dfinal) {
		struct atf_detail_footer f;
		struct ada_atf_file_info info = {.thread_id = h.thread_id,
		                                 .arch = h.arch ? h.arch : WAL_ARCH,
		                                 .os = ATF_OS_LINUX};
		ada_atf_detail_header_fill(&h, &info, k, bytes, s0, s1);
		ada_atf_detail_footer_fill(&f, crc, k, bytes, t0, t1);
		rc = wal_pwrite_all(dfd, &f, sizeof(f), ATF_HEADER_SIZE + bytes);
		if (rc == 0)
			rc = wal_pwrite_all(dfd, &h, sizeof(h), 0);
		if (rc == 0 &&
		    ftruncate(dfd, (off_t)(ATF_HEADER_SIZE + bytes + ATF_FOOTER_SIZE)) < 0)
			rc = -errno;
	}
	free(seq_of);
	free(buf);
	close(dfd);
	return rc;
}
