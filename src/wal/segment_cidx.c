/*
 * ada wal: the compact index lane (ATC1, src/atf/cidx.h) of the segment
 * writer. The drain thread only, as every ada_wal_file function.
 *
 * A compact file keeps the writer's plumbing of an ATF v2 one (staging
 * buffers, segments allocated ahead, direct writes and their carry,
 * in-order durability): only the bytes differ. ada_wal_file_reserve()
 * hands out the file's chunk (WAL_CIDX_CHUNK events, small enough to stay
 * in L1 between the conversion, the trigger pass and the encoder) instead
 * of the staging buffer's free bytes; ada_wal_file_commit() codes the chunk
 * into the staging buffer (wal_cidx_commit), sealing and sending a buffer
 * the encoder found full. Every buffer is sealed before it leaves staging
 * (wal_cidx_seal, from wal_submit_cur_how), so only whole blocks reach the
 * file, and a buffer's ev_end (the drain's ring release) counts whole
 * blocks' events as for ATF v2.
 *
 * Links (detail_seq) live in the encoder until finish (memory only); the
 * persist's check of a record against its index event reads the recent
 * window (the last opts.cidx_recent events, when the file's detail lane
 * is on: the drain asks for twice its ring, what one pass can take): an
 * older event answers -ENOENT, its record is unlinked. The drain fills
 * the window only while a window of the detail lane may come
 * (ada_wal_file_keep_recent); an event of its reach it did not keep is
 * read by decoding its block, from memory or the file (wal_cidx_decoded).
 *
 * Finalize writes the link table, block table and footer
 * (ada_cidx_enc_finish) at the encoder's offset, then the header, and
 * cuts the preallocated tail.
 */
#include <errno.h>
#include <stdlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>
#include <unistd.h>

#include "atf.h"
#include "cidx.h"
#include "wal_internal.h"

/* Most bytes n events take in the file: each coded at its longest, plus
 * two block openings (a commit can spill into a fresh staging buffer). */
#define WAL_CIDX_OPEN_MAX                                                                          \
	(sizeof(struct ada_cidx_block_header) + ADA_CIDX_FRAMES_MAX * sizeof(struct ada_cidx_frame))

/* A link of the recent window (wal_cidx_link): seq1 = the event's index +
 * 1 (0: none), gen = the linking file's (wal_cidx.gen: a window taken
 * from the spares holds its earlier owners' links, which must read as
 * none). Written only when an event is linked, so its pages stay
 * untouched unless the detail lane links. */
struct wal_cidx_rlink {
	uint64_t seq1;
	uint32_t detail;
	uint32_t gen;
};

#define WAL_CIDX_TS_MASK ((1ull << 62) - 1)
/* The recent window's first size, in events (64 KiB of each array). */
#define WAL_CIDX_RECENT_FIRST 4096u

struct wal_cidx {
	struct ada_cidx_enc *enc;
	uint32_t block_size;
	struct atf_index_event chunk[WAL_CIDX_CHUNK];
	/* The recent window: event i at recent[i & (nrecent - 1)] while
	 * i + nrecent >= the file's events; NULL without detail. It starts
	 * at WAL_CIDX_RECENT_FIRST events and doubles as the file's events
	 * pass it, up to nrecent_max (wal_cidx_recent_grow): a short thread
	 * (a thread per request) costs the drain a small allocation its heap
	 * reuses, not two of tens of MiB mapped, faulted in and unmapped. An
	 * event there (struct ada_cidx_recent, cidx.h) is what the detail
	 * persist checks of it (pd_locate: time, function, kind), half an
	 * event's bytes, so that the window costs the drain half the stores:
	 * ts_kind = timestamp_ns | event_kind << 62; kind 0: an event with a
	 * timestamp of 2^62 ns or more (only a forged one), not kept. The
	 * fused pass (ada_wal_file_put_ring) writes it as wal_cidx_keep()
	 * does. */
	struct ada_cidx_recent *recent;
	struct wal_cidx_rlink *rlink; /* zeroed: pages touched as links come */
	uint64_t nrecent, nrecent_max;
	uint32_t gen;  /* this file's links in rlink (struct wal_cidx_rlink) */
	bool no_spare; /* its window is not kept (wal_recent_next_gen) */
	/* The first event linked in rlink (UINT64_MAX: none yet): a growth
	 * copies the links from there on, not the zeros before them (with
	 * no window open, all of them: tens of MiB faulted in and copied). */
	uint64_t rlink_first;
	/* The drain fills the window only while the detail lane may read it
	 * soon (ada_wal_file_keep_recent): the file's events [kept_from,
	 * kept_to) are the ones kept since it last turned it on (kept_to
	 * UINT64_MAX while on). Any other event of the window's reach is
	 * read back by decoding its block (wal_cidx_decoded), into dec[]
	 * (dec_n events of the block from dec_first; blk: its bytes). */
	bool keep_off;
	uint64_t kept_from, kept_to;
	struct atf_index_event *dec;
	uint8_t *blk;
	uint64_t dec_first;
	uint32_t dec_n, dec_cap, blk_cap;
	uint64_t enc_err; /* links the encoder could not keep (-ENOMEM) */
};

