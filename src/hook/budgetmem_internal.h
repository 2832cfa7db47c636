/*
 * What --overhead-budget moved in an earlier run of the same image
 * (budgetmem.c), private to src/hook. docs/hooks.md, "Overhead budget".
 *
 * One file per image build-id, beside the plan cache:
 *   <dir>/<build-id>.moved
 * holding the indices (in the image's symbol table) of the functions the
 * budget moved to count-only, so that the next run under a budget
 * installs them count-only from the start. A file is used only when its
 * header names the same symbol table (function count and a hash of the
 * functions' offsets and sizes), every index is within the table and its
 * XXH64 checksum matches; anything else is ignored (and replaced by the
 * next run that moves a function of the image). Read through
 * ada_fs_open_private, written atomically: as the plan cache.
 */
#ifndef ADA_BUDGETMEM_INTERNAL_H
#define ADA_BUDGETMEM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hook.h"

/* At most this many functions remembered per image (the count-only
 * capacity of a process). */
#define BUDGETMEM_MAX 4096u

/* The symbol table's identity: its function count, offsets and sizes. */
uint64_t budgetmem_table_hash(const struct ada_hook_symtab *st);

/* <dir>/<build-id hex>.moved into out; -ENOENT without a build-id or a
 * directory. */
int budgetmem_path(const char *dir, const struct ada_hook_symtab *st, char *out, size_t cap);

/* The file's bytes for n indices (n <= BUDGETMEM_MAX) into a malloc'd
 * buffer *out of *len bytes. */
int budgetmem_encode(const struct ada_hook_symtab *st, const uint32_t *idx, uint32_t n,
                     uint8_t **out, size_t *len);

/* Checks buf against st; on success sets mark[i] = 1 for every index it
 * holds (mark has st->count entries) and returns how many; -ESTALE for a
 * whole, sound file of another table (function count or table hash
 * differ), -EBADMSG for anything else not a valid file of this table. */
int budgetmem_parse(const uint8_t *buf, size_t len, const struct ada_hook_symtab *st,
                    uint8_t *mark);

/* Reads path (private to the user, as the plan cache) into mark: the
 * number of functions marked, or a negative errno: -ENOENT (no file),
 * -EPERM or -ELOOP (a place or file another user could change),
 * -ESTALE, -EBADMSG (budgetmem_parse; -EBADMSG also for a size no file
 * has), others of the read. */
int budgetmem_load(const char *path, const struct ada_hook_symtab *st, uint8_t *mark);

/* Writes the indices atomically (a private temporary file, renamed). */
int budgetmem_store(const char *path, const struct ada_hook_symtab *st, const uint32_t *idx,
                    uint32_t n);

#endif
