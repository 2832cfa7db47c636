/*
 * The index lane's fast form (hook_arch.h "Fast form", x86_emit_fast.c): a real
 * function of this binary (t_regs_dump, test_hook_targets.S) is hooked in
 * place with a fast trampoline, the block's enter stub and its fast return
 * trampoline, over a TLS block of this test laid out as the agent's
 * (struct ada_shadow / struct ada_producer fields at the offsets the stubs
 * take from struct hook_arch_fast). Checked: every register the function
 * and its caller may rely on, the shadow entry and both events the fast
 * path writes, and each way out to C (in_hook already set, guard set, a
 * full ring, a full shadow stack, QUEUED at the clear) with the C side's
 * registers clobbered on purpose. The detail lane's stub (detail_hot set:
 * the membership test first) is emitted into a second block over fake
 * agent globals, key-symbol blob and own set: each verdict of the test
 * (outside the set: the fast path; a member: enter_member, whose frame
 * then returns through exit_member; ask: enter_held) with the registers
 * the C side sees, and the declines with its other save layout.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "detail_rec_internal.h"
#include "hook_arch.h"
#include "hook_mem.h"

void t_regs_dump(void);
void call_with_regs(void *fn, const uint64_t in[15], uint64_t out[15]);
void call_with_stack(void *fn, const uint64_t in[15], uint64_t out[15], const uint64_t stk[16]);
extern const uint64_t t_regs_dump_size;
extern uint64_t t_dump[15];
/* xmm0..15: set before call_with_stack's call, as the function got them,
 * as its caller got them back */
extern uint64_t t_xin[32], t_xdump[32], t_xout[32];

#define FN_ID 0x0000000700000123ull /* module FN_MOD, symbol FN_IDX */

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
	/* the detail ring (struct ada_producer) and the snapshot bound
	 * (struct ada_shadow) of the member paths in machine code */
	uint64_t *dwords, *dhead;
	uint64_t dbytes, dpos, dstop;
	uint32_t dcount;
	uint64_t dfast_lo, dfast_span;
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
static uint64_t want_rbp; /* the rbp the hooked function is called (and returns) with */

/* The detail lane's fakes: the agent's hot globals (the fields the stub
 * reads, at offsets of this test's choosing), its own set, and a
 * key-symbol area with one blob (keysym.h's layout). */
struct fake_dset {
	uint32_t all, nbits;
	uint64_t max_mod;
	const uint64_t *const *bits;
};
struct fake_hot {
	uint64_t pad[3];
	const uint64_t *ks_cur;
	const uint8_t *ks_area;
	uint64_t ks_mask;
	const struct fake_dset *dset;
};
#define KS_AREA 4096
#define KS_BLOB 256 /* the blob's offset in the area */
#define FN_MOD 7u
#define FN_IDX 0x123u
static struct fake_hot hot;
static struct fake_dset dset;
static uint64_t ks_cur;
static uint64_t ks_area[KS_AREA / 8] __attribute__((aligned(64)));
static uint64_t own_bits[8], zero_bits[8];
static const uint64_t *own_mods[FN_MOD + 1];
static int n_enter_member, n_exit_member;
static uint32_t flag_extra;     /* more flags on the member's frame */
static int inherit_after_enter; /* the member's frame becomes inherited */
/* rdi rsi rdx rcx r8 r9 rax rbp as the C side saw them in regs */
static uint64_t seen_regs[8];

static void see_regs(const void *regs)
{
	memcpy(seen_regs, regs, sizeof(seen_regs));
}

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
	see_regs(regs);
	seen_fn = fn_id;
	pushed_slot = slot;
	n_enter_held++;
	ft.in_hook &= ~1u;
	CLOBBER();
}

/* A member's entry as the detail handler makes it: a frame flagged
 * SHADOW_F_DETAIL (0x4) and 0 in the slot (call the body). */
static void fake_enter_member(uint64_t fn_id, uint64_t *slot, void *regs)
{
	see_regs(regs);
	seen_fn = fn_id;
	pushed_slot = slot;
	n_enter_member++;
	struct fake_entry *e = &ft.base[ft.top];
	*e = (struct fake_entry){*slot, slot, fn_id, ft.top + 1 - ft.inherited, 0x4 | flag_extra};
	ft.top++;
	if (inherit_after_enter)
		ft.inherited = ft.top; /* as a fork in the body would leave it */
	*slot = 0;
	ft.in_hook &= ~1u;
	CLOBBER();
}

