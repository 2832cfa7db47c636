/*
 * Byte-for-byte tests of the x86_64 hook layer: prepare()'s decisions on
 * hand-assembled functions, and the exact trampoline bytes for each
 * relocation case (disassembly in the comments; rel32 values computed by
 * hand from the addresses given). Nothing here executes generated code.
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
#define TR 0x500000ull
#define FN_ID 0x1122334455667788ull
#define HANDLER 0x123456789abcull
#define FRAME 80 /* bytes of the save/call/restore/return-point part of a trampoline */

static enum ada_hook_skip prep(const uint8_t *code, size_t size, uint64_t fn,
                               struct hook_arch_plan *plan)
{
	return hook_arch_prepare(code, fn, size, plan);
}

/* Prepares code at fn, emits a trampoline whose relocated part starts at
 * tr + 67 (where it did when the frame was 67 bytes, before the return
 * point: the expected displacements below are relative to that), and
 * compares the part after the frame. */
static void expect_reloc(const uint8_t *code, size_t size, uint64_t fn, uint64_t tr,
                         const uint8_t *want, size_t want_len)
{
	struct hook_arch_plan plan;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];

	tr -= FRAME - 67;
	assert_int_equal(prep(code, size, fn, &plan), ADA_HOOK_OK);
	size_t n = hook_arch_emit_trampoline(&plan, buf, tr, FN_ID, HANDLER, tr);
	assert_int_equal(n, FRAME + want_len);
	assert_memory_equal(buf + FRAME, want, want_len);
}

/* The frame: save, call the handler (no alignment), restore (see
 * x86_emit.c). */
static void test_frame(void **state)
{
	static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	static const uint8_t want[FRAME] = {
	    0x41, 0x53, 0x41, 0x52, 0x55, 0x50, 0x41, 0x51, 0x41, 0x50, /* push r11..r8 */
	    0x51, 0x52, 0x56, 0x57,                                     /* push rcx..rdi */
	    0x48, 0xbf, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* mov rdi, FN_ID */
	    0x48, 0x8d, 0x74, 0x24, 0x50,                               /* lea rsi, [rsp+80] */
	    0x48, 0x89, 0xe2,                                           /* mov rdx, rsp */
	    0x48, 0xb8, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00, /* mov rax, HANDLER */
	    0xff, 0xd0,                                                 /* call rax */
	    0x5f, 0x5e, 0x5a, 0x59, 0x41, 0x58, 0x41, 0x59,             /* pop rdi..r9 */
	    0x58, 0x5d, 0x41, 0x5a, 0x41, 0x5b,                         /* pop rax..r11 */
	    0x48, 0x83, 0x3c, 0x24, 0x00,                               /* cmp qword [rsp], 0 */
	    0x75, 0x0f,                                                 /* jne body */
	    0x48, 0x8d, 0x64, 0x24, 0x08,                               /* lea rsp, [rsp+8] */
	    0xe8, 0x05, 0x00, 0x00, 0x00,                               /* call body */
	    0xe9, 0xb0, 0xff, 0xff, 0xff, /* R_F: jmp TR (the exit path given) */
	};
	struct hook_arch_plan plan;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];

	(void)state;
	assert_int_equal(prep(code, sizeof(code), FN, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 5);
	assert_int_equal(plan.insn_count, 3);
	assert_true(hook_arch_emit_trampoline(&plan, buf, TR, FN_ID, HANDLER, TR) > FRAME);
	assert_memory_equal(buf, want, FRAME);
	assert_int_equal(buf[HOOK_ARCH_RET_POINT_OFF], 0xe9); /* R_F */
	/* an exit path beyond rel32 reach of R_F is refused */
	assert_int_equal(
	    hook_arch_emit_trampoline(&plan, buf, TR, FN_ID, HANDLER, TR + (3ull << 30)), 0);
}

static void test_plain(void **state)
{
	/* push rbp; mov rbp,rsp; sub rsp,0x10 | leave; ret */
	static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3};
	/* same 8 bytes; jmp 0x400008 */
	static const uint8_t want[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec,
	                               0x10, 0xe9, 0xb8, 0xff, 0xef, 0xff};
	(void)state;
	expect_reloc(code, sizeof(code), FN, TR, want, sizeof(want));
}

static void test_rip_first(void **state)
{
	/* mov rax, [rip+0x1000] (-> 0x401007) | ret */
	static const uint8_t code[] = {0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, 0xc3};
	/* mov rax, [rip-0xff043] (still 0x401007); jmp 0x400007 */
	static const uint8_t want[] = {0x48, 0x8b, 0x05, 0xbd, 0x0f, 0xf0,
	                               0xff, 0xe9, 0xb8, 0xff, 0xef, 0xff};
	(void)state;
	expect_reloc(code, sizeof(code), FN, TR, want, sizeof(want));
}

static void test_lea_far(void **state)
{
	/* at 0x40000000: lea rdi, [rip+0x7ff00000] (-> 0xbff00007) | ret;
	 * trampoline at 0x3fe00000: 0x800fffbd away, beyond rel32 */
	static const uint8_t code[] = {0x48, 0x8d, 0x3d, 0x00, 0x00, 0xf0, 0x7f, 0xc3};
	/* movabs rdi, 0xbff00007; jmp 0x40000007 */
	static const uint8_t want[] = {0x48, 0xbf, 0x07, 0x00, 0xf0, 0xbf, 0x00, 0x00,
	                               0x00, 0x00, 0xe9, 0xb5, 0xff, 0x1f, 0x00};
	/* lea r12, [rip+0x7ff00000] | ret */
	static const uint8_t code12[] = {0x4c, 0x8d, 0x25, 0x00, 0x00, 0xf0, 0x7f, 0xc3};
	/* movabs r12, 0xbff00007; jmp 0x40000007 */
	static const uint8_t want12[] = {0x49, 0xbc, 0x07, 0x00, 0xf0, 0xbf, 0x00, 0x00,
	                                 0x00, 0x00, 0xe9, 0xb5, 0xff, 0x1f, 0x00};
	(void)state;
	expect_reloc(code, sizeof(code), 0x40000000, 0x3fe00000, want, sizeof(want));
	expect_reloc(code12, sizeof(code12), 0x40000000, 0x3fe00000, want12, sizeof(want12));
}

