/*
 * The drain: the recorder's one thread that empties every ring of every
 * arena of the session into thread_K/index.atf files.
 *
 * Threads: the drain thread only; it owns every wal_proc / wal_thread and
 * the ada_wal_io. It is the single consumer of every index ring (ring.h).
 *
 * One pass: pick up new arenas (a read of the arena directory when the
 * budget page's count of names moved, every second, and whenever a
 * process is reaped, since an arena may appear and its process die
 * between two passes); for each live slot peek the ring,
 * convert TSC -> CLOCK_BOOTTIME straight into the file's staging buffer,
 * release the ring; submit stale buffers and reap completions; reap dead
 * children (waitpid: we are a child subreaper, so every descendant ends up
 * ours); a process that is gone is drained one last time and finalized.
 * Slow cadence (10 ms): free EXITED slots whose thread is gone; 1 s:
 * metrics, TSC re-anchor.
 * This file is the loop and the rings (take, rotate, the budget); the
 * conversion of a ring's events into a file is drain_convert.c's; new arenas are admitted in
 * drain_arena.c, processes and the recording end in drain_end.c (drain_internal.h). Invariants: a
 * slot's events are consumed in ring order and appended in that order; a thread's output timestamps
 * never decrease (clamped); a ring position is released only after its events are in a staging
 * buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"
#include "ring.h"
#include "arena_internal.h"
#include "detail_internal.h"
#include "drain_internal.h"
#include "fork_files.h"
#include "spares.h"

#define DRAIN_SLOT_BUDGET (1u << 18) /* events per slot per pass: fairness */
#define DRAIN_IDLE_MIN_US 50u
#define DRAIN_NAP_US 500u            /* drain_nap(): a busy pass that took little */
#define DRAIN_NAP_MIN_US 50u         /* a shorter nap is not worth its wake-up */
#define DRAIN_NAP_EVENTS_PER_US 100u /* the fastest thread a nap allows for, events per us */
#define DRAIN_POLL_NS 1000000ull     /* busy passes: dead children */

void *drain_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return arr;
	size_t nc = *cap ? *cap * 2 : 8;
	while (nc < need)
		nc *= 2;
	void *n = realloc(arr, nc * elem);
	if (n)
		*cap = nc;
	return n;
}

/* ---- threads ---- */

int wal_thread_dir(struct wal_thread *t)
{
	if (t->dir_fd >= 0 || !t->has_dir || t->p->dir_fd < 0)
		return t->dir_fd;
	char name[32];
	snprintf(name, sizeof(name), "thread_%u", t->seq);
	if (ada_fs_open_dir(t->p->dir_fd, name, &t->dir_fd) < 0)
		t->dir_fd = -1;
	return t->dir_fd;
}

void wal_thread_dir_close(struct wal_thread *t)
{
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	t->dir_fd = -1;
}

/* A compact file's recent window (segment_cidx.c): twice the thread's
 * ring, what a drain pass may take before its persist reads them back. */
static uint32_t drain_cidx_recent(const struct ada_recorder *r, const struct wal_thread *t)
{
	if (r->o.detail_mode == ADA_DETAIL_NEVER || r->o.index_format != ADA_INDEX_COMPACT)
		return 0;
	uint64_t n = t->p->arena ? 2 * ada_arena_slot_events(t->p->arena, t->slot) : 0;
	return n < 8192 ? 8192 : n > (1u << 21) ? 1u << 21 : (uint32_t)n;
}

/* Near the disk budget a file grows by a 64th of the rotation size (a
 * 256th of the budget: 64 KiB of 16 MiB, 16 MiB of 4 GiB), at least
 * WAL_MIN_SEGMENT: room allocated and not written costs older data. */
#define DRAIN_NEAR_BUDGET_STEPS 64u

/* t's index.atf: file_fd is a spare's (spares.c: empty, consumed), or
 * -1 to create it in t's directory. */
static int drain_thread_file(struct ada_recorder *r, struct wal_thread *t, int file_fd)
{
	char path[PATH_MAX];
	wal_budget_dir_sealed(t->p, t->seq, true); /* it holds only index and detail files */
	t->file_ring_base = t->ring_next;          /* the file's event 0 (detail links) */
	t->file_ring_hole = UINT64_MAX;
	snprintf(path, sizeof(path), "%s/index.atf", t->dir);
	struct ada_wal_file_opts fo = {
	    .thread_id = t->tid,
	    .clock_type = ATF_CLOCK_BOOTTIME,
	    .arch = t->p->arch,
	    .segment_bytes = r->o.segment_bytes,
	    .ahead_limit = r->budget.gen_bytes, /* 0 without a budget */
	    .near_budget_step = r->budget.gen_bytes / DRAIN_NEAR_BUDGET_STEPS,
	    .flush = r->o.flush,
	    .index_format = r->o.index_format,
	    .cidx_recent = drain_cidx_recent(r, t),
	    .cidx_block = r->o.cidx_block,
	};
	int rc = file_fd >= 0
	             ? ada_wal_file_adopt(r->io, file_fd, wal_thread_dir(t), "index.atf", path, &fo,
	                                  &t->f)
	             : ada_wal_file_openat(r->io, wal_thread_dir(t), "index.atf", path, &fo, &t->f);
	/* Before any event is in it: until then, recover finds the file
	 * empty and the ring's events all after it, whatever the record. */
	if (rc == 0 && wal_ring_table_put(t->p, t) < 0)
		wal_ring_table_failed(r, t->p);
	return rc;
}

/* rc is the recorder at its limit of open files (EMFILE: its own,
 * `ulimit -n`; ENFILE: the system's): t's events from here on are
 * fd_limit drops (drain_discard()), not lost to a full disk. Told once
 * per recording; true when so. */
static bool drain_fd_limit(struct ada_recorder *r, struct wal_thread *t, int rc)
{
	if (rc != -EMFILE && rc != -ENFILE)
		return false;
	t->refused = true;
	t->refuse_why = ADA_DROP_FD_LIMIT;
	if (r->fd_limit_told++ == 0) {
		struct rlimit rl;
		char lim[48] = "";
		if (rc == -EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY)
			snprintf(lim, sizeof(lim), " (%llu, ulimit -n)",
			         (unsigned long long)rl.rlim_cur);
		wal_note(r, t->p,
		         "%s: no index file: the recorder has as many files open as %s%s; the "
		         "events of this thread and of every later one that meets the limit are "
		         "counted as fd_limit drops (raise the limit: ulimit -n)",
		         t->dir, rc == -EMFILE ? "its limit allows" : "the system allows", lim);
	}
	return true;
}

