/*
 * Test target: the program takes its environment away from the agent
 * (issue 14: nginx's workers call clearenv() and then dlopen()). The agent
 * must keep working from what it read at start-up.
 *   t_env MODE LIBRARY
 * MODE is how the environment goes: clearenv (clearenv()), unsetenv (every
 * ADA_* and LD_PRELOAD unset, one set to garbage), environ (environ
 * pointed at a new array). Then: dlopen(LIBRARY) (t_dlib) and calls into
 * it; fork, the child calls child_work() and exits: the library is
 * hooked and the child recorded. (tcount keeps $ADA_TEST_COUNTS from its
 * start.)
 * Single-threaded; prints the results.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

// clang-format off
#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(drop_env) X(use_library) X(add_library_counts) X(child_work) X(run_fork)                \
	    X(dlib_entry) X(dlib_mid) X(dlib_leaf) X(dlib_counts) X(dlib_ctor_work) X(dlib_init)
// clang-format on
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

typedef unsigned long (*entry_fn)(unsigned long);
typedef int (*counts_fn)(const char *const **, const unsigned long **);

extern char **environ;
static char *fresh_environ[] = {(char *)"T_ENV_FRESH=1", NULL};
static volatile unsigned long sink;

TC_FN static int drop_env(const char *mode)
{
	TC_ENTER(FN_drop_env);
	if (!strcmp(mode, "clearenv"))
		return clearenv();
	if (!strcmp(mode, "unsetenv")) {
		static const char *const names[] = {"LD_PRELOAD",      "ADA_ARENA_DIR",
		                                    "ADA_SESSION_DIR", "ADA_RING_CONFIG",
		                                    "ADA_HOOK_CONFIG", "HOME"};
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			unsetenv(names[i]);
		return setenv("ADA_ARENA_DIR", "/nonexistent-t-env", 1);
	}
	if (!strcmp(mode, "environ")) {
		environ = fresh_environ;
		return 0;
	}
	return -1;
}

TC_FN static void add_library_counts(counts_fn counts)
{
	TC_ENTER(FN_add_library_counts);
	const char *const *names;
	const unsigned long *calls;
	int n = counts(&names, &calls);
	for (int i = 0; i < n; i++)
		for (int fn = 0; fn < FN_COUNT; fn++)
			if (!strcmp(names[i], fn_names[fn]))
				TC_ADD(fn, calls[i]);
}

TC_FN static int use_library(const char *path)
{
	TC_ENTER(FN_use_library);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	entry_fn entry = (entry_fn)dlsym(h, "dlib_entry");
	counts_fn counts = (counts_fn)dlsym(h, "dlib_counts");
	if (!entry || !counts)
		return 1;
	printf("entry(20) = %lu\n", entry(20));
	add_library_counts(counts);
	return 0; /* left loaded: the fork child inherits it */
}

TC_FN static unsigned long child_work(unsigned long x)
{
	TC_ENTER(FN_child_work);
	sink = x;
	return x * 5;
}

static int wait_child(pid_t pid)
{
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TC_FN static int run_fork(void)
{
	TC_ENTER(FN_run_fork);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		tc_reset_after_fork();
		unsigned long acc = 0;
		for (unsigned long i = 0; i < 30; i++)
			acc += child_work(i);
		printf("fork child: %lu\n", acc);
		exit(0);
	}
	return wait_child(pid);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "env", fn_names, FN_COUNT);
	if (argc < 3) {
		fprintf(stderr, "usage: t_env clearenv|unsetenv|environ LIBRARY\n");
		return 2;
	}
	if (drop_env(argv[1]) != 0) {
		fprintf(stderr, "t_env: bad mode %s\n", argv[1]);
		return 2;
	}
	if (use_library(argv[2]))
		return 1;
	int f = run_fork();
	printf("fork child status %d\n", f);
	return f != 0;
}
