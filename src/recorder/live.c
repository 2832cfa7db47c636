/*
 * The live view of a recording (wal.h: struct ada_recorder_live): what the
 * control socket's `status` and `windows` answer while the drain runs.
 *
 * Threads: the drain builds the view in r->live->build (drain-owned) from
 * its own state, then publishes it into r->live->pub under r->live->mu with
 * pthread_mutex_trylock: when a reader holds the lock the publish is left
 * pending for the next pass, so the drain never waits for a client. The
 * last view (the drain has finished) takes the lock instead: there is no
 * next pass, and a reader holds it for one memcpy.
 * ada_recorder_live() (any thread) copies r->live->pub out under the lock.
 * The mutex orders both copies; there is no other shared state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detail_internal.h"
#include "recorder_internal.h"

/* The live view's state, owned by this file (r->live). */
struct wal_live {
	pthread_mutex_t mu;
	struct ada_recorder_live *pub;   /* under mu */
	struct ada_recorder_live *build; /* drain-owned */
	uint64_t events_prev, drops_prev[ADA_DROP_REASON_COUNT], prev_ns;
	uint64_t win_gen;     /* window gen of the last build */
	size_t nprocs;        /* processes in the last build */
	uint64_t events_seen; /* events taken at the last publish check */
	bool pending;         /* a build waits for the lock */
	bool rated;           /* the build has its own rates (a tick's) */
};

int wal_live_init(struct ada_recorder *r)
{
	r->live = calloc(1, sizeof(*r->live));
	if (!r->live)
		return -ENOMEM;
	r->live->pub = calloc(1, sizeof(*r->live->pub));
	r->live->build = calloc(1, sizeof(*r->live->build));
	if (!r->live->pub || !r->live->build)
		return -ENOMEM;
	int rc = pthread_mutex_init(&r->live->mu, NULL);
	return -rc;
}

void wal_live_fini(struct ada_recorder *r)
{
	if (!r->live)
		return;
	if (r->live->pub)
		pthread_mutex_destroy(&r->live->mu);
	free(r->live->pub);
	free(r->live->build);
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
		for (size_t j = 0; j < p->nthreads; j++)
			lp->threads += !p->threads[j]->done;
	} else {
		v->procs_omitted++;
	}
	for (size_t j = 0; j < p->nthreads && !p->finished; j++) {
		const struct wal_thread *t = p->threads[j];
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

/* After the running processes, the most recently finished ones while
 * procs[] has room (a long recording's first processes are not what
 * `status` is asked about); the rest are counted. */
static void live_finished(struct ada_recorder *r, struct ada_recorder_live *v)
{
	uint32_t listed = 0;
	for (size_t i = r->nprocs; i-- > 0 && v->nprocs < ADA_LIVE_MAX_PROCS;)
		if (r->procs[i]->finished) {
			live_proc(v, r->procs[i]);
			listed++;
		}
	v->procs_omitted += v->procs_finished - listed;
}

/* Totals and rates over every process (finished ones included). */
static void live_totals(struct ada_recorder *r, struct ada_recorder_live *v, bool rates)
{
	uint64_t now = v->at_ns;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct wal_proc *p = r->procs[i];
		v->events += p->events - wal_proc_lost(p);
		v->events_not_written += wal_proc_lost(p);
		uint64_t ib, ie;
		wal_proc_index_bytes(p, &ib, &ie);
		v->index_bytes += ib;
		v->index_events += ie;
		for (int l = 0; l < ADA_LANE_COUNT; l++)
			for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
				v->drops[k] += p->drops[l][k];
		if (v->detail_mode == ADA_DETAIL_TRIGGERED)
			v->detail_overwritten += p->detail_overwritten;
		if (v->detail_mode != ADA_DETAIL_NEVER)
			v->detail_records += wal_detail_proc_records(p);
		uint64_t waits, ns;
		if (v->detail_mode == ADA_DETAIL_ALWAYS) {
			wal_detail_proc_waits(p, &waits, &ns);
			v->detail_waits += waits;
			v->detail_waited_ns += ns;
		}
		wal_proc_ring_waits(p, &waits, &ns);
		v->ring_waits += waits;
		v->ring_waited_ns += ns;
		if (!p->finished && p->fill_last > v->ring_fill_pct_max)
			v->ring_fill_pct_max = p->fill_last;
		if (!p->finished)
			live_proc(v, p);
		v->procs_finished += p->finished;
	}
	live_finished(r, v);
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
	r->live->rated = rates;
}

void wal_live_publish(struct ada_recorder *r, bool force, bool ended)
{
	if (!r->live || !r->live->pub)
		return;
	/* New events, a new window or a new process: a fresh view now (at the
	 * drain's 10 ms cadence), so `status` lags the rings by that at most. */
	uint64_t ev = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		ev += r->procs[i]->events;
	bool changed = ada_trigger_window_gen(r->flight.trig) != r->live->win_gen ||
	               r->nprocs != r->live->nprocs || ev != r->live->events_seen;
	r->live->events_seen = ev;
	if (!force && !changed && !r->live->pending)
		return;
	if (force || changed)
		live_build(r, ended, force);
	/* The final view cannot wait for a later pass (there is none): it
	 * takes the lock, which a reader holds for one memcpy at most. */
	if (ended)
		pthread_mutex_lock(&r->live->mu);
	else if (pthread_mutex_trylock(&r->live->mu) != 0) {
		r->live->pending = true; /* a reader copies: publish on a later pass */
		return;
	}
	if (!r->live->rated) { /* a between-ticks build: keep the published rates */
		r->live->build->events_per_sec = r->live->pub->events_per_sec;
		memcpy(r->live->build->drops_per_sec, r->live->pub->drops_per_sec,
		       sizeof(r->live->build->drops_per_sec));
	}
	memcpy(r->live->pub, r->live->build, sizeof(*r->live->pub));
	pthread_mutex_unlock(&r->live->mu);
	r->live->pending = false;
}

int ada_recorder_live(struct ada_recorder *r, struct ada_recorder_live *out)
{
	if (!r->live || !r->live->pub)
		return -EAGAIN;
	pthread_mutex_lock(&r->live->mu);
	memcpy(out, r->live->pub, sizeof(*out));
	pthread_mutex_unlock(&r->live->mu);
	return out->seq ? 0 : -EAGAIN;
}
