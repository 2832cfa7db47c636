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
 *                  nops reaches hid_next as a tail call).
 * The assembly functions count nothing themselves; drive(), a counted C
 * function, knows how many times it called each. Single-threaded.
 * `t_pad_O2 N` runs N rounds (default 40).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main) X(drive) X(pad_short3) X(pad_short4) X(pad_one) X(pad_loop) X(pad_longloop)       \
	    X(nopad_prev) X(nopad_next) X(jumper) X(hid_next)
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
        FN_END(jumper));
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
	/* nopad3, hostile3: not hooked (the test checks their
	 * reasons), so not counted */
	return acc;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "pad", fn_names, FN_COUNT);
	unsigned long rounds = argc > 1 && argv[1][0] != '-' ? strtoul(argv[1], NULL, 10) : 40;
	printf("pad: %lu\n", drive(rounds));
	return 0;
}
