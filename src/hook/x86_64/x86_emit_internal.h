/*
 * Private to the x86_64 emitter (x86_emit.c: the ordinary trampolines;
 * x86_emit_fast.c: the fast form's enter stub and return trampoline;
 * x86_emit_detail.c: the detail lane's membership test and member
 * paths): the register lists the trampolines save, the fast form's
 * labels and the steps the fast paths share.
 *
 * Threads: any; no shared state.
 */
#ifndef ADA_HOOK_X86_EMIT_INTERNAL_H
#define ADA_HOOK_X86_EMIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "x86_internal.h"

/* ---- x86_emit.c ---- */

/* The relocated form of the instruction in (its original bytes at orig,
 * in the function at fn_addr) at w's address: x86_reloc.c's helper for
 * its case; 0, or -ERANGE / -1 when it has none there. */
int x86_emit_reloc(struct x86_writer *w, const uint8_t *orig, uint64_t fn_addr,
                   const struct hook_arch_insn *in);
/* Whether plan can have a trampoline (or a count block) at buf_addr: a
 * patch long enough for its form, 1..HOOK_ARCH_MAX_INSNS instructions,
 * and the patch's jmp rel32 (or the padding slot's) in reach. */
bool x86_emit_plan_ok(const struct hook_arch_plan *plan, uint64_t buf_addr);

/* push / pop a register list (pop in reverse order). */
void x86_emit_push(struct x86_writer *w, const enum x86_gpr *regs, size_t n);
void x86_emit_pop(struct x86_writer *w, const enum x86_gpr *regs, size_t n);
/* struct ada_hook_regs from its top down (the enter trampoline's pushes). */
extern const enum x86_gpr x86_emit_hook_regs[10];
/* Every caller-saved general register, rax first (the return trampoline's
 * pushes; popped without rax). */
extern const enum x86_gpr x86_emit_ret_regs[9];
/* The return trampoline after its handler's address is in rax and its
 * argument in rdi: the call, then the original return address into S-8,
 * every register back and `ret` to it. */
void x86_emit_ret_tail(struct x86_writer *w);

/* The fast form's trampoline: call stub (5), jne (2), lea (5), call (5),
 * R_F: jmp (5), then fn_id as data, read by the stub at [its return
 * address + EMIT_FAST_FN_ID_DISP]. */
#define EMIT_FAST_FN_ID_OFF 22 /* from the trampoline's start */
#define EMIT_FAST_FN_ID_DISP (EMIT_FAST_FN_ID_OFF - 5)

/* ---- x86_emit_fast.c: labels ---- */

enum emit_label {
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

/* Forward jumps by label: each emit_jcc/emit_jmp leaves a rel32 of 0 and
 * records where; emit_fix writes them once every label is placed. */
struct emit_labels {
	size_t at[FL_COUNT];
	size_t fix[64];
	uint8_t to[64];
	size_t n;
};

void emit_jcc(struct x86_writer *w, struct emit_labels *l, enum x86_cc cc, enum emit_label to);
void emit_jmp(struct x86_writer *w, struct emit_labels *l, enum emit_label to);
static inline void emit_label(const struct x86_writer *w, struct emit_labels *l, enum emit_label at)
{
	l->at[at] = w->len;
}

/* ---- x86_emit_fast.c: the layout the fast paths hard-code ----
 * (checked against the structures in handlers.c, agent_fast_layout):
 * struct shadow_entry and struct atf_index_event are 32 bytes each; rsi
 * points at &base[top], so the top frame's fields are at rsi - 32 + FE_*. */
#define FE_ORIG 0x00
#define FE_SLOT 0x08
#define FE_FN 0x10
#define FE_DEPTH 0x18
#define FE_FLAGS 0x1c
#define FE_TOP(field) ((field)-32)
#define FV_TS 0x00
#define FV_FN 0x08
#define FV_TID 0x10
#define FV_DEPTH 0x18
#define FV_DSEQ 0x1c
#define EMIT_F_DETAIL 0x4          /* SHADOW_F_DETAIL */
#define EMIT_ATF_NO_DETAIL (-1)    /* ATF_NO_DETAIL, the event's dseq */
#define EMIT_SHADOW_SLOT_CALL 0    /* SHADOW_SLOT_CALL */
#define EMIT_KEYSYM_CUR_LOCAL (-1) /* ADA_KEYSYM_CUR_LOCAL */

/* ---- x86_emit_fast.c: steps the stub and the member paths share ---- */

/* btsl $0, %fs:in_hook: the claim (CF = the old bit 0). */
void emit_claim(struct x86_writer *w, const struct hook_arch_fast *f);
/* subl $1, %fs:in_hook: the clear (ZF clear: QUEUED was set too). */
void emit_clear(struct x86_writer *w, const struct hook_arch_fast *f);
/* rax = head; head >= limit (the ring's slow path) jumps to `fail`. */
void emit_ring_room(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                    enum emit_label fail);
/* The enter paths' shadow tests with the stub's k bytes pushed: ecx =
 * top, rsi = &base[top], rdi = the slot ([rsp+k+8]); a full stack or a
 * top frame at or below the slot (dead frames, a tail call) jumps to
 * `fail`. */
void emit_shadow_room(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                      uint8_t k, enum emit_label fail);
/* orig (what the slot holds) the shared return trampoline jumps to
 * `fail`; then emit_ring_room. */
void emit_orig_room(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                    enum x86_gpr orig, enum emit_label fail);
/* The event at head (rax): rcx = &events[head & mask]. */
void emit_event_ptr(struct x86_writer *w, const struct hook_arch_fast *f);
/* The CALL event's fields but the timestamp, at rcx: fn, the depth in
 * edx, no detail, the thread id (through tmp). */
void emit_call_event(struct x86_writer *w, const struct hook_arch_fast *f, enum x86_gpr fn,
                     enum x86_gpr tmp);

/* The fast return trampoline's FL_DONE: orig (rdi) into S-8, rax back,
 * ret to it. */
void emit_ret_done(struct x86_writer *w);

/* ---- x86_emit_detail.c ---- */

/* The stub's eight registers for the detail lane (struct ada_hook_regs'
 * first eight, rdi lowest). */
extern const enum x86_gpr x86_emit_stub_regs8[8];
void emit_detail_test(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                      uint8_t k);
void emit_detail_test_cold(struct x86_writer *w, struct emit_labels *l,
                           const struct hook_arch_fast *f);
void emit_member_call(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f);
void emit_member_return(struct x86_writer *w, struct emit_labels *l,
                        const struct hook_arch_fast *f);

/* The count block's gate test and count (x86_emit_count.c), shared by
 * its three forms; false when slot is out of range or the buffer full.
 * Its jne's are rel8 to the block's exit, which the form emits after
 * everything a counted call runs (emit_count_exit, with fix). */
struct emit_count_fix {
	size_t at[2], n; /* where each jne is in the writer's buffer */
};
bool emit_count_test(struct x86_writer *w, int32_t gate, int32_t counters, uint32_t slot,
                     struct emit_count_fix *fix);
/* The exit at w's address, `jmp tramp` (the function's trampoline: the
 * call is an event), and the test's jne's aimed at it; false when it is
 * beyond their reach (127 bytes) or the buffer is full. */
bool emit_count_exit(struct x86_writer *w, const struct emit_count_fix *fix, uint64_t tramp);

#endif
