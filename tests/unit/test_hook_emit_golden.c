/*
 * The x86_64 emitter's output pinned byte for byte: every stub kind the
 * agent emits (the ordinary and the fast trampoline over prologues of
 * each relocation case, the patch bytes, the ordinary and the fast
 * return trampoline, the enter stub of the index lane, of the detail
 * lane with and without the member paths in machine code, the count-only
 * block), with fixed
 * inputs and addresses, compared with the golden bytes in
 * tests/data/x86_emit_golden/<name>.hex (two hex digits a byte, 32 a
 * line). The golden files were written by this program (`--write DIR`)
 * against the emitter of hex strings, before the named writers
 * (x86_writer.h) replaced them: the rewrite changes no byte.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hook_arch.h"

#define GOLD_FN 0x0000555555601000ull /* the hooked function */
#define GOLD_TR 0x0000555555a00000ull /* its trampoline */
#define GOLD_RT 0x0000555555900000ull /* the block's return trampoline */
#define GOLD_ST 0x0000555555901000ull /* the block's enter stub */
#define GOLD_FN_ID 0x0000000700000123ull
#define GOLD_MAX 2048

static const char *gold_dir;
static int gold_write;

/* Writes or compares buf[0..n) as <gold_dir>/<name>.hex. */
static void gold_check(const char *name, const uint8_t *buf, size_t n)
{
	char path[512], line[80], want[2 * GOLD_MAX + 1] = "", got[2 * GOLD_MAX + 1];

	assert_true(n > 0 && n <= GOLD_MAX);
	for (size_t i = 0; i < n; i++)
		snprintf(got + 2 * i, 3, "%02x", buf[i]);
	snprintf(path, sizeof(path), "%s/%s.hex", gold_dir, name);
	if (gold_write) {
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		for (size_t i = 0; i < 2 * n; i += 64)
			fprintf(f, "%.64s\n", got + i);
		assert_int_equal(fclose(f), 0);
		return;
	}
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		strncat(want, line, strcspn(line, "\n"));
	fclose(f);
	if (strcmp(want, got) != 0) {
		size_t i = 0;
		while (want[i] == got[i])
			i++;
		fail_msg("%s: differs from byte %zu (want %.16s.., got %.16s..)", name, i / 2,
		         want + (i & ~(size_t)1), got + (i & ~(size_t)1));
	}
}

/* Prologues of each relocation case (x86_reloc.c), hooked at GOLD_FN. */
static const struct gold_fn {
	const char *name;
	uint8_t code[16];
	size_t len;
} gold_fns[] = {
    /* push rbp; mov rbp, rsp; sub rsp, 16; leave; ret */
    {"plain", {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3}, 10},
    /* mov rax, [rip+0x1000]; ret */
    {"rip", {0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, 0xc3}, 8},
    /* lea r12, [rip+0x7ff00000]; ret: movabs (far) */
    {"rip_lea", {0x4c, 0x8d, 0x25, 0x00, 0x00, 0xf0, 0x7f, 0xc3}, 8},
    /* test edi, edi; je +0x10; nop*4 ..; ret */
    {"jcc", {0x85, 0xff, 0x74, 0x10, 0x90, 0x90, 0x90, 0x90, 0xc3}, 9},
    /* call rel32 +0xffb; ret */
    {"call", {0xe8, 0xfb, 0x0f, 0x00, 0x00, 0xc3}, 6},
    /* call [rip+0xff5]; ret */
    {"call_rip", {0xff, 0x15, 0xf5, 0x0f, 0x00, 0x00, 0xc3}, 7},
    /* endbr64; push rbp; mov rbp, rsp; pop rbp; ret */
    {"endbr", {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3}, 10},
};

