/*
 * The x86_64 code writer (x86_writer.h): each named writer is one
 * instruction, built from three encoders: wr_op_rr (register to
 * register, ModRM mod 11), wr_op_mem (a register or opcode extension
 * with a memory operand: the fs prefix, REX, opcode, ModRM, SIB and
 * displacement) and the short forms with the register in the opcode
 * byte (push, pop, movabs).
 *
 * Threads: any; no shared state.
 */
#include <string.h>

#include "x86_writer.h"

/* ---- Encoders ---- */

#define WR_REX_W 0x8
#define WR_REX_R 0x4
#define WR_REX_X 0x2
#define WR_REX_B 0x1

static unsigned wr_num(enum x86_gpr r)
{
	return (unsigned)r & 15;
}

static int wr_is64(enum x86_gpr r)
{
	return ((unsigned)r & X86_R32) == 0;
}

static void wr_rex(struct x86_writer *w, unsigned rex)
{
	if (rex)
		x86_put_u8(w, (uint8_t)(0x40 | rex));
}

/* op r/m, reg with mod 11: `reg` in ModRM.reg (a register or an opcode
 * extension), `rm` in ModRM.rm. */
static void wr_op_rr(struct x86_writer *w, int w64, const char *op, size_t oplen, unsigned reg,
                     unsigned rm)
{
	wr_rex(w, (w64 ? WR_REX_W : 0) | (reg & 8 ? WR_REX_R : 0) | (rm & 8 ? WR_REX_B : 0));
	x86_put(w, op, oplen);
	x86_put_u8(w, (uint8_t)(0xc0 | (reg & 7) << 3 | (rm & 7)));
}

static int wr_fits8(int32_t d)
{
	return d >= -128 && d <= 127;
}

/* ModRM mod for m's displacement (base + disp forms). */
static unsigned wr_mod(const struct x86_mem *m)
{
	if (m->form == X86_DISP_32 || !wr_fits8(m->disp))
		return 2;
	if (m->form == X86_DISP_SHORT && m->disp == 0 && (m->base & 7) != X86_RBP)
		return 0;
	return 1;
}

static uint8_t wr_scale_bits(uint8_t scale)
{
	return scale == 8 ? 3 : scale == 4 ? 2 : scale == 2 ? 1 : 0;
}

/* ModRM (reg field `reg`), SIB and displacement of m. */
static void wr_modrm_mem(struct x86_writer *w, unsigned reg, const struct x86_mem *m)
{
	if (m->form == X86_DISP_FS || m->form == X86_DISP_GS) {
		x86_put_u8(w, (uint8_t)(0x04 | (reg & 7) << 3));
		x86_put_u8(w, 0x25); /* SIB: no base, no index, disp32 */
		x86_put_u32(w, (uint32_t)m->disp);
		return;
	}
	unsigned mod = wr_mod(m);
	int sib = m->index != X86_NO_REG || (m->base & 7) == X86_RSP;
	x86_put_u8(w, (uint8_t)(mod << 6 | (reg & 7) << 3 | (sib ? 4u : (m->base & 7u))));
	if (m->index != X86_NO_REG)
		x86_put_u8(w, (uint8_t)(wr_scale_bits(m->scale) << 6 | (m->index & 7) << 3 |
		                        (m->base & 7)));
	else if (sib)
		x86_put_u8(w, 0x24); /* SIB: base rsp/r12, no index */
	if (mod == 1)
		x86_put_u8(w, (uint8_t)(int8_t)m->disp);
	else if (mod == 2)
		x86_put_u32(w, (uint32_t)m->disp);
}

/* op with a memory operand: [fs prefix] [REX] op ModRM [SIB] [disp]. */
static void wr_op_mem(struct x86_writer *w, int w64, const char *op, size_t oplen, unsigned reg,
                      struct x86_mem m)
{
	unsigned rex = (w64 ? WR_REX_W : 0) | (reg & 8 ? WR_REX_R : 0);
	if (m.form == X86_DISP_FS || m.form == X86_DISP_GS)
		x86_put_u8(w, m.form == X86_DISP_FS ? 0x64 : 0x65);
	if (m.index != X86_NO_REG && (m.index & 8))
		rex |= WR_REX_X;
	if (m.base != X86_NO_REG && (m.base & 8))
		rex |= WR_REX_B;
	wr_rex(w, rex);
	x86_put(w, op, oplen);
	wr_modrm_mem(w, reg, &m);
}

/* A register in the opcode's low three bits, REX.B for r8-r15. */
static void wr_op_plus_reg(struct x86_writer *w, unsigned rex, uint8_t op, enum x86_gpr r)
{
	wr_rex(w, rex | (wr_num(r) & 8 ? WR_REX_B : 0));
	x86_put_u8(w, (uint8_t)(op | (wr_num(r) & 7)));
}

/* ---- Stack, calls, returns ---- */

void x86_push_reg(struct x86_writer *w, enum x86_gpr r)
{
	wr_op_plus_reg(w, 0, 0x50, r);
}

