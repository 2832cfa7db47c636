/*
 * The session's disk budget: its default, and the bytes the drain does not
 * write itself (the module symbol files, agent.json, manifests, detail files,
 * directories, the manifest reserve), so that everything the session
 * writes counts against --max-disk-mb (docs/format.md, "Bounded disk").
 *
 * Threads: the drain thread (between ada_recorder_start and the join), the
 * caller's thread before and after it.
 *
 * The index and detail files are counted by the drain from its own
 * bookkeeping as it writes them (an open index file's allocation, an open
 * detail file's bytes, whole blocks once final), so that retention runs
 * before the session is over, not at the next walk; every
 * other file is counted by its allocated blocks, read by a walk of the
 * process directory: 10 ms after the start, then at doubling intervals up
 * to once a second while the process runs (drain.c drain_budget_scan_due),
 * once more when it is finished (then its files no longer change). The walk never follows
 * a link and goes two levels deep at most (pid_N/, pid_N/thread_K/);
 * a thread's thread_K/ (sealed from its first index file: drain.c
 * drain_thread_file) holds only the drain's own files, so the walk counts
 * its directory's blocks and does not open it; those blocks are read once,
 * and again only after the drain made an entry in it (sealed_blocks).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs.h"
#include "detail_internal.h"
#include "spares.h"

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

/* index.atf, index.g<G>.atf, detail.atf and detail.g<G>.atf: the drain
 * counts those itself. */
static bool budget_is_counted(const char *name)
{
	size_t n = strlen(name);
	return (!strncmp(name, "index.", 6) || !strncmp(name, "detail.", 7)) && n > 4 &&
	       !strcmp(name + n - 4, ".atf");
}

void wal_budget_dir_sealed(struct wal_proc *p, uint32_t seq, bool sealed)
{
	uint32_t w = seq / 64;
	if (seq >= WAL_SEALED_MAX || (!sealed && w >= p->sealed_words))
		return;
	if (w >= p->sealed_words) {
		uint32_t n = p->sealed_words ? p->sealed_words : 16;
		while (n <= w)
			n *= 2;
		uint64_t *a = realloc(p->sealed, n * sizeof(*a));
		if (!a)
			return; /* not sealed: walked as before */
		memset(a + p->sealed_words, 0, (n - p->sealed_words) * sizeof(*a));
		p->sealed = a;
		/* Kept since the first growth, or (an earlier one failed) made
		 * afresh now: only what it kept is known, the rest is zeroed. */
		size_t kept = p->sealed_blocks ? (size_t)p->sealed_words * 64 : 0;
		uint32_t *b = realloc(p->sealed_blocks, (size_t)n * 64 * sizeof(*b));
		if (b)
			memset(b + kept, 0, ((size_t)n * 64 - kept) * sizeof(*b));
		else
			free(p->sealed_blocks); /* none kept: every scan reads them */
		p->sealed_blocks = b;
		p->sealed_words = n;
	}
	if (p->sealed_blocks)
		p->sealed_blocks[seq] = 0; /* an entry made in it, or unsealed */
	if (sealed)
		p->sealed[w] |= 1ull << (seq % 64);
	else
		p->sealed[w] &= ~(1ull << (seq % 64));
}

/* K when name is thread_K/ (K as the drain spells it: no sign, no
 * leading zero) of a thread whose directory is sealed, else -1. */
static int64_t budget_sealed_seq(const struct wal_proc *p, const char *name)
{
	if (!p || strncmp(name, "thread_", 7))
		return -1;
	const char *d = name + 7;
	uint64_t k = 0;
	size_t n = 0;
	for (; d[n] >= '0' && d[n] <= '9' && n < 8; n++)
		k = k * 10 + (uint64_t)(d[n] - '0');
	if (!n || d[n] || (n > 1 && d[0] == '0') || k >= WAL_SEALED_MAX ||
	    k / 64 >= p->sealed_words)
		return -1;
	return p->sealed[k / 64] >> (k % 64) & 1 ? (int64_t)k : -1;
}

