/*
 * The flight recorder in the drain: feeds the trigger engine (src/trigger)
 * with the index stream the drain already converts, turns manual requests
 * (SIGUSR2, later the control socket) and the wall clock into fires, turns
 * a process's death into the `crash` fire and its stacks at death, and
 * describes all of it in the manifest.
 *
 * Threads: the drain thread, except ada_recorder_request_manual()
 * (async-signal-safe: one atomic add, read by the drain at its 10 ms
 * cadence) and ada_recorder_triggers() (the engine's own any-thread API).
 * Input from the traced process (the crash record in the arena) is
 * checked in flight_crash_read() before use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "atf.h"
#include "ring.h"
#include "symbols.h"
#include "arena_internal.h"
#include "detail_internal.h"
#include "flight_internal.h"
#include "recorder_internal.h"
#include "flight_internal.h"

#define FLIGHT_SYMS_RELOAD_NS 50000000ull /* unknown module: reread .syms at most this often */
#define FLIGHT_STACK_FRAMES 64u           /* frames per thread in the manifest */
/* A window is closed once the clock is this far past its end: the events
 * (and detail records) of its last moments have reached the drain by then. */
#define FLIGHT_CLOSE_SLACK_NS 100000000ull
/* What the drain persists for the open windows per pass while the
 * program runs: at most this many detail bytes, in at most half the time
 * the fastest-filling index ring would take to fill (pass_fill_ns,
 * drain.c), at most FLIGHT_PASS_MAX_NS; none when that is below
 * FLIGHT_PASS_MIN_NS. Between two such steps the drain drains the index
 * rings, so a window being written does not make the program wait for
 * index ring space; what the detail lane cannot keep up with, its ring
 * overwrites (window_lost, counted). */
#define FLIGHT_PASS_BYTES (4ull << 20)
#define FLIGHT_PASS_MAX_NS 20000000ull
#define FLIGHT_PASS_MIN_NS 100000ull

/* ---- set-up ---- */

int wal_flight_init(struct ada_recorder *r)
{
	struct ada_trigger_opts o = r->o.flight;
	if (!o.max_windows)
		o.max_windows = ADA_TRIGGER_DEFAULT_MAX_WINDOWS;
	int rc = ada_trigger_engine_new(&o, &r->flight.trig);
	wal_flight_yield_init(&r->flight.yield, r->o.persist_share_pct);
	r->flight.mem_limit = r->o.window_mem_bytes; /* 0: takes only within the pass's budget */
	for (size_t i = 0; rc == 0 && i < r->o.ntriggers; i++)
		rc = ada_trigger_add(r->flight.trig, &r->o.triggers[i], 0,
		                     NULL); /* armed from the start */
	return rc;
}

void wal_flight_fini(struct ada_recorder *r)
{
	ada_trigger_engine_free(r->flight.trig);
	r->flight.trig = NULL;
	wal_flight_yield_fini(&r->flight.yield);
	wal_detail_pool_free(r);
}

struct ada_trigger_engine *ada_recorder_triggers(struct ada_recorder *r)
{
	return r->flight.trig;
}

void ada_recorder_request_manual(struct ada_recorder *r)
{
	/* Read by flight_manual() with acquire; nothing else is published. */
	atomic_fetch_add_explicit(&r->flight.manual_requests, 1, memory_order_release);
	ada_recorder_wake(r); /* a drain asleep takes it now */
}

/* Name of fn_id in process p (the engine's resolver). A module not known
 * yet (its .syms may be written after its first events) makes the drain
 * reread the pid's symbol files, at most every FLIGHT_SYMS_RELOAD_NS. */
static const char *flight_name(void *ctx, uint64_t fn_id)
{
	struct wal_proc *p = ctx;
	const char *name = NULL, *mod = NULL;
	if (p->syms && ada_symtab_resolve(p->syms, fn_id, &name, &mod))
		return name;
	if (p->syms && mod)
		return NULL; /* the module is known, this function has no name */
	uint64_t now = ada_boottime_ns();
	if (p->syms && now - p->syms_at < FLIGHT_SYMS_RELOAD_NS)
		return NULL;
	struct ada_symtab *st;
	p->syms_at = now;
	if (ada_symtab_load(p->dir, NULL, NULL, NULL, &st) < 0)
		return NULL;
	ada_symtab_free(p->syms);
	p->syms = st;
	return ada_symtab_resolve(p->syms, fn_id, &name, &mod) ? name : NULL;
}

void wal_flight_proc_start(struct ada_recorder *r, struct wal_proc *p)
{
	if (ada_trigger_proc_new(r->flight.trig, flight_name, p, &p->trig) < 0)
		p->trig = NULL; /* no evaluation for this process: said in the manifest */
}

void wal_flight_thread_start(struct wal_thread *t)
{
	if (t->p->trig && ada_trigger_thread_new(t->p->trig, t->tid, &t->trig) < 0)
		t->trig = NULL;
}

void wal_flight_free(struct wal_proc *p)
{
	for (size_t j = 0; j < p->nthreads; j++) {
		ada_trigger_thread_free(p->threads[j]->trig);
		p->threads[j]->trig = NULL;
		free(p->threads[j]->fw);
		p->threads[j]->fw = NULL;
		free(p->threads[j]->gaps_kept);
		p->threads[j]->gaps_kept = NULL;
		free(p->threads[j]->passed_kept);
		p->threads[j]->passed_kept = NULL;
	}
	ada_trigger_proc_free(p->trig);
	p->trig = NULL;
	ada_symtab_free(p->syms);
	p->syms = NULL;
	json_decref(p->crash);
	p->crash = NULL;
}

/* ---- persisting windows (detail records, wal_detail_persist) ---- */

static struct wal_flight_tw *flight_tw(struct wal_thread *t, size_t wi)
{
	if (!t->fw)
		t->fw_base = t->nfw = wi;
	if (wi < t->fw_base) { /* a window created earlier reaches it later */
		size_t front = t->fw_base - wi, n = t->nfw - wi;
		struct wal_flight_tw *a = realloc(t->fw, n * sizeof(*a));
		if (!a)
			return NULL;
		memmove(a + front, a, (n - front) * sizeof(*a));
		memset(a, 0, front * sizeof(*a));
		t->fw = a;
		t->fw_base = wi;
	}
	if (wi >= t->nfw) {
		size_t n = wi + 8 - t->fw_base, had = t->nfw - t->fw_base;
		struct wal_flight_tw *a = realloc(t->fw, n * sizeof(*a));
		if (!a)
			return NULL;
		memset(a + had, 0, (n - had) * sizeof(*a));
		t->fw = a;
		t->nfw = t->fw_base + n;
	}
	return &t->fw[wi - t->fw_base];
}

