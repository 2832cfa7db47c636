/*
 * The detail lane's parts of the x86_64 fast form (x86_emit_fast.c
 * calls them): the enter stub's membership test, and the member paths
 * that write a member's CALL and RETURN records in machine code.
 *
 * Threads: any; no shared state.
 */
#include <stdbool.h>
#include <stddef.h>

#include "x86_emit_internal.h"

/* The detail lane's stub saves eight registers, in the order of struct
 * ada_hook_regs' first eight fields (rdi lowest, rbp highest), so that a
 * member's entry (and every decline) calls C with them in place: only
 * r10 and r11 are pushed below them then, and the regs pointer passed
 * skips those two (the handlers never read regs->r10/r11: hook_arch.h).
 * The index lane's saves the five it uses. */
const enum x86_gpr x86_emit_stub_regs8[8] = {X86_RBP, X86_RAX, X86_R9,  X86_R8,
                                             X86_RCX, X86_RDX, X86_RSI, X86_RDI};
/* The detail record's first register words are the save area's order
 * (emit_call_record copies them 16 bytes at a time), and the return
 * trampoline's save area is HOOK_RET_SAVED_*'s. */
_Static_assert(HOOK_DREC_CALL_RDI == 0 && HOOK_DREC_CALL_RSI == 1 && HOOK_DREC_CALL_RDX == 2 &&
                   HOOK_DREC_CALL_RCX == 3 && HOOK_DREC_CALL_R8 == 4 && HOOK_DREC_CALL_R9 == 5 &&
                   HOOK_DREC_CALL_RAX == 6 && HOOK_DREC_CALL_ORIG == 7,
               "the CALL record's registers in struct ada_hook_regs' order");
_Static_assert(HOOK_RET_SAVED_RAX == -1 && HOOK_RET_SAVED_RDX == -2,
               "rax, rdx: the first two the return trampolines push");
_Static_assert(offsetof(struct ada_hook_regs, rbp) == 56 &&
                   offsetof(struct ada_hook_regs, r10) == 64,
               "the detail stub's eight registers are struct ada_hook_regs' first eight");

/* The key-symbol blob's words the test reads (keysym.h): the header's
 * flags | n_mods at +8, a module's entry (kind | param, then the body's
 * offset) at 64 + 16 * module. */
#define EMIT_KS_HDR_MODS 8
#define EMIT_KS_F_ALL 0x1 /* ADA_KEYSYM_F_ALL */
#define EMIT_KS_NONE 0    /* ADA_KEYSYM_NONE */
#define EMIT_KS_BITSET 1  /* ADA_KEYSYM_BITSET */
#define EMIT_KS_FULL 4    /* ADA_KEYSYM_FULL */

/* rcx = [rsi + (rcx & rdx)]: a key-symbol load, masked into the area. */
static void emit_ks_ld(struct x86_writer *w, enum x86_gpr dst)
{
	x86_and_reg_reg(w, X86_RCX, X86_RDX);
	x86_mov_reg_mem(w, dst, x86_mem_idx(X86_RSI, X86_RCX, 1));
}

/* The blob's header: the "every function" flag, and the module within
 * n_mods (else the C handler asks the own set: no entry). rax = the
 * blob, rdx = the 8-byte mask, rsi = the area. */
