/*
 * The drain's end of a process and of the recording: reaping (waitpid as
 * the child subreaper, the status of a process not ours from its zombie
 * or its reaper's table of reaped children, its end from its pidfd), the
 * last drain of an arena that is gone, lost or shrunk, finalizing a
 * process, and the end of the recording (the program's descendants left
 * running, a stop request).
 *
 * Threads: the drain thread only (drain.c), which owns every wal_proc.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena_internal.h"
#include "drain_internal.h"
#include "fs.h"
#include "ring.h"

#define DRAIN_STOP_GRACE_NS 500000000ull  /* the program may exit by itself */
#define DRAIN_STOP_DRAIN_NS 1300000000ull /* then drain until here, finalize */
/* After the main process exits, its descendants get this long to end by
 * themselves; those still running then (daemons, background jobs) go on
 * untraced. */
#define DRAIN_LEFTOVER_GRACE_NS 2000000000ull
/* How long a process gone with no known status is waited for: its reaper's
 * agent notes the status just after its wait returns. */
#define DRAIN_STATUS_WAIT_NS 1000000000ull

struct drain_left {
	char text[512]; /* " 123 (sleep), 456 (python3)" */
	size_t used;
	int n;
};

static void drain_note_reaped(struct ada_recorder *r, pid_t pid, int st)
{
	if (pid == r->main_pid) {
		r->main_reaped = true;
		r->main_status = st;
		r->main_exit_ns = wal_now_ns();
	}
	struct wal_proc *p = drain_find(r, pid);
	if (p) {
		p->reaped = p->our_child = true;
		p->wstatus = st;
		return;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now); /* the ctimes' clock */
	(void)wal_reaped_add(&r->reaped, pid, st, (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec);
}

bool drain_waitpids(struct ada_recorder *r)
{
	bool any = false;
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0) {
			r->no_children = true;
			return any;
		}
		if (pid == 0)
			return any;
		drain_note_reaped(r, pid, st);
		any = true;
	}
}

/* True once the end's time is up for p: a forced stop's (SIGTERM, a
 * second SIGINT) for every process; the 2 s rule's only for a process
 * still running, which may publish without end. A process that ended
 * publishes no more: its rings hold at most what they can hold, and are
 * read whole however long the end took (a loaded machine's drain may be
 * behind by seconds; cutting them short there lost events uncounted). */
static bool drain_out_of_time(struct ada_recorder *r, const struct wal_proc *p)
{
	/* A stop asked while ended processes are read whole (after the loop,
	 * where drain_stop_now() is no longer asked) bounds that too.
	 * Relaxed: a hint, as in drain_nap(); drain_stop_now() does the same. */
	if (!r->stop_at_ns && atomic_load_explicit(&r->stop_req, memory_order_relaxed)) {
		r->stop_at_ns = wal_now_ns();
		uint64_t d = r->stop_at_ns + DRAIN_STOP_DRAIN_NS;
		if (!r->stop_deadline_ns || d < r->stop_deadline_ns)
			r->stop_deadline_ns = d;
	}
	if (!r->stop_deadline_ns || wal_now_ns() < r->stop_deadline_ns)
		return false;
	return r->stop_at_ns || !p->gone;
}

/* Takes every event left in a dead process's rings: at a wrap point the
 * taken events must be durable and released before the rest is visible.
 * Bounded: a dead process's ring holds at most one ring's worth, so more
 * than two of them means it still publishes (a forced stop) or lies. */
static void drain_empty_slot(struct ada_recorder *r, struct wal_proc *p, uint32_t s)
{
	uint64_t taken = 0;
	while (!drain_out_of_time(r, p)) {
		uint64_t left = ada_slot_unconsumed(p->arena, s);
		size_t n = drain_slot(r, p, s, SIZE_MAX);
		taken += n;
		struct wal_thread *t = p->by_slot[s];
		if (!t || ada_slot_fault(p->arena, s, NULL) ||
		    ada_slot_unconsumed(p->arena, s) == t->pending || taken > 2 * p->ring_events)
			break;
		if (t->f)
			ada_wal_file_submit(t->f);
		int got = ada_wal_io_reap(r->io, true);
		/* Progress: events taken, a completion, or ring space released
		 * in the slot's pass (a tmpfs file's writes complete as they are
		 * sent: none is left in flight to wait for). */
		if (got < 0 || (got == 0 && n == 0 && ada_slot_unconsumed(p->arena, s) == left))
			break; /* nothing in flight and nothing new: no progress possible */
	}
}

