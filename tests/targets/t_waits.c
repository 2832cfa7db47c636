/*
 * A program that times its own calls, for the test of ada's wait markers
 * (tests/integration/waits_test.py, docs/format.md "Wait markers"). Run
 * with a tiny index ring, its thread waits for ring space over and over;
 * the trace must take those waits out of the durations it reports.
 *
 * usage: t_waits N OUT
 * Calls tick() N times. Around each call it reads CLOCK_BOOTTIME, the
 * recording's clock, and writes the pair (t0, t1) of each call to OUT as
 * two native 64-bit integers (ns): each CALL and RETURN of tick lies
 * between t0 and t1, and so does every wait of ada's inside tick's frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t t_waits_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Short, so that its own time is far below a wait's. */
__attribute__((noinline)) int tick(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: t_waits N OUT\n");
		return 2;
	}
	long n = strtol(argv[1], NULL, 10);
	if (n <= 0 || n > 10000000) {
		fprintf(stderr, "t_waits: N must be 1..10000000\n");
		return 2;
	}
	uint64_t *t = malloc((size_t)n * 2 * sizeof(*t));
	if (!t)
		return 1;
	int acc = 0;
	for (long i = 0; i < n; i++) {
		t[2 * i] = t_waits_now();
		acc += tick((int)i);
		t[2 * i + 1] = t_waits_now();
	}
	/* One write: a line per call would add ~25 events a call. */
	FILE *f = fopen(argv[2], "wb");
	if (!f || fwrite(t, 2 * sizeof(*t), (size_t)n, f) != (size_t)n)
		return 1;
	free(t);
	volatile int sink = acc; /* tick's results are used */
	(void)sink;
	return fclose(f) != 0;
}
