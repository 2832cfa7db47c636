/*
 * Clobber tests: real functions of this binary (hand-written prologues in
 * test_hook_targets.S, C functions built at -O0 or -O2 in
 * test_hook_ctargets.c) are hooked in place with hook_arch + hook_mem,
 * through the real return trampoline, then called: results, call/return
 * counts, argument and callee-saved registers, xmm and x87 return values
 * must all be as without the hook. Built once per optimisation level.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hook_arch.h"
#include "hook_mem.h"
#include "test_hook_ctargets.h"
#include "test_hook_handlers.h"

/* test_hook_targets.S */
uint64_t t_rip_first(uint64_t x);
uint64_t t_lea_first(uint64_t x, uint64_t y);
int t_jcc_first(int x);
uint64_t t_endbr(uint64_t x);
uint64_t t_call_first(uint64_t x);
uint64_t t_thunk(uint64_t x);
void t_regs_dump(void);
void call_with_regs(void *fn, const uint64_t in[15], uint64_t out[15]);
extern const uint64_t t_rip_first_size, t_lea_first_size, t_jcc_first_size, t_endbr_size,
    t_call_first_size, t_thunk_size, t_regs_dump_size;
extern uint64_t t_dump[15], t_helper_ret;

enum {
	ID_RIP = 1,
	ID_LEA,
	ID_JCC,
	ID_ENDBR,
	ID_CALL,
	ID_THUNK,
	ID_REGS,
	ID_ADD3,
	ID_COUNTER,
	ID_FMIX8,
	ID_FMIXI,
	ID_LDMUL,
	ID_VSUM,
	ID_BIG,
	ID_FIB,
	ID_SEVEN,
	ID_SW,
	ID_DD,
	ID_COUNT
};

#define HT_STR2(x) #x
#define HT_STR(x) HT_STR2(x)

/* hook_arch_prepare() (no table reading) on HT(sw), before patching. */
static enum ada_hook_skip sw_plain;

static int sw_hooked(void)
{
	return !strcmp(HT_STR(HT_SUFFIX), "O2");
}

struct target {
	void *fn;
	uint64_t size; /* 0: from the dynamic symbol table */
	int must_hook;
	enum ada_hook_skip got;
	struct hook_patch original, hooked;
};

static struct target targets[ID_COUNT];
static struct hook_mem *mem;

static uint64_t sym_size(void *fn)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	if (!dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	return sym->st_size;
}

static void target_set(int id, void *fn, uint64_t size, int must_hook)
{
	targets[id] = (struct target){fn, size ? size : sym_size(fn), must_hook, 0, {0}, {0}};
}

static void targets_list(void)
{
	target_set(ID_RIP, (void *)t_rip_first, t_rip_first_size, 1);
	target_set(ID_LEA, (void *)t_lea_first, t_lea_first_size, 1);
	target_set(ID_JCC, (void *)t_jcc_first, t_jcc_first_size, 1);
	target_set(ID_ENDBR, (void *)t_endbr, t_endbr_size, 1);
	target_set(ID_CALL, (void *)t_call_first, t_call_first_size, 1);
	target_set(ID_THUNK, (void *)t_thunk, t_thunk_size, 1);
	target_set(ID_REGS, (void *)t_regs_dump, t_regs_dump_size, 1);
	target_set(ID_ADD3, (void *)HT(add3), 0, 1);
	target_set(ID_COUNTER, (void *)HT(get_counter), 0, 1);
	target_set(ID_FMIX8, (void *)HT(fmix8), 0, 1);
	target_set(ID_FMIXI, (void *)HT(fmixi), 0, 1);
	target_set(ID_LDMUL, (void *)HT(ldmul), 0, 1);
	target_set(ID_VSUM, (void *)HT(vsum), 0, 1);
	target_set(ID_BIG, (void *)HT(make_big), 0, 1);
	target_set(ID_FIB, (void *)HT(fib), 0, 1);
	target_set(ID_SEVEN, (void *)HT(seven), 0, 1);
	target_set(ID_DD, (void *)HT(dd), 0, 1);
	/* A gcc switch table: read and hooked at -O2 (x86_switch.c); gcc -O0
	 * dispatches through a shape the reader does not know (pre-scaled
	 * index, cltq, a second lea): skipped there. */
	target_set(ID_SW, (void *)HT(sw), 0, sw_hooked());
}

