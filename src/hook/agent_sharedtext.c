/*
 * Shared patched text (docs/hooks.md, "Shared patched text"): an image's
 * text, patched, written once to a copy of the image's file in the plan
 * cache's directory and mapped over the text by every later process that
 * patches it the same way.
 *
 * Why: patched in place, each process makes a private copy of every page
 * the patches touch (libc: 261 pages, cc1: about 5 000). On a
 * paravirtualised guest each copy is a page allocated, filled and
 * entered into the shadow page tables, a large part of an exec'd
 * child's start (docs/benchmarks.md, "Shared patched text"). A copy
 * mapped from a file is the page cache's pages, shared by every
 * process that maps it, mapped in as they run like any image's text;
 * and a fork copies no page table entries for it (the mapping holds no
 * anonymous memory).
 *
 * Why the copies can be shared: the patches are relative jumps from each
 * function to its trampoline, so they are the same bytes in every
 * process whose trampoline block lies at the same distance from the
 * image. At the start-up scan the block of a shared module is placed at
 * a fixed distance from it (agent_stext_block); then the patched
 * text is a function of the file, the plans, the options and the agent
 * alone. The copy's name carries a hash of all of them (the file's
 * device, inode, size and times, the agent build, every patch relative
 * to the text): a copy found by that name is this process's patched
 * text, given that only its owner can write it. What the trampolines
 * hold (handler and ring addresses) stays in each process's own block.
 *
 * Trust: the copy is code that every later traced process runs, so it
 * is read only through ada_fs_open_private (the effective user's own
 * file in directories only they and root can change), like the plan
 * cache; its size must be the image's and it must hold a sample of the
 * patches spread over the text (a truncated, zeroed, unpatched or
 * foreign copy is refused and rewritten). Its other bytes are trusted
 * as the plan cache's are.
 * It is written whole, synced and renamed into place.
 *
 * What a user sees: /proc/PID/maps names the copy for the image's text
 * (same file name, same offsets, same build-id: perf, gdb and ada's own
 * readers find the same symbols in it).
 *
 * Not hook context: the start-up scan (hook_no_seccomp's window: one
 * thread, nothing of the program run), agent.lock held.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "agent_internal.h"
#include "fs.h"
#include "hook_mem_pages_internal.h"

/* Where a shared module's trampoline block goes: STEXT_BELOW under the
 * module, below every image the loader packed next to it and the
 * agent's own mappings under them; a module mapped lower than that (a
 * non-PIE executable at 4 MiB: cc1, gcc) gets it STEXT_ABOVE over its
 * start instead, clear of the brk heap's first 1.5 GiB. Either is within
 * the patch's reach of a module up to STEXT_SPAN wide. */
#define STEXT_BELOW (1ull << 30)
#define STEXT_ABOVE (3ull << 29)
#define STEXT_SPAN (256ull << 20)

/* The copy's directory under the plan cache's. */
#define STEXT_DIR "text"

static bool stext_on(void)
{
#if defined(__x86_64__) && defined(__linux__)
	return agent.cfg.cache && agent.cfg.shared_text && agent.cache_dir[0] &&
	       agent.cache_agent_hash && hook_no_seccomp() && !agent.attached;
#else
	return false; /* arm64: patches need the cache maintenance of a write */
#endif
}

bool agent_stext_block(struct agent_module *m, size_t cap, uint8_t **blk)
{
	m->stext_block = false;
	if (!stext_on()) {
		agent.stext_why[AGENT_STEXT_WHY_OFF]++;
		return false;
	}
	uint64_t at = m->lo > 2 * STEXT_BELOW ? m->lo - STEXT_BELOW : m->lo + STEXT_ABOVE;
	if (m->hi - m->lo > STEXT_SPAN || cap > STEXT_SPAN ||
	    hook_mem_alloc_at(agent.mem, m->id, at, cap, blk)) {
		agent.stext_why[AGENT_STEXT_WHY_UNPLACED]++;
		return false;
	}
	m->stext_block = true;
	return true;
}

