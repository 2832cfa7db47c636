/*
 * A plan cache hit's check of an image's text against its file
 * (agent_internal.h, struct agent_text): the bytes a cached plan
 * displaces compared with the file's, read a window at a time, instead
 * of the mapped text's.
 *
 * Why: the check reads every function's first bytes; read from the
 * mapping, that is the first touch from user space of each of the
 * text's pages (cc1: ~5 000), on a paravirtualised guest with shadow
 * page tables an exit to the hypervisor each (~2-3 us), and the patches
 * then drop those very pages (hook_mem.c, patch_drop_range) for the
 * kernel to copy. Read by pread(2), the kernel copies them from the
 * page cache into one reused buffer.
 *
 * Why it is the same check: a page of a private file mapping that the
 * process has not written (present and a file page in
 * /proc/self/pagemap, or not present and not swapped out: the next read
 * maps the file's page) holds the bytes the page cache holds for the
 * file at that offset, which pread returns. The file read is the one
 * mapped (the device and inode /proc/self/maps gives for the mapping,
 * fstat'ed), at the mapping's offset. A page the process has written
 * (a private copy: a text relocation, a uprobe, an earlier patch; or
 * swapped out) is not answered here: the caller compares the mapped
 * bytes as before. Only in the start-up scan (hook_no_seccomp's window:
 * one thread, nothing of the program run), so nothing writes the text
 * between the pagemap read, the file read and the patches.
 *
 * The same file serves the start-up scan's patch writes
 * (agent_text_apply): whole pages, the file's bytes with the patches
 * laid over them, written by the kernel (hook_mem_pages_internal.h).
 *
 * Not hook context: install_prepare() and install_apply(), agent.lock
 * held.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent_internal.h"
#include "fs.h"
#include "plancache_internal.h"
#define XXH_INLINE_ALL
#include <xxhash.h>

/* The longest span one check asks for (a patch and its padding slot
 * close before it); longer: the mapped bytes. */
#define TEXT_SPAN_MAX 256u

/* The private readable file mappings of /proc/self/maps, once per
 * start-up scan (hook_seccomp_window_gen), taken from the text hook_mem
 * read for its snapshot at the agent's start when that is still current
 * (hook_mem_maps_text), else read: an exec'd process asked for them
 * twice a module (the plan check, the patch writes), and each read of
 * the file has the kernel print every mapping's path. Only the agent
 * changes the address space while the window is open, and not its
 * images' mappings (an mprotect splits a line, not the file offsets).
 * Serialized as the rest of this file. */
struct text_map {
	uint64_t lo, hi, off;
	dev_t dev;
	ino_t ino;
	bool x; /* executable */
	char *path;
};
static struct {
	uint64_t gen; /* the window the list was read in; 0: none */
	size_t n, cap;
	struct text_map *v;
} text_maps;

static void text_maps_clear(void)
{
	for (size_t i = 0; i < text_maps.n; i++)
		free(text_maps.v[i].path);
	text_maps.n = 0;
	text_maps.gen = 0;
}

static bool text_maps_add(const struct text_map *m)
{
	if (text_maps.n == text_maps.cap) {
		size_t nc = text_maps.cap ? 2 * text_maps.cap : 32;
		void *nv = realloc(text_maps.v, nc * sizeof(*text_maps.v));
		if (!nv)
			return false;
		text_maps.v = nv;
		text_maps.cap = nc;
	}
	text_maps.v[text_maps.n++] = *m;
	return true;
}

/* One line of /proc/self/maps into the list when it is a private
 * readable file mapping; false when memory ran out. */
static bool text_maps_line(char *line)
{
	unsigned long long a, b, o, in;
	unsigned mj, mn;
	char perms[5];
	int at = 0;
	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &a, &b, perms, &o, &mj, &mn, &in,
	           &at) != 7 ||
	    perms[0] != 'r' || perms[3] != 'p' || !in || line[at] != '/')
		return true;
	line[at + strcspn(line + at, "\n")] = 0;
	struct text_map m = {
	    a, b, o, makedev(mj, mn), (ino_t)in, perms[2] == 'x', strdup(line + at)};
	bool ok = m.path && text_maps_add(&m);
	if (!ok)
		free(m.path);
	return ok;
}

