/*
 * Test target: a function too short to hook faults, so its frame is on no
 * record of the index lane; only the signal context names it (issue 33).
 *   3   main -> crash_outer -> crash_mid -> store3 (`mov %esi,(%rdi); ret`,
 *       3 bytes) with rdi = 0: SIGSEGV at store3's first byte. store4
 *       follows it with no byte between, and no padding within reach is
 *       free for it (store4's needs all of its own; zeros around load0
 *       and load3), so the padding form cannot hook it either: the case
 *       of a function no mechanism hooks;
 *   4   the same through store4 (`mov %rsi,(%rdi); ret`, 4 bytes), which
 *       has padding behind it: hooked by the padding form, its store runs
 *       as the trampoline's relocated copy and faults there; the agent
 *       maps the pc back to store4+0;
 *   l   the same through load0, long enough to be hooked by the ordinary
 *       form, whose first instruction loads through rdi: the fault is in
 *       the trampoline's relocated copy of that instruction, which the
 *       agent maps back to load0+0;
 *   m   load3, the same with the faulting load its second instruction
 *       (load3+3, the second relocated copy);
 *   c   load9, the same with the faulting load its seventh instruction
 *       (load9+18); recorded with --count-only load9, so its count block
 *       runs the whole leaf as the copy form's copy, and the fault is in
 *       the block's seventh copy, which the agent maps back to load9+18.
 * The other argument registers hold known values at the fault: rsi
 * 0x2a2a, rdx 0x3b3b, rcx 0x4c4c. The table is written just before the
 * fault (tc_report); the frames open then are declared lost (TC_LOST).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(crash_outer) X(crash_mid)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

/* Hand-written, with CFI, so a debugger unwinds through them as through
 * any compiled leaf; sized, so the symbol tables hold their extent. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl store3\n"
        ".type store3, @function\n"
        "store3:\n"
        "\t.cfi_startproc\n"
        "\tmovl %esi, (%rdi)\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size store3, .-store3\n"
        ".globl store4\n"
        ".type store4, @function\n"
        "store4:\n"
        "\t.cfi_startproc\n"
        "\tmovq %rsi, (%rdi)\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size store4, .-store4\n"
        /* Padding right behind store4 (int3 fill, no symbol, no FDE):
         * 9 bytes, room for the padding form's slot but not for a second
         * one that store3 could take from its neighbour. Hooked by the
         * ordinary form (7 and 10 bytes, whole instructions over the
         * 5-byte patch, no branch). */
        ".p2align 4, 0xcc\n"
        ".globl load0\n"
        ".type load0, @function\n"
        "load0:\n"
        "\t.cfi_startproc\n"
        "\tmovq (%rdi), %rax\n"
        "\taddq %rsi, %rax\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size load0, .-load0\n"
        /* Zeros, which are no padding, between and after load0 and load3
         * up to beyond the 2-byte jump's reach from store3: no
         * neighbour's padding for store3 either (docs/hooks.md). */
        ".p2align 4, 0\n"
        ".globl load3\n"
        ".type load3, @function\n"
        "load3:\n"
        "\t.cfi_startproc\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq (%rdi), %rdx\n"
        "\taddq %rdx, %rax\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size load3, .-load3\n"
        ".fill 160, 1, 0\n"
        ".p2align 4, 0\n"
        ".globl load9\n"
        ".type load9, @function\n"
        "load9:\n"
        "\t.cfi_startproc\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq %rsi, %rax\n"
        "\tmovq (%rdi), %rdx\n"
        "\taddq %rdx, %rax\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".size load9, .-load9\n"
        ".fill 16, 1, 0\n");

void store3(int *p, long v, long c, long d);
void store4(long *p, long v, long c, long d);
long load0(long *p, long v, long c, long d);
long load3(long *p, long v, long c, long d);
long load9(long *p, long v, long c, long d);

static volatile unsigned long sink;
static void *volatile null_ptr;

TC_FN static void crash_mid(int how)
{
	TC_ENTER(FN_crash_mid);
	TC_LOST(FN_crash_mid, 1);
	tc_report();
	if (how == '3')
		store3(null_ptr, 0x2a2a, 0x3b3b, 0x4c4c);
	else if (how == 'l')
		sink = (unsigned long)load0(null_ptr, 0x2a2a, 0x3b3b, 0x4c4c);
	else if (how == 'm')
		sink = (unsigned long)load3(null_ptr, 0x2a2a, 0x3b3b, 0x4c4c);
	else if (how == 'c')
		sink = (unsigned long)load9(null_ptr, 0x2a2a, 0x3b3b, 0x4c4c);
	else
		store4(null_ptr, 0x2a2a, 0x3b3b, 0x4c4c);
	sink = (unsigned long)how; /* not a tail call: crash_mid stays on the stack */
}

TC_FN static void crash_outer(int how)
{
	TC_ENTER(FN_crash_outer);
	TC_LOST(FN_crash_outer, 1);
	TC_LOST(FN_main, 1);
	crash_mid(how);
	sink = 0;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	const char *mode = argc > 1 && !tc_is_counts_arg(argv[1]) ? argv[1] : "4";

	tc_init(argc, argv, "crash0", fn_names, FN_COUNT);
	printf("about to fault (mode %c)\n", mode[0]);
	fflush(stdout);
	crash_outer(mode[0]);
	return 0;
}
