/*
 * x86_64 relocation: one helper per case, each appending the relocated form
 * of a displaced instruction at the writer's current address. Pure byte
 * generation (no memory protection, no allocation): tested byte for byte in
 * tests/unit/test_hook_reloc.c.
 *
 * Threads: any; no shared state.
 * Invariant: a helper either appends an exact equivalent of the original
 * instruction (same architectural effect, same memory accessed, same
 * branch target, same return address pushed) or returns -ERANGE.
 */
#include <errno.h>
#include <string.h>

#include "x86_internal.h"

int reloc_plain(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	x86_put(w, orig, in->len);
	return 0;
}

/* [rip+disp32] operands keep their target: new disp32 when it reaches;
 * lea r64 becomes movabs r64, imm64 (same result, no memory access). */
int reloc_rip_relative(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	int64_t d = (int64_t)(in->target - (x86_pc(w) + in->len));
	uint8_t tmp[16];

	if (x86_fits_rel32(d)) {
		int32_t d32 = (int32_t)d;
		memcpy(tmp, orig, in->len);
		memcpy(tmp + in->disp_off, &d32, 4);
		x86_put(w, tmp, in->len);
		return 0;
	}
	if (in->kind != X86_RELOC_RIP_LEA)
		return -ERANGE;
	x86_mov_reg_imm64(w, (enum x86_gpr)in->reg, in->target);
	return 0;
}

int reloc_jmp(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	(void)orig;
	x86_jmp_far(w, in->target);
	return 0;
}

/* jcc rel8/rel32 -> jcc rel32 (0F 80+cc), or when out of reach the
 * inverted jcc over an absolute jmp: j!cc +14; jmp [rip+0]; dq target. */
int reloc_jcc(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in)
{
	enum x86_cc cc = (enum x86_cc)in->cc;

	(void)orig;
	if (x86_fits_rel32((int64_t)(in->target - (x86_pc(w) + 6)))) {
		x86_jcc_rel32(w, cc, in->target);
		return 0;
	}
	/* j!cc over the 6-byte jmp and its 8-byte target */
	x86_jcc_rel8(w, (enum x86_cc)(cc ^ 1), x86_pc(w) + 2 + 14);
	x86_jmp_rip_mem(w, 0);
	x86_put_u64(w, in->target);
	return 0;
}

/* call -> push the ORIGINAL return address, then jmp to the callee, so the
 * callee returns into the function (unwinders and return-address checks
 * see the real caller). push imm32 sign-extends, so the high half is
 * stored separately: push lo32; mov dword [rsp+4], hi32 (no flags). */
int reloc_call(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in,
               uint64_t ret_addr)
{
	(void)orig;
	x86_push_imm32(w, (int32_t)(uint32_t)ret_addr);
	x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RSP, 4), (int32_t)(uint32_t)(ret_addr >> 32));
	if (in->kind == X86_RELOC_CALL) {
		x86_jmp_far(w, in->target);
		return 0;
	}
	/* call [rip+disp] -> jmp [rip+disp'] through the same pointer slot */
	int64_t d = (int64_t)(in->target - (x86_pc(w) + 6));
	if (!x86_fits_rel32(d))
		return -ERANGE;
	x86_jmp_rip_mem(w, (int32_t)d);
	return 0;
}

/* call r/m64 (FF /2, register or memory not rip-relative) -> the target
 * read first, exactly where the call reads it, then the ORIGINAL return
 * address in its place:
 *     push r/m64            ; FF /6, the call's own operand bytes: T
 *     push qword [rsp]      ; T again, one slot lower
 *     mov dword [rsp+8], lo ; the slot the call would have pushed
 *     mov dword [rsp+12], hi
 *     ret                   ; to T, rsp as after the call
 * An operand based on rsp reads it before the first push changes it, as
 * the call does; no flag changes. The ret is mispredicted (a relocated
 * prologue's, once per call of such a function). */
int reloc_call_indirect(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in,
                        uint64_t ret_addr)
{
	static const uint8_t push_top[] = {0xff, 0x34, 0x24};
	uint8_t tmp[16];

	if (in->reg == 0 || in->reg >= in->len || in->len > sizeof(tmp) ||
	    orig[in->reg - 1] != 0xff || ((orig[in->reg] >> 3) & 7) != 2)
		return -ERANGE;
	memcpy(tmp, orig, in->len);
	tmp[in->reg] = (uint8_t)((orig[in->reg] & 0xc7) | (6 << 3));
	x86_put(w, tmp, in->len);
	x86_put(w, push_top, sizeof(push_top));
	x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RSP, 8), (int32_t)(uint32_t)ret_addr);
	x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RSP, 12), (int32_t)(uint32_t)(ret_addr >> 32));
	x86_ret(w);
	return 0;
}
