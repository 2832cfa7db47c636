/*
 * Is a recorder alive? A pid alone is not enough -- pids are reused -- so
 * the manifest records the recorder's pid and its start time (field 22 of
 * /proc/PID/stat, clock ticks since boot), and a reader compares both.
 *
 * Threads: any; reads /proc only.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"
#include "recorder.h"

uint64_t ada_proc_start_ticks(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 ? ada_stat_start_ticks(buf, (size_t)n) : 0; /* ring.h */
}

bool ada_recorder_alive(pid_t pid, uint64_t start_ticks)
{
	if (pid <= 0)
		return false;
	uint64_t now = ada_proc_start_ticks(pid);
	/* No start time recorded (an older manifest): the pid must do. */
	return now != 0 && (start_ticks == 0 || now == start_ticks);
}
