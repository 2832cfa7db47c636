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
 * Where the names come from, first found: the file's .symtab; the
 * .symtab of its debug file, by build-id (<root>/.build-id/xx/yyyy.debug)
 * or by .gnu_debuglink (next to the file, in its .debug/, in
 * <root>/<its directory>); else .dynsym, and (when the caller asks: the
 * agent does for the main program) the functions .dynsym does not cover
 * from the .eh_frame_hdr table's function entries (discover_ehframe.c),
 * named "<file name>+0x<offset>" -- except in an image that carries the C
 * runtime (it defines one of the functions the default exclude list or
 * the special list knows, or it is statically linked): its unnamed
 * internals may be the ones those lists keep away.
 *
 * Invariants of the result: fns sorted by (offset, preference), each
 * name_off < names_len, every offset/size is relative to the load base.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "discover_internal.h"
#include "elfread.h"
#include "fs.h"
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
	case ADA_SYMSRC_EHFRAME:
		return "ehframe";
	}
	return "unknown";
}

/* The name pool's memory given back (malloc's, or a cache file's
 * buffer as read). */
static void symtab_names_free(struct ada_hook_symtab *st)
{
	free(st->names);
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
	st->build_id_len = ada_elfread_build_id(elf, st->build_id, ADA_HOOK_BUILD_ID_MAX);
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
 * (qsort's comparator calls dominate for a library the size of libc): radix
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

/* Rewrites the names pool in function order (a name two functions in a
 * row share, once), as the symbol-table cache stores it (symcache.c
 * sc_pool_fill): a table read from the file and the same table read from
 * the cache are then equal byte for byte, so the store of shared bodies
 * names both alike (agent_syms.c agent_body_key), and every later walk in
 * function order reads the names front to back. Left as it is when the
 * copy cannot be made, or there is no function. */
static void symtab_pool_in_fn_order(struct ada_hook_symtab *st)
{
	char *pool = st->count ? malloc(st->names_len + 1) : NULL;
	if (!pool)
		return;
	uint32_t w = 0, last = 0, prev = 0;
	pool[0] = '\0';
	for (size_t i = 0; i < st->count; i++) {
		uint32_t off = st->fns[i].name_off;
		if (!i || off != prev) {
			size_t n = strnlen(st->names + off, st->names_len - off);
			memcpy(pool + w, st->names + off, n);
			pool[w + n] = '\0';
			last = w;
			w += (uint32_t)n + 1;
		}
		prev = off;
		st->fns[i].name_off = last;
	}
	symtab_names_free(st);
	st->names = pool;
	st->names_len = w;
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
	symtab_pool_in_fn_order(st);
}

/* The .symtab of the debug file at path, when it is one for this image:
 * its build-id, when both have one, is the image's. */
static int symtab_from_debug_path(const char *path, struct ada_hook_symtab *st)
{
	struct symtab_elf se;
	int err = symtab_open(path, &se);
	if (err)
		return err;
	struct ada_hook_symtab id = {0};
	symtab_read_build_id(se.elf, &id);
	Elf_Scn *scn = symtab_find_section(se.elf, SHT_SYMTAB);
	if (st->build_id_len && id.build_id_len &&
	    (id.build_id_len != st->build_id_len ||
	     memcmp(id.build_id, st->build_id, st->build_id_len)))
		scn = NULL; /* another build's */
	st->count = st->names_len = 0;
	err = scn ? symtab_collect(se.elf, scn, st) : -ENOENT;
	symtab_close(&se);
	if (!err && st->count == 0)
		err = -ENOENT;
	return err;
}

_Static_assert(ADA_HOOK_BUILD_ID_MAX <= ADA_FS_BUILD_ID_MAX, "a build-id the agent reads fits");

static int symtab_from_build_id(const char *root, struct ada_hook_symtab *st)
{
	char hex[2 * ADA_HOOK_BUILD_ID_MAX + 1], path[PATH_MAX];
	for (size_t i = 0; i < st->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", st->build_id[i]);
	hex[2 * st->build_id_len] = '\0';
	int err = ada_fs_debug_build_id_path(root, hex, path, sizeof(path));
	return err ? err : symtab_from_debug_path(path, st);
}

/* The file name .gnu_debuglink gives (ada_fs_debuglink_name); false when
 * none. */
static bool symtab_debuglink_name(Elf *elf, char *name, size_t cap)
{
	Elf_Scn *scn = ada_elfread_section(elf, ".gnu_debuglink", SHT_PROGBITS);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	return d && ada_fs_debuglink_name(d->d_buf, d->d_size, name, cap);
}

/* .gnu_debuglink's file next to the image, in its .debug/, or under root
 * at the image's directory. */
static int symtab_from_debuglink(Elf *elf, const char *path, const char *root,
                                 struct ada_hook_symtab *st)
{
	char name[ADA_HOOK_DEBUGLINK_MAX], cand[PATH_MAX];
	if (!symtab_debuglink_name(elf, name, sizeof(name)))
		return -ENOENT;
	memcpy(st->debuglink, name, strlen(name) + 1); /* the rest stays 0 */
	for (unsigned i = 0; i < ADA_FS_DEBUGLINK_PLACES; i++)
		if (ada_fs_debuglink_path(root, path, name, i, cand, sizeof(cand)) == 0 &&
		    symtab_from_debug_path(cand, st) == 0)
			return 0;
	return -ENOENT;
}

/* Names an image that carries the C runtime defines: its unnamed
 * internals may be ones the default exclude list or the special
 * functions keep away from a trampoline (docs/hooks.md). */
static const char *const symtab_runtime_names[] = {
    "setjmp",         "_setjmp",           "__sigsetjmp",    "sigsetjmp",
    "getcontext",     "swapcontext",       "vfork",          "__vfork",
    "clone",          "__clone",           "clone3",         "__libc_start_main",
    "__tls_get_addr", "__cxa_begin_catch", "_Unwind_Resume", "_Unwind_RaiseException",
    "pthread_exit",
};

static bool symtab_is_runtime(const struct ada_hook_symtab *st)
{
	for (size_t i = 0; i < st->count; i++) {
		const char *n = ada_hook_fn_name(st, &st->fns[i]);
		for (size_t k = 0; k < sizeof(symtab_runtime_names) / sizeof(*symtab_runtime_names);
		     k++)
			if (!strcmp(n, symtab_runtime_names[k]))
				return true;
	}
	return false;
}

/* Whether the image names other images it needs (DT_NEEDED): one that
 * needs none is statically linked, or is the C library itself. */
static bool symtab_has_needed(Elf *elf)
{
	Elf_Scn *scn = symtab_find_section(elf, SHT_DYNAMIC);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr sh;
	if (!d || !gelf_getshdr(scn, &sh))
		return false;
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Dyn dyn;
		if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_NEEDED)
			return true;
	}
	return false;
}

/* The image's .eh_frame_hdr table in the file's bytes. */
static int symtab_fde_table(Elf *elf, struct discover_fde_table *t)
{
	size_t n, size = 0;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(elf, &size);
	uint64_t hdr = 0;
	if (!raw || elf_getphdrnum(elf, &n) != 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			hdr = ph.p_vaddr;
	}
	for (size_t i = 0; hdr && i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || hdr < ph.p_vaddr ||
		    hdr - ph.p_vaddr >= ph.p_filesz || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			continue;
		return discover_fde_table_mem(raw + ph.p_offset, ph.p_vaddr,
		                              ph.p_vaddr + ph.p_filesz, hdr, t);
	}
	return -ENOENT;
}

/* Whether one of the first n functions (sorted by offset) starts at off
 * or covers it. */
static bool symtab_covered(const struct ada_hook_symtab *st, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->fns[mid].offset <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && st->fns[i].offset == st->fns[lo - 1].offset;) {
		const struct ada_hook_fn *f = &st->fns[i];
		if (f->offset == off || off - f->offset < f->size)
			return true;
	}
	return false;
}