/* A far memory load has no exact short form: emit refuses (returns 0). */
static void test_rip_load_far(void **state)
{
	/* mov rax, [rip+0x7ff00000] | ret */
	static const uint8_t code[] = {0x48, 0x8b, 0x05, 0x00, 0x00, 0xf0, 0x7f, 0xc3};
	struct hook_arch_plan plan;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE];

	(void)state;
	assert_int_equal(prep(code, sizeof(code), 0x40000000, &plan), ADA_HOOK_OK);
	assert_int_equal(hook_arch_emit_trampoline(&plan, buf, 0x3fe00000, 1, HANDLER, 0x3fe00000),
	                 0);
	/* and a trampoline out of the patch jmp's reach is refused too */
	assert_int_equal(
	    hook_arch_emit_trampoline(&plan, buf, 0x7f0000000000, 1, HANDLER, 0x7f0000000000), 0);
}

static void test_jcc_rel8(void **state)
{
	/* test edi,edi; je 0x400024; push rbx | nops... ret */
	uint8_t code[0x40];
	/* test edi,edi; je 0x400024 (rel32 -0x100027); push rbx; jmp 0x400005 */
	static const uint8_t want[] = {0x85, 0xff, 0x0f, 0x84, 0xd9, 0xff, 0xef,
	                               0xff, 0x53, 0xe9, 0xb4, 0xff, 0xef, 0xff};
	(void)state;
	memset(code, 0x90, sizeof(code));
	memcpy(code, "\x85\xff\x74\x20\x53", 5);
	code[sizeof(code) - 1] = 0xc3;
	expect_reloc(code, sizeof(code), FN, TR, want, sizeof(want));
}

static void test_jcc_far(void **state)
{
	/* at 0x40000000: jne 0xbf000006 (rel32 0x7f000000) | ret; nop */
	static const uint8_t code[] = {0x0f, 0x85, 0x00, 0x00, 0x00, 0x7f, 0xc3, 0x90};
	/* je +14; jmp [rip+0]; dq 0xbf000006; jmp 0x40000006 */
	static const uint8_t want[] = {0x74, 0x0e, 0xff, 0x25, 0x00, 0x00, 0x00,
	                               0x00, 0x06, 0x00, 0x00, 0xbf, 0x00, 0x00,
	                               0x00, 0x00, 0xe9, 0xae, 0xff, 0xff, 0x0f};
	(void)state;
	expect_reloc(code, sizeof(code), 0x40000000, 0x30000000, want, sizeof(want));
}

static void test_jmp(void **state)
{
	/* a 5-byte tail-call thunk: jmp 0x401000 */
	static const uint8_t thunk[] = {0xe9, 0xfb, 0x0f, 0x00, 0x00};
	/* jmp 0x401000; jmp 0x400005 (dead, harmless) */
	static const uint8_t want_thunk[] = {0xe9, 0xb8, 0x0f, 0xf0, 0xff,
	                                     0xe9, 0xb8, 0xff, 0xef, 0xff};
	/* jmp rel8 0x400012; nop; nop; nop | ... */
	uint8_t code[0x20];
	/* jmp 0x400012 (rel32); nop x3; jmp 0x400005 */
	static const uint8_t want[] = {0xe9, 0xca, 0xff, 0xef, 0xff, 0x90, 0x90,
	                               0x90, 0xe9, 0xb5, 0xff, 0xef, 0xff};
	(void)state;
	expect_reloc(thunk, sizeof(thunk), FN, TR, want_thunk, sizeof(want_thunk));
	memset(code, 0x90, sizeof(code));
	code[0] = 0xeb;
	code[1] = 0x10;
	code[sizeof(code) - 1] = 0xc3;
	expect_reloc(code, sizeof(code), FN, TR, want, sizeof(want));
}

