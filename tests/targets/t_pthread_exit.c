/*
 * Test target: pthread_exit() from nested traced frames.
 *   t0, t1  worker -> level1 -> level2 -> pthread_exit: the three frames
 *           are left without a return (an EXCEPTION each);
 *   t2      as t0, with a cleanup handler pushed in level1 that calls traced
 *           code while the thread unwinds;
 *   t3      returns normally;
 *   t4      is cancelled (pthread_cancel) while it waits in
 *           pthread_testcancel() inside level2: the same three frames are
 *           unwound by the cancellation.
 * Different depths of work per thread let the harness tell them apart.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(worker) X(level1) X(level2) X(on_cleanup) X(step)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

#define NTHREADS 5
static const char *const labels[NTHREADS] = {"t0", "t1", "t2", "t3", "t4"};
static atomic_int t4_ready;
static volatile unsigned long sink;

TC_FN static void step(unsigned long x)
{
	TC_ENTER(FN_step);
	sink = x;
}

TC_FN static void on_cleanup(void *arg)
{
	TC_ENTER(FN_on_cleanup);
	step((unsigned long)arg);
}

TC_FN static void level2(long i)
{
	TC_ENTER(FN_level2);
	for (long k = 0; k <= i * 10; k++)
		step((unsigned long)k);
	if (i == 3)
		return;
	if (i == 4) {
		TC_UNWOUND(FN_level2, 1);
		TC_UNWOUND(FN_level1, 1);
		TC_UNWOUND(FN_worker, 1);
		/* Pairs with the acquire load in main(). */
		atomic_store_explicit(&t4_ready, 1, memory_order_release);
		for (;;)
			pthread_testcancel();
	}
	TC_UNWOUND(FN_level2, 1);
	TC_UNWOUND(FN_level1, 1);
	TC_UNWOUND(FN_worker, 1);
	pthread_exit((void *)i);
}

TC_FN static void level1(long i)
{
	TC_ENTER(FN_level1);
	if (i == 2) {
		pthread_cleanup_push(on_cleanup, (void *)i);
		level2(i);
		pthread_cleanup_pop(0);
	} else {
		level2(i);
	}
	sink = (unsigned long)i;
}

TC_FN static void *worker(void *arg)
{
	TC_ENTER(FN_worker);
	long i = (long)arg;
	tc_thread_begin(labels[i]);
	level1(i);
	sink = (unsigned long)i;
	return arg;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	pthread_t t[NTHREADS];
	long sum = 0;

	tc_init(argc, argv, "pthread_exit", fn_names, FN_COUNT);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	/* Pairs with the release in level2(): t4 counted everything first. */
	while (!atomic_load_explicit(&t4_ready, memory_order_acquire))
		sched_yield();
	pthread_cancel(t[4]);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		sum += ret == PTHREAD_CANCELED ? 100 : (long)ret;
	}
	printf("pthread_exit: joined %d threads, sum %ld\n", NTHREADS, sum);
	return 0;
}
