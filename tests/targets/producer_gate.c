/*
 * Test target for a refused arena's shared memory (tests/integration/
 * shmheld_test.sh): links the producer API (no agent), sets up its arena,
 * emits K events (function_id 1 << 32 | seq, CALL/RETURN alternating),
 * prints "ready PID" and waits for the file GATE, then exits 0.
 *
 * usage: producer_gate GATE K   (the wait gives up after 120 s: exit 3)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ring.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: producer_gate GATE K\n");
		return 2;
	}
	uint64_t k = strtoull(argv[2], NULL, 10);
	if (ada_producer_init_from_env() < 0)
		return 5;
	for (uint64_t seq = 0; seq < k; seq++)
		ada_emit(1ull << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < 12000; i++) {
		if (access(argv[1], F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return 3;
}
