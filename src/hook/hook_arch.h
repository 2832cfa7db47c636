/*
 * The architecture layer of the hook engine: decode a function's prologue,
 * decide whether it can be patched safely, relocate the displaced
 * instructions into a trampoline, and write the patch. Everything here is
 * pure code generation over byte buffers (no mprotect, no allocation of
 * executable memory), so it is unit-tested byte for byte.
 * x86_64 lives in src/hook/x86_64/, arm64 in src/hook/arm64/ (the
 * C-handler form only; its layout: arm64/arch.h and a64_emit.c).
 *
 * Runtime contract of the code this layer emits (x86_64):
 *   - Function entry is replaced by `jmp rel32` to the function's
 *     trampoline, which: saves rdi, rsi, rdx, rcx, r8, r9, rax, rbp, r10,
 *     r11 into a struct ada_hook_regs on the stack, calls
 *     ada_hook_on_enter(fn_id, ret_slot, regs) where ret_slot points at the
 *     return address the caller pushed (rsp at entry), restores the
 *     registers, and then:
 *       - when the handler left *ret_slot == 0 (it pushed a frame and
 *         saved the return address in it): drops the slot (rsp += 8) and
 *         CALLS the body (the relocated prologue, then a jump back behind
 *         it), so the body sees the same stack (its stack arguments at the
 *         same offsets) with the trampoline's own return point R_F in the
 *         slot, at buf_addr + HOOK_ARCH_RET_POINT_OFF. R_F jumps to the
 *         exit path (a return trampoline within reach, see
 *         hook_arch_emit_trampoline). The body's return to R_F and the
 *         return trampoline's return to the caller are both predicted by
 *         the return-stack buffer (a call/ret pair each).
 *       - otherwise (no frame, or the handler swapped the slot itself):
 *         JUMPS to the body, which returns to whatever the slot holds.
 *     A function reached by a jump from another traced function's body (a
 *     tail call) finds that function's R_F in its slot: an ordinary return
 *     address to save and return to.
 *   - Return points: the return trampolines and every R_F lie in the
 *     memory the hook engine maps for trampolines (hook_mem), where no
 *     other address that a return slot can hold lies; hook context tells
 *     them apart from real return addresses by address alone
 *     (hook_mem_is_tramp(), O(1)). arm64: the same contract with `bl`
 *     into the body and x30 as the return point's register; R_F and the
 *     drop of the slot become "x30 saved in the frame, bl body".
 *   - The return trampoline (hook_arch_emit_return_trampoline; one for
 *     the process and one beside each module's trampolines) is where
 *     hooked functions return to through R_F, or directly when the enter
 *     handler swapped their return address: it saves EVERY caller-saved
 *     general register (rax, rdx,
 *     rcx, rsi, rdi, r8-r11; gcc's -fipa-ra keeps values live in them
 *     across calls to functions it knows leave them alone, so a return
 *     must not change any of them), calls ada_hook_on_exit(sp) with the
 *     stack pointer as it was right after the `ret` (sp - 8 is the slot
 *     the return address was popped from), stores the address the
 *     handler returned into that slot, restores every register and `ret`s
 *     to it (rsp ends at sp, as after the original return). While the
 *     handler runs, the function's rax is at sp-8, its rdx at sp-16 and its
 *     rbp at sp-80 (for the detail lane's RETURN record).
 *   - The C handlers are compiled with -mgeneral-regs-only, so vector and
 *     x87 registers (float arguments and return values) are never touched
 *     and need not be saved. (The fast form's emitted member path copies
 *     the CALL record through xmm15, which it saves below its rsp and
 *     restores: docs/hooks.md.)
 *   - Neither trampoline aligns the stack: the enter handler is entered
 *     with rsp 8 bytes off the ABI's 16-byte alignment (the registers
 *     saved plus the call, after a conforming caller), the exit handler
 *     aligned (ten registers saved, rbp among them for the
 *     RETURN record), or anything after a caller that breaks the ABI. The handlers must need no
 * alignment on their own and realign before calling anything that may (handlers.c,
 *     HANDLERS_REALIGN; checked on the built agent by the test
 *     hook_arch_align, tools/check-handler-align.py). Dropping the
 *     alignment saved 8 instructions per traced call (mov rbp,rsp /
 *     and rsp,-16 / mov rsp,rbp in both, the return trampoline's push
 *     and pop of rbp).
 *     Status flags are NOT preserved across the enter handler: the SysV ABI
 *     leaves them undefined at function entry and after return (DF is 0 at
 *     both points and the handlers keep it 0).
 *   - The enter handler may change the saved registers in *regs; the
 *     trampoline reloads them all before running the relocated prologue.
 *   - *ret_slot may already hold a return point: a hooked function that
 *     tail-calls (jmp) another hooked function, or jumps back to its own
 *     entry, reaches the enter trampoline without a new return address.
 *   - Fast form (x86_64, every ordinary function of both lanes:
 *     hook_arch_emit_trampoline_fast, hook_arch_emit_enter_stub,
 *     hook_arch_emit_return_trampoline_fast).
 *     The handlers' common cases run as emitted machine code instead of a
 *     C call: the function's trampoline is `call stub; jne body; lea rsp,
 *     [rsp+8]; call body; R_F: jmp exit_path; dq fn_id`, and the block's
 *     enter stub does what ada_hook_on_enter does on its fast path (its
 *     ZF tells the trampoline: set = a frame was pushed, call the body),
 *     the block's return trampoline what ada_hook_on_exit does, both with
 *     the same stores in the same order, saving only the registers they
 *     use and addressing the thread's state as %fs:disp32 (struct
 *     hook_arch_fast: initial-exec TLS offsets, the same in every thread
 *     and in a fork child). Their contract with the C side:
 *       - the first instruction claims in_hook bit 0 with one
 *         read-modify-write (btsl); the clear is one too (subl), the last
 *         store; a signal therefore lands before, after or between them;
 *       - bit 0 found set: the full C handler (enter_full/exit_full), with
 *         every caller-saved register saved, which finds it set too;
 *       - any other case the fast path does not take is declined before
 *         any store, in_hook still held, to enter_held/exit_held (the C
 *         handler's body after its claim), registers saved as above;
 *       - the clear found more than bit 0 (HANDLERS_QUEUED): flush(),
 *         every caller-saved register saved, then the fast path's exit;
 *       - the detail lane (struct hook_arch_fast's detail_hot): the enter
 *         stub tests the function's membership in the detail set right
 *         after the guard, before anything else the index lane's fast
 *         path does; outside the set it takes that path (frame unflagged);
 *         a member goes to enter_member, anything the test leaves open to
 *         enter_held (both in_hook held; regs holds rdi .. rbp only); the
 *         return trampoline sends a top frame flagged exactly
 *         SHADOW_F_DETAIL to exit_member, any other flag to exit_held.
 *         With the 128-byte snapshot (detail_rec) a member's call and
 *         such a return write their detail records in machine code too,
 *         and only what that path declines goes to the member handlers.
 *     The C handlers stay the portable form: arm64 (or any arch without
 *     the fast emitters) emits the ordinary trampolines only.
 *   - Functions that return twice (setjmp, vfork, getcontext) must not
 *     get their return address swapped (that is the agent's exclusion).
 *   - Enter handler:  void ada_hook_on_enter(uint64_t fn_id, uint64_t *ret_slot,
 *                                            struct ada_hook_regs *regs);
 *     (stores 0 into *ret_slot to be returned to through R_F).
 *     Exit handler:   uint64_t ada_hook_on_exit(uint64_t sp);  returns the
 *     original return address; the return trampoline returns there with
 *     every general register as the function left it.
 *
 * Threads: hook_arch_prepare() uses one capstone handle behind a mutex, so
 * it may be called from any thread; it is NOT hook context (it allocates).
 * The emit/patch-byte functions are pure and reentrant.
 */
