/*
 * ada ring: the detail lane -- a per-thread byte ring of variable-length
 * records that overwrites its oldest records (a flight recorder).
 *
 * Threads: ring_detail_append() runs on the slot's owning thread (the only
 * writer of head, oldest and the data); ada_detail_ring_snapshot() runs on
 * the drain, concurrently, and only reads.
 *
 * Layout: byte positions grow forever; position p lives at data[p & (D-1)].
 * A record is one 8-byte header word (len, in the low 32 bits) and len
 * bytes padded to 8. Records never wrap: when one does not fit before the
 * end of the data, a pad word (RING_DETAIL_PAD | bytes to skip) fills the
 * rest and the record starts at the beginning. A record is at most D/4.
 *
 * Protocol (a seqlock on `oldest`):
 *   producer: advance oldest past every record the new one will cover and
 *             store it; then write the new words with release stores;
 *             then store-release head.
 *   drain:    load-acquire head; load oldest; copy the words with acquire
 *             loads; reload oldest. If the copy read a word the producer
 *             wrote over an old one, that acquire synchronises with its
 *             release store, so the reload sees an oldest already past the
 *             old record; hence every record starting at or after the
 *             reloaded oldest was copied intact, and every earlier one is
 *             discarded, never returned torn. (On x86_64 release stores and
 *             acquire loads are plain moves; fences would do on arm64 but
 *             gcc's ThreadSanitizer does not model atomic_thread_fence.)
 * Invariants: oldest and head are record boundaries; head - oldest <= D;
 * oldest only grows (until ada_arena_slot_free() resets both to 0 with no
 * producer present).
 */
#include <errno.h>
#include <string.h>

#include "ring_internal.h"

#define DETAIL_LEN_MASK 0xffffffffull

static uint64_t detail_round8(uint64_t n)
{
	return (n + 7) & ~7ull;
}

uint32_t ada_detail_max_record(const struct ada_arena *a)
{
	return a->cfg.detail_bytes ? (uint32_t)(a->cfg.detail_bytes / 4 - RING_DETAIL_HDR) : 0;
}

/* Bytes the record or pad whose header word is w occupies; 0 when w is not
 * a plausible header (then the caller stops walking). */
static uint64_t detail_step(uint64_t w, uint64_t d)
{
	uint64_t n = w & DETAIL_LEN_MASK;
	uint64_t step = (w & RING_DETAIL_PAD) ? n : RING_DETAIL_HDR + detail_round8(n);
	if ((w & ~(RING_DETAIL_PAD | DETAIL_LEN_MASK)) != 0 || step == 0 || step > d ||
	    (step & 7) != 0)
		return 0;
	return step;
}

/* Moves oldest past everything [start - D, end) would overwrite. Returns
 * the new oldest; *lost = records dropped (pads do not count). */
static uint64_t detail_make_room(_Atomic uint64_t *words, uint64_t d, uint64_t oldest,
                                 uint64_t start, uint64_t end, uint64_t *lost)
{
	*lost = 0;
	while (end - oldest > d) {
		uint64_t w =
		    atomic_load_explicit(&words[(oldest & (d - 1)) / 8], memory_order_relaxed);
		uint64_t step = detail_step(w, d);
		if (step == 0 || oldest + step > start)
			return start; /* damaged ring: forget all of it */
		*lost += (w & RING_DETAIL_PAD) ? 0 : 1;
		oldest += step;
	}
	return oldest;
}

static void detail_write_words(_Atomic uint64_t *words, uint64_t d, uint64_t pos, const void *rec,
                               uint32_t len)
{
	const uint8_t *src = rec;
	uint64_t i = (pos & (d - 1)) / 8;
	/* Release: a drain that reads this word also sees the store of
	 * oldest made before it; pairs with the acquire loads in
	 * detail_copy(). Same for every word below. */
	atomic_store_explicit(&words[i++], len, memory_order_release);
	uint32_t off = 0;
	for (; off + 8 <= len; off += 8, i++) {
		uint64_t w;
		__builtin_memcpy(&w, src + off, 8); /* constant size: a plain load, no libc */
		atomic_store_explicit(&words[i], w, memory_order_release);
	}
	if (off < len) {
		uint64_t w = 0; /* the tail, zero-padded, little-endian */
		for (uint32_t k = 0; off + k < len; k++)
			w |= (uint64_t)src[off + k] << (8 * k);
		atomic_store_explicit(&words[i], w, memory_order_release);
	}
}

