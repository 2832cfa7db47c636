/*
 * The symbol table of one pid directory: every module_<ID>.syms in it
 * (and in its modules/, where sessions recorded before the files moved up
 * have them), indexed by module id, resolving function_id =
 * (module_id << 32) | symbol_index to a name and the module's path.
 * Modules the manifest lists without a readable .syms file still resolve
 * to their path. Functions of a stripped image the agent could only
 * number ("<file>+0x<offset>") take their names from its debug file when
 * one is found at load time (symbols_debug.c).
 * Threads: CLI only; immutable after load.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "atf_internal.h"
#include "fs.h"
#include "manifest.h"
#include "symbols.h"

struct symtab_ent {
	uint32_t id;
	char *path; /* owned copy when m is NULL (manifest-only module) */
	struct ada_syms_module *m;
};

struct ada_symtab {
	struct symtab_ent *ents; /* sorted by id after load */
	size_t n;
};

struct symtab_load {
	struct ada_symtab *t;
	ada_syms_warn_fn warn;
	void *ctx;
};

static void symtab_warn(struct symtab_load *l, const char *path, uint64_t line, const char *msg)
{
	if (l->warn)
		l->warn(l->ctx, path, line, msg);
}

static struct symtab_ent *symtab_find(const struct ada_symtab *t, uint32_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->ents[i].id == id)
			return &t->ents[i];
	return NULL;
}

