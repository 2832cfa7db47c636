/*
 * x86_64 switch tables: proves that a function's computed jumps cannot
 * land inside its patch by reading the tables they read
 * (x86_switch_check(), called by hook_arch_prepare_mem()).
 *
 * Threads: runs under the lock of the capstone handle prepare passes
 * (one per analysing thread), on any thread, never in hook context;
 * allocates (the decoded body, the target list).
 *
 * Cost: only functions prepare would skip with ADA_SKIP_JUMP_TABLE get
 * here, and a byte-level look (sw_shapes) turns away most of them (tail
 * calls through pointers) before any decoding; the rest are measured
 * whole by the length table (~90 instructions per instruction) and
 * decoded whole (the compact decoder, x86_swdec.c, ~300; capstone with
 * detail, ~3 500, only where it declines) only for direct branches,
 * forms the table declines, and what the reader reads (sw_at): libc's
 * 29 145 instructions here cost ~7 M instructions (callgrind), 15 M
 * when each was decoded whole, 104 M with capstone alone.
 *
 * Soundness: the whole body is decoded (any undecodable byte: no), and
 * EVERY table-shaped indirect jmp (`jmp reg`, `jmp [..+index*scale]`)
 * must be one of the two dispatches gcc and clang emit for a dense
 * switch, in straight-line code (no branch in between but the bound
 * check's own ja/jae):
 *   PIC:     cmp idx, N; ja default; ... lea B, [rip+T]; ...
 *            movsxd L, dword [B + idx*4]; add D, S; jmp D  ({D,S} = {L,B})
 *            entry i: T + (int32)table[i]
 *   non-PIC: cmp idx, N; ja default; ... jmp qword [idx*8 + T]
 *            entry i: (uint64)table[i]
 * The lea may also sit anywhere else in the function (hoisted out of a
 * loop) when it is the base register's only writer there. The bound is
 * the cmp's immediate (N+1 entries for ja, N for jae) on the register the
 * table is indexed with, followed back through copies of a 32-bit source
 * (mov r32,r32; movsxd r64,r32; cdqe); a 32-bit cmp bounds the 64-bit
 * index only when its upper half is known zero (a 32-bit write of it, or
 * such a copy after the cmp). The table must lie inside a region of
 * `mem` (the module's readable segments). Every entry must be an
 * instruction boundary of this function outside (addr, addr+patch_len),
 * and no direct branch nor entry may enter a dispatch after its first
 * instruction (that would bypass the bound or the base). Whatever else:
 * ADA_SKIP_JUMP_TABLE. (`jmp [rip+d]` / `jmp [reg+d]` without an index
 * stay allowed as one-slot tail calls, as in x86_prepare.c.)
 * A default target is a direct branch, which prepare's body sweep checks.
 * Accepted residual risk (as for direct branches, which discover_xref
 * checks across functions): another function entering the middle of a
 * dispatch with an index the table does not cover.
 */
#include <stdlib.h>
#include <string.h>

#include "x86_internal.h"

#define SW_WINDOW 24         /* instructions looked back from a jmp */
#define SW_MAX_ENTRIES 65536 /* far above any real switch */
#define SW_MAX_SITES 64

struct sw_site {
	uint64_t lo, hi; /* (lo, hi]: first instruction and jmp of a dispatch */
};

/* One decoded instruction: struct x86_sw_insn (x86_swdec.c). */
enum {
	SW_G_JUMP = X86_SW_G_JUMP,
	SW_G_CALL = X86_SW_G_CALL,
	SW_G_RET = X86_SW_G_RET,
	SW_G_INT = X86_SW_G_INT,
	SW_G_IRET = X86_SW_G_IRET,
	SW_G_REL = X86_SW_G_REL
};

