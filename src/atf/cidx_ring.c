/*
 * The drain's fused pass (cidx.h, ada_cidx_enc_put_ring()): ring events in,
 * read once each, their times converted and checked, coded into the
 * encoder's open block (cidx_enc.c), the trigger's stack of open calls and
 * the detail lane's recent window kept on the way.
 *
 * Threads: the drain's, as the encoder.
 *
 * The pass takes the common shapes only - the RETURN of the innermost
 * frame, a CALL one level deeper of the last called, a cached or a new
 * function (a leaf call and its RETURN in one step) - and stops before
 * any other event, which the caller gives the general way (enc_event()
 * codes the same bytes). It costs what it must per event by doing once
 * per stretch of events what does not change inside one:
 *   - room: a stretch holds the events that start at or below the block's
 *     limit for sure (RING_EVENT_MAX bytes each at most); a block takes
 *     exactly the events that start at or below it, as put() cuts it;
 *   - the recent window's wrap: a stretch ends at it;
 *   - the bounds on depth and time: the pass takes at most as many events
 *     as keep every CALL's depth within depth_max and every time below
 *     2^62 (the window's kind bits), so neither is checked per event;
 *   - the trigger's stack: a frame pushed in the pass lives in the model's
 *     frame ring (function, depth) and ns_at[] (its call time) while it is
 *     open, and is written as a trigger frame only if still open when the
 *     pass ends. Its RETURN checks the model's frame alone: the two stacks
 *     pushed it together. A RETURN of a frame from before the pass checks
 *     both, as the engine would (ring_ret_outer()).
 *   - time: counted from the piece's ns0 inside the pass (the last time
 *     too: ring_rel_ok()), the piece's start moved on to the last time
 *     (ring_rebase()), so that converting a time is a 64-bit multiply, an
 *     add and a shift; ns0 is added back where a time is kept (the
 *     window, the trigger's frames, the pass's end);
 *   - leaf calls one after another (a CALL and its RETURN, again and
 *     again: most of a program's events when its callees are leaves) are
 *     taken two at a time by a loop of their own (ring_leaves()), which
 *     carries only what a pair changes.
 * The values carried from event to event live in registers; the loop
 * stays one function (every helper is inlined) so that they can.
 */
#include <string.h>
#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "cidx_internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the ring's words are little-endian");

/* The longest event the pass codes: a CALL of a new function (a tag with
 * its u16, a varint of 10). */
#define RING_EVENT_MAX 13u
_Static_assert(RING_EVENT_MAX <= ADA_CIDX_EVENT_MAX, "what fits the block's limit");
/* The newest time the recent window holds (its top two bits: the kind). */
#define RING_TS_KEPT_MAX ((1ull << 62) - 1)
#define RING_EV 32 /* bytes of a ring event */
#define RING_TK_CALL ((uint64_t)ATF_EVENT_CALL << 62)
#define RING_TK_RET ((uint64_t)ATF_EVENT_RETURN << 62)

/* A word of a ring event, read once: the ring is shared with the
 * recorded program, so a value checked must be the value coded (a
 * relaxed load is never read again by the compiler, as a plain one may
 * be when a register spills). */
typedef uint64_t cidx_ring_word __attribute__((may_alias));
static inline __attribute__((always_inline)) uint64_t ring_word(const char *at)
{
	return __atomic_load_n((const cidx_ring_word *)(const void *)at, __ATOMIC_RELAXED);
}

/* The tag and its u16 escape in one 4-byte store (the block's limit
 * leaves room past any event): p moves on by one or three. The word is
 * op << 5 | min(dt, 31) | (dt - 31) << 8 (its bytes past a 1-byte tag are
 * the next event's to overwrite), written as a sum (the fields do not
 * overlap): (dt << 8) + (op << 5) - (31 << 8) + min(dt, 31). On x86_64 one
 * comparison gives both the minimum (cmovb) and the step (sbb: all ones
 * when dt < 31): gcc compared twice and stepped with setcc, movzx and
 * an add, 4-5 instructions more of every event (callgrind, cidx_bench
 * --ring: 51.4 -> 46.6 an event, the plain pass on fib). The whole word
 * is one volatile asm so that gcc cannot hoist dt << 8 above a CALL's
 * branches (last called, cached, new), where it and the step were
 * spilled across the slot's hash and look-up. */
