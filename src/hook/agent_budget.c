/*
 * --overhead-budget PCT (docs/hooks.md, "Overhead budget"): a thread of
 * the agent's own that measures what tracing costs each traced thread and
 * moves the hottest short functions to count-only while it costs more
 * than PCT % of the thread's CPU time.
 *
 * Each tick (10 ms, then twice as long each time up to 100 ms; 10 ms again
 * after a tick that moved functions; at once when the wake-up every 10 ms
 * sees a ring's head run far ahead: budget_look) it reads, per ring slot, the events
 * the thread wrote (the ring's head), the time it waited for ring space (the slot's wait counters)
 * and the thread's CPU time (/proc/self/task/TID/schedstat). The cost is events x a per-event cost,
 * calibrated at start (a loop of the index lane's emit into a private ring: what a CALL or RETURN
 * costs the thread on this machine, and as much again for the recorder's drain of it), plus the
 * waits; the thread's time is its CPU time plus those waits (it would have run meanwhile). A thread
 * over budget has its last 8192 events sampled (ada_index_ring_recent): calls per function and,
 * from the CALL/RETURN pairs in the sample, mean durations. Functions shorter than 2 us on average
 * are moved, the most called first, until the share of the sample they wrote covers the excess.
 * The threads no tick judged alone (a thread per request lives through fewer than two ticks) are
 * judged together (struct budget_rest): the heads' moves of their slots against the process's CPU
 * time less the judged threads' and the budget thread's own.
 *
 * A move is a count block (x86_64/x86_emit_count.c, arm64/a64_count.c;
 * x86_64: the inline form, the prologue relocated into it, as the
 * install's) emitted into new trampoline memory near the function's module and the
 * function's patch re-aimed at it (hook_arch_patch_bytes): only the
 * branch's displacement changes, one atomic store when it lies in one
 * aligned word (HOOK_ARCH_PATCH_REAIM_ATOMIC: x86_64's rel32 at an entry
 * whose low three bits are 0..3, every 16-byte aligned one; arm64's `b`
 * always, its far form never); others are not moved (`not_movable`). A call runs either the old jmp
 * (an event, through the trampoline) or the new one (counted): each call
 * is in exactly one of the two, so events before + counts after are
 * exact. The trampoline stays, so frames open at the move return through
 * it as before. Publishing is the patch store itself; the counter slot is
 * published (agent_count_assign's release) before the patch.
 *
 * What a run moved is remembered per image (budgetmem.c: by build-id,
 * beside the plan cache, private to the user, checked as untrusted input
 * when read): the next run under a budget installs those functions
 * count-only from the start (agent_budget_recall, from agent_install.c),
 * so a short program pays for them neither until the first tick nor for
 * the events before it. Their manifest entries say "recalled". A move is
 * due for that file in the same hold of agent.lock as the move
 * (budget_apply); the exit takes the lock, ends the thread and writes
 * what is due, so a program ending right after a move still has it
 * remembered. What the recall found and the stores did is counted
 * (count_only.budget_memory in agent.json).
 *
 * With --count-only and no budget the same thread keeps only agent.json's
 * live counts (budget_live_main: a look a second, no tick, no
 * calibration), when the start-up scan made a function count-only, so
 * that ada status shows a running program's counts so far; count-live=0
 * starts none.
 *
 * A forked child gets a budget thread of its own (the parent's is not
 * copied by fork), calibrated by the parent. Under ada attach the thread
 * lives from the attach to the detach: ada_agent_detach() bumps the
 * generation under agent.lock, so no move happens once the patches are
 * gone, and the thread ends at its next tick.
 *
 * Threads: its own; moves under agent.lock (as dlopen rescans).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#include "agent_internal.h"
#include "budgetmem_internal.h"
#include "clock.h"
#include "ring.h"

/* The first tick comes after 10 ms and each next one twice as late, up
 * to 100 ms: a short program's hot functions move in its first tens of
 * milliseconds, while later ticks cost the program little. A tick that
 * moved functions starts the series again: the program has entered a
 * phase with hot functions of its own, and each 100 ms it waits costs it
 * their events at full rate. */
#define BUDGET_TICK_FIRST_NS 10000000ull
#define BUDGET_TICK_NS 100000000ull
/* Between ticks the thread looks at the ring heads every
 * BUDGET_TICK_FIRST_NS, or this often once BUDGET_QUIET_LOOKS looks in a
 * row saw no head move. */
#define BUDGET_WAKE_QUIET_NS 50000000ull
#define BUDGET_QUIET_LOOKS 5u
#define BUDGET_SAMPLE 8192u
#define BUDGET_SHORT_NS 2000u /* "short": a mean duration below this */
#define BUDGET_MOVES_TICK 16u /* moves per thread and tick, at most ... */
#define BUDGET_MOVES_FAR 256u /* ... or this many when over twice its budget */
/* agent.json and the remembered moves are rewritten after moves at most
 * this often (and at exit): each rewrite of agent.json lists every
 * count-only function, and a first run moves functions in many ticks in
 * a row (python's: about fifteen; the rewrites were a third of the budget
 * thread's CPU, docs/benchmarks.md). */
#define BUDGET_FILES_NS 250000000ull
/* The counts of the threads still running go to agent.json (for ada
 * status) at most this often, and only when they changed: a live
 * snapshot cost 4-6 us, a rewrite about 0.1 ms (docs/hooks.md, "Live
 * counts"). */
#define BUDGET_LIVE_NS 1000000000ull
/* A thread that ran less than a tenth of the tick is not judged. */
#define BUDGET_MIN_CPU_DIV 10u
#define BUDGET_FNS 1024u /* distinct functions tallied per sample */
/* budget_wait_born's bound: past it the thread starts traced, as a
 * program's thread (it claims a ring slot), and the program goes on. */
#define BUDGET_BORN_WAIT_NS 50000000ull

struct budget_slot {
	uint32_t generation, tid;
	uint64_t head, waited_ns, cpu_ns;
	bool seen;
	/* The slot's head at the last tick whoever owned it (heads are never
	 * reset: a slot's next owner goes on from it), for the rest
	 * (budget_rest); any_seen: any_head is known. */
	uint64_t any_head;
	bool any_seen;
	/* The head at the last budget_look (every wake-up); check_seen:
	 * check_head is known. */
	uint64_t check_head;
	bool check_seen;
};

