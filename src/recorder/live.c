/*
 * The live view of a recording (wal.h: struct ada_recorder_live): what the
 * control socket's `status` and `windows` answer while the drain runs.
 *
 * Threads: the drain builds the view in r->live->build (drain-owned) from
 * its own state, then publishes it into one of two buffers, pub[0] and
 * pub[1]: the one `cur` does not name, when no reader is in it, then
 * names it in cur. ada_recorder_live() (any thread) counts itself in
 * readers[i] of the buffer cur names, checks that cur still names it and
 * copies it out. Neither ever waits for the other: a reader never waits
 * for the drain (a drain thread descheduled in the middle of a publish
 * on a loaded machine held every `status` behind a mutex before), and
 * the drain leaves a publish pending for the next pass when a reader is
 * still in the buffer it wants; only the last view (the drain has
 * finished: there is no next pass) waits for that reader's one memcpy.
 *
 * A build costs what the running processes cost, not every process the
 * recording saw: the running ones are kept in a list of their own
 * (procs only grows, so the new ones are those past `seen`), and a
 * process is folded into sums, and into a short list of the most recently
 * finished, once when it finishes (its counts do not change after that).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "detail_internal.h"
#include "recorder_internal.h"

/* What the finished processes add to the totals (live_fold). */
struct live_sum {
	uint64_t events, not_written, index_bytes, index_events;
	struct wal_proc_sums p;
	uint32_t procs;
};

/* The live view's state, owned by this file (r->live). */
struct wal_live {
	struct wal_proc **running; /* not finished when last looked at, in procs order */
	size_t nrunning, caprunning;
	size_t seen; /* r->procs[0 .. seen) are in running or folded */
	struct live_sum fin;
	/* The last ADA_LIVE_MAX_PROCS finished, as listed (a ring: recent_n
	 * entries, the newest at recent_at - 1). */
	struct ada_live_proc recent[ADA_LIVE_MAX_PROCS];
	uint32_t recent_at, recent_n;
	struct ada_recorder_live *pub[2]; /* written by the drain when no reader is in it */
	_Atomic unsigned cur;             /* the buffer readers copy */
	_Atomic unsigned readers[2];      /* readers in each buffer */
	struct ada_recorder_live *build;  /* drain-owned */
	uint64_t events_prev, drops_prev[ADA_DROP_REASON_COUNT], prev_ns;
	uint64_t win_gen;     /* window gen of the last build */
	size_t nprocs;        /* processes in the last build */
	uint64_t events_seen; /* events taken at the last publish check */
	bool pending;         /* a build waits for a reader to leave its buffer */
	bool rated;           /* the build has its own rates (a tick's) */
	/* The warnings so far, copied into every build: taken from
	 * r->warnings (up to rwarned) and each process's (p->live_warned)
	 * once, so a build costs only the new sentences. */
	struct ada_live_warning warn[ADA_LIVE_MAX_WARNINGS];
	uint32_t nwarn;
	uint64_t warn_omitted;
	size_t rwarned;
	/* Where a kept warning was first said: the array (r->warnings, or a
	 * process's p->warnings while it runs; NULL: nowhere to look again)
	 * and its index there, read again at each build, as the recorder
	 * rewrites some in place with a count (drain_refuse,
	 * wal_ring_table_failed). A process's array is forgotten when it is
	 * folded, before it can be freed (wal_live_proc_retiring). */
	const json_t *rwarn_src[ADA_LIVE_MAX_WARNINGS];
	size_t rwarn_at[ADA_LIVE_MAX_WARNINGS];
};

int wal_live_init(struct ada_recorder *r)
{
	r->live = calloc(1, sizeof(*r->live));
	if (!r->live)
		return -ENOMEM;
	r->live->pub[0] = calloc(1, sizeof(*r->live->pub[0]));
	r->live->pub[1] = calloc(1, sizeof(*r->live->pub[1]));
	r->live->build = calloc(1, sizeof(*r->live->build));
	if (!r->live->pub[0] || !r->live->pub[1] || !r->live->build)
		return -ENOMEM;
	return 0;
}

void wal_live_fini(struct ada_recorder *r)
{
	if (!r->live)
		return;
	free(r->live->pub[0]);
	free(r->live->pub[1]);
	free(r->live->build);
	free(r->live->running);
	free(r->live);
	r->live = NULL;
}

