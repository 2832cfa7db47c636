/*
 * The agent's verdicts for an ELF file that is not loaded (ada diagnose
 * --functions): which of its functions a recording would hook, and why
 * not the others.
 *
 * The file's PT_LOAD segments are mapped read-only and private (never
 * executable, never run), as the loader would place them: a shared
 * object or PIE anywhere, a position-dependent executable at its link
 * addresses (its code holds absolute addresses, which the analysis
 * compares with its own). Then the agent's steps in the agent's order
 * (agent_install.c): symbols as the agent reads them, the options'
 * verdicts (the default list), functions without FDE, prepare with the
 * switch tables readable, the padding form and the cross-function check.
 * Special functions (docs/hooks.md) show as the options decide them: the
 * agent hooks them whatever the options when they can be patched.
 *
 * The file is untrusted: every program header is checked against the
 * file's size and the span is bounded before anything is mapped.
 *
 * Threads: any; no shared state (the arch layer's decoders lock).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover_internal.h"
#include "hook.h"
#include "hook_arch.h"

/* The files this build's arch layer judges: its own machine's. */
#if defined(__aarch64__)
#define AF_MACHINE EM_AARCH64
#else
#define AF_MACHINE EM_X86_64
#endif
#define AF_MAX_PHDRS 64
#define AF_MAX_SPAN (4ull << 30) /* no real image spans more */
#define AF_PAGE 4096ull

/* The file mapped as an image: runtime address = base + vaddr. */
struct af_image {
	void *map;
	size_t map_len;
	uint64_t base, lo, hi; /* lo, hi: runtime range */
	Elf64_Phdr ph[AF_MAX_PHDRS];
	size_t nph;
	struct hook_arch_region rd[16];
	size_t nrd;
};

static int af_read_headers(int fd, uint64_t fsize, Elf64_Ehdr *eh, struct af_image *im)
{
	if (pread(fd, eh, sizeof(*eh), 0) != (ssize_t)sizeof(*eh) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_machine != AF_MACHINE || (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
	    eh->e_phnum > AF_MAX_PHDRS || eh->e_phoff > fsize ||
	    fsize - eh->e_phoff < (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))
		return -ENOEXEC;
	size_t len = (size_t)eh->e_phnum * sizeof(Elf64_Phdr);
	if (pread(fd, im->ph, len, (off_t)eh->e_phoff) != (ssize_t)len)
		return -ENOEXEC;
	im->nph = eh->e_phnum;
	return 0;
}

/* The span of the PT_LOAD segments, page-rounded; each checked. */
static int af_span(const struct af_image *im, uint64_t fsize, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < im->nph; i++) {
		const Elf64_Phdr *p = &im->ph[i];
		if (p->p_type != PT_LOAD)
			continue;
		if (p->p_filesz > p->p_memsz || p->p_offset > fsize ||
		    fsize - p->p_offset < p->p_filesz || p->p_memsz > AF_MAX_SPAN ||
		    p->p_vaddr > UINT64_MAX - AF_MAX_SPAN ||
		    (p->p_vaddr & (AF_PAGE - 1)) != (p->p_offset & (AF_PAGE - 1)))
			return -ENOEXEC;
		uint64_t a = p->p_vaddr & ~(AF_PAGE - 1);
		uint64_t b = (p->p_vaddr + p->p_memsz + AF_PAGE - 1) & ~(AF_PAGE - 1);
		*lo = a < *lo ? a : *lo;
		*hi = b > *hi ? b : *hi;
	}
	return *hi > *lo && *hi - *lo <= AF_MAX_SPAN ? 0 : -ENOEXEC;
}

/* The zero-filled part of a segment (.bss) as the loader makes it: the
 * rest of the last file page cleared, whole pages after it anonymous.
 * The analysis reads globals there (a rip-relative load's value). */
