/*
 * The A64 code writer: one function per instruction form the trampolines
 * and the relocator emit, each appending one little-endian word (or a
 * short fixed sequence) at the writer's pc. Encodings from the Arm ARM
 * (DDI 0487), section C6; tests/unit/test_hook_a64.c checks them against
 * hand-assembled words (and against GNU as's, in the comments).
 *
 * Threads: any; no shared state. Portable C (built on every host).
 */
#include <string.h>

#include "a64_internal.h"

void a64_put(struct a64_writer *w, uint32_t word)
{
	if (!w->ok || w->len + 4 > w->cap) {
		w->ok = 0;
		return;
	}
	uint8_t *p = w->buf + w->len;
	p[0] = (uint8_t)word;
	p[1] = (uint8_t)(word >> 8);
	p[2] = (uint8_t)(word >> 16);
	p[3] = (uint8_t)(word >> 24);
	w->len += 4;
}

void a64_put_u64(struct a64_writer *w, uint64_t v)
{
	a64_put(w, (uint32_t)v);
	a64_put(w, (uint32_t)(v >> 32));
}

void a64_mov_imm64(struct a64_writer *w, unsigned rd, uint64_t v)
{
	a64_put(w, 0xd2800000u | (uint32_t)(v & 0xffff) << 5 | rd); /* movz xd, #h0 */
	for (unsigned hw = 1; hw < 4; hw++) {
		uint32_t h = (uint32_t)(v >> (16 * hw)) & 0xffff;
		if (h) /* movk xd, #h, lsl 16hw */
			a64_put(w, 0xf2800000u | hw << 21 | h << 5 | rd);
	}
}

static void a64_b_op(struct a64_writer *w, uint32_t op, uint64_t target)
{
	int64_t d = (int64_t)(target - a64_pc(w));
	if (!a64_fits(d, A64_B_REACH)) {
		w->ok = 0;
		return;
	}
	a64_put(w, op | ((uint32_t)(d >> 2) & 0x3ffffffu));
}

void a64_b(struct a64_writer *w, uint64_t target)
{
	a64_b_op(w, 0x14000000u, target);
}

void a64_bl(struct a64_writer *w, uint64_t target)
{
	a64_b_op(w, 0x94000000u, target);
}

void a64_b_far(struct a64_writer *w, uint64_t target)
{
	if (a64_fits((int64_t)(target - a64_pc(w)), A64_B_REACH)) {
		a64_b(w, target);
		return;
	}
	a64_mov_imm64(w, A64_X16, target);
	a64_br(w, A64_X16);
}

void a64_br(struct a64_writer *w, unsigned rn)
{
	a64_put(w, 0xd61f0000u | rn << 5);
}

void a64_blr(struct a64_writer *w, unsigned rn)
{
	a64_put(w, 0xd63f0000u | rn << 5);
}

/* stp/ldp (signed offset, 64-bit): opc 10 101 0 010 L imm7 rt2 rn rt */
static void a64_pair_sp(struct a64_writer *w, uint32_t op, unsigned ra, unsigned rb, unsigned off)
{
	a64_put(w, op | ((off / 8) & 0x7fu) << 15 | rb << 10 | A64_ZR << 5 | ra);
}

void a64_stp_sp(struct a64_writer *w, unsigned ra, unsigned rb, unsigned off)
{
	a64_pair_sp(w, 0xa9000000u, ra, rb, off);
}

void a64_ldp_sp(struct a64_writer *w, unsigned ra, unsigned rb, unsigned off)
{
	a64_pair_sp(w, 0xa9400000u, ra, rb, off);
}

/* str/ldr (unsigned offset, 64-bit): 11 111 0 01 opc imm12 rn rt */
void a64_str_sp(struct a64_writer *w, unsigned rt, unsigned off)
{
	a64_put(w, 0xf9000000u | (off / 8) << 10 | A64_ZR << 5 | rt);
}

void a64_ldr_sp(struct a64_writer *w, unsigned rt, unsigned off)
{
	a64_put(w, 0xf9400000u | (off / 8) << 10 | A64_ZR << 5 | rt);
}

/* add/sub (immediate, 64-bit): sf op S 100010 sh imm12 rn rd; rn/rd 31 is sp */
void a64_add_from_sp(struct a64_writer *w, unsigned rd, unsigned imm)
{
	a64_put(w, 0x91000000u | (imm & 0xfffu) << 10 | A64_ZR << 5 | rd);
}

void a64_sub_sp(struct a64_writer *w, unsigned imm)
{
	a64_put(w, 0xd1000000u | (imm & 0xfffu) << 10 | A64_ZR << 5 | A64_ZR);
}

void a64_add_sp(struct a64_writer *w, unsigned imm)
{
	a64_add_from_sp(w, A64_ZR, imm);
}

void a64_mov_reg(struct a64_writer *w, unsigned rd, unsigned rn)
{
	a64_put(w, 0xaa0003e0u | rn << 16 | rd); /* orr xd, xzr, xn */
}

/* imm19 forms: the displacement in words at bits 23:5 */
static void a64_imm19_op(struct a64_writer *w, uint32_t op, uint64_t target)
{
	int64_t d = (int64_t)(target - a64_pc(w));
	if (!a64_fits(d, 1ll << 20)) {
		w->ok = 0;
		return;
	}
	a64_put(w, op | ((uint32_t)(d >> 2) & 0x7ffffu) << 5);
}

void a64_ldr_lit(struct a64_writer *w, unsigned rt, uint64_t target)
{
	a64_imm19_op(w, 0x58000000u | rt, target);
}

void a64_cbnz(struct a64_writer *w, unsigned rt, uint64_t target)
{
	a64_imm19_op(w, 0xb5000000u | rt, target);
}
