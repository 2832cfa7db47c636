/*
 * The index lane's fast form (hook_arch.h "Fast form", x86_emit.c): a real
 * function of this binary (t_regs_dump, test_hook_targets.S) is hooked in
 * place with a fast trampoline, the block's enter stub and its fast return
 * trampoline, over a TLS block of this test laid out as the agent's
 * (struct ada_shadow / struct ada_producer fields at the offsets the stubs
 * take from struct hook_arch_fast). Checked: every register the function
 * and its caller may rely on, the shadow entry and both events the fast
 * path writes, and each way out to C (in_hook already set, guard set, a
 * full ring, a full shadow stack, QUEUED at the clear) with the C side's
 * registers clobbered on purpose.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hook_arch.h"
#include "hook_mem.h"

void t_regs_dump(void);
void call_with_regs(void *fn, const uint64_t in[15], uint64_t out[15]);
extern const uint64_t t_regs_dump_size;
extern uint64_t t_dump[15];

#define FN_ID 0x0000000700000123ull

struct fake_entry {
	uint64_t orig;
	uint64_t *slot;
	uint64_t fn_id;
	uint32_t depth, flags;
};
struct fake_event {
	uint64_t ts, fn_id, tid_kind;
	uint32_t depth, detail_seq;
};
/* The fields the stubs touch; the layout between them is free. */
struct fake_tls {
	struct fake_entry *base;
	uint32_t top, cap, guard, in_hook, inherited;
	struct fake_event *events;
	uint64_t mask, head, limit;
	uint64_t *head_pub;
	uint64_t tid_call, tid_return;
};
static __thread struct fake_tls ft __attribute__((tls_model("initial-exec")));

static struct fake_entry stack[1 + 8];
static struct fake_event ring[8];
static uint64_t head_pub;
static int n_enter_full, n_enter_held, n_exit_full, n_exit_held, n_flush;
static uint64_t *pushed_slot;
/* What the fake handlers saw (checked outside: they run with the stack
 * as the stubs leave it, 8 bytes off the ABI's alignment, and call
 * nothing). */
static uint64_t seen_fn;
static int bad_sp;

