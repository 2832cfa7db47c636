/*
 * Byte-for-byte tests of the arm64 hook layer's portable core
 * (src/hook/arm64/): the verdicts on hand-assembled entries, the exact
 * relocated form of every PC-relative class, the trampolines, the
 * patches. Built and run on any host (the core is portable C over
 * 32-bit words): nothing here executes generated code (that is
 * test_hook_a64_run, under qemu-aarch64).
 *
 * The original words are GNU as's (aarch64-linux-gnu-as); the expected
 * words were checked with aarch64-linux-gnu-objdump at the addresses
 * given, whose disassembly is in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "a64_internal.h"

#define FN 0x400000ull
#define TR 0x500000ull
#define FN_ID 0x1122334455667788ull
#define HANDLER 0x123456789abcull
#define EXIT (TR - 0x1000) /* an exit path 4 KiB below the trampoline */

static void expect_words(const uint8_t *buf, const uint32_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a64_word(buf + 4 * i) != want[i])
			print_error("word %zu: %08x, want %08x\n", i, a64_word(buf + 4 * i),
			            want[i]);
		assert_int_equal(a64_word(buf + 4 * i), want[i]);
	}
}

/* Plans `word` at fn (ordinary form), emits its trampoline at tr and
 * compares the body (after the A64_BODY_OFF-byte frame). */