static inline uint8_t *ring_tag(uint8_t *p, uint32_t op, uint64_t dt)
{
#if defined(__x86_64__)
	uint64_t x = dt; /* becomes (dt << 8) + min(dt, 31) in its low half */
	uint32_t m;
	uint64_t small;
	__asm__ volatile("mov %[esc], %[m]\n\tcmp %[esc], %[x]\n\tcmovb %k[x], %[m]\n\t"
	                 "sbb %[small], %[small]\n\tshl $8, %k[x]\n\tadd %[m], %k[x]"
	                 : [x] "+r"(x), [m] "=&r"(m), [small] "=&r"(small)
	                 : [esc] "i"(CIDX_D_ESC)
	                 : "cc");
	const uint32_t w = (uint32_t)x + ((op << 5) - (CIDX_D_ESC << 8));
#else
	const uint32_t d = (uint32_t)dt;
	const uint64_t small = -(uint64_t)(dt < CIDX_D_ESC); /* all ones: no escape */
	const uint32_t m = small ? d : CIDX_D_ESC;
	const uint32_t w = (d << 8) + ((op << 5) - (CIDX_D_ESC << 8)) + m;
#endif
	memcpy(p, &w, sizeof(w));
	return p + 3 + 2 * (int64_t)small;
}

/* A CALL one level deeper: of the last called function, of a cached one,
 * or spelled out (which caches it), as enc_call() codes it. */
static inline uint8_t *ring_call(struct cidx_model *m, uint64_t fid, uint64_t last_call,
                                 uint64_t dt, uint8_t *p)
{
	if (fid == last_call)
		return ring_tag(p, CIDX_OP_CALL_LAST, dt);
	const uint32_t slot = cidx_slot(fid);
	if (__builtin_expect(m->cache[slot] == fid, 1)) {
		p = ring_tag(p, CIDX_OP_CALL_SLOT + (slot >> 8), dt);
		*p = (uint8_t)slot;
		return p + 1;
	}
	p = ring_tag(p, CIDX_OP_CALL_NEW, dt);
	p = cidx_put_varint(p, cidx_zigzag(fid - m->last_explicit));
	cidx_model_explicit(m, fid);
	return p;
}

/* One event into the caller's recent window (struct ada_cidx_keep):
 * tk = its time | kind << 62. */
static inline void ring_keep(struct ada_cidx_recent *at, uint64_t tk, uint64_t fid)
{
#if defined(__SSE2__) && defined(__x86_64__)
	/* Written whole without reading the line first: the window is read
	 * back only long after, for a few events (wal_cidx_keep()). One
	 * 16-byte store: the cost goes with the stores, not bytes. */
	_mm_stream_si128((__m128i *)(void *)at, _mm_set_epi64x((long long)fid, (long long)tk));
#else
	at->ts_kind = tk;
	at->fid = fid;
#endif
}

/* How many frames the pass may have open on the trigger's stack, from
 * when none of its own is: none when the engine's plain loop would not
 * push the next CALL (it unwinds a frame or pushes one out: the CALL at
 * cur + 1 is not above the innermost frame, or cap are held), else what
 * keeps the stack within cap and the pass's frames in the model's ring. */
static inline uint32_t ring_push_room(const struct ada_cidx_calls *c, uint32_t head, uint32_t cnt,
                                      uint32_t cur)
{
	const uint32_t floor = cnt ? c->fr[(head - 1) & (c->cap - 1)].depth : 0;
	if (cnt >= c->cap || cur < floor)
		return 0;
	return c->cap - cnt < CIDX_FRAME_RING ? c->cap - cnt : CIDX_FRAME_RING;
}

/* The pass's state: what its loop keeps in registers. The model's frame
 * ring is indexed by top (only top mod CIDX_FRAME_RING matters, so the
 * pass starts it at CIDX_FRAME_RING or more and it never wraps). The
 * pass's own open frames are those from floor to top; below them the
 * model still knows nk_out frames from before the pass. A CALL at top
 * chk or above takes ring_push_slow(): there the pass's frames reach
 * room (sp_room), or a push makes the model forget its oldest frame.
 * last: the last time less the piece's ns0 (ring_rel_ok()). */
