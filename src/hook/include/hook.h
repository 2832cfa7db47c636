/*
 * ada hook: the agent (libada_agent.so) -- its public face.
 *
 * The agent is LD_PRELOADed into the traced program by `ada record`. Its
 * constructor discovers every loaded image, reads their function symbols,
 * writes one pid_N/module_<ID>.syms file per image (docs/internals.md),
 * and patches every function it can prove safe (hook_arch.h) so that each
 * call and return reaches ada_hook_on_enter()/ada_hook_on_exit(), which
 * keep a per-thread shadow stack and emit index events (ring.h).
 *
 * This header has two audiences:
 *   - the trampolines emitted by hook_arch (the two handlers below);
 *   - the agent's tests, which call the discovery and symbol-table parts
 *     directly on known ELF files (the ada_hook_symtab_* functions).
 * Nothing else links the agent.
 */
#ifndef ADA_HOOK_H
#define ADA_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hook_arch.h"

/* Marks code reachable from a trampoline: no allocation, no lock, no libc,
 * no errno change; compiled with -mgeneral-regs-only. A marker for readers
 * and greps; the compile flags are set per file in CMake. */
#define ADA_HOOKCTX

/* ---- the two handlers the trampolines call (hook context) ---- */

/* Entry of a hooked function fn_id. ret_slot points at the return address
 * the caller pushed; the handler that pushes a frame stores 0 there (the
 * trampoline then calls the body, which returns through the trampoline's
 * return point: hook_arch.h), or, on the side path, the return
 * trampoline's address. regs are the saved argument registers (read-only
 * here). */
ADA_HOOKCTX void ada_hook_on_enter(uint64_t fn_id, uint64_t *ret_slot,
                                   const struct ada_hook_regs *regs);
/* A hooked function returned into the return trampoline (through its
 * trampoline's return point, or directly); sp is the stack
 * pointer right after its `ret` (sp - 8 held the return address). Returns
 * the original return address to continue at. */
ADA_HOOKCTX uint64_t ada_hook_on_exit(uint64_t sp);

/* ---- symbol tables of one ELF image (not hook context) ---- */

enum ada_symtab_source {
	ADA_SYMSRC_SYMTAB = 0,    /* the file's own .symtab */
	ADA_SYMSRC_DYNSYM = 1,    /* only .dynsym: stripped file */
	ADA_SYMSRC_DEBUGLINK = 2, /* .symtab of its debug file (build-id or .gnu_debuglink) */
	ADA_SYMSRC_EHFRAME = 3,   /* stripped: .dynsym and .eh_frame's function entries */
};
const char *ada_symtab_source_name(enum ada_symtab_source s);

/* One function of an image. offset is relative to the image's load base
 * (dlpi_addr): the runtime address is load_base + offset. */
struct ada_hook_fn {
	uint64_t offset;
	uint64_t size;
	uint32_t name_off; /* into ada_hook_symtab.names */
	uint8_t status;    /* enum ada_hook_skip; ADA_HOOK_OK when hooked */
	uint8_t is_ifunc;
	uint8_t is_global;
	/* The agent's install marks special names here for a while;
	 * ada_hook_analyse_file() leaves in it, for a function it found
	 * too_short or branch_into_patch, why the padding form could not
	 * take it (enum ada_hook_pad_why), else 0. */
	uint8_t reserved;
};

/* Why a function stays too_short or branch_into_patch: what the padding
 * form (docs/hooks.md, "The padding form") found. */
