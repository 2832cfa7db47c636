/*
 * The ATF validator: every rule of the schema (plus ATF-ERRATA.md) checked
 * against the bytes, one problem per report call with the file and the
 * byte offset it is about.
 *
 * Threads: CLI only. Safety: a file is an untrusted (buf, len); every read
 * goes through ATF_READ/atf_fits against len, and loop bounds come from the
 * length, never from a count in the file (a bogus event_count of 2^32-1
 * costs nothing). Files are validated independently; links are checked
 * with the SALVAGE readers, which only expose what lies inside the buffer.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "atf_internal.h"
#include "cidx.h"

/* Per-file problem accounting: at most cap lines, then one summary. */
struct vctx {
	struct ada_atf_report *r;
	const char *path;
	uint32_t shown, cap;
	uint64_t hidden;
};

static void vctx_init(struct vctx *v, struct ada_atf_report *r, const char *path)
{
	v->r = r;
	v->path = path;
	v->shown = 0;
	v->cap = r->max_per_file ? r->max_per_file : 50;
	v->hidden = 0;
}

static void vctx_fini(struct vctx *v)
{
	char msg[96];

	if (!v->hidden || !v->r->fn)
		return;
	snprintf(msg, sizeof(msg), "%" PRIu64 " more problems in this file not shown", v->hidden);
	v->r->fn(v->r->ctx, ADA_ATF_ERROR, v->path, 0, msg);
}

static void __attribute__((format(printf, 4, 5)))
vreport(struct vctx *v, enum ada_atf_severity sev, uint64_t off, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (sev == ADA_ATF_ERROR)
		v->r->errors++;
	else
		v->r->warnings++;
	if (v->shown >= v->cap) {
		v->hidden++;
		return;
	}
	v->shown++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (v->r->fn)
		v->r->fn(v->r->ctx, sev, v->path, off, msg);
}

#define VERR(v, off, ...) vreport((v), ADA_ATF_ERROR, (off), __VA_ARGS__)

/* ---------------------------------------------------------- identity */

static void check_ident(struct vctx *v, uint8_t endian, uint8_t version, uint8_t arch, uint8_t os)
{
	if (endian != ATF_ENDIAN_LITTLE)
		VERR(v, 4, "endian is 0x%02x, expected 0x01 (little-endian)", endian);
	if (version != ATF_VERSION)
		VERR(v, 5, "version is %u, expected %u", version, ATF_VERSION);
	if (arch != ATF_ARCH_X86_64 && arch != ATF_ARCH_ARM64)
		VERR(v, 6, "arch is %u, expected 1 (x86_64) or 2 (arm64)", arch);
	if (os < ATF_OS_IOS || os > ATF_OS_WINDOWS)
		VERR(v, 7, "os is %u, expected 1..5", os);
}

static void magic_text(char out[24], const uint8_t m[4])
{
	char *p = out;
	for (int i = 0; i < 4; i++)
		p += m[i] >= 0x20 && m[i] < 0x7f ? sprintf(p, "%c", m[i])
		                                 : sprintf(p, "\\x%02x", m[i]);
}

/* ------------------------------------------------------------- index */

struct iscan {
	const uint8_t *buf;
	size_t len;
	struct atf_index_header h;
	bool footer_ok; /* footer_offset is aligned, in the file, magic right */
	uint64_t n;     /* whole events scanned */
};

