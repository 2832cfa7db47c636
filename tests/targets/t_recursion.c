/*
 * Test target: deep recursion (10 000 frames of one function) and mutual
 * recursion, neither of which the compiler may turn into a loop (each call
 * is followed by work on its result). Single-threaded; prints the results.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(recurse) X(is_even) X(is_odd) X(fib)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile unsigned long sink;

TC_FN static unsigned long recurse(unsigned long n)
{
	TC_ENTER(FN_recurse);
	if (n == 0)
		return 1;
	unsigned long r = recurse(n - 1);
	sink = r;
	return r * 3 + n;
}

TC_FN static int is_odd(unsigned n);

TC_FN static int is_even(unsigned n)
{
	TC_ENTER(FN_is_even);
	if (n == 0)
		return 1;
	int r = is_odd(n - 1);
	sink = (unsigned long)r;
	return r;
}

TC_FN static int is_odd(unsigned n)
{
	TC_ENTER(FN_is_odd);
	if (n == 0)
		return 0;
	int r = is_even(n - 1);
	sink = (unsigned long)r;
	return r;
}

TC_FN static unsigned long fib(unsigned n)
{
	TC_ENTER(FN_fib);
	if (n < 2)
		return n;
	/* The volatile stores after each call stop gcc from turning the
	 * second call into a loop (accumulator tail recursion), which would
	 * count entries that are not calls. */
	unsigned long a = fib(n - 1);
	sink = a;
	unsigned long b = fib(n - 2);
	sink = b;
	return a + b;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	unsigned long depth = 10000;

	tc_init(argc, argv, "recursion", fn_names, FN_COUNT);
	if (argc > 1 && !tc_is_counts_arg(argv[1]))
		depth = strtoul(argv[1], NULL, 10);
	printf("recurse(%lu) = %lu\n", depth, recurse(depth));
	printf("recurse(%lu) = %lu\n", depth / 2, recurse(depth / 2));
	printf("is_even(%lu) = %d\n", depth, is_even((unsigned)depth));
	printf("is_odd(%lu) = %d\n", depth + 1, is_odd((unsigned)depth + 1));
	printf("fib(18) = %lu\n", fib(18));
	return 0;
}
