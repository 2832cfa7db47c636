/*
 * ada graph DIR FUNCTION: the call graph around one function, as uftrace's
 * `graph`: its own calls, total and self time over every frame of it (the
 * numbers ada report gives it), the call paths that lead to it (callers,
 * aggregated by distinct path) and a tree of what it calls (callees,
 * aggregated over all its outermost calls by distinct path below it). The
 * aggregation is src/analyze's ada_callgraph; this file picks the
 * function, walks the threads (--thread) and prints, as text or JSON.
 *
 * FUNCTION is a name as ada report prints it (--demangle), the mangled
 * symbol, or a glob of either (as ada dump --function); every function it
 * takes is the function. One graph per process that called it.
 *
 * Exit status: 0; 1 when no process called FUNCTION or a file was damaged
 * or skipped (the rest is still shown); 2 for bad usage or no traces.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "filter.h"
#include "read.h"

#define GRAPH_MATCHED_MAX 64   /* functions named in the output; the rest counted */
#define GRAPH_PATH_SHOWN 12    /* a longer caller path shows its ends */
#define GRAPH_INDENT_LEVELS 64 /* deeper tree lines say their level instead */

struct gr_opts {
	bool json;
	struct rd_filter f; /* --pid, --thread, --from, --to, --window */
	uint32_t depth;     /* levels of the tree below the function; 0: no limit */
	enum ada_demangle dm;
	const char *fn;
};

/* The function's ids in one process, as the match met them. */
struct gr_match {
	const struct gr_opts *o;
	struct rd_pid *rp;
	uint64_t ids[GRAPH_MATCHED_MAX];
	size_t nids, more;
};

static bool gr_name_is(const char *pat, const char *s)
{
	return s && (!strcmp(pat, s) || !fnmatch(pat, s, 0));
}

static bool gr_match_fn(void *ctx, uint64_t fid)
{
	struct gr_match *m = ctx;
	const struct ada_name *nm = ada_names_get(m->rp->names, fid);

	if (!gr_name_is(m->o->fn, nm->name) && !gr_name_is(m->o->fn, nm->mangled))
		return false;
	for (size_t i = 0; i < m->nids; i++)
		if (m->ids[i] == fid)
			return true; /* asked again after the cache dropped it */
	if (m->nids < GRAPH_MATCHED_MAX)
		m->ids[m->nids++] = fid;
	else
		m->more++;
	return true;
}

/* ------------------------------------------------------------- text */

static void gr_counts_text(const struct ada_callgraph_counts *c)
{
	char t[32], s[32];

	printf("%10" PRIu64 " %10s %10s  ", c->calls, rd_fmt_ns(c->total_ns, t, sizeof(t)),
	       rd_fmt_ns(c->self_ns, s, sizeof(s)));
}

static const char *gr_name(struct rd_pid *rp, uint64_t fid)
{
	return ada_names_get(rp->names, fid)->name;
}

/* The root's label: the function's name, or the pattern when it took several. */
static const char *gr_root_name(const struct gr_match *m, struct rd_pid *rp)
{
	return m->nids == 1 && !m->more ? gr_name(rp, m->ids[0]) : m->o->fn;
}

static void gr_caller_text(const struct ada_callgraph *g, const struct ada_callgraph_caller *c,
                           struct rd_pid *rp, const char *root)
{
	const uint64_t *p = ada_callgraph_path(g, c);
	uint32_t n = c->len;

	gr_counts_text(&c->c);
	for (uint32_t i = 0; i < n; i++) {
		if (n > GRAPH_PATH_SHOWN && i == 4) {
			printf("... %" PRIu32 " more ... > ", n - GRAPH_PATH_SHOWN);
			i = n - (GRAPH_PATH_SHOWN - 4);
		}
		printf("%s > ", gr_name(rp, p[i]));
	}
	printf("%s%s\n", root, n ? "" : "  (at the bottom of a stack)");
}

static void gr_callers_text(const struct ada_callgraph *g, struct rd_pid *rp, const char *root)
{
	const struct ada_callgraph_caller *c;
	size_t n = ada_callgraph_callers(g, &c);
	const struct ada_callgraph_counts *other = &ada_callgraph_stats(g)->other_callers;

	printf("callers (%zu call path%s):\n", n, n == 1 ? "" : "s");
	printf("%10s %10s %10s  %s\n", "calls", "total", "self", "path");
	for (size_t i = 0; i < n; i++)
		gr_caller_text(g, &c[i], rp, root);
	if (other->calls) {
		gr_counts_text(other);
		printf("(other paths, past the number kept)\n");
	}
}

