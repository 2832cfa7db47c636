/*
 * The detail lane's hook handlers: the _detail handlers are the index
 * lane's (handlers.c) plus, for a function in the detail set, one record
 * written in place into the thread's detail ring; the fast form's member
 * continuations; the membership test.
 *
 * Part of handlers.c's translation unit (included there, after the index
 * lane, whose static helpers it uses; not compiled on its own): gcc's
 * inlining and cloning of the hot handlers depend on the whole unit, and
 * splitting it changed their code (objdump). Same rules as handlers.c:
 * hook context, -mgeneral-regs-only, no libc, no errno.
 *
 * Threads: every traced thread, on its own calls.
 */
#ifndef ADA_HANDLERS_DETAIL_IN_HANDLERS_C
#error "handlers_detail.c is part of handlers.c's translation unit: compile handlers.c"
#endif

/* ---- the detail lane (docs/format.md, "Detail records") ----
 * The _detail handlers are the two above plus, for a function in the
 * detail set, one record written in place into the thread's detail ring
 * (ring.h: ada_detail_reserve/put/commit; no call, no vector register).
 * Trampolines get them only when the detail lane is on (agent_install.c),
 * so --detail never runs exactly the handlers above.
 *
 * Membership is decided once per call, at entry, before any detail work
 * (handlers_detail_member, one inline O(1) test), and kept in the frame's
 * shadow entry (SHADOW_F_DETAIL): a function outside the set runs the
 * index lane's fast path plus that test at entry and one flag test at its
 * return; a member's call and return both get a record even if the set
 * changes between them. A record is written while in_hook is still set:
 * a signal handler that interrupts it goes to the side path and never
 * writes the detail ring itself. Its link is the index ring position of
 * the event it belongs to, its timestamp that event's. */

/* The one membership test of the hot path: the recorder's current
 * key-symbol set once it published one (src/keysym/keysym.h: masked
 * loads inside the arena's key-symbol area, no call), else the agent's
 * own (dset). 1 member, 0 not, ADA_KEYSYM_ASK: a hash or CRoaring
 * container, or a module the blob says nothing about (no entry, or an
 * uncovered one: then the own set answers), out of line
 * (handlers_enter_detail_ask). The
 * key-symbol swap's grace period counts on the event this handler
 * publishes after the test (docs/internals.md, "The key-symbol swap"). */
static inline int handlers_detail_member(uint64_t fn_id)
{
	/* Acquire: pairs with the release store of keysym_cur in
	 * ada_keysym_region_publish() (recorder): the blob is seen whole. */
	uint64_t cur = atomic_load_explicit(agent_hot.ks_cur, memory_order_acquire);
	if (cur != ADA_KEYSYM_CUR_LOCAL)
		return ada_keysym_test(agent_hot.ks_area, agent_hot.ks_mask, cur, fn_id);
	/* Acquire: pairs with the release store that publishes a set
	 * (agent_detail_set_update()): its bitmaps are seen complete. */
	const struct agent_dset *ds = atomic_load_explicit(&agent_hot.dset, memory_order_acquire);
	return agent_dset_has(ds, fn_id);
}

/* The largest CALL record fits the smallest ring's largest record, so the
 * fast reserve needs no length test (ring.h, ada_detail_reserve). */
_Static_assert(ADA_DREC_CALL_FP_WORDS * 8 + ATF_DETAIL_STACK_MAX <= ADA_DETAIL_CHUNK_MIN - 8,
               "a CALL record (the _FP form too) must fit any detail ring");

/* The words of a CALL record at w (reserved). ts, link: its index
 * event's raw timestamp and ring position; orig: the caller's return
 * address (*ret_slot holds SHADOW_SLOT_CALL by now); sw: stack words
 * to copy (bounded by the caller). The stack is copied eight bytes at a
 * time through general registers (the vector registers hold the traced
 * function's float arguments: -mgeneral-regs-only), eight words a round. */