/* t got no index file (rc): said (a planted link or file, another
 * user's directory, any other error once), the recording's error set
 * (not for a full disk), no empty thread directory left behind; its
 * events are counted lost. */
static void drain_thread_no_file(struct ada_recorder *r, struct wal_thread *t, const char *name,
                                 int rc)
{
	struct wal_proc *p = t->p;
	if (drain_fd_limit(r, t, rc)) {
		/* Also when the limit refused only its opening: the mkdir
		 * (ada_fs_mkdir) made it, empty. */
		if (p->dir_fd >= 0)
			unlinkat(p->dir_fd, name, AT_REMOVEDIR);
		t->has_dir = false;
		t->done = true;
		return;
	}
	if (rc == -ELOOP || rc == -EPERM || rc == -EEXIST)
		wal_note(r, p, "%s: %s; the events of this thread are counted lost", t->dir,
		         rc == -ELOOP   ? "a symbolic link, not a directory of ada's"
		         : rc == -EPERM ? "a directory of another user"
		                        : "index.atf is already there (a planted file or link)");
	if (!r->error && rc != -ENOSPC && rc != -ELOOP && rc != -EPERM && rc != -EEXIST)
		wal_note(r, p,
		         "%s: cannot make its index file (%s); its events, and those of "
		         "every later thread that meets an error, are counted lost",
		         t->dir, strerror(-rc));
	if (!r->error && rc != -ENOSPC)
		r->error = rc;
	if (t->has_dir)
		unlinkat(p->dir_fd, name, AT_REMOVEDIR);
	t->has_dir = false;
	t->done = true;
}

/* t's thread_K/ (name) under its process's directory: a spare moved
 * into place with its index.atf (*file_fd), or made here (*file_fd -1). */
static int drain_thread_mkdir(struct ada_recorder *r, struct wal_thread *t, const char *name,
                              int *file_fd)
{
	*file_fd = -1;
	if (wal_spares_use(r->spares, t->p->dir_fd, name, &t->dir_fd, file_fd) == 0)
		return 0;
	return ada_fs_mkdir(t->p->dir_fd, name, 0, &t->dir_fd);
}

static struct wal_thread *drain_thread_new(struct ada_recorder *r, struct wal_proc *p,
                                           uint32_t slot, const struct ada_slot_info *si)
{
	struct wal_thread *t = calloc(1, sizeof(*t));
	void *arr = drain_grow(p->threads, &p->capthreads, p->nthreads + 1, sizeof(*p->threads));
	if (arr) /* grown: the old array is gone */
		p->threads = arr;
	void *open = drain_grow(p->open, &p->capopen, p->nopen + 1, sizeof(*p->open));
	if (open)
		p->open = open;
	if (!t || !arr || !open || drain_seq_room(p) < 0)
		goto err;
	t->p = p;
	t->seq = si->thread_seq;
	t->tid = si->tid;
	t->slot = slot;
	t->slot_gen = si->generation;
	t->ring_next = si->tail;
	t->dir_fd = -1;
	char name[32];
	snprintf(name, sizeof(name), "thread_%u", t->seq);
	if (asprintf(&t->dir, "%s/%s", p->dir, name) < 0) {
		t->dir = NULL;
		goto err;
	}
	p->threads[p->nthreads++] = t;
	p->open[p->nopen++] = t;
	drain_seq_put(p, t->seq);
	if ((pid_t)si->tid == p->pid)
		p->images++;
	if (!wal_thread_dir_allowed(p, wal_now_ns())) {
		t->refused = t->done = true; /* drain_discard() counts its events */
		t->refuse_why = ADA_DROP_THREAD_LIMIT;
		if (p->dirs_refused == 1)
			wal_note(r, p,
			         "pid %d starts threads faster than %.0f a second: threads beyond "
			         "that get no thread_K directory and their events are counted as "
			         "thread_limit drops",
			         (int)p->pid, WAL_THREAD_DIR_RATE);
		return t;
	}
	/* On a full disk no new file: the space freed for the final
	 * manifests (reserve.c) is not for new threads. */
	int file_fd = -1;
	int rc = p->dir_fd < 0                 ? (p->dir_err ? p->dir_err : -ENOENT)
	         : ada_wal_io_disk_full(r->io) ? -ENOSPC
	                                       : drain_thread_mkdir(r, t, name, &file_fd);
	if (rc == 0) {
		t->has_dir = true;
		rc = drain_thread_file(r, t, file_fd);
	}
	if (rc < 0)
		drain_thread_no_file(r, t, name, rc);
	wal_flight_thread_start(t);
	wal_thread_dir_close(t);
	return t;
err:
	free(t);
	if (!r->error)
		r->error = -ENOMEM;
	return NULL;
}

/* What the flush policy did to one finished file, summed per thread. */
static void drain_count_file(struct wal_thread *t, const struct ada_wal_file_summary *s)
{
	t->segments += s->segments;
	t->flushes += s->flushes;
	t->syncs += s->syncs;
}

/* The slot's count of waits for ring space, forward only: the target's
 * memory, shown and never trusted to size anything, and a thread's
 * totals never go back. Not for a quarantined slot (its counters are
 * whatever the program wrote), nor once finalized (summed: its slot may
 * be free or another thread's). A thread done from its start because it
 * got no file (a full disk, an error, a refusal) still owns its slot and
 * is drained: its waits count, as its wait markers do among its lost or
 * dropped events. */
static void drain_sync_waits(struct wal_thread *t)
{
	if (t->summed || !t->p->arena || ada_slot_fault(t->p->arena, t->slot, NULL))
		return;
	uint64_t w, ns;
	ada_index_ring_waits(t->p->arena, t->slot, &w, &ns);
	t->ring_waits = w > t->ring_waits ? w : t->ring_waits;
	t->ring_wait_ns = ns > t->ring_wait_ns ? ns : t->ring_wait_ns;
}

static uint64_t drain_budget_thread_end_room(struct ada_recorder *r, struct wal_thread *t);
static void drain_budget_audit(struct ada_recorder *r);

