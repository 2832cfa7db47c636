/*
 * The compact index encoder (cidx.h): ATF v2 index events in, sealed
 * blocks out, into the caller's buffer; the link table, block table and
 * footer at finish.
 *
 * Threads: one encoder is used by one thread at a time (the drain's).
 *
 * Layout of what put() writes: blocks back to back, each a 64-byte header
 * (filled at seal), the open frames of its starting state, the coded
 * events (cidx_internal.h). enc->pos is the file offset of o->p[0] as the
 * caller promised by writing every byte in order from offset 64.
 *
 * The hot loop (enc_run()) takes the common shapes in a few compares of
 * 64-bit words: the return of the innermost frame is one byte when the
 * delta is under 31 ns (three up to 65 us), a call of the last called
 * function too, a call of a function seen in this block one more; the
 * general path (enc_event()) codes the rest, a link or an unknown function
 * included, and anything the model cannot guess (time going back, another
 * thread id, an unknown kind, a depth that is not the next, a signal
 * marker) is a RAW event with only the fields the model cannot say.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "atf_internal.h"
#include "cidx_internal.h"

bool ada_cidx_is_compact(const void *buf, size_t len)
{
	return len >= 4 && !memcmp(buf, ADA_CIDX_MAGIC, 4);
}

int ada_cidx_enc_new(uint32_t block_size, struct ada_cidx_enc **out)
{
	struct ada_cidx_enc *e;

	if (block_size == 0)
		block_size = ADA_CIDX_BLOCK_DEFAULT;
	if (block_size < ADA_CIDX_BLOCK_MIN || block_size > ADA_CIDX_BLOCK_MAX)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->block_size = block_size;
	e->pos = sizeof(struct ada_cidx_file_header);
	*out = e;
	return 0;
}

void ada_cidx_enc_free(struct ada_cidx_enc *e)
{
	if (!e)
		return;
	free(e->links);
	free(e->btab);
	free(e);
}

uint64_t ada_cidx_enc_count(const struct ada_cidx_enc *e)
{
	return e->seq;
}

uint32_t ada_cidx_enc_frames(const struct ada_cidx_enc *e)
{
	return e->m.nk;
}

uint64_t ada_cidx_enc_offset(const struct ada_cidx_enc *e)
{
	return e->pos;
}

static inline uint8_t *enc_tag(uint8_t *p, unsigned op, uint64_t dt)
{
	if (dt < CIDX_D_ESC) {
		*p++ = (uint8_t)(op << 5 | dt);
		return p;
	}
	*p++ = (uint8_t)(op << 5 | CIDX_D_ESC);
	*p++ = (uint8_t)(dt - CIDX_D_ESC);
	*p++ = (uint8_t)((dt - CIDX_D_ESC) >> 8);
	return p;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A link's bytes in the link table, counted as it comes: a link past the
 * highest seq so far is coded against that one (enc_link_table()), so its
 * bytes are known exactly; any other lands between two links, or replaces
 * one, and is bounded: its own bytes (a seq varint of 10, a detail one of
 * 5: |detail - prev - 1| < 2^33 zigzagged) and what the next link's detail
 * varint can grow by (4; its seq delta only shrinks). */
static void enc_link_count(struct ada_cidx_enc *e, uint64_t seq, uint32_t detail)
{
	if (e->nlinks && seq <= e->link_last) {
		e->links_unordered = true;
		e->link_bytes += ADA_CIDX_LINK_MAX_BYTES;
		if (seq == e->link_last) /* the next one is coded against this */
			e->link_last_detail = detail;
		return;
	}
	uint64_t next = e->nlinks ? e->link_last + 1 : 0;
	int64_t prev = e->nlinks ? (int64_t)e->link_last_detail : -1;
	e->link_bytes += varint_len(seq - next) +
	                 varint_len(cidx_zigzag((uint64_t)((int64_t)detail - prev - 1)));
	e->link_last = seq;
	e->link_last_detail = detail;
}

