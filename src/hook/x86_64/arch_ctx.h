/*
 * x86_64 machine primitives of the agent (part of arch.h): what the hook
 * handlers (hook context: no libc, general registers only) and the
 * agent's signal and attach paths need of the machine and nothing
 * portable C gives: the thread pointer, a raw system call, the vector
 * state saved around cold paths, the one-instruction in_hook claim and
 * clear, the stack realignment of cold handlers, and a signal context's
 * stack pointer.
 */
#ifndef ADA_HOOK_X86_64_ARCH_CTX_H
#define ADA_HOOK_X86_64_ARCH_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The thread pointer (fs base: the TCB's first word points to itself). */
static inline uintptr_t hook_arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* A system call without libc (no errno: returns -errno). */
static inline long hook_arch_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return ret;
}

/* ---- Vector state ----
 * The whole extended state goes to the stack around the handlers' cold
 * paths (xsave of hook_arch_xsave_size() bytes, sized by CPUID at init;
 * fxsave when that is 0). */
#define HOOK_ARCH_FPU_MAX 4096

struct hook_arch_fpu {
	uint8_t area[HOOK_ARCH_FPU_MAX] __attribute__((aligned(64)));
};

static inline void hook_arch_fpu_save(struct hook_arch_fpu *f, uint32_t xsave_size)
{
	if (xsave_size) {
		for (int i = 512; i < 576; i++) /* the xsave header must start zeroed */
			f->area[i] = 0;
		__asm__ volatile("xsave64 %0" : "=m"(f->area) : "a"(-1), "d"(-1) : "memory");
	} else {
		__asm__ volatile("fxsave64 %0" : "=m"(f->area) : : "memory");
	}
}

static inline void hook_arch_fpu_restore(const struct hook_arch_fpu *f, uint32_t xsave_size)
{
	if (xsave_size)
		__asm__ volatile("xrstor64 %0" : : "m"(f->area), "a"(-1), "d"(-1) : "memory");
	else
		__asm__ volatile("fxrstor64 %0" : : "m"(f->area) : "memory");
}

/* The xsave area's size for hook_arch_fpu_save (CPUID leaf 0xD), 0 for
 * fxsave (no OSXSAVE, or an area over HOOK_ARCH_FPU_MAX). Not hook
 * context: the agent's init. */
uint32_t hook_arch_xsave_size(void);

/* ---- in_hook ----
 * HOOK_ARCH_IN_HOOK_RMW: the claim and the clear are one
 * read-modify-write instruction each (handlers.c, in_hook), so a signal
 * lands before or after the transition, never inside it. */
#define HOOK_ARCH_IN_HOOK_RMW 1

/* Sets bit 0; returns its old value. The memory clobber keeps every
 * access after it. */
static inline bool hook_arch_bit0_set(uint32_t *w)
{
	bool was;
	__asm__ volatile("btsl $0, %0" : "+m"(*w), "=@ccc"(was) : : "memory");
	return was;
}

/* Subtracts 1; true when the result is not 0. The memory clobber keeps
 * every access before it. */
static inline bool hook_arch_sub1_nz(uint32_t *w)
{
	bool nz;
	__asm__ volatile("subl $1, %0" : "+m"(*w), "=@ccnz"(nz) : : "memory");
	return nz;
}

/* A spin-wait's pause between two loads (cold waits outside hook
 * context). */
static inline void hook_arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

/* A function entered with the stack off the ABI's alignment realigns it
 * in its prologue (the trampolines call the handlers without aligning). */
#define HOOK_ARCH_REALIGN __attribute__((force_align_arg_pointer))

/* ---- Signal contexts ---- */

/* Bytes below the stack pointer the ABI lets a function use (the red
 * zone): a signal frame goes below them. */
#define HOOK_ARCH_REDZONE 128u

/* The interrupted stack pointer in a signal handler's ucontext_t. */
uintptr_t hook_arch_uc_sp(const void *uc);

/* The interrupted registers of a signal handler's ucontext_t, in the
 * order of atf_detail_signal_payload.regs (atf_format.h): the DWARF
 * registers 0-15, rip, rflags (HOOK_ARCH_UC_NREGS words). */
#define HOOK_ARCH_UC_NREGS 18u
void hook_arch_uc_regs(const void *uc, uint64_t out[HOOK_ARCH_UC_NREGS]);

/* The interrupted pc of a signal handler's ucontext_t, and setting it:
 * the crash handler moves a pc inside a trampoline's relocated prologue
 * back to the function's own copy of that instruction (agent_crash.c). */
uintptr_t hook_arch_uc_pc(const void *uc);
void hook_arch_uc_set_pc(void *uc, uintptr_t pc);
/* The interrupted link register's word (arm64's x30): none, every
 * return address is on the stack. */
static inline uint64_t *hook_arch_uc_lr(void *uc)
{
	(void)uc;
	return NULL;
}

/* Calls fn(sig, si, uc) with the stack pointer at sp (16-byte aligned),
 * then returns to the caller's stack. The frame pointer keeps the
 * caller's frame, so unwinders (and a backtrace from the handler) walk
 * through it by its CFI. */
void hook_arch_call_on_stack(int sig, void *si, void *uc, void (*fn)(int sig, void *si, void *uc),
                             uintptr_t sp);

#endif
