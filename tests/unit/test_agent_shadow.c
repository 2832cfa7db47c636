/*
 * The shadow stack logic (src/hook/shadow_internal.h) on synthetic
 * stacks: the same inline functions the handlers run, with SHADOW_EMIT
 * recording events here. A fake "stack" is an array of uint64_t; slot
 * addresses decrease with depth as on x86_64.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

struct ev {
	uint64_t fn;
	uint32_t kind, depth;
};
static struct ev evs[256];
static size_t nev;
static void record(uint64_t fn, uint32_t kind, uint32_t depth)
{
	assert_true(nev < 256);
	evs[nev++] = (struct ev){fn, kind, depth};
}
#define TRAMP 0x7777000ull /* the shared return trampoline */
/* The trampolines' return points R_F: one per fn, in "trampoline memory"
 * [RPOINTS, RPOINTS + 1 MiB) with TRAMP (hook_mem_is_tramp in the agent). */
#define RPOINTS 0x8880000ull
#define RP(fn) (RPOINTS + 128 * (uint64_t)(fn) + 84)
#define SHADOW_IS_RET(a) ((a) == TRAMP || (uint64_t)(a)-RPOINTS < (1ull << 20))
#define SHADOW_EMIT(fn, kind, depth) record((fn), (kind), (depth))
#include "shadow_internal.h"
#define STACK_WORDS 4096

static uint64_t stack[STACK_WORDS];
static struct shadow_entry entries[1 + 64]; /* [0]: the sentinel */
static struct shadow_side_ev side_ev[64];
static struct shadow_entry grave[SHADOW_GRAVE], side_fr[SHADOW_SIDE_FRAMES];
static struct ada_shadow sh;

static int setup(void **state)
{
	(void)state;
	memset(&sh, 0, sizeof(sh));
	memset(stack, 0, sizeof(stack));
	memset(entries, 0, sizeof(entries));
	entries[0].slot = SHADOW_SENTINEL_SLOT;
	sh.base = entries + 1;
	sh.cap = 64;
	sh.side.ev = side_ev;
	sh.side.ev_cap = 64;
	memset(grave, 0, sizeof(grave));
	memset(side_fr, 0, sizeof(side_fr));
	sh.grave = grave;
	sh.side.fr = side_fr;
	nev = 0;
	return 0;
}

/* The slot a call at depth d (1 = outermost) pushes its return address in. */
static uint64_t *slot_at(int d)
{
	return &stack[STACK_WORDS - 1 - 16 * d];
}

/* The enter trampoline after a push: the slot says "call", so it drops
 * the slot and calls the body, which leaves its return point there. */
static void tramp_call(uint64_t *s, uint64_t fn)
{
	assert_int_equal(*s, SHADOW_SLOT_CALL);
	*s = RP(fn);
}

/* Simulates `call fn` from depth d-1: the CPU pushes ret, then the
 * entry handler runs, then the trampoline calls the body. */
static void call(int d, uint64_t fn, uint64_t ret)
{
	uint64_t *s = slot_at(d);
	*s = ret;
	shadow_pop_dead(&sh, s, *s, TRAMP);
	assert_true(shadow_push(&sh, fn, s, TRAMP, 0));
	tramp_call(s, fn);
}

/* Simulates `ret` of the frame whose slot is at depth d (to a return
 * point, whose exit path runs the exit handler). */
static uint64_t ret_from(int d)
{
	uint32_t flags;
	uint64_t *s = slot_at(d);
	assert_true(SHADOW_IS_RET(*s));
	return shadow_return(&sh, s, &flags);
}

/* The same through the handlers' fast paths, which leave the event to
 * the caller; false when they decline (then nothing may have changed). */
static bool call_fast(int d, uint64_t fn, uint64_t ret)
{
	uint64_t *s = slot_at(d);
	uint32_t depth;
	*s = ret;
	if (!shadow_enter_fast(&sh, fn, s, TRAMP, 0, &depth))
		return false;
	tramp_call(s, fn);
	record(fn, ATF_EVENT_CALL, depth);
	return true;
}

static uint64_t ret_fast(uint64_t *s)
{
	struct shadow_entry e;
	if (!shadow_return_fast(&sh, s, 0, &e))
		return 0;
	record(e.fn_id, ATF_EVENT_RETURN, e.depth);
	return e.orig;
}

static void expect(size_t i, uint64_t fn, uint32_t kind, uint32_t depth)
{
	assert_true(i < nev);
	assert_int_equal(evs[i].fn, fn);
	assert_int_equal(evs[i].kind, kind);
	assert_int_equal(evs[i].depth, depth);
}

static void test_nested(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	call(2, 20, 0x2002);
	assert_int_equal(ret_from(2), 0x2002);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(nev, 4);
	expect(0, 10, ATF_EVENT_CALL, 1);
	expect(1, 20, ATF_EVENT_CALL, 2);
	expect(2, 20, ATF_EVENT_RETURN, 2);
	expect(3, 10, ATF_EVENT_RETURN, 1);
	assert_int_equal(sh.top, 0);
}

