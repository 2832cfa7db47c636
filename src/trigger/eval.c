/*
 * Evaluation of the index stream: per-thread open frames (for latency and
 * for the stacks at death), per-process name verdicts and p99 estimators.
 *
 * Threads: the drain only. Input: converted index events of one thread in
 * ring order (timestamps non-decreasing). A CALL carries the depth of the
 * called frame, its RETURN the same depth; an EXCEPTION with a depth closes
 * a frame left without a return (longjmp, C++ unwinding, thread exit); an
 * EXCEPTION whose depth has ADA_TRIGGER_CRASH_DEPTH_FLAG is a fatal-signal
 * marker and closes nothing (docs/internals.md, docs/format.md), unless it
 * is a wait marker: ada's own wait for ring space, whose time is taken
 * out of the durations of the frames open around it, so a wait never
 * makes a call slow (latency, p99) and never fires anything itself.
 * Bounds: ADA_TRIGGER_STACK_FRAMES frames per thread (the innermost are
 * kept; outer ones pushed out are counted), verdict and estimator tables
 * of at most TRIG_TABLE_MAX entries per process (beyond: counted, no match).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "trigger_internal.h"

#define TRIG_TABLE_MAX (1u << 22)
#define TRIG_FRAME_MASK (ADA_TRIGGER_STACK_FRAMES - 1)
_Static_assert((ADA_TRIGGER_STACK_FRAMES & TRIG_FRAME_MASK) == 0, "frame ring is a power of 2");

int ada_trigger_proc_new(struct ada_trigger_engine *e, ada_trigger_name_fn name, void *ctx,
                         struct ada_trigger_proc **out)
{
	struct ada_trigger_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->e = e;
	p->name = name;
	p->ctx = ctx;
	*out = p;
	return 0;
}

void ada_trigger_proc_free(struct ada_trigger_proc *p)
{
	if (!p)
		return;
	free(p->v);
	free(p->p99);
	free(p);
}

int ada_trigger_thread_new(struct ada_trigger_proc *p, uint32_t tid,
                           struct ada_trigger_thread **out)
{
	struct ada_trigger_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->p = p;
	t->tid = tid;
	*out = t;
	return 0;
}

void ada_trigger_thread_free(struct ada_trigger_thread *t)
{
	free(t);
}

uint32_t ada_trigger_thread_tid(const struct ada_trigger_thread *t)
{
	return t->tid;
}

/* ---- open-addressing tables keyed by function_id (0 = empty) ---- */

