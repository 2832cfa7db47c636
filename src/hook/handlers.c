/*
 * The enter/exit handlers the trampolines call (hook context).
 *
 * Threads: every traced thread runs these on its own calls; each touches
 * only its own TLS shadow stack (shadow_internal.h) and its own ring
 * producer (ring.h). The globals in agent_hot are read-only here.
 *
 * Rules for this file (compiled with -mgeneral-regs-only and
 * -fno-stack-protector): no libc calls, no allocation, no errno; the one
 * syscall (mmap of a thread's shadow stack, on its first traced call) is
 * made with inline asm. TLS is initial-exec. Per thread, `guard` marks the
 * agent's own work (nothing it calls is traced, counted), and `in_hook`
 * marks a running handler: a signal handler that interrupts it is traced
 * through the side path (shadow_internal.h) and replayed when the
 * interrupted handler is done.
 *
 * The detail lane's handlers are in handlers_detail.c, which this file
 * includes (one translation unit: gcc's inlining and cloning of the hot
 * handlers depend on the whole unit, and compiling the lanes apart
 * changed ada_hook_on_enter_detail's fast path -- objdump).
 */
#include <errno.h> /* ESRCH only: nothing here reads or writes errno */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "agent_internal.h"
#include "hook_mem.h"
#include "keysym.h"
#include "ring.h"

#define SHADOW_EMIT(fn, kind, depth) handlers_emit((fn), (kind), (depth))
#define SHADOW_IS_RET(addr) hook_mem_is_tramp(addr)
static inline void handlers_emit(uint64_t fn_id, uint32_t kind, uint32_t depth);
#include "shadow_internal.h"
#include "detail_rec_internal.h"

/* The shadow stack grows as the thread's depth does: the whole range is
 * reserved at the thread's first traced call (PROT_NONE: address space
 * only, no commit charge), the first HANDLERS_SHADOW_FIRST entries (2 MiB)
 * are made usable, and each time the stack is full the next part is
 * (doubling), up to HANDLERS_SHADOW_MAX entries -- 4 Mi frames deep, 128
 * MiB of address space -- beyond which calls are not traced (counted:
 * shadow_full). Pages are backed only when the depth reaches them. The
 * side queue for signal handlers nested in the handlers (64 Ki events,
 * 1 MiB) comes first in the same mapping, usable from the start, so the
 * usable part stays one region. */
#define HANDLERS_SHADOW_FIRST (1u << 16)
#define HANDLERS_SHADOW_MAX (1u << 22)
#define HANDLERS_SIDE_CAP (1u << 16)
/* The side queue, then the grave and the side frames (kept out of TLS:
 * shadow_internal.h), then the stack, which starts on a page boundary
 * (handlers_shadow_grow() mprotects from its entries). */
#define HANDLERS_PAGE 4096u
#define HANDLERS_SIDE_BYTES                                                                        \
	(((size_t)HANDLERS_SIDE_CAP * sizeof(struct shadow_side_ev) +                              \
	  (size_t)(SHADOW_GRAVE + SHADOW_SIDE_FRAMES) * sizeof(struct shadow_entry) +              \
	  HANDLERS_PAGE - 1) &                                                                     \
	 ~(size_t)(HANDLERS_PAGE - 1))
#define HANDLERS_MAP_BYTES                                                                         \
	(HANDLERS_SIDE_BYTES + (size_t)HANDLERS_SHADOW_MAX * sizeof(struct shadow_entry))

struct agent_hot agent_hot;

/* The trampolines call the handlers with rsp as the traced code left it
 * minus the registers they save: 8 bytes off the ABI's 16-byte alignment
 * for a conforming caller, anything for another (x86_emit.c; aligning
 * there cost 8 instructions per traced call). The hot handlers call
 * nothing (HANDLERS_LEAF: they only jump to the cold functions) and need
 * no alignment (-mgeneral-regs-only: no vector spills); every out-of-line
 * function here that calls anything outside this file realigns rsp in its
 * own prologue (HANDLERS_REALIGN; gcc then makes its own tail calls
 * ordinary calls), so whatever it reaches (libc, the ring's slow path,
 * keysym lookups, the unwinder) sees the ABI's alignment. HANDLERS_COLD
 * is the usual form. */
#define HANDLERS_REALIGN HOOK_ARCH_REALIGN
#define HANDLERS_COLD __attribute__((cold, noinline)) HANDLERS_REALIGN
/* A cold function that reaches nothing outside this file but through
 * realigning functions needs no realignment itself: this form keeps gcc's
 * interprocedural constant propagation, which drops the shadow pointer
 * argument (the callee derives it from TLS); on the two tail calls of
 * ada_hook_on_enter that take ret_slot that saves a register move on its
 * fast path. tools/check-handler-align.py (test hook_arch_align) fails if
 * one of them ever calls out directly. */
#define HANDLERS_COLD_LOCAL __attribute__((cold, noinline))

_Static_assert(ADA_DREC_F_STACK_CLIPPED == 0x1u && ADA_DREC_F_OFF_STACK == 0x2u,
               "agent_stack_take() (agent_internal.h) spells these flags out");

/* The thread's shadow stack and ring producer in one TLS block: the hot
 * handlers reach both through one GOT load (initial-exec TLS in a shared
 * object: the block's offset from the thread pointer is a GOT entry per
 * symbol), on the same or the next cache line. The ring's own code
 * (producer.c: the slow path; agent_attach.c) names the producer part
 * ada_producer_tls, an alias of the block, whose first member it is; its
 * weak definition in producer.c gives way to this one. Below, both names
 * stand for the members, so every access here goes through handlers_tls. */
struct handlers_tls {
	struct ada_producer producer; /* first: ada_producer_tls aliases the block */
	struct ada_shadow shadow;
};
__thread struct handlers_tls handlers_tls __attribute__((tls_model("initial-exec")));
extern __thread struct ada_producer ada_producer_tls
    __attribute__((alias("handlers_tls"), tls_model("initial-exec")));
#define ada_producer_tls (handlers_tls.producer)
#define ada_shadow_tls (handlers_tls.shadow)