__attribute__((always_inline)) static inline void
handlers_detail_put_call(_Atomic uint64_t *w, uint64_t fn_id, const uint64_t *ret_slot,
                         const struct ada_hook_regs *regs, uint64_t ts, uint64_t link,
                         uint64_t orig, uint64_t meta, uint32_t sw)
{
	ada_detail_put(w, ADA_DREC_TS, ts);
	ada_detail_put(w, ADA_DREC_LINK, link);
	ada_detail_put(w, ADA_DREC_FN, fn_id);
	ada_detail_put(w, ADA_DREC_META, meta);
	detail_put_call_regs(w, ret_slot, regs, orig);
	/* --detail-fp: the vector registers, then the stack. */
	uint32_t words = ADA_DREC_CALL_WORDS;
	if (ada_unlikely((meta & 0xffff) == ATF_DETAIL_FUNCTION_CALL_FP)) {
		detail_put_xmm(w, ADA_DREC_CALL_WORDS, ATF_DETAIL_XMM_WORDS);
		words = ADA_DREC_CALL_FP_WORDS;
	}
	/* Pointer-walked rounds of eight words, then single words; word 0
	 * is then overwritten with the return address as the caller left it
	 * (orig), not the trampoline's. */
	_Atomic uint64_t *dst = w + words;
	const uint64_t *src = ret_slot;
	for (uint32_t r = sw / 8; r != 0; r--, src += 8, dst += 8) {
		uint64_t a = src[0], b = src[1], c = src[2], d = src[3], e = src[4], f = src[5],
		         g = src[6], h = src[7];
		ada_detail_put(dst, 0, a);
		ada_detail_put(dst, 1, b);
		ada_detail_put(dst, 2, c);
		ada_detail_put(dst, 3, d);
		ada_detail_put(dst, 4, e);
		ada_detail_put(dst, 5, f);
		ada_detail_put(dst, 6, g);
		ada_detail_put(dst, 7, h);
	}
	for (uint32_t r = sw % 8; r != 0; r--, src++, dst++)
		ada_detail_put(dst, 0, *src);
	if (sw)
		ada_detail_put(w, words, orig);
}

/* --detail always with --detail-overflow wait: the reserve would free a
 * chunk the drain has not decided; wait for it (ring.h, "Waiting for the
 * drain") with the program's vector state saved, as handlers_emit_slow()
 * waits for index ring space. Not guarded, for the same reason. */
HANDLERS_COLD static void handlers_detail_wait(struct ada_producer *p, uint32_t len)
{
	struct handlers_fpu f;
	handlers_fpu_save(&f);
	ada_detail_wait_room(p, len);
	handlers_fpu_restore(&f);
}

/* The record would pass the pages populated so far in the ring's first
 * lap: populate the next piece (ring.h, "The first lap's pages"; a
 * madvise) with the program's vector state saved, as above. False: no
 * memory for them, the record dropped (counted there). */
HANDLERS_COLD static bool handlers_detail_populate(struct ada_producer *p, uint32_t len)
{
	struct handlers_fpu f;
	handlers_fpu_save(&f);
	bool ok = ada_detail_populate(p, len);
	handlers_fpu_restore(&f);
	return ok;
}

static inline _Atomic uint64_t *handlers_detail_reserve(struct ada_producer *p, uint32_t len,
                                                        uint64_t *end)
{
	if (ada_unlikely(ada_detail_would_wait(p, len)))
		handlers_detail_wait(p, len);
	if (ada_unlikely(ada_detail_would_populate(p, len)) && !handlers_detail_populate(p, len))
		return NULL;
	return ada_detail_reserve(p, len, end);
}

/* Any CALL record: the snapshot clipped near the stack's top (or none off
 * it), and the ring's slow reserve (a pad, old records to overwrite). */
