/*
 * The words of the detail lane's two fixed-shape records, as the C
 * handlers write them into reserved ring space (handlers.c; which
 * register goes into which word: hook_arch.h's arch part, enum
 * hook_drec_call_reg / hook_drec_return_reg) -- and the
 * reference the fast form's member paths in machine code are tested
 * against (x86_emit_detail.c emit_member_call / emit_member_return; the unit
 * test test_hook_fast.c calls these on a buffer and compares every word).
 * Record layout: ring.h (ADA_DREC_*), docs/internals.md "Writing a record".
 *
 * Threads: the producer thread, in hook context (no call, no vector
 * register: the stores are ada_detail_put's).
 */
#ifndef ADA_DETAIL_REC_INTERNAL_H
#define ADA_DETAIL_REC_INTERNAL_H

#include <stdint.h>

#include "atf_format.h"
#include "hook_arch.h"
#include "ring.h"

/* The default snapshot, 128 bytes (--stack-bytes 128), as straight-line
 * stores with no length anywhere: word 0 is the caller's return address
 * (orig, what the slot held before the push), words 1..15 are copied. */
#define DETAIL_STACK_FIXED_WORDS 16u
#if defined(__aarch64__)
/* The CALL record's register words (arm64/arch.h: enum
 * hook_drec_call_reg; docs/format.md), after its header words. The
 * return slot is x30's word in the enter trampoline's frame, at S-8:
 * sp at entry is the word above it. */
__attribute__((always_inline)) static inline void
detail_put_call_regs(_Atomic uint64_t *w, const uint64_t *ret_slot,
                     const struct ada_hook_regs *regs, uint64_t orig)
{
	for (unsigned i = 0; i <= HOOK_DREC_CALL_X6; i++)
		ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_X0 + i, regs->x[i]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_ORIG, orig);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_FP, regs->fp);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_SP, (uint64_t)(uintptr_t)(ret_slot + 1));
}

/* The RETURN record's register words; sp: S, the stack pointer after
 * the return (HOOK_RET_SAVED_*: where the return trampoline keeps x0,
 * x1 and x29 below it). */
__attribute__((always_inline)) static inline void
detail_put_return_regs(_Atomic uint64_t *w, const uint64_t *saved, uint64_t sp, uint64_t orig)
{
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_X0, saved[HOOK_RET_SAVED_X0]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_X1, saved[HOOK_RET_SAVED_X1]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_ORIG, orig);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_FP, saved[HOOK_RET_SAVED_FP]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_SP, sp);
}
#else
/* The CALL record's register words (hook_arch.h's arch part:
 * enum hook_drec_call_reg), after its header words. */
__attribute__((always_inline)) static inline void
detail_put_call_regs(_Atomic uint64_t *w, const uint64_t *ret_slot,
                     const struct ada_hook_regs *regs, uint64_t orig)
{
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_RDI, regs->rdi);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_RSI, regs->rsi);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_RDX, regs->rdx);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_RCX, regs->rcx);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_R8, regs->r8);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_R9, regs->r9);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_RAX, regs->rax);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_ORIG, orig);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_RBP, regs->rbp);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_CALL_SP, (uint64_t)(uintptr_t)ret_slot);
}

/* The RETURN record's register words; sp: the stack pointer after the
 * function's ret, the return trampoline keeps rax, rdx and rbp below it
 * (HOOK_RET_SAVED_*). */
__attribute__((always_inline)) static inline void
detail_put_return_regs(_Atomic uint64_t *w, const uint64_t *saved, uint64_t sp, uint64_t orig)
{
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_RAX, saved[HOOK_RET_SAVED_RAX]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_RDX, saved[HOOK_RET_SAVED_RDX]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_ORIG, orig);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_RBP, saved[HOOK_RET_SAVED_RBP]);
	ada_detail_put(w, ADA_DREC_REGS + HOOK_DREC_RET_SP, sp);
}
#endif
_Static_assert(ADA_DREC_REGS + HOOK_DREC_CALL_NREGS == ADA_DREC_CALL_WORDS,
               "the CALL record's words end with its registers");
_Static_assert(ADA_DREC_REGS + HOOK_DREC_RET_NREGS == ADA_DREC_RETURN_WORDS,
               "the RETURN record's words end with its registers");

/* A CALL record of type `type` whose 128 bytes of stack start at word
 * stack_at: header, registers, the snapshot (the plain record and
 * --detail-fp's, which has the vector registers between). */
__attribute__((always_inline)) static inline void
detail_put_call_body(_Atomic uint64_t *w, uint32_t type, uint32_t stack_at, uint64_t fn_id,
                     const uint64_t *ret_slot, const struct ada_hook_regs *regs, uint64_t ts,
                     uint64_t link, uint64_t orig)
{
	ada_detail_put(w, ADA_DREC_TS, ts);
	ada_detail_put(w, ADA_DREC_LINK, link);
	ada_detail_put(w, ADA_DREC_FN, fn_id);
	ada_detail_put(w, ADA_DREC_META, ada_drec_meta(type, 0, DETAIL_STACK_FIXED_WORDS * 8));
	detail_put_call_regs(w, ret_slot, regs, orig);
	_Atomic uint64_t *dst = w + stack_at;
	ada_detail_put(dst, 0, orig);
#pragma GCC unroll 16
	for (uint32_t i = 1; i < DETAIL_STACK_FIXED_WORDS; i++)
		ada_detail_put(dst, i, ret_slot[i]);
}

