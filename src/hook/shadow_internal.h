/*
 * The per-thread shadow stack: its layout and the pure logic that pushes,
 * pops and repairs it (hook context). Private to src/hook.
 *
 * Who touches it: only the thread that owns it (its TLS), from the
 * handlers, from the special-function actions (exceptions, exit), and
 * from the atfork child handler in that same thread. No atomics needed.
 *
 * The logic is written as static inline functions over struct ada_shadow
 * that report events through SHADOW_EMIT(fn_id, kind, depth), which the
 * includer defines before including this file: handlers.c maps it to
 * ada_emit(), the unit test to a recorder. That way the test runs exactly
 * the code the agent runs, on synthetic stacks. SHADOW_IS_RET(addr), also
 * the includer's, says in O(1) whether addr is a return point: the shared
 * return trampoline or a trampoline's own return point R_F (handlers.c:
 * hook_mem_is_tramp(), a page directory of trampoline memory, where
 * nothing else a return slot can hold lies).
 *
 * Return points (hook_arch.h): a traced call's slot holds, while its frame
 * is alive, either its trampoline's return point R_F (the trampoline
 * `call`ed the body after the enter handler pushed the frame) or the
 * shared return trampoline (written by shadow_push/rearm; the side path's
 * frames and frames re-armed after a catch keep it). Both reach the exit
 * handler with the same sp, which alone decides which frame returned.
 *
 * Invariants:
 *   - base[0 .. top) are live-or-not-yet-known-dead frames, oldest first;
 *     on one stack, slots strictly decrease with the index, except that a
 *     tail-call chain shares one slot: G, jumped to from F's body, finds
 *     a return point in F's slot and is pushed as an ordinary call whose
 *     orig is that return point (a detail frame: SHADOW_F_TAIL): G
 *     returns to the exit path, which pops G alone (the topmost entry of
 *     the slot) and goes on at F's return point, whose exit pops F. Every
 *     frame of a chain gets its own RETURN, innermost first.
 *   - SHADOW_IS_RET(*slot) for the topmost entry of every slot whose frame
 *     is alive, except while restored (an unwinder is walking the stack):
 *     then every slot present when the walk began holds the orig of its
 *     lowest entry (the caller's real return address), and except between
 *     the enter handler's return and the trampoline's `call` (the slot is
 *     then below rsp, about to be overwritten with R_F). On arm64 "the
 *     slot" there means the word the body saved x30 in
 *     (shadow_ret_home, SHADOW_RET_IN_FRAME).
 *   - entries below `inherited` were pushed by the parent before fork
 *     (or before a re-attach, in the earlier session): they are popped
 *     like others but emit nothing.
 *   - base[-1] is a sentinel whose slot lies above every real slot
 *     (SHADOW_SENTINEL_SLOT): the fast entry path reads base[top - 1]
 *     without testing top (handlers.c maps it; the unit test provides it).
 *
 * Fast paths: shadow_enter_fast() and shadow_return_fast() take the common
 * case (a call one level deeper on the same stack; a return of the top
 * frame) in a few loads and stores, and decline, having changed nothing,
 * whenever anything else may apply; the general functions below then
 * decide, and give the same result the fast path would have.
 */
#ifndef ADA_SHADOW_INTERNAL_H
#define ADA_SHADOW_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "atf_format.h"

#ifndef SHADOW_EMIT
#error "define SHADOW_EMIT(fn_id, kind, depth) before including shadow_internal.h"
#endif
#ifndef SHADOW_IS_RET
#error "define SHADOW_IS_RET(addr) before including shadow_internal.h"
#endif

/* What a push leaves in the frame's slot: the enter trampoline reads it
 * after the handler and, seeing it, drops the slot and `call`s the body,
 * so the slot then holds the trampoline's return point R_F (hook_arch.h).
 * No return address is 0. */
#define SHADOW_SLOT_CALL 0ull
/* A detail frame pushed over a live frame that owns the same slot (a
 * tail call): its orig is that frame's return point. Only the detail
 * lane looks at it (its records' lr is the program's return address, the
 * chain's lowest orig), so only a SHADOW_F_DETAIL frame gets it
 * (shadow_tail_flags): a tail-called frame without a record returns as
 * any other, on the fast return. */
