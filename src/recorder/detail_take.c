/*
 * Window memory (issue 32): the first of a window's two steps, the take
 * (detail_internal.h wal_detail_take): records copied out of a thread's
 * detail ring into the recorder's memory every pass, and their index
 * events read while the index file still holds them readable; the
 * second step (detail_persist.c wal_detail_persist_window) decides,
 * writes and links them when the yield lets it.
 *
 * Threads: the drain thread only. The ring's records are the target's:
 * copied as they are (checked when decided); a take only reads their
 * timestamps and links, and a malformed one goes with its neighbours.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detail_pd.h"

/* A block for t's window memory, at the end of its list: from the pool,
 * or new. NULL: no memory. */
static struct pd_part *pd_block(struct ada_recorder *r, struct wal_tdetail *dt)
{
	struct pd_part *pt = r->flight.mem_pool;
	r->flight.mem_pool_used = true; /* the pool kept past heap.c's next look */
	if (pt) {
		r->flight.mem_pool = pt->next;
		r->flight.mem_pool_n--;
	} else if (!(pt = aligned_alloc(PD_BLOCK, PD_BLOCK))) {
		return NULL;
	}
	*pt = (struct pd_part){
	    .res = (struct pd_res *)(void *)(pt + 1),
	    .buf = (uint8_t *)pt + PD_REC_OFF,
	};
	if (dt->parts_tail)
		dt->parts_tail->next = pt;
	else
		dt->parts = pt;
	dt->parts_tail = pt;
	dt->mem_bytes += PD_BLOCK;
	r->flight.mem_bytes += PD_BLOCK;
	if (r->flight.mem_bytes > r->flight.mem_peak)
		r->flight.mem_peak = r->flight.mem_bytes;
	return pt;
}

/* The records of snap's buf[a, b) (n of them) at the end of the block
 * pt: their positions counted from the block's begin, their events not
 * read yet. */
static void pd_block_put(struct pd_part *pt, const struct ada_detail_snapshot *snap,
                         const uint8_t *buf, size_t a, size_t b, uint64_t n)
{
	if (pt->nrec == 0)
		pt->snap.begin = snap->begin;
	uint32_t delta = (uint32_t)((snap->begin - pt->snap.begin) / 8);
	uint8_t *to = pt->buf + pt->bytes;
	memcpy(to, buf + a, b - a);
	memset(pt->res + pt->nrec, 0, n * sizeof(*pt->res));
	for (size_t off = 0, at = 0; delta && off < b - a; at = off) {
		uint32_t rl;
		if (!ada_detail_rec_next(to, b - a, &off, &rl))
			break;
		struct ada_detail_rec h;
		memcpy(&h, to + at, sizeof(h));
		h.pos8 += delta;
		memcpy(to + at, &h, sizeof(h));
	}
	pt->bytes += b - a;
	pt->nrec += n;
}

/* Whether a record of step bytes at ring position pos fits in the block
 * pt after its records (positions counted from its begin in 32 bits). */
static bool pd_block_fits(const struct pd_part *pt, uint64_t pos, size_t step)
{
	return pt && pt->bytes + step <= PD_REC_CAP && pt->nrec < PD_RES_CAP &&
	       (pt->nrec == 0 || (pos - pt->snap.begin) / 8 < UINT32_MAX);
}

/* Frees the parts whose every record was decided (all of them: every
 * part, at the thread's end), into the pool while it has room. */
void pd_parts_free(struct ada_recorder *r, struct wal_tdetail *dt, bool all)
{
	while (dt->parts && (all || dt->parts->off >= dt->parts->bytes)) {
		struct pd_part *pt = dt->parts;
		dt->parts = pt->next;
		if (dt->res_part == pt)
			dt->res_part = NULL; /* read from the first part again */
		dt->mem_bytes -= PD_BLOCK;
		r->flight.mem_bytes -= PD_BLOCK;
		if (r->flight.mem_pool_n < PD_POOL_MAX) {
			pt->next = r->flight.mem_pool;
			r->flight.mem_pool = pt;
			r->flight.mem_pool_n++;
		} else {
			free(pt);
		}
	}
	if (!dt->parts)
		dt->parts_tail = NULL;
}

void wal_detail_pool_free(struct ada_recorder *r)
{
	while (r->flight.mem_pool) {
		struct pd_part *pt = r->flight.mem_pool;
		r->flight.mem_pool = pt->next;
		free(pt);
	}
	r->flight.mem_pool_n = 0;
}

