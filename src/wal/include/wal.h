/*
 * ada wal: the write-ahead log, what turns the drain's batches into files.
 *
 *   - the segment writer (ada_wal_io, ada_wal_file): one io_uring shared by
 *     all files, events staged in buffers and appended into preallocated
 *     segments of thread_K/index.atf (allocated ahead through io_uring),
 *     CRC-32 kept as the events are staged, header + footer written and the
 *     preallocated tail cut at finalize; the flush policy;
 *   - finalizing a file from what is on disk (ada_wal_finalize_*).
 *
 * Threads: the ada_wal_io / ada_wal_file functions are not thread-safe and
 * are only called by one thread (the recorder's drain, or a
 * single-threaded tool such as `ada recover`).
 * Errors are 0 / -errno; nothing here prints.
 */
#ifndef ADA_WAL_H
#define ADA_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atf_format.h"
#include "cidx.h"

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

/* How an index file's events are written (--index-format). */
enum ada_index_format {
	ADA_INDEX_ATF = 0,     /* ATF v2: 32 bytes per event */
	ADA_INDEX_COMPACT = 1, /* the compact index, ATC1 (cidx.h) */
};

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
/* fd's open file held by the ring itself (a registered file) until the
 * ring is torn down, which the kernel does only after its last write in
 * flight ended, even when this process was killed first: a lock on fd
 * (the session's, recorder.c) then outlives those writes, and `ada
 * recover`, which waits for the lock, never reads a file a dead
 * recorder's write still lands in. 0 or -errno (the lock then goes with
 * the process: the writes may outlive it). */
int ada_wal_io_hold(struct ada_wal_io *io, int fd);
/* Reaps completions; with wait, blocks until at least one arrives (only
 * when something is in flight). Returns completions reaped or -errno. */
int ada_wal_io_reap(struct ada_wal_io *io, bool wait);
/* No write in flight and no buffer held back: the drain may sleep (up to
 * ada_wal_io_due_ns()) without a completion to reap. */
bool ada_wal_io_quiet(const struct ada_wal_io *io);
/* ns until ada_wal_io_submit_stale() has work: a staged buffer to send or
 * an interval flush due (0: now; UINT64_MAX: none). */
uint64_t ada_wal_io_due_ns(const struct ada_wal_io *io);
/* Sleeps up to usec, or less when a write completes (then reaps). */
void ada_wal_io_wait(struct ada_wal_io *io, uint32_t usec);
/* Submits every staged buffer older than stage_ms (all when force). */
void ada_wal_io_submit_stale(struct ada_wal_io *io, bool force);
/* Encode-to-disk latencies of the batches completed so far. */
const struct ada_lat_hist *ada_wal_io_latency(const struct ada_wal_io *io);
/* Index files written in the drain thread (manifest wal.inline_files):
 * on tmpfs, and compact ones on ext4 or xfs (segment.c). */
uint32_t ada_wal_io_inline_files(const struct ada_wal_io *io);
/* detail_seq links lost to failed writes (manifest wal.links_failed). */
uint64_t ada_wal_io_links_failed(const struct ada_wal_io *io);
/* True once a write or an allocation failed with ENOSPC. */
bool ada_wal_io_disk_full(const struct ada_wal_io *io);
/* Whether the writes are uncached (RWF_DONTCACHE) still; false once the
 * kernel refused it (then *refused writes were sent again without it). */
bool ada_wal_io_uncached(const struct ada_wal_io *io, uint32_t *refused);
uint64_t ada_wal_io_bytes_written(const struct ada_wal_io *io);
/* Bytes and events of the index files finalized so far (the summary's
 * bytes per event: what the index encoding costs on disk). */
void ada_wal_io_final(const struct ada_wal_io *io, uint64_t *bytes, uint64_t *events);
/* The pool of staging buffers keeps what it made up to its cap (96 MiB):
 * a peak of open files or a slow disk would hold its buffers for the rest
 * of the recording. Frees the buffers that stayed free since the last
 * call (the least the free list held meanwhile): none a steady load
 * uses, so its cost is nothing but the next peak's allocations. Returns
 * the buffers freed. The drain calls it every few seconds (heap.c). */
