/*
 * .syms parser and the per-pid symbol table.
 *
 * Threads: CLI only. Parsing copies (buf, len) once, splits it into lines
 * in place, and points every string of the result into that copy, so a
 * module is two allocations whatever its size. XXH64 of the table is
 * computed over the F lines exactly as they appear in the file, each with
 * its terminating '\n' (see docs/internals.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "atf_internal.h"
#include "symbols.h"

struct syms_parse {
	struct ada_syms_module *m;
	size_t cap;
	XXH64_state_t *xx;
	bool seen_magic, seen_id;
	bool with_body; /* a version 2 file's lines with its body after them */
};

static bool syms_u64(const char *s, int base, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == ' ')
		return false;
	errno = 0;
	*out = strtoull(s, &end, base);
	return !errno && *end == '\0';
}

/* atf_internal.h */
void ada_syms_name_mask(char *name)
{
	char *o = name;
	for (const unsigned char *i = (const unsigned char *)name; *i; o++) {
		bool c1 = i[0] == 0xc2 && i[1] >= 0x80 && i[1] <= 0x9f; /* U+0080..U+009F */
		*o = c1 || *i < 0x20 || *i == 0x7f ? '?' : (char)*i;
		i += c1 ? 2 : 1;
	}
	*o = '\0';
}

/* Splits "F idx off size status name": name is the rest of the line. */
static int syms_func_line(struct syms_parse *p, char *line)
{
	char *f[5], *save = NULL, *s = line + 2;
	uint64_t idx, off, size;
	struct ada_syms_func *fn;

	for (int i = 0; i < 4; i++) {
		f[i] = strtok_r(i ? NULL : s, " ", &save);
		if (!f[i])
			return -EBADMSG;
	}
	f[4] = save;
	while (f[4] && *f[4] == ' ')
		f[4]++;
	if (!f[4] || !*f[4] || !syms_u64(f[0], 10, &idx) || idx > UINT32_MAX ||
	    !syms_u64(f[1], 16, &off) || !syms_u64(f[2], 10, &size))
		return -EBADMSG;
	ada_syms_name_mask(f[4]);
	if (p->m->nfuncs == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 256;
		fn = realloc(p->m->funcs, ncap * sizeof(*fn));
		if (!fn)
			return -ENOMEM;
		p->m->funcs = fn;
		p->cap = ncap;
	}
	p->m->funcs[p->m->nfuncs++] = (struct ada_syms_func){.symbol_index = (uint32_t)idx,
	                                                     .offset = off,
	                                                     .size = size,
	                                                     .status = f[3],
	                                                     .name = f[4]};
	return 0;
}

static int syms_key_line(struct syms_parse *p, char *line)
{
	char *val = strchr(line, ' ');
	struct ada_syms_module *m = p->m;
	uint64_t v;

	if (!val)
		return 0; /* a bare word: unknown, ignored */
	*val++ = '\0';
	if (!strcmp(line, "module_id")) {
		if (!syms_u64(val, 10, &v) || v > UINT32_MAX)
			return -EBADMSG;
		m->module_id = (uint32_t)v;
		p->seen_id = true;
	} else if (!strcmp(line, "path")) {
		m->path = val;
	} else if (!strcmp(line, "build_id")) {
		m->build_id = strcmp(val, "-") ? val : NULL;
	} else if (!strcmp(line, "symbol_source")) {
		m->symbol_source = val;
	} else if (!strcmp(line, "load_base")) {
		if (!syms_u64(val, 16, &m->load_base))
			return -EBADMSG;
	} else if (!strcmp(line, "table_xxh64")) {
		if (!syms_u64(val, 16, &m->table_xxh64))
			return -EBADMSG;
		m->has_table_xxh64 = true;
	} else if (!strcmp(line, "body")) {
		m->body = val;
	} else if (!strcmp(line, "body_bytes")) {
		if (!syms_u64(val, 10, &v) || v > ADA_SYMS_BODY_MAX)
			return -EBADMSG;
		m->body_bytes = (int64_t)v;
	} else if (!strcmp(line, "functions")) {
		if (!syms_u64(val, 10, &v) || v > INT64_MAX)
			return -EBADMSG;
		m->functions = (int64_t)v;
	}
	return 0; /* unknown keys are for newer writers */
}

static int syms_line(struct syms_parse *p, char *line, size_t n, bool had_nl)
{
	if (n == 0 || line[0] == '#')
		return 0;
	if (!p->seen_magic) {
		p->seen_magic = true;
		if (!strcmp(line, "ada-symbols 2"))
			p->m->version = 2;
		else if (!strcmp(line, "ada-symbols 1"))
			p->m->version = 1;
		else
			return -EBADMSG;
		return 0;
	}
	if (n >= 2 && line[0] == 'F' && line[1] == ' ') {
		/* Version 2 keeps its F lines in the body file only. */
		if (p->m->version == 2 && !p->with_body)
			return -EBADMSG;
		/* Hash the line as it was in the file (before we cut it). */
		XXH64_update(p->xx, line, n);
		XXH64_update(p->xx, "\n", had_nl ? 1 : 0);
		return syms_func_line(p, line);
	}
	return syms_key_line(p, line);
}

static int func_cmp(const void *a, const void *b)
{
	const struct ada_syms_func *x = a, *y = b;
	return x->symbol_index < y->symbol_index ? -1 : x->symbol_index > y->symbol_index;
}

