/* Declarations of test_hook_ctargets.c for one optimisation level. */
#ifndef TEST_HOOK_CTARGETS_H
#define TEST_HOOK_CTARGETS_H

#ifndef HT_SUFFIX
#error "define HT_SUFFIX (O0 or O2)"
#endif
#define HT_CAT2(a, b) a##_##b
#define HT_CAT(a, b) HT_CAT2(a, b)
#define HT(name) HT_CAT(name, HT_SUFFIX)

struct ht_dd {
	double a, b;
};

struct ht_big {
	long v[5];
};

int HT(add3)(int a, int b, int c);
int HT(get_counter)(void);
double HT(fmix8)(double a, double b, double c, double d, double e, double f, double g, double h);
float HT(fmixi)(int i, float x, long j, float y);
long double HT(ldmul)(long double a, long double b);
struct ht_dd HT(dd)(double x);
double HT(vsum)(int n, ...);
struct ht_big HT(make_big)(long x);
long HT(fib)(long n);
long HT(seven)(long a, long b, long c, long d, long e, long f, long g);
int HT(sw)(int x, int y);

#endif