/* The readable PT_LOAD segments of this executable, for the switch
 * table reader (the agent passes its module's the same way). */
static struct hook_arch_region exe_regions[16];
static struct hook_arch_memview exe_mem = {exe_regions, 0};

static int exe_regions_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t fn = (uint64_t)arg, lo = UINT64_MAX, hi = 0;
	size_t n = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD)
			continue;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		if ((ph->p_flags & PF_R) && n < 16)
			exe_regions[n++] =
			    (struct hook_arch_region){a, ph->p_memsz, (const uint8_t *)a};
	}
	if (fn < lo || fn >= hi)
		return 0;
	exe_mem.n = n;
	return 1;
}

/* Plans, emits and patches every target in one batch, as the agent does. */
static int hook_all(void **state)
{
	struct hook_patch patches[ID_COUNT];
	size_t n = 0;
	uint8_t *rt;

	(void)state;
	targets_list();
	dl_iterate_phdr(exe_regions_cb, (void *)HT(sw));
	assert_true(exe_mem.n > 0);
	assert_int_equal(hook_mem_new(&mem), 0);
	uint64_t lo = (uint64_t)t_rip_first, hi = lo + 1;
	assert_int_equal(hook_mem_alloc(mem, 0, lo, hi, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, &rt), 0);
	assert_true(hook_arch_emit_return_trampoline(rt, (uint64_t)rt, (uint64_t)th_on_exit) > 0);
	for (int id = 1; id < ID_COUNT; id++) {
		struct target *t = &targets[id];
		struct hook_arch_plan plan;
		uint8_t *tr;
		assert_true(t->size > 0);
		if (id == ID_SW)
			sw_plain = hook_arch_prepare(t->fn, (uint64_t)t->fn, t->size, &plan);
		t->got = hook_arch_prepare_mem(t->fn, (uint64_t)t->fn, t->size, &exe_mem, &plan);
		if (t->must_hook)
			assert_int_equal(t->got, ADA_HOOK_OK);
		if (t->got != ADA_HOOK_OK)
			continue;
		assert_int_equal(hook_mem_alloc(mem, 1, (uint64_t)t->fn, (uint64_t)t->fn + t->size,
		                                HOOK_ARCH_MAX_TRAMPOLINE, &tr),
		                 0);
		assert_true(hook_arch_emit_trampoline(&plan, tr, (uint64_t)tr, id,
		                                      (uint64_t)th_on_enter, (uint64_t)rt) > 0);
		patches[n] = (struct hook_patch){(uint64_t)t->fn, plan.patch_len, {0}};
		hook_arch_patch_bytes(&plan, (uint64_t)tr, patches[n].bytes);
		t->hooked = patches[n];
		t->original = (struct hook_patch){(uint64_t)t->fn, plan.patch_len, {0}};
		memcpy(t->original.bytes, plan.original, plan.patch_len);
		n++;
	}
	assert_int_equal(hook_mem_seal(mem), 0);
	assert_int_equal(hook_patch_apply(patches, n), 0);
	th_ret_tramp = (uint64_t)rt;
	return 0;
}

static int unhook_all(void **state)
{
	(void)state;
	hook_mem_free(mem); /* the unhook test restored every function */
	return 0;
}

static void counts_reset(void)
{
	memset(th_enter, 0, sizeof(th_enter));
	memset(th_exit, 0, sizeof(th_exit));
	th_bad_sp = th_overflow = 0;
}

static void counts_expect(int id, uint64_t n)
{
	assert_int_equal(th_enter[id], n);
	assert_int_equal(th_exit[id], n);
	assert_int_equal(th_bad_sp, 0);
	assert_int_equal(th_depth, 0);
}

