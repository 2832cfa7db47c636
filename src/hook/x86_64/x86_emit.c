/*
 * x86_64 trampolines and patch bytes (the hook_arch_emit_* half of
 * hook_arch.h). Pure code generation into caller-provided buffers.
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

#include "x86_internal.h"

/* push r11, r10, rbp, rax, r9, r8, rcx, rdx, rsi, rdi */
static const uint8_t emit_push_regs[] = {0x41, 0x53, 0x41, 0x52, 0x55, 0x50, 0x41,
                                         0x51, 0x41, 0x50, 0x51, 0x52, 0x56, 0x57};
/* pop rdi, rsi, rdx, rcx, r8, r9, rax, rbp, r10, r11 */
static const uint8_t emit_pop_regs[] = {0x5f, 0x5e, 0x5a, 0x59, 0x41, 0x58, 0x41,
                                        0x59, 0x58, 0x5d, 0x41, 0x5a, 0x41, 0x5b};

_Static_assert(sizeof(struct ada_hook_regs) == 80, "trampoline pushes 10 registers");

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
	x86_put(w, emit_push_regs, sizeof(emit_push_regs));
	x86_put(w, "\x48\xbf", 2); /* mov rdi, imm64 */
	x86_put_u64(w, fn_id);
	x86_put(w, "\x48\x8d\x74\x24\x50", 5); /* lea rsi, [rsp+80] */
	x86_put(w, "\x48\x89\xe2", 3);         /* mov rdx, rsp */
	x86_put(w, "\x48\xb8", 2);             /* mov rax, imm64 */
	x86_put_u64(w, handler);
	x86_put(w, "\xff\xd0", 2); /* call rax; the handler keeps rsp */
	x86_put(w, emit_pop_regs, sizeof(emit_pop_regs));
	/* The flags are not preserved across the enter handler anyway. */
	x86_put(w, "\x48\x83\x3c\x24\x00", 5); /* cmp qword [rsp], 0 */
	x86_put(w, "\x75\x0f", 2);             /* jne body (+15) */
	x86_put(w, "\x48\x8d\x64\x24\x08", 5); /* lea rsp, [rsp+8] */
	x86_put(w, "\xe8\x05\x00\x00\x00", 5); /* call body (+5) */
	/* R_F: HOOK_ARCH_RET_POINT_OFF */
	int64_t d = (int64_t)(exit_path - (x86_pc(w) + 5));
	if (!x86_fits_rel32(d))
		w->ok = 0;
	x86_put_u8(w, 0xe9); /* jmp rel32 exit_path */
	x86_put_u32(w, (uint32_t)d);
}
_Static_assert(HOOK_ARCH_RET_POINT_OFF == 14 + 10 + 5 + 3 + 10 + 2 + 14 + 5 + 2 + 5 + 5,
               "R_F follows the call");

static int emit_reloc_one(struct x86_writer *w, const struct hook_arch_plan *plan,
                          const struct hook_arch_insn *in)
{
	const uint8_t *orig = plan->original + in->offset;

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
		return reloc_call(w, orig, in, plan->fn_addr + in->offset + in->len);
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
#define EMIT_FAST_FN_ID_OFF 22 /* from the trampoline's start */
#define EMIT_FAST_FN_ID_DISP (EMIT_FAST_FN_ID_OFF - 5)
static void emit_fast_frame(struct x86_writer *w, uint64_t fn_id, uint64_t stub, uint64_t exit_path)
{
	int64_t d = (int64_t)(stub - (x86_pc(w) + 5));
	if (!x86_fits_rel32(d))
		w->ok = 0;
	x86_put_u8(w, 0xe8); /* call rel32 stub */
	x86_put_u32(w, (uint32_t)d);
	x86_put(w, "\x75\x17", 2);             /* jne body (+23) */
	x86_put(w, "\x48\x8d\x64\x24\x08", 5); /* lea rsp, [rsp+8] */
	x86_put(w, "\xe8\x0d\x00\x00\x00", 5); /* call body (+13) */
	d = (int64_t)(exit_path - (x86_pc(w) + 5));
	if (!x86_fits_rel32(d))
		w->ok = 0;
	x86_put_u8(w, 0xe9); /* R_F: jmp rel32 exit_path */
	x86_put_u32(w, (uint32_t)d);
	x86_put_u64(w, fn_id);
}
_Static_assert(HOOK_ARCH_FAST_RET_POINT_OFF == 5 + 2 + 5 + 5, "R_F follows the call");
_Static_assert(EMIT_FAST_FN_ID_OFF == HOOK_ARCH_FAST_RET_POINT_OFF + 5, "fn_id follows R_F");

/* The trampoline, and where each displaced instruction's relocated form
 * starts in it (starts[i], bytes from buf; may be NULL). fast: the fast
 * form, enter_handler is then the block's enter stub. */
static size_t emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                              uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path, bool fast,
                              size_t starts[HOOK_ARCH_MAX_INSNS])
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_MAX_TRAMPOLINE, buf_addr, 1};

	if (plan->patch_len < 5 || plan->insn_count == 0 ||
	    plan->insn_count > HOOK_ARCH_MAX_INSNS ||
	    !x86_fits_rel32((int64_t)(buf_addr - (plan->fn_addr + 5))))
		return 0;
	if (fast) {
		emit_fast_frame(&w, fn_id, enter_handler, exit_path);
		if (w.len != EMIT_FAST_FN_ID_OFF + 8)
			return 0;
	} else {
		emit_enter_frame(&w, fn_id, enter_handler, exit_path);
		if (w.len != HOOK_ARCH_RET_POINT_OFF + 5)
			return 0;
	}
	for (size_t i = 0; i < plan->insn_count; i++) {
		if (starts)
			starts[i] = w.len;
		if (emit_reloc_one(&w, plan, &plan->insns[i]))
			return 0;
	}
	x86_put_jmp(&w, plan->fn_addr + plan->patch_len);
	return w.ok ? w.len : 0;
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
	size_t starts[HOOK_ARCH_MAX_INSNS], i = 1;

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

uint64_t hook_arch_patch_target(const struct hook_arch_plan *plan, const uint8_t *patch)
{
	int32_t d;

	if (plan->patch_len < 5 || patch[0] != 0xe9)
		return 0;
	memcpy(&d, patch + 1, 4);
	return plan->fn_addr + 5 + (uint64_t)(int64_t)d;
}

/* push rax, rdx, rcx, rsi, rdi, r8, r9, r10, r11: every caller-saved
 * general register. The ABI lets a return clobber all but rax/rdx, but
 * gcc's -fipa-ra keeps values live in caller-saved registers across a
 * call to a function of the same unit it knows does not touch them
 * (python3.11's _Py_PreInitializeFromPyArgv: r8-r10), so the return path
 * must be invisible in every general register. */
static const uint8_t emit_ret_push[] = {0x50, 0x52, 0x51, 0x56, 0x57, 0x41, 0x50,
                                        0x41, 0x51, 0x41, 0x52, 0x41, 0x53};
/* pop r11, r10, r9, r8, rdi, rsi, rcx, rdx (rax is handled apart) */
static const uint8_t emit_ret_pop[] = {0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59,
                                       0x41, 0x58, 0x5f, 0x5e, 0x59, 0x5a};

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

	x86_put(&w, emit_ret_push, sizeof(emit_ret_push));
	x86_put_u8(&w, 0x55);                   /* push rbp: S-80, for the RETURN record */
	x86_put(&w, "\x48\x8d\x7c\x24\x50", 5); /* lea rdi, [rsp+80] = S */
	x86_put(&w, "\x48\xb8", 2);             /* mov rax, imm64 */
	x86_put_u64(&w, exit_handler);
	x86_put(&w, "\xff\xd0", 2);                      /* call rax: rax = original return */
	x86_put_u8(&w, 0x5d);                            /* pop rbp (the handler keeps it) */
	x86_put(&w, "\x4c\x8b\x5c\x24\x40", 5);          /* mov r11, [rsp+64] (saved rax) */
	x86_put(&w, "\x48\x89\x44\x24\x40", 5);          /* mov [rsp+64], rax (S-8) */
	x86_put(&w, "\x4c\x89\xd8", 3);                  /* mov rax, r11 */
	x86_put(&w, emit_ret_pop, sizeof(emit_ret_pop)); /* rsp = S-8 */
	x86_put_u8(&w, 0xc3);                            /* ret: rsp = S */
	return w.ok ? w.len : 0;
}

