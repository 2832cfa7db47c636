/*
 * Test target for the end of a recording whose drain is behind
 * (tests/integration/endlag_test.sh, with ADA_TEST_END_PAUSE=GATE in
 * the recorder): a descendant that outlives the program and a child that
 * records and ends while the recorder is finishing.
 *
 * usage: producer_endlag GATE K
 *   The program forks the daemon and exits 0. The daemon emits K events
 *   (function_id 1 << 32 | seq, CALL/RETURN alternating), prints "daemon
 *   PID" and waits for the file GATE (the recorder made it: the recording
 *   ends). Then it forks a child that emits K events (function_id
 *   2 << 32 | seq) and exits, reaps it, prints "child PID", emits K more
 *   events (1 << 32 | K + seq), waits 1 s (longer than the end's time for
 *   a process still running, so that no take gets them), removes GATE and
 *   waits until the recorder is gone (its parent changes), then exits.
 * Each wait gives up after 60 s (exit 3).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"

static void endlag_emit(uint64_t who, uint64_t from, uint64_t k)
{
	for (uint64_t seq = from; seq < from + k; seq++)
		ada_emit(who << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
}

/* 0 once PATH exists; -1 after 60 s. */
static int endlag_gate(const char *path)
{
	for (int i = 0; i < 6000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -1;
}

static int endlag_daemon(const char *gate, uint64_t k)
{
	if (ada_producer_init_from_env() < 0)
		return 5;
	endlag_emit(1, 0, k);
	printf("daemon %d\n", (int)getpid());
	fflush(stdout);
	if (endlag_gate(gate))
		return 3;
	pid_t pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0) {
		if (ada_producer_init_from_env() < 0)
			_exit(5);
		endlag_emit(2, 0, k);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 6;
	printf("child %d\n", (int)pid);
	fflush(stdout);
	endlag_emit(1, k, k);
	sleep(1);
	pid_t recorder = getppid(); /* the recorder: the child subreaper */
	unlink(gate);
	for (int i = 0; i < 6000 && getppid() == recorder; i++)
		usleep(10000);
	return getppid() == recorder ? 3 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: producer_endlag GATE K\n");
		return 2;
	}
	uint64_t k = strtoull(argv[2], NULL, 10);
	pid_t pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0)
		_exit(endlag_daemon(argv[1], k));
	return 0;
}
