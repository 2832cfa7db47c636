/*
 * Finalizing an index file from what is on disk (ada_wal_finalize_*, and
 * the steps `ada recover` takes one at a time: ada_wal_disk_*).
 *
 * Threads: single-threaded (the `ada recover` command, or the drain when
 * a write failed and a file must be rebuilt from its own bytes).
 *
 * An unfinished index file is [header placeholder][events][zeros...]: the
 * placeholder carries magic, thread id and arch but footer_offset 0; the
 * zero tail is the preallocated, never written part of the last segment.
 * The scan keeps events up to the first all-zero slot (event_kind 0), an
 * impossible kind, a timestamp that goes backwards or a partial slot at
 * the end, recomputes the CRC-32 and the time range, appends the leftovers
 * (the caller's, already converted), writes footer and header and cuts
 * the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cidx.h"
#include "fs.h"
#include "wal_internal.h"

#define FIN_CHUNK (1u << 20)

static bool fin_event_ok(const struct atf_index_event *e, uint64_t last)
{
	if (e->event_kind < ATF_EVENT_CALL || e->event_kind > ATF_EVENT_EXCEPTION)
		return false; /* kind 0: the zero tail; anything else: garbage */
	return e->timestamp_ns >= last;
}

/* Scans events from offset 64 up to limit; fills s. */
static int fin_scan_events(int fd, uint64_t limit, struct ada_wal_scan *s)
{
	uint8_t *buf = malloc(FIN_CHUNK);
	if (!buf)
		return -ENOMEM;
	uint64_t off = ATF_HEADER_SIZE, last = 0;
	bool stop = false;
	while (!stop && off + ATF_INDEX_EVENT_SIZE <= limit) {
		uint64_t want = limit - off < FIN_CHUNK ? limit - off : FIN_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n < (ssize_t)ATF_INDEX_EVENT_SIZE)
			break;
		size_t k = 0, whole = (size_t)n / ATF_INDEX_EVENT_SIZE;
		const struct atf_index_event *ev = (const void *)buf;
		while (k < whole && fin_event_ok(&ev[k], last))
			last = ev[k++].timestamp_ns;
		stop = k < whole;
		if (k) {
			if (s->events == 0)
				s->t0 = ev[0].timestamp_ns;
			s->t1 = last;
			s->crc = wal_crc32(s->crc, buf, k * ATF_INDEX_EVENT_SIZE);
			s->events += k;
		}
		off += (uint64_t)k * ATF_INDEX_EVENT_SIZE;
		if ((size_t)n % ATF_INDEX_EVENT_SIZE)
			stop = true;
	}
	free(buf);
	return 0;
}

/* A finalized file: header, footer and length agree. */
static bool fin_is_final(int fd, const struct atf_index_header *h, uint64_t size,
                         struct atf_index_footer *ft)
{
	if (h->footer_offset < ATF_HEADER_SIZE || h->footer_offset + ATF_FOOTER_SIZE != size)
		return false;
	if (pread(fd, ft, sizeof(*ft), (off_t)h->footer_offset) != (ssize_t)sizeof(*ft))
		return false;
	return !memcmp(ft->magic, ATF_INDEX_FOOTER_MAGIC, 4) &&
	       ft->event_count * ATF_INDEX_EVENT_SIZE + ATF_HEADER_SIZE == h->footer_offset;
}

static int fin_append(int fd, struct ada_wal_scan *s, const struct atf_index_event *extra, size_t n)
{
	if (!n)
		return 0;
	struct atf_index_event *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	uint64_t last = s->t1;
	for (size_t i = 0; i < n; i++) {
		tmp[i] = extra[i];
		if (tmp[i].timestamp_ns < last)
			tmp[i].timestamp_ns = last;
		last = tmp[i].timestamp_ns;
	}
	uint64_t off = ATF_HEADER_SIZE + s->events * ATF_INDEX_EVENT_SIZE;
	int r = wal_pwrite_all(fd, tmp, n * sizeof(*tmp), off);
	if (r == 0) {
		if (s->events == 0)
			s->t0 = tmp[0].timestamp_ns;
		s->t1 = last;
		s->crc = wal_crc32(s->crc, tmp, n * sizeof(*tmp));
		s->events += n;
	}
	free(tmp);
	return r;
}

static int fin_write_final(int fd, const struct atf_index_header *old, const struct ada_wal_scan *s,
                           struct ada_wal_file_summary *sum)
{
	struct ada_wal_file_summary v = {
	    .events = s->events,
	    .time_start_ns = s->t0,
	    .time_end_ns = s->t1,
	    .crc = s->crc,
	};
	struct atf_index_header h;
	struct atf_index_footer ft;
	wal_fill_header(&h, old->thread_id, old->arch ? old->arch : WAL_ARCH,
	                old->clock_type ? old->clock_type : ATF_CLOCK_BOOTTIME);
	h.flags = old->flags;
	wal_fill_final(&h, &ft, &v);
	int r = wal_pwrite_all(fd, &ft, sizeof(ft), h.footer_offset);
	if (r == 0)
		r = wal_pwrite_all(fd, &h, sizeof(h), 0);
	if (r == 0 && ftruncate(fd, (off_t)(h.footer_offset + ATF_FOOTER_SIZE)) < 0)
		r = -errno;
	v.bytes = h.footer_offset + ATF_FOOTER_SIZE;
	if (sum)
		*sum = v;
	return r;
}