#define SHADOW_F_TAIL 0x1u
#define SHADOW_F_RESCAN 0x2u /* dlopen/dlclose: rescan the images once it returns */
/* The detail lane recorded this call (its membership is decided once, at
 * entry): its return gets a detail record too. The only flag the detail
 * lane's fast return paths accept (shadow_return_fast's `allow`), with
 * SHADOW_F_TAIL in the C handler's. */
#define SHADOW_F_DETAIL 0x4u

/* The flags of a frame pushed as a tail call (SHADOW_F_TAIL). */
static inline uint32_t shadow_tail_flags(uint32_t flags)
{
	return flags & SHADOW_F_DETAIL ? flags | SHADOW_F_TAIL : flags;
}

/* Frames further apart than this are taken to be on different stacks (a
 * sigaltstack handler, a coroutine): never declared dead by comparison. */
#define SHADOW_SAME_STACK_SPAN (8ull << 20)
/* Entries popped as EXCEPTION (taken for dead or unwound) kept for a late
 * return: a frame wrongly taken for dead (a coroutine's, on another stack
 * less than SHADOW_SAME_STACK_SPAN away) still returns to the right place.
 * A RETURN pop never needs it: that frame's return has happened. */
#define SHADOW_GRAVE 64
#define SHADOW_SENTINEL_SLOT ((uint64_t *)UINTPTR_MAX)

struct shadow_entry {
	uint64_t orig;  /* the caller's return address */
	uint64_t *slot; /* where it lives on the stack */
	uint64_t fn_id;
	union {
		struct {
			uint32_t depth;
			uint32_t flags;
		};
		uint64_t depth_flags; /* both in one store (little-endian: depth low) */
	};
};
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "depth_flags packs depth low");

/* Signal handlers that interrupt the handlers themselves (in_hook set)
 * cannot touch the main stack or the ring, which are mid-update: their
 * frames go on this small side stack and their events into a side queue,
 * which the interrupted handler replays into the ring when it is done --
 * with depths relative to its own frame, so the trace nests correctly. */
#define SHADOW_SIDE_FRAMES 16

struct shadow_side_ev {
	uint64_t fn_id;
	uint32_t kind;
	uint32_t rel_depth; /* 1: the handler's outermost traced frame */
};

struct shadow_side {
	/* SHADOW_SIDE_FRAMES entries beside the queue (not in TLS: a library
	 * that ada attach loads with dlopen gets only the few hundred bytes of
	 * static TLS glibc keeps spare). Written only while ev_cap != 0. */
	struct shadow_entry *fr;
	/* The queue lives beside the shadow stack (NULL until then): a long
	 * wait for ring space can see many signals. */
	struct shadow_side_ev *ev;
	uint32_t ev_cap; /* power of two */
	uint32_t top;
	uint32_t busy;             /* a signal inside the side path itself: give up */
	uint32_t ev_head, ev_tail; /* queue positions (ev_head - ev_tail queued) */
	uint64_t lost;             /* handler calls not traced (queue or stack full) */
};

