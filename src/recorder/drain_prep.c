/*
 * The drain prepares ring slots ahead of the threads that will claim them,
 * so that a thread's start waits for neither page allocation nor mlock.
 *
 * Threads: the drain thread only, inside its guarded section for p's
 * arena (a truncated file's fault ends the pass, not the recorder).
 *
 * Spares: the lowest free full slots get their index part's pages
 * populated and locked in the recorder's mapping (ada_arena_slot_prepare,
 * ADA_PREP_NO_DETAIL), which marks them ready; a claim prefers such a
 * slot and then only flips its state (ring_slot_claim). How many
 * (drain_prep_spares_for): none for a process younger than
 * DRAIN_PREP_AGE_NS that started fewer than DRAIN_PREP_CHURN threads and
 * none after another ended -- nor is a claimed slot finished for it: a
 * program that starts its few workers at once and soon ends claims none,
 * and populating, locking and freeing them cost the drain more than a
 * short run's events; once aged, one, or half of them while threads keep
 * coming. A slot a thread
 * claimed without a spare is finished here while its thread runs (not
 * once it ended: until a later thread claims it): its index part
 * populated and locked. A detail ring's pages are its thread's to
 * populate as its records reach them (ada_detail_populate); they are
 * locked here as they come (the header's pop, slot_dlocked), so no
 * thread waits for mlock and a thread that writes little costs little
 * of its 16 MiB ring. Each pass does at
 * most DRAIN_PREP_BYTES of this, bounding the drain's pause; a slot that
 * a thread claims halfway through is left to it (its claim populates).
 * An mlock refused (RLIMIT_MEMLOCK) is flagged in the arena for the
 * manifest, as the target's own refusal was, and not retried.
 *
 * Kept: with triggers armed and --detail triggered, a thread that ended
 * keeps its slot (its thread not finalized, its detail ring in memory)
 * while its newest detail record is younger than the longest pre-roll,
 * so a window that opens later -- a crash a moment after -- still takes
 * its records (drain_keep_ended); DRAIN_KEEP_MAX of them at most (the
 * first the drain's reclaim meets, lowest slot first), and never while
 * fewer than ADA_SLOT_SPARES full slots are free.
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "detail_internal.h"
#include "drain_internal.h"

/* Bytes populated or locked per pass and process. */
#define DRAIN_PREP_BYTES (1u << 20)
/* Ended threads' slots kept at most per process (each holds a whole
 * slot's memory: a thread per request must not keep them all). */
#define DRAIN_KEEP_MAX 4u
/* A single-threaded process gets its first spare at this age: past the
 * life of a fork child or a short command, which would cost the drain a
 * slot's pages each while a recorder of thousands of them falls behind. */
#define DRAIN_PREP_AGE_NS 1000000000ull
/* Threads seen (ended ones too) from which all ADA_SLOT_SPARES are kept;
 * below it, a process gets spares only once it is DRAIN_PREP_AGE_NS old,
 * and half of them only while its last new thread is younger than that. */
#define DRAIN_PREP_CHURN 8u
/* Passes that look again at an ended thread's slot whose thread was
 * still on its way out (a tgkill each); then the reclaim cadence does. */
#define DRAIN_RECLAIM_RETRIES 16u

/* slot_locked[s] set. */
static void drain_slot_lock_noted(struct wal_proc *p, uint32_t s)
{
	drain_slot_touch(p, s);
	p->slot_locked[s] = 1;
}

/* Locks what the thread of claimed slot s populated of its detail ring
 * since the last look (ada_arena_slot_lock_detail, the header's pop);
 * true when that took the pass's share. */
static bool prep_lock_detail(struct wal_proc *p, uint32_t s)
{
	drain_slot_touch(p, s);
	uint64_t before = p->slot_dlocked[s];
	int rc = ada_arena_slot_lock_detail(p->arena, s, &p->slot_dlocked[s], DRAIN_PREP_BYTES);
	if (rc == -EPERM)
		p->lock_refused = true;
	return rc == -EPERM || p->slot_dlocked[s] != before;
}