/* A tail-jumps to B: B's return slot is A's, holding A's return point,
 * which B saves as an ordinary return address: B returns to its own
 * return point, its exit goes on at A's, whose exit returns A. */
static void test_tail_call(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	uint64_t *s = slot_at(1);
	shadow_pop_dead(&sh, s, *s, TRAMP); /* B's entry: *s == RP(10) */
	assert_true(shadow_push(&sh, 11, s, TRAMP, 0));
	tramp_call(s, 11);
	assert_int_equal(sh.top, 2);
	assert_int_equal(sh.base[1].flags, 0); /* SHADOW_F_TAIL: detail frames only */
	assert_int_equal(sh.base[1].orig, RP(10));
	call(2, 20, 0x2002); /* B calls something normally */
	assert_int_equal(ret_from(2), 0x2002);
	assert_int_equal(ret_from(1), RP(10)); /* B */
	*s = RP(10);                           /* the return trampoline's push; ret */
	assert_int_equal(ret_from(1), 0x1001); /* A */
	assert_int_equal(nev, 6);
	expect(4, 11, ATF_EVENT_RETURN, 2);
	expect(5, 10, ATF_EVENT_RETURN, 1);
	assert_int_equal(sh.top, 0);
	/* The shared trampoline in the slot (a frame re-armed after a catch,
	 * or a side frame's) is an ordinary orig too when its slot's owner
	 * is alive. */
	call(1, 10, 0x1001);
	*s = TRAMP;
	shadow_pop_dead(&sh, s, *s, TRAMP);
	assert_true(shadow_push(&sh, 12, s, TRAMP, 0));
	tramp_call(s, 12);
	assert_int_equal(ret_from(1), TRAMP);
	*s = TRAMP;
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(sh.top, 0);
	assert_int_equal(nev, 10);
	expect(8, 12, ATF_EVENT_RETURN, 2);
	expect(9, 10, ATF_EVENT_RETURN, 1);
}

/* longjmp from depth 4 back into the depth-1 frame, which then calls
 * again: the new call's slot is at depth 2, holding a fresh return
 * address: frames 2..4 are dead (EXCEPTION, innermost first). */
static void test_longjmp_then_call(void **state)
{
	(void)state;
	for (int d = 1; d <= 4; d++)
		call(d, (uint64_t)d, 0x1000u + (uint64_t)d);
	call(2, 99, 0x5555);
	assert_int_equal(nev, 4 + 3 + 1);
	expect(4, 4, ATF_EVENT_EXCEPTION, 4);
	expect(5, 3, ATF_EVENT_EXCEPTION, 3);
	expect(6, 2, ATF_EVENT_EXCEPTION, 2);
	expect(7, 99, ATF_EVENT_CALL, 2);
	assert_int_equal(ret_from(2), 0x5555);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(sh.top, 0);
}

/* longjmp out of depth 3 into depth 1's frame, which then returns: the
 * return finds its slot below the dead frames and pops them first. */
static void test_longjmp_then_return(void **state)
{
	(void)state;
	for (int d = 1; d <= 3; d++)
		call(d, (uint64_t)d, 0x1000u + (uint64_t)d);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(nev, 6);
	expect(3, 3, ATF_EVENT_EXCEPTION, 3);
	expect(4, 2, ATF_EVENT_EXCEPTION, 2);
	expect(5, 1, ATF_EVENT_RETURN, 1);
}

/* A handler on an alternate stack far above the interrupted frames must
 * not declare them dead. */
static void test_altstack_not_dead(void **state)
{
	(void)state;
	/* mmap space lies far above a PIE's .bss, where `stack` is */
	uint64_t *alt =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(alt != MAP_FAILED);
	uint64_t *alt_slot = &alt[32];
	call(1, 10, 0x1001);
	/* pretend the alt stack is above the main one, far away */
	uint64_t *s = slot_at(1);
	if (alt_slot > s &&
	    (uint64_t)((uintptr_t)alt_slot - (uintptr_t)s) < SHADOW_SAME_STACK_SPAN) {
		print_message("skip: the linker put the two stacks too close to tell apart\n");
		skip();
	}
	*alt_slot = 0x4444;
	shadow_pop_dead(&sh, alt_slot, *alt_slot, TRAMP);
	assert_int_equal(sh.top, 1);
	assert_true(shadow_push(&sh, 50, alt_slot, TRAMP, 0));
	uint32_t flags;
	tramp_call(alt_slot, 50);
	assert_int_equal(shadow_return(&sh, alt_slot, &flags), 0x4444);
	assert_int_equal(sh.top, 1);
	assert_int_equal(ret_from(1), 0x1001);
	munmap(alt, 4096);
}

/* An exception: restore puts original addresses back; catch in the
 * depth-1 frame pops 2..3 and re-arms frame 1 (with the shared
 * trampoline: its own return point is gone from the return-stack buffer
 * anyway). */
