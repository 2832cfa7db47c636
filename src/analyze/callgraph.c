/*
 * The call graph around one function (analyze.h): what uftrace's `graph`
 * shows, built while the frames stream by, thread after thread.
 *
 * Every frame carries one word (ada_frame.user):
 *   - outside a call of the function: a hash of its call path (the path
 *     hash of its parent and its own function id), so that an outermost
 *     call of the function finds its backtrace in one lookup;
 *   - inside one: CG_IN_TREE | its node, the distinct path from the
 *     outermost call down to it (parent node, function id), so that each
 *     frame adds its numbers to its node when it leaves.
 * Outermost calls do not nest within a thread, so the backtrace of the one
 * open now is one field (cur_caller). A call of the function inside
 * another is a node of the tree, not a second root: the root counts the
 * outermost calls, and `fn` counts every frame of it, as ada report does.
 *
 * Memory grows with the distinct paths below the function (at most
 * CG_MAX_NODES; calls on newer paths are counted in folded_calls and left
 * out) and the distinct backtraces above it (at most CG_MAX_CALLERS, with
 * CG_MAX_PATH_FIDS function ids kept for all of them; calls past that are
 * in other_callers), never with the recording. Threads: CLI only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"

#define CG_IN_TREE (1ull << 63)
#define CG_FOLDED (1ull << 62) /* inside, on a path past CG_MAX_NODES */
#define CG_SEED 0x6a09e667f3bcc908ull
#define CG_MAX_NODES (4u << 20)
#define CG_MAX_CALLERS (1u << 16)
#define CG_MAX_PATH_FIDS (1u << 24)
#define CG_MATCH_CACHE 4096u

struct cg_match_slot {
	uint64_t fid;
	uint8_t state; /* 0 unknown, 1 no, 2 yes */
};

struct ada_callgraph {
	ada_callgraph_match_fn match;
	void *match_ctx;
	struct ada_frames *w;
	struct ada_callgraph_node *n;
	size_t len, cap;
	uint32_t *slots; /* (parent, fid) -> node + 1 */
	size_t nslots;
	struct ada_callgraph_caller *callers;
	size_t ncallers, ccap;
	uint32_t *cslots; /* path hash -> caller + 1 */
	size_t ncslots;
	uint64_t *paths; /* the callers' function ids, end to end */
	size_t npaths, pcap;
	uint32_t cur_caller; /* of the open outermost call; UINT32_MAX: other */
	struct ada_callgraph_stats st;
	struct cg_match_slot mcache[CG_MATCH_CACHE];
	int err;
};

/* ------------------------------------------------------------ helpers */

static uint64_t cg_mix(uint64_t h, uint64_t fid)
{
	h ^= fid + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ull;
	return (h ^ (h >> 31)) & ~(CG_IN_TREE | CG_FOLDED);
}

static bool cg_match(struct ada_callgraph *g, uint64_t fid)
{
	struct cg_match_slot *s = &g->mcache[(fid ^ (fid >> 29)) & (CG_MATCH_CACHE - 1)];

	if (s->state && s->fid == fid)
		return s->state == 2;
	s->fid = fid;
	s->state = g->match(g->match_ctx, fid) ? 2 : 1;
	return s->state == 2;
}

static void cg_count(struct ada_callgraph_counts *c, enum ada_frame_end how, uint64_t d,
                     uint64_t child)
{
	c->calls++;
	if (how == ADA_END_OPEN)
		c->open++;
	if (how != ADA_END_RETURN && how != ADA_END_EXCEPTION)
		return; /* open and orphan frames are not timed, as in ada report */
	c->returns += how == ADA_END_RETURN;
	c->exceptions += how == ADA_END_EXCEPTION;
	c->total_ns += d;
	c->self_ns += d - (child < d ? child : d);
}

static int cg_grow(void **a, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : first;
	void *p = realloc(*a, nc * elem);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = nc;
	return 0;
}

/* -------------------------------------------------------------- nodes */

static size_t cg_node_hash(uint32_t parent, uint64_t fid, size_t mask)
{
	return (size_t)(cg_mix(parent, fid) >> 7) & mask;
}

static int cg_node_rehash(struct ada_callgraph *g)
{
	size_t ns = g->nslots ? g->nslots * 2 : 1024;
	uint32_t *sl = calloc(ns, sizeof(*sl));

	if (!sl)
		return -ENOMEM;
	for (size_t i = 0; i < g->len; i++) {
		size_t k = cg_node_hash(g->n[i].parent, g->n[i].function_id, ns - 1);
		while (sl[k])
			k = (k + 1) & (ns - 1);
		sl[k] = (uint32_t)i + 1;
	}
	free(g->slots);
	g->slots = sl;
	g->nslots = ns;
	return 0;
}

