/*
 * x86_64 byte scanners (part of arch.h): which of 16 positions may start
 * a direct branch, with SSE2 (part of x86_64's base ISA), for the
 * pre-scans of prepare (x86_prepare.c) and of discover_xref.c. Each
 * equals a per-position test, checked byte by byte in test_hook_len.
 */
#ifndef ADA_HOOK_X86_64_ARCH_SCAN_H
#define ADA_HOOK_X86_64_ARCH_SCAN_H

#include <emmintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The direct relative branch (jmp, jcc, call, loop, jrcxz; rel8 or
 * rel32, no prefix) whose first byte is code[p], of the code at addr of
 * size bytes: true and its target when those bytes are one (and whole
 * inside size). A byte-level reading, for sweeps that treat every
 * position as a possible start (discover_xref.c); the first bytes it
 * accepts are those hook_arch_branch_xref16 flags. */
static inline bool hook_arch_branch_at(const uint8_t *code, uint64_t addr, uint64_t size,
                                       uint64_t p, uint64_t *target)
{
	uint8_t o = code[p];
	int32_t d;
	if ((o == 0xeb || (o >= 0x70 && o <= 0x7f) || (o >= 0xe0 && o <= 0xe3)) && p + 2 <= size) {
		*target = addr + p + 2 + (uint64_t)(int64_t)(int8_t)code[p + 1];
	} else if ((o == 0xe8 || o == 0xe9) && p + 5 <= size) {
		memcpy(&d, code + p + 1, 4);
		*target = addr + p + 5 + (uint64_t)(int64_t)d;
	} else if (o == 0x0f && p + 6 <= size && (code[p + 1] & 0xf0) == 0x80) {
		memcpy(&d, code + p + 2, 4);
		*target = addr + p + 6 + (uint64_t)(int64_t)d;
	} else {
		return false;
	}
	return true;
}

/* Lanes of v whose byte b has (b & mask) == val: all-ones where true.
 * The one byte test every scanner below is built from. */
static inline __m128i arch_scan_eq_masked(__m128i v, uint8_t mask, uint8_t val)
{
	return _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)mask)),
	                      _mm_set1_epi8((char)val));
}

/* Lanes of v holding a one-byte-opcode branch: 70-7F (jcc rel8), E0-E3
 * (loop, jrcxz), E8, E9 (call, jmp rel32), EB (jmp rel8). */
static inline __m128i arch_scan_branch1(__m128i v)
{
	__m128i m = arch_scan_eq_masked(v, 0xf0, 0x70);
	m = _mm_or_si128(m, arch_scan_eq_masked(v, 0xfc, 0xe0));
	m = _mm_or_si128(m, arch_scan_eq_masked(v, 0xfe, 0xe8));
	return _mm_or_si128(m, arch_scan_eq_masked(v, 0xff, 0xeb));
}

/* Lanes k of v holding 0F with 80-8F in v1 (v shifted by one byte):
 * jcc rel32. */
static inline __m128i arch_scan_jcc32(__m128i v, __m128i v1)
{
	return _mm_and_si128(arch_scan_eq_masked(v, 0xff, 0x0f),
	                     arch_scan_eq_masked(v1, 0xf0, 0x80));
}

/* Lanes k of v holding C7 with F8 in v1 (v shifted by one byte): xbegin. */
static inline __m128i arch_scan_xbegin(__m128i v, __m128i v1)
{
	return _mm_and_si128(arch_scan_eq_masked(v, 0xff, 0xc7),
	                     arch_scan_eq_masked(v1, 0xff, 0xf8));
}

