/*
 * From a pc inside a trampoline back to the function it stands for: the
 * crash handler's map (agent_crash.c, docs/hooks.md "Fatal signals").
 *
 * A hooked function's first instructions run as relocated copies in its
 * trampoline; a fault there (a load through a bad argument in the first
 * bytes, a stack overflow at the trampoline's first push) leaves the pc in
 * trampoline memory, which no symbol table names. Each module's trampoline
 * block gets, at install, a table of its trampolines (address order, as
 * install_emit() lays them out) with each displaced instruction's place in
 * the trampoline and in the function (hook_arch_reloc_map). A pc at the
 * start of a relocated copy is that instruction in the function, with the
 * same registers and memory (the copies are exact equivalents and nothing
 * after the frame ran before them); a pc at the trampoline's first byte is
 * the function's entry (nothing of the trampoline ran); a pc at the jump
 * back behind the patch has run every copy (a thread stopped after a
 * system call that was the last of them): the end of the patched bytes.
 * Any other pc
 * (inside the frame, the shared enter stub, the middle of a multi-
 * instruction copy) maps to nothing: its state is not the function's.
 *
 * The block itself is allocated here too (agent_block_alloc): its
 * trampolines, then a zone of the count blocks, a table for each.
 *
 * Threads: tables are added and retired by the install paths (under
 * agent.lock); the crash handler of any thread reads them without a lock.
 * A table is immutable once published; the list only grows (a retired
 * table stays, marked, since a handler may be reading it).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent_internal.h"
#include "fs.h"

/* One trampoline: where it is in its block, where its function is in its
 * module (both fit in 32 bits: a block and a module are far below 4 GiB). */
struct tmap_fn {
	uint32_t tramp_off; /* from the table's lo */
	uint32_t fn_off;    /* from the table's fn_base */
	struct hook_arch_reloc_map map;
};

struct agent_tmap {
	uint64_t lo, hi;    /* the trampoline block */
	uint64_t fn_base;   /* the module's lowest address */
	uint32_t module_id; /* retired with it */
	_Atomic uint32_t gone;
	size_t n, cap;
	struct tmap_fn *fns;
	/* A count blocks' table: fns[i]'s map is wide[i] (a copy form's
	 * block copies more instructions than a trampoline's map holds). */
	struct hook_arch_copy_map *wide;
	struct agent_tmap *next; /* older tables */
	uint32_t last_off;       /* fns[n - 1].tramp_off, when n */
	/* Until published: entries [staged_from, n) held here, copied into
	 * fns by the kernel a batch at a time (tmap_flush); NULL: in place. */
	struct tmap_fn *stage;
	size_t staged_from;
};

/* Entries staged at a time: fns's pages are then not first touched from
 * user space at start-up (on a paravirtualised guest an exit to the
 * hypervisor each, for a table read only by the crash handler). */
#define TMAP_STAGE 512

static void tmap_flush(struct agent_tmap *t)
{
	size_t n = (t->n - t->staged_from) * sizeof(*t->fns);
	if (n && !hook_mem_write_kernel(&t->fns[t->staged_from], t->stage, n))
		memcpy(&t->fns[t->staged_from], t->stage, n);
	t->staged_from = t->n;
}

/* The newest table first: a block that reuses a retired one's addresses is
 * found before it. */
static struct agent_tmap *_Atomic tmap_head;

struct agent_tmap *agent_tmap_new(uint32_t module_id, uint64_t lo, uint64_t hi, uint64_t fn_base,
                                  size_t cap, bool counts)
{
	struct agent_tmap *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->fns = malloc((cap ? cap : 1) * sizeof(*t->fns));
	if (counts)
		t->wide = malloc((cap ? cap : 1) * sizeof(*t->wide));
	if (!t->fns || (counts && !t->wide)) {
		free(t->fns);
		free(t);
		return NULL;
	}
	/* install_emit() fills nearly every entry, one after the other: its
	 * pages made present in one call, not a fault each (libc's ~19 at
	 * every exec'd start; exe10). */
	ada_fs_populate(t->fns, (cap ? cap : 1) * sizeof(*t->fns));
	/* A count blocks' table keeps its entries in place (wide[] too). */
	t->stage = counts || agent.attached ? NULL : malloc(TMAP_STAGE * sizeof(*t->stage));
	t->lo = lo;
	t->hi = hi;
	t->fn_base = fn_base;
	t->module_id = module_id;
	t->cap = cap;
	return t;
}