/* Whether every patch lies in [lo, hi). */
static bool stext_inside(const struct hook_patch *p, size_t n, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].addr < lo || p[i].len > hi - p[i].addr || p[i].addr >= hi)
			return false;
	return true;
}

/* h chained through every patch (its place relative to lo, length and
 * bytes), each record hashed with the last hash as its seed. */
static uint64_t stext_hash_patches(uint64_t h, const struct hook_patch *p, size_t n, uint64_t lo)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t rec[16 + HOOK_ARCH_MAX_PATCH];
		uint64_t rel[2] = {p[i].addr - lo, p[i].len};
		memcpy(rec, rel, sizeof(rel));
		memcpy(rec + sizeof(rel), p[i].bytes, p[i].len);
		h = XXH64(rec, sizeof(rel) + p[i].len, h);
	}
	return h;
}

bool agent_stext_begin(struct agent_stext *sx, struct agent_module *m, struct agent_text *t,
                       const struct hook_patch *pads, size_t n_pad,
                       const struct hook_patch *patches, size_t np)
{
	*sx = (struct agent_stext){
	    .m = m, .t = t, .pads = pads, .patches = patches, .n_pad = n_pad, .np = np};
	if (!m->stext_block)
		return false; /* counted where the block was placed */
	if (t->fd < 0 || !t->x || (uint64_t)t->st.st_size < t->off + (t->hi - t->lo)) {
		agent.stext_why[AGENT_STEXT_WHY_UNCHECKED]++;
		return false;
	}
	if (!stext_inside(pads, n_pad, t->lo, t->hi) || !stext_inside(patches, np, t->lo, t->hi) ||
	    !agent_text_clean(t)) {
		agent.stext_why[AGENT_STEXT_WHY_WRITTEN_ON]++;
		return false;
	}
	uint64_t where[4] = {t->off, t->hi - t->lo, m->lo - t->lo, n_pad};
	uint64_t h = XXH64(where, sizeof(where), agent.cache_agent_hash);
	h = stext_hash_patches(stext_hash_patches(h, pads, n_pad, t->lo), patches, np, t->lo);
	int k = snprintf(sx->key, sizeof(sx->key), "%s-%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64,
	                 t->name, agent.cache_agent_hash, agent_text_ident(&t->st), h);
	int n = snprintf(sx->path, sizeof(sx->path), "%s/" STEXT_DIR "/%s/%s", agent.cache_dir,
	                 sx->key, t->name);
	sx->ok = k > 0 && (size_t)k < sizeof(sx->key) && n > 0 && (size_t)n < sizeof(sx->path) &&
	         t->name[0] && t->name[0] != '.';
	return sx->ok;
}

/* Patches of each list the copy is checked for: spread over the text. */
#define STEXT_SAMPLE 8

/* Whether the copy (fd) holds STEXT_SAMPLE patches of each list, spread
 * from its first to its last, read by pread: a copy of another file or
 * of the unpatched one, a zeroed or a shifted one is refused. Checking
 * every patch touched every page of the copy (cc1: 5 000), a quarter of
 * what the copy saved cc1 (docs/hooks.md): the copy's other bytes are
 * trusted by its place anyway (the header's comment). */
static bool stext_holds(const struct agent_stext *sx, int fd)
{
	const struct hook_patch *lists[2] = {sx->pads, sx->patches};
	size_t ns[2] = {sx->n_pad, sx->np};
	for (int l = 0; l < 2; l++)
		for (size_t s = 0; ns[l] && s < STEXT_SAMPLE; s++) {
			const struct hook_patch *q =
			    &lists[l][s * (ns[l] - 1) / (STEXT_SAMPLE - 1)];
			uint8_t got[HOOK_ARCH_MAX_PATCH];
			off_t at = (off_t)(sx->t->off + (q->addr - sx->t->lo));
			if (pread(fd, got, q->len, at) != (ssize_t)q->len ||
			    memcmp(got, q->bytes, q->len))
				return false;
		}
	return true;
}