/* The lines of text[0..len) (hook_mem's copy of the file as it read it);
 * a line too long for the buffer (a path near PATH_MAX) is left out, as
 * fgets would have cut it. */
static bool text_maps_from_text(const char *text, size_t len)
{
	char line[PATH_MAX + 128];
	bool ok = true;
	for (const char *p = text, *end = text + len; ok && p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((eol ? eol : end) - p);
		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = 0;
			ok = text_maps_line(line);
		}
		p += n + 1;
	}
	return ok;
}

/* The list for window gen: from the snapshot hook_mem read at the
 * agent's start when it is still current and fresh is false (the
 * window's first list: the file read once per process, not twice), else
 * the file read afresh. false (and empty) when it cannot be had. */
static bool text_maps_load(uint64_t gen, bool fresh)
{
	const char *text;
	size_t len;
	bool ok;
	text_maps_clear();
	if (!fresh && hook_mem_maps_text(agent.mem, &text, &len) == 0) {
		ok = text_maps_from_text(text, len);
	} else {
		FILE *f = fopen("/proc/self/maps", "re");
		char line[PATH_MAX + 128];
		ok = f != NULL;
		while (ok && fgets(line, sizeof(line), f))
			ok = text_maps_line(line);
		if (f)
			fclose(f);
	}
	if (!ok)
		text_maps_clear();
	text_maps.gen = ok ? gen : 0;
	return ok;
}

static const struct text_map *text_maps_find(uint64_t addr)
{
	for (size_t i = 0; i < text_maps.n; i++)
		if (addr >= text_maps.v[i].lo && addr < text_maps.v[i].hi)
			return &text_maps.v[i];
	return NULL;
}

/* The mapping of /proc/self/maps that holds addr into *out (its path
 * member NULL) and its path into path[cap]. false when none holds it, it
 * is not a private readable file mapping, or its path does not fit. A
 * miss in the list read earlier in this window reads it again once (a
 * mapping made since: a test's). */
static bool text_mapping(uint64_t addr, struct text_map *out, char *path, size_t cap)
{
	uint64_t gen = hook_seccomp_window_gen();
	bool listed = text_maps.gen == gen && gen;
	const struct text_map *m = listed ? text_maps_find(addr) : NULL;
	/* Missed in this window's list: the file itself, once more. */
	if (!m && text_maps_load(gen, listed))
		m = text_maps_find(addr);
	if (!m || strlen(m->path) >= cap)
		return false;
	strcpy(path, m->path);
	*out = *m;
	out->path = NULL;
	return true;
}

/* The window's buffer: one for the process, made at the first check and
 * kept (AGENT_TEXT_PAGES pages, never freed). Each of its pages is
 * touched twice, by the kernel's copy (pread) and by the compare; on a
 * paravirtualised guest with shadow page tables each first touch of a
 * user page, in either mode, is an exit to the hypervisor (a fault or a
 * shadow fill), so a buffer made anew per module (it was 64 pages each,
 * cc1 has nine modules) cost more than the reads it served
 * (docs/benchmarks.md).
 * Serialized: install_prepare() and agent_text_apply(), agent.lock held. */
static uint8_t *text_buf(uint64_t pg)
{
	static uint8_t *buf;
	static uint64_t buf_pg;
	if (!buf) {
		buf = malloc(AGENT_TEXT_PAGES * pg);
		buf_pg = pg;
	}
	return buf_pg == pg ? buf : NULL;
}

void agent_text_open(struct agent_text *t, uint64_t addr)
{
	char path[PATH_MAX];
	struct text_map tm;
	memset(t, 0, sizeof(*t));
	t->fd = t->pm = -1;
	t->pg = (uint64_t)sysconf(_SC_PAGESIZE);
	if (!hook_no_seccomp() || agent.attached || !text_mapping(addr, &tm, path, sizeof(path)))
		return;
	t->lo = tm.lo, t->hi = tm.hi, t->off = tm.off, t->x = tm.x;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	if (strlen(name) < sizeof(t->name))
		memcpy(t->name, name, strlen(name) + 1);
	/* O_NONBLOCK: a FIFO put at the path since must not hold start-up
	 * (it is then refused as not the regular file mapped). */
	t->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	t->pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	t->buf = text_buf(t->pg);
	/* The file mapped, not one that took its name since. */
	if (t->fd < 0 || t->pm < 0 || !t->buf || fstat(t->fd, &t->st) || !S_ISREG(t->st.st_mode) ||
	    t->st.st_ino != tm.ino || t->st.st_dev != tm.dev)
		agent_text_close(t);
}

