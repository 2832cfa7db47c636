/*
 * ada ring: the start time in a /proc/PID/stat text. A process's pid and
 * start time name it across exec (exec keeps both) and tell it from a
 * later process given the same pid (the same pid, another start time):
 * the producer compares them before it adopts an arena of its pid
 * (env.c), the recorder before it waits on a pid (src/recorder/drain.c,
 * alive.c).
 *
 * Threads: any; pure.
 */
#include <stdint.h>

#include "ring.h"

uint64_t ada_stat_start_ticks(const char *buf, size_t n)
{
	if (!buf)
		return 0;
	size_t i = n;
	while (i > 0 && buf[i - 1] != ')')
		i--;
	if (i == 0)
		return 0;
	/* buf[i]: just after the last ')', the space before field 3; field k
	 * starts after the (k - 2)-th space from there. */
	for (int spaces = 0; i < n; i++)
		if (buf[i] == ' ' && ++spaces == 20)
			break;
	if (i >= n)
		return 0;
	uint64_t v = 0;
	size_t digits = 0;
	for (i++; i < n && buf[i] >= '0' && buf[i] <= '9'; i++, digits++) {
		uint64_t d = (uint64_t)(buf[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0; /* past 2^64: not a start time */
		v = v * 10 + d;
	}
	/* A read cut short inside the field must not pass for a smaller one. */
	if (!digits || i >= n || (buf[i] != ' ' && buf[i] != '\n'))
		return 0;
	return v;
}