static void test_asm_prologues(void **state)
{
	(void)state;
	counts_reset();
	for (uint64_t i = 0; i < 3; i++) {
		assert_int_equal(t_rip_first(i), 1000 + i);
		assert_int_equal(t_lea_first(0, i), 2000 + i);
		assert_int_equal(t_jcc_first((int)i), i ? 2 * (int)i : 77);
		assert_int_equal(t_endbr(i), i + 1);
		t_helper_ret = 0;
		assert_int_equal(t_call_first(i), 2 * i + 5);
		/* the relocated call pushed the original return address */
		assert_int_equal(t_helper_ret, (uint64_t)t_call_first + 5);
		assert_int_equal(t_thunk(i), 2 * i);
	}
	for (int id = ID_RIP; id <= ID_THUNK; id++)
		counts_expect(id, 3);
}

/* Every register the ABI gives a meaning to at entry reaches the function
 * unchanged, the handler sees the same values, and callee-saved registers
 * plus rax/rdx come back unchanged through both trampolines. t_regs_dump
 * touches no caller-saved register but rax/rdx, like a leaf gcc's -fipa-ra
 * knows about: its caller may keep values live in rdi, rsi, rcx, r8-r11
 * across the call, so the return trampoline must preserve them too. */
static void test_registers(void **state)
{
	uint64_t in[15], out[15];

	(void)state;
	counts_reset();
	for (int i = 0; i < 15; i++)
		in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
	memset(t_dump, 0, 15 * sizeof(uint64_t));
	call_with_regs((void *)t_regs_dump, in, out);
	counts_expect(ID_REGS, 1);
	for (int i = 0; i < 15; i++)
		assert_int_equal(t_dump[i], in[i]);
	for (int i = 0; i < 6; i++)
		assert_int_equal(out[i], in[i]);
	assert_int_equal(out[6], 0x1234);
	assert_int_equal(out[7], 0x5678);
	static const int live[7] = {6, 7, 9, 10, 11, 13, 14}; /* rdi rsi rcx r8 r9 r10 r11 */
	for (int i = 0; i < 7; i++)
		assert_int_equal(out[8 + i], in[live[i]]);
	assert_int_equal(th_last_regs.rdi, in[6]);
	assert_int_equal(th_last_regs.rsi, in[7]);
	assert_int_equal(th_last_regs.rdx, in[8]);
	assert_int_equal(th_last_regs.rcx, in[9]);
	assert_int_equal(th_last_regs.r8, in[10]);
	assert_int_equal(th_last_regs.r9, in[11]);
	assert_int_equal(th_last_regs.rax, in[12]);
	assert_int_equal(th_last_regs.r10, in[13]);
	assert_int_equal(th_last_regs.r11, in[14]);
	assert_int_equal(th_last_regs.rbp, in[1]);
}

static void test_c_integers(void **state)
{
	(void)state;
	counts_reset();
	assert_int_equal(HT(add3)(1, 2, 3), 14);
	assert_int_equal(HT(get_counter)(), 41);
	assert_int_equal(HT(seven)(1, 2, 3, 4, 5, 6, 7), 140);
	struct ht_big b = HT(make_big)(10);
	for (int i = 0; i < 5; i++)
		assert_int_equal(b.v[i], 10 + i);
	counts_expect(ID_ADD3, 1);
	counts_expect(ID_COUNTER, 1);
	counts_expect(ID_SEVEN, 1);
	counts_expect(ID_BIG, 1);
}

static void test_c_floats(void **state)
{
	(void)state;
	counts_reset();
	assert_true(HT(fmix8)(1, 2, 3, 4, 5, 6, 7, 8) == 204.0);
	assert_true(HT(fmixi)(3, 1.5f, 4, 0.25f) == 5.5f);
	assert_true(HT(ldmul)(1.5L, 2.0L) == 3.0L);
	assert_true(HT(vsum)(4, 1.0, 2.0, 3.5, 4.5) == 11.0);
	struct ht_dd dd = HT(dd)(1.25);
	assert_true(dd.a == 2.5 && dd.b == 1.75);
	counts_expect(ID_FMIX8, 1);
	counts_expect(ID_FMIXI, 1);
	counts_expect(ID_LDMUL, 1);
	counts_expect(ID_VSUM, 1);
	counts_expect(ID_DD, 1);
}

static void test_c_recursion(void **state)
{
	(void)state;
	counts_reset();
	assert_int_equal(HT(fib)(15), 610);
	/* -O2 may turn some of the recursion into a loop: CALL = RETURN,
	 * at least one call, at most the naive 1973. */
	assert_int_equal(th_enter[ID_FIB], th_exit[ID_FIB]);
	assert_true(th_enter[ID_FIB] >= 1 && th_enter[ID_FIB] <= 1973);
	assert_int_equal(th_depth, 0);
	assert_int_equal(th_bad_sp, 0);
}

