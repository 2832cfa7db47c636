/*
 * Test target: children started with an environment of the program's
 * choosing, without LD_PRELOAD and the ADA_* variables (issue 14): the
 * agent must put them back when following children (and keep them out with
 * --no-follow). `t_envexec MODE PATH` starts PATH (t_exec_child) once,
 * with the argument "from-envexec", waits and prints its status. With an
 * explicit environment holding only ADA_TEST_COUNTS:
 *   execve execveat fexecve execle execvpe vfork (vfork + execve)
 *                           fork (or vfork); the child calls that function
 *   spawn spawnp            posix_spawn() / posix_spawnp()
 * After clearenv() and ADA_TEST_COUNTS set again (environ):
 *   execl execv execvp execlp
 *                           fork; the child calls that function
 *   system popen            system() / popen() of "exec PATH from-envexec"
 *                           (the shell, traced too, becomes the child);
 *                           popen's output is read and printed
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(start_child)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static char counts_var[4096];

/* Helpers are inlined: every function of the image must be in the table,
 * and the vfork child must call nothing counted (it runs on the parent's
 * thread and memory until the exec). */
#define INLINE static inline __attribute__((always_inline))

/* The child side of the fork modes: only returns when the exec failed. */
INLINE void exec_as(const char *mode, const char *path, char *const *args, char *const *env)
{
	if (!strcmp(mode, "execve") || !strcmp(mode, "vfork")) {
		execve(path, args, env);
	} else if (!strcmp(mode, "execveat")) {
		int dir = open("/", O_PATH | O_DIRECTORY);
		execveat(dir, path + (path[0] == '/'), args, env, 0);
	} else if (!strcmp(mode, "fexecve")) {
		int fd = open(path, O_RDONLY);
		fexecve(fd, args, env);
	} else if (!strcmp(mode, "execle")) {
		execle(path, path, "from-envexec", (char *)NULL, env);
	} else if (!strcmp(mode, "execvpe")) {
		execvpe(path, args, env);
	} else if (!strcmp(mode, "execl")) {
		execl(path, path, "from-envexec", (char *)NULL);
	} else if (!strcmp(mode, "execv")) {
		execv(path, args);
	} else if (!strcmp(mode, "execvp")) {
		execvp(path, args);
	} else if (!strcmp(mode, "execlp")) {
		execlp(path, path, "from-envexec", (char *)NULL);
	}
}

INLINE int status_of(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

INLINE int run_shell(const char *mode, const char *path)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "exec '%s' from-envexec", path);
	if (!strcmp(mode, "system"))
		return status_of(system(cmd));
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[256];
	while (fgets(line, sizeof(line), p))
		printf("popen read: %s", line);
	return status_of(pclose(p));
}

/* Starts the child and waits for it; its exit status, or -1. */
TC_FN static int start_child(const char *mode, const char *path)
{
	TC_ENTER(FN_start_child);
	char *args[] = {(char *)path, (char *)"from-envexec", NULL};
	char *env[] = {counts_var, NULL};
	pid_t pid;
	int status = 0;
	fflush(stdout);
	if (!strcmp(mode, "system") || !strcmp(mode, "popen"))
		return run_shell(mode, path);
	if (!strcmp(mode, "spawn") || !strcmp(mode, "spawnp")) {
		int (*sp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
		          const posix_spawnattr_t *, char *const[], char *const[]) =
		    mode[5] == 'p' ? posix_spawnp : posix_spawn;
		if (sp(&pid, path, NULL, NULL, args, env) != 0)
			return -1;
	} else if (!strcmp(mode, "vfork")) {
		pid = vfork();
		if (pid == 0) {
			exec_as(mode, path, args, env);
			_exit(127);
		}
	} else {
		pid = fork();
		if (pid == 0) {
			tc_reset_after_fork();
			tc_report(); /* the forked child's own (empty) table */
			exec_as(mode, path, args, env);
			_exit(127);
		}
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status_of(status);
}

INLINE int uses_environ(const char *mode)
{
	static const char *const m[] = {"execl", "execv", "execvp", "execlp", "system", "popen"};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (!strcmp(mode, m[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "envexec", fn_names, FN_COUNT);
	const char *c = getenv("ADA_TEST_COUNTS");
	snprintf(counts_var, sizeof(counts_var), "ADA_TEST_COUNTS=%s", c ? c : "");
	if (argc < 3) {
		fprintf(stderr, "usage: t_envexec MODE PATH\n");
		return 2;
	}
	if (uses_environ(argv[1])) {
		clearenv();
		if (c)
			setenv("ADA_TEST_COUNTS", counts_var + 16, 1);
	}
	printf("child status %d\n", start_child(argv[1], argv[2]));
	return 0;
}
