/*
 * Names from a debug file found after the recording (symbols.h,
 * ada_syms_name_from_debug). CLI only.
 *
 * The agent names a function of a stripped image that it found only from
 * .eh_frame "<file name>+0x<offset>" (docs/hooks.md). When the image's
 * debug file is there at reading time -- by the build-id the .syms file
 * carries (<root>/.build-id/xx/yyyy.debug), or by the .gnu_debuglink of
 * the image at its recorded path (next to it, in its .debug/, in
 * <root>/<its directory>) -- its .symtab gives them their names. A debug
 * file or image whose build-id differs from the recorded one is another
 * build's and is not used. Only names change: ids, offsets, statuses
 * and the table hash (computed over the file as read) stay.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf_internal.h"
#include "elfread.h"
#include "fs.h"
#include "symbols.h"

#define SYMDBG_ROOT "/usr/lib/debug"

struct symdbg_elf {
	int fd;
	Elf *elf;
};

/* path comes from the session (a module's recorded path, a name its
 * image's .gnu_debuglink gives): only a regular file is opened. The stat
 * keeps a device's open (a side effect of its own) out of the common
 * case; O_NONBLOCK keeps a FIFO swapped in after it from waiting for a
 * writer. Links are followed: .build-id entries are links. */
static int symdbg_open(const char *path, struct symdbg_elf *e)
{
	struct stat st;
	e->elf = NULL;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return -ENOENT;
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (e->fd < 0)
		return -errno;
	if (fstat(e->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(e->fd);
		return -ENOENT;
	}
	if (elf_version(EV_CURRENT) != EV_NONE)
		e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF) {
		if (e->elf)
			elf_end(e->elf);
		close(e->fd);
		return -ENOEXEC;
	}
	return 0;
}

static void symdbg_close(struct symdbg_elf *e)
{
	elf_end(e->elf);
	close(e->fd);
}

/* The file's GNU build-id as lowercase hex into hex (>= 129 bytes); ""
 * when it has none. */
