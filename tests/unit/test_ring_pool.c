/*
 * The arena pool (src/ring/pool.c): the recorder scrubs a finished
 * process's arena file -- the control block, the descriptors and slot 0's
 * headers zeroed in place, slot 0's index events and detail words kept
 * as they are, every other page punched -- and renames it to pool.<k>;
 * the next arena made in that
 * directory takes it (ADA_ARENA_F_RECYCLED), starts its rings at 0 and
 * reads back exactly its own events, never the old owner's left in the
 * kept pages. A pool file unfit for the arena (another size, a byte where
 * a header must be zero) is not taken: a new file is made. Places past
 * the first two take a file only while one more arena fits under the
 * shared-memory ceiling beside it (the ceiling rule).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"

/* Three slots: what the pool keeps (the control block, with its table of
 * reaped children, and slot 0) stays under half the file. */
#define CONFIG "max_threads=3,index_events=4096,detail_bytes=65536"

struct fx {
	char dir[64];
	char first[128], second[128], pool[128];
	struct ada_arena_config cfg;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-test-pool-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	snprintf(f->first, sizeof(f->first), "%s/100.ring", f->dir);
	snprintf(f->second, sizeof(f->second), "%s/200.ring", f->dir);
	if (ada_arena_pool_name(f->dir, 0, f->pool, sizeof(f->pool)) != 0 ||
	    ada_arena_config_parse(CONFIG, strlen(CONFIG), &f->cfg) != 0)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	unlink(f->first);
	unlink(f->second);
	unlink(f->pool);
	char path[160];
	for (unsigned k = 0; k < 16; k++) {
		if (ada_arena_pool_name(f->dir, k, path, sizeof(path)) == 0)
			unlink(path);
		snprintf(path, sizeof(path), "%s/%u.ring", f->dir, 300 + k);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%u.ring", f->dir, 400 + k);
		unlink(path);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Emits n CALL events with function ids from 0 into a's slot 0 and
 * consumes them, checking each id; returns how many were read. */
static uint64_t produce_and_read(struct ada_arena *a, uint64_t n)
{
	ada_producer_reset_thread();
	ada_producer_set_arena(a);
	uint64_t next = 0;
	for (uint64_t i = 0; i < n; i++) {
		ada_emit(i, ATF_EVENT_CALL, 1);
		const struct atf_index_event *e;
		size_t k;
		while ((k = ada_index_ring_peek(a, 0, &e)) > 0) {
			for (size_t j = 0; j < k; j++)
				assert_int_equal(e[j].function_id, next++);
			ada_index_ring_release(a, 0, k);
		}
	}
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	return next;
}

/* Whether the page at off of the file at path is in memory. */
static bool page_resident(const char *path, uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)(off & ~4095ull));
	close(fd);
	assert_true(m != MAP_FAILED);
	unsigned char v = 0;
	assert_int_equal(mincore(m, 4096, &v), 0);
	munmap(m, 4096);
	return v & 1;
}

/* Whether the page at off of the file at path is in memory and all
 * zeros. */
static bool page_zero(const char *path, uint64_t off)
{
	if (!page_resident(path, off))
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	unsigned char buf[4096], zero[4096] = {0};
	assert_int_equal(pread(fd, buf, sizeof(buf), (off_t)(off & ~4095ull)),
	                 (ssize_t)sizeof(buf));
	close(fd);
	return memcmp(buf, zero, sizeof(buf)) == 0;
}

