/*
 * The symbol-table cache (symcache.c), private to src/hook; docs/hooks.md,
 * "Symbol-table cache".
 *
 * One file per (image build-id, agent build, read flags), beside the plan
 * cache: <dir>/<build-id>-<agent-hash>-<flags>.symtab. It holds what
 * ada_hook_symtab_read_ex() made of the image (the functions, sorted and
 * given their first verdicts, their names, the executable ranges, the
 * entry point), so that a later process loading the same build reads
 * neither the image's sections nor its debug file. Stored: tables from a
 * .symtab (the image's own, or its debug file's found by build-id, whose
 * identity -- device, inode, size, modification time -- the file records
 * and a load checks), and tables from .dynsym (with .eh_frame's
 * functions) while no debug file is where the read would look for one
 * (by build-id, or the .gnu_debuglink name the file records): a load
 * checks those places again, as a debug file installed later must name
 * the functions. A file is used only when its header names the same
 * build-id, agent hash, flags and debug root (and, for a .dynsym table,
 * the image's file name, which .eh_frame's function names start with),
 * its shape is sound and its XXH64 checksum matches.
 */
#ifndef ADA_SYMCACHE_INTERNAL_H
#define ADA_SYMCACHE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook.h"

/* What a cache file must match to be used. */
struct symtab_cache_key {
	uint8_t build_id[ADA_HOOK_BUILD_ID_MAX]; /* the mapped image's */
	uint32_t build_id_len;
	uint32_t flags;       /* ada_hook_symtab_read_ex's */
	uint64_t agent_hash;  /* plan_cache_self_hash(): every agent build */
	uint64_t root_hash;   /* XXH64 of the debug root given (0: none) */
	uint64_t debug_ident; /* the debug file's identity (0: the image's own) */
	uint64_t base_hash;   /* XXH64 of the image's file name (symtab_cache_read sets it) */
};

/* Serialises key + st into a malloc'ed buffer. 0, -ENOMEM, or -EINVAL
 * for a table the format cannot hold. */
int symtab_cache_encode(const struct symtab_cache_key *key, const struct ada_hook_symtab *st,
                        uint8_t **out, size_t *out_len);

/* Parses (buf, len) against key into out (malloc'ed fns and names; the
 * caller frees them with ada_hook_symtab_fini): with adopt, buf (a
 * malloc'ed one) becomes out's name pool on success. The stored debug identity
 * must equal key->debug_ident, unless key->debug_ident is
 * SYMTAB_CACHE_ANY_IDENT, when *stored_ident gets it (the caller checks
 * that file). Returns 0, -EBADMSG (truncated, bad magic, checksum or
 * shape) or -ESTALE (a sound file for another key). */
#define SYMTAB_CACHE_ANY_IDENT UINT64_MAX
int symtab_cache_parse(uint8_t *buf, size_t len, const struct symtab_cache_key *key,
                       struct ada_hook_symtab *out, uint64_t *stored_ident, bool adopt);

/* Makes the checksum of the encoded file (buf, len) hold again after its
 * bytes were changed: for tests that must reach the checks behind it. */
void symtab_cache_reseal(uint8_t *buf, size_t len);

/* The identity of the file at path (XXH64 of device, inode, size and
 * modification time; never 0), or 0 when it cannot be had. */
uint64_t symtab_cache_file_ident(const char *path);

/* The build-id debug file of build_id under root (NULL: the default),
 * and its identity (0: none). */
uint64_t symtab_cache_debug_ident(const char *root, const uint8_t *build_id, size_t len);

/* Whether no debug file of the image at image (build-id key's, its
 * .gnu_debuglink name link, "" or NULL: none) is anywhere the read looks
 * for one: nothing at the build-id path nor at any debuglink place. */
bool symtab_cache_no_debug_file(const char *debug_root, const char *image,
                                const struct symtab_cache_key *key, const char *link);

/* st for the image at path, mapped with build-id key's (key->debug_ident
 * and key->base_hash are set here): from the cache file in dir when it
 * matches, else read (ada_hook_symtab_read_ex) and stored there when it
 * may be. *hit tells which; *refused, that a cache file was there but not
 * used (untrusted place, broken, another key, a debug file installed
 * since). Returns what ada_hook_symtab_read_ex would. */
int symtab_cache_read(const char *dir, const char *path, const char *debug_root,
                      struct symtab_cache_key *key, struct ada_hook_symtab *st, bool *hit,
                      bool *refused);

/* The build-id of the image mapped at addr (any address inside one of
 * its PT_LOAD segments), from its note as mapped, into out (cap bytes);
 * its length, 0 when it has none. */
uint32_t symtab_cache_mem_build_id(uint64_t addr, uint8_t *out, size_t cap);

#endif