struct ada_shadow {
	struct shadow_entry *base; /* base[-1] is the sentinel */
	uint32_t top, cap;
	uint32_t guard;     /* nonzero: the agent's own work: nothing is traced */
	uint32_t in_hook;   /* nonzero: a hook handler is running (handlers.c) */
	uint32_t restored;  /* nonzero: return addresses are the originals */
	uint32_t inherited; /* entries pushed by the parent before fork */
	/* Set by a re-attach that stopped this thread inside a handler: the
	 * handler silences the frames open now (inherited = top) once it is
	 * done (handlers.c, agent_shadow_attach_reset). */
	uint32_t reattach;
	uint32_t grave_next;
	uint64_t lost;       /* calls not traced: stack full or unusable */
	uint64_t suppressed; /* calls seen while the guard was set */
	/* A return the shadow stack could not match stopped tracing this
	 * thread (shadow_resync): `stopped` is set, the guard raised for good,
	 * and calls from then on are counted here rather than in suppressed. */
	uint32_t stopped;
	/* The thread-exit destructor ran and could not retire the shadow
	 * stack (handlers.c, handlers_retired full): the guard stays raised,
	 * so glibc's teardown after it (freeing the thread's malloc cache)
	 * maps no new shadow stack that nothing would unmap; its calls are
	 * counted straight into the process's totals (untraced_calls.
	 * thread_exit), the thread's own were folded already. */
	uint32_t exited;
	/* The thread found the recorder gone (its ring full, the drain's
	 * heartbeat still for the timeout: ring.h, ada_producer.lagging):
	 * the guard is raised, so its calls cost the guard test, not the
	 * ring's slow path each; counted in gone_lost, and every 4096 of
	 * them the heartbeat is looked at again (handlers_gone_call). The
	 * returns of frames pushed before are still emitted (dropped). */
	uint32_t gone;
	uint64_t gone_lost;
	uint64_t resyncs;      /* returns that could not be matched */
	uint64_t stopped_lost; /* calls not traced since */
	uint64_t stops;        /* 1 once stopped, until folded into the totals */
	/* Stack switches by copying (shadow_switch_all) and the frames they
	 * cut: those frames' returns are not traced. */
	uint64_t switches, switch_cut;
	/* The thread's stack [stack_lo, stack_hi), learned on its first
	 * traced call when the detail lane is on (handlers.c): the detail
	 * lane's stack snapshots never read past stack_hi. 0, 0: unknown. */
	uint64_t stack_lo, stack_hi;
	/* The snapshot is whole (no bound to test) when rsp - dfast_lo <=
	 * dfast_span: computed once per thread; 0, 0 (no stack known, or one
	 * smaller than the snapshot) sends every rsp to agent_stack_take(). */
	uint64_t dfast_lo, dfast_span;
	/* SHADOW_GRAVE entries, allocated with base (not in TLS, as side.fr);
	 * NULL until then. */
	struct shadow_entry *grave;
	struct shadow_side side;
};

/* Depth of the frame at index i: the first traced frame is depth 1. */
static inline uint32_t shadow_depth(const struct ada_shadow *s, uint32_t i)
{
	return i + 1 - s->inherited;
}

/* A slot already in the grave gets the newer entry in place (the lookup
 * takes the newest per slot anyway): a coroutine that yields from the same
 * frame each time buries that one slot over and over, and must not push out
 * the entry of its outer frame, whose return comes only at the end
 * (makecontext/swapcontext: the coroutine's first function). Not the hot
 * path: only frames taken for dead or unwound get here. */
static inline void shadow_bury(struct ada_shadow *s, const struct shadow_entry *e)
{
	for (uint32_t g = 0; g < SHADOW_GRAVE; g++) {
		if (s->grave[g].slot == e->slot) {
			s->grave[g] = *e;
			return;
		}
	}
	s->grave[s->grave_next++ % SHADOW_GRAVE] = *e;
}

/* Pops the top entry as `kind` (RETURN or EXCEPTION). The entry is
 * copied before the event is emitted: a signal handler that runs while the
 * event waits for ring space reuses the slot above top. */
static inline void shadow_pop_top(struct ada_shadow *s, uint32_t kind)
{
	struct shadow_entry e = s->base[--s->top];
	if (kind == ATF_EVENT_EXCEPTION)
		shadow_bury(s, &e);
	if (s->top >= s->inherited)
		SHADOW_EMIT(e.fn_id, kind, e.depth);
	else
		s->inherited = s->top;
}

/* Is the top entry's frame provably gone, seen from a new frame whose
 * return slot is new_slot holding new_ret? Deeper frames have lower slots;
 * a frame at or below the new one on the same stack was discarded by
 * longjmp (or an unwinder) -- unless it is the same slot still holding a
 * return point: then the new function was tail-called from it. */
static inline bool shadow_top_dead(const struct ada_shadow *s, const uint64_t *new_slot,
                                   uint64_t new_ret, uint64_t ret_tramp)
{
	(void)ret_tramp;
	const struct shadow_entry *t = &s->base[s->top - 1];
	if (t->slot > new_slot)
		return false;
	if (t->slot == new_slot)
		return !SHADOW_IS_RET(new_ret);
	return (uint64_t)((uintptr_t)new_slot - (uintptr_t)t->slot) < SHADOW_SAME_STACK_SPAN;
}

