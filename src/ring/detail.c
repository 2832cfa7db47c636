/*
 * ada ring: the detail lane -- a per-thread byte ring of variable-length
 * records that overwrites its oldest records (a flight recorder).
 *
 * Threads: ada_detail_reserve() (ring.h) runs on the slot's owning thread (the only
 * writer of head, oldest and the data); ada_detail_ring_snapshot() runs on
 * the drain, concurrently, and only reads.
 *
 * Layout: byte positions grow forever; position p lives at data[p & (D-1)].
 * A record is one 8-byte header word (len, in the low 32 bits) and len
 * bytes padded to 8. The data is cut into chunks of C bytes (D/16, at
 * least 1 KiB: ada_detail_chunk_shift) and records never cross a chunk's
 * end: when one does not fit in the rest of its chunk, a pad word
 * (RING_DETAIL_PAD | bytes to skip) fills the rest and the record starts
 * the next chunk (so pads sit at any chunk's end, not only the data's).
 * A record is at most C - 8 bytes. A full ring frees a whole chunk at a
 * time: oldest is always a chunk start (or 0), and the ring holds at
 * least D - C bytes of records once it has wrapped.
 *
 * Protocol (a seqlock on `oldest`):
 *   producer: before writing into a chunk that still holds records
 *             (a lap old), advance oldest past that chunk and store it;
 *             then write the new words with release stores; then
 *             store-release head.
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
#include <stddef.h>
#include <string.h>

#include "ring_internal.h"

static uint64_t detail_round8(uint64_t n)
{
	return (n + 7) & ~7ull;
}

uint32_t ada_detail_max_record(const struct ada_arena *a)
{
	uint64_t d = a->cfg.detail_bytes;
	return d ? (uint32_t)((1ull << ada_detail_chunk_shift(d)) - RING_DETAIL_HDR) : 0;
}

void ada_detail_ring_set_decided(struct ada_arena *a, uint32_t slot, uint64_t link)
{
	if (slot >= a->nslots || ring_slot_detail_bytes(a, slot) == 0)
		return;
	_Atomic uint64_t *dec = &ring_detail_hdr(a, slot)->decided;
	/* Release: pairs with the producer's acquire load in
	 * ada_detail_chunk_decided() (ring.h): this drain's copy of the
	 * records below `link` is done before their chunk can be reused. */
	if (atomic_load_explicit(dec, memory_order_relaxed) != link)
		atomic_store_explicit(dec, link, memory_order_release);
}

void ada_detail_ring_waits(struct ada_arena *a, uint32_t slot, uint64_t *waits, uint64_t *ns)
{
	*waits = *ns = 0;
	if (slot >= a->nslots || ring_slot_detail_bytes(a, slot) == 0)
		return;
	_Atomic uint64_t *w = ring_detail_hdr(a, slot)->wait_stat;
	/* Relaxed: counters to show, ordered with nothing. */
	*waits = atomic_load_explicit(&w[0], memory_order_relaxed);
	*ns = atomic_load_explicit(&w[1], memory_order_relaxed);
}

void ada_index_ring_waits(struct ada_arena *a, uint32_t slot, uint64_t *waits, uint64_t *ns)
{
	*waits = *ns = 0;
	if (slot >= a->nslots)
		return;
	_Atomic uint64_t *w = ring_index_hdr(a, slot)->wait_stat;
	/* Relaxed: counters to show, ordered with nothing. */
	*waits = atomic_load_explicit(&w[0], memory_order_relaxed);
	*ns = atomic_load_explicit(&w[1], memory_order_relaxed);
}

static uint64_t detail_step(uint64_t w, uint64_t d)
{
	return ada_detail_step(w, d);
}

/* Copies ring bytes [begin, end) to out, then returns the oldest position
 * whose bytes are known intact (the seqlock re-check). */
static uint64_t detail_copy(struct ada_arena *a, uint32_t slot, uint64_t begin, uint64_t end,
                            uint64_t *out)
{
	uint64_t d = ring_slot_detail_bytes(a, slot);
	_Atomic uint64_t *words = ring_detail_words(a, slot);
	/* Counted, not `p < end`: positions come from the target's memory and
	 * p += 8 could wrap past 2^64 (a head near it ran this loop past the
	 * buffer: fuzz.arena). The caller checked end - begin <= d <= cap. */
	uint64_t n = (end - begin + 7) / 8;
	/* Acquire: pairs with the release stores of the words in
	 * ada_detail_reserve() (ring.h); a word written over an old one makes the
	 * reload of oldest below see the advance that preceded it. */
	for (uint64_t i = 0; i < n; i++)
		out[i] = atomic_load_explicit(&words[((begin + 8 * i) & (d - 1)) / 8],
		                              memory_order_acquire);
	/* After the acquire loads in program order: cannot be hoisted above. */
	return atomic_load_explicit(&ring_detail_hdr(a, slot)->oldest, memory_order_relaxed);
}

