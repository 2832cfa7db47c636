/*
 * The x86_64 fast form (hook_arch.h "Fast form"): the block's enter stub
 * and its fast return trampoline, with the labels they jump by and the
 * steps they share with the detail lane's member paths
 * (x86_emit_detail.c). Pure code generation into caller-provided
 * buffers.
 *
 * Threads: any; no shared state.
 */
#include <stdbool.h>
#include <string.h>

#include "x86_emit_internal.h"

/* ---- Fast form (both lanes; hook_arch.h, struct hook_arch_fast) ----
 * (The detail lane's additions are described at emit_detail_test and
 * hook_arch_emit_enter_stub: the membership test first, members and
 * flagged frames to the detail handlers' member paths.)
 * The enter stub and the fast return trampoline do what
 * ada_hook_on_enter()/ada_hook_on_exit() do on their fast paths
 * (handlers.c: shadow_enter_fast/shadow_return_fast, ada_emit_to), in
 * the same order and with the same stores, saving only the five
 * registers they use (rax, rcx, rdx, rsi, rdi) instead of every
 * caller-saved one, and reaching the thread's state as %fs:disp32 (the
 * initial-exec offsets the agent computed). Every case they do not take
 * goes to the C handlers with every register saved, as the ordinary
 * trampolines do:
 *   - in_hook already set (btsl found it: a signal handler's call while
 *     a handler runs, or the agent's own work): the full handler, which
 *     finds it set too (its nested path);
 *   - anything else (guard set, stack full or to be grown, a frame to
 *     pop or a tail call, the shared trampoline in the slot, the ring
 *     full or slot not claimed, a flagged or inherited frame at return):
 *     declined before any store, to the _held handler, the full
 *     handler's body after its claim (in_hook stays held throughout);
 *   - QUEUED found by the clear: the C flush with every register saved.
 * The claim is the first instruction and the clear the last store, each
 * one read-modify-write instruction (as in the C handlers), so a signal
 * lands before, after or between them, never inside a transition. */

/* The rel32 just written goes to `to`, once emit_fix knows where. */
static void emit_fixup(struct x86_writer *w, struct emit_labels *l, enum emit_label to)
{
	if (l->n < sizeof(l->fix) / sizeof(l->fix[0])) {
		l->fix[l->n] = w->len - 4;
		l->to[l->n++] = (uint8_t)to;
	} else {
		w->ok = 0;
	}
}

void emit_jcc(struct x86_writer *w, struct emit_labels *l, enum x86_cc cc, enum emit_label to)
{
	x86_jcc_rel32(w, cc, x86_pc(w) + 6); /* rel32 0 until emit_fix */
	emit_fixup(w, l, to);
}

void emit_jmp(struct x86_writer *w, struct emit_labels *l, enum emit_label to)
{
	x86_jmp_rel32(w, x86_pc(w) + 5); /* rel32 0 until emit_fix */
	emit_fixup(w, l, to);
}

static void emit_fix(struct x86_writer *w, const struct emit_labels *l)
{
	if (!w->ok)
		return;
	for (size_t i = 0; i < l->n; i++) {
		int32_t d = (int32_t)((int64_t)l->at[l->to[i]] - (int64_t)(l->fix[i] + 4));
		memcpy(w->buf + l->fix[i], &d, 4);
	}
}

void emit_claim(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_bts_mem_imm8(w, X86_DWORD, x86_fs(f->s_in_hook), 0);
}

void emit_clear(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_sub_mem_imm8(w, X86_DWORD, x86_fs(f->s_in_hook), 1);
}

void emit_ring_room(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                    enum emit_label fail)
{
	x86_mov_reg_mem(w, X86_RAX, x86_fs(f->p_head));
	x86_cmp_reg_mem(w, X86_RAX, x86_fs(f->p_limit));
	emit_jcc(w, l, X86_CC_AE, fail);
}

/* rsi = &base[ecx] (top). */
static void emit_shadow_top(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_mov_reg_reg(w, X86_ESI, X86_ECX);
	x86_shl_reg_imm8(w, X86_RSI, 5);
	x86_add_reg_mem(w, X86_RSI, x86_fs(f->s_base));
}

