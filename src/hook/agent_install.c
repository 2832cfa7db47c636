/*
 * Hooking images: symbols -> verdicts -> prepare -> trampolines -> patches
 * (not hook context).
 *
 * Runs on the init thread, in a forked child never (the child inherits
 * the patched code), and after dlopen/dlclose returns (agent_dl_changed),
 * always with agent.lock held and the thread's guard set, so the libc
 * functions this code calls run untraced even once they are patched.
 *
 * Per image: one symbol-table read (libelf, one pass), one trampoline
 * block (hook_mem_alloc sized for every candidate, so one region near the
 * image), one seal, and one hook_patch_apply_pair() of the padding's jumps
 * and the patches, each sorted by address (one mprotect pair per mapping).
 * No per-function syscall or allocation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent_internal.h"
#include "symcache_internal.h"
#include "discover_internal.h"
#include "fs.h"
#include "plancache_internal.h"
#include "agent_plans_internal.h"
#include "ring.h"

static uint64_t install_fn_id(const struct agent_module *m, size_t i)
{
	return ((uint64_t)m->id << 32) | i;
}

/* The options' verdicts (and the special functions, recorded on their
 * primary in `reserved`): afterwards ADA_HOOK_OK means "to be analysed". */
static void install_verdicts(struct agent_module *m)
{
	size_t primary = 0;
	struct discover_fde_table fdes;
	struct discover_fde_cursor cur = {0}; /* the table is in address order */
	bool check_fde =
	    agent.cfg.need_fde && discover_fde_table(m->base, m->lo, m->hi, &fdes) == 0;
	for (size_t i = 0; i < m->st.count; i++) {
		struct ada_hook_fn *f = &m->st.fns[i];
		const char *name = ada_hook_fn_name(&m->st, f);
		enum agent_special sp = agent_special_of_name(name);
		if (f->status != ADA_SKIP_ALIAS)
			primary = i;
		if (sp != AGENT_SP_NONE && m->st.fns[primary].status == ADA_HOOK_OK)
			m->st.fns[primary].reserved = (uint8_t)sp; /* special: decided below */
		if (f->status != ADA_HOOK_OK || sp != AGENT_SP_NONE || f->reserved != 0)
			continue;
		if (!m->wanted)
			f->status = ADA_SKIP_EXCLUDED;
		else
			f->status = (uint8_t)ada_hook_config_symbol_verdict(&agent.cfg, name);
		/* Not C: no unwind information (discover_ehframe.c). */
		if (f->status == ADA_HOOK_OK && check_fde &&
		    !discover_fde_covers_next(&fdes, m->base + f->offset, &cur))
			f->status = ADA_SKIP_NO_UNWIND_INFO;
	}
}

/* The module's readable PT_LOAD segments: where prepare may read switch
 * tables (hook_arch_prepare_mem). Found again by base and lowest address. */
struct install_rd {
	const struct agent_module *m;
	struct hook_arch_region v[16];
	size_t n;
	struct hook_arch_region x[4]; /* the executable ones (bytes unused) */
	size_t nx;
};

static int install_rd_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct install_rd *r = arg;
	uint64_t lo = UINT64_MAX;
	size_t n = 0, nx = 0;
	(void)size;
	if ((uint64_t)info->dlpi_addr != r->m->base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD)
			continue;
		lo = a < lo ? a : lo;
		if ((ph->p_flags & PF_R) && n < sizeof(r->v) / sizeof(r->v[0]))
			r->v[n++] = (struct hook_arch_region){a, ph->p_memsz, (const uint8_t *)a};
		if ((ph->p_flags & PF_X) && nx < sizeof(r->x) / sizeof(r->x[0]))
			r->x[nx++] = (struct hook_arch_region){a, ph->p_memsz, NULL};
	}
	if (lo != r->m->lo)
		return 0;
	r->n = n;
	r->nx = nx;
	return 1;
}

/* Work shared with the helper thread (install_run()): ranges of grain
 * indices handed out in turn to whichever thread asks first. */
struct install_par {
	discover_body body;
	void *arg;
	size_t n, grain;
	atomic_size_t next;
};

static void install_par_work(struct install_par *p)
{
	for (;;) {
		/* Relaxed: it only hands out indices, each range to one thread;
		 * what the ranges compute reaches install_run() through
		 * install_h.lock (the helper's users-- and the caller's wait). */
		size_t lo = atomic_fetch_add_explicit(&p->next, p->grain, memory_order_relaxed);
		if (lo >= p->n)
			return;
		p->body(p->arg, lo, p->n - lo < p->grain ? p->n : lo + p->grain);
	}
}

/* The helper thread of the start-up scan: started by the first
 * install_run() with enough work, joined by install_helper_stop() before
 * the first patch. cur: the job on offer (seq counts the offers), users:
 * 1 while the helper works on it; these and stop under lock. thr,
 * running and failed belong to the scanning thread. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
	pthread_t thr;
	bool running, failed, stop;
	struct install_par *cur;
	uint64_t seq;
	unsigned users;
} install_h = {.lock = PTHREAD_MUTEX_INITIALIZER,
               .wake = PTHREAD_COND_INITIALIZER,
               .idle = PTHREAD_COND_INITIALIZER};

/* The helper's body. Its guard is set for good, as in
 * process_child_unfollow(): it lives only while no patch exists
 * (agent.par_analysis), and nothing it calls may ever be traced. */
static void *install_helper_main(void *arg)
{
	uint64_t seen = 0;
	(void)arg;
	agent_guard_enter();
	pthread_mutex_lock(&install_h.lock);
	for (;;) {
		while (!install_h.stop && (!install_h.cur || install_h.seq == seen))
			pthread_cond_wait(&install_h.wake, &install_h.lock);
		if (install_h.stop)
			break;
		struct install_par *p = install_h.cur;
		seen = install_h.seq;
		install_h.users++;
		pthread_mutex_unlock(&install_h.lock);
		install_par_work(p);
		pthread_mutex_lock(&install_h.lock);
		if (--install_h.users == 0)
			pthread_cond_signal(&install_h.idle);
	}
	pthread_mutex_unlock(&install_h.lock);
	return NULL;
}

