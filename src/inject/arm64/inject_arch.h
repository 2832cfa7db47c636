/*
 * The aarch64 half of src/inject (inject_internal.h includes it; its
 * source's line is in src/inject/CMakeLists.txt): a stopped thread's
 * registers as ptrace gives them on arm64 (PTRACE_GETREGSET with
 * NT_PRSTATUS: x0-x30, sp, pc, pstate; the thread pointer from
 * NT_ARM_TLS), the call frame of an injected call (the return address
 * in the link register, not on the stack), and the vector state's
 * register set.
 *
 * Untested on a real arm64 machine: qemu-user, where ada's arm64 build
 * is tested here, does not let one emulated process ptrace another
 * (docs/attach.md). The register layout and the call frame are
 * unit-tested (tests/unit/test_inject_arch.c).
 *
 * Threads: the thread that stopped the target (ptrace binds tracees to
 * it).
 */
#ifndef ADA_INJECT_ARM64_ARCH_H
#define ADA_INJECT_ARM64_ARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A thread's general registers (the kernel's struct user_pt_regs) and
 * its thread pointer (tpidr_el0), which arm64 keeps in a register set of
 * its own. */
struct inject_regs {
	struct {
		uint64_t regs[31]; /* x0 .. x30 (x29 fp, x30 lr) */
		uint64_t sp;
		uint64_t pc;
		uint64_t pstate;
	} g;
	uint64_t tls;
};

/* AAPCS64 has no red zone; the frame still keeps this much below sp,
 * as on x86_64, so an injected call never writes next to the words a
 * leaf function just stored below an sp it had not moved yet. */
#define INJECT_ARCH_RED_ZONE 128
/* Arguments an injected call passes in registers (x0 .. x7). */
#define INJECT_ARCH_MAX_ARGS 8
/* The vector state's register set: NT_PRFPREG, the FPSIMD registers
 * v0-v31, fpsr and fpcr (struct user_fpsimd_state, 528 bytes). An SVE
 * thread's upper vector bits are not kept (NT_ARM_SVE is not read). */
#define INJECT_ARCH_XSTATE_NOTE 2 /* NT_PRFPREG */
#define INJECT_ARCH_XSTATE_MAX 1024
/* The return address goes in the link register: nothing is pushed. */
#define INJECT_ARCH_RET_ON_STACK 0

/* 0 or -errno. */
int inject_arch_get_regs(pid_t tid, struct inject_regs *r);
int inject_arch_set_regs(pid_t tid, const struct inject_regs *r);

static inline uint64_t inject_arch_pc(const struct inject_regs *r)
{
	return r->g.pc;
}

static inline void inject_arch_set_pc(struct inject_regs *r, uint64_t pc)
{
	r->g.pc = pc;
}

static inline uint64_t inject_arch_sp(const struct inject_regs *r)
{
	return r->g.sp;
}

/* The thread's TLS base (the thread pointer: tpidr_el0). */
static inline uint64_t inject_arch_tls(const struct inject_regs *r)
{
	return r->tls;
}

/* Always false: a thread interrupted in a system call is stopped with
 * its restart already made (arm64's do_signal rewinds pc to the svc and
 * forgets the call before the tracer sees the stop), so nothing rewinds
 * its pc after it resumes and it may be moved like any other. */
static inline bool inject_arch_in_syscall(const struct inject_regs *r)
{
	(void)r;
	return false;
}

/* A function's return value, once it returned (x0). */
static inline uint64_t inject_arch_retval(const struct inject_regs *r)
{
	return r->g.regs[0];
}

/* The registers of a call to fn with the stack pointer at sp (16-byte
 * aligned) and args[0 .. nargs) (nargs <= INJECT_ARCH_MAX_ARGS) in x0 ..;
 * the link register 0, so fn's return faults at pc 0 (the end of the
 * call: inject_call.c). */
void inject_arch_call_setup(struct inject_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args,
                            int nargs);

#endif
