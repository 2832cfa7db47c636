/*
 * Image discovery: which loaded images the agent hooks (not hook context).
 *
 * Runs on the init thread, and again under the agent's hook lock after
 * dlopen/dlclose. One dl_iterate_phdr pass records each image's path,
 * load base, mapped range and DT_NEEDED names; then the images are
 * classified: the dynamic loader (AT_BASE), the vDSO (AT_SYSINFO_EHDR),
 * the agent itself (contains this code) and the agent's private
 * dependencies (needed by the agent, directly or not, and not by the
 * main program) are never hooked.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover_internal.h"

#define DISCOVER_MAX_NEEDED 64

struct discover_ctx {
	struct discover_image *v;
	size_t n, cap;
	int err;
};

static void discover_read_needed(const struct dl_phdr_info *info, struct discover_image *im)
{
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	}
	if (!dyn)
		return;
	const char *strtab = NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)d->d_un.d_ptr; /* relocated by the loader */
	}
	/* The vDSO's DT_STRTAB is not relocated; it has no DT_NEEDED anyway. */
	if (!strtab || (uint64_t)strtab < info->dlpi_addr)
		return;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL && im->n_needed < DISCOVER_MAX_NEEDED;
	     d++) {
		if (d->d_tag == DT_NEEDED)
			im->needed[im->n_needed++] = strtab + d->d_un.d_val;
	}
}

static void discover_range(const struct dl_phdr_info *info, struct discover_image *im)
{
	im->lo = UINT64_MAX;
	im->hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		im->lo = lo < im->lo ? lo : im->lo;
		im->hi = hi > im->hi ? hi : im->hi;
	}
}

static int discover_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct discover_ctx *c = arg;
	(void)size;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 32;
		void *nv = realloc(c->v, ncap * sizeof(*c->v));
		if (!nv) {
			c->err = -ENOMEM;
			return 1;
		}
		c->v = nv;
		c->cap = ncap;
	}
	struct discover_image *im = &c->v[c->n];
	memset(im, 0, sizeof(*im));
	im->base = info->dlpi_addr;
	im->name = info->dlpi_name ? info->dlpi_name : "";
	im->is_main = c->n == 0;
	discover_range(info, im);
	discover_read_needed(info, im);
	c->n++;
	return 0;
}

static const char *discover_basename(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static struct discover_image *discover_by_soname(struct discover_image *v, size_t n,
                                                 const char *soname)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(discover_basename(v[i].path), soname))
			return &v[i];
	}
	return NULL;
}

/* Marks (with bit) every image reachable from root through DT_NEEDED. */
static void discover_mark(struct discover_image *v, size_t n, struct discover_image *root,
                          unsigned bit)
{
	if (!root || (root->reach & bit))
		return;
	root->reach |= bit;
	for (size_t i = 0; i < root->n_needed; i++)
		discover_mark(v, n, discover_by_soname(v, n, root->needed[i]), bit);
}

/* The main program by the name it was started as (AT_EXECFN: redis-server,
 * not the redis-check-rdb its link leads to, which the kernel's
 * /proc/self/exe names), as long as that name still leads to the same
 * file; else the kernel's path. A relative name is taken from the working
 * directory, which the inode check guards (the program may have moved). */
static void discover_main_path(char *out, size_t cap)
{
	ssize_t k = readlink("/proc/self/exe", out, cap - 1);
	out[k > 0 ? k : 0] = '\0';
	const char *fn = (const char *)getauxval(AT_EXECFN);
	char name[sizeof(((struct discover_image *)0)->path)], cwd[sizeof(name)];
	struct stat a, b;
	if (!fn || !fn[0])
		return;
	while (fn[0] == '.' && fn[1] == '/')
		fn += 2;
	if (fn[0] == '/')
		snprintf(name, sizeof(name), "%s", fn);
	else if (!getcwd(cwd, sizeof(cwd)) ||
	         snprintf(name, sizeof(name), "%s/%s", cwd, fn) >= (int)sizeof(name))
		return;
	if (strlen(name) < cap && !stat(name, &a) && !stat("/proc/self/exe", &b) &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		memcpy(out, name, strlen(name) + 1);
}

static void discover_fill_path(struct discover_image *im)
{
	if (im->is_main || !im->name[0]) {
		discover_main_path(im->path, sizeof(im->path));
	} else {
		strncpy(im->path, im->name, sizeof(im->path) - 1);
	}
}

/* discover_set_agent_library()'s base (0: none). Relaxed: set once, by
 * the thread that loads it, before any scan can see the library. */
static _Atomic uint64_t discover_agent_lib;

void discover_set_agent_library(uint64_t base)
{
	atomic_store_explicit(&discover_agent_lib, base, memory_order_relaxed);
}

static struct discover_image *discover_by_base(struct discover_image *v, size_t n, uint64_t base)
{
	for (size_t i = 0; base && i < n; i++) {
		if (v[i].base == base)
			return &v[i];
	}
	return NULL;
}

static void discover_classify(struct discover_image *v, size_t n, uint64_t self_addr)
{
	uint64_t at_base = getauxval(AT_BASE), vdso = getauxval(AT_SYSINFO_EHDR);
	struct discover_image *agent = NULL;
	for (size_t i = 0; i < n; i++) {
		struct discover_image *im = &v[i];
		discover_fill_path(im);
		if (vdso && vdso >= im->lo && vdso < im->hi)
			im->skip = ADA_SKIP_LOADER, im->why = "vdso";
		else if (at_base && im->base == at_base)
			im->skip = ADA_SKIP_LOADER, im->why = "loader";
		else if (self_addr >= im->lo && self_addr < im->hi)
			im->skip = ADA_SKIP_AGENT, im->why = "agent", agent = im;
	}
	discover_mark(v, n, &v[0], 1);
	if (agent) {
		agent->reach = 0;
		discover_mark(v, n, agent, 2);
	}
	uint64_t lib = atomic_load_explicit(&discover_agent_lib, memory_order_relaxed);
	discover_mark(v, n, discover_by_base(v, n, lib), 2);
	for (size_t i = 0; i < n; i++) {
		if (v[i].skip == ADA_HOOK_OK && v[i].reach == 2)
			v[i].skip = ADA_SKIP_AGENT, v[i].why = "agent dependency";
	}
}

int discover_images(uint64_t self_addr, struct discover_image **out, size_t *n_out)
{
	struct discover_ctx c = {0};
	dl_iterate_phdr(discover_cb, &c);
	if (c.err) {
		free(c.v);
		return c.err;
	}
	if (c.n == 0) {
		free(c.v);
		return -ENOENT;
	}
	discover_classify(c.v, c.n, self_addr);
	*out = c.v;
	*n_out = c.n;
	return 0;
}
