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

#include "x86_internal.h"

static csh cs;
static cs_insn *ci;
static unsigned long long n_insn, n_fast, n_bad, n_lenient;
static int strict; /* 0: bytes capstone rejects may be decoded (data in .text) */

/* Prints the first mismatches with their bytes, counts them all. */
#define BAD(...)                                                                                   \
	do {                                                                                       \
		if (n_bad++ < 40) {                                                                \
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
		if (!cs_disasm_iter(cs, &p, &left, &pc, ci)) {
			if (fast && !strict)
				n_lenient++;
			else if (fast)
				BAD("%s+0x%zx: table says %zu bytes, capstone cannot decode", what,
				    off, fast);
			off++;
			continue;
		}
		n_insn++;
		if (fast) {
			n_fast++;
			if (fast != ci->size)
				BAD("%s+0x%zx: %s %s: table %zu bytes, capstone %u", what, off,
				    ci->mnemonic, ci->op_str, fast, ci->size);
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
		unsigned long long a = n_insn, b = n_fast;
		if (!sweep_file(files[i].path, files[i].strict))
			continue;
		read++;
		printf("# %s: %llu instructions, %.1f%% by the table\n", files[i].path, n_insn - a,
		       100.0 * (double)(n_fast - b) / (double)(n_insn - a ? n_insn - a : 1));
	}
	assert_true(read >= 2); /* libc and the test itself at least */
	printf("# non-strict files: %llu positions the table decodes and capstone rejects\n",
	       n_lenient);
	assert_int_equal(n_bad, 0);
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

int main(void)
{
	elf_version(EV_CURRENT);
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 77;
	ci = cs_malloc(cs);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_corners),
	    cmocka_unit_test(test_real_binaries),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	cs_free(ci, 1);
	cs_close(&cs);
	return r;
}