static inline void shadow_pop_dead(struct ada_shadow *s, const uint64_t *new_slot, uint64_t new_ret,
                                   uint64_t ret_tramp)
{
	while (s->top > 0 && shadow_top_dead(s, new_slot, new_ret, ret_tramp))
		shadow_pop_top(s, ATF_EVENT_EXCEPTION);
}

/* Pushes a frame; the caller has ensured top < cap and popped the dead.
 * Returns false when the call cannot be traced (its slot already holds
 * the shared trampoline but no live entry owns it: as the fast path).
 * A return point in the slot (a tail call) is an ordinary orig. */
static inline bool shadow_push(struct ada_shadow *s, uint64_t fn_id, uint64_t *slot,
                               uint64_t ret_tramp, uint32_t flags)
{
	uint64_t ret = *slot;
	bool tail = s->top > 0 && s->base[s->top - 1].slot == slot;
	if (ret == ret_tramp && !tail)
		return false;
	if (tail)
		flags = shadow_tail_flags(flags);
	struct shadow_entry *e = &s->base[s->top];
	e->orig = ret;
	e->slot = slot;
	e->fn_id = fn_id;
	e->flags = flags;
	e->depth = shadow_depth(s, s->top);
	s->top++;
	/* Even while restored: a frame pushed now (by the personality routine
	 * or a cleanup pad) lies below every frame an unwinder walks, and
	 * returns before the walk reaches it. */
	*slot = SHADOW_SLOT_CALL;
	SHADOW_EMIT(fn_id, ATF_EVENT_CALL, e->depth);
	return true;
}

/* The common entry, or false (nothing changed): the shadow stack has room,
 * *slot is not the shared trampoline, and the top frame
 * (the sentinel when there is none) lies above slot, so nothing is dead.
 * Then it is exactly shadow_pop_dead() (pops nothing) + shadow_push()
 * except that the CALL event, at *depth, is left to the caller (the hook
 * handler emits it through its own fast path). flags: 0 or SHADOW_F_DETAIL. */
static inline bool shadow_enter_fast(struct ada_shadow *s, uint64_t fn_id, uint64_t *slot,
                                     uint64_t ret_tramp, uint32_t flags, uint32_t *depth)
{
	uint32_t top = s->top;
	uint64_t ret = *slot;
	if (top >= s->cap || ret == ret_tramp || (s->base + top)[-1].slot <= slot)
		return false;
	struct shadow_entry *e = &s->base[top];
	uint32_t d = shadow_depth(s, top);
	e->orig = ret;
	e->slot = slot;
	e->fn_id = fn_id;
	e->depth_flags = d | (uint64_t)flags << 32; /* one store (a constant 0 in the index lane) */
	s->top = top + 1;
	*slot = SHADOW_SLOT_CALL;
	*depth = d;
	return true;
}

/* A tail call's entry, or false (nothing changed): the function was
 * jumped to from the top frame's body (the top frame owns slot, which
 * still holds a return point: SHADOW_IS_RET), and the shadow stack has
 * room. Then it is exactly shadow_pop_dead() (which pops nothing: a
 * frame at the same slot holding a return point is alive) +
 * shadow_push() (a tail push: the return point is an ordinary orig),
 * except that the CALL event, at *depth, is left to the caller; the
 * entry's flags are shadow_tail_flags(flags). Interpreters make many
 * calls this way (docs/hooks.md, "Tail calls"), and shadow_enter_fast()
 * declines them all (the top frame does not lie above slot). */
static inline bool shadow_enter_tail(struct ada_shadow *s, uint64_t fn_id, uint64_t *slot,
                                     uint32_t flags, uint32_t *depth)
{
	uint32_t top = s->top;
	uint64_t ret = *slot;
	if (top >= s->cap || (s->base + top)[-1].slot != slot || !SHADOW_IS_RET(ret))
		return false;
	struct shadow_entry *e = &s->base[top];
	uint32_t d = shadow_depth(s, top);
	e->orig = ret;
	e->slot = slot;
	e->fn_id = fn_id;
	e->depth_flags = d | (uint64_t)shadow_tail_flags(flags) << 32;
	s->top = top + 1;
	*slot = SHADOW_SLOT_CALL;
	*depth = d;
	return true;
}