static void test_call(void **state)
{
	/* at 0x7f1234500000: call 0x7f1234501000 | ret */
	static const uint8_t code[] = {0xe8, 0xfb, 0x0f, 0x00, 0x00, 0xc3};
	/* push 0x34500005; mov dword [rsp+4], 0x7f12; jmp 0x7f1234501000;
	 * jmp 0x7f1234500005 */
	static const uint8_t want[] = {0x68, 0x05, 0x00, 0x50, 0x34, 0xc7, 0x44, 0x24,
	                               0x04, 0x12, 0x7f, 0x00, 0x00, 0xe9, 0xab, 0x0f,
	                               0xf0, 0xff, 0xe9, 0xab, 0xff, 0xef, 0xff};
	/* call [rip+0xff5] (slot 0x7f1234500ffb) | ret */
	static const uint8_t code_rip[] = {0xff, 0x15, 0xf5, 0x0f, 0x00, 0x00, 0xc3};
	/* push 0x34500006; mov dword [rsp+4], 0x7f12; jmp [rip-0xff05b];
	 * jmp 0x7f1234500006 */
	static const uint8_t want_rip[] = {0x68, 0x06, 0x00, 0x50, 0x34, 0xc7, 0x44, 0x24,
	                                   0x04, 0x12, 0x7f, 0x00, 0x00, 0xff, 0x25, 0xa5,
	                                   0x0f, 0xf0, 0xff, 0xe9, 0xab, 0xff, 0xef, 0xff};
	/* push rbx; xor esi,esi; call [rdi+0x130] | test rax,rax; ret
	 * (python3.11's type slot calls) */
	static const uint8_t code_ind[] = {0x53, 0x31, 0xf6, 0xff, 0x97, 0x30, 0x01,
	                                   0x00, 0x00, 0x48, 0x85, 0xc0, 0xc3};
	/* push rbx; xor esi,esi; push [rdi+0x130]; push [rsp];
	 * mov dword [rsp+8], 0x34500009; mov dword [rsp+12], 0x7f12; ret;
	 * jmp 0x7f1234500009 */
	static const uint8_t want_ind[] = {0x53, 0x31, 0xf6, 0xff, 0xb7, 0x30, 0x01, 0x00, 0x00,
	                                   0xff, 0x34, 0x24, 0xc7, 0x44, 0x24, 0x08, 0x09, 0x00,
	                                   0x50, 0x34, 0xc7, 0x44, 0x24, 0x0c, 0x12, 0x7f, 0x00,
	                                   0x00, 0xc3, 0xe9, 0xa4, 0xff, 0xef, 0xff};
	/* call rax | ret: push rax; ... */
	static const uint8_t code_reg[] = {0x53, 0x31, 0xf6, 0xff, 0xd0, 0xc3};
	static const uint8_t want_reg[] = {0x53, 0x31, 0xf6, 0xff, 0xf0, 0xff, 0x34, 0x24,
	                                   0xc7, 0x44, 0x24, 0x08, 0x05, 0x00, 0x50, 0x34,
	                                   0xc7, 0x44, 0x24, 0x0c, 0x12, 0x7f, 0x00, 0x00,
	                                   0xc3, 0xe9, 0xa4, 0xff, 0xef, 0xff};
	/* bnd call [rdi]: a prefix the push form would not keep: refused */
	static const uint8_t code_bnd[] = {0x53, 0x31, 0xf6, 0xf2, 0xff, 0x17, 0xc3};
	struct hook_arch_plan plan;
	(void)state;
	expect_reloc(code, sizeof(code), 0x7f1234500000, 0x7f1234600000, want, sizeof(want));
	expect_reloc(code_rip, sizeof(code_rip), 0x7f1234500000, 0x7f1234600000, want_rip,
	             sizeof(want_rip));
	expect_reloc(code_ind, sizeof(code_ind), 0x7f1234500000, 0x7f1234600000, want_ind,
	             sizeof(want_ind));
	expect_reloc(code_reg, sizeof(code_reg), 0x7f1234500000, 0x7f1234600000, want_reg,
	             sizeof(want_reg));
	assert_int_equal(prep(code_bnd, sizeof(code_bnd), FN, &plan), ADA_SKIP_UNRELOCATABLE);
}

