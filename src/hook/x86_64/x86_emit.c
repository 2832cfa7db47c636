/*
 * x86_64 trampolines, the return trampoline and the patch bytes (the
 * hook_arch_emit_* half of hook_arch.h; the fast form's enter stub and
 * return trampoline: x86_emit_fast.c). Pure code generation into
 * caller-provided buffers, through the named writers of x86_writer.h.
 *
 * Threads: any; no shared state.
 *
 * Enter trampoline layout (one per function, 80 bytes + relocated code):
 *     push r11 ... push rdi        ; struct ada_hook_regs, rdi lowest
 *     mov  rdi, fn_id              ; imm64
 *     lea  rsi, [rsp+80]           ; ret_slot = rsp at function entry
 *     mov  rdx, rsp                ; regs
 *     mov  rax, enter_handler      ; imm64: the handler may be far away
 *     call rax                     ; rsp is as the caller left it - 88
 *     pop  rdi ... pop r11         ; possibly modified by the handler
 *     cmp  qword [rsp], 0          ; the handler pushed a frame?
 *     jne  body                    ; no: the function runs as if unhooked
 *     lea  rsp, [rsp+8]            ; drop the slot (the frame holds it)
 *     call body                    ; the slot now holds R_F, predicted
 * R_F: jmp  exit_path              ; rel32: the return trampoline
 * body: <relocated prologue>
 *     jmp  fn + patch_len          ; rel32, or jmp [rip+0]; dq when far
 * 29 instructions + relocated ones run per traced call (and the jmp at
 * R_F on its return). The body's `ret` lands at R_F, which the `call`
 * pushed on the return-stack buffer, and the return trampoline's final
 * `ret` goes to the caller, which the caller's own `call` pushed: no
 * return is mispredicted (the shared return trampoline as the return
 * address cost two mispredictions per call). A shared "enter
 * stub" (per-function `mov r11, fn_id; call stub`) would shrink each
 * trampoline to ~15 bytes + relocated code but executes 3 more
 * instructions (the call/ret pair and the extra mov); we favour fewer
 * instructions and keep the contract's signature (enter_handler address).
 */
#include <stdbool.h>
#include <string.h>

#include "x86_emit_internal.h"

/* struct ada_hook_regs from its top down: push r11 first, rdi last. */
const enum x86_gpr x86_emit_hook_regs[10] = {X86_R11, X86_R10, X86_RBP, X86_RAX, X86_R9,
                                             X86_R8,  X86_RCX, X86_RDX, X86_RSI, X86_RDI};

_Static_assert(sizeof(struct ada_hook_regs) == 80, "trampoline pushes 10 registers");

void x86_emit_push(struct x86_writer *w, const enum x86_gpr *regs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x86_push_reg(w, regs[i]);
}

void x86_emit_pop(struct x86_writer *w, const enum x86_gpr *regs, size_t n)
{
	while (n-- > 0)
		x86_pop_reg(w, regs[n]);
}

/* Neither trampoline aligns the stack: the handlers are called with rsp
 * 8 bytes off the ABI's alignment (from a conforming caller; anything,
 * from another), and every handler function that calls anything realigns
 * it in its own prologue (handlers.c, HANDLERS_COLD; the hot handlers
 * are leaves that only jump to those). That saves the mov/and/mov of a
 * frame pointer in both trampolines (5 instructions per traced call with
 * the return trampoline's push/pop of rbp). */