/* Allocated bytes of everything under dirfd except index and detail files, depth
 * levels of subdirectories deep. Takes ownership of dirfd. The entries
 * come from ada_fs_dirents (a buffer on the stack): a DIR's 32 KiB from
 * the heap, for each of a finished process's three directories, was a
 * third of the walk (perf, the 300-subshell script). p (pid_N/'s process,
 * else NULL): its sealed thread_K/ count their own blocks only, with no
 * open and read of each (a server's thousand finished threads made the
 * scans 7-10 % of the drain's CPU). */
static uint64_t budget_walk(int dirfd, int depth, struct wal_proc *p)
{
	struct ada_fs_dirents d;
	uint64_t total = 0;
	ada_fs_dirents_init(&d, dirfd);
	for (const struct dirent64 *de; (de = ada_fs_dirents_next(&d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (budget_is_counted(de->d_name))
			continue;
		/* A sealed thread_K/ whose blocks are known: no stat (a
		 * deleted one is not listed, so counts nothing). */
		int64_t seq = budget_sealed_seq(p, de->d_name);
		uint32_t *known = seq >= 0 && p->sealed_blocks ? &p->sealed_blocks[seq] : NULL;
		if (known && *known) {
			total += (uint64_t)(*known - 1) * 512u;
			continue;
		}
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (known && S_ISDIR(st.st_mode))
			*known = st.st_blocks < UINT32_MAX - 1 ? (uint32_t)st.st_blocks + 1 : 0;
		/* A forked child's pid_N/ links its parent's module files,
		 * and a module's body is one file linked from every process
		 * of that image and the session's symbodies/ (docs/format.md):
		 * each link counts its share, so the session counts such a
		 * file about once, not once per process. */
		uint64_t links = S_ISREG(st.st_mode) && st.st_nlink > 1 ? st.st_nlink : 1;
		total += (uint64_t)st.st_blocks * 512u / links;
		if (S_ISDIR(st.st_mode) && depth > 0 && seq < 0) {
			int sub = openat(dirfd, de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				total += budget_walk(sub, depth - 1, NULL);
		}
	}
	close(dirfd);
	return total;
}

/* The directory itself (at, or path when at is -1) and what is under it;
 * 0 once it is removed (a retired process's, still open). */
static uint64_t budget_dir_bytes(int at, const char *path, int depth, struct wal_proc *p)
{
	int fd = at >= 0 ? openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
	                 : open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
		close(fd);
		return 0;
	}
	return (uint64_t)st.st_blocks * 512u + budget_walk(fd, depth, p);
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
		/* symbodies/: each body its store link's share; the spare
		 * thread directories (spares.c), s<N>/ and new/s<N>/. */
		int depth = !strcmp(de->d_name, "symbodies")      ? 0
		            : !strcmp(de->d_name, WAL_SPARES_DIR) ? 1
		                                                  : -1;
		int sub =
		    S_ISDIR(st.st_mode) && depth >= 0
		        ? openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		        : -1;
		if (sub >= 0)
			total += budget_walk(sub, depth, NULL);
	}
	closedir(d);
	return total;
}

static bool budget_unlink_syms(struct ada_recorder *r, struct wal_proc *p);
static void budget_sweep_bodies(const char *session_dir);

void wal_budget_scan_proc(struct wal_proc *p)
{
	if (p->side_final && !p->side_watch)
		return;
	/* Gone before the walk: whatever it wrote, the walk sees. */
	bool gone = p->side_watch && p->finished && kill(p->pid, 0) != 0 && errno == ESRCH;
	/* Symbols deleted, a module file since: the later process's, which
	 * is not recorded; no reader needs it. */
	if (p->side_watch && p->syms_retired)
		(void)budget_unlink_syms(NULL, p);
	p->side_bytes = budget_dir_bytes(p->dir_fd, p->dir, 2, p); /* pid_N, no path walk */
	if (gone)
		p->side_watch = false;
	p->side_final = p->finished && !p->side_watch;
}

void wal_budget_scan(struct ada_recorder *r)
{
	/* A retired process's module files went with its directory: the bodies
	 * only it linked go at the next scan. */
	budget_sweep_bodies(r->session_dir);
	uint64_t total = budget_top_bytes(r->session_dir);
	for (size_t i = 0; i < r->nprocs; i++) {
		wal_budget_scan_proc(r->procs[i]);
		total += r->procs[i]->side_bytes;
	}
	/* What the side files grew by since the last scan (new processes'
	 * symbol files, agent.json, manifests): the room kept free for the
	 * next interval (side_margin), the largest growth seen, slowly
	 * forgotten, a sixteenth of the budget at most. */
	uint64_t grew = total > r->budget.side_bytes ? total - r->budget.side_bytes : 0;
	uint64_t m = r->budget.side_margin - r->budget.side_margin / 8;
	m = grew > m ? grew : m;
	r->budget.side_margin = m < r->o.max_disk_bytes / 16 ? m : r->o.max_disk_bytes / 16;
	r->budget.side_bytes = total;
}

void wal_budget_detail_sync(struct ada_recorder *r, struct wal_thread *t)
{
	uint64_t now = wal_round_block(wal_detail_file_bytes(t));
	r->budget.detail_open = r->budget.detail_open - t->detail_counted + now;
	t->detail_counted = now;
}

uint64_t wal_budget_detail_closed(struct ada_recorder *r, struct wal_thread *t, uint64_t file_bytes)
{
	r->budget.detail_open -= t->detail_counted;
	t->detail_counted = 0;
	return wal_round_block(file_bytes);
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

/* ---- the files being written: ended early when they fill the budget ---- */

/* Whether a trigger window is open (its records still to persist). */
bool wal_window_open(const struct ada_recorder *r)
{
	if (r->o.detail_mode != ADA_DETAIL_TRIGGERED || !r->flight.trig)
		return false;
	bool open = false;
	size_t n = ada_trigger_window_count(r->flight.trig);
	for (size_t i = n; i-- > 0 && !open;)
		open = !ada_trigger_window_at(r->flight.trig, i)->closed;
	return open;
}

/* The room a thread's file ending with a window open takes at once: its
 * whole detail ring (flight.c wal_flight_thread_end) as the detail file
 * writes it, up to twice the ring's bytes (a return record is 72 bytes in
 * the ring, 124 in the file: a 24-byte header and the 100-byte payload),
 * a quarter of the budget at most. */
uint64_t wal_budget_end_room(const struct ada_recorder *r, const struct wal_proc *p)
{
	uint64_t room = 2 * ada_arena_config_of(p->arena)->detail_bytes + WAL_FILE_ENDS;
	uint64_t most = r->o.max_disk_bytes / 4;
	return room < most ? room : most;
}

/* What the budget keeps deletable ahead of need, besides a room asked:
 * what the threads may write before their next drain (a sixteenth of the
 * budget), and while a window is open the largest room a thread's end
 * takes at once (wal_budget_end_room), which comes with no drain between,
 * twice: a file ended early writes its windows' part before it is a
 * generation to delete, so its own end is paid from the free room and
 * the finished files, not from its bytes (drain.c
 * drain_budget_thread_end_room), and another thread's end may follow. */
uint64_t wal_budget_ahead(const struct ada_recorder *r)
{
	uint64_t ahead = 0;
	if (wal_window_open(r))
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct wal_proc *p = r->procs[i];
			uint64_t e = !p->finished && p->arena ? wal_budget_end_room(r, p) : 0;
			ahead = e > ahead ? e : ahead;
		}
	return 2 * ahead + r->o.max_disk_bytes / 16;
}

/* The bytes of t's current files as the budget counts them: its index
 * file's allocation and its detail file. */
uint64_t wal_budget_current_bytes(const struct wal_thread *t)
{
	return ada_wal_file_disk_bytes(t->f) + wal_detail_file_bytes(t);
}

/* The largest current file the budget may end early (rotate, then delete
 * as a generation), NULL when none is as large as min: one whose thread
 * is live and not already marked; *marked: the bytes of those marked. */
static struct wal_thread *budget_cut_candidate(struct ada_recorder *r, uint64_t min,
                                               uint64_t *marked)
{
	struct wal_thread *best = NULL;
	uint64_t most = 0;
	*marked = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		for (size_t j = 0; !p->finished && p->arena && j < p->nthreads; j++) {
			struct wal_thread *t = p->threads[j];
			if (!t->f || t->done)
				continue;
			uint64_t b = wal_budget_current_bytes(t);
			if (t->budget_cut)
				*marked += b;
			else if (b >= min && b > most) {
				best = t;
				most = b;
			}
		}
	}
	return best;
}

