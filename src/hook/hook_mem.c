/*
 * Trampoline memory and code patching (see hook_mem.h for the contract).
 *
 * Threads: the agent's init thread or whichever thread runs dlopen/dlclose,
 * serialized by the caller; never hook context. Other threads may execute
 * sealed trampolines and patched functions meanwhile, hence: sealed
 * regions are never made writable again, and patches keep the page
 * executable while writing it.
 *
 * Layout: m->regions is an array of mmap'ed regions, each owned by one
 * module id and bump-allocated; `open` regions are RW, sealed ones RX.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hook_mem.h"
#include "hook_mem_pages_internal.h"

#define MEM_REGION_MIN (256u << 10)
#define MEM_REACH (HOOK_ARCH_REACH - (1ull << 20)) /* the patch's reach minus margin */
#define MEM_VA_LOW 0x10000ull                      /* above vm.mmap_min_addr */
#define MEM_VA_HIGH HOOK_ARCH_VA_HIGH

struct mem_region {
	uint64_t addr;
	size_t size, used;
	uint32_t module_id;
	int open;
};

struct hook_mem {
	struct mem_region *regions;
	size_t n_regions, cap_regions;
	struct hook_map *maps;  /* snapshot, valid while maps_fresh */
	int n_maps, maps_fresh; /* MEM_MAPS_* */
	char *maps_text;        /* the snapshot's text as read (hook_mem_maps_text) */
	size_t maps_text_len;
};

/* The snapshot: to be read again; as read; or as read plus the regions
 * mapped here since (what else changed since is not in it: a gap it
 * shows may be taken, EEXIST, and one it hides is found by reading it
 * again when no gap is left). */
enum { MEM_MAPS_STALE, MEM_MAPS_READ, MEM_MAPS_KEPT };

_Atomic(_Atomic uint64_t *) hook_mem_dir[HOOK_MEM_DIR_TOP];

/* Marks (on) or clears the pages of [addr, addr+size) in hook_mem_dir.
 * Callers are serialized (hook_mem.h), so the leaves need no CAS; the
 * bits are atomic because handlers read them meanwhile. -ENOMEM when a
 * leaf cannot be allocated (the region is then not used). */
static int mem_dir_mark(uint64_t addr, size_t size, bool on)
{
	for (uint64_t pg = addr >> 12; pg < (addr + size + 4095) >> 12; pg++) {
		uint64_t g = pg >> 18;
		if (g >= HOOK_MEM_DIR_TOP)
			return -EINVAL;
		_Atomic uint64_t *leaf =
		    atomic_load_explicit(&hook_mem_dir[g], memory_order_relaxed);
		if (!leaf) {
			if (!on)
				continue;
			/* Mapped, not calloc'ed: a leaf (32 KiB) covers a GiB and
			 * a process marks a few pages of it, so one page of zeros
			 * is faulted in, not eight cleared by calloc's memset, at
			 * every exec'd start (docs/benchmarks.md, exe10).
			 * Never freed (hook_mem_is_tramp may read it any time). */
			void *lp = mmap(NULL, HOOK_MEM_DIR_LEAF_WORDS * sizeof(*leaf),
			                PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (lp == MAP_FAILED)
				return -ENOMEM;
			leaf = lp;
			/* Release: pairs with the acquire in hook_mem_is_tramp(). */
			atomic_store_explicit(&hook_mem_dir[g], leaf, memory_order_release);
		}
		uint64_t bit = 1ull << (pg & 63);
		uint64_t w = (pg & ((1u << 18) - 1)) >> 6;
		/* Release: the bit is set before the region's first patch is
		 * written (hook_mem_is_tramp's relaxed load); cleared only once
		 * nothing returns there any more (release_module/free). */
		if (on)
			atomic_fetch_or_explicit(&leaf[w], bit, memory_order_release);
		else
			atomic_fetch_and_explicit(&leaf[w], ~bit, memory_order_release);
	}
	return 0;
}

int hook_mem_new(struct hook_mem **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void hook_mem_free(struct hook_mem *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_regions; i++) {
		mem_dir_mark(m->regions[i].addr, m->regions[i].size, false);
		munmap((void *)m->regions[i].addr, m->regions[i].size);
	}
	free(m->regions);
	free(m->maps);
	free(m->maps_text);
	free(m);
}

size_t hook_mem_mapped_bytes(const struct hook_mem *m)
{
	size_t total = 0;

	for (size_t i = 0; i < m->n_regions; i++)
		total += m->regions[i].size;
	return total;
}

static int maps_parse_prot(const char *p, const char *end)
{
	int prot = 0;

	if (end - p < 4)
		return -1;
	prot |= p[0] == 'r' ? PROT_READ : 0;
	prot |= p[1] == 'w' ? PROT_WRITE : 0;
	prot |= p[2] == 'x' ? PROT_EXEC : 0;
	return prot;
}

/* "start-end perms ..." for one line [p, eol). */
static int maps_parse_line(const char *p, const char *eol, struct hook_map *out)
{
	char *e;
	char tmp[64];
	size_t n = (size_t)(eol - p) < sizeof(tmp) - 1 ? (size_t)(eol - p) : sizeof(tmp) - 1;

	memcpy(tmp, p, n); /* strtoull needs a terminated string */
	tmp[n] = '\0';
	out->start = strtoull(tmp, &e, 16);
	if (*e != '-')
		return -EINVAL;
	out->end = strtoull(e + 1, &e, 16);
	if (*e != ' ' || out->end < out->start)
		return -EINVAL;
	out->prot = maps_parse_prot(e + 1, tmp + n);
	return out->prot < 0 ? -EINVAL : 0;
}

int hook_maps_parse(const char *buf, size_t len, struct hook_map *out, size_t cap)
{
	const char *p = buf, *end = buf + len;
	size_t n = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if (eol > p) {
			if (n == cap)
				return -ENOSPC;
			if (maps_parse_line(p, eol, &out[n]))
				return -EINVAL;
			n++;
		}
		p = eol + 1;
	}
	return (int)n;
}

