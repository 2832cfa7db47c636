/*
 * ada flame DIR -o FILE.svg | --folded: a flame graph by inclusive time.
 *
 * The call tree is built while the frame walker (src/analyze) streams each
 * thread: one node per distinct call path (parent node, function), found
 * through a hash table, holding the time of the frames on that path
 * (inclusive) and their self time. Frames that returned or were left by
 * exception are timed to their end; frames still open at the end (a crash,
 * a kill) are timed to the thread's last event, so a crashed program still
 * shows where its time went; orphans are not timed (their time stays in
 * their caller's self). Memory grows with the number of distinct paths,
 * not with the recording; past FLAME_MAX_NODES new paths are folded into
 * their caller and counted.
 *
 * Threads are merged by default (the same path in two threads is one
 * frame); --per-thread puts each thread under its own frame, and several
 * processes are always apart. --folded prints the folded stacks
 * ("a;b;c SELF_NS") that flamegraph.pl, inferno and speedscope read.
 *
 * Exit status: 0; 1 when a file was damaged or skipped (the rest is
 * drawn) or the output could not be written; 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "flame_svg.h"
#include "filter.h"
#include "read.h"

#define FLAME_MAX_NODES (4u << 20)
#define FLAME_LABEL (1ull << 63) /* function_id of a process or thread frame */

struct fl_opts {
	bool folded, per_thread;
	struct rd_filter f;
	const char *out;
	enum ada_demangle dm;
};

struct fl_node {
	uint64_t fid;
	uint64_t total, self;
	uint32_t parent;
	uint32_t first_child, next_sibling; /* filled before output */
	char *name;
};

struct fl_tree {
	struct fl_node *n;
	size_t len, cap;
	struct rd_index index; /* (fid, parent) -> node */
	uint64_t folded_paths; /* new paths refused at FLAME_MAX_NODES */
	uint64_t events;
	/* Count-only functions (manifests): exact calls, no frames to draw. */
	uint64_t count_fns, count_calls;
	struct rd_pid *rp; /* names of the pid being walked */
	uint32_t base;     /* the node the walked thread's roots hang under */
	int err;
};

/* ------------------------------------------------------------- tree */

static struct rd_key fl_key(const void *nodes, uint32_t i)
{
	const struct fl_node *n = (const struct fl_node *)nodes + i;
	return (struct rd_key){n->fid, n->parent};
}

