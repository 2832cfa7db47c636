/*
 * Test target: float and double arguments and return values, to check
 * that the detail lane's --detail-fp records hold them (issue 33 item 5).
 * Each function runs once, with known values read from volatile globals
 * (so no call site's constants reach the callee):
 *   fp_scale(1.5, -2.25, 4)     returns -13.5     (xmm0, xmm1; rdi)
 *   fp_eight(1.0 .. 8.0)        returns 36.0      (xmm0..xmm7)
 *   fp_half(3.0f)               returns 1.5f      (a float: xmm0's low 32 bits)
 */
#include <stdio.h>

#include "tcount.h"

#define FUNCS(X) X(main) X(fp_scale) X(fp_eight) X(fp_half)
enum { FUNCS(TC_ENUM) FN_COUNT };
static const char *const fn_names[] = {FUNCS(TC_NAME)};

static volatile double in_a = 1.5, in_b = -2.25;
static volatile double in8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static volatile float in_f = 3.0f;
static volatile int in_n = 4;
static volatile double sink;

TC_FN double fp_scale(double x, double y, int n)
{
	TC_ENTER(FN_fp_scale);
	return x * y * n;
}

TC_FN double fp_eight(double a, double b, double c, double d, double e, double f, double g,
                      double h)
{
	TC_ENTER(FN_fp_eight);
	return a + b + c + d + e + f + g + h;
}

TC_FN float fp_half(float x)
{
	TC_ENTER(FN_fp_half);
	return x / 2;
}

int main(int argc, char **argv)
{
	TC_ENTER(FN_main);
	tc_init(argc, argv, "fparg", fn_names, FN_COUNT);
	sink = fp_scale(in_a, in_b, in_n);
	sink = fp_eight(in8[0], in8[1], in8[2], in8[3], in8[4], in8[5], in8[6], in8[7]);
	sink = fp_half(in_f);
	printf("%g\n", sink);
	return 0;
}
