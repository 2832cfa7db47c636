/*
 * The drain's processes: finding a new arena (inotify on the arena
 * directory, a rescan after each reap), admitting it (the recording's
 * user, a regular file, a process of ours, not a reused pid) and making
 * its wal_proc and pid_N directory.
 *
 * Threads: the drain thread only (drain.c), which owns every wal_proc.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arena_internal.h"
#include "drain_internal.h"
#include "fs.h"
#include "ring.h"

struct wal_proc *drain_find(struct ada_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid)
			return r->procs[i];
	return NULL;
}

/* pid_N could not be made ours (a planted link, another user's directory,
 * a full disk): the process's events are counted lost; told (o.notice) and
 * in the manifests' warnings, and the exit status is non-zero. */
static void drain_no_pid_dir(struct ada_recorder *r, struct wal_proc *p, int rc)
{
	char msg[PATH_MAX + 160];
	snprintf(msg, sizeof(msg), "%s: %s; the events of process %d are not written", p->dir,
	         rc == -ELOOP   ? "a symbolic link, not a directory of ada's"
	         : rc == -EPERM ? "a directory of another user"
	                        : strerror(-rc),
	         (int)p->pid);
	wal_notice(r, "%s", msg);
	json_array_append_new(r->warnings, json_string(msg));
	if (!r->error)
		r->error = rc;
}

/* Who made the arena file: the recorder's own user, a regular file, and
 * a process the recorder may wait for (wal_pid_check()). The descriptor
 * stays open to check the file's size later. Returns the descriptor, or
 * -1 (reported when it is a stranger's). */
static int drain_arena_admit(struct ada_recorder *r, const char *path, pid_t pid, int *alive,
                             ino_t *ino)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	char why[256];
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		wal_note(r, NULL,
		         "ignored arena %s: it is not a regular file owned by the recording's user",
		         path);
		close(fd);
		return -1;
	}
	*ino = st.st_ino;
	*alive = wal_pid_check(r, pid, why, sizeof(why));
	if (*alive < 0) {
		wal_note(r, NULL, "%s", why);
		close(fd);
		return -1;
	}
	return fd;
}

void drain_free_proc(struct wal_proc *p)
{
	if (p->arena_fd >= 0)
		close(p->arena_fd);
	ada_arena_close(p->arena);
	json_decref(p->quarantine);
	json_decref(p->warnings);
	free(p->slot_noted);
	free(p->by_slot);
	free(p->arena_path);
	free(p->dir);
	free(p);
}

/* The pidfd was opened after the arena's maker ended and the kernel gave
 * its pid to a later process (the maker's start time, kept in the arena,
 * is not that process's): the maker is gone. Read after the pidfd, so the
 * start time is of the pidfd's process or of a still later one (gone
 * then, too). Unknown either side (0): the pid must do. */
static bool drain_creator_gone(const struct wal_proc *p)
{
	uint32_t made = ada_arena_start_time(p->arena);
	uint64_t now = made ? ada_proc_start_ticks(p->pid) : 0;
	return now && (uint32_t)now != made;
}

/* Opens and checks the arena; 0, or -1 when it is not one we record. */
static int drain_proc_arena(struct ada_recorder *r, struct wal_proc *p)
{
	int alive = 0;
	p->arena_fd = drain_arena_admit(r, p->arena_path, p->pid, &alive, &p->arena_ino);
	if (p->arena_fd < 0 || ada_arena_open_fd(p->arena_fd, &p->arena) < 0)
		return -1;
	if (ada_arena_pid(p->arena) != p->pid) {
		wal_note(r, NULL, "ignored arena %s: it says it belongs to process %d",
		         p->arena_path, (int)ada_arena_pid(p->arena));
		return -1;
	}
	/* Not our child (yet): a pidfd tells when it is gone, without the
	 * pid-reuse race of kill(pid, 0). Gone already: never wait for it. */
	p->our_child = !r->o.attached && p->pid == r->main_pid;
	p->pidfd = p->our_child ? -1 : (int)syscall(SYS_pidfd_open, p->pid, 0);
	p->vanished = alive == 0 || (!p->our_child && p->pidfd < 0);
	if (!p->vanished && !p->our_child && drain_creator_gone(p)) {
		close(p->pidfd); /* another process's: it would wait for that one */
		p->pidfd = -1;
		p->vanished = p->pid_taken = true;
	}
	return 0;
}

/* Arenas we refused, so each file is reported once: the same pid with
 * another inode is a later process's arena, looked at anew. */
static bool drain_ignored(const struct ada_recorder *r, pid_t pid, ino_t ino)
{
	for (size_t i = 0; i < r->nignored; i++)
		if (r->ignored[i].pid == pid && r->ignored[i].ino == ino)
			return true;
	return false;
}

static void drain_ignore(struct ada_recorder *r, pid_t pid, ino_t ino)
{
	void *a = drain_grow(r->ignored, &r->capignored, r->nignored + 1, sizeof(*r->ignored));
	if (a) {
		r->ignored = a;
		r->ignored[r->nignored].pid = pid;
		r->ignored[r->nignored++].ino = ino;
	}
}

/* <pid>.ring of a pid whose process this recording has finished (and
 * whose arena it removed): the kernel gave the pid to a later process.
 * Its directory pid_N/ holds the earlier process's files, so the later
 * one is not recorded: told once per file, and counted (summary line,
 * manifests' shm.pid_reused_arenas, ada status). */
static void drain_pid_reused(struct ada_recorder *r, pid_t pid, ino_t ino)
{
	drain_ignore(r, pid, ino);
	r->pid_reused++;
	wal_note(r, NULL,
	         "ignored the arena of process %d: that pid was reused by a later process after "
	         "the recorded process %d ended; the later process's events are not written "
	         "(a larger kernel.pid_max makes the reuse rarer)",
	         (int)pid, (int)pid);
}

