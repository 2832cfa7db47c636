/*
 * aarch64 register access for src/inject (inject_arch.h): PTRACE_GETREGSET
 * and PTRACE_SETREGSET of NT_PRSTATUS (arm64 has no PTRACE_GETREGS), the
 * thread pointer through NT_ARM_TLS.
 *
 * Threads: the thread that stopped the target.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "inject_arch.h"

_Static_assert(INJECT_ARCH_XSTATE_NOTE == NT_PRFPREG, "the FPSIMD register set");
_Static_assert(sizeof(((struct inject_regs *)0)->g) == 34 * 8, "struct user_pt_regs");

#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif

int inject_arch_get_regs(pid_t tid, struct inject_regs *r)
{
	struct iovec io = {&r->g, sizeof(r->g)};
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) < 0)
		return -errno;
	if (io.iov_len != sizeof(r->g))
		return -EIO;
	/* Newer kernels add tpidr2 after tpidr_el0: the first word is ours. */
	uint64_t tls[2] = {0, 0};
	struct iovec t = {tls, sizeof(tls)};
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_TLS, &t) < 0)
		return -errno;
	r->tls = tls[0];
	return 0;
}

int inject_arch_set_regs(pid_t tid, const struct inject_regs *r)
{
	struct iovec io = {(void *)&r->g, sizeof(r->g)};
	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &io) < 0 ? -errno : 0;
}

/* PSTATE.SS: a single step pending; cleared so the call runs freely. */
#define INJECT_PSTATE_SS (1ull << 21)

void inject_arch_call_setup(struct inject_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args,
                            int nargs)
{
	for (int i = 0; i < nargs && i < INJECT_ARCH_MAX_ARGS; i++)
		r->g.regs[i] = args[i];
	r->g.regs[30] = 0; /* lr: fn returns to 0 */
	r->g.sp = sp & ~15ull;
	r->g.pc = fn;
	r->g.pstate &= ~INJECT_PSTATE_SS;
}
