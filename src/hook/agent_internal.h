/*
 * Private declarations shared by the agent's files (src/hook).
 *
 * The globals below are written by the init thread before the first patch
 * is made (and by dlopen/fork handlers with the world otherwise quiet);
 * the handlers only read them. A patch becomes visible to other threads
 * only through the mprotect/patching syscalls, which order these stores
 * before any trampoline can run on another CPU.
 */
#ifndef ADA_AGENT_INTERNAL_H
#define ADA_AGENT_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hook.h"
#include "hook_mem.h"
#include "keysym.h"

/* What on_enter does for a few functions that change the stack under
 * the shadow stack's feet (docs/hooks.md, "special functions"). */
enum agent_special {
	AGENT_SP_NONE = 0,
	AGENT_SP_UNWIND, /* _Unwind_RaiseException/_Resume/_Resume_or_Rethrow */
	AGENT_SP_FORCED, /* _Unwind_ForcedUnwind, pthread_exit */
	AGENT_SP_CATCH,  /* __cxa_begin_catch */
	AGENT_SP_EXIT,   /* exit, _exit, _Exit, quick_exit */
	AGENT_SP_DL,     /* dlopen, dlmopen, dlclose: rescan when they return */
	AGENT_SP_EXEC,   /* execve, execveat, fexecve: close every frame */
	AGENT_SP_SWITCH, /* greenlet's g_switchstack: copies stack slices */
};

/* The functions whose calls and returns enter the detail ring: one
 * immutable object, published by swapping agent_hot.dset with a release
 * store (its partner: the acquire load in handlers_detail_member(),
 * handlers.c), so
 * the handlers see a set complete or not at all. The hot path reads it
 * with one O(1) test (agent_dset_has); whoever builds the set (today the
 * --detail-symbols globs at hook time, agent_install.c; later the
 * key-symbol containers) changes nothing on the hot path. A replaced set
 * is kept until exit: a handler may still be reading it. */
struct agent_dset {
	uint32_t all;                  /* what a function outside the bitmaps is: 1 with
	                                  nbits 0 is "every hooked function" */
	uint32_t nbits;                /* every bitmap covers symbol indexes < nbits */
	uint64_t max_mod;              /* bits[] covers module ids 0..max_mod */
	const uint64_t *const *bits;   /* per module id: bitmap by symbol_index (a shared
	                                  zero bitmap for modules with no member) */
	const struct agent_dset *prev; /* the set this one replaced (kept, see above) */
};

/* One O(1) test, no NULL check: while the detail lane is on, dset always
 * points at a set (an empty one before the first is built). Two bound
 * checks and one bit; a module or symbol the bitmaps do not cover (loaded
 * after the set was built, or every one in an "every function" set) is
 * what `all` says. The excluded case costs the bound checks and the bit
 * test: no `all` test first. */
static inline bool agent_dset_has(const struct agent_dset *ds, uint64_t fn_id)
{
	uint32_t i = (uint32_t)fn_id;
	uint64_t m = fn_id >> 32;
	if (__builtin_expect(i < ds->nbits && m <= ds->max_mod, 1))
		return (ds->bits[m][i >> 6] >> (i & 63)) & 1u;
	return ds->all; /* "every function" sets have no bitmap (nbits 0) */
}

/* agent_detail_decide(): bit 0 the answer; AGENT_DETAIL_START_RULES:
 * the own set gave it while the blob is ADA_KEYSYM_F_LIVE (a spec given
 * live, whose rules the own set does not follow): counted by the caller
 * (ADA_DROP_KEYSYM_UNKNOWN), since the set in force may say otherwise. */
#define AGENT_DETAIL_START_RULES 0x2
/* The out-of-line answer of the detail lane (handlers.c,
 * handlers_enter_detail_ask) for the current blob at cur: the blob's
 * container, or, for a module the blob says nothing about (no entry: built
 * before the recorder read that module, or loaded after; an uncovered
 * entry: a gap below modules it had read; ADA_KEYSYM_UNKNOWN both), the
 * agent's own set ds, built from the start-time rules. An own set
 * without rules ("every function": `all`) says nothing about what the
 * recorder chose: not a member, as the blob would say. O(1), no lock,
 * no library. */
static inline int agent_detail_decide(const uint8_t *area, uint64_t mask, uint64_t cur,
                                      const struct agent_dset *ds, uint64_t fn_id)
{
	int r = ada_keysym_lookup_at(area, mask, cur, fn_id);
	if (__builtin_expect(r != ADA_KEYSYM_UNKNOWN, 1))
		return r;
	int own = !ds->all && agent_dset_has(ds, fn_id);
	uint32_t flags = ks_rd32(area, mask, cur + offsetof(struct ada_keysym_header, flags));
	return own | (flags & ADA_KEYSYM_F_LIVE ? AGENT_DETAIL_START_RULES : 0);
}

static inline bool agent_detail_ask(const uint8_t *area, uint64_t mask, uint64_t cur,
                                    const struct agent_dset *ds, uint64_t fn_id)
{
	return agent_detail_decide(area, mask, cur, ds, fn_id) & 1;
}

