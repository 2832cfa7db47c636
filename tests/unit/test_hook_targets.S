/*
 * Hand-written functions with the prologues the x86_64 relocator must
 * handle, hooked for real by test_hook_clobber.c, and the register-setting
 * call harness that proves the trampolines preserve what they must.
 * Each function's size is exported as <name>_size (ELF sizes are not at
 * hand without parsing our own symtab).
 */
	.intel_syntax noprefix
	.text

#define FUNC(name) .globl name; .type name, @function; .p2align 4; name:
#define END(name) name##_end: .size name, . - name; \
	.section .rodata; .globl name##_size; name##_size: .quad name##_end - name; .text

/* mov rax, [rip+t_data]: RIP-relative FIRST instruction (7 bytes) */
FUNC(t_rip_first)
	mov rax, [rip + t_data]
	add rax, rdi
	ret
END(t_rip_first)

/* lea rax, [rip+t_data] first, then a load through it */
FUNC(t_lea_first)
	lea rax, [rip + t_data]
	mov rax, [rax + 8]
	add rax, rsi
	ret
END(t_lea_first)

/* a jcc inside the first 5 bytes: test(2) je(2) lea(3) */
FUNC(t_jcc_first)
	test edi, edi
	je 1f
	lea eax, [rdi + rdi]
	ret
1:	mov eax, 77
	ret
END(t_jcc_first)

/* endbr64 (4) + push rbx (1): exactly 5 bytes, two instructions */
FUNC(t_endbr)
	endbr64
	push rbx
	mov rbx, rdi
	lea rax, [rbx + 1]
	pop rbx
	ret
END(t_endbr)

/* call rel32 as the first (and last displaced) instruction */
FUNC(t_call_first)
	call t_helper
	add rax, 5
	ret
END(t_call_first)

/* a 5-byte tail-call thunk: jmp rel32, forced (as would pick rel8) */
FUNC(t_thunk)
	.byte 0xe9
	.long t_helper - . - 4
END(t_thunk)

/* rax = 2 * rdi; records its return address in t_helper_ret so the test
 * sees that a relocated call pushed the ORIGINAL return address. */
FUNC(t_helper)
	mov rax, [rsp]
	mov [rip + t_helper_ret], rax
	lea rax, [rdi + rdi]
	ret
END(t_helper)

/* Stores every register as it arrived into t_dump[15] (RIP-relative
 * store first) and xmm0..15 into t_xdump, returns rax = 0x1234,
 * rdx = 0x5678. */
FUNC(t_regs_dump)
	mov [rip + t_dump + 0], rbx
	mov [rip + t_dump + 8], rbp
	mov [rip + t_dump + 16], r12
	mov [rip + t_dump + 24], r13
	mov [rip + t_dump + 32], r14
	mov [rip + t_dump + 40], r15
	mov [rip + t_dump + 48], rdi
	mov [rip + t_dump + 56], rsi
	mov [rip + t_dump + 64], rdx
	mov [rip + t_dump + 72], rcx
	mov [rip + t_dump + 80], r8
	mov [rip + t_dump + 88], r9
	mov [rip + t_dump + 96], rax
	mov [rip + t_dump + 104], r10
	mov [rip + t_dump + 112], r11
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movups [rip + t_xdump + 16 * \i], xmm\i
	.endr
	mov eax, 0x1234
	mov edx, 0x5678
	ret
END(t_regs_dump)

/* The halves of call_with_regs around its call (macros: call_with_stack
 * shares them). Loads in[] (rsi) into the registers... */
.macro CWR_LOAD
	mov rbx, [rsi + 0]
	mov rbp, [rsi + 8]
	mov r12, [rsi + 16]
	mov r13, [rsi + 24]
	mov r14, [rsi + 32]
	mov r15, [rsi + 40]
	mov rdi, [rsi + 48]
	mov rdx, [rsi + 64]
	mov rcx, [rsi + 72]
	mov r8, [rsi + 80]
	mov r9, [rsi + 88]
	mov rax, [rsi + 96]
	mov r10, [rsi + 104]
	mov r11, [rsi + 112]
	mov rsi, [rsi + 56]
.endm
/* ... and stores them into out[] (the pointer at [rsp+8]) after it. */
.macro CWR_SAVE
	mov [rip + cwr_rax], rax
	mov rax, [rsp + 8]
	mov [rax + 0], rbx
	mov [rax + 8], rbp
	mov [rax + 16], r12
	mov [rax + 24], r13
	mov [rax + 32], r14
	mov [rax + 40], r15
	mov [rax + 64], rdi
	mov [rax + 72], rsi
	mov [rax + 80], rcx
	mov [rax + 88], r8
	mov [rax + 96], r9
	mov [rax + 104], r10
	mov [rax + 112], r11
	mov [rax + 56], rdx
	mov rdx, [rip + cwr_rax]
	mov [rax + 48], rdx
	add rsp, 16
	pop r15
	pop r14
	pop r13
	pop r12
	pop rbp
	pop rbx
	ret
.endm

/* uint64_t call_with_regs(void *fn, const uint64_t in[15], uint64_t out[15])
 * in:  rbx rbp r12 r13 r14 r15 rdi rsi rdx rcx r8 r9 rax r10 r11
 * out: rbx rbp r12 r13 r14 r15 (after the call) rax rdx (returned)
 *      rdi rsi rcx r8 r9 r10 r11 (after the call: caller-saved, but a
 *      callee known not to touch them may leave them live, gcc -fipa-ra) */
FUNC(call_with_regs)
	push rbx
	push rbp
	push r12
	push r13
	push r14
	push r15
	push rdx
	sub rsp, 8
	mov [rip + cwr_fn], rdi
	CWR_LOAD
	call [rip + cwr_fn]
	CWR_SAVE
END(call_with_regs)

/* void call_with_stack(void *fn, const uint64_t in[15], uint64_t out[15],
 *                      const uint64_t stk[16])
 * call_with_regs with stk[] the 16 words above the callee's return
 * address (its return slot's [1..16]: what a stack snapshot copies),
 * and xmm0..15 set from t_xin before the call, stored into t_xout after
 * it (the detail lane's member path uses a vector register). */
FUNC(call_with_stack)
	push rbx
	push rbp
	push r12
	push r13
	push r14
	push r15
	push rdx
	sub rsp, 8
	mov [rip + cwr_fn], rdi
	sub rsp, 128
	xor eax, eax
1:	mov r8, [rcx + rax * 8]
	mov [rsp + rax * 8], r8
	inc eax
	cmp eax, 16
	jb 1b
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movups xmm\i, [rip + t_xin + 16 * \i]
	.endr
	CWR_LOAD
	call [rip + cwr_fn]
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movups [rip + t_xout + 16 * \i], xmm\i
	.endr
	add rsp, 128
	CWR_SAVE
END(call_with_stack)

	.data
	.p2align 4
	.globl t_data
t_data:	.quad 1000, 2000
	.globl t_dump
t_dump:	.zero 8 * 15
	.globl t_xin
	.p2align 4
t_xin:	.zero 16 * 16
	.globl t_xdump
t_xdump: .zero 16 * 16
	.globl t_xout
t_xout:	.zero 16 * 16
	.globl t_helper_ret
t_helper_ret: .quad 0
cwr_fn:	.quad 0
cwr_rax: .quad 0
	.section .note.GNU-stack, "", @progbits
