/* What tools/check-comments.py must find (tests/unit/lint.cmake,
 * lint_check_comments): bad.expect lists each finding's line and rule. */

#include <stdint.h>

/* Returns the answer; its function moved away. */
/* Returns one. */
static int bad_one(void)
{
	/* Acquire: pairs with the release store of the producer. */
	/* Counted, not `p < end`: positions may wrap. */
	int x = 1;
	return x;
}

/* Returns two, but a blank line cuts it from its function. */

static int bad_two(void)
{
	return 2;
}

/* bad_one.c: a label over nothing. */
/* bad_two.c: the next group. */
int bad_three(void);

/* Until 2026-11-28 this waited for every ring to be 12 % full. */
static int bad_four(void)
{
	return 4;
}

/* The drain costs 14.3 ns/event without the nap, and 35 ns of drain CPU
 * per event when it spins; wal_bench at 10 M
 * events/s. A 2 MB/s throttle; hooks at 0.29x of uftrace, 3x faster than
 * capstone, whose sort took ~2 ms. Wall time 0.81 -> 0.68 s. */
static int bad_five(void)
{
	return 5; /* measured on this machine: 12.5 ns */
}

/* Capstone costs ~100 ns per
 * instruction; the copy cost ~14 % of the drain. */
int bad_six(void)
{
	return bad_one() + bad_two() + bad_four() + bad_five();
}

/* A note a blank line cuts from the doc comment below. */

/* Returns seven. */
int bad_seven(void);
