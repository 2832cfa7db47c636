/*
 * --trigger SPEC parsing, durations (the one grammar of them: the
 * reading commands' offsets use it too) and fractional seconds.
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

/* The parts of a decimal number at the start of s: digits with an
 * optional fraction ("1.5", ".5", "2."), then, when exp_ok, an optional
 * exponent ("1e3", "2.5E-1"). */
struct parse_num {
	const char *digits; /* the mantissa as written, '.' included */
	size_t len, nint;   /* its length; digits before the '.' */
	bool dot;
	long exp;   /* clamped to +-PARSE_EXP_MAX */
	size_t end; /* where the number ends in s */
};
#define PARSE_EXP_MAX 1000

static bool parse_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An exponent at s ("e3", "E-2"): its length, 0 when there is none. */
static size_t parse_exp(const char *s, long *exp)
{
	if (s[0] != 'e' && s[0] != 'E')
		return 0;
	bool neg = s[1] == '-';
	size_t i = 1 + (s[1] == '-' || s[1] == '+');
	if (!parse_digit(s[i]))
		return 0;
	for (*exp = 0; parse_digit(s[i]); i++)
		if (*exp < PARSE_EXP_MAX)
			*exp = *exp * 10 + (s[i] - '0');
	*exp = neg ? -*exp : *exp;
	return i;
}

/* -EINVAL when s does not start with a number. */
static int parse_number(const char *s, bool exp_ok, struct parse_num *n)
{
	size_t i = 0, ndig = 0;
	*n = (struct parse_num){.digits = s};
	for (; parse_digit(s[i]) || (s[i] == '.' && !n->dot); i++) {
		if (s[i] == '.')
			n->dot = true;
		else if (!n->dot)
			n->nint++;
		ndig += s[i] != '.';
	}
	if (!ndig)
		return -EINVAL;
	n->len = i;
	n->end = i + (exp_ok ? parse_exp(s + i, &n->exp) : 0);
	return 0;
}

/* The number times 10^pow10, its fraction dropped: -ERANGE past
 * UINT64_MAX. Exact: digit by digit, no floating point. */
static int parse_scale(const struct parse_num *n, int pow10, uint64_t *out)
{
	long point = (long)n->nint + n->exp + pow10; /* digits left of the point */
	size_t ndig = n->len - n->dot;
	uint64_t v = 0;
	for (long k = 0; k < point; k++) {
		size_t at = (size_t)k + (n->dot && (size_t)k >= n->nint);
		unsigned d = (size_t)k < ndig ? (unsigned)(n->digits[at] - '0') : 0;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int ada_trigger_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		int pow10; /* of the unit in ns */
	} units[] = {{"ns", 0}, {"us", 3}, {"ms", 6}, {"s", 9}};
	struct parse_num n;
	if (parse_number(s, true, &n) < 0)
		return -EINVAL;
	if (!s[n.end])
		return -EDOM; /* a number without its unit */
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
		if (!strcmp(s + n.end, units[u].unit))
			return parse_scale(&n, units[u].pow10, ns);
	return -EINVAL;
}

int ada_trigger_parse_seconds(const char *s, uint64_t *ns)
{
	struct parse_num n;
	if (parse_number(s, false, &n) < 0 || s[n.end])
		return -EINVAL;
	return parse_scale(&n, 9, ns);
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
