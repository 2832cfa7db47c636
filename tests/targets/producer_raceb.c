/*
 * Test target for Race B (tests/integration/raceb_test.sh): a child that
 * records K events and ends, whose pid the harness then gives to a
 * process of its own before the recorder looks at the child's arena.
 *
 * usage: producer_raceb GATE1 GATE2 K
 *   waits for the file GATE1 (the harness has stopped the recorder), forks
 *   a child that emits K events (function_id 1 << 32 | seq, CALL/RETURN
 *   alternating) and exits, reaps it, prints "child PID", then waits for
 *   the file GATE2 and exits 0. The parent itself records nothing.
 * Each wait gives up after 120 s (exit 3).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"

/* 0 once PATH exists; -1 after 120 s. */
static int raceb_gate(const char *path)
{
	for (int i = 0; i < 12000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: producer_raceb GATE1 GATE2 K\n");
		return 2;
	}
	uint64_t k = strtoull(argv[3], NULL, 10);
	if (raceb_gate(argv[1]))
		return 3;
	pid_t pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0) {
		if (ada_producer_init_from_env() < 0)
			_exit(5);
		for (uint64_t seq = 0; seq < k; seq++)
			ada_emit(1ull << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 6;
	printf("child %d\n", (int)pid);
	fflush(stdout);
	return raceb_gate(argv[2]) ? 3 : 0;
}
