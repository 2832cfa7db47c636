/*
 * The arm64 hook layer end to end, on aarch64 (natively, or under
 * qemu-aarch64 from an x86_64 host): functions whose first instruction
 * is each relocation class (test_hook_a64_targets.S) and C functions are
 * planned, given trampolines in hook_mem memory near them, patched with
 * hook_patch_apply (icache maintenance included), then called. Fake
 * enter/exit handlers with the real handlers' signatures count calls,
 * keep the return addresses on a small shadow stack, take every
 * contract path (a frame pushed: slot 0; the slot swapped to the return
 * trampoline; the slot left), change an argument, and clobber every
 * caller-saved register they may, so a trampoline that forgot one is
 * caught.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hook_arch.h"
#include "hook_mem.h"

uint64_t a64t_plain(uint64_t a, uint64_t b);
uint64_t a64t_adrp(void);
uint64_t a64t_adr(void);
uint64_t a64t_ldr_x(uint64_t a);
uint64_t a64t_ldr_w(void);
int64_t a64t_ldrsw(void);
double a64t_ldr_d(void);
uint64_t a64t_ldr_q(void);
uint64_t a64t_b(uint64_t a, uint64_t b);
uint64_t a64t_cbz(uint64_t a);
uint64_t a64t_tbnz(uint64_t a);
void a64t_bl(void);
void a64t_blr(void);
uint64_t a64t_inc(uint64_t a);
uint64_t a64t_inc2(uint64_t a);
uint64_t a64t_call_linked(uint64_t a, void (*fn)(void));
uint64_t a64t_keeps_regs(uint64_t (*fn)(uint64_t));

/* C targets: stack arguments, float arguments, a recursion. */
__attribute__((noinline)) uint64_t a64c_sum10(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                                              uint64_t e, uint64_t f, uint64_t g, uint64_t h,
                                              uint64_t i, uint64_t j)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}

__attribute__((noinline)) double a64c_fma(double a, double b, double c)
{
	return a * b + c;
}

/* The barrier keeps gcc from turning the second call into a loop. */
__attribute__((noinline)) uint64_t a64c_fib(uint64_t n)
{
	if (n < 2)
		return n;
	uint64_t r = a64c_fib(n - 1) + a64c_fib(n - 2);
	__asm__ volatile("" : "+r"(r));
	return r;
}

/* Return-address signing (paciasp first, autiasp before its ret): it
 * signs the x30 the trampoline gave it (R_F or the return trampoline)
 * against sp = S and authenticates that same value at its return. */