static void test_endbr(void **state)
{
	/* endbr64; push rbp | mov rbp,rsp; pop rbp; ret */
	static const uint8_t code[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	/* endbr64; push rbp; jmp 0x400005 */
	static const uint8_t want[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xe9, 0xb8, 0xff, 0xef, 0xff};
	(void)state;
	expect_reloc(code, sizeof(code), FN, TR, want, sizeof(want));
}

static void test_return_trampoline(void **state)
{
	static const uint8_t want[] = {
	    0x50, 0x52, 0x51, 0x56, 0x57,                   /* push rax rdx rcx rsi rdi */
	    0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53, /* push r8 r9 r10 r11 */
	    0x55,                                           /* push rbp */
	    0x48, 0x8d, 0x7c, 0x24, 0x50,                   /* lea rdi, [rsp+80] */
	    0x48, 0xb8, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00, /* mov rax, HANDLER */
	    0xff, 0xd0,                                                 /* call rax */
	    0x5d,                                                       /* pop rbp */
	    0x4c, 0x8b, 0x5c, 0x24, 0x40,                               /* mov r11, [rsp+64] */
	    0x48, 0x89, 0x44, 0x24, 0x40,                               /* mov [rsp+64], rax */
	    0x4c, 0x89, 0xd8,                                           /* mov rax, r11 */
	    0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58,             /* pop r11 r10 r9 r8 */
	    0x5f, 0x5e, 0x59, 0x5a,                                     /* pop rdi rsi rcx rdx */
	    0xc3,                                                       /* ret */
	};
	uint8_t buf[HOOK_ARCH_RETURN_TRAMPOLINE_MAX];

	(void)state;
	assert_int_equal(hook_arch_emit_return_trampoline(buf, TR, HANDLER), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_patch_bytes(void **state)
{
	/* push rbp; mov rbp,rsp; sub rsp,0x10 | leave; ret: 8 bytes displaced */
	static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3};
	/* jmp 0x500000; then the original tail (83 ec 10) */
	static const uint8_t want[] = {0xe9, 0xfb, 0xff, 0x0f, 0x00, 0x83, 0xec, 0x10};
	struct hook_arch_plan plan;
	uint8_t out[HOOK_ARCH_MAX_PATCH];

	(void)state;
	assert_int_equal(prep(code, sizeof(code), FN, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 8);
	hook_arch_patch_bytes(&plan, TR, out);
	assert_memory_equal(out, want, sizeof(want));
	assert_memory_equal(plan.original, code, 8);
}

static void expect_skip(const uint8_t *code, size_t size, enum ada_hook_skip want)
{
	struct hook_arch_plan plan;

	assert_string_equal(hook_skip_name(prep(code, size, FN, &plan)), hook_skip_name(want));
	if (want != ADA_HOOK_OK)
		assert_int_equal(plan.patch_len, 0);
}

static void test_too_short(void **state)
{
	/* xor eax,eax; ret */
	static const uint8_t tiny[] = {0x31, 0xc0, 0xc3};
	/* nop x4 | mov rax,[rip+x] would run past the 6-byte function */
	static const uint8_t cut[] = {0x90, 0x90, 0x90, 0x90, 0x48, 0x8b};
	/* xor eax,eax; ret; nop; nop: 5 bytes, the ret is relocated exactly */
	static const uint8_t five[] = {0x31, 0xc0, 0xc3, 0x90, 0x90};
	(void)state;
	expect_skip(tiny, sizeof(tiny), ADA_SKIP_TOO_SHORT);
	expect_skip(tiny, 0, ADA_SKIP_TOO_SHORT);
	expect_skip(cut, sizeof(cut), ADA_SKIP_TOO_SHORT);
	expect_skip(five, sizeof(five), ADA_HOOK_OK);
}

static void test_branch_into_patch(void **state)
{
	/* push rbp; mov rbp,rsp; nop | nop; jmp 0x400001; ret */
	uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0xeb, 0xf9, 0xc3};
	/* push rbp; mov rbp,rsp; nop | call 0x400004 (rel32 -0x0b); ret */
	static const uint8_t call_in[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0xe8,
	                                  0xfa, 0xff, 0xff, 0xff, 0xc3};
	/* jne rel32 at the start, into its own bytes: jne 0x400002 */
	static const uint8_t self[] = {0x0f, 0x85, 0xfc, 0xff, 0xff, 0xff, 0xc3};
	(void)state;
	expect_skip(code, sizeof(code), ADA_SKIP_BRANCH_INTO_PATCH);
	code[7] = 0xf8; /* jmp 0x400000: the function start itself is fine */
	expect_skip(code, sizeof(code), ADA_HOOK_OK);
	code[7] = 0xfd; /* jmp 0x400005: first byte after the patch, fine */
	expect_skip(code, sizeof(code), ADA_HOOK_OK);
	expect_skip(call_in, sizeof(call_in), ADA_SKIP_BRANCH_INTO_PATCH);
	expect_skip(self, sizeof(self), ADA_SKIP_BRANCH_INTO_PATCH);
}

static void test_unrelocatable(void **state)
{
	/* loop 0x400000 | nop x3; ret */
	static const uint8_t loop[] = {0xe2, 0xfe, 0x90, 0x90, 0x90, 0xc3};
	/* jrcxz 0x400000 | ... */
	static const uint8_t jrcxz[] = {0xe3, 0xfe, 0x90, 0x90, 0x90, 0xc3};
	/* xbegin 0x400006 | ret */
	static const uint8_t xbegin[] = {0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00, 0xc3};
	/* call rax; nop x3 | ret: return address would be inside the patch */
	static const uint8_t callreg[] = {0xff, 0xd0, 0x90, 0x90, 0x90, 0xc3};
	(void)state;
	expect_skip(loop, sizeof(loop), ADA_SKIP_UNRELOCATABLE);
	expect_skip(jrcxz, sizeof(jrcxz), ADA_SKIP_UNRELOCATABLE);
	expect_skip(xbegin, sizeof(xbegin), ADA_SKIP_UNRELOCATABLE);
	expect_skip(callreg, sizeof(callreg), ADA_SKIP_UNRELOCATABLE);
}

/* endbr64; push rbp | <mid>; jmp rax: two displaced insns, so a jump
 * table could target fn+4; <mid> decides whether the function computes
 * any address of its own code. */
static void expect_jmp_reg(const uint8_t *mid, size_t mid_len, enum ada_hook_skip want)
{
	uint8_t code[32] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55};

	memcpy(code + 5, mid, mid_len);
	code[5 + mid_len] = 0xff; /* jmp rax */
	code[6 + mid_len] = 0xe0;
	expect_skip(code, 7 + mid_len, want);
}

static void test_jump_table(void **state)
{
	/* lea rax, [rip+0x1000]: a table base or label in a register */
	static const uint8_t lea[] = {0x48, 0x8d, 0x05, 0x00, 0x10, 0x00, 0x00};
	/* mov rax, [rip+0x1000]: a loaded pointer may be a label */
	static const uint8_t load[] = {0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00};
	/* mov eax, 0x400002: non-PIC label address of the patch interior */
	static const uint8_t imm[] = {0xb8, 0x02, 0x00, 0x40, 0x00};
	/* mov rax, [rdi*8+0x601000]: non-PIC absolute table */
	static const uint8_t abs[] = {0x48, 0x8b, 0x04, 0xfd, 0x00, 0x10, 0x60, 0x00};
	/* add qword [rip+0x1000], 1: a counter, no register gets an address */
	static const uint8_t cnt[] = {0x48, 0x83, 0x05, 0x00, 0x10, 0x00, 0x00, 0x01};
	/* mov rax, fs:[0x28]: TLS, not an absolute address */
	static const uint8_t tls[] = {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00};
	/* mov rax, rdi: tail call through a pointer argument */
	static const uint8_t arg[] = {0x48, 0x89, 0xf8};
	/* endbr64; push rbp | nop; jmp [rax*8+0x601000]: reads a table */
	static const uint8_t idx[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x90, 0xff,
	                              0x24, 0xc5, 0x00, 0x10, 0x60, 0x00};
	/* mov eax,1 | lea rax,[rip+x]; jmp rax: one displaced insn, no
	 * boundary inside the patch to hit */
	static const uint8_t one[] = {0xb8, 0x01, 0x00, 0x00, 0x00, 0x48, 0x8d,
	                              0x05, 0x00, 0x10, 0x00, 0x00, 0xff, 0xe0};
	/* endbr64; push rbp | jmp [rip+0x1000]: tail call through a slot */
	static const uint8_t got[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xff,
	                              0x25, 0x00, 0x10, 0x00, 0x00};
	(void)state;
	expect_jmp_reg(lea, sizeof(lea), ADA_SKIP_JUMP_TABLE);
	expect_jmp_reg(load, sizeof(load), ADA_SKIP_JUMP_TABLE);
	expect_jmp_reg(imm, sizeof(imm), ADA_SKIP_JUMP_TABLE);
	expect_jmp_reg(abs, sizeof(abs), ADA_SKIP_JUMP_TABLE);
	expect_jmp_reg(cnt, sizeof(cnt), ADA_HOOK_OK);
	expect_jmp_reg(tls, sizeof(tls), ADA_HOOK_OK);
	expect_jmp_reg(arg, sizeof(arg), ADA_HOOK_OK);
	expect_skip(idx, sizeof(idx), ADA_SKIP_JUMP_TABLE);
	expect_skip(one, sizeof(one), ADA_HOOK_OK);
	expect_skip(got, sizeof(got), ADA_HOOK_OK);
}

/* Switch tables (x86_switch.c): the table lives at TAB, outside the
 * function, in a readable region of TAB_LEN bytes given to prepare. */
#define TAB 0x600000ull
#define SW_FN_SIZE 0x35

/* cmp edi,3; ja 0x40002f | mov edi,edi; lea rdx,[rip+0x1ffff2] (= TAB);
 * movsxd rax,dword [rdx+rdi*4]; add rax,rdx; jmp rax;
 * 0x400017 / 0x40001d / 0x400023 / 0x400029: mov eax,10/20/30/40; ret;
 * 0x40002f (default): mov eax,-1; ret */
static const uint8_t sw_pic[SW_FN_SIZE] = {
    0x83, 0xff, 0x03, 0x77, 0x2a, 0x89, 0xff, 0x48, 0x8d, 0x15, 0xf2, 0xff, 0x1f, 0x00,
    0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xb8, 0x0a, 0x00, 0x00, 0x00,
    0xc3, 0xb8, 0x14, 0x00, 0x00, 0x00, 0xc3, 0xb8, 0x1e, 0x00, 0x00, 0x00, 0xc3, 0xb8,
    0x28, 0x00, 0x00, 0x00, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3};
static const uint64_t sw_cases[4] = {0x400017, 0x40001d, 0x400023, 0x400029};

/* The PIC table for targets t[0..n): int32 offsets from TAB. */
static void sw_rel_table(uint8_t *tab, const uint64_t *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int32_t d = (int32_t)(int64_t)(t[i] - TAB);
		memcpy(tab + 4 * i, &d, 4);
	}
}

