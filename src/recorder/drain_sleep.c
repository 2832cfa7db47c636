/*
 * The drain's sleep: while every ring of every process is idle the drain
 * waits on the recording's doorbell (a futex word in the budget page,
 * src/ring/shm_budget.c) instead of polling every millisecond, and is
 * woken by what has work for it:
 *   - producers, from their cold path only: a chunk of events (an eighth
 *     of the ring), a slot claimed, a full ring, a thread's end, a wait
 *     for a slot or for detail room, a process's end or crash, a new
 *     arena (src/ring: producer.c, arena.c, env.c, shm_budget.c);
 *   - the recorder's own threads and signal handlers (ada_recorder_wake):
 *     a child that ended (SIGCHLD), a stop, a manual fire, a key-symbol
 *     set, the control socket's arm, disarm and trigger;
 *   - its timers, which the sleep never outlasts: the 1 s tick (metrics,
 *     live view, clock, exec watch, heap), the side files' scan, early
 *     manifests, and the 10 ms tick while something needs it (a time
 *     trigger, an open window, key-symbol rules, arenas held for a
 *     refused maker).
 * The drain sleeps only when nothing is in flight (writes, staged
 * buffers, events taken and not released, slots being prepared) and no
 * stop or end is under way; otherwise it polls as before.
 *
 * The lost wake-up: the drain stores ASLEEP and fences, then looks once
 * more at every arena (ada_arena_idle), at the budget page's count of
 * arena names and at the wakes asked; a producer publishes, fences, then reads
 * the bell. Either the look sees the work or the ringer sees ASLEEP.
 *
 * Events below a producer's chunk ring no bell: a sleep looks at the
 * rings every DRAIN_LOOK_NS (sleep_wait_looking) and ends at the look
 * that finds them, so they wait 100 ms at most, never a timer's second.
 * The target writes the bell too. A producer that never rings costs its
 * events that wait, never a loss; a bell that rings constantly makes the
 * drain poll: a ring after
 * which the pass found nothing is counted (`empty`) and the next idle
 * wait is a poll of DRAIN_IDLE_MAX_US, so a hostile ringer costs what
 * the old polling did, no more.
 *
 * Threads: the drain thread, but ada_recorder_wake (any thread, signal
 * handlers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "ring_bell.h"
#include "trigger.h"
#include "arena_internal.h"
#include "drain_internal.h"

/* A sleep shorter than this is not worth its wake-up: poll instead. */
#define DRAIN_SLEEP_MIN_NS (2ull * DRAIN_IDLE_MAX_US * 1000u)
/* How long events below a producer's chunk may wait in its ring while the
 * drain sleeps (a thread that wrote a few and blocked rings no bell): a
 * sleep looks at the rings this often (sleep_wait_looking). A tenth of
 * the 1 s tick: `ada status` and a trigger on those events lag by this at
 * most, as a window's close does (100 ms past its end); at most ten
 * wake-ups a second of an idle drain, each a futex return, a read of
 * the page's count of arena names and the loads of ada_arena_idle, no
 * pass. */
#define DRAIN_LOOK_NS 100000000ull

void ada_recorder_wake(struct ada_recorder *r)
{
	/* Relaxed: the ring's fence orders it before the bell's load; pairs
	 * with the fence in ada_shm_budget_bell_arm() before the drain reads
	 * wake_req in sleep_look(). */
	atomic_fetch_add_explicit(&r->bell.wake_req, 1, memory_order_relaxed);
	ada_shm_budget_ring(r->bell.page);
}

void drain_bell_counts(const struct ada_recorder *r, struct ada_live_drain *out)
{
	const struct wal_bell *b = &r->bell;
	*out = (struct ada_live_drain){
	    .doorbell = b->page && !b->refused,
	    .polling_err = -b->refused,
	    .passes = b->passes,
	    .sleeps = b->sleeps,
	    .rung = b->rung,
	    .empty_rings = b->empty,
	    .averted = b->averted,
	    .looks = b->looks,
	    .looks_found = b->looks_found,
	};
}

const char *ada_drain_polling_why(int err, char *buf, size_t cap)
{
	if (!err)
		return NULL;
	snprintf(buf, cap, "the doorbell's futex refused to wait (%s)", strerror(err));
	return buf;
}

