/*
 * Test target for the drain's doorbell against a program that rings it
 * constantly (tests/integration/idle_test.py --ringer): links the producer
 * API (no agent), sets up its arena, emits K events, then rings the
 * recording's doorbell as fast as it can for S seconds through its own
 * mapping of the budget page (a wake for the drain whenever it sleeps,
 * with nothing to do), emits K events more and exits 0. The drain must
 * neither spin nor lose an event.
 *
 * usage: producer_ringer S K
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ring.h"
#include "ring_bell.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void emit(uint64_t k)
{
	for (uint64_t seq = 0; seq < k; seq++)
		ada_emit(1ull << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: producer_ringer S K\n");
		return 2;
	}
	double secs = strtod(argv[1], NULL);
	uint64_t k = strtoull(argv[2], NULL, 10);
	struct ada_shm_budget *b = NULL;
	if (ada_producer_init_from_env() < 0 ||
	    ada_shm_budget_open_dir(getenv("ADA_ARENA_DIR"), &b) < 0)
		return 5;
	emit(k);
	unsigned long rings = 0;
	for (double end = now_s() + secs; now_s() < end; rings++)
		ada_shm_budget_ring(b);
	emit(k);
	printf("rang %lu times\n", rings);
	ada_shm_budget_close(b);
	return 0;
}
