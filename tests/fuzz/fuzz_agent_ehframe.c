/*
 * libFuzzer target for src/hook/discover_ehframe.c over a file's bytes:
 * the .eh_frame_hdr search table and the CIEs and FDEs it points at, as
 * the agent reads them from a stripped program (symbols.c). Input: a
 * little-endian u32, the offset of .eh_frame_hdr in the segment, then the
 * segment's bytes (loaded at 0x1000). Every table entry is asked whether
 * it is a function entry, and a few addresses whether an FDE covers them.
 * Seeds (tests/fuzz/corpus/agent_ehframe/): the segment holding
 * .eh_frame_hdr of a gcc -O2 test program, in that form.
 *   ./fuzz_agent_ehframe -max_total_time=60 CORPUS_DIR
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "discover_internal.h"

#define FUZZ_LO 0x1000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t off;
	struct discover_fde_table t;
	if (size < 4)
		return 0;
	memcpy(&off, data, 4);
	const uint8_t *seg = data + 4;
	size_t n = size - 4;
	if (discover_fde_table_mem(seg, FUZZ_LO, FUZZ_LO + n, FUZZ_LO + (uint64_t)off, &t) != 0)
		return 0;
	for (size_t i = 0; i < t.n && i < 4096; i++) {
		uint64_t start = 0, len = 0;
		if (discover_fde_entry(&t, i, &start, &len))
			(void)discover_fde_covers(&t, start + len / 2);
	}
	(void)discover_fde_covers(&t, FUZZ_LO);
	(void)discover_fde_covers(&t, FUZZ_LO + n / 2);
	return 0;
}