struct ring_pass {
	const char *x, *xend;
	uint8_t *p;
	uint64_t last, nxt, last_call;
	uint32_t top, floor, chk, nk_out, sp_room;
	uint32_t head, cnt;
	struct ada_cidx_recent *kp, *kat, *kend;
};

static inline void ring_chk(struct ring_pass *s)
{
	const uint32_t forget = CIDX_FRAME_RING - s->nk_out;
	s->chk = s->floor + (s->sp_room < forget ? s->sp_room : forget);
}

/* A CALL (or a leaf pair) at top chk: false when the pass's frames fill
 * their room; else the model's ring is full and forgets its oldest frame,
 * one from before the pass (the pass's own fit: room <= the ring). */
static inline __attribute__((always_inline)) bool ring_push_slow(struct ring_pass *s)
{
	if (s->top - s->floor >= s->sp_room)
		return false;
	s->nk_out--;
	ring_chk(s);
	return true;
}

/* The RETURN of a frame pushed before the pass (none of the pass's own is
 * open): the model must know it (and not at depth 0, whose RETURN leaves
 * cur at 0: the general way's), the trigger's innermost frame be it.
 * False: the pass stops. */
static inline __attribute__((always_inline)) bool ring_ret_outer(struct ring_pass *s,
                                                                 const struct ada_cidx_calls *calls,
                                                                 uint64_t fid, uint64_t w3,
                                                                 const bool stack)
{
	if (!s->nk_out || (uint32_t)w3 == 0)
		return false;
	if (stack) {
		const uint32_t fmask = calls->cap - 1;
		const struct ada_cidx_call *f = &calls->fr[(s->head - 1) & fmask];
		if (!s->cnt || f->depth != (uint32_t)w3 || f->fn_id != fid)
			return false;
		s->head = (s->head - 1) & fmask;
		s->cnt--;
		s->sp_room = ring_push_room(calls, s->head, s->cnt, (uint32_t)w3 - 1);
	}
	s->nk_out--;
	s->floor--;
	ring_chk(s);
	return true;
}

/* The pass's frames still open become trigger frames, oldest first, as
 * the engine's plain loop pushes them. */
static void ring_calls_flush(const struct cidx_model *m, struct ada_cidx_calls *calls,
                             const struct ring_pass *s, const uint64_t *ns_at, uint64_t ns0)
{
	const uint32_t fmask = calls->cap - 1, sp = s->top - s->floor;
	uint32_t head = s->head;
	for (uint32_t i = sp; i > 0; i--) {
		const uint32_t ti = (s->top - i) & (CIDX_FRAME_RING - 1);
		calls->fr[head] = (struct ada_cidx_call){.call_ns = ns0 + ns_at[ti],
		                                         .fn_id = m->fid[ti],
		                                         .wait0 = calls->wait0,
		                                         .depth = cidx_depth_at(m, ti)};
		head = (head + 1) & fmask;
	}
	calls->head = head;
	calls->n = s->cnt + sp;
}

/* The end of the stretch from s->x: every event in it starts at or below
 * lim, and (kept) its window slot is before the window's end. */
static inline __attribute__((always_inline)) const char *
ring_stretch(const struct ring_pass *s, const uint8_t *lim, const bool kept)
{
	size_t k = (size_t)(lim - s->p) / RING_EVENT_MAX + 1;
	const size_t left = (size_t)(s->xend - s->x) / RING_EV;
	k = k < left ? k : left;
	if (kept && (size_t)(s->kend - s->kp) < k)
		k = (size_t)(s->kend - s->kp);
	return s->x + k * RING_EV;
}

/* The pass's state from the model, the stack and the window. */
static inline __attribute__((always_inline)) void
ring_begin(struct ring_pass *s, const struct cidx_model *m, const struct ada_cidx_calls *calls,
           const struct ada_cidx_keep *keep, const bool stack, const bool kept)
{
	s->last_call = m->last_call;
	s->nxt = cidx_dw(m->cur + 1);
	s->top = s->floor = (m->top & (CIDX_FRAME_RING - 1)) + CIDX_FRAME_RING;
	s->nk_out = m->nk;
	s->sp_room = CIDX_FRAME_RING;
	if (stack) {
		s->head = calls->head;
		s->cnt = calls->n;
		s->sp_room = ring_push_room(calls, s->head, s->cnt, m->cur);
	}
	ring_chk(s);
	if (kept) {
		s->kat = keep->at;
		s->kend = keep->at + keep->mask + 1;
		s->kp = keep->at + (keep->next & keep->mask);
	}
}