void hook_arch_patch_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                           uint8_t out[HOOK_ARCH_MAX_PATCH])
{
	int32_t d = (int32_t)(int64_t)(tramp_addr - (plan->fn_addr + 5));

	memcpy(out, plan->original, plan->patch_len);
	out[0] = 0xe9; /* jmp rel32; the tail keeps the original bytes */
	memcpy(out + 1, &d, 4);
}

/* ---- Fast form (both lanes; hook_arch.h, struct hook_arch_fast) ----
 * (The detail lane's additions are described at emit_detail_test and
 * hook_arch_emit_enter_stub: the membership test first, members and
 * flagged frames to the detail handlers' member paths.)
 * The enter stub and the fast return trampoline do what
 * ada_hook_on_enter()/ada_hook_on_exit() do on their fast paths
 * (handlers.c: shadow_enter_fast/shadow_return_fast, ada_emit_to), in
 * the same order and with the same stores, saving only the five
 * registers they use (rax, rcx, rdx, rsi, rdi) instead of every
 * caller-saved one, and reaching the thread's state as %fs:disp32 (the
 * initial-exec offsets the agent computed). Every case they do not take
 * goes to the C handlers with every register saved, as the ordinary
 * trampolines do:
 *   - in_hook already set (btsl found it: a signal handler's call while
 *     a handler runs, or the agent's own work): the full handler, which
 *     finds it set too (its nested path);
 *   - anything else (guard set, stack full or to be grown, a frame to
 *     pop or a tail call, the shared trampoline in the slot, the ring
 *     full or slot not claimed, a flagged or inherited frame at return):
 *     declined before any store, to the _held handler, the full
 *     handler's body after its claim (in_hook stays held throughout);
 *   - QUEUED found by the clear: the C flush with every register saved.
 * The claim is the first instruction and the clear the last store, each
 * one read-modify-write instruction (as in the C handlers), so a signal
 * lands before, after or between them, never inside a transition. */

/* Layout the fast paths hard-code (checked against the structures in
 * handlers.c, agent_fast_layout): struct shadow_entry and struct
 * atf_index_event are 32 bytes each. */
#define FE_ORIG 0x00
#define FE_SLOT 0x08
#define FE_FN 0x10
#define FE_DEPTH 0x18
#define FE_FLAGS 0x1c
#define FV_FN 0x08
#define FV_TID 0x10
#define FV_DEPTH 0x18
#define FV_DSEQ 0x1c
#define EMIT_F_DETAIL 0x4 /* SHADOW_F_DETAIL */

enum {
	FL_FULL,
	FL_HELD,
	FL_DECL,
	FL_FLUSH,
	FL_DONE,
	FL_COMMON,
	FL_DSET,
	FL_ALL,
	FL_NONMEM,
	FL_MEMBER,
	FL_COMMON8,
	FL_MEXIT,
	FL_OTHER,
	FL_MSLOW,
	FL_MEXITC,
	FL_COUNT
};

struct emit_labels {
	size_t at[FL_COUNT];
	size_t fix[64];
	uint8_t to[64];
	size_t n;
};

/* jcc/jmp rel32 to a label, patched by emit_fix. cc < 0: jmp. */
static void emit_jump(struct x86_writer *w, struct emit_labels *l, int cc, int label)
{
	if (cc < 0) {
		x86_put_u8(w, 0xe9);
	} else {
		x86_put_u8(w, 0x0f);
		x86_put_u8(w, (uint8_t)(0x80 | cc));
	}
	if (l->n < sizeof(l->fix) / sizeof(l->fix[0])) {
		l->fix[l->n] = w->len;
		l->to[l->n++] = (uint8_t)label;
	} else {
		w->ok = 0;
	}
	x86_put_u32(w, 0);
}

static void emit_fix(struct x86_writer *w, const struct emit_labels *l)
{
	if (!w->ok)
		return;
	for (size_t i = 0; i < l->n; i++) {
		int32_t d = (int32_t)((int64_t)l->at[l->to[i]] - (int64_t)(l->fix[i] + 4));
		memcpy(w->buf + l->fix[i], &d, 4);
	}
}

#define CC_B 0x2
#define CC_AE 0x3
#define CC_E 0x4
#define CC_NE 0x5
#define CC_BE 0x6
#define CC_A 0x7

/* An instruction with a %fs:disp32 memory operand: prefix 64, the REX
 * byte when rex != 0, the opcode, ModRM (reg, rm = SIB) and SIB (no base,
 * no index: disp32 alone). */
static void emit_fs(struct x86_writer *w, uint8_t rex, uint8_t op, uint8_t reg, int32_t disp)
{
	x86_put_u8(w, 0x64);
	if (rex)
		x86_put_u8(w, rex);
	x86_put_u8(w, op);
	x86_put_u8(w, (uint8_t)(0x04 | reg << 3));
	x86_put_u8(w, 0x25);
	x86_put_u32(w, (uint32_t)disp);
}

#define R_AX 0
#define R_CX 1
#define R_DX 2
#define R_SI 6

/* btsl $0, %fs:in_hook: the claim (CF = the old bit 0). */
static void emit_claim(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_put(w, "\x64\x0f\xba\x2c\x25", 5);
	x86_put_u32(w, (uint32_t)f->s_in_hook);
	x86_put_u8(w, 0x00);
}

/* subl $1, %fs:in_hook: the clear (ZF clear: QUEUED was set too). */
static void emit_clear(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_put(w, "\x64\x83\x2c\x25", 4);
	x86_put_u32(w, (uint32_t)f->s_in_hook);
	x86_put_u8(w, 0x01);
}

/* The event at head (rax): rcx = &events[head & mask]. */
static void emit_event_ptr(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_put(w, "\x48\x89\xc1", 3);             /* mov rcx, rax */
	emit_fs(w, 0x48, 0x23, R_CX, f->p_mask);   /* and rcx, fs:mask */
	x86_put(w, "\x48\xc1\xe1\x05", 4);         /* shl rcx, 5 */
	emit_fs(w, 0x48, 0x03, R_CX, f->p_events); /* add rcx, fs:events */
}

/* The tail of an emit (ada_emit_to): rax = head, rcx = the event with
 * every field but the timestamp written. Leaves rax, rdx, rsi changed. */
static void emit_publish(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_put(w, "\x48\x8d\x70\x01", 4);           /* lea rsi, [rax+1] */
	emit_fs(w, 0x48, 0x89, R_SI, f->p_head);     /* mov fs:head, rsi */
	x86_put(w, "\x0f\x31", 2);                   /* rdtsc */
	x86_put(w, "\x89\x01", 2);                   /* mov [rcx], eax: timestamp lo */
	x86_put(w, "\x89\x51\x04", 3);               /* mov [rcx+4], edx: hi */
	emit_fs(w, 0x48, 0x8b, R_AX, f->p_head_pub); /* mov rax, fs:head_pub */
	/* A plain store is a release on x86_64 (stores are not reordered
	 * with older stores): the event's stores above come first; pairs
	 * with the acquire load of head in ada_index_ring_peek(), as the
	 * release store in ada_emit_to(). */
	x86_put(w, "\x48\x89\x30", 3); /* mov [rax], rsi */
}

static void emit_movabs_rax(struct x86_writer *w, uint64_t v)
{
	x86_put(w, "\x48\xb8", 2);
	x86_put_u64(w, v);
}

#define R_DI 7

/* op reg, [base + disp32] (base one of rax, rcx, rdx, rsi, rdi: no SIB);
 * w64: with REX.W. */
static void emit_md(struct x86_writer *w, int w64, uint8_t op, uint8_t reg, uint8_t base,
                    int32_t disp)
{
	if (w64)
		x86_put_u8(w, 0x48);
	x86_put_u8(w, op);
	x86_put_u8(w, (uint8_t)(0x80 | reg << 3 | base));
	x86_put_u32(w, (uint32_t)disp);
}

/* The detail lane's membership test (hook_arch_fast.detail_hot), run
 * with the stub's registers saved and [rsp+k] the trampoline's return
 * point: what handlers_detail_member() and ada_keysym_test() compute,
 * with the same loads (every key-symbol load masked into the area,
 * 8-byte aligned: ks_ld8). Outside the set: falls through (FL_NONMEM);
 * a member (the "every function" flag, a FULL module, a bitset or own
 * bitmap bit, an own set's `all`): FL_MEMBER; a hash or CRoaring
 * container, a module without a directory entry or with an uncovered one
 * (ADA_KEYSYM_ASK) or an unknown kind: FL_DECL, where the C handler tests
 * again (the own set answers for the module the blob knows nothing of). Nothing is
 * stored. */