static void test_unwind_and_catch(void **state)
{
	(void)state;
	for (int d = 1; d <= 3; d++)
		call(d, (uint64_t)d, 0x1000u + (uint64_t)d);
	shadow_restore_all(&sh, slot_at(4), TRAMP);
	for (int d = 1; d <= 3; d++)
		assert_int_equal(*slot_at(d), 0x1000u + (uint64_t)d);
	assert_true(sh.restored);
	/* __cxa_begin_catch called from frame 1: its return slot is depth 2's */
	shadow_pop_below(&sh, slot_at(2));
	assert_int_equal(sh.top, 1);
	shadow_rearm_all(&sh, slot_at(2), TRAMP);
	assert_false(sh.restored);
	assert_int_equal(*slot_at(1), TRAMP);
	assert_int_equal(ret_from(1), 0x1001);
	expect(3, 3, ATF_EVENT_EXCEPTION, 3);
	expect(4, 2, ATF_EVENT_EXCEPTION, 2);
	expect(5, 1, ATF_EVENT_RETURN, 1);
}

/* An exception through a tail chain: restore leaves the chain's slot
 * with its lowest entry's orig (the real caller), the catch re-arms that
 * entry, and the chain still returns frame by frame. */
static void test_unwind_chain(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	uint64_t *s1 = slot_at(1);
	shadow_pop_dead(&sh, s1, *s1, TRAMP); /* 10 tail-calls 11 */
	assert_true(shadow_push(&sh, 11, s1, TRAMP, 0));
	tramp_call(s1, 11);
	call(2, 20, 0x2002);
	shadow_restore_all(&sh, slot_at(3), TRAMP);
	assert_int_equal(*s1, 0x1001);
	assert_int_equal(*slot_at(2), 0x2002);
	shadow_pop_below(&sh, slot_at(2)); /* caught in 11 */
	shadow_rearm_all(&sh, slot_at(2), TRAMP);
	assert_int_equal(*s1, TRAMP);
	assert_int_equal(ret_from(1), RP(10));
	*s1 = RP(10);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(nev, 6);
	expect(3, 20, ATF_EVENT_EXCEPTION, 3);
	expect(4, 11, ATF_EVENT_RETURN, 2);
	expect(5, 10, ATF_EVENT_RETURN, 1);
}

#if SHADOW_RET_IN_FRAME
/* arm64 (test_agent_shadow_inframe): a call whose body saves the return
 * point it was given two words below its slot (x30 at S-24 in a 32-byte
 * frame) and overwrites the slot (S-8) with a local. */
static void call_inframe(int d, uint64_t fn, uint64_t ret)
{
	uint64_t *s = slot_at(d);
	*s = ret;
	shadow_pop_dead(&sh, s, *s, TRAMP);
	assert_true(shadow_push(&sh, fn, s, TRAMP, 0));
	assert_int_equal(*s, SHADOW_SLOT_CALL);
	s[-2] = RP(fn);
	s[0] = 0x5555;
}

/* An exception through arm64 frames: restore finds each saved return
 * point in its frame (not at the slot, which holds a local; past an
 * untraced frame's real return address), the catch re-arms there. */
static void test_unwind_inframe(void **state)
{
	(void)state;
	for (int d = 1; d <= 3; d++)
		call_inframe(d, (uint64_t)d, 0x1000u + (uint64_t)d);
	slot_at(2)[-6] = 0x4242; /* an untraced frame inside frame 2's span */
	shadow_restore_all(&sh, slot_at(4), TRAMP);
	for (int d = 1; d <= 3; d++) {
		assert_int_equal(slot_at(d)[-2], 0x1000u + (uint64_t)d);
		assert_int_equal(*slot_at(d), 0x5555);
	}
	assert_int_equal(slot_at(2)[-6], 0x4242);
	shadow_pop_below(&sh, slot_at(2));
	assert_int_equal(sh.top, 1);
	shadow_rearm_all(&sh, slot_at(2), TRAMP);
	assert_int_equal(slot_at(1)[-2], TRAMP);
	assert_int_equal(*slot_at(1), 0x5555);
	uint32_t flags;
	assert_int_equal(shadow_return(&sh, slot_at(1), &flags), 0x1001);
	expect(5, 1, ATF_EVENT_RETURN, 1);
}

/* The crash restore on arm64 frames: each return point where its body
 * saved it, and the innermost (a leaf that never saved x30) in the
 * interrupted link register. */
static void test_crash_restore_inframe(void **state)
{
	(void)state;
	for (int d = 1; d <= 3; d++)
		call_inframe(d, (uint64_t)d, 0x1000u + (uint64_t)d);
	uint64_t *s4 = slot_at(4);
	*s4 = 0x1004;
	shadow_pop_dead(&sh, s4, *s4, TRAMP);
	assert_true(shadow_push(&sh, 4, s4, TRAMP, 0));
	uint64_t lr = RP(4);     /* bl body: x30, not saved by the leaf */
	slot_at(2)[-6] = 0x4242; /* an untraced frame inside frame 2's span */
	assert_int_equal(shadow_restore_for_crash(&sh, s4 - 2, &lr), 4);
	assert_int_equal(lr, 0x1004);
	for (int d = 1; d <= 3; d++) {
		assert_int_equal(slot_at(d)[-2], 0x1000u + (uint64_t)d);
		assert_int_equal(*slot_at(d), 0x5555);
	}
	assert_int_equal(slot_at(2)[-6], 0x4242);
	assert_int_equal(sh.top, 4);
}

