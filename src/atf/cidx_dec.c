/*
 * The compact index decoder (cidx.h): untrusted bytes in, ATF v2 index
 * events out.
 *
 * Threads: any; a decoder is immutable after open (get() and find() decode
 * into the caller's scratch).
 *
 * Trust boundary: dec_header_read() (file header), dec_footer_read()
 * (footer and tail bounds), dec_block_header_ok() (each block header, on
 * the walk) and the bounded reads of dec_one() (each coded byte) are where
 * the file's values enter; past them, every offset lies inside the buffer
 * and every count is bounded by bytes that exist (a block's events by its
 * body length, one byte at least each; links by the table's length, two
 * bytes at least each), so no allocation is larger than the input allows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_internal.h"
#include "cidx_internal.h"

struct cidx_blk {
	uint64_t off, first_seq, first_ts;
	uint32_t nevents, total_len;
};

struct cidx_lnk {
	uint64_t seq;
	uint32_t detail;
};

struct ada_cidx_dec {
	const uint8_t *base;
	size_t len;
	struct ada_cidx_file_header h;
	struct ada_cidx_footer f;
	bool finished;
	struct cidx_blk *blk;
	size_t nblk, cap_blk;
	uint64_t count;
	uint32_t max_events;
	struct cidx_lnk *links;
	uint64_t nlinks;
};

/* ------------------------------------------------------------ one event */

static inline bool dec_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t r = 0;

	for (unsigned s = 0; s < 64; s += 7) {
		if (p == end)
			return false;
		uint8_t b = *p++;
		r |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80)) {
			*pp = p;
			*v = r;
			return true;
		}
	}
	return false; /* a varint that never ends */
}