/* The look of a take: from where the last take stopped, or the whole
 * ring (*look): the first take, and the last one (end) after a gap
 * counted from a moving counter when the program did not overwrite past
 * that place (decided records may be left before it, and the count
 * needs them, as in pd_persist). A copy from where the last stopped
 * needs a steady counter only when the program overwrote past that place
 * (the gap it counts): a producer writing all along moves the counter
 * during nearly every copy, and the copy is not made again for that. A
 * live take after such a gap leaves its rest to a later look that finds
 * the program overwrote past it, or to the end: a whole ring copied
 * every pass for it cost more than the records it was taking. The
 * thread's first take looks once too (a gap counted low from a moving
 * counter is counted in full later, as above): copied up to four times
 * over, a whole ring held the drain long enough for the program to wait
 * for index ring space. */
static int pd_take_look(struct ada_recorder *r, struct wal_thread *t, struct wal_tdetail *dt,
                        bool end, struct ada_detail_snapshot *snap, uint64_t *over, bool *steady,
                        bool *look)
{
	int e = 0;
	*look = !dt->taken_ok;
	if (!*look) {
		*over = pd_counter(t);
		e = pd_snapshot_part(r, t, dt->taken_end, UINT64_MAX, snap);
		*steady = pd_counter(t) == *over;
		if (e == 0 && !*steady && snap->lost_bytes > 0)
			e = pd_look(r, t, dt->taken_end, UINT64_MAX, snap, over, steady);
		*look = e == 0 && end && dt->gap_short && snap->lost_bytes == 0;
	}
	if (*look && !end) { /* the first take: once, whatever the counter did */
		*over = pd_counter(t);
		e = pd_snapshot_part(r, t, 0, UINT64_MAX, snap);
		*steady = pd_counter(t) == *over;
	} else if (*look) {
		e = pd_look(r, t, 0, UINT64_MAX, snap, over, steady);
	}
	return e;
}

/* Reads the index events of the records in t's window memory that the
 * drain has taken since the last call (pd_res): while they are still
 * readable. After a rotation the records of the old file read again
 * (no event now: their decision unlinks them). A record whose link names
 * no event yet is passed over when it is past the index ring's head (a
 * bad link, decided as such), else it and those after it wait. */
static void pd_resolve(struct wal_thread *t, struct wal_tdetail *dt)
{
	bool again = dt->res_base != t->file_ring_base;
	dt->res_base = t->file_ring_base;
	uint64_t head = dt->parts ? pd_index_head(t) : 0;
	for (struct pd_part *pt = again || !dt->res_part ? dt->parts : dt->res_part; pt;
	     pt = pt->next) {
		dt->res_part = pt;
		if (again || pt->resolved < pt->first) {
			if (again && pt->nrec > pt->first)
				memset(pt->res + pt->first, 0,
				       (pt->nrec - pt->first) * sizeof(*pt->res));
			pt->resolved = pt->first;
			pt->res_off = pt->off;
		}
		size_t off = pt->res_off, at = off;
		uint32_t rl;
		const void *p;
		for (; (p = ada_detail_rec_next(pt->buf, pt->bytes, &off, &rl)); at = off) {
			struct pd_rec rc;
			struct atf_index_event ev = {0};
			struct pd_res *res = &pt->res[pt->resolved];
			if (pd_parse(p, rl, &rc) && rc.link < head) {
				res->state = pd_read_event(t, &rc, &ev);
				if (res->state == PD_RES_NONE)
					break; /* its event is not taken yet */
				res->ts = ev.timestamp_ns;
			}
			pt->resolved++;
		}
		pt->res_off = p ? at : pt->bytes;
		if (p)
			return;
	}
}

/* The records of snap not taken yet into window memory, up to the first
 * one past the horizon or the room (st: records, bytes, budget_spent,
 * oldest_ns); *in_ring: the records of snap taken before. Returns the
 * ring position the next take starts at. Taken records are a prefix of
 * the ring's (positions below taken_end). */