/* The node of (parent, fid), made when new; UINT32_MAX when the tree is
 * full or memory ran out (g->err). The root is node 0, made by the first
 * outermost call (for any function the match takes) with parent NONE and
 * function id 0: one root however many functions match. */
static uint32_t cg_node(struct ada_callgraph *g, uint32_t parent, uint64_t fid, uint32_t depth)
{
	if ((g->len + 1) * 2 > g->nslots && (g->err = cg_node_rehash(g)))
		return UINT32_MAX;
	size_t k = cg_node_hash(parent, fid, g->nslots - 1);
	for (; g->slots[k]; k = (k + 1) & (g->nslots - 1)) {
		const struct ada_callgraph_node *n = &g->n[g->slots[k] - 1];
		if (n->parent == parent && n->function_id == fid)
			return g->slots[k] - 1;
	}
	if (g->len >= CG_MAX_NODES)
		return UINT32_MAX;
	if ((g->err = cg_grow((void **)&g->n, &g->cap, g->len, sizeof(*g->n), 256)))
		return UINT32_MAX;
	g->n[g->len] = (struct ada_callgraph_node){
	    .function_id = fid,
	    .parent = parent,
	    .depth = depth,
	    .first_child = ADA_CALLGRAPH_NONE,
	    .next_sibling = ADA_CALLGRAPH_NONE,
	};
	g->slots[k] = (uint32_t)++g->len;
	return (uint32_t)g->len - 1;
}

/* ------------------------------------------------------------ callers */

static int cg_caller_rehash(struct ada_callgraph *g)
{
	size_t ns = g->ncslots ? g->ncslots * 2 : 256;
	uint32_t *sl = calloc(ns, sizeof(*sl));

	if (!sl)
		return -ENOMEM;
	for (size_t i = 0; i < g->ncallers; i++) {
		size_t k = (size_t)(g->callers[i].hash >> 5) & (ns - 1);
		while (sl[k])
			k = (k + 1) & (ns - 1);
		sl[k] = (uint32_t)i + 1;
	}
	free(g->cslots);
	g->cslots = sl;
	g->ncslots = ns;
	return 0;
}

/* A new backtrace: the frames below the current one, outermost first. */
static uint32_t cg_caller_new(struct ada_callgraph *g, uint64_t hash, size_t slot)
{
	size_t len = ada_frames_depth(g->w) - 1;

	if (g->ncallers >= CG_MAX_CALLERS || g->npaths + len > CG_MAX_PATH_FIDS)
		return UINT32_MAX;
	if ((g->err =
	         cg_grow((void **)&g->callers, &g->ccap, g->ncallers, sizeof(*g->callers), 64)) ||
	    (g->err = cg_grow((void **)&g->paths, &g->pcap, g->npaths + len, sizeof(*g->paths),
	                      1024 + len)))
		return UINT32_MAX;
	for (size_t i = 0; i < len; i++)
		g->paths[g->npaths + i] = ada_frames_at(g->w, i)->function_id;
	g->callers[g->ncallers] =
	    (struct ada_callgraph_caller){.hash = hash, .off = g->npaths, .len = (uint32_t)len};
	g->npaths += len;
	g->cslots[slot] = (uint32_t)++g->ncallers;
	return (uint32_t)g->ncallers - 1;
}

static uint32_t cg_caller(struct ada_callgraph *g, uint64_t hash)
{
	if ((g->ncallers + 1) * 2 > g->ncslots && (g->err = cg_caller_rehash(g)))
		return UINT32_MAX;
	size_t k = (size_t)(hash >> 5) & (g->ncslots - 1);
	for (; g->cslots[k]; k = (k + 1) & (g->ncslots - 1))
		if (g->callers[g->cslots[k] - 1].hash == hash)
			return g->cslots[k] - 1;
	return cg_caller_new(g, hash, k);
}

/* -------------------------------------------------------------- frames */

static void cg_enter(void *ctx, struct ada_frame *f, struct ada_frame *parent)
{
	struct ada_callgraph *g = ctx;
	uint64_t up = parent ? parent->user : CG_SEED;

	if (up & CG_IN_TREE) {
		uint32_t pn = (uint32_t)up, n = UINT32_MAX;
		if (!(up & CG_FOLDED))
			n = cg_node(g, pn, f->function_id, g->n[pn].depth + 1);
		f->user = n == UINT32_MAX ? (CG_IN_TREE | CG_FOLDED | pn) : (CG_IN_TREE | n);
		return;
	}
	if (!cg_match(g, f->function_id)) {
		f->user = cg_mix(up, f->function_id);
		return;
	}
	uint32_t root = cg_node(g, ADA_CALLGRAPH_NONE, 0, 0);
	f->user = root == UINT32_MAX ? cg_mix(up, f->function_id) : (CG_IN_TREE | root);
	if (!g->st.root_function_id)
		g->st.root_function_id = f->function_id;
	g->cur_caller = cg_caller(g, up);
}

