/*
 * Test target: children started with an environment of the program's
 * choosing, without LD_PRELOAD and the ADA_* variables (issue 14): the
 * agent must put them back when following children (and keep them out with
 * --no-follow).
 *   t_envexec execve PATH   fork; the child execve()s PATH (t_exec_child)
 *                           with an environment holding only
 *                           ADA_TEST_COUNTS
 *   t_envexec spawn PATH    posix_spawn() of PATH with that environment
 *   t_envexec execl PATH    clearenv(), then ADA_TEST_COUNTS set again;
 *                           fork, the child execl()s PATH (environ)
 * The parent waits and prints the child's status.
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(start_child)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static char counts_var[4096];

TC_FN static pid_t start_child(const char *mode, const char *path)
{
	TC_ENTER(FN_start_child);
	char *args[] = {(char *)path, (char *)"from-envexec", NULL};
	char *env[] = {counts_var, NULL};
	pid_t pid;
	fflush(stdout);
	if (!strcmp(mode, "spawn"))
		return posix_spawn(&pid, path, NULL, NULL, args, env) == 0 ? pid : -1;
	pid = fork();
	if (pid != 0)
		return pid;
	tc_reset_after_fork();
	tc_report(); /* the forked child's own (empty) table, before the exec */
	if (!strcmp(mode, "execve"))
		execve(path, args, env);
	else
		execl(path, path, "from-envexec", (char *)NULL);
	_exit(127);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "envexec", fn_names, FN_COUNT);
	const char *c = getenv("ADA_TEST_COUNTS");
	snprintf(counts_var, sizeof(counts_var), "ADA_TEST_COUNTS=%s", c ? c : "");
	if (argc < 3) {
		fprintf(stderr, "usage: t_envexec execve|spawn|execl PATH\n");
		return 2;
	}
	if (!strcmp(argv[1], "execl")) {
		clearenv();
		if (c)
			setenv("ADA_TEST_COUNTS", counts_var + 16, 1);
	}
	int status = 0;
	pid_t pid = start_child(argv[1], argv[2]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
