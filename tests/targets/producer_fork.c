/*
 * Test target for bounded shared memory (tests/integration/bounded.cmake):
 * links the producer API (no agent) and starts N short processes one after
 * the other; each sets up its own arena, emits K events and exits.
 *
 * usage: producer_fork N K [parent]   exits 0 when every child exited 0;
 *        with "parent", the parent process is traced too (emits K events
 *        first and holds its arena while the children run)
 * Each child's events: function_id (child << 32) | seq, CALL/RETURN
 * alternating, so the checker can count them per process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"

static int child(uint64_t id, uint64_t k)
{
	int rc = ada_producer_init_from_env();
	if (rc == -EDQUOT)
		return 0; /* over the recording's shared-memory ceiling: untraced */
	if (rc < 0) {
		fprintf(stderr, "producer_fork: child %llu: no arena (%s)\n",
		        (unsigned long long)id, strerror(-rc));
		return 3;
	}
	for (uint64_t seq = 0; seq < k; seq++)
		ada_emit(id << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "parent"))) {
		fprintf(stderr, "usage: producer_fork N K [parent]\n");
		return 2;
	}
	uint64_t n = strtoull(argv[1], NULL, 10), k = strtoull(argv[2], NULL, 10);
	if (argc == 4 && child(0, k))
		return 3;
	for (uint64_t i = 1; i <= n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("producer_fork: fork");
			return 4;
		}
		if (pid == 0)
			_exit(child(i, k));
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "producer_fork: child %llu failed\n",
			        (unsigned long long)i);
			return 5;
		}
	}
	return 0;
}