bool ring_detail_append(struct ada_arena *a, uint32_t slot, const void *rec, uint32_t len)
{
	uint64_t d = a->cfg.detail_bytes;
	if (d == 0 || len > ada_detail_max_record(a))
		return false;
	struct ada_detail_hdr *h = ring_detail_hdr(a, slot);
	_Atomic uint64_t *words = ring_detail_words(a, slot);
	uint64_t pos = atomic_load_explicit(&h->head, memory_order_relaxed);   /* ours */
	uint64_t old = atomic_load_explicit(&h->oldest, memory_order_relaxed); /* ours */
	uint64_t need = RING_DETAIL_HDR + detail_round8(len);
	uint64_t pad = (pos & (d - 1)) + need > d ? d - (pos & (d - 1)) : 0;
	uint64_t start = pos + pad, end = start + need, lost;
	uint64_t fresh = detail_make_room(words, d, old, start, end, &lost);
	/* Ordered before the overwriting stores below by their release. */
	if (fresh != old)
		atomic_store_explicit(&h->oldest, fresh, memory_order_relaxed);
	if (pad) /* release: as in detail_write_words() */
		atomic_store_explicit(&words[(pos & (d - 1)) / 8], RING_DETAIL_PAD | pad,
		                      memory_order_release);
	detail_write_words(words, d, start, rec, len);
	/* Publishes the record; pairs with the acquire load of head in
	 * ada_detail_ring_snapshot(). */
	atomic_store_explicit(&h->head, end, memory_order_release);
	for (uint64_t i = 0; i < lost; i++)
		ring_slot_drop(a, slot, ADA_LANE_DETAIL, ADA_DROP_DETAIL_OVERWRITTEN);
	return true;
}

/* Copies ring bytes [begin, end) to out, then returns the oldest position
 * whose bytes are known intact (the seqlock re-check). */
static uint64_t detail_copy(struct ada_arena *a, uint32_t slot, uint64_t begin, uint64_t end,
                            uint64_t *out)
{
	uint64_t d = a->cfg.detail_bytes;
	_Atomic uint64_t *words = ring_detail_words(a, slot);
	/* Acquire: pairs with the release stores of the words in
	 * ring_detail_append(); a word written over an old one makes the
	 * reload of oldest below see the advance that preceded it. */
	for (uint64_t p = begin; p < end; p += 8)
		out[(p - begin) / 8] =
		    atomic_load_explicit(&words[(p & (d - 1)) / 8], memory_order_acquire);
	/* After the acquire loads in program order: cannot be hoisted above. */
	return atomic_load_explicit(&ring_detail_hdr(a, slot)->oldest, memory_order_relaxed);
}

/* Walks the copied bytes from offset `from` (a record boundary), moving the
 * records down to the front of buf without pads. Returns bytes kept. */
static uint64_t detail_compact(uint8_t *buf, uint64_t from, uint64_t len, uint64_t d,
                               uint64_t *records)
{
	uint64_t in = from, out = 0;
	*records = 0;
	while (in + RING_DETAIL_HDR <= len) {
		uint64_t w;
		memcpy(&w, buf + in, sizeof(w));
		uint64_t step = detail_step(w, d);
		if (step == 0 || in + step > len)
			break; /* cannot happen for intact bytes; stop safely */
		if (!(w & RING_DETAIL_PAD)) {
			memmove(buf + out, buf + in, step);
			out += step;
			(*records)++;
		}
		in += step;
	}
	return out;
}

int ada_detail_ring_snapshot(struct ada_arena *a, uint32_t slot, uint64_t from, void *buf,
                             size_t cap, struct ada_detail_snapshot *snap)
{
	uint64_t d = a->cfg.detail_bytes;
	if (slot >= a->cfg.max_threads || d == 0 || cap < d || !buf || !snap ||
	    ((uintptr_t)buf & 7) != 0)
		return -EINVAL;
	struct ada_detail_hdr *h = ring_detail_hdr(a, slot);
	/* Pairs with the release store of head in ring_detail_append(). */
	uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
	uint64_t oldest = atomic_load_explicit(&h->oldest, memory_order_relaxed);
	uint64_t begin = from > oldest ? from : oldest;
	if (begin > head || head - begin > d || (begin & 7))
		begin = head; /* overtaken meanwhile, or a bogus `from`: nothing safe to copy */
	uint64_t intact = detail_copy(a, slot, begin, head, buf);
	uint64_t start = intact > begin ? intact : begin;
	if (start > head)
		start = head;
	uint64_t recs;
	*snap = (struct ada_detail_snapshot){.begin = start, .end = head};
	snap->bytes = detail_compact(buf, start - begin, head - begin, d, &recs);
	snap->records = recs;
	snap->lost_bytes = start > from ? start - from : 0;
	return 0;
}

const void *ada_detail_rec_next(const void *buf, size_t len, size_t *off, uint32_t *rec_len)
{
	const uint8_t *b = buf;
	struct ada_detail_rec r;
	if (*off > len || len - *off < sizeof(r))
		return NULL;
	memcpy(&r, b + *off, sizeof(r));
	uint64_t step = sizeof(r) + detail_round8(r.len);
	if (r.reserved != 0 || step > len - *off)
		return NULL;
	*rec_len = r.len;
	const void *rec = b + *off + sizeof(r);
	*off += step;
	return rec;
}
