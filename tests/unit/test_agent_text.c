/*
 * A plan cache hit's check read from the image's file (agent_text.c,
 * agent_text_fits): the same answer as the check of the mapped bytes
 * (plan_cache_fits) for every plan -- bytes that fit, bytes that do not,
 * a padding slot on the page before -- with the pages the process wrote
 * (a private copy) checked in memory, not in the file; outside the
 * start-up window, every plan checked in memory.
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
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_internal.h"
#include "plancache_internal.h"

struct agent_state agent;

#define TEXT_N 200 /* pages: more than a window */

/* A private read-exec mapping of a new file of TEXT_N pages (named
 * path, the caller unlinks it), byte a of the file (a * 7) % 251. */
static uint8_t *text_file(long pg, char *path)
{
	strcpy(path, "/tmp/ada_test_agent_text_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	uint8_t *b = malloc((size_t)pg);
	assert_non_null(b);
	for (size_t k = 0; k < TEXT_N; k++) {
		for (long i = 0; i < pg; i++)
			b[i] = (uint8_t)(((k * (size_t)pg + (size_t)i) * 7) % 251);
		assert_int_equal(pwrite(fd, b, (size_t)pg, (off_t)(k * (size_t)pg)), pg);
	}
	free(b);
	uint8_t *p = mmap(NULL, TEXT_N * (size_t)pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_ptr_not_equal(p, MAP_FAILED);
	close(fd); /* the mapping keeps the file */
	return p;
}

static struct hook_arch_plan plan_at(const uint8_t *p, size_t off, size_t pad_back)
{
	struct hook_arch_plan pl;
	memset(&pl, 0, sizeof(pl));
	pl.fn_addr = (uint64_t)(uintptr_t)(p + off);
	pl.patch_len = pad_back ? 2 : 5;
	memcpy(pl.original, p + off, pl.patch_len);
	if (pad_back) {
		pl.pad_addr = pl.fn_addr - pad_back;
		memcpy(pl.pad_original, p + off - pad_back, HOOK_ARCH_PAD_SLOT);
	}
	return pl;
}

/* Both answers for plan: the file's (agent_text_fits) and memory's. */
static void expect(struct agent_text *t, const struct hook_arch_memview *mv,
                   const struct hook_arch_plan *pl, bool want)
{
	assert_int_equal(plan_cache_fits(mv, pl, (unsigned)pl->patch_len), want);
	assert_int_equal(agent_text_fits(t, mv, pl, (unsigned)pl->patch_len), want);
}

/* Opens the start-up window for a test of the file check, or removes
 * the test's files (pb may be NULL) and skips it: under a seccomp filter
 * the check reads memory only. */
static void window_or_skip(const char *pa, const char *pb)
{
	hook_seccomp_window(true);
	if (hook_no_seccomp())
		return;
	hook_seccomp_window(false);
	unlink(pa);
	if (pb)
		unlink(pb);
	skip();
}

static void test_text_fits(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	char path[64];
	uint8_t *p = text_file(pg, path);
	struct hook_arch_region r = {(uint64_t)(uintptr_t)p, TEXT_N * (uint64_t)pg, p};
	struct hook_arch_memview mv = {&r, 1};
	/* page 150: a private copy with bytes of its own (a text relocation) */
	assert_int_equal(mprotect(p + 150 * pg, (size_t)pg, PROT_READ | PROT_WRITE), 0);
	struct hook_arch_plan old150 = plan_at(p, 150 * (size_t)pg + 64, 0);
	p[150 * pg + 65] ^= 0xff;
	assert_int_equal(mprotect(p + 150 * pg, (size_t)pg, PROT_READ | PROT_EXEC), 0);

	window_or_skip(path, NULL);
	struct agent_text t;
	agent_text_open(&t, (uint64_t)(uintptr_t)p + 100);
	assert_true(t.fd >= 0);
	uint64_t before = agent.cache_file_checked;
	struct hook_arch_plan a = plan_at(p, 16, 0), b = plan_at(p, 3 * (size_t)pg + 7, 0);
	expect(&t, &mv, &a, true);
	expect(&t, &mv, &b, true);
	b.original[4] ^= 1; /* a cache that does not fit the file */
	expect(&t, &mv, &b, false);
	/* a padding slot on the page before the function's, in another window */
	struct hook_arch_plan c = plan_at(p, 130 * (size_t)pg + 1, 6);
	expect(&t, &mv, &c, true);
	c.pad_original[0] ^= 1;
	expect(&t, &mv, &c, false);
	assert_int_equal(agent.cache_file_checked - before, 5);
	/* the page the process wrote: memory's bytes, not the file's */
	before = agent.cache_file_checked;
	expect(&t, &mv, &old150, false);
	struct hook_arch_plan now150 = plan_at(p, 150 * (size_t)pg + 64, 0);
	expect(&t, &mv, &now150, true);
	assert_int_equal(agent.cache_file_checked, before);
	/* the last bytes of the mapping */
	struct hook_arch_plan end = plan_at(p, TEXT_N * (size_t)pg - 5, 0);
	expect(&t, &mv, &end, true);
	agent_text_close(&t);
	assert_int_equal(t.fd, -1);
	/* closed: memory's answers */
	before = agent.cache_file_checked;
	expect(&t, &mv, &a, true);
	expect(&t, &mv, &b, false);
	assert_int_equal(agent.cache_file_checked, before);
	hook_seccomp_window(false);
	munmap(p, TEXT_N * (size_t)pg);
	unlink(path);
}

/* Outside the start-up window (a dlopen's rescan, attach) nothing is
 * opened: every plan is checked in memory; nor for a mapping whose file
 * is gone or that has none. */
static void test_text_closed_window(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	char path[64];
	uint8_t *p = text_file(pg, path);
	struct agent_text t;
	hook_seccomp_window(false);
	agent_text_open(&t, (uint64_t)(uintptr_t)p);
	assert_int_equal(t.fd, -1);
	struct hook_arch_region r = {(uint64_t)(uintptr_t)p, TEXT_N * (uint64_t)pg, p};
	struct hook_arch_memview mv = {&r, 1};
	struct hook_arch_plan a = plan_at(p, 40, 0);
	uint64_t before = agent.cache_file_checked;
	expect(&t, &mv, &a, true);
	assert_int_equal(agent.cache_file_checked, before);
	agent_text_close(&t);
	/* the file unlinked: its name no longer opens it */
	unlink(path);
	hook_seccomp_window(true);
	agent_text_open(&t, (uint64_t)(uintptr_t)p);
	assert_int_equal(t.fd, -1);
	hook_seccomp_window(false);
	/* anonymous memory: no file behind it */
	uint8_t *anon =
	    mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_ptr_not_equal(anon, MAP_FAILED);
	hook_seccomp_window(true);
	agent_text_open(&t, (uint64_t)(uintptr_t)anon);
	assert_int_equal(t.fd, -1);
	hook_seccomp_window(false);
	munmap(anon, (size_t)pg);
	munmap(p, TEXT_N * (size_t)pg);
}

/* One window buffer for the process (agent_text.c, text_buf): a second
 * image's check reuses the first's, with no window of the first left in
 * it -- a plan of the second image is checked against its own file. */
static void test_text_buffer_kept(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	char pa[64], pb[64];
	uint8_t *a = text_file(pg, pa), *b = text_file(pg, pb);
	/* b's file differs from a's on its page 2 */
	int fd = open(pb, O_WRONLY);
	assert_true(fd >= 0);
	uint8_t x = (uint8_t)(b[2 * pg + 9] ^ 0x5a);
	assert_int_equal(pwrite(fd, &x, 1, 2 * pg + 9), 1);
	close(fd);
	window_or_skip(pa, pb);
	struct hook_arch_region ra = {(uint64_t)(uintptr_t)a, TEXT_N * (uint64_t)pg, a};
	struct hook_arch_region rb = {(uint64_t)(uintptr_t)b, TEXT_N * (uint64_t)pg, b};
	struct hook_arch_memview mva = {&ra, 1}, mvb = {&rb, 1};
	struct agent_text t;
	agent_text_open(&t, (uint64_t)(uintptr_t)a);
	assert_true(t.fd >= 0);
	uint8_t *buf = t.buf;
	struct hook_arch_plan pa2 = plan_at(a, 2 * (size_t)pg + 8, 0);
	expect(&t, &mva, &pa2, true);
	agent_text_close(&t);
	agent_text_open(&t, (uint64_t)(uintptr_t)b);
	assert_true(t.fd >= 0);
	assert_ptr_equal(t.buf, buf); /* the same buffer, kept */
	uint64_t before = agent.cache_file_checked;
	/* a's bytes at that place do not fit b; b's own do */
	struct hook_arch_plan wrong = pa2;
	wrong.fn_addr = (uint64_t)(uintptr_t)(b + 2 * pg + 8);
	expect(&t, &mvb, &wrong, false);
	struct hook_arch_plan pb2 = plan_at(b, 2 * (size_t)pg + 8, 0);
	expect(&t, &mvb, &pb2, true);
	assert_int_equal(agent.cache_file_checked - before, 2);
	agent_text_close(&t);
	hook_seccomp_window(false);
	munmap(a, TEXT_N * (size_t)pg);
	munmap(b, TEXT_N * (size_t)pg);
	unlink(pa);
	unlink(pb);
}

/* The window's list of mappings from hook_mem's snapshot text (read at
 * the agent's start; /proc/self/maps not read again): a mapping in it is
 * checked in its file; one made after the snapshot misses the list and
 * is found by reading the file once more. */
static void test_text_maps_from_snapshot(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	char pa[64], pb[64];
	uint8_t *a = text_file(pg, pa), *blk;
	window_or_skip(pa, NULL);
	assert_int_equal(hook_mem_new(&agent.mem), 0);
	assert_int_equal(hook_mem_alloc(agent.mem, 3, (uint64_t)(uintptr_t)a,
	                                (uint64_t)(uintptr_t)a + 4096, 64, &blk),
	                 0);
	const char *text;
	size_t len;
	assert_int_equal(hook_mem_maps_text(agent.mem, &text, &len), 0);
	assert_non_null(memmem(text, len, pa, strlen(pa)));
	uint8_t *b = text_file(pg, pb); /* after the snapshot */
	assert_null(memmem(text, len, pb, strlen(pb)));
	struct hook_arch_region ra = {(uint64_t)(uintptr_t)a, TEXT_N * (uint64_t)pg, a};
	struct hook_arch_region rb = {(uint64_t)(uintptr_t)b, TEXT_N * (uint64_t)pg, b};
	struct hook_arch_memview mva = {&ra, 1}, mvb = {&rb, 1};
	struct agent_text t;
	uint64_t before = agent.cache_file_checked;
	agent_text_open(&t, (uint64_t)(uintptr_t)a);
	assert_true(t.fd >= 0);
	struct hook_arch_plan pla = plan_at(a, 5 * (size_t)pg + 3, 0);
	expect(&t, &mva, &pla, true);
	agent_text_close(&t);
	agent_text_open(&t, (uint64_t)(uintptr_t)b);
	assert_true(t.fd >= 0);
	struct hook_arch_plan plb = plan_at(b, 7 * (size_t)pg + 9, 0);
	expect(&t, &mvb, &plb, true);
	agent_text_close(&t);
	assert_int_equal(agent.cache_file_checked - before, 2);
	hook_seccomp_window(false);
	/* The list is the snapshot's, not a read: a's file renamed since is
	 * looked for under its old name there, not found (checked in memory,
	 * as for any file that is gone), where the file would say the new. */
	char moved[80];
	snprintf(moved, sizeof(moved), "%s.moved", pa);
	assert_int_equal(rename(pa, moved), 0);
	hook_seccomp_window(true);
	agent_text_open(&t, (uint64_t)(uintptr_t)a);
	assert_int_equal(t.fd, -1);
	agent_text_close(&t);
	hook_seccomp_window(false);
	assert_int_equal(rename(moved, pa), 0);
	hook_mem_free(agent.mem);
	agent.mem = NULL;
	munmap(a, TEXT_N * (size_t)pg);
	munmap(b, TEXT_N * (size_t)pg);
	unlink(pa);
	unlink(pb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_fits),
	    cmocka_unit_test(test_text_closed_window),
	    cmocka_unit_test(test_text_buffer_kept),
	    cmocka_unit_test(test_text_maps_from_snapshot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