/* Walks the copied bytes from offset `from` (a record boundary), moving the
 * records down to the front of buf without pads, each header's `pos8`
 * set to its offset from `from` in words (the snapshot's begin: what
 * ada_detail_rec_ring_pos() reads). Returns bytes kept. */
static uint64_t detail_compact(uint8_t *buf, uint64_t from, uint64_t len, uint64_t d,
                               uint64_t *records, uint64_t *consumed)
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
			if (out != in) /* in place until the first pad: no copy */
				memmove(buf + out, buf + in, step);
			/* d <= ADA_DETAIL_MAX_BYTES: a word offset fits 32 bits */
			uint32_t pos8 = (uint32_t)((in - from) / 8);
			memcpy(buf + out + offsetof(struct ada_detail_rec, pos8), &pos8,
			       sizeof(pos8));
			out += step;
			(*records)++;
		}
		in += step;
	}
	*consumed = in - from;
	return out;
}

int ada_detail_ring_snapshot_part(struct ada_arena *a, uint32_t slot, uint64_t from, uint64_t limit,
                                  void *buf, size_t cap, struct ada_detail_snapshot *snap)
{
	if (slot >= a->nslots)
		return -EINVAL;
	uint64_t d = ring_slot_detail_bytes(a, slot);
	/* What is copied is at most d bytes, and at most limit. */
	if (d == 0 || cap < (limit < d ? limit : d) || !buf || !snap || ((uintptr_t)buf & 7) != 0)
		return -EINVAL;
	struct ada_detail_hdr *h = ring_detail_hdr(a, slot);
	/* Pairs with the release store of head in ada_detail_reserve() (ring.h). */
	uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
	uint64_t oldest = atomic_load_explicit(&h->oldest, memory_order_relaxed);
	uint64_t begin = from > oldest ? from : oldest;
	if (begin > head || head - begin > d || (begin & 7))
		begin = head; /* overtaken meanwhile, or a bogus `from`: nothing safe to copy */
	uint64_t end = head - begin > limit ? begin + (limit & ~7ull) : head;
	uint64_t intact = detail_copy(a, slot, begin, end, buf);
	uint64_t start = intact > begin ? intact : begin;
	if (start > end)
		start = end;
	uint64_t recs, used;
	*snap = (struct ada_detail_snapshot){.begin = start};
	snap->bytes = detail_compact(buf, start - begin, end - begin, d, &recs, &used);
	/* Cut short, the copy ends after its last whole record, where the
	 * next one goes on; else at head. */
	snap->end = end == head ? head : start + used;
	snap->cut = end != head;
	snap->records = recs;
	snap->lost_bytes = start > from ? start - from : 0;
	return 0;
}

int ada_detail_ring_snapshot(struct ada_arena *a, uint32_t slot, uint64_t from, void *buf,
                             size_t cap, struct ada_detail_snapshot *snap)
{
	return ada_detail_ring_snapshot_part(a, slot, from, UINT64_MAX, buf, cap, snap);
}

/* Reads the header word at ring position p (acquire: as detail_copy). */
static uint64_t detail_word(struct ada_arena *a, uint32_t slot, uint64_t p, uint64_t d)
{
	return atomic_load_explicit(&ring_detail_words(a, slot)[(p & (d - 1)) / 8],
	                            memory_order_acquire);
}

void (*ring_detail_ends_test_hook)(void *ctx);
void *ring_detail_ends_test_ctx;