const char *ada_index_format_name(uint8_t format)
{
	return format == ADA_INDEX_COMPACT ? "compact" : "atf";
}

/* Bytes a window of n events takes (both arrays). */
static uint64_t wal_recent_bytes(uint64_t n)
{
	return n * (sizeof(struct ada_cidx_recent) + sizeof(struct wal_cidx_rlink));
}

uint64_t ada_wal_io_spare_bytes(const struct ada_wal_io *io)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < io->nrecent_spare; i++)
		bytes += wal_recent_bytes(io->recent_spare[i].n);
	return bytes;
}

void wal_cidx_spares_free(struct ada_wal_io *io)
{
	for (uint32_t i = 0; i < io->nrecent_spare; i++) {
		free(io->recent_spare[i].recent);
		free(io->recent_spare[i].rlink);
	}
	io->nrecent_spare = 0;
}

/* The next file's link generation: never 0 (a fresh window's zeroed
 * links), never one a spare window's links may carry. At the wrap the
 * spares go, and the windows of files open then are not kept, so no
 * earlier link can meet its generation again. */
static uint32_t wal_recent_next_gen(struct ada_wal_io *io)
{
	if (++io->recent_gen == 0) {
		wal_cidx_spares_free(io);
		for (struct ada_wal_file *f = io->files; f; f = f->file_next)
			if (f->cx)
				f->cx->no_spare = true;
		io->recent_gen = 1;
	}
	return io->recent_gen;
}

/* Takes the largest spare window c may have (at most nrecent_max
 * events) into c; false when none fits. */
static bool wal_recent_take(struct ada_wal_io *io, struct wal_cidx *c)
{
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < io->nrecent_spare; i++)
		if (io->recent_spare[i].n <= c->nrecent_max &&
		    (best == UINT32_MAX || io->recent_spare[i].n > io->recent_spare[best].n))
			best = i;
	if (best == UINT32_MAX)
		return false;
	c->recent = io->recent_spare[best].recent;
	c->rlink = io->recent_spare[best].rlink;
	c->nrecent = io->recent_spare[best].n;
	io->recent_spare[best] = io->recent_spare[--io->nrecent_spare];
	io->recent_reused++;
	return true;
}

/* Keeps a finished file's window for the next files; the smallest goes
 * when there are too many or they would take too much memory. */
static void wal_recent_put(struct ada_wal_io *io, struct wal_cidx *c)
{
	struct wal_recent_spare w = {c->recent, c->rlink, c->nrecent};
	c->recent = NULL;
	c->rlink = NULL;
	uint64_t bytes = wal_recent_bytes(w.n);
	if (bytes > WAL_RECENT_SPARE_BYTES) {
		free(w.recent);
		free(w.rlink);
		return;
	}
	for (uint32_t i = 0; i < io->nrecent_spare; i++)
		bytes += wal_recent_bytes(io->recent_spare[i].n);
	while (w.recent &&
	       (io->nrecent_spare == WAL_RECENT_SPARES || bytes > WAL_RECENT_SPARE_BYTES)) {
		uint32_t small = UINT32_MAX; /* the smallest spare, if smaller than w */
		for (uint32_t i = 0; i < io->nrecent_spare; i++)
			if (io->recent_spare[i].n <
			    (small == UINT32_MAX ? w.n : io->recent_spare[small].n))
				small = i;
		struct wal_recent_spare gone = w;
		if (small != UINT32_MAX) {
			gone = io->recent_spare[small];
			io->recent_spare[small] = io->recent_spare[--io->nrecent_spare];
		} else {
			w.recent = NULL; /* w is the smallest: it goes */
		}
		bytes -= wal_recent_bytes(gone.n);
		free(gone.recent);
		free(gone.rlink);
	}
	if (w.recent)
		io->recent_spare[io->nrecent_spare++] = w;
}