static int fl_push(struct fl_tree *t, uint32_t parent, uint64_t fid, const char *name)
{
	if (t->len == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 4096;
		struct fl_node *n = realloc(t->n, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->n = n;
		t->cap = nc;
	}
	struct fl_node *n = &t->n[t->len];
	memset(n, 0, sizeof(*n));
	n->fid = fid;
	n->parent = parent;
	n->name = strdup(name);
	if (!n->name)
		return -ENOMEM;
	t->len++;
	return 0;
}

/* The child of parent for fid, made when new; parent itself when the tree
 * is full (the path is folded into its caller, and counted). */
static uint32_t fl_child(struct fl_tree *t, uint32_t parent, uint64_t fid, const char *label)
{
	if ((t->err = rd_index_reserve(&t->index, fl_key, t->n)))
		return parent;
	uint32_t *slot = rd_index_slot(&t->index, fl_key, t->n, (struct rd_key){fid, parent});
	if (*slot)
		return *slot - 1;
	if (t->len >= FLAME_MAX_NODES) {
		t->folded_paths++;
		return parent;
	}
	const char *name = label ? label : ada_names_get(t->rp->names, fid)->name;
	if ((t->err = fl_push(t, parent, fid, name)))
		return parent;
	rd_index_put(&t->index, slot, (uint32_t)t->len - 1);
	return (uint32_t)t->len - 1;
}

static void fl_enter(void *ctx, struct ada_frame *f, struct ada_frame *parent)
{
	struct fl_tree *t = ctx;
	f->user = fl_child(t, parent ? (uint32_t)parent->user : t->base, f->function_id, NULL);
}

static void fl_leave(void *ctx, const struct ada_frame *f, enum ada_frame_end how,
                     struct ada_frame *parent)
{
	struct fl_tree *t = ctx;
	struct fl_node *n = &t->n[f->user];
	uint64_t d = ada_frame_ns(f); /* the program's time: without ada's waits */

	if (how == ADA_END_ORPHAN)
		return;
	if (how == ADA_END_OPEN && parent)
		parent->child_ns += d; /* the walker times only frames that ended */
	n->total += d;
	n->self += d - (f->child_ns < d ? f->child_ns : d);
}

/* Inclusive time of the label frames ("all", processes, threads): their
 * children's. A node is made after its parent, so one pass from the end
 * sums children before their parent. */
static void fl_sum_labels(struct fl_tree *t)
{
	for (size_t i = t->len; i-- > 0;)
		if (t->n[i].fid & FLAME_LABEL)
			t->n[i].total = 0;
	for (size_t i = t->len; i-- > 1;) {
		struct fl_node *p = &t->n[t->n[i].parent];
		if (p->fid & FLAME_LABEL)
			p->total += t->n[i].total;
	}
}

/* ------------------------------------------------------------- walk */

static int fl_thread(const struct fl_opts *o, struct fl_tree *t, struct rd_pid *rp, size_t i,
                     uint32_t pid_node, const uint64_t range[2])
{
	static const struct ada_frames_ops ops = {.enter = fl_enter, .leave = fl_leave};
	struct ada_atf_thread *th;
	struct ada_frames *w;
	char label[64];
	int err;

	if (!rd_filter_wants_thread(&o->f, rp->p->thread_ids[i]))
		return 0;
	err = rd_thread_open(rp, i, &th);
	if (err || !th)
		return err;
	t->base = pid_node;
	if (o->per_thread) {
		snprintf(label, sizeof(label), "thread %" PRIu32 " (tid %" PRIu32 ")", th->thread,
		         rd_thread_tid(rp, th));
		t->base = fl_child(t, pid_node, FLAME_LABEL | th->thread, label);
	}
	err = ada_frames_new(&ops, t, &w);
	if (!err) {
		t->events += rd_filter_walk(&o->f, rp->names, th, w, range[0], range[1], true);
		err = t->err;
	}
	ada_frames_free(w);
	rd_thread_close(rp, th);
	return err;
}

/* A count-only function's calls into the subtitle's sum: the manifest
 * copies them from agent.json, the target's, so a negative count adds
 * nothing (as ada status, cmd_ctl.c man_add_count_only) and the sum
 * saturates instead of wrapping. */
static void fl_count_calls(struct fl_tree *t, json_int_t n)
{
	if (n > 0)
		t->count_calls = (uint64_t)n > UINT64_MAX - t->count_calls
		                     ? UINT64_MAX
		                     : t->count_calls + (uint64_t)n;
}

static int fl_pid(const struct fl_opts *o, struct fl_tree *t, const struct ada_atf_pid *p,
                  bool several, uint32_t *damaged)
{
	struct rd_pid rp;
	char prog[256], label[300];
	int err = rd_pid_open(p, o->dm, &rp);
	uint32_t pid_node = 0;
	uint64_t range[2];

	if (err)
		return err;
	err = rd_filter_range(&o->f, &rp, &range[0], &range[1]);
	if (err) {
		rd_pid_close(&rp);
		return err;
	}
	t->rp = &rp;
	if (several) {
		snprintf(label, sizeof(label), "%s (pid %" PRIu32 ")",
		         rd_program(&rp, prog, sizeof(prog)), p->pid);
		pid_node = fl_child(t, 0, FLAME_LABEL | (1ull << 62) | p->pid, label);
	}
	for (size_t i = 0; i < p->nthreads && !err; i++)
		err = fl_thread(o, t, &rp, i, pid_node, range);
	json_t *co = rd_count_only_json(&rp), *e;
	size_t k;
	json_array_foreach(co, k, e)
	{
		t->count_fns++;
		fl_count_calls(t, json_integer_value(json_object_get(e, "calls")));
	}
	json_decref(co);
	t->count_fns += rd_count_only_uncalled(&rp); /* never called: counted, not listed */
	*damaged += rp.damaged;
	t->rp = NULL;
	rd_pid_close(&rp);
	return err;
}

/* ----------------------------------------------------------- output */

/* qsort has no context argument: the tree being sorted (CLI, one thread). */
static const struct fl_tree *fl_sorting;

static int fl_cmp(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct fl_node *na = &fl_sorting->n[a], *nb = &fl_sorting->n[b];

	if (na->parent != nb->parent)
		return na->parent < nb->parent ? -1 : 1;
	int c = strcmp(na->name, nb->name);
	return c ? c : (a < b ? -1 : a > b);
}

/* Children lists, sorted by name (flamegraph.pl's order): stable output. */
static int fl_link(struct fl_tree *t)
{
	uint32_t *idx = malloc(t->len * sizeof(*idx));
	size_t m = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < t->len; i++) {
		t->n[i].first_child = t->n[i].next_sibling = UINT32_MAX;
		if (i)
			idx[m++] = (uint32_t)i;
	}
	fl_sorting = t;
	qsort(idx, m, sizeof(*idx), fl_cmp);
	for (size_t i = m; i-- > 0;) {
		struct fl_node *n = &t->n[idx[i]];
		n->next_sibling = t->n[n->parent].first_child;
		t->n[n->parent].first_child = idx[i];
	}
	free(idx);
	return 0;
}

