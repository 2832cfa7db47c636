/*
 * Test target: a coroutine on its own stack (makecontext/swapcontext), as
 * coroutine libraries and some servers run them. Frames of two stacks
 * interleave on one thread, so CALL/RETURN nesting is not asserted for it
 * (the harness runs it with --calls-only): the program must behave the same
 * and every call must be recorded. drive() resumes coro() N+1 times (N:
 * argv[1], 5 by default) through resume(); coro() yields N times through
 * coro_yield() and returns through uc_link. Both wrappers are traced, so
 * each switch leaves the other stack's frames behind (taken for dead, then
 * returning late): with N in the hundreds, coro()'s own frame must still
 * find its return address at the end (issue 14). Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(coro) X(coro_step) X(drive) X(coro_yield) X(resume)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};
static ucontext_t uc_main, uc_coro;
static char stack[65536];
static volatile int sink;
static int yields = 5;

TC_FN static void coro_step(int i)
{
	TC_ENTER(FN_coro_step);
	sink = i;
}

TC_FN static void coro_yield(void)
{
	TC_ENTER(FN_coro_yield);
	swapcontext(&uc_coro, &uc_main);
}

TC_FN static void resume(void)
{
	TC_ENTER(FN_resume);
	swapcontext(&uc_main, &uc_coro);
}

TC_FN static void coro(void)
{
	TC_ENTER(FN_coro);
	for (int i = 0; i < yields; i++) {
		coro_step(i);
		coro_yield();
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
	for (int i = 0; i <= yields; i++)
		resume();
	return sink;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "ucontext", fn_names, FN_COUNT);
	if (argc > 1 && atoi(argv[1]) > 0)
		yields = atoi(argv[1]);
	printf("ucontext: %d\n", drive());
	return 0;
}