void drain_thread_finalize(struct ada_recorder *r, struct wal_thread *t)
{
	drain_sync_waits(t);
	t->budget_cut = false; /* its file is final: the budget may delete it */
	if (t->f) {
		/* The detail records of the last events go first (--detail
		 * always); their patches need the index file still open. */
		if (r->o.detail_mode == ADA_DETAIL_ALWAYS && t->p->arena) {
			wal_detail_settle(t);
			wal_detail_persist(r, t, 0, UINT64_MAX, NULL);
		}
		uint64_t room = drain_budget_thread_end_room(r, t);
		wal_flight_thread_end(r, t, room); /* open windows: their part of its ring */
		wal_flight_thread_unread(r, t);    /* what waits for events never taken now */
		drain_budget_audit(r);
		wal_flight_context(r, t); /* the fatal signal's registers, last */
		t->last_detail_bytes = wal_detail_close(r, t, UINT32_MAX);
		ada_wal_file_finalize(t->f, &t->last);
		t->f = NULL;
		drain_count_file(t, &t->last);
		t->lost += t->last.lost;
		r->lost_total += t->last.lost;
		r->budget.disk_closed += wal_round_block(t->last.bytes) + t->last_detail_bytes;
	}
	t->done = true;
	wal_thread_closed(t);
	wal_flight_thread_finished(t);
	wal_thread_dir_close(t);
}

/* ---- retention (--max-disk-mb) ---- */

/* The index and detail files, as the drain counts them while it writes. */
static uint64_t drain_counted_bytes(struct ada_recorder *r)
{
	return r->budget.disk_closed + r->budget.detail_open + ada_wal_io_open_bytes(r->io);
}

static uint64_t drain_disk_bytes(struct ada_recorder *r)
{
	return drain_counted_bytes(r) + r->budget.side_bytes;
}

static void drain_budget_audit(struct ada_recorder *r)
{
	if (r->budget.audit_on)
		wal_budget_audit(r, drain_counted_bytes(r));
}

void wal_kill_point(const char *name)
{
	static const char *at;
	static size_t len;
	static unsigned long nth = 1;
	static bool read;
	if (!read) {
		/* NAME, or NAME@N: its Nth pass */
		at = getenv("ADA_TEST_KILL_AT");
		const char *c = at ? strchr(at, '@') : NULL;
		len = at ? (c ? (size_t)(c - at) : strlen(at)) : 0;
		nth = c ? strtoul(c + 1, NULL, 10) : 1;
		read = true;
	}
	if (at && !strncmp(at, name, len) && !name[len] && --nth == 0)
		raise(SIGKILL);
}

/* Finalizes t's current file as index.g<G>.atf and opens a new index.atf. */
static void drain_rotate(struct ada_recorder *r, struct wal_thread *t)
{
	struct ada_wal_file_summary s;
	bool cut = t->budget_cut;
	t->budget_cut = false;
	/* A process with a file to rotate is no short one: its manifest names
	 * its arena now, so `ada recover` can drain the ring should the
	 * recorder die in the middle (drain_early_manifest waits 20 ms). */
	drain_early_manifest(r, t->p, UINT64_MAX);
	if (r->o.detail_mode == ADA_DETAIL_ALWAYS) {
		wal_detail_settle(t);
		wal_detail_persist(r, t, 0, UINT64_MAX, NULL);
	}
	wal_flight_thread_end(r, t, drain_budget_thread_end_room(r, t));
	t->budget_cut = false; /* a mark that room's hold put on this file: it ends now */
	drain_budget_audit(r);
	/* detail.atf -> detail.g<G>.atf */
	uint64_t detail_bytes = wal_detail_close(r, t, t->next_gen);
	ada_wal_file_finalize(t->f, &s);
	t->f = NULL;
	drain_count_file(t, &s);
	t->lost += s.lost;
	r->lost_total += s.lost;
	/* Everything taken is on disk now: give the ring its space back. */
	ada_index_ring_release(t->p->arena, t->slot, t->pending);
	t->pending = t->lost_pending = t->file_released = 0;
	char to[64];
	snprintf(to, sizeof(to), "index.g%u.atf", t->next_gen);
	/* Grown (the old array gone) whether or not the rename is done; no
	 * room for its entry: not renamed (a generation on disk the list does
	 * not know would never be deleted, nor listed). */
	void *arr = drain_grow(t->gens, &t->capgens, t->ngens + 1, sizeof(*t->gens));
	if (arr)
		t->gens = arr;
	int dfd = wal_thread_dir(t);
	if (arr && renameat(dfd, "index.atf", dfd, to) == 0) {
		wal_kill_point("rotate_renamed"); /* no index.atf until the next one */
		t->gens[t->ngens++] = (struct wal_gen){
		    .t = t,
		    .g = t->next_gen,
		    .bytes = s.bytes,
		    .events = s.events,
		    .first_seq = t->base_seq,
		    .t0 = s.time_start_ns,
		    .t1 = s.time_end_ns,
		    .detail_bytes = detail_bytes,
		    .encoding = s.encoding,
		    .cut = cut,
		};
		t->next_gen++;
		r->budget.disk_closed += wal_round_block(s.bytes) + detail_bytes;
	} else {
		unlinkat(dfd, "index.atf", 0); /* cannot keep it as a generation: retire it now */
		snprintf(to, sizeof(to), "detail.g%u.atf", t->next_gen);
		unlinkat(dfd, to, 0); /* and its detail file with it */
		t->retired_events += s.events;
		t->retired_bytes += s.bytes;
		t->retired_gens++;
		wal_budget_retired(r, s.events, s.bytes);
		wal_retention_save(t->p, t);
		/* Its G is used up all the same: every index.atf has a file
		 * generation of its own (the ring table's records, ring_table.c). */
		t->next_gen++;
	}
	t->base_seq += s.events;
	int rc = drain_thread_file(r, t, -1);
	if (rc < 0) {
		if (!drain_fd_limit(r, t, rc) && !r->error && rc != -ENOSPC)
			r->error = rc;
	}
}

/* What the budget has left for segments allocated ahead (segment.c
 * wal_grow_ahead): only room no event needs yet. */
static void drain_ahead_room(struct ada_recorder *r)
{
	uint64_t used = drain_disk_bytes(r);
	if (r->o.max_disk_bytes)
		ada_wal_io_set_ahead_room(
		    r->io, used < r->o.max_disk_bytes ? r->o.max_disk_bytes - used : 0);
}

#define DRAIN_WINDOW_PASS_ROOM (4ull << 20)