void emit_shadow_room(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                      uint8_t k, enum emit_label fail)
{
	x86_mov_reg_mem(w, X86_ECX, x86_fs(f->s_top));
	x86_cmp_reg_mem(w, X86_ECX, x86_fs(f->s_cap));
	emit_jcc(w, l, X86_CC_AE, fail); /* full: to grow */
	emit_shadow_top(w, f);
	x86_lea_reg_mem(w, X86_RDI, x86_mem(X86_RSP, k + 8)); /* the slot */
	x86_cmp_mem_reg(w, x86_mem(X86_RSI, FE_TOP(FE_SLOT)), X86_RDI);
	emit_jcc(w, l, X86_CC_BE, fail); /* <= slot: dead frames, a tail call */
}

void emit_orig_room(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                    enum x86_gpr orig, enum emit_label fail)
{
	x86_mov_reg_imm64(w, X86_RAX, f->ret_tramp);
	x86_cmp_reg_reg(w, orig, X86_RAX);
	emit_jcc(w, l, X86_CC_E, fail); /* the shared trampoline */
	emit_ring_room(w, l, f, fail);
}

void emit_event_ptr(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_mov_reg_reg(w, X86_RCX, X86_RAX);
	x86_and_reg_mem(w, X86_RCX, x86_fs(f->p_mask));
	x86_shl_reg_imm8(w, X86_RCX, 5);
	x86_add_reg_mem(w, X86_RCX, x86_fs(f->p_events));
}

void emit_call_event(struct x86_writer *w, const struct hook_arch_fast *f, enum x86_gpr fn,
                     enum x86_gpr tmp)
{
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_FN), fn);
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_DEPTH), X86_EDX);
	x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RCX, FV_DSEQ), EMIT_ATF_NO_DETAIL);
	x86_mov_reg_mem(w, tmp, x86_fs(f->p_tid_call)); /* thread_id | CALL */
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_TID), tmp);
}

/* The tail of an emit (ada_emit_to): rax = head, rcx = the event with
 * every field but the timestamp written. Leaves rax, rdx, rsi changed. */
static void emit_publish(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_lea_reg_mem(w, X86_RSI, x86_mem(X86_RAX, 1));
	x86_mov_mem_reg(w, x86_fs(f->p_head), X86_RSI);
	x86_rdtsc(w);
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_TS), X86_EAX);
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_TS + 4), X86_EDX);
	x86_mov_reg_mem(w, X86_RAX, x86_fs(f->p_head_pub));
	/* A plain store is a release on x86_64 (stores are not reordered
	 * with older stores): the event's stores above come first; pairs
	 * with the acquire load of head in ada_index_ring_peek(), as the
	 * release store in ada_emit_to(). */
	x86_mov_mem_reg(w, x86_mem(X86_RAX, 0), X86_RSI);
}

/* The index lane's stub saves the five registers it uses. */
static const enum x86_gpr emit_stub_regs5[5] = {X86_RAX, X86_RCX, X86_RDX, X86_RSI, X86_RDI};
static const enum x86_gpr emit_flush_regs[4] = {X86_R8, X86_R9, X86_R10, X86_R11};

static void emit_stub_pop(struct x86_writer *w, bool detail)
{
	if (detail)
		x86_emit_pop(w, x86_emit_stub_regs8, 8);
	else
		x86_emit_pop(w, emit_stub_regs5, 5);
}

/* Entry: [rsp] = the trampoline's return point (its fn_id at [rsp] +
 * EMIT_FAST_FN_ID_DISP), [rsp+8] = the function's return slot. The
 * claim, the guard, the save area and (detail lane) the membership
 * test. */
static void emit_stub_entry(struct x86_writer *w, struct emit_labels *l,
                            const struct hook_arch_fast *f, uint8_t k)
{
	emit_claim(w, f);
	emit_jcc(w, l, X86_CC_B, FL_FULL);
	x86_cmp_mem_imm8(w, X86_DWORD, x86_fs(f->s_guard), 0);
	emit_jcc(w, l, X86_CC_NE, FL_HELD);
	if (f->detail_hot) {
		x86_emit_push(w, x86_emit_stub_regs8, 8);
		emit_detail_test(w, l, f, k); /* members and "ask" go to C */
	} else {
		x86_emit_push(w, emit_stub_regs5, 5);
	}
}

/* The index path (shadow_enter_fast, then the CALL event): nothing is
 * stored before its last test. */
