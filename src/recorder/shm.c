/*
 * The recording's shared memory, recorder side: the ceiling on the sum of
 * the arena sizes (the budget file, src/ring/shm_budget.c), the notice
 * when a process had to run untraced because of it, and the arena
 * directory left empty and removed at the end.
 *
 * Threads: wal_shm_setup and wal_shm_finish on the caller's thread (before
 * the drain starts, after it is joined); wal_shm_release and wal_shm_tick
 * on the drain thread.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs.h"
#include "ring.h"
#include "recorder_internal.h"

#define SHM_DEFAULT_SHARE 50u        /* percent of the free space of the arena fs */
#define SHM_DEFAULT_MIN (1ull << 30) /* 8 arenas of the default size */
/* Clearings of the arena directory at the end, each ended by an rmdir
 * that a name made meanwhile makes fail. */
#define SHM_CLEAR_ROUNDS 64

/* The default ceiling: half of what the arena directory's file system
 * (/dev/shm: memory) has free at the start, so a recording cannot take all
 * of it; at least 1 GiB, since arena files are sparse (a process touches
 * the pages of the slots its threads use: a small /dev/shm, as containers
 * have, still records; a slot whose pages cannot be had is a counted
 * no_slot drop, never a SIGBUS). 0 (none) when statvfs fails. */
static uint64_t shm_default_ceiling(const char *dir)
{
	struct statvfs vfs;
	if (statvfs(dir, &vfs) != 0)
		return 0;
	uint64_t c = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize / 100 * SHM_DEFAULT_SHARE;
	return c < SHM_DEFAULT_MIN ? SHM_DEFAULT_MIN : c;
}

