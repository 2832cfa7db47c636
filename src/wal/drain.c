/*
 * The drain: the recorder's one thread that empties every ring of every
 * arena of the session into thread_K/index.atf files.
 *
 * Threads: the drain thread only; it owns every wal_proc / wal_thread and
 * the ada_wal_io. It is the single consumer of every index ring (ring.h).
 *
 * One pass: pick up new arenas (inotify on the arena directory, plus a
 * rescan whenever a process is reaped, since an arena may appear and its
 * process die between two passes); for each live slot peek the ring,
 * convert TSC -> CLOCK_BOOTTIME straight into the file's staging buffer,
 * release the ring; submit stale buffers and reap completions; reap dead
 * children (waitpid: we are a child subreaper, so every descendant ends up
 * ours); a process that is gone is drained one last time and finalized.
 * Slow cadence (10 ms): free EXITED slots whose thread is gone; 1 s:
 * metrics, TSC re-anchor.
 * Invariants: a slot's events are consumed in ring order and appended in
 * that order; a thread's output timestamps never decrease (clamped); a ring
 * position is released only after its events are in a staging buffer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"
#include "wal_internal.h"

#define DRAIN_SLOT_BUDGET (1u << 18) /* events per slot per pass: fairness */
#define DRAIN_IDLE_MIN_US 50u
#define DRAIN_IDLE_MAX_US 1000u
#define DRAIN_TICK_NS 1000000000ull
#define DRAIN_RECLAIM_NS 10000000ull

static uint64_t drain_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *drain_grow(void *arr, size_t *cap, size_t need, size_t elem)
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

/* thread_K/.ring_base: which ring positions the unfinished index.atf holds
 * (file event i = ring position base + i of that slot and generation), so
 * `ada recover` can tell the events on disk from those still in the ring.
 * Removed once the file is final. */
static void drain_sidecar(struct wal_thread *t, bool create)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/.ring_base", t->dir);
	if (!create) {
		unlink(path);
		return;
	}
	FILE *fp = fopen(path, "we");
	if (!fp)
		return;
	fprintf(fp, "slot %u generation %u base %llu\n", t->slot, t->slot_gen,
	        (unsigned long long)t->ring_next);
	fclose(fp);
}

static int drain_thread_file(struct ada_recorder *r, struct wal_thread *t)
{
	char path[PATH_MAX];
	drain_sidecar(t, true);
	snprintf(path, sizeof(path), "%s/index.atf", t->dir);
	struct ada_wal_file_opts fo = {
	    .thread_id = t->tid,
	    .clock_type = ATF_CLOCK_BOOTTIME,
	    .arch = WAL_ARCH,
	    .segment_bytes = r->o.segment_bytes,
	    .flush = r->o.flush,
	};
	return ada_wal_file_open(r->io, path, &fo, &t->f);
}

static struct wal_thread *drain_thread_new(struct ada_recorder *r, struct wal_proc *p,
                                           uint32_t slot, const struct ada_slot_info *si)
{
	struct wal_thread *t = calloc(1, sizeof(*t));
	void *arr = drain_grow(p->threads, &p->capthreads, p->nthreads + 1, sizeof(*p->threads));
	if (!t || !arr)
		goto err;
	p->threads = arr;
	t->p = p;
	t->seq = si->thread_seq;
	t->tid = si->tid;
	t->slot = slot;
	t->slot_gen = si->generation;
	t->ring_next = si->tail;
	if (asprintf(&t->dir, "%s/thread_%u", p->dir, t->seq) < 0) {
		t->dir = NULL;
		goto err;
	}
	int rc = wal_mkdir(t->dir);
	if (rc == 0)
		rc = drain_thread_file(r, t);
	if (rc < 0) {
		if (!r->error && rc != -ENOSPC)
			r->error = rc;
		/* No file (disk full): leave no empty thread directory behind;
		 * the thread's events are counted lost. */
		drain_sidecar(t, false);
		rmdir(t->dir);
		t->done = true;
	}
	p->threads[p->nthreads++] = t;
	return t;
err:
	free(t);
	if (!r->error)
		r->error = -ENOMEM;
	return NULL;
}

static void drain_thread_finalize(struct ada_recorder *r, struct wal_thread *t)
{
	if (t->f) {
		ada_wal_file_finalize(t->f, &t->last);
		t->f = NULL;
		t->lost += t->last.lost;
		r->lost_total += t->last.lost;
		r->disk_closed += t->last.bytes;
		drain_sidecar(t, false);
	}
	t->done = true;
}

