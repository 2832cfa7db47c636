/*
 * The modules/module_<ID>.syms writer (not hook context).
 *
 * Called by the agent's init (and dlopen, and a forked child) once per
 * hooked image. Format: docs/internals.md. The table hash covers the
 * function lines byte for byte as written ("F ...\n" each, in order), so a
 * reader can recompute it over the lines it reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hook.h"

static const char *syms_status_name(uint8_t status)
{
	return status == ADA_HOOK_OK ? "hooked" : hook_skip_name((enum ada_hook_skip)status);
}

/* Formats the line of function i; returns its length (< cap). */
static int syms_line(const struct ada_hook_symtab *st, size_t i, char *buf, size_t cap)
{
	const struct ada_hook_fn *f = &st->fns[i];
	int n = snprintf(buf, cap, "F %zu %" PRIx64 " %" PRIu64 " %s %s\n", i, f->offset, f->size,
			 syms_status_name(f->status), ada_hook_fn_name(st, f));
	if (n < 0)
		return 0;
	if ((size_t)n >= cap) { /* absurdly long name: keep the line well-formed */
		n = (int)cap - 1;
		buf[n - 1] = '\n';
	}
	return n;
}

uint64_t ada_hook_syms_table_hash(const struct ada_hook_symtab *st)
{
	XXH64_state_t s;
	char line[4096];
	XXH64_reset(&s, 0);
	for (size_t i = 0; i < st->count; i++) {
		int n = syms_line(st, i, line, sizeof(line));
		XXH64_update(&s, line, (size_t)n);
	}
	return XXH64_digest(&s);
}

static void syms_write_header(FILE *f, const struct ada_hook_module_info *mi,
			      const struct ada_hook_symtab *st)
{
	fprintf(f, "ada-symbols 1\n# written by libada_agent.so; format: docs/internals.md\n");
	fprintf(f, "module_id %" PRIu32 "\npath %s\nbuild_id ", mi->module_id, mi->path);
	if (st->build_id_len == 0)
		fputc('-', f);
	for (size_t i = 0; i < st->build_id_len; i++)
		fprintf(f, "%02x", st->build_id[i]);
	fprintf(f, "\nload_base 0x%" PRIx64 "\nsymbol_source %s\n", mi->load_base,
		ada_symtab_source_name(st->source));
	fprintf(f, "table_xxh64 %016" PRIx64 "\nfunctions %zu\n", ada_hook_syms_table_hash(st),
		st->count);
}

int ada_hook_syms_write(FILE *f, const struct ada_hook_module_info *mi,
			const struct ada_hook_symtab *st)
{
	char line[4096];
	syms_write_header(f, mi, st);
	for (size_t i = 0; i < st->count; i++) {
		int n = syms_line(st, i, line, sizeof(line));
		fwrite(line, 1, (size_t)n, f);
	}
	if (fflush(f) != 0 || ferror(f))
		return -EIO;
	return 0;
}
