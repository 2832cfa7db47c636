/*
 * The segment writer's small parsers and counters: the --flush policy
 * text and the encode-to-disk latency histogram (wal.h).
 *
 * Threads: any (pure functions on the caller's data).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wal_internal.h"

static int flush_number(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	uint64_t mul = 1;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30;
	if (mul != 1)
		end++;
	if (*end || v == 0)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int ada_flush_parse(const char *s, struct ada_flush_policy *out)
{
	uint32_t safe = out->safe;
	memset(out, 0, sizeof(*out));
	out->safe = safe;
	if (!strcmp(s, "off")) {
		out->mode = ADA_FLUSH_OFF;
		return 0;
	}
	if (!strcmp(s, "rotate")) {
		out->mode = ADA_FLUSH_ROTATE;
		return 0;
	}
	if (!strncmp(s, "interval:", 9)) {
		out->mode = ADA_FLUSH_INTERVAL;
		return flush_number(s + 9, &out->value);
	}
	if (!strncmp(s, "bytes:", 6)) {
		out->mode = ADA_FLUSH_BYTES;
		return flush_number(s + 6, &out->value);
	}
	return -EINVAL;
}

static uint32_t lat_bucket(uint64_t ns)
{
	if (ns < 8)
		return (uint32_t)ns;
	uint32_t lg = 63u - (uint32_t)__builtin_clzll(ns);
	uint32_t sub = (uint32_t)(ns >> (lg - 3)) & 7u;
	uint32_t b = (lg - 2) * 8 + sub;
	return b < ADA_LAT_BUCKETS ? b : ADA_LAT_BUCKETS - 1;
}

static uint64_t lat_bucket_top(uint32_t b)
{
	if (b < 8)
		return b;
	uint32_t lg = b / 8 + 2, sub = b % 8;
	return ((8ull + sub + 1) << (lg - 3)) - 1;
}

void ada_lat_hist_add(struct ada_lat_hist *h, uint64_t ns)
{
	h->buckets[lat_bucket(ns)]++;
	h->count++;
}

uint64_t ada_lat_hist_quantile(const struct ada_lat_hist *h, double q)
{
	if (h->count == 0)
		return 0;
	uint64_t want = (uint64_t)(q * (double)h->count);
	if (want >= h->count)
		want = h->count - 1;
	uint64_t seen = 0;
	for (uint32_t b = 0; b < ADA_LAT_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen > want)
			return lat_bucket_top(b);
	}
	return lat_bucket_top(ADA_LAT_BUCKETS - 1);
}
