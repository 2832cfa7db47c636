/*
 * What the user asked for (a spec), and the set it means in one process.
 *
 * A spec is the recording's choice of key symbols, independent of any
 * process: rules `MODULE_GLOB:SYMBOL_GLOB` (from `--key-symbols FILE`,
 * `--detail-symbols GLOB` = `*:GLOB`, `ada keysym --symbols/--file`) and
 * CRoaring portable bitmaps by module id (`--blob MODULE_ID=FILE`), or
 * nothing: every hooked function. ada_keysym_spec_build() turns it into
 * a builder for one process from that process's module tables (the
 * agent's pid_N/module_<ID>.syms, parsed by src/atf). Recorder side.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keysym_internal.h"
#include "symbols.h"

#define KS_MAX_RULES 4096
#define KS_MAX_GLOB 512

struct ks_rule {
	char *mod, *sym;
};
struct ks_pblob {
	uint32_t module_id;
	void *buf;
	size_t len;
};
struct ada_keysym_spec {
	struct ks_rule *rules;
	size_t nrules;
	struct ks_pblob *blobs;
	size_t nblobs;
};

int ada_keysym_spec_new(struct ada_keysym_spec **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void ada_keysym_spec_free(struct ada_keysym_spec *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nrules; i++) {
		free(s->rules[i].mod);
		free(s->rules[i].sym);
	}
	for (size_t i = 0; i < s->nblobs; i++)
		free(s->blobs[i].buf);
	free(s->rules);
	free(s->blobs);
	free(s);
}

int ada_keysym_spec_copy(const struct ada_keysym_spec *s, struct ada_keysym_spec **out)
{
	int err = ada_keysym_spec_new(out);
	for (size_t i = 0; s && !err && i < s->nrules; i++) {
		struct ks_rule *n = realloc((*out)->rules, (i + 1) * sizeof(*n));
		if (!n) {
			err = -ENOMEM;
			break;
		}
		(*out)->rules = n;
		n[i] = (struct ks_rule){strdup(s->rules[i].mod), strdup(s->rules[i].sym)};
		(*out)->nrules++;
		if (!n[i].mod || !n[i].sym)
			err = -ENOMEM;
	}
	for (size_t i = 0; s && !err && i < s->nblobs; i++) {
		struct ks_pblob *n = realloc((*out)->blobs, (i + 1) * sizeof(*n));
		if (!n) {
			err = -ENOMEM;
			break;
		}
		(*out)->blobs = n;
		n[i] = (struct ks_pblob){s->blobs[i].module_id, malloc(s->blobs[i].len + 1),
		                         s->blobs[i].len};
		(*out)->nblobs++;
		if (!n[i].buf)
			err = -ENOMEM;
		else
			memcpy(n[i].buf, s->blobs[i].buf, s->blobs[i].len);
	}
	if (err && *out) {
		ada_keysym_spec_free(*out);
		*out = NULL;
	}
	return err;
}

bool ada_keysym_spec_is_all(const struct ada_keysym_spec *s)
{
	return s->nrules == 0 && s->nblobs == 0;
}

size_t ada_keysym_spec_rules(const struct ada_keysym_spec *s)
{
	return s->nrules;
}

void ada_keysym_spec_rule(const struct ada_keysym_spec *s, size_t i, const char **mod,
                          const char **sym)
{
	*mod = s->rules[i].mod;
	*sym = s->rules[i].sym;
}

static char *ks_strndup_trim(const char *p, size_t n)
{
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		n--;
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

int ada_keysym_spec_add_rule(struct ada_keysym_spec *s, const char *line, size_t len, char *why,
                             size_t cap)
{
	const char *colon = memchr(line, ':', len);
	size_t mlen = colon ? (size_t)(colon - line) : 0;
	const char *sym = colon ? colon + 1 : line;
	size_t slen = len - (size_t)(sym - line);
	if (memchr(line, 0, len) || len > 2 * KS_MAX_GLOB) {
		snprintf(why, cap, "a key-symbol rule is longer than %d characters or holds a NUL",
		         2 * KS_MAX_GLOB);
		return -EINVAL;
	}
	if (s->nrules == KS_MAX_RULES) {
		snprintf(why, cap, "more than %d key-symbol rules", KS_MAX_RULES);
		return -EINVAL;
	}
	struct ks_rule r = {colon ? ks_strndup_trim(line, mlen) : strdup("*"),
	                    ks_strndup_trim(sym, slen)};
	if (!r.mod || !r.sym) {
		free(r.mod);
		free(r.sym);
		return -ENOMEM;
	}
	if (!r.mod[0] || !r.sym[0]) {
		snprintf(why, cap,
		         "a key-symbol rule needs MODULE_GLOB:SYMBOL_GLOB with neither part empty");
		free(r.mod);
		free(r.sym);
		return -EINVAL;
	}
	struct ks_rule *n = realloc(s->rules, (s->nrules + 1) * sizeof(*n));
	if (!n) {
		free(r.mod);
		free(r.sym);
		return -ENOMEM;
	}
	s->rules = n;
	s->rules[s->nrules++] = r;
	return 0;
}

int ada_keysym_spec_parse_file(struct ada_keysym_spec *s, const char *buf, size_t len, char *why,
                               size_t cap)
{
	size_t line = 0, i = 0;
	while (i < len) {
		const char *p = buf + i, *nl = memchr(p, '\n', len - i);
		size_t n = nl ? (size_t)(nl - p) : len - i;
		i += n + 1;
		line++;
		size_t k = 0;
		while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r'))
			k++;
		if (k == n || p[k] == '#')
			continue;
		char inner[256];
		int err = ada_keysym_spec_add_rule(s, p, n, inner, sizeof(inner));
		if (err == -EINVAL)
			snprintf(why, cap, "line %zu: %s", line, inner);
		if (err)
			return err;
	}
	if (s->nrules == 0) {
		snprintf(why, cap,
		         "the key-symbol file has no rule (lines MODULE_GLOB:SYMBOL_GLOB)");
		return -EINVAL;
	}
	return 0;
}

int ada_keysym_spec_add_blob(struct ada_keysym_spec *s, uint32_t module_id, const void *buf,
                             size_t len, char *why, size_t cap)
{
	struct ada_keysym_builder *b;
	int err = ada_keysym_builder_new(&b);
	if (err)
		return err;
	err = ada_keysym_builder_add_portable(b, module_id, buf, len);
	ada_keysym_builder_free(b);
	if (err == -EBADMSG)
		snprintf(why, cap,
		         "the blob for module %u is not one valid CRoaring portable bitmap",
		         module_id);
	else if (err == -ERANGE || err == -EINVAL)
		snprintf(why, cap, "the blob for module %u holds a symbol index of 2^24 or more",
		         module_id);
	if (err)
		return err;
	struct ks_pblob pb = {module_id, malloc(len ? len : 1), len};
	struct ks_pblob *n = realloc(s->blobs, (s->nblobs + 1) * sizeof(*n));
	if (!pb.buf || !n) {
		free(pb.buf);
		if (n)
			s->blobs = n;
		return -ENOMEM;
	}
	memcpy(pb.buf, buf, len);
	s->blobs = n;
	s->blobs[s->nblobs++] = pb;
	return 0;
}

/* ---- one process ---- */