/* Finishes one claimed slot, a chunk per call: the pages of an index
 * ring its thread has not populated yet (ring_slot_populate leaves them
 * to it and to us) and the lock of the index part; then, as its thread
 * populates its detail ring (ada_detail_populate), the lock of what it
 * populated -- never the rest of the ring, which a thread that writes
 * 1 MiB of records would otherwise cost us 16 MiB populated and locked
 * for. True when the pass's share went to it. */
static bool prep_finish_claimed(struct wal_proc *p)
{
	struct ada_arena *a = p->arena;
	uint32_t used = ada_arena_slots_used(a);
	for (uint32_t s = 0; s < used && s < p->max_threads; s++) {
		struct ada_slot_info si;
		if (p->slot_locked[s] && p->lock_refused)
			continue;
		ada_arena_slot_info(a, s, &si);
		/* Only a slot a claim made ACTIVE (FREE ones are the spares'
		 * business: populating them is not free; an EXITED one's thread
		 * needs no pages any more -- threads that came and went before
		 * the drain freed their slots leave several such slots, each
		 * finished only if a later thread claims it). */
		if (si.state != ADA_SLOT_ACTIVE)
			continue;
		if (p->slot_locked[s]) {
			if (prep_lock_detail(p, s))
				return true;
			continue;
		}
		unsigned what = (ada_arena_slot_index_ready(a, s) ? 0 : ADA_PREP_POPULATE) |
		                (p->lock_refused ? 0 : ADA_PREP_LOCK);
		if (what == 0) {
			drain_slot_lock_noted(p, s);
			continue;
		}
		if (p->lock_slot != s) {
			p->lock_slot = s;
			p->lock_done = 0;
		}
		int rc = ada_arena_slot_prepare(a, s, what | ADA_PREP_NO_DETAIL, &p->lock_done,
		                                DRAIN_PREP_BYTES);
		if (rc == -EPERM) {
			p->lock_refused = true; /* populate alone from the next call on */
			return true;
		}
		if (rc != 0) { /* done, or no memory (its thread's records fault them in) */
			drain_slot_lock_noted(p, s);
			p->lock_slot = UINT32_MAX;
		}
		return true;
	}
	p->lock_slot = UINT32_MAX; /* the one begun has ended: not looked for every pass */
	return false;
}

uint32_t drain_prep_spares_for(size_t threads, uint32_t images, bool aged, bool recent, bool churn)
{
	/* An exec'd image's first thread is no thread started: a fork + exec
	 * child (each compiler a make runs) has one thread per image. */
	size_t seen = threads - (images > 1 && images <= threads ? images - 1 : 0);
	if (seen >= DRAIN_PREP_CHURN)
		return ADA_SLOT_SPARES;
	/* A young process that started a few threads -- a worker or two
	 * started at once, fibthreads -- claims no more: two spares populated,
	 * locked and freed again cost the drain more than a short run's
	 * events do (docs/benchmarks.md, spare).
	 * One that goes on starting them reaches DRAIN_PREP_CHURN within its
	 * first second, and a later thread finds a freed slot's pages or
	 * maps its own ring a chunk at a time as it goes (producer.c). A
	 * thread started after another ended (a thread per request) is
	 * churn: its next few get half of them at once. */
	if (!aged)
		return churn && seen > 1 ? ADA_SLOT_SPARES / 2 : 0;
	/* Aged: half of them while threads keep coming; one, as for a
	 * single-threaded process, once the last came a while ago (the
	 * workers a program started at its start: a 1.2 s run of fibthreads
	 * on a loaded machine still paid for two). */
	return seen > 1 && recent ? ADA_SLOT_SPARES / 2 : 1;
}

