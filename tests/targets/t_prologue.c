/*
 * Test target: entry sequences the relocator must handle, written in
 * assembly so no compiler setting changes them (issue 4, items 3 and 8):
 *   pro_riprel_add  first instruction a RIP-relative memory add;
 *   pro_riprel_lea  first instruction a RIP-relative lea;
 *   pro_jcc         a conditional rel8 branch inside the first 5 bytes;
 *   pro_jmp8        a rel8 jmp as first instruction, over dead bytes;
 *   pro_jmp_first   the whole function is one `jmp rel32` to pro_target
 *                   (a tail call: its frame may end in RETURN or EXCEPTION);
 *   pro_loop        a loop branches back to offset 2, inside any 5-byte
 *                   patch: too little padding next to it (4 bytes after,
 *                   3 before), it takes the padding form's slot in the
 *                   padding after pro_callind, whose own bytes take the
 *                   ordinary patch (docs/hooks.md, "The padding form"),
 *                   and is counted exactly;
 *   pro_switch      a PIC switch dispatch (cmp; ja | lea table; movslq;
 *                   add; jmp reg) whose table avoids the patch: hooked
 *                   by reading the table (issue 4 item 8);
 *   c_switch        the same from gcc (a dense switch at -O2), in C;
 *   pro_callind     an indirect call through memory (`call *8(%rdi)`) as
 *                   the last displaced instruction (python3.11's type slot
 *                   calls): relocated as push of the target, the original
 *                   return address in its place, ret (x86_reloc.c); its
 *                   callee pro_ind_callee must get the right argument and
 *                   return address (the result is checked, and its
 *                   return, when traced, must match);
 *   pro_out         cmp; ja to code 120 bytes on (out of what a count
 *                   block copies); a rip-relative load; ret.
 * With T_COPY_FORM set (e2e.count_copy: every pro_* count-only), main
 * checks that each asm function but pro_callind got the count block's
 * copy form (docs/hooks.md, "Count-only functions": its patch leads to a
 * count block with no jump back into the function) and pro_callind (a
 * call in its first bytes) the inline form; else it exits 7.

 * Each declares CFI (.cfi_startproc/.cfi_endproc) as compiled C and
 * glibc's assembly do: without it the agent leaves a function alone
 * (no_unwind_info, docs/hooks.md).
 * The assembly functions count nothing themselves; drive_asm(), a counted C
 * function, knows how many times it called each one. Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(drive_asm) X(pro_riprel_add) X(pro_riprel_lea) X(pro_jcc) X(pro_jmp8) X(pro_jmp_first)   \
	    X(pro_target) X(pro_loop) X(pro_switch) X(c_switch) X(pro_callind) X(pro_ind_callee)   \
	    X(pro_out)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

__attribute__((visibility("hidden"))) unsigned long pro_data[4];
/* Bytes of a count block copy_form() reads (HOOK_ARCH_COUNT_COPY_MAX). */
#define HOOK_COPY_SCAN 128

unsigned long pro_riprel_add(unsigned long x);
unsigned long *pro_riprel_lea(void);
unsigned long pro_jcc(unsigned long x);
unsigned long pro_jmp8(unsigned long x);
unsigned long pro_jmp_first(unsigned long x);
unsigned long pro_target(unsigned long x);
unsigned long pro_loop(unsigned long n);
unsigned long pro_switch(unsigned long x, unsigned long y);
struct pro_ind {
	unsigned long v;
	unsigned long (*fn)(const struct pro_ind *);
};
unsigned long pro_callind(const struct pro_ind *s);
unsigned long pro_out(unsigned long x);
unsigned long pro_ind_callee(const struct pro_ind *s);

