/*
 * Which functions of a loaded image have unwind information, and where
 * the functions of a stripped image begin (not hook context): the
 * .eh_frame_hdr search table (PT_GNU_EH_FRAME) and the FDEs it points at.
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
 * The same table lists every FDE's start: symbols.c takes those whose
 * code is entered with the return address on top of the stack (the CIE's
 * canonical entry state, nothing changed before the first advance) as
 * the functions of an image that has no symbol table (docs/hooks.md).
 *
 * Two views: the loader's mapping (discover_fde_table(), bias 0) and a
 * file's bytes (discover_fde_table_mem(), bias = where the segment's
 * bytes are minus its address). Addresses are the view's own; every read
 * is at address + bias.
 *
 * Threads: the init thread, or the thread of a dlopen rescan, under
 * agent.lock; the CLI's tests. Every read stays inside [lo, hi) and every
 * length is checked before use; an encoding this reader does not know
 * makes the answer "cannot tell", which hooks as before (and finds no
 * function entry).
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

/* n bytes at p, which the caller checked with eh_in(). */
static uint64_t eh_read(const struct discover_fde_table *t, uint64_t p, unsigned n)
{
	uint64_t v = 0;
	memcpy(&v, (const void *)(uintptr_t)(p + t->bias), n); /* little-endian */
	return v;
}

static uint8_t eh_u8(const struct discover_fde_table *t, uint64_t p)
{
	return *(const uint8_t *)(uintptr_t)(p + t->bias);
}

/* Reads the LEB128 value at p into *v (NULL: not needed); returns the
 * address after it, 0 when it runs out of range or past 64 bits. */
static uint64_t eh_leb(const struct discover_fde_table *t, uint64_t p, int64_t *v, bool sign)
{
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 64 && eh_in(t, p, 1); shift += 7, p++) {
		uint8_t b = eh_u8(t, p);
		r |= (uint64_t)(b & 0x7fu) << shift;
		if (b & 0x80u)
			continue;
		if (sign && shift + 7 < 64 && (b & 0x40u))
			r |= ~0ull << (shift + 7);
		if (v)
			*v = (int64_t)r;
		return p + 1;
	}
	return 0;
}

/* The header at hdr (checked in range for 12 bytes): version 1; an
 * eh_frame_ptr of 4 bytes; a udata4 count; a table of datarel sdata4
 * pairs: what binutils and lld write. */
static int eh_table_init(struct discover_fde_table *t, uint64_t hdr)
{
	uint8_t h[4];
	for (unsigned i = 0; i < 4; i++)
		h[i] = eh_u8(t, hdr + i);
	if (h[0] != 1 || eh_size(h[1]) != 4 || h[2] != EH_PE_UDATA4 ||
	    h[3] != (EH_PE_DATAREL | EH_PE_SDATA4))
		return -ENOTSUP;
	uint64_t n = eh_read(t, hdr + 8, 4);
	if (n == 0 || !eh_in(t, hdr + 12, n * 8))
		return -ENOENT;
	t->hdr = hdr;
	t->n = n;
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
	return eh_table_init(t, f.hdr);
}

int discover_fde_table_mem(const uint8_t *seg, uint64_t lo, uint64_t hi, uint64_t hdr,
                           struct discover_fde_table *t)
{
	memset(t, 0, sizeof(*t));
	t->lo = lo;
	t->hi = hi;
	t->bias = (uint64_t)(uintptr_t)seg - lo;
	if (!seg || !hdr || !eh_in(t, hdr, 12))
		return -ENOENT;
	return eh_table_init(t, hdr);
}

/* What an FDE needs from its CIE. */
struct eh_cie {
	uint8_t fde_enc; /* EH_PE_OMIT: the CIE cannot be read */
	bool z;          /* FDEs carry augmentation data */
	bool entry;      /* initial state: CFA = rsp + 8, return address at CFA - 8, nothing else */
};

/* Whether the CIE's initial instructions [p, end) are exactly the x86-64
 * entry state, in any order, with nops: def_cfa rsp+8 and offset r16
 * (the return address column) at CFA - 8. */
static bool eh_cie_entry(const struct discover_fde_table *t, uint64_t p, uint64_t end,
                         int64_t data_align)
{
	bool cfa = false, ra = false;
	while (p && p < end) {
		uint8_t op = eh_u8(t, p++);
		int64_t a = 0, b = 0;
		if (op == 0x00)
			continue; /* nop */
		if (op == 0x0c) { /* def_cfa reg, offset */
			p = eh_leb(t, p, &a, false);
			p = p ? eh_leb(t, p, &b, false) : 0;
			cfa = p && a == 7 && b == 8;
		} else if (op == (0x80u | 16u)) { /* offset r16, factored */
			p = eh_leb(t, p, &a, false);
			ra = p && a > 0 && a <= 8 && data_align >= -8 && data_align < 0 &&
			     a * data_align == -8; /* bounded: no overflow */
		} else
			return false;
		if (!p || !(op == 0x0c ? cfa : ra))
			return false;
	}
	return p == end && cfa && ra;
}