/* Leaf pairs after a leaf pair (most of a program's events when its
 * calls are leaf calls: `mixed`'s are 90 %): while the next two events
 * are a CALL one level deeper of the last called or of a cached function
 * and its RETURN, in time, they are coded here, in a loop that carries
 * only what a pair changes (the time, the last called, the out and ring
 * positions): a pair leaves the depth, both stacks and the model's ring
 * as they were, so top < chk (no push near the ring's or the stack's
 * room) holds for every pair once it holds for the first. Anything else
 * (a new function, a deeper CALL, a RETURN, a time out of reach, the
 * stretch's end) leaves the pair to the pass's loop, which reads its
 * words again. s->x is the last event taken (the loop steps past it). */
static inline __attribute__((always_inline)) void ring_leaves(struct ring_pass *s,
                                                              const struct cidx_model *m,
                                                              const struct cidx_ring_conv *cv,
                                                              const char *stop, const bool kept)
{
	const uint64_t ns0 = cv->ns0;
	const char *x = s->x;
	uint8_t *p = s->p;
	uint64_t last = s->last, last_call = s->last_call;
	while (x + 2 * RING_EV < stop) {
		const char *a = x + RING_EV, *b = a + RING_EV;
		/* a pair is one line of the ring when it starts on one */
		__builtin_prefetch(a + 64 * RING_EV);
		const uint64_t fid = ring_word(a + 8), w3 = ring_word(a + 24);
		if (ring_word(a + 16) != m->call_w2 || w3 != s->nxt)
			break;
		if (ring_word(b + 16) != m->ret_w2 || ring_word(b + 8) != fid ||
		    ring_word(b + 24) != w3)
			break;
		const uint32_t slot = cidx_slot(fid);
		const bool again = fid == last_call;
		if (!again && m->cache[slot] != fid)
			break; /* a new function: explicit, the pass's way */
		/* The CALL's tag is written before the RETURN is checked: a
		 * pair left to the pass leaves p where it was, and the block's
		 * limit leaves room past any event taken. */
		const uint64_t d1 = ring_word(a) - cv->tsc0;
		if (d1 > cv->d_max)
			break;
		/* d <= d_max: the product does not wrap (ring_rebase()). A
		 * time before the last (clamped to it) wraps t1 - last past
		 * the tag's most: left to the pass's loop, which clamps. */
		const uint64_t t1 = (d1 * cv->mult + cv->lo) >> 32;
		if (t1 - last > CIDX_TAG_DT_MAX)
			break;
		uint8_t *q;
		if (again) {
			q = ring_tag(p, CIDX_OP_CALL_LAST, t1 - last);
		} else {
			q = ring_tag(p, CIDX_OP_CALL_SLOT + (slot >> 8), t1 - last);
			*q++ = (uint8_t)slot;
		}
		const uint64_t d2 = ring_word(b) - cv->tsc0;
		if (d2 > cv->d_max)
			break;
		const uint64_t t2 = (d2 * cv->mult + cv->lo) >> 32;
		if (t2 - t1 > CIDX_TAG_DT_MAX)
			break;
		p = ring_tag(q, CIDX_OP_RET, t2 - t1);
		if (kept) {
			ring_keep(s->kp++, (ns0 + t1) | RING_TK_CALL, fid);
			ring_keep(s->kp++, (ns0 + t2) | RING_TK_RET, fid);
		}
		last = t2;
		last_call = fid;
		x = b;
	}
	s->x = x;
	s->p = p;
	s->last = last;
	s->last_call = last_call;
}

/* The pass (ada_cidx_enc_put_ring()), with or without the caller's stack
 * and window (stack, kept: constants in each copy). Each event: its time
 * word read, converted and clamped (cv), then its other words; bytes
 * 16-23 equal to ret_w2 or call_w2 say thread id and kind at once, bytes
 * 24-31 equal to the innermost frame's (a RETURN) or to nxt =
 * cidx_dw(cur + 1) (a CALL) say depth and no detail link at once.
 * Returns the events taken.
 * ada-long-function: one loop body per event is the point (a call per
 * event, or a step split out of line, puts the live values in memory). */
