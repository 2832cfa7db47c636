/*
 * libFuzzer target for the hook layer's parsers: hook_arch_prepare() (+
 * emit of the trampoline it plans) over arbitrary function bytes,
 * hook_maps_parse() over arbitrary /proc/self/maps text, and the switch
 * reader's compact decoder (x86_sw_fast) against capstone, instruction by
 * instruction, with the whole analysis (hook_arch_prepare_mem, the input
 * as the memory its tables are read from) compared between the switch
 * reader on the compact decoder and on capstone alone. The first input byte selects the parser.
 * Invariants are checked with abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "hook_arch.h"
#include "hook_mem.h"
#include "x86_internal.h"

static void fuzz_prepare(const uint8_t *data, size_t size)
{
	struct hook_arch_plan plan;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE], patch[HOOK_ARCH_MAX_PATCH];
	const uint64_t fn = 0x7f0000400000ull;

	enum ada_hook_skip r = hook_arch_prepare(data, fn, size, &plan);
	if ((unsigned)r >= ADA_SKIP_REASON_COUNT)
		abort();
	if (r != ADA_HOOK_OK)
		return;
	if (plan.patch_len < 5 || plan.patch_len > HOOK_ARCH_MAX_PATCH || plan.patch_len > size ||
	    memcmp(plan.original, data, plan.patch_len))
		abort();
	/* near and far trampoline placements */
	hook_arch_emit_trampoline(&plan, buf, fn + 0x100000, 1, 0x1000, fn + 0x100000);
	hook_arch_emit_trampoline(&plan, buf, fn - 0x7ff00000, 1, 0x1000, fn - 0x7ff00000);
	/* the index lane's fast form, and attach's lookup of its relocated copy */
	size_t n = hook_arch_emit_trampoline_fast(&plan, buf, fn + 0x100000, 1, fn + 0x100000,
	                                          fn + 0x100000);
	if (n && plan.insn_count > 1 &&
	    hook_arch_moved_pc(&plan, buf, fn + 0x100000, fn + plan.insns[1].offset) == 0)
		abort();
	hook_arch_patch_bytes(&plan, fn + 0x100000, patch);
	if (patch[0] != 0xe9)
		abort();
}

static int same_plan(const struct hook_arch_plan *a, const struct hook_arch_plan *b)
{
	if (a->patch_len != b->patch_len || a->insn_count != b->insn_count)
		return 0;
	for (size_t i = 0; i < a->insn_count; i++) {
		const struct hook_arch_insn *x = &a->insns[i], *y = &b->insns[i];
		if (x->offset != y->offset || x->len != y->len || x->kind != y->kind ||
		    x->disp_off != y->disp_off || x->cc != y->cc || x->reg != y->reg ||
		    x->target != y->target)
			return 0;
	}
	return 1;
}

static void fuzz_switch(const uint8_t *data, size_t size)
{
	static csh cs;
	static cs_insn *ci;
	const uint64_t fn = (uint64_t)(uintptr_t)data;

	if (!ci) {
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
			abort();
		cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
		ci = cs_malloc(cs);
		if (!ci)
			abort();
	}
	/* Wherever the compact decoder answers, capstone decodes the same. */
	for (size_t off = 0; off < size;) {
		struct x86_sw_insn f, c;
		const uint8_t *p = data + off;
		size_t left = size - off;
		uint64_t pc = fn + off;
		size_t n = x86_sw_fast(p, left, pc, &f);
		if (!cs_disasm_iter(cs, &p, &left, &pc, ci)) {
			if (n)
				abort(); /* decoded what capstone rejects */
			off++;
			continue;
		}
		if (n) {
			x86_sw_from_cs(&c, ci);
			if (n != ci->size || memcmp(&f, &c, sizeof(f)))
				abort();
		}
		off += ci->size;
	}
	/* The whole analysis, switch tables read from the input itself, with
	 * the switch reader on the compact decoder or on capstone alone (the
	 * other fast paths on in both: the length table may accept bytes
	 * capstone rejects, e.g. VEX forms without their mandatory prefix,
	 * which test_hook_len.c and test_hook_verdicts.c cover on real code). */
	struct hook_arch_region r = {fn, size, data};
	struct hook_arch_memview mem = {&r, 1};
	struct hook_arch_plan fast, slow;
	x86_use_sw_fast = 0;
	enum ada_hook_skip rs = hook_arch_prepare_mem(data, fn, size, &mem, &slow);
	x86_use_sw_fast = 1;
	enum ada_hook_skip rf = hook_arch_prepare_mem(data, fn, size, &mem, &fast);
	if (rs != rf || (rs == ADA_HOOK_OK && !same_plan(&fast, &slow)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hook_map maps[64];

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		int n = hook_maps_parse((const char *)data + 1, size - 1, maps, 64);
		if (n > 64)
			abort();
	} else if (data[0] & 2) {
		fuzz_switch(data + 1, size - 1);
	} else {
		fuzz_prepare(data + 1, size - 1);
	}
	return 0;
}
