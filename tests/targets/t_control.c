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
 *   quit      (or EOF) exit 0
 * It prints "ready" first. Every function is noinline (each one is hooked).
 */
#include <stdio.h>
#include <string.h>
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

int main(void)
{
	char line[64];
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