static uint32_t prep_spares_wanted(struct wal_proc *p)
{
	uint64_t now = wal_now_ns();
	if (p->nthreads != p->prep_threads) {
		p->prep_threads = p->nthreads;
		p->prep_thread_ns = now;
	}
	if (!p->prep_aged)
		p->prep_aged = now - p->opened_ns >= DRAIN_PREP_AGE_NS;
	bool recent = now - p->prep_thread_ns < DRAIN_PREP_AGE_NS;
	bool churn = p->prep_ended_at && p->nthreads > p->prep_ended_at;
	return drain_prep_spares_for(p->nthreads, p->images, p->prep_aged, recent, churn);
}

/* The next free full slot to prepare, or -1 when the spares are there. */
static int64_t prep_pick_spare(struct wal_proc *p)
{
	struct ada_arena *a = p->arena;
	uint32_t want = prep_spares_wanted(p), ready = 0;
	uint32_t n = ada_arena_config_of(a)->max_threads;
	for (uint32_t s = 0; s < n && s < p->max_threads && ready < want; s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(a, s, &si);
		if (si.state != ADA_SLOT_FREE)
			continue;
		if (!ada_arena_slot_index_ready(a, s))
			return s;
		ready++;
	}
	return -1;
}

/* Populates (and locks) the spare being prepared, a chunk per call. */
static void prep_spare_step(struct wal_proc *p)
{
	struct ada_arena *a = p->arena;
	uint32_t s = (uint32_t)p->prep_slot;
	struct ada_slot_info si;
	ada_arena_slot_info(a, s, &si);
	if (si.state != ADA_SLOT_FREE) {
		p->prep_slot = -1; /* claimed meanwhile: its claim populates */
		return;
	}
	unsigned what =
	    ADA_PREP_POPULATE | ADA_PREP_NO_DETAIL | (p->lock_refused ? 0 : ADA_PREP_LOCK);
	int rc = ada_arena_slot_prepare(a, s, what, &p->prep_done, DRAIN_PREP_BYTES);
	if (rc == -EPERM) {
		p->lock_refused = true; /* populate alone from the next pass on */
		return;
	}
	if (rc == 0)
		return;
	if (rc == 1 && !p->lock_refused)
		drain_slot_lock_noted(p, s);
	/* Done; or no memory for the pages: tried again at the next scan. */
	p->prep_backoff = rc < 0;
	p->prep_slot = -1;
}

void drain_prepare_slots(struct wal_proc *p, bool scan)
{
	/* No tables: its end unmapped them (drain_finish_proc()). */
	if (p->gone || p->reaped || p->arena_bad || !p->arena || !p->slot_locked)
		return;
	if (!p->prep_started) {
		p->prep_started = true;
		p->prep_slot = -1;
		p->lock_slot = UINT32_MAX;
		scan = true;
	}
	/* Every pass: a thread that took the last spare must find the next
	 * one soon (a few slot lines read when the spares are there). */
	if (scan)
		p->prep_backoff = false;
	/* None of it for a young process that started fewer than
	 * DRAIN_PREP_CHURN threads (a fork child, a short command, a worker
	 * or two): its rings' pages come as its records do, and a recorder
	 * of a thousand short processes does not populate and lock for each. */
	if (prep_spares_wanted(p) == 0)
		return;
	/* A claimed slot first: its thread may be faulting in its detail
	 * ring's pages meanwhile. */
	if ((scan || p->lock_slot != UINT32_MAX) && prep_finish_claimed(p))
		return;
	if (p->prep_slot < 0 && !p->prep_backoff) {
		p->prep_slot = prep_pick_spare(p);
		p->prep_done = 0;
	}
	if (p->prep_slot >= 0)
		prep_spare_step(p);
}

bool drain_prep_pending(const struct wal_proc *p)
{
	if (p->gone || p->reaped || p->arena_bad || !p->arena || !p->slot_locked ||
	    !p->prep_started)
		return p->reclaim_retries > 0;
	return p->prep_slot >= 0 || p->lock_slot != UINT32_MAX || p->reclaim_retries > 0;
}

