/*
 * Persisting the detail lane: from a thread's detail ring (in the arena)
 * to its thread_K/detail.atf, with the index events' detail_seq patched
 * to point at them (detail_internal.h: wal_detail_persist).
 *
 * Threads: the drain thread only.
 *
 * The ring's records are the agent's (ring.h, ADA_DREC_*); they are
 * untrusted input: every length, type, stack size and link is checked,
 * and a record that does not match its index event (function, kind, an
 * unlinked detail_seq) is counted and left out, never written.
 *
 * Linking: a record carries the index ring position of its event. The
 * current index file holds ring positions [file_ring_base, ring_next)
 * (below file_ring_hole), so the event's index_seq is position -
 * file_ring_base, and the drain can read it (for its timestamp, which the
 * detail event repeats exactly) and patch it wherever it is.
 * Invariant: records are decided in ring order and `hwm` (one past the
 * last decided link) only grows, so no record is persisted twice and the
 * detail file's index_seq strictly increases.
 *
 * Loss (loss.c; --detail always looks like this only when the
 * producer overtook the position it copies from): records are decided in push order,
 * so a look at the ring that still finds a decided record has missed
 * nothing; one that finds none has missed the records its ring
 * overwrote before anyone decided them: the ring's overwritten counter
 * (the records before its oldest) less the records decided and the
 * gaps counted before. The counter is read before and after the
 * snapshot; when they differ (the producer overwrote meanwhile) the look
 * is retried, at most PD_LOOKS times, then counted from the first read:
 * low, and the next steady look counts the rest (wal_gap_count).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "detail_pd.h"

/* What one call walks with: the window, the byte budget (NULL: none),
 * and where the first record it leaves undecided sits in the ring. */
struct pd_walk_ctl {
	uint64_t from_ns, to_ns;
	struct wal_detail_budget *budget;
	const struct ada_detail_snapshot *snap;
	uint64_t resume;     /* ring position of the first undecided record */
	size_t resume_off;   /* ... its offset in the buffer walked */
	uint64_t resume_ord; /* ... and its ordinal there */
	bool all;            /* every record walked was decided */
	/* The index ring's head read after the snapshot: a record linked at
	 * or past it links to no event (pd_index_head). */
	uint64_t index_head;
	const struct pd_res *res; /* the walked record's event as read before (NULL: none) */
};

struct wal_tdetail *pd_state(struct wal_thread *t)
{
	if (!t->dt)
		t->dt = calloc(1, sizeof(*t->dt));
	return t->dt;
}

uint64_t pd_to_ns(const struct ada_recorder *r, uint64_t raw)
{
	return r->use_tsc ? ada_tsc_clock_to_ns(&r->clk, raw) : raw;
}

/* A cache-line-aligned buffer of at least need bytes in *buf (*cap its
 * size), replaced only when too small: nothing in it is kept. */
static int pd_grow(void **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	void *b = NULL;
	if (posix_memalign(&b, 64, need) != 0)
		return -ENOMEM;
	free(*buf);
	*buf = b;
	*cap = need;
	return 0;
}

/* Grows the recorder's snapshot buffer to the slot's ring size. */
static int pd_buffer(struct ada_recorder *r, struct wal_thread *t)
{
	uint64_t d = ada_arena_config_of(t->p->arena)->detail_bytes;
	if (d == 0)
		return -ENODATA;
	if (pd_grow(&r->dsnap.buf, &r->dsnap.cap, d) < 0)
		return -ENOMEM;
	r->dsnap.used = true; /* kept past heap.c's next look */
	return 0;
}

/* Grows the span tick's buffer to two chunks of the slot's ring, what
 * ada_detail_ring_ends needs: the tick never holds the ring's size. */
static int pd_ends_buffer(struct ada_recorder *r, struct wal_thread *t)
{
	uint64_t d = ada_arena_config_of(t->p->arena)->detail_bytes;
	if (d == 0)
		return -ENODATA;
	return pd_grow(&r->dsnap.ends, &r->dsnap.ends_cap, (size_t)2 << ada_detail_chunk_shift(d));
}

/* A snapshot of the slot's ring from `from` into the recorder's buffer,
 * of at most `limit` ring bytes. */
int pd_snapshot_part(struct ada_recorder *r, struct wal_thread *t, uint64_t from, uint64_t limit,
                     struct ada_detail_snapshot *snap)
{
	int e = pd_buffer(r, t);
	if (e < 0)
		return e;
	return ada_detail_ring_snapshot_part(t->p->arena, t->slot, from, limit, r->dsnap.buf,
	                                     r->dsnap.cap, snap);
}

static int pd_snapshot(struct ada_recorder *r, struct wal_thread *t, uint64_t from,
                       struct ada_detail_snapshot *snap)
{
	return pd_snapshot_part(r, t, from, UINT64_MAX, snap);
}

bool pd_parse(const void *p, uint32_t len, struct pd_rec *out)
{
	const uint64_t *w = p; /* snapshot records are 8-byte aligned */
	if (len < ADA_DREC_RETURN_WORDS * 8)
		return false;
	uint64_t meta = w[ADA_DREC_META];
	out->raw_ts = w[ADA_DREC_TS];
	out->link = w[ADA_DREC_LINK];
	out->fn = w[ADA_DREC_FN];
	out->type = (uint32_t)(meta & 0xffff);
	out->flags = (uint32_t)((meta >> 16) & 0xffff);
	out->stack = (uint32_t)((meta >> 32) & 0xffff);
	out->w = w;
	if (meta >> 48)
		return false;
	if (out->type == ATF_DETAIL_FUNCTION_CALL || out->type == ATF_DETAIL_FUNCTION_CALL_FP)
		return out->stack <= ATF_DETAIL_STACK_MAX &&
		       len >= (out->type == ATF_DETAIL_FUNCTION_CALL ? ADA_DREC_CALL_WORDS
		                                                     : ADA_DREC_CALL_FP_WORDS) *
		                      8 +
		                  ((out->stack + 7) & ~7u);
	if (out->type == ATF_DETAIL_FUNCTION_RETURN_FP)
		return out->stack == 0 && len >= ADA_DREC_RETURN_FP_WORDS * 8;
	return out->type == ATF_DETAIL_FUNCTION_RETURN && out->stack == 0;
}

