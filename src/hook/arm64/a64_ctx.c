/*
 * arm64 machine primitives of the agent that are not inline
 * (arch_ctx.h): a signal context's stack pointer and registers, and a
 * call on another stack.
 *
 * Threads: any. Not hook context (the agent's signal handlers).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "hook_arch.h"

uintptr_t hook_arch_uc_sp(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.sp;
}

uintptr_t hook_arch_uc_pc(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.pc;
}

void hook_arch_uc_set_pc(void *uc, uintptr_t pc)
{
	((ucontext_t *)uc)->uc_mcontext.pc = pc;
}

uint64_t *hook_arch_uc_lr(void *uc)
{
	return (uint64_t *)&((ucontext_t *)uc)->uc_mcontext.regs[30];
}

/* Where each word of the signal context record comes from: an x register
 * (0-30), or one of these. */
#define A64_UC_SP 100
#define A64_UC_PC 101
#define A64_UC_PSTATE 102

void hook_arch_uc_regs(const void *uc, uint64_t out[HOOK_ARCH_UC_NREGS])
{
	static const uint8_t from[HOOK_ARCH_UC_NREGS] = {
	    0, 1, 2, 3, 4, 5, 6, A64_UC_SP, 7, 8, 16, 17, 18, 19, 29, 30, A64_UC_PC, A64_UC_PSTATE,
	};
	const mcontext_t *m = &((const ucontext_t *)uc)->uc_mcontext;
	for (uint32_t i = 0; i < HOOK_ARCH_UC_NREGS; i++)
		out[i] = from[i] == A64_UC_SP       ? m->sp
		         : from[i] == A64_UC_PC     ? m->pc
		         : from[i] == A64_UC_PSTATE ? m->pstate
		                                    : m->regs[from[i]];
}

/* x0 = sig, x1 = si, x2 = uc, x3 = fn, x4 = sp. x29 keeps the frame
 * this function pushed on the caller's stack, so the handler's
 * backtrace walks back through it. */
__asm__(".text\n"
        ".globl hook_arch_call_on_stack\n"
        ".hidden hook_arch_call_on_stack\n"
        ".type hook_arch_call_on_stack, %function\n"
        ".p2align 2\n"
        "hook_arch_call_on_stack:\n"
        "\t.cfi_startproc\n"
        "\tstp x29, x30, [sp, #-16]!\n"
        "\t.cfi_def_cfa_offset 16\n"
        "\t.cfi_offset x29, -16\n"
        "\t.cfi_offset x30, -8\n"
        "\tmov x29, sp\n"
        "\t.cfi_def_cfa_register x29\n"
        "\tmov sp, x4\n"
        "\tblr x3\n"
        "\tmov sp, x29\n"
        "\tldp x29, x30, [sp], #16\n"
        "\t.cfi_def_cfa sp, 0\n"
        "\t.cfi_restore x29\n"
        "\t.cfi_restore x30\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size hook_arch_call_on_stack, .-hook_arch_call_on_stack\n");
