/*
 * The reading commands on several CPUs: an ordered pool of worker threads
 * (rd_par) and, on it, a walk of a pid's threads cut in pieces (rd_pwalk).
 *
 * rd_par: the caller submits jobs in order; a few workers run them, any
 * order, any number at once; the caller takes them back in the order it
 * submitted them, each once its run is over. Everything a job's run wrote
 * is the taker's to read once rd_par_take() has given it back (the pool's
 * mutex orders the two). The caller bounds the jobs in flight.
 *
 * rd_pwalk: every wanted thread of a pid, its generations cut in pieces
 * of about RD_PWALK_PIECE events (a compact file's at block boundaries:
 * each decodes alone). A worker walks a piece with a walker of its own
 * (ada_frames_part_begin()), its frames ended into an accumulator the
 * command makes for the piece; in order, the calling thread stitches
 * each piece onto the thread's walker (ada_frames_stitch(): the frames
 * the piece could not end alone end there, through the command's own
 * leave()) and hands the piece's accumulator to the command to add to its
 * totals. What a command computes must not depend on the order frames
 * end in (sums, histograms, min/max): then its output is the one walk's,
 * byte for byte. A piece that cannot be stitched (ada_frames_stitch()'s
 * -EAGAIN) is walked again by the calling thread on the whole walker, its
 * accumulator dropped; a compact block that does not decode ends its
 * generation's events as one walk does (later pieces of it dropped).
 * Memory: the pieces in flight (3 per worker), each its walker's stack,
 * its ops and its accumulator, and the threads they belong to held open.
 * Files are opened and closed in thread order, by the calling thread, so
 * what they say on stderr is in that order, but a later thread's open may
 * speak before an earlier thread's close.
 */
#ifndef ADA_TOOLS_READ_PAR_H
#define ADA_TOOLS_READ_PAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "read.h"

/* How many threads the reading commands use: ADA_READ_THREADS (1: none
 * but the command's own, the one walk) when set to 1..64, else the online
 * CPUs, at most RD_PAR_MAX. A bad value is said once and ignored. */
#define RD_PAR_MAX 8u
unsigned rd_par_threads(void);

struct rd_par_job {
	struct rd_par_job *next; /* the pool's */
	bool done;               /* the pool's */
};
typedef void (*rd_par_fn)(struct rd_par_job *job);
struct rd_par;

/* n workers (>= 1) running run. -errno (pthread_create's, -ENOMEM). */
int rd_par_new(unsigned n, rd_par_fn run, struct rd_par **out);
/* Queues job (the caller's until rd_par_take() gives it back). */
void rd_par_submit(struct rd_par *p, struct rd_par_job *job);
/* The oldest job submitted and not taken, once run; NULL when none. */
struct rd_par_job *rd_par_take(struct rd_par *p);
/* Jobs submitted and not taken yet. */
size_t rd_par_pending(const struct rd_par *p);
/* Joins the workers (every job taken first); NULL is a no-op. */
void rd_par_free(struct rd_par *p);

/* ------------------------------------------------------------ pwalk */

/* Events a piece; ADA_READ_PIECE=N (1..2^30) sets another, for the tests
 * that cut a small session in many pieces. */
#define RD_PWALK_PIECE (1u << 20)

/* One thread being walked. */
struct rd_pwalk_thread {
	struct ada_atf_thread *t;
	size_t i;     /* its position in the pid's thread_dirs */
	uint32_t tid; /* rd_thread_tid() */
};

struct rd_pwalk_ops {
	/* A piece's accumulator for thread th (called by a worker: it may
	 * read the command's options, nothing it changes); NULL: -ENOMEM. */
	void *(*acc_new)(void *cmd, const struct rd_pwalk_thread *th);
	/* The piece walker's callbacks, their ctx the accumulator. */
	struct ada_frames_ops piece;
	/* Adds acc to the command's totals: 0 or -errno. */
	int (*acc_merge)(void *cmd, void *acc);
	void (*acc_free)(void *acc); /* NULL is a no-op */
	/* th begins (its first piece is about to be stitched), and ends (its
	 * walker finished, before its files are closed). */
	void (*thread_begin)(void *cmd, const struct rd_pwalk_thread *th);
	void (*thread_end)(void *cmd, const struct rd_pwalk_thread *th);
};

/* The events in [from, to] of every thread of rp the filter f wants (no
 * --function or --depth: those walk serially), through w (the command's
 * walker, its ctx cmd, finished after each thread) and ops, on nthreads
 * threads (>= 2). 0, or the first -errno of a thread's open or of the
 * pool (the walk stops there); 1 when no thread could be started
 * (nothing walked: the caller walks on its own). The command's own
 * errors are its own. */
int rd_pwalk_pid(struct rd_pid *rp, bool (*wants)(const void *f, uint32_t thread), const void *f,
                 uint64_t from, uint64_t to, struct ada_frames *w, const struct rd_pwalk_ops *ops,
                 void *cmd, unsigned nthreads);

#endif
