/*
 * Test target linked with -static: LD_PRELOAD cannot reach it, so
 * `ada record` must refuse it with one clear sentence (bad-input test).
 */
#include <stdio.h>

int main(void)
{
	puts("static binary ran");
	return 0;
}
