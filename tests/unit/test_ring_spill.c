/*
 * Spill slots (issue 14 item 4): an arena with 2 full slots and 30 spill
 * slots of smaller rings, set up as a traced process does
 * (ada_producer_init over a directory with a budget file). 40 threads
 * alive at once: 2 get full slots, the spill slots go one by one against
 * the shared-memory ceiling (room for 20 here), the 18 others find the
 * ceiling and count every event as a no_slot drop -- none waits. Checks
 * the exact counts, the rings' sizes, the budget taken, and that the
 * arena's slot count (written by the target) is clamped by the reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"

#define THREADS 40
#define EVENTS 50 /* < spill_events: no drain needed */
#define SPILL_ROOM 20
#define CONFIG "max_threads=2,index_events=1024,detail_bytes=65536,spill_threads=30,spill_events=64"

static pthread_barrier_t spill_bar;

static void *spill_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < EVENTS; i++)
		ada_emit(7, ATF_EVENT_CALL, 1);
	pthread_barrier_wait(&spill_bar); /* all alive at once */
	pthread_barrier_wait(&spill_bar); /* until the checks are done */
	return NULL;
}

static void test_spill_config(void **state)
{
	(void)state;
	struct ada_arena_config c;
	char buf[ADA_ARENA_CONFIG_TEXT_MAX];
	assert_int_equal(ada_arena_config_parse(CONFIG, strlen(CONFIG), &c), 0);
	assert_int_equal(c.spill_threads, 30);
	assert_int_equal(c.spill_events, 64);
	assert_true(ada_arena_config_format(&c, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, ",spill_threads=30,spill_events=64"));
	assert_int_equal(ada_spill_detail_bytes(&c), ADA_SPILL_DETAIL_BYTES);
	static const char *const bad[] = {
	    "index_events=1024,spill_threads=4,spill_events=2048", /* bigger than the full rings */
	    "spill_threads=4",                                     /* no spill_events */
	    "spill_events=64",                                     /* events without slots */
	    "spill_threads=4,spill_events=100",                    /* not a power of two */
	    "spill_threads=4,spill_events=32",                     /* below the minimum */
	    "max_threads=64,spill_threads=65473,spill_events=64",  /* past the slot limit */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ada_arena_config_parse(bad[i], strlen(bad[i]), &c), -EINVAL);
	const char *max = "max_threads=64,spill_threads=65472,spill_events=65536";
	assert_int_equal(ada_arena_config_parse(max, strlen(max), &c), 0);
	/* Without spill slots the text is what it was before them. */
	ada_arena_config_default(&c);
	assert_true(ada_arena_config_format(&c, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, "spill"));
}

static void test_spill_slots(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/ada-test-spill-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct ada_arena_config c;
	assert_int_equal(ada_arena_config_parse(CONFIG, strlen(CONFIG), &c), 0);
	uint64_t base = ada_arena_budget_size_for(&c);
	uint64_t unit = (ada_arena_size_for(&c) - base) / c.spill_threads;
	assert_true(unit > 64 * 32 + ADA_SPILL_DETAIL_BYTES);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	struct ada_shm_budget *b = NULL;
	assert_int_equal(ada_shm_budget_create(dfd, base + SPILL_ROOM * unit, &b), 0);
	assert_int_equal(ada_producer_init(dir, CONFIG), 0);
	struct ada_arena *a = ada_producer_arena();
	assert_non_null(a);
	assert_int_equal(ada_arena_max_threads(a), 32);
	assert_int_equal(ada_arena_slot_events(a, 1), 1024);
	assert_int_equal(ada_arena_slot_events(a, 2), 64);
	assert_int_equal(ada_arena_slot_events(a, 32), 0);

	pthread_barrier_init(&spill_bar, NULL, THREADS + 1);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, spill_thread, NULL), 0);
	pthread_barrier_wait(&spill_bar);

	uint32_t used = ada_arena_slots_used(a);
	assert_int_equal(used, 2 + SPILL_ROOM);
	uint64_t got = 0;
	for (uint32_t s = 0; s < used; s++) {
		const struct atf_index_event *ev;
		size_t n;
		while ((n = ada_index_ring_peek(a, s, &ev)) > 0) {
			got += n;
			ada_index_ring_release(a, s, n);
		}
	}
	assert_int_equal(got, (uint64_t)(2 + SPILL_ROOM) * EVENTS);
	uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	ada_arena_drop_totals(a, d);
	assert_int_equal(d[ADA_LANE_INDEX][ADA_DROP_NO_SLOT],
	                 (uint64_t)(THREADS - 2 - SPILL_ROOM) * EVENTS);
	assert_int_equal(ada_arena_spill_bytes_taken(a), SPILL_ROOM * unit);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.reserved, base + SPILL_ROOM * unit);
	assert_int_equal(v.refused_procs, 0); /* a refused slot is not a refused process */

	/* The slot count is the target's to write: never past the slots,
	 * never below what was seen. */
	atomic_store(&a->ctl->slots_hw, 1u << 30);
	assert_int_equal(ada_arena_slots_used(a), 32);
	atomic_store(&a->ctl->slots_hw, 1);
	assert_int_equal(ada_arena_slots_used(a), 32);
	atomic_store(&a->ctl->spill_taken, 1u << 30);
	assert_int_equal(ada_arena_spill_bytes_taken(a), 30 * unit);

	pthread_barrier_wait(&spill_bar);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&spill_bar);
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	ada_shm_budget_close(b);
	char path[128];
	snprintf(path, sizeof(path), "%s/%d.ring", dir, (int)getpid());
	unlink(path);
	unlinkat(dfd, ADA_SHM_BUDGET_NAME, 0);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_spill_config),
	                                   cmocka_unit_test(test_spill_slots)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
