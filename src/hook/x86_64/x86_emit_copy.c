/*
 * x86_64 count blocks in the copy form (hook_arch_emit_count_block_copy
 * in hook_arch.h; docs/hooks.md, "Count-only functions"): the count
 * block's test and count, then a copy of the function's first bytes, up to
 * and including a `ret` or `jmp` (or another instruction after which
 * execution never goes on), relocated for the block's address, so a call
 * whose path stays in those bytes returns (or tail-jumps) from the block:
 * no jump back behind the patch; the test's exit (x86_emit_count.c) after
 * it. Pure code generation into a caller-provided buffer, but for the
 * decode (x86_decode_span: a capstone handle's lock).
 *
 * Threads: any; not hook context.
 *
 * Rules, the relocator's (x86_reloc.c): each copied instruction is an
 * exact equivalent of the original (rip-relative operands keep their
 * target); no call is copied: its relocated form pushes the original
 * return address and jumps, which the return-stack buffer does not see,
 * so the callee's `ret` and every `ret` above it would be mispredicted
 * (python's second run took 25 % more CPU with calls copied); a jmp or jcc whose target is an
 * instruction start of the copied range goes to that instruction's copy,
 * any other to the original address (the function's body stays intact,
 * so that is where the original would go; its entry is the patch: a jump
 * back to it counts again, as the original does). A target strictly inside
 * the patch that is not an instruction the copy has makes no copy form. The
 * copied range is a prefix of the function's own bytes (the caller bounds
 * it before the next symbol: no other function's entry, hence no other
 * patch, lies in it) and the decode starts from the patch's original
 * bytes, so it reads no patch.
 */
#include <string.h>

#include "x86_emit_internal.h"

_Static_assert(HOOK_ARCH_COUNT_COPY_MAX <= HOOK_ARCH_COUNT_INLINE_MAX,
               "a copy block fits the room of an inline one");

#define COPY_INSNS HOOK_ARCH_COUNT_COPY_INSNS

/* The function's first bytes as decoded. */
struct copy_src {
	uint64_t fn;
	size_t patch_len, n;
	uint8_t bytes[HOOK_ARCH_COUNT_COPY_SPAN];
	struct hook_arch_insn in[COPY_INSNS];
};

static bool copy_is_call(const struct hook_arch_insn *in)
{
	return in->kind == X86_RELOC_CALL || in->kind == X86_RELOC_CALL_RIP ||
	       in->kind == X86_RELOC_CALL_IND;
}

/* The index of the decoded instruction that starts at offset off, or n. */
static size_t copy_find(const struct copy_src *s, size_t e, uint64_t off)
{
	for (size_t j = 0; j < e; j++)
		if (s->in[j].offset == off)
			return j;
	return s->n;
}

/* Instruction in of the copy of the first e at w's address. at: where
 * each copy starts (the second pass), NULL in the first, which aims
 * branches into the copy at base (the same rel32 forms). 0 or < 0. */
static int copy_one(struct x86_writer *w, const struct copy_src *s, size_t e,
                    const struct hook_arch_insn *in, const size_t *at, uint64_t base)
{
	const uint8_t *orig = s->bytes + in->offset;
	uint64_t end = s->in[e - 1].offset + s->in[e - 1].len;
	if ((in->kind != X86_RELOC_JMP && in->kind != X86_RELOC_JCC) || in->target <= s->fn ||
	    in->target >= s->fn + end)
		return x86_emit_reloc(w, orig, s->fn, in);
	size_t j = copy_find(s, e, in->target - s->fn);
	if (j == s->n) /* not an instruction of the copy: the original's */
		return in->target < s->fn + s->patch_len ? -1 : x86_emit_reloc(w, orig, s->fn, in);
	struct hook_arch_insn r = *in;
	r.target = at ? base + at[j] : base;
	return x86_emit_reloc(w, orig, s->fn, &r);
}

/* The crash handler's map of the copy: every copied instruction (the
 * last one ends the flow: nothing behind it is the function's; behind
 * the copy lies the test's exit, where nothing of the function ran). */
static void copy_map(const struct copy_src *s, size_t e, const size_t *at,
                     struct hook_arch_copy_map *map)
{
	map->n = (uint8_t)e;
	for (size_t i = 0; i < e; i++) {
		map->off[i] = (uint8_t)s->in[i].offset;
		map->at[i] = (uint8_t)at[i];
	}
}

/* The block with the first e instructions copied, in two passes (the
 * first finds where each copy starts, the second aims the branches
 * inside the copy); its length, or 0 when it does not fit. */
static size_t copy_emit(const struct copy_src *s, size_t e, uint8_t *buf, uint64_t buf_addr,
                        int32_t gate, int32_t counters, uint32_t slot, uint64_t tramp,
                        struct hook_arch_copy_map *map)
{
	size_t starts[COPY_INSNS + 1], first[COPY_INSNS + 1], len = 0;
	uint8_t scratch[HOOK_ARCH_COUNT_COPY_MAX];
	for (int pass = 0; pass < 2; pass++) {
		struct x86_writer w = {pass ? buf : scratch, 0, HOOK_ARCH_COUNT_COPY_MAX, buf_addr,
		                       1};
		struct emit_count_fix fix;
		if (!emit_count_test(&w, gate, counters, slot, &fix))
			return 0;
		for (size_t i = 0; i < e; i++) {
			starts[i] = w.len;
			if ((pass && starts[i] != first[i]) ||
			    copy_one(&w, s, e, &s->in[i], pass ? first : NULL, buf_addr))
				return 0;
		}
		starts[e] = w.len;
		if (!emit_count_exit(&w, &fix, tramp) || (pass && starts[e] != first[e]))
			return 0;
		memcpy(first, starts, sizeof(starts));
		len = w.len;
	}
	copy_map(s, e, first, map);
	return len;
}

size_t hook_arch_emit_count_block_copy(const struct hook_arch_plan *plan, const uint8_t *code,
                                       size_t avail, uint8_t *buf, uint64_t buf_addr, int32_t gate,
                                       int32_t counters, uint32_t slot, uint64_t tramp,
                                       struct hook_arch_copy_map *map)
{
	struct copy_src s;
	if (!x86_emit_plan_ok(plan, buf_addr) || avail < plan->patch_len)
		return 0;
	size_t span = avail < sizeof(s.bytes) ? avail : sizeof(s.bytes);
	s.fn = plan->fn_addr;
	s.patch_len = plan->patch_len;
	memcpy(s.bytes, plan->original, plan->patch_len); /* code's may be the patch */
	memcpy(s.bytes + plan->patch_len, code + plan->patch_len, span - plan->patch_len);
	x86_decode_span(s.bytes, span, s.fn, s.in, COPY_INSNS, &s.n);
	for (size_t i = 0; i < s.n; i++)
		if (copy_is_call(&s.in[i]))
			s.n = i; /* the copy ends before it */
	/* The longest prefix that ends the flow and fits: the patch's whole
	 * instructions first (a decode that splits one is not the plan's). */
	if (copy_find(&s, s.n, plan->patch_len) == s.n &&
	    (s.n == 0 || s.in[s.n - 1].offset + s.in[s.n - 1].len != plan->patch_len))
		return 0;
	for (size_t e = s.n; e > 0; e--) {
		const struct hook_arch_insn *last = &s.in[e - 1];
		if (last->offset + last->len < plan->patch_len ||
		    !x86_is_stop(s.bytes + last->offset, last->len))
			continue;
		size_t len = copy_emit(&s, e, buf, buf_addr, gate, counters, slot, tramp, map);
		if (len)
			return len;
	}
	return 0;
}
