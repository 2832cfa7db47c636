/*
 * Test target: functions that run before every constructor (issue 14).
 * The executable's .preinit_array entry runs before the loader calls any
 * library's initialiser -- before libc's and before an LD_PRELOADed
 * agent's, unless that agent asks to go first (-z initfirst). preinit_work
 * (once) and preinit_leaf (3 times) run there; ctor_work runs from the
 * executable's ordinary constructor; main calls main_work. Every call must
 * be in the trace exactly once.
 */
#include <stdio.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(preinit_work) X(preinit_leaf) X(ctor_work) X(main_work)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;

TC_FN static unsigned long preinit_leaf(unsigned long x)
{
	TC_ENTER(FN_preinit_leaf);
	sink = x;
	return x * 2;
}

TC_FN static void preinit_work(int argc, char **argv, char **envp)
{
	TC_ENTER(FN_preinit_work);
	(void)argc;
	(void)argv;
	(void)envp;
	unsigned long acc = 0;
	for (unsigned long i = 0; i < 3; i++)
		acc += preinit_leaf(i);
	sink = acc;
}

__attribute__((section(".preinit_array"),
               used)) static void (*const preinit_entry)(int, char **, char **) = preinit_work;

TC_FN __attribute__((constructor)) static void ctor_work(void)
{
	TC_ENTER(FN_ctor_work);
	sink = 7;
}

TC_FN static unsigned long main_work(unsigned long x)
{
	TC_ENTER(FN_main_work);
	sink = x;
	return x + 1;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "preinit", fn_names, FN_COUNT);
	printf("preinit: %lu\n", main_work(sink));
	return 0;
}