/* What slot s still holds that no take got (neither written nor taken):
 * its events count as unread_at_end drops. A slot that breaks the
 * protocol now is quarantined as in a pass (what its ring held counted
 * as corrupt, from our private positions). */
static uint64_t drain_slot_unread(struct ada_recorder *r, struct wal_proc *p, uint32_t s)
{
	struct ada_slot_info si;
	const struct wal_thread *t = p->by_slot[s];
	if (ada_slot_read_checked(p->arena, s, &si) != 0) {
		wal_note_quarantine(r, p, s, t, t ? t->pending : 0);
		return 0;
	}
	if (si.state == ADA_SLOT_FREE)
		return 0;
	uint64_t held = si.head - si.tail, pend = t ? t->pending : 0;
	return held > pend ? held - pend : 0;
}

/* Takes what every ring holds, then counts what is left (the end's time
 * ran out, no progress was possible): nothing published is lost without
 * a count. Said once per process. */
static void drain_empty_proc(struct ada_recorder *r, struct wal_proc *p)
{
	uint32_t used = ada_arena_slots_used(p->arena);
	uint64_t left = 0;
	for (uint32_t s = 0; s < used; s++) {
		drain_empty_slot(r, p, s);
		left += drain_slot_unread(r, p, s);
	}
	if (!left)
		return;
	p->rec_drops[ADA_LANE_INDEX][ADA_DROP_UNREAD_AT_END] += left;
	char msg[256];
	snprintf(msg, sizeof(msg),
	         "pid %d: %llu events left in its rings were not read before the recording "
	         "ended (%s); counted as unread_at_end drops",
	         (int)p->pid, (unsigned long long)left,
	         r->stop_at_ns ? "a forced stop's time ran out"
	         : p->gone     ? "the drain could make no progress"
	                       : "it was still running");
	if (p->warnings)
		json_array_append_new(p->warnings, json_string(msg));
	/* On stderr the first only: a stop among many processes would
	 * otherwise print a line each (the summary line counts them all). */
	if (r->unread_told++ == 0)
		wal_notice(r, "%s", msg);
}

/* The arena's pages are gone or about to be (its file shrank): count
 * what its rings still held (from our private positions, no shared
 * read), say so, drop the mapping, finalize what was written. */
void drain_arena_lost(struct ada_recorder *r, struct wal_proc *p, uint64_t size)
{
	const void *base;
	uint64_t need, left = 0;
	struct stat st;
	ada_arena_mapping(p->arena, &base, &need);
	if (size == 0 && p->arena_fd >= 0 && fstat(p->arena_fd, &st) == 0)
		size = (uint64_t)st.st_size;            /* found by a SIGBUS: ask the file */
	for (uint32_t s = 0; s < p->max_threads; s++) { /* private state only */
		struct wal_thread *t = p->by_slot[s];
		uint64_t u = ada_slot_unconsumed(p->arena, s), pend = t ? t->pending : 0;
		left += u > pend ? u - pend : 0;
	}
	p->rec_drops[ADA_LANE_INDEX][ADA_DROP_CORRUPT] += left;
	p->arena_bad = true;
	ada_arena_close(p->arena);
	p->arena = NULL;
	wal_note(r, p,
	         "pid %d truncated its arena file to %llu bytes (it needs %llu): the recorder "
	         "stopped reading it; what was written stays, %llu events left in its rings "
	         "are counted as corrupt drops",
	         (int)p->pid, (unsigned long long)size, (unsigned long long)need,
	         (unsigned long long)left);
	drain_finish_proc(r, p);
}