int hook_maps_main_stack(const struct hook_map *maps, int n, uint64_t stack_end, uint64_t rlim,
                         uint64_t *lo, uint64_t *hi)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), last_to = 0;
	for (int i = 0; i < n; i++) {
		if (maps[i].start <= stack_end && stack_end < maps[i].end) {
			uint64_t top = (stack_end & ~(pg - 1)) + pg;
			/* glibc's arithmetic, unsigned as there (an infinite limit
			 * is capped by the mapping below) */
			uint64_t size = (rlim - (maps[i].end - top)) / pg * pg;
			if (size > top - last_to)
				size = top - last_to;
			*lo = top - size;
			*hi = top;
			return 0;
		}
		last_to = maps[i].end;
	}
	return -ENOENT;
}

int hook_mem_main_stack(const struct hook_mem *m, uint64_t stack_end, uint64_t rlim, uint64_t *lo,
                        uint64_t *hi)
{
	if (!m || m->maps_fresh == MEM_MAPS_STALE || !m->maps)
		return -ESTALE;
	return hook_maps_main_stack(m->maps, m->n_maps, stack_end, rlim, lo, hi);
}

/* Reads the whole of /proc/self/maps into a malloc'ed buffer. */
static int maps_read(char **out, size_t *out_len)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), err = 0;

	if (!buf || fd < 0) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	*out = buf;
	*out_len = len;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

/* Snapshot of the address space, sorted by address (the kernel's order);
 * with text given, the text it was parsed from replaces *text (else it
 * is freed). */
static int maps_load_text(struct hook_map **maps, int *n_maps, char **text, size_t *text_len)
{
	char *buf = NULL;
	size_t len = 0;
	int err = maps_read(&buf, &len), n;

	if (err)
		return err;
	size_t cap = len / 20 + 1; /* a line is longer than 20 bytes */
	struct hook_map *arr = malloc(cap * sizeof(*arr));
	n = arr ? hook_maps_parse(buf, len, arr, cap) : -ENOMEM;
	if (n < 0) {
		free(buf);
		free(arr);
		return n;
	}
	free(*maps);
	*maps = arr;
	*n_maps = n;
	if (text) {
		free(*text);
		*text = buf;
		*text_len = len;
	} else {
		free(buf);
	}
	return 0;
}

static int maps_load(struct hook_map **maps, int *n_maps)
{
	return maps_load_text(maps, n_maps, NULL, NULL);
}

int hook_mem_maps_text(const struct hook_mem *m, const char **text, size_t *len)
{
	if (!m || m->maps_fresh == MEM_MAPS_STALE || !m->maps_text)
		return -ESTALE;
	*text = m->maps_text;
	*len = m->maps_text_len;
	return 0;
}

