/*
 * The retired shadow stacks (src/hook/retire_internal.h): the same inline
 * functions the handlers run, with a fake kernel here: "mappings" are
 * addresses handed out lowest free first (as the kernel reuses a hole of
 * the same size), threads are alive or gone, and every unmap and every
 * reuse is checked: the mapping exists and its thread is gone.
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
static unsigned unmaps, gone_asked;
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
	gone_asked++;
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
	unmaps = gone_asked = 0;
	race = NULL;
	return 0;
}

/* A thread tid starts: it takes an ended thread's shadow stack, else
 * maps one after a reclaim (as handlers_shadow_alloc_fpu does). keep: as
 * many gone threads' mappings are kept. */
static uintptr_t thread_start_keep(int32_t tid, uint32_t keep)
{
	alive[tid] = true;
	uintptr_t a = retire_take(&table);
	if (a) {
		int i = map_index(a);
		assert_int_not_equal(map_owner[i], 0); /* mapped */
		assert_false(alive[map_owner[i]]);     /* its thread is gone */
		map_owner[i] = tid;
		return a;
	}
	retire_reclaim(&table, keep);
	return fake_map(tid);
}

/* Its exit destructor: reclaim, retire its own (it is still alive: its
 * teardown runs on it). */
static void thread_retire_keep(int32_t tid, uintptr_t map, uint32_t keep, bool grew)
{
	retire_reclaim(&table, keep);
	assert_true(retire_put(&table, map, tid, grew));
}

/* The first tests keep nothing: every gone thread's mapping is unmapped,
 * and none is there to take. */
static uintptr_t thread_start(int32_t tid)
{
	return thread_start_keep(tid, 0);
}

static void thread_retire(int32_t tid, uintptr_t map)
{
	thread_retire_keep(tid, map, 0, false);
}

static void test_alive_kept_gone_unmapped(void **state)
{
	(void)state;
	uintptr_t a = thread_start(10), b = thread_start(11);
	thread_retire(10, a);
	thread_retire(11, b);
	retire_reclaim(&table, 0); /* both still in their teardown */
	assert_int_equal(unmaps, 0);
	alive[10] = false; /* the kernel is done with 10 */
	retire_reclaim(&table, 0);
	assert_int_equal(unmaps, 1);
	assert_int_equal(map_owner[0], 0);
	assert_int_equal(map_owner[1], 11);
	alive[11] = false;
	retire_reclaim(&table, 0);
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
		assert_true(retire_put(&table, 0x1000 * (i + 1), (int32_t)(1 + i % 8), false));
	}
	assert_false(retire_put(&table, 0x999000, 9, false));
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
	assert_true(retire_put(&table, 0x999000, 9, false));
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
	retire_reclaim(&table, 0);     /* thread 2 */
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
	retire_reclaim(&table, 0); /* thread 1 (fake_unmap checks every unmap) */
	assert_null(race);         /* the race did run */
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
	retire_reclaim(&table, 0);
	assert_int_equal(unmaps, 2);
}

/* A thread per request: each new thread takes its predecessor's mapping
 * once that one is gone, and no mapping is unmapped or made; one still
 * in its teardown is not taken. */
static void test_take_reuses(void **state)
{
	(void)state;
	uintptr_t a = thread_start_keep(1, RETIRE_KEEP);
	thread_retire_keep(1, a, RETIRE_KEEP, false);
	uintptr_t b = thread_start_keep(2, RETIRE_KEEP); /* 1 is still there */
	assert_true(b != a);
	thread_retire_keep(2, b, RETIRE_KEEP, false);
	alive[1] = alive[2] = false;
	for (int32_t tid = 3; tid < 100; tid++) {
		uintptr_t m = thread_start_keep(tid, RETIRE_KEEP);
		assert_true(m == a || m == b);
		thread_retire_keep(tid, m, RETIRE_KEEP, false);
		alive[tid] = false;
	}
	assert_int_equal(unmaps, 0);
	for (int i = 2; i < NMAP; i++)
		assert_int_equal(map_owner[i], 0); /* nothing else mapped */
}

/* A grown mapping is never taken (a new stack starts from the first
 * part); it is unmapped once its thread is gone, kept or not. */
static void test_grown_unmapped(void **state)
{
	(void)state;
	uintptr_t a = thread_start_keep(1, RETIRE_KEEP);
	thread_retire_keep(1, a, RETIRE_KEEP, true);
	alive[1] = false;
	uintptr_t b = thread_start_keep(2, RETIRE_KEEP); /* mapped anew */
	assert_int_equal(unmaps, 1);                     /* the start's reclaim: a's */
	assert_int_equal(map_owner[map_index(b)], 2);
}

/* Past RETIRE_KEEP gone threads' mappings, a reclaim unmaps the rest; a
 * thread is asked after once (then known gone). */
static void test_keep_bounded(void **state)
{
	(void)state;
	uintptr_t m[NMAP];
	for (int32_t i = 0; i < NMAP; i++)
		m[i] = thread_start_keep(i + 1, 4);
	for (int32_t i = 0; i < NMAP; i++) {
		assert_true(retire_put(&table, m[i], i + 1, false));
		alive[i + 1] = false;
	}
	retire_reclaim(&table, 4);
	assert_int_equal(unmaps, NMAP - 4);
	assert_int_equal(gone_asked, NMAP);
	retire_reclaim(&table, 4);
	assert_int_equal(unmaps, NMAP - 4);
	assert_int_equal(gone_asked, NMAP); /* the kept ones: known gone */
	for (int32_t tid = 100; tid < 104; tid++)
		assert_true(thread_start_keep(tid, 4) != 0);
	assert_int_equal(gone_asked, NMAP); /* taken without asking */
	assert_int_equal(retire_take(&table), 0);
}

/* The take's side of the race of test_aba: thread 1 holds A's entry while
 * it asks whether A is gone and is preempted there; meanwhile thread 2
 * starts C, which cannot take A's mapping (held) and maps its own, runs
 * and retires it. Thread 1 gets A's mapping; C's stays retired. */
static uintptr_t race_take_c;
static void race_take_other(void)
{
	race_take_c = thread_start_keep(32, RETIRE_KEEP);
	thread_retire_keep(32, race_take_c, RETIRE_KEEP, false);
}

static void test_take_race(void **state)
{
	(void)state;
	uintptr_t a = thread_start_keep(31, RETIRE_KEEP);
	thread_retire_keep(31, a, RETIRE_KEEP, false);
	alive[31] = false;
	race = race_take_other;
	alive[40] = true;
	uintptr_t got = retire_take(&table); /* thread 1, for its thread 40 */
	assert_null(race);
	assert_true(got == a);
	assert_true(race_take_c != a);
	assert_int_equal(unmaps, 0);
	bool found = false;
	for (uint32_t i = 0; i < RETIRE_SLOTS; i++)
		found |= atomic_load(&table.e[i].addr) == race_take_c &&
		         atomic_load(&table.e[i].tid) == 32;
	assert_true(found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_alive_kept_gone_unmapped, setup),
	    cmocka_unit_test_setup(test_full, setup),
	    cmocka_unit_test_setup(test_aba, setup),
	    cmocka_unit_test_setup(test_take_reuses, setup),
	    cmocka_unit_test_setup(test_grown_unmapped, setup),
	    cmocka_unit_test_setup(test_keep_bounded, setup),
	    cmocka_unit_test_setup(test_take_race, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