static inline __attribute__((always_inline)) size_t
ring_run(struct ada_cidx_enc *e, const struct atf_index_event *src, size_t n,
         struct ada_cidx_calls *calls, struct ada_cidx_keep *keep, uint8_t **pp, const uint8_t *lim,
         const bool stack, const bool kept)
{
	struct cidx_model *const m = &e->m;
	struct cidx_ring_conv *const cv = &e->rc;
	/* The conversion's constants and the thread's words are read
	 * where used (cv->, m->: operands from L1), not copied into locals:
	 * the allocator spilled copies with the loop's live values, a load
	 * and a store more an event. */
	const uint64_t ns0 = cv->ns0;
	uint64_t ns_at[CIDX_FRAME_RING]; /* call times of the pass's open frames (less
	                                    ns0) */
	struct ring_pass s = {.x = (const char *)src,
	                      .xend = (const char *)(src + n),
	                      .p = *pp,
	                      .last = cv->last - ns0};
	ring_begin(&s, m, calls, keep, stack, kept);
	while (s.x < s.xend && s.p <= lim) {
		if (kept && s.kp == s.kend)
			s.kp = s.kat;
		const char *const stop = ring_stretch(&s, lim, kept);
		for (; s.x < stop; s.x += RING_EV) {
			/* The ring lines were just written on the producer's
			 * core: asked for 2 KiB ahead, as the conversion does
			 * (drain_convert.c); past the end they ask for nothing
			 * useful, harmlessly. */
			__builtin_prefetch(s.x + 64 * RING_EV);
			const uint64_t d = ring_word(s.x) - cv->tsc0;
			if (__builtin_expect(d > cv->d_max, 0))
				goto out;
			/* d <= d_max: the product does not wrap (ring_rebase()) */
			uint64_t t = (d * cv->mult + cv->lo) >> 32;
			t = t < s.last ? s.last : t;
			const uint64_t dt = t - s.last;
			if (__builtin_expect(dt > CIDX_TAG_DT_MAX, 0))
				goto out;
			const uint64_t w2 = ring_word(s.x + 16), fid = ring_word(s.x + 8);
			const uint64_t w3 = ring_word(s.x + 24);
			if (w2 == m->ret_w2) {
				const uint32_t ti = (s.top - 1) & (CIDX_FRAME_RING - 1);
				if (__builtin_expect(m->fid[ti] != fid, 0))
					goto out;
				if (__builtin_expect(m->dw[ti] != w3, 0))
					goto out;
				if (__builtin_expect(s.top == s.floor, 0) &&
				    !ring_ret_outer(&s, calls, fid, w3, stack))
					goto out;
				s.p = ring_tag(s.p, CIDX_OP_RET, dt);
				s.top--;
				s.nxt = w3; /* cur = depth - 1 */
				if (kept)
					ring_keep(s.kp++, (ns0 + t) | RING_TK_RET, fid);
				s.last = t;
				continue;
			}
			if (__builtin_expect(w2 != m->call_w2, 0))
				goto out;
			if (__builtin_expect(w3 != s.nxt, 0))
				goto out;
			if (__builtin_expect(s.top >= s.chk, 0) && !ring_push_slow(&s))
				goto out;
			s.p = ring_call(m, fid, s.last_call, dt, s.p);
			s.last_call = fid;
			/* A leaf call: the next event is this frame's RETURN, in
			 * time. Coded here, the pair leaves both stacks as they
			 * were (as the engine's plain loop skips it,
			 * eval_leaf()), and the model's ring as a push and a pop
			 * would (ring_push_slow() made it forget). The next
			 * event's words are used only when taken; else the loop
			 * reads them again. */
			if (s.x + RING_EV < stop) {
				const char *y = s.x + RING_EV;
				if (ring_word(y + 16) == m->ret_w2 && ring_word(y + 8) == fid &&
				    ring_word(y + 24) == w3) {
					const uint64_t d2 = ring_word(y) - cv->tsc0;
					uint64_t t2 = (d2 * cv->mult + cv->lo) >> 32;
					t2 = t2 < t ? t : t2;
					if (d2 <= cv->d_max && t2 - t <= CIDX_TAG_DT_MAX) {
						s.p = ring_tag(s.p, CIDX_OP_RET, t2 - t);
						if (kept) {
							ring_keep(s.kp++, (ns0 + t) | RING_TK_CALL,
							          fid);
							ring_keep(s.kp++, (ns0 + t2) | RING_TK_RET,
							          fid);
						}
						s.last = t2;
						s.x = y;
						if (s.top < s.chk)
							ring_leaves(&s, m, cv, stop, kept);
						continue;
					}
				}
			}
			/* The frames below are shallower (cidx_model_apply()). */
			const uint32_t ti = s.top & (CIDX_FRAME_RING - 1);
			m->fid[ti] = fid;
			m->dw[ti] = w3;
			if (stack)
				ns_at[ti] = t;
			s.top++;
			s.nxt++;
			if (kept)
				ring_keep(s.kp++, (ns0 + t) | RING_TK_CALL, fid);
			s.last = t;
		}
	}
out:
	m->ts = ns0 + s.last;
	m->nk = s.nk_out + (s.top - s.floor);
	m->top = s.top;
	m->cur = (uint32_t)s.nxt - 1;
	m->last_call = s.last_call;
	cv->last = ns0 + s.last;
	if (stack)
		ring_calls_flush(m, calls, &s, ns_at, ns0);
	*pp = s.p;
	return (size_t)(s.x - (const char *)src) / RING_EV;
}

