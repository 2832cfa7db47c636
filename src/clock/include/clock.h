/*
 * ada clock: the cycle counter and its conversion to CLOCK_BOOTTIME.
 *
 *   - ada_tsc() / ada_tsc_put(): the raw counter (TSC on x86_64, CNTVCT
 *     on arm64), inline: the producer's hot path stamps every event with
 *     it (src/ring/ring.h);
 *   - a TSC -> CLOCK_BOOTTIME clock (ada_tsc_*), calibrated against
 *     clock_gettime and re-anchored without ever going backwards, for the
 *     drain and `ada recover`; the frequency from the kernel or a per-user
 *     cache so the clock is ready at once; the invariant-TSC check that
 *     `ada diagnose` shows.
 *
 * Threads: the inline reads are safe anywhere (hook context included:
 * one instruction, no libc); an ada_tsc_clock is plain data owned by one
 * thread (the drain, or a single-threaded tool such as `ada recover`).
 * Errors are 0 / -errno; nothing here prints.
 */
#ifndef ADA_CLOCK_H
#define ADA_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the cycle counter ---------------------------------------------------- */

/* The cycle counter (TSC on x86_64, CNTVCT on arm64). */
static inline uint64_t ada_tsc(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
#error "no cycle counter for this architecture"
#endif
}

/* The counter's frequency in Hz where the architecture states it: arm64's
 * CNTFRQ_EL0 (the generic timer runs at a fixed rate, set by firmware; the
 * kernel requires it to be right). 0 on x86_64, whose TSC rate is
 * measured or taken from the kernel (ada_tsc_known_mult). */
static inline uint64_t ada_counter_hz(void)
{
#if defined(__aarch64__)
	uint64_t hz;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz & 0xffffffffu; /* the upper half is RES0 */
#else
	return 0;
#endif
}

#if defined(__x86_64__)
/* Stores the cycle counter at dst (8 bytes, any alignment) as two 32-bit
 * stores of edx:eax, which saves the shift-and-or of ada_tsc(). */
typedef uint32_t ada_u32_alias __attribute__((may_alias, aligned(1)));
static inline void ada_tsc_put(void *dst)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	ada_u32_alias *w = (ada_u32_alias *)dst;
	w[0] = lo;
	w[1] = hi;
}
#endif

/* ---- TSC -> CLOCK_BOOTTIME ---------------------------------------------- */

/* One linear piece: ns = ns0 + ((tsc - tsc0) * mult) >> shift. */
struct ada_tsc_map {
	uint64_t tsc0;
	uint64_t ns0;
	uint64_t mult;
	uint32_t shift;
	uint32_t reserved;
};

#define ADA_TSC_HISTORY 16
/* Below this baseline the first frequency estimate is not trusted. */
#define ADA_TSC_CALIB_MIN_NS 5000000ull
/* A re-anchor corrects the error against the clock over this horizon. */
#define ADA_TSC_SLEW_NS 1000000000ull

/*
 * A piecewise-linear, continuous, strictly increasing map from TSC to ns.
 * maps[0..n) are ordered by tsc0; a TSC value uses the last piece whose
 * tsc0 is <= it (the first piece extends backwards). Each new piece starts
 * where the previous one is at its tsc0, so the whole map never goes back.
 */
struct ada_tsc_clock {
	struct ada_tsc_map maps[ADA_TSC_HISTORY];
	uint32_t n;
	uint32_t ready;
	uint64_t base_tsc, base_ns; /* first sample: long-baseline frequency */
	uint64_t last_tsc;
};

/* 1 when /proc/cpuinfo text (buf,len) has both constant_tsc and
 * nonstop_tsc in a flags line, 0 when not, -EINVAL when no flags line. */
int ada_tsc_invariant_from_cpuinfo(const char *buf, size_t len);
/* Reads /proc/cpuinfo: true when the TSC can be used as the clock. arm64:
 * true when the generic timer states its frequency (its virtual counter
 * is constant-rate and never stops, by the architecture). */
bool ada_tsc_invariant(void);

void ada_tsc_clock_init(struct ada_tsc_clock *c, uint64_t tsc, uint64_t ns);
/* Feeds one (tsc, ns) pair read back to back. The first piece is made once
 * the baseline is >= ADA_TSC_CALIB_MIN_NS; later samples add a piece that
 * slews toward the clock. Returns true when a piece was added. */
bool ada_tsc_clock_sample(struct ada_tsc_clock *c, uint64_t tsc, uint64_t ns);
/* Installs a known piece (recover: the anchor saved in the manifest). */
void ada_tsc_clock_set(struct ada_tsc_clock *c, const struct ada_tsc_map *m);
static inline bool ada_tsc_clock_ready(const struct ada_tsc_clock *c)
{
	return c->ready != 0;
}

static inline uint64_t ada_tsc_map_apply(const struct ada_tsc_map *m, uint64_t tsc)
{
	if (tsc >= m->tsc0)
		return m->ns0 +
		       (uint64_t)(((unsigned __int128)(tsc - m->tsc0) * m->mult) >> m->shift);
	uint64_t back = (uint64_t)(((unsigned __int128)(m->tsc0 - tsc) * m->mult) >> m->shift);
	return back > m->ns0 ? 0 : m->ns0 - back;
}

