/*
 * hook_mem: /proc/self/maps parsing, trampoline regions near a module
 * (reach, W^X after seal, release), and patch application across page
 * boundaries with the original protections restored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "hook_mem.h"

static void test_maps_parse(void **state)
{
	static const char text[] =
	    "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 123  /usr/bin/cat\n"
	    "55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:01 123  /usr/bin/cat\n"
	    "7ffd1c9e4000-7ffd1ca05000 rw-p 00000000 00:00 0    [stack]\n";
	struct hook_map m[3];

	(void)state;
	assert_int_equal(hook_maps_parse(text, sizeof(text) - 1, m, 3), 3);
	assert_int_equal(m[1].start, 0x55d0c0a02000);
	assert_int_equal(m[1].end, 0x55d0c0a07000);
	assert_int_equal(m[1].prot, PROT_READ | PROT_EXEC);
	assert_int_equal(m[2].prot, PROT_READ | PROT_WRITE);
	assert_int_equal(hook_maps_parse(text, sizeof(text) - 1, m, 2), -ENOSPC);
	assert_int_equal(hook_maps_parse("zz-1 r-xp\n", 10, m, 3), -EINVAL);
	assert_int_equal(hook_maps_parse("1000-2000", 9, m, 3), -EINVAL);
	/* truncated mid-line: whatever is there must still be bounds-checked */
	assert_true(hook_maps_parse(text, 40, m, 3) <= 1);
	assert_int_equal(hook_maps_parse(text, 0, m, 3), 0);
}

extern void *__libc_stack_end;

/* The main thread's stack from a maps snapshot is pthread_getattr_np's
 * (the agent's first traced call of an exec'd image takes it so): this
 * process's real maps and limit, and the cases glibc's arithmetic caps. */
static void test_main_stack(void **state)
{
	static char buf[1 << 16];
	static struct hook_map m[1024];
	(void)state;
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	int n = hook_maps_parse(buf, len, m, 1024);
	assert_true(n > 0);
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_STACK, &rl), 0);
	uint64_t lo = 0, hi = 0, end = (uint64_t)(uintptr_t)__libc_stack_end;
	assert_int_equal(hook_maps_main_stack(m, n, end, (uint64_t)rl.rlim_cur, &lo, &hi), 0);
	pthread_attr_t at;
	void *addr = NULL;
	size_t size = 0;
	assert_int_equal(pthread_getattr_np(pthread_self(), &at), 0);
	assert_int_equal(pthread_attr_getstack(&at, &addr, &size), 0);
	pthread_attr_destroy(&at);
	assert_int_equal(lo, (uint64_t)(uintptr_t)addr);
	assert_int_equal(hi - lo, size);
	/* synthetic: limit 8 MiB, stack mapping [0x7000000, 0x7021000),
	 * stack_end in its last page but one */
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct hook_map s[2] = {{0x1000000, 0x2000000, PROT_READ}, {0x7000000, 0x7021000, 0}};
	uint64_t se = 0x7021000 - 2 * pg + 8;
	assert_int_equal(hook_maps_main_stack(s, 2, se, 8u << 20, &lo, &hi), 0);
	assert_int_equal(hi, 0x7021000 - pg);
	assert_int_equal(hi - lo, (8u << 20) - pg);
	/* an infinite limit: capped by the mapping below */
	assert_int_equal(hook_maps_main_stack(s, 2, se, UINT64_MAX, &lo, &hi), 0);
	assert_int_equal(lo, 0x2000000);
	assert_int_equal(hook_maps_main_stack(s, 2, 0x3000000, 8u << 20, &lo, &hi), -ENOENT);
	assert_int_equal(hook_maps_main_stack(s, 0, se, 8u << 20, &lo, &hi), -ENOENT);
}

static int prot_of(const void *p)
{
	char buf[1 << 16];
	struct hook_map m[512];
	FILE *f = fopen("/proc/self/maps", "r");
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	int n = hook_maps_parse(buf, len, m, 512);
	for (int i = 0; i < n; i++)
		if ((uint64_t)p >= m[i].start && (uint64_t)p < m[i].end)
			return m[i].prot;
	return -1;
}

