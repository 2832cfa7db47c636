/*
 * The padding form's proofs (discover_pad.c, hook_arch_prepare_short,
 * hook_arch_fill_len) over hand-made images in a buffer: a slot is found
 * in real padding after or before a function, and refused where the
 * "padding" is code, where a symbol or an FDE covers it, where it is too
 * short or out of the entry jump's reach, and where the function before
 * it may run on into it. The cross-function check's part (a branch into
 * the gap) is covered end to end by e2e.pad.O2 (hostile3).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "discover_internal.h"
#include "hook_arch.h"

#define IMG 1024

/* One image: bytes, functions (sorted by offset), FDE ranges. */
struct img {
	uint8_t b[IMG];
	struct ada_hook_fn fns[8];
	size_t n;
	uint64_t fde[8][2];
	size_t n_fde;
	struct ada_hook_symtab st;
};

static bool img_covered(void *arg, uint64_t addr)
{
	const struct img *im = arg;
	uint64_t off = addr - (uint64_t)(uintptr_t)im->b;
	for (size_t k = 0; k < im->n_fde; k++)
		if (off >= im->fde[k][0] && off < im->fde[k][1])
			return true;
	return false;
}

static void img_init(struct img *im, uint8_t fill)
{
	memset(im, 0, sizeof(*im));
	memset(im->b, fill, sizeof(im->b));
	im->st.fns = im->fns;
	im->st.names = (char *)"";
	im->st.xr[0] = (struct ada_hook_xrange){0, IMG};
	im->st.xr_count = 1;
}

/* A function at off with these bytes, and its FDE. */
static void img_fn(struct img *im, uint64_t off, const uint8_t *code, size_t len)
{
	memcpy(im->b + off, code, len);
	im->fns[im->n++] = (struct ada_hook_fn){.offset = off, .size = len};
	im->st.count = im->n;
	im->fde[im->n_fde][0] = off;
	im->fde[im->n_fde++][1] = off + len;
}

/* The slot of function i (0: none), as an offset + 1. */
static uint64_t img_slot(struct img *im, size_t i, uint64_t *glo, uint64_t *ghi)
{
	uint64_t base = (uint64_t)(uintptr_t)im->b, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan plan;
	const struct ada_hook_fn *f = &im->fns[i];
	if (hook_arch_prepare_short(im->b + f->offset, base + f->offset, f->size, NULL, &plan) !=
	    ADA_HOOK_OK)
		return 0;
	uint64_t *pm = discover_pad_ends(&im->st);
	assert_non_null(pm);
	struct discover_pad_view v = {img_covered, im};
	bool ok = discover_pad_slot(base, &im->st, pm, i, &v, &plan, gap);
	free(pm);
	if (!ok)
		return 0;
	if (glo)
		*glo = gap[0] - base, *ghi = gap[1] - base;
	return plan.pad_addr - base + 1;
}

static const uint8_t st3[] = {0x89, 0x37, 0xc3};       /* mov %esi,(%rdi); ret */
static const uint8_t st4[] = {0x48, 0x89, 0x37, 0xc3}; /* mov %rsi,(%rdi); ret */
static const uint8_t lea5[] = {0x48, 0x8d, 0x47, 0x01, 0xc3};

static void test_after_nops(void **state)
{
	(void)state;
	struct img im;
	uint64_t lo, hi;
	img_init(&im, 0x90);
	img_fn(&im, 0, st3, sizeof(st3));
	img_fn(&im, 16, st4, sizeof(st4));
	img_fn(&im, 32, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, &lo, &hi), 3 + 1);
	assert_int_equal(lo, 3);
	assert_int_equal(hi, 16);
	assert_int_equal(img_slot(&im, 1, &lo, &hi), 20 + 1);
	/* the last function's gap runs to the end of the range: that many
	 * nops are no alignment padding; the 11 bytes before it are */
	img_fn(&im, 48, st3, sizeof(st3));
	assert_int_equal(img_slot(&im, 3, &lo, &hi), 43 + 1);
	assert_int_equal(lo, 37);
	/* with 9 bytes before it, after a function that may need the first
	 * 5 (4 bytes long: its own slot), neither */
	img_init(&im, 0x90);
	img_fn(&im, 0, st4, sizeof(st4));
	img_fn(&im, 13, st3, sizeof(st3));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* after a function whose own bytes take the 5-byte patch, the 9 bytes
	 * are the second's: its slot is their last 5, and the first's patch
	 * after its first byte is guarded (a branch there would make the
	 * first need its slot: the cross-function check takes this one back) */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 14, st3, sizeof(st3));
	uint64_t base = (uint64_t)(uintptr_t)im.b, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare_short(im.b + 14, base + 14, 3, NULL, &plan),
	                 ADA_HOOK_OK);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(discover_pad_slot(base, &im.st, pm, 1, &v, &plan, gap));
	free(pm);
	assert_int_equal(plan.pad_addr - base, 9);
	assert_int_equal(gap[0] - base, 5);
	assert_int_equal(gap[1] - base, 14);
	assert_int_equal(gap[2] - base, 1);
	assert_int_equal(gap[3] - base, 5);
}

