/*
 * ada report DIR: per function, the calls, total and self time and the
 * min/p50/p99/max duration, from the frames the index lane pairs
 * (src/analyze). Sorted by any column (--sort), per thread (--threads),
 * as text or JSON (--json). Frames that ended by RETURN or EXCEPTION are
 * timed; frames still open at the end (a crash, a kill, the end of the
 * files) are counted in `open`, EXCEPTION exits in `exc`, and what did not
 * pair at all is in the footer: nothing is dropped silently.
 *
 * Memory: one entry per (function, thread) with a log-linear histogram;
 * the recording itself is read through the mapping, so memory does not
 * grow with its length. Exit status: 0; 1 when a file was damaged or
 * skipped (the rest is still reported); 2 for bad usage or no traces.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "filter.h"
#include "read.h"
#include "read_par.h"

enum rp_col {
	COL_CALLS,
	COL_TOTAL,
	COL_SELF,
	COL_MIN,
	COL_P50,
	COL_P99,
	COL_MAX,
	COL_EXC,
	COL_OPEN,
	COL_NAME,
	COL_N
};
static const char *const rp_col_names[COL_N] = {"calls", "total", "self", "min",  "p50",
                                                "p99",   "max",   "exc",  "open", "name"};

struct rp_opts {
	bool json, threads;
	enum rp_col sort;
	enum ada_demangle dm;
	struct rd_filter f;
};

struct rp_fn {
	uint64_t fid;
	uint32_t thread; /* thread_N with --threads, else UINT32_MAX */
	uint32_t tid;
	uint64_t calls, returns, exceptions, open;
	uint64_t total, self;
	struct ada_hist h;
	uint64_t q50, q99; /* filled before sorting */
	const char *name;  /* filled before sorting (a copy) */
};

struct rp_state {
	const struct rp_opts *o;
	struct rp_fn *fns;
	size_t n, cap;         /* entries */
	struct rd_index index; /* (fid, thread) -> entry */
	uint32_t thread, tid;  /* of the thread being walked */
	uint32_t recent[1024]; /* direct-mapped: fid -> entry index + 1, in front of index */
	struct rp_fn *last;    /* the entry found last (NULL after fns moved or a new thread) */
	uint64_t under_open_ns;
	int err;
	struct rd_pid *rp; /* the pid walked on several threads (rd_pwalk) */
	uint32_t nthreads; /* its threads counted so far */
};

static struct rd_key rp_key(const void *fns, uint32_t i)
{
	const struct rp_fn *f = (const struct rp_fn *)fns + i;
	return (struct rd_key){f->fid, f->thread};
}

static struct rp_fn *rp_new_fn(struct rp_state *s, uint64_t fid, uint32_t *slot)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 1024;
		struct rp_fn *f = realloc(s->fns, nc * sizeof(*f));
		if (!f || nc > UINT32_MAX - 1)
			return NULL;
		s->fns = f;
		s->cap = nc;
		s->last = NULL;
	}
	struct rp_fn *f = &s->fns[s->n];
	memset(f, 0, sizeof(*f));
	f->fid = fid;
	f->thread = s->o->threads ? s->thread : UINT32_MAX;
	f->tid = s->tid;
	ada_hist_init(&f->h);
	rd_index_put(&s->index, slot, (uint32_t)s->n++);
	return f;
}

static struct rp_fn *rp_fn_find(struct rp_state *s, uint64_t fid, uint32_t thread)
{
	if (rd_index_reserve(&s->index, rp_key, s->fns))
		return NULL;
	uint32_t *slot = rd_index_slot(&s->index, rp_key, s->fns, (struct rd_key){fid, thread});
	return *slot ? &s->fns[*slot - 1] : rp_new_fn(s, fid, slot);
}

