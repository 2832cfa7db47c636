/*
 * fibthreads: fib on N threads at once, for the two-producer throughput
 * target (>= 40 M events/s in total from two threads).
 * Usage: fibthreads [THREADS] [N] (defaults 2 and 30).
 * Counted calls per thread: bw_fibt_main (1) + the calls of bw_fib(N)
 * (C(n) = 1 + C(n-1) + C(n-2), C(0) = C(1) = 1). Built with
 * -fno-optimize-sibling-calls, like fib.
 */
#include <pthread.h>

#include "bw_common.h"

volatile uint64_t wl_sink;

struct fibt_arg {
	pthread_t th;
	uint32_t n;
	uint64_t result;
};

BW_FN uint64_t bw_fib(uint32_t n)
{
	if (n < 2)
		return n;
	return bw_fib(n - 1) + bw_fib(n - 2);
}

BW_FN void *bw_fibt_main(void *p)
{
	struct fibt_arg *a = p;
	a->result = bw_fib(a->n);
	return NULL;
}

static uint64_t fibt_calls(uint32_t n)
{
	uint64_t a = 1, b = 1;
	for (uint32_t i = 2; i <= n; i++) {
		uint64_t c = 1 + a + b;
		a = b;
		b = c;
	}
	return n == 0 ? a : b;
}

int main(int argc, char **argv)
{
	uint64_t t = wl_arg(argc, argv, 1, 2);
	uint32_t n = (uint32_t)wl_arg(argc, argv, 2, 30);
	if (t == 0 || t > 256 || n > 45) {
		fprintf(stderr, "fibthreads: THREADS must be 1..256 and N <= 45\n");
		return 2;
	}
	struct fibt_arg *args = calloc(t, sizeof(*args));
	if (!args)
		return 1;
	for (uint64_t i = 0; i < t; i++) {
		args[i].n = n;
		if (pthread_create(&args[i].th, NULL, bw_fibt_main, &args[i]) != 0) {
			fprintf(stderr, "fibthreads: pthread_create failed\n");
			return 1;
		}
	}
	uint64_t x = 0;
	for (uint64_t i = 0; i < t; i++) {
		pthread_join(args[i].th, NULL);
		x += args[i].result;
	}
	free(args);
	wl_sink = x;
	wl_report("fibthreads", t * (1 + fibt_calls(n)), x);
	return 0;
}