struct fl_visit {
	uint32_t node;
	uint32_t depth;
	uint64_t x;
};

typedef void (*fl_visit_fn)(void *ctx, const struct fl_tree *t, const struct fl_visit *v,
                            const uint32_t *path, uint32_t plen);

static int fl_grow(void **a, size_t *cap, size_t need, size_t elem)
{
	if (need < *cap)
		return 0;
	void *n = realloc(*a, *cap * 2 * elem);
	if (!n)
		return -ENOMEM;
	*a = n;
	*cap *= 2;
	return 0;
}

/* Pushes v's children so that the first by name comes out first. */
static int fl_push_children(const struct fl_tree *t, const struct fl_visit *v, struct fl_visit **st,
                            size_t *sp, size_t *cap)
{
	uint64_t x = v->x;
	size_t first = *sp;

	for (uint32_t c = t->n[v->node].first_child; c != UINT32_MAX; c = t->n[c].next_sibling) {
		if (fl_grow((void **)st, cap, *sp, sizeof(**st)))
			return -ENOMEM;
		(*st)[(*sp)++] = (struct fl_visit){c, v->depth + 1, x};
		x += t->n[c].total;
	}
	for (size_t a = first, b = *sp; a + 1 < b; a++, b--) {
		struct fl_visit tmp = (*st)[a];
		(*st)[a] = (*st)[b - 1];
		(*st)[b - 1] = tmp;
	}
	return 0;
}

/* Depth first, children in name order, with an explicit stack (recursion
 * can be 100 000 frames deep); path holds the nodes from the root's child
 * down to v->node. */
static int fl_walk_tree(const struct fl_tree *t, fl_visit_fn fn, void *ctx)
{
	size_t scap = 1024, pcap = 1024, sp = 0;
	struct fl_visit *st = malloc(scap * sizeof(*st));
	uint32_t *path = malloc(pcap * sizeof(*path));
	int err = st && path ? 0 : -ENOMEM;

	if (!err)
		st[sp++] = (struct fl_visit){0, 0, 0};
	while (!err && sp) {
		struct fl_visit v = st[--sp];
		err = fl_grow((void **)&path, &pcap, v.depth, sizeof(*path));
		if (err)
			break;
		path[v.depth] = v.node;
		fn(ctx, t, &v, path + 1, v.depth);
		err = fl_push_children(t, &v, &st, &sp, &scap);
	}
	free(st);
	free(path);
	return err;
}