/* Pops the top frame as the real exit would. */
static uint64_t fake_exit(uint64_t sp, int held)
{
	struct fake_entry *e = &ft.base[--ft.top];
	bad_sp += e->slot != (uint64_t *)(uintptr_t)(sp - 8);
	/* The function's rbp at sp-80 (the RETURN record's), rax at sp-8. */
	bad_sp += ((const uint64_t *)(uintptr_t)sp)[-10] != want_rbp;
	bad_sp += ((const uint64_t *)(uintptr_t)sp)[-1] != 0x1234;
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

static uint64_t fake_exit_member(uint64_t sp)
{
	n_exit_member++;
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
static uint8_t *blk, *dblk, *mblk;
static struct hook_patch patch_index, patch_detail, patch_mc;

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
	n_enter_member = n_exit_member = 0;
	memset(seen_regs, 0, sizeof(seen_regs));
	pushed_slot = NULL;
	seen_fn = 0;
	bad_sp = 0;
	assert_int_equal(hook_patch_apply(&patch_index, 1), 0);
}

/* A blob with FN_MOD's directory entry of `kind` (param, a bitset body
 * with `bit` set or not), flags, n_mods. */
static void set_blob(uint32_t flags, uint32_t n_mods, uint32_t kind, uint32_t param, int bit)
{
	memset(ks_area, 0, sizeof(ks_area));
	uint8_t *b = (uint8_t *)ks_area + KS_BLOB;
	memcpy(b + 8, &flags, 4);
	memcpy(b + 12, &n_mods, 4);
	uint8_t *e = b + 64 + 16 * FN_MOD;
	uint32_t body = 64 + 16 * 16; /* after 16 directory entries */
	memcpy(e, &kind, 4);
	memcpy(e + 4, &param, 4);
	memcpy(e + 8, &body, 4);
	uint64_t w = bit ? 1ull << (FN_IDX & 63) : ~(1ull << (FN_IDX & 63));
	memcpy(b + body + (FN_IDX / 64) * 8, &w, 8);
	ks_cur = KS_BLOB;
}

/* The detail stub's state: the index lane's, its patch, a blob where the
 * function is outside the set, the own set empty. */
static void reset_detail(void)
{
	reset_state();
	assert_int_equal(hook_patch_apply(&patch_detail, 1), 0);
	set_blob(0, FN_MOD + 1, 1 /* BITSET */, 512, 0);
	memset(own_bits, 0, sizeof(own_bits));
	for (unsigned i = 0; i <= FN_MOD; i++)
		own_mods[i] = zero_bits;
	own_mods[FN_MOD] = own_bits;
	dset = (struct fake_dset){0, 512, FN_MOD, own_mods};
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
	patch_index = (struct hook_patch){fn, plan.patch_len, {0}};
	hook_arch_patch_bytes(&plan, (uint64_t)(blk + tr_at), patch_index.bytes);
	/* The detail lane's block: the same trampoline over its own stubs. */
	hot.ks_cur = &ks_cur;
	hot.ks_area = (const uint8_t *)ks_area;
	hot.ks_mask = KS_AREA - 1;
	hot.dset = &dset;
	f.detail_hot = (uint64_t)&hot;
	f.h_ks_cur = (int32_t)offsetof(struct fake_hot, ks_cur);
	f.h_ks_area = (int32_t)offsetof(struct fake_hot, ks_area);
	f.h_ks_mask = (int32_t)offsetof(struct fake_hot, ks_mask);
	f.h_dset = (int32_t)offsetof(struct fake_hot, dset);
	f.d_all = (int32_t)offsetof(struct fake_dset, all);
	f.d_nbits = (int32_t)offsetof(struct fake_dset, nbits);
	f.d_max_mod = (int32_t)offsetof(struct fake_dset, max_mod);
	f.d_bits = (int32_t)offsetof(struct fake_dset, bits);
	f.module = FN_MOD;
	f.enter_member = (uint64_t)fake_enter_member;
	f.exit_member = (uint64_t)fake_exit_member;
	assert_int_equal(hook_mem_alloc(mem, 1, fn, fn + t_regs_dump_size,
	                                tr_at + HOOK_ARCH_MAX_TRAMPOLINE, &dblk),
	                 0);
	assert_true(hook_arch_emit_return_trampoline_fast(dblk, (uint64_t)dblk, &f) > 0);
	assert_true(hook_arch_emit_enter_stub(dblk + stub_at, (uint64_t)(dblk + stub_at), &f) > 0);
	assert_true(hook_arch_emit_trampoline_fast(&plan, dblk + tr_at, (uint64_t)(dblk + tr_at),
	                                           FN_ID, (uint64_t)(dblk + stub_at),
	                                           (uint64_t)dblk) > 0);
	patch_detail = (struct hook_patch){fn, plan.patch_len, {0}};
	hook_arch_patch_bytes(&plan, (uint64_t)(dblk + tr_at), patch_detail.bytes);
	/* The third: the member paths in machine code (the 128-byte
	 * snapshot's records). */
	f.detail_rec = 1;
	f.p_dwords = tp_off(&ft.dwords);
	f.p_dhead = tp_off(&ft.dhead);
	f.p_dbytes = tp_off(&ft.dbytes);
	f.p_dpos = tp_off(&ft.dpos);
	f.p_dstop = tp_off(&ft.dstop);
	f.p_dcount = tp_off(&ft.dcount);
	f.s_dfast_lo = tp_off(&ft.dfast_lo);
	f.s_dfast_span = tp_off(&ft.dfast_span);
	assert_int_equal(hook_mem_alloc(mem, 1, fn, fn + t_regs_dump_size,
	                                tr_at + HOOK_ARCH_MAX_TRAMPOLINE, &mblk),
	                 0);
	assert_true(hook_arch_emit_return_trampoline_fast(mblk, (uint64_t)mblk, &f) > 0);
	assert_true(hook_arch_emit_enter_stub(mblk + stub_at, (uint64_t)(mblk + stub_at), &f) > 0);
	assert_true(hook_arch_emit_trampoline_fast(&plan, mblk + tr_at, (uint64_t)(mblk + tr_at),
	                                           FN_ID, (uint64_t)(mblk + stub_at),
	                                           (uint64_t)mblk) > 0);
	patch_mc = (struct hook_patch){fn, plan.patch_len, {0}};
	hook_arch_patch_bytes(&plan, (uint64_t)(mblk + tr_at), patch_mc.bytes);
	assert_int_equal(hook_mem_seal(mem), 0);
	assert_int_equal(hook_patch_apply(&patch_index, 1), 0);
	return 0;
}

static int unhook_fast(void **state)
{
	(void)state;
	hook_mem_free(mem); /* the process ends: the patch stays */
	return 0;
}

struct regs8 {
	uint64_t r[8];
};
static struct regs8 last_in;

/* rdi rsi rdx rcx r8 r9 rax rbp of call_with_regs' in[] (rbx rbp r12
 * r13 r14 r15 rdi rsi rdx rcx r8 r9 rax r10 r11). */
static struct regs8 in_regs(const uint64_t in[15])
{
	struct regs8 r = {{in[6], in[7], in[8], in[9], in[10], in[11], in[12], in[1]}};
	return r;
}

/* The registers the C side saw are the function's arguments as called. */
static void expect_seen_regs(void)
{
	for (int i = 0; i < 8; i++)
		assert_int_equal(seen_regs[i], last_in.r[i]);
}

/* The 16 words above the function's return slot in call_checked's calls
 * (call_with_stack): the stack snapshot's words 1..15 (and one past). */
static uint64_t stk_words[16];

static int n_c_calls(void)
{
	return n_enter_full + n_enter_held + n_exit_full + n_exit_held + n_flush + n_enter_member +
	       n_exit_member;
}

/* Calls the hooked function with known registers; checks what it saw and
 * what its caller got back (call_with_regs: rax/rdx are its results, the
 * other caller-saved ones must come back too: gcc's -fipa-ra). */
static void call_checked(void)
{
	uint64_t in[15], out[15];
	for (int i = 0; i < 15; i++)
		in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
	for (int i = 0; i < 16; i++)
		stk_words[i] = 0x5151000000000000ull | (uint64_t)(i + 1) << 8 | (uint64_t)(i + 1);
	for (int i = 0; i < 32; i++)
		t_xin[i] = 0x7a7a000000000000ull | (uint64_t)(i + 1) << 16 | (uint64_t)(i + 1);
	memset(t_dump, 0, 15 * sizeof(uint64_t));
	memset(t_xdump, 0, sizeof(t_xdump));
	memset(t_xout, 0, sizeof(t_xout));
	want_rbp = in[1];
	int c_before = n_c_calls();
	call_with_stack((void *)t_regs_dump, in, out, stk_words);
	/* Every vector register as called, on both sides, when no C ran
	 * (the fake handlers here may use vector registers: the agent's
	 * are built with general registers only). */
	if (n_c_calls() == c_before) {
		for (int i = 0; i < 32; i++) {
			assert_int_equal(t_xdump[i], t_xin[i]);
			assert_int_equal(t_xout[i], t_xin[i]);
		}
	}
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
	if (n_enter_full + n_enter_held + n_enter_member)
		assert_int_equal(seen_fn, FN_ID);
	last_in = in_regs(in);
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

/* ---- the detail lane's stub ---- */

static void expect_no_c(void)
{
	assert_int_equal(n_enter_full + n_enter_held + n_exit_full + n_exit_held + n_flush +
	                     n_enter_member + n_exit_member,
	                 0);
}

/* Outside the set: exactly the index lane's fast path. */
static void expect_fast_index(void)
{
	expect_no_c();
	assert_int_equal(ft.head, 2);
	assert_int_equal(head_pub, 2);
	expect_event(0, ft.tid_call, 1);
	expect_event(1, ft.tid_return, 1);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
	assert_int_equal(stack[1].fn_id, FN_ID);
	assert_int_equal(stack[1].flags, 0);
}

/* A member: enter_member with the registers, its flagged frame back
 * through exit_member; the fast path wrote nothing. */
static void expect_member(void)
{
	assert_int_equal(n_enter_member, 1);
	assert_int_equal(n_exit_member, 1);
	assert_int_equal(n_enter_full + n_enter_held + n_exit_full + n_exit_held + n_flush, 0);
	expect_seen_regs();
	assert_int_equal(ft.head, 0);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
	assert_int_equal(stack[1].flags, 0x4);
}

static void expect_ask(void)
{
	expect_held_enter_only();
	expect_seen_regs();
	assert_int_equal(ft.head, 0);
	assert_int_equal(ft.top, 0);
}

static void test_d_outside(void **state)
{
	(void)state;
	reset_detail();
	call_checked();
	expect_fast_index();
}

static void test_d_member_bitset(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 1, 512, 1);
	call_checked();
	expect_member();
}

/* The symbol index beyond the bitset's bits: outside. */
static void test_d_beyond_bits(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 1, FN_IDX & ~63u, 1);
	call_checked();
	expect_fast_index();
}