/* Whether the helper runs (started now if need be). A failed start is
 * not retried: the rest of the scan runs on this thread. */
static bool install_helper_start(void)
{
	if (install_h.running || install_h.failed)
		return install_h.running;
	/* Every signal blocked on the helper (it inherits this mask): none
	 * meant for the program is delivered to a thread that is not its. */
	sigset_t all, old;
	sigfillset(&all);
	int err = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!err) {
		err = pthread_create(&install_h.thr, NULL, install_helper_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	install_h.running = err == 0;
	install_h.failed = err != 0;
	return install_h.running;
}

/* Ends the helper: after this, no thread but the caller's runs agent
 * code or libc for the agent, and patches may go live. */
static void install_helper_stop(void)
{
	if (!install_h.running)
		return;
	pthread_mutex_lock(&install_h.lock);
	install_h.stop = true;
	pthread_cond_signal(&install_h.wake);
	pthread_mutex_unlock(&install_h.lock);
	pthread_join(install_h.thr, NULL);
	install_h.running = install_h.stop = false;
}

/* Below this many ranges, sharing costs about what it saves. */
#define INSTALL_PAR_MIN_RANGES 8

/* What install_run() did for the module being analysed: offered its
 * work to the helper (par_used), or could not (par_failed). */
static bool install_par_used, install_par_failed;

/* A discover_runner: at start-up (agent.par_analysis) the work is offered
 * to the helper, this thread takes ranges too, and returns once it finds
 * none left and the helper has finished the range it holds. A helper not
 * yet scheduled costs no wait: it finds the offer withdrawn. Otherwise,
 * or without a helper (pthread_create failed: counted in agent.json,
 * analysis_threads.helper_failed), this thread alone. */
static void install_run(discover_body body, void *arg, size_t n, size_t grain)
{
	struct install_par p = {body, arg, n, grain ? grain : 1, 0};
	bool worth = agent.par_analysis && n / p.grain >= INSTALL_PAR_MIN_RANGES;
	if (!worth || !install_helper_start()) {
		install_par_failed |= worth; /* would have shared: the helper failed */
		body(arg, 0, n);
		return;
	}
	pthread_mutex_lock(&install_h.lock);
	install_h.cur = &p;
	install_h.seq++;
	pthread_cond_signal(&install_h.wake);
	pthread_mutex_unlock(&install_h.lock);
	install_par_work(&p);
	pthread_mutex_lock(&install_h.lock);
	install_h.cur = NULL; /* withdrawn: p is about to go */
	while (install_h.users)
		pthread_cond_wait(&install_h.idle, &install_h.lock);
	pthread_mutex_unlock(&install_h.lock);
	install_par_used = true;
}

/* Full analysis of the functions [lo, hi) of m still ADA_HOOK_OK. Each
 * function's verdict and plan depend only on its own bytes (and the
 * module's tables), and each range writes only its own entries. */
struct install_full {
	struct agent_module *m;
	struct hook_arch_plan *plans;
	const struct hook_arch_memview *mv;
};

static void install_prepare_range(void *arg, size_t lo, size_t hi)
{
	const struct install_full *x = arg;
	for (size_t i = lo; i < hi; i++) {
		struct ada_hook_fn *f = &x->m->st.fns[i];
		if (f->status != ADA_HOOK_OK)
			continue;
		uint64_t addr = x->m->base + f->offset;
		f->status = (uint8_t)hook_arch_prepare_mem((const uint8_t *)addr, addr, f->size,
		                                           x->mv, &x->plans[i]);
	}
}

/* The FDE view of discover_pad_slot(): covered, or cannot tell. */
static bool install_fde_covered(void *arg, uint64_t addr)
{
	const struct discover_fde_table *t = arg;
	return !t || discover_fde_covers(t, addr);
}

/* What the slot search of one module needs, made at its first use. */
struct install_padctx {
	bool made, ok;
	struct discover_fde_table fdes;
	uint64_t *pm;
	struct agent_text text; /* a hit's check read from the file */
};

static bool install_padctx_get(struct agent_module *m, struct install_padctx *c)
{
	if (!c->made) {
		c->made = true;
		c->ok = discover_fde_table(m->base, m->lo, m->hi, &c->fdes) == 0 &&
		        (c->pm = discover_pad_ends(&m->st)) != NULL;
	}
	return c->ok;
}

/* A cached padding-form verdict: the same short plan and a slot found
 * again by the same rules (they depend on the image only). */
static bool install_pad_again(struct agent_module *m, struct install_padctx *c, size_t i,
                              struct hook_arch_plan *plan, size_t patch_len)
{
	struct ada_hook_fn *f = &m->st.fns[i];
	uint64_t addr = m->base + f->offset, gap[DISCOVER_PAD_GAP_WORDS];
	if (!install_padctx_get(m, c) ||
	    hook_arch_prepare_prologue_short((const uint8_t *)addr, addr, f->size, plan) !=
	        ADA_HOOK_OK ||
	    plan->patch_len != patch_len)
		return false;
	struct discover_pad_view v = {install_fde_covered, &c->fdes};
	return discover_pad_slot(m->base, &m->st, c->pm, i, &v, plan, gap);
}

/* Functions per range of the full analysis: small enough to balance two
 * threads (the cost per function varies a thousandfold), large enough to
 * keep the hand-out rare. */
#define INSTALL_PREPARE_GRAIN 32

/* A cached OK verdict of function i: its decoded plan from the file when
 * that fits the image; without one (it could not be stored), its
 * prologue decoded again, counted. */
static bool install_cached_plan(struct agent_module *m, const struct hook_arch_memview *mv,
                                struct install_padctx *pc, size_t i, struct hook_arch_plan *plan,
                                uint8_t cached)
{
	if (!plan) /* the file's record walk: every OK entry has its plan */
		return false;
	if (cached & PLAN_CACHE_PLAN)
		return agent_text_fits(&pc->text, mv, plan, cached & PLAN_CACHE_LEN);
	struct ada_hook_fn *f = &m->st.fns[i];
	uint64_t addr = m->base + f->offset;
	agent.cache_decoded++;
	if (cached & PLAN_CACHE_PAD)
		return install_pad_again(m, pc, i, plan, cached & PLAN_CACHE_LEN);
	return hook_arch_prepare_prologue((const uint8_t *)addr, addr, f->size, plan) ==
	           ADA_HOOK_OK &&
	       plan->patch_len == (cached & PLAN_CACHE_LEN);
}

/* Functions ahead whose first bytes install_prepare() asks for early: a
 * large image's text is read once, a function or more per cache line and
 * page apart (cc1: 20 MiB for 26 000 functions), and its walk would
 * otherwise wait for each line in turn. */
#define INSTALL_PREFETCH_AHEAD 8

/* A read hint only: a prefetch never faults, whatever the address. */
static inline void install_prefetch(const struct agent_module *m, size_t i)
{
	if (i < m->st.count)
		__builtin_prefetch((const void *)(uintptr_t)(m->base + m->st.fns[i].offset));
}

/* hook_arch_prepare on every function still ADA_HOOK_OK. With ce (a plan
 * cache hit), a cached OK takes the cached plan when it fits the image
 * (else its prologue is decoded) and a cached skip reason is taken as is.
 * Returns how many remain candidates, or SIZE_MAX when the cache
 * disagrees with the image (then nothing can be trusted from it). */
static size_t install_prepare(struct agent_module *m, struct agent_plans *plans,
                              const struct plan_cache_entry *ce, const char *cache_path)
{
	size_t n = 0, planned = 0, checked = 0;
	struct install_rd rd = {.m = m};
	struct install_padctx pc = {0};
	dl_iterate_phdr(install_rd_cb, &rd);
	struct hook_arch_memview mv = {rd.v, rd.n};
	pc.text.fd = pc.text.pm = -1; /* closed: nothing to close */
	if (ce && rd.nx) {
		agent_text_open(&pc.text, rd.x[0].addr);
		agent_text_fit_open(&pc.text, cache_path, plan_cache_file_sum(&plans->file));
	}
	/* What the walk below (or the analysis) reads of the text in memory:
	 * mapped in one call, not a fault each (a hit's checked from the
	 * file, agent_text.c, but for the pages the process wrote). */
	for (size_t k = pc.text.fd >= 0; k < rd.nx; k++)
		hook_mem_prefault(rd.x[k].addr, rd.x[k].len);
	if (!ce) {
		struct install_full x = {m, plans->v, &mv};
		install_run(install_prepare_range, &x, m->st.count, INSTALL_PREPARE_GRAIN);
	}
	for (size_t i = 0; i < m->st.count; i++) {
		struct ada_hook_fn *f = &m->st.fns[i];
		struct hook_arch_plan *plan = ce ? agent_plans_step(plans, m, i) : NULL;
		install_prefetch(m, i + INSTALL_PREFETCH_AHEAD);
		planned += ce && ce[i].status == ADA_HOOK_OK && (ce[i].patch_len & PLAN_CACHE_PLAN);
		if (f->status != ADA_HOOK_OK)
			continue;
		checked += ce && ce[i].status == ADA_HOOK_OK && (ce[i].patch_len & PLAN_CACHE_PLAN);
		if (ce && ce[i].status != ADA_HOOK_OK) {
			f->status = ce[i].status;
		} else if (ce && !install_cached_plan(m, &mv, &pc, i, plan, ce[i].patch_len)) {
			free(pc.pm);
			agent_text_close(&pc.text);
			return SIZE_MAX;
		}
		n += f->status == ADA_HOOK_OK;
	}
	free(pc.pm);
	/* The walk read and checked every record (the file is private
	 * memory: install_emit()'s walk reads the same ones). */
	bool whole = !ce || plans->v || !plans->file.buf || plan_cache_file_whole(&plans->file);
	if (ce && whole)
		agent_text_fit_store(&pc.text, checked == planned);
	agent_text_close(&pc.text);
	if (!whole)
		return SIZE_MAX;
	plan_cache_file_rewind(&plans->file, m->st.count);
	return n;
}

/* Aliases are listed after their primary: a special name met on an alias
 * was recorded on the primary (reserved), which install_emit() gave the
 * special handler; the mark is not needed afterwards. */
static void install_register_specials(struct agent_module *m)
{
	for (size_t i = 0; i < m->st.count; i++)
		m->st.fns[i].reserved = 0;
}

/* Whether function i (or one of its aliases, listed right after it) is
 * one the options count only. */
static bool install_count_only(const struct agent_module *m, size_t i)
{
	if (agent.cfg.n_count_only == 0)
		return false;
	for (size_t j = i; j < m->st.count; j++) {
		const struct ada_hook_fn *f = &m->st.fns[j];
		if (j > i && (f->status != ADA_SKIP_ALIAS || f->offset != m->st.fns[i].offset))
			break;
		if (ada_hook_config_count_only(&agent.cfg, m->st.names + f->name_off))
			return true;
	}
	return false;
}

/* A count block for function i, whose fast trampoline is at tramp
 * (docs/hooks.md, "Count-only functions"): the copy form (its first
 * bytes up to a ret or jmp), else the inline form (the prologue copied
 * into it), both added to tmap as a trampoline is, else the one that
 * jumps to the trampoline's copy, at blk + *used (advanced past it, to
 * the next line). Returns where the patch should jump: the block, or
 * tramp when no counter is left (traced in full). */
static uint64_t install_count_block(struct agent_module *m, size_t i,
                                    const struct hook_arch_plan *plan, uint8_t *blk, size_t *used,
                                    uint64_t tramp, bool recalled, struct agent_tmap *tmap)
{
	uint8_t *at = blk + *used;
	size_t len;
	int c = agent_count_assign(install_fn_id(m, i), 0, 0, 0);
	if (c < 0)
		return tramp;
	if (recalled)
		agent_count_recalled(c);
	int32_t gate, counter;
	agent_count_offsets(&gate, &counter);
	struct hook_arch_copy_map copy;
	struct hook_arch_reloc_map map;
	/* A fault in a block's copies is the function's, as in the
	 * trampoline's: each form's map goes to the crash handler's table. */
	len = hook_arch_emit_count_block_copy(plan, (const uint8_t *)(uintptr_t)plan->fn_addr,
	                                      agent_count_copy_avail(m, i), at, (uint64_t)at, gate,
	                                      counter, (uint32_t)c, tramp, &copy);
	if (len)
		agent_tmap_add_copy(tmap, plan, (uint64_t)at, &copy);
	else if ((len = hook_arch_emit_count_block_inline(plan, at, (uint64_t)at, gate, counter,
	                                                  (uint32_t)c, tramp, &map)) != 0)
		agent_tmap_add(tmap, plan, (uint64_t)at, true, &map);
	else
		len =
		    hook_arch_emit_count_block(at, (uint64_t)at, gate, counter, (uint32_t)c, tramp);
	if (len == 0)
		return tramp; /* cannot happen within one block; the slot stays unused */
	*used += (len + AGENT_COUNT_ALIGN - 1) & ~(size_t)(AGENT_COUNT_ALIGN - 1);
	return (uint64_t)at;
}

/* Function i's trampoline at blk + used; with far (agent_far_block) a
 * plan that cannot reach it is planned again in the far form. Its
 * length, or 0. */
static size_t install_emit_one(struct agent_module *m, size_t i, struct hook_arch_plan *plan,
                               uint8_t *blk, size_t used, uint8_t *dst, size_t stub_at, bool far,
                               struct hook_arch_reloc_map *map, bool *mapped)
{
	const struct ada_hook_fn *f = &m->st.fns[i];
	uint64_t id = install_fn_id(m, i), len = 0;
	*mapped = false;
	for (int form = 0; form < 2 && len == 0; form++) {
		if (form == 1 && !(far && agent_far_replan(m, i, plan)))
			break;
		if (!f->reserved) /* specials get their own handler (agent_internal.h) */
			*mapped = (len = hook_arch_emit_trampoline_fast_map(
			               plan, dst, (uint64_t)(blk + used), id,
			               (uint64_t)(blk + stub_at), (uint64_t)blk, map)) != 0;
		else
			len = hook_arch_emit_trampoline(
			    plan, dst, (uint64_t)(blk + used),
			    agent_special_tag(id, (enum agent_special)f->reserved),
			    (uint64_t)&agent_hook_on_enter_special, (uint64_t)blk);
		m->n_far += form == 1 && len;
	}
	return (size_t)len;
}

/* The patch of plan to target (and its original bytes in u), and in the
 * padding form the slot's jump, at pads[(*n_pad)++]. */
static void install_emit_patch(const struct hook_arch_plan *plan, uint64_t target,
                               struct hook_patch *p, struct hook_patch *u, struct hook_patch *pads,
                               size_t *n_pad)
{
	/* Whole entries: the arrays are not zeroed (install_finish()). */
	*p = (struct hook_patch){.addr = plan->fn_addr, .len = plan->patch_len};
	*u = *p;
	hook_arch_patch_bytes(plan, target, p->bytes);
	memcpy(u->bytes, plan->original, plan->patch_len);
	/* The padding form: its slot jumps where a 5-byte patch would. */
	if (plan->pad_addr) {
		struct hook_patch *q = &pads[(*n_pad)++];
		*q = (struct hook_patch){.addr = plan->pad_addr, .len = HOOK_ARCH_PAD_SLOT};
		hook_arch_pad_bytes(plan, target, q->bytes);
	}
}

/* Emits the trampolines into one block and fills patches and, in the
 * same order, undo (the original bytes). Returns the patch count. The
 * block starts with its own return trampoline, the exit path of its
 * trampolines' return points (a jmp rel32 reaches it wherever the
 * module is). */
static size_t install_emit(struct agent_module *m, struct agent_plans *plans, size_t n_cand,
                           struct hook_patch *patches, struct hook_patch *undo,
                           struct hook_patch *pads, size_t *n_pad)
{
	size_t np = 0, used = (HOOK_ARCH_RETURN_TRAMPOLINE_MAX + 15) & ~(size_t)15;
	/* Every ordinary function's trampoline takes the fast form: the
	 * block's enter stub follows its return trampoline (hook_arch.h).
	 * Its C handlers are the lane's (agent_fast_layout): with the
	 * detail lane on, the stub tests the detail set first and leaves
	 * its members to ada_hook_on_enter_detail{,128}_held (the 128-byte
	 * variant copies the default snapshot with no length test). */
	size_t stub_at = used;
	struct hook_arch_fast fl;
	agent_fast_layout(&fl);
	fl.module = (uint32_t)m->id; /* every fn_id of the block: install_fn_id */
	used += (HOOK_ARCH_ENTER_STUB_MAX + 15) & ~(size_t)15;
	/* What --overhead-budget moved in an earlier run of this image
	 * starts count-only (agent_budget.c); NULL when nothing. */
	uint8_t *recall = agent_budget_recall(m);
	struct agent_block z;
	int err = agent_block_alloc(m, used, n_cand, agent.cfg.n_count_only || recall, &z);
	uint8_t *blk = z.blk;
	if (!err && hook_arch_emit_return_trampoline_fast(blk, (uint64_t)blk, &fl) == 0)
		err = -EINVAL;
	if (!err && hook_arch_emit_enter_stub(blk + stub_at, (uint64_t)(blk + stub_at), &fl) == 0)
		err = -EINVAL;
	m->n_far = 0;
	struct agent_stage stage;
	agent_stage_init(&stage, used, undo);
	for (size_t i = 0; i < m->st.count; i++) {
		struct ada_hook_fn *f = &m->st.fns[i];
		struct hook_arch_plan *plan = agent_plans_step(plans, m, i);
		if (f->status != ADA_HOOK_OK)
			continue;
		if (!plan) { /* a record the analysis read: cannot happen */
			f->status = ADA_SKIP_UNRELOCATABLE;
			continue;
		}
		struct hook_arch_reloc_map map;
		bool mapped = false;
		size_t len =
		    err ? 0
		        : install_emit_one(m, i, plan, blk, used, agent_stage_at(&stage, blk, used),
		                           stub_at, z.far, &map, &mapped);
		if (len == 0) {
			f->status = ADA_SKIP_NO_TRAMPOLINE_MEMORY;
			continue;
		}
		/* ada attach: a thread inside the patch bytes is moved into
		 * this trampoline, or the function stays unpatched. */
		if (agent.attached && agent_attach_busy(plan->fn_addr, plan->patch_len) &&
		    !agent_attach_place(plan, (uint64_t)(blk + used))) {
			f->status = ADA_SKIP_BUSY_AT_ATTACH;
			continue;
		}
		uint64_t target = (uint64_t)(blk + used);
		agent_tmap_add(z.tmap, plan, target, !f->reserved, mapped ? &map : NULL);
		used += (len + 15) & ~(size_t)15;
		bool recalled = recall && recall[i] && !install_count_only(m, i);
		if (!f->reserved && (recalled || install_count_only(m, i))) {
			target = install_count_block(m, i, plan, blk, &z.czone, target, recalled,
			                             z.cmap);
		}
		install_emit_patch(plan, target, &patches[np], agent_stage_undo_at(&stage, np),
		                   pads, n_pad);
		np++;
	}
	agent_stage_flush(&stage, blk, used, true);
	agent_tmap_publish(z.tmap);
	agent_tmap_publish(z.cmap);
	free(recall);
	return np;
}

void agent_install_count(struct agent_module *m)
{
	m->installed = 0;
	memset(m->skipped, 0, sizeof(m->skipped));
	for (size_t i = 0; i < m->st.count; i++) {
		uint8_t s = m->st.fns[i].status;
		if (s == ADA_HOOK_OK)
			m->installed++;
		else if (s < ADA_SKIP_REASON_COUNT)
			m->skipped[s]++;
	}
}

/* A patch that failed to apply leaves its function unhooked: say so. */
static void install_patch_failed(struct agent_module *m, int err)
{
	agent_log("cannot hook %s (%s); its functions are not traced", m->path, strerror(-err));
	for (size_t i = 0; i < m->st.count; i++) {
		if (m->st.fns[i].status == ADA_HOOK_OK)
			m->st.fns[i].status = ADA_SKIP_UNRELOCATABLE;
	}
}

/* The plan cache of one module (plancache_internal.h). */
struct install_cache {
	struct plan_cache_key key;
	char path[PATH_MAX];
	struct plan_cache_entry *e; /* the file's entries, or all UNKNOWN */
	uint8_t *todo;              /* 1: analysed by this run */
	bool on, hit;
};

static void install_cache_open(struct agent_module *m, struct install_cache *c,
                               struct agent_plans *plans)
{
	memset(c, 0, sizeof(*c));
	/* pad=0 changes verdicts: such a run neither reads nor writes. */
	if (!agent.cfg.cache || !agent.cfg.pad || agent.cache_agent_hash == 0 ||
	    m->st.build_id_len == 0 || m->st.build_id_len > sizeof(c->key.build_id))
		return;
	memcpy(c->key.build_id, m->st.build_id, m->st.build_id_len);
	c->key.build_id_len = (uint32_t)m->st.build_id_len;
	c->key.agent_hash = agent.cache_agent_hash;
	c->key.module_size = m->hi - m->lo;
	c->key.fn_count = m->st.count;
	c->key.table_hash = plan_cache_table_hash(&m->st);
	if (plan_cache_path(agent.cache_dir, &c->key, c->path, sizeof(c->path)))
		return;
	c->e = malloc((m->st.count ? m->st.count : 1) * sizeof(*c->e));
	c->todo = calloc(m->st.count ? m->st.count : 1, 1);
	if (!c->e || !c->todo)
		return;
	c->on = true;
	int err = plan_cache_load_file(c->path, &c->key, c->e, &plans->file);
	if (!err && !plan_cache_all_planned(c->e, m->st.count))
		err = agent_plans_from_file(m, &c->key, c->e, plans);
	if (err == -EPERM || err == -ELOOP) {
		/* In a place another user could write (or a link there): not
		 * trusted, not written; counted in agent.json. */
		agent.cache_untrusted++;
		c->on = false;
	}
	if (err)
		memset(c->e, PLAN_CACHE_UNKNOWN, m->st.count * sizeof(*c->e));
}

/* A hit needs a cached verdict for every function this run analyses. */
static void install_cache_decide(struct agent_module *m, struct install_cache *c)
{
	c->hit = c->on;
	if (!c->on)
		return; /* todo may be NULL: nothing is analysed for the cache */
	for (size_t i = 0; i < m->st.count; i++) {
		c->todo[i] = 0;
		if (c->on && m->st.fns[i].status == ADA_HOOK_OK) {
			c->todo[i] = 1;
			c->hit = c->hit && c->e[i].status != PLAN_CACHE_UNKNOWN;
		}
	}
}

/* After a full analysis: this run's verdicts over the file's (a verdict
 * depends only on the image and its own bytes, not on which other
 * functions are candidates), written atomically. */
static void install_cache_store(struct agent_module *m, struct install_cache *c,
                                const struct hook_arch_plan *plans)
{
	for (size_t i = 0; i < m->st.count; i++) {
		if (!c->todo[i])
			continue;
		uint8_t s = m->st.fns[i].status;
		c->e[i].status = s;
		c->e[i].patch_len =
		    s != ADA_HOOK_OK
		        ? 0
		        : (uint8_t)(plans[i].patch_len | (plans[i].pad_addr ? PLAN_CACHE_PAD : 0));
	}
	plan_cache_store(c->path, &c->key, c->e, plans); /* best effort: a cache */
}

/* Verdicts, prepare and the xref check; from the cache when it has them.
 * Returns the candidate count, or SIZE_MAX and err on failure. */
static size_t install_analyse(struct agent_module *m, struct agent_plans *plans, int *err)
{
	struct install_cache c;
	uint64_t t0 = agent_now_ns();
	install_cache_open(m, &c, plans);
	uint64_t t1 = agent_now_ns();
	install_verdicts(m);
	m->ns_cache_load = t1 - t0;
	m->ns_verdicts = agent_now_ns() - t1;
	install_cache_decide(m, &c);
	size_t n = SIZE_MAX;
	/* Without an array the hit walks the file's records. */
	plans->e = c.hit && !plans->v ? c.e : NULL;
	if (c.hit) {
		uint8_t *saved = malloc(m->st.count ? m->st.count : 1);
		for (size_t i = 0; saved && i < m->st.count; i++)
			saved[i] = m->st.fns[i].status;
		n = saved ? install_prepare(m, plans, c.e, c.path) : SIZE_MAX;
		for (size_t i = 0; n == SIZE_MAX && saved && i < m->st.count; i++)
			m->st.fns[i].status = saved[i]; /* cache disagrees: full analysis */
		/* Not fitting the image: counted, analysed in full, rewritten. */
		agent.cache_rejected += n == SIZE_MAX;
		if (n == SIZE_MAX)
			memset(c.e, PLAN_CACHE_UNKNOWN, m->st.count * sizeof(*c.e));
		free(saved);
	}
	m->cache = !c.on ? AGENT_CACHE_OFF : n != SIZE_MAX ? AGENT_CACHE_HIT : AGENT_CACHE_MISS;
	*err = 0;
	if (n != SIZE_MAX && plans->e)
		c.e = NULL; /* kept by plans for install_emit() */
	if (n == SIZE_MAX) {
		plans->e = NULL;
		plan_cache_file_free(&plans->file);
		*err = plans->v ? 0 : agent_plans_array(m, plans);
	}
	if (n == SIZE_MAX && !*err) {
		install_par_used = install_par_failed = false;
		n = install_prepare(m, plans, NULL, NULL);
		uint64_t tx = agent_now_ns();
		/* The padding form needs the image's FDE table (padding is told
		 * from code by it). */
		struct discover_fde_table fdes;
		bool pad = agent.cfg.pad && discover_fde_table(m->base, m->lo, m->hi, &fdes) == 0;
		*err = discover_pad_and_xref(m->base, &m->st, pad ? &fdes : NULL, plans->v,
		                             install_run);
		for (size_t i = n = 0; i < m->st.count; i++)
			n += m->st.fns[i].status == ADA_HOOK_OK;
		m->ns_xref = agent_now_ns() - tx;
		m->par = install_par_used;
		agent.par_fallback += install_par_failed;
		if (!*err && c.on)
			install_cache_store(m, &c, plans->v);
	}
	free(c.e);
	free(c.todo);
	return *err ? SIZE_MAX : n;
}

/* Applies the patches and keeps them, with the original bytes, for ada
 * attach's detach and re-attach (each array is applied on its own:
 * hook_patch_apply() sorts it, so the two orders need not agree). */
static int install_patch_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct hook_patch *)a)->addr, y = ((const struct hook_patch *)b)->addr;
	return x < y ? -1 : x > y;
}