/* Window wi's lost records: n more, the window_lost count. */
static void flight_lost(struct wal_thread *t, struct wal_flight_tw *fw, uint64_t n, bool est)
{
	fw->lost += n;
	fw->lost_estimated |= est;
	t->p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] += n;
}

/* Window wi's records missed for reason k (enum ada_window_miss): n more. */
static void flight_missed(struct wal_thread *t, struct wal_flight_tw *fw, unsigned k, uint64_t n,
                          bool est)
{
	fw->missed[k] += n;
	fw->missed_estimated |= est;
	t->p->window_missed[k] += n;
}

/* Records a window's walk passed over (before its range): kept for a
 * window created later, or one a merge widened, that reaches over them
 * (flight_passed_missed). */
static void flight_passed(struct wal_thread *t, const struct wal_gap *g)
{
	if (g->records && (t->passed_kept || (t->passed_kept = calloc(1, sizeof(*t->passed_kept)))))
		wal_gaps_keep(t->passed_kept, g);
}

/* A window's first copy on t, or its first after a merge widened it: the
 * records of its new part of the range that a walk passed over before
 * (a window created later but earlier in time, or a range grown back):
 * decided, so the detail file (ring order) cannot have them now: its
 * passed_over. Only the new part: a kept span widened by merging
 * (wal_gaps_keep) may cross the part the window had. */
static void flight_passed_missed(struct wal_thread *t, struct wal_flight_tw *fw,
                                 const struct ada_trigger_window *w)
{
	bool est = false;
	uint64_t n = 0;
	if (!t->passed_kept)
		return;
	if (fw->calls == 0) {
		n = wal_gaps_take(t->passed_kept, w->from_ns, w->to_ns, &est);
	} else {
		if (w->from_ns < fw->seen_from)
			n += wal_gaps_take(t->passed_kept, w->from_ns, fw->seen_from - 1, &est);
		if (w->to_ns > fw->seen_to)
			n += wal_gaps_take(t->passed_kept, fw->seen_to + 1, w->to_ns, &est);
	}
	if (n)
		flight_missed(t, fw, ADA_MISS_PASSED_OVER, n, est);
}

/* A gap a look at t's ring found (records overwritten before anyone
 * decided them): each window's share of it was wanted and is lost to it,
 * a window_lost drop. Windows do not overlap (fires merge), so the
 * shares add up to at most the gap. What no window took is kept for a
 * window created later whose range reaches over it (flight_kept_lost).
 * May grow t->fw. */
static void flight_gap(struct ada_recorder *r, struct wal_thread *t, const struct wal_gap *g)
{
	uint64_t left = g->records;
	for (size_t wi = 0; left && wi < ada_trigger_window_count(r->flight.trig); wi++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		bool est = false;
		uint64_t n = wal_gap_share(g, w->from_ns, w->to_ns, &est);
		struct wal_flight_tw *fw;
		if (n > left)
			n = left;
		if (n == 0 || !(fw = flight_tw(t, wi)))
			continue;
		flight_lost(t, fw, n, est);
		left -= n;
	}
	if (left && (t->gaps_kept || (t->gaps_kept = calloc(1, sizeof(*t->gaps_kept))))) {
		struct wal_gap rest = *g;
		rest.records = left;
		rest.exact = g->exact && left == g->records;
		wal_gaps_keep(t->gaps_kept, &rest);
	}
}

/* A window's first look on t, or its first after a merge widened it: the
 * records of gaps no window took (found by other windows' looks before it
 * existed or reached so far) that its range reaches over were wanted by
 * it too: its window_lost. A look finds a gap once: without this, a
 * window whose trigger fired after the look lost them silently. */
static void flight_kept_lost(struct wal_thread *t, struct wal_flight_tw *fw,
                             const struct ada_trigger_window *w)
{
	bool est = false;
	uint64_t n = t->gaps_kept ? wal_gaps_take(t->gaps_kept, w->from_ns, w->to_ns, &est) : 0;
	if (n)
		flight_lost(t, fw, n, est);
}

void wal_fill_add(struct wal_fill *f, uint64_t fn, uint64_t len)
{
	uint32_t low = 0;
	f->total += len;
	for (uint32_t i = 0; i < WAL_FILL_TOP; i++) {
		if (f->fn[i] == fn && f->bytes[i]) {
			f->bytes[i] += len;
			return;
		}
		if (f->bytes[i] < f->bytes[low])
			low = i;
	}
	f->fn[low] = fn; /* an empty entry (0 bytes), or the smallest's place */
	f->err[low] = f->bytes[low];
	f->bytes[low] += len;
}

uint64_t wal_flight_ring_suggest(const struct wal_proc *p)
{
	const struct ada_arena_config *c = p->arena ? ada_arena_config_of(p->arena) : NULL;
	uint64_t best = 0;
	for (size_t j = 0; c && j < p->nthreads; j++) {
		const struct wal_thread *t = p->threads[j];
		if (t->slot >= c->max_threads)
			continue; /* a spill slot's ring is small whatever --detail-mb says */
		for (size_t wi = t->fw_base; wi < t->nfw; wi++) {
			const struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
			if (!fw->lost || !fw->records)
				continue;
			/* Records are near enough one size: the ring that holds
			 * records + lost is the ring times that ratio (rounded up). */
			uint64_t want = fw->records + fw->lost;
			uint64_t need = (c->detail_bytes / fw->records) * want +
			                ((c->detail_bytes % fw->records) * want + fw->records - 1) /
			                    fw->records;
			best = need > best ? need : best;
		}
	}
	return best;
}