static void test_d_all_flag(void **state)
{
	(void)state;
	reset_detail();
	set_blob(1 /* ADA_KEYSYM_F_ALL */, 0, 0, 0, 0);
	call_checked();
	expect_member();
}

/* The module has no directory entry (n_mods <= module: the blob was
 * built before the recorder read it): the C handler asks the own set
 * (agent_detail_ask), as for a hash container; the own set's bit and the
 * blob's garbage past its directory do not matter to the stub. */
static void test_d_no_entry(void **state)
{
	(void)state;
	for (uint32_t n = 0; n <= FN_MOD; n += FN_MOD) {
		reset_detail();
		set_blob(0, n, 1, 512, 1);
		call_checked();
		expect_ask();
		reset_detail();
		set_blob(0, n, 1, 512, 0);
		own_bits[FN_IDX / 64] = 1ull << (FN_IDX & 63);
		call_checked();
		expect_ask();
	}
}

static void test_d_kind_none(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 0 /* NONE */, 512, 1);
	call_checked();
	expect_fast_index();
}

static void test_d_kind_full(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 4 /* FULL */, 0, 0);
	call_checked();
	expect_member();
}

/* Hash and CRoaring containers, an uncovered module (kind 5, a gap the
 * own set answers for: keysym.h) and any other kind: the C handler asks. */