static int enc_link_push(struct ada_cidx_enc *e, uint64_t seq, uint32_t detail)
{
	if (e->nlinks == e->cap_links) {
		size_t ncap = e->cap_links ? e->cap_links * 2 : 64;
		struct cidx_link *p = realloc(e->links, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		e->links = p;
		e->cap_links = ncap;
	}
	enc_link_count(e, seq, detail);
	e->links[e->nlinks] = (struct cidx_link){seq, e->nlinks, detail};
	e->nlinks++;
	return 0;
}

int ada_cidx_enc_link(struct ada_cidx_enc *e, uint64_t index_seq, uint32_t detail_seq)
{
	if (index_seq >= e->seq)
		return -ERANGE;
	return enc_link_push(e, index_seq, detail_seq);
}

uint64_t ada_cidx_enc_unlink_from(struct ada_cidx_enc *e, uint32_t detail_seq)
{
	uint64_t n = 0;
	for (size_t i = 0; i < e->nlinks; i++)
		if (e->links[i].detail >= detail_seq && e->links[i].detail != ATF_NO_DETAIL) {
			/* Left out of the table (enc_link_table); its bytes stay
			 * counted, and bound what the next link's deltas grow by. */
			e->links[i].detail = ATF_NO_DETAIL;
			n++;
		}
	return n;
}

/* The fid field of a RAW event: the cheapest of the model's guesses. */
static uint8_t *enc_raw_fid(struct cidx_model *m, uint64_t fid, uint8_t *mask, uint8_t *p)
{
	uint32_t slot = cidx_slot(fid);

	if (m->nk && m->fid[cidx_top_i(m)] == fid)
		return p;
	if (fid == m->last_call) {
		*mask |= 1u << CIDX_RAW_FID_SHIFT;
		return p;
	}
	if (m->cache[slot] == fid) {
		*mask |= 2u << CIDX_RAW_FID_SHIFT;
		*p++ = (uint8_t)slot;
		*p++ = (uint8_t)(slot >> 8);
		return p;
	}
	*mask |= 3u << CIDX_RAW_FID_SHIFT;
	p = cidx_put_varint(p, cidx_zigzag(fid - m->last_explicit));
	cidx_model_explicit(m, fid);
	return p;
}

static uint8_t *enc_raw_depth(const struct cidx_model *m, uint32_t depth, uint8_t *mask, uint8_t *p)
{
	if (m->nk && cidx_depth_at(m, cidx_top_i(m)) == depth)
		return p;
	if ((uint64_t)m->cur + 1 == depth) {
		*mask |= 1u << CIDX_RAW_DEPTH_SHIFT;
		return p;
	}
	if (m->cur == depth) {
		*mask |= 2u << CIDX_RAW_DEPTH_SHIFT;
		return p;
	}
	*mask |= 3u << CIDX_RAW_DEPTH_SHIFT;
	return cidx_put_varint(p, depth);
}

/* Any event: tag, mask, |delta|, then kind, fid, depth, tid as needed.
 * The model's guesses are read before the fid field updates it, in the
 * order the decoder reads them (fid, then depth). */
static uint8_t *enc_raw(struct cidx_model *m, const struct atf_index_event *e, uint8_t *p)
{
	uint8_t *mp, mask = 0;
	uint64_t ts = e->timestamp_ns;
	uint32_t kind = e->event_kind;

	*p++ = CIDX_OP_EXT << 5 | CIDX_EXT_RAW;
	mp = p++;
	if (ts < m->ts) {
		mask |= CIDX_RAW_TS_BACK;
		p = cidx_put_varint(p, m->ts - ts);
	} else {
		p = cidx_put_varint(p, ts - m->ts);
	}
	if (kind >= ATF_EVENT_CALL && kind <= ATF_EVENT_EXCEPTION) {
		mask |= (uint8_t)(kind - 1);
	} else {
		mask |= 3;
		p = cidx_put_varint(p, kind);
	}
	p = enc_raw_fid(m, e->function_id, &mask, p);
	p = enc_raw_depth(m, e->call_depth, &mask, p);
	if (e->thread_id != m->tid) {
		mask |= CIDX_RAW_TID;
		p = cidx_put_varint(p, e->thread_id);
	}
	*mp = mask;
	return p;
}

/* A CALL one level deeper than the innermost frame. */
static inline uint8_t *enc_call(struct cidx_model *m, uint64_t fid, uint64_t dt, uint8_t *p)
{
	uint32_t slot;

	if (fid == m->last_call)
		return enc_tag(p, CIDX_OP_CALL_LAST, dt);
	slot = cidx_slot(fid);
	if (m->cache[slot] == fid) {
		p = enc_tag(p, CIDX_OP_CALL_SLOT + (slot >> 8), dt);
		*p++ = (uint8_t)slot;
		return p;
	}
	p = enc_tag(p, CIDX_OP_CALL_NEW, dt);
	p = cidx_put_varint(p, cidx_zigzag(fid - m->last_explicit));
	cidx_model_explicit(m, fid);
	return p;
}

/* Any event, the general way (the model in memory); the model moves on.
 * The hot loop (enc_run()) comes here for what it does not take. */
static __attribute__((noinline)) uint8_t *enc_event(struct cidx_model *m,
                                                    const struct atf_index_event *e, uint8_t *p)
{
	const uint64_t ts = e->timestamp_ns, fid = e->function_id, dt = ts - m->ts;
	const uint32_t kind = e->event_kind, depth = e->call_depth;
	const uint32_t t = cidx_top_i(m);

	if (ts < m->ts || dt > CIDX_TAG_DT_MAX || e->thread_id != m->tid)
		p = enc_raw(m, e, p);
	else if (kind == ATF_EVENT_RETURN && m->nk && m->fid[t] == fid &&
	         cidx_depth_at(m, t) == depth)
		p = enc_tag(p, CIDX_OP_RET, dt);
	else if (kind == ATF_EVENT_CALL && (uint64_t)m->cur + 1 == depth &&
	         !(depth & ADA_SIGNAL_MARKER_FLAG))
		p = enc_call(m, fid, dt, p);
	else if (kind == ATF_EVENT_EXCEPTION && m->nk && m->fid[t] == fid &&
	         cidx_depth_at(m, t) == depth)
		p = cidx_put_varint(enc_tag(p, CIDX_OP_EXT, CIDX_EXT_EXC), dt);
	else
		p = enc_raw(m, e, p);
	m->ts = ts;
	cidx_model_apply(m, fid, kind, depth);
	return p;
}

/* The tag and its u16 escape without a branch on the delta: all three
 * bytes are stored, p moves on by one or three. */
static inline uint8_t *enc_tag_fast(uint8_t *p, unsigned op, uint64_t dt)
{
	const uint32_t esc = dt >= CIDX_D_ESC, v = (uint32_t)dt - CIDX_D_ESC;
	p[0] = (uint8_t)(op << 5 | (esc ? CIDX_D_ESC : (uint32_t)dt));
	p[1] = (uint8_t)v;
	p[2] = (uint8_t)(v >> 8);
	return p + 1 + 2 * esc;
}

/* The hot loop: the common shapes - the return of the innermost frame,
 * a call one level deeper of the last called or a cached function - are
 * taken here, the rest goes to enc_event(). What carries from one event
 * to the next through arithmetic (the output pointer, the frame ring's
 * top and count) lives in registers; what is only compared or replaced
 * from the event (time, depth, last call) stays in *m, where a reload
 * after a byte store costs a load off that path. Spilled registers put
 * a store-to-load round trip on it instead: few live values is what
 * makes this loop fast. The loop runs over events that fit for sure (a
 * fast event takes 4 bytes at most; the slow path checks its own room):
 * each batch is at most as long as keeps every event's start at or below
 * lim, and the next batch starts only from an event at or below it, so a
 * block takes exactly the events that start at or below lim, wherever
 * the events were cut into calls (the fused pass, cidx_ring.c, cuts its
 * stretches the same way and codes the same blocks). Returns the events
 * taken. */
static size_t enc_run(struct ada_cidx_enc *e, const struct atf_index_event *ev, size_t n,
                      uint8_t **pp, const uint8_t *lim, int *err)
{
	struct cidx_model *const m = &e->m;
	uint32_t nk = m->nk, top = m->top;
	uint8_t *p = *pp;
	const struct atf_index_event *x = ev, *const xend = ev + n;

	while (x < xend && p <= lim) {
		/* lim leaves room for the longest event past it: 4 bytes each
		 * for (lim - p) / 4 + 1 fast events at least. */
		const struct atf_index_event *stop = x + ((size_t)(lim - p) / 4 + 1);
		stop = stop < xend ? stop : xend;
		for (; x < stop; x++) {
			uint64_t w2, w3;
			memcpy(&w2, &x->thread_id, 8);  /* thread_id | event_kind << 32 */
			memcpy(&w3, &x->call_depth, 8); /* call_depth | detail_seq << 32 */
			const uint64_t t = x->timestamp_ns, fid = x->function_id, dt = t - m->ts;
			const uint32_t ti = (top - 1) & (CIDX_FRAME_RING - 1);
			if (__builtin_expect(dt > CIDX_TAG_DT_MAX, 0)) /* or back in time */
				goto slow;
			if (w2 == m->ret_w2) {
				if (!nk || m->fid[ti] != fid || m->dw[ti] != w3)
					goto slow;
				p = enc_tag_fast(p, CIDX_OP_RET, dt);
				top--;
				nk--;
				m->cur = (uint32_t)w3 - ((uint32_t)w3 != 0); /* 0 stays 0 */
				m->ts = t;
				continue;
			}
			if (w2 != m->call_w2 || w3 != cidx_dw(m->cur + 1) ||
			    (w3 & ADA_SIGNAL_MARKER_FLAG))
				goto slow;
			if (fid == m->last_call) {
				p = enc_tag_fast(p, CIDX_OP_CALL_LAST, dt);
			} else {
				const uint32_t slot = cidx_slot(fid);
				if (m->cache[slot] != fid)
					goto slow;
				p = enc_tag_fast(p, CIDX_OP_CALL_SLOT + (slot >> 8), dt);
				*p++ = (uint8_t)slot;
			}
			/* The frames below are shallower (cidx_model_apply()). */
			m->fid[top & (CIDX_FRAME_RING - 1)] = fid;
			m->dw[top & (CIDX_FRAME_RING - 1)] = w3;
			top++;
			nk += nk < CIDX_FRAME_RING;
			m->cur = (uint32_t)w3;
			m->last_call = fid;
			m->ts = t;
			continue;
		slow:
			if (x->detail_seq != ATF_NO_DETAIL &&
			    (*err = enc_link_push(e, e->seq + (size_t)(x - ev), x->detail_seq)))
				goto out;
			m->nk = nk;
			m->top = top;
			p = enc_event(m, x, p);
			nk = m->nk;
			top = m->top;
			x++;
			break; /* room is counted again */
		}
	}
out:
	m->nk = nk;
	m->top = top;
	*pp = p;
	return (size_t)(x - ev);
}

int ada_cidx_enc_block_of(const struct ada_cidx_enc *e, uint64_t seq, struct ada_cidx_span *s)
{
	if (seq >= e->seq)
		return -ERANGE;
	if (e->open && seq >= e->bseq) {
		*s = (struct ada_cidx_span){.pos = e->base_pos,
		                            .first_seq = e->bseq,
		                            .len = (uint32_t)(e->pos - e->base_pos),
		                            .nevents = (uint32_t)(e->seq - e->bseq)};
		return 0;
	}
	/* A sealed event and no table: the table was lost to -ENOMEM. */
	if (e->nblocks == SIZE_MAX || e->nblocks == 0)
		return -ENOMEM;
	/* The last block whose first_seq <= seq. */
	size_t lo = 0, hi = e->nblocks;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->btab[mid].first_seq <= seq)
			lo = mid;
		else
			hi = mid;
	}
	const struct ada_cidx_btab_entry *b = &e->btab[lo];
	const bool last = lo + 1 == e->nblocks;
	const uint64_t end = last ? (e->open ? e->base_pos : e->pos) : b[1].offset;
	const uint64_t next = last ? (e->open ? e->bseq : e->seq) : b[1].first_seq;
	*s = (struct ada_cidx_span){.pos = b->offset,
	                            .first_seq = b->first_seq,
	                            .len = (uint32_t)(end - b->offset),
	                            .nevents = (uint32_t)(next - b->first_seq)};
	return 0;
}

