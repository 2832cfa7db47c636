/*
 * ada diagnose PATH --functions [--json]: every function of the ELF file
 * PATH (a program or a library) a recording would leave unhooked, and why
 * (ada_hook_analyse_file: the agent's own analysis over the file mapped
 * read-only; nothing is run, changed or created). docs/diagnose.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "hook.h"

/* One sentence per reason, for the reader (docs/hooks.md, "Skip
 * reasons", says more). */
static const char *fns_why(enum ada_hook_skip r)
{
	switch (r) {
	case ADA_SKIP_TOO_SHORT:
#if defined(__aarch64__)
		return "shorter than the 4-byte branch (a symbol of size 0)";
#else
		return "shorter than the 5-byte jump, and no padding form (each says why)";
#endif
	case ADA_SKIP_BRANCH_INTO_PATCH:
		return "a branch lands inside the bytes a patch would replace, and no padding form "
		       "(each says why)";
	case ADA_SKIP_UNDECODABLE:
		return "its first instructions cannot be decoded";
	case ADA_SKIP_UNRELOCATABLE:
		return "a first instruction cannot be moved into a trampoline";
	case ADA_SKIP_IFUNC:
		return "an IFUNC resolver: runs once, in the loader";
	case ADA_SKIP_ENTRY_POINT:
		return "the program's entry or init/fini code";
	case ADA_SKIP_EXCLUDED:
		return "excluded by the default list (or a stripped image's fragment)";
	case ADA_SKIP_ALIAS:
		return "another name of a function listed at the same address";
	case ADA_SKIP_OUTSIDE_TEXT:
		return "not inside the file's executable code";
	case ADA_SKIP_JUMP_TABLE:
		return "an indirect jump could land between the bytes a patch would replace";
	case ADA_SKIP_NO_UNWIND_INFO:
		return "no unwind information: not a C function";
	default:
		return "see docs/hooks.md, \"Skip reasons\"";
	}
}

static bool fns_is_main(const char *path)
{
	/* A program (it has an interpreter or is position-dependent) gets
	 * the program's treatment: .eh_frame functions when stripped. */
	FILE *f = fopen(path, "rb");
	unsigned char h[64];
	bool main = false;
	if (f && fread(h, 1, sizeof(h), f) == sizeof(h))
		main = h[16] == 2; /* ET_EXEC */
	if (f)
		fclose(f);
	return main || strstr(path, ".so") == NULL;
}

/* The file's e_machine (0 when it cannot be read). */
static unsigned fns_machine(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char h[20];
	unsigned m = 0;
	if (f && fread(h, 1, sizeof(h), f) == sizeof(h) && !memcmp(h, "\177ELF", 4))
		m = h[18] | (unsigned)h[19] << 8;
	if (f)
		fclose(f);
	return m;
}

static json_t *fns_json(const char *path, const struct ada_hook_symtab *st, const uint64_t *counts)
{
	json_t *o = json_object(), *sk = json_object(), *list = json_array();
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "functions", json_integer((json_int_t)st->count));
	json_object_set_new(o, "hooked", json_integer((json_int_t)counts[ADA_HOOK_OK]));
	for (int r = 1; r < ADA_SKIP_REASON_COUNT; r++)
		if (counts[r])
			json_object_set_new(sk, hook_skip_name((enum ada_hook_skip)r),
			                    json_integer((json_int_t)counts[r]));
	json_object_set_new(o, "skipped", sk);
	for (size_t i = 0; i < st->count; i++) {
		const struct ada_hook_fn *f = &st->fns[i];
		if (f->status == ADA_HOOK_OK || f->status == ADA_SKIP_ALIAS)
			continue;
		json_t *e = json_object();
		char off[32];
		snprintf(off, sizeof(off), "0x%" PRIx64, f->offset);
		json_object_set_new(e, "name", json_string(ada_hook_fn_name(st, f)));
		json_object_set_new(e, "offset", json_string(off));
		json_object_set_new(e, "size", json_integer((json_int_t)f->size));
		json_object_set_new(e, "reason", json_string(hook_skip_name(f->status)));
		if (*ada_hook_pad_why_name(f->reserved)) {
			json_object_set_new(e, "padding",
			                    json_string(ada_hook_pad_why_name(f->reserved)));
			json_object_set_new(e, "why",
			                    json_string(ada_hook_pad_why_text(f->reserved)));
		}
		json_array_append_new(list, e);
	}
	json_object_set_new(o, "not_hooked", list);
	return o;
}