/* The snapshot's text (hook_mem_maps_text): none before the first read,
 * the file as read after an allocation read it (this test's own text
 * mapping in it, the region mapped since not), none once the snapshot is
 * stale (a module's regions released). */
static void test_maps_text(void **state)
{
	struct hook_mem *m;
	const char *text;
	size_t len;
	uint8_t *a;
	uint64_t lo = (uint64_t)test_maps_parse, hi = lo + 4096;
	char self[32];

	(void)state;
	assert_int_equal(hook_mem_new(&m), 0);
	assert_int_equal(hook_mem_maps_text(m, &text, &len), -ESTALE);
	assert_int_equal(hook_mem_alloc(m, 7, lo, hi, 100, &a), 0);
	assert_int_equal(hook_mem_maps_text(m, &text, &len), 0);
	assert_true(len > 0 && text[len - 1] == '\n');
	struct hook_map maps[512];
	int n = hook_maps_parse(text, len, maps, 512);
	assert_true(n > 0);
	bool code = false, region = false;
	for (int i = 0; i < n; i++) {
		code = code || (lo >= maps[i].start && lo < maps[i].end);
		region = region || ((uint64_t)a >= maps[i].start && (uint64_t)a < maps[i].end);
	}
	assert_true(code);
	assert_false(region); /* mapped after the read: in the snapshot, not its text */
	snprintf(self, sizeof(self), "%" PRIx64 "-", (uint64_t)maps[0].start);
	assert_non_null(strstr(text, self));
	assert_int_equal(hook_mem_release_module(m, 7), 0);
	assert_int_equal(hook_mem_maps_text(m, &text, &len), -ESTALE);
	hook_mem_free(m);
}

static void test_alloc_near_and_seal(void **state)
{
	struct hook_mem *m;
	uint8_t *a, *b, *c;
	uint64_t lo = (uint64_t)test_maps_parse, hi = lo + 4096;

	(void)state;
	assert_int_equal(hook_mem_new(&m), 0);
	assert_int_equal(hook_mem_alloc(m, 7, lo, hi, 100, &a), 0);
	assert_int_equal(hook_mem_alloc(m, 7, lo, hi, 100, &b), 0);
	assert_ptr_equal(b, a + 112); /* bump, 16-byte aligned */
	assert_int_equal((uint64_t)a % 16, 0);
	int64_t d = (int64_t)((uint64_t)a - lo);
	assert_true(d > -(int64_t)(1ll << 31) && d < (int64_t)(1ll << 31));
	memset(a, 0xc3, 100); /* writable before seal */
	assert_int_equal(prot_of(a), PROT_READ | PROT_WRITE);
	assert_int_equal(hook_mem_seal(m), 0);
	assert_int_equal(prot_of(a), PROT_READ | PROT_EXEC);
	/* a sealed region is never reopened: the next block is elsewhere */
	assert_int_equal(hook_mem_alloc(m, 7, lo, hi, 100, &c), 0);
	assert_true(c < a || c >= a + 256 * 1024);
	assert_int_equal(prot_of(c), PROT_READ | PROT_WRITE);
	/* another module gets its own region; releasing 7 unmaps only 7's */
	uint8_t *o;
	assert_int_equal(hook_mem_alloc(m, 8, lo, hi, 64, &o), 0);
	assert_int_equal(hook_mem_release_module(m, 7), 0);
	assert_int_equal(prot_of(a), -1);
	assert_int_equal(prot_of(c), -1);
	assert_int_equal(prot_of(o), PROT_READ | PROT_WRITE);
	assert_true(hook_mem_mapped_bytes(m) >= 64);
	assert_int_equal(hook_mem_alloc(m, 8, lo, hi, 0, &o), -EINVAL);
	hook_mem_free(m);
}

/* The page directory of trampoline memory (hook_mem_is_tramp, the return
 * points' test): every page of a region from its mapping until its
 * release, nothing else (the code the region is near, the stack, the
 * address space's ends). */