/* A tail chain in arm64 frames: 10 tail-calls 11 (the same slot; 11's
 * body saves 10's return point in its frame), then 11 calls 20. */
static void test_unwind_chain_inframe(void **state)
{
	(void)state;
	call_inframe(1, 10, 0x1001);
	uint64_t *s1 = slot_at(1);
	uint64_t rp10 = s1[-2];
	*s1 = rp10; /* x30 at 11's entry: 10's return point */
	shadow_pop_dead(&sh, s1, *s1, TRAMP);
	assert_true(shadow_push(&sh, 11, s1, TRAMP, 0));
	s1[-2] = RP(11);
	s1[0] = 0x5555;
	call_inframe(2, 20, 0x2002);
	shadow_restore_all(&sh, slot_at(3), TRAMP);
	assert_int_equal(s1[-2], 0x1001); /* the chain's real caller */
	assert_int_equal(slot_at(2)[-2], 0x2002);
	shadow_pop_below(&sh, slot_at(2));
	shadow_rearm_all(&sh, slot_at(2), TRAMP);
	assert_int_equal(s1[-2], TRAMP);
}
#endif

/* The crash handler's restore: every return point of the faulting
 * thread's frames back, innermost first, the frames left in place. */
static void test_crash_restore(void **state)
{
	(void)state;
	for (int d = 1; d <= 3; d++)
		call(d, (uint64_t)d, 0x1000u + (uint64_t)d);
	uint64_t lr = 0x4444; /* a real return address in the link register */
	assert_int_equal(shadow_restore_for_crash(&sh, slot_at(4), &lr), 3);
	for (int d = 1; d <= 3; d++)
		assert_int_equal(*slot_at(d), 0x1000u + (uint64_t)d);
	assert_int_equal(lr, 0x4444);
	assert_int_equal(sh.top, 3);
	assert_int_equal(shadow_restore_for_crash(&sh, slot_at(4), NULL), 0);
}

static void test_pop_all_and_exec(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	call(2, 20, 0x2002);
	shadow_close_all(&sh); /* exec */
	assert_int_equal(nev, 4);
	expect(2, 20, ATF_EVENT_EXCEPTION, 2);
	expect(3, 10, ATF_EVENT_EXCEPTION, 1);
	/* exec failed: the frames return silently; new calls restart at 1 */
	call(3, 30, 0x3003);
	expect(4, 30, ATF_EVENT_CALL, 1);
	assert_int_equal(ret_from(3), 0x3003);
	assert_int_equal(ret_from(2), 0x2002);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(nev, 6);
	shadow_pop_all(&sh, slot_at(1), TRAMP);
	assert_int_equal(sh.top, 0);
}

/* After fork the child's inherited frames return without events. */
static void test_fork_inherited(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	sh.inherited = sh.top;
	nev = 0;
	call(2, 20, 0x2002);
	expect(0, 20, ATF_EVENT_CALL, 1);
	assert_int_equal(ret_from(2), 0x2002);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(nev, 2);
	assert_int_equal(sh.inherited, 0);
}

/* A frame taken for dead by mistake still returns to the right place. */
static void test_grave(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	shadow_pop_top(&sh, ATF_EVENT_EXCEPTION);
	assert_int_equal(ret_from(1), 0x1001);
	uint32_t flags;
	assert_int_equal(shadow_return(&sh, slot_at(7), &flags), 0); /* unknown */
}

/* Only frames popped as EXCEPTION go to the grave (a RETURN's return has
 * happened), and a slot reused later finds its newest entry. */
static void test_grave_exceptions_only(void **state)
{
	(void)state;
	uint32_t flags;
	call(1, 10, 0x1001);
	assert_int_equal(ret_from(1), 0x1001); /* RETURN: not buried */
	*slot_at(1) = TRAMP;
	assert_int_equal(shadow_return(&sh, slot_at(1), &flags), 0);
	call(1, 11, 0x1111);
	shadow_pop_top(&sh, ATF_EVENT_EXCEPTION);
	call(1, 12, 0x1212); /* same slot, later frame */
	shadow_pop_top(&sh, ATF_EVENT_EXCEPTION);
	assert_int_equal(shadow_return(&sh, slot_at(1), &flags), 0x1212);
	/* One slot buried again and again (a coroutine yielding from the same
	 * frame) keeps its one place: 0x1212 stays. */
	for (int i = 0; i < SHADOW_GRAVE + 8; i++) {
		call(2, 20, 0x2002);
		shadow_pop_top(&sh, ATF_EVENT_EXCEPTION);
	}
	assert_int_equal(shadow_return(&sh, slot_at(1), &flags), 0x1212);
	assert_int_equal(shadow_return(&sh, slot_at(2), &flags), 0x2002);
	/* SHADOW_GRAVE other slots push the oldest out. */
	nev = 0; /* the events are not what this test is about */
	for (int i = 0; i < SHADOW_GRAVE; i++) {
		call(3 + i, 30, 0x3000 + (uint64_t)i);
		shadow_pop_top(&sh, ATF_EVENT_EXCEPTION);
	}
	assert_int_equal(shadow_return(&sh, slot_at(1), &flags), 0);
	assert_int_equal(shadow_return(&sh, slot_at(2), &flags), 0);
	assert_int_equal(shadow_return(&sh, slot_at(3 + SHADOW_GRAVE - 1), &flags),
	                 0x3000 + SHADOW_GRAVE - 1);
}

