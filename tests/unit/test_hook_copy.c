/*
 * Unit tests of the x86_64 count block's copy form
 * (hook_arch_emit_count_block_copy, x86_64/x86_emit_copy.c): function
 * bytes at a fake address, the block emitted at another, decoded back
 * with capstone: the count test, then the function's first bytes up to a
 * ret or jmp, each an exact equivalent at the block's address (rip-relative
 * targets kept, branches into the copy aimed at the copy, branches out of
 * it at the original), no call copied, nothing when no such prefix fits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <capstone/capstone.h>

#include "hook_arch.h"

#define FN 0x400000ull
#define BLK 0x500040ull
#define TRAMP 0x500400ull
#define GATE (-0x490)
#define SLOT 7

/* One decoded instruction: its id, address, size, and the address it
 * branches to or reads rip-relative (0: neither). */
struct dec {
	unsigned id;
	uint64_t addr, to;
	size_t size;
};

static size_t decode(const uint8_t *buf, size_t n, uint64_t addr, struct dec *out, size_t cap)
{
	csh cs;
	cs_insn *ci;
	assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &cs), CS_ERR_OK);
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	size_t k = cs_disasm(cs, buf, n, addr, 0, &ci), m = 0;
	for (size_t i = 0; i < k && m < cap; i++, m++) {
		const cs_x86 *x = &ci[i].detail->x86;
		out[m] = (struct dec){ci[i].id, ci[i].address, 0, ci[i].size};
		for (unsigned j = 0; j < x->op_count; j++) {
			if (x->operands[j].type == X86_OP_IMM && x->op_count == 1)
				out[m].to = (uint64_t)x->operands[j].imm;
			if (x->operands[j].type == X86_OP_MEM &&
			    x->operands[j].mem.base == X86_REG_RIP)
				out[m].to =
				    ci[i].address + ci[i].size + (uint64_t)x->operands[j].mem.disp;
		}
	}
	cs_free(ci, k);
	cs_close(&cs);
	return m;
}

/* Emits the copy block of code (the %gs form); its length (0: none) and
 * its instructions after the five of the count test in d[5..], without
 * the exit behind them (jmp TRAMP, where the test's two jne's go). */
static size_t emit(const uint8_t *code, size_t size, size_t avail, uint8_t *buf,
                   struct hook_arch_copy_map *map, struct dec *d, size_t *nd)
{
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare(code, FN, size, &plan), ADA_HOOK_OK);
	memset(buf, 0xcc, HOOK_ARCH_COUNT_COPY_MAX);
	size_t n = hook_arch_emit_count_block_copy(&plan, code, avail, buf, BLK, GATE,
	                                           HOOK_ARCH_COUNT_GS, SLOT, TRAMP, map);
	*nd = n ? decode(buf, n, BLK, d, 64) : 0;
	if (n) { /* the count test, as the other forms have it */
		assert_true(*nd > 5);
		const struct dec *exit = &d[*nd - 1];
		assert_int_equal(exit->addr + exit->size, BLK + n); /* whole */
		assert_int_equal(exit->id, X86_INS_JMP);
		assert_int_equal(exit->to, TRAMP);
		assert_int_equal(d[0].id, X86_INS_CMP);
		assert_int_equal(d[1].id, X86_INS_JNE);
		assert_int_equal(d[1].size, 2); /* rel8 */
		assert_int_equal(d[1].to, exit->addr);
		assert_int_equal(d[2].id, X86_INS_CMP);
		assert_int_equal(d[3].id, X86_INS_JNE);
		assert_int_equal(d[3].to, exit->addr);
		assert_int_equal(d[4].id, X86_INS_ADD);
		assert_int_equal(d[5].addr - BLK, 36); /* 8 bytes fewer than rel32 jne's */
		(*nd)--;
	}
	return n;
}

/* addq $1, x(%rip); lea 1(%rdi), %rax; ret: the whole leaf, its
 * rip-relative operand still aimed at x; no jump back; the map. */
