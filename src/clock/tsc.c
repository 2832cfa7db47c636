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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fs.h"

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
	/* A seeded clock's first samples can be close to its base: the
	 * long-baseline slope is trusted from ADA_TSC_CALIB_MIN_NS on, the
	 * seed's until then. */
	uint64_t slope = ns - c->base_ns >= ADA_TSC_CALIB_MIN_NS
	                     ? tsc_slope(ns - c->base_ns, tsc - c->base_tsc)
	                     : cur->mult;
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

#if defined(__x86_64__)
/* The answer of the first read of /proc/cpuinfo (a CPU's flags do not
 * change while ada runs): 0 unknown, 1 no, 2 yes. `ada record` asks
 * three times (the host check, the ring config, the recorder), and on a
 * VM each read makes the kernel ask every CPU for its frequency. */
static _Atomic int tsc_invariant_seen;

static bool tsc_invariant_read(void)
{
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
}
#endif

bool ada_tsc_invariant(void)
{
#if defined(__x86_64__)
	/* Relaxed: a plain cached answer; two threads that both read the
	 * file store the same value. */
	int seen = atomic_load_explicit(&tsc_invariant_seen, memory_order_relaxed);
	if (seen)
		return seen == 2;
	bool ok = tsc_invariant_read();
	atomic_store_explicit(&tsc_invariant_seen, ok ? 2 : 1, memory_order_relaxed);
	return ok;
#elif defined(__aarch64__)
	uint64_t mult;
	return ada_tsc_mult_from_hz(ada_counter_hz(), &mult);
#else
	return false;
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

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Preemption between the reads only widens a bracket; the narrowest of
 * a few is kept, so one unlucky try costs nothing. */
void ada_wall_anchor_read(struct ada_wall_anchor *out)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t b0 = clock_ns(CLOCK_BOOTTIME), w = clock_ns(CLOCK_REALTIME),
		         b1 = clock_ns(CLOCK_BOOTTIME);
		if (b1 - b0 < best) {
			best = b1 - b0;
			out->boottime_ns = b0 + (b1 - b0) / 2;
			out->realtime_ns = w;
			out->uncertainty_ns = (b1 - b0 + 1) / 2;
		}
	}
}

uint64_t ada_wall_from_boottime(const struct ada_wall_anchor *a, uint64_t t)
{
	if (!a->realtime_ns)
		return 0;
	if (t >= a->boottime_ns)
		return a->realtime_ns + (t - a->boottime_ns);
	uint64_t back = a->boottime_ns - t;
	return back < a->realtime_ns ? a->realtime_ns - back : 0;
}

/* ---- the frequency without a calibration wait ---- */

#define TSC_MULT_MIN ((1ull << TSC_SHIFT) / 20) /* 20 GHz: 0.05 ns per tick */
/* 1 MHz: 1000 ns per tick. x86_64's TSC runs at GHz; arm64's generic timer
 * at 19.2 MHz (Qualcomm), 24 MHz (Apple, Broadcom), 25 MHz (Ampere) up to
 * 1 GHz. */
#define TSC_MULT_MAX ((1ull << TSC_SHIFT) * 1000)

bool ada_tsc_mult_sane(uint64_t mult)
{
	return mult >= TSC_MULT_MIN && mult <= TSC_MULT_MAX;
}

uint64_t ada_tsc_clock_counter_at(const struct ada_tsc_clock *c, uint64_t ns)
{
	if (c->n == 0)
		return UINT64_MAX;
	const struct ada_tsc_map *m = &c->maps[c->n - 1];
	if (ns <= m->ns0)
		return m->tsc0;
	unsigned __int128 d = ((unsigned __int128)(ns - m->ns0) << m->shift) / m->mult;
	return d > UINT64_MAX - m->tsc0 ? UINT64_MAX : m->tsc0 + (uint64_t)d;
}

bool ada_tsc_mult_from_hz(uint64_t hz, uint64_t *mult)
{
	if (hz == 0)
		return false;
	uint64_t m = tsc_slope(1000000000ull, hz);
	if (!ada_tsc_mult_sane(m))
		return false;
	*mult = m;
	return true;
}

void ada_tsc_clock_seed(struct ada_tsc_clock *c, uint64_t mult)
{
	struct ada_tsc_map first = {
	    .tsc0 = c->base_tsc, .ns0 = c->base_ns, .mult = mult, .shift = TSC_SHIFT};
	c->n = 0;
	tsc_push(c, &first);
	c->ready = 1;
	c->last_tsc = c->base_tsc;
}