/* The common return, or false (nothing changed): the top frame owns slot,
 * is not inherited, and has no flags but those in `allow` (0, or
 * SHADOW_F_DETAIL | SHADOW_F_TAIL for the detail lane: nothing is to be
 * done after it but its record). Then it is exactly
 * shadow_return() except that the RETURN event (out->fn_id, out->depth)
 * is left to the caller; out->orig is where to continue. */
static inline bool shadow_return_fast(struct ada_shadow *s, const uint64_t *slot, uint32_t allow,
                                      struct shadow_entry *out)
{
	uint32_t top = s->top;
	if (top <= s->inherited) /* also top == 0 */
		return false;
	const struct shadow_entry *e = &s->base[top - 1];
	if (e->slot != slot || (e->flags & ~allow))
		return false;
	*out = *e; /* copied before the pop: see shadow_pop_top */
	s->top = top - 1;
	return true;
}

/* The function whose return slot was `slot` has returned into the
 * trampoline. Pops frames above it (discarded: EXCEPTION), then it, the
 * topmost entry of its slot (RETURN: a tail-call chain below it returns
 * through the return point that is its orig), and gives the address to
 * continue at. Falls back to recently popped entries (a frame wrongly
 * taken for dead); 0 when nothing matches (the caller must not return).
 * *flags gets the flags of the frames that returned, or-ed. */
static inline uint64_t shadow_return(struct ada_shadow *s, const uint64_t *slot, uint32_t *flags)
{
	*flags = 0;
	uint32_t i = s->top;
	while (i > 0 && s->base[i - 1].slot != slot)
		i--;
	if (i == 0) {
		/* Newest first: a slot reused by a later frame holds its orig. */
		for (uint32_t g = 1; s->grave && g <= SHADOW_GRAVE; g++) {
			const struct shadow_entry *e =
			    &s->grave[(s->grave_next - g) % SHADOW_GRAVE];
			if (e->slot == slot && e->orig)
				return e->orig;
		}
		return 0;
	}
	while (s->top > i)
		shadow_pop_top(s, ATF_EVENT_EXCEPTION);
	uint64_t orig = s->base[s->top - 1].orig;
	*flags = s->base[s->top - 1].flags;
	shadow_pop_top(s, ATF_EVENT_RETURN);
	return orig;
}

/* Pops every entry whose slot is at or below `slot` on the same stack:
 * their frames were unwound (a catch handler or a cleanup pad now runs in
 * the frame that owns `slot`'s caller). */
static inline void shadow_pop_below(struct ada_shadow *s, const uint64_t *slot)
{
	while (s->top > 0) {
		const struct shadow_entry *t = &s->base[s->top - 1];
		if (t->slot > slot ||
		    (uint64_t)((uintptr_t)slot - (uintptr_t)t->slot) >= SHADOW_SAME_STACK_SPAN)
			break;
		shadow_pop_top(s, ATF_EVENT_EXCEPTION);
	}
}

/* Whether slot may be on the same stack as ref: only such slots are
 * dereferenced by the functions below, because a stale entry can point
 * into a stack that no longer exists (a posix_spawn child's). */
static inline bool shadow_near(const uint64_t *ref, const uint64_t *slot)
{
	uintptr_t a = (uintptr_t)ref, b = (uintptr_t)slot;
	return (a > b ? a - b : b - a) < SHADOW_SAME_STACK_SPAN;
}

/* SHADOW_RET_IN_FRAME 1 (arm64): the slot is the link register's word
 * in the enter trampoline's frame, just below the frame's stack pointer
 * at entry; the body saves the return point it was given in its own
 * frame, wherever its prologue puts x30. 0 (x86_64): the slot is the
 * return address itself. */
#ifndef SHADOW_RET_IN_FRAME
#if defined(__aarch64__)
#define SHADOW_RET_IN_FRAME 1
#else
#define SHADOW_RET_IN_FRAME 0
#endif
#endif