static void emit_detail_test(struct x86_writer *w, struct emit_labels *l,
                             const struct hook_arch_fast *f, uint8_t k)
{
	int32_t e = (int32_t)(64 + 16 * (int64_t)f->module); /* the module's directory entry */
	if (f->module >= (1u << 24))
		w->ok = 0; /* module ids are below 2^24 (keysym.h): e and 8 * module fit */
	x86_put(w, "\x48\x8b\x7c\x24", 4); /* mov rdi, [rsp+k]: the return point */
	x86_put_u8(w, k);
	x86_put(w, "\x48\xbe", 2); /* mov rsi, imm64: the hot globals */
	x86_put_u64(w, f->detail_hot);
	emit_md(w, 1, 0x8b, R_AX, R_SI, f->h_ks_cur); /* mov rax, [rsi+ks_cur] */
	/* mov rax, [rax]: the current blob. An acquire load: x86_64 does not
	 * reorder loads with older loads, so the blob's loads below come
	 * after it; pairs with the release store of the current-blob word in
	 * ada_keysym_region_publish() (recorder), as in
	 * handlers_detail_member(). */
	x86_put(w, "\x48\x8b\x00", 3);
	x86_put(w, "\x48\x83\xf8\xff", 4); /* cmp rax, ADA_KEYSYM_CUR_LOCAL (-1) */
	emit_jump(w, l, CC_E, FL_DSET);
	emit_md(w, 1, 0x8b, R_DX, R_SI, f->h_ks_mask); /* mov rdx, [rsi+ks_mask] */
	x86_put(w, "\x48\x83\xe2\xf8", 4);             /* and rdx, -8: the 8-byte mask */
	emit_md(w, 1, 0x8b, R_SI, R_SI, f->h_ks_area); /* mov rsi, [rsi+ks_area] */
	x86_put(w, "\x48\x8d\x48\x08", 4);             /* lea rcx, [rax+8]: flags | n_mods */
	x86_put(w, "\x48\x21\xd1", 3);                 /* and rcx, rdx */
	x86_put(w, "\x48\x8b\x0c\x0e", 4);             /* mov rcx, [rsi+rcx] */
	x86_put(w, "\xf6\xc1\x01", 3);                 /* test cl, ADA_KEYSYM_F_ALL */
	emit_jump(w, l, CC_NE, FL_MEMBER);
	x86_put(w, "\x48\xc1\xe9\x20", 4); /* shr rcx, 32: n_mods */
	x86_put(w, "\x48\x81\xf9", 3);     /* cmp rcx, module */
	x86_put_u32(w, f->module);
	/* No entry (the blob was built before the recorder read this
	 * module, or the module came later): the C handler asks the own
	 * set (agent_detail_ask), as for ADA_KEYSYM_ASK. */
	emit_jump(w, l, CC_BE, FL_DECL);
	x86_put(w, "\x48\x8d\x88", 3); /* lea rcx, [rax+e]: kind | param */
	x86_put_u32(w, (uint32_t)e);
	x86_put(w, "\x48\x21\xd1", 3);     /* and rcx, rdx */
	x86_put(w, "\x48\x8b\x0c\x0e", 4); /* mov rcx, [rsi+rcx] */
	x86_put(w, "\x83\xf9\x01", 3);     /* cmp ecx, ADA_KEYSYM_BITSET */
	emit_jump(w, l, CC_NE, FL_OTHER);
	x86_put(w, "\x48\xc1\xe9\x20", 4); /* shr rcx, 32: param, the bits */
	x86_put(w, "\x8b\x7f", 2);         /* mov edi, [rdi+disp8]: the symbol index */
	x86_put_u8(w, EMIT_FAST_FN_ID_DISP);
	x86_put(w, "\x39\xcf", 2); /* cmp edi, ecx */
	emit_jump(w, l, CC_AE, FL_NONMEM);
	x86_put(w, "\x48\x8d\x88", 3); /* lea rcx, [rax+e+8]: the body's offset */
	x86_put_u32(w, (uint32_t)(e + 8));
	x86_put(w, "\x48\x21\xd1", 3);     /* and rcx, rdx */
	x86_put(w, "\x8b\x0c\x0e", 3);     /* mov ecx, [rsi+rcx]: its low half */
	x86_put(w, "\x48\x01\xc1", 3);     /* add rcx, rax: body */
	x86_put(w, "\x89\xf8", 2);         /* mov eax, edi */
	x86_put(w, "\xc1\xe8\x06", 3);     /* shr eax, 6 */
	x86_put(w, "\x48\x8d\x04\xc1", 4); /* lea rax, [rcx+rax*8] */
	x86_put(w, "\x48\x21\xd0", 3);     /* and rax, rdx */
	x86_put(w, "\x48\x8b\x04\x06", 4); /* mov rax, [rsi+rax]: the bitset word */
	x86_put(w, "\x48\x0f\xa3\xf8", 4); /* bt rax, rdi: bit idx & 63 */
	emit_jump(w, l, CC_B, FL_MEMBER);
	l->at[FL_NONMEM] = w->len; /* falls through: outside the set */
}

/* The test's rarer outcomes, out of the fast path (emitted after it):
 * another container kind, and no blob published yet. */
static void emit_detail_test_cold(struct x86_writer *w, struct emit_labels *l,
                                  const struct hook_arch_fast *f)
{
	l->at[FL_OTHER] = w->len;  /* ecx: the module's container kind */
	x86_put(w, "\x85\xc9", 2); /* test ecx, ecx: ADA_KEYSYM_NONE */
	emit_jump(w, l, CC_E, FL_NONMEM);
	x86_put(w, "\x83\xf9\x04", 3); /* cmp ecx, ADA_KEYSYM_FULL */
	emit_jump(w, l, CC_E, FL_MEMBER);
	emit_jump(w, l, -1, FL_DECL); /* hash, CRoaring, uncovered (ADA_KEYSYM_ASK): C decides */
	/* No blob published yet: the own set (agent_dset_has). */
	l->at[FL_DSET] = w->len;
	/* mov rax, [rsi+dset]: an acquire load as above; pairs with the
	 * release store that publishes a set (agent_detail_set_update()). */
	emit_md(w, 1, 0x8b, R_AX, R_SI, f->h_dset);
	x86_put(w, "\x8b\x7f", 2); /* mov edi, [rdi+disp8]: the symbol index */
	x86_put_u8(w, EMIT_FAST_FN_ID_DISP);
	emit_md(w, 0, 0x3b, R_DI, R_AX, f->d_nbits); /* cmp edi, [rax+nbits] */
	emit_jump(w, l, CC_AE, FL_ALL);
	x86_put(w, "\x48\x81\xb8", 3); /* cmp qword [rax+max_mod], module */
	x86_put_u32(w, (uint32_t)f->d_max_mod);
	x86_put_u32(w, f->module);
	emit_jump(w, l, CC_B, FL_ALL);
	emit_md(w, 1, 0x8b, R_CX, R_AX, f->d_bits); /* mov rcx, [rax+bits] */
	x86_put(w, "\x48\x8b\x89", 3);              /* mov rcx, [rcx+8*module] */
	x86_put_u32(w, 8 * f->module);
	x86_put(w, "\x89\xfa", 2);         /* mov edx, edi */
	x86_put(w, "\xc1\xea\x06", 3);     /* shr edx, 6 */
	x86_put(w, "\x48\x8b\x0c\xd1", 4); /* mov rcx, [rcx+rdx*8] */
	x86_put(w, "\x48\x0f\xa3\xf9", 4); /* bt rcx, rdi */
	emit_jump(w, l, CC_B, FL_MEMBER);
	emit_jump(w, l, -1, FL_NONMEM);
	l->at[FL_ALL] = w->len;    /* outside the bitmaps: what `all` says */
	x86_put(w, "\x83\xb8", 2); /* cmp dword [rax+all], 0 */
	x86_put_u32(w, (uint32_t)f->d_all);
	x86_put_u8(w, 0x00);
	emit_jump(w, l, CC_NE, FL_MEMBER);
	emit_jump(w, l, -1, FL_NONMEM);
}

