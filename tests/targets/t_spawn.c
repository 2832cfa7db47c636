/*
 * Test target: posix_spawn() of t_exec_child (argv[1]), twice, waiting for
 * each. glibc spawns with clone(CLONE_VM | CLONE_VFORK): until the exec the
 * child runs in the parent's memory, on the parent's rings and shadow
 * stacks — whatever the agent does there must not corrupt the parent.
 * Then the parent calls more traced functions and prints the statuses.
 * `t_spawn PATH vfork`: the same with vfork() + execv() from a traced frame
 * (the child borrows the parent's stack and thread until execv, so it calls
 * nothing counted; its return from vfork() is the parent's to see).
 */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(spawn_one) X(after_spawn) X(vfork_one)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

extern char **environ;
static volatile unsigned long sink;

TC_FN static unsigned long after_spawn(unsigned long x)
{
	TC_ENTER(FN_after_spawn);
	sink = x;
	return x + 1;
}

TC_FN static int spawn_one(const char *path, const char *arg)
{
	TC_ENTER(FN_spawn_one);
	char *args[] = {(char *)path, (char *)arg, NULL};
	pid_t pid;
	int status = 0;

	fflush(stdout);
	if (posix_spawn(&pid, path, NULL, NULL, args, environ) != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TC_FN static int vfork_one(const char *path, const char *arg)
{
	TC_ENTER(FN_vfork_one);
	char *args[] = {(char *)path, (char *)arg, NULL};
	int status = 0;

	fflush(stdout);
	pid_t pid = vfork();
	if (pid == 0) {
		execv(path, args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	unsigned long acc = 0;

	tc_init(argc, argv, "spawn", fn_names, FN_COUNT);
	if (argc < 2) {
		fprintf(stderr, "usage: t_spawn PATH\n");
		return 2;
	}
	int use_vfork = argc > 2 && !strcmp(argv[2], "vfork");
	int (*start)(const char *, const char *) = use_vfork ? vfork_one : spawn_one;
	int a = start(argv[1], "spawn-1");
	for (unsigned long i = 0; i < 25; i++)
		acc += after_spawn(i);
	int b = start(argv[1], "spawn-2");
	for (unsigned long i = 0; i < 25; i++)
		acc += after_spawn(i);
	printf("spawn: statuses %d %d, %lu\n", a, b, acc);
	return a || b;
}
