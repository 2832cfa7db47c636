/*
 * Cross-function branches into patched bytes (not hook context).
 *
 * hook_arch_prepare() proves that no branch *inside* a function lands in
 * the bytes its patch displaces. Hand-written assembly also jumps from one
 * function into another's first bytes (glibc: __mempcpy_*_erms ends with
 * `jmp __memmove_*_erms+3`); patching that target would make the jump land
 * in the middle of our `jmp rel32`. So the agent sweeps every function
 * body of a module, collects the targets of direct relative branches that
 * leave their function, and skips every candidate with a target strictly
 * inside its patch (ADA_SKIP_BRANCH_INTO_PATCH). Two passes keep it cheap:
 * a byte scan that reads every position as a possible rel8/rel32 branch
 * (a superset) against a bitmap of the patches' interiors, then an exact
 * decode (hook_arch_insn_len: the fast length table, capstone where it
 * declines) of only the functions the scan flagged.
 *
 * Threads: the init thread or a dlopen rescan, under agent.lock; at
 * start-up the exact pass may be shared with the agent's helper thread
 * (discover_runner): each share of XREF_GRAIN functions fills its own
 * target list, and the lists are merged and sorted afterwards, so the
 * verdicts do not depend on which thread took which share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "discover_internal.h"
#include "hook_arch.h"

struct xref_targets {
	uint64_t *v;
	size_t n, cap;
};

static int xref_push(struct xref_targets *t, uint64_t target)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 256;
		uint64_t *nv = realloc(t->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = nc;
	}
	t->v[t->n++] = target;
	return 0;
}

/* Every direct branch of the body that leaves it, into t. Undecodable
 * bytes are stepped over one at a time (the arch layer judges those). */
static int xref_sweep(const uint8_t *code, uint64_t addr, uint64_t size, struct xref_targets *t)
{
	uint64_t off = 0;
	while (off < size) {
		uint64_t target = 0;
		int has = 0;
		size_t n = hook_arch_insn_len(code + off, size - off, addr + off, &target, &has);
		off += n ? n : 1;
		if (has && (target < addr || target >= addr + size)) {
			int err = xref_push(t, target);
			if (err)
				return err;
		}
	}
	return 0;
}

