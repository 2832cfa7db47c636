/*
 * Test target for a reused pid (tests/integration/pidreuse_test.sh): links
 * the producer API (no agent). Child A sets up its arena, emits KA events
 * (function_id 1 << 32 | seq) and exits; once the recorder has finished A
 * (it removes <ADA_ARENA_DIR>/<A>.ring), the parent makes the kernel give
 * pid A to child B (root: /proc/sys/kernel/ns_last_pid = A - 1, then
 * fork), which emits KB events (2 << 32 | seq) and exits. The recorder must
 * tell B's arena as not read, and keep pid_A/ A's alone.
 *
 * usage: producer_pidreuse KA KB   prints "pid A" on stdout; exits 0,
 *        or 77 when it cannot force the pid (not root, no ns_last_pid, or
 *        other processes took pid A every time), other codes on failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

static int emit(uint64_t id, uint64_t k)
{
	int rc = ada_producer_init_from_env();
	if (rc < 0) {
		fprintf(stderr, "producer_pidreuse: child %llu: no arena (%s)\n",
		        (unsigned long long)id, strerror(-rc));
		return 3;
	}
	for (uint64_t seq = 0; seq < k; seq++)
		ada_emit(id << 32 | seq, seq & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	return 0;
}

static int reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The next fork's pid: last + 1, unless another process forks between. */
static int set_last_pid(pid_t last)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)last);
	int rc = write(fd, buf, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: producer_pidreuse KA KB\n");
		return 2;
	}
	uint64_t ka = strtoull(argv[1], NULL, 10), kb = strtoull(argv[2], NULL, 10);
	const char *dir = getenv("ADA_ARENA_DIR");
	if (!dir)
		return 2;
	pid_t a = fork();
	if (a < 0)
		return 4;
	if (a == 0)
		_exit(emit(1, ka));
	if (reap(a) != 0)
		return 5;
	printf("pid %d\n", (int)a);
	fflush(stdout);
	/* The recorder finished A when it removed A's arena: wait for that,
	 * polling, with a generous bound (a busy machine is slow, never
	 * wrong). */
	char ring[4096];
	snprintf(ring, sizeof(ring), "%s/%d.ring", dir, (int)a);
	struct stat st;
	for (int i = 0; lstat(ring, &st) == 0; i++) {
		if (i == 12000) { /* 120 s */
			fprintf(stderr, "producer_pidreuse: %s never removed\n", ring);
			return 6;
		}
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	/* Another process may fork between the write and ours: try again. A
	 * child that did not get pid A exits untraced. */
	for (int tries = 0; tries < 200; tries++) {
		if (set_last_pid(a - 1) != 0) {
			fprintf(stderr,
			        "producer_pidreuse: cannot write ns_last_pid (%s): skipped\n",
			        strerror(errno));
			return 77;
		}
		pid_t b = fork();
		if (b < 0)
			return 4;
		if (b == 0)
			_exit(getpid() == a ? emit(2, kb) : 0);
		if (reap(b) != 0)
			return 5;
		if (b == a)
			return 0;
	}
	fprintf(stderr, "producer_pidreuse: other processes took pid %d 200 times: skipped\n",
	        (int)a);
	return 77;
}