/* Where entry i's return address lies while its body runs: its slot,
 * or with SHADOW_RET_IN_FRAME the first word from the slot down to (not
 * including) the next inner frame's slot (ref for the innermost) that is a return
 * point (any_ret) or equals want; NULL when none is. Words between two
 * traced frames belong to the outer one's frame and to untraced frames
 * below it, whose saved link registers are real return addresses. The
 * caller checked shadow_near(ref, slot): the span is one stack's. */
static inline uint64_t *shadow_ret_home(const struct ada_shadow *s, uint32_t i, const uint64_t *ref,
                                        bool any_ret, uint64_t want)
{
	uint64_t *slot = s->base[i].slot;
#if SHADOW_RET_IN_FRAME
	const uint64_t *lo = ref;
	for (uint32_t j = i + 1; j < s->top; j++)
		if (s->base[j].slot != slot) {
			lo = s->base[j].slot;
			break;
		}
	for (uint64_t *p = slot; p == slot || p > lo; p--) /* the slot itself always */
		if (any_ret ? SHADOW_IS_RET(*p) : *p == want)
			return p;
	return NULL;
#else
	(void)s, (void)i, (void)ref, (void)any_ret, (void)want;
	return slot;
#endif
}

/* Before an unwinder walks the stack (from ref upwards): every slot gets
 * its original return address back, so the unwinder finds real callers.
 * Innermost first: a tail chain's slot gets each entry's orig in turn,
 * the return point of the entry below it, and ends with the lowest one's,
 * the real caller. */
static inline void shadow_restore_all(struct ada_shadow *s, const uint64_t *ref, uint64_t ret_tramp)
{
	(void)ret_tramp;
	for (uint32_t i = s->top; i > 0; i--) {
		struct shadow_entry *e = &s->base[i - 1];
		uint64_t *home =
		    shadow_near(ref, e->slot) ? shadow_ret_home(s, i - 1, ref, true, 0) : NULL;
		if (home && SHADOW_IS_RET(*home))
			*home = e->orig;
	}
	s->restored = 1;
}

/* The crash handler's restore (agent_shadow_restore_for_crash): every
 * return point of this thread's frames on sp's stack back to the real
 * return address, so a core and a debugger see the frames as untraced.
 * Innermost first: a handler's frames on the side stack (a signal inside
 * the hooks) hold return points in their slots too. lr: the interrupted
 * context's link register (arm64), or NULL: a return point still in it
 * (the innermost traced body has not saved x30, or holds it still) is
 * the innermost frame's. With SHADOW_RET_IN_FRAME the base stack's
 * return points are found where the bodies saved them
 * (shadow_ret_home). Returns how many words it put back. */
static inline uint32_t shadow_restore_for_crash(struct ada_shadow *s, const uint64_t *sp,
                                                uint64_t *lr)
{
	uint32_t n = 0;
	for (uint32_t i = s->side.ev_cap ? s->side.top : 0; i > 0 && i <= SHADOW_SIDE_FRAMES; i--) {
		struct shadow_entry *e = &s->side.fr[i - 1];
		if (shadow_near(sp, e->slot) && SHADOW_IS_RET(*e->slot)) {
			*e->slot = e->orig;
			n++;
		}
	}
	if (lr && s->base && s->top > 0 && SHADOW_IS_RET(*lr) &&
	    shadow_near(sp, s->base[s->top - 1].slot)) {
		*lr = s->base[s->top - 1].orig;
		n++;
	}
	for (uint32_t i = s->top; s->base && i > 0; i--) {
		struct shadow_entry *e = &s->base[i - 1];
		uint64_t *home =
		    shadow_near(sp, e->slot) ? shadow_ret_home(s, i - 1, sp, true, 0) : NULL;
		if (home && SHADOW_IS_RET(*home)) {
			*home = e->orig;
			n++;
		}
	}
	s->restored = 1;
	return n;
}

/* After a catch: the surviving frames get the shared trampoline back
 * (their return is then mispredicted, once). Oldest first: a tail chain's
 * slot holds its lowest entry's orig, which that entry re-arms; the
 * entries above it see the trampoline and leave it, and the exit path
 * pops them one by one through their origs as before the walk. */
