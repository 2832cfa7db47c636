/*
 * Count-only functions called directly (docs/hooks.md, "Count-only
 * functions", call sites): at the install, a `call rel32` in one of the
 * module's hooked functions whose target is a count-only function's
 * entry is re-aimed at that function's count block. A counted call from
 * there takes no jump but the call itself: the patch's `jmp` at the
 * entry is what a count costs in a program (a taken jump more a call; in
 * a loop of 2 048 distinct callees 4 ns a call, 0.28 ns with one; re-aimed
 * calls nothing measurable: docs/benchmarks.md). Every other call (through
 * a pointer, the PLT, another module, a site not re-aimed) still enters
 * by the patch and the same block, so each call is counted once either
 * way; the block's own test still sends a thread that does not count to
 * the trampoline (an event).
 *
 * Which calls: found by an exact decode (hook_arch_insn_len) of each
 * function the analysis prepared (ADA_HOOK_OK) that a byte scan flagged
 * (an E8 whose rel32 lands on a count-only entry); a function whose
 * decode fails or overruns its size is left alone. A site inside any
 * patch (an entry's displaced bytes, a padding slot) is left alone, and
 * so is one whose block is out of a rel32's reach. At a program's start
 * (one thread) every site may be re-aimed; later (a dlopen while other
 * threads run) only a site whose rel32 lies in one aligned 8-byte word
 * (hook_patch_apply writes it with one atomic store). Each re-aimed site
 * is one more patch, with its original bytes in undo.
 *
 * Threads: the install (the init thread or a dlopen rescan), under
 * agent.lock. x86_64 only (arm64: none).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"

#if defined(__x86_64__)
static int cs_callee_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct agent_callee *)a)->entry;
	uint64_t y = ((const struct agent_callee *)b)->entry;
	return x < y ? -1 : x > y;
}

/* The count block of the count-only entry at t, or 0. */
static uint64_t cs_block_of(const struct agent_callee *c, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c[mid].entry < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && c[lo].entry == t ? c[lo].block : 0;
}

/* A patched byte range (an entry's patch, a padding slot). */
struct cs_range {
	uint64_t lo, hi;
};

static int cs_range_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct cs_range *)a)->lo, y = ((const struct cs_range *)b)->lo;
	return x < y ? -1 : x > y;
}