static void test_copy_leaf(void **state)
{
	static const uint8_t code[] = {0x48, 0x83, 0x05, 0x10, 0x20, 0x00, 0x00, 0x01, /* addq */
	                               0x48, 0x8d, 0x47, 0x01, 0xc3};
	uint8_t buf[HOOK_ARCH_COUNT_COPY_MAX];
	struct hook_arch_copy_map map;
	struct dec d[64];
	size_t nd;
	(void)state;
	size_t n = emit(code, sizeof(code), sizeof(code), buf, &map, d, &nd);
	assert_true(n > 0);
	assert_int_equal(nd, 8);
	assert_int_equal(d[5].id, X86_INS_ADD);
	assert_int_equal(d[5].to, FN + 8 + 0x2010);
	assert_int_equal(d[6].id, X86_INS_LEA);
	assert_int_equal(d[7].id, X86_INS_RET);
	size_t at = d[5].addr - BLK;
	assert_int_equal(map.n, 3);
	assert_int_equal(map.off[0], 0);
	assert_int_equal(map.at[0], at);
	assert_int_equal(map.off[1], 8);
	assert_int_equal(map.at[1], at + 8);
	assert_int_equal(map.off[2], 12);
	assert_int_equal(map.at[2], at + 12);
	/* The pointer form's test and count, then the same copy. */
	struct hook_arch_plan plan;
	assert_int_equal(hook_arch_prepare(code, FN, sizeof(code), &plan), ADA_HOOK_OK);
	size_t p = hook_arch_emit_count_block_copy(&plan, code, sizeof(code), buf, BLK, GATE,
	                                           -0x488, SLOT, TRAMP, &map);
	assert_true(p > 0);
	nd = decode(buf, p, BLK, d, 64);
	assert_int_equal(d[nd - 1].id, X86_INS_JMP); /* the exit */
	assert_int_equal(d[nd - 2].id, X86_INS_RET);
	assert_int_equal(d[nd - 4].to, FN + 8 + 0x2010);
}

/* test; je over the add (inside the copy: to its copy); addq x(%rip);
 * mov; ret. And a jne back to the entry: to the original entry (the
 * patch, which counts again as the original does). */
static void test_copy_branch_inside(void **state)
{
	static const uint8_t code[] = {0x48, 0x85, 0xff,                               /* test */
	                               0x74, 0x08,                                     /* je +8 */
	                               0x48, 0x83, 0x05, 0x00, 0x01, 0x00, 0x00, 0x01, /* addq */
	                               0x48, 0x89, 0xf8, 0xc3};
	static const uint8_t back[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0x31, 0xc0, 0xc3};
	uint8_t buf[HOOK_ARCH_COUNT_COPY_MAX];
	struct hook_arch_copy_map map;
	struct dec d[64];
	size_t nd;
	(void)state;
	assert_true(emit(code, sizeof(code), sizeof(code), buf, &map, d, &nd) > 0);
	assert_int_equal(nd, 10);
	assert_int_equal(d[6].id, X86_INS_JE);
	assert_int_equal(d[6].to, d[8].addr); /* the copy of the mov */
	assert_int_equal(d[7].to, FN + 13 + 0x100);
	assert_int_equal(d[8].id, X86_INS_MOV);
	assert_int_equal(d[9].id, X86_INS_RET);
	assert_true(emit(back, sizeof(back), sizeof(back), buf, &map, d, &nd) > 0);
	assert_int_equal(d[6].id, X86_INS_JNE);
	assert_int_equal(d[6].to, FN);
	assert_int_equal(d[nd - 1].id, X86_INS_RET);
}

/* cmp; ja far (past what is copied: to the original); mov x(%rip); ret;
 * fill; far: lea; ret. Only the first part is copied. */
static void test_copy_branch_out(void **state)
{
	uint8_t code[0x90];
	static const uint8_t head[] = {0x48, 0x83, 0xff, 0x02,                   /* cmp */
	                               0x0f, 0x87, 0x76, 0x00, 0x00, 0x00,       /* ja 0x80 */
	                               0x48, 0x8b, 0x05, 0x00, 0x30, 0x00, 0x00, /* mov */
	                               0xc3};
	uint8_t buf[HOOK_ARCH_COUNT_COPY_MAX];
	struct hook_arch_copy_map map;
	struct dec d[64];
	size_t nd;
	(void)state;
	memset(code, 0x90, sizeof(code));
	memcpy(code, head, sizeof(head));
	memcpy(code + 0x80, "\x48\x8d\x47\x05\xc3", 5);
	assert_true(emit(code, sizeof(code), sizeof(code), buf, &map, d, &nd) > 0);
	assert_int_equal(nd, 9);
	assert_int_equal(d[6].id, X86_INS_JA);
	assert_int_equal(d[6].to, FN + 0x80);
	assert_int_equal(d[7].to, FN + 17 + 0x3000);
	assert_int_equal(d[8].id, X86_INS_RET);
}

/* A tail jmp (the whole function) and a jmp rel8 over dead bytes (its
 * target inside the copy) end the flow too. */