static bool ks_mod_match(const char *glob, const char *path)
{
	if (!path)
		return strcmp(glob, "*") == 0;
	const char *base = strrchr(path, '/');
	return fnmatch(glob, path, 0) == 0 || (base && fnmatch(glob, base + 1, 0) == 0);
}

static bool ks_sym_match(const struct ada_keysym_spec *s, const bool *mods_on, const char *name)
{
	for (size_t r = 0; r < s->nrules; r++)
		if (mods_on[r] && fnmatch(s->rules[r].sym, name, 0) == 0)
			return true;
	return false;
}

/* Every hooked function of m whose name, or an alias's (listed right
 * after it, status "alias"), matches a rule whose module glob matches m. */
static int ks_build_rules(const struct ada_keysym_spec *s, const struct ada_syms_module *m,
                          bool *mods_on, struct ada_keysym_builder *b)
{
	bool any = false;
	for (size_t r = 0; r < s->nrules; r++)
		any |= mods_on[r] = ks_mod_match(s->rules[r].mod, m->path);
	if (!any)
		return 0;
	size_t primary = 0;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct ada_syms_func *f = &m->funcs[i];
		if (strcmp(f->status, "alias") != 0)
			primary = i;
		const struct ada_syms_func *p = &m->funcs[primary];
		if (strcmp(p->status, "hooked") != 0 || !f->name ||
		    !ks_sym_match(s, mods_on, f->name))
			continue;
		int err = ada_keysym_builder_add(b, m->module_id, &p->symbol_index, 1);
		if (err)
			return err;
	}
	return 0;
}

static uint32_t ks_range_of(const struct ada_syms_module *m)
{
	uint64_t top = m->nfuncs ? (uint64_t)m->funcs[m->nfuncs - 1].symbol_index + 1 : 0;
	if (m->functions > 0 && (uint64_t)m->functions > top)
		top = (uint64_t)m->functions;
	return top > ADA_KEYSYM_MAX_INDEX ? ADA_KEYSYM_MAX_INDEX : (uint32_t)top;
}

int ada_keysym_spec_build(const struct ada_keysym_spec *s,
                          const struct ada_syms_module *const *mods, size_t n,
                          struct ada_keysym_builder *b, char *why, size_t cap)
{
	if (ada_keysym_spec_is_all(s)) {
		ada_keysym_builder_set_all(b);
		return 0;
	}
	bool *on = calloc(s->nrules + 1, sizeof(*on));
	if (!on)
		return -ENOMEM;
	int err = 0;
	for (size_t i = 0; !err && i < n; i++) {
		if (mods[i]->module_id >= ADA_KEYSYM_MAX_MODULES)
			continue;
		err = ada_keysym_builder_module(b, mods[i]->module_id, ks_range_of(mods[i]));
		if (!err)
			err = ks_build_rules(s, mods[i], on, b);
	}
	free(on);
	for (size_t i = 0; !err && i < s->nblobs; i++) {
		err = ada_keysym_builder_add_portable(b, s->blobs[i].module_id, s->blobs[i].buf,
		                                      s->blobs[i].len);
		if (err == -ERANGE)
			snprintf(why, cap,
			         "the blob for module %u names a symbol index beyond that module's "
			         "functions",
			         s->blobs[i].module_id);
	}
	return err;
}
