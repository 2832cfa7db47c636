/*
 * Test target exec'd by t_fork (and copied setuid by the bad-input tests):
 * a few known calls, prints its argument, exits 0.
 */
#include <stdio.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(exec_child_work) X(exec_child_leaf)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile int sink;

TC_FN static int exec_child_leaf(int x)
{
	TC_ENTER(FN_exec_child_leaf);
	sink = x;
	return x + 1;
}

TC_FN static int exec_child_work(int n)
{
	TC_ENTER(FN_exec_child_work);
	int acc = 0;
	for (int i = 0; i < n; i++)
		acc += exec_child_leaf(i);
	return acc;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "exec_child", fn_names, FN_COUNT);
	printf("exec child (%s): %d\n", argc > 1 ? argv[1] : "-", exec_child_work(12));
	return 0;
}