static uint64_t mem_dist(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* Best page-aligned address for size bytes inside free gaps of the
 * snapshot and inside [wlo, whi); 0 when none. */
static uint64_t mem_find_gap(const struct hook_mem *m, uint64_t wlo, uint64_t whi, size_t size,
                             uint64_t near)
{
	uint64_t best = 0, prev_end = MEM_VA_LOW, pg = (uint64_t)sysconf(_SC_PAGESIZE);

	for (int i = 0; i <= m->n_maps; i++) {
		uint64_t gs = prev_end, ge = i < m->n_maps ? m->maps[i].start : MEM_VA_HIGH;
		if (i < m->n_maps && m->maps[i].end > prev_end)
			prev_end = m->maps[i].end;
		uint64_t lo = gs > wlo ? gs : wlo, hi = ge < whi ? ge : whi;
		lo = (lo + pg - 1) & ~(pg - 1);
		if (hi <= lo || hi - lo < size)
			continue;
		/* The point of the usable interval closest to the module. */
		uint64_t cand = near & ~(pg - 1);
		if (cand < lo)
			cand = lo;
		if (cand > hi - size)
			cand = (hi - size) & ~(pg - 1);
		if (cand < lo)
			continue;
		if (!best || mem_dist(cand, near) < mem_dist(best, near))
			best = cand;
	}
	return best;
}

/* Our own new mapping [addr, addr + size) into the snapshot, in address
 * order, so the next region's search need not read /proc/self/maps again
 * (one read per region before). -ENOMEM: it is not. */
static int mem_snapshot_insert(struct hook_mem *m, uint64_t addr, size_t size)
{
	struct hook_map *a = realloc(m->maps, ((size_t)m->n_maps + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	m->maps = a;
	int i = m->n_maps;
	while (i > 0 && a[i - 1].start > addr) {
		a[i] = a[i - 1];
		i--;
	}
	a[i] = (struct hook_map){addr, addr + size, PROT_READ | PROT_WRITE};
	m->n_maps++;
	return 0;
}

static int mem_add_region(struct hook_mem *m, uint64_t addr, size_t size, uint32_t module_id)
{
	if (m->n_regions == m->cap_regions) {
		size_t cap = m->cap_regions ? m->cap_regions * 2 : 16;
		struct mem_region *r = realloc(m->regions, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		m->regions = r;
		m->cap_regions = cap;
	}
	m->regions[m->n_regions++] = (struct mem_region){addr, size, 0, module_id, 1};
	return 0;
}

/* Our new mapping p = [at, at + size) made module_id's region: marked as
 * trampoline memory, listed, and put into the snapshot when snapshot
 * says it was current (then it stays current: MEM_MAPS_KEPT). On
 * failure the mapping is gone. 0 or -errno. */
static int mem_region_take(struct hook_mem *m, uint32_t module_id, void *p, size_t size,
                           bool snapshot)
{
	uint64_t at = (uint64_t)(uintptr_t)p;
	m->maps_fresh = MEM_MAPS_STALE; /* until the new region is in it */
	int err = mem_dir_mark(at, size, true);
	if (!err)
		err = mem_add_region(m, at, size, module_id);
	if (err) {
		mem_dir_mark(at, size, false);
		munmap(p, size);
	} else if (snapshot && mem_snapshot_insert(m, at, size) == 0) {
		m->maps_fresh = MEM_MAPS_KEPT;
	}
	return err;
}

/* Maps a new RW region within [wlo, whi), retrying when another thread
 * took the gap between our snapshot and the mmap (EEXIST). */
static int mem_new_region(struct hook_mem *m, uint32_t module_id, uint64_t wlo, uint64_t whi,
                          uint64_t near, size_t size)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		if (m->maps_fresh == MEM_MAPS_STALE) {
			int err =
			    maps_load_text(&m->maps, &m->n_maps, &m->maps_text, &m->maps_text_len);
			if (err)
				return err;
			m->maps_fresh = MEM_MAPS_READ;
		}
		uint64_t at = mem_find_gap(m, wlo, whi, size, near);
		if (!at && m->maps_fresh == MEM_MAPS_KEPT) {
			m->maps_fresh = MEM_MAPS_STALE; /* a gap freed since may be there */
			continue;
		}
		if (!at)
			return -ENOMEM;
		bool kept = m->maps_fresh == MEM_MAPS_KEPT;
		void *p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		m->maps_fresh = MEM_MAPS_STALE; /* the address space changed either way */
		if (p == MAP_FAILED && errno == EEXIST)
			continue;
		if (p == MAP_FAILED)
			return -errno;
		if ((uint64_t)p != at) {
			/* Taken as a hint (a pre-4.17 kernel, qemu-user): with the kept
			 * snapshot the gap may just be taken since, as EEXIST says. */
			munmap(p, size);
			if (kept)
				continue;
			return -ENOMEM;
		}
		return mem_region_take(m, module_id, p, size, true);
	}
	return -ENOMEM;
}

static int mem_region_fits(const struct mem_region *r, uint32_t module_id, uint64_t wlo,
                           uint64_t whi, size_t len)
{
	return r->open && r->module_id == module_id && r->size - r->used >= len && r->addr >= wlo &&
	       r->addr + r->size <= whi;
}

int hook_mem_alloc(struct hook_mem *m, uint32_t module_id, uint64_t lo, uint64_t hi, size_t len,
                   uint8_t **out)
{
	uint64_t wlo = hi > MEM_REACH + MEM_VA_LOW ? hi - MEM_REACH : MEM_VA_LOW;
	uint64_t whi = lo + MEM_REACH < MEM_VA_HIGH ? lo + MEM_REACH : MEM_VA_HIGH;

	if (hi < lo || hi - lo >= MEM_REACH)
		return -EINVAL;
	return hook_mem_alloc_in(m, module_id, wlo, whi, lo, len, out);
}

int hook_mem_alloc_in(struct hook_mem *m, uint32_t module_id, uint64_t wlo, uint64_t whi,
                      uint64_t near, size_t len, uint8_t **out)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct mem_region *r = NULL;

	if (wlo < MEM_VA_LOW)
		wlo = MEM_VA_LOW;
	if (whi > MEM_VA_HIGH)
		whi = MEM_VA_HIGH;
	if (len == 0 || whi <= wlo || len > (64u << 20))
		return -EINVAL;
	len = (len + 15) & ~(size_t)15; /* keep trampolines 16-byte aligned */
	for (size_t i = m->n_regions; i-- > 0 && !r;)
		if (mem_region_fits(&m->regions[i], module_id, wlo, whi, len))
			r = &m->regions[i];
	if (!r) {
		size_t size = len > MEM_REGION_MIN ? len : MEM_REGION_MIN;
		size = (size + pg - 1) & ~(pg - 1);
		int err = mem_new_region(m, module_id, wlo, whi, near, size);
		if (err)
			return err;
		r = &m->regions[m->n_regions - 1];
	}
	*out = (uint8_t *)(r->addr + r->used);
	r->used += len;
	return 0;
}

int hook_mem_alloc_at(struct hook_mem *m, uint32_t module_id, uint64_t at, size_t len,
                      uint8_t **out)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t size = (size_t)((len + pg - 1) & ~(pg - 1));
	if (len == 0 || len > (64u << 20) || (at & (pg - 1)) || at < MEM_VA_LOW ||
	    at > MEM_VA_HIGH - size)
		return -EINVAL;
	void *p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;   /* nothing changed: the snapshot holds */
	if ((uint64_t)p != at) { /* taken as a hint (before Linux 4.17): not there */
		munmap(p, size);
		return -EEXIST;
	}
	int err = mem_region_take(m, module_id, p, size, m->maps_fresh != MEM_MAPS_STALE);
	if (err)
		return err;
	struct mem_region *r = &m->regions[m->n_regions - 1];
	r->used = (len + 15) & ~(size_t)15;
	*out = (uint8_t *)at;
	return 0;
}