#ifndef ADA_HOOK_ARCH_H
#define ADA_HOOK_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The architecture's half: struct ada_hook_regs, the detail record's
 * register words, HOOK_ARCH_SYSCALL_INSN_LEN and the return points, the
 * byte scanners (hook_arch_branch_*16) and the agent's machine
 * primitives (hook_arch_thread_pointer, hook_arch_syscall6,
 * hook_arch_fpu_save/restore, hook_arch_bit0_set/sub1_nz,
 * hook_arch_uc_sp, hook_arch_call_on_stack). One line per architecture. */
#if defined(__x86_64__)
#include "x86_64/arch.h"
#elif defined(__aarch64__)
#include "arm64/arch.h"
#else
#error "no hook architecture for this target (src/hook/<arch>/arch.h)"
#endif

/* Why a function was not hooked. Stable names (hook_skip_name) go into the
 * manifest; append new reasons at the end. */
enum ada_hook_skip {
	ADA_HOOK_OK = 0,
	ADA_SKIP_TOO_SHORT,            /* fewer bytes than the patch needs */
	ADA_SKIP_BRANCH_INTO_PATCH,    /* some branch in the function targets the patched bytes */
	ADA_SKIP_UNDECODABLE,          /* capstone could not decode the prologue */
	ADA_SKIP_UNRELOCATABLE,        /* prologue instruction we cannot move */
	ADA_SKIP_NO_TRAMPOLINE_MEMORY, /* nothing free within +-2 GiB */
	ADA_SKIP_IFUNC,                /* STT_GNU_IFUNC resolver */
	ADA_SKIP_AGENT,                /* ada's own code */
	ADA_SKIP_LOADER,               /* the dynamic loader */
	ADA_SKIP_ENTRY_POINT,          /* _start and friends */
	ADA_SKIP_EXCLUDED,             /* --exclude / --exclude-symbol / default list */
	ADA_SKIP_ALIAS,                /* same address as a function already hooked */
	ADA_SKIP_OUTSIDE_TEXT,         /* symbol not inside an executable segment */
	ADA_SKIP_JUMP_TABLE,           /* indirect jump that may land in the patch */
	ADA_SKIP_NO_UNWIND_INFO,       /* no .eh_frame FDE in an image that has them: not C */
	ADA_SKIP_BUSY_AT_ATTACH, /* ada attach: a stopped thread inside its patch bytes could not be
	                            moved */
	ADA_SKIP_REASON_COUNT
};
const char *hook_skip_name(enum ada_hook_skip reason);