static void test_after_multibyte_and_int3(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0xcc);
	img_fn(&im, 0, st3, sizeof(st3));
	/* gas's 13-byte fill: nopw %cs:0(%rax,%rax,1) (10) + nopl (%rax) (3) */
	static const uint8_t nop13[] = {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00,
	                                0x00, 0x00, 0x00, 0x0f, 0x1f, 0x00};
	memcpy(im.b + 3, nop13, sizeof(nop13));
	img_fn(&im, 16, lea5, sizeof(lea5));
	assert_int_equal(hook_arch_fill_len(im.b + 3, 13), 13);
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 3 + 1);
	/* int3 fill */
	img_fn(&im, 32, st3, sizeof(st3));
	img_fn(&im, 48, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 2, NULL, NULL), 35 + 1);
}

static void test_fill_len(void **state)
{
	(void)state;
	static const uint8_t a[] = {0x90, 0xcc, 0x66, 0x90, 0x0f, 0x1f, 0x40, 0x00,
	                            0x0f, 0x1f, 0x44, 0x00, 0x00, 0x48, 0x89, 0xf8};
	assert_int_equal(hook_arch_fill_len(a, sizeof(a)), 13); /* stops at mov */
	assert_int_equal(hook_arch_fill_len(a, 11), 8);         /* a nop cut at the end */
	static const uint8_t reg[] = {0x0f, 0x1f, 0xc0};        /* 0F 1F with a register */
	assert_int_equal(hook_arch_fill_len(reg, 3), 0);
	static const uint8_t other[] = {0x0f, 0x1f, 0x48, 0x00}; /* 0F 1F /1: not the nop */
	assert_int_equal(hook_arch_fill_len(other, 4), 0);
	static const uint8_t cs90[] = {0x2e, 0x90};
	assert_int_equal(hook_arch_fill_len(cs90, 2), 0);
}

/* "Padding" that is code: a mov in the gap. */
static void test_gap_is_code(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, st3, sizeof(st3));
	static const uint8_t mov[] = {0x48, 0x89, 0xf8};
	memcpy(im.b + 9, mov, sizeof(mov));
	img_fn(&im, 16, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
	/* a return in the middle of nops (a tiny function without symbol) */
	img_init(&im, 0x90);
	img_fn(&im, 0, st3, sizeof(st3));
	im.b[12] = 0xc3;
	img_fn(&im, 16, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
}

/* A symbol inside the padding: the gap ends there (too short for a
 * slot), and a zero-size one counts as a byte. */
static void test_symbol_in_gap(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, st3, sizeof(st3));
	im.fns[im.n++] = (struct ada_hook_fn){.offset = 6, .size = 0};
	im.st.count = im.n;
	img_fn(&im, 16, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
	/* a bigger function that starts before and runs over the gap */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	im.fns[0].size = 14; /* covers the nops after st3 */
	img_fn(&im, 2, st3, sizeof(st3));
	img_fn(&im, 16, lea5, sizeof(lea5));
	memcpy(im.b, lea5, 2); /* the outer's first bytes stay */
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
}

/* Code without a symbol after the gap (a stripped library's static
 * function): the gap ends where an FDE starts, and not elsewhere. */
static void test_gap_to_fde(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, st3, sizeof(st3));
	static const uint8_t code[] = {0x41, 0x56, 0x48, 0x89, 0xf8, 0xc3}; /* push r14.. */
	memcpy(im.b + 16, code, sizeof(code));
	img_fn(&im, 48, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0); /* no boundary known */
	im.fde[im.n_fde][0] = 16;
	im.fde[im.n_fde++][1] = 22;
	uint64_t lo, hi;
	assert_int_equal(img_slot(&im, 0, &lo, &hi), 3 + 1);
	assert_int_equal(hi, 16);
	/* an FDE that does not start where the fill ends proves nothing */
	im.fde[im.n_fde - 1][0] = 14;
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
}