static void test_pool_reuses_ring_pages(void **state)
{
	struct fx *f = *state;
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_create(f->first, &f->cfg, &a, NULL), 0);
	assert_false(ada_arena_flags(a) & ADA_ARENA_F_RECYCLED);
	assert_int_equal(produce_and_read(a, 3000), 3000);
	uint64_t ev = (uint64_t)((uint8_t *)ring_index_events(a, 0) - a->base);
	uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(a, 0) - a->base);
	uint64_t ev_page = (ev + 4095) & ~4095ull, dw_page = (dw + 4095) & ~4095ull;
	uint64_t ih = (uint64_t)((uint8_t *)ring_index_hdr(a, 0) - a->base);
	/* A page outside what the pool keeps: slot 1's first events. */
	uint64_t other = (uint64_t)((uint8_t *)ring_index_events(a, 1) - a->base);
	other = (other + 4095) & ~4095ull;
	a->base[other] = 1;
	bool hdr_dirty = false; /* slot 0's header holds its head of 3000 now */
	for (uint64_t i = ih & ~4095ull; i < (ih & ~4095ull) + 4096; i++)
		hdr_dirty |= a->base[i] != 0;
	assert_true(hdr_dirty);
	uint64_t keep = ada_arena_pool_bytes(a);
	assert_true(keep >= 3 * 4096);
	assert_true(keep <= ada_arena_size_for(&f->cfg) / 2);
	ada_arena_close(a);

	/* The recorder's part: its own handle of the file of a process gone. */
	int fd = open(f->first, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	struct ada_arena *rec = NULL;
	assert_int_equal(ada_arena_open_fd(fd, &rec), 0);
	assert_int_equal(ada_arena_pool_scrub(rec, fd), 0);
	ada_arena_close(rec);
	close(fd);
	assert_int_equal(ada_arena_pool_put(f->first, f->dir, 0), 0);
	assert_int_equal(access(f->first, F_OK), -1);
	assert_int_equal(access(f->pool, F_OK), 0);
	/* A second put never replaces the waiting file. */
	fd = open(f->first, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ada_arena_pool_put(f->first, f->dir, 0), -EEXIST);
	assert_int_equal(unlink(f->first), 0);
	assert_true(page_resident(f->pool, ev_page)); /* kept: the ring pages */
	assert_true(page_resident(f->pool, dw_page)); /* kept: the detail words */
	assert_false(page_resident(f->pool, other));  /* punched */
	/* Kept, zeroed: the control block and slot 0's index header. */
	assert_true(page_zero(f->pool, 0));
	assert_true(page_zero(f->pool, ih));

	/* The next arena made in the directory takes it, as a new one. */
	struct ada_arena *b = NULL;
	assert_int_equal(ada_arena_create(f->second, &f->cfg, &b, NULL), 0);
	assert_int_equal(access(f->pool, F_OK), -1);
	assert_true(ada_arena_flags(b) & ADA_ARENA_F_RECYCLED);
	struct ada_slot_info si;
	ada_arena_slot_info(b, 0, &si);
	assert_int_equal(si.state, ADA_SLOT_FREE);
	assert_int_equal(si.head, 0);
	/* Exactly its own 10 events, from 0: none of the 3000 before. */
	assert_int_equal(produce_and_read(b, 10), 10);
	ada_arena_slot_info(b, 0, &si);
	assert_int_equal(si.head, 10);
	ada_arena_close(b);
}

static void test_pool_refuses_unfit_file(void **state)
{
	struct fx *f = *state;
	int fd = open(f->pool, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0); /* no arena's size */
	close(fd);
	struct ada_arena *b = NULL;
	assert_int_equal(ada_arena_create(f->second, &f->cfg, &b, NULL), 0);
	assert_false(ada_arena_flags(b) & ADA_ARENA_F_RECYCLED);
	struct stat st;
	assert_int_equal(stat(f->second, &st), 0);
	assert_int_equal((uint64_t)st.st_size, ada_arena_size_for(&f->cfg));
	assert_int_equal(produce_and_read(b, 5), 5);
	ada_arena_close(b);
	unlink(f->second);
	/* The right size, but a byte where the maker expects a zero (not
	 * scrubbed for this layout): not taken either. */
	fd = open(f->pool, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)ada_arena_size_for(&f->cfg)), 0);
	assert_int_equal(pwrite(fd, "x", 1, 100), 1);
	close(fd);
	assert_int_equal(ada_arena_create(f->second, &f->cfg, &b, NULL), 0);
	assert_false(ada_arena_flags(b) & ADA_ARENA_F_RECYCLED);
	assert_int_equal(access(f->pool, F_OK), -1); /* used up */
	assert_int_equal(produce_and_read(b, 5), 5);
	ada_arena_close(b);
}