struct sw_ctx {
	csh cs;
	cs_insn *ci;         /* the caller's decode buffer (detail on) */
	const uint8_t *code; /* the body's bytes */
	struct x86_sw_insn *v;
	/* Per instruction: SW_EAGER (decoded whole by sw_decode), SW_LAZY
	 * (address and size only: x86_fast_len knew it and it is no direct
	 * branch) or SW_FILLED (a lazy one decoded on first use, sw_at). */
	uint8_t *have;
	int *bad; /* set when a lazy decode disagrees: the verdict is no */
	size_t n;
	uint64_t addr, size;
	size_t patch_len;
	const struct hook_arch_memview *mem;
	struct sw_site sites[SW_MAX_SITES];
	size_t n_sites;
	uint64_t *t; /* direct branch targets and table entries */
	size_t n_t, cap_t;
};

enum { SW_EAGER = 0, SW_LAZY = 1, SW_FILLED = 2 };

/* Instruction i, decoded. Most of a body is never looked at (only the
 * windows before table-shaped jmps, and a few whole-body scans for
 * writers), so sw_decode keeps only the boundaries of the instructions
 * the length table knows and this decodes one on first use, with the
 * same decoders and bytes sw_decode would have used: the record is the
 * one the eager decode gives. A length that disagrees (the length table
 * and capstone agree on every form the table knows, test_hook_len) or
 * a failed decode sets *bad: no verdict rests on such a record. */
static const struct x86_sw_insn *sw_at(const struct sw_ctx *c, size_t i)
{
	struct x86_sw_insn *in = &c->v[i];
	if (c->have[i] != SW_LAZY)
		return in;
	uint64_t pc = in->address, off = pc - c->addr;
	uint16_t size = in->size;
	const uint8_t *p = c->code + off;
	size_t left = c->size - off;
	size_t k = x86_sw_fast(p, left, pc, in);
	if (!k && cs_disasm_iter(c->cs, &p, &left, &pc, c->ci)) {
		x86_sw_from_cs(in, c->ci);
		k = in->size;
	}
	if (k != size) {
		*c->bad = 1;
		memset(in, 0, sizeof(*in));
		in->address = c->addr + off;
		in->size = size;
	}
	c->have[i] = SW_FILLED;
	return in;
}

static int sw_family(x86_reg r, int *width)
{
	return x86_sw_family(r, width);
}

/* Bit w of the result: the instruction writes family fam at width w. */
static unsigned sw_writes(const struct sw_ctx *c, size_t i, int fam)
{
	return fam < 0 ? 0x1f : sw_at(c, i)->wbits[fam];
}

static int sw_is_flow(const struct sw_ctx *c, size_t i)
{
	const struct x86_sw_insn *in = sw_at(c, i);
	return (in->grp & (SW_G_JUMP | SW_G_CALL | SW_G_RET | SW_G_INT | SW_G_IRET)) ||
	       in->id == X86_INS_XBEGIN || in->id == X86_INS_UD2 || in->id == X86_INS_HLT;
}

static const cs_x86_op *sw_op(const struct x86_sw_insn *in, unsigned k)
{
	return k < in->op_count && k < 2 ? &in->op[k] : NULL;
}

static int sw_is_reg(const cs_x86_op *op, unsigned size)
{
	return op && op->type == X86_OP_REG && op->size == size;
}

/* A control transfer that ends straight-line code: anything but a
 * conditional direct branch (jcc, loop, jrcxz), whose fall-through goes
 * on. Leaving the line early does not change what reaches its end; what
 * enters it is checked separately (sw_sites_closed). */
static int sw_is_barrier(const struct sw_ctx *c, size_t i)
{
	const struct x86_sw_insn *in = sw_at(c, i);
	const cs_x86_op *op = sw_op(in, 0);
	if (!sw_is_flow(c, i))
		return 0;
	return !((in->grp & SW_G_JUMP) && in->id != X86_INS_JMP && op && op->type == X86_OP_IMM);
}

/* Walking back from instruction `from` (exclusive) over straight-line
 * code: index of the last instruction writing family fam, or -1 (window
 * exhausted, function start or a barrier first). */