/* The ATF detail event of a ring record (errata 5, docs/format.md); xmm
 * gets the vector registers of a _FP record (8 words, zeros where the
 * record has none). */
static void pd_build(const struct wal_thread *t, const struct pd_rec *rc, uint32_t index_seq,
                     uint64_t ts, struct atf_detail_event_header *h,
                     struct atf_detail_function_payload *p, uint64_t *xmm)
{
	const uint64_t *g = rc->w + ADA_DREC_REGS;
	bool fp = ada_atf_detail_is_fp(rc->type);
	memset(p, 0, sizeof(*p));
	memset(xmm, 0, ATF_DETAIL_XMM_WORDS * 8);
	p->function_id = rc->fn;
	if (rc->type == ATF_DETAIL_FUNCTION_CALL_FP)
		memcpy(xmm, rc->w + ADA_DREC_CALL_WORDS, ATF_DETAIL_XMM_WORDS * 8);
	else if (fp)
		memcpy(xmm, rc->w + ADA_DREC_RETURN_WORDS, 2 * 8);
	if (ada_atf_detail_is_call(rc->type)) {
		for (int i = 0; i < 7; i++) /* rdi rsi rdx rcx r8 r9 rax */
			p->x_regs[i] = g[i];
		p->lr = g[7];
		p->fp = g[8];
		p->sp = g[9];
		p->stack_size = (uint16_t)rc->stack;
	} else {
		/* The return value: rax:rdx in x86_64's x_regs[6..7], arm64's
		 * x0:x1 in x_regs[0..1] (docs/format.md, the arm64 table). */
		int at = t->p->arch == ATF_ARCH_ARM64 ? 0 : 6;
		p->x_regs[at] = g[0];
		p->x_regs[at + 1] = g[1];
		p->lr = g[2];
		p->fp = g[3];
		p->sp = g[4];
	}
	*h = (struct atf_detail_event_header){
	    .total_length = (uint32_t)(ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(*p) +
	                               (fp ? ATF_DETAIL_XMM_WORDS * 8 : 0) + p->stack_size),
	    .event_type = (uint16_t)rc->type,
	    .flags = (uint16_t)rc->flags,
	    .index_seq = index_seq,
	    .thread_id = t->tid,
	    .timestamp = ts,
	};
}

static int pd_open_file(struct wal_thread *t, struct wal_tdetail *dt)
{
	int rc = wal_dfile_open(wal_thread_dir(t), "detail.atf", t->tid, t->p->arch, &dt->df);
	if (rc < 0)
		return rc;
	dt->files++;
	wal_file_set_has_detail(t->f);
	wal_budget_dir_sealed(t->p, t->seq, true); /* a new entry: its blocks read again */
	return 0;
}

enum pd_verdict { PD_WRITE, PD_SKIP, PD_UNLINKED, PD_LATER, PD_STOP, PD_BAD_LINK };

/* Window test for a record whose index event cannot be read: by its own
 * timestamp (converted now; the index lane's may differ by a clamp). */
static enum pd_verdict pd_unlinked(uint64_t ns, uint64_t from_ns, uint64_t to_ns)
{
	if (ns < from_ns)
		return PD_SKIP;
	return ns > to_ns ? PD_STOP : PD_UNLINKED;
}

/* The record's index event as t's index file has it now (*ev): not
 * taken yet (PD_RES_NONE), none to read (an earlier generation, lost, or
 * read no more), or read: the record's, or not (function, kind, a link
 * already set). */
enum pd_res_state pd_read_event(struct wal_thread *t, const struct pd_rec *rc,
                                struct atf_index_event *ev)
{
	if (rc->link >= t->ring_next)
		return PD_RES_NONE; /* not taken yet: its timestamp is not known yet */
	if (rc->link < t->file_ring_base || rc->link >= t->file_ring_hole || !t->f)
		return PD_RES_NOEVENT; /* an earlier generation, or lost */
	uint64_t seq = rc->link - t->file_ring_base;
	if (seq >= ATF_NO_DETAIL || wal_file_event_read(t->f, seq, ev) < 0)
		return PD_RES_NOEVENT;
	uint32_t kind = ada_atf_detail_is_call(rc->type) ? ATF_EVENT_CALL : ATF_EVENT_RETURN;
	if (ev->function_id != rc->fn || ev->event_kind != kind || ev->detail_seq != ATF_NO_DETAIL)
		return PD_RES_OTHER;
	return PD_RES_MATCH;
}

/* Where the record's index event is, and whether it is the record's. A
 * link at or past the index ring's head names no event (the target made
 * it up): waited for, it would keep its window open for ever; decided
 * now, by its own timestamp, as a bad link. The event is read now, or
 * was read while the record waited in window memory (c->res). */
static enum pd_verdict pd_locate(struct wal_thread *t, const struct pd_walk_ctl *c,
                                 const struct pd_rec *rc, uint64_t ns, uint64_t *seq,
                                 struct atf_index_event *ev)
{
	uint64_t from_ns = c->from_ns, to_ns = c->to_ns;
	if (rc->link >= c->index_head) {
		enum pd_verdict v = pd_unlinked(ns, from_ns, to_ns);
		return v == PD_UNLINKED ? PD_BAD_LINK : v;
	}
	struct pd_res now;
	const struct pd_res *res = c->res;
	if (!res || res->state == PD_RES_NONE) {
		now.state = pd_read_event(t, rc, ev);
		now.ts = ev->timestamp_ns;
		res = &now;
	}
	if (res->state == PD_RES_NONE)
		return PD_LATER;
	if (res->state == PD_RES_NOEVENT)
		return pd_unlinked(ns, from_ns, to_ns);
	*seq = rc->link - t->file_ring_base;
	ev->timestamp_ns = res->ts;
	if (res->ts < from_ns)
		return PD_SKIP;
	if (res->ts > to_ns)
		return PD_STOP;
	return res->state == PD_RES_MATCH ? PD_WRITE : PD_UNLINKED;
}

