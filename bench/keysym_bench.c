/*
 * bench/keysym_bench: the cost of one key-symbol membership test
 * (ada_keysym_test + ada_keysym_lookup_at, src/keysym/keysym.h) per
 * container (bitset, CRoaring, hash) at 1 K, 100 K and 10 M member ids,
 * cache-hot (256 ids asked over and over) and cache-cold (the blob's lines
 * flushed with clflush before each timed test). Half the ids asked are
 * members. Not a test; run by hand on a quiet machine:
 *   build/bench/keysym_bench [--quick]
 * Prints one row per (container, members): the container the builder
 * really used (a hash set that cannot keep its probe bound falls back to a
 * bitset), blob bytes, ns per test hot and cold.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "keysym.h"
#include "keysym_internal.h"

static uint64_t rng_s = 0x2545f4914f6cdd1dull;
static uint64_t rng(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return rng_s;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* TSC ticks per ns, against CLOCK_MONOTONIC over ~50 ms. */
static double tsc_per_ns(void)
{
	double t0 = now_ns();
	uint64_t c0 = __rdtsc();
	while (now_ns() - t0 < 5e7)
		;
	return (double)(__rdtsc() - c0) / (now_ns() - t0);
}

static volatile int sink;

static bool ks_has(const uint8_t *b, uint64_t mask, uint64_t id)
{
	int r = ada_keysym_test(b, mask, 0, id);
	return r == ADA_KEYSYM_ASK ? ada_keysym_lookup_at(b, mask, 0, id) == 1 : r;
}

/* Members: n ids of module 1 among `range` (runs of 8 for CRoaring,
 * scattered otherwise); ask[]: half members, half not. */
static uint8_t *build(uint32_t kind, uint32_t n, uint32_t range, uint64_t *ask, size_t nask,
                      size_t *len, uint32_t *used)
{
	struct ada_keysym_builder *b;
	ada_keysym_builder_new(&b);
	ks_builder_force(b, kind);
	ada_keysym_builder_module(b, 1, range);
	uint32_t *ids = malloc(sizeof(*ids) * n);
	for (uint32_t i = 0; i < n; i++)
		ids[i] = kind == ADA_KEYSYM_ROARING ? (uint32_t)((i / 8) * 16 + i % 8) % range
		                                    : (uint32_t)(rng() % range);
	ada_keysym_builder_add(b, 1, ids, n);
	*len = ada_keysym_builder_size(b);
	uint64_t mask = ada_keysym_mask_for(*len);
	uint8_t *blob = aligned_alloc(64, mask + 1);
	memset(blob, 0, mask + 1);
	struct ada_keysym_info info;
	ada_keysym_builder_write(b, 1, blob, *len, &info);
	*used = info.n_mods ? info.mods[0].kind : 0;
	ada_keysym_info_fini(&info);
	for (size_t i = 0; i < nask; i++)
		ask[i] = 1ull << 32 | (i % 2 ? ids[rng() % n] : (uint32_t)(rng() % range));
	free(ids);
	ada_keysym_builder_free(b);
	return blob;
}

static double hot_ns(const uint8_t *blob, uint64_t mask, const uint64_t *ask, long rounds)
{
	int acc = 0;
	double t0 = now_ns();
	for (long r = 0; r < rounds; r++)
		for (size_t i = 0; i < 256; i++)
			acc += ks_has(blob, mask, ask[i]);
	sink = acc;
	return (now_ns() - t0) / ((double)rounds * 256);
}

static double cold_ns(const uint8_t *blob, size_t len, uint64_t mask, const uint64_t *ask, long n,
                      double tpn)
{
	uint64_t ticks = 0;
	unsigned aux;
	int acc = 0;
	for (long k = 0; k < n; k++) {
		for (size_t o = 0; o < len && o < (1u << 20); o += 64) /* first MiB at most */
			_mm_clflush(blob + o);
		_mm_mfence();
		uint64_t t0 = __rdtscp(&aux);
		acc += ks_has(blob, mask, ask[k % 4096]);
		ticks += __rdtscp(&aux) - t0;
	}
	sink = acc;
	return (double)ticks / tpn / (double)n;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	/* A row as soon as it is measured: bench/micro.py stops this at its
	 * timeout, and the rows done by then are still results. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	static const uint32_t kinds[] = {ADA_KEYSYM_BITSET, ADA_KEYSYM_ROARING, ADA_KEYSYM_HASH};
	static const uint32_t sizes[] = {1000, 100000, 10000000};
	double tpn = tsc_per_ns();
	uint64_t *ask = malloc(4096 * sizeof(*ask));
	printf("%-8s %9s %-8s %12s %8s %8s\n", "asked", "members", "used", "bytes", "hot_ns",
	       "cold_ns");
	for (size_t k = 0; k < 3; k++)
		for (size_t s = 0; s < 3; s++) {
			if (quick && sizes[s] > 100000)
				continue;
			uint32_t n = sizes[s], range = ADA_KEYSYM_MAX_INDEX, used;
			if (kinds[k] == ADA_KEYSYM_BITSET)
				range = n * 4 < range ? n * 4 : range;
			size_t len;
			uint8_t *blob = build(kinds[k], n, range, ask, 4096, &len, &used);
			uint64_t mask = ada_keysym_mask_for(len);
			double h = hot_ns(blob, mask, ask, quick ? 2000 : 200000);
			/* 20 000 samples: each flushes up to 1 MiB of lines first
			 * (16 384 clflush), which took 100 000 samples of the 10 M
			 * containers past micro.py's time limit (docs/benchmarks.md,
			 * "Key-symbol sets"). */
			double c = cold_ns(blob, len, mask, ask, quick ? 2000 : 20000, tpn);
			printf("%-8s %9u %-8s %12zu %8.2f %8.2f\n", ada_keysym_kind_name(kinds[k]),
			       n, ada_keysym_kind_name(used), len, h, c);
			free(blob);
		}
	free(ask);
	return 0;
}