/* Marks the largest files being written to end early until they hold
 * want bytes (those marked before count); returns what the marked ones
 * hold. Files smaller than a sixteenth of the budget (the most a segment
 * takes) are not worth their end: the budget would end every new file
 * again (bounded_retire: 300 children of 60 KiB under 2 MiB). */
uint64_t wal_budget_cut(struct ada_recorder *r, uint64_t want)
{
	uint64_t min = r->o.max_disk_bytes / 16, marked = 0;
	for (;;) {
		struct wal_thread *t = budget_cut_candidate(r, min, &marked);
		if (marked >= want || !t)
			return marked;
		t->budget_cut = true;
	}
}

/* ---- retention: what the budget deletes, oldest first ---- */

/* A side file about to be deleted leaves the side bytes now, not at the
 * next scan: the loop that deletes until the session is within its
 * budget would otherwise go on deleting for bytes already gone (a
 * process's symbol files). One written since the last scan is taken off
 * too; the next scan sets it right. */
static void budget_side_forget(struct ada_recorder *r, struct wal_proc *p, int dfd,
                               const char *name)
{
	struct stat st;
	if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return;
	uint64_t b = (uint64_t)st.st_blocks * 512u;
	b = b < p->side_bytes ? b : p->side_bytes;
	b = b < r->budget.side_bytes ? b : r->budget.side_bytes;
	p->side_bytes -= b;
	r->budget.side_bytes -= b;
}