/* The start-up scan of a started program (not ada attach): one thread,
 * nothing but the agent has changed the address space since hook_mem read
 * /proc/self/maps, so the patches take their protections from that
 * snapshot (hook_patch_apply_pair given agent.mem) instead of reading it
 * per module. */
static bool install_startup;

static int install_apply(struct agent_module *m, struct hook_patch *patches,
                         struct hook_patch *undo, size_t np, struct hook_patch *pads, size_t n_pad)
{
	/* undo holds patches' addresses in patches' order: when patches is
	 * in address order already (symbol order is address order), the
	 * apply leaves it so and undo is too -- not read here (its pages are
	 * the kernel's copies, agent_stage.c, untouched at start-up). */
	size_t sorted = 1;
	while (sorted < np && install_patch_cmp(&patches[sorted - 1], &patches[sorted]) <= 0)
		sorted++;
	/* The padding's jumps first: no entry jumps to one before it is
	 * there (the agent's own calls between two writes, other threads in
	 * a dlopen rescan); one mprotect pair for both (hook_mem.h). */
	int err = install_startup ? agent_text_apply(m, pads, n_pad, patches, np)
	                          : hook_patch_apply_pair(NULL, pads, n_pad, patches, np);
	if (err)
		return err;
	m->pad = pads;
	m->n_pad = n_pad;
	/* patches is sorted by address now; undo the same way, so the two
	 * stay index for index (agent_attach.c's attach_drop_busy()). */
	if (sorted < np && undo)
		qsort(undo, np, sizeof(*undo), install_patch_cmp);
	m->patch = patches;
	m->undo = undo;
	m->n_patch = np;
	return 0;
}