static uint64_t pd_take_walk(struct ada_recorder *r, struct wal_tdetail *dt,
                             const struct ada_detail_snapshot *sn, uint64_t horizon_ns,
                             uint64_t room, struct wal_detail_stats *st, uint64_t *in_ring)
{
	const uint8_t *buf = r->dsnap.buf;
	/* [run, run_end): the records not put in a block yet */
	size_t off = 0, at = 0, run = SIZE_MAX, run_end = 0;
	uint64_t end = sn->end, nrun = 0, added = 0;
	struct pd_part *blk = dt->parts_tail;
	uint32_t rl;
	const void *p;
	dt->take_held = false;
	for (; (p = ada_detail_rec_next(buf, sn->bytes, &off, &rl)); at = off) {
		uint64_t pos = ada_detail_rec_ring_pos(sn, p);
		if (dt->taken_ok && pos < dt->taken_end) {
			(*in_ring)++;
			continue;
		}
		if (dt->take_upto && pos >= dt->take_upto) {
			end = pos; /* an end's slice: made after the end began */
			break;
		}
		struct pd_rec rc;
		/* A malformed record goes with its neighbours (the persist counts it). */
		uint64_t ns = pd_parse(p, rl, &rc) ? pd_to_ns(r, rc.raw_ts) : dt->take_last_ns;
		if (!st->oldest_ns)
			st->oldest_ns = ns;
		if (ns > horizon_ns) { /* no open window wants it yet */
			dt->take_held = true;
			dt->take_stop_ns = ns;
			end = pos;
			break;
		}
		run = run == SIZE_MAX ? at : run;
		if (!pd_block_fits(blk, pos, off - run) || blk->nrec + nrun >= PD_RES_CAP) {
			if (nrun) /* the run so far, and a new block */
				pd_block_put(blk, sn, buf, run, run_end, nrun);
			run = at;
			nrun = 0;
			if (added + PD_BLOCK > room || !(blk = pd_block(r, dt))) {
				st->budget_spent = true; /* the rest waits in the ring */
				dt->take_stop_ns = ns;
				end = pos;
				break;
			}
			added += PD_BLOCK;
		}
		nrun++;
		run_end = off;
		st->records++;
		st->bytes += off - at;
		dt->take_last_ns = ns;
	}
	if (nrun)
		pd_block_put(blk, sn, buf, run, run_end, nrun);
	return end;
}

/* The block a live take copies into next: the last one, or a new one
 * (the last full, or from too far back for 32-bit positions). NULL: no
 * room (*added: the bytes this take took so far) or memory. */
static struct pd_part *pd_take_block(struct ada_recorder *r, struct wal_tdetail *dt, uint64_t from,
                                     bool fresh, uint64_t room, uint64_t *added)
{
	struct pd_part *blk = dt->parts_tail;
	if (blk && !fresh && blk->nrec < PD_RES_CAP && PD_REC_CAP - blk->bytes >= 4096 &&
	    (blk->nrec == 0 || (from - blk->snap.begin) / 8 < (1ull << 31)))
		return blk;
	if (*added + PD_BLOCK > room || !(blk = pd_block(r, dt)))
		return NULL;
	*added += PD_BLOCK;
	return blk;
}

/* Checks the records a live take copied into blk (sn's, after its
 * records): up to the first past the horizon or past the block's record
 * count; their positions counted from the block's begin. Returns the
 * ones kept; *stop: the ring position of the first one not kept
 * (UINT64_MAX: all kept), *held: it was past the horizon. */
static uint64_t pd_take_check(struct ada_recorder *r, struct wal_tdetail *dt, struct pd_part *blk,
                              const struct ada_detail_snapshot *sn, uint64_t horizon_ns,
                              struct wal_detail_stats *st, uint64_t *stop, bool *held)
{
	uint8_t *to = blk->buf + blk->bytes;
	uint32_t delta = blk->nrec ? (uint32_t)((sn->begin - blk->snap.begin) / 8) : 0;
	size_t off = 0, at = 0;
	uint64_t n = 0;
	uint32_t rl;
	const void *p;
	*stop = UINT64_MAX;
	*held = false;
	for (; (p = ada_detail_rec_next(to, sn->bytes, &off, &rl)); at = off) {
		struct pd_rec rc;
		/* A malformed record goes with its neighbours (the persist counts it). */
		uint64_t ns = pd_parse(p, rl, &rc) ? pd_to_ns(r, rc.raw_ts) : dt->take_last_ns;
		if (!st->oldest_ns)
			st->oldest_ns = ns;
		if (ns > horizon_ns || blk->nrec + n >= PD_RES_CAP) {
			*stop = ada_detail_rec_ring_pos(sn, p);
			*held = ns > horizon_ns;
			if (*held)
				dt->take_stop_ns = ns;
			break;
		}
		struct ada_detail_rec h;
		memcpy(&h, to + at, sizeof(h));
		h.pos8 += delta;
		memcpy(to + at, &h, sizeof(h));
		n++;
		st->bytes += off - at;
		dt->take_last_ns = ns;
	}
	if (blk->nrec == 0)
		blk->snap.begin = sn->begin;
	memset(blk->res + blk->nrec, 0, n * sizeof(*blk->res));
	blk->bytes += *stop == UINT64_MAX ? sn->bytes : at;
	blk->nrec += n;
	return n;
}

/* A live take: from where the last stopped, straight into window
 * memory's blocks (one copy of each record, no snapshot buffer between),
 * the overwritten counter read around the first copy as pd_look does
 * (needed steady only when the program overwrote past that place: the
 * gap it counts). A later round that finds the program overwrote past
 * its start counts from the counter read around its own copy, with
 * *known the records this take took before it (they count with the
 * taken ones).
 * Sets dt->taken_end. */
