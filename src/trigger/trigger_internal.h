/* ada trigger, private: the engine's state shared by its files. */
#ifndef ADA_TRIGGER_INTERNAL_H
#define ADA_TRIGGER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "trigger.h"

#define TRIG_MANUAL_QUEUE 64u

/* One queued manual fire. */
struct trig_manual {
	uint64_t ns;
	char note[ADA_TRIGGER_NOTE_MAX];
};

/* One armed trigger. */
struct trig_slot {
	struct ada_trigger_spec spec;
	uint32_t id; /* handle: (serial << 6) | index */
	bool used;
	uint64_t added_ns; /* fires only on events at or after this */
	/* drain-side (live copy only): */
	bool has_fired;
	uint64_t last_fire_ns; /* for the hold-off */
	/* Latency and p99 triggers: the slowest call that fired since the
	 * hold-off last began. A slower one is not held off (escalation). */
	uint64_t worst_ns;
	uint64_t time_last_start; /* time=: start of the last range fired */
};

struct ada_trigger_engine {
	struct ada_trigger_opts o;
	/* Staged set and manual queue: any thread, under mu. */
	pthread_mutex_t mu;
	struct trig_slot staged[ADA_TRIGGER_MAX];
	uint32_t serial;
	struct trig_manual manual_q[TRIG_MANUAL_QUEUE];
	uint32_t manual_n;
	/* Bumped (release, under mu) at every change of staged or manual_q;
	 * the drain loads it with acquire in trig_sync(). */
	_Atomic uint64_t staged_gen;
	/* Drain-owned from here on. */
	uint64_t gen;                                      /* staged_gen of the live copy */
	struct trig_manual manual_take[TRIG_MANUAL_QUEUE]; /* the queue, taken by trig_sync() */
	struct ada_trigger_window manual_what;             /* a manual fire's window details */
	struct trig_slot live[ADA_TRIGGER_MAX];
	uint64_t want_names; /* live slots that need function names (mask) */
	uint32_t nlive;      /* live slots used */
	struct ada_trigger_window *win;
	size_t nwin, capwin;
	uint64_t win_gen;
	struct ada_trigger_stats st;
};

/* Per-process verdicts and p99 estimators, keyed by function_id. */
struct trig_verdict {
	uint64_t fn_id; /* 0: empty (function id 0 never names a function) */
	uint64_t mask;  /* live slots that match the name */
	uint64_t gen;   /* engine gen the mask was computed for */
};
struct trig_p99 {
	uint64_t fn_id;
	struct ada_trigger_p2 est;
};

struct ada_trigger_proc {
	struct ada_trigger_engine *e;
	ada_trigger_name_fn name;
	void *ctx;
	struct trig_verdict *v;
	size_t vcap, vn;
	struct trig_p99 *p99;
	size_t pcap, pn;
};

struct ada_trigger_thread {
	struct ada_trigger_proc *p;
	uint32_t tid;
	uint32_t n;    /* frames held (<= ADA_TRIGGER_STACK_FRAMES) */
	uint32_t head; /* next push position in fr[] (circular) */
	int crash_sig;
	uint64_t crash_addr;
	/* ada's own waits for ring space on this thread (wait markers):
	 * their total so far, and where the one in progress began (waiting
	 * set between a BEGIN and its END). A frame's duration is its time
	 * less the waits inside it (wait_ns now less its wait0). */
	uint64_t wait_ns, wait_from;
	bool waiting;
	/* A frame is struct ada_cidx_call (cidx.h: call_ns, fn_id, wait0,
	 * mask, gen, depth), so that the drain's fused pass keeps the same
	 * stack (ada_trigger_calls_begin()); call_ns and fn_id first, as in
	 * the index event (timestamp_ns, function_id): a push copies them as
	 * one 16-byte move. */
	struct ada_cidx_call fr[ADA_TRIGGER_STACK_FRAMES];
};

/* engine.c */
void trig_sync(struct ada_trigger_engine *e);
/* Applies the hold-off, merge and max-windows rules to one fire of slot i. */
void trig_fire(struct ada_trigger_engine *e, int i, uint64_t fire_ns, uint64_t from_ns,
               uint64_t to_ns, const struct ada_trigger_window *what);
/* Start of the window of a fire of slot i at ts: its own pre-roll when
 * it was armed with one, the engine's otherwise (clamped at 0). */
static inline uint64_t trig_from(const struct ada_trigger_engine *e, int i, uint64_t ts)
{
	const struct ada_trigger_spec *s = &e->live[i].spec;
	uint64_t pre = s->own_roll ? s->pre_ns : e->o.pre_ns;
	return ts - (ts < pre ? ts : pre);
}
/* End of the window of a fire of slot i ending at ts (post-roll added). */
static inline uint64_t trig_to(const struct ada_trigger_engine *e, int i, uint64_t ts)
{
	const struct ada_trigger_spec *s = &e->live[i].spec;
	return ts + (s->own_roll ? s->post_ns : e->o.post_ns);
}
static inline bool trig_is_fn_kind(enum ada_trigger_kind k)
{
	return k == ADA_TRIGGER_SYMBOL || k == ADA_TRIGGER_LATENCY || k == ADA_TRIGGER_P99;
}

#endif
