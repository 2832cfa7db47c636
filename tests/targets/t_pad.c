/*
 * Test target: functions the 5-byte patch cannot take, hooked in the
 * padding form (a 2-byte jump at the entry to a jump in the alignment
 * padding next to the function; docs/hooks.md, "The padding form"),
 * and the ones that must stay unhooked. Written in assembly so no
 * compiler setting changes the bytes, each with CFI as compiled code has:
 *   pad_short3     `mov %esi,(%rdi); ret`, 3 bytes, padding after it;
 *   pad_short4     `mov %rsi,(%rdi); ret`, 4 bytes, padding after it;
 *   pad_loop       a loop back to offset 2 (inside a 5-byte patch, at
 *                  the end of the 2-byte one), padding after it;
 *   pad_longloop   the same, too long for the jump to reach the padding
 *                  after it: takes the padding before it;
 *   pad_one        `ret`, 1 byte: the entry jump covers it and the
 *                  padding's first byte;
 *   nopad3         3 bytes with a function right before and right after
 *                  it: no padding (stays too_short, no events);
 *   hostile3       3 bytes followed by nops that are code: jumper jumps
 *                  into them and runs on into hid_next (stays too_short,
 *                  no events: the nops are a branch target);
 *   jumper, hid_next  ordinary functions around it (jumper's jump into the
 *                  nops reaches hid_next as a tail call);
 *   pad_inner      a loop back to offset 2, about 200 bytes, right after
 *                  inner_prev (no padding before it), its padding after it
 *                  out of reach: takes the padding inside it, after a ret;
 *   pad_hinner     the same, but jumper2 jumps into that padding (it is
 *                  code): stays branch_into_patch, no events;
 *   pad_waive      a loop back to offset 2 with 7 bytes of padding before
 *                  it, after waive_prev, a 5-byte function the ordinary
 *                  patch takes: the 7 are pad_waive's (waive_prev needs
 *                  none), and no padding after it (waive_next follows);
 *   pad_nowaive    the same after nowaive_prev, 4 bytes long, whose own
 *                  slot is the first 5 of the 7: stays branch_into_patch,
 *                  no events (nowaive_prev is hooked in the padding form).
 * The assembly functions count nothing themselves; drive(), a counted C
 * function, knows how many times it called each. Single-threaded.
 * `t_pad_O2 N` runs N rounds (default 40); `t_pad_O2 budget` calls pad_short3
 * until --overhead-budget moved it, then as many times again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main) X(drive) X(pad_short3) X(pad_short4) X(pad_one) X(pad_loop) X(pad_longloop)       \
	    X(nopad_prev) X(nopad_next) X(jumper) X(hid_next) X(inner_prev) X(pad_inner)             \
	    X(hinner_prev) X(jumper2) X(waive_prev) X(pad_waive) X(waive_next) X(nowaive_prev)     \
	    X(nowaive_next) X(drive_budget)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

void pad_short3(unsigned *p, unsigned v);
void pad_short4(unsigned long *p, unsigned long v);
unsigned long pad_loop(unsigned long n);
unsigned long pad_longloop(unsigned long n);
void pad_one(void);
unsigned long nopad_prev(unsigned long x);
void nopad3(unsigned *p, unsigned v);
unsigned long nopad_next(unsigned long x);
void hostile3(unsigned *p, unsigned v);
unsigned long hid_next(unsigned long x);
unsigned long jumper(unsigned long x);
unsigned long inner_prev(unsigned long x);
unsigned long pad_inner(unsigned long n);
unsigned long hinner_prev(unsigned long x);
unsigned long pad_hinner(unsigned long n);
unsigned long jumper2(void);
unsigned long waive_prev(unsigned long x);
unsigned long pad_waive(unsigned long n);
unsigned long waive_next(unsigned long x);
void nowaive_prev(unsigned long *p, unsigned long v);
unsigned long pad_nowaive(unsigned long n);
unsigned long nowaive_next(unsigned long x);

#define FN_BEGIN(name) ".globl " #name "\n.type " #name ",@function\n" #name ":\n.cfi_startproc\n"
#define FN_END(name) ".cfi_endproc\n.size " #name ", .-" #name "\n"

// clang-format off
__asm__(".text\n"
        ".p2align 5\n"
        FN_BEGIN(pad_short3) "	mov %esi, (%rdi)\n	ret\n" FN_END(pad_short3)
        ".p2align 4\n"
        FN_BEGIN(pad_short4) "	mov %rsi, (%rdi)\n	ret\n" FN_END(pad_short4)
        ".p2align 4\n"
        FN_BEGIN(pad_one) "	ret\n" FN_END(pad_one)
        /* 12 bytes; 20 bytes of padding after it */
        ".p2align 5\n"
        FN_BEGIN(pad_loop)
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	dec %rdi\n"
        "	jnz 1b\n"
        "	ret\n"
        FN_END(pad_loop)
        /* about 180 bytes: the padding after it is out of a rel8's reach,
         * the 20 bytes before it (after pad_loop) are not */
        ".p2align 5\n"
        FN_BEGIN(pad_longloop)
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	.fill 160, 1, 0x90\n"
        "	dec %rdi\n"
        "	jnz 1b\n"
        "	ret\n"
        FN_END(pad_longloop)
        /* three functions back to back: no padding around nopad3 */
        ".p2align 4\n"
        FN_BEGIN(nopad_prev) "	lea 1(%rdi), %rax\n	ret\n" FN_END(nopad_prev)
        FN_BEGIN(nopad3) "	mov %esi, (%rdi)\n	ret\n" FN_END(nopad3)
        FN_BEGIN(nopad_next) "	lea 2(%rdi), %rax\n	ret\n" FN_END(nopad_next)
        /* hostile3's "padding" is code: jumper jumps into it */
        ".p2align 4\n"
        FN_BEGIN(hostile3) "	mov %esi, (%rdi)\n	ret\n" FN_END(hostile3)
        ".Lpad_hid:\n"
        "	nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop\n"
        ".p2align 4\n"
        FN_BEGIN(hid_next) "	lea 5(%rdi), %rax\n	ret\n" FN_END(hid_next)
        ".p2align 4\n"
        FN_BEGIN(jumper)
        "	add $0, %rdi\n"
        "	jmp .Lpad_hid\n"
        FN_END(jumper)
        /* pad_inner packed after inner_prev; its padding after the ret is
         * within reach, the padding after it is not */
        ".p2align 4\n"
        FN_BEGIN(inner_prev) "	lea 3(%rdi), %rax\n	ret\n" FN_END(inner_prev)
        FN_BEGIN(pad_inner)
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	dec %rdi\n"
        "	jnz 3f\n"
        "	ret\n"
        "	.p2align 4\n"
        "3:	.rept 60\n	mov %rax, %rcx\n	.endr\n"
        "	jmp 1b\n"
        FN_END(pad_inner)
        /* the same, but jumper2 jumps into its padding */
        ".p2align 4\n"
        FN_BEGIN(hinner_prev) "	lea 4(%rdi), %rax\n	ret\n" FN_END(hinner_prev)
        FN_BEGIN(pad_hinner)
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	dec %rdi\n"
        "	jnz 3f\n"
        "	ret\n"
        ".Lpad_hinner_fill:\n"
        "	.p2align 4\n"
        "3:	.rept 60\n	mov %rax, %rcx\n	.endr\n"
        "	jmp 1b\n"
        FN_END(pad_hinner)
        ".p2align 4\n"
        FN_BEGIN(jumper2)
        "	mov $1, %edi\n"
        "	xor %eax, %eax\n"
        "	jmp .Lpad_hinner_fill\n"
        FN_END(jumper2)
        /* 7 bytes of padding between waive_prev and pad_waive, none after */
        ".p2align 4\n"
        FN_BEGIN(waive_prev) "	lea 7(%rdi), %rax\n	ret\n" FN_END(waive_prev)
        "	.fill 7, 1, 0x90\n"
        FN_BEGIN(pad_waive)
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	dec %rdi\n"
        "	jnz 1b\n"
        "	ret\n"
        FN_END(pad_waive)
        FN_BEGIN(waive_next) "	lea 8(%rdi), %rax\n	ret\n" FN_END(waive_next)
        /* the same after a 4-byte function, which claims the 7's front */
        ".p2align 4\n"
        FN_BEGIN(nowaive_prev) "	mov %rsi, (%rdi)\n	ret\n" FN_END(nowaive_prev)
        "	.fill 7, 1, 0x90\n"
        FN_BEGIN(pad_nowaive)
        "	xor %eax, %eax\n"
        "1:	add $3, %rax\n"
        "	dec %rdi\n"
        "	jnz 1b\n"
        "	ret\n"
        FN_END(pad_nowaive)
        FN_BEGIN(nowaive_next) "	lea 9(%rdi), %rax\n	ret\n" FN_END(nowaive_next));