/* fstat of the arena descriptor: catches a shrunk file without touching
 * its pages (the SIGBUS guard catches the race with a read). */
bool drain_arena_shrunk(struct wal_proc *p, uint64_t *size)
{
	struct stat st;
	const void *base;
	uint64_t need;
	if (p->arena_fd < 0 || !p->arena || fstat(p->arena_fd, &st) != 0)
		return false;
	ada_arena_mapping(p->arena, &base, &need);
	*size = (uint64_t)st.st_size;
	return (uint64_t)st.st_size < need;
}

/* Removes the finished process's arena file, and only that file: a
 * <pid>.ring of another inode under the name is a later process's, never
 * removed under it. Its creation was passed over while p was being read
 * (drain_open_arena): looked at now, as a finished process's pid. */
static void drain_unlink_arena(struct ada_recorder *r, const struct wal_proc *p)
{
	struct stat st;
	if (fstatat(AT_FDCWD, p->arena_path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return;
	if (st.st_ino == p->arena_ino)
		unlink(p->arena_path);
	else
		drain_open_arena(r, strrchr(p->arena_path, '/') + 1);
}

/* The finished process's arena file into the pool (src/ring/pool.c), for
 * the next process that makes one to take with its ring pages: only when
 * nothing maps it any more (the process is gone, not left running at the
 * end or detached from), the file under its name is the one we read, and
 * the recording goes on (at its end no process would take it). */
static bool drain_pool_arena(struct ada_recorder *r, struct wal_proc *p)
{
	struct stat st;
	if (!p->arena || p->arena_bad || p->arena_fd < 0 || !p->gone || r->o.attached ||
	    r->main_reaped || r->stop_at_ns || r->left_running)
		return false;
	int k = wal_shm_pool_slot(r);
	if (k < 0 || fstatat(AT_FDCWD, p->arena_path, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    st.st_ino != p->arena_ino)
		return false;
	/* The scrub writes through our mapping: a file truncated meanwhile
	 * (by anyone of the program) faults, and is removed as before. */
	bool scrubbed = false;
	WAL_GUARDED(p->arena, scrubbed = ada_arena_pool_scrub(p->arena, p->arena_fd) == 0,
	            scrubbed = false);
	if (!scrubbed || !wal_shm_pool_put(r, p->arena, p->arena_path, k))
		return false;
	/* Its file is not under its name any more: whatever comes there
	 * (the pool's file included, taken by a later process given the pid)
	 * is a later process's (drain_open_arena_ino). */
	p->arena_ino = 0;
	return true;
}

/* A finished process takes no new thread: its set of thread numbers and
 * its list of open threads are not needed once every thread is summed
 * (wal_thread_closed), and a recording of many short processes would keep
 * them to its end (control_forkheap's bound per finished process). */
static void drain_open_threads_free(struct wal_proc *p)
{
	for (size_t j = 0; j < p->nopen; j++)
		if (!p->open[j]->summed)
			return; /* its sums are not in done_sums: keep it walked */
	free(p->open);
	p->open = NULL;
	p->nopen = p->capopen = p->open_closed = 0;
	free(p->seq_set);
	p->seq_set = NULL;
	p->seq_cap = 0;
}

void drain_finish_proc(struct ada_recorder *r, struct wal_proc *p)
{
	uint64_t size = 0;
	if (p->gone) /* none of its threads writes any more */
		wal_agent_tmp_sweep(r, p);
	if (p->arena && drain_arena_shrunk(p, &size)) {
		drain_arena_lost(r, p, size);
		return;
	}
	if (p->arena)
		WAL_GUARDED(p->arena, drain_empty_proc(r, p), drain_arena_lost(r, p, 0); return );
	if (p->arena)
		WAL_GUARDED(p->arena, wal_flight_proc_end(r, p), drain_arena_lost(r, p, 0);
		            return );
	else
		wal_flight_proc_end(r, p); /* before the files are final: crash marker */
	/* The last of its notes of children it reaped, before its arena goes. */
	if (p->arena)
		WAL_GUARDED(p->arena, wal_wait_notes_take(r, p, p->gone), drain_arena_lost(r, p, 0);
		            return );
	for (size_t j = 0; j < p->nthreads; j++)
		drain_thread_finalize(r, p->threads[j]);
	/* No thread is reached by its slot any more. Its per-slot tables
	 * (max_threads entries each, the whole thread limit) are the passes'
	 * and it is in none now: a recording of many short processes would
	 * otherwise keep them all to its end. Unmapped, not cleared: clearing
	 * wrote every page of the thread limit's tables, pages a short
	 * process never touched, for each process. */
	drain_slot_tables_free(p);
	drain_open_threads_free(p);
	p->finished = true;
	r->retired.finished_held++; /* retire.c */
	if (p->arena)
		WAL_GUARDED(p->arena, wal_manifest_write(r, p, "complete"), {
			wal_manifest_abandon(r);
			p->arena_bad = true;
			ada_arena_close(p->arena);
			p->arena = NULL;
			wal_manifest_write(r, p, "complete");
		});
	else
		wal_manifest_write(r, p, "complete");
	/* Not written (tried again at the end): said in pid_N/.ring_slots
	 * before the arena goes, or recover would take it for lost. */
	if (p->manifest_failed)
		(void)wal_ring_table_drained(p);
	wal_budget_scan_proc(p); /* its files are final now */
	wal_keysym_proc_finished(p);
	wal_shm_release(r, p);
	bool pooled = drain_pool_arena(r, p);
	ada_arena_close(p->arena);
	p->arena = NULL;
	if (!pooled)
		drain_unlink_arena(r, p);
	if (p->arena_fd >= 0)
		close(p->arena_fd);
	p->arena_fd = -1;
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	wal_flight_proc_finished(p);
}

static bool drain_vanished(struct wal_proc *p)
{
	if (p->pidfd >= 0) {
		struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
		return poll(&pfd, 1, 0) == 1; /* readable: the process exited */
	}
	return kill(p->pid, 0) < 0 && errno == ESRCH;
}

/* The wait status of a zombie (field 52 of /proc/PID/stat, exit_code,
 * state Z): a process that exited and that its parent has not reaped yet.
 * -1 otherwise, and when the zombie started at another time than start
 * (the arena's maker, when known): a later process's under the pid. */
static int drain_zombie_status(pid_t pid, uint32_t start)
{
	char path[64], st[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	st[n] = '\0';
	uint64_t ticks = ada_stat_start_ticks(st, (size_t)n);
	if (start && ticks && (uint32_t)ticks != start)
		return -1;
	char *p = strrchr(st, ')');
	if (!p || p[1] != ' ' || p[2] != 'Z')
		return -1;
	p++;                                          /* the space before field 3 */
	for (int field = 3; field < 52 && p; field++) /* then before field + 1 */
		p = strchr(p + 1, ' ');
	if (!p)
		return -1;
	char *end;
	long v = strtol(p + 1, &end, 10);
	return end != p + 1 && v >= 0 && v <= 0xffff ? (int)v : -1;
}

/* A process we did not reap is gone: its status, from its zombie while its
 * parent has not reaped it, else from its reaper's table of reaped
 * children (wait_notes.c: other_known once a note came), else from its
 * own agent (the arena: exit() or a fatal signal it caught). False while
 * none knows it yet and the wait for the reaper's note is not over. */
static bool drain_other_status(struct wal_proc *p, bool last)
{
	if (p->reaped || p->other_known)
		return true;
	/* A zombie under its pid now is another process. */
	uint32_t start = p->arena ? ada_arena_start_time(p->arena) : 0;
	int st = p->pid_taken ? -1 : drain_zombie_status(p->pid, start);
	if (st >= 0) {
		p->other_known = true;
		p->other_status = st;
		return true;
	}
	int v;
	if (last || (p->arena && ada_arena_process_state(p->arena, &v) != ADA_PROC_RUNNING))
		return true;
	uint64_t now = wal_now_ns();
	if (!p->gone_ns)
		p->gone_ns = now;
	return now - p->gone_ns >= DRAIN_STATUS_WAIT_NS;
}

static void drain_take_wait_notes_of(struct ada_recorder *r, struct wal_proc *p)
{
	WAL_GUARDED(p->arena, wal_wait_notes_take(r, p, false), drain_arena_lost(r, p, 0));
}

/* Every table of reaped children read up to now, before the end judges
 * every process: a child's note is in its reaper's table, which may come
 * later in procs[] than the child. (A pass reads each table in its loop,
 * drain.c drain_proc_guarded.) */
static void drain_take_wait_notes(struct ada_recorder *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (!r->procs[i]->finished && r->procs[i]->arena)
			drain_take_wait_notes_of(r, r->procs[i]);
}

/* A process is gone when we reaped it, or (not our child) when it no
 * longer exists. Everything it published is in the rings by then
 * (p->gone: its rings are read whole, whatever the end's time). With
 * all, those still running are finished too. */
void drain_check_gone(struct ada_recorder *r, bool all)
{
	if (all)
		drain_take_wait_notes(r);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (p->finished)
			continue;
		if (!p->gone)
			p->gone = p->reaped || p->vanished || (!p->our_child && drain_vanished(p));
		if ((all || p->gone) && drain_other_status(p, all))
			drain_finish_proc(r, p);
	}
}

/* The parent pid and the command name of pid (from /proc/PID/stat, which
 * the process may name as it likes: cut at 15 characters, anything but
 * printable ASCII replaced); -1 when it is gone. */
static pid_t drain_proc_stat(pid_t pid, char comm[16])
{
	char path[64], st[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return -1;
	st[len] = '\0';
	char *o = strchr(st, '('), *c = strrchr(st, ')');
	int ppid;
	if (!o || !c || c < o || sscanf(c + 1, " %*c %d", &ppid) != 1)
		return -1;
	size_t n = (size_t)(c - o - 1) < 15 ? (size_t)(c - o - 1) : 15;
	for (size_t i = 0; i < n; i++)
		comm[i] = o[1 + i] > ' ' && o[1 + i] < 127 ? o[1 + i] : '?';
	comm[n] = '\0';
	return ppid;
}

static void drain_left_add(struct drain_left *l, pid_t pid, const char *comm)
{
	if (l->n++ >= 8 || l->used >= sizeof(l->text))
		return;
	int w = snprintf(l->text + l->used, sizeof(l->text) - l->used, "%s %d (%s)",
	                 l->n > 1 ? "," : "", (int)pid, comm);
	l->used += w > 0 ? (size_t)w : 0;
}

static bool drain_is_recorded_running(const struct ada_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid && !r->procs[i]->finished && !r->procs[i]->reaped &&
		    !r->procs[i]->gone)
			return true;
	return false;
}

/* p is still running: not seen gone, and the process under its pid is
 * its arena's maker (start times). One the kernel gave its pid to a later
 * process is gone: marked so, its rings read whole at the end, and the
 * later process never named as ours. */
static bool drain_still_running(struct wal_proc *p)
{
	if (p->finished || p->reaped || p->gone)
		return false;
	if (p->arena && drain_creator_gone(p)) {
		p->gone = p->pid_taken = true;
		return false;
	}
	return true;
}

/* Every process still running that the recording started: the recorded
 * ones, and the recorder's children (every orphaned descendant is
 * re-parented to it: we are the child subreaper). Bounded walk of /proc. */
static void drain_list_left(struct ada_recorder *r, struct drain_left *l)
{
	char comm[16];
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (drain_still_running(p) && drain_proc_stat(p->pid, comm) >= 0)
			drain_left_add(l, p->pid, comm);
	}
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *de;
	pid_t self = getpid();
	for (unsigned k = 0; k < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); k++) {
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid > 0 && !drain_is_recorded_running(r, pid) &&
		    drain_proc_stat(pid, comm) == self)
			drain_left_add(l, pid, comm);
	}
	closedir(d);
}