/* The threads no tick judged on their own this tick (each lived through
 * fewer than two ticks, or ran less than a tenth of one: a thread per
 * request), judged together: their events (the heads' moves of their
 * slots) against their CPU time (the process's, less the judged threads'
 * and the budget thread's own). Sampled from the ring whose head moved
 * most among theirs. */
struct budget_rest {
	uint64_t events, judged_cpu_ns;
	uint64_t top_events, top_head;
	uint32_t top_slot;
};

struct budget_fn {
	uint64_t fn_id, calls, dur_sum, dur_n;
};

/* What the budget's memory did in this process (agent.json's
 * count_only.budget_memory): each module's recall at its install, each
 * store of its moves. Under agent.lock. */
struct budget_memstat {
	uint32_t read;       /* files of this table used */
	uint32_t absent;     /* no file: the image's first run under a budget, or no move */
	uint32_t stale;      /* a sound file of another symbol table (-ESTALE) */
	uint32_t corrupt;    /* not a file budgetmem.c wrote, or damaged (-EBADMSG) */
	uint32_t untrusted;  /* a place or file another user could change */
	uint32_t unreadable; /* any other error; the last in err */
	int err;
	uint32_t no_build_id; /* modules with functions and no build-id: never remembered */
	uint32_t written, write_failed; /* stores; the last failure's errno */
	int write_err;
};

static struct {
	pthread_t thread;
	uint64_t start_ns, event_ps; /* per-event cost, picoseconds */
	uint64_t raw_per_ns_milli;   /* ring timestamp units per ns, x1000 */
	uint64_t not_movable, moves;
	bool debug;            /* ADA_BUDGET_DEBUG: one line per judged thread on stderr */
	bool test_hold;        /* ADA_TEST_BUDGET_HOLD: budget_test_hold */
	bool running;          /* a budget thread was started in this process */
	_Atomic uint32_t born; /* 1 once the budget thread holds its guard (budget_spawn) */
	_Atomic uint32_t gen;  /* the running thread's; a stop or a fork bumps it */
	struct budget_slot *slots;
	uint32_t nslots;
	uint64_t proc_cpu_ns, self_cpu_ns; /* at the last tick (budget_judge_rest) */
	bool proc_seen;
	struct atf_index_event sample[BUDGET_SAMPLE];
	struct budget_fn fns[BUDGET_FNS];
	/* Moves prepared by budget_move, applied together (budget_apply). */
	struct hook_patch pending[BUDGET_MOVES_FAR], *pending_at[BUDGET_MOVES_FAR];
	uint32_t n_pending;
	bool shed_none; /* this tick: a thread over budget had nothing moved */
	/* Moves not yet in agent.json and the remembered moves (under
	 * agent.lock); when they were last written (budget_files). */
	bool files_pending;
	bool json_pending; /* agent.json alone: a dlopen's (agent_budget_json_later) */
	uint64_t files_ns;
	uint64_t live_ns; /* when the live counts were last looked at (budget_live) */
	struct budget_memstat mem;
	uint32_t depth_fn[256];
	uint64_t depth_ts[256];
} budget;

uint64_t agent_budget_not_movable(void)
{
	return budget.not_movable;
}