static inline uint32_t agent_stack_take(uint64_t lo, uint64_t hi, uint64_t rsp, uint32_t want,
                                        uint32_t *flags)
{
	*flags = 0;
	if (want == 0)
		return 0;
	if (rsp < lo || rsp >= hi) {
		*flags = 0x2u; /* ADA_DREC_F_OFF_STACK */
		return 0;
	}
	uint64_t avail = (hi - rsp) & ~7ull;
	if (avail < want) {
		*flags = 0x1u; /* ADA_DREC_F_STACK_CLIPPED */
		return (uint32_t)avail;
	}
	return want;
}

struct agent_hot {
	uint64_t ret_tramp;    /* address of the shared return trampoline */
	uint32_t active;       /* 0: trampolines run but record nothing */
	int32_t pid;           /* the process the arena belongs to */
	uint32_t xsave_size;   /* CPUID 0xD size of the xsave area; 0: use fxsave */
	uint32_t detail_stack; /* stack bytes per CALL detail record (0..512) */
	/* --detail-fp: the records are the _FP types, with xmm0..7 (CALL) and
	 * xmm0..1 (RETURN); the member paths in machine code are not used. */
	uint32_t detail_fp;
	uint64_t self_lo, self_len; /* the agent's own mapping: its calls are not traced */
	/* Detail lane on (config detail=1 and the arena has a detail ring):
	 * the trampolines call the _detail handlers. Decided before the first
	 * patch; never changes afterwards. */
	uint32_t detail_on;
	uint32_t reserved;
	const struct agent_dset *_Atomic dset; /* never NULL while detail_on */
	/* Word 3 of a CALL record with the whole snapshot (computed once:
	 * ada_drec_meta(ATF_DETAIL_FUNCTION_CALL, 0, detail_stack)). */
	uint64_t detail_meta_call;
	uint32_t detail_words;    /* stack words of that record: (detail_stack + 7) / 8 */
	uint32_t detail_call_len; /* its length: (ADA_DREC_CALL_WORDS + detail_words) * 8 */
	/* The recorder's key-symbol sets (src/keysym/keysym.h): the arena's
	 * key-symbol area (read-only here) and the word that says which blob
	 * is current; ks_cur points at a constant ADA_KEYSYM_CUR_LOCAL when
	 * the arena has no area, so the handlers use dset. Set by
	 * agent_keysym_attach() before the first patch and after fork. */
	const _Atomic uint64_t *ks_cur;
	const uint8_t *ks_area;
	uint64_t ks_mask;
};
extern struct agent_hot agent_hot;

/* Hook context, the handlers of the detail lane (handlers.c): the same as
 * ada_hook_on_enter/ada_hook_on_exit plus, for a function in agent_hot.dset,
 * one record in the thread's detail ring. */
void ada_hook_on_enter_detail(uint64_t fn_id, uint64_t *ret_slot, const struct ada_hook_regs *regs);
/* The same for --stack-bytes 128 (agent_hot.detail_stack == 128): the
 * snapshot copied with no length test (agent_install.c picks it). */
void ada_hook_on_enter_detail128(uint64_t fn_id, uint64_t *ret_slot,
                                 const struct ada_hook_regs *regs);
uint64_t ada_hook_on_exit_detail(uint64_t sp);
/* Hook context, the C continuations of the index lane's fast form
 * (hook_arch.h, struct hook_arch_fast): ada_hook_on_enter/ada_hook_on_exit
 * after their claim of in_hook, which the caller made and holds; and the
 * replay of the side queue after a clear that found QUEUED. */
void ada_hook_on_enter_held(uint64_t fn_id, uint64_t *ret_slot, const struct ada_hook_regs *regs);
uint64_t ada_hook_on_exit_held(uint64_t sp);
void ada_hook_fast_flush(void);
/* The same for the detail lane's fast form (its enter stub declines a
 * member of the detail set, and every case the index lane's declines,
 * to these; its return trampoline a flagged frame to the exit). */
void ada_hook_on_enter_detail_held(uint64_t fn_id, uint64_t *ret_slot,
                                   const struct ada_hook_regs *regs);
void ada_hook_on_enter_detail128_held(uint64_t fn_id, uint64_t *ret_slot,
                                      const struct ada_hook_regs *regs);
uint64_t ada_hook_on_exit_detail_held(uint64_t sp);
/* Their member paths (hook_arch_fast.enter_member/exit_member). */
void ada_hook_on_enter_detail_member(uint64_t fn_id, uint64_t *ret_slot,
                                     const struct ada_hook_regs *regs);
void ada_hook_on_enter_detail128_member(uint64_t fn_id, uint64_t *ret_slot,
                                        const struct ada_hook_regs *regs);
uint64_t ada_hook_on_exit_detail_member(uint64_t sp);
/* Not hook context: the fast form's thread-state offsets and handlers
 * (agent_install.c emits them into each block's stubs). */
void agent_fast_layout(struct hook_arch_fast *f);
/* Not hook context (cold path, guard set): the calling thread's stack
 * [lo, hi) for the detail lane's snapshots; 0, 0 when unknown. */
void agent_thread_stack(uint64_t *lo, uint64_t *hi);
/* At start-up, after the scan: the main thread's stack from hook_mem's
 * snapshot of /proc/self/maps, for agent_thread_stack(). */
void agent_note_main_stack(void);
/* agent_install.c: the first detail set, before anything is patched
 * (every function, or none until the globs are matched); then the set
 * built from the config and the modules hooked so far, published after
 * each scan (caller holds agent.lock). */
