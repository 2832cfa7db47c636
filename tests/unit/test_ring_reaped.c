/*
 * The table of reaped children in the arena's control block (reaped.c,
 * ring.h "children the process reaped itself"): what a writer notes the
 * reader takes whole and once; a table that wrapped before the reader
 * looked counts every overwritten entry; an entry under way is left for
 * the next look (refused when the process is gone); a torn, mixed or
 * implausible entry, or a head that went back, is refused, never taken.
 * A writer thread against a reader: every note taken is one written,
 * whole, and taken + overwritten + refused is every note.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"
#include "test_arena.h"

static struct ada_arena *reaped_arena(void)
{
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 1;
	cfg.index_events = 1024;
	return test_arena_new(&cfg);
}

/* The wait status of a child that exited with code. */
static int32_t exited(int code)
{
	return (code & 0xff) << 8;
}

static void test_taken_whole_once(void **state)
{
	(void)state;
	struct ada_arena *a = reaped_arena();
	struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts c = {0};
	uint64_t cursor = 0;
	assert_int_equal(ada_arena_reaped_take(a, &cursor, false, out, &c), 0);
	ada_arena_note_reaped(a, 100, exited(3), 1000);
	ada_arena_note_reaped(a, 101, 9, 1001);         /* killed by SIGKILL */
	ada_arena_note_reaped(a, 102, 0x80 | 11, 1002); /* SIGSEGV, core dumped */
	assert_int_equal(ada_arena_reaped_take(a, &cursor, false, out, &c), 3);
	assert_int_equal(cursor, 3);
	assert_int_equal(out[0].pid, 100);
	assert_int_equal(out[0].status, exited(3));
	assert_int_equal(out[0].ts_raw, 1000);
	assert_int_equal(out[1].status, 9);
	assert_int_equal(out[2].status, 0x80 | 11);
	assert_int_equal(out[2].ts_raw, 1002);
	assert_int_equal(ada_arena_reaped_take(a, &cursor, false, out, &c), 0);
	assert_int_equal(c.overwritten + c.refused, 0);
	ada_arena_close(a);
}

static void test_wrapped_counts_overwritten(void **state)
{
	(void)state;
	struct ada_arena *a = reaped_arena();
	struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts c = {0};
	uint64_t cursor = 0;
	const int n = 300;
	for (int i = 0; i < n; i++)
		ada_arena_note_reaped(a, 1000 + i, exited(i), (uint64_t)i);
	uint32_t got = ada_arena_reaped_take(a, &cursor, false, out, &c);
	assert_int_equal(got, ADA_REAPED_SLOTS);
	assert_int_equal(c.overwritten, n - ADA_REAPED_SLOTS);
	assert_int_equal(c.refused, 0);
	assert_int_equal(cursor, n);
	for (uint32_t i = 0; i < got; i++) { /* the newest lap, in order */
		int want = n - (int)ADA_REAPED_SLOTS + (int)i;
		assert_int_equal(out[i].pid, 1000 + want);
		assert_int_equal(out[i].status, exited(want));
	}
	ada_arena_close(a);
}

static void test_under_way_waits(void **state)
{
	(void)state;
	struct ada_arena *a = reaped_arena();
	struct ada_arena_control *ctl = a->ctl;
	struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts c = {0};
	uint64_t cursor = 0;
	ada_arena_note_reaped(a, 200, exited(1), 5);
	/* A writer between its claim and its last store: position 1 odd. */
	atomic_store(&ctl->reaped_head, 2);
	atomic_store(&ctl->reaped[1].seq, 2 * 1 + 1);
	assert_int_equal(ada_arena_reaped_take(a, &cursor, false, out, &c), 1);
	assert_int_equal(cursor, 1); /* read at the next look */
	assert_int_equal(c.refused + c.overwritten, 0);
	assert_int_equal(ada_arena_reaped_take(a, &cursor, true, out, &c), 0);
	assert_int_equal(cursor, 2); /* the process is gone: it never completes */
	assert_int_equal(c.refused, 1);
	ada_arena_close(a);
}

