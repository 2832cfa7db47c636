/*
 * ada analyze: what the reading commands (report, export, flame, crash,
 * dump) compute from a recording, apart from how they print it.
 *
 * - Names: C++ (and Rust) symbols demangled with libiberty's
 *   cplus_demangle() (Debian's libiberty-dev): a C library, so ada needs no
 *   C++ runtime, and it gives both the full form and the form without
 *   parameter lists that uftrace shows by default. ada_names caches one
 *   display name per function_id over a symbol table.
 * - Frames: ada_frames pairs one thread's CALL events with their RETURN or
 *   EXCEPTION into frames with durations and self time, streaming: it keeps
 *   only the stack of open frames, so memory does not grow with the
 *   recording's length. Depth convention (docs/internals.md): a CALL
 *   carries the depth of the called frame, its RETURN or EXCEPTION the same
 *   depth. Events that do not pair are counted, never dropped silently:
 *   frames still open at the end (process killed, crash, the end of a
 *   window), frames left behind by a depth jump (orphans), ends whose CALL
 *   is not in the files (an older generation was retired), frames past the
 *   depth limit.
 * - Call graph: ada_callgraph, the callers and callees of one function
 *   aggregated over its calls (uftrace's `graph`), fed by a frame walker.
 * - Histograms: a log-linear histogram of durations (32 sub-buckets per
 *   power of two: quantiles within 1/32 of the true value, exact below
 *   32 ns), memory by the range of values seen, not by their number.
 *
 * Threads: CLI only; objects are not shared between threads. Errors are 0
 * or -errno; nothing here prints.
 */
#ifndef ADA_ANALYZE_H
#define ADA_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atf_format.h"

struct ada_symtab;

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

enum ada_demangle {
	ADA_DEMANGLE_FULL = 0, /* ns::Widget::poke(int) */
	ADA_DEMANGLE_SIMPLE,   /* ns::Widget::poke: no parameter lists, no clone suffix */
	ADA_DEMANGLE_NO,       /* the symbol as the ELF file spells it */
};

/* Parses "full", "simple" or "no". -EINVAL otherwise. */
int ada_demangle_parse(const char *s, enum ada_demangle *out);
/* A malloc'ed demangled copy of sym, or NULL when sym is not a mangled
 * name (or mode is NO, or out of memory): the caller then uses sym. */
char *ada_name_demangle(const char *sym, enum ada_demangle mode);

struct ada_name {
	const char *name;    /* never NULL: demangled, as spelled, or "<module id>:<index>" */
	const char *mangled; /* the symbol as in the .syms file; NULL when unknown */
	const char *module;  /* the module's path; NULL when unknown */
	bool known;          /* the symbol table has the function */
};

struct ada_names;
/* t must outlive the cache. -ENOMEM. */
int ada_names_new(const struct ada_symtab *t, enum ada_demangle mode, struct ada_names **out);
void ada_names_free(struct ada_names *n); /* NULL is a no-op */
/* The names of function_id. The pointer and its strings stay valid until
 * the next call
 * (the cache is bounded: a file with millions of made-up ids makes it
 * start over). */
const struct ada_name *ada_names_get(struct ada_names *n, uint64_t function_id);

/* ------------------------------------------------------------------ */
/* Frames                                                              */
/* ------------------------------------------------------------------ */

/* Deeper frames than this are not followed (counted in too_deep). */
#define ADA_FRAMES_MAX_DEPTH (1u << 20)

struct ada_frame {
	uint64_t function_id;
	uint64_t call_ns;
	uint64_t end_ns;   /* set when the frame ends */
	uint64_t child_ns; /* time in the frame's ended children */
	uint64_t call_seq; /* index_seq of the CALL in its file */
	uint64_t end_seq;  /* index_seq of the RETURN/EXCEPTION (when ended by one) */
	uint32_t depth;
	uint32_t call_src; /* the caller's source number of the CALL (a generation) */
	uint32_t end_src;
	uint32_t call_detail; /* detail_seq of the CALL, or ATF_NO_DETAIL */
	uint32_t end_detail;  /* detail_seq of the RETURN, or ATF_NO_DETAIL */
	uint32_t pad_;
	uint64_t user; /* the caller's, set in enter() */
	/* ada's own waits for ring space inside the frame (its children's
	 * included: docs/format.md, "Wait markers"), set when it ends;
	 * child_ns and ada_frame_ns() leave them out. */
	uint64_t wait_ns;
};

/* How long an ended frame took the program: its time less ada's waits
 * inside it. */
static inline uint64_t ada_frame_ns(const struct ada_frame *f)
{
	uint64_t d = f->end_ns - f->call_ns;
	return d > f->wait_ns ? d - f->wait_ns : 0;
}