void agent_detail_set_init(void);
void agent_detail_set_update(void);
/* agent_install.c: points agent_hot.ks_* at this process's arena's
 * key-symbol area (made read-only here) and registers for the expedited
 * membarrier the recorder's swap uses; with no area, at the local set. */
void agent_keysym_attach(void);

/* Special functions are decided when they are hooked: their trampolines
 * call agent_hook_on_enter_special() (handlers.c) instead of
 * ada_hook_on_enter(), with the kind in the top byte of the fn_id they
 * pass (module ids stay far below 2^24), so the common handler tests
 * nothing about specialness. */
#define AGENT_SPECIAL_SHIFT 56
static inline uint64_t agent_special_tag(uint64_t fn_id, enum agent_special kind)
{
	return fn_id | (uint64_t)kind << AGENT_SPECIAL_SHIFT;
}
/* Hook context; the signature of ada_hook_on_enter (hook.h). */
void agent_hook_on_enter_special(uint64_t tagged_fn_id, uint64_t *ret_slot,
                                 const struct ada_hook_regs *regs);

/* agent_special.c (not hook context): */
enum agent_special agent_special_of_name(const char *name);
/* handlers.c (not hook context): */
/* Runs the action of a special function (UNWIND, FORCED or CATCH) on the
 * calling thread's shadow stack, from an interposed wrapper whose own
 * return address lives at ret_slot (agent_unwind.c). */
void agent_special_run(enum agent_special kind, uint64_t *ret_slot);
/* Suppress/allow events on the calling thread (the agent's own work). */
void agent_guard_enter(void);
void agent_guard_leave(void);
/* A fatal signal is about to kill the process (agent_crash.c): every
 * return address the calling thread's frames replaced on the stack near
 * sp (the interrupted stack pointer) gets the program's back, innermost
 * first (a tail chain's slot ends with its lowest entry's), so a core
 * shows the program's own stack; on arm64 where each body saved its x30
 * (shadow_ret_home), and the interrupted link register *lr when it
 * holds the innermost frame's return point (lr: hook_arch_uc_lr, NULL on
 * x86_64). The frames stay on the shadow stack (nothing returns any
 * more). Returns the number of words put back. */
uint32_t agent_shadow_restore_for_crash(const uint64_t *sp, uint64_t *lr);
/* Atfork prepare (under agent.lock): notes the forking thread's count of
 * suppressed calls, so the child's counts begin at the fork. */
void agent_untraced_fork_prepare(void);
/* After fork, in the child's only thread: the frames on the shadow stack
 * were the parent's; they stay (the child returns through them) but emit
 * nothing. The counts of calls not traced start at zero (but for what the
 * guard suppressed since agent_untraced_fork_prepare). */
void agent_shadow_after_fork(void);
/* The calling thread's frames are gone (thread exit): EXCEPTION events,
 * release the shadow stack memory. */
void agent_shadow_thread_exit(void);
/* Calls not traced so far (threads that ended, plus the caller):
 * [0] during the agent's own work, [1] shadow stack full or unusable,
 * [2] signal handlers the side path could not take, [3] calls of threads
 * that stopped being traced after a return no frame matched; [4] such
 * returns, [5] such threads (shadow_resync); [6] stack switches by
 * copying, [7] frames they cut, whose returns are not traced
 * (shadow_switch_all); [8] calls of threads after their exit destructor
 * (glibc's teardown of the thread); [9] calls made while the thread found
 * the recorder gone. */
#define AGENT_UNTRACED_THREAD_EXIT 8
#define AGENT_UNTRACED_RECORDER_GONE 9
#define AGENT_UNTRACED_COUNT 10
void agent_untraced_counts(uint64_t out[AGENT_UNTRACED_COUNT]);

/* The calling thread's first traced call: registers its thread-exit
 * destructor (agent_process.c). Called once per thread from the
 * handlers' cold path, with the guard set. */
void agent_thread_started(void);
/* ---- agent_count.c: count-only functions (docs/hooks.md) ---- */
#define AGENT_COUNT_SLOTS 4096u   /* count-only functions per process */
#define AGENT_COUNT_THREADS 4096u /* threads counting at once (a power of 2) */
/* A thread's counting state (16 bytes of static TLS: ada attach dlopens
 * the agent, and the static TLS a dlopen may take is small). gate is 1
 * exactly while the thread counts: +1 once registered, +2 for each level
 * of the agent's own work (agent_guard_*); the count blocks test it. n:
 * its counters, AGENT_COUNT_SLOTS of them in pages of its own, after the
 * qword HOOK_ARCH_COUNT_GS_TAG (mapped when
 * it registers, only when count-only functions may exist; a page is
 * faulted in when a count first lands in it). reg: 1 + its entry in the
 * registry. */
struct agent_count_tls {
	uint32_t gate;
	uint32_t reg;
	uint64_t *n;
};
extern __thread struct agent_count_tls agent_count_tls __attribute__((tls_model("initial-exec")));
/* One count-only function: moved_ns 0 when chosen at start-up, else the
 * time since the agent started when the budget moved it, with the rate
 * and mean duration that made it move. */
