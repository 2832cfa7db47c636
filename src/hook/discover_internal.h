/*
 * Image discovery (discover.c), private to src/hook.
 */
#ifndef ADA_DISCOVER_INTERNAL_H
#define ADA_DISCOVER_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook.h"

struct discover_image {
	char path[PATH_MAX]; /* absolute path (main program: the name it was started as) */
	const char *name;    /* dlpi_name as the loader has it */
	uint64_t base;       /* dlpi_addr: runtime address = base + offset */
	uint64_t lo, hi;     /* mapped range of its PT_LOAD segments */
	const char *needed[64];
	size_t n_needed;
	unsigned reach; /* bit 0: needed by the program, bit 1: by the agent */
	int is_main;
	enum ada_hook_skip skip; /* ADA_HOOK_OK, LOADER or AGENT */
	const char *why;
};

/* Lists every loaded image, classified. self_addr is any address inside
 * the agent. The DT_NEEDED strings point into the images' mappings: use
 * them before the next dlclose. Returns 0, -ENOMEM or -ENOENT; free
 * *out with free(). */
int discover_images(uint64_t self_addr, struct discover_image **out, size_t *n_out);

/* The load base of a library the agent loaded itself (dlopen: libelf,
 * agent_libelf.c): it and what it needs are agent dependencies, left
 * unhooked, in every scan from now on. */
void discover_set_agent_library(uint64_t base);

/* Runs body(arg, lo, hi) over ranges that cover [0, n) once, grain
 * indices at a time (the last range may be shorter), perhaps on two
 * threads at once, and returns when every range is done. The agent's
 * start-up passes one that shares the ranges with a helper thread
 * (agent_install.c); NULL: all of [0, n) here, on the calling thread. */
typedef void (*discover_body)(void *arg, size_t lo, size_t hi);
typedef void (*discover_runner)(discover_body body, void *arg, size_t n, size_t grain);

/* Marks ADA_SKIP_BRANCH_INTO_PATCH every ADA_HOOK_OK function of st
 * (loaded at base; plans[i] prepared for function i) into whose patched
 * bytes some other function of the image branches. run: who sweeps the
 * functions (the result does not depend on it). 0 or -ENOMEM. */
int discover_xref_check(uint64_t base, struct ada_hook_symtab *st,
                        const struct hook_arch_plan *plans, discover_runner run);
/* Words per function in the padding form's gaps: up to seven ranges
 * [lo, hi) (runtime addresses; lo == hi: none) no branch may target: the
 * gap holding its slot; when it took a slot another function could have
 * taken, that function's patched bytes after its first (were a branch
 * to land there, that function would need the slot; the function before
 * the gap, or each one around a neighbour's gap); for a 1-byte function
 * whose slot lies before it, the fill after it that its entry jump's
 * second byte is the first of (third range). */
#define DISCOVER_PAD_GAP_WORDS 14
/* discover_xref_check() with the padding form's gaps: for function i,
 * gaps[DISCOVER_PAD_GAP_WORDS * i ...] its ranges. A function one of
 * whose range bytes some branch of the image targets gets prior[i] back
 * (its verdict before the padding form) and its plan's pad_addr 0. gaps
 * and prior may be NULL. */
int discover_xref_check_pad(uint64_t base, struct ada_hook_symtab *st, struct hook_arch_plan *plans,
                            const uint64_t *gaps, const uint8_t *prior, discover_runner run);

/* discover_ehframe.c: an image's .eh_frame_hdr search table, as the
 * loader mapped it or in a file's bytes. Addresses are the view's own
 * (runtime addresses, or the file's virtual addresses); the bytes of
 * address a are at a + bias. */
struct discover_fde_table {
	uint64_t hdr; /* address of .eh_frame_hdr; 0: none */
	size_t n;     /* entries in its table */
	uint64_t lo, hi;
	uint64_t bias;
};
/* Finds the table of the image loaded at base whose PT_LOAD segments span
 * [lo, hi). 0; -ENOENT (none: the image was built without unwind
 * tables) or -ENOTSUP (an encoding this reader does not know): then t
 * answers "cannot tell" for every address. */
int discover_fde_table(uint64_t base, uint64_t lo, uint64_t hi, struct discover_fde_table *t);
/* The table of a file's segment: seg holds the bytes of addresses [lo, hi)
 * (the segment's file part), hdr is the address of its .eh_frame_hdr
 * (PT_GNU_EH_FRAME). Errors as discover_fde_table(). */
int discover_fde_table_mem(const uint8_t *seg, uint64_t lo, uint64_t hi, uint64_t hdr,
                           struct discover_fde_table *t);
/* Whether some FDE covers addr (runtime address); true when it cannot
 * tell. */
