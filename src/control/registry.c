/*
 * The per-user registry: pid -> session, for traced processes whose
 * environment does not name their session (a process `ada attach` loaded
 * the agent into, one that overwrote its environment). The environment is
 * asked first (client.c); this is the fallback.
 *
 * Place: /run/user/<uid>/ada when /run/user/<uid> is a directory of that
 * user (systemd's runtime directory), else /tmp/ada-<uid>. Every
 * directory on the way must be one only the user or root can change
 * (ada_fs_walk), and ada/ itself must be the user's and 0700: a directory
 * planted by someone else (/tmp/ada-1000 made by uid 1001) is refused, not
 * used. The place depends on the uid only, so root (or a client) finds
 * any user's registry from the pid's owner.
 *
 * Entries: one file per traced pid, and one for the recorder's own pid
 * (`ada record`, `ada attach`: the pid a user knows), named by the pid,
 * written whole (ada_fs_replace: temporary file + rename) by the
 * recording's control thread: "session=<absolute dir>\nstart=<ticks>\n".
 * start is the process's start time (/proc/PID/stat field 22): a reused
 * pid does not match, so a stale entry (a recorder that was killed) is
 * ignored. Entries are removed when the process ends and when the
 * recording ends.
 *
 * A traced process the registry does not name (not yet synced, past
 * ADA_LIVE_MAX_PROCS) is found by its arena: the mapping of its
 * <pid>.ring that /proc/PID/maps shows (which the program cannot erase
 * as it can its environment) is matched, by device and inode, against
 * the mappings of the registered processes -- the recorder maps every
 * arena it drains (ctl_registry_by_arena). Only the registry, private to
 * the user, names the session; the arena's path is never trusted.
 * Threads: the control poll thread (writer) and clients (readers).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control_internal.h"
#include "fs.h"

#define REG_ENTRY_MAX 4096

int ctl_registry_path(uid_t uid, char *path, size_t cap)
{
	char run[64];
	struct stat st;
	snprintf(run, sizeof(run), "/run/user/%u", (unsigned)uid);
	if (lstat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		return snprintf(path, cap, "%s/ada", run) < (int)cap ? 0 : -ENAMETOOLONG;
	return snprintf(path, cap, "/tmp/ada-%u", (unsigned)uid) < (int)cap ? 0 : -ENAMETOOLONG;
}

/* The registry of uid, opened (created when create); -ENOENT when it does
 * not exist, -EPERM when something on the way or ada/ itself is not
 * private to uid. base (a test's directory) replaces the default place. */
int ctl_registry_open(const char *base, uid_t uid, bool create, int *fd)
{
	char path[PATH_MAX];
	int rc =
	    base
	        ? (snprintf(path, sizeof(path), "%s", base) < (int)sizeof(path) ? 0 : -ENAMETOOLONG)
	        : ctl_registry_path(uid, path, sizeof(path));
	if (rc < 0)
		return rc;
	rc = ada_fs_walk(path, uid, create ? ADA_FS_WALK_CREATE : 0, fd, NULL, 0);
	if (rc < 0)
		return rc;
	if (*fd < 0)
		return -ENOENT;
	struct stat st;
	if (fstat(*fd, &st) < 0 || st.st_uid != uid || (st.st_mode & 077)) {
		close(*fd);
		*fd = -1;
		return -EPERM;
	}
	return 0;
}

int ctl_registry_add(int fd, pid_t pid, const char *session)
{
	char name[32], buf[PATH_MAX + 64];
	uint64_t start = ada_proc_start_ticks(pid);
	if (!start)
		return -ESRCH;
	snprintf(name, sizeof(name), "%d", (int)pid);
	int n = snprintf(buf, sizeof(buf), "session=%s\nstart=%" PRIu64 "\n", session, start);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	return ada_fs_replace(fd, name, buf, (size_t)n, false);
}

void ctl_registry_remove(int fd, pid_t pid)
{
	char name[32];
	snprintf(name, sizeof(name), "%d", (int)pid);
	unlinkat(fd, name, 0);
}

/* Parses an entry (input: bounded, checked). 0 when it names a session for
 * this very process (start time matches), -ENOENT otherwise. */
static int registry_parse(const char *buf, pid_t pid, char *dir, size_t cap)
{
	const char *s = strncmp(buf, "session=/", 9) ? NULL : buf + 8;
	const char *nl = s ? strchr(s, '\n') : NULL;
	if (!nl || strncmp(nl + 1, "start=", 6))
		return -ENOENT;
	char *end;
	unsigned long long start = strtoull(nl + 7, &end, 10);
	if (*end != '\n' || !start || start != ada_proc_start_ticks(pid))
		return -ENOENT; /* a reused pid, or garbage */
	if ((size_t)(nl - s) >= cap)
		return -ENAMETOOLONG;
	memcpy(dir, s, (size_t)(nl - s));
	dir[nl - s] = '\0';
	return 0;
}