struct agent_count_fn {
	uint64_t fn_id, moved_ns, calls_per_s, mean_ns;
	bool recalled; /* count-only from the start: the budget moved it in an earlier run */
};
struct agent_module;
/* Slot c (agent_count_assign's) was recalled from an earlier run's moves. */
void agent_count_recalled(int c);
/* The fn_ids the budget moved in this run or recalled (under agent.lock);
 * how many, at most cap. */
uint32_t agent_count_budget_ids(uint64_t *ids, uint32_t cap);
/* --overhead-budget: which of m's functions an earlier run of the same
 * image moved (malloc'd, one byte a function, 1: count-only from the
 * start), or NULL. */
uint8_t *agent_budget_recall(const struct agent_module *m);
/* The calling thread starts / stops counting (from agent_thread_started
 * and the thread-exit destructor). */
void agent_count_thread_start(void);
void agent_count_thread_exit(void);
/* Fork child: forget the parent's counts and threads. */
void agent_count_after_fork(void);
/* A counter slot for fn_id (under agent.lock), or -1 when all are taken
 * (counted as over_capacity). */
int agent_count_assign(uint64_t fn_id, uint64_t moved_ns, uint64_t calls_per_s, uint64_t mean_ns);
/* Whether a counter slot is left (under agent.lock); false counts the
 * function as over_capacity, as agent_count_assign would. */
bool agent_count_room(void);
/* Whether fn_id has a counter slot already (under agent.lock). */
bool agent_count_has(uint64_t fn_id);
/* The TLS offsets a count block uses: gate, and the pointer to the
 * thread's counters, or HOOK_ARCH_COUNT_GS when the counters are at the
 * thread's %gs base (x86_64; agent_count.c). */
void agent_count_offsets(int32_t *gate, int32_t *counters);
/* How many bytes from function i's entry are its own (its size, cut at
 * the next symbol's start): what a count block may copy of it
 * (hook_arch_emit_count_block_copy); 0 with count-copy=0. */
size_t agent_count_copy_avail(const struct agent_module *m, size_t i);
/* agent_budget.c (--overhead-budget): starts the agent's budget thread
 * when the option asks for one (after the start-up scan; quiet: before
 * agent_hot.active is set in a single-threaded process, the call waiting
 * until the thread holds its guard, so that it claims no ring slot); functions it
 * could not move (their patch's rel32 straddles two aligned words); the
 * per-event cost it calibrated, in picoseconds (0 before). */
void agent_budget_start(bool quiet);
/* Under agent.lock, after a dlopen or dlclose: true when agent.json's
 * rewrite is left to the budget thread (its next write of its own moves,
 * BUDGET_FILES_NS at most; the exit writes it in any case): a program
 * that loads many modules at its start (python: a dozen extension
 * modules) rewrote the whole file, every count-only function listed,
 * for each. False when no budget thread runs: the caller writes it. */
bool agent_budget_json_later(void);
/* Ends the budget thread (ada_agent_detach, under agent.lock): no move
 * after it. */
void agent_budget_stop(void);
/* Under agent.lock, at exit and detach, before the caller writes
 * agent.json: ends the budget thread (agent_budget_stop: no move after
 * the final files) and writes the remembered moves it has not written
 * yet (it writes them at most every 250 ms). */
void agent_budget_exit(void);
/* ", \"budget_memory\": {...}": what the budget's memory did in this
 * process (each module's recall at its install and why none, each store
 * and the last failure), for count_only in agent.json. Under agent.lock. */
void agent_budget_memory_json(FILE *f);
/* In a forked child (agent_process.c): a budget thread of its own when
 * the parent ran one. */
void agent_budget_after_fork(void);
uint64_t agent_budget_not_movable(void);
uint64_t agent_budget_event_ps(void);
/* s as a JSON string (agent.c). */
void agent_json_string(FILE *f, const char *s);
/* The process exits: the next agent.json carries the final sum. */
void agent_count_exiting(void);
bool agent_count_is_exiting(void);
/* A function's name from its module's symbol table ("" when unknown). */
const char *agent_count_fn_name(uint64_t fn_id);
/* At exit (under agent.lock): ",\n  \"hot_functions\": [...]", the
 * functions that wrote most of the events the rings still hold (the last
 * 4096 of up to 64 threads), with their share in %: the summary's top
 * offenders (agent_budget.c). */
void agent_budget_hot_json(FILE *f);
/* Whether agent_budget_hot_json would list any function (a thread of this
 * process waited for ring space). */
bool agent_budget_hot_any(void);
/* Whether agent.json gets a count_only section; the section itself
 * (the final sum once exiting, else a live snapshot of every thread's
 * counts: the ended threads' and the running threads' so far). */
bool agent_count_any(void);
void agent_count_json(FILE *f);
/* Under agent.lock: a live snapshot of the counts differs from the one
 * agent.json last carried (the agent's thread then rewrites it). */
bool agent_count_live_changed(void);
/* Whether a function is count-only (under agent.lock): --count-only's
 * live counts' thread starts only then (agent_budget.c). */
bool agent_count_sites(void);

/* dlopen/dlclose returned (called from the exit handler, guard set):
 * hook new images, forget unmapped ones (agent_process.c). Runs ordinary code:
 * the return trampoline has saved every caller-saved general register. */
void agent_dl_changed(void);

