/*
 * arm64 count-only blocks (hook_arch_emit_count_block in hook_arch.h,
 * docs/hooks.md "Count-only functions"): the code a count-only
 * function's patch branches to instead of its trampoline. Pure code
 * generation into a caller-provided buffer.
 *
 * Threads: any; no shared state. Portable C (built on every host).
 *
 * Layout (gate and counters small TLS offsets, slot < 512: 16 words):
 *      mrs   x16, tpidr_el0
 *      ldr   w17, [x16, #gate]        ; this thread counts (agent_count.c)
 *      cmp   w17, #1
 *      b.ne  full                     ; no: the function's full trampoline
 *      ldr   x16, [x16, #counters]    ; the thread's own page of counters
 *      add   x16, x16, #8*slot
 *      str   x15, [sp, #-16]!         ; a third register for the status
 *   1: ldxr  x17, [x16]
 *      add   x17, x17, #1
 *      stxr  w15, x17, [x16]
 *      cbnz  w15, 1b
 *      ldr   x15, [sp], #16
 *      b     body                     ; the trampoline's relocated prologue
 * full: b    tramp
 * x16 and x17 are AAPCS64's call scratch, dead at a function's entry
 * (the trampolines and the relocated prologue use them too); x15 is
 * kept (gcc's -fipa-ra may keep a value in it across a call to a local
 * function), on the stack below sp, which stays 16-byte aligned. The
 * flags are the only other state it changes, which no caller keeps
 * across a call. A64 has no single read-modify-write of memory before
 * FEAT_LSE, so the add is an exclusive pair: a signal handler that
 * counts between the load and the store does its own exclusive store to
 * the same word, which leaves the monitor open (as may the exception
 * return itself), so the interrupted store fails and the loop takes the
 * count again, with the handler's counts in: exact, as x86_64's one
 * `add` (tested for the count itself, not for that interleaving,
 * which no test can place). Nobody else
 * writes the page. A TLS offset beyond the load's immediate, a slot
 * beyond add's 12 bits or a branch beyond b's reach (the budget's block
 * may lie up to twice the patch's reach from the trampoline) takes
 * x17 for the offset (a register-offset load or add) and mov x16 / br
 * x16 for the branch; HOOK_ARCH_COUNT_BLOCK_MAX covers every case.
 */
#include "a64_internal.h"

#define A64_X15 15u
#define A64_X17_W 17u /* w17: the gate's word */

/* ldr wt/xt, [xn, #off] when off fits the scaled 12-bit immediate, else
 * x17 = off; ldr wt/xt, [xn, x17]. */
static void count_ldr_off(struct a64_writer *w, bool x, unsigned rt, unsigned rn, int32_t off)
{
	unsigned scale = x ? 8 : 4;
	if (off >= 0 && (off % (int32_t)scale) == 0 && off / (int32_t)scale < 4096) {
		uint32_t op = x ? 0xf9400000u : 0xb9400000u; /* ldr (unsigned offset) */
		a64_put(w, op | (uint32_t)(off / (int32_t)scale) << 10 | rn << 5 | rt);
		return;
	}
	a64_mov_imm64(w, A64_X17, (uint64_t)(int64_t)off);
	a64_put(w, (x ? 0xf8606800u : 0xb8606800u) | A64_X17 << 16 | rn << 5 | rt); /* ldr, lsl 0 */
}

size_t a64_emit_count_block(uint8_t *buf, uint64_t buf_addr, int32_t gate, int32_t counters,
                            uint32_t slot, uint64_t tramp)
{
	struct a64_writer w = {buf, 0, A64_COUNT_BLOCK_MAX, buf_addr, 1};

	if (slot >= (1u << 28) || (buf_addr & 3) || (tramp & 3))
		return 0;
	a64_put(&w, 0xd53bd040u | A64_X16); /* mrs x16, tpidr_el0 */
	count_ldr_off(&w, false, A64_X17_W, A64_X16, gate);
	a64_put(&w, 0x7100041fu | A64_X17_W << 5); /* cmp w17, #1 */
	size_t bne_at = w.len;
	a64_put(&w, 0); /* b.ne full: filled in below */
	count_ldr_off(&w, true, A64_X16, A64_X16, counters);
	uint32_t off = slot * 8;
	if (off < 4096) {
		a64_put(&w,
		        0x91000000u | off << 10 | A64_X16 << 5 | A64_X16); /* add x16, x16, #off */
	} else {
		a64_mov_imm64(&w, A64_X17, off);
		a64_put(&w, 0x8b000000u | A64_X17 << 16 | A64_X16 << 5 |
		                A64_X16); /* add x16, x16, x17 */
	}
	a64_put(&w, 0xf81f0fe0u | A64_X15); /* str x15, [sp, #-16]! */
	uint64_t loop = a64_pc(&w);
	a64_put(&w, 0xc85f7c00u | A64_X16 << 5 | A64_X17); /* ldxr x17, [x16] */
	a64_put(&w, 0x91000400u | A64_X17 << 5 | A64_X17); /* add x17, x17, #1 */
	a64_put(&w,
	        0xc8007c00u | A64_X15 << 16 | A64_X16 << 5 | A64_X17); /* stxr w15, x17, [x16] */
	int64_t back = (int64_t)(loop - a64_pc(&w));
	a64_put(&w, 0x35000000u | ((uint32_t)(back >> 2) & 0x7ffffu) << 5 | A64_X15); /* cbnz w15 */
	a64_put(&w, 0xf84107e0u | A64_X15); /* ldr x15, [sp], #16 */
	a64_b_far(&w, tramp + A64_BODY_OFF);
	if (!w.ok)
		return 0;
	int64_t d = (int64_t)(w.len - bne_at); /* b.ne: imm19 words, cond ne (1) */
	uint32_t bne = 0x54000001u | ((uint32_t)(d >> 2) & 0x7ffffu) << 5;
	for (unsigned i = 0; i < 4; i++)
		buf[bne_at + i] = (uint8_t)(bne >> (8 * i));
	a64_b_far(&w, tramp);
	return w.ok ? w.len : 0;
}