int wal_shm_setup(struct ada_recorder *r)
{
	if (r->o.max_shm_default)
		r->o.max_shm_bytes = shm_default_ceiling(r->arena_dir);
	int fd = open(r->arena_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r->shm.dir_fd = fd; /* kept for wal_shm_finish() */
	int rc = ada_shm_budget_create(fd, r->o.max_shm_bytes, &r->shm.budget);
	if (rc == 0 && r->o.max_shm_default)
		ada_shm_budget_set_from_fs(r->shm.budget);
	r->bell.page = rc == 0 ? r->shm.budget : NULL; /* the drain's doorbell */
	return rc;
}

/* A refused arena's reservation given back, and its mapping closed. */
static void shm_give_back(struct ada_recorder *r, struct ada_arena *a)
{
	ada_shm_budget_release(r->shm.budget, ada_arena_budget_size_for(ada_arena_config_of(a)) +
	                                          ada_arena_spill_bytes_taken(a));
	ada_arena_close(a);
}

/* p's arena is about to be removed: its size is free again. */
void wal_shm_release(struct ada_recorder *r, struct wal_proc *p)
{
	if (r->shm.budget && p->arena)
		ada_shm_budget_release(r->shm.budget,
		                       ada_arena_budget_size_for(ada_arena_config_of(p->arena)) +
		                           ada_arena_spill_bytes_taken(p->arena));
}

/* Whether pool slot k is free: never filled, or its name is gone (a
 * process took the file, and counts it in its own reservation now: the
 * pool's given back). */
static bool shm_pool_free(struct ada_recorder *r, unsigned k)
{
	char name[32];
	if (!r->shm.pool_held[k])
		return true;
	snprintf(name, sizeof(name), ADA_ARENA_POOL_PREFIX "%u", k);
	if (faccessat(r->shm.dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return false;
	ada_shm_budget_shrink(r->shm.budget, r->shm.pool_held[k]);
	r->shm.pool_held[k] = 0;
	return true;
}

static void shm_pool_tick(struct ada_recorder *r)
{
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		(void)shm_pool_free(r, k);
}

/* The lowest free slot, where makers look first (ring_pool_take): a
 * finished process asks about the names of the files still waiting below
 * it only, not about every slot. */
int wal_shm_pool_slot(struct ada_recorder *r)
{
	if (!r->shm.budget || r->shm.dir_fd < 0)
		return -1;
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		if (shm_pool_free(r, k))
			return (int)k;
	return -1;
}

bool wal_shm_pool_put(struct ada_recorder *r, const struct ada_arena *a, const char *path, int k)
{
	if (k < 0 || (unsigned)k >= ADA_ARENA_POOL_SLOTS || r->shm.pool_held[k] || !r->shm.budget)
		return false;
	uint64_t keep = ada_arena_pool_bytes(a);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(r->shm.budget, &v);
	if (!ada_arena_pool_admits((unsigned)k, &v, keep,
	                           ada_arena_budget_size_for(ada_arena_config_of(a))))
		return false;
	/* Its kept pages count against the ceiling while it waits. */
	if (ada_shm_budget_grow(r->shm.budget, keep) != 0)
		return false;
	if (ada_arena_pool_put(path, r->arena_dir, (unsigned)k) != 0) {
		ada_shm_budget_shrink(r->shm.budget, keep);
		return false;
	}
	r->shm.pool_held[k] = keep;
	r->shm.pooled++;
	return true;
}

/* Files the pool is kept at once the program forks and until the first
 * finished process is pooled, those in use by its children still running
 * counted with those waiting: its first children start before any has
 * finished, and each that finds the pool empty makes its file anew
 * (tmpfs allocates and clears its pages on the child's path). Made only
 * up to this many in all, the files that come back as the drain finishes
 * their users fit in the pool (ADA_ARENA_POOL_SLOTS) and are not freed
 * again; after that the finished processes refill it (files made then
 * would be freed again once the drain caught up with a burst). */
#define SHM_POOL_FILL 6u

/* How many of the pool's places hold a file now. */
static unsigned shm_pool_waiting(struct ada_recorder *r)
{
	unsigned n = 0;
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		n += !shm_pool_free(r, k);
	return n;
}

/* Arenas in use that come back to the pool when their process is done:
 * the unfinished processes' but the program's first (which ends last). */
static size_t shm_pool_in_use(const struct ada_recorder *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs && n < SHM_POOL_FILL; i++)
		n +=
		    !r->procs[i]->finished && r->procs[i]->arena && r->procs[i]->pid != r->main_pid;
	return n;
}

void wal_shm_pool_fill(struct ada_recorder *r, const struct ada_arena *a)
{
	/* As for a finished process's file (drain_pool_arena): only while
	 * the recording goes on, and not for a process given smaller rings
	 * (the ceiling is near: no file waits for nothing). */
	if (!r->shm.budget || r->shm.dir_fd < 0 || r->o.attached || r->main_reaped ||
	    r->shm.pooled || r->shm.pool_make_off || r->stop_at_ns || r->left_running || !a ||
	    (ada_arena_flags(a) & ADA_ARENA_F_DETAIL_REDUCED))
		return;
	const struct ada_arena_config *cfg = ada_arena_config_of(a);
	uint64_t keep = ada_arena_pool_make_bytes(cfg);
	size_t n = shm_pool_waiting(r) + shm_pool_in_use(r);
	for (unsigned k = 0; n < SHM_POOL_FILL && keep; k++) {
		if (k >= ADA_ARENA_POOL_SLOTS)
			return;
		if (r->shm.pool_held[k])
			continue; /* waiting (shm_pool_waiting freed the taken) */
		struct ada_shm_budget_view v;
		ada_shm_budget_read(r->shm.budget, &v);
		/* A new file is more /dev/shm, not a finished one's kept: the
		 * ceiling rule at every place, the first two included. */
		unsigned place = k > ADA_ARENA_POOL_FREE_SLOTS ? k : ADA_ARENA_POOL_FREE_SLOTS;
		if (!ada_arena_pool_admits(place, &v, keep, ada_arena_budget_size_for(cfg)) ||
		    ada_shm_budget_grow(r->shm.budget, keep) != 0)
			return;
		int err = ada_arena_pool_make(r->arena_dir, k, cfg);
		if (err) {
			ada_shm_budget_shrink(r->shm.budget, keep);
			r->shm.pool_make_failed++;
			/* Off tmpfs none is ever made: not tried again. */
			r->shm.pool_make_off |= err == -EOPNOTSUPP;
			if (err != -EEXIST) /* no room, no tmpfs: no more now */
				return;
			continue; /* a name we did not fill: the next place */
		}
		r->shm.pool_held[k] = keep;
		r->shm.pool_made++;
		n++;
	}
}

void wal_shm_pool_admitted(struct ada_recorder *r, const struct ada_arena *a)
{
	bool first = r->shm.admitted++ == 0;
	if (!a)
		return;
	if (ada_arena_flags(a) & ADA_ARENA_F_RECYCLED)
		r->shm.pool_hits++;
	else if (!first)
		r->shm.pool_misses++;
	if (!first)
		wal_shm_pool_fill(r, a);
}

/* At the end: the pool's files removed (never counted as left over) and
 * their reservations given back. A pool name we did not fill is not
 * ours: the directory's clearing removes and counts it. */
static void shm_pool_empty(struct ada_recorder *r)
{
	char name[32];
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++) {
		if (!r->shm.pool_held[k])
			continue;
		snprintf(name, sizeof(name), ADA_ARENA_POOL_PREFIX "%u", k);
		if (r->shm.dir_fd >= 0)
			unlinkat(r->shm.dir_fd, name, 0);
		if (r->shm.budget)
			ada_shm_budget_shrink(r->shm.budget, r->shm.pool_held[k]);
		r->shm.pool_held[k] = 0;
	}
}

void wal_shm_read(const struct ada_recorder *r, struct ada_shm_budget_view *v)
{
	if (r->shm.budget)
		ada_shm_budget_read(r->shm.budget, v);
	else
		*v = r->shm.last;
}

void wal_shm_hold(struct ada_recorder *r, const char *path)
{
	struct ada_arena *a = NULL;
	if (!r->shm.budget || ada_arena_open(path, &a) < 0)
		return;
	if (r->shm.nheld == WAL_SHM_HELD_MAX) { /* give it back now rather than keep it for good */
		shm_give_back(r, a);
		return;
	}
	r->shm.held[r->shm.nheld++] = a;
}

/* The maker of a held arena has ended: its pid is gone, or held by a
 * later process (another start time). */
static bool shm_maker_gone(const struct ada_arena *a)
{
	uint32_t made = ada_arena_start_time(a);
	uint64_t now = ada_proc_start_ticks((pid_t)ada_arena_pid(a));
	return !now || (made && (uint32_t)now != made);
}

void wal_shm_held_tick(struct ada_recorder *r)
{
	if (!r->shm.budget)
		return;
	shm_pool_tick(r);
	for (uint32_t i = 0; i < r->shm.nheld;) {
		if (!shm_maker_gone(r->shm.held[i])) {
			i++;
			continue;
		}
		shm_give_back(r, r->shm.held[i]);
		r->shm.held[i] = r->shm.held[--r->shm.nheld];
	}
}

/* The first process refused by the ceiling is told at once (o.notice),
 * and the first given smaller detail rings; the manifests' `shm` has the
 * counts and the sentences (manifest.c). */
void wal_shm_tick(struct ada_recorder *r)
{
	struct ada_shm_budget_view v;
	wal_shm_held_tick(r);
	wal_shm_read(r, &v);
	if (v.reduced_procs && !r->shm.told_reduced) {
		r->shm.told_reduced = true;
		json_array_append_new(
		    r->warnings,
		    json_string(
		        "shared-memory ceiling reached: processes got smaller detail rings"));
		wal_notice(r,
		           "the recording reached its shared-memory ceiling of %.1f MiB: new "
		           "processes get smaller detail rings (down to %llu KiB a thread) until "
		           "others end (--max-shm-mb N to change it, 0 for no limit)",
		           (double)v.ceiling / 1048576.0,
		           (unsigned long long)(v.reduced_detail_min >> 10));
	}
	if (v.failed_procs && !r->shm.told_failed) {
		char why[512];
		r->shm.told_failed = true;
		ada_shm_budget_failed_why(&v, why, sizeof(why));
		json_array_append_new(r->warnings,
		                      json_string("processes could not make their arena: they ran "
		                                  "untraced (shm.arena_failed_why says why)"));
		wal_notice(r, "%s", why);
	}
	if (!v.refused_procs || r->shm.told)
		return;
	r->shm.told = true;
	json_array_append_new(r->warnings,
	                      json_string("shared-memory ceiling reached: processes ran untraced"));
	wal_notice(r,
	           "the recording reached its shared-memory ceiling of %.1f MiB: new "
	           "processes run untraced until others end (--max-shm-mb N to change it, 0 for "
	           "no limit)",
	           (double)v.ceiling / 1048576.0);
}

void wal_shm_end(struct ada_recorder *r)
{
	if (r->shm.budget)
		ada_shm_budget_end(r->shm.budget);
}

/* Test hook (bounded_outlive): ADA_TEST_SHM_PAUSE=FILE makes the end,
 * once it removed the arena directory's names but before the budget file
 * and the directory, create FILE and wait until FILE is gone (60 s at
 * most): a process of the program that outlives the recording starts
 * there, in a window too short to hit from outside. */
static void shm_test_pause(void)
{
	wal_test_hold(getenv("ADA_TEST_SHM_PAUSE"));
}

/* Removes every name in the arena directory but the budget file (the
 * recording's end is told there until the last moment), counting those
 * no process of the recording's made for itself. */
static void shm_clear(struct ada_recorder *r, DIR *d)
{
	struct dirent *de;
	rewinddir(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ADA_SHM_BUDGET_NAME))
			continue;
		bool counted = strcmp(de->d_name, ADA_ORPHAN_OWNER_NAME) != 0;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0 && counted)
			r->shm.leftover++;
	}
}