/* Whether entry name (a pid) of the registry fd still names a live
 * process: its file parses and its start time is the process's. */
static bool registry_entry_live(int fd, const char *name)
{
	char buf[REG_ENTRY_MAX + 1], dir[PATH_MAX], *end;
	long pid = strtol(name, &end, 10);
	int efd = -1;
	if (*end || pid <= 0 || pid > INT_MAX || ada_fs_open_file(fd, name, O_RDONLY, &efd) < 0)
		return false;
	ssize_t n = read(efd, buf, REG_ENTRY_MAX);
	close(efd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 && registry_parse(buf, (pid_t)pid, dir, sizeof(dir)) == 0;
}

int ctl_registry_prune(int fd)
{
	DIR *d = ada_fs_opendir(fd, ".");
	struct dirent *de;
	int removed = 0;
	if (!d)
		return 0;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++)
		if (de->d_name[0] != '.' && !registry_entry_live(fd, de->d_name))
			removed += unlinkat(fd, de->d_name, 0) == 0;
	closedir(d);
	return removed;
}

int ada_control_registry_prune(void)
{
	int fd;
	if (ctl_registry_open(NULL, geteuid(), false, &fd) < 0)
		return 0;
	int n = ctl_registry_prune(fd);
	close(fd);
	return n;
}

int ctl_registry_lookup(const char *base, uid_t uid, pid_t pid, char *dir, size_t cap)
{
	int fd, efd = -1;
	int rc = ctl_registry_open(base, uid, false, &fd);
	if (rc < 0)
		return rc;
	char name[32], buf[REG_ENTRY_MAX + 1];
	snprintf(name, sizeof(name), "%d", (int)pid);
	rc = ada_fs_open_file(fd, name, O_RDONLY, &efd);
	close(fd);
	if (rc < 0)
		return -ENOENT;
	ssize_t n = read(efd, buf, REG_ENTRY_MAX);
	close(efd);
	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	return registry_parse(buf, pid, dir, cap);
}

int ctl_registry_by_arena(const char *base, uid_t uid, const struct ctl_arena_key *keys, int n,
                          char *dir, size_t cap)
{
	int fd;
	if (n <= 0 || ctl_registry_open(base, uid, false, &fd) < 0)
		return -ENOENT;
	DIR *d = ada_fs_opendir(fd, ".");
	close(fd);
	if (!d)
		return -ENOENT;
	struct dirent *de;
	int rc = -ENOENT;
	for (unsigned i = 0; rc && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX || !ctl_proc_maps_any((pid_t)pid, keys, n))
			continue;
		rc = ctl_registry_lookup(base, uid, (pid_t)pid, dir, cap) == 0 ? 0 : -ENOENT;
	}
	closedir(d);
	return rc;
}

/* ---- the server's side: keep the entries in step with the live view ---- */

/* Registers the live processes not registered yet, removes the finished
 * ones. Called by the poll thread with a fresh c->live. */
void ctl_registry_sync(struct ada_control *c)
{
	if (c->reg_fd < 0 || !c->h.session_dir)
		return;
	/* The recorder's own pid: `ada status PID` with the pid of `ada
	 * record` or `ada attach`, whatever the program did to its
	 * environment. */
	if (!c->reg_self)
		c->reg_self = ctl_registry_add(c->reg_fd, getpid(), c->h.session_dir) == 0;
	for (uint32_t i = 0; i < c->live->nprocs; i++) {
		const struct ada_live_proc *p = &c->live->procs[i];
		size_t k = 0;
		while (k < c->nreg && c->reg[k] != p->pid)
			k++;
		if (!p->finished && k == c->nreg && c->nreg < ADA_LIVE_MAX_PROCS &&
		    ctl_registry_add(c->reg_fd, p->pid, c->h.session_dir) == 0)
			c->reg[c->nreg++] = p->pid;
		else if (p->finished && k < c->nreg) {
			ctl_registry_remove(c->reg_fd, p->pid);
			c->reg[k] = c->reg[--c->nreg];
		}
	}
}

void ctl_registry_clear(struct ada_control *c)
{
	for (size_t k = 0; k < c->nreg && c->reg_fd >= 0; k++)
		ctl_registry_remove(c->reg_fd, c->reg[k]);
	if (c->reg_self && c->reg_fd >= 0)
		ctl_registry_remove(c->reg_fd, getpid());
	c->nreg = 0;
	c->reg_self = false;
	if (c->reg_fd >= 0)
		close(c->reg_fd);
	c->reg_fd = -1;
}
