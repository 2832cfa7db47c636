/*
 * arm64 relocation: the displaced instructions rewritten to run from the
 * trampoline. A PC-relative value is materialised in full (movz/movk: no
 * literal pool, nothing for the moved code to reach), a branch becomes a
 * `b` when the target is within its +-128 MiB from the trampoline and
 * mov x16, target; br x16 otherwise, a conditional branch the inverted
 * condition over that. Pure word generation, tested byte for byte in
 * tests/unit/test_hook_a64.c.
 *
 * Threads: any; no shared state. Portable C (built on every host).
 * Invariant: every helper appends an exact equivalent of the original
 * instruction (the same registers written, but x16/x17, the same memory
 * read, the same branch target and link value).
 */
#include <errno.h>

#include "a64_internal.h"

/* adr/adrp xd: xd = the address they computed at their original pc */
static void reloc_adr(struct a64_writer *w, const struct hook_arch_insn *in)
{
	a64_mov_imm64(w, in->reg, in->target);
}

/* ldr (literal) into a general register: the address into the
 * destination itself (no scratch), then the load from it; xzr as the
 * destination (a load for its fault alone) takes x17 as the base, since
 * base 31 would be sp. */
static void reloc_ldr_gp(struct a64_writer *w, const struct hook_arch_insn *in)
{
	static const uint32_t op[3] = {
	    0xb9400000u, /* ldr wt, [xn] */
	    0xf9400000u, /* ldr xt, [xn] */
	    0xb9800000u, /* ldrsw xt, [xn] */
	};
	unsigned base = in->reg == A64_ZR ? A64_X17 : in->reg;
	a64_mov_imm64(w, base, in->target);
	a64_put(w, op[in->kind - A64_RELOC_LDR_W] | base << 5 | in->reg);
}

/* ldr st/dt/qt (literal): the address into x17 */
static void reloc_ldr_simd(struct a64_writer *w, const struct hook_arch_insn *in)
{
	static const uint32_t op[3] = {
	    0xbd400000u, /* ldr st, [xn] */
	    0xfd400000u, /* ldr dt, [xn] */
	    0x3dc00000u, /* ldr qt, [xn] */
	};
	a64_mov_imm64(w, A64_X17, in->target);
	a64_put(w, op[in->kind - A64_RELOC_LDR_S] | A64_X17 << 5 | in->reg);
}

/* bl: x30 = the original return address (the callee returns into the
 * function, behind the patch; unwinders see the real caller), then a
 * branch to the callee. */
static void reloc_bl(struct a64_writer *w, const struct hook_arch_insn *in, uint64_t orig_pc)
{
	a64_mov_imm64(w, A64_LR, orig_pc + 4);
	a64_b_far(w, in->target);
}

/* blr xn: the target first into x16 (xn may be x30, which the link
 * overwrites), then the original link, then br x16. */
static void reloc_blr(struct a64_writer *w, const struct hook_arch_insn *in, uint64_t orig_pc)
{
	a64_mov_reg(w, A64_X16, in->reg);
	a64_mov_imm64(w, A64_LR, orig_pc + 4);
	a64_br(w, A64_X16);
}

/* Bytes a64_b_far() takes for target from pc. */
static uint32_t reloc_far_len(uint64_t pc, uint64_t target)
{
	if (a64_fits((int64_t)(target - pc), A64_B_REACH))
		return 4;
	uint32_t n = 4 + 4; /* movz, br */
	for (unsigned hw = 1; hw < 4; hw++)
		n += ((target >> (16 * hw)) & 0xffff) ? 4 : 0;
	return n;
}

/* The conditional branches: the word with its condition inverted and
 * its offset replaced skips the branch to the target that follows
 * (b.cond: cc ^ 1; cbz/cbnz, tbz/tbnz: bit 24). b.al and b.nv always
 * branch: a plain branch. */
static void reloc_cond(struct a64_writer *w, uint32_t word, const struct hook_arch_insn *in)
{
	if (in->kind == A64_RELOC_BCOND && (in->cc & 14u) == 14u) {
		a64_b_far(w, in->target);
		return;
	}
	uint32_t skip = (4 + reloc_far_len(a64_pc(w) + 4, in->target)) / 4;
	if (in->kind == A64_RELOC_BCOND)
		a64_put(w, (word & 0xff000010u) | skip << 5 | (in->cc ^ 1u));
	else if (in->kind == A64_RELOC_CBZ)
		a64_put(w, ((word ^ 0x01000000u) & 0xff00001fu) | skip << 5);
	else
		a64_put(w, ((word ^ 0x01000000u) & 0xfff8001fu) | skip << 5);
	a64_b_far(w, in->target);
}

int a64_reloc_one(struct a64_writer *w, uint32_t word, const struct hook_arch_insn *in,
                  uint64_t orig_pc)
{
	switch (in->kind) {
	case A64_RELOC_PLAIN:
		a64_put(w, word);
		return 0;
	case A64_RELOC_ADR:
	case A64_RELOC_ADRP:
		reloc_adr(w, in);
		return 0;
	case A64_RELOC_LDR_W:
	case A64_RELOC_LDR_X:
	case A64_RELOC_LDR_SW:
		reloc_ldr_gp(w, in);
		return 0;
	case A64_RELOC_LDR_S:
	case A64_RELOC_LDR_D:
	case A64_RELOC_LDR_Q:
		reloc_ldr_simd(w, in);
		return 0;
	case A64_RELOC_PRFM:
		a64_put(w, A64_NOP); /* a hint: no architectural effect to keep */
		return 0;
	case A64_RELOC_B:
		a64_b_far(w, in->target);
		return 0;
	case A64_RELOC_BL:
		reloc_bl(w, in, orig_pc);
		return 0;
	case A64_RELOC_BLR:
		reloc_blr(w, in, orig_pc);
		return 0;
	case A64_RELOC_BCOND:
	case A64_RELOC_CBZ:
	case A64_RELOC_TBZ:
		reloc_cond(w, word, in);
		return 0;
	default:
		return -ERANGE;
	}
}