/* One module between its analysis and its patches (install_new()). */
struct install_job {
	size_t mod; /* index in agent.mods (which may move while others are added) */
	struct agent_plans plans;
	struct hook_patch *patches, *undo, *pads;
	size_t n_cand;
	int err;
	bool analysed; /* symbols read: install_finish() has work */
};

/* m's symbol table: from the symbol-table cache when it holds the
 * mapped build's (symcache_internal.h), else read and stored there. The
 * cache follows the plan cache's switch and directory. */
static int install_symtab(struct agent_module *m)
{
	unsigned flags = m->is_main ? ADA_SYMTAB_FDE : 0;
	struct symtab_cache_key key = {.flags = flags, .agent_hash = agent.cache_agent_hash};
	if (agent.cfg.cache && agent.cache_agent_hash != 0 && agent.cache_dir[0] == '/')
		key.build_id_len =
		    symtab_cache_mem_build_id(m->lo, key.build_id, sizeof(key.build_id));
	if (key.build_id_len == 0) {
		m->symcache = AGENT_CACHE_OFF;
		return ada_hook_symtab_read_ex(m->path, agent.env.debug_root, flags, &m->st);
	}
	bool hit = false, refused = false;
	int err = symtab_cache_read(agent.cache_dir, m->path, agent.env.debug_root, &key, &m->st,
	                            &hit, &refused);
	m->symcache = hit ? AGENT_CACHE_HIT : AGENT_CACHE_MISS;
	agent.symcache_refused += refused;
	return err;
}