void wal_flight_preroll_short(struct ada_recorder *r, struct wal_proc *p)
{
	const struct ada_arena_config *c = p->arena ? ada_arena_config_of(p->arena) : NULL;
	for (size_t j = 0; r->flight.trig && j < p->nthreads; j++) {
		const struct wal_thread *t = p->threads[j];
		for (size_t wi = t->fw_base; wi < t->nfw; wi++) {
			const struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
			const struct ada_trigger_window *w =
			    ada_trigger_window_at(r->flight.trig, wi);
			if (!fw->lost || !fw->oldest_ns || !w || w->fire_ns <= w->from_ns)
				continue;
			uint64_t got = wal_flight_pre_achieved(w, fw->oldest_ns);
			if (!p->pre_asked_ns || got < p->pre_got_ns) {
				p->pre_asked_ns = w->fire_ns - w->from_ns;
				p->pre_got_ns = got;
				/* A spill slot's ring is small whatever --detail-mb says. */
				p->pre_ring_bytes =
				    c && t->slot < c->max_threads ? c->detail_bytes : 0;
			}
		}
	}
}

void wal_flight_window_got(const struct ada_recorder *r, size_t wi, struct ada_live_window_got *g)
{
	*g = (struct ada_live_window_got){0};
	const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
	for (size_t i = 0; w && i < r->nprocs; i++) {
		const struct wal_proc *p = r->procs[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			const struct wal_thread *t = p->threads[j];
			const struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
			if (!fw)
				continue;
			g->records += fw->records;
			g->lost += fw->lost;
			for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
				g->missed[k] += fw->missed[k];
			uint64_t got =
			    fw->oldest_ns ? wal_flight_pre_achieved(w, fw->oldest_ns) : 0;
			g->pre_achieved_ns = got > g->pre_achieved_ns ? got : g->pre_achieved_ns;
		}
	}
	if (w)
		wal_retired_window_got(r, wi, g); /* the processes retired (retire.c) */
}

uint64_t wal_flight_thread_lost(const struct wal_thread *t)
{
	uint64_t n = 0;
	for (size_t wi = t->fw_base; wi < t->nfw; wi++)
		n += wal_flight_tw_of(t, wi)->lost;
	return n;
}

/* Whether another copy of window wi's records on t would decide nothing
 * new: nothing it depends on moved since the last, which did all it could. */
static bool flight_copy_same(const struct wal_thread *t, const struct wal_flight_tw *fw,
                             const struct ada_trigger_window *w, uint64_t head)
{
	return fw->calls && !fw->spent && head == fw->seen_head && t->ring_next == fw->seen_next &&
	       t->file_ring_base == fw->seen_base && t->file_ring_hole == fw->seen_hole &&
	       w->from_ns == fw->seen_from && w->to_ns == fw->seen_to &&
	       wal_detail_taken_records(t) == fw->seen_taken;
}

/* Windows in time order: a before b (by from_ns, then by index). */
static bool flight_before(const struct ada_trigger_window *a, size_t ai,
                          const struct ada_trigger_window *b, size_t bi)
{
	return a->from_ns < b->from_ns || (a->from_ns == b->from_ns && ai < bi);
}

/* The open window after window prev in time order (SIZE_MAX: the first),
 * or SIZE_MAX when there is none. A thread's records are decided once, in
 * ring order, and a window's walk passes over those before its range:
 * the windows copy in time order, so that an earlier window has taken its
 * records before a later one's walk goes past them. A later fire may make
 * a window earlier than those before it (one thread's events reach the
 * drain after another's). Few windows: a scan each. */
static size_t flight_next_open(const struct ada_recorder *r, size_t prev)
{
	size_t n = ada_trigger_window_count(r->flight.trig), best = SIZE_MAX;
	const struct ada_trigger_window *pw = ada_trigger_window_at(r->flight.trig, prev);
	const struct ada_trigger_window *bw = NULL;
	for (size_t wi = 0; wi < n; wi++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		if (w->closed || (pw && !flight_before(pw, prev, w, wi)))
			continue;
		if (!bw || flight_before(w, wi, bw, best)) {
			best = wi;
			bw = w;
		}
	}
	return best;
}

/* Whether an open window earlier than w left records on t at a pass's
 * budget: w's walk would pass over them, neither written nor counted. w
 * waits until that copy is done. */
static bool flight_earlier_spent(const struct ada_recorder *r, const struct wal_thread *t,
                                 size_t wi, const struct ada_trigger_window *w)
{
	for (size_t vi = t->fw_base; vi < t->nfw; vi++) {
		const struct ada_trigger_window *v = ada_trigger_window_at(r->flight.trig, vi);
		if (vi != wi && v && !v->closed && wal_flight_tw_of(t, vi)->spent &&
		    flight_before(v, vi, w, wi))
			return true;
	}
	return false;
}

static uint64_t flight_horizon(const struct ada_recorder *r);

/* Without window memory (--window-mem-mb not given): the take comes
 * within the live persist's budget (and its yield), of what the pass may
 * write, so records wait in the ring as before it. The budget is every
 * thread's together: counted per thread, window memory grew with the
 * number of threads whose records waited there for their index events.
 * Memory already holding the pass's budget (other threads' blocks) is a
 * backlog, as a budget spent is: without one the windows past their end
 * closed with t's records still in its ring, never taken, neither
 * written nor counted. */
static void flight_take_in_budget(struct ada_recorder *r, struct wal_thread *t,
                                  const struct wal_detail_budget *budget)
{
	uint64_t held = r->flight.mem_bytes;
	struct wal_detail_stats st;
	if (held >= budget->bytes) {
		r->flight.backlog = true; /* the next pass takes */
		return;
	}
	if (wal_detail_take(r, t, flight_horizon(r), budget->bytes - held, &st) < 0)
		return;
	r->flight.backlog |= st.budget_spent;
	if (st.gap.records)
		flight_gap(r, t, &st.gap);
}

/* Window wi's records still in t's ring; budget: the pass's bytes (NULL:
 * all of them, at a thread's or a process's end; at_end: all of them
 * within the disk budget's room, the rest counted disk_budget). Threads
 * whose file is final have closed their detail file: whatever their ring
 * still held stays out. */