/* Opens a block at o->len: header placeholder and the frames known. */
static void enc_open(struct ada_cidx_enc *e, struct ada_cidx_out *o,
                     const struct atf_index_event *first)
{
	struct cidx_model *m = &e->m;
	struct ada_cidx_block_header h = {
	    .magic = {'A', 'T', 'C', 'B'},
	    .first_seq = e->seq,
	    .first_ts = first->timestamp_ns,
	    .thread_id = first->thread_id,
	    .cur_depth = m->cur,
	    .nframes = m->nk,
	    .last_call_fid = m->last_call,
	    .last_explicit_fid = m->last_explicit,
	};
	uint8_t *p = o->p + o->len + sizeof(h);

	memcpy(o->p + o->len, &h, sizeof(h));
	for (uint32_t i = 0; i < m->nk; i++) {
		uint32_t r = (m->top - m->nk + i) & (CIDX_FRAME_RING - 1);
		struct ada_cidx_frame f = {m->fid[r], cidx_depth_at(m, r)};
		memcpy(p, &f, sizeof(f));
		p += sizeof(f);
	}
	/* A block starts from what its header says, so it decodes alone. */
	memset(m->cache, 0, sizeof(m->cache));
	m->ts = h.first_ts;
	m->tid = h.thread_id;
	m->ret_w2 = h.thread_id | (uint64_t)ATF_EVENT_RETURN << 32;
	m->call_w2 = h.thread_id | (uint64_t)ATF_EVENT_CALL << 32;
	e->bstart = o->len;
	e->bseq = e->seq;
	e->base_pos = e->pos;
	e->pos += (uint64_t)(p - (o->p + o->len));
	o->len = (size_t)(p - o->p);
	e->open = true;
}