bool ada_tsc_kernel_mult(uint64_t *mult)
{
#if defined(__x86_64__)
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY; /* counts nothing: only the page */
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return false;
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	const volatile struct perf_event_mmap_page *p = m;
	bool ok = false;
	uint64_t k = 0;
	/* The page's seqlock, read as the kernel's own example does: volatile
	 * loads and a compiler barrier (x86 keeps loads in order; a fence
	 * would also not build under -fsanitize=thread). */
	for (int tries = 0; tries < 100; tries++) {
		uint32_t seq = p->lock;
		__asm__ __volatile__("" ::: "memory");
		bool cap = p->cap_user_time;
		uint32_t tm = p->time_mult;
		uint16_t ts = p->time_shift;
		__asm__ __volatile__("" ::: "memory");
		if (p->lock != seq || (seq & 1))
			continue;
		if (cap && tm && ts <= 63) {
			unsigned __int128 v = ((unsigned __int128)tm << TSC_SHIFT) >> ts;
			k = v > UINT64_MAX ? 0 : (uint64_t)v;
			ok = ada_tsc_mult_sane(k);
		}
		break;
	}
	munmap(m, (size_t)pg);
	if (ok)
		*mult = k;
	return ok;
#elif defined(__aarch64__)
	return ada_tsc_mult_from_hz(ada_counter_hz(), mult);
#else
	(void)mult;
	return false;
#endif
}

int ada_tsc_boot_id(char out[37])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char b[64];
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	if (n < 36)
		return -EIO;
	for (int i = 0; i < 36; i++) {
		char ch = b[i];
		bool ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || ch == '-';
		if (!ok)
			return -EIO;
	}
	memcpy(out, b, 36);
	out[36] = '\0';
	return 0;
}

int ada_tsc_cache_path(char *out, size_t cap)
{
	return ada_fs_cache_dir("tsc", out, cap);
}

#define TSC_CACHE_MAX 128 /* the line is ~70 bytes: anything longer is not ours */

int ada_tsc_cache_parse(const char *buf, size_t len, const char *boot_id, uint64_t *mult)
{
	/* "ada-tsc 1 <boot id> <mult>\n", byte for byte: no sscanf, whose
	 * spaces match any run of white space (or none) and whose %llu takes
	 * a sign. */
	static const char magic[] = "ada-tsc 1 ";
	size_t id_len = strlen(boot_id), at = sizeof(magic) - 1;
	if (len == 0 || len > TSC_CACHE_MAX || buf[len - 1] != '\n' || len < at + id_len + 3 ||
	    memcmp(buf, magic, at) || memcmp(buf + at, boot_id, id_len) || buf[at + id_len] != ' ')
		return -EBADMSG;
	uint64_t m = 0;
	for (size_t i = at + id_len + 1; i < len - 1; i++) {
		if (buf[i] < '0' || buf[i] > '9' || m > (UINT64_MAX - 9) / 10)
			return -EBADMSG;
		m = m * 10 + (uint64_t)(buf[i] - '0');
	}
	if (!ada_tsc_mult_sane(m))
		return -EBADMSG;
	*mult = m;
	return 0;
}

int ada_tsc_cache_load(const char *path, uint64_t *mult)
{
	char def[PATH_MAX], id[37], buf[TSC_CACHE_MAX + 1];
	int err = path ? 0 : ada_tsc_cache_path(def, sizeof(def));
	if (err)
		return err;
	if (!path)
		path = def;
	if ((err = ada_tsc_boot_id(id)))
		return err;
	int fd;
	if ((err = ada_fs_open_private(path, &fd, NULL)))
		return err;
	ssize_t n = read(fd, buf, sizeof(buf)); /* at most one byte too many */
	err = n < 0 ? -errno : 0;
	close(fd);
	if (!err)
		err = ada_tsc_cache_parse(buf, (size_t)n, id, mult);
	return err;
}

int ada_tsc_cache_store(const char *path, uint64_t mult)
{
	char def[PATH_MAX], id[37], line[TSC_CACHE_MAX];
	int err = path ? 0 : ada_tsc_cache_path(def, sizeof(def));
	if (err)
		return err;
	if (!path)
		path = def;
	if (!ada_tsc_mult_sane(mult))
		return -EINVAL;
	if ((err = ada_tsc_boot_id(id)))
		return err;
	int n = snprintf(line, sizeof(line), "ada-tsc 1 %s %llu\n", id, (unsigned long long)mult);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return -ENAMETOOLONG;
	const char *base;
	int dfd = -1;
	err = ada_fs_walk_parent(path, ADA_FS_WALK_CREATE, &dfd, &base);
	/* Private temporary file (0600), renameat: a planted link is
	 * replaced, never followed; a reader sees a whole file. */
	if (!err)
		err = ada_fs_replace(dfd, base, line, (size_t)n, false);
	if (dfd >= 0)
		close(dfd);
	return err;
}

enum ada_tsc_calib ada_tsc_known_mult(uint64_t *mult)
{
	if (ada_tsc_kernel_mult(mult))
		return ADA_TSC_KERNEL;
	if (ada_tsc_cache_load(NULL, mult) == 0)
		return ADA_TSC_CACHED;
	return ADA_TSC_MEASURED;
}