// clang-format on

TC_FN static unsigned long drive(unsigned long rounds)
{
	TC_ENTER(FN_drive);
	unsigned long acc = 0, l = 0;
	unsigned u = 0;
	for (unsigned long i = 0; i < rounds; i++) {
		pad_short3(&u, (unsigned)i);
		acc += u;
		pad_short4(&l, i);
		acc += l;
		acc += pad_loop(i + 1);
		acc += pad_longloop(i + 2);
		pad_one();
		acc += nopad_prev(i);
		nopad3(&u, (unsigned)i + 1);
		acc += u;
		acc += nopad_next(i);
		hostile3(&u, (unsigned)i + 2);
		acc += u;
		acc += hid_next(i);
		acc += jumper(i);
		acc += inner_prev(i) + pad_inner(i + 1);
		acc += hinner_prev(i) + pad_hinner(i + 1) + jumper2();
		acc += waive_prev(i) + pad_waive(i + 1) + waive_next(i);
		nowaive_prev(&l, i);
		acc += l + pad_nowaive(i + 1) + nowaive_next(i);
	}
	TC_ADD(FN_pad_short3, rounds);
	TC_ADD(FN_pad_short4, rounds);
	TC_ADD(FN_pad_one, rounds);
	TC_ADD(FN_pad_loop, rounds);
	TC_ADD(FN_pad_longloop, rounds);
	TC_ADD(FN_nopad_prev, rounds);
	TC_ADD(FN_nopad_next, rounds);
	/* jumper leaves by a jump into hostile3's nops, which run on into
	 * hid_next: a tail call (its frame may end in RETURN or EXCEPTION) */
	TC_ADD(FN_jumper, rounds);
	TC_EITHER(FN_jumper, rounds);
	TC_ADD(FN_hid_next, 2 * rounds);
	TC_ADD(FN_inner_prev, rounds);
	TC_ADD(FN_pad_inner, rounds);
	TC_ADD(FN_hinner_prev, rounds);
	/* jumper2 leaves through pad_hinner's loop and ret: a tail call */
	TC_ADD(FN_jumper2, rounds);
	TC_EITHER(FN_jumper2, rounds);
	TC_ADD(FN_waive_prev, rounds);
	TC_ADD(FN_pad_waive, rounds);
	TC_ADD(FN_waive_next, rounds);
	TC_ADD(FN_nowaive_prev, rounds);
	TC_ADD(FN_nowaive_next, rounds);
	/* nopad3, hostile3, pad_hinner, pad_nowaive: not hooked (the test
	 * checks their reasons), so not counted */
	return acc;
}