/* The arena directory cannot be listed (no memory for the listing): the
 * two files of its own are removed by name, then the directory; one that
 * is not empty is a leftover. */
static void shm_finish_unread(struct ada_recorder *r)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", r->arena_dir, ADA_SHM_BUDGET_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", r->arena_dir, ADA_ORPHAN_OWNER_NAME);
	unlink(path);
	if (rmdir(r->arena_dir) != 0 && errno != ENOENT)
		r->shm.leftover++;
}

/* After the drain: every process is gone and its arena removed, so
 * whatever is left in the arena directory was never read (an arena the
 * drain refused, a half-made one): removed, and counted. The budget file
 * says that the recording ended (wal_shm_end(), again here when the
 * drain never ran): a process of the program that outlives it makes no
 * arena, and one that made its name just before removes it again
 * (src/ring/env.c); a name that lands between the last look and the
 * rmdir makes the rmdir fail, and the directory is cleared again
 * (SHM_CLEAR_ROUNDS at most). */
void wal_shm_finish(struct ada_recorder *r)
{
	wal_shm_tick(r);
	shm_pool_empty(r);
	for (uint32_t i = 0; i < r->shm.nheld; i++) /* their makers outlive the recording */
		ada_arena_close(r->shm.held[i]);
	r->shm.nheld = 0;
	if (r->shm.budget) {
		ada_shm_budget_end(r->shm.budget);
		ada_shm_budget_read(r->shm.budget, &r->shm.last);
		/* The bell's page stays mapped until ada_recorder_free(): a
		 * signal handler may still ring it (ada_recorder_wake). */
		if (r->shm.budget != r->bell.page)
			ada_shm_budget_close(r->shm.budget);
		r->shm.budget = NULL;
	}
	/* The descriptor opened at the start: at its limit of open files the
	 * recorder could open the directory no more, and an arena it never
	 * read (the program's, refused for want of a descriptor) would keep
	 * the directory from being removed. */
	int fd = r->shm.dir_fd;
	r->shm.dir_fd = -1;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		shm_finish_unread(r);
		return;
	}
	bool gone = false;
	for (int round = 0; round < SHM_CLEAR_ROUNDS && !gone; round++) {
		shm_clear(r, d);
		if (round == 0)
			shm_test_pause();
		unlinkat(fd, ADA_SHM_BUDGET_NAME, 0);
		gone = rmdir(r->arena_dir) == 0 || errno != ENOTEMPTY;
	}
	closedir(d);
	if (access(r->arena_dir, F_OK) == 0)
		r->shm.leftover++;
}

void wal_shm_remove_dir(const char *dir)
{
	if (rmdir(dir) == 0 || errno != ENOTEMPTY)
		return;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	bool other = false;
	struct dirent *de;
	while ((de = readdir(d)))
		other |= strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		         strcmp(de->d_name, ADA_SHM_BUDGET_NAME) &&
		         strcmp(de->d_name, ADA_ORPHAN_OWNER_NAME) &&
		         !(ada_arena_pool_is_name(de->d_name) &&
		           ada_fs_entry_kind(fd, de) == ADA_FS_REG);
	if (!other) {
		unlinkat(fd, ADA_SHM_BUDGET_NAME, 0);
		unlinkat(fd, ADA_ORPHAN_OWNER_NAME, 0);
		/* A killed recorder's pool (no events): the last arena is read. */
		for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++) {
			char name[16];
			snprintf(name, sizeof(name), ADA_ARENA_POOL_PREFIX "%u", k);
			unlinkat(fd, name, 0);
		}
	}
	closedir(d);
	if (!other)
		rmdir(dir);
}