/* The hot loop: copies k events, TSC -> ns, clamped to stay >= last.
 * Events on the newest piece of the clock (the usual case) use a local
 * copy of it, so nothing is reloaded per event (the stores to dst may
 * alias the clock as far as the compiler knows). */
static uint64_t drain_convert_run(const struct ada_recorder *r, const struct atf_index_event *src,
                                  struct atf_index_event *dst, size_t k, uint64_t last)
{
	const bool tsc = r->use_tsc;
	const struct ada_tsc_map m = r->clk.maps[r->clk.n ? r->clk.n - 1 : 0];
	for (size_t i = 0; i < k; i++) {
		/* The ring lines were just written on the producer's core: ask
		 * for them ahead (cache-to-cache misses dominate this loop). */
		__builtin_prefetch(&src[i + 16]);
		struct atf_index_event e = src[i];
		uint64_t ts = e.timestamp_ns;
		if (tsc)
			ts = ts >= m.tsc0 ? ada_tsc_map_apply(&m, ts)
			                  : ada_tsc_clock_to_ns(&r->clk, ts);
		ts = ts < last ? last : ts;
		last = ts;
		e.timestamp_ns = ts;
		dst[i] = e;
	}
	return last;
}

/* Converts n ring events into t's file; returns the events consumed. */
static size_t drain_convert(struct ada_recorder *r, struct wal_thread *t,
                            const struct atf_index_event *src, size_t n)
{
	size_t done = 0;
	while (done < n) {
		struct atf_index_event *dst;
		size_t k = t->f ? ada_wal_file_reserve(t->f, n - done, &dst) : 0;
		if (k == 0) { /* disk full or the file failed: count, keep going */
			t->lost += n - done;
			t->lost_pending += n - done;
			r->lost_total += n - done;
			return n;
		}
		t->last_ts = drain_convert_run(r, src + done, dst, k, t->last_ts);
		ada_wal_file_commit(t->f, k);
		done += k;
	}
	return done;
}

/* ---- retention (--max-disk-mb) ---- */

static uint64_t drain_disk_bytes(struct ada_recorder *r)
{
	uint64_t total = r->disk_closed;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		for (size_t j = 0; j < p->nthreads; j++)
			if (p->threads[j]->f)
				total += ada_wal_file_disk_bytes(p->threads[j]->f);
	}
	return total;
}

/* Finalizes t's current file as index.g<G>.atf and opens a new index.atf. */
static void drain_rotate(struct ada_recorder *r, struct wal_thread *t)
{
	struct ada_wal_file_summary s;
	ada_wal_file_finalize(t->f, &s);
	t->f = NULL;
	t->lost += s.lost;
	r->lost_total += s.lost;
	/* Everything taken is on disk now: give the ring its space back. */
	ada_index_ring_release(t->p->arena, t->slot, t->pending);
	t->pending = t->lost_pending = t->file_released = 0;
	char from[PATH_MAX], to[PATH_MAX];
	snprintf(from, sizeof(from), "%s/index.atf", t->dir);
	snprintf(to, sizeof(to), "%s/index.g%u.atf", t->dir, t->next_gen);
	void *arr = drain_grow(t->gens, &t->capgens, t->ngens + 1, sizeof(*t->gens));
	if (rename(from, to) == 0 && arr) {
		t->gens = arr;
		t->gens[t->ngens++] = (struct wal_gen){
		    .t = t,
		    .g = t->next_gen,
		    .bytes = s.bytes,
		    .events = s.events,
		    .first_seq = t->base_seq,
		    .t0 = s.time_start_ns,
		    .t1 = s.time_end_ns,
		};
		t->next_gen++;
		r->disk_closed += s.bytes;
	} else {
		unlink(from); /* cannot keep it as a generation: retire it now */
		t->retired_events += s.events;
		t->retired_bytes += s.bytes;
	}
	t->base_seq += s.events;
	int rc = drain_thread_file(r, t);
	if (rc < 0) {
		drain_sidecar(t, false);
		if (!r->error && rc != -ENOSPC)
			r->error = rc;
	}
}

