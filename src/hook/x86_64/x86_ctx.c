/*
 * x86_64 machine primitives of the agent that are not inline
 * (arch_ctx.h): CPUID's xsave size, a signal context's stack pointer and
 * registers, and a call on another stack.
 *
 * Threads: any. Not hook context (the agent's init and its signal
 * handlers).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h> /* glibc 2.33+: CPU_FEATURE_PRESENT */
#endif

#include "hook_arch.h"

/* One CPUID instruction where glibc keeps leaf 1 (its copy, read by the
 * loader): each traps to the hypervisor in a VM, some microseconds, and
 * __get_cpuid asks leaf 0 before each leaf it reads (four in all, at every
 * exec'd start; exe10). With OSXSAVE set, leaf 0xd exists (XSAVE
 * enumerates its state components there). */
uint32_t hook_arch_xsave_size(void)
{
	unsigned a, b, c, d;
#ifdef CPU_FEATURE_PRESENT
	if (!CPU_FEATURE_PRESENT(OSXSAVE))
		return 0;
#else
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 0;
#endif
	__cpuid_count(0xd, 0, a, b, c, d);
	(void)a, (void)c, (void)d;
	if (b == 0 || b > HOOK_ARCH_FPU_MAX)
		return 0;
	return b;
}

uintptr_t hook_arch_uc_sp(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
}

uintptr_t hook_arch_uc_pc(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
}

void hook_arch_uc_set_pc(void *uc, uintptr_t pc)
{
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

void hook_arch_uc_regs(const void *uc, uint64_t out[HOOK_ARCH_UC_NREGS])
{
	/* DWARF order (atf_format.h, atf_detail_signal_payload). */
	static const int from[HOOK_ARCH_UC_NREGS] = {
	    REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
	    REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP, REG_EFL,
	};
	const greg_t *g = ((const ucontext_t *)uc)->uc_mcontext.gregs;
	for (uint32_t i = 0; i < HOOK_ARCH_UC_NREGS; i++)
		out[i] = (uint64_t)g[from[i]];
}

/* rdi = sig, rsi = si, rdx = uc, rcx = fn, r8 = sp. */
__asm__(".text\n"
        ".globl hook_arch_call_on_stack\n"
        ".hidden hook_arch_call_on_stack\n"
        ".type hook_arch_call_on_stack, @function\n"
        "hook_arch_call_on_stack:\n"
        "\t.cfi_startproc\n"
        "\tpush %rbp\n"
        "\t.cfi_def_cfa_offset 16\n"
        "\t.cfi_offset %rbp, -16\n"
        "\tmov %rsp, %rbp\n"
        "\t.cfi_def_cfa_register %rbp\n"
        "\tmov %r8, %rsp\n"
        "\tcall *%rcx\n"
        "\tmov %rbp, %rsp\n"
        "\tpop %rbp\n"
        "\t.cfi_def_cfa %rsp, 8\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size hook_arch_call_on_stack, .-hook_arch_call_on_stack\n");