int wal_cidx_new(struct ada_wal_file *f)
{
	struct wal_cidx *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->block_size = f->opts.cidx_block ? f->opts.cidx_block : ADA_CIDX_BLOCK_DEFAULT;
	int r = ada_cidx_enc_new(c->block_size, &c->enc);
	c->nrecent_max = f->opts.cidx_recent;
	if (c->nrecent_max & (c->nrecent_max - 1)) /* a power of two */
		c->nrecent_max = 1ull << (64 - __builtin_clzll(c->nrecent_max));
	c->nrecent =
	    c->nrecent_max < WAL_CIDX_RECENT_FIRST ? c->nrecent_max : WAL_CIDX_RECENT_FIRST;
	c->gen = wal_recent_next_gen(f->io);
	c->rlink_first = UINT64_MAX;
	c->kept_to = UINT64_MAX; /* kept from the first event until the drain says */
	/* 64-byte aligned: the copy's 16-byte stores (wal_cidx_keep) fill
	 * whole lines. Not cleared: only slots written are read back
	 * (wal_cidx_event_read), and untouched pages cost nothing. A spare
	 * window is taken as it is: its events are never read (only this
	 * file's are), its links carry another generation. */
	if (r == 0 && c->nrecent && !wal_recent_take(f->io, c) &&
	    (!(c->recent = aligned_alloc(64, c->nrecent * sizeof(*c->recent))) ||
	     !(c->rlink = calloc(c->nrecent, sizeof(*c->rlink)))))
		r = -ENOMEM;
	if (r < 0) {
		ada_cidx_enc_free(c->enc);
		free(c->recent);
		free(c);
		return r;
	}
	f->cx = c;
	return 0;
}

void wal_cidx_free(struct ada_wal_file *f)
{
	if (!f->cx)
		return;
	ada_cidx_enc_free(f->cx->enc);
	if (f->cx->recent && f->cx->rlink && !f->cx->no_spare)
		wal_recent_put(f->io, f->cx);
	free(f->cx->recent);
	free(f->cx->rlink);
	free(f->cx->dec);
	free(f->cx->blk);
	free(f->cx);
	f->cx = NULL;
}

static void wal_cidx_info(const struct ada_wal_file *f, struct ada_atf_file_info *info)
{
	ada_atf_file_info_native(info, f->opts.thread_id);
	info->arch = f->opts.arch;
	info->clock_type = f->opts.clock_type;
	info->has_detail = f->has_detail;
}

void wal_header_placeholder(const struct ada_wal_file *f, uint8_t out[ATF_HEADER_SIZE])
{
	if (f->cx) {
		struct ada_atf_file_info info;
		struct ada_cidx_file_header h;
		wal_cidx_info(f, &info);
		ada_cidx_file_header_fill(&h, &info, f->cx->block_size);
		memcpy(out, &h, sizeof(h));
		return;
	}
	struct atf_index_header h;
	wal_fill_header(&h, f->opts.thread_id, f->opts.arch, f->opts.clock_type);
	if (f->has_detail)
		h.flags |= ATF_INDEX_FLAG_HAS_DETAIL;
	memcpy(out, &h, sizeof(h));
}

/* Most bytes one event adds at finish: its link, coded in seq order (a
 * seq varint of 10, a detail one of 5; cidx_enc.c enc_link_count()). */
#define WAL_CIDX_LINK_MAX 15u
/* Most bytes a block opened adds at finish: its block table entry. */
#define WAL_CIDX_BTAB_ENTRY sizeof(struct ada_cidx_btab_entry)

uint64_t wal_cidx_bound(size_t n)
{
	return (uint64_t)n * (ADA_CIDX_EVENT_MAX + WAL_CIDX_LINK_MAX) +
	       2 * (WAL_CIDX_OPEN_MAX + WAL_CIDX_BTAB_ENTRY);
}

