/*
 * Count-only functions (docs/hooks.md, "Count-only functions"): a
 * function whose patch jumps to a count block (x86_64/x86_emit_count.c)
 * adds 1 to a counter of the calling thread's own and runs, writing no
 * event. The counters are pages of the thread's own, reached through
 * initial-exec TLS (struct agent_count_tls), so counting takes no lock, no
 * atomic and no shared cache line.
 *
 * A thread counts once it is registered (its first traced call,
 * agent_thread_started) and while the agent does no work of its own on it
 * (agent_guard_enter/leave): `gate` is then exactly 1. Before, a call goes
 * through the function's full trampoline and is recorded as an event (or
 * counted as untraced, as any call during the agent's work): events plus
 * counts are every call.
 *
 * Reading the counts: every registered thread has an entry in count_reg
 * (its block's address). A thread that ends adds its counts into
 * count_dead and frees its entry; the final sum (at exit) takes each
 * live entry, reads that block and marks it done, then adds count_dead.
 * The two meet by a compare-and-swap on the entry, so a thread ending
 * while the process exits is counted once: by whichever took its entry
 * first. Until the final sum, agent.json carries a live snapshot: every
 * live block frozen, count_dead and the frozen blocks read, the blocks
 * put back (countreg_internal.h: the protocol, and why it counts each
 * thread once); the agent's thread (the budget's, or with --count-only
 * alone one for this only: agent_budget.c) rewrites agent.json when it
 * changed, at most once a second (agent_count_live_changed).
 *
 * Threads: agent_count_thread_start/exit in the thread itself (the
 * handlers' cold path; the thread-exit destructor); the rest under
 * agent.lock.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif

#include "agent_internal.h"

/* A waiter's pause: relaxes first, then yields (the holder is a thread of
 * the agent's own, the budget thread or the exiting process's). */
#define COUNTREG_PAUSE(spin)                                                                       \
	do {                                                                                       \
		if ((spin) < 64)                                                                   \
			hook_arch_cpu_relax();                                                     \
		else                                                                               \
			hook_arch_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);                     \
	} while (0)
#include "countreg_internal.h"
#include "ring.h"

__thread struct agent_count_tls agent_count_tls __attribute__((tls_model("initial-exec")));

static _Atomic uintptr_t count_reg[AGENT_COUNT_THREADS];
static _Atomic uint64_t count_dead[AGENT_COUNT_SLOTS];
static _Atomic uint32_t count_hint;
static _Atomic uint64_t count_unregistered;
/* A thread's counters' mapping: HOOK_ARCH_COUNT_GS_TAG, then the
 * AGENT_COUNT_SLOTS counters (agent_count_tls.n points at the first). */
#define COUNT_MAP_BYTES (8u + AGENT_COUNT_SLOTS * 8u)

/* Slots handed out (under agent.lock; read by exiting threads). */
static _Atomic uint32_t count_used;
static struct agent_count_fn count_fns[AGENT_COUNT_SLOTS];
static uint64_t count_over; /* wanted count-only, no slot left */
static bool count_final_done, count_exiting;

/* x86_64: whether count blocks reach the counters through %gs (one `add
 * gs:[8*slot], 1`, no register to keep) instead of the TLS pointer. The
 * %gs base is free in Linux programs (glibc keeps TLS in %fs); a thread
 * points it at its counters when it registers. Decided once, by the first
 * block emitted or thread registered, whichever comes first: gs is used
 * when that thread's %gs base is 0 (a program that uses %gs for itself
 * keeps the pointer form). 0 undecided, 1 gs, 2 the pointer. */
static _Atomic uint32_t count_gs_mode;

static bool count_gs(void)
{
	/* Relaxed: the decision's one word; the CAS below makes the first
	 * decision the only one (its readers need nothing else it wrote). */
	uint32_t m = atomic_load_explicit(&count_gs_mode, memory_order_relaxed);
	if (m)
		return m == 1;
#if defined(__x86_64__)
	unsigned long base = 1;
	long r =
	    hook_arch_syscall6(SYS_arch_prctl, ARCH_GET_GS, (long)(uintptr_t)&base, 0, 0, 0, 0);
	uint32_t want = r == 0 && base == 0 && agent.cfg.count_gs ? 1 : 2;
#else
	uint32_t want = 2;
#endif
	uint32_t none = 0;
	if (!atomic_compare_exchange_strong_explicit(&count_gs_mode, &none, want,
	                                             memory_order_relaxed, memory_order_relaxed))
		return none == 1;
	return want == 1;
}

