/*
 * Test target for live control (issue 9): does what its stdin says, one
 * command per line, and answers each with one line on stdout, so a test
 * drives it step by step with no timing at all:
 *   busy      a few thousand calls of small functions -> "busy"
 *   rare      rare_event() once                        -> "rare"
 *   pid       -> its pid
 *   scrub     overwrites the name ADA_SESSION_DIR in its environment
 *             block (what /proc/PID/environ shows), as a program that
 *             reuses that memory would: discovery must use the registry
 *   retitle   what redis and nginx's master do to set their title: the
 *             environment moved (clearenv, then set again from copies),
 *             the argv and environ block overwritten with the title and
 *             zeros, and the thread name set (prctl PR_SET_NAME)
 *   forks N   N children one after another, each busy(100) then _exit(0),
 *             each waited for -> "forks N"
 *   quit      (or EOF) exit 0
 * It prints "ready" first. Every function is noinline (each one is hooked).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))
static volatile unsigned long sink;
static volatile long arg_rare = 7;

NOINL static void leaf(unsigned long x)
{
	sink += x;
}
NOINL static void mid(unsigned long x)
{
	leaf(x);
	leaf(x ^ 1);
}
NOINL static void busy(int n)
{
	for (int i = 0; i < n; i++)
		mid((unsigned long)i);
}
NOINL void rare_event(long x)
{
	sink += (unsigned long)x * 11;
}

extern char **environ;

static void scrub(void)
{
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "ADA_SESSION_DIR=", 16))
			memset(*e, 'X', 15);
}

static char **main_argv;

/* setproctitle() as redis and nginx do it: the strings the environment
 * had are copied out and set again (the agent kept its own copies at
 * start-up), then the whole block from argv[0] to the end of the last
 * environment string is the title. */
static void retitle(void)
{
	char *lo = main_argv[0], *hi = lo;
	for (char **a = main_argv; *a; a++)
		hi = *a + strlen(*a) + 1;
	size_t n = 0;
	while (environ[n])
		n++;
	char **copy = calloc(n + 1, sizeof(*copy));
	for (size_t i = 0; copy && i < n; i++) {
		if (environ[i] + strlen(environ[i]) + 1 > hi)
			hi = environ[i] + strlen(environ[i]) + 1;
		copy[i] = strdup(environ[i]);
	}
	clearenv();
	for (size_t i = 0; copy && i < n; i++)
		if (copy[i] && strncmp(copy[i], "ADA_", 4))
			putenv(copy[i]);
	memset(lo, 0, (size_t)(hi - lo));
	snprintf(lo, (size_t)(hi - lo), "t_control: retitled");
	prctl(PR_SET_NAME, "retitled", 0, 0, 0);
}

/* n short processes, one after another (the recorder's memory over many
 * finished processes, issue 35). */
static void forks(int n)
{
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c == 0) {
			busy(100);
			_exit(0);
		}
		if (c > 0)
			waitpid(c, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	char line[64];
	(void)argc;
	main_argv = argv;
	busy(1000);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "busy\n"))
			busy(2000);
		else if (!strcmp(line, "rare\n"))
			rare_event(arg_rare);
		else if (!strcmp(line, "scrub\n"))
			scrub();
		else if (!strcmp(line, "retitle\n"))
			retitle();
		else if (!strncmp(line, "forks ", 6))
			forks(atoi(line + 6));
		else if (!strcmp(line, "pid\n"))
			printf("%d\n", (int)getpid());
		else if (!strcmp(line, "quit\n"))
			break;
		if (strcmp(line, "pid\n"))
			printf("%.*s\n", (int)strcspn(line, "\n"), line);
		fflush(stdout);
	}
	return 0;
}