/* One process: its counts, and one entry per live thread's ring. */
static void live_proc(struct ada_recorder_live *v, const struct wal_proc *p)
{
	if (v->nprocs < ADA_LIVE_MAX_PROCS) {
		struct ada_live_proc *lp = &v->procs[v->nprocs++];
		*lp = (struct ada_live_proc){.pid = p->pid,
		                             .finished = p->finished,
		                             .ring_fill_pct = p->finished ? 0 : p->fill_last,
		                             .events = p->events - wal_proc_lost(p)};
		/* Every thread not finalized is in open[] (done: finalized or not). */
		for (size_t j = 0; j < p->nopen; j++)
			lp->threads += !p->open[j]->done;
	} else {
		v->procs_omitted++;
	}
	for (size_t j = 0; j < p->nopen && !p->finished; j++) {
		const struct wal_thread *t = p->open[j];
		if (t->done)
			continue;
		if (v->nrings == ADA_LIVE_MAX_RINGS) {
			v->rings_omitted++;
			continue;
		}
		v->rings[v->nrings++] = (struct ada_live_ring){.pid = p->pid,
		                                               .thread = t->seq,
		                                               .tid = t->tid,
		                                               .detail_span_ns = t->detail_span_ns};
	}
}

/* A sentence into the kept warnings: a new one while there is room, one
 * already kept counted once more, else counted in warn_omitted. Returns
 * the new one's index, else -1. */
static int live_warn(struct wal_live *l, pid_t pid, const char *text)
{
	if (!text)
		return -1;
	for (uint32_t i = 0; i < l->nwarn; i++) {
		if (!strcmp(l->warn[i].text, text)) { /* once a process */
			l->warn[i].processes += pid != 0 && pid != l->warn[i].last;
			l->warn[i].last = pid;
			return -1;
		}
	}
	if (l->nwarn == ADA_LIVE_MAX_WARNINGS) {
		l->warn_omitted++;
		return -1;
	}
	struct ada_live_warning *w = &l->warn[l->nwarn];
	w->pid = w->last = pid;
	w->processes = pid != 0;
	snprintf(w->text, sizeof(w->text), "%s", text);
	l->rwarn_src[l->nwarn] = NULL;
	return (int)l->nwarn++;
}

/* Sentence at of src into the kept warnings, remembered there when new. */
static void live_warn_at(struct wal_live *l, pid_t pid, const json_t *src, size_t at)
{
	int k = live_warn(l, pid, json_string_value(json_array_get(src, at)));
	if (k < 0)
		return;
	l->rwarn_src[k] = src;
	l->rwarn_at[k] = at;
}

/* The kept warnings first said in src (NULL: in any array) read again:
 * a rewritten one replaces its text, the count it carries. At most
 * ADA_LIVE_MAX_WARNINGS strncmp. */
static void live_warnings_reread(struct wal_live *l, const json_t *src)
{
	for (uint32_t i = 0; i < l->nwarn; i++) {
		if (!l->rwarn_src[i] || (src && l->rwarn_src[i] != src))
			continue;
		const char *t = json_string_value(json_array_get(l->rwarn_src[i], l->rwarn_at[i]));
		if (t && strncmp(l->warn[i].text, t, sizeof(l->warn[i].text) - 1))
			snprintf(l->warn[i].text, sizeof(l->warn[i].text), "%s", t);
	}
}

/* The recording's warnings not taken yet. */
static void live_warnings_rec(struct wal_live *l, const struct ada_recorder *r)
{
	for (; l->rwarned < json_array_size(r->warnings); l->rwarned++)
		live_warn_at(l, 0, r->warnings, l->rwarned);
}

/* The process's warnings not taken yet (wal_note's, and a refused
 * mlock as the drain's tick or its manifest's write saw it: the build
 * reads no arena, whose file the target could have cut short). */
static void live_warnings_of(struct wal_live *l, struct wal_proc *p)
{
	for (; p->live_warned < json_array_size(p->warnings); p->live_warned++)
		live_warn_at(l, p->pid, p->warnings, p->live_warned);
	if (!p->live_mlock && p->mlock_refused) {
		p->live_mlock = true;
		live_warn(l, p->pid, "mlock refused: ring pages may be swapped");
	}
}

