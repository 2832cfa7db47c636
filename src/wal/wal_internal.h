/* ada wal: private declarations shared by the files of src/wal. */
#ifndef ADA_WAL_INTERNAL_H
#define ADA_WAL_INTERNAL_H

#include <jansson.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "wal.h"
#include "wal_crc.h"

struct ada_wal_file;

struct wal_buf {
	struct wal_buf *next; /* free list, or the file's held list (wal_file_hold) */
	struct ada_wal_file *f;
	uint64_t off; /* file offset of data[0] */
	/* bytes staged; once the buffer leaves staging on a direct file, the
	 * whole 4 KiB blocks only: the partial last block went to the file's
	 * carry, which the buffer's data then answers no lookup for */
	uint32_t len;
	uint32_t wlen;      /* bytes the write covers: len, or len + the zero-padded last block */
	uint32_t done;      /* bytes the kernel already wrote (short writes) */
	uint64_t first_ts;  /* BOOTTIME ns of the first event: latency */
	uint64_t staged_at; /* CLOCK_MONOTONIC ns when staging began */
	uint64_t ev_end;    /* file event count at the end of this buffer */
	struct wal_buf *fifo_next; /* the file's writes in flight, in order */
	bool sent;                 /* handed to the kernel (not staging, not held) */
	bool complete;
	bool dontcache; /* submitted with RWF_DONTCACHE */
	bool direct;    /* submitted through the file's O_DIRECT descriptor */
	bool pad;       /* its write ends in a partial block, zero-padded (wlen > len) */
	uint8_t *data;
};

/* The disk window's size: 2 048 events, so one pread and one pwrite
 * serve that many links where each cost one of each. */
#define WAL_DWIN_BYTES (64u * 1024u)
#define WAL_DWIN_MARK_WORDS (WAL_DWIN_BYTES / ATF_INDEX_EVENT_SIZE / 64u)

/* Recent windows of finished compact files kept for the next files
 * (segment_cidx.c): at most this many, of at most WAL_RECENT_SPARE_BYTES
 * in all. */
#define WAL_RECENT_SPARES 32u
#define WAL_RECENT_SPARE_BYTES (16ull << 20)

struct ada_cidx_recent;
struct wal_cidx_rlink;

struct wal_recent_spare {
	struct ada_cidx_recent *recent;
	struct wal_cidx_rlink *rlink;
	uint64_t n; /* events of each array */
};