static inline bool dec_u32(const uint8_t **pp, const uint8_t *end, uint32_t *v)
{
	uint64_t x;
	if (!dec_varint(pp, end, &x) || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* The time delta of a tag: d, or 31 + the u16 that follows. */
static inline bool dec_dt(const uint8_t **pp, const uint8_t *end, uint32_t d, uint64_t *dt)
{
	if (__builtin_expect(d < CIDX_D_ESC, 1)) {
		*dt = d;
		return true;
	}
	if (end - *pp < 2)
		return false;
	*dt = CIDX_D_ESC + ((uint64_t)(*pp)[0] | (uint64_t)(*pp)[1] << 8);
	*pp += 2;
	return true;
}

static bool dec_raw_fid(struct cidx_model *m, unsigned mode, const uint8_t **pp, const uint8_t *end,
                        uint64_t *fid)
{
	uint64_t z;

	switch (mode) {
	case 0:
		if (!m->nk)
			return false;
		*fid = m->fid[cidx_top_i(m)];
		return true;
	case 1:
		*fid = m->last_call;
		return true;
	case 2:
		if (end - *pp < 2)
			return false;
		z = (uint64_t)(*pp)[0] | (uint64_t)(*pp)[1] << 8;
		*pp += 2;
		if (z >= ADA_CIDX_CACHE_SLOTS)
			return false;
		*fid = m->cache[z];
		return true;
	default:
		if (!dec_varint(pp, end, &z))
			return false;
		*fid = m->last_explicit + cidx_unzigzag(z);
		cidx_model_explicit(m, *fid);
		return true;
	}
}

static bool dec_raw_depth(const struct cidx_model *m, unsigned mode, const uint8_t **pp,
                          const uint8_t *end, uint32_t *depth)
{
	switch (mode) {
	case 0:
		if (!m->nk)
			return false;
		*depth = cidx_depth_at(m, cidx_top_i(m));
		return true;
	case 1:
		*depth = m->cur + 1;
		return true;
	case 2:
		*depth = m->cur;
		return true;
	default:
		return dec_u32(pp, end, depth);
	}
}

/* A RAW event (cidx_enc.c enc_raw()): mask, |delta|, kind, fid, depth, tid. */
static bool dec_raw(struct cidx_model *m, const uint8_t **pp, const uint8_t *end,
                    struct atf_index_event *ev)
{
	uint64_t dt, fid;
	uint32_t kind, depth, tid = m->tid;
	uint8_t mask;

	if (*pp == end)
		return false;
	mask = *(*pp)++;
	if (!dec_varint(pp, end, &dt))
		return false;
	kind = (mask & CIDX_RAW_KIND_MASK) + 1u;
	if ((mask & CIDX_RAW_KIND_MASK) == 3 && !dec_u32(pp, end, &kind))
		return false;
	if (!dec_raw_fid(m, mask >> CIDX_RAW_FID_SHIFT & 3, pp, end, &fid) ||
	    !dec_raw_depth(m, mask >> CIDX_RAW_DEPTH_SHIFT & 3, pp, end, &depth))
		return false;
	if ((mask & CIDX_RAW_TID) && !dec_u32(pp, end, &tid))
		return false;
	ev->timestamp_ns = mask & CIDX_RAW_TS_BACK ? m->ts - dt : m->ts + dt;
	ev->function_id = fid;
	ev->thread_id = tid;
	ev->event_kind = kind;
	ev->call_depth = depth;
	return true;
}

/* The event of the top frame leaving (RETURN or EXCEPTION). */
static inline bool dec_pop(const struct cidx_model *m, uint32_t kind, struct atf_index_event *ev)
{
	uint32_t t = cidx_top_i(m);
	if (__builtin_expect(!m->nk, 0))
		return false;
	ev->function_id = m->fid[t];
	ev->call_depth = cidx_depth_at(m, t);
	ev->event_kind = kind;
	return true;
}

static inline void dec_call(const struct cidx_model *m, uint64_t fid, struct atf_index_event *ev)
{
	ev->function_id = fid;
	ev->call_depth = m->cur + 1;
	ev->event_kind = ATF_EVENT_CALL;
}

static bool dec_ext(struct cidx_model *m, uint32_t sub, const uint8_t **pp, const uint8_t *end,
                    struct atf_index_event *ev)
{
	uint64_t dt;

	if (sub == CIDX_EXT_RAW)
		return dec_raw(m, pp, end, ev);
	if (sub != CIDX_EXT_EXC || !dec_varint(pp, end, &dt) ||
	    !dec_pop(m, ATF_EVENT_EXCEPTION, ev))
		return false;
	ev->timestamp_ns = m->ts + dt;
	ev->thread_id = m->tid;
	return true;
}

/* One coded event at *pp into ev; the model moves on. */
static inline bool dec_one(struct cidx_model *m, const uint8_t **pp, const uint8_t *end,
                           struct atf_index_event *ev)
{
	const uint8_t tag = *(*pp)++;
	const uint32_t op = tag >> 5, d = tag & 31;
	uint64_t dt, z;

	ev->detail_seq = ATF_NO_DETAIL;
	if (op == CIDX_OP_EXT) {
		if (!dec_ext(m, d, pp, end, ev))
			return false;
		goto done;
	}
	if (!dec_dt(pp, end, d, &dt))
		return false;
	ev->timestamp_ns = m->ts + dt;
	ev->thread_id = m->tid;
	if (op == CIDX_OP_RET) {
		if (!dec_pop(m, ATF_EVENT_RETURN, ev))
			return false;
	} else if (op == CIDX_OP_CALL_LAST) {
		dec_call(m, m->last_call, ev);
	} else if (op == CIDX_OP_CALL_NEW) {
		if (!dec_varint(pp, end, &z))
			return false;
		cidx_model_explicit(m, m->last_explicit + cidx_unzigzag(z));
		dec_call(m, m->last_explicit, ev);
	} else {
		if (*pp == end)
			return false;
		dec_call(m, m->cache[(op - CIDX_OP_CALL_SLOT) << 8 | *(*pp)++], ev);
	}
done:
	m->ts = ev->timestamp_ns;
	cidx_model_apply(m, ev->function_id, ev->event_kind, ev->call_depth);
	return true;
}

/* ---------------------------------------------------------------- block */

static void dec_model_init(struct cidx_model *m, const struct ada_cidx_block_header *bh,
                           const uint8_t *frames)
{
	memset(m->cache, 0, sizeof(m->cache));
	m->ts = bh->first_ts;
	m->last_call = bh->last_call_fid;
	m->last_explicit = bh->last_explicit_fid;
	m->cur = bh->cur_depth;
	m->tid = bh->thread_id;
	m->nk = m->top = bh->nframes;
	for (uint32_t i = 0; i < bh->nframes; i++) {
		struct ada_cidx_frame f;
		memcpy(&f, frames + i * sizeof(f), sizeof(f));
		m->fid[i] = f.function_id;
		m->dw[i] = cidx_dw(f.call_depth);
	}
}

/* The links of seqs [first, first + n) into out. */
static void dec_apply_links(const struct ada_cidx_dec *d, uint64_t first, uint32_t n,
                            struct atf_index_event *out)
{
	uint64_t lo = 0, hi = d->nlinks;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (d->links[mid].seq < first)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < d->nlinks && d->links[lo].seq - first < n; lo++)
		out[d->links[lo].seq - first].detail_seq = d->links[lo].detail;
}

static bool dec_block_crc_ok(const uint8_t *b, const struct ada_cidx_block_header *bh)
{
	return ada_atf_crc32(0, b + 8, bh->total_len - 8) == bh->crc;
}

/* An event as its four words: time, function, thread_id | event_kind << 32,
 * call_depth | detail_seq << 32 (the model's dw). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "an event's words are little-endian");
static inline void dec_put(struct atf_index_event *ev, uint64_t ts, uint64_t fid, uint64_t w2,
                           uint64_t dw)
{
	/* Word by word: an array copied whole goes through the stack. */
	ev->timestamp_ns = ts;
	ev->function_id = fid;
	memcpy(&ev->thread_id, &w2, sizeof(w2));
	memcpy(&ev->call_depth, &dw, sizeof(dw));
}