static void test_d_ask(void **state)
{
	(void)state;
	for (uint32_t kind = 2; kind <= 6; kind++) {
		if (kind == 4)
			continue;
		reset_detail();
		set_blob(0, FN_MOD + 1, kind, 512, 1);
		call_checked();
		expect_ask();
	}
}

/* A garbage blob offset and directory: every load stays in the area
 * (masked), the verdict is whatever the bytes say, nothing crashes. */
static void test_d_masked(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 1, 0xffffffffu, 1);
	uint32_t far = 0xfffffff0u; /* the body's offset, far outside */
	memcpy((uint8_t *)ks_area + KS_BLOB + 64 + 16 * FN_MOD + 8, &far, 4);
	call_checked();
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
	reset_detail();
	/* masked: the blob at offset 0 (zeros: n_mods 0, no entry), so the
	 * C handler asks */
	ks_cur = 0x7ffffffffffff000ull;
	call_checked();
	expect_ask();
}

/* No blob published yet: the own set. */
static void test_d_own_set(void **state)
{
	(void)state;
	reset_detail();
	ks_cur = UINT64_MAX; /* ADA_KEYSYM_CUR_LOCAL */
	call_checked();
	expect_fast_index();
	reset_detail();
	ks_cur = UINT64_MAX;
	own_bits[FN_IDX / 64] = 1ull << (FN_IDX & 63);
	call_checked();
	expect_member();
	/* Outside the bitmaps (index, then module): what `all` says. */
	reset_detail();
	ks_cur = UINT64_MAX;
	own_bits[FN_IDX / 64] = 1ull << (FN_IDX & 63);
	dset.nbits = FN_IDX & ~63u;
	call_checked();
	expect_fast_index();
	reset_detail();
	ks_cur = UINT64_MAX;
	dset = (struct fake_dset){1, 0, 0, NULL}; /* "every function" */
	call_checked();
	expect_member();
	reset_detail();
	ks_cur = UINT64_MAX;
	own_bits[FN_IDX / 64] = 1ull << (FN_IDX & 63);
	dset.max_mod = FN_MOD - 1;
	call_checked();
	expect_fast_index();
	reset_detail();
	ks_cur = UINT64_MAX;
	dset.max_mod = FN_MOD - 1;
	dset.all = 1;
	call_checked();
	expect_member();
}

/* Outside the set, but a decline of the index path (ring full, no
 * stack, a dead frame): enter_held with the eight registers in place. */
static void test_d_declines(void **state)
{
	(void)state;
	for (int c = 0; c < 3; c++) {
		reset_detail();
		if (c == 0)
			ft.head = ft.limit = 5;
		else if (c == 1)
			ft.cap = 0;
		else
			stack[1] = (struct fake_entry){1, (uint64_t *)(uintptr_t)8, 9, 1, 0},
			ft.top = 1;
		call_checked();
		expect_held_enter_only();
		expect_seen_regs();
		assert_int_equal(ft.head, c == 0 ? 5 : 0);
		assert_int_equal(ft.top, c == 2 ? 1 : 0);
	}
}

static void test_d_guard(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 1, 512, 1); /* a member: the guard comes first */
	ft.guard = 1;
	call_checked();
	expect_held_enter_only();
	expect_seen_regs();
	assert_int_equal(ft.head, 0);
}

static void test_d_in_hook_set(void **state)
{
	(void)state;
	reset_detail();
	ft.in_hook = 1;
	call_checked();
	assert_int_equal(n_enter_full, 1);
	assert_int_equal(n_enter_held + n_enter_member + n_exit_full + n_exit_held + n_flush, 0);
	assert_int_equal(ft.head, 0);
}

/* A member's frame with another flag too (a tail call's): the held exit. */
static void test_d_member_other_flag(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 1, 512, 1);
	ft.guard = 0;
	/* enter_member flags its frame 0x4; make the exit see 0x5. */
	ft.inherited = 0;
	flag_extra = 0x1;
	call_checked();
	flag_extra = 0;
	assert_int_equal(n_enter_member, 1);
	assert_int_equal(n_exit_held, 1);
	assert_int_equal(n_exit_member + n_exit_full + n_enter_held, 0);
}

/* QUEUED at both clears with the eight-register save: registers intact. */
static void test_d_flush(void **state)
{
	(void)state;
	reset_detail();
	ft.in_hook = 2;
	flush_leaves[0] = 2;
	flush_leaves[1] = 0;
	call_checked();
	assert_int_equal(n_flush, 2);
	assert_int_equal(n_enter_full + n_enter_held + n_enter_member + n_exit_full + n_exit_held +
	                     n_exit_member,
	                 0);
	assert_int_equal(ft.head, 2);
	assert_int_equal(ft.in_hook, 0);
}