static void emit_ks_header(struct x86_writer *w, struct emit_labels *l,
                           const struct hook_arch_fast *f)
{
	x86_mov_reg_mem(w, X86_RAX, x86_mem_d32(X86_RSI, f->h_ks_cur));
	/* mov rax, [rax]: the current blob. An acquire load: x86_64 does not
	 * reorder loads with older loads, so the blob's loads below come
	 * after it; pairs with the release store of the current-blob word in
	 * ada_keysym_region_publish() (recorder), as in
	 * handlers_detail_member(). */
	x86_mov_reg_mem(w, X86_RAX, x86_mem(X86_RAX, 0));
	x86_cmp_reg_imm8(w, X86_RAX, EMIT_KEYSYM_CUR_LOCAL);
	emit_jcc(w, l, X86_CC_E, FL_DSET);
	x86_mov_reg_mem(w, X86_RDX, x86_mem_d32(X86_RSI, f->h_ks_mask));
	x86_and_reg_imm8(w, X86_RDX, -8); /* the 8-byte mask */
	x86_mov_reg_mem(w, X86_RSI, x86_mem_d32(X86_RSI, f->h_ks_area));
	x86_lea_reg_mem(w, X86_RCX, x86_mem(X86_RAX, EMIT_KS_HDR_MODS)); /* flags | n_mods */
	emit_ks_ld(w, X86_RCX);
	x86_test_reg8_imm8(w, X86_RCX, EMIT_KS_F_ALL);
	emit_jcc(w, l, X86_CC_NE, FL_MEMBER);
	x86_shr_reg_imm8(w, X86_RCX, 32); /* n_mods */
	x86_cmp_reg_imm32(w, X86_RCX, (int32_t)f->module);
	/* No entry (the blob was built before the recorder read this
	 * module, or the module came later): the C handler asks the own
	 * set (agent_detail_ask), as for ADA_KEYSYM_ASK. */
	emit_jcc(w, l, X86_CC_BE, FL_DECL);
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
void emit_detail_test(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f,
                      uint8_t k)
{
	int32_t e = (int32_t)(64 + 16 * (int64_t)f->module); /* the module's directory entry */
	if (f->module >= (1u << 24))
		w->ok = 0; /* module ids are below 2^24 (keysym.h): e and 8 * module fit */
	x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSP, k)); /* the return point */
	x86_mov_reg_imm64(w, X86_RSI, f->detail_hot);     /* the hot globals */
	emit_ks_header(w, l, f);
	x86_lea_reg_mem(w, X86_RCX, x86_mem_d32(X86_RAX, e)); /* kind | param */
	emit_ks_ld(w, X86_RCX);
	x86_cmp_reg_imm8(w, X86_ECX, EMIT_KS_BITSET);
	emit_jcc(w, l, X86_CC_NE, FL_OTHER);
	x86_shr_reg_imm8(w, X86_RCX, 32);                                    /* param, the bits */
	x86_mov_reg_mem(w, X86_EDI, x86_mem(X86_RDI, EMIT_FAST_FN_ID_DISP)); /* symbol index */
	x86_cmp_reg_reg(w, X86_EDI, X86_ECX);
	emit_jcc(w, l, X86_CC_AE, FL_NONMEM);
	x86_lea_reg_mem(w, X86_RCX, x86_mem_d32(X86_RAX, e + 8)); /* the body's offset */
	emit_ks_ld(w, X86_ECX);                                   /* its low half */
	x86_add_reg_reg(w, X86_RCX, X86_RAX);                     /* body */
	x86_mov_reg_reg(w, X86_EAX, X86_EDI);
	x86_shr_reg_imm8(w, X86_EAX, 6);
	x86_lea_reg_mem(w, X86_RAX, x86_mem_idx(X86_RCX, X86_RAX, 8));
	x86_and_reg_reg(w, X86_RAX, X86_RDX);
	x86_mov_reg_mem(w, X86_RAX, x86_mem_idx(X86_RSI, X86_RAX, 1)); /* the bitset word */
	x86_bt_reg_reg(w, X86_RAX, X86_RDI);                           /* bit idx & 63 */
	emit_jcc(w, l, X86_CC_B, FL_MEMBER);
	emit_label(w, l, FL_NONMEM); /* falls through: outside the set */
}

/* The test's rarer outcomes, out of the fast path (emitted after it):
 * another container kind, and no blob published yet. */
