/*
 * The x86_64 code writer (src/hook/x86_64/x86_writer.h) against
 * capstone: each named writer's output decodes to exactly one
 * instruction of its length, the one its name says (capstone's Intel
 * syntax), over every general register and each displacement form; and
 * a few encodings against their known bytes (the forms the emitter's
 * golden bytes pin: disp8 kept for 0, disp32 kept for small values).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>
#include <cmocka.h>

#include "x86_writer.h"

#define WR_PC 0x400000ull

static csh wr_cs;

static const char *const wr_r64[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                       "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
static const char *const wr_r32[16] = {"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"};

/* The writer's bytes decode to one instruction of w->len bytes whose
 * text is `want`. */
static void wr_expect(const struct x86_writer *w, const char *want, const char *what)
{
	cs_insn *ci;
	char got[400];

	assert_true(w->ok);
	size_t n = cs_disasm(wr_cs, w->buf, w->len, w->base, 1, &ci);
	if (n != 1)
		fail_msg("%s: capstone does not decode it", what);
	snprintf(got, sizeof(got), "%s %s", ci->mnemonic, ci->op_str);
	size_t sz = ci->size;
	cs_free(ci, n);
	if (sz != w->len || strcmp(got, want) != 0)
		fail_msg("%s: got \"%s\" (%zu of %zu bytes), want \"%s\"", what, got, sz, w->len,
		         want);
}

