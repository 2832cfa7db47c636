/*
 * Private to the arm64 hook layer: the A64 instruction words it reads and
 * writes, the code writer, the relocation cases prepare() assigns to a
 * displaced instruction, and the trampolines' layout.
 *
 * Everything here transforms 32-bit words in byte buffers, in portable
 * C: the relocator, the verdicts and the emitters build and run on any
 * host (tests/unit/test_hook_a64.c runs them in the x86_64 CI, byte for
 * byte); only a64_arch.c and a64_ctx.c, which give them the names of
 * hook_arch.h, are built for aarch64 alone.
 *
 * Threads: any; no shared state.
 */
#ifndef ADA_HOOK_A64_INTERNAL_H
#define ADA_HOOK_A64_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook_arch.h"

/* ---- Registers ---- */
#define A64_X16 16u /* IP0: the trampolines' branch scratch (dead at a call's target) */
#define A64_X17 17u /* IP1: the relocated SIMD literal load's address */
#define A64_FP 29u
#define A64_LR 30u
#define A64_ZR 31u /* xzr, or sp where an instruction's base register is 31 */

/* ---- Reach ---- */
#define A64_B_REACH (1ll << 27)    /* b/bl imm26: +-128 MiB */
#define A64_ADRP_REACH (1ll << 32) /* adrp imm21 pages: +-4 GiB */
#define A64_FAR_PATCH_LEN 12       /* adrp x16; add x16, x16, lo12; br x16 */

/* ---- The trampolines' frame (a64_emit.c) ----
 * The enter trampoline saves x0..x18 at sp+8*i, x29 and x30 at
 * A64_FRAME - 16 and - 8, so the saved x30 lies at S-8 (S: sp at the
 * function's entry): the return slot the handlers key their frames by,
 * as x86_64's return address at rsp. The return trampoline saves the
 * same words the same way below S (sp after the return). */
#define A64_FRAME 176u
#define A64_FRAME_FP (A64_FRAME - 16u)
#define A64_FRAME_LR (A64_FRAME - 8u)
#define A64_FRAME_X18 144u
#define A64_RET_POINT_OFF 120u   /* R_F: b exit_path */
#define A64_FN_ID_OFF 128u       /* dq fn_id, then dq enter_handler */
#define A64_BODY_OFF 144u        /* the relocated prologue */
#define A64_RET_HANDLER_OFF 120u /* the return trampoline's dq exit_handler */

/* ---- Instruction words ---- */
#define A64_NOP 0xd503201fu
#define A64_RET 0xd65f03c0u

static inline int64_t a64_sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);
	return (int64_t)((v & ((1ull << bits) - 1)) ^ m) - (int64_t)m;
}

static inline uint32_t a64_word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline bool a64_fits(int64_t d, int64_t reach)
{
	return d >= -reach && d < reach && (d & 3) == 0;
}

/* ---- Decoding: the PC-relative classes (a64_decode.c) ---- */

/* hook_arch_insn.kind */
enum a64_reloc_kind {
	A64_RELOC_PLAIN = 0, /* position independent: copied as is */
	A64_RELOC_ADR,       /* adr xd: xd = target */
	A64_RELOC_ADRP,      /* adrp xd: xd = target (the page) */
	A64_RELOC_LDR_W,     /* ldr wt, literal */
	A64_RELOC_LDR_X,     /* ldr xt, literal */
	A64_RELOC_LDR_SW,    /* ldrsw xt, literal */
	A64_RELOC_LDR_S,     /* ldr st, literal */
	A64_RELOC_LDR_D,     /* ldr dt, literal */
	A64_RELOC_LDR_Q,     /* ldr qt, literal */
	A64_RELOC_PRFM,      /* prfm literal: a hint, dropped */
	A64_RELOC_B,         /* b */
	A64_RELOC_BL,        /* bl */
	A64_RELOC_BCOND,     /* b.cond / bc.cond (cc: the condition) */
	A64_RELOC_CBZ,       /* cbz / cbnz (the word's low bits kept) */
	A64_RELOC_TBZ,       /* tbz / tbnz */
	A64_RELOC_BLR,       /* blr xn: the link is the original pc + 4 */
};

/* Why a word cannot be displaced (a64_classify's refusals). */
enum a64_refusal {
	A64_REFUSE_NONE = 0,
	A64_REFUSE_UDF,         /* udf / 0x0000xxxx: data, or a deliberate trap */
	A64_REFUSE_UNALLOCATED, /* an unallocated literal-load form */
	A64_REFUSE_PAC_LINK,    /* blraa/blrab/...: the link is signed with the pc */
	A64_REFUSE_BRANCH_OTHER /* a branch-group word of no known form (e.g. FEAT_CMPBR cb<cc>) */
};

/* Classifies the word w at pc: fills in->kind, reg, cc and target
 * (branch target, literal address, adr/adrp value) and returns
 * A64_REFUSE_NONE, or why it cannot be moved. */
enum a64_refusal a64_classify(uint32_t w, uint64_t pc, struct hook_arch_insn *in);

/* A direct branch (b, bl, b.cond, bc.cond, cbz/cbnz, tbz/tbnz) and its
 * target; false for any other word. */
bool a64_direct_branch(uint32_t w, uint64_t pc, uint64_t *target);

/* Does execution never go on after w (b, br, ret, eret and their PAC
 * forms, brk, hlt, udf)? */
bool a64_is_terminal(uint32_t w);