static long sw_last_writer(const struct sw_ctx *c, size_t from, int fam)
{
	size_t stop = from > SW_WINDOW ? from - SW_WINDOW : 0;

	for (size_t k = from; k-- > stop;) {
		if (sw_is_barrier(c, k))
			return -1;
		if (sw_writes(c, k, fam))
			return (long)k;
	}
	return -1;
}

/* An epilogue's `pop B` at i: only pops and `add rsp, imm` follow it up
 * to a ret, or a jmp out of the function (tail call), so the value it
 * gives B reaches no instruction of the function. */
static int sw_dead_pop(const struct sw_ctx *c, size_t i)
{
	if (sw_at(c, i)->id != X86_INS_POP)
		return 0;
	for (size_t k = i + 1; k < c->n; k++) {
		const struct x86_sw_insn *in = sw_at(c, k);
		const cs_x86_op *a = sw_op(in, 0), *b = sw_op(in, 1);
		if (in->id == X86_INS_RET)
			return 1;
		if (in->id == X86_INS_JMP && a && a->type == X86_OP_IMM &&
		    ((uint64_t)a->imm < c->addr || (uint64_t)a->imm - c->addr >= c->size))
			return 1;
		if (in->id == X86_INS_POP && sw_is_reg(a, 8))
			continue;
		if (in->id == X86_INS_ADD && sw_is_reg(a, 8) && a->reg == X86_REG_RSP && b &&
		    b->type == X86_OP_IMM)
			continue;
		return 0;
	}
	return 0;
}

/* Families whose value at function entry compiled code never uses as
 * data (callee-saved, or rax/r11, scratch): a read of one has a writer. */
static int sw_no_entry_value(int fam)
{
	return fam == 0 || fam == 3 || fam == 5 || fam == 11 || fam >= 12;
}

/* Bits of family fam that may be non-zero just before instruction k
 * (64 when unknown): a 32-bit write clears bits 32-63, movzx from 8 or
 * 16 bits clears the rest. Failing a straight-line writer, 32 when every
 * live writer in the function is a 32-bit write (and the register has no
 * entry value to read). */
static unsigned sw_live_bits(const struct sw_ctx *c, size_t k, int fam, size_t *lo)
{
	long w = sw_last_writer(c, k, fam);

	if (w >= 0) {
		*lo = (size_t)w < *lo ? (size_t)w : *lo; /* relied on: in the site */
		const struct x86_sw_insn *in = sw_at(c, (size_t)w);
		const cs_x86_op *b = sw_op(in, 1);
		if (sw_writes(c, (size_t)w, fam) != 1u << 1)
			return 64;
		if (in->id == X86_INS_MOVZX && b && (b->size == 1 || b->size == 2))
			return 8u * b->size;
		return 32;
	}
	if (!sw_no_entry_value(fam))
		return 64;
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++) {
		unsigned bits = sw_writes(c, i, fam);
		if (!bits || sw_dead_pop(c, i))
			continue;
		if (bits != 1u << 1)
			return 64;
		n++;
	}
	return n ? 32 : 64;
}

static const unsigned sw_width_bits[5] = {64, 32, 16, 8, 0};

/* The index: the low `ws` bits of family fam, zero-extended; entries
 * beyond `lim` would need a sign-extended copy's sign bit. lo: the
 * earliest instruction the proof relies on. */
struct sw_index {
	int fam;
	unsigned ws;
	uint64_t lim;
	size_t lo;
};

/* `cmp X, imm` at k-1 followed by ja/jae at k, where X is the index
 * register or (when the index was loaded from X right after the jcc,
 * at `load`) the same memory: the entry count, or 0. */