/* The fast paths give exactly the general paths' events and state:
 * nested calls from an empty stack (the sentinel stands in for the top),
 * returns in order. */
static void test_fast_nested(void **state)
{
	(void)state;
	assert_true(call_fast(1, 10, 0x1001));
	assert_true(call_fast(2, 20, 0x2002));
	assert_true(call_fast(3, 30, 0x3003));
	assert_int_equal(*slot_at(2), RP(20));
	assert_int_equal(sh.top, 3);
	assert_int_equal(sh.base[2].flags, 0);
	assert_int_equal(ret_fast(slot_at(3)), 0x3003);
	assert_int_equal(ret_fast(slot_at(2)), 0x2002);
	call(2, 21, 0x2102); /* general and fast paths mix */
	assert_int_equal(ret_fast(slot_at(2)), 0x2102);
	assert_int_equal(ret_from(1), 0x1001);
	assert_int_equal(sh.top, 0);
	assert_int_equal(nev, 8);
	expect(0, 10, ATF_EVENT_CALL, 1);
	expect(1, 20, ATF_EVENT_CALL, 2);
	expect(2, 30, ATF_EVENT_CALL, 3);
	expect(3, 30, ATF_EVENT_RETURN, 3);
	expect(4, 20, ATF_EVENT_RETURN, 2);
	expect(5, 21, ATF_EVENT_CALL, 2);
	expect(6, 21, ATF_EVENT_RETURN, 2);
	expect(7, 10, ATF_EVENT_RETURN, 1);
	assert_int_equal(ret_fast(slot_at(1)), 0); /* empty: declined */
}

/* The fast entry declines, changing nothing, whenever the general path
 * has something to decide. */
static void test_fast_enter_declines(void **state)
{
	(void)state;
	struct ada_shadow before;
	assert_true(call_fast(1, 10, 0x1001));
	assert_true(call_fast(2, 20, 0x2002));
	memcpy(&before, &sh, sizeof(sh));
	*slot_at(2) = RP(20);
	uint32_t depth;
	assert_false(shadow_enter_fast(&sh, 21, slot_at(2), TRAMP, 0, &depth)); /* tail call */
	*slot_at(2) = TRAMP;
	assert_false(shadow_enter_fast(&sh, 21, slot_at(2), TRAMP, 0, &depth)); /* re-armed */
	assert_false(call_fast(2, 22, 0x2222)); /* same slot, fresh address: longjmp */
	assert_false(call_fast(1, 11, 0x1111)); /* above the top: longjmp */
	assert_memory_equal(&before, &sh, sizeof(sh));
	assert_int_equal(nev, 2);
	/* A slot holding the trampoline that no live entry owns (its frame
	 * was taken for dead): the general path refuses to trace it. */
	shadow_pop_top(&sh, ATF_EVENT_EXCEPTION);
	*slot_at(2) = TRAMP;
	memcpy(&before, &sh, sizeof(sh));
	assert_false(shadow_enter_fast(&sh, 23, slot_at(2), TRAMP, 0, &depth));
	assert_memory_equal(&before, &sh, sizeof(sh));
	assert_false(shadow_push(&sh, 23, slot_at(2), TRAMP, 0));
	assert_int_equal(nev, 3);
	sh.cap = sh.top; /* full */
	assert_false(call_fast(3, 30, 0x3003));
	sh.cap = 0; /* no shadow stack yet */
	sh.top = 0;
	assert_false(call_fast(1, 10, 0x1001));
	assert_int_equal(nev, 3);
}

