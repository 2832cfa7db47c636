/*
 * CPU time and memory of the recorder and of the traced processes (OB-001:
 * "recorder CPU and memory, target CPU and memory"), from /proc/PID/stat.
 * The poll thread samples once a second (ctl_cpu_sample); `status` turns
 * the last two samples into a CPU percentage and reads RSS at once.
 * /proc/PID/stat is the kernel's text, but the comm field inside it is the
 * process's own choice (it may hold ") "): fields are counted from the
 * last ')'. Threads: the poll thread only.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_internal.h"

/* utime + stime of pid in clock ticks; *rss_bytes its resident size. 0
 * (and rss 0) when it is gone or unreadable. */
uint64_t ctl_proc_ticks(pid_t pid, uint64_t *rss_bytes)
{
	char path[64], buf[1024];
	*rss_bytes = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* Fields after ") ": state is field 3; utime 14, stime 15, rss 24. */
	unsigned long long f[22] = {0};
	int i = 0;
	for (char *tok = strtok(p + 1, " "); tok && i < 22; tok = strtok(NULL, " "), i++)
		f[i] = strtoull(tok, NULL, 10);
	if (i < 22)
		return 0;
	*rss_bytes = f[21] * (uint64_t)sysconf(_SC_PAGESIZE);
	return f[11] + f[12];
}

/* The traced processes still running, from the live view. */
static uint64_t ctl_target_ticks(struct ada_control *c, uint64_t *rss, uint32_t *n)
{
	uint64_t ticks = 0, r;
	*rss = 0;
	*n = 0;
	if (!c->h.live || c->h.live(c->h.ctx, c->live) < 0)
		return 0;
	for (uint32_t i = 0; i < c->live->nprocs; i++) {
		if (c->live->procs[i].finished)
			continue;
		ticks += ctl_proc_ticks(c->live->procs[i].pid, &r);
		*rss += r;
		(*n)++;
	}
	return ticks;
}

void ctl_cpu_sample(struct ada_control *c)
{
	uint64_t rss;
	uint32_t n;
	c->cpu_prev = c->cpu_last;
	c->cpu_last.at_ns = ctl_now_ns();
	c->cpu_last.self_ticks = ctl_proc_ticks(getpid(), &rss);
	c->cpu_last.target_ticks = ctl_target_ticks(c, &rss, &n);
}

json_t *ctl_proc_usage(struct ada_control *c, bool target)
{
	uint64_t rss = 0, ticks;
	uint32_t n = 0;
	double hz = (double)sysconf(_SC_CLK_TCK);
	if (target)
		ticks = ctl_target_ticks(c, &rss, &n);
	else
		ticks = ctl_proc_ticks(getpid(), &rss);
	const struct ctl_cpu_sample *a = &c->cpu_prev, *b = &c->cpu_last;
	json_t *pct = json_null();
	if (a->at_ns && b->at_ns > a->at_ns) {
		uint64_t ta = target ? a->target_ticks : a->self_ticks;
		uint64_t tb = target ? b->target_ticks : b->self_ticks;
		double dt = (double)(b->at_ns - a->at_ns) / 1e9;
		/* a traced process that ended takes its ticks with it: not < 0 */
		pct = json_real(tb > ta ? (double)(tb - ta) / hz / dt * 100.0 : 0.0);
	}
	json_t *o = json_pack("{s:o,s:f,s:I}", "cpu_pct", pct, "cpu_sec", (double)ticks / hz,
	                      "rss_bytes", (json_int_t)rss);
	if (o && target)
		json_object_set_new(o, "processes", json_integer(n));
	else if (o) {
		json_object_set_new(o, "pid", json_integer(getpid()));
		/* The recorder's heap (glibc's count over every arena): what it
		 * holds live, and what it freed but keeps. */
		struct mallinfo2 mi = mallinfo2();
		json_object_set_new(o, "heap_in_use_bytes",
		                    json_integer((json_int_t)(mi.uordblks + mi.hblkhd)));
		json_object_set_new(o, "heap_free_bytes", json_integer((json_int_t)mi.fordblks));
	}
	return o;
}
