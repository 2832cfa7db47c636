/*
 * The CRoaring frozen image inside a ROARING container, and the O(1) chunk
 * directory the hook-context test reads in front of it.
 *
 * CRoaring (0.2.66, roaring_bitmap_frozen_serialize) lays a frozen image
 * out as: bitset containers (1024 uint64 each), run containers (rle16
 * pairs: value, length-1), array containers (uint16), then keys[n],
 * counts[n] (cardinality-1, or runs-1 for a run container), typecodes[n]
 * (1 bitset, 2 array, 3 run) and a uint32 header (cookie 13766 in the low
 * 15 bits, n in the high 17). ks_frozen_dir() walks that tail once, with
 * every size checked against the image, and writes one directory word per
 * high-16-bit chunk so the test needs no search over keys. CRoaring's own
 * roaring_bitmap_frozen_view() is the second check (validate.c).
 * Recorder side and tests only; not hook context.
 */
#include <errno.h>
#include <string.h>

#include "keysym_internal.h"

#define KS_FROZEN_COOKIE 13766u

static uint32_t ks_le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

/* Elements (uint16 values, or runs) of a container from its stored count. */
static uint64_t ks_frozen_elems(uint32_t type, uint32_t count)
{
	return type == KS_CHUNK_RUN ? count : (uint64_t)count + 1;
}

/* Bytes of the data zone a container of this type and count takes. */
static uint64_t ks_frozen_bytes(uint32_t type, uint32_t count)
{
	if (type == KS_CHUNK_BITSET)
		return 8192;
	return (type == KS_CHUNK_RUN ? 4 : 2) * ks_frozen_elems(type, count);
}

int ks_frozen_dir(const uint8_t *img, size_t len, uint64_t img_off, uint64_t dir[256],
                  uint64_t *card)
{
	memset(dir, 0, 256 * sizeof(*dir));
	*card = 0;
	if (len < 4)
		return -EBADMSG;
	uint32_t h = (uint32_t)img[len - 4] | (uint32_t)img[len - 3] << 8 |
	             (uint32_t)img[len - 2] << 16 | (uint32_t)img[len - 1] << 24;
	uint32_t n = h >> 15;
	if ((h & 0x7fff) != KS_FROZEN_COOKIE || n > ADA_KEYSYM_CHUNKS)
		return -EBADMSG;
	uint64_t tail = 5 * (uint64_t)n + 4;
	if (tail > len)
		return -EBADMSG;
	const uint8_t *keys = img + len - tail, *counts = keys + 2 * n, *types = counts + 2 * n;
	/* Zone starts: bitsets, then runs, then arrays (sizes summed first). */
	uint64_t zone[4] = {0, 0, 0, 0};
	for (uint32_t c = 0; c < n; c++) {
		if (types[c] < KS_CHUNK_BITSET || types[c] > KS_CHUNK_RUN)
			return -EBADMSG;
		zone[types[c]] += ks_frozen_bytes(types[c], ks_le16(counts + 2 * c));
	}
	uint64_t at[4] = {0, 0, zone[1] + zone[3], zone[1]};
	if (zone[1] + zone[2] + zone[3] != len - tail)
		return -EBADMSG;
	uint32_t prev = 0;
	for (uint32_t c = 0; c < n; c++) {
		uint32_t key = ks_le16(keys + 2 * c), type = types[c],
		         cnt = ks_le16(counts + 2 * c);
		if (key >= ADA_KEYSYM_CHUNKS || (c && key <= prev) ||
		    (type == KS_CHUNK_RUN && !cnt))
			return -EBADMSG; /* ids above 2^24, keys out of order, no run */
		prev = key;
		uint64_t elems = ks_frozen_elems(type, cnt), start = at[type];
		/* The directory holds elements - 1 for every type (keysym.h). */
		dir[key] = type | (elems - 1) << 8 | (img_off + start) << 32;
		at[type] += ks_frozen_bytes(type, cnt);
		if (type != KS_CHUNK_RUN)
			*card += elems;
		else
			for (uint64_t r = 0; r < elems; r++) /* runs: sum their lengths */
				*card += ks_le16(img + start + 4 * r + 2) + 1;
	}
	return 0;
}