/* Deletes the oldest generation of the session (by end time). */
static bool drain_retire_oldest(struct ada_recorder *r)
{
	struct wal_thread *bt = NULL;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			struct wal_thread *t = p->threads[j];
			if (t->ngens && (!bt || t->gens[0].t1 < bt->gens[0].t1))
				bt = t;
		}
	}
	if (!bt)
		return false;
	struct wal_gen g = bt->gens[0];
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/index.g%u.atf", bt->dir, g.g);
	unlink(path);
	memmove(&bt->gens[0], &bt->gens[1], sizeof(g) * (bt->ngens - 1));
	bt->ngens--;
	bt->retired_events += g.events;
	bt->retired_bytes += g.bytes;
	r->disk_closed -= g.bytes;
	return true;
}

static void drain_enforce_budget(struct ada_recorder *r, struct wal_thread *t)
{
	if (!r->o.max_disk_bytes)
		return;
	if (t->f && ada_wal_file_disk_bytes(t->f) >= r->gen_bytes)
		drain_rotate(r, t);
	while (drain_disk_bytes(r) > r->o.max_disk_bytes)
		if (!drain_retire_oldest(r)) {
			if (!r->budget_warned)
				json_array_append_new(
				    r->warnings,
				    json_string("disk budget exceeded by the files being written"));
			r->budget_warned = true;
			break;
		}
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
	ada_index_ring_release(p->arena, t->slot, n);
	t->pending -= n;
}

/* Takes the ring events after the ones already taken (pending). The peek
 * starts at tail, so taken-but-unreleased events come first; at the wrap
 * point nothing new is visible until they are released. */
static size_t drain_take(struct ada_recorder *r, struct wal_proc *p, struct wal_thread *t,
                         const struct ada_slot_info *si, size_t budget)
{
	size_t total = 0;
	while (total < budget) {
		const struct atf_index_event *ev;
		size_t k = ada_index_ring_peek(p->arena, t->slot, &ev);
		if (k <= t->pending) {
			/* Blocked at the wrap (or empty): hurry the writes along. */
			if (t->pending && t->f && si->head - si->tail > t->pending)
				ada_wal_file_submit(t->f);
			break;
		}
		size_t n = k - (size_t)t->pending;
		if (n > budget - total)
			n = budget - total;
		drain_convert(r, t, ev + t->pending, n);
		t->pending += n;
		t->ring_next += n;
		total += n;
	}
	/* A quarter of the ring waits for its write: send the staged buffer
	 * now rather than when it fills, or the producer would stall on a
	 * small ring (space comes back only once the write completed). */
	if (t->f && t->pending * 4 >= p->ring_events)
		ada_wal_file_submit(t->f);
	return total;
}

static size_t drain_slot(struct ada_recorder *r, struct wal_proc *p, uint32_t s, size_t budget)
{
	struct ada_slot_info si;
	ada_arena_slot_info(p->arena, s, &si);
	if (si.state == ADA_SLOT_FREE)
		return 0;
	p->fill_max = si.fill_pct > p->fill_max ? si.fill_pct : p->fill_max;
	struct wal_thread *t = p->by_slot[s];
	if (t && (t->seq != si.thread_seq || t->slot_gen != si.generation)) {
		drain_thread_finalize(r, t); /* the slot was reused under us */
		p->by_slot[s] = t = NULL;
	}
	if (si.head == si.tail && !t)
		return 0;
	if (!t) {
		t = drain_thread_new(r, p, s, &si);
		if (!t)
			return 0;
		p->by_slot[s] = t;
	}
	drain_release(p, t);
	size_t total = drain_take(r, p, t, &si, budget);
	p->events += total;
	r->events_total += total;
	if (total && t->f)
		drain_enforce_budget(r, t);
	return total;
}

static size_t drain_proc(struct ada_recorder *r, struct wal_proc *p, size_t budget)
{
	size_t n = 0;
	for (uint32_t s = 0; s < p->max_threads; s++)
		n += drain_slot(r, p, s, budget);
	ada_arena_drain_heartbeat(p->arena);
	return n;
}

/* EXITED slots whose thread is gone and ring is empty: finalize, free. */
static void drain_reclaim(struct ada_recorder *r, struct wal_proc *p)
{
	for (uint32_t s = 0; s < p->max_threads; s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(p->arena, s, &si);
		if (si.state != ADA_SLOT_EXITED || !ada_arena_slot_reclaimable(p->arena, s))
			continue;
		struct wal_thread *t = p->by_slot[s];
		if (t && t->seq == si.thread_seq) {
			drain_thread_finalize(r, t);
			p->by_slot[s] = NULL;
		}
		ada_arena_slot_free(p->arena, s);
	}
}

/* ---- processes ---- */