/* The recorder will not wait for what is still running (the program
 * exited and the grace period is over, or a forced stop): said once on
 * stderr and in the manifests; the recorded ones are finalized with what
 * they emitted so far and go on untraced. */
static void drain_leave_running(struct ada_recorder *r, const char *when)
{
	if (r->left_running)
		return;
	r->left_running = true;
	struct drain_left l = {.used = 0, .n = 0};
	drain_list_left(r, &l);
	if (l.n == 0)
		return;
	char more[32] = "";
	if (l.n > 8)
		snprintf(more, sizeof(more), " and %d more", l.n - 8);
	wal_note(r, NULL, "%d process%s still running %s:%s%s; %s go%s on untraced, not waited for",
	         l.n, l.n == 1 ? " was" : "es were", when, l.text, more, l.n == 1 ? "it" : "they",
	         l.n == 1 ? "es" : "");
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (!p->finished && !p->reaped && !p->gone && p->warnings)
			json_array_append_new(
			    p->warnings,
			    json_string("still running when the recording ended: what it did "
			                "afterwards is not recorded"));
	}
}

/* The main process is reaped; the others are waited for while they run,
 * for DRAIN_LEFTOVER_GRACE_NS at most (with --no-follow they are not
 * recorded: not at all). */
bool drain_done(struct ada_recorder *r)
{
	if (r->o.attached) { /* until the detach, or every process is gone */
		for (size_t i = 0; i < r->nprocs; i++)
			if (!r->procs[i]->finished)
				return false;
		return r->nprocs + r->retired.procs > 0;
	}
	if (!r->main_reaped)
		return false;
	bool running = r->o.follow && !r->no_children;
	for (size_t i = 0; i < r->nprocs && !running; i++)
		running = !r->procs[i]->finished;
	if (!running)
		return true;
	uint64_t now = wal_now_ns();
	if (now - r->main_exit_ns < DRAIN_LEFTOVER_GRACE_NS)
		return false;
	drain_leave_running(r, "2 s after the program exited");
	/* Their rings are drained for a bounded time, as on a forced stop. */
	r->stop_deadline_ns = now + (DRAIN_STOP_DRAIN_NS - DRAIN_STOP_GRACE_NS);
	return true;
}

