/*
 * mixed: ~200 distinct small functions costing 20..2000 cycles each (the
 * tracer spec's cycles-per-call model, section 6.1), called in rounds from
 * one thread. Usage: mixed [ROUNDS] (default 10000).
 */
#include "bw_common.h"
#include "bw_mixed.h"

volatile uint64_t wl_sink;

int main(int argc, char **argv)
{
	uint64_t rounds = wl_arg(argc, argv, 1, 10000);
	uint64_t x = 1;
	for (uint64_t r = 0; r < rounds; r++)
		x = bw_mix_round(x + r);
	wl_sink = x;
	wl_report("mixed", rounds * bw_mix_calls_per_round, x);
	return 0;
}