/* A folded process's warnings as they end, then its array forgotten: it
 * is freed with the process (wal_proc_free), and its sentences change no
 * more. */
static void live_warnings_forget(struct wal_live *l, const struct wal_proc *p)
{
	if (!p->warnings)
		return;
	live_warnings_reread(l, p->warnings);
	for (uint32_t i = 0; i < l->nwarn; i++)
		if (l->rwarn_src[i] == p->warnings)
			l->rwarn_src[i] = NULL;
}

/* One process's counts added to s. */
static void live_add(const struct wal_proc *p, struct live_sum *s)
{
	s->events += p->events - wal_proc_lost(p);
	s->not_written += wal_proc_lost(p);
	uint64_t ib, ie;
	wal_proc_index_bytes(p, &ib, &ie);
	s->index_bytes += ib;
	s->index_events += ie;
	wal_proc_fold(&s->p, p);
}

/* A process that finished: its counts into fin, its entry into recent. */
static void live_fold(struct ada_recorder *r, struct wal_proc *p)
{
	struct wal_live *l = r->live;
	live_warnings_of(l, p);
	live_warnings_forget(l, p);
	live_add(p, &l->fin);
	l->fin.procs++;
	l->recent[l->recent_at] = (struct ada_live_proc){
	    .pid = p->pid, .finished = true, .events = p->events - wal_proc_lost(p)};
	l->recent_at = (l->recent_at + 1) % ADA_LIVE_MAX_PROCS;
	l->recent_n += l->recent_n < ADA_LIVE_MAX_PROCS;
}

/* The running list brought up to date: those finished since the last
 * build folded (order kept), the new ones added. O(running + new). */
static void live_sync(struct ada_recorder *r)
{
	struct wal_live *l = r->live;
	size_t keep = 0;
	for (size_t i = 0; i < l->nrunning; i++) {
		if (l->running[i]->finished)
			live_fold(r, l->running[i]);
		else
			l->running[keep++] = l->running[i];
	}
	l->nrunning = keep;
	for (; l->seen < r->nprocs; l->seen++) {
		struct wal_proc *p = r->procs[l->seen];
		if (p->finished) {
			live_fold(r, p);
			continue;
		}
		if (l->nrunning == l->caprunning) {
			size_t cap = l->caprunning ? l->caprunning * 2 : 16;
			struct wal_proc **a = realloc(l->running, cap * sizeof(*a));
			if (!a)
				return; /* looked at again at the next build */
			l->running = a;
			l->caprunning = cap;
		}
		l->running[l->nrunning++] = p;
	}
}

void wal_live_proc_retiring(struct ada_recorder *r, size_t i)
{
	if (!r->live)
		return;
	live_sync(r); /* folded before it goes, if it was not */
	if (i < r->live->seen)
		r->live->seen--;
	else if (i < r->nprocs)
		/* live_sync stopped before it (the running list could not
		 * grow): never looked at, folded now, or its counts would leave
		 * the view with it. Retired processes are finished. */
		live_fold(r, r->procs[i]);
	if (r->live->nprocs)
		r->live->nprocs--; /* not a change the view must be built for */
}

void wal_live_finished_sums(const struct ada_recorder *r, uint32_t *procs, uint64_t *events)
{
	*procs = r->live ? r->live->fin.procs : 0;
	*events = r->live ? r->live->fin.events : 0;
}

/* After the running processes, the most recently finished ones while
 * procs[] has room (a long recording's first processes are not what
 * `status` is asked about); the rest are counted. */
static void live_finished(struct wal_live *l, struct ada_recorder_live *v)
{
	uint32_t listed = 0;
	for (uint32_t k = 0; k < l->recent_n && v->nprocs < ADA_LIVE_MAX_PROCS; k++) {
		uint32_t at = (l->recent_at + ADA_LIVE_MAX_PROCS - 1 - k) % ADA_LIVE_MAX_PROCS;
		v->procs[v->nprocs++] = l->recent[at];
		listed++;
	}
	v->procs_omitted += v->procs_finished - listed;
}

