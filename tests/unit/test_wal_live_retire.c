/*
 * The live view's running list (src/recorder/live.c) when it cannot grow:
 * a failed realloc (the test's wrapper, linked with --wrap) stops
 * live_sync at the first running process it has no room for, so the
 * processes after it are not looked at yet. One of those retired then
 * (the disk budget removes it from r->procs) is folded as it goes, its
 * events in the view's finished sums, not dropped without a word; the
 * processes left are looked at by the next build as before.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "recorder_internal.h"

/* realloc (--wrap=realloc, tests/unit/wal.cmake): one of fail_size
 * bytes fails once. */
void *__real_realloc(void *old, size_t n);
void *__wrap_realloc(void *old, size_t n);
static size_t fail_size;

void *__wrap_realloc(void *old, size_t n)
{
	if (fail_size && n == fail_size) {
		fail_size = 0;
		return NULL;
	}
	return __real_realloc(old, n);
}

#define N_RUNNING 17 /* one more than the running list's first room */

static void test_retired_while_unseen(void **state)
{
	(void)state;
	struct ada_recorder r = {0};
	assert_int_equal(wal_live_init(&r), 0);
	struct wal_proc *procs[N_RUNNING + 2];
	for (size_t i = 0; i < N_RUNNING + 2; i++) {
		procs[i] = calloc(1, sizeof(*procs[i]));
		procs[i]->pid = (pid_t)(100 + i);
		procs[i]->dir_fd = -1;
	}
	/* 17 running (the 17th needs room the list cannot get), then two
	 * finished ones of 500 and 7 events. */
	procs[N_RUNNING]->finished = true;
	procs[N_RUNNING]->events = 500;
	procs[N_RUNNING + 1]->finished = true;
	procs[N_RUNNING + 1]->events = 7;
	r.procs = procs;
	r.nprocs = N_RUNNING + 2;
	fail_size = 32 * sizeof(struct wal_proc *); /* the list's first growth */

	/* The budget retires procs[17]: nothing was lost, it is in the sums. */
	size_t i = N_RUNNING;
	wal_live_proc_retiring(&r, i);
	assert_int_equal(fail_size, 0); /* the growth was refused */
	uint32_t n;
	uint64_t ev;
	wal_live_finished_sums(&r, &n, &ev);
	assert_int_equal(n, 1);
	assert_int_equal(ev, 500);
	struct wal_proc *gone = procs[i];
	memmove(&procs[i], &procs[i + 1], (r.nprocs - i - 1) * sizeof(procs[0]));
	r.nprocs--;
	free(gone);

	/* The next one retired (the list grows now): folded once, no more. */
	i = N_RUNNING;
	wal_live_proc_retiring(&r, i);
	wal_live_finished_sums(&r, &n, &ev);
	assert_int_equal(n, 2);
	assert_int_equal(ev, 507);
	free(procs[i]);
	r.nprocs--;
	for (size_t k = 0; k < r.nprocs; k++)
		free(procs[k]);
	wal_live_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_retired_while_unseen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