static void emit_enter_frame(struct x86_writer *w, uint64_t fn_id, uint64_t handler,
                             uint64_t exit_path)
{
	uint64_t body = x86_pc(w) + HOOK_ARCH_RET_POINT_OFF + 5;

	x86_emit_push(w, x86_emit_hook_regs, 10);
	x86_mov_reg_imm64(w, X86_RDI, fn_id);
	x86_lea_reg_mem(w, X86_RSI, x86_mem(X86_RSP, 80)); /* ret_slot */
	x86_mov_reg_reg(w, X86_RDX, X86_RSP);              /* regs */
	x86_mov_reg_imm64(w, X86_RAX, handler);
	x86_call_reg(w, X86_RAX); /* the handler keeps rsp */
	x86_emit_pop(w, x86_emit_hook_regs, 10);
	/* The flags are not preserved across the enter handler anyway. */
	x86_cmp_mem_imm8(w, X86_QWORD, x86_mem(X86_RSP, 0), 0);
	x86_jcc_rel8(w, X86_CC_NE, body);
	x86_lea_reg_mem(w, X86_RSP, x86_mem(X86_RSP, 8));
	x86_call_rel32(w, body);
	x86_jmp_rel32(w, exit_path); /* R_F: HOOK_ARCH_RET_POINT_OFF */
}
_Static_assert(HOOK_ARCH_RET_POINT_OFF == 14 + 10 + 5 + 3 + 10 + 2 + 14 + 5 + 2 + 5 + 5,
               "R_F follows the call");

int x86_emit_reloc(struct x86_writer *w, const uint8_t *orig, uint64_t fn_addr,
                   const struct hook_arch_insn *in)
{
	switch (in->kind) {
	case X86_RELOC_PLAIN:
		return reloc_plain(w, orig, in);
	case X86_RELOC_RIP:
	case X86_RELOC_RIP_LEA:
		return reloc_rip_relative(w, orig, in);
	case X86_RELOC_JMP:
		return reloc_jmp(w, orig, in);
	case X86_RELOC_JCC:
		return reloc_jcc(w, orig, in);
	case X86_RELOC_CALL:
	case X86_RELOC_CALL_RIP:
		return reloc_call(w, orig, in, fn_addr + in->offset + in->len);
	case X86_RELOC_CALL_IND:
		return reloc_call_indirect(w, orig, in, fn_addr + in->offset + in->len);
	default:
		return -1;
	}
}

/* The fast form's frame (see "Fast form" below): the block's enter stub
 * does the whole entry and leaves ZF set when the slot holds 0 (a frame
 * was pushed: call the body), clear otherwise (jump to it).
 *     call stub                    ; rel32
 *     jne  body                    ; ZF from the stub
 *     lea  rsp, [rsp+8]
 *     call body
 * R_F: jmp  exit_path              ; HOOK_ARCH_FAST_RET_POINT_OFF
 *     dq   fn_id                   ; read by the stub at [its return address + 17]
 * body: ... */
static void emit_fast_frame(struct x86_writer *w, uint64_t fn_id, uint64_t stub, uint64_t exit_path)
{
	/* Fixed bytes but for the two rel32s and fn_id: one template copied
	 * and filled in (a trampoline per function, libc's 3 500 at each
	 * exec), not encoded instruction by instruction. The golden tests
	 * (test_hook_emit_golden.c) hold it to the encoder's bytes. */
	static const uint8_t frame[EMIT_FAST_FN_ID_OFF] = {
	    0xe8, 0,    0,    0,    0,    /* call stub */
	    0x75, 0x17,                   /* jne body (+23: past fn_id) */
	    0x48, 0x8d, 0x64, 0x24, 0x08, /* lea rsp, [rsp+8] */
	    0xe8, 0x0d, 0,    0,    0,    /* call body (+13) */
	    0xe9, 0,    0,    0,    0,    /* R_F: jmp exit_path */
	};
	uint64_t at = x86_pc(w);
	int32_t d[2] = {(int32_t)(stub - (at + 5)), (int32_t)(exit_path - (at + 22))};
	if (!x86_fits_rel32((int64_t)(stub - (at + 5))) ||
	    !x86_fits_rel32((int64_t)(exit_path - (at + 22)))) {
		w->ok = 0;
		return;
	}
	uint8_t b[EMIT_FAST_FN_ID_OFF + 8];
	memcpy(b, frame, sizeof(frame));
	memcpy(b + 1, &d[0], 4);
	memcpy(b + 18, &d[1], 4);
	memcpy(b + EMIT_FAST_FN_ID_OFF, &fn_id, 8);
	x86_put(w, b, sizeof(b));
}
_Static_assert(HOOK_ARCH_FAST_RET_POINT_OFF == 5 + 2 + 5 + 5, "R_F follows the call");
_Static_assert(EMIT_FAST_FN_ID_OFF == HOOK_ARCH_FAST_RET_POINT_OFF + 5, "fn_id follows R_F");