/* The code reached from the cold paths (the ring's slow path, the
 * pthread key, the exit bookkeeping) is ordinary code that may use vector
 * registers, which hold the traced function's float arguments (at entry)
 * or float results (at return) and which the trampolines do not save. So
 * every cold path runs between these two: the whole extended state goes
 * to the stack (hook_arch_fpu_save, sized at init: agent_hot.xsave_size). */
#define handlers_fpu hook_arch_fpu

static inline void handlers_fpu_save(struct handlers_fpu *f)
{
	hook_arch_fpu_save(f, agent_hot.xsave_size);
}

static inline void handlers_fpu_restore(const struct handlers_fpu *f)
{
	hook_arch_fpu_restore(f, agent_hot.xsave_size);
}

/* ---- the ring ----
 * The fast path is ada_emit()'s own (a TLS head/limit test, rdtsc, the
 * stores). Its slow path is ordinary code (see handlers_fpu), so the
 * handlers test head < limit themselves and go to handlers_emit_slow()
 * otherwise; ADA_TS_CLOCK arenas, threads without a slot and arenas that
 * are gone (a --no-follow child) all keep limit == 0 and come here. */

/* Claiming a slot (first event of a thread) calls into libc, which may
 * call traced functions: guarded. Waiting for the drain only calls
 * sched_yield from the agent's own code, which the enter handler
 * recognises by its return address: not guarded, so a signal handler that
 * runs during a long wait is traced (through the side path). */
HANDLERS_COLD static void handlers_emit_slow(uint64_t fn_id, uint32_t kind, uint32_t depth)
{
	struct handlers_fpu f;
	struct ada_shadow *s = &ada_shadow_tls;
	bool claim = ada_producer_tls.events == NULL;
	handlers_fpu_save(&f);
	s->guard += claim;
	ada_emit_to(&ada_producer_tls, fn_id, kind, depth);
	s->guard -= claim;
	if (ada_unlikely(ada_producer_tls.lagging) && !s->gone) {
		s->gone = 1; /* the recorder is gone: untraced from here (shadow_internal.h) */
		s->guard++;
	}
	handlers_fpu_restore(&f);
}

static inline void handlers_emit(uint64_t fn_id, uint32_t kind, uint32_t depth)
{
	const struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit))
		handlers_emit_slow(fn_id, kind, depth);
	else
		ada_emit_to(&ada_producer_tls, fn_id, kind, depth);
}

/* The stack is full: the next part of the reservation becomes usable
 * (the entries [0, cap + 1) are, the sentinel included). */
static bool handlers_shadow_grow(struct ada_shadow *s)
{
	uint32_t have = s->cap + 1, want = have * 2;
	if (have >= HANDLERS_SHADOW_MAX)
		return false; /* the deepest we trace */
	if (want > HANDLERS_SHADOW_MAX)
		want = HANDLERS_SHADOW_MAX;
	struct shadow_entry *m = s->base - 1;
	long r = hook_arch_syscall6(SYS_mprotect, (long)(m + have),
	                            (long)((size_t)(want - have) * sizeof(*m)),
	                            PROT_READ | PROT_WRITE, 0, 0, 0);
	if (r != 0)
		return false;
	s->cap = want - 1;
	return true;
}

/* Shadow stacks of ended threads (retire_internal.h): the exit destructor
 * leaves its thread's mapping there for glibc's teardown after it; once
 * the kernel no longer knows that thread (tgkill signal 0: ESRCH), the
 * next thread to start takes it as its own, and whoever next starts or
 * ends a thread unmaps those past the few kept for that. Without this,
 * every ended thread kept two mappings: 30 000 short threads passed
 * vm.max_map_count (65 530) and the program's own mmap failed. */
#define RETIRE_GONE(tid)                                                                           \
	(hook_arch_syscall6(SYS_tgkill, agent_hot.pid, (tid), 0, 0, 0, 0) == -ESRCH)
#define RETIRE_UNMAP(a)                                                                            \
	hook_arch_syscall6(SYS_munmap, (long)(a), (long)HANDLERS_MAP_BYTES, 0, 0, 0, 0)
#include "retire_internal.h"
static struct retire_table handlers_retired;

static void handlers_reclaim(void)
{
	retire_reclaim(&handlers_retired, RETIRE_KEEP);
}

static bool handlers_retire(uintptr_t map, bool grew)
{
	int32_t tid = (int32_t)hook_arch_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	return retire_put(&handlers_retired, map, tid, grew);
}

/* A new mapping for a shadow stack: reserved whole, its first part
 * usable; 0 when the system refuses. */
static long handlers_shadow_map(void)
{
	handlers_reclaim(); /* ended threads' stacks first: the mapping count stays flat */
	long p = hook_arch_syscall6(SYS_mmap, 0, (long)HANDLERS_MAP_BYTES, PROT_NONE,
	                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p < 0 && p > -4096)
		return 0;
	size_t usable =
	    HANDLERS_SIDE_BYTES + (size_t)HANDLERS_SHADOW_FIRST * sizeof(struct shadow_entry);
	if (hook_arch_syscall6(SYS_mprotect, p, (long)usable, PROT_READ | PROT_WRITE, 0, 0, 0) !=
	    0) {
		hook_arch_syscall6(SYS_munmap, p, (long)HANDLERS_MAP_BYTES, 0, 0, 0, 0);
		return 0;
	}
	return p;
}

/* First traced call of a thread (or a failed earlier try), or a full
 * stack. The mapping holds the side queue, then the sentinel entry
 * (shadow_internal.h), then the stack: an ended thread's (retire_take),
 * else a new one. Of a reused one only the grave must start empty (its
 * entries are looked up by address, and the new thread's stack may lie
 * where the old one's did); every other part is read only below
 * positions kept in TLS, which start at 0. */
