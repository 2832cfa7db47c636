/*
 * hook_arch.h on aarch64: the portable core (a64_*.c) under the
 * interface's names. The C-handler form only: the fast form's entry
 * points emit it too (below). No
 * padding form: a 4-byte patch fits every function.
 *
 * Threads: any; no shared state.
 */
#include "a64_internal.h"

_Static_assert(HOOK_ARCH_RET_POINT_OFF == A64_RET_POINT_OFF, "R_F where a64_emit.c puts it");
_Static_assert(sizeof(struct ada_hook_regs) == A64_FRAME &&
                   offsetof(struct ada_hook_regs, lr) == A64_FRAME_LR &&
                   offsetof(struct ada_hook_regs, fp) == A64_FRAME_FP,
               "struct ada_hook_regs is the enter trampoline's frame");
_Static_assert(HOOK_RET_SAVED_X0 == -(int)(A64_FRAME / 8) &&
                   HOOK_RET_SAVED_X1 == HOOK_RET_SAVED_X0 + 1 &&
                   HOOK_RET_SAVED_FP == -(int)((A64_FRAME - A64_FRAME_FP) / 8),
               "the return trampoline's frame below S");

enum ada_hook_skip hook_arch_prepare(const uint8_t *code, uint64_t addr, uint64_t size,
                                     struct hook_arch_plan *plan)
{
	return a64_prepare(code, addr, size, plan);
}

/* No switch tables to read: a 4-byte patch has nothing inside it for
 * an indirect jump to land on. */
enum ada_hook_skip hook_arch_prepare_mem(const uint8_t *code, uint64_t addr, uint64_t size,
                                         const struct hook_arch_memview *mem,
                                         struct hook_arch_plan *plan)
{
	(void)mem;
	return a64_prepare(code, addr, size, plan);
}

enum ada_hook_skip hook_arch_prepare_prologue(const uint8_t *code, uint64_t addr, uint64_t size,
                                              struct hook_arch_plan *plan)
{
	return a64_prepare(code, addr, size, plan);
}

enum ada_hook_skip hook_arch_prepare_far(const uint8_t *code, uint64_t addr, uint64_t size,
                                         struct hook_arch_plan *plan)
{
	return a64_prepare_far(code, addr, size, plan);
}

/* The padding form exists for x86_64's functions shorter than its
 * 5-byte jump; every A64 function holds a 4-byte `b`. */
enum ada_hook_skip hook_arch_prepare_short(const uint8_t *code, uint64_t addr, uint64_t size,
                                           const struct hook_arch_memview *mem,
                                           struct hook_arch_plan *plan)
{
	(void)code, (void)addr, (void)size, (void)mem, (void)plan;
	return ADA_SKIP_TOO_SHORT;
}

enum ada_hook_skip hook_arch_prepare_prologue_short(const uint8_t *code, uint64_t addr,
                                                    uint64_t size, struct hook_arch_plan *plan)
{
	return hook_arch_prepare_short(code, addr, size, NULL, plan);
}

/* No padding form on A64 (hook_arch_prepare_short above). */
bool hook_arch_inner_fill(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t from,
                          uint64_t to, size_t min, uint64_t *lo, uint64_t *hi)
{
	(void)code, (void)addr, (void)size, (void)from, (void)to, (void)min, (void)lo, (void)hi;
	return false;
}

bool hook_arch_ends_closed(const uint8_t *code, uint64_t addr, uint64_t size)
{
	return a64_ends_closed(code, addr, size);
}

size_t hook_arch_fill_len(const uint8_t *code, size_t len)
{
	return a64_fill_len(code, len);
}

size_t hook_arch_insn_len(const uint8_t *code, size_t left, uint64_t pc, uint64_t *target,
                          int *has_target)
{
	*has_target = 0;
	if (left < 4 || (pc & 3))
		return 0;
	*has_target = a64_direct_branch(a64_word(code), pc, target);
	return 4;
}

size_t hook_arch_emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                                 uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path)
{
	return a64_emit_trampoline(plan, buf, buf_addr, fn_id, enter_handler, exit_path, NULL);
}

size_t hook_arch_emit_return_trampoline(uint8_t *buf, uint64_t buf_addr, uint64_t exit_handler)
{
	return a64_emit_return_trampoline(buf, buf_addr, exit_handler);
}

/* ---- The fast form's entry points: the C-handler form on arm64 ----
 * The agent gives every ordinary function the fast form's trampoline
 * and every block a fast return trampoline and an enter stub. arm64 has
 * no machine-code fast path: the "fast" trampoline is the ordinary one
 * whose handler is the block's enter stub, and the stub only forwards
 * (x0-x2 and x30 untouched) to the lane's C enter handler,
 * f->enter_full; the fast return trampoline is the ordinary one to
 * f->exit_full. Count-only blocks: a64_count.c. */

size_t hook_arch_emit_trampoline_fast(const struct hook_arch_plan *plan, uint8_t *buf,
                                      uint64_t buf_addr, uint64_t fn_id, uint64_t stub,
                                      uint64_t exit_path)
{
	return a64_emit_trampoline(plan, buf, buf_addr, fn_id, stub, exit_path, NULL);
}

