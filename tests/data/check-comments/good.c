/* What tools/check-comments.py must accept (tests/unit/lint.cmake,
 * lint_check_comments): the file's header, followed by a blank line. */

#include <stdint.h>

/* ---------------------------------------------------------------- */
/* Banners                                                          */
/* ---------------------------------------------------------------- */

/* ---- a section title, then a blank line ---- */

/* The drain's 10 ms cadence; idle, it backs off from 50 us to 1 ms.
 * A slope between 20 GHz (0.05 ns per tick) and 50 MHz (20 ns per tick)
 * is plausible. A ring of 2 MiB per thread. Durations are given as
 * "1.5s", "200ms", "30us" or "10ns". The measured slope is cached; the
 * table measured 2 bytes after REX. Addresses as "0x51" strings. */
static const uint8_t good_bytes[] = {0x51, 0x41, 0x50};

/* good.c: a group label, then the first item's doc comment. */
/* Returns the first byte. */
static int good_first(void)
{
	/* One comment above a statement. */
	int x = good_bytes[0];
	x++; /* a trailing comment, not a doc comment */
	/* Another one, after code. */
	return x;
}

/* A string that looks like a comment with a date and a figure. */
static const char *good_string(void)
{
	return "/* 2026-11-28: 14.3 ns/event */";
}

int good_main(void);
/* The entry point: good_first() and good_string(), in that order. */
int good_main(void)
{
	return good_first() + (good_string()[0] == '/');
}

/* The end of a section: a note, then a blank line and the next banner. */

/* ---- the last section ---- */
int good_last(void);

/* A note at the end of the file. */