void emit_detail_test_cold(struct x86_writer *w, struct emit_labels *l,
                           const struct hook_arch_fast *f)
{
	emit_label(w, l, FL_OTHER); /* ecx: the module's container kind */
	x86_test_reg_reg(w, X86_ECX, X86_ECX);
	emit_jcc(w, l, X86_CC_E, FL_NONMEM); /* ADA_KEYSYM_NONE */
	x86_cmp_reg_imm8(w, X86_ECX, EMIT_KS_FULL);
	emit_jcc(w, l, X86_CC_E, FL_MEMBER);
	emit_jmp(w, l, FL_DECL); /* hash, CRoaring, uncovered (ADA_KEYSYM_ASK): C decides */
	/* No blob published yet: the own set (agent_dset_has). */
	emit_label(w, l, FL_DSET);
	/* mov rax, [rsi+dset]: an acquire load as above; pairs with the
	 * release store that publishes a set (agent_detail_set_update()). */
	x86_mov_reg_mem(w, X86_RAX, x86_mem_d32(X86_RSI, f->h_dset));
	x86_mov_reg_mem(w, X86_EDI, x86_mem(X86_RDI, EMIT_FAST_FN_ID_DISP)); /* symbol index */
	x86_cmp_reg_mem(w, X86_EDI, x86_mem_d32(X86_RAX, f->d_nbits));
	emit_jcc(w, l, X86_CC_AE, FL_ALL);
	x86_cmp_mem_imm32(w, X86_QWORD, x86_mem_d32(X86_RAX, f->d_max_mod), (int32_t)f->module);
	emit_jcc(w, l, X86_CC_B, FL_ALL);
	x86_mov_reg_mem(w, X86_RCX, x86_mem_d32(X86_RAX, f->d_bits));
	x86_mov_reg_mem(w, X86_RCX, x86_mem_d32(X86_RCX, (int32_t)(8 * f->module)));
	x86_mov_reg_reg(w, X86_EDX, X86_EDI);
	x86_shr_reg_imm8(w, X86_EDX, 6);
	x86_mov_reg_mem(w, X86_RCX, x86_mem_idx(X86_RCX, X86_RDX, 8));
	x86_bt_reg_reg(w, X86_RCX, X86_RDI);
	emit_jcc(w, l, X86_CC_B, FL_MEMBER);
	emit_jmp(w, l, FL_NONMEM);
	emit_label(w, l, FL_ALL); /* outside the bitmaps: what `all` says */
	x86_cmp_mem_imm8(w, X86_DWORD, x86_mem_d32(X86_RAX, f->d_all), 0);
	emit_jcc(w, l, X86_CC_NE, FL_MEMBER);
	emit_jmp(w, l, FL_NONMEM);
}

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
#define EMIT_DREC_TS 0
#define EMIT_DREC_LINK 1
#define EMIT_DREC_FN 2
#define EMIT_DREC_META 3
#define EMIT_DREC_REGS 4
#define EMIT_DREC_CALL_WORDS (EMIT_DREC_REGS + HOOK_DREC_CALL_NREGS)
#define EMIT_DREC_CALL_LEN ((EMIT_DREC_CALL_WORDS + 16) * 8) /* + the 16 stack words */
#define EMIT_DREC_RETURN_LEN ((EMIT_DREC_REGS + HOOK_DREC_RET_NREGS) * 8)
#define EMIT_DREC_META_CALL (3ull | 128ull << 32) /* ada_drec_meta(CALL, 0, 128) */
#define EMIT_DREC_META_RETURN 4u                  /* ada_drec_meta(RETURN, 0, 0) */
/* [rec + word i]: the record's words follow its 8-byte header. */
static struct x86_mem emit_drec(enum x86_gpr rec, unsigned i)
{
	return x86_mem_d8(rec, (int32_t)(8 + 8 * i));
}

/* prefetcht0 of the `bytes` bytes 2 KiB past [base]: ada_detail_prefetch
 * for a constant length (one line each 64 bytes; no wrap, no fault: a
 * hint, which orders nothing). The C writer's instruction too (no
 * -mprfchw). */