/* An FDE over the gap: unwind information describes code. */
static void test_fde_in_gap(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, st3, sizeof(st3));
	img_fn(&im, 16, lea5, sizeof(lea5));
	im.fde[im.n_fde][0] = 8;
	im.fde[im.n_fde++][1] = 12;
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
}

/* A function that does not end in a jump, return or trap runs on into
 * the bytes after it: no padding form for it. */
static void test_open_end(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	static const uint8_t open3[] = {0x89, 0x37, 0x90};
	img_fn(&im, 0, open3, sizeof(open3));
	img_fn(&im, 16, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
}

/* A 1-byte `ret`: its entry jump covers the padding's first byte, its
 * slot follows; without padding right after it, nothing. */
static void test_one_byte(void **state)
{
	(void)state;
	struct img im;
	static const uint8_t ret1[] = {0xc3};
	img_init(&im, 0xcc);
	img_fn(&im, 0, ret1, 1);
	img_fn(&im, 16, lea5, sizeof(lea5));
	uint64_t base = (uint64_t)(uintptr_t)im.b, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare_short(im.b, base, 1, NULL, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 2);
	assert_int_equal(plan.insn_count, 1);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(discover_pad_slot(base, &im.st, pm, 0, &v, &plan, gap));
	free(pm);
	assert_int_equal(plan.pad_addr - base, 2);
	assert_int_equal(gap[0] - base, 1);
	assert_int_equal(plan.original[0], 0xc3);
	assert_int_equal(plan.original[1], 0xcc);
	uint8_t out[HOOK_ARCH_MAX_PATCH];
	hook_arch_patch_bytes(&plan, base + 0x1000, out);
	assert_int_equal(out[0], 0xeb);
	assert_int_equal(out[1], 0);
	/* 5 bytes of padding after it are one too few */
	img_init(&im, 0x90);
	img_fn(&im, 0, ret1, 1);
	img_fn(&im, 6, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
	/* a function right after it */
	img_init(&im, 0x90);
	img_fn(&im, 0, ret1, 1);
	img_fn(&im, 1, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
	/* padding after it up to code without a symbol (crtstuff's, in a
	 * stripped program): its entry jump's second byte is that padding's
	 * first (to the 16-byte boundary), the slot is before it */
	static const uint8_t movr[] = {0x48, 0x89, 0xf8};
	img_init(&im, 0xcc);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 16, ret1, 1);
	memcpy(im.b + 32, movr, sizeof(movr));
	img_fn(&im, 64, lea5, sizeof(lea5));
	base = (uint64_t)(uintptr_t)im.b;
	assert_int_equal(hook_arch_prepare_short(im.b + 16, base + 16, 1, NULL, &plan),
	                 ADA_HOOK_OK);
	pm = discover_pad_ends(&im.st);
	assert_true(discover_pad_slot(base, &im.st, pm, 1, &v, &plan, gap));
	free(pm);
	assert_int_equal(plan.pad_addr - base, 11);
	assert_int_equal(plan.original[1], 0xcc);
	assert_int_equal(gap[4] - base, 17);
	assert_int_equal(gap[5] - base, 32);
	hook_arch_patch_bytes(&plan, base + 0x1000, out);
	assert_int_equal(out[0], 0xeb);
	assert_int_equal((int8_t)out[1], 11 - 18);
	/* the code starts off the boundary: no proof the fill is padding */
	memcpy(im.b + 30, movr, sizeof(movr));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* an FDE over the fill */
	memset(im.b + 30, 0xcc, 2);
	im.fde[im.n_fde][0] = 20, im.fde[im.n_fde++][1] = 24;
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* not a return */
	static const uint8_t nop1[] = {0x90};
	img_init(&im, 0x90);
	img_fn(&im, 0, nop1, 1);
	img_fn(&im, 16, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 0);
}

/* A long function with a loop back to offset 2: the padding after it is
 * out of reach, the padding before it is used when the function before
 * it cannot run on into it. */
static void test_before(void **state)
{
	(void)state;
	struct img im;
	uint8_t lp[200];
	memset(lp, 0x90, sizeof(lp));
	lp[0] = 0x31, lp[1] = 0xc0;                          /* xor %eax,%eax */
	lp[2] = 0x48, lp[3] = 0x83, lp[4] = 0xc0, lp[5] = 3; /* 2: add $3,%rax */
	/* jne 2 (rel32) at 193, ret at 199 */
	int32_t rel = 2 - (193 + 6);
	lp[193] = 0x0f, lp[194] = 0x85;
	memcpy(lp + 195, &rel, 4);
	lp[199] = 0xc3;
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 32, lp, sizeof(lp));
	img_fn(&im, 256, lea5, sizeof(lea5));
	struct hook_arch_plan plan;
	uint64_t base = (uint64_t)(uintptr_t)im.b;
	assert_int_equal(hook_arch_prepare_mem(im.b + 32, base + 32, 200, NULL, &plan),
	                 ADA_SKIP_BRANCH_INTO_PATCH);
	uint64_t lo, hi;
	assert_int_equal(img_slot(&im, 1, &lo, &hi), 27 + 1);
	assert_int_equal(lo, 5);
	assert_int_equal(hi, 32);
	/* the function before ends in a call: it may run on into the gap */
	static const uint8_t callq[] = {0xe8, 0x00, 0x00, 0x00, 0x00};
	memcpy(im.b, callq, sizeof(callq));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* a gap too small to hold the slot of the function before it too,
	 * which may need it (4 bytes long) */
	img_init(&im, 0x90);
	img_fn(&im, 0, st4, sizeof(st4));
	img_fn(&im, 11, lp, sizeof(lp));
	img_fn(&im, 256, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* one with a loop back to its offset 2 needs it too */
	static const uint8_t loop7[] = {0x31, 0xc0, 0x48, 0xff, 0xc0, 0x75, 0xfb, 0xc3};
	img_init(&im, 0x90);
	img_fn(&im, 0, loop7, sizeof(loop7));
	img_fn(&im, 15, lp, sizeof(lp));
	img_fn(&im, 256, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* a 5-byte function that takes the ordinary patch leaves them */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 12, lp, sizeof(lp));
	img_fn(&im, 256, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 7 + 1);
}

/* The gap before a function that the function before it cannot claim:
 * that one is longer than its own entry jump's reach, so the whole gap
 * may hold the slot (7 bytes here); a function before it within reach
 * keeps the first 5 bytes (6 when it is 1 byte long). */
static void test_before_claim(void **state)
{
	(void)state;
	struct img im;
	uint8_t lp[40], longf[160];
	memset(lp, 0x90, sizeof(lp));
	lp[0] = 0x31, lp[1] = 0xc0;                          /* xor %eax,%eax */
	lp[2] = 0x48, lp[3] = 0x83, lp[4] = 0xc0, lp[5] = 3; /* 2: add $3,%rax */
	lp[6] = 0x75, lp[7] = (uint8_t)(2 - 8);              /* jne 2 */
	lp[8] = 0xc3;
	memset(longf, 0x90, sizeof(longf));
	longf[sizeof(longf) - 1] = 0xc3;
	img_init(&im, 0xcc);
	img_fn(&im, 0, longf, sizeof(longf));
	img_fn(&im, 167, lp, 9);
	img_fn(&im, 176, lea5, sizeof(lea5)); /* no padding after lp */
	uint64_t lo, hi;
	assert_int_equal(img_slot(&im, 1, &lo, &hi), 162 + 1);
	assert_int_equal(lo, 160);
	assert_int_equal(hi, 167);
	/* 10 bytes after a 5-byte function: 5 for each */
	img_init(&im, 0xcc);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 15, lp, 9);
	img_fn(&im, 24, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 10 + 1);
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 5 + 1); /* were it needed: no overlap */
	/* 10 bytes after a 1-byte `ret`, whose slot is bytes 2..6: too few */
	static const uint8_t ret1[] = {0xc3};
	img_init(&im, 0xcc);
	img_fn(&im, 0, ret1, 1);
	img_fn(&im, 11, lp, 9);
	img_fn(&im, 20, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	assert_int_equal(img_slot(&im, 0, NULL, NULL), 2 + 1);
}

/* A loop back to offset 2, packed between two functions, with padding
 * of its own after a `ret` (gcc aligns a block there):
 *    0 xor %eax,%eax; 2: add $3,%rax; dec %rdi; jne 2; ret
 *   12 nopw 0(%rax,%rax,1) (6 bytes)
 *   18 inc %rax; ret */
static const uint8_t inner[] = {0x31, 0xc0, 0x48, 0x83, 0xc0, 0x03, 0x48, 0xff, 0xcf, 0x75, 0xf7,
                                0xc3, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x48, 0xff, 0xc0, 0xc3};

static void img_inner(struct img *im, const uint8_t *code, size_t len)
{
	img_init(im, 0xcc);
	img_fn(im, 0, lea5, sizeof(lea5));
	img_fn(im, 5, code, len);
	img_fn(im, 5 + len, lea5, sizeof(lea5));
}

static void test_inner(void **state)
{
	(void)state;
	struct img im;
	uint8_t c[sizeof(inner) + 2];
	uint64_t lo, hi;
	img_inner(&im, inner, sizeof(inner));
	assert_int_equal(img_slot(&im, 1, &lo, &hi), 5 + 12 + 1);
	assert_int_equal(lo, 17);
	assert_int_equal(hi, 23);
	/* the function's own branch into the padding */
	memcpy(c, inner, sizeof(inner));
	c[10] = (uint8_t)(14 - 11); /* jne 14 */
	img_inner(&im, c, sizeof(inner));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* run into: no ret before the nops */
	memcpy(c, inner, sizeof(inner));
	c[11] = 0x90;
	img_inner(&im, c, sizeof(inner));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* an indirect jump anywhere: its targets are not known */
	memcpy(c, inner, sizeof(inner));
	c[21] = 0xff, c[22] = 0xe0, c[23] = 0xc3; /* inc %rax; jmp *%rax; ret */
	img_inner(&im, c, sizeof(inner) + 2);
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* 4 bytes of padding are too few */
	memcpy(c, inner, sizeof(inner));
	c[12] = 0x0f, c[13] = 0x1f, c[14] = 0x40, c[15] = 0x00; /* nopl 0(%rax) */
	c[16] = 0x48, c[17] = 0x90;                             /* xchg %rax,%rax: no fill */
	img_inner(&im, c, sizeof(inner));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* another function starts inside it */
	img_inner(&im, inner, sizeof(inner));
	im.fns[3] = im.fns[2];
	im.fns[2] = (struct ada_hook_fn){.offset = 5 + 18, .size = 4};
	im.n = im.st.count = 4;
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* the patch: jmp rel8 to the padding, jmp rel32 there */
	img_inner(&im, inner, sizeof(inner));
	uint64_t base = (uint64_t)(uintptr_t)im.b, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare_short(im.b + 5, base + 5, sizeof(inner), NULL, &plan),
	                 ADA_HOOK_OK);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(discover_pad_slot(base, &im.st, pm, 1, &v, &plan, gap));
	free(pm);
	uint8_t out[HOOK_ARCH_MAX_PATCH], pad[HOOK_ARCH_PAD_SLOT];
	hook_arch_patch_bytes(&plan, base + 0x1000, out);
	assert_int_equal(out[0], 0xeb);
	assert_int_equal(out[1], 12 - 2);
	hook_arch_pad_bytes(&plan, base + 0x1000, pad);
	assert_int_equal(pad[0], 0xe9);
	int32_t d;
	memcpy(&d, pad + 1, 4);
	assert_int_equal(d, 0x1000 - (17 + 5));
	assert_memory_equal(plan.pad_original, im.b + 17, HOOK_ARCH_PAD_SLOT);
}

