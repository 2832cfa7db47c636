/*
 * The table of children a process reaped itself: the wait family's
 * wrappers write it (src/hook/agent_wait.c), the drain reads it
 * (src/recorder/wait_notes.c). The protocol is in ring_reaped.h; the
 * layout in ring_internal.h (the control block's reaped_head and
 * reaped[]).
 *
 * Threads: any thread of the target writes, also from a signal handler
 * (atomics only: no system call, no libc, errno untouched); the drain
 * thread alone reads, with its own cursor.
 * Invariant: an entry is taken only whole -- its seq names the position
 * read before and after its fields, and its check word covers them.
 */
#include "ring_internal.h"

/* A mix of the entry's seq and fields (a finalizer of splitmix64): a
 * field from another write than the rest changes it. Not a secret: the
 * target can forge any entry; this catches writers that raced. */
static uint64_t ring_reaped_check(uint64_t seq, uint32_t pid, uint32_t status, uint64_t ts_raw)
{
	uint64_t h = seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)pid << 32 | status);
	h ^= ts_raw + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

void ada_arena_note_reaped(struct ada_arena *a, int32_t pid, int32_t status, uint64_t ts_raw)
{
	struct ada_arena_control *c = a->ctl;
	/* Relaxed: the position only names the entry; its seq publishes it. */
	uint64_t pos = atomic_fetch_add_explicit(&c->reaped_head, 1, memory_order_relaxed);
	struct ring_reaped_entry *e = &c->reaped[pos & (ADA_REAPED_SLOTS - 1)];
	uint64_t seq = 2 * pos + 2;
	atomic_store_explicit(&e->seq, seq - 1, memory_order_relaxed);
	/* Release, each: a reader whose acquire load in reaped_read() sees one
	 * of these values sees the odd seq above too, so its second load of
	 * seq cannot match the first. */
	atomic_store_explicit(&e->ts_raw, ts_raw, memory_order_release);
	atomic_store_explicit(&e->pid, (uint32_t)pid, memory_order_release);
	atomic_store_explicit(&e->status, (uint32_t)status, memory_order_release);
	atomic_store_explicit(&e->check,
	                      ring_reaped_check(seq, (uint32_t)pid, (uint32_t)status, ts_raw),
	                      memory_order_release);
	/* Publishes the fields: pairs with the first acquire load of seq in
	 * reaped_read(). */
	atomic_store_explicit(&e->seq, seq, memory_order_release);
}

/* A raw wait status a reap can give: exited (code in bits 8-15, low byte
 * 0) or killed (signal 1..126 in bits 0-6, 0x80 a core dump). */
static bool reaped_status_ok(uint32_t st)
{
	uint32_t sig = st & 0x7f;
	if (st > 0xffff)
		return false;
	return sig == 0 ? (st & 0xff) == 0 : sig != 0x7f && (st >> 8) == 0;
}

enum reaped_read_result { REAPED_OK, REAPED_LATER_LAP, REAPED_UNDER_WAY, REAPED_BAD };

/* Entry e as written for position k, checked (the trust boundary: every
 * field read once here). */
static enum reaped_read_result reaped_read(const struct ring_reaped_entry *e, uint64_t k,
                                           struct ada_reaped_note *out)
{
	uint64_t want = 2 * k + 2;
	/* Pairs with the release store of the even seq in
	 * ada_arena_note_reaped(): the fields of that write are visible. */
	uint64_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	if (s1 != want)
		return s1 > want ? REAPED_LATER_LAP : REAPED_UNDER_WAY;
	/* Acquire, each: pairs with the release stores of the fields in
	 * ada_arena_note_reaped(); a value of a later write brings its odd
	 * seq with it, which the load of seq below then sees. */
	uint64_t ts = atomic_load_explicit(&e->ts_raw, memory_order_acquire);
	uint32_t pid = atomic_load_explicit(&e->pid, memory_order_acquire);
	uint32_t st = atomic_load_explicit(&e->status, memory_order_acquire);
	uint64_t check = atomic_load_explicit(&e->check, memory_order_acquire);
	/* Relaxed: ordered after the acquire loads above. */
	uint64_t s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if (s2 != s1)
		return REAPED_LATER_LAP;
	if (check != ring_reaped_check(s1, pid, st, ts) || pid == 0 ||
	    pid > (uint32_t)ADA_REAPED_PID_MAX || !reaped_status_ok(st))
		return REAPED_BAD;
	*out = (struct ada_reaped_note){.pid = (int32_t)pid, .status = (int32_t)st, .ts_raw = ts};
	return REAPED_OK;
}

uint32_t ada_arena_reaped_take(const struct ada_arena *a, uint64_t *cursor, bool final,
                               struct ada_reaped_note out[ADA_REAPED_SLOTS],
                               struct ada_reaped_counts *counts)
{
	const struct ada_arena_control *c = a->ctl;
	/* Relaxed: a bound only; each entry's seq says whether it is whole. */
	uint64_t head = atomic_load_explicit(&c->reaped_head, memory_order_relaxed);
	uint64_t k = *cursor;
	uint32_t n = 0;
	if (head <= k)
		return 0;
	if (head - k > ADA_REAPED_SLOTS) { /* a lap or more went by unread */
		counts->overwritten += head - ADA_REAPED_SLOTS - k;
		k = head - ADA_REAPED_SLOTS;
	}
	for (; k < head; k++) {
		enum reaped_read_result rr =
		    reaped_read(&c->reaped[k & (ADA_REAPED_SLOTS - 1)], k, &out[n]);
		if (rr == REAPED_UNDER_WAY && !final)
			break; /* read at the next look; a later lap would count it overwritten */
		if (rr == REAPED_OK)
			n++;
		else if (rr == REAPED_LATER_LAP)
			counts->overwritten++;
		else
			counts->refused++;
	}
	*cursor = k;
	return n;
}
