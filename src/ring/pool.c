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
 * Threads: ada_arena_pool_put on the drain thread; ring_pool_take on the
 * producer's set-up path (ada_producer_init), once per process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring_internal.h"

static uint64_t pool_page_up(uint64_t x)
{
	return (x + 4095) & ~(uint64_t)4095;
}

static uint64_t pool_page_down(uint64_t x)
{
	return x & ~(uint64_t)4095;
}

int ada_arena_pool_name(const char *dir, unsigned k, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/" ADA_ARENA_POOL_PREFIX "%u", dir, k);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
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
 * events and detail words whole pages as they are. Sorted by lo; the
 * number of ranges. */
static int pool_ranges(const struct ada_arena *a, struct pool_range r[POOL_RANGES])
{
	int n = 0;
	r[n++] = (struct pool_range){0, pool_page_up(a->geo.desc_lock_end), true};
	if (a->cfg.max_threads > 0) {
		uint64_t ih = (uint64_t)((uint8_t *)ring_index_hdr(a, 0) - a->base);
		uint64_t ev = (uint64_t)((uint8_t *)ring_index_events(a, 0) - a->base);
		uint64_t ev_end = ev + ring_slot_events(a, 0) * sizeof(struct atf_index_event);
		r[n++] = (struct pool_range){pool_page_down(ih), pool_page_up(ev), true};
		r[n++] = (struct pool_range){pool_page_up(ev), pool_page_down(ev_end), false};
		uint64_t d = ring_slot_detail_bytes(a, 0);
		if (d) {
			uint64_t dh = (uint64_t)((uint8_t *)ring_detail_hdr(a, 0) - a->base);
			uint64_t dw = (uint64_t)((uint8_t *)ring_detail_words(a, 0) - a->base);
			r[n++] = (struct pool_range){pool_page_down(dh), pool_page_up(dw), true};
			r[n++] =
			    (struct pool_range){pool_page_up(dw), pool_page_down(dw + d), false};
		}
	}
	for (int i = 0; i < n; i++) { /* clamped to the file; in order, as made */
		r[i].hi = r[i].hi < a->map_size ? r[i].hi : a->map_size;
		r[i].lo = r[i].lo < r[i].hi ? r[i].lo : r[i].hi;
	}
	return n;
}

uint64_t ada_arena_pool_bytes(const struct ada_arena *a)
{
	struct pool_range r[POOL_RANGES];
	int n = pool_ranges(a, r);
	uint64_t bytes = 0, at = 0;
	for (int i = 0; i < n; i++) { /* overlaps (a shared page) counted once */
		uint64_t lo = r[i].lo > at ? r[i].lo : at;
		bytes += r[i].hi > lo ? r[i].hi - lo : 0;
		at = r[i].hi > at ? r[i].hi : at;
	}
	return bytes;
}

bool ring_pool_fresh(const struct ada_arena *a)
{
	struct pool_range r[POOL_RANGES];
	int n = pool_ranges(a, r);
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

/* The directory part of path into out ("" for none); false when too long. */
static bool pool_dir_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n >= cap)
		return false;
	memcpy(out, path, n);
	out[n] = '\0';
	return slash != NULL;
}

int ring_pool_take(const char *path, uint64_t total)
{
	char dir[PATH_MAX], pool[PATH_MAX];
	if (!pool_dir_of(path, dir, sizeof(dir)))
		return -1;
	for (unsigned k = 0; k < ADA_ARENA_POOL_SLOTS; k++) {
		if (ada_arena_pool_name(dir, k, pool, sizeof(pool)) != 0)
			return -1;
		/* path is our fresh temporary name: nothing to replace there. */
		if (renameat2(AT_FDCWD, pool, AT_FDCWD, path, RENAME_NOREPLACE) != 0)
			continue;
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		/* Anyone of the recording could have put anything there: only a
		 * plain file of ours, of the size this arena needs, is taken. */
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		    st.st_uid == geteuid() &&
		    (uint64_t)st.st_size == ring_arena_file_size(fd, total))
			return fd;
		if (fd >= 0)
			close(fd);
		unlink(path);
		return -1;
	}
	return -1;
}