/* The fast return declines for everything but a plain top frame. */
static void test_fast_return_declines(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	uint64_t *s1 = slot_at(1);
	shadow_pop_dead(&sh, s1, *s1, TRAMP); /* 10 tail-calls 11 */
	assert_true(shadow_push(&sh, 11, s1, TRAMP, 0));
	tramp_call(s1, 11);
	assert_int_equal(sh.top, 2);
	/* Tail-called without a record (no SHADOW_F_TAIL): the fast return
	 * too; a chain returns frame by frame. */
	assert_int_equal(ret_fast(s1), RP(10));
	*s1 = RP(10);
	assert_int_equal(ret_fast(s1), 0x1001);
	assert_int_equal(nev, 4);
	assert_int_equal(sh.top, 0);
	/* A detail frame tail-called: flagged, so only a fast return that
	 * allows SHADOW_F_TAIL takes it (the detail lane's, which finds the
	 * record's lr below it). */
	call(1, 10, 0x1001);
	shadow_pop_dead(&sh, s1, *s1, TRAMP);
	assert_true(shadow_push(&sh, 11, s1, TRAMP, SHADOW_F_DETAIL));
	tramp_call(s1, 11);
	assert_int_equal(sh.base[1].flags, SHADOW_F_DETAIL | SHADOW_F_TAIL);
	struct shadow_entry e;
	assert_int_equal(ret_fast(s1), 0);
	assert_false(shadow_return_fast(&sh, s1, SHADOW_F_DETAIL, &e));
	assert_true(shadow_return_fast(&sh, s1, SHADOW_F_DETAIL | SHADOW_F_TAIL, &e));
	assert_int_equal(e.orig, RP(10));
	assert_int_equal(e.fn_id, 11);
	*s1 = RP(10);
	assert_int_equal(ret_fast(s1), 0x1001);
	assert_int_equal(sh.top, 0);
	call(1, 10, 0x1001);
	call(2, 20, 0x2002);
	assert_int_equal(ret_fast(slot_at(1)), 0); /* frames above: longjmp */
	assert_int_equal(ret_fast(slot_at(3)), 0); /* unknown slot */
	sh.base[sh.top - 1].flags = SHADOW_F_RESCAN;
	assert_int_equal(ret_fast(slot_at(2)), 0); /* work after it */
	sh.base[sh.top - 1].flags = 0;
	sh.inherited = sh.top; /* fork child: silent */
	assert_int_equal(ret_fast(slot_at(2)), 0);
	assert_int_equal(sh.top, 2);
}

/* shadow_enter_tail leaves exactly what shadow_pop_dead + shadow_push
 * leave (entries, top, the slot) for a tail call from the top frame,
 * whether its slot holds a return point or the shared trampoline, and
 * with or without the detail flag; a chain of tail calls too. */
static void check_tail_same(uint64_t slot_word, uint32_t flags, int chain)
{
	uint64_t *s1 = slot_at(1);
	struct shadow_entry want[4];
	uint32_t depth = 0, want_top = 0;
	for (int pass = 0; pass < 2; pass++) {
		setup(NULL);
		call(1, 10, 0x1001);
		for (int c = 0; c < chain; c++) {
			*s1 = c == 0 ? slot_word : RP(11 + (uint64_t)c - 1);
			if (pass == 0) {
				shadow_pop_dead(&sh, s1, *s1, TRAMP);
				assert_true(shadow_push(&sh, 11 + (uint64_t)c, s1, TRAMP, flags));
			} else {
				assert_true(
				    shadow_enter_tail(&sh, 11 + (uint64_t)c, s1, flags, &depth));
				assert_int_equal(depth, 2 + c);
				record(11 + (uint64_t)c, ATF_EVENT_CALL, depth);
			}
			assert_int_equal(*s1, SHADOW_SLOT_CALL);
		}
		if (pass == 0) {
			memcpy(want, sh.base, sizeof(want));
			want_top = sh.top;
		}
	}
	assert_int_equal(sh.top, want_top);
	assert_memory_equal(sh.base, want, sizeof(want));
	assert_int_equal(sh.base[1].flags, flags ? flags | SHADOW_F_TAIL : 0);
	assert_int_equal(sh.base[1].orig, slot_word);
	assert_int_equal(nev, 1 + (size_t)chain);
	expect((size_t)chain, 10 + (uint64_t)chain, ATF_EVENT_CALL, 1 + (uint32_t)chain);
}

static void test_tail_fast_same(void **state)
{
	(void)state;
	for (int chain = 1; chain <= 3; chain++) {
		check_tail_same(RP(10), 0, chain);
		check_tail_same(RP(10), SHADOW_F_DETAIL, chain);
		check_tail_same(TRAMP, 0, chain);
		check_tail_same(TRAMP, SHADOW_F_DETAIL, chain);
	}
}

/* shadow_enter_tail declines, changing nothing, for everything but a
 * tail call: a new frame below the top (the fast entry's), a fresh
 * return address in the top frame's slot (it died: longjmp), a slot
 * above the top, a full or absent shadow stack. */
static void test_tail_fast_declines(void **state)
{
	(void)state;
	struct ada_shadow before;
	struct shadow_entry ents[4];
	uint32_t depth;
	call(1, 10, 0x1001);
	call(2, 20, 0x2002);
	memcpy(&before, &sh, sizeof(sh));
	memcpy(ents, sh.base, sizeof(ents));
	*slot_at(3) = 0x3003;
	assert_false(shadow_enter_tail(&sh, 30, slot_at(3), 0, &depth)); /* a call */
	*slot_at(2) = 0x2222;
	assert_false(shadow_enter_tail(&sh, 21, slot_at(2), 0, &depth)); /* dead */
	*slot_at(1) = RP(10);
	assert_false(shadow_enter_tail(&sh, 11, slot_at(1), 0, &depth)); /* above */
	*slot_at(2) = RP(20);
	sh.cap = sh.top; /* full */
	assert_false(shadow_enter_tail(&sh, 21, slot_at(2), SHADOW_F_DETAIL, &depth));
	sh.cap = before.cap;
	assert_memory_equal(&before, &sh, sizeof(sh));
	assert_memory_equal(ents, sh.base, sizeof(ents));
	assert_int_equal(nev, 2);
	setup(NULL); /* no shadow stack yet; and an empty one (the sentinel) */
	sh.cap = 0;
	*slot_at(1) = RP(10);
	assert_false(shadow_enter_tail(&sh, 10, slot_at(1), 0, &depth));
	sh.cap = 64;
	assert_false(shadow_enter_tail(&sh, 10, slot_at(1), 0, &depth));
	assert_int_equal(sh.top, 0);
	assert_int_equal(*slot_at(1), RP(10));
}