/* An inherited member frame (a fork child's): not the member exit. */
static void test_d_inherited(void **state)
{
	(void)state;
	reset_detail();
	set_blob(0, FN_MOD + 1, 1, 512, 1);
	inherit_after_enter = 1;
	call_checked();
	inherit_after_enter = 0;
	assert_int_equal(n_enter_member, 1);
	assert_int_equal(n_exit_held, 1);
	assert_int_equal(n_exit_member, 0);
}

/* ---- the member paths in machine code (detail_rec: the 128-byte
 * snapshot): the records must be word for word what the C handlers'
 * writers (detail_rec_internal.h) make of the same call ---- */

#define DRING_BYTES 1024u
#define DRING_POISON 0xdeadbeefdeadbeefull
#define MC_LAP (3ull * DRING_BYTES) /* positions run on across laps */
#define MC_CALL_BYTES (8u + 8u * (ADA_DREC_CALL_WORDS + 16u))
#define MC_RET_BYTES (8u + 8u * ADA_DREC_RETURN_WORDS)
static uint64_t dring[DRING_BYTES / 8] __attribute__((aligned(64)));
static uint64_t dhead_pub;

/* A member (bitset bit set) over the third block; the detail ring holds
 * poison, its next record goes to byte 64 of the ring in its fourth lap,
 * the chunk ends at the ring's end; the whole snapshot allowed. The
 * index ring's next event is its last slot (7), so the RETURN's wraps
 * to slot 0 and the links are 7 and 8. */
static void reset_mc(void)
{
	reset_detail();
	assert_int_equal(hook_patch_apply(&patch_mc, 1), 0);
	set_blob(0, FN_MOD + 1, 1, 512, 1);
	for (size_t i = 0; i < DRING_BYTES / 8; i++)
		dring[i] = DRING_POISON;
	dhead_pub = 0;
	ft.dwords = dring;
	ft.dhead = &dhead_pub;
	ft.dbytes = DRING_BYTES;
	ft.dpos = MC_LAP + 64;
	ft.dstop = MC_LAP + DRING_BYTES;
	ft.dcount = 41;
	ft.dfast_lo = 0;
	ft.dfast_span = UINT64_MAX;
	ft.head = 7;
	ft.limit = 7 + 8;
	head_pub = 7;
}

/* The ring's words from byte `from` to the end (to the start if before)
 * still hold the poison. */
static void expect_dring_poison(uint64_t from, uint64_t to)
{
	for (uint64_t b = from; b < to; b += 8)
		assert_int_equal(dring[b / 8], DRING_POISON);
}

/* The CALL record at ring byte `at` is what detail_put_call_fixed() writes
 * for this call: registers as called, orig the caller's return address,
 * the slot's 16 words (orig, then stk_words[0..14]), ts and link those of
 * index event `ev` at ring position `link`. */
static void expect_call_rec(uint64_t at, int ev, uint64_t link, uint64_t orig, uint64_t *slot)
{
	struct ada_hook_regs regs = {last_in.r[0],
	                             last_in.r[1],
	                             last_in.r[2],
	                             last_in.r[3],
	                             last_in.r[4],
	                             last_in.r[5],
	                             last_in.r[6],
	                             last_in.r[7],
	                             0,
	                             0};
	uint64_t fake_slot[16], want[MC_CALL_BYTES / 8];
	fake_slot[0] = 0; /* SHADOW_SLOT_CALL by the time the record is made */
	memcpy(fake_slot + 1, stk_words, 15 * 8);
	want[0] = MC_CALL_BYTES - 8;
	detail_put_call_fixed((_Atomic uint64_t *)(want + 1), FN_ID, fake_slot, &regs, ring[ev].ts,
	                      link, orig);
	/* The record's rsp is the real slot's address, not the copy's. */
	want[1 + ADA_DREC_REGS + 9] = (uint64_t)(uintptr_t)slot;
	for (unsigned i = 0; i < MC_CALL_BYTES / 8; i++) {
		if (dring[at / 8 + i] != want[i])
			print_error("CALL record word %u: %#llx, want %#llx\n", i,
			            (unsigned long long)dring[at / 8 + i],
			            (unsigned long long)want[i]);
		assert_int_equal(dring[at / 8 + i], want[i]);
	}
}

/* The RETURN record at ring byte `at`: detail_put_return() with rax
 * 0x1234, rdx 0x5678 (t_regs_dump's results) and the function's rbp. */
static void expect_return_rec(uint64_t at, int ev, uint64_t link, uint64_t orig, uint64_t *slot)
{
	uint64_t saved[10] = {0}, want[MC_RET_BYTES / 8];
	saved[9] = 0x1234;   /* sp-8: rax */
	saved[8] = 0x5678;   /* sp-16: rdx */
	saved[0] = want_rbp; /* sp-80: rbp */
	want[0] = MC_RET_BYTES - 8;
	detail_put_return((_Atomic uint64_t *)(want + 1), FN_ID, (uint64_t)(uintptr_t)(saved + 10),
	                  orig, ring[ev].ts, link);
	want[1 + ADA_DREC_REGS + 4] = (uint64_t)(uintptr_t)(slot + 1); /* sp after the ret */
	for (unsigned i = 0; i < MC_RET_BYTES / 8; i++) {
		if (dring[at / 8 + i] != want[i])
			print_error("RETURN record word %u: %#llx, want %#llx\n", i,
			            (unsigned long long)dring[at / 8 + i],
			            (unsigned long long)want[i]);
		assert_int_equal(dring[at / 8 + i], want[i]);
	}
}