static uint64_t sw_cmp_bound(const struct sw_ctx *c, size_t k, struct sw_index *ix,
                             const cs_x86_op *load)
{
	const struct x86_sw_insn *j = sw_at(c, k), *cmp = sw_at(c, k - 1);
	const cs_x86_op *a = sw_op(cmp, 0), *b = sw_op(cmp, 1);
	int w = -1;
	unsigned wc;

	if ((j->id != X86_INS_JA && j->id != X86_INS_JAE) || cmp->id != X86_INS_CMP || !a || !b ||
	    b->type != X86_OP_IMM)
		return 0;
	if (load) {
		if (a->type != X86_OP_MEM || a->size != load->size ||
		    memcmp(&a->mem, &load->mem, sizeof(a->mem)))
			return 0;
		wc = 8u * a->size; /* the load zero-extended it: nothing above */
	} else {
		if (a->type != X86_OP_REG || sw_family(a->reg, &w) != ix->fam || w > 3)
			return 0;
		wc = sw_width_bits[w];
		/* Bits of the index above the compared ones must be zero. */
		if (wc < ix->ws && sw_live_bits(c, k - 1, ix->fam, &ix->lo) > wc)
			return 0;
	}
	uint64_t n = (uint64_t)b->imm;
	if (wc < 64)
		n &= (1ull << wc) - 1; /* the imm, sign-extended to the operand size */
	n = j->id == X86_INS_JA ? n + 1 : n;
	return n <= SW_MAX_ENTRIES && n <= ix->lim ? n : 0;
}

/* A writer of the index at k that copies another register's low bits:
 * follows it into ix. 0 when k is no such copy. */
static int sw_copy(const struct sw_ctx *c, size_t k, struct sw_index *ix)
{
	const struct x86_sw_insn *in = sw_at(c, k);
	const cs_x86_op *a = sw_op(in, 0), *b = sw_op(in, 1);
	int sign = in->id == X86_INS_MOVSXD || in->id == X86_INS_MOVSX || in->id == X86_INS_CDQE;
	unsigned srcw;
	int fam, bw = -1;

	if (in->id == X86_INS_CDQE) {
		fam = 0;
		srcw = 32;
	} else {
		if ((in->id != X86_INS_MOV && in->id != X86_INS_MOVZX && !sign) || !a || !b ||
		    a->type != X86_OP_REG || b->type != X86_OP_REG || a->size < 4 ||
		    sw_family(a->reg, NULL) != ix->fam)
			return 0;
		if (in->id == X86_INS_MOV && a->size != 4)
			return 0; /* mov r64, r64 would need the source's whole width */
		fam = sw_family(b->reg, &bw);
		srcw = 8u * b->size;
		if (fam < 0 || bw == 4)
			return 0; /* ah..bh: not the low bits */
	}
	if (sign && ix->ws > srcw) {
		uint64_t lim = 1ull << (srcw - 1); /* below it sign = zero extension */
		ix->lim = lim < ix->lim ? lim : ix->lim;
	}
	ix->ws = srcw < ix->ws ? srcw : ix->ws;
	ix->fam = fam;
	return 1;
}

/* sw_bound's bookkeeping at k: forget the cmps of every family k
 * writes, then note k if it is the ja/jae of a `cmp reg, imm`. */
static void sw_pend(const struct sw_ctx *c, size_t k, size_t pend[16])
{
	const struct x86_sw_insn *j = sw_at(c, k), *cmp = k ? sw_at(c, k - 1) : j;
	const cs_x86_op *a = sw_op(cmp, 0), *b = sw_op(cmp, 1);
	uint32_t fams = j->wfams;
	int f;

	for (f = 0; f < 16; f++)
		if (fams & (1u << f))
			pend[f] = SIZE_MAX;
	if (k && (j->id == X86_INS_JA || j->id == X86_INS_JAE) && cmp->id == X86_INS_CMP && a &&
	    b && a->type == X86_OP_REG && b->type == X86_OP_IMM &&
	    (f = sw_family(a->reg, NULL)) >= 0)
		pend[f] = k;
}