static int symtab_push(struct ada_symtab *t, struct symtab_ent e)
{
	struct symtab_ent *p = realloc(t->ents, (t->n + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	t->ents = p;
	t->ents[t->n++] = e;
	return 0;
}

static void symtab_check(struct symtab_load *l, const char *path, const struct ada_syms_module *m)
{
	char msg[200];

	if (m->has_table_xxh64 && m->table_xxh64 != m->computed_xxh64) {
		snprintf(msg, sizeof(msg),
		         "table_xxh64 %016" PRIx64 " does not match the function "
		         "lines (%016" PRIx64 "): the table was changed after it was written",
		         m->table_xxh64, m->computed_xxh64);
		symtab_warn(l, path, 0, msg);
	}
	if (m->functions >= 0 && (uint64_t)m->functions != m->nfuncs) {
		snprintf(msg, sizeof(msg), "says %" PRId64 " functions, has %zu F lines",
		         m->functions, m->nfuncs);
		symtab_warn(l, path, 0, msg);
	}
}

/* path: <dir>/<name>; dirfd: <dir> (pid_N/ or pid_N/modules/), where a
 * version 2 file's body is. */
static int symtab_load_file(struct symtab_load *l, int dirfd, const char *path)
{
	struct atf_map map;
	struct ada_syms_module *m;
	uint64_t bad = 0;
	char msg[160];
	int err = atf_map_file(path, &map);

	if (err) {
		snprintf(msg, sizeof(msg), "cannot read: %s", strerror(-err));
		symtab_warn(l, path, 0, msg);
		return 0;
	}
	err =
	    ada_syms_parse_at(dirfd, (const char *)map.base, map.len, ADA_SYMS_BODY_MAX, &m, &bad);
	if (atf_map_shrank(&map) && err != -ENOMEM) {
		if (!err)
			ada_syms_module_free(m);
		err = -ESTALE;
	}
	atf_map_release(&map);
	if (err == -ENOMEM)
		return err;
	if (err == -ESTALE) {
		symtab_warn(l, path, 0,
		            "shrank while being read (it or its shared body): names from it are "
		            "not used; read what was there");
		return 0;
	}
	if (err == -ENODATA) {
		symtab_warn(
		    l, path, 0,
		    "its shared body (the file its body line names) is missing or is not "
		    "the body_bytes and table_xxh64 it declares; names from it are not used");
		return 0;
	}
	if (err) {
		symtab_warn(l, path, bad,
		            bad ? "malformed line; names from this file are not used"
		                : "not an ada-symbols 1 or 2 file with a module_id");
		return 0;
	}
	symtab_check(l, path, m);
	/* A stripped image's debug file may have appeared since the
	 * recording; ADA_DEBUG_ROOT stands for /usr/lib/debug, as for the
	 * agent (docs/hooks.md). */
	if (ada_syms_name_from_debug(m, getenv("ADA_DEBUG_ROOT")) == -ENOMEM) {
		ada_syms_module_free(m);
		return -ENOMEM;
	}
	if (symtab_find(l->t, m->module_id)) {
		snprintf(msg, sizeof(msg),
		         "module_id %" PRIu32 " appears in another .syms file too", m->module_id);
		symtab_warn(l, path, 0, msg);
		ada_syms_module_free(m);
		return 0;
	}
	err = symtab_push(l->t, (struct symtab_ent){.id = m->module_id, .m = m});
	if (err)
		ada_syms_module_free(m);
	return err;
}

/* Every module_*.syms of dir (pid_dir, or sub under it). */
static int symtab_scan_dir(struct symtab_load *l, const char *pid_dir, const char *sub)
{
	char *dir =
	    sub ? atf_strdup_printf("%s/%s", pid_dir, sub) : atf_strdup_printf("%s", pid_dir);
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (!dir)
		return -ENOMEM;
	d = ada_fs_opendir(AT_FDCWD, dir);
	if (!d) {
		free(dir);
		return 0; /* no such directory: no names, not an error */
	}
	for (unsigned i = 0; !err && i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		size_t n = strlen(de->d_name);
		if (strncmp(de->d_name, "module_", 7) || n < 5 ||
		    strcmp(de->d_name + n - 5, ".syms"))
			continue;
		char *path = atf_strdup_printf("%s/%s", dir, de->d_name);
		err = path ? symtab_load_file(l, dirfd(d), path) : -ENOMEM;
		free(path);
	}
	closedir(d);
	free(dir);
	return err;
}

static int symtab_from_manifest(struct symtab_load *l, const json_t *doc)
{
	struct ada_manifest_module mm;

	for (size_t i = 0; doc && i < ada_manifest_module_count(doc); i++) {
		if (ada_manifest_module_get(doc, i, &mm) || !mm.path || symtab_find(l->t, mm.id))
			continue;
		char *path = strdup(mm.path);
		if (!path || symtab_push(l->t, (struct symtab_ent){.id = mm.id, .path = path})) {
			free(path);
			return -ENOMEM;
		}
	}
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct symtab_ent *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

int ada_symtab_load(const char *pid_dir, const json_t *manifest, ada_syms_warn_fn warn, void *ctx,
                    struct ada_symtab **out)
{
	struct symtab_load l = {.warn = warn, .ctx = ctx};
	int err;

	l.t = calloc(1, sizeof(*l.t));
	if (!l.t)
		return -ENOMEM;
	err = symtab_scan_dir(&l, pid_dir, NULL);
	if (!err) /* a session recorded before the module files moved up */
		err = symtab_scan_dir(&l, pid_dir, "modules");
	if (!err)
		err = symtab_from_manifest(&l, manifest);
	if (err) {
		ada_symtab_free(l.t);
		return err;
	}
	if (l.t->n) /* qsort(NULL, 0) is undefined */
		qsort(l.t->ents, l.t->n, sizeof(*l.t->ents), ent_cmp);
	*out = l.t;
	return 0;
}

void ada_symtab_free(struct ada_symtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		ada_syms_module_free(t->ents[i].m);
		free(t->ents[i].path);
	}
	free(t->ents);
	free(t);
}

size_t ada_symtab_module_count(const struct ada_symtab *t)
{
	return t->n;
}

bool ada_symtab_resolve(const struct ada_symtab *t, uint64_t function_id, const char **name,
                        const char **module)
{
	uint32_t id = (uint32_t)(function_id >> 32);
	const struct symtab_ent *e = NULL;
	size_t lo = 0, hi = t->n;

	*name = *module = NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->ents[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && t->ents[lo].id == id)
		e = &t->ents[lo];
	if (!e)
		return false;
	if (!e->m) {
		*module = e->path;
		return false;
	}
	*module = e->m->path;
	const struct ada_syms_func *f = ada_syms_find(e->m, (uint32_t)function_id);
	*name = f ? f->name : NULL;
	return f != NULL;
}

/* The function of m holding addr (m's functions are sorted by index, not
 * offset: a linear walk, once per question). */
static const struct ada_syms_func *symtab_func_at(const struct ada_syms_module *m, uint64_t addr,
                                                  uint64_t *end)
{
	const struct ada_syms_func *hit = NULL;
	uint64_t off = addr - m->load_base;

	*end = 0;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct ada_syms_func *f = &m->funcs[i];
		if (f->offset + f->size > *end)
			*end = f->offset + f->size;
		if (!hit && off >= f->offset && off - f->offset < f->size)
			hit = f;
	}
	return hit;
}

bool ada_symtab_by_addr(const struct ada_symtab *t, uint64_t addr, struct ada_symtab_addr *out)
{
	const struct ada_syms_module *near = NULL;

	*out = (struct ada_symtab_addr){0};
	for (size_t i = 0; i < t->n; i++) {
		const struct ada_syms_module *m = t->ents[i].m;
		uint64_t end;
		if (!m || addr < m->load_base)
			continue;
		const struct ada_syms_func *f = symtab_func_at(m, addr, &end);
		if (f) {
			out->function_id = ((uint64_t)t->ents[i].id << 32) | f->symbol_index;
			out->name = f->name;
			out->module = m->path;
			out->offset = addr - m->load_base - f->offset;
			return true;
		}
		if (addr - m->load_base < end && (!near || m->load_base > near->load_base))
			near = m;
	}
	if (!near)
		return false;
	out->module = near->path;
	out->offset = addr - near->load_base;
	return true;
}
