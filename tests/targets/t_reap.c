/*
 * Test target: children that the program reaps itself (issue 14), so the
 * recorder, which is not their parent, learns their end from elsewhere.
 * Four forked children, each calling child_work: one killed by SIGTERM
 * (no agent handler sees it) and reaped with waitpid, one killed by
 * SIGKILL and reaped with waitid, one that _exit(5)s (reaped with wait),
 * one that returns 3 from its own path through exit() (reaped with wait4).
 * Prints the statuses it saw; the harness holds each child's manifest
 * "exit" against them (--child-exit).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(child_work) X(start_child)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;

TC_FN static void child_work(unsigned long x)
{
	TC_ENTER(FN_child_work);
	sink = x;
}

/* A child (program name reap_<how> in its table) that waits until killed,
 * or ends as `how` says. */
TC_FN static pid_t start_child(const char *how, int rd, int wr)
{
	TC_ENTER(FN_start_child);
	fflush(stdout);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	tc_reset_after_fork();
	char name[32];
	snprintf(name, sizeof(name), "reap_%s", how);
	tc_set_program(strdup(name)); /* the harness tells the children apart by it */
	child_work(1);
	if (!strcmp(how, "_exit5")) {
		tc_report();
		_exit(5);
	}
	if (!strcmp(how, "exit3"))
		exit(3);
	/* killed: tell the parent we run, then wait for the signal */
	tc_report();
	close(rd);
	if (write(wr, "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "reap", fn_names, FN_COUNT);
	int fd[2];
	char c;
	int st[4] = {0};
	siginfo_t si;
	if (pipe(fd) < 0)
		return 1;
	pid_t term = start_child("term", fd[0], fd[1]);
	pid_t kill9 = start_child("kill", fd[0], fd[1]);
	if (read(fd[0], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
		return 1;
	kill(term, SIGTERM);
	kill(kill9, SIGKILL);
	if (waitpid(term, &st[0], 0) != term)
		return 1;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)kill9, &si, WEXITED) != 0)
		return 1;
	st[1] = si.si_status;
	pid_t e5 = start_child("_exit5", fd[0], fd[1]);
	if (wait(&st[2]) != e5)
		return 1;
	pid_t e3 = start_child("exit3", fd[0], fd[1]);
	if (wait4(e3, &st[3], 0, NULL) != e3)
		return 1;
	printf("seen: %d %d %d %d\n", WTERMSIG(st[0]), st[1], WEXITSTATUS(st[2]),
	       WEXITSTATUS(st[3]));
	return 0;
}