/* x86_emit_internal.h: the jmp rel32 to buf_addr is at the entry, or in
 * the padding form at the padding slot. */
bool x86_emit_plan_ok(const struct hook_arch_plan *plan, uint64_t buf_addr)
{
	uint64_t from = plan->pad_addr ? plan->pad_addr : plan->fn_addr;
	return plan->patch_len >= (plan->pad_addr ? HOOK_ARCH_PAD_ENTRY : 5u) &&
	       plan->insn_count != 0 && plan->insn_count <= HOOK_ARCH_MAX_INSNS &&
	       x86_fits_rel32((int64_t)(buf_addr - (from + 5)));
}

/* The body after the frame: each displaced instruction's relocated form
 * (starts[i]: where it starts, bytes from the writer's buffer;
 * starts[insn_count]: the jump back; starts may be NULL), then the jump
 * back behind the patch. */
static size_t emit_body(struct x86_writer *w, const struct hook_arch_plan *plan,
                        size_t starts[HOOK_ARCH_MAX_INSNS + 1])
{
	for (size_t i = 0; i < plan->insn_count; i++) {
		if (starts)
			starts[i] = w->len;
		const struct hook_arch_insn *in = &plan->insns[i];
		if (x86_emit_reloc(w, plan->original + in->offset, plan->fn_addr, in))
			return 0;
	}
	if (starts)
		starts[plan->insn_count] = w->len;
	x86_jmp_far(w, plan->fn_addr + plan->patch_len);
	return w->ok ? w->len : 0;
}

/* The frame's length in each form: where the body starts. */
#define EMIT_BODY_FAST (EMIT_FAST_FN_ID_OFF + 8)
#define EMIT_BODY_FULL (HOOK_ARCH_RET_POINT_OFF + 5)

/* The trampoline, and where each displaced instruction's relocated form
 * starts in it (emit_body's starts). fast: the fast form, enter_handler
 * is then the block's enter stub. */
static size_t emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                              uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path, bool fast,
                              size_t starts[HOOK_ARCH_MAX_INSNS + 1])
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_MAX_TRAMPOLINE, buf_addr, 1};

	if (!x86_emit_plan_ok(plan, buf_addr))
		return 0;
	if (fast)
		emit_fast_frame(&w, fn_id, enter_handler, exit_path);
	else
		emit_enter_frame(&w, fn_id, enter_handler, exit_path);
	if (w.len != (fast ? EMIT_BODY_FAST : EMIT_BODY_FULL))
		return 0;
	return emit_body(&w, plan, starts);
}

size_t hook_arch_emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                                 uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path)
{
	return emit_trampoline(plan, buf, buf_addr, fn_id, enter_handler, exit_path, false, NULL);
}

size_t hook_arch_emit_trampoline_fast(const struct hook_arch_plan *plan, uint8_t *buf,
                                      uint64_t buf_addr, uint64_t fn_id, uint64_t stub,
                                      uint64_t exit_path)
{
	return emit_trampoline(plan, buf, buf_addr, fn_id, stub, exit_path, true, NULL);
}

/* The map from the places emit_body recorded (hook_arch_reloc_map's). */
static void emit_map(const struct hook_arch_plan *plan, const size_t *starts,
                     struct hook_arch_reloc_map *out)
{
	out->n = (uint8_t)plan->insn_count; /* emit_plan_ok checked it */
	for (size_t i = 0; i < plan->insn_count; i++) {
		out->off[i] = (uint8_t)plan->insns[i].offset;
		out->at[i] = (uint8_t)starts[i];
	}
	out->end_off = (uint8_t)plan->patch_len;
	out->end_at = (uint8_t)starts[plan->insn_count];
}

/* The inline count block (hook_arch_emit_count_block_inline): the count
 * block's test and count, then the relocated prologue itself instead of
 * a jump to the trampoline's copy of it (one taken jump fewer a call). */