static void test_is_tramp(void **state)
{
	struct hook_mem *m;
	uint8_t *a, *o;
	uint64_t lo = (uint64_t)test_maps_parse, hi = lo + 4096;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	int local;

	(void)state;
	assert_int_equal(hook_mem_new(&m), 0);
	assert_int_equal(hook_mem_alloc(m, 7, lo, hi, 100, &a), 0);
	assert_int_equal(hook_mem_alloc(m, 8, lo, hi, 100, &o), 0);
	assert_true(hook_mem_is_tramp((uint64_t)a));
	assert_true(hook_mem_is_tramp((uint64_t)a + 84));
	/* the whole region, to its last byte (MEM_REGION_MIN: 256 KiB) */
	assert_true(hook_mem_is_tramp((uint64_t)a + (256u << 10) - 1));
	assert_true(hook_mem_is_tramp((uint64_t)o));
	assert_false(hook_mem_is_tramp(lo));
	assert_false(hook_mem_is_tramp((uint64_t)&local));
	assert_false(hook_mem_is_tramp(0));
	assert_false(hook_mem_is_tramp(UINT64_MAX));
	assert_false(hook_mem_is_tramp(1ull << 47));
	assert_int_equal(hook_mem_seal(m), 0);
	assert_true(hook_mem_is_tramp((uint64_t)a)); /* sealed: still */
	assert_int_equal(hook_mem_release_module(m, 7), 0);
	assert_false(hook_mem_is_tramp((uint64_t)a));
	assert_false(hook_mem_is_tramp((uint64_t)a + pg));
	assert_true(hook_mem_is_tramp((uint64_t)o));
	hook_mem_free(m);
	assert_false(hook_mem_is_tramp((uint64_t)o));
}

static void test_patch_apply(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, 3 * pg, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct hook_patch patches[3] = {
	    {(uint64_t)p + pg - 3, 6, {1, 2, 3, 4, 5, 6}},         /* spans both mappings */
	    {(uint64_t)p + 16, 5, {0xe9, 0x11, 0x22, 0x33, 0x44}}, /* atomic word case */
	    {(uint64_t)p + 40, 5, {0xe9, 0xaa, 0xbb, 0xcc, 0xdd}}, /* same page again */
	};
	static const uint8_t zero[8];

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	munmap(p + 2 * pg, (size_t)pg); /* a hole right behind the two pages */
	/* second page read-only: its own mapping, so the first patch straddles
	 * two mappings with different protections */
	assert_int_equal(mprotect(p + pg, (size_t)pg, PROT_READ), 0);
	assert_int_equal(hook_patch_apply(patches, 3), 0);
	/* sorted in place */
	assert_int_equal(patches[0].addr, (uint64_t)p + 16);
	assert_memory_equal(p + 16, "\xe9\x11\x22\x33\x44", 5);
	assert_memory_equal(p + 21, zero, 3);
	assert_memory_equal(p + 40, "\xe9\xaa\xbb\xcc\xdd", 5);
	assert_memory_equal(p + pg - 3, "\x01\x02\x03\x04\x05\x06", 6);
	assert_int_equal(prot_of(p), PROT_READ | PROT_EXEC);
	assert_int_equal(prot_of(p + pg), PROT_READ);
	/* unpatch */
	struct hook_patch undo = {(uint64_t)p + 16, 5, {0}};
	assert_int_equal(hook_patch_apply(&undo, 1), 0);
	assert_memory_equal(p + 16, zero, 5);
	/* errors: unmapped address, bad length */
	struct hook_patch bad = {(uint64_t)p + 2 * pg + 8, 5, {0}};
	assert_int_equal(hook_patch_apply(&bad, 1), -EFAULT);
	bad.len = 0;
	assert_int_equal(hook_patch_apply(&bad, 1), -EINVAL);
	munmap(p, 2 * pg);
}