/* Appends the record and patches its index event. */
static int pd_write(struct wal_thread *t, struct wal_tdetail *dt, const struct pd_rec *rc,
                    uint64_t seq, uint64_t ts, struct wal_detail_stats *st)
{
	if (!dt->df) {
		int e = pd_open_file(t, dt);
		if (e < 0)
			return e;
	}
	if (wal_dfile_error(dt->df))
		return wal_dfile_error(dt->df); /* no link to a record that cannot be written */
	uint64_t dseq = wal_dfile_count(dt->df);
	if (dseq >= ATF_NO_DETAIL)
		return -EFBIG;
	struct atf_detail_event_header h;
	struct atf_detail_function_payload p;
	uint64_t xmm[ATF_DETAIL_XMM_WORDS];
	pd_build(t, rc, (uint32_t)seq, ts, &h, &p, xmm);
	/* The index event first: if it cannot be patched, nothing is written
	 * and the file keeps no record that points at an unlinked event. */
	int e = wal_file_patch_detail_seq(t->f, seq, (uint32_t)dseq);
	if (e < 0)
		return e;
	const uint64_t *stack =
	    rc->w + (rc->type == ATF_DETAIL_FUNCTION_CALL_FP ? ADA_DREC_CALL_FP_WORDS
	                                                     : ADA_DREC_CALL_WORDS);
	e = ada_atf_detail_is_fp(rc->type) ? wal_dfile_append_fp(dt->df, &h, &p, xmm, stack)
	                                   : wal_dfile_append(dt->df, &h, &p, stack);
	if (e < 0)
		return e;
	st->records++;
	st->bytes += h.total_length;
	return 0;
}

/* The slot's overwritten-record counter. It starts at 0 with the slot's
 * owner (ada_arena_slot_free zeroes it before the next one). */
uint64_t pd_counter(struct wal_thread *t)
{
	struct ada_slot_info si;
	ada_arena_slot_info(t->p->arena, t->slot, &si);
	return si.drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
}

/* The bound a record's link must be below to name an index event: the
 * index ring's head, read after the snapshot (the agent publishes an
 * event before it commits its record: a record the snapshot holds links
 * below it), and at most one ring past what the drain took (a head the
 * target wrote beyond that quarantines its slot at the next take). */
uint64_t pd_index_head(struct wal_thread *t)
{
	struct ada_slot_info si;
	ada_arena_slot_info(t->p->arena, t->slot, &si);
	uint64_t cap = ada_arena_slot_events(t->p->arena, t->slot);
	uint64_t most = t->ring_next + cap >= t->ring_next ? t->ring_next + cap : UINT64_MAX;
	return si.head < most ? si.head : most;
}

/* The counter as a delta since the last call. Only forward: a live take
 * whose first round got no block read no counter (now 0), and the slot's
 * counter is the target's memory; a mark moved back would count the
 * records before it again. */
uint64_t pd_overwritten(struct wal_tdetail *dt, uint64_t now)
{
	if (now <= dt->over_seen)
		return 0;
	uint64_t d = now - dt->over_seen;
	dt->over_seen = now;
	return d;
}

/* A snapshot from `from` and the counter that goes with it (*over: read
 * before it; *steady: the same after it, so no record was overwritten
 * during the look and *over counts exactly the records before it). */
int pd_look(struct ada_recorder *r, struct wal_thread *t, uint64_t from, uint64_t limit,
            struct ada_detail_snapshot *snap, uint64_t *over, bool *steady)
{
	int e = 0;
	for (int i = 0; i < PD_LOOKS; i++) {
		*over = pd_counter(t);
		e = pd_snapshot_part(r, t, from, limit, snap);
		*steady = pd_counter(t) == *over;
		if (e < 0 || *steady)
			break;
	}
	return e;
}

/* The first record a walk leaves undecided: where the next copy starts. */
static void pd_leave(struct pd_walk_ctl *c, struct wal_tdetail *dt, const void *rec, uint64_t ns)
{
	if (c->all)
		c->resume = ada_detail_rec_ring_pos(c->snap, rec);
	c->all = false;
	dt->stop_ns = ns;
}

/* What persisting a record of len bytes may cost the disk budget: the
 * record, and the step its link may add to the index file's allocation
 * (a compact file's link table grows with its links). */
static uint64_t pd_record_room(const struct wal_thread *t, uint64_t len)
{
	return len + (t->f ? ada_wal_file_link_room(t->f) : 0);
}

/* What a write cost the disk budget: the detail file's bytes (st->bytes
 * since bytes0) and the index file's allocation since alloc0. */
static uint64_t pd_record_paid(const struct wal_thread *t, const struct wal_detail_stats *st,
                               uint64_t bytes0, uint64_t alloc0)
{
	uint64_t alloc = t->f ? ada_wal_file_disk_bytes(t->f) : alloc0;
	return st->bytes - bytes0 + (alloc > alloc0 ? alloc - alloc0 : 0);
}

/* Whether the budget lets a record of len bytes be persisted: bytes
 * left, and the deadline not passed (the clock read every 16 records). */
static bool pd_affordable(const struct wal_thread *t, const struct pd_walk_ctl *c, uint32_t len)
{
	struct wal_detail_budget *b = c->budget;
	if (!b)
		return true;
	if (b->bytes < pd_record_room(t, len))
		return false;
	if (b->until_clock-- > 0)
		return true;
	b->until_clock = 16;
	if (wal_now_ns() < b->deadline_ns)
		return true;
	b->bytes = 0; /* spent for the rest of the pass */
	return false;
}

/* A record a window's walk passed over (before its range): the span of
 * those of one call, for a window created later that reaches over them. */
static void pd_passed(struct wal_detail_stats *st, uint64_t ns)
{
	struct wal_gap *g = &st->passed;
	if (!g->records || ns < g->lo_ns)
		g->lo_ns = ns;
	if (!g->records || ns > g->hi_ns)
		g->hi_ns = ns;
	g->records++;
	g->exact = true;
}

