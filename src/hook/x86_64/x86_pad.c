/*
 * Padding inside a function for the padding form (hook_arch_inner_fill;
 * docs/hooks.md, "The padding form"). Not hook context: the init thread
 * or a dlopen rescan, under agent.lock, and ada diagnose --functions.
 */
#include <stdbool.h>
#include <stdint.h>

#include "x86_internal.h"

/* Stretches of fill looked at per function: the first few within the
 * entry jump's reach are enough (a function has a handful). */
#define INNER_MAX 8

struct inner_run {
	uint64_t lo, hi;
	bool hit; /* a branch of the function lands in it */
};

/* An indirect jmp (FF /4, FF /5) after legacy and REX prefixes. */
static bool inner_is_indirect_jmp(const uint8_t *p, size_t n)
{
	size_t k = 0;
	while (k < n && (p[k] == 0x66 || p[k] == 0x67 || p[k] == 0xf2 || p[k] == 0xf3 ||
	                 p[k] == 0x2e || p[k] == 0x3e || (p[k] & 0xf0) == 0x40))
		k++;
	return k + 1 < n && p[k] == 0xff &&
	       (((p[k + 1] >> 3) & 7) == 4 || ((p[k + 1] >> 3) & 7) == 5);
}

/* First pass: the stretches of at least min fill bytes after a
 * flow-ending instruction that start in [from, to], in order (at most INNER_MAX). False when the
 * body does not decode to its exact end or has an indirect jump. */
static bool inner_runs(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t from,
                       uint64_t to, size_t min, struct inner_run *r, size_t *nr)
{
	uint64_t off = 0;
	bool after_stop = false;
	*nr = 0;
	while (off < size) {
		uint64_t target;
		int has;
		size_t n = hook_arch_insn_len(code + off, size - off, addr + off, &target, &has);
		if (n == 0 || inner_is_indirect_jmp(code + off, n))
			return false;
		size_t fill = after_stop ? hook_arch_fill_len(code + off, size - off) : 0;
		if (fill >= min && off >= from && off <= to && *nr < INNER_MAX) {
			r[*nr] = (struct inner_run){off, off + fill, false};
			(*nr)++;
		}
		if (fill) {
			/* the decode goes on behind the stretch (whole fill
			 * instructions: it ends on an instruction boundary) */
			off += fill;
			after_stop = false;
			continue;
		}
		after_stop = x86_is_stop(code + off, n) != 0;
		off += n;
	}
	return off == size;
}

/* Second pass: marks every stretch one of the function's own direct
 * branches lands in. */
static void inner_mark_hits(const uint8_t *code, uint64_t addr, uint64_t size, struct inner_run *r,
                            size_t nr)
{
	uint64_t off = 0;
	while (off < size) {
		uint64_t target = 0;
		int has = 0;
		size_t n = hook_arch_insn_len(code + off, size - off, addr + off, &target, &has);
		if (n == 0)
			return; /* the first pass decoded it: cannot happen */
		for (size_t k = 0; has && k < nr; k++)
			if (target >= addr + r[k].lo && target < addr + r[k].hi)
				r[k].hit = true;
		off += n;
	}
}

bool hook_arch_inner_fill(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t from,
                          uint64_t to, size_t min, uint64_t *lo, uint64_t *hi)
{
	struct inner_run r[INNER_MAX];
	size_t nr = 0;
	if (min == 0 || !inner_runs(code, addr, size, from, to, min, r, &nr) || nr == 0)
		return false;
	inner_mark_hits(code, addr, size, r, nr);
	for (size_t k = 0; k < nr; k++)
		if (!r[k].hit) {
			*lo = r[k].lo;
			*hi = r[k].hi;
			return true;
		}
	return false;
}