enum ada_frame_end {
	ADA_END_RETURN = 0, /* its RETURN */
	ADA_END_EXCEPTION,  /* its EXCEPTION: longjmp, C++ unwinding, exit, thread exit */
	ADA_END_OPEN,       /* still open when the events ended; end_ns = the last event */
	ADA_END_ORPHAN,     /* a later event jumped to its depth or above without ending it */
};

/* Callbacks, any may be NULL. parent is the frame below (NULL at the
 * root); it stays on the stack and may be changed through its user. */
struct ada_frames_ops {
	void (*enter)(void *ctx, struct ada_frame *f, struct ada_frame *parent);
	/* f->end_ns is set; for RETURN and EXCEPTION the parent's child_ns
	 * already includes f's duration. */
	void (*leave)(void *ctx, const struct ada_frame *f, enum ada_frame_end how,
	              struct ada_frame *parent);
	/* The fatal-signal marker (docs/format.md): closes nothing. */
	void (*marker)(void *ctx, uint64_t ts, uint32_t signal, uint64_t fault_addr);
	/* ada's wait for ring space from begin_ns to end_ns (a wait marker
	 * pair): the open frames' wait_ns include it. */
	void (*wait)(void *ctx, uint64_t begin_ns, uint64_t end_ns);
	/* A RETURN/EXCEPTION whose CALL is not in the files. */
	void (*unmatched)(void *ctx, const struct atf_index_event *ev, uint32_t src, uint64_t seq);
};

struct ada_frames_stats {
	uint64_t events;
	uint64_t calls, returns, exceptions;
	uint64_t open;      /* frames still open at finish */
	uint64_t orphans;   /* ADA_END_ORPHAN frames */
	uint64_t unmatched; /* ends without their CALL */
	uint64_t too_deep;  /* events deeper than ADA_FRAMES_MAX_DEPTH */
	uint64_t bad_kind;  /* unknown event_kind */
	uint64_t backwards; /* an end before its call (treated as 0 ns) */
	uint64_t markers;   /* fatal-signal markers */
	uint64_t waits;     /* ada's waits for ring space (wait marker pairs) */
	uint64_t wait_ns;   /* their total length */
	uint64_t roots_ns;  /* time of the timed frames with no parent */
	uint64_t first_ns, last_ns;
};

struct ada_frames;
int ada_frames_new(const struct ada_frames_ops *ops, void *ctx, struct ada_frames **out);
void ada_frames_free(struct ada_frames *w); /* NULL is a no-op */
/* One event, in file order; src and seq name where it is (a generation
 * number and index_seq), handed back in the frames. */
void ada_frames_push(struct ada_frames *w, const struct atf_index_event *ev, uint32_t src,
                     uint64_t seq);
/* n consecutive events of one file (ev[i] is at index_seq seq + i): the
 * same as n calls of ada_frames_push(), without a call per event (the
 * statistics' event count is whole when it returns). */
void ada_frames_push_many(struct ada_frames *w, const struct atf_index_event *ev, uint64_t n,
                          uint32_t src, uint64_t seq);
/* The stream ended: every open frame leaves as ADA_END_OPEN, innermost
 * first, end_ns = the last event's timestamp. The walker can be reused
 * for another thread afterwards (statistics keep adding up). */
void ada_frames_finish(struct ada_frames *w);
/* The open frames now: 0 = outermost. */
size_t ada_frames_depth(const struct ada_frames *w);
/* Pieces: one thread's events cut where the caller likes, each piece
 * walked alone (by a thread of its own), then stitched in order onto the
 * walker of the whole, which then holds what one walk of every event
 * would: statistics, open frames, and every frame ended once through
 * one walker's leave() — a frame opened in a piece and ended in it
 * through the piece's, the others (opened before the piece) through the
 * whole's at the stitch. A piece's leave() sees parent NULL for a frame
 * whose parent is before the piece, and its enter() the same; nothing
 * else differs (frames.c has the protocol). part_begin() empties w and
 * makes it a piece (its own ops and ctx kept); stitch() adds piece p,
 * the events after those w has, to w: 0, -ENOMEM (p could not keep what
 * it must), or -EAGAIN when p cannot be stitched (a wait begun before it
 * and ended in it, stacks that together might pass
 * ADA_FRAMES_MAX_DEPTH, more ends reaching before it than a piece keeps,
 * 65536): w is then unchanged, and the piece's events are
 * to be pushed to w instead (p's leave() calls are to be forgotten). */
void ada_frames_part_begin(struct ada_frames *w);
int ada_frames_stitch(struct ada_frames *w, const struct ada_frames *p);
const struct ada_frame *ada_frames_at(const struct ada_frames *w, size_t i);
const struct ada_frames_stats *ada_frames_stats(const struct ada_frames *w);

/* ------------------------------------------------------------------ */
/* Call graph                                                          */
/* ------------------------------------------------------------------ */