__attribute__((noinline, target("branch-protection=pac-ret+leaf"))) uint64_t a64c_pac(uint64_t n)
{
	uint64_t r = a64c_fib(n);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

enum fake_mode {
	FAKE_FRAME, /* slot 0: the trampoline calls the body, R_F returns through the exit */
	FAKE_SWAP,  /* slot = the return trampoline: the body returns there */
	FAKE_LEAVE, /* slot untouched: the body returns to the caller */
	FAKE_ARG,   /* FAKE_FRAME, and x0 += 1000 */
};

#define N_FN 20
#define SHADOW 256

static struct {
	enum fake_mode mode[N_FN];
	unsigned enters[N_FN], exits;
	uint64_t orig[SHADOW], *slot[SHADOW];
	unsigned depth, bad_slot;
	uint64_t ret_tramp;
} fake;

/* Every caller-saved register the handlers may use, overwritten. */
#define FAKE_CLOBBER()                                                                             \
	__asm__ volatile("mov x9, #0xbad\n\tmov x10, x9\n\tmov x11, x9\n\tmov x12, x9\n\t"         \
	                 "mov x13, x9\n\tmov x14, x9\n\tmov x15, x9\n\tmov x16, x9\n\t"            \
	                 "mov x17, x9\n\tmov x18, x9\n\tmov x3, x9\n\tmov x4, x9\n\t"              \
	                 "mov x5, x9\n\tmov x6, x9\n\tmov x7, x9\n\tmov x8, x9"                    \
	                 :                                                                         \
	                 :                                                                         \
	                 : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",   \
	                   "x14", "x15", "x16", "x17", "x18")

__attribute__((target("general-regs-only"))) static void
fake_enter(uint64_t fn_id, uint64_t *ret_slot, struct ada_hook_regs *regs)
{
	FAKE_CLOBBER();
	fake.enters[fn_id]++;
	if (fake.mode[fn_id] == FAKE_LEAVE)
		return;
	if (fake.mode[fn_id] == FAKE_ARG)
		regs->x[0] += 1000;
	fake.orig[fake.depth] = *ret_slot;
	fake.slot[fake.depth++] = ret_slot;
	*ret_slot = fake.mode[fn_id] == FAKE_SWAP ? fake.ret_tramp : 0;
}

__attribute__((target("general-regs-only"))) static uint64_t fake_exit(uint64_t sp)
{
	FAKE_CLOBBER();
	fake.exits++;
	fake.depth--;
	if (fake.slot[fake.depth] != (uint64_t *)(uintptr_t)(sp - 8))
		fake.bad_slot++;
	return fake.orig[fake.depth];
}

static struct hook_mem *mem;

static uint32_t a64_first_word(const void *fn)
{
	uint32_t w;
	memcpy(&w, fn, 4);
	return w;
}

/* Hooks fn as fn_id with the given mode: its trampoline after the
 * block's return trampoline, in memory within reach of fn. */
static void hook(void *fn, uint64_t fn_id, enum fake_mode mode)
{
	uint64_t a = (uint64_t)(uintptr_t)fn;
	struct hook_arch_plan plan;
	uint8_t *blk;
	size_t len;

	assert_int_equal(hook_arch_prepare((const uint8_t *)fn, a, 16, &plan), ADA_HOOK_OK);
	assert_int_equal(hook_mem_alloc(mem, (uint32_t)fn_id, a, a + 16, 1024, &blk), 0);
	len = hook_arch_emit_return_trampoline(blk, (uint64_t)(uintptr_t)blk,
	                                       (uint64_t)(uintptr_t)&fake_exit);
	assert_true(len > 0 && len <= 256);
	if (fake.ret_tramp == 0)
		fake.ret_tramp = (uint64_t)(uintptr_t)blk;
	uint64_t tr = (uint64_t)(uintptr_t)blk + 256;
	len = hook_arch_emit_trampoline(&plan, blk + 256, tr, fn_id,
	                                (uint64_t)(uintptr_t)&fake_enter, (uint64_t)(uintptr_t)blk);
	assert_true(len > 0);
	assert_int_equal(hook_mem_seal(mem), 0);
	struct hook_patch p = {.addr = a, .len = plan.patch_len};
	hook_arch_patch_bytes(&plan, tr, p.bytes);
	assert_int_equal(hook_arch_patch_target(&plan, p.bytes), tr);
	assert_int_equal(hook_patch_apply(&p, 1), 0);
	fake.mode[fn_id] = mode;
}

/* Called through a pointer the compiler cannot see through. */
#define CALL(fn) ((__typeof__(&(fn)))fake_opaque((void *)&(fn)))
__attribute__((noinline)) static void *fake_opaque(void *p)
{
	__asm__("" : "+r"(p));
	return p;
}

static int setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	return hook_mem_new(&mem);
}

static void test_classes(void **state)
{
	(void)state;
	hook(a64t_plain, 1, FAKE_FRAME);
	hook(a64t_adrp, 2, FAKE_FRAME);
	hook(a64t_adr, 3, FAKE_SWAP);
	hook(a64t_ldr_x, 4, FAKE_FRAME);
	hook(a64t_ldr_w, 5, FAKE_FRAME);
	hook(a64t_ldrsw, 6, FAKE_LEAVE);
	hook(a64t_ldr_d, 7, FAKE_FRAME);
	hook(a64t_ldr_q, 8, FAKE_FRAME);
	hook(a64t_b, 9, FAKE_FRAME);
	hook(a64t_cbz, 10, FAKE_SWAP);
	hook(a64t_tbnz, 11, FAKE_FRAME);
	hook(a64t_bl, 12, FAKE_LEAVE);
	hook(a64t_blr, 13, FAKE_LEAVE);

	assert_int_equal(CALL(a64t_plain)(2, 3), 5);
	assert_int_equal(CALL(a64t_adrp)(), 0x0badc0ffee);
	assert_int_equal(CALL(a64t_adr)(), 0x1122334455667788ull);
	assert_int_equal(CALL(a64t_ldr_x)(5), 1005);
	assert_int_equal(CALL(a64t_ldr_w)(), 0xfffffffeull);
	assert_int_equal(CALL(a64t_ldrsw)(), -2);
	assert_true(CALL(a64t_ldr_d)() == 2.5);
	assert_int_equal(CALL(a64t_ldr_q)(), 0x2222333344445555ull);
	/* a tail call between two hooked functions: both entered, one return */
	assert_int_equal(CALL(a64t_b)(20, 22), 42);
	assert_int_equal(fake.enters[9], 1);
	assert_int_equal(fake.enters[1], 2);
	assert_int_equal(CALL(a64t_cbz)(0), 9);
	assert_int_equal(CALL(a64t_cbz)(1), 7);
	assert_int_equal(CALL(a64t_tbnz)(8), 2);
	assert_int_equal(CALL(a64t_tbnz)(7), 1);
	assert_int_equal(a64t_call_linked(5, a64t_bl), 16);
	assert_int_equal(a64t_call_linked(5, a64t_blr), 106);
	for (unsigned i = 1; i <= 13; i++)
		assert_true(fake.enters[i] >= 1);
	assert_int_equal(fake.depth, 0);
	assert_int_equal(fake.bad_slot, 0);
	/* 16 entries; all but the three left ones returned through an exit */
	assert_int_equal(fake.exits, 16 - 3);
}

static void test_c_targets(void **state)
{
	(void)state;
	hook(a64c_sum10, 14, FAKE_FRAME);
	hook(a64c_fma, 15, FAKE_SWAP);
	hook(a64c_fib, 16, FAKE_FRAME);
	assert_int_equal(a64_first_word(a64c_pac), 0xd503233f); /* paciasp */
	hook(a64c_pac, 18, FAKE_FRAME);
	assert_int_equal(CALL(a64c_sum10)(1, 1, 1, 1, 1, 1, 1, 1, 1, 1), 55);
	assert_int_equal(CALL(a64c_sum10)(0, 0, 0, 0, 0, 0, 0, 0, 1, 2), 29); /* stack args */
	assert_true(CALL(a64c_fma)(1.5, 2.0, 0.25) == 3.25);
	assert_int_equal(CALL(a64c_fib)(15), 610);
	assert_int_equal(fake.enters[16], 1973); /* fib(15) makes 1973 calls */
	assert_int_equal(fake.depth, 0);
	assert_int_equal(fake.bad_slot, 0);
	assert_int_equal(fake.exits, 2 + 1 + 1973);
	assert_int_equal(CALL(a64c_pac)(10), 56);
	fake.mode[18] = FAKE_SWAP;
	assert_int_equal(CALL(a64c_pac)(10), 56);
	assert_int_equal(fake.enters[18], 2);
	assert_int_equal(fake.depth, 0);
	assert_int_equal(fake.bad_slot, 0);
}

/* The handler's change to an argument register reaches the body; the
 * return path keeps x9-x15 and x18 (the handlers clobber them). */
static void test_regs(void **state)
{
	(void)state;
	hook(a64t_inc, 17, FAKE_ARG);
	assert_int_equal(CALL(a64t_inc)(1), 1002);
	assert_int_equal(a64t_keeps_regs(a64t_inc), 0);
	fake.mode[17] = FAKE_SWAP;
	assert_int_equal(a64t_keeps_regs(a64t_inc), 0);
	assert_int_equal(fake.enters[17], 3);
	assert_int_equal(fake.exits, 3);
	assert_int_equal(fake.bad_slot, 0);
}

/* The count block's TLS, as the agent's (agent_count.c): initial-exec,
 * the gate word and the pointer to the thread's counters. */
static __thread struct {
	uint32_t gate;
	uint64_t *n;
} cnt_tls __attribute__((tls_model("initial-exec")));

/* A count-only function (a64_count.c): a64t_inc2's patch leads to a
 * count block after its trampoline; gate 1 counts (no enter handler
 * call) and keeps x9-x15 and x18, any other gate takes the trampoline. */
static void test_count_block(void **state)
{
	static uint64_t counters[8];
	uint64_t a = (uint64_t)(uintptr_t)&a64t_inc2, tp = (uint64_t)__builtin_thread_pointer();
	struct hook_arch_plan plan;
	uint8_t *blk;

	(void)state;
	assert_int_equal(hook_arch_prepare((const uint8_t *)(uintptr_t)a, a, 8, &plan),
	                 ADA_HOOK_OK);
	assert_int_equal(hook_mem_alloc(mem, 19, a, a + 8, 1024, &blk), 0);
	uint64_t b = (uint64_t)(uintptr_t)blk, tr = b + 256, cb = b + 768;
	fake.ret_tramp = b;
	assert_true(hook_arch_emit_return_trampoline(blk, b, (uint64_t)(uintptr_t)&fake_exit));
	assert_true(hook_arch_emit_trampoline(&plan, blk + 256, tr, 19,
	                                      (uint64_t)(uintptr_t)&fake_enter, b));
	assert_true(hook_arch_emit_count_block(
	    blk + 768, cb, (int32_t)((uint64_t)(uintptr_t)&cnt_tls.gate - tp),
	    (int32_t)((uint64_t)(uintptr_t)&cnt_tls.n - tp), 3, tr));
	assert_int_equal(hook_mem_seal(mem), 0);
	struct hook_patch p = {.addr = a, .len = plan.patch_len};
	hook_arch_patch_bytes(&plan, cb, p.bytes);
	assert_int_equal(hook_patch_apply(&p, 1), 0);
	cnt_tls.n = counters;
	cnt_tls.gate = 1;
	assert_int_equal(CALL(a64t_inc2)(1), 2);
	assert_int_equal(a64t_keeps_regs(a64t_inc2), 0);
	assert_int_equal(counters[3], 2);
	assert_int_equal(fake.enters[19], 0);
	cnt_tls.gate = 3; /* the agent's own work: the full trampoline */
	assert_int_equal(CALL(a64t_inc2)(5), 6);
	assert_int_equal(counters[3], 2);
	assert_int_equal(fake.enters[19], 1);
	assert_int_equal(fake.exits, 1);
	assert_int_equal(fake.depth, 0);
	cnt_tls.gate = 1;
	for (int i = 0; i < 1000; i++)
		CALL(a64t_inc2)(i);
	assert_int_equal(counters[3], 1002);
	assert_int_equal(counters[2] + counters[4], 0);
}

/* arch_scan.h's word scanners and hook_arch_insn_len (aarch64 builds
 * only: the host's hook_arch.h holds x86_64's). */
static void test_scan(void **state)
{
	static const uint32_t w[8] = {
	    0x14000400, /* b .+0x1000 */
	    0xd503201f, /* nop */
	    0x97fff800, /* bl .-0x2000 */
	    0x54000201, /* b.ne .+0x40 */
	    0x10000800, /* adr x0, .+0x100: not a branch */
	    0x34000100, /* cbz w0, .+0x20 */
	    0xb747f804, /* tbnz x4, #40, .-0x100 */
	    0xd61f0020, /* br x1: not direct */
	};
	const uint64_t at = 0x10000;
	uint8_t code[40] = {0};
	uint64_t t = 0;
	int has = 0;

	(void)state;
	memcpy(code, w, sizeof(w));
	assert_int_equal(hook_arch_branch_xref16(code), 0x1u | 0x100u | 0x1000u);
	assert_int_equal(hook_arch_branch_xref16(code + 16), 0x10u | 0x100u);
	assert_int_equal(hook_arch_branch_rel32_16(code + 16), 0x10u | 0x100u);
	assert_true(hook_arch_branch_at(code, at, 32, 0, &t) && t == at + 0x1000);
	assert_true(hook_arch_branch_at(code, at, 32, 8, &t) && t == at + 8 - 0x2000);
	assert_true(hook_arch_branch_at(code, at, 32, 12, &t) && t == at + 12 + 0x40);
	assert_true(hook_arch_branch_at(code, at, 32, 20, &t) && t == at + 20 + 0x20);
	assert_true(hook_arch_branch_at(code, at, 32, 24, &t) && t == at + 24 - 0x100);
	assert_false(hook_arch_branch_at(code, at, 32, 16, &t)); /* adr */
	assert_false(hook_arch_branch_at(code, at, 32, 28, &t)); /* br */
	assert_false(hook_arch_branch_at(code, at, 32, 2, &t));  /* misaligned */
	assert_false(hook_arch_branch_at(code, at, 26, 24, &t)); /* past the end */
	assert_int_equal(hook_arch_insn_len(code + 12, 4, at + 12, &t, &has), 4);
	assert_true(has && t == at + 12 + 0x40);
	assert_int_equal(hook_arch_insn_len(code + 4, 4, at + 4, &t, &has), 4);
	assert_false(has);
	assert_int_equal(hook_arch_insn_len(code, 3, at, &t, &has), 0);
	assert_true(hook_arch_ends_closed(code, at, 32)); /* br */
	assert_false(hook_arch_ends_closed(code, at, 28));
	assert_int_equal(hook_arch_fill_len(code + 4, 4), 4);
	assert_int_equal(hook_arch_fill_len(code + 32, 8), 8); /* zero words */
}

/* hook_arch.h's other entry points on aarch64: the same plan from
 * prepare, prepare_mem and prepare_prologue; no padding form; the fast
 * form's entry points emit the ordinary form (the stub forwards to
 * enter_full); the relocation map; the skip names. */
static void test_interface(void **state)
{
	static const uint32_t w[2] = {0xa9bf7bfd, 0xd65f03c0}; /* stp x29, x30; ret */
	struct hook_arch_plan a, b, c;
	uint8_t code[8], buf[HOOK_ARCH_RETURN_TRAMPOLINE_MAX],
	    buf2[HOOK_ARCH_RETURN_TRAMPOLINE_MAX];
	struct hook_arch_fast f;
	struct hook_arch_reloc_map map;

	(void)state;
	memcpy(code, w, 8);
	memset(&f, 0, sizeof(f));
	assert_int_equal(hook_arch_prepare(code, 0x10000, 8, &a), ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_mem(code, 0x10000, 8, NULL, &b), ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_prologue(code, 0x10000, 8, &c), ADA_HOOK_OK);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_memory_equal(&a, &c, sizeof(a));
	assert_int_equal(hook_arch_prepare_short(code, 0x10000, 8, NULL, &b), ADA_SKIP_TOO_SHORT);
	size_t n = hook_arch_emit_trampoline_fast(&a, buf, 0x20000, 7, 0x21000, 0x20000);
	assert_true(n > 0);
	assert_int_equal(hook_arch_emit_trampoline(&a, buf2, 0x20000, 7, 0x21000, 0x20000), n);
	assert_memory_equal(buf, buf2, n);
	assert_true(hook_arch_reloc_map(&a, 0x20000, true, &map));
	assert_int_equal(map.n, 1);
	assert_int_equal(map.off[0], 0);
	assert_int_equal(map.at[0], 144);
	assert_int_equal(hook_arch_emit_enter_stub(buf, 0x21000, &f), 0); /* no handler */
	f.enter_full = 0x123456789abcull;
	f.exit_full = 0x23456789abcdull;
	assert_int_equal(hook_arch_emit_enter_stub(buf, 0x21000, &f), 16);
	assert_int_equal(a64_first_word(buf), 0x58000050);     /* ldr x16, .+8 */
	assert_int_equal(a64_first_word(buf + 4), 0xd61f0200); /* br x16 */
	uint64_t lit;
	memcpy(&lit, buf + 8, 8);
	assert_int_equal(lit, f.enter_full);
	n = hook_arch_emit_return_trampoline_fast(buf, 0x20000, &f);
	assert_int_equal(hook_arch_emit_return_trampoline(buf2, 0x20000, f.exit_full), n);
	assert_memory_equal(buf, buf2, n);
	n = hook_arch_emit_count_block(buf, 0x20000, 16, 24, 0, 0x20000); /* a64_count.c */
	assert_true(n > 0 && n <= HOOK_ARCH_COUNT_BLOCK_MAX);
	assert_string_equal(hook_skip_name(ADA_SKIP_UNRELOCATABLE), "unrelocatable");
	assert_string_equal(HOOK_ARCH_NAME, "aarch64");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_classes, setup),
	    cmocka_unit_test_setup(test_c_targets, setup),
	    cmocka_unit_test_setup(test_regs, setup),
	    cmocka_unit_test_setup(test_count_block, setup),
	    cmocka_unit_test(test_scan),
	    cmocka_unit_test(test_interface),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