/* The events the pass may take at most: every CALL's depth within
 * depth_max (depth grows by one an event at most), and (kept) every time
 * below 2^62 (time grows by CIDX_TAG_DT_MAX an event at most). */
static size_t ring_take_max(const struct ada_cidx_enc *e, const struct ada_cidx_ring_conv *cv,
                            size_t n, bool kept)
{
	if (e->m.cur >= cv->depth_max || (kept && cv->last > RING_TS_KEPT_MAX))
		return 0;
	if (n > cv->depth_max - e->m.cur)
		n = cv->depth_max - e->m.cur;
	if (kept && n > (RING_TS_KEPT_MAX - cv->last) / CIDX_TAG_DT_MAX)
		n = (RING_TS_KEPT_MAX - cv->last) / CIDX_TAG_DT_MAX;
	return n;
}

/* Whether the pass may count time from cv->ns0 (ring_run()): the last
 * time is not before it, and no time the piece converts (d <= d_max)
 * passes 2^64 - 1 from it, so t < last exactly when t - ns0 < last - ns0.
 * Else the general way takes the next event (its time moves last on: a
 * piece's first events after a re-anchor). */
static bool ring_rel_ok(const struct ada_cidx_ring_conv *cv)
{
	return cv->last >= cv->ns0 &&
	       ((unsigned __int128)cv->d_max * cv->mult) >> 32 <= UINT64_MAX - cv->ns0;
}

/* The piece of the clock the pass converts with, moved on to about the
 * last time, so that converting a time is a 64-bit multiply, an add and a
 * shift: the 128-bit product (mul, shrd) took more micro-ops and tied the
 * loop's registers to rdx:rax. With D ticks moved on, D * mult = hi 2^32 +
 * lo (lo < 2^32): ((d + D) * mult) >> 32 = hi + ((d * mult + lo) >> 32),
 * exactly, so ns0 moves on by hi. D is the most that keeps ns0 at or
 * before the last time when it is made (ring_rel_ok(): the pass counts
 * from it), kept in the encoder for the next calls (their divisions are
 * the pass's set-up), and d_max becomes at most what keeps d * mult + lo
 * below 2^64 (2^32 ns past the new ns0, whatever the counter's rate). An
 * event before the new tsc0 (d wraps) or past the new d_max stops the
 * pass, as one past the piece does, and the general way converts it
 * (ada_tsc_map_apply(), the same times). Needs ring_rel_ok(cv). */