/* Deletes the oldest data until room bytes are free below the budget,
 * besides the side files' margin (what they may grow by before the next
 * scan). The files being written count too: threads writing at once may
 * fill the budget with their current files, each below the rotation size
 * (a quarter of the budget, half as much again while a window waits),
 * and no older file would be left to delete. So when the finished files
 * left (disk_closed: the generations and finished threads' last files,
 * every one of them deletable) are not enough for the room and what the
 * budget keeps ahead (budget.c wal_budget_ahead: what the threads may
 * write before their next drain, a thread end's room while a window is
 * open), the largest current files are marked to end early, at
 * their thread's next drain (drain_slot: in its process's arena guard,
 * as ending a file reads the arena), each then a generation the budget
 * deletes when, and only when, it is the oldest file and room is needed.
 * Said when even the files marked could not bring the session within its
 * budget: the files being written and those never deleted are over it by
 * themselves. While a trigger window is open too: a file ended then
 * writes its windows' part of its detail ring at once, before it is a
 * generation to delete, so the room for that is kept ahead and the end
 * writes no more than what is left (drain_budget_thread_end_room). */
static void drain_budget_hold_room(struct ada_recorder *r, uint64_t room)
{
	uint64_t max = r->o.max_disk_bytes;
	bool left = true;
	room += r->budget.side_margin;
	while (left && drain_disk_bytes(r) + room > max)
		left = wal_retire_oldest(r);
	uint64_t used = drain_disk_bytes(r), have = max + r->budget.disk_closed;
	/* The marks' walk of every thread: once a pass for the holds after
	 * each thread's writes (room 0), at each hold for a room asked; only
	 * near the budget (max / 2 + max / 16: the most wal_budget_ahead asks). */
	if (used + room + max / 2 + max / 16 > have &&
	    (room > r->budget.side_margin || r->budget.cut_pass != r->bell.passes)) {
		uint64_t want = used + room + wal_budget_ahead(r);
		r->budget.cut_pass = r->bell.passes;
		uint64_t marked = want > have ? wal_budget_cut(r, want - have) : 0;
		if (!left && used > max && marked < used - max)
			wal_budget_overrun(r);
	}
	wal_manifests_restale(r);
	drain_ahead_room(r);
}

/* Deletes the session's oldest files until it is within its budget. */
static void drain_budget_hold(struct ada_recorder *r)
{
	drain_budget_hold_room(r, 0);
}

/* Before the windows' persist of a pass (flight.c, up to FLIGHT_PASS_BYTES
 * of detail): room for it is made first, so that the session stays
 * within its budget while the pass writes, not only after it; the pass
 * writes no more than that room (flight.pass_room). An eighth of the
 * budget at most: a small budget keeps most of its room for data. */
static void drain_budget_window_room(struct ada_recorder *r)
{
	if (!r->o.max_disk_bytes || r->o.detail_mode != ADA_DETAIL_TRIGGERED)
		return;
	/* No window yet: nothing to persist, no room to make (an eighth of
	 * the budget deleted for it cost pipeline_maxdisk an older
	 * generation); one fired by the tick's manual fires waits for the
	 * next pass's room (1: no record fits). */
	if (!ada_trigger_window_count(r->flight.trig) && !r->flight.backlog) {
		r->flight.pass_room = 1;
		return;
	}
	uint64_t room = r->o.max_disk_bytes / 8;
	room = room < DRAIN_WINDOW_PASS_ROOM ? room : DRAIN_WINDOW_PASS_ROOM;
	drain_budget_hold_room(r, room + WAL_FILE_ENDS);
	/* Nothing old left to delete: only what is left (1: no record fits,
	 * the windows wait for a later pass). */
	uint64_t used = drain_disk_bytes(r) + WAL_FILE_ENDS;
	uint64_t left = used < r->o.max_disk_bytes ? r->o.max_disk_bytes - used : 0;
	r->flight.pass_room = left < room ? (left ? left : 1) : room;
}

/* Before a thread's file ends (finalized, rotated, or ended early by the
 * budget) with a window open: the windows take their part of its detail
 * ring at once, with no pass (flight.c wal_flight_thread_end), up to the
 * whole ring; room for that is made first (a quarter of the budget at
 * most). Returns the detail bytes the end may write: what is left below
 * the budget once the oldest data went, less the files' ends
 * (UINT64_MAX: no budget or no window). A record past it is counted
 * (the window's disk_budget), never written over the budget: with
 * nothing finished left to delete, the end of a file being written has
 * only the free room (budget.c wal_budget_ahead keeps it ahead, so this
 * is rare). */
static uint64_t drain_budget_thread_end_room(struct ada_recorder *r, struct wal_thread *t)
{
	uint64_t max = r->o.max_disk_bytes;
	if (!max || !t->p->arena || !wal_window_open(r))
		return UINT64_MAX;
	drain_budget_hold_room(r, wal_budget_end_room(r, t->p));
	/* The side files' margin too, as the hold keeps it: what they may
	 * grow by before the next scan counts them. */
	uint64_t used = drain_disk_bytes(r) + WAL_FILE_ENDS + r->budget.side_margin;
	return used < max ? max - used : 0;
}

static void drain_enforce_budget(struct ada_recorder *r, struct wal_thread *t)
{
	if (!r->o.max_disk_bytes)
		return;
	/* A generation is its index and detail files: under --detail always
	 * the detail file can be many times the index file. */
	uint64_t bytes = t->f ? wal_budget_current_bytes(t) : 0;
	if (t->f && (t->budget_cut || (bytes >= r->budget.gen_bytes &&
	                               !wal_flight_rotate_later(r, t, bytes, r->budget.gen_bytes))))
		drain_rotate(r, t);
	drain_budget_hold(r);
	if (t->f && t->budget_cut) { /* marked by that hold: here, in its arena's guard */
		drain_rotate(r, t);
		drain_budget_hold(r);
	}
}

/* The end, every file final and every process's directory scanned once
 * more when it finished: what a side file written after the last scan of
 * the run (a program shorter than the scans' spacing) or a last file's
 * tail put past the budget is taken back as during the run, oldest
 * generation first, and the manifests say so. Without it a finished
 * session could end over its budget by what the last scans missed. */
static void drain_budget_final(struct ada_recorder *r)
{
	if (!r->o.max_disk_bytes)
		return;
	/* Symbol files deleted change the link counts, so the shares, of the
	 * links other finished processes hold: every directory again, and
	 * again after a pass that deleted some (a few passes at most: each
	 * one deletes only while over the budget). */
	for (int pass = 0; pass < 8; pass++) {
		uint64_t syms = r->budget.retired_syms;
		for (size_t i = 0; syms && i < r->nprocs; i++)
			r->procs[i]->side_final = false;
		wal_budget_scan(r);
		while (drain_disk_bytes(r) > r->o.max_disk_bytes)
			if (!wal_retire_oldest(r)) {
				wal_budget_overrun(r);
				break;
			}
		if (r->budget.retired_syms == syms)
			break;
	}
	wal_manifests_restale(r); /* their retention counts changed */
}

