/* In-memory ATF files for the atf unit tests. */
#ifndef ADA_TEST_ATF_UTIL_H
#define ADA_TEST_ATF_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atf.h"

struct tbuf {
	uint8_t *p;
	size_t len;
};

/* index file: header, n events, footer (valid). */
static inline struct tbuf t_index(const struct atf_index_event *ev, size_t n, uint32_t tid,
                                  int has_detail)
{
	struct ada_atf_file_info info;
	struct atf_index_header h;
	struct atf_index_footer f;
	struct tbuf b;
	uint64_t t0 = n ? ev[0].timestamp_ns : 0, t1 = n ? ev[n - 1].timestamp_ns : 0;

	ada_atf_file_info_native(&info, tid);
	info.has_detail = has_detail;
	b.len = 64 + n * 32 + 64;
	b.p = calloc(1, b.len);
	ada_atf_index_header_fill(&h, &info, n, t0, t1);
	ada_atf_index_footer_fill(&f, ada_atf_crc32(0, ev, n * 32), n, t0, t1);
	memcpy(b.p, &h, 64);
	if (n)
		memcpy(b.p + 64, ev, n * 32);
	memcpy(b.p + 64 + n * 32, &f, 64);
	return b;
}

static inline struct atf_index_event t_ev(uint64_t ts, uint64_t fid, uint32_t tid, uint32_t kind,
                                          uint32_t depth, uint32_t detail)
{
	struct atf_index_event e = {ts, fid, tid, kind, depth, detail};
	return e;
}

/* One function detail record (no stack) linked to index_seq. */
struct t_detail_rec {
	struct atf_detail_event_header h;
	struct atf_detail_function_payload p;
} __attribute__((packed));

static inline struct t_detail_rec t_drec(uint32_t seq, uint32_t tid, uint64_t ts, uint64_t fid)
{
	struct t_detail_rec r;
	memset(&r, 0, sizeof(r));
	r.h.total_length = sizeof(r);
	r.h.event_type = ATF_DETAIL_FUNCTION_CALL;
	r.h.index_seq = seq;
	r.h.thread_id = tid;
	r.h.timestamp = ts;
	r.p.function_id = fid;
	r.p.x_regs[0] = 0xdead;
	return r;
}

static inline struct tbuf t_detail(const struct t_detail_rec *r, size_t n, uint32_t tid)
{
	struct ada_atf_file_info info;
	struct atf_detail_header h;
	struct atf_detail_footer f;
	struct tbuf b;
	size_t bytes = n * sizeof(*r);

	ada_atf_file_info_native(&info, tid);
	b.len = 64 + bytes + 64;
	b.p = calloc(1, b.len);
	ada_atf_detail_header_fill(&h, &info, n, bytes, n ? r[0].h.index_seq : 0,
	                           n ? r[n - 1].h.index_seq : 0);
	ada_atf_detail_footer_fill(&f, ada_atf_crc32(0, r, bytes), n, bytes,
	                           n ? r[0].h.timestamp : 0, n ? r[n - 1].h.timestamp : 0);
	memcpy(b.p, &h, 64);
	if (n)
		memcpy(b.p + 64, r, bytes);
	memcpy(b.p + 64 + bytes, &f, 64);
	return b;
}

#endif
