/*
 * ada ring: the arena pool (pool.c). A finished process's arena file,
 * scrubbed, waits under pool.<k> in the arena directory for the next
 * process that makes an arena (ring_arena_create), which takes it with
 * its ring pages: a short process then populates pages that exist, and
 * the recorder frees none at its end (docs/internals.md, "The arena
 * pool").
 *
 * Threads: the drain thread (scrub, put); the producer's set-up path
 * takes (once per process).
 */
#ifndef ADA_RING_POOL_H
#define ADA_RING_POOL_H

#include "ring.h"

/* An arena flag (ada_arena_flags(), beside ring.h's ADA_ARENA_F_*): the
 * file came from the pool, not made new. */
#define ADA_ARENA_F_RECYCLED 0x40u

/* Files the pool holds at most. A script's subshells start one after
 * another faster than a loaded drain finishes them: each start while the
 * pool is empty makes a new file (tmpfs allocates and clears its pages,
 * the drain frees them), and the pool refills only as far as it has
 * slots. With two, a fifth of 300 `$(...)` subshells made a new file
 * (median 63); with eight, a twenty-fifth (12) (issue 32,
 * docs/benchmarks.md). */
#define ADA_ARENA_POOL_SLOTS 8u
#define ADA_ARENA_POOL_PREFIX "pool."

/* dir/pool.<k> into out; 0 or -ENAMETOOLONG. */
int ada_arena_pool_name(const char *dir, unsigned k, char *out, size_t cap);
/* True for the name of a pool's file (pool.<k>, k below
 * ADA_ARENA_POOL_SLOTS): what is left of a killed recorder's pool holds
 * no events, and the orphan scan and recover remove it by this name. */
bool ada_arena_pool_is_name(const char *name);
/* The bytes of pages a pooled arena keeps (the control block, the full
 * slots' descriptors, slot 0's headers, index events and detail words):
 * what the pool counts against the ceiling. */
uint64_t ada_arena_pool_bytes(const struct ada_arena *a);
/* For the file fd of a, whose process is gone (no mapping but ours
 * writes it): the kept header pages zeroed through a's mapping, every
 * page but the kept ones punched back to zeros, so the next maker finds a
 * new file's headers. 0 or -errno (no pooling then). */
int ada_arena_pool_scrub(const struct ada_arena *a, int fd);
/* Places always pooled, whatever the ceiling: what the pool had before
 * it had eight. */
#define ADA_ARENA_POOL_FREE_SLOTS 2u
/* The ceiling rule: whether a file keeping keep bytes may wait in place k
 * while the budget reads v, next being the reservation of one more arena
 * of its size. The first ADA_ARENA_POOL_FREE_SLOTS places always; past
 * them only while that arena would still fit under the ceiling beside
 * the file (v->ceiling 0: none), so the waiting files never make a
 * process run untraced that two alone would have let in. v is read from
 * a page the target can write: no sum here can wrap. */
bool ada_arena_pool_admits(unsigned k, const struct ada_shm_budget_view *v, uint64_t keep,
                           uint64_t next);
/* Renames the scrubbed file at path to dir/pool.<k>, never over a name
 * there; 0 or -errno (-EEXIST: pool.<k> is taken). */
int ada_arena_pool_put(const char *path, const char *dir, unsigned k);

/* A new file for the pool (the recorder's, while a program forks faster
 * than its children finish): dir/pool.<k> made for an arena of cfg, on
 * tmpfs only, with the pages a scrubbed file keeps zeroed allocated and
 * the first 128 KiB of slot 0's index events and 512 KiB of its detail
 * words; never over a name there, never seen under a name half made.
 * 0 or -errno (-EEXIST: pool.<k> is taken; -EOPNOTSUPP: not tmpfs). */
int ada_arena_pool_make(const char *dir, unsigned k, const struct ada_arena_config *cfg);
/* What such a file counts against the ceiling: ada_arena_pool_bytes of
 * an arena of cfg (0: no such arena). */
uint64_t ada_arena_pool_make_bytes(const struct ada_arena_config *cfg);

#endif