/* Follows the 64-bit index register idx back from instruction `from` to
 * its bound check. Returns the entry count (0: not recognised) and the
 * earliest instruction relied on (the cmp, or a writer) in *lo. */
static uint64_t sw_bound(const struct sw_ctx *c, size_t from, x86_reg idx, size_t *lo)
{
	int w = -1;
	struct sw_index ix = {sw_family(idx, &w), 64, SW_MAX_ENTRIES, SIZE_MAX};
	size_t stop = from > SW_WINDOW ? from - SW_WINDOW : 0, pend[16];

	if (ix.fam < 0 || w != 0)
		return 0;
	/* pend[f]: a `cmp f, imm; ja` met on the way back, f not written since
	 * (in code order: between a copy from f and that cmp). */
	for (int f = 0; f < 16; f++)
		pend[f] = SIZE_MAX;
	for (size_t k = from; k-- > stop;) {
		uint64_t n = k ? sw_cmp_bound(c, k, &ix, NULL) : 0;
		if (n) {
			*lo = k - 1 < ix.lo ? k - 1 : ix.lo;
			return n;
		}
		sw_pend(c, k, pend);
		if (sw_is_barrier(c, k))
			return 0;
		if (!sw_writes(c, k, ix.fam))
			continue;
		if (sw_copy(c, k, &ix)) {
			/* Copied from a register already bounded further on. */
			if (pend[ix.fam] != SIZE_MAX &&
			    (n = sw_cmp_bound(c, pend[ix.fam], &ix, NULL)) != 0) {
				*lo = k < ix.lo ? k : ix.lo;
				return n;
			}
			continue;
		}
		/* A load (zero-extending) bounded by a cmp of the same memory
		 * just before: `cmp m, N; ja default; mov r32, m`. */
		const struct x86_sw_insn *in = sw_at(c, k);
		const cs_x86_op *a = sw_op(in, 0), *m = sw_op(in, 1);
		if (k >= 2 && (in->id == X86_INS_MOV || in->id == X86_INS_MOVZX) &&
		    sw_is_reg(a, 4) && sw_family(a->reg, NULL) == ix.fam && m &&
		    m->type == X86_OP_MEM && (in->id == X86_INS_MOVZX || m->size == 4) &&
		    (n = sw_cmp_bound(c, k - 1, &ix, m)) != 0) {
			*lo = k - 2 < ix.lo ? k - 2 : ix.lo;
			return n;
		}
		return 0;
	}
	return 0;
}

/* The bytes of [at, at+len) if one region of mem holds all of them. */
static const uint8_t *sw_bytes(const struct hook_arch_memview *mem, uint64_t at, uint64_t len)
{
	for (size_t i = 0; mem && i < mem->n; i++) {
		const struct hook_arch_region *r = &mem->v[i];
		if (at >= r->addr && len <= r->len && at - r->addr <= r->len - len)
			return r->bytes + (at - r->addr);
	}
	return NULL;
}

/* Is a an instruction boundary of the decoded body? (v is sorted.) */
static int sw_is_boundary(const struct sw_ctx *c, uint64_t a)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[mid].address < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && c->v[lo].address == a;
}

static int sw_push_target(struct sw_ctx *c, uint64_t t)
{
	if (c->n_t == c->cap_t) {
		size_t nc = c->cap_t ? 2 * c->cap_t : 256;
		uint64_t *nv = realloc(c->t, nc * sizeof(*nv));
		if (!nv)
			return -1;
		c->t = nv;
		c->cap_t = nc;
	}
	c->t[c->n_t++] = t;
	return 0;
}

/* Reads a table of n entries at tab (esz 4: base-relative int32 from
 * tab; 8: absolute) and checks and records every target. Returns 1 when
 * all are safe, then records the dispatch (lo, hi] as a site. */