static enum ada_hook_skip sw_prep(const uint8_t *code, size_t size, const uint8_t *tab,
                                  size_t tab_len, struct hook_arch_plan *plan)
{
	const struct hook_arch_region r = {TAB, tab_len, tab};
	const struct hook_arch_memview mem = {&r, 1};
	return hook_arch_prepare_mem(code, FN, size, &mem, plan);
}

static void expect_sw(const uint8_t *code, size_t size, const uint8_t *tab, size_t tab_len,
                      enum ada_hook_skip want)
{
	struct hook_arch_plan plan;

	assert_string_equal(hook_skip_name(sw_prep(code, size, tab, tab_len, &plan)),
	                    hook_skip_name(want));
	if (want == ADA_HOOK_OK) {
		assert_int_equal(plan.patch_len, 5); /* cmp; ja: two insns */
		assert_int_equal(plan.insn_count, 2);
	}
}

/* A PIC switch whose 4 entries avoid the patch: hooked once its table is
 * read; not without the table (plain prepare, or a region too short). */
static void test_switch_pic(void **state)
{
	uint8_t tab[16];
	struct hook_arch_plan plan;

	(void)state;
	sw_rel_table(tab, sw_cases, 4);
	expect_sw(sw_pic, sizeof(sw_pic), tab, sizeof(tab), ADA_HOOK_OK);
	expect_skip(sw_pic, sizeof(sw_pic), ADA_SKIP_JUMP_TABLE);
	expect_sw(sw_pic, sizeof(sw_pic), tab, 12, ADA_SKIP_JUMP_TABLE);
	assert_int_equal(hook_arch_prepare_mem(sw_pic, FN, sizeof(sw_pic), NULL, &plan),
	                 ADA_SKIP_JUMP_TABLE);
}

