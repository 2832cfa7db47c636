/*
 * ada symbols: the per-module symbol files pid_N/module_<ID>.syms
 * (format in docs/internals.md) and function_id -> (name, module path)
 * resolution for dump and export.
 *
 * Errors are 0 / -errno; problems that do not stop reading (a table hash
 * mismatch, a function count that disagrees) are passed to a warning
 * callback. Nothing prints.
 */
#ifndef ADA_SYMBOLS_H
#define ADA_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct ada_syms_func {
	uint32_t symbol_index;
	uint64_t offset; /* from the module's load base */
	uint64_t size;
	const char *status; /* "hooked" or a skip reason */
	const char *name;
};

struct ada_syms_module {
	uint32_t module_id;
	const char *path;          /* NULL when the file has no path line */
	const char *build_id;      /* NULL when absent or "-" */
	const char *symbol_source; /* NULL when absent */
	uint64_t load_base;
	bool has_table_xxh64;
	uint64_t table_xxh64;    /* as declared in the file */
	uint64_t computed_xxh64; /* XXH64 (seed 0) of the F lines as read */
	int64_t functions;       /* declared count, -1 when absent */
	int version;             /* 1: one file; 2: these lines + a shared body */
	const char *body;        /* version 2: the body's name in the same directory */
	int64_t body_bytes;      /* version 2: its declared length, -1 when absent */
	size_t nfuncs;
	struct ada_syms_func *funcs; /* sorted by symbol_index */
	char *text_;                 /* private: the strings above point into it */
	char *names_;                /* private: names given by ada_syms_name_from_debug() */
};

/* (ctx, file or label, line number (0: whole file), message) */
typedef void (*ada_syms_warn_fn)(void *ctx, const char *path, uint64_t line, const char *msg);

/* The longest version 2 body any reader reads. */
#define ADA_SYMS_BODY_MAX (1ull << 30)

/* Parses a .syms file held in (buf, len) (docs/format.md): version 1
 * holds the function lines itself; version 2 names a body file under
 * dirfd (module_<N>.body, shared by content with other processes) that
 * holds them, read and used only when its length and XXH64 are the
 * body_bytes and table_xxh64 the file declares, and at most body_max
 * bytes (a reader's own bound; ADA_SYMS_BODY_MAX at most). -EBADMSG (with *bad_line
 * set when not NULL) when the first line is not "ada-symbols 1" or "2", a
 * known line is malformed or module_id is missing; -ENODATA when a
 * version 2 file's body is missing, is not what it declares, or dirfd is
 * -1; -ESTALE when the body shrank while it was read; -ENOMEM. */
int ada_syms_parse_at(int dirfd, const char *buf, size_t len, uint64_t body_max,
                      struct ada_syms_module **out, uint64_t *bad_line);
/* ada_syms_parse_at(-1, ..., 0, ...): a version 1 file. */
int ada_syms_parse(const char *buf, size_t len, struct ada_syms_module **out, uint64_t *bad_line);
void ada_syms_module_free(struct ada_syms_module *m); /* NULL is a no-op */
/* Names the functions the agent named "<file name>+0x<offset>" (found
 * from .eh_frame in a stripped image, docs/hooks.md) from the image's
 * debug file when one is found now: by m's build_id under debug_root
 * (NULL: /usr/lib/debug, <root>/.build-id/xx/yyyy.debug), or by the
 * .gnu_debuglink of the file at m's path (next to it, in its .debug/, in
 * <root>/<its directory>). A file whose build-id is not m's is not used.
 * Returns how many functions it named (0: no debug file, or none of its
 * symbols is at their offsets), or -ENOMEM. */
int ada_syms_name_from_debug(struct ada_syms_module *m, const char *debug_root);
/* The function with this symbol index, or NULL. O(1) when the table is
 * dense (index i at position i), else O(log n). */
const struct ada_syms_func *ada_syms_find(const struct ada_syms_module *m, uint32_t symbol_index);

/* Every module of one pid directory: its module_*.syms (and those of its
 * modules/, in a session recorded before they moved up), plus modules
 * the manifest lists (doc may be NULL) whose file is missing, so their path
 * still resolves. */
struct ada_symtab;
/* warn (may be NULL) hears about unreadable or malformed .syms files and
 * table_xxh64 mismatches; those modules resolve without names. */
int ada_symtab_load(const char *pid_dir, const json_t *manifest, ada_syms_warn_fn warn, void *ctx,
                    struct ada_symtab **out);
void ada_symtab_free(struct ada_symtab *t);
/* Looks up function_id; *name / *module are set to NULL when unknown.
 * Returns true when the function's name is known. */
bool ada_symtab_resolve(const struct ada_symtab *t, uint64_t function_id, const char **name,
                        const char **module);
size_t ada_symtab_module_count(const struct ada_symtab *t);

/* What holds a code address (a pc at a fatal signal). */
struct ada_symtab_addr {
	uint64_t function_id; /* the function whose [start, start + size) holds it; 0: none */
	const char *name;     /* its name, NULL when none */
	const char *module;   /* the module's path, NULL when no module holds it */
	uint64_t offset;      /* from the function's start, else from the module's load base */
};
/* The function holding addr, by the functions' offsets and sizes from
 * their module's load base; else the module with the highest load base at
 * or below addr whose functions extend beyond addr (module+offset); else
 * nothing (false, *out zeroed). */
bool ada_symtab_by_addr(const struct ada_symtab *t, uint64_t addr, struct ada_symtab_addr *out);

#endif