static void cg_leave(void *ctx, const struct ada_frame *f, enum ada_frame_end how,
                     struct ada_frame *parent)
{
	struct ada_callgraph *g = ctx;
	uint64_t d = ada_frame_ns(f); /* the program's time: without ada's waits */
	(void)parent;

	if (cg_match(g, f->function_id))
		cg_count(&g->st.fn, how, d, f->child_ns);
	if (!(f->user & CG_IN_TREE))
		return;
	if (f->user & CG_FOLDED) {
		g->st.folded_calls++;
		return;
	}
	struct ada_callgraph_node *n = &g->n[(uint32_t)f->user];
	cg_count(&n->c, how, d, f->child_ns);
	if (n->parent != ADA_CALLGRAPH_NONE)
		return;
	if (g->cur_caller == UINT32_MAX)
		cg_count(&g->st.other_callers, how, d, f->child_ns);
	else
		cg_count(&g->callers[g->cur_caller].c, how, d, f->child_ns);
}

/* -------------------------------------------------------------- public */

int ada_callgraph_new(ada_callgraph_match_fn match, void *ctx, struct ada_callgraph **out)
{
	static const struct ada_frames_ops ops = {.enter = cg_enter, .leave = cg_leave};
	struct ada_callgraph *g = calloc(1, sizeof(*g));
	int err;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->match = match;
	g->match_ctx = ctx;
	err = ada_frames_new(&ops, g, &g->w);
	if (err) {
		free(g);
		return err;
	}
	*out = g;
	return 0;
}

void ada_callgraph_free(struct ada_callgraph *g)
{
	if (!g)
		return;
	ada_frames_free(g->w);
	free(g->n);
	free(g->slots);
	free(g->callers);
	free(g->cslots);
	free(g->paths);
	free(g);
}

struct ada_frames *ada_callgraph_walker(struct ada_callgraph *g)
{
	return g->w;
}

const struct ada_callgraph_stats *ada_callgraph_stats(const struct ada_callgraph *g)
{
	return &g->st;
}

size_t ada_callgraph_nodes(const struct ada_callgraph *g, const struct ada_callgraph_node **out)
{
	*out = g->n;
	return g->len;
}

size_t ada_callgraph_callers(const struct ada_callgraph *g, const struct ada_callgraph_caller **out)
{
	*out = g->callers;
	return g->ncallers;
}

const uint64_t *ada_callgraph_path(const struct ada_callgraph *g,
                                   const struct ada_callgraph_caller *c)
{
	return g->paths + c->off;
}

/* -------------------------------------------------------------- order */

/* qsort has no context argument: the graph being sorted (CLI, one thread). */
static const struct ada_callgraph *cg_sorting;

static int cg_cmp_counts(const struct ada_callgraph_counts *a, const struct ada_callgraph_counts *b)
{
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	return 0;
}

static int cg_cmp_node(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct ada_callgraph_node *na = &cg_sorting->n[a], *nb = &cg_sorting->n[b];
	int c = cg_cmp_counts(&na->c, &nb->c);

	if (c)
		return c;
	if (na->function_id != nb->function_id)
		return na->function_id < nb->function_id ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int cg_cmp_caller(const void *pa, const void *pb)
{
	const struct ada_callgraph_caller *a = pa, *b = pb;
	int c = cg_cmp_counts(&a->c, &b->c);

	return c ? c : (a->off < b->off ? -1 : a->off > b->off);
}

int ada_callgraph_sort(struct ada_callgraph *g)
{
	uint32_t *idx = g->len ? malloc(g->len * sizeof(*idx)) : NULL;
	size_t m = 0;

	if (g->err)
		return g->err;
	if (g->len && !idx)
		return -ENOMEM;
	for (size_t i = 0; i < g->len; i++) {
		g->n[i].first_child = g->n[i].next_sibling = ADA_CALLGRAPH_NONE;
		if (g->n[i].parent != ADA_CALLGRAPH_NONE)
			idx[m++] = (uint32_t)i;
	}
	cg_sorting = g;
	if (m) /* qsort's array may not be NULL, even empty */
		qsort(idx, m, sizeof(*idx), cg_cmp_node);
	for (size_t i = m; i-- > 0;) { /* prepending, last first: lists in order */
		struct ada_callgraph_node *n = &g->n[idx[i]];
		n->next_sibling = g->n[n->parent].first_child;
		g->n[n->parent].first_child = idx[i];
	}
	free(idx);
	if (g->ncallers)
		qsort(g->callers, g->ncallers, sizeof(*g->callers), cg_cmp_caller);
	free(g->cslots); /* the hash slots point into the old order */
	g->cslots = NULL;
	g->ncslots = 0;
	return 0;
}
