/*
 * Names a person reads (analyze.h): demangling through libiberty's
 * cplus_demangle() (GNU v3 C++ ABI, Rust, D: DMGL_AUTO), and a cache of
 * one display name per function_id over a pid directory's symbol table.
 *
 * The cache is an open-addressing table keyed by function_id, grown by
 * doubling up to NAMES_MAX entries; a recording naming more distinct ids
 * than that (only a damaged or made-up file does) makes it start over, so
 * its memory stays bounded. Threads: CLI only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h> /* it declares ada_demangle() (the Ada language): ours are ada_name_* */

#include "analyze.h"
#include "symbols.h"

#define NAMES_MIN 1024u
#define NAMES_MAX (1u << 20)

struct names_ent {
	uint64_t fid;
	bool used;
	char *owned; /* the demangled or made-up name, when not the symbol itself */
	struct ada_name n;
};

struct ada_names {
	const struct ada_symtab *t;
	enum ada_demangle mode;
	struct names_ent *ents;
	size_t cap, used;
};

int ada_demangle_parse(const char *s, enum ada_demangle *out)
{
	if (!strcmp(s, "full"))
		*out = ADA_DEMANGLE_FULL;
	else if (!strcmp(s, "simple"))
		*out = ADA_DEMANGLE_SIMPLE;
	else if (!strcmp(s, "no"))
		*out = ADA_DEMANGLE_NO;
	else
		return -EINVAL;
	return 0;
}

char *ada_name_demangle(const char *sym, enum ada_demangle mode)
{
	int opts = DMGL_ANSI | DMGL_AUTO;

	if (mode == ADA_DEMANGLE_NO || !sym || sym[0] != '_')
		return NULL; /* every mangling scheme libiberty knows starts with _ */
	if (mode == ADA_DEMANGLE_FULL)
		opts |= DMGL_PARAMS;
	return cplus_demangle(sym, opts);
}

int ada_names_new(const struct ada_symtab *t, enum ada_demangle mode, struct ada_names **out)
{
	struct ada_names *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->ents = calloc(NAMES_MIN, sizeof(*n->ents));
	if (!n->ents) {
		free(n);
		return -ENOMEM;
	}
	n->t = t;
	n->mode = mode;
	n->cap = NAMES_MIN;
	*out = n;
	return 0;
}

static void names_clear(struct names_ent *e, size_t cap)
{
	for (size_t i = 0; i < cap; i++)
		free(e[i].owned);
	memset(e, 0, cap * sizeof(*e));
}

void ada_names_free(struct ada_names *n)
{
	if (!n)
		return;
	names_clear(n->ents, n->cap);
	free(n->ents);
	free(n);
}

static size_t names_hash(uint64_t fid, size_t cap)
{
	fid ^= fid >> 33;
	fid *= 0xff51afd7ed558ccdull; /* murmur3's finaliser: ids are dense and patterned */
	fid ^= fid >> 33;
	return (size_t)fid & (cap - 1);
}

static struct names_ent *names_slot(struct names_ent *ents, size_t cap, uint64_t fid)
{
	size_t i = names_hash(fid, cap);

	while (ents[i].used && ents[i].fid != fid)
		i = (i + 1) & (cap - 1);
	return &ents[i];
}

/* Doubles the table, or empties it at NAMES_MAX (or when out of memory). */
static void names_grow(struct ada_names *n)
{
	struct names_ent *ne = n->cap < NAMES_MAX ? calloc(n->cap * 2, sizeof(*ne)) : NULL;

	if (!ne) {
		names_clear(n->ents, n->cap);
		n->used = 0;
		return;
	}
	for (size_t i = 0; i < n->cap; i++)
		if (n->ents[i].used)
			*names_slot(ne, n->cap * 2, n->ents[i].fid) = n->ents[i];
	free(n->ents);
	n->ents = ne;
	n->cap *= 2;
}

static void names_fill(struct ada_names *n, struct names_ent *e)
{
	const char *sym, *mod;

	e->n.known = ada_symtab_resolve(n->t, e->fid, &sym, &mod);
	e->n.mangled = sym;
	e->n.module = mod;
	e->owned = sym ? ada_name_demangle(sym, n->mode) : NULL;
	if (!sym) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%" PRIu32 ":%" PRIu32, (uint32_t)(e->fid >> 32),
		         (uint32_t)e->fid);
		e->owned = strdup(buf);
	}
	e->n.name = e->owned ? e->owned : sym ? sym : "?";
}

const struct ada_name *ada_names_get(struct ada_names *n, uint64_t fid)
{
	struct names_ent *e = names_slot(n->ents, n->cap, fid);

	if (e->used)
		return &e->n;
	if ((n->used + 1) * 4 > n->cap * 3) {
		names_grow(n);
		e = names_slot(n->ents, n->cap, fid);
	}
	e->used = true;
	e->fid = fid;
	n->used++;
	names_fill(n, e);
	return &e->n;
}