static void expect_body_at(uint32_t word, uint64_t fn, uint64_t tr, const uint32_t *want, size_t n)
{
	struct hook_arch_plan plan;
	uint8_t code[4], buf[HOOK_ARCH_MAX_TRAMPOLINE];

	memcpy(code, &word, 4);
	assert_int_equal(a64_prepare(code, fn, 4, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 4);
	assert_int_equal(plan.insn_count, 1);
	size_t len = a64_emit_trampoline(&plan, buf, tr, FN_ID, HANDLER, tr - 0x1000, NULL);
	assert_int_equal(len, A64_BODY_OFF + 4 * n);
	expect_words(buf + A64_BODY_OFF, want, n);
}

static void expect_body(uint32_t word, const uint32_t *want, size_t n)
{
	expect_body_at(word, FN, TR, want, n);
}

/* The enter frame (a64_emit.c): save, call the handler, restore, the
 * call/jump choice, R_F, the literals. */
static void test_frame(void **state)
{
	static const uint32_t want[A64_BODY_OFF / 4] = {
	    0xd102c3ff,             /* sub sp, sp, #0xb0 */
	    0xa90007e0,             /* stp x0, x1, [sp] */
	    0xa9010fe2,             /* stp x2, x3, [sp, #16] */
	    0xa90217e4,             /* stp x4, x5, [sp, #32] */
	    0xa9031fe6,             /* stp x6, x7, [sp, #48] */
	    0xa90427e8,             /* stp x8, x9, [sp, #64] */
	    0xa9052fea,             /* stp x10, x11, [sp, #80] */
	    0xa90637ec,             /* stp x12, x13, [sp, #96] */
	    0xa9073fee,             /* stp x14, x15, [sp, #112] */
	    0xa90847f0,             /* stp x16, x17, [sp, #128] */
	    0xf9004bf2,             /* str x18, [sp, #144] */
	    0xa90a7bfd,             /* stp x29, x30, [sp, #160] */
	    0x58000280,             /* ldr x0, 0x500080 (fn_id) */
	    0x9102a3e1,             /* add x1, sp, #0xa8 (ret_slot = S-8) */
	    0x910003e2,             /* mov x2, sp (regs) */
	    0x58000270,             /* ldr x16, 0x500088 (handler) */
	    0xd63f0200,             /* blr x16 */
	    0xa94007e0,             /* ldp x0, x1, [sp] */
	    0xa9410fe2,             /* ldp x2, x3, [sp, #16] */
	    0xa94217e4,             /* ldp x4, x5, [sp, #32] */
	    0xa9431fe6,             /* ldp x6, x7, [sp, #48] */
	    0xa94427e8,             /* ldp x8, x9, [sp, #64] */
	    0xa9452fea,             /* ldp x10, x11, [sp, #80] */
	    0xa94637ec,             /* ldp x12, x13, [sp, #96] */
	    0xa9473fee,             /* ldp x14, x15, [sp, #112] */
	    0xf9404bf2,             /* ldr x18, [sp, #144] */
	    0xa94a7bfd,             /* ldp x29, x30, [sp, #160] */
	    0x9102c3ff,             /* add sp, sp, #0xb0 */
	    0xb500011e,             /* cbnz x30, 0x500090 (body) */
	    0x94000007,             /* bl 0x500090 */
	    0x17fffbe2,             /* R_F: b 0x4ff000 (the exit path) */
	    0xd503201f,             /* nop */
	    0x55667788, 0x11223344, /* fn_id */
	    0x56789abc, 0x00001234, /* handler */
	};
	static const uint32_t body[] = {
	    0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! (copied) */
	    0x17fbffdc, /* b 0x400004 */
	};
	struct hook_arch_plan plan;
	uint8_t code[4] = {0xfd, 0x7b, 0xbf, 0xa9}, buf[HOOK_ARCH_MAX_TRAMPOLINE];

	(void)state;
	assert_int_equal(a64_prepare(code, FN, 4, &plan), ADA_HOOK_OK);
	assert_int_equal(a64_emit_trampoline(&plan, buf, TR, FN_ID, HANDLER, EXIT, NULL),
	                 A64_BODY_OFF + 8);
	expect_words(buf, want, A64_BODY_OFF / 4);
	expect_words(buf + A64_BODY_OFF, body, 2);
	assert_int_equal(a64_word(buf + A64_RET_POINT_OFF), 0x17fffbe2); /* R_F */
	/* an exit path beyond b's reach of R_F, an unaligned trampoline */
	assert_int_equal(
	    a64_emit_trampoline(&plan, buf, TR, FN_ID, HANDLER, TR + (1ull << 28), NULL), 0);
	assert_int_equal(a64_emit_trampoline(&plan, buf, TR + 4, FN_ID, HANDLER, EXIT, NULL), 0);
}

static void test_adr(void **state)
{
	static const uint32_t adr[] = {
	    0xd2802000, /* mov x0, #0x100 */
	    0xf2a00800, /* movk x0, #0x40, lsl #16 */
	    0x17fbffdb, /* b 0x400004 */
	};
	static const uint32_t adr_back[] = {
	    0xd29fff83, /* mov x3, #0xfffc */
	    0xf2a007e3, /* movk x3, #0x3f, lsl #16 */
	    0x17fbffdb,
	};
	static const uint32_t adrp[] = {
	    0xd2840001, /* mov x1, #0x2000 */
	    0xf2a00821, /* movk x1, #0x41, lsl #16 */
	    0x17fbffdb,
	};
	(void)state;
	expect_body(0x10000800, adr, 3);      /* adr x0, .+0x100 */
	expect_body(0x10ffffe3, adr_back, 3); /* adr x3, .-4 */
	expect_body(0xd0000081, adrp, 3);     /* adrp x1, .+0x12000 (page 0x412000) */
}

/* adrp from a pc that is not page aligned: the page of the pc, not the pc. */
static void test_adrp_page(void **state)
{
	static const uint32_t want[] = {
	    0xd2840001, /* mov x1, #0x2000 */
	    0xf2a00821, /* movk x1, #0x41, lsl #16 */
	    0x17fc03d7, /* b 0x400ff4 */
	};
	(void)state;
	expect_body_at(0xd0000081, FN + 0xff0, TR, want, 3);
}

static void test_ldr_literal(void **state)
{
	static const uint32_t w[] = {
	    0xd2801002, /* mov x2, #0x80 */
	    0xf2a00802, /* movk x2, #0x40, lsl #16 */
	    0xb9400042, /* ldr w2, [x2] */
	    0x17fbffda, /* b 0x400004 */
	};
	static const uint32_t x[] = {
	    0xd29ff803, /* mov x3, #0xffc0 */
	    0xf2a007e3, /* movk x3, #0x3f, lsl #16 */
	    0xf9400063, /* ldr x3, [x3] */
	    0x17fbffda,
	};
	static const uint32_t sw[] = {
	    0xd2800104, /* mov x4, #0x8 */
	    0xf2a00804, /* movk x4, #0x40, lsl #16 */
	    0xb9800084, /* ldrsw x4, [x4] */
	    0x17fbffda,
	};
	static const uint32_t zr[] = {
	    0xd2800211, /* mov x17, #0x10 */
	    0xf2a00811, /* movk x17, #0x40, lsl #16 */
	    0xf940023f, /* ldr xzr, [x17] (base 31 would be sp) */
	    0x17fbffda,
	};
	(void)state;
	expect_body(0x18000402, w, 4);  /* ldr w2, .+0x80 */
	expect_body(0x58fffe03, x, 4);  /* ldr x3, .-0x40 */
	expect_body(0x98000044, sw, 4); /* ldrsw x4, .+8 */
	expect_body(0x5800009f, zr, 4); /* ldr xzr, .+0x10 */
}

static void test_ldr_literal_simd(void **state)
{
	static const uint32_t s[] = {
	    0xd2800211, /* mov x17, #0x10 */
	    0xf2a00811, /* movk x17, #0x40, lsl #16 */
	    0xbd400225, /* ldr s5, [x17] */
	    0x17fbffda,
	};
	static const uint32_t d[] = {
	    0xd2800411, /* mov x17, #0x20 */
	    0xf2a00811,
	    0xfd400226, /* ldr d6, [x17] */
	    0x17fbffda,
	};
	static const uint32_t q[] = {
	    0xd2800611, /* mov x17, #0x30 */
	    0xf2a00811,
	    0x3dc00227, /* ldr q7, [x17] */
	    0x17fbffda,
	};
	static const uint32_t prfm[] = {
	    0xd503201f, /* nop (prfm pldl1keep, .+0x40: a hint) */
	    0x17fbffdc,
	};
	(void)state;
	expect_body(0x1c000085, s, 4); /* ldr s5, .+0x10 */
	expect_body(0x5c000106, d, 4); /* ldr d6, .+0x20 */
	expect_body(0x9c000187, q, 4); /* ldr q7, .+0x30 */
	expect_body(0xd8000200, prfm, 2);
}

static void test_b_bl(void **state)
{
	static const uint32_t b[] = {
	    0x17fc03dc, /* b 0x401000 */
	    0x17fbffdc, /* b 0x400004 */
	};
	static const uint32_t bl[] = {
	    0xd280009e, /* mov x30, #0x4 */
	    0xf2a0081e, /* movk x30, #0x40, lsl #16: the original return address */
	    0x17fbf7da, /* b 0x3fe000 */
	    0x17fbffda, /* b 0x400004 (not reached: the callee returns there) */
	};
	(void)state;
	expect_body(0x14000400, b, 2);  /* b .+0x1000 */
	expect_body(0x97fff800, bl, 4); /* bl .-0x2000 */
}

/* A target beyond b's reach from the trampoline: mov x16; br x16. The
 * function at 0x10400000, its trampoline 112 MiB above, the target
 * 112 MiB below. */
static void test_b_bl_far(void **state)
{
	static const uint32_t b[] = {
	    0xd2800010, /* mov x16, #0x0 */
	    0xf2a12810, /* movk x16, #0x940, lsl #16 */
	    0xd61f0200, /* br x16 */
	    0x163fffda, /* b 0x10400004 */
	};
	static const uint32_t bl[] = {
	    0xd280009e, /* mov x30, #0x4 */
	    0xf2a2081e, /* movk x30, #0x1040, lsl #16 */
	    0xd2800010, /* mov x16, #0x0 */
	    0xf2a12810, /* movk x16, #0x940, lsl #16 */
	    0xd61f0200, /* br x16 */
	    0x163fffd8, /* b 0x10400004 */
	};
	(void)state;
	expect_body_at(0x16400000, 0x10400000, 0x17400000, b, 4);  /* b .-0x7000000 */
	expect_body_at(0x96400000, 0x10400000, 0x17400000, bl, 6); /* bl .-0x7000000 */
}

static void test_cond(void **state)
{
	static const uint32_t bne[] = {
	    0x54000040, /* b.eq 0x500098 (inverted, over the branch) */
	    0x17fbffeb, /* b 0x400040 */
	    0x17fbffdb, /* b 0x400004 */
	};
	static const uint32_t bal[] = {
	    0x17fbffec, /* b 0x400040 (b.al always branches) */
	    0x17fbffdc,
	};
	static const uint32_t cbz[] = {
	    0x35000040, /* cbnz w0, 0x500098 */
	    0x17fbffe3, /* b 0x400020 */
	    0x17fbffdb,
	};
	static const uint32_t cbnz[] = {
	    0xb4000041, /* cbz x1, 0x500098 */
	    0x17fbffd3, /* b 0x3fffe0 */
	    0x17fbffdb,
	};
	static const uint32_t tbz[] = {
	    0x37280043, /* tbnz w3, #5, 0x500098 */
	    0x17fc001b, /* b 0x400100 */
	    0x17fbffdb,
	};
	static const uint32_t tbnz[] = {
	    0xb6400044, /* tbz x4, #40, 0x500098 */
	    0x17fbff9b, /* b 0x3fff00 */
	    0x17fbffdb,
	};
	(void)state;
	expect_body(0x54000201, bne, 3);  /* b.ne .+0x40 */
	expect_body(0x5400020e, bal, 2);  /* b.al .+0x40 */
	expect_body(0x34000100, cbz, 3);  /* cbz w0, .+0x20 */
	expect_body(0xb5ffff01, cbnz, 3); /* cbnz x1, .-0x20 */
	expect_body(0x36280803, tbz, 3);  /* tbz w3, #5, .+0x100 */
	expect_body(0xb747f804, tbnz, 3); /* tbnz x4, #40, .-0x100 */
}

static void test_blr(void **state)
{
	static const uint32_t lr[] = {
	    0xaa1e03f0, /* mov x16, x30 (before x30 is overwritten) */
	    0xd280009e, /* mov x30, #0x4 */
	    0xf2a0081e, /* movk x30, #0x40, lsl #16 */
	    0xd61f0200, /* br x16 */
	    0x17fbffd9, /* b 0x400004 */
	};
	static const uint32_t x5[] = {
	    0xaa0503f0, /* mov x16, x5 */
	    0xd280009e, 0xf2a0081e, 0xd61f0200, 0x17fbffd9,
	};
	(void)state;
	expect_body(0xd63f03c0, lr, 5); /* blr x30 */
	expect_body(0xd63f00a0, x5, 5); /* blr x5 */
}

static enum ada_hook_skip verdict(uint32_t word, uint64_t fn, uint64_t size)
{
	struct hook_arch_plan plan;
	uint8_t code[4];
	memcpy(code, &word, 4);
	return a64_prepare(code, fn, size, &plan);
}

static void test_verdicts(void **state)
{
	(void)state;
	assert_int_equal(verdict(0xa9bf7bfd, FN, 4), ADA_HOOK_OK);
	assert_int_equal(verdict(0xd503233f, FN, 4), ADA_HOOK_OK); /* paciasp */
	assert_int_equal(verdict(0xd503245f, FN, 4), ADA_HOOK_OK); /* bti c */
	assert_int_equal(verdict(0xd65f03c0, FN, 4), ADA_HOOK_OK); /* ret */
	assert_int_equal(verdict(0xd4000001, FN, 4), ADA_HOOK_OK); /* svc #0 */
	assert_int_equal(verdict(0xa9bf7bfd, FN, 3), ADA_SKIP_TOO_SHORT);
	assert_int_equal(verdict(0xa9bf7bfd, FN + 2, 8), ADA_SKIP_UNDECODABLE);
	assert_int_equal(verdict(0x00000000, FN, 4), ADA_SKIP_UNDECODABLE); /* udf #0 */
	assert_int_equal(verdict(0xdc000040, FN, 4),
	                 ADA_SKIP_UNDECODABLE); /* ldr literal V=1 opc=11 */
	assert_int_equal(verdict(0xd73f0822, FN, 4), ADA_SKIP_UNRELOCATABLE); /* blraa x1, x2 */
	assert_int_equal(verdict(0xd63f0bff, FN, 4), ADA_SKIP_UNRELOCATABLE); /* blraaz xzr */
	assert_int_equal(verdict(0x74000000, FN, 4), ADA_SKIP_UNRELOCATABLE); /* cb<cc> (CMPBR) */
	assert_int_equal(verdict(0x55000000, FN, 4), ADA_SKIP_UNRELOCATABLE); /* unallocated */
}

/* The ordinary patch: one b; out of its reach nothing. */
static void test_patch(void **state)
{
	struct hook_arch_plan plan;
	uint8_t code[4] = {0xfd, 0x7b, 0xbf, 0xa9}, out[HOOK_ARCH_MAX_PATCH];

	(void)state;
	assert_int_equal(a64_prepare(code, FN, 4, &plan), ADA_HOOK_OK);
	assert_int_equal(a64_patch_bytes(&plan, TR, out), 0);
	assert_int_equal(a64_word(out), 0x14040000); /* b 0x500000 */
	assert_int_equal(a64_patch_target(&plan, out), TR);
	assert_int_equal(a64_patch_bytes(&plan, FN - 0x8000000ull, out), 0);
	assert_int_equal(a64_word(out), 0x16000000); /* b .-128 MiB: the lowest reach */
	assert_int_not_equal(a64_patch_bytes(&plan, FN + 0x8000000ull, out), 0);
	assert_int_equal(a64_patch_target(&plan, code), 0); /* not a patch */
	/* a trampoline the patch cannot reach is not emitted */
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];
	assert_int_equal(a64_emit_trampoline(&plan, buf, FN + 0x8000000ull, FN_ID, HANDLER,
	                                     FN + 0x8000000ull, NULL),
	                 0);
	/* nothing can be strictly inside a 4-byte patch */
	assert_int_equal(a64_moved_pc(&plan, buf, TR, FN + 2), 0);
}

