/*
 * Exec without the agent: a process that replaced its image by a raw
 * execve system call (or any exec that did not pass the agent's
 * variables on: --no-follow, an environment of its own) runs on
 * untraced, and neither its new image (no agent) nor the pid (the same)
 * tells the recorder. Once a second the drain stats /proc/PID/exe of each
 * process it still records; when the executable changed and, a second
 * later, the process still runs but no longer maps its arena (no line of
 * /proc/PID/maps names it: an image with the agent reopens it by name at
 * once), that is said once per process, on stderr and in its manifest's
 * warnings. The first look counts as a change (the exec may have come
 * before it), so each process that lives past the grace has its maps
 * read once. An exec of the same executable (/proc/self/exe) is not seen
 * (docs/hooks.md).
 *
 * Threads: the drain thread only. Reads /proc; everything read there is
 * the target's to change and is only compared, never followed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder_internal.h"

#define EXEC_WATCH_GRACE_NS 1000000000ull /* for a new image's agent to map the arena */
#define EXEC_WATCH_MAPS_MAX (64u << 20)   /* bytes of /proc/PID/maps read at most */

/* 1: pid maps the arena, 0: it maps something but not the arena, -1: no
 * answer (gone, a zombie with no mappings, too long to read). */
static int exec_maps_arena(pid_t pid, const char *arena)
{
	char path[64], buf[65536];
	size_t alen = strlen(arena), keep = 0, total = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || alen == 0 || alen >= sizeof(buf) / 2) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int found = -1;
	ssize_t n;
	/* keep: the tail of the last read, so a name cut in two is found. */
	while (total < EXEC_WATCH_MAPS_MAX &&
	       (n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
		total += (size_t)n;
		size_t len = keep + (size_t)n;
		buf[len] = '\0';
		found = 0;
		if (memmem(buf, len, arena, alen)) {
			found = 1;
			break;
		}
		keep = alen < len ? alen : len;
		memmove(buf, buf + len - keep, keep);
	}
	close(fd);
	return total >= EXEC_WATCH_MAPS_MAX && found == 0 ? -1 : found;
}

static bool exec_exe_id(pid_t pid, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) != 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

void wal_exec_watch(struct ada_recorder *r, struct wal_proc *p, uint64_t now)
{
	dev_t dev;
	ino_t ino;
	if (p->exec_told || p->finished || !exec_exe_id(p->pid, &dev, &ino))
		return;
	if (!p->exe_known) {
		/* The exec may have come before this first look (a short-lived
		 * image that execs at once): check the maps once, after the
		 * grace, as if the executable had just changed. */
		p->exe_known = true;
		p->exe_dev = dev;
		p->exe_ino = ino;
		p->exe_changed_ns = now;
		return;
	}
	if (dev != p->exe_dev || ino != p->exe_ino) {
		p->exe_dev = dev;
		p->exe_ino = ino;
		p->exe_changed_ns = now;
		return;
	}
	if (!p->exe_changed_ns || now - p->exe_changed_ns < EXEC_WATCH_GRACE_NS)
		return;
	p->exe_changed_ns = 0;
	if (exec_maps_arena(p->pid, p->arena_path) != 0)
		return;
	char exe[64], target[256];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p->pid);
	ssize_t n = readlink(exe, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	p->exec_told = true;
	wal_note(r, p,
	         "pid %d exec'd %s without the agent (--no-follow, or an exec that did not pass "
	         "ada's variables on, such as a raw execve system call with an environment of "
	         "its own): it runs on untraced, and ada waits for it as before",
	         (int)p->pid, target[0] ? target : "another program");
}