static void index_check_footer_pos(struct vctx *v, struct iscan *s)
{
	const struct atf_index_header *h = &s->h;
	uint64_t fo = h->footer_offset, eo = h->events_offset;
	struct atf_index_footer f;

	if (fo < eo || (fo - eo) % ATF_INDEX_EVENT_SIZE) {
		VERR(v, 40,
		     "footer_offset %" PRIu64 " is not events_offset %" PRIu64
		     " plus a multiple of 32",
		     fo, eo);
		return;
	}
	if (!atf_fits(s->len, fo, ATF_FOOTER_SIZE)) {
		VERR(v, 28,
		     "event count: header says %" PRIu32 " events, footer_offset %" PRIu64
		     " + 64 needs %" PRIu64 " bytes but the file has %zu: truncated",
		     h->event_count, fo, fo + ATF_FOOTER_SIZE, s->len);
		return;
	}
	if (fo + ATF_FOOTER_SIZE != s->len)
		VERR(v, fo + ATF_FOOTER_SIZE,
		     "%" PRIu64 " bytes after the footer (footer_offset %" PRIu64
		     " + 64 must be the file length %zu)",
		     (uint64_t)s->len - fo - ATF_FOOTER_SIZE, fo, s->len);
	memcpy(&f, s->buf + fo, sizeof(f));
	if (memcmp(f.magic, ATF_INDEX_FOOTER_MAGIC, 4)) {
		char m[24];
		magic_text(m, f.magic);
		VERR(v, fo, "wrong footer magic \"%s\" at footer_offset, expected \"2ITA\"", m);
		return;
	}
	s->footer_ok = true;
}

static void index_check_footer(struct vctx *v, struct iscan *s, uint64_t first, uint64_t last)
{
	const struct atf_index_header *h = &s->h;
	uint64_t fo = h->footer_offset, bytes = fo - h->events_offset;
	struct atf_index_footer f;
	uint32_t crc;

	memcpy(&f, s->buf + fo, sizeof(f));
	if (f.event_count != s->n)
		VERR(v, fo + 8,
		     "event count: footer says %" PRIu64
		     " events, the events section holds %" PRIu64,
		     f.event_count, s->n);
	if (h->event_count != (uint32_t)s->n)
		VERR(v, 28,
		     "event count: header says %" PRIu32
		     " events, the events section holds %" PRIu64,
		     h->event_count, s->n);
	if (f.bytes_written != bytes)
		VERR(v, fo + 32,
		     "bytes_written %" PRIu64 ", the events section is %" PRIu64 " bytes",
		     f.bytes_written, bytes);
	crc = ada_atf_crc32(0, s->buf + h->events_offset, bytes);
	if (f.checksum != crc)
		VERR(v, fo + 4,
		     "CRC-32 mismatch: footer says 0x%08" PRIx32
		     ", events section has 0x%08" PRIx32,
		     f.checksum, crc);
	if (s->n && (f.time_start_ns != first || f.time_end_ns != last))
		VERR(v, fo + 16,
		     "footer time range [%" PRIu64 ", %" PRIu64 "] is not the first/last event "
		     "timestamps [%" PRIu64 ", %" PRIu64 "]",
		     f.time_start_ns, f.time_end_ns, first, last);
}

/* Per-event checks over every whole event inside the file. */
static void index_scan_events(struct vctx *v, struct iscan *s, struct ada_atf_vfile *info)
{
	uint64_t eo = s->h.events_offset;
	uint64_t end = s->footer_ok ? s->h.footer_offset : s->len;
	uint64_t prev = 0;
	struct atf_index_event ev;

	s->n = (end - eo) / ATF_INDEX_EVENT_SIZE;
	for (uint64_t i = 0; i < s->n; i++) {
		uint64_t off = eo + i * ATF_INDEX_EVENT_SIZE;
		memcpy(&ev, s->buf + off, sizeof(ev));
		if (!ada_atf_kind_name(ev.event_kind))
			VERR(v, off + 20,
			     "event %" PRIu64 ": event_kind %" PRIu32 " is not 1, 2 or 3", i,
			     ev.event_kind);
		if (ev.thread_id != s->h.thread_id)
			VERR(v, off + 16,
			     "event %" PRIu64 ": thread_id %" PRIu32 ", header says %" PRIu32, i,
			     ev.thread_id, s->h.thread_id);
		if (i && ev.timestamp_ns < prev)
			VERR(v, off,
			     "event %" PRIu64 ": timestamp %" PRIu64 " goes back from %" PRIu64, i,
			     ev.timestamp_ns, prev);
		if (i == 0)
			info->first_ts = ev.timestamp_ns;
		prev = ev.timestamp_ns;
	}
	info->last_ts = prev;
	info->count = s->n;
}