HANDLERS_COLD static bool handlers_shadow_alloc_fpu(struct ada_shadow *s)
{
	if (s->cap != 0)
		return handlers_shadow_grow(s);
	agent_thread_started();    /* the one libc call: a pthread key, for thread exit */
	if (agent_hot.detail_on) { /* and, for the detail lane, the stack's bounds */
		agent_thread_stack(&s->stack_lo, &s->stack_hi);
		/* Computed once: an rsp in [stack_lo, stack_hi - detail_stack]
		 * takes the whole snapshot (handlers_detail_call's one test). */
		if (s->stack_lo && s->stack_hi - s->stack_lo >= agent_hot.detail_stack) {
			s->dfast_lo = s->stack_lo;
			s->dfast_span = s->stack_hi - agent_hot.detail_stack - s->stack_lo;
		}
	}
	long p = (long)retire_take(&handlers_retired);
	bool reused = p != 0;
	if (!reused && (p = handlers_shadow_map()) == 0)
		return false;
	struct shadow_entry *m = (struct shadow_entry *)(p + (long)HANDLERS_SIDE_BYTES);
	m[0].slot = SHADOW_SENTINEL_SLOT;
	s->base = m + 1;
	s->side.ev = (struct shadow_side_ev *)p;
	s->grave = (struct shadow_entry *)(s->side.ev + HANDLERS_SIDE_CAP);
	for (uint32_t g = 0; reused && g < SHADOW_GRAVE; g++)
		s->grave[g].slot = NULL; /* no entry: no slot is NULL */
	s->side.fr = s->grave + SHADOW_GRAVE;
	s->side.ev_cap = HANDLERS_SIDE_CAP;
	s->cap = HANDLERS_SHADOW_FIRST - 1;
	return true;
}

HANDLERS_COLD static bool handlers_shadow_alloc(struct ada_shadow *s)
{
	struct handlers_fpu f;
	handlers_fpu_save(&f);
	s->guard++;
	bool ok = handlers_shadow_alloc_fpu(s);
	s->guard--;
	handlers_fpu_restore(&f);
	return ok;
}

/* Per-thread counts of calls not traced, folded into process totals when
 * a thread ends (and for the calling thread on demand). */
static _Atomic uint64_t handlers_untraced[AGENT_UNTRACED_COUNT];

/* A call after the thread's exit destructor: nothing folds its thread's
 * counts any more, so it goes to the process total at once. Relaxed:
 * plain statistics, read after the threads are done. */
static void handlers_count_exited(void)
{
	atomic_fetch_add_explicit(&handlers_untraced[AGENT_UNTRACED_THREAD_EXIT], 1,
	                          memory_order_relaxed);
}

/* Only when a thread has no frame at all and a return still comes through
 * the trampoline: there is no address to go on with. */
HANDLERS_COLD __attribute__((noreturn)) static void handlers_lost_return(void)
{
	static const char msg[] = "ada-agent: a return through the trampoline on a thread with "
	                          "no traced frame left; cannot continue\n";
	hook_arch_syscall6(SYS_write, 2, (long)msg, sizeof(msg) - 1, 0, 0, 0);
	__builtin_trap();
}

/* A return no frame matches (shadow_resync): the program goes on at the
 * innermost frame's caller and the thread is traced no more (counted);
 * never killed for it. */
HANDLERS_COLD static uint64_t handlers_resync(struct ada_shadow *s, const uint64_t *slot)
{
	uint64_t o = shadow_resync(s, slot, agent_hot.ret_tramp);
	s->resyncs++;
	if (!s->stopped) {
		s->stopped = 1;
		s->stops++;
		s->guard++; /* for good: the fast paths test only the guard */
	}
	if (ada_unlikely(o == 0))
		handlers_lost_return();
	return o;
}

#define HANDLERS_NO_PUSH UINT32_MAX

/* The action of a special function at its entry. Returns the flags to push
 * its frame with, or HANDLERS_NO_PUSH when it must not be pushed (it does
 * not return normally, or an unwinder is about to read its return
 * address). */
static uint32_t handlers_special_act(struct ada_shadow *s, enum agent_special kind,
                                     uint64_t *ret_slot, const struct ada_hook_regs *regs)
{
	switch (kind) {
	case AGENT_SP_UNWIND:
		shadow_pop_below(s, ret_slot);
		shadow_restore_all(s, ret_slot, agent_hot.ret_tramp);
		return HANDLERS_NO_PUSH;
	case AGENT_SP_FORCED:
		shadow_pop_all(s, ret_slot, agent_hot.ret_tramp);
		return HANDLERS_NO_PUSH;
	case AGENT_SP_CATCH:
		shadow_pop_below(s, ret_slot);
		if (s->restored)
			shadow_rearm_all(s, ret_slot, agent_hot.ret_tramp);
		return 0;
	case AGENT_SP_EXIT:
		/* A vfork/posix_spawn child shares our memory: not its exit. */
		if (hook_arch_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != agent_hot.pid)
			return HANDLERS_NO_PUSH;
		if (ada_producer_arena())
			ada_arena_set_exited(ada_producer_arena(), (int)HOOK_ARCH_REGS_ARG0(regs));
		shadow_pop_all(s, ret_slot, agent_hot.ret_tramp);
		return HANDLERS_NO_PUSH;
	case AGENT_SP_DL:
		return SHADOW_F_RESCAN;
	case AGENT_SP_EXEC:
		/* A vfork/posix_spawn child runs on our shadow stack: its exec
		 * does not end our frames. */
		if (hook_arch_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) == agent_hot.pid)
			shadow_close_all(s);
		return HANDLERS_NO_PUSH;
	case AGENT_SP_SWITCH:
		/* Not pushed: its own return slot is copied with the rest. */
		s->switch_cut += shadow_switch_all(s, ret_slot, agent_hot.ret_tramp);
		s->switches++;
		return HANDLERS_NO_PUSH;
	case AGENT_SP_NONE:
		break;
	}
	return 0;
}

/* ---- entry and return ----
 * The common cases run in ada_hook_on_enter() and ada_hook_on_exit()
 * without a call: the guard/in_hook test, the fast shadow-stack path
 * (shadow_internal.h), the ring write, the side-queue test. Every other
 * case is a cold, out-of-line function reached by a tail call, so the two
 * hot functions are leaves that need no callee-saved register and no
 * frame (HANDLERS_LEAF). */
#define HANDLERS_LEAF __attribute__((hot, optimize("omit-frame-pointer")))

/* in_hook: bit 0 while a hook handler runs on this thread; a signal
 * handler that interrupts it and queues side events sets HANDLERS_QUEUED
 * too, after queueing. Both hot handlers set bit 0 and clear it with one
 * read-modify-write instruction each, so a signal lands before or after
 * the transition, never inside it: one that queued before the clear is
 * always seen by it (and replayed by handlers_flush), one that comes after
 * it is traced directly. Both are 4-byte accesses, like every other
 * access to in_hook on the hot path, so each load is store-forwarded. */