/* Symbols, verdicts, plans: everything but the trampolines and patches. */
static void install_analyse_module(struct install_job *j)
{
	struct agent_module *m = &agent.mods[j->mod];
	uint64_t t0 = agent_now_ns();
	/* Libraries keep .dynsym when stripped: their unnamed internals may
	 * switch stacks (greenlet's slp_switch) where no name tells. */
	j->err = install_symtab(m);
	if (j->err) {
		agent_log("cannot read the symbols of %s (%s); not traced", m->path,
		          strerror(-j->err));
		return;
	}
	/* A module without symbols (m->st.n_fde): agent.json's fde_functions,
	 * which ada's summary tells of (the program's stderr is its own). */
	j->analysed = true;
	uint64_t t1 = agent_now_ns();
	m->ns_symbols = t1 - t0;
	j->n_cand = install_analyse(m, &j->plans, &j->err);
	if (j->err)
		install_patch_failed(m, j->err); /* cannot prove them safe: hook none */
	m->ns_prepare = agent_now_ns() - t1;
}

/* Whether the patches and their original bytes are kept once applied:
 * for what writes either back -- ada attach's detach and re-attach, and
 * the overhead budget's moves. A started program recorded without a
 * budget has neither: its arrays are not kept, and the original bytes
 * not even copied (cc1's were 200 pages populated at every start,
 * 26 000 entries; a fork copied the kept ones' page entries). */
