/*
 * fib: recursive Fibonacci, the smallest possible traced function. Almost
 * all of the run is calls and returns of bw_fib, so the time a tracer adds
 * per event shows directly. Usage: fib [N] (default 32).
 * The number of calls of bw_fib(n) is C(n) = 1 for n < 2, else
 * 1 + C(n-1) + C(n-2); main computes it with a loop (untraced work).
 * Built with -fno-optimize-sibling-calls so gcc's accumulator
 * transformation cannot turn one of the two recursive calls into a loop.
 */
#include "bw_common.h"

volatile uint64_t wl_sink;

BW_FN uint64_t bw_fib(uint32_t n)
{
	if (n < 2)
		return n;
	return bw_fib(n - 1) + bw_fib(n - 2);
}

static uint64_t fib_calls(uint32_t n)
{
	uint64_t a = 1, b = 1; /* C(0), C(1) */
	for (uint32_t i = 2; i <= n; i++) {
		uint64_t c = 1 + a + b;
		a = b;
		b = c;
	}
	return n == 0 ? a : b;
}

int main(int argc, char **argv)
{
	uint32_t n = (uint32_t)wl_arg(argc, argv, 1, 32);
	if (n > 45) {
		fprintf(stderr, "fib: N must be <= 45\n");
		return 2;
	}
	uint64_t r = bw_fib(n);
	wl_sink = r;
	wl_report("fib", fib_calls(n), r);
	printf("%llu\n", (unsigned long long)r);
	return 0;
}