#define WR_CHECK(want, stmt)                                                                       \
	do {                                                                                       \
		uint8_t buf_[32];                                                                  \
		struct x86_writer wr_ = {buf_, 0, sizeof(buf_), WR_PC, 1};                         \
		struct x86_writer *w = &wr_;                                                       \
		stmt;                                                                              \
		wr_expect(w, want, #stmt);                                                         \
	} while (0)

#define WR_BYTES(want, stmt)                                                                       \
	do {                                                                                       \
		uint8_t buf_[32];                                                                  \
		struct x86_writer wr_ = {buf_, 0, sizeof(buf_), WR_PC, 1};                         \
		struct x86_writer *w = &wr_;                                                       \
		stmt;                                                                              \
		assert_true(w->ok);                                                                \
		assert_int_equal(w->len, sizeof(want) - 1);                                        \
		assert_memory_equal(buf_, want, sizeof(want) - 1);                                 \
	} while (0)

/* capstone's operand text for [base + disp]. */
static void wr_fmt_mem(char *out, size_t cap, const char *size, const char *base, int32_t disp)
{
	if (disp == 0)
		snprintf(out, cap, "%s ptr [%s]", size, base);
	else if (disp > 0)
		snprintf(out, cap, disp < 10 ? "%s ptr [%s + %d]" : "%s ptr [%s + 0x%x]", size,
		         base, disp);
	else
		snprintf(out, cap, -disp < 10 ? "%s ptr [%s - %d]" : "%s ptr [%s - 0x%x]", size,
		         base, -disp);
}

static const int32_t wr_disps[] = {0, 8, -24, 127, 128, -129, 0x12345};

/* mov/lea/cmp/add with every register pair and displacement, 64 and
 * 32 bits, in each displacement form. */
static void test_reg_mem_all(void **state)
{
	char want[96], mem[64];

	(void)state;
	for (int r = 0; r < 16; r++)
		for (int b = 0; b < 16; b++)
			for (size_t d = 0; d < sizeof(wr_disps) / sizeof(wr_disps[0]); d++) {
				int32_t disp = wr_disps[d];
				wr_fmt_mem(mem, sizeof(mem), "qword", wr_r64[b], disp);
				snprintf(want, sizeof(want), "mov %s, %s", wr_r64[r], mem);
				WR_CHECK(want, x86_mov_reg_mem(w, (enum x86_gpr)r,
				                               x86_mem((enum x86_gpr)b, disp)));
				WR_CHECK(want, x86_mov_reg_mem(w, (enum x86_gpr)r,
				                               x86_mem_d8((enum x86_gpr)b, disp)));
				WR_CHECK(want, x86_mov_reg_mem(w, (enum x86_gpr)r,
				                               x86_mem_d32((enum x86_gpr)b, disp)));
				snprintf(want, sizeof(want), "mov %s, %s", mem, wr_r64[r]);
				WR_CHECK(want, x86_mov_mem_reg(w, x86_mem((enum x86_gpr)b, disp),
				                               (enum x86_gpr)r));
				snprintf(want, sizeof(want), "cmp %s, %s", wr_r64[r], mem);
				WR_CHECK(want, x86_cmp_reg_mem(w, (enum x86_gpr)r,
				                               x86_mem((enum x86_gpr)b, disp)));
				wr_fmt_mem(mem, sizeof(mem), "", wr_r64[b], disp);
				snprintf(want, sizeof(want), "lea %s, %s", wr_r64[r], mem + 5);
				WR_CHECK(want, x86_lea_reg_mem(w, (enum x86_gpr)r,
				                               x86_mem((enum x86_gpr)b, disp)));
				if (r >= 8)
					continue;
				wr_fmt_mem(mem, sizeof(mem), "dword", wr_r64[b], disp);
				snprintf(want, sizeof(want), "mov %s, %s", wr_r32[r], mem);
				WR_CHECK(want, x86_mov_reg_mem(w, (enum x86_gpr)(X86_R32 | r),
				                               x86_mem((enum x86_gpr)b, disp)));
				snprintf(want, sizeof(want), "add %s, %s", wr_r32[r], mem);
				WR_CHECK(want, x86_add_reg_mem(w, (enum x86_gpr)(X86_R32 | r),
				                               x86_mem((enum x86_gpr)b, disp)));
			}
}

/* Register to register, immediates, the stack, over every register. */
static void test_reg_all(void **state)
{
	char want[96];

	(void)state;
	for (int r = 0; r < 16; r++) {
		const char *n = wr_r64[r];
		enum x86_gpr g = (enum x86_gpr)r;
		snprintf(want, sizeof(want), "push %s", n);
		WR_CHECK(want, x86_push_reg(w, g));
		snprintf(want, sizeof(want), "pop %s", n);
		WR_CHECK(want, x86_pop_reg(w, g));
		snprintf(want, sizeof(want), "call %s", n);
		WR_CHECK(want, x86_call_reg(w, g));
		snprintf(want, sizeof(want), "movabs %s, 0x1122334455667788", n);
		WR_CHECK(want, x86_mov_reg_imm64(w, g, 0x1122334455667788ull));
		snprintf(want, sizeof(want), "dec %s", n);
		WR_CHECK(want, x86_dec_reg(w, g));
		snprintf(want, sizeof(want), "shl %s, 5", n);
		WR_CHECK(want, x86_shl_reg_imm8(w, g, 5));
		snprintf(want, sizeof(want), "shr %s, 0x20", n);
		WR_CHECK(want, x86_shr_reg_imm8(w, g, 32));
		snprintf(want, sizeof(want), "cmp %s, -1", n);
		WR_CHECK(want, x86_cmp_reg_imm8(w, g, -1));
		snprintf(want, sizeof(want), "and %s, 0xfffffffffffffff8", n);
		WR_CHECK(want, x86_and_reg_imm8(w, g, -8));
		snprintf(want, sizeof(want), "add %s, 0x50", n);
		WR_CHECK(want, x86_add_reg_imm8(w, g, 0x50));
		snprintf(want, sizeof(want), "cmp %s, 7", n);
		WR_CHECK(want, x86_cmp_reg_imm32(w, g, 7));
		snprintf(want, sizeof(want), "bts %s, 0x22", n);
		WR_CHECK(want, x86_bts_reg_imm8(w, g, 34));
		for (int s = 0; s < 16; s++) {
			const char *m = wr_r64[s];
			enum x86_gpr h = (enum x86_gpr)s;
			snprintf(want, sizeof(want), "mov %s, %s", n, m);
			WR_CHECK(want, x86_mov_reg_reg(w, g, h));
			snprintf(want, sizeof(want), "cmp %s, %s", n, m);
			WR_CHECK(want, x86_cmp_reg_reg(w, g, h));
			snprintf(want, sizeof(want), "and %s, %s", n, m);
			WR_CHECK(want, x86_and_reg_reg(w, g, h));
			snprintf(want, sizeof(want), "or %s, %s", n, m);
			WR_CHECK(want, x86_or_reg_reg(w, g, h));
			snprintf(want, sizeof(want), "add %s, %s", n, m);
			WR_CHECK(want, x86_add_reg_reg(w, g, h));
			snprintf(want, sizeof(want), "test %s, %s", n, m);
			WR_CHECK(want, x86_test_reg_reg(w, g, h));
			snprintf(want, sizeof(want), "bt %s, %s", n, m);
			WR_CHECK(want, x86_bt_reg_reg(w, g, h));
		}
	}
	WR_CHECK("mov esi, ecx", x86_mov_reg_reg(w, X86_ESI, X86_ECX));
	WR_CHECK("cmp eax, eax", x86_cmp_reg_reg(w, X86_EAX, X86_EAX));
	WR_CHECK("dec ecx", x86_dec_reg(w, X86_ECX));
	WR_CHECK("shr eax, 6", x86_shr_reg_imm8(w, X86_EAX, 6));
	WR_CHECK("test cl, 1", x86_test_reg8_imm8(w, X86_RCX, 1));
	WR_CHECK("ret ", x86_ret(w));
	WR_CHECK("rdtsc ", x86_rdtsc(w));
	WR_CHECK("push 0x12345678", x86_push_imm32(w, 0x12345678));
}

/* Memory operands without a register operand, fs, index, vector. */
static void test_mem_forms(void **state)
{
	(void)state;
	WR_CHECK("mov rax, qword ptr fs:[0xfffffffffffff810]",
	         x86_mov_reg_mem(w, X86_RAX, x86_fs(-0x7f0)));
	WR_CHECK("mov dword ptr fs:[0xfffffffffffff008], ecx",
	         x86_mov_mem_reg(w, x86_fs(-0xff8), X86_ECX));
	WR_CHECK("mov r9, qword ptr fs:[0x40]", x86_mov_reg_mem(w, X86_R9, x86_fs(0x40)));
	WR_CHECK("and rcx, qword ptr fs:[0x40]", x86_and_reg_mem(w, X86_RCX, x86_fs(0x40)));
	WR_CHECK("sub edx, dword ptr fs:[0x40]", x86_sub_reg_mem(w, X86_EDX, x86_fs(0x40)));
	WR_CHECK("cmp dword ptr fs:[0x40], ecx", x86_cmp_mem_reg(w, x86_fs(0x40), X86_ECX));
	WR_CHECK("bts dword ptr fs:[0x40], 0", x86_bts_mem_imm8(w, X86_DWORD, x86_fs(0x40), 0));
	WR_CHECK("sub dword ptr fs:[0x40], 1", x86_sub_mem_imm8(w, X86_DWORD, x86_fs(0x40), 1));
	WR_CHECK("add dword ptr fs:[0x40], 1", x86_add_mem_imm8(w, X86_DWORD, x86_fs(0x40), 1));
	WR_CHECK("cmp dword ptr fs:[0x40], 0", x86_cmp_mem_imm8(w, X86_DWORD, x86_fs(0x40), 0));
	WR_CHECK("cmp qword ptr [rsp], 0", x86_cmp_mem_imm8(w, X86_QWORD, x86_mem(X86_RSP, 0), 0));
	WR_CHECK("cmp qword ptr [rax + 0x10], 7",
	         x86_cmp_mem_imm32(w, X86_QWORD, x86_mem_d32(X86_RAX, 0x10), 7));
	WR_CHECK("mov qword ptr [r9], 0xf0",
	         x86_mov_mem_imm32(w, X86_QWORD, x86_mem(X86_R9, 0), 0xf0));
	WR_CHECK("mov dword ptr [rcx + 0x1c], 0xffffffff",
	         x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RCX, 0x1c), -1));
	WR_CHECK("mov dword ptr [rsp + 4], 0x7f00",
	         x86_mov_mem_imm32(w, X86_DWORD, x86_mem(X86_RSP, 4), 0x7f00));
	WR_CHECK("mov rcx, qword ptr [rsi + rcx]",
	         x86_mov_reg_mem(w, X86_RCX, x86_mem_idx(X86_RSI, X86_RCX, 1)));
	WR_CHECK("lea rax, [rcx + rax*8]",
	         x86_lea_reg_mem(w, X86_RAX, x86_mem_idx(X86_RCX, X86_RAX, 8)));
	WR_CHECK("mov r8, qword ptr [r13 + r12*4]",
	         x86_mov_reg_mem(w, X86_R8, x86_mem_idx(X86_R13, X86_R12, 4)));
	WR_CHECK("prefetcht0 byte ptr [r9 + 0x800]", x86_prefetcht0(w, x86_mem(X86_R9, 0x800)));
	WR_CHECK("movups xmmword ptr [rsp - 0x10], xmm15",
	         x86_movups_mem_xmm(w, x86_mem(X86_RSP, -16), 15));
	WR_CHECK("movups xmm15, xmmword ptr [rdi]", x86_movups_xmm_mem(w, 15, x86_mem(X86_RDI, 0)));
	WR_CHECK("movups xmm3, xmmword ptr [r12 + 0x20]",
	         x86_movups_xmm_mem(w, 3, x86_mem(X86_R12, 32)));
}

