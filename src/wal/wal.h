/*
 * ada wal: everything between the shared-memory rings and the files on
 * disk, in the recorder process.
 *
 *   - a TSC -> CLOCK_BOOTTIME clock (ada_tsc_*), calibrated against
 *     clock_gettime and re-anchored without ever going backwards;
 *   - the segment writer (ada_wal_io, ada_wal_file): one io_uring shared by
 *     all files, events staged in buffers and appended into preallocated
 *     segments of thread_K/index.atf, CRC-32 kept as the events are staged,
 *     header + footer written and the preallocated tail cut at finalize;
 *   - the recorder (ada_recorder): session and arena directories, the drain
 *     thread that batch-reads every ring of every arena of the session,
 *     per-thread files, retention generations (--max-disk-mb), manifests,
 *     metrics, finalize;
 *   - recovery (ada_wal_recover_*) of a session whose recorder died.
 *
 * Threads: one recorder is driven by one drain thread; the ada_tsc_* and
 * ada_wal_file_* functions are not thread-safe and are only called by it
 * (or by a single-threaded tool such as `ada recover`).
 * Errors are 0 / -errno; nothing here prints.
 */
#ifndef ADA_WAL_H
#define ADA_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atf_format.h"
#include "ring.h"
#include "trigger.h"

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
/* Reads /proc/cpuinfo: true when the TSC can be used as the clock. */
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

/* Converts one raw TSC value; the clock must be ready. */
static inline uint64_t ada_tsc_clock_to_ns(const struct ada_tsc_clock *c, uint64_t tsc)
{
	uint32_t i = c->n - 1;
	while (i > 0 && tsc < c->maps[i].tsc0)
		i--;
	return ada_tsc_map_apply(&c->maps[i], tsc);
}

/* ---- the frequency without a calibration wait (issue 13, start-up) ---- */

/* Where the first piece's slope came from (manifest clock.calibration). */
enum ada_tsc_calib { ADA_TSC_MEASURED, ADA_TSC_KERNEL, ADA_TSC_CACHED };

/* The slope (ns per tick << 32) the kernel itself uses for the TSC: the
 * perf_event mmap page's time_mult/time_shift (cap_user_time), from the
 * boot-time tsc_khz. false when the kernel does not offer it (a guest
 * whose sched_clock is kvm-clock, perf_event_open refused). */
bool ada_tsc_kernel_mult(uint64_t *mult);
/* A plausible slope: 50 MHz .. 20 GHz. Anything else is refused. */
bool ada_tsc_mult_sane(uint64_t mult);
/* The per-user cache of the measured slope: $XDG_CACHE_HOME/ada/tsc or
 * ~/.cache/ada/tsc (-ENOENT when ~/.cache does not exist: ada makes none),
 * one line "ada-tsc 1 <boot_id> <mult>\n", 0600, created by a private
 * temporary file + rename in a directory reached by a walk that trusts
 * only root's and our own directories and links (fs.h). Valid only for
 * the boot that wrote it (the TSC rate is fixed at boot). */
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

/* ---- segment writer ------------------------------------------------------ */

enum ada_flush_mode {
	ADA_FLUSH_OFF = 0,
	ADA_FLUSH_INTERVAL = 1, /* value = ms */
	ADA_FLUSH_BYTES = 2,    /* value = bytes */
	ADA_FLUSH_ROTATE = 3,   /* at each new segment */
};

struct ada_flush_policy {
	uint32_t mode; /* enum ada_flush_mode */
	uint32_t safe; /* fsync at rotate and at close */
	uint64_t value;
};

/* Parses "off", "interval:MS", "bytes:N[k|m|g]", "rotate". 0 or -EINVAL. */
int ada_flush_parse(const char *s, struct ada_flush_policy *out);

struct ada_wal_io;   /* one io_uring + the staging-buffer pool */
struct ada_wal_file; /* one index.atf being written */

/* Latency histogram of encode-to-disk times (ns), log-linear buckets. */
#define ADA_LAT_BUCKETS 512
struct ada_lat_hist {
	uint64_t count;
	uint64_t buckets[ADA_LAT_BUCKETS];
};
void ada_lat_hist_add(struct ada_lat_hist *h, uint64_t ns);
/* Value (upper bucket bound, ns) at quantile q in [0,1]; 0 when empty. */
uint64_t ada_lat_hist_quantile(const struct ada_lat_hist *h, double q);