/* The detail lane's flag: pushed by the fast entry with the frame, let
 * through by the detail lane's fast return (allow = SHADOW_F_DETAIL) and
 * given back with the frame; the index lane's fast return (allow 0), and
 * the detail lane's for any other flag, decline. */
static void test_fast_detail_flag(void **state)
{
	(void)state;
	uint32_t depth;
	uint64_t *s1 = slot_at(1);
	*s1 = 0x1001;
	assert_true(shadow_enter_fast(&sh, 10, s1, TRAMP, SHADOW_F_DETAIL, &depth));
	assert_int_equal(depth, 1);
	assert_int_equal(sh.base[0].flags, SHADOW_F_DETAIL);
	assert_int_equal(sh.base[0].depth, 1);
	struct shadow_entry e;
	assert_false(shadow_return_fast(&sh, s1, 0, &e));
	assert_int_equal(sh.top, 1);
	sh.base[0].flags = SHADOW_F_DETAIL | SHADOW_F_RESCAN;
	assert_false(shadow_return_fast(&sh, s1, SHADOW_F_DETAIL, &e));
	sh.base[0].flags = SHADOW_F_DETAIL;
	assert_true(shadow_return_fast(&sh, s1, SHADOW_F_DETAIL, &e));
	assert_int_equal(e.flags, SHADOW_F_DETAIL);
	assert_int_equal(e.fn_id, 10);
	assert_int_equal(e.orig, 0x1001);
	assert_int_equal(sh.top, 0);
	/* Without the flag the detail lane's fast return takes it too. */
	*s1 = 0x1001;
	assert_true(shadow_enter_fast(&sh, 11, s1, TRAMP, 0, &depth));
	assert_true(shadow_return_fast(&sh, s1, SHADOW_F_DETAIL, &e));
	assert_int_equal(e.flags, 0);
}

/* A signal handler interrupts the handler of a call at depth 2: its
 * frames go to the side stack and queue, and are replayed after the
 * interrupted push, nested under the new frame. */
static void test_side_path(void **state)
{
	(void)state;
	call(1, 10, 0x1001);
	/* the handler for depth-2 `fn 20` is running; a signal arrives: the
	 * signal handler (fn 77) and its callee (fn 78) run deeper */
	uint64_t *h1 = slot_at(5), *h2 = slot_at(6);
	*h1 = 0x7001;
	shadow_side_enter(&sh, 77, h1, TRAMP);
	*h2 = 0x7002;
	shadow_side_enter(&sh, 78, h2, TRAMP);
	assert_int_equal(*h1, TRAMP);
	assert_int_equal(shadow_side_return(&sh, h2), 0x7002);
	assert_int_equal(shadow_side_return(&sh, h1), 0x7001);
	assert_int_equal(nev, 1); /* nothing reached the ring yet */
	/* the interrupted handler finishes its push, then flushes */
	uint64_t *s2 = slot_at(2);
	*s2 = 0x2002;
	assert_true(shadow_push(&sh, 20, s2, TRAMP, 0));
	tramp_call(s2, 20);
	shadow_side_flush(&sh);
	assert_int_equal(nev, 6);
	expect(1, 20, ATF_EVENT_CALL, 2);
	expect(2, 77, ATF_EVENT_CALL, 3);
	expect(3, 78, ATF_EVENT_CALL, 4);
	expect(4, 78, ATF_EVENT_RETURN, 4);
	expect(5, 77, ATF_EVENT_RETURN, 3);
	assert_int_equal(ret_from(2), 0x2002);
	assert_int_equal(ret_from(1), 0x1001);
}

/* The side queue never holds a CALL whose RETURN could not fit. */
static void test_side_full(void **state)
{
	(void)state;
	sh.side.ev_cap = 4;
	uint64_t *h1 = slot_at(5), *h2 = slot_at(6), *h3 = slot_at(7);
	*h1 = 1;
	shadow_side_enter(&sh, 1, h1, TRAMP); /* 1 queued, needs 2 */
	*h2 = 2;
	shadow_side_enter(&sh, 2, h2, TRAMP); /* free 3 < 4: refused */
	assert_int_equal(sh.side.top, 1);
	assert_int_equal(sh.side.lost, 1);
	assert_int_equal(*h2, 2);
	assert_int_equal(shadow_side_return(&sh, h1), 1);
	assert_int_equal(shadow_side_return(&sh, h3), 0); /* unknown slot */
	shadow_side_flush(&sh);
	assert_int_equal(nev, 2);
	expect(0, 1, ATF_EVENT_CALL, 1);
	expect(1, 1, ATF_EVENT_RETURN, 1);
}

