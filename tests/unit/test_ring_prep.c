/*
 * Slots prepared ahead of the threads that claim them (issue 32 item 1):
 * the recorder's handle populates a free slot in bounded steps and marks
 * it; a claim then takes that slot before the one its tid hints at, and
 * populates nothing; a claim that finds none ready asks the drain to
 * reclaim (slot_wanted). With a recorder, a claim of an unprepared slot
 * populates the index part only and leaves the detail ring to the
 * recorder, which marks the slot whole once it has populated it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"

#define CONFIG "max_threads=8,index_events=1024,detail_bytes=262144"

struct fx {
	char dir[64];
	char path[128];
	struct ada_arena *prod; /* the target's handle */
	struct ada_arena *rec;  /* the recorder's */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-test-prep-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/arena", f->dir);
	struct ada_arena_config c;
	if (ada_arena_config_parse(CONFIG, strlen(CONFIG), &c) != 0 ||
	    ada_arena_create(f->path, &c, &f->prod, NULL) != 0 ||
	    ada_arena_open(f->path, &f->rec) != 0)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	ada_arena_close(f->rec);
	ada_arena_close(f->prod);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static uint32_t pop_bits(const struct ada_arena *a, uint32_t s)
{
	return atomic_load(&a->desc[s].populated);
}

/* Prepares slot s with the recorder's handle in steps of `step` bytes;
 * returns the number of steps. */
static int prepare_all(struct ada_arena *rec, uint32_t s, unsigned what, uint64_t step)
{
	uint64_t done = 0;
	int steps = 0, rc;
	while ((rc = ada_arena_slot_prepare(rec, s, what, &done, step)) == 0) {
		steps++;
		assert_true(steps < 10000);
	}
	assert_int_equal(rc, 1);
	return steps + 1;
}

static void test_prepared_slot_claimed_first(void **state)
{
	struct fx *f = *state;
	assert_false(ada_arena_slot_populated(f->rec, 1));
	/* Bounded steps: a slot of over 256 KiB in 64 KiB steps takes more
	 * than four calls. */
	assert_true(prepare_all(f->rec, 1, ADA_PREP_POPULATE, 65536) > 4);
	assert_true(ada_arena_slot_populated(f->rec, 1));
	assert_true(pop_bits(f->prod, 1) & RING_POP_PAGES);
	assert_false(ada_arena_slot_populated(f->rec, 0));
	/* Done is done: another call changes nothing. */
	uint64_t done = UINT64_MAX / 2;
	assert_int_equal(ada_arena_slot_prepare(f->rec, 1, ADA_PREP_POPULATE, &done, 4096), 1);

	/* tid 5 hints slot 5; the prepared slot wins. */
	assert_false(ada_arena_take_slot_wanted(f->rec));
	assert_int_equal(ring_slot_claim(f->prod, 1005, 5), 1);
	assert_false(ada_arena_take_slot_wanted(f->rec)); /* a ready slot: nothing asked */
	struct ada_slot_info si;
	ada_arena_slot_info(f->rec, 1, &si);
	assert_int_equal(si.state, ADA_SLOT_ACTIVE);
	assert_int_equal(si.tid, 1005);

	/* None ready now: the hinted slot, populated by the claim (no
	 * recorder known to this handle: the whole region), and the drain
	 * is asked to reclaim. */
	assert_int_equal(ring_slot_claim(f->prod, 1006, 6), 6);
	assert_true(ada_arena_take_slot_wanted(f->rec));
	assert_int_equal(pop_bits(f->prod, 6) & (RING_POP_PAGES | RING_POP_INDEX),
	                 RING_POP_PAGES | RING_POP_INDEX);
}

static void test_claim_with_recorder_leaves_detail(void **state)
{
	struct fx *f = *state;
	f->prod->rec_pid = getpid(); /* as if a recorder drained this arena */
	assert_int_equal(ring_slot_claim(f->prod, 1003, 3), 3);
	uint32_t b = pop_bits(f->prod, 3);
	assert_true(b & RING_POP_INDEX);
	assert_false(b & RING_POP_PAGES); /* the detail ring is the recorder's to populate */
	assert_false(ada_arena_slot_populated(f->rec, 3));
	/* The index part is there: the ring is usable at once. */
	struct ada_index_hdr *h = ring_index_hdr(f->prod, 3);
	assert_int_equal(atomic_load(&h->head), 0);
	prepare_all(f->rec, 3, ADA_PREP_POPULATE, 1u << 20);
	assert_true(ada_arena_slot_populated(f->rec, 3));
	assert_true(pop_bits(f->prod, 3) & RING_POP_INDEX);

	/* A slot freed with its index part populated is ready for the next
	 * thread: the claim takes it before its hint. */
	atomic_store(&f->prod->desc[4].populated, RING_POP_RESERVED | RING_POP_INDEX);
	assert_int_equal(ring_slot_claim(f->prod, 1007, 7), 4);
}

static void test_prepare_lock(void **state)
{
	struct fx *f = *state;
	uint64_t done = 0;
	int rc =
	    ada_arena_slot_prepare(f->rec, 2, ADA_PREP_POPULATE | ADA_PREP_LOCK, &done, UINT64_MAX);
	/* Locked, or refused (no CAP_IPC_LOCK, a small RLIMIT_MEMLOCK, a
	 * sanitizer's mlock) and said in the arena for the manifest. */
	if (rc == -EPERM)
		assert_true(ada_arena_flags(f->rec) & ADA_ARENA_F_MLOCK_FAILED);
	else
		assert_int_equal(rc, 1);
	/* Bad arguments. */
	assert_int_equal(ada_arena_slot_prepare(f->rec, 8, ADA_PREP_POPULATE, &done, 4096),
	                 -EINVAL);
	assert_int_equal(ada_arena_slot_prepare(f->rec, 2, ADA_PREP_POPULATE, NULL, 4096), -EINVAL);
	assert_int_equal(ada_arena_slot_prepare(f->rec, 2, ADA_PREP_POPULATE, &done, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_prepared_slot_claimed_first, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_claim_with_recorder_leaves_detail, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_prepare_lock, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