enum ada_hook_pad_why {
	ADA_PAD_WHY_UNKNOWN = 0,
	ADA_PAD_WHY_NO_SIZE,  /* the symbol has no size */
	ADA_PAD_WHY_OFFSET1,  /* a branch lands at offset 1 */
	ADA_PAD_WHY_OPEN_END, /* it may run on into the bytes after it */
	ADA_PAD_WHY_ONE_BYTE, /* 1 byte that is no return */
	ADA_PAD_WHY_ENTRY,    /* the 2-byte jump's displaced instruction cannot move */
	ADA_PAD_WHY_NO_FILL,  /* no 5 bytes of fill within the jump's reach */
	ADA_PAD_WHY_NOT_FREE, /* fill within reach, none proved free */
	ADA_PAD_WHY_BRANCHED, /* a branch lands in the padding it would use */
	ADA_PAD_WHY_NO_FDE,   /* no unwind table tells padding from code */
	ADA_PAD_WHY_CLAIMED,  /* the padding before it is the slot of the function before */
	ADA_PAD_WHY_COUNT
};
/* One sentence for a reader ("" for ADA_PAD_WHY_UNKNOWN). */
const char *ada_hook_pad_why_text(unsigned why);
/* A short name for JSON ("" for ADA_PAD_WHY_UNKNOWN). */
const char *ada_hook_pad_why_name(unsigned why);

/* An executable range of the image, as offsets from the load base. */
struct ada_hook_xrange {
	uint64_t lo, hi;
};

#define ADA_HOOK_BUILD_ID_MAX 64
#define ADA_HOOK_MAX_XRANGES 8
/* Longest .gnu_debuglink file name kept (with its NUL). */
#define ADA_HOOK_DEBUGLINK_MAX 256