/* The cross-function check over the guard: a branch from a third
 * function into the patch of the function before the gap takes the slot
 * back (that function now needs it), as a branch into the gap would. */
static void test_guard_xref(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 14, st3, sizeof(st3));
	static const uint8_t jmp3[] = {0xe9, 0xed, 0xff, 0xff, 0xff}; /* 17: jmp 3 */
	img_fn(&im, 17, jmp3, sizeof(jmp3));
	uint64_t base = (uint64_t)(uintptr_t)im.b;
	struct hook_arch_plan plans[3];
	uint64_t gaps[3 * DISCOVER_PAD_GAP_WORDS] = {0};
	uint8_t prior[3] = {ADA_HOOK_OK, ADA_SKIP_TOO_SHORT, ADA_HOOK_OK};
	assert_int_equal(hook_arch_prepare_mem(im.b, base, 5, NULL, &plans[0]), ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_mem(im.b + 17, base + 17, 5, NULL, &plans[2]),
	                 ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_short(im.b + 14, base + 14, 3, NULL, &plans[1]),
	                 ADA_HOOK_OK);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(
	    discover_pad_slot(base, &im.st, pm, 1, &v, &plans[1], gaps + DISCOVER_PAD_GAP_WORDS));
	free(pm);
	assert_int_equal(discover_xref_check_pad(base, &im.st, plans, gaps, prior, NULL), 0);
	assert_int_equal(im.fns[0].status, ADA_SKIP_BRANCH_INTO_PATCH);
	assert_int_equal(im.fns[1].status, ADA_SKIP_TOO_SHORT);
	assert_int_equal(plans[1].pad_addr, 0);
	assert_int_equal(im.fns[2].status, ADA_HOOK_OK);
	/* without the branch (jmp 0: the entry, outside every patch) it stays */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 14, st3, sizeof(st3));
	static const uint8_t jmp0[] = {0xe9, 0xea, 0xff, 0xff, 0xff};
	img_fn(&im, 17, jmp0, sizeof(jmp0));
	base = (uint64_t)(uintptr_t)im.b;
	memset(gaps, 0, sizeof(gaps));
	assert_int_equal(hook_arch_prepare_mem(im.b, base, 5, NULL, &plans[0]), ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_mem(im.b + 17, base + 17, 5, NULL, &plans[2]),
	                 ADA_HOOK_OK);
	assert_int_equal(hook_arch_prepare_short(im.b + 14, base + 14, 3, NULL, &plans[1]),
	                 ADA_HOOK_OK);
	pm = discover_pad_ends(&im.st);
	assert_true(
	    discover_pad_slot(base, &im.st, pm, 1, &v, &plans[1], gaps + DISCOVER_PAD_GAP_WORDS));
	free(pm);
	assert_int_equal(discover_xref_check_pad(base, &im.st, plans, gaps, prior, NULL), 0);
	assert_int_equal(im.fns[0].status, ADA_HOOK_OK);
	assert_int_equal(im.fns[1].status, ADA_HOOK_OK);
	assert_int_equal(plans[1].pad_addr - base, 9);
}

