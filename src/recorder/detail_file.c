/*
 * The detail.atf writer of the drain: a 64-byte header placeholder, the
 * length-prefixed detail events appended compactly (no holes, so
 * get(detail_seq) is the detail_seq-th event), and at finish the footer
 * (CRC-32 of the events section, as zlib's crc32(); counts; time range)
 * and the final header (counts, index_seq_start/end), as the schema and
 * ATF-ERRATA.md items 2-4 say.
 *
 * Threads: the drain thread only. Volume is modest next to the index
 * lane (windows, or --detail always), so records go through a 256 KiB
 * buffer and pwrite, not io_uring. Events never change once written: the
 * detail_seq of a record is its position, known when it is appended.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf.h"
#include "fs.h"
#include "detail_internal.h"
#include "recorder_internal.h"

#define DFILE_BUF (256u * 1024u)
/* Records appended since the last write that completed: a buffer's worth
 * of the smallest records (header and payload, 124 bytes and more), and
 * the one a write may split. More and the buffer is written early. */
#define DFILE_UNSURE (DFILE_BUF / 100u + 2u)

/* What a footer and header say of the events up to a record's end. */
struct dfile_mark {
	uint32_t crc;
	uint64_t events, bytes;
	uint64_t t_start, t_end, seq_start, seq_end;
};

struct wal_dfile {
	int fd;
	int error;
	uint32_t tid;
	uint8_t arch; /* ATF_ARCH_* of the traced code */
	/* CRC-32 of the events section up to the buffer (bytes - len): it is
	 * taken over a whole buffer when it is written (dfile_crc), not per
	 * record, where a call per header, payload and stack cost the drain
	 * more than the copy. */
	uint32_t crc;
	uint64_t events, bytes; /* appended so far (bytes of the events section) */
	uint64_t t_start, t_end, seq_start, seq_end;
	/* At the end of the last whole record appended, and of the last one
	 * whose bytes all reached the file: a write that fails (a full disk)
	 * leaves a file that is cut back to durable, never one whose footer
	 * counts records it does not hold. whole.crc is set when the buffer
	 * holding whole's end is written (dfile_crc); durable's is set. */
	struct dfile_mark whole, durable;
	/* The records appended after durable (their index links), oldest
	 * first: the links a cut file no longer backs. */
	struct wal_dfile_link unsure[DFILE_UNSURE + 1];
	size_t nunsure;
	uint8_t *buf;
	size_t len; /* buffered, not yet written: bytes [bytes - len, bytes) */
};

int wal_dfile_open(int dirfd, const char *name, uint32_t tid, uint8_t arch, struct wal_dfile **out)
{
	struct wal_dfile *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->buf = malloc(DFILE_BUF);
	if (!d->buf) {
		free(d);
		return -ENOMEM;
	}
	d->tid = tid;
	d->arch = arch;
	int e = ada_fs_create(dirfd, name, O_RDWR, &d->fd); /* O_EXCL|O_NOFOLLOW, private */
	if (e < 0) {
		free(d->buf);
		free(d);
		return e;
	}
	/* Placeholder: identity, zero counts (a reader of an unfinished file
	 * sees no footer at events_offset + bytes_length). */
	struct atf_detail_header h;
	struct ada_atf_file_info info = {.thread_id = tid, .arch = arch, .os = ATF_OS_LINUX};
	ada_atf_detail_header_fill(&h, &info, 0, 0, 0, 0);
	int r = wal_pwrite_all(d->fd, &h, sizeof(h), 0);
	if (r < 0) {
		close(d->fd);
		unlinkat(dirfd, name, 0);
		free(d->buf);
		free(d);
		return r;
	}
	*out = d;
	return 0;
}

/* Every byte appended is in the file now: the records whole are sure;
 * a record a write split stays unsure until its end is written. */
