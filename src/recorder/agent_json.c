/*
 * Parsing a process's agent.json for its final manifest, its "modules"
 * list parsed once for the processes that share it. A forked child's list
 * is its parent's, byte for byte (the same images at the same addresses,
 * the symbol files linked): over a script's hundreds of subshells, the
 * parse of agent.json was the largest part of the final manifest (perf,
 * issue 32). The list's text (between the agent's own line breaks,
 * "\n  \"modules\": [" and "],\n  \"not_hooked\": ") is kept with its
 * parse; a file whose list has those very bytes is parsed without it, an
 * unguessable string standing in its place, and gets the kept parse. That
 * is the full parse's result exactly: the stand-in must come back as the
 * top-level "modules" (not nested, not replaced by a later key), and the
 * kept text parsed alone to the list the full parse of its first file
 * gave. Anything else (the agent.json is the target's: untrusted) is
 * parsed whole. Threads: the drain's, then the caller's after the join;
 * never both.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "recorder_internal.h"

static const char AJ_OPEN[] = "\n  \"modules\": ";
static const char AJ_CLOSE[] = ",\n  \"not_hooked\": ";

/* The list's text [*at, *at + *len) in buf, from '[' to ']'; false when
 * the agent's markers are not there. */
static bool aj_region(const char *buf, size_t len, size_t *at, size_t *n)
{
	const char *o = memmem(buf, len, AJ_OPEN, sizeof(AJ_OPEN) - 1);
	if (!o || o[sizeof(AJ_OPEN) - 1] != '[')
		return false;
	const char *s = o + sizeof(AJ_OPEN) - 1;
	const char *c = memmem(s, len - (size_t)(s - buf), AJ_CLOSE, sizeof(AJ_CLOSE) - 1);
	if (!c || c == s || c[-1] != ']')
		return false;
	*at = (size_t)(s - buf);
	*n = (size_t)(c - s);
	return true;
}

void wal_agent_cache_free(struct wal_agent_cache *c)
{
	free(c->text);
	json_decref(c->raw);
	json_decref(c->out);
	memset(c, 0, sizeof(*c));
}

/* The file parsed with the stand-in where its list is; NULL unless the
 * stand-in came back as the top-level "modules". */
static json_t *aj_parse_rest(struct wal_agent_cache *c, const char *buf, size_t len, size_t at,
                             size_t n)
{
	char tok[40];
	int k = snprintf(tok, sizeof(tok), "\"ada-modules-%016" PRIx64 "\"", c->token);
	size_t tn = (size_t)k, rn = len - n + tn;
	char *rest = malloc(rn);
	if (!rest)
		return NULL;
	memcpy(rest, buf, at);
	memcpy(rest + at, tok, tn);
	memcpy(rest + at + tn, buf + at + n, len - at - n);
	json_t *a = json_loadb(rest, rn, 0, NULL);
	free(rest);
	const char *v = json_string_value(json_object_get(a, "modules"));
	if (!v || strlen(v) != tn - 2 || memcmp(v, tok + 1, tn - 2)) {
		json_decref(a);
		return NULL;
	}
	return a;
}

/* A miss: the whole file parsed; its list kept (and *out, its
 * conversion, given) when its text alone parses to the very list the
 * file gave. */
static json_t *aj_parse_whole(struct wal_agent_cache *c, const char *buf, size_t len, size_t at,
                              size_t n, json_t *(*convert)(json_t *raw), json_t **out)
{
	json_t *a = json_loadb(buf, len, 0, NULL);
	json_t *mods = json_object_get(a, "modules");
	if (!c->token || !json_is_array(mods))
		return a;
	json_t *raw = json_loadb(buf + at, n, 0, NULL);
	char *text = raw && json_equal(raw, mods) ? malloc(n) : NULL;
	if (!text) {
		json_decref(raw);
		return a;
	}
	memcpy(text, buf + at, n);
	uint64_t token = c->token;
	wal_agent_cache_free(c);
	c->token = token;
	c->text = text;
	c->len = n;
	c->raw = raw;
	c->out = convert(raw);
	*out = json_incref(c->out);
	return a;
}

json_t *wal_agent_parse(struct wal_agent_cache *c, const char *buf, size_t len,
                        json_t *(*convert)(json_t *raw), json_t **out)
{
	size_t at = 0, n = 0;
	*out = NULL;
	if (!c || !aj_region(buf, len, &at, &n))
		return json_loadb(buf, len, 0, NULL);
	if (!c->token && getrandom(&c->token, sizeof(c->token), GRND_NONBLOCK) != sizeof(c->token))
		c->token = 0; /* no unguessable stand-in: every file parsed whole */
	if (c->token && c->text && c->out && n == c->len && !memcmp(buf + at, c->text, n)) {
		json_t *a = aj_parse_rest(c, buf, len, at, n);
		if (a) {
			json_object_set(a, "modules", c->raw);
			*out = json_incref(c->out);
			return a;
		}
	}
	return aj_parse_whole(c, buf, len, at, n, convert, out);
}