struct ada_wal_io {
	struct io_uring ring;
	uint32_t qd;
	uint32_t buffer_bytes;
	uint32_t max_buffers;
	uint32_t n_buffers;
	/* The free list's length, and the least it was since the last
	 * ada_wal_io_trim(): that many buffers were not needed meanwhile. */
	uint32_t n_free, free_low;
	uint64_t stage_ns;
	uint32_t inflight; /* SQEs submitted and not reaped */
	bool disk_full;
	bool dontcache;             /* writes carry RWF_DONTCACHE (segment.c) */
	uint32_t dontcache_refused; /* the kernel said no: plain writes since */
	struct wal_buf *free;
	struct ada_wal_file *stage_head; /* files holding a staging buffer */
	struct ada_wal_file *files;      /* every open file */
	uint64_t alloc_open;             /* sum of their alloc (the disk budget's share) */
	uint64_t ahead_room; /* budget bytes segments allocated ahead may take (wal_grow_ahead) */
	struct ada_lat_hist lat;
	uint64_t bytes_written;
	uint64_t final_bytes, final_events; /* of the files finalized (ada_wal_io_final) */
	uint32_t nheld;                     /* buffers held back over every file (wal_file_hold) */
	/* O_DIRECT index files (segment.c, "Direct writes"): wanted (not
	 * ADA_WAL_DIRECT=0), files opened so, files that fell back to
	 * buffered writes (at open or at a refused write) and the first
	 * reason why. */
	bool direct;
	bool uring_tmpfs; /* ADA_WAL_URING_TMPFS=1: tmpfs files' writes through io_uring too */
	/* ADA_WAL_CX_URING=1: compact files on disk through io_uring with
	 * RWF_DONTCACHE, the path before (to compare) */
	bool cx_uring;
	uint32_t inline_files; /* files written in the drain thread (inline_write) */
	bool direct_async;     /* direct writes carry IOSQE_ASYNC (ADA_WAL_DIRECT_ASYNC=0: not) */
	bool direct_compact;   /* compact files direct too (ADA_WAL_DIRECT=1, opts direct > 0) */
	uint32_t direct_files, direct_fallbacks;
	uint64_t links_failed; /* detail_seq links lost to failed writes, every file */
	char direct_reason[64];
	/* detail_seq patches' CRC changes not yet folded into their file's
	 * crc (wal_crcbat_add): the XOR differences at their events-section
	 * offsets k - crcbat_base, zeros elsewhere, touched span [crcbat_lo,
	 * crcbat_hi). One file's batch at a time (the drain owns the io);
	 * WAL_CRCBAT_CAP bytes, allocated at the first patch. */
	uint8_t *crcbat;
	struct ada_wal_file *crcbat_file; /* owner of the pending batch, or NULL */
	uint64_t crcbat_base, crcbat_lo, crcbat_hi;
	uint32_t crcbat_n;
	/* The disk window (dwin.c): WAL_DWIN_BYTES of one file's durable
	 * events, read with one pread, patched in memory, written back with
	 * one pwrite. One per io, owned by one file at a time (the drain
	 * persists one thread at a time), so its memory does not grow with
	 * the threads. */
	uint8_t *dwin;                            /* allocated at the first use */
	struct ada_wal_file *dwin_file;           /* whose bytes it holds, or NULL */
	uint64_t dwin_lo, dwin_hi;                /* the file range it holds */
	uint64_t dwin_dlo, dwin_dhi;              /* the range its patches changed */
	uint32_t dwin_npatch;                     /* patches not written back yet */
	uint64_t dwin_marks[WAL_DWIN_MARK_WORDS]; /* those patches' events (bits) */
	uint64_t dwin_fills, dwin_writebacks;     /* its preads and pwrites */
	uint64_t patch_spans; /* pwrites of queued patches, one per write's (wal_patches_apply) */
	/* Finished files' recent windows (segment_cidx.c, wal_cidx_spare_put):
	 * a new file takes one instead of having the heap map, fault in and
	 * unmap a window of its own as it grows (a thread per request made
	 * that most of the drain's work per thread). recent_gen names each
	 * file's links in a window it took, so the links of an earlier owner
	 * read as none. */
	struct wal_recent_spare recent_spare[WAL_RECENT_SPARES];
	uint32_t nrecent_spare;
	uint32_t recent_gen;
	uint64_t recent_reused; /* windows a new file took from the spares */
};

/* Where a detail_seq patch went (wal_file_patch_detail_seq): into a
 * buffer not yet written, queued behind a write in flight, pwrite to
 * the file, or into the disk window. */
enum wal_patch_way {
	WAL_PATCH_MEM,
	WAL_PATCH_QUEUED,
	WAL_PATCH_DISK,
	WAL_PATCH_WINDOW, /* into the disk window (dwin.c), written back later */
	WAL_PATCH_WAYS
};