static int enc_btab_push(struct ada_cidx_enc *e, const struct ada_cidx_btab_entry *b)
{
	if (e->nblocks == e->cap_btab) {
		size_t ncap = e->cap_btab ? e->cap_btab * 2 : 16;
		struct ada_cidx_btab_entry *p = realloc(e->btab, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		e->btab = p;
		e->cap_btab = ncap;
	}
	e->btab[e->nblocks++] = *b;
	return 0;
}

void ada_cidx_enc_seal(struct ada_cidx_enc *e, struct ada_cidx_out *o)
{
	struct ada_cidx_block_header h;
	uint8_t *b = o->p + e->bstart;

	if (!e->open)
		return;
	e->open = false;
	memcpy(&h, b, sizeof(h));
	h.total_len = (uint32_t)(o->len - e->bstart);
	h.nevents = (uint32_t)(e->seq - e->bseq);
	memcpy(b, &h, sizeof(h));
	h.crc = ada_atf_crc32(0, b + 8, h.total_len - 8);
	memcpy(b + 4, &h.crc, sizeof(h.crc));
	struct ada_cidx_btab_entry be = {e->base_pos, h.first_seq, h.first_ts};
	/* The table is rebuilt by any reader's walk; losing an entry to
	 * -ENOMEM only costs finish() its consistency, reported there. */
	if (enc_btab_push(e, &be))
		e->nblocks = SIZE_MAX;
}

static bool enc_can_open(const struct ada_cidx_enc *e, const struct ada_cidx_out *o)
{
	size_t need = sizeof(struct ada_cidx_block_header) +
	              e->m.nk * sizeof(struct ada_cidx_frame) + ADA_CIDX_EVENT_MAX;
	return o->len <= o->cap && need <= o->cap - o->len;
}

size_t ada_cidx_enc_put(struct ada_cidx_enc *e, const struct atf_index_event *ev, size_t n,
                        struct ada_cidx_out *o, int *err)
{
	size_t i = 0;

	*err = 0;
	if (n && e->seq == 0 && !e->open)
		e->t_first = ev[0].timestamp_ns;
	while (i < n) {
		if (!e->open) {
			if (!enc_can_open(e, o))
				break;
			enc_open(e, o, &ev[i]);
		}
		uint8_t *p0 = o->p + o->len, *p = p0;
		/* Whole events while the block has room for the longest one. */
		size_t lim =
		    e->bstart + e->block_size < o->cap ? e->bstart + e->block_size : o->cap;
		if (o->len + ADA_CIDX_EVENT_MAX <= lim) {
			size_t k =
			    enc_run(e, ev + i, n - i, &p, o->p + lim - ADA_CIDX_EVENT_MAX, err);
			i += k;
			e->seq += k;
			o->len = (size_t)(p - o->p);
		}
		e->pos += (uint64_t)(p - p0);
		if (*err)
			break;
		if (i < n)
			ada_cidx_enc_seal(e, o);
	}
	if (e->seq)
		e->t_last = e->m.ts;
	return i;
}

void ada_cidx_file_header_fill(struct ada_cidx_file_header *h, const struct ada_atf_file_info *info,
                               uint32_t block_size)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, ADA_CIDX_MAGIC, 4);
	h->endian = ATF_ENDIAN_LITTLE;
	h->version = ADA_CIDX_VERSION;
	h->arch = info->arch;
	h->os = info->os;
	h->flags = info->has_detail ? ATF_INDEX_FLAG_HAS_DETAIL : 0;
	h->thread_id = info->thread_id;
	h->clock_type = info->clock_type;
	h->block_size = block_size ? block_size : ADA_CIDX_BLOCK_DEFAULT;
	h->blocks_offset = sizeof(*h);
}

