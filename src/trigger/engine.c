/*
 * The trigger engine: the armed set (changeable from any thread), manual
 * fires, time ranges, and the window list with its merge, hold-off and
 * max-windows rules.
 *
 * Threads: ada_trigger_add/remove/list/armed/fire_manual on any thread,
 * under e->mu, touching only staged[], serial and manual_q; everything else
 * on the drain thread. The hand-over is e->staged_gen (see trigger.h).
 * Invariants: live[] is a copy of staged[] plus drain-private fields
 * (last fire, time range fired) that survive a re-sync for a slot whose id
 * did not change; windows are only appended, never removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trigger_internal.h"

int ada_trigger_engine_new(const struct ada_trigger_opts *o, struct ada_trigger_engine **out)
{
	struct ada_trigger_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->o = *o;
	if (!e->o.max_windows)
		e->o.max_windows = ADA_TRIGGER_DEFAULT_MAX_WINDOWS;
	pthread_mutex_init(&e->mu, NULL);
	*out = e;
	return 0;
}

void ada_trigger_engine_free(struct ada_trigger_engine *e)
{
	if (!e)
		return;
	pthread_mutex_destroy(&e->mu);
	free(e->win);
	free(e);
}

const struct ada_trigger_opts *ada_trigger_engine_opts(const struct ada_trigger_engine *e)
{
	return &e->o;
}

/* Caller holds mu. */
static void engine_publish(struct ada_trigger_engine *e)
{
	/* Pairs with the acquire load in trig_sync(): the staged set and the
	 * manual queue written above are visible once the new gen is. */
	atomic_store_explicit(&e->staged_gen,
	                      atomic_load_explicit(&e->staged_gen, memory_order_relaxed) + 1,
	                      memory_order_release);
}

