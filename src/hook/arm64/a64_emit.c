/*
 * arm64 trampolines, the return trampoline and the patch (the C-handler
 * form: the hook_arch_emit_* half of hook_arch.h on aarch64). Pure code
 * generation into caller-provided buffers.
 *
 * Threads: any; no shared state. Portable C (built on every host).
 *
 * Enter trampoline (one per function; S = sp at the function's entry,
 * 16-byte aligned; x16/x17 are dead there, AAPCS64's call scratch):
 *   0  sub  sp, sp, #176
 *   4  stp  x0, x1, [sp] ... stp x16, x17, [sp, #128]  ; struct ada_hook_regs
 *  40  str  x18, [sp, #144]
 *  44  stp  x29, x30, [sp, #160]      ; x30 at S-8: the return slot
 *  48  ldr  x0, fn_id
 *  52  add  x1, sp, #168              ; ret_slot = S-8
 *  56  add  x2, sp, #0                ; regs
 *  60  ldr  x16, enter_handler
 *  64  blr  x16                       ; sp 16-byte aligned
 *  68  ldp  x0, x1, [sp] ... ldp x14, x15, [sp, #112]
 * 100  ldr  x18, [sp, #144]
 * 104  ldp  x29, x30, [sp, #160]      ; x30 = the slot as the handler left it
 * 108  add  sp, sp, #176              ; sp = S
 * 112  cbnz x30, body                 ; a return address: run as if unhooked
 * 116  bl   body                      ; 0: the handler pushed a frame
 * 120  R_F: b exit_path               ; the return trampoline
 * 124  nop                            ; (not run: aligns the literals)
 * 128  dq fn_id, dq enter_handler
 * 144  body: <relocated prologue>
 *      b fn + patch_len               ; or mov x16, ...; br x16 when far
 * The x86_64 contract word for word: the slot is x30's word in the
 * frame, and "drop the slot, call the body" is "bl body" (x30 = R_F).
 *
 * Return trampoline (one per block; reached by a `ret` to it or from an
 * R_F, sp = S, the stack pointer after the return):
 *   sub sp, sp, #176; stp x0..x17, str x18, stp x29, x30 as above
 *   add x0, sp, #176                 ; S
 *   ldr x16, exit_handler; blr x16   ; x0 = the original return address
 *   str x0, [sp, #168]               ; into x30's word
 *   ldp x0..x17, ldr x18, ldp x29, x30; add sp, sp, #176; ret
 *   nop; dq exit_handler             ; at 120
 * Every caller-saved general register (x0-x18) comes back as the
 * function left it (gcc's -fipa-ra keeps values live in them across
 * calls to functions it knows leave them alone); x30 holds the original
 * return address. x0 is at S-176, x1 at S-168 and x29 at S-16 while the
 * handler runs (HOOK_RET_SAVED_*, arm64/arch.h).
 */
#include <string.h>

#include "a64_internal.h"

static void emit_save_regs(struct a64_writer *w)
{
	a64_sub_sp(w, A64_FRAME);
	for (unsigned r = 0; r < 18; r += 2)
		a64_stp_sp(w, r, r + 1, 8 * r);
	a64_str_sp(w, 18, A64_FRAME_X18);
	a64_stp_sp(w, A64_FP, A64_LR, A64_FRAME_FP);
}

/* x0..x15, x18, x29, x30 (x16/x17 only when all: the return path) */
static void emit_restore_regs(struct a64_writer *w, bool with_ip)
{
	for (unsigned r = 0; r < (with_ip ? 18u : 16u); r += 2)
		a64_ldp_sp(w, r, r + 1, 8 * r);
	a64_ldr_sp(w, 18, A64_FRAME_X18);
	a64_ldp_sp(w, A64_FP, A64_LR, A64_FRAME_FP);
	a64_add_sp(w, A64_FRAME);
}

static void emit_enter_frame(struct a64_writer *w, uint64_t fn_id, uint64_t handler,
                             uint64_t exit_path)
{
	uint64_t base = w->at;

	emit_save_regs(w);
	a64_ldr_lit(w, 0, base + A64_FN_ID_OFF);
	a64_add_from_sp(w, 1, A64_FRAME_LR); /* ret_slot */
	a64_add_from_sp(w, 2, 0);            /* regs */
	a64_ldr_lit(w, A64_X16, base + A64_FN_ID_OFF + 8);
	a64_blr(w, A64_X16);
	emit_restore_regs(w, false);
	a64_cbnz(w, A64_LR, base + A64_BODY_OFF);
	a64_bl(w, base + A64_BODY_OFF);
	a64_b(w, exit_path); /* R_F */
	a64_put(w, A64_NOP);
	a64_put_u64(w, fn_id);
	a64_put_u64(w, handler);
}

size_t a64_emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                           uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path,
                           size_t starts[HOOK_ARCH_MAX_INSNS])
{
	struct a64_writer w = {buf, 0, HOOK_ARCH_MAX_TRAMPOLINE, buf_addr, 1};
	uint8_t patch[HOOK_ARCH_MAX_PATCH];

	if (plan->insn_count == 0 || plan->insn_count > HOOK_ARCH_MAX_INSNS || (buf_addr & 7) ||
	    a64_patch_bytes(plan, buf_addr, patch) != 0)
		return 0;
	emit_enter_frame(&w, fn_id, enter_handler, exit_path);
	if (w.len != A64_BODY_OFF)
		return 0;
	for (size_t i = 0; i < plan->insn_count; i++) {
		const struct hook_arch_insn *in = &plan->insns[i];
		if (starts)
			starts[i] = w.len;
		if (a64_reloc_one(&w, a64_word(plan->original + in->offset), in,
		                  plan->fn_addr + in->offset))
			return 0;
	}
	a64_b_far(&w, plan->fn_addr + plan->patch_len);
	return w.ok ? w.len : 0;
}

size_t a64_emit_return_trampoline(uint8_t *buf, uint64_t buf_addr, uint64_t exit_handler)
{
	struct a64_writer w = {buf, 0, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, buf_addr, 1};

	if (buf_addr & 7)
		return 0;
	emit_save_regs(&w);
	a64_add_from_sp(&w, 0, A64_FRAME); /* S */
	a64_ldr_lit(&w, A64_X16, buf_addr + A64_RET_HANDLER_OFF);
	a64_blr(&w, A64_X16);
	a64_str_sp(&w, 0, A64_FRAME_LR); /* restored into x30 below */
	emit_restore_regs(&w, true);
	a64_put(&w, A64_RET);
	a64_put(&w, A64_NOP); /* not run: aligns the literal */
	if (w.len != A64_RET_HANDLER_OFF)
		return 0;
	a64_put_u64(&w, exit_handler);
	return w.ok ? w.len : 0;
}
