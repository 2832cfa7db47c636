/*
 * The pid_N/module_<ID>.syms writer (not hook context).
 *
 * Called by the agent's init (and dlopen, and a forked child) once per
 * hooked image. Format: docs/internals.md. The table hash covers the
 * function lines byte for byte as written ("F ...\n" each, in order), so a
 * reader can recompute it over the lines it reads. The table is formatted
 * once into one buffer, hashed, and written with one fwrite.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hook.h"

static const char *syms_status_name(uint8_t status)
{
	return status == ADA_HOOK_OK ? "hooked" : hook_skip_name((enum ada_hook_skip)status);
}

static char *syms_put_dec(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *syms_put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *syms_put_str(char *p, const char *s, size_t len)
{
	memcpy(p, s, len);
	return p + len;
}

/* Bytes a line takes at most besides its name. */
#define SYMS_LINE_FIXED (2 + 21 + 17 + 21 + 32 + 2)

/* "F <index> <offset-hex> <size> <status> <name>\n", hand-formatted: this
 * runs for every function of every image at start-up, where snprintf
 * would cost more than the rest of the writer. name_len: strlen(name). */
static char *syms_line(const struct ada_hook_symtab *st, size_t i, const char *name,
                       size_t name_len, char *p)
{
	const struct ada_hook_fn *f = &st->fns[i];
	const char *status = syms_status_name(f->status);
	p = syms_put_str(p, "F ", 2);
	p = syms_put_dec(p, i);
	*p++ = ' ';
	p = syms_put_hex(p, f->offset);
	*p++ = ' ';
	p = syms_put_dec(p, f->size);
	*p++ = ' ';
	p = syms_put_str(p, status, strlen(status));
	*p++ = ' ';
	p = syms_put_str(p, name, name_len);
	*p++ = '\n';
	return p;
}

/* The whole function table as text; *len gets its length. NULL: -ENOMEM.
 * The buffer is sized for every name in the pool once (each function's
 * name is measured once, as it is written) and grown should names be
 * shared. */
static char *syms_table(const struct ada_hook_symtab *st, size_t *len)
{
	size_t cap = st->count * SYMS_LINE_FIXED + st->names_len + 1, used = 0;
	char *buf = malloc(cap);
	for (size_t i = 0; buf && i < st->count; i++) {
		const char *name = ada_hook_fn_name(st, &st->fns[i]);
		size_t n = strlen(name);
		if (cap - used < SYMS_LINE_FIXED + n) {
			size_t nc = 2 * cap + SYMS_LINE_FIXED + n;
			char *nb = realloc(buf, nc);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap = nc;
		}
		used = (size_t)(syms_line(st, i, name, n, buf + used) - buf);
	}
	*len = used;
	return buf;
}

size_t ada_hook_syms_body_part(const struct ada_hook_symtab *st, size_t *next, char *buf,
                               size_t cap, size_t *need)
{
	size_t used = 0, i = *next;
	*need = 0;
	for (; i < st->count; i++) {
		const char *name = ada_hook_fn_name(st, &st->fns[i]);
		size_t n = strlen(name);
		if (cap - used < SYMS_LINE_FIXED + n) {
			*need = used ? 0 : SYMS_LINE_FIXED + n;
			break;
		}
		used = (size_t)(syms_line(st, i, name, n, buf + used) - buf);
	}
	*next = i;
	return used;
}

uint64_t ada_hook_syms_table_hash(const struct ada_hook_symtab *st)
{
	size_t len = 0;
	char *t = syms_table(st, &len);
	uint64_t h = t ? XXH64(t, len, 0) : 0;
	free(t);
	return h;
}

char *ada_hook_syms_body(const struct ada_hook_symtab *st, size_t *len)
{
	return syms_table(st, len);
}

static void syms_write_header(FILE *f, const struct ada_hook_module_info *mi,
                              const struct ada_hook_symtab *st, uint64_t hash, int version)
{
	fprintf(f, "ada-symbols %d\n# written by libada_agent.so; format: docs/internals.md\n",
	        version);
	fprintf(f, "module_id %" PRIu32 "\npath %s\nbuild_id ", mi->module_id, mi->path);
	if (st->build_id_len == 0)
		fputc('-', f);
	for (size_t i = 0; i < st->build_id_len; i++)
		fprintf(f, "%02x", st->build_id[i]);
	fprintf(f, "\nload_base 0x%" PRIx64 "\nsymbol_source %s\n", mi->load_base,
	        ada_symtab_source_name(st->source));
	fprintf(f, "table_xxh64 %016" PRIx64 "\nfunctions %zu\n", hash, st->count);
}

int ada_hook_syms_write(FILE *f, const struct ada_hook_module_info *mi,
                        const struct ada_hook_symtab *st, uint64_t *table_xxh64)
{
	size_t len = 0;
	char *t = syms_table(st, &len);
	if (!t)
		return -ENOMEM;
	uint64_t hash = XXH64(t, len, 0);
	if (table_xxh64)
		*table_xxh64 = hash;
	syms_write_header(f, mi, st, hash, 1);
	size_t w = fwrite(t, 1, len, f);
	free(t);
	if (w != len || fflush(f) != 0 || ferror(f))
		return -EIO;
	return 0;
}

int ada_hook_syms_write_v2(FILE *f, const struct ada_hook_module_info *mi,
                           const struct ada_hook_symtab *st, uint64_t hash, const char *body,
                           size_t body_len)
{
	syms_write_header(f, mi, st, hash, 2);
	fprintf(f, "body %s\nbody_bytes %zu\n", body, body_len);
	return fflush(f) != 0 || ferror(f) ? -EIO : 0;
}
