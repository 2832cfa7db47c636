/*
 * Test target for bounded shared memory (tests/integration/bounded.cmake):
 * links the producer API (no agent) and starts N short processes one after
 * the other; each sets up its own arena, emits K events and exits.
 *
 * usage: producer_fork N K [parent|pool]   exits 0 when every child
 *        exited 0; with "parent", the parent process is traced too (emits
 *        K events first and holds its arena while the children run); with
 *        "pool", child i emits K - (i - 1) * 10 events (fewer than the one
 *        before: the old owner's events lie past its head), and each child
 *        after the first is started once the recorder has put an arena in
 *        the arena pool (a pool.* file in ADA_ARENA_DIR, 60 s at most), so
 *        that it takes its predecessor's (src/ring/pool.c); each child
 *        says in its arena that it exited, as the agent would
 * Each child's events: function_id (child << 32) | seq, CALL/RETURN
 * alternating, so the checker can count them per process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"

/* tell_exit: the child says in its arena that it exited (status 0), as
 * the agent's exit() hook does in a traced program: the recorder then
 * finishes it (and pools its arena) as soon as it is gone, instead of
 * waiting a second for a reaper's word that a bare producer's parent
 * never writes (src/recorder/drain_end.c, drain_other_status). */
static int child(uint64_t id, uint64_t k, bool tell_exit)
{
	int rc = ada_producer_init_from_env();
	if (rc == -EDQUOT && ada_producer_refused())
		return 0; /* over the recording's shared-memory ceiling: untraced */
	if (rc < 0) {
		fprintf(stderr, "producer_fork: child %llu: no arena (%s)\n",
		        (unsigned long long)id, strerror(-rc));
		return 3;
	}
	for (uint64_t seq = 0; seq < k; seq++)
		ada_emit(id << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	if (tell_exit)
		ada_arena_set_exited(ada_producer_arena(), 0);
	return 0;
}

/* True once the arena directory holds a pool file; false after 60 s. */
static bool pool_wait(void)
{
	const char *dir = getenv("ADA_ARENA_DIR");
	for (int i = 0; dir && i < 6000; i++, usleep(10000)) {
		DIR *d = opendir(dir);
		struct dirent *de;
		bool found = false;
		while (d && !found && (de = readdir(d)))
			found = !strncmp(de->d_name, "pool.", 5);
		if (d)
			closedir(d);
		if (found)
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 ||
	    (argc == 4 && strcmp(argv[3], "parent") && strcmp(argv[3], "pool"))) {
		fprintf(stderr, "usage: producer_fork N K [parent|pool]\n");
		return 2;
	}
	uint64_t n = strtoull(argv[1], NULL, 10), k = strtoull(argv[2], NULL, 10);
	bool pool = argc == 4 && !strcmp(argv[3], "pool");
	if (pool && k < n * 10) {
		fprintf(stderr, "producer_fork: pool needs K >= N * 10\n");
		return 2;
	}
	if (argc == 4 && !pool && child(0, k, false))
		return 3;
	for (uint64_t i = 1; i <= n; i++) {
		if (pool && i > 1 && !pool_wait()) {
			fprintf(stderr, "producer_fork: no arena in the pool after 60 s\n");
			return 6;
		}
		uint64_t ki = pool ? k - (i - 1) * 10 : k;
		pid_t pid = fork();
		if (pid < 0) {
			perror("producer_fork: fork");
			return 4;
		}
		if (pid == 0)
			_exit(child(i, ki, pool));
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "producer_fork: child %llu failed\n",
			        (unsigned long long)i);
			return 5;
		}
	}
	return 0;
}