#define HOOK_ARCH_MAX_PATCH 16 /* bytes displaced at most */
#ifndef HOOK_ARCH_MIN_PATCH
#define HOOK_ARCH_MIN_PATCH 5 /* the patch's jump (x86_64; the padding form apart) */
#endif
#define HOOK_ARCH_MAX_TRAMPOLINE 256 /* bytes one trampoline takes at most */

#define HOOK_ARCH_MAX_INSNS 5 /* 5 bytes are covered by at most 5 insns */
#define HOOK_ARCH_RETURN_TRAMPOLINE_MAX 1024
#define HOOK_ARCH_ENTER_STUB_MAX 1536

/* The index lane's fast path in machine code (x86_64; see "Fast form" in
 * the contract above): where the hook handlers' per-thread state lies,
 * as offsets from the thread pointer (initial-exec TLS: fixed per module
 * once loaded, the same in every thread and in a fork child), and the C
 * handlers the fast path falls back to. Filled by the agent
 * (handlers.c, agent_fast_layout). */
struct hook_arch_fast {
	/* struct ada_shadow */
	int32_t s_base, s_top, s_cap, s_guard, s_in_hook, s_inherited;
	/* struct ada_producer */
	int32_t p_events, p_mask, p_head, p_limit, p_head_pub, p_tid_call, p_tid_return;
	uint64_t ret_tramp;  /* the shared return trampoline: the fast entry declines */
	uint64_t enter_full; /* ada_hook_on_enter: in_hook was set (a nested call) */
	uint64_t enter_held; /* same signature, in_hook already claimed */
	uint64_t exit_full;  /* ada_hook_on_exit */
	uint64_t exit_held;  /* same signature, in_hook already claimed */
	uint64_t flush;      /* void (void): replays the side queue (in_hook had QUEUED) */
	/* The detail lane (detail_hot != 0): the enter stub first tests the
	 * function's membership in the detail set as the C handlers do
	 * (handlers_detail_member: the current key-symbol blob's header,
	 * module entry and bitset word, or, before the recorder published
	 * one, the agent's own bitmap set) and takes the fast path only for
	 * a function outside the set; a member and every case the test does
	 * not settle in O(1) here (hash and CRoaring containers, FULL, the
	 * "every function" flag) decline to enter_held, which tests again.
	 * detail_hot: the agent's hot globals; h_*: offsets in them of the
	 * pointer to the current-blob word, the key-symbol area, its mask and
	 * the own set's pointer; d_*: offsets in that set (struct
	 * agent_dset). module: the module id of every function of the block
	 * (fn_id >> 32). */
	uint64_t detail_hot;
	/* The detail lane's member paths (detail_hot != 0), in_hook held:
	 * enter_member (enter_held's signature) for a function the stub
	 * found in the set, with the guard clear; exit_member (exit_held's)
	 * for a return whose frame the return trampoline found the top one,
	 * above the inherited ones, owning the slot, flagged exactly
	 * SHADOW_F_DETAIL (0x4: its CALL got a detail record). The stub
	 * calls enter_held and enter_member with only the first eight
	 * registers of struct ada_hook_regs in place (rdi .. rbp): r10 and
	 * r11 are saved elsewhere, so those handlers must not read them. */
	uint64_t enter_member, exit_member;
	int32_t h_ks_cur, h_ks_area, h_ks_mask, h_dset;
	int32_t d_all, d_nbits, d_max_mod, d_bits;
	uint32_t module;
	/* detail_rec != 0 (the detail lane with the default 128-byte stack
	 * snapshot): a member's CALL and RETURN records are written by the
	 * stub and the return trampoline themselves, straight into the
	 * thread's detail ring, as detail_put_call_fixed() /
	 * detail_put_return() write them (ring.h's reserve, store
	 * and commit order); whatever their fast path does not take (the
	 * index path's declines, an rsp outside [dfast_lo, dfast_lo +
	 * dfast_span], a record that does not fit in the chunk) goes to
	 * enter_member / exit_member before any store. p_d*: struct
	 * ada_producer's dwords, dhead, dbytes, dpos, dstop, dcount;
	 * s_dfast_*: struct ada_shadow's dfast_lo, dfast_span. */
	uint32_t detail_rec;
	int32_t p_dwords, p_dhead, p_dbytes, p_dpos, p_dstop, p_dcount;
	int32_t s_dfast_lo, s_dfast_span;
};

