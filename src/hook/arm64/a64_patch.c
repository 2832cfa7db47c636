/*
 * The arm64 patch: `b tramp` over the first instruction (one aligned
 * 32-bit store: atomic, and no other thread can be inside a 4-byte
 * patch), or for a trampoline beyond b's +-128 MiB the far form
 * `adrp x16, tramp; add x16, x16, :lo12:tramp; br x16` over three
 * (+-4 GiB; x16 is dead at a function's entry). Reading a patch back
 * and moving a stopped thread out of one (ada attach).
 *
 * Threads: any; no shared state. Portable C (built on every host).
 */
#include <errno.h>
#include <string.h>

#include "a64_internal.h"

static void patch_far(const struct hook_arch_plan *plan, uint64_t tramp, struct a64_writer *w)
{
	int64_t pages = (int64_t)((tramp >> 12) - (plan->fn_addr >> 12));
	uint32_t imm = (uint32_t)pages & 0x1fffffu;
	a64_put(w, 0x90000000u | (imm & 3u) << 29 | (imm >> 2) << 5 | A64_X16); /* adrp */
	a64_put(w, 0x91000000u | (uint32_t)(tramp & 0xfff) << 10 | A64_X16 << 5 | A64_X16);
	a64_br(w, A64_X16);
}

int a64_patch_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                    uint8_t out[HOOK_ARCH_MAX_PATCH])
{
	struct a64_writer w = {out, 0, plan->patch_len, plan->fn_addr, 1};

	if (plan->patch_len > HOOK_ARCH_MAX_PATCH || plan->pad_addr)
		return -ERANGE;
	memcpy(out, plan->original, plan->patch_len);
	if (plan->patch_len == 4) {
		a64_b(&w, tramp_addr);
	} else if (plan->patch_len == A64_FAR_PATCH_LEN &&
	           (int64_t)((tramp_addr & ~0xfffull) - (plan->fn_addr & ~0xfffull)) >=
	               -A64_ADRP_REACH &&
	           (int64_t)((tramp_addr & ~0xfffull) - (plan->fn_addr & ~0xfffull)) <
	               A64_ADRP_REACH) {
		patch_far(plan, tramp_addr, &w);
	} else {
		return -ERANGE;
	}
	return w.ok ? 0 : -ERANGE;
}

uint64_t a64_patch_target(const struct hook_arch_plan *plan, const uint8_t *patch)
{
	uint32_t w0 = a64_word(patch);
	struct hook_arch_insn in;

	if (plan->patch_len == 4 && (w0 & 0xfc000000u) == 0x14000000u) {
		a64_direct_branch(w0, plan->fn_addr, &in.target);
		return in.target;
	}
	if (plan->patch_len != A64_FAR_PATCH_LEN) /* patch holds patch_len bytes */
		return 0;
	uint32_t w1 = a64_word(patch + 4), w2 = a64_word(patch + 8);
	if ((w0 & 0x9f00001fu) != 0x90000000u + A64_X16 ||
	    (w1 & 0xffc003ffu) != (0x91000000u | A64_X16 << 5 | A64_X16) ||
	    w2 != (0xd61f0000u | A64_X16 << 5))
		return 0;
	if (a64_classify(w0, plan->fn_addr, &in) != A64_REFUSE_NONE)
		return 0;
	return in.target + ((w1 >> 10) & 0xfff);
}

/* As x86_64's (x86_emit.c): a thread stopped at displaced instruction
 * i > 0 resumes at its relocated form, once the trampoline's relocated
 * part is found to be what plan emits there. Only the far form has
 * such a pc: a 4-byte patch has nothing strictly inside it. */
uint64_t a64_moved_pc(const struct hook_arch_plan *plan, const uint8_t *tramp, uint64_t tramp_addr,
                      uint64_t pc)
{
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];
	size_t starts[HOOK_ARCH_MAX_INSNS], i = 1;

	if (pc <= plan->fn_addr || pc >= plan->fn_addr + plan->patch_len)
		return 0;
	while (i < plan->insn_count && plan->fn_addr + plan->insns[i].offset != pc)
		i++;
	if (i >= plan->insn_count)
		return 0;
	size_t n = a64_emit_trampoline(plan, buf, tramp_addr, 0, 0, tramp_addr, starts);
	if (n == 0 || memcmp(buf + starts[0], tramp + starts[0], n - starts[0]) != 0)
		return 0;
	return tramp_addr + starts[i];
}