/* The detail lane's stub saves eight registers, in the order of struct
 * ada_hook_regs' first eight fields (rdi lowest, rbp highest), so that a
 * member's entry (and every decline) calls C with them in place: only
 * r10 and r11 are pushed below them then, and the regs pointer passed
 * skips those two (the handlers never read regs->r10/r11: hook_arch.h).
 * The index lane's saves the five it uses. */
static const uint8_t emit_stub_push5[] = {0x50, 0x51, 0x52, 0x56, 0x57}; /* rax rcx rdx rsi rdi */
static const uint8_t emit_stub_pop5[] = {0x5f, 0x5e, 0x5a, 0x59, 0x58};
/* push rbp, rax, r9, r8, rcx, rdx, rsi, rdi / pop the same */
static const uint8_t emit_stub_push8[] = {0x55, 0x50, 0x41, 0x51, 0x41,
                                          0x50, 0x51, 0x52, 0x56, 0x57};
static const uint8_t emit_stub_pop8[] = {0x5f, 0x5e, 0x5a, 0x59, 0x41,
                                         0x58, 0x41, 0x59, 0x58, 0x5d};
_Static_assert(offsetof(struct ada_hook_regs, rbp) == 56 &&
                   offsetof(struct ada_hook_regs, r10) == 64,
               "the detail stub's eight registers are struct ada_hook_regs' first eight");

/* ---- The detail lane's member paths in machine code (detail_rec) ----
 * A member's call and its return write their detail records here, as
 * handlers_enter_member_fixed() / handlers_exit_member() do on their fast
 * paths (handlers.c): the shadow push (flagged SHADOW_F_DETAIL) or pop,
 * the index event, then the record in the reserved ring space
 * (ada_detail_reserve_fast: the header word, the prefetch 2 KiB ahead),
 * the words detail_put_call_fixed() / put_return() write (in another
 * order: nothing reads them before the published head), and the commit
 * (ada_detail_commit, its dpos store made early). Every test comes before the
 * first store; whatever fails one goes to the C member handler, which
 * does it all again (the general writer: a pad and the next chunk, the
 * clipped snapshot near the stack's top). Plain movs: x86_64 keeps
 * stores in program order, so each is a release (ring.h's
 * ada_detail_put). */
#define R_SP 4
#define R_BP 5
#define R_R8 8
#define R_R9 9
#define EMIT_DREC_CALL_LEN ((14 + 16) * 8)        /* ADA_DREC_CALL_WORDS + the 16 stack words */
#define EMIT_DREC_RETURN_LEN (9 * 8)              /* ADA_DREC_RETURN_WORDS */
#define EMIT_DREC_META_CALL (3ull | 128ull << 32) /* ada_drec_meta(CALL, 0, 128) */
#define EMIT_DREC_META_RETURN 4u                  /* ada_drec_meta(RETURN, 0, 0) */

/* op reg, [base + disp] with any of the 16 registers (REX as needed, a
 * SIB for rsp/r12, disp8 when it fits); op: 1 or 2 opcode bytes. */
static void emit_rm(struct x86_writer *w, int w64, const char *op, size_t oplen, unsigned reg,
                    unsigned base, int32_t disp)
{
	uint8_t rex = (uint8_t)((w64 ? 8 : 0) | (reg & 8 ? 4 : 0) | (base & 8 ? 1 : 0));
	bool d8 = disp >= -128 && disp <= 127;
	if (rex)
		x86_put_u8(w, (uint8_t)(0x40 | rex));
	x86_put(w, op, oplen);
	x86_put_u8(w, (uint8_t)((d8 ? 0x40 : 0x80) | (reg & 7) << 3 | (base & 7)));
	if ((base & 7) == R_SP)
		x86_put_u8(w, 0x24);
	if (d8)
		x86_put_u8(w, (uint8_t)(int8_t)disp);
	else
		x86_put_u32(w, (uint32_t)disp);
}

/* mov reg64, [base+disp] / mov [base+disp], reg64 */
static void emit_ld(struct x86_writer *w, unsigned reg, unsigned base, int32_t disp)
{
	emit_rm(w, 1, "\x8b", 1, reg, base, disp);
}
static void emit_st(struct x86_writer *w, unsigned base, int32_t disp, unsigned reg)
{
	emit_rm(w, 1, "\x89", 1, reg, base, disp);
}

/* op reg, %fs:disp32 with any register (emit_fs with REX.R as needed). */
static void emit_fsr(struct x86_writer *w, int w64, uint8_t op, unsigned reg, int32_t disp)
{
	emit_fs(w, (uint8_t)((w64 ? 0x48 : 0) | (reg & 8 ? 0x44 : 0)), op, (uint8_t)(reg & 7),
	        disp);
}

/* prefetcht0 of the `bytes` bytes 2 KiB past [base]: ada_detail_prefetch
 * for a constant length (one line each 64 bytes; no wrap, no fault: a
 * hint, which orders nothing). The C writer's instruction too (no
 * -mprfchw). */
static void emit_prefetch(struct x86_writer *w, unsigned base, uint32_t bytes)
{
	for (uint32_t q = 0; q < bytes && q < 2048; q += 64)
		emit_rm(w, 0, "\x0f\x18", 2, 1, base, (int32_t)(2048 + q));
}

/* The commit's first store (ada_detail_commit's dpos = end), made as soon
 * as the record's space is taken: dpos is this thread's private copy,
 * read by nothing else while in_hook is held (a signal handler's calls
 * take the side path, which writes no detail record), and it frees the
 * register that held it. */
static void emit_dpos_early(struct x86_writer *w, const struct hook_arch_fast *f, unsigned end)
{
	emit_fsr(w, 1, 0x89, end, f->p_dpos); /* mov fs:dpos, end */
}

/* The commit's rest: dcount, then the published head (= dpos, reloaded
 * into `tmp2`), a plain store = a release, after every store of the
 * record; pairs with the acquire load of head in
 * ada_detail_ring_snapshot(). Uses tmp and tmp2. */
static void emit_dcommit(struct x86_writer *w, const struct hook_arch_fast *f, unsigned tmp,
                         unsigned tmp2)
{
	x86_put(w, "\x64\x83\x04\x25", 4); /* addl $1, fs:dcount (ours alone) */
	x86_put_u32(w, (uint32_t)f->p_dcount);
	x86_put_u8(w, 0x01);
	emit_fsr(w, 1, 0x8b, tmp, f->p_dhead); /* mov tmp, fs:dhead */
	emit_fsr(w, 1, 0x8b, tmp2, f->p_dpos); /* mov tmp2, fs:dpos: the end */
	emit_st(w, tmp, 0, tmp2);              /* mov [tmp], tmp2: the release */
}

/* The CALL record's 16-byte copies go through one vector register, saved
 * in the red zone below the stub's rsp and restored after (nothing lives
 * below rsp here; the kernel puts a signal frame 128 bytes further
 * down): the hooked function's vector registers are as it was called
 * with. movups, legacy SSE (baseline x86_64; upper ymm/zmm bits are kept
 * by the hardware either way). Each 16-byte store writes two of the
 * record's 8-byte aligned words, in program order with every other
 * store (x86_64 keeps stores in order), before the published head: what
 * two ada_detail_put's do (the drain reads no word of the record before
 * that head, so nothing needs the two halves to land together). */
#define EMIT_XTMP 15u

/* movups xtmp, [base+disp] / movups [base+disp], xtmp */
static void emit_xld(struct x86_writer *w, unsigned base, int32_t disp)
{
	emit_rm(w, 0, "\x0f\x10", 2, EMIT_XTMP, base, disp);
}
static void emit_xst(struct x86_writer *w, unsigned base, int32_t disp)
{
	emit_rm(w, 0, "\x0f\x11", 2, EMIT_XTMP, base, disp);
}

/* The enter stub's member path (k = 64: the eight registers at
 * [rsp+0..56], the trampoline's return point at [rsp+64], the slot at
 * [rsp+72]). In: in_hook held, the guard clear, fn_id a member. Scratch:
 * rax rcx rdx rsi rdi r8 r9 rbp (all saved; r10/r11 untouched) and
 * xmm15 (saved at [rsp-16] while used). The record's words are stored
 * in another order than detail_put_call_fixed()'s (same values; the
 * ring's reader sees none of them before the published head): the
 * copies first, while the slot still holds orig (stack word 0) and rbp
 * its value at the call, then what the shadow push and the event
 * compute. */
