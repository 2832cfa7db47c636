/*
 * Shared helpers of the bench workloads in bench/workloads/.
 *
 * Every function a workload counts is named bw_* and is kept out of line
 * (BW_FN: noipa = noinline + noclone + no interprocedural shortcuts), so a
 * tracer that hooks functions sees exactly the calls the workload reports.
 * The runner (bench/bench.py) sums the CALL/RETURN events of bw_* functions
 * in a trace and compares them with the count printed here.
 *
 * Helpers here are named wl_* (never bw_*): gcc may outline parts of them
 * (wl_arg.part.0), and those must not count as workload calls.
 * Each workload ends with wl_report(): one line on stderr
 *   bench: workload=NAME calls=N events=2N result=R elapsed_ns=T cpu_ns=C
 * and the same line in the file named by $BW_COUNT_FILE when it is set.
 * T is the program's own elapsed time (CLOCK_MONOTONIC) from its first
 * constructor to the report: what the tracer's hooks cost it, without
 * the tracer's start-up before main's module runs or its finalize after
 * (bench/bench.py's "hot path" column, net of ada's waits for ring
 * space). C is the process's CPU time over the same span
 * (CLOCK_PROCESS_CPUTIME_ID): T less the time its threads were runnable
 * but not running, which on a 2-core machine is where a tracer's own
 * threads (ada's drain, uftrace's writers) and the kernel's show up.
 */
#ifndef BW_COMMON_H
#define BW_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__clang__)
#define BW_FN __attribute__((noinline, used))
#else
#define BW_FN __attribute__((noipa, used))
#endif

/* A sink the compiler must assume is read: results go here so no work is
 * dead. */
extern volatile uint64_t wl_sink;

static inline uint64_t wl_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t wl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* When the program's own code starts: its executable's constructors run
 * after every shared library's (a preloaded tracer agent's included). */
static inline uint64_t wl_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wl_start_ns, wl_start_cpu_ns;
__attribute__((constructor)) static void wl_start(void)
{
	wl_start_ns = wl_now_ns();
	wl_start_cpu_ns = wl_cpu_ns();
}

static inline void wl_report(const char *name, uint64_t calls, uint64_t result)
{
	unsigned long long elapsed = (unsigned long long)(wl_now_ns() - wl_start_ns);
	unsigned long long cpu = (unsigned long long)(wl_cpu_ns() - wl_start_cpu_ns);
	fprintf(stderr,
	        "bench: workload=%s calls=%llu events=%llu result=%llu elapsed_ns=%llu "
	        "cpu_ns=%llu\n",
	        name, (unsigned long long)calls, (unsigned long long)(2 * calls),
	        (unsigned long long)result, elapsed, cpu);
	const char *path = getenv("BW_COUNT_FILE");
	if (path && *path) {
		FILE *f = fopen(path, "w");
		if (f) {
			fprintf(f,
			        "bench: workload=%s calls=%llu events=%llu result=%llu "
			        "elapsed_ns=%llu cpu_ns=%llu\n",
			        name, (unsigned long long)calls, (unsigned long long)(2 * calls),
			        (unsigned long long)result, elapsed, cpu);
			fclose(f);
		}
	}
}

/* Parses argv[i] as an unsigned number, or returns def when absent. */
static inline uint64_t wl_arg(int argc, char **argv, int i, uint64_t def)
{
	if (argc <= i)
		return def;
	char *end;
	unsigned long long v = strtoull(argv[i], &end, 0);
	if (*end != '\0') {
		fprintf(stderr, "bench: bad number '%s'\n", argv[i]);
		exit(2);
	}
	return v;
}

#endif