/* Branches to absolute targets, and their reach. */
static void test_branches(void **state)
{
	(void)state;
	WR_CHECK("jmp 0x400100", x86_jmp_rel32(w, WR_PC + 0x100));
	WR_CHECK("call 0x3ff000", x86_call_rel32(w, WR_PC - 0x1000));
	WR_CHECK("jne 0x400100", x86_jcc_rel32(w, X86_CC_NE, WR_PC + 0x100));
	WR_CHECK("jb 0x400010", x86_jcc_rel8(w, X86_CC_B, WR_PC + 0x10));
	WR_CHECK("jbe 0x400010", x86_jcc_rel32(w, X86_CC_BE, WR_PC + 0x10));
	WR_CHECK("jmp 0x7fff0000", x86_jmp_far(w, 0x7fff0000ull));
	WR_CHECK("jmp qword ptr [rip + 0x10]", x86_jmp_rip_mem(w, 0x10));
	WR_CHECK("call qword ptr [rip + 0x10]", x86_call_rip_mem(w, 0x10));
	/* out of reach: ok drops */
	uint8_t buf[32];
	struct x86_writer w = {buf, 0, sizeof(buf), WR_PC, 1};
	x86_jcc_rel8(&w, X86_CC_E, WR_PC + 0x200);
	assert_false(w.ok);
	w = (struct x86_writer){buf, 0, sizeof(buf), WR_PC, 1};
	x86_jmp_rel32(&w, WR_PC + (4ull << 30));
	assert_false(w.ok);
	/* far: jmp [rip+0]; dq target */
	w = (struct x86_writer){buf, 0, sizeof(buf), WR_PC, 1};
	x86_jmp_far(&w, 0x7f0000001234ull);
	assert_true(w.ok);
	assert_memory_equal(buf, "\xff\x25\x00\x00\x00\x00\x34\x12\x00\x00\x00\x7f\x00\x00", 14);
	/* overflow: ok drops, nothing written past cap */
	w = (struct x86_writer){buf, 0, 4, WR_PC, 1};
	x86_mov_reg_imm64(&w, X86_RAX, 1);
	assert_false(w.ok);
	assert_true(w.len <= 4);
}

