/*
 * arm64 machine primitives of the agent (part of arch.h): the thread
 * pointer, a raw system call, the vector state saved around the
 * handlers' cold paths, the in_hook transitions and a signal context's
 * stack pointer.
 */
#ifndef ADA_HOOK_ARM64_ARCH_CTX_H
#define ADA_HOOK_ARM64_ARCH_CTX_H

#include <stdbool.h>
#include <stdint.h>

/* The thread pointer (tpidr_el0; TLS variant I: the TCB is at it). */
static inline uintptr_t hook_arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}

/* A system call without libc (no errno: returns -errno). */
static inline long hook_arch_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc #0"
	                 : "+r"(x0)
	                 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
	                 : "memory");
	return x0;
}

/* A spin-wait's pause between two loads (agent_count.c's cold waits,
 * outside hook context): the hint that lets a sibling hardware thread
 * run, as x86_64's pause. */
static inline void hook_arch_cpu_relax(void)
{
	__asm__ volatile("yield");
}

/* ---- Vector state ----
 * q0..q31, fpsr and fpcr: everything a cold path calling libc may
 * change (the handlers are built with -mgeneral-regs-only; SVE state
 * beyond the low 128 bits of each z register is not kept: a call
 * clobbers it under the ABI anyway, except the vector PCS). */
struct hook_arch_fpu {
	uint64_t q[64] __attribute__((aligned(16)));
	uint64_t fpsr, fpcr;
};

static inline void hook_arch_fpu_save(struct hook_arch_fpu *f, uint32_t xsave_size)
{
	(void)xsave_size;
	__asm__ volatile("stp q0, q1, [%0, #0]\n\tstp q2, q3, [%0, #32]\n\t"
	                 "stp q4, q5, [%0, #64]\n\tstp q6, q7, [%0, #96]\n\t"
	                 "stp q8, q9, [%0, #128]\n\tstp q10, q11, [%0, #160]\n\t"
	                 "stp q12, q13, [%0, #192]\n\tstp q14, q15, [%0, #224]\n\t"
	                 "stp q16, q17, [%0, #256]\n\tstp q18, q19, [%0, #288]\n\t"
	                 "stp q20, q21, [%0, #320]\n\tstp q22, q23, [%0, #352]\n\t"
	                 "stp q24, q25, [%0, #384]\n\tstp q26, q27, [%0, #416]\n\t"
	                 "stp q28, q29, [%0, #448]\n\tstp q30, q31, [%0, #480]"
	                 :
	                 : "r"(f->q)
	                 : "memory");
	__asm__ volatile("mrs %0, fpsr\n\tmrs %1, fpcr" : "=r"(f->fpsr), "=r"(f->fpcr));
}

static inline void hook_arch_fpu_restore(const struct hook_arch_fpu *f, uint32_t xsave_size)
{
	(void)xsave_size;
	__asm__ volatile("msr fpsr, %0\n\tmsr fpcr, %1" : : "r"(f->fpsr), "r"(f->fpcr));
	__asm__ volatile("ldp q0, q1, [%0, #0]\n\tldp q2, q3, [%0, #32]\n\t"
	                 "ldp q4, q5, [%0, #64]\n\tldp q6, q7, [%0, #96]\n\t"
	                 "ldp q8, q9, [%0, #128]\n\tldp q10, q11, [%0, #160]\n\t"
	                 "ldp q12, q13, [%0, #192]\n\tldp q14, q15, [%0, #224]\n\t"
	                 "ldp q16, q17, [%0, #256]\n\tldp q18, q19, [%0, #288]\n\t"
	                 "ldp q20, q21, [%0, #320]\n\tldp q22, q23, [%0, #352]\n\t"
	                 "ldp q24, q25, [%0, #384]\n\tldp q26, q27, [%0, #416]\n\t"
	                 "ldp q28, q29, [%0, #448]\n\tldp q30, q31, [%0, #480]"
	                 :
	                 : "r"(f->q)
	                 : "memory");
}

/* No xsave on arm64: the agent's init stores 0 and the fpu functions
 * ignore it. */
static inline uint32_t hook_arch_xsave_size(void)
{
	return 0;
}

/* ---- in_hook ----
 * A64 has no single-instruction read-modify-write of memory before
 * LSE (armv8.1): the handlers use their portable form (plain accesses
 * between signal fences, handlers.c). */
#define HOOK_ARCH_IN_HOOK_RMW 0

/* The trampolines keep sp 16-byte aligned (a64_emit.c; the hardware's
 * sp alignment check makes every caller do so): nothing to realign. */
#define HOOK_ARCH_REALIGN

/* ---- Signal contexts ---- */

/* AAPCS64 has no red zone below sp. */
#define HOOK_ARCH_REDZONE 0u

/* The interrupted stack pointer in a signal handler's ucontext_t. */
uintptr_t hook_arch_uc_sp(const void *uc);

/* The interrupted registers of a signal handler's ucontext_t, in the
 * order of atf_detail_signal_payload.regs for arm64 (atf_format.h): x0-x6,
 * sp, x7, x8, x16, x17, x18, x19, x29, x30, pc, pstate -- sp and pc at the
 * words x86_64 has them (HOOK_ARCH_UC_NREGS words). */
#define HOOK_ARCH_UC_NREGS 18u
void hook_arch_uc_regs(const void *uc, uint64_t out[HOOK_ARCH_UC_NREGS]);

/* The interrupted pc of a signal handler's ucontext_t, and setting it
 * (the crash handler's move out of a trampoline, agent_crash.c). */
uintptr_t hook_arch_uc_pc(const void *uc);
void hook_arch_uc_set_pc(void *uc, uintptr_t pc);
/* The interrupted link register's word in the context (x30): the
 * crash handler puts a return point there back (agent_crash.c); the
 * kernel's sigreturn loads it. */
uint64_t *hook_arch_uc_lr(void *uc);

/* Calls fn(sig, si, uc) with the stack pointer at sp (16-byte aligned),
 * then returns to the caller's stack; x29 keeps the caller's frame, so
 * unwinders walk through it by its CFI. */
void hook_arch_call_on_stack(int sig, void *si, void *uc, void (*fn)(int sig, void *si, void *uc),
                             uintptr_t sp);

#endif
