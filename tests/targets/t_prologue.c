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
 *                   patch: it cannot be hooked safely and must show no
 *                   events at all (its table count is 0 on purpose).
 * The assembly functions count nothing themselves; drive_asm(), a counted C
 * function, knows how many times it called each one. Single-threaded.
 */
#include <stdio.h>

#include "tcount.h"

#define FUNCS(X)                                                               \
	X(main) X(drive_asm) X(pro_riprel_add) X(pro_riprel_lea) X(pro_jcc)    \
	X(pro_jmp8) X(pro_jmp_first) X(pro_target) X(pro_loop)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

__attribute__((visibility("hidden"))) unsigned long pro_data[4];

unsigned long pro_riprel_add(unsigned long x);
unsigned long *pro_riprel_lea(void);
unsigned long pro_jcc(unsigned long x);
unsigned long pro_jmp8(unsigned long x);
unsigned long pro_jmp_first(unsigned long x);
unsigned long pro_target(unsigned long x);
unsigned long pro_loop(unsigned long n);

__asm__(".text\n"
	".p2align 4\n"
	".globl pro_riprel_add\n.type pro_riprel_add,@function\n"
	"pro_riprel_add:\n"
	"	addq $1, pro_data(%rip)\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	".size pro_riprel_add, .-pro_riprel_add\n"

	".p2align 4\n"
	".globl pro_riprel_lea\n.type pro_riprel_lea,@function\n"
	"pro_riprel_lea:\n"
	"	lea pro_data(%rip), %rax\n"
	"	addq $1, 8(%rax)\n"
	"	ret\n"
	".size pro_riprel_lea, .-pro_riprel_lea\n"

	".p2align 4\n"
	".globl pro_jcc\n.type pro_jcc,@function\n"
	"pro_jcc:\n"
	"	test %rdi, %rdi\n"
	"	je 1f\n"
	"	addq $1, pro_data+16(%rip)\n"
	"1:	mov %rdi, %rax\n"
	"	ret\n"
	".size pro_jcc, .-pro_jcc\n"

	".p2align 4\n"
	".globl pro_jmp8\n.type pro_jmp8,@function\n"
	"pro_jmp8:\n"
	"	jmp 1f\n"
	"	ud2\n"
	"	nop; nop; nop; nop\n"
	"1:	lea 2(%rdi), %rax\n"
	"	ret\n"
	".size pro_jmp8, .-pro_jmp8\n"

	".p2align 4\n"
	".globl pro_jmp_first\n.type pro_jmp_first,@function\n"
	"pro_jmp_first:\n" /* jmp rel32, spelled out: gas would pick rel8 */
	"	.byte 0xe9\n"
	"	.long pro_target - . - 4\n"
	".size pro_jmp_first, .-pro_jmp_first\n"

	".p2align 4\n"
	".globl pro_target\n.type pro_target,@function\n"
	"pro_target:\n"
	"	addq $1, pro_data+24(%rip)\n"
	"	lea 3(%rdi), %rax\n"
	"	ret\n"
	".size pro_target, .-pro_target\n"

	".p2align 4\n"
	".globl pro_loop\n.type pro_loop,@function\n"
	"pro_loop:\n"
	"	xor %eax, %eax\n"
	"1:	add $3, %rax\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"	ret\n"
	".size pro_loop, .-pro_loop\n");

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
	}
	TC_ADD(FN_pro_riprel_add, rounds);
	TC_ADD(FN_pro_riprel_lea, rounds);
	TC_ADD(FN_pro_jcc, rounds);
	TC_ADD(FN_pro_jmp8, rounds);
	TC_ADD(FN_pro_jmp_first, rounds);
	TC_EITHER(FN_pro_jmp_first, rounds);
	TC_ADD(FN_pro_target, 2 * rounds);
	/* pro_loop: not counted, it must not be hooked (see above). */
	return acc;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "prologue", fn_names, FN_COUNT);
	printf("prologue: %lu\n", drive_asm(50));
	printf("data: %lu %lu %lu %lu\n", pro_data[0], pro_data[1], pro_data[2], pro_data[3]);
	return 0;
}