/* One displaced instruction as prepare() decoded it; private to the arch
 * layer (emit reads it), callers only copy the plan around. */
struct hook_arch_insn {
	uint8_t offset; /* from fn_addr */
	uint8_t len;
	uint8_t kind;     /* arch-private relocation case */
	uint8_t disp_off; /* rip-relative: where disp32 sits in the insn */
	uint8_t cc;       /* jcc: condition code (low nibble of the opcode) */
	uint8_t reg;      /* lea: destination register number (0..15) */
	uint64_t target;  /* absolute branch target / rip-relative address */
};

struct hook_arch_plan {
	uint64_t fn_addr;
	size_t patch_len;  /* bytes displaced from the function (>= 5; >= 2 with pad_addr) */
	size_t insn_count; /* instructions displaced */
	uint8_t original[HOOK_ARCH_MAX_PATCH];
	struct hook_arch_insn insns[HOOK_ARCH_MAX_INSNS];
	/* 0: the patch is a jump to the trampoline at fn_addr. Otherwise the
	 * padding form (hook_arch_prepare_short): a HOOK_ARCH_PAD_ENTRY-byte
	 * jump at fn_addr to pad_addr, in the padding next to the function,
	 * where a HOOK_ARCH_PAD_SLOT-byte jump to the trampoline is written
	 * (hook_arch_pad_bytes); pad_original keeps the padding's bytes. */
	uint64_t pad_addr;
	uint8_t pad_original[8];
};

/* The padding form (x86_64): `jmp rel8` at the entry, `jmp rel32` in the
 * padding; the padding slot must lie within HOOK_ARCH_PAD_REACH_* of the
 * entry jump's end. */
#define HOOK_ARCH_PAD_ENTRY 2
#define HOOK_ARCH_PAD_SLOT 5
#define HOOK_ARCH_PAD_REACH_FWD 127
#define HOOK_ARCH_PAD_REACH_BACK 128

/* The far patch form (arm64: adrp/add/br x16 over the first three
 * instructions, +-4 GiB; arm64/arch.h): a longer patch for a function
 * whose trampoline block cannot be placed within HOOK_ARCH_REACH (a
 * module wider than that). HOOK_ARCH_FAR_REACH is its reach, 0 where
 * the architecture has none (x86_64: rel32 already reaches +-2 GiB);
 * hook_arch_prepare_far() plans it (the body swept for branches into
 * the longer patch), declared only where the reach is not 0. */