/* Whether [lo, hi) meets one of the n sorted, disjoint ranges. */
static bool cs_patched(const struct cs_range *r, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;
	while (a < b) { /* the first range ending after lo */
		size_t mid = (a + b) / 2;
		if (r[mid].hi <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && r[a].lo < hi;
}

/* Whether a byte scan of fn's code finds an E8 aimed at a count-only
 * entry (a superset of the calls: the exact decode follows). */
static bool cs_scan(const uint8_t *code, uint64_t addr, uint64_t size, const struct agent_callee *c,
                    size_t n)
{
	for (uint64_t k = 0; k + 5 <= size; k++) {
		int32_t rel;
		if (code[k] != 0xe8)
			continue;
		memcpy(&rel, code + k + 1, 4);
		if (cs_block_of(c, n, addr + k + 5 + (uint64_t)(int64_t)rel))
			return true;
	}
	return false;
}

struct cs_out {
	struct hook_patch *patch, *undo;
	size_t n, cap;
};

static bool cs_push(struct cs_out *o, uint64_t site, const uint8_t *orig, int32_t rel)
{
	if (o->n == o->cap) {
		size_t nc = o->cap ? 2 * o->cap : 64;
		struct hook_patch *p = realloc(o->patch, nc * sizeof(*p));
		if (!p)
			return false;
		o->patch = p;
		struct hook_patch *u = realloc(o->undo, nc * sizeof(*u));
		if (!u)
			return false;
		o->undo = u;
		o->cap = nc;
	}
	struct hook_patch *p = &o->patch[o->n], *u = &o->undo[o->n];
	memset(p, 0, sizeof(*p));
	memset(u, 0, sizeof(*u));
	p->addr = u->addr = site;
	p->len = u->len = 5;
	memcpy(u->bytes, orig, 5);
	p->bytes[0] = 0xe8;
	memcpy(p->bytes + 1, &rel, 4);
	o->n++;
	return true;
}

/* The re-aimable calls of one function (code at addr, size bytes):
 * pushed only when its whole decode succeeds. False: out of memory. */
static bool cs_function(const uint8_t *code, uint64_t addr, uint64_t size,
                        const struct agent_callee *c, size_t n, const struct cs_range *r, size_t nr,
                        bool any_word, struct cs_out *o)
{
	size_t first = o->n;
	uint64_t pc = 0;
	while (pc < size) {
		uint64_t target = 0;
		int has = 0;
		size_t len = hook_arch_insn_len(code + pc, size - pc, addr + pc, &target, &has);
		if (len == 0 || pc + len > size) {
			o->n = first; /* not decoded to its end: none of its sites */
			return true;
		}
		uint64_t site = addr + pc, block = 0;
		if (len == 5 && code[pc] == 0xe8 && has)
			block = cs_block_of(c, n, target);
		int64_t rel = (int64_t)(block - (site + 5));
		/* Later than the start-up, the four bytes that change must be
		 * one aligned word (one atomic store: hook_mem.h). */
		bool word = any_word || ((site + 1) & ~7ull) == ((site + 4) & ~7ull);
		if (block && word && rel == (int32_t)rel && !cs_patched(r, nr, site, site + 5) &&
		    !cs_push(o, site, code + pc, (int32_t)rel))
			return false;
		pc += len;
	}
	return true;
}

/* The patched ranges of m's patches and padding slots, sorted. */
static struct cs_range *cs_ranges(const struct hook_patch *patches, size_t np,
                                  const struct hook_patch *pads, size_t n_pad)
{
	struct cs_range *r = malloc((np + n_pad + 1) * sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < np; i++)
		r[i] = (struct cs_range){patches[i].addr, patches[i].addr + patches[i].len};
	for (size_t i = 0; i < n_pad; i++)
		r[np + i] = (struct cs_range){pads[i].addr, pads[i].addr + pads[i].len};
	qsort(r, np + n_pad, sizeof(*r), cs_range_cmp);
	return r;
}

int agent_callsites(const struct agent_module *m, struct agent_callee *callee, size_t n_callee,
                    const struct hook_patch *patches, size_t np, const struct hook_patch *pads,
                    size_t n_pad, bool any_word, struct hook_patch **out, struct hook_patch **undo,
                    size_t *n_out)
{
	*out = *undo = NULL;
	*n_out = 0;
	if (n_callee == 0)
		return 0;
	qsort(callee, n_callee, sizeof(*callee), cs_callee_cmp);
	struct cs_range *r = cs_ranges(patches, np, pads, n_pad);
	if (!r)
		return -ENOMEM;
	struct cs_out o = {0};
	bool ok = true;
	for (size_t i = 0; i < m->st.count && ok; i++) {
		const struct ada_hook_fn *f = &m->st.fns[i];
		uint64_t addr = m->base + f->offset;
		if (f->status != ADA_HOOK_OK || f->size < 5 || addr < m->lo ||
		    addr + f->size > m->hi)
			continue;
		const uint8_t *code = (const uint8_t *)(uintptr_t)addr;
		if (cs_scan(code, addr, f->size, callee, n_callee))
			ok = cs_function(code, addr, f->size, callee, n_callee, r, np + n_pad,
			                 any_word, &o);
	}
	free(r);
	if (!ok) {
		free(o.patch);
		free(o.undo);
		return -ENOMEM;
	}
	*out = o.patch;
	*undo = o.undo;
	*n_out = o.n;
	return 0;
}
#else
int agent_callsites(const struct agent_module *m, struct agent_callee *callee, size_t n_callee,
                    const struct hook_patch *patches, size_t np, const struct hook_patch *pads,
                    size_t n_pad, bool any_word, struct hook_patch **out, struct hook_patch **undo,
                    size_t *n_out)
{
	(void)m, (void)callee, (void)n_callee, (void)patches, (void)np, (void)pads, (void)n_pad;
	(void)any_word;
	*out = *undo = NULL;
	*n_out = 0;
	return 0;
}
#endif