HANDLERS_COLD static void handlers_detail_call(const struct ada_shadow *s, uint64_t fn_id,
                                               const uint64_t *ret_slot,
                                               const struct ada_hook_regs *regs, uint64_t ts,
                                               uint64_t link, uint64_t orig)
{
	struct ada_producer *p = &ada_producer_tls;
	uint32_t flags;
	uint32_t n = agent_stack_take(s->stack_lo, s->stack_hi, (uint64_t)(uintptr_t)ret_slot,
	                              agent_hot.detail_stack, &flags);
	uint32_t sw = (n + 7) / 8;
	uint64_t end;
	bool fp = agent_hot.detail_fp;
	_Atomic uint64_t *w = handlers_detail_reserve(
	    p, ((fp ? ADA_DREC_CALL_FP_WORDS : ADA_DREC_CALL_WORDS) + sw) * 8, &end);
	if (w == NULL)
		return; /* no detail ring in this arena */
	handlers_detail_put_call(
	    w, fn_id, ret_slot, regs, ts, link, orig,
	    ada_drec_meta(fp ? ATF_DETAIL_FUNCTION_CALL_FP : ATF_DETAIL_FUNCTION_CALL, flags, n),
	    sw);
	ada_detail_commit(p, end);
}

/* The common CALL record: the whole snapshot (one test of rsp against
 * bounds computed once per thread) into room the ring has without a pad
 * or an overwrite (one test), with the record's size and word 3 computed
 * once per process -- or, `fixed` (a constant: the 128-byte handlers),
 * known at compile time. False, having written nothing, otherwise. */
__attribute__((always_inline)) static inline bool
handlers_detail_call_fast(const struct ada_shadow *s, uint64_t fn_id, const uint64_t *ret_slot,
                          const struct ada_hook_regs *regs, uint64_t ts, uint64_t link,
                          uint64_t orig, bool fixed)
{
	struct ada_producer *p = &ada_producer_tls;
	uint64_t end;
	_Atomic uint64_t *w;
	/* --detail-fp: detail_call_len and detail_meta_call say the _FP
	 * record; the fixed one is never here (handlers_enter_member_fp),
	 * so its length is a constant and its prefetches are unrolled. */
	uint32_t len = fixed ? (ADA_DREC_CALL_WORDS + DETAIL_STACK_FIXED_WORDS) * 8
	                     : agent_hot.detail_call_len;
	if (ada_unlikely((uint64_t)(uintptr_t)ret_slot - s->dfast_lo > s->dfast_span) ||
	    ada_unlikely(!(w = ada_detail_reserve_fast(p, len, &end))))
		return false;
	if (fixed)
		detail_put_call_fixed(w, fn_id, ret_slot, regs, ts, link, orig);
	else
		handlers_detail_put_call(w, fn_id, ret_slot, regs, ts, link, orig,
		                         agent_hot.detail_meta_call, agent_hot.detail_words);
	ada_detail_commit(p, end);
	return true;
}

/* Any RETURN record (the ring's slow reserve included). */
HANDLERS_COLD static void handlers_detail_return(uint64_t fn_id, uint64_t sp, uint64_t orig,
                                                 uint64_t ts, uint64_t link)
{
	struct ada_producer *p = &ada_producer_tls;
	uint64_t end;
	bool fp = agent_hot.detail_fp;
	_Atomic uint64_t *w = handlers_detail_reserve(
	    p, (fp ? ADA_DREC_RETURN_FP_WORDS : ADA_DREC_RETURN_WORDS) * 8, &end);
	if (w == NULL)
		return;
	if (fp)
		detail_put_return_fp(w, fn_id, sp, orig, ts, link);
	else
		detail_put_return(w, fn_id, sp, orig, ts, link);
	ada_detail_commit(p, end);
}

/* After a cold path that may have emitted the event (or dropped it, or
 * emitted others after it): the record is written only when the last
 * event is this function's `kind` event and it is new since head h0. */
static bool handlers_detail_emitted(uint64_t h0, uint64_t fn_id, uint32_t kind, uint64_t *link,
                                    uint64_t *ts)
{
	const struct ada_producer *p = &ada_producer_tls;
	if (!p->events || p->head == h0)
		return false;
	const struct atf_index_event *e = &p->events[(p->head - 1) & p->mask];
	if (e->event_kind != kind || e->function_id != fn_id)
		return false;
	*link = p->head - 1;
	*ts = e->timestamp_ns;
	return true;
}

/* The return address the program gave a frame whose orig is lr and whose
 * slot is slot, entries base[0 .. i) below it: a tail-called frame's orig
 * is the return point of the frame its caller jumped from, which shares
 * the slot; the lowest entry of the slot holds the caller's real return
 * address. The records' lr is that one (docs/format.md), not a
 * trampoline's. */