/* The side files' scan: soon after the start (a short program's symbol
 * files count before its index fills the budget), then less often, once
 * a second at most. */
static void drain_budget_scan_due(struct ada_recorder *r, uint64_t now)
{
	if (now - r->budget.scan_ns < r->budget.scan_every)
		return;
	wal_budget_scan(r);
	/* A finished process's files count from this scan on, whether or
	 * not a live thread writes (which applies the budget too). */
	if (r->o.max_disk_bytes)
		drain_budget_hold(r);
	wal_retire_procs(r, true); /* every process the budget emptied */
	r->budget.scan_ns = now;
	r->budget.scan_every =
	    r->budget.scan_every * 2 < DRAIN_TICK_NS ? r->budget.scan_every * 2 : DRAIN_TICK_NS;
}

/* ---- slots ---- */

/* Releases the ring events whose writes completed (in order), and the
 * lost ones behind them once everything before is durable. */
static void drain_release(struct wal_proc *p, struct wal_thread *t)
{
	if (!t->pending)
		return;
	uint64_t n = t->pending;
	if (t->f) {
		uint64_t staged = ada_wal_file_events(t->f) - t->file_released;
		uint64_t durable = ada_wal_file_durable(t->f) - t->file_released;
		n = durable < staged ? durable : staged + t->lost_pending;
		t->file_released += durable < staged ? durable : staged;
		if (durable >= staged)
			t->lost_pending = 0;
	}
	if (n == 0)
		return;
	wal_kill_point("ring_release"); /* written, not released: recover skips them */
	ada_index_ring_release(p->arena, t->slot, n);
	t->pending -= n;
}

/* A thread refused a directory (thread-directory rate): its events are
 * released unread and counted, so its producer never waits for them. */
static size_t drain_discard(struct wal_proc *p, struct wal_thread *t)
{
	size_t total = 0;
	const struct atf_index_event *ev;
	size_t k;
	while ((k = ada_index_ring_peek(p->arena, t->slot, &ev)) > 0) {
		ada_index_ring_release(p->arena, t->slot, k);
		p->rec_drops[ADA_LANE_INDEX][t->refuse_why] += k;
		total += k;
		if (total >= p->ring_events)
			break; /* one ring's worth per pass, like everyone */
	}
	return 0;
}

/* Takes the ring events after the ones already taken (pending). The peek
 * starts at tail, so taken-but-unreleased events come first; at the wrap
 * point nothing new is visible until they are released. */
static size_t drain_take(struct ada_recorder *r, struct wal_proc *p, struct wal_thread *t,
                         const struct ada_slot_info *si, size_t budget)
{
	size_t total = 0;
	if (t->refused)
		return drain_discard(p, t);
	while (total < budget) {
		const struct atf_index_event *ev;
		size_t k = ada_index_ring_peek(p->arena, t->slot, &ev);
		if (k <= t->pending) {
			/* Blocked at the wrap (or empty): hurry the writes along.
			 * So too for an ended thread's last events: written now,
			 * not when the staged buffer goes stale (5 ms), so that
			 * its ring space comes back and the reclaim frees its
			 * slot for the next thread at once; a thread per request
			 * otherwise found its predecessor's slot still held and
			 * took another, cycling over 6-8 slots whose first laps
			 * each cost its threads pages (issue 32 item 1). */
			if (t->pending && t->f &&
			    (si->head - si->tail > t->pending || si->state == ADA_SLOT_EXITED))
				ada_wal_file_submit(t->f);
			break;
		}
		size_t n = k - (size_t)t->pending;
		if (n > budget - total)
			n = budget - total;
		size_t kept = drain_convert(r, t, ev + t->pending, n);
		t->pending += kept;
		t->ring_next += kept;
		total += kept;
		if (kept < n)
			break; /* quarantined at a bad event */
	}
	/* A quarter of the ring waits for its write: send the staged buffer
	 * now rather than when it fills, or the producer would stall on a
	 * small ring (space comes back only once the write completed). Its
	 * whole blocks only on a direct file: a padded last block would make
	 * the next write wait for this one (segment.c, "Direct writes"); the
	 * stale submit, the wrap's and finalize's write it. */
	if (t->f && t->pending * 4 >= p->ring_events)
		ada_wal_file_submit_blocks(t->f);
	return total;
}

/* The slot broke the protocol: report it once, and finalize its thread
 * with the events taken so far (they are in its staging buffers). */
static void drain_quarantine(struct ada_recorder *r, struct wal_proc *p, uint32_t s)
{
	struct wal_thread *t = p->by_slot[s];
	wal_note_quarantine(r, p, s, t, t ? t->pending : 0);
	if (t) {
		drain_thread_finalize(r, t);
		p->by_slot[s] = NULL;
	}
	/* No more persists from this slot: a thread waiting for detail room
	 * (--detail always) must not wait out the drain timeout for them.
	 * After the finalize, whose last persist publishes its own decided
	 * (arena_trust_decided caught it overwriting this one). */
	ada_detail_ring_set_decided(p->arena, s, UINT64_MAX);
}

