/*
 * threads: the mixed workload on N threads at once.
 * Usage: threads [THREADS] [ROUNDS_PER_THREAD] (defaults 2 and 10000).
 * Counted calls: each thread's entry function bw_thread_main (1 per thread)
 * plus ROUNDS x bw_mix_calls_per_round per thread.
 */
#include <pthread.h>

#include "bw_common.h"
#include "bw_mixed.h"

volatile uint64_t wl_sink;

struct bw_thread_arg {
	pthread_t th;
	uint64_t rounds;
	uint64_t seed;
	uint64_t result;
};

BW_FN void *bw_thread_main(void *p)
{
	struct bw_thread_arg *a = p;
	uint64_t x = a->seed;
	for (uint64_t r = 0; r < a->rounds; r++)
		x = bw_mix_round(x + r);
	a->result = x;
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t n = wl_arg(argc, argv, 1, 2);
	uint64_t rounds = wl_arg(argc, argv, 2, 10000);
	if (n == 0 || n > 256) {
		fprintf(stderr, "threads: THREADS must be 1..256\n");
		return 2;
	}
	struct bw_thread_arg *args = calloc(n, sizeof(*args));
	if (!args)
		return 1;
	for (uint64_t i = 0; i < n; i++) {
		args[i].rounds = rounds;
		args[i].seed = i + 1;
		if (pthread_create(&args[i].th, NULL, bw_thread_main, &args[i]) != 0) {
			fprintf(stderr, "threads: pthread_create failed\n");
			return 1;
		}
	}
	uint64_t x = 0;
	for (uint64_t i = 0; i < n; i++) {
		pthread_join(args[i].th, NULL);
		x += args[i].result * (i + 1);
	}
	free(args);
	wl_sink = x;
	wl_report("threads", n * (1 + rounds * bw_mix_calls_per_round), x);
	return 0;
}