#ifndef HOOK_ARCH_FAR_REACH
#define HOOK_ARCH_FAR_REACH 0
#endif
#if HOOK_ARCH_FAR_REACH
enum ada_hook_skip hook_arch_prepare_far(const uint8_t *code, uint64_t addr, uint64_t size,
                                         struct hook_arch_plan *plan);
#endif

/* Decides whether the function [addr, addr+size) whose bytes are `code`
 * can be patched, scanning the whole body for branches back into the
 * patched bytes. Fills plan. Returns ADA_HOOK_OK or the skip reason. */
enum ada_hook_skip hook_arch_prepare(const uint8_t *code, uint64_t addr, uint64_t size,
                                     struct hook_arch_plan *plan);

/* Memory prepare may read beyond the function: switch tables (x86_64:
 * .rodata). Each region is readable for its whole [addr, addr+len), and
 * its bytes are at `bytes` (in the agent bytes == (const uint8_t *)addr,
 * the module's readable PT_LOAD segments; a copy in tests). */
struct hook_arch_region {
	uint64_t addr, len;
	const uint8_t *bytes;
};
struct hook_arch_memview {
	const struct hook_arch_region *v;
	size_t n;
};

/* hook_arch_prepare() that may also read switch tables inside mem: a
 * function whose indirect jumps are all recognised switch dispatches
 * (bound check + table, read entry by entry) with no entry inside the
 * patch is hooked instead of skipped with ADA_SKIP_JUMP_TABLE. mem NULL
 * (or a table outside it): exactly hook_arch_prepare(). */
enum ada_hook_skip hook_arch_prepare_mem(const uint8_t *code, uint64_t addr, uint64_t size,
                                         const struct hook_arch_memview *mem,
                                         struct hook_arch_plan *plan);

/* The prologue half of hook_arch_prepare(): decodes and classifies the
 * displaced instructions and fills plan, without the body sweep (no check
 * for branches into the patch). Only for a function a full
 * hook_arch_prepare() of the same bytes already found ADA_HOOK_OK (the
 * agent's plan cache, which also checks that patch_len is the same). */
enum ada_hook_skip hook_arch_prepare_prologue(const uint8_t *code, uint64_t addr, uint64_t size,
                                              struct hook_arch_plan *plan);

/* The padding form, for a function hook_arch_prepare_mem() refused as
 * ADA_SKIP_TOO_SHORT or ADA_SKIP_BRANCH_INTO_PATCH: plans a patch that
 * displaces only the instructions covering the first HOOK_ARCH_PAD_ENTRY
 * bytes (all inside the function), with the same body sweep for branches
 * into them, and requires that execution never runs off the function's
 * end (its last instruction, in a linear decode of the whole body, is an
 * unconditional jump, a return or a trap), so the bytes after it are
 * reached only by a branch (which the caller rules out). A 1-byte
 * function that is such an instruction (`ret`) gets a plan whose patch
 * covers it and the byte after it (patch_len HOOK_ARCH_PAD_ENTRY, one
 * displaced instruction): the caller proves that byte padding and puts
 * it in original[1]. Leaves pad_addr 0: the caller picks the padding
 * slot. Returns ADA_HOOK_OK or the reason it cannot (the caller keeps
 * the first verdict then). */
enum ada_hook_skip hook_arch_prepare_short(const uint8_t *code, uint64_t addr, uint64_t size,
                                           const struct hook_arch_memview *mem,
                                           struct hook_arch_plan *plan);
/* hook_arch_prepare_prologue() for the padding form (a cached verdict of
 * hook_arch_prepare_short()): the prologue and the end check, no sweep. */
enum ada_hook_skip hook_arch_prepare_prologue_short(const uint8_t *code, uint64_t addr,
                                                    uint64_t size, struct hook_arch_plan *plan);

/* Does a linear decode of the function [addr, addr+size) (its bytes at
 * code) end exactly at its end, on an instruction after which execution
 * never goes on (x86: ret, jmp, ud2, hlt, int3)? Then nothing runs off
 * its end into the bytes after it. False when undecodable. */
bool hook_arch_ends_closed(const uint8_t *code, uint64_t addr, uint64_t size);