static void emit_member_call(struct x86_writer *w, struct emit_labels *l,
                             const struct hook_arch_fast *f)
{
	/* The index path's tests (the stub's, with orig in r8). */
	emit_fs(w, 0, 0x8b, R_CX, f->s_top);     /* mov ecx, fs:top */
	emit_fs(w, 0, 0x3b, R_CX, f->s_cap);     /* cmp ecx, fs:cap */
	emit_jump(w, l, CC_AE, FL_MSLOW);        /* full: to grow */
	x86_put(w, "\x89\xce", 2);               /* mov esi, ecx */
	x86_put(w, "\x48\xc1\xe6\x05", 4);       /* shl rsi, 5 */
	emit_fs(w, 0x48, 0x03, R_SI, f->s_base); /* add rsi, fs:base: &base[top] */
	x86_put(w, "\x48\x8d\x7c\x24\x48", 5);   /* lea rdi, [rsp+72]: the slot */
	x86_put(w, "\x48\x39\x7e\xe8", 4);       /* cmp [rsi-24], rdi: base[top-1].slot */
	emit_jump(w, l, CC_BE, FL_MSLOW);        /* dead frames, a tail call */
	emit_ld(w, R_R8, R_DI, 0);               /* mov r8, [rdi]: orig */
	emit_movabs_rax(w, f->ret_tramp);
	x86_put(w, "\x49\x39\xc0", 3);            /* cmp r8, rax */
	emit_jump(w, l, CC_E, FL_MSLOW);          /* the shared trampoline */
	emit_fs(w, 0x48, 0x8b, R_AX, f->p_head);  /* mov rax, fs:head */
	emit_fs(w, 0x48, 0x3b, R_AX, f->p_limit); /* cmp rax, fs:limit */
	emit_jump(w, l, CC_AE, FL_MSLOW);         /* the ring's slow path */
	/* The whole snapshot: rsp - dfast_lo <= dfast_span (unsigned), the
	 * bound handlers_detail_call_fast tests (stack_hi - 128 at most, so
	 * slot[15] is below the stack's top). */
	x86_put(w, "\x48\x89\xfa", 3);                 /* mov rdx, rdi */
	emit_fs(w, 0x48, 0x2b, R_DX, f->s_dfast_lo);   /* sub rdx, fs:dfast_lo */
	emit_fs(w, 0x48, 0x3b, R_DX, f->s_dfast_span); /* cmp rdx, fs:dfast_span */
	emit_jump(w, l, CC_A, FL_MSLOW);
	/* Room in the chunk (ada_detail_reserve_fast): pos + 8 + len <=
	 * dstop; no ring: dstop == dpos == 0 fails it too. */
	emit_fsr(w, 1, 0x8b, R_R9, f->p_dpos);                        /* mov r9, fs:dpos */
	emit_rm(w, 1, "\x8d", 1, R_DX, R_R9, 8 + EMIT_DREC_CALL_LEN); /* lea rdx, [r9+248] */
	emit_fs(w, 0x48, 0x3b, R_DX, f->p_dstop);                     /* cmp rdx, fs:dstop */
	emit_jump(w, l, CC_A, FL_MSLOW);
	/* Taken: nothing was stored before this point. The record at
	 * r9 = dwords + (dpos & (dbytes - 1)) (a chunk never wraps: ring.h). */
	emit_dpos_early(w, f, R_DX);
	emit_fs(w, 0x48, 0x8b, R_DX, f->p_dbytes); /* mov rdx, fs:dbytes */
	x86_put(w, "\x48\xff\xca", 3);             /* dec rdx */
	x86_put(w, "\x49\x21\xd1", 3);             /* and r9, rdx */
	emit_fsr(w, 1, 0x03, R_R9, f->p_dwords);   /* add r9, fs:dwords */
	emit_prefetch(w, R_R9, 8 + EMIT_DREC_CALL_LEN);
	/* The header word: a release (plain mov), pairs with the acquire
	 * loads of the drain's copy (ada_detail_ring_snapshot). */
	x86_put(w, "\x49\xc7\x01", 3); /* mov qword [r9], len */
	x86_put_u32(w, EMIT_DREC_CALL_LEN);
	emit_xst(w, R_SP, -16); /* movups [rsp-16], xmm15: saved */
	/* Words 4..11 from the save area: rdi rsi rdx rcx r8 r9 rax, then
	 * rbp into word 11, which orig overwrites below. */
	for (int i = 0; i < 4; i++) {
		emit_xld(w, R_SP, 16 * i);
		emit_xst(w, R_R9, 8 + 8 * (4 + 2 * i));
	}
	/* The snapshot: slot[0..15] (slot[0] is orig until the push). */
	for (int i = 0; i < 8; i++) {
		emit_xld(w, R_DI, 16 * i);
		emit_xst(w, R_R9, 8 + 8 * (14 + 2 * i));
	}
	emit_xld(w, R_SP, -16);             /* movups xmm15, [rsp-16]: restored */
	emit_st(w, R_R9, 8 + 8 * 11, R_R8); /* orig */
	emit_st(w, R_R9, 8 + 8 * 12, R_BP); /* rbp, still as at the call */
	emit_st(w, R_R9, 8 + 8 * 13, R_DI); /* rsp at entry: the slot */
	x86_put(w, "\x48\xba", 2);          /* mov rdx, imm64: meta */
	x86_put_u64(w, EMIT_DREC_META_CALL);
	emit_st(w, R_R9, 8 + 8 * 3, R_DX);
	/* The shadow push (shadow_enter_fast with SHADOW_F_DETAIL). */
	emit_st(w, R_SI, 0, R_R8);                     /* mov [rsi], r8: orig */
	x86_put(w, "\x48\x89\x7e\x08", 4);             /* mov [rsi+8], rdi: slot */
	x86_put(w, "\x48\xc7\x07\x00\x00\x00\x00", 7); /* mov qword [rdi], 0: SHADOW_SLOT_CALL */
	emit_ld(w, R_BP, R_SP, 64);                    /* mov rbp, [rsp+64]: the return point */
	emit_ld(w, R_BP, R_BP, EMIT_FAST_FN_ID_DISP);  /* mov rbp, [rbp+17]: fn_id */
	emit_st(w, R_SI, 16, R_BP);                    /* mov [rsi+16], rbp */
	emit_st(w, R_R9, 8 + 8 * 2, R_BP);             /* the record's fn_id */
	x86_put(w, "\x8d\x51\x01", 3);                 /* lea edx, [rcx+1] */
	emit_fs(w, 0, 0x89, R_DX, f->s_top);           /* mov fs:top, edx */
	emit_fs(w, 0, 0x2b, R_DX, f->s_inherited);     /* sub edx, fs:inherited: the depth */
	x86_put(w, "\x48\x0f\xba\xea\x22", 5);         /* bts rdx, 34: SHADOW_F_DETAIL << 32 */
	x86_put(w, "\x48\x89\x56\x18", 4);             /* mov [rsi+24], rdx: one store */
	/* The CALL event (ada_emit_fast_ts), its head and ts kept. */
	emit_event_ptr(w, f);
	emit_st(w, R_CX, 8, R_BP);                     /* mov [rcx+8], rbp: function_id */
	x86_put(w, "\x89\x51\x18", 3);                 /* mov [rcx+24], edx: call_depth */
	x86_put(w, "\xc7\x41\x1c\xff\xff\xff\xff", 7); /* mov dword [rcx+28], ATF_NO_DETAIL */
	emit_fs(w, 0x48, 0x8b, R_SI, f->p_tid_call);   /* mov rsi, fs:tid_call */
	x86_put(w, "\x48\x89\x71\x10", 4);             /* mov [rcx+16], rsi */
	emit_st(w, R_R9, 8 + 8 * 1, R_AX);             /* link = the event's head */
	x86_put(w, "\x48\x8d\x70\x01", 4);             /* lea rsi, [rax+1] */
	emit_fs(w, 0x48, 0x89, R_SI, f->p_head);       /* mov fs:head, rsi */
	x86_put(w, "\x0f\x31", 2);                     /* rdtsc */
	x86_put(w, "\x48\xc1\xe2\x20", 4);             /* shl rdx, 32 */
	x86_put(w, "\x48\x09\xc2", 3);                 /* or rdx, rax: ts */
	x86_put(w, "\x48\x89\x11", 3);                 /* mov [rcx], rdx: timestamp */
	emit_st(w, R_R9, 8 + 8 * 0, R_DX);             /* the record's ts */
	emit_fs(w, 0x48, 0x8b, R_CX, f->p_head_pub);   /* mov rcx, fs:head_pub */
	/* A plain store is a release: the event's stores come first; pairs
	 * with the acquire load of head in ada_index_ring_peek() (as the
	 * release store in ada_emit_fast_ts()). */
	x86_put(w, "\x48\x89\x31", 3); /* mov [rcx], rsi */
	emit_dcommit(w, f, R_CX, R_DX);
	emit_clear(w, f);
	emit_jump(w, l, CC_NE, FL_FLUSH);
	x86_put(w, emit_stub_pop8, sizeof(emit_stub_pop8)); /* FL_DONE's, inline */
	x86_put_u8(w, 0xc3);                                /* ret: ZF set */
}