/* One entry (case 2) goes to the ja at 0x400003, inside the patch. */
static void test_switch_into_patch(void **state)
{
	static const uint64_t t[4] = {0x400017, 0x40001d, 0x400003, 0x400029};
	uint8_t tab[16];

	(void)state;
	sw_rel_table(tab, t, 4);
	expect_sw(sw_pic, sizeof(sw_pic), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
}

/* Shapes the reader must refuse, each a one-place change of sw_pic. */
static void test_switch_unrecognised(void **state)
{
	uint8_t tab[16], code[SW_FN_SIZE];
	static const uint64_t outside[4] = {0x400017, 0x40001d, 0x400023, 0x400100};
	static const uint64_t mid_insn[4] = {0x400017, 0x40001d, 0x400024, 0x400029};

	(void)state;
	sw_rel_table(tab, sw_cases, 4);
	/* jb instead of ja: the check bounds nothing on the fall-through */
	memcpy(code, sw_pic, sizeof(code));
	code[3] = 0x72;
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
	/* cmp esi,3: another register than the index */
	memcpy(code, sw_pic, sizeof(code));
	code[1] = 0xfe;
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
	/* xchg ax,ax instead of mov edi,edi: the upper half of rdi unknown */
	memcpy(code, sw_pic, sizeof(code));
	code[5] = 0x66;
	code[6] = 0x90;
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
	/* movsxd rax,[rdx+rdi*8]: not a table of int32 offsets */
	memcpy(code, sw_pic, sizeof(code));
	code[17] = 0xfa;
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
	/* case 3 becomes `jmp 0x400007; nop x3; ret`: a branch into the
	 * dispatch after its bound check */
	memcpy(code, sw_pic, sizeof(code));
	memcpy(code + 0x29, (const uint8_t[]){0xeb, 0xdc, 0x90, 0x90, 0x90}, 5);
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
	/* an entry outside the function, one inside an instruction */
	sw_rel_table(tab, outside, 4);
	expect_sw(sw_pic, sizeof(sw_pic), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
	sw_rel_table(tab, mid_insn, 4);
	expect_sw(sw_pic, sizeof(sw_pic), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
}

/* Index shapes gcc emits besides sw_pic's `cmp edi; ja; mov edi,edi`. */
static void test_switch_index_shapes(void **state)
{
	uint8_t tab[16], code[SW_FN_SIZE];
	/* sub edi,0x20; cmp dil,3 | ja 0x400035; lea rdx,[rip+0x1ffff0];
	 * movzx edi,dil; movsxd rax,[rdx+rdi*4]; add rax,rdx; jmp rax;
	 * cases at 0x40001d + 6i, default 0x400035: an 8-bit bound */
	static const uint8_t byte[] = {0x83, 0xef, 0x20, 0x40, 0x80, 0xff, 0x03, 0x77, 0x2c, 0x48,
	                               0x8d, 0x15, 0xf0, 0xff, 0x1f, 0x00, 0x40, 0x0f, 0xb6, 0xff,
	                               0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xb8,
	                               0x0a, 0x00, 0x00, 0x00, 0xc3, 0xb8, 0x14, 0x00, 0x00, 0x00,
	                               0xc3, 0xb8, 0x1e, 0x00, 0x00, 0x00, 0xc3, 0xb8, 0x28, 0x00,
	                               0x00, 0x00, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3};
	static const uint64_t byte_cases[4] = {0x40001d, 0x400023, 0x400029, 0x40002f};
	struct hook_arch_plan plan;

	(void)state;
	sw_rel_table(tab, byte_cases, 4);
	assert_int_equal(sw_prep(byte, sizeof(byte), tab, sizeof(tab), &plan), ADA_HOOK_OK);
	assert_int_equal(sw_prep(byte, sizeof(byte), tab, 12, &plan), ADA_SKIP_JUMP_TABLE);
	/* movzx edi,di (16 bits) after an 8-bit cmp: bits 8-15 unbounded */
	uint8_t wide[sizeof(byte)];
	memcpy(wide, byte, sizeof(wide));
	wide[18] = 0xb7;
	assert_int_equal(sw_prep(wide, sizeof(wide), tab, sizeof(tab), &plan), ADA_SKIP_JUMP_TABLE);
	/* mov eax,edi; cmp edi,3 | ja 0x40002f; lea rdx,[rip+0x1ffff2];
	 * movsxd rax,[rdx+rax*4]; ...: the index copied before the bound */
	memcpy(code, sw_pic, sizeof(code));
	memcpy(code, (const uint8_t[]){0x89, 0xf8, 0x83, 0xff, 0x03, 0x77, 0x28}, 7);
	code[17] = 0x82;
	sw_rel_table(tab, sw_cases, 4);
	assert_int_equal(sw_prep(code, sizeof(code), tab, sizeof(tab), &plan), ADA_HOOK_OK);
	/* mov eax,esi instead: the bound is on another register */
	code[1] = 0xf0;
	assert_int_equal(sw_prep(code, sizeof(code), tab, sizeof(tab), &plan), ADA_SKIP_JUMP_TABLE);
}

/* Non-PIC: cmp edi,3; ja 0x400026 | mov edi,edi; jmp [rdi*8+0x600000];
 * 0x40000e / 0x400014 / 0x40001a / 0x400020: mov eax,10/20/30/40; ret;
 * 0x400026: mov eax,-1; ret. Absolute 8-byte entries. */
static void test_switch_abs(void **state)
{
	static const uint8_t code[] = {0x83, 0xff, 0x03, 0x77, 0x21, 0x89, 0xff, 0xff, 0x24,
	                               0xfd, 0x00, 0x00, 0x60, 0x00, 0xb8, 0x0a, 0x00, 0x00,
	                               0x00, 0xc3, 0xb8, 0x14, 0x00, 0x00, 0x00, 0xc3, 0xb8,
	                               0x1e, 0x00, 0x00, 0x00, 0xc3, 0xb8, 0x28, 0x00, 0x00,
	                               0x00, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3};
	uint64_t t[4] = {0x40000e, 0x400014, 0x40001a, 0x400020};
	uint8_t tab[32];

	(void)state;
	memcpy(tab, t, sizeof(tab));
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_HOOK_OK);
	t[1] = 0x400003; /* into the patch */
	memcpy(tab, t, sizeof(tab));
	expect_sw(code, sizeof(code), tab, sizeof(tab), ADA_SKIP_JUMP_TABLE);
}

static void test_undecodable(void **state)
{
	/* push rbp; mov rbp,rsp; nop | (bad) 06; jmp 0x400002; ret:
	 * the bytes after an undecodable one could be a branch into the patch */
	uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0x06, 0xeb, 0xfa, 0xc3};
	(void)state;
	expect_skip(code, sizeof(code), ADA_SKIP_UNDECODABLE);
	code[7] = 0x10; /* jmp far past: nothing can reach the patch */
	expect_skip(code, sizeof(code), ADA_HOOK_OK);
}

/* Checks one candidate first instruction `in` (padded with nops): the
 * length and relocation case prepare() records (through its fast path
 * for common encodings) must be what capstone decodes. */
static void fast_check(csh cs, const uint8_t *in, size_t n)
{
	uint8_t code[32];
	struct hook_arch_plan plan;
	cs_insn *ci = NULL;

	memset(code, 0x90, sizeof(code));
	memcpy(code, in, n);
	size_t cnt = cs_disasm(cs, code, sizeof(code), FN, 1, &ci);
	if (cnt != 1)
		return; /* invalid encoding: nothing to compare */
	int rip = 0,
	    branch = cs_insn_group(cs, ci, CS_GRP_JUMP) || cs_insn_group(cs, ci, CS_GRP_CALL);
	for (int i = 0; i < ci->detail->x86.op_count; i++)
		rip |= ci->detail->x86.operands[i].type == X86_OP_MEM &&
		       ci->detail->x86.operands[i].mem.base == X86_REG_RIP;
	if (prep(code, sizeof(code), FN, &plan) == ADA_HOOK_OK && !rip && !branch) {
		assert_int_equal(plan.insns[0].len, ci->size);
		assert_int_equal(plan.insns[0].kind, 0 /* X86_RELOC_PLAIN */);
	}
	cs_free(ci, cnt);
}

/* Every encoding the fast path may take, against capstone. */
static void test_fast_prologue(void **state)
{
	static const uint8_t ops[] = {0x01, 0x03, 0x09, 0x0b, 0x21, 0x23, 0x29, 0x2b, 0x31,
	                              0x33, 0x39, 0x3b, 0x85, 0x89, 0x8b, 0x83, 0x81};
	csh cs;
	(void)state;
	assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &cs), CS_ERR_OK);
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	for (int rex = 0x3f; rex <= 0x4f; rex++) { /* 0x3f: no REX */
		uint8_t b[12] = {(uint8_t)rex, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
		uint8_t *o = rex == 0x3f ? b + 1 : b; /* instruction start */
		size_t at = rex == 0x3f ? 0 : 1;      /* opcode within o */
		for (int r = 0; r < 8; r++) {
			o[at] = (uint8_t)(0x50 + r); /* push r */
			fast_check(cs, o, at + 1);
			o[at] = (uint8_t)(0xb8 + r); /* mov r, imm32 (imm64 with REX.W) */
			fast_check(cs, o, at + 9);
		}
		for (size_t k = 0; k < sizeof(ops); k++)
			for (int modrm = 0xc0; modrm <= 0xff; modrm++) {
				o[at] = ops[k];
				o[at + 1] = (uint8_t)modrm;
				fast_check(cs, o, at + 6);
			}
	}
	static const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
	fast_check(cs, endbr, sizeof(endbr));
	cs_close(&cs);
}