static void emit_prefetch(struct x86_writer *w, enum x86_gpr base, uint32_t bytes)
{
	for (uint32_t q = 0; q < bytes && q < 2048; q += 64)
		x86_prefetcht0(w, x86_mem(base, (int32_t)(2048 + q)));
}

/* The commit's rest: dcount, then the published head (= dpos, reloaded
 * into `tmp2`), a plain store = a release, after every store of the
 * record; pairs with the acquire load of head in
 * ada_detail_ring_snapshot(). Uses tmp and tmp2. (The commit's first
 * store, dpos = end, is made as soon as the record's space is taken:
 * dpos is this thread's private copy, read by nothing else while
 * in_hook is held -- a signal handler's calls take the side path, which
 * writes no detail record -- and it frees the register that held it.) */
static void emit_dcommit(struct x86_writer *w, const struct hook_arch_fast *f, enum x86_gpr tmp,
                         enum x86_gpr tmp2)
{
	x86_add_mem_imm8(w, X86_DWORD, x86_fs(f->p_dcount), 1); /* ours alone */
	x86_mov_reg_mem(w, tmp, x86_fs(f->p_dhead));
	x86_mov_reg_mem(w, tmp2, x86_fs(f->p_dpos));  /* the end */
	x86_mov_mem_reg(w, x86_mem_d8(tmp, 0), tmp2); /* the release */
}

/* The ts = rdtsc (into `ts`; rax and rdx used) and the event's head
 * published: rax = head, rcx = the event, rsi = head + 1 on entry to
 * the store; pairs with the acquire load of head in
 * ada_index_ring_peek(), as the release store in ada_emit_fast_ts()
 * (a plain store is a release: the event's stores come first). The
 * record's ts is written between. */
static void emit_ts_publish(struct x86_writer *w, const struct hook_arch_fast *f, enum x86_gpr rec,
                            enum x86_gpr ts, enum x86_gpr other)
{
	x86_lea_reg_mem(w, X86_RSI, x86_mem(X86_RAX, 1));
	x86_mov_mem_reg(w, x86_fs(f->p_head), X86_RSI);
	x86_rdtsc(w);
	x86_shl_reg_imm8(w, X86_RDX, 32);
	x86_or_reg_reg(w, ts, other);
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_TS), ts);
	x86_mov_mem_reg(w, emit_drec(rec, EMIT_DREC_TS), ts);
	x86_mov_reg_mem(w, X86_RCX, x86_fs(f->p_head_pub));
	x86_mov_mem_reg(w, x86_mem(X86_RCX, 0), X86_RSI);
}

/* The CALL record copies go through xmm15 (EMIT_XTMP), saved in the red
 * zone below the stub's rsp and restored after (nothing lives below rsp
 * here; the kernel puts a signal frame 128 bytes further down): the
 * hooked function's vector registers are as it was called with.
 * movups, legacy SSE (baseline x86_64; upper ymm/zmm bits are kept by
 * the hardware either way). Each 16-byte store writes two of the
 * record's 8-byte aligned words, in program order with every other
 * store (x86_64 keeps stores in order), before the published head: what
 * two ada_detail_put's do (the drain reads no word of the record before
 * that head, so nothing needs the two halves to land together). */
#define EMIT_XTMP 15u

/* The member call's tests past the index path's (the stub's, with orig
 * in r8): the whole snapshot on the stack (rsp - dfast_lo <= dfast_span
 * unsigned, the bound handlers_detail_call_fast tests: stack_hi - 128
 * at most, so slot[15] is below the stack's top) and room in the chunk
 * (ada_detail_reserve_fast: pos + 8 + len <= dstop; no ring: dstop ==
 * dpos == 0 fails it too). Leaves r9 = dpos, rdx = the end. */