static int sw_table(struct sw_ctx *c, uint64_t tab, unsigned esz, uint64_t n, uint64_t lo,
                    uint64_t hi)
{
	const uint8_t *b = sw_bytes(c->mem, tab, n * esz);

	if (!b || c->n_sites == SW_MAX_SITES)
		return 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t;
		if (esz == 4) {
			int32_t d;
			memcpy(&d, b + i * 4, 4);
			t = tab + (uint64_t)(int64_t)d;
		} else {
			memcpy(&t, b + i * 8, 8);
		}
		/* Inside this function, on an instruction, not in the patch. */
		if (t < c->addr || t - c->addr >= c->size || !sw_is_boundary(c, t) ||
		    (t > c->addr && t < c->addr + c->patch_len) || sw_push_target(c, t))
			return 0;
	}
	c->sites[c->n_sites++] = (struct sw_site){lo, hi};
	return 1;
}

/* Straight-line code from `from` to the jmp at j: no barrier between
 * (conditional branches only leave it). */
static int sw_straight(const struct sw_ctx *c, size_t from, size_t j)
{
	for (size_t k = from; k < j; k++)
		if (sw_is_barrier(c, k))
			return 0;
	return 1;
}

static int sw_is_rip_lea(const struct x86_sw_insn *in, x86_reg base, uint64_t *tab)
{
	const cs_x86_op *d = sw_op(in, 0), *m = sw_op(in, 1);

	if (in->id != X86_INS_LEA || !sw_is_reg(d, 8) || d->reg != base || !m ||
	    m->type != X86_OP_MEM || m->mem.base != X86_REG_RIP ||
	    m->mem.index != X86_REG_INVALID || m->mem.segment != X86_REG_INVALID)
		return 0;
	*tab = in->address + in->size + (uint64_t)m->mem.disp;
	return 1;
}

/* The table base register's value at instruction `from`: its last writer
 * in the straight line before it (*first = its index), or else, when the
 * lea was hoisted out of a loop, its only writer in the whole function
 * (*first = SIZE_MAX), epilogue pops aside; either must be
 * `lea base, [rip+T]`. Compiled code reads no register it has not set,
 * so the only writer is the value. */
static int sw_base(const struct sw_ctx *c, size_t from, x86_reg base, uint64_t *tab, size_t *first)
{
	int fam = sw_family(base, NULL);
	long k = sw_last_writer(c, from, fam);

	if (fam < 0)
		return 0;
	if (k >= 0) {
		*first = (size_t)k;
		return sw_is_rip_lea(sw_at(c, (size_t)k), base, tab);
	}
	for (size_t i = 0; i < c->n; i++) {
		if (!sw_writes(c, i, fam) || sw_dead_pop(c, i))
			continue;
		if (k >= 0)
			return 0; /* a second writer */
		k = (long)i;
	}
	*first = SIZE_MAX;
	return k >= 0 && sw_is_rip_lea(sw_at(c, (size_t)k), base, tab);
}

/* The PIC dispatch ending in `jmp D` at j (see the top of the file). */
static int sw_match_pic(struct sw_ctx *c, size_t j)
{
	const cs_x86_op *jd = sw_op(sw_at(c, j), 0);
	if (j < 3 || !sw_is_reg(jd, 8))
		return 0;
	const struct x86_sw_insn *add = sw_at(c, j - 1), *ld = sw_at(c, j - 2);
	const cs_x86_op *ad = sw_op(add, 0), *as = sw_op(add, 1), *l = sw_op(ld, 0),
	                *m = sw_op(ld, 1);
	if (add->id != X86_INS_ADD || !sw_is_reg(ad, 8) || !sw_is_reg(as, 8) ||
	    ad->reg != jd->reg || as->reg == ad->reg || ld->id != X86_INS_MOVSXD ||
	    !sw_is_reg(l, 8) || !m || m->type != X86_OP_MEM || m->size != 4 || ld->addr_size != 8 ||
	    m->mem.segment != X86_REG_INVALID || m->mem.scale != 4 || m->mem.disp != 0 ||
	    m->mem.index == X86_REG_INVALID)
		return 0;
	x86_reg base = m->mem.base;
	if (!((l->reg == ad->reg && base == as->reg) || (l->reg == as->reg && base == ad->reg)))
		return 0;
	uint64_t tab = 0, n = 0;
	size_t first = 0, lo = 0;
	if (!sw_base(c, j - 2, base, &tab, &first) || !(n = sw_bound(c, j - 2, m->mem.index, &lo)))
		return 0;
	first = lo < first ? lo : first;
	return sw_straight(c, first, j) &&
	       sw_table(c, tab, 4, n, c->v[first].address, c->v[j].address);
}