/* Out of line: rp_leave() without its calls needs no saved registers. */
static __attribute__((noinline)) struct rp_fn *rp_fn_lookup(struct rp_state *s, uint64_t fid)
{
	uint32_t thread = s->o->threads ? s->thread : UINT32_MAX;
	uint32_t *r = &s->recent[(fid ^ (fid >> 29)) & 1023];

	/* A program spends its time in few functions: most lookups end here. */
	if (*r && s->fns[*r - 1].fid == fid && s->fns[*r - 1].thread == thread)
		return s->last = &s->fns[*r - 1];
	struct rp_fn *f = rp_fn_find(s, fid, thread);
	if (f)
		*r = (uint32_t)(f - s->fns) + 1;
	return s->last = f;
}

static inline struct rp_fn *rp_fn_get(struct rp_state *s, uint64_t fid)
{
	/* A recursion or a loop ends frames of one function in a row: one
	 * compare, no chain of loads through recent[]. */
	if (__builtin_expect(s->last && s->last->fid == fid, 1))
		return s->last;
	return rp_fn_lookup(s, fid);
}

static void rp_leave(void *ctx, const struct ada_frame *fr, enum ada_frame_end how,
                     struct ada_frame *parent)
{
	struct rp_state *s = ctx;
	struct rp_fn *f = rp_fn_get(s, fr->function_id);

	(void)parent; /* the roots' time is the walker's (roots_ns) */
	if (!f) {
		s->err = -ENOMEM;
		return;
	}
	f->calls++;
	if (how == ADA_END_OPEN || how == ADA_END_ORPHAN) {
		f->open += how == ADA_END_OPEN;
		s->under_open_ns += fr->child_ns; /* timed children of an untimed frame */
		return;
	}
	uint64_t d = ada_frame_ns(fr); /* the program's time: without ada's waits */
	f->returns += how == ADA_END_RETURN;
	f->exceptions += how == ADA_END_EXCEPTION;
	f->total += d;
	f->self += d - (fr->child_ns < d ? fr->child_ns : d);
	if (ada_hist_add(&f->h, d))
		s->err = -ENOMEM;
}

/* ------------------------------------------------------------ output */

static int rp_cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0; /* largest first */
}

static enum rp_col rp_sort_col;
static int rp_cmp(const void *pa, const void *pb)
{
	const struct rp_fn *a = pa, *b = pb;
	int c = 0;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	switch (rp_sort_col) {
	case COL_CALLS:
		c = rp_cmp_u64(a->calls, b->calls);
		break;
	case COL_TOTAL:
		c = rp_cmp_u64(a->total, b->total);
		break;
	case COL_SELF:
		c = rp_cmp_u64(a->self, b->self);
		break;
	case COL_MIN:
		c = rp_cmp_u64(a->h.count ? a->h.min : 0, b->h.count ? b->h.min : 0);
		break;
	case COL_P50:
		c = rp_cmp_u64(a->q50, b->q50);
		break;
	case COL_P99:
		c = rp_cmp_u64(a->q99, b->q99);
		break;
	case COL_MAX:
		c = rp_cmp_u64(a->h.max, b->h.max);
		break;
	case COL_EXC:
		c = rp_cmp_u64(a->exceptions, b->exceptions);
		break;
	case COL_OPEN:
		c = rp_cmp_u64(a->open, b->open);
		break;
	case COL_NAME:
		c = strcmp(a->name, b->name);
		break;
	case COL_N:
		break;
	}
	if (!c)
		c = strcmp(a->name, b->name);
	return c ? c : (a->fid < b->fid ? -1 : a->fid > b->fid);
}

static int rp_prepare(struct rp_state *s, struct rd_pid *rp)
{
	for (size_t i = 0; i < s->n; i++) {
		struct rp_fn *f = &s->fns[i];
		f->q50 = ada_hist_quantile(&f->h, 0.50);
		f->q99 = ada_hist_quantile(&f->h, 0.99);
		f->name = strdup(ada_names_get(rp->names, f->fid)->name);
		if (!f->name)
			return -ENOMEM;
	}
	rp_sort_col = s->o->sort;
	if (s->n) /* none read (every index unreadable): fns is NULL, not an array */
		qsort(s->fns, s->n, sizeof(*s->fns), rp_cmp);
	return 0;
}