/* <pid>.<start ticks>.ring: a later process given the pid of a process
 * whose <pid>.ring was still there (the recorder had not finished it)
 * made it instead of touching that one (src/ring/env.c). pid_N/ is the
 * earlier process's, so the later one is not recorded: told once per
 * file, and counted with drain_pid_reused()'s. */
static void drain_reused_while_read(struct ada_recorder *r, pid_t pid, ino_t ino)
{
	drain_ignore(r, pid, ino);
	r->pid_reused++;
	wal_note(r, NULL,
	         "ignored the arena of process %d: that pid was reused by a later process while "
	         "the recorder was still reading the earlier process %d; the later process's "
	         "events are not written (a larger kernel.pid_max makes the reuse rarer)",
	         (int)pid, (int)pid);
}

/* The pid of an arena file name: <pid>.ring (*taken false) or
 * <pid>.<digits>.ring (*taken true); 0 for any other name (a .tmp. file
 * being made, a stranger's). */
static pid_t drain_arena_name(const char *name, bool *taken)
{
	char *end;
	if (*name < '1' || *name > '9')
		return 0;
	long pid = strtol(name, &end, 10);
	if (pid <= 0 || pid > INT32_MAX)
		return 0;
	*taken = false;
	if (!strcmp(end, ".ring"))
		return (pid_t)pid;
	if (end[0] != '.' || end[1] < '0' || end[1] > '9')
		return 0;
	const char *q = end + 1;
	while (*q >= '0' && *q <= '9')
		q++;
	*taken = true;
	return strcmp(q, ".ring") ? 0 : (pid_t)pid;
}

/* A wal_proc for the arena file name of pid (inode ino), its arena
 * opened and checked and its per-slot tables made; room for it in
 * r->procs. NULL when it is not one we record (ignored from now on) or
 * out of memory. */
static struct wal_proc *drain_proc_new(struct ada_recorder *r, const char *name, long pid,
                                       ino_t ino)
{
	struct wal_proc *p = calloc(1, sizeof(*p));
	void *arr = drain_grow(r->procs, &r->capprocs, r->nprocs + 1, sizeof(*r->procs));
	if (!p || !arr) {
		free(p);
		return NULL;
	}
	r->procs = arr;
	p->pid = (pid_t)pid;
	p->pidfd = -1;
	p->dir_fd = -1;
	p->arena_fd = -1;
	p->opened_ns = wal_now_ns();
	if (asprintf(&p->arena_path, "%s/%s", r->arena_dir, name) < 0 ||
	    asprintf(&p->dir, "%s/pid_%ld", r->session_dir, pid) < 0 ||
	    drain_proc_arena(r, p) < 0) {
		drain_ignore(r, p->pid, ino);
		drain_free_proc(p);
		return NULL;
	}
	p->max_threads = ada_arena_max_threads(p->arena);
	p->ring_events = ada_arena_config_of(p->arena)->index_events;
	p->by_slot = calloc(p->max_threads, sizeof(*p->by_slot));
	p->slot_noted = calloc(p->max_threads, 1);
	p->quarantine = json_array();
	p->warnings = json_array();
	if (!p->by_slot || !p->slot_noted || !p->quarantine || !p->warnings) {
		drain_free_proc(p);
		return NULL;
	}
	return p;
}

void drain_open_arena(struct ada_recorder *r, const char *name)
{
	bool taken = false;
	long pid = drain_arena_name(name, &taken);
	if (!pid)
		return;
	struct wal_proc *old = drain_find(r, (pid_t)pid);
	if (old && !old->finished && !taken)
		return; /* the file we are reading */
	if (r->o.follow == false && r->main_pid && pid != r->main_pid)
		return;
	/* Which file: its inode, never following a link planted under the
	 * name. Gone already (0): nothing to read or to tell. */
	char path[PATH_MAX];
	struct stat st;
	ino_t ino = 0;
	if (snprintf(path, sizeof(path), "%s/%s", r->arena_dir, name) < (int)sizeof(path) &&
	    fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ino = st.st_ino;
	if (drain_ignored(r, (pid_t)pid, ino))
		return;
	if (taken) {
		if (ino)
			drain_reused_while_read(r, (pid_t)pid, ino);
		return;
	}
	if (old) {
		/* The finished process's own file (its unlink failed) is not news. */
		if (ino && ino != old->arena_ino)
			drain_pid_reused(r, (pid_t)pid, ino);
		return;
	}
	struct wal_proc *p = drain_proc_new(r, name, pid, ino);
	if (!p)
		return;
	/* The agent may have made it first (agent.json): ours either way. */
	int rc = ada_fs_mkdir(r->session_fd, strrchr(p->dir, '/') + 1, 0, &p->dir_fd);
	if (rc < 0)
		drain_no_pid_dir(r, p, rc);
	for (size_t i = 0; i < r->nearly; i++)
		if (r->early_pid[i] == p->pid) {
			p->reaped = p->our_child = true;
			p->wstatus = r->early_status[i];
		}
	r->procs[r->nprocs++] = p;
	wal_flight_proc_start(r, p);
	wal_manifest_write(r, p, "recording");
}

void drain_scan_dir(struct ada_recorder *r)
{
	DIR *d = opendir(r->arena_dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		drain_open_arena(r, de->d_name);
	closedir(d);
}

void drain_inotify(struct ada_recorder *r)
{
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		ssize_t n = read(r->inotify_fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *q = buf; q < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)q;
			if (ev->len)
				drain_open_arena(r, ev->name);
			if (ev->mask & IN_Q_OVERFLOW)
				drain_scan_dir(r);
			q += sizeof(*ev) + ev->len;
		}
	}
}
