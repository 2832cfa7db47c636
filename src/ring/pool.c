/*
 * ada ring: the arena pool -- a finished process's arena file handed to
 * the next process of the recording that makes one, its ring pages kept.
 *
 * A short process (a shell's `$(...)` subshell, a fork + _exit child)
 * writes its first few hundred KiB of index and detail records into
 * pages tmpfs must allocate and clear for it, and the recorder's last
 * close of its file frees them again. The recorder instead scrubs the
 * file of a process that is gone (the control block, the full slots'
 * descriptors and slot 0's headers zeroed in place; slot 0's index events
 * and detail words kept as they are; every other page punched back to
 * zeros) and renames it to pool.<k> in the arena directory; a process
 * that makes its arena takes
 * one by renaming it to its own temporary name (one rename wins) and
 * sets it up as a new file. Its rings start at position 0 as a freed
 * slot's next owner's do, so what the old pages hold lies outside every
 * range a reader reads ([tail, head) of the index ring, [oldest, head)
 * of the detail ring); populating them maps pages that exist.
 *
 * The recorder also makes new files for the pool (ada_arena_pool_make)
 * once the program forks, so that the children that start before any
 * has finished find one too.
 *
 * Threads: ada_arena_pool_put and _make on the drain thread; ring_pool_take on the
 * producer's set-up path (ada_producer_init), once per process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ring_internal.h"

ADA_FORK_PATH static uint64_t pool_page_up(uint64_t x)
{
	return (x + 4095) & ~(uint64_t)4095;
}

ADA_FORK_PATH static uint64_t pool_page_down(uint64_t x)
{
	return x & ~(uint64_t)4095;
}

ADA_FORK_PATH int ada_arena_pool_name(const char *dir, unsigned k, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/" ADA_ARENA_POOL_PREFIX "%u", dir, k);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

_Static_assert(ADA_ARENA_POOL_SLOTS <= 10, "pool names have one digit");

bool ada_arena_pool_is_name(const char *name)
{
	size_t n = strlen(ADA_ARENA_POOL_PREFIX);
	if (strncmp(name, ADA_ARENA_POOL_PREFIX, n) || !name[n] || name[n + 1])
		return false;
	return name[n] >= '0' && (unsigned)(name[n] - '0') < ADA_ARENA_POOL_SLOTS;
}

/* A page range of the file the pool keeps: its pages stay, zeroed first
 * when they hold a header (zero) or as they are when they hold ring data
 * (read by no one past its owner's head). */
struct pool_range {
	uint64_t lo, hi;
	bool zero;
};

#define POOL_RANGES 5

/* What the pool keeps: the control block and the full slots' descriptors
 * (what every maker populates and locks at once), slot 0's index and
 * detail headers (what its first claim populates) zeroed; slot 0's index
 * events and detail words whole pages as they are. For the layout g of
 * cfg in a file of size bytes; sorted by lo; the number of ranges. */
ADA_FORK_PATH static int pool_ranges_of(const struct ring_geometry *g,
                                        const struct ada_arena_config *cfg, uint64_t size,
                                        struct pool_range r[POOL_RANGES])
{
	int n = 0;
	r[n++] = (struct pool_range){0, pool_page_up(g->desc_lock_end), true};
	if (cfg->max_threads > 0) { /* slot 0 is no spill slot */
		uint64_t ih = g->slots_offset;
		uint64_t ev = ih + sizeof(struct ada_index_hdr);
		uint64_t ev_end = ev + cfg->index_events * sizeof(struct atf_index_event);
		r[n++] = (struct pool_range){pool_page_down(ih), pool_page_up(ev), true};
		r[n++] = (struct pool_range){pool_page_up(ev), pool_page_down(ev_end), false};
		if (cfg->detail_bytes) {
			uint64_t dh = ih + g->detail_offset;
			uint64_t dw = dh + sizeof(struct ada_detail_hdr);
			r[n++] = (struct pool_range){pool_page_down(dh), pool_page_up(dw), true};
			r[n++] = (struct pool_range){pool_page_up(dw),
			                             pool_page_down(dw + cfg->detail_bytes), false};
		}
	}
	for (int i = 0; i < n; i++) { /* clamped to the file; in order, as made */
		r[i].hi = r[i].hi < size ? r[i].hi : size;
		r[i].lo = r[i].lo < r[i].hi ? r[i].lo : r[i].hi;
	}
	return n;
}

ADA_FORK_PATH static int pool_ranges(const struct ada_arena *a, struct pool_range r[POOL_RANGES])
{
	return pool_ranges_of(&a->geo, &a->cfg, a->map_size, r);
}