bool discover_fde_covers(const struct discover_fde_table *t, uint64_t addr);
/* discover_fde_covers() for a caller asking about addresses in rising
 * order (a symbol table's functions): the search resumes from the last
 * answer's entry, and that entry's FDE is read once for all the addresses
 * it holds. The same answers as discover_fde_covers() in any order (an
 * address below the last one searches afresh). Zero-initialise the cursor
 * before the first call; one cursor per table. */
struct discover_fde_cursor {
	size_t n_le;           /* entries starting at or below the last address */
	uint64_t start, range; /* entry n_le - 1's start and FDE range (n_le > 0) */
	uint64_t last;         /* the last address asked about */
	bool used;
	/* the last CIE read (0: none) and what it says (discover_ehframe.c) */
	uint64_t cie_at;
	uint8_t cie_enc;
	bool cie_z, cie_entry;
};
bool discover_fde_covers_next(const struct discover_fde_table *t, uint64_t addr,
                              struct discover_fde_cursor *c);
/* Entry i (< t->n, in address order) when it is a function entry: its
 * CIE's initial state is the x86-64 one at a call (CFA = rsp + 8, the
 * return address at CFA - 8, no register saved; not a signal frame) and
 * its own instructions change nothing before the first advance, so the
 * code at *start runs with the return address on top of the stack, as
 * after a call or a tail call. *start and *len (its FDE's range) are set
 * then. False for a fragment entered in another state (gcc's .cold
 * blocks after a push, the PLT, _start), and when it cannot tell. */
bool discover_fde_entry(const struct discover_fde_table *t, size_t i, uint64_t *start,
                        uint64_t *len);
/* Entry i's start and length whenever its FDE can be read (false: it
 * cannot), and in *entry what discover_fde_entry() would answer. */
bool discover_fde_at(const struct discover_fde_table *t, size_t i, uint64_t *start, uint64_t *len,
                     bool *entry);

/* discover_pad.c: padding slots for the padding form of a hook. */
struct discover_pad_view {
	/* true when an FDE covers the address, or when it cannot tell */
	bool (*covered)(void *arg, uint64_t addr);
	void *arg;
};
/* pm[k]: the highest end (offset + size, at least offset + 1) of
 * st->fns[0 .. k]; malloc'ed, NULL without memory. */
uint64_t *discover_pad_ends(const struct ada_hook_symtab *st);
/* For function i of st (loaded at base; its bytes and its neighbours'
 * readable there), whose plan hook_arch_prepare_short() made: finds the
 * padding slot its entry jump reaches (discover_pad.c's rules), sets
 * plan->pad_addr and pad_original and gap[0 .. DISCOVER_PAD_GAP_WORDS)
 * (the ranges no branch may target: discover_xref_check_pad). False:
 * none (pad_addr 0). */
bool discover_pad_slot(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                       size_t i, const struct discover_pad_view *v, struct hook_arch_plan *plan,
                       uint64_t *gap);
/* The padding form over a whole image after prepare: every function
 * prepare found ADA_SKIP_TOO_SHORT or ADA_SKIP_BRANCH_INTO_PATCH gets a
 * short plan (hook_arch_prepare_short) and a slot, and becomes
 * ADA_HOOK_OK, or keeps its verdict. prior[i] gets every function's
 * verdict before (all of them), gaps[DISCOVER_PAD_GAP_WORDS * i ...]
 * the slot's ranges (zeroed by the caller), for discover_xref_check_pad(). fdes: the image's FDE
 * table (NULL: none, and then no slot). Returns how many became OK. */
size_t discover_pad_module(uint64_t base, struct ada_hook_symtab *st,
                           const struct discover_fde_table *fdes, struct hook_arch_plan *plans,
                           uint64_t *gaps, uint8_t *prior);
/* For function i, left ADA_SKIP_TOO_SHORT or ADA_SKIP_BRANCH_INTO_PATCH
 * by discover_pad_and_xref() over the same image: why the padding form
 * could not take it (enum ada_hook_pad_why). Repeats the form's steps
 * for it alone, and a cross-function check of its slot alone when it
 * has one (a whole sweep of the image: for ada diagnose, not the agent).
 * fdes: the image's FDE table, NULL when it has none.
 * ADA_PAD_WHY_UNKNOWN without memory. */
unsigned discover_pad_why(uint64_t base, const struct ada_hook_symtab *st, const uint64_t *pm,
                          size_t i, const struct discover_fde_table *fdes);
/* After prepare: the padding form (discover_pad_module) and the
 * cross-function check (discover_xref_check_pad); then the functions
 * the check marked ADA_SKIP_BRANCH_INTO_PATCH (another function branches
 * into their 5-byte patch) get the padding form too where its shorter
 * patch avoids the branch, and the check runs again. fdes NULL: no
 * padding form (the check alone). 0 or -ENOMEM. */
int discover_pad_and_xref(uint64_t base, struct ada_hook_symtab *st,
                          const struct discover_fde_table *fdes, struct hook_arch_plan *plans,
                          discover_runner run);

#endif
