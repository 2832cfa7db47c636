/* Private helpers shared by the files of src/atf. */
#ifndef ADA_ATF_INTERNAL_H
#define ADA_ATF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "atf.h"

/* A read-only file mapping (len 0 maps nothing: base stays NULL). */
struct atf_map {
	const uint8_t *base;
	size_t len;
	bool owned; /* munmap at release */
	int guard;  /* its slot in atf_guard.c's registry + 1; 0: none */
};

/* Maps path (a regular file, never through a link) under the SIGBUS
 * guard (atf_guard_map()). */
int atf_map_file(const char *path, struct atf_map *m);
/* atf_map_file() for a reader about to read the whole file (validate):
 * the shrink test hook (atf_guard_test_shrink) may cut it once mapped. */
int atf_map_file_whole(const char *path, struct atf_map *m);
void atf_map_release(struct atf_map *m);
/* Whether m's file shrank while it was mapped (atf_guard_shrank()). */
bool atf_map_shrank(const struct atf_map *m);

/* cidx_export.c: ada_cidx_validate_buf(), and when the compact structure
 * is right and keep is not NULL, the ATF v2 form it decoded handed out
 * (*keep, malloc'd, *keep_len; else *keep NULL) so that the links are
 * checked on it without decoding the file again. */
void atf_cidx_validate_keep(const char *path, const void *buf, size_t len, struct ada_atf_report *r,
                            struct ada_atf_vfile *info, uint8_t **keep, size_t *keep_len);

/* atf_guard.c: fd's first len bytes (len > 0) mapped read-only and
 * registered, so that a SIGBUS from a page past the file's end (it
 * shrank) makes that page and the rest of the mapping zeros instead of
 * killing the process; *slot names the registration. -errno from mmap,
 * -ENOMEM when the registry is full. */
int atf_guard_map(int fd, size_t len, const uint8_t **base, int *slot);
/* Unregisters slot (-1: none) and unmaps [base, base + len). */
void atf_guard_unmap(const uint8_t *base, size_t len, int slot);
/* Whether a fault in slot's mapping found its file shorter since mapped. */
bool atf_guard_shrank(int slot);
/* Test hook: with ADA_TEST_SHRINK_MAPPED=N, the first file of at least N
 * bytes (fd, len: a reader's, opened) is cut to 4 KiB. */
void atf_guard_test_shrink(int fd, size_t len);

/* Reads a T at off when [off, off + sizeof(T)) lies inside len. Packed
 * structs: memcpy keeps the access alignment-safe. */
static inline bool atf_fits(size_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off;
}

#define ATF_READ(dst, base, len, off)                                                              \
	(atf_fits((len), (off), sizeof(*(dst)))                                                    \
	     ? (memcpy((dst), (base) + (off), sizeof(*(dst))), true)                               \
	     : false)

char *atf_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* json_dump.c: doc (an object or array) as json_dumps(doc, JSON_INDENT(2)
 * | JSON_PRESERVE_ORDER) writes it, byte for byte, in a new buffer
 * (*len: its length); NULL where json_dumps would fail, or out of memory. */
char *ada_json_dumps_indent2(const json_t *doc, size_t *len);

/* symbols.c: a function name read from a file, each control character
 * (C0, DEL, and C1 as UTF-8: c2 80..c2 9f) made one '?' in place, as
 * ada_control_printable_json does: readers print names on terminals, and
 * an image's symbol or a rewritten .syms file may carry an escape
 * sequence. Other UTF-8 is kept. */
void ada_syms_name_mask(char *name);

#endif