static void emit_stub_index(struct x86_writer *w, struct emit_labels *l,
                            const struct hook_arch_fast *f, uint8_t k)
{
	emit_shadow_room(w, l, f, k, FL_DECL);
	x86_mov_reg_mem(w, X86_RDX, x86_mem(X86_RDI, 0)); /* the return address */
	emit_orig_room(w, l, f, X86_RDX, FL_DECL);
	/* Taken: nothing was stored before this point. */
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_ORIG), X86_RDX);
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_SLOT), X86_RDI);
	x86_mov_mem_imm32(w, X86_QWORD, x86_mem(X86_RDI, 0), EMIT_SHADOW_SLOT_CALL);
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSP, k)); /* the return point */
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RDI, EMIT_FAST_FN_ID_DISP));
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_FN), X86_RDI);
	x86_lea_reg_mem(w, X86_EDX, x86_mem(X86_RCX, 1));
	x86_mov_mem_reg(w, x86_fs(f->s_top), X86_EDX);
	x86_sub_reg_mem(w, X86_EDX, x86_fs(f->s_inherited));     /* the depth */
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_DEPTH), X86_RDX); /* depth, flags 0 */
	emit_event_ptr(w, f);
	emit_call_event(w, f, X86_RDI, X86_RSI);
	emit_publish(w, f);
	emit_clear(w, f);
	emit_jcc(w, l, X86_CC_NE, FL_FLUSH);
	emit_label(w, l, FL_DONE);
	emit_stub_pop(w, f->detail_hot != 0);
	x86_ret(w); /* ZF set (the slot holds 0) */
}

/* The side queue to replay: the C flush, every register saved. */
static void emit_stub_flush(struct x86_writer *w, struct emit_labels *l,
                            const struct hook_arch_fast *f)
{
	emit_label(w, l, FL_FLUSH);
	x86_emit_push(w, emit_flush_regs, 4);
	x86_mov_reg_imm64(w, X86_RAX, f->flush);
	x86_call_reg(w, X86_RAX);
	x86_emit_pop(w, emit_flush_regs, 4);
	x86_cmp_reg_reg(w, X86_EAX, X86_EAX); /* ZF set */
	emit_jmp(w, l, FL_DONE);
}

/* The C handler's call (the ordinary trampoline's, with the regs and
 * the slot one return address further up): rax = the handler; regs at
 * [rsp + regs_off]. */
static void emit_stub_call(struct x86_writer *w, uint8_t regs_off)
{
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSP, 80));                   /* the return point */
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RDI, EMIT_FAST_FN_ID_DISP)); /* fn_id */
	x86_lea_reg_mem(w, X86_RSI, x86_mem(X86_RSP, 88));                   /* ret_slot */
	if (regs_off)
		x86_lea_reg_mem(w, X86_RDX, x86_mem(X86_RSP, regs_off));
	else
		x86_mov_reg_reg(w, X86_RDX, X86_RSP);
	x86_call_reg(w, X86_RAX);
}

/* ret with ZF telling the trampoline whether a frame was pushed. */
static void emit_stub_ret(struct x86_writer *w)
{
	x86_cmp_mem_imm8(w, X86_QWORD, x86_mem(X86_RSP, 8), 0);
	x86_ret(w);
}

/* The detail lane's ways to C: declined or a member, with in_hook held
 * and the eight registers in place: r11 and r10 below them, regs =
 * rsp+16. */
static void emit_stub_detail_c(struct x86_writer *w, struct emit_labels *l,
                               const struct hook_arch_fast *f)
{
	emit_label(w, l, FL_DECL);
	x86_push_reg(w, X86_R11);
	x86_push_reg(w, X86_R10);
	x86_mov_reg_imm64(w, X86_RAX, f->enter_held);
	emit_jmp(w, l, FL_COMMON8);
	emit_label(w, l, FL_MEMBER);
	if (f->detail_rec)
		emit_member_call(w, l, f); /* the record in machine code */
	emit_label(w, l, FL_MSLOW);
	x86_push_reg(w, X86_R11);
	x86_push_reg(w, X86_R10);
	x86_mov_reg_imm64(w, X86_RAX, f->enter_member);
	emit_label(w, l, FL_COMMON8);
	emit_stub_call(w, 16);
	x86_pop_reg(w, X86_R10);
	x86_pop_reg(w, X86_R11);
	x86_emit_pop(w, x86_emit_stub_regs8, 8);
	emit_stub_ret(w);
}