size_t drain_slot(struct ada_recorder *r, struct wal_proc *p, uint32_t s, size_t budget)
{
	struct ada_slot_info si;
	if (ada_slot_read_checked(p->arena, s, &si) != 0) {
		if (!p->slot_noted[s])
			drain_quarantine(r, p, s);
		return 0;
	}
	if (si.state == ADA_SLOT_FREE)
		return 0;
	p->fill_max = si.fill_pct > p->fill_max ? si.fill_pct : p->fill_max;
	drain_note_room(r, p, s, &si);
	struct wal_thread *t = p->by_slot[s];
	if (t && (t->seq != si.thread_seq || t->slot_gen != si.generation)) {
		/* Only after our own free (drain_reclaim() forgets the thread
		 * then); ada_slot_read_checked() rejects any other change. */
		drain_thread_finalize(r, t);
		p->by_slot[s] = t = NULL;
	}
	if (si.head == si.tail && !t)
		return 0;
	if (!t) {
		if (drain_seq_taken(p, si.thread_seq)) {
			ada_slot_quarantine(p->arena, s, ADA_FAULT_SEQ_REUSED, si.thread_seq, 0, 0);
			drain_quarantine(r, p, s);
			return 0;
		}
		t = drain_thread_new(r, p, s, &si);
		/* Alive: a pass that starts files for hundreds of new threads
		 * must not look like a dead recorder to a producer waiting
		 * meanwhile (its drain timeout, ring.h). */
		ada_arena_drain_heartbeat(p->arena);
		if (!t)
			return 0;
		drain_slot_touch(p, s);
		p->by_slot[s] = t;
	}
	uint64_t ns_per_kev = drain_note_fill(r, p, s, t, &si);
	drain_release(p, t);
	/* --detail always: the buffers this take fills wait for the persist
	 * below, which links their events' records while they are still in
	 * memory (wal_file_hold) rather than by one pwrite per event once
	 * their write completed. */
	bool always = r->o.detail_mode == ADA_DETAIL_ALWAYS;
	if (always && t->f)
		wal_file_hold(t->f, true);
	size_t total = drain_take(r, p, t, &si, budget);
	/* Writes the take sent that completed already (a tmpfs file's, done
	 * in this thread): their ring space back before the nap. */
	drain_release(p, t);
	drain_note_room_after(r, p, s, total >= budget, ns_per_kev);
	drain_sync_waits(t);
	if (ada_unlikely(ada_slot_fault(p->arena, s, NULL)))
		drain_quarantine(r, p, s); /* finalizes t: no more detail from it */
	else if (always && t->f)
		/* --detail always: every record whose index event is now taken. */
		wal_detail_persist(r, t, 0, UINT64_MAX, NULL);
	if (always && t->f)
		wal_file_hold(t->f, false);
	else if (always)
		/* No index file, so no persist: nothing to wait for. */
		ada_detail_ring_set_decided(p->arena, s, UINT64_MAX);
	p->events += total;
	r->events_total += total;
	if ((total || t->budget_cut) && t->f) /* marked: ended even when idle */
		drain_enforce_budget(r, t);
	wal_thread_dir_close(t);
	return total;
}

static size_t drain_proc(struct ada_recorder *r, struct wal_proc *p, size_t budget)
{
	size_t n = 0;
	uint32_t used = ada_arena_slots_used(p->arena); /* spill slots never claimed: skipped */
	for (uint32_t s = 0; s < used; s++)
		if (!ada_slot_idle(p->arena, s)) /* free, as last seen: drain_slot() returns 0 */
			n += drain_slot(r, p, s, budget);
	ada_arena_drain_heartbeat(p->arena);
	return n;
}

/* EXITED slots whose thread is gone and ring is empty: finalize, free
 * (unless kept for the pre-roll: drain_keep_ended). Returns the EXITED
 * slots left that were not kept (thread not gone yet, ring not empty). */
static uint32_t drain_reclaim(struct ada_recorder *r, struct wal_proc *p)
{
	uint32_t used = ada_arena_slots_used(p->arena), waiting = 0;
	struct drain_keep keep = {.free_full = -1};
	for (uint32_t s = 0; s < used; s++) {
		struct ada_slot_info si;
		if (ada_slot_read_checked(p->arena, s, &si) != 0 || si.state != ADA_SLOT_EXITED)
			continue;
		if (!ada_arena_slot_reclaimable(p->arena, s)) {
			waiting++;
			continue;
		}
		struct wal_thread *t = p->by_slot[s];
		if (t && t->seq == si.thread_seq && drain_keep_ended(r, p, t, &keep))
			continue; /* its detail may still be wanted: freed later */
		if (keep.free_full >= 0 && s < ada_arena_config_of(p->arena)->max_threads)
			keep.free_full++; /* freed below */
		if (t && t->seq == si.thread_seq) {
			drain_thread_finalize(r, t);
			p->by_slot[s] = NULL;
		}
		ada_arena_slot_free(p->arena, s);
		ada_arena_drain_heartbeat(p->arena); /* alive: as in drain_slot() */
	}
	return waiting;
}

/* ---- metrics ---- */

/* How many seconds of detail each live ring holds, for `ada status`. */
static void drain_detail_spans(struct ada_recorder *r, struct wal_proc *p)
{
	if (!ada_arena_config_of(p->arena)->detail_bytes)
		return;
	uint32_t used = ada_arena_slots_used(p->arena);
	for (uint32_t s = 0; s < used; s++) {
		struct wal_thread *t = p->by_slot[s];
		uint64_t o, n;
		if (t && !t->done && wal_detail_ring_span(r, t, &o, &n) == 0) {
			ada_arena_slot_set_detail_span(p->arena, s, n - o);
			t->detail_span_ns = n - o;
		}
	}
}

static void drain_tick_proc(struct ada_recorder *r, struct wal_proc *p, double dt, uint64_t p50,
                            uint64_t p99)
{
	struct ada_metrics *m = ada_arena_metrics(p->arena);
	/* for the live view's warnings (live.c), which reads no arena */
	p->mlock_refused |= (ada_arena_flags(p->arena) & ADA_ARENA_F_MLOCK_FAILED) != 0;
	wal_drops_read(r, p); /* checked: p->drops */
	wal_drops_fold(r, p);
	drain_detail_spans(r, p);
	uint64_t(*d)[ADA_DROP_REASON_COUNT] = p->drops;
	uint64_t rate = (uint64_t)((double)(p->events - p->events_at_tick) / dt);
	atomic_store_explicit(&m->events_per_sec[ADA_LANE_INDEX], rate, memory_order_relaxed);
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
		uint64_t sum = d[0][k] + d[1][k], prev = p->drops_at_tick[0][k];
		atomic_store_explicit(&m->drops_per_sec[k], (uint64_t)((double)(sum - prev) / dt),
		                      memory_order_relaxed);
		p->drops_at_tick[0][k] = sum;
	}
	atomic_store_explicit(&m->ring_fill_pct_max, p->fill_max, memory_order_relaxed);
	atomic_store_explicit(&m->batch_latency_ns_p50, p50, memory_order_relaxed);
	atomic_store_explicit(&m->batch_latency_ns_p99, p99, memory_order_relaxed);
	atomic_store_explicit(&m->events_written[ADA_LANE_INDEX], p->events - wal_proc_lost(p),
	                      memory_order_relaxed);
	uint64_t ib, ie;
	wal_proc_index_bytes(p, &ib, &ie);
	double cb = ie ? 100.0 * (double)ib / (double)ie + 0.5 : 0;
	atomic_store_explicit(&m->index_centibytes_per_event, cb < 4e9 ? (uint32_t)cb : UINT32_MAX,
	                      memory_order_relaxed);
	p->events_at_tick = p->events;
	p->fill_last = p->fill_max;
	p->fill_max = 0;
}