/* The common tags with the model's scalars in registers (stores to out
 * may alias anything of *m's type): RETURN of the innermost frame, CALL of
 * the last called or of a cached function. Such an event takes 4 bytes at
 * most (tag, u16 delta, slot), so a stretch of (end - p) / 4 of them needs
 * no bounds check per byte. The rest, and the last bytes of the block, go
 * to dec_one() with the scalars written back around it. Returns the
 * events decoded (n, or fewer at a bad one). */
static uint32_t dec_run(struct cidx_model *m, const uint8_t **pp, const uint8_t *end,
                        struct atf_index_event *out, uint32_t n)
{
	uint64_t ts = m->ts, last_call = m->last_call;
	uint32_t cur = m->cur, nk = m->nk, top = m->top;
	const uint64_t ret_w2 = m->tid | (uint64_t)ATF_EVENT_RETURN << 32;
	const uint64_t call_w2 = m->tid | (uint64_t)ATF_EVENT_CALL << 32;
	const uint8_t *p = *pp;
	struct atf_index_event *ev = out, *const oend = out + n;

	while (ev < oend) {
		const size_t room = (size_t)(end - p) / 4, left = (size_t)(oend - ev);
		struct atf_index_event *const stop = ev + (room < left ? room : left);
		if (stop == ev)
			goto slow;
		for (; ev < stop; ev++) {
			const uint32_t tag = p[0], op = tag >> 5, d = tag & 31;
			uint64_t dt = d;
			uint32_t len = 1;
			if (d == CIDX_D_ESC) {
				dt += (uint64_t)p[1] | (uint64_t)p[2] << 8;
				len = 3;
			}
			if (op == CIDX_OP_RET && nk) {
				const uint32_t ti = (top - 1) & (CIDX_FRAME_RING - 1);
				/* The frames below are shallower (cidx_model_apply()):
				 * the general rule pops this one only. */
				const uint64_t dw = m->dw[ti];
				const uint32_t depth = (uint32_t)dw;
				ts += dt;
				dec_put(ev, ts, m->fid[ti], ret_w2, dw);
				top--;
				nk--;
				cur = depth - (depth != 0); /* as cidx_model_apply() */
			} else if (op == CIDX_OP_CALL_LAST || op >= CIDX_OP_CALL_SLOT) {
				uint64_t fid = last_call;
				const uint32_t depth = cur + 1;
				if (op >= CIDX_OP_CALL_SLOT)
					fid = m->cache[(op - CIDX_OP_CALL_SLOT) << 8 | p[len++]];
				if (depth & ADA_SIGNAL_MARKER_FLAG)
					goto slow;
				const uint64_t dw = cidx_dw(depth);
				const uint32_t w = top & (CIDX_FRAME_RING - 1);
				ts += dt;
				dec_put(ev, ts, fid, call_w2, dw);
				m->fid[w] = fid;
				m->dw[w] = dw;
				top++;
				nk += nk < CIDX_FRAME_RING;
				cur = depth;
				last_call = fid;
			} else {
				goto slow;
			}
			p += len;
		}
		continue;
	slow:
		m->ts = ts;
		m->last_call = last_call;
		m->cur = cur;
		m->nk = nk;
		m->top = top;
		if (p == end || !dec_one(m, &p, end, ev))
			break;
		ts = m->ts;
		last_call = m->last_call;
		cur = m->cur;
		nk = m->nk;
		top = m->top;
		ev++;
	}
	m->ts = ts;
	m->last_call = last_call;
	m->cur = cur;
	m->nk = nk;
	m->top = top;
	*pp = p;
	return (uint32_t)(ev - out);
}