static bool install_keeps_patches(void)
{
	return agent.attached || agent.cfg.overhead_budget != 0;
}

/* Trampolines and patches of an analysed module; frees the job. The
 * patch arrays are allocated here, not with the plans: at start-up every
 * module's plans are kept until the last analysis ends, the patches
 * one module at a time. */
static int install_finish(struct install_job *j)
{
	struct agent_module *m = &agent.mods[j->mod];
	int err = j->err;
	bool keep = install_keeps_patches();
	if (!j->analysed)
		return err;
	if (!err) {
		/* One patch (and at most one padding jump) per function still
		 * a candidate: install_emit() makes no more. */
		size_t cap = 1;
		for (size_t i = 0; i < m->st.count; i++)
			cap += m->st.fns[i].status == ADA_HOOK_OK;
		/* Not zeroed: install_emit_patch() writes each entry whole,
		 * and only [0, np) and [0, n_pad) are read. The patches and
		 * their undo fill nearly all of theirs (populated in one call);
		 * the padding's jumps are a few dozen of libc's 3 474 entries,
		 * so its untouched pages are never faulted in (calloc cleared
		 * all three, 330 KB of libc's, at every exec'd start). */
		j->patches = malloc(cap * sizeof(*j->patches));
		j->undo = keep ? malloc(cap * sizeof(*j->undo)) : NULL;
		j->pads = malloc(cap * sizeof(*j->pads));
		if (j->patches)
			ada_fs_populate(j->patches, cap * sizeof(*j->patches));
		if (j->undo)
			ada_fs_populate(j->undo, cap * sizeof(*j->undo));
		if (!j->patches || (keep && !j->undo) || !j->pads) {
			err = -ENOMEM;
			install_patch_failed(m, err); /* as when the analysis had no memory */
		}
	}
	if (err)
		goto out;
	uint64_t t2 = agent_now_ns();
	size_t n_pad = 0;
	size_t np =
	    j->n_cand ? install_emit(m, &j->plans, j->n_cand, j->patches, j->undo, j->pads, &n_pad)
	              : 0;
	install_register_specials(m);
	err = hook_mem_seal(agent.mem);
	uint64_t t3 = agent_now_ns();
	if (!err && np)
		err = install_apply(m, j->patches, j->undo, np, j->pads, n_pad);
	m->ns_emit = t3 - t2;
	m->ns_apply = agent_now_ns() - t3;
	if (err) {
		agent_attach_unplace(m->lo, m->hi); /* its trampolines stay unused */
		install_patch_failed(m, err);
	} else if (!keep) {
		m->patch = m->undo = m->pad = NULL; /* freed below: nothing writes them back */
		m->n_patch = m->n_pad = 0;
	} else {
		j->patches = j->undo = j->pads = NULL; /* kept by m */
	}
out:
	agent_install_count(m);
	agent_plans_free(&j->plans);
	free(j->patches);
	free(j->undo);
	free(j->pads);
	m->ns_patching = m->ns_prepare + m->ns_emit + m->ns_apply;
	return err;
}

