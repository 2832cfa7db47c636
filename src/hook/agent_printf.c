/*
 * The agent's fprintf (agent_printf_internal.h), not hook context: called
 * by whoever writes one of the agent's files, under agent.lock.
 *
 * The files' bytes go out with putc_unlocked, which the compiler inlines
 * into the stream's buffer: once libc is hooked, each call of the agent
 * into libc (fputc, fprintf and the functions they call) passes a
 * trampoline and the guard's handler (untraced_calls.agent_work), about
 * 2 900 of them in a forked child's agent.json at exit before this
 * (docs/benchmarks.md, cow9).
 *
 * The rule that keeps it fprintf's equal: agent_fmt_ours accepts exactly
 * the conversions agent_put_conv implements, and a format with any other
 * goes to vfprintf whole.
 */
#include <stdint.h>
#include <string.h>

#include "agent_printf_internal.h"

void agent_put_hex(FILE *f, unsigned v, int digits)
{
	static const char hex[] = "0123456789abcdef";
	while (digits-- > 0)
		putc_unlocked(hex[(v >> (4 * digits)) & 15u], f);
}

static inline void agent_put_str(const char *s, FILE *f)
{
	for (; *s; s++)
		putc_unlocked(*s, f);
}

void agent_puts(const char *s, FILE *f)
{
	agent_put_str(s, f);
}

static inline bool agent_fmt_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The conversion at p (after its '%') when ours; its end, else NULL. */
static inline const char *agent_fmt_conv(const char *p)
{
	if (*p == 's' || *p == 'c')
		return p + 1;
	p += *p == '0';
	for (int i = 0; i < 2 && agent_fmt_digit(*p); i++)
		p++;
	p += *p == 'l' || *p == 'z';
	return *p == 'd' || *p == 'u' || *p == 'x' ? p + 1 : NULL;
}

/* Inlined into agent_format: each of agent.json's lines is checked
 * before it is formatted. */
static inline bool agent_fmt_check(const char *fmt)
{
	for (const char *p = fmt; *p;) {
		if (*p++ != '%')
			continue;
		p = agent_fmt_conv(p);
		if (!p)
			return false;
	}
	return true;
}

bool agent_fmt_ours(const char *fmt)
{
	return agent_fmt_check(fmt);
}

/* v in base 10 or 16, '-' first when neg; zero padding goes after the
 * sign, space padding before it (fprintf's %05d of -3 is "-0003"). */
static void agent_put_num(FILE *f, uint64_t v, bool neg, unsigned base, int width, char pad)
{
	char buf[24];
	int n = 0;
	do {
		buf[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	int fill = width - n - neg;
	if (neg && pad == '0')
		putc_unlocked('-', f);
	for (; fill > 0; fill--)
		putc_unlocked(pad, f);
	if (neg && pad != '0')
		putc_unlocked('-', f);
	while (n > 0)
		putc_unlocked(buf[--n], f);
}

/* One conversion at *p (after the '%'), one agent_fmt_conv accepted; the
 * format position after it. */
static const char *agent_put_conv(FILE *f, const char *p, va_list *ap)
{
	char pad = *p == '0' ? '0' : ' ';
	int width = 0;
	while (agent_fmt_digit(*p))
		width = width * 10 + (*p++ - '0');
	bool wide = *p == 'l' || *p == 'z';
	p += wide;
	if (*p == 's') {
		agent_put_str(va_arg(*ap, const char *), f);
	} else if (*p == 'c') {
		putc_unlocked(va_arg(*ap, int), f);
	} else if (*p == 'd') {
		int64_t v = wide ? va_arg(*ap, long) : va_arg(*ap, int);
		agent_put_num(f, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0, 10, width, pad);
	} else {
		uint64_t v = wide ? va_arg(*ap, unsigned long) : va_arg(*ap, unsigned);
		agent_put_num(f, v, false, *p == 'x' ? 16 : 10, width, pad);
	}
	return p + 1;
}

/* ap is a pointer: a va_list parameter is an array on x86_64 and cannot
 * be passed on by address (agent_vprintf copies it). Inlined into
 * agent_printf, so its calls cost what they did when it was all one
 * function of agent.c. */
static inline __attribute__((always_inline)) void agent_format(FILE *f, const char *fmt,
                                                               va_list *ap)
{
	if (!agent_fmt_check(fmt)) {
		vfprintf(f, fmt, *ap);
		return;
	}
	for (const char *p = fmt; *p;) {
		if (*p != '%')
			putc_unlocked(*p++, f);
		else
			p = agent_put_conv(f, p + 1, ap);
	}
}

void agent_vprintf(FILE *f, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	agent_format(f, fmt, &aq);
	va_end(aq);
}

void agent_printf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	agent_format(f, fmt, &ap);
	va_end(ap);
}

/* s into out at *n, within cap (room left for the terminator). */
static bool printf_put(char *out, size_t cap, size_t *n, const char *s)
{
	size_t k = strlen(s);
	if (k >= cap - *n)
		return false;
	memcpy(out + *n, s, k);
	*n += k;
	return true;
}

/* v in decimal into out at *n, within cap. */
static bool printf_put_dec(char *out, size_t cap, size_t *n, unsigned long long v)
{
	char d[24];
	size_t k = sizeof(d);
	d[--k] = '\0';
	do {
		d[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return printf_put(out, cap, n, d + k);
}

bool agent_name_dec(char *out, size_t cap, const char *prefix, unsigned long long v,
                    const char *suffix)
{
	size_t n = 0;
	if (cap == 0 || !printf_put(out, cap, &n, prefix) || !printf_put_dec(out, cap, &n, v) ||
	    !printf_put(out, cap, &n, suffix))
		return false;
	out[n] = '\0';
	return true;
}

bool agent_pid_path(char *out, size_t cap, const char *dir, long pid, const char *name)
{
	size_t n = 0;
	if (cap == 0 || pid < 0 || !printf_put(out, cap, &n, dir) ||
	    !printf_put(out, cap, &n, "/pid_") ||
	    !printf_put_dec(out, cap, &n, (unsigned long long)pid) ||
	    !printf_put(out, cap, &n, "/") || !printf_put(out, cap, &n, name))
		return false;
	out[n] = '\0';
	return true;
}
