/*
 * The windows' live persist yields to the program when the CPU is
 * contended (docs/internals.md, "Persisting a window"; issue 32 item 3).
 *
 * A window over a busy program persists every call and return it made,
 * hundreds of thousands of records a second: the drain's CPU for them
 * is what the program loses when the cores are all taken (on a machine
 * with a core to spare the drain runs beside the program and costs it
 * nothing). The program and the drain are one scheduling group (one
 * session, one autogroup), so each ns the persist takes is a ns the
 * program does not get. So every interval the drain reads its own
 * schedstat (/proc/thread-self/schedstat: ns on a CPU, ns waiting for
 * one): a drain that hardly waited for a CPU found one free and the
 * persist is not held back; one that waited says the CPU is contended,
 * and the next interval's persist may take at most --persist-share
 * percent (a tenth by default) of what an always-runnable thread got
 * (the drain's share of its runnable time; 100: never held back).
 * The records the persist did not reach meanwhile stay in their ring,
 * persisted later or overwritten (window_lost, counted as always); the
 * passes held back are counted (manifest: flight_recorder.counts).
 *
 * Threads: the drain thread only (the file is its own thread's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recorder_internal.h"

/* An interval: the drain's schedstat is read this often while windows
 * are persisted. */
#define YIELD_INTERVAL_NS 100000000ull
/* Contended: the drain waited for a CPU more than 1/YIELD_WAIT_DIV of
 * the interval. */
#define YIELD_WAIT_DIV 20u
uint64_t wal_flight_yield_allow(uint64_t wall_ns, uint64_t run_ns, uint64_t delay_ns,
                                uint32_t share_pct)
{
	if (wall_ns == 0 || delay_ns <= wall_ns / YIELD_WAIT_DIV || share_pct >= 100)
		return UINT64_MAX;
	/* run + delay > 0 here; the share run / (run + delay) of wall, in
	 * doubles: the product can pass 2^64 ns^2. */
	double got = (double)wall_ns * (double)run_ns / ((double)run_ns + (double)delay_ns);
	return (uint64_t)(got * share_pct / 100.0);
}

void wal_flight_yield_init(struct wal_flight_yield *y, uint32_t share_pct)
{
	memset(y, 0, sizeof(*y));
	y->allow_ns = UINT64_MAX;
	y->share_pct = share_pct ? share_pct : ADA_PERSIST_SHARE_DEFAULT;
	const char *t = getenv("ADA_TEST_FLIGHT_CONTENDED");
	y->forced = t && *t == '1';
}

void wal_flight_yield_fini(struct wal_flight_yield *y)
{
	if (y->fd_state == 1)
		close(y->fd);
	y->fd_state = 0;
}

/* The drain's ns on a CPU and waiting for one; false when the kernel
 * does not say (no schedstat: the persist is never held back). */
static bool yield_read(struct wal_flight_yield *y, uint64_t *run, uint64_t *delay)
{
	if (y->fd_state == 0) {
		/* Opened by the drain thread: thread-self is the drain. */
		y->fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
		y->fd_state = y->fd >= 0 ? 1 : 2;
	}
	if (y->fd_state != 1)
		return false;
	char buf[96];
	ssize_t n = pread(y->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = 0;
	unsigned long long a, b;
	if (sscanf(buf, "%llu %llu", &a, &b) != 2)
		return false;
	*run = a;
	*delay = b;
	return true;
}

uint64_t wal_flight_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t wal_flight_yield_room(struct wal_flight_yield *y, uint64_t now_ns)
{
	if (y->forced) { /* test hook: every interval contended, nothing allowed */
		y->allow_ns = y->share_pct >= 100 ? UINT64_MAX : 0;
		if (now_ns - y->at_ns >= YIELD_INTERVAL_NS) {
			y->at_ns = now_ns;
			y->used_ns = 0;
			y->contended++;
		}
		return y->allow_ns;
	}
	if (now_ns - y->at_ns >= YIELD_INTERVAL_NS) {
		uint64_t run = 0, delay = 0;
		bool ok = yield_read(y, &run, &delay);
		bool prev = y->at_ns != 0 && y->have;
		y->allow_ns = ok && prev && run >= y->run_ns && delay >= y->delay_ns
		                  ? wal_flight_yield_allow(now_ns - y->at_ns, run - y->run_ns,
		                                           delay - y->delay_ns, y->share_pct)
		                  : UINT64_MAX;
		y->contended +=
		    ok && prev && y->delay_ns + (now_ns - y->at_ns) / YIELD_WAIT_DIV < delay;
		y->have = ok;
		y->run_ns = run;
		y->delay_ns = delay;
		y->at_ns = now_ns;
		y->used_ns = 0;
	}
	if (y->allow_ns == UINT64_MAX)
		return UINT64_MAX;
	return y->used_ns < y->allow_ns ? y->allow_ns - y->used_ns : 0;
}

void wal_flight_yield_begin(struct wal_flight_yield *y)
{
	y->cpu_at = wal_flight_cpu_ns();
}

void wal_flight_yield_end(struct wal_flight_yield *y)
{
	uint64_t now = wal_flight_cpu_ns();
	uint64_t d = now > y->cpu_at ? now - y->cpu_at : 0;
	y->used_ns += d;
	y->cpu_ns += d;
}