static int install_ignore(const struct discover_image *im)
{
	for (size_t i = 0; i < agent.n_ign; i++) {
		if (!strcmp(agent.ign[i].path, im->path))
			return 0;
	}
	if (agent.n_ign == agent.cap_ign) {
		size_t nc = agent.cap_ign ? 2 * agent.cap_ign : 8;
		void *nv = realloc(agent.ign, nc * sizeof(*agent.ign));
		if (!nv)
			return -ENOMEM;
		agent.ign = nv;
		agent.cap_ign = nc;
	}
	agent.ign[agent.n_ign].path = strdup(im->path);
	agent.ign[agent.n_ign].why = im->why;
	agent.n_ign += agent.ign[agent.n_ign].path != NULL;
	return 0;
}

static struct agent_module *install_find(const struct discover_image *im)
{
	for (size_t i = 0; i < agent.n_mods; i++) {
		struct agent_module *m = &agent.mods[i];
		if (!m->gone && m->base == im->base && m->lo == im->lo &&
		    !strcmp(m->path, im->path))
			return m;
	}
	return NULL;
}

static struct agent_module *install_add(const struct discover_image *im)
{
	if (agent.n_mods == agent.cap_mods) {
		size_t nc = agent.cap_mods ? 2 * agent.cap_mods : 16;
		void *nv = realloc(agent.mods, nc * sizeof(*agent.mods));
		if (!nv)
			return NULL;
		agent.mods = nv;
		agent.cap_mods = nc;
	}
	struct agent_module *m = &agent.mods[agent.n_mods];
	memset(m, 0, sizeof(*m));
	m->path = strdup(im->path);
	if (!m->path)
		return NULL;
	m->id = agent.next_id++;
	m->base = im->base;
	m->lo = im->lo;
	m->hi = im->hi;
	m->present = true;
	m->wanted = ada_hook_config_module_wanted(&agent.cfg, im->path);
	m->is_main = im->is_main;
	agent.n_mods++;
	return m;
}

