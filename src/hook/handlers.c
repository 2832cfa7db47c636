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
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "agent_internal.h"
#include "ring.h"

#define SHADOW_EMIT(fn, kind, depth) handlers_emit((fn), (kind), (depth))
static inline void handlers_emit(uint64_t fn_id, uint32_t kind, uint32_t depth);
#include "shadow_internal.h"

/* Room for depth >= 100 000 (the spec asks for recursion of 10 000):
 * 256 Ki entries x 32 bytes = 8 MiB of address space, reserved with
 * MAP_NORESERVE, so only the pages a thread's depth reaches are backed. */
#define HANDLERS_SHADOW_CAP (1u << 18)
/* Side queue for signal handlers nested in the handlers: 64 Ki events
 * (1 MiB, same mapping, also only touched as used). */
#define HANDLERS_SIDE_CAP (1u << 16)
#define HANDLERS_MAP_BYTES                                          \
	((size_t)HANDLERS_SHADOW_CAP * sizeof(struct shadow_entry) + \
	 (size_t)HANDLERS_SIDE_CAP * sizeof(struct shadow_side_ev))

struct agent_hot agent_hot;

__thread struct ada_shadow ada_shadow_tls __attribute__((tls_model("initial-exec")));

/* The code reached from the cold paths (the ring's slow path, the
 * pthread key, the exit bookkeeping) is ordinary code that may use vector
 * registers, which hold the traced function's float arguments (at entry)
 * or float results (at return) and which the trampolines do not save. So
 * every cold path runs between these two: the whole extended state goes
 * to the stack (xsave, sized by CPUID at init; fxsave without it). */
#define HANDLERS_XSAVE_MAX 4096

struct handlers_fpu {
	uint8_t area[HANDLERS_XSAVE_MAX] __attribute__((aligned(64)));
};

static inline void handlers_fpu_save(struct handlers_fpu *f)
{
	if (agent_hot.xsave_size) {
		for (int i = 512; i < 576; i++) /* the xsave header must start zeroed */
			f->area[i] = 0;
		__asm__ volatile("xsave64 %0" : "=m"(f->area) : "a"(-1), "d"(-1) : "memory");
	} else {
		__asm__ volatile("fxsave64 %0" : "=m"(f->area) : : "memory");
	}
}

static inline void handlers_fpu_restore(const struct handlers_fpu *f)
{
	if (agent_hot.xsave_size)
		__asm__ volatile("xrstor64 %0" : : "m"(f->area), "a"(-1), "d"(-1) : "memory");
	else
		__asm__ volatile("fxrstor64 %0" : : "m"(f->area) : "memory");
}

/* The ring's slow path. Claiming a slot (first event of a thread) calls
 * into libc, which may call traced functions: guarded. Waiting for the
 * drain only calls sched_yield from the agent's own code, which on_enter
 * recognises by its return address: not guarded, so a signal handler that
 * runs during a long wait is traced (through the side path). */
__attribute__((cold, noinline)) static void handlers_emit_slow(uint64_t fn_id, uint32_t kind,
							       uint32_t depth)
{
	struct handlers_fpu f;
	struct ada_shadow *s = &ada_shadow_tls;
	bool claim = ada_producer_tls.events == NULL;
	handlers_fpu_save(&f);
	s->guard += claim;
	ada_emit(fn_id, kind, depth);
	s->guard -= claim;
	handlers_fpu_restore(&f);
}

static inline void handlers_emit(uint64_t fn_id, uint32_t kind, uint32_t depth)
{
	if (ada_unlikely(!agent_hot.active))
		return;
	const struct ada_producer *p = &ada_producer_tls;
	if (ada_unlikely(p->head >= p->limit || p->ts_clock))
		handlers_emit_slow(fn_id, kind, depth);
	else
		ada_emit(fn_id, kind, depth);
}

static long handlers_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* First traced call of a thread (or a failed earlier try). */
__attribute__((cold, noinline)) static bool handlers_shadow_alloc_fpu(struct ada_shadow *s)
{
	if (s->cap != 0)
		return false; /* it is full, not missing */
	agent_thread_started(); /* the one libc call: a pthread key, for thread exit */
	long p = handlers_syscall6(SYS_mmap, 0, (long)HANDLERS_MAP_BYTES, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p < 0 && p > -4096)
		return false;
	s->base = (struct shadow_entry *)p;
	s->side.ev = (struct shadow_side_ev *)(s->base + HANDLERS_SHADOW_CAP);
	s->side.ev_cap = HANDLERS_SIDE_CAP;
	s->cap = HANDLERS_SHADOW_CAP;
	return true;
}

