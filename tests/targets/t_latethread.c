/*
 * Test target (issue 34): threads around a crash under `ada record
 * --trigger crash`, ordered by the program's own synchronisation (no
 * timing in the tests' assertions).
 *
 *   t_latethread [DELAY_MS]         main calls early_work() 1 000 times,
 *                                   starts a thread that calls late_work()
 *                                   1 000 times and then waits, and writes
 *                                   through a NULL pointer DELAY_MS
 *                                   (default 20) later.
 *   t_latethread sync               the same, but main crashes as soon as
 *                                   the thread says its 1 000 calls are
 *                                   done (a pipe): e2e.flight_late_thread.
 *   t_latethread ended [DELAY_MS]   the thread calls ended_work() 1 000
 *                                   times and ends; main joins it and
 *                                   crashes DELAY_MS (default 500) later,
 *                                   inside the pre-roll:
 *                                   e2e.flight_ended_thread.
 *
 * The late thread was missing from the recording and from `ada crash`
 * (issue 34): its first hooked call (late_main's entry) claimed a ring
 * slot, and the claim populated and locked the slot's whole index and
 * detail rings (16 MiB of detail with a trigger), tens of ms on a loaded
 * machine, so the process died with the slot still being claimed. Now the
 * recorder prepares slots ahead and a claim populates at most the index
 * part (docs/internals.md, "Ring slots").
 *
 * The ended thread's index events were recorded but its detail was not
 * in the crash window: the drain freed its slot about 10 ms after it
 * ended, finalizing the thread whatever its detail ring still held. Now
 * the slot is kept while its detail is within the pre-roll
 * (drain_keep_ended).
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

/* The three work functions differ so that -O2's identical code folding
 * keeps them apart (each thread's calls have their own name). */
NOINL static void late_work(unsigned long x)
{
	sink += x ^ 0x5a;
}

static int done_pipe[2] = {-1, -1};

NOINL static void *late_main(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < 1000; i++)
		late_work(i);
	char c = 'd';
	if (done_pipe[1] >= 0 && write(done_pipe[1], &c, 1) != 1)
		abort();
	for (;;)
		pause();
	return NULL;
}

NOINL static void ended_work(unsigned long x)
{
	sink += x * 3;
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
	bool sync = argc > 1 && !strcmp(argv[1], "sync");
	long ms = sync ? 0 : argc > 1 + ended ? atol(argv[1 + ended]) : ended ? 500 : 20;
	if (sync && pipe(done_pipe) != 0)
		return 1;
	for (unsigned long i = 0; i < 1000; i++)
		early_work(i);
	pthread_t t;
	if (pthread_create(&t, NULL, ended ? ended_main : late_main, NULL) != 0)
		return 1;
	if (ended)
		pthread_join(t, NULL);
	char c;
	if (sync && read(done_pipe[0], &c, 1) != 1)
		return 1;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
	crash_now();
	return 0;
}
