/* ada wal: private declarations shared by the files of src/wal. */
#ifndef ADA_WAL_INTERNAL_H
#define ADA_WAL_INTERNAL_H

#include <jansson.h>
#include <liburing.h>
#include <pthread.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "wal.h"

struct ada_wal_file;

struct wal_buf {
	struct wal_buf *next; /* free list */
	struct ada_wal_file *f;
	uint64_t off;              /* file offset of data[0] */
	uint32_t len;              /* bytes staged */
	uint32_t done;             /* bytes the kernel already wrote (short writes) */
	uint64_t first_ts;         /* BOOTTIME ns of the first event: latency */
	uint64_t staged_at;        /* CLOCK_MONOTONIC ns when staging began */
	uint64_t ev_end;           /* file event count at the end of this buffer */
	struct wal_buf *fifo_next; /* the file's writes in flight, in order */
	bool complete;
	uint8_t *data;
};

struct ada_wal_io {
	struct io_uring ring;
	uint32_t qd;
	uint32_t buffer_bytes;
	uint32_t max_buffers;
	uint32_t n_buffers;
	uint64_t stage_ns;
	uint32_t inflight; /* SQEs submitted and not reaped */
	bool disk_full;
	struct wal_buf *free;
	struct ada_wal_file *stage_head; /* files holding a staging buffer */
	struct ada_wal_file *files;      /* every open file */
	struct ada_lat_hist lat;
	uint64_t bytes_written;
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
	uint32_t segments;
	uint32_t crc;
	uint64_t events, t_start, t_end, lost;
	struct wal_buf *cur;
	struct wal_buf *fifo_head, *fifo_tail; /* submitted, in file order */
	uint64_t durable;                      /* events whose writes completed, in order */
	uint32_t inflight, sync_inflight;
	int error;
	bool full, staged;
	struct ada_wal_file *stage_prev, *stage_next;
	struct ada_wal_file *file_prev, *file_next;
};

void ada_wal_file_discard(struct ada_wal_file *f, size_t n);
void wal_fill_header(struct atf_index_header *h, uint32_t tid, uint8_t arch, uint8_t clock);
void wal_fill_final(struct atf_index_header *h, struct atf_index_footer *ft,
                    const struct ada_wal_file_summary *s);
int wal_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* CRC-32 as zlib's crc32() computes it (errata 3). libdeflate's is the
 * same function, PCLMUL-accelerated (~16 GB/s here against ~1.3 GB/s for
 * zlib 1.2.13): at 60 M events/s the CRC alone would otherwise need more
 * than the drain's whole core. zlib is the fallback. */
#ifdef ADA_HAVE_LIBDEFLATE
#include <libdeflate.h>
static inline uint32_t wal_crc32(uint32_t crc, const void *p, size_t n)
{
	return libdeflate_crc32(crc, p, n);
}
#else
#include <zlib.h>
static inline uint32_t wal_crc32(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = (uint32_t)crc32(crc, b, k);
		b += k;
		n -= k;
	}
	return crc;
}
#endif

/* mkdir -p for one level below an existing directory; EEXIST is fine. */
int wal_mkdir(const char *path);

/* ---- recorder ---- */

struct ada_arena;

/* One retired-or-kept generation index.g<G>.atf of a thread. */
struct wal_gen {
	struct wal_thread *t;
	uint32_t g;
	uint64_t bytes, events, first_seq, t0, t1;
};

/* One thread_K of one process. */
struct wal_thread {
	struct wal_proc *p;
	uint32_t seq, tid, slot;
	char *dir;
	struct ada_wal_file *f; /* NULL once finalized */
	uint64_t last_ts;       /* output timestamps never go back */
	uint64_t pending;       /* ring events taken (staged or lost), not released */
	uint64_t file_released; /* events of the current file released */
	uint64_t lost_pending;  /* lost events among pending (always the last) */
	uint64_t ring_next;     /* ring position of the next event to take */
	uint32_t slot_gen;
	uint64_t base_seq; /* global index_seq of the current file's event 0 */
	uint32_t next_gen;
	struct wal_gen *gens; /* kept generations, oldest first */
	size_t ngens, capgens;
	uint64_t retired_events, retired_bytes;
	struct ada_wal_file_summary last; /* of the current file once final */
	uint64_t lost;
	bool done;
};

/* One traced process (one arena, one pid_N directory). */
struct wal_proc {
	pid_t pid;
	char *dir;
	char *arena_path;
	struct ada_arena *arena;
	uint32_t max_threads;
	uint64_t ring_events; /* index ring capacity per thread */
	struct wal_thread **by_slot;
	struct wal_thread **threads;
	size_t nthreads, capthreads;
	bool reaped, gone, finished, our_child;
	int pidfd; /* -1 unless it is not our child */
	int wstatus;
	uint64_t events, events_at_tick;
	uint64_t drops_at_tick[2][4];
	uint32_t fill_max;
	uint64_t drops[2][4]; /* [lane][reason], last read from the arena */
};

struct ada_recorder {
	struct ada_recorder_opts o;
	char *out_dir, *session_dir, *arena_dir, *ring_config;
	char **argv_copy;
	struct ada_wal_io *io;
	struct ada_tsc_clock clk;
	bool use_tsc, started, discarded;
	pthread_t thr;
	pid_t main_pid;
	int inotify_fd;
	struct wal_proc **procs;
	size_t nprocs, capprocs;
	/* pids reaped before their arena showed up */
	pid_t *early_pid;
	int *early_status;
	size_t nearly, capearly;
	bool main_reaped, no_children;
	int main_status;
	uint64_t gen_bytes;   /* rotate a thread's file past this (budget) */
	uint64_t disk_closed; /* bytes of finalized files still on disk */
	bool budget_warned;
	uint64_t start_ns, end_ns;
	uint64_t last_tick_ns, last_anchor_ns, last_reclaim_ns;
	uint64_t events_total, lost_total;
	int error;
	json_t *warnings;
};

uint64_t wal_proc_drops(const struct wal_proc *p);
int wal_manifest_write(struct ada_recorder *r, struct wal_proc *p, const char *state);
/* Atomically replaces dir/manifest.json (temp file + rename). */
int wal_json_write_atomic(const char *dir, json_t *root);

#if defined(__x86_64__)
#define WAL_ARCH ATF_ARCH_X86_64
#else
#define WAL_ARCH ATF_ARCH_ARM64
#endif

#endif
