/*
 * A target that floods its own arena directory with empty files named
 * like arenas (tests/integration/arena_flood_test.sh, issue 35): the
 * recorder must look at each name once, tell each kind of refusal once
 * with a count, and stay quick to stop.
 *
 * usage: t_flood MODE N
 *   taken   N names <own pid>.<k>.ring (a later process of a reused pid,
 *           by their form), then exit
 *   absent  N names <pid>.ring of pids that cannot exist, then exit
 *   hold    as taken, then print "READY" and sleep (up to 2 minutes)
 *           until a signal ends it
 *   endless as taken, then print "READY <pid>", ignore SIGTERM and go on
 *           making such names (up to 2 minutes, or until the directory
 *           is gone): a program that outlives the recorder's stop while
 *           the drain is busy with its names
 * Emits 100 events on the main thread first. Exit status 0. Prints
 * "END <CLOCK_REALTIME seconds>" last: how long the recorder ran after
 * the program (bench figures, not the tests).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

/* One empty file DIR/NAME; 0, or -1. */
static int flood_touch(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: t_flood MODE N\n");
		return 2;
	}
	const char *mode = argv[1], *dir = getenv("ADA_ARENA_DIR");
	long n = strtol(argv[2], NULL, 10);
	if (!dir || ada_producer_init_from_env() != 0)
		return 3;
	for (uint64_t i = 0; i < 100; i++)
		ada_emit((1ull << 32) | i, i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	char name[64];
	long k = 0;
	for (; k < n; k++) {
		if (!strcmp(mode, "absent")) /* above any pid_max (2^22) */
			snprintf(name, sizeof(name), "%ld.ring", 10000000 + k);
		else
			snprintf(name, sizeof(name), "%d.%ld.ring", (int)getpid(), 1000 + k);
		if (flood_touch(dir, name) != 0)
			return 4;
	}
	if (!strcmp(mode, "endless")) {
		signal(SIGTERM, SIG_IGN);
		printf("READY %d\n", (int)getpid());
		fflush(stdout);
		time_t end = time(NULL) + 120;
		for (; time(NULL) < end; k++) {
			snprintf(name, sizeof(name), "%d.%ld.ring", (int)getpid(), 1000 + k);
			if (flood_touch(dir, name) != 0)
				return 0; /* the recorder removed the directory */
		}
	}
	if (!strcmp(mode, "hold")) {
		printf("READY\n");
		fflush(stdout);
		for (int i = 0; i < 120; i++)
			sleep(1);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	printf("END %lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	return 0;
}