static void fns_print(const char *path, const struct ada_hook_symtab *st, const uint64_t *counts)
{
	printf("ada diagnose: %s: %zu functions, %" PRIu64 " would be hooked\n", path, st->count,
	       counts[ADA_HOOK_OK]);
	for (int r = 1; r < ADA_SKIP_REASON_COUNT; r++)
		if (counts[r] && r != ADA_SKIP_ALIAS)
			printf("  %6" PRIu64 "  %-20s %s\n", counts[r],
			       hook_skip_name((enum ada_hook_skip)r),
			       fns_why((enum ada_hook_skip)r));
	if (counts[ADA_SKIP_ALIAS])
		printf("  %6" PRIu64 "  %-20s %s (not listed below)\n", counts[ADA_SKIP_ALIAS],
		       "alias", fns_why(ADA_SKIP_ALIAS));
	printf("not hooked (offset size reason name):\n");
	for (size_t i = 0; i < st->count; i++) {
		const struct ada_hook_fn *f = &st->fns[i];
		if (f->status != ADA_HOOK_OK && f->status != ADA_SKIP_ALIAS)
			printf("  0x%-10" PRIx64 " %6" PRIu64 " %-18s %s%s%s\n", f->offset, f->size,
			       hook_skip_name(f->status), ada_hook_fn_name(st, f),
			       *ada_hook_pad_why_text(f->reserved) ? ": " : "",
			       ada_hook_pad_why_text(f->reserved));
	}
}

int diagnose_functions(const char *path, bool json)
{
	struct ada_hook_config cfg;
	struct ada_hook_symtab st;
	if (ada_hook_config_parse("", 0, &cfg) < 0) {
		ada_log("cannot set up the analysis: %s", strerror(ENOMEM));
		return 2;
	}
	int err =
	    ada_hook_analyse_file(path, getenv("ADA_DEBUG_ROOT"), fns_is_main(path), &cfg, &st);
	ada_hook_config_fini(&cfg);
	if (err) {
#if defined(__aarch64__) /* the arch layer's machine: an aarch64 file is the aarch64 ada's */
		const char *machine = "an aarch64";
#else
		const char *machine = "an x86_64";
#endif
		if (err == -ENOEXEC && fns_machine(path) == 183 /* EM_AARCH64 */)
			ada_log("cannot analyse %s here: it is an aarch64 file, which the aarch64 "
			        "build's ada judges (qemu-aarch64 -L / build-arm64/ada diagnose %s "
			        "--functions, docs/arm64.md)",
			        path, path);
		else
			ada_log("cannot analyse %s: %s; give %s ELF program or library", path,
			        err == -ENOEXEC ? "not a usable ELF file" : strerror(-err),
			        machine);
		return 1;
	}
	uint64_t counts[ADA_SKIP_REASON_COUNT] = {0};
	for (size_t i = 0; i < st.count; i++)
		if (st.fns[i].status < ADA_SKIP_REASON_COUNT)
			counts[st.fns[i].status]++;
	int rc = 0;
	if (json) {
		json_t *j = fns_json(path, &st, counts);
		if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) < 0) {
			ada_log("cannot write the report: %s", strerror(ENOMEM));
			rc = 2;
		} else
			putchar('\n');
		json_decref(j);
	} else {
		fns_print(path, &st, counts);
	}
	ada_hook_symtab_fini(&st);
	return rc;
}