static int pd_take_direct(struct ada_recorder *r, struct wal_thread *t, struct wal_tdetail *dt,
                          uint64_t horizon_ns, uint64_t room, struct wal_detail_stats *st,
                          uint64_t *over, bool *steady, uint64_t *lost_bytes, uint64_t *known)
{
	uint64_t from = dt->taken_end, added = 0;
	bool first = true, fresh = false;
	dt->take_held = false;
	/* Each round fills a block or ends the take: bounded by the ring. */
	for (int round = 0; round < 1 << 12; round++) {
		struct pd_part *blk = pd_take_block(r, dt, from, fresh, room, &added);
		if (!blk) {
			st->budget_spent = true; /* the rest waits in the ring */
			break;
		}
		struct ada_detail_snapshot sn;
		uint64_t limit = PD_REC_CAP - blk->bytes;
		int e = 0;
		uint64_t c0 = 0;
		bool still = true;
		for (int i = 0; i < PD_LOOKS; i++) {
			c0 = pd_counter(t);
			e = ada_detail_ring_snapshot_part(t->p->arena, t->slot, from, limit,
			                                  blk->buf + blk->bytes, limit, &sn);
			still = pd_counter(t) == c0;
			if (e < 0 || !first || still || sn.lost_bytes == 0)
				break;
		}
		if (e < 0)
			return e;
		/* The first round, or a later one that finds the program overwrote
		 * past its start: counted from the counter read before its copy
		 * (read after, it would count records this copy took), with the
		 * records taken before it; a moving one leaves the rest to a
		 * later look. */
		if (first || sn.lost_bytes) {
			*over = c0;
			*steady = still;
			*known = first ? 0 : st->records;
		}
		*lost_bytes += sn.lost_bytes;
		first = false;
		uint64_t stop;
		bool held;
		uint64_t n = pd_take_check(r, dt, blk, &sn, horizon_ns, st, &stop, &held);
		st->records += n;
		from = stop != UINT64_MAX ? stop : sn.end;
		dt->take_held = held;
		/* Past the horizon, or at the ring's head: done. Else the block
		 * is full (its bytes or records): the next one. */
		if (held || (stop == UINT64_MAX && !sn.cut))
			break;
		fresh = n == 0 || stop != UINT64_MAX || sn.cut;
	}
	dt->taken_end = from;
	return 0;
}

int wal_detail_take(struct ada_recorder *r, struct wal_thread *t, uint64_t horizon_ns,
                    uint64_t room, struct wal_detail_stats *st)
{
	struct wal_tdetail *dt = pd_state(t);
	memset(st, 0, sizeof(*st));
	if (!dt)
		return -ENOMEM;
	if (!t->p->arena || t->done)
		return 0;
	/* Nothing new, or the first record left is still past the horizon:
	 * no copy (what the ring overwrote meanwhile is counted by the next
	 * look, which the end takes in any case: with nothing new too, the
	 * end of a gap counted from a moving counter looks for its rest). */
	uint64_t head = ada_detail_ring_head(t->p->arena, t->slot);
	bool rest = horizon_ns == UINT64_MAX && dt->gap_short;
	if (dt->taken_ok && !rest &&
	    (head == dt->taken_end || (dt->take_held && dt->take_stop_ns > horizon_ns))) {
		pd_resolve(t, dt);
		return 0;
	}
	struct ada_detail_snapshot snap = {0};
	uint64_t over = 0, in_ring = 0, taken = dt->taken, known = 0, end;
	uint64_t lo_ns = dt->take_stop_ns > dt->take_last_ns ? dt->take_stop_ns : dt->take_last_ns;
	bool steady = true, look = false;
	int e;
	if (dt->taken_ok && horizon_ns != UINT64_MAX) {
		e = pd_take_direct(r, t, dt, horizon_ns, room, st, &over, &steady, &snap.lost_bytes,
		                   &known);
		end = dt->taken_end;
	} else {
		e = pd_take_look(r, t, dt, horizon_ns == UINT64_MAX, &snap, &over, &steady, &look);
		end = e == 0 ? pd_take_walk(r, dt, &snap, horizon_ns, room, st, &in_ring) : 0;
	}
	if (e == -ENODATA)
		return 0; /* no detail ring in this arena */
	if (e < 0)
		return e;
	dt->overwritten += pd_overwritten(dt, over);
	dt->taken += st->records;
	dt->taken_end = end;
	dt->taken_ok = true;
	pd_resolve(t, dt);
	/* A copy from where the last stopped that found nothing overwritten
	 * counts nothing (a gap left short waits for a look that can). */
	if (look || snap.lost_bytes > 0)
		pd_gap(t, dt, over, in_ring, taken + known, lo_ns, steady, st);
	return e;
}

uint64_t wal_detail_taken_bytes(const struct wal_thread *t)
{
	return t->dt ? t->dt->mem_bytes : 0;
}

uint64_t wal_detail_taken_records(const struct wal_thread *t)
{
	return t->dt ? t->dt->taken : 0;
}