/* Totals and rates: the finished processes' sums, and the running ones. */
static void live_totals(struct ada_recorder *r, struct ada_recorder_live *v, bool rates)
{
	uint64_t now = v->at_ns;
	struct wal_live *l = r->live;
	live_sync(r);
	struct live_sum s = l->fin;
	live_warnings_rec(l, r);
	for (size_t i = 0; i < l->nrunning; i++) {
		struct wal_proc *p = l->running[i];
		live_warnings_of(l, p);
		live_add(p, &s);
		if (p->fill_last > v->ring_fill_pct_max)
			v->ring_fill_pct_max = p->fill_last;
		live_proc(v, p);
	}
	live_warnings_reread(l, NULL);
	v->events = s.events;
	v->events_not_written = s.not_written;
	v->index_bytes = s.index_bytes;
	v->index_events = s.index_events;
	for (int lane = 0; lane < ADA_LANE_COUNT; lane++)
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			v->drops[k] += s.p.drops_by[lane][k];
	/* What the mode tells (recorder.h, struct ada_recorder_live): the sums
	 * hold every count in every mode; only --detail always waits. */
	if (v->detail_mode == ADA_DETAIL_TRIGGERED)
		v->detail_overwritten = s.p.detail_overwritten;
	if (v->detail_mode != ADA_DETAIL_NEVER)
		v->detail_records = s.p.detail_records;
	v->detail_waits = s.p.detail_waits;
	v->detail_waited_ns = s.p.detail_waited_ns;
	v->ring_waits = s.p.ring_waits;
	v->ring_waited_ns = s.p.ring_waited_ns;
	v->procs_finished = s.procs;
	v->pid_reused_arenas = r->pid_reused;
	v->wait_statuses = (struct ada_wait_status_counts){
	    r->wait_notes.c.unknown, r->wait_notes.c.overwritten, r->wait_notes.c.refused};
	v->pool_hits = r->shm.pool_hits;
	v->pool_misses = r->shm.pool_misses;
	wal_shm_read(r, &v->shm);
	live_finished(l, v);
	v->nwarnings = l->nwarn;
	v->warnings_omitted = l->warn_omitted;
	memcpy(v->warnings, l->warn, l->nwarn * sizeof(l->warn[0]));
	if (!rates)
		return; /* between ticks: the published rates stay (wal_live_publish) */
	double dt =
	    r->live->prev_ns && now > r->live->prev_ns ? (double)(now - r->live->prev_ns) / 1e9 : 0;
	if (dt > 0) {
		v->events_per_sec = (uint64_t)((double)(v->events - r->live->events_prev) / dt);
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			v->drops_per_sec[k] =
			    (uint64_t)((double)(v->drops[k] - r->live->drops_prev[k]) / dt);
	}
	r->live->events_prev = v->events;
	memcpy(r->live->drops_prev, v->drops, sizeof(v->drops));
	r->live->prev_ns = now;
}

/* The window list: the most recent ADA_LIVE_MAX_WINDOWS, and counts. */
static void live_windows(struct ada_recorder *r, struct ada_recorder_live *v)
{
	size_t n = ada_trigger_window_count(r->flight.trig);
	size_t first = n > ADA_LIVE_MAX_WINDOWS ? n - ADA_LIVE_MAX_WINDOWS : 0;
	v->windows_total = n;
	for (size_t i = 0; i < n; i++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, i);
		v->windows_closed += w->closed;
		if (i >= first) {
			wal_flight_window_got(r, i, &v->windows_got[v->nwindows]);
			v->windows[v->nwindows++] = *w;
		}
	}
	ada_trigger_get_stats(r->flight.trig, &v->trig);
	v->manual_dropped = r->flight.manual_dropped;
	r->live->win_gen = ada_trigger_window_gen(r->flight.trig);
	r->live->nprocs = r->nprocs;
}

static void live_build(struct ada_recorder *r, bool ended, bool rates)
{
	struct ada_recorder_live *v = r->live->build;
	uint64_t seq = v->seq;
	memset(v, 0, sizeof(*v));
	v->seq = seq + 1;
	v->at_ns = ada_boottime_ns();
	v->start_ns = r->start_ns;
	v->detail_mode = r->o.detail_mode;
	v->ended = ended;
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	v->batch_latency_p50_ns = ada_lat_hist_quantile(h, 0.5);
	v->batch_latency_p99_ns = ada_lat_hist_quantile(h, 0.99);
	v->disk_full = ada_wal_io_disk_full(r->io);
	/* Pairs with the release in ada_recorder_set_attach(). */
	if (r->o.attached && atomic_load_explicit(&r->attach.set, memory_order_acquire))
		v->attach_pause_ns =
		    atomic_load_explicit(&r->attach.pause_ns, memory_order_relaxed);
	live_totals(r, v, rates);
	live_windows(r, v);
	drain_bell_counts(r, &v->drain);
	wal_heap_pools(r, v);
	r->live->rated = rates;
}