/* Both records by the machine code, no C: the shadow frame flagged
 * SHADOW_F_DETAIL in one store, both index events, the records at 64
 * and 64 + 248, committed (dpos, dcount, the published head). */
static void test_m_call_return(void **state)
{
	(void)state;
	reset_mc();
	call_checked();
	expect_no_c();
	assert_int_equal(ft.head, 9);
	assert_int_equal(head_pub, 9);
	expect_event(7, ft.tid_call, 1);
	expect_event(0, ft.tid_return, 1);
	assert_int_equal(ft.top, 0);
	assert_int_equal(ft.in_hook, 0);
	assert_int_equal(stack[1].fn_id, FN_ID);
	assert_int_equal(stack[1].depth, 1);
	assert_int_equal(stack[1].flags, 0x4);
	uint64_t orig = stack[1].orig, *slot = stack[1].slot;
	expect_call_rec(64, 7, 7, orig, slot);
	expect_return_rec(64 + MC_CALL_BYTES, 0, 8, orig, slot);
	uint64_t end = MC_LAP + 64 + MC_CALL_BYTES + MC_RET_BYTES;
	assert_int_equal(ft.dpos, end);
	assert_int_equal(dhead_pub, end);
	assert_int_equal(ft.dcount, 43);
	expect_dring_poison(0, 64);
	expect_dring_poison(end - MC_LAP, DRING_BYTES);
	/* The depth counts from the inherited frames, as on the index path. */
	reset_mc();
	ft.inherited = 0;
	stack[1] = (struct fake_entry){1, (uint64_t *)UINTPTR_MAX - 1, 9, 1, 0};
	ft.top = 1;
	call_checked();
	expect_no_c();
	assert_int_equal(stack[2].depth, 2);
	assert_int_equal(stack[2].flags, 0x4);
	assert_int_equal(ring[7].depth, 2);
	assert_int_equal(ring[0].depth, 2);
	assert_int_equal(ft.top, 1);
}

/* The snapshot's bound: slot - dfast_lo <= dfast_span takes the whole
 * snapshot (the edge included); one byte less of span, or a slot below
 * dfast_lo, leaves the call to the C member handler (which clips it),
 * before any store; its frame's return still gets the machine-code
 * RETURN record. */
static void test_m_stack_bound(void **state)
{
	(void)state;
	/* The slot call_checked's call of the function has: the same every
	 * time from this function (call_checked's frame is at the same
	 * place), learned from the frame a first call pushes. */
	reset_mc();
	call_checked();
	assert_int_equal(ft.head, 9);
	uint64_t *slot = stack[1].slot;
	uint64_t lo = (uint64_t)(uintptr_t)slot - 4096;
	reset_mc();
	ft.dfast_lo = lo;
	ft.dfast_span = 4096;
	call_checked();
	expect_no_c();
	assert_true(stack[1].slot == slot);
	expect_call_rec(64, 7, 7, stack[1].orig, slot);
	for (int c = 0; c < 2; c++) {
		reset_mc();
		ft.dfast_lo = c == 0 ? lo : (uint64_t)(uintptr_t)slot + 8;
		ft.dfast_span = c == 0 ? 4095 : 1u << 20;
		call_checked();
		assert_int_equal(n_enter_member, 1);
		expect_seen_regs();
		assert_int_equal(n_exit_member + n_enter_held + n_exit_held + n_enter_full +
		                     n_exit_full + n_flush,
		                 0);
		assert_true(pushed_slot == slot);
		/* nothing from the stub at the call; the RETURN's record at 64 */
		assert_int_equal(ft.head, 8);
		expect_event(7, ft.tid_return, 1);
		expect_return_rec(64, 7, 7, stack[1].orig, slot);
		assert_int_equal(ft.dpos, MC_LAP + 64 + MC_RET_BYTES);
		assert_int_equal(ft.dcount, 42);
		expect_dring_poison(64 + MC_RET_BYTES, DRING_BYTES);
	}
}

/* The record must fit before dstop (ada_detail_reserve_fast): exactly
 * fitting is taken; 8 bytes short goes to C, at the call and at the
 * return; no ring at all (dpos = dstop = 0) too. */
