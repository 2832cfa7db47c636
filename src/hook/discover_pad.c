/*
 * Padding slots for the padding form of a hook (not hook context).
 *
 * A function too short for the 5-byte patch, or with a branch into its
 * first 5 bytes, can still be hooked with a 2-byte jump at its entry to a
 * 5-byte jump to its trampoline written into the alignment padding next
 * to it (hook_arch_prepare_short() plans the entry; docs/hooks.md,
 * "The padding form"). This file proves a slot is padding nothing runs:
 *   - the gap holding it lies between two symbols, covered by none (the
 *     highest end of every symbol before it, to the next symbol's start),
 *     and every byte of the gap is a fill instruction (hook_arch_fill_len)
 *     decoded from its first byte to its last: no code hides there;
 *   - no FDE covers any byte of the gap (unwind information describes
 *     code; "cannot tell" counts as covered: an image without a table
 *     gets no slot);
 *   - nothing runs into the gap by falling off the function before it:
 *     that function ends in a jump, return or trap (hook_arch_ends_closed;
 *     hook_arch_prepare_short() checks the hooked function itself);
 *   - no direct branch of the image lands anywhere in the gap: the
 *     cross-function check (discover_xref.c) gets the gap and takes the
 *     slot back when one does.
 * Which slot a function gets depends only on the image (its bytes,
 * symbols and FDEs), never on which other functions are hooked, so a
 * cached verdict finds the same slot again. In order: the first 5 bytes
 * of the gap after it when its entry jump reaches them (it is the only
 * function ending there); the last 5 of the gap before it, behind what
 * the function before may claim (pad_front_claim: its own slot, unless it
 * cannot reach it or its own bytes take the 5-byte patch, pad_waived:
 * then its patch is guarded instead); padding inside the function
 * (pad_inner, hook_arch_inner_fill); a neighbour's gap (pad_borrow: every
 * function that could take those bytes is waived and guarded). A 1-byte
 * function (`ret`) takes the 5 bytes after the gap's first byte, which
 * its entry jump covers, or, when the padding after it runs up to code
 * without a symbol, the slot before it (pad_one_byte_run). A guard is a
 * range the cross-function check watches like the gap: a branch there
 * takes the slot back (discover_internal.h, DISCOVER_PAD_GAP_WORDS).
 * discover_pad_why() tells ada diagnose which step failed.
 *
 * Threads: the init thread or a dlopen rescan, under agent.lock.
 */
#include <errno.h>
#include <stdlib.h>

#include "discover_internal.h"
#include "hook_arch.h"

/* Longest gap read: alignment padding is at most 63 bytes (.p2align 6);
 * a longer stretch of fill is not taken for padding. */
#define PAD_GAP_MAX 256

static uint64_t pad_end(const struct ada_hook_fn *f)
{
	return f->offset + (f->size ? f->size : 1);
}

uint64_t *discover_pad_ends(const struct ada_hook_symtab *st)
{
	uint64_t *pm = malloc((st->count ? st->count : 1) * sizeof(*pm));
	for (size_t i = 0; pm && i < st->count; i++) {
		uint64_t e = pad_end(&st->fns[i]);
		pm[i] = i && pm[i - 1] > e ? pm[i - 1] : e;
	}
	return pm;
}