static void flight_persist_thread(struct ada_recorder *r, struct wal_thread *t, size_t wi,
                                  const struct ada_trigger_window *w,
                                  struct wal_detail_budget *budget)
{
	struct wal_flight_tw *fw;
	bool live = budget && !budget->at_end; /* a pass's, not an end's */
	if (!t->f || t->done || !t->p->arena || !(fw = flight_tw(t, wi)))
		return;
	if (live && (budget->bytes == 0 || flight_earlier_spent(r, t, wi, w))) {
		r->flight.backlog = true; /* the next pass goes on */
		return;
	}
	if (live && !r->flight.mem_limit)
		flight_take_in_budget(r, t, budget);
	struct wal_detail_stats st = {.fill = &fw->fill};
	uint64_t head = ada_detail_ring_head(t->p->arena, t->slot);
	/* The end (no budget) always looks: its take counts the rest of a gap
	 * a live take counted from a moving counter. */
	if (live && flight_copy_same(t, fw, w, head)) {
		fw->skipped++;
		r->flight.waiting |= fw->waiting > 0; /* still: ring_next did not move */
		return;
	}
	/* A new window, or one a fire merged into (its range grew): the kept
	 * gaps it reaches over are its shortfall. */
	bool reach = fw->calls == 0 || w->from_ns != fw->seen_from || w->to_ns != fw->seen_to;
	if (reach)
		flight_passed_missed(t, fw, w); /* before seen_from/to move */
	fw->seen_head = head;
	fw->seen_next = t->ring_next;
	fw->seen_base = t->file_ring_base;
	fw->seen_hole = t->file_ring_hole;
	fw->seen_from = w->from_ns;
	fw->seen_to = w->to_ns;
	fw->seen_taken = wal_detail_taken_records(t);
	fw->calls++;
	if (reach)
		flight_kept_lost(t, fw, w);
	int e = wal_detail_persist_window(r, t, w->from_ns, w->to_ns, fw->calls == 1, budget, &st);
	fw->spent = st.budget_spent;
	r->flight.backlog |= st.budget_spent;
	fw->waiting = st.waiting;
	fw->waiting_in = st.waiting_in;
	r->flight.waiting |= st.waiting > 0;
	/* Decided even when the call failed later (a write): counted. */
	if (st.bad_link)
		flight_missed(t, fw, ADA_MISS_BAD_LINK, st.bad_link, false);
	if (st.over_budget)
		flight_missed(t, fw, ADA_MISS_DISK_BUDGET, st.over_budget, false);
	flight_passed(t, &st.passed);
	if (e < 0) {
		fw->errors++;
		return;
	}
	fw->records += st.records;
	fw->bytes += st.bytes;
	fw->unlinked += st.unlinked;
	if (fw->calls == 1)
		fw->oldest_ns = st.oldest_ns;
	if (st.newest_ns > fw->newest_ns)
		fw->newest_ns = st.newest_ns;
	if (st.gap.records) /* last: it may move t->fw */
		flight_gap(r, t, &st.gap);
}

static void flight_persist_proc(struct ada_recorder *r, struct wal_proc *p,
                                struct wal_detail_budget *budget)
{
	for (size_t wi = flight_next_open(r, SIZE_MAX); wi != SIZE_MAX;
	     wi = flight_next_open(r, wi)) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		/* From a thread further on each pass: a budget that runs out
		 * leaves every thread its turn, not always the last ones. */
		size_t n = p->nthreads, first = n ? (size_t)(r->flight.passes % n) : 0;
		for (size_t j = 0; j < n; j++)
			flight_persist_thread(r, p->threads[(first + j) % n], wi, w, budget);
	}
}

/* The open windows' records in t's ring; room: the detail bytes the disk
 * budget left them (UINT64_MAX: no budget). */
static void flight_thread_windows(struct ada_recorder *r, struct wal_thread *t, uint64_t room)
{
	struct wal_detail_budget end = {.bytes = room, .deadline_ns = UINT64_MAX, .at_end = true};
	for (size_t wi = flight_next_open(r, SIZE_MAX); wi != SIZE_MAX;
	     wi = flight_next_open(r, wi))
		flight_persist_thread(r, t, wi, ada_trigger_window_at(r->flight.trig, wi),
		                      room == UINT64_MAX ? NULL : &end);
}

/* The newest time an open window wants (0: none open). */
static uint64_t flight_horizon(const struct ada_recorder *r)
{
	uint64_t h = 0;
	for (size_t wi = 0; wi < ada_trigger_window_count(r->flight.trig); wi++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		if (!w->closed && w->to_ns > h)
			h = w->to_ns;
	}
	return h;
}

/* The first of a window's two steps, for every live thread of p: its
 * records out of the ring into window memory (wal_detail_take), within
 * the window-memory budget whatever the yield says: a copy, not the
 * encoding and writing the yield holds back. A take stopped by the
 * budget leaves a backlog (the windows stay open for it). */
static void flight_take_proc(struct ada_recorder *r, struct wal_proc *p, uint64_t horizon)
{
	for (size_t j = 0; j < p->nthreads; j++) {
		struct wal_thread *t = p->threads[j];
		if (!t->f || t->done)
			continue;
		uint64_t used = r->flight.mem_bytes, lim = r->flight.mem_limit;
		struct wal_detail_stats st;
		if (wal_detail_take(r, t, horizon, used < lim ? lim - used : 0, &st) < 0)
			continue;
		if (st.budget_spent) {
			r->flight.mem_full++;
			r->flight.backlog = true;
		}
		if (st.gap.records)
			flight_gap(r, t, &st.gap);
	}
}

/* p's arena may be truncated by its process under our mapping: a SIGBUS
 * skips it (the drain's next pass finds the arena shrunk and says so). */
static void flight_take_guarded(struct ada_recorder *r, struct wal_proc *p, uint64_t horizon)
{
	WAL_GUARDED(p->arena, flight_take_proc(r, p, horizon), (void)0);
}

/* Every open window's records out of every live thread's ring (their CPU
 * counted apart from the yielding persist's). */
static void flight_take(struct ada_recorder *r)
{
	uint64_t horizon = r->pass_room_min > 0 && r->flight.mem_limit ? flight_horizon(r) : 0;
	if (!horizon)
		return;
	uint64_t cpu0 = wal_flight_cpu_ns();
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (!p->finished && p->arena)
			flight_take_guarded(r, p, horizon);
	}
	r->flight.take_cpu_ns += wal_flight_cpu_ns() - cpu0;
}

