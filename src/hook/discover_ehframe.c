/*
 * Which functions of a loaded image have unwind information (not hook
 * context): the loader's view of .eh_frame_hdr (PT_GNU_EH_FRAME).
 *
 * Why: compiled C and C++ functions have an .eh_frame FDE covering their
 * entry (gcc and clang emit them by default, glibc's assembly declares
 * its CFI); code that does not follow the platform's call and return
 * conventions -- V8's embedded builtins, interpreters' hand-written
 * dispatch loops -- usually has none. Such a function may move, read or
 * replace its return address, which the return trampoline needs intact,
 * so the agent leaves it alone (ADA_SKIP_NO_UNWIND_INFO) when the image
 * has a table at all: an image without one (built without unwind tables)
 * tells nothing and keeps today's verdicts.
 *
 * Threads: the init thread, or the thread of a dlopen rescan, under
 * agent.lock. Every read stays inside the image's mapped range [lo, hi)
 * and every length is checked before use; an encoding this reader does
 * not know makes the answer "cannot tell", which hooks as before.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "discover_internal.h"

#define EH_PE_OMIT 0xffu
#define EH_PE_ABSPTR 0x00u
#define EH_PE_PCREL 0x10u
#define EH_PE_DATAREL 0x30u
#define EH_PE_UDATA4 0x03u
#define EH_PE_SDATA4 0x0bu

struct eh_find {
	uint64_t base, lo;
	uint64_t hdr; /* 0: none */
};

static int eh_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct eh_find *f = arg;
	uint64_t lo = UINT64_MAX, hdr = 0;
	(void)size;
	if ((uint64_t)info->dlpi_addr != f->base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && a < lo)
			lo = a;
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = a;
	}
	if (lo != f->lo)
		return 0;
	f->hdr = hdr;
	return 1;
}

/* Bytes an encoded value of this format takes; 0: not supported. */
static unsigned eh_size(uint8_t enc)
{
	switch (enc & 0x0fu) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		return 8;
	case 0x02: /* udata2 */
	case 0x0a: /* sdata2 */
		return 2;
	case 0x03: /* udata4 */
	case 0x0b: /* sdata4 */
		return 4;
	default:
		return 0;
	}
}

static bool eh_in(const struct discover_fde_table *t, uint64_t p, uint64_t n)
{
	return p >= t->lo && p <= t->hi && n <= t->hi - p;
}

static uint64_t eh_read(uint64_t p, unsigned n)
{
	uint64_t v = 0;
	memcpy(&v, (const void *)(uintptr_t)p, n); /* little-endian */
	return v;
}

/* A LEB128 value's length (the values themselves are not needed). */
static uint64_t eh_skip_leb(const struct discover_fde_table *t, uint64_t p)
{
	for (int i = 0; i < 10 && eh_in(t, p, 1); i++, p++) {
		if (!(*(const uint8_t *)(uintptr_t)p & 0x80u))
			return p + 1;
	}
	return 0;
}

int discover_fde_table(uint64_t base, uint64_t lo, uint64_t hi, struct discover_fde_table *t)
{
	struct eh_find f = {base, lo, 0};
	memset(t, 0, sizeof(*t));
	t->lo = lo;
	t->hi = hi;
	dl_iterate_phdr(eh_find_cb, &f);
	if (!f.hdr || !eh_in(t, f.hdr, 12))
		return -ENOENT;
	const uint8_t *h = (const uint8_t *)(uintptr_t)f.hdr;
	/* version 1; eh_frame_ptr of 4 bytes; a udata4 count; a table of
	 * datarel sdata4 pairs: what binutils and lld write. */
	if (h[0] != 1 || eh_size(h[1]) != 4 || h[2] != EH_PE_UDATA4 ||
	    h[3] != (EH_PE_DATAREL | EH_PE_SDATA4))
		return -ENOTSUP;
	uint64_t n = eh_read(f.hdr + 8, 4);
	if (n == 0 || !eh_in(t, f.hdr + 12, n * 8))
		return -ENOENT;
	t->hdr = f.hdr;
	t->n = n;
	return 0;
}

/* The FDE pointer encoding its CIE declares ('R' in "z..."); EH_PE_OMIT
 * when the CIE cannot be read. */
static uint8_t eh_cie_fde_enc(const struct discover_fde_table *t, uint64_t cie)
{
	/* length, id 0, version, an augmentation string of < 16 bytes */
	if (!eh_in(t, cie, 25) || eh_read(cie, 4) == 0xffffffffu || eh_read(cie + 4, 4) != 0)
		return EH_PE_OMIT;
	uint8_t version = *(const uint8_t *)(uintptr_t)(cie + 8);
	const char *aug = (const char *)(uintptr_t)(cie + 9);
	size_t alen = strnlen(aug, 16);
	if (alen >= 16)
		return EH_PE_OMIT;
	uint64_t p = eh_skip_leb(t, eh_skip_leb(t, cie + 10 + alen)); /* code, data align */
	if (p)
		p = version == 1 ? p + 1 : eh_skip_leb(t, p); /* return register */
	if (aug[0] != 'z')
		return alen == 0 ? EH_PE_ABSPTR : EH_PE_OMIT;
	if (p)
		p = eh_skip_leb(t, p); /* augmentation data length */
	if (!p)
		return EH_PE_OMIT;
	for (size_t i = 1; i < alen; i++) {
		if (!eh_in(t, p, 1))
			return EH_PE_OMIT;
		uint8_t enc = *(const uint8_t *)(uintptr_t)p;
		if (aug[i] == 'R')
			return enc;
		if (aug[i] == 'P')
			p += 1 + (eh_size(enc) ? eh_size(enc) : 64); /* 64: out of any range */
		else if (aug[i] == 'L')
			p += 1;
		else if (aug[i] != 'S' && aug[i] != 'B')
			return EH_PE_OMIT;
	}
	return EH_PE_ABSPTR;
}

/* The length of the code the FDE at fde covers; UINT64_MAX: cannot tell. */
static uint64_t eh_fde_range(const struct discover_fde_table *t, uint64_t fde)
{
	if (!eh_in(t, fde, 8) || eh_read(fde, 4) == 0xffffffffu)
		return UINT64_MAX;
	uint64_t cie_off = eh_read(fde + 4, 4);
	if (cie_off == 0 || cie_off > fde + 4)
		return UINT64_MAX;
	uint8_t enc = eh_cie_fde_enc(t, fde + 4 - cie_off);
	unsigned n = enc == EH_PE_OMIT ? 0 : eh_size(enc);
	if (!n || !eh_in(t, fde + 8, 2ull * n))
		return UINT64_MAX;
	return eh_read(fde + 8 + n, n); /* pc_range: the format alone, no application */
}

bool discover_fde_covers(const struct discover_fde_table *t, uint64_t addr)
{
	if (!t->hdr)
		return true; /* no table: cannot tell */
	const int32_t *tab = (const int32_t *)(uintptr_t)(t->hdr + 12);
	size_t lo = 0, hi = t->n; /* sorted by initial location */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->hdr + (uint64_t)(int64_t)tab[2 * mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	uint64_t start = t->hdr + (uint64_t)(int64_t)tab[2 * (lo - 1)];
	uint64_t range = eh_fde_range(t, t->hdr + (uint64_t)(int64_t)tab[2 * (lo - 1) + 1]);
	return range == UINT64_MAX || addr - start < range;
}