/* Block b's header held to what the walk saw and its CRC checked; *m set
 * to the block's starting state and [*p, *end) its coded events. */
static int dec_block_start(const struct ada_cidx_dec *d, size_t b, struct cidx_model *m,
                           const uint8_t **p, const uint8_t **end)
{
	struct ada_cidx_block_header bh;
	const uint8_t *base = d->base + d->blk[b].off;

	memcpy(&bh, base, sizeof(bh));
	/* Checked on the walk; read again from a mapping another process may
	 * write, so held to what the walk saw. */
	if (bh.total_len != d->blk[b].total_len || bh.nevents != d->blk[b].nevents ||
	    bh.nframes > ADA_CIDX_FRAMES_MAX ||
	    bh.total_len < sizeof(bh) + bh.nframes * sizeof(struct ada_cidx_frame) ||
	    !dec_block_crc_ok(base, &bh))
		return -EBADMSG;
	dec_model_init(m, &bh, base + sizeof(bh));
	*p = base + sizeof(bh) + bh.nframes * sizeof(struct ada_cidx_frame);
	*end = base + bh.total_len;
	return 0;
}

int cidx_dec_block_model(const struct ada_cidx_dec *d, size_t b, struct atf_index_event *out,
                         struct cidx_model *m)
{
	const uint8_t *p, *end;
	const uint32_t n = d->blk[b].nevents;
	int err = dec_block_start(d, b, m, &p, &end);

	if (err)
		return err;
	if (dec_run(m, &p, end, out, n) != n || p != end)
		return -EBADMSG;
	dec_apply_links(d, d->blk[b].first_seq, n, out);
	return 0;
}

bool ada_cidx_dec_block_whole(const struct ada_cidx_dec *d, size_t b)
{
	struct ada_cidx_block_header bh;

	memcpy(&bh, d->base + d->blk[b].off, sizeof(bh));
	bh.total_len = d->blk[b].total_len; /* the walk's, inside the buffer */
	return dec_block_crc_ok(d->base + d->blk[b].off, &bh);
}

int ada_cidx_dec_block(const struct ada_cidx_dec *d, size_t b, struct atf_index_event *out)
{
	struct cidx_model m;
	return cidx_dec_block_model(d, b, out, &m);
}

