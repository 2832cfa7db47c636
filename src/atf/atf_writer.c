/*
 * Writer helpers: finalized headers and footers from counts, times and a
 * CRC, so every writer (the WAL's drain, recovery, tests) lays out the same
 * bytes; and a small buffered whole-file writer for tests and golden data.
 *
 * Layout produced (both files): header at 0, events at 64, footer right
 * after the last event. Reserved bytes are zero.
 * Threads: any; a writer object belongs to one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>
#ifdef ADA_ATF_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "atf_internal.h"
#include "fs.h"

#define ATF_WRITER_BUF (1u << 16)

uint32_t ada_atf_crc32(uint32_t crc, const void *buf, size_t len)
{
#ifdef ADA_ATF_HAVE_LIBDEFLATE
	return libdeflate_crc32(crc, buf, len); /* zlib's values, several times faster */
#else
	const uint8_t *p = buf;

	/* zlib takes uInt lengths: feed huge buffers in pieces. */
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
#endif
}

void ada_atf_file_info_native(struct ada_atf_file_info *info, uint32_t thread_id)
{
	memset(info, 0, sizeof(*info));
	info->thread_id = thread_id;
#if defined(__aarch64__)
	info->arch = ATF_ARCH_ARM64;
#else
	info->arch = ATF_ARCH_X86_64;
#endif
	info->os = ATF_OS_LINUX;
	info->clock_type = ATF_CLOCK_BOOTTIME;
}

static void atf_ident_fill(uint8_t *magic, const char *m, uint8_t *endian, uint8_t *version,
                           uint8_t *arch, uint8_t *os, const struct ada_atf_file_info *info)
{
	memcpy(magic, m, 4);
	*endian = ATF_ENDIAN_LITTLE;
	*version = ATF_VERSION;
	*arch = info->arch;
	*os = info->os;
}

void ada_atf_index_header_fill(struct atf_index_header *h, const struct ada_atf_file_info *info,
                               uint64_t count, uint64_t t_start, uint64_t t_end)
{
	memset(h, 0, sizeof(*h));
	atf_ident_fill(h->magic, ATF_INDEX_MAGIC, &h->endian, &h->version, &h->arch, &h->os, info);
	h->flags = info->has_detail ? ATF_INDEX_FLAG_HAS_DETAIL : 0;
	h->thread_id = info->thread_id;
	h->clock_type = info->clock_type;
	h->event_size = ATF_INDEX_EVENT_SIZE;
	h->event_count = (uint32_t)count; /* errata 4: low 32 bits */
	h->events_offset = ATF_HEADER_SIZE;
	h->footer_offset = ATF_HEADER_SIZE + count * ATF_INDEX_EVENT_SIZE;
	h->time_start_ns = t_start;
	h->time_end_ns = t_end;
}

void ada_atf_index_footer_fill(struct atf_index_footer *f, uint32_t crc, uint64_t count,
                               uint64_t t_start, uint64_t t_end)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, ATF_INDEX_FOOTER_MAGIC, 4);
	f->checksum = crc;
	f->event_count = count;
	f->time_start_ns = t_start;
	f->time_end_ns = t_end;
	f->bytes_written = count * ATF_INDEX_EVENT_SIZE;
}

void ada_atf_detail_header_fill(struct atf_detail_header *h, const struct ada_atf_file_info *info,
                                uint64_t count, uint64_t events_bytes, uint64_t seq_start,
                                uint64_t seq_end)
{
	memset(h, 0, sizeof(*h));
	atf_ident_fill(h->magic, ATF_DETAIL_MAGIC, &h->endian, &h->version, &h->arch, &h->os, info);
	h->thread_id = info->thread_id;
	h->events_offset = ATF_HEADER_SIZE;
	h->event_count = count;
	h->bytes_length = events_bytes;
	h->index_seq_start = seq_start;
	h->index_seq_end = seq_end;
}

void ada_atf_detail_footer_fill(struct atf_detail_footer *f, uint32_t crc, uint64_t count,
                                uint64_t events_bytes, uint64_t t_start, uint64_t t_end)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, ATF_DETAIL_FOOTER_MAGIC, 4);
	f->checksum = crc;
	f->event_count = count;
	f->bytes_length = events_bytes;
	f->time_start_ns = t_start;
	f->time_end_ns = t_end;
}