struct ada_wal_io_opts {
	uint32_t queue_depth;  /* io_uring entries; 0 = 256 */
	uint32_t buffer_bytes; /* staging buffer size; 0 = 1 MiB */
	uint32_t max_buffers;  /* staging buffers in flight; 0 = 96 MiB of them (96..384) */
	uint32_t stage_ms;     /* a partly filled buffer goes out after this; 0 = 5 */
	/* index files written with O_DIRECT: 0 = unless ADA_WAL_DIRECT=0 is
	 * set, 1 = yes, -1 = no (buffered, RWF_DONTCACHE) */
	int direct;
};

/* Returns 0, -ENOMEM, or the -errno of io_uring_queue_init. */
int ada_wal_io_new(const struct ada_wal_io_opts *o, struct ada_wal_io **out);
void ada_wal_io_free(struct ada_wal_io *io); /* waits for writes in flight */
/* Reaps completions; with wait, blocks until at least one arrives (only
 * when something is in flight). Returns completions reaped or -errno. */
int ada_wal_io_reap(struct ada_wal_io *io, bool wait);
/* Sleeps up to usec, or less when a write completes (then reaps). */
void ada_wal_io_wait(struct ada_wal_io *io, uint32_t usec);
/* Submits every staged buffer older than stage_ms (all when force). */
void ada_wal_io_submit_stale(struct ada_wal_io *io, bool force);
/* Encode-to-disk latencies of the batches completed so far. */
const struct ada_lat_hist *ada_wal_io_latency(const struct ada_wal_io *io);
/* True once a write or an allocation failed with ENOSPC. */
/* detail_seq links lost to failed writes (manifest wal.links_failed). */
uint64_t ada_wal_io_links_failed(const struct ada_wal_io *io);
bool ada_wal_io_disk_full(const struct ada_wal_io *io);
/* Whether the writes are uncached (RWF_DONTCACHE) still; false once the
 * kernel refused it (then *refused writes were sent again without it). */
bool ada_wal_io_uncached(const struct ada_wal_io *io, uint32_t *refused);
uint64_t ada_wal_io_bytes_written(const struct ada_wal_io *io);
/* The staging buffers' size in bytes (manifest wal.staging_buffer_bytes). */
uint32_t ada_wal_io_buffer_bytes(const struct ada_wal_io *io);
/* Whether index files are opened with O_DIRECT (when their file system
 * allows it); *files opened so, *fallbacks that fell back to buffered
 * writes and *reason the first one's reason (NULL when none). */
bool ada_wal_io_direct(const struct ada_wal_io *io, uint32_t *files, uint32_t *fallbacks,
                       const char **reason);

struct ada_wal_file_opts {
	uint32_t thread_id;
	uint8_t clock_type;     /* ATF_CLOCK_BOOTTIME */
	uint8_t arch;           /* ATF_ARCH_* */
	uint64_t segment_bytes; /* preallocation step; 0 = 64 MiB */
	/* No segment is allocated ahead past this size (the rotation size
	 * under a disk budget: a file's allocation counts against it, as
	 * before); 0 = no limit. */
	uint64_t ahead_limit;
	struct ada_flush_policy flush;
};

/* Creates path (O_EXCL), writes the header placeholder, preallocates the
 * first segment. -EEXIST, -ENOSPC, -ENOMEM, other -errno from open. */
int ada_wal_file_open(struct ada_wal_io *io, const char *path, const struct ada_wal_file_opts *o,
                      struct ada_wal_file **out);
/* The same for name under the directory dirfd (fs.h: O_EXCL|O_NOFOLLOW,
 * 0600); path is only kept for messages. */
int ada_wal_file_openat(struct ada_wal_io *io, int dirfd, const char *name, const char *path,
                        const struct ada_wal_file_opts *o, struct ada_wal_file **out);
/* Space for up to max events in the staging buffer; returns how many fit
 * (>= 1 unless the file failed: then 0) and sets *dst. */
size_t ada_wal_file_reserve(struct ada_wal_file *f, size_t max, struct atf_index_event **dst);
/* Publishes n events written at *dst of the last reserve: CRC, counts,
 * time range. Timestamps must be non-decreasing (the caller clamps). */
