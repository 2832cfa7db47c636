/*
 * Log-linear duration histograms (analyze.h): values below 32 are counted
 * exactly; above, each power of two is split into 32 equal buckets, so a
 * bucket's midpoint is within 1/64 of any value in it. Octaves are
 * allocated when first hit: a function whose calls take between 100 ns and
 * 10 ms costs 17 octaves of 256 bytes, however many calls it has. Adding a
 * value is inline in analyze.h (ada_hist_add()).
 * Threads: CLI only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"

#define HIST_SUB 32u
#define HIST_SUB_BITS 5u

/* The midpoint of a bucket. */
static uint64_t hist_value(unsigned oct, unsigned sub)
{
	if (oct == 0)
		return sub;
	unsigned shift = oct - 1;
	uint64_t lo = (uint64_t)(HIST_SUB + sub) << shift;
	return lo + (((uint64_t)1 << shift) >> 1);
}

void ada_hist_init(struct ada_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void ada_hist_fini(struct ada_hist *h)
{
	for (unsigned i = 0; i < 64; i++)
		free(h->octave[i]);
	ada_hist_init(h);
}

static int hist_bump(struct ada_hist *h, unsigned oct, unsigned sub, uint64_t n)
{
	if (!h->octave[oct]) {
		h->octave[oct] = calloc(HIST_SUB, sizeof(uint64_t));
		if (!h->octave[oct])
			return -ENOMEM;
	}
	h->octave[oct][sub] += n;
	return 0;
}

int ada_hist_add_new(struct ada_hist *h, unsigned oct, unsigned sub)
{
	return hist_bump(h, oct, sub, 1);
}

uint64_t ada_hist_quantile(const struct ada_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->count + 0.999999);
	rank = rank ? rank : 1;
	for (unsigned o = 0; o < 64; o++) {
		if (!h->octave[o])
			continue;
		for (unsigned s = 0; s < HIST_SUB; s++) {
			seen += h->octave[o][s];
			if (seen >= rank) {
				uint64_t v = hist_value(o, s);
				return v < h->min ? h->min : v > h->max ? h->max : v;
			}
		}
	}
	return h->max; /* an octave failed to allocate: the tail is unknown */
}

int ada_hist_merge(struct ada_hist *a, const struct ada_hist *b)
{
	int err = 0;

	a->count += b->count;
	if (b->min < a->min)
		a->min = b->min;
	if (b->max > a->max)
		a->max = b->max;
	for (unsigned o = 0; o < 64; o++)
		for (unsigned s = 0; b->octave[o] && s < HIST_SUB; s++)
			if (b->octave[o][s] && hist_bump(a, o, s, b->octave[o][s]))
				err = -ENOMEM;
	return err;
}
