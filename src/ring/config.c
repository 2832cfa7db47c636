/*
 * ada ring: arena configuration -- defaults, validation, the ADA_RING_CONFIG
 * text form, and the geometry (byte layout) derived from a config.
 *
 * Threads: any; pure functions over their arguments, no shared state.
 * Invariant: a config that ada_arena_config_valid() accepts has a geometry
 * whose every part is cache-line aligned and whose total fits in 2^48
 * bytes, so the size arithmetic below cannot overflow.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ring_internal.h"

static bool config_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

ADA_FORK_PATH void ada_arena_config_default(struct ada_arena_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_threads = ADA_ARENA_DEFAULT_MAX_THREADS;
	cfg->overflow = ADA_OVERFLOW_WAIT;
	cfg->index_events = ADA_ARENA_DEFAULT_INDEX_EVENTS;
	cfg->detail_bytes = ADA_ARENA_DEFAULT_DETAIL_BYTES;
	cfg->timestamp_source = ADA_TS_TSC;
	cfg->high_watermark_pct = ADA_ARENA_DEFAULT_HW_PCT;
}

/* No spill slots (both 0), or spill_events a power of two no bigger than
 * the full rings' and ADA_SPILL_MAX_EVENTS, and the slots within
 * ADA_ARENA_SLOTS_LIMIT (max_threads <= 4096 is checked before). */
static int config_spill_valid(const struct ada_arena_config *cfg)
{
	if (cfg->spill_threads == 0)
		return cfg->spill_events == 0 ? 0 : -EINVAL;
	if (cfg->spill_threads > ADA_ARENA_SLOTS_LIMIT - cfg->max_threads)
		return -EINVAL;
	if (!config_pow2(cfg->spill_events) || cfg->spill_events < ADA_RING_MIN_EVENTS ||
	    cfg->spill_events > ADA_SPILL_MAX_EVENTS || cfg->spill_events > cfg->index_events)
		return -EINVAL;
	return 0;
}

ADA_FORK_PATH int ada_arena_config_valid(const struct ada_arena_config *cfg)
{
	if (!cfg || cfg->max_threads == 0 || cfg->max_threads > ADA_ARENA_MAX_THREADS_LIMIT)
		return -EINVAL;
	if (cfg->overflow > ADA_OVERFLOW_DROP || cfg->timestamp_source > ADA_TS_CLOCK ||
	    cfg->detail_wait > 1)
		return -EINVAL;
	if (!config_pow2(cfg->index_events) || cfg->index_events < ADA_RING_MIN_EVENTS ||
	    cfg->index_events > ADA_RING_MAX_EVENTS)
		return -EINVAL;
	if (cfg->detail_bytes != 0 &&
	    (!config_pow2(cfg->detail_bytes) || cfg->detail_bytes < ADA_DETAIL_MIN_BYTES ||
	     cfg->detail_bytes > ADA_DETAIL_MAX_BYTES))
		return -EINVAL;
	if (cfg->keysym_log2 != 0 && (cfg->keysym_log2 < ADA_KEYSYM_AREA_MIN_LOG2 ||
	                              cfg->keysym_log2 > ADA_KEYSYM_AREA_MAX_LOG2))
		return -EINVAL;
	if (config_spill_valid(cfg) != 0)
		return -EINVAL;
	if (cfg->high_watermark_pct == 0 || cfg->high_watermark_pct > 100)
		return -EINVAL;
	return 0;
}

/* Bytes of one slot region: index header and ring, then (when there is
 * one) the detail header and ring; *detail_off is where the detail part
 * starts. */
static uint64_t config_slot_stride(uint64_t events, uint64_t detail_bytes, uint64_t *detail_off)
{
	uint64_t index_bytes = events * sizeof(struct atf_index_event);
	*detail_off = RING_ALIGN(sizeof(struct ada_index_hdr) + index_bytes);
	if (!detail_bytes)
		return *detail_off;
	return RING_ALIGN(*detail_off + sizeof(struct ada_detail_hdr) + detail_bytes);
}

ADA_FORK_PATH int ring_geometry(const struct ada_arena_config *cfg, struct ring_geometry *g)
{
	if (ada_arena_config_valid(cfg) != 0)
		return -EINVAL;
	uint64_t nslots = (uint64_t)cfg->max_threads + cfg->spill_threads;
	g->desc_offset = RING_ALIGN(sizeof(struct ada_arena_control));
	g->slots_offset = RING_ALIGN(g->desc_offset + nslots * sizeof(struct ada_slot_desc));
	/* The control block and the full slots' descriptors are pre-faulted
	 * and locked; the spill slots' descriptors get pages as they are
	 * first touched. */
	g->desc_lock_end =
	    (g->desc_offset + (uint64_t)cfg->max_threads * sizeof(struct ada_slot_desc) + 4095) &
	    ~(uint64_t)4095;
	if (g->desc_lock_end > g->slots_offset)
		g->desc_lock_end = g->slots_offset;
	g->slot_stride =
	    config_slot_stride(cfg->index_events, cfg->detail_bytes, &g->detail_offset);
	g->spill_offset = g->slots_offset + g->slot_stride * cfg->max_threads;
	g->spill_stride = 0;
	g->spill_detail_offset = 0;
	if (cfg->spill_threads)
		g->spill_stride = config_slot_stride(cfg->spill_events, ada_spill_detail_bytes(cfg),
		                                     &g->spill_detail_offset);
	/* At most 4096 x (2^33 + 2^30 + headers) + 2^16 x (2^21 + 2^13 +
	 * headers) + 2^28: well inside 2^48. */
	g->total = g->spill_offset + g->spill_stride * cfg->spill_threads;
	g->keysym_offset = (g->total + 4095) & ~(uint64_t)4095;
	if (cfg->keysym_log2)
		g->total = g->keysym_offset + ((uint64_t)1 << cfg->keysym_log2);
	return 0;
}