static void drain_tick(struct ada_recorder *r, uint64_t now)
{
	double dt = (double)(now - r->last_tick_ns) / 1e9;
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	uint64_t p50 = ada_lat_hist_quantile(h, 0.5), p99 = ada_lat_hist_quantile(h, 0.99);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (!p->finished)
			WAL_GUARDED(p->arena, drain_tick_proc(r, p, dt, p50, p99),
			            drain_arena_lost(r, p, 0));
		if (!p->finished && !p->gone && !p->vanished)
			wal_exec_watch(r, p, now);
	}
	r->last_tick_ns = now;
	wal_live_publish(r, true, false);
	wal_heap_tick(r);
}

void drain_clock_anchor(struct ada_recorder *r, uint64_t counter, uint64_t ns, uint64_t mult)
{
	if (ada_tsc_clock_ready(&r->clk)) {
		(void)ada_tsc_clock_sample(&r->clk, counter, ns); /* an older one adds nothing */
		return;
	}
	struct ada_tsc_map m = {.tsc0 = counter, .ns0 = ns, .mult = mult, .shift = 32};
	ada_tsc_clock_set(&r->clk, &m);
}

static void drain_clock(struct ada_recorder *r)
{
	if (!r->use_tsc || r->foreign_counter)
		return;
	uint64_t tsc, ns;
	ada_tsc_sample_pair(&tsc, &ns);
	ada_tsc_clock_sample(&r->clk, tsc, ns);
}

/* ---- the loop ---- */

static void drain_setup(struct ada_recorder *r)
{
	if (r->o.drain_cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(r->o.drain_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			json_array_append_new(
			    r->warnings,
			    json_string("--drain-cpu: could not pin the drain thread"));
	}
	if (r->use_tsc && !r->foreign_counter) {
		/* Calibrate before the first conversion; the rings hold what the
		 * program emits meanwhile. */
		while (!ada_tsc_clock_ready(&r->clk)) {
			usleep(1000);
			drain_clock(r);
		}
		/* Measured: the next recording of this boot starts from it. A
		 * cache that cannot be written costs that one wait again. */
		if (r->tsc_calib == ADA_TSC_MEASURED)
			(void)ada_tsc_cache_store(NULL, r->clk.maps[0].mult);
	}
	uint64_t now = wal_now_ns();
	r->last_tick_ns = r->last_anchor_ns = r->last_reclaim_ns = now;
	r->budget.scan_ns = now;
	r->budget.scan_every = DRAIN_RECLAIM_NS;
	wal_budget_audit_init(r);
}

/* One process's share of a pass, with its arena's reads guarded. */
static size_t drain_proc_guarded(struct ada_recorder *r, struct wal_proc *p, bool reclaim)
{
	volatile size_t n = 0; /* read after a longjmp */
	WAL_GUARDED(
	    p->arena,
	    {
		    n = drain_proc(r, p, DRAIN_SLOT_BUDGET);
		    wal_fork_files_take(r, p); /* a forked child's files, once noted */
		    /* Its notes of children it reaped: read before the pass's
		     * drain_check_gone() judges any process. */
		    wal_wait_notes_take(r, p, false);
		    bool wanted = ada_arena_take_slot_wanted(p->arena) || reclaim;
		    if (drain_reclaim_due(p) || wanted)
			    drain_reclaim_done(p, drain_reclaim(r, p));
		    drain_prepare_slots(p, wanted);
	    },
	    drain_arena_lost(r, p, 0));
	return n;
}

static bool drain_pass(struct ada_recorder *r)
{
	size_t busy = 0;
	drain_bell_pass(r); /* before its looks: a wake asked later is seen */
	uint64_t now = wal_now_ns(), size;
	/* New arenas' names, and every tick those of a maker without the
	 * budget page (it could not count them): a new name, no idle wait. */
	bool names = drain_names(r, now - r->last_tick_ns >= DRAIN_TICK_NS);
	/* Dead children: a waitpid each pass is a syscall that a pass of a
	 * few thousand events does not need; once per DRAIN_POLL_NS while
	 * the rings keep the drain busy, every pass otherwise (an idle pass
	 * has nothing else to do, and the end of a recording is found at
	 * once). A child reaped a little later loses nothing (its rings hold
	 * its events) and its pid stays its own meanwhile (a zombie). New
	 * arenas are read every pass: an arena admitted later leaves its pid
	 * longer for another process to take before the drain looks. */
	bool poll = !r->pass_events || now - r->last_poll_ns >= DRAIN_POLL_NS;
	if (poll)
		r->last_poll_ns = now;
	r->pass_room_min = UINT64_MAX;
	r->pass_room_after = UINT64_MAX;
	r->pass_slow_ns = UINT64_MAX;
	r->pass_fill_ns = UINT64_MAX;
	drain_ahead_room(r); /* side files' sizes move between passes */
	bool reclaim_all = now - r->last_reclaim_ns >= DRAIN_RECLAIM_NS;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (p->finished)
			continue;
		if (reclaim_all && drain_arena_shrunk(p, &size))
			drain_arena_lost(r, p, size);
		else
			busy += drain_proc_guarded(r, p, reclaim_all);
		drain_early_manifest(r, p, now);
	}
	drain_budget_window_room(r);
	wal_flight_after_pass(r);
	drain_budget_audit(r);
	if (r->o.max_disk_bytes)
		drain_budget_hold(r); /* what the windows wrote, before the next pass */
	/* Those the budget emptied, their manifests current: here, where no
	 * loop over the processes runs (retiring one leaves r->procs). */
	wal_retire_procs(r, false);
	ada_wal_io_submit_stale(r->io, false);
	ada_wal_io_reap(r->io, false);
	/* Attached: no child of ours to reap, and waitpid(-1) would take the
	 * ptrace stops of the process ada attach holds (a tracee is every
	 * tracer thread's to wait for), which its thread waits for. */
	if (poll && !r->o.attached && drain_waitpids(r))
		drain_scan_dir(r); /* a dead process's arena may be new to us */
	drain_check_gone(r, false);
	if (reclaim_all) {
		r->last_reclaim_ns = now;
		wal_flight_tick(r);                /* manual fires, time ranges */
		wal_keysym_tick(r);                /* key-symbol sets: new spec, new modules */
		wal_vlog_tick(r);                  /* -v: modules, windows, processes */
		wal_live_publish(r, false, false); /* new windows: `ada status` sees them */
		wal_shm_held_tick(r);              /* refused arenas whose maker ended */
	}
	drain_budget_scan_due(r, now);
	if (now - r->last_tick_ns >= DRAIN_TICK_NS) {
		wal_shm_tick(r);
		drain_tick(r, now);
		drain_clock(r);
	}
	r->pass_events = busy;
	drain_budget_audit(r);
	return busy > 0 || names;
}

