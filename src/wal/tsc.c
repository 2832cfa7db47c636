/*
 * TSC -> CLOCK_BOOTTIME conversion for the drain (and `ada recover`).
 *
 * Threads: the drain thread only (the clock is plain data, not shared).
 *
 * Producers stamp events with the raw TSC; the drain turns that into
 * CLOCK_BOOTTIME nanoseconds with a piecewise-linear map:
 *   - calibration: the first (tsc, ns) sample is the base; once a later
 *     sample is >= ADA_TSC_CALIB_MIN_NS away, the first piece is the line
 *     through the two samples (mult/shift fixed point, shift 32, a 128-bit
 *     product so no range is lost);
 *   - re-anchoring: each later sample adds a piece that starts where the
 *     current piece is at that TSC (continuity, so time never goes back)
 *     and whose slope is the long-baseline frequency corrected so that the
 *     error against the clock disappears over ADA_TSC_SLEW_NS. The
 *     correction is bounded to +-50 %, so the slope is always positive.
 * Invariants: maps[] sorted by tsc0; each piece is continuous with the one
 * before; mult > 0. Events older than the oldest kept piece use it
 * extrapolated backwards (the drain also clamps per thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "wal.h"

#define TSC_SHIFT 32

static uint64_t tsc_slope(uint64_t dns, uint64_t dtsc)
{
	if (dtsc == 0)
		return 1;
	unsigned __int128 m = ((unsigned __int128)dns << TSC_SHIFT) / dtsc;
	if (m == 0)
		m = 1;
	if (m > UINT64_MAX)
		m = UINT64_MAX;
	return (uint64_t)m;
}

void ada_tsc_clock_init(struct ada_tsc_clock *c, uint64_t tsc, uint64_t ns)
{
	memset(c, 0, sizeof(*c));
	c->base_tsc = tsc;
	c->base_ns = ns;
	c->last_tsc = tsc;
}

void ada_tsc_clock_set(struct ada_tsc_clock *c, const struct ada_tsc_map *m)
{
	c->maps[0] = *m;
	c->n = 1;
	c->ready = 1;
	c->base_tsc = m->tsc0;
	c->base_ns = m->ns0;
	c->last_tsc = m->tsc0;
}

static void tsc_push(struct ada_tsc_clock *c, const struct ada_tsc_map *m)
{
	if (c->n == ADA_TSC_HISTORY) {
		memmove(&c->maps[0], &c->maps[1], sizeof(c->maps[0]) * (ADA_TSC_HISTORY - 1));
		c->n--;
	}
	c->maps[c->n++] = *m;
}

/* A new piece from tsc on, continuous with the current one, slewing the
 * error (ns - predicted) away over ADA_TSC_SLEW_NS. */
static void tsc_reanchor(struct ada_tsc_clock *c, uint64_t tsc, uint64_t ns)
{
	const struct ada_tsc_map *cur = &c->maps[c->n - 1];
	uint64_t pred = ada_tsc_map_apply(cur, tsc);
	uint64_t slope = tsc_slope(ns - c->base_ns, tsc - c->base_tsc);
	int64_t err = (int64_t)(ns - pred);
	const int64_t lim = (int64_t)ADA_TSC_SLEW_NS / 2;
	if (err > lim)
		err = lim;
	if (err < -lim)
		err = -lim;
	unsigned __int128 m = (unsigned __int128)slope * (uint64_t)((int64_t)ADA_TSC_SLEW_NS + err);
	m /= ADA_TSC_SLEW_NS;
	struct ada_tsc_map piece = {
	    .tsc0 = tsc,
	    .ns0 = pred,
	    .mult = m ? (uint64_t)m : 1,
	    .shift = TSC_SHIFT,
	};
	tsc_push(c, &piece);
}

bool ada_tsc_clock_sample(struct ada_tsc_clock *c, uint64_t tsc, uint64_t ns)
{
	if (tsc <= c->last_tsc || ns <= c->base_ns)
		return false;
	if (!c->ready) {
		if (ns - c->base_ns < ADA_TSC_CALIB_MIN_NS)
			return false;
		struct ada_tsc_map first = {
		    .tsc0 = c->base_tsc,
		    .ns0 = c->base_ns,
		    .mult = tsc_slope(ns - c->base_ns, tsc - c->base_tsc),
		    .shift = TSC_SHIFT,
		};
		tsc_push(c, &first);
		c->ready = 1;
		c->last_tsc = tsc;
		return true;
	}
	tsc_reanchor(c, tsc, ns);
	c->last_tsc = tsc;
	return true;
}

/* Finds whole word w on a "flags" line of /proc/cpuinfo text. */
static bool tsc_has_flag(const char *line, size_t len, const char *w)
{
	size_t wl = strlen(w);
	for (size_t i = 0; i + wl <= len; i++) {
		if (memcmp(line + i, w, wl))
			continue;
		bool left = i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t';
		bool right = i + wl == len || line[i + wl] == ' ' || line[i + wl] == '\n';
		if (left && right)
			return true;
	}
	return false;
}

int ada_tsc_invariant_from_cpuinfo(const char *buf, size_t len)
{
	size_t pos = 0;
	int seen = 0, ok = 1;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		const char *line = buf + pos;
		if (ll >= 5 && !memcmp(line, "flags", 5)) {
			seen = 1;
			if (!tsc_has_flag(line, ll, "constant_tsc") ||
			    !tsc_has_flag(line, ll, "nonstop_tsc"))
				ok = 0;
		}
		pos += ll + 1;
	}
	return seen ? ok : -EINVAL;
}

bool ada_tsc_invariant(void)
{
#if defined(__x86_64__)
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	int r = buf ? ada_tsc_invariant_from_cpuinfo(buf, len) : -ENOMEM;
	free(buf);
	return r == 1;
#else
	return false; /* arm64: the generic timer would do; not wired up yet */
#endif
}

uint64_t ada_tsc_read(void)
{
	return ada_tsc(); /* the producers' own counter read (ring.h) */
}

/* A preemption between the two reads would put the pair off by however
 * long the drain was away; reading the TSC on both sides of the clock and
 * keeping the tightest of a few brackets bounds that error by the bracket. */
void ada_tsc_sample_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = ada_tsc_read(), n = ada_boottime_ns(), t1 = ada_tsc_read();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

uint64_t ada_boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