/* Many patches over several pages of one mapping (one run). */
static void test_patch_run(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)(4 * pg);
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct hook_patch patches[64];

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	for (int i = 0; i < 64; i++) { /* reverse order: apply sorts */
		uint64_t off = (uint64_t)(63 - i) * (len / 64) + (uint64_t)(i % 8);
		patches[i] = (struct hook_patch){(uint64_t)p + off, 5, {0xe9, (uint8_t)i, 1, 2, 3}};
	}
	assert_int_equal(hook_patch_apply(patches, 64), 0);
	for (int i = 0; i < 64; i++) {
		uint64_t off = (uint64_t)(63 - i) * (len / 64) + (uint64_t)(i % 8);
		uint8_t want[5] = {0xe9, (uint8_t)i, 1, 2, 3};
		assert_memory_equal(p + off, want, 5);
	}
	for (size_t off = 0; off < len; off += (size_t)pg)
		assert_int_equal(prot_of(p + off), PROT_READ | PROT_EXEC);
	munmap(p, len);
}

/* Patches over more pages than one step of patch_run() copies and
 * writes (PATCH_CHUNK_PAGES, 16): one straddling a step's last page, one
 * that changes nothing (its page is not copied), all written. */
static void test_patch_steps(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)(40 * pg);
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct hook_patch patches[42];
	size_t n = 0;

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	for (size_t k = 0; k < 40; k++) /* one patch a page, at its start */
		patches[n++] = (struct hook_patch){
		    (uint64_t)p + k * (size_t)pg + 16, 5, {0xe9, (uint8_t)k, 1, 2, 3}};
	patches[n++] = (struct hook_patch){(uint64_t)p + 16 * (size_t)pg - 2, 5, {7, 7, 7, 7, 7}};
	patches[n++] = (struct hook_patch){(uint64_t)p + 33 * (size_t)pg + 100, 5, {0}};
	assert_int_equal(hook_patch_apply(patches, n), 0);
	for (size_t k = 0; k < 40; k++) {
		uint8_t want[5] = {0xe9, (uint8_t)k, 1, 2, 3};
		assert_memory_equal(p + k * (size_t)pg + 16, want, 5);
	}
	assert_memory_equal(p + 16 * (size_t)pg - 2, "\x07\x07\x07\x07\x07", 5);
	for (size_t off = 0; off < len; off += (size_t)pg)
		assert_int_equal(prot_of(p + off), PROT_READ | PROT_EXEC);
	munmap(p, len);
}

/* hook_patch_apply_pair(): every patch of first before any of then,
 * whatever their addresses (a padding slot before the entry that jumps to
 * it, hook_mem.h), under one mprotect pair in one mapping, one array
 * after the other over two. A then patch covering a first one at a
 * higher address tells the order: then's bytes must win (in one
 * address-sorted array first's would). */
static void test_patch_pair(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *p =
	    mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct hook_patch first[2] = {
	    {(uint64_t)p + (size_t)pg + 40, 5, {0xe9, 9, 9, 9, 9}}, /* out of order: sorted */
	    {(uint64_t)p + 100, 5, {0xe9, 1, 1, 1, 1}},
	};
	struct hook_patch then[1] = {{(uint64_t)p + 98, 8, {0xeb, 2, 3, 3, 3, 3, 3, 3}}};

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_int_equal(hook_patch_apply_pair(NULL, first, 2, then, 1), 0);
	assert_int_equal(first[0].addr, (uint64_t)p + 100);
	assert_memory_equal(p + 98, "\xeb\x02\x03\x03\x03\x03\x03\x03", 8);
	assert_memory_equal(p + 106, "\0\0", 2);
	assert_memory_equal(p + pg + 40, "\xe9\x09\x09\x09\x09", 5);
	for (int k = 0; k < 3; k++)
		assert_int_equal(prot_of(p + k * pg), PROT_READ | PROT_EXEC);
	/* two mappings (the last page read-only): one array after the other */
	assert_int_equal(mprotect(p + 2 * pg, (size_t)pg, PROT_READ), 0);
	first[0] = (struct hook_patch){(uint64_t)p + 2 * (size_t)pg + 8, 5, {0xe9, 4, 4, 4, 4}};
	then[0] = (struct hook_patch){(uint64_t)p + 2 * (size_t)pg + 6, 8, {0xeb, 5, 6, 6, 6, 6}};
	assert_int_equal(hook_patch_apply_pair(NULL, first, 2, then, 1), 0);
	assert_memory_equal(p + 2 * pg + 6, "\xeb\x05\x06\x06\x06\x06\0\0", 8);
	assert_int_equal(prot_of(p + 2 * pg), PROT_READ);
	assert_int_equal(prot_of(p), PROT_READ | PROT_EXEC);
	/* nothing to write, and a bad length in either array */
	assert_int_equal(hook_patch_apply_pair(NULL, first, 0, then, 0), 0);
	then[0].len = 0;
	assert_int_equal(hook_patch_apply_pair(NULL, first, 2, then, 1), -EINVAL);
	munmap(p, 3 * (size_t)pg);
}