/* What the plan cache did for a module (plancache_internal.h). */
enum agent_cache_use { AGENT_CACHE_OFF = 0, AGENT_CACHE_HIT, AGENT_CACHE_MISS };
/* A module's text (agent_sharedtext.c): not shared, a patched copy mapped
 * over it, or patched here and a copy written for the next process. */
enum agent_stext_use { AGENT_STEXT_NONE = 0, AGENT_STEXT_MAPPED, AGENT_STEXT_WRITTEN };

/* One hooked image. */
struct agent_module {
	uint32_t id;
	char *path;
	uint64_t base, lo, hi;
	struct ada_hook_symtab st;
	bool wanted;  /* config: hook it (else only its special functions) */
	bool is_main; /* the program's own image: stripped, it is traced from .eh_frame */
	bool present; /* seen by the latest scan */
	bool gone;    /* unmapped (dlclose): trampolines released */
	uint64_t installed;
	uint64_t skipped[ADA_SKIP_REASON_COUNT];
	uint64_t ns_symbols, ns_patching;
	uint64_t ns_prepare, ns_emit, ns_apply; /* the parts of ns_patching */
	uint64_t ns_xref; /* part of ns_prepare: the cross-function branch sweep */
	/* Parts of ns_prepare: the plan cache file read and checked, and the
	 * options' verdicts; ns_files: its .syms and .body last written. */
	uint64_t ns_cache_load, ns_verdicts, ns_files;
	enum agent_cache_use cache;
	enum agent_cache_use symcache; /* its symbol table: symcache_internal.h */
	bool par;                      /* analysed on two threads (agent_install.c) */
	/* The table hash of its .syms file as last written (agent.json);
	 * valid when syms_written. */
	uint64_t table_xxh64;
	bool syms_written;
	/* The inode of that file: a forked child links it into its own
	 * pid_N/ and checks the link is this very file (agent.c). */
	ino_t syms_ino;
	/* The patches applied and the original bytes they replaced (same
	 * order, n_patch each): ada attach's detach restores the originals,
	 * a later attach applies the patches again (agent_attach.c). */
	struct hook_patch *patch, *undo;
	size_t n_patch;
	/* The padding form's second patches (the jumps written into padding,
	 * docs/hooks.md): applied before the entries, never taken back (a
	 * thread stopped between the two jumps at a detach goes on into the
	 * trampoline; nothing else reaches the padding). */
	struct hook_patch *pad;
	size_t n_pad;
	/* Functions patched in the far form (arm64, agent_far.c). */
	size_t n_far;
	/* Its trampoline block at the shared-text place (stext_block), and
	 * what became of its text (agent_sharedtext.c). */
	bool stext_block;
	enum agent_stext_use stext;
};

/* The far patch form (agent_far.c; arm64 only). block: m's trampoline
 * block of cap bytes in mem, within the patch's reach (hook_mem_alloc), else
 * (*far) within the far form's (not for BTI-guarded code; always with
 * ADA_HOOK_FAR_TEST); 0 or -errno. replan: function i's plan in the far
 * form, when it can have it. note_bti: whether a GNU property note asks
 * for BTI (any architecture: tested on any host). Under agent.lock. */
int agent_far_block(struct hook_mem *mem, struct agent_module *m, size_t cap, uint8_t **blk,
                    bool *far);
bool agent_far_replan(const struct agent_module *m, size_t i, struct hook_arch_plan *plan);
/* m's trampoline block (agent_trampmap.c) for n_cand trampolines after the
 * first used bytes, by agent_far_block; with counts, a zone of its own
 * after them for the count blocks, each on a line of AGENT_COUNT_ALIGN
 * (czone: the first). The crash handler's map gets a table of each
 * (tmap, cmap), in address order. 0 or -errno (blk NULL). */
#define AGENT_COUNT_ALIGN 64
struct agent_block {
	uint8_t *blk;
	size_t czone;                   /* where the next count block goes */
	bool far;                       /* a module wider than the patch's reach */
	struct agent_tmap *tmap, *cmap; /* the trampolines', the count blocks' */
};
int agent_block_alloc(struct agent_module *m, size_t used, size_t n_cand, bool counts,
                      struct agent_block *z);
bool agent_far_note_bti(const uint8_t *p, size_t len);

/* An image that is not hooked at all, for agent.json. */
struct agent_ignored {
	char *path;
	const char *why;
};

/* What the agent needs from the environment, read once by its constructor
 * and kept (malloc'ed copies, NULL when unset): the program may clear,
 * change or replace its environment at any time (nginx's workers call
 * clearenv()), and forks, dlopens and execs that come later must still
 * find the arena and put the agent into the children it follows. */
struct agent_env {
	char *ld_preload, *arena_dir, *session_dir, *ring_config, *hook_config;
	/* ADA_PLAN_CACHE: the plan cache's directory, as the recorder chose it
	 * (never derived from the program's HOME: the program's world stays
	 * its own). NULL: no cache. */
	char *plan_cache;
	/* ADA_DEBUG_ROOT: where debug files are looked for instead of
	 * /usr/lib/debug (symbols.c); NULL: there. */
	char *debug_root;
	/* This image's argv as the loader gave it (the manifest's "program"
	 * follows exec): copied, the program may rewrite its own. */
	char **argv;
};

/* Process-wide agent state; every field after init is guarded by lock
 * (dlopen/dlclose rescans, fork). */
