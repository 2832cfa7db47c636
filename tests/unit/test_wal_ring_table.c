/*
 * pid_N/.ring_slots (src/recorder/ring_table.c): the drain's record per
 * ring slot of which positions a thread's unfinished index file holds,
 * read back by `ada recover`. A slot a later thread takes holds that
 * thread's record only; records that are not the drain's (bytes of
 * garbage, a record at another slot's offset, a bad CRC) are skipped and
 * counted; a file larger than the slot limit is read no further; a link
 * planted at the name is replaced, its target untouched; the final
 * manifest's drop removes the file.
 *
 * Each record carries the file generation of the index.atf it describes
 * (the G it gets when rotated): a record whose G names a file already
 * rotated is stale (wal_ring_table_rotated); an ARS1 record (sessions
 * before it) has none and is read as such.
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
#include <zlib.h>

#include "ring.h"
#include "recorder_internal.h"

static char dir[64], path[128];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_ringtab.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/.ring_slots", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void put(struct wal_proc *p, uint32_t slot, uint32_t seq, uint32_t gen, uint64_t base)
{
	struct wal_thread t = {
	    .p = p, .slot = slot, .seq = seq, .slot_gen = gen, .ring_next = base};
	assert_int_equal(wal_ring_table_put(p, &t), 0);
}

static void expect(const struct wal_ring_table *tb, uint32_t seq, uint32_t slot, uint32_t gen,
                   uint64_t base)
{
	struct wal_ring_base b;
	assert_true(wal_ring_table_find(tb, seq, &b));
	assert_int_equal(b.slot, slot);
	assert_int_equal(b.gen, gen);
	assert_int_equal(b.base, base);
}

static void test_records(void **state)
{
	(void)state;
	struct wal_proc p = {.dir = dir};
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);
	put(&p, 3, 7, 2, 1000);
	put(&p, 0, 9, 1, 5);
	put(&p, 3, 7, 2, 4096);  /* thread 7 rotated: its new file's base */
	put(&p, 3, 11, 3, 8192); /* slot 3 taken by thread 11 */
	struct wal_ring_table tb;
	wal_ring_table_load(dir, &tb);
	assert_true(tb.found);
	assert_int_equal(tb.n, 2);
	assert_int_equal(tb.bad, 0);
	struct wal_ring_base b;
	assert_false(wal_ring_table_find(&tb, 7, &b)); /* its slot is thread 11's now */
	expect(&tb, 11, 3, 3, 8192);
	expect(&tb, 9, 0, 1, 5);
	wal_ring_table_free(&tb);

	/* Not the drain's: garbage at slot 5, slot 0's record at slot 6,
	 * slot 3's with one bit of its base flipped. */
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	char junk[WAL_RING_TABLE_REC], rec[WAL_RING_TABLE_REC];
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 5 * WAL_RING_TABLE_REC), sizeof(junk));
	assert_int_equal(pread(fd, rec, sizeof(rec), 0), sizeof(rec));
	assert_int_equal(pwrite(fd, rec, sizeof(rec), 6 * WAL_RING_TABLE_REC), sizeof(rec));
	assert_int_equal(pread(fd, rec, sizeof(rec), 3 * WAL_RING_TABLE_REC), sizeof(rec));
	rec[16] ^= 1;
	assert_int_equal(pwrite(fd, rec, sizeof(rec), 3 * WAL_RING_TABLE_REC), sizeof(rec));
	/* Past the slot limit: never read (a hole of 2 MiB before it). */
	off_t far = (off_t)ADA_ARENA_SLOTS_LIMIT * WAL_RING_TABLE_REC;
	assert_int_equal(pwrite(fd, junk, sizeof(junk), far), sizeof(junk));
	close(fd);
	wal_ring_table_load(dir, &tb);
	assert_int_equal(tb.n, 1);
	assert_int_equal(tb.bad, 3);
	expect(&tb, 9, 0, 1, 5);
	assert_false(wal_ring_table_find(&tb, 11, &b));
	wal_ring_table_free(&tb);

	wal_ring_table_drop(&p); /* the final manifest: gone */
	assert_int_equal(access(path, F_OK), -1);
	wal_ring_table_load(dir, &tb);
	assert_false(tb.found);
	assert_false(wal_ring_table_find(&tb, 9, &b));
	close(p.dir_fd);
}