/* After a busy pass, wait a little before the next one so that batches
 * grow. A back-to-back pass finds a few hundred events written a moment
 * ago on the producer's core (or none, where the drain shares the
 * producer's core: the producer did not run meanwhile), and pays per
 * event for pulling those lines across, for the pass itself and for its
 * wait (a wake-up costs the drain 15-20 us of CPU in this VM); a nap of
 * DRAIN_NAP_US lowers the drain's CPU per event markedly
 * (docs/benchmarks.md, "Pacing and staging buffers" and "Naps after
 * large passes").
 *
 * The nap lasts as long as every ring read has room for at
 * DRAIN_NAP_EVENTS_PER_US from its thread (DRAIN_NAP_US at most, none
 * below DRAIN_NAP_MIN_US), the room counted once the pass took and
 * released what it could (drain_note_room_after(): the events the
 * producer wrote during the pass, those past a wrap point and those taken
 * but not yet written all count as used); none while a ring is filled to
 * its high watermark or a take stopped at its budget (a drain or a disk
 * that cannot keep up: napping there costs drain CPU in wake-ups). So a
 * pass that took many events naps too, once it has caught up (napping
 * only after a pass of fewer than 8 192 events, with the room its rings
 * had before it, left a large pass followed by an immediate one that
 * mostly found nothing, and a wait of its own). A rule that wanted
 * every ring nearly empty never passed with a default ring and a staging
 * buffer waiting for its write, and the drain ran many times more passes
 * than needed. A sleep, not a wait for completions: the rings have room,
 * and a completion per staging buffer cut every nap short. Not once the
 * program is gone or a stop was asked: the end stays quick. */
static void drain_nap(struct ada_recorder *r)
{
	uint64_t us = r->pass_room_after / DRAIN_NAP_EVENTS_PER_US;
	if (us > DRAIN_NAP_US)
		us = DRAIN_NAP_US;
	us = drain_nap_slow(r, us, DRAIN_NAP_US);
	if (us < DRAIN_NAP_MIN_US || r->main_reaped ||
	    /* relaxed: a hint, drain_stop_now() reads it again after the nap */
	    atomic_load_explicit(&r->stop_req, memory_order_relaxed))
		return;
	struct timespec ts = {0, (long)(us * 1000)};
	nanosleep(&ts, NULL);
}

/* Notes of reaped children read after the last manifest was written
 * (the reaper's table read late, under load): the program's manifest, or
 * the last finished one's, is written again to count them. */
static void drain_restate_wait_notes(struct ada_recorder *r)
{
	struct wal_proc *last = NULL;
	for (size_t i = 0; i < r->nprocs && wal_wait_notes_unshown(r); i++)
		if (r->procs[i]->finished && (!last || last->pid != r->main_pid))
			last = r->procs[i];
	if (last)
		wal_manifest_write(r, last, "complete");
}

/* A sentence of the whole recording (an arena refused, a reused pid)
 * told after a process's final manifest was written: that manifest is
 * written again, so its warnings and counts (shm.pid_reused_arenas) hold
 * everything the recording told. */
static void drain_restate(struct ada_recorder *r)
{
	size_t told = json_array_size(r->warnings);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		/* ... and those whose last write failed (the limit of open
		 * files, say: every arena is closed by now) */
		if (!p->finished || (p->man_warnings >= told && !p->manifest_failed))
			continue;
		if (p->dir_fd < 0 && p->dir_err) /* pid_N/ was made, not opened: the limit */
			(void)ada_fs_mkdir(r->session_fd, strrchr(p->dir, '/') + 1, 0, &p->dir_fd);
		wal_manifest_write(r, p, "complete");
	}
	drain_restate_wait_notes(r);
}

void *wal_drain_main(void *arg)
{
	struct ada_recorder *r = arg;
	uint32_t idle_us = DRAIN_IDLE_MIN_US;
	drain_setup(r);
	wal_live_publish(r, true, false); /* `ada status` answers from the start */
	wal_guard_install();
	drain_scan_dir(r);
	for (;;) {
		bool busy = drain_pass(r);
		if (drain_done(r) || drain_stop_now(r))
			break;
		if (r->main_reaped && !r->o.follow) {
			drain_check_gone(r, true); /* --no-follow: the others go too */
			continue;
		}
		/* Idle: back off from 50 us to 1 ms; with writes in flight, a
		 * completion (ring space to release) ends the wait early. */
		idle_us = busy ? DRAIN_IDLE_MIN_US : idle_us * 2;
		if (idle_us > DRAIN_IDLE_MAX_US)
			idle_us = DRAIN_IDLE_MAX_US;
		if (drain_sleep(r, busy, idle_us))
			continue; /* every ring idle: slept until rung or a timer */
		if (!busy)
			ada_wal_io_wait(r->io, idle_us);
		else
			drain_nap(r);
	}
	drain_end_pause();
	wal_shm_end(r); /* no arena from now on: the scan below sees them all */
	drain_scan_dir(r);
	drain_check_gone(r, true);
	ada_wal_io_submit_stale(r->io, true);
	wal_spares_stop(r->spares); /* every thread has its files: none left before the scans */
	drain_budget_final(r);
	drain_restate(r);
	if (r->o.max_disk_bytes) { /* the processes the end emptied, scanned */
		wal_budget_scan(r);
		wal_retire_procs(r, true);
	}
	while (ada_wal_io_reap(r->io, true) > 0)
		;
	drain_tick(r, wal_now_ns());
	wal_live_publish(r, true, true);
	wal_vlog_tick(r); /* the last modules, ends and windows */
	wal_budget_audit_end(r);
	r->end_ns = wal_now_ns();
	struct timespec cpu; /* for benchmarks: the drain's share of the recorder */
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		r->drain_cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
	return NULL;
}