static void emit_member_call_tests(struct x86_writer *w, struct emit_labels *l,
                                   const struct hook_arch_fast *f)
{
	emit_shadow_room(w, l, f, 64, FL_MSLOW);
	x86_mov_reg_mem(w, X86_R8, x86_mem_d8(X86_RDI, 0)); /* orig */
	emit_orig_room(w, l, f, X86_R8, FL_MSLOW);
	x86_mov_reg_reg(w, X86_RDX, X86_RDI);
	x86_sub_reg_mem(w, X86_RDX, x86_fs(f->s_dfast_lo));
	x86_cmp_reg_mem(w, X86_RDX, x86_fs(f->s_dfast_span));
	emit_jcc(w, l, X86_CC_A, FL_MSLOW);
	x86_mov_reg_mem(w, X86_R9, x86_fs(f->p_dpos));
	x86_lea_reg_mem(w, X86_RDX, x86_mem(X86_R9, 8 + EMIT_DREC_CALL_LEN));
	x86_cmp_reg_mem(w, X86_RDX, x86_fs(f->p_dstop));
	emit_jcc(w, l, X86_CC_A, FL_MSLOW);
}

/* The CALL record at r9 but its fn_id, link and ts: the header word
 * (a release, pairs with the acquire loads of the drain's copy,
 * ada_detail_ring_snapshot), the registers from the save area, the
 * snapshot slot[0..15] (slot[0] is orig until the push), then orig, rbp
 * (still as at the call), the slot and meta. */
static void emit_call_record(struct x86_writer *w)
{
	x86_mov_mem_imm32(w, X86_QWORD, x86_mem(X86_R9, 0), EMIT_DREC_CALL_LEN);
	x86_movups_mem_xmm(w, x86_mem(X86_RSP, -16), EMIT_XTMP); /* saved */
	/* The register words from the save area, 16 bytes at a time: rdi
	 * rsi rdx rcx r8 r9 rax, then rbp into orig's word, which orig
	 * overwrites below. */
	for (unsigned i = 0; i < 4; i++) {
		x86_movups_xmm_mem(w, EMIT_XTMP, x86_mem_d8(X86_RSP, (int32_t)(16 * i)));
		x86_movups_mem_xmm(w, emit_drec(X86_R9, EMIT_DREC_REGS + 2 * i), EMIT_XTMP);
	}
	for (unsigned i = 0; i < 8; i++) {
		x86_movups_xmm_mem(w, EMIT_XTMP, x86_mem_d8(X86_RDI, (int32_t)(16 * i)));
		x86_movups_mem_xmm(w, emit_drec(X86_R9, EMIT_DREC_CALL_WORDS + 2 * i), EMIT_XTMP);
	}
	x86_movups_xmm_mem(w, EMIT_XTMP, x86_mem(X86_RSP, -16)); /* restored */
	x86_mov_mem_reg(w, emit_drec(X86_R9, EMIT_DREC_REGS + HOOK_DREC_CALL_ORIG), X86_R8);
	x86_mov_mem_reg(w, emit_drec(X86_R9, EMIT_DREC_REGS + HOOK_DREC_CALL_RBP), X86_RBP);
	x86_mov_mem_reg(w, emit_drec(X86_R9, EMIT_DREC_REGS + HOOK_DREC_CALL_SP), X86_RDI);
	x86_mov_reg_imm64(w, X86_RDX, EMIT_DREC_META_CALL);
	x86_mov_mem_reg(w, emit_drec(X86_R9, EMIT_DREC_META), X86_RDX);
}

/* The shadow push (shadow_enter_fast with SHADOW_F_DETAIL), fn_id into
 * rbp and the record; edx = the depth. */