static inline uint64_t handlers_program_lr(const struct ada_shadow *s, uint32_t i,
                                           const uint64_t *slot, uint64_t lr)
{
	while (i > 0 && s->base[i - 1].slot == slot)
		lr = s->base[--i].orig;
	return lr;
}

/* The original return address of the frame just pushed (*ret_slot holds
 * SHADOW_SLOT_CALL by now). */
static inline uint64_t handlers_top_orig(const struct ada_shadow *s, const uint64_t *ret_slot)
{
	if (s->top == 0)
		return *ret_slot;
	return handlers_program_lr(s, s->top - 1, ret_slot, s->base[s->top - 1].orig);
}

/* A member's entry the fast path declined: the general push (flagged),
 * then the record if its CALL was emitted. */
HANDLERS_COLD static void handlers_enter_slow_detail(struct ada_shadow *s, uint64_t fn_id,
                                                     uint64_t *ret_slot,
                                                     const struct ada_hook_regs *regs)
{
	uint64_t h0 = ada_producer_tls.head, link, ts;
	if (agent_hot.active)
		handlers_push_general(s, fn_id, ret_slot, SHADOW_F_DETAIL);
	else
		s->suppressed++;
	if (handlers_detail_emitted(h0, fn_id, ATF_EVENT_CALL, &link, &ts))
		handlers_detail_call(s, fn_id, ret_slot, regs, ts, link,
		                     handlers_top_orig(s, ret_slot));
	handlers_leave(s);
}

HANDLERS_COLD static void handlers_emit_slow_leave_detail(struct ada_shadow *s, uint64_t fn_id,
                                                          uint32_t depth, uint64_t *ret_slot,
                                                          const struct ada_hook_regs *regs)
{
	uint64_t h0 = ada_producer_tls.head, link, ts;
	handlers_emit_slow(fn_id, ATF_EVENT_CALL, depth);
	if (handlers_detail_emitted(h0, fn_id, ATF_EVENT_CALL, &link, &ts))
		handlers_detail_call(s, fn_id, ret_slot, regs, ts, link,
		                     handlers_top_orig(s, ret_slot));
	handlers_leave(s);
}

/* The tails of the members' fast paths when the record needs the general
 * writer: out of line, so the fast paths make no call but tail calls
 * (they need no callee-saved register and no frame). */
HANDLERS_COLD static void handlers_detail_call_leave(struct ada_shadow *s, uint64_t fn_id,
                                                     const uint64_t *ret_slot,
                                                     const struct ada_hook_regs *regs, uint64_t ts,
                                                     uint64_t link, uint64_t orig)
{
	handlers_detail_call(s, fn_id, ret_slot, regs, ts, link, orig);
	handlers_leave(s);
}

HANDLERS_COLD static uint64_t handlers_detail_return_leave(struct ada_shadow *s, uint64_t fn_id,
                                                           uint64_t sp, uint64_t orig, uint64_t lr,
                                                           uint64_t ts, uint64_t link)
{
	handlers_detail_return(fn_id, sp, lr, ts, link);
	handlers_leave(s);
	return orig;
}

/* The fixed record with --detail-fp (detail_put_call_fixed_fp, the
 * vector registers still the traced function's: nothing in hook context
 * uses one), the clear after: out of line, so the path without it
 * reserves a constant length. */
static __attribute__((noinline)) void handlers_enter_member_fp(struct ada_shadow *s, uint64_t fn_id,
                                                               const uint64_t *ret_slot,
                                                               const struct ada_hook_regs *regs,
                                                               uint64_t ts, uint64_t link,
                                                               uint64_t orig)
{
	struct ada_producer *p = &ada_producer_tls;
	uint64_t end;
	_Atomic uint64_t *w;
	uint32_t len = (ADA_DREC_CALL_FP_WORDS + DETAIL_STACK_FIXED_WORDS) * 8;
	if (ada_unlikely((uint64_t)(uintptr_t)ret_slot - s->dfast_lo > s->dfast_span) ||
	    ada_unlikely(!(w = ada_detail_reserve_fast(p, len, &end))))
		return handlers_detail_call_leave(s, fn_id, ret_slot, regs, ts, link, orig);
	detail_put_call_fixed_fp(w, fn_id, ret_slot, regs, ts, link, orig);
	ada_detail_commit(p, end);
	if (ada_unlikely(handlers_in_hook_clear(s)))
		return handlers_flush(s);
}

