/*
 * Test target: tail calls. Built at -O2/-O3, tail_a() ends in a sibling call
 * (a jmp) to tail_b(), which jumps to tail_c(); tail_c() returns straight to
 * tail_a()'s caller. Each function is counted once per call, and every
 * frame, one that left by a tail call too, ends in its own RETURN (a tail
 * chain nests: the callee saves the caller's return point as its return
 * address, docs/hooks.md), with depths consistent. Also a tail call
 * through a function pointer and a tail call into libc (strlen).
 * Single-threaded.
 */
#include <stdio.h>
#include <string.h>

#include "tcount.h"

#define FUNCS(X)                                                                                   \
	X(main) X(tail_a) X(tail_b) X(tail_c) X(tail_ptr) X(target_p) X(tail_libc) X(driver)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;

TC_FN unsigned long tail_c(unsigned long x)
{
	TC_ENTER(FN_tail_c);
	sink = x;
	return x * 5 + 1;
}

TC_FN unsigned long tail_b(unsigned long x)
{
	TC_ENTER(FN_tail_b);
	sink = x;
	return tail_c(x + 2);
}

TC_FN unsigned long tail_a(unsigned long x)
{
	TC_ENTER(FN_tail_a);
	sink = x;
	return tail_b(x + 1);
}

TC_FN unsigned long target_p(unsigned long x)
{
	TC_ENTER(FN_target_p);
	return x ^ 0xff;
}

static unsigned long (*volatile fp)(unsigned long) = target_p;

TC_FN unsigned long tail_ptr(unsigned long x)
{
	TC_ENTER(FN_tail_ptr);
	return fp(x + 3);
}

TC_FN size_t tail_libc(const char *s)
{
	TC_ENTER(FN_tail_libc);
	return strlen(s);
}

TC_FN unsigned long driver(unsigned long n)
{
	TC_ENTER(FN_driver);
	unsigned long acc = 0;
	for (unsigned long i = 0; i < n; i++) {
		acc += tail_a(i);
		acc += tail_ptr(i);
		acc += tail_libc("tail call into libc");
	}
	return acc;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "tailcall", fn_names, FN_COUNT);
	printf("tailcall: %lu\n", driver(100));
	return 0;
}