__attribute__((always_inline)) static inline void
detail_put_call_fixed(_Atomic uint64_t *w, uint64_t fn_id, const uint64_t *ret_slot,
                      const struct ada_hook_regs *regs, uint64_t ts, uint64_t link, uint64_t orig)
{
	detail_put_call_body(w, ATF_DETAIL_FUNCTION_CALL, ADA_DREC_CALL_WORDS, fn_id, ret_slot,
	                     regs, ts, link, orig);
}

/* The words of a RETURN record at w. sp: the stack pointer after the
 * function's return, where the return trampoline keeps the registers
 * the record holds (detail_put_return_regs). */
__attribute__((always_inline)) static inline void detail_put_return(_Atomic uint64_t *w,
                                                                    uint64_t fn_id, uint64_t sp,
                                                                    uint64_t orig, uint64_t ts,
                                                                    uint64_t link)
{
	const uint64_t *saved = (const uint64_t *)(uintptr_t)sp;
	ada_detail_put(w, ADA_DREC_TS, ts);
	ada_detail_put(w, ADA_DREC_LINK, link);
	ada_detail_put(w, ADA_DREC_FN, fn_id);
	ada_detail_put(w, ADA_DREC_META, ada_drec_meta(ATF_DETAIL_FUNCTION_RETURN, 0, 0));
	detail_put_return_regs(w, saved, sp, orig);
}

/* --detail-fp: xmm0..xmm(n-1), the low 64 bits of each, into words
 * w[at..]. Read here, where they still hold the traced function's
 * arguments (at entry) or return values (at return): nothing before in
 * hook context uses a vector register (-mgeneral-regs-only), and the
 * cold paths that call out of it save and restore them
 * (handlers_fpu_save). The asm only names the registers: no vector
 * register is allocated. arm64: v0..v7 (d0..d7, their low 64 bits). */
#if defined(__aarch64__)
#define DETAIL_VREG_0_1 "fmov %0, d0\n\tfmov %1, d1"
#define DETAIL_VREG_2_7                                                                            \
	"fmov %0, d2\n\tfmov %1, d3\n\tfmov %2, d4\n\tfmov %3, d5\n\tfmov %4, d6\n\tfmov %5, d7"
#else
#define DETAIL_VREG_0_1 "movq %%xmm0, %0\n\tmovq %%xmm1, %1"
#define DETAIL_VREG_2_7                                                                            \
	"movq %%xmm2, %0\n\tmovq %%xmm3, %1\n\tmovq %%xmm4, %2\n\tmovq %%xmm5, %3\n\t"             \
	"movq %%xmm6, %4\n\tmovq %%xmm7, %5"
#endif
__attribute__((always_inline)) static inline void detail_put_xmm(_Atomic uint64_t *w, uint32_t at,
                                                                 uint32_t n)
{
	uint64_t x[8];
	__asm__ volatile(DETAIL_VREG_0_1 : "=r"(x[0]), "=r"(x[1]) : : "memory");
	if (n > 2)
		__asm__ volatile(DETAIL_VREG_2_7
		                 : "=r"(x[2]), "=r"(x[3]), "=r"(x[4]), "=r"(x[5]), "=r"(x[6]),
		                   "=r"(x[7])
		                 :
		                 : "memory");
	for (uint32_t i = 0; i < n && i < 8; i++)
		ada_detail_put(w, at + i, x[i]);
}

/* detail_put_call_fixed's record with xmm0..7 (--detail-fp): type
 * CALL_FP, the registers, the vector registers, then the 128 bytes. */
__attribute__((always_inline)) static inline void
detail_put_call_fixed_fp(_Atomic uint64_t *w, uint64_t fn_id, const uint64_t *ret_slot,
                         const struct ada_hook_regs *regs, uint64_t ts, uint64_t link,
                         uint64_t orig)
{
	detail_put_xmm(w, ADA_DREC_CALL_WORDS, ATF_DETAIL_XMM_WORDS);
	detail_put_call_body(w, ATF_DETAIL_FUNCTION_CALL_FP, ADA_DREC_CALL_FP_WORDS, fn_id,
	                     ret_slot, regs, ts, link, orig);
}

/* A RETURN record with xmm0 and xmm1 (--detail-fp): detail_put_return's
 * words, its type RETURN_FP, then the two registers. */
__attribute__((always_inline)) static inline void detail_put_return_fp(_Atomic uint64_t *w,
                                                                       uint64_t fn_id, uint64_t sp,
                                                                       uint64_t orig, uint64_t ts,
                                                                       uint64_t link)
{
	detail_put_xmm(w, ADA_DREC_RETURN_WORDS, 2);
	detail_put_return(w, fn_id, sp, orig, ts, link);
	ada_detail_put(w, ADA_DREC_META, ada_drec_meta(ATF_DETAIL_FUNCTION_RETURN_FP, 0, 0));
}
_Static_assert(ADA_DREC_RETURN_WORDS + 2 == ADA_DREC_RETURN_FP_WORDS &&
                   ADA_DREC_CALL_WORDS + ATF_DETAIL_XMM_WORDS == ADA_DREC_CALL_FP_WORDS,
               "the _FP records: the vector registers after the general ones");

#endif
