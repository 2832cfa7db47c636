/*
 * A forked child's note of the files it leaves to the recorder, and of
 * its counts at exit (ring.h, ada_arena_fork_*). The child writes, the
 * recorder reads; the fields are plain bytes published by the states'
 * release stores, and the recorder checks the copy it takes (the target
 * may write them at any time).
 */
#include <string.h>

#include "ring_internal.h"

void ada_arena_fork_note(struct ada_arena *a, const struct ada_fork_note *n)
{
	a->ctl->fork_note = *n;
	/* Release: publishes the note; pairs with the acquire in
	 * ada_arena_fork_state(). */
	atomic_store_explicit(&a->ctl->fork_state, ADA_FORK_NOTED, memory_order_release);
}

uint32_t ada_arena_fork_state(const struct ada_arena *a)
{
	/* Acquire: pairs with the release stores of the note and its settling. */
	return atomic_load_explicit(&a->ctl->fork_state, memory_order_acquire);
}

void ada_arena_fork_note_read(const struct ada_arena *a, struct ada_fork_note *out)
{
	/* Torn by a concurrent writer at worst: the caller checks the copy. */
	memcpy(out, (const void *)&a->ctl->fork_note, sizeof(*out));
}

uint32_t ada_arena_fork_settle(struct ada_arena *a, uint32_t to)
{
	uint32_t expect = ADA_FORK_NOTED;
	/* Acq_rel: the loser reads the winner's state (and what it wrote
	 * before); pairs with itself on the other side. */
	atomic_compare_exchange_strong_explicit(&a->ctl->fork_state, &expect, to,
	                                        memory_order_acq_rel, memory_order_acquire);
	return expect;
}

/* fork_exit_state: 0 none, 1 a noted fork child's counts, 2 a process's
 * counts for its own agent.json. */
enum { EXIT_NONE, EXIT_FORK, EXIT_OWN };

static void exit_publish(struct ada_arena *a, const struct ada_fork_exit *e, uint32_t state)
{
	a->ctl->fork_exit = *e;
	/* Release: publishes the counts; pairs with the acquire in
	 * exit_read(). */
	atomic_store_explicit(&a->ctl->fork_exit_state, state, memory_order_release);
}

static bool exit_read(const struct ada_arena *a, struct ada_fork_exit *out, uint32_t state)
{
	/* Acquire: pairs with the release in exit_publish(). */
	if (atomic_load_explicit(&a->ctl->fork_exit_state, memory_order_acquire) != state)
		return false;
	memcpy(out, (const void *)&a->ctl->fork_exit, sizeof(*out));
	return true;
}

void ada_arena_fork_exit(struct ada_arena *a, const struct ada_fork_exit *e)
{
	exit_publish(a, e, EXIT_FORK);
}

bool ada_arena_fork_exit_read(const struct ada_arena *a, struct ada_fork_exit *out)
{
	return exit_read(a, out, EXIT_FORK);
}

void ada_arena_exit_note(struct ada_arena *a, const struct ada_fork_exit *e)
{
	exit_publish(a, e, EXIT_OWN);
}

bool ada_arena_exit_note_read(const struct ada_arena *a, struct ada_fork_exit *out)
{
	return exit_read(a, out, EXIT_OWN);
}