void drain_bell_pass(struct ada_recorder *r)
{
	r->bell.passes++;
	if (r->last_reclaim_ns != r->bell.tick_seen_ns) {
		/* The pass before ran the 10 ms tick: it saw the wakes asked
		 * up to its start (sleep_wake_untaken). */
		r->bell.tick_seen_ns = r->last_reclaim_ns;
		r->bell.wake_ticked = r->bell.wake_seen;
	}
	/* Relaxed: the bell's fences order it (sleep_look). */
	r->bell.wake_seen = atomic_load_explicit(&r->bell.wake_req, memory_order_relaxed);
}

/* A wake was asked (ada_recorder_wake: a manual fire, a key-symbol set,
 * the control socket's arm, disarm or trigger) since the start of the
 * last pass that ran the 10 ms tick, which is where those are taken: a
 * wake that came while the drain was awake, or that woke it within 10 ms
 * of its last tick, is taken at the next tick, not at the 1 s one. */
static bool sleep_wake_untaken(const struct ada_recorder *r)
{
	if (r->last_reclaim_ns != r->bell.tick_seen_ns)
		return false; /* the pass just run ticked: it saw wake_seen */
	return r->bell.wake_seen != r->bell.wake_ticked;
}

/* Something of the triggers needs the 10 ms tick: a time trigger, an
 * open window (its post-roll is persisted as it happens), a backlog, a
 * trigger armed or removed, or a manual fire, that the engine has not
 * taken yet (the tick takes them). */
static bool sleep_flight_timed(struct ada_recorder *r)
{
	static struct ada_trigger_spec specs[ADA_TRIGGER_MAX]; /* the drain's only */
	struct ada_trigger_engine *e = r->flight.trig;
	if (!e)
		return false;
	if (r->flight.backlog || ada_trigger_staged_pending(e))
		return true;
	for (size_t i = ada_trigger_window_count(e); i-- > 0;)
		if (!ada_trigger_window_at(e, i)->closed)
			return true;
	size_t n = ada_trigger_list(e, specs, ADA_TRIGGER_MAX);
	for (size_t i = 0; i < n; i++)
		if (specs[i].kind == ADA_TRIGGER_TIME)
			return true;
	return false;
}

/* Work the drain does a step of per pass, or that waits for a timer of
 * the writer's: no sleep on the doorbell while there is any. */
static bool sleep_work_left(struct ada_recorder *r)
{
	/* relaxed: a hint, drain_stop_now() reads it again */
	if (atomic_load_explicit(&r->stop_req, memory_order_relaxed) || r->main_reaped ||
	    !ada_wal_io_quiet(r->io))
		return true;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct wal_proc *p = r->procs[i];
		if (p->finished)
			continue;
		if (p->gone || p->reaped || p->vanished || drain_prep_pending(p))
			return true;
		for (size_t j = 0; j < p->nopen; j++) { /* every thread not finalized */
			const struct wal_thread *t = p->open[j];
			if (!t->done && t->pending)
				return true; /* written, not released yet: the next pass does */
		}
	}
	return false;
}

static uint64_t sleep_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* How long the drain may sleep from now: until its next timer. Timers
 * already due are the next pass's (it runs them), not a reason to wait. */
static uint64_t sleep_until(struct ada_recorder *r, uint64_t now)
{
	uint64_t at = r->last_tick_ns + DRAIN_TICK_NS;
	uint64_t scan = r->budget.scan_ns + r->budget.scan_every;
	if (scan > now)
		at = sleep_min(at, scan);
	/* wal_live_stale: events a pass took between two 10 ms ticks are in
	 * `ada status` at the next one, not at the 1 s tick. */
	if (r->shm.nheld || wal_keysym_timed(r) || sleep_flight_timed(r) || wal_live_stale(r) ||
	    sleep_wake_untaken(r))
		at = sleep_min(at, r->last_reclaim_ns + DRAIN_RECLAIM_NS);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct wal_proc *p = r->procs[i];
		uint64_t due = p->admit_ns + WAL_EARLY_MANIFEST_NS;
		if (!p->finished && p->arena && !p->early_manifest && due > now)
			at = sleep_min(at, due);
	}
	uint64_t left = at > now ? at - now : 0;
	return sleep_min(left, ada_wal_io_due_ns(r->io)); /* staged buffers, flushes */
}

/* p's arena, read under the SIGBUS guard (a truncated one is not idle:
 * the pass finds it lost). */