void x86_pop_reg(struct x86_writer *w, enum x86_gpr r)
{
	wr_op_plus_reg(w, 0, 0x58, r);
}

void x86_push_imm32(struct x86_writer *w, int32_t imm)
{
	x86_put_u8(w, 0x68);
	x86_put_u32(w, (uint32_t)imm);
}

void x86_call_reg(struct x86_writer *w, enum x86_gpr r)
{
	wr_op_rr(w, 0, "\xff", 1, 2, wr_num(r)); /* FF /2 */
}

void x86_ret(struct x86_writer *w)
{
	x86_put_u8(w, 0xc3);
}

/* ---- Direct branches ---- */

/* The rel32 from the end of an instruction of `len` bytes at the pc. */
static void wr_rel32(struct x86_writer *w, size_t len, uint64_t target)
{
	int64_t d = (int64_t)(target - (x86_pc(w) + len));
	if (!x86_fits_rel32(d))
		w->ok = 0;
	x86_put_u32(w, (uint32_t)d);
}

void x86_jmp_rel32(struct x86_writer *w, uint64_t target)
{
	x86_put_u8(w, 0xe9);
	wr_rel32(w, 4, target);
}

void x86_call_rel32(struct x86_writer *w, uint64_t target)
{
	x86_put_u8(w, 0xe8);
	wr_rel32(w, 4, target);
}

void x86_jcc_rel32(struct x86_writer *w, enum x86_cc cc, uint64_t target)
{
	x86_put_u8(w, 0x0f);
	x86_put_u8(w, (uint8_t)(0x80 | cc));
	wr_rel32(w, 4, target);
}

void x86_jcc_rel8(struct x86_writer *w, enum x86_cc cc, uint64_t target)
{
	int64_t d = (int64_t)(target - (x86_pc(w) + 2));
	if (d < -128 || d > 127)
		w->ok = 0;
	x86_put_u8(w, (uint8_t)(0x70 | cc));
	x86_put_u8(w, (uint8_t)(int8_t)d);
}

void x86_jmp_rip_mem(struct x86_writer *w, int32_t disp)
{
	x86_put(w, "\xff\x25", 2); /* FF /4, rip-relative */
	x86_put_u32(w, (uint32_t)disp);
}

void x86_call_rip_mem(struct x86_writer *w, int32_t disp)
{
	x86_put(w, "\xff\x15", 2); /* FF /2, rip-relative */
	x86_put_u32(w, (uint32_t)disp);
}

void x86_jmp_far(struct x86_writer *w, uint64_t target)
{
	if (x86_fits_rel32((int64_t)(target - (x86_pc(w) + 5)))) {
		x86_jmp_rel32(w, target);
		return;
	}
	x86_jmp_rip_mem(w, 0); /* the target is the next 8 bytes */
	x86_put_u64(w, target);
}

/* ---- Moves ---- */

void x86_mov_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_op_rr(w, wr_is64(dst), "\x89", 1, wr_num(src), wr_num(dst));
}

void x86_mov_reg_imm64(struct x86_writer *w, enum x86_gpr dst, uint64_t imm)
{
	wr_op_plus_reg(w, WR_REX_W, 0xb8, dst);
	x86_put_u64(w, imm);
}

void x86_mov_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m)
{
	wr_op_mem(w, wr_is64(dst), "\x8b", 1, wr_num(dst), m);
}

void x86_mov_mem_reg(struct x86_writer *w, struct x86_mem m, enum x86_gpr src)
{
	wr_op_mem(w, wr_is64(src), "\x89", 1, wr_num(src), m);
}

void x86_mov_mem_imm32(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int32_t imm)
{
	wr_op_mem(w, wd == X86_QWORD, "\xc7", 1, 0, m); /* C7 /0 */
	x86_put_u32(w, (uint32_t)imm);
}

void x86_lea_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m)
{
	wr_op_mem(w, wr_is64(dst), "\x8d", 1, wr_num(dst), m);
}

/* ---- Arithmetic and logic ---- */

static void wr_alu_rr(struct x86_writer *w, const char *op, enum x86_gpr dst, enum x86_gpr src)
{
	wr_op_rr(w, wr_is64(dst), op, 1, wr_num(src), wr_num(dst));
}

void x86_add_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_alu_rr(w, "\x01", dst, src);
}

void x86_or_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_alu_rr(w, "\x09", dst, src);
}

void x86_and_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_alu_rr(w, "\x21", dst, src);
}

void x86_cmp_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_alu_rr(w, "\x39", dst, src);
}

void x86_test_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_alu_rr(w, "\x85", dst, src);
}

void x86_add_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m)
{
	wr_op_mem(w, wr_is64(dst), "\x03", 1, wr_num(dst), m);
}

void x86_sub_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m)
{
	wr_op_mem(w, wr_is64(dst), "\x2b", 1, wr_num(dst), m);
}

void x86_and_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m)
{
	wr_op_mem(w, wr_is64(dst), "\x23", 1, wr_num(dst), m);
}

void x86_cmp_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m)
{
	wr_op_mem(w, wr_is64(dst), "\x3b", 1, wr_num(dst), m);
}