static void gr_node_text(const struct ada_callgraph_node *nd, const bool *more, struct rd_pid *rp,
                         const char *root)
{
	uint32_t d = nd->depth, shown = d < GRAPH_INDENT_LEVELS ? d : GRAPH_INDENT_LEVELS;

	gr_counts_text(&nd->c);
	for (uint32_t l = 1; l < shown; l++)
		fputs(more[l] ? "|  " : "   ", stdout);
	if (d)
		fputs("+- ", stdout);
	if (d >= GRAPH_INDENT_LEVELS)
		printf("[level %" PRIu32 "] ", d);
	printf("%s\n", d ? gr_name(rp, nd->function_id) : root);
}

/* The next node in depth-first order, children in their sorted order,
 * not below max_depth (0: no limit); NONE at the end. */
static uint32_t gr_next(const struct ada_callgraph_node *n, uint32_t i, uint32_t max_depth)
{
	if (n[i].first_child != ADA_CALLGRAPH_NONE && (!max_depth || n[i].depth < max_depth))
		return n[i].first_child;
	while (i && n[i].next_sibling == ADA_CALLGRAPH_NONE)
		i = n[i].parent;
	return i ? n[i].next_sibling : ADA_CALLGRAPH_NONE;
}

static void gr_callees_text(const struct ada_callgraph *g, const struct gr_opts *o,
                            struct rd_pid *rp, const char *root)
{
	const struct ada_callgraph_node *n;
	size_t len = ada_callgraph_nodes(g, &n);
	bool more[GRAPH_INDENT_LEVELS + 1] = {0};

	printf("callees (its outermost calls, and what they called):\n");
	printf("%10s %10s %10s  %s\n", "calls", "total", "self", "function");
	for (uint32_t i = 0; len && i != ADA_CALLGRAPH_NONE; i = gr_next(n, i, o->depth)) {
		if (n[i].depth <= GRAPH_INDENT_LEVELS)
			more[n[i].depth] = n[i].next_sibling != ADA_CALLGRAPH_NONE;
		gr_node_text(&n[i], more, rp, root);
	}
}

static void gr_text(const struct gr_match *m, const struct ada_callgraph *g, struct rd_pid *rp)
{
	const struct ada_callgraph_stats *st = ada_callgraph_stats(g);
	const struct ada_callgraph_node *n;
	const char *root = gr_root_name(m, rp);
	char prog[256], t[32], s[32];

	ada_callgraph_nodes(g, &n);
	printf("== %s (pid %" PRIu32 "): %s: %" PRIu64 " call%s, total %s, self %s",
	       rd_program(rp, prog, sizeof(prog)), rp->p->pid, root, st->fn.calls,
	       st->fn.calls == 1 ? "" : "s", rd_fmt_ns(st->fn.total_ns, t, sizeof(t)),
	       rd_fmt_ns(st->fn.self_ns, s, sizeof(s)));
	if (st->fn.exceptions)
		printf(", %" PRIu64 " left by exception", st->fn.exceptions);
	if (st->fn.open)
		printf(", %" PRIu64 " open at the end (not timed)", st->fn.open);
	printf("\n");
	if (m->nids > 1 || m->more)
		printf("(%zu functions match '%s')\n", m->nids + m->more, m->o->fn);
	gr_callers_text(g, rp, root);
	printf("\n");
	gr_callees_text(g, m->o, rp, root);
	if (n[0].c.calls < st->fn.calls)
		printf("%" PRIu64 " of its calls were made inside another call of it: in the tree, "
		       "below their outermost call\n",
		       st->fn.calls - n[0].c.calls);
	if (st->folded_calls)
		printf("%" PRIu64 " calls on paths past the tree's bound are left out\n",
		       st->folded_calls);
}

/* ------------------------------------------------------------- json */

static void gr_counts_json(json_t *o, const struct ada_callgraph_counts *c)
{
	json_object_set_new(o, "calls", json_integer((json_int_t)c->calls));
	json_object_set_new(o, "returns", json_integer((json_int_t)c->returns));
	json_object_set_new(o, "exceptions", json_integer((json_int_t)c->exceptions));
	json_object_set_new(o, "open", json_integer((json_int_t)c->open));
	json_object_set_new(o, "total_ns", json_integer((json_int_t)c->total_ns));
	json_object_set_new(o, "self_ns", json_integer((json_int_t)c->self_ns));
}