/* The augmentation letters after 'z' from p (the data); fills c. */
static void eh_cie_aug(const struct discover_fde_table *t, const char *aug, size_t alen, uint64_t p,
                       struct eh_cie *c)
{
	c->fde_enc = EH_PE_ABSPTR;
	for (size_t i = 1; i < alen; i++) {
		if (!eh_in(t, p, 1)) {
			c->fde_enc = EH_PE_OMIT;
			return;
		}
		uint8_t enc = eh_u8(t, p);
		if (aug[i] == 'R') {
			c->fde_enc = enc;
			p++;
		} else if (aug[i] == 'P') {
			p += 1 + (eh_size(enc) ? eh_size(enc) : 64); /* 64: out of any range */
		} else if (aug[i] == 'L') {
			p += 1;
		} else if (aug[i] == 'S') {
			c->entry = false; /* a signal frame: not entered by a call */
		} else if (aug[i] != 'B') {
			c->fde_enc = EH_PE_OMIT;
			return;
		}
	}
}

/* Reads the CIE at cie: length, id 0, version, augmentation string (< 16
 * bytes), code and data alignment, return register, augmentation data,
 * initial instructions. */
static struct eh_cie eh_cie_read(const struct discover_fde_table *t, uint64_t cie)
{
	struct eh_cie c = {EH_PE_OMIT, false, false};
	if (!eh_in(t, cie, 10) || eh_read(t, cie + 4, 4) != 0)
		return c;
	uint64_t len = eh_read(t, cie, 4);
	if (len == 0xffffffffu || len < 6 || !eh_in(t, cie, 4 + len))
		return c;
	uint64_t end = cie + 4 + len;
	uint8_t version = eh_u8(t, cie + 8);
	char aug[16];
	size_t alen = 0;
	while (alen < sizeof(aug) && cie + 9 + alen < end &&
	       (aug[alen] = (char)eh_u8(t, cie + 9 + alen)))
		alen++;
	if (alen == sizeof(aug) || cie + 9 + alen >= end)
		return c;
	int64_t code_align = 0, data_align = 0, ra = -1, adlen = 0;
	uint64_t p = eh_leb(t, cie + 10 + alen, &code_align, false);
	p = p ? eh_leb(t, p, &data_align, true) : 0;
	if (p && version == 1 && p < end)
		ra = eh_u8(t, p++);
	else if (p)
		p = eh_leb(t, p, &ra, false);
	if (alen && aug[0] == 'z')
		p = p ? eh_leb(t, p, &adlen, false) : 0;
	if (!p || p > end || (uint64_t)adlen > end - p || (alen && aug[0] != 'z'))
		return c;
	c.z = alen > 0;
	c.entry = code_align == 1 && ra == 16;
	eh_cie_aug(t, aug, alen, p, &c);
	c.entry = c.entry && eh_cie_entry(t, p + (uint64_t)adlen, end, data_align);
	return c;
}

/* Whether the FDE's instructions [p, end) leave the CIE's state alone at
 * its first address: nothing before the first advance. */
static bool eh_fde_entry(const struct discover_fde_table *t, uint64_t p, uint64_t end)
{
	while (p < end) {
		uint8_t op = eh_u8(t, p);
		if (op == 0x00) {
			p++;
			continue;
		}
		if ((op & 0xc0u) == 0x40u)
			return (op & 0x3fu) != 0; /* advance_loc delta */
		unsigned n = op == 0x02 ? 1 : op == 0x03 ? 2 : op == 0x04 ? 4 : 0;
		return n && eh_in(t, p + 1, n) && eh_read(t, p + 1, n) != 0;
	}
	return true;
}

/* The CIE at cie, memoised in memo (NULL: read): an image's FDEs share a
 * few CIEs, so a walk in address order (install_verdicts over libc's
 * 3 600 functions) parses each once instead of once per function. */
static struct eh_cie eh_cie_memo(const struct discover_fde_table *t, uint64_t cie,
                                 struct discover_fde_cursor *memo)
{
	if (!memo)
		return eh_cie_read(t, cie);
	if (!memo->cie_at || memo->cie_at != cie) {
		struct eh_cie c = eh_cie_read(t, cie);
		memo->cie_at = cie;
		memo->cie_enc = c.fde_enc;
		memo->cie_z = c.z;
		memo->cie_entry = c.entry;
	}
	return (struct eh_cie){memo->cie_enc, memo->cie_z, memo->cie_entry};
}

/* The FDE at fde: the length of the code it covers (UINT64_MAX: cannot
 * tell) and, when entry is not NULL, whether its first address is entered
 * with the return address on top of the stack; its CIE through memo. */