static void test_return_trampoline(void **state)
{
	static const uint32_t want[] = {
	    0xd102c3ff, /* sub sp, sp, #0xb0 */
	    0xa90007e0, 0xa9010fe2, 0xa90217e4, 0xa9031fe6, 0xa90427e8,
	    0xa9052fea, 0xa90637ec, 0xa9073fee, 0xa90847f0, /* stp x0..x17 */
	    0xf9004bf2,                                     /* str x18, [sp, #144] */
	    0xa90a7bfd,                                     /* stp x29, x30, [sp, #160] */
	    0x9102c3e0,                                     /* add x0, sp, #0xb0 (S) */
	    0x58000230,                                     /* ldr x16, 0x500078 */
	    0xd63f0200,                                     /* blr x16 */
	    0xf90057e0,                                     /* str x0, [sp, #168] */
	    0xa94007e0, 0xa9410fe2, 0xa94217e4, 0xa9431fe6, 0xa94427e8,
	    0xa9452fea, 0xa94637ec, 0xa9473fee, 0xa94847f0, /* ldp x0..x17 */
	    0xf9404bf2,                                     /* ldr x18, [sp, #144] */
	    0xa94a7bfd,                                     /* ldp x29, x30, [sp, #160] */
	    0x9102c3ff,                                     /* add sp, sp, #0xb0 */
	    0xd65f03c0,                                     /* ret */
	    0xd503201f,                                     /* nop */
	    0x56789abc, 0x00001234,                         /* exit handler */
	};
	uint8_t buf[HOOK_ARCH_RETURN_TRAMPOLINE_MAX];

	(void)state;
	assert_int_equal(a64_emit_return_trampoline(buf, TR, HANDLER), sizeof(want));
	expect_words(buf, want, sizeof(want) / 4);
	assert_int_equal(a64_emit_return_trampoline(buf, TR + 4, HANDLER), 0);
}