/* p's arena may be truncated by its process under our mapping: a SIGBUS
 * skips it (the drain's next pass finds the arena shrunk and says so). */
static void flight_persist_guarded(struct ada_recorder *r, struct wal_proc *p)
{
	WAL_GUARDED(p->arena, flight_persist_proc(r, p, &r->flight.budget), (void)0);
}

/* The pass's budget (FLIGHT_PASS_*): the index lane comes first, and
 * while the CPU is contended the program (flight_yield.c). */
static void flight_budget(struct ada_recorder *r)
{
	uint64_t ns = r->pass_fill_ns / 2;
	uint64_t max = r->flight.pass_max_ns ? r->flight.pass_max_ns : FLIGHT_PASS_MAX_NS;
	ns = ns > max ? max : ns;
	bool room = r->pass_room_min > 0 && ns >= FLIGHT_PASS_MIN_NS;
	/* Asked only once there is a window to persist: the yield opens the
	 * drain's schedstat, a descriptor a recording without windows must
	 * not spend (under a low ulimit -n it is a process's directory). */
	uint64_t cpu = ada_trigger_window_count(r->flight.trig)
	                   ? wal_flight_yield_room(&r->flight.yield, wal_now_ns())
	                   : UINT64_MAX;
	r->flight.yield_held = room && cpu < FLIGHT_PASS_MIN_NS;
	ns = cpu < ns ? cpu : ns;
	room = room && ns >= FLIGHT_PASS_MIN_NS;
	uint64_t bytes = FLIGHT_PASS_BYTES;
	if (r->flight.pass_room && r->flight.pass_room < bytes)
		bytes = r->flight.pass_room; /* what the disk budget made room for */
	r->flight.budget = (struct wal_detail_budget){
	    .bytes = room ? bytes : 0,
	    .deadline_ns = wal_now_ns() + ns,
	};
}

/* Test hook (e2e.flight_window_deferred, e2e.flight_window_spent):
 * ADA_TEST_WINDOW_PAUSE=FILE makes the drain, in a window pass that finds
 * more windows than the last one it waited in, create FILE and wait there
 * until FILE is gone (60 s at most), before it copies anything: a drain
 * descheduled between taking a trigger's event and persisting its window
 * (the program goes on meanwhile), made to happen. true: it waited. */
static bool flight_test_pause(const struct ada_recorder *r)
{
	static size_t held; /* windows at the last wait */
	static const char *f;
	static bool read;
	if (!read) { /* once: the drain runs this every pass while a window is behind */
		f = getenv("ADA_TEST_WINDOW_PAUSE");
		read = true;
	}
	size_t n = f && *f ? ada_trigger_window_count(r->flight.trig) : 0;
	if (n <= held)
		return false;
	held = n;
	wal_test_hold(f);
	return true;
}

/* Whether a copy of window wi on a thread that is still written found
 * records of it whose index events the drain had not taken yet. */
static bool flight_window_waiting(const struct ada_recorder *r, size_t wi)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct wal_proc *p = r->procs[i];
		for (size_t j = 0; !p->finished && p->arena && j < p->nthreads; j++) {
			const struct wal_thread *t = p->threads[j];
			const struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
			if (t->f && !t->done && fw && fw->waiting)
				return true;
		}
	}
	return false;
}

/* Every open window, every live thread, within the pass's budget
 * (flight_budget: none while a ring this pass read is at its high watermark
 * or would fill soon); closes the windows whose end is past (with slack),
 * once no copy was left unfinished by the budget and none of their
 * records waits for its index event: the clock says when a window's
 * records are made, the drain's progress when they can be linked (a
 * drain behind its rings would otherwise close a window without the
 * records it has not reached yet, neither written nor counted). Only in
 * --detail triggered: `always` persists everything by itself, `never`
 * has no detail ring. */
static void flight_persist(struct ada_recorder *r, uint64_t now)
{
	if (r->o.detail_mode != ADA_DETAIL_TRIGGERED)
		return;
	if (flight_test_pause(r))
		now = ada_boottime_ns(); /* the clock went on while it waited */
	flight_budget(r);
	r->flight.passes++;
	r->flight.backlog = false;
	r->flight.waiting = false;
	/* The takes, first: none while an index ring this pass read is at
	 * its high watermark (the index lane comes first; the detail rings
	 * are larger). */
	flight_take(r);
	/* The persist's CPU, taken as a window's (none: nothing to persist). */
	bool timed = r->flight.budget.bytes > 0 && ada_trigger_window_count(r->flight.trig);
	if (timed)
		wal_flight_yield_begin(&r->flight.yield);
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (!p->finished && p->arena)
			flight_persist_guarded(r, p);
	}
	if (timed)
		wal_flight_yield_end(&r->flight.yield);
	/* Held back for the program: counted when a window had records left. */
	r->flight.yield.held += r->flight.yield_held && r->flight.backlog;
	r->flight.win_gen_seen = ada_trigger_window_gen(r->flight.trig);
	if (r->flight.backlog)
		return; /* a window's end may still have records to copy */
	for (size_t wi = 0; wi < ada_trigger_window_count(r->flight.trig); wi++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		if (!w->closed && now >= w->to_ns + FLIGHT_CLOSE_SLACK_NS &&
		    !(r->flight.waiting && flight_window_waiting(r, wi)))
			ada_trigger_window_close(r->flight.trig, wi);
	}
}

bool wal_flight_rotate_later(struct ada_recorder *r, struct wal_thread *t, uint64_t bytes,
                             uint64_t gen_bytes)
{
	if (r->o.detail_mode != ADA_DETAIL_TRIGGERED || !wal_detail_taken_bytes(t)) {
		t->rotate_waited = false;
		return false;
	}
	/* Half a generation more at most: the disk budget holds four. */
	if (bytes - gen_bytes >= gen_bytes / 2) {
		r->flight.rotate_forced++;
		t->rotate_waited = false;
		return false;
	}
	r->flight.rotate_deferred += !t->rotate_waited;
	t->rotate_waited = true;
	return true;
}

void wal_flight_thread_end(struct ada_recorder *r, struct wal_thread *t, uint64_t room)
{
	if (!t->p->arena)
		return;
	if (r->o.detail_mode == ADA_DETAIL_TRIGGERED && r->flight.trig)
		WAL_GUARDED(t->p->arena, flight_thread_windows(r, t, room), (void)0);
	/* Its ring's overwrites since the last look: the thread's count whole. */
	WAL_GUARDED(t->p->arena, wal_detail_sync_overwritten(t), (void)0);
}