/* The PLT sections (.plt, .plt.got, .plt.sec): the linker gives them
 * FDEs, some in the entry state, but their stubs are no functions. */
static size_t symtab_plt_ranges(Elf *elf, struct ada_hook_xrange *r, size_t cap)
{
	size_t shstrndx, n = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while (n < cap && (scn = elf_nextscn(elf, scn)) != NULL) {
		const char *sn =
		    gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (sn && (!strncmp(sn, ".plt", 4) || !strncmp(sn, ".iplt", 5)))
			r[n++] = (struct ada_hook_xrange){sh.sh_addr, sh.sh_addr + sh.sh_size};
	}
	return n;
}

static bool symtab_in_ranges(const struct ada_hook_xrange *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return true;
	return false;
}

/* Whether the file's code at vaddr is a one-byte nop. gcc starts a
 * function's .cold block with one when that block begins with a landing
 * pad (an LSDA cannot point at a block's offset 0), and its FDE keeps
 * the entry state for that byte alone: the unwinder lands right behind
 * it, inside the bytes a patch would replace. No compiled function starts
 * with it. */
static bool symtab_starts_with_nop(Elf *elf, uint64_t vaddr)
{
	size_t n, size = 0;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(elf, &size);
	if (!raw || elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || vaddr < ph.p_vaddr ||
		    vaddr - ph.p_vaddr >= ph.p_filesz || ph.p_offset > size ||
		    vaddr - ph.p_vaddr >= size - ph.p_offset)
			continue;
		return raw[ph.p_offset + (vaddr - ph.p_vaddr)] == 0x90;
	}
	return false;
}

