/*
 * The arm64 half of hook_arch.h, which includes it on aarch64: the
 * registers the trampolines save, the detail record's register words,
 * the numbers the arch-neutral code needs (instruction length, return
 * points, reach), and through arch_scan.h / arch_ctx.h the word
 * scanners and the agent's machine primitives.
 *
 * The trampolines are the C-handler form (a64_emit.c): hook_arch.h's
 * contract with x30 for the return slot. Its layout: the enter
 * trampoline keeps x30 at S-8 (S: sp at the function's entry), and
 * ret_slot points there, so the handlers key frames by S-8 as on x86_64
 * by the return address's slot, and ada_hook_on_exit(S) finds the same
 * S-8. The return trampoline is passed S too.
 */
#ifndef ADA_HOOK_ARM64_ARCH_H
#define ADA_HOOK_ARM64_ARCH_H

#include <stdint.h>

#define HOOK_ARCH_NAME "aarch64"

/* Registers saved by the enter trampoline (the stack layout, from sp):
 * x0..x18 (x16/x17 are dead at a function's entry: saved for the
 * store pairs, not restored), a pad word, x29 at S-16, x30 at S-8. */
struct ada_hook_regs {
	uint64_t x[19];
	uint64_t pad;
	uint64_t fp, lr;
};
_Static_assert(sizeof(struct ada_hook_regs) == 176, "a64_emit.c's A64_FRAME");

/* The first integer argument of the hooked function. */
#define HOOK_ARCH_REGS_ARG0(regs) ((regs)->x[0])

/* `svc #0` is 4 bytes: a thread stopped in a system call restarts 4
 * bytes before its pc. */
#define HOOK_ARCH_SYSCALL_INSN_LEN 4
/* R_F in every enter trampoline (bytes from its start). No fast form. */
#define HOOK_ARCH_RET_POINT_OFF 120
/* The patch's `b` reaches +-128 MiB; user space ends at 2^48 (Linux's
 * default 48-bit VA; 52-bit only for mappings asked above it). */
#define HOOK_ARCH_REACH (1ull << 27)
#define HOOK_ARCH_VA_HIGH 0xfffffffff000ull

/* The patch's `b` is one word (hook_arch.h's HOOK_ARCH_MIN_PATCH). */
#define HOOK_ARCH_MIN_PATCH 4

/* The far form's adrp reaches +-4 GiB (hook_arch.h, a64_patch.c). */
#define HOOK_ARCH_FAR_REACH (1ull << 32)

/* A count-only block (a64_count.c): up to 32 words when its TLS
 * offsets, slot or branches need the long forms. */
#define HOOK_ARCH_COUNT_BLOCK_MAX 128

/* Whether re-aiming the patch of a function at addr (len bytes) at
 * another target changes one aligned word, so hook_patch_apply() writes
 * it with one atomic store while other threads run it (the budget's
 * move, agent_budget.c): the 4-byte `b` always; the far form's
 * adrp/add pair never. */
#define HOOK_ARCH_PATCH_REAIM_ATOMIC(addr, len) ((len) == 4 && ((addr)&3) == 0)

/* ---- The detail record's register words ----
 * The ring record's 10 register words (ADA_DREC_REGS + i, ring.h) in the
 * positions x86_64 gives its own, so the drain's conversion puts them in
 * the same payload fields (docs/format.md, "Detail payload registers on
 * arm64"). CALL: x0..x6 (x7 and x8 have no word: the record holds 10),
 * the caller's return address (x30 at entry), x29, sp at entry. */
enum hook_drec_call_reg {
	HOOK_DREC_CALL_X0,
	HOOK_DREC_CALL_X1,
	HOOK_DREC_CALL_X2,
	HOOK_DREC_CALL_X3,
	HOOK_DREC_CALL_X4,
	HOOK_DREC_CALL_X5,
	HOOK_DREC_CALL_X6,
	HOOK_DREC_CALL_ORIG,
	HOOK_DREC_CALL_FP,
	HOOK_DREC_CALL_SP,
	HOOK_DREC_CALL_NREGS
};
/* RETURN: x0 and x1 (the return value), where it returns to, x29, sp
 * after the return. */
enum hook_drec_return_reg {
	HOOK_DREC_RET_X0,
	HOOK_DREC_RET_X1,
	HOOK_DREC_RET_ORIG,
	HOOK_DREC_RET_FP,
	HOOK_DREC_RET_SP,
	HOOK_DREC_RET_NREGS
};
/* Where the return trampoline keeps the function's registers while the
 * exit handler runs, in words from S (sp after the return): x0 at
 * S-176, x1 at S-168, x29 at S-16. */
#define HOOK_RET_SAVED_X0 (-22)
#define HOOK_RET_SAVED_X1 (-21)
#define HOOK_RET_SAVED_FP (-2)

#include "arch_ctx.h"
#include "arch_scan.h"

#endif
