/*
 * The x86_64 code writer: named instruction writers over a bounded
 * buffer, in the manner of frida-gum's GumX86Writer, so that the
 * emitter (x86_emit.c) and the relocator (x86_reloc.c) read like the
 * assembly they produce:
 *
 *     x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSP, k));     mov rdi, [rsp+k]
 *     x86_cmp_reg_mem(w, X86_ECX, x86_fs(f->s_cap));         cmp ecx, fs:cap
 *     x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RCX, 28), -1);
 *
 * Registers: X86_RAX .. X86_R15 are the 64-bit ones, X86_EAX .. X86_EDI
 * the 32-bit views of the first eight (no REX.W); an instruction's
 * operand size is its register's. A memory operand (struct x86_mem) is
 * base + disp, base + index * scale, or %fs:disp32 (no base, no index);
 * its displacement takes the shortest form (none for 0, disp8, disp32)
 * unless built with x86_mem_d8() (disp8 even for 0) or x86_mem_d32()
 * (always disp32): the generated code keeps the forms it was pinned
 * with (tests/data/x86_emit_golden/). An instruction with a memory
 * operand and no register names its width (X86_DWORD, X86_QWORD).
 *
 * Each writer appends one instruction; an overflow or a branch target
 * out of reach clears w->ok, so the caller checks once at the end.
 * Encodings are checked against capstone's decoding in
 * tests/unit/test_hook_x86_writer.c.
 *
 * Threads: any; a writer is its caller's.
 */
#ifndef ADA_HOOK_X86_WRITER_H
#define ADA_HOOK_X86_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A bounded output buffer; ok drops to 0 on overflow so callers check once. */
struct x86_writer {
	uint8_t *buf;
	size_t len, cap;
	uint64_t base; /* address buf[0] executes at */
	int ok;
};

static inline uint64_t x86_pc(const struct x86_writer *w)
{
	return w->base + w->len;
}

static inline int x86_fits_rel32(int64_t d)
{
	return d >= INT32_MIN && d <= INT32_MAX;
}

/* Raw bytes, for what has no named writer (a relocated instruction's
 * copy) and for the writers themselves. Inline: every byte of every
 * trampoline goes through them at start-up, and an out-of-line call in
 * the agent (a shared library: interposable) cost more than the store. */
static inline void x86_put(struct x86_writer *w, const void *bytes, size_t n)
{
	if (!w->ok || n > w->cap - w->len) {
		w->ok = 0;
		return;
	}
	memcpy(w->buf + w->len, bytes, n);
	w->len += n;
}

static inline void x86_put_u8(struct x86_writer *w, uint8_t b)
{
	x86_put(w, &b, 1);
}

static inline void x86_put_u32(struct x86_writer *w, uint32_t v)
{
	x86_put(w, &v, 4); /* x86 is little endian, as is the host */
}

static inline void x86_put_u64(struct x86_writer *w, uint64_t v)
{
	x86_put(w, &v, 8);
}

/* The general registers by encoding number; X86_R32 marks a 32-bit view. */
enum x86_gpr {
	X86_RAX,
	X86_RCX,
	X86_RDX,
	X86_RBX,
	X86_RSP,
	X86_RBP,
	X86_RSI,
	X86_RDI,
	X86_R8,
	X86_R9,
	X86_R10,
	X86_R11,
	X86_R12,
	X86_R13,
	X86_R14,
	X86_R15,
	X86_R32 = 0x20,
	X86_EAX = X86_R32 | X86_RAX,
	X86_ECX = X86_R32 | X86_RCX,
	X86_EDX = X86_R32 | X86_RDX,
	X86_EBX = X86_R32 | X86_RBX,
	X86_ESP = X86_R32 | X86_RSP,
	X86_EBP = X86_R32 | X86_RBP,
	X86_ESI = X86_R32 | X86_RSI,
	X86_EDI = X86_R32 | X86_RDI,
	X86_NO_REG = 0xff,
};

/* The width of a memory operand that no register gives. */
enum x86_width {
	X86_DWORD = X86_R32,
	X86_QWORD = 0,
};

/* Condition codes (the low nibble of jcc's opcode). */
enum x86_cc {
	X86_CC_B = 0x2,
	X86_CC_AE = 0x3,
	X86_CC_E = 0x4,
	X86_CC_NE = 0x5,
	X86_CC_BE = 0x6,
	X86_CC_A = 0x7,
};

enum x86_disp_form {
	X86_DISP_SHORT, /* none for 0 (but rbp/r13), else disp8 when it fits, else disp32 */
	X86_DISP_8,     /* disp8 when it fits (0 too), else disp32 */
	X86_DISP_32,    /* always disp32 */
	X86_DISP_FS,    /* %fs:disp32, no base (SIB without base and index) */
	X86_DISP_GS,    /* %gs:disp32, the same form */
};

struct x86_mem {
	uint8_t base, index, scale; /* index X86_NO_REG: none; scale 1, 2, 4, 8 */
	uint8_t form;               /* enum x86_disp_form */
	int32_t disp;
};