struct ada_wal_file {
	struct ada_wal_io *io;
	struct ada_wal_file_opts opts;
	int fd;
	char *path;
	uint64_t end;           /* offset of the next event (committed end) */
	uint64_t alloc;         /* bytes allocated (file size while writing) */
	uint64_t submitted_end; /* end of the last buffer handed to the kernel */
	uint64_t flushed_end;   /* end of the last range a flush was asked for */
	uint64_t last_flush_ns;
	uint64_t bad_from; /* offset of the first failed write, or MAX */
	uint32_t segments; /* segments the events entered (the manifest's) */
	/* The next segment allocated ahead through io_uring (wal_grow_ahead):
	 * ext4's fallocate waits for every direct write in flight on the
	 * file, which on a slow or busy disk held the drain for seconds. */
	uint64_t grow_off, grow_len; /* the fallocate in flight: [off, off + len) */
	uint64_t ahead_start;        /* a segment allocated, not entered yet (0: none) */
	int grow_err;                /* its error: no more ahead of time */
	bool grow_inflight;
	uint32_t flushes, syncs; /* write-back requests, fdatasyncs (manifest) */
	uint32_t crc;
	uint64_t events, t_start, t_end, lost;
	struct wal_buf *cur;
	struct wal_buf *fifo_head, *fifo_tail; /* submitted, in file order */
	uint64_t durable;                      /* events whose writes completed, in order */
	uint32_t inflight, sync_inflight;
	int error;
	bool full, staged;
	bool has_detail; /* the final header gets has_detail_file (detail.atf exists) */
	/* wal_file_hold: full buffers kept back from the kernel, in file
	 * order (linked by next), until the hold ends. */
	bool hold;
	struct wal_buf *held_head, *held_tail;
	uint32_t nheld;
	/* Direct writes (segment.c): direct, the events' writes are O_DIRECT
	 * (fd_direct: the descriptor's O_DIRECT flag now; direct_used: it had
	 * direct writes, so buffered accesses wait for them). Every direct write covers whole 4 KiB
	 * blocks: a buffer leaving staging with a partial last block writes
	 * it zero-padded (pad) and copies it to carry, the start of the next
	 * staging buffer, which writes that block again -- never while the
	 * padded write is in flight (pad_inflight; later buffers wait on the
	 * held list). carry_dirty: patched after its padded write was formed
	 * (finalize writes it if no later buffer does). */
	bool direct, fd_direct, direct_used, carry_dirty, sending;
	/* inline_write: the writes are pwrite()s in the drain thread,
	 * completed at once (segment.c, wal_buf_write), not io_uring's
	 * worker's: on tmpfs unless ADA_WAL_URING_TMPFS=1 (io->uring_tmpfs;
	 * tmpfs says only what the file system is: grow.c keeps its steps
	 * small, direct.c takes no O_DIRECT there, whichever path writes), and a
	 * compact file on ext4 or xfs (cached: plain buffered writes, not
	 * RWF_DONTCACHE; each flush drops the pages the one before it wrote
	 * back, from dropped_end on: wal_drop_behind). */
	bool inline_write, tmpfs, cached;
	uint64_t dropped_end;
	uint8_t *carry;
	uint32_t carry_len;
	uint64_t carry_off;
	struct wal_buf *pad_inflight;
	/* detail_seq patches of events whose write is in flight: applied
	 * (pwrite) when that write completes (wal_file_patch_detail_seq). */
	struct wal_patch *patches;
	size_t npatch, cappatch;
	uint64_t patch_failed;             /* patches whose event never reached the file */
	uint64_t patch_by[WAL_PATCH_WAYS]; /* patches by where they went (enum wal_patch_way) */
	struct ada_wal_file *stage_prev, *stage_next;
	struct ada_wal_file *file_prev, *file_next;
	struct wal_cidx *cx; /* the compact encoder (segment_cidx.c), NULL: ATF v2 */
};

/* A detail_seq link that will never reach the file: the file's count
 * (the persist reports its share as unlinked) and the recorder's total
 * (manifest wal.links_failed), so a link lost outside a persist shows too. */
static inline void wal_link_failed(struct ada_wal_file *f)
{
	f->patch_failed++;
	f->io->links_failed++;
}

struct wal_patch {
	uint64_t off; /* file offset of the 4 bytes */
	uint32_t val;
	/* its write is done: it waits for the file's direct writes in flight
	 * (segment.c wal_patches_apply) */
	bool ready;
};

void ada_wal_file_discard(struct ada_wal_file *f, size_t n);

/* Shared by the writer's files (segment.c, grow.c, patch.c). */
#define WAL_MIN_SEGMENT (64u * 1024u)
/* A file grows one 4 KiB block at a time up to here (grow.c
 * wal_small_step): a short thread's file is never cut back by a block at
 * its end, and 10 000 threads alive at once (most of them short of
 * events) do not reserve 10 000 MiB of disk and of the --max-disk-mb
 * budget between them; the steps grow from there. */
#define WAL_FIRST_SEGMENT (64u * 1024u)
#define WAL_SECOND_END (1u << 20) /* the second segment fills up to 1 MiB */
/* A tmpfs file's steps stop doubling here (grow.c, wal_next_step): its
 * allocation is memory, and what the last step left unused the finalize's
 * ftruncate frees page by page in the drain thread. */
#define WAL_TMPFS_STEP (4u << 20)
#define WAL_DSEQ_OFF offsetof(struct atf_index_event, detail_seq)
#define WAL_BLOCK 4096u /* direct writes: offset and length in whole blocks of this */
/* The next submission entry: waits for completions while qd are in
 * flight, submits the queue when it has no free entry. */
struct io_uring_sqe *wal_sqe(struct ada_wal_io *io);
/* Queues a write-back request (sync_file_range) of what was submitted
 * since the last one or, full, an fdatasync after the writes queued. */