static void test_trampolines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(gold_fns) / sizeof(gold_fns[0]); i++) {
		const struct gold_fn *g = &gold_fns[i];
		struct hook_arch_plan plan;
		uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE], patch[HOOK_ARCH_MAX_PATCH];
		char name[64];

		assert_int_equal(hook_arch_prepare(g->code, GOLD_FN, g->len, &plan), ADA_HOOK_OK);
		size_t n = hook_arch_emit_trampoline(&plan, buf, GOLD_TR, GOLD_FN_ID,
		                                     0x7f0012345670, GOLD_RT);
		snprintf(name, sizeof(name), "tramp_%s", g->name);
		gold_check(name, buf, n);
		n = hook_arch_emit_trampoline_fast(&plan, buf, GOLD_TR, GOLD_FN_ID, GOLD_ST,
		                                   GOLD_RT);
		snprintf(name, sizeof(name), "tramp_fast_%s", g->name);
		gold_check(name, buf, n);
		hook_arch_patch_bytes(&plan, GOLD_TR, patch);
		snprintf(name, sizeof(name), "patch_%s", g->name);
		gold_check(name, patch, plan.patch_len);
	}
}

/* Offsets as the agent's would be: negative %fs offsets, distinct. */
static struct hook_arch_fast gold_fast(int lane)
{
	struct hook_arch_fast f = {
	    .s_base = -0x1000,
	    .s_top = -0xff8,
	    .s_cap = -0xff4,
	    .s_guard = -0xff0,
	    .s_in_hook = -0xfec,
	    .s_inherited = -0xfe8,
	    .p_events = -0x800,
	    .p_mask = -0x7f8,
	    .p_head = -0x7f0,
	    .p_limit = -0x7e8,
	    .p_head_pub = -0x7e0,
	    .p_tid_call = -0x7d8,
	    .p_tid_return = -0x7d0,
	    .ret_tramp = GOLD_RT,
	    .enter_full = 0x7f0000001110,
	    .enter_held = 0x7f0000002220,
	    .exit_full = 0x7f0000003330,
	    .exit_held = 0x7f0000004440,
	    .flush = 0x7f0000005550,
	};
	if (lane == 0)
		return f;
	f.detail_hot = 0x7f0000100000;
	f.enter_member = 0x7f0000006660;
	f.exit_member = 0x7f0000007770;
	f.h_ks_cur = 0x10, f.h_ks_area = 0x18, f.h_ks_mask = 0x20, f.h_dset = 0x28;
	f.d_all = 0x4, f.d_nbits = 0x8, f.d_max_mod = 0x10, f.d_bits = 0x18;
	f.module = 7;
	if (lane == 1)
		return f;
	f.detail_rec = 1;
	f.p_dwords = -0x7c8, f.p_dhead = -0x7c0, f.p_dbytes = -0x7b8, f.p_dpos = -0x7b0;
	f.p_dstop = -0x7a8, f.p_dcount = -0x7a0;
	f.s_dfast_lo = -0xfe0, f.s_dfast_span = -0xfd8;
	return f;
}

static void test_stubs(void **state)
{
	static const char *const lanes[] = {"index", "detail", "detail_rec"};
	uint8_t buf[GOLD_MAX];
	char name[64];

	(void)state;
	gold_check("return", buf, hook_arch_emit_return_trampoline(buf, GOLD_RT, 0x7f0000003330));
	for (int lane = 0; lane < 3; lane++) {
		struct hook_arch_fast f = gold_fast(lane);
		snprintf(name, sizeof(name), "enter_stub_%s", lanes[lane]);
		gold_check(name, buf, hook_arch_emit_enter_stub(buf, GOLD_ST, &f));
		snprintf(name, sizeof(name), "return_fast_%s", lanes[lane]);
		gold_check(name, buf, hook_arch_emit_return_trampoline_fast(buf, GOLD_RT, &f));
	}
	/* A module id past the detail test's 2^24 bound: no stub. */
	struct hook_arch_fast f = gold_fast(1);
	f.module = 1u << 24;
	assert_int_equal(hook_arch_emit_enter_stub(buf, GOLD_ST, &f), 0);
}

