/* Private declarations of src/keysym (recorder side and tests). */
#ifndef ADA_KEYSYM_INTERNAL_H
#define ADA_KEYSYM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "keysym.h"

/* frozen.c: the chunk directory of a CRoaring frozen image that starts at
 * img_off bytes from the blob's start; *card gets its cardinality.
 * 0 or -EBADMSG (the image's tail and zones do not add up). */
int ks_frozen_dir(const uint8_t *img, size_t len, uint64_t img_off, uint64_t dir[256],
                  uint64_t *card);

/* build.c: XXH64 (seed 0) of a blob, its xxh64 field taken as 0. */
uint64_t ks_blob_xxh64(const uint8_t *blob, size_t len);

/* build.c: counts an ADA_KEYSYM_UNCOVERED entry of module_id in info. */
void ks_info_uncovered(struct ada_keysym_info *info, uint32_t module_id);

/* Tests: every module with members gets this container kind (BITSET,
 * ROARING or HASH; 0: the density rule) instead of the density rule's. */
struct ada_keysym_builder;
void ks_builder_force(struct ada_keysym_builder *b, uint32_t kind);

/* Roaring body: the directory, then the image at this offset in the body. */
#define KS_ROARING_IMG_OFF (8u * ADA_KEYSYM_CHUNKS)

#endif