/* Adds the table's FDEs that .dynsym (st, sorted) does not cover,
 * outside the PLT, named "<base>+0x<offset>" (counted in st->n_fde): the
 * function entries to be judged like any function; the fragments (not
 * entered in the entry state, or by a landing pad's nop: a gcc .cold
 * block) as ADA_SKIP_EXCLUDED, as the default list excludes "*.cold*" by
 * name, and listed so that the cross-function check sweeps their
 * branches too (discover_xref.c). */
static int symtab_add_fdes(Elf *elf, const char *base, struct ada_hook_symtab *st)
{
	struct discover_fde_table t;
	struct ada_hook_xrange plt[8];
	size_t fcap = st->count, ncap = st->names_len, ndyn = st->count;
	if (symtab_fde_table(elf, &t) != 0)
		return 0; /* no table, or one this reader does not know: .dynsym only */
	size_t nplt = symtab_plt_ranges(elf, plt, sizeof(plt) / sizeof(*plt));
	for (size_t i = 0; i < t.n; i++) {
		uint64_t start, len;
		bool entry;
		char name[320];
		if (!discover_fde_at(&t, i, &start, &len, &entry) ||
		    symtab_in_ranges(plt, nplt, start) || symtab_covered(st, ndyn, start))
			continue;
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, base, start);
		GElf_Sym s = {.st_value = start,
		              .st_size = len,
		              .st_info = GELF_ST_INFO(STB_LOCAL, STT_FUNC)};
		int err = symtab_add(st, &fcap, &ncap, &s, name);
		if (err)
			return err;
		if (!entry || symtab_starts_with_nop(elf, start))
			st->fns[st->count - 1].status = ADA_SKIP_EXCLUDED;
		st->n_fde++;
	}
	return 0;
}

/* .dynsym, and (fde) the functions .eh_frame adds where that is safe. */
static int symtab_from_dynsym(Elf *elf, const char *path, bool fde, struct ada_hook_symtab *st)
{
	Elf_Scn *scn = symtab_find_section(elf, SHT_DYNSYM);
	int err = scn ? symtab_collect(elf, scn, st) : 0;
	st->source = ADA_SYMSRC_DYNSYM;
	if (err || !fde || symtab_is_runtime(st) || !symtab_has_needed(elf))
		return err;
	symtab_sort_ctx = st;
	if (st->count && symtab_sort(st))
		qsort(st->fns, st->count, sizeof(*st->fns), symtab_cmp);
	const char *base = strrchr(path, '/');
	err = symtab_add_fdes(elf, base ? base + 1 : path, st);
	if (st->n_fde)
		st->source = ADA_SYMSRC_EHFRAME;
	return err;
}

int ada_hook_symtab_read(const char *path, const char *debug_root, struct ada_hook_symtab *out)
{
	return ada_hook_symtab_read_ex(path, debug_root, 0, out);
}

int ada_hook_symtab_read_ex(const char *path, const char *debug_root, unsigned flags,
                            struct ada_hook_symtab *out)
{
	struct symtab_elf se;
	const char *root = debug_root ? debug_root : SYMTAB_DEBUG_ROOT;
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
	if (scn)
		err = symtab_collect(se.elf, scn, out);
	else if (symtab_from_build_id(root, out) == 0 ||
	         symtab_from_debuglink(se.elf, path, root, out) == 0)
		out->source = ADA_SYMSRC_DEBUGLINK;
	else {
		out->count = out->names_len = 0;
		err = symtab_from_dynsym(se.elf, path, flags & ADA_SYMTAB_FDE, out);
	}
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
	if (!st->fns_in_names)
		free(st->fns);
	symtab_names_free(st);
	st->fns = NULL;
	st->names = NULL;
	st->fns_in_names = false;
	st->count = st->names_len = 0;
}
