/*
 * Bench workload (bench/thread_start.py): what starting a thread costs.
 *
 *   thread_start start N    N times: pthread_create, then the new thread's
 *                           first instruction (thread_first, a hooked
 *                           function: under ada its entry claims the ring
 *                           slot) reads the clock; join. Prints one line
 *                           per thread: ns from before pthread_create to
 *                           that first instruction.
 *   thread_start serve N    a thread-per-request server: N requests, each
 *                           handled by a new thread (2 000 hooked calls,
 *                           about 1 ms of work, a reply through a pipe); prints
 *                           one line per request: ns from its arrival to
 *                           its reply read back by the accepting thread.
 *
 * Threads are joined one at a time, so each start is measured alone.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The first instruction of the new thread: the clock read. */
NOINL static void *thread_first(void *arg)
{
	*(uint64_t *)arg = now_ns();
	return NULL;
}

static int run_start(int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t1 = 0, t0 = now_ns();
		pthread_t t;
		if (pthread_create(&t, NULL, thread_first, &t1) != 0)
			return 1;
		pthread_join(t, NULL);
		printf("%llu\n", (unsigned long long)(t1 - t0));
	}
	return 0;
}

struct request {
	int fd; /* the reply goes here */
	unsigned id;
};

NOINL static unsigned parse_field(unsigned id, unsigned k)
{
	return (id * 2654435761u) ^ k;
}

NOINL static uint64_t compute(unsigned v)
{
	uint64_t h = v;
	for (int i = 0; i < 800; i++)
		h = h * 6364136223846793005ull + 1442695040888963407ull;
	return h;
}

NOINL static void *handle_request(void *arg)
{
	struct request *r = arg;
	uint64_t acc = 0;
	for (unsigned k = 0; k < 1000; k++)
		acc += compute(parse_field(r->id, k));
	sink += acc;
	char reply = 'k';
	if (write(r->fd, &reply, 1) != 1)
		abort();
	return NULL;
}

static int run_serve(int n)
{
	int p[2];
	if (pipe(p) != 0)
		return 1;
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		struct request r = {.fd = p[1], .id = (unsigned)i};
		pthread_t t;
		if (pthread_create(&t, NULL, handle_request, &r) != 0)
			return 1;
		char c;
		if (read(p[0], &c, 1) != 1)
			return 1;
		uint64_t t1 = now_ns();
		pthread_join(t, NULL);
		printf("%llu\n", (unsigned long long)(t1 - t0));
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "start") && strcmp(argv[1], "serve"))) {
		fprintf(stderr, "usage: thread_start start|serve N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	return !strcmp(argv[1], "start") ? run_start(n) : run_serve(n);
}