#if defined(__x86_64__)
/* Points the calling thread's %gs base at its counters n: the count
 * blocks' %gs:8*slot from here on (its gate, raised after this, is what
 * lets a block use them). A thread starts with its creator's base, which
 * is 0 or a registered thread's counters (found in count_reg); any other
 * is the program's own use of %gs, left alone: false, the thread's calls
 * stay events. */
static bool count_gs_set(uint64_t *n)
{
	unsigned long cur = 0;
	if (hook_arch_syscall6(SYS_arch_prctl, ARCH_GET_GS, (long)(uintptr_t)&cur, 0, 0, 0, 0))
		return false;
	bool ours = cur == 0 || cur == (uintptr_t)n;
	/* Relaxed: a registered thread's entry holds its block's address
	 * until it exits; a stale miss only leaves this thread uncounted. */
	for (uint32_t i = 0; i < AGENT_COUNT_THREADS && !ours; i++)
		ours = countreg_block(atomic_load_explicit(&count_reg[i], memory_order_relaxed)) ==
		       cur;
	return ours &&
	       hook_arch_syscall6(SYS_arch_prctl, ARCH_SET_GS, (long)(uintptr_t)n, 0, 0, 0, 0) == 0;
}
#endif

/* Whether any function may be count-only (threads need counters). */
ADA_FORK_PATH static bool count_wanted(void)
{
	return agent.cfg.n_count_only || agent.cfg.overhead_budget;
}

void agent_count_thread_start(void)
{
	struct agent_count_tls *t = &agent_count_tls;
	if (t->reg || !count_wanted())
		return;
	if (!t->n) { /* a raw system call: the handlers' cold path calls no libc here */
		long p = hook_arch_syscall6(SYS_mmap, 0, COUNT_MAP_BYTES, PROT_READ | PROT_WRITE,
		                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p < 0 && p > -4096) {
			/* Relaxed: a counter to show, ordered with nothing. */
			atomic_fetch_add_explicit(&count_unregistered, 1, memory_order_relaxed);
			return;
		}
		/* The tag first, the counters after it: gs:[-8] (hook_arch.h). */
		((uint64_t *)p)[0] = HOOK_ARCH_COUNT_GS_TAG;
		t->n = (uint64_t *)p + 1;
	}
#if defined(__x86_64__)
	if (count_gs() && !count_gs_set(t->n)) {
		/* Relaxed: a counter to show, ordered with nothing. */
		atomic_fetch_add_explicit(&count_unregistered, 1, memory_order_relaxed);
		return;
	}
#endif
	/* Relaxed: a hint where to start looking; any value works. */
	uint32_t h = atomic_load_explicit(&count_hint, memory_order_relaxed);
	for (uint32_t k = 0; k < AGENT_COUNT_THREADS; k++) {
		uint32_t i = (h + k) & (AGENT_COUNT_THREADS - 1);
		uintptr_t z = 0;
		/* Relaxed: the block is this thread's; nobody reads it until the
		 * final sum, which runs after this thread's counts (agent.lock
		 * and the exit's own ordering). */
		if (atomic_compare_exchange_strong_explicit(&count_reg[i], &z, (uintptr_t)t->n,
		                                            memory_order_relaxed,
		                                            memory_order_relaxed)) {
			t->reg = i + 1;
			atomic_store_explicit(&count_hint, i + 1, memory_order_relaxed);
			t->gate += 1;
			return;
		}
	}
	/* The table is full: this thread's count-only calls stay events. */
	atomic_fetch_add_explicit(&count_unregistered, 1, memory_order_relaxed);
}