void wal_flight_thread_unread(struct ada_recorder *r, struct wal_thread *t)
{
	if (r->o.detail_mode != ADA_DETAIL_TRIGGERED || !r->flight.trig)
		return;
	for (size_t wi = t->fw_base; wi < t->nfw; wi++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
		if (w && !w->closed && fw->waiting_in)
			flight_missed(t, fw, ADA_MISS_UNREAD_AT_END, fw->waiting_in, false);
		fw->waiting = fw->waiting_in = 0; /* its file is final: nothing waits */
	}
}

void wal_flight_after_pass(struct ada_recorder *r)
{
	/* Records waiting for their index events: this pass took more. */
	if (ada_trigger_window_gen(r->flight.trig) != r->flight.win_gen_seen || r->flight.backlog ||
	    r->flight.waiting)
		flight_persist(r, ada_boottime_ns());
}

/* ---- the drain's cadence ---- */

static void flight_manual(struct ada_recorder *r, uint64_t now)
{
	/* Pairs with the release add in ada_recorder_request_manual(). */
	uint64_t n = atomic_load_explicit(&r->flight.manual_requests, memory_order_acquire);
	for (; r->flight.manual_seen < n; r->flight.manual_seen++)
		if (ada_trigger_fire_manual(r->flight.trig, now) < 0)
			r->flight.manual_dropped++;
}

/* Seconds since local midnight (time= ranges are local wall-clock times). */
static uint32_t flight_local_sec(void)
{
	time_t wall = time(NULL);
	struct tm tm;
	localtime_r(&wall, &tm);
	return (uint32_t)(tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec);
}

void wal_flight_tick(struct ada_recorder *r)
{
	uint64_t now = ada_boottime_ns();
	flight_manual(r, now);
	ada_trigger_tick(r->flight.trig, now, flight_local_sec());
	flight_persist(r, now); /* the post-roll, as it happens */
}

/* ---- death ---- */

static struct wal_thread *flight_thread_of(struct wal_proc *p, uint32_t tid)
{
	for (size_t j = p->nthreads; j-- > 0;)
		if (p->threads[j]->tid == tid)
			return p->threads[j];
	return NULL;
}

/* The crash record, checked: a signal number and a thread of this process. */
static bool flight_crash_read(struct ada_recorder *r, struct wal_proc *p, struct ada_crash_info *ci,
                              uint64_t *ns)
{
	if (!p->arena || !ada_arena_crash_info(p->arena, ci))
		return false;
	if (ci->signo <= 0 || ci->signo >= 65 || !flight_thread_of(p, ci->tid))
		return false;
	*ns = r->use_tsc && ada_tsc_clock_ready(&r->clk) ? ada_tsc_clock_to_ns(&r->clk, ci->ts_raw)
	                                                 : ci->ts_raw;
	return true;
}

/* The crashing thread's last index event: the fatal-signal marker
 * (docs/format.md). Written by the drain from the crash record, so no ring
 * space was needed in the dying thread. */
static uint64_t flight_marker(struct wal_thread *t, const struct ada_crash_info *ci, uint64_t ns)
{
	struct atf_index_event e = {
	    .timestamp_ns = ns < t->last_ts ? t->last_ts : ns,
	    .function_id = ci->addr,
	    .thread_id = ci->tid,
	    .event_kind = ATF_EVENT_EXCEPTION,
	    .call_depth = ADA_SIGNAL_MARKER_FLAG | (uint32_t)ci->signo,
	    .detail_seq = ATF_NO_DETAIL,
	};
	uint64_t seq = t->f ? ada_wal_file_events(t->f) : 0;
	if (t->f && ada_wal_file_append(t->f, &e, 1) == 1) {
		t->last_ts = e.timestamp_ns;
		t->p->events++;
		/* Its signal context record waits for the thread's finalize:
		 * the windows' records go first in the detail file. */
		t->p->crash_thread = t;
		t->p->crash_seq = seq;
		t->p->crash_ns = e.timestamp_ns;
		t->p->crash_ci = *ci;
	}
	if (t->trig)
		ada_trigger_feed(t->trig, &e, 1);
	return e.timestamp_ns;
}

static json_t *flight_frame(struct wal_proc *p, const struct ada_trigger_frame *f)
{
	const char *name = NULL, *mod = NULL;
	char id[32];
	json_t *o = json_object();
	if (p->syms)
		ada_symtab_resolve(p->syms, f->fn_id, &name, &mod);
	snprintf(id, sizeof(id), "0x%" PRIx64, f->fn_id);
	json_object_set_new(o, "function_id", json_string(id));
	json_object_set_new(o, "function", name ? json_string(name) : json_null());
	json_object_set_new(o, "module", mod ? json_string(mod) : json_null());
	json_object_set_new(o, "depth", json_integer(f->depth));
	json_object_set_new(o, "call_ns", json_integer((json_int_t)f->call_ns));
	return o;
}

/* Each thread's open frames at the end, innermost first. */
static json_t *flight_stacks(struct wal_proc *p)
{
	json_t *a = json_array();
	struct ada_trigger_frame fr[FLIGHT_STACK_FRAMES];
	for (size_t j = 0; j < p->nthreads; j++) {
		struct wal_thread *t = p->threads[j];
		if (!t->trig)
			continue;
		uint32_t depth;
		size_t n = ada_trigger_thread_stack(t->trig, fr, FLIGHT_STACK_FRAMES, &depth);
		json_t *o = json_object(), *frames = json_array();
		json_object_set_new(o, "thread", json_integer(t->seq));
		json_object_set_new(o, "tid", json_integer(t->tid));
		json_object_set_new(o, "depth", json_integer(depth));
		for (size_t k = 0; k < n; k++)
			json_array_append_new(frames, flight_frame(p, &fr[k]));
		json_object_set_new(o, "frames", frames);
		json_object_set_new(o, "frames_omitted", json_integer(depth > n ? depth - n : 0));
		json_array_append_new(a, o);
	}
	return a;
}

