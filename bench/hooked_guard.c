/*
 * hooked_guard: the program bench/callgrind_guard.sh (mode hooked) records
 * with `ada record` under valgrind --tool=callgrind. Two phases, fib(N1)
 * then fib(N2), each bracketed by callgrind client requests (zero the
 * counters, run, dump), so each dump holds exactly the instructions of one
 * phase: bw_fib's own work plus, when hooked, the trampolines, the agent's
 * enter/exit handlers and the ring producer. Hook installation (before
 * main) and finalize (after) are in neither dump. Natively the requests are
 * a few no-op instructions. Usage: hooked_guard N1 N2.
 * Prints `calls1=C1 calls2=C2` (bw_fib calls per phase) on stdout.
 * With HG_GO_FILE=PATH in the environment it first waits (up to
 * HG_GO_WAIT_S seconds, default 600) until PATH exists: the guard creates
 * it once the key-symbol set in force covers this program's module, so
 * both phases run against the same set (bench/callgrind_baseline_detail_excluded.txt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#endif

volatile uint64_t hg_sink;

__attribute__((noipa)) uint64_t bw_fib(uint32_t n)
{
	if (n < 2)
		return n;
	return bw_fib(n - 1) + bw_fib(n - 2);
}

static uint64_t hg_calls(uint32_t n)
{
	uint64_t a = 1, b = 1;
	for (uint32_t i = 2; i <= n; i++) {
		uint64_t c = 1 + a + b;
		a = b;
		b = c;
	}
	return n == 0 ? a : b;
}

/* Waits for the guard's go file (see the top); 0 once it exists. */
static int hg_wait_go(void)
{
	const char *go = getenv("HG_GO_FILE"), *w = getenv("HG_GO_WAIT_S");
	if (!go)
		return 0;
	long polls = (w ? atol(w) : 600) * 100;
	struct timespec ten_ms = {0, 10000000};
	for (long i = 0; i < polls; i++) {
		if (access(go, F_OK) == 0)
			return 0;
		nanosleep(&ten_ms, NULL);
	}
	fprintf(stderr, "hooked_guard: %s did not appear\n", go);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	if (hg_wait_go())
		return 3;
	uint32_t n1 = (uint32_t)atoi(argv[1]), n2 = (uint32_t)atoi(argv[2]);
	CALLGRIND_ZERO_STATS;
	hg_sink = bw_fib(n1);
	CALLGRIND_DUMP_STATS_AT("phase1");
	CALLGRIND_ZERO_STATS;
	hg_sink = bw_fib(n2);
	CALLGRIND_DUMP_STATS_AT("phase2");
	printf("calls1=%llu calls2=%llu\n", (unsigned long long)hg_calls(n1),
	       (unsigned long long)hg_calls(n2));
	return 0;
}