/* The innermost function moved its return address one word down and
 * returned from there: no slot matches, shadow_resync goes on at its
 * caller, gives every frame its EXCEPTION and puts the originals back
 * where the trampoline still is (the outer frame's slot). */
static void test_resync(void **state)
{
	(void)state;
	uint32_t flags;
	call(1, 10, 0x1001);
	call(2, 20, 0x2002);
	uint64_t *moved = slot_at(2) - 1;
	*moved = TRAMP;
	*slot_at(2) = 0x5555; /* the function's own word where its slot was */
	assert_int_equal(shadow_return(&sh, moved, &flags), 0);
	assert_int_equal(shadow_resync(&sh, moved, TRAMP), 0x2002);
	assert_int_equal(sh.top, 0);
	assert_int_equal(*slot_at(1), 0x1001);
	assert_int_equal(*slot_at(2), 0x5555); /* not the trampoline: left alone */
	assert_int_equal(nev, 4);
	expect(2, 20, ATF_EVENT_EXCEPTION, 2);
	expect(3, 10, ATF_EVENT_EXCEPTION, 1);
	/* Nothing left: no address to go on with. */
	assert_int_equal(shadow_resync(&sh, moved, TRAMP), 0);
	/* A tail-called function that moved its return address: the program
	 * goes on at the chain's caller, not at a return point that would
	 * come back to an exit path no entry owns any more. */
	call(1, 10, 0x1001);
	uint64_t *s1 = slot_at(1);
	shadow_pop_dead(&sh, s1, *s1, TRAMP); /* 10 tail-calls 11 */
	assert_true(shadow_push(&sh, 11, s1, TRAMP, 0));
	tramp_call(s1, 11);
	moved = s1 - 1;
	*moved = RP(11);
	*s1 = 0x5555;
	assert_int_equal(shadow_return(&sh, moved, &flags), 0);
	assert_int_equal(shadow_resync(&sh, moved, TRAMP), 0x1001);
	assert_int_equal(sh.top, 0);
}

/* A stack switch by copying (greenlet): every frame gets its original
 * return address back and its EXCEPTION, nothing is buried, and the frames
 * of the inherited (fork) part go silently. */
static void test_switch_all(void **state)
{
	(void)state;
	uint32_t flags;
	call(1, 10, 0x1001);
	call(2, 20, 0x2002);
	call(3, 30, 0x3003);
	sh.inherited = 1;
	assert_int_equal(shadow_switch_all(&sh, slot_at(3), TRAMP), 2);
	assert_int_equal(sh.top, 0);
	assert_int_equal(sh.inherited, 0);
	assert_int_equal(sh.restored, 0);
	assert_int_equal(*slot_at(1), 0x1001);
	assert_int_equal(*slot_at(2), 0x2002);
	assert_int_equal(*slot_at(3), 0x3003);
	assert_int_equal(nev, 5);
	expect(3, 30, ATF_EVENT_EXCEPTION, 3);
	expect(4, 20, ATF_EVENT_EXCEPTION, 2);
	/* Not in the grave: a late trampoline at slot 2 finds nothing. */
	*slot_at(2) = TRAMP;
	assert_int_equal(shadow_return(&sh, slot_at(2), &flags), 0);
	/* Calls after the switch start again at depth 1. */
	call(1, 40, 0x4004);
	expect(5, 40, ATF_EVENT_CALL, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_nested, setup),
		cmocka_unit_test_setup(test_tail_call, setup),
		cmocka_unit_test_setup(test_tail_fast_same, setup),
		cmocka_unit_test_setup(test_tail_fast_declines, setup),
		cmocka_unit_test_setup(test_unwind_chain, setup),
		cmocka_unit_test_setup(test_longjmp_then_call, setup),
		cmocka_unit_test_setup(test_longjmp_then_return, setup),
		cmocka_unit_test_setup(test_altstack_not_dead, setup),
		cmocka_unit_test_setup(test_unwind_and_catch, setup),
		cmocka_unit_test_setup(test_crash_restore, setup),
		cmocka_unit_test_setup(test_pop_all_and_exec, setup),
		cmocka_unit_test_setup(test_fork_inherited, setup),
		cmocka_unit_test_setup(test_grave, setup),
		cmocka_unit_test_setup(test_grave_exceptions_only, setup),
		cmocka_unit_test_setup(test_fast_nested, setup),
		cmocka_unit_test_setup(test_fast_enter_declines, setup),
		cmocka_unit_test_setup(test_fast_return_declines, setup),
		cmocka_unit_test_setup(test_fast_detail_flag, setup),
		cmocka_unit_test_setup(test_side_path, setup),
		cmocka_unit_test_setup(test_side_full, setup),
		cmocka_unit_test_setup(test_resync, setup),
		cmocka_unit_test_setup(test_switch_all, setup),
#if SHADOW_RET_IN_FRAME
		cmocka_unit_test_setup(test_unwind_inframe, setup),
		cmocka_unit_test_setup(test_unwind_chain_inframe, setup),
		cmocka_unit_test_setup(test_crash_restore_inframe, setup),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