/* Padding inside a function, for the padding form when none lies next
 * to it: the first stretch [*lo, *hi) (offsets from addr) of at least
 * min fill bytes (hook_arch_fill_len's) that starts at an offset in
 * [from, to] and that nothing in the function runs into. Proved by a
 * linear decode of the whole body [addr, addr+size) that ends exactly at
 * its end: the stretch follows an instruction after which execution never
 * goes on (x86: ret, jmp, ud2, hlt, int3), no direct branch of the
 * function lands in it, and the function has no indirect jump (whose
 * targets are not known). Branches from other functions are the caller's
 * to rule out. False when there is none (always on arm64, which has no
 * padding form). */
bool hook_arch_inner_fill(const uint8_t *code, uint64_t addr, uint64_t size, uint64_t from,
                          uint64_t to, size_t min, uint64_t *lo, uint64_t *hi);

/* How many of the len bytes at code are alignment padding, read as whole
 * fill instructions from code[0]: the breakpoint byte (x86: 0xCC), the
 * one-byte nop and the multi-byte nops assemblers pad code with (x86:
 * 66* 90, [66|2E]* 0F 1F /0). Stops at the first other instruction (or
 * one that runs past len). */
size_t hook_arch_fill_len(const uint8_t *code, size_t len);

/* Length of the instruction at code (pc: its address), at most `left`
 * bytes, or 0 when it cannot be decoded. For a direct relative jmp, jcc,
 * call, loop or jrcxz (rel8/rel32), *has_target = 1 and *target is where
 * it goes. A fast table first, capstone when the table declines; both
 * give the same answers (test_hook_len.c). Any thread; not hook context. */
size_t hook_arch_insn_len(const uint8_t *code, size_t left, uint64_t pc, uint64_t *target,
                          int *has_target);

/* Writes the trampoline for plan into buf (HOOK_ARCH_MAX_TRAMPOLINE bytes),
 * which will execute at buf_addr; its return point R_F jumps to exit_path
 * (a return trampoline, which must be within +-2 GiB of buf_addr: the
 * agent emits one at the start of each block). Returns its length, or 0
 * when exit_path is out of reach, when buf_addr is
 * not within +-2 GiB of the function (the patch is a jmp rel32) or a
 * displaced rip-relative memory operand cannot reach its target from
 * buf_addr (the caller then tries other memory or skips with
 * ADA_SKIP_NO_TRAMPOLINE_MEMORY). hook_mem places trampolines near their
 * module, so in practice 0 only happens for memory far from the module. */
size_t hook_arch_emit_trampoline(const struct hook_arch_plan *plan, uint8_t *buf, uint64_t buf_addr,
                                 uint64_t fn_id, uint64_t enter_handler, uint64_t exit_path);

/* The fast form of an index-lane trampoline (f from the agent): the
 * function's trampoline is `call stub`, the call/jump choice, R_F and
 * fn_id as data; stub is the block's enter stub
 * (hook_arch_emit_enter_stub, within +-2 GiB). Returns its length or 0
 * as hook_arch_emit_trampoline. */
size_t hook_arch_emit_trampoline_fast(const struct hook_arch_plan *plan, uint8_t *buf,
                                      uint64_t buf_addr, uint64_t fn_id, uint64_t stub,
                                      uint64_t exit_path);
struct hook_arch_reloc_map;
/* The same, and in *map what hook_arch_reloc_map(plan, buf_addr, true)
 * would give, taken from this emission (the agent's install: one emission
 * per function instead of two). *map is set only when the length is not 0. */
size_t hook_arch_emit_trampoline_fast_map(const struct hook_arch_plan *plan, uint8_t *buf,
                                          uint64_t buf_addr, uint64_t fn_id, uint64_t stub,
                                          uint64_t exit_path, struct hook_arch_reloc_map *map);

/* The counters argument of blocks that add to %gs:8*slot instead (x86_64 only: the
 * thread's %gs base is its counters; no register kept, no pointer loaded). */
#define HOOK_ARCH_COUNT_GS INT32_MIN
/* The qword just below every thread's counters (gs:[-8] in the %gs form):
 * a %gs block adds only when it finds this there, so a program that points
 * %gs elsewhere after its thread registered never has a count written into
 * its memory (the call then takes the trampoline: an event). */
#define HOOK_ARCH_COUNT_GS_TAG 0x74636461 /* "adct" */

