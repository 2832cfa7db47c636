/*
 * Test target (issue 34, a reproduction): a thread started 20 ms before
 * the process dies of SIGSEGV. main calls early_work() 1 000 times,
 * starts a thread that calls late_work() 1 000 times and then waits, and
 * 20 ms later writes through a NULL pointer (crash_now).
 *
 * Under `ada record --trigger crash` the late thread is missing from the
 * recording (no thread_1/, not in the manifest's threads nor in `ada
 * crash`), and no counter says so: its first hooked call (late_main's
 * entry) claims a ring slot, and the claim populates and locks the slot's
 * whole stride, index ring and detail ring (ring_slot_populate). With
 * triggers the detail ring is sized for the pre-roll (16 MiB by default),
 * which takes tens of ms on a loaded machine, so the process dies with the
 * slot still CLAIMING: no event reached the ring and the drain skips the
 * slot. `--detail-mb 1` or `--detail never` record the thread;
 * `--detail-mb 16` without a trigger loses it too.
 *
 * `ended`: the thread calls ended_work() 1 000 times and ends, and main
 * crashes DELAY_MS (default 500) later, well inside the 5 s pre-roll. Its
 * index events are recorded, but it gets no detail, is not among the
 * crash window's threads, and window_lost stays 0: the drain frees an
 * EXITED slot whose thread is gone and whose index ring is empty within
 * 10 ms (drain_reclaim), finalizing the thread whatever its detail ring
 * still holds, so no window opened later reaches those records or counts
 * them as lost.
 *   t_latethread [DELAY_MS]         (default 20)
 *   t_latethread ended [DELAY_MS]   (default 500)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))
static volatile unsigned long sink;
static int *volatile nowhere; /* NULL: the crash */

NOINL static void late_work(unsigned long x)
{
	sink += x;
}

NOINL static void *late_main(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < 1000; i++)
		late_work(i);
	for (;;)
		pause();
	return NULL;
}

NOINL static void ended_work(unsigned long x)
{
	sink += x;
}

NOINL static void *ended_main(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < 1000; i++)
		ended_work(i);
	return NULL;
}

NOINL static void early_work(unsigned long x)
{
	sink += x;
}

NOINL static void crash_now(void)
{
	*nowhere = 1;
}

int main(int argc, char **argv)
{
	bool ended = argc > 1 && !strcmp(argv[1], "ended");
	long ms = argc > 1 + ended ? atol(argv[1 + ended]) : ended ? 500 : 20;
	for (unsigned long i = 0; i < 1000; i++)
		early_work(i);
	pthread_t t;
	if (pthread_create(&t, NULL, ended ? ended_main : late_main, NULL) != 0)
		return 1;
	if (ended)
		pthread_join(t, NULL);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
	crash_now();
	return 0;
}