/* The return trampoline's member path: the top frame, above the
 * inherited ones, owns the slot and is flagged exactly SHADOW_F_DETAIL;
 * ecx = top, rsi = &base[top], rax rdx rcx rsi rdi saved at [rsp+32 ..
 * 0] (S-8 .. S-40). Leaves orig in rdi for FL_DONE / FL_FLUSH. */
static void emit_member_return(struct x86_writer *w, struct emit_labels *l,
                               const struct hook_arch_fast *f)
{
	emit_fs(w, 0x48, 0x8b, R_AX, f->p_head);  /* mov rax, fs:head */
	emit_fs(w, 0x48, 0x3b, R_AX, f->p_limit); /* cmp rax, fs:limit */
	emit_jump(w, l, CC_AE, FL_MEXITC);
	emit_fs(w, 0x48, 0x8b, R_DX, f->p_dpos); /* mov rdx, fs:dpos */
	x86_put(w, "\x48\x83\xc2", 3);           /* add rdx, 8 + len: end */
	x86_put_u8(w, 8 + EMIT_DREC_RETURN_LEN);
	emit_fs(w, 0x48, 0x3b, R_DX, f->p_dstop); /* cmp rdx, fs:dstop */
	emit_jump(w, l, CC_A, FL_MEXITC);
	/* Taken: nothing was stored before this point. The record at rdi. */
	emit_fs(w, 0x48, 0x8b, R_DI, f->p_dbytes); /* mov rdi, fs:dbytes */
	x86_put(w, "\x48\xff\xcf", 3);             /* dec rdi */
	emit_fs(w, 0x48, 0x23, R_DI, f->p_dpos);   /* and rdi, fs:dpos */
	emit_fs(w, 0x48, 0x03, R_DI, f->p_dwords); /* add rdi, fs:dwords */
	emit_dpos_early(w, f, R_DX);
	emit_prefetch(w, R_DI, 8 + EMIT_DREC_RETURN_LEN);
	/* The header word: a release, pairs with the drain copy's acquire
	 * loads (ada_detail_ring_snapshot). */
	x86_put(w, "\x48\xc7\x07", 3); /* mov qword [rdi], len */
	x86_put_u32(w, EMIT_DREC_RETURN_LEN);
	/* The pop (the entry is read after top drops, as on the index
	 * path). */
	x86_put(w, "\xff\xc9", 2);           /* dec ecx */
	emit_fs(w, 0, 0x89, R_CX, f->s_top); /* mov fs:top, ecx */
	emit_event_ptr(w, f);
	emit_ld(w, R_DX, R_SI, -16);                   /* mov rdx, [rsi-16]: fn_id */
	x86_put(w, "\x48\x89\x51\x08", 4);             /* mov [rcx+8], rdx: function_id */
	emit_st(w, R_DI, 8 + 8 * 2, R_DX);             /* the record's fn_id */
	x86_put(w, "\x8b\x56\xf8", 3);                 /* mov edx, [rsi-8]: depth */
	x86_put(w, "\x89\x51\x18", 3);                 /* mov [rcx+24], edx: call_depth */
	x86_put(w, "\xc7\x41\x1c\xff\xff\xff\xff", 7); /* mov dword [rcx+28], ATF_NO_DETAIL */
	emit_fs(w, 0x48, 0x8b, R_DX, f->p_tid_return); /* mov rdx, fs:tid_return */
	x86_put(w, "\x48\x89\x51\x10", 4);             /* mov [rcx+16], rdx */
	x86_put(w, "\x48\xc7\x47\x20", 4);             /* mov qword [rdi+32], meta */
	x86_put_u32(w, EMIT_DREC_META_RETURN);
	emit_ld(w, R_DX, R_SP, 32); /* rax (S-8) */
	emit_st(w, R_DI, 8 + 8 * 4, R_DX);
	emit_ld(w, R_DX, R_SP, 24); /* rdx (S-16) */
	emit_st(w, R_DI, 8 + 8 * 5, R_DX);
	emit_ld(w, R_DX, R_SI, -32); /* orig: where it returns to */
	emit_st(w, R_DI, 8 + 8 * 6, R_DX);
	emit_st(w, R_DI, 8 + 8 * 7, R_BP);     /* rbp: callee-saved, as the function left it */
	x86_put(w, "\x48\x8d\x54\x24\x28", 5); /* lea rdx, [rsp+40]: S */
	emit_st(w, R_DI, 8 + 8 * 8, R_DX);
	emit_st(w, R_DI, 8 + 8 * 1, R_AX);           /* link = the event's head */
	x86_put(w, "\x48\x8d\x70\x01", 4);           /* lea rsi, [rax+1] */
	emit_fs(w, 0x48, 0x89, R_SI, f->p_head);     /* mov fs:head, rsi */
	x86_put(w, "\x0f\x31", 2);                   /* rdtsc */
	x86_put(w, "\x48\xc1\xe2\x20", 4);           /* shl rdx, 32 */
	x86_put(w, "\x48\x09\xd0", 3);               /* or rax, rdx: ts */
	x86_put(w, "\x48\x89\x01", 3);               /* mov [rcx], rax: timestamp */
	emit_st(w, R_DI, 8 + 8 * 0, R_AX);           /* the record's ts */
	emit_fs(w, 0x48, 0x8b, R_CX, f->p_head_pub); /* mov rcx, fs:head_pub */
	/* Release (plain store): pairs with the acquire load of head in
	 * ada_index_ring_peek(), as in ada_emit_fast_ts(). */
	x86_put(w, "\x48\x89\x31", 3); /* mov [rcx], rsi */
	emit_dcommit(w, f, R_CX, R_DX);
	emit_ld(w, R_DI, R_DI, 8 + 8 * 6); /* mov rdi, [rdi+56]: orig, as stored */
	emit_clear(w, f);
	emit_jump(w, l, CC_NE, FL_FLUSH);
	/* FL_DONE's, inline: orig into S-8, rax back, ret. */
	x86_put(w, "\x48\x8b\x44\x24\x20", 5); /* mov rax, [rsp+32]: the saved rax */
	x86_put(w, "\x48\x89\x7c\x24\x20", 5); /* mov [rsp+32], rdi: orig into S-8 */
	x86_put(w, "\x5f\x5e\x59\x5a", 4);     /* pop rdi, rsi, rcx, rdx: rsp = S-8 */
	x86_put_u8(w, 0xc3);                   /* ret to orig: rsp = S */
}

