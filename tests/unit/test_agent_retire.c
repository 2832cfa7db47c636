/*
 * The retired shadow stacks (src/hook/retire_internal.h): the same inline
 * functions the handlers run, with a fake kernel here: "mappings" are
 * addresses handed out lowest free first (as the kernel reuses a hole of
 * the same size), threads are alive or gone, and every unmap is checked:
 * the mapping exists and its thread is gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define NMAP 16
#define MAP_ADDR(i) (0x10000000ull + (uint64_t)(i)*0x1000000ull)
static int32_t map_owner[NMAP]; /* 0: not mapped */
static bool alive[1024];
static unsigned unmaps;
/* Called once, from inside the first "is it gone" question: what other
 * threads do while the asking thread is preempted there. */
static void (*race)(void);

static uintptr_t fake_map(int32_t tid)
{
	for (int i = 0; i < NMAP; i++) {
		if (map_owner[i] == 0) {
			map_owner[i] = tid;
			return (uintptr_t)MAP_ADDR(i);
		}
	}
	fail_msg("out of fake mappings");
	return 0;
}

static int map_index(uintptr_t a)
{
	for (int i = 0; i < NMAP; i++)
		if (MAP_ADDR(i) == a)
			return i;
	fail_msg("unmap of an address never mapped: %#lx", (unsigned long)a);
	return -1;
}

static void fake_unmap(uintptr_t a)
{
	int i = map_index(a);
	assert_int_not_equal(map_owner[i], 0); /* mapped */
	/* The crash: a live thread's shadow stack unmapped under it. */
	assert_false(alive[map_owner[i]]);
	map_owner[i] = 0;
	unmaps++;
}

static bool fake_gone(int32_t tid)
{
	void (*r)(void) = race;
	race = NULL;
	if (r)
		r();
	return !alive[tid];
}

#define RETIRE_GONE(tid) fake_gone(tid)
#define RETIRE_UNMAP(a) fake_unmap(a)
#include "retire_internal.h"

static struct retire_table table;

static int setup(void **state)
{
	(void)state;
	memset(&table, 0, sizeof(table));
	memset(map_owner, 0, sizeof(map_owner));
	memset(alive, 0, sizeof(alive));
	unmaps = 0;
	race = NULL;
	return 0;
}

/* A thread tid starts: its shadow stack is mapped after a reclaim (as
 * handlers_shadow_alloc_fpu does). */
static uintptr_t thread_start(int32_t tid)
{
	alive[tid] = true;
	retire_reclaim(&table);
	return fake_map(tid);
}

/* Its exit destructor: reclaim, retire its own (it is still alive: its
 * teardown runs on it). */
static void thread_retire(int32_t tid, uintptr_t map)
{
	retire_reclaim(&table);
	assert_true(retire_put(&table, map, tid));
}

static void test_alive_kept_gone_unmapped(void **state)
{
	(void)state;
	uintptr_t a = thread_start(10), b = thread_start(11);
	thread_retire(10, a);
	thread_retire(11, b);
	retire_reclaim(&table); /* both still in their teardown */
	assert_int_equal(unmaps, 0);
	alive[10] = false; /* the kernel is done with 10 */
	retire_reclaim(&table);
	assert_int_equal(unmaps, 1);
	assert_int_equal(map_owner[0], 0);
	assert_int_equal(map_owner[1], 11);
	alive[11] = false;
	retire_reclaim(&table);
	assert_int_equal(unmaps, 2);
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++)
		assert_int_equal(atomic_load(&table.e[i].addr), 0);
}

/* A full table refuses (the caller unmaps at once); a reclaimed entry is
 * taken again. */
static void test_full(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
		alive[1 + i % 8] = true;
		assert_true(retire_put(&table, 0x1000 * (i + 1), (int32_t)(1 + i % 8)));
	}
	assert_false(retire_put(&table, 0x999000, 9));
	/* Thread 3's entries freed (as retire_reclaim would once it is
	 * gone; these addresses are not the fake kernel's). */
	uint32_t of3 = 0;
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++) {
		if (atomic_load(&table.e[i].tid) == 3) {
			atomic_store(&table.e[i].addr, 0);
			of3++;
		}
	}
	assert_int_equal(of3, RETIRE_SLOTS / 8);
	assert_true(retire_put(&table, 0x999000, 9));
	assert_int_equal(atomic_load(&table.e[2].addr), 0x999000); /* the first free one */
}

/* The race of e2e.transp.threads_10000 (retire_internal.h, entry
 * protocol): thread 1 asks whether ended thread A (tid 21) of an entry
 * is gone and is preempted in the question;
 * meanwhile thread 2 reclaims A's mapping, a new thread C (tid 22) gets
 * the same address for its shadow stack, runs, and retires it into the
 * same entry. Thread 1 must not unmap C's stack (C's teardown is still
 * running on it). */
static uintptr_t race_c_map;
static void race_other_threads(void)
{
	retire_reclaim(&table);        /* thread 2 */
	race_c_map = thread_start(22); /* C */
	thread_retire(22, race_c_map); /* C's exit destructor */
}

static void test_aba(void **state)
{
	(void)state;
	uintptr_t a = thread_start(21);
	thread_retire(21, a);
	assert_int_equal(atomic_load(&table.e[0].addr), a);
	alive[21] = false; /* A is gone */
	race = race_other_threads;
	retire_reclaim(&table); /* thread 1 (fake_unmap checks every unmap) */
	assert_null(race);      /* the race did run */
	/* A's stack unmapped exactly once; C's is still there, retired. */
	assert_int_equal(unmaps, 1);
	assert_int_equal(map_owner[map_index(race_c_map)], 22);
	bool found = false;
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++)
		found |= atomic_load(&table.e[i].addr) == race_c_map &&
		         atomic_load(&table.e[i].tid) == 22;
	assert_true(found);
	/* Once C is gone, it is unmapped too. */
	alive[22] = false;
	retire_reclaim(&table);
	assert_int_equal(unmaps, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_alive_kept_gone_unmapped, setup),
	    cmocka_unit_test_setup(test_full, setup),
	    cmocka_unit_test_setup(test_aba, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