/* A member's CALL event and record once its frame is pushed at depth
 * (orig: the record's lr), and the clear; `fixed` as below. */
__attribute__((always_inline)) static inline void
handlers_enter_member_emit(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                           const struct ada_hook_regs *regs, uint32_t depth, uint64_t orig,
                           bool fixed)
{
	struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit))
		return handlers_emit_slow_leave_detail(s, fn_id, depth, ret_slot, regs);
	uint64_t link = p->head;
	uint64_t ts = ada_emit_fast_ts(p, fn_id, ATF_EVENT_CALL, depth);
	if (fixed && ada_unlikely(agent_hot.detail_fp))
		return handlers_enter_member_fp(s, fn_id, ret_slot, regs, ts, link, orig);
	if (ada_unlikely(
	        !handlers_detail_call_fast(s, fn_id, ret_slot, regs, ts, link, orig, fixed)))
		return handlers_detail_call_leave(s, fn_id, ret_slot, regs, ts, link, orig);
	if (ada_unlikely(handlers_in_hook_clear(s)))
		return handlers_flush(s);
}

/* A member's entry the fast push declined: a tail call
 * (shadow_enter_tail) with the record of the fast path, whose lr is the
 * chain's lowest orig (handlers_program_lr, as handlers_top_orig() gives
 * the general path); anything else to the general code. Out of line
 * (the two functions below), so the fast path's code stays as it was. */
__attribute__((always_inline)) static inline void
handlers_enter_member_tail_body(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                                const struct ada_hook_regs *regs, bool fixed)
{
	uint32_t depth;
	if (ada_unlikely(!shadow_enter_tail(s, fn_id, ret_slot, SHADOW_F_DETAIL, &depth)))
		return handlers_enter_slow_detail(s, fn_id, ret_slot, regs);
	uint64_t lr = handlers_program_lr(s, s->top - 1, ret_slot, s->base[s->top - 1].orig);
	handlers_enter_member_emit(s, fn_id, ret_slot, regs, depth, lr, fixed);
}

HANDLERS_LEAF __attribute__((noinline)) static void
handlers_enter_member_tail(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                           const struct ada_hook_regs *regs)
{
	handlers_enter_member_tail_body(s, fn_id, ret_slot, regs, false);
}

HANDLERS_LEAF __attribute__((noinline)) static void
handlers_enter_member_tail_fixed(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                                 const struct ada_hook_regs *regs)
{
	handlers_enter_member_tail_body(s, fn_id, ret_slot, regs, true);
}

/* Entry of a function in the detail set (in_hook set, guard clear);
 * `fixed`: the 128-byte snapshot of detail_put_call_fixed. */
__attribute__((always_inline)) static inline void
handlers_enter_member_body(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                           const struct ada_hook_regs *regs, bool fixed)
{
	uint32_t depth;
	uint64_t orig = *ret_slot; /* the fast push below swaps it (same load) */
	if (ada_unlikely(!shadow_enter_fast(s, fn_id, ret_slot, agent_hot.ret_tramp,
	                                    SHADOW_F_DETAIL, &depth))) {
		if (fixed)
			return handlers_enter_member_tail_fixed(s, fn_id, ret_slot, regs);
		return handlers_enter_member_tail(s, fn_id, ret_slot, regs);
	}
	handlers_enter_member_emit(s, fn_id, ret_slot, regs, depth, orig, fixed);
}

HANDLERS_LEAF __attribute__((noinline)) static void
handlers_enter_member(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                      const struct ada_hook_regs *regs)
{
	handlers_enter_member_body(s, fn_id, ret_slot, regs, false);
}

HANDLERS_LEAF __attribute__((noinline)) static void
handlers_enter_member_fixed(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                            const struct ada_hook_regs *regs)
{
	handlers_enter_member_body(s, fn_id, ret_slot, regs, true);
}

