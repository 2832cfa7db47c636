/*
 * Test target: six leaves called a known number of times each, hot_a
 * 2^25 times, hot_b half that, ... hot_f 2^20, in one loop on the main
 * thread (tests/integration/exclude_hint_test.sh: with all of them
 * count-only under --overhead-budget 10, their counts cost far more than
 * the budget and the manifest names the hottest to exclude, in order).
 * Prints the sum. Single role: no threads, no state besides the sink.
 * With a path argument it then says "parked PID" on stdout and waits (30 s at
 * most) until that file exists, calling nothing traced meanwhile
 * (tests/integration/live_counts_test.sh: `ada status` must show the
 * exact counts of the thread still running).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* Bodies that differ, so that no two leaves are folded into one. */
#define LEAF(n, m)                                                                                 \
	__attribute__((noinline)) static void n(unsigned long x)                                   \
	{                                                                                          \
		sink += x * m;                                                                     \
	}
LEAF(hot_a, 3)
LEAF(hot_b, 5)
LEAF(hot_c, 7)
LEAF(hot_d, 11)
LEAF(hot_e, 13)
LEAF(hot_f, 17)

int main(int argc, char **argv)
{
	for (unsigned long k = 0; k < (1ul << 25); k++) {
		hot_a(k);
		if (!(k & 1))
			hot_b(k);
		if (!(k & 3))
			hot_c(k);
		if (!(k & 7))
			hot_d(k);
		if (!(k & 15))
			hot_e(k);
		if (!(k & 31))
			hot_f(k);
	}
	if (argc > 1) {
		printf("parked %d\n", (int)getpid());
		fflush(stdout);
		struct timespec ts = {0, 10000000};
		for (int i = 0; i < 3000 && access(argv[1], F_OK) != 0; i++)
			nanosleep(&ts, NULL);
	}
	printf("%lu\n", sink);
	return 0;
}