static void emit_member_push(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_mov_mem_reg(w, x86_mem_d8(X86_RSI, FE_ORIG), X86_R8);
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_SLOT), X86_RDI);
	x86_mov_mem_imm32(w, X86_QWORD, x86_mem(X86_RDI, 0), EMIT_SHADOW_SLOT_CALL);
	x86_mov_reg_mem(w, X86_RBP, x86_mem(X86_RSP, 64)); /* the return point */
	x86_mov_reg_mem(w, X86_RBP, x86_mem(X86_RBP, EMIT_FAST_FN_ID_DISP));
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_FN), X86_RBP);
	x86_mov_mem_reg(w, emit_drec(X86_R9, EMIT_DREC_FN), X86_RBP);
	x86_lea_reg_mem(w, X86_EDX, x86_mem(X86_RCX, 1));
	x86_mov_mem_reg(w, x86_fs(f->s_top), X86_EDX);
	x86_sub_reg_mem(w, X86_EDX, x86_fs(f->s_inherited));     /* the depth */
	x86_bts_reg_imm8(w, X86_RDX, 32 + 2);                    /* SHADOW_F_DETAIL << 32 */
	x86_mov_mem_reg(w, x86_mem(X86_RSI, FE_DEPTH), X86_RDX); /* one store */
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
void emit_member_call(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f)
{
	emit_member_call_tests(w, l, f);
	/* Taken: nothing was stored before this point. The record at
	 * r9 = dwords + (dpos & (dbytes - 1)) (a chunk never wraps: ring.h). */
	x86_mov_mem_reg(w, x86_fs(f->p_dpos), X86_RDX); /* the commit's dpos, early */
	x86_mov_reg_mem(w, X86_RDX, x86_fs(f->p_dbytes));
	x86_dec_reg(w, X86_RDX);
	x86_and_reg_reg(w, X86_R9, X86_RDX);
	x86_add_reg_mem(w, X86_R9, x86_fs(f->p_dwords));
	emit_prefetch(w, X86_R9, 8 + EMIT_DREC_CALL_LEN);
	emit_call_record(w);
	emit_member_push(w, f);
	/* The CALL event (ada_emit_fast_ts), its head and ts kept. */
	emit_event_ptr(w, f);
	emit_call_event(w, f, X86_RBP, X86_RSI);
	x86_mov_mem_reg(w, emit_drec(X86_R9, EMIT_DREC_LINK), X86_RAX); /* the event's head */
	emit_ts_publish(w, f, X86_R9, X86_RDX, X86_RAX);
	emit_dcommit(w, f, X86_RCX, X86_RDX);
	emit_clear(w, f);
	emit_jcc(w, l, X86_CC_NE, FL_FLUSH);
	x86_emit_pop(w, x86_emit_stub_regs8, 8); /* FL_DONE's, inline */
	x86_ret(w);                              /* ZF set */
}

/* [S + 8 * word] on the fast return trampoline's paths, which saved
 * five registers below S (rsp = S - 40). */
static struct x86_mem emit_ret_saved(int word)
{
	return x86_mem(X86_RSP, 40 + 8 * word);
}

/* Where the member return path keeps orig until its ret: the red zone
 * below the five saved registers (nothing lives below rsp here; the
 * kernel puts a signal frame 128 bytes further down), never the record
 * it also wrote it to. The record is shared memory that is not ours to
 * read back: a detach that stops this thread between the store and the
 * load replaces the arena by zero pages (ada_producer_retire_arena), and
 * the program can write its arena too; a ret to what was read there
 * jumped to 0. */
static struct x86_mem emit_ret_orig(void)
{
	return x86_mem(X86_RSP, -8);
}

/* The RETURN record at rdi but its link and ts (the header word a
 * release, as the CALL's); rsi = &base[top] of the popped frame, rcx =
 * the event: its fields and the record's from the frame. */