void ada_wal_file_commit(struct ada_wal_file *f, size_t n);
/* Appends n ready events (reserve + memcpy + commit). Returns n appended. */
size_t ada_wal_file_append(struct ada_wal_file *f, const struct atf_index_event *ev, size_t n);
/* Events whose writes have completed, counted over the in-order prefix:
 * the drain releases ring space only up to here, so a recorder crash
 * loses nothing that `ada recover` cannot find in the ring. */
uint64_t ada_wal_file_durable(const struct ada_wal_file *f);
/* Submits the staging buffer now (the drain needs ring space back). */
void ada_wal_file_submit(struct ada_wal_file *f);
/* The same, but on an O_DIRECT file only its whole 4 KiB blocks: the
 * events of a partial last block stay staged (not durable) for the next
 * write, which then need not wait for this one. */
void ada_wal_file_submit_blocks(struct ada_wal_file *f);
/* Last timestamp appended (0 when none): callers keep time non-decreasing. */
uint64_t ada_wal_file_last_ts(const struct ada_wal_file *f);
uint64_t ada_wal_file_events(const struct ada_wal_file *f);
/* Bytes the file occupies now (allocation, header included). */
uint64_t ada_wal_file_disk_bytes(const struct ada_wal_file *f);
/* ada_wal_file_disk_bytes() summed over io's open files, kept as they grow
 * and close (the drain asks after every batch: no walk of the files). */
uint64_t ada_wal_io_open_bytes(const struct ada_wal_io *io);
/* How many bytes of a disk budget segments allocated ahead (before the
 * events need them) may take from now on: the drain sets what its budget
 * has left, so an allocation ahead never makes it retire a generation
 * (UINT64_MAX, the default: no budget). */
void ada_wal_io_set_ahead_room(struct ada_wal_io *io, uint64_t bytes);
/* Events that could not be written (disk full or a write error). */
uint64_t ada_wal_file_lost(const struct ada_wal_file *f);
/* First error the file hit (0 when none). */
int ada_wal_file_error(const struct ada_wal_file *f);

struct ada_wal_file_summary {
	uint64_t events;
	uint64_t bytes; /* final file length */
	uint64_t time_start_ns, time_end_ns;
	uint32_t crc;
	uint64_t lost;
	/* What the flush policy did: segments allocated, write-back requests
	 * (sync_file_range), fdatasyncs (--safe); the manifest shows them. */
	uint32_t segments, flushes, syncs;
	int error;
};
/* Waits for its writes, writes footer and final header, truncates the
 * preallocated tail, fsyncs with --safe, closes and frees. Consumes f.
 * Returns 0 or the first -errno the file saw (the file is still valid). */
int ada_wal_file_finalize(struct ada_wal_file *f, struct ada_wal_file_summary *sum);

/* The files' CRC-32 (zlib's crc32() values) as the recorder computes it,
 * from the implementation the build found: ada_wal_crc32_impl() names it
 * ("isa-l", "libdeflate" or "zlib"; the manifest's wal.crc32). Thread-safe. */
uint32_t ada_wal_crc32(uint32_t crc, const void *p, size_t n);
const char *ada_wal_crc32_impl(void);

/* ---- finalize a file from what is on disk (recover, tests) ---------------- */

/*
 * Scans an index file that was never finalized: from events_offset, events
 * until the first all-zero 32-byte slot (event_kind 0 marks the preallocated
 * zero tail) or the end; keeps the longest prefix with non-decreasing
 * timestamps. Appends extra[0..n_extra) (leftovers drained from the arena,
 * already converted), writes footer and header, truncates. A file that is
 * already finalized and valid is left as it is unless extra is given.
 * Returns 0, -EPROTO (not an index file), or -errno.
 */
int ada_wal_finalize_path(const char *path, const struct atf_index_event *extra, size_t n_extra,
                          struct ada_wal_file_summary *sum);
/* The same on an open, writable descriptor (left open). */
int ada_wal_finalize_fd(int fd, const struct atf_index_event *extra, size_t n_extra,
                        struct ada_wal_file_summary *sum);

/* ---- the recorder --------------------------------------------------------- */

/* --detail: what the drain does with the detail rings (the agent fills
 * them in `triggered` and `always`; `never` has no detail ring at all). */