bool drain_reclaim_due(struct wal_proc *p)
{
	/* The signature seen before the reclaim, not after it: a thread
	 * that ends while the reclaim runs changes it for the next pass. The
	 * slots the reclaim frees change it too: one more reclaim, which
	 * finds only kept slots (if any), and then none until a thread ends. */
	uint64_t sig = ada_arena_exited_sig(p->arena, ada_arena_slots_used(p->arena));
	bool changed = sig != p->exited_sig;
	p->exited_sig = sig;
	if (sig != 0 && p->prep_ended_at == 0)
		p->prep_ended_at = p->nthreads; /* a thread ended (prep_spares_wanted) */
	if (sig == 0)
		p->reclaim_retries = 0;
	else if (changed)
		p->reclaim_retries = DRAIN_RECLAIM_RETRIES + 1;
	if (p->reclaim_retries == 0)
		return false;
	p->reclaim_retries--;
	return true;
}

void drain_reclaim_done(struct wal_proc *p, uint32_t waiting)
{
	/* Only kept slots left (or none): nothing to look at again before
	 * the next thread ends or the reclaim cadence comes. */
	if (waiting == 0)
		p->reclaim_retries = 0;
}

/* The longest pre-roll an armed trigger would take (0: none armed). */
static uint64_t prep_pre_roll(struct ada_recorder *r)
{
	static struct ada_trigger_spec specs[ADA_TRIGGER_MAX]; /* the drain's only */
	if (!r->flight.trig)
		return 0;
	size_t n = ada_trigger_list(r->flight.trig, specs, ADA_TRIGGER_MAX);
	uint64_t pre = 0, dflt = ada_trigger_engine_opts(r->flight.trig)->pre_ns;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = specs[i].own_roll ? specs[i].pre_ns : dflt;
		pre = v > pre ? v : pre;
	}
	return pre;
}

/* Free full slots of p now (a few lines read per slot). */
static uint32_t prep_free_full(struct wal_proc *p)
{
	uint32_t n = ada_arena_config_of(p->arena)->max_threads, free_n = 0;
	for (uint32_t s = 0; s < n && s < p->max_threads; s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(p->arena, s, &si);
		free_n += si.state == ADA_SLOT_FREE;
	}
	return free_n;
}

/* The time of t's newest detail record (0: none), from its ring's ends
 * once per head: an ended thread's ring stands still while its slot is
 * kept, and walking the chunk that holds the newest record again at every
 * reclaim pass (a pass per ended thread of a thread-per-request server)
 * cost the drain more than all else it did for such a process. */
static int prep_newest_detail(struct ada_recorder *r, struct wal_proc *p, struct wal_thread *t,
                              uint64_t *newest)
{
	uint64_t head = ada_detail_ring_head(p->arena, t->slot), oldest;
	if (head != 0 && head == t->keep_head) {
		*newest = t->keep_newest_ns;
		return 0;
	}
	int e = wal_detail_ring_span(r, t, &oldest, newest);
	if (e != 0)
		return e;
	t->keep_head = head;
	t->keep_newest_ns = *newest;
	return 0;
}

bool drain_keep_ended(struct ada_recorder *r, struct wal_proc *p, struct wal_thread *t,
                      struct drain_keep *k)
{
	if (k->kept >= DRAIN_KEEP_MAX)
		return false;
	if (!t || t->done || !t->f || r->o.detail_mode != ADA_DETAIL_TRIGGERED ||
	    !ada_arena_config_of(p->arena)->detail_bytes)
		return false;
	uint64_t pre = prep_pre_roll(r), newest;
	if (pre == 0 || prep_newest_detail(r, p, t, &newest) != 0 || newest == 0)
		return false;
	uint64_t now = ada_boottime_ns();
	if (now > newest && now - newest >= pre)
		return false; /* all of it older than any window could reach */
	if (k->free_full < 0)
		k->free_full = prep_free_full(p);
	if (k->free_full < ADA_SLOT_SPARES)
		return false; /* threads need the slot more */
	k->kept++;
	return true;
}
