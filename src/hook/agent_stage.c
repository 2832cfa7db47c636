/*
 * Trampolines and undo entries written through a staging buffer and
 * copied into place by the kernel (agent_internal.h, struct agent_stage).
 * Not hook context: the install paths, agent.lock held.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent_internal.h"

/* Bytes of trampolines emitted at a time into a staging buffer and then
 * copied into their block by the kernel (hook_mem_write_kernel): the
 * block's pages are then first touched from user space when a
 * trampoline on them runs, not all at start-up (cc1's thousands, most
 * of which never run). */
#define AGENT_STAGE_BYTES (64u << 10)

/* Undo entries (the original bytes, read only by a detach or a budget
 * move, never at start-up) staged and copied by the kernel the same way. */
#define AGENT_STAGE_UNDO 256

/* The staging buffer: one for the process, mapped populated at the first
 * install and kept (never unmapped), its trampoline part all zeros
 * whenever no install is using it -- the alignment gaps between
 * trampolines, as a fresh block holds them. A buffer per module, cleared
 * at each start, was a page fault a page of it in every module's install
 * (docs/benchmarks.md); the trampoline window is cleared instead as each
 * flush empties it. Serialized: the installs, agent.lock held. */
static uint8_t *agent_stage_buffer(void)
{
	static uint8_t *buf;
	if (!buf) {
		size_t len = AGENT_STAGE_BYTES + AGENT_STAGE_UNDO * sizeof(struct hook_patch);
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		buf = p == MAP_FAILED ? NULL : p;
	}
	return buf;
}

void agent_stage_init(struct agent_stage *st, size_t used, struct hook_patch *undo)
{
	/* ada attach moves threads into trampolines as they are made:
	 * in place, as before. */
	st->buf = agent.attached ? NULL : agent_stage_buffer();
	st->lo = used;
	st->undo = undo;
	st->ubuf = st->buf ? (struct hook_patch *)(void *)(st->buf + AGENT_STAGE_BYTES) : NULL;
	st->ubase = st->un = 0;
}

static void agent_stage_undo_flush(struct agent_stage *st)
{
	size_t n = st->un * sizeof(*st->ubuf);
	if (!st->undo)
		return;
	if (n && !hook_mem_write_kernel(st->undo + st->ubase, st->ubuf, n))
		memcpy(st->undo + st->ubase, st->ubuf, n);
	st->ubase += st->un;
	st->un = 0;
}

/* Where undo entry np is to be written. */
struct hook_patch *agent_stage_undo_at(struct agent_stage *st, size_t np)
{
	if (!st->undo)
		return &st->discard;
	if (!st->ubuf)
		return &st->undo[np];
	if (st->un == AGENT_STAGE_UNDO)
		agent_stage_undo_flush(st);
	return &st->ubuf[st->un++];
}

/* Writes the window's [lo, used) into the block; with more to come the
 * window moves to used. */
void agent_stage_flush(struct agent_stage *st, uint8_t *blk, size_t used, bool last)
{
	if (!st->buf)
		return;
	size_t n = used - st->lo;
	if (n && !hook_mem_write_kernel(blk + st->lo, st->buf, n))
		memcpy(blk + st->lo, st->buf, n);
	st->lo = used;
	/* Zeros again for the next window's gaps; at the last, the whole
	 * window (a trampoline that failed half written left bytes past
	 * used), for the next install's. */
	memset(st->buf, 0, last ? AGENT_STAGE_BYTES : n);
	if (last) {
		agent_stage_undo_flush(st);
		st->buf = NULL; /* agent_stage_buffer()'s, kept */
	}
}

/* Where the trampoline at blk + used is to be written. */
uint8_t *agent_stage_at(struct agent_stage *st, uint8_t *blk, size_t used)
{
	if (!st->buf)
		return blk + used;
	if (used + HOOK_ARCH_MAX_TRAMPOLINE > st->lo + AGENT_STAGE_BYTES)
		agent_stage_flush(st, blk, used, false);
	return st->buf + (used - st->lo);
}