bool agent_stext_map(struct agent_stext *sx)
{
	const struct agent_text *t = sx->t;
	struct stat st;
	int fd = -1;
	if (!sx->ok)
		return false;
	int err = ada_fs_open_private(sx->path, &fd, &st);
	if (err) {
		/* None yet: written after the patches. Another's, or one the
		 * group could write: replaced by ours. */
		if (err != -ENOENT)
			agent.stext_why[AGENT_STEXT_WHY_REFUSED]++;
		return false;
	}
	size_t len = (size_t)(t->hi - t->lo);
	/* Checked, then mapped aside: a copy that does not hold the patches
	 * or cannot be mapped executable (a noexec mount) changes nothing. */
	if (!S_ISREG(st.st_mode) || st.st_size != t->st.st_size || !stext_holds(sx, fd)) {
		close(fd);
		agent.stext_why[AGENT_STEXT_WHY_REFUSED]++;
		return false; /* replaced by ours after the patches */
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)t->off);
	close(fd);
	if (p == MAP_FAILED) {
		/* A noexec mount (EPERM), or no memory: writing the copy again
		 * would not help the next process. */
		sx->ok = false;
		agent.stext_why[AGENT_STEXT_WHY_FAILED]++;
		return false;
	}
	/* Moved over the text in one step: the old mapping goes, the copy
	 * (the same bytes but the patches) takes its place. */
	if (mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(uintptr_t)t->lo) ==
	    MAP_FAILED) {
		munmap(p, len);
		agent.stext_why[AGENT_STEXT_WHY_FAILED]++;
		return false;
	}
	sx->m->stext = AGENT_STEXT_MAPPED;
	agent.stext_mapped++;
	return true;
}

/* The file copied whole into fd, by the kernel where it can. */
static bool stext_copy_file(int from, int to, uint64_t size, uint8_t *buf, size_t cap)
{
	loff_t in = 0, out = 0;
	while ((uint64_t)in < size) {
		ssize_t n = copy_file_range(from, &in, to, &out, (size_t)(size - (uint64_t)in), 0);
		if (n > 0)
			continue;
		if (n == 0)
			return false; /* the file is shorter than it said */
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return false;
		/* Across file systems on an older kernel: by hand. */
		while ((uint64_t)in < size) {
			size_t want =
			    size - (uint64_t)in < cap ? (size_t)(size - (uint64_t)in) : cap;
			ssize_t r = pread(from, buf, want, in);
			if (r <= 0 || pwrite(to, buf, (size_t)r, out) != r)
				return false;
			in += r;
			out += r;
		}
	}
	return true;
}

/* The patches laid over the copy in fd, a window of t's buffer at a time
 * (the file's bytes read again from t's file), only the windows that
 * hold a patch (both lists sorted by address). */
static bool stext_patch_file(const struct agent_stext *sx, int fd)
{
	const struct agent_text *t = sx->t;
	uint64_t cap = AGENT_TEXT_PAGES * t->pg;
	size_t i = 0, j = 0;
	for (uint64_t lo = t->lo; lo < t->hi; lo += cap) {
		uint64_t hi = t->hi - lo < cap ? t->hi : lo + cap;
		/* Past the patches that end before the window. */
		while (i < sx->n_pad && sx->pads[i].addr + sx->pads[i].len <= lo)
			i++;
		while (j < sx->np && sx->patches[j].addr + sx->patches[j].len <= lo)
			j++;
		bool any = (i < sx->n_pad && sx->pads[i].addr < hi) ||
		           (j < sx->np && sx->patches[j].addr < hi);
		off_t foff = (off_t)(t->off + (lo - t->lo));
		if (!any)
			continue;
		if (pread(t->fd, t->buf, hi - lo, foff) != (ssize_t)(hi - lo))
			return false;
		hook_pages_lay(t->buf, lo, hi, sx->pads, sx->n_pad);
		hook_pages_lay(t->buf, lo, hi, sx->patches, sx->np);
		if (pwrite(fd, t->buf, hi - lo, foff) != (ssize_t)(hi - lo))
			return false;
	}
	return true;
}