/* pd_write, its failure counted (fd_limited at the limit of open files,
 * else unlinked) and kept as the thread's first error. */
static int pd_write_counted(struct wal_thread *t, struct wal_tdetail *dt, const struct pd_rec *rc,
                            uint64_t seq, uint64_t ts, struct wal_detail_stats *st)
{
	int e = pd_write(t, dt, rc, seq, ts, st);
	if (e == -EMFILE || e == -ENFILE) /* no detail file: the limit of open files */
		st->fd_limited++;
	else if (e < 0)
		st->unlinked++;
	if (e < 0)
		dt->error = dt->error ? dt->error : e;
	return e;
}

/* A live persist's write (b: its pass's budget, or NULL): the budget pays
 * the record's bytes in the detail file, not its ring record's, which are
 * up to half as many, and what its link grew the index file by: the
 * pass's room is disk the budget made. */
static void pd_write_paid(struct wal_thread *t, struct wal_tdetail *dt, struct wal_detail_budget *b,
                          const struct pd_rec *rc, uint64_t seq, uint64_t ts,
                          struct wal_detail_stats *st)
{
	uint64_t before = st->bytes, alloc0 = t->f ? ada_wal_file_disk_bytes(t->f) : 0;
	if (pd_write_counted(t, dt, rc, seq, ts, st) == 0 && b) {
		uint64_t paid = pd_record_paid(t, st, before, alloc0);
		b->bytes = paid < b->bytes ? b->bytes - paid : 0;
	}
}

/* At a thread's end under the disk budget (b->at_end): the record is
 * written when its bytes in the detail file (larger than the ring's
 * record) and its link's growth of the index file fit what is left of b,
 * else decided unwritten and counted (st->over_budget): no later call
 * writes into this file. */
static void pd_write_end(struct wal_thread *t, struct wal_tdetail *dt, struct wal_detail_budget *b,
                         const struct pd_rec *rc, uint64_t seq, uint64_t ts,
                         struct wal_detail_stats *st)
{
	struct atf_detail_event_header h;
	struct atf_detail_function_payload p;
	uint64_t xmm[ATF_DETAIL_XMM_WORDS];
	pd_build(t, rc, (uint32_t)seq, ts, &h, &p, xmm);
	if (pd_record_room(t, h.total_length) > b->bytes) {
		st->over_budget++;
		return;
	}
	uint64_t before = st->bytes, alloc0 = t->f ? ada_wal_file_disk_bytes(t->f) : 0;
	if (pd_write_counted(t, dt, rc, seq, ts, st) == 0) {
		uint64_t paid = pd_record_paid(t, st, before, alloc0);
		b->bytes = paid < b->bytes ? b->bytes - paid : 0;
	}
}

/* Decides one record that may be persisted: written, skipped (outside
 * the window), unlinked, or left for a later call (returns false). */
static bool pd_decide(struct wal_thread *t, struct wal_tdetail *dt, struct pd_walk_ctl *c,
                      const struct pd_rec *rc, const void *p, uint32_t rl, uint64_t ns,
                      struct wal_detail_stats *st)
{
	uint64_t seq;
	struct atf_index_event ev = {0};
	enum pd_verdict v = pd_locate(t, c, rc, ns, &seq, &ev);
	switch (v) {
	case PD_LATER:
		st->deferred++;
		st->waiting += ns <= c->to_ns;
		st->waiting_in += ns <= c->to_ns && ns >= c->from_ns;
		pd_leave(c, dt, p, ns);
		return false;
	case PD_STOP:
		pd_leave(c, dt, p, ns);
		return false;
	case PD_BAD_LINK:
		st->bad_link++;
		break;
	case PD_UNLINKED:
		st->unlinked++;
		break;
	case PD_SKIP:
		/* Before the window: passed over for good (the detail file's
		 * order), by the index lane's time when it is known. */
		pd_passed(st, ev.timestamp_ns ? ev.timestamp_ns : ns);
		break;
	case PD_WRITE:
		if (c->budget && c->budget->at_end) {
			pd_write_end(t, dt, c->budget, rc, seq, ev.timestamp_ns, st);
			break;
		}
		if (!pd_affordable(t, c, rl)) {
			st->budget_spent = true;
			pd_leave(c, dt, p, ns);
			return false;
		}
		pd_write_paid(t, dt, c->budget, rc, seq, ev.timestamp_ns, st);
		break;
	}
	return true;
}

/* Walks the records of buf (c->snap's, `bytes` of them) from *offp;
 * c->all (the caller sets it, and c->resume, before the first buffer):
 * every record walked was decided, else c->resume is the first one left
 * and *offp its offset (every record decided: bytes). *in_ring: records
 * that earlier calls decided. Past the first undecided record the walk
 * only counts what waits, and not at all once the budget is spent (the
 * window stays open for the backlog anyway). */
static void pd_walk(struct ada_recorder *r, struct wal_thread *t, struct wal_tdetail *dt,
                    struct pd_walk_ctl *c, const void *buf, size_t bytes, size_t *offp,
                    struct pd_res *res, uint64_t *ordp, struct wal_detail_stats *st,
                    uint64_t *in_ring)
{
	size_t off = *offp, at = off;
	uint64_t k = *ordp;
	uint32_t rl;
	const void *p;
	bool was_all = c->all;
	for (; (p = ada_detail_rec_next(buf, bytes, &off, &rl)); at = off, k++) {
		if (!c->all && st->budget_spent)
			break;
		c->res = res ? &res[k] : NULL;
		struct pd_rec rc = {0};
		if (!pd_parse(p, rl, &rc)) {
			/* Malformed (the target wrote it): counted once, when its
			 * turn is decided, and skipped. */
			st->unlinked += c->all;
			continue;
		}
		uint64_t pos = ada_detail_rec_ring_pos(c->snap, p);
		if (rc.link < dt->hwm || pos < dt->bad_upto) {
			(*in_ring)++;
			continue; /* decided by an earlier call */
		}
		uint64_t ns = pd_to_ns(r, rc.raw_ts);
		if (!st->oldest_ns)
			st->oldest_ns = ns;
		st->newest_ns = ns;
		if (!c->all) { /* only the span (and what waits) past the first undecided */
			bool later = rc.link >= t->ring_next && rc.link < c->index_head;
			st->deferred += later;
			st->waiting += later && ns <= c->to_ns;
			st->waiting_in += later && ns <= c->to_ns && ns >= c->from_ns;
			continue;
		}
		if (!pd_decide(t, dt, c, &rc, p, rl, ns, st)) {
			c->resume_off = at;
			c->resume_ord = k;
			continue;
		}
		if (st->fill) /* what filled the ring: in the window or not */
			wal_fill_add(st->fill, rc.fn, rl);
		if (rc.link >= c->index_head)
			dt->bad_upto = pos + rl; /* its link moves no mark: it names nothing */
		else
			dt->hwm = rc.link + 1;
		dt->decided++;
		dt->last_ns = ns;
	}
	c->res = NULL;
	if (c->all) {
		*offp = bytes;
		*ordp = k;
	} else if (was_all) {
		*offp = c->resume_off;
		*ordp = c->resume_ord;
	}
}