/* Test hook (control_status_paused): ADA_TEST_LIVE_PAUSE=FILE makes the
 * drain, in its first publish after one was made, create FILE and wait
 * there until FILE is gone (60 s at most), once: a drain descheduled in
 * the middle of a publish on a loaded machine, made to happen. */
static void live_test_pause(const struct wal_live *l)
{
	static bool done, read;
	static const char *f;
	if (!read) { /* once: getenv walks the environment at every publish */
		f = getenv("ADA_TEST_LIVE_PAUSE");
		read = true;
	}
	if (done || !f || !*f || !l->pub[atomic_load(&l->cur)]->seq)
		return;
	done = true;
	wal_test_hold(f);
}

bool wal_live_stale(const struct ada_recorder *r)
{
	const struct wal_live *l = r->live;
	if (!l || !l->pub[0])
		return false;
	return l->pending || r->events_total != l->events_seen || r->nprocs != l->nprocs ||
	       ada_trigger_window_gen(r->flight.trig) != l->win_gen;
}

void wal_live_publish(struct ada_recorder *r, bool force, bool ended)
{
	if (!r->live || !r->live->pub[0])
		return;
	/* New events, a new window or a new process: a fresh view now (at the
	 * drain's 10 ms cadence), so `status` lags the rings by that at most.
	 * events_total: every process's events, without a walk of them. */
	uint64_t ev = r->events_total;
	bool changed = ada_trigger_window_gen(r->flight.trig) != r->live->win_gen ||
	               r->nprocs != r->live->nprocs || ev != r->live->events_seen;
	r->live->events_seen = ev;
	if (!force && !changed && !r->live->pending)
		return;
	if (force || changed)
		live_build(r, ended, force);
	struct wal_live *l = r->live;
	/* seq_cst, all four: this load of readers[t] and the reader's
	 * increment of it, and the reader's load of cur and the store of cur
	 * below, are ordered one way or the other (Dekker): either the
	 * reader sees the switch away from t and leaves, or the drain sees
	 * the reader in t. */
	unsigned t = 1u - atomic_load(&l->cur);
	if (atomic_load(&l->readers[t]) != 0) {
		if (!ended) {
			l->pending = true; /* a reader copies: publish on a later pass */
			return;
		}
		/* The final view: there is no later pass; the reader is
		 * in one memcpy. */
		while (atomic_load(&l->readers[t]) != 0)
			sched_yield();
	}
	live_test_pause(l);
	if (!l->rated) { /* a between-ticks build: keep the published rates */
		const struct ada_recorder_live *old = l->pub[1u - t];
		l->build->events_per_sec = old->events_per_sec;
		memcpy(l->build->drops_per_sec, old->drops_per_sec,
		       sizeof(l->build->drops_per_sec));
	}
	memcpy(l->pub[t], l->build, sizeof(*l->pub[t]));
	atomic_store(&l->cur, t); /* seq_cst: the reader's check in ada_recorder_live() */
	l->pending = false;
}

int ada_recorder_live(struct ada_recorder *r, struct ada_recorder_live *out)
{
	struct wal_live *l = r->live;
	if (!l || !l->pub[0])
		return -EAGAIN;
	for (;;) {
		unsigned i = atomic_load(&l->cur);
		/* seq_cst, with the drain's load of readers[] and store of cur
		 * (wal_live_publish): named by cur after we are counted in
		 * it, the buffer is not written until we leave. */
		atomic_fetch_add(&l->readers[i], 1);
		if (atomic_load(&l->cur) == i) {
			memcpy(out, l->pub[i], sizeof(*out));
			atomic_fetch_sub(&l->readers[i], 1); /* seq_cst: the drain's load */
			return out->seq ? 0 : -EAGAIN;
		}
		atomic_fetch_sub(&l->readers[i], 1); /* it switched meanwhile: again */
	}
}