/* The file at path of an arena whose process is gone, scrubbed as the
 * recorder scrubs it and put under pool slot k of dir. */
static void pool_put_scrubbed(const struct fx *f, const char *path, unsigned k)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	struct ada_arena *rec = NULL;
	assert_int_equal(ada_arena_open_fd(fd, &rec), 0);
	assert_int_equal(ada_arena_pool_scrub(rec, fd), 0);
	ada_arena_close(rec);
	close(fd);
	assert_int_equal(ada_arena_pool_put(path, f->dir, k), 0);
}

/* A burst: eight processes finished while none started (a loaded drain
 * finishing a script's subshells at once), each file under a slot of its
 * own; the next eight makers each take one. Two slots (before) made the
 * third a new file. */
static void test_pool_takes_every_slot(void **state)
{
	struct fx *f = *state;
	char path[160];
	for (unsigned k = 0; k < 8; k++) { /* all made while the pool is empty */
		snprintf(path, sizeof(path), "%s/%u.ring", f->dir, 300 + k);
		struct ada_arena *a = NULL;
		assert_int_equal(ada_arena_create(path, &f->cfg, &a, NULL), 0);
		assert_false(ada_arena_flags(a) & ADA_ARENA_F_RECYCLED);
		assert_int_equal(produce_and_read(a, 100), 100);
		ada_arena_close(a);
	}
	for (unsigned k = 0; k < 8; k++) {
		snprintf(path, sizeof(path), "%s/%u.ring", f->dir, 300 + k);
		pool_put_scrubbed(f, path, k);
	}
	for (unsigned k = 0; k < 8; k++) {
		snprintf(path, sizeof(path), "%s/%u.ring", f->dir, 400 + k);
		struct ada_arena *b = NULL;
		assert_int_equal(ada_arena_create(path, &f->cfg, &b, NULL), 0);
		assert_true(ada_arena_flags(b) & ADA_ARENA_F_RECYCLED);
		assert_int_equal(produce_and_read(b, 10), 10);
		ada_arena_close(b);
		assert_int_equal(unlink(path), 0);
	}
	for (unsigned k = 0; k < 8; k++) { /* every one taken */
		assert_int_equal(ada_arena_pool_name(f->dir, k, path, sizeof(path)), 0);
		assert_int_equal(access(path, F_OK), -1);
	}
}

/* The ceiling rule (ada_arena_pool_admits), its edges: the first two
 * places whatever the ceiling, no ceiling, one more arena beside the file
 * fitting exactly or by a byte too many, and counts the target wrote
 * (reserved past the ceiling, or so large the sum would wrap). */
static void test_pool_ceiling_rule(void **state)
{
	(void)state;
	const uint64_t keep = 3 * 4096, next = 1 << 20, c = 64 << 20;
	struct ada_shm_budget_view v = {.ceiling = c, .reserved = c - keep - next};
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		assert_true(ada_arena_pool_admits(k, &v, keep, next)); /* exactly fits */
	v.reserved++;
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		assert_int_equal(ada_arena_pool_admits(k, &v, keep, next), k < 2);
	v.reserved = c + 1; /* over already */
	assert_true(ada_arena_pool_admits(1, &v, keep, next));
	assert_false(ada_arena_pool_admits(2, &v, keep, next));
	v.reserved = UINT64_MAX - keep; /* reserved + keep + next wraps to next - 1 */
	assert_false(ada_arena_pool_admits(2, &v, keep, next));
	v.reserved = c - keep - next + 1;
	assert_false(ada_arena_pool_admits(7, &v, UINT64_MAX, next)); /* keep + next wraps */
	v.ceiling = 0;                                                /* none */
	v.reserved = UINT64_MAX;
	assert_true(ada_arena_pool_admits(7, &v, keep, next));
}

