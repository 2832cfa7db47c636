/*
 * Test target: a coroutine on its own stack (makecontext/swapcontext), as
 * coroutine libraries and some servers run them. Frames of two stacks
 * interleave on one thread, so CALL/RETURN nesting is not asserted for it
 * (the harness runs it with --calls-only): the program must behave the same
 * and every call must be recorded. drive() resumes coro() six times; coro()
 * yields five times and returns through uc_link. Single-threaded.
 */
#include <stdio.h>
#include <ucontext.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(coro) X(coro_step) X(drive)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};
static ucontext_t uc_main, uc_coro;
static char stack[65536];
static volatile int sink;

TC_FN static void coro_step(int i)
{
	TC_ENTER(FN_coro_step);
	sink = i;
}

TC_FN static void coro(void)
{
	TC_ENTER(FN_coro);
	for (int i = 0; i < 5; i++) {
		coro_step(i);
		swapcontext(&uc_coro, &uc_main);
	}
}

TC_FN static int drive(void)
{
	TC_ENTER(FN_drive);
	getcontext(&uc_coro);
	uc_coro.uc_stack.ss_sp = stack;
	uc_coro.uc_stack.ss_size = sizeof(stack);
	uc_coro.uc_link = &uc_main;
	makecontext(&uc_coro, coro, 0);
	for (int i = 0; i < 6; i++)
		swapcontext(&uc_main, &uc_coro);
	return sink;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "ucontext", fn_names, FN_COUNT);
	printf("ucontext: %d\n", drive());
	return 0;
}