struct agent_state {
	pthread_mutex_t lock;
	struct ada_hook_config cfg;
	struct hook_mem *mem;
	struct agent_module *mods;
	size_t n_mods, cap_mods;
	struct agent_ignored *ign;
	size_t n_ign, cap_ign;
	uint32_t next_id;
	uint64_t cache_agent_hash;   /* plan cache key part; 0: cache off */
	uint64_t cache_untrusted;    /* modules whose cache file or place was not trusted */
	uint64_t cache_rejected;     /* modules whose cache hit did not fit the image */
	uint64_t symcache_refused;   /* symbol-table cache files there but not used */
	uint64_t cache_decoded;      /* functions decoded again on a cache hit */
	uint64_t cache_file_checked; /* cached plans checked against the file (agent_text.c) */
	uint64_t cache_fit_known; /* modules whose plans a .fit note vouched for (agent_text.c) */
	/* Shared patched text (agent_sharedtext.c): modules whose text a copy
	 * replaced, whose copy was written, and those that were not shared,
	 * by reason (stext_why, AGENT_STEXT_WHY_*). */
	uint64_t stext_mapped, stext_written, stext_why[6];
	/* The start-up scan's analysis may take a helper thread (no patch
	 * exists yet); par_fallback: modules analysed on one thread because
	 * the helper could not be created. */
	bool par_analysis;
	uint64_t par_fallback;
	uint64_t ns_arena, ns_discovery, ns_symbols, ns_patching, ns_files, ns_total;
	/* The main thread's stack of process main_stack_pid, as
	 * pthread_getattr_np would give it, from the start-up's read of
	 * /proc/self/maps (agent_note_main_stack); 0: ask glibc. */
	pid_t main_stack_pid;
	uint64_t main_stack_lo, main_stack_hi;
	/* The process whose pid_N/ holds the .syms files as last
	 * written (0: none yet); inherited by a forked child, which links
	 * them instead of writing them again. syms_shared: this process's
	 * files linked so; syms_share_failed: those it had to write because
	 * the link could not be made or was not the parent's file. */
	pid_t files_pid;
	uint64_t syms_written, syms_shared, syms_share_failed;
	/* The agent.json as last written (json_ino, in pid_<json_pid>/; 0:
	 * none yet). A forked child that shares every symbol file and has
	 * no count-only section links it instead of writing its own at the
	 * fork (the recorder makes a child that ends without its exit write
	 * its own from it: src/recorder/agent_inherit.c). json_writes: the
	 * agent.json files this process wrote (agent_json_writes). */
	pid_t json_pid;
	ino_t json_ino;
	uint64_t json_writes;
	/* A forked child that left its files to the recorder (agent.c,
	 * agent_fork_defer): its pid while the note stands, and the modules
	 * noted; fork_why: why a forked child wrote its files itself (NULL:
	 * it did not), agent.json's "fork_files". */
	pid_t fork_noted_pid;
	uint32_t fork_noted_mods;
	const char *fork_why;
	/* Bodies (agent_syms.c): written here, linked from the session's
	 * store, found there but not the body (refused), written but not
	 * linked into the store (unstored). */
	uint64_t syms_bodies_written, syms_bodies_shared, syms_bodies_refused, syms_bodies_unstored;
	char session_dir[PATH_MAX]; /* "" when ADA_SESSION_DIR is unset */
	char cache_dir[PATH_MAX];   /* the plan cache's directory; "": none */
	/* ada attach (agent_attach.c): loaded by dlopen into a running
	 * process, configured by ada_agent_attach(), not the environment.
	 * busy[]: where the stopped threads are (a function whose patch bytes
	 * hold one is patched only if the thread can be moved into its
	 * trampoline: moved[i], 0 or busy[i]'s new pc, which ada attach sets);
	 * restart[]: a thread inside a system call goes back to the syscall
	 * instruction, so its start may not be inside a patch either (never
	 * moved). All set only while every other thread is stopped, and
	 * cleared before they run. moved_at_attach: threads moved by this
	 * attach (agent.json). */
	bool attached;
	uint64_t *busy, *restart, *moved;
	size_t n_busy, n_restart;
	uint64_t moved_at_attach;
	struct agent_env env;
};
extern struct agent_state agent;

/* agent_attach.c (ada attach): whether a patch of [addr, addr+len) would
 * overwrite bytes a stopped thread is about to execute; cheap, checked
 * first. */
bool agent_attach_busy(uint64_t addr, size_t len);
/* Whether the patch of plan, whose trampoline is at tramp, may be applied
 * all the same: no thread restarts a system call inside it and every
 * thread strictly inside it can be moved to the trampoline's copy of the
 * instruction it is at (then recorded in agent.moved[]). */
bool agent_attach_place(const struct hook_arch_plan *plan, uint64_t tramp);
/* handlers.c: a second attach clears the "recorder gone" state of the
 * thread whose thread pointer is tp (self_tp: the caller's). */
void agent_shadow_attach_reset(uintptr_t self_tp, uintptr_t tp);
/* Forgets the moves of the threads at [lo, hi) (a module whose patches
 * failed to apply: its trampolines are not used). */
void agent_attach_unplace(uint64_t lo, uint64_t hi);