static void rp_text_row(const struct rp_fn *f)
{
	char b[7][32];

	printf("%10" PRIu64 " %10s %10s %10s %10s %10s %10s %6" PRIu64 " %5" PRIu64 "  %s\n",
	       f->calls, rd_fmt_ns(f->total, b[0], 32), rd_fmt_ns(f->self, b[1], 32),
	       f->h.count ? rd_fmt_ns(f->h.min, b[2], 32) : "-",
	       f->h.count ? rd_fmt_ns(f->q50, b[3], 32) : "-",
	       f->h.count ? rd_fmt_ns(f->q99, b[4], 32) : "-",
	       f->h.count ? rd_fmt_ns(f->h.max, b[5], 32) : "-", f->exceptions, f->open, f->name);
}

static void rp_text(const struct rp_state *s, struct rd_pid *rp, const struct ada_frames_stats *st,
                    uint32_t nthreads)
{
	char prog[256];
	uint32_t cur = UINT32_MAX - 1;

	printf("== %s (pid %" PRIu32 "): %" PRIu32 " thread%s, ",
	       rd_program(rp, prog, sizeof(prog)), rp->p->pid, nthreads, nthreads == 1 ? "" : "s");
	if (rp->nimages > 1)
		printf("%" PRIu32 " program images (exec), ", rp->nimages);
	printf("%" PRIu64 " events, %zu functions\n", st->events, s->n);
	for (size_t i = 0; i < s->n; i++) {
		const struct rp_fn *f = &s->fns[i];
		if (f->thread != cur) {
			cur = f->thread;
			if (cur != UINT32_MAX)
				printf("-- thread %" PRIu32 " (tid %" PRIu32 ")\n", cur, f->tid);
			printf("%10s %10s %10s %10s %10s %10s %10s %6s %5s  %s\n", "calls", "total",
			       "self", "min", "p50", "p99", "max", "exc", "open", "function");
		}
		rp_text_row(f);
	}
	printf("calls %" PRIu64 ": returned %" PRIu64 ", left by exception %" PRIu64
	       ", open at the end %" PRIu64 " (not timed)",
	       st->calls, st->returns, st->exceptions, st->open);
	if (st->orphans || st->unmatched || st->too_deep || st->bad_kind)
		printf("; unpaired: %" PRIu64 " calls without an end, %" PRIu64
		       " ends without a call, %" PRIu64 " too deep, %" PRIu64 " unknown kinds",
		       st->orphans, st->unmatched, st->too_deep, st->bad_kind);
	printf("\n");
	if (st->waits) {
		char b[32];
		printf("ada waited for ring space %" PRIu64 " times, %s in all: left out of the "
		       "times above (docs/reading.md)\n",
		       st->waits, rd_fmt_ns(st->wait_ns, b, sizeof(b)));
	}
	fflush(stdout);
	rd_count_only_text(rp, stdout, "");
}