static int xref_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static bool xref_hits(const struct xref_targets *t, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = t->n;
	while (a < b) { /* first target > lo */
		size_t mid = a + (b - a) / 2;
		if (t->v[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < t->n && t->v[a] < hi;
}

/* Bit per byte of [lo, hi): set on the bytes strictly inside a
 * candidate's patch (where no branch may land). */
struct xref_map {
	uint64_t lo, hi;
	uint8_t *bits;
};

static bool xref_map_hit(const struct xref_map *mp, uint64_t t)
{
	if (t < mp->lo || t >= mp->hi)
		return false;
	uint64_t i = t - mp->lo;
	return (mp->bits[i >> 3] >> (i & 7)) & 1;
}

/* Marks [lo, hi) in the map (inside [mp->lo, mp->hi)). */
static void xref_map_set(struct xref_map *mp, uint64_t lo, uint64_t hi)
{
	for (uint64_t k = lo - mp->lo; k < hi - mp->lo; k++)
		mp->bits[k >> 3] |= (uint8_t)(1u << (k & 7));
}

/* The padding form's ranges of function i that no branch may target
 * (gaps[DISCOVER_PAD_GAP_WORDS * i ...], pairs [lo, hi); empty: lo == hi). */
static const uint64_t *xref_gap(const uint64_t *gaps, size_t i, size_t r)
{
	return gaps + DISCOVER_PAD_GAP_WORDS * i + 2 * r;
}

/* Also every byte of the padding form's gaps. */
static int xref_map_build(uint64_t base, const struct ada_hook_symtab *st,
                          const struct hook_arch_plan *plans, const uint64_t *gaps,
                          struct xref_map *mp)
{
	mp->lo = UINT64_MAX;
	mp->hi = 0;
	for (size_t i = 0; i < st->count; i++) {
		if (st->fns[i].status != ADA_HOOK_OK)
			continue;
		uint64_t a = base + st->fns[i].offset;
		mp->lo = a < mp->lo ? a : mp->lo;
		mp->hi = a + plans[i].patch_len > mp->hi ? a + plans[i].patch_len : mp->hi;
		for (size_t r = 0; gaps && r < DISCOVER_PAD_GAP_WORDS / 2; r++) {
			const uint64_t *g = xref_gap(gaps, i, r);
			if (g[1] > g[0]) {
				mp->lo = g[0] < mp->lo ? g[0] : mp->lo;
				mp->hi = g[1] > mp->hi ? g[1] : mp->hi;
			}
		}
	}
	if (mp->hi <= mp->lo)
		return 1; /* no candidate: nothing to check */
	mp->bits = calloc((mp->hi - mp->lo + 7) / 8, 1);
	if (!mp->bits)
		return -ENOMEM;
	for (size_t i = 0; i < st->count; i++) {
		if (st->fns[i].status != ADA_HOOK_OK)
			continue;
		uint64_t a = base + st->fns[i].offset;
		xref_map_set(mp, a + 1, a + plans[i].patch_len);
		for (size_t r = 0; gaps && r < DISCOVER_PAD_GAP_WORDS / 2; r++) {
			const uint64_t *g = xref_gap(gaps, i, r);
			if (g[1] > g[0])
				xref_map_set(mp, g[0], g[1]);
		}
	}
	return 0;
}

/* Could any byte of [code, code+size) (at address addr) start a direct
 * branch into a patch? Reads every position as if it began a direct
 * relative branch (hook_arch_branch_at): a superset of the real
 * instructions (like the arch layer's pre-check), so "no" is a proof and
 * "yes" needs a decode. A branch whose first byte is code[p] leaves the
 * function for a patch of mp: */
static bool xref_hit_at(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t p,
                        const struct xref_map *mp)
{
	uint64_t t;
	return hook_arch_branch_at(code, addr, size, p, &t) && (t < addr || t >= addr + size) &&
	       xref_map_hit(mp, t);
}

static bool xref_suspect(const uint8_t *code, uint64_t addr, uint64_t size,
                         const struct xref_map *mp)
{
	uint64_t p = 0;
	/* Most bytes start no branch: 16 positions at a time are rejected
	 * together (hook_arch_branch_xref16 flags exactly the first bytes
	 * hook_arch_branch_at accepts; it reads the byte after the 16,
	 * hence size >= 17). A rel8 at position k lands in [k - 126, k +
	 * 129]: inside the function when k >= 126 and k + 130 <= size, so
	 * there hook_arch_branch_rel32_16 leaves it out. */
	for (; size >= 17 && p <= size - 17; p += 16)
		for (unsigned m = p >= 126 && p + 145 <= size ? hook_arch_branch_rel32_16(code + p)
		                                              : hook_arch_branch_xref16(code + p);
		     m; m &= m - 1)
			if (xref_hit_at(code, addr, size, p + (unsigned)__builtin_ctz(m), mp))
				return true;
	for (; p < size; p++)
		if (xref_hit_at(code, addr, size, p, mp))
			return true;
	return false;
}

static bool xref_scannable(const struct ada_hook_fn *f)
{
	return f->status != ADA_SKIP_ALIAS && f->status != ADA_SKIP_OUTSIDE_TEXT && f->size != 0;
}

/* Functions per share of the exact pass: each share collects its
 * targets into its own list, so shares may run on different threads. */
#define XREF_GRAIN 64

struct xref_pass {
	uint64_t base;
	const struct ada_hook_symtab *st;
	const struct xref_map *mp;
	struct xref_targets *t; /* one per share */
	int *err;               /* one per share */
};

/* Exact pass over the shares [lo, hi): decode the suspect functions,
 * collect their real targets. */
static void xref_decode_shares(void *arg, size_t lo, size_t hi)
{
	const struct xref_pass *x = arg;
	for (size_t k = lo; k < hi; k++) {
		size_t end =
		    (k + 1) * XREF_GRAIN < x->st->count ? (k + 1) * XREF_GRAIN : x->st->count;
		for (size_t i = k * XREF_GRAIN; !x->err[k] && i < end; i++) {
			const struct ada_hook_fn *f = &x->st->fns[i];
			const uint8_t *code = (const uint8_t *)(uintptr_t)(x->base + f->offset);
			if (xref_scannable(f) &&
			    xref_suspect(code, x->base + f->offset, f->size, x->mp))
				x->err[k] =
				    xref_sweep(code, x->base + f->offset, f->size, &x->t[k]);
		}
	}
}

/* Every share's targets in one list (the first error, if any). */
static int xref_decode_suspects(uint64_t base, const struct ada_hook_symtab *st,
                                const struct xref_map *mp, struct xref_targets *t,
                                discover_runner run)
{
	size_t ns = (st->count + XREF_GRAIN - 1) / XREF_GRAIN;
	struct xref_pass x = {base, st, mp, calloc(ns ? ns : 1, sizeof(*x.t)),
	                      calloc(ns ? ns : 1, sizeof(*x.err))};
	int err = x.t && x.err ? 0 : -ENOMEM;
	if (!err && run)
		run(xref_decode_shares, &x, ns, 1);
	else if (!err)
		xref_decode_shares(&x, 0, ns);
	for (size_t k = 0; x.t && x.err && k < ns; k++) {
		err = err ? err : x.err[k];
		for (size_t i = 0; !err && i < x.t[k].n; i++)
			err = xref_push(t, x.t[k].v[i]);
		free(x.t[k].v);
	}
	free(x.t);
	free(x.err);
	return err;
}

/* Does a branch land in one of function i's padding ranges? */
static bool xref_gap_hit(const struct xref_targets *t, const uint64_t *gaps, size_t i)
{
	for (size_t r = 0; r < DISCOVER_PAD_GAP_WORDS / 2; r++) {
		const uint64_t *g = xref_gap(gaps, i, r);
		if (g[1] > g[0] && xref_hits(t, g[0] - 1, g[1]))
			return true;
	}
	return false;
}

int discover_xref_check(uint64_t base, struct ada_hook_symtab *st,
                        const struct hook_arch_plan *plans, discover_runner run)
{
	/* Without gaps no plan is changed. */
	return discover_xref_check_pad(base, st, (struct hook_arch_plan *)(uintptr_t)plans, NULL,
	                               NULL, run);
}

int discover_xref_check_pad(uint64_t base, struct ada_hook_symtab *st, struct hook_arch_plan *plans,
                            const uint64_t *gaps, const uint8_t *prior, discover_runner run)
{
	struct xref_map mp = {0};
	struct xref_targets t = {0};
	int err = xref_map_build(base, st, plans, gaps, &mp);
	if (err)
		return err > 0 ? 0 : err;
	err = xref_decode_suspects(base, st, &mp, &t, run);
	if (!err) {
		if (t.n) /* qsort(NULL, 0, ...) is undefined */
			qsort(t.v, t.n, sizeof(*t.v), xref_cmp);
		for (size_t i = 0; i < st->count; i++) {
			uint64_t a = base + st->fns[i].offset;
			if (st->fns[i].status != ADA_HOOK_OK)
				continue;
			if (xref_hits(&t, a, a + plans[i].patch_len)) {
				st->fns[i].status = ADA_SKIP_BRANCH_INTO_PATCH;
			} else if (gaps && xref_gap_hit(&t, gaps, i)) {
				/* a branch into the padding: it is no padding */
				st->fns[i].status = prior[i];
				plans[i].pad_addr = 0;
			}
		}
	}
	free(mp.bits);
	free(t.v);
	return err;
}