/* The count-only block (x86_64/x86_emit_count.c) of the fast trampoline
 * at GOLD_TR, written after it: cmp fs:gate; jne exit (rel8); push r11;
 * mov r11, fs:counters; add [r11+8*slot], 1; pop r11; jmp GOLD_TR+30
 * (the relocated prologue); exit: jmp GOLD_TR (checked by disassembly
 * when the file was written). */
static void test_count_block(void **state)
{
	uint8_t buf[HOOK_ARCH_COUNT_BLOCK_MAX];

	(void)state;
	size_t n = hook_arch_emit_count_block(buf, GOLD_TR + 0x100, -0x40, -0x38, 5, GOLD_TR);
	assert_int_equal(n, 42);
	gold_check("count_block", buf, n);
	/* A slot whose offset would not fit the disp32: no block. */
	assert_int_equal(
	    hook_arch_emit_count_block(buf, GOLD_TR + 0x100, -0x40, -0x38, 1u << 28, GOLD_TR), 0);
}

/* The %gs form (HOOK_ARCH_COUNT_GS: the thread's %gs base is its
 * counters, agent_count.c): cmp fs:gate; jne exit (rel8); cmp qword
 * gs:[-8], HOOK_ARCH_COUNT_GS_TAG (65 48 81 3c 25 f8ff ffff imm32); jne
 * exit; add qword gs:[8*slot], 1 (65 48 83 04 25 disp32 01); jmp
 * GOLD_TR+30; exit: jmp GOLD_TR; and inline, the same five instructions
 * (their jne's to its own exit), then the relocated prologue and the
 * jump back, then the exit. */
static void test_count_block_gs(void **state)
{
	uint8_t buf[HOOK_ARCH_COUNT_BLOCK_MAX], in[HOOK_ARCH_COUNT_INLINE_MAX];
	static const uint8_t add[] = {0x65, 0x48, 0x83, 0x04, 0x25, 0x28, 0, 0, 0, 0x01};
	static const uint8_t tag[] = {0x65, 0x48, 0x81, 0x3c, 0x25, 0xf8, 0xff,
	                              0xff, 0xff, 0x61, 0x64, 0x63, 0x74};
	struct hook_arch_reloc_map map;
	struct hook_arch_plan plan;

	(void)state;
	size_t n =
	    hook_arch_emit_count_block(buf, GOLD_TR + 0x100, -0x40, HOOK_ARCH_COUNT_GS, 5, GOLD_TR);
	assert_int_equal(n, 46);
	gold_check("count_block_gs", buf, n);
	assert_memory_equal(buf + 11, tag, sizeof(tag)); /* "adct" at gs:[-8] */
	assert_memory_equal(buf + 26, add, sizeof(add)); /* slot 5: disp32 0x28 */
	assert_int_equal(buf[9], 0x75);
	assert_int_equal(buf[10], 41 - 11); /* jne exit: the last 5 bytes */
	assert_int_equal(buf[25], 41 - 26);
	assert_int_equal(hook_arch_prepare(gold_fns[0].code, GOLD_FN, gold_fns[0].len, &plan),
	                 ADA_HOOK_OK);
	size_t m = hook_arch_emit_count_block_inline(&plan, in, GOLD_TR + 0x100, -0x40,
	                                             HOOK_ARCH_COUNT_GS, 5, GOLD_TR, &map);
	assert_true(m > 36);
	assert_memory_equal(in, buf, 10);
	assert_memory_equal(in + 11, buf + 11, 14);
	assert_memory_equal(in + 26, buf + 26, 10);
	assert_int_equal(in[10], m - 5 - 11); /* each jne to its own exit */
	assert_int_equal(in[25], m - 5 - 26);
	static const uint8_t plain[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xe9};
	assert_memory_equal(in + 36, plain, sizeof(plain));
	assert_int_equal(map.at[0], 36);
}