/* The far form: adrp/add/br x16 over three displaced instructions. */
static void test_far(void **state)
{
	static const uint32_t code_w[] = {
	    0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! */
	    0x910003fd, /* mov x29, sp */
	    0x94000010, /* bl .+0x40 (0x400048) */
	};
	static const uint32_t patch[] = {
	    0xf03fe910, /* adrp x16, 0x80123000 */
	    0x91114210, /* add x16, x16, #0x450 */
	    0xd61f0200, /* br x16 */
	};
	static const uint32_t body[] = {
	    0xa9bf7bfd, 0x910003fd, /* copied */
	    0xd280019e,             /* mov x30, #0xc */
	    0xf2a0081e,             /* movk x30, #0x40, lsl #16 */
	    0xd2800910,             /* mov x16, #0x48 */
	    0xf2a00810,             /* movk x16, #0x40, lsl #16 */
	    0xd61f0200,             /* br x16 */
	    0xd2800190,             /* mov x16, #0xc */
	    0xf2a00810,             /* movk x16, #0x40, lsl #16 */
	    0xd61f0200,             /* br x16 (back behind the patch) */
	};
	const uint64_t tr = 0x80123450;
	struct hook_arch_plan plan;
	uint8_t code[12], out[HOOK_ARCH_MAX_PATCH], buf[HOOK_ARCH_MAX_TRAMPOLINE];
	size_t starts[HOOK_ARCH_MAX_INSNS];

	(void)state;
	memcpy(code, code_w, sizeof(code));
	assert_int_equal(a64_prepare_far(code, FN, 8, &plan), ADA_SKIP_TOO_SHORT);
	assert_int_equal(a64_prepare_far(code, FN, 12, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 12);
	assert_int_equal(plan.insn_count, 3);
	assert_int_equal(a64_patch_bytes(&plan, tr, out), 0);
	expect_words(out, patch, 3);
	assert_int_equal(a64_patch_target(&plan, out), tr);
	assert_int_equal(a64_emit_trampoline(&plan, buf, tr, FN_ID, HANDLER, tr, starts),
	                 A64_BODY_OFF + sizeof(body));
	expect_words(buf + A64_BODY_OFF, body, sizeof(body) / 4);
	/* a thread stopped at fn+4 or fn+8 resumes at their relocated forms */
	assert_int_equal(a64_moved_pc(&plan, buf, tr, FN + 4), tr + A64_BODY_OFF + 4);
	assert_int_equal(a64_moved_pc(&plan, buf, tr, FN + 8), tr + A64_BODY_OFF + 8);
	assert_int_equal(a64_moved_pc(&plan, buf, tr, FN + 6), 0);
	buf[A64_BODY_OFF + 4] ^= 1; /* not the trampoline this plan emits */
	assert_int_equal(a64_moved_pc(&plan, buf, tr, FN + 4), 0);
	/* beyond adrp's +-4 GiB */
	assert_int_not_equal(a64_patch_bytes(&plan, FN + (5ull << 30), out), 0);
}

/* A conditional branch relocated where its target is beyond b's reach
 * (only the far form puts a trampoline that far). */
static void test_far_cond(void **state)
{
	static const uint32_t code_w[] = {0x54000201, 0xd503201f, 0xd503201f}; /* b.ne .+0x40 */
	static const uint32_t body[] = {
	    0x54000080, /* b.eq 0x801234f0 (over the branch) */
	    0xd2800810, /* mov x16, #0x40 */
	    0xf2a00810, /* movk x16, #0x40, lsl #16 */
	    0xd61f0200, /* br x16 */
	    0xd503201f, 0xd503201f, 0xd2800190, 0xf2a00810, 0xd61f0200, /* back to 0x40000c */
	};
	struct hook_arch_plan plan;
	uint8_t code[12], buf[HOOK_ARCH_MAX_TRAMPOLINE];

	(void)state;
	memcpy(code, code_w, sizeof(code));
	assert_int_equal(a64_prepare_far(code, FN, 12, &plan), ADA_HOOK_OK);
	assert_int_equal(
	    a64_emit_trampoline(&plan, buf, 0x80123450, FN_ID, HANDLER, 0x80123450, NULL),
	    A64_BODY_OFF + sizeof(body));
	expect_words(buf + A64_BODY_OFF, body, sizeof(body) / 4);
}

static enum ada_hook_skip verdict_far(const uint32_t *w, size_t n)
{
	struct hook_arch_plan plan;
	uint8_t code[64];
	memcpy(code, w, 4 * n);
	return a64_prepare_far(code, FN, 4 * n, &plan);
}

static void test_far_verdicts(void **state)
{
	static const uint32_t into[] = {0xa9bf7bfd, 0x910003fd, 0xd503201f,
	                                0x17ffffff}; /* b fn+8 */
	static const uint32_t to_entry[] = {0xa9bf7bfd, 0x910003fd, 0xd503201f, 0x17fffffd};
	static const uint32_t past[] = {0xa9bf7bfd, 0x910003fd, 0xd503201f,
	                                0x54ffffe0}; /* b.eq fn+12? */
	static const uint32_t adr_in[] = {0xa9bf7bfd, 0x910003fd, 0xd503201f, 0x10ffffc0};
	static const uint32_t table[] = {0xa9bf7bfd, 0x910003fd, 0xd503201f,
	                                 0xd61f0020}; /* br x1 */
	static const uint32_t bl0[] = {0x94000010, 0x910003fd, 0xd503201f};
	static const uint32_t bl2[] = {0xa9bf7bfd, 0x910003fd, 0x94000010};
	(void)state;
	assert_int_equal(verdict_far(into, 4), ADA_SKIP_BRANCH_INTO_PATCH);
	assert_int_equal(verdict_far(to_entry, 4), ADA_HOOK_OK);              /* b fn: re-entry */
	assert_int_equal(verdict_far(past, 4), ADA_SKIP_BRANCH_INTO_PATCH);   /* b.eq fn+8 */
	assert_int_equal(verdict_far(adr_in, 4), ADA_SKIP_BRANCH_INTO_PATCH); /* adr x0, fn+4 */
	assert_int_equal(verdict_far(table, 4), ADA_SKIP_JUMP_TABLE);
	assert_int_equal(verdict_far(bl0, 3), ADA_SKIP_UNRELOCATABLE); /* returns to fn+4 */
	assert_int_equal(verdict_far(bl2, 3), ADA_HOOK_OK);            /* returns to fn+12 */
}

/* The count-only block (a64_count.c) right after its trampoline: short
 * TLS offsets, slot 5; then the long forms (offsets beyond the loads'
 * immediates, slot 600, the trampoline 256 MiB away). */
static void test_count_block(void **state)
{
	static const uint32_t near[] = {
	    0xd53bd050, /* mrs x16, tpidr_el0 */
	    0xb9401211, /* ldr w17, [x16, #16] */
	    0x7100063f, /* cmp w17, #0x1 */
	    0x54000141, /* b.ne 0x500134 (full) */
	    0xf9400e10, /* ldr x16, [x16, #24] */
	    0x9100a210, /* add x16, x16, #0x28 */
	    0xf81f0fef, /* str x15, [sp, #-16]! */
	    0xc85f7e11, /* ldxr x17, [x16] */
	    0x91000631, /* add x17, x17, #0x1 */
	    0xc80f7e11, /* stxr w15, x17, [x16] */
	    0x35ffffaf, /* cbnz w15, 0x50011c */
	    0xf84107ef, /* ldr x15, [sp], #16 */
	    0x17ffffd8, /* b 0x500090 (the trampoline's body) */
	    0x17ffffb3, /* full: b 0x500000 (the trampoline) */
	};
	static const uint32_t far[] = {
	    0xd53bd050, /* mrs x16, tpidr_el0 */
	    0xd2880091, /* mov x17, #0x4004 */
	    0xb8716a11, /* ldr w17, [x16, x17] */
	    0x7100063f, /* cmp w17, #0x1 */
	    0x540001c1, /* b.ne 0x248 */
	    0xd2900111, /* mov x17, #0x8008 */
	    0xf8716a10, /* ldr x16, [x16, x17] */
	    0xd2825811, /* mov x17, #0x12c0 */
	    0x8b110210, /* add x16, x16, x17 */
	    0xf81f0fef, /* str x15, [sp, #-16]! */
	    0xc85f7e11, /* ldxr x17, [x16] */
	    0x91000631, /* add x17, x17, #0x1 */
	    0xc80f7e11, /* stxr w15, x17, [x16] */
	    0x35ffffaf, /* cbnz w15, 0x228 */
	    0xf84107ef, /* ldr x15, [sp], #16 */
	    0xd2801210, /* mov x16, #0x90 */
	    0xf2a20a10, /* movk x16, #0x1050, lsl #16 */
	    0xd61f0200, /* br x16 (body) */
	    0xd2800010, /* mov x16, #0x0 */
	    0xf2a20a10, /* movk x16, #0x1050, lsl #16 */
	    0xd61f0200, /* br x16 (the trampoline) */
	};
	uint8_t buf[A64_COUNT_BLOCK_MAX];

	(void)state;
	assert_int_equal(a64_emit_count_block(buf, TR + 0x100, 16, 24, 5, TR), sizeof(near));
	expect_words(buf, near, sizeof(near) / 4);
	assert_int_equal(a64_emit_count_block(buf, 0x200, 0x4004, 0x8008, 600, 0x10500000),
	                 sizeof(far));
	expect_words(buf, far, sizeof(far) / 4);
	/* every long form at once fits the bound */
	assert_int_not_equal(
	    a64_emit_count_block(buf, 0x200, -0x7ffffff8, -0x7ffffff8, (1u << 28) - 1, 1ull << 47),
	    0);
	assert_int_equal(a64_emit_count_block(buf, 0x200, 16, 24, 1u << 28, TR), 0);
	assert_int_equal(a64_emit_count_block(buf, 0x202, 16, 24, 5, TR), 0);
}

static void test_ends_fill(void **state)
{
	static const uint32_t ret_w[] = {0xa9bf7bfd, 0xd65f03c0};
	static const uint32_t call_w[] = {0xa9bf7bfd, 0x94000010};
	static const uint32_t fill_w[] = {0xd503201f, 0x00000000, 0xd503201f, 0xa9bf7bfd};
	uint8_t b[16];

	(void)state;
	memcpy(b, ret_w, 8);
	assert_true(a64_ends_closed(b, FN, 8));
	assert_false(a64_ends_closed(b, FN, 6));
	memcpy(b, call_w, 8);
	assert_false(a64_ends_closed(b, FN, 8));
	memcpy(b, fill_w, 16);
	assert_int_equal(a64_fill_len(b, 16), 12);
	assert_int_equal(a64_fill_len(b, 10), 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame),
	    cmocka_unit_test(test_adr),
	    cmocka_unit_test(test_adrp_page),
	    cmocka_unit_test(test_ldr_literal),
	    cmocka_unit_test(test_ldr_literal_simd),
	    cmocka_unit_test(test_b_bl),
	    cmocka_unit_test(test_b_bl_far),
	    cmocka_unit_test(test_cond),
	    cmocka_unit_test(test_blr),
	    cmocka_unit_test(test_verdicts),
	    cmocka_unit_test(test_patch),
	    cmocka_unit_test(test_return_trampoline),
	    cmocka_unit_test(test_far),
	    cmocka_unit_test(test_far_cond),
	    cmocka_unit_test(test_far_verdicts),
	    cmocka_unit_test(test_count_block),
	    cmocka_unit_test(test_ends_fill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