static int syms_lines(struct syms_parse *p, char *text, size_t len, uint64_t *bad_line)
{
	uint64_t lineno = 0;
	size_t pos = 0;

	while (pos < len) {
		char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		int err;
		text[pos + n] = '\0';
		lineno++;
		err = syms_line(p, text + pos, n, nl != NULL);
		if (err) {
			if (bad_line)
				*bad_line = lineno;
			return err;
		}
		pos += n + 1;
	}
	if (!p->seen_magic || !p->seen_id) {
		if (bad_line)
			*bad_line = 0;
		return -EBADMSG;
	}
	return 0;
}

/* Parses (buf, len), then body (body_len bytes, NULL: none) as if it
 * followed buf's last line. */
static int syms_parse(const char *buf, size_t len, const char *body, size_t body_len,
                      struct ada_syms_module **out, uint64_t *bad_line)
{
	struct syms_parse p = {.with_body = body != NULL};
	int err = -ENOMEM;

	if (bad_line)
		*bad_line = 0;
	if (body && len && buf[len - 1] != '\n')
		return -EBADMSG; /* the body's first line would join the last one */
	p.m = calloc(1, sizeof(*p.m));
	p.xx = XXH64_createState();
	if (!p.m || !p.xx)
		goto fail;
	p.m->functions = -1;
	p.m->body_bytes = -1;
	p.m->text_ = malloc(len + body_len + 1);
	if (!p.m->text_)
		goto fail;
	if (len)
		memcpy(p.m->text_, buf, len);
	if (body_len)
		memcpy(p.m->text_ + len, body, body_len);
	p.m->text_[len + body_len] = '\0';
	XXH64_reset(p.xx, 0);
	err = syms_lines(&p, p.m->text_, len + body_len, bad_line);
	if (err)
		goto fail;
	p.m->computed_xxh64 = XXH64_digest(p.xx);
	if (p.m->nfuncs) /* qsort(NULL, 0) is undefined */
		qsort(p.m->funcs, p.m->nfuncs, sizeof(*p.m->funcs), func_cmp);
	XXH64_freeState(p.xx);
	*out = p.m;
	return 0;
fail:
	XXH64_freeState(p.xx);
	ada_syms_module_free(p.m);
	return err;
}

/* "module_<digits>.body": a name in the same directory, never a path. */
static bool syms_body_name_ok(const char *s)
{
	size_t n = strlen(s), i = 7;
	if (n < 13 || n > 64 || strncmp(s, "module_", 7) || strcmp(s + n - 5, ".body"))
		return false;
	for (; i < n - 5; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return i > 7;
}

/* The body h names, read from dirfd and checked against h's body_bytes
 * and table_xxh64 (the target can write there: untrusted), then parsed
 * with h's lines. -ENODATA when it is missing, not a regular file, not
 * what h declares, or longer than body_max. */
static int syms_parse_body(int dirfd, const char *buf, size_t len, uint64_t body_max,
                           const struct ada_syms_module *h, struct ada_syms_module **out,
                           uint64_t *bad_line)
{
	struct stat st;
	if (dirfd < 0 || !h->body || !syms_body_name_ok(h->body) || h->body_bytes < 0 ||
	    (uint64_t)h->body_bytes > body_max || !h->has_table_xxh64)
		return -ENODATA;
	int fd = openat(dirfd, h->body, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOMEM ? -ENOMEM : -ENODATA;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != h->body_bytes) {
		close(fd);
		return -ENODATA;
	}
	size_t blen = (size_t)st.st_size;
	const uint8_t *body = (const uint8_t *)"";
	int slot = -1, err = blen ? atf_guard_map(fd, blen, &body, &slot) : 0;
	close(fd);
	if (err)
		return err == -ENOMEM ? -ENOMEM : -ENODATA;
	err = -ENODATA;
	if (XXH64(body, blen, 0) == h->table_xxh64)
		err = syms_parse(buf, len, (const char *)body, blen, out, bad_line);
	if (atf_guard_shrank(slot) && err != -ENOMEM) { /* read as zeros past its new end */
		if (!err)
			ada_syms_module_free(*out);
		err = -ESTALE;
	}
	if (blen)
		atf_guard_unmap(body, blen, slot);
	return err;
}

int ada_syms_parse_at(int dirfd, const char *buf, size_t len, uint64_t body_max,
                      struct ada_syms_module **out, uint64_t *bad_line)
{
	struct ada_syms_module *h = NULL;
	int err = syms_parse(buf, len, NULL, 0, &h, bad_line);
	if (err || h->version == 1) {
		*out = h;
		return err;
	}
	err = syms_parse_body(dirfd, buf, len, body_max, h, out, bad_line);
	ada_syms_module_free(h);
	return err;
}

int ada_syms_parse(const char *buf, size_t len, struct ada_syms_module **out, uint64_t *bad_line)
{
	return ada_syms_parse_at(-1, buf, len, 0, out, bad_line);
}

void ada_syms_module_free(struct ada_syms_module *m)
{
	if (!m)
		return;
	free(m->funcs);
	free(m->text_);
	free(m->names_);
	free(m);
}

const struct ada_syms_func *ada_syms_find(const struct ada_syms_module *m, uint32_t symbol_index)
{
	size_t lo = 0, hi = m->nfuncs;

	if (symbol_index < m->nfuncs && m->funcs[symbol_index].symbol_index == symbol_index)
		return &m->funcs[symbol_index];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->funcs[mid].symbol_index < symbol_index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nfuncs && m->funcs[lo].symbol_index == symbol_index ? &m->funcs[lo] : NULL;
}