static json_t *gr_name_json(struct rd_pid *rp, uint64_t fid)
{
	const struct ada_name *nm = ada_names_get(rp->names, fid);
	json_t *o = json_object();

	json_object_set_new(o, "function", json_string(nm->name));
	json_object_set_new(o, "mangled", nm->mangled ? json_string(nm->mangled) : json_null());
	json_object_set_new(o, "module", nm->module ? json_string(nm->module) : json_null());
	json_object_set_new(o, "function_id", json_integer((json_int_t)fid));
	return o;
}

static json_t *gr_callers_json(const struct ada_callgraph *g, struct rd_pid *rp)
{
	const struct ada_callgraph_caller *c;
	size_t n = ada_callgraph_callers(g, &c);
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		const uint64_t *p = ada_callgraph_path(g, &c[i]);
		json_t *o = json_object(), *path = json_array();
		for (uint32_t k = 0; k < c[i].len; k++)
			json_array_append_new(path, json_string(gr_name(rp, p[k])));
		json_object_set_new(o, "path", path);
		gr_counts_json(o, &c[i].c);
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *gr_callees_json(const struct ada_callgraph *g, const struct gr_match *m,
                               struct rd_pid *rp)
{
	const struct ada_callgraph_node *n;
	size_t len = ada_callgraph_nodes(g, &n);
	uint64_t root_fid = ada_callgraph_stats(g)->root_function_id;
	json_t *a = json_array();

	for (uint32_t i = 0; len && i != ADA_CALLGRAPH_NONE; i = gr_next(n, i, m->o->depth)) {
		json_t *o = gr_name_json(rp, i ? n[i].function_id : root_fid);
		if (!i)
			json_object_set_new(o, "function", json_string(gr_root_name(m, rp)));
		json_object_set_new(o, "node", json_integer(i));
		json_object_set_new(o, "parent", i ? json_integer(n[i].parent) : json_null());
		json_object_set_new(o, "depth", json_integer(n[i].depth));
		gr_counts_json(o, &n[i].c);
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *gr_json(const struct gr_match *m, const struct ada_callgraph *g, struct rd_pid *rp)
{
	const struct ada_callgraph_stats *st = ada_callgraph_stats(g);
	json_t *o = json_object(), *ids = json_array(), *other = json_object();
	char prog[256];

	json_object_set_new(o, "pid", json_integer(rp->p->pid));
	json_object_set_new(o, "program", json_string(rd_program(rp, prog, sizeof(prog))));
	json_object_set_new(o, "function", json_string(gr_root_name(m, rp)));
	for (size_t i = 0; i < m->nids; i++)
		json_array_append_new(ids, gr_name_json(rp, m->ids[i]));
	json_object_set_new(o, "matched", ids);
	json_object_set_new(o, "matched_not_listed", json_integer((json_int_t)m->more));
	gr_counts_json(o, &st->fn);
	json_object_set_new(o, "callers", gr_callers_json(g, rp));
	gr_counts_json(other, &st->other_callers);
	json_object_set_new(o, "other_callers", other);
	json_object_set_new(o, "callees", gr_callees_json(g, m, rp));
	json_object_set_new(o, "folded_calls", json_integer((json_int_t)st->folded_calls));
	json_object_set_new(o, "damaged_files", json_integer(rp->damaged));
	return o;
}

/* ------------------------------------------------------------- walk */

static int gr_walk(const struct gr_opts *o, struct rd_pid *rp, struct ada_callgraph *g)
{
	uint64_t from, to;
	int err = rd_filter_range(&o->f, rp, &from, &to);

	for (size_t i = 0; i < rp->p->nthreads && !err; i++) {
		struct ada_atf_thread *t;
		if (!rd_filter_wants_thread(&o->f, rp->p->thread_ids[i]))
			continue;
		err = rd_thread_open(rp, i, &t);
		if (err || !t)
			continue;
		rd_thread_walk(t, ada_callgraph_walker(g), from, to, true);
		rd_thread_close(rp, t);
	}
	return err ? err : ada_callgraph_sort(g);
}

static int gr_pid(const struct gr_opts *o, const struct ada_atf_pid *p, json_t *procs,
                  uint32_t *damaged, uint32_t *found)
{
	struct gr_match m = {.o = o};
	struct ada_callgraph *g = NULL;
	struct rd_pid rp;
	int err = rd_pid_open(p, o->dm, &rp);

	if (err)
		return err;
	m.rp = &rp;
	err = ada_callgraph_new(gr_match_fn, &m, &g);
	if (!err)
		err = gr_walk(o, &rp, g);
	if (!err && ada_callgraph_stats(g)->fn.calls) {
		if (o->json)
			json_array_append_new(procs, gr_json(&m, g, &rp));
		else
			gr_text(&m, g, &rp);
		(*found)++;
	}
	*damaged += rp.damaged;
	ada_callgraph_free(g);
	rd_pid_close(&rp);
	return err;
}

/* ------------------------------------------------------------- main */

static void gr_usage(FILE *f)
{
	fprintf(f, "usage: ada graph [--json] [--depth N] [--demangle full|simple|no] [--pid P]\n"
	           "                 [--thread N] [--from T] [--to T] [--window N] DIR FUNCTION\n"
	           "  The call graph around FUNCTION (a name, a mangled symbol, or a glob), for\n"
	           "  every pid_N under DIR that called it: its calls, total and self time (as\n"
	           "  ada report), the call paths that lead to it, and the tree of what it\n"
	           "  calls, aggregated over its calls.\n"
	           "  --depth N        only N levels of the tree below FUNCTION\n"
	           "  --json           one JSON document (keys: docs/reading.md)\n"
	           "  --demangle M     C++ names: full (default), simple (no parameters), no\n");
	rd_filter_usage(f, false);
}

static int gr_number(const char *s, const char *what, uint32_t min, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s < '0' || *s > '9' || *end || v < min || v > UINT32_MAX) {
		ada_log("bad value '%s' for %s; run `ada graph --help`", s, what);
		return 2;
	}
	*out = (uint32_t)v;
	return -1;
}

static int gr_opt(int c, struct gr_opts *o)
{
	int rc = rd_filter_opt(&o->f, c, optarg);

	if (rc != 1)
		return rc ? rc : -1;
	switch (c) {
	case 'j':
		o->json = true;
		return -1;
	case 'D':
		return gr_number(optarg, "--depth", 1, &o->depth);
	case 'd':
		return rd_demangle_opt(optarg, &o->dm) ? 2 : -1;
	case 'h':
		gr_usage(stdout);
		return 0;
	default:
		gr_usage(stderr);
		return 2;
	}
}

static int gr_args(int argc, char **argv, struct gr_opts *o, const char **dir)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},           {"depth", required_argument, NULL, 'D'},
	    {"demangle", required_argument, NULL, 'd'}, RD_FILTER_OPT_SELECT,
	    {"help", no_argument, NULL, 'h'},           {0},
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = gr_opt(c, o)) >= 0)
			return rc;
	if (optind != argc - 2) {
		ada_log("graph takes a directory and a function; run `ada graph --help`");
		return 2;
	}
	if (rd_filter_check(&o->f))
		return 2;
	*dir = argv[optind];
	o->fn = argv[optind + 1];
	return -1;
}

int cmd_graph(int argc, char **argv)
{
	struct gr_opts o = {0};
	const char *dir = NULL;
	uint32_t damaged = 0, found = 0;
	int rc = gr_args(argc, argv, &o, &dir), err = 0;

	if (rc >= 0)
		return rc;
	struct ada_atf_tree *tree = rd_filter_open_tree(&o.f, dir, &rc);
	if (!tree)
		return rc;
	json_t *procs = json_array();
	for (size_t i = 0; i < tree->npids && !err; i++)
		if (rd_filter_wants_pid(&o.f, tree->pids[i].pid))
			err = gr_pid(&o, &tree->pids[i], procs, &damaged, &found);
	if (!err && o.json) {
		json_t *doc = json_pack("{sssO}", "function", o.fn, "processes", procs);
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	}
	json_decref(procs);
	ada_atf_tree_free(tree);
	if (err == -EINVAL)
		return 2; /* a filter said what is wrong */
	if (err) {
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	if (!found) {
		ada_log("%s: no call of '%s'%s (`ada report %s` lists the functions called)", dir,
		        o.fn, o.f.have_thread ? " in that thread" : "", dir);
		return 1;
	}
	return damaged ? 1 : 0;
}