int ada_detail_ring_ends(struct ada_arena *a, uint32_t slot, void *buf, size_t cap,
                         struct ada_detail_ends *e)
{
	if (slot >= a->nslots)
		return -EINVAL;
	uint64_t d = ring_slot_detail_bytes(a, slot);
	uint64_t c = d ? 1ull << ada_detail_chunk_shift(d) : 0;
	if (d == 0 || cap < 2 * c || !buf || !e || ((uintptr_t)buf & 7) != 0)
		return -EINVAL;
	*e = (struct ada_detail_ends){0};
	struct ada_detail_hdr *h = ring_detail_hdr(a, slot);
	/* Pairs with the release store of head in ada_detail_reserve() (ring.h). */
	uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
	uint64_t oldest = atomic_load_explicit(&h->oldest, memory_order_relaxed);
	if (oldest == head)
		return 0; /* empty */
	/* Anything the full snapshot would not walk plainly (bogus positions
	 * from the target's memory): let the caller take the full snapshot. */
	if (oldest > head || head - oldest > d || ((oldest | head) & 7) || (oldest & (c - 1)))
		return -EAGAIN;
	/* The oldest record: the first non-pad one from oldest, within its
	 * chunk (a chunk start never holds a pad; bounded all the same). */
	uint64_t p = oldest, step = 0, stop = oldest + c < head ? oldest + c : head;
	for (uint64_t i = 0; i < c / 8 && p < stop; i++, p += step) {
		uint64_t w = detail_word(a, slot, p, d);
		step = detail_step(w, d);
		if (step == 0 || step > stop - p)
			return -EAGAIN; /* torn (overtaken) or malformed */
		if (!(w & RING_DETAIL_PAD))
			break;
	}
	if (p >= stop)
		return -EAGAIN;
	uint8_t *b = buf;
	detail_copy(a, slot, p, p + step, buf);
	e->first_off = 0;
	e->first_len = step;
	/* The newest: walk the header words of the chunk holding head - 8 in
	 * place (records never cross a chunk's end, so its start is a record
	 * boundary; or from oldest), then copy that one record. Each word is
	 * an acquire load like detail_copy's, so the re-check below covers
	 * the walk too: a word the producer wrote over an old one means
	 * oldest moved. Every step is checked against head; each is >= 8, so
	 * the walk ends within c / 8 rounds, bounded all the same. */
	uint64_t cs = (head - 8) & ~(c - 1);
	if (cs < oldest)
		cs = oldest;
	uint64_t q = cs, last = UINT64_MAX, lstep = 0;
	for (uint64_t i = 0; i < c / 8 && q < head; i++) {
		uint64_t w = detail_word(a, slot, q, d);
		uint64_t s = detail_step(w, d);
		if (s == 0 || s > head - q)
			return -EAGAIN; /* torn (overtaken) or malformed */
		if (!(w & RING_DETAIL_PAD)) {
			last = q;
			lstep = s;
		}
		q += s;
	}
	if (q != head || last == UINT64_MAX)
		return -EAGAIN;
	if (ada_unlikely(ring_detail_ends_test_hook != NULL))
		ring_detail_ends_test_hook(ring_detail_ends_test_ctx);
	uint64_t intact = detail_copy(a, slot, last, last + lstep, (uint64_t *)(void *)(b + c));
	/* The seqlock re-check (after every acquire load above, in program
	 * order): a moved oldest may have overwritten what was read. */
	if (intact != oldest)
		return -EAGAIN;
	e->last_off = c;
	e->last_len = lstep;
	e->found = true;
	return 0;
}

uint64_t ada_detail_ring_head(struct ada_arena *a, uint32_t slot)
{
	if (slot >= a->nslots || ring_slot_detail_bytes(a, slot) == 0)
		return 0;
	/* Relaxed: only compared with an earlier value; the copy that follows
	 * a change loads head again with acquire (ada_detail_ring_snapshot),
	 * pairing with ada_detail_commit()'s release store. */
	return atomic_load_explicit(&ring_detail_hdr(a, slot)->head, memory_order_relaxed);
}

const void *ada_detail_rec_next(const void *buf, size_t len, size_t *off, uint32_t *rec_len)
{
	const uint8_t *b = buf;
	struct ada_detail_rec r;
	if (*off > len || len - *off < sizeof(r))
		return NULL;
	memcpy(&r, b + *off, sizeof(r));
	uint64_t step = sizeof(r) + detail_round8(r.len);
	if (step > len - *off)
		return NULL;
	*rec_len = r.len;
	const void *rec = b + *off + sizeof(r);
	*off += step;
	return rec;
}

uint64_t ada_detail_rec_ring_pos(const struct ada_detail_snapshot *snap, const void *rec)
{
	struct ada_detail_rec r;
	memcpy(&r, (const uint8_t *)rec - sizeof(r), sizeof(r));
	return snap->begin + (uint64_t)r.pos8 * 8;
}
