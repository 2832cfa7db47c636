/*
 * ada ring: the recording's shared-memory ceiling (shm_budget.c), a part
 * of ring.h's front door (ring.h includes it): the budget page in the
 * arena directory that every process of the recording reserves its arena
 * in, what a process does when its arena does not fit (smaller detail
 * rings, a wait, then untraced), and the sentences that say why.
 *
 * Threads: any process of the recording reserves (its set-up path, not
 * hook context); the recorder's drain releases and reads; `ada status`
 * reads. The page is the target's to write too: its counts are numbers
 * to report, never trusted for memory safety.
 */
#ifndef ADA_RING_SHM_H
#define ADA_RING_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ada_arena_config;

/* ---- the recording's shared-memory ceiling (shm_budget.c) ---- */

/* <arena dir>/shm.budget: the sum of the full sizes of the arenas that
 * exist at once, against a ceiling. A process reserves its arena's size
 * before creating it (ada_producer_init_from_env); over the ceiling it is
 * refused (-EDQUOT, counted) and runs untraced. The recorder releases an
 * arena's size when it removes the arena. */
#define ADA_SHM_BUDGET_NAME "shm.budget"
struct ada_shm_budget;
struct ada_shm_budget_view {
	uint64_t ceiling;  /* 0: none */
	uint64_t reserved; /* bytes of the arenas that exist now */
	uint64_t peak;     /* the most reserved at once */
	/* refused: their arenas with the smallest detail rings, summed */
	uint64_t refused_procs, refused_bytes;
	uint64_t arenas;
	uint64_t waited_procs; /* waited for room (up to 1 s) before they got it */
	/* Given smaller detail rings than the recording's (its whole arena did
	 * not fit); the smallest ring given (bytes); the last one's whole
	 * arena and the room there was under the ceiling. */
	uint64_t reduced_procs, reduced_detail_min, reduced_need, reduced_room;
	/* The last refused process's smallest arena, and the room there was. */
	uint64_t refused_need, refused_room;
	bool ceiling_from_fs; /* derived from the arena file system's free space */
	/* Could not make their arena for another reason (ada_shm_budget_failed):
	 * untraced too; the first one's errno (positive). */
	uint64_t failed_procs;
	uint32_t failed_errno;
};
/* Recorder: creates dirfd/shm.budget (O_EXCL|O_NOFOLLOW, 0600). */
int ada_shm_budget_create(int dirfd, uint64_t ceiling, struct ada_shm_budget **out);
/* Maps an existing budget file; -EPROTO when it is not one. */
int ada_shm_budget_open(const char *path, struct ada_shm_budget **out);
void ada_shm_budget_close(struct ada_shm_budget *b); /* NULL is a no-op */
/* 0, or -EDQUOT (counted as refused) when bytes more would pass the ceiling. */
int ada_shm_budget_take(struct ada_shm_budget *b, uint64_t bytes);
/* A process about to create its arena of *cfg reserves its size (*bytes,
 * set either way) in the recording's budget b (NULL: no ceiling, 0).
 * When the whole arena does not fit now, its detail rings are halved
 * until it does, down to ADA_DETAIL_MIN_BYTES (cfg->detail_bytes is
 * lowered; counted as reduced): the index lane is the promise, the detail
 * windows best effort. When not even that fits, it waits up to 1 s for
 * the drain to free room (counted as waited), then -EDQUOT (counted as
 * refused: the process runs untraced). -ESRCH: the recording ended. */
int ada_shm_budget_take_arena(struct ada_shm_budget *b, struct ada_arena_config *cfg,
                              uint64_t *bytes);
/* Recorder: the ceiling is the default one, derived from the free space of
 * the arena directory's file system (the sentences below say /dev/shm). */
void ada_shm_budget_set_from_fs(struct ada_shm_budget *b);
/* One plain sentence (no "ada: ", no newline) into buf saying why the
 * processes v counts were not recorded (*_untraced) or were recorded with
 * smaller detail rings (*_reduced), what their arena needed, the room
 * there was and what to do; false (buf "") when v counts none. */
bool ada_shm_budget_untraced_why(const struct ada_shm_budget_view *v, char *buf, size_t cap);
bool ada_shm_budget_reduced_why(const struct ada_shm_budget_view *v, char *buf, size_t cap);
/* A process of the recording could not make its arena for another reason
 * than the ceiling (err, -errno: no room in the file system, no file
 * descriptor, no memory...): it runs untraced, counted here with the
 * first reason. b NULL: a no-op. */
void ada_shm_budget_failed(struct ada_shm_budget *b, int err);
/* The sentence for those (*_untraced's shape); false when none. */
bool ada_shm_budget_failed_why(const struct ada_shm_budget_view *v, char *buf, size_t cap);
void ada_shm_budget_release(struct ada_shm_budget *b, uint64_t bytes);
/* Producer: what ada_shm_budget_take_arena() reserved (bytes) given back
 * by a process that then could not make its arena; reduced: it was given
 * smaller detail rings, no longer counted among those recorded so (it is
 * among the failed, ada_shm_budget_failed, unless the recording ended). */
void ada_shm_budget_untake(struct ada_shm_budget *b, uint64_t bytes, bool reduced);
/* Producer: bytes more for an arena that exists already (a spill slot's
 * first claim): 0, or -EDQUOT over the ceiling (not a refused process:
 * the thread's events are counted as no_slot drops). No wait. */
int ada_shm_budget_grow(struct ada_shm_budget *b, uint64_t bytes);
/* Bytes ada_shm_budget_grow() took given back, not an arena's (the
 * `arenas` count stays): a pool file's kept pages (src/recorder/shm.c). */
void ada_shm_budget_shrink(struct ada_shm_budget *b, uint64_t bytes);
void ada_shm_budget_read(const struct ada_shm_budget *b, struct ada_shm_budget_view *v);
/* Recorder, as its recording ends (before it clears the arena
 * directory): from then on a process reserving an arena gets -ESRCH and
 * runs untraced, and one that published its arena just before removes it
 * again (env.c), so that a program outliving the recording leaves no name
 * in the directory. */
void ada_shm_budget_end(struct ada_shm_budget *b);
/* Producer: maps dir's budget file; -ENOENT when there is none. */
int ada_shm_budget_open_dir(const char *dir, struct ada_shm_budget **out);

#endif
