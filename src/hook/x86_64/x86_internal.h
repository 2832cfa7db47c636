/*
 * Private to the x86_64 hook layer: the relocation cases prepare() assigns
 * to each displaced instruction (the code writer: x86_writer.h).
 */
#ifndef ADA_HOOK_X86_INTERNAL_H
#define ADA_HOOK_X86_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <capstone/capstone.h>

#include "hook_arch.h"
#include "x86_writer.h"

/* hook_arch_insn.kind */
enum x86_reloc_kind {
	X86_RELOC_PLAIN = 0, /* position independent: copied as is */
	X86_RELOC_RIP,       /* [rip+disp32] memory operand */
	X86_RELOC_RIP_LEA,   /* lea r64,[rip+disp32]: movabs when far */
	X86_RELOC_JMP,       /* jmp rel8/rel32 */
	X86_RELOC_JCC,       /* jcc rel8/rel32 */
	X86_RELOC_CALL,      /* call rel32 */
	X86_RELOC_CALL_RIP,  /* call [rip+disp32] */
	X86_RELOC_CALL_IND,  /* call r/m64 not rip-relative; reg: the ModRM's offset */
};

/* One helper per relocation case (x86_reloc.c); each appends the
 * relocated form of insn (whose original bytes are `orig`) to w and
 * returns 0, or -ERANGE when no exact form reaches from w's address. */
int reloc_plain(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in);
int reloc_rip_relative(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in);
int reloc_jmp(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in);
int reloc_jcc(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in);
int reloc_call(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in,
               uint64_t ret_addr);
int reloc_call_indirect(struct x86_writer *w, const uint8_t *orig, const struct hook_arch_insn *in,
                        uint64_t ret_addr);

/* x86_len.c: length of the instruction at b (at most `left` bytes), or 0
 * when the fast table does not know the encoding (ask capstone). li->rel
 * is 1 or 4 for a direct jmp/jcc/call whose rel8/rel32 is the
 * instruction's last bytes (never prefixed), else 0. An instruction with
 * none of rel, riprel, indirect_call is position independent. */
struct x86_len_info {
	uint8_t rel;
	uint8_t riprel;        /* has a [rip + disp32] operand */
	uint8_t indirect_call; /* FF /2: call r/m */
	/* An immediate of 2 bytes or more. Without it every immediate
	 * capstone reports is an imm8 zero- or sign-extended, or the 1 of
	 * D0-D3 (test_hook_len checks it over whole libraries). */
	uint8_t wide_imm;
	uint8_t absmem;      /* a memory operand with no base (SIB base 101, mod 00) */
	const uint8_t *disp; /* riprel: where its disp32 starts */
};
size_t x86_fast_len(const uint8_t *b, size_t left, struct x86_len_info *li);
/* Length of a VEX (C4/C5) or EVEX (62) instruction by its prefix's
 * rules alone (map, ModRM, imm8 by map), whatever its opcode: no such
 * instruction branches, so a sweep that only needs lengths and branch
 * targets goes on where x86_fast_len() and capstone 4 decline (AVX-512,
 * the mask ops); 0 when the bytes are no such instruction. */
size_t x86_vex_any_len(const uint8_t *b, size_t left);
/* For an instruction x86_fast_len() measured at p: 1 when capstone 4
 * certainly decodes it too, to the same length. The table accepts a few
 * forms capstone rejects (`0F 1F` with a register operand, SSE forms
 * without their mandatory prefix, some VEX...), harmless to a sweep
 * that only needs lengths but not to callers that stand in for a
 * capstone decode whose failure decides (the switch reader's undecoded
 * instructions, the materialize scan): those ask this first. 1 for no
 * legacy prefix (REX allowed) and the one-byte map but C2, or the 0F
 * forms found to agree exhaustively, or `nop m` (0F 1F, memory operand);
 * test_hook_len checks it against capstone. */
int x86_len_cs_same(const uint8_t *p);
/* x86_prepare.c: a linear decode of the instructions at code (addr, at
 * most size bytes, offsets up to 255) into out (at most cap), each
 * classified as a displaced instruction is (hook_arch_insn); it stops at
 * the first it cannot decode or relocate. Returns the bytes decoded and
 * in *n the instructions. Takes a decoder's lock: not hook context. */