static bool sleep_arena_idle(struct wal_proc *p)
{
	volatile bool idle = false; /* read after a longjmp */
	WAL_GUARDED(p->arena, idle = ada_arena_idle(p->arena), idle = false);
	return idle;
}

/* The last look after ASLEEP: true when nothing came (every arena idle,
 * no new arena name queued, no wake asked). */
static bool sleep_look(struct ada_recorder *r)
{
	/* Relaxed: ordered after ASLEEP by the fence in
	 * ada_shm_budget_bell_arm(); pairs with ada_recorder_wake(). */
	if (atomic_load_explicit(&r->bell.wake_req, memory_order_relaxed) != r->bell.wake_seen)
		return false;
	/* A new arena: its maker counted its name, then rang. */
	if (ada_shm_budget_names(r->bell.page) != r->bell.names_seen)
		return false;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		if (!p->finished && p->arena && !sleep_arena_idle(p))
			return false;
	}
	return true;
}

/* The wait of a sleep of ns: on the doorbell, in steps of DRAIN_LOOK_NS,
 * each followed by the last look's protocol again (ASLEEP, then every
 * arena): events a producer wrote without ringing end the sleep at the
 * look after them, not at the drain's timer. As ada_shm_budget_bell_wait:
 * 1 rung, 0 the timer or a look that found work (looks_found), -errno. */
static int sleep_wait_looking(struct ada_recorder *r, uint64_t ns)
{
	uint64_t until = wal_now_ns() + ns;
	for (;;) {
		uint64_t now = wal_now_ns(), left = until > now ? until - now : 0;
		bool last = left <= DRAIN_LOOK_NS;
		int rc = ada_shm_budget_bell_wait(r->bell.page, last ? left : DRAIN_LOOK_NS);
		if (rc != 0 || last)
			return rc;
		r->bell.looks++;
		ada_shm_budget_bell_arm(r->bell.page);
		if (!sleep_look(r)) {
			if (ada_shm_budget_bell_disarm(r->bell.page))
				return 1; /* a ringer came too: a ring, as any other */
			r->bell.looks_found++;
			return 0;
		}
	}
}

/* Test hook (idle_test.py --refused): ADA_TEST_BELL_REFUSED=1 makes the
 * futex refuse the first wait (ENOSYS), as a kernel or a seccomp filter
 * without it would: the polling fallback, made to happen. */
static int sleep_test_refused(void)
{
	static int refuse = -1; /* the drain's only */
	if (refuse < 0) {
		const char *v = getenv("ADA_TEST_BELL_REFUSED");
		refuse = v && !strcmp(v, "1");
	}
	return refuse ? -ENOSYS : 0;
}

bool drain_sleep(struct ada_recorder *r, bool busy, uint32_t idle_us)
{
	bool woken = r->bell.woken;
	r->bell.woken = false;
	if (woken && !busy) {
		r->bell.empty++; /* a ring, and nothing to do: poll once first */
		r->bell.paced = true;
	}
	/* A gap of a few polls (the back-off to DRAIN_IDLE_MAX_US) first: a
	 * busy program's short pauses keep the polling they had. */
	if (busy || idle_us < DRAIN_IDLE_MAX_US || !r->bell.page || r->bell.refused)
		return false;
	if (r->bell.paced) {
		r->bell.paced = false;
		return false;
	}
	if (sleep_work_left(r))
		return false;
	uint64_t ns = sleep_until(r, wal_now_ns());
	if (ns < DRAIN_SLEEP_MIN_NS)
		return false;
	ada_shm_budget_bell_arm(r->bell.page);
	if (!sleep_look(r)) {
		/* Work came, or a change no pass can act on yet (a process
		 * between its exit and its reaping): the caller polls as before,
		 * never a loop of passes with no wait. */
		(void)ada_shm_budget_bell_disarm(r->bell.page);
		r->bell.averted++;
		return false;
	}
	r->bell.sleeps++;
	int rc = sleep_test_refused();
	if (rc == 0)
		rc = sleep_wait_looking(r, ns);
	if (rc < 0) {
		/* The futex would not wait (it returns at once): poll from now
		 * on, as without a doorbell; the manifest says so. */
		r->bell.refused = rc;
		return false;
	}
	r->bell.rung += rc > 0;
	r->bell.woken = rc > 0;
	return true;
}