void wal_sync(struct ada_wal_file *f, bool full);
/* Sets f's descriptor to direct or buffered accesses. 0 or -errno. */
int wal_fd_mode(struct ada_wal_file *f, bool direct);
/* direct.c: O_DIRECT for f's events' writes where it is worth it and the
 * file system takes it (at open); f's writes buffered from now on, once
 * its direct writes in flight (but busy of them) are done; a buffer
 * leaving staging: its partial last block to the carry (pad: written
 * zero-padded too). */
void wal_direct_open(struct ada_wal_file *f);
void wal_direct_off(struct ada_wal_file *f, const char *why, uint32_t busy);
void wal_direct_cut(struct ada_wal_file *f, struct wal_buf *b, bool pad);
/* grow.c: grows the allocation so that need bytes (and the footer) fit
 * (0 or -errno); asks for the next segment ahead of time; the flush
 * policy's and --safe's step at a new segment. */
int wal_grow(struct ada_wal_file *f, uint64_t need);
/* wal_grow() in WAL_MIN_SEGMENT steps, no segment ahead: the room a
 * compact file's link table needs (segment_cidx.c wal_cidx_link), which
 * the disk budget pays record by record (ada_wal_file_link_room). */
int wal_grow_tail(struct ada_wal_file *f, uint64_t need);
void wal_grow_ahead(struct ada_wal_file *f, uint64_t need);
void wal_on_rotate(struct ada_wal_file *f);
/* The disk window (dwin.c). Event reads and patches of a file's durable
 * prefix -- [64, 64 + durable * 32), below bad_from: every write there
 * completed and its queued patches were applied, so no write of the
 * writer's is still to land there -- go through one cached span of the
 * file per io: a read or patch outside it writes the span back (if
 * patched) and reads the span around the event (WAL_DWIN_BYTES from its
 * 4 KiB page, clipped to the prefix); a patch inside only changes the
 * memory (its CRC change is batched as any patch's). Events past the
 * prefix are in the writer's buffers or go to the file directly.
 *
 * wal_dwin_event: the 32 bytes of the event at file offset off in the
 * window (moved there if needed), or NULL when it is not in the durable
 * prefix or the window cannot hold it (no memory, the pread failed):
 * then the caller reads or writes the file itself. */
uint8_t *wal_dwin_event(struct ada_wal_file *f, uint64_t off);
/* Marks the event at off (in the window: wal_dwin_event) as patched. */
void wal_dwin_mark(struct ada_wal_io *io, uint64_t off);
/* wal_dwin_flush, then f no longer owns the window (finalize: before the
 * CRC is read and the file cut). */
int wal_dwin_release(struct ada_wal_file *f);
/* Waits until none of f's direct writes is in flight (the last completion
 * writes its ready patches): before any buffered read or write of a file
 * that had direct writes (segment.c, "Direct writes"). */
void wal_file_quiesce(struct ada_wal_file *f);
/* Batched form of the above: queues the XOR difference d at events-section
 * offset k for f's CRC; wal_crcbat_fold folds every queued one at once
 * (one CRC over their span + one crc32_combine for the bytes after it,
 * instead of one crc32_combine per patch). The sum is exact whatever the
 * file's length did in between (the change of a difference D to the CRC
 * over L bytes is lin(D) carried over the bytes after it). Folded before
 * anything reads f->crc (finalize) and when the batch moves to another
 * file or would span too much (exported for the unit test). */
void wal_crcbat_add(struct ada_wal_file *f, uint64_t k, uint32_t d);
void wal_crcbat_fold(struct ada_wal_io *io);
/* The scratch's size and the span a batch may cover per queued patch
 * (beyond it the batch is folded first: a sparse batch would cost more
 * CRC bytes than the combines it saves). */
#define WAL_CRCBAT_CAP (1u << 20)
#define WAL_CRCBAT_PER 512u

/* segment.c, shared with segment_cidx.c: a buffer of the pool (NULL when
 * none can be had), making it f's staging buffer, ending its staging. */
struct wal_buf *wal_buf_get(struct ada_wal_io *io);
/* b back to the pool's free list. */
void wal_buf_put(struct ada_wal_io *io, struct wal_buf *b);
void wal_stage(struct ada_wal_file *f, struct wal_buf *b, uint64_t staged_at);
void wal_submit_cur_how(struct ada_wal_file *f, bool blocks_only);