__attribute__((cold, noinline)) static bool handlers_shadow_alloc(struct ada_shadow *s)
{
	struct handlers_fpu f;
	handlers_fpu_save(&f);
	s->guard++;
	bool ok = handlers_shadow_alloc_fpu(s);
	s->guard--;
	handlers_fpu_restore(&f);
	return ok;
}

__attribute__((cold, noinline, noreturn)) static void handlers_lost_return(void)
{
	static const char msg[] =
		"ada-agent: a traced function returned to a frame the shadow stack does not know; aborting\n";
	handlers_syscall6(SYS_write, 2, (long)msg, sizeof(msg) - 1, 0, 0, 0);
	__builtin_trap();
}

static enum agent_special handlers_special(uint64_t fn_id)
{
	/* Pairs with the release store of n_special in agent_special_add(). */
	uint32_t n = atomic_load_explicit(&agent_hot.n_special, memory_order_acquire);
	for (uint32_t i = 0; i < n; i++) {
		if (agent_hot.special_id[i] == fn_id)
			return (enum agent_special)agent_hot.special_kind[i];
	}
	return AGENT_SP_NONE;
}

#define HANDLERS_NO_PUSH UINT32_MAX

/* The action of a special function at its entry. Returns the flags to push
 * its frame with, or HANDLERS_NO_PUSH when it must not be pushed (it does
 * not return normally, or an unwinder is about to read its return
 * address). */
static uint32_t handlers_special_act(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
				     const struct ada_hook_regs *regs)
{
	switch (handlers_special(fn_id)) {
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
		if (handlers_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != agent_hot.pid)
			return HANDLERS_NO_PUSH;
		if (ada_producer_arena())
			ada_arena_set_exited(ada_producer_arena(), (int)regs->rdi);
		shadow_pop_all(s, ret_slot, agent_hot.ret_tramp);
		return HANDLERS_NO_PUSH;
	case AGENT_SP_DL:
		return SHADOW_F_RESCAN;
	case AGENT_SP_EXEC:
		/* A vfork/posix_spawn child runs on our shadow stack: its exec
		 * does not end our frames. */
		if (handlers_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) == agent_hot.pid)
			shadow_close_all(s);
		return HANDLERS_NO_PUSH;
	case AGENT_SP_NONE:
		break;
	}
	return 0;
}

__attribute__((cold, noinline)) static uint32_t
handlers_special_enter(struct ada_shadow *s, uint64_t fn_id, uint64_t *ret_slot,
		       const struct ada_hook_regs *regs)
{
	struct handlers_fpu f;
	handlers_fpu_save(&f);
	s->guard++;
	uint32_t r = handlers_special_act(s, fn_id, ret_slot, regs);
	s->guard--;
	handlers_fpu_restore(&f);
	return r;
}

/* A call made while a handler runs on this thread: a signal handler that
 * interrupted it (side path), or the agent's own call during a ring wait
 * (its return address lies in the agent: not traced). */
__attribute__((cold, noinline)) static void handlers_nested_enter(struct ada_shadow *s,
								  uint64_t fn_id,
								  uint64_t *ret_slot)
{
	if (*ret_slot - agent_hot.self_lo < agent_hot.self_len) {
		s->suppressed++;
		return;
	}
	shadow_side_enter(s, fn_id, ret_slot, agent_hot.ret_tramp);
}

__attribute__((cold, noinline)) static void handlers_flush(struct ada_shadow *s)
{
	shadow_side_flush(s);
}