/* The end time of t's oldest file the budget may delete, false when it
 * has none: its oldest kept generation, else, once the thread is finished,
 * its final index.atf (a finished process's files are the session's
 * oldest data as much as a live thread's generations are). */
static bool budget_oldest_of(const struct wal_thread *t, uint64_t *t1)
{
	if (t->ngens) {
		*t1 = t->gens[0].t1;
		return true;
	}
	/* last.bytes 0: no file was final (one the limit of open files kept
	 * from opening after a rotation): nothing of its own to delete. */
	if (!t->done || t->f || !t->has_dir || t->final_retired || !t->last.bytes)
		return false;
	*t1 = t->last.time_end_ns;
	return true;
}

/* Deletes a finished thread's final files and thread_K/ itself: the
 * readers list a process's threads by their directories, and a thread with
 * no file left is the manifest's to tell (files [], retired_events). */
static void budget_retire_final(struct ada_recorder *r, struct wal_thread *t)
{
	int dfd = wal_thread_dir(t);
	if (dfd >= 0) {
		unlinkat(dfd, "index.atf", 0);
		unlinkat(dfd, "detail.atf", 0);
	}
	wal_thread_dir_close(t);
	char name[32];
	snprintf(name, sizeof(name), "thread_%u", t->seq);
	if (t->p->dir_fd >= 0 && unlinkat(t->p->dir_fd, name, AT_REMOVEDIR) == 0)
		t->has_dir = false;
	t->final_retired = true;
	t->retired_events += t->last.events;
	t->retired_bytes += t->last.bytes;
	t->retired_gens++;
	if (t->last.time_end_ns > t->retired_until_ns)
		t->retired_until_ns = t->last.time_end_ns;
	r->budget.disk_closed -= wal_round_block(t->last.bytes) + t->last_detail_bytes;
	t->last_detail_bytes = 0;
	r->budget.retired_threads++;
	wal_budget_retired(r, t->last.events, t->last.bytes);
}

/* A finished process the budget left no thread file of, whose symbol
 * files are still there: no reader has a function id of it to name. */
static bool budget_proc_emptied(const struct wal_proc *p)
{
	bool any = false;
	if (!p->finished || p->syms_retired)
		return false;
	for (size_t j = 0; j < p->nthreads; j++) {
		const struct wal_thread *t = p->threads[j];
		if (t->has_dir && !t->final_retired)
			return false;
		any |= t->final_retired;
	}
	return any;
}

