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
#include "detail_internal.h"
#include "recorder_internal.h"

#define RD_MAX_EVENT                                                                               \
	(ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(struct atf_detail_function_payload) +               \
	 ATF_DETAIL_XMM_WORDS * 8 + ATF_DETAIL_STACK_MAX)
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
	     eh.event_type != ATF_DETAIL_FUNCTION_RETURN && !ada_atf_detail_is_fp(eh.event_type)))
		return 0;
	if (pread(dfd, buf, eh.total_length, (off_t)off) != (ssize_t)eh.total_length)
		return 0;
	memcpy(&p, buf + sizeof(eh), sizeof(p));
	uint32_t xmm = ada_atf_detail_is_fp(eh.event_type) ? ATF_DETAIL_XMM_WORDS * 8 : 0;
	if (sizeof(eh) + sizeof(p) + xmm + p.stack_size != eh.total_length ||
	    (int64_t)eh.index_seq <= prev_seq || eh.index_seq >= ix->n || k >= ATF_NO_DETAIL)
		return 0;
	uint64_t ioff = ATF_HEADER_SIZE + (uint64_t)eh.index_seq * ATF_INDEX_EVENT_SIZE;
	if (ix->cx ? rd_cidx_event(ix->cx, eh.index_seq, &ev) < 0
	           : pread(ix->fd, &ev, sizeof(ev), (off_t)ioff) != sizeof(ev))
		return 0;
	uint32_t kind = ada_atf_detail_is_call(eh.event_type) ? ATF_EVENT_CALL : ATF_EVENT_RETURN;
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

/* What the scan of a detail file's records kept. */
struct rd_scan {
	uint32_t *seq_of; /* index_seq of each kept record */
	uint64_t cap, k, off, bytes;
	uint64_t t0, t1, s0, s1;
	uint32_t crc;
	int64_t prev;
};

/* The header of the detail file on dfd into *h: 0 (unfinished), 1 (final
 * already), -EPROTO (not a detail file). Killed between creating the file
 * and writing its placeholder header: nothing was written, it is finished
 * as an empty file (*headerless). */
static int rd_head(int dfd, uint64_t size, struct atf_detail_header *h, bool *headerless)
{
	*headerless = false;
	if (pread(dfd, h, sizeof(*h), 0) != sizeof(*h) || memcmp(h->magic, ATF_DETAIL_MAGIC, 4)) {
		if (!rd_all_zero(dfd, size))
			return -EPROTO;
		*headerless = true;
		memset(h, 0, sizeof(*h));
	}
	if (!*headerless && rd_detail_final(dfd, h, size))
		return 1; /* finished by the drain */
	return 0;
}

/* Keeps one more record (buf): its sequence, times, CRC and length. */
static int rd_keep(struct rd_scan *sc, const uint8_t *buf)
{
	const struct atf_detail_event_header *eh = (const void *)buf;
	if (sc->k == sc->cap) {
		uint64_t cap = sc->cap ? sc->cap * 2 : 1024;
		uint32_t *n = realloc(sc->seq_of, cap * sizeof(*sc->seq_of));
		if (!n)
			return -ENOMEM;
		sc->seq_of = n;
		sc->cap = cap;
	}
	sc->seq_of[sc->k] = eh->index_seq;
	if (sc->k == 0) {
		sc->t0 = eh->timestamp;
		sc->s0 = eh->index_seq;
	}
	sc->t1 = eh->timestamp;
	sc->s1 = eh->index_seq;
	sc->prev = eh->index_seq;
	sc->crc = wal_crc32(sc->crc, buf, eh->total_length);
	sc->off += eh->total_length;
	sc->bytes += eh->total_length;
	sc->k++;
	return 0;
}

/* Writes the footer and the final header after the kept records and cuts
 * the rest. */
static int rd_write_final(int dfd, struct atf_detail_header *h, const struct rd_scan *sc)
{
	struct atf_detail_footer f;
	struct ada_atf_file_info info = {
	    .thread_id = h->thread_id, .arch = h->arch ? h->arch : WAL_ARCH, .os = ATF_OS_LINUX};
	ada_atf_detail_header_fill(h, &info, sc->k, sc->bytes, sc->s0, sc->s1);
	ada_atf_detail_footer_fill(&f, sc->crc, sc->k, sc->bytes, sc->t0, sc->t1);
	int rc = wal_pwrite_all(dfd, &f, sizeof(f), ATF_HEADER_SIZE + sc->bytes);
	if (rc == 0)
		rc = wal_pwrite_all(dfd, h, sizeof(*h), 0);
	if (rc == 0 && ftruncate(dfd, (off_t)(ATF_HEADER_SIZE + sc->bytes + ATF_FOOTER_SIZE)) < 0)
		rc = -errno;
	return rc;
}

/* Scans the records after the header, keeping the whole, linked prefix;
 * then clears the index links that name no kept record (a compact index
 * has only the links given) and finishes the file (unless final). */
static int rd_finish(int dfd, uint64_t size, struct atf_detail_header *h, struct rd_index *ix,
                     bool final, struct wal_recover_detail *st)
{
	uint8_t *buf = malloc(RD_MAX_EVENT);
	struct rd_scan sc = {.off = ATF_HEADER_SIZE, .prev = -1};
	int rc = buf ? 0 : -ENOMEM;
	while (rc == 0) {
		int one = rd_one(dfd, size, sc.off, sc.k, sc.prev, ix, buf, st);
		if (one <= 0) {
			rc = one;
			break;
		}
		rc = rd_keep(&sc, buf);
	}
	st->records = sc.k;
	st->bytes_dropped = size > sc.off ? size - sc.off : 0;
	if (rc == 0 && !ix->cx)
		rc = rd_clear_links(ix, sc.seq_of, sc.k, st);
	int rc2 = rd_index_close(ix);
	if (rc == 0)
		rc = rc2;
	if (rc == 0 && !final)
		rc = rd_write_final(dfd, h, &sc);
	free(sc.seq_of);
	free(buf);
	return rc;
}

int wal_recover_detail_file(const char *ipath, const char *dpath, struct wal_recover_detail *st)
{
	memset(st, 0, sizeof(*st));
	int dfd = -1, rc = ada_fs_open_file(AT_FDCWD, dpath, O_RDWR, &dfd);
	if (rc < 0)
		return rc;
	struct stat sb;
	struct atf_detail_header h;
	bool headerless;
	if (fstat(dfd, &sb) < 0) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	uint64_t size = (uint64_t)sb.st_size;
	/* Finished by the drain (rd_head 1): but a compact index keeps its
	 * links in memory until its own finish, so they are given again
	 * from the records (the detail file is the link log), the file kept. */
	rc = rd_head(dfd, size, &h, &headerless);
	bool dfinal = rc == 1;
	if (rc < 0 || (dfinal && !rd_index_is_compact(ipath))) {
		close(dfd);
		return rc < 0 ? rc : 0;
	}
	struct rd_index ix;
	if ((rc = rd_index_open(ipath, &ix)) < 0) {
		close(dfd);
		return rc;
	}
	if (dfinal)
		size -= ATF_FOOTER_SIZE;
	if (headerless)
		h.thread_id = ix.h.thread_id;
	st->unfinished = !dfinal;
	rc = rd_finish(dfd, size, &h, &ix, dfinal, st);
	close(dfd);
	return rc;
}