/* --------------------------------------------------------------- writer */

struct ada_atf_writer {
	int fd;
	bool detail;
	struct ada_atf_file_info info;
	uint8_t *buf;
	size_t used;
	uint64_t count, bytes;
	uint64_t t_start, t_end;
	uint64_t seq_start, seq_end;
	uint32_t crc;
};

static int atf_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int writer_flush(struct ada_atf_writer *w)
{
	int err = atf_write_all(w->fd, w->buf, w->used);
	w->used = 0;
	return err;
}

int ada_atf_writer_new(const char *path, bool detail, const struct ada_atf_file_info *info,
                       struct ada_atf_writer **out)
{
	static const uint8_t placeholder[ATF_HEADER_SIZE];
	struct ada_atf_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->buf = malloc(ATF_WRITER_BUF);
	if (!w->buf) {
		err = -ENOMEM;
		goto free_w;
	}
	/* Under a session root no link on the way is followed (fs.h). */
	err = ada_fs_open_path(path, O_WRONLY | O_CREAT | O_TRUNC, ADA_FS_FILE_MODE, &w->fd);
	if (err)
		goto free_buf;
	w->detail = detail;
	w->info = *info;
	err = atf_write_all(w->fd, placeholder, sizeof(placeholder));
	if (err)
		goto close_fd;
	*out = w;
	return 0;
close_fd:
	close(w->fd);
free_buf:
	free(w->buf);
free_w:
	free(w);
	return err;
}

static int writer_append(struct ada_atf_writer *w, const void *p, size_t n, uint64_t ts)
{
	int err;

	if (w->count == 0)
		w->t_start = ts;
	w->t_end = ts;
	w->count++;
	w->bytes += n;
	w->crc = ada_atf_crc32(w->crc, p, n);
	if (w->used + n > ATF_WRITER_BUF) {
		err = writer_flush(w);
		if (err)
			return err;
	}
	if (n > ATF_WRITER_BUF)
		return atf_write_all(w->fd, p, n);
	memcpy(w->buf + w->used, p, n);
	w->used += n;
	return 0;
}

int ada_atf_writer_index(struct ada_atf_writer *w, const struct atf_index_event *ev)
{
	if (w->detail)
		return -EINVAL;
	return writer_append(w, ev, sizeof(*ev), ev->timestamp_ns);
}

int ada_atf_writer_detail(struct ada_atf_writer *w, const struct atf_detail_event_header *ev)
{
	if (!w->detail || ev->total_length < ATF_DETAIL_EVENT_HEADER_SIZE)
		return -EINVAL;
	if (w->count == 0)
		w->seq_start = ev->index_seq;
	w->seq_end = ev->index_seq;
	return writer_append(w, ev, ev->total_length, ev->timestamp);
}

static int writer_finish_index(struct ada_atf_writer *w)
{
	struct atf_index_header h;
	struct atf_index_footer f;
	int err;

	ada_atf_index_header_fill(&h, &w->info, w->count, w->t_start, w->t_end);
	ada_atf_index_footer_fill(&f, w->crc, w->count, w->t_start, w->t_end);
	err = atf_write_all(w->fd, &f, sizeof(f));
	if (!err && pwrite(w->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		err = -EIO;
	return err;
}

static int writer_finish_detail(struct ada_atf_writer *w)
{
	struct atf_detail_header h;
	struct atf_detail_footer f;
	int err;

	ada_atf_detail_header_fill(&h, &w->info, w->count, w->bytes, w->seq_start, w->seq_end);
	ada_atf_detail_footer_fill(&f, w->crc, w->count, w->bytes, w->t_start, w->t_end);
	err = atf_write_all(w->fd, &f, sizeof(f));
	if (!err && pwrite(w->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		err = -EIO;
	return err;
}

int ada_atf_writer_finish(struct ada_atf_writer *w)
{
	int err = writer_flush(w);

	if (!err)
		err = w->detail ? writer_finish_detail(w) : writer_finish_index(w);
	if (close(w->fd) < 0 && !err)
		err = -errno;
	free(w->buf);
	free(w);
	return err;
}

void ada_atf_writer_abort(struct ada_atf_writer *w)
{
	if (!w)
		return;
	writer_flush(w);
	close(w->fd);
	free(w->buf);
	free(w);
}