/* A private mapping of a new file of n pages, page k filled with k + 1,
 * every page read once (mapped, as the agent's analysis leaves an image's
 * text). */
static uint8_t *file_text(size_t n, int *fd_out)
{
	long pg = sysconf(_SC_PAGESIZE);
	char path[] = "/tmp/ada_test_hook_mem_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	uint8_t *page = malloc((size_t)pg);
	assert_non_null(page);
	for (size_t k = 0; k < n; k++) {
		memset(page, (int)(k + 1), (size_t)pg);
		assert_int_equal(pwrite(fd, page, (size_t)pg, (off_t)(k * (size_t)pg)), pg);
	}
	free(page);
	uint8_t *p = mmap(NULL, n * (size_t)pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_ptr_not_equal(p, MAP_FAILED);
	volatile uint8_t sum = 0;
	for (size_t k = 0; k < n; k++)
		sum = (uint8_t)(sum + p[k * (size_t)pg]);
	(void)sum;
	*fd_out = fd;
	return p;
}

/* The drop before the copies (patch_drop_range): a page that holds a
 * private copy already keeps its bytes (counted kept), the clean ones are
 * dropped and come back with the file's bytes plus the patch; the file is
 * never written. */
static void test_patch_drop_keeps_copies(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd;
	uint8_t *p = file_text(8, &fd);
	struct hook_patch patches[8];
	struct hook_patch_cow before, after;

	(void)state;
	/* page 3: a private copy with a byte of its own (a text relocation) */
	assert_int_equal(mprotect(p + 3 * pg, (size_t)pg, PROT_READ | PROT_WRITE), 0);
	p[3 * pg + 100] = 0xaa;
	assert_int_equal(mprotect(p + 3 * pg, (size_t)pg, PROT_READ | PROT_EXEC), 0);
	for (size_t k = 0; k < 8; k++)
		patches[k] = (struct hook_patch){
		    (uint64_t)p + k * (size_t)pg + 16, 5, {0xe9, (uint8_t)k, 1, 2, 3}};
	hook_patch_cow_stats(&before);
	assert_int_equal(hook_patch_apply(patches, 8), 0);
	hook_patch_cow_stats(&after);
	assert_int_equal(after.kept - before.kept, 1);
	/* the other 7 were mapped: dropped (failed without pagemap) */
	assert_true(after.dropped - before.dropped + after.failed - before.failed <= 7);
	assert_true(after.dropped - before.dropped + after.failed - before.failed >= 1);
	assert_int_equal(p[3 * pg + 100], 0xaa);
	for (size_t k = 0; k < 8; k++) {
		uint8_t want[5] = {0xe9, (uint8_t)k, 1, 2, 3};
		assert_memory_equal(p + k * (size_t)pg + 16, want, 5);
		assert_int_equal(p[k * (size_t)pg + 15], k + 1);
		assert_int_equal(p[k * (size_t)pg + 21], k + 1);
		assert_int_equal(p[k * (size_t)pg + pg - 1], k + 1);
		assert_int_equal(prot_of(p + k * (size_t)pg), PROT_READ | PROT_EXEC);
	}
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, 16), 1);
	assert_int_equal(b, 1);
	munmap(p, 8 * (size_t)pg);
	close(fd);
}