static struct wal_proc *drain_find(struct ada_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid)
			return r->procs[i];
	return NULL;
}

static void drain_open_arena(struct ada_recorder *r, const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);
	if (pid <= 0 || strcmp(end, ".ring") || drain_find(r, (pid_t)pid))
		return;
	if (r->o.follow == false && r->main_pid && pid != r->main_pid)
		return;
	struct wal_proc *p = calloc(1, sizeof(*p));
	void *arr = drain_grow(r->procs, &r->capprocs, r->nprocs + 1, sizeof(*r->procs));
	if (!p || !arr) {
		free(p);
		return;
	}
	r->procs = arr;
	p->pid = (pid_t)pid;
	p->pidfd = -1;
	if (asprintf(&p->arena_path, "%s/%s", r->arena_dir, name) < 0 ||
	    asprintf(&p->dir, "%s/pid_%ld", r->session_dir, pid) < 0 ||
	    ada_arena_open(p->arena_path, &p->arena) < 0) {
		free(p->arena_path);
		free(p->dir);
		free(p);
		return;
	}
	p->max_threads = ada_arena_max_threads(p->arena);
	p->ring_events = ada_arena_config_of(p->arena)->index_events;
	p->by_slot = calloc(p->max_threads, sizeof(*p->by_slot));
	wal_mkdir(p->dir);
	p->our_child = pid == r->main_pid;
	/* Not our child (yet): a pidfd tells when it is gone, without the
	 * pid-reuse race of kill(pid, 0). */
	p->pidfd = p->our_child ? -1 : (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	for (size_t i = 0; i < r->nearly; i++)
		if (r->early_pid[i] == p->pid) {
			p->reaped = p->our_child = true;
			p->wstatus = r->early_status[i];
		}
	r->procs[r->nprocs++] = p;
	wal_manifest_write(r, p, "recording");
}

static void drain_scan_dir(struct ada_recorder *r)
{
	DIR *d = opendir(r->arena_dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		drain_open_arena(r, de->d_name);
	closedir(d);
}

static void drain_inotify(struct ada_recorder *r)
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

static void drain_note_reaped(struct ada_recorder *r, pid_t pid, int st)
{
	if (pid == r->main_pid) {
		r->main_reaped = true;
		r->main_status = st;
	}
	struct wal_proc *p = drain_find(r, pid);
	if (p) {
		p->reaped = p->our_child = true;
		p->wstatus = st;
		return;
	}
	void *a = drain_grow(r->early_pid, &r->capearly, r->nearly + 1, sizeof(pid_t));
	if (!a)
		return;
	r->early_pid = a;
	size_t cap = r->capearly;
	int *b = realloc(r->early_status, cap * sizeof(int));
	if (!b)
		return;
	r->early_status = b;
	r->early_pid[r->nearly] = pid;
	r->early_status[r->nearly++] = st;
}

static bool drain_waitpids(struct ada_recorder *r)
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

/* Takes every event left in a dead process's rings: at a wrap point the
 * taken events must be durable and released before the rest is visible. */
static void drain_empty_proc(struct ada_recorder *r, struct wal_proc *p)
{
	for (uint32_t s = 0; s < p->max_threads; s++) {
		for (;;) {
			drain_slot(r, p, s, SIZE_MAX);
			struct wal_thread *t = p->by_slot[s];
			struct ada_slot_info si;
			ada_arena_slot_info(p->arena, s, &si);
			if (!t || si.head == si.tail + t->pending)
				break;
			if (t->f)
				ada_wal_file_submit(t->f);
			if (ada_wal_io_reap(r->io, true) < 0)
				break;
		}
	}
}

static void drain_finish_proc(struct ada_recorder *r, struct wal_proc *p)
{
	drain_empty_proc(r, p);
	for (size_t j = 0; j < p->nthreads; j++)
		drain_thread_finalize(r, p->threads[j]);
	for (uint32_t s = 0; s < p->max_threads; s++)
		p->by_slot[s] = NULL;
	p->finished = true;
	wal_manifest_write(r, p, "complete");
	ada_arena_close(p->arena);
	p->arena = NULL;
	unlink(p->arena_path);
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

static bool drain_vanished(struct wal_proc *p)
{
	if (p->pidfd >= 0) {
		struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
		return poll(&pfd, 1, 0) == 1; /* readable: the process exited */
	}
	return kill(p->pid, 0) < 0 && errno == ESRCH;
}

/* A process is gone when we reaped it, or (not our child) when it no
 * longer exists. Everything it published is in the rings by then. */
static void drain_check_gone(struct ada_recorder *r, bool all)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (p->finished)
			continue;
		bool gone = all || p->reaped || (!p->our_child && drain_vanished(p));
		if (gone)
			drain_finish_proc(r, p);
	}
}

