/*
 * Test target: dies on purpose after known calls, to check that everything
 * recorded before the death is on disk and the exit status passes through.
 *   segv   (default) main -> crash_outer -> crash_inner writes through a
 *          NULL pointer: SIGSEGV, exit status 139 under a shell;
 *   abort  main -> crash_outer -> abort_inner calls abort(): SIGABRT, 134;
 *   exit   main -> crash_outer -> exit_inner calls exit(3) from deep inside:
 *          not a crash, but the three frames never return;
 *   kill   main -> crash_outer -> kill_inner raises SIGKILL: no handler of
 *          the agent can run, the recorder alone must save the events (137);
 *   wait   main -> crash_outer -> wait_inner prints "ready" and waits in
 *          pause() until a signal from outside ends it (the harness sends
 *          SIGINT to the whole process group, as a Ctrl-C would: 130).
 * The table is written just before the fatal instruction; the frames still
 * open then are declared lost (TC_LOST).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcount.h"

#define FUNCS(X)                                                                                   \
	X(main)                                                                                    \
	X(warm_up)                                                                                 \
	X(crash_outer) X(crash_inner) X(abort_inner) X(exit_inner) X(kill_inner) X(wait_inner)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;
static int *volatile null_ptr;

TC_FN static void warm_up(unsigned long x)
{
	TC_ENTER(FN_warm_up);
	sink = x;
}

TC_FN static void crash_inner(int v)
{
	TC_ENTER(FN_crash_inner);
	TC_LOST(FN_crash_inner, 1);
	tc_report();
	*null_ptr = v; /* SIGSEGV */
	sink = (unsigned long)v;
}

TC_FN static void abort_inner(int v)
{
	TC_ENTER(FN_abort_inner);
	TC_LOST(FN_abort_inner, 1);
	tc_report();
	sink = (unsigned long)v;
	abort();
}

TC_FN static void exit_inner(int v)
{
	TC_ENTER(FN_exit_inner);
	TC_LOST(FN_exit_inner, 1);
	sink = (unsigned long)v;
	exit(v); /* the table is written by the atexit handler */
}

TC_FN static void kill_inner(int v)
{
	TC_ENTER(FN_kill_inner);
	TC_LOST(FN_kill_inner, 1);
	tc_report();
	sink = (unsigned long)v;
	raise(SIGKILL);
}

TC_FN static void wait_inner(int v)
{
	TC_ENTER(FN_wait_inner);
	TC_LOST(FN_wait_inner, 1);
	tc_report();
	sink = (unsigned long)v;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

TC_FN static void crash_outer(int how)
{
	TC_ENTER(FN_crash_outer);
	TC_LOST(FN_crash_outer, 1);
	TC_LOST(FN_main, 1);
	if (how == 'a')
		abort_inner(6);
	else if (how == 'e')
		exit_inner(3);
	else if (how == 'k')
		kill_inner(9);
	else if (how == 'w')
		wait_inner(2);
	else
		crash_inner(11);
	sink = 0;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	const char *mode = argc > 1 && !tc_is_counts_arg(argv[1]) ? argv[1] : "segv";

	tc_init(argc, argv, "crash", fn_names, FN_COUNT);
	for (unsigned long i = 0; i < 100; i++)
		warm_up(i);
	printf("about to %s\n", mode);
	fflush(stdout);
	crash_outer(mode[0]);
	return 0;
}
