/*
 * x86_64 count-only blocks (hook_arch_emit_count_block in hook_arch.h):
 * the code a count-only function's patch jumps to instead of its
 * trampoline. Pure code generation into a caller-provided buffer.
 *
 * Threads: any; no shared state.
 *
 * Three forms. The copy form (hook_arch_emit_count_block_copy:
 * x86_emit_copy.c) ends with the function's first bytes up to a ret or
 * jmp; the inline one (hook_arch_emit_count_block_inline: x86_emit.c;
 * the install's blocks and the budget's runtime moves, when the copy
 * form does not fit) with the relocated prologue itself and the jump
 * back behind the patch, one taken jump fewer a counted call than this
 * one; a prologue the block's place cannot relocate, and the padding
 * form's runtime moves, take this one, which jumps to the trampoline's
 * copy. Layout of the %gs form (counters HOOK_ARCH_COUNT_GS: the
 * thread's %gs base is its counters; six instructions and the exit,
 * 46 bytes):
 *     cmp  dword fs:gate, 1        ; this thread counts (agent_count.c)
 *     jne  exit                    ; rel8: no, the function's full trampoline
 *     cmp  qword gs:[-8], TAG      ; %gs is still ours (HOOK_ARCH_COUNT_GS_TAG)
 *     jne  exit                    ; no: the program moved it; an event
 *     add  qword gs:[8*slot], 1    ; no lock: nobody else writes it
 *     jmp  body                    ; the trampoline's relocated prologue
 * exit: jmp tramp
 * and of the pointer form (a program that uses %gs; seven, 42 bytes):
 *     cmp  dword fs:gate, 1
 *     jne  exit
 *     push r11
 *     mov  r11, fs:counters        ; the thread's own counters
 *     add  qword [r11 + 8*slot], 1
 *     pop  r11
 *     jmp  body
 * exit: jmp tramp
 * The exit lies behind what the counted call runs, whichever the form
 * (after its last jmp or ret), so the test's jne's are rel8 (2 bytes, not
 * 6): 8 bytes fewer on the lines a counted call fetches (16 bytes more
 * there cost python's second budget run 0.01-0.02 s in 0.32). The count
 * is one read-modify-write of the thread's own counter, so a signal
 * lands before or after it and a handler's own calls count too. r11 is
 * kept: gcc's -fipa-ra may keep a value in it across a call to a local
 * function that does not write it; the push goes below rsp at the
 * function's entry, which is the callee's. Flags are the only state it
 * changes, which no caller keeps across a call. (The counters themselves
 * are not TLS: ada attach dlopens the agent, and a dlopen gets little
 * static TLS.) The trampoline itself is left whole: a thread that does
 * not count yet (its first call, the agent's own work, after its exit
 * destructor) records the call as an event, and frames that entered
 * before a runtime move still return through R_F.
 */
#include "x86_emit_internal.h"

/* A jne rel8 whose target emit_count_exit() fills in. */
static void emit_count_jne(struct x86_writer *w, struct emit_count_fix *fix)
{
	fix->at[fix->n++] = w->len;
	x86_put_u8(w, (uint8_t)(0x70 | X86_CC_NE));
	x86_put_u8(w, 0);
}

bool emit_count_test(struct x86_writer *w, int32_t gate, int32_t counters, uint32_t slot,
                     struct emit_count_fix *fix)
{
	fix->n = 0;
	if (slot >= (1u << 28))
		return false;
	x86_cmp_mem_imm8(w, X86_DWORD, x86_fs(gate), 1);
	emit_count_jne(w, fix);
	if (counters == HOOK_ARCH_COUNT_GS) { /* the thread's %gs base is its counters */
		x86_cmp_mem_imm32(w, X86_QWORD, x86_gs(-8), HOOK_ARCH_COUNT_GS_TAG);
		emit_count_jne(w, fix);
		x86_add_mem_imm8(w, X86_QWORD, x86_gs((int32_t)(slot * 8)), 1);
		return w->ok;
	}
	x86_push_reg(w, X86_R11);
	x86_mov_reg_mem(w, X86_R11, x86_fs(counters));
	x86_add_mem_imm8(w, X86_QWORD, x86_mem_d32(X86_R11, (int32_t)(slot * 8)), 1);
	x86_pop_reg(w, X86_R11);
	return w->ok;
}

bool emit_count_exit(struct x86_writer *w, const struct emit_count_fix *fix, uint64_t tramp)
{
	for (size_t i = 0; i < fix->n && w->ok; i++) {
		size_t d = w->len - (fix->at[i] + 2);
		if (d > 127)
			return false;
		w->buf[fix->at[i] + 1] = (uint8_t)d;
	}
	x86_jmp_rel32(w, tramp);
	return w->ok;
}

size_t hook_arch_emit_count_block(uint8_t *buf, uint64_t buf_addr, int32_t gate, int32_t counters,
                                  uint32_t slot, uint64_t tramp)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_COUNT_BLOCK_MAX, buf_addr, 1};
	struct emit_count_fix fix;

	if (!emit_count_test(&w, gate, counters, slot, &fix))
		return 0;
	x86_jmp_rel32(&w, tramp + EMIT_FAST_FN_ID_OFF + 8); /* body: emit_fast_frame */
	return emit_count_exit(&w, &fix, tramp) ? w.len : 0;
}