/* One line per path with self time: "a;b;c 123". */
static void fl_folded_line(void *ctx, const struct fl_tree *t, const struct fl_visit *v,
                           const uint32_t *path, uint32_t plen)
{
	FILE *f = ctx;

	(void)v;
	if (!plen || !t->n[path[plen - 1]].self)
		return;
	for (uint32_t i = 0; i < plen; i++) {
		const char *s = t->n[path[i]].name;
		if (i)
			putc(';', f);
		for (; *s; s++) /* ';' separates frames, a line is one stack */
			putc(*s == ';' ? ':' : (unsigned char)*s < 0x20 ? '?' : *s, f);
	}
	fprintf(f, " %" PRIu64 "\n", t->n[path[plen - 1]].self);
}

struct fl_svg_ctx {
	struct flame_svg svg;
	uint32_t max_depth;
};

static void fl_depth(void *ctx, const struct fl_tree *t, const struct fl_visit *v,
                     const uint32_t *path, uint32_t plen)
{
	struct fl_svg_ctx *c = ctx;
	(void)t;
	(void)path;
	(void)plen;
	if (v->depth > c->max_depth)
		c->max_depth = v->depth;
}

static void fl_svg_frame(void *ctx, const struct fl_tree *t, const struct fl_visit *v,
                         const uint32_t *path, uint32_t plen)
{
	struct fl_svg_ctx *c = ctx;
	const struct fl_node *n = &t->n[v->node];
	struct flame_frame fr = {n->name, v->x,     n->total,
	                         n->self, v->depth, v->node == 0 || (n->fid & FLAME_LABEL) ? 1 : 0};

	(void)path;
	(void)plen;
	if (n->total || v->node == 0)
		flame_svg_frame(&c->svg, &fr);
}

static int fl_write_svg(const struct fl_opts *o, struct fl_tree *t, FILE *f, const char *dir,
                        uint64_t events)
{
	struct fl_svg_ctx c = {.svg = {.f = f}};
	char title[512], sub[768], b[32];
	int err = fl_walk_tree(t, fl_depth, &c);

	if (err)
		return err;
	snprintf(title, sizeof(title), "ada flame: %s", dir);
	char co[160] = "";
	if (t->count_fns)
		snprintf(co, sizeof(co),
		         "; %" PRIu64 " count-only functions (%" PRIu64
		         " calls, untimed, not drawn: ada report lists them)",
		         t->count_fns, t->count_calls);
	snprintf(sub, sizeof(sub),
	         "%s of calls, %" PRIu64 " events, %s%s%s. Click a frame to zoom, Search (Ctrl-F) "
	         "highlights by regular expression.",
	         rd_fmt_ns(t->n[0].total, b, sizeof(b)), events,
	         o->per_thread ? "per thread" : "threads merged",
	         t->folded_paths ? "; some paths folded into their caller (too many)" : "", co);
	c.svg.title = title;
	c.svg.subtitle = sub;
	c.svg.total = t->n[0].total;
	c.svg.max_depth = c.max_depth;
	flame_svg_begin(&c.svg);
	err = fl_walk_tree(t, fl_svg_frame, &c);
	flame_svg_end(&c.svg);
	return err;
}

static void fl_free(struct fl_tree *t)
{
	for (size_t i = 0; i < t->len; i++)
		free(t->n[i].name);
	free(t->n);
	rd_index_free(&t->index);
}

/* -------------------------------------------------------------- main */

static void fl_usage(FILE *f)
{
	fprintf(f,
	        "usage: ada flame [-o FILE.svg | --folded] [--per-thread] [--demangle M]\n"
	        "                 [--pid P] [--thread N] [--from T] [--to T] [--window N]\n"
	        "                 [--function GLOB] [--depth N] DIR\n"
	        "  A flame graph of every pid_N under DIR by inclusive time: an interactive SVG\n"
	        "  (click to zoom, Search) with -o, or with --folded the folded stacks that\n"
	        "  flamegraph.pl, inferno and speedscope read (to stdout, or -o FILE).\n"
	        "  --per-thread     each thread under its own frame (default: threads merged)\n"
	        "  --demangle M     C++ names: full (default), simple (no parameters), no\n");
	rd_filter_usage(f, true);
}