enum ada_detail_mode {
	ADA_DETAIL_TRIGGERED = 0, /* persist only windows (wal_detail_persist, by triggers) */
	ADA_DETAIL_ALWAYS = 1,    /* persist every record, every drain pass */
	ADA_DETAIL_NEVER = 2,     /* index lane only */
};

struct ada_recorder_opts {
	const char *out_dir;     /* parent of session_YYYYMMDD_HHMMSS */
	const char *shm_dir;     /* parent of ada-<tag>/ (default /dev/shm) */
	int drain_cpu;           /* -1: not pinned */
	uint64_t segment_bytes;  /* 0 = 64 MiB */
	uint64_t max_disk_bytes; /* 0 = unbounded */
	bool max_disk_default;   /* ignore max_disk_bytes: the default budget */
	uint64_t max_shm_bytes;  /* ceiling on the arenas' sizes; 0 = none */
	bool max_shm_default;    /* ignore max_shm_bytes: the default ceiling */
	struct ada_flush_policy flush;
	bool follow;                     /* record children that create arenas */
	bool force_clock;                /* ts=clock even with an invariant TSC */
	const char *ring_config;         /* ADA_RING_CONFIG text to pass on */
	const char *const *program_argv; /* recorded in the manifest */
	/* The flight recorder: armed from the start (more may be added while
	 * it runs, through ada_recorder_triggers()). */
	const struct ada_trigger_spec *triggers;
	size_t ntriggers;
	struct ada_trigger_opts flight; /* pre/post-roll, max windows, hold-off */
	uint32_t detail_mode;           /* enum ada_detail_mode */
	uint32_t stack_bytes;           /* manifest: stack bytes per CALL record */
	const char *detail_symbols;     /* manifest: --detail-symbols, NULL: every function */
	/* The key-symbol spec from the start (--key-symbols, --detail-symbols,
	 * --blob; src/keysym), copied; NULL: every hooked function. */
	const struct ada_keysym_spec *key_symbols;
	/* ada attach: the process is not our child and already runs; the
	 * recording ends when ada_recorder_stop() is called (after the
	 * detach) or when every recorded process is gone. */
	bool attached;
	/* Called on the drain thread with one sentence for stderr (a thread
	 * quarantined, an arena ignored); NULL: the manifests only. */
	void (*notice)(void *arg, const char *sentence);
	void *notice_arg;
};

struct ada_recorder;
struct ada_keysym_spec;
struct json_t;

/* Replaces the recording's key-symbol spec (consumes spec) and waits (at
 * most 20 s, a run-away guard) until the drain has built and published the set it means in
 * every live process. *result (new reference): {"version": N,
 * "processes": [{pid, version, members, modules: [{id, container,
 * members}], xxh64, ...} or {pid, error}]}. 0; -ENOTSUP (--detail never),
 * -ETIMEDOUT; why gets one sentence. Any thread. */
int ada_recorder_keysym_set(struct ada_recorder *r, struct ada_keysym_spec *spec,
                            struct json_t **result, char *why, size_t cap);
/* The version of the last set published (0: none yet). Any thread. */
uint64_t ada_recorder_keysym_version(struct ada_recorder *r);
/* What that version covers (new reference; NULL: none yet or no memory):
 * {"version", "pid" (the process it was published in), "entries" (module
 * ids below it have a directory entry), "unknown" (how many of those the
 * set says nothing about: their .syms not read when it was built),
 * "unknown_ids" (the first 16 of them)}. A module id >= entries or listed
 * there is decided by the agent's own start-time set. Any thread. */
struct json_t *ada_recorder_keysym_cover(struct ada_recorder *r);

