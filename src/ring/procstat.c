/*
 * ada ring: the start time in a /proc/PID/stat text. A process's pid and
 * start time name it across exec (exec keeps both) and tell it from a
 * later process given the same pid (the same pid, another start time):
 * the producer compares them before it adopts an arena of its pid
 * (env.c), the recorder before it waits on a pid (src/recorder/drain.c,
 * alive.c), and a producer whose ring is full asks whether its recorder
 * is still there (ring_recorder_state: producer.c).
 *
 * Threads: any. ring_recorder_state() runs on a traced thread's slow path
 * (hook context, cold): it makes raw system calls through syscall(3) only
 * -- a leaf the hook handlers recognise as the agent's own call, where
 * open(3) and read(3) may reach traced libc functions -- and keeps errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring_internal.h"

ADA_FORK_PATH uint64_t ada_stat_start_ticks(const char *buf, size_t n)
{
	if (!buf)
		return 0;
	size_t i = n;
	while (i > 0 && buf[i - 1] != ')')
		i--;
	if (i == 0)
		return 0;
	/* buf[i]: just after the last ')', the space before field 3; field k
	 * starts after the (k - 2)-th space from there. */
	for (int spaces = 0; i < n; i++)
		if (buf[i] == ' ' && ++spaces == 20)
			break;
	if (i >= n)
		return 0;
	uint64_t v = 0;
	size_t digits = 0;
	for (i++; i < n && buf[i] >= '0' && buf[i] <= '9'; i++, digits++) {
		uint64_t d = (uint64_t)(buf[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0; /* past 2^64: not a start time */
		v = v * 10 + d;
	}
	/* A read cut short inside the field must not pass for a smaller one. */
	if (!digits || i >= n || (buf[i] != ' ' && buf[i] != '\n'))
		return 0;
	return v;
}

/* /proc/PID/stat into buf (NUL-terminated): its length, or -errno. */
static long procstat_read(int32_t pid, char *buf, size_t cap)
{
	char path[32] = "/proc/";
	size_t n = 6;
	char digits[12];
	int k = 0;
	for (uint32_t v = (uint32_t)pid; k == 0 || v; v /= 10)
		digits[k++] = (char)('0' + v % 10);
	while (k)
		path[n++] = digits[--k];
	for (const char *t = "/stat"; *t;)
		path[n++] = *t++;
	path[n] = '\0';
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	long r = syscall(SYS_read, fd, buf, cap - 1);
	long e = r < 0 ? -errno : 0;
	syscall(SYS_close, fd);
	if (r < 0)
		return e;
	buf[r] = '\0';
	return r;
}

enum ring_recorder ring_recorder_state(int32_t pid, uint64_t start)
{
	if (pid <= 0)
		return RING_RECORDER_UNKNOWN;
	int saved = errno;
	char buf[1024];
	enum ring_recorder st = RING_RECORDER_UNKNOWN;
	long n = procstat_read(pid, buf, sizeof(buf));
	if (n == -ENOENT)
		st = syscall(SYS_kill, pid, 0) < 0 && errno == ESRCH ? RING_RECORDER_GONE
		                                                     : RING_RECORDER_UNKNOWN;
	else if (n > 0 && start && ada_stat_start_ticks(buf, (size_t)n) != start)
		st = RING_RECORDER_GONE; /* its pid, another process */
	else if (n > 0) {
		long i = n;
		while (i > 0 && buf[i - 1] != ')')
			i--;
		char c = i > 0 && i + 1 < n ? buf[i + 1] : 0;
		st = c == 'Z' || c == 'X' ? RING_RECORDER_GONE
		     : c == 'T'           ? RING_RECORDER_STOPPED
		     : c                  ? RING_RECORDER_RUNNING
		                          : RING_RECORDER_UNKNOWN;
	}
	errno = saved;
	return st;
}

bool ring_arena_published(const struct ada_arena *a)
{
	if (!a->pub_path)
		return true;
	int saved = errno;
	struct stat st;
	bool there = true;
	if (syscall(SYS_newfstatat, AT_FDCWD, a->pub_path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		there = (uint64_t)st.st_ino == a->pub_ino;
	else if (errno == ENOENT)
		there = false;
	errno = saved;
	return there;
}