uint64_t ada_arena_size_for(const struct ada_arena_config *cfg)
{
	struct ring_geometry g;
	return ring_geometry(cfg, &g) == 0 ? g.total : 0;
}

ADA_FORK_PATH uint64_t ada_arena_budget_size_for(const struct ada_arena_config *cfg)
{
	struct ring_geometry g;
	if (ring_geometry(cfg, &g) != 0)
		return 0;
	/* A spill slot's descriptor is counted with it: the spill
	 * descriptors get pages as claims reach them. */
	return g.total - ring_spill_budget_unit(&g) * cfg->spill_threads;
}

uint64_t ada_ring_capacity_for_rate(uint64_t events_per_sec, uint64_t burst_ms)
{
	/* K = rate x window; computed in 128 bits so a silly rate saturates
	 * at the maximum instead of wrapping to a tiny ring. */
	unsigned __int128 k = (unsigned __int128)events_per_sec * burst_ms;
	k = (k + 999) / 1000;
	if (k >= ADA_RING_MAX_EVENTS)
		return ADA_RING_MAX_EVENTS;
	uint64_t cap = ADA_RING_MIN_EVENTS;
	while (cap < (uint64_t)k)
		cap <<= 1;
	return cap;
}

int ada_arena_config_format(const struct ada_arena_config *cfg, char *buf, size_t cap)
{
	char ks[40] = "", sp[64] = "", dw[32] = "";
	if (cfg->keysym_log2) /* absent when 0: the text of older configs is unchanged */
		snprintf(ks, sizeof(ks), ",keysym_bytes=%llu", 1ull << cfg->keysym_log2);
	if (cfg->spill_threads) /* likewise */
		snprintf(sp, sizeof(sp), ",spill_threads=%u,spill_events=%u", cfg->spill_threads,
		         cfg->spill_events);
	if (cfg->detail_wait) /* likewise */
		snprintf(dw, sizeof(dw), ",detail_overflow=wait");
	int n = snprintf(buf, cap,
	                 "max_threads=%u,index_events=%llu,detail_bytes=%llu,overflow=%s,"
	                 "ts=%s,hw=%u%s%s%s",
	                 cfg->max_threads, (unsigned long long)cfg->index_events,
	                 (unsigned long long)cfg->detail_bytes,
	                 cfg->overflow == ADA_OVERFLOW_DROP ? "drop" : "wait",
	                 cfg->timestamp_source == ADA_TS_CLOCK ? "clock" : "tsc",
	                 cfg->high_watermark_pct, ks, sp, dw);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

/* Decimal digits only (no sign, no spaces), at most 2^63. */
static int config_number(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	if (n == 0 || n > 19)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

static bool config_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

static int config_u32(const char *v, size_t vn, uint32_t *out)
{
	uint64_t x;
	if (config_number(v, vn, &x) != 0 || x > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

/* A power of two given in bytes, kept as its log2 (0 stays 0: none). */
static int config_log2(const char *v, size_t vn, uint32_t *out)
{
	uint64_t x;
	if (config_number(v, vn, &x) != 0 || (x && !config_pow2(x)))
		return -EINVAL;
	*out = x ? (uint32_t)__builtin_ctzll(x) : 0;
	return 0;
}

static int config_enum(const char *v, size_t vn, const char *w0, const char *w1, uint32_t *out)
{
	if (config_is(v, vn, w0))
		*out = 0;
	else if (config_is(v, vn, w1))
		*out = 1;
	else
		return -EINVAL;
	return 0;
}

static int config_pair(struct ada_arena_config *c, const char *k, size_t kn, const char *v,
                       size_t vn)
{
	if (config_is(k, kn, "max_threads"))
		return config_u32(v, vn, &c->max_threads);
	if (config_is(k, kn, "index_events"))
		return config_number(v, vn, &c->index_events);
	if (config_is(k, kn, "detail_bytes"))
		return config_number(v, vn, &c->detail_bytes);
	if (config_is(k, kn, "overflow"))
		return config_enum(v, vn, "wait", "drop", &c->overflow);
	if (config_is(k, kn, "ts"))
		return config_enum(v, vn, "tsc", "clock", &c->timestamp_source);
	if (config_is(k, kn, "hw"))
		return config_u32(v, vn, &c->high_watermark_pct);
	if (config_is(k, kn, "keysym_bytes"))
		return config_log2(v, vn, &c->keysym_log2);
	if (config_is(k, kn, "spill_threads"))
		return config_u32(v, vn, &c->spill_threads);
	if (config_is(k, kn, "spill_events"))
		return config_u32(v, vn, &c->spill_events);
	if (config_is(k, kn, "detail_overflow"))
		return config_enum(v, vn, "overwrite", "wait", &c->detail_wait);
	return -EINVAL;
}

ADA_FORK_PATH int ada_arena_config_parse(const char *buf, size_t len, struct ada_arena_config *cfg)
{
	struct ada_arena_config c;
	ada_arena_config_default(&c);
	size_t i = 0;
	while (i < len) {
		const char *item = buf + i;
		const char *comma = memchr(item, ',', len - i);
		size_t n = comma ? (size_t)(comma - item) : len - i;
		const char *eq = memchr(item, '=', n);
		if (!eq)
			return -EINVAL;
		size_t kn = (size_t)(eq - item);
		if (config_pair(&c, item, kn, eq + 1, n - kn - 1) != 0)
			return -EINVAL;
		i += n + (comma ? 1 : 0);
	}
	if (ada_arena_config_valid(&c) != 0)
		return -EINVAL;
	*cfg = c;
	return 0;
}