static size_t eval_hash(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

/* Doubles a table of elem-sized entries whose first field is the key. */
static bool eval_grow(void **tab, size_t *cap, size_t elem)
{
	size_t nc = *cap ? *cap * 2 : 256;
	if (nc > TRIG_TABLE_MAX)
		return false;
	char *n = calloc(nc, elem), *old = *tab;
	if (!n)
		return false;
	for (size_t i = 0; i < *cap; i++) {
		uint64_t k;
		memcpy(&k, old + i * elem, sizeof(k));
		if (!k)
			continue;
		size_t j = eval_hash(k, nc);
		while (*(uint64_t *)(void *)(n + j * elem))
			j = (j + 1) & (nc - 1);
		memcpy(n + j * elem, old + i * elem, elem);
	}
	free(old);
	*tab = n;
	*cap = nc;
	return true;
}

/* The entry for k (created zeroed with its key when absent), or NULL when
 * the table is at its bound. */
static void *eval_slot(void **tab, size_t *cap, size_t *n, size_t elem, uint64_t k)
{
	if ((*n + 1) * 2 > *cap && !eval_grow(tab, cap, elem) && *n + 1 >= *cap)
		return NULL;
	char *b = *tab;
	size_t j = eval_hash(k, *cap);
	for (;;) {
		uint64_t *key = (uint64_t *)(void *)(b + j * elem);
		if (*key == k)
			return key;
		if (!*key) {
			*key = k;
			(*n)++;
			return key;
		}
		j = (j + 1) & (*cap - 1);
	}
}

bool ada_trigger_name_match(const char *glob, const char *name)
{
	if (fnmatch(glob, name, 0) == 0)
		return true;
	const char *dot = strchr(name, '.');
	if (!dot || dot == name || (size_t)(dot - name) >= ADA_TRIGGER_GLOB_MAX)
		return false;
	char base[ADA_TRIGGER_GLOB_MAX];
	memcpy(base, name, (size_t)(dot - name));
	base[dot - name] = '\0';
	return fnmatch(glob, base, 0) == 0;
}

/* Live slots whose glob matches fn_id's name; each function is matched
 * once per version of the set. An unknown name (its .syms not readable
 * yet) is not cached: asked again at the next call. */
static uint64_t eval_verdict(struct ada_trigger_proc *p, uint64_t fn_id)
{
	struct ada_trigger_engine *e = p->e;
	if (!fn_id)
		return 0; /* module 0: unknown, never named */
	struct trig_verdict *v = eval_slot((void **)&p->v, &p->vcap, &p->vn, sizeof(*v), fn_id);
	if (v && v->gen == e->gen && v->gen)
		return v->mask;
	const char *name = p->name ? p->name(p->ctx, fn_id) : NULL;
	if (!name) {
		e->st.unresolved++;
		return 0;
	}
	uint64_t mask = 0;
	for (int i = 0; i < ADA_TRIGGER_MAX; i++)
		if ((e->want_names >> i & 1) && ada_trigger_name_match(e->live[i].spec.glob, name))
			mask |= 1ull << i;
	if (v) {
		v->mask = mask;
		v->gen = e->gen;
	}
	return mask;
}

/* ---- frames ---- */

static struct ada_cidx_call *eval_top(struct ada_trigger_thread *t)
{
	return t->n ? &t->fr[(t->head - 1) & TRIG_FRAME_MASK] : NULL;
}

static void eval_pop(struct ada_trigger_thread *t)
{
	t->head = (t->head - 1) & TRIG_FRAME_MASK;
	t->n--;
}

static void eval_push(struct ada_trigger_thread *t, const struct ada_cidx_call *f)
{
	t->fr[t->head] = *f;
	t->head = (t->head + 1) & TRIG_FRAME_MASK;
	if (t->n < ADA_TRIGGER_STACK_FRAMES)
		t->n++;
	else
		t->p->e->st.stack_dropped++;
}

/* Drops frames deeper than depth (their RETURN never came: lost events). */
static void eval_unwind_to(struct ada_trigger_thread *t, uint32_t depth)
{
	struct ada_cidx_call *f;
	while ((f = eval_top(t)) && f->depth > depth) {
		eval_pop(t);
		t->p->e->st.stack_mismatch++;
	}
}

static void eval_call(struct ada_trigger_thread *t, const struct atf_index_event *ev)
{
	struct ada_trigger_engine *e = t->p->e;
	if (ev->call_depth)
		eval_unwind_to(t, ev->call_depth - 1);
	struct ada_cidx_call f = {.fn_id = ev->function_id,
	                          .call_ns = ev->timestamp_ns,
	                          .wait0 = t->wait_ns,
	                          .depth = ev->call_depth};
	if (e->want_names) {
		uint64_t m = eval_verdict(t->p, ev->function_id);
		for (int i = 0; m >> i; i++) {
			if (!(m >> i & 1) || ev->timestamp_ns < e->live[i].added_ns)
				continue;
			if (e->live[i].spec.kind == ADA_TRIGGER_SYMBOL) {
				struct ada_trigger_window w = {.fn_id = ev->function_id,
				                               .tid = t->tid};
				uint64_t ts = ev->timestamp_ns;
				trig_fire(e, i, ts, trig_from(e, i, ts), trig_to(e, i, ts), &w);
			} else {
				f.mask |= 1ull << i; /* latency, p99: judged at the return */
			}
		}
		f.gen = e->gen;
	}
	eval_push(t, &f);
}

static struct ada_trigger_p2 *eval_estimator(struct ada_trigger_proc *p, uint64_t fn_id)
{
	struct trig_p99 *s = eval_slot((void **)&p->p99, &p->pcap, &p->pn, sizeof(*s), fn_id);
	if (!s) {
		p->e->st.p99_untracked++;
		return NULL;
	}
	return &s->est;
}

/* One slow-call judgement of slot i for frame f returning at ret_ns. */
static void eval_latency(struct ada_trigger_thread *t, int i, const struct ada_cidx_call *f,
                         uint64_t ret_ns, uint64_t dur, double p99)
{
	struct ada_trigger_engine *e = t->p->e;
	const struct ada_trigger_spec *s = &e->live[i].spec;
	uint64_t limit = s->kind == ADA_TRIGGER_LATENCY ? s->threshold_ns : (uint64_t)p99;
	if (dur <= limit || ret_ns < e->live[i].added_ns)
		return;
	struct ada_trigger_window w = {
	    .fn_id = f->fn_id, .tid = t->tid, .duration_ns = dur, .threshold_ns = limit};
	trig_fire(e, i, ret_ns, trig_from(e, i, ret_ns), trig_to(e, i, ret_ns), &w);
}

static void eval_return(struct ada_trigger_thread *t, const struct ada_cidx_call *f,
                        uint64_t ret_ns)
{
	struct ada_trigger_engine *e = t->p->e;
	uint64_t m = f->mask;
	/* The set changed since the call: the current one's verdict (none
	 * when no trigger wants names: a removed trigger judges nothing). */
	if (f->gen != e->gen)
		m = e->want_names ? eval_verdict(t->p, f->fn_id) : 0;
	if (!m)
		return;
	/* The program's time: without ada's waits inside the frame. */
	uint64_t waited = t->wait_ns - f->wait0, dur = ret_ns - f->call_ns;
	dur = dur > waited ? dur - waited : 0;
	struct ada_trigger_p2 *est = NULL;
	double p99 = 0;
	bool p99_ok = false;
	for (int i = 0; m >> i; i++) {
		if (!(m >> i & 1))
			continue;
		if (e->live[i].spec.kind == ADA_TRIGGER_LATENCY) {
			eval_latency(t, i, f, ret_ns, dur, 0);
		} else if (e->live[i].spec.kind == ADA_TRIGGER_P99) {
			if (!est && !(est = eval_estimator(t->p, f->fn_id)))
				continue;
			p99 = ada_trigger_p2_value(est);
			p99_ok = est->count >= ADA_TRIGGER_P99_MIN_CALLS;
			if (p99_ok)
				eval_latency(t, i, f, ret_ns, dur, p99);
		}
	}
	if (est) /* after the test: an outlier is judged against the calls before it */
		ada_trigger_p2_add(est, (double)dur);
}

/* A wait marker: a BEGIN opens a wait, the END after it adds its length
 * to the thread's total (an END without its BEGIN adds nothing). */
static void eval_wait(struct ada_trigger_thread *t, const struct atf_index_event *ev)
{
	if (ev->call_depth == ADA_WAIT_MARKER_BEGIN) {
		t->wait_from = ev->timestamp_ns;
		t->waiting = true;
	} else if (t->waiting) {
		if (ev->timestamp_ns > t->wait_from)
			t->wait_ns += ev->timestamp_ns - t->wait_from;
		t->waiting = false;
	}
}

static void eval_close(struct ada_trigger_thread *t, const struct atf_index_event *ev, bool ret)
{
	if (ada_wait_marker(ev->event_kind, ev->call_depth)) {
		eval_wait(t, ev);
		return;
	}
	if (ev->call_depth & ADA_TRIGGER_CRASH_DEPTH_FLAG) { /* fatal-signal marker */
		t->crash_sig = (int)(ev->call_depth & ~ADA_TRIGGER_CRASH_DEPTH_FLAG);
		t->crash_addr = ev->function_id;
		return;
	}
	eval_unwind_to(t, ev->call_depth);
	struct ada_cidx_call *f = eval_top(t);
	if (!f || f->depth != ev->call_depth || f->fn_id != ev->function_id) {
		t->p->e->st.stack_mismatch++;
		return;
	}
	struct ada_cidx_call copy = *f;
	eval_pop(t);
	if (ret)
		eval_return(t, &copy, ev->timestamp_ns);
}

/* The frame stack of one feed: head and n in registers (stores to the
 * frames could alias them as far as the compiler knows). */
struct eval_regs {
	size_t head, n; /* word-sized: as uint32_t pairs gcc kept them in one vector register */
};

/* A leaf call: the CALL ev[0] at depth d, taken by the plain loop (so no
 * trigger wants names: its frame would carry no mask), followed at once
 * by the RETURN of the same function at d, which would match and pop that
 * frame: together they leave the stack as it was, so neither is pushed
 * nor popped. Every leaf call of a program is one (up to half its events). */
static inline bool eval_leaf(const struct atf_index_event *ev, const struct atf_index_event *end)
{
	const struct atf_index_event *r = ev + 1;
	return r < end && r->event_kind == ATF_EVENT_RETURN && r->call_depth == ev->call_depth &&
	       r->function_id == ev->function_id &&
	       !(ev->call_depth & ADA_TRIGGER_CRASH_DEPTH_FLAG);
}

/* While some trigger wants names, the usual RETURN done inline: the
 * RETURN of the top frame with nothing to judge (no mask, verdict of the
 * current set). Exactly what eval_close() would do for it; returns the
 * events done (0: nothing changed, the event takes the general path). */
static inline size_t eval_fast(struct ada_trigger_thread *t, struct eval_regs *s, uint64_t gen,
                               const struct atf_index_event *ev)
{
	const struct ada_cidx_call *top = &t->fr[(s->head - 1) & TRIG_FRAME_MASK];
	uint32_t depth = ev->call_depth;
	if (ev->event_kind != ATF_EVENT_RETURN || !s->n || top->depth != depth ||
	    top->fn_id != ev->function_id || (depth & ADA_TRIGGER_CRASH_DEPTH_FLAG) || top->mask ||
	    top->gen != gen)
		return 0;
	s->head = (s->head - 1) & TRIG_FRAME_MASK;
	s->n--;
	return 1;
}

/* The plain loop, while no trigger wants names: no CALL needs a verdict
 * and no RETURN has anything to judge (a frame that has a mask was pushed
 * under another set, and eval_return() judges nothing once no trigger
 * wants names). The frames are still kept, for the stacks at death and
 * for a latency or p99 trigger armed later, whose first RETURNs judge
 * calls opened before it (eval_return() asks for their verdict then).
 * The same as eval_call()/eval_close() for each event it takes (the usual
 * ones: a CALL that unwinds nothing and pushes nothing out, a leaf pair,
 * the RETURN of the top frame), with the top frame's function and depth
 * held in registers; stops at the first other event and returns the
 * events done. */
static size_t eval_plain(struct ada_trigger_thread *t, struct eval_regs *s,
                         const struct atf_index_event *ev, size_t n)
{
	size_t head = s->head, cnt = s->n;
	const struct ada_cidx_call *top = &t->fr[(head - 1) & TRIG_FRAME_MASK];
	uint64_t top_fn = top->fn_id;
	uint32_t floor = cnt ? top->depth : 0; /* a CALL at depth d unwinds when d - 1 < floor */
	const struct atf_index_event *e = ev, *end = ev + n;
	while (e < end) {
		uint32_t depth = e->call_depth;
		if (e->event_kind == ATF_EVENT_CALL) {
			if (depth - 1 < floor || cnt == ADA_TRIGGER_STACK_FRAMES)
				break; /* unwinds (depth 0 wraps: never), or pushes one out */
			if (eval_leaf(e, end)) {
				e += 2;
				continue;
			}
			t->fr[head] = (struct ada_cidx_call){.call_ns = e->timestamp_ns,
			                                     .fn_id = e->function_id,
			                                     .wait0 = t->wait_ns,
			                                     .depth = depth};
			head = (head + 1) & TRIG_FRAME_MASK;
			cnt++;
			top_fn = e->function_id;
			floor = depth;
		} else if (e->event_kind == ATF_EVENT_RETURN && cnt && floor == depth &&
		           top_fn == e->function_id && !(depth & ADA_TRIGGER_CRASH_DEPTH_FLAG)) {
			head = (head - 1) & TRIG_FRAME_MASK;
			cnt--;
			top = &t->fr[(head - 1) & TRIG_FRAME_MASK];
			top_fn = top->fn_id;
			floor = cnt ? top->depth : 0;
		} else {
			break;
		}
		e++;
	}
	s->head = head;
	s->n = cnt;
	return (size_t)(e - ev);
}

void ada_trigger_feed(struct ada_trigger_thread *t, const struct atf_index_event *ev, size_t n)
{
	const struct ada_trigger_engine *e = t->p->e;
	trig_sync(t->p->e);
	uint64_t want = e->want_names, gen = e->gen;
	struct eval_regs s = {.head = t->head, .n = t->n};
	for (size_t i = 0; i < n;) {
		size_t done =
		    !want ? eval_plain(t, &s, &ev[i], n - i) : eval_fast(t, &s, gen, &ev[i]);
		if (done) {
			i += done;
			continue;
		}
		t->head = (uint32_t)s.head;
		t->n = (uint32_t)s.n;
		switch (ev[i].event_kind) {
		case ATF_EVENT_CALL:
			eval_call(t, &ev[i]);
			break;
		case ATF_EVENT_RETURN:
			eval_close(t, &ev[i], true);
			break;
		case ATF_EVENT_EXCEPTION:
			eval_close(t, &ev[i], false);
			break;
		default:
			break; /* not ours to judge: validate reports it */
		}
		s.head = t->head;
		s.n = t->n;
		want = e->want_names; /* as the general path left them */
		gen = e->gen;
		i++;
	}
	t->head = (uint32_t)s.head;
	t->n = (uint32_t)s.n;
}

bool ada_trigger_calls_begin(struct ada_trigger_thread *t, struct ada_cidx_calls *c)
{
	const struct ada_trigger_engine *e = t->p->e;
	trig_sync(t->p->e);
	if (e->want_names)
		return false;
	*c = (struct ada_cidx_calls){.fr = t->fr,
	                             .cap = ADA_TRIGGER_STACK_FRAMES,
	                             .head = t->head,
	                             .n = t->n,
	                             .wait0 = t->wait_ns}; /* eval_plain()'s pushes */
	return true;
}

void ada_trigger_calls_end(struct ada_trigger_thread *t, const struct ada_cidx_calls *c)
{
	t->head = c->head & TRIG_FRAME_MASK;
	t->n = c->n;
}

size_t ada_trigger_thread_stack(const struct ada_trigger_thread *t, struct ada_trigger_frame *out,
                                size_t max, uint32_t *depth)
{
	size_t k = 0;
	for (uint32_t i = 0; i < t->n && k < max; i++) {
		const struct ada_cidx_call *f = &t->fr[(t->head - 1 - i) & TRIG_FRAME_MASK];
		out[k++] = (struct ada_trigger_frame){
		    .fn_id = f->fn_id, .call_ns = f->call_ns, .depth = f->depth};
	}
	if (depth)
		*depth = t->n ? t->fr[(t->head - 1) & TRIG_FRAME_MASK].depth : 0;
	return k;
}

int ada_trigger_thread_crash(const struct ada_trigger_thread *t, uint64_t *addr)
{
	if (addr)
		*addr = t->crash_addr;
	return t->crash_sig;
}