size_t wal_cidx_fit(uint64_t bytes)
{
	const uint64_t open = 2 * (WAL_CIDX_OPEN_MAX + WAL_CIDX_BTAB_ENTRY);
	return bytes > open ? (bytes - open) / (ADA_CIDX_EVENT_MAX + WAL_CIDX_LINK_MAX) : 0;
}

/* A block opening carrying k frames, and its block table entry. */
static uint64_t wal_cidx_open_bytes(uint64_t k)
{
	return sizeof(struct ada_cidx_block_header) + k * sizeof(struct ada_cidx_frame) +
	       WAL_CIDX_BTAB_ENTRY;
}

uint64_t wal_cidx_bound_at(const struct wal_cidx *c, size_t n)
{
	uint64_t k = (uint64_t)ada_cidx_enc_frames(c->enc) + n;
	if (k > ADA_CIDX_FRAMES_MAX)
		k = ADA_CIDX_FRAMES_MAX;
	return (uint64_t)n * (ADA_CIDX_EVENT_MAX + WAL_CIDX_LINK_MAX) + 2 * wal_cidx_open_bytes(k);
}

size_t wal_cidx_small(const struct ada_wal_file *f, size_t n)
{
	uint64_t used = f->end + wal_cidx_tail(f) + ATF_FOOTER_SIZE;
	uint64_t room = used < f->alloc ? f->alloc - used : 0;
	/* At most FRAMES_MAX frames: wal_cidx_fit; fewer while the frames
	 * known and one a further event stay below it (a short thread's). */
	size_t fit = wal_cidx_fit(room);
	uint64_t k0 = ada_cidx_enc_frames(f->cx->enc), base = 2 * wal_cidx_open_bytes(k0);
	if (k0 < ADA_CIDX_FRAMES_MAX && room > base) {
		uint64_t per =
		    ADA_CIDX_EVENT_MAX + WAL_CIDX_LINK_MAX + 2 * sizeof(struct ada_cidx_frame);
		uint64_t few = (room - base) / per;
		if (few > ADA_CIDX_FRAMES_MAX - k0)
			few = ADA_CIDX_FRAMES_MAX - k0;
		fit = few > fit ? (size_t)few : fit;
	}
	size_t least = n < WAL_CIDX_SMALL_LEAST ? n : WAL_CIDX_SMALL_LEAST;
	return fit < least ? least : fit < n ? fit : n;
}

uint64_t wal_cidx_tail(const struct ada_wal_file *f)
{
	return ada_cidx_enc_tail_size(f->cx->enc);
}

struct atf_index_event *wal_cidx_chunk(struct ada_wal_file *f)
{
	return f->cx->chunk;
}

void wal_cidx_seal(struct ada_wal_file *f)
{
	struct wal_buf *b = f->cur;
	struct ada_cidx_out o = {b->data, b->len, f->io->buffer_bytes};
	ada_cidx_enc_seal(f->cx->enc, &o);
}

/* Copies what the detail persist checks of the chunk's events into the
 * recent window. The window (up to twice the ring, tens of MiB) is read
 * back only for the few events a persisted detail record names, long
 * after: plain stores made every line a read for ownership that missed
 * the cache, most of the drain's time in this function (perf, fib under
 * `ada record`). Non-temporal stores write the lines whole without
 * reading them; the drain thread's own later loads see them (a CPU sees
 * its own stores in order), so no fence is needed. The kind is 1..3 (the
 * conversion checked it, wal_event_bad()). */
static void wal_cidx_keep(struct wal_cidx *c, uint64_t first, const struct atf_index_event *ev,
                          size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t ts = ev[i].timestamp_ns;
		uint64_t tk = ts > WAL_CIDX_TS_MASK ? 0 : ts | (uint64_t)ev[i].event_kind << 62;
		struct ada_cidx_recent *d = &c->recent[(first + i) & (c->nrecent - 1)];
#if defined(__SSE2__) && defined(__x86_64__)
		/* One 16-byte store: the cost goes with the stores, not bytes. */
		_mm_stream_si128((__m128i *)(void *)d,
		                 _mm_set_epi64x((long long)ev[i].function_id, (long long)tk));
#else
		d->ts_kind = tk;
		d->fid = ev[i].function_id;
#endif
	}
}

