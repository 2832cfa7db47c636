/*
 * Test target exec'd by t_fork (and copied setuid by the bad-input tests):
 * a few known calls, prints its argument, exits 0.
 * `t_exec_child chain N`: execs itself N more times in the same process, so
 * one pid holds N+1 images of the same program (each writes its own table,
 * program name exec_chain<N>); the frames alive at each exec are lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(exec_child_work) X(exec_child_leaf) X(chain_exec)
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

TC_FN static void chain_exec(const char *self, long next)
{
	TC_ENTER(FN_chain_exec);
	char arg[32];
	char *args[] = {(char *)self, (char *)"chain", arg, NULL};
	snprintf(arg, sizeof(arg), "%ld", next);
	TC_LOST(FN_chain_exec, 1);
	TC_LOST(FN_main, 1);
	fflush(stdout);
	tc_report();
	execv("/proc/self/exe", args);
	perror("execv");
	_exit(127);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	static char name[32];
	if (argc > 2 && !strcmp(argv[1], "chain")) {
		long n = strtol(argv[2], NULL, 10);
		snprintf(name, sizeof(name), "exec_chain%ld", n);
		tc_init(argc, argv, name, fn_names, FN_COUNT);
		printf("chain %ld: %d\n", n, exec_child_work(3 + (int)n));
		if (n > 0)
			chain_exec(argv[0], n - 1);
		return 0;
	}
	tc_init(argc, argv, "exec_child", fn_names, FN_COUNT);
	printf("exec child (%s): %d\n", argc > 1 ? argv[1] : "-", exec_child_work(12));
	return 0;
}