/* What this window's look found overwritten before anyone decided it
 * (loss.c): between the first record left undecided before the look (or
 * the thread's first event) and the oldest record the look still found. */
void pd_gap(const struct wal_thread *t, struct wal_tdetail *dt, uint64_t over, uint64_t in_ring,
            uint64_t decided, uint64_t lo_ns, bool steady, struct wal_detail_stats *st)
{
	uint64_t n = wal_gap_count(in_ring, over, decided, dt->gap_counted);
	struct wal_gap g = {
	    .records = n,
	    .lo_ns = lo_ns ? lo_ns : t->first_ts,
	    .hi_ns = st->oldest_ns ? st->oldest_ns : ada_boottime_ns(),
	    .exact = steady,
	};
	if (dt->gap_short) { /* the rest of the last gap, maybe with a new one */
		g.lo_ns = dt->gap_lo;
		g.hi_ns = in_ring ? dt->gap_hi : g.hi_ns;
		g.exact = false;
	}
	if (n == 0 && steady)
		dt->gap_short = false;
	/* A moving counter that counted nothing may still have missed a gap
	 * (overwritten between its read and the look): a later look counts it. */
	if (n == 0 && !steady && !dt->gap_short) {
		dt->gap_short = true;
		dt->gap_lo = g.lo_ns;
		dt->gap_hi = g.hi_ns;
	}
	if (n == 0)
		return;
	dt->gap_counted += n;
	dt->gap_short = !steady;
	dt->gap_lo = g.lo_ns;
	dt->gap_hi = g.hi_ns;
	st->gap = g;
}

/* --detail always: a thread waiting for room (detail_overflow=wait) may
 * now reuse what links below the high-water mark; its waits are read. */
static void pd_release_decided(struct wal_thread *t, struct wal_tdetail *dt)
{
	ada_detail_ring_set_decided(t->p->arena, t->slot, dt->hwm);
	uint64_t w, ns;
	ada_detail_ring_waits(t->p->arena, t->slot, &w, &ns);
	/* Only forward: the slot's counters (the target's memory) are
	 * shown, and a thread's totals never go back. */
	dt->waits = w > dt->waits ? w : dt->waits;
	dt->wait_ns = ns > dt->wait_ns ? ns : dt->wait_ns;
}

/* The links that went into the disk window (segment.c) reach the file
 * now, one pwrite. One that cannot (its record is written, its index
 * event keeps "no detail") is counted as a failed patch would have been:
 * unlinked, and the thread's detail error. failed: the file's failed
 * patches before this call. */
static void pd_flush_links(struct wal_thread *t, struct wal_tdetail *dt, uint64_t failed,
                           struct wal_detail_stats *st)
{
	if (!t->f)
		return;
	int e = wal_dwin_flush(t->f);
	st->unlinked += ada_wal_file_patch_failed(t->f) - failed;
	if (ada_wal_file_patch_failed(t->f) != failed && !dt->error)
		dt->error = e < 0 ? e : -EIO;
}

/* Adds what one call did to the thread's totals; with --detail always a
 * gap has no window to share it: each record a detail_overwritten drop. */
static void pd_account(struct wal_thread *t, struct wal_tdetail *dt, bool all_time,
                       const struct wal_detail_stats *st)
{
	if (all_time && st->gap.records) {
		dt->lost += st->gap.records;
		t->p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] += st->gap.records;
	}
	dt->records += st->records;
	dt->bytes += st->bytes;
	dt->overwritten += st->overwritten;
	dt->unlinked += st->unlinked + st->bad_link; /* neither has an event to link */
	t->p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_FD_LIMIT] += st->fd_limited;
}

/* Detail records lost because the thread's detail file could not be
 * opened at the limit of open files: fd_limit drops (pd_account), told
 * once with the limit. */
static void pd_fd_limit_note(struct ada_recorder *r, struct wal_thread *t)
{
	if (r->fd_limit_detail_told)
		return;
	r->fd_limit_detail_told = true;
	struct rlimit rl;
	char lim[48] = "";
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof(lim), " (%llu, ulimit -n)", (unsigned long long)rl.rlim_cur);
	wal_note(r, t->p,
	         "%s: no detail file: the recorder has as many files open as it may%s; the "
	         "detail records of this thread and of every later one that meets the limit are "
	         "counted as fd_limit drops (raise the limit: ulimit -n)",
	         t->dir, lim);
}

/* One call: all_time (--detail always) or a whole look at the ring for
 * [from_ns, to_ns] (tests: a window's two steps are wal_detail_take and
 * wal_detail_persist_window). */