/* hook_patch_apply_pair() with a struct hook_mem (the start-up scan, one
 * thread): on x86_64 the kernel writes the patches (patch_write_kernel),
 * first before then as always; the same bytes whichever way they went. */
static void test_patch_pair_one_thread(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd;
	uint8_t *p = file_text(4, &fd);
	struct hook_mem *m;
	struct hook_patch first[2] = {
	    {(uint64_t)p + 2 * (size_t)pg + 40, 5, {0xe9, 9, 9, 9, 9}},
	    {(uint64_t)p + 100, 5, {0xe9, 1, 1, 1, 1}},
	};
	struct hook_patch then[2] = {
	    {(uint64_t)p + 98, 8, {0xeb, 2, 3, 3, 3, 3, 3, 3}},
	    {(uint64_t)p + 3 * (size_t)pg - 2, 4, {4, 4, 4, 4}}, /* straddles pages 2 and 3 */
	};
	struct hook_patch_cow before, after;

	(void)state;
	assert_int_equal(hook_mem_new(&m), 0);
	hook_patch_cow_stats(&before);
	assert_int_equal(hook_patch_apply_pair(m, first, 2, then, 2), 0);
	hook_patch_cow_stats(&after);
	assert_memory_equal(p + 98, "\xeb\x02\x03\x03\x03\x03\x03\x03", 8);
	assert_int_equal(p[106], 1);
	assert_int_equal(p[97], 1);
	assert_memory_equal(p + 2 * pg + 40, "\xe9\x09\x09\x09\x09", 5);
	assert_memory_equal(p + 3 * pg - 2, "\x04\x04\x04\x04", 4);
	assert_int_equal(p[3 * pg + 2], 4);
	assert_int_equal(p[pg + 5], 2); /* page 1: no patch, the file's */
	assert_int_equal(after.kept, before.kept);
	for (int k = 0; k < 4; k++)
		assert_int_equal(prot_of(p + k * pg), PROT_READ | PROT_EXEC);
	/* again: the pages are private copies now, kept; nothing changes */
	assert_int_equal(hook_patch_apply_pair(m, first, 2, then, 2), 0);
	assert_memory_equal(p + 98, "\xeb\x02\x03\x03\x03\x03\x03\x03", 8);
	hook_mem_free(m);
	munmap(p, 4 * (size_t)pg);
	close(fd);
}

/* Every byte of p's n pages: file_text's (page k holds k + 1) but where
 * a patch of a[0..na) or b[0..nb) lies (b's over a's). */
static void expect_text(const uint8_t *p, size_t n, const struct hook_patch *a, size_t na,
                        const struct hook_patch *b, size_t nb)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *want = malloc(n * (size_t)pg);
	assert_non_null(want);
	for (size_t k = 0; k < n; k++)
		memset(want + k * (size_t)pg, (int)(k + 1), (size_t)pg);
	for (size_t k = 0; k < na; k++)
		memcpy(want + (a[k].addr - (uint64_t)p), a[k].bytes, a[k].len);
	for (size_t k = 0; k < nb; k++)
		memcpy(want + (b[k].addr - (uint64_t)p), b[k].bytes, b[k].len);
	assert_memory_equal(p, want, n * (size_t)pg);
	free(want);
}

/* Opens the start-up scan's window for a test of the kernel's writes, or
 * skips it: under a seccomp filter the kernel writes nothing. */
static void startup_window_or_skip(void)
{
	hook_seccomp_window(true);
	if (!hook_no_seccomp()) {
		hook_seccomp_window(false);
		skip();
	}
}

/* The pages written whole in the start-up scan (hook_pages_write), with
 * src the file behind p; returns the pages counted whole. */