/* agent.c */
/* Starts recording: arena, hooks, files; the constructor's work, also
 * run by ada_agent_attach(). Takes the lock and the guard. 0 or -errno. */
int agent_boot(void);
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The staging window [lo, lo + AGENT_STAGE_BYTES) of a block: buf holds
 * [lo, used) of it; NULL buf: trampolines are written in place. And the
 * undo entries [ubase, ubase + un) in ubuf, bound for undo. */
struct agent_stage {
	uint8_t *buf;
	size_t lo;
	struct hook_patch *undo, *ubuf; /* undo NULL: the original bytes are not kept */
	size_t ubase, un;
	struct hook_patch discard; /* where they go then */
};

/* Starts a block's window at used (attach: none, written in place). */
void agent_stage_init(struct agent_stage *st, size_t used, struct hook_patch *undo);
/* Writes the window's [lo, used) into blk; last: the undo entries too,
 * and the buffer given back (kept for the next install). */
void agent_stage_flush(struct agent_stage *st, uint8_t *blk, size_t used, bool last);
/* Where the trampoline at blk + used is to be written (at most
 * HOOK_ARCH_MAX_TRAMPOLINE bytes). */
uint8_t *agent_stage_at(struct agent_stage *st, uint8_t *blk, size_t used);
/* Where undo entry np is to be written. */
struct hook_patch *agent_stage_undo_at(struct agent_stage *st, size_t np);

/* agent_text.c: a plan cache hit's check read from the image's file. */
#define AGENT_TEXT_PAGES 16 /* the window: pages read at a time (agent_text.c) */
struct agent_text {
	int fd, pm;          /* the mapped file, /proc/self/pagemap; -1: closed */
	uint64_t pg, lo, hi; /* page size, the mapping [lo, hi) */
	uint64_t off;        /* the file offset of lo */
	uint64_t wlo, whi;   /* the window [wlo, whi) read into buf */
	uint64_t file;       /* bit q: the window's page q holds the file's bytes */
	uint8_t *buf;
	bool x;         /* the mapping is executable */
	struct stat st; /* the file's, when fd is open */
	char name[256]; /* the file's name (its path's last part) */
	/* The plans' fit already checked against this very file (the plan
	 * cache's .fit note: agent_text_fit_open); fit_sum: the plan file's
	 * checksum, 0 when there is no note to read or write. */
	bool fit_known;
	uint64_t fit_sum;
	char fit_path[PATH_MAX];
};
/* Opens the check for the mapping that holds addr: in the start-up scan
 * only (hook_no_seccomp; not attached), and only when that mapping is a
 * private one of the regular file its path still names; else closed,
 * and every check reads memory. */
void agent_text_open(struct agent_text *t, uint64_t addr);
void agent_text_close(struct agent_text *t);
/* Whether every page of t's mapping holds the file's bytes: none is the
 * process's own copy (a text relocation, a uprobe) or swapped out. */
bool agent_text_clean(const struct agent_text *t);
/* The file's identity (device, inode, size, modification and change
 * times): another file, or this one changed, has another. */
uint64_t agent_text_ident(const struct stat *st);
/* With t open on a plan cache hit's image: whether the plan file of
 * checksum sum, beside plan_path (its .fit note), was found to fit this
 * very file already (t->fit_known; counted agent.cache_fit_known). */
void agent_text_fit_open(struct agent_text *t, const char *plan_path, uint64_t sum);
/* After a walk that checked every plan of the file and found them all to
 * fit (all), the note written for the next process. Best effort. */
void agent_text_fit_store(struct agent_text *t, bool all);
/* plan_cache_fits() of plan, its bytes read from the file when memory
 * holds the file's there (counted agent.cache_file_checked), else from
 * mem; true without a read when t->fit_known. The walk asks in address
 * order (a window read per 16 pages). */
bool agent_text_fits(struct agent_text *t, const struct hook_arch_memview *mem,
                     const struct hook_arch_plan *plan, unsigned patch_len);
/* hook_patch_apply_pair(agent.mem, ...) of the start-up scan, with the
 * image's file behind the first patch's mapping (agent_text_open's
 * checks) as the source of the pages written whole
 * (hook_patch_apply_pair_file); without it as before. */
int agent_text_apply(struct agent_module *m, struct hook_patch *pads, size_t n_pad,
                     struct hook_patch *patches, size_t np);

/* agent_sharedtext.c: an image's patched text shared by every process that
 * patches it the same way (docs/hooks.md, "Shared patched text"). */
enum {
	AGENT_STEXT_WHY_OFF,        /* no cache directory, turned off, not x86_64 */
	AGENT_STEXT_WHY_UNPLACED,   /* the block's place was taken */
	AGENT_STEXT_WHY_UNCHECKED,  /* the text's file could not be opened and checked */
	AGENT_STEXT_WHY_WRITTEN_ON, /* a page of the text is the process's own copy */
	AGENT_STEXT_WHY_REFUSED,    /* a copy there, not trusted or not this patching */
	AGENT_STEXT_WHY_FAILED,     /* the copy could not be written or mapped */
};
/* m's trampoline block of cap bytes at the shared-text place, when this
 * is the start-up scan and sharing is on: true with *blk, else false and
 * the caller places it as before. */
