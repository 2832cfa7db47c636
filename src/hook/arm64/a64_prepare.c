/*
 * arm64 verdicts: can a function's entry be patched, and with which
 * instructions displaced. A64 instructions are 4 bytes and aligned, so
 * the ordinary patch (`b tramp`, one word) displaces exactly the first
 * instruction, and nothing can branch strictly inside it: no body sweep.
 * The far form (adrp/add/br x16, three words) sweeps the body for
 * branches and address computations into fn+4 and fn+8, as x86_64 does
 * for its 5 bytes.
 *
 * Verdicts (enum ada_hook_skip):
 *   ADA_SKIP_UNDECODABLE    entry not 4-byte aligned; a displaced word
 *                           that is udf (0x0000xxxx: data or a trap) or
 *                           an unallocated literal load
 *   ADA_SKIP_TOO_SHORT      fewer bytes than the patch
 *   ADA_SKIP_UNRELOCATABLE  blraa/blrab (the link they sign is the
 *                           trampoline's pc), a branch-group word of no
 *                           known form (a PC-relative one this layer
 *                           does not know: FEAT_CMPBR's cb<cc>), and in
 *                           the far form a bl/blr whose return lands
 *                           inside the patch
 *   ADA_SKIP_BRANCH_INTO_PATCH, ADA_SKIP_JUMP_TABLE  the far form only
 *
 * Threads: any; no shared state. Portable C (built on every host).
 */
#include <string.h>

#include "a64_internal.h"

static enum ada_hook_skip prepare_verdict(enum a64_refusal r)
{
	switch (r) {
	case A64_REFUSE_NONE:
		return ADA_HOOK_OK;
	case A64_REFUSE_UDF:
	case A64_REFUSE_UNALLOCATED:
		return ADA_SKIP_UNDECODABLE;
	default:
		return ADA_SKIP_UNRELOCATABLE;
	}
}

/* Classifies the first n words into plan (patch_len 4n). */
static enum ada_hook_skip prepare_words(const uint8_t *code, uint64_t addr, uint64_t size, size_t n,
                                        struct hook_arch_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->fn_addr = addr;
	if (addr & 3)
		return ADA_SKIP_UNDECODABLE;
	if (size < 4 * n)
		return ADA_SKIP_TOO_SHORT;
	for (size_t i = 0; i < n; i++) {
		struct hook_arch_insn *in = &plan->insns[i];
		enum ada_hook_skip v =
		    prepare_verdict(a64_classify(a64_word(code + 4 * i), addr + 4 * i, in));
		if (v != ADA_HOOK_OK)
			return v;
		in->offset = (uint8_t)(4 * i);
		in->len = 4;
	}
	plan->patch_len = 4 * n;
	plan->insn_count = n;
	memcpy(plan->original, code, 4 * n);
	return ADA_HOOK_OK;
}

enum ada_hook_skip a64_prepare(const uint8_t *code, uint64_t addr, uint64_t size,
                               struct hook_arch_plan *plan)
{
	return prepare_words(code, addr, size, 1, plan);
}

/* A word of the body that may reach fn+4 or fn+8 other than by falling
 * through: a direct branch or an adr/adrp there, or an indirect jump. */
static enum ada_hook_skip prepare_far_word(uint32_t w, uint64_t pc, uint64_t addr)
{
	struct hook_arch_insn in;
	uint64_t t;

	if (a64_is_indirect_jump(w))
		return ADA_SKIP_JUMP_TABLE;
	if (!a64_direct_branch(w, pc, &t)) {
		if (a64_classify(w, pc, &in) != A64_REFUSE_NONE || in.kind != A64_RELOC_ADR)
			return ADA_HOOK_OK;
		t = in.target;
	}
	return t > addr && t < addr + A64_FAR_PATCH_LEN ? ADA_SKIP_BRANCH_INTO_PATCH : ADA_HOOK_OK;
}

enum ada_hook_skip a64_prepare_far(const uint8_t *code, uint64_t addr, uint64_t size,
                                   struct hook_arch_plan *plan)
{
	enum ada_hook_skip v = prepare_words(code, addr, size, A64_FAR_PATCH_LEN / 4, plan);
	if (v != ADA_HOOK_OK)
		return v;
	for (size_t i = 0; i + 1 < plan->insn_count; i++) {
		uint8_t k = plan->insns[i].kind;
		if (k == A64_RELOC_BL || k == A64_RELOC_BLR)
			return ADA_SKIP_UNRELOCATABLE; /* would return into the patch */
	}
	for (uint64_t p = 0; p + 4 <= size; p += 4) {
		v = prepare_far_word(a64_word(code + p), addr + p, addr);
		if (v != ADA_HOOK_OK)
			return v;
	}
	return ADA_HOOK_OK;
}

bool a64_ends_closed(const uint8_t *code, uint64_t addr, uint64_t size)
{
	(void)addr;
	return size >= 4 && (size & 3) == 0 && a64_is_terminal(a64_word(code + size - 4));
}

size_t a64_fill_len(const uint8_t *code, size_t len)
{
	size_t n = 0;
	while (n + 4 <= len) {
		uint32_t w = a64_word(code + n);
		if (w != A64_NOP && w != 0)
			break;
		n += 4;
	}
	return n;
}
