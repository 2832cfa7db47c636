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
 *
 * Pieces (ada_frames_part_begin, ada_frames_stitch): a walker can take a
 * piece of a thread's events without the frames the events before it
 * left open ("below"). Its own stack is the frames opened in the piece;
 * whatever would reach below it is kept, in order, as an op to apply
 * later: a CALL that may orphan frames below (floor: the deepest depth a
 * frame below can still have), an end with nothing of the piece left to
 * end, and between ops the time of the timed frames of the piece whose
 * parent is below (bottom_ns: that parent's child time, or the roots').
 * Stitching replays the ops on the walker of the events before, so the
 * frames below end exactly as one walk would end them; the piece's own
 * frames ended in the piece already. Nothing else about a frame below
 * matters to a frame of the piece but two things, checked at the stitch
 * (-EAGAIN: walk the piece again on the whole walker): a wait begun
 * before the piece and ended in it, and a stack that together could
 * pass ADA_FRAMES_MAX_DEPTH.
 * Memory: the stack, grown by doubling up to ADA_FRAMES_MAX_DEPTH frames;
 * a piece's ops, a few in practice (each ends a frame below, or follows
 * one that did), at most FRAMES_OPS_MAX: a piece that would keep more
 * (a file of ends without their calls) is walked again whole (-EAGAIN).
 * Threads: CLI only; a piece and the walker it is stitched to may be
 * walked by different threads, one at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"

#define FRAMES_OPS_MAX (1u << 16) /* 4 MiB of ops a piece */

/* What a piece leaves to the stitch, in event order. */
enum frames_op_kind { FRAMES_OP_CALL, FRAMES_OP_END };
struct frames_op {
	struct atf_index_event ev; /* the CALL that may orphan, or the end */
	uint64_t seq;
	uint64_t wait_ns;   /* the piece's wait total at the event */
	uint64_t bottom_ns; /* bottom time since the op before */
	uint32_t src;
	uint32_t kind;
};

struct ada_frames {
	struct ada_frames_ops ops;
	void *ctx;
	struct ada_frame *stack;
	size_t n, cap;
	struct ada_frames_stats st;
	uint64_t wait_from; /* where the wait in progress began */
	bool waiting;       /* between a wait's BEGIN and its END */
	/* Pieces (the file's comment). A whole walk has floor -1: no frame
	 * below, nothing to keep. */
	bool part;
	bool waited;            /* a wait marker came */
	bool early_end;         /* the first wait marker was an END */
	int err;                /* -ENOMEM keeping an op, -EAGAIN: too many */
	int64_t floor;          /* the deepest depth a frame below can have */
	uint64_t bottom_ns;     /* timed ends whose parent is below, since the last op */
	struct frames_op *kept; /* the ops, nops of them */
	size_t nops, opcap;
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
	w->floor = -1;
	*out = w;
	return 0;
}

void ada_frames_free(struct ada_frames *w)
{
	if (!w)
		return;
	free(w->kept);
	free(w->stack);
	free(w);
}

static struct ada_frame *frames_parent(struct ada_frames *w)
{
	return w->n ? &w->stack[w->n - 1] : NULL;
}

/* Pops the top frame, ending it as how at ts. Inline always: a RETURN's
 * pop is the pairing's common case, and out of line it costs a call and
 * its saved registers per frame (GCC stopped inlining it once pieces
 * added their branch). */
static inline __attribute__((always_inline)) void frames_pop(struct ada_frames *w,
                                                             enum ada_frame_end how, uint64_t ts)
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
		else if (w->part)
			w->bottom_ns += ada_frame_ns(f); /* its parent is below, or none */
		else
			w->st.roots_ns += ada_frame_ns(f);
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

/* Keeps ev for the stitch (a piece's event that reaches below). */
static void frames_op_add(struct ada_frames *w, enum frames_op_kind kind,
                          const struct atf_index_event *ev, uint32_t src, uint64_t seq)
{
	if (w->nops == FRAMES_OPS_MAX) {
		w->err = -EAGAIN; /* walked again whole: memory stays bounded */
		return;
	}
	if (w->nops == w->opcap) {
		size_t nc = w->opcap ? w->opcap * 2 : 64;
		struct frames_op *o = realloc(w->kept, nc * sizeof(*o));
		if (!o) {
			w->err = -ENOMEM;
			return;
		}
		w->kept = o;
		w->opcap = nc;
	}
	w->kept[w->nops++] = (struct frames_op){*ev, seq, w->st.wait_ns, w->bottom_ns, src, kind};
	w->bottom_ns = 0;
}

/* A CALL at depth d: the frames at d or deeper leave as orphans, those of
 * a piece's own stack now, those below it at the stitch. */