/* A hash or CRoaring container decides (its lookup has loops: out of
 * line, so the handler above keeps no frame), or, for a module the blob
 * has no entry for, the agent's own set (agent_detail_ask). Same steps
 * after. */
__attribute__((hot, noinline)) HANDLERS_REALIGN static void
handlers_enter_detail_ask(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                          const struct ada_hook_regs *regs, bool fixed)
{
	uint64_t cur = atomic_load_explicit(agent_hot.ks_cur, memory_order_relaxed); /* as tested */
	/* Acquire: pairs with the release store that publishes a set
	 * (agent_detail_set_update()): its bitmaps are seen complete. */
	const struct agent_dset *ds = atomic_load_explicit(&agent_hot.dset, memory_order_acquire);
	int d = agent_detail_decide(agent_hot.ks_area, agent_hot.ks_mask, cur, ds, fn_id);
	/* Decided by the start-time rules under a set from a live spec:
	 * counted, one per call (before the call's event: a thread without
	 * a slot yet counts into the arena's total). */
	if (ada_unlikely(d & AGENT_DETAIL_START_RULES))
		ada_producer_count_detail(&ada_producer_tls, ADA_DROP_KEYSYM_UNKNOWN);
	if (!(d & 1))
		return handlers_enter_index(s, fn_id, ret_slot);
	if (fixed)
		return handlers_enter_member_fixed(s, fn_id, ret_slot, regs);
	handlers_enter_member(s, fn_id, ret_slot, regs);
}

/* After the claim of in_hook (by the handler below, or by the fast
 * form's enter stub: the _held entry points). */
__attribute__((always_inline)) static inline void
handlers_enter_detail_claimed(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                              const struct ada_hook_regs *regs, bool fixed)
{
	if (ada_unlikely(s->guard != 0))
		return handlers_enter_guarded(s);
	int member = handlers_detail_member(fn_id);
	if (ada_unlikely(member == ADA_KEYSYM_ASK))
		return handlers_enter_detail_ask(s, fn_id, ret_slot, regs, fixed);
	if (!member)
		return handlers_enter_index(s, fn_id, ret_slot);
	if (fixed)
		return handlers_enter_member_fixed(s, fn_id, ret_slot, regs);
	handlers_enter_member(s, fn_id, ret_slot, regs);
}

__attribute__((always_inline)) static inline void
handlers_enter_detail_body(uint64_t fn_id, uint64_t *ret_slot, const struct ada_hook_regs *regs,
                           bool fixed)
{
	struct ada_shadow *s = &ada_shadow_tls;
	if (ada_unlikely(handlers_in_hook_set(s)))
		return handlers_nested_enter(s, fn_id, ret_slot);
	handlers_enter_detail_claimed(s, fn_id, ret_slot, regs, fixed);
}

/* Any --stack-bytes; and the default 128, which the trampolines get
 * instead when it is the configured size (agent_install.c). */
HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_detail(uint64_t fn_id, uint64_t *ret_slot,
                                                        const struct ada_hook_regs *regs)
{
	handlers_enter_detail_body(fn_id, ret_slot, regs, false);
}

HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_detail128(uint64_t fn_id, uint64_t *ret_slot,
                                                           const struct ada_hook_regs *regs)
{
	handlers_enter_detail_body(fn_id, ret_slot, regs, true);
}

/* handlers_exit_slow() with the record of the RETURN it emits (the frame
 * that returned; frames popped as EXCEPTION get none; each frame of a
 * tail-call chain returns on its own, with its own record) when that
 * frame's call was a member's. */
HANDLERS_COLD static uint64_t handlers_exit_slow_detail(struct ada_shadow *s, uint64_t sp)
{
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	uint64_t h0 = ada_producer_tls.head, link, ts;
	uint32_t flags;
	uint64_t orig = shadow_return(s, slot, &flags);
	if (flags & SHADOW_F_RESCAN) {
		s->guard++;
		agent_dl_changed();
		s->guard--;
	}
	if (orig != 0 && ada_producer_tls.head != h0) {
		/* The frame popped last, still in place above top (nothing
		 * else writes there while in_hook is set: shadow_pop_top). */
		const struct shadow_entry *last = &s->base[s->top];
		if ((last->flags & SHADOW_F_DETAIL) &&
		    handlers_detail_emitted(h0, last->fn_id, ATF_EVENT_RETURN, &link, &ts))
			handlers_detail_return(
			    last->fn_id, sp, handlers_program_lr(s, s->top, slot, orig), ts, link);
	}
	if (ada_unlikely(orig == 0))
		orig = handlers_resync(s, slot);
	handlers_leave(s);
	return orig;
}

