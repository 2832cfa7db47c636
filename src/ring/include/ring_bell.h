/*
 * ada ring: the drain's doorbell (shm_budget.c, consumer.c). The drain
 * sleeps while every ring is idle and is woken by what has work for it,
 * instead of polling; and it learns of a new arena's name from a count
 * beside it instead of watching the directory: one futex word in the recording's budget page
 * (<arena dir>/shm.budget), shared by every arena of the recording, since
 * the drain can wait on one word only and a new process rings before the
 * drain knows its arena.
 *
 * Protocol: the drain stores ASLEEP and fences (ada_shm_budget_bell_arm),
 * looks once more at every arena (ada_arena_idle) and at what else may
 * have come, then waits (ada_shm_budget_bell_wait) with a timeout; a
 * producer publishes (a head, a slot state, a process state, an arena's
 * name), fences and reads the word (ada_shm_budget_ring): either the look
 * sees the work or the ringer sees ASLEEP, takes it to RUNG and wakes the
 * drain. The target writes the page too: nothing here is trusted beyond
 * "look now", and every wait is bounded.
 */
#ifndef ADA_RING_BELL_H
#define ADA_RING_BELL_H

#include "ring.h"

/* Producer side and the recorder's own threads: rings the doorbell of b
 * when the drain sleeps -- at most one FUTEX_WAKE per sleep, whoever
 * rings first; a fence and a load while it is awake. From cold paths
 * only (never per event). Any thread, async-signal-safe, errno kept;
 * NULL is a no-op. */
void ada_shm_budget_ring(struct ada_shm_budget *b);
/* The maker of an arena, once its name is renamed into the directory:
 * counts the name (the drain reads the directory when the count moved)
 * and rings. NULL is a no-op. */
void ada_shm_budget_named(struct ada_shm_budget *b);
/* Drain: names counted so far (any value: the target writes the page;
 * a wrong one costs a read of the directory, or leaves a name to the
 * drain's periodic read). */
uint64_t ada_shm_budget_names(const struct ada_shm_budget *b);
/* Drain: declares itself asleep; then it looks at every ring once more. */
void ada_shm_budget_bell_arm(struct ada_shm_budget *b);
/* Drain: the look found work; awake again. True when a ringer came. */
bool ada_shm_budget_bell_disarm(struct ada_shm_budget *b);
/* Drain: waits until a ringer comes, a signal or ns pass (at once when
 * the word is not ASLEEP any more); awake again after it. 1 when rung
 * (by a producer, or by whoever wrote the page), 0 at the timeout or a
 * signal, -errno when the futex refused to wait (then do not sleep on
 * it again: it would return at once every time). */
int ada_shm_budget_bell_wait(struct ada_shm_budget *b, uint64_t ns);

/* Drain, before it sleeps: true when nothing changed in a since the
 * consumer's last look -- no slot's head past the one accepted, no slot
 * claimed, ended or above those seen, no thread waiting for a slot, the
 * process not ending. Loads only (a state per slot, a head per owned
 * slot); the caller guards the reads (a truncated arena). */
bool ada_arena_idle(const struct ada_arena *a);

#endif
