/*
 * aarch64 functions whose first instruction is each relocation class,
 * for test_hook_a64_run (hooked, then called). Each returns a value
 * that shows the displaced instruction did what it does unhooked.
 */
	.text
	.p2align 4

/* A frame-keeping function: a + b. */
	.globl a64t_plain
	.type a64t_plain, %function
a64t_plain:
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	add x0, x0, x1
	ldp x29, x30, [sp], #16
	ret
	.size a64t_plain, .-a64t_plain

/* adrp first: a64t_data's word. */
	.globl a64t_adrp
	.type a64t_adrp, %function
	.p2align 4
a64t_adrp:
	adrp x1, a64t_data
	ldr x0, [x1, #:lo12:a64t_data]
	ret
	.size a64t_adrp, .-a64t_adrp

/* adr first: the literal right behind. */
	.globl a64t_adr
	.type a64t_adr, %function
	.p2align 4
a64t_adr:
	adr x1, 1f
	ldr x0, [x1]
	ret
	.p2align 3
1:	.quad 0x1122334455667788
	.size a64t_adr, .-a64t_adr

/* ldr x literal first: x0 + 1000. */
	.globl a64t_ldr_x
	.type a64t_ldr_x, %function
	.p2align 4
a64t_ldr_x:
	ldr x1, 1f
	add x0, x0, x1
	ret
	.p2align 3
1:	.quad 1000
	.size a64t_ldr_x, .-a64t_ldr_x

/* ldr w literal first (zero-extends): 0xfffffffe. */
	.globl a64t_ldr_w
	.type a64t_ldr_w, %function
	.p2align 4
a64t_ldr_w:
	ldr w0, 1f
	ret
1:	.word 0xfffffffe
	.size a64t_ldr_w, .-a64t_ldr_w

/* ldrsw literal first (sign-extends): -2. */
	.globl a64t_ldrsw
	.type a64t_ldrsw, %function
	.p2align 4
a64t_ldrsw:
	ldrsw x0, 1f
	ret
1:	.word 0xfffffffe
	.size a64t_ldrsw, .-a64t_ldrsw

/* ldr d literal first: 2.5. */
	.globl a64t_ldr_d
	.type a64t_ldr_d, %function
	.p2align 4
a64t_ldr_d:
	ldr d0, 1f
	ret
	.p2align 3
1:	.double 2.5
	.size a64t_ldr_d, .-a64t_ldr_d

/* ldr q literal first: its high half. */
	.globl a64t_ldr_q
	.type a64t_ldr_q, %function
	.p2align 4
a64t_ldr_q:
	ldr q1, 1f
	mov x0, v1.d[1]
	ret
	.p2align 4
1:	.quad 0x1111, 0x2222333344445555
	.size a64t_ldr_q, .-a64t_ldr_q

/* b first: a tail call of a64t_plain. */
	.globl a64t_b
	.type a64t_b, %function
	.p2align 4
a64t_b:
	b a64t_plain
	.size a64t_b, .-a64t_b

/* cbz first: x0 == 0 ? 9 : 7. */
	.globl a64t_cbz
	.type a64t_cbz, %function
	.p2align 4
a64t_cbz:
	cbz x0, 1f
	mov x0, #7
	ret
1:	mov x0, #9
	ret
	.size a64t_cbz, .-a64t_cbz

/* tbnz first: bit 3 of x0 ? 2 : 1. */
	.globl a64t_tbnz
	.type a64t_tbnz, %function
	.p2align 4
a64t_tbnz:
	tbnz x0, #3, 1f
	mov x0, #1
	ret
1:	mov x0, #2
	ret
	.size a64t_tbnz, .-a64t_tbnz

/* bl first: the link is a64t_bl+4, so it returns through x2, which its
 * caller (a64t_call_bl) set: x0 + 1 + 10. */
	.globl a64t_bl
	.type a64t_bl, %function
	.p2align 4
a64t_bl:
	bl a64t_inc
	add x0, x0, #10
	br x2
	.size a64t_bl, .-a64t_bl

/* blr first, likewise: x0 + 1 + 100. */
	.globl a64t_blr
	.type a64t_blr, %function
	.p2align 4
a64t_blr:
	blr x1
	add x0, x0, #100
	br x2
	.size a64t_blr, .-a64t_blr

	.globl a64t_inc
	.type a64t_inc, %function
	.p2align 4
a64t_inc:
	add x0, x0, #1
	ret
	.size a64t_inc, .-a64t_inc

/* x0 + 1 again: the count block's own target (test_count_block). */
	.globl a64t_inc2
	.type a64t_inc2, %function
	.p2align 4
a64t_inc2:
	add x0, x0, #1
	ret
	.size a64t_inc2, .-a64t_inc2

/* fn(x0) with x2 = where it returns to (x1 = a64t_inc for a64t_blr). */
	.globl a64t_call_linked
	.type a64t_call_linked, %function
	.p2align 4
a64t_call_linked:
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	mov x3, x1
	adr x1, a64t_inc
	adr x2, 1f
	br x3
1:	ldp x29, x30, [sp], #16
	ret
	.size a64t_call_linked, .-a64t_call_linked

/* Calls fn (x0) with x9..x15 and x18 set to known values and returns
 * the number of them that changed across the call: the trampolines
 * must leave every caller-saved register a leaf does not touch. */
	.globl a64t_keeps_regs
	.type a64t_keeps_regs, %function
	.p2align 4
a64t_keeps_regs:
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	mov x16, x0
	mov x9, #9
	mov x10, #10
	mov x11, #11
	mov x12, #12
	mov x13, #13
	mov x14, #14
	mov x15, #15
	mov x18, #18
	mov x0, #1
	blr x16
	mov x0, #0
	cmp x9, #9
	cinc x0, x0, ne
	cmp x10, #10
	cinc x0, x0, ne
	cmp x11, #11
	cinc x0, x0, ne
	cmp x12, #12
	cinc x0, x0, ne
	cmp x13, #13
	cinc x0, x0, ne
	cmp x14, #14
	cinc x0, x0, ne
	cmp x15, #15
	cinc x0, x0, ne
	cmp x18, #18
	cinc x0, x0, ne
	ldp x29, x30, [sp], #16
	ret
	.size a64t_keeps_regs, .-a64t_keeps_regs

	.data
	.p2align 3
	.globl a64t_data
a64t_data:
	.quad 0x0badc0ffee
	.section .note.GNU-stack,"",%progbits
