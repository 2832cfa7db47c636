/*
 * The start-up scan's patches written a page at a time, not a patch at a
 * time (hook_mem_pages_internal.h has the contract).
 *
 * Why: process_vm_writev() pins the remote pages of each iovec on its
 * own, so a write per patch is a page pin per patch -- libc has 3 474
 * patches on 261 pages, cc1 36 000 on 5 000 -- and the pins were three
 * quarters of cc1's patch time (docs/benchmarks.md). A page written whole
 * is one pin; its bytes are the file's (the page is unwritten: the drop
 * before the writes saw a file page or none, patch_drop_range) with the
 * patches laid over them, read by pread(2) into one reused buffer, so
 * the process itself still touches none of the copies.
 *
 * Not hook context: the agent's install, serialized (hook_mem.h).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hook_mem_pages_internal.h"

/* The first of a[0..n) whose bytes end after addr (a sorted by address,
 * each at most HOOK_ARCH_MAX_PATCH long). */
static size_t pages_from(const struct hook_patch *a, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	uint64_t key = addr > HOOK_ARCH_MAX_PATCH ? addr - HOOK_ARCH_MAX_PATCH : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid].addr < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo < n && a[lo].addr + a[lo].len <= addr)
		lo++;
	return lo;
}

void hook_pages_lay(uint8_t *buf, uint64_t c, uint64_t e, const struct hook_patch *a, size_t n)
{
	for (size_t k = pages_from(a, n, c); k < n && a[k].addr < e; k++) {
		uint64_t from = a[k].addr > c ? a[k].addr : c;
		uint64_t to = a[k].addr + a[k].len < e ? a[k].addr + a[k].len : e;
		memcpy(buf + (from - c), a[k].bytes + (from - a[k].addr), to - from);
	}
}

/* x86_64 only: arm64 patches need the cache maintenance patch_write()
 * does, and its entries jump to no padding slot. */
#if defined(__x86_64__) && defined(__linux__)

/* How far before a cut a patch can begin and still reach past it: a
 * jmp rel8 (2 bytes, +127 at most) from an entry to its padding slot. */
#define HOOK_PAGES_REL8_REACH 130u

static bool pages_bit(const uint64_t *map, uint64_t x)
{
	return (map[x / 64] >> (x % 64)) & 1u;
}

/* Whether a patch of a[0..n) that begins before cut reaches past it:
 * its own bytes (they must change in one call), or, an entry's jmp rel8
 * (0xeb), the padding slot it jumps to -- written by a later call, the
 * entry would jump into the slot's old bytes meanwhile, and the agent
 * runs libc between two calls. A slot before its entry is written
 * first, by an earlier call: no harm. */
static bool pages_crosses(const struct hook_patch *a, size_t n, uint64_t cut)
{
	for (size_t k = pages_from(a, n, cut - HOOK_PAGES_REL8_REACH); k < n && a[k].addr < cut;
	     k++) {
		if (a[k].addr + a[k].len > cut)
			return true;
		if (a[k].len >= 2 && a[k].bytes[0] == 0xeb &&
		    a[k].addr + 2 + (uint64_t)(int64_t)(int8_t)a[k].bytes[1] >= cut)
			return true;
	}
	return false;
}

/* Whether a write may end at cut. */
static bool pages_cut_ok(const struct hook_pages_step *s, uint64_t cut)
{
	return !pages_crosses(s->first, s->n_first, cut) && !pages_crosses(s->then, s->n_then, cut);
}

/* The end of the write that starts at page c of the changed run [c, end):
 * the run's end when it fits the buffer, else the furthest cut within
 * reach that pages_cut_ok() allows; 0 when there is none. */
static uint64_t pages_cut(const struct hook_pages_step *s, uint64_t c, uint64_t end,
                          size_t buf_pages)
{
	uint64_t reach = c + buf_pages * s->pg;
	if (end <= reach)
		return end;
	for (uint64_t cut = reach; cut > c; cut -= s->pg)
		if (pages_cut_ok(s, cut))
			return cut;
	return 0;
}

/* Whether every changed page of the step holds the file's bytes and lies
 * in src's mapping. */
static bool pages_all_clean(const struct hook_patch_file *src, const struct hook_pages_step *s)
{
	for (uint64_t a = s->lo, x = 0; a < s->hi; a += s->pg, x++)
		if (pages_bit(s->changed, x) &&
		    (!pages_bit(s->clean, x) || a < src->lo || a + s->pg > src->hi))
			return false;
	return true;
}

/* The file's bytes of [c, e) into the buffer, the patches over them, and
 * the whole of it written by the kernel. */
static bool pages_write_one(const struct hook_patch_file *src, const struct hook_pages_step *s,
                            uint64_t c, uint64_t e)
{
	size_t len = (size_t)(e - c);
	if (pread(src->fd, src->buf, len, (off_t)(src->off + (c - src->lo))) != (ssize_t)len)
		return false;
	hook_pages_lay(src->buf, c, e, s->first, s->n_first);
	hook_pages_lay(src->buf, c, e, s->then, s->n_then);
	struct iovec local = {src->buf, len}, remote = {(void *)(uintptr_t)c, len};
	return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* The writes, every one chosen before the first is made: a run with no
 * allowed cut leaves the whole step to the caller untouched. Bounded by
 * the step's pages (PATCH_DROP_PAGES at most): a write is a page or more. */
static struct pages_span {
	uint64_t lo, hi;
} pages_spans[16384];

/* Splits each run of changed pages where the buffer needs it into
 * pages_spans; returns how many, or 0 when a run has no allowed cut. */
static size_t pages_plan(const struct hook_patch_file *src, const struct hook_pages_step *s)
{
	size_t n = 0;
	for (uint64_t a = s->lo; a < s->hi;) {
		if (!pages_bit(s->changed, (a - s->lo) / s->pg)) {
			a += s->pg;
			continue;
		}
		uint64_t end = a;
		while (end < s->hi && pages_bit(s->changed, (end - s->lo) / s->pg))
			end += s->pg;
		for (uint64_t c = a; c < end; c = pages_spans[n++].hi) {
			uint64_t e = pages_cut(s, c, end, src->buf_pages);
			if (!e)
				return 0;
			pages_spans[n] = (struct pages_span){c, e};
		}
		a = end;
	}
	return n;
}

bool hook_pages_write(const struct hook_patch_file *src, const struct hook_pages_step *s,
                      uint64_t *pages)
{
	size_t cap = sizeof(pages_spans) / sizeof(pages_spans[0]);
	*pages = 0;
	if (!src || src->fd < 0 || !src->buf || src->buf_pages < 2 || !hook_no_seccomp() ||
	    (s->hi - s->lo) / s->pg > cap || !pages_all_clean(src, s))
		return false;
	size_t n = pages_plan(src, s);
	if (!n)
		return false;
	for (size_t k = 0; k < n; k++) {
		if (!pages_write_one(src, s, pages_spans[k].lo, pages_spans[k].hi))
			return false;
		*pages += (pages_spans[k].hi - pages_spans[k].lo) / s->pg;
	}
	return true;
}

#else

bool hook_pages_write(const struct hook_patch_file *src, const struct hook_pages_step *s,
                      uint64_t *pages)
{
	(void)src, (void)s;
	*pages = 0;
	return false;
}

#endif