struct ada_record_summary {
	uint64_t events;
	uint64_t drops;
	uint64_t disk_bytes;
	uint64_t lost_enospc;
	double seconds;
	uint64_t latency_p50_ns, latency_p99_ns;
	bool disk_full;
	bool abnormal;
	int exit_status; /* shell-style: status, or 128 + signal */
	uint32_t processes;
	/* the disk budget (0: unbounded) and what it deleted */
	uint64_t budget_bytes;
	bool budget_default;
	uint64_t retired_gens, retired_events, retired_bytes;
	/* shared memory: the ceiling (0: none), the most used at once, the
	 * processes that ran untraced because of it, and what the end found
	 * left in the arena directory (removed) */
	uint64_t shm_ceiling, shm_peak, untraced_procs;
	uint32_t shm_leftover;
	/* arenas of processes that took the pid of an earlier one of this
	 * recording (finished, or still being read): told, not read (drain.c
	 * drain_pid_reused, drain_reused_while_read) */
	uint32_t pid_reused;
	uint64_t drops_by[2][8]; /* [lane][enum ada_drop_reason], summed */
	/* The detail lane (docs/internals.md, "What the detail lane counts"):
	 * the mode, the trigger windows, detail records persisted, and the
	 * records the rings overwrote that no window wanted (--detail
	 * triggered: not drops; window_lost in drops_by are the wanted ones). */
	uint32_t detail_mode; /* enum ada_detail_mode */
	uint64_t windows, detail_records, detail_overwritten;
	/* Bytes per thread a detail ring would have needed to hold what the
	 * windows lost at this run's rate (wal_flight_ring_suggest; 0: none). */
	uint64_t detail_ring_suggest;
	/* --detail always: times a thread waited for detail room, and the ns */
	uint64_t detail_waits, detail_waited_ns;
	/* --overflow wait: times a thread waited for index ring space (the
	 * drain ran behind), and the ns */
	uint64_t ring_waits, ring_waited_ns;
	/* CPU time of the drain thread alone (CLOCK_THREAD_CPUTIME_ID at its
	 * end): the recorder's process CPU minus this is mostly the kernel's
	 * io_uring workers (the page-cache copy) and the caller's thread. */
	uint64_t drain_cpu_ns;
};

/* Creates the session directory (with a suffix when the name is taken) and
 * the arena directory. -errno on failure, with nothing left behind. */
int ada_recorder_new(const struct ada_recorder_opts *o, struct ada_recorder **out);
const char *ada_recorder_session_dir(const struct ada_recorder *r);
const char *ada_recorder_arena_dir(const struct ada_recorder *r);
/* The session directory, opened once (O_NOFOLLOW): create files under it
 * with src/fs. Owned by the recorder: do not close. */
int ada_recorder_session_fd(const struct ada_recorder *r);
/* True when the drain uses raw TSC (arena timestamp source ADA_TS_TSC). */
bool ada_recorder_uses_tsc(const struct ada_recorder *r);
/* Starts the drain thread. main_pid is the spawned program (our child);
 * the recorder reaps every descendant (it should be a child subreaper).
 * Attached (opts.attached): main_pid is the process attached to, not our
 * child; it and its descendants are recorded. */
int ada_recorder_start(struct ada_recorder *r, pid_t main_pid);
/* Joins the drain: returns once every process is gone and everything is
 * written and finalized. */
int ada_recorder_wait(struct ada_recorder *r, struct ada_record_summary *sum);
/* Asks the drain to stop soon (within 2 s) whatever the program does:
 * it drains what it can, finalizes every file and manifest, and
 * ada_recorder_wait() returns. Async-signal-safe (one atomic store). */
void ada_recorder_stop(struct ada_recorder *r);
/* Removes the session directory (only before start: bad-input paths). */
void ada_recorder_discard(struct ada_recorder *r);
void ada_recorder_free(struct ada_recorder *r);
/* The recording's trigger engine: any thread may add or remove triggers
 * and fire manual ones through it (src/trigger/trigger.h), while it runs. */
struct ada_trigger_engine *ada_recorder_triggers(struct ada_recorder *r);
/* ada attach: when the attach happened (CLOCK_REALTIME ns) and how long
 * every thread of the process was stopped to attach and to detach (ns;
 * 0: not yet). Any thread; the manifests written afterwards carry them
 * (`"attached": true`, `"attach": {...}`). */
void ada_recorder_set_attach(struct ada_recorder *r, uint64_t realtime_ns, uint64_t pause_ns,
                             uint64_t detach_pause_ns);
/* Async-signal-safe: asks for a manual fire now (SIGUSR2 to `ada record`). */
void ada_recorder_request_manual(struct ada_recorder *r);

/* ---- the live view (the control socket, `ada status PID`) ----
 *
 * Protocol: the drain builds a view in its own buffer once a second (and
 * at its 10 ms cadence when events, windows or processes changed), then
 * publishes it with pthread_mutex_trylock + memcpy: a busy lock skips the
 * publish (the next pass retries), so a reader never holds the drain up;
 * the last view (ended) takes the lock, as there is no next pass. Readers
 * copy the published view out under the same mutex (a memcpy: bounded). */
