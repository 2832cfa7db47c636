/*
 * libFuzzer target for src/keysym: what another process or a user hands
 * the key-symbol code. First byte 0: a blob (ada_keysym_validate, and the
 * masked hook-context test over the raw bytes, valid or not); 1: a CRoaring
 * portable bitmap for `--blob` (ada_keysym_builder_add_portable), and when
 * it is accepted, the blob built from it must validate and hold exactly it.
 *   ./fuzz_keysym -max_total_time=60 CORPUS_DIR
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keysym.h"

static void fuzz_blob(const uint8_t *p, size_t n)
{
	uint64_t mask = ada_keysym_mask_for(n ? n : 1);
	uint8_t *buf = aligned_alloc(64, mask + 1);
	if (!buf)
		return;
	memset(buf, 0, mask + 1);
	memcpy(buf, p, n);
	struct ada_keysym_info info;
	if (ada_keysym_validate(buf, n, &info, NULL) == 0)
		ada_keysym_info_fini(&info);
	/* Ids from the input's own bytes: the modules and chunks it names. */
	for (size_t i = 0; i + 8 <= n && i < 512; i += 8) {
		uint64_t id;
		memcpy(&id, p + i, 8);
		(void)ada_keysym_contains_at(buf, mask, 0, id);
		(void)ada_keysym_contains_at(buf, mask, 0, id & 0xff00ffffffull);
	}
	free(buf);
}

static void fuzz_portable(const uint8_t *p, size_t n)
{
	struct ada_keysym_builder *b;
	if (ada_keysym_builder_new(&b))
		return;
	if (ada_keysym_builder_add_portable(b, 1, p, n) == 0) {
		size_t len = ada_keysym_builder_size(b);
		void *blob = len ? aligned_alloc(64, len) : NULL;
		if (blob && ada_keysym_builder_write(b, 1, blob, len, NULL) == 0 &&
		    ada_keysym_validate(blob, len, NULL, NULL) != 0)
			abort(); /* the builder wrote a blob its own check rejects */
		free(blob);
	}
	ada_keysym_builder_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n < 1)
		return 0;
	if (d[0] == 0)
		fuzz_blob(d + 1, n - 1);
	else
		fuzz_portable(d + 1, n - 1);
	return 0;
}