static int pd_persist(struct ada_recorder *r, struct wal_thread *t, struct pd_walk_ctl *c,
                      struct wal_detail_stats *st)
{
	struct wal_tdetail *dt = pd_state(t);
	struct wal_fill *fill = st->fill; /* the caller's, kept */
	memset(st, 0, sizeof(*st));
	st->fill = fill;
	if (!dt)
		return -ENOMEM;
	if (!t->p->arena || t->done)
		return 0;
	/* Everything at once (--detail always) goes on from where the last
	 * call stopped; a window looks at the whole ring, so that oldest_ns
	 * is the oldest record the ring holds (the pre-roll achieved). */
	bool all_time = c->from_ns == 0 && c->to_ns == UINT64_MAX && !c->budget;
	struct ada_detail_snapshot snap;
	uint64_t over = 0, in_ring = 0, decided = dt->decided;
	/* The oldest a record no call decided can be: the gap's lower bound. */
	uint64_t lo_ns = dt->stop_ns > dt->last_ns ? dt->stop_ns : dt->last_ns;
	bool steady = true, look = !all_time;
	int e = all_time ? pd_snapshot(r, t, dt->from, &snap) : 0;
	/* --detail always: every record before `from` was decided, so a copy
	 * that still starts at `from` lost nothing. One the producer overtook
	 * (lost_bytes), or after a gap counted from a moving counter, looks
	 * at the whole ring as a window does, for the decided records still
	 * in it: the gap it finds is what was overwritten unpersisted. The
	 * counter can lag the oldest it goes with (the producer stores oldest,
	 * then its records, then the count), so a look read as steady may
	 * still count low: the last call (dt->settle, wal_detail_settle) looks
	 * once more, which counts any shortfall (wal_gap_count). */
	if (all_time && e == 0 &&
	    (snap.lost_bytes > 0 || dt->gap_short || (dt->settle && pd_counter(t) > 0)))
		look = true;
	dt->settle = false;
	if (look)
		e = pd_look(r, t, 0, UINT64_MAX, &snap, &over, &steady);
	if (e == -ENODATA)
		return 0; /* no detail ring in this arena (--detail never) */
	if (e < 0)
		return e;
	if (!look)
		over = pd_counter(t); /* the ring lapping: no record lost */
	st->overwritten = pd_overwritten(dt, over);
	uint64_t failed = t->f ? ada_wal_file_patch_failed(t->f) : 0;
	size_t off = 0;
	c->snap = &snap;
	c->index_head = pd_index_head(t);
	c->all = true;
	c->resume = snap.end;
	uint64_t ord = 0;
	pd_walk(r, t, dt, c, r->dsnap.buf, snap.bytes, &off, NULL, &ord, st, &in_ring);
	if (c->all)
		dt->from = snap.end;
	if (all_time)
		pd_release_decided(t, dt);
	pd_flush_links(t, dt, failed, st);
	if (look)
		pd_gap(t, dt, over, in_ring, decided, lo_ns, steady, st);
	pd_account(t, dt, all_time, st);
	wal_budget_detail_sync(r, t); /* counted by the budget as it grows */
	if (st->fd_limited)
		pd_fd_limit_note(r, t);
	return dt->error;
}

int wal_detail_persist(struct ada_recorder *r, struct wal_thread *t, uint64_t from_ns,
                       uint64_t to_ns, struct wal_detail_stats *st)
{
	struct wal_detail_stats local, *s = st ? st : &local;
	struct pd_walk_ctl c = {.from_ns = from_ns, .to_ns = to_ns};
	s->fill = NULL; /* only a window's copies count what filled the ring */
	return pd_persist(r, t, &c, s);
}

/* At an end the rest of the ring is taken and decided a slice at a time,
 * so that window memory holds at most this much more for it, whatever
 * the ring's size (up to --detail-mb 1024) and however many threads end
 * in one pass. */
#define PD_END_SLICE (4 * PD_BLOCK)
/* Slices of an end at most: a ring of 1 GiB (--detail-mb's most) in
 * slices of at least one block's records, with room to spare. */
#define PD_END_SLICES_MAX 1024u

/* The next slice of an end: the ring's records no take took yet, at most
 * PD_END_SLICE of them. A gap found after the first (a live thread whose
 * file ends early, its producer lapping the ring meanwhile) widens the
 * one the end reports. Returns whether records are left for another. */
static bool pd_end_slice(struct ada_recorder *r, struct wal_thread *t, struct wal_gap *gap,
                         int *err)
{
	struct wal_detail_stats tk;
	int e = wal_detail_take(r, t, UINT64_MAX, PD_END_SLICE, &tk);
	if (e < 0 && e != -ENOMEM)
		*err = e;
	if (tk.gap.records) {
		if (!gap->records || tk.gap.lo_ns < gap->lo_ns)
			gap->lo_ns = tk.gap.lo_ns;
		gap->hi_ns = tk.gap.hi_ns > gap->hi_ns ? tk.gap.hi_ns : gap->hi_ns;
		gap->exact = gap->records ? gap->exact && tk.gap.exact : tk.gap.exact;
		gap->records += tk.gap.records;
	}
	return e == 0 && tk.budget_spent && tk.records > 0; /* else no progress */
}

int wal_detail_persist_window(struct ada_recorder *r, struct wal_thread *t, uint64_t from_ns,
                              uint64_t to_ns, bool first, struct wal_detail_budget *budget,
                              struct wal_detail_stats *st)
{
	(void)first;
	struct wal_tdetail *dt = pd_state(t);
	struct wal_fill *fill = st->fill; /* the caller's, kept */
	struct wal_gap gap = {0};
	bool end = !budget || budget->at_end, more = false;
	int e = 0;
	if (end && dt && t->p->arena && !t->done) {
		/* the end: everything left in the ring, a slice at a time */
		uint64_t head = ada_detail_ring_head(t->p->arena, t->slot);
		more = pd_end_slice(r, t, &gap, &e);
		if (e == 0)
			dt->take_upto = head;
	}
	memset(st, 0, sizeof(*st));
	st->fill = fill;
	if (e < 0)
		return e;
	if (!dt)
		return -ENOMEM;
	if (!t->p->arena || t->done)
		return 0;
	struct pd_walk_ctl c = {.from_ns = from_ns, .to_ns = to_ns, .budget = budget};
	uint64_t in_ring = 0, failed = t->f ? ada_wal_file_patch_failed(t->f) : 0;
	c.index_head = pd_index_head(t);
	c.all = true;
	/* Each slice at least PD_BLOCK of records: bounded by the ring. */
	for (uint32_t slice = 0;; slice++) {
		for (struct pd_part *pt = dt->parts; pt; pt = pt->next) {
			c.snap = &pt->snap;
			c.resume = pt->snap.end;
			pd_walk(r, t, dt, &c, pt->buf, pt->bytes, &pt->off, pt->res, &pt->first, st,
			        &in_ring);
			if (!c.all && st->budget_spent)
				break;
		}
		pd_parts_free(r, dt, false);
		if (!more || !c.all || slice >= PD_END_SLICES_MAX)
			break;
		more = pd_end_slice(r, t, &gap, &e);
		if (e < 0)
			break;
	}
	dt->take_upto = 0;
	st->gap = gap;
	pd_flush_links(t, dt, failed, st);
	pd_account(t, dt, false, st);
	wal_budget_detail_sync(r, t); /* counted by the budget as it grows */
	if (st->fd_limited)
		pd_fd_limit_note(r, t);
	return e < 0 ? e : dt->error;
}