/* 16 bytes from p, unaligned. */
static inline __m128i arch_scan_load(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* Bit k set: p[k] (k < 16) may be the first byte of a direct branch:
 * 70-7F, E0-E3, EB (rel8), E8, E9 (rel32), 0F (jcc rel32 when 80-8F
 * follows), C7 (xbegin when F8 follows). The byte-level pre-scan of
 * prepare (every position of a function that could branch into its
 * patch) tests 16 positions at a time with it near the patch (SSE2,
 * a dozen instructions; SSE2 is part of x86_64's base ISA) and looks
 * only at the candidates. Reads 16 bytes. */
static inline unsigned hook_arch_branch_first16(const uint8_t *p)
{
	__m128i v = arch_scan_load(p);
	__m128i m = arch_scan_branch1(v);
	m = _mm_or_si128(m, arch_scan_eq_masked(v, 0xff, 0x0f));
	m = _mm_or_si128(m, arch_scan_eq_masked(v, 0xff, 0xc7));
	return (unsigned)_mm_movemask_epi8(m);
}

/* Bit k set: p[k] (k < 16) may start a direct jmp/jcc/call/loop/jrcxz:
 * 70-7F, E0-E3, EB, E8, E9, and 0F only when 80-8F follows (jcc
 * rel32); no C7 (xbegin). Exactly the first bytes discover_xref's
 * per-position check accepts (discover_xref.c xref_hit_at), so its
 * pre-scan looks at fewer candidates than with
 * hook_arch_branch_first16 (0F starts most two-byte opcodes);
 * test_hook_len's test_branch_xref16. Reads 17 bytes: p[0..16]. */
static inline unsigned hook_arch_branch_xref16(const uint8_t *p)
{
	__m128i v = arch_scan_load(p);
	__m128i m = _mm_or_si128(arch_scan_branch1(v), arch_scan_jcc32(v, arch_scan_load(p + 1)));
	return (unsigned)_mm_movemask_epi8(m);
}

/* Bit k set: p[k] (k < 16) may start a rel32 direct branch whose
 * displacement is negative and above -2^16: E8/E9 with p[k+3] =
 * p[k+4] = FF, 0F 80-8F or C7 F8 with p[k+4] = p[k+5] = FF (the two
 * top bytes of the rel32). Far from the start of a function (position
 * >= the patch length + 126, function under 2^16 bytes) only those can
 * branch back into its patch: a rel8 reaches at most 128 bytes back,
 * and a rel32 into the patch is in [-(pos + 5), -1]. prepare's
 * pre-scan (x86_prepare.c plan_superset_last) uses it there instead of
 * hook_arch_branch_near16; test_hook_len's test_branch_far16 checks it
 * byte by byte. Reads 21 bytes: p[0..20]. */
static inline unsigned hook_arch_branch_far16(const uint8_t *p)
{
	__m128i v = arch_scan_load(p);
	__m128i v1 = arch_scan_load(p + 1);
	__m128i v4 = arch_scan_load(p + 4);
	__m128i ff4 = arch_scan_eq_masked(v4, 0xff, 0xff);
	__m128i t34 = _mm_and_si128(arch_scan_eq_masked(arch_scan_load(p + 3), 0xff, 0xff), ff4);
	__m128i t45 = _mm_and_si128(ff4, arch_scan_eq_masked(arch_scan_load(p + 5), 0xff, 0xff));
	__m128i e8 = _mm_and_si128(arch_scan_eq_masked(v, 0xfe, 0xe8), t34);
	__m128i two = _mm_or_si128(arch_scan_jcc32(v, v1), arch_scan_xbegin(v, v1));
	__m128i m = _mm_or_si128(e8, _mm_and_si128(two, t45));
	return (unsigned)_mm_movemask_epi8(m);
}

/* Bit k set: p[k] (k < 16) starts the bytes of a direct branch: as
 * hook_arch_branch_first16, but 0F only before 80-8F (jcc rel32) and
 * C7 only before F8 (xbegin), which the per-position check turns away
 * otherwise. prepare's pre-scan near the patch; test_hook_len's
 * test_branch_near16. Reads 17 bytes: p[0..16]. */
static inline unsigned hook_arch_branch_near16(const uint8_t *p)
{
	__m128i v = arch_scan_load(p);
	__m128i v1 = arch_scan_load(p + 1);
	__m128i m = _mm_or_si128(arch_scan_branch1(v), arch_scan_jcc32(v, v1));
	m = _mm_or_si128(m, arch_scan_xbegin(v, v1));
	return (unsigned)_mm_movemask_epi8(m);
}

/* Bit k set: p[k] (k < 16) starts a rel32 call/jmp (E8, E9) or jcc
 * (0F 80-8F). In the middle of a function (position >= 126 and at
 * least 130 bytes before its end) a rel8 branch stays inside it, so
 * discover_xref's pre-scan (branches that leave their function) uses
 * this there instead of hook_arch_branch_xref16; test_hook_len's
 * test_branch_rel32_16. Reads 17 bytes: p[0..16]. */
static inline unsigned hook_arch_branch_rel32_16(const uint8_t *p)
{
	__m128i v = arch_scan_load(p);
	__m128i m = _mm_or_si128(arch_scan_eq_masked(v, 0xfe, 0xe8),
	                         arch_scan_jcc32(v, arch_scan_load(p + 1)));
	return (unsigned)_mm_movemask_epi8(m);
}

/* Bit k set: p[k] p[k+1] (k < 16) may be a jump-table-shaped indirect
 * jmp: FF then a ModRM E0-E7 (`jmp reg`) or 24/64/A4 (`jmp [SIB..]`),
 * prepare's other pre-scan (x86_prepare.c plan_superset_table_last,
 * whose per-position test it equals: test_hook_len's
 * test_table_jmp16). Reads 17 bytes: p[0..16]. */
static inline unsigned hook_arch_table_jmp16(const uint8_t *p)
{
	__m128i w = arch_scan_load(p + 1);
	__m128i m = arch_scan_eq_masked(w, 0xf8, 0xe0);
	m = _mm_or_si128(m, arch_scan_eq_masked(w, 0xff, 0x24));
	m = _mm_or_si128(m, arch_scan_eq_masked(w, 0xff, 0x64));
	m = _mm_or_si128(m, arch_scan_eq_masked(w, 0xff, 0xa4));
	m = _mm_and_si128(m, arch_scan_eq_masked(arch_scan_load(p), 0xff, 0xff));
	return (unsigned)_mm_movemask_epi8(m);
}

#endif