static uint64_t apply_whole(uint8_t *p, size_t n, int fd, uint8_t *buf, size_t buf_pages,
                            struct hook_patch *first, size_t n_first, struct hook_patch *then,
                            size_t n_then)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct hook_mem *m;
	struct hook_patch_cow before, after;
	struct hook_patch_file src = {fd, (uint64_t)p, (uint64_t)p + n * (size_t)pg,
	                              0,  buf,         buf_pages};
	assert_int_equal(hook_mem_new(&m), 0);
	hook_patch_cow_stats(&before);
	assert_int_equal(hook_patch_apply_pair_file(m, &src, first, n_first, then, n_then), 0);
	hook_patch_cow_stats(&after);
	hook_mem_free(m);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(prot_of(p + k * (size_t)pg), PROT_READ | PROT_EXEC);
	return after.whole - before.whole;
}

/* hook_patch_apply_pair_file() in the start-up scan: each changed page
 * written whole from the file with the patches over it -- a run of
 * changed pages longer than the buffer cut where no patch is near, the
 * pages nothing changes left alone -- and the file never written. */
static void test_patch_whole_pages(void **state)
{
	(void)state;
	startup_window_or_skip();
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = 24;
	int fd;
	uint8_t *p = file_text(n, &fd);
	uint8_t *buf = malloc(4 * (size_t)pg);
	struct hook_patch first[2], then[12];
	size_t nt = 0;

	/* pages 0-9 changed: a patch a page, page 4's across its start (no
	 * cut there), an entry on page 6 whose slot is on page 7 */
	for (size_t k = 0; k < 10; k++)
		then[nt++] =
		    (struct hook_patch){(uint64_t)p + k * (size_t)pg + (k == 4 ? -2 : 1000),
		                        5,
		                        {0xe9, (uint8_t)k, 7, 7, 7}};
	then[6] = (struct hook_patch){(uint64_t)p + 7 * (size_t)pg - 60, 2, {0xeb, 0x50}};
	first[0] = (struct hook_patch){(uint64_t)p + 7 * (size_t)pg + 30, 5, {0xe9, 1, 2, 3, 4}};
	/* pages 15-16: one patch across their boundary; page 20 a slot alone */
	then[nt++] = (struct hook_patch){(uint64_t)p + 16 * (size_t)pg - 2, 5, {0xe9, 9, 9, 9, 9}};
	first[1] = (struct hook_patch){(uint64_t)p + 20 * (size_t)pg + 64, 5, {0xe9, 5, 5, 5, 5}};
	struct hook_patch f[2], t[12];
	memcpy(f, first, sizeof(f));
	memcpy(t, then, sizeof(t));
	uint64_t whole = apply_whole(p, n, fd, buf, 4, first, 2, then, nt);
	hook_seccomp_window(false);
	assert_int_equal(whole, 13); /* 10 + 2 + 1 */
	expect_text(p, n, f, 2, t, nt);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, 1000), 1);
	assert_int_equal(b, 1);
	free(buf);
	munmap(p, n * (size_t)pg);
	close(fd);
}

/* Where the whole-page writes cannot vouch for a page they leave the
 * step to the patch-at-a-time writes, which write the same bytes: a run
 * with no cut that some patch does not cross (its bytes, or an entry's
 * jmp rel8 to a slot after the cut: the two could be written by two
 * calls), and a page that holds a private copy. */