int ada_trigger_add(struct ada_trigger_engine *e, const struct ada_trigger_spec *s, uint64_t now_ns,
                    uint32_t *id)
{
	if (s->kind < ADA_TRIGGER_CRASH || s->kind > ADA_TRIGGER_MANUAL)
		return -EINVAL;
	pthread_mutex_lock(&e->mu);
	int free_i = -1;
	for (int i = 0; i < ADA_TRIGGER_MAX && free_i < 0; i++)
		if (!e->staged[i].used)
			free_i = i;
	if (free_i < 0) {
		pthread_mutex_unlock(&e->mu);
		return -ENOSPC;
	}
	struct trig_slot *t = &e->staged[free_i];
	*t = (struct trig_slot){.spec = *s, .used = true, .added_ns = now_ns};
	t->id = (++e->serial << 6) | (uint32_t)free_i;
	if (id)
		*id = t->id;
	engine_publish(e);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

int ada_trigger_remove(struct ada_trigger_engine *e, uint32_t id)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&e->mu);
	struct trig_slot *t = &e->staged[id & (ADA_TRIGGER_MAX - 1)];
	if (t->used && t->id == id) {
		t->used = false;
		engine_publish(e);
		rc = 0;
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int ada_trigger_fire_manual(struct ada_trigger_engine *e, uint64_t now_ns)
{
	return ada_trigger_fire_manual_note(e, now_ns, NULL);
}

int ada_trigger_fire_manual_note(struct ada_trigger_engine *e, uint64_t now_ns, const char *note)
{
	int rc = -EAGAIN;
	pthread_mutex_lock(&e->mu);
	if (e->manual_n < TRIG_MANUAL_QUEUE) {
		struct trig_manual *m = &e->manual_q[e->manual_n++];
		m->ns = now_ns;
		snprintf(m->note, sizeof(m->note), "%s", note ? note : "");
		engine_publish(e);
		rc = 0;
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

size_t ada_trigger_list(struct ada_trigger_engine *e, struct ada_trigger_spec *out, size_t max)
{
	return ada_trigger_list_ids(e, out, NULL, max);
}

size_t ada_trigger_list_ids(struct ada_trigger_engine *e, struct ada_trigger_spec *out,
                            uint32_t *ids, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&e->mu);
	for (int i = 0; i < ADA_TRIGGER_MAX && n < max; i++) {
		if (!e->staged[i].used)
			continue;
		if (ids)
			ids[n] = e->staged[i].id;
		out[n++] = e->staged[i].spec;
	}
	pthread_mutex_unlock(&e->mu);
	return n;
}

bool ada_trigger_armed(struct ada_trigger_engine *e, enum ada_trigger_kind k)
{
	bool any = false;
	pthread_mutex_lock(&e->mu);
	for (int i = 0; i < ADA_TRIGGER_MAX; i++)
		any |= e->staged[i].used && e->staged[i].spec.kind == k;
	pthread_mutex_unlock(&e->mu);
	return any;
}

/* ---- drain side ---- */

bool ada_trigger_fired(const struct ada_trigger_engine *e, const char *text)
{
	for (int i = 0; i < ADA_TRIGGER_MAX; i++)
		if (e->live[i].used && e->live[i].has_fired && !strcmp(e->live[i].spec.text, text))
			return true;
	return false;
}

static void engine_apply_manual(struct ada_trigger_engine *e, const struct trig_manual *q,
                                uint32_t n)
{
	struct ada_trigger_window *what = &e->manual_what; /* drain-owned; 600 bytes */
	for (uint32_t m = 0; m < n; m++) {
		bool armed = false;
		uint64_t ns = q[m].ns;
		for (int i = 0; i < ADA_TRIGGER_MAX; i++) {
			struct trig_slot *t = &e->live[i];
			if (!t->used || t->spec.kind != ADA_TRIGGER_MANUAL || ns < t->added_ns)
				continue;
			armed = true;
			memset(what, 0, sizeof(*what));
			memcpy(what->note, q[m].note, sizeof(what->note));
			trig_fire(e, i, ns, trig_from(e, i, ns), trig_to(e, i, ns), what);
		}
		if (!armed)
			e->st.manual_ignored++;
	}
}

void trig_sync(struct ada_trigger_engine *e)
{
	/* Pairs with the release store in engine_publish(). */
	uint64_t g = atomic_load_explicit(&e->staged_gen, memory_order_acquire);
	if (g == e->gen)
		return;
	struct trig_manual *q = e->manual_take; /* drain-owned copy: the queue is 16 KiB */
	uint32_t nq;
	pthread_mutex_lock(&e->mu);
	for (int i = 0; i < ADA_TRIGGER_MAX; i++) {
		struct trig_slot *l = &e->live[i], *s = &e->staged[i];
		bool same = l->used && s->used && l->id == s->id;
		if (!same)
			*l = *s; /* new or removed: drain-private state restarts */
	}
	nq = e->manual_n;
	memcpy(q, e->manual_q, nq * sizeof(q[0]));
	e->manual_n = 0;
	e->gen = atomic_load_explicit(&e->staged_gen, memory_order_relaxed);
	pthread_mutex_unlock(&e->mu);
	e->want_names = 0;
	e->nlive = 0;
	for (int i = 0; i < ADA_TRIGGER_MAX; i++) {
		e->nlive += e->live[i].used;
		if (e->live[i].used && trig_is_fn_kind(e->live[i].spec.kind))
			e->want_names |= 1ull << i;
	}
	engine_apply_manual(e, q, nq);
}

/* A window overlapping [from, to], or NULL. */
static struct ada_trigger_window *engine_overlap(struct ada_trigger_engine *e, uint64_t from,
                                                 uint64_t to)
{
	for (size_t w = e->nwin; w-- > 0;)
		if (e->win[w].from_ns <= to && from <= e->win[w].to_ns)
			return &e->win[w];
	return NULL;
}

static void engine_merge(struct ada_trigger_engine *e, struct ada_trigger_window *w, uint64_t from,
                         uint64_t to, const struct ada_trigger_window *what)
{
	if (!w->note[0] && what->note[0])
		memcpy(w->note, what->note, sizeof(w->note));
	if (from < w->from_ns)
		w->from_ns = from;
	if (to > w->to_ns) {
		w->to_ns = to;
		w->closed = false; /* more to persist */
	}
	w->fires++;
	e->st.merged++;
	e->win_gen++;
}

static bool engine_new_window(struct ada_trigger_engine *e, int i, uint64_t fire_ns, uint64_t from,
                              uint64_t to, const struct ada_trigger_window *what)
{
	if (e->nwin == e->capwin) {
		size_t nc = e->capwin ? e->capwin * 2 : 8;
		void *n = realloc(e->win, nc * sizeof(*e->win));
		if (!n)
			return false;
		e->win = n;
		e->capwin = nc;
	}
	struct ada_trigger_window *w = &e->win[e->nwin];
	*w = *what;
	w->id = (uint32_t)e->nwin++;
	w->trigger_id = e->live[i].id;
	memcpy(w->trigger, e->live[i].spec.text, sizeof(w->trigger));
	w->fire_ns = fire_ns;
	w->from_ns = from;
	w->to_ns = to;
	w->fires = 1;
	w->closed = false;
	e->win_gen++;
	return true;
}

void trig_fire(struct ada_trigger_engine *e, int i, uint64_t fire_ns, uint64_t from_ns,
               uint64_t to_ns, const struct ada_trigger_window *what)
{
	struct trig_slot *t = &e->live[i];
	e->st.fires++;
	bool death = t->spec.kind == ADA_TRIGGER_CRASH;
	if (!death && t->has_fired && fire_ns - t->last_fire_ns < e->o.holdoff_ns &&
	    fire_ns >= t->last_fire_ns) {
		/* A slow call worse than every one since the hold-off began is
		 * not held off: a call barely over a p99 must not hide the real
		 * outlier that follows it (what->duration_ns is 0 for the kinds
		 * that are not about a call's duration). */
		if (what->duration_ns <= t->worst_ns) {
			e->st.held_off++;
			return;
		}
		e->st.escalated++;
	} else {
		t->worst_ns = 0; /* a new hold-off period */
	}
	t->has_fired = true;
	t->last_fire_ns = fire_ns;
	if (what->duration_ns > t->worst_ns)
		t->worst_ns = what->duration_ns;
	struct ada_trigger_window *w = engine_overlap(e, from_ns, to_ns);
	if (w) {
		engine_merge(e, w, from_ns, to_ns, what);
		return;
	}
	if ((!death && e->nwin >= e->o.max_windows) ||
	    !engine_new_window(e, i, fire_ns, from_ns, to_ns, what))
		e->st.over_max++;
}

/* time=: seconds from `from` to `to` around the clock. */
static uint32_t engine_range_len(const struct ada_trigger_spec *s)
{
	return s->to_sec > s->from_sec ? s->to_sec - s->from_sec : 86400 - s->from_sec + s->to_sec;
}

static void engine_tick_time(struct ada_trigger_engine *e, int i, uint64_t now_ns,
                             uint32_t local_sec)
{
	struct trig_slot *t = &e->live[i];
	uint32_t into = (local_sec + 86400 - t->spec.from_sec) % 86400; /* s since range start */
	if (into >= engine_range_len(&t->spec) || now_ns < t->added_ns)
		return;
	uint64_t into_ns = (uint64_t)into * 1000000000ull;
	uint64_t start = now_ns > into_ns ? now_ns - into_ns : 0;
	/* One fire per occurrence: the next one starts a day later. */
	if (t->time_last_start && start < t->time_last_start + 3600ull * 1000000000ull)
		return;
	t->time_last_start = start;
	uint64_t end = start + (uint64_t)engine_range_len(&t->spec) * 1000000000ull;
	struct ada_trigger_window what = {0};
	trig_fire(e, i, start, trig_from(e, i, start), trig_to(e, i, end), &what);
}

void ada_trigger_tick(struct ada_trigger_engine *e, uint64_t now_ns, uint32_t local_sec)
{
	trig_sync(e);
	for (int i = 0; i < ADA_TRIGGER_MAX; i++)
		if (e->live[i].used && e->live[i].spec.kind == ADA_TRIGGER_TIME)
			engine_tick_time(e, i, now_ns, local_sec % 86400);
}

bool ada_trigger_fire_crash(struct ada_trigger_engine *e, uint64_t crash_ns, uint32_t tid)
{
	trig_sync(e);
	for (int i = 0; i < ADA_TRIGGER_MAX; i++) {
		struct trig_slot *t = &e->live[i];
		if (!t->used || t->spec.kind != ADA_TRIGGER_CRASH || crash_ns < t->added_ns)
			continue;
		struct ada_trigger_window what = {.tid = tid};
		uint64_t from = trig_from(e, i, crash_ns);
		/* Nothing happens after a death: the window ends with it. */
		trig_fire(e, i, crash_ns, from, crash_ns, &what);
	}
	for (size_t w = 0; w < e->nwin; w++)
		if (e->win[w].from_ns <= crash_ns && crash_ns <= e->win[w].to_ns)
			return true;
	return false;
}

size_t ada_trigger_window_count(const struct ada_trigger_engine *e)
{
	return e->nwin;
}

const struct ada_trigger_window *ada_trigger_window_at(const struct ada_trigger_engine *e, size_t i)
{
	return i < e->nwin ? &e->win[i] : NULL;
}

void ada_trigger_window_close(struct ada_trigger_engine *e, size_t i)
{
	if (i < e->nwin)
		e->win[i].closed = true;
}

bool ada_trigger_may_window(const struct ada_trigger_engine *e)
{
	if (e->nlive || ada_trigger_staged_pending(e))
		return true;
	for (size_t w = 0; w < e->nwin; w++)
		if (!e->win[w].closed)
			return true;
	return false;
}

bool ada_trigger_staged_pending(const struct ada_trigger_engine *e)
{
	/* Relaxed: a hint for the drain's sleep; trig_sync() loads it again
	 * with acquire before it takes anything. */
	return atomic_load_explicit(&e->staged_gen, memory_order_relaxed) != e->gen;
}

uint64_t ada_trigger_window_gen(const struct ada_trigger_engine *e)
{
	return e->win_gen;
}

void ada_trigger_get_stats(const struct ada_trigger_engine *e, struct ada_trigger_stats *out)
{
	*out = e->st;
}
