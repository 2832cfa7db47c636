/*
 * Symbol tables of one ELF image, read with libelf (not hook context).
 *
 * Called by the agent's init thread (and by dlopen, with the agent's
 * guard set) for each image it is about to hook, and by the unit tests.
 * One pass over the chosen symbol section collects STT_FUNC and
 * STT_GNU_IFUNC definitions into one array and one name pool (two
 * allocations per image, grown geometrically); then one sort by offset
 * gives the dense symbol_index order and exposes aliases as neighbours.
 *
 * Invariants of the result: fns sorted by (offset, preference), each
 * name_off < names_len, every offset/size is relative to the load base.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"

#define SYMTAB_DEBUG_ROOT "/usr/lib/debug"

struct symtab_elf {
	int fd;
	Elf *elf;
};

const char *ada_symtab_source_name(enum ada_symtab_source s)
{
	switch (s) {
	case ADA_SYMSRC_SYMTAB:
		return "symtab";
	case ADA_SYMSRC_DYNSYM:
		return "dynsym";
	case ADA_SYMSRC_DEBUGLINK:
		return "debuglink";
	}
	return "unknown";
}

static int symtab_open(const char *path, struct symtab_elf *se)
{
	se->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (se->fd < 0)
		return -errno;
	if (elf_version(EV_CURRENT) == EV_NONE)
		goto bad;
	se->elf = elf_begin(se->fd, ELF_C_READ_MMAP, NULL);
	if (!se->elf || elf_kind(se->elf) != ELF_K_ELF || gelf_getclass(se->elf) != ELFCLASS64)
		goto bad;
	return 0;
bad:
	if (se->elf)
		elf_end(se->elf);
	close(se->fd);
	se->elf = NULL;
	se->fd = -1;
	return -ENOEXEC;
}

static void symtab_close(struct symtab_elf *se)
{
	if (se->elf)
		elf_end(se->elf);
	if (se->fd >= 0)
		close(se->fd);
}

static Elf_Scn *symtab_find_section(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type && sh.sh_entsize)
			return scn;
	}
	return NULL;
}

/* Executable PT_LOAD ranges and e_entry: what OUTSIDE_TEXT and
 * ENTRY_POINT are judged against. */
static int symtab_read_phdrs(Elf *elf, struct ada_hook_symtab *st)
{
	GElf_Ehdr eh;
	size_t n;
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n) != 0)
		return -ENOEXEC;
	st->entry = eh.e_entry;
	for (size_t i = 0; i < n && st->xr_count < ADA_HOOK_MAX_XRANGES; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			st->xr[st->xr_count].lo = ph.p_vaddr;
			st->xr[st->xr_count].hi = ph.p_vaddr + ph.p_memsz;
			st->xr_count++;
		}
	}
	return 0;
}

/* The GNU build-id note, from any SHT_NOTE section. */
static void symtab_read_build_id(Elf *elf, struct ada_hook_symtab *st)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 &&
			    nh.n_descsz <= ADA_HOOK_BUILD_ID_MAX) {
				memcpy(st->build_id, (char *)d->d_buf + desc_off, nh.n_descsz);
				st->build_id_len = nh.n_descsz;
				return;
			}
		}
	}
}