/* Codes ev[0..n) into the staging buffer from where the last put left
 * it; 0 or the events taken. */
static size_t wal_cidx_put(struct ada_wal_file *f, const struct atf_index_event *ev, size_t n)
{
	struct wal_buf *b = f->cur;
	struct ada_cidx_out o = {b->data, b->len, f->io->buffer_bytes};
	int err = 0;
	size_t k = ada_cidx_enc_put(f->cx->enc, ev, n, &o, &err);
	if (err)
		f->cx->enc_err++;
	if (k && b->first_ts == 0)
		b->first_ts = ev[0].timestamp_ns;
	f->end += o.len - b->len;
	b->len = (uint32_t)o.len;
	return k;
}

/* The window reaches the file's events so far and the n about to come:
 * doubled until then, or its most (kept or not: its reach is how far
 * back the detail lane reads, wal_cidx_event_read). Until it reaches its
 * most it has not wrapped, so the events kept and the links sit at their
 * own index in both the old arrays and the new. Without memory it stays
 * as it is (counted with the links the encoder could not keep): the
 * persist then finds the older events gone (-ENOENT), as it does past
 * the window's most. */
static void wal_cidx_recent_grow(struct ada_wal_file *f, uint64_t n_more)
{
	struct wal_cidx *c = f->cx;
	const uint64_t want = f->events + n_more;
	if (!c->recent || want <= c->nrecent || c->nrecent >= c->nrecent_max)
		return;
	uint64_t n = c->nrecent;
	while (n < want && n < c->nrecent_max)
		n *= 2;
	struct ada_cidx_recent *r = aligned_alloc(64, n * sizeof(*r));
	struct wal_cidx_rlink *l = calloc(n, sizeof(*l));
	if (!r || !l) {
		free(r);
		free(l);
		c->enc_err++;
		c->nrecent_max = c->nrecent; /* no further try */
		return;
	}
	/* Below its most the window has not wrapped: event i is at i. */
	const uint64_t kept_end = c->kept_to < f->events ? c->kept_to : f->events;
	if (c->kept_from < kept_end)
		memcpy(r + c->kept_from, c->recent + c->kept_from,
		       (kept_end - c->kept_from) * sizeof(*r));
	if (c->rlink_first < f->events) /* calloc's zeros stand for the rest */
		memcpy(l + c->rlink_first, c->rlink + c->rlink_first,
		       (f->events - c->rlink_first) * sizeof(*l));
	free(c->recent);
	free(c->rlink);
	c->recent = r;
	c->rlink = l;
	c->nrecent = n;
}

/* Whether the next events go into the window. */
static bool wal_cidx_keeping(const struct wal_cidx *c)
{
	return c->recent && !c->keep_off;
}

void ada_wal_file_keep_recent(struct ada_wal_file *f, bool on)
{
	struct wal_cidx *c = f->cx;
	if (!c || !c->recent || on == !c->keep_off)
		return;
	c->keep_off = !on;
	if (on) { /* a run of kept events starts here: what went before is not kept */
		c->kept_from = f->events;
		c->kept_to = UINT64_MAX;
	} else {
		c->kept_to = f->events;
	}
}

bool wal_cidx_commit(struct ada_wal_file *f, size_t n, uint64_t staged_at)
{
	const struct atf_index_event *ev = f->cx->chunk;
	wal_cidx_recent_grow(f, n);
	if (wal_cidx_keeping(f->cx))
		wal_cidx_keep(f->cx, f->events, ev, n);
	if (f->events == 0)
		f->t_start = ev[0].timestamp_ns;
	size_t done = 0;
	while (done < n) {
		if (!f->cur) {
			struct wal_buf *b = wal_buf_get(f->io);
			if (!b)
				break;
			wal_stage(f, b, staged_at);
		}
		size_t k = wal_cidx_put(f, ev + done, n - done);
		done += k;
		f->events += k;
		if (done < n) /* the buffer is full: sealed and sent */
			wal_submit_cur_how(f, false);
		if (k == 0 && done < n && f->cur)
			break; /* a fresh buffer took nothing: cannot happen */
	}
	if (done)
		f->t_end = ev[done - 1].timestamp_ns;
	if (done < n) {
		f->lost += n - done;
		f->full = true;
		if (!f->error)
			f->error = -ENOMEM;
	}
	return done == n;
}