/* A neighbour's padding: a loop back to offset 2 packed between two
 * functions takes the last 5 bytes of a gap between two others, when
 * every function that could take them for itself is one whose own bytes
 * take the 5-byte patch (its patch guarded); a function before it that
 * has no slot of its own borrows first. */
static const uint8_t lp9[] = {0x31, 0xc0, 0x48, 0x83, 0xc0, 0x03, 0x75, 0xfa, 0xc3};

static void test_borrow(void **state)
{
	(void)state;
	struct img im;
	uint64_t base, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan plan;
	struct discover_pad_view v = {img_covered, &im};
	/* 0 lea5 | 5..16 fill | 16 A=lea5 | 21 lp9 | 30 B=lea5 | 35..48 fill | 48 lea5 */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 16, lea5, sizeof(lea5));
	img_fn(&im, 21, lp9, sizeof(lp9));
	img_fn(&im, 30, lea5, sizeof(lea5));
	img_fn(&im, 48, lea5, sizeof(lea5));
	base = (uint64_t)(uintptr_t)im.b;
	assert_int_equal(hook_arch_prepare_short(im.b + 21, base + 21, 9, NULL, &plan),
	                 ADA_HOOK_OK);
	uint64_t *pm = discover_pad_ends(&im.st);
	assert_true(discover_pad_slot(base, &im.st, pm, 2, &v, &plan, gap));
	free(pm);
	/* the back of the first gap: A's own slot would be there (its gap
	 * before it), A's patch is guarded */
	assert_int_equal(plan.pad_addr - base, 11);
	assert_int_equal(gap[0] - base, 5);
	assert_int_equal(gap[1] - base, 16);
	assert_int_equal(gap[2] - base, 17);
	assert_int_equal(gap[3] - base, 21);
	uint8_t out[HOOK_ARCH_MAX_PATCH];
	hook_arch_patch_bytes(&plan, base + 0x1000, out);
	assert_int_equal(out[0], 0xeb);
	assert_int_equal((int8_t)out[1], 11 - 23);
	/* A 4 bytes long may need its slot there: the next gap, C guarded
	 * (0 lea5 | 5..16 | 16 A=st4 | 20 lp9 | 29 B | 34..48 | 48 C) */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 16, st4, sizeof(st4));
	img_fn(&im, 20, lp9, sizeof(lp9));
	img_fn(&im, 29, lea5, sizeof(lea5));
	img_fn(&im, 48, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 2, NULL, NULL), 43 + 1);
	/* ... and nothing when C, 4 bytes long, may need that one */
	memcpy(im.b + 48, st4, sizeof(st4));
	im.fns[4].size = sizeof(st4);
	assert_int_equal(img_slot(&im, 2, NULL, NULL), 0);
	/* two without a slot of their own: the first borrows, the second
	 * yields (0 A | 5 h=lp9 | 14 i=lp9 | 23 B | 28..48 | 48 C) */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 5, lp9, sizeof(lp9));
	img_fn(&im, 14, lp9, sizeof(lp9));
	img_fn(&im, 23, lea5, sizeof(lea5));
	img_fn(&im, 48, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 43 + 1);
	assert_int_equal(img_slot(&im, 2, NULL, NULL), 0);
	/* a gap whose function before it may run on into it lends nothing */
	im.b[27] = 0x90; /* B's ret: it runs into the fill */
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
	/* the nearest gap first: the slot 22 bytes before the entry jump's
	 * end, the other 18 after it
	 * (0 | 5..16 | 16 21 26 lea5 | 31 lp9 | 40 lea5 | 45..56 | 56 lea5) */
	img_init(&im, 0x90);
	for (uint64_t o = 0; o <= 26; o += o ? 5 : 16)
		img_fn(&im, o, lea5, sizeof(lea5));
	img_fn(&im, 31, lp9, sizeof(lp9));
	img_fn(&im, 40, lea5, sizeof(lea5));
	img_fn(&im, 56, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 4, NULL, NULL), 51 + 1);
}