static int symtab_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	void *np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* Names are stored without a symbol version ("memcpy@@GLIBC_2.14" ->
 * "memcpy"; .symtab of glibc's debug file has them): that is the name a
 * user writes in a glob, and the one the special functions are known by. */
static int symtab_add(struct ada_hook_symtab *st, size_t *fcap, size_t *ncap, const GElf_Sym *s,
                      const char *name)
{
	const char *at = strchr(name, '@');
	size_t len = (at && at != name ? (size_t)(at - name) : strlen(name)) + 1;
	if (symtab_grow((void **)&st->fns, fcap, st->count + 1, sizeof(*st->fns)) ||
	    symtab_grow((void **)&st->names, ncap, st->names_len + len, 1))
		return -ENOMEM;
	struct ada_hook_fn *f = &st->fns[st->count++];
	memset(f, 0, sizeof(*f));
	f->offset = s->st_value;
	f->size = s->st_size;
	f->name_off = (uint32_t)st->names_len;
	f->is_ifunc = GELF_ST_TYPE(s->st_info) == STT_GNU_IFUNC;
	f->is_global = GELF_ST_BIND(s->st_info) != STB_LOCAL;
	memcpy(st->names + st->names_len, name, len - 1);
	st->names[st->names_len + len - 1] = '\0';
	st->names_len += len;
	return 0;
}

/* One pass over a symbol section: function definitions only. */
static int symtab_collect(Elf *elf, Elf_Scn *scn, struct ada_hook_symtab *st)
{
	GElf_Shdr sh;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!gelf_getshdr(scn, &sh) || !d)
		return -ENOEXEC;
	size_t n = sh.sh_size / sh.sh_entsize, fcap = 0, ncap = 0;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			return -ENOEXEC;
		int type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    s.st_value == 0)
			continue;
		const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		int err = symtab_add(st, &fcap, &ncap, &s, name);
		if (err)
			return err;
	}
	return 0;
}

static const struct ada_hook_symtab *symtab_sort_ctx;

/* Offset first; at one offset the preferred name first: global, then
 * without a leading underscore, then shorter, then by bytes. */
static int symtab_cmp(const void *a, const void *b)
{
	const struct ada_hook_fn *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->is_global != y->is_global)
		return y->is_global - x->is_global;
	const char *nx = ada_hook_fn_name(symtab_sort_ctx, x);
	const char *ny = ada_hook_fn_name(symtab_sort_ctx, y);
	if ((nx[0] == '_') != (ny[0] == '_'))
		return nx[0] == '_' ? 1 : -1;
	size_t lx = strlen(nx), ly = strlen(ny);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(nx, ny);
}

static bool symtab_in_text(const struct ada_hook_symtab *st, const struct ada_hook_fn *f)
{
	for (size_t i = 0; i < st->xr_count; i++) {
		if (f->offset >= st->xr[i].lo && f->offset + f->size <= st->xr[i].hi)
			return true;
	}
	return false;
}

static bool symtab_is_entry_name(const char *n)
{
	return !strcmp(n, "_start") || !strcmp(n, "_init") || !strcmp(n, "_fini") ||
	       !strcmp(n, "__libc_csu_init") || !strcmp(n, "__libc_csu_fini");
}

/* LSD radix sort of (offset << 24 | original index) keys, 8 bits a pass,
 * skipping passes whose byte is the same in every key. */
static void symtab_radix(uint64_t *k, uint64_t *tmp, size_t n)
{
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t cnt[256] = {0};
		for (size_t i = 0; i < n; i++)
			cnt[(k[i] >> shift) & 0xff]++;
		if (cnt[(k[0] >> shift) & 0xff] == n)
			continue;
		for (size_t b = 0, sum = 0; b < 256; b++) {
			size_t c = cnt[b];
			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(k[i] >> shift) & 0xff]++] = k[i];
		memcpy(k, tmp, n * sizeof(*k));
	}
}

/* The order of a stable sort by symtab_cmp, at a fraction of qsort's cost
 * (qsort's comparator calls were ~2 ms for libc's 11 000 symbols): radix
 * by offset with the original index as tie-break, then an insertion sort
 * of each run of equal offsets (aliases: a few names) by symtab_cmp. */
static int symtab_sort(struct ada_hook_symtab *st)
{
	size_t n = st->count;
	uint64_t *k = malloc((2 * n + 1) * sizeof(*k));
	struct ada_hook_fn *out = malloc((n + 1) * sizeof(*out));
	int ok = k && out && n < (1u << 24);
	for (size_t i = 0; ok && i < n; i++) {
		ok = st->fns[i].offset < (1ull << 40);
		k[i] = st->fns[i].offset << 24 | i;
	}
	if (ok && n > 1) {
		symtab_radix(k, k + n, n);
		for (size_t i = 0; i < n; i++)
			out[i] = st->fns[k[i] & 0xffffff];
		for (size_t i = 1; i < n; i++) {
			struct ada_hook_fn f = out[i];
			size_t j = i;
			for (; j > 0 && out[j - 1].offset == f.offset &&
			       symtab_cmp(&out[j - 1], &f) > 0;
			     j--)
				out[j] = out[j - 1];
			out[j] = f;
		}
		memcpy(st->fns, out, n * sizeof(*out));
	}
	free(k);
	free(out);
	return ok ? 0 : -1;
}