static void dfile_made_durable(struct wal_dfile *d)
{
	d->durable = d->whole;
	size_t k = 0;
	while (k < d->nunsure && d->unsure[k].detail_seq < d->whole.events)
		k++;
	memmove(d->unsure, d->unsure + k, (d->nunsure - k) * sizeof(d->unsure[0]));
	d->nunsure -= k;
}

/* Folds the buffer into the CRC, and sets whole.crc on the way: the end
 * of the last whole record lies in this buffer (or is its start) unless
 * no record ended since the last write, whose whole.crc then stands. */
static void dfile_crc(struct wal_dfile *d)
{
	uint64_t start = d->bytes - d->len;
	if (d->whole.bytes < start || d->whole.bytes > d->bytes) {
		d->crc = wal_crc32(d->crc, d->buf, d->len);
		return;
	}
	size_t k = (size_t)(d->whole.bytes - start);
	d->whole.crc = wal_crc32(d->crc, d->buf, k);
	d->crc = wal_crc32(d->whole.crc, d->buf + k, d->len - k);
}

static int dfile_flush(struct wal_dfile *d)
{
	if (d->len == 0 || d->error)
		return d->error;
	dfile_crc(d);
	int r = wal_pwrite_all(d->fd, d->buf, d->len, ATF_HEADER_SIZE + d->bytes - d->len);
	if (r < 0)
		d->error = r;
	else
		dfile_made_durable(d);
	d->len = 0;
	return r;
}

static int dfile_put(struct wal_dfile *d, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		if (d->len == DFILE_BUF && dfile_flush(d) < 0)
			return d->error;
		size_t k = DFILE_BUF - d->len < n ? DFILE_BUF - d->len : n;
		memcpy(d->buf + d->len, b, k);
		d->len += k;
		d->bytes += k;
		b += k;
		n -= k;
	}
	return 0;
}

int wal_dfile_error(const struct wal_dfile *d)
{
	return d->error;
}

uint64_t wal_dfile_count(const struct wal_dfile *d)
{
	return d->events;
}

uint64_t wal_dfile_bytes(const struct wal_dfile *d)
{
	return ATF_HEADER_SIZE + d->bytes;
}

static void dfile_count(struct wal_dfile *d, const struct atf_detail_event_header *h)
{
	if (d->events == 0) {
		d->t_start = h->timestamp;
		d->seq_start = h->index_seq;
	}
	d->t_end = h->timestamp;
	d->seq_end = h->index_seq;
	d->events++;
	/* crc: set by dfile_crc when the buffer holding this end is written. */
	d->whole = (struct dfile_mark){0,        d->events,    d->bytes,  d->t_start,
	                               d->t_end, d->seq_start, d->seq_end};
}

/* Notes the record about to be appended as unsure (its link too). */
static int dfile_unsure(struct wal_dfile *d, const struct atf_detail_event_header *h)
{
	/* Listed even when the early write fails: the caller linked it. */
	int r = d->nunsure >= DFILE_UNSURE ? dfile_flush(d) : 0;
	if (d->nunsure > DFILE_UNSURE)
		return -EOVERFLOW; /* cannot be: one failed write, and every append fails */
	d->unsure[d->nunsure++] = (struct wal_dfile_link){h->index_seq, d->events};
	return r;
}

int wal_dfile_append(struct wal_dfile *d, const struct atf_detail_event_header *h,
                     const struct atf_detail_function_payload *p, const void *stack)
{
	if (d->error)
		return d->error;
	if (h->total_length != ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(*p) + p->stack_size)
		return -EINVAL;
	int r = dfile_unsure(d, h);
	if (r == 0)
		r = dfile_put(d, h, sizeof(*h));
	if (r == 0)
		r = dfile_put(d, p, sizeof(*p));
	if (r == 0 && p->stack_size)
		r = dfile_put(d, stack, p->stack_size);
	if (r < 0)
		return r;
	dfile_count(d, h);
	return 0;
}