struct ada_hook_symtab {
	struct ada_hook_fn *fns; /* sorted by offset; index = symbol_index */
	size_t count;
	char *names; /* NUL-separated name pool */
	size_t names_len;
	enum ada_symtab_source source;
	uint8_t build_id[ADA_HOOK_BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t entry; /* e_entry as an offset (0 when none) */
	struct ada_hook_xrange xr[ADA_HOOK_MAX_XRANGES];
	size_t xr_count;
	size_t n_fde; /* functions found from .eh_frame only, named "<file>+0x<offset>" */
	/* The .gnu_debuglink name the read looked for ("" when the image has
	 * none, or the read never needed it): where a debug file installed
	 * later would be found (the symbol-table cache checks it is not). */
	char debuglink[ADA_HOOK_DEBUGLINK_MAX];
	/* fns lies inside the names allocation (a symbol-table cache file's
	 * buffer, records after the names): freed with it, not alone. */
	bool fns_in_names;
};

/* Reads the functions of the ELF file at path: .symtab when present, else
 * the .symtab of its debug file when installed (by build-id under
 * debug_root, NULL: /usr/lib/debug; or by .gnu_debuglink next to the
 * file, in its .debug/ or under debug_root), else .dynsym (and with
 * ADA_SYMTAB_FDE the .eh_frame function entries .dynsym does not cover,
 * except in an image symbols.c finds carries the C runtime; see
 * ada_hook_symtab_read_ex). Executable ranges come
 * from the file's PT_LOAD program headers. Functions get their first
 * verdict here: IFUNC, ENTRY_POINT, OUTSIDE_TEXT and ALIAS (same offset as
 * an earlier function: global names win, then the shorter, then by name);
 * the rest are ADA_HOOK_OK, to be decided by the patcher.
 * Returns 0, -ENOENT/-EACCES (open), -ENOEXEC (not a usable ELF), -ENOMEM. */
int ada_hook_symtab_read(const char *path, const char *debug_root, struct ada_hook_symtab *out);
/* flags of ada_hook_symtab_read_ex */
#define ADA_SYMTAB_FDE 1u /* no symbol table: add .eh_frame's function entries */
/* ada_hook_symtab_read() with flags: the agent asks for the .eh_frame
 * functions of the main program only (docs/hooks.md, "Stripped images"). */
int ada_hook_symtab_read_ex(const char *path, const char *debug_root, unsigned flags,
                            struct ada_hook_symtab *out);
void ada_hook_symtab_fini(struct ada_hook_symtab *st);
static inline const char *ada_hook_fn_name(const struct ada_hook_symtab *st,
                                           const struct ada_hook_fn *f)
{
	return st->names + f->name_off;
}

/* What a module_<ID>.syms file says about its image. */
struct ada_hook_module_info {
	uint32_t module_id;
	const char *path;
	uint64_t load_base;
};

/* Writes the symbols file text (docs/internals.md) to f; *table_xxh64
 * (when not NULL) gets the table hash its header carries.
 * Returns 0, -ENOMEM or -EIO. */
int ada_hook_syms_write(FILE *f, const struct ada_hook_module_info *mi,
                        const struct ada_hook_symtab *st, uint64_t *table_xxh64);
/* The function-table lines ("F ...\n" each, in order), malloc'd; *len gets
 * their length. NULL: -ENOMEM. A version 2 file's body (docs/format.md). */
char *ada_hook_syms_body(const struct ada_hook_symtab *st, size_t *len);
/* The same lines, from function *next on, formatted into buf[0, cap) as
 * many whole ones as fit: returns their bytes and advances *next past
 * them. 0 with *next < st->count: line *next alone needs *need bytes
 * (more than cap). For a writer that streams the body through a small
 * buffer instead of a fresh one of its whole size. */
size_t ada_hook_syms_body_part(const struct ada_hook_symtab *st, size_t *next, char *buf,
                               size_t cap, size_t *need);
/* Writes a version 2 symbols file's lines to f: the image's header, its
 * table_xxh64 (hash, the body's XXH64) and the body's name and length.
 * Returns 0 or -EIO. */
int ada_hook_syms_write_v2(FILE *f, const struct ada_hook_module_info *mi,
                           const struct ada_hook_symtab *st, uint64_t hash, const char *body,
                           size_t body_len);
/* XXH64 (seed 0) of the function-table lines exactly as written. */
uint64_t ada_hook_syms_table_hash(const struct ada_hook_symtab *st);

/* ---- agent options (ADA_HOOK_CONFIG) ---- */

#define ADA_HOOK_MAX_GLOBS 32

/* ADA_HOOK_CONFIG is a ';'-separated list of key=value:
 *   exclude=GLOB[,GLOB...]          modules (path or basename) not to hook
 *   include=GLOB[,GLOB...]          when given, only these modules
 *   exclude-symbol=GLOB[,GLOB...]   functions not to hook
 *   include-symbol=GLOB[,GLOB...]   when given, only these functions
 *   follow=0|1                      follow forked/exec'd children (default 1)
 *   defaults=0|1                    apply the default exclude list (default 1)
 *   cache=0|1                       use the per-build-id plan cache (default 1;
 *                                   docs/hooks.md, "Plan cache")
 *   shared-text=0|1                 map a patched copy of each image's text
 *                                   kept beside the plan cache instead of
 *                                   patching it in place (default 1; needs
 *                                   the cache; docs/hooks.md, "Shared
 *                                   patched text")
 *   fde=0|1                         leave functions without an .eh_frame FDE
 *                                   unhooked in images that have FDEs (default 1;
 *                                   docs/hooks.md, no_unwind_info)
 *   pad=0|1                         hook functions too short for the patch, or
 *                                   with a branch into it, in the padding form
 *                                   (default 1; 0, for experiments, also turns
 *                                   the plan cache off; docs/hooks.md)
 *   detail=0|1                      capture the detail lane (default 0)
 *   stack-bytes=N                   stack bytes per CALL detail record, 0..512
 *                                   (default 128)
 *   detail-symbol=GLOB[,GLOB...]    only these functions enter the detail lane
 * Keys may repeat (their globs accumulate). Glob syntax is fnmatch(3). */
struct ada_hook_config {
	char *mod_exclude[ADA_HOOK_MAX_GLOBS];
	char *mod_include[ADA_HOOK_MAX_GLOBS];
	char *sym_exclude[ADA_HOOK_MAX_GLOBS];
	char *sym_include[ADA_HOOK_MAX_GLOBS];
	size_t n_mod_exclude, n_mod_include, n_sym_exclude, n_sym_include;
	bool follow;
	bool defaults;
	bool cache;
	bool shared_text;
	bool need_fde;
	bool pad;
	/* Threads for the start-up analysis (1 or 2): a second thread
	 * makes glibc treat the program as multi-threaded for good, a
	 * visible change, so it is the user's choice (ada record
	 * --analysis-threads). */
	uint32_t analysis_threads;
	/* Detail lane (issue 8): on/off, stack bytes per CALL record, and the
	 * functions whose calls enter it (none given: every hooked one). */
	bool detail;
	bool detail_fp; /* detail-fp=1: the records carry xmm0..7 (--detail-fp) */
	uint32_t stack_bytes;
	char *detail_sym[ADA_HOOK_MAX_GLOBS];
	size_t n_detail_sym;
	/* key-symbol=MODULE_GLOB:SYMBOL_GLOB (ada record --key-symbols): the
	 * agent's own set until the recorder publishes one (src/keysym). */
	char *key_sym[ADA_HOOK_MAX_GLOBS];
	size_t n_key_sym;
	/* count-only=GLOB (ada record --count-only): functions that keep an
	 * exact call count and write no events (docs/hooks.md, "Count-only
	 * functions"). */
	char *count_only[ADA_HOOK_MAX_GLOBS];
	size_t n_count_only;
	/* overhead-budget=PCT (1..100; 0: off): the agent moves the hottest
	 * short functions to count-only while tracing costs a thread more. */
	uint32_t overhead_budget;
	/* count-gs=0: x86_64 count blocks reach the counters through a TLS
	 * pointer instead of the %gs base (the form a program that uses %gs
	 * gets; tests of that form). Default 1. */
	bool count_gs;
	/* count-copy=0: count blocks never take the copy form (the
	 * function's first bytes up to a `ret` or `jmp` copied into the
	 * block), only the inline one. Default 1. */
	bool count_copy;
	/* count-live=0: with count-only=GLOB and no overhead-budget, no
	 * thread of the agent's keeps agent.json's live counts (the program
	 * stays single-threaded to glibc; its counts are those of the last
	 * write until its exit). Default 1. */
	bool count_live;
};
/* Parses (buf, len) -- not NUL-terminated. -EINVAL on an unknown key or a
 * bad value, -E2BIG on too many globs, -ENOMEM. cfg is valid (possibly
 * partly filled) either way; free with ada_hook_config_fini(). */
int ada_hook_config_parse(const char *buf, size_t len, struct ada_hook_config *cfg);

/* The verdicts a recording's agent would give the functions of the ELF
 * file at path (x86_64), without loading or running it: its segments
 * mapped read-only, then symbols (is_main: as the program's own image),
 * cfg's verdicts, prepare, the padding form and the cross-function check
 * (analyse_file.c). st is filled, each function's status set (and, for
 * too_short and branch_into_patch, reserved: enum ada_hook_pad_why). 0,
 * -ENOEXEC (not a usable ELF), -EEXIST (a position-dependent executable
 * whose addresses are taken here), -ENOMEM, or -errno of open/mmap. */
int ada_hook_analyse_file(const char *path, const char *debug_root, bool is_main,
                          const struct ada_hook_config *cfg, struct ada_hook_symtab *st);
void ada_hook_config_fini(struct ada_hook_config *cfg);
/* Whether name matches one of the count-only globs. */
bool ada_hook_config_count_only(const struct ada_hook_config *cfg, const char *name);
/* Verdict for one module path: true when it is to be hooked. */
bool ada_hook_config_module_wanted(const struct ada_hook_config *cfg, const char *path);
/* Verdict for one function name: ADA_HOOK_OK or ADA_SKIP_EXCLUDED. The
 * default exclude list (docs/hooks.md) applies when cfg->defaults. */
enum ada_hook_skip ada_hook_config_symbol_verdict(const struct ada_hook_config *cfg,
                                                  const char *name);

#endif