static void symdbg_build_id(Elf *elf, char *hex)
{
	uint8_t id[ADA_FS_BUILD_ID_MAX];
	size_t n = ada_elfread_build_id(elf, id, sizeof(id));
	hex[0] = '\0';
	for (size_t i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
}

/* Whether an ELF file's build-id agrees with the recorded one (either
 * missing: nothing to disagree with). */
static bool symdbg_same_build(Elf *elf, const char *want)
{
	char have[130];
	symdbg_build_id(elf, have);
	return !want || !have[0] || !strcmp(want, have);
}

/* One function symbol of the debug file. */
struct symdbg_sym {
	uint64_t off;
	const char *name; /* into the debug file's string table */
	bool global;
};

/* At one offset the name the agent would have preferred: global, then
 * without a leading underscore, then shorter, then by bytes. */
static bool symdbg_better(const struct symdbg_sym *a, const struct symdbg_sym *b)
{
	if (a->global != b->global)
		return a->global;
	if ((a->name[0] == '_') != (b->name[0] == '_'))
		return b->name[0] == '_';
	size_t la = strcspn(a->name, "@"), lb = strcspn(b->name, "@");
	if (la != lb)
		return la < lb;
	return strncmp(a->name, b->name, la) < 0;
}

static int symdbg_cmp(const void *a, const void *b)
{
	const struct symdbg_sym *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The debug file's defined function symbols, sorted by offset; *n gets
 * their count. NULL with *n 0: none; NULL otherwise: -ENOMEM. */
static struct symdbg_sym *symdbg_table(Elf *elf, Elf_Scn *scn, size_t *n)
{
	GElf_Shdr sh;
	Elf_Data *d = elf_getdata(scn, NULL);
	*n = 0;
	if (!d || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return NULL;
	size_t cap = sh.sh_size / sh.sh_entsize;
	struct symdbg_sym *v = malloc((cap ? cap : 1) * sizeof(*v));
	for (size_t i = 1; v && i < cap; i++) {
		GElf_Sym s;
		const char *name;
		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || s.st_value == 0 ||
		    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
		    !(name = elf_strptr(elf, sh.sh_link, s.st_name)) || !name[0])
			continue;
		v[(*n)++] =
		    (struct symdbg_sym){s.st_value, name, GELF_ST_BIND(s.st_info) != STB_LOCAL};
	}
	if (v && *n)
		qsort(v, *n, sizeof(*v), symdbg_cmp);
	return v;
}

/* The best name at off among the table's aliases; *len: its length
 * without a symbol version (as the agent writes names). */
static const char *symdbg_lookup(const struct symdbg_sym *v, size_t n, uint64_t off, size_t *len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct symdbg_sym *best = NULL;
	for (; lo < n && v[lo].off == off; lo++)
		if (!best || symdbg_better(&v[lo], best))
			best = &v[lo];
	if (best)
		*len = strcspn(best->name, "@");
	return best ? best->name : NULL;
}

/* Whether the agent named f from .eh_frame: "<base>+0x<its offset>". */
static bool symdbg_unnamed(const struct ada_syms_func *f, const char *base)
{
	size_t n = strlen(base);
	char *end;
	if (strncmp(f->name, base, n) || strncmp(f->name + n, "+0x", 3))
		return false;
	errno = 0;
	uint64_t v = strtoull(f->name + n + 3, &end, 16);
	return !errno && !*end && v == f->offset;
}

/* Copies name (len bytes) into the pool; its offset there, or -1
 * (-ENOMEM). */
static ptrdiff_t symdbg_pool_add(char **pool, size_t *used, size_t *cap, const char *name,
                                 size_t len)
{
	if (*used + len + 1 > *cap) {
		size_t ncap = *cap ? 2 * *cap : 4096;
		while (ncap < *used + len + 1)
			ncap *= 2;
		char *np = realloc(*pool, ncap);
		if (!np)
			return -1;
		*pool = np;
		*cap = ncap;
	}
	memcpy(*pool + *used, name, len);
	(*pool)[*used + len] = '\0';
	ada_syms_name_mask(*pool + *used); /* the debug file's, as any name read */
	*used += len + 1;
	return (ptrdiff_t)(*used - len - 1);
}

/* Gives the unnamed functions of m the names the debug file's .symtab
 * has for their offsets; returns how many, or -ENOMEM. */
static int symdbg_rename(struct ada_syms_module *m, const char *base, Elf *elf)
{
	Elf_Scn *scn = ada_elfread_section(elf, NULL, SHT_SYMTAB);
	size_t nsym = 0, used = 0, cap = 0, named = 0;
	struct symdbg_sym *v = scn ? symdbg_table(elf, scn, &nsym) : NULL;
	ptrdiff_t *at = malloc((m->nfuncs ? m->nfuncs : 1) * sizeof(*at));
	char *pool = NULL;
	int err = at && (v || !nsym) ? 0 : -ENOMEM;
	for (size_t i = 0; !err && i < m->nfuncs; i++) {
		size_t len = 0;
		const char *n = symdbg_unnamed(&m->funcs[i], base)
		                    ? symdbg_lookup(v, nsym, m->funcs[i].offset, &len)
		                    : NULL;
		at[i] = n ? symdbg_pool_add(&pool, &used, &cap, n, len) : -1;
		if (n && at[i] < 0)
			err = -ENOMEM;
		named += n != NULL;
	}
	for (size_t i = 0; !err && i < m->nfuncs; i++)
		if (at[i] >= 0)
			m->funcs[i].name = pool + at[i];
	if (!err && named) {
		free(m->names_);
		m->names_ = pool;
		pool = NULL;
	}
	free(pool);
	free(v);
	free(at);
	return err ? err : (int)named;
}

/* Opens the debug file at path when it is this build's and has a
 * .symtab. */
static int symdbg_try(const char *path, const char *build_id, struct symdbg_elf *e)
{
	int err = symdbg_open(path, e);
	if (err)
		return err;
	if (!symdbg_same_build(e->elf, build_id) ||
	    !ada_elfread_section(e->elf, NULL, SHT_SYMTAB)) {
		symdbg_close(e);
		return -ENOENT;
	}
	return 0;
}

static int symdbg_by_build_id(const char *root, const char *build_id, struct symdbg_elf *e)
{
	char path[PATH_MAX];
	int err = ada_fs_debug_build_id_path(root, build_id, path, sizeof(path));
	return err ? err : symdbg_try(path, build_id, e);
}

/* The .gnu_debuglink of the image at path, when the image is the
 * recorded build: next to it, in its .debug/, under root. */
static int symdbg_by_debuglink(const char *root, const char *path, const char *build_id,
                               struct symdbg_elf *e)
{
	struct symdbg_elf img;
	char name[256] = "", cand[PATH_MAX];
	if (symdbg_open(path, &img))
		return -ENOENT;
	Elf_Scn *scn = symdbg_same_build(img.elf, build_id)
	                   ? ada_elfread_section(img.elf, ".gnu_debuglink", SHT_PROGBITS)
	                   : NULL;
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	bool named = d && ada_fs_debuglink_name(d->d_buf, d->d_size, name, sizeof(name));
	symdbg_close(&img);
	if (!named)
		return -ENOENT;
	for (unsigned i = 0; i < ADA_FS_DEBUGLINK_PLACES; i++)
		if (ada_fs_debuglink_path(root, path, name, i, cand, sizeof(cand)) == 0 &&
		    symdbg_try(cand, build_id, e) == 0)
			return 0;
	return -ENOENT;
}

int ada_syms_name_from_debug(struct ada_syms_module *m, const char *debug_root)
{
	const char *root = debug_root ? debug_root : SYMDBG_ROOT;
	const char *slash = m->path ? strrchr(m->path, '/') : NULL;
	const char *base = slash ? slash + 1 : m->path;
	struct symdbg_elf e;
	bool any = false;
	for (size_t i = 0; base && !any && i < m->nfuncs; i++)
		any = symdbg_unnamed(&m->funcs[i], base);
	if (!any || (symdbg_by_build_id(root, m->build_id, &e) != 0 &&
	             symdbg_by_debuglink(root, m->path, m->build_id, &e) != 0))
		return 0;
	int n = symdbg_rename(m, base, e.elf);
	symdbg_close(&e);
	return n;
}
