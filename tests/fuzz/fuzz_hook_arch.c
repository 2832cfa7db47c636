/*
 * libFuzzer target for the hook layer's parsers: hook_arch_prepare() (+
 * emit of the trampoline it plans) over arbitrary function bytes, and
 * hook_maps_parse() over arbitrary /proc/self/maps text. The first input
 * byte selects the parser. Invariants are checked with abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hook_arch.h"
#include "hook_mem.h"

static void fuzz_prepare(const uint8_t *data, size_t size)
{
	struct hook_arch_plan plan;
	uint8_t buf[HOOK_ARCH_MAX_TRAMPOLINE], patch[HOOK_ARCH_MAX_PATCH];
	const uint64_t fn = 0x7f0000400000ull;

	enum ada_hook_skip r = hook_arch_prepare(data, fn, size, &plan);
	if ((unsigned)r >= ADA_SKIP_REASON_COUNT)
		abort();
	if (r != ADA_HOOK_OK)
		return;
	if (plan.patch_len < 5 || plan.patch_len > HOOK_ARCH_MAX_PATCH || plan.patch_len > size ||
	    memcmp(plan.original, data, plan.patch_len))
		abort();
	/* near and far trampoline placements */
	hook_arch_emit_trampoline(&plan, buf, fn + 0x100000, 1, 0x1000, fn + 0x100000);
	hook_arch_emit_trampoline(&plan, buf, fn - 0x7ff00000, 1, 0x1000, fn - 0x7ff00000);
	hook_arch_patch_bytes(&plan, fn + 0x100000, patch);
	if (patch[0] != 0xe9)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hook_map maps[64];

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		int n = hook_maps_parse((const char *)data + 1, size - 1, maps, 64);
		if (n > 64)
			abort();
	} else {
		fuzz_prepare(data + 1, size - 1);
	}
	return 0;
}