size_t ada_cidx_enc_tail_size(const struct ada_cidx_enc *e)
{
	size_t nblocks = e->nblocks == SIZE_MAX ? 0 : e->nblocks; /* finish() says -ENOMEM */
	return (size_t)e->link_bytes + nblocks * sizeof(struct ada_cidx_btab_entry) +
	       sizeof(struct ada_cidx_footer);
}

static int link_cmp(const void *a, const void *b)
{
	const struct cidx_link *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Sorted by seq, the last link of each seq kept; returns the bytes. */
static size_t enc_link_table(struct ada_cidx_enc *e, uint8_t *buf, uint64_t *nlinks)
{
	uint8_t *p = buf;
	uint64_t next = 0;
	int64_t prev = -1;

	*nlinks = 0;
	if (e->nlinks && e->links_unordered)
		qsort(e->links, e->nlinks, sizeof(*e->links), link_cmp);
	for (size_t i = 0; i < e->nlinks; i++) {
		const struct cidx_link *l = &e->links[i];
		if ((i + 1 < e->nlinks && e->links[i + 1].seq == l->seq) ||
		    l->detail == ATF_NO_DETAIL) /* dropped (ada_cidx_enc_unlink_from) */
			continue;
		p = cidx_put_varint(p, l->seq - next);
		p = cidx_put_varint(p, cidx_zigzag((uint64_t)((int64_t)l->detail - prev - 1)));
		next = l->seq + 1;
		prev = l->detail;
		(*nlinks)++;
	}
	return (size_t)(p - buf);
}

int ada_cidx_enc_finish(struct ada_cidx_enc *e, const struct ada_atf_file_info *info, void *buf,
                        size_t cap, size_t *len, struct ada_cidx_file_header *h)
{
	struct ada_cidx_footer f = {.magic = {'1', 'C', 'T', 'A'}};
	uint8_t *p = buf;

	if (e->open)
		return -EBUSY;
	if (e->nblocks == SIZE_MAX)
		return -ENOMEM;
	if (cap < ada_cidx_enc_tail_size(e))
		return -ENOSPC;
	f.event_count = e->seq;
	f.nblocks = e->nblocks;
	f.link_offset = e->pos;
	uint64_t nlinks;
	p += enc_link_table(e, p, &nlinks);
	f.nlinks = nlinks;
	f.btab_offset = e->pos + (uint64_t)(p - (uint8_t *)buf);
	if (e->nblocks) /* no block table yet: btab may be NULL */
		memcpy(p, e->btab, e->nblocks * sizeof(*e->btab));
	p += e->nblocks * sizeof(*e->btab);
	f.crc = ada_atf_crc32(0, buf, (size_t)(p - (uint8_t *)buf));
	memcpy(p, &f, sizeof(f));
	p += sizeof(f);
	*len = (size_t)(p - (uint8_t *)buf);
	ada_cidx_file_header_fill(h, info, e->block_size);
	h->event_count = e->seq;
	h->footer_offset = e->pos + *len - sizeof(f);
	h->time_start_ns = e->seq ? e->t_first : 0;
	h->time_end_ns = e->seq ? e->t_last : 0;
	return 0;
}

static int mem_grow(struct ada_cidx_out *o, size_t need)
{
	if (o->cap - o->len >= need)
		return 0;
	size_t ncap = o->cap * 2 > o->len + need ? o->cap * 2 : o->len + need;
	uint8_t *p = realloc(o->p, ncap);
	if (!p)
		return -ENOMEM;
	o->p = p;
	o->cap = ncap;
	return 0;
}

static int mem_put_all(struct ada_cidx_enc *e, const struct atf_index_event *ev, size_t n,
                       struct ada_cidx_out *o)
{
	size_t done = 0;
	int err = 0;

	while (!err && done < n) {
		done += ada_cidx_enc_put(e, ev + done, n - done, o, &err);
		ada_cidx_enc_seal(e, o);
		if (!err && done < n)
			err = mem_grow(o, e->block_size);
	}
	return err;
}

int ada_cidx_write_mem(struct ada_cidx_enc *e, const struct ada_atf_file_info *info,
                       const struct atf_index_event *ev, size_t n, const uint64_t *link_seq,
                       const uint32_t *link_detail, size_t nlinks, uint8_t **buf, size_t *len)
{
	struct ada_cidx_out o = {.len = sizeof(struct ada_cidx_file_header)};
	struct ada_cidx_file_header h;
	size_t tail;
	int err;

	if (e->seq || e->open)
		return -EINVAL;
	o.cap = o.len + (n < 65536 ? n : 65536) * 4 + e->block_size;
	o.p = malloc(o.cap);
	if (!o.p)
		return -ENOMEM;
	err = mem_put_all(e, ev, n, &o);
	for (size_t i = 0; !err && i < nlinks; i++) {
		err = ada_cidx_enc_link(e, link_seq[i], link_detail[i]);
		err = err == -ERANGE ? -EINVAL : err;
	}
	if (!err)
		err = mem_grow(&o, ada_cidx_enc_tail_size(e));
	if (!err)
		err = ada_cidx_enc_finish(e, info, o.p + o.len, o.cap - o.len, &tail, &h);
	if (err) {
		free(o.p);
		return err;
	}
	memcpy(o.p, &h, sizeof(h));
	*buf = o.p;
	*len = o.len + tail;
	return 0;
}

/* The block table and the model of the file's whole blocks. */
static int enc_resume_blocks(struct ada_cidx_enc *e, const struct ada_cidx_dec *d, uint64_t *end)
{
	size_t nb = ada_cidx_dec_nblocks(d);
	struct atf_index_event *scratch = malloc(ada_cidx_dec_scratch_events(d) * sizeof(*scratch));
	int err = scratch ? 0 : -ENOMEM;

	for (size_t b = 0; !err && b < nb; b++) {
		uint64_t first, ts, off;
		uint32_t k, len;
		ada_cidx_dec_block_info(d, b, &first, &k, &ts);
		ada_cidx_dec_block_span(d, b, &off, &len);
		struct ada_cidx_btab_entry be = {off, first, ts};
		err = enc_btab_push(e, &be);
		if (!err && b + 1 == nb) {
			err = cidx_dec_block_model(d, b, scratch, &e->m);
			e->t_first = e->btab[0].first_ts;
			e->t_last = e->m.ts;
			*end = off + len;
		}
	}
	free(scratch);
	return err;
}

int ada_cidx_enc_resume(struct ada_cidx_enc *e, const void *buf, size_t len, uint64_t *end)
{
	struct ada_cidx_dec *d;
	int err;

	if (e->seq || e->open || e->nblocks)
		return -EINVAL;
	err = ada_cidx_dec_open(buf, len, ADA_ATF_OPEN_SALVAGE, &d);
	if (err)
		return err;
	*end = ada_cidx_dec_header(d)->blocks_offset;
	err = enc_resume_blocks(e, d, end);
	if (!err) {
		e->seq = ada_cidx_dec_count(d);
		e->pos = *end;
	} else {
		memset(&e->m, 0, sizeof(e->m));
		e->nblocks = 0;
	}
	ada_cidx_dec_free(d);
	return err;
}