/* The C side may use every caller-saved register: these do. */
#define CLOBBER()                                                                                  \
	__asm__ volatile("mov $-1, %%rcx; mov $-1, %%rdx; mov $-1, %%rsi; mov $-1, %%rdi; "        \
	                 "mov $-1, %%r8; mov $-1, %%r9; mov $-1, %%r10; mov $-1, %%r11"            \
	                 :                                                                         \
	                 :                                                                         \
	                 : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")

/* The fake C handlers push nothing (the function then runs as unhooked,
 * the trampoline jumps to its body) and release in_hook where the real
 * ones would. */
static void fake_enter_full(uint64_t fn_id, uint64_t *slot, void *regs)
{
	(void)regs;
	seen_fn = fn_id;
	pushed_slot = slot;
	n_enter_full++;
	CLOBBER();
}

static void fake_enter_held(uint64_t fn_id, uint64_t *slot, void *regs)
{
	(void)regs;
	seen_fn = fn_id;
	pushed_slot = slot;
	n_enter_held++;
	ft.in_hook &= ~1u;
	CLOBBER();
}

/* Pops the top frame as the real exit would. */
static uint64_t fake_exit(uint64_t sp, int held)
{
	struct fake_entry *e = &ft.base[--ft.top];
	bad_sp += e->slot != (uint64_t *)(uintptr_t)(sp - 8);
	if (held)
		ft.in_hook &= ~1u;
	CLOBBER();
	return e->orig;
}

static uint64_t fake_exit_full(uint64_t sp)
{
	n_exit_full++;
	return fake_exit(sp, 0);
}

static uint64_t fake_exit_held(uint64_t sp)
{
	n_exit_held++;
	return fake_exit(sp, 1);
}

/* What each flush leaves in in_hook (another signal's QUEUED, a handler
 * still running, or nothing). */
static uint32_t flush_leaves[2];

static void fake_flush(void)
{
	ft.in_hook = flush_leaves[n_flush++ & 1];
	CLOBBER();
}

static int32_t tp_off(const void *field)
{
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (int32_t)(intptr_t)((uintptr_t)field - tp);
}

static struct hook_mem *mem;
static uint8_t *blk;

static void reset_state(void)
{
	memset(stack, 0, sizeof(stack));
	memset(ring, 0, sizeof(ring));
	stack[0].slot = (uint64_t *)UINTPTR_MAX; /* the sentinel */
	ft.base = stack + 1;
	ft.top = 0;
	ft.cap = 8;
	ft.guard = 0;
	ft.in_hook = 0;
	ft.inherited = 0;
	ft.events = ring;
	ft.mask = 7;
	ft.head = 0;
	ft.limit = 8;
	ft.head_pub = &head_pub;
	head_pub = 0;
	ft.tid_call = 4242u | (uint64_t)1 << 32;
	ft.tid_return = 4242u | (uint64_t)2 << 32;
	n_enter_full = n_enter_held = n_exit_full = n_exit_held = n_flush = 0;
	pushed_slot = NULL;
	seen_fn = 0;
	bad_sp = 0;
}

static int hook_fast(void **state)
{
	(void)state;
	struct hook_arch_fast f = {
	    .s_base = tp_off(&ft.base),
	    .s_top = tp_off(&ft.top),
	    .s_cap = tp_off(&ft.cap),
	    .s_guard = tp_off(&ft.guard),
	    .s_in_hook = tp_off(&ft.in_hook),
	    .s_inherited = tp_off(&ft.inherited),
	    .p_events = tp_off(&ft.events),
	    .p_mask = tp_off(&ft.mask),
	    .p_head = tp_off(&ft.head),
	    .p_limit = tp_off(&ft.limit),
	    .p_head_pub = tp_off(&ft.head_pub),
	    .p_tid_call = tp_off(&ft.tid_call),
	    .p_tid_return = tp_off(&ft.tid_return),
	    .ret_tramp = 0x1000, /* no slot holds it here */
	    .enter_full = (uint64_t)fake_enter_full,
	    .enter_held = (uint64_t)fake_enter_held,
	    .exit_full = (uint64_t)fake_exit_full,
	    .exit_held = (uint64_t)fake_exit_held,
	    .flush = (uint64_t)fake_flush,
	};
	struct hook_arch_plan plan;
	uint64_t fn = (uint64_t)t_regs_dump;
	assert_int_equal(hook_arch_prepare((const uint8_t *)fn, fn, t_regs_dump_size, &plan),
	                 ADA_HOOK_OK);
	assert_int_equal(hook_mem_new(&mem), 0);
	size_t stub_at = HOOK_ARCH_RETURN_TRAMPOLINE_MAX,
	       tr_at = stub_at + HOOK_ARCH_ENTER_STUB_MAX;
	assert_int_equal(hook_mem_alloc(mem, 1, fn, fn + t_regs_dump_size,
	                                tr_at + HOOK_ARCH_MAX_TRAMPOLINE, &blk),
	                 0);
	assert_true(hook_arch_emit_return_trampoline_fast(blk, (uint64_t)blk, &f) > 0);
	assert_true(hook_arch_emit_enter_stub(blk + stub_at, (uint64_t)(blk + stub_at), &f) > 0);
	size_t n = hook_arch_emit_trampoline_fast(&plan, blk + tr_at, (uint64_t)(blk + tr_at),
	                                          FN_ID, (uint64_t)(blk + stub_at), (uint64_t)blk);
	assert_true(n > 0);
	/* ada attach finds the relocated copy in the fast form too. */
	if (plan.insn_count > 1)
		assert_true(hook_arch_moved_pc(&plan, blk + tr_at, (uint64_t)(blk + tr_at),
		                               fn + plan.insns[1].offset) != 0);
	struct hook_patch p = {fn, plan.patch_len, {0}};
	hook_arch_patch_bytes(&plan, (uint64_t)(blk + tr_at), p.bytes);
	assert_int_equal(hook_mem_seal(mem), 0);
	assert_int_equal(hook_patch_apply(&p, 1), 0);
	return 0;
}

static int unhook_fast(void **state)
{
	(void)state;
	hook_mem_free(mem); /* the process ends: the patch stays */
	return 0;
}

/* Calls the hooked function with known registers; checks what it saw and
 * what its caller got back (call_with_regs: rax/rdx are its results, the
 * other caller-saved ones must come back too: gcc's -fipa-ra). */
static void call_checked(void)
{
	uint64_t in[15], out[15];
	for (int i = 0; i < 15; i++)
		in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
	memset(t_dump, 0, 15 * sizeof(uint64_t));
	call_with_regs((void *)t_regs_dump, in, out);
	for (int i = 0; i < 15; i++)
		assert_int_equal(t_dump[i], in[i]);
	for (int i = 0; i < 6; i++)
		assert_int_equal(out[i], in[i]);
	assert_int_equal(out[6], 0x1234);
	assert_int_equal(out[7], 0x5678);
	static const int live[7] = {6, 7, 9, 10, 11, 13, 14}; /* rdi rsi rcx r8 r9 r10 r11 */
	for (int i = 0; i < 7; i++)
		assert_int_equal(out[8 + i], in[live[i]]);
	assert_int_equal(bad_sp, 0);
	if (n_enter_full + n_enter_held)
		assert_int_equal(seen_fn, FN_ID);
}

static void expect_event(int i, uint64_t tid_kind, uint32_t depth)
{
	assert_int_equal(ring[i].fn_id, FN_ID);
	assert_int_equal(ring[i].tid_kind, tid_kind);
	assert_int_equal(ring[i].depth, depth);
	assert_int_equal(ring[i].detail_seq, UINT32_MAX);
	assert_true(ring[i].ts != 0);
}

static void test_fast(void **state)
{
	(void)state;
	reset_state();
	ft.inherited = 0;
	call_checked();
	assert_int_equal(n_enter_full + n_enter_held + n_exit_full + n_exit_held + n_flush, 0);
	assert_int_equal(ft.head, 2);
	assert_int_equal(head_pub, 2);
	expect_event(0, ft.tid_call, 1);
	expect_event(1, ft.tid_return, 1);
	assert_true(ring[1].ts >= ring[0].ts);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
	/* The entry, still above top: the caller's return address and slot. */
	assert_int_equal(stack[1].fn_id, FN_ID);
	assert_int_equal(stack[1].depth, 1);
	assert_int_equal(stack[1].flags, 0);
	assert_true(stack[1].orig != 0 && stack[1].slot != NULL);
}

/* Frames below (inherited ones too): depth counts from inherited. */
static void test_depth(void **state)
{
	(void)state;
	reset_state();
	stack[1] = (struct fake_entry){1, (uint64_t *)UINTPTR_MAX - 1, 9, 1, 0};
	stack[2] = (struct fake_entry){1, (uint64_t *)UINTPTR_MAX - 2, 9, 2, 0};
	ft.top = 2;
	ft.inherited = 1;
	call_checked();
	expect_event(0, ft.tid_call, 2);
	expect_event(1, ft.tid_return, 2);
	assert_int_equal(ft.top, 2);
	assert_int_equal(stack[3].depth, 2);
}

static void test_in_hook_set(void **state)
{
	(void)state;
	reset_state();
	ft.in_hook = 1; /* a signal handler's call while a handler runs */
	call_checked();
	assert_int_equal(n_enter_full, 1);
	assert_int_equal(n_enter_held + n_exit_full + n_exit_held + n_flush, 0);
	assert_int_equal(ft.in_hook, 1);
	assert_int_equal(ft.head, 0);
	assert_int_equal(ft.top, 0);
	assert_non_null(pushed_slot);
}

static void expect_held_enter_only(void)
{
	assert_int_equal(n_enter_held, 1);
	assert_int_equal(n_enter_full + n_exit_full + n_exit_held + n_flush, 0);
	assert_int_equal(ft.in_hook, 0);
}

static void test_guard(void **state)
{
	(void)state;
	reset_state();
	ft.guard = 1;
	call_checked();
	expect_held_enter_only();
	assert_int_equal(ft.head, 0);
	assert_int_equal(ft.top, 0);
}

static void test_ring_full(void **state)
{
	(void)state;
	reset_state();
	ft.head = ft.limit = 5;
	call_checked();
	expect_held_enter_only();
	assert_int_equal(ft.head, 5);
	assert_int_equal(ft.top, 0);
	assert_int_equal(stack[1].fn_id, 0); /* declined before any store */
}

static void test_stack_full(void **state)
{
	(void)state;
	reset_state();
	ft.cap = 0; /* a thread's first call: no stack yet */
	call_checked();
	expect_held_enter_only();
	assert_int_equal(ft.head, 0);
	assert_int_equal(stack[1].fn_id, 0);
}

/* A frame at or below the new slot (longjmp left it): declined. */
static void test_dead_frame(void **state)
{
	(void)state;
	reset_state();
	stack[1] = (struct fake_entry){1, (uint64_t *)(uintptr_t)8, 9, 1, 0};
	ft.top = 1;
	call_checked();
	expect_held_enter_only();
	assert_int_equal(ft.top, 1);
	assert_int_equal(ft.head, 0);
}

/* Room for the CALL only: the return declines to the held exit. */
static void test_exit_ring_full(void **state)
{
	(void)state;
	reset_state();
	ft.limit = 1;
	call_checked();
	assert_int_equal(n_exit_held, 1);
	assert_int_equal(n_enter_full + n_enter_held + n_exit_full + n_flush, 0);
	assert_int_equal(ft.head, 1);
	expect_event(0, ft.tid_call, 1);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
}

/* QUEUED at both clears: the flush, then the fast path's own exit. */
static void test_flush(void **state)
{
	(void)state;
	reset_state();
	ft.in_hook = 2;
	flush_leaves[0] = 2; /* the exit's clear sees QUEUED too */
	flush_leaves[1] = 0;
	call_checked();
	assert_int_equal(n_flush, 2);
	assert_int_equal(n_enter_full + n_enter_held + n_exit_full + n_exit_held, 0);
	assert_int_equal(ft.head, 2);
	expect_event(0, ft.tid_call, 1);
	expect_event(1, ft.tid_return, 1);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
}

/* Bit 0 set at the return (the flush after the entry leaves a handler
 * running, as for a signal handler's frame returning during one): the
 * full exit, which finds it set. */
static void test_exit_nested(void **state)
{
	(void)state;
	reset_state();
	ft.in_hook = 2;
	flush_leaves[0] = 1;
	call_checked();
	assert_int_equal(n_flush, 1);
	assert_int_equal(n_exit_full, 1);
	assert_int_equal(n_enter_full + n_enter_held + n_exit_held, 0);
	assert_int_equal(ft.head, 1);
	expect_event(0, ft.tid_call, 1);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fast),        cmocka_unit_test(test_depth),
	    cmocka_unit_test(test_in_hook_set), cmocka_unit_test(test_guard),
	    cmocka_unit_test(test_ring_full),   cmocka_unit_test(test_stack_full),
	    cmocka_unit_test(test_dead_frame),  cmocka_unit_test(test_exit_ring_full),
	    cmocka_unit_test(test_flush),       cmocka_unit_test(test_exit_nested),
	};
	return cmocka_run_group_tests(tests, hook_fast, unhook_fast);
}