/* The members' returns below: orig is where to go on, lr the record's
 * (the program's return address: orig, or for a tail-called frame the
 * chain's lowest orig, handlers_program_lr). */
HANDLERS_COLD static uint64_t handlers_emit_slow_leave_ret_detail(struct ada_shadow *s,
                                                                  uint64_t fn_id, uint32_t depth,
                                                                  uint64_t sp, uint64_t orig,
                                                                  uint64_t lr)
{
	uint64_t h0 = ada_producer_tls.head, link, ts;
	handlers_emit_slow(fn_id, ATF_EVENT_RETURN, depth);
	if (handlers_detail_emitted(h0, fn_id, ATF_EVENT_RETURN, &link, &ts))
		handlers_detail_return(fn_id, sp, lr, ts, link);
	handlers_leave(s);
	return orig;
}

/* handlers_exit_member's record with --detail-fp: the RETURN_FP record
 * into the ring's common room, else the general writer. Out of line, so
 * the path without it keeps its code. */
static __attribute__((noinline)) uint64_t handlers_exit_member_fp(struct ada_shadow *s,
                                                                  uint64_t fn_id, uint64_t sp,
                                                                  uint64_t orig, uint64_t lr,
                                                                  uint64_t ts, uint64_t link)
{
	struct ada_producer *p = &ada_producer_tls;
	uint64_t end;
	_Atomic uint64_t *w = ada_detail_reserve_fast(p, ADA_DREC_RETURN_FP_WORDS * 8, &end);
	if (ada_unlikely(w == NULL))
		return handlers_detail_return_leave(s, fn_id, sp, orig, lr, ts, link);
	detail_put_return_fp(w, fn_id, sp, lr, ts, link);
	ada_detail_commit(p, end);
	if (ada_unlikely(handlers_in_hook_clear(s)))
		return handlers_flush_ret(s, orig);
	return orig;
}

/* Return of a call that got a CALL record (its frame is popped). */
__attribute__((always_inline)) static inline uint64_t
handlers_exit_member_body(struct ada_shadow *s, uint64_t fn_id, uint32_t depth, uint64_t sp,
                          uint64_t orig, uint64_t lr)
{
	struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit))
		return handlers_emit_slow_leave_ret_detail(s, fn_id, depth, sp, orig, lr);
	uint64_t link = p->head;
	uint64_t ts = ada_emit_fast_ts(p, fn_id, ATF_EVENT_RETURN, depth);
	uint64_t end;
	if (ada_unlikely(agent_hot.detail_fp))
		return handlers_exit_member_fp(s, fn_id, sp, orig, lr, ts, link);
	_Atomic uint64_t *w = ada_detail_reserve_fast(p, ADA_DREC_RETURN_WORDS * 8, &end);
	if (ada_unlikely(w == NULL))
		return handlers_detail_return_leave(s, fn_id, sp, orig, lr, ts, link);
	detail_put_return(w, fn_id, sp, lr, ts, link);
	ada_detail_commit(p, end);
	if (ada_unlikely(handlers_in_hook_clear(s)))
		return handlers_flush_ret(s, orig);
	return orig;
}

/* A member's return, not tail-called (lr is orig). */
HANDLERS_LEAF __attribute__((noinline)) static uint64_t
handlers_exit_member(struct ada_shadow *s, uint64_t fn_id, uint32_t depth, uint64_t sp,
                     uint64_t orig)
{
	return handlers_exit_member_body(s, fn_id, depth, sp, orig, orig);
}

/* A tail-called member's return (SHADOW_F_TAIL), its frame popped from
 * the slot below sp: the record's lr is found below it. Out of line, so
 * the return above keeps its code. */