static void test_m_no_room(void **state)
{
	(void)state;
	/* CALL fits exactly, then no room for the RETURN: exit_member. */
	reset_mc();
	ft.dstop = ft.dpos + MC_CALL_BYTES;
	call_checked();
	assert_int_equal(n_enter_member, 0);
	assert_int_equal(n_exit_member, 1);
	assert_int_equal(n_enter_held + n_exit_held + n_enter_full + n_exit_full + n_flush, 0);
	assert_int_equal(ft.head, 8); /* the C exit (a fake) emitted nothing */
	expect_call_rec(64, 7, 7, stack[1].orig, stack[1].slot);
	assert_int_equal(ft.dpos, MC_LAP + 64 + MC_CALL_BYTES);
	assert_int_equal(dhead_pub, ft.dpos);
	assert_int_equal(ft.top, 0);
	expect_dring_poison(64 + MC_CALL_BYTES, DRING_BYTES);
	/* RETURN fits exactly after it. */
	reset_mc();
	ft.dstop = ft.dpos + MC_CALL_BYTES + MC_RET_BYTES;
	call_checked();
	expect_no_c();
	assert_int_equal(ft.dpos, ft.dstop);
	expect_return_rec(64 + MC_CALL_BYTES, 0, 8, stack[1].orig, stack[1].slot);
	/* 8 bytes short at the call: all of it to C, nothing stored. */
	reset_mc();
	ft.dstop = ft.dpos + MC_CALL_BYTES - 8;
	call_checked();
	assert_int_equal(n_enter_member, 1);
	assert_int_equal(n_exit_member, 0); /* the RETURN's record fits */
	expect_seen_regs();
	assert_int_equal(ft.head, 8);
	assert_int_equal(head_pub, 8);
	expect_return_rec(64, 7, 7, stack[1].orig, stack[1].slot);
	assert_int_equal(ft.dpos, MC_LAP + 64 + MC_RET_BYTES);
	assert_int_equal(dhead_pub, ft.dpos);
	assert_int_equal(ft.dcount, 42);
	expect_dring_poison(64 + MC_RET_BYTES, DRING_BYTES);
	/* 8 bytes short of the RETURN too: both to C, nothing stored. */
	reset_mc();
	ft.dstop = ft.dpos + MC_RET_BYTES - 8;
	call_checked();
	assert_int_equal(n_enter_member, 1);
	assert_int_equal(n_exit_member, 1);
	assert_int_equal(ft.head, 7);
	assert_int_equal(head_pub, 7);
	assert_int_equal(ft.dpos, MC_LAP + 64);
	assert_int_equal(dhead_pub, 0);
	assert_int_equal(ft.dcount, 41);
	expect_dring_poison(0, DRING_BYTES);
	/* No detail ring (a slot without one, or none claimed yet). */
	reset_mc();
	ft.dwords = NULL;
	ft.dbytes = ft.dpos = ft.dstop = 0;
	call_checked();
	assert_int_equal(n_enter_member, 1);
	assert_int_equal(n_exit_member, 1);
	assert_int_equal(ft.head, 7);
	assert_int_equal(ft.dpos, 0);
	assert_int_equal(dhead_pub, 0);
}

/* The index path's declines (ring full, no stack, a dead frame, the
 * shared trampoline in the slot is not testable here) take the member
 * to C with the eight registers in place, nothing stored. */
static void test_m_declines(void **state)
{
	(void)state;
	for (int c = 0; c < 3; c++) {
		reset_mc();
		if (c == 0)
			ft.limit = ft.head;
		else if (c == 1)
			ft.cap = 0;
		else
			stack[1] = (struct fake_entry){1, (uint64_t *)(uintptr_t)8, 9, 1, 0},
			ft.top = 1;
		call_checked();
		assert_int_equal(n_enter_member, 1);
		assert_int_equal(n_exit_member, c == 0); /* the index ring still full */
		expect_seen_regs();
		assert_int_equal(ft.dpos, MC_LAP + 64 + (c == 0 ? 0 : MC_RET_BYTES));
		expect_dring_poison(c == 0 ? 0 : 64 + MC_RET_BYTES, DRING_BYTES);
		assert_int_equal(ft.top, c == 2 ? 1 : 0);
	}
}

/* Outside the set, the third block is the index path: no record. */
static void test_m_outside(void **state)
{
	(void)state;
	reset_mc();
	set_blob(0, FN_MOD + 1, 1, 512, 0);
	call_checked();
	expect_no_c();
	assert_int_equal(ft.head, 9);
	assert_int_equal(stack[1].flags, 0);
	assert_int_equal(ft.dpos, MC_LAP + 64);
	assert_int_equal(ft.dcount, 41);
	expect_dring_poison(0, DRING_BYTES);
}

/* QUEUED at both clears: the flush after each record, registers intact. */
static void test_m_flush(void **state)
{
	(void)state;
	reset_mc();
	ft.in_hook = 2;
	flush_leaves[0] = 2;
	flush_leaves[1] = 0;
	call_checked();
	assert_int_equal(n_flush, 2);
	assert_int_equal(n_enter_full + n_enter_held + n_enter_member + n_exit_full + n_exit_held +
	                     n_exit_member,
	                 0);
	assert_int_equal(ft.in_hook, 0);
	expect_call_rec(64, 7, 7, stack[1].orig, stack[1].slot);
	expect_return_rec(64 + MC_CALL_BYTES, 0, 8, stack[1].orig, stack[1].slot);
}

/* The guard or in_hook set: C as before, no record. */
static void test_m_guard(void **state)
{
	(void)state;
	reset_mc();
	ft.guard = 1;
	call_checked();
	expect_held_enter_only();
	assert_int_equal(ft.dpos, MC_LAP + 64);
	reset_mc();
	ft.in_hook = 1;
	call_checked();
	assert_int_equal(n_enter_full, 1);
	assert_int_equal(ft.dpos, MC_LAP + 64);
	expect_dring_poison(0, DRING_BYTES);
}

/* ---- a detach in the middle of a stub ----
 * The rings are the arena's shared memory, which a detach replaces by
 * zero pages (ada_producer_retire_arena) while a thread may be stopped
 * at any instruction of a stub: nothing the stubs do may depend on
 * reading back what they wrote there (a member return that took its
 * return address back from its RETURN record returned to 0). A child
 * makes the call single-stepped by this process, which zeroes both
 * rings and their published heads before every instruction -- a retire
 * at every point at once -- and the call must come back as it went. */

