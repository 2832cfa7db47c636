/*
 * The compact index's model: the state an event is coded against, shared by
 * the encoder (cidx_enc.c) and the decoder (cidx_dec.c), which must apply
 * exactly the same updates in the same order (cidx_model_apply()).
 *
 * Coded event (docs/format.md, "Compact index"): a tag byte, op = tag >> 5,
 * d = tag & 31 the time delta from the previous event (31: the delta is
 * 31 + the u16 that follows the tag; a longer one needs a RAW event):
 *   op 0  EXT: d is a sub-op (0 END, 1 RAW, 2 EXCEPTION of the top frame)
 *   op 1  RETURN of the innermost open frame (its function, its depth)
 *   op 2  CALL of the last called function, depth cur + 1
 *   op 3  CALL, function spelled out: varint zigzag(fid - last_explicit)
 *   op 4-7 CALL of the cached function in slot (op - 4) << 8 | next byte
 */
#ifndef ADA_CIDX_INTERNAL_H
#define ADA_CIDX_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "cidx.h"

enum cidx_op {
	CIDX_OP_EXT = 0,
	CIDX_OP_RET = 1,
	CIDX_OP_CALL_LAST = 2,
	CIDX_OP_CALL_NEW = 3,
	CIDX_OP_CALL_SLOT = 4, /* 4..7 */
};

enum cidx_ext {
	CIDX_EXT_END = 0, /* never coded; zeros after a block's events read so */
	CIDX_EXT_RAW = 1,
	CIDX_EXT_EXC = 2,
};

#define CIDX_D_ESC 31u
/* The deltas a tag can carry: 0..30 in it, 31..65566 with its u16. */
#define CIDX_TAG_DT_MAX (CIDX_D_ESC + 65535u)

/* RAW mask byte. */
#define CIDX_RAW_KIND_MASK 0x03u /* 0 CALL, 1 RETURN, 2 EXCEPTION, 3 varint */
#define CIDX_RAW_FID_SHIFT 2     /* 0 top frame, 1 last call, 2 slot u16, 3 varint */
#define CIDX_RAW_DEPTH_SHIFT 4   /* 0 top frame, 1 cur + 1, 2 cur, 3 varint */
#define CIDX_RAW_TID 0x40u       /* varint thread_id follows */
#define CIDX_RAW_TS_BACK 0x80u   /* the delta goes back in time */

#define CIDX_FRAME_RING 64u /* == ADA_CIDX_FRAMES_MAX */
_Static_assert(CIDX_FRAME_RING == ADA_CIDX_FRAMES_MAX, "the ring is what a header carries");

struct cidx_model {
	uint64_t ts;
	uint64_t last_call, last_explicit;
	uint32_t cur; /* depth of the innermost open frame */
	uint32_t nk;  /* frames known (<= CIDX_FRAME_RING) */
	uint32_t top; /* ring position one past the innermost frame */
	uint32_t tid;
	/* The encoder's: bytes 16-23 (thread_id | event_kind << 32) of a
	 * RETURN and of a CALL of the block's thread, set at block open. */
	uint64_t ret_w2, call_w2;
	uint64_t fid[CIDX_FRAME_RING];
	/* call_depth | ATF_NO_DETAIL << 32: the last 8 bytes of the frame's
	 * RETURN event, so the hot loops compare words, not fields. */
	uint64_t dw[CIDX_FRAME_RING];
	uint64_t cache[ADA_CIDX_CACHE_SLOTS];
};

static inline uint32_t cidx_slot(uint64_t fid)
{
	return (uint32_t)((fid * 0x9E3779B97F4A7C15ull) >> 54);
}

static inline uint64_t cidx_zigzag(uint64_t v)
{
	return (v << 1) ^ (uint64_t)((int64_t)v >> 63);
}