static void test_file_generation(void **state)
{
	(void)state;
	struct wal_proc p = {.dir = dir};
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);
	struct wal_thread t = {.p = &p, .slot = 2, .seq = 5, .slot_gen = 1, .ring_next = 64};
	t.next_gen = 3;
	assert_int_equal(wal_ring_table_put(&p, &t), 0);
	wal_ring_table_close(&p);
	struct wal_ring_table tb;
	struct wal_ring_base b;
	wal_ring_table_load(dir, &tb);
	assert_true(wal_ring_table_find(&tb, 5, &b));
	assert_int_equal(b.file_gen, 3);
	wal_ring_table_free(&tb);
	char *names[] = {"index.g1.atf", "index.g2.atf", "index.atf"};
	assert_false(wal_ring_table_rotated(3, names, 3)); /* index.atf is G 3 */
	assert_true(wal_ring_table_rotated(2, names, 3));  /* index.g2.atf's record */
	assert_false(wal_ring_table_rotated(WAL_RING_FILE_GEN_NONE, names, 3));

	/* An ARS1 record (0 in its last word): no file generation. */
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	unsigned char rec[WAL_RING_TABLE_REC] = {0};
	uint32_t w[4] = {0x31535241u, 2, 5, 1};
	uint64_t base = 64;
	memcpy(rec, w, sizeof(w));
	memcpy(rec + 16, &base, sizeof(base));
	uint32_t crc = (uint32_t)crc32(0, rec, 24);
	memcpy(rec + 24, &crc, sizeof(crc));
	assert_int_equal(pwrite(fd, rec, sizeof(rec), 2 * WAL_RING_TABLE_REC), sizeof(rec));
	close(fd);
	wal_ring_table_load(dir, &tb);
	assert_int_equal(tb.bad, 0);
	assert_true(wal_ring_table_find(&tb, 5, &b));
	assert_int_equal(b.base, 64);
	assert_int_equal(b.file_gen, WAL_RING_FILE_GEN_NONE);
	wal_ring_table_free(&tb);
	close(p.dir_fd);
}

/* The file generation is checked with the rest of the record: an ARS2
 * record whose last word is damaged (here: one bit of it) is not the
 * drain's, counted bad; taken, a G made smaller would make recover drop
 * the current file's record, a larger one keep a stale record. */
static void test_file_generation_in_crc(void **state)
{
	(void)state;
	struct wal_proc p = {.dir = dir};
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);
	struct wal_thread t = {.p = &p, .slot = 1, .seq = 4, .slot_gen = 1, .ring_next = 128};
	t.next_gen = 6;
	assert_int_equal(wal_ring_table_put(&p, &t), 0);
	wal_ring_table_close(&p);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	unsigned char rec[WAL_RING_TABLE_REC];
	assert_int_equal(pread(fd, rec, sizeof(rec), WAL_RING_TABLE_REC), sizeof(rec));
	rec[28] ^= 4; /* file generation 6 -> 2 */
	assert_int_equal(pwrite(fd, rec, sizeof(rec), WAL_RING_TABLE_REC), sizeof(rec));
	close(fd);
	struct wal_ring_table tb;
	struct wal_ring_base b;
	wal_ring_table_load(dir, &tb);
	assert_int_equal(tb.bad, 1);
	assert_false(wal_ring_table_find(&tb, 4, &b));
	wal_ring_table_free(&tb);
	close(p.dir_fd);
}

/* A put that fails (a directory planted under the name: it is not
 * removed, nothing is written) is counted with its reason, in one
 * warning of the process kept current as more fail. */
static void test_put_failed(void **state)
{
	(void)state;
	assert_int_equal(mkdir(path, 0700), 0);
	struct wal_proc p = {.dir = dir, .pid = 42, .warnings = json_array()};
	struct ada_recorder *r = calloc(1, sizeof(*r));
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_array_append_new(p.warnings, json_string("an earlier warning"));
	struct wal_thread t = {.p = &p, .slot = 1, .seq = 4, .slot_gen = 1, .ring_next = 77};
	assert_true(wal_ring_table_put(&p, &t) < 0);
	wal_ring_table_failed(r, &p);
	assert_int_equal(p.ring_table_fails, 1);
	assert_int_equal(json_array_size(p.warnings), 2);
	const char *w = json_string_value(json_array_get(p.warnings, 1));
	assert_non_null(strstr(w, "pid 42: the ring positions of 1 index file could not"));
	assert_non_null(strstr(w, strerror(-p.ring_table_err)));
	t.seq = 5;
	assert_true(wal_ring_table_put(&p, &t) < 0);
	wal_ring_table_failed(r, &p);
	assert_int_equal(json_array_size(p.warnings), 2);
	w = json_string_value(json_array_get(p.warnings, 1));
	assert_non_null(strstr(w, "of 2 index files"));
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	json_decref(p.warnings);
	free(r);
	close(p.dir_fd);
}

static void test_planted_link(void **state)
{
	(void)state;
	char victim[128];
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	assert_int_equal(symlink(victim, path), 0);
	struct wal_proc p = {.dir = dir};
	p.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put(&p, 1, 4, 1, 77);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);
	struct wal_ring_table tb;
	wal_ring_table_load(dir, &tb);
	expect(&tb, 4, 1, 1, 77);
	wal_ring_table_free(&tb);
	wal_ring_table_close(&p);
	close(p.dir_fd);
}

/* A file shorter than one record (cut, or the target's): found, no
 * record, nothing sorted (qsort's array is NULL then: the
 * undefined-behaviour build checks). */
static void test_short_file(void **state)
{
	(void)state;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ARS1 cut short", 14), 14);
	close(fd);
	struct wal_ring_table tb;
	wal_ring_table_load(dir, &tb);
	assert_true(tb.found);
	assert_int_equal(tb.n, 0);
	assert_int_equal(tb.bad, 0);
	struct wal_ring_base b;
	assert_false(wal_ring_table_find(&tb, 0, &b));
	wal_ring_table_free(&tb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_records, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_generation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_generation_in_crc, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_planted_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_put_failed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_short_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
