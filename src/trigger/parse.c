/*
 * --trigger SPEC parsing, durations and fractional seconds.
 *
 * Threads: any; pure functions over their arguments. Each parser takes a
 * NUL-terminated string from the command line (or the control socket) and
 * checks every character before it is used; a refusal fills `why` with one
 * sentence that names the bad part and shows a good spec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "trigger_internal.h"

#define PARSE_EXAMPLES                                                                             \
	"crash, symbol=GLOB, p99=function:GLOB>50ms, p99=function:GLOB, time=HH:MM-HH:MM or "      \
	"manual"

static int parse_fail(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int parse_fail(char *why, size_t len, const char *fmt, ...)
{
	if (why && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Decimal with an optional fraction, scaled by unit_ns; rejects overflow. */
static int parse_scaled(const char *s, size_t len, uint64_t unit_ns, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	size_t i = 0;
	bool digits = false, dot = false;
	for (; i < len; i++) {
		char c = s[i];
		if (c == '.' && !dot) {
			dot = true;
			continue;
		}
		if (c < '0' || c > '9')
			return -EINVAL;
		digits = true;
		if (!dot) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			whole = whole * 10 + (uint64_t)(c - '0');
		} else if (scale < 1000000000ull) { /* finer than 1e-9 of a unit: ignored */
			frac = frac * 10 + (uint64_t)(c - '0');
			scale *= 10;
		}
	}
	if (!digits || whole > UINT64_MAX / unit_ns / 2)
		return -EINVAL;
	*out = whole * unit_ns + (uint64_t)((unsigned __int128)frac * unit_ns / scale);
	return 0;
}

int ada_trigger_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000ull}};
	size_t len = strlen(s);
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		size_t ul = strlen(units[u].unit);
		if (len <= ul || strcmp(s + len - ul, units[u].unit))
			continue;
		/* "50ms" also ends in "s": a digit must come right before the unit. */
		char before = s[len - ul - 1];
		if ((before < '0' || before > '9') && before != '.')
			continue;
		return parse_scaled(s, len - ul, units[u].ns, ns);
	}
	return -EINVAL;
}

int ada_trigger_parse_seconds(const char *s, uint64_t *ns)
{
	return parse_scaled(s, strlen(s), 1000000000ull, ns);
}

/* "HH:MM" at s (exactly 5 characters). */
static int parse_hhmm(const char *s, uint32_t *sec)
{
	if (strlen(s) < 5 || s[2] != ':')
		return -EINVAL;
	for (int i = 0; i < 5; i++)
		if (i != 2 && (s[i] < '0' || s[i] > '9'))
			return -EINVAL;
	uint32_t h = (uint32_t)(s[0] - '0') * 10 + (uint32_t)(s[1] - '0');
	uint32_t m = (uint32_t)(s[3] - '0') * 10 + (uint32_t)(s[4] - '0');
	if (h > 23 || m > 59)
		return -EINVAL;
	*sec = h * 3600 + m * 60;
	return 0;
}

static int parse_time(const char *v, struct ada_trigger_spec *out, char *why, size_t len)
{
	if (strlen(v) != 11 || v[5] != '-' || parse_hhmm(v, &out->from_sec) < 0 ||
	    parse_hhmm(v + 6, &out->to_sec) < 0)
		return parse_fail(
		    why, len,
		    "the time range '%s' is not HH:MM-HH:MM on a 24-hour local clock; "
		    "for example --trigger time=10:30-10:45",
		    v);
	if (out->from_sec == out->to_sec)
		return parse_fail(why, len,
		                  "the time range '%s' is empty (it starts where it ends); for "
		                  "example --trigger time=10:30-10:45",
		                  v);
	out->kind = ADA_TRIGGER_TIME;
	return 0;
}