/* in_hook found set (FL_FULL) or held with the guard set (FL_HELD):
 * every register saved, the C handler. */
static void emit_stub_full(struct x86_writer *w, struct emit_labels *l,
                           const struct hook_arch_fast *f)
{
	emit_label(w, l, FL_HELD);
	x86_emit_push(w, x86_emit_hook_regs, 10);
	x86_mov_reg_imm64(w, X86_RAX, f->enter_held);
	emit_jmp(w, l, FL_COMMON);
	emit_label(w, l, FL_FULL);
	x86_emit_push(w, x86_emit_hook_regs, 10);
	x86_mov_reg_imm64(w, X86_RAX, f->enter_full);
	emit_label(w, l, FL_COMMON);
	emit_stub_call(w, 0);
	x86_emit_pop(w, x86_emit_hook_regs, 10);
	emit_stub_ret(w); /* a frame pushed? */
}

size_t hook_arch_emit_enter_stub(uint8_t *buf, uint64_t buf_addr, const struct hook_arch_fast *f)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_ENTER_STUB_MAX, buf_addr, 1};
	struct emit_labels l = {0};
	bool detail = f->detail_hot != 0;
	/* Bytes the stub pushes: [rsp+k] is then the trampoline's return
	 * point, [rsp+k+8] the function's return slot. */
	uint8_t k = detail ? 64 : 40;

	emit_stub_entry(&w, &l, f, k);
	emit_stub_index(&w, &l, f, k);
	emit_stub_flush(&w, &l, f);
	if (detail) {
		emit_stub_detail_c(&w, &l, f);
	} else {
		/* Declined with in_hook held: the C handler's body after its claim. */
		emit_label(&w, &l, FL_DECL);
		x86_emit_pop(&w, emit_stub_regs5, 5);
	}
	emit_stub_full(&w, &l, f);
	if (detail)
		emit_detail_test_cold(&w, &l, f);
	emit_fix(&w, &l);
	return w.ok ? w.len : 0;
}

/* ---- The fast return trampoline ----
 * Entry: rsp = S (after the function's ret), S-8 the dead slot. It
 * saves rax (at S-8), rdx, rcx, rsi, rdi: the first five of the
 * ordinary return trampoline's save area (x86_emit_ret_regs), so a
 * decline only pushes the rest. */

/* The top frame above the inherited ones, owning the slot, unflagged
 * (a flagged one: FL_MEXIT on the detail lane); ecx = top, rsi =
 * &base[top]. */
static void emit_ret_tests(struct x86_writer *w, struct emit_labels *l,
                           const struct hook_arch_fast *f)
{
	x86_mov_reg_mem(w, X86_ECX, x86_fs(f->s_top));
	x86_cmp_mem_reg(w, x86_fs(f->s_inherited), X86_ECX);
	emit_jcc(w, l, X86_CC_AE, FL_DECL); /* top <= inherited (0 too) */
	emit_shadow_top(w, f);
	x86_lea_reg_mem(w, X86_RDI, x86_mem(X86_RSP, 32)); /* S-8 */
	x86_cmp_mem_reg(w, x86_mem(X86_RSI, FE_TOP(FE_SLOT)), X86_RDI);
	emit_jcc(w, l, X86_CC_NE, FL_DECL);
	x86_cmp_mem_imm8(w, X86_DWORD, x86_mem(X86_RSI, FE_TOP(FE_FLAGS)), 0);
	emit_jcc(w, l, X86_CC_NE, f->detail_hot ? FL_MEXIT : FL_DECL);
	emit_ring_room(w, l, f, FL_DECL);
}

/* FL_DONE: orig (rdi) into S-8, rax back, ret to it. */
void emit_ret_done(struct x86_writer *w)
{
	x86_mov_reg_mem(w, X86_RAX, x86_mem(X86_RSP, 32)); /* the saved rax */
	x86_mov_mem_reg(w, x86_mem(X86_RSP, 32), X86_RDI); /* orig into S-8 */
	x86_emit_pop(w, x86_emit_ret_regs + 1, 4);         /* rsp = S-8 */
	x86_ret(w);                                        /* to orig: rsp = S */
}

/* The pop and the RETURN event. The entry is read after top drops:
 * while in_hook is held nothing writes above top (a signal handler's
 * calls take the side path). */