/* The compact index lane (segment_cidx.c). A compact file's reserve hands
 * out its chunk of WAL_CIDX_CHUNK events; the recent window keeps the
 * last opts.cidx_recent events for the detail persist's reads. */
#define WAL_CIDX_CHUNK 256u
/* f->cx from f->opts: 0, -ENOMEM, -EINVAL (block size). */
int wal_cidx_new(struct ada_wal_file *f);
void wal_cidx_free(struct ada_wal_file *f);
/* Frees the io's spare recent windows (ada_wal_io_free). */
void wal_cidx_spares_free(struct ada_wal_io *io);
/* The 64-byte header written first: ATF v2's or the compact one. */
void wal_header_placeholder(const struct ada_wal_file *f, uint8_t out[ATF_HEADER_SIZE]);
/* Most file bytes n events may take coded, their links and block table
 * entries at finish included; the events bytes surely hold. */
uint64_t wal_cidx_bound(size_t n);
size_t wal_cidx_fit(uint64_t bytes);
/* wal_cidx_bound() of c's next n events: its block openings carry the
 * frames known now and one more an event at most (ada_cidx_enc_frames),
 * not ADA_CIDX_FRAMES_MAX (1.7 KiB of openings a reserve). */
uint64_t wal_cidx_bound_at(const struct wal_cidx *c, size_t n);
/* The events a reserve of a compact file below WAL_FIRST_SEGMENT takes
 * (n wanted): as many as fit in its allocation at their longest
 * (wal_cidx_bound_at), when at least WAL_CIDX_SMALL_LEAST (or n) do;
 * else that many, for which it grows (a block). The bound takes ~63
 * bytes an event where a short thread's take 3-5: a reserve of all it
 * wants allocated blocks it never wrote, and cutting them off at its end
 * is what a short thread cost most on ext4 (grow.c wal_small_step). */
size_t wal_cidx_small(const struct ada_wal_file *f, size_t n);
#define WAL_CIDX_SMALL_LEAST 4u
/* Most bytes finalize writes past the coded events so far (the link
 * table, block table and footer): kept allocated ahead with the events,
 * so that a finished file is never larger than what the budget counted. */
uint64_t wal_cidx_tail(const struct ada_wal_file *f);
/* ada_wal_file_link_room() of a compact file. */
uint64_t wal_cidx_link_room(const struct ada_wal_file *f);
struct atf_index_event *wal_cidx_chunk(struct ada_wal_file *f);
/* Codes the chunk's first n events into the staging buffers; false when
 * some were lost (no buffer: counted in f->lost, the file is full). */
bool wal_cidx_commit(struct ada_wal_file *f, size_t n, uint64_t staged_at);
/* Seals the block open in f->cur (before the buffer leaves staging). */
void wal_cidx_seal(struct ada_wal_file *f);
/* The file's bytes [off, off + len) as written or to be written: from
 * the one buffer that holds them, else the file (its writes in flight
 * waited for) with what the buffers hold on top. 0, -EIO (a failed
 * write covers them), -errno. */
int wal_file_read_span(struct ada_wal_file *f, uint64_t off, uint32_t len, uint8_t *dst);
int wal_cidx_event_read(struct ada_wal_file *f, uint64_t i, struct atf_index_event *out);
int wal_cidx_link(struct ada_wal_file *f, uint64_t i, uint32_t v);
/* ada_wal_file_unlink_detail_from() of a compact file: the links dropped. */
uint64_t wal_cidx_unlink_from(struct ada_wal_file *f, uint32_t detail_seq);
/* Finish (tail at the encoder's offset), header, cut, --safe's sync. */
int wal_cidx_write_final(struct ada_wal_file *f, struct ada_wal_file_summary *s);
/* finalize_cidx.c: the ada_wal_disk_* steps of a compact file. */
int wal_cidx_disk_scan(struct ada_wal_disk_file *df);
void wal_cidx_disk_free(struct ada_wal_disk_file *df);
int wal_cidx_disk_append(struct ada_wal_disk_file *df, const struct atf_index_event *ev, size_t n);
int wal_cidx_disk_link(struct ada_wal_disk_file *df, uint64_t index_seq, uint32_t detail_seq);
void wal_cidx_disk_relink(struct ada_wal_disk_file *df);
int wal_cidx_disk_finish(struct ada_wal_disk_file *df, bool appended,
                         struct ada_wal_file_summary *sum);

#endif