static struct cidx_ring_conv ring_rebase(struct ada_cidx_enc *e,
                                         const struct ada_cidx_ring_conv *cv)
{
	struct cidx_ring_conv r = {cv->tsc0, cv->ns0, cv->mult, 0, cv->d_max, cv->last};
	if (r.mult == 0) /* every time is ns0: nothing to move */
		return r;
	const uint64_t ahead = r.last - r.ns0; /* ring_rel_ok(): no wrap */
	/* D, hi, lo and the reach depend on mult alone, so a D made for an
	 * earlier piece or call holds for this one while it is within d_max
	 * and ns0 + hi is at or before the last time; made again when not
	 * (ahead - hi wraps), or 2^31 ns past (half the product's reach: the
	 * pass would soon stop at its bound). */
	if (e->rb_mult != r.mult || ahead - e->rb_hi >= 1ull << 31 || e->rb_dd > r.d_max) {
		const unsigned __int128 q = ((unsigned __int128)ahead << 32) / r.mult;
		const uint64_t dd = q < r.d_max ? (uint64_t)q : r.d_max;
		const unsigned __int128 at = (unsigned __int128)dd * r.mult;
		e->rb_mult = r.mult;
		e->rb_dd = dd;
		e->rb_hi = (uint64_t)(at >> 32);
		e->rb_lo = (uint32_t)at;
		e->rb_fit = (UINT64_MAX - e->rb_lo) / r.mult;
	}
	r.tsc0 += e->rb_dd;
	r.ns0 += e->rb_hi;
	r.lo = e->rb_lo;
	r.d_max -= e->rb_dd;
	r.d_max = r.d_max < e->rb_fit ? r.d_max : e->rb_fit;
	return r;
}

/* The four copies of the pass, each its own function: one function
 * holding all four made the register allocator spill the loop's values
 * in each (the conversion's constants, the next depth, the stretch's
 * end), a load or a store more per event. */
#define RING_RUN_COPY(NAME, STACK, KEPT)                                                           \
	static __attribute__((noinline)) size_t NAME(                                              \
	    struct ada_cidx_enc *e, const struct atf_index_event *src, size_t n,                   \
	    struct ada_cidx_calls *calls, struct ada_cidx_keep *keep, uint8_t **pp,                \
	    const uint8_t *lim)                                                                    \
	{                                                                                          \
		return ring_run(e, src, n, calls, keep, pp, lim, STACK, KEPT);                     \
	}
RING_RUN_COPY(ring_run_plain, false, false)
RING_RUN_COPY(ring_run_stack, true, false)
RING_RUN_COPY(ring_run_kept, false, true)
RING_RUN_COPY(ring_run_stack_kept, true, true)
#undef RING_RUN_COPY

size_t ada_cidx_enc_put_ring(struct ada_cidx_enc *e, const struct atf_index_event *src, size_t n,
                             struct ada_cidx_ring_conv *cv, struct ada_cidx_calls *calls,
                             struct ada_cidx_keep *keep, struct ada_cidx_out *o)
{
	if (!e->open || n == 0 || e->m.tid != cv->tid || e->m.ts != cv->last || o->len > o->cap)
		return 0;
	size_t lim = e->bstart + e->block_size < o->cap ? e->bstart + e->block_size : o->cap;
	if (o->len + ADA_CIDX_EVENT_MAX > lim)
		return 0; /* put() seals the block and opens the next */
	n = ring_take_max(e, cv, n, keep != NULL);
	if (n == 0 || !ring_rel_ok(cv))
		return 0;
	uint8_t *p0 = o->p + o->len, *p = p0;
	const uint8_t *plim = o->p + lim - ADA_CIDX_EVENT_MAX;
	e->rc = ring_rebase(e, cv);
	size_t k;
	if (keep)
		k = calls ? ring_run_stack_kept(e, src, n, calls, keep, &p, plim)
		          : ring_run_kept(e, src, n, NULL, keep, &p, plim);
	else
		k = calls ? ring_run_stack(e, src, n, calls, NULL, &p, plim)
		          : ring_run_plain(e, src, n, NULL, NULL, &p, plim);
	cv->last = e->rc.last;
	if (keep)
		keep->next += k; /* one slot an event taken */
	e->seq += k;
	e->pos += (uint64_t)(p - p0);
	o->len = (size_t)(p - o->p);
	if (k)
		e->t_last = e->m.ts;
	return k;
}