size_t hook_arch_emit_enter_stub(uint8_t *buf, uint64_t buf_addr, const struct hook_arch_fast *f)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_ENTER_STUB_MAX, buf_addr, 1};
	struct emit_labels l = {0};
	bool detail = f->detail_hot != 0;
	/* Bytes the stub pushes: [rsp+k] is then the trampoline's return
	 * point, [rsp+k+8] the function's return slot. */
	uint8_t k = detail ? 64 : 40;

	/* Entry: [rsp] = the trampoline's return point (its fn_id at
	 * [rsp] + EMIT_FAST_FN_ID_DISP), [rsp+8] = the function's return
	 * slot. */
	emit_claim(&w, f);
	emit_jump(&w, &l, CC_B, FL_FULL);
	x86_put(&w, "\x64\x83\x3c\x25", 4); /* cmpl $0, fs:guard */
	x86_put_u32(&w, (uint32_t)f->s_guard);
	x86_put_u8(&w, 0x00);
	emit_jump(&w, &l, CC_NE, FL_HELD);
	if (detail) {
		x86_put(&w, emit_stub_push8, sizeof(emit_stub_push8));
		emit_detail_test(&w, &l, f, k); /* members and "ask" go to C */
	} else {
		x86_put(&w, emit_stub_push5, sizeof(emit_stub_push5));
	}
	emit_fs(&w, 0, 0x8b, R_CX, f->s_top);     /* mov ecx, fs:top */
	emit_fs(&w, 0, 0x3b, R_CX, f->s_cap);     /* cmp ecx, fs:cap */
	emit_jump(&w, &l, CC_AE, FL_DECL);        /* full: to grow */
	x86_put(&w, "\x89\xce", 2);               /* mov esi, ecx */
	x86_put(&w, "\x48\xc1\xe6\x05", 4);       /* shl rsi, 5 */
	emit_fs(&w, 0x48, 0x03, R_SI, f->s_base); /* add rsi, fs:base: &base[top] */
	x86_put(&w, "\x48\x8d\x7c\x24", 4);       /* lea rdi, [rsp+k+8]: the slot */
	x86_put_u8(&w, (uint8_t)(k + 8));
	x86_put(&w, "\x48\x39\x7e\xe8", 4); /* cmp [rsi-24], rdi: base[top-1].slot */
	emit_jump(&w, &l, CC_BE, FL_DECL);  /* <= slot: dead frames, a tail call */
	x86_put(&w, "\x48\x8b\x17", 3);     /* mov rdx, [rdi]: the return address */
	emit_movabs_rax(&w, f->ret_tramp);
	x86_put(&w, "\x48\x39\xc2", 3);            /* cmp rdx, rax */
	emit_jump(&w, &l, CC_E, FL_DECL);          /* the shared trampoline */
	emit_fs(&w, 0x48, 0x8b, R_AX, f->p_head);  /* mov rax, fs:head */
	emit_fs(&w, 0x48, 0x3b, R_AX, f->p_limit); /* cmp rax, fs:limit */
	emit_jump(&w, &l, CC_AE, FL_DECL);         /* the ring's slow path */
	/* Taken: nothing was stored before this point. */
	x86_put(&w, "\x48\x89\x16", 3);                 /* mov [rsi], rdx: orig */
	x86_put(&w, "\x48\x89\x7e\x08", 4);             /* mov [rsi+8], rdi: slot */
	x86_put(&w, "\x48\xc7\x07\x00\x00\x00\x00", 7); /* mov qword [rdi], 0: SHADOW_SLOT_CALL */
	x86_put(&w, "\x48\x8b\x7c\x24", 4);             /* mov rdi, [rsp+k]: the return point */
	x86_put_u8(&w, k);
	x86_put(&w, "\x48\x8b\x7f", 3); /* mov rdi, [rdi+disp8]: fn_id */
	x86_put_u8(&w, EMIT_FAST_FN_ID_DISP);
	x86_put(&w, "\x48\x89\x7e\x10", 4);         /* mov [rsi+16], rdi: fn_id */
	x86_put(&w, "\x8d\x51\x01", 3);             /* lea edx, [rcx+1] */
	emit_fs(&w, 0, 0x89, R_DX, f->s_top);       /* mov fs:top, edx */
	emit_fs(&w, 0, 0x2b, R_DX, f->s_inherited); /* sub edx, fs:inherited: the depth */
	x86_put(&w, "\x48\x89\x56\x18", 4);         /* mov [rsi+24], rdx: depth, flags 0 */
	emit_event_ptr(&w, f);
	x86_put(&w, "\x48\x89\x79\x08", 4);             /* mov [rcx+8], rdi: function_id */
	x86_put(&w, "\x89\x51\x18", 3);                 /* mov [rcx+24], edx: call_depth */
	x86_put(&w, "\xc7\x41\x1c\xff\xff\xff\xff", 7); /* mov dword [rcx+28], ATF_NO_DETAIL */
	emit_fs(&w, 0x48, 0x8b, R_SI, f->p_tid_call);   /* mov rsi, fs:tid_call */
	x86_put(&w, "\x48\x89\x71\x10", 4);             /* mov [rcx+16], rsi: thread_id | CALL */
	emit_publish(&w, f);
	emit_clear(&w, f);
	emit_jump(&w, &l, CC_NE, FL_FLUSH);
	l.at[FL_DONE] = w.len;
	if (detail)
		x86_put(&w, emit_stub_pop8, sizeof(emit_stub_pop8));
	else
		x86_put(&w, emit_stub_pop5, sizeof(emit_stub_pop5));
	x86_put_u8(&w, 0xc3); /* ret: ZF set (the slot holds 0) */
	/* The side queue to replay: the C flush, every register saved. */
	l.at[FL_FLUSH] = w.len;
	x86_put(&w, "\x41\x50\x41\x51\x41\x52\x41\x53", 8); /* push r8-r11 */
	emit_movabs_rax(&w, f->flush);
	x86_put(&w, "\xff\xd0", 2);                         /* call rax */
	x86_put(&w, "\x41\x5b\x41\x5a\x41\x59\x41\x58", 8); /* pop r11-r8 */
	x86_put(&w, "\x39\xc0", 2);                         /* cmp eax, eax: ZF set */
	emit_jump(&w, &l, -1, FL_DONE);
	if (detail) {
		/* Declined or a member, with in_hook held and the eight
		 * registers in place: r11 and r10 below them, regs = rsp+16. */
		l.at[FL_DECL] = w.len;
		x86_put(&w, "\x41\x53\x41\x52", 4); /* push r11, r10 */
		emit_movabs_rax(&w, f->enter_held);
		emit_jump(&w, &l, -1, FL_COMMON8);
		l.at[FL_MEMBER] = w.len;
		if (f->detail_rec)
			emit_member_call(&w, &l, f); /* the record in machine code */
		l.at[FL_MSLOW] = w.len;
		x86_put(&w, "\x41\x53\x41\x52", 4); /* push r11, r10 */
		emit_movabs_rax(&w, f->enter_member);
		l.at[FL_COMMON8] = w.len;
		x86_put(&w, "\x48\x8b\x7c\x24\x50", 5); /* mov rdi, [rsp+80]: the return point */
		x86_put(&w, "\x48\x8b\x7f", 3);         /* mov rdi, [rdi+disp8]: fn_id */
		x86_put_u8(&w, EMIT_FAST_FN_ID_DISP);
		x86_put(&w, "\x48\x8d\x74\x24\x58", 5); /* lea rsi, [rsp+88]: ret_slot */
		x86_put(&w, "\x48\x8d\x54\x24\x10", 5); /* lea rdx, [rsp+16]: regs */
		x86_put(&w, "\xff\xd0", 2);             /* call rax */
		x86_put(&w, "\x41\x5a\x41\x5b", 4);     /* pop r10, r11 */
		x86_put(&w, emit_stub_pop8, sizeof(emit_stub_pop8));
		x86_put(&w, "\x48\x83\x7c\x24\x08\x00", 6); /* cmp qword [rsp+8], 0 */
		x86_put_u8(&w, 0xc3);                       /* ret: ZF tells the trampoline */
	} else {
		/* Declined with in_hook held: the C handler's body after its claim. */
		l.at[FL_DECL] = w.len;
		x86_put(&w, emit_stub_pop5, sizeof(emit_stub_pop5));
	}
	l.at[FL_HELD] = w.len;
	x86_put(&w, emit_push_regs, sizeof(emit_push_regs));
	emit_movabs_rax(&w, f->enter_held);
	emit_jump(&w, &l, -1, FL_COMMON);
	l.at[FL_FULL] = w.len;
	x86_put(&w, emit_push_regs, sizeof(emit_push_regs));
	emit_movabs_rax(&w, f->enter_full);
	/* The ordinary trampoline's call, with the regs and slot one return
	 * address further up. */
	l.at[FL_COMMON] = w.len;
	x86_put(&w, "\x48\x8b\x7c\x24\x50", 5); /* mov rdi, [rsp+80]: the return point */
	x86_put(&w, "\x48\x8b\x7f", 3);         /* mov rdi, [rdi+disp8]: fn_id */
	x86_put_u8(&w, EMIT_FAST_FN_ID_DISP);
	x86_put(&w, "\x48\x8d\x74\x24\x58", 5); /* lea rsi, [rsp+88]: ret_slot */
	x86_put(&w, "\x48\x89\xe2", 3);         /* mov rdx, rsp: regs */
	x86_put(&w, "\xff\xd0", 2);             /* call rax */
	x86_put(&w, emit_pop_regs, sizeof(emit_pop_regs));
	x86_put(&w, "\x48\x83\x7c\x24\x08\x00", 6); /* cmp qword [rsp+8], 0: a frame pushed? */
	x86_put_u8(&w, 0xc3);                       /* ret: ZF tells the trampoline */
	if (detail)
		emit_detail_test_cold(&w, &l, f);
	emit_fix(&w, &l);
	return w.ok ? w.len : 0;
}