#define HANDLERS_QUEUED 2u

#if HOOK_ARCH_IN_HOOK_RMW
/* Sets bit 0; returns its old value (1: a handler is running). Every
 * shadow-stack and ring access stays after it (its memory clobber). */
static inline bool handlers_in_hook_set(struct ada_shadow *s)
{
	return hook_arch_bit0_set(&s->in_hook);
}

/* Clears bit 0 (in_hook is 1, or 1 | QUEUED); true when events were
 * queued. Every access stays before it (its memory clobber). */
static inline bool handlers_in_hook_clear(struct ada_shadow *s)
{
	return hook_arch_sub1_nz(&s->in_hook);
}
#else
/* Portable: plain accesses between signal fences (the only other party
 * is a signal handler on this thread); the clear tests the queue itself
 * after clearing, which has no window either. */
static inline bool handlers_in_hook_set(struct ada_shadow *s)
{
	bool was = s->in_hook != 0;
	s->in_hook |= 1;
	atomic_signal_fence(memory_order_seq_cst); /* pairs with the clear's */
	return was;
}

static inline bool handlers_in_hook_clear(struct ada_shadow *s)
{
	atomic_signal_fence(memory_order_seq_cst); /* pairs with the set's */
	s->in_hook = 0;
	atomic_signal_fence(memory_order_seq_cst);
	return s->side.ev_head != s->side.ev_tail || s->reattach;
}
#endif

/* Replays what signal handlers queued while a handler ran, with in_hook
 * set again (which drops the mark: the queue is drained after it); more
 * can come while it emits (a signal during a ring wait): then the clear
 * sees the mark again. */
HANDLERS_COLD static void handlers_flush(struct ada_shadow *s)
{
	do {
		s->in_hook = 1;
		/* Pairs with the memory clobber of the clear: the mark is
		 * dropped before the queue is read. */
		atomic_signal_fence(memory_order_seq_cst);
		if (ada_unlikely(s->reattach)) { /* agent_shadow_attach_reset */
			s->reattach = 0;
			s->inherited = s->top;
		}
		shadow_side_flush(s);
	} while (handlers_in_hook_clear(s));
}

static inline void handlers_leave(struct ada_shadow *s)
{
	if (ada_unlikely(handlers_in_hook_clear(s)))
		handlers_flush(s);
}

/* A call made while a handler runs on this thread: a signal handler that
 * interrupted it (side path), or the agent's own work: a call under the
 * guard, or one during a ring wait (its return address lies in the
 * agent), not traced. */
HANDLERS_COLD_LOCAL static void handlers_nested_enter(struct ada_shadow *s, uint64_t fn_id,
                                                      uint64_t *ret_slot)
{
	if (s->guard || !agent_hot.active || *ret_slot - agent_hot.self_lo < agent_hot.self_len) {
		s->suppressed++; /* the agent's own work (a cold path's libc calls) */
		return;
	}
	shadow_side_enter(s, fn_id, ret_slot, agent_hot.ret_tramp);
	/* After the events are queued: the interrupted handler's clear then
	 * reports them. */
	atomic_signal_fence(memory_order_seq_cst);
	s->in_hook |= HANDLERS_QUEUED;
}

/* The tails of the hot paths when the ring needs its slow path or the
 * side queue is not empty (the exit's keeps the address to return). */
HANDLERS_COLD static void handlers_emit_slow_leave(struct ada_shadow *s, uint64_t fn_id,
                                                   uint32_t kind, uint32_t depth)
{
	handlers_emit_slow(fn_id, kind, depth);
	handlers_leave(s);
}

HANDLERS_COLD static uint64_t handlers_emit_slow_leave_ret(struct ada_shadow *s, uint64_t fn_id,
                                                           uint32_t depth, uint64_t orig)
{
	handlers_emit_slow(fn_id, ATF_EVENT_RETURN, depth);
	handlers_leave(s);
	return orig;
}

HANDLERS_COLD static uint64_t handlers_flush_ret(struct ada_shadow *s, uint64_t orig)
{
	handlers_flush(s);
	return orig;
}

/* Every entry the fast path declined: the general pops and push. */
static void handlers_push_general(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
                                  uint32_t flags)
{
	shadow_pop_dead(s, ret_slot, *ret_slot, agent_hot.ret_tramp);
	if (ada_unlikely(s->top >= s->cap) && !handlers_shadow_alloc(s)) {
		s->lost++;
		return;
	}
	if (ada_unlikely(!shadow_push(s, fn_id, ret_slot, agent_hot.ret_tramp, flags)))
		s->lost++;
}

/* The fast path does not test `active`: a thread passes here before its
 * first push (no shadow stack yet), and a thread that has one when
 * recording stops (a fork child that records nothing) keeps its guard
 * set (agent_process.c). */
HANDLERS_COLD_LOCAL static void handlers_enter_slow(struct ada_shadow *s, uint64_t fn_id,
                                                    uint64_t *ret_slot)
{
	if (agent_hot.active)
		handlers_push_general(s, fn_id, ret_slot, 0);
	else
		s->suppressed++;
	handlers_leave(s);
}

/* ada attach, again (agent_attach.c, every other thread stopped; not
 * hook context): the thread whose thread pointer is tp (ours: self_tp)
 * forgets that it found the previous recorder gone. Its producer state
 * is reset so that its next event claims a slot in the new arena, but a
 * thread with gone set emits no event, and ada_producer_drain_back()
 * looks at no arena: it would stay untraced for good. */
