/*
 * Test and bench target for what a firing trigger costs the program
 * (issue 32 item 3): a busy loop of small functions for a given time,
 * which calls mark_point() every `every_ms` milliseconds (a symbol
 * trigger's target: ada record --trigger symbol=mark_point fires a window
 * each time). It prints the work it did and the best and worst rate of
 * its 100 ms slices, so a run with windows and one without compare by the
 * program's own measure:
 *   t_trigrate [seconds=3] [every_ms=100] [spin=0]
 * (spin: rounds of call-free arithmetic per step, to lower the call rate;
 * every_ms 0: no marks, the run to compare with)
 *   -> "trigrate ops=N sec=S rate=R min_slice=M max_slice=X marks=K"
 * Every function is noinline. Output is for a person or bench script,
 * not compared with an untraced run.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINL __attribute__((noinline))
static volatile unsigned long sink;

NOINL static void leaf_a(unsigned long x)
{
	sink += x;
}
NOINL static void leaf_b(unsigned long x)
{
	sink ^= x * 3;
}
NOINL static void step(unsigned long i)
{
	leaf_a(i);
	leaf_b(i);
}
/* The trigger's target; its argument is the mark's number. Its body is
 * its own (gcc's identical code folding would merge it with leaf_a). */
NOINL void mark_point(unsigned long n)
{
	sink = sink * 31 + n;
}

/* Work without calls, `spin` rounds: sets the program's call rate. */
static void trig_spin(unsigned long spin)
{
	for (unsigned long j = 0; j < spin; j++)
		sink = sink * 7 + j;
}

static unsigned long trig_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	double sec = argc > 1 ? atof(argv[1]) : 3.0;
	unsigned long every = (argc > 2 ? strtoul(argv[2], NULL, 10) : 100) * 1000000ul;
	unsigned long spin = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	unsigned long t0 = trig_now_ns(), end = t0 + (unsigned long)(sec * 1e9);
	unsigned long next_mark = t0 + every, slice_start = t0, slice_ops = 0;
	unsigned long ops = 0, marks = 0, min_slice = ~0ul, max_slice = 0, now = t0;
	while (now < end) {
		for (int k = 0; k < 256; k++) {
			step(ops + (unsigned long)k);
			trig_spin(spin);
		}
		ops += 256;
		slice_ops += 256;
		now = trig_now_ns();
		if (every && now >= next_mark) {
			mark_point(++marks);
			next_mark += every;
		}
		if (now - slice_start >= 100000000ul) {
			min_slice = slice_ops < min_slice ? slice_ops : min_slice;
			max_slice = slice_ops > max_slice ? slice_ops : max_slice;
			slice_start = now;
			slice_ops = 0;
		}
	}
	double took = (double)(now - t0) / 1e9;
	printf("trigrate ops=%lu sec=%.3f rate=%.0f min_slice=%lu max_slice=%lu marks=%lu\n", ops,
	       took, (double)ops / took, min_slice, max_slice, marks);
	return 0;
}