/* The non-PIC dispatch `jmp qword [idx*8 + T]` at j. */
static int sw_match_abs(struct sw_ctx *c, size_t j)
{
	const cs_x86_op *m = sw_op(sw_at(c, j), 0);
	size_t lo = 0;

	if (!m || m->type != X86_OP_MEM || m->size != 8 || sw_at(c, j)->addr_size != 8 ||
	    m->mem.segment != X86_REG_INVALID || m->mem.base != X86_REG_INVALID ||
	    m->mem.scale != 8 || m->mem.disp < 0)
		return 0;
	uint64_t n = sw_bound(c, j, m->mem.index, &lo);
	return n && sw_straight(c, lo, j) &&
	       sw_table(c, (uint64_t)m->mem.disp, 8, n, c->v[lo].address, c->v[j].address);
}

/* One instruction of the sweep: records a direct target, or checks an
 * indirect jmp. 0: not provably safe. */
static int sw_insn(struct sw_ctx *c, size_t i)
{
	const struct x86_sw_insn *in = sw_at(c, i);
	const cs_x86_op *op = sw_op(in, 0);

	if (op && op->type == X86_OP_IMM && in->op_count == 1 &&
	    ((in->grp & (SW_G_JUMP | SW_G_CALL | SW_G_REL)) || in->id == X86_INS_XBEGIN))
		return sw_push_target(c, (uint64_t)op->imm) == 0;
	if (in->id != X86_INS_JMP || !op)
		return 1;
	if (op->type == X86_OP_REG)
		return sw_match_pic(c, i);
	if (op->type != X86_OP_MEM)
		return 0;
	if (op->mem.index != X86_REG_INVALID)
		return sw_match_abs(c, i);
	/* jmp [rip+d] / [reg+d]: one pointer slot, a tail call, as prepare
	 * allows; with a SIB byte prepare calls it table-shaped: not here. */
	uint8_t modrm = in->modrm;
	return (modrm & 0xc7) != 0x04 && (modrm & 0xc7) != 0x44 && (modrm & 0xc7) != 0x84;
}

/* No recorded target enters a dispatch after its first instruction. */
static int sw_sites_closed(const struct sw_ctx *c)
{
	for (size_t i = 0; i < c->n_t; i++)
		for (size_t s = 0; s < c->n_sites; s++)
			if (c->t[i] > c->sites[s].lo && c->t[i] <= c->sites[s].hi)
				return 0;
	return 1;
}

/* Byte-level first look (no decoding): every position that could be a
 * `jmp reg` (FF E0+r, after REX.B and notrack prefixes) must follow
 * `movsxd r64, [b+i*4]` (REX.W 63, 4 or 5 bytes) and `add r64, r64`
 * (REX.W 01/03, register modrm), as a switch dispatch does. Most
 * candidates are tail calls through pointers and fail here cheaply; a
 * false candidate (bytes inside another instruction) that fails only
 * costs the function its hook. */