/* The bytes of the ranges, a page two ranges share counted once. */
static uint64_t pool_ranges_bytes(const struct pool_range *r, int n)
{
	uint64_t bytes = 0, at = 0;
	for (int i = 0; i < n; i++) {
		uint64_t lo = r[i].lo > at ? r[i].lo : at;
		bytes += r[i].hi > lo ? r[i].hi - lo : 0;
		at = r[i].hi > at ? r[i].hi : at;
	}
	return bytes;
}

uint64_t ada_arena_pool_bytes(const struct ada_arena *a)
{
	struct pool_range r[POOL_RANGES];
	return pool_ranges_bytes(r, pool_ranges(a, r));
}

/* Maps the zero ranges r (n of them) into a's mapping, a call for each
 * run of adjacent ones: the pages exist (the pool kept them), so one
 * call maps each run where the reads below took a fault for every
 * sixteen pages. True when every call did (slot 0's headers then need no
 * mapping at its first claim: ada_arena.slot0_mapped). */
ADA_FORK_PATH static bool pool_map_zero_ranges(struct ada_arena *a, const struct pool_range *r,
                                               int n)
{
	bool all = true;
	for (int i = 0; i < n;) {
		if (!r[i].zero || r[i].hi <= r[i].lo) {
			i++;
			continue;
		}
		uint64_t lo = r[i].lo, hi = r[i].hi;
		for (i++; i < n && r[i].zero && r[i].lo <= hi; i++)
			hi = r[i].hi > hi ? r[i].hi : hi;
		all = ring_map_pages(a, lo, hi) == 0 && all;
	}
	return all;
}

ADA_FORK_PATH bool ring_pool_fresh(struct ada_arena *a)
{
	struct pool_range r[POOL_RANGES];
	int n = pool_ranges(a, r);
	/* On tmpfs only (populate_read): elsewhere a read maps a page its
	 * first write faults on again (arena_madvise_range). */
	if (a->populate_read)
		a->slot0_mapped = pool_map_zero_ranges(a, r, n);
	for (int i = 0; i < n; i++) {
		if (!r[i].zero)
			continue;
		/* Word by word: the ranges are whole pages. */
		const uint64_t *w = (const uint64_t *)(a->base + r[i].lo);
		for (uint64_t k = 0; k < (r[i].hi - r[i].lo) / 8; k++)
			if (w[k])
				return false;
	}
	return true;
}

/* Punches [from, to) of fd back to zeros (no pages); 0 or -errno. */
static int pool_punch(int fd, uint64_t from, uint64_t to)
{
	if (to <= from)
		return 0;
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
	                 (off_t)(to - from)) == 0
	           ? 0
	           : -errno;
}

int ada_arena_pool_scrub(const struct ada_arena *a, int fd)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != a->map_size)
		return -EINVAL;
	struct pool_range r[POOL_RANGES];
	int n = pool_ranges(a, r);
	uint64_t at = 0;
	int err = 0;
	for (int i = 0; i < n && !err; i++) {
		err = pool_punch(fd, at, r[i].lo);
		at = r[i].hi > at ? r[i].hi : at;
	}
	if (!err)
		err = pool_punch(fd, at, a->map_size);
	/* Through our own mapping of the file (no process of the program
	 * maps it any more): the next maker finds these zeros, as a new
	 * file's, in pages that are there. */
	for (int i = 0; i < n && !err; i++)
		if (r[i].zero && r[i].hi > r[i].lo)
			memset(a->base + r[i].lo, 0, r[i].hi - r[i].lo);
	return err;
}

bool ada_arena_pool_admits(unsigned k, const struct ada_shm_budget_view *v, uint64_t keep,
                           uint64_t next)
{
	if (k < ADA_ARENA_POOL_FREE_SLOTS || !v->ceiling)
		return true;
	uint64_t room = v->reserved < v->ceiling ? v->ceiling - v->reserved : 0;
	return keep <= room && next <= room - keep;
}

int ada_arena_pool_put(const char *path, const char *dir, unsigned k)
{
	char pool[PATH_MAX];
	int err = ada_arena_pool_name(dir, k, pool, sizeof(pool));
	if (err)
		return err;
	/* Never over a name there: another recorder's or the program's. */
	return renameat2(AT_FDCWD, path, AT_FDCWD, pool, RENAME_NOREPLACE) == 0 ? 0 : -errno;
}

/* The pool's names beside path (in its directory): pool[] gets the
 * directory, the prefix and one digit, which the caller sets (at *digit);
 * false when path has no directory or the name is too long. By hand, no
 * snprintf and no copy of the directory: a forked child's set-up, where
 * each page of stack or of libc it touches costs a fault. */