size_t hook_arch_emit_return_trampoline_fast(uint8_t *buf, uint64_t buf_addr,
                                             const struct hook_arch_fast *f)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, buf_addr, 1};
	struct emit_labels l = {0};

	/* Entry: rsp = S (after the function's ret), S-8 the dead slot. */
	emit_claim(&w, f);
	emit_jump(&w, &l, CC_B, FL_FULL);
	/* push rax (at S-8), rdx, rcx, rsi, rdi: the first five of the
	 * ordinary return trampoline's save area (emit_ret_push), so a
	 * decline only pushes the rest. */
	x86_put(&w, emit_ret_push, 5);
	emit_fs(&w, 0, 0x8b, R_CX, f->s_top);       /* mov ecx, fs:top */
	emit_fs(&w, 0, 0x39, R_CX, f->s_inherited); /* cmp fs:inherited, ecx */
	emit_jump(&w, &l, CC_AE, FL_DECL);          /* top <= inherited (0 too) */
	x86_put(&w, "\x89\xce", 2);                 /* mov esi, ecx */
	x86_put(&w, "\x48\xc1\xe6\x05", 4);         /* shl rsi, 5 */
	emit_fs(&w, 0x48, 0x03, R_SI, f->s_base);   /* add rsi, fs:base: &base[top] */
	x86_put(&w, "\x48\x8d\x7c\x24\x20", 5);     /* lea rdi, [rsp+32]: S-8 */
	x86_put(&w, "\x48\x39\x7e\xe8", 4);         /* cmp [rsi-24], rdi: the top frame's slot */
	emit_jump(&w, &l, CC_NE, FL_DECL);
	x86_put(&w, "\x83\x7e\xfc\x00", 4); /* cmp dword [rsi-4], 0: its flags */
	emit_jump(&w, &l, CC_NE, f->detail_hot ? FL_MEXIT : FL_DECL);
	emit_fs(&w, 0x48, 0x8b, R_AX, f->p_head);  /* mov rax, fs:head */
	emit_fs(&w, 0x48, 0x3b, R_AX, f->p_limit); /* cmp rax, fs:limit */
	emit_jump(&w, &l, CC_AE, FL_DECL);
	/* Taken: nothing was stored before this point. The entry is read
	 * after top drops: while in_hook is held nothing writes above top
	 * (a signal handler's calls take the side path). */
	x86_put(&w, "\xff\xc9", 2);           /* dec ecx */
	emit_fs(&w, 0, 0x89, R_CX, f->s_top); /* mov fs:top, ecx */
	emit_event_ptr(&w, f);
	x86_put(&w, "\x48\x8b\x7e\xf0", 4);             /* mov rdi, [rsi-16]: fn_id */
	x86_put(&w, "\x48\x89\x79\x08", 4);             /* mov [rcx+8], rdi: function_id */
	x86_put(&w, "\x8b\x56\xf8", 3);                 /* mov edx, [rsi-8]: depth */
	x86_put(&w, "\x89\x51\x18", 3);                 /* mov [rcx+24], edx: call_depth */
	x86_put(&w, "\xc7\x41\x1c\xff\xff\xff\xff", 7); /* mov dword [rcx+28], ATF_NO_DETAIL */
	emit_fs(&w, 0x48, 0x8b, R_DX, f->p_tid_return); /* mov rdx, fs:tid_return */
	x86_put(&w, "\x48\x89\x51\x10", 4);             /* mov [rcx+16], rdx: thread_id | RETURN */
	x86_put(&w, "\x48\x8b\x7e\xe0", 4);             /* mov rdi, [rsi-32]: orig */
	emit_publish(&w, f);
	emit_clear(&w, f);
	emit_jump(&w, &l, CC_NE, FL_FLUSH);
	l.at[FL_DONE] = w.len;
	x86_put(&w, "\x48\x8b\x44\x24\x20", 5); /* mov rax, [rsp+32]: the saved rax */
	x86_put(&w, "\x48\x89\x7c\x24\x20", 5); /* mov [rsp+32], rdi: orig into S-8 */
	x86_put(&w, "\x5f\x5e\x59\x5a", 4);     /* pop rdi, rsi, rcx, rdx: rsp = S-8 */
	x86_put_u8(&w, 0xc3);                   /* ret to orig: rsp = S */
	l.at[FL_FLUSH] = w.len;
	x86_put(&w, "\x41\x50\x41\x51\x41\x52\x41\x53", 8); /* push r8-r11 */
	x86_put_u8(&w, 0x57);                               /* push rdi: orig */
	emit_movabs_rax(&w, f->flush);
	x86_put(&w, "\xff\xd0", 2);                         /* call rax */
	x86_put_u8(&w, 0x5f);                               /* pop rdi */
	x86_put(&w, "\x41\x5b\x41\x5a\x41\x59\x41\x58", 8); /* pop r11-r8 */
	emit_jump(&w, &l, -1, FL_DONE);
	if (f->detail_hot) {
		/* A flagged frame: exactly SHADOW_F_DETAIL (a member's call,
		 * its CALL record written) goes to the member exit, which
		 * pops it (this path found it the top frame, above the
		 * inherited ones, owning the slot); any other flag declines. */
		l.at[FL_MEXIT] = w.len;
		x86_put(&w, "\x83\x7e\xfc", 3); /* cmp dword [rsi-4], SHADOW_F_DETAIL */
		x86_put_u8(&w, EMIT_F_DETAIL);
		emit_jump(&w, &l, CC_NE, FL_DECL);
		if (f->detail_rec)
			emit_member_return(&w, &l, f); /* the record in machine code */
		l.at[FL_MEXITC] = w.len;
		x86_put(&w, emit_ret_push + 5, sizeof(emit_ret_push) - 5); /* push r8-r11 */
		x86_put_u8(&w, 0x55);                                      /* push rbp */
		emit_movabs_rax(&w, f->exit_member);
		emit_jump(&w, &l, -1, FL_COMMON);
	}
	/* Declined, in_hook held: the rest of the save area, the C handler's
	 * body after its claim. */
	l.at[FL_DECL] = w.len;
	x86_put(&w, emit_ret_push + 5, sizeof(emit_ret_push) - 5); /* push r8-r11 */
	x86_put_u8(&w, 0x55);                                      /* push rbp */
	emit_movabs_rax(&w, f->exit_held);
	emit_jump(&w, &l, -1, FL_COMMON);
	l.at[FL_FULL] = w.len;
	x86_put(&w, emit_ret_push, sizeof(emit_ret_push));
	x86_put_u8(&w, 0x55); /* push rbp */
	emit_movabs_rax(&w, f->exit_full);
	/* The ordinary return trampoline after its handler's address (rbp at
	 * S-80 for the RETURN record). */
	l.at[FL_COMMON] = w.len;
	x86_put(&w, "\x48\x8d\x7c\x24\x50", 5);          /* lea rdi, [rsp+80] = S */
	x86_put(&w, "\xff\xd0", 2);                      /* call rax: rax = original return */
	x86_put_u8(&w, 0x5d);                            /* pop rbp */
	x86_put(&w, "\x4c\x8b\x5c\x24\x40", 5);          /* mov r11, [rsp+64] (saved rax) */
	x86_put(&w, "\x48\x89\x44\x24\x40", 5);          /* mov [rsp+64], rax (S-8) */
	x86_put(&w, "\x4c\x89\xd8", 3);                  /* mov rax, r11 */
	x86_put(&w, emit_ret_pop, sizeof(emit_ret_pop)); /* rsp = S-8 */
	x86_put_u8(&w, 0xc3);                            /* ret: rsp = S */
	emit_fix(&w, &l);
	return w.ok ? w.len : 0;
}
