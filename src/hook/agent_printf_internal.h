/*
 * The agent's own fprintf (agent_printf.c): the subset of conversions its
 * files use, formatted straight into the stream's buffer, and whatever
 * else handed to vfprintf whole. Internal to src/hook: agent.c writes its
 * files with it, tests/unit/test_agent_printf.c compares it with snprintf.
 * Not hook context (the stream is the caller's, under agent.lock).
 */
#ifndef ADA_AGENT_PRINTF_INTERNAL_H
#define ADA_AGENT_PRINTF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* v's low digits*4 bits as that many lowercase hex digits. */
void agent_put_hex(FILE *f, unsigned v, int digits);
/* s without its terminator (fputs's order of arguments). */
void agent_puts(const char *s, FILE *f);
/* Whether every conversion of fmt is one agent_printf formats itself:
 * %s and %c bare, %d %u %x with an optional '0' flag, a width of at most
 * two digits and an optional l or z length. Anything else (%%, other
 * flags, precisions, %5s, %ls, %lc, %hd ...) is not. */
bool agent_fmt_ours(const char *fmt);
/* fprintf(f, fmt, ...), byte for byte. */
__attribute__((format(printf, 2, 3))) void agent_printf(FILE *f, const char *fmt, ...);
__attribute__((format(printf, 2, 0))) void agent_vprintf(FILE *f, const char *fmt, va_list ap);

/* The forked child's file names by hand (agent.c): no vfprintf, whose
 * code, tables and deep frame are pages a child faults in for them.
 * "<prefix><v><suffix>" into out (cap bytes with the terminator); false
 * when it does not fit (out then unspecified). */
bool agent_name_dec(char *out, size_t cap, const char *prefix, unsigned long long v,
                    const char *suffix);
/* "<dir>/pid_<pid>/<name>" into out, as agent_name_dec. */
bool agent_pid_path(char *out, size_t cap, const char *dir, long pid, const char *name);

#endif
