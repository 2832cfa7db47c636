/*
 * ada wal: the CRC-32 of the index and detail files, inline (the writer
 * folds it over every staged batch; the recorder's detail files, manifests
 * and recovery use the same one).
 */
#ifndef ADA_WAL_CRC_H
#define ADA_WAL_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 as zlib's crc32() computes it (errata 3). ISA-L's
 * crc32_gzip_refl() and libdeflate's crc32 are the same function, carry-
 * less-multiply accelerated: over the drain's 8 KiB chunks (in L1) ISA-L
 * takes 0.46-0.58 ns per 32-byte event on this machine's AVX-512 cores,
 * libdeflate 1.14 1.6-2.2, zlib 1.2.13 ~25: at 60 M events/s zlib's
 * would need more than the drain's whole core. Whichever the build found
 * (src/wal/CMakeLists.txt); zlib is the fallback. ada_wal_crc32_impl()
 * names it (the manifest's wal.crc32). */
#if defined(ADA_HAVE_ISAL)
#include <isa-l/crc.h>
#define WAL_CRC32_IMPL "isa-l"
/* On AVX-512 + VPCLMULQDQ CPUs ISA-L (2.30) runs crc32_gzip_refl_by16_10,
 * which returns without VZEROUPPER: the upper halves of zmm0-15 stay
 * dirty (XINUSE bit 6), across context switches too (XSAVE keeps them),
 * and every legacy-SSE instruction the drain runs afterwards (the x86-64
 * baseline code gcc emits: the convert loop, the trigger feed) is merged
 * with them. Measured 2026-11-24 (docs/benchmarks.md, "The detail lane
 * since 2026-11-23"): convert-like SSE loop + CRC 3.1-3.8 TSC ticks per
 * event dirty vs 2.1-2.8 cleared; `ada record --detail triggered` on fib
 * 32: wall 0.81 -> 0.68 s, user CPU 0.58 -> 0.43 s (the drain fell behind
 * and the program waited for ring space in sched_yield). VZEROUPPER here
 * ends that; it is only legal with AVX, and only AVX-512 paths leave the
 * state dirty, hence the check (one load of libgcc's cpu model); x86-64
 * only (ISA-L's arm64 code has no such state).
 * test_wal_segment/crc32_matches_zlib checks the values and, where XGETBV
 * 1 exists, that the state is clean after the call. */
static inline uint32_t wal_crc32(uint32_t crc, const void *p, size_t n)
{
	if (n == 0)
		return crc;
	crc = crc32_gzip_refl(crc, p, n);
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512f"))
		/* The clobbers keep the compiler from holding a vector value in
		 * a ymm/zmm register across it (only in -mavx builds). */
		__asm__ volatile("vzeroupper" ::
		                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		                       "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
		                       "xmm14", "xmm15");
#endif
	return crc;
}
#elif defined(ADA_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#define WAL_CRC32_IMPL "libdeflate"
static inline uint32_t wal_crc32(uint32_t crc, const void *p, size_t n)
{
	return libdeflate_crc32(crc, p, n);
}
#else
#include <zlib.h>
#define WAL_CRC32_IMPL "zlib"
static inline uint32_t wal_crc32(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = (uint32_t)crc32(crc, b, k);
		b += k;
		n -= k;
	}
	return crc;
}
#endif

#endif