static bool index_check_header(struct vctx *v, struct iscan *s)
{
	const struct atf_index_header *h = &s->h;

	if (s->len < ATF_HEADER_SIZE) {
		VERR(v, 0, "file is %zu bytes, shorter than the 64-byte index header", s->len);
		return false;
	}
	memcpy(&s->h, s->buf, sizeof(s->h));
	if (memcmp(h->magic, ATF_INDEX_MAGIC, 4)) {
		char m[24];
		magic_text(m, h->magic);
		VERR(v, 0, "wrong magic \"%s\", expected \"ATI2\": not an ATF index file", m);
		return false;
	}
	check_ident(v, h->endian, h->version, h->arch, h->os);
	if (h->clock_type < ATF_CLOCK_MACH_CONTINUOUS || h->clock_type > ATF_CLOCK_BOOTTIME)
		VERR(v, 16, "clock_type is %u, expected 1..3", h->clock_type);
	if (h->event_size != ATF_INDEX_EVENT_SIZE) {
		VERR(v, 24, "event_size is %" PRIu32 ", expected 32", h->event_size);
		return false;
	}
	if (h->events_offset < ATF_HEADER_SIZE || h->events_offset > s->len) {
		VERR(v, 32, "events_offset %" PRIu64 " is outside [64, file length %zu]",
		     h->events_offset, s->len);
		return false;
	}
	return true;
}

void ada_atf_validate_index_buf(const char *path, const void *buf, size_t len,
                                struct ada_atf_report *r, struct ada_atf_vfile *info)
{
	struct iscan s = {.buf = buf, .len = len};
	struct vctx v;
	uint64_t errs = r->errors;

	if (ada_cidx_is_compact(buf, len)) {
		ada_cidx_validate_buf(path, buf, len, r, info);
		return;
	}
	memset(info, 0, sizeof(*info));
	vctx_init(&v, r, path);
	if (!index_check_header(&v, &s))
		goto out;
	index_check_footer_pos(&v, &s);
	index_scan_events(&v, &s, info);
	/* Without a footer the count was judged (truncated) in footer_pos. */
	if (s.footer_ok)
		index_check_footer(&v, &s, info->first_ts, info->last_ts);
	if (s.n && (s.h.time_start_ns != info->first_ts || s.h.time_end_ns != info->last_ts))
		VERR(&v, 48,
		     "header time range [%" PRIu64 ", %" PRIu64 "] is not the first/last event "
		     "timestamps [%" PRIu64 ", %" PRIu64 "]",
		     s.h.time_start_ns, s.h.time_end_ns, info->first_ts, info->last_ts);
	info->usable = s.footer_ok && r->errors == errs;
out:
	vctx_fini(&v);
}

/* ------------------------------------------------------------ detail */

struct dscan {
	const uint8_t *buf;
	size_t len;
	struct atf_detail_header h;
	bool footer_ok;
	uint64_t end; /* end of the events section we walk */
	uint64_t n, first_ts, last_ts, first_seq, last_seq;
};

static bool detail_check_header(struct vctx *v, struct dscan *s)
{
	const struct atf_detail_header *h = &s->h;

	if (s->len < ATF_HEADER_SIZE) {
		VERR(v, 0, "file is %zu bytes, shorter than the 64-byte detail header", s->len);
		return false;
	}
	memcpy(&s->h, s->buf, sizeof(s->h));
	if (memcmp(h->magic, ATF_DETAIL_MAGIC, 4)) {
		char m[24];
		magic_text(m, h->magic);
		VERR(v, 0, "wrong magic \"%s\", expected \"ATD2\": not an ATF detail file", m);
		return false;
	}
	check_ident(v, h->endian, h->version, h->arch, h->os);
	if (h->events_offset < ATF_HEADER_SIZE || h->events_offset > s->len) {
		VERR(v, 20, "events_offset %" PRIu64 " is outside [64, file length %zu]",
		     h->events_offset, s->len);
		return false;
	}
	return true;
}

