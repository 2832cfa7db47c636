/*
 * C functions hooked for real by test_hook_clobber.c; this file is built
 * twice, at -O0 and at -O2 (HT(name) gives each build its own names), so
 * the relocator sees both compilers' prologues. noipa keeps gcc from
 * cloning, inlining or assuming anything about them across the call.
 */
#include <stdarg.h>
#include <stdint.h>

#include "test_hook_ctargets.h"

static int ct_counter = 41;

__attribute__((noipa)) int HT(add3)(int a, int b, int c)
{
	return a + 2 * b + 3 * c;
}

/* At -O2 the first instruction is RIP-relative (mov eax, [rip+x]). */
__attribute__((noipa)) int HT(get_counter)(void)
{
	return ct_counter;
}

__attribute__((noipa)) double HT(fmix8)(double a, double b, double c, double d, double e, double f,
                                        double g, double h)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

__attribute__((noipa)) float HT(fmixi)(int i, float x, long j, float y)
{
	return (float)i * x + (float)j * y;
}

/* Returned in xmm0 and xmm1. */
__attribute__((noipa)) struct ht_dd HT(dd)(double x)
{
	struct ht_dd r = {x * 2, x + 0.5};
	return r;
}

__attribute__((noipa)) long double HT(ldmul)(long double a, long double b)
{
	return a * b;
}

/* Varargs with doubles: the caller passes the xmm count in al (rax). */
__attribute__((noipa)) double HT(vsum)(int n, ...)
{
	va_list ap;
	double s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

/* Returned in memory: rax carries the hidden pointer back. */
__attribute__((noipa)) struct ht_big HT(make_big)(long x)
{
	struct ht_big b = {{x, x + 1, x + 2, x + 3, x + 4}};
	return b;
}

__attribute__((noipa)) long HT(fib)(long n)
{
	return n < 2 ? n : HT(fib)(n - 1) + HT(fib)(n - 2);
}

/* Seven integer args: the 7th is on the stack, above the return slot. */
__attribute__((noipa)) long HT(seven)(long a, long b, long c, long d, long e, long f, long g)
{
	return a + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7;
}

/* A dense switch with distinct case bodies: gcc dispatches it through a
 * jump table (`jmp reg`) at -O0 and -O2 alike. */
__attribute__((noipa)) int HT(sw)(int x, int y)
{
	switch (x) {
	case 0:
		return y + 11;
	case 1:
		return y * 23;
	case 2:
		return y ^ 37;
	case 3:
		return y - 41;
	case 4:
		return y << 3;
	case 5:
		return y / 61;
	case 6:
		return y % 73;
	default:
		return -1;
	}
}
