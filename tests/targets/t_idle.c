/*
 * Test target: a program that is idle for seconds between bursts, for the
 * drain's doorbell (docs/internals.md, "The doorbell: an idle drain
 * sleeps"): the recorder must sleep through the idle time and still
 * record every call exactly, those after the idle time included.
 *
 *   t_idle [SECONDS]   (default 3)
 *
 * main calls before() 20 000 times (40 000 events: several of the
 * producer's doorbell chunks), sleeps SECONDS, calls after() 300 times
 * (600 events: below a chunk, so no ring of the producer's own: the
 * drain's timer or the process's end must bring them in), starts a thread
 * that calls late() 500 times and ends (a claim and a thread's end, both
 * ringing), sleeps 1 s more, calls again() 20 000 times and exits.
 * Single role: a target for tests/integration/ada_itest.py and
 * idle_test.py; counts its calls with tcount.h, times nothing itself.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(before) X(after) X(late) X(late_main) X(again) X(idle_for)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;

/* Four functions of different bodies: -O2's identical code folding must
 * keep them apart. */
TC_FN static void before(unsigned long x)
{
	TC_ENTER(FN_before);
	sink += x;
}

TC_FN static void after(unsigned long x)
{
	TC_ENTER(FN_after);
	sink ^= x;
}

TC_FN static void late(unsigned long x)
{
	TC_ENTER(FN_late);
	sink -= x;
}

TC_FN static void again(unsigned long x)
{
	TC_ENTER(FN_again);
	sink += x * 3;
}

TC_FN static void *late_main(void *arg)
{
	TC_ENTER(FN_late_main);
	(void)arg;
	tc_thread_begin("late");
	for (unsigned long i = 0; i < 500; i++)
		late(i);
	return NULL;
}

/* Sleeps s seconds whatever signals come (nanosleep gives the rest back). */
TC_FN static void idle_for(long s)
{
	TC_ENTER(FN_idle_for);
	struct timespec ts = {.tv_sec = s, .tv_nsec = 0};
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "idle", fn_names, FN_COUNT);
	long secs = 3; /* argv[1] may be tcount's --counts */
	if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9')
		secs = strtol(argv[1], NULL, 10);
	if (secs > 60)
		secs = 60;
	for (unsigned long i = 0; i < 20000; i++)
		before(i);
	idle_for(secs);
	for (unsigned long i = 0; i < 300; i++)
		after(i);
	pthread_t t;
	if (pthread_create(&t, NULL, late_main, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	idle_for(1);
	for (unsigned long i = 0; i < 20000; i++)
		again(i);
	return 0;
}