size_t ada_wal_file_put_ring(struct ada_wal_file *f, const struct atf_index_event *src, size_t n,
                             struct ada_cidx_ring_conv *cv, struct ada_cidx_calls *calls)
{
	struct wal_buf *b = f->cur;
	/* The first event of a file and of a buffer (their start times) are
	 * the general path's. */
	if (!f->cx || !b || f->full || f->error || f->events == 0 || b->first_ts == 0)
		return 0;
	struct wal_cidx *c = f->cx;
	/* The window holds the events about to be kept, as a commit's would. */
	const bool kept = wal_cidx_keeping(c);
	wal_cidx_recent_grow(f, n);
	struct ada_cidx_out o = {b->data, b->len, f->io->buffer_bytes};
	struct ada_cidx_keep keep = {c->recent, c->nrecent - 1, f->events};
	size_t k = ada_cidx_enc_put_ring(c->enc, src, n, cv, calls, kept ? &keep : NULL, &o);
	if (k == 0)
		return 0;
	f->end += o.len - b->len;
	b->len = (uint32_t)o.len;
	f->events += k;
	f->t_end = cv->last;
	return k;
}

/* Event i decoded from its block's bytes (the window did not keep it):
 * the block's events up to the newest are decoded once into c->dec, so
 * the persist's reads in order decode each block once. */
static int wal_cidx_decoded(struct ada_wal_file *f, uint64_t i, const struct atf_index_event **ev)
{
	struct wal_cidx *c = f->cx;
	if (c->dec_n && i >= c->dec_first && i - c->dec_first < c->dec_n) {
		*ev = &c->dec[i - c->dec_first];
		return 0;
	}
	struct ada_cidx_span sp;
	int r = ada_cidx_enc_block_of(c->enc, i, &sp);
	if (r < 0)
		return r;
	if (sp.len > c->blk_cap) {
		uint8_t *b = realloc(c->blk, sp.len);
		if (!b)
			return -ENOMEM;
		c->blk = b;
		c->blk_cap = sp.len;
	}
	if (sp.nevents > c->dec_cap) {
		struct atf_index_event *d = realloc(c->dec, sp.nevents * sizeof(*d));
		if (!d)
			return -ENOMEM;
		c->dec = d;
		c->dec_cap = sp.nevents;
	}
	c->dec_n = 0;
	if ((r = wal_file_read_span(f, sp.pos, sp.len, c->blk)) < 0 ||
	    (r = ada_cidx_block_events(c->blk, sp.len, sp.nevents, c->dec)) < 0)
		return r;
	c->dec_first = sp.first_seq;
	c->dec_n = sp.nevents;
	if (i < sp.first_seq || i - sp.first_seq >= sp.nevents)
		return -EIO; /* the encoder's table disagrees with itself: a bug */
	*ev = &c->dec[i - c->dec_first];
	return 0;
}

int wal_cidx_event_read(struct ada_wal_file *f, uint64_t i, struct atf_index_event *out)
{
	struct wal_cidx *c = f->cx;
	if (i >= f->events || !c->recent || f->events - i > c->nrecent)
		return -ENOENT;
	uint64_t ts_kind, fid;
	if (i >= c->kept_from && i < c->kept_to) {
		const struct ada_cidx_recent *e = &c->recent[i & (c->nrecent - 1)];
		ts_kind = e->ts_kind;
		fid = e->fid;
	} else {
		const struct atf_index_event *e;
		if (wal_cidx_decoded(f, i, &e) < 0)
			return -ENOENT;
		ts_kind = e->timestamp_ns > WAL_CIDX_TS_MASK || e->event_kind > 3
		              ? 0
		              : e->timestamp_ns | (uint64_t)e->event_kind << 62;
		fid = e->function_id;
	}
	if (!(ts_kind >> 62))
		return -ENOENT; /* not kept (wal_cidx_keep()) */
	const struct wal_cidx_rlink *l = &c->rlink[i & (c->nrecent - 1)];
	*out = (struct atf_index_event){
	    .timestamp_ns = ts_kind & WAL_CIDX_TS_MASK,
	    .function_id = fid,
	    .thread_id = f->opts.thread_id,
	    .event_kind = (uint32_t)(ts_kind >> 62),
	    .detail_seq = l->seq1 == i + 1 && l->gen == c->gen ? l->detail : ATF_NO_DETAIL,
	};
	return 0;
}