static uint64_t eh_fde_read_memo(const struct discover_fde_table *t, uint64_t fde, bool *entry,
                                 struct discover_fde_cursor *memo)
{
	if (entry)
		*entry = false;
	if (!eh_in(t, fde, 8))
		return UINT64_MAX;
	uint64_t len = eh_read(t, fde, 4), cie_off = eh_read(t, fde + 4, 4);
	if (len == 0xffffffffu || len < 4 || !eh_in(t, fde, 4 + len) || cie_off == 0 ||
	    cie_off > fde + 4)
		return UINT64_MAX;
	uint64_t end = fde + 4 + len;
	struct eh_cie c = eh_cie_memo(t, fde + 4 - cie_off, memo);
	unsigned n = c.fde_enc == EH_PE_OMIT ? 0 : eh_size(c.fde_enc);
	if (!n || 8 + 2ull * n > 4 + len)
		return UINT64_MAX;
	uint64_t range = eh_read(t, fde + 8 + n, n); /* the format alone, no application */
	uint64_t p = fde + 8 + 2ull * n;
	int64_t adlen = 0;
	if (c.z)
		p = eh_leb(t, p, &adlen, false);
	if (entry && p && p <= end && (uint64_t)adlen <= end - p)
		*entry = c.entry && eh_fde_entry(t, p + (uint64_t)adlen, end);
	return range;
}

static uint64_t eh_fde_read(const struct discover_fde_table *t, uint64_t fde, bool *entry)
{
	return eh_fde_read_memo(t, fde, entry, NULL);
}

/* Entry i of the search table: its start and its FDE's address. */
static void eh_table_entry(const struct discover_fde_table *t, size_t i, uint64_t *start,
                           uint64_t *fde)
{
	int32_t v[2];
	memcpy(v, (const void *)(uintptr_t)(t->hdr + 12 + 8 * i + t->bias), sizeof(v));
	*start = t->hdr + (uint64_t)(int64_t)v[0];
	*fde = t->hdr + (uint64_t)(int64_t)v[1];
}

/* Entries of t starting at or below addr (a binary search). */
static size_t eh_count_le(const struct discover_fde_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n; /* sorted by initial location */
	uint64_t start, fde;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		eh_table_entry(t, mid, &start, &fde);
		if (start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Entry i's start and the length of the code its FDE covers (UINT64_MAX:
 * cannot tell). */
static uint64_t eh_entry_range(const struct discover_fde_table *t, size_t i, uint64_t *start)
{
	uint64_t fde;
	eh_table_entry(t, i, start, &fde);
	return eh_fde_read(t, fde, NULL);
}

bool discover_fde_covers(const struct discover_fde_table *t, uint64_t addr)
{
	if (!t->hdr)
		return true; /* no table: cannot tell */
	size_t k = eh_count_le(t, addr);
	if (k == 0)
		return false;
	uint64_t start, range = eh_entry_range(t, k - 1, &start);
	return range == UINT64_MAX || addr - start < range;
}

/* A step forward of more than this many entries searches instead. */
#define EH_CURSOR_WALK 8

bool discover_fde_covers_next(const struct discover_fde_table *t, uint64_t addr,
                              struct discover_fde_cursor *c)
{
	if (!t->hdr)
		return true; /* no table: cannot tell */
	size_t k = 0;
	uint64_t start, fde;
	if (c->used && addr >= c->last) {
		k = c->n_le;
		size_t steps = 0;
		while (k < t->n && steps++ < EH_CURSOR_WALK) {
			eh_table_entry(t, k, &start, &fde);
			if (start > addr)
				break;
			k++;
		}
		if (steps > EH_CURSOR_WALK)
			k = eh_count_le(t, addr);
	} else {
		k = eh_count_le(t, addr);
	}
	if (!c->used || k != c->n_le) {
		c->n_le = k;
		if (k) {
			eh_table_entry(t, k - 1, &c->start, &fde);
			c->range = eh_fde_read_memo(t, fde, NULL, c);
		}
	}
	c->used = true;
	c->last = addr;
	if (k == 0)
		return false;
	return c->range == UINT64_MAX || addr - c->start < c->range;
}

bool discover_fde_at(const struct discover_fde_table *t, size_t i, uint64_t *start, uint64_t *len,
                     bool *entry)
{
	uint64_t fde;
	*entry = false;
	if (!t->hdr || i >= t->n)
		return false;
	eh_table_entry(t, i, start, &fde);
	*len = eh_fde_read(t, fde, entry);
	return *len != UINT64_MAX && *len > 0;
}

bool discover_fde_entry(const struct discover_fde_table *t, size_t i, uint64_t *start,
                        uint64_t *len)
{
	bool entry;
	return discover_fde_at(t, i, start, len, &entry) && entry;
}