uint32_t ada_wal_io_trim(struct ada_wal_io *io);
/* Buffers the pool holds now, and of those free. */
void ada_wal_io_buffers(const struct ada_wal_io *io, uint32_t *made, uint32_t *free_now);
/* Bytes of the recent-event windows finished compact files left for the
 * next ones to reuse (at most WAL_RECENT_SPARES, 16 MiB in all). */
uint64_t ada_wal_io_spare_bytes(const struct ada_wal_io *io);
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
	/* Under a disk budget, the smallest step a file grows by once the
	 * budget is nearly used (grow.c wal_room_step): what it has allocated
	 * and not written yet stays about that; 0 = whole segments always. */
	uint64_t near_budget_step;
	struct ada_flush_policy flush;
	/* The index encoding: ATF v2 (32-byte events) or the compact index
	 * (ATC1, cidx.h) with blocks of cidx_block bytes (0: the default).
	 * cidx_recent: the detail lane reads the file's recent events
	 * (wal_file_event_read), so a compact file keeps the last
	 * cidx_recent of them in memory (rounded up to a power of two; 0:
	 * none, its reads answer -ENOENT). */
	uint8_t index_format; /* enum ada_index_format */
	uint32_t cidx_recent;
	uint32_t cidx_block;
};

/* Creates path (O_EXCL), writes the header placeholder, preallocates the
 * first segment. -EEXIST, -ENOSPC, -ENOMEM, other -errno from open. */
int ada_wal_file_open(struct ada_wal_io *io, const char *path, const struct ada_wal_file_opts *o,
                      struct ada_wal_file **out);
/* The same for name under the directory dirfd (fs.h: O_EXCL|O_NOFOLLOW,
 * 0600); path is only kept for messages. */
int ada_wal_file_openat(struct ada_wal_io *io, int dirfd, const char *name, const char *path,
                        const struct ada_wal_file_opts *o, struct ada_wal_file **out);
/* The same for a file the caller created already (empty, as
 * ada_fs_create() makes it: O_RDWR, 0600) and named name under dirfd:
 * consumes fd. On failure the file is unlinked and fd closed, as
 * ada_wal_file_openat() leaves nothing behind. -ENOSPC, -ENOMEM, -errno. */
int ada_wal_file_adopt(struct ada_wal_io *io, int fd, int dirfd, const char *name, const char *path,
                       const struct ada_wal_file_opts *o, struct ada_wal_file **out);
/* Space for up to max events in the staging buffer; returns how many fit
 * (>= 1 unless the file failed: then 0) and sets *dst. */
size_t ada_wal_file_reserve(struct ada_wal_file *f, size_t max, struct atf_index_event **dst);
/* The same for a chunk that goes mostly through the fused pass
 * (ada_wal_file_put_ring): a compact file's room may then be larger than
 * its chunk, up to ADA_WAL_RING_CHUNK events, where the allocation holds
 * them already; *dst holds *dst_cap of them (the general way's runs). */
#define ADA_WAL_RING_CHUNK 2048u
size_t ada_wal_file_reserve_ring(struct ada_wal_file *f, size_t max, struct atf_index_event **dst,
                                 size_t *dst_cap);
/* Publishes n events written at *dst of the last reserve: CRC, counts,
 * time range. Timestamps must be non-decreasing (the caller clamps). */
void ada_wal_file_commit(struct ada_wal_file *f, size_t n);
/* The drain's fused pass (cidx.h, ada_cidx_enc_put_ring()): codes ring
 * events src[0..n) of a reserve's room straight into a compact file's
 * staging buffer, where they would go through the reserve's chunk and a
 * commit; returns the events taken, 0 when the file takes none this way
 * (ATF v2, no block open, a failed file; the recent window the detail
 * lane reads is kept as a commit keeps it): the caller gives the next event the general way
 * (reserve's chunk, commit), which codes the same bytes. */
