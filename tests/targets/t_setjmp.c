/*
 * Test target: non-local exits through traced frames.
 *   longjmp: setjmp in jump_from_depth(), then f1 -> f2 -> f3 -> longjmp;
 *            f1, f2 and f3 are unwound (an EXCEPTION each), repeated.
 *   siglongjmp: sigsetjmp in sig_from_depth(), then g1 -> g2 -> g3 ->
 *            raise(SIGUSR1); the handler calls handler_work() and
 *            siglongjmp()s out, unwinding on_usr1, g3, g2 and g1.
 * After each jump the program calls more traced functions, so a wrong
 * shadow-stack depth after the jump shows in the trace. Single-threaded.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(jump_from_depth) X(f1) X(f2) X(f3) X(after_jump) X(sig_from_depth) X(g1) X(g2) X(g3)     \
	    X(on_usr1) X(handler_work)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

#define ROUNDS 5
static jmp_buf env;
static sigjmp_buf sigenv;
static volatile int sink;

TC_FN static void f3(int x)
{
	TC_ENTER(FN_f3);
	TC_UNWOUND(FN_f3, 1);
	TC_UNWOUND(FN_f2, 1);
	TC_UNWOUND(FN_f1, 1);
	longjmp(env, x + 1);
}

TC_FN static void f2(int x)
{
	TC_ENTER(FN_f2);
	f3(x + 1);
	sink = x; /* never reached; keeps f3 from being a tail call */
}

TC_FN static void f1(int x)
{
	TC_ENTER(FN_f1);
	f2(x + 1);
	sink = x;
}

TC_FN static int after_jump(int v)
{
	TC_ENTER(FN_after_jump);
	return v * 10;
}

TC_FN static int jump_from_depth(int x)
{
	TC_ENTER(FN_jump_from_depth);
	volatile int got = setjmp(env);
	if (got == 0) {
		f1(x);
		return -1;
	}
	return after_jump(got);
}

TC_FN static void handler_work(int sig)
{
	TC_ENTER(FN_handler_work);
	sink = sig;
}

TC_FN static void on_usr1(int sig)
{
	TC_ENTER(FN_on_usr1);
	handler_work(sig);
	TC_UNWOUND(FN_on_usr1, 1);
	TC_UNWOUND(FN_g3, 1);
	TC_UNWOUND(FN_g2, 1);
	TC_UNWOUND(FN_g1, 1);
	siglongjmp(sigenv, sig);
}

TC_FN static void g3(void)
{
	TC_ENTER(FN_g3);
	raise(SIGUSR1);
	sink = 3;
}

TC_FN static void g2(void)
{
	TC_ENTER(FN_g2);
	g3();
	sink = 2;
}

TC_FN static void g1(void)
{
	TC_ENTER(FN_g1);
	g2();
	sink = 1;
}

TC_FN static int sig_from_depth(void)
{
	TC_ENTER(FN_sig_from_depth);
	volatile int got = sigsetjmp(sigenv, 1);
	if (got == 0) {
		g1();
		return -1;
	}
	return after_jump(got);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	struct sigaction sa;

	tc_init(argc, argv, "setjmp", fn_names, FN_COUNT);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < ROUNDS; i++)
		printf("longjmp round %d: %d\n", i, jump_from_depth(i));
	for (int i = 0; i < ROUNDS; i++)
		printf("siglongjmp round %d: %d\n", i, sig_from_depth());
	return 0;
}