bool agent_stext_block(struct agent_module *m, size_t cap, uint8_t **blk);
/* One module's text between its patches and its copy. */
struct agent_stext {
	struct agent_module *m;
	struct agent_text *t;
	const struct hook_patch *pads, *patches;
	size_t n_pad, np;
	bool ok;                /* the text may be shared: map or store */
	char key[NAME_MAX + 1]; /* the copy's directory's name */
	char path[PATH_MAX];    /* the copy's */
};
/* Whether m's text (t open on it, the patches sorted) may be shared; sx
 * gets its copy's path. */
bool agent_stext_begin(struct agent_stext *sx, struct agent_module *m, struct agent_text *t,
                       const struct hook_patch *pads, size_t n_pad,
                       const struct hook_patch *patches, size_t np);
/* The copy mapped over the text: true, or false and nothing changed. */
bool agent_stext_map(struct agent_stext *sx);
/* After the patches were written here: the copy written for the next
 * process. Best effort (counted). */
void agent_stext_store(struct agent_stext *sx);

uint64_t agent_now_ns(void);
/* Writes pid_<getpid()>/module_<id>.syms for each module with written == false
 * (all when all) and agent.json, under pid_<getpid()>. 0 or -errno. */
int agent_write_files(bool all_modules, size_t first_new);
/* The symbol files of the modules from first_new on, without agent.json
 * (agent_budget_json_later). 0 or -errno. */
int agent_write_syms_from(size_t first_new);
/* A forked child's files: left to the recorder by a note in its arena
 * when its parent's are all there (the address space, so the tables, are
 * the parent's); else its parent's .syms linked, agent.json written.
 * 0 or -errno. */
int agent_write_files_forked(void);
/* At exit: agent.json, or a noted fork child's counts into its arena
 * (agent_fork_exit) when they are all it has to say. */
int agent_write_files_at_exit(void);

/* agent_install.c: lists the images (discover.c), hooks those it does not
 * know yet, forgets those gone. Returns the index of the first new module
 * in agent.mods. Caller holds agent.lock and the guard. */
size_t agent_scan(void);
/* ada attach (agent_attach.c; caller holds agent.lock and the guard): restores every
 * module's original entry bytes (detach), or applies the kept patches
 * again, leaving out those agent_attach_busy() names (a second attach).
 * 0 or the first -errno. */
int agent_uninstall(void);
int agent_reinstall(void);
/* m's installed and skipped counts from its functions' statuses
 * (agent_install.c). */
void agent_install_count(struct agent_module *m);
/* Sets up the shared return trampoline. 0 or -errno. */
int agent_make_return_trampoline(void);

/* agent_exec.c: prepares the exec/posix_spawn wrappers from agent.env and
 * the options (and, with --no-follow, takes our variables out of the
 * program's environment). Constructor only. */
void agent_exec_setup(void);

/* agent_wait.c: resolves the real wait family for the wrappers, which
 * note every child they reap in the arena's table of reaped children. */
void agent_wait_setup(void);

/* agent_process.c */
int agent_process_setup(void);

/* agent_trampmap.c: a pc inside a trampoline back to its function, for
 * the crash handler. At install (under agent.lock): a table for one
 * module's trampoline block [lo, hi) with room for cap trampolines (NULL
 * without memory: nothing is mapped), each trampoline added in address
 * order, then published; retired with its module (dlclose). */
struct agent_tmap;
/* counts: a table of count blocks, whose copy form maps every copy
 * (agent_tmap_add_copy). */
struct agent_tmap *agent_tmap_new(uint32_t module_id, uint64_t lo, uint64_t hi, uint64_t fn_base,
                                  size_t cap, bool counts);
/* map: the trampoline's map as its emission gave it
 * (hook_arch_emit_trampoline_fast_map), or NULL: made here
 * (hook_arch_reloc_map, of the fast form when fast). */
void agent_tmap_add(struct agent_tmap *t, const struct hook_arch_plan *plan, uint64_t tramp,
                    bool fast, const struct hook_arch_reloc_map *map);
/* A copy-form count block of plan at blk, in a counts table. */
void agent_tmap_add_copy(struct agent_tmap *t, const struct hook_arch_plan *plan, uint64_t blk,
                         const struct hook_arch_copy_map *map);
void agent_tmap_publish(struct agent_tmap *t);
void agent_tmap_retire(uint32_t module_id);
/* Any thread, async-signal-safe, no lock: the function address whose
 * instruction a pc inside a trampoline stands for (the start of a
 * relocated copy, the trampoline's first byte: its entry, or the jump
 * back: the end of the patched bytes), else 0. */
uint64_t agent_tmap_pc(uint64_t pc);

/* agent_crash.c: fatal-signal handlers (docs/hooks.md, "Crash signals"). */
int agent_crash_setup(void);
/* The calling thread's alternate signal stack (guard set, errno kept). */
void agent_crash_thread_start(void);
void agent_crash_thread_exit(void);
/* Program handlers the agent's crash handler called so far. */
uint64_t agent_crash_chained(void);

/* Puts module m's body at name under pid_fd (pid_N/): linked from the session's
 * symbodies/ store when it holds the body of m's table, else formatted,
 * written and linked into the store (agent_syms.c); *hash and *len get
 * the body's XXH64 and length. 0 or -errno. */
int agent_put_body(int pid_fd, const struct agent_module *m, const char *name, uint64_t *hash,
                   size_t *len);

#endif