size_t ada_wal_file_put_ring(struct ada_wal_file *f, const struct atf_index_event *src, size_t n,
                             struct ada_cidx_ring_conv *cv, struct ada_cidx_calls *calls);
/* Whether a compact file fills its recent window (opts.cidx_recent) with
 * the events it takes from here on: the drain turns it off while the
 * detail lane is unlikely to read them soon (no trigger armed, no window
 * open) and on again between two takes. The window's reach is the same
 * either way: an event not kept is read back by decoding its block
 * (wal_file_event_read), only slower. On from the file's start; a no-op
 * without a window. */
void ada_wal_file_keep_recent(struct ada_wal_file *f, bool on);
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
/* Bytes of the file written so far (header and events, staged ones
 * included; not the preallocated tail): what its events cost on disk. */
uint64_t ada_wal_file_bytes(const struct ada_wal_file *f);
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
	uint8_t encoding; /* enum ada_index_format: how its events are written */
};
/* "atf" or "compact" (the manifests' name of an encoding). */
const char *ada_index_format_name(uint8_t format);
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

/* The same in steps (`ada recover` appends as it drains an arena): */
struct ada_wal_scan {
	uint64_t events, t0, t1;
	uint32_t crc;
};
/* An index file opened for finalizing: its header and what its events
 * section holds (scanned, or from the footer when already final). A
 * compact file (ATC1) is resumed after its whole blocks instead; finish
 * frees what scan took for it (and a failed scan frees it itself). */
struct wal_cidx_disk;
struct ada_wal_disk_file {
	int fd;
	struct atf_index_header h;
	struct ada_wal_scan s;
	uint64_t size;
	bool final;
	struct wal_cidx_disk *cx; /* a compact file's encoder (finalize_cidx.c) */
};
/* Scans the index file on fd (not consumed). 0, -EPROTO (not an index
 * file), -errno. */
int ada_wal_disk_scan(int fd, struct ada_wal_disk_file *df);
/* Appends n events (timestamps clamped to stay non-decreasing). 0 or -errno. */
int ada_wal_disk_append(struct ada_wal_disk_file *df, const struct atf_index_event *ev, size_t n);
/* Writes footer and header unless the file was final and nothing was
 * appended; leaves the descriptor open. */
int ada_wal_disk_finish(struct ada_wal_disk_file *df, bool appended,
                        struct ada_wal_file_summary *sum);
/* A compact file only: index event index_seq links detail event
 * detail_seq in the tail finish writes (recovery re-adds the links of
 * the detail file; an unfinished compact file has none on disk).
 * 0, -ERANGE, -ENOMEM, -EPROTO (an ATF v2 file: patch it in place). */
int ada_wal_disk_link(struct ada_wal_disk_file *df, uint64_t index_seq, uint32_t detail_seq);
/* A compact file only: the caller gives every link again (from the
 * detail file, the link log) -- those in a finished file's table are
 * dropped -- and the final header says has_detail_file. */
void ada_wal_disk_relink(struct ada_wal_disk_file *df);

/* ---- what the recorder's detail lane and recovery use ------------------- */

/* Index event i of the file (0-based, committed): from the staging
 * buffer, a held one, a buffer in flight, the disk window (wal_dwin_event:
 * durable events, with the links not written back yet) or the disk. 0,
 * -ENOENT (not committed), -EIO (its write failed), -errno. A compact
 * file answers from its recent window (opts.cidx_recent), which keeps
 * what the detail lane checks: the time, function, kind and link exactly,
 * thread_id the file's, call_depth 0; an event of its reach the drain did
 * not keep (ada_wal_file_keep_recent) is decoded from its block, the same
 * fields; -ENOENT for an older event. */
