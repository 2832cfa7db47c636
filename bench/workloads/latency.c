/*
 * latency: a steady event rate for a fixed time, for the encode-to-disk
 * latency metrics (PR-004). Usage: latency [SECONDS] [EVENTS_PER_SEC]
 * (defaults 30 and 10000000). Calls bw_lat_tick (2 events per call) in
 * batches of BATCH calls; before each batch it busy-waits on rdtsc until the
 * batch's due time, so the rate stays steady and does not depend on the
 * tracer's speed as long as the tracer keeps up. The TSC frequency is
 * calibrated against CLOCK_MONOTONIC for 50 ms at start. Prints the calls
 * made and, on stderr, the rate achieved and how far behind schedule the
 * worst batch started (a tracer too slow for the rate shows there).
 */
#include "bw_common.h"

volatile uint64_t wl_sink;

#define BATCH 64

BW_FN uint64_t bw_lat_tick(uint64_t x)
{
	return x * 2862933555777941757ull + 3037000493ull;
}

static double lat_tsc_per_ns(void)
{
	uint64_t t0 = wl_now_ns(), c0 = wl_rdtsc();
	while (wl_now_ns() - t0 < 50000000ull)
		;
	uint64_t t1 = wl_now_ns(), c1 = wl_rdtsc();
	return (double)(c1 - c0) / (double)(t1 - t0);
}

int main(int argc, char **argv)
{
	uint64_t seconds = wl_arg(argc, argv, 1, 30);
	uint64_t rate = wl_arg(argc, argv, 2, 10000000);
	if (rate < 2 * BATCH) {
		fprintf(stderr, "latency: EVENTS_PER_SEC must be >= %d\n", 2 * BATCH);
		return 2;
	}
	double tpn = lat_tsc_per_ns();
	uint64_t batches = seconds * rate / (2 * BATCH);
	double ticks_per_batch = tpn * 1e9 * (2.0 * BATCH) / (double)rate;
	uint64_t x = 1, worst_late = 0, t_start = wl_now_ns(), c0 = wl_rdtsc();
	for (uint64_t b = 0; b < batches; b++) {
		uint64_t due = c0 + (uint64_t)(ticks_per_batch * (double)b), now;
		while ((now = wl_rdtsc()) < due)
			__asm__ volatile("pause");
		if (now - due > worst_late)
			worst_late = now - due;
		for (int i = 0; i < BATCH; i++)
			x = bw_lat_tick(x);
	}
	double secs = (double)(wl_now_ns() - t_start) / 1e9;
	wl_sink = x;
	fprintf(stderr, "latency: %.0f events/s achieved over %.2f s, worst batch %.1f us late\n",
	        (double)(batches * 2 * BATCH) / secs, secs, (double)worst_late / tpn / 1e3);
	wl_report("latency", batches * BATCH, x);
	return 0;
}