/* The forms the emitter's golden bytes depend on. */
static void test_known_bytes(void **state)
{
	(void)state;
	WR_BYTES("\x48\x8b\x7c\x24\x40", x86_mov_reg_mem(w, X86_RDI, x86_mem(X86_RSP, 64)));
	WR_BYTES("\x48\x8b\x17", x86_mov_reg_mem(w, X86_RDX, x86_mem(X86_RDI, 0)));
	WR_BYTES("\x4c\x8b\x47\x00", x86_mov_reg_mem(w, X86_R8, x86_mem_d8(X86_RDI, 0)));
	WR_BYTES("\x48\x8b\x86\x10\x00\x00\x00",
	         x86_mov_reg_mem(w, X86_RAX, x86_mem_d32(X86_RSI, 0x10)));
	WR_BYTES("\x48\x8b\x45\x00", x86_mov_reg_mem(w, X86_RAX, x86_mem(X86_RBP, 0)));
	WR_BYTES("\x64\x0f\xba\x2c\x25\x14\xf0\xff\xff\x00",
	         x86_bts_mem_imm8(w, X86_DWORD, x86_fs(-0xfec), 0));
	WR_BYTES("\x64\x48\x8b\x04\x25\x10\xf8\xff\xff",
	         x86_mov_reg_mem(w, X86_RAX, x86_fs(-0x7f0)));
	WR_BYTES("\x44\x0f\x11\x7c\x24\xf0", x86_movups_mem_xmm(w, x86_mem(X86_RSP, -16), 15));
	WR_BYTES("\x44\x0f\x10\x7c\x24\x00", x86_movups_xmm_mem(w, 15, x86_mem_d8(X86_RSP, 0)));
	WR_BYTES("\x4c\x89\xd8", x86_mov_reg_reg(w, X86_RAX, X86_R11));
	WR_BYTES("\x41\x53", x86_push_reg(w, X86_R11));
	WR_BYTES("\x48\xbf\x01\x00\x00\x00\x00\x00\x00\x00", x86_mov_reg_imm64(w, X86_RDI, 1));
	WR_BYTES("\x75\x0f", x86_jcc_rel8(w, X86_CC_NE, WR_PC + 17));
	WR_BYTES("\xe8\x05\x00\x00\x00", x86_call_rel32(w, WR_PC + 10));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reg_mem_all), cmocka_unit_test(test_reg_all),
	    cmocka_unit_test(test_mem_forms),   cmocka_unit_test(test_branches),
	    cmocka_unit_test(test_known_bytes),
	};
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &wr_cs) != CS_ERR_OK)
		return 1;
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	cs_close(&wr_cs);
	return rc;
}