int wal_file_event_read(struct ada_wal_file *f, uint64_t i, struct atf_index_event *out);
/* Sets event i's detail_seq from ATF_NO_DETAIL to v and folds the change
 * into the file's running CRC-32 (zlib's crc32 is affine: a 4-byte change
 * d at offset k of L bytes changes the CRC by crc32_combine(lin(d), 0,
 * L - k - 4)). Where the event is: staging buffer or a held one
 * (wal_file_hold) -> patched in memory; write in flight -> queued,
 * written when the write completes (before finalize writes the footer);
 * durable (wal_dwin_event) -> patched in the disk window, written back
 * with its neighbours' (wal_dwin_flush); any other completed write (one
 * that completed before an earlier one, or the window could not be read)
 * -> pwrite now. 0 or -errno. */
int wal_file_patch_detail_seq(struct ada_wal_file *f, uint64_t i, uint32_t v);
/* The most the next wal_file_patch_detail_seq() adds to
 * ada_wal_file_disk_bytes(): a compact file's link table grows its
 * allocation a step at a time (0, or one step); an ATF v2 file's link is
 * patched in place (0). A writer under a disk budget pays it with the
 * record it links. */
uint64_t ada_wal_file_link_room(const struct ada_wal_file *f);
/* Takes a link back: event i's detail_seq from v (its link) to
 * ATF_NO_DETAIL, where the event is, as wal_file_patch_detail_seq sets it.
 * For a detail file cut short by a failed write. 0 or -errno. */
int wal_file_unlink_detail(struct ada_wal_file *f, uint64_t i, uint32_t v);
/* Every link of f to a detail event at or past detail_seq, taken back: a
 * compact file drops them from its link table (memory until finalize);
 * an ATF v2 file is read event by event from the start (a rare path: a
 * detail file that could keep none of its records), and each found
 * unlinked. Returns the links taken back, or -errno. */
int64_t ada_wal_file_unlink_detail_from(struct ada_wal_file *f, uint32_t detail_seq);
/* The file is compact (the encoder keeps its links until finalize). */
bool ada_wal_file_is_compact(const struct ada_wal_file *f);

/* Writes f's patches in the window back (one pwrite) and keeps the span
 * cached, clean. A write-back that fails is retried one patch at a time;
 * each that fails again is lost: counted in patch_failed, its CRC change
 * taken back (the file keeps "no detail" there, and its CRC says so),
 * and the window dropped. 0, or the first -errno of a lost patch. Called
 * at the end of each wal_detail_persist (which counts the lost ones as
 * unlinked) and by finalize; a recorder killed before it leaves those
 * links unset, which ada recover restores (links_restored). */
int wal_dwin_flush(struct ada_wal_file *f);

/* While on, the buffers that fill up (and ada_wal_file_submit's) are
 * held back from the kernel, in order, instead of written at once;
 * turning it off writes them. --detail always holds a thread's file from
 * its take to the detail records' persist in the same pass, so the
 * detail_seq of the events just taken are patched in memory, not by one
 * pwrite each once their write completed. At most half the io's buffers
 * are held (past it the oldest goes), and a buffer shortage writes them
 * (wal_buf_get), so holding never starves the pool. Finalize ends it. */
void wal_file_hold(struct ada_wal_file *f, bool on);

/* The file's final header will say has_detail_file; the placeholder on
 * disk says so at once (recovery keeps it). */
void wal_file_set_has_detail(struct ada_wal_file *f);
/* The CRC change of a 4-byte XOR difference d at events-section offset k
 * when the CRC covers len bytes (exported for the unit test). */
uint32_t wal_crc32_patch_delta(uint32_t d, uint64_t k, uint64_t len);
/* detail_seq links of f lost to failed writes so far (the persist counts
 * its share as unlinked). */
uint64_t ada_wal_file_patch_failed(const struct ada_wal_file *f);
/* The index file's header placeholder and its final header and footer. */
void wal_fill_header(struct atf_index_header *h, uint32_t tid, uint8_t arch, uint8_t clock);

void wal_fill_final(struct atf_index_header *h, struct atf_index_footer *ft,
                    const struct ada_wal_file_summary *s);
int wal_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* The architecture index files are written for (ATF_ARCH_*). */
#if defined(__x86_64__)
#define WAL_ARCH ATF_ARCH_X86_64
#else
#define WAL_ARCH ATF_ARCH_ARM64
#endif

#endif