static int parse_glob(const char *g, size_t glen, struct ada_trigger_spec *out, const char *what,
                      char *why, size_t len)
{
	if (glen == 0 || glen >= sizeof(out->glob))
		return parse_fail(why, len,
		                  "%s needs a function name or glob of 1 to %zu characters; for "
		                  "example --trigger %s",
		                  what, sizeof(out->glob) - 1,
		                  !strcmp(what, "symbol=") ? "symbol=abort_transaction"
		                                           : "p99=function:handle_request>50ms");
	for (size_t i = 0; i < glen; i++)
		if ((unsigned char)g[i] < 0x21 || g[i] == '>' || g[i] == ',')
			return parse_fail(
			    why, len,
			    "the function glob '%.*s' holds a space, control character, "
			    "',' or '>'; for example --trigger symbol='handle_*'",
			    (int)glen, g);
	memcpy(out->glob, g, glen);
	out->glob[glen] = '\0';
	return 0;
}

/* p99=function:GLOB[>DURATION] and latency=... */
static int parse_latency(const char *key, const char *v, struct ada_trigger_spec *out, char *why,
                         size_t len)
{
	static const char fn[] = "function:";
	if (strncmp(v, fn, sizeof(fn) - 1))
		return parse_fail(
		    why, len,
		    "'%s=%s' must name a function as %s=function:GLOB[>DURATION]; for "
		    "example --trigger %s=function:handle_request>50ms",
		    key, v, key, key);
	const char *g = v + sizeof(fn) - 1, *gt = strchr(g, '>');
	size_t glen = gt ? (size_t)(gt - g) : strlen(g);
	if (parse_glob(g, glen, out, "p99=function:", why, len) < 0)
		return -EINVAL;
	if (!gt) {
		out->kind = ADA_TRIGGER_P99;
		return 0;
	}
	if (ada_trigger_parse_duration(gt + 1, &out->threshold_ns) < 0 || out->threshold_ns == 0)
		return parse_fail(
		    why, len,
		    "the duration '%s' is not a number with a unit ns, us, ms or s; for "
		    "example --trigger %s=function:%s>50ms",
		    gt + 1, key, out->glob);
	out->kind = ADA_TRIGGER_LATENCY;
	return 0;
}

int ada_trigger_parse(const char *text, struct ada_trigger_spec *out, char *why, size_t why_len)
{
	memset(out, 0, sizeof(*out));
	if (!text || !*text)
		return parse_fail(why, why_len,
		                  "the trigger is empty; give one of " PARSE_EXAMPLES);
	if (strlen(text) >= sizeof(out->text))
		return parse_fail(why, why_len,
		                  "the trigger is longer than %zu characters; for example "
		                  "--trigger symbol='handle_*'",
		                  sizeof(out->text) - 1);
	strcpy(out->text, text);
	if (!strcmp(text, "crash")) {
		out->kind = ADA_TRIGGER_CRASH;
		return 0;
	}
	if (!strcmp(text, "manual")) {
		out->kind = ADA_TRIGGER_MANUAL;
		return 0;
	}
	const char *eq = strchr(text, '=');
	size_t klen = eq ? (size_t)(eq - text) : 0;
	if (eq && klen == 6 && !strncmp(text, "symbol", 6)) {
		out->kind = ADA_TRIGGER_SYMBOL;
		return parse_glob(eq + 1, strlen(eq + 1), out, "symbol=", why, why_len);
	}
	if (eq && klen == 3 && !strncmp(text, "p99", 3))
		return parse_latency("p99", eq + 1, out, why, why_len);
	if (eq && klen == 7 && !strncmp(text, "latency", 7))
		return parse_latency("latency", eq + 1, out, why, why_len);
	if (eq && klen == 4 && !strncmp(text, "time", 4))
		return parse_time(eq + 1, out, why, why_len);
	return parse_fail(why, why_len, "'%.*s' is not a trigger; give one of " PARSE_EXAMPLES,
	                  eq ? (int)klen : (int)strlen(text), text);
}

const char *ada_trigger_kind_name(enum ada_trigger_kind k)
{
	switch (k) {
	case ADA_TRIGGER_CRASH:
		return "crash";
	case ADA_TRIGGER_SYMBOL:
		return "symbol";
	case ADA_TRIGGER_LATENCY:
		return "latency";
	case ADA_TRIGGER_P99:
		return "p99";
	case ADA_TRIGGER_TIME:
		return "time";
	case ADA_TRIGGER_MANUAL:
		return "manual";
	}
	return "?";
}