int ada_cidx_block_events(const void *blk, size_t len, uint32_t n, struct atf_index_event *out)
{
	struct ada_cidx_block_header bh;
	struct cidx_model m;
	const uint8_t *base = blk;

	if (len < sizeof(bh))
		return -EBADMSG;
	memcpy(&bh, base, sizeof(bh));
	if (memcmp(bh.magic, "ATCB", 4) || bh.nframes > ADA_CIDX_FRAMES_MAX ||
	    len < sizeof(bh) + bh.nframes * sizeof(struct ada_cidx_frame))
		return -EBADMSG;
	dec_model_init(&m, &bh, base + sizeof(bh));
	const uint8_t *p = base + sizeof(bh) + bh.nframes * sizeof(struct ada_cidx_frame);
	return dec_run(&m, &p, base + len, out, n) == n ? 0 : -EBADMSG;
}

/* ----------------------------------------------------------------- open */

static bool dec_header_read(struct ada_cidx_dec *d)
{
	const struct ada_cidx_file_header *h = &d->h;

	return ATF_READ(&d->h, d->base, d->len, 0) && !memcmp(h->magic, ADA_CIDX_MAGIC, 4) &&
	       h->endian == ATF_ENDIAN_LITTLE && h->version == ADA_CIDX_VERSION &&
	       h->block_size >= ADA_CIDX_BLOCK_MIN && h->block_size <= ADA_CIDX_BLOCK_MAX &&
	       h->blocks_offset >= sizeof(*h) && h->blocks_offset <= d->len;
}

/* The footer the header points at, its tail sections in order and inside
 * the buffer, and their CRC. */
static bool dec_footer_read(struct ada_cidx_dec *d)
{
	const struct ada_cidx_footer *f = &d->f;
	uint64_t fo = d->h.footer_offset;

	if (fo == 0 || !ATF_READ(&d->f, d->base, d->len, fo) ||
	    memcmp(f->magic, ADA_CIDX_FOOTER_MAGIC, 4))
		return false;
	if (f->link_offset < d->h.blocks_offset || f->btab_offset < f->link_offset ||
	    f->btab_offset > fo || f->nblocks > (fo - f->btab_offset) / 24 ||
	    f->btab_offset + f->nblocks * 24 != fo)
		return false;
	return ada_atf_crc32(0, d->base + f->link_offset, fo - f->link_offset) == f->crc;
}

static bool dec_block_header_ok(const struct ada_cidx_dec *d,
                                const struct ada_cidx_block_header *bh, uint64_t pos, uint64_t end)
{
	uint64_t fixed = sizeof(*bh) + (uint64_t)bh->nframes * sizeof(struct ada_cidx_frame);

	return bh->nframes <= ADA_CIDX_FRAMES_MAX && bh->total_len >= fixed &&
	       bh->total_len <= d->h.block_size && bh->total_len <= end - pos && bh->nevents >= 1 &&
	       bh->nevents <= bh->total_len - fixed && bh->first_seq == d->count;
}

