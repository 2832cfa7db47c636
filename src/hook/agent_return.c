/*
 * The agent's return trampoline (hook context): where every traced
 * function returns once ada_hook_on_enter() replaced its return address.
 *
 * Why the agent carries its own instead of hook_arch_emit_return_
 * trampoline(): that one saves only rax and rdx, on the ABI's word that
 * the other caller-saved registers are dead after a return. GCC's
 * interprocedural register allocation (-fipa-ra, on at -O2) breaks that
 * word for calls to functions in the same unit: the caller keeps values in
 * caller-saved registers the callee is known not to touch. Python 3.11's
 * _Py_PreInitializeFromPyArgv keeps r8, r9 and r10 live across
 * PyPreConfig_InitPythonConfig and crashed. So this stub preserves every
 * general-purpose caller-saved register (rax, rcx, rdx, rsi, rdi, r8-r11);
 * vector registers are not touched by the handler (-mgeneral-regs-only,
 * xsave around its cold paths). To go back to the arch layer's
 * trampoline, it needs the same guarantee.
 *
 * Layout (S = rsp right after the function's `ret`; S-8 was its slot):
 *     push rax, rdx, rcx, rsi, rdi, r8, r9, r10, r11, rbp  (S-8 .. S-80)
 *     rbp = rsp; rdi = S; align rsp; call ada_hook_on_exit -> rax = orig
 *     rsp = rbp; pop rbp
 *     r11 = saved rax; [S-8] = orig; rax = r11
 *     pop r11 .. rdx (rsp = S-8); ret -> orig, rsp = S
 * No locked instruction (no xchg with memory) on this hot path.
 */
#include "agent_internal.h"

__asm__(".text\n"
	".globl agent_return_stub\n"
	".hidden agent_return_stub\n"
	".type agent_return_stub, @function\n"
	".p2align 4\n"
	"agent_return_stub:\n"
	"	push %rax\n"
	"	push %rdx\n"
	"	push %rcx\n"
	"	push %rsi\n"
	"	push %rdi\n"
	"	push %r8\n"
	"	push %r9\n"
	"	push %r10\n"
	"	push %r11\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 80(%rsp), %rdi\n"
	"	and $-16, %rsp\n"
	"	call ada_hook_on_exit\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	mov 64(%rsp), %r11\n"
	"	mov %rax, 64(%rsp)\n"
	"	mov %r11, %rax\n"
	"	pop %r11\n"
	"	pop %r10\n"
	"	pop %r9\n"
	"	pop %r8\n"
	"	pop %rdi\n"
	"	pop %rsi\n"
	"	pop %rcx\n"
	"	pop %rdx\n"
	"	ret\n"
	".size agent_return_stub, .-agent_return_stub\n");