/* ada attach moves a thread stopped inside the displaced bytes to the
 * same instruction's relocated copy: only at instruction boundaries
 * strictly inside the patch, only when the trampoline is the plan's. */
static void test_moved_pc(void **state)
{
	/* push rbp; movzbl eax,[rdi]; mov rbp,rsp | pop rbp; ret: relocated
	 * as is, so offsets 1 and 4 keep their distance from the copy's start */
	static const uint8_t code[] = {0x55, 0x0f, 0xb6, 0x07, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	uint8_t jcc[0x40];
	struct hook_arch_plan plan;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE], patch[HOOK_ARCH_MAX_PATCH];

	(void)state;
	assert_int_equal(prep(code, sizeof(code), FN, &plan), ADA_HOOK_OK);
	assert_int_equal(plan.patch_len, 7);
	assert_true(hook_arch_emit_trampoline(&plan, buf, TR, FN_ID, HANDLER, TR) > FRAME);
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 1), TR + FRAME + 1);
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 4), TR + FRAME + 4);
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN), 0);     /* entry: not inside */
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 2), 0); /* mid-instruction */
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 7), 0); /* behind the patch */
	hook_arch_patch_bytes(&plan, TR, patch);
	assert_int_equal(hook_arch_patch_target(&plan, patch), TR);
	buf[FRAME + 2] ^= 1; /* not the trampoline this plan makes */
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 1), 0);

	/* test edi,edi; je rel8; push rbx: the je grows to rel32 (6 bytes),
	 * so push rbx (FN+4) is at copy+8 */
	memset(jcc, 0x90, sizeof(jcc));
	memcpy(jcc, "\x85\xff\x74\x20\x53", 5);
	jcc[sizeof(jcc) - 1] = 0xc3;
	assert_int_equal(prep(jcc, sizeof(jcc), FN, &plan), ADA_HOOK_OK);
	assert_true(hook_arch_emit_trampoline(&plan, buf, TR, FN_ID, HANDLER, TR) > FRAME);
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 2), TR + FRAME + 2);
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 4), TR + FRAME + 8);
	assert_int_equal(hook_arch_moved_pc(&plan, buf, TR, FN + 3), 0);
}