static void count_flush(uint64_t *n)
{
	uint32_t used = atomic_load_explicit(&count_used, memory_order_acquire);
	for (uint32_t c = 0; c < used && c < AGENT_COUNT_SLOTS; c++) {
		/* Relaxed: published by the release store that frees the
		 * thread's registry entry (its partners: count_sum_final's
		 * acquire, countreg_freeze's). */
		if (n[c])
			atomic_fetch_add_explicit(&count_dead[c], n[c], memory_order_relaxed);
		n[c] = 0;
	}
}

/* The thread's pages go once nobody reads them (its gate is down: no count
 * block touches it either). */
static void count_unmap(struct agent_count_tls *t)
{
	uint64_t *n = t->n - 1; /* the tag's qword starts the mapping */
	t->n = NULL;
	hook_arch_syscall6(SYS_munmap, (long)(uintptr_t)n, COUNT_MAP_BYTES, 0, 0, 0, 0);
}

void agent_count_thread_exit(void)
{
	struct agent_count_tls *t = &agent_count_tls;
	if (!t->reg)
		return;
	uint32_t i = t->reg - 1;
	t->reg = 0;
	t->gate -= 1; /* later calls (glibc's teardown) take the full path */
	switch (countreg_exit_take(&count_reg[i], (uintptr_t)t->n)) {
	case COUNTREG_EXIT_FLUSH:
		count_flush(t->n);
		countreg_exit_done(&count_reg[i]); /* count_dead has its counts */
		count_unmap(t);
		return;
	case COUNTREG_EXIT_READ: /* the final sum read them */
		count_unmap(t);
		return;
	case COUNTREG_EXIT_KEEP: /* its reader held it for seconds: it reads them later */
		t->n = NULL;
		return;
	}
}

ADA_FORK_PATH void agent_count_after_fork(void)
{
	/* Stored only when set: a store copies the page (a fault) even
	 * when it writes what is there. */
	if (count_final_done)
		count_final_done = false;
	if (count_exiting)
		count_exiting = false;
	/* Without count-only functions no thread registered and nothing was
	 * counted: even reading the tables (36 KiB the parent never touched)
	 * would fault their pages in, in every forked child. */
	if (!count_wanted())
		return;
	/* The child's one thread: the parent's counts are the parent's
	 * (relaxed: no other thread exists to order with). Only what is set
	 * is cleared: a store to each entry would copy (or allocate) the
	 * tables' pages in every forked child. */
	for (uint32_t i = 0; i < AGENT_COUNT_THREADS; i++)
		if (atomic_load_explicit(&count_reg[i], memory_order_relaxed))
			atomic_store_explicit(&count_reg[i], 0, memory_order_relaxed);
	for (uint32_t c = 0; c < AGENT_COUNT_SLOTS; c++)
		if (atomic_load_explicit(&count_dead[c], memory_order_relaxed))
			atomic_store_explicit(&count_dead[c], 0, memory_order_relaxed);
	atomic_store_explicit(&count_unregistered, 0, memory_order_relaxed);
	struct agent_count_tls *t = &agent_count_tls;
	/* Relaxed: no other thread exists to order with. Only the slots in
	 * use: the rest of the pages were never written (nor copied). */
	uint32_t used = atomic_load_explicit(&count_used, memory_order_relaxed);
	if (t->n)
		memset(t->n, 0, (used < AGENT_COUNT_SLOTS ? used : AGENT_COUNT_SLOTS) * 8);
	if (t->reg) {
		t->reg = 1;
		atomic_store_explicit(&count_reg[0], (uintptr_t)t->n, memory_order_relaxed);
	}
}

int agent_count_assign(uint64_t fn_id, uint64_t moved_ns, uint64_t calls_per_s, uint64_t mean_ns)
{
	/* Relaxed: only writers (under agent.lock) read it here. */
	uint32_t c = atomic_load_explicit(&count_used, memory_order_relaxed);
	if (c >= AGENT_COUNT_SLOTS) {
		count_over++;
		return -1;
	}
	count_fns[c] = (struct agent_count_fn){fn_id, moved_ns, calls_per_s, mean_ns, false};
	/* Release: pairs with count_flush's acquire (the slot's entry is
	 * written before a thread may flush a counter for it). */
	atomic_store_explicit(&count_used, c + 1, memory_order_release);
	return (int)c;
}

