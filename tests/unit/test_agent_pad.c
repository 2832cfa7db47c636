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
	uint64_t base = (uint64_t)(uintptr_t)im->b, lo = 0, hi = 0;
	struct hook_arch_plan plan;
	const struct ada_hook_fn *f = &im->fns[i];
	if (hook_arch_prepare_short(im->b + f->offset, base + f->offset, f->size, NULL, &plan) !=
	    ADA_HOOK_OK)
		return 0;
	uint64_t *pm = discover_pad_ends(&im->st);
	assert_non_null(pm);
	struct discover_pad_view v = {img_covered, im};
	bool ok = discover_pad_slot(base, &im->st, pm, i, &v, &plan, &lo, &hi);
	free(pm);
	if (!ok)
		return 0;
	if (glo)
		*glo = lo - base, *ghi = hi - base;
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
	/* with 9 bytes before it, neither */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 14, st3, sizeof(st3));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
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
	uint64_t base = (uint64_t)(uintptr_t)im.b, lo, hi;
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare_short(im.b, base, 1, NULL, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 2);
	assert_int_equal(plan.insn_count, 1);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(discover_pad_slot(base, &im.st, pm, 0, &v, &plan, &lo, &hi));
	free(pm);
	assert_int_equal(plan.pad_addr - base, 2);
	assert_int_equal(lo - base, 1);
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
	/* a gap too small to hold the slot of the function before it too */
	img_init(&im, 0x90);
	img_fn(&im, 0, lea5, sizeof(lea5));
	img_fn(&im, 12, lp, sizeof(lp));
	img_fn(&im, 256, lea5, sizeof(lea5));
	assert_int_equal(img_slot(&im, 1, NULL, NULL), 0);
}

/* The patch bytes: jmp rel8 at the entry, jmp rel32 in the padding. */
static void test_patch_bytes(void **state)
{
	(void)state;
	struct img im;
	img_init(&im, 0x90);
	img_fn(&im, 0, st4, sizeof(st4));
	img_fn(&im, 16, lea5, sizeof(lea5));
	uint64_t base = (uint64_t)(uintptr_t)im.b, lo, hi;
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare_short(im.b, base, 4, NULL, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 3); /* the whole mov */
	assert_int_equal(plan.insn_count, 1);
	uint64_t *pm = discover_pad_ends(&im.st);
	struct discover_pad_view v = {img_covered, &im};
	assert_true(discover_pad_slot(base, &im.st, pm, 0, &v, &plan, &lo, &hi));
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
	    cmocka_unit_test(test_patch_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