static inline void shadow_rearm_all(struct ada_shadow *s, const uint64_t *ref, uint64_t ret_tramp)
{
	for (uint32_t i = 0; i < s->top; i++) {
		struct shadow_entry *e = &s->base[i];
		uint64_t *home =
		    shadow_near(ref, e->slot) ? shadow_ret_home(s, i, ref, false, e->orig) : NULL;
		if (home && *home == e->orig)
			*home = ret_tramp;
	}
	s->restored = 0;
}

/* Every frame is going away (exit, pthread_exit, forced unwinding). */
static inline void shadow_pop_all(struct ada_shadow *s, const uint64_t *ref, uint64_t ret_tramp)
{
	shadow_restore_all(s, ref, ret_tramp);
	while (s->top > 0)
		shadow_pop_top(s, ATF_EVENT_EXCEPTION);
	s->restored = 0;
}

/* exec is about to replace the image: every frame gets its EXCEPTION now
 * (if exec succeeds, none returns). The entries stay, silenced like a
 * fork parent's: if exec fails they return without events, and the depth
 * of new calls starts again at 1. */
static inline void shadow_close_all(struct ada_shadow *s)
{
	for (uint32_t i = s->top; i > s->inherited; i--)
		SHADOW_EMIT(s->base[i - 1].fn_id, ATF_EVENT_EXCEPTION, s->base[i - 1].depth);
	s->inherited = s->top;
}

/* The thread is about to switch stacks by copying slices of them
 * (greenlet's g_switchstack saves the running greenlet's part of the stack
 * to the heap and copies another's into its place). A copied slice would
 * carry return trampolines away from the entries that own them and bring
 * back ones no entry knows, or one an entry of another greenlet owns at the
 * same address: a return would go to the wrong caller. So every frame on
 * this stack gets its original return address back and leaves the shadow
 * stack (EXCEPTION: its return will not be seen; counted by the caller).
 * The slice the switch brings in holds no trampoline either: it left
 * through here too. Nothing is buried (no trampoline is left for a late
 * return to need). Returns the number of frames cut. */
static inline uint32_t shadow_switch_all(struct ada_shadow *s, const uint64_t *ref,
                                         uint64_t ret_tramp)
{
	uint32_t n = 0;
	shadow_restore_all(s, ref, ret_tramp);
	while (s->top > 0) {
		struct shadow_entry e = s->base[--s->top];
		if (s->top >= s->inherited) {
			SHADOW_EMIT(e.fn_id, ATF_EVENT_EXCEPTION, e.depth);
			n++;
		} else {
			s->inherited = s->top;
		}
	}
	s->restored = 0;
	return n;
}

/* ---- the side path (signal handlers nested in the handlers) ---- */

static inline uint32_t shadow_side_free(const struct shadow_side *d)
{
	return d->ev_cap - (d->ev_head - d->ev_tail);
}

static inline void shadow_side_queue(struct shadow_side *d, uint64_t fn, uint32_t kind,
                                     uint32_t rel)
{
	struct shadow_side_ev *e = &d->ev[d->ev_head & (d->ev_cap - 1)];
	e->fn_id = fn;
	e->kind = kind;
	e->rel_depth = rel;
	d->ev_head++;
}

/* A nested handler's frames end as they do on the main stack: a frame at
 * or below the new slot (same stack) was left by longjmp. */
static inline void shadow_side_pop_dead(struct shadow_side *d, const uint64_t *slot,
                                        uint64_t new_ret, uint64_t ret_tramp)
{
	(void)ret_tramp;
	while (d->top > 0) {
		const struct shadow_entry *t = &d->fr[d->top - 1];
		bool dead = t->slot == slot ? !SHADOW_IS_RET(new_ret)
		                            : t->slot < slot &&
		                                  (uint64_t)((uintptr_t)slot - (uintptr_t)t->slot) <
		                                      SHADOW_SAME_STACK_SPAN;
		if (!dead)
			break;
		d->top--;
		shadow_side_queue(d, t->fn_id, ATF_EVENT_EXCEPTION, t->depth);
	}
}

