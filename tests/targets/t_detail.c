/*
 * Test target of the detail lane (issue 8): functions called with known
 * integer arguments, returning known values (one in rax, one pair in
 * rax:rdx), and one called with a known byte pattern on the stack right
 * above its return address. tests/integration/ada_itest.py (`detail`)
 * records it with --detail always and checks every register and byte the
 * detail records hold against what this program did:
 *   dt_add6(i, i+1, ..., i+5) = 6i + 15        for i in [0, DT_ADD_CALLS)
 *   dt_pair(i) = {i * 3, i ^ 0x5a5a}           for i in [0, DT_PAIR_CALLS)
 *   dt_peek(buf) with DT_PATTERN in buf        DT_STACK_CALLS times
 *   dt_tail(i) = dt_leaf(i + 1) = 7(i+1) + 1  for i in [0, DT_TAIL_CALLS):
 *     at -O1 and above dt_tail jumps to dt_leaf (a sibling call), so
 *     dt_leaf starts with dt_tail's return slot: each still gets its own
 *     RETURN record with its own rax and, as lr, the return address into
 *     main that dt_tail's call pushed (issue 13)
 * It prints the counts it made; the harness takes them from there.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DT_ADD_CALLS 100
#define DT_PAIR_CALLS 50
#define DT_STACK_CALLS 10
#define DT_TAIL_CALLS 20
#define DT_PATTERN "ADA-DETAIL-PATTN" /* 16 bytes, no NUL kept */

struct dt_pair_r {
	long a, b;
};

static volatile long dt_sink;

__attribute__((noinline, noclone)) long dt_add6(long a, long b, long c, long d, long e, long f)
{
	__asm__ volatile("" ::: "memory"); /* keep it a real function */
	return a + b + c + d + e + f;
}

__attribute__((noinline, noclone)) struct dt_pair_r dt_pair(long x)
{
	__asm__ volatile("" ::: "memory");
	return (struct dt_pair_r){x * 3, x ^ 0x5a5a};
}

__attribute__((noinline, noclone)) long dt_peek(const volatile char *p)
{
	return p[0] + p[15];
}

__attribute__((noinline, noclone)) long dt_leaf(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 1;
}

__attribute__((noinline, noclone)) long dt_tail(long x)
{
	dt_sink = x;
	return dt_leaf(x + 1);
}

/* The pattern sits in this frame, just above dt_peek's return address:
 * dt_peek's stack snapshot (128 bytes from its rsp) must contain it. */
__attribute__((noinline, noclone)) long dt_stack(void)
{
	volatile char buf[16];
	for (int i = 0; i < 16; i++)
		buf[i] = DT_PATTERN[i];
	return dt_peek(buf);
}

int main(void)
{
	long sum = 0;
	for (long i = 0; i < DT_ADD_CALLS; i++)
		sum += dt_add6(i, i + 1, i + 2, i + 3, i + 4, i + 5);
	for (long i = 0; i < DT_PAIR_CALLS; i++) {
		struct dt_pair_r r = dt_pair(i);
		sum += r.a + r.b;
	}
	for (int i = 0; i < DT_STACK_CALLS; i++)
		sum += dt_stack();
	for (long i = 0; i < DT_TAIL_CALLS; i++)
		sum += dt_tail(i);
	dt_sink = sum;
	printf("add6 %d pair %d stack %d tail %d sum %ld\n", DT_ADD_CALLS, DT_PAIR_CALLS,
	       DT_STACK_CALLS, DT_TAIL_CALLS, sum);
	return 0;
}
