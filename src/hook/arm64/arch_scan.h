/*
 * arm64 word scanners (part of arch.h): which positions of 16 bytes may
 * start a direct branch, for the pre-scan of discover_xref.c. A64 words
 * are 4-byte aligned, so only every fourth position can, and the test
 * is one mask per word (no vector code needed to keep it cheap).
 */
#ifndef ADA_HOOK_ARM64_ARCH_SCAN_H
#define ADA_HOOK_ARM64_ARCH_SCAN_H

#include <stdbool.h>
#include <stdint.h>

/* The word at p, little-endian. */
static inline uint32_t arch_scan_word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* b, bl (imm26), b.cond, bc.cond, cbz, cbnz (imm19), tbz, tbnz (imm14):
 * true and the target for such a word at pc. */
static inline bool arch_scan_direct(uint32_t w, uint64_t pc, uint64_t *target)
{
	int64_t d;
	if ((w & 0x7c000000u) == 0x14000000u)
		d = (int64_t)((uint64_t)(w & 0x3ffffffu) << 38) >> 36;
	else if ((w & 0xff000000u) == 0x54000000u || (w & 0x7e000000u) == 0x34000000u)
		d = (int64_t)((uint64_t)((w >> 5) & 0x7ffffu) << 45) >> 43;
	else if ((w & 0x7e000000u) == 0x36000000u)
		d = (int64_t)((uint64_t)((w >> 5) & 0x3fffu) << 50) >> 48;
	else
		return false;
	*target = pc + (uint64_t)d;
	return true;
}

/* The direct branch whose first byte is code[p], of the code at addr of
 * size bytes: true and its target when the word there is one, aligned
 * and whole inside size. */
static inline bool hook_arch_branch_at(const uint8_t *code, uint64_t addr, uint64_t size,
                                       uint64_t p, uint64_t *target)
{
	if (((addr + p) & 3) || p + 4 > size)
		return false;
	return arch_scan_direct(arch_scan_word(code + p), addr + p, target);
}

/* Bit k set: p[k] (k < 16, k a multiple of 4) starts a direct branch
 * word: the positions hook_arch_branch_at accepts in a function that
 * starts 4-byte aligned at p - 16n. Reads 16 bytes. */
static inline unsigned hook_arch_branch_xref16(const uint8_t *p)
{
	unsigned m = 0;
	uint64_t t;
	for (unsigned k = 0; k < 16; k += 4)
		m |= arch_scan_direct(arch_scan_word(p + k), 0, &t) ? 1u << k : 0u;
	return m;
}

/* x86_64 leaves its rel8 branches out of this pre-scan in the middle of
 * a function; every A64 direct branch may leave it: the same set. */
static inline unsigned hook_arch_branch_rel32_16(const uint8_t *p)
{
	return hook_arch_branch_xref16(p);
}

#endif