static int dec_blk_push(struct ada_cidx_dec *d, uint64_t pos,
                        const struct ada_cidx_block_header *bh)
{
	if (d->nblk == d->cap_blk) {
		size_t ncap = d->cap_blk ? d->cap_blk * 2 : 16;
		struct cidx_blk *p = realloc(d->blk, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->blk = p;
		d->cap_blk = ncap;
	}
	d->blk[d->nblk++] =
	    (struct cidx_blk){pos, bh->first_seq, bh->first_ts, bh->nevents, bh->total_len};
	d->count += bh->nevents;
	d->max_events = bh->nevents > d->max_events ? bh->nevents : d->max_events;
	return 0;
}

/* Where the walk reads the file: the image itself, or (fd >= 0) a
 * window of it read with pread(2), so that the walk maps none of the
 * file: walking the headers through a mapping faults in the pages around
 * each one (the kernel's fault-around), which for 64 KiB blocks is the
 * whole file. */
struct dec_src {
	int fd;
	uint8_t *buf;    /* the window: file bytes [off, off + len) */
	size_t cap, len; /* one block and the next header (SALVAGE: CRCs) */
	uint64_t off;
};

#define DEC_SRC_HEADERS 4096u /* the window without SALVAGE: headers only */

/* The file's bytes [pos, pos + n), pos + n <= end <= the image's length:
 * a pointer into the image, or into the window, read again when it does
 * not hold them (n <= cap). NULL when the read comes short (the file
 * shrank under us, or an I/O error): the walk stops there. */
static const uint8_t *dec_src_at(const struct ada_cidx_dec *d, struct dec_src *s, uint64_t pos,
                                 size_t n, uint64_t end)
{
	if (s->fd < 0)
		return d->base + pos;
	if (pos >= s->off && pos - s->off <= s->len && n <= s->len - (pos - s->off))
		return s->buf + (pos - s->off);
	size_t want = end - pos < s->cap ? (size_t)(end - pos) : s->cap;
	ssize_t got = pread(s->fd, s->buf, want, (off_t)pos);
	s->off = pos;
	s->len = got > 0 ? (size_t)got : 0;
	return n <= s->len ? s->buf : NULL;
}

/* Walks block headers from blocks_offset up to end; *stop is where it
 * stopped (the first byte that is not a good block). A salvage walk
 * checks each block's CRC too, so that it stops before a torn one. */
static int dec_walk(struct ada_cidx_dec *d, struct dec_src *s, uint64_t end, bool salvage,
                    uint64_t *stop)
{
	uint64_t pos = d->h.blocks_offset;
	struct ada_cidx_block_header bh;
	const uint8_t *p;

	while (end - pos >= sizeof(bh) && (p = dec_src_at(d, s, pos, sizeof(bh), end))) {
		memcpy(&bh, p, sizeof(bh));
		if (memcmp(bh.magic, ADA_CIDX_BLOCK_MAGIC, 4) ||
		    !dec_block_header_ok(d, &bh, pos, end))
			break;
		if (salvage &&
		    (!(p = dec_src_at(d, s, pos, bh.total_len, end)) || !dec_block_crc_ok(p, &bh)))
			break;
		int err = dec_blk_push(d, pos, &bh);
		if (err)
			return err;
		pos += bh.total_len;
	}
	*stop = pos;
	return 0;
}

/* The block table of the footer must be the walk's. */
static bool dec_btab_matches(const struct ada_cidx_dec *d)
{
	const uint8_t *t = d->base + d->f.btab_offset;

	if (d->f.nblocks != d->nblk)
		return false;
	for (size_t i = 0; i < d->nblk; i++) {
		struct ada_cidx_btab_entry e;
		memcpy(&e, t + i * sizeof(e), sizeof(e));
		if (e.offset != d->blk[i].off || e.first_seq != d->blk[i].first_seq ||
		    e.first_ts != d->blk[i].first_ts)
			return false;
	}
	return true;
}

/* The link table: seqs strictly increasing and below count. Returns false
 * on the first bad link (the links before it are kept). */
static bool dec_links_read(struct ada_cidx_dec *d)
{
	const uint8_t *p = d->base + d->f.link_offset, *end = d->base + d->f.btab_offset;
	uint64_t n = d->f.nlinks, next = 0, gap, z;
	int64_t prev = -1;

	if (n > (uint64_t)(end - p) / 2)
		return false; /* two bytes at least a link */
	d->links = malloc((n ? n : 1) * sizeof(*d->links));
	if (!d->links)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		if (!dec_varint(&p, end, &gap) || !dec_varint(&p, end, &z) || next >= d->count ||
		    gap >= d->count - next)
			return false;
		int64_t det = prev + 1 + (int64_t)cidx_unzigzag(z);
		if (det < 0 || det > UINT32_MAX)
			return false;
		d->links[i] = (struct cidx_lnk){next + gap, (uint32_t)det};
		d->nlinks = i + 1;
		next = next + gap + 1;
		prev = det;
	}
	return p == end;
}