int wal_detail_ring_span(struct ada_recorder *r, struct wal_thread *t, uint64_t *oldest_ns,
                         uint64_t *newest_ns)
{
	*oldest_ns = *newest_ns = 0;
	if (!t->p->arena || t->done)
		return 0;
	/* Only the two ends: a full copy of the ring per thread per second
	 * cost a large share of the drain with --detail always and big rings. */
	struct ada_detail_snapshot snap;
	int e = pd_ends_buffer(r, t);
	if (e == -ENODATA)
		return 0;
	if (e < 0)
		return e;
	struct ada_detail_ends ends;
	e = ada_detail_ring_ends(t->p->arena, t->slot, r->dsnap.ends, r->dsnap.ends_cap, &ends);
	if (e == 0 && !ends.found)
		return 0;
	if (e == 0) {
		struct pd_rec a, b;
		size_t oa = 0, ob = 0;
		uint32_t la, lb;
		const uint8_t *base = r->dsnap.ends;
		const void *pa =
		    ada_detail_rec_next(base + ends.first_off, ends.first_len, &oa, &la);
		const void *pb = ada_detail_rec_next(base + ends.last_off, ends.last_len, &ob, &lb);
		/* Both parse (the walk below would skip one that does not): done. */
		if (pa && pb && pd_parse(pa, la, &a) && pd_parse(pb, lb, &b) &&
		    pd_to_ns(r, a.raw_ts) != 0) {
			*oldest_ns = pd_to_ns(r, a.raw_ts);
			*newest_ns = pd_to_ns(r, b.raw_ts);
			return 0;
		}
	} else if (e != -EAGAIN) {
		return e;
	}
	/* Overtaken, malformed, or an end the walk would skip: the whole ring,
	 * in the snapshot buffer. Not a use that keeps it (heap.c): a ring
	 * overtaken at every tick would keep its size for good. */
	bool used = r->dsnap.used;
	e = pd_snapshot(r, t, 0, &snap);
	r->dsnap.used = used;
	if (e == -ENODATA)
		return 0;
	if (e < 0)
		return e;
	size_t off = 0;
	uint32_t rl;
	const void *p;
	while ((p = ada_detail_rec_next(r->dsnap.buf, snap.bytes, &off, &rl))) {
		struct pd_rec rc;
		if (!pd_parse(p, rl, &rc))
			continue;
		uint64_t ns = pd_to_ns(r, rc.raw_ts);
		if (!*oldest_ns)
			*oldest_ns = ns;
		*newest_ns = ns;
	}
	return 0;
}

int wal_detail_append_signal(struct wal_thread *t, uint64_t seq, uint64_t ns,
                             const struct ada_crash_info *ci)
{
	struct wal_tdetail *dt = pd_state(t);
	if (!dt)
		return -ENOMEM;
	if (!t->f || seq >= ATF_NO_DETAIL)
		return -EINVAL;
	if (!dt->df) {
		int e = pd_open_file(t, dt);
		if (e < 0)
			return e;
	}
	if (wal_dfile_error(dt->df))
		return wal_dfile_error(dt->df);
	uint64_t dseq = wal_dfile_count(dt->df);
	if (dseq >= ATF_NO_DETAIL)
		return -EFBIG;
	struct atf_detail_signal_payload p = {
	    .signo = ci->signo,
	    .si_code = ci->code,
	    .fault_addr = ci->addr,
	};
	memcpy(p.regs, ci->regs, sizeof(p.regs));
	struct atf_detail_event_header h = {
	    .total_length = (uint32_t)(ATF_DETAIL_EVENT_HEADER_SIZE + sizeof(p)),
	    .event_type = ATF_DETAIL_SIGNAL_CONTEXT,
	    .index_seq = (uint32_t)seq,
	    .thread_id = t->tid,
	    .timestamp = ns,
	};
	/* The index event first, as pd_write: no record points at an
	 * unlinked event. */
	int e = wal_file_patch_detail_seq(t->f, seq, (uint32_t)dseq);
	if (e == 0)
		e = wal_dfile_append_raw(dt->df, &h, &p, sizeof(p));
	if (e < 0)
		return e;
	dt->records++;
	dt->bytes += h.total_length;
	return 0;
}

/* A detail file that a failed write cut short (wal_dfile_finish): the
 * index events still linked to records it no longer holds are unlinked
 * while the index file is open, so the pair stays valid; one that could
 * not be sealed at all is removed. Counted, and told once. */
