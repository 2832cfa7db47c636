/*
 * x86_fast_len() (src/hook/x86_64/x86_len.c) against capstone, instruction
 * by instruction, over the executable sections of real binaries (libc,
 * libstdc++, python3, and this test itself): wherever the table answers,
 * its length must be capstone's, capstone must decode there too, and a
 * direct branch's target must be capstone's. The table may decline (0):
 * the callers then ask capstone. Coverage is printed, not asserted.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hook_arch.h"
#include "x86_internal.h"

static csh cs;
static cs_insn *ci;
static unsigned long long n_insn, n_fast, n_bad, n_lenient, n_sw, n_lenient_sw;
static int strict; /* 0: bytes capstone rejects may be decoded (data in .text) */

/* Prints the first mismatches with their bytes (all of them with
 * ADA_LEN_ALL=1 in the environment), counts them all. */
#define BAD(...)                                                                                   \
	do {                                                                                       \
		if (n_bad++ < (getenv("ADA_LEN_ALL") ? 100000000ULL : 40)) {                       \
			printf("# MISMATCH ");                                                     \
			printf(__VA_ARGS__);                                                       \
			for (size_t k_ = 0; k_ < 8 && off + k_ < size; k_++)                       \
				printf(" %02x", code[off + k_]);                                   \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

static int is_direct_branch(unsigned long long *target)
{
	char *end;
	if (ci->id != X86_INS_JMP && ci->id != X86_INS_CALL &&
	    !(ci->id >= X86_INS_JAE && ci->id <= X86_INS_JS))
		return 0;
	*target = strtoull(ci->op_str, &end, 0);
	return end != ci->op_str && *end == '\0';
}

/* The first field where the compact decoder's view of an instruction
 * differs from capstone's (both canonical), or NULL. */
static const char *sw_diff(const struct x86_sw_insn *f, const struct x86_sw_insn *s)
{
	if (f->address != s->address || f->size != s->size)
		return "address/size";
	if (f->id != s->id)
		return "id";
	if (f->op_count != s->op_count)
		return "op_count";
	if (f->addr_size != s->addr_size)
		return "addr_size";
	if (f->modrm != s->modrm)
		return "modrm";
	if (f->grp != s->grp)
		return "groups";
	if (f->wfams != s->wfams || memcmp(f->wbits, s->wbits, sizeof(f->wbits)))
		return "registers written";
	for (unsigned k = 0; k < 2; k++) {
		const cs_x86_op *a = &f->op[k], *b = &s->op[k];
		if (a->type != b->type || a->size != b->size)
			return k ? "op1 type/size" : "op0 type/size";
		if ((a->type == X86_OP_REG && a->reg != b->reg) ||
		    (a->type == X86_OP_IMM && a->imm != b->imm) ||
		    (a->type == X86_OP_MEM && memcmp(&a->mem, &b->mem, sizeof(a->mem))))
			return k ? "op1 value" : "op0 value";
	}
	return memcmp(f, s, sizeof(*f)) ? "padding" : NULL;
}

/* Linear sweep of one section, as hook_arch_prepare sweeps a body. */
static void sweep(const uint8_t *code, size_t size, uint64_t addr, const char *what)
{
	size_t off = 0;
	while (off < size) {
		const uint8_t *p = code + off;
		size_t left = size - off;
		uint64_t pc = addr + off;
		struct x86_len_info li;
		size_t fast = x86_fast_len(code + off, size - off, &li);
		struct x86_sw_insn swf, swc;
		size_t sw = x86_sw_fast(code + off, size - off, addr + off, &swf);
		if (!cs_disasm_iter(cs, &p, &left, &pc, ci)) {
			if ((fast || sw) && !strict) {
				n_lenient++;
				n_lenient_sw += sw != 0;
			} else if (fast || sw)
				BAD("%s+0x%zx: table says %zu bytes (switch decoder %zu), capstone "
				    "cannot decode",
				    what, off, fast, sw);
			off++;
			continue;
		}
		n_insn++;
		if (sw) {
			const char *why = NULL;
			n_sw++;
			x86_sw_from_cs(&swc, ci);
			if (sw != ci->size || (why = sw_diff(&swf, &swc)) != NULL)
				BAD("%s+0x%zx: %s %s: switch decoder differs (%s)", what, off,
				    ci->mnemonic, ci->op_str, sw != ci->size ? "length" : why);
		}
		if (fast) {
			n_fast++;
			if (fast != ci->size)
				BAD("%s+0x%zx: %s %s: table %zu bytes, capstone %u", what, off,
				    ci->mnemonic, ci->op_str, fast, ci->size);
			/* What the materialize scan (x86_prepare.c) takes from
			 * li without capstone: without wide_imm every immediate
			 * is small, without absmem no memory operand lacks both
			 * base and segment. */
			const cs_x86 *x = &ci->detail->x86;
			for (unsigned k = 0; k < x->op_count; k++) {
				const cs_x86_op *o = &x->operands[k];
				uint64_t v = (uint64_t)o->imm;
				if (o->type == X86_OP_IMM && !li.rel && !li.wide_imm &&
				    v > 0xffff && !(v >= 0xffffff80u && v <= 0xffffffffu) &&
				    v < UINT64_MAX - 127)
					BAD("%s+0x%zx: %s %s: immediate 0x%llx not flagged wide",
					    what, off, ci->mnemonic, ci->op_str,
					    (unsigned long long)v);
				if (o->type == X86_OP_MEM && o->mem.base == X86_REG_INVALID &&
				    o->mem.segment == X86_REG_INVALID && !li.absmem)
					BAD("%s+0x%zx: %s %s: base-less memory operand not flagged",
					    what, off, ci->mnemonic, ci->op_str);
			}
			unsigned long long t = 0;
			int br = is_direct_branch(&t);
			if (li.rel) {
				int64_t d = li.rel == 1 ? (int8_t)code[off + fast - 1] : 0;
				if (li.rel == 4) {
					int32_t d32;
					memcpy(&d32, code + off + fast - 4, 4);
					d = d32;
				}
				if (!br || t != addr + off + fast + (uint64_t)d)
					BAD("%s+0x%zx: %s %s: branch target differs", what, off,
					    ci->mnemonic, ci->op_str);
			} else if (br) {
				BAD("%s+0x%zx: %s %s: direct branch not flagged", what, off,
				    ci->mnemonic, ci->op_str);
			}
		}
		off += ci->size;
	}
}

/* 1 when path was read, 0 when it is not installed. */
static int sweep_file(const char *path, int is_strict)
{
	strict = is_strict;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size)
			sweep(d->d_buf, d->d_size, sh.sh_addr, path);
	}
	elf_end(e);
	close(fd);
	return 1;
}

