/*
 * The drain's doorbell (src/ring/shm_budget.c, ring_bell.h): a futex word
 * in the recording's budget page that the drain sleeps on and producers
 * ring from their cold path. Checked here without a recorder:
 *   - the protocol: a ring while the drain is awake leaves nothing behind;
 *     a ring after the drain armed is seen by its last look (disarm) or
 *     ends its wait at once, also when it came before the wait began (the
 *     lost wake-up); a wait nobody rings ends at its timeout;
 *   - across two mappings of the page (the drain's and a producer's), as
 *     between processes: a thread waiting with an hour's timeout is woken
 *     by a ring through the other mapping (were it lost, CTest's run-away
 *     timeout would end the test);
 *   - the producer rings at its chunks only: no ring for the events below
 *     a chunk's end, one for the event that crosses it;
 *   - a new arena counts its name in the page (the drain reads the
 *     directory when the count moved, instead of watching it) and rings,
 *     once the name is in the directory.
 * No check depends on how fast anything runs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"
#include "ring_bell.h"

#define HOUR_NS (3600ull * 1000000000ull)
/* index_events 16384: the producer looks at the bell every 2048 events
 * (an eighth of the ring, producer.c PRODUCER_BELL_SHIFT). */
#define CONFIG "max_threads=4,index_events=16384,overflow=drop"
#define CHUNK 2048

static char test_dir[64];
static struct ada_shm_budget *drain_page;

static int fx_setup(void **state)
{
	(void)state;
	snprintf(test_dir, sizeof(test_dir), "/dev/shm/ada-ring-bell-XXXXXX");
	if (!mkdtemp(test_dir))
		return -1;
	int fd = open(test_dir, O_RDONLY | O_DIRECTORY);
	int rc = fd < 0 ? -1 : ada_shm_budget_create(fd, 0, &drain_page);
	if (fd >= 0)
		close(fd);
	return rc;
}

static int fx_teardown(void **state)
{
	(void)state;
	ada_shm_budget_close(drain_page);
	drain_page = NULL;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A second mapping of the page, as a traced process has. */
static struct ada_shm_budget *producer_page(void)
{
	struct ada_shm_budget *b = NULL;
	assert_int_equal(ada_shm_budget_open_dir(test_dir, &b), 0);
	return b;
}

static void test_protocol(void **state)
{
	(void)state;
	struct ada_shm_budget *p = producer_page();
	ada_shm_budget_ring(p); /* awake: nothing to wake, nothing left */
	ada_shm_budget_bell_arm(drain_page);
	assert_false(ada_shm_budget_bell_disarm(drain_page));
	ada_shm_budget_bell_arm(drain_page);
	ada_shm_budget_ring(p); /* between the arm and the last look */
	assert_true(ada_shm_budget_bell_disarm(drain_page));
	ada_shm_budget_bell_arm(drain_page);
	ada_shm_budget_ring(p); /* before the wait began: it must not sleep */
	ada_shm_budget_ring(p); /* a second ringer: no second wake needed */
	assert_int_equal(ada_shm_budget_bell_wait(drain_page, HOUR_NS), 1);
	ada_shm_budget_bell_arm(drain_page);
	assert_int_equal(ada_shm_budget_bell_wait(drain_page, 1000000), 0); /* 1 ms, nobody */
	ada_shm_budget_ring(NULL);                                          /* no page: a no-op */
	ada_shm_budget_close(p);
}

static int armed_pipe[2];

static void *drain_main(void *arg)
{
	bool *rung = arg;
	ada_shm_budget_bell_arm(drain_page);
	char c = 'a';
	assert_int_equal(write(armed_pipe[1], &c, 1), 1);
	*rung = ada_shm_budget_bell_wait(drain_page, HOUR_NS) == 1;
	return NULL;
}

static void test_wakes_across_mappings(void **state)
{
	(void)state;
	struct ada_shm_budget *p = producer_page();
	assert_int_equal(pipe(armed_pipe), 0);
	bool rung = false;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, drain_main, &rung), 0);
	char c;
	assert_int_equal(read(armed_pipe[0], &c, 1), 1);
	ada_shm_budget_ring(p); /* before or during its wait: either way it ends */
	pthread_join(t, NULL);
	assert_true(rung);
	close(armed_pipe[0]);
	close(armed_pipe[1]);
	ada_shm_budget_close(p);
}

static void test_producer_rings_at_chunks(void **state)
{
	(void)state;
	assert_int_equal(ada_producer_init(test_dir, CONFIG), 0);
	ada_emit(1, ATF_EVENT_CALL, 1); /* the claim (it rings: nobody sleeps) */
	ada_shm_budget_bell_arm(drain_page);
	for (int i = 1; i < CHUNK; i++) /* the rest of the first chunk */
		ada_emit(1, ATF_EVENT_CALL, 1);
	assert_false(ada_shm_budget_bell_disarm(drain_page)); /* no ring per event */
	ada_shm_budget_bell_arm(drain_page);
	ada_emit(1, ATF_EVENT_CALL, 1); /* the first of the next chunk */
	assert_true(ada_shm_budget_bell_disarm(drain_page));
	ada_shm_budget_bell_arm(drain_page);
	for (int i = 1; i < CHUNK; i++)
		ada_emit(1, ATF_EVENT_CALL, 1);
	assert_false(ada_shm_budget_bell_disarm(drain_page));
	ada_producer_reset_thread();
	struct ada_arena *a = ada_producer_arena();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

static void test_arena_counts_its_name(void **state)
{
	(void)state;
	assert_int_equal(ada_shm_budget_names(drain_page), 0);
	ada_shm_budget_bell_arm(drain_page);
	assert_int_equal(ada_producer_init(test_dir, CONFIG), 0);
	assert_int_equal(ada_shm_budget_names(drain_page), 1);
	assert_true(ada_shm_budget_bell_disarm(drain_page)); /* a drain asleep comes */
	char ring[128];
	snprintf(ring, sizeof(ring), "%s/%d.ring", test_dir, (int)getpid());
	assert_int_equal(access(ring, F_OK), 0); /* counted once it is there */
	ada_shm_budget_named(NULL);              /* no page: a no-op */
	ada_producer_reset_thread();
	struct ada_arena *a = ada_producer_arena();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_protocol, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_wakes_across_mappings, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_producer_rings_at_chunks, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_arena_counts_its_name, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