/* The call graph around one function, as uftrace's `graph`: its callers
 * (the distinct call paths above its outermost calls) and a tree of its
 * callees (the distinct paths below them), each with calls, total and
 * self time counted as ada report counts them (frames that returned or
 * were left by exception are timed; open and orphan frames are counted in
 * calls, not timed). A call of the function inside another call of it is
 * a node of the tree, not a root of its own; `fn` counts every frame of
 * it, so its numbers are ada report's. "The function" is every
 * function_id the match takes (a name can be several ids).
 * Feed it with its walker (ada_callgraph_walker(), finished after each
 * thread), then ada_callgraph_sort() before reading. ADA_CALLGRAPH_NONE:
 * no node. */
#define ADA_CALLGRAPH_NONE UINT32_MAX

struct ada_callgraph_counts {
	uint64_t calls, returns, exceptions, open;
	uint64_t total_ns, self_ns;
};

struct ada_callgraph_node {
	uint64_t function_id; /* 0 at the root: the function (root_function_id) */
	struct ada_callgraph_counts c;
	uint32_t parent;                    /* ADA_CALLGRAPH_NONE at the root, node 0 */
	uint32_t depth;                     /* levels below the root */
	uint32_t first_child, next_sibling; /* after sort: by total, largest first */
};

struct ada_callgraph_caller {
	struct ada_callgraph_counts c; /* the outermost calls made on this path */
	uint64_t hash;
	size_t off;   /* ada_callgraph_path() */
	uint32_t len; /* functions on the path; 0: called at the bottom of a stack */
};

struct ada_callgraph_stats {
	struct ada_callgraph_counts fn;            /* every frame of the function */
	struct ada_callgraph_counts other_callers; /* outermost calls on paths past the bound */
	uint64_t folded_calls;     /* calls below it on paths past the bound, not in the tree */
	uint64_t root_function_id; /* of its first outermost call */
};

/* match(ctx, function_id): whether it is the function; asked once per id
 * (cached). -ENOMEM. */
typedef bool (*ada_callgraph_match_fn)(void *ctx, uint64_t function_id);
struct ada_callgraph;
int ada_callgraph_new(ada_callgraph_match_fn match, void *ctx, struct ada_callgraph **out);
void ada_callgraph_free(struct ada_callgraph *g); /* NULL is a no-op */
/* The frame walker that feeds the graph (owned by it). */
struct ada_frames *ada_callgraph_walker(struct ada_callgraph *g);
/* Links the children in order of total time, largest first, and sorts the
 * callers the same way. 0, or -ENOMEM (also when memory ran out while
 * walking). */
int ada_callgraph_sort(struct ada_callgraph *g);
const struct ada_callgraph_stats *ada_callgraph_stats(const struct ada_callgraph *g);
/* The tree: node 0 is the root (none when the function was not called). */
size_t ada_callgraph_nodes(const struct ada_callgraph *g, const struct ada_callgraph_node **out);
size_t ada_callgraph_callers(const struct ada_callgraph *g,
                             const struct ada_callgraph_caller **out);
/* c's path: c->len function ids, the outermost first, the caller last. */
const uint64_t *ada_callgraph_path(const struct ada_callgraph *g,
                                   const struct ada_callgraph_caller *c);

/* ------------------------------------------------------------------ */
/* Duration histograms                                                 */
/* ------------------------------------------------------------------ */

struct ada_hist {
	uint64_t count, min, max;
	uint64_t *octave[64]; /* 32 buckets each, allocated when first hit */
};

void ada_hist_init(struct ada_hist *h);
void ada_hist_fini(struct ada_hist *h);
/* The value's first in an octave not yet allocated: ada_hist_add()'s
 * slow path (hist.c). */
int ada_hist_add_new(struct ada_hist *h, unsigned oct, unsigned sub);
/* -ENOMEM when an octave could not be allocated (the value is then
 * counted in min/max/count only). Inline: ada report adds one value per
 * frame. Octave 0 holds 0..31 exactly; octave e - 4 the 32 buckets of
 * [2^e, 2^(e+1)), e >= 5 (hist.c), without a branch on which. */
static inline int ada_hist_add(struct ada_hist *h, uint64_t v)
{
	const unsigned e = 63u - (unsigned)__builtin_clzll(v | 32u); /* >= 5 */
	const unsigned oct = e - 4u - (v < 32u), sub = (unsigned)(v >> (e - 5u)) & 31u;

	h->count++;
	h->min = v < h->min ? v : h->min;
	h->max = v > h->max ? v : h->max;
	if (__builtin_expect(!h->octave[oct], 0))
		return ada_hist_add_new(h, oct, sub);
	h->octave[oct][sub]++;
	return 0;
}
/* The q-quantile (0 <= q <= 1): a value within 1/32 of the true one,
 * clamped to [min, max]; 0 when empty. */
uint64_t ada_hist_quantile(const struct ada_hist *h, double q);
/* Adds b into a. -ENOMEM. */
int ada_hist_merge(struct ada_hist *a, const struct ada_hist *b);

#endif