/* How many functions start before off (sorted by offset). */
static size_t pad_before(const struct ada_hook_symtab *st, uint64_t off)
{
	size_t a = 0, b = st->count;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (st->fns[mid].offset < off)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* The executable range holding [lo, hi) (offsets), or NULL. */
static const struct ada_hook_xrange *pad_xrange(const struct ada_hook_symtab *st, uint64_t lo,
                                                uint64_t hi)
{
	for (size_t k = 0; k < st->xr_count; k++)
		if (lo >= st->xr[k].lo && hi <= st->xr[k].hi)
			return &st->xr[k];
	return NULL;
}

/* Is the gap [lo, hi) (offsets) padding: in an executable range, at most
 * PAD_GAP_MAX bytes, all fill, no FDE on any byte? */
static bool pad_gap_ok(uint64_t base, const struct ada_hook_symtab *st,
                       const struct discover_pad_view *v, uint64_t lo, uint64_t hi)
{
	if (hi <= lo || hi - lo > PAD_GAP_MAX || !pad_xrange(st, lo, hi))
		return false;
	const uint8_t *b = (const uint8_t *)(uintptr_t)(base + lo);
	if (hook_arch_fill_len(b, hi - lo) != hi - lo)
		return false;
	for (uint64_t a = lo; a < hi; a++)
		if (v->covered(v->arg, base + a))
			return false;
	return true;
}

/* The gap after function i, when i is the only function ending at its
 * end: [end, next symbol's start). */
static bool pad_gap_after(const struct ada_hook_symtab *st, const uint64_t *pm, size_t i,
                          uint64_t *lo, uint64_t *hi)
{
	const struct ada_hook_fn *f = &st->fns[i];
	uint64_t end = f->offset + f->size;
	size_t first = pad_before(st, f->offset); /* f's own group starts here */
	if (first > 0 && pm[first - 1] >= end)
		return false; /* an earlier function ends here too, or covers it */
	size_t k = pad_before(st, end);
	if (pm[k - 1] > end)
		return false; /* a function inside f runs past its end */
	const struct ada_hook_xrange *x = pad_xrange(st, end, end);
	if (!x)
		return false;
	*lo = end;
	*hi = k < st->count ? st->fns[k].offset : x->hi;
	return true;
}

/* A gap after a function that runs up to code without a symbol (a
 * stripped library's static functions): it ends where its fill does
 * when an FDE starts exactly there (unwind information marks code as
 * well as a symbol does; the fill before it is covered by none). */
static uint64_t pad_gap_to_fde(uint64_t base, const struct discover_pad_view *v, uint64_t lo,
                               uint64_t hi)
{
	uint64_t n = hi - lo < PAD_GAP_MAX ? hi - lo : PAD_GAP_MAX;
	uint64_t fill = hook_arch_fill_len((const uint8_t *)(uintptr_t)(base + lo), n);
	if (fill == 0 || fill >= hi - lo)
		return hi;
	uint64_t at = base + lo + fill;
	return v->covered(v->arg, at) && !v->covered(v->arg, at - 1) ? lo + fill : hi;
}

/* The gap before function i: [highest end before it, its start). */
static bool pad_gap_before(const struct ada_hook_symtab *st, const uint64_t *pm, size_t i,
                           uint64_t *lo, uint64_t *hi, size_t *prev)
{
	size_t first = pad_before(st, st->fns[i].offset);
	if (first == 0)
		return false;
	*lo = pm[first - 1];
	*hi = st->fns[i].offset;
	/* The function ending there that starts first (the outermost). */
	for (size_t j = 0; j < first; j++)
		if (pad_end(&st->fns[j]) == *lo) {
			*prev = j;
			return *lo < *hi;
		}
	return false;
}

static void pad_take(uint64_t base, struct hook_arch_plan *plan, uint64_t slot)
{
	plan->pad_addr = base + slot;
	const uint8_t *b = (const uint8_t *)(uintptr_t)plan->pad_addr;
	for (size_t k = 0; k < HOOK_ARCH_PAD_SLOT; k++)
		plan->pad_original[k] = b[k];
}

/* The bytes at the front of the gap [lo, ...) after function p that p's
 * own slot may take (the first 5, or the 5 after the first when p is a
 * 1-byte function): none when p's entry jump cannot reach them (p is
 * longer than the jump's reach). Whether p needs the slot is not asked:
 * the answer would depend on p's own verdict, and a slot must depend on
 * the image alone. */
static uint64_t pad_front_claim(const struct ada_hook_fn *p, uint64_t lo)
{
	uint64_t skip = p->size < HOOK_ARCH_PAD_ENTRY ? HOOK_ARCH_PAD_ENTRY - p->size : 0;
	if (lo + skip - (p->offset + HOOK_ARCH_PAD_ENTRY) > HOOK_ARCH_PAD_REACH_FWD)
		return 0;
	return skip + HOOK_ARCH_PAD_SLOT;
}

/* Whether p, which could claim the front of the gap after it, never
 * takes a slot there unless a branch lands in its patch: its own bytes
 * take the 5-byte patch (hook_arch_prepare_mem: a plan, and no branch of
 * p into it), so p has a padding form only if another function branches
 * into that patch. guard[0..1] is then that patch after its first byte
 * (runtime addresses), for the cross-function check: a branch there
 * takes the slot back. Asked only where the gap is too small for both. */
static bool pad_waived(uint64_t base, const struct ada_hook_fn *p, uint64_t *guard)
{
	uint64_t addr = base + p->offset;
	struct hook_arch_plan pp;
	if (p->size < 5 || hook_arch_prepare_mem((const uint8_t *)(uintptr_t)addr, addr, p->size,
	                                         NULL, &pp) != ADA_HOOK_OK)
		return false;
	guard[0] = addr + 1;
	guard[1] = addr + pp.patch_len;
	return true;
}

/* The slot inside function i itself (hook_arch_inner_fill: fill after an
 * instruction that does not go on, no branch of the function into it),
 * when no other function's bytes share its range: i starts inside no
 * other function and none but its aliases starts inside i. Only i may
 * take it. */
static bool pad_inner(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm, size_t i,
                      struct hook_arch_plan *plan, uint64_t *gap)
{
	const struct ada_hook_fn *f = &st->fns[i];
	size_t first = pad_before(st, f->offset), last = pad_before(st, f->offset + f->size);
	if (first > 0 && pm[first - 1] > f->offset)
		return false;
	for (size_t k = first; k < last; k++)
		if (st->fns[k].offset != f->offset)
			return false;
	uint64_t addr = base + f->offset, lo, hi;
	if (!hook_arch_inner_fill((const uint8_t *)(uintptr_t)addr, addr, f->size, plan->patch_len,
	                          HOOK_ARCH_PAD_ENTRY + HOOK_ARCH_PAD_REACH_FWD, HOOK_ARCH_PAD_SLOT,
	                          &lo, &hi))
		return false;
	pad_take(base, plan, f->offset + lo);
	gap[0] = addr + lo;
	gap[1] = addr + hi;
	return true;
}

/* The fill right after the 1-byte function i, for its entry jump's
 * second byte: [run[0], run[1]) (offsets), whole fill instructions that
 * end on a 16-byte boundary (alignment padding, as the linker leaves it
 * before a function) or at the next symbol, no FDE over any byte; i is
 * the only function ending there. The cross-function check gets the
 * run (a branch there takes the slot back). */
static bool pad_one_byte_run(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                             size_t i, const struct discover_pad_view *v, uint64_t *run)
{
	uint64_t lo, hi;
	if (!pad_gap_after(st, pm, i, &lo, &hi) || hi <= lo)
		return false;
	uint64_t n = hi - lo < 16 ? hi - lo : 16;
	n = hook_arch_fill_len((const uint8_t *)(uintptr_t)(base + lo), n);
	if (n == 0 || ((lo + n) % 16 != 0 && lo + n != hi))
		return false;
	for (uint64_t a = lo; a < lo + n; a++)
		if (v->covered(v->arg, base + a))
			return false;
	run[0] = lo;
	run[1] = lo + n;
	return true;
}

/* The slot in the gap before function i: its last 5 bytes, behind what
 * the function before may claim (pad_front_claim, unless pad_waived),
 * when that function cannot run on into the gap. */
static bool pad_before_slot(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                            size_t i, const struct discover_pad_view *v,
                            struct hook_arch_plan *plan, uint64_t *gap)
{
	uint64_t entry_end = st->fns[i].offset + HOOK_ARCH_PAD_ENTRY, lo, hi;
	size_t prev = 0;
	if (!pad_gap_before(st, pm, i, &lo, &hi, &prev) || hi - lo < HOOK_ARCH_PAD_SLOT ||
	    entry_end - (hi - HOOK_ARCH_PAD_SLOT) > HOOK_ARCH_PAD_REACH_BACK)
		return false;
	const struct ada_hook_fn *p = &st->fns[prev];
	const uint8_t *code = (const uint8_t *)(uintptr_t)(base + p->offset);
	/* else it may run on into the gap (__memmove_chk_* falls through its
	 * padding into __memmove_*) */
	if (!p->size || !hook_arch_ends_closed(code, base + p->offset, p->size))
		return false;
	uint64_t guard[2] = {0, 0};
	if (hi - lo < pad_front_claim(p, lo) + HOOK_ARCH_PAD_SLOT && !pad_waived(base, p, guard))
		return false;
	if (!pad_gap_ok(base, st, v, lo, hi))
		return false;
	pad_take(base, plan, hi - HOOK_ARCH_PAD_SLOT);
	gap[0] = base + lo;
	gap[1] = base + hi;
	gap[2] = guard[0];
	gap[3] = guard[1];
	return true;
}

/* The slot of function i by its own rules: the gaps next to it and its
 * own padding (no neighbour's). */
static bool pad_own_slot(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                         size_t i, const struct discover_pad_view *v, struct hook_arch_plan *plan,
                         uint64_t *gap)
{
	const struct ada_hook_fn *f = &st->fns[i];
	uint64_t entry_end = f->offset + HOOK_ARCH_PAD_ENTRY, lo, hi;
	plan->pad_addr = 0;
	for (size_t k = 0; k < DISCOVER_PAD_GAP_WORDS; k++)
		gap[k] = 0;
	if (f->size == 0)
		return false;
	/* A 1-byte function's entry jump takes the gap's first byte too:
	 * its slot follows that byte, and there is no other choice. */
	uint64_t skip = f->size < HOOK_ARCH_PAD_ENTRY ? HOOK_ARCH_PAD_ENTRY - f->size : 0;
	if (pad_gap_after(st, pm, i, &lo, &hi) && (hi = pad_gap_to_fde(base, v, lo, hi)) != 0 &&
	    hi - lo >= skip + HOOK_ARCH_PAD_SLOT &&
	    lo + skip - entry_end <= HOOK_ARCH_PAD_REACH_FWD && pad_gap_ok(base, st, v, lo, hi)) {
		pad_take(base, plan, lo + skip);
		for (uint64_t k = f->size; k < HOOK_ARCH_PAD_ENTRY; k++)
			plan->original[k] = *(const uint8_t *)(uintptr_t)(base + f->offset + k);
		gap[0] = base + lo;
		gap[1] = base + hi;
		return true;
	}
	if (!skip)
		return pad_before_slot(base, st, pm, i, v, plan, gap) ||
		       pad_inner(base, st, pm, i, plan, gap);
	/* A 1-byte `ret` whose padding after it runs up to code without a
	 * symbol (crtstuff's functions have no FDE): the padding's first
	 * byte is the entry jump's second, the slot comes from before. */
	uint64_t run[2];
	if (!pad_one_byte_run(base, st, pm, i, v, run) ||
	    !pad_before_slot(base, st, pm, i, v, plan, gap))
		return false;
	plan->original[1] = *(const uint8_t *)(uintptr_t)(base + run[0]);
	gap[4] = base + run[0];
	gap[5] = base + run[1];
	return true;
}

/* Functions whose entry jump may reach [slot, slot + 5): the range
 * [*a, *b) of st->fns. */
static void pad_reachers(const struct ada_hook_symtab *st, uint64_t slot, size_t *a, size_t *b)
{
	/* generous: a few more are judged, none is missed (a 1-byte
	 * function's slot lies one byte further) */
	uint64_t lo = slot > 2 * HOOK_ARCH_PAD_REACH_BACK ? slot - 2 * HOOK_ARCH_PAD_REACH_BACK : 0;
	*a = pad_before(st, lo);
	*b = pad_before(st, slot + HOOK_ARCH_PAD_SLOT + HOOK_ARCH_PAD_REACH_BACK);
}

/* Whether function h could take bytes of [slot, slot + 5) for itself,
 * judged from the image alone: its own slot lies there, or it has none of
 * its own and, starting before i and reaching the slot, would borrow
 * first. */
static bool pad_competes(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                         size_t h, size_t i, const struct discover_pad_view *v, uint64_t slot)
{
	const struct ada_hook_fn *g = &st->fns[h];
	uint64_t addr = base + g->offset, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan hp;
	if (g->size == 0 || hook_arch_prepare_short((const uint8_t *)(uintptr_t)addr, addr, g->size,
	                                            NULL, &hp) != ADA_HOOK_OK)
		return false; /* no padding form for it at all */
	if (pad_own_slot(base, st, pm, h, v, &hp, gap))
		return hp.pad_addr < base + slot + HOOK_ARCH_PAD_SLOT &&
		       hp.pad_addr + HOOK_ARCH_PAD_SLOT > base + slot;
	uint64_t e = g->offset + HOOK_ARCH_PAD_ENTRY; /* its entry jump must reach it */
	return g->offset < st->fns[i].offset && slot + HOOK_ARCH_PAD_REACH_BACK >= e &&
	       slot <= e + HOOK_ARCH_PAD_REACH_FWD;
}

/* Can function i take the last 5 bytes of the gap [lo, hi) between two
 * other functions? Every function that could take them for itself
 * (pad_competes) must be one that never needs a slot unless a branch
 * lands in its patch (pad_waived): those patches are guarded, from
 * gap[2] on. */
static bool pad_borrow_ok(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                          size_t i, const struct discover_pad_view *v, uint64_t slot, uint64_t *gap)
{
	size_t a, b, ng = 1;
	pad_reachers(st, slot, &a, &b);
	for (size_t h = a; h < b; h++) {
		const struct ada_hook_fn *g = &st->fns[h];
		if (g->offset == st->fns[i].offset ||
		    (h > a && g->offset == st->fns[h - 1].offset) || g->status == ADA_SKIP_ALIAS ||
		    !pad_competes(base, st, pm, h, i, v, slot))
			continue;
		if (ng == DISCOVER_PAD_GAP_WORDS / 2 || !pad_waived(base, g, gap + 2 * ng))
			return false;
		ng++;
	}
	return true;
}

/* Gaps a function may borrow from, looked at per function: a reach of
 * 255 bytes holds a handful. */
#define PAD_BORROW_MAX 16

/* Distance of a slot from the entry jump's end. */
static uint64_t pad_dist(uint64_t slot, uint64_t entry_end)
{
	return slot > entry_end ? slot - entry_end : entry_end - slot;
}

/* The gaps between two other functions within the entry jump's reach
 * that are padding (the rules above; the function before ends in a jump,
 * return or trap; not a 1-byte function's first byte), as [lo, hi)
 * pairs, nearest slot first (then lower address). Returns how many. */
static size_t pad_borrow_gaps(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                              size_t i, const struct discover_pad_view *v, uint64_t (*g)[2])
{
	const struct ada_hook_fn *f = &st->fns[i];
	uint64_t entry_end = f->offset + HOOK_ARCH_PAD_ENTRY;
	/* the gaps after the functions that start within reach back, up to
	 * the end of the reach forward */
	size_t a = pad_before(st, entry_end > 2 * HOOK_ARCH_PAD_REACH_BACK
	                              ? entry_end - 2 * HOOK_ARCH_PAD_REACH_BACK
	                              : 0),
	       b = pad_before(st, entry_end + HOOK_ARCH_PAD_REACH_FWD), n = 0;
	for (size_t k = a; k < b && n < PAD_BORROW_MAX; k++) {
		const struct ada_hook_fn *p = &st->fns[k];
		uint64_t lo, hi;
		if (k == i || pad_end(p) == f->offset || !p->size ||
		    !pad_gap_after(st, pm, k, &lo, &hi) || hi == f->offset ||
		    (hi = pad_gap_to_fde(base, v, lo, hi)) - lo < HOOK_ARCH_PAD_SLOT)
			continue;
		uint64_t slot = hi - HOOK_ARCH_PAD_SLOT;
		/* a 1-byte function's entry jump takes the gap's first byte */
		if ((p->size < HOOK_ARCH_PAD_ENTRY && slot == lo) ||
		    slot + HOOK_ARCH_PAD_REACH_BACK < entry_end ||
		    slot > entry_end + HOOK_ARCH_PAD_REACH_FWD ||
		    !pad_gap_ok(base, st, v, lo, hi) ||
		    !hook_arch_ends_closed((const uint8_t *)(uintptr_t)(base + p->offset),
		                           base + p->offset, p->size))
			continue;
		size_t at = n++; /* insertion, nearest first: n is small */
		while (at > 0 && pad_dist(g[at - 1][1] - HOOK_ARCH_PAD_SLOT, entry_end) >
		                     pad_dist(slot, entry_end)) {
			g[at][0] = g[at - 1][0];
			g[at][1] = g[at - 1][1];
			at--;
		}
		g[at][0] = lo;
		g[at][1] = hi;
	}
	return n;
}

/* A neighbour's padding: the last 5 bytes of a gap between two other
 * functions within the entry jump's reach (pad_borrow_gaps: the nearest
 * first) that the functions around it and every other that could take
 * those bytes leave (pad_borrow_ok). */
static bool pad_borrow(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                       size_t i, const struct discover_pad_view *v, struct hook_arch_plan *plan,
                       uint64_t *gap)
{
	uint64_t g[PAD_BORROW_MAX][2];
	size_t n = pad_borrow_gaps(base, st, pm, i, v, g);
	for (size_t k = 0; k < n; k++) {
		uint64_t slot = g[k][1] - HOOK_ARCH_PAD_SLOT;
		for (size_t w = 0; w < DISCOVER_PAD_GAP_WORDS; w++)
			gap[w] = 0;
		if (!pad_borrow_ok(base, st, pm, i, v, slot, gap))
			continue;
		pad_take(base, plan, slot);
		gap[0] = base + g[k][0];
		gap[1] = base + g[k][1];
		return true;
	}
	for (size_t w = 0; w < DISCOVER_PAD_GAP_WORDS; w++)
		gap[w] = 0;
	return false;
}

bool discover_pad_slot(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                       size_t i, const struct discover_pad_view *v, struct hook_arch_plan *plan,
                       uint64_t *gap)
{
	const struct ada_hook_fn *f = &st->fns[i];
	if (pad_own_slot(base, st, pm, i, v, plan, gap))
		return true;
	return f->size >= HOOK_ARCH_PAD_ENTRY && pad_borrow(base, st, pm, i, v, plan, gap);
}

/* Whether some stretch of at least 5 fill bytes starts within the entry
 * jump's reach of function i (any byte position: a superset, so "no" is
 * sure), in its executable range. */
static bool pad_fill_near(uint64_t base, const struct ada_hook_symtab *st, size_t i)
{
	const struct ada_hook_fn *f = &st->fns[i];
	uint64_t e = f->offset + HOOK_ARCH_PAD_ENTRY;
	uint64_t lo = e > HOOK_ARCH_PAD_REACH_BACK ? e - HOOK_ARCH_PAD_REACH_BACK : 0;
	for (size_t k = 0; k < st->xr_count; k++) {
		const struct ada_hook_xrange *x = &st->xr[k];
		for (uint64_t a = lo > x->lo ? lo : x->lo;
		     a <= e + HOOK_ARCH_PAD_REACH_FWD && a + HOOK_ARCH_PAD_SLOT <= x->hi; a++)
			if (hook_arch_fill_len((const uint8_t *)(uintptr_t)(base + a),
			                       x->hi - a < 16 ? x->hi - a : 16) >=
			    HOOK_ARCH_PAD_SLOT)
				return true;
	}
	return false;
}

/* The cross-function check of function i's slot alone: every other
 * function is swept but none is a candidate. */
static unsigned pad_why_xref(uint64_t base, const struct ada_hook_symtab *st, size_t i,
                             const struct hook_arch_plan *plan, const uint64_t *gap)
{
	size_t n = st->count;
	struct ada_hook_fn *fns = malloc(n * sizeof(*fns));
	struct hook_arch_plan *plans = calloc(n, sizeof(*plans));
	uint64_t *gaps = calloc(DISCOVER_PAD_GAP_WORDS * n, sizeof(*gaps));
	uint8_t *prior = calloc(n, 1);
	unsigned why = ADA_PAD_WHY_UNKNOWN;
	if (fns && plans && gaps && prior) {
		struct ada_hook_symtab one = *st;
		one.fns = fns;
		for (size_t k = 0; k < n; k++) {
			fns[k] = st->fns[k];
			if (fns[k].status != ADA_SKIP_ALIAS &&
			    fns[k].status != ADA_SKIP_OUTSIDE_TEXT)
				fns[k].status = ADA_SKIP_EXCLUDED; /* swept, not checked */
		}
		fns[i].status = ADA_HOOK_OK;
		plans[i] = *plan;
		for (size_t k = 0; k < DISCOVER_PAD_GAP_WORDS; k++)
			gaps[DISCOVER_PAD_GAP_WORDS * i + k] = gap[k];
		prior[i] = ADA_SKIP_TOO_SHORT;
		if (discover_xref_check_pad(base, &one, plans, gaps, prior, NULL) == 0)
			why = fns[i].status == ADA_SKIP_BRANCH_INTO_PATCH ? ADA_PAD_WHY_OFFSET1
			      : fns[i].status == ADA_SKIP_TOO_SHORT       ? ADA_PAD_WHY_BRANCHED
			                                                  : ADA_PAD_WHY_UNKNOWN;
	}
	free(fns);
	free(plans);
	free(gaps);
	free(prior);
	return why;
}

static bool pad_fde_covered(void *arg, uint64_t addr);

unsigned discover_pad_why(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                          size_t i, const struct discover_fde_table *fdes)
{
	/* discover_fde_covers() only reads the table */
	struct discover_pad_view view = {pad_fde_covered, (void *)(uintptr_t)fdes}, *v = &view;
	const struct ada_hook_fn *f = &st->fns[i];
	uint64_t addr = base + f->offset, gap[DISCOVER_PAD_GAP_WORDS];
	if (f->size == 0)
		return ADA_PAD_WHY_NO_SIZE;
	struct hook_arch_plan plan;
	const uint8_t *code = (const uint8_t *)(uintptr_t)addr;
	enum ada_hook_skip r = hook_arch_prepare_short(code, addr, f->size, NULL, &plan);
	if (r == ADA_SKIP_BRANCH_INTO_PATCH)
		return ADA_PAD_WHY_OFFSET1;
	if (r != ADA_HOOK_OK && !hook_arch_ends_closed(code, addr, f->size))
		return f->size == 1 ? ADA_PAD_WHY_ONE_BYTE : ADA_PAD_WHY_OPEN_END;
	if (r != ADA_HOOK_OK)
		return ADA_PAD_WHY_ENTRY;
	if (!fdes)
		return ADA_PAD_WHY_NO_FDE;
	if (discover_pad_slot(base, st, pm, i, v, &plan, gap))
		return pad_why_xref(base, st, i, &plan, gap);
	uint64_t lo, hi, guard[2];
	size_t prev;
	if (f->size >= HOOK_ARCH_PAD_ENTRY && pad_gap_before(st, pm, i, &lo, &hi, &prev) &&
	    hi - lo >= HOOK_ARCH_PAD_SLOT && pad_gap_ok(base, st, v, lo, hi) &&
	    f->offset + HOOK_ARCH_PAD_ENTRY - (hi - HOOK_ARCH_PAD_SLOT) <=
	        HOOK_ARCH_PAD_REACH_BACK &&
	    hi - lo < pad_front_claim(&st->fns[prev], lo) + HOOK_ARCH_PAD_SLOT &&
	    !pad_waived(base, &st->fns[prev], guard))
		return ADA_PAD_WHY_CLAIMED;
	return pad_fill_near(base, st, i) ? ADA_PAD_WHY_NOT_FREE : ADA_PAD_WHY_NO_FILL;
}

static bool pad_fde_covered(void *arg, uint64_t addr)
{
	return discover_fde_covers(arg, addr);
}

/* discover_pad_module() over the functions only[i] != 0 selects (NULL:
 * every one); prior[] is written for those. */
static size_t pad_module_some(uint64_t base, struct ada_hook_symtab *st,
                              const struct discover_fde_table *fdes, struct hook_arch_plan *plans,
                              uint64_t *gaps, uint8_t *prior, const uint8_t *only)
{
	size_t n = 0;
	for (size_t i = 0; i < st->count; i++)
		if (!only || only[i])
			prior[i] = st->fns[i].status;
	uint64_t *pm = fdes ? discover_pad_ends(st) : NULL;
	/* discover_fde_covers() only reads the table */
	struct discover_pad_view v = {pad_fde_covered, (void *)(uintptr_t)fdes};
	for (size_t i = 0; pm && i < st->count; i++) {
		struct ada_hook_fn *f = &st->fns[i];
		if ((only && !only[i]) ||
		    (f->status != ADA_SKIP_TOO_SHORT && f->status != ADA_SKIP_BRANCH_INTO_PATCH))
			continue;
		uint64_t addr = base + f->offset;
		struct hook_arch_plan plan;
		if (hook_arch_prepare_short((const uint8_t *)(uintptr_t)addr, addr, f->size, NULL,
		                            &plan) != ADA_HOOK_OK ||
		    !discover_pad_slot(base, st, pm, i, &v, &plan,
		                       &gaps[DISCOVER_PAD_GAP_WORDS * i]))
			continue;
		plans[i] = plan;
		f->status = ADA_HOOK_OK;
		n++;
	}
	free(pm);
	return n;
}

size_t discover_pad_module(uint64_t base, struct ada_hook_symtab *st,
                           const struct discover_fde_table *fdes, struct hook_arch_plan *plans,
                           uint64_t *gaps, uint8_t *prior)
{
	return pad_module_some(base, st, fdes, plans, gaps, prior, NULL);
}

int discover_pad_and_xref(uint64_t base, struct ada_hook_symtab *st,
                          const struct discover_fde_table *fdes, struct hook_arch_plan *plans,
                          discover_runner run)
{
	size_t n = st->count ? st->count : 1;
	uint64_t *gaps = calloc(DISCOVER_PAD_GAP_WORDS * n, sizeof(*gaps));
	uint8_t *prior = malloc(n), *retry = calloc(n, 1);
	int err = gaps && prior && retry ? 0 : -ENOMEM;
	if (!err)
		pad_module_some(base, st, fdes, plans, gaps, prior, NULL);
	/* What the check finds: a function it marks branch_into_patch had
	 * an ordinary plan (OK, no slot) before it. */
	for (size_t i = 0; !err && i < st->count; i++)
		retry[i] = st->fns[i].status == ADA_HOOK_OK && !plans[i].pad_addr;
	if (!err)
		err = discover_xref_check_pad(base, st, plans, gaps, prior, run);
	size_t again = 0;
	for (size_t i = 0; !err && i < st->count; i++)
		retry[i] = retry[i] && st->fns[i].status == ADA_SKIP_BRANCH_INTO_PATCH;
	/* Another function branches into its 5-byte patch (glibc's
	 * __mempcpy_* into __memmove_*+3): a shorter patch may end where
	 * the branch lands. The check runs again with the new patches and
	 * gaps; what it found before it finds again (the same targets). */
	if (!err && fdes)
		again = pad_module_some(base, st, fdes, plans, gaps, prior, retry);
	if (!err && again)
		err = discover_xref_check_pad(base, st, plans, gaps, prior, run);
	free(gaps);
	free(prior);
	free(retry);
	return err;
}