__asm__(".text\n"
        ".p2align 4\n"
        ".globl pro_riprel_add\n.type pro_riprel_add,@function\n"
        "pro_riprel_add:\n"
        "  .cfi_startproc\n"
        "	addq $1, pro_data(%rip)\n"
        "	lea 1(%rdi), %rax\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_riprel_add, .-pro_riprel_add\n"

        ".p2align 4\n"
        ".globl pro_riprel_lea\n.type pro_riprel_lea,@function\n"
        "pro_riprel_lea:\n"
        "  .cfi_startproc\n"
        "	lea pro_data(%rip), %rax\n"
        "	addq $1, 8(%rax)\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_riprel_lea, .-pro_riprel_lea\n"

        ".p2align 4\n"
        ".globl pro_jcc\n.type pro_jcc,@function\n"
        "pro_jcc:\n"
        "  .cfi_startproc\n"
        "	test %rdi, %rdi\n"
        "	je 1f\n"
        "	addq $1, pro_data+16(%rip)\n"
        "1:	mov %rdi, %rax\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_jcc, .-pro_jcc\n"

        ".p2align 4\n"
        ".globl pro_jmp8\n.type pro_jmp8,@function\n"
        "pro_jmp8:\n"
        "  .cfi_startproc\n"
        "	jmp 1f\n"
        "	ud2\n"
        "	nop; nop; nop; nop\n"
        "1:	lea 2(%rdi), %rax\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_jmp8, .-pro_jmp8\n"

        ".p2align 4\n"
        ".globl pro_jmp_first\n.type pro_jmp_first,@function\n"
        "pro_jmp_first:\n"
        "  .cfi_startproc\n" /* jmp rel32, spelled out: gas would pick rel8 */
        "	.byte 0xe9\n"
        "	.long pro_target - . - 4\n"
        "  .cfi_endproc\n"
        ".size pro_jmp_first, .-pro_jmp_first\n"

        ".p2align 4\n"
        ".globl pro_target\n.type pro_target,@function\n"
        "pro_target:\n"
        "  .cfi_startproc\n"
        "	addq $1, pro_data+24(%rip)\n"
        "	lea 3(%rdi), %rax\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_target, .-pro_target\n"

        ".p2align 4\n"
        ".globl pro_loop\n.type pro_loop,@function\n"
        "pro_loop:\n"
        "  .cfi_startproc\n"
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	dec %rdi\n"
        "	jnz 1b\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_loop, .-pro_loop\n"

        ".p2align 4\n"
        ".globl pro_callind\n.type pro_callind,@function\n"
        "pro_callind:\n"
        "  .cfi_startproc\n"
        "	push %rbx\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_offset %rbx, -16\n"
        "	xor %esi, %esi\n"
        "	call *8(%rdi)\n"
        "	pop %rbx\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_callind, .-pro_callind\n"

        ".p2align 4\n"
        ".globl pro_ind_callee\n.type pro_ind_callee,@function\n"
        "pro_ind_callee:\n"
        "  .cfi_startproc\n"
        "	mov (%rdi), %rax\n"
        "	add $5, %rax\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_ind_callee, .-pro_ind_callee\n"

        ".p2align 4\n"
        ".globl pro_out\n.type pro_out,@function\n"
        "pro_out:\n"
        "  .cfi_startproc\n"
        "	cmp $2, %rdi\n"
        "	ja .Lpo_far\n"
        "	mov pro_data(%rip), %rax\n"
        "	add %rdi, %rax\n"
        "	ret\n"
        "	.skip 120, 0x90\n"
        ".Lpo_far:\n"
        "	lea 5(%rdi), %rax\n"
        "	ret\n"
        "  .cfi_endproc\n"
        ".size pro_out, .-pro_out\n");

/* Cases return y+10..y+40, the default y. The table is gcc's shape:
 * int32 offsets from the table's own address, in .rodata. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl pro_switch\n.type pro_switch,@function\n"
        "pro_switch:\n"
        "  .cfi_startproc\n"
        "	cmp $3, %edi\n"
        "	ja .Lpsw_def\n"
        "	mov %edi, %edi\n"
        "	lea .Lpsw_tab(%rip), %rdx\n"
        "	movslq (%rdx,%rdi,4), %rax\n"
        "	add %rdx, %rax\n"
        "	jmp *%rax\n"
        ".Lpsw_0:	lea 10(%rsi), %rax\n	ret\n"
        ".Lpsw_1:	lea 20(%rsi), %rax\n	ret\n"
        ".Lpsw_2:	lea 30(%rsi), %rax\n	ret\n"
        ".Lpsw_3:	lea 40(%rsi), %rax\n	ret\n"
        ".Lpsw_def:	mov %rsi, %rax\n	ret\n"
        "  .cfi_endproc\n"
        ".size pro_switch, .-pro_switch\n"
        ".section .rodata\n"
        ".p2align 2\n"
        ".Lpsw_tab:\n"
        "	.long .Lpsw_0 - .Lpsw_tab, .Lpsw_1 - .Lpsw_tab\n"
        "	.long .Lpsw_2 - .Lpsw_tab, .Lpsw_3 - .Lpsw_tab\n"
        ".text\n");

/* A dense switch with distinct bodies: gcc -O2 dispatches it through a
 * table, and its entry is `cmp; ja` (two displaced instructions). Not
 * counted inside (that would put a counter increment first): the caller
 * adds its calls. */
