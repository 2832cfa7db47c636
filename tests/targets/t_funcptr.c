/*
 * Test target: calls through function pointers — a dispatch table, a
 * pointer passed down and called back, and libc's qsort() calling our
 * comparator (traced code called from traced libc code), and an atexit()
 * handler that runs traced code after main() returned. Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tcount.h"

#define FUNCS(X)                                                                                   \
	X(main) X(op_add) X(op_sub) X(op_mul) X(apply) X(cmp_int) X(run_table) X(at_exit_work)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

typedef long (*op_fn)(long, long);

TC_FN static long op_add(long a, long b)
{
	TC_ENTER(FN_op_add);
	return a + b;
}

TC_FN static long op_sub(long a, long b)
{
	TC_ENTER(FN_op_sub);
	return a - b;
}

TC_FN static long op_mul(long a, long b)
{
	TC_ENTER(FN_op_mul);
	return a * b % 1000003;
}

TC_FN static long apply(op_fn f, long a, long b)
{
	TC_ENTER(FN_apply);
	return f(a, b) + 1;
}

TC_FN static int cmp_int(const void *a, const void *b)
{
	TC_ENTER(FN_cmp_int);
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* volatile: the compiler must not resolve the indirect calls statically. */
static op_fn volatile table[3] = {op_add, op_sub, op_mul};

TC_FN static long run_table(int rounds)
{
	TC_ENTER(FN_run_table);
	long acc = 1;
	for (int i = 0; i < rounds; i++) {
		acc = table[i % 3](acc, i + 2);
		acc = apply(table[(i + 1) % 3], acc, 3);
	}
	return acc;
}

/* Registered after tc_init(), so it runs before the table is written. */
TC_FN static void at_exit_work(void)
{
	TC_ENTER(FN_at_exit_work);
	long acc = 0;
	for (int i = 0; i < 3; i++)
		acc += apply(op_add, i, i);
	printf("at exit: %ld\n", acc);
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	int v[200];

	tc_init(argc, argv, "funcptr", fn_names, FN_COUNT);
	atexit(at_exit_work);
	printf("table: %ld\n", run_table(1000));
	for (int i = 0; i < 200; i++)
		v[i] = (i * 7919) % 211;
	qsort(v, 200, sizeof(v[0]), cmp_int);
	printf("sorted: %d %d %d\n", v[0], v[100], v[199]);
	return 0;
}
