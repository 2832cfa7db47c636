/*
 * The status of a recorded child its traced parent reaped (issue 14): the
 * parent's agent notes each reap in its own arena's table of reaped
 * children (ring_reaped.h; src/hook/agent_wait.c); the drain reads each
 * table from its cursor in every pass, before the pass judges which
 * processes are gone (drain.c drain_proc_guarded, drain_end.c), and once
 * more when the reaper is finished, before its arena closes.
 *
 * A note (pid, status, time) goes to the newest process of that pid that
 * the recording admitted and whose arena was made before the reap (its
 * origin's anchor, born_raw): a note of an earlier process given the same
 * pid is older than the later one's arena. Both times are the arenas' raw
 * time (the counter every process of the recording reads, or
 * CLOCK_BOOTTIME ns with ts=clock), compared as they are: no conversion,
 * whose error early in a recording could exceed a short child's life.
 * A process that knows its status already (reaped by us, its zombie
 * read, finished) takes nothing. A note for a pid no admitted process
 * has yet (its arena not seen yet) waits in
 * pending[pid % WAL_WAIT_PENDING] until one is admitted; another pid's
 * note put there first is counted unclaimed (most often a child the
 * recording did not record: --no-follow, a static program; or one that
 * finished and was retired, retire.c, before its reaper's note was read).
 *
 * Nothing is lost silently: entries a reaper overwrote before the drain
 * read them (its table wrapped: more than ADA_REAPED_SLOTS reaps while
 * the drain looked elsewhere), entries torn or implausible, and the
 * processes that end with no status from anywhere are counted
 * (wal_wait_counts), in every manifest, `ada status` and the summary.
 *
 * Threads: the drain thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arena_internal.h"
#include "clock.h"
#include "drain_internal.h"
#include "ring.h"
#include "ring_reaped.h"
#include "wait_notes.h"

/* A reap time later than this past now is the target's invention. */
#define WAIT_NOTE_FUTURE_NS 1000000000ull

/* The newest admitted process of pid whose arena was made before ts_raw. */
static struct wal_proc *wait_notes_proc(struct ada_recorder *r, int32_t pid, uint64_t ts_raw)
{
	for (size_t i = r->nprocs; i-- > 0;) {
		struct wal_proc *q = r->procs[i];
		if (q->pid == pid && q->born_raw && q->born_raw <= ts_raw)
			return q;
	}
	return NULL;
}

/* q's status is the note's, unless it knows one already. */
static void wait_notes_give(struct ada_recorder *r, struct wal_proc *q,
                            const struct wal_wait_note *n)
{
	if (q->reaped || q->other_known || q->finished)
		return;
	q->other_known = true;
	q->other_status = n->status;
	r->wait_notes.c.given++;
}

/* Keeps n for a process of its pid still to come. */
static void wait_notes_keep(struct ada_recorder *r, const struct wal_wait_note *n)
{
	struct wal_wait_notes *w = &r->wait_notes;
	if (!w->pending) {
		w->pending = calloc(WAL_WAIT_PENDING, sizeof(*w->pending));
		if (!w->pending) {
			w->c.unclaimed++; /* no memory: as if put out at once */
			return;
		}
	}
	struct wal_wait_note *slot = &w->pending[(uint32_t)n->pid % WAL_WAIT_PENDING];
	if (slot->pid)
		w->c.unclaimed++;
	*slot = *n;
}

/* A reap time past now (+1 s) is the target's invention; told only once
 * the recording's clock converts the raw time. */
static bool wait_notes_future(const struct ada_recorder *r, uint64_t ts_raw)
{
	if (r->use_tsc && !ada_tsc_clock_ready(&r->clk))
		return false;
	uint64_t ns = r->use_tsc ? ada_tsc_clock_to_ns(&r->clk, ts_raw) : ts_raw;
	return ns > ada_boottime_ns() + WAIT_NOTE_FUTURE_NS;
}

void wal_wait_notes_take(struct ada_recorder *r, struct wal_proc *p, bool final)
{
	struct ada_reaped_note out[ADA_REAPED_SLOTS];
	struct ada_reaped_counts counts = {0};
	if (!p->arena)
		return;
	uint32_t n = ada_arena_reaped_take(p->arena, &p->reaped_cursor, final, out, &counts);
	struct wal_wait_counts *c = &r->wait_notes.c;
	c->overwritten += counts.overwritten;
	c->refused += counts.refused;
	for (uint32_t i = 0; i < n; i++) {
		if (wait_notes_future(r, out[i].ts_raw)) {
			c->refused++;
			continue;
		}
		c->read++;
		struct wal_wait_note note = {
		    .pid = out[i].pid, .status = out[i].status, .ts_raw = out[i].ts_raw};
		struct wal_proc *q = wait_notes_proc(r, note.pid, note.ts_raw);
		if (q)
			wait_notes_give(r, q, &note);
		else
			wait_notes_keep(r, &note);
	}
}

void wal_wait_notes_admitted(struct ada_recorder *r, struct wal_proc *p)
{
	struct wal_wait_notes *w = &r->wait_notes;
	if (!w->pending || !p->born_raw)
		return;
	struct wal_wait_note *slot = &w->pending[(uint32_t)p->pid % WAL_WAIT_PENDING];
	if (slot->pid != p->pid || slot->ts_raw < p->born_raw)
		return; /* none, or an earlier process's of the pid */
	wait_notes_give(r, p, slot);
	*slot = (struct wal_wait_note){0};
}

json_t *wal_wait_notes_json(const struct ada_recorder *r)
{
	const struct wal_wait_counts *c = &r->wait_notes.c;
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "unknown_processes", (json_int_t)c->unknown,
	                 "notes_read", (json_int_t)c->read, "notes_given", (json_int_t)c->given,
	                 "overwritten", (json_int_t)c->overwritten, "refused",
	                 (json_int_t)c->refused, "unclaimed", (json_int_t)c->unclaimed);
}

json_t *wal_wait_notes_manifest_json(struct ada_recorder *r)
{
	r->wait_notes.shown = r->wait_notes.c;
	return wal_wait_notes_json(r);
}

bool wal_wait_notes_unshown(const struct ada_recorder *r)
{
	return memcmp(&r->wait_notes.c, &r->wait_notes.shown, sizeof(r->wait_notes.c)) != 0;
}

void wal_wait_notes_free(struct wal_wait_notes *w)
{
	free(w->pending);
	w->pending = NULL;
}