/* A real compiler jump table: at -O2 its table is read, no entry lands
 * in the patch, so it is hooked and every case (and the default) still
 * returns the same; at -O0 the dispatch shape is not recognised and the
 * function is left alone. Without the table reader it is always skipped. */
static void test_c_switch(void **state)
{
	static const int want[] = {111, 2300, 100 ^ 37, 59, 800, 1, 27, -1, -1};
	int hooked = sw_hooked();

	(void)state;
	assert_int_equal(targets[ID_SW].got, hooked ? ADA_HOOK_OK : ADA_SKIP_JUMP_TABLE);
	assert_int_equal(sw_plain, ADA_SKIP_JUMP_TABLE);
	counts_reset();
	for (int i = 0; i < 9; i++)
		assert_int_equal(HT(sw)(i == 8 ? -5 : i, 100), want[i]);
	counts_expect(ID_SW, hooked ? 9 : 0);
}

/* Restoring the original bytes removes the hooks (dlclose/detach path). */
static void test_unhook(void **state)
{
	struct hook_patch orig[ID_COUNT];
	size_t n = 0;

	(void)state;
	for (int id = 1; id < ID_COUNT; id++)
		if (targets[id].got == ADA_HOOK_OK)
			orig[n++] = targets[id].original;
	assert_int_equal(hook_patch_apply(orig, n), 0);
	for (int id = 1; id < ID_COUNT; id++)
		if (targets[id].got == ADA_HOOK_OK)
			assert_memory_equal(targets[id].fn, targets[id].original.bytes,
			                    targets[id].original.len);
	counts_reset();
	assert_int_equal(t_rip_first(5), 1005);
	assert_int_equal(HT(add3)(1, 1, 1), 6);
	counts_expect(ID_RIP, 0);
	counts_expect(ID_ADD3, 0);
}

static atomic_int stop_caller;

static void *caller(void *arg)
{
	uint64_t *calls = arg;

	while (!atomic_load_explicit(&stop_caller, memory_order_relaxed)) {
		if (t_rip_first(1) != 1001)
			return NULL; /* a torn patch would also crash instead */
		(*calls)++;
	}
	return arg;
}

/* Patching and unpatching a function (one aligned 8-byte store each time)
 * while another thread keeps calling it: every call either takes the hook
 * or not, never a torn instruction; calls and returns stay balanced. */
static void test_patch_while_running(void **state)
{
	struct target *t = &targets[ID_RIP];
	uint64_t calls = 0;
	pthread_t th;

	(void)state;
	assert_int_equal((uint64_t)t->fn % 8, 0); /* the atomic case */
	counts_reset();
	atomic_store(&stop_caller, 0);
	assert_int_equal(pthread_create(&th, NULL, caller, &calls), 0);
	for (int i = 0; i < 300; i++) {
		struct hook_patch on = t->hooked, off = t->original;
		assert_int_equal(hook_patch_apply(&on, 1), 0);
		assert_int_equal(hook_patch_apply(&off, 1), 0);
	}
	atomic_store(&stop_caller, 1);
	void *ret;
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_ptr_equal(ret, &calls);
	print_message("%llu calls while patching, %llu through the hook\n",
	              (unsigned long long)calls, (unsigned long long)th_enter[ID_RIP]);
	assert_int_equal(th_enter[ID_RIP], th_exit[ID_RIP]);
	assert_true(th_enter[ID_RIP] <= calls);
	assert_int_equal(th_depth, 0);
	assert_int_equal(th_bad_sp, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_asm_prologues), cmocka_unit_test(test_registers),
	    cmocka_unit_test(test_c_integers),    cmocka_unit_test(test_c_floats),
	    cmocka_unit_test(test_c_recursion),   cmocka_unit_test(test_c_switch),
	    cmocka_unit_test(test_unhook),        cmocka_unit_test(test_patch_while_running),
	};
	return cmocka_run_group_tests(tests, hook_all, unhook_all);
}