/* Modules no longer mapped (dlclose): their trampolines go, and a later
 * load at the same address is a new module. The entry stays (gone) so that
 * agent.json keeps describing every module id events may carry. */
static void install_forget_gone(void)
{
	for (size_t i = 0; i < agent.n_mods; i++) {
		struct agent_module *m = &agent.mods[i];
		if (m->present || m->gone)
			continue;
		agent_tmap_retire(m->id);
		hook_mem_release_module(agent.mem, m->id);
		m->gone = true;
	}
}

/* Test hook (e2e.detail_set_dlwindow): ADA_TEST_DL_PAUSE=W,R in the
 * environment the program starts with makes the first later scan, once a
 * new module's patches are live, write one byte to fd W and wait for one
 * on fd R, so that the program's other thread calls into that module at
 * that moment, deterministically. Read at the start-up scan (before the
 * program runs: no getenv() while its threads may change the
 * environment). */
static void install_test_pause(bool later)
{
	static int w = -1, r = -1;
	static bool read_env, paused; /* under agent.lock */
	if (!read_env) {
		const char *v = secure_getenv("ADA_TEST_DL_PAUSE");
		read_env = true;
		if (!v || sscanf(v, "%d,%d", &w, &r) != 2)
			w = r = -1;
	}
	char c = 'a';
	if (!later || paused || w < 0 || write(w, &c, 1) != 1)
		return;
	paused = true;
	while (read(r, &c, 1) < 0 && errno == EINTR) /* EOF or an error: go on */
		;
}

/* Every scan analyses every new module before it patches any. At start-up
 * with --analysis-threads 2 (agent.par_analysis), a helper thread may
 * share the analysis (install_prepare_full()) while no patch exists, so
 * nothing it runs, libc included, can be traced. Not by default, and not
 * in later scans (dlopen, ada attach): once a second thread has existed
 * glibc treats the process as multi-threaded for good (its stdio and
 * malloc take locks, its write() enters and leaves the cancellation
 * state), so the program's own libc calls would differ between a cold and
 * a warm run. Between the analyses and the first patch, the detail lane's
 * own set is rebuilt over the new modules (their symbols are read by
 * then): a call into a module from another thread the moment its
 * trampolines go live is judged by rules that cover it, never by a set
 * built before the module existed (docs/internals.md). Returns true when
 * it rebuilt that set. */
static bool install_new(const struct discover_image *v, size_t n)
{
	struct install_job *jobs = calloc(n ? n : 1, sizeof(*jobs));
	size_t nj = 0;
	bool built = false, later = agent.n_mods > 0 && !agent.attached;
	if (!later)
		install_test_pause(false); /* the start-up scan: reads its setting only */
	agent.par_analysis =
	    jobs && agent.n_mods == 0 && !agent.attached && agent.cfg.analysis_threads > 1;
	install_startup = agent.n_mods == 0 && !agent.attached;
	/* Before the program runs: no other thread can close or reuse the
	 * cache directory's descriptor the memo keeps (fs.h). */
	if (install_startup) {
		ada_fs_memo_begin();
		hook_seccomp_window(true); /* nothing of the program has run */
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].skip != ADA_HOOK_OK) {
			install_ignore(&v[i]);
			continue;
		}
		if (install_find(&v[i]))
			continue;
		struct agent_module *m = install_add(&v[i]);
		if (!m)
			break;
		struct install_job one = {.mod = (size_t)(m - agent.mods)};
		struct install_job *j = jobs ? &jobs[nj++] : &one;
		*j = one;
		install_analyse_module(j);
		if (!jobs) { /* no memory for the jobs: one module at a time, its set first */
			if (agent_hot.detail_on)
				agent_detail_set_update();
			built = true;
			install_finish(j);
			install_test_pause(later);
		}
	}
	ada_fs_memo_end(); /* every cache file is read by now */
	install_helper_stop();
	agent.par_analysis = false;
	if (nj) {
		if (agent_hot.detail_on)
			agent_detail_set_update();
		built = true;
	}
	for (size_t k = 0; k < nj; k++) {
		install_finish(&jobs[k]);
		install_test_pause(later);
	}
	install_startup = false;
	hook_seccomp_window(false);
	free(jobs);
	return built;
}

size_t agent_scan(void)
{
	struct discover_image *v = NULL;
	size_t n = 0;
	uint64_t t0 = agent_now_ns();
	int err = discover_images((uint64_t)&agent_scan, &v, &n);
	agent.ns_discovery += agent_now_ns() - t0;
	if (err) {
		agent_log("cannot list the loaded images (%s); nothing is traced", strerror(-err));
		return agent.n_mods;
	}
	for (size_t i = 0; i < agent.n_mods; i++)
		agent.mods[i].present = false;
	for (size_t i = 0; i < n; i++) {
		struct agent_module *m = install_find(&v[i]);
		if (m)
			m->present = true;
	}
	install_forget_gone();
	size_t first_new = agent.n_mods;
	bool built = install_new(v, n);
	for (size_t i = first_new; i < agent.n_mods; i++) {
		agent.ns_symbols += agent.mods[i].ns_symbols;
		agent.ns_patching += agent.mods[i].ns_patching;
	}
	free(v);
	if (agent_hot.detail_on && !built) /* modules gone only */
		agent_detail_set_update();
	return first_new;
}

int agent_make_return_trampoline(void)
{
	uint8_t *buf;
	uint64_t self = (uint64_t)&agent_make_return_trampoline;
	/* Module id 0 ("unknown") owns the agent's own code memory. */
	int err =
	    hook_mem_alloc(agent.mem, 0, self, self + 1, HOOK_ARCH_RETURN_TRAMPOLINE_MAX, &buf);
	if (err)
		return err;
	/* The fast form too (side-path frames and frames re-armed after a
	 * catch return here), with the lane's handlers behind it. */
	struct hook_arch_fast fl;
	agent_fast_layout(&fl);
	if (hook_arch_emit_return_trampoline_fast(buf, (uint64_t)buf, &fl) == 0)
		return -EINVAL;
	agent_hot.ret_tramp = (uint64_t)buf;
	return hook_mem_seal(agent.mem);
}