bool agent_count_sites(void)
{
	/* Relaxed: written under agent.lock, read under it (or by ada
	 * attach's start, after the scan that assigned the slots). */
	return atomic_load_explicit(&count_used, memory_order_relaxed) != 0;
}

bool agent_count_room(void)
{
	/* Relaxed: only writers (under agent.lock) read it here. */
	if (atomic_load_explicit(&count_used, memory_order_relaxed) < AGENT_COUNT_SLOTS)
		return true;
	count_over++;
	return false;
}

void agent_count_recalled(int c)
{
	if (c >= 0 && c < (int)AGENT_COUNT_SLOTS)
		count_fns[c].recalled = true;
}

uint32_t agent_count_budget_ids(uint64_t *ids, uint32_t cap)
{
	/* Relaxed: only writers (under agent.lock) read it here. */
	uint32_t used = atomic_load_explicit(&count_used, memory_order_relaxed), n = 0;
	for (uint32_t c = 0; c < used && c < AGENT_COUNT_SLOTS && n < cap; c++)
		if (count_fns[c].moved_ns || count_fns[c].recalled)
			ids[n++] = count_fns[c].fn_id;
	return n;
}

bool agent_count_has(uint64_t fn_id)
{
	/* Relaxed: only writers (under agent.lock) read it here. */
	uint32_t used = atomic_load_explicit(&count_used, memory_order_relaxed);
	for (uint32_t c = 0; c < used && c < AGENT_COUNT_SLOTS; c++)
		if (count_fns[c].fn_id == fn_id)
			return true;
	return false;
}

void agent_count_offsets(int32_t *gate, int32_t *counters)
{
	uintptr_t tp = hook_arch_thread_pointer();
	/* Initial-exec TLS: the same offsets from every thread's pointer. */
	*gate = (int32_t)((intptr_t)(uintptr_t)&agent_count_tls.gate - (intptr_t)tp);
	*counters = count_gs() ? HOOK_ARCH_COUNT_GS
	                       : (int32_t)((intptr_t)(uintptr_t)&agent_count_tls.n - (intptr_t)tp);
}

size_t agent_count_copy_avail(const struct agent_module *m, size_t i)
{
	if (!agent.cfg.count_copy || i >= m->st.count)
		return 0;
	const struct ada_hook_fn *f = &m->st.fns[i];
	uint64_t n = f->size;
	/* Sorted by offset (symbols.c): the first other start after it. */
	for (size_t j = i + 1; j < m->st.count; j++) {
		if (m->st.fns[j].offset == f->offset)
			continue; /* an alias */
		if (m->st.fns[j].offset - f->offset < n)
			n = m->st.fns[j].offset - f->offset;
		break;
	}
	return n < HOOK_ARCH_COUNT_COPY_SPAN ? (size_t)n : HOOK_ARCH_COUNT_COPY_SPAN;
}

/* The final sum: every live block taken and read, then count_dead. */
static void count_sum_final(uint64_t *out, uint32_t used)
{
	countreg_sum_final(count_reg, AGENT_COUNT_THREADS, count_dead, used, out);
}

/* The live snapshot (countreg_internal.h; under agent.lock, so never with
 * the final sum). out: AGENT_COUNT_SLOTS counters. */
static void count_sum_live(uint64_t *out, uint32_t used)
{
	static uint16_t frozen[AGENT_COUNT_THREADS];
	countreg_sum_live(count_reg, AGENT_COUNT_THREADS, count_dead, used, out, frozen);
}

/* The function's name from its module's symbol table ("" if gone). */
const char *agent_count_fn_name(uint64_t fn_id)
{
	for (size_t i = 0; i < agent.n_mods; i++) {
		const struct agent_module *m = &agent.mods[i];
		if (m->id == (uint32_t)(fn_id >> 32) && (fn_id & 0xffffffffu) < m->st.count &&
		    m->st.names)
			return m->st.names + m->st.fns[fn_id & 0xffffffffu].name_off;
	}
	return "";
}