/* An indirect branch that is not a return (br, braa, ...): a jump table
 * may send it anywhere. */
bool a64_is_indirect_jump(uint32_t w);

/* ---- The code writer (a64_writer.c) ----
 * Appends little-endian words at pc = at + len; ok drops to 0 (and
 * nothing more is written) when cap would be exceeded. */
struct a64_writer {
	uint8_t *buf;
	size_t len, cap;
	uint64_t at; /* address of buf[0] when it runs */
	int ok;
};

static inline uint64_t a64_pc(const struct a64_writer *w)
{
	return w->at + w->len;
}

void a64_put(struct a64_writer *w, uint32_t word);
void a64_put_u64(struct a64_writer *w, uint64_t v);
/* movz xd, #h0; movk xd, #hk, lsl 16k for every other non-zero halfword */
void a64_mov_imm64(struct a64_writer *w, unsigned rd, uint64_t v);
/* b target, which must be within A64_B_REACH (else ok = 0) */
void a64_b(struct a64_writer *w, uint64_t target);
void a64_bl(struct a64_writer *w, uint64_t target);
/* b target when within reach, else mov x16, target; br x16 */
void a64_b_far(struct a64_writer *w, uint64_t target);
void a64_br(struct a64_writer *w, unsigned rn);
void a64_blr(struct a64_writer *w, unsigned rn);
/* stp/ldp xa, xb, [sp, #off] (off a multiple of 8, < 512) */
void a64_stp_sp(struct a64_writer *w, unsigned ra, unsigned rb, unsigned off);
void a64_ldp_sp(struct a64_writer *w, unsigned ra, unsigned rb, unsigned off);
/* str/ldr xt, [sp, #off] (off a multiple of 8) */
void a64_str_sp(struct a64_writer *w, unsigned rt, unsigned off);
void a64_ldr_sp(struct a64_writer *w, unsigned rt, unsigned off);
/* add xd, sp, #imm / sub sp, sp, #imm / add sp, sp, #imm (imm < 4096) */
void a64_add_from_sp(struct a64_writer *w, unsigned rd, unsigned imm);
void a64_sub_sp(struct a64_writer *w, unsigned imm);
void a64_add_sp(struct a64_writer *w, unsigned imm);
/* mov xd, xn (orr xd, xzr, xn; neither may be sp) */
void a64_mov_reg(struct a64_writer *w, unsigned rd, unsigned rn);
/* ldr xt, <literal at target> (within +-1 MiB) */
void a64_ldr_lit(struct a64_writer *w, unsigned rt, uint64_t target);
/* cbnz xt, target (within +-1 MiB) */
void a64_cbnz(struct a64_writer *w, unsigned rt, uint64_t target);

/* ---- Relocation (a64_reloc.c) ----
 * Appends an exact equivalent of the displaced instruction in (original
 * word w), as run from the writer's pc: same registers written, same
 * memory read, same branch target, same link register value. x16 and
 * x17 may be clobbered (AAPCS64's intra-procedure-call scratch: dead at
 * a function's entry, where the displaced instructions run). 0, or
 * -ERANGE when no form reaches (never in practice: every target is
 * materialised in full). */
int a64_reloc_one(struct a64_writer *w, uint32_t word, const struct hook_arch_insn *in,
                  uint64_t orig_pc);

/* ---- Prepare and emit (a64_prepare.c, a64_emit.c), under the names
 * hook_arch.h gives them on aarch64 (a64_arch.c) ---- */
enum ada_hook_skip a64_prepare(const uint8_t *code, uint64_t addr, uint64_t size,
                               struct hook_arch_plan *plan);
/* The far form: patch_len A64_FAR_PATCH_LEN (adrp/add/br x16, for a
 * trampoline beyond b's reach), three displaced instructions, and the
 * body swept for branches into fn+4 and fn+8 (and for indirect jumps,
 * which may land there: ADA_SKIP_JUMP_TABLE). */
enum ada_hook_skip a64_prepare_far(const uint8_t *code, uint64_t addr, uint64_t size,
                                   struct hook_arch_plan *plan);
size_t a64_emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                           uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path,
                           size_t starts[HOOK_ARCH_MAX_INSNS]);
size_t a64_emit_return_trampoline(uint8_t *buf, uint64_t buf_addr, uint64_t exit_handler);
/* The patch: `b tramp` (patch_len 4), or the far form's adrp/add/br.
 * 0, or -ERANGE when tramp_addr is out of the plan's reach. */
int a64_patch_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                    uint8_t out[HOOK_ARCH_MAX_PATCH]);
uint64_t a64_patch_target(const struct hook_arch_plan *plan, const uint8_t *patch);
uint64_t a64_moved_pc(const struct hook_arch_plan *plan, const uint8_t *tramp, uint64_t tramp_addr,
                      uint64_t pc);
/* A count-only block (a64_count.c) of at most A64_COUNT_BLOCK_MAX bytes:
 * hook_arch_emit_count_block's contract, its body at tramp +
 * A64_BODY_OFF. Returns its length or 0. */
#define A64_COUNT_BLOCK_MAX 128u
size_t a64_emit_count_block(uint8_t *buf, uint64_t buf_addr, int32_t gate, int32_t counters,
                            uint32_t slot, uint64_t tramp);
bool a64_ends_closed(const uint8_t *code, uint64_t addr, uint64_t size);
size_t a64_fill_len(const uint8_t *code, size_t len);

#endif