ADA_HOOKCTX void ada_hook_on_enter(uint64_t fn_id, uint64_t *ret_slot,
				   const struct ada_hook_regs *regs)
{
	struct ada_shadow *s = &ada_shadow_tls;
	if (ada_unlikely(s->guard || !agent_hot.active)) {
		s->suppressed++;
		return;
	}
	if (ada_unlikely(s->in_hook)) {
		handlers_nested_enter(s, fn_id, ret_slot);
		return;
	}
	s->in_hook = 1;
	uint32_t flags = 0;
	/* Relaxed: a stale filter only delays a special added by a dlopen on
	 * another thread; handlers_special() reads the table with acquire. */
	uint64_t filter = atomic_load_explicit(&agent_hot.special_filter, memory_order_relaxed);
	if (ada_unlikely((filter >> agent_special_bit(fn_id)) & 1)) {
		flags = handlers_special_enter(s, fn_id, ret_slot, regs);
		if (flags == HANDLERS_NO_PUSH)
			goto out;
	}
	shadow_pop_dead(s, ret_slot, *ret_slot, agent_hot.ret_tramp);
	if (ada_unlikely(s->top >= s->cap) && !handlers_shadow_alloc(s)) {
		s->lost++;
		goto out;
	}
	if (ada_unlikely(!shadow_push(s, fn_id, ret_slot, agent_hot.ret_tramp, flags)))
		s->lost++;
out:
	if (ada_unlikely(s->side.ev_head != s->side.ev_tail))
		handlers_flush(s);
	s->in_hook = 0;
}

ADA_HOOKCTX uint64_t ada_hook_on_exit(uint64_t sp)
{
	struct ada_shadow *s = &ada_shadow_tls;
	const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
	uint32_t flags;
	/* A frame on the shadow stack had its CALL recorded: its RETURN is
	 * recorded whatever the guard says (e.g. __run_prefork_handlers
	 * returning after our atfork prepare set it). */
	if (ada_unlikely(s->in_hook)) {
		uint64_t o = shadow_side_return(s, slot);
		if (ada_unlikely(o == 0))
			handlers_lost_return();
		return o;
	}
	s->in_hook = 1;
	uint64_t orig = shadow_return(s, slot, &flags);
	if (ada_unlikely(flags & SHADOW_F_RESCAN)) {
		/* dlopen/dlclose returned an integer or pointer: no vector
		 * result to keep, and every vector register is dead here. */
		s->guard++;
		agent_dl_changed();
		s->guard--;
	}
	if (ada_unlikely(s->side.ev_head != s->side.ev_tail))
		handlers_flush(s);
	s->in_hook = 0;
	if (ada_unlikely(orig == 0))
		handlers_lost_return();
	return orig;
}

/* ---- called by the agent's own code (not hook context) ---- */

void agent_special_add(uint64_t fn_id, enum agent_special kind)
{
	/* Writers are serialised by agent.lock. */
	uint32_t n = atomic_load_explicit(&agent_hot.n_special, memory_order_relaxed);
	if (n >= AGENT_MAX_SPECIAL)
		return;
	agent_hot.special_id[n] = fn_id;
	agent_hot.special_kind[n] = (uint8_t)kind;
	/* Publishes the entry; pairs with the acquire in handlers_special(). */
	atomic_store_explicit(&agent_hot.n_special, n + 1, memory_order_release);
	atomic_fetch_or_explicit(&agent_hot.special_filter, 1ull << agent_special_bit(fn_id),
				 memory_order_release);
}

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
	s->in_hook = 0;
}

void agent_guard_enter(void)
{
	ada_shadow_tls.guard++;
}

void agent_guard_leave(void)
{
	ada_shadow_tls.guard--;
}

void agent_shadow_after_fork(void)
{
	ada_shadow_tls.inherited = ada_shadow_tls.top;
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
	if (s->base)
		handlers_syscall6(SYS_munmap, (long)s->base, (long)HANDLERS_MAP_BYTES, 0, 0, 0, 0);
	s->base = NULL;
	s->side.ev = NULL;
	s->side.ev_cap = 0;
	s->side.ev_head = s->side.ev_tail = 0;
	s->cap = 0;
	s->guard = g;
}

/* Per-thread counts of calls not traced, folded into process totals when
 * a thread ends (and for the calling thread on demand). */
static _Atomic uint64_t handlers_untraced[3];

static void handlers_fold_counts(struct ada_shadow *s)
{
	/* Relaxed: plain statistics, read after the threads are done. */
	atomic_fetch_add_explicit(&handlers_untraced[0], s->suppressed, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[1], s->lost, memory_order_relaxed);
	atomic_fetch_add_explicit(&handlers_untraced[2], s->side.lost, memory_order_relaxed);
	s->suppressed = s->lost = s->side.lost = 0;
}

void agent_untraced_counts(uint64_t out[3])
{
	handlers_fold_counts(&ada_shadow_tls);
	for (int i = 0; i < 3; i++)
		out[i] = atomic_load_explicit(&handlers_untraced[i], memory_order_relaxed);
}