void agent_shadow_attach_reset(uintptr_t self_tp, uintptr_t tp)
{
	struct ada_shadow *s = (struct ada_shadow *)((uintptr_t)&ada_shadow_tls - self_tp + tp);
	if (s->gone) {
		s->gone = 0;
		s->guard--; /* raised with gone (handlers_emit_slow) */
	}
	/* Frames still open from the earlier session return without events
	 * in this one (as a fork child's, and as frames open at a first
	 * attach, which have no entry at all): otherwise their RETURNs, e.g.
	 * of a thread stopped waiting for ring space in the old arena after
	 * the detach, would start the new trace unmatched. A thread stopped
	 * inside a handler is mid-update: that handler does it when it is
	 * done, told through in_hook as a signal handler would tell it
	 * (handlers_flush; the thread is stopped, so these plain stores are
	 * all it sees when it resumes). */
	if (s->in_hook & 1u) {
		s->reattach = 1;
		s->in_hook |= HANDLERS_QUEUED;
	} else {
		s->inherited = s->top;
	}
}

/* A call of a thread that found the recorder gone: counted, in
 * agent.json's untraced_calls and, its two events, in the arena's drops
 * (recorder_gone: the manifest, `ada status` and the summary say it with
 * every other loss; `ada recover` reads it when the recorder died); now
 * and then, whether the drain beats again (then tracing resumes). */
static void handlers_gone_call(struct ada_shadow *s)
{
	ada_producer_count_gone(&ada_producer_tls);
	if ((++s->gone_lost & 4095u) == 0 && ada_producer_drain_back()) {
		s->gone = 0;
		s->guard--;
	}
}

/* The agent's own work on this thread, or a thread no longer traced
 * (handlers_resync): not traced (counted). */
HANDLERS_COLD static void handlers_enter_guarded(struct ada_shadow *s)
{
	if (s->exited)
		handlers_count_exited();
	else if (s->gone)
		handlers_gone_call(s);
	else if (s->stopped)
		s->stopped_lost++;
	else
		s->suppressed++;
	handlers_leave(s);
}

/* The CALL event of a frame pushed at depth, and the clear: the rest of
 * an index-lane entry once the push is done. */
__attribute__((always_inline)) static inline void
handlers_enter_emit(struct ada_shadow *s, uint64_t fn_id, uint32_t depth)
{
	const struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit))
		return handlers_emit_slow_leave(s, fn_id, ATF_EVENT_CALL, depth);
	ada_emit_to(&ada_producer_tls, fn_id, ATF_EVENT_CALL, depth);
	if (ada_unlikely(handlers_in_hook_clear(s)))
		return handlers_flush(s);
}

/* An entry the fast push declined: a tail call (shadow_enter_tail) in a
 * few more loads, the CALL as on the fast path; anything else to the
 * general code. Out of line, so the fast path's code stays as it was;
 * a leaf like it (it only jumps to the cold functions). */
HANDLERS_LEAF __attribute__((noinline)) static void
handlers_enter_tail(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot)
{
	uint32_t depth;
	if (ada_unlikely(!shadow_enter_tail(s, fn_id, ret_slot, 0, &depth)))
		return handlers_enter_slow(s, fn_id, ret_slot);
	handlers_enter_emit(s, fn_id, depth);
}

/* An entry on the index lane alone, once in_hook is set and the guard
 * is clear: the whole fast path of ada_hook_on_enter(), and of the detail
 * lane's handler for a function outside the detail set. */
__attribute__((always_inline)) static inline void
handlers_enter_index(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot)
{
	uint32_t depth;
	if (ada_unlikely(!shadow_enter_fast(s, fn_id, ret_slot, agent_hot.ret_tramp, 0, &depth)))
		return handlers_enter_tail(s, fn_id, ret_slot);
	handlers_enter_emit(s, fn_id, depth);
}

HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter(uint64_t fn_id, uint64_t *ret_slot,
                                                 const struct ada_hook_regs *regs)
{
	(void)regs;
	struct ada_shadow *s = &ada_shadow_tls;
	/* in_hook is claimed first and the guard tested apart: an 8-byte
	 * test of both would wait for the previous handler's 4-byte store
	 * to in_hook to leave the store buffer (no store forwarding into a
	 * wider load): a store-forwarding stall on every event. */
	if (ada_unlikely(handlers_in_hook_set(s)))
		return handlers_nested_enter(s, fn_id, ret_slot);
	if (ada_unlikely(s->guard != 0))
		return handlers_enter_guarded(s);
	handlers_enter_index(s, fn_id, ret_slot);
}

/* The special action, between xsave and xrstor (it may call libc). */
HANDLERS_COLD static uint32_t handlers_special_enter(struct ada_shadow *s, enum agent_special kind,
                                                     uint64_t *ret_slot,
                                                     const struct ada_hook_regs *regs)
{
	struct handlers_fpu f;
	handlers_fpu_save(&f);
	s->guard++;
	uint32_t r = handlers_special_act(s, kind, ret_slot, regs);
	s->guard--;
	handlers_fpu_restore(&f);
	return r;
}

/* The enter handler of the special functions (agent_internal.h): their
 * trampolines pass the kind in the fn_id's top byte. */
HANDLERS_REALIGN ADA_HOOKCTX void agent_hook_on_enter_special(uint64_t tagged_fn_id,
                                                              uint64_t *ret_slot,
                                                              const struct ada_hook_regs *regs)
{
	struct ada_shadow *s = &ada_shadow_tls;
	uint64_t fn_id = tagged_fn_id & ((1ull << AGENT_SPECIAL_SHIFT) - 1);
	enum agent_special kind = (enum agent_special)(tagged_fn_id >> AGENT_SPECIAL_SHIFT);
	/* A thread no longer traced still tells the exit status. */
	if (ada_unlikely(s->stopped) && kind == AGENT_SP_EXIT && s->in_hook == 0 &&
	    agent_hot.active) {
		handlers_in_hook_set(s);
		handlers_special_enter(s, kind, ret_slot, regs);
		s->stopped_lost++;
		return handlers_leave(s);
	}
	if (s->guard != 0 || s->in_hook != 0 || !agent_hot.active)
		return handlers_nested_enter(s, fn_id, ret_slot);
	handlers_in_hook_set(s);
	uint32_t flags = handlers_special_enter(s, kind, ret_slot, regs);
	if (flags != HANDLERS_NO_PUSH)
		handlers_push_general(s, fn_id, ret_slot, flags);
	handlers_leave(s);
}