static int sw_shapes(const uint8_t *code, uint64_t size)
{
	for (uint64_t i = 0; i + 1 < size; i++) {
		if (code[i] != 0xff || (code[i + 1] & 0xf8) != 0xe0)
			continue;
		uint64_t p = i;
		if (p >= 1 && code[p - 1] == 0x41)
			p--;
		if (p >= 1 && code[p - 1] == 0x3e)
			p--;
		if (p < 7 || (code[p - 3] & 0xf8) != 0x48 ||
		    (code[p - 2] != 0x01 && code[p - 2] != 0x03) || (code[p - 1] & 0xc0) != 0xc0)
			return 0;
		int m4 = (code[p - 7] & 0xf8) == 0x48 && code[p - 6] == 0x63;
		int m5 = p >= 8 && (code[p - 8] & 0xf8) == 0x48 && code[p - 7] == 0x63;
		if (!m4 && !m5)
			return 0;
	}
	return 1;
}

/* Decodes the whole body into c->v (one growing array, c->have beside
 * it; ci: the caller's decode buffer, detail on). 0 when some bytes do
 * not decode. With the compact decoder on, an instruction the length
 * table knows, that is no direct branch and that capstone decodes alike
 * (x86_len_cs_same: so leaving it undecoded changes no verdict) keeps
 * only its address and size (SW_LAZY, decoded by sw_at
 * when read): sw_insn would accept it without recording anything (it
 * is no jmp, the table declines FF /4 and /5, and carries no immediate
 * branch target), so only its boundary matters here. Everything else
 * is decoded now, as before. */
static int sw_decode(struct sw_ctx *c, cs_insn *ci, const uint8_t *code)
{
	const uint8_t *p = code;
	size_t left = c->size, cap = 0;
	uint64_t pc = c->addr;
	int fast = x86_use_fast_len && x86_use_sw_fast;

	while (left > 0) {
		if (c->n == cap) {
			size_t nc = cap ? 2 * cap : c->size / 4 + 16;
			struct x86_sw_insn *nv = realloc(c->v, nc * sizeof(*nv));
			if (nv)
				c->v = nv;
			uint8_t *nh = nv ? realloc(c->have, nc) : NULL;
			if (!nh)
				return 0;
			c->have = nh;
			cap = nc;
		}
		struct x86_sw_insn *in = &c->v[c->n];
		struct x86_len_info li;
		size_t k = fast ? x86_fast_len(p, left, &li) : 0;
		if (k && !li.rel && x86_len_cs_same(p)) {
			in->address = pc;
			in->size = (uint16_t)k;
			c->have[c->n++] = SW_LAZY;
		} else {
			/* The compact decoder where it knows the form,
			 * capstone (same canonical result) where it declines. */
			k = fast ? x86_sw_fast(p, left, pc, in) : 0;
			if (!k) {
				if (!cs_disasm_iter(c->cs, &p, &left, &pc, ci))
					return 0;
				x86_sw_from_cs(in, ci);
				c->have[c->n++] = SW_EAGER;
				continue;
			}
			c->have[c->n++] = SW_EAGER;
		}
		p += k;
		left -= k;
		pc += k;
	}
	return c->n > 0;
}

int x86_use_sw_fast = 1;

enum ada_hook_skip x86_switch_check(csh cs, cs_insn *ci, const uint8_t *code, uint64_t addr,
                                    uint64_t size, size_t patch_len,
                                    const struct hook_arch_memview *mem)
{
	int bad = 0;
	struct sw_ctx c = {.cs = cs,
	                   .ci = ci,
	                   .code = code,
	                   .bad = &bad,
	                   .addr = addr,
	                   .size = size,
	                   .patch_len = patch_len,
	                   .mem = mem};
	/* Every byte decoded: the sweep saw every instruction. */
	int ok = mem != NULL && sw_shapes(code, size) && sw_decode(&c, ci, code);

	/* A lazy instruction passes sw_insn untouched (sw_decode). */
	for (size_t i = 0; ok && i < c.n; i++)
		ok = c.have[i] == SW_LAZY || sw_insn(&c, i);
	ok = ok && sw_sites_closed(&c) && !bad;
	free(c.v);
	free(c.have);
	free(c.t);
	return ok ? ADA_HOOK_OK : ADA_SKIP_JUMP_TABLE;
}