ADA_FORK_PATH static bool pool_names_beside(const char *path, char *pool, size_t cap, size_t *digit)
{
	static const char prefix[] = ADA_ARENA_POOL_PREFIX;
	size_t dir = 0; /* up to and with the last '/' */
	for (size_t i = 0; path[i]; i++)
		if (path[i] == '/')
			dir = i + 1;
	if (dir == 0 || dir + sizeof(prefix) + 1 > cap)
		return false;
	memcpy(pool, path, dir);
	memcpy(pool + dir, prefix, sizeof(prefix) - 1);
	*digit = dir + sizeof(prefix) - 1;
	pool[*digit + 1] = '\0';
	return true;
}

ADA_FORK_PATH int ring_pool_take(const char *path, uint64_t total, struct ring_fs *fs,
                                 uint64_t *ino)
{
	char pool[ring_path_cap(strlen(path) + sizeof(ADA_ARENA_POOL_PREFIX) + 1)];
	size_t digit;
	if (!pool_names_beside(path, pool, sizeof(pool), &digit))
		return -1;
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++) {
		pool[digit] = (char)('0' + k); /* one digit: ada_arena_pool_is_name */
		/* path is our fresh temporary name: nothing to replace there. */
		if (renameat2(AT_FDCWD, pool, AT_FDCWD, path, RENAME_NOREPLACE) != 0)
			continue;
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		if (fd >= 0)
			ring_arena_fs(fd, fs);
		/* Anyone of the recording could have put anything there: only a
		 * plain file of ours, of the size this arena needs, is taken. */
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		    st.st_uid == geteuid() &&
		    (uint64_t)st.st_size == ring_fs_file_size(fs, total)) {
			*ino = (uint64_t)st.st_ino;
			return fd;
		}
		if (fd >= 0)
			close(fd);
		unlink(path);
		return -1;
	}
	return -1;
}

/* A new pooled file's pages past its headers: the index events and
 * detail words a short process writes first (a `$(...)` subshell: its
 * index populate's two pieces, 128 KiB, and about 0.5 MiB of detail;
 * docs/benchmarks.md, det11). */
#define POOL_MAKE_INDEX_BYTES (128u << 10)
#define POOL_MAKE_DETAIL_BYTES (512u << 10)

/* Writes zeros to [lo, lo + len) of fd within r: tmpfs allocates and
 * clears those pages now. (fallocate would allocate them unwritten, to
 * be cleared at their first fault: in the process that takes the file,
 * the very cost the pool is for.) */
static int pool_alloc(int fd, const struct pool_range *r, uint64_t len)
{
	static const uint8_t zeros[64 << 10];
	uint64_t hi = r->lo + len < r->hi ? pool_page_up(r->lo + len) : r->hi;
	hi = hi < r->hi ? hi : r->hi;
	for (uint64_t at = r->lo; at < hi;) {
		size_t n = hi - at < sizeof(zeros) ? (size_t)(hi - at) : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, n, (off_t)at);
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		at += (uint64_t)w;
	}
	return 0;
}

uint64_t ada_arena_pool_make_bytes(const struct ada_arena_config *cfg)
{
	struct ring_geometry g;
	struct pool_range r[POOL_RANGES];
	if (ring_geometry(cfg, &g) != 0)
		return 0;
	return pool_ranges_bytes(r, pool_ranges_of(&g, cfg, g.total, r));
}

int ada_arena_pool_make(const char *dir, unsigned k, const struct ada_arena_config *cfg)
{
	struct ring_geometry g;
	struct statfs fs;
	char pool[PATH_MAX], self[64];
	int err =
	    ring_geometry(cfg, &g) != 0 ? -EINVAL : ada_arena_pool_name(dir, k, pool, sizeof(pool));
	if (err)
		return err;
	/* Nameless until whole: no maker takes a file half made, and none is
	 * left behind if we stop half way. */
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* tmpfs only: elsewhere a maker's read populate of a hole maps a
	 * page its first write faults on again (internals.md), and a
	 * hugetlbfs file is sized otherwise. */
	if (fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC ||
	    ring_arena_file_size(fd, g.total) != g.total)
		err = -EOPNOTSUPP;
	else if (ftruncate(fd, (off_t)g.total) != 0)
		err = -errno;
	struct pool_range r[POOL_RANGES];
	int n = err ? 0 : pool_ranges_of(&g, cfg, g.total, r);
	for (int i = 0; i < n && !err; i++) {
		/* The data ranges (pool_ranges_of): 2 the index events, 4
		 * the detail words. */
		uint64_t want = r[i].zero ? r[i].hi - r[i].lo
		                : i == 2  ? POOL_MAKE_INDEX_BYTES
		                          : POOL_MAKE_DETAIL_BYTES;
		err = pool_alloc(fd, &r[i], want);
	}
	/* Named, never over a name there (linkat does not replace). */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (!err && linkat(AT_FDCWD, self, AT_FDCWD, pool, AT_SYMLINK_FOLLOW) != 0)
		err = -errno;
	close(fd);
	return err;
}