/* A count-only block (at most HOOK_ARCH_COUNT_BLOCK_MAX bytes) for the
 * function whose fast trampoline is at tramp (hook_arch_emit_trampoline_fast;
 * x86_64: within +-2 GiB): when the 32-bit TLS word at the thread-pointer
 * offset gate is 1, it adds 1 to counter slot of the array the TLS
 * pointer at counters points to (HOOK_ARCH_COUNT_GS: the array at the
 * %gs base) and jumps to the trampoline's relocated
 * prologue (every register but the flags as they were; arm64: and its
 * call scratch x16/x17); otherwise it jumps to the trampoline. The
 * function's patch then targets the block (docs/hooks.md, "Count-only
 * functions"). Returns its length or 0. arm64 states its own maximum. */
#ifndef HOOK_ARCH_COUNT_BLOCK_MAX
#define HOOK_ARCH_COUNT_BLOCK_MAX 64
#endif
size_t hook_arch_emit_count_block(uint8_t *buf, uint64_t buf_addr, int32_t gate, int32_t counters,
                                  uint32_t slot, uint64_t tramp);
/* The inline form (the install's blocks, emitted with the function's
 * trampoline, and the budget's runtime moves, with the prologue decoded
 * again from the original bytes): the same test and count, then plan's relocated prologue
 * and the jump back behind the patch, as the trampoline's own copy does,
 * so a counted call takes one taken jump fewer. At most
 * HOOK_ARCH_COUNT_INLINE_MAX bytes; 0 where the arch has no such form or
 * the prologue cannot be relocated here (the caller then emits
 * hook_arch_emit_count_block). *map: where the block's relocated copies
 * are, as hook_arch_emit_trampoline_fast_map gives a trampoline's (n 0
 * when they do not fit its bytes), for the crash handler's map. */
#ifndef HOOK_ARCH_COUNT_INLINE_MAX
#define HOOK_ARCH_COUNT_INLINE_MAX (HOOK_ARCH_MAX_TRAMPOLINE + 16)
#endif
size_t hook_arch_emit_count_block_inline(const struct hook_arch_plan *plan, uint8_t *buf,
                                         uint64_t buf_addr, int32_t gate, int32_t counters,
                                         uint32_t slot, uint64_t tramp,
                                         struct hook_arch_reloc_map *map);

/* The copy form (x86_64; the install's blocks and the budget's moves,
 * tried before the inline form): the same test and count, then a copy of
 * the function's first bytes up to an instruction after which execution
 * never goes on (x86: ret, jmp, ud2, hlt, int3), relocated for the block
 * (branches to an instruction of the copy go to its copy, any other to
 * the original), so a call whose path stays in them returns from the
 * block and takes one taken jump (the patch's). code: the function's
 * bytes as they are now (its first plan->patch_len may be the patch: the
 * plan's original bytes stand for them); avail: how many of them are
 * the function's and nobody else's (up to the next symbol), of which at
 * most HOOK_ARCH_COUNT_COPY_SPAN are decoded. The longest such prefix
 * whose block fits HOOK_ARCH_COUNT_COPY_MAX bytes; 0 when there is none
 * (the caller then emits the inline form). *map: every copy (set only
 * when the length is not 0). Decodes (a capstone lock): not hook context. */
#ifndef HOOK_ARCH_COUNT_COPY_MAX
#define HOOK_ARCH_COUNT_COPY_MAX 128
#define HOOK_ARCH_COUNT_COPY_SPAN 96
#endif
/* At most this many instructions are copied (the decode's room). */
#define HOOK_ARCH_COUNT_COPY_INSNS 48
/* Where a count block's copies are: instruction i, at plan->fn_addr +
 * off[i], starts at the block's at[i] (n pairs). Every copied instruction
 * is in it: a fault on any of them is the function's own (the copies are
 * exact equivalents, and nothing but the count ran before them), which
 * the crash handler names (agent_trampmap.c). The inline form's map
 * (struct hook_arch_reloc_map) widens to one, its jump back as a pair. */
struct hook_arch_copy_map {
	uint8_t n;
	uint8_t off[HOOK_ARCH_COUNT_COPY_INSNS + 1];
	uint8_t at[HOOK_ARCH_COUNT_COPY_INSNS + 1];
};
_Static_assert(HOOK_ARCH_COUNT_COPY_SPAN <= 256 && HOOK_ARCH_COUNT_COPY_MAX <= 256,
               "a copy map's offsets fit in a byte");
size_t hook_arch_emit_count_block_copy(const struct hook_arch_plan *plan, const uint8_t *code,
                                       size_t avail, uint8_t *buf, uint64_t buf_addr, int32_t gate,
                                       int32_t counters, uint32_t slot, uint64_t tramp,
                                       struct hook_arch_copy_map *map);