HANDLERS_LEAF __attribute__((noinline)) static uint64_t
handlers_exit_member_tail(struct ada_shadow *s, uint64_t fn_id, uint32_t depth, uint64_t sp,
                          uint64_t orig)
{
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	uint64_t lr = handlers_program_lr(s, s->top, slot, orig);
	return handlers_exit_member_body(s, fn_id, depth, sp, orig, lr);
}

/* The fast form's C continuations for the detail lane (x86_emit_detail.c,
 * "Fast form"; hook_arch_fast.detail_hot): its enter stub takes the index
 * lane's fast path itself for a function outside the detail set and
 * comes here, in_hook held, for a member and for every case it declines;
 * its return trampoline declines every flagged frame (SHADOW_F_DETAIL:
 * a member's call) to the exit. Exactly the handlers above after their
 * claim. */
HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_detail_held(uint64_t fn_id, uint64_t *ret_slot,
                                                             const struct ada_hook_regs *regs)
{
	handlers_enter_detail_claimed(&ada_shadow_tls, fn_id, ret_slot, regs, false);
}

HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_detail128_held(uint64_t fn_id, uint64_t *ret_slot,
                                                                const struct ada_hook_regs *regs)
{
	handlers_enter_detail_claimed(&ada_shadow_tls, fn_id, ret_slot, regs, true);
}

/* The enter stub found fn_id in the detail set, the guard clear: the
 * member's path straight away (the set is decided once per call, by the
 * stub's test, as by handlers_detail_member's). */
HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_detail_member(uint64_t fn_id, uint64_t *ret_slot,
                                                               const struct ada_hook_regs *regs)
{
	handlers_enter_member(&ada_shadow_tls, fn_id, ret_slot, regs);
}

HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_detail128_member(uint64_t fn_id,
                                                                  uint64_t *ret_slot,
                                                                  const struct ada_hook_regs *regs)
{
	handlers_enter_member_fixed(&ada_shadow_tls, fn_id, ret_slot, regs);
}

/* The return trampoline found the top frame (above the inherited ones)
 * owning the slot, flagged exactly SHADOW_F_DETAIL: shadow_return_fast's
 * pop without its tests, then the member's return. */
HANDLERS_LEAF ADA_HOOKCTX uint64_t ada_hook_on_exit_detail_member(uint64_t sp)
{
	struct ada_shadow *s = &ada_shadow_tls;
	uint32_t top = s->top - 1;
	struct shadow_entry e = s->base[top]; /* copied before the pop: see shadow_pop_top */
	s->top = top;
	return handlers_exit_member(s, e.fn_id, e.depth, sp, e.orig);
}

__attribute__((always_inline)) static inline uint64_t
handlers_exit_detail_claimed(struct ada_shadow *s, uint64_t sp)
{
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	struct shadow_entry e;
	if (ada_unlikely(!shadow_return_fast(s, slot, SHADOW_F_DETAIL | SHADOW_F_TAIL, &e)))
		return handlers_exit_slow_detail(s, sp);
	/* SHADOW_F_TAIL comes only with SHADOW_F_DETAIL (shadow_tail_flags). */
	if (ada_unlikely(e.flags & SHADOW_F_TAIL))
		return handlers_exit_member_tail(s, e.fn_id, e.depth, sp, e.orig);
	if (e.flags) /* SHADOW_F_DETAIL */
		return handlers_exit_member(s, e.fn_id, e.depth, sp, e.orig);
	return handlers_exit_index(s, &e);
}

HANDLERS_LEAF ADA_HOOKCTX uint64_t ada_hook_on_exit_detail_held(uint64_t sp)
{
	return handlers_exit_detail_claimed(&ada_shadow_tls, sp);
}

HANDLERS_LEAF ADA_HOOKCTX uint64_t ada_hook_on_exit_detail(uint64_t sp)
{
	struct ada_shadow *s = &ada_shadow_tls;
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	if (ada_unlikely(handlers_in_hook_set(s)))
		return handlers_exit_nested(s, slot);
	return handlers_exit_detail_claimed(s, sp);
}
