/*
 * Spare thread directories (spares.c): thread_K/ with its empty
 * index.atf made ahead of need by a thread of their own, moved into
 * place by the drain with a rename (no inode allocated on the drain).
 * Private to the recorder module.
 */
#ifndef ADA_RECORDER_SPARES_H
#define ADA_RECORDER_SPARES_H

#include <stdbool.h>
#include <stdint.h>

/* Under the session directory while recording; removed at the end, and
 * by `ada recover` after a killed recorder (wal_spares_sweep). */
#define WAL_SPARES_DIR ".thread_spares"

struct wal_spares;

/* What the pool did (the manifest's wal.thread_spares). Every thread that
 * got no spare had its files made by the drain as before: nothing is
 * lost, each case is counted. */
struct wal_spares_counts {
	uint64_t made;        /* spares made by the maker */
	uint64_t used;        /* threads whose thread_K/ was a spare moved into place */
	uint64_t empty;       /* threads that found no spare ready (made in the drain) */
	uint64_t taken_names; /* moves refused: thread_K existed (the spare kept) */
	uint64_t move_failed; /* moves refused for another reason (the spare removed) */
	int move_err;         /* the first such reason, -errno */
	uint64_t make_failed; /* the maker stopped: a spare could not be made */
	int make_err;         /* why, -errno */
	unsigned removed;     /* spares removed at the end */
	unsigned left;        /* entries under WAL_SPARES_DIR not recognised, left */
};

/* Starts the maker thread, which makes WAL_SPARES_DIR under session_fd
 * (borrowed: it must outlive the pool) and keeps spares ready in it.
 * 0, -ENOMEM, -errno of pthread_create. */
int wal_spares_new(int session_fd, struct wal_spares **out);

/* Drain thread: moves a ready spare to name under to_dir_fd (renameat2
 * with RENAME_NOREPLACE) and hands over its directory and index.atf
 * descriptors (the caller owns them: index.atf is empty, 0600, O_RDWR).
 * -ENODEV (s NULL or the pool off), -EAGAIN (none ready), or the move's
 * -errno (-EEXIST: name is taken; nothing was moved). */
int wal_spares_use(struct wal_spares *s, int to_dir_fd, const char *name, int *dir_fd,
                   int *file_fd);

/* Stops the maker, closes the spares left and removes them and
 * WAL_SPARES_DIR. Idempotent. */
void wal_spares_stop(struct wal_spares *s);

/* A consistent copy of the counts (any thread); zeros for NULL. */
void wal_spares_counts(struct wal_spares *s, struct wal_spares_counts *out);

/* Stops it (wal_spares_stop) and frees it; NULL is a no-op. */
void wal_spares_free(struct wal_spares *s);

/* Removes WAL_SPARES_DIR under session_fd with the spares in it: each
 * s<N> that is a directory of the user's holding nothing but an empty
 * regular index.atf; nothing is followed, anything else stays and counts
 * in *kept (the directory then stays too). For `ada recover`. */
void wal_spares_sweep(int session_fd, unsigned *removed, unsigned *kept);

#endif