static void rp_json_fn(json_t *arr, const struct rp_fn *f, struct rd_pid *rp)
{
	const struct ada_name *nm = ada_names_get(rp->names, f->fid);
	json_t *o = json_object();

	json_object_set_new(o, "function", json_string(f->name));
	json_object_set_new(o, "mangled", nm->mangled ? json_string(nm->mangled) : json_null());
	json_object_set_new(o, "module", nm->module ? json_string(nm->module) : json_null());
	json_object_set_new(o, "function_id", json_integer((json_int_t)f->fid));
	if (f->thread != UINT32_MAX) {
		json_object_set_new(o, "thread", json_integer(f->thread));
		json_object_set_new(o, "tid", json_integer(f->tid));
	}
	json_object_set_new(o, "calls", json_integer((json_int_t)f->calls));
	json_object_set_new(o, "returns", json_integer((json_int_t)f->returns));
	json_object_set_new(o, "exceptions", json_integer((json_int_t)f->exceptions));
	json_object_set_new(o, "open", json_integer((json_int_t)f->open));
	json_object_set_new(o, "total_ns", json_integer((json_int_t)f->total));
	json_object_set_new(o, "self_ns", json_integer((json_int_t)f->self));
	json_object_set_new(o, "min_ns",
	                    f->h.count ? json_integer((json_int_t)f->h.min) : json_null());
	json_object_set_new(o, "p50_ns",
	                    f->h.count ? json_integer((json_int_t)f->q50) : json_null());
	json_object_set_new(o, "p99_ns",
	                    f->h.count ? json_integer((json_int_t)f->q99) : json_null());
	json_object_set_new(o, "max_ns",
	                    f->h.count ? json_integer((json_int_t)f->h.max) : json_null());
	json_array_append_new(arr, o);
}

static json_t *rp_json(const struct rp_state *s, struct rd_pid *rp,
                       const struct ada_frames_stats *st, uint32_t nthreads)
{
	char prog[256];
	json_t *o = json_object(), *fns = json_array(), *tot = json_object();

	json_object_set_new(o, "pid", json_integer(rp->p->pid));
	json_object_set_new(o, "program", json_string(rd_program(rp, prog, sizeof(prog))));
	json_object_set_new(o, "threads", json_integer(nthreads));
	json_object_set_new(o, "images", json_integer(rp->nimages));
	json_object_set_new(tot, "events", json_integer((json_int_t)st->events));
	json_object_set_new(tot, "calls", json_integer((json_int_t)st->calls));
	json_object_set_new(tot, "returns", json_integer((json_int_t)st->returns));
	json_object_set_new(tot, "exceptions", json_integer((json_int_t)st->exceptions));
	json_object_set_new(tot, "open", json_integer((json_int_t)st->open));
	json_object_set_new(tot, "orphans", json_integer((json_int_t)st->orphans));
	json_object_set_new(tot, "unmatched_ends", json_integer((json_int_t)st->unmatched));
	json_object_set_new(tot, "too_deep", json_integer((json_int_t)st->too_deep));
	json_object_set_new(tot, "unknown_kinds", json_integer((json_int_t)st->bad_kind));
	json_object_set_new(tot, "signal_markers", json_integer((json_int_t)st->markers));
	json_object_set_new(tot, "ada_waits", json_integer((json_int_t)st->waits));
	json_object_set_new(tot, "ada_wait_ns", json_integer((json_int_t)st->wait_ns));
	json_object_set_new(tot, "roots_total_ns", json_integer((json_int_t)st->roots_ns));
	json_object_set_new(tot, "under_open_ns", json_integer((json_int_t)s->under_open_ns));
	json_object_set_new(o, "totals", tot);
	for (size_t i = 0; i < s->n; i++)
		rp_json_fn(fns, &s->fns[i], rp);
	json_object_set_new(o, "functions", fns);
	json_object_set_new(o, "count_only", rd_count_only_json(rp));
	/* the count-only functions never called: not in that array */
	json_object_set_new(o, "count_only_uncalled",
	                    json_integer((json_int_t)rd_count_only_uncalled(rp)));
	json_object_set_new(o, "damaged_files", json_integer(rp->damaged));
	return o;
}

/* -------------------------------------------------------------- walk */

/* On several threads (read_par.h): each piece's frames go into an
 * rp_state of its own (an accumulator), added to the pid's in order;
 * every number here is a sum, a histogram or a min/max, so the sum of
 * the pieces is the one walk's. */
static void *rp_acc_new(void *cmd, const struct rd_pwalk_thread *th)
{
	const struct rp_state *s = cmd;
	struct rp_state *a = calloc(1, sizeof(*a));

	if (a) {
		a->o = s->o;
		a->thread = th->t->thread;
		a->tid = th->tid;
	}
	return a;
}

