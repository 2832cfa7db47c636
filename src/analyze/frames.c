/*
 * Pairing one thread's index events into frames (analyze.h).
 *
 * The stack holds the open frames, outermost first. Per event:
 *   CALL at depth d        frames at depth >= d are orphans (their end was
 *                          never recorded: a lost event or a depth restart
 *                          after exec); then the new frame is pushed.
 *   RETURN/EXCEPTION at d  frames deeper than d are orphans; the top frame
 *                          at depth d with the same function ends here;
 *                          with nothing at depth d (its CALL is in a
 *                          retired generation, or before the file) it is
 *                          counted as unmatched.
 *   EXCEPTION, bit 31      the fatal-signal marker: closes nothing.
 *   wait markers           ada's wait for ring space (docs/format.md):
 *                          closes nothing; its length is the open
 *                          frames' wait_ns, left out of their durations.
 * An end is charged to the parent's child time only for RETURN and
 * EXCEPTION, so self times add up to the roots' totals.
 * Memory: the stack, grown by doubling up to ADA_FRAMES_MAX_DEPTH frames.
 * Threads: CLI only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"

struct ada_frames {
	struct ada_frames_ops ops;
	void *ctx;
	struct ada_frame *stack;
	size_t n, cap;
	struct ada_frames_stats st;
	uint64_t wait_from; /* where the wait in progress began */
	bool waiting;       /* between a wait's BEGIN and its END */
};

int ada_frames_new(const struct ada_frames_ops *ops, void *ctx, struct ada_frames **out)
{
	struct ada_frames *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->cap = 256;
	w->stack = malloc(w->cap * sizeof(*w->stack));
	if (!w->stack) {
		free(w);
		return -ENOMEM;
	}
	if (ops)
		w->ops = *ops;
	w->ctx = ctx;
	w->st.first_ns = UINT64_MAX;
	*out = w;
	return 0;
}

void ada_frames_free(struct ada_frames *w)
{
	if (!w)
		return;
	free(w->stack);
	free(w);
}

static struct ada_frame *frames_parent(struct ada_frames *w)
{
	return w->n ? &w->stack[w->n - 1] : NULL;
}

/* Pops the top frame, ending it as how at ts. */
static void frames_pop(struct ada_frames *w, enum ada_frame_end how, uint64_t ts)
{
	struct ada_frame *f = &w->stack[--w->n];
	struct ada_frame *parent = frames_parent(w);

	if (ts < f->call_ns) {
		w->st.backwards++;
		ts = f->call_ns;
	}
	f->end_ns = ts;
	f->wait_ns = w->st.wait_ns - f->wait_ns; /* the total at its call before */
	if (how == ADA_END_RETURN || how == ADA_END_EXCEPTION) {
		if (parent)
			parent->child_ns += ada_frame_ns(f);
	} else if (how == ADA_END_ORPHAN) {
		w->st.orphans++;
	} else {
		w->st.open++;
	}
	if (w->ops.leave)
		w->ops.leave(w->ctx, f, how, parent);
}

/* Frames at depth >= d (CALL) or > d (end) cannot end any more. */
static __attribute__((noinline)) void frames_orphan_from(struct ada_frames *w, uint32_t d,
                                                         uint64_t ts)
{
	while (w->n && w->stack[w->n - 1].depth >= d)
		frames_pop(w, ADA_END_ORPHAN, ts);
}

static int frames_reserve(struct ada_frames *w)
{
	if (w->n < w->cap)
		return 0;
	if (w->cap >= ADA_FRAMES_MAX_DEPTH)
		return -E2BIG;
	struct ada_frame *s = realloc(w->stack, w->cap * 2 * sizeof(*s));
	if (!s)
		return -ENOMEM;
	w->stack = s;
	w->cap *= 2;
	return 0;
}

/* The common case (nothing to orphan, room on the stack) stays inline:
 * this runs once per event of a recording of hundreds of millions. */
static inline void frames_call(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src,
                               uint64_t seq)
{
	if (__builtin_expect(w->n && w->stack[w->n - 1].depth >= ev->call_depth, 0))
		frames_orphan_from(w, ev->call_depth, ev->timestamp_ns);
	if (__builtin_expect(w->n == w->cap, 0) && frames_reserve(w)) {
		w->st.too_deep++;
		return;
	}
	struct ada_frame *f = &w->stack[w->n++];
	/* Field by field, not a compound literal: the compilers zero that
	 * with `rep stos` first, a third of this loop's time on fib. */
	f->function_id = ev->function_id;
	f->call_ns = ev->timestamp_ns;
	f->end_ns = 0;
	f->child_ns = 0;
	f->call_seq = seq;
	f->end_seq = 0;
	f->depth = ev->call_depth;
	f->call_src = src;
	f->end_src = 0;
	f->call_detail = ev->detail_seq;
	f->end_detail = ATF_NO_DETAIL;
	f->pad_ = 0;
	f->user = 0;
	f->wait_ns = w->st.wait_ns; /* the waits so far, until it ends */
	if (w->ops.enter)
		w->ops.enter(w->ctx, f, w->n > 1 ? &w->stack[w->n - 2] : NULL);
}