static void detail_check_footer_pos(struct vctx *v, struct dscan *s)
{
	const struct atf_detail_header *h = &s->h;
	uint64_t eo = h->events_offset, fo;
	struct atf_detail_footer f;

	s->end = s->len;
	if (!atf_fits(s->len, eo, h->bytes_length) ||
	    !atf_fits(s->len, eo + h->bytes_length, ATF_FOOTER_SIZE)) {
		VERR(v, 36,
		     "bytes_length %" PRIu64
		     " puts the footer past the end of the file (%zu bytes): "
		     "truncated",
		     h->bytes_length, s->len);
		return;
	}
	fo = eo + h->bytes_length;
	if (fo + ATF_FOOTER_SIZE != s->len)
		VERR(v, fo + ATF_FOOTER_SIZE,
		     "%" PRIu64 " bytes after the footer (events_offset + "
		     "bytes_length + 64 must be the file length %zu)",
		     (uint64_t)s->len - fo - ATF_FOOTER_SIZE, s->len);
	memcpy(&f, s->buf + fo, sizeof(f));
	if (memcmp(f.magic, ATF_DETAIL_FOOTER_MAGIC, 4)) {
		char m[24];
		magic_text(m, f.magic);
		VERR(v, fo,
		     "wrong footer magic \"%s\" at events_offset + bytes_length, expected \"2DTA\"",
		     m);
		return;
	}
	s->footer_ok = true;
	s->end = fo;
}

static void detail_check_event(struct vctx *v, struct dscan *s, uint64_t pos,
                               const struct atf_detail_event_header *e)
{
	uint64_t i = s->n;

	if (e->thread_id != s->h.thread_id)
		VERR(v, pos + 12,
		     "detail event %" PRIu64 ": thread_id %" PRIu32 ", header says %" PRIu32, i,
		     e->thread_id, s->h.thread_id);
	if (i && e->timestamp < s->last_ts)
		VERR(v, pos + 16,
		     "detail event %" PRIu64 ": timestamp %" PRIu64 " goes back from %" PRIu64, i,
		     e->timestamp, s->last_ts);
	if (i && e->index_seq <= s->last_seq)
		VERR(v, pos + 8,
		     "detail event %" PRIu64 ": index_seq %" PRIu32
		     " does not increase (previous %" PRIu64 ")",
		     i, e->index_seq, s->last_seq);
	if (e->event_type == ATF_DETAIL_FUNCTION_CALL ||
	    e->event_type == ATF_DETAIL_FUNCTION_RETURN || ada_atf_detail_is_fp(e->event_type)) {
		if (!ada_atf_detail_function((const void *)(s->buf + pos), NULL))
			VERR(v, pos,
			     "detail event %" PRIu64 ": total_length %" PRIu32 " cannot hold the "
			     "function payload and its stack snapshot",
			     i, e->total_length);
	} else if (e->event_type == ATF_DETAIL_SIGNAL_CONTEXT) {
		if (!ada_atf_detail_signal((const void *)(s->buf + pos)))
			VERR(v, pos,
			     "detail event %" PRIu64 ": total_length %" PRIu32
			     " is not the 184 bytes of a signal context record",
			     i, e->total_length);
	} else {
		vreport(v, ADA_ATF_WARNING, pos + 4,
		        "detail event %" PRIu64 ": unknown event_type %u", i, e->event_type);
	}
}

/* Walks total_length from events_offset; the walk must end exactly at the
 * footer. */
