/*
 * Test target: more threads than the arena has slots (issue 14).
 *   t_manythreads barrier N   N threads each call mt_work() 10 times, meet
 *                             at a barrier (all N alive at once), call it
 *                             10 times more and end
 *   t_manythreads waves N W   N short threads, W alive at a time (created
 *                             in waves of W, each wave joined): 3 calls each
 *   t_manythreads serial N K  N threads one after another (each joined
 *                             before the next starts, a thread per
 *                             request): K calls each
 *   t_manythreads busy N K GATE
 *                             N threads call mt_work() K times each, half
 *                             of them, then meet main at a barrier; main
 *                             prints "half" and waits (at most 120 s) for
 *                             the file GATE to exist, then all go on (the
 *                             harness kills the recorder in between)
 * Every thread's calls of mt_work are known exactly (N x 20, N x 3, N x K,
 * N x K);
 * the harness counts the CALL/RETURN events in the trace. Prints a sum.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t mt_barrier;
static unsigned long mt_calls_each;
static volatile unsigned long mt_sink;

__attribute__((noinline, used)) unsigned long mt_work(unsigned long x)
{
	mt_sink = x;
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void *mt_barrier_thread(void *arg)
{
	unsigned long acc = (unsigned long)(uintptr_t)arg;
	for (int i = 0; i < 10; i++)
		acc = mt_work(acc);
	pthread_barrier_wait(&mt_barrier);
	for (int i = 0; i < 10; i++)
		acc = mt_work(acc);
	return (void *)(uintptr_t)acc;
}

static void *mt_busy_thread(void *arg)
{
	unsigned long acc = (unsigned long)(uintptr_t)arg;
	for (unsigned long i = 0; i < mt_calls_each / 2; i++)
		acc = mt_work(acc);
	pthread_barrier_wait(&mt_barrier); /* the first half done */
	pthread_barrier_wait(&mt_barrier); /* main saw the gate */
	for (unsigned long i = mt_calls_each / 2; i < mt_calls_each; i++)
		acc = mt_work(acc);
	return (void *)(uintptr_t)acc;
}

/* busy mode's main thread, between the halves: a bounded poll. */
static void *mt_gate(void *arg)
{
	const char *gate = arg;
	pthread_barrier_wait(&mt_barrier);
	printf("half\n");
	fflush(stdout);
	for (int i = 0; i < 12000 && access(gate, F_OK) != 0; i++)
		usleep(10000);
	pthread_barrier_wait(&mt_barrier);
	return NULL;
}

static void *mt_short_thread(void *arg)
{
	unsigned long acc = (unsigned long)(uintptr_t)arg;
	for (unsigned long i = 0; i < mt_calls_each; i++)
		acc = mt_work(acc);
	return (void *)(uintptr_t)acc;
}

/* Starts n threads of fn and joins them; returns the sum of their results. */
static int mt_run(unsigned long n, void *(*fn)(void *), unsigned long base, unsigned long *sum)
{
	pthread_t *t = calloc(n, sizeof(*t));
	pthread_attr_t at;
	if (!t || pthread_attr_init(&at) != 0 || pthread_attr_setstacksize(&at, 64 << 10) != 0)
		return -1;
	for (unsigned long i = 0; i < n; i++) {
		if (pthread_create(&t[i], &at, fn, (void *)(uintptr_t)(base + i)) != 0) {
			fprintf(stderr, "pthread_create failed at %lu\n", i);
			return -1;
		}
	}
	for (unsigned long i = 0; i < n; i++) {
		void *r;
		pthread_join(t[i], &r);
		*sum += (unsigned long)(uintptr_t)r;
	}
	pthread_attr_destroy(&at);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long sum = 0, n = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	if (argc > 2 && !strcmp(argv[1], "barrier") && n > 0) {
		pthread_barrier_init(&mt_barrier, NULL, (unsigned)n);
		if (mt_run(n, mt_barrier_thread, 0, &sum))
			return 1;
	} else if (argc > 4 && !strcmp(argv[1], "busy") && n > 0) {
		mt_calls_each = strtoul(argv[3], NULL, 10);
		pthread_barrier_init(&mt_barrier, NULL, (unsigned)n + 1);
		pthread_t g;
		if (pthread_create(&g, NULL, mt_gate, argv[4]) != 0 ||
		    mt_run(n, mt_busy_thread, 0, &sum))
			return 1;
		pthread_join(g, NULL);
	} else if (argc > 3 && !strcmp(argv[1], "waves") && n > 0) {
		unsigned long w = strtoul(argv[3], NULL, 10);
		mt_calls_each = 3;
		for (unsigned long done = 0; w > 0 && done < n; done += w)
			if (mt_run(n - done < w ? n - done : w, mt_short_thread, done, &sum))
				return 1;
	} else if (argc > 3 && !strcmp(argv[1], "serial") && n > 0) {
		mt_calls_each = strtoul(argv[3], NULL, 10);
		for (unsigned long i = 0; i < n; i++)
			if (mt_run(1, mt_short_thread, i, &sum))
				return 1;
	} else {
		fprintf(stderr, "usage: t_manythreads barrier N | waves N W | serial N K | "
		                "busy N K GATE\n");
		return 2;
	}
	printf("sum %lu\n", sum);
	return 0;
}