void agent_text_close(struct agent_text *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->pm >= 0)
		close(t->pm);
	t->buf = NULL; /* text_buf()'s, kept for the next module */
	t->fd = t->pm = -1;
}

/* Reads the window of pages around addr (from the page before its, for
 * a padding slot ahead of a function): the file's bytes and which pages
 * hold them in memory. false (and closed: the rest is checked in memory)
 * when a read falls short. */
static bool text_fill(struct agent_text *t, uint64_t addr)
{
	uint64_t pg = t->pg, wlo = addr & ~(pg - 1);
	wlo = wlo - t->lo >= pg ? wlo - pg : t->lo;
	uint64_t whi = t->hi - wlo > AGENT_TEXT_PAGES * pg ? wlo + AGENT_TEXT_PAGES * pg : t->hi;
	uint64_t ent[AGENT_TEXT_PAGES];
	size_t np = (size_t)((whi - wlo) / pg);
	ssize_t want = (ssize_t)(np * sizeof(ent[0]));
	if (pread(t->pm, ent, (size_t)want, (off_t)(wlo / pg * sizeof(ent[0]))) != want ||
	    pread(t->fd, t->buf, whi - wlo, (off_t)(t->off + (wlo - t->lo))) !=
	        (ssize_t)(whi - wlo)) {
		agent_text_close(t);
		return false;
	}
	t->file = 0;
	for (size_t q = 0; q < np; q++)
		if ((ent[q] & HOOK_PM_PRESENT) ? (ent[q] & HOOK_PM_FILE) != 0
		                               : !(ent[q] & HOOK_PM_SWAP))
			t->file |= 1ull << q;
	t->wlo = wlo;
	t->whi = whi;
	return true;
}

/* The file's bytes [addr, addr + len) when memory holds them too, else
 * NULL (the caller reads memory). */
static const uint8_t *text_at(struct agent_text *t, uint64_t addr, uint64_t len)
{
	if (t->fd < 0 || addr < t->lo || addr >= t->hi || len > t->hi - addr)
		return NULL;
	if ((addr < t->wlo || addr + len > t->whi) && !text_fill(t, addr))
		return NULL;
	if (addr + len > t->whi)
		return NULL;
	for (uint64_t q = (addr - t->wlo) / t->pg; q <= (addr + len - 1 - t->wlo) / t->pg; q++)
		if (!((t->file >> q) & 1u))
			return NULL;
	return t->buf + (addr - t->wlo);
}

/* Read from /proc/self/pagemap a batch at a time. */
bool agent_text_clean(const struct agent_text *t)
{
	uint64_t ent[512], first = t->lo / t->pg, n = (t->hi - t->lo) / t->pg;
	for (uint64_t at = 0; at < n;) {
		uint64_t k = n - at < 512 ? n - at : 512;
		ssize_t want = (ssize_t)(k * sizeof(ent[0]));
		if (pread(t->pm, ent, (size_t)want, (off_t)((first + at) * sizeof(ent[0]))) != want)
			return false;
		for (uint64_t q = 0; q < k; q++)
			if ((ent[q] & HOOK_PM_PRESENT) ? !(ent[q] & HOOK_PM_FILE)
			                               : (ent[q] & HOOK_PM_SWAP) != 0)
				return false;
		at += k;
	}
	return true;
}

uint64_t agent_text_ident(const struct stat *st)
{
	uint64_t v[7] = {(uint64_t)st->st_dev,          (uint64_t)st->st_ino,
	                 (uint64_t)st->st_size,         (uint64_t)st->st_mtim.tv_sec,
	                 (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_ctim.tv_sec,
	                 (uint64_t)st->st_ctim.tv_nsec};
	return XXH64(v, sizeof(v), 0);
}

/* The .fit note beside a plan file (<build-id>-<agent>.fit): "this plan
 * file fits this image file", written by the process that checked every
 * plan of it against the file, read by the next one instead of checking
 * again (docs/hooks.md, "Plan cache", has what that saves). Trusted as
 * the plan file is, by its place (ada_fs_read_private); its key is the agent build,
 * the image file's identity and the plan file's checksum, so a changed
 * image, a rewritten plan file or another agent build does not match. */
struct text_fit {
	char magic[8];
	uint64_t agent_hash, ident, plan_sum, check;
};
#define TEXT_FIT_MAGIC "ADAFIT1"

static void text_fit_make(const struct agent_text *t, struct text_fit *f)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, TEXT_FIT_MAGIC, sizeof(f->magic));
	f->agent_hash = agent.cache_agent_hash;
	f->ident = agent_text_ident(&t->st);
	f->plan_sum = t->fit_sum;
	f->check = XXH64(f, offsetof(struct text_fit, check), 0);
}