static inline uint64_t cidx_unzigzag(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

static inline uint64_t cidx_dw(uint32_t depth)
{
	return depth | (uint64_t)ATF_NO_DETAIL << 32;
}

static inline uint32_t cidx_depth_at(const struct cidx_model *m, uint32_t i)
{
	return (uint32_t)m->dw[i];
}

static inline uint32_t cidx_top_i(const struct cidx_model *m)
{
	return (m->top - 1) & (CIDX_FRAME_RING - 1);
}

/* Pops every known frame at depth or deeper. */
static inline void cidx_model_pop_to(struct cidx_model *m, uint32_t depth)
{
	while (m->nk && cidx_depth_at(m, cidx_top_i(m)) >= depth) {
		m->top--;
		m->nk--;
	}
}

/* The state change of one event, applied after it is coded or decoded.
 * A signal marker (depth bit 31) and an unknown kind change no frame; a
 * CALL at depth D pops the known frames at D or deeper (dead: a longjmp
 * seen late) and pushes; a RETURN or EXCEPTION at depth D pops the known
 * frames at D or deeper and leaves cur = D - 1. So the known frames'
 * depths strictly increase from the oldest to the innermost, and the
 * return of the innermost frame pops exactly that frame (what the hot
 * loops rely on). */
static inline void cidx_model_apply(struct cidx_model *m, uint64_t fid, uint32_t kind,
                                    uint32_t depth)
{
	if (depth & ADA_SIGNAL_MARKER_FLAG)
		return;
	if (kind == ATF_EVENT_CALL) {
		cidx_model_pop_to(m, depth);
		uint32_t i = m->top & (CIDX_FRAME_RING - 1);
		m->fid[i] = fid;
		m->dw[i] = cidx_dw(depth);
		m->top++;
		m->nk += m->nk < CIDX_FRAME_RING;
		m->cur = depth;
		m->last_call = fid;
	} else if (kind == ATF_EVENT_RETURN || kind == ATF_EVENT_EXCEPTION) {
		cidx_model_pop_to(m, depth);
		m->cur = depth ? depth - 1 : 0;
	}
}

static inline void cidx_model_explicit(struct cidx_model *m, uint64_t fid)
{
	m->last_explicit = fid;
	m->cache[cidx_slot(fid)] = fid;
}

static inline uint8_t *cidx_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The encoder (cidx_enc.c; its fused pass over a drain's ring,
 * cidx_ring.c, codes into the same open block). */
struct cidx_link {
	uint64_t seq;
	uint64_t order; /* later links of one seq win */
	uint32_t detail;
};

struct ada_cidx_enc {
	struct cidx_model m;
	uint32_t block_size;
	bool open;
	size_t bstart;     /* the open block's header in the caller's buffer */
	uint64_t bseq;     /* its first seq */
	uint64_t seq;      /* events coded */
	uint64_t pos;      /* file offset of the next byte put() writes past o->len */
	uint64_t base_pos; /* file offset of o->p[0] for the open block */
	uint64_t t_first, t_last;
	struct cidx_link *links;
	size_t nlinks, cap_links;
	/* What the link table will take at most (ada_cidx_enc_tail_size()):
	 * exact for links that come in seq order, a bound for the others;
	 * link_last/link_last_detail: the highest seq linked so far. */
	uint64_t link_bytes, link_last;
	uint32_t link_last_detail;
	/* A link came at or below link_last: the table needs sorting. The
	 * drain links in seq order, so a finish (a rotation, a thread's end)
	 * skips the sort of what can be millions of links. */
	bool links_unordered;
	struct ada_cidx_btab_entry *btab;
	size_t nblocks, cap_btab;
	/* The fused pass's clock piece moved on by rb_dd ticks
	 * (cidx_ring.c ring_rebase()): rb_dd * rb_mult = rb_hi 2^32 + rb_lo,
	 * rb_fit the most ticks past it a 64-bit product takes (rb_mult 0:
	 * none yet); kept from call to call, so that its divisions come
	 * once in 2^31 ns or a piece, not once a call. */
	uint64_t rb_mult, rb_dd, rb_hi, rb_lo, rb_fit;
	/* The fused pass's conversion while it runs (cidx_ring.c
	 * ring_rebase()): a time less ns0 is (d * mult + lo) >> 32 for d =
	 * raw - tsc0 <= d_max, in 64 bits. Here, not on the caller's stack,
	 * so that the pass's loop reads it from the encoder's base register
	 * as it reads the model: one register more for the loop's values,
	 * which gcc spilled. */
	struct cidx_ring_conv {
		uint64_t tsc0, ns0, mult, lo, d_max, last;
	} rc;
};

/* Decodes block b of d into out and leaves in *m the state after its last
 * event (cidx_dec.c; the encoder's resume). */
int cidx_dec_block_model(const struct ada_cidx_dec *d, size_t b, struct atf_index_event *out,
                         struct cidx_model *m);

#endif