static __attribute__((noinline)) void frames_call_orphans(struct ada_frames *w,
                                                          const struct atf_index_event *ev,
                                                          uint32_t src, uint64_t seq)
{
	frames_orphan_from(w, ev->call_depth, ev->timestamp_ns);
	if (w->n || (int64_t)ev->call_depth > w->floor)
		return;
	frames_op_add(w, FRAMES_OP_CALL, ev, src, seq);
	w->floor = (int64_t)ev->call_depth - 1; /* what is left below is shallower */
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
	/* floor: below an empty stack of a piece there may be frames. */
	if (__builtin_expect(w->n ? w->stack[w->n - 1].depth >= ev->call_depth
	                          : (int64_t)ev->call_depth <= w->floor,
	                     0))
		frames_call_orphans(w, ev, src, seq);
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

/* An end that finds no frame of its own: unmatched, or in a piece with
 * an empty stack, the stitch's to decide on the frames below. */
static __attribute__((noinline)) void
frames_unmatched(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src, uint64_t seq)
{
	if (!w->n && w->part) {
		frames_op_add(w, FRAMES_OP_END, ev, src, seq);
		w->floor = ev->call_depth; /* ended, or left: nothing deeper below */
		return;
	}
	w->st.unmatched++;
	if (w->ops.unmatched)
		w->ops.unmatched(w->ctx, ev, src, seq);
}

static inline void frames_end(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src,
                              uint64_t seq)
{
	uint32_t d = ev->call_depth;

	if (__builtin_expect(w->n && w->stack[w->n - 1].depth > d, 0))
		frames_orphan_from(w, d + 1, ev->timestamp_ns);
	struct ada_frame *top = frames_parent(w);
	if (__builtin_expect(!top || top->depth != d || top->function_id != ev->function_id, 0)) {
		frames_unmatched(w, ev, src, seq);
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
		w->waited = true;
		return;
	}
	if (!w->waiting) {
		w->early_end |= !w->waited; /* a piece's: maybe of a wait begun before */
		w->waited = true;
		return;
	}
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

void ada_frames_part_begin(struct ada_frames *w)
{
	w->n = 0;
	memset(&w->st, 0, sizeof(w->st));
	w->st.first_ns = UINT64_MAX;
	w->waiting = w->waited = w->early_end = false;
	w->part = true;
	w->err = 0;
	w->floor = INT64_MAX; /* anything may be below */
	w->bottom_ns = 0;
	w->nops = 0;
}

/* Time of timed frames whose parent was below the piece: that parent's
 * child time, or the roots' when the stack is empty. */
static void frames_bottom(struct ada_frames *w, uint64_t ns)
{
	if (w->n)
		w->stack[w->n - 1].child_ns += ns;
	else
		w->st.roots_ns += ns;
}

/* The piece's counts added to w's (wait_ns is set by the caller). */
static void frames_stats_add(struct ada_frames_stats *a, const struct ada_frames_stats *b)
{
	a->events += b->events;
	a->calls += b->calls;
	a->returns += b->returns;
	a->exceptions += b->exceptions;
	a->open += b->open;
	a->orphans += b->orphans;
	a->unmatched += b->unmatched;
	a->too_deep += b->too_deep;
	a->bad_kind += b->bad_kind;
	a->backwards += b->backwards;
	a->markers += b->markers;
	a->waits += b->waits;
	a->roots_ns += b->roots_ns;
	a->first_ns = b->first_ns < a->first_ns ? b->first_ns : a->first_ns;
	a->last_ns = b->last_ns > a->last_ns ? b->last_ns : a->last_ns;
}

/* The piece's open frames on top of w's, their wait totals in w's terms. */
static int frames_push_part(struct ada_frames *w, const struct ada_frames *p, uint64_t base)
{
	for (size_t i = 0; i < p->n; i++) {
		int err = frames_reserve(w);
		if (err)
			return err;
		w->stack[w->n] = p->stack[i];
		w->stack[w->n++].wait_ns += base;
	}
	return 0;
}

int ada_frames_stitch(struct ada_frames *w, const struct ada_frames *p)
{
	uint64_t base = w->st.wait_ns;

	if (p->err)
		return p->err;
	/* A wait of w's ended in the piece would lengthen frames the piece
	 * has timed already; together the stacks could pass the depth limit
	 * where the piece's alone did not. */
	if ((w->waiting && p->early_end) || w->n + p->cap >= ADA_FRAMES_MAX_DEPTH)
		return -EAGAIN;
	for (size_t i = 0; i < p->nops; i++) {
		const struct frames_op *o = &p->kept[i];
		frames_bottom(w, o->bottom_ns);
		w->st.wait_ns = base + o->wait_ns;
		if (o->kind == FRAMES_OP_CALL)
			frames_orphan_from(w, o->ev.call_depth, o->ev.timestamp_ns);
		else
			frames_end(w, &o->ev, o->src, o->seq);
	}
	frames_bottom(w, p->bottom_ns);
	w->st.wait_ns = base + p->st.wait_ns;
	frames_stats_add(&w->st, &p->st);
	if (p->waited) {
		w->waiting = p->waiting;
		w->wait_from = p->wait_from;
	}
	return frames_push_part(w, p, base);
}