void agent_text_fit_open(struct agent_text *t, const char *plan_path, uint64_t sum)
{
	size_t n = strlen(plan_path);
	t->fit_known = false;
	t->fit_sum = 0;
	/* Every page the file's: a page the process wrote (a uprobe, a
	 * text relocation) is checked against the plans as before. */
	if (t->fd < 0 || !sum || !agent.cache_agent_hash || n < 5 || !agent_text_clean(t) ||
	    strcmp(plan_path + n - 5, ".plan") || n - 5 + sizeof(".fit") > sizeof(t->fit_path))
		return;
	memcpy(t->fit_path, plan_path, n - 5);
	memcpy(t->fit_path + n - 5, ".fit", sizeof(".fit"));
	t->fit_sum = sum;
	struct text_fit want, got;
	size_t len = 0;
	text_fit_make(t, &want);
	t->fit_known =
	    ada_fs_read_private(t->fit_path, sizeof(got), sizeof(got), &got, NULL, &len) == 0 &&
	    len == sizeof(got) && !memcmp(&got, &want, sizeof(got));
	agent.cache_fit_known += t->fit_known;
}

void agent_text_fit_store(struct agent_text *t, bool all)
{
	const char *base;
	int dfd = -1;
	struct text_fit f;
	if (t->fit_known || !t->fit_sum || !all)
		return;
	text_fit_make(t, &f);
	if (ada_fs_walk_parent(t->fit_path, 0, &dfd, &base) == 0)
		(void)ada_fs_replace(dfd, base, &f, sizeof(f), false);
	if (dfd >= 0)
		close(dfd);
}

bool agent_text_fits(struct agent_text *t, const struct hook_arch_memview *mem,
                     const struct hook_arch_plan *plan, unsigned patch_len)
{
	if (t->fit_known)
		return true; /* this plan file fits this file: checked before */
	uint64_t lo = plan->fn_addr, hi = plan->fn_addr + plan->patch_len;
	if (plan->pad_addr) {
		lo = plan->pad_addr < lo ? plan->pad_addr : lo;
		hi = plan->pad_addr + HOOK_ARCH_PAD_SLOT > hi ? plan->pad_addr + HOOK_ARCH_PAD_SLOT
		                                              : hi;
	}
	const uint8_t *b = hi > lo && hi - lo <= TEXT_SPAN_MAX ? text_at(t, lo, hi - lo) : NULL;
	if (!b)
		return plan_cache_fits(mem, plan, patch_len);
	struct hook_arch_region r = {lo, hi - lo, b};
	struct hook_arch_memview fv = {&r, 1};
	agent.cache_file_checked++;
	return plan_cache_fits(&fv, plan, patch_len);
}

int agent_text_apply(struct agent_module *m, struct hook_patch *pads, size_t n_pad,
                     struct hook_patch *patches, size_t np)
{
	struct agent_text t;
	struct agent_stext sx;
	agent_text_open(&t, np ? patches[0].addr : n_pad ? pads[0].addr : 0);
	/* A copy of this very text patched as here, mapped over it: nothing
	 * to write (agent_sharedtext.c). */
	if (agent_stext_begin(&sx, m, &t, pads, n_pad, patches, np) && agent_stext_map(&sx)) {
		agent_text_close(&t);
		return 0;
	}
	struct hook_patch_file src = {t.fd, t.lo, t.hi, t.off, t.buf, AGENT_TEXT_PAGES};
	int err = hook_patch_apply_pair_file(agent.mem, t.fd >= 0 ? &src : NULL, pads, n_pad,
	                                     patches, np);
	if (!err)
		agent_stext_store(&sx);
	agent_text_close(&t);
	return err;
}