/* The entry for the trampoline (or count block) of plan at tramp, filled
 * but for its map, or NULL when it does not belong in t. */
static struct tmap_fn *tmap_next(struct agent_tmap *t, const struct hook_arch_plan *plan,
                                 uint64_t tramp)
{
	if (!t || t->n == t->cap || tramp < t->lo || tramp >= t->hi || plan->fn_addr < t->fn_base ||
	    plan->fn_addr - t->fn_base > UINT32_MAX)
		return NULL;
	uint32_t off = (uint32_t)(tramp - t->lo);
	/* install_emit() lays trampolines out in address order: the table
	 * stays sorted for agent_tmap_pc()'s search. */
	if (t->n && off <= t->last_off)
		return NULL;
	if (t->stage && t->n - t->staged_from == TMAP_STAGE)
		tmap_flush(t);
	struct tmap_fn *f = t->stage ? &t->stage[t->n - t->staged_from] : &t->fns[t->n];
	f->tramp_off = off;
	f->fn_off = (uint32_t)(plan->fn_addr - t->fn_base);
	return f;
}

/* A trampoline's (or an inline count block's) map as a wide one: its
 * copies, then its jump back behind the patch as one more pair. */
static void tmap_widen(const struct hook_arch_reloc_map *m, struct hook_arch_copy_map *w)
{
	size_t n = m->n < HOOK_ARCH_MAX_INSNS ? m->n : HOOK_ARCH_MAX_INSNS;
	memcpy(w->off, m->off, n);
	memcpy(w->at, m->at, n);
	if (m->end_at) {
		w->off[n] = m->end_off;
		w->at[n++] = m->end_at;
	}
	w->n = (uint8_t)n;
}

void agent_tmap_add(struct agent_tmap *t, const struct hook_arch_plan *plan, uint64_t tramp,
                    bool fast, const struct hook_arch_reloc_map *map)
{
	struct tmap_fn *f = tmap_next(t, plan, tramp);
	if (!f)
		return;
	if (map)
		f->map = *map;
	else if (!hook_arch_reloc_map(plan, tramp, fast, &f->map))
		return;
	if (t->wide)
		tmap_widen(&f->map, &t->wide[t->n]);
	t->last_off = f->tramp_off;
	t->n++;
}

void agent_tmap_add_copy(struct agent_tmap *t, const struct hook_arch_plan *plan, uint64_t blk,
                         const struct hook_arch_copy_map *map)
{
	struct tmap_fn *f = t && t->wide ? tmap_next(t, plan, blk) : NULL;
	if (!f)
		return;
	t->wide[t->n] = *map;
	t->last_off = f->tramp_off;
	t->n++;
}

void agent_tmap_publish(struct agent_tmap *t)
{
	if (!t)
		return;
	if (t->stage)
		tmap_flush(t);
	free(t->stage);
	t->stage = NULL;
	if (t->n == 0) {
		free(t->fns);
		free(t->wide);
		free(t);
		return;
	}
	t->next = atomic_load_explicit(&tmap_head, memory_order_relaxed);
	/* Release: the table's contents before the pointer; pairs with the
	 * acquire in agent_tmap_pc(). */
	atomic_store_explicit(&tmap_head, t, memory_order_release);
}

void agent_tmap_retire(uint32_t module_id)
{
	for (struct agent_tmap *t = atomic_load_explicit(&tmap_head, memory_order_relaxed); t;
	     t = t->next)
		if (t->module_id == module_id)
			/* Relaxed: the block is unmapped after this, and a pc
			 * inside unmapped memory cannot be the crash's. */
			atomic_store_explicit(&t->gone, 1, memory_order_relaxed);
}

