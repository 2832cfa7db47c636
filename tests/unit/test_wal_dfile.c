/*
 * detail.atf when a write fails (src/recorder/detail_file.c): the file is
 * cut back to its last record whose bytes all reached it and sealed, a
 * file the strict reader opens, with the links of the records it lost
 * handed back; sealed empty when none did. A full disk is stood in for by
 * RLIMIT_FSIZE (writes past it fail with EFBIG), so no tmpfs and no root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "atf.h"
#include "detail_internal.h"

static char tmpdir[256];
static int tmpfd = -1;
static struct rlimit saved;

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ada_wal_dfile_XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	tmpfd = open(tmpdir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG instead */
	return tmpfd >= 0 && getrlimit(RLIMIT_FSIZE, &saved) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	setrlimit(RLIMIT_FSIZE, &saved);
	close(tmpfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Files written from here on end at limit bytes. */
static void file_limit(uint64_t limit)
{
	struct rlimit rl = {.rlim_cur = limit, .rlim_max = saved.rlim_max};
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/* Appends CALL records (index_seq 2 i) until an append fails; returns how
 * many were appended. */
static uint64_t fill(struct wal_dfile *d, uint64_t max)
{
	uint8_t stack[64];
	memset(stack, 0x5a, sizeof(stack));
	for (uint64_t i = 0; i < max; i++) {
		struct atf_detail_function_payload p = {.function_id = i, .stack_size = 64};
		struct atf_detail_event_header h = {
		    .total_length = (uint32_t)(24 + 100 + 64),
		    .event_type = ATF_DETAIL_FUNCTION_CALL,
		    .index_seq = (uint32_t)(2 * i),
		    .thread_id = 7,
		    .timestamp = 1000 + i,
		};
		if (wal_dfile_append(d, &h, &p, stack) < 0)
			return i;
	}
	return max;
}

/* The finished file as the strict reader sees it: its record count. */
static uint64_t strict_count(void)
{
	char path[512];
	struct ada_atf_detail *a;
	snprintf(path, sizeof(path), "%s/detail.atf", tmpdir);
	assert_int_equal(ada_atf_detail_open(path, 0, &a), 0);
	uint64_t n = ada_atf_detail_count(a);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(ada_atf_detail_get(a, i)->index_seq, 2 * i);
	ada_atf_detail_free(a);
	return n;
}

/* The footer's CRC is zlib's over exactly the events section (errata 3):
 * the writer folds it a buffer at a time, and a cut file's is the CRC at
 * a record's end inside a buffer. */
static void assert_footer_crc(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/detail.atf", tmpdir);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	assert_true(n >= 128);
	uint8_t *b = malloc((size_t)n);
	assert_non_null(b);
	rewind(f);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	struct atf_detail_footer ft;
	memcpy(&ft, b + n - 64, sizeof(ft));
	assert_int_equal(ft.bytes_length, (uint64_t)n - 128);
	assert_int_equal(ft.checksum, (uint32_t)crc32(0, b + 64, (uInt)(n - 128)));
	free(b);
}

/* The limit falls inside the second buffer: the first buffer's whole
 * records stay, the rest are cut, and their links are handed back. */
static void test_cut_to_durable(void **state)
{
	(void)state;
	struct wal_dfile *d;
	assert_int_equal(wal_dfile_open(tmpfd, "detail.atf", 7, ATF_ARCH_X86_64, &d), 0);
	file_limit(400u * 1024u);
	uint64_t appended = fill(d, 10000);
	assert_true(appended < 10000); /* the second buffer's write failed */
	struct wal_dfile_end end;
	assert_int_equal(wal_dfile_finish(d, &end), -EFBIG);
	assert_int_equal(end.error, -EFBIG);
	assert_false(end.invalid);
	assert_int_equal(end.appended, appended);
	assert_true(end.kept > 0 && end.kept < appended);
	/* the records of the first 256 KiB buffer: those whole in it */
	assert_int_equal(end.kept, (256u * 1024u) / 188u);
	assert_int_equal(strict_count(), end.kept);
	/* every record not kept, and the one whose append failed, is listed */
	uint64_t lost = 0;
	for (size_t i = 0; i < end.nunsure; i++) {
		assert_int_equal(end.unsure[i].index_seq, 2 * end.unsure[i].detail_seq);
		lost += end.unsure[i].detail_seq >= end.kept;
	}
	assert_int_equal(lost, appended - end.kept + 1);
	assert_int_equal(end.file_bytes, 64 + end.kept * 188 + 64);
	assert_footer_crc();
	free(end.unsure);
}

/* Not one record reached the file: it is sealed empty, still valid. */
static void test_sealed_empty(void **state)
{
	(void)state;
	struct wal_dfile *d;
	assert_int_equal(wal_dfile_open(tmpfd, "detail.atf", 7, ATF_ARCH_X86_64, &d), 0);
	file_limit(64u + 1000u);
	uint64_t appended = fill(d, 2000); /* more than a buffer: its write fails */
	struct wal_dfile_end end;
	assert_int_equal(wal_dfile_finish(d, &end), -EFBIG);
	assert_false(end.invalid);
	assert_int_equal(end.kept, 0);
	assert_int_equal(end.appended, appended);
	assert_int_equal(strict_count(), 0);
	assert_footer_crc();
	free(end.unsure);
}

/* No failure: everything kept, nothing handed back. */
static void test_whole(void **state)
{
	(void)state;
	struct wal_dfile *d;
	assert_int_equal(wal_dfile_open(tmpfd, "detail.atf", 7, ATF_ARCH_X86_64, &d), 0);
	assert_int_equal(fill(d, 3000), 3000);
	struct wal_dfile_end end;
	assert_int_equal(wal_dfile_finish(d, &end), 0);
	assert_int_equal(end.error, 0);
	assert_int_equal(end.kept, 3000);
	assert_null(end.unsure);
	assert_int_equal(strict_count(), 3000);
	assert_footer_crc();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_cut_to_durable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sealed_empty, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_whole, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
