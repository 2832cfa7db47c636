/*
 * The x86_64 half of src/inject (inject_internal.h includes it; an
 * architecture is this folder and its source's line in
 * src/inject/CMakeLists.txt): a stopped thread's registers as ptrace
 * gives them, what the attach reads of them (pc, stack, TLS base, the
 * system call it sits in), the call frame of an injected call, and the
 * vector state's register set.
 *
 * Threads: the thread that stopped the target (ptrace binds tracees to
 * it).
 */
#ifndef ADA_INJECT_X86_64_ARCH_H
#define ADA_INJECT_X86_64_ARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* A thread's general registers (PTRACE_GETREGS). */
struct inject_regs {
	struct user_regs_struct g;
};

/* Bytes below the stack pointer a function may use (the ABI's red zone):
 * an injected call's frame goes below them. */
#define INJECT_ARCH_RED_ZONE 128
/* Arguments an injected call passes in registers. */
#define INJECT_ARCH_MAX_ARGS 6
/* The vector state's register set (PTRACE_GETREGSET; xsave layout) and
 * the most it takes. */
#define INJECT_ARCH_XSTATE_NOTE 0x202 /* NT_X86_XSTATE */
#define INJECT_ARCH_XSTATE_MAX 16384
/* The call pushes its return address: the frame holds it (0). */
#define INJECT_ARCH_RET_ON_STACK 1

/* 0 or -errno. */
int inject_arch_get_regs(pid_t tid, struct inject_regs *r);
int inject_arch_set_regs(pid_t tid, const struct inject_regs *r);

static inline uint64_t inject_arch_pc(const struct inject_regs *r)
{
	return r->g.rip;
}

static inline void inject_arch_set_pc(struct inject_regs *r, uint64_t pc)
{
	r->g.rip = pc;
}

static inline uint64_t inject_arch_sp(const struct inject_regs *r)
{
	return r->g.rsp;
}

/* The thread's TLS base (the thread pointer: fs). */
static inline uint64_t inject_arch_tls(const struct inject_regs *r)
{
	return r->g.fs_base;
}

/* Stopped inside a system call (which restarts when it resumes). */
static inline bool inject_arch_in_syscall(const struct inject_regs *r)
{
	return (long long)r->g.orig_rax >= 0;
}

/* A function's return value, once it returned. */
static inline uint64_t inject_arch_retval(const struct inject_regs *r)
{
	return r->g.rax;
}

/* The registers of a call to fn with the stack pointer at sp (the
 * return address already there) and args[0 .. nargs) (nargs <=
 * INJECT_ARCH_MAX_ARGS) in the argument registers: no variadic vector
 * count, no system call restart into fn, no single-step, DF clear. */
void inject_arch_call_setup(struct inject_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args,
                            int nargs);

#endif