/* Entry of a function called by a signal handler that interrupted the
 * handlers. Every pushed frame keeps room in the queue for its own and its
 * callers' later events, so what is queued always balances. */
static inline void shadow_side_enter(struct ada_shadow *s, uint64_t fn, uint64_t *slot,
                                     uint64_t ret_tramp)
{
	struct shadow_side *d = &s->side;
	if (d->busy) {
		d->lost++;
		return;
	}
	d->busy = 1;
	uint64_t ret = *slot;
	shadow_side_pop_dead(d, slot, ret, ret_tramp);
	uint32_t t = d->top;
	if (t < SHADOW_SIDE_FRAMES && ret != ret_tramp && shadow_side_free(d) >= 2 * (t + 1)) {
		d->fr[t] =
		    (struct shadow_entry){.orig = ret, .slot = slot, .fn_id = fn, .depth = t + 1};
		d->top = t + 1;
		*slot = ret_tramp;
		shadow_side_queue(d, fn, ATF_EVENT_CALL, t + 1);
	} else {
		d->lost++;
	}
	d->busy = 0;
}

/* Return of a side frame: like shadow_return. 0 when slot is unknown. */
static inline uint64_t shadow_side_return(struct ada_shadow *s, const uint64_t *slot)
{
	struct shadow_side *d = &s->side;
	uint32_t i = d->top;
	while (i > 0 && d->fr[i - 1].slot != slot)
		i--;
	if (i == 0)
		return 0;
	while (d->top > i) {
		d->top--;
		shadow_side_queue(d, d->fr[d->top].fn_id, ATF_EVENT_EXCEPTION, d->fr[d->top].depth);
	}
	d->top--;
	shadow_side_queue(d, d->fr[d->top].fn_id, ATF_EVENT_RETURN, d->fr[d->top].depth);
	return d->fr[d->top].orig;
}

/* The interrupted handler is done with the main stack: replay what the
 * signal handlers queued, nested under the current top frame. More may be
 * queued while this emits (a signal during a ring wait); the loop takes it. */
static inline void shadow_side_flush(struct ada_shadow *s)
{
	struct shadow_side *d = &s->side;
	while (d->ev_tail != d->ev_head) {
		struct shadow_side_ev e = d->ev[d->ev_tail & (d->ev_cap - 1)];
		d->ev_tail++;
		SHADOW_EMIT(e.fn_id, e.kind, shadow_depth(s, s->top) - 1 + e.rel_depth);
	}
}

/* A return shadow_return() could not match: the function moved its
 * return address (code that does not follow the C conventions and was
 * hooked anyway), or a stack was copied under the shadow stack's feet.
 * The innermost frame is the one that returned -- every frame above it
 * that a longjmp discarded would have been popped by the slot match --
 * so its original address is where to go on -- the lowest orig of its
 * slot when it was tail-called (a return point would come back to the
 * exit path at a slot no entry owns any more). Nothing recorded from here
 * on can be trusted to nest, so the thread stops being traced: every frame
 * gets its EXCEPTION and, where its slot still holds a return point, its
 * original return address back (the last SHADOW_GRAVE of them are kept
 * for frames on another stack that still return through the trampoline).
 * Returns 0 when there is no frame at all (nothing to go on with). */
static inline uint64_t shadow_resync(struct ada_shadow *s, const uint64_t *slot, uint64_t ret_tramp)
{
	if (s->top == 0)
		return 0;
	uint32_t i = s->top - 1;
	while (i > 0 && s->base[i - 1].slot == s->base[i].slot)
		i--;
	uint64_t orig = s->base[i].orig;
	shadow_pop_all(s, slot, ret_tramp);
	return orig;
}

/* The side path's equivalent: the innermost side frame returned. */
static inline uint64_t shadow_side_resync(struct ada_shadow *s)
{
	struct shadow_side *d = &s->side;
	if (d->top == 0)
		return 0;
	uint64_t orig = d->fr[d->top - 1].orig;
	while (d->top > 0) {
		d->top--;
		shadow_side_queue(d, d->fr[d->top].fn_id, ATF_EVENT_EXCEPTION, d->fr[d->top].depth);
	}
	return orig;
}

#endif
