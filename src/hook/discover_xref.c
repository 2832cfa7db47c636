/*
 * Cross-function branches into patched bytes (not hook context).
 *
 * hook_arch_prepare() proves that no branch *inside* a function lands in
 * the bytes its patch displaces. Hand-written assembly also jumps from one
 * function into another's first bytes (glibc: __mempcpy_*_erms ends with
 * `jmp __memmove_*_erms+3`); patching that target would make the jump land
 * in the middle of our `jmp rel32`. So the agent sweeps every function
 * body of a module once (capstone, no detail), collects the targets of
 * direct relative branches, and skips every candidate with a target
 * strictly inside its patch (ADA_SKIP_BRANCH_INTO_PATCH).
 *
 * Threads: the init thread or a dlopen rescan, under agent.lock.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "discover_internal.h"

struct xref_targets {
	uint64_t *v;
	size_t n, cap;
};

static int xref_push(struct xref_targets *t, uint64_t target)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 4096;
		uint64_t *nv = realloc(t->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = nc;
	}
	t->v[t->n++] = target;
	return 0;
}

/* The target of a direct relative branch, from its encoding: the
 * displacement is the instruction's last 1 or 4 bytes for every form
 * (jmp/jcc/call/loop/jrcxz, rel8 or rel32; prefixes come first). */
static bool xref_branch_target(const cs_insn *ci, uint64_t *target)
{
	const uint8_t *b = ci->bytes;
	size_t n = ci->size, op = 0;
	while (op < n && (b[op] == 0x66 || b[op] == 0x67 || b[op] == 0xf2 || b[op] == 0xf3 ||
			  b[op] == 0x2e || b[op] == 0x3e || (b[op] & 0xf0) == 0x40))
		op++; /* legacy, bnd, branch-hint and REX prefixes */
	if (op >= n)
		return false;
	uint64_t next = ci->address + n;
	uint8_t o = b[op];
	if ((o == 0xeb || (o >= 0x70 && o <= 0x7f) || (o >= 0xe0 && o <= 0xe3)) && op + 2 == n) {
		*target = next + (uint64_t)(int64_t)(int8_t)b[n - 1];
		return true;
	}
	bool rel32 = ((o == 0xe8 || o == 0xe9) && op + 5 == n) ||
		     (o == 0x0f && op + 6 == n && (b[op + 1] & 0xf0) == 0x80);
	if (!rel32)
		return false;
	int32_t d;
	memcpy(&d, b + n - 4, 4);
	*target = next + (uint64_t)(int64_t)d;
	return true;
}

static int xref_sweep(csh cs, cs_insn *ci, const uint8_t *code, uint64_t addr, uint64_t size,
		      struct xref_targets *t)
{
	const uint8_t *p = code;
	size_t left = size;
	uint64_t pc = addr;
	while (left > 0) {
		if (!cs_disasm_iter(cs, &p, &left, &pc, ci)) {
			p++; /* undecodable byte: resynchronise (the arch layer judges these) */
			left--;
			pc++;
			continue;
		}
		uint64_t target;
		if (xref_branch_target(ci, &target) && (target < addr || target >= addr + size)) {
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

int discover_xref_check(uint64_t base, struct ada_hook_symtab *st,
			const struct hook_arch_plan *plans)
{
	csh cs;
	struct xref_targets t = { 0 };
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_insn *ci = cs_malloc(cs);
	int err = ci ? 0 : -ENOMEM;
	for (size_t i = 0; !err && i < st->count; i++) {
		const struct ada_hook_fn *f = &st->fns[i];
		if (f->status == ADA_SKIP_ALIAS || f->status == ADA_SKIP_OUTSIDE_TEXT || f->size == 0)
			continue;
		err = xref_sweep(cs, ci, (const uint8_t *)(base + f->offset), base + f->offset,
				 f->size, &t);
	}
	if (!err) {
		qsort(t.v, t.n, sizeof(*t.v), xref_cmp);
		for (size_t i = 0; i < st->count; i++) {
			uint64_t a = base + st->fns[i].offset;
			if (st->fns[i].status == ADA_HOOK_OK && xref_hits(&t, a, a + plans[i].patch_len))
				st->fns[i].status = ADA_SKIP_BRANCH_INTO_PATCH;
		}
	}
	if (ci)
		cs_free(ci, 1);
	cs_close(&cs);
	free(t.v);
	return err;
}