int wal_cidx_link(struct ada_wal_file *f, uint64_t i, uint32_t v)
{
	struct wal_cidx *c = f->cx;
	int r = ada_cidx_enc_link(c->enc, i, v);
	if (r < 0)
		return r;
	/* The tail grew after the fact: the allocation (what the disk budget
	 * counts) keeps room for it, so finalize writes nothing past it,
	 * grown a small step at a time: the budget pays each step with the
	 * record whose link needs it (ada_wal_file_link_room), and a whole
	 * segment took up to 4 MiB more than the room it made for a thread's
	 * end (e2e.budget_windows_big, 0.1-0.5 MB over its budget). Failing
	 * that, finalize still writes it, and the budget counts the file's
	 * final size. */
	if (f->end + wal_cidx_tail(f) + ATF_FOOTER_SIZE > f->alloc && !f->error)
		(void)wal_grow_tail(f, f->end + wal_cidx_tail(f));
	if (c->recent && i < f->events && f->events - i <= c->nrecent) {
		c->rlink[i & (c->nrecent - 1)] = (struct wal_cidx_rlink){i + 1, v, c->gen};
		c->rlink_first = i < c->rlink_first ? i : c->rlink_first;
	}
	return 0;
}

uint64_t wal_cidx_link_room(const struct ada_wal_file *f)
{
	uint64_t need = f->end + wal_cidx_tail(f) + ADA_CIDX_LINK_MAX_BYTES + ATF_FOOTER_SIZE;
	return need > f->alloc && !f->error ? WAL_MIN_SEGMENT : 0;
}

uint64_t wal_cidx_unlink_from(struct ada_wal_file *f, uint32_t detail_seq)
{
	struct wal_cidx *c = f->cx;
	/* Only the events the window holds: its other pages are untouched. */
	uint64_t from = c->recent && f->events > c->nrecent ? f->events - c->nrecent : 0;
	for (uint64_t i = from; c->recent && i < f->events; i++) {
		struct wal_cidx_rlink *l = &c->rlink[i & (c->nrecent - 1)];
		if (l->seq1 == i + 1 && l->gen == c->gen && l->detail != ATF_NO_DETAIL &&
		    l->detail >= detail_seq)
			l->seq1 = 0; /* unlinked: reads ATF_NO_DETAIL (wal_cidx_event_read) */
	}
	return ada_cidx_enc_unlink_from(c->enc, detail_seq);
}

int wal_cidx_write_final(struct ada_wal_file *f, struct ada_wal_file_summary *s)
{
	struct ada_atf_file_info info;
	struct ada_cidx_file_header h;
	wal_cidx_info(f, &info);
	uint64_t off = ada_cidx_enc_offset(f->cx->enc);
	size_t cap = ada_cidx_enc_tail_size(f->cx->enc), len = 0;
	uint8_t *tail = malloc(cap);
	s->bytes = 0;
	if (!tail)
		return -ENOMEM;
	int r = ada_cidx_enc_finish(f->cx->enc, &info, tail, cap, &len, &h);
	if (r == 0 && off != f->end)
		r = -EIO; /* the encoder's bytes and the file's disagree: a bug */
	if (r == 0)
		r = wal_pwrite_all(f->fd, tail, len, off);
	if (r == 0)
		r = wal_pwrite_all(f->fd, &h, sizeof(h), 0);
	if (r == 0 && ftruncate(f->fd, (off_t)(off + len)) < 0)
		r = -errno;
	if (r == 0 && f->opts.flush.safe) {
		if (fdatasync(f->fd) < 0)
			r = -errno;
		else
			f->syncs++;
	}
	if (r == 0 && len >= sizeof(struct ada_cidx_footer)) {
		struct ada_cidx_footer ft;
		memcpy(&ft, tail + len - sizeof(ft), sizeof(ft));
		s->crc = ft.crc;
		s->bytes = off + len;
	}
	free(tail);
	return r;
}