int ada_wal_disk_scan(int fd, struct ada_wal_disk_file *rf)
{
	memset(rf, 0, sizeof(*rf));
	rf->fd = fd;
	struct stat st;
	struct atf_index_footer ft;
	if (fstat(rf->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    pread(rf->fd, &rf->h, sizeof(rf->h), 0) != (ssize_t)sizeof(rf->h))
		return -EPROTO;
	rf->size = (uint64_t)st.st_size;
	if (ada_cidx_is_compact(&rf->h, sizeof(rf->h))) {
		int r = wal_cidx_disk_scan(rf);
		if (r < 0)
			wal_cidx_disk_free(rf);
		return r;
	}
	if (memcmp(rf->h.magic, ATF_INDEX_MAGIC, 4) || rf->h.event_size != ATF_INDEX_EVENT_SIZE)
		return -EPROTO;
	if (fin_is_final(rf->fd, &rf->h, rf->size, &ft)) {
		rf->final = true;
		rf->s = (struct ada_wal_scan){ft.event_count, ft.time_start_ns, ft.time_end_ns,
		                              ft.checksum};
		return 0;
	}
	return fin_scan_events(rf->fd, rf->size, &rf->s);
}

int ada_wal_disk_finish(struct ada_wal_disk_file *rf, bool appended,
                        struct ada_wal_file_summary *sum)
{
	if (rf->cx)
		return wal_cidx_disk_finish(rf, appended, sum);
	if (rf->final && !appended) {
		if (sum)
			*sum = (struct ada_wal_file_summary){.events = rf->s.events,
			                                     .bytes = rf->size,
			                                     .time_start_ns = rf->s.t0,
			                                     .time_end_ns = rf->s.t1,
			                                     .crc = rf->s.crc};
		return 0;
	}
	return fin_write_final(rf->fd, &rf->h, &rf->s, sum);
}

int ada_wal_finalize_path(const char *path, const struct atf_index_event *extra, size_t n_extra,
                          struct ada_wal_file_summary *sum)
{
	int fd = -1, r = ada_fs_open_file(AT_FDCWD, path, O_RDWR, &fd);
	if (r == 0) {
		r = ada_wal_finalize_fd(fd, extra, n_extra, sum);
		close(fd);
	}
	return r;
}

int ada_wal_finalize_fd(int fd, const struct atf_index_event *extra, size_t n_extra,
                        struct ada_wal_file_summary *sum)
{
	struct ada_wal_disk_file rf;
	int r = ada_wal_disk_scan(fd, &rf);
	if (r < 0)
		return r;
	r = ada_wal_disk_append(&rf, extra, n_extra);
	int c = ada_wal_disk_finish(&rf, n_extra > 0, r == 0 ? sum : NULL);
	return r ? r : c;
}

int ada_wal_disk_append(struct ada_wal_disk_file *df, const struct atf_index_event *ev, size_t n)
{
	if (df->cx)
		return wal_cidx_disk_append(df, ev, n);
	return fin_append(df->fd, &df->s, ev, n);
}

void ada_wal_disk_relink(struct ada_wal_disk_file *df)
{
	if (df->cx)
		wal_cidx_disk_relink(df);
}

int ada_wal_disk_link(struct ada_wal_disk_file *df, uint64_t index_seq, uint32_t detail_seq)
{
	return df->cx ? wal_cidx_disk_link(df, index_seq, detail_seq) : -EPROTO;
}

/* The header placeholder written at creation: identity only, footer_offset
 * 0 (recovery's sign of a file that was never finalized). */
void wal_fill_header(struct atf_index_header *h, uint32_t tid, uint8_t arch, uint8_t clock)
{
	struct ada_atf_file_info info = {
	    .thread_id = tid, .arch = arch, .os = ATF_OS_LINUX, .clock_type = clock};
	ada_atf_index_header_fill(h, &info, 0, 0, 0);
	h->footer_offset = 0;
}

/* The final header and footer, by the format library's rules (errata 1, 4). */
void wal_fill_final(struct atf_index_header *h, struct atf_index_footer *ft,
                    const struct ada_wal_file_summary *s)
{
	struct ada_atf_file_info info = {.thread_id = h->thread_id,
	                                 .arch = h->arch,
	                                 .os = h->os,
	                                 .clock_type = h->clock_type,
	                                 .has_detail = (h->flags & ATF_INDEX_FLAG_HAS_DETAIL) != 0};
	ada_atf_index_header_fill(h, &info, s->events, s->time_start_ns, s->time_end_ns);
	ada_atf_index_footer_fill(ft, s->crc, s->events, s->time_start_ns, s->time_end_ns);
}