static void test_copy_jmp(void **state)
{
	static const uint8_t tail[] = {0xe9, 0xfb, 0x0f, 0x00, 0x00};
	static const uint8_t over[] = {0xeb, 0x06, 0x0f, 0x0b, 0x90, 0x90, 0x90,
	                               0x90, 0x48, 0x8d, 0x47, 0x02, 0xc3};
	uint8_t buf[HOOK_ARCH_COUNT_COPY_MAX];
	struct hook_arch_copy_map map;
	struct dec d[64];
	size_t nd;
	(void)state;
	assert_true(emit(tail, sizeof(tail), sizeof(tail), buf, &map, d, &nd) > 0);
	assert_int_equal(nd, 6);
	assert_int_equal(d[5].id, X86_INS_JMP);
	assert_int_equal(d[5].to, FN + 0x1000);
	assert_true(emit(over, sizeof(over), sizeof(over), buf, &map, d, &nd) > 0);
	assert_int_equal(d[5].id, X86_INS_JMP);
	assert_int_equal(d[5].to, d[nd - 2].addr); /* the lea's copy */
	assert_int_equal(d[nd - 1].id, X86_INS_RET);
}

/* None: a call before any ret (its relocated push/jmp would leave the
 * return-stack buffer out of step), a ret beyond what is the function's
 * (avail) or beyond the decoded span, a copy that does not fit. */
static void test_copy_none(void **state)
{
	static const uint8_t call[] = {0x53, 0x31, 0xf6, 0xff, 0x57, 0x08, 0x5b, 0xc3};
	static const uint8_t leaf[] = {0x48, 0x89, 0xf8, 0x48, 0x83, 0xc0, 0x03, 0xc3};
	uint8_t code[HOOK_ARCH_COUNT_COPY_SPAN + 8];
	uint8_t buf[HOOK_ARCH_COUNT_COPY_MAX];
	struct hook_arch_copy_map map;
	struct dec d[64];
	size_t nd;
	(void)state;
	assert_int_equal(emit(call, sizeof(call), sizeof(call), buf, &map, d, &nd), 0);
	assert_int_equal(emit(leaf, sizeof(leaf), sizeof(leaf) - 1, buf, &map, d, &nd), 0);
	assert_true(emit(leaf, sizeof(leaf), sizeof(leaf), buf, &map, d, &nd) > 0);
	memset(code, 0x90, sizeof(code));
	memcpy(code, leaf, 7); /* its ret after the span */
	code[sizeof(code) - 1] = 0xc3;
	assert_int_equal(emit(code, sizeof(code), sizeof(code), buf, &map, d, &nd), 0);
	/* 88 bytes of 8-byte nops and a ret: within the span, but the block
	 * would be 36 + 89 + 5 (the exit) > HOOK_ARCH_COUNT_COPY_MAX; the last 40 and the
	 * ret fit. */
	for (size_t i = 0; i < 88; i += 8)
		memcpy(code + i, "\x0f\x1f\x84\x00\x00\x00\x00\x00", 8);
	code[88] = 0xc3;
	assert_int_equal(emit(code, 89, 89, buf, &map, d, &nd), 0);
	assert_true(emit(code + 48, 41, 41, buf, &map, d, &nd) > 0);
	assert_int_equal(d[nd - 1].id, X86_INS_RET);
}

/* The crash handler's map holds every copied instruction, the ninth as
 * the first (a fault on any of them names the function: issue 33), not
 * a trampoline map's first five. */
static void test_copy_map_every(void **state)
{
	static const uint8_t code[] = {
	    0x48, 0x89, 0xf8, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf8, /* mov %rdi, %rax x 6 */
	    0x48, 0x89, 0xf8, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf8,
	    0x48, 0x8b, 0x17, /* mov (%rdi), %rdx: the load that faults */
	    0x48, 0x01, 0xd0, /* add %rdx, %rax */
	    0xc3};
	uint8_t buf[HOOK_ARCH_COUNT_COPY_MAX];
	struct hook_arch_copy_map map;
	struct dec d[64];
	size_t nd;
	(void)state;
	assert_true(emit(code, sizeof(code), sizeof(code), buf, &map, d, &nd) > 0);
	assert_int_equal(nd, 5 + 9);
	assert_int_equal(map.n, 9);
	for (size_t i = 0; i < 9; i++) {
		assert_int_equal(map.off[i], 3 * i);
		assert_int_equal(BLK + map.at[i], d[5 + i].addr);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_copy_leaf),       cmocka_unit_test(test_copy_branch_inside),
	    cmocka_unit_test(test_copy_branch_out), cmocka_unit_test(test_copy_jmp),
	    cmocka_unit_test(test_copy_none),       cmocka_unit_test(test_copy_map_every),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