/* The rule on a budget as the recorder drives it, with a tight ceiling:
 * arenas reserved until one more beside a finished arena's kept pages
 * just fits; places 2..7 take the file then and refuse it a page later,
 * places 0 and 1 take it both times. */
static void test_pool_ceiling_budget(void **state)
{
	struct fx *f = *state;
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_create(f->first, &f->cfg, &a, NULL), 0);
	uint64_t keep = ada_arena_pool_bytes(a), next = ada_arena_budget_size_for(&f->cfg);
	assert_true(keep > 0 && keep < next);
	ada_arena_close(a);
	int dfd = open(f->dir, O_RDONLY | O_DIRECTORY);
	struct ada_shm_budget *b = NULL;
	const uint64_t ceiling = 3 * next + keep; /* two arenas exist, one more fits */
	assert_int_equal(ada_shm_budget_create(dfd, ceiling, &b), 0);
	assert_int_equal(ada_shm_budget_take(b, next), 0);
	assert_int_equal(ada_shm_budget_take(b, next), 0);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		assert_true(ada_arena_pool_admits(k, &v, keep, next));
	assert_int_equal(ada_shm_budget_grow(b, 4096), 0);
	ada_shm_budget_read(b, &v);
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++)
		assert_int_equal(ada_arena_pool_admits(k, &v, keep, next), k < 2);
	ada_shm_budget_close(b);
	unlinkat(dfd, ADA_SHM_BUDGET_NAME, 0);
	close(dfd);
}

/* A file the recorder makes for the pool (ada_arena_pool_make, while a
 * program forks before any child has finished): nameless until whole,
 * never over a name there, its kept header pages allocated and zero, the
 * first of slot 0's ring pages allocated; the next maker takes it as a
 * pooled file and reads back exactly its own events. */
static void test_pool_make_new_file(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ada_arena_pool_make(f->dir, 0, &f->cfg), 0);
	assert_int_equal(ada_arena_pool_make(f->dir, 0, &f->cfg), -EEXIST);
	struct stat st;
	assert_int_equal(stat(f->pool, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal((uint64_t)st.st_size, ada_arena_size_for(&f->cfg));
	assert_true(ada_arena_pool_make_bytes(&f->cfg) >= 3 * 4096);
	/* Nothing else in the directory: no temporary name left. */
	char extra[160];
	snprintf(extra, sizeof(extra), "%s/pool.1", f->dir);
	assert_int_equal(access(extra, F_OK), -1);
	assert_true(page_zero(f->pool, 0)); /* the control block: allocated, zero */

	struct ada_arena *b = NULL;
	assert_int_equal(ada_arena_create(f->second, &f->cfg, &b, NULL), 0);
	assert_int_equal(access(f->pool, F_OK), -1);
	assert_true(ada_arena_flags(b) & ADA_ARENA_F_RECYCLED);
	uint64_t ih = (uint64_t)((uint8_t *)ring_index_hdr(b, 0) - b->base);
	uint64_t ev = (uint64_t)((uint8_t *)ring_index_events(b, 0) - b->base);
	uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(b, 0) - b->base);
	uint64_t other = (uint64_t)((uint8_t *)ring_index_events(b, 1) - b->base);
	assert_true(page_resident(f->second, ih));                         /* slot 0's header */
	assert_true(page_resident(f->second, (ev + 4095) & ~4095ull));     /* first ring page */
	assert_true(page_resident(f->second, (dw + 4095) & ~4095ull));     /* first detail page */
	assert_false(page_resident(f->second, (other + 4095) & ~4095ull)); /* slot 1: none */
	assert_int_equal(produce_and_read(b, 10), 10);
	ada_arena_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pool_reuses_ring_pages, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_pool_refuses_unfit_file, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_pool_takes_every_slot, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_pool_make_new_file, fx_setup, fx_teardown),
	    cmocka_unit_test(test_pool_ceiling_rule),
	    cmocka_unit_test_setup_teardown(test_pool_ceiling_budget, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
