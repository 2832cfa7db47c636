/*
 * The x86_64 half of hook_arch.h, which includes it (an architecture is
 * this folder: arch.h, its parts, the emitter and the decoder, and its
 * sources' line in src/hook/CMakeLists.txt): the registers the
 * trampolines save, the detail record's register words, the numbers
 * the arch-neutral code needs (instruction lengths, return points), and
 * through arch_scan.h / arch_ctx.h the byte scanners and the agent's
 * machine primitives (thread pointer, raw system call, vector state,
 * in_hook's read-modify-write, signal contexts).
 */
#ifndef ADA_HOOK_X86_64_ARCH_H
#define ADA_HOOK_X86_64_ARCH_H

#include <stdint.h>

#define HOOK_ARCH_NAME "x86_64"

/* Registers saved by the enter trampoline (order is the stack layout). */
struct ada_hook_regs {
	uint64_t rdi, rsi, rdx, rcx, r8, r9, rax, rbp, r10, r11;
};

/* The first integer argument of the hooked function, from its saved
 * registers (a macro: the handlers' translation unit stays as it was). */
#define HOOK_ARCH_REGS_ARG0(regs) ((regs)->rdi)

/* Bytes of the system call instruction (x86_64 `syscall`; arm64's `svc`
 * is 4): a thread stopped inside a system call restarts that far before
 * its pc (ada attach never moves such a thread). */
#define HOOK_ARCH_SYSCALL_INSN_LEN 2
/* Where R_F, the trampoline's return point, lies in every enter
 * trampoline (bytes from its start); in the fast form
 * (hook_arch_emit_trampoline_fast) at HOOK_ARCH_FAST_RET_POINT_OFF. */
#define HOOK_ARCH_RET_POINT_OFF 75
#define HOOK_ARCH_FAST_RET_POINT_OFF 17
/* How far a patch's jump reaches (rel32: +-2 GiB), and the top of user
 * space (4-level paging): hook_mem places trampolines within the one
 * below the other. */
#define HOOK_ARCH_REACH (1ull << 31)
#define HOOK_ARCH_VA_HIGH 0x7ffffffff000ull
/* Whether re-aiming the 5-byte jmp of a function at addr at another
 * target changes one aligned 8-byte word (its rel32), so
 * hook_patch_apply() writes it with one atomic store while other
 * threads run it (the budget's move, agent_budget.c). */
#define HOOK_ARCH_PATCH_REAIM_ATOMIC(addr, len) ((len) >= 5 && ((addr)&7) <= 3)

/* ---- The detail record's register words ----
 * The one definition of which register goes into which word of the
 * detail lane's CALL and RETURN records (word ADA_DREC_REGS + i, ring.h),
 * for the C writers (detail_rec_internal.h) and the emitted member paths
 * (x86_emit_detail.c). CALL: the six argument registers and rax (the
 * vector count of a variadic call) in the order the detail stub saves
 * them (struct ada_hook_regs' first seven fields), the caller's return
 * address, rbp, and rsp at entry (the return slot). */
enum hook_drec_call_reg {
	HOOK_DREC_CALL_RDI,
	HOOK_DREC_CALL_RSI,
	HOOK_DREC_CALL_RDX,
	HOOK_DREC_CALL_RCX,
	HOOK_DREC_CALL_R8,
	HOOK_DREC_CALL_R9,
	HOOK_DREC_CALL_RAX,
	HOOK_DREC_CALL_ORIG,
	HOOK_DREC_CALL_RBP,
	HOOK_DREC_CALL_SP,
	HOOK_DREC_CALL_NREGS
};
/* RETURN: rax and rdx (the return value), where it returns to, rbp (as
 * the function left it: callee-saved) and rsp after its `ret`. */
enum hook_drec_return_reg {
	HOOK_DREC_RET_RAX,
	HOOK_DREC_RET_RDX,
	HOOK_DREC_RET_ORIG,
	HOOK_DREC_RET_RBP,
	HOOK_DREC_RET_SP,
	HOOK_DREC_RET_NREGS
};
/* Where the return trampolines keep the function's registers while the
 * exit handler runs, in words from sp (the stack pointer after its
 * `ret`): rax at sp-8 (the dead slot), rdx at sp-16, rbp at sp-80. */
#define HOOK_RET_SAVED_RAX (-1)
#define HOOK_RET_SAVED_RDX (-2)
#define HOOK_RET_SAVED_RBP (-10)

#include "arch_ctx.h"
#include "arch_scan.h"

#endif