int hook_mem_seal(struct hook_mem *m)
{
	for (size_t i = 0; i < m->n_regions; i++) {
		struct mem_region *r = &m->regions[i];
		if (!r->open)
			continue;
		/* arm64: the trampolines written through the data side reach
		 * the instruction side before any patch branches to them
		 * (nothing on x86_64, whose caches are coherent). */
		__builtin___clear_cache((char *)r->addr, (char *)(r->addr + r->used));
		if (mprotect((void *)r->addr, r->size, PROT_READ | PROT_EXEC))
			return -errno;
		r->open = 0;
	}
	return 0;
}

int hook_mem_release_module(struct hook_mem *m, uint32_t module_id)
{
	size_t j = 0;
	int err = 0;

	for (size_t i = 0; i < m->n_regions; i++) {
		struct mem_region *r = &m->regions[i];
		if (r->module_id == module_id) {
			mem_dir_mark(r->addr, r->size, false);
			if (munmap((void *)r->addr, r->size) && !err)
				err = -errno;
			continue;
		}
		m->regions[j++] = *r;
	}
	m->n_regions = j;
	m->maps_fresh = MEM_MAPS_STALE;
	return err;
}

/* ---- patching ----
 * Patches are sorted and applied in runs: all patches inside one mapping
 * (typically a module's whole .text) are written under a single
 * mprotect(RW+X) .. mprotect(original) pair over the pages they span, so
 * a batch costs two syscalls per mapping instead of two per page. A patch
 * straddling two mappings (rare) is done alone, page by page, each page
 * restored to its own protection. */