/* The enter stub the fast trampolines of one block call (at most
 * HOOK_ARCH_ENTER_STUB_MAX bytes); returns its length, 0 on a failure. */
size_t hook_arch_emit_enter_stub(uint8_t *buf, uint64_t buf_addr, const struct hook_arch_fast *f);

/* A return trampoline with the index lane's fast path in front (at most
 * HOOK_ARCH_RETURN_TRAMPOLINE_MAX bytes), falling back to f->exit_full /
 * f->exit_held; reached and leaving as hook_arch_emit_return_trampoline's. */
size_t hook_arch_emit_return_trampoline_fast(uint8_t *buf, uint64_t buf_addr,
                                             const struct hook_arch_fast *f);

/* Writes a return trampoline (at most HOOK_ARCH_RETURN_TRAMPOLINE_MAX
 * bytes) into buf; returns its length. It is reached by `ret` (a swapped
 * return address) or by a trampoline's R_F (a jmp rel32), and returns to
 * the address exit_handler gives. */
size_t hook_arch_emit_return_trampoline(uint8_t *buf, uint64_t buf_addr, uint64_t exit_handler);

/* The bytes that replace the function's first plan->patch_len bytes:
 * `jmp rel32` to tramp_addr (the padding form: `jmp rel8` to
 * plan->pad_addr), then the original bytes unchanged (nothing
 * branches into them, and leaving them lets hook_patch_apply() change only
 * 5 bytes, atomically when they sit in one aligned 8-byte word).
 * tramp_addr must be one hook_arch_emit_trampoline() accepted. */
void hook_arch_patch_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                           uint8_t out[HOOK_ARCH_MAX_PATCH]);

/* The padding form's second patch: the HOOK_ARCH_PAD_SLOT bytes written
 * at plan->pad_addr (a jump to tramp_addr). */
void hook_arch_pad_bytes(const struct hook_arch_plan *plan, uint64_t tramp_addr,
                         uint8_t out[HOOK_ARCH_PAD_SLOT]);

/* ada attach: where a thread stopped at pc, strictly inside the bytes
 * plan displaces, resumes instead: the relocated copy of the displaced
 * instruction that starts at pc, in the trampoline emitted for plan at
 * tramp_addr (its bytes readable at tramp), after the enter handler's
 * call. 0 when it cannot be moved: pc is not strictly inside the patch,
 * not the start of a displaced instruction, or the trampoline's
 * relocated part is not what plan emits at tramp_addr. */
uint64_t hook_arch_moved_pc(const struct hook_arch_plan *plan, const uint8_t *tramp,
                            uint64_t tramp_addr, uint64_t pc);

/* Where a trampoline holds the relocated copy of each displaced
 * instruction: instruction i, at plan->fn_addr + off[i], starts at
 * tramp_addr + at[i] (n instructions, in order); the jump back behind the
 * patch, at end_at, stands for plan->fn_addr + end_off (a pc there has run
 * every copy: a thread stopped after a system call that was the last
 * displaced instruction). The crash handler maps a pc there back to the
 * function (agent_crash.c). */
struct hook_arch_reloc_map {
	uint8_t n;
	uint8_t off[HOOK_ARCH_MAX_INSNS];
	uint8_t at[HOOK_ARCH_MAX_INSNS];
	uint8_t end_off, end_at;
};
_Static_assert(HOOK_ARCH_MAX_TRAMPOLINE <= 256 && HOOK_ARCH_MAX_PATCH <= 256,
               "a map's offsets fit in a byte");

/* The map of the trampoline emitted for plan at tramp_addr (fast: by
 * hook_arch_emit_trampoline_fast, else by hook_arch_emit_trampoline).
 * Emits its relocated part again into a scratch buffer (cold: once per
 * hooked function at install). False when plan emits no trampoline there. */
bool hook_arch_reloc_map(const struct hook_arch_plan *plan, uint64_t tramp_addr, bool fast,
                         struct hook_arch_reloc_map *out);

/* The trampoline address the patch bytes (hook_arch_patch_bytes() for
 * plan) jump to, or 0 when they are not such a patch. */
uint64_t hook_arch_patch_target(const struct hook_arch_plan *plan, const uint8_t *patch);

#endif