static void detail_walk(struct vctx *v, struct dscan *s)
{
	uint64_t pos = s->h.events_offset;
	struct atf_detail_event_header e;

	while (pos < s->end) {
		if (!ATF_READ(&e, s->buf, s->end, pos)) {
			VERR(v, pos,
			     "detail event %" PRIu64 ": %" PRIu64
			     " bytes left, too few for a 24-byte "
			     "event header%s",
			     s->n, s->end - pos, s->footer_ok ? "" : ": truncated");
			return;
		}
		if (e.total_length < ATF_DETAIL_EVENT_HEADER_SIZE ||
		    e.total_length > s->end - pos) {
			VERR(v, pos,
			     "detail event %" PRIu64 ": total_length %" PRIu32
			     " does not fit between 24 "
			     "and the %" PRIu64 " bytes left before the %s",
			     s->n, e.total_length, s->end - pos,
			     s->footer_ok ? "footer" : "end of the file");
			return;
		}
		detail_check_event(v, s, pos, &e);
		if (s->n == 0) {
			s->first_ts = e.timestamp;
			s->first_seq = e.index_seq;
		}
		s->last_ts = e.timestamp;
		s->last_seq = e.index_seq;
		s->n++;
		pos += e.total_length;
	}
}

static void detail_check_totals(struct vctx *v, struct dscan *s)
{
	const struct atf_detail_header *h = &s->h;
	uint64_t fo = s->end;
	struct atf_detail_footer f;

	if (h->event_count != s->n)
		VERR(v, 28,
		     "event count: header says %" PRIu64 " detail events, the walk found %" PRIu64,
		     h->event_count, s->n);
	if (s->n && (h->index_seq_start != s->first_seq || h->index_seq_end != s->last_seq))
		VERR(v, 44,
		     "index_seq range [%" PRIu64 ", %" PRIu64
		     "] is not the first/last event's [%" PRIu64 ", %" PRIu64 "]",
		     h->index_seq_start, h->index_seq_end, s->first_seq, s->last_seq);
	if (!s->footer_ok)
		return;
	memcpy(&f, s->buf + fo, sizeof(f));
	if (f.event_count != s->n)
		VERR(v, fo + 8,
		     "event count: footer says %" PRIu64 " detail events, the walk found %" PRIu64,
		     f.event_count, s->n);
	if (f.bytes_length != h->bytes_length)
		VERR(v, fo + 16, "footer bytes_length %" PRIu64 ", header says %" PRIu64,
		     f.bytes_length, h->bytes_length);
	uint32_t crc = ada_atf_crc32(0, s->buf + h->events_offset, h->bytes_length);
	if (f.checksum != crc)
		VERR(v, fo + 4,
		     "CRC-32 mismatch: footer says 0x%08" PRIx32
		     ", events section has 0x%08" PRIx32,
		     f.checksum, crc);
	if (s->n && (f.time_start_ns != s->first_ts || f.time_end_ns != s->last_ts))
		VERR(v, fo + 24,
		     "footer time range [%" PRIu64 ", %" PRIu64 "] is not the first/last event "
		     "timestamps [%" PRIu64 ", %" PRIu64 "]",
		     f.time_start_ns, f.time_end_ns, s->first_ts, s->last_ts);
}

void ada_atf_validate_detail_buf(const char *path, const void *buf, size_t len,
                                 struct ada_atf_report *r, struct ada_atf_vfile *info)
{
	struct dscan s = {.buf = buf, .len = len};
	struct vctx v;
	uint64_t errs = r->errors;

	memset(info, 0, sizeof(*info));
	vctx_init(&v, r, path);
	if (!detail_check_header(&v, &s))
		goto out;
	detail_check_footer_pos(&v, &s);
	detail_walk(&v, &s);
	detail_check_totals(&v, &s);
	info->count = s.n;
	info->first_ts = s.first_ts;
	info->last_ts = s.last_ts;
	info->usable = s.footer_ok && r->errors == errs;
out:
	vctx_fini(&v);
}