void x86_cmp_mem_reg(struct x86_writer *w, struct x86_mem m, enum x86_gpr src)
{
	wr_op_mem(w, wr_is64(src), "\x39", 1, wr_num(src), m);
}

/* Group 1 (83 ib / 81 id): the operation in ModRM.reg. */
#define WR_G1_ADD 0
#define WR_G1_AND 4
#define WR_G1_SUB 5
#define WR_G1_CMP 7

static void wr_g1_reg_imm8(struct x86_writer *w, unsigned ext, enum x86_gpr dst, int8_t imm)
{
	wr_op_rr(w, wr_is64(dst), "\x83", 1, ext, wr_num(dst));
	x86_put_u8(w, (uint8_t)imm);
}

void x86_add_reg_imm8(struct x86_writer *w, enum x86_gpr dst, int8_t imm)
{
	wr_g1_reg_imm8(w, WR_G1_ADD, dst, imm);
}

void x86_and_reg_imm8(struct x86_writer *w, enum x86_gpr dst, int8_t imm)
{
	wr_g1_reg_imm8(w, WR_G1_AND, dst, imm);
}

void x86_cmp_reg_imm8(struct x86_writer *w, enum x86_gpr dst, int8_t imm)
{
	wr_g1_reg_imm8(w, WR_G1_CMP, dst, imm);
}

void x86_cmp_reg_imm32(struct x86_writer *w, enum x86_gpr dst, int32_t imm)
{
	wr_op_rr(w, wr_is64(dst), "\x81", 1, WR_G1_CMP, wr_num(dst));
	x86_put_u32(w, (uint32_t)imm);
}

static void wr_g1_mem_imm8(struct x86_writer *w, unsigned ext, enum x86_width wd, struct x86_mem m,
                           int8_t imm)
{
	wr_op_mem(w, wd == X86_QWORD, "\x83", 1, ext, m);
	x86_put_u8(w, (uint8_t)imm);
}

void x86_add_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int8_t imm)
{
	wr_g1_mem_imm8(w, WR_G1_ADD, wd, m, imm);
}

void x86_sub_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int8_t imm)
{
	wr_g1_mem_imm8(w, WR_G1_SUB, wd, m, imm);
}

void x86_cmp_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int8_t imm)
{
	wr_g1_mem_imm8(w, WR_G1_CMP, wd, m, imm);
}

void x86_cmp_mem_imm32(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int32_t imm)
{
	wr_op_mem(w, wd == X86_QWORD, "\x81", 1, WR_G1_CMP, m);
	x86_put_u32(w, (uint32_t)imm);
}

void x86_test_reg8_imm8(struct x86_writer *w, enum x86_gpr r, uint8_t imm)
{
	wr_op_rr(w, 0, "\xf6", 1, 0, wr_num(r) & 3); /* F6 /0 ib: al, cl, dl, bl */
	x86_put_u8(w, imm);
}

void x86_shl_reg_imm8(struct x86_writer *w, enum x86_gpr r, uint8_t n)
{
	wr_op_rr(w, wr_is64(r), "\xc1", 1, 4, wr_num(r)); /* C1 /4 ib */
	x86_put_u8(w, n);
}

void x86_shr_reg_imm8(struct x86_writer *w, enum x86_gpr r, uint8_t n)
{
	wr_op_rr(w, wr_is64(r), "\xc1", 1, 5, wr_num(r)); /* C1 /5 ib */
	x86_put_u8(w, n);
}

void x86_dec_reg(struct x86_writer *w, enum x86_gpr r)
{
	wr_op_rr(w, wr_is64(r), "\xff", 1, 1, wr_num(r)); /* FF /1 */
}

void x86_bt_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src)
{
	wr_op_rr(w, wr_is64(dst), "\x0f\xa3", 2, wr_num(src), wr_num(dst));
}

void x86_bts_reg_imm8(struct x86_writer *w, enum x86_gpr dst, uint8_t bit)
{
	wr_op_rr(w, wr_is64(dst), "\x0f\xba", 2, 5, wr_num(dst)); /* 0F BA /5 ib */
	x86_put_u8(w, bit);
}

void x86_bts_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, uint8_t bit)
{
	wr_op_mem(w, wd == X86_QWORD, "\x0f\xba", 2, 5, m);
	x86_put_u8(w, bit);
}

/* ---- Other ---- */

void x86_rdtsc(struct x86_writer *w)
{
	x86_put(w, "\x0f\x31", 2);
}

void x86_prefetcht0(struct x86_writer *w, struct x86_mem m)
{
	wr_op_mem(w, 0, "\x0f\x18", 2, 1, m); /* 0F 18 /1 */
}

void x86_movups_xmm_mem(struct x86_writer *w, unsigned xmm, struct x86_mem m)
{
	wr_op_mem(w, 0, "\x0f\x10", 2, xmm, m);
}

void x86_movups_mem_xmm(struct x86_writer *w, struct x86_mem m, unsigned xmm)
{
	wr_op_mem(w, 0, "\x0f\x11", 2, xmm, m);
}