/* Copies of one file for one agent build kept at most: one per set of
 * options and plans (each the image file's size: cc1's 30 MB). */
#define STEXT_VARIANTS 8

/* Removes the copy in key directory e under dir (name: its file). */
static void stext_remove(int dir, const char *e, const char *name)
{
	int sub = -1;
	if (ada_fs_open_dir(dir, e, &sub) == 0) {
		unlinkat(sub, name, 0);
		close(sub);
		unlinkat(dir, e, AT_REMOVEDIR);
	}
}

/* Removes the copies in dir (the copies' directory) of the same file
 * name written by another agent build or of another version of the file
 * (key: "<name>-<agent>-<ident>-<patches>"), and the oldest copy that
 * differs only in its patches (other options) when there are more than
 * STEXT_VARIANTS. A process that has one mapped keeps its pages. */
static void stext_prune(int dir, const char *key, const char *name)
{
	size_t head = strlen(name), same = head + 2 * 17; /* "<name>-<agent>-<ident>" */
	char oldest[NAME_MAX + 1] = "";
	struct timespec when = {0, 0};
	unsigned variants = 0;
	DIR *d = ada_fs_opendir(dir, ".");
	if (!d)
		return;
	struct dirent *de;
	for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++) {
		const char *e = de->d_name;
		struct stat st;
		if (strlen(e) != strlen(key) || strncmp(e, key, head) || e[head] != '-')
			continue;
		if (strncmp(e, key, same)) {
			stext_remove(dirfd(d), e, name);
			continue;
		}
		variants++;
		if (strcmp(e, key) && fstatat(dirfd(d), e, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
		     (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec))) {
			memcpy(oldest, e, strlen(e) + 1);
			when = st.st_mtim;
		}
	}
	if (variants > STEXT_VARIANTS && oldest[0])
		stext_remove(dirfd(d), oldest, name);
	closedir(d);
}

/* The copy written into the key's directory under dir (created), synced,
 * and renamed into place. */
static bool stext_write(const struct agent_stext *sx, int dir)
{
	const struct agent_text *t = sx->t;
	char tmp[ADA_FS_TMP_NAME_MAX];
	int kfd = -1, fd = -1;
	if (ada_fs_mkdir(dir, sx->key, 0, &kfd))
		return false;
	bool ok = ada_fs_create_tmp(kfd, t->name, O_RDWR, tmp, &fd) == 0;
	if (ok) {
		ok = stext_copy_file(t->fd, fd, (uint64_t)t->st.st_size, t->buf,
		                     AGENT_TEXT_PAGES * t->pg) &&
		     stext_patch_file(sx, fd) &&
		     /* Synced before the rename: after a crash the name holds
		      * the whole copy or nothing, never a file of holes. */
		     fdatasync(fd) == 0;
		close(fd);
		if (ok)
			ok = ada_fs_commit(kfd, tmp, t->name) == 0;
		else
			unlinkat(kfd, tmp, 0);
	}
	close(kfd);
	return ok;
}

void agent_stext_store(struct agent_stext *sx)
{
	char dir[PATH_MAX];
	int dfd = -1;
	if (!sx->ok)
		return;
	/* The patches are sorted by now (hook_patch_apply_pair sorted them). */
	int n = snprintf(dir, sizeof(dir), "%s/" STEXT_DIR, agent.cache_dir);
	bool ok = n > 0 && (size_t)n < sizeof(dir) &&
	          ada_fs_walk(dir, geteuid(), ADA_FS_WALK_CREATE, &dfd, NULL, 0) == 0 &&
	          stext_write(sx, dfd);
	if (ok) {
		sx->m->stext = AGENT_STEXT_WRITTEN;
		agent.stext_written++;
		stext_prune(dfd, sx->key, sx->t->name);
	} else {
		agent.stext_why[AGENT_STEXT_WHY_FAILED]++;
	}
	if (dfd >= 0)
		close(dfd);
}