/* A return while a handler runs: a signal handler's frame (side path). */
HANDLERS_COLD static uint64_t handlers_exit_nested(struct ada_shadow *s, const uint64_t *slot)
{
	uint64_t o = shadow_side_return(s, slot);
	if (ada_unlikely(o == 0)) { /* as handlers_resync, for the side frames */
		o = shadow_side_resync(s);
		s->resyncs++;
		if (o == 0)
			handlers_lost_return();
	}
	atomic_signal_fence(memory_order_seq_cst); /* as in handlers_nested_enter() */
	s->in_hook |= HANDLERS_QUEUED;
	return o;
}

/* Every return the fast path declined: frames above it (longjmp),
 * inherited frames, dlopen's rescan, the grave. */
HANDLERS_COLD static uint64_t handlers_exit_slow(struct ada_shadow *s, const uint64_t *slot)
{
	uint32_t flags;
	uint64_t orig = shadow_return(s, slot, &flags);
	if (flags & SHADOW_F_RESCAN) {
		/* dlopen/dlclose returned an integer or pointer: no vector
		 * result to keep, and every vector register is dead here. */
		s->guard++;
		agent_dl_changed();
		s->guard--;
	}
	if (ada_unlikely(orig == 0))
		orig = handlers_resync(s, slot);
	handlers_leave(s);
	return orig;
}

/* A return on the index lane alone, once the fast pop took frame e: the
 * rest of ada_hook_on_exit()'s fast path, and of the detail lane's for a
 * call that got no detail record. */
__attribute__((always_inline)) static inline uint64_t
handlers_exit_index(struct ada_shadow *s, const struct shadow_entry *e)
{
	const struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit))
		return handlers_emit_slow_leave_ret(s, e->fn_id, e->depth, e->orig);
	ada_emit_to(&ada_producer_tls, e->fn_id, ATF_EVENT_RETURN, e->depth);
	if (ada_unlikely(handlers_in_hook_clear(s)))
		return handlers_flush_ret(s, e->orig);
	return e->orig;
}

/* A frame on the shadow stack had its CALL recorded: its RETURN is
 * recorded whatever the guard says (e.g. __run_prefork_handlers returning
 * after our atfork prepare set it). */
HANDLERS_LEAF ADA_HOOKCTX uint64_t ada_hook_on_exit(uint64_t sp)
{
	struct ada_shadow *s = &ada_shadow_tls;
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	if (ada_unlikely(handlers_in_hook_set(s)))
		return handlers_exit_nested(s, slot);
	struct shadow_entry e;
	if (ada_unlikely(!shadow_return_fast(s, slot, 0, &e)))
		return handlers_exit_slow(s, slot);
	return handlers_exit_index(s, &e);
}

/* ---- the fast form's C continuations (x86_emit_fast.c, "Fast form") ----
 * The machine-code fast paths claim in_hook themselves (btsl, first) and
 * come here, in_hook still held, for every case they decline before any
 * store: exactly the rest of ada_hook_on_enter()/ada_hook_on_exit(). A
 * claim that found the bit set goes to those two instead (nested). */
HANDLERS_LEAF ADA_HOOKCTX void ada_hook_on_enter_held(uint64_t fn_id, uint64_t *ret_slot,
                                                      const struct ada_hook_regs *regs)
{
	(void)regs;
	struct ada_shadow *s = &ada_shadow_tls;
	if (ada_unlikely(s->guard != 0))
		return handlers_enter_guarded(s);
	handlers_enter_index(s, fn_id, ret_slot);
}

HANDLERS_LEAF ADA_HOOKCTX uint64_t ada_hook_on_exit_held(uint64_t sp)
{
	struct ada_shadow *s = &ada_shadow_tls;
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	struct shadow_entry e;
	if (ada_unlikely(!shadow_return_fast(s, slot, 0, &e)))
		return handlers_exit_slow(s, slot);
	return handlers_exit_index(s, &e);
}

/* The fast paths' clear found QUEUED (bit 0 is clear by now, as after
 * handlers_in_hook_clear()): replayed as the C handlers do. */
HANDLERS_COLD ADA_HOOKCTX void ada_hook_fast_flush(void)
{
	handlers_flush(&ada_shadow_tls);
}

/* The layout x86_emit_fast.c hard-codes (its FE_* and FV_* offsets). */
_Static_assert(sizeof(struct shadow_entry) == 32 && offsetof(struct shadow_entry, orig) == 0 &&
                   offsetof(struct shadow_entry, slot) == 8 &&
                   offsetof(struct shadow_entry, fn_id) == 16 &&
                   offsetof(struct shadow_entry, depth) == 24 &&
                   offsetof(struct shadow_entry, flags) == 28,
               "x86_emit_internal.h FE_*");
_Static_assert(sizeof(struct atf_index_event) == 32 &&
                   offsetof(struct atf_index_event, timestamp_ns) == 0 &&
                   offsetof(struct atf_index_event, function_id) == 8 &&
                   offsetof(struct atf_index_event, thread_id) == 16 &&
                   offsetof(struct atf_index_event, call_depth) == 24 &&
                   offsetof(struct atf_index_event, detail_seq) == 28,
               "x86_emit_internal.h FV_*");
_Static_assert(ATF_NO_DETAIL == 0xffffffffu && SHADOW_SLOT_CALL == 0 && SHADOW_F_DETAIL == 0x4u,
               "x86_emit_internal.h constants");

/* The detail lane's part of agent_fast_layout: the same choice as
 * agent_install.c's install_enter_handler(), the membership test's data
 * and the member paths' state (sh, pr: the shadow's and the producer's
 * offsets from the thread pointer). */
