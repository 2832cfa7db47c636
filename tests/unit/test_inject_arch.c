/*
 * The architecture half of src/inject without a target (inject_arch.h):
 * the registers of an injected call. On x86_64 the return address goes on
 * the stack (inject_call.c pushes it) and the arguments in rdi .. r9; on
 * arm64 in the link register and x0 .. x7, sp 16-byte aligned, no pending
 * single step. This is the part of arm64's attach that can be tested where
 * the arm64 build runs under qemu-user, which has no ptrace of its guests
 * (docs/attach.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "inject_internal.h"

static void test_call_setup(void **state)
{
	(void)state;
	struct inject_regs r;
	memset(&r, 0x5a, sizeof(r));
	const uint64_t args[INJECT_ARCH_MAX_ARGS] = {11, 12, 13, 14, 15, 16};
	uint64_t sp = 0x7ffff0001000ull, fn = 0x401234;
	inject_arch_call_setup(&r, fn, sp, args, 6);
	assert_int_equal(inject_arch_pc(&r), fn);
	assert_int_equal(inject_arch_sp(&r), sp);
#if defined(__x86_64__)
	assert_int_equal(INJECT_ARCH_RET_ON_STACK, 1);
	assert_int_equal(r.g.rdi, 11);
	assert_int_equal(r.g.r9, 16);
	assert_int_equal(r.g.rax, 0);
	assert_true((long long)r.g.orig_rax < 0); /* no restart into fn */
	assert_false(inject_arch_in_syscall(&r));
#elif defined(__aarch64__)
	assert_int_equal(INJECT_ARCH_RET_ON_STACK, 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(r.g.regs[i], 11 + i);
	assert_int_equal(r.g.regs[6], 0x5a5a5a5a5a5a5a5aull); /* not an argument: kept */
	assert_int_equal(r.g.regs[30], 0);                    /* lr: returns to 0 */
	assert_int_equal(r.g.pstate & (1ull << 21), 0);       /* no single step */
	assert_false(inject_arch_in_syscall(&r));             /* already rewound */
	/* An unaligned sp is aligned down, never up into the caller's data. */
	inject_arch_call_setup(&r, fn, sp + 8, args, 1);
	assert_int_equal(inject_arch_sp(&r), sp);
	r.g.regs[0] = 42;
	assert_int_equal(inject_arch_retval(&r), 42);
	r.tls = 0x7f0000001000ull;
	assert_int_equal(inject_arch_tls(&r), 0x7f0000001000ull);
	_Static_assert(offsetof(struct inject_regs, g.sp) == 31 * 8, "user_pt_regs: sp after x30");
	_Static_assert(offsetof(struct inject_regs, g.pc) == 32 * 8, "user_pt_regs: pc after sp");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_call_setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