static int af_map_zero(struct af_image *im, const Elf64_Phdr *p)
{
	uint64_t fend = im->base + p->p_vaddr + p->p_filesz;
	uint64_t pend = (fend + AF_PAGE - 1) & ~(AF_PAGE - 1);
	uint64_t mend = (im->base + p->p_vaddr + p->p_memsz + AF_PAGE - 1) & ~(AF_PAGE - 1);
	if (pend > fend && p->p_filesz) {
		void *pg = (void *)(uintptr_t)(pend - AF_PAGE);
		if (mprotect(pg, AF_PAGE, PROT_READ | PROT_WRITE))
			return -errno;
		memset((void *)(uintptr_t)fend, 0, pend - fend);
		if (mprotect(pg, AF_PAGE, PROT_READ))
			return -errno;
	}
	if (mend > pend && mmap((void *)(uintptr_t)pend, mend - pend, PROT_READ,
	                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -errno;
	return 0;
}

/* Maps every PT_LOAD read-only into the reservation. */
static int af_map_segments(int fd, struct af_image *im, uint64_t vlo)
{
	for (size_t i = 0; i < im->nph; i++) {
		const Elf64_Phdr *p = &im->ph[i];
		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		uint64_t pad = p->p_vaddr & (AF_PAGE - 1);
		void *at = (uint8_t *)im->map + (p->p_vaddr - pad - vlo);
		if (p->p_filesz && mmap(at, p->p_filesz + pad, PROT_READ, MAP_PRIVATE | MAP_FIXED,
		                        fd, (off_t)(p->p_offset - pad)) == MAP_FAILED)
			return -errno;
		int err = p->p_memsz > p->p_filesz ? af_map_zero(im, p) : 0;
		if (err)
			return err;
		if ((p->p_flags & PF_R) && im->nrd < sizeof(im->rd) / sizeof(im->rd[0]))
			im->rd[im->nrd++] = (struct hook_arch_region){
			    im->base + p->p_vaddr, p->p_memsz,
			    (const uint8_t *)(uintptr_t)(im->base + p->p_vaddr)};
	}
	return 0;
}

static int af_map(const char *path, struct af_image *im)
{
	memset(im, 0, sizeof(*im));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat sb;
	Elf64_Ehdr eh;
	uint64_t vlo, vhi;
	int err = fstat(fd, &sb) ? -errno : !S_ISREG(sb.st_mode) ? -ENOEXEC : 0;
	if (!err)
		err = af_read_headers(fd, (uint64_t)sb.st_size, &eh, im);
	if (!err)
		err = af_span(im, (uint64_t)sb.st_size, &vlo, &vhi);
	if (!err) {
		/* A position-dependent executable at its own addresses. */
		void *want = eh.e_type == ET_EXEC ? (void *)(uintptr_t)vlo : NULL;
		int fl =
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (want ? MAP_FIXED_NOREPLACE : 0);
		im->map = mmap(want, vhi - vlo, PROT_NONE, fl, -1, 0);
		if (im->map == MAP_FAILED || (want && im->map != want)) {
			err = im->map == MAP_FAILED ? -errno : -EEXIST;
			if (im->map != MAP_FAILED)
				munmap(im->map, vhi - vlo);
			im->map = NULL;
		} else {
			im->map_len = vhi - vlo;
			im->base = (uint64_t)(uintptr_t)im->map - vlo;
			im->lo = im->base + vlo;
			im->hi = im->base + vhi;
			err = af_map_segments(fd, im, vlo);
		}
	}
	close(fd);
	return err;
}

/* The FDE table from PT_GNU_EH_FRAME, in the mapping. */
static bool af_fde_table(const struct af_image *im, struct discover_fde_table *t)
{
	for (size_t i = 0; i < im->nph; i++) {
		if (im->ph[i].p_type != PT_GNU_EH_FRAME)
			continue;
		uint64_t hdr = im->ph[i].p_vaddr;
		for (size_t k = 0; k < im->nph; k++) {
			const Elf64_Phdr *p = &im->ph[k];
			if (p->p_type == PT_LOAD && hdr >= p->p_vaddr &&
			    hdr - p->p_vaddr < p->p_filesz)
				return discover_fde_table_mem(
				           (const uint8_t *)(uintptr_t)(im->base + p->p_vaddr),
				           im->base + p->p_vaddr,
				           im->base + p->p_vaddr + p->p_filesz, im->base + hdr,
				           t) == 0;
		}
	}
	return false;
}

/* The options' verdicts and the FDE rule (install_verdicts()). */
static void af_verdicts(struct ada_hook_symtab *st, const struct ada_hook_config *cfg,
                        uint64_t base, const struct discover_fde_table *fdes)
{
	for (size_t i = 0; i < st->count; i++) {
		struct ada_hook_fn *f = &st->fns[i];
		if (f->status != ADA_HOOK_OK)
			continue;
		f->status = (uint8_t)ada_hook_config_symbol_verdict(cfg, ada_hook_fn_name(st, f));
		if (f->status == ADA_HOOK_OK && fdes && cfg->need_fde &&
		    !discover_fde_covers(fdes, base + f->offset))
			f->status = ADA_SKIP_NO_UNWIND_INFO;
	}
}

/* Prepare, the padding form and the cross-function check. */
static int af_analyse(const struct af_image *im, struct ada_hook_symtab *st,
                      const struct ada_hook_config *cfg, const struct discover_fde_table *fdes)
{
	size_t n = st->count ? st->count : 1;
	struct hook_arch_plan *plans = calloc(n, sizeof(*plans));
	int err = plans ? 0 : -ENOMEM;
	struct hook_arch_memview mv = {im->rd, im->nrd};
	for (size_t i = 0; !err && i < st->count; i++) {
		struct ada_hook_fn *f = &st->fns[i];
		uint64_t a = im->base + f->offset;
		if (f->status == ADA_HOOK_OK)
			f->status = (uint8_t)hook_arch_prepare_mem((const uint8_t *)(uintptr_t)a, a,
			                                           f->size, &mv, &plans[i]);
	}
	if (!err)
		err = discover_pad_and_xref(im->base, st, cfg->pad ? fdes : NULL, plans, NULL);
	free(plans);
	uint64_t *pm = err || !cfg->pad ? NULL : discover_pad_ends(st);
	for (size_t i = 0; pm && i < st->count; i++) {
		struct ada_hook_fn *f = &st->fns[i];
		f->reserved =
		    f->status == ADA_SKIP_TOO_SHORT || f->status == ADA_SKIP_BRANCH_INTO_PATCH
		        ? (uint8_t)discover_pad_why(im->base, st, pm, i, fdes)
		        : 0;
	}
	free(pm);
	return err;
}

const char *ada_hook_pad_why_name(unsigned why)
{
	static const char *const n[ADA_PAD_WHY_COUNT] = {
	    "",        "no_size",  "offset1",  "open_end", "one_byte", "entry",
	    "no_fill", "not_free", "branched", "no_fde",   "claimed",
	};
	return why < ADA_PAD_WHY_COUNT ? n[why] : "";
}

const char *ada_hook_pad_why_text(unsigned why)
{
	static const char *const t[ADA_PAD_WHY_COUNT] = {
	    "",
	    "the symbol has no size (not a function body: __restore_rt is returned into by the "
	    "kernel)",
	    "a branch lands at its offset 1, inside even the 2-byte jump",
	    "it does not end in a return, jump or trap: it may run on into the bytes after it",
	    "1 byte long and no return, jump or trap: it runs on into the bytes after it",
	    "the instruction the 2-byte jump displaces cannot be moved",
	    "no 5 bytes of fill (nop, int3) within the 2-byte jump's reach (127 bytes)",
	    "fill within reach, but none proved free: run into, inside another function, "
	    "claimed by a neighbour or not bounded by symbols and unwind information",
	    "another function branches into the padding it would use, or into the patch of a "
	    "function that would then need that padding",
	    "the image has no unwind table to tell padding from code",
	    "the padding before it is too short for two slots, and the function before it may "
	    "need its own there",
	};
	return why < ADA_PAD_WHY_COUNT ? t[why] : "";
}

/* The analysis reads [offset, offset+size) of every function it may
 * sweep (the cross-function check sweeps skipped ones too): one running
 * past its segment's file part would read beyond the mapping, so it is
 * OUTSIDE_TEXT here (symbols.c only checks where it starts). */
static void af_bound(const struct af_image *im, struct ada_hook_symtab *st)
{
	for (size_t i = 0; i < st->count; i++) {
		struct ada_hook_fn *f = &st->fns[i];
		if (f->status == ADA_SKIP_ALIAS || f->status == ADA_SKIP_OUTSIDE_TEXT)
			continue;
		bool in = false;
		for (size_t k = 0; k < im->nrd && !in; k++)
			in = im->base + f->offset >= im->rd[k].addr &&
			     f->offset + f->size <= im->rd[k].addr - im->base + im->rd[k].len;
		if (!in)
			f->status = ADA_SKIP_OUTSIDE_TEXT;
	}
}

int ada_hook_analyse_file(const char *path, const char *debug_root, bool is_main,
                          const struct ada_hook_config *cfg, struct ada_hook_symtab *st)
{
	struct af_image im;
	memset(st, 0, sizeof(*st));
	int err = ada_hook_symtab_read_ex(path, debug_root, is_main ? ADA_SYMTAB_FDE : 0, st);
	if (err)
		return err;
	err = af_map(path, &im);
	if (!err) {
		struct discover_fde_table fdes;
		bool have = af_fde_table(&im, &fdes);
		af_bound(&im, st);
		af_verdicts(st, cfg, im.base, have ? &fdes : NULL);
		err = af_analyse(&im, st, cfg, have ? &fdes : NULL);
	}
	if (im.map)
		munmap(im.map, im.map_len);
	if (err)
		ada_hook_symtab_fini(st);
	return err;
}