static void handlers_fast_layout_detail(struct hook_arch_fast *f, intptr_t sh, intptr_t pr)
{
	bool fixed = agent_hot.detail_stack == 128;
	f->enter_full =
	    fixed ? (uint64_t)&ada_hook_on_enter_detail128 : (uint64_t)&ada_hook_on_enter_detail;
	f->enter_held = fixed ? (uint64_t)&ada_hook_on_enter_detail128_held
	                      : (uint64_t)&ada_hook_on_enter_detail_held;
	f->enter_member = fixed ? (uint64_t)&ada_hook_on_enter_detail128_member
	                        : (uint64_t)&ada_hook_on_enter_detail_member;
	f->exit_full = (uint64_t)&ada_hook_on_exit_detail;
	f->exit_held = (uint64_t)&ada_hook_on_exit_detail_held;
	f->exit_member = (uint64_t)&ada_hook_on_exit_detail_member;
	f->detail_hot = (uint64_t)&agent_hot;
	f->h_ks_cur = (int32_t)offsetof(struct agent_hot, ks_cur);
	f->h_ks_area = (int32_t)offsetof(struct agent_hot, ks_area);
	f->h_ks_mask = (int32_t)offsetof(struct agent_hot, ks_mask);
	f->h_dset = (int32_t)offsetof(struct agent_hot, dset);
	f->d_all = (int32_t)offsetof(struct agent_dset, all);
	f->d_nbits = (int32_t)offsetof(struct agent_dset, nbits);
	f->d_max_mod = (int32_t)offsetof(struct agent_dset, max_mod);
	f->d_bits = (int32_t)offsetof(struct agent_dset, bits);
	/* The member paths in machine code: the 128-byte snapshot only
	 * (other sizes keep handlers_detail_put_call's length). */
	f->detail_rec = fixed && !agent_hot.detail_fp; /* --detail-fp: C writes the _FP records */
	f->p_dwords = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, dwords));
	f->p_dhead = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, dhead));
	f->p_dbytes = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, dbytes));
	f->p_dpos = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, dpos));
	f->p_dstop = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, dstop));
	f->p_dcount = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, dcount));
	f->s_dfast_lo = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, dfast_lo));
	f->s_dfast_span = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, dfast_span));
}

void agent_fast_layout(struct hook_arch_fast *f)
{
	uintptr_t tp = hook_arch_thread_pointer();
	/* Initial-exec TLS: the block lies at the same offset from every
	 * thread's pointer, and a fork child keeps it. */
	intptr_t t = (intptr_t)((uintptr_t)&handlers_tls - tp);
	intptr_t sh = t + (intptr_t)offsetof(struct handlers_tls, shadow);
	intptr_t pr = t + (intptr_t)offsetof(struct handlers_tls, producer);
	f->s_base = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, base));
	f->s_top = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, top));
	f->s_cap = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, cap));
	f->s_guard = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, guard));
	f->s_in_hook = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, in_hook));
	f->s_inherited = (int32_t)(sh + (intptr_t)offsetof(struct ada_shadow, inherited));
	f->p_events = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, events));
	f->p_mask = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, mask));
	f->p_head = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, head));
	f->p_limit = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, limit));
	f->p_head_pub = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, head_pub));
	f->p_tid_call = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, tid_call));
	f->p_tid_return = (int32_t)(pr + (intptr_t)offsetof(struct ada_producer, tid_return));
	f->ret_tramp = agent_hot.ret_tramp;
	f->enter_full = (uint64_t)&ada_hook_on_enter;
	f->enter_held = (uint64_t)&ada_hook_on_enter_held;
	f->exit_full = (uint64_t)&ada_hook_on_exit;
	f->exit_held = (uint64_t)&ada_hook_on_exit_held;
	f->flush = (uint64_t)&ada_hook_fast_flush;
	f->detail_hot = 0;
	f->enter_member = f->exit_member = 0;
	f->module = 0; /* the caller's, per block */
	if (agent_hot.detail_on)
		handlers_fast_layout_detail(f, sh, pr);
}

/* What the member paths in machine code hard-code (x86_emit_detail.c,
 * emit_member_call / emit_member_return): the records of
 * detail_put_call_fixed() and detail_put_return(), the
 * reserve of ada_detail_reserve_fast() with its prefetch, and the sizes
 * of the fields they load and store. */
_Static_assert(ADA_DREC_TS == 0 && ADA_DREC_LINK == 1 && ADA_DREC_FN == 2 && ADA_DREC_META == 3 &&
                   ADA_DREC_REGS == 4 && ADA_DREC_CALL_WORDS == 14 && ADA_DREC_RETURN_WORDS == 9 &&
                   HOOK_DREC_CALL_NREGS == 10 && HOOK_DREC_RET_NREGS == 5 &&
                   ADA_DETAIL_HDR_BYTES == 8 && ADA_DETAIL_PREFETCH_AHEAD == 2048 &&
                   ADA_DETAIL_LINE_BYTES == 64 && ATF_DETAIL_FUNCTION_CALL == 3 &&
                   ATF_DETAIL_FUNCTION_RETURN == 4 && DETAIL_STACK_FIXED_WORDS == 16,
               "x86_emit_detail.c member records");
_Static_assert(sizeof(((struct ada_producer *)0)->dpos) == 8 &&
                   sizeof(((struct ada_producer *)0)->dstop) == 8 &&
                   sizeof(((struct ada_producer *)0)->dbytes) == 8 &&
                   sizeof(((struct ada_producer *)0)->dcount) == 4 &&
                   sizeof(((struct ada_shadow *)0)->dfast_lo) == 8 &&
                   sizeof(((struct ada_shadow *)0)->dfast_span) == 8,
               "x86_emit_detail.c member records: field sizes");

/* What the detail lane's enter stub hard-codes of the key-symbol blob
 * (x86_emit_detail.c, emit_detail_test; keysym.h, ada_keysym_test) and of the
 * agent's own set (agent_dset_has): field sizes as loaded there. */
_Static_assert(offsetof(struct ada_keysym_header, flags) == 8 &&
                   offsetof(struct ada_keysym_header, n_mods) == 12 &&
                   sizeof(struct ada_keysym_header) == 64 && sizeof(struct ada_keysym_mod) == 16 &&
                   offsetof(struct ada_keysym_mod, kind) == 0 &&
                   offsetof(struct ada_keysym_mod, param) == 4 &&
                   offsetof(struct ada_keysym_mod, off) == 8,
               "x86_emit_detail.c emit_detail_test: blob layout");
_Static_assert(ADA_KEYSYM_F_ALL == 1 && ADA_KEYSYM_NONE == 0 && ADA_KEYSYM_BITSET == 1 &&
                   ADA_KEYSYM_FULL == 4 && ADA_KEYSYM_CUR_LOCAL == UINT64_MAX &&
                   ADA_KEYSYM_MAX_MODULES == 1u << 24,
               "x86_emit_detail.c emit_detail_test: constants");