/* ---- metrics ---- */

static void drain_tick(struct ada_recorder *r, uint64_t now)
{
	double dt = (double)(now - r->last_tick_ns) / 1e9;
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	uint64_t p50 = ada_lat_hist_quantile(h, 0.5), p99 = ada_lat_hist_quantile(h, 0.99);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (p->finished)
			continue;
		struct ada_metrics *m = ada_arena_metrics(p->arena);
		uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
		ada_arena_drop_totals(p->arena, d);
		uint64_t rate = (uint64_t)((double)(p->events - p->events_at_tick) / dt);
		atomic_store_explicit(&m->events_per_sec[ADA_LANE_INDEX], rate,
		                      memory_order_relaxed);
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
			uint64_t sum = d[0][k] + d[1][k], prev = p->drops_at_tick[0][k];
			atomic_store_explicit(&m->drops_per_sec[k],
			                      (uint64_t)((double)(sum - prev) / dt),
			                      memory_order_relaxed);
			p->drops_at_tick[0][k] = sum;
		}
		atomic_store_explicit(&m->ring_fill_pct_max, p->fill_max, memory_order_relaxed);
		atomic_store_explicit(&m->batch_latency_ns_p50, p50, memory_order_relaxed);
		atomic_store_explicit(&m->batch_latency_ns_p99, p99, memory_order_relaxed);
		atomic_store_explicit(&m->events_written[ADA_LANE_INDEX], p->events,
		                      memory_order_relaxed);
		p->events_at_tick = p->events;
		p->fill_max = 0;
	}
	r->last_tick_ns = now;
}

static void drain_clock(struct ada_recorder *r)
{
	if (!r->use_tsc)
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
	if (r->use_tsc) {
		/* Calibrate before the first conversion; the rings hold what the
		 * program emits meanwhile. */
		while (!ada_tsc_clock_ready(&r->clk)) {
			usleep(1000);
			drain_clock(r);
		}
	}
	uint64_t now = drain_mono_ns();
	r->last_tick_ns = r->last_anchor_ns = r->last_reclaim_ns = now;
}

static bool drain_pass(struct ada_recorder *r)
{
	drain_inotify(r);
	size_t busy = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (!r->procs[i]->finished)
			busy += drain_proc(r, r->procs[i], DRAIN_SLOT_BUDGET);
	ada_wal_io_submit_stale(r->io, false);
	ada_wal_io_reap(r->io, false);
	if (drain_waitpids(r))
		drain_scan_dir(r); /* a dead process's arena may be new to us */
	drain_check_gone(r, false);
	uint64_t now = drain_mono_ns();
	bool reclaim_all = now - r->last_reclaim_ns >= DRAIN_RECLAIM_NS;
	for (size_t i = 0; i < r->nprocs; i++)
		if (!r->procs[i]->finished &&
		    (ada_arena_take_slot_wanted(r->procs[i]->arena) || reclaim_all))
			drain_reclaim(r, r->procs[i]);
	if (reclaim_all)
		r->last_reclaim_ns = now;
	if (now - r->last_tick_ns >= DRAIN_TICK_NS) {
		drain_tick(r, now);
		drain_clock(r);
	}
	return busy > 0;
}

static bool drain_done(struct ada_recorder *r)
{
	if (!r->main_reaped)
		return false;
	if (r->o.follow && !r->no_children)
		return false;
	for (size_t i = 0; i < r->nprocs; i++)
		if (!r->procs[i]->finished)
			return false;
	return true;
}

void *wal_drain_main(void *arg)
{
	struct ada_recorder *r = arg;
	uint32_t idle_us = DRAIN_IDLE_MIN_US;
	drain_setup(r);
	drain_scan_dir(r);
	for (;;) {
		bool busy = drain_pass(r);
		if (drain_done(r))
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
		if (!busy)
			ada_wal_io_wait(r->io, idle_us);
	}
	drain_scan_dir(r);
	drain_check_gone(r, true);
	ada_wal_io_submit_stale(r->io, true);
	while (ada_wal_io_reap(r->io, true) > 0)
		;
	drain_tick(r, drain_mono_ns());
	r->end_ns = drain_mono_ns();
	return NULL;
}