ADA_FORK_PATH bool agent_count_any(void)
{
	/* Relaxed: read under agent.lock, as it is written. */
	return atomic_load_explicit(&count_used, memory_order_relaxed) || count_over ||
	       agent.cfg.overhead_budget;
}

void agent_count_exiting(void)
{
	count_exiting = true;
}

bool agent_count_is_exiting(void)
{
	return count_exiting;
}

/* The process's CPU time so far (all its threads): what the recorder
 * weighs the counts' cost against (exclude_hint.c). 0 if unknown. */
static uint64_t count_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What agent.json's last live snapshot said (count_live_used slots). */
static uint64_t count_live_sums[AGENT_COUNT_SLOTS];
static uint32_t count_live_used;

bool agent_count_live_changed(void)
{
	/* Acquire: pairs with agent_count_assign's release (as in
	 * agent_count_json). */
	uint32_t used = atomic_load_explicit(&count_used, memory_order_acquire);
	if (count_final_done || !used)
		return false;
	static uint64_t now[AGENT_COUNT_SLOTS];
	count_sum_live(now, used);
	return used != count_live_used || memcmp(now, count_live_sums, used * sizeof(*now)) != 0;
}

void agent_count_json(FILE *f)
{
	bool final = count_exiting;
	if (!agent_count_any())
		return;
	uint64_t *sums = count_live_sums; /* the final sum's too, once taken */
	uint32_t used = atomic_load_explicit(&count_used, memory_order_acquire);
	if (final && !count_final_done) {
		memset(sums, 0, sizeof(count_live_sums));
		count_sum_final(sums, used);
		count_final_done = true;
	} else if (!count_final_done) {
		count_sum_live(sums, used);
		count_live_used = used;
	}
	fprintf(f,
	        ",\n  \"count_only\": {\"final\": %s, \"capacity\": %u, \"over_capacity\": %" PRIu64
	        ", \"threads_uncounted\": %" PRIu64
	        ", \"overhead_budget_pct\": %u, \"not_movable\": %" PRIu64
	        ", \"event_cost_ps\": %" PRIu64 ", \"cpu_ns\": %" PRIu64 ", \"functions\": [",
	        count_final_done ? "true" : "false", AGENT_COUNT_SLOTS, count_over,
	        atomic_load_explicit(&count_unregistered, memory_order_relaxed),
	        agent.cfg.overhead_budget, agent_budget_not_movable(), agent_budget_event_ps(),
	        count_cpu_ns());
	/* Only the functions called (or moved by the budget) are listed: a
	 * `--count-only '*'` process has thousands that never ran, and each
	 * fork child rewrote them all (~300 KB of agent.json, 450 KB of
	 * manifest a subshell). The others are counted in uncalled, the
	 * recalled ones among all in recalled, so nothing is silent. */
	uint32_t listed = 0, uncalled = 0, recalled = 0;
	for (uint32_t c = 0; c < used; c++) {
		const struct agent_count_fn *e = &count_fns[c];
		recalled += e->recalled;
		if (!sums[c] && !e->moved_ns) {
			uncalled++;
			continue;
		}
		fprintf(f, "%s\n    {\"id\": %" PRIu64 ", \"name\": ", listed++ ? "," : "",
		        e->fn_id);
		agent_json_string(f, agent_count_fn_name(e->fn_id));
		fprintf(f, ", \"calls\": %" PRIu64 ", \"moved\": \"%s\"", sums[c],
		        e->recalled   ? "recalled"
		        : e->moved_ns ? "budget"
		                      : "start");
		if (e->moved_ns)
			fprintf(f,
			        ", \"moved_after_ms\": %" PRIu64 ", \"calls_per_s\": %" PRIu64
			        ", \"mean_ns\": %" PRIu64,
			        e->moved_ns / 1000000, e->calls_per_s, e->mean_ns);
		fputc('}', f);
	}
	fprintf(f, "], \"uncalled\": %" PRIu32 ", \"recalled\": %" PRIu32, uncalled, recalled);
	if (agent.cfg.overhead_budget)
		agent_budget_memory_json(f);
	fputc('}', f);
}