/* The crash handler's map: each displaced instruction's offset in the
 * function and where its copy starts in the trampoline, the same places
 * hook_arch_moved_pc() finds (and the grown jcc shifts what follows). */
static void test_reloc_map(void **state)
{
	static const uint8_t code[] = {0x55, 0x0f, 0xb6, 0x07, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	uint8_t jcc[0x40];
	struct hook_arch_plan plan;
	struct hook_arch_reloc_map m;

	(void)state;
	assert_int_equal(prep(code, sizeof(code), FN, &plan), ADA_HOOK_OK);
	assert_true(hook_arch_reloc_map(&plan, TR, false, &m));
	assert_int_equal(m.n, 3);
	assert_int_equal(m.off[0], 0);
	assert_int_equal(m.at[0], FRAME);
	assert_int_equal(m.off[1], 1);
	assert_int_equal(m.at[1], FRAME + 1);
	assert_int_equal(m.off[2], 4);
	assert_int_equal(m.at[2], FRAME + 4);
	assert_int_equal(m.end_off, 7); /* the jump back: behind the 3-byte mov */
	assert_int_equal(m.end_at, FRAME + 7);
	/* The fast form's frame is shorter: the same copies, earlier. */
	assert_true(hook_arch_reloc_map(&plan, TR, true, &m));
	assert_int_equal(m.at[0], HOOK_ARCH_FAST_RET_POINT_OFF + 5 + 8);
	assert_int_equal(m.at[2] - m.at[0], 4);

	memset(jcc, 0x90, sizeof(jcc));
	memcpy(jcc, "\x85\xff\x74\x20\x53", 5);
	jcc[sizeof(jcc) - 1] = 0xc3;
	assert_int_equal(prep(jcc, sizeof(jcc), FN, &plan), ADA_HOOK_OK);
	assert_true(hook_arch_reloc_map(&plan, TR, false, &m));
	assert_int_equal(m.n, 3);
	assert_int_equal(m.off[2], 4);
	assert_int_equal(m.at[2], FRAME + 8); /* je rel8 became je rel32 */
	/* The map the install takes from the emission itself (one emission
	 * per function) is the one emitted again, byte for byte, and so is
	 * the trampoline. */
	uint8_t a[HOOK_ARCH_MAX_TRAMPOLINE], b[HOOK_ARCH_MAX_TRAMPOLINE];
	struct hook_arch_reloc_map fm, em;
	memset(&fm, 0, sizeof(fm));
	memset(&em, 0xee, sizeof(em));
	assert_true(hook_arch_reloc_map(&plan, TR, true, &fm));
	size_t la = hook_arch_emit_trampoline_fast(&plan, a, TR, FN_ID, TR + 64, TR);
	size_t lb = hook_arch_emit_trampoline_fast_map(&plan, b, TR, FN_ID, TR + 64, TR, &em);
	assert_true(la > 0);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_int_equal(em.n, fm.n);
	assert_memory_equal(em.off, fm.off, fm.n);
	assert_memory_equal(em.at, fm.at, fm.n);
	assert_int_equal(em.end_off, fm.end_off);
	assert_int_equal(em.end_at, fm.end_at);
	plan.insn_count = 0; /* emits no trampoline: no map */
	assert_false(hook_arch_reloc_map(&plan, TR, false, &m));
	assert_int_equal(hook_arch_emit_trampoline_fast_map(&plan, b, TR, FN_ID, HANDLER, TR, &em),
	                 0);
}

static void test_skip_names(void **state)
{
	(void)state;
	for (int r = 0; r < ADA_SKIP_REASON_COUNT; r++)
		assert_string_not_equal(hook_skip_name((enum ada_hook_skip)r), "unknown");
	assert_string_equal(hook_skip_name(ADA_SKIP_REASON_COUNT), "unknown");
	assert_string_equal(hook_skip_name(ADA_SKIP_JUMP_TABLE), "jump_table");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame),
	    cmocka_unit_test(test_plain),
	    cmocka_unit_test(test_rip_first),
	    cmocka_unit_test(test_lea_far),
	    cmocka_unit_test(test_rip_load_far),
	    cmocka_unit_test(test_jcc_rel8),
	    cmocka_unit_test(test_jcc_far),
	    cmocka_unit_test(test_jmp),
	    cmocka_unit_test(test_call),
	    cmocka_unit_test(test_endbr),
	    cmocka_unit_test(test_return_trampoline),
	    cmocka_unit_test(test_patch_bytes),
	    cmocka_unit_test(test_too_short),
	    cmocka_unit_test(test_branch_into_patch),
	    cmocka_unit_test(test_unrelocatable),
	    cmocka_unit_test(test_jump_table),
	    cmocka_unit_test(test_switch_pic),
	    cmocka_unit_test(test_switch_into_patch),
	    cmocka_unit_test(test_switch_unrecognised),
	    cmocka_unit_test(test_switch_abs),
	    cmocka_unit_test(test_switch_index_shapes),
	    cmocka_unit_test(test_undecodable),
	    cmocka_unit_test(test_skip_names),
	    cmocka_unit_test(test_moved_pc),
	    cmocka_unit_test(test_reloc_map),
	    cmocka_unit_test(test_fast_prologue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