static void test_real_binaries(void **state)
{
	(void)state;
	/* libcrypto's hand-written assembly keeps constant tables inside
	 * .text: there the table may decode bytes capstone rejects (e.g. a
	 * VEX form without its mandatory prefix); lengths must still agree
	 * wherever both decode, and test_hook_verdicts.c shows the hook
	 * verdicts are the same. Everywhere else the table must decline
	 * wherever capstone does. */
	static const struct {
		const char *path;
		int strict;
	} files[] = {
	    {"/lib/x86_64-linux-gnu/libc.so.6", 1},
	    {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 1},
	    {"/usr/bin/python3.11", 1},
	    {"/lib/x86_64-linux-gnu/libm.so.6", 1},
	    {"/proc/self/exe", 1},
	    {"/usr/bin/cmake", 1},
	    {"/usr/lib/x86_64-linux-gnu/libcrypto.so.3", 0},
	};
	int read = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		unsigned long long a = n_insn, b = n_fast, c = n_sw;
		if (!sweep_file(files[i].path, files[i].strict))
			continue;
		read++;
		printf("# %s: %llu instructions, %.1f%% by the table, %.1f%% by the switch "
		       "decoder\n",
		       files[i].path, n_insn - a,
		       100.0 * (double)(n_fast - b) / (double)(n_insn - a ? n_insn - a : 1),
		       100.0 * (double)(n_sw - c) / (double)(n_insn - a ? n_insn - a : 1));
	}
	assert_true(read >= 2); /* libc and the test itself at least */
	printf("# non-strict files: %llu positions the table decodes and capstone rejects, "
	       "%llu of them the switch decoder\n",
	       n_lenient, n_lenient_sw);
	assert_int_equal(n_bad, 0);
	/* Bytes capstone rejects make x86_switch.c refuse the function: the
	 * compact decoder must reject them too. */
	assert_int_equal(n_lenient_sw, 0);
	assert_true(n_fast > n_insn / 2);
}

/* Encodings the table must decline or get exactly right (hand-picked
 * corner cases that real code may not contain). */