/* "budget": whether ada's --overhead-budget moved pad_short3 (the
 * padding form: its entry's jmp rel8 leads to a jmp rel32 in the padding)
 * to count-only: that jmp leads to a count block, which starts with an
 * %fs prefix. Only reads its own code. */
static int pad_moved(const unsigned char *p)
{
	if (p[0] != 0xeb)
		return 0;
	const unsigned char *q = p + 2 + (signed char)p[1];
	int rel;
	if (q[0] != 0xe9)
		return 0;
	memcpy(&rel, q + 1, 4);
	return q[5 + rel] == 0x64;
}

/* pad_short3 alone until the budget moved it (at most 2^24 rounds), then
 * as many rounds again: its calls are events before, counts after. */
TC_FN static unsigned long drive_budget(void)
{
	TC_ENTER(FN_drive_budget);
	unsigned u = 0;
	unsigned long n = 0, acc = 0, seen = 0;
	for (; n < (1ul << 24) && (!seen || n < 2 * seen); n++) {
		pad_short3(&u, (unsigned)n);
		acc += u;
		if (!seen && (n & 65535) == 0 && pad_moved((const unsigned char *)pad_short3))
			seen = n + 1;
	}
	TC_ADD(FN_pad_short3, n);
	return acc;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "pad", fn_names, FN_COUNT);
	if (argc > 1 && !strcmp(argv[1], "budget")) {
		/* the same line traced or not (the number of rounds differs) */
		unsigned long acc = drive_budget();
		__asm__ volatile("" ::"r"(acc));
		printf("pad: budget\n");
		return 0;
	}
	unsigned long rounds = argc > 1 && argv[1][0] != '-' ? strtoul(argv[1], NULL, 10) : 40;
	printf("pad: %lu\n", drive(rounds));
	return 0;
}