static uint64_t flight_last_ts(const struct wal_proc *p)
{
	uint64_t ts = 0;
	for (size_t j = 0; j < p->nthreads; j++)
		if (p->threads[j]->last_ts > ts)
			ts = p->threads[j]->last_ts;
	return ts ? ts : ada_boottime_ns();
}

/* The signal p died of (0: it did not), from waitpid or the crash record. */
static int flight_death_signal(const struct wal_proc *p, bool have_ci,
                               const struct ada_crash_info *ci)
{
	if (p->reaped && WIFSIGNALED(p->wstatus))
		return WTERMSIG(p->wstatus);
	if (p->reaped)
		return 0; /* it exited: a recorded crash was not its end */
	return have_ci ? ci->signo : 0;
}

json_t *wal_crash_context_json(const struct ada_crash_info *ci, uint8_t arch)
{
	json_t *o = json_object(), *regs = json_object();
	char hex[24];
	snprintf(hex, sizeof(hex), "0x%" PRIx64, ci->regs[ATF_SIGNAL_REG_PC]);
	json_object_set_new(o, "pc", json_string(hex));
	for (uint32_t i = 0; i < ADA_CRASH_NREGS; i++) {
		snprintf(hex, sizeof(hex), "0x%" PRIx64, ci->regs[i]);
		json_object_set_new(regs, ada_atf_signal_reg_name_for(arch, i), json_string(hex));
	}
	json_object_set_new(o, "registers", regs);
	return o;
}

static const char *const flight_others_how[] = {"none", "proc", "seccomp", "no_proc"};

json_t *wal_crash_others_json(const struct ada_arena *a)
{
	struct ada_crash_thread t[ADA_CRASH_OTHERS];
	uint32_t n, seen;
	uint32_t how = a ? ada_arena_crash_others(a, t, &n, &seen) : ADA_OTHERS_NONE;
	if (how == ADA_OTHERS_NONE || how >= sizeof(flight_others_how) / sizeof(*flight_others_how))
		return NULL;
	json_t *o = json_object(), *arr = json_array();
	char hex[24];
	json_object_set_new(o, "read", json_string(flight_others_how[how]));
	for (uint32_t i = 0; i < n; i++) {
		json_t *e = json_object();
		bool running = t[i].nr == ADA_CRASH_RUNNING;
		json_object_set_new(e, "tid", json_integer(t[i].tid));
		json_object_set_new(e, "state",
		                    json_string(running       ? "running"
		                                : t[i].nr < 0 ? "blocked"
		                                              : "syscall"));
		json_object_set_new(e, "syscall",
		                    !running && t[i].nr >= 0 ? json_integer(t[i].nr) : json_null());
		snprintf(hex, sizeof(hex), "0x%" PRIx64, t[i].pc);
		json_object_set_new(e, "pc", running ? json_null() : json_string(hex));
		snprintf(hex, sizeof(hex), "0x%" PRIx64, t[i].sp);
		json_object_set_new(e, "sp", running ? json_null() : json_string(hex));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "threads", arr);
	json_object_set_new(o, "omitted", json_integer(seen > n ? seen - n : 0));
	return o;
}