#define ADA_LIVE_MAX_PROCS 64
#define ADA_LIVE_MAX_RINGS 256
#define ADA_LIVE_MAX_WINDOWS 64

struct ada_live_proc {
	pid_t pid;
	bool finished;
	uint32_t threads, ring_fill_pct; /* live threads; fill max over the last second */
	uint64_t events;                 /* written */
};

struct ada_live_ring {
	pid_t pid;
	uint32_t thread, tid;
	uint64_t detail_span_ns; /* seconds of detail its ring holds, in ns */
};

struct ada_recorder_live {
	uint64_t seq;            /* publishes so far; 0: none yet */
	uint64_t at_ns;          /* CLOCK_BOOTTIME of the publish */
	uint64_t start_ns;       /* CLOCK_BOOTTIME when the drain started */
	uint32_t detail_mode;    /* enum ada_detail_mode */
	bool ended;              /* the drain finished: the final view */
	uint64_t events;         /* written, every process */
	uint64_t events_per_sec; /* over the last second */
	uint64_t drops[ADA_DROP_REASON_COUNT];
	uint64_t drops_per_sec[ADA_DROP_REASON_COUNT];
	/* --detail triggered: records the rings overwrote that no window
	 * wanted (a flight recorder's normal turnover, not a drop) */
	uint64_t detail_overwritten;
	uint64_t detail_records; /* persisted so far (not with --detail never) */
	/* --detail always: the times the program's threads waited for the
	 * drain to persist detail records (their ring full), and the ns */
	uint64_t detail_waits, detail_waited_ns;
	/* the times the program's threads waited for index ring space (the
	 * drain ran behind), and the ns */
	uint64_t ring_waits, ring_waited_ns;
	uint32_t ring_fill_pct_max;
	uint32_t nprocs, procs_omitted; /* procs[] holds the first ADA_LIVE_MAX_PROCS */
	struct ada_live_proc procs[ADA_LIVE_MAX_PROCS];
	uint32_t nrings, rings_omitted;
	struct ada_live_ring rings[ADA_LIVE_MAX_RINGS];
	uint64_t windows_total, windows_closed; /* closed = persisted to their end */
	uint32_t nwindows;                      /* windows[]: the most recent ones */
	struct ada_trigger_window windows[ADA_LIVE_MAX_WINDOWS];
	struct ada_trigger_stats trig;
	uint64_t manual_dropped;
};

/* Any thread: copies the last published view into *out (about 60 KiB:
 * not on a small stack). -EAGAIN when the drain has not published yet. */
int ada_recorder_live(struct ada_recorder *r, struct ada_recorder_live *out);

/* Start time of a process (field 22 of /proc/PID/stat, clock ticks since
 * boot); 0 when it does not exist. */
uint64_t ada_proc_start_ticks(pid_t pid);
/* Whether the recorder pid that started at start_ticks is still running
 * (pid and start time: a reused pid is not it). start_ticks 0: pid only. */
bool ada_recorder_alive(pid_t pid, uint64_t start_ticks);

/* ---- recovery --------------------------------------------------------------- */

struct ada_recover_report {
	uint32_t pids;
	uint32_t files;
	uint32_t files_already_final;
	uint64_t events_on_disk;
	uint64_t events_from_arena;
	uint32_t arenas_found;
	uint32_t errors;
	uint32_t links_skipped; /* symbolic links met in the session, not followed */
	uint32_t quarantined;   /* slots that broke the ring protocol */
	uint64_t corrupt_drops; /* events left in them, not written */
	/* Set by the caller (kept across the call): one sentence per thread
	 * quarantined or arena lost, for stderr. NULL: the manifests only. */
	void (*notice)(void *arg, const char *sentence);
	void *notice_arg;
};

/* Recovers every pid_N under dir (a session or a pid directory): drains
 * leftover arenas named by the manifests (checked as the drain checks
 * them, at most one ring's worth per slot, through a fixed buffer),
 * finalizes every index file, writes manifests with state "recovered"
 * that carry the arena's drop counters and the exit status or signal
 * its agent recorded. 0, -ENOENT (no pid dirs),
 * -EBUSY (the recorder of a process is still running: left alone), -errno. */
int ada_wal_recover(const char *dir, struct ada_recover_report *rep);

#endif