static void test_corners(void **state)
{
	(void)state;
	static const struct {
		uint8_t b[16];
		size_t n, want;
	} v[] = {
	    {{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, 10}, /* movabs rax, imm64 */
	    {{0x66, 0xb8, 1, 2}, 4, 4},                     /* mov ax, imm16 */
	    {{0x66, 0x81, 0xc0, 1, 2}, 5, 5},               /* add ax, imm16 */
	    {{0x66, 0x48, 0x15, 1, 2, 3, 4}, 7, 7},         /* adc rax, imm32: REX.W beats 66 */
	    {{0x66, 0x48, 0x81, 0xc0, 1, 2, 3, 4}, 8, 8},   /* add rax, imm32 */
	    {{0x66, 0x48, 0xc7, 0xc0, 1, 2, 3, 4}, 8, 8},   /* mov rax, imm32 */
	    {{0x66, 0xe9, 1, 2}, 4, 0},                     /* jmp rel16: declined */
	    {{0xff, 0xe0}, 2, 0},                           /* jmp rax: declined */
	    {{0xe2, 0xfe}, 2, 0},                           /* loop: declined */
	    {{0xc7, 0xf8, 0, 0, 0, 0}, 6, 0},               /* xbegin: declined */
	    {{0x8b, 0x04, 0x25, 1, 2, 3, 4}, 7, 7},         /* mov eax, [abs32] (SIB, no base) */
	    {{0x8b, 0x05, 1, 2, 3, 4}, 6, 6},               /* mov eax, [rip+d32] */
	    {{0x8b, 0x44, 0x24, 8}, 4, 4},                  /* mov eax, [rsp+8] */
	    {{0x8b, 0x44, 0x24}, 3, 0},                     /* truncated */
	    {{0xe8, 1, 2, 3}, 4, 0},                        /* truncated call */
	    {{0xc5, 0xf8, 0x77}, 3, 0},                     /* vzeroupper: declined */
	    {{0xc4, 0xe3, 0x7d, 0x18, 0xc1, 1}, 6, 6},      /* vinsertf128 ymm0,ymm0,xmm1,1 */
	    {{0xf3, 0x0f, 0x1e, 0xfa}, 4, 4},               /* endbr64 */
	    {{0x67, 0x8b, 0x00}, 3, 0},                     /* 32-bit address: declined */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct x86_len_info li;
		size_t got = x86_fast_len(v[i].b, v[i].n, &li);
		if (got != v[i].want)
			fail_msg("case %zu: %zu, want %zu", i, got, v[i].want);
	}
}

/* Lengths by the VEX/EVEX rules alone (x86_vex_any_len), and the sweep
 * (hook_arch_insn_len) staying in step through AVX-512 code capstone 4
 * cannot decode: glibc 2.36's __wmemchr_evex tail, where a sweep that
 * skipped one byte read `e2 68` inside a bzhi as a loop into the padding
 * of a function 0x68 bytes on (refusing it that padding). */
static void test_vex_any(void **state)
{
	(void)state;
	static const struct {
		uint8_t b[12];
		size_t n, want;
	} v[] = {
	    {{0x62, 0xf3, 0x7d, 0x20, 0x1f, 0x47, 0x02, 0x00},
	     8,
	     8},                                          /* vpcmpd k0,ymm16,[rdi+0x40],0 */
	    {{0xc5, 0xfb, 0x93, 0xc0}, 4, 4},             /* kmovd eax, k0 */
	    {{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x06}, 6, 6}, /* vmovups zmm0, [rsi] */
	    {{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x86, 1, 2, 3, 4}, 10, 10}, /* disp32 */
	    {{0xc5, 0xf8, 0x77}, 3, 3},                                 /* vzeroupper */
	    {{0xc4, 0xe3, 0x7d, 0x18, 0xc1, 1}, 6, 6},                  /* map 3: imm8 */
	    {{0xc4, 0xe7, 0x7d, 0x18, 0xc1}, 5, 0},                     /* map 7: none */
	    {{0x62, 0xf1, 0x7c, 0x48}, 4, 0},                           /* truncated */
	    {{0x62, 0xf1, 0x78, 0x48, 0x10, 0x06}, 6, 0},               /* P1 bit 2 clear */
	    {{0x48, 0x89, 0xf8}, 3, 0},                                 /* not VEX */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t got = x86_vex_any_len(v[i].b, v[i].n);
		if (got != v[i].want)
			fail_msg("case %zu: %zu, want %zu", i, got, v[i].want);
	}
	static const uint8_t code[] = {
	    0x62, 0xf3, 0x7d, 0x20, 0x1f, 0x47, 0x03, 0x00, /* vpcmpd k0,ymm16,[rdi+0x60],0 */
	    0xc5, 0xfb, 0x93, 0xc0,                         /* kmovd eax, k0 */
	    0xb9, 0xff, 0xff, 0x00, 0x00,                   /* mov ecx, 0xffff */
	    0xc4, 0xe2, 0x68, 0xf5, 0xc9,                   /* bzhi ecx, ecx, edx */
	    0x21, 0xc8,                                     /* and eax, ecx */
	    0x75, 0x36,                                     /* jne +0x36 */
	    0xc3,                                           /* ret */
	};
	uint64_t pc = 0x1000, off = 0, targets = 0, target = 0;
	while (off < sizeof(code)) {
		int has = 0;
		size_t n =
		    hook_arch_insn_len(code + off, sizeof(code) - off, pc + off, &target, &has);
		assert_true(n > 0);
		off += n;
		if (has) {
			assert_int_equal(target, pc + 26 + 0x36); /* only the real jne */
			targets++;
		}
	}
	assert_int_equal(off, sizeof(code));
	assert_int_equal(targets, 1);
}

/* The switch reader's compact decoder (x86_sw_fast) on hand-picked
 * forms: the ones a switch dispatch is made of, register-width corners,
 * capstone 4's immediate and implicit-write quirks, and forms it must
 * leave to capstone. Wherever it answers, its view must be capstone's. */
static void test_sw_corners(void **state)
{
	(void)state;
	static const struct {
		uint8_t b[16];
		size_t n;
		int fast; /* 1: decoded here, 0: left to capstone */
	} v[] = {
	    {{0xff, 0xe0}, 2, 1},                                   /* jmp rax */
	    {{0x41, 0xff, 0xe3}, 3, 1},                             /* jmp r11 */
	    {{0xff, 0x25, 0x10, 0, 0, 0}, 6, 1},                    /* jmp [rip+0x10] */
	    {{0xff, 0x24, 0xc5, 0x00, 0x10, 0, 0}, 7, 1},           /* jmp [rax*8+0x1000] */
	    {{0x41, 0xff, 0x64, 0xc5, 0x08}, 5, 1},                 /* jmp [r13+rax*8+8] */
	    {{0x48, 0x63, 0x04, 0xba}, 4, 1},                       /* movsxd rax,[rdx+rdi*4] */
	    {{0x4a, 0x63, 0x04, 0x8a}, 4, 1},                       /* movsxd rax,[rdx+r9*4] */
	    {{0x48, 0x8d, 0x15, 0x10, 0, 0, 0}, 7, 1},              /* lea rdx,[rip+0x10] */
	    {{0x48, 0x01, 0xd0}, 3, 1},                             /* add rax, rdx */
	    {{0x48, 0x03, 0xc2}, 3, 1},                             /* add rax, rdx (03) */
	    {{0x83, 0xff, 0x03}, 3, 1},                             /* cmp edi, 3 */
	    {{0x83, 0xf8, 0xff}, 3, 1},                             /* cmp eax, -1 */
	    {{0x48, 0x83, 0xf8, 0x80}, 4, 1},                       /* cmp rax, -0x80 */
	    {{0x81, 0xff, 0x00, 0x01, 0, 0}, 6, 1},                 /* cmp edi, 0x100 */
	    {{0x81, 0xc2, 0x81, 0xe6, 0xa1, 0xd8}, 6, 1},           /* add edx, 0xd8a1e681 */
	    {{0x48, 0x81, 0xc4, 0x00, 0xff, 0xff, 0xff}, 7, 1},     /* add rsp, -0x100 */
	    {{0x66, 0x83, 0xf8, 0x05}, 4, 1},                       /* cmp ax, 5 */
	    {{0x40, 0x80, 0xff, 0x80}, 4, 1},                       /* cmp dil, 0x80 */
	    {{0x80, 0xfc, 0x07}, 3, 1},                             /* cmp ah, 7 */
	    {{0x3c, 0xff}, 2, 1},                                   /* cmp al, 0xff */
	    {{0x3d, 0xff, 0xff, 0xff, 0xff}, 5, 1},                 /* cmp eax, 0xffffffff */
	    {{0x77, 0x05}, 2, 1},                                   /* ja +5 */
	    {{0x0f, 0x83, 0x10, 0, 0, 0}, 6, 1},                    /* jae rel32 */
	    {{0x0f, 0x86, 0xf0, 0xff, 0xff, 0xff}, 6, 1},           /* jbe back */
	    {{0xe8, 0x10, 0, 0, 0}, 5, 1},                          /* call rel32 */
	    {{0xff, 0xd0}, 2, 1},                                   /* call rax */
	    {{0xff, 0x15, 0x10, 0, 0, 0}, 6, 1},                    /* call [rip+0x10] */
	    {{0xeb, 0xfe}, 2, 1},                                   /* jmp $ */
	    {{0x89, 0xff}, 2, 1},                                   /* mov edi, edi */
	    {{0x48, 0x89, 0xf8}, 3, 1},                             /* mov rax, rdi */
	    {{0x44, 0x8b, 0x04, 0x24}, 4, 1},                       /* mov r8d, [rsp] */
	    {{0x8b, 0x04, 0x25, 0x10, 0, 0, 0}, 7, 1},              /* mov eax, [0x10] */
	    {{0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 9, 1},  /* mov rax, fs:[0x28] */
	    {{0xb8, 0xff, 0xff, 0xff, 0xff}, 5, 1},                 /* mov eax, 0xffffffff */
	    {{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, 1},          /* movabs rax, imm64 */
	    {{0xb4, 0x01}, 2, 1},                                   /* mov ah, 1 */
	    {{0x40, 0xb4, 0x01}, 3, 1},                             /* mov spl, 1 */
	    {{0xc7, 0x45, 0xf8, 0xff, 0xff, 0xff, 0xff}, 7, 1},     /* mov dword [rbp-8], -1 */
	    {{0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff}, 7, 1},     /* mov rax, -1 */
	    {{0x66, 0xc7, 0x45, 0xf8, 0xff, 0xff}, 6, 1},           /* mov word [rbp-8], 0xffff */
	    {{0x0f, 0xb6, 0x07}, 3, 1},                             /* movzx eax, byte [rdi] */
	    {{0x44, 0x0f, 0xb7, 0xc0}, 4, 1},                       /* movzx r8d, ax */
	    {{0x48, 0x0f, 0xbe, 0xc7}, 4, 1},                       /* movsx rax, dil */
	    {{0x0f, 0xbe, 0xc4}, 3, 1},                             /* movsx eax, ah */
	    {{0x48, 0x98}, 2, 1},                                   /* cdqe */
	    {{0x98}, 1, 1},                                         /* cwde */
	    {{0x99}, 1, 1},                                         /* cdq: eax, edx */
	    {{0x48, 0x99}, 2, 1},                                   /* cqo */
	    {{0xa8, 0x01}, 2, 1},                                   /* test al, 1 */
	    {{0x85, 0xc0}, 2, 1},                                   /* test eax, eax */
	    {{0x5b}, 1, 1},                                         /* pop rbx */
	    {{0x41, 0x5c}, 2, 1},                                   /* pop r12 */
	    {{0x55}, 1, 1},                                         /* push rbp */
	    {{0xc3}, 1, 1},                                         /* ret */
	    {{0xc9}, 1, 1},                                         /* leave */
	    {{0x31, 0xc0}, 2, 1},                                   /* xor eax, eax */
	    {{0x0f, 0x44, 0xc2}, 3, 1},                             /* cmove eax, edx */
	    {{0x0f, 0x94, 0xc0}, 3, 1},                             /* sete al */
	    {{0x48, 0xc1, 0xe0, 0x04}, 4, 1},                       /* shl rax, 4 */
	    {{0x48, 0xd3, 0xe8}, 3, 1},                             /* shr rax, cl */
	    {{0x48, 0x6b, 0xc0, 0xff}, 4, 1},                       /* imul rax, rax, -1 */
	    {{0xf7, 0xd8}, 2, 1},                                   /* neg eax */
	    {{0xff, 0xc0}, 2, 1},                                   /* inc eax */
	    {{0x0f, 0x1f, 0x44, 0, 0}, 5, 1},                       /* nop dword [rax+rax] */
	    {{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0}, 10, 1}, /* nop word cs:[...] */
	    {{0xf3, 0x0f, 0x1e, 0xfa}, 4, 1},                       /* endbr64 */
	    {{0x90}, 1, 1},                                         /* nop */
	    {{0xf3, 0xf3, 0x0f, 0x1e, 0xfa}, 5, 0},                 /* endbr64, f3 twice */
	    {{0x66, 0x48, 0x15, 1, 2, 3, 4}, 7, 1}, /* adc rax, imm32 (66 ignored) */
	    {{0x66, 0x48, 0x83, 0xc0, 0xff}, 5, 1}, /* add rax, -1 */
	    {{0x0f, 0x1f, 0xc2}, 3, 0},             /* nop edx: capstone 4 rejects */
	    {{0x0f, 0x1f, 0x70, 0x00}, 4, 0},       /* 0F 1F /6: rejected too */
	    {{0x3e, 0xff, 0xe0}, 3, 0},             /* notrack jmp rax */
	    {{0xf2, 0xff, 0xe0}, 3, 0},             /* bnd jmp rax */
	    {{0x66, 0xff, 0xe0}, 3, 0},             /* jmp ax */
	    {{0xf7, 0xe1}, 2, 0},                   /* mul ecx: rax:rdx */
	    {{0x66, 0x50}, 2, 0},                   /* push ax */
	    {{0xf3, 0xa4}, 2, 0},                   /* rep movsb */
	    {{0x0f, 0x05}, 2, 0},                   /* syscall */
	    {{0x0f, 0x0b}, 2, 0},                   /* ud2 */
	    {{0xf4}, 1, 0},                         /* hlt */
	    {{0xcc}, 1, 0},                         /* int3 */
	    {{0xf0, 0x01, 0x07}, 3, 0},             /* lock add */
	    {{0x67, 0x8b, 0x00}, 3, 0},             /* 32-bit address */
	    {{0xc2, 0x08, 0x00}, 3, 0},             /* ret 8 */
	    {{0xf3, 0xc3}, 2, 0},                   /* rep ret */
	    {{0x41, 0x90}, 2, 0},                   /* xchg r8d, eax */
	    {{0x87, 0xd0}, 2, 0},                   /* xchg eax, edx */
	    {{0x0f, 0xb1, 0x0f}, 3, 0},             /* cmpxchg */
	    {{0xc5, 0xf8, 0x77}, 3, 0},             /* vzeroupper */
	    {{0x66, 0x0f, 0xd7, 0xc1}, 4, 0},       /* pmovmskb eax, xmm1 */
	    {{0xc7, 0xf8, 0, 0, 0, 0}, 6, 0},       /* xbegin */
	    {{0xe2, 0xfe}, 2, 0},                   /* loop */
	    {{0xff, 0x24}, 2, 0},                   /* truncated */
	    {{0xe9, 1, 2}, 3, 0},                   /* truncated */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct x86_sw_insn f, c;
		const uint8_t *p = v[i].b;
		size_t left = v[i].n;
		uint64_t pc = 0x401000;
		size_t got = x86_sw_fast(v[i].b, v[i].n, pc, &f);
		if ((got != 0) != v[i].fast)
			fail_msg("case %zu: decoded %zu bytes, want %s", i, got,
			         v[i].fast ? "decoded" : "declined");
		if (!got)
			continue;
		if (!cs_disasm_iter(cs, &p, &left, &pc, ci))
			fail_msg("case %zu: capstone cannot decode", i);
		x86_sw_from_cs(&c, ci);
		const char *why = sw_diff(&f, &c);
		if (got != ci->size || why)
			fail_msg("case %zu (%s %s): %s", i, ci->mnemonic, ci->op_str,
			         got != ci->size ? "length" : why);
	}
}

/* hook_arch_branch_first16 (the byte pre-scans' 16-at-a-time filter)
 * flags exactly the first bytes of direct branches, in every lane. */
static void test_branch_first16(void **state)
{
	(void)state;
	for (unsigned v = 0; v < 256; v++) {
		int want = (v >= 0x70 && v <= 0x7f) || (v >= 0xe0 && v <= 0xe3) || v == 0xe8 ||
		           v == 0xe9 || v == 0xeb || v == 0x0f || v == 0xc7;
		for (unsigned lane = 0; lane < 16; lane++) {
			uint8_t b[16];
			memset(b, 0x90, sizeof(b)); /* nop: never a candidate */
			b[lane] = (uint8_t)v;
			unsigned m = hook_arch_branch_first16(b);
			if (m != (want ? 1u << lane : 0u))
				fail_msg("byte %02x in lane %u: mask %04x", v, lane, m);
		}
	}
}

/* x86_len_cs_same (the table's answer stands for capstone's): wherever
 * it says 1 for a form the table measured, capstone decodes the same
 * length. Every opcode of the one-byte and 0F maps with every ModRM,
 * without and with REX (a SIB with no base, so the longest form), and
 * the form the fuzzer found (`0F 1F C3`, which capstone 4 rejects);
 * for each, the immediates and base-less memory operands capstone
 * reports agree with li.wide_imm / li.absmem (the materialize scan). */
static void test_cs_same(void **state)
{
	(void)state;
	csh c;
	cs_insn *d;
	assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &c), CS_ERR_OK);
	cs_option(c, CS_OPT_DETAIL, CS_OPT_ON);
	d = cs_malloc(c);
	assert_non_null(d);
	size_t yes = 0;
	for (unsigned rex = 0; rex < 2; rex++)
		for (unsigned map = 0; map < 2; map++)
			for (unsigned op = 0; op < 256; op++)
				for (unsigned m = 0; m < 256; m++) {
					uint8_t b[16] = {0};
					size_t k = 0;
					if (rex)
						b[k++] = 0x4c;
					if (map)
						b[k++] = 0x0f;
					b[k++] = (uint8_t)op;
					b[k++] = (uint8_t)m;
					b[k++] = 0x25; /* SIB: no base, disp32 */
					struct x86_len_info li;
					size_t n = x86_fast_len(b, sizeof(b), &li);
					if (!n || !x86_len_cs_same(b))
						continue;
					yes++;
					const uint8_t *p = b;
					size_t left = sizeof(b);
					uint64_t pc = 0x1000;
					if (!cs_disasm_iter(c, &p, &left, &pc, d))
						fail_msg("%02x %02x %02x %02x: table %zu, capstone "
						         "rejects",
						         b[0], b[1], b[2], b[3], n);
					if (d->size != n)
						fail_msg(
						    "%02x %02x %02x %02x: table %zu, capstone %u",
						    b[0], b[1], b[2], b[3], n, d->size);
					/* What the materialize scan takes from li for these. */
					const cs_x86 *x = &d->detail->x86;
					for (unsigned i = 0; i < x->op_count; i++) {
						const cs_x86_op *o = &x->operands[i];
						uint64_t v = (uint64_t)o->imm;
						if (o->type == X86_OP_IMM && !li.rel &&
						    !li.wide_imm && v > 0xffff &&
						    !(v >= 0xffffff80u && v <= 0xffffffffu) &&
						    v < UINT64_MAX - 127)
							fail_msg("%02x %02x %02x %02x: imm %llx "
							         "not wide",
							         b[0], b[1], b[2], b[3],
							         (unsigned long long)v);
						if (o->type == X86_OP_MEM &&
						    o->mem.base == X86_REG_INVALID &&
						    o->mem.segment == X86_REG_INVALID && !li.absmem)
							fail_msg(
							    "%02x %02x %02x %02x: base-less memory",
							    b[0], b[1], b[2], b[3]);
					}
				}
	static const uint8_t nop_reg[] = {0x0f, 0x1f, 0xc3};
	assert_false(x86_len_cs_same(nop_reg));
	assert_true(yes > 100000);
	cs_free(d, 1);
	cs_close(&c);
}

/* The per-position rules of the 16-position masks, for lane k. */
static int far_ref(const uint8_t *b, unsigned k)
{
	uint8_t o = b[k];
	if (o == 0xe8 || o == 0xe9)
		return b[k + 3] == 0xff && b[k + 4] == 0xff;
	if (o == 0x0f)
		return (b[k + 1] & 0xf0) == 0x80 && b[k + 4] == 0xff && b[k + 5] == 0xff;
	if (o == 0xc7)
		return b[k + 1] == 0xf8 && b[k + 4] == 0xff && b[k + 5] == 0xff;
	return 0;
}

static int near_ref(const uint8_t *b, unsigned k)
{
	uint8_t o = b[k];
	return (o >= 0x70 && o <= 0x7f) || (o >= 0xe0 && o <= 0xe3) || o == 0xe8 || o == 0xe9 ||
	       o == 0xeb || (o == 0x0f && (b[k + 1] & 0xf0) == 0x80) ||
	       (o == 0xc7 && b[k + 1] == 0xf8);
}

static int xref_ref(const uint8_t *b, unsigned k)
{
	uint8_t o = b[k];
	return (o >= 0x70 && o <= 0x7f) || (o >= 0xe0 && o <= 0xe3) || o == 0xe8 || o == 0xe9 ||
	       o == 0xeb || (o == 0x0f && (b[k + 1] & 0xf0) == 0x80);
}

static int rel32_ref(const uint8_t *b, unsigned k)
{
	uint8_t o = b[k];
	return o == 0xe8 || o == 0xe9 || (o == 0x0f && (b[k + 1] & 0xf0) == 0x80);
}

/* One 16-position mask against its per-lane rule: every first and
 * second byte in every lane, with the bytes 3-5 after it FF or not
 * (the far rule's rel32 top bytes); the buffer is 21 bytes, as much as
 * the widest mask reads. */
static void check_mask16(unsigned (*mask)(const uint8_t *), int (*ref)(const uint8_t *, unsigned),
                         const char *name)
{
	for (unsigned v = 0; v < 256; v++)
		for (unsigned w = 0; w < 256; w++)
			for (unsigned t = 0; t < 8; t++)
				for (unsigned lane = 0; lane < 16; lane++) {
					uint8_t b[21];
					memset(b, 0x90, sizeof(b)); /* nop: never a candidate */
					b[lane] = (uint8_t)v;
					b[lane + 1] = (uint8_t)w;
					b[lane + 3] = t & 1 ? 0xff : 0x00;
					b[lane + 4] = t & 2 ? 0xff : 0x00;
					b[lane + 5] = t & 4 ? 0xff : 0x00;
					unsigned want = 0;
					for (unsigned k = 0; k < 16; k++)
						want |= (unsigned)ref(b, k) << k;
					unsigned m = mask(b);
					if (m != want)
						fail_msg(
						    "%s: %02x %02x top %u lane %u: mask %04x, want "
						    "%04x",
						    name, v, w, t, lane, m, want);
				}
}

/* hook_arch_branch_far16 (prepare's pre-scan far from the patch: rel32
 * branches with a small negative displacement only). */
static void test_branch_far16(void **state)
{
	(void)state;
	check_mask16(hook_arch_branch_far16, far_ref, "far16");
}

/* hook_arch_branch_near16 (prepare's pre-scan near the patch). */
static void test_branch_near16(void **state)
{
	(void)state;
	check_mask16(hook_arch_branch_near16, near_ref, "near16");
}

/* hook_arch_branch_xref16 and hook_arch_branch_rel32_16 (discover_xref's
 * pre-scan near a function's ends and in its middle). */
static void test_branch_xref16(void **state)
{
	(void)state;
	check_mask16(hook_arch_branch_xref16, xref_ref, "xref16");
	check_mask16(hook_arch_branch_rel32_16, rel32_ref, "rel32_16");
}

/* hook_arch_table_jmp16 (prepare's table-jmp pre-scan, 16 at a time)
 * flags exactly FF + a table-shaped ModRM, for every byte pair in
 * every lane, and reads the 17th byte for lane 15. */
static void test_table_jmp16(void **state)
{
	(void)state;
	for (unsigned v = 0; v < 256; v++)
		for (unsigned w = 0; w < 256; w++) {
			int want = v == 0xff &&
			           ((w & 0xf8) == 0xe0 || w == 0x24 || w == 0x64 || w == 0xa4);
			for (unsigned lane = 0; lane < 16; lane++) {
				uint8_t b[17];
				memset(b, 0x90, sizeof(b)); /* nop: never a candidate */
				b[lane] = (uint8_t)v;
				b[lane + 1] = (uint8_t)w;
				unsigned m = hook_arch_table_jmp16(b);
				if (m != (want ? 1u << lane : 0u))
					fail_msg("%02x %02x in lane %u: mask %04x", v, w, lane, m);
			}
		}
}

int main(void)
{
	elf_version(EV_CURRENT);
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 77;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON); /* x86_sw_from_cs reads the detail */
	ci = cs_malloc(cs);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_corners),       cmocka_unit_test(test_sw_corners),
	    cmocka_unit_test(test_vex_any),       cmocka_unit_test(test_branch_first16),
	    cmocka_unit_test(test_table_jmp16),   cmocka_unit_test(test_branch_far16),
	    cmocka_unit_test(test_branch_near16), cmocka_unit_test(test_branch_xref16),
	    cmocka_unit_test(test_cs_same),       cmocka_unit_test(test_real_binaries),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	cs_free(ci, 1);
	cs_close(&cs);
	return r;
}