static json_t *flight_crash_json(struct wal_proc *p, int sig, bool have_ci,
                                 const struct ada_crash_info *ci, uint64_t ns)
{
	/* The arena first: a fault in it (WAL_GUARDED) leaves nothing built. */
	json_t *others = have_ci ? wal_crash_others_json(p->arena) : NULL;
	json_t *c = json_object();
	char addr[32];
	json_object_set_new(c, "abnormal", json_true());
	json_object_set_new(c, "signal", json_integer(sig));
	json_object_set_new(c, "signal_name",
	                    json_string(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?"));
	json_object_set_new(c, "time_ns", json_integer((json_int_t)ns));
	json_object_set_new(c, "caught", json_boolean(have_ci));
	if (have_ci) {
		snprintf(addr, sizeof(addr), "0x%" PRIx64, ci->addr);
		struct wal_thread *t = flight_thread_of(p, ci->tid);
		json_object_set_new(c, "faulting_tid", json_integer(ci->tid));
		json_object_set_new(c, "faulting_thread", t ? json_integer(t->seq) : json_null());
		json_object_set_new(c, "address", json_string(addr));
		json_object_set_new(c, "si_code", json_integer(ci->code));
		json_object_set_new(c, "context", wal_crash_context_json(ci, p->arch));
		if (others)
			json_object_set_new(c, "other_threads", others);
	} else {
		json_object_set_new(c, "faulting_tid", json_null());
		json_object_set_new(c, "address", json_null());
		json_object_set_new(
		    c, "note",
		    json_string(
		        sig == SIGKILL
		            ? "SIGKILL cannot be caught: no faulting thread or address; the "
		              "stacks are the open frames of the index lane"
		            : "the agent's handler did not see this signal (not a watched "
		              "signal, or the program reset it): the stacks are the open "
		              "frames of the index lane"));
	}
	json_object_set_new(c, "stacks", flight_stacks(p));
	return c;
}

/* The window whose time range holds ns (windows do not overlap), or -1. */
static ptrdiff_t flight_window_of(struct ada_recorder *r, uint64_t ns)
{
	for (size_t wi = 0; wi < ada_trigger_window_count(r->flight.trig); wi++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, wi);
		if (w->from_ns <= ns && ns <= w->to_ns)
			return (ptrdiff_t)wi;
	}
	return -1;
}

void wal_flight_context(struct ada_recorder *r, struct wal_thread *t)
{
	struct wal_proc *p = t->p;
	if (p->crash_thread != t)
		return;
	p->crash_thread = NULL;
	/* As any record: with --detail triggered only inside a window (the
	 * crash trigger's), counted in it; never without a detail lane. The
	 * manifest's crash.context has the registers in every case. */
	ptrdiff_t wi = -1;
	if (r->o.detail_mode == ADA_DETAIL_NEVER || !t->f)
		return;
	if (r->o.detail_mode == ADA_DETAIL_TRIGGERED &&
	    (!r->flight.trig || (wi = flight_window_of(r, p->crash_ns)) < 0))
		return;
	int e = wal_detail_append_signal(t, p->crash_seq, p->crash_ns, &p->crash_ci);
	if (e < 0) {
		wal_note(r, p,
		         "thread %" PRIu32 ": the signal context record could not be written: %s",
		         t->seq, strerror(-e));
		return;
	}
	struct wal_flight_tw *fw = wi >= 0 ? flight_tw(t, (size_t)wi) : NULL;
	if (fw) {
		fw->records++;
		fw->bytes +=
		    ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(struct atf_detail_signal_payload);
	}
}

/* p is gone and its rings are empty: marker, crash fire, stacks. Called
 * before its files are finalized and its arena closed. */
void wal_flight_proc_end(struct ada_recorder *r, struct wal_proc *p)
{
	struct ada_crash_info ci;
	uint64_t ns = 0;
	bool have_ci = flight_crash_read(r, p, &ci, &ns);
	int sig = flight_death_signal(p, have_ci, &ci);
	flight_manual(r, ada_boottime_ns()); /* a SIGUSR2 it sent just before it ended */
	ada_trigger_tick(r->flight.trig, ada_boottime_ns(), flight_local_sec());
	if (have_ci && sig && sig == ci.signo)
		ns = flight_marker(flight_thread_of(p, ci.tid), &ci, ns);
	else
		have_ci = false;
	if (sig) {
		if (!ns)
			ns = flight_last_ts(p);
		flight_name(p, 0); /* reread the .syms files: every module, for the names */
		ada_trigger_fire_crash(r->flight.trig, ns, have_ci ? ci.tid : 0);
		p->crash = flight_crash_json(p, sig, have_ci, &ci, ns);
	}
	/* What an open window still wants from its rings is taken by each
	 * thread's end next (drain_end.c: drain_thread_finalize, then
	 * wal_flight_thread_end), within the room the disk budget made: taken
	 * here without a budget, a process's 16 MiB rings were written past a
	 * 16 MiB budget by 4-8 MiB (e2e.budget_windows_big). */
}

void wal_flight_thread_finished(struct wal_thread *t)
{
	ada_trigger_thread_free(t->trig);
	t->trig = NULL;
}

void wal_flight_proc_finished(struct wal_proc *p)
{
	for (size_t j = 0; j < p->nthreads; j++)
		wal_flight_thread_finished(p->threads[j]);
	ada_trigger_proc_free(p->trig);
	p->trig = NULL;
	ada_symtab_free(p->syms);
	p->syms = NULL;
}

/* ---- manifest ---- */

static json_t *flight_stats(struct ada_recorder *r)
{
	struct ada_trigger_stats s;
	ada_trigger_get_stats(r->flight.trig, &s);
	json_t *o = json_object();
	json_object_set_new(o, "fires", json_integer((json_int_t)s.fires));
	json_object_set_new(o, "held_off", json_integer((json_int_t)s.held_off));
	json_object_set_new(o, "escalated", json_integer((json_int_t)s.escalated));
	json_object_set_new(o, "over_max_windows", json_integer((json_int_t)s.over_max));
	json_object_set_new(o, "merged", json_integer((json_int_t)s.merged));
	json_object_set_new(o, "manual_ignored", json_integer((json_int_t)s.manual_ignored));
	json_object_set_new(o, "manual_dropped",
	                    json_integer((json_int_t)r->flight.manual_dropped));
	json_object_set_new(o, "unresolved_names", json_integer((json_int_t)s.unresolved));
	json_object_set_new(o, "p99_untracked", json_integer((json_int_t)s.p99_untracked));
	json_object_set_new(o, "stack_frames_dropped", json_integer((json_int_t)s.stack_dropped));
	const struct wal_flight_yield *y = &r->flight.yield;
	json_object_set_new(o, "persist_cpu_ns", json_integer((json_int_t)y->cpu_ns));
	json_object_set_new(o, "persist_contended", json_integer((json_int_t)y->contended));
	json_object_set_new(o, "persist_yielded", json_integer((json_int_t)y->held));
	json_object_set_new(o, "window_mem_limit", json_integer((json_int_t)r->flight.mem_limit));
	json_object_set_new(o, "window_mem_peak", json_integer((json_int_t)r->flight.mem_peak));
	json_object_set_new(o, "window_mem_full", json_integer((json_int_t)r->flight.mem_full));
	json_object_set_new(o, "take_cpu_ns", json_integer((json_int_t)r->flight.take_cpu_ns));
	json_object_set_new(o, "rotations_deferred",
	                    json_integer((json_int_t)r->flight.rotate_deferred));
	json_object_set_new(o, "rotations_forced",
	                    json_integer((json_int_t)r->flight.rotate_forced));
	json_object_set_new(o, "stack_mismatches", json_integer((json_int_t)s.stack_mismatch));
	return o;
}

/* "flight_recorder": configuration, armed triggers, windows, counts. */
static json_t *flight_json(struct ada_recorder *r, const struct wal_proc *p)
{
	const struct ada_trigger_opts *o = ada_trigger_engine_opts(r->flight.trig);
	json_t *f = json_object(), *trig = json_array(), *wins = json_array();
	json_object_set_new(f, "pre_roll_ns", json_integer((json_int_t)o->pre_ns));
	json_object_set_new(f, "post_roll_ns", json_integer((json_int_t)o->post_ns));
	json_object_set_new(f, "max_windows", json_integer(o->max_windows));
	json_object_set_new(f, "holdoff_ns", json_integer((json_int_t)o->holdoff_ns));
	json_object_set_new(f, "persist_share_pct", json_integer(r->flight.yield.share_pct));
	struct ada_trigger_spec s[ADA_TRIGGER_MAX];
	size_t n = ada_trigger_list(r->flight.trig, s, ADA_TRIGGER_MAX);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(trig, json_string(s[i].text));
	json_object_set_new(f, "triggers", trig);
	for (size_t i = 0; i < ada_trigger_window_count(r->flight.trig); i++)
		json_array_append_new(
		    wins, wal_flight_window_json(ada_trigger_window_at(r->flight.trig, i), p, i));
	json_object_set_new(f, "windows", wins);
	json_object_set_new(f, "counts", flight_stats(r));
	return f;
}

void wal_flight_manifest(json_t *root, struct ada_recorder *r, struct wal_proc *p)
{
	json_object_set_new(root, "flight_recorder", flight_json(r, p));
	if (p->crash)
		json_object_set(root, "crash", p->crash);
}