/* Deletes the bodies of the session's symbodies/ that no process's
 * pid_N/ links any more (one link left: the store's own). A process
 * linking one at this moment either made its link first (two links:
 * kept) or finds none and writes its own. */
static void budget_sweep_bodies(const char *session_dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/symbodies", session_dir);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	struct stat st;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++)
		if (de->d_name[0] != '.' &&
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (!S_ISREG(st.st_mode) || st.st_nlink <= 1))
			unlinkat(fd, de->d_name, 0);
	closedir(d);
}

/* A process's module file: module_<ID>.syms or module_<ID>.body. */
static bool budget_is_module_file(const char *name)
{
	size_t n = strlen(name);
	return !strncmp(name, "module_", 7) && n > 12 &&
	       (!strcmp(name + n - 5, ".syms") || !strcmp(name + n - 5, ".body"));
}

/* Deletes p's pid_N/module_<ID>.syms and .body (the links a forked child
 * shares with its parent, and a body shared by content, free their
 * blocks with the last of them), then the session's bodies no process
 * links any more; r: each file leaves the side bytes at once (NULL: the
 * caller scans p next). False when there was no module file to delete. */
static bool budget_unlink_syms(struct ada_recorder *r, struct wal_proc *p)
{
	int fd = p->dir_fd < 0 ? -1 : openat(p->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	bool any = false;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (!budget_is_module_file(de->d_name))
			continue;
		if (r)
			budget_side_forget(r, p, fd, de->d_name);
		any |= unlinkat(fd, de->d_name, 0) == 0;
	}
	closedir(d);
	if (any && r)
		budget_sweep_bodies(r->session_dir);
	return any;
}

static void budget_retire_syms(struct ada_recorder *r, struct wal_proc *p)
{
	p->syms_retired = true;
	r->retired.pending++; /* retired after its manifest says so (retire.c) */
	if (!budget_unlink_syms(r, p))
		return;
	p->side_final = false; /* the next scan counts what is left exactly */
	r->budget.retired_syms++;
	if (!p->retention_stale) {
		p->retention_stale = true;
		r->budget.stale_procs++;
	}
}

/* The oldest emptied process (by the end of its newest file deleted). */
static bool budget_retire_oldest_syms(struct ada_recorder *r)
{
	struct wal_proc *bp = NULL;
	uint64_t best = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		uint64_t until = 0;
		if (!budget_proc_emptied(p))
			continue;
		for (size_t j = 0; j < p->nthreads; j++)
			until = p->threads[j]->retired_until_ns > until
			            ? p->threads[j]->retired_until_ns
			            : until;
		if (!bp || until < best) {
			bp = p;
			best = until;
		}
	}
	if (bp)
		budget_retire_syms(r, bp);
	return bp != NULL;
}

/* Deletes the oldest file of the session (by end time, any thread of any
 * process, finished or not); its process's manifest is rewritten when it
 * was already final (wal_manifests_restale). */
bool wal_retire_oldest(struct ada_recorder *r)
{
	struct wal_thread *bt = NULL;
	uint64_t best = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			struct wal_thread *t = p->threads[j];
			uint64_t t1;
			if (budget_oldest_of(t, &t1) && (!bt || t1 < best)) {
				bt = t;
				best = t1;
			}
		}
	}
	if (!bt) /* no index file left to delete: the symbols no reader needs */
		return budget_retire_oldest_syms(r);
	if (bt->p->finished && !bt->p->retention_stale) {
		bt->p->retention_stale = true;
		r->budget.stale_procs++;
	}
	if (!bt->ngens) {
		budget_retire_final(r, bt);
		if (budget_proc_emptied(bt->p))
			budget_retire_syms(r, bt->p);
		wal_retention_save(bt->p, bt); /* a live process's, for ada recover */
		return true;
	}
	struct wal_gen g = bt->gens[0];
	char name[64];
	snprintf(name, sizeof(name), "index.g%u.atf", g.g);
	int dfd = wal_thread_dir(bt);
	unlinkat(dfd, name, 0);
	snprintf(name, sizeof(name), "detail.g%u.atf", g.g);
	unlinkat(dfd, name, 0); /* its detail file goes with it, when there is one */
	if (bt->f == NULL)
		wal_thread_dir_close(bt); /* a live thread's is closed after its drain_slot() */
	memmove(&bt->gens[0], &bt->gens[1], sizeof(g) * (bt->ngens - 1));
	bt->ngens--;
	bt->retired_events += g.events;
	bt->retired_bytes += g.bytes;
	bt->retired_gens++;
	if (g.t1 > bt->retired_until_ns)
		bt->retired_until_ns = g.t1;
	r->budget.disk_closed -= wal_round_block(g.bytes) + g.detail_bytes;
	r->budget.retired_cut += g.cut;
	wal_budget_retired(r, g.events, g.bytes);
	wal_retention_save(bt->p, bt); /* a live process's, for ada recover */
	return true;
}