/* The entry whose trampoline starts at or below off, or NULL. */
static const struct tmap_fn *tmap_find(const struct agent_tmap *t, uint32_t off)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->fns[mid].tramp_off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->fns[lo - 1] : NULL;
}

/* The function's address a wide map gives the block's byte d, or 0. */
static uint64_t tmap_wide_pc(const struct hook_arch_copy_map *w, uint32_t d, uint64_t fn)
{
	for (uint32_t i = 0; i < w->n && i <= HOOK_ARCH_COUNT_COPY_INSNS; i++)
		if (d == w->at[i])
			return fn + w->off[i];
	return 0;
}

uint64_t agent_tmap_pc(uint64_t pc)
{
	if (!hook_mem_is_tramp(pc))
		return 0;
	/* Acquire: pairs with the release in agent_tmap_publish(). */
	const struct agent_tmap *t = atomic_load_explicit(&tmap_head, memory_order_acquire);
	/* Bounded: the list only ever gets a new head, so it ends. */
	for (; t; t = t->next) {
		if (pc < t->lo || pc >= t->hi ||
		    atomic_load_explicit(&t->gone, memory_order_relaxed))
			continue;
		const struct tmap_fn *f = tmap_find(t, (uint32_t)(pc - t->lo));
		if (!f)
			return 0;
		uint32_t d = (uint32_t)(pc - t->lo) - f->tramp_off;
		uint64_t fn = t->fn_base + f->fn_off;
		if (d == 0)
			return fn; /* the trampoline's first instruction: nothing ran */
		if (t->wide)
			return tmap_wide_pc(&t->wide[f - t->fns], d, fn);
		for (uint32_t i = 0; i < f->map.n && i < HOOK_ARCH_MAX_INSNS; i++)
			if (d == f->map.at[i])
				return fn + f->map.off[i];
		return d == f->map.end_at ? fn + f->map.end_off : 0;
	}
	return 0;
}

/* Bytes a trampoline takes at least: the fast form's frame template and
 * the jump back alone pass 32, and each starts 16-byte aligned. */
#define BLOCK_TRAMPOLINE_LEAST 48

/* The whole pages of [blk, blk + len), which the trampolines about to be
 * written will fill (len: what they take at least), made present in one
 * call instead of by a page fault each (libc's ~170 KB). Best effort. */
static void block_populate(uint8_t *blk, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)blk + pg - 1) & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)blk + len) & ~(pg - 1);
	if (hi > lo + pg)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
	(void)blk, (void)len;
#endif
}

/* The count blocks' zone after the trampolines': the hot ones of a
 * second run (sqlite3: 173, python: some 700) then take a few pages, not
 * one each among the trampolines. */
int agent_block_alloc(struct agent_module *m, size_t used, size_t n_cand, bool counts,
                      struct agent_block *z)
{
	const size_t line = AGENT_COUNT_ALIGN;
	size_t czone = used + n_cand * HOOK_ARCH_MAX_TRAMPOLINE;
	size_t cap =
	    counts ? czone + line + n_cand * ((HOOK_ARCH_COUNT_INLINE_MAX + line - 1) & ~(line - 1))
	           : czone;
	memset(z, 0, sizeof(*z));
	/* At the shared-text place when it can be (agent_sharedtext.c). */
	int err = agent_stext_block(m, cap, &z->blk)
	              ? 0
	              : agent_far_block(agent.mem, m, cap, &z->blk, &z->far);
	if (err) {
		z->blk = NULL;
		return err;
	}
	block_populate(z->blk, used + n_cand * BLOCK_TRAMPOLINE_LEAST);
	uintptr_t b = (uintptr_t)z->blk;
	if (counts) /* its first block on a line of its own */
		czone = ((b + czone + line - 1) & ~(uintptr_t)(line - 1)) - b;
	z->czone = czone;
	z->tmap = agent_tmap_new(m->id, b, b + czone, m->lo, n_cand, false);
	z->cmap = counts ? agent_tmap_new(m->id, b + czone, b + cap, m->lo, n_cand, true) : NULL;
	return 0;
}
