/*
 * The switch-table reader's view of an instruction (struct x86_sw_insn):
 * from capstone's detail (x86_sw_from_cs) or from the compact decoder
 * (x86_sw_fast).
 *
 * Role: x86_switch.c decodes every instruction of a function that has a
 * table-shaped indirect jmp, and needs for each which general registers
 * it writes, whether it transfers control, and for a few instructions
 * (mov, movzx/movsx/movsxd, cdqe, lea, add, cmp, ja/jae, pop, ret, jmp)
 * their operands. Capstone with detail costs ~3 500 instructions per
 * instruction (libc's cold analysis: 104 M of 164 M); the compact
 * decoder reads the same facts from the bytes for the integer forms
 * compilers emit and declines everything else (SSE/AVX, x87, string ops,
 * mul/div, rare prefixes...), which then goes to capstone.
 *
 * Exactness: for every form it accepts, the result must be field for
 * field what x86_sw_from_cs() makes of capstone 4's decoding, quirks
 * included (implicit writes, immediate sign extension, operand sizes),
 * so the reader's verdicts cannot change. test_hook_len.c checks this
 * instruction by instruction over whole libraries, fuzz_hook_arch over
 * arbitrary bytes, test_hook_verdicts.c the resulting verdicts.
 *
 * Threads: any; pure functions of their input.
 */
#include <stddef.h>
#include <string.h>

#include "x86_internal.h"

/* The 16 general registers, each with its 64/32/16/8-bit names. */
static const x86_reg sw_fams[16][5] = {
    {X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH},
    {X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH},
    {X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH},
    {X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH},
    {X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, X86_REG_INVALID},
    {X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, X86_REG_INVALID},
    {X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_INVALID},
    {X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_INVALID},
    {X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_INVALID},
    {X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, X86_REG_INVALID},
    {X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, X86_REG_INVALID},
    {X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, X86_REG_INVALID},
    {X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, X86_REG_INVALID},
    {X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, X86_REG_INVALID},
    {X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, X86_REG_INVALID},
    {X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, X86_REG_INVALID},
};

/* The inverse: family and width of a register, 0 for none (bit 7 set,
 * family in bits 3-6, width in bits 0-2). */
#define SW_F(name, fam, w) [X86_REG_##name] = (uint8_t)(0x80 | (fam) << 3 | (w))
static const uint8_t sw_regfam[X86_REG_ENDING] = {
    SW_F(RAX, 0, 0),   SW_F(EAX, 0, 1),   SW_F(AX, 0, 2),    SW_F(AL, 0, 3),    SW_F(AH, 0, 4),
    SW_F(RCX, 1, 0),   SW_F(ECX, 1, 1),   SW_F(CX, 1, 2),    SW_F(CL, 1, 3),    SW_F(CH, 1, 4),
    SW_F(RDX, 2, 0),   SW_F(EDX, 2, 1),   SW_F(DX, 2, 2),    SW_F(DL, 2, 3),    SW_F(DH, 2, 4),
    SW_F(RBX, 3, 0),   SW_F(EBX, 3, 1),   SW_F(BX, 3, 2),    SW_F(BL, 3, 3),    SW_F(BH, 3, 4),
    SW_F(RSP, 4, 0),   SW_F(ESP, 4, 1),   SW_F(SP, 4, 2),    SW_F(SPL, 4, 3),   SW_F(RBP, 5, 0),
    SW_F(EBP, 5, 1),   SW_F(BP, 5, 2),    SW_F(BPL, 5, 3),   SW_F(RSI, 6, 0),   SW_F(ESI, 6, 1),
    SW_F(SI, 6, 2),    SW_F(SIL, 6, 3),   SW_F(RDI, 7, 0),   SW_F(EDI, 7, 1),   SW_F(DI, 7, 2),
    SW_F(DIL, 7, 3),   SW_F(R8, 8, 0),    SW_F(R8D, 8, 1),   SW_F(R8W, 8, 2),   SW_F(R8B, 8, 3),
    SW_F(R9, 9, 0),    SW_F(R9D, 9, 1),   SW_F(R9W, 9, 2),   SW_F(R9B, 9, 3),   SW_F(R10, 10, 0),
    SW_F(R10D, 10, 1), SW_F(R10W, 10, 2), SW_F(R10B, 10, 3), SW_F(R11, 11, 0),  SW_F(R11D, 11, 1),
    SW_F(R11W, 11, 2), SW_F(R11B, 11, 3), SW_F(R12, 12, 0),  SW_F(R12D, 12, 1), SW_F(R12W, 12, 2),
    SW_F(R12B, 12, 3), SW_F(R13, 13, 0),  SW_F(R13D, 13, 1), SW_F(R13W, 13, 2), SW_F(R13B, 13, 3),
    SW_F(R14, 14, 0),  SW_F(R14D, 14, 1), SW_F(R14W, 14, 2), SW_F(R14B, 14, 3), SW_F(R15, 15, 0),
    SW_F(R15D, 15, 1), SW_F(R15W, 15, 2), SW_F(R15B, 15, 3),
};
#undef SW_F