static void emit_return_record(struct x86_writer *w, const struct hook_arch_fast *f)
{
	x86_mov_mem_imm32(w, X86_QWORD, x86_mem(X86_RDI, 0), EMIT_DREC_RETURN_LEN);
	x86_dec_reg(w, X86_ECX); /* the pop: the entry is read after top drops */
	x86_mov_mem_reg(w, x86_fs(f->s_top), X86_ECX);
	emit_event_ptr(w, f);
	x86_mov_reg_mem(w, X86_RDX, x86_mem(X86_RSI, FE_TOP(FE_FN)));
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_FN), X86_RDX);
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_FN), X86_RDX);
	x86_mov_reg_mem(w, X86_EDX, x86_mem(X86_RSI, FE_TOP(FE_DEPTH)));
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_DEPTH), X86_EDX);
	x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RCX, FV_DSEQ), EMIT_ATF_NO_DETAIL);
	x86_mov_reg_mem(w, X86_RDX, x86_fs(f->p_tid_return));
	x86_mov_mem_reg(w, x86_mem(X86_RCX, FV_TID), X86_RDX);
	x86_mov_mem_imm32(w, X86_QWORD, emit_drec(X86_RDI, EMIT_DREC_META), EMIT_DREC_META_RETURN);
	x86_mov_reg_mem(w, X86_RDX, emit_ret_saved(HOOK_RET_SAVED_RAX));
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_REGS + HOOK_DREC_RET_RAX), X86_RDX);
	x86_mov_reg_mem(w, X86_RDX, emit_ret_saved(HOOK_RET_SAVED_RDX));
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_REGS + HOOK_DREC_RET_RDX), X86_RDX);
	x86_mov_reg_mem(w, X86_RDX, x86_mem(X86_RSI, FE_TOP(FE_ORIG))); /* where it returns to */
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_REGS + HOOK_DREC_RET_ORIG), X86_RDX);
	x86_mov_mem_reg(w, emit_ret_orig(), X86_RDX); /* kept for the ret: emit_ret_orig() */
	/* rbp: callee-saved, as the function left it */
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_REGS + HOOK_DREC_RET_RBP), X86_RBP);
	x86_lea_reg_mem(w, X86_RDX, emit_ret_saved(0)); /* S */
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_REGS + HOOK_DREC_RET_SP), X86_RDX);
}

/* The return trampoline's member path: the top frame, above the
 * inherited ones, owns the slot and is flagged exactly SHADOW_F_DETAIL;
 * ecx = top, rsi = &base[top], rax rdx rcx rsi rdi saved at [rsp+32 ..
 * 0] (S-8 .. S-40). Leaves orig in rdi for FL_DONE / FL_FLUSH. */
void emit_member_return(struct x86_writer *w, struct emit_labels *l, const struct hook_arch_fast *f)
{
	emit_ring_room(w, l, f, FL_MEXITC);
	x86_mov_reg_mem(w, X86_RDX, x86_fs(f->p_dpos));
	x86_add_reg_imm8(w, X86_RDX, 8 + EMIT_DREC_RETURN_LEN); /* end */
	x86_cmp_reg_mem(w, X86_RDX, x86_fs(f->p_dstop));
	emit_jcc(w, l, X86_CC_A, FL_MEXITC);
	/* Taken: nothing was stored before this point. The record at rdi. */
	x86_mov_reg_mem(w, X86_RDI, x86_fs(f->p_dbytes));
	x86_dec_reg(w, X86_RDI);
	x86_and_reg_mem(w, X86_RDI, x86_fs(f->p_dpos));
	x86_add_reg_mem(w, X86_RDI, x86_fs(f->p_dwords));
	x86_mov_mem_reg(w, x86_fs(f->p_dpos), X86_RDX); /* the commit's dpos, early */
	emit_prefetch(w, X86_RDI, 8 + EMIT_DREC_RETURN_LEN);
	emit_return_record(w, f);
	x86_mov_mem_reg(w, emit_drec(X86_RDI, EMIT_DREC_LINK), X86_RAX); /* the event's head */
	emit_ts_publish(w, f, X86_RDI, X86_RAX, X86_RDX);
	emit_dcommit(w, f, X86_RCX, X86_RDX);
	x86_mov_reg_mem(w, X86_RDI, emit_ret_orig());
	emit_clear(w, f);
	emit_jcc(w, l, X86_CC_NE, FL_FLUSH);
	emit_ret_done(w); /* FL_DONE's, inline */
}