size_t x86_decode_span(const uint8_t *code, size_t size, uint64_t addr, struct hook_arch_insn *out,
                       size_t cap, size_t *n);
/* x86_prepare.c: does the instruction of n bytes at p end the flow (ret,
 * jmp, ud2, hlt, int3)? Legacy (rep, bnd, notrack) and REX prefixes
 * first. */
int x86_is_stop(const uint8_t *p, size_t n);
/* Length of a fill instruction at p (at most left bytes), or 0: 0xCC,
 * 66* 90, [66|2E]* 0F 1F /0 with a memory operand (the forms gas and
 * the linkers pad x86 code with). */
size_t x86_fill_insn(const uint8_t *p, size_t left);

/* 1 (default): the sweeps use x86_fast_len before capstone; tests set 0
 * to compare against the capstone-only analysis. Not thread-safe to
 * change while another thread prepares. */
extern int x86_use_fast_len;

/* x86_swdec.c: one instruction as the switch-table reader (x86_switch.c)
 * sees it. Only what the reader looks at is kept, and in one canonical
 * form whichever decoder filled it: id is one of the few the reader
 * names (x86_sw_id()) or X86_INS_INVALID; an instruction that is neither
 * named nor a control transfer carries no operands (op_count 0, op,
 * addr_size and modrm zero), since the reader asks such instructions only
 * which registers they write; modrm is kept for jmp only; op_count is
 * capped at 2; an operand holds only type, size and reg / imm / mem. */
struct x86_sw_insn {
	uint64_t address;
	uint16_t size, id;
	uint8_t op_count, addr_size, modrm, grp; /* grp: X86_SW_G_* */
	uint32_t wfams;                          /* general-register families written */
	uint8_t wbits[16];                       /* per family: bit w = width w written */
	cs_x86_op op[2];
};

enum {
	X86_SW_G_JUMP = 1,
	X86_SW_G_CALL = 2,
	X86_SW_G_RET = 4,
	X86_SW_G_INT = 8,
	X86_SW_G_IRET = 16,
	X86_SW_G_REL = 32,
};

/* Family (0..15: rax, rcx, ... r15) of a general register and its width
 * index (0: 64-bit, 1: 32, 2: 16, 3: low 8, 4: ah..bh); -1 otherwise. */
int x86_sw_family(x86_reg r, int *width);
/* Fills in from capstone's decoding ci (detail on), canonically. */
void x86_sw_from_cs(struct x86_sw_insn *in, const cs_insn *ci);
/* The compact decoder: fills in for the instruction at b (address pc,
 * at most `left` bytes) and returns its length, exactly what
 * x86_sw_from_cs() would give for capstone's decoding; 0 when it does
 * not know the form (ask capstone). Built on x86_fast_len(); knows the
 * general-purpose integer instructions compilers emit around switch
 * dispatches. test_hook_len.c compares it with capstone over whole
 * libraries. */
size_t x86_sw_fast(const uint8_t *b, size_t left, uint64_t pc, struct x86_sw_insn *in);
/* 1 (default): x86_switch.c decodes with x86_sw_fast() where it can
 * (when x86_use_fast_len is 1 too); the fuzzer sets 0 to compare the
 * switch reader alone against capstone. Same threading rule as
 * x86_use_fast_len. */
extern int x86_use_sw_fast;

/* x86_switch.c: ADA_HOOK_OK when every table-shaped indirect jmp of the
 * function [addr, addr+size) (bytes at code) is a recognised switch
 * dispatch whose table, read through mem, sends no entry into
 * (addr, addr+patch_len); else ADA_SKIP_JUMP_TABLE. cs: the prepare
 * handle, detail ON, and ci its decode buffer, used under its lock. */
enum ada_hook_skip x86_switch_check(csh cs, cs_insn *ci, const uint8_t *code, uint64_t addr,
                                    uint64_t size, size_t patch_len,
                                    const struct hook_arch_memview *mem);

#endif