static int fl_args(int argc, char **argv, struct fl_opts *o, const char **dir)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"folded", no_argument, NULL, 'F'},
	    {"per-thread", no_argument, NULL, 'p'},
	    {"demangle", required_argument, NULL, 'd'},
	    RD_FILTER_OPT_SELECT,
	    RD_FILTER_OPT_CALLS,
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if ((rc = rd_filter_opt(&o->f, c, optarg)) != 1) {
			if (rc)
				return rc;
		} else if (c == 'o') {
			o->out = optarg;
		} else if (c == 'F') {
			o->folded = true;
		} else if (c == 'p') {
			o->per_thread = true;
		} else if (c == 'd') {
			if (rd_demangle_opt(optarg, &o->dm))
				return 2;
		} else if (c == 'h') {
			fl_usage(stdout);
			return 0;
		} else {
			fl_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || (!o->out && !o->folded)) {
		ada_log("flame takes -o FILE.svg (or --folded) and one directory; run `ada flame "
		        "--help`");
		return 2;
	}
	if (rd_filter_check(&o->f))
		return 2;
	*dir = argv[optind];
	return -1;
}

static int fl_build(const struct fl_opts *o, struct fl_tree *t, const struct ada_atf_tree *tree,
                    uint32_t *damaged)
{
	int err = fl_push(t, 0, FLAME_LABEL, "all");

	for (size_t i = 0; i < tree->npids && !err; i++)
		if (rd_filter_wants_pid(&o->f, tree->pids[i].pid))
			err = fl_pid(o, t, &tree->pids[i], tree->npids > 1, damaged);
	if (!err) {
		fl_sum_labels(t);
		err = fl_link(t);
	}
	return err;
}

int cmd_flame(int argc, char **argv)
{
	struct fl_opts o = {0};
	struct fl_tree t = {0};
	struct rd_out out;
	const char *dir = NULL;
	uint32_t damaged = 0;
	static char buf[1 << 20];
	int rc = fl_args(argc, argv, &o, &dir), err;

	if (rc >= 0)
		return rc;
	struct ada_atf_tree *tree = rd_filter_open_tree(&o.f, dir, &rc);
	if (!tree)
		return rc;
	err = fl_build(&o, &t, tree, &damaged);
	ada_atf_tree_free(tree);
	if (!err)
		err = rd_out_open(&out, o.out ? o.out : "-");
	if (err) {
		if (err != -EINVAL) /* -EINVAL: a filter said what is wrong */
			ada_log("%s: %s", o.out && err != -ENOMEM ? o.out : dir, strerror(-err));
		fl_free(&t);
		return err == -EINVAL ? 2 : 1;
	}
	setvbuf(out.f, buf, _IOFBF, sizeof(buf));
	if (o.folded)
		err = fl_walk_tree(&t, fl_folded_line, out.f);
	else
		err = fl_write_svg(&o, &t, out.f, dir, t.events);
	if (t.count_fns && o.folded)
		ada_log("%" PRIu64 " count-only functions (%" PRIu64
		        " calls) have no frames and are "
		        "not in the graph; ada report lists their counts",
		        t.count_fns, t.count_calls);
	if (t.folded_paths)
		ada_log("%" PRIu64 " calls on paths past %u distinct ones were folded into their "
		        "caller",
		        t.folded_paths, FLAME_MAX_NODES);
	fl_free(&t);
	if (err) {
		rd_out_abort(&out);
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	err = rd_out_commit(&out);
	if (err) {
		ada_log("%s: %s", o.out, strerror(-err));
		return 1;
	}
	return damaged ? 1 : 0;
}