static int patch_cmp(const void *a, const void *b)
{
	const struct hook_patch *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Index of the mapping holding addr, or -1. */
static int patch_map_of(const struct hook_map *maps, int n_maps, uint64_t addr)
{
	int lo = 0, hi = n_maps - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (addr < maps[mid].start)
			hi = mid - 1;
		else if (addr >= maps[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* Keeps exec so threads running on these pages go on; a kernel policy that
 * refuses W+X (EACCES) gets W without X (safe only single-threaded). */
static int patch_unlock(uint64_t lo, uint64_t len, int prot)
{
	int w = prot | PROT_READ | PROT_WRITE;

	if (mprotect((void *)lo, len, w) == 0)
		return 0;
	if (errno != EACCES || !(prot & PROT_EXEC))
		return -errno;
	return mprotect((void *)lo, len, w & ~PROT_EXEC) ? -errno : 0;
}

static int patch_relock(uint64_t lo, uint64_t len, int prot)
{
	return mprotect((void *)lo, len, prot) ? -errno : 0;
}

/* Writes only the differing bytes; one atomic 8-byte store when they share
 * an aligned word. Relaxed is enough: the partner is the instruction fetch
 * of other CPUs, which no memory order orders; x86 keeps code coherent,
 * arm64 gets its cache maintenance (clean to the point of unification,
 * invalidate, barriers: __builtin___clear_cache) over the bytes written.
 * Not instrumented by ThreadSanitizer: it has no shadow for code pages. */
__attribute__((no_sanitize("thread"))) static void patch_write(uint8_t *dst, const uint8_t *src,
                                                               size_t len)
{
	size_t a = 0, b = len;

	while (a < len && dst[a] == src[a])
		a++;
	while (b > a && dst[b - 1] == src[b - 1])
		b--;
	if (a == b)
		return;
	uintptr_t first = (uintptr_t)(dst + a), last = (uintptr_t)(dst + b - 1);
	if ((first & ~(uintptr_t)7) == (last & ~(uintptr_t)7)) {
		uint8_t *word = (uint8_t *)(first & ~(uintptr_t)7);
		uint64_t v;
		memcpy(&v, word, 8);
		memcpy((uint8_t *)&v + (first & 7), src + a, b - a);
		atomic_store_explicit((_Atomic uint64_t *)word, v, memory_order_relaxed);
	} else {
		memcpy(dst + a, src + a, b - a);
	}
	__builtin___clear_cache((char *)(dst + a), (char *)(dst + b));
}

/* Whether patch_write() would change a byte of p (read in a loop, as
 * patch_write does, not through memcmp: ThreadSanitizer has no shadow for
 * code pages). */
__attribute__((no_sanitize("thread"))) static bool patch_changes(const struct hook_patch *p)
{
	const uint8_t *dst = (const uint8_t *)p->addr;
	for (size_t a = 0; a < p->len; a++)
		if (dst[a] != p->bytes[a])
			return true;
	return false;
}

/* The pages one drop step spans at most (64 MiB: one step for all but
 * the largest images) and one write step (1 MiB: the copies are still in
 * the caches when the writes come). */
#define PATCH_DROP_PAGES 16384
#define PATCH_WRITE_PAGES 256

#define PM_BATCH 256 /* pagemap entries read at a time */

/* The callers are serialized (hook_mem.h): one step's state, static so
 * that a dlopen on a small thread stack does not carry it. */
static struct {
	uint64_t changed[PATCH_DROP_PAGES / 64]; /* pages a patch changes, from the step's first */
	uint64_t clean[PATCH_DROP_PAGES / 64];   /* pages that hold the file's bytes (the drop's) */
	uint64_t ent[PM_BATCH];
	struct hook_patch_cow cow;
} patch_step;

void hook_patch_cow_stats(struct hook_patch_cow *out)
{
	*out = patch_step.cow;
}

/* Drops [from, to), counting its present pages as dropped or failed. */
static void patch_drop(uint64_t from, uint64_t to, uint64_t present)
{
	if (!present)
		return; /* nothing mapped: each copy is a fault on an empty entry already */
	if (madvise((void *)from, to - from, MADV_DONTNEED) == 0)
		patch_step.cow.dropped += present;
	else
		patch_step.cow.failed += present;
}

/* Makes the copies of [lo, hi)'s pages cheap. Copying a page that is
 * mapped (breaking copy-on-write of a present entry) flushes its
 * translation, one flush per page -- on a paravirtualised guest an exit
 * to the hypervisor and a wait for the other CPUs each: the larger part
 * of hooking cc1 (thousands of pages) on such a host. A page that
 * still maps its file's bytes loses nothing by being dropped
 * (MADV_DONTNEED): its copy is then a fault on an empty entry, and the
 * drop flushes once for the whole run. Only such pages are dropped: one
 * that holds a private copy already (an earlier patch, a text
 * relocation, a uprobe; or swapped out) is anonymous in
 * /proc/self/pagemap and kept, as MADV_DONTNEED would throw its bytes
 * away. Nobody but the agent (patch_unlock) has made these pages
 * writable, so nothing makes a copy between the read of pagemap and the
 * drop but a program writing its own code behind the agent's back.
 * Without pagemap nothing is dropped; the pages are counted failed and
 * copied as before. The pages that hold the file's bytes (a file page,
 * or none mapped and none swapped out) are marked in patch_step.clean,
 * for hook_pages_write(). */
static void patch_drop_range(uint64_t lo, uint64_t hi, uint64_t pg)
{
	uint64_t from = lo, present = 0, a = lo;
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	while (a < hi) {
		size_t n = (hi - a) / pg < PM_BATCH ? (size_t)((hi - a) / pg) : PM_BATCH;
		ssize_t want = (ssize_t)(n * sizeof(uint64_t));
		if (pm < 0 || pread(pm, patch_step.ent, (size_t)want,
		                    (off_t)(a / pg * sizeof(uint64_t))) != want) {
			patch_step.cow.failed += (hi - a) / pg;
			break;
		}
		for (size_t q = 0; q < n; q++, a += pg) {
			uint64_t e = patch_step.ent[q], x = (a - lo) / pg;
			if ((e & HOOK_PM_SWAP) || ((e & HOOK_PM_PRESENT) && !(e & HOOK_PM_FILE))) {
				patch_drop(from, a, present);
				patch_step.cow.kept++;
				from = a + pg;
				present = 0;
				continue;
			}
			present += (e & HOOK_PM_PRESENT) != 0;
			patch_step.clean[x / 64] |= 1ull << (x % 64);
		}
	}
	if (from < a)
		patch_drop(from, a, present);
	if (pm >= 0)
		close(pm);
}

/* Marks in patch_step.changed (bit x: page base + x pages) the pages
 * that patches[i..j) change, as far as the step reaches (PATCH_DROP_PAGES
 * pages from base); returns the end of the patches within reach and
 * raises *hi to the end of the last page marked. Reads every patched
 * byte: before the drop, as reading a dropped page would map it again.
 * In the start-up scan (hook_no_seccomp's window) it reads none and
 * marks every patch's pages: its patches are new (a plan cache hit's
 * bytes were checked from the file, agent_text.c, and this read would be
 * the first touch of each page, one hypervisor exit each on a guest with
 * shadow page tables), and a patch that changes nothing is written all
 * the same -- the same bytes again, harmless. */
static size_t patch_mark(const struct hook_patch *patches, size_t i, size_t j, uint64_t base,
                         uint64_t pg, uint64_t *hi)
{
	uint64_t limit = base + PATCH_DROP_PAGES * pg;
	bool all = hook_no_seccomp();
	size_t k = i;
	for (; k < j && patches[k].addr + patches[k].len <= limit; k++) {
		const struct hook_patch *p = &patches[k];
		if (!all && !patch_changes(p))
			continue; /* patch_write writes nothing */
		uint64_t b = (p->addr + p->len + pg - 1) & ~(pg - 1);
		for (uint64_t x = (p->addr - base) / pg; x < (b - base) / pg; x++)
			patch_step.changed[x / 64] |= 1ull << (x % 64);
		*hi = b > *hi ? b : *hi;
	}
	return k;
}

/* Unmarked pages a copy run bridges: copying one costs less than the
 * call a gap would add (cc1: 600 runs otherwise). */
#define PATCH_POPULATE_GAP 2

/* Set by hook_mem_populate_refuse() (tests): every populate refused as
 * by a kernel before 5.14. Relaxed: set before the install paths run and
 * read by them only (serialized, hook_mem.h); it guards nothing else. */
static _Atomic bool populate_refused;

void hook_mem_populate_refuse(bool refuse)
{
	atomic_store_explicit(&populate_refused, refuse, memory_order_relaxed);
}

/* madvise(advice) over [from, to) (page-aligned, non-empty); false when
 * the kernel refused it (before Linux 5.14: EINVAL; a hole: ENOMEM),
 * counted populate_refused. Nothing depends on it: what it did not
 * populate faults in when touched, one trap per page. */
static bool mem_populate(uint64_t from, uint64_t to, int advice)
{
	if (!atomic_load_explicit(&populate_refused, memory_order_relaxed) &&
	    madvise((void *)from, to - from, advice) == 0)
		return true;
	patch_step.cow.populate_refused++;
	return false;
}

#ifndef MADV_POPULATE_READ /* headers before Linux 5.14: the kernel says */
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

static void patch_populate_run(uint64_t from, uint64_t to)
{
	if (from < to)
		(void)mem_populate(from, to, MADV_POPULATE_WRITE);
}

void hook_mem_prefault(uint64_t addr, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = addr & ~(pg - 1), hi = (addr + len + pg - 1) & ~(pg - 1);
	if (len && hi > lo && mem_populate(lo, hi, MADV_POPULATE_READ))
		patch_step.cow.prefaulted += (hi - lo) / pg;
}

/* Copies, writable, the marked pages of [lo, hi) (page-aligned, within
 * the step that starts at base), a run of nearby ones per call: one trap
 * per page otherwise. A refusal (before Linux 5.14) changes nothing: the
 * writes fault as before. */
static void patch_populate(uint64_t base, uint64_t lo, uint64_t hi, uint64_t pg)
{
	uint64_t from = 0, to = 0;
	for (uint64_t a = lo; a < hi; a += pg) {
		uint64_t x = (a - base) / pg;
		if (!((patch_step.changed[x / 64] >> (x % 64)) & 1u))
			continue;
		if (!from || a - to > PATCH_POPULATE_GAP * pg) {
			patch_populate_run(from, to);
			from = a;
		}
		to = a + pg;
	}
	patch_populate_run(from, to);
}

/* Starts a drop step at base: nothing marked yet. */
static void patch_step_begin(uint64_t *hi)
{
	memset(patch_step.changed, 0, sizeof(patch_step.changed));
	memset(patch_step.clean, 0, sizeof(patch_step.clean));
	*hi = 0;
}

/* Writes patches[i..j) (sorted, their pages writable): per drop step,
 * the clean pages it spans dropped in one call (patch_drop_range; the
 * ones no patch changes are mapped again when they run, by a read fault
 * each 16 pages), then PATCH_WRITE_PAGES at a time the pages it changes
 * copied and its patches written. Nothing but the agent's own calls into
 * an image being patched (libc's) reads a dropped page before its copy. */
static void patch_write_steps(const struct hook_patch *patches, size_t i, size_t j, uint64_t pg)
{
	for (size_t k = i; k < j;) {
		uint64_t base = patches[k].addr & ~(pg - 1), hi;
		patch_step_begin(&hi);
		size_t end = patch_mark(patches, k, j, base, pg, &hi);
		if (hi)
			patch_drop_range(base, hi, pg);
		while (k < end) {
			uint64_t lo = patches[k].addr & ~(pg - 1),
			         top = lo + PATCH_WRITE_PAGES * pg;
			size_t e = k;
			uint64_t whi = 0;
			for (; e < end && patches[e].addr < top; e++) {
				uint64_t b = patches[e].addr + patches[e].len;
				whi = b > whi ? b : whi;
			}
			patch_populate(base, lo, (whi + pg - 1) & ~(pg - 1), pg);
			for (; k < e; k++)
				patch_write((uint8_t *)patches[k].addr, patches[k].bytes,
				            patches[k].len);
		}
	}
}

/* Patches per process_vm_writev() call (the kernel takes 1024). */
#define PATCH_IOV 256

/* Open during the start-up scan only (hook_seccomp_window). Relaxed: set
 * and read by the install paths, which are serialized (agent.lock). */
static _Atomic bool seccomp_window;
static _Atomic uint64_t seccomp_window_gen; /* relaxed as seccomp_window */

void hook_seccomp_window(bool open)
{
	if (open)
		atomic_fetch_add_explicit(&seccomp_window_gen, 1, memory_order_relaxed);
	atomic_store_explicit(&seccomp_window, open, memory_order_relaxed);
}

uint64_t hook_seccomp_window_gen(void)
{
	return atomic_load_explicit(&seccomp_window_gen, memory_order_relaxed);
}

bool hook_no_seccomp(void)
{
	if (!atomic_load_explicit(&seccomp_window, memory_order_relaxed))
		return false;
	/* 0: not read yet, 1: none, 2: a filter or unknown. Relaxed: two
	 * first readers (an install and the symbol-table cache's helper
	 * thread) store the same answer; it guards nothing else. */
	static _Atomic int known;
	if (!atomic_load_explicit(&known, memory_order_relaxed)) {
		char buf[4096];
		int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		const char *at = strstr(buf, "\nSeccomp:");
		atomic_store_explicit(&known, at && strtol(at + 9, NULL, 10) == 0 ? 1 : 2,
		                      memory_order_relaxed);
	}
	return atomic_load_explicit(&known, memory_order_relaxed) == 1;
}

bool hook_mem_write_kernel(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__) && defined(__linux__)
	struct iovec l = {(void *)(uintptr_t)src, len}, r = {dst, len};
	return len && hook_no_seccomp() &&
	       process_vm_writev(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len;
#else
	(void)dst, (void)src, (void)len;
	return false;
#endif
}

/* Writes those of patches[0..n) whose first page is marked (the others
 * change nothing) through the kernel: process_vm_writev() on this process, in
 * order, PATCH_IOV a call. The kernel makes each copy (a fault on an
 * empty entry, after patch_drop_range) and writes it through its own
 * mapping, so this process never touches the page: on a paravirtualised
 * guest with shadow page tables the first touch of a new page costs an
 * exit to the hypervisor, for each of an image's thousands of pages,
 * most of which never run. Not atomic per instruction (the kernel copies
 * bytes): one thread only, and x86_64 only (arm64 needs the cache
 * maintenance patch_write does); not under a seccomp filter
 * (hook_no_seccomp). false then, or when the kernel refused or wrote
 * less: the caller writes them all again its own way (writing the same
 * bytes twice is harmless). */
static bool patch_write_kernel(const struct hook_patch *patches, size_t n, uint64_t base,
                               uint64_t pg)
{
#if defined(__x86_64__) && defined(__linux__)
	/* Callers serialized. The batch's bytes are gathered into one small
	 * buffer, reused, as the call's single source (the kernel reads the
	 * source stream into the remote iovecs in order): read from the
	 * patch array itself, each of its pages (cc1: 26 000 patches, 200
	 * pages) was a first touch by the kernel, a hypervisor exit each on
	 * a guest with shadow page tables. */
	static struct iovec remote[PATCH_IOV];
	static uint8_t src[PATCH_IOV * HOOK_ARCH_MAX_PATCH];
	size_t k = 0;
	if (!hook_no_seccomp())
		return false;
	while (k < n) {
		size_t c = 0, total = 0;
		for (; k < n && c < PATCH_IOV; k++) {
			uint64_t x = (patches[k].addr - base) / pg;
			if (!((patch_step.changed[x / 64] >> (x % 64)) & 1u))
				continue;
			memcpy(src + total, patches[k].bytes, patches[k].len);
			remote[c++] =
			    (struct iovec){(void *)(uintptr_t)patches[k].addr, patches[k].len};
			total += patches[k].len;
		}
		struct iovec local = {src, total};
		if (c && process_vm_writev(getpid(), &local, 1, remote, c, 0) != (ssize_t)total)
			return false;
	}
	return true;
#else
	(void)patches, (void)n, (void)base, (void)pg;
	return false;
#endif
}

/* Writes every patch of first, then every patch of then (each sorted,
 * their pages [lo, hi) writable, one drop step at most): the pages both
 * change marked before anything is dropped -- then's marks read its
 * bytes, which after a drop for first alone would map every page again
 * but first's -- dropped in one step, then written in the order
 * hook_patch_apply_pair() promises: when one_thread, by the kernel, whole
 * pages from src (hook_pages_write) or else a patch at a time
 * (patch_write_kernel); else copied at once and written here. */
static void patch_write_pair(const struct hook_patch *first, size_t n_first,
                             const struct hook_patch *then, size_t n_then, uint64_t lo, uint64_t pg,
                             bool one_thread, const struct hook_patch_file *src)
{
	uint64_t hi;
	patch_step_begin(&hi);
	patch_mark(first, 0, n_first, lo, pg, &hi);
	patch_mark(then, 0, n_then, lo, pg, &hi);
	if (!hi)
		return; /* nothing changes */
	patch_drop_range(lo, hi, pg);
	struct hook_pages_step step = {
	    first, then, n_first, n_then, lo, hi, pg, patch_step.changed, patch_step.clean};
	uint64_t whole = 0;
	bool done = one_thread && src && hook_pages_write(src, &step, &whole);
	patch_step.cow.whole += whole;
	if (done)
		return;
	if (one_thread && patch_write_kernel(first, n_first, lo, pg) &&
	    patch_write_kernel(then, n_then, lo, pg))
		return;
	patch_step.cow.kernel_refused += one_thread;
	patch_populate(lo, lo, hi, pg);
	for (size_t k = 0; k < n_first; k++)
		patch_write((uint8_t *)first[k].addr, first[k].bytes, first[k].len);
	for (size_t k = 0; k < n_then; k++)
		patch_write((uint8_t *)then[k].addr, then[k].bytes, then[k].len);
}

/* One patch whose bytes lie in two mappings: each page on its own. */
static int patch_straddling(const struct hook_map *maps, int n_maps, uint64_t pg,
                            const struct hook_patch *p)
{
	uint64_t a = p->addr & ~(pg - 1), b = (p->addr + p->len - 1) & ~(pg - 1);
	int ma = patch_map_of(maps, n_maps, a), mb = patch_map_of(maps, n_maps, b), err;

	if (ma < 0 || mb < 0)
		return -EFAULT;
	err = patch_unlock(a, pg, maps[ma].prot);
	if (err)
		return err;
	err = patch_unlock(b, pg, maps[mb].prot);
	if (!err)
		patch_write((uint8_t *)p->addr, p->bytes, p->len);
	int e2 = patch_relock(b, pg, maps[mb].prot);
	int e1 = patch_relock(a, pg, maps[ma].prot);
	return err ? err : e1 ? e1 : e2;
}

/* Applies patches[i..) that lie in the mapping of patches[i]; returns how
 * many it consumed (>= 1) or -errno. */
static long patch_run(const struct hook_map *maps, int n_maps, uint64_t pg,
                      const struct hook_patch *patches, size_t i, size_t n)
{
	int m = patch_map_of(maps, n_maps, patches[i].addr);
	size_t j = i;

	if (m < 0)
		return -EFAULT;
	while (j < n && patches[j].addr >= maps[m].start &&
	       patches[j].addr + patches[j].len <= maps[m].end)
		j++;
	if (j == i) {
		int err = patch_straddling(maps, n_maps, pg, &patches[i]);
		return err ? err : 1;
	}
	uint64_t lo = patches[i].addr & ~(pg - 1);
	uint64_t hi = (patches[j - 1].addr + patches[j - 1].len + pg - 1) & ~(pg - 1);
	int err = patch_unlock(lo, hi - lo, maps[m].prot);
	if (err)
		return err;
	patch_write_steps(patches, i, j, pg);
	err = patch_relock(lo, hi - lo, maps[m].prot);
	return err ? err : (long)(j - i);
}

/* Whether every patch lies in a mapping of maps (then the snapshot can
 * serve: hook_patch_apply_pair). */
static bool patch_all_mapped(const struct hook_map *maps, int n_maps,
                             const struct hook_patch *patches, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (patch_map_of(maps, n_maps, patches[i].addr) < 0 ||
		    patch_map_of(maps, n_maps, patches[i].addr + patches[i].len - 1) < 0)
			return false;
	return true;
}

/* Sorts patches by address in place. The agent hands them over in symbol
 * order, already sorted: qsort (a merge sort in glibc) would still pay its
 * n log n comparator calls. */
static void patch_sort(struct hook_patch *patches, size_t n)
{
	size_t sorted = 1;
	while (sorted < n && patch_cmp(&patches[sorted - 1], &patches[sorted]) <= 0)
		sorted++;
	if (sorted < n)
		qsort(patches, n, sizeof(*patches), patch_cmp);
}

/* hook_patch_apply() over the mappings maps (sorted by address). */
static int patch_apply_over(const struct hook_map *maps, int n_maps, struct hook_patch *patches,
                            size_t n)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	patch_sort(patches, n);
	for (size_t i = 0; i < n;) {
		long r = patch_run(maps, n_maps, pg, patches, i, n);
		if (r < 0)
			return (int)r;
		i += (size_t)r;
	}
	return 0;
}

/* Widens [*lo, *hi) to the bytes of patches[0..n). */
static void patch_span(const struct hook_patch *patches, size_t n, uint64_t *lo, uint64_t *hi)
{
	for (size_t i = 0; i < n; i++) {
		*lo = patches[i].addr < *lo ? patches[i].addr : *lo;
		*hi =
		    patches[i].addr + patches[i].len > *hi ? patches[i].addr + patches[i].len : *hi;
	}
}

/* hook_patch_apply_pair() over the mappings maps. */
static int patch_pair_over(const struct hook_map *maps, int n_maps, struct hook_patch *first,
                           size_t n_first, struct hook_patch *then, size_t n_then, bool one_thread,
                           const struct hook_patch_file *src)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), lo = UINT64_MAX, hi = 0;
	patch_sort(first, n_first);
	patch_sort(then, n_then);
	patch_span(first, n_first, &lo, &hi);
	patch_span(then, n_then, &lo, &hi);
	int m = hi ? patch_map_of(maps, n_maps, lo) : -1;
	if (m < 0 || hi > maps[m].end) { /* several mappings: one array after the other */
		int err = patch_apply_over(maps, n_maps, first, n_first);
		return err ? err : patch_apply_over(maps, n_maps, then, n_then);
	}
	lo &= ~(pg - 1);
	hi = (hi + pg - 1) & ~(pg - 1);
	int err = patch_unlock(lo, hi - lo, maps[m].prot);
	if (err)
		return err;
	if (hi - lo <= PATCH_DROP_PAGES * pg) {
		patch_write_pair(first, n_first, then, n_then, lo, pg, one_thread, src);
	} else {
		patch_write_steps(first, 0, n_first, pg);
		patch_write_steps(then, 0, n_then, pg);
	}
	return patch_relock(lo, hi - lo, maps[m].prot);
}

static int patch_check_lens(const struct hook_patch *patches, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (patches[i].len == 0 || patches[i].len > HOOK_ARCH_MAX_PATCH)
			return -EINVAL;
	return 0;
}

int hook_patch_apply(struct hook_patch *patches, size_t n)
{
	struct hook_map *maps = NULL;
	int n_maps = 0, err = patch_check_lens(patches, n);
	if (!err)
		err = maps_load(&maps, &n_maps);
	if (!err)
		err = patch_apply_over(maps, n_maps, patches, n);
	free(maps);
	return err;
}

int hook_patch_apply_pair(struct hook_mem *m, struct hook_patch *first, size_t n_first,
                          struct hook_patch *then, size_t n_then)
{
	return hook_patch_apply_pair_file(m, NULL, first, n_first, then, n_then);
}

int hook_patch_apply_pair_file(struct hook_mem *m, const struct hook_patch_file *src,
                               struct hook_patch *first, size_t n_first, struct hook_patch *then,
                               size_t n_then)
{
	int err = patch_check_lens(first, n_first);
	if (!err)
		err = patch_check_lens(then, n_then);
	if (err)
		return err;
	if (m && m->maps_fresh != MEM_MAPS_STALE &&
	    patch_all_mapped(m->maps, m->n_maps, first, n_first) &&
	    patch_all_mapped(m->maps, m->n_maps, then, n_then))
		return patch_pair_over(m->maps, m->n_maps, first, n_first, then, n_then, true, src);
	struct hook_map *maps = NULL;
	int n_maps = 0;
	err = maps_load(&maps, &n_maps);
	if (!err)
		err = patch_pair_over(maps, n_maps, first, n_first, then, n_then, m != NULL,
		                      m ? src : NULL);
	free(maps);
	return err;
}