/* [base + disp] */
static inline struct x86_mem x86_mem(enum x86_gpr base, int32_t disp)
{
	return (struct x86_mem){(uint8_t)base, X86_NO_REG, 1, X86_DISP_SHORT, disp};
}
static inline struct x86_mem x86_mem_d8(enum x86_gpr base, int32_t disp)
{
	return (struct x86_mem){(uint8_t)base, X86_NO_REG, 1, X86_DISP_8, disp};
}
static inline struct x86_mem x86_mem_d32(enum x86_gpr base, int32_t disp)
{
	return (struct x86_mem){(uint8_t)base, X86_NO_REG, 1, X86_DISP_32, disp};
}
/* [base + index * scale] */
static inline struct x86_mem x86_mem_idx(enum x86_gpr base, enum x86_gpr index, uint8_t scale)
{
	return (struct x86_mem){(uint8_t)base, (uint8_t)index, scale, X86_DISP_SHORT, 0};
}
/* %fs:disp (initial-exec TLS: an offset from the thread pointer) */
static inline struct x86_mem x86_fs(int32_t disp)
{
	return (struct x86_mem){X86_NO_REG, X86_NO_REG, 1, X86_DISP_FS, disp};
}

/* %gs:disp (the count-only counters' page: agent_count.c) */
static inline struct x86_mem x86_gs(int32_t disp)
{
	return (struct x86_mem){X86_NO_REG, X86_NO_REG, 1, X86_DISP_GS, disp};
}

/* Stack, calls, returns. */
void x86_push_reg(struct x86_writer *w, enum x86_gpr r);
void x86_pop_reg(struct x86_writer *w, enum x86_gpr r);
void x86_call_reg(struct x86_writer *w, enum x86_gpr r);
void x86_ret(struct x86_writer *w);

/* Direct branches to absolute targets (from the writer's pc); a target
 * out of reach clears w->ok. x86_jmp_far: rel32 when it reaches, else
 * jmp [rip+0]; dq target (any distance). */
void x86_jmp_rel32(struct x86_writer *w, uint64_t target);
void x86_call_rel32(struct x86_writer *w, uint64_t target);
void x86_jcc_rel32(struct x86_writer *w, enum x86_cc cc, uint64_t target);
void x86_jcc_rel8(struct x86_writer *w, enum x86_cc cc, uint64_t target);
void x86_jmp_far(struct x86_writer *w, uint64_t target);
/* jmp qword [rip + disp] / call qword [rip + disp] */
void x86_jmp_rip_mem(struct x86_writer *w, int32_t disp);
void x86_call_rip_mem(struct x86_writer *w, int32_t disp);

/* Moves. x86_mov_reg_imm64 is movabs (always the 10-byte form). */
void x86_mov_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_mov_reg_imm64(struct x86_writer *w, enum x86_gpr dst, uint64_t imm);
void x86_mov_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m);
void x86_mov_mem_reg(struct x86_writer *w, struct x86_mem m, enum x86_gpr src);
void x86_mov_mem_imm32(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int32_t imm);
void x86_lea_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m);
/* push imm32 (sign-extended to 64 bits) */
void x86_push_imm32(struct x86_writer *w, int32_t imm);

/* Arithmetic and logic: op dst, src / op dst, [m] / op [m], src. */
void x86_add_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_or_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_and_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_cmp_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_test_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_add_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m);
void x86_sub_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m);
void x86_and_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m);
void x86_cmp_reg_mem(struct x86_writer *w, enum x86_gpr dst, struct x86_mem m);
void x86_cmp_mem_reg(struct x86_writer *w, struct x86_mem m, enum x86_gpr src);
/* op reg, imm8 (sign-extended; opcode 83) / op reg, imm32 (81) */
void x86_add_reg_imm8(struct x86_writer *w, enum x86_gpr dst, int8_t imm);
void x86_and_reg_imm8(struct x86_writer *w, enum x86_gpr dst, int8_t imm);
void x86_cmp_reg_imm8(struct x86_writer *w, enum x86_gpr dst, int8_t imm);
void x86_cmp_reg_imm32(struct x86_writer *w, enum x86_gpr dst, int32_t imm);
/* op width [m], imm8 (83) / imm32 (81) */
void x86_add_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int8_t imm);
void x86_sub_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int8_t imm);
void x86_cmp_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int8_t imm);
void x86_cmp_mem_imm32(struct x86_writer *w, enum x86_width wd, struct x86_mem m, int32_t imm);
/* test reg8, imm8, on the low byte of r (al, cl, dl, bl) */
void x86_test_reg8_imm8(struct x86_writer *w, enum x86_gpr r, uint8_t imm);
void x86_shl_reg_imm8(struct x86_writer *w, enum x86_gpr r, uint8_t n);
void x86_shr_reg_imm8(struct x86_writer *w, enum x86_gpr r, uint8_t n);
void x86_dec_reg(struct x86_writer *w, enum x86_gpr r);
/* Bit test (and set): bt dst, src / bts dst, imm8 / bts width [m], imm8 */
void x86_bt_reg_reg(struct x86_writer *w, enum x86_gpr dst, enum x86_gpr src);
void x86_bts_reg_imm8(struct x86_writer *w, enum x86_gpr dst, uint8_t bit);
void x86_bts_mem_imm8(struct x86_writer *w, enum x86_width wd, struct x86_mem m, uint8_t bit);

/* Other. x86_movups: xmm0 .. xmm15 by number. */
void x86_rdtsc(struct x86_writer *w);
void x86_prefetcht0(struct x86_writer *w, struct x86_mem m);
void x86_movups_xmm_mem(struct x86_writer *w, unsigned xmm, struct x86_mem m);
void x86_movups_mem_xmm(struct x86_writer *w, struct x86_mem m, unsigned xmm);

#endif