int x86_sw_family(x86_reg r, int *width)
{
	unsigned e = (unsigned)r < X86_REG_ENDING ? sw_regfam[r] : 0;
	if (!e)
		return -1;
	if (width)
		*width = (int)(e & 7);
	return (int)((e >> 3) & 15);
}

/* The instruction ids the reader tests for; every other id is kept as
 * X86_INS_INVALID. */
static uint16_t sw_id(unsigned id)
{
	switch (id) {
	case X86_INS_POP:
	case X86_INS_RET:
	case X86_INS_JMP:
	case X86_INS_ADD:
	case X86_INS_MOVZX:
	case X86_INS_CMP:
	case X86_INS_JA:
	case X86_INS_JAE:
	case X86_INS_MOVSXD:
	case X86_INS_MOVSX:
	case X86_INS_CDQE:
	case X86_INS_MOV:
	case X86_INS_LEA:
	case X86_INS_XBEGIN:
	case X86_INS_UD2:
	case X86_INS_HLT:
		return (uint16_t)id;
	default:
		return X86_INS_INVALID;
	}
}

/* All zero, padding included: copied over an operand instead of memset,
 * which gcc turns into `rep stos` for 48 bytes (a microcoded start-up on
 * every decoded instruction); a constant-size copy is three 16-byte moves. */
static const cs_x86_op sw_zero_op;

static void sw_zero(cs_x86_op *o)
{
	memcpy(o, &sw_zero_op, sizeof(*o));
}

static void sw_write(struct x86_sw_insn *in, x86_reg r)
{
	int w = -1, f = x86_sw_family(r, &w);
	if (f < 0)
		return;
	in->wfams |= 1u << f;
	in->wbits[f] |= (uint8_t)(1u << w);
}

/* The canonical form (see x86_internal.h): drops what the reader never
 * reads, so both decoders agree byte for byte on what it does read. */
static void sw_canon(struct x86_sw_insn *in)
{
	if (in->id == X86_INS_INVALID && in->grp == 0) {
		in->op_count = 0;
		in->addr_size = 0;
	}
	if (in->op_count > 2)
		in->op_count = 2;
	if (in->id != X86_INS_JMP)
		in->modrm = 0;
	for (unsigned k = in->op_count; k < 2; k++)
		sw_zero(&in->op[k]);
}