static inline void frames_end(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src,
                              uint64_t seq)
{
	uint32_t d = ev->call_depth;

	if (__builtin_expect(w->n && w->stack[w->n - 1].depth > d, 0))
		frames_orphan_from(w, d + 1, ev->timestamp_ns);
	struct ada_frame *top = frames_parent(w);
	if (!top || top->depth != d || top->function_id != ev->function_id) {
		w->st.unmatched++;
		if (w->ops.unmatched)
			w->ops.unmatched(w->ctx, ev, src, seq);
		return;
	}
	top->end_seq = seq;
	top->end_src = src;
	top->end_detail = ev->detail_seq;
	frames_pop(w, ev->event_kind == ATF_EVENT_RETURN ? ADA_END_RETURN : ADA_END_EXCEPTION,
	           ev->timestamp_ns);
}

/* A wait marker: a BEGIN opens a wait; the END after it adds its length
 * to the total every open frame started from (an END without its BEGIN
 * adds nothing). */
static __attribute__((noinline)) void frames_wait(struct ada_frames *w,
                                                  const struct atf_index_event *ev)
{
	if (ev->call_depth == ADA_WAIT_MARKER_BEGIN) {
		w->wait_from = ev->timestamp_ns;
		w->waiting = true;
		return;
	}
	if (!w->waiting)
		return;
	w->waiting = false;
	w->st.waits++;
	if (ev->timestamp_ns > w->wait_from)
		w->st.wait_ns += ev->timestamp_ns - w->wait_from;
	if (w->ops.wait)
		w->ops.wait(w->ctx, w->wait_from, ev->timestamp_ns);
}

/* One event; the caller counts it in st.events. */
static inline void frames_push(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src,
                               uint64_t seq)
{
	if (__builtin_expect(ev->timestamp_ns < w->st.first_ns, 0))
		w->st.first_ns = ev->timestamp_ns;
	if (__builtin_expect(ev->timestamp_ns > w->st.last_ns, 1))
		w->st.last_ns = ev->timestamp_ns;
	switch (ev->event_kind) {
	case ATF_EVENT_CALL:
		w->st.calls++;
		frames_call(w, ev, src, seq);
		return;
	case ATF_EVENT_RETURN:
		w->st.returns++;
		break;
	case ATF_EVENT_EXCEPTION:
		if (ada_wait_marker(ev->event_kind, ev->call_depth)) {
			frames_wait(w, ev);
			return;
		}
		if (ev->call_depth & ADA_SIGNAL_MARKER_FLAG) {
			w->st.markers++;
			if (w->ops.marker)
				w->ops.marker(w->ctx, ev->timestamp_ns,
				              ev->call_depth & ~ADA_SIGNAL_MARKER_FLAG,
				              ev->function_id);
			return;
		}
		w->st.exceptions++;
		break;
	default:
		w->st.bad_kind++;
		return;
	}
	if (ev->call_depth > ADA_FRAMES_MAX_DEPTH) {
		w->st.too_deep++;
		return;
	}
	frames_end(w, ev, src, seq);
}

void ada_frames_push(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src,
                     uint64_t seq)
{
	w->st.events++;
	frames_push(w, ev, src, seq);
}

void ada_frames_push_many(struct ada_frames *w, const struct atf_index_event *ev, uint64_t n,
                          uint32_t src, uint64_t seq)
{
	w->st.events += n;
	for (uint64_t i = 0; i < n; i++)
		frames_push(w, &ev[i], src, seq + i);
}

void ada_frames_finish(struct ada_frames *w)
{
	uint64_t end = w->st.last_ns;

	w->waiting = false; /* a wait is one thread's: the next may be another's */
	while (w->n)
		frames_pop(w, ADA_END_OPEN, end);
}

size_t ada_frames_depth(const struct ada_frames *w)
{
	return w->n;
}

const struct ada_frame *ada_frames_at(const struct ada_frames *w, size_t i)
{
	return i < w->n ? &w->stack[i] : NULL;
}

const struct ada_frames_stats *ada_frames_stats(const struct ada_frames *w)
{
	return &w->st;
}
