/*
 * The manifest's text: what json_dumps(doc, JSON_INDENT(2) |
 * JSON_PRESERVE_ORDER) gives, byte for byte, without its costs (jansson
 * 2.14 formats every container's address into a string key for its loop
 * check, and hands the text to a callback a few bytes at a time): the
 * recorder writes a final manifest for every process, and a recording of
 * many short processes spent about a third of the manifest's CPU there
 * (perf, issue 32). What is not plain ASCII (a string with a byte above
 * 0x7F, a real) is handed to jansson itself, so its text and its refusals
 * (invalid UTF-8) stay jansson's. Threads: any; no state.
 */
#include <stdlib.h>
#include <string.h>

#include "atf_internal.h"

#define JD_MAX_DEPTH 4096 /* jansson parses at most 2048 levels */

struct jd_buf {
	char *p;
	size_t len, cap;
	int err;
};

static void jd_put(struct jd_buf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 8192;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->err = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* A newline and two spaces a level (jansson's dump_indent). */
static void jd_indent(struct jd_buf *b, int depth)
{
	static const char spaces[] =
	    "                                                                ";
	size_t n = (size_t)depth * 2;
	jd_put(b, "\n", 1);
	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
		jd_put(b, spaces, k);
		n -= k;
	}
}

/* v as jansson dumps it alone (JSON_ENCODE_ANY): a real, or a string
 * with a byte above 0x7F. */
static void jd_jansson(struct jd_buf *b, const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY);
	if (!s) {
		b->err = 1;
		return;
	}
	jd_put(b, s, strlen(s));
	free(s);
}

/* s[0..n) quoted and escaped as jansson's dump_string does (no
 * JSON_ESCAPE_SLASH, no JSON_ENSURE_ASCII). */
static void jd_string(struct jd_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] >= 0x80) { /* UTF-8: jansson checks it */
			json_t *t = json_stringn_nocheck(s, n);
			if (!t) {
				b->err = 1;
				return;
			}
			jd_jansson(b, t);
			json_decref(t);
			return;
		}
	}
	jd_put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		jd_put(b, s + run, i - run);
		run = i + 1;
		char seq[8];
		const char *esc = c == '"'    ? "\\\""
		                  : c == '\\' ? "\\\\"
		                  : c == '\b' ? "\\b"
		                  : c == '\f' ? "\\f"
		                  : c == '\n' ? "\\n"
		                  : c == '\r' ? "\\r"
		                  : c == '\t' ? "\\t"
		                              : NULL;
		if (!esc) {
			static const char hex[] = "0123456789ABCDEF";
			memcpy(seq, "\\u00", 4);
			seq[4] = hex[c >> 4];
			seq[5] = hex[c & 15];
			seq[6] = '\0';
			esc = seq;
		}
		jd_put(b, esc, strlen(esc));
	}
	jd_put(b, s + run, n - run);
	jd_put(b, "\"", 1);
}

static void jd_integer(struct jd_buf *b, json_int_t v)
{
	char t[24];
	size_t i = sizeof(t);
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		t[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		t[--i] = '-';
	jd_put(b, t + i, sizeof(t) - i);
}

static void jd_value(struct jd_buf *b, const json_t *v, int depth);

static void jd_object(struct jd_buf *b, const json_t *o, int depth)
{
	void *it = json_object_iter((json_t *)o);
	jd_put(b, "{", 1);
	if (!it) {
		jd_put(b, "}", 1);
		return;
	}
	jd_indent(b, depth + 1);
	while (it && !b->err) {
		void *next = json_object_iter_next((json_t *)o, it);
		jd_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
		jd_put(b, ": ", 2);
		jd_value(b, json_object_iter_value(it), depth + 1);
		if (next)
			jd_put(b, ",", 1);
		jd_indent(b, next ? depth + 1 : depth);
		it = next;
	}
	jd_put(b, "}", 1);
}

static void jd_array(struct jd_buf *b, const json_t *a, int depth)
{
	size_t n = json_array_size(a);
	jd_put(b, "[", 1);
	if (n == 0) {
		jd_put(b, "]", 1);
		return;
	}
	jd_indent(b, depth + 1);
	for (size_t i = 0; i < n && !b->err; i++) {
		jd_value(b, json_array_get(a, i), depth + 1);
		if (i + 1 < n)
			jd_put(b, ",", 1);
		jd_indent(b, i + 1 < n ? depth + 1 : depth);
	}
	jd_put(b, "]", 1);
}

static void jd_value(struct jd_buf *b, const json_t *v, int depth)
{
	if (depth > JD_MAX_DEPTH || !v) {
		b->err = 1;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		jd_object(b, v, depth);
		break;
	case JSON_ARRAY:
		jd_array(b, v, depth);
		break;
	case JSON_STRING:
		jd_string(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		jd_integer(b, json_integer_value(v));
		break;
	case JSON_REAL:
		jd_jansson(b, v);
		break;
	case JSON_TRUE:
		jd_put(b, "true", 4);
		break;
	case JSON_FALSE:
		jd_put(b, "false", 5);
		break;
	default:
		jd_put(b, "null", 4);
		break;
	}
}

char *ada_json_dumps_indent2(const json_t *doc, size_t *len)
{
	struct jd_buf b = {0};
	if (!json_is_object(doc) && !json_is_array(doc))
		return NULL;
	jd_value(&b, doc, 0);
	jd_put(&b, "", 0);
	if (b.err || !b.p) {
		free(b.p);
		return NULL;
	}
	b.p[b.len] = '\0';
	if (len)
		*len = b.len;
	return b.p;
}