#define RETIRED_MAX_STEPS 1000000ul

/* The child: the call of call_checked(), its registers compared
 * without cmocka; exit 0, or which check failed (77: no ptrace). */
static void retired_child(void)
{
	uint64_t in[15], out[15];
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
		_exit(77);
	/* A fault ends the child (cmocka's handlers would run on in it). */
	static const int faults[4] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
	for (int i = 0; i < 4; i++)
		signal(faults[i], SIG_DFL);
	for (int i = 0; i < 15; i++)
		in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
	for (int i = 0; i < 16; i++)
		stk_words[i] = 0x5151000000000000ull | (uint64_t)(i + 1) << 8 | (uint64_t)(i + 1);
	want_rbp = in[1];
	int c_before = n_c_calls();
	uint64_t head = ft.head;
	raise(SIGSTOP);
	call_with_stack((void *)t_regs_dump, in, out, stk_words);
	static const int live[7] = {6, 7, 9, 10, 11, 13, 14}; /* as call_checked() */
	for (int i = 0; i < 6; i++)
		if (out[i] != in[i])
			_exit(1);
	for (int i = 0; i < 7; i++)
		if (out[8 + i] != in[live[i]])
			_exit(1);
	if (out[6] != 0x1234 || out[7] != 0x5678)
		_exit(2);
	/* Both events went through the machine code, none through C. */
	_exit(n_c_calls() != c_before ? 3 : ft.head != head + 2 ? 4 : 0);
}

/* The rings of the child, zeroed: what a retired arena reads. */
static void retired_zero(pid_t pid)
{
	static uint64_t zero[DRING_BYTES / 8];
	struct iovec local[4] = {{zero, sizeof(ring)},
	                         {zero, sizeof(head_pub)},
	                         {zero, sizeof(dring)},
	                         {zero, sizeof(dhead_pub)}};
	struct iovec remote[4] = {{ring, sizeof(ring)},
	                          {&head_pub, sizeof(head_pub)},
	                          {dring, sizeof(dring)},
	                          {&dhead_pub, sizeof(dhead_pub)}};
	ssize_t want =
	    (ssize_t)(sizeof(ring) + sizeof(head_pub) + sizeof(dring) + sizeof(dhead_pub));
	assert_int_equal(process_vm_writev(pid, local, 4, remote, 4, 0), want);
}

static void run_retired_every_step(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		retired_child();
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		skip(); /* ptrace refused here (Yama, seccomp) */
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	unsigned long steps = 0;
	for (; steps < RETIRED_MAX_STEPS; steps++) {
		retired_zero(pid);
		assert_int_equal(ptrace(PTRACE_SINGLESTEP, pid, 0, 0), 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFSTOPPED(st))
			break;
		if (WSTOPSIG(st) != SIGTRAP) { /* a fault: let it end the child */
			ptrace(PTRACE_CONT, pid, 0, (void *)(long)WSTOPSIG(st));
			assert_int_equal(waitpid(pid, &st, 0), pid);
			break;
		}
	}
	if (steps == RETIRED_MAX_STEPS) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fail_msg("the child did not end within %lu instructions", RETIRED_MAX_STEPS);
	}
	if (WIFSIGNALED(st))
		fail_msg("the call died by signal %d with its arena retired under it",
		         WTERMSIG(st));
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The index lane's stubs (test_fast's call). */
static void test_retired_index(void **state)
{
	(void)state;
	reset_state();
	ft.inherited = 0;
	run_retired_every_step();
}

/* The member paths in machine code (test_m_call_return's call). */
static void test_m_retired(void **state)
{
	(void)state;
	reset_mc();
	run_retired_every_step();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fast),          cmocka_unit_test(test_depth),
	    cmocka_unit_test(test_in_hook_set),   cmocka_unit_test(test_guard),
	    cmocka_unit_test(test_ring_full),     cmocka_unit_test(test_stack_full),
	    cmocka_unit_test(test_dead_frame),    cmocka_unit_test(test_exit_ring_full),
	    cmocka_unit_test(test_flush),         cmocka_unit_test(test_exit_nested),
	    cmocka_unit_test(test_d_outside),     cmocka_unit_test(test_d_member_bitset),
	    cmocka_unit_test(test_d_beyond_bits), cmocka_unit_test(test_d_all_flag),
	    cmocka_unit_test(test_d_no_entry),    cmocka_unit_test(test_d_kind_none),
	    cmocka_unit_test(test_d_kind_full),   cmocka_unit_test(test_d_ask),
	    cmocka_unit_test(test_d_masked),      cmocka_unit_test(test_d_own_set),
	    cmocka_unit_test(test_d_declines),    cmocka_unit_test(test_d_guard),
	    cmocka_unit_test(test_d_in_hook_set), cmocka_unit_test(test_d_member_other_flag),
	    cmocka_unit_test(test_d_flush),       cmocka_unit_test(test_d_inherited),
	    cmocka_unit_test(test_m_call_return), cmocka_unit_test(test_m_stack_bound),
	    cmocka_unit_test(test_m_no_room),     cmocka_unit_test(test_m_declines),
	    cmocka_unit_test(test_m_outside),     cmocka_unit_test(test_m_flush),
	    cmocka_unit_test(test_m_guard),       cmocka_unit_test(test_retired_index),
	    cmocka_unit_test(test_m_retired),
	};
	return cmocka_run_group_tests(tests, hook_fast, unhook_fast);
}
