/*
 * Tests of the readers' SIGBUS guard (src/atf/atf_guard.c): an ATF v2
 * index file cut short after it was opened is read by several threads at
 * once without a SIGBUS, its events past the new end read as zeros, and
 * the reader says it shrank; one that did not shrink does not say so; a
 * SIGBUS of a mapping the guard does not hold still reaches the handler
 * that was there before it (as the recorder's WAL_GUARDED in `ada recover`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "atf.h"

#define N_EVENTS 20000u /* 640 KB of events: many pages past the cut */
#define N_READERS 4

static char dir[64], path_a[96], path_b[96];

static void write_index(const char *path)
{
	struct ada_atf_file_info info;
	struct ada_atf_writer *w;
	ada_atf_file_info_native(&info, 1);
	assert_int_equal(ada_atf_writer_new(path, false, &info, &w), 0);
	for (uint32_t i = 0; i < N_EVENTS; i++) {
		struct atf_index_event ev = {0};
		ev.timestamp_ns = 1000 + i;
		ev.function_id = i + 1;
		assert_int_equal(ada_atf_writer_index(w, &ev), 0);
	}
	assert_int_equal(ada_atf_writer_finish(w), 0);
}

static int fx_setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/ada-guard-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path_a, sizeof(path_a), "%s/a.atf", dir);
	snprintf(path_b, sizeof(path_b), "%s/b.atf", dir);
	return 0;
}

static int fx_teardown(void **state)
{
	(void)state;
	unlink(path_a);
	unlink(path_b);
	return rmdir(dir);
}

struct reader {
	const struct ada_atf_index *ix;
	uint64_t seen, zeros;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	for (uint64_t s = 0; s < ada_atf_index_count(r->ix); s++) {
		const struct atf_index_event *ev = ada_atf_index_get(r->ix, s);
		r->seen++;
		r->zeros += ev->function_id == 0;
	}
	return NULL;
}

/* Cut to 4 KiB under an open reader, then read on N_READERS threads at
 * once (they fault together on the same pages). */
static void test_shrunk_under_threads(void **state)
{
	(void)state;
	struct ada_atf_index *a, *b;
	write_index(path_a);
	write_index(path_b);
	assert_int_equal(ada_atf_index_open(path_a, 0, &a), 0);
	assert_int_equal(ada_atf_index_open(path_b, 0, &b), 0);
	assert_int_equal(truncate(path_a, 4096), 0);
	pthread_t th[N_READERS];
	struct reader r[N_READERS];
	for (int i = 0; i < N_READERS; i++) {
		r[i] = (struct reader){a, 0, 0};
		assert_int_equal(pthread_create(&th[i], NULL, reader_run, &r[i]), 0);
	}
	for (int i = 0; i < N_READERS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(r[i].seen, N_EVENTS);
		/* 4096 bytes: the 64-byte header and 126 whole events. */
		assert_int_equal(r[i].zeros, N_EVENTS - (4096 - 64) / 32);
	}
	struct reader rb = {b, 0, 0};
	reader_run(&rb);
	assert_int_equal(rb.zeros, 0);
	assert_true(ada_atf_index_shrank(a));
	assert_false(ada_atf_index_shrank(b));
	ada_atf_index_free(a);
	ada_atf_index_free(b);
}

static sigjmp_buf prior_env;
static volatile sig_atomic_t prior_calls;

static void prior_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	prior_calls++;
	siglongjmp(prior_env, 1);
}

/* A handler installed before the guard gets the faults of mappings the
 * guard does not hold. */
static void test_other_faults_passed_on(void **state)
{
	(void)state;
	struct sigaction sa = {0}, old;
	struct ada_atf_index *a;
	sa.sa_sigaction = prior_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGBUS, &sa, &old), 0);
	write_index(path_a);
	assert_int_equal(ada_atf_index_open(path_a, 0, &a), 0); /* installs the guard */
	int fd = open(path_b, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 65536), 0);
	volatile const uint8_t *m = mmap(NULL, 65536, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(ftruncate(fd, 0), 0);
	if (sigsetjmp(prior_env, 0) == 0)
		(void)m[8192];
	assert_int_equal(prior_calls, 1);
	munmap((void *)m, 65536);
	close(fd);
	ada_atf_index_free(a);
	sigaction(SIGBUS, &old, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_shrunk_under_threads, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_other_faults_passed_on, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