/* The patch bytes: jmp rel8 at the entry, jmp rel32 in the padding. */
static void test_patch_bytes(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, st4, sizeof(st4));
	img_fn(&im, 16, lea5, sizeof(lea5));
	uint64_t base = (uint64_t)(uintptr_t)im.b, gap[DISCOVER_PAD_GAP_WORDS];
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare_short(im.b, base, 4, NULL, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 3); /* the whole mov */
	assert_int_equal(plan.insn_count, 1);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(discover_pad_slot(base, &im.st, pm, 0, &v, &plan, gap));
	free(pm);
	uint8_t out[HOOK_ARCH_MAX_PATCH], pad[HOOK_ARCH_PAD_SLOT];
	hook_arch_patch_bytes(&plan, base + 0x1000, out);
	assert_int_equal(out[0], 0xeb);
	assert_int_equal(out[1], 4 - 2);
	assert_int_equal(out[2], 0x37); /* the rest of the mov, never run */
	hook_arch_pad_bytes(&plan, base + 0x1000, pad);
	assert_int_equal(pad[0], 0xe9);
	int32_t d;
	memcpy(&d, pad + 1, 4);
	assert_int_equal(d, 0x1000 - (4 + 5));
	assert_memory_equal(plan.pad_original, im.b + 4, HOOK_ARCH_PAD_SLOT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_after_nops),    cmocka_unit_test(test_after_multibyte_and_int3),
	    cmocka_unit_test(test_fill_len),      cmocka_unit_test(test_gap_is_code),
	    cmocka_unit_test(test_symbol_in_gap), cmocka_unit_test(test_fde_in_gap),
	    cmocka_unit_test(test_gap_to_fde),    cmocka_unit_test(test_open_end),
	    cmocka_unit_test(test_one_byte),      cmocka_unit_test(test_before),
	    cmocka_unit_test(test_patch_bytes),   cmocka_unit_test(test_before_claim),
	    cmocka_unit_test(test_inner),         cmocka_unit_test(test_guard_xref),
	    cmocka_unit_test(test_borrow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