static void test_patch_whole_declined(void **state)
{
	(void)state;
	startup_window_or_skip();
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = 8;
	int fd;
	uint8_t *p = file_text(n, &fd);
	uint8_t *buf = malloc(2 * (size_t)pg);
	struct hook_patch then[6], t[6];

	/* pages 0-5 (6 on): every boundary crossed, by a patch's bytes (1, 3,
	 * 5) or by an entry's jump to a slot just after it (2, 4) */
	for (size_t k = 0; k < 6; k++)
		then[k] = k % 2 ? (struct hook_patch){(uint64_t)p + (k + 1) * (size_t)pg - 100,
		                                      2,
		                                      {0xeb, 0x70}}
		                : (struct hook_patch){(uint64_t)p + (k + 1) * (size_t)pg - 2,
		                                      5,
		                                      {0xe9, (uint8_t)k, 1, 1, 1}};
	memcpy(t, then, sizeof(t));
	assert_int_equal(apply_whole(p, n, fd, buf, 2, NULL, 0, then, 6), 0);
	expect_text(p, n, NULL, 0, t, 6);
	munmap(p, n * (size_t)pg);
	close(fd);

	/* page 2 a private copy with a byte of its own: kept, not rewritten */
	p = file_text(n, &fd);
	assert_int_equal(mprotect(p + 2 * pg, (size_t)pg, PROT_READ | PROT_WRITE), 0);
	p[2 * pg + 300] = 0xaa;
	assert_int_equal(mprotect(p + 2 * pg, (size_t)pg, PROT_READ | PROT_EXEC), 0);
	for (size_t k = 0; k < 4; k++)
		then[k] = (struct hook_patch){
		    (uint64_t)p + k * (size_t)pg + 16, 5, {0xe9, (uint8_t)k, 2, 2, 2}};
	memcpy(t, then, sizeof(t));
	assert_int_equal(apply_whole(p, n, fd, buf, 2, NULL, 0, then, 4), 0);
	hook_seccomp_window(false);
	assert_int_equal(p[2 * pg + 300], 0xaa);
	for (size_t k = 0; k < 4; k++)
		assert_memory_equal(p + k * (size_t)pg + 16, t[k].bytes, 5);
	free(buf);
	munmap(p, n * (size_t)pg);
	close(fd);
}

/* A kernel without MADV_POPULATE_* (before 5.14; hook_mem_populate_refuse
 * stands in for it): the prefault and the populates before the writes
 * are refused and counted, and the patches are written all the same. */
static void test_populate_refused(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd;
	uint8_t *p = file_text(4, &fd);
	struct hook_patch_cow before, after;
	struct hook_patch patches[2] = {
	    {(uint64_t)p + 10, 5, {0xe9, 5, 6, 7, 8}},
	    {(uint64_t)p + 2 * (size_t)pg + 3, 5, {0xe9, 1, 2, 3, 4}},
	};

	(void)state;
	hook_mem_populate_refuse(true);
	hook_patch_cow_stats(&before);
	hook_mem_prefault((uint64_t)p, 4 * (uint64_t)pg);
	assert_int_equal(hook_patch_apply(patches, 2), 0);
	hook_patch_cow_stats(&after);
	hook_mem_populate_refuse(false);
	assert_int_equal(after.prefaulted, before.prefaulted);
	assert_true(after.populate_refused - before.populate_refused >= 2);
	assert_memory_equal(p + 10, "\xe9\x05\x06\x07\x08", 5);
	assert_memory_equal(p + 2 * pg + 3, "\xe9\x01\x02\x03\x04", 5);
	assert_int_equal(p[9], 1);
	assert_int_equal(p[2 * pg + 8], 3);
	/* allowed: mapped in one call (or refused by the kernel), counted */
	hook_patch_cow_stats(&before);
	hook_mem_prefault((uint64_t)p + 5, 2 * (uint64_t)pg);
	hook_patch_cow_stats(&after);
	assert_int_equal(after.prefaulted - before.prefaulted +
	                     (after.populate_refused - before.populate_refused) * 3,
	                 3);
	munmap(p, 4 * (size_t)pg);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_maps_parse),
	    cmocka_unit_test(test_main_stack),
	    cmocka_unit_test(test_alloc_near_and_seal),
	    cmocka_unit_test(test_maps_text),
	    cmocka_unit_test(test_is_tramp),
	    cmocka_unit_test(test_patch_apply),
	    cmocka_unit_test(test_patch_run),
	    cmocka_unit_test(test_patch_steps),
	    cmocka_unit_test(test_patch_pair),
	    cmocka_unit_test(test_patch_drop_keeps_copies),
	    cmocka_unit_test(test_patch_pair_one_thread),
	    cmocka_unit_test(test_patch_whole_pages),
	    cmocka_unit_test(test_patch_whole_declined),
	    cmocka_unit_test(test_populate_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