_Static_assert(sizeof(((struct agent_dset *)0)->all) == 4 &&
                   sizeof(((struct agent_dset *)0)->nbits) == 4 &&
                   sizeof(((struct agent_dset *)0)->max_mod) == 8,
               "x86_emit_detail.c emit_detail_test: struct agent_dset");

/* The detail lane: handlers_detail.c, part of this translation unit. */
#define ADA_HANDLERS_DETAIL_IN_HANDLERS_C
#include "handlers_detail.c"
#undef ADA_HANDLERS_DETAIL_IN_HANDLERS_C

/* ---- called by the agent's own code (not hook context) ---- */

void agent_special_run(enum agent_special kind, uint64_t *ret_slot)
{
	struct ada_shadow *s = &ada_shadow_tls;
	if (s->guard || s->in_hook || !agent_hot.active || kind == AGENT_SP_EXIT ||
	    kind == AGENT_SP_DL)
		return;
	s->in_hook = 1;
	switch (kind) {
	case AGENT_SP_UNWIND:
		shadow_pop_below(s, ret_slot);
		shadow_restore_all(s, ret_slot, agent_hot.ret_tramp);
		break;
	case AGENT_SP_FORCED:
		shadow_pop_all(s, ret_slot, agent_hot.ret_tramp);
		break;
	case AGENT_SP_CATCH:
		shadow_pop_below(s, ret_slot);
		if (s->restored)
			shadow_rearm_all(s, ret_slot, agent_hot.ret_tramp);
		break;
	default:
		break;
	}
	shadow_side_flush(s);
	handlers_leave(s); /* with the mark test: a signal after the flush is replayed too */
}

/* The count blocks test agent_count_tls.gate: 2 a level keeps the agent's
 * own calls of count-only functions out of the counts, as the guard keeps
 * them out of the events. */
ADA_FORK_PATH void agent_guard_enter(void)
{
	ada_shadow_tls.guard++;
	agent_count_tls.gate += 2;
}

ADA_FORK_PATH void agent_guard_leave(void)
{
	ada_shadow_tls.guard--;
	agent_count_tls.gate -= 2;
}

uint32_t agent_shadow_restore_for_crash(const uint64_t *sp, uint64_t *lr)
{
	return shadow_restore_for_crash(&ada_shadow_tls, sp, lr);
}

/* The forking thread's suppressed count at the agent's atfork prepare
 * handler (written under agent.lock by the one thread forking). */
static uint64_t handlers_fork_suppressed;

void agent_untraced_fork_prepare(void)
{
	handlers_fork_suppressed = ada_shadow_tls.suppressed;
}

ADA_FORK_PATH void agent_shadow_after_fork(void)
{
	struct ada_shadow *s = &ada_shadow_tls;
	s->inherited = s->top;
	if (s->gone) { /* the child has an arena and a drain of its own */
		s->gone = 0;
		s->guard--;
	}
	/* The counts of calls not traced start again: the parent's are the
	 * parent's (its agent.json says them), so the child's agent.json
	 * holds only its own, and the summary's sums over processes count
	 * each call once. What the fork's own libc work made the guard
	 * suppress since the prepare handler is counted by both, as each
	 * process ran it. Relaxed: the child has this one thread. */
	uint64_t at_fork = handlers_fork_suppressed;
	s->suppressed = s->suppressed >= at_fork ? s->suppressed - at_fork : 0;
	s->lost = s->side.lost = s->stopped_lost = s->resyncs = s->stops = 0;
	s->switches = s->switch_cut = s->gone_lost = 0;
	for (int i = 0; i < AGENT_UNTRACED_COUNT; i++)
		atomic_store_explicit(&handlers_untraced[i], 0, memory_order_relaxed);
}

static void handlers_fold_counts(struct ada_shadow *s);

void agent_shadow_thread_exit(void)
{
	struct ada_shadow *s = &ada_shadow_tls;
	uint32_t g = s->guard;
	s->guard = 1;
	s->in_hook = 1;
	shadow_pop_all(s, (const uint64_t *)__builtin_frame_address(0), agent_hot.ret_tramp);
	shadow_side_flush(s);
	handlers_fold_counts(s);
	s->in_hook = 0;
	handlers_reclaim();
	if (s->base && handlers_retire((uintptr_t)s->side.ev, s->cap + 1 > HANDLERS_SHADOW_FIRST)) {
		/* The mapping (it starts with the side queue) stays for glibc's
		 * teardown of this thread, traced as before; reclaimed later. */
		s->guard = g;
		return;
	}
	if (s->base)
		hook_arch_syscall6(SYS_munmap, (long)s->side.ev, (long)HANDLERS_MAP_BYTES, 0, 0, 0,
		                   0);
	s->base = NULL;
	s->grave = NULL;
	s->side.ev = NULL;
	s->side.fr = NULL;
	s->side.ev_cap = 0;
	s->side.ev_head = s->side.ev_tail = 0;
	s->cap = 0;
	/* Every retired entry taken: the teardown goes untraced, counted, for
	 * good (see `exited`); g is the guard count the thread came with (the
	 * destructor runs from libc, not the agent: normally 0). */
	s->exited = 1;
	s->guard = g + 1;
}

static void handlers_fold_counts(struct ada_shadow *s)
{
	/* Relaxed: plain statistics, read after the threads are done. */
	atomic_fetch_add_explicit(&handlers_untraced[0], s->suppressed, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[1], s->lost, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[2], s->side.lost, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[3], s->stopped_lost, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[4], s->resyncs, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[5], s->stops, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[6], s->switches, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[7], s->switch_cut, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[AGENT_UNTRACED_RECORDER_GONE], s->gone_lost,
	                          memory_order_relaxed);
	s->suppressed = s->lost = s->side.lost = s->stopped_lost = s->resyncs = s->stops = 0;
	s->switches = s->switch_cut = s->gone_lost = 0;
}

void agent_untraced_counts(uint64_t out[AGENT_UNTRACED_COUNT])
{
	handlers_fold_counts(&ada_shadow_tls);
	for (int i = 0; i < AGENT_UNTRACED_COUNT; i++)
		out[i] = atomic_load_explicit(&handlers_untraced[i], memory_order_relaxed);
}
