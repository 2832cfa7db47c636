/*
 * x86_64 register access for src/inject (inject_arch.h).
 *
 * Threads: the thread that stopped the target.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>

#include "inject_arch.h"

_Static_assert(INJECT_ARCH_XSTATE_NOTE == NT_X86_XSTATE, "the xsave register set");

#define INJECT_EFLAGS_TF 0x100ull
#define INJECT_EFLAGS_DF 0x400ull

int inject_arch_get_regs(pid_t tid, struct inject_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, 0, &r->g) < 0 ? -errno : 0;
}

int inject_arch_set_regs(pid_t tid, const struct inject_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, 0, &r->g) < 0 ? -errno : 0;
}

void inject_arch_call_setup(struct inject_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args,
                            int nargs)
{
	static const size_t argreg[INJECT_ARCH_MAX_ARGS] = {
	    offsetof(struct user_regs_struct, rdi), offsetof(struct user_regs_struct, rsi),
	    offsetof(struct user_regs_struct, rdx), offsetof(struct user_regs_struct, rcx),
	    offsetof(struct user_regs_struct, r8),  offsetof(struct user_regs_struct, r9)};
	for (int i = 0; i < nargs && i < INJECT_ARCH_MAX_ARGS; i++)
		memcpy((char *)&r->g + argreg[i], &args[i], sizeof(uint64_t));
	r->g.rsp = sp;
	r->g.rip = fn;
	r->g.rax = 0;
	r->g.orig_rax = (unsigned long long)-1; /* no system call restart into fn */
	r->g.eflags &= ~(INJECT_EFLAGS_TF | INJECT_EFLAGS_DF);
}