void x86_sw_from_cs(struct x86_sw_insn *in, const cs_insn *ci)
{
	const cs_detail *d = ci->detail;
	const cs_x86 *x = &d->x86;
	static const uint8_t grps[][2] = {
	    {CS_GRP_JUMP, X86_SW_G_JUMP}, {CS_GRP_CALL, X86_SW_G_CALL},
	    {CS_GRP_RET, X86_SW_G_RET},   {CS_GRP_INT, X86_SW_G_INT},
	    {CS_GRP_IRET, X86_SW_G_IRET}, {CS_GRP_BRANCH_RELATIVE, X86_SW_G_REL}};

	memset(in, 0, sizeof(*in));
	in->address = ci->address;
	in->size = ci->size;
	in->id = sw_id(ci->id);
	in->op_count = x->op_count;
	in->addr_size = x->addr_size;
	in->modrm = x->modrm;
	for (unsigned g = 0; g < d->groups_count; g++)
		for (unsigned k = 0; k < sizeof(grps) / sizeof(grps[0]); k++)
			if (d->groups[g] == grps[k][0])
				in->grp |= grps[k][1];
	for (unsigned k = 0; k < 2 && k < x->op_count; k++) {
		const cs_x86_op *s = &x->operands[k];
		cs_x86_op *o = &in->op[k];
		o->type = s->type;
		o->size = s->size;
		if (s->type == X86_OP_REG)
			o->reg = s->reg;
		else if (s->type == X86_OP_IMM)
			o->imm = s->imm;
		else if (s->type == X86_OP_MEM)
			o->mem = s->mem;
	}
	/* Written registers: explicit operands with write access and the
	 * implicit writes (what cs_regs_access() computes, which costs
	 * microseconds in capstone 4). */
	for (unsigned k = 0; k < d->regs_write_count; k++)
		sw_write(in, (x86_reg)d->regs_write[k]);
	for (unsigned k = 0; k < x->op_count; k++)
		if (x->operands[k].type == X86_OP_REG && (x->operands[k].access & CS_AC_WRITE))
			sw_write(in, x->operands[k].reg);
	sw_canon(in);
}

/* ---- The compact decoder ---- */

/* What the prefixes and REX say. */
struct sw_pfx {
	unsigned n;     /* bytes of prefixes and REX */
	unsigned o16;   /* 66 */
	unsigned f3;    /* f3 */
	unsigned other; /* f2, 2e, 3e */
	unsigned rex;   /* a REX byte is present */
	unsigned w, r, x, b;
	x86_reg seg; /* fs/gs override, else invalid */
};

/* General register number num (0..15) at osz bytes. */
static x86_reg sw_gpr(unsigned num, unsigned osz, unsigned rex)
{
	if (osz == 1)
		return !rex && num >= 4 && num < 8 ? sw_fams[num - 4][4] : sw_fams[num][3];
	return sw_fams[num][osz == 8 ? 0 : osz == 4 ? 1 : 2];
}

static void sw_reg_op(cs_x86_op *o, x86_reg r, unsigned size)
{
	sw_zero(o);
	o->type = X86_OP_REG;
	o->reg = r;
	o->size = (uint8_t)size;
}

static void sw_imm_op(cs_x86_op *o, int64_t v, unsigned size)
{
	sw_zero(o);
	o->type = X86_OP_IMM;
	o->imm = v;
	o->size = (uint8_t)size;
}

/* The ModRM r/m operand at m (mod, SIB, displacement as x86_fast_len
 * measured them), osz bytes wide. A rip-relative operand keeps its raw
 * displacement, as capstone reports it. */
static void sw_rm_op(cs_x86_op *o, const uint8_t *m, const struct sw_pfx *px, unsigned osz)
{
	unsigned mod = m[0] >> 6, rm = m[0] & 7;
	const uint8_t *dp = m + 1;

	if (mod == 3) {
		sw_reg_op(o, sw_gpr(rm | px->b << 3, osz, px->rex), osz);
		return;
	}
	sw_zero(o);
	o->type = X86_OP_MEM;
	o->size = (uint8_t)osz;
	o->mem.segment = px->seg;
	o->mem.base = X86_REG_INVALID;
	o->mem.index = X86_REG_INVALID;
	o->mem.scale = 1;
	if (rm == 4) {
		uint8_t sib = m[1];
		unsigned idx = ((sib >> 3) & 7) | px->x << 3, base = (sib & 7) | px->b << 3;
		dp = m + 2;
		o->mem.scale = 1 << (sib >> 6);
		if (idx != 4)
			o->mem.index = sw_fams[idx][0];
		if ((sib & 7) == 5 && mod == 0) {
			int32_t d;
			memcpy(&d, dp, 4);
			o->mem.disp = d;
			return;
		}
		o->mem.base = sw_fams[base][0];
	} else if (rm == 5 && mod == 0) {
		int32_t d;
		memcpy(&d, dp, 4);
		o->mem.base = X86_REG_RIP;
		o->mem.disp = d;
		return;
	} else {
		o->mem.base = sw_fams[rm | px->b << 3][0];
	}
	if (mod == 1) {
		o->mem.disp = (int8_t)dp[0];
	} else if (mod == 2) {
		int32_t d;
		memcpy(&d, dp, 4);
		o->mem.disp = d;
	}
}