static int dec_init(struct ada_cidx_dec *d, int fd, unsigned flags)
{
	bool salvage = flags & ADA_ATF_OPEN_SALVAGE;
	struct dec_src src = {.fd = fd};
	uint64_t end, stop;
	int err;

	if (!dec_header_read(d))
		return -EBADMSG;
	d->finished = dec_footer_read(d);
	if (!d->finished && !salvage)
		return -EBADMSG;
	end = d->finished ? d->f.link_offset : d->len;
	/* block_size is at most ADA_CIDX_BLOCK_MAX (dec_header_read()). */
	src.cap =
	    salvage ? d->h.block_size + sizeof(struct ada_cidx_block_header) : DEC_SRC_HEADERS;
	if (fd >= 0 && !(src.buf = malloc(src.cap)))
		return -ENOMEM;
	err = dec_walk(d, &src, end, salvage, &stop);
	free(src.buf);
	if (err)
		return err;
	if (salvage) {
		if (d->finished && stop == end && dec_btab_matches(d) &&
		    d->count == d->f.event_count && !dec_links_read(d))
			d->nlinks = 0; /* a bad link table: none trusted */
		return 0;
	}
	if (stop != end || !dec_btab_matches(d) || d->count != d->f.event_count ||
	    d->h.event_count != d->count || !dec_links_read(d))
		return -EBADMSG;
	return 0;
}

int ada_cidx_dec_open_fd(const void *buf, size_t len, int fd, unsigned flags,
                         struct ada_cidx_dec **out)
{
	struct ada_cidx_dec *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return -ENOMEM;
	d->base = buf;
	d->len = len;
	err = dec_init(d, fd, flags);
	if (err) {
		ada_cidx_dec_free(d);
		return err;
	}
	*out = d;
	return 0;
}

int ada_cidx_dec_open(const void *buf, size_t len, unsigned flags, struct ada_cidx_dec **out)
{
	return ada_cidx_dec_open_fd(buf, len, -1, flags, out);
}

void ada_cidx_dec_free(struct ada_cidx_dec *d)
{
	if (!d)
		return;
	free(d->blk);
	free(d->links);
	free(d);
}

/* -------------------------------------------------------------- queries */

const struct ada_cidx_file_header *ada_cidx_dec_header(const struct ada_cidx_dec *d)
{
	return &d->h;
}

uint64_t ada_cidx_dec_count(const struct ada_cidx_dec *d)
{
	return d->count;
}

size_t ada_cidx_dec_nblocks(const struct ada_cidx_dec *d)
{
	return d->nblk;
}

void ada_cidx_dec_block_info(const struct ada_cidx_dec *d, size_t b, uint64_t *first_seq,
                             uint32_t *nevents, uint64_t *first_ts)
{
	*first_seq = d->blk[b].first_seq;
	*nevents = d->blk[b].nevents;
	*first_ts = d->blk[b].first_ts;
}

void ada_cidx_dec_block_span(const struct ada_cidx_dec *d, size_t b, uint64_t *offset,
                             uint32_t *len)
{
	*offset = d->blk[b].off;
	*len = d->blk[b].total_len;
}

size_t ada_cidx_dec_scratch_events(const struct ada_cidx_dec *d)
{
	return d->max_events ? d->max_events : 1;
}