TC_FN static int c_switch(int x, int y)
{
	switch (x) {
	case 0:
		return y + 11;
	case 1:
		return y * 23;
	case 2:
		return y ^ 37;
	case 3:
		return y - 41;
	case 4:
		return y << 3;
	case 5:
		return y / 61;
	case 6:
		return y % 73;
	default:
		return -1;
	}
}

TC_FN static unsigned long drive_asm(unsigned long rounds)
{
	TC_ENTER(FN_drive_asm);
	unsigned long acc = 0;
	for (unsigned long i = 0; i < rounds; i++) {
		acc += pro_riprel_add(i);
		acc += *pro_riprel_lea();
		acc += pro_jcc(i % 3);
		acc += pro_jmp8(i);
		acc += pro_jmp_first(i);
		acc += pro_target(i);
		acc += pro_loop(i + 1);
		acc += pro_switch(i % 6, i);
		acc += (unsigned long)c_switch((int)(i % 9) - 1, (int)i);
		acc += pro_out(i % 4);
		struct pro_ind ind = {i, pro_ind_callee};
		if (pro_callind(&ind) != i + 5)
			abort(); /* the relocated indirect call went wrong */
	}
	TC_ADD(FN_pro_riprel_add, rounds);
	TC_ADD(FN_pro_riprel_lea, rounds);
	TC_ADD(FN_pro_jcc, rounds);
	TC_ADD(FN_pro_jmp8, rounds);
	TC_ADD(FN_pro_jmp_first, rounds);
	TC_EITHER(FN_pro_jmp_first, rounds);
	TC_ADD(FN_pro_target, 2 * rounds);
	TC_ADD(FN_pro_switch, rounds);
	TC_ADD(FN_c_switch, rounds);
	TC_ADD(FN_pro_callind, rounds);
	TC_ADD(FN_pro_ind_callee, rounds);
	TC_ADD(FN_pro_loop, rounds);
	TC_ADD(FN_pro_out, rounds);
	return acc;
}

/* Where fn's patch leads (the padding form: through its slot's jmp), or
 * NULL when fn is not patched with a jmp. Reads only its own code. */
static inline __attribute__((always_inline)) const unsigned char *patch_target(const void *fn)
{
	const unsigned char *p = fn;
	int rel;
	if (p[0] == 0xeb) /* jmp rel8 to the padding slot */
		p += 2 + (signed char)p[1];
	if (p[0] != 0xe9)
		return NULL;
	memcpy(&rel, p + 1, 4);
	return p + 5 + rel;
}

/* Whether fn is count-only (its patch leads to a count block: an %fs
 * prefix first) with a block in the copy form: no jmp rel32 in the
 * block's first bytes back into fn's first 15 (the inline form's jump
 * back behind the patch; pro_jmp_first's copied tail jmp goes to
 * pro_target, 16 bytes on). */
static inline __attribute__((always_inline)) int copy_form(const void *fn)
{
	const unsigned char *b = patch_target(fn), *f = fn;
	if (!b || b[0] != 0x64)
		return 0;
	for (int k = 0; k < HOOK_COPY_SCAN; k++) {
		int rel;
		memcpy(&rel, b + k + 1, 4);
		const unsigned char *to = b + k + 5 + rel;
		if (b[k] == 0xe9 && to > f && to < f + 16)
			return 0;
	}
	return 1;
}

static inline __attribute__((always_inline)) int copy_forms_ok(void)
{
	const void *const copied[] = {
	    (void *)pro_riprel_add, (void *)pro_riprel_lea, (void *)pro_jcc,  (void *)pro_jmp8,
	    (void *)pro_jmp_first,  (void *)pro_target,     (void *)pro_loop, (void *)pro_switch,
	    (void *)pro_ind_callee, (void *)pro_out};
	if (!patch_target((void *)pro_riprel_add))
		return 1; /* untraced: no block to look at */
	for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
		if (!copy_form(copied[i]))
			return 0;
	const unsigned char *b = patch_target((void *)pro_callind);
	return b && b[0] == 0x64 && !copy_form((void *)pro_callind);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "prologue", fn_names, FN_COUNT);
	printf("prologue: %lu\n", drive_asm(50));
	printf("data: %lu %lu %lu %lu\n", pro_data[0], pro_data[1], pro_data[2], pro_data[3]);
	if (getenv("T_COPY_FORM") && !copy_forms_ok()) /* called only then: at -O0 a call */
		return 7;
	return 0;
}
