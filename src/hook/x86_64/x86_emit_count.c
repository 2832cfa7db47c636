/*
 * x86_64 count-only blocks (hook_arch_emit_count_block in hook_arch.h):
 * the code a count-only function's patch jumps to instead of its
 * trampoline. Pure code generation into a caller-provided buffer.
 *
 * Threads: any; no shared state.
 *
 * Layout (four instructions, 30 bytes):
 *     cmp  dword fs:gate, 1        ; this thread counts (agent_count.c)
 *     jne  tramp                   ; no: the function's full trampoline
 *     add  qword fs:counter, 1     ; the thread's own counter: no lock
 *     jmp  body                    ; the trampoline's relocated prologue
 * The count is one read-modify-write of the thread's own initial-exec
 * TLS, so a signal lands before or after it and a handler's own calls
 * count too. Flags are the only state it changes, which no caller keeps
 * across a call. The trampoline itself is left whole: a thread that does
 * not count yet (its first call, the agent's own work, after its exit
 * destructor) records the call as an event, and frames that entered
 * before a runtime move still return through R_F.
 */
#include "x86_emit_internal.h"

size_t hook_arch_emit_count_block(uint8_t *buf, uint64_t buf_addr, int32_t gate, int32_t counter,
                                  uint64_t tramp)
{
	struct x86_writer w = {buf, 0, HOOK_ARCH_COUNT_BLOCK_MAX, buf_addr, 1};

	x86_cmp_mem_imm8(&w, X86_DWORD, x86_fs(gate), 1);
	x86_jcc_rel32(&w, X86_CC_NE, tramp);
	x86_add_mem_imm8(&w, X86_QWORD, x86_fs(counter), 1);
	x86_jmp_rel32(&w, tramp + EMIT_FAST_FN_ID_OFF + 8); /* body: emit_fast_frame */
	return w.ok ? w.len : 0;
}