/* ldr x16, handler; br x16; dq handler */
size_t hook_arch_emit_enter_stub(uint8_t *buf, uint64_t buf_addr, const struct hook_arch_fast *f)
{
	struct a64_writer w = {buf, 0, HOOK_ARCH_ENTER_STUB_MAX, buf_addr, 1};

	if ((buf_addr & 7) || f->enter_full == 0)
		return 0;
	a64_ldr_lit(&w, A64_X16, buf_addr + 8);
	a64_br(&w, A64_X16);
	a64_put_u64(&w, f->enter_full);
	return w.ok ? w.len : 0;
}

size_t hook_arch_emit_return_trampoline_fast(uint8_t *buf, uint64_t buf_addr,
                                             const struct hook_arch_fast *f)
{
	return f->exit_full ? a64_emit_return_trampoline(buf, buf_addr, f->exit_full) : 0;
}

_Static_assert(HOOK_ARCH_COUNT_BLOCK_MAX == A64_COUNT_BLOCK_MAX, "a64_count.c's bound");

/* The "fast" trampoline is the ordinary one: its body at A64_BODY_OFF. */
size_t hook_arch_emit_count_block(uint8_t *buf, uint64_t buf_addr, int32_t gate, int32_t counters,
                                  uint32_t slot, uint64_t tramp)
{
	return a64_emit_count_block(buf, buf_addr, gate, counters, slot, tramp);
}

size_t hook_arch_emit_count_block_inline(const struct hook_arch_plan *plan, uint8_t *buf,
                                         uint64_t buf_addr, int32_t gate, int32_t counters,
                                         uint32_t slot, uint64_t tramp,
                                         struct hook_arch_reloc_map *map)
{
	(void)plan, (void)buf, (void)buf_addr, (void)gate, (void)counters, (void)slot, (void)tramp;
	(void)map;
	return 0; /* no inline form: the caller emits the block */
}

size_t hook_arch_emit_count_block_copy(const struct hook_arch_plan *plan, const uint8_t *code,
                                       size_t avail, uint8_t *buf, uint64_t buf_addr, int32_t gate,
                                       int32_t counters, uint32_t slot, uint64_t tramp,
                                       struct hook_arch_copy_map *map)
{
	(void)plan, (void)code, (void)avail, (void)buf, (void)buf_addr, (void)gate, (void)counters;
	(void)slot, (void)tramp, (void)map;
	return 0; /* no copy form: the caller emits the block */
}

static void a64_map(const struct hook_arch_plan *plan, const size_t *starts,
                    struct hook_arch_reloc_map *out)
{
	out->n = (uint8_t)plan->insn_count;
	out->end_off = out->end_at = 0; /* no system call among the copies to stop after */
	for (size_t i = 0; i < plan->insn_count; i++) {
		out->off[i] = plan->insns[i].offset;
		out->at[i] = (uint8_t)starts[i];
	}
}

/* Both forms put the relocated copies at the same offsets. */
bool hook_arch_reloc_map(const struct hook_arch_plan *plan, uint64_t tramp_addr, bool fast,
                         struct hook_arch_reloc_map *out)
{
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];
	size_t starts[HOOK_ARCH_MAX_INSNS];

	(void)fast;
	if (a64_emit_trampoline(plan, buf, tramp_addr, 0, 0, tramp_addr, starts) == 0)
		return false;
	a64_map(plan, starts, out);
	return true;
}

size_t hook_arch_emit_trampoline_fast_map(const struct hook_arch_plan *plan, uint8_t *buf,
                                          uint64_t buf_addr, uint64_t fn_id, uint64_t stub,
                                          uint64_t exit_path, struct hook_arch_reloc_map *map)
{
	size_t starts[HOOK_ARCH_MAX_INSNS];
	size_t n = a64_emit_trampoline(plan, buf, buf_addr, fn_id, stub, exit_path, starts);
	if (n)
		a64_map(plan, starts, map);
	return n;
}

/* ---- The patch ---- */

void hook_arch_patch_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                           uint8_t out[HOOK_ARCH_MAX_PATCH])
{
	/* tramp_addr is one hook_arch_emit_trampoline() accepted, which
	 * checked the same reach. */
	(void)a64_patch_bytes(plan, tramp_addr, out);
}

void hook_arch_pad_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                         uint8_t out[HOOK_ARCH_PAD_SLOT])
{
	(void)plan, (void)tramp_addr, (void)out; /* no padding form (prepare_short refuses) */
}

uint64_t hook_arch_moved_pc(const struct hook_arch_plan *plan, const uint8_t *tramp,
                            uint64_t tramp_addr, uint64_t pc)
{
	return a64_moved_pc(plan, tramp, tramp_addr, pc);
}

uint64_t hook_arch_patch_target(const struct hook_arch_plan *plan, const uint8_t *patch)
{
	return a64_patch_target(plan, patch);
}