/* Test hook (bounded_endlag): ADA_TEST_END_PAUSE=FILE makes the drain,
 * once it decided that the recording ends, create FILE and wait until
 * FILE is gone (60 s at most) before its last scan and the last drain of
 * every process: a drain thread descheduled there on a loaded machine,
 * made to happen (a window too short to hit from outside). */
void drain_end_pause(void)
{
	wal_test_hold(getenv("ADA_TEST_END_PAUSE"));
}

void wal_test_hold(const char *f)
{
	if (!f || !*f)
		return;
	int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	for (int i = 0; i < 6000 && access(f, F_OK) == 0; i++)
		usleep(10000);
}

/* A forced stop (ada_recorder_stop(): SIGTERM, a second SIGINT): the
 * program gets DRAIN_STOP_GRACE_NS to exit on its own (its status is
 * then known), then whatever is in the rings is drained until
 * DRAIN_STOP_DRAIN_NS after the request, and everything is finalized:
 * the recorder is gone well within 2 s. */
bool drain_stop_now(struct ada_recorder *r)
{
	if (!atomic_load_explicit(&r->stop_req, memory_order_relaxed))
		return false;
	uint64_t now = wal_now_ns();
	if (!r->stop_at_ns)
		r->stop_at_ns = now;
	if (!r->o.attached && !r->main_reaped && now - r->stop_at_ns < DRAIN_STOP_GRACE_NS)
		return false;
	r->stop_deadline_ns = r->stop_at_ns + DRAIN_STOP_DRAIN_NS;
	if (!r->o.attached)
		drain_leave_running(r, "when the recording was stopped by a signal");
	return true;
}