/* Writes the r/m operand's register when it is one. */
static void sw_write_rm(struct x86_sw_insn *in, const uint8_t *m, const struct sw_pfx *px,
                        unsigned osz)
{
	if ((m[0] >> 6) == 3)
		sw_write(in, sw_gpr((m[0] & 7) | px->b << 3, osz, px->rex));
}

static x86_reg sw_reg_field(const uint8_t *m, const struct sw_pfx *px, unsigned osz)
{
	return sw_gpr(((m[0] >> 3) & 7) | px->r << 3, osz, px->rex);
}

/* An immediate of isz bytes at p for an operand of osz bytes, as
 * capstone 4 reports it: an imm8 that the instruction sign-extends (83,
 * 6B) sign-extended to 64 bits, an imm32 of a 64-bit operation too; an
 * immediate as wide as its operand (8, 16, 32 bits) zero-extended. */
static int64_t sw_imm(const uint8_t *p, unsigned isz, unsigned osz)
{
	if (isz == 1)
		return osz == 1 ? (int64_t)p[0] : (int64_t)(int8_t)p[0];
	if (isz == 2) {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	uint32_t v;
	memcpy(&v, p, 4);
	return osz == 8 ? (int64_t)(int32_t)v : (int64_t)v;
}

/* Two-byte map (0F xx). o: the 0F. 0: declined. */
static int sw_fast_0f(struct x86_sw_insn *in, const uint8_t *o, const struct sw_pfx *px,
                      unsigned osz, size_t n)
{
	const uint8_t op = o[1], *m = o + 2;

	if (op == 0x1f) { /* nop m (padding, also with 66/2e prefixes); capstone
		           * 4 rejects the register form and the other /r */
		return !px->f3 && !px->rex && (m[0] & 0xf8) != 0xc0 && ((m[0] >> 3) & 7) == 0;
	}
	if (op == 0x1e && px->n == 1 && px->f3 && o[2] == 0xfa) {
		return 1; /* endbr64, f3 its only prefix (capstone 4 rejects f3 f3) */
	}
	if (px->f3 || px->other)
		return 0;
	if (op >= 0x80 && op <= 0x8f) { /* jcc rel32 (x86_fast_len: never prefixed) */
		int32_t d;
		memcpy(&d, o + 2, 4);
		in->id = op == 0x87 ? X86_INS_JA : op == 0x83 ? X86_INS_JAE : X86_INS_INVALID;
		in->grp = X86_SW_G_JUMP | X86_SW_G_REL;
		in->op_count = 1;
		in->addr_size = 8;
		sw_imm_op(&in->op[0], (int64_t)(in->address + n + (uint64_t)(int64_t)d), 8);
		return 1;
	}
	if (op >= 0x40 && op <= 0x4f) { /* cmovcc r, r/m */
		if (px->o16)
			return 0;
		sw_write(in, sw_reg_field(m, px, osz));
		return 1;
	}
	if (op >= 0x90 && op <= 0x9f) { /* setcc r/m8 */
		if (px->o16 || ((m[0] >> 3) & 7))
			return 0;
		sw_write_rm(in, m, px, 1);
		return 1;
	}
	switch (op) {
	case 0xaf: /* imul r, r/m */
	case 0xbc: /* bsf */
	case 0xbd: /* bsr */
		if (px->o16)
			return 0;
		sw_write(in, sw_reg_field(m, px, osz));
		return 1;
	case 0xa3: /* bt r/m, r */
		return !px->o16;
	case 0xb6: /* movzx r, r/m8 */
	case 0xb7: /* movzx r, r/m16 */
	case 0xbe: /* movsx r, r/m8 */
	case 0xbf: /* movsx r, r/m16 */
		if (px->o16)
			return 0;
		in->id = op < 0xb8 ? X86_INS_MOVZX : X86_INS_MOVSX;
		in->op_count = 2;
		in->addr_size = 8;
		sw_reg_op(&in->op[0], sw_reg_field(m, px, osz), osz);
		sw_rm_op(&in->op[1], m, px, (op & 1) ? 2 : 1);
		sw_write(in, in->op[0].reg);
		return 1;
	default:
		return 0;
	}
}

/* The legacy prefixes the loop in sw_prefixes() looks at. */
static const uint8_t sw_is_pfx[256] = {
    [0x66] = 1, [0xf3] = 1, [0x64] = 1, [0x65] = 1, [0xf2] = 1, [0x2e] = 1, [0x3e] = 1};

/* The legacy prefixes and REX of the instruction at b into px; 0 when
 * they fill the `left` bytes. */
static int sw_prefixes(const uint8_t *b, size_t left, struct sw_pfx *px)
{
	/* Most instructions have no legacy prefix: one table load skips
	 * the loop, which would stop at once on such a byte. */
	for (; px->n < left && px->n < 4 && sw_is_pfx[b[0]]; px->n++) {
		uint8_t c = b[px->n];
		if (c == 0x66)
			px->o16 = 1;
		else if (c == 0xf3)
			px->f3 = 1;
		else if (c == 0x64 && px->seg == X86_REG_INVALID)
			px->seg = X86_REG_FS;
		else if (c == 0x65 && px->seg == X86_REG_INVALID)
			px->seg = X86_REG_GS;
		else if (c == 0xf2 || c == 0x2e || c == 0x3e)
			px->other = 1;
		else
			break;
	}
	if (px->n >= left)
		return 0;
	if ((b[px->n] & 0xf0) == 0x40) {
		uint8_t r = b[px->n++];
		px->rex = 1;
		px->w = (r >> 3) & 1;
		px->r = (r >> 2) & 1;
		px->x = (r >> 1) & 1;
		px->b = r & 1;
	}
	return px->n < left;
}

/* One instruction being decoded: its bytes b (n long), the opcode o
 * after the prefixes, its ModRM m (when it has one), the operand size. */
struct sw_dec {
	struct x86_sw_insn *in;
	struct sw_pfx px;
	const uint8_t *b, *o, *m, *imm_end;
	size_t n;
	unsigned osz;
	uint64_t pc;
};

/* A named instruction with `count` operands (filled by the caller). */
static void sw_named(struct x86_sw_insn *in, uint16_t id, uint8_t count)
{
	in->id = id;
	in->op_count = count;
	in->addr_size = 8;
}

/* A relative branch to pc + n + d (op[0], the target). */
static void sw_rel(struct sw_dec *d, uint16_t id, uint8_t grp, int64_t rel)
{
	sw_named(d->in, id, 1);
	d->in->grp = grp;
	sw_imm_op(&d->in->op[0], (int64_t)(d->pc + d->n + (uint64_t)rel), 8);
}

/* 00-3D: add or adc sbb and sub xor cmp, in their six forms. */
static int sw_op_alu(struct sw_dec *d, uint8_t op)
{
	struct x86_sw_insn *in = d->in;
	unsigned alu = op >> 3, form = op & 7, sz = (form & 1) ? d->osz : 1;
	int w = alu != 7;
	if (alu == 0 || alu == 7)
		sw_named(in, alu == 0 ? X86_INS_ADD : X86_INS_CMP, 2);
	if (form <= 1) {
		sw_rm_op(&in->op[0], d->m, &d->px, sz);
		sw_reg_op(&in->op[1], sw_reg_field(d->m, &d->px, sz), sz);
		if (w)
			sw_write_rm(in, d->m, &d->px, sz);
	} else if (form <= 3) {
		sw_reg_op(&in->op[0], sw_reg_field(d->m, &d->px, sz), sz);
		sw_rm_op(&in->op[1], d->m, &d->px, sz);
		if (w)
			sw_write(in, in->op[0].reg);
	} else {
		unsigned isz = sz == 8 ? 4 : sz;
		sw_reg_op(&in->op[0], sw_gpr(0, sz, d->px.rex), sz);
		sw_imm_op(&in->op[1], sw_imm(d->imm_end - isz, isz, sz), sz);
		if (w)
			sw_write(in, in->op[0].reg);
	}
	return 1;
}

/* 50-5F: push / pop r64. */
static int sw_op_push_pop(struct sw_dec *d, uint8_t op)
{
	if (d->px.o16)
		return 0;
	if (op >= 0x58) {
		sw_named(d->in, X86_INS_POP, 1);
		sw_reg_op(&d->in->op[0], sw_fams[(op & 7) | d->px.b << 3][0], 8);
	}
	sw_write(d->in, X86_REG_RSP);
	if (op >= 0x58)
		sw_write(d->in, d->in->op[0].reg);
	return 1;
}

/* B0-BF: mov r8, imm8 / mov r32, imm32 / movabs r64, imm64. */
static int sw_op_mov_imm(struct sw_dec *d, uint8_t op)
{
	struct x86_sw_insn *in = d->in;
	if (op < 0xb8) {
		sw_named(in, X86_INS_MOV, 2);
		sw_reg_op(&in->op[0], sw_gpr((op & 7) | d->px.b << 3, 1, d->px.rex), 1);
		sw_imm_op(&in->op[1], sw_imm(d->b + d->n - 1, 1, 1), 1);
		sw_write(in, in->op[0].reg);
		return 1;
	}
	x86_reg r = sw_gpr((op & 7) | d->px.b << 3, d->osz, d->px.rex);
	if (d->px.o16)
		return 0;
	if (!d->px.w) {
		sw_named(in, X86_INS_MOV, 2);
		sw_reg_op(&in->op[0], r, 4);
		sw_imm_op(&in->op[1], sw_imm(d->b + d->n - 4, 4, 4), 4);
	}
	sw_write(in, r);
	return 1;
}

/* 88-8B, C6, C7: mov r/m, r / mov r, r/m / mov r/m, imm (x86_fast_len:
 * C6/C7 /0 only). */
static int sw_op_mov(struct sw_dec *d, uint8_t op)
{
	struct x86_sw_insn *in = d->in;
	sw_named(in, X86_INS_MOV, 2);
	if (op >= 0xc6) {
		unsigned sz = op == 0xc7 ? d->osz : 1, isz = sz == 8 ? 4 : sz;
		sw_rm_op(&in->op[0], d->m, &d->px, sz);
		sw_imm_op(&in->op[1], sw_imm(d->imm_end - isz, isz, sz), sz);
		sw_write_rm(in, d->m, &d->px, sz);
		return 1;
	}
	unsigned sz = (op & 1) ? d->osz : 1;
	if (op < 0x8a) {
		sw_rm_op(&in->op[0], d->m, &d->px, sz);
		sw_reg_op(&in->op[1], sw_reg_field(d->m, &d->px, sz), sz);
		sw_write_rm(in, d->m, &d->px, sz);
	} else {
		sw_reg_op(&in->op[0], sw_reg_field(d->m, &d->px, sz), sz);
		sw_rm_op(&in->op[1], d->m, &d->px, sz);
		sw_write(in, in->op[0].reg);
	}
	return 1;
}

/* 63 movsxd r64, r/m32 and 8D lea r, m: a register from r/m. */
static int sw_op_load(struct sw_dec *d, uint8_t op)
{
	struct x86_sw_insn *in = d->in;
	if (op == 0x63 ? !d->px.w : d->px.o16 != 0)
		return 0;
	unsigned sz = op == 0x63 ? 8 : d->osz;
	sw_named(in, op == 0x63 ? X86_INS_MOVSXD : X86_INS_LEA, 2);
	sw_reg_op(&in->op[0], sw_reg_field(d->m, &d->px, sz), sz);
	sw_rm_op(&in->op[1], d->m, &d->px, op == 0x63 ? 4 : sz);
	sw_write(in, in->op[0].reg);
	return 1;
}

/* 80, 81, 83: group 1, op r/m, imm (add and cmp named). */
static int sw_op_grp1(struct sw_dec *d, uint8_t op, unsigned sub)
{
	struct x86_sw_insn *in = d->in;
	unsigned sz = op == 0x80 ? 1 : d->osz, isz = op == 0x81 ? (sz == 8 ? 4 : sz) : 1;
	if (sub == 0 || sub == 7) {
		sw_named(in, sub == 0 ? X86_INS_ADD : X86_INS_CMP, 2);
		sw_rm_op(&in->op[0], d->m, &d->px, sz);
		sw_imm_op(&in->op[1], sw_imm(d->imm_end - isz, isz, sz), sz);
	}
	if (sub != 7)
		sw_write_rm(in, d->m, &d->px, sz);
	return 1;
}

/* E8 call rel32, E9 / EB jmp rel32 / rel8, 70-7F jcc rel8. */
static int sw_op_branch(struct sw_dec *d, uint8_t op)
{
	const uint8_t *b = d->b;
	size_t n = d->n;
	int32_t d32 = 0;
	if (op >= 0x70 && op <= 0x7f) {
		uint16_t id = op == 0x77 ? X86_INS_JA : op == 0x73 ? X86_INS_JAE : X86_INS_INVALID;
		sw_rel(d, id, X86_SW_G_JUMP | X86_SW_G_REL, (int8_t)b[n - 1]);
		return 1;
	}
	memcpy(&d32, b + n - 4, op == 0xeb ? 0 : 4);
	if (op == 0xe8) {
		sw_rel(d, X86_INS_INVALID, X86_SW_G_CALL | X86_SW_G_REL, d32);
		sw_write(d->in, X86_REG_RSP);
		return 1;
	}
	sw_rel(d, X86_INS_JMP, X86_SW_G_JUMP | X86_SW_G_REL, op == 0xeb ? (int8_t)b[n - 1] : d32);
	return 1;
}

/* C3 ret, C9 leave. */
static int sw_op_ret_leave(struct sw_dec *d, uint8_t op)
{
	if (d->px.rex || d->px.o16)
		return 0;
	if (op == 0xc3) {
		sw_named(d->in, X86_INS_RET, 0);
		d->in->grp = X86_SW_G_RET;
	} else {
		sw_write(d->in, X86_REG_RBP);
	}
	sw_write(d->in, X86_REG_RSP);
	return 1;
}

/* F6, F7 (test / not / neg; mul, div: implicit rax:rdx, capstone), FE,
 * FF (inc, dec, call r/m, jmp r/m, push r/m). */
static int sw_op_unary(struct sw_dec *d, uint8_t op, unsigned sub)
{
	struct x86_sw_insn *in = d->in;
	if (op <= 0xf7) {
		if (sub == 1 || sub >= 4)
			return 0;
		if (sub >= 2)
			sw_write_rm(in, d->m, &d->px, op == 0xf7 ? d->osz : 1);
		return 1;
	}
	if (op == 0xfe || sub <= 1) {
		sw_write_rm(in, d->m, &d->px, op == 0xfe ? 1 : d->osz);
		return 1;
	}
	if ((sub != 2 && sub != 4 && sub != 6) || d->px.o16)
		return 0;
	if (sub == 6) {
		sw_write(in, X86_REG_RSP);
		return 1;
	}
	sw_named(in, sub == 4 ? X86_INS_JMP : X86_INS_INVALID, 1);
	in->grp = sub == 4 ? X86_SW_G_JUMP : X86_SW_G_CALL;
	if (sub == 4)
		in->modrm = d->m[0];
	sw_rm_op(&in->op[0], d->m, &d->px, 8);
	if (sub == 2)
		sw_write(in, X86_REG_RSP);
	return 1;
}

/* The rest of the one-byte map the reader meets: what they write. */
static int sw_op_other(struct sw_dec *d, uint8_t op)
{
	struct x86_sw_insn *in = d->in;
	struct sw_pfx *px = &d->px;
	switch (op) {
	case 0x68: /* push imm */
	case 0x6a:
		if (!px->o16)
			sw_write(in, X86_REG_RSP);
		return !px->o16;
	case 0x69: /* imul r, r/m, imm */
	case 0x6b:
		if (!px->o16)
			sw_write(in, sw_reg_field(d->m, px, d->osz));
		return !px->o16;
	case 0x84: /* test r/m, r */
	case 0x85:
		return 1;
	case 0xa8: /* test al/eax, imm: capstone 4 says al/eax is written */
	case 0xa9:
		sw_write(in, sw_gpr(0, op == 0xa8 ? 1 : d->osz, px->rex));
		return 1;
	case 0x90: /* nop (with REX.B: xchg, with 66 or f3 another name) */
		return !px->rex && !px->o16;
	case 0x98: /* cdqe / cwde */
	case 0x99: /* cqo / cdq (capstone 4: writes rax / eax too) */
		if (px->o16)
			return 0;
		if (op == 0x98)
			sw_named(in, px->w ? X86_INS_CDQE : X86_INS_INVALID, 0);
		sw_write(in, px->w ? X86_REG_RAX : X86_REG_EAX);
		if (op == 0x99)
			sw_write(in, px->w ? X86_REG_RDX : X86_REG_EDX);
		return 1;
	case 0xc0: /* shifts and rotates */
	case 0xc1:
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		sw_write_rm(in, d->m, px, (op & 1) ? d->osz : 1);
		return 1;
	default:
		return 0;
	}
}

/* The one-byte map by opcode group. */
static int sw_op(struct sw_dec *d)
{
	uint8_t op = d->o[0];
	/* ModRM.reg, for the forms that have a ModRM byte (then inside n). */
	unsigned sub = d->n > d->px.n + 1 ? (d->m[0] >> 3) & 7 : 0;
	if (op < 0x40 && (op & 7) <= 5)
		return sw_op_alu(d, op);
	if (op >= 0x50 && op <= 0x5f)
		return sw_op_push_pop(d, op);
	if ((op >= 0x70 && op <= 0x7f) || op == 0xe8 || op == 0xe9 || op == 0xeb)
		return sw_op_branch(d, op);
	if (op >= 0xb0 && op <= 0xbf)
		return sw_op_mov_imm(d, op);
	if ((op >= 0x88 && op <= 0x8b) || op == 0xc6 || op == 0xc7)
		return sw_op_mov(d, op);
	if (op == 0x63 || op == 0x8d)
		return sw_op_load(d, op);
	if (op == 0x80 || op == 0x81 || op == 0x83)
		return sw_op_grp1(d, op, sub);
	if (op == 0xc3 || op == 0xc9)
		return sw_op_ret_leave(d, op);
	if (op == 0xf6 || op == 0xf7 || op == 0xfe || op == 0xff)
		return sw_op_unary(d, op, sub);
	return sw_op_other(d, op);
}

/* The instruction's length from x86_fast_len; jmp r/m (FF /4), which it
 * leaves to capstone, measured as FF /2 with the same ModRM operand. */
static size_t sw_len(const uint8_t *b, size_t left, const struct sw_pfx *px)
{
	struct x86_len_info li;
	size_t n = x86_fast_len(b, left, &li);
	const uint8_t *o = b + px->n;
	if (!n && o[0] == 0xff && px->n + 1 < left && ((o[1] >> 3) & 7) == 4) {
		uint8_t t[16];
		size_t k = left < sizeof(t) ? left : sizeof(t);
		memcpy(t, b, k);
		t[px->n + 1] = (uint8_t)((t[px->n + 1] & 0xc7) | (2 << 3));
		n = x86_fast_len(t, k, &li);
	}
	return n;
}

static size_t sw_fast(const uint8_t *b, size_t left, uint64_t pc, struct x86_sw_insn *in)
{
	struct sw_dec d = {.in = in, .px = {.seg = X86_REG_INVALID}, .b = b, .pc = pc};

	/* Only the fields before the operands: every operand below op_count
	 * is written whole by sw_reg_op/sw_imm_op/sw_rm_op before it is
	 * counted, and sw_canon() zeroes the others, so the record is as
	 * canonical as with the whole 136 bytes cleared. */
	memset(in, 0, offsetof(struct x86_sw_insn, op));
	in->address = pc;
	if (!sw_prefixes(b, left, &d.px) || !(d.n = sw_len(b, left, &d.px)))
		return 0;
	in->size = (uint16_t)d.n;
	d.o = b + d.px.n;
	d.m = d.o + 1;
	d.osz = d.px.w ? 8 : d.px.o16 ? 2 : 4;
	d.imm_end = b + d.n;
	/* A segment override is kept only on memory operands of named
	 * instructions; elsewhere (and where capstone would print something
	 * else) let capstone decide. */
	if (d.o[0] == 0x0f)
		return sw_fast_0f(in, d.o, &d.px, d.osz, d.n) ? d.n : 0;
	if (d.px.f3 || d.px.other)
		return 0;
	return sw_op(&d) ? d.n : 0;
}

size_t x86_sw_fast(const uint8_t *b, size_t left, uint64_t pc, struct x86_sw_insn *in)
{
	size_t n = sw_fast(b, left, pc, in);
	if (n)
		sw_canon(in);
	return n;
}