size_t ada_cidx_dec_block_of(const struct ada_cidx_dec *d, uint64_t seq)
{
	size_t lo = 0, hi = d->nblk;

	if (seq >= d->count)
		return d->nblk;
	/* The last block whose first_seq <= seq. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->blk[mid].first_seq <= seq)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int ada_cidx_dec_get(const struct ada_cidx_dec *d, uint64_t seq, struct atf_index_event *scratch,
                     struct atf_index_event *ev)
{
	size_t b = ada_cidx_dec_block_of(d, seq);
	int err;

	if (b == d->nblk)
		return -ERANGE;
	err = ada_cidx_dec_block(d, b, scratch);
	if (err)
		return err;
	*ev = scratch[seq - d->blk[b].first_seq];
	return 0;
}

uint64_t ada_cidx_dec_find(const struct ada_cidx_dec *d, uint64_t ts,
                           struct atf_index_event *scratch)
{
	size_t lo = 0, hi = d->nblk;

	/* lo = the blocks whose first event is before ts. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->blk[mid].first_ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	const struct cidx_blk *b = &d->blk[lo - 1];
	if (ada_cidx_dec_block(d, lo - 1, scratch) == 0)
		for (uint32_t i = 0; i < b->nevents; i++)
			if (scratch[i].timestamp_ns >= ts)
				return b->first_seq + i;
	return lo < d->nblk ? d->blk[lo].first_seq : d->count;
}

int ada_cidx_dec_all(const struct ada_cidx_dec *d, struct atf_index_event *out)
{
	for (size_t b = 0; b < d->nblk; b++) {
		int err = ada_cidx_dec_block(d, b, out + d->blk[b].first_seq);
		if (err)
			return err;
	}
	return 0;
}

uint32_t ada_cidx_dec_link(const struct ada_cidx_dec *d, uint64_t index_seq)
{
	uint64_t lo = 0, hi = d->nlinks;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (d->links[mid].seq < index_seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nlinks && d->links[lo].seq == index_seq ? d->links[lo].detail
	                                                       : ATF_NO_DETAIL;
}

uint64_t ada_cidx_dec_nlinks(const struct ada_cidx_dec *d)
{
	return d->nlinks;
}

/* ------------------------------------------------------------ iterator */

int ada_cidx_iter_init(struct ada_cidx_iter *it, const struct ada_cidx_dec *d, uint64_t seq)
{
	memset(it, 0, sizeof(*it));
	it->d = d;
	it->buf = malloc(ADA_CIDX_ITER_EVENTS * sizeof(*it->buf));
	it->m = malloc(sizeof(*it->m));
	if (!it->buf || !it->m)
		return -ENOMEM;
	it->block = ada_cidx_dec_block_of(d, seq);
	it->seq = it->block < d->nblk ? d->blk[it->block].first_seq : d->count;
	it->skip = it->block < d->nblk ? seq - it->seq : 0;
	return 0;
}

long ada_cidx_iter_next(struct ada_cidx_iter *it, const struct atf_index_event **ev)
{
	const struct ada_cidx_dec *d = it->d;

	for (;;) {
		if (!it->left) {
			if (it->block >= d->nblk)
				return 0;
			int err = dec_block_start(d, it->block, it->m, &it->p, &it->end);
			if (err)
				goto bad;
			it->left = d->blk[it->block++].nevents;
		}
		const uint32_t k =
		    it->left < ADA_CIDX_ITER_EVENTS ? it->left : ADA_CIDX_ITER_EVENTS;
		/* The block's last piece must end exactly at its last byte. */
		if (dec_run(it->m, &it->p, it->end, it->buf, k) != k ||
		    (k == it->left && it->p != it->end))
			goto bad;
		it->left -= k;
		dec_apply_links(d, it->seq, k, it->buf);
		it->seq += k;
		if (it->skip >= k) { /* before the seq the walk started at */
			it->skip -= k;
			continue;
		}
		const uint32_t off = (uint32_t)it->skip;
		it->skip = 0;
		*ev = it->buf + off;
		return (long)(k - off);
	}
bad:
	it->left = 0;
	it->block = d->nblk; /* nothing more from this walk */
	return -EBADMSG;
}

void ada_cidx_iter_fini(struct ada_cidx_iter *it)
{
	free(it->buf);
	free(it->m);
	it->buf = NULL;
	it->m = NULL;
}