/* The inline count block (hook_arch_emit_count_block_inline) at
 * GOLD_TR + 0x100: the count block's first six instructions, byte for
 * byte, then the prologue relocated as a fast trampoline whose body
 * would start at the same address relocates it (so each relocation case
 * is the one pinned above), and nothing of the trampoline jumped to. */
static void test_count_block_inline(void **state)
{
	(void)state;
	uint8_t blk[HOOK_ARCH_COUNT_BLOCK_MAX], in[HOOK_ARCH_COUNT_INLINE_MAX],
	    tr[HOOK_ARCH_MAX_TRAMPOLINE];
	const uint64_t at = GOLD_TR + 0x100, test_len = 32, body_off = 30;
	struct hook_arch_reloc_map map, tmap;
	assert_int_equal(hook_arch_emit_count_block(blk, at, -0x40, -0x38, 5, GOLD_TR), 42);
	for (size_t i = 0; i < sizeof(gold_fns) / sizeof(gold_fns[0]); i++) {
		struct hook_arch_plan plan;
		assert_int_equal(
		    hook_arch_prepare(gold_fns[i].code, GOLD_FN, gold_fns[i].len, &plan),
		    ADA_HOOK_OK);
		size_t n = hook_arch_emit_count_block_inline(&plan, in, at, -0x40, -0x38, 5,
		                                             GOLD_TR, &map);
		size_t t = hook_arch_emit_trampoline_fast_map(&plan, tr, at + test_len - body_off,
		                                              GOLD_FN_ID, GOLD_ST, GOLD_RT, &tmap);
		assert_true(n > test_len + 5 && t > body_off);
		assert_int_equal(n - 5 - test_len, t - body_off);
		assert_memory_equal(in, blk, 10); /* but the jne's rel8: its own exit */
		assert_memory_equal(in + 11, blk + 11, test_len - 11);
		assert_int_equal(in[10], n - 5 - 11);
		assert_memory_equal(in + test_len, tr + body_off, n - 5 - test_len);
		assert_memory_equal(in + n - 5, blk + 37, 1); /* exit: jmp GOLD_TR */
		/* The crash map: the same copies, test_len - body_off further on. */
		assert_int_equal(map.n, tmap.n);
		for (size_t k = 0; k < map.n; k++) {
			assert_int_equal(map.off[k], tmap.off[k]);
			assert_int_equal(map.at[k], tmap.at[k] + test_len - body_off);
		}
		assert_int_equal(map.end_at, tmap.end_at + test_len - body_off);
		assert_int_equal(map.end_off, tmap.end_off);
	}
	/* plain: push rbp; mov rbp, rsp; sub rsp, 16 copied, then jmp back. */
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare(gold_fns[0].code, GOLD_FN, gold_fns[0].len, &plan),
	                 ADA_HOOK_OK);
	size_t n = hook_arch_emit_count_block_inline(&plan, in, at, -0x40, -0x38, 5, GOLD_TR, &map);
	static const uint8_t plain[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xe9};
	assert_memory_equal(in + test_len, plain, sizeof(plain));
	int32_t rel;
	memcpy(&rel, in + test_len + sizeof(plain), 4);
	assert_int_equal(at + n - 5 + (uint64_t)(int64_t)rel, GOLD_FN + plan.patch_len);
	memcpy(&rel, in + n - 4, 4);
	assert_int_equal(at + n + (uint64_t)(int64_t)rel, GOLD_TR); /* the exit */
	/* A slot out of the disp32's range: no block of either form. */
	assert_int_equal(
	    hook_arch_emit_count_block_inline(&plan, in, at, -0x40, -0x38, 1u << 28, GOLD_TR, &map),
	    0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trampolines),    cmocka_unit_test(test_stubs),
	    cmocka_unit_test(test_count_block),    cmocka_unit_test(test_count_block_inline),
	    cmocka_unit_test(test_count_block_gs),
	};

	gold_dir = ADA_EMIT_GOLDEN_DIR;
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		gold_dir = argv[2];
		gold_write = 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