static void pd_after_cut(struct ada_recorder *r, struct wal_thread *t, struct wal_tdetail *dt,
                         int dfd, const struct wal_dfile_end *end)
{
	if (!end->error)
		return;
	uint64_t cut = end->appended - end->kept;
	if (end->invalid) {
		if (dfd >= 0)
			unlinkat(dfd, "detail.atf", 0);
		dt->removed++;
	}
	/* A compact file's links are in memory: dropped at once. An ATF v2
	 * file's were patched into it: the records the file lost are listed
	 * (appended after its last completed write), unless it kept fewer
	 * than those (sealed empty, or removed): then read back. */
	size_t listed = 0;
	for (size_t k = 0; k < end->nunsure; k++)
		listed += end->unsure[k].detail_seq >= end->kept;
	if (t->f && (ada_wal_file_is_compact(t->f) || listed < cut))
		(void)ada_wal_file_unlink_detail_from(t->f, (uint32_t)end->kept);
	else
		for (size_t k = 0; t->f && k < end->nunsure; k++)
			if (end->unsure[k].detail_seq >= end->kept)
				(void)wal_file_unlink_detail(t->f, end->unsure[k].index_seq,
				                             (uint32_t)end->unsure[k].detail_seq);
	free(end->unsure);
	dt->cut += cut;
	r->detail_cut += cut;
	r->detail_removed += end->invalid;
	if (r->detail_cut_told)
		return;
	r->detail_cut_told = true;
	wal_note(r, t->p,
	         "%s: its detail file could not be written whole (%s): %s; its index events "
	         "no longer link to the records not kept",
	         t->dir, strerror(-end->error),
	         end->invalid ? "removed, it could not be sealed"
	                      : "cut back to its last whole record and sealed");
}

uint64_t wal_detail_close(struct ada_recorder *r, struct wal_thread *t, uint32_t gen)
{
	struct wal_tdetail *dt = t->dt;
	/* The thread's end: what window memory still holds no window took
	 * (past their ends, or waiting for index events never taken now). A
	 * rotation keeps it: the next generation's windows may want it. */
	if (dt && gen == UINT32_MAX)
		pd_parts_free(r, dt, true);
	if (!dt || !dt->df)
		return 0;
	struct wal_dfile_end end;
	int e = wal_dfile_finish(dt->df, &end);
	dt->df = NULL;
	if (e < 0 && !dt->error)
		dt->error = e;
	int dfd = wal_thread_dir(t);
	pd_after_cut(r, t, dt, dfd, &end);
	if (end.invalid)
		return wal_budget_detail_closed(r, t, 0);
	if (gen == UINT32_MAX)
		return wal_budget_detail_closed(r, t, end.file_bytes);
	char to[64];
	snprintf(to, sizeof(to), "detail.g%u.atf", gen);
	if (renameat(dfd, "detail.atf", dfd, to) < 0) {
		unlinkat(dfd, "detail.atf", 0);
		return wal_budget_detail_closed(r, t, 0);
	}
	return wal_budget_detail_closed(r, t, end.file_bytes);
}

void wal_detail_free(struct wal_thread *t)
{
	struct wal_dfile_end end = {0};
	if (t->dt && t->dt->df)
		wal_dfile_finish(t->dt->df, &end);
	free(end.unsure);
	for (struct pd_part *pt = t->dt ? t->dt->parts : NULL, *nx; pt; pt = nx) {
		nx = pt->next;
		free(pt);
	}
	free(t->dt);
	t->dt = NULL;
}

uint64_t wal_detail_file_bytes(const struct wal_thread *t)
{
	return t->dt && t->dt->df ? wal_dfile_bytes(t->dt->df) : 0;
}

void wal_detail_settle(struct wal_thread *t)
{
	struct wal_tdetail *dt = pd_state(t);
	if (dt)
		dt->settle = true;
}

void wal_detail_sync_overwritten(struct wal_thread *t)
{
	if (t->dt && t->p->arena && !t->done)
		t->dt->overwritten += pd_overwritten(t->dt, pd_counter(t));
}

void wal_detail_thread_sums(const struct wal_thread *t, uint64_t *records, uint64_t *waits,
                            uint64_t *ns)
{
	*records = t->dt ? t->dt->records : 0;
	*waits = t->dt ? t->dt->waits : 0;
	*ns = t->dt ? t->dt->wait_ns : 0;
}

/* The finalized threads' sums (wal_thread_closed: a thread with no
 * index file persists nothing more), and the open ones'. */
void wal_detail_proc_waits(const struct wal_proc *p, uint64_t *waits, uint64_t *ns)
{
	*waits = p->done_sums.detail_waits;
	*ns = p->done_sums.detail_wait_ns;
	for (size_t j = 0; j < p->nopen; j++)
		if (p->open[j]->dt && !p->open[j]->summed) {
			*waits += p->open[j]->dt->waits;
			*ns += p->open[j]->dt->wait_ns;
		}
}

uint64_t wal_detail_proc_records(const struct wal_proc *p)
{
	uint64_t n = p->done_sums.detail_records;
	for (size_t j = 0; j < p->nopen; j++)
		if (p->open[j]->dt && !p->open[j]->summed)
			n += p->open[j]->dt->records;
	return n;
}

json_t *wal_detail_thread_json(const struct wal_thread *t)
{
	const struct wal_tdetail *dt = t->dt;
	if (!dt)
		return NULL;
	json_t *o = json_object();
	json_object_set_new(o, "records", json_integer((json_int_t)dt->records));
	json_object_set_new(o, "bytes", json_integer((json_int_t)dt->bytes));
	json_object_set_new(o, "overwritten", json_integer((json_int_t)dt->overwritten));
	json_object_set_new(o, "lost", json_integer((json_int_t)dt->lost));
	json_object_set_new(o, "waits", json_integer((json_int_t)dt->waits));
	json_object_set_new(o, "waited_ns", json_integer((json_int_t)dt->wait_ns));
	json_object_set_new(o, "window_lost", json_integer((json_int_t)wal_flight_thread_lost(t)));
	json_object_set_new(o, "unlinked", json_integer((json_int_t)dt->unlinked));
	json_object_set_new(o, "files", json_integer((json_int_t)dt->files));
	if (dt->error)
		json_object_set_new(o, "error", json_string(strerror(-dt->error)));
	if (dt->cut || dt->removed) {
		json_object_set_new(o, "cut", json_integer((json_int_t)dt->cut));
		json_object_set_new(o, "files_removed", json_integer((json_int_t)dt->removed));
	}
	return o;
}