size_t hook_arch_emit_count_block_inline(const struct hook_arch_plan *plan, uint8_t *buf,
                                         uint64_t buf_addr, int32_t gate, int32_t counters,
                                         uint32_t slot, uint64_t tramp,
                                         struct hook_arch_reloc_map *map)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_COUNT_INLINE_MAX, buf_addr, 1};
	size_t starts[HOOK_ARCH_MAX_INSNS + 1];
	struct emit_count_fix fix;

	if (!x86_emit_plan_ok(plan, buf_addr) || !emit_count_test(&w, gate, counters, slot, &fix))
		return 0;
	size_t n = emit_body(&w, plan, starts);
	if (n && !emit_count_exit(&w, &fix, tramp))
		return 0; /* the other form, whose exit is in reach */
	n = n ? w.len : 0;
	if (n && starts[plan->insn_count] <= UINT8_MAX)
		emit_map(plan, starts, map);
	else
		*map = (struct hook_arch_reloc_map){0}; /* the block's first byte alone */
	return n;
}

size_t hook_arch_emit_trampoline_fast_map(const struct hook_arch_plan *plan, uint8_t *buf,
                                          uint64_t buf_addr, uint64_t fn_id, uint64_t stub,
                                          uint64_t exit_path, struct hook_arch_reloc_map *map)
{
	size_t starts[HOOK_ARCH_MAX_INSNS + 1];
	size_t n = emit_trampoline(plan, buf, buf_addr, fn_id, stub, exit_path, true, starts);
	if (n)
		emit_map(plan, starts, map);
	return n;
}

/* Each relocated form is an exact equivalent of its original instruction
 * (x86_reloc.c), and the ones after it are those of the instructions
 * after it, so a thread that was about to run displaced instruction i
 * may run its relocated form instead: the same effects in the same order,
 * then the jmp back behind the patch. The enter frame before it is not
 * run (the call is not recorded, as for any frame open at attach). The
 * trampoline's relocated part is emitted again and compared with the
 * live bytes, so a plan that is not the one the trampoline was made from
 * maps nothing. */
uint64_t hook_arch_moved_pc(const struct hook_arch_plan *plan, const uint8_t *tramp,
                            uint64_t tramp_addr, uint64_t pc)
{
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];
	size_t starts[HOOK_ARCH_MAX_INSNS + 1], i = 1;

	if (pc <= plan->fn_addr || pc >= plan->fn_addr + plan->patch_len)
		return 0;
	while (i < plan->insn_count && plan->fn_addr + plan->insns[i].offset != pc)
		i++;
	if (i >= plan->insn_count)
		return 0; /* not an instruction boundary: the middle of one */
	/* Either form: the relocated part is compared from where that form
	 * puts it (the fast form first: it is the shorter, so reading its
	 * length from a trampoline of the other form stays inside that one;
	 * there its bytes are the frame's, which end no jmp back here). */
	for (int fast = 1; fast >= 0; fast--) {
		size_t n = emit_trampoline(plan, buf, tramp_addr, 0, tramp_addr, tramp_addr,
		                           fast != 0, starts);
		if (n != 0 && memcmp(buf + starts[0], tramp + starts[0], n - starts[0]) == 0)
			return tramp_addr + starts[i];
	}
	return 0;
}

bool hook_arch_reloc_map(const struct hook_arch_plan *plan, uint64_t tramp_addr, bool fast,
                         struct hook_arch_reloc_map *out)
{
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];
	size_t starts[HOOK_ARCH_MAX_INSNS + 1];
	/* Only the body is emitted again, where the frame puts it: the same
	 * writer addresses, so the same relocated forms (the frame's bytes
	 * depend on nothing the body does). */
	struct x86_writer w = {buf, fast ? EMIT_BODY_FAST : EMIT_BODY_FULL,
	                       HOOK_ARCH_MAX_TRAMPOLINE, tramp_addr, 1};

	if (!x86_emit_plan_ok(plan, tramp_addr) || emit_body(&w, plan, starts) == 0)
		return false;
	emit_map(plan, starts, out);
	return true;
}