/* The manifests of finished processes the budget deleted files of since
 * they were written: they must not list files that are gone, and they
 * count what went. */
void wal_manifests_restale(struct ada_recorder *r)
{
	for (size_t i = 0; r->budget.stale_procs && i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (!p->retention_stale)
			continue;
		p->retention_stale = false;
		r->budget.stale_procs--;
		wal_manifest_write(r, p, "complete");
		p->side_final = false; /* the next scan counts the new manifest */
	}
}

/* ---- test hook: the budget audited where it must hold ---- */

/* Allocated bytes of the index and detail files under dirfd/name, depth
 * levels deep (the session: pid_N/thread_K/). */
static uint64_t audit_walk(int at, const char *name, int depth)
{
	DIR *d = ada_fs_opendir(at, name);
	if (!d)
		return 0;
	uint64_t total = 0;
	struct dirent *de;
	for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++) {
		enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
		struct stat st;
		if (k == ADA_FS_DIR && depth > 0 && strcmp(de->d_name, ".") &&
		    strcmp(de->d_name, ".."))
			total += audit_walk(dirfd(d), de->d_name, depth - 1);
		else if (budget_is_counted(de->d_name) &&
		         fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			total += (uint64_t)st.st_blocks * 512u;
	}
	closedir(d);
	return total;
}

/* ADA_TEST_BUDGET_AUDIT=FILE (e2e.budget_instant): at each point where
 * the session must be within its budget (the drain calls this there), the
 * index and detail files on disk are measured and compared with what the
 * drain counts of them, and with the budget less the side files it
 * scanned; the worst of each is written to FILE at the end
 * (wal_budget_audit_end). A walk of the session each time: tests only. */
void wal_budget_audit(struct ada_recorder *r, uint64_t counted)
{
	if (!r->budget.audit_on)
		return;
	uint64_t real = audit_walk(r->session_fd, ".", 2);
	r->budget.audits++;
	if (real > counted && real - counted > r->budget.audit_short)
		r->budget.audit_short = real - counted;
	uint64_t all = real + r->budget.side_bytes;
	if (r->o.max_disk_bytes && all > r->o.max_disk_bytes &&
	    all - r->o.max_disk_bytes > r->budget.audit_over)
		r->budget.audit_over = all - r->o.max_disk_bytes;
}

void wal_budget_audit_init(struct ada_recorder *r)
{
	const char *f = getenv("ADA_TEST_BUDGET_AUDIT");
	r->budget.audit_on = f && *f;
}

void wal_budget_audit_end(struct ada_recorder *r)
{
	const char *f = getenv("ADA_TEST_BUDGET_AUDIT");
	if (!r->budget.audit_on || !f)
		return;
	int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	dprintf(fd, "audits %llu short %llu over %llu overrun %d\n",
	        (unsigned long long)r->budget.audits, (unsigned long long)r->budget.audit_short,
	        (unsigned long long)r->budget.audit_over, (int)r->budget.warned);
	/* Finished processes held in memory at most at once, and retired (retire.c). */
	dprintf(fd, "held_max %zu retired %u\n", r->retired.held_max, r->retired.procs);
	close(fd);
}
