/*
 * Test target: threads created all the time, also while ada attach stops
 * the process and while it detaches (issue 10; tests/integration/
 * attach_test.py, case spawn).
 *
 * A spawner thread starts SPAWN_BATCH workers at a time, joins them and
 * starts the next batch, until "stop" arrives on stdin. Each worker calls
 * spawn_work() SPAWN_CALLS times (its calls and returns are what a
 * recording holds of it). Prints "ready" after the first batch; on
 * "stop": "threads N calls M", exits 42 when M == N * SPAWN_CALLS (no
 * worker lost or left stopped: a stopped one would hang the join).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SPAWN_BATCH 4
#define SPAWN_CALLS 100

static atomic_int spawn_stop;
static atomic_ulong spawn_calls, spawn_threads, spawn_batches;

__attribute__((noinline)) unsigned long spawn_work(unsigned long x)
{
	atomic_fetch_add_explicit(&spawn_calls, 1, memory_order_relaxed);
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

static void *spawn_worker(void *arg)
{
	unsigned long x = (unsigned long)(uintptr_t)arg;
	for (int i = 0; i < SPAWN_CALLS; i++)
		x = spawn_work(x);
	return (void *)(uintptr_t)x;
}

static void *spawn_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&spawn_stop)) {
		pthread_t t[SPAWN_BATCH];
		int n = 0;
		for (; n < SPAWN_BATCH; n++)
			if (pthread_create(&t[n], NULL, spawn_worker, (void *)(uintptr_t)n))
				break;
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		atomic_fetch_add(&spawn_threads, (unsigned long)n);
		atomic_fetch_add(&spawn_batches, 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t s;
	char line[16] = "";
	if (pthread_create(&s, NULL, spawn_loop, NULL))
		return 1;
	while (atomic_load(&spawn_batches) == 0)
		sched_yield();
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strcmp(line, "stop\n"))
		return 1;
	atomic_store(&spawn_stop, 1);
	pthread_join(s, NULL);
	unsigned long n = atomic_load(&spawn_threads), c = atomic_load(&spawn_calls);
	printf("threads %lu calls %lu\n", n, c);
	return n > 0 && c == n * SPAWN_CALLS ? 42 : 1;
}
