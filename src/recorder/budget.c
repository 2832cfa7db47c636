/*
 * The session's disk budget: its default, and the bytes the drain does not
 * write itself (the modules/ symbol files, agent.json, manifests, detail files,
 * directories, the manifest reserve), so that everything the session
 * writes counts against --max-disk-mb (docs/format.md, "Bounded disk").
 *
 * Threads: the drain thread (between ada_recorder_start and the join), the
 * caller's thread before and after it.
 *
 * The index files are counted by the drain from its own bookkeeping (their
 * allocation while open, their size in whole blocks once final); every
 * other file is counted by its allocated blocks, read by a walk of the
 * process directory: 10 ms after the start, then at doubling intervals up
 * to once a second while the process runs (drain.c drain_budget_scan_due),
 * once more when it is finished (then its files no longer change). The walk never follows
 * a link and goes two levels deep at most (pid_N/, pid_N/modules|thread_K/).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "recorder_internal.h"

#define BUDGET_DEFAULT_CAP (4ull << 30) /* 4 GiB */
#define BUDGET_DEFAULT_MIN (1ull << 20) /* 1 MiB: a few segments */
#define BUDGET_DEFAULT_SHARE 10u        /* percent of the free space */
#define BUDGET_BLOCK 4096ull

uint64_t wal_budget_default(const char *dir)
{
	struct statvfs vfs;
	if (statvfs(dir, &vfs) != 0)
		return BUDGET_DEFAULT_CAP;
	uint64_t free_bytes = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
	uint64_t b = free_bytes / 100 * BUDGET_DEFAULT_SHARE;
	if (b > BUDGET_DEFAULT_CAP)
		b = BUDGET_DEFAULT_CAP;
	if (b < BUDGET_DEFAULT_MIN)
		b = BUDGET_DEFAULT_MIN;
	return b;
}

uint64_t wal_round_block(uint64_t bytes)
{
	return (bytes + BUDGET_BLOCK - 1) / BUDGET_BLOCK * BUDGET_BLOCK;
}

/* index.atf and index.g<G>.atf: the drain counts those itself. */
static bool budget_is_index(const char *name)
{
	size_t n = strlen(name);
	return !strncmp(name, "index.", 6) && n > 4 && !strcmp(name + n - 4, ".atf");
}

/* Allocated bytes of everything under dirfd except index files, depth
 * levels of subdirectories deep. Takes ownership of dirfd. */
static uint64_t budget_walk(int dirfd, int depth)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return 0;
	}
	uint64_t total = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (budget_is_index(de->d_name))
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		/* A forked child's modules/ links its parent's .syms files
		 * (docs/internals.md): each link counts its share, so the
		 * session counts such a file about once, not once per child. */
		uint64_t links = S_ISREG(st.st_mode) && st.st_nlink > 1 ? st.st_nlink : 1;
		total += (uint64_t)st.st_blocks * 512u / links;
		if (S_ISDIR(st.st_mode) && depth > 0) {
			int sub = openat(dirfd, de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				total += budget_walk(sub, depth - 1);
		}
	}
	closedir(d);
	return total;
}

/* The directory at path itself and what is under it. */
static uint64_t budget_dir_bytes(const char *path, int depth)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return 0;
	uint64_t self = fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
	return self + budget_walk(fd, depth);
}

/* The session directory's own files (not the pid_N trees). */
static uint64_t budget_top_bytes(const char *session_dir)
{
	int fd = open(session_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	uint64_t total = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (!strncmp(de->d_name, "pid_", 4) || !strcmp(de->d_name, "..") ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		total += (uint64_t)st.st_blocks * 512u;
	}
	closedir(d);
	return total;
}

void wal_budget_scan_proc(struct wal_proc *p)
{
	if (p->side_final)
		return;
	p->side_bytes = budget_dir_bytes(p->dir, 2);
	p->side_final = p->finished;
}

void wal_budget_scan(struct ada_recorder *r)
{
	uint64_t total = budget_top_bytes(r->session_dir);
	for (size_t i = 0; i < r->nprocs; i++) {
		wal_budget_scan_proc(r->procs[i]);
		total += r->procs[i]->side_bytes;
	}
	r->budget.side_bytes = total;
}

/* Called for every index generation the budget deletes (or could not
 * keep): the counts go in the summary and the manifests, and the first
 * one is told at once (o.notice: stderr) -- deleting recorded data is never silent. */
void wal_budget_retired(struct ada_recorder *r, uint64_t events, uint64_t bytes)
{
	r->budget.retired_gens++;
	r->budget.retired_events += events;
	r->budget.retired_bytes += bytes;
	if (r->budget.retire_told)
		return;
	r->budget.retire_told = true;
	wal_notice(r,
	           "the session reached its disk budget of %.1f MiB%s: the oldest recorded "
	           "data is being deleted to make room (--max-disk-mb N to change it, 0 for no "
	           "limit)",
	           (double)r->o.max_disk_bytes / 1048576.0,
	           r->budget.is_default ? " (the default)" : "");
}

/* Nothing left to delete and still over: the files being written (and
 * the ones never deleted, symbol files, manifests) are more than the
 * budget. Told once, through o.notice (stderr) and in the manifests. */
void wal_budget_overrun(struct ada_recorder *r)
{
	if (r->budget.warned)
		return;
	r->budget.warned = true;
	json_array_append_new(r->warnings,
	                      json_string("disk budget exceeded by the files being written"));
	wal_notice(r,
	           "the session is over its disk budget of %.1f MiB with nothing old left to "
	           "delete (the files being written, symbol files and manifests are kept); raise "
	           "--max-disk-mb or record fewer threads",
	           (double)r->o.max_disk_bytes / 1048576.0);
}