static void rp_acc_free(void *acc)
{
	struct rp_state *a = acc;

	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		ada_hist_fini(&a->fns[i].h);
	free(a->fns);
	rd_index_free(&a->index);
	free(a);
}

static int rp_acc_merge(void *cmd, void *acc)
{
	struct rp_state *s = cmd;
	const struct rp_state *a = acc;

	if (a->err)
		return a->err;
	s->under_open_ns += a->under_open_ns;
	for (size_t i = 0; i < a->n; i++) {
		const struct rp_fn *c = &a->fns[i];
		struct rp_fn *f = rp_fn_find(s, c->fid, c->thread);
		if (!f)
			return -ENOMEM;
		f->calls += c->calls;
		f->returns += c->returns;
		f->exceptions += c->exceptions;
		f->open += c->open;
		f->total += c->total;
		f->self += c->self;
		if (ada_hist_merge(&f->h, &c->h))
			return -ENOMEM;
	}
	s->last = NULL; /* fns may have moved */
	return 0;
}

static void rp_thread_begin(void *cmd, const struct rd_pwalk_thread *th)
{
	struct rp_state *s = cmd;

	s->thread = th->t->thread;
	s->tid = th->tid;
	s->last = NULL; /* its thread's, with --threads */
}

static void rp_thread_end(void *cmd, const struct rd_pwalk_thread *th)
{
	struct rp_state *s = cmd;

	s->nthreads += !rd_thread_new_image(s->rp, th->i); /* an exec's main thread: the same */
}

static bool rp_wants(const void *f, uint32_t thread)
{
	return rd_filter_wants_thread(f, thread);
}

static const struct rd_pwalk_ops rp_pwalk_ops = {
    .acc_new = rp_acc_new,
    .piece = {.leave = rp_leave},
    .acc_merge = rp_acc_merge,
    .acc_free = rp_acc_free,
    .thread_begin = rp_thread_begin,
    .thread_end = rp_thread_end,
};

static int rp_walk_pid(struct rp_state *s, struct rd_pid *rp, struct ada_frames *w,
                       uint32_t *nthreads)
{
	uint64_t from, to;
	int err = rd_filter_range(&s->o->f, rp, &from, &to);
	unsigned par = rd_par_threads();

	if (!err && !s->o->f.glob && !s->o->f.depth && par > 1) {
		s->rp = rp;
		err = rd_pwalk_pid(rp, rp_wants, &s->o->f, from, to, w, &rp_pwalk_ops, s, par);
		*nthreads = s->nthreads;
		if (err != 1) /* 1: no threads to be had, walked below */
			return err ? err : s->err;
		err = 0;
	}
	for (size_t i = 0; i < rp->p->nthreads && !s->err && !err; i++) {
		struct ada_atf_thread *t;
		if (!rd_filter_wants_thread(&s->o->f, rp->p->thread_ids[i]))
			continue;
		err = rd_thread_open(rp, i, &t);
		if (err)
			return err;
		if (!t)
			continue;
		s->thread = t->thread;
		s->tid = rd_thread_tid(rp, t);
		s->last = NULL; /* its thread's, with --threads */
		rd_filter_walk(&s->o->f, rp->names, t, w, from, to, true);
		*nthreads += !rd_thread_new_image(rp, i); /* an exec's main thread: the same */
		rd_thread_close(rp, t);
	}
	return err ? err : s->err;
}

