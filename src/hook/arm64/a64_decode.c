/*
 * The A64 words the hook layer must know: every PC-relative form a
 * function's first instructions may hold (ADR, ADRP, the literal loads,
 * B, BL, B.cond, BC.cond, CBZ/CBNZ, TBZ/TBNZ), the ones that write the
 * link register with their own address (BLR and its PAC forms), and the
 * ones after which execution never goes on. Everything else in A64 is
 * position independent: copied as is.
 *
 * Threads: any; no shared state. Portable C (built on every host).
 */
#include "a64_internal.h"

/* imm19 at bits 23:5, in words (b.cond, cbz, ldr literal) */
static int64_t a64_imm19(uint32_t w)
{
	return a64_sext(w >> 5, 19) * 4;
}

static bool a64_is_b(uint32_t w)
{
	return (w & 0x7c000000u) == 0x14000000u; /* b, bl: x00101 imm26 */
}

static bool a64_is_bcond(uint32_t w)
{
	return (w & 0xff000000u) == 0x54000000u; /* b.cond (bit 4 0), bc.cond (bit 4 1) */
}

static bool a64_is_cbz(uint32_t w)
{
	return (w & 0x7e000000u) == 0x34000000u; /* sf 011010 op imm19 rt */
}

static bool a64_is_tbz(uint32_t w)
{
	return (w & 0x7e000000u) == 0x36000000u; /* b5 011011 op b40 imm14 rt */
}

bool a64_direct_branch(uint32_t w, uint64_t pc, uint64_t *target)
{
	if (a64_is_b(w))
		*target = pc + (uint64_t)(a64_sext(w, 26) * 4);
	else if (a64_is_bcond(w) || a64_is_cbz(w))
		*target = pc + (uint64_t)a64_imm19(w);
	else if (a64_is_tbz(w))
		*target = pc + (uint64_t)(a64_sext(w >> 5, 14) * 4);
	else
		return false;
	return true;
}

/* br, blr, ret and their PAC forms: 1101011 opc op2(11111) op3 rn op4 */
static bool a64_is_branch_reg(uint32_t w)
{
	return (w & 0xfe1f0000u) == 0xd61f0000u;
}

bool a64_is_indirect_jump(uint32_t w)
{
	/* opc 0000 (br, braaz, brabz) or 1000 (braa, brab) */
	uint32_t opc = (w >> 21) & 0xf;
	return a64_is_branch_reg(w) && (opc == 0 || opc == 8);
}

bool a64_is_terminal(uint32_t w)
{
	uint32_t opc = (w >> 21) & 0xf;
	if ((w & 0xfc000000u) == 0x14000000u) /* b */
		return true;
	if (a64_is_branch_reg(w) && (opc == 0 || opc == 8 || opc == 2 || opc == 4))
		return true; /* br*, ret*, eret* */
	/* brk, hlt; udf */
	if ((w & 0xffe0001fu) == 0xd4200000u || (w & 0xffe0001fu) == 0xd4400000u)
		return true;
	return (w & 0xffff0000u) == 0;
}

/* adr / adrp: op immlo 10000 immhi rd */
static bool a64_classify_adr(uint32_t w, uint64_t pc, struct hook_arch_insn *in)
{
	if ((w & 0x1f000000u) != 0x10000000u)
		return false;
	int64_t imm = a64_sext(((w >> 5) & 0x7ffffu) << 2 | ((w >> 29) & 3u), 21);
	in->reg = (uint8_t)(w & 31u);
	if (w & 0x80000000u) {
		in->kind = A64_RELOC_ADRP;
		in->target = (pc & ~0xfffull) + (uint64_t)(imm * 4096);
	} else {
		in->kind = A64_RELOC_ADR;
		in->target = pc + (uint64_t)imm;
	}
	return true;
}

/* ldr literal: opc 011 V 00 imm19 rt. V=1 opc=11 is unallocated. */
static enum a64_refusal a64_classify_literal(uint32_t w, uint64_t pc, struct hook_arch_insn *in)
{
	static const uint8_t gp[4] = {A64_RELOC_LDR_W, A64_RELOC_LDR_X, A64_RELOC_LDR_SW,
	                              A64_RELOC_PRFM};
	static const uint8_t simd[3] = {A64_RELOC_LDR_S, A64_RELOC_LDR_D, A64_RELOC_LDR_Q};
	uint32_t opc = w >> 30;

	if (w & 0x04000000u) {
		if (opc == 3)
			return A64_REFUSE_UNALLOCATED;
		in->kind = simd[opc];
	} else {
		in->kind = gp[opc];
	}
	in->reg = (uint8_t)(w & 31u);
	in->target = pc + (uint64_t)a64_imm19(w);
	return A64_REFUSE_NONE;
}

/* b, bl, b.cond, cbz, tbz, blr; the rest of the branch group
 * (bits 28:26 = 101) that is not a system, exception or branch-register
 * word is a PC-relative form this layer does not know. */
static enum a64_refusal a64_classify_branch(uint32_t w, uint64_t pc, struct hook_arch_insn *in)
{
	if (a64_direct_branch(w, pc, &in->target)) {
		in->kind = a64_is_b(w)       ? ((w >> 31) ? A64_RELOC_BL : A64_RELOC_B)
		           : a64_is_bcond(w) ? A64_RELOC_BCOND
		           : a64_is_cbz(w)   ? A64_RELOC_CBZ
		                             : A64_RELOC_TBZ;
		in->cc = (uint8_t)(w & 15u);
		return A64_REFUSE_NONE;
	}
	if ((w & 0xfffffc1fu) == 0xd63f0000u) { /* blr xn */
		in->kind = A64_RELOC_BLR;
		in->reg = (uint8_t)((w >> 5) & 31u);
		return A64_REFUSE_NONE;
	}
	if (a64_is_branch_reg(w) && ((w >> 21) & 7) == 1)
		return A64_REFUSE_PAC_LINK; /* blraaz, blrabz (opc 0001), blraa, blrab (1001) */
	if ((w & 0xfe000000u) == 0xd4000000u || a64_is_branch_reg(w))
		return A64_REFUSE_NONE; /* exception generation, system, hints, br, ret */
	return A64_REFUSE_BRANCH_OTHER;
}

enum a64_refusal a64_classify(uint32_t w, uint64_t pc, struct hook_arch_insn *in)
{
	in->kind = A64_RELOC_PLAIN;
	in->reg = 0;
	in->cc = 0;
	in->target = 0;
	if ((w & 0xffff0000u) == 0)
		return A64_REFUSE_UDF;
	if (a64_classify_adr(w, pc, in))
		return A64_REFUSE_NONE;
	if ((w & 0x3b000000u) == 0x18000000u)
		return a64_classify_literal(w, pc, in);
	if ((w & 0x1c000000u) == 0x14000000u)
		return a64_classify_branch(w, pc, in);
	return A64_REFUSE_NONE;
}
