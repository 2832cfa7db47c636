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
 *   Every event has its detail record when the arena has a detail ring,
 *   and the program first sends SIGUSR2 to its parent (the recorder's
 *   manual fire, with --trigger manual: a window over all of them).
 *
 * usage: producer_endlag --outlive GATE N
 *   The program forks the daemon and exits 0. The daemon records one
 *   event, prints "daemon PID" and waits for the file GATE (the recorder
 *   made it: it cleared the arena directory and is about to remove it).
 *   Then a child asks for an arena and prints "during ERRNO" (0: it made
 *   one), GATE is removed, and once the recorder is gone N children ask
 *   for one each; it prints "after M" (M of them made one) and exits.
 *
 * usage: producer_endlag --reused GATE K
 *   The program prints "program PID", forks the daemon and exits 0. The
 *   daemon records one event, prints "daemon PID" and forks a child that
 *   emits K events (function_id 2 << 32 | seq), prints "child PID" and
 *   waits for the file GATE, then exits; the
 *   daemon reaps it (the recorder never does) and waits until the
 *   recorder is gone.
 * Each wait gives up after 60 s (exit 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"

/* The detail record of the event just emitted (the agent's layout,
 * ring.h ADA_DREC_*), when the arena has a detail ring. */
static void endlag_detail(uint64_t fn, bool call)
{
	struct ada_producer *p = &ada_producer_tls;
	uint64_t link = p->head - 1, end;
	uint32_t words = call ? ADA_DREC_CALL_WORDS : ADA_DREC_RETURN_WORDS;
	_Atomic uint64_t *w = p->events ? ada_detail_reserve(p, words * 8, &end) : NULL;
	if (!w)
		return; /* --detail never: no detail ring */
	ada_detail_put(w, ADA_DREC_TS, p->events[link & p->mask].timestamp_ns);
	ada_detail_put(w, ADA_DREC_LINK, link);
	ada_detail_put(w, ADA_DREC_FN, fn);
	ada_detail_put(
	    w, ADA_DREC_META,
	    ada_drec_meta(call ? ATF_DETAIL_FUNCTION_CALL : ATF_DETAIL_FUNCTION_RETURN, 0, 0));
	for (uint32_t i = ADA_DREC_REGS; i < words; i++)
		ada_detail_put(w, i, 0);
	ada_detail_commit(p, end);
}

static void endlag_emit(uint64_t who, uint64_t from, uint64_t k)
{
	for (uint64_t seq = from; seq < from + k; seq++) {
		bool call = !(seq & 1);
		ada_emit(who << 32 | seq, call ? ATF_EVENT_CALL : ATF_EVENT_RETURN, 1);
		endlag_detail(who << 32 | seq, call);
	}
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

/* A child that asks for an arena of its own: its exit status is the
 * errno it got (0: it made one). */
static int outlive_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		int rc = ada_producer_init_from_env();
		_exit(rc < 0 ? -rc & 0xff : 0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int outlive_daemon(const char *gate, int n)
{
	if (ada_producer_init_from_env() < 0)
		return 5;
	ada_emit(1ull << 32, ATF_EVENT_CALL, 1);
	printf("daemon %d\n", (int)getpid());
	fflush(stdout);
	if (endlag_gate(gate))
		return 3;
	printf("during %d\n", outlive_child());
	fflush(stdout);
	pid_t recorder = getppid(); /* the recorder: the child subreaper */
	unlink(gate);
	for (int i = 0; i < 6000 && getppid() == recorder; i++)
		usleep(10000);
	if (getppid() == recorder)
		return 3;
	int made = 0;
	for (int i = 0; i < n; i++)
		made += outlive_child() == 0;
	printf("after %d\n", made);
	fflush(stdout); /* the caller ends with _exit */
	return 0;
}

static int reused_daemon(const char *gate, uint64_t k)
{
	if (ada_producer_init_from_env() < 0)
		return 5;
	ada_emit(1ull << 32, ATF_EVENT_CALL, 1);
	printf("daemon %d\n", (int)getpid());
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0) {
		if (ada_producer_init_from_env() < 0)
			_exit(5);
		endlag_emit(2, 0, k);
		printf("child %d\n", (int)getpid());
		fflush(stdout);
		_exit(endlag_gate(gate) ? 3 : 0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 6;
	pid_t recorder = getppid(); /* the recorder: the child subreaper */
	for (int i = 0; i < 6000 && getppid() == recorder; i++)
		usleep(10000);
	return getppid() == recorder ? 3 : 0;
}

int main(int argc, char **argv)
{
	bool outlive = argc == 4 && !strcmp(argv[1], "--outlive");
	bool reused = argc == 4 && !strcmp(argv[1], "--reused");
	if (argc != 3 && !outlive && !reused) {
		fprintf(stderr,
		        "usage: producer_endlag GATE K | --outlive GATE N | --reused GATE K\n");
		return 2;
	}
	if (reused) {
		printf("program %d\n", (int)getpid());
		fflush(stdout);
	}
	if (argc == 3)
		kill(getppid(), SIGUSR2); /* the recorder: a manual fire (--trigger manual) */
	pid_t pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0)
		_exit(outlive  ? outlive_daemon(argv[2], atoi(argv[3]))
		      : reused ? reused_daemon(argv[2], strtoull(argv[3], NULL, 10))
		               : endlag_daemon(argv[1], strtoull(argv[2], NULL, 10)));
	return 0;
}