/* ns the thread ran, from /proc/self/task/TID/schedstat; 0 if unknown. */
static uint64_t budget_cpu_ns(uint32_t tid)
{
	char path[64], buf[96];
	snprintf(path, sizeof(path), "/proc/self/task/%u/schedstat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/* What one event costs the thread that writes it: the index lane's emit
 * into a private ring, timed over a loop (the handler's own instructions
 * around it are a few more; ring waits are measured apart). */
static uint64_t budget_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t budget_thread_ns(void)
{
	return budget_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void budget_calibrate(void)
{
	enum { N = 4096, ROUNDS = 8 };
	static struct atf_index_event ring[1024];
	uint64_t best = UINT64_MAX;
	/* The least CPU time of a few short rounds: a round the scheduler
	 * or the hypervisor interrupted is not the cost. */
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = budget_thread_ns();
		for (uint32_t i = 0; i < N; i++) {
			struct atf_index_event *e = &ring[i & 1023];
			ada_event_put_tsc(e);
			e->function_id = i;
			e->thread_id = 1;
			e->event_kind = ATF_EVENT_CALL;
			e->call_depth = i & 7;
			e->detail_seq = ATF_NO_DETAIL;
			__asm__ volatile("" ::: "memory");
		}
		uint64_t dt = budget_thread_ns() - t0;
		if (dt < best)
			best = dt;
	}
	/* The trampoline and the shadow stack besides the store: the guard's
	 * 58.5 instructions an event against the emit's ~20 (x3); and the
	 * recorder's drain of the event, whose CPU time per event (the
	 * summary's "drain CPU") is about the program's own (x2): the budget
	 * is of what the recording costs, program and recorder. */
	budget.event_ps = best * 1000 / N * 6;
	if (budget.event_ps < 3000)
		budget.event_ps = 3000;
}

static struct budget_fn *budget_fn_get(uint64_t fn_id)
{
	uint32_t h = (uint32_t)((fn_id * 0x9e3779b97f4a7c15ull) >> 54) & (BUDGET_FNS - 1);
	for (uint32_t k = 0; k < BUDGET_FNS; k++) {
		struct budget_fn *f = &budget.fns[(h + k) & (BUDGET_FNS - 1)];
		if (f->calls == 0 && f->fn_id == 0)
			f->fn_id = fn_id;
		if (f->fn_id == fn_id)
			return f;
	}
	return NULL;
}

/* Calls and durations per function in the sample. */
static void budget_tally(size_t n)
{
	memset(budget.fns, 0, sizeof(budget.fns));
	for (size_t i = 0; i < n; i++) {
		const struct atf_index_event *e = &budget.sample[i];
		uint32_t d = e->call_depth;
		if (d & ADA_SIGNAL_MARKER_FLAG)
			continue;
		if (e->event_kind == ATF_EVENT_CALL) {
			struct budget_fn *f = budget_fn_get(e->function_id);
			if (f)
				f->calls++;
			budget.depth_fn[d & 255] = (uint32_t)i + 1;
			budget.depth_ts[d & 255] = e->timestamp_ns;
		} else if (e->event_kind == ATF_EVENT_RETURN) {
			uint32_t c = budget.depth_fn[d & 255];
			if (c && budget.sample[c - 1].function_id == e->function_id &&
			    e->timestamp_ns >= budget.depth_ts[d & 255]) {
				struct budget_fn *f = budget_fn_get(e->function_id);
				if (f) {
					f->dur_sum += e->timestamp_ns - budget.depth_ts[d & 255];
					f->dur_n++;
				}
			}
			budget.depth_fn[d & 255] = 0;
		}
	}
	memset(budget.depth_fn, 0, sizeof(budget.depth_fn));
}

static int budget_fn_cmp(const void *a, const void *b)
{
	const struct budget_fn *x = a, *y = b;
	return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

/* The patch of fn_id and its module, or NULL. Under agent.lock. */
static struct hook_patch *budget_patch_of(uint64_t fn_id, struct agent_module **mod)
{
	for (size_t i = 0; i < agent.n_mods; i++) {
		struct agent_module *m = &agent.mods[i];
		uint64_t idx = fn_id & 0xffffffffu;
		if (m->id != (uint32_t)(fn_id >> 32) || m->gone || idx >= m->st.count)
			continue;
		const struct ada_hook_fn *f = &m->st.fns[idx];
		if (f->status != ADA_HOOK_OK || f->reserved)
			return NULL;
		uint64_t addr = m->base + f->offset;
		size_t lo = 0, hi = m->n_patch;
		while (lo < hi) { /* m->patch is sorted by address */
			size_t mid = (lo + hi) / 2;
			if (m->patch[mid].addr < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < m->n_patch && m->patch[lo].addr == addr) {
			*mod = m;
			return &m->patch[lo];
		}
		return NULL;
	}
	return NULL;
}

/* The padding form (x86_64, docs/hooks.md): the entry's short jmp leads
 * to a jmp rel32 in the padding, which leads to the trampoline; that
 * second patch is the one to re-aim. NULL when p is not of that form or
 * its second patch is not one of m's. */
static struct hook_patch *budget_pad_of(struct agent_module *m, const struct hook_patch *p)
{
#if defined(__x86_64__)
	if (p->len < 2 || p->bytes[0] != 0xeb) /* jmp rel8 */
		return NULL;
	uint64_t to = p->addr + 2 + (uint64_t)(int64_t)(int8_t)p->bytes[1];
	for (size_t k = 0; k < m->n_pad; k++)
		if (m->pad[k].addr == to)
			return &m->pad[k];
#else
	(void)m;
	(void)p;
#endif
	return NULL;
}

/* The n bytes of text at addr into out, through process_vm_readv on this
 * process: a module another thread's dlclose has just unmapped (before
 * agent_dl_changed marks it gone) gives EFAULT here, not a fault in the
 * budget thread. False when not all were read. */
static bool budget_read_text(uint64_t addr, uint8_t *out, size_t n)
{
	struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
	long r = hook_arch_syscall6(SYS_process_vm_readv, getpid(), (long)(uintptr_t)&local, 1,
	                            (long)(uintptr_t)&remote, 1, 0);
	return r == (long)n;
}

/* The copy or inline count block (docs/hooks.md, "Count-only functions")
 * for function fn_id, whose original bytes u holds, into blk: the
 * prologue decoded again from those bytes (as ada attach's reapply does:
 * install_replace), then the function's first bytes up to a ret or jmp
 * copied into the block (the rest of them read from the text, which no
 * patch but this one changed: budget_read_text), or the prologue
 * relocated with the jump back behind the patch, as the install's count
 * blocks are; its copies go into the crash handler's map (*tmap,
 * published by the caller once the patch leads there). 0 when
 * that decode is not the patch's (another length) or the arch has no
 * inline form: the caller then emits the block that jumps to the
 * trampoline's copy. */
static size_t budget_emit_inline(const struct agent_module *m, uint64_t fn_id,
                                 const struct hook_patch *u, uint8_t *blk, uint32_t c,
                                 uint64_t tramp, struct agent_tmap **tmap)
{
	struct hook_arch_plan plan;
	struct hook_arch_reloc_map map;
	int32_t gate, counter;
	uint64_t at = (uint64_t)(uintptr_t)blk;
	if (hook_arch_prepare_prologue(u->bytes, u->addr, u->len, &plan) != ADA_HOOK_OK ||
	    plan.patch_len != u->len)
		return 0;
	agent_count_offsets(&gate, &counter);
	uint8_t text[HOOK_ARCH_COUNT_COPY_SPAN];
	size_t avail = agent_count_copy_avail(m, (size_t)(fn_id & 0xffffffffu));
	if (avail && !budget_read_text(u->addr, text, avail))
		avail = 0; /* no copy form: the inline one reads nothing of the text */
	struct hook_arch_copy_map copy;
	size_t len = hook_arch_emit_count_block_copy(&plan, text, avail, blk, at, gate, counter, c,
	                                             tramp, &copy);
	bool copied = len != 0;
	if (!copied)
		len = hook_arch_emit_count_block_inline(&plan, blk, at, gate, counter, c, tramp,
		                                        &map);
	if (len && (*tmap = agent_tmap_new(m->id, at, at + len, m->lo, 1, true)) != NULL) {
		if (copied)
			agent_tmap_add_copy(*tmap, &plan, at, &copy);
		else
			agent_tmap_add(*tmap, &plan, at, true, &map);
	}
	return len;
}

/* A block the inline form did not fit takes the other form in its place. */
_Static_assert(HOOK_ARCH_COUNT_INLINE_MAX >= HOOK_ARCH_COUNT_BLOCK_MAX,
               "the inline form's room holds the other form");

/* Prepares the move of fn_id to count-only (under agent.lock): its block
 * written, its re-aimed patch queued for budget_apply; true when queued. */
static bool budget_move(uint64_t fn_id, uint64_t calls_per_s, uint64_t mean_ns)
{
	struct agent_module *m = NULL;
	struct hook_patch *p = budget_patch_of(fn_id, &m);
	if (!p || agent_count_has(fn_id))
		return false; /* not patched, special, or already count-only */
	if (!agent_count_room())
		return false; /* before its block's memory is taken */
	struct hook_patch *pad = budget_pad_of(m, p);
	if (pad)
		p = pad; /* every call passes its jmp rel32 as an entry's */
	/* The patch as a plan: re-aimed by the arch layer, its tail kept. */
	struct hook_arch_plan pl = {.fn_addr = p->addr, .patch_len = p->len};
	memcpy(pl.original, p->bytes, p->len);
	uint64_t tramp = hook_arch_patch_target(&pl, p->bytes);
	if (!tramp || !hook_mem_is_tramp(tramp)) {
		budget.not_movable++; /* a form whose target is not a trampoline's */
		return false;
	}
	if (!HOOK_ARCH_PATCH_REAIM_ATOMIC(p->addr, p->len)) {
		budget.not_movable++; /* more than one word changes: no atomic store */
		return false;
	}
	/* The padding form's block stays the one that jumps to the
	 * trampoline's copy: its entry's patch is the short jmp, whose
	 * prologue the padding's jmp does not return behind. */
	const struct hook_patch *undo = pad || !m->undo ? NULL : &m->undo[p - m->patch];
	if (undo && (undo->addr != p->addr || undo->len != p->len))
		undo = NULL; /* index for index (install_emit, attach_drop_busy); checked */
	uint8_t *blk = NULL;
	if (hook_mem_alloc(agent.mem, m->id, m->lo, m->hi,
	                   undo ? HOOK_ARCH_COUNT_INLINE_MAX : HOOK_ARCH_COUNT_BLOCK_MAX, &blk))
		return false;
	struct hook_patch np = *p;
	hook_arch_patch_bytes(&pl, (uint64_t)(uintptr_t)blk, np.bytes);
	if (hook_arch_patch_target(&pl, np.bytes) != (uint64_t)(uintptr_t)blk)
		return false; /* out of the patch's reach (hook_mem_alloc places it within) */
	int c = agent_count_assign(fn_id, agent_now_ns() - budget.start_ns, calls_per_s, mean_ns);
	if (c < 0)
		return false;
	int32_t gate, counter;
	agent_count_offsets(&gate, &counter);
	struct agent_tmap *tmap = NULL;
	size_t len = undo ? budget_emit_inline(m, fn_id, undo, blk, (uint32_t)c, tramp, &tmap) : 0;
	if (len == 0)
		len = hook_arch_emit_count_block(blk, (uint64_t)(uintptr_t)blk, gate, counter,
		                                 (uint32_t)c, tramp);
	/* Published either way (a table of a block no patch leads to maps no
	 * pc a thread can have), so that it is not lost. */
	agent_tmap_publish(tmap);
	if (len == 0 || budget.n_pending == BUDGET_MOVES_FAR)
		return false;
	budget.pending[budget.n_pending] = np;
	budget.pending_at[budget.n_pending++] = p;
	return true;
}

/* Applies the moves budget_move prepared (under agent.lock): their blocks
 * sealed, every re-aimed patch in one hook_patch_apply, which reads
 * /proc/self/maps once and unlocks each mapping's pages once (per move,
 * that read was two thirds of the budget thread's CPU time: 607 moves in
 * python's first run). Each patch is still its own atomic store. Returns
 * how many were applied (all or none). */
static uint32_t budget_apply(void)
{
	static struct hook_patch batch[BUDGET_MOVES_FAR];
	uint32_t n = budget.n_pending;
	budget.n_pending = 0;
	if (n == 0)
		return 0;
	memcpy(batch, budget.pending, n * sizeof(batch[0])); /* sorted in place */
	if (hook_mem_seal(agent.mem) || hook_patch_apply(batch, n))
		return 0; /* none moved: their calls stay events */
	for (uint32_t k = 0; k < n; k++)
		*budget.pending_at[k] = budget.pending[k]; /* ada attach's reapply keeps it */
	budget.moves += n;
	/* Due in the same hold of agent.lock as the moves: the program may
	 * end the moment its hot functions move (a short one ends soon
	 * after), and its exit, taking the lock next, must find them due.
	 * Set later in the tick, a budget thread preempted in between let
	 * the exit pass them: in agent.json, never remembered. */
	budget.files_pending = true;
	return n;
}

/* One thread over budget: move its hottest short functions until the
 * share of events they wrote covers excess (of cost). */
static uint32_t budget_shed(uint32_t slot, uint64_t head, uint64_t events_per_s, uint64_t cost,
                            uint64_t excess)
{
	struct ada_arena *a = ada_producer_arena();
	size_t n = ada_index_ring_recent(a, slot, head, budget.sample, BUDGET_SAMPLE);
	if (n < 64) {
		budget.shed_none = true;
		return 0;
	}
	budget_tally(n);
	qsort(budget.fns, BUDGET_FNS, sizeof(budget.fns[0]), budget_fn_cmp);
	/* Far over budget (the excess more than the budget itself): a bigger
	 * step, and a margin over the excess, as the sample only estimates
	 * each function's share and the next tick is a tick later. */
	bool far = excess > cost - excess;
	uint32_t most = far ? BUDGET_MOVES_FAR : BUDGET_MOVES_TICK;
	if (far)
		excess += excess / 2;
	uint64_t saved = 0;
	uint32_t moved = 0, skipped = 0;
	for (uint32_t i = 0; i < BUDGET_FNS && moved < most && saved < excess; i++) {
		const struct budget_fn *f = &budget.fns[i];
		if (f->calls == 0)
			break;
		uint64_t mean =
		    f->dur_n ? f->dur_sum * 1000 / f->dur_n / budget.raw_per_ns_milli : 0;
		uint64_t share = 2 * f->calls * cost / n; /* its CALLs and RETURNs */
		uint64_t rate = f->calls * events_per_s / n;
		if (f->dur_n && mean < BUDGET_SHORT_NS && budget_move(f->fn_id, rate, mean)) {
			saved += share;
			moved++;
		} else {
			skipped++; /* long, no CALL/RETURN pair in the sample, or not movable */
		}
	}
	uint32_t applied = budget_apply();
	budget.shed_none |= applied == 0;
	if (budget.debug)
		agent_log(
		    "budget: sample of %zu events: %u moved, %u skipped (long or not movable)", n,
		    applied, skipped);
	return applied;
}

/* Whether runs may remember: a budget, the plan cache on, a place for it. */
static bool budget_memory_on(void)
{
	return agent.cfg.overhead_budget && agent.cfg.cache && agent.cache_dir[0] == '/';
}

/* One recall's outcome (budgetmem_load's) into budget.mem. */
static void budget_mem_note(int got)
{
	struct budget_memstat *s = &budget.mem;
	if (got >= 0)
		s->read++;
	else if (got == -ENOENT)
		s->absent++;
	else if (got == -ESTALE)
		s->stale++;
	else if (got == -EBADMSG)
		s->corrupt++;
	else if (got == -EPERM || got == -ELOOP)
		s->untrusted++;
	else {
		s->unreadable++;
		s->err = -got;
	}
}

uint8_t *agent_budget_recall(const struct agent_module *m)
{
	char path[PATH_MAX];
	if (!budget_memory_on() || m->st.count == 0)
		return NULL;
	if (budgetmem_path(agent.cache_dir, &m->st, path, sizeof(path))) {
		budget.mem.no_build_id++; /* or a path too long: no name to remember it by */
		return NULL;
	}
	uint8_t *mark = calloc(m->st.count, 1);
	int got = mark ? budgetmem_load(path, &m->st, mark) : -ENOMEM;
	budget_mem_note(got);
	if (got > 0)
		return mark;
	free(mark); /* none, unreadable or not this table's: nothing recalled, counted */
	return NULL;
}

/* Writes, per module, the functions moved in this run or recalled: the
 * next run of the image starts them count-only. Under agent.lock. */
static void budget_remember(void)
{
	static uint64_t ids[AGENT_COUNT_SLOTS];
	static uint32_t idx[BUDGETMEM_MAX];
	char path[PATH_MAX];
	if (!budget_memory_on())
		return;
	uint32_t n = agent_count_budget_ids(ids, AGENT_COUNT_SLOTS);
	for (size_t k = 0; k < agent.n_mods; k++) {
		const struct agent_module *m = &agent.mods[k];
		uint32_t got = 0;
		for (uint32_t j = 0; j < n && got < BUDGETMEM_MAX; j++)
			if ((uint32_t)(ids[j] >> 32) == m->id &&
			    (ids[j] & 0xffffffffu) < m->st.count)
				idx[got++] = (uint32_t)ids[j];
		if (!got || m->gone || budgetmem_path(agent.cache_dir, &m->st, path, sizeof(path)))
			continue;
		int err = budgetmem_store(path, &m->st, idx, got); /* a hint: counted, not said */
		budget.mem.written += err == 0;
		budget.mem.write_failed += err != 0;
		if (err)
			budget.mem.write_err = -err;
	}
}

void agent_budget_memory_json(FILE *f)
{
	const struct budget_memstat *s = &budget.mem;
	fprintf(f,
	        ", \"budget_memory\": {\"on\": %s, \"read\": %" PRIu32 ", \"absent\": %" PRIu32
	        ", \"stale\": %" PRIu32 ", \"corrupt\": %" PRIu32 ", \"untrusted\": %" PRIu32
	        ", \"unreadable\": %" PRIu32 ", \"errno\": %d, \"no_build_id\": %" PRIu32
	        ", \"written\": %" PRIu32 ", \"write_failed\": %" PRIu32 ", \"write_errno\": %d}",
	        budget_memory_on() ? "true" : "false", s->read, s->absent, s->stale, s->corrupt,
	        s->untrusted, s->unreadable, s->err, s->no_build_id, s->written, s->write_failed,
	        s->write_err);
}

/* Under agent.lock: the moves not yet written go to agent.json (ada
 * status and the summary read it) and the remembered moves, when
 * BUDGET_FILES_NS passed since the last write, or now (exit, detach). */
static void budget_files(bool now)
{
	uint64_t t = agent_now_ns();
	if ((!budget.files_pending && !budget.json_pending) ||
	    (!now && t - budget.files_ns < BUDGET_FILES_NS))
		return;
	if (!now) {
		agent_write_files(false, agent.n_mods);
		if (budget.debug)
			agent_log("budget: agent.json written in %" PRIu64 " us",
			          (agent_now_ns() - t) / 1000);
	}
	if (budget.files_pending)
		budget_remember();
	budget.files_pending = budget.json_pending = false;
	budget.files_ns = t;
}

bool agent_budget_json_later(void)
{
	if (!budget.running)
		return false;
	budget.json_pending = true;
	return true;
}

void agent_budget_exit(void)
{
	/* No move after the exit's files (agent.json's final sum, the
	 * remembered moves): one would be counted where nothing reads it. */
	agent_budget_stop();
	budget_files(true);
}

/* Under agent.lock, at most every BUDGET_LIVE_NS: agent.json is due
 * when the counts so far (the running threads' too) changed since it was
 * last written. */
static void budget_live(void)
{
	uint64_t t = agent_now_ns();
	if (t - budget.live_ns < BUDGET_LIVE_NS)
		return;
	budget.live_ns = t;
	if (!budget.json_pending && agent_count_live_changed())
		budget.json_pending = true;
	if (budget.debug)
		agent_log("budget: live counts looked at in %" PRIu64 " us%s",
		          (agent_now_ns() - t) / 1000,
		          budget.json_pending ? ", agent.json due" : "");
}

/* The slot's events since the last tick, whoever wrote them, go to the
 * rest unless its thread was judged on its own. A head never read
 * before is only noted (its events may predate the budget). */
static void budget_rest_note(struct budget_slot *b, const struct ada_slot_info *si, uint32_t i,
                             bool judged, struct budget_rest *rest)
{
	if (si->head == 0 && !b->any_seen)
		return; /* never written: its header was not read (ada_arena_slot_info) */
	uint64_t d = b->any_seen && si->head >= b->any_head ? si->head - b->any_head : 0;
	b->any_head = si->head;
	b->any_seen = true;
	if (judged || d == 0)
		return;
	rest->events += d;
	if (d > rest->top_events) {
		rest->top_events = d;
		rest->top_head = si->head;
		rest->top_slot = i;
	}
}

/* The rest of the threads judged as one (struct budget_rest); true when
 * it moved functions. */
static bool budget_judge_rest(const struct budget_rest *rest, uint64_t dt_ns, uint32_t gen)
{
	uint64_t pcpu = budget_clock_ns(CLOCK_PROCESS_CPUTIME_ID), scpu = budget_thread_ns();
	uint64_t dp = pcpu - budget.proc_cpu_ns, ds = scpu - budget.self_cpu_ns;
	bool seen = budget.proc_seen && pcpu >= budget.proc_cpu_ns && scpu >= budget.self_cpu_ns;
	budget.proc_cpu_ns = pcpu;
	budget.self_cpu_ns = scpu;
	budget.proc_seen = true;
	if (!seen || rest->events == 0 || dp <= ds + rest->judged_cpu_ns)
		return false;
	uint64_t cpu = dp - ds - rest->judged_cpu_ns;
	if (cpu < dt_ns / BUDGET_MIN_CPU_DIV)
		return false;
	uint64_t cost = rest->events * budget.event_ps / 1000;
	uint64_t allowed = cpu * agent.cfg.overhead_budget / 100;
	if (budget.debug)
		agent_log("budget: threads not judged alone: cpu %" PRIu64 " ms events %" PRIu64
		          " cost %" PRIu64 " ms",
		          cpu / 1000000, rest->events, cost / 1000000);
	if (cost <= allowed)
		return false;
	bool moved = false;
	pthread_mutex_lock(&agent.lock);
	/* Relaxed: the lock orders it against agent_budget_stop's bump. */
	if (agent_hot.active && atomic_load_explicit(&budget.gen, memory_order_relaxed) == gen)
		moved = budget_shed(rest->top_slot, rest->top_head,
		                    rest->events * 1000000000ull / dt_ns, cost, cost - allowed) > 0;
	pthread_mutex_unlock(&agent.lock);
	return moved;
}

/* Test hook (e2e.pad_budget_hold.O2): ADA_TEST_BUDGET_HOLD in the
 * environment the program starts with stops the budget thread after the
 * first tick that moved functions, out of agent.lock, until its
 * generation moves (the exit, a detach): the longest preemption a loaded
 * machine could give it there. The program's exit then finds the moves
 * as that tick left them, deterministically. */
static void budget_test_hold(uint32_t gen)
{
	/* Relaxed: as in budget_main's test of the generation. */
	while (atomic_load_explicit(&budget.gen, memory_order_relaxed) == gen) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

/* One judgement of every traced thread; true when it moved functions. */
static bool budget_tick(uint64_t dt_ns, uint32_t gen)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a)
		return false;
	uint32_t used = ada_arena_slots_used(a);
	if (used > budget.nslots) {
		struct budget_slot *s = realloc(budget.slots, used * sizeof(*s));
		if (!s)
			return false;
		memset(s + budget.nslots, 0, (used - budget.nslots) * sizeof(*s));
		budget.slots = s;
		budget.nslots = used;
	}
	bool any = false;
	struct budget_rest rest = {0};
	for (uint32_t i = 0; i < used; i++) {
		struct ada_slot_info si;
		struct budget_slot *b = &budget.slots[i];
		ada_arena_slot_info(a, i, &si);
		if (si.state != ADA_SLOT_ACTIVE || !si.tid) {
			b->seen = false;
			budget_rest_note(b, &si, i, false, &rest);
			continue;
		}
		uint64_t waits, wns; /* an active slot's header only: no page of a free one */
		ada_index_ring_waits(a, i, &waits, &wns);
		uint64_t cpu = budget_cpu_ns(si.tid);
		bool same = b->seen && b->generation == si.generation && b->tid == si.tid;
		struct budget_slot prev = *b;
		*b = (struct budget_slot){
		    si.generation, si.tid,          si.head,        wns, cpu, true, prev.any_head,
		    prev.any_seen, prev.check_head, prev.check_seen};
		/* A wait for ring space is time the thread would have run: its
		 * time is its CPU time and its waits. */
		uint64_t dwait = wns >= prev.waited_ns ? wns - prev.waited_ns : 0;
		bool judged = same && cpu >= prev.cpu_ns && si.head >= prev.head &&
		              cpu - prev.cpu_ns + dwait >= dt_ns / BUDGET_MIN_CPU_DIV;
		budget_rest_note(b, &si, i, judged, &rest);
		if (!judged)
			continue;
		rest.judged_cpu_ns += cpu - prev.cpu_ns;
		uint64_t dcpu = cpu - prev.cpu_ns + dwait, dev = si.head - prev.head;
		uint64_t cost = dev * budget.event_ps / 1000 + dwait;
		uint64_t allowed = dcpu * agent.cfg.overhead_budget / 100;
		if (budget.debug)
			agent_log("budget: at %" PRIu64 " ms (tick %" PRIu64
			          " ms): slot %u tid %u cpu %" PRIu64 " ms events %" PRIu64
			          " waited %" PRIu64 " ms cost %" PRIu64 " ms",
			          (agent_now_ns() - budget.start_ns) / 1000000, dt_ns / 1000000, i,
			          si.tid, dcpu / 1000000, dev, dwait / 1000000, cost / 1000000);
		if (cost <= allowed)
			continue;
		pthread_mutex_lock(&agent.lock);
		/* Relaxed: the lock orders it against agent_budget_stop's bump. */
		if (agent_hot.active &&
		    atomic_load_explicit(&budget.gen, memory_order_relaxed) == gen)
			any |= budget_shed(i, si.head, dev * 1000000000ull / dt_ns, cost,
			                   cost - allowed) > 0;
		pthread_mutex_unlock(&agent.lock);
	}
	any |= budget_judge_rest(&rest, dt_ns, gen);
	if (any && budget.test_hold)
		budget_test_hold(gen);
	pthread_mutex_lock(&agent.lock);
	/* Relaxed: the lock orders it against agent_budget_stop's bump (the
	 * exit's and a detach's files are the last). */
	if (atomic_load_explicit(&budget.gen, memory_order_relaxed) == gen) {
		budget_live();
		budget_files(false);
	}
	pthread_mutex_unlock(&agent.lock);
	return any;
}

/* What a wake-up saw (budget_look). */
enum budget_look { BUDGET_QUIET, BUDGET_BUSY, BUDGET_HOT };

/* At every wake-up: whether a ring's head moved so far since the last
 * wake-up (dt_ns ago) that its thread is surely over budget, its events
 * costing more than PCT % of the wall time (its CPU time is no more): a
 * new phase of hot calls after quiet ticks, which would otherwise write
 * events at full rate until the next tick, up to 100 ms later (HOT);
 * else whether any head moved (BUSY) or none (QUIET). Reads only the
 * slots' heads (slots a tick has seen), no /proc file. */
static enum budget_look budget_look(uint64_t dt_ns)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a)
		return BUDGET_QUIET;
	uint32_t used = ada_arena_slots_used(a);
	uint64_t allowed = dt_ns * agent.cfg.overhead_budget / 100;
	enum budget_look look = BUDGET_QUIET;
	for (uint32_t i = 0; i < used && i < budget.nslots; i++) {
		struct ada_slot_info si;
		struct budget_slot *b = &budget.slots[i];
		ada_arena_slot_info(a, i, &si);
		if (b->check_seen && si.head > b->check_head && look == BUDGET_QUIET)
			look = BUDGET_BUSY;
		if (b->check_seen && si.head > b->check_head &&
		    (si.head - b->check_head) * budget.event_ps / 1000 > allowed)
			look = BUDGET_HOT;
		b->check_head = si.head;
		b->check_seen = true;
	}
	return look;
}

/* --count-only without --overhead-budget (docs/hooks.md, "Live counts"):
 * the thread only keeps agent.json's live counts (budget_live) and writes
 * what a dlopen left to it (agent_budget_json_later), a look a second.
 * No calibration: no per-event cost is needed (event_cost_ps stays 0). */
static void *budget_live_main(uint32_t gen)
{
	for (;;) {
		/* Relaxed: as in budget_main; a stale read costs one more look,
		 * which the test under the lock below keeps out. */
		if (atomic_load_explicit(&budget.gen, memory_order_relaxed) != gen)
			return NULL;
		uint64_t t = agent_now_ns(), due = budget.live_ns + BUDGET_LIVE_NS;
		if (due > t) {
			struct timespec ts = {(time_t)((due - t) / 1000000000u),
			                      (long)((due - t) % 1000000000u)};
			nanosleep(&ts, NULL);
		}
		pthread_mutex_lock(&agent.lock);
		/* Relaxed: the lock orders it against agent_budget_stop's bump
		 * (a detach's final agent.json is the last). */
		if (atomic_load_explicit(&budget.gen, memory_order_relaxed) == gen) {
			budget_live();
			budget_files(false);
		}
		pthread_mutex_unlock(&agent.lock);
	}
	return NULL;
}

static void *budget_main(void *arg)
{
	uint32_t gen = (uint32_t)(uintptr_t)arg;
	agent_guard_enter(); /* for good: its own calls are neither traced nor counted */
	/* Release: pairs with budget_wait_born's acquire (the guard is this
	 * thread's own; the store only says it is held). */
	atomic_store_explicit(&budget.born, 1, memory_order_release);
	syscall(SYS_futex, &budget.born, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (!agent.cfg.overhead_budget)
		return budget_live_main(gen);
	if (!budget.event_ps) /* a forked child's parent calibrated */
		budget_calibrate();
	uint64_t t = agent_now_ns(), raw = ada_tsc(), tick = BUDGET_TICK_FIRST_NS, checked = t;
	/* An early tick (budget_look) that found a thread over budget and
	 * moved nothing: no other until a tick moves some (the hot functions
	 * are long or not movable, and would be sampled at every wake-up). */
	bool early_idle = false;
	uint64_t sleep_ns = BUDGET_TICK_FIRST_NS;
	uint32_t quiet = 0; /* looks in a row that saw no head move */
	for (;;) {
		struct timespec ts = {0, (long)sleep_ns};
		nanosleep(&ts, NULL);
		/* Relaxed: a stale read costs one more tick, whose moves the
		 * lock and the same test in budget_tick keep out. */
		if (atomic_load_explicit(&budget.gen, memory_order_relaxed) != gen)
			return NULL;
		uint64_t t2 = agent_now_ns(), raw2 = ada_tsc();
		bool early = t2 - t + BUDGET_TICK_FIRST_NS / 2 < tick;
		enum budget_look look = budget_look(t2 - checked);
		checked = t2;
		/* No event in the last BUDGET_QUIET_LOOKS looks: the next one
		 * later (a wake-up costs this VM about 55 us: 5.5 ms of CPU a
		 * second at 10 ms); a short pause between two phases keeps the
		 * quick looks. */
		quiet = look == BUDGET_QUIET ? quiet + 1 : 0;
		sleep_ns =
		    quiet >= BUDGET_QUIET_LOOKS ? BUDGET_WAKE_QUIET_NS : BUDGET_TICK_FIRST_NS;
		if (early && (early_idle || look != BUDGET_HOT))
			continue;
		const struct ada_arena *a = ada_producer_arena();
		bool clock_ts = a && ada_arena_config_of(a)->timestamp_source == ADA_TS_CLOCK;
		budget.raw_per_ns_milli = clock_ts ? 1000 : (raw2 - raw) * 1000 / (t2 - t + 1);
		if (budget.raw_per_ns_milli == 0)
			budget.raw_per_ns_milli = 1;
		budget.shed_none = false;
		bool moved = budget_tick(t2 - t, gen);
		early_idle = moved ? false : early && budget.shed_none ? true : early_idle;
		if (moved)
			tick = BUDGET_TICK_FIRST_NS;
		else if (!early)
			tick = tick * 2 < BUDGET_TICK_NS ? tick * 2 : BUDGET_TICK_NS;
		t = t2;
		raw = raw2;
	}
	return NULL;
}

/* Waits (BUDGET_BORN_WAIT_NS at most: a thread that does not run soon,
 * as under a debugger or a loaded machine, costs its slot, not the
 * program's start) until the new budget thread holds its guard. */
static void budget_wait_born(void)
{
	uint64_t until = agent_now_ns() + BUDGET_BORN_WAIT_NS;
	/* Acquire: pairs with budget_main's release store. */
	while (!atomic_load_explicit(&budget.born, memory_order_acquire)) {
		uint64_t now = agent_now_ns();
		if (now >= until)
			return;
		struct timespec ts = {0, (long)(until - now < 1000000 ? until - now : 1000000)};
		syscall(SYS_futex, &budget.born, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
}

/* quiet: the process is single-threaded and records nothing yet or for
 * this moment (agent_hot.active 0, set back by the caller): the new
 * thread's first calls -- glibc's start_thread, before budget_main takes
 * its guard -- are suppressed like the agent's own, so it claims no ring
 * slot. A slot would cost the program its ring's pages and the recorder
 * a second thread seen, for which it prepares spare slots (populated and
 * locked: most of the drain's CPU in a short run, docs/benchmarks.md). */
static void budget_spawn(bool quiet)
{
	/* Relaxed: the new thread receives its generation as its argument. */
	uint32_t gen = atomic_fetch_add_explicit(&budget.gen, 1, memory_order_relaxed) + 1;
	budget.proc_seen = false; /* a new thread (and, forked, a new process): times afresh */
	atomic_store_explicit(&budget.born, 0, memory_order_relaxed); /* no thread reads it yet */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the program's signals are not ours */
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int err = pthread_create(&budget.thread, &at, budget_main, (void *)(uintptr_t)gen);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	budget.running = err == 0;
	if (!err && quiet)
		budget_wait_born();
	if (err && agent.cfg.overhead_budget)
		agent_log("--overhead-budget: cannot start its thread (%s); the budget is not kept",
		          strerror(err));
	else if (err)
		agent_log("--count-only: cannot start the live counts' thread (%s); agent.json "
		          "has the counts of its last write until the exit",
		          strerror(err));
}

/* Whether the process runs the agent's thread (after the start-up scan):
 * for the budget, or for the live counts of --count-only once a function
 * is count-only (none: no thread, as in every exec'd process of a build
 * whose globs match nothing there; count-live=0: none either, and the
 * program stays single-threaded to glibc; its live counts are then the
 * last write's). */
static bool budget_wanted(void)
{
	return agent.cfg.overhead_budget ||
	       (agent.cfg.n_count_only && agent.cfg.count_live && agent_count_sites());
}

void agent_budget_start(bool quiet)
{
	if (!budget_wanted() || budget.running)
		return;
	/* live_ns: the first look at the live counts a second from now (a
	 * short program's exit writes them anyway). */
	budget.start_ns = budget.files_ns = budget.live_ns = agent_now_ns();
	budget.debug = secure_getenv("ADA_BUDGET_DEBUG") != NULL;
	budget.test_hold = secure_getenv("ADA_TEST_BUDGET_HOLD") != NULL;
	budget_spawn(quiet);
}

void agent_budget_stop(void)
{
	/* Relaxed: called under agent.lock, which budget_tick's moves take. */
	atomic_fetch_add_explicit(&budget.gen, 1, memory_order_relaxed);
	budget.running = false;
}

ADA_FORK_PATH void agent_budget_after_fork(void)
{
	/* Without either option nothing of the budget's was ever written
	 * (agent_budget_start, budget_memory_on): reading it would map pages
	 * the parent never touched, a fault each. */
	if (!agent.cfg.overhead_budget && !agent.cfg.n_count_only)
		return;
	/* The parent's stores are the parent's; its recall made the child's
	 * patches too, so that stays. Stored only when set: a store copies
	 * the page (a fault) even when it writes what is there. */
	if (budget.mem.written || budget.mem.write_failed || budget.mem.write_err) {
		budget.mem.written = budget.mem.write_failed = 0;
		budget.mem.write_err = 0;
	}
	if (!budget.running)
		return;
	budget.files_pending = false; /* the parent's moves are the parent's to write */
	budget.json_pending = false;
	/* A short child (a subshell) writes no live counts: its exit does. */
	budget.live_ns = agent_now_ns();
	/* The parent's threads are not this process's: judged afresh. */
	if (budget.slots)
		memset(budget.slots, 0, budget.nslots * sizeof(*budget.slots));
	/* The child's only thread is this one (the atfork child handler):
	 * nothing else runs untraced meanwhile. */
	uint32_t active = agent_hot.active;
	agent_hot.active = 0;
	budget_spawn(true);
	agent_hot.active = active;
}

uint64_t agent_budget_event_ps(void)
{
	return budget.event_ps;
}

/* Whether the thread of slot i waited for index ring space: only such
 * threads' rings are tallied for hot_functions, which the summary shows
 * when the recording waited. A process that never waited (most short
 * ones: each subshell of a script) spent more at its exit on the tally
 * than on the rest of its agent.json. */
static bool budget_slot_waited(struct ada_arena *a, uint32_t i, struct ada_slot_info *si)
{
	ada_arena_slot_info(a, i, si);
	if (si->state == ADA_SLOT_FREE || si->head == 0)
		return false; /* its ring's header not read: a page it never touched */
	uint64_t waits, ns;
	ada_index_ring_waits(a, i, &waits, &ns);
	return waits != 0;
}

bool agent_budget_hot_any(void)
{
	struct ada_arena *a = ada_producer_arena();
	struct ada_slot_info si;
	uint32_t used = a ? ada_arena_slots_used(a) : 0;
	for (uint32_t i = 0; i < used; i++)
		if (budget_slot_waited(a, i, &si))
			return true;
	return false;
}

void agent_budget_hot_json(FILE *f)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a)
		return;
	bool any = agent_budget_hot_any();
	struct ada_slot_info si;
	uint32_t used = ada_arena_slots_used(a);
	fputs(",\n  \"hot_functions\": [", f);
	if (!any) {
		fputc(']', f);
		return;
	}
	static struct budget_fn tally[BUDGET_FNS];
	uint64_t total = 0;
	memset(tally, 0, sizeof(tally));
	for (uint32_t i = 0, taken = 0; i < used && taken < 64; i++) {
		if (!budget_slot_waited(a, i, &si))
			continue;
		taken++;
		size_t n = ada_index_ring_recent(a, i, si.head, budget.sample, 4096);
		budget_tally(n);
		for (uint32_t k = 0; k < BUDGET_FNS; k++) {
			const struct budget_fn *b = &budget.fns[k];
			if (!b->calls)
				continue;
			uint32_t h =
			    (uint32_t)((b->fn_id * 0x9e3779b97f4a7c15ull) >> 54) & (BUDGET_FNS - 1);
			for (uint32_t j = 0; j < BUDGET_FNS; j++) {
				struct budget_fn *t = &tally[(h + j) & (BUDGET_FNS - 1)];
				if (t->calls == 0 || t->fn_id == b->fn_id) {
					t->fn_id = b->fn_id;
					t->calls += b->calls;
					break;
				}
			}
			total += b->calls;
		}
	}
	qsort(tally, BUDGET_FNS, sizeof(tally[0]), budget_fn_cmp);
	for (uint32_t k = 0; k < 5 && total && tally[k].calls * 100 / total >= 1; k++) {
		fputs(k ? ", {\"name\": " : "{\"name\": ", f);
		agent_json_string(f, agent_count_fn_name(tally[k].fn_id));
		fprintf(f, ", \"id\": %" PRIu64 ", \"share_pct\": %" PRIu64 "}", tally[k].fn_id,
		        tally[k].calls * 100 / total);
	}
	fputc(']', f);
}