/* The counter value the clock's newest piece puts at ns (its inverse):
 * where a counter the recorder cannot read stands at ns. UINT64_MAX when
 * it does not fit or the clock has no piece yet. */
uint64_t ada_tsc_clock_counter_at(const struct ada_tsc_clock *c, uint64_t ns);

/* Converts one raw TSC value; the clock must be ready. */
static inline uint64_t ada_tsc_clock_to_ns(const struct ada_tsc_clock *c, uint64_t tsc)
{
	uint32_t i = c->n - 1;
	while (i > 0 && tsc < c->maps[i].tsc0)
		i--;
	return ada_tsc_map_apply(&c->maps[i], tsc);
}

/* ---- the frequency without a calibration wait (issue 13, start-up) ---- */

/* Where the first piece's slope came from (manifest clock.calibration):
 * ADA_TSC_TARGET: from the counter frequency and anchor the traced
 * program's arenas state (a counter the recorder cannot read itself:
 * ada_arena_origin, src/ring/ring.h). */
enum ada_tsc_calib { ADA_TSC_MEASURED, ADA_TSC_KERNEL, ADA_TSC_CACHED, ADA_TSC_TARGET };

/* The slope (ns per tick << 32) the kernel itself uses for the TSC: the
 * perf_event mmap page's time_mult/time_shift (cap_user_time), from the
 * boot-time tsc_khz. false when the kernel does not offer it (a guest
 * whose sched_clock is kvm-clock, perf_event_open refused). arm64: the
 * slope of CNTFRQ_EL0 (ada_counter_hz), which the kernel's own clock
 * source uses. */
bool ada_tsc_kernel_mult(uint64_t *mult);
/* A plausible slope: 1 MHz (arm64's generic timer runs at tens of MHz)
 * .. 20 GHz. Anything else is refused. */
bool ada_tsc_mult_sane(uint64_t mult);
/* The slope of a counter of hz ticks a second (ns per tick << 32); false
 * when hz gives no sane slope (ada_tsc_mult_sane). */
bool ada_tsc_mult_from_hz(uint64_t hz, uint64_t *mult);
/* The per-user cache of the measured slope: $XDG_CACHE_HOME/ada/tsc or
 * ~/.cache/ada/tsc, one line "ada-tsc 1 <boot_id> <mult>\n", 0600, created
 * by a private temporary file + rename in a directory reached by a walk
 * that trusts only root's and our own directories and links (fs.h).
 * Valid only for the boot that wrote it (the TSC rate is fixed at boot). */
int ada_tsc_cache_path(char *out, size_t cap);
/* Parses the cache text: 0 and *mult when it is exactly one well-formed
 * line for boot_id with a sane slope, -EBADMSG otherwise. */
int ada_tsc_cache_parse(const char *buf, size_t len, const char *boot_id, uint64_t *mult);
/* This boot's id (/proc/sys/kernel/random/boot_id, 36 chars + NUL). */
int ada_tsc_boot_id(char out[37]);
/* Loads/stores the slope at path (NULL: ada_tsc_cache_path()). Load
 * refuses a file not owned by us, writable by others, or a link. */
int ada_tsc_cache_load(const char *path, uint64_t *mult);
int ada_tsc_cache_store(const char *path, uint64_t mult);
/* After ada_tsc_clock_init(): the first piece from a known slope, so the
 * clock is ready at once (re-anchoring corrects it as before). */
void ada_tsc_clock_seed(struct ada_tsc_clock *c, uint64_t mult);
/* The kernel's slope, else the cache's; ADA_TSC_MEASURED (nothing) when
 * neither. */
enum ada_tsc_calib ada_tsc_known_mult(uint64_t *mult);

/* Raw TSC of this CPU (same source as the producer's ada_timestamp_raw). */
uint64_t ada_tsc_read(void);
/* CLOCK_BOOTTIME in ns. */
uint64_t ada_boottime_ns(void);
/* One (tsc, CLOCK_BOOTTIME ns) pair, bracketed against preemption. */
void ada_tsc_sample_pair(uint64_t *tsc, uint64_t *ns);

/* The wall clock beside the recording's own: CLOCK_REALTIME read between
 * two CLOCK_BOOTTIME reads, the tightest of a few tries. A boottime t is
 * the wall time realtime_ns + (t - boottime_ns), give or take
 * uncertainty_ns (the bracket's half width); a later step of the wall
 * clock (NTP, the user) is not followed. */
struct ada_wall_anchor {
	uint64_t boottime_ns;
	uint64_t realtime_ns;
	uint64_t uncertainty_ns;
};
void ada_wall_anchor_read(struct ada_wall_anchor *out);
/* The wall time of boottime t by the anchor (0 when a is unset). */
uint64_t ada_wall_from_boottime(const struct ada_wall_anchor *a, uint64_t t);

#endif