uint64_t hook_arch_patch_target(const struct hook_arch_plan *plan, const uint8_t *patch)
{
	int32_t d;

	if (plan->pad_addr || plan->patch_len < 5 || patch[0] != 0xe9)
		return 0; /* the padding form's target is in its second patch */
	memcpy(&d, patch + 1, 4);
	return plan->fn_addr + 5 + (uint64_t)(int64_t)d;
}

/* push rax, rdx, rcx, rsi, rdi, r8, r9, r10, r11: every caller-saved
 * general register. The ABI lets a return clobber all but rax/rdx, but
 * gcc's -fipa-ra keeps values live in caller-saved registers across a
 * call to a function of the same unit it knows does not touch them
 * (python3.11's _Py_PreInitializeFromPyArgv: r8-r10), so the return path
 * must be invisible in every general register. Popped without rax (the
 * first), which is handled apart. */
const enum x86_gpr x86_emit_ret_regs[9] = {X86_RAX, X86_RDX, X86_RCX, X86_RSI, X86_RDI,
                                           X86_R8,  X86_R9,  X86_R10, X86_R11};

_Static_assert(HOOK_RET_SAVED_RBP == -(9 + 1), "rbp below the nine caller-saved registers");

void x86_emit_ret_tail(struct x86_writer *w)
{
	x86_call_reg(w, X86_RAX);                          /* rax = the original return address */
	x86_pop_reg(w, X86_RBP);                           /* the handler keeps it */
	x86_mov_reg_mem(w, X86_R11, x86_mem(X86_RSP, 64)); /* the saved rax */
	x86_mov_mem_reg(w, x86_mem(X86_RSP, 64), X86_RAX); /* S-8 */
	x86_mov_reg_reg(w, X86_RAX, X86_R11);
	x86_emit_pop(w, x86_emit_ret_regs + 1, 8); /* rsp = S-8 */
	x86_ret(w);                                /* rsp = S */
}

/* Reached by the hooked function's `ret`: rsp = S, the sp after the ret;
 * S-8 held the swapped return address. Stack while the handler runs:
 * rax at S-8 (reusing the dead slot), rdx S-16, ..., r11 S-72, rbp S-80
 * (callee-saved, so the handler keeps it; saved only for the detail
 * lane's RETURN record, detail_put_return). Afterwards the
 * original return address goes into S-8 (r11 carries the saved rax
 * meanwhile: its own saved value is popped first) and a `ret` pops it, so
 * no register is needed to reach it and rsp ends at S. 26 instructions. */
size_t hook_arch_emit_return_trampoline(uint8_t *buf, uint64_t buf_addr, uint64_t exit_handler)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, buf_addr, 1};

	x86_emit_push(&w, x86_emit_ret_regs, 9);
	x86_push_reg(&w, X86_RBP);                          /* S-80, for the RETURN record */
	x86_lea_reg_mem(&w, X86_RDI, x86_mem(X86_RSP, 80)); /* S */
	x86_mov_reg_imm64(&w, X86_RAX, exit_handler);
	x86_emit_ret_tail(&w);
	return w.ok ? w.len : 0;
}

void hook_arch_patch_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                           uint8_t out[HOOK_ARCH_MAX_PATCH])
{
	memcpy(out, plan->original, plan->patch_len); /* the tail keeps the original bytes */
	if (plan->pad_addr) {
		/* jmp rel8 to the padding slot (the caller chose it in reach) */
		int64_t rel = (int64_t)(plan->pad_addr - (plan->fn_addr + HOOK_ARCH_PAD_ENTRY));
		out[0] = 0xeb;
		out[1] = (uint8_t)(int8_t)rel;
		return;
	}
	struct x86_writer w = {out, 0, 5, plan->fn_addr, 1};
	x86_jmp_rel32(&w, tramp_addr);
}

void hook_arch_pad_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                         uint8_t out[HOOK_ARCH_PAD_SLOT])
{
	struct x86_writer w = {out, 0, HOOK_ARCH_PAD_SLOT, plan->pad_addr, 1};
	x86_jmp_rel32(&w, tramp_addr);
}