int wal_dfile_append_fp(struct wal_dfile *d, const struct atf_detail_event_header *h,
                        const struct atf_detail_function_payload *p, const uint64_t *xmm,
                        const void *stack)
{
	if (d->error)
		return d->error;
	if (h->total_length !=
	    ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(*p) + ATF_DETAIL_XMM_WORDS * 8 + p->stack_size)
		return -EINVAL;
	int r = dfile_unsure(d, h);
	if (r == 0)
		r = dfile_put(d, h, sizeof(*h));
	if (r == 0)
		r = dfile_put(d, p, sizeof(*p));
	if (r == 0)
		r = dfile_put(d, xmm, ATF_DETAIL_XMM_WORDS * 8);
	if (r == 0 && p->stack_size)
		r = dfile_put(d, stack, p->stack_size);
	if (r < 0)
		return r;
	dfile_count(d, h);
	return 0;
}

int wal_dfile_append_raw(struct wal_dfile *d, const struct atf_detail_event_header *h,
                         const void *payload, size_t len)
{
	if (d->error)
		return d->error;
	if (h->total_length != ATF_DETAIL_EVENT_HEADER_SIZE + len)
		return -EINVAL;
	int r = dfile_unsure(d, h);
	if (r == 0)
		r = dfile_put(d, h, sizeof(*h));
	if (r == 0)
		r = dfile_put(d, payload, len);
	if (r < 0)
		return r;
	dfile_count(d, h);
	return 0;
}

/* Footer and final header for the events up to m, the file cut behind
 * them. 0 or -errno. */
static int dfile_seal(struct wal_dfile *d, const struct dfile_mark *m)
{
	struct atf_detail_header h;
	struct atf_detail_footer f;
	struct ada_atf_file_info info = {.thread_id = d->tid, .arch = d->arch, .os = ATF_OS_LINUX};
	ada_atf_detail_header_fill(&h, &info, m->events, m->bytes, m->seq_start, m->seq_end);
	ada_atf_detail_footer_fill(&f, m->crc, m->events, m->bytes, m->t_start, m->t_end);
	/* Cut first: on a full disk what the failed writes took is freed
	 * before the footer needs room. */
	int r = 0;
	if (ftruncate(d->fd, (off_t)(ATF_HEADER_SIZE + m->bytes)) < 0)
		r = -errno;
	if (r == 0)
		r = wal_pwrite_all(d->fd, &f, sizeof(f), ATF_HEADER_SIZE + m->bytes);
	if (r == 0)
		r = wal_pwrite_all(d->fd, &h, sizeof(h), 0);
	if (r == 0 && ftruncate(d->fd, (off_t)(ATF_HEADER_SIZE + m->bytes + ATF_FOOTER_SIZE)) < 0)
		r = -errno;
	return r;
}

int wal_dfile_finish(struct wal_dfile *d, struct wal_dfile_end *end)
{
	int r = dfile_flush(d);
	struct dfile_mark all = d->whole, none = {0};
	*end = (struct wal_dfile_end){.appended = d->events, .kept = d->events};
	if (r == 0)
		r = dfile_seal(d, &all);
	if (r < 0) {
		/* What a failed write left: the records all of whose bytes
		 * reached the file, sealed again as a whole file; failing that,
		 * none (the header's block is allocated already: no room is
		 * needed); failing that too, the caller removes the file. */
		const struct dfile_mark *m = &d->durable;
		end->error = r;
		if (dfile_seal(d, m) < 0 && dfile_seal(d, m = &none) < 0)
			end->invalid = true;
		end->kept = end->invalid ? 0 : m->events;
		end->unsure = malloc(d->nunsure * sizeof(d->unsure[0]) + 1);
		end->nunsure = end->unsure ? d->nunsure : 0;
		if (end->unsure)
			memcpy(end->unsure, d->unsure, d->nunsure * sizeof(d->unsure[0]));
		all = *m;
	}
	end->file_bytes = ATF_HEADER_SIZE + all.bytes + ATF_FOOTER_SIZE;
	close(d->fd);
	free(d->buf);
	free(d);
	return r;
}