static void test_hostile_refused(void **state)
{
	(void)state;
	struct ada_arena *a = reaped_arena();
	struct ada_arena_control *ctl = a->ctl;
	struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts c = {0};
	uint64_t cursor = 0;
	ada_arena_note_reaped(a, 300, exited(0), 7);                     /* 0: torn below */
	ada_arena_note_reaped(a, 301, exited(0), 8);                     /* 1: mixed with 2 below */
	ada_arena_note_reaped(a, 302, exited(2), 9);                     /* 2: whole */
	ada_arena_note_reaped(a, 303, 0x7f, 10);                         /* 3: a stop is no reap */
	ada_arena_note_reaped(a, 0, exited(0), 11);                      /* 4: no pid */
	ada_arena_note_reaped(a, ADA_REAPED_PID_MAX + 1, exited(0), 12); /* 5 */
	ada_arena_note_reaped(a, 306, 0x10000, 13);                      /* 6: past 16 bits */
	ada_arena_note_reaped(a, 307, exited(0), 14);                    /* 7: a later lap's seq */
	atomic_store(&ctl->reaped[0].status, (uint32_t)exited(9));
	atomic_store(&ctl->reaped[1].ts_raw, atomic_load(&ctl->reaped[2].ts_raw));
	atomic_store(&ctl->reaped[7].seq, 2 * (7 + ADA_REAPED_SLOTS) + 2);
	assert_int_equal(ada_arena_reaped_take(a, &cursor, false, out, &c), 1);
	assert_int_equal(out[0].pid, 302);
	assert_int_equal(out[0].status, exited(2));
	assert_int_equal(c.refused, 6);
	assert_int_equal(c.overwritten, 1);
	assert_int_equal(cursor, 8);
	/* A head that went back reads nothing and counts nothing. */
	atomic_store(&ctl->reaped_head, 3);
	assert_int_equal(ada_arena_reaped_take(a, &cursor, false, out, &c), 0);
	assert_int_equal(cursor, 8);
	assert_int_equal(c.refused, 6);
	ada_arena_close(a);
}

#define RACE_NOTES 200000

static void *race_writer(void *arg)
{
	struct ada_arena *a = arg;
	for (int i = 1; i <= RACE_NOTES; i++) /* status and time say i: checked whole */
		ada_arena_note_reaped(a, i % 4000000 + 1, exited(i), (uint64_t)i);
	return NULL;
}

static void test_writer_against_reader(void **state)
{
	(void)state;
	struct ada_arena *a = reaped_arena();
	static struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts c = {0};
	uint64_t cursor = 0, taken = 0, last = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, race_writer, a), 0);
	for (int done = 0; !done;) {
		done = atomic_load(&a->ctl->reaped_head) == RACE_NOTES;
		uint32_t n = ada_arena_reaped_take(a, &cursor, false, out, &c);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t v = out[i].ts_raw;
			assert_true(v > last && v <= RACE_NOTES); /* once each, in order */
			assert_int_equal(out[i].pid, (int32_t)(v % 4000000 + 1));
			assert_int_equal(out[i].status, exited((int)v));
			last = v;
		}
		taken += n;
	}
	pthread_join(t, NULL);
	taken += ada_arena_reaped_take(a, &cursor, true, out, &c);
	assert_int_equal(cursor, RACE_NOTES);
	assert_int_equal(c.refused, 0); /* one writer: nothing torn */
	assert_int_equal(taken + c.overwritten, RACE_NOTES);
	ada_arena_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_taken_whole_once),
	    cmocka_unit_test(test_wrapped_counts_overwritten),
	    cmocka_unit_test(test_under_way_waits),
	    cmocka_unit_test(test_hostile_refused),
	    cmocka_unit_test(test_writer_against_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
