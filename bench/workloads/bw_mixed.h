/* The generated mixed call graph (mixed_gen.c, from gen_workloads.py). */
#ifndef BW_MIXED_H
#define BW_MIXED_H
#include <stdint.h>

extern const uint64_t bw_mix_calls_per_round; /* bw_* calls per round, round included */
uint64_t bw_mix_round(uint64_t x);

#endif