/* Sorts, removes exact duplicates (.symtab lists some names twice) and
 * gives each function its first verdict. */
static void symtab_judge(struct ada_hook_symtab *st)
{
	symtab_sort_ctx = st;
	if (symtab_sort(st))
		qsort(st->fns, st->count, sizeof(*st->fns), symtab_cmp);
	size_t w = 0;
	for (size_t i = 0; i < st->count; i++) {
		struct ada_hook_fn *f = &st->fns[i];
		if (w > 0 && st->fns[w - 1].offset == f->offset &&
		    !strcmp(ada_hook_fn_name(st, &st->fns[w - 1]), ada_hook_fn_name(st, f)))
			continue;
		st->fns[w] = *f;
		f = &st->fns[w];
		if (w > 0 && st->fns[w - 1].offset == f->offset)
			f->status = ADA_SKIP_ALIAS;
		else if (f->is_ifunc)
			f->status = ADA_SKIP_IFUNC;
		else if (symtab_is_entry_name(ada_hook_fn_name(st, f)) ||
		         (st->entry && f->offset == st->entry))
			f->status = ADA_SKIP_ENTRY_POINT;
		else if (!symtab_in_text(st, f))
			f->status = ADA_SKIP_OUTSIDE_TEXT;
		w++;
	}
	st->count = w;
}

static int symtab_from_debug_file(const char *root, struct ada_hook_symtab *st)
{
	char path[512];
	int n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", root ? root : SYMTAB_DEBUG_ROOT,
	                 st->build_id[0]);
	for (size_t i = 1; i < st->build_id_len && n > 0 && (size_t)n < sizeof(path) - 8; i++)
		n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x", st->build_id[i]);
	if (n <= 0 || (size_t)n >= sizeof(path) - 8)
		return -ENAMETOOLONG;
	memcpy(path + n, ".debug", 7);
	struct symtab_elf se;
	int err = symtab_open(path, &se);
	if (err)
		return err;
	Elf_Scn *scn = symtab_find_section(se.elf, SHT_SYMTAB);
	err = scn ? symtab_collect(se.elf, scn, st) : -ENOENT;
	symtab_close(&se);
	return err;
}

int ada_hook_symtab_read(const char *path, const char *debug_root, struct ada_hook_symtab *out)
{
	struct symtab_elf se;
	memset(out, 0, sizeof(*out));
	int err = symtab_open(path, &se);
	if (err)
		return err;
	err = symtab_read_phdrs(se.elf, out);
	if (err)
		goto out;
	symtab_read_build_id(se.elf, out);
	Elf_Scn *scn = symtab_find_section(se.elf, SHT_SYMTAB);
	out->source = ADA_SYMSRC_SYMTAB;
	if (!scn && out->build_id_len > 0 && symtab_from_debug_file(debug_root, out) == 0 &&
	    out->count > 0) {
		out->source = ADA_SYMSRC_DEBUGLINK;
	} else if (!scn) {
		out->count = out->names_len = 0;
		scn = symtab_find_section(se.elf, SHT_DYNSYM);
		out->source = ADA_SYMSRC_DYNSYM;
	}
	if (scn)
		err = symtab_collect(se.elf, scn, out);
	if (!err)
		symtab_judge(out);
out:
	symtab_close(&se);
	if (err)
		ada_hook_symtab_fini(out);
	return err;
}

void ada_hook_symtab_fini(struct ada_hook_symtab *st)
{
	if (!st)
		return;
	free(st->fns);
	free(st->names);
	st->fns = NULL;
	st->names = NULL;
	st->count = st->names_len = 0;
}
