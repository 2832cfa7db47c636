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

/* The trampoline, and where each displaced instruction's relocated form
 * starts in it (starts[i], bytes from buf; may be NULL). */
static size_t emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                              uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path,
                              size_t starts[HOOK_ARCH_MAX_INSNS])
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_MAX_TRAMPOLINE, buf_addr, 1};

	if (plan->patch_len < 5 || plan->insn_count == 0 ||
	    plan->insn_count > HOOK_ARCH_MAX_INSNS ||
	    !x86_fits_rel32((int64_t)(buf_addr - (plan->fn_addr + 5))))
		return 0;
	emit_enter_frame(&w, fn_id, enter_handler, exit_path);
	if (w.len != HOOK_ARCH_RET_POINT_OFF + 5)
		return 0;
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
	return emit_trampoline(plan, buf, buf_addr, fn_id, enter_handler, exit_path, NULL);
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
	size_t n = emit_trampoline(plan, buf, tramp_addr, 0, 0, tramp_addr, starts);
	if (n == 0 || memcmp(buf + starts[0], tramp + starts[0], n - starts[0]))
		return 0;
	return tramp_addr + starts[i];
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
 * rax at S-8 (reusing the dead slot), rdx S-16, ..., r11 S-72. Afterwards
 * the original return address goes into S-8 (r11 carries the saved rax
 * meanwhile: its own saved value is popped first) and a `ret` pops it, so
 * no register is needed to reach it and rsp ends at S. 24 instructions. */
size_t hook_arch_emit_return_trampoline(uint8_t *buf, uint64_t buf_addr, uint64_t exit_handler)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, buf_addr, 1};

	x86_put(&w, emit_ret_push, sizeof(emit_ret_push));
	x86_put(&w, "\x48\x8d\x7c\x24\x48", 5); /* lea rdi, [rsp+72] = S */
	x86_put(&w, "\x48\xb8", 2);             /* mov rax, imm64 */
	x86_put_u64(&w, exit_handler);
	x86_put(&w, "\xff\xd0", 2);                      /* call rax: rax = original return */
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