static int rp_pid(const struct rp_opts *o, const struct ada_atf_pid *p, json_t *procs,
                  uint32_t *damaged)
{
	struct rp_state s = {.o = o};
	struct ada_frames_ops ops = {.leave = rp_leave};
	struct ada_frames *w = NULL;
	struct rd_pid rp;
	uint32_t nthreads = 0;
	int err = rd_pid_open(p, o->dm, &rp);

	if (err)
		return err;
	err = ada_frames_new(&ops, &s, &w);
	if (!err)
		err = rp_walk_pid(&s, &rp, w, &nthreads);
	if (!err)
		err = rp_prepare(&s, &rp);
	if (!err && o->json)
		json_array_append_new(procs, rp_json(&s, &rp, ada_frames_stats(w), nthreads));
	else if (!err)
		rp_text(&s, &rp, ada_frames_stats(w), nthreads);
	*damaged += rp.damaged;
	for (size_t i = 0; i < s.n; i++) {
		ada_hist_fini(&s.fns[i].h);
		free((char *)s.fns[i].name);
	}
	free(s.fns);
	rd_index_free(&s.index);
	ada_frames_free(w);
	rd_pid_close(&rp);
	return err;
}

/* -------------------------------------------------------------- main */

static void rp_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: ada report [--sort COL] [--threads] [--json] [--demangle full|simple|no]\n"
	    "                  [--pid P] [--thread N] [--from T] [--to T] [--window N]\n"
	    "                  [--function GLOB] [--depth N] DIR\n"
	    "  Per function: calls, total and self time, min/p50/p99/max duration, exception\n"
	    "  exits (exc) and frames still open at the end (open), for every pid_N under DIR.\n"
	    "  --sort COL       calls, total (default), self, min, p50, p99, max, exc, open, name\n"
	    "  --threads        one table per thread\n"
	    "  --json           one JSON document (keys: docs/reading.md)\n"
	    "  --demangle M     C++ names: full (default), simple (no parameters), no (as in "
	    "ELF)\n");
	rd_filter_usage(f, true);
}

static int rp_args(int argc, char **argv, struct rp_opts *o, const char **dir)
{
	static const struct option opts[] = {
	    {"sort", required_argument, NULL, 's'},
	    {"threads", no_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"demangle", required_argument, NULL, 'd'},
	    RD_FILTER_OPT_SELECT,
	    RD_FILTER_OPT_CALLS,
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((rc = rd_filter_opt(&o->f, c, optarg)) != 1) {
			if (rc)
				return rc;
		} else if (c == 's') {
			for (o->sort = 0; o->sort < COL_N; o->sort++)
				if (!strcmp(optarg, rp_col_names[o->sort]))
					break;
			if (o->sort == COL_N) {
				ada_log("bad value '%s' for --sort; run `ada report --help`",
				        optarg);
				return 2;
			}
		} else if (c == 't') {
			o->threads = true;
		} else if (c == 'j') {
			o->json = true;
		} else if (c == 'd') {
			if (rd_demangle_opt(optarg, &o->dm))
				return 2;
		} else if (c == 'h') {
			rp_usage(stdout);
			return 0;
		} else {
			rp_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		ada_log("report takes one directory; run `ada report --help`");
		return 2;
	}
	if (rd_filter_check(&o->f))
		return 2;
	*dir = argv[optind];
	return -1;
}

int cmd_report(int argc, char **argv)
{
	struct rp_opts o = {.sort = COL_TOTAL};
	const char *dir = NULL;
	uint32_t damaged = 0;
	int rc = rp_args(argc, argv, &o, &dir), err = 0;

	if (rc >= 0)
		return rc;
	struct ada_atf_tree *tree = rd_filter_open_tree(&o.f, dir, &rc);
	if (!tree)
		return rc;
	json_t *doc = json_object(), *procs = json_array();
	for (size_t i = 0; i < tree->npids && !err; i++)
		if (rd_filter_wants_pid(&o.f, tree->pids[i].pid))
			err = rp_pid(&o, &tree->pids[i], procs, &damaged);
	json_object_set_new(doc, "processes", procs);
	if (!err && o.json) {
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		printf("\n");
	}
	json_decref(doc);
	ada_atf_tree_free(tree);
	if (fflush(stdout) != 0 && !err)
		err = -errno;
	if (err == -EINVAL)
		return 2; /* said */
	if (err) {
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	return damaged ? 1 : 0;
}
