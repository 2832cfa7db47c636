/*
 * The disk budget's scan of a process directory (src/recorder/budget.c)
 * and its sealed thread directories: a thread_K/ whose file is final
 * holds only index and detail files, which the drain counts itself, so
 * the scan counts the directory's own blocks and does not open it. A
 * sealed thread_K/ with another file in it shows the skip (that file is
 * not counted); unsealed again (a reused seq, a file open in it) it is
 * counted again; thread_03/ is not thread_3/; seqs past WAL_SEALED_MAX
 * are never sealed, and a large seq grows the bitmap. The blocks kept
 * per sealed directory survive a growth that could not keep them (a
 * failed realloc: the test's realloc wrapper, linked with --wrap): the
 * next growth makes them afresh, all unknown, never read from memory it
 * did not write.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder_internal.h"

static char dir[64];

/* realloc (--wrap=realloc, tests/unit/wal.cmake): one of fail_size
 * bytes fails once; a new block's bytes are 0xa5, as memory malloc
 * hands out may hold anything. */
void *__real_realloc(void *old, size_t n);
void *__wrap_realloc(void *old, size_t n);
static size_t fail_size;

void *__wrap_realloc(void *old, size_t n)
{
	if (fail_size && n == fail_size) {
		fail_size = 0;
		return NULL;
	}
	void *p = __real_realloc(old, n);
	if (p && !old)
		memset(p, 0xa5, n);
	return p;
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_seal.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* dir/sub/name with 8 KiB in it; returns its allocated bytes. */
static uint64_t put(const char *sub, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	static char buf[8192];
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_true(st.st_blocks > 0);
	return (uint64_t)st.st_blocks * 512u;
}

static uint64_t scan(struct wal_proc *p)
{
	wal_budget_scan_proc(p);
	return p->side_bytes;
}

static void test_sealed(void **state)
{
	(void)state;
	uint64_t x3 = put("thread_3", ".ring_base");
	uint64_t x03 = put("thread_03", "x");
	put("thread_4", "index.atf"); /* the drain's to count: never the scan's */
	uint64_t x5000 = put("thread_5000", "x");
	struct wal_proc p = {.pid = 4194400, .dir = dir};
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);

	uint64_t all = scan(&p);
	assert_true(all >= x3 + x03 + x5000);
	wal_budget_dir_sealed(&p, 3, true);
	assert_int_equal(scan(&p), all - x3);
	wal_budget_dir_sealed(&p, 3, false); /* a file open in it again */
	assert_int_equal(scan(&p), all);

	uint32_t words = p.sealed_words;
	wal_budget_dir_sealed(&p, WAL_SEALED_MAX, true); /* out of range: walked */
	wal_budget_dir_sealed(&p, 9000, false);          /* nothing to clear: no growth */
	assert_int_equal(p.sealed_words, words);
	wal_budget_dir_sealed(&p, 5000, true);
	wal_budget_dir_sealed(&p, 3, true);
	assert_true(p.sealed_words > 5000 / 64);
	assert_int_equal(scan(&p), all - x3 - x5000);

	close(p.dir_fd);
	free(p.sealed);
	free(p.sealed_blocks);
}

/* The first growth keeps the bitmap but not the blocks (their realloc
 * fails): the next growth's blocks are new memory, every entry unknown
 * (without the fix, thread_3/'s was 0xa5a5a5a5: 1.4 TB counted). */
static void test_sealed_blocks_lost(void **state)
{
	(void)state;
	uint64_t x3 = put("thread_3", "x");
	uint64_t x5000 = put("thread_5000", "x");
	struct wal_proc p = {.pid = 4194400, .dir = dir};
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);
	uint64_t all = scan(&p);
	fail_size = 16 * 64 * sizeof(*p.sealed_blocks); /* the first growth's */
	wal_budget_dir_sealed(&p, 3, true);
	assert_int_equal(fail_size, 0);
	assert_null(p.sealed_blocks);
	assert_int_equal(scan(&p), all - x3);
	wal_budget_dir_sealed(&p, 5000, true);
	assert_non_null(p.sealed_blocks);
	assert_int_equal(scan(&p), all - x3 - x5000);
	assert_int_equal(scan(&p), all - x3 - x5000); /* the blocks as kept */
	close(p.dir_fd);
	free(p.sealed);
	free(p.sealed_blocks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sealed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sealed_blocks_lost, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