static void emit_ret_index(struct x86_writer *w, struct emit_labels *l,
                           const struct hook_arch_fast *f)
{
	x86_dec_reg(w, X86_ECX);
	x86_mov_mem_reg(w, x86_fs(f->s_top), X86_ECX);
	emit_event_ptr(w, f);
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSI, FE_TOP(FE_FN)));
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_FN), X86_RDI);
	x86_mov_reg_mem(w, X86_EDX, x86_mem(X86_RSI, FE_TOP(FE_DEPTH)));
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_DEPTH), X86_EDX);
	x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RCX, FV_DSEQ), EMIT_ATF_NO_DETAIL);
	x86_mov_reg_mem(w, X86_RDX, x86_fs(f->p_tid_return)); /* thread_id | RETURN */
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_TID), X86_RDX);
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSI, FE_TOP(FE_ORIG)));
	emit_publish(w, f);
	emit_clear(w, f);
	emit_jcc(w, l, X86_CC_NE, FL_FLUSH);
	emit_label(w, l, FL_DONE);
	emit_ret_done(w);
	emit_label(w, l, FL_FLUSH);
	x86_emit_push(w, emit_flush_regs, 4);
	x86_push_reg(w, X86_RDI); /* orig */
	x86_mov_reg_imm64(w, X86_RAX, f->flush);
	x86_call_reg(w, X86_RAX);
	x86_pop_reg(w, X86_RDI);
	x86_emit_pop(w, emit_flush_regs, 4);
	emit_jmp(w, l, FL_DONE);
}

/* The rest of the save area (r8-r11, rbp at S-80), the handler in rax,
 * then FL_COMMON. */
static void emit_ret_to_c(struct x86_writer *w, struct emit_labels *l, uint64_t handler)
{
	x86_emit_push(w, x86_emit_ret_regs + 5, 4);
	x86_push_reg(w, X86_RBP);
	x86_mov_reg_imm64(w, X86_RAX, handler);
	emit_jmp(w, l, FL_COMMON);
}

/* A flagged frame: exactly SHADOW_F_DETAIL (a member's call, its CALL
 * record written) goes to the member exit, which pops it (this path
 * found it the top frame, above the inherited ones, owning the slot);
 * any other flag declines. */
static void emit_ret_member(struct x86_writer *w, struct emit_labels *l,
                            const struct hook_arch_fast *f)
{
	emit_label(w, l, FL_MEXIT);
	x86_cmp_mem_imm8(w, X86_DWORD, x86_mem(X86_RSI, FE_TOP(FE_FLAGS)), EMIT_F_DETAIL);
	emit_jcc(w, l, X86_CC_NE, FL_DECL);
	if (f->detail_rec)
		emit_member_return(w, l, f); /* the record in machine code */
	emit_label(w, l, FL_MEXITC);
	emit_ret_to_c(w, l, f->exit_member);
}

size_t hook_arch_emit_return_trampoline_fast(uint8_t *buf, uint64_t buf_addr,
                                             const struct hook_arch_fast *f)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, buf_addr, 1};
	struct emit_labels l = {0};

	emit_claim(&w, f);
	emit_jcc(&w, &l, X86_CC_B, FL_FULL);
	x86_emit_push(&w, x86_emit_ret_regs, 5);
	emit_ret_tests(&w, &l, f);
	emit_ret_index(&w, &l, f);
	if (f->detail_hot)
		emit_ret_member(&w, &l, f);
	/* Declined, in_hook held: the C handler's body after its claim. */
	emit_label(&w, &l, FL_DECL);
	emit_ret_to_c(&w, &l, f->exit_held);
	emit_label(&w, &l, FL_FULL);
	x86_emit_push(&w, x86_emit_ret_regs, 9);
	x86_push_reg(&w, X86_RBP);
	x86_mov_reg_imm64(&w, X86_RAX, f->exit_full);
	/* The ordinary return trampoline after its handler's address (rbp at
	 * S-80 for the RETURN record). */
	emit_label(&w, &l, FL_COMMON);
	x86_lea_reg_mem(&w, X86_RDI, x86_mem(X86_RSP, 80)); /* S */
	x86_emit_ret_tail(&w);
	emit_fix(&w, &l);
	return w.ok ? w.len : 0;
}
