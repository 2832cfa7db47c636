/*
 * The report: adding checks, the groups in order, the one-line refusal
 * and the JSON form. The checks themselves are in diag_program.c (the
 * file), diag_process.c (the pid) and diag_host.c (the machine).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "diag_internal.h"

struct ada_diag_check *diag_add(struct ada_diag_report *rep, const char *id, const char *what)
{
	if (rep->n >= ADA_DIAG_MAX_CHECKS)
		return NULL;
	struct ada_diag_check *c = &rep->checks[rep->n++];
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->what = what;
	return c;
}

void diag_set(struct ada_diag_check *c, enum ada_diag_status s, bool fixable, const char *fmt, ...)
{
	va_list ap;
	c->status = s;
	c->fixable = s != ADA_DIAG_OK && fixable;
	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
}

void diag_step(struct ada_diag_check *c, const char *fmt, ...)
{
	va_list ap;
	if (c->nsteps >= ADA_DIAG_MAX_STEPS)
		return;
	va_start(ap, fmt);
	vsnprintf(c->steps[c->nsteps++], ADA_DIAG_TEXT_MAX, fmt, ap);
	va_end(ap);
}

ssize_t diag_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? -errno : 0;
			if (e) {
				close(fd);
				return e;
			}
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

const char *diag_field(const char *text, const char *key)
{
	size_t k = strlen(key);
	for (const char *p = text; p && *p;) {
		if (!strncmp(p, key, k) && p[k] == ':') {
			p += k + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/* Every warn and fail says what to do (diag.h): a check that forgot gets
 * the pointer to the documentation rather than an empty list. Each check
 * writes its own steps; this is the net under them. */
static void diag_steps_guard(struct ada_diag_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		struct ada_diag_check *c = &rep->checks[i];
		if (c->status != ADA_DIAG_OK && !c->nsteps)
			diag_step(c, "see the check \"%s\" in docs/diagnose.md", c->id);
	}
}

int ada_diag_run(const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	if (!o->groups || ((o->groups & ADA_DIAG_PROGRAM) && !o->path && !o->pid) ||
	    ((o->groups & ADA_DIAG_PROCESS) && o->pid <= 0))
		return -EINVAL;
	rep->pid = o->groups & ADA_DIAG_PROCESS ? o->pid : 0;
	bool alive = true;
	if (o->groups & ADA_DIAG_PROCESS)
		alive = diag_process(o, rep); /* sets rep->target to its executable */
	else
		snprintf(rep->target, sizeof(rep->target), "%s", o->path);
	if ((o->groups & ADA_DIAG_PROGRAM) && alive && rep->target[0])
		diag_program(o, rep->target, rep);
	if ((o->groups & ADA_DIAG_PROCESS) && alive)
		diag_process_libc(o->pid, rep);
	if (o->groups & ADA_DIAG_HOST)
		diag_host(o, rep);
	diag_steps_guard(rep);
	return 0;
}

const struct ada_diag_check *ada_diag_first_fail(const struct ada_diag_report *rep)
{
	for (size_t i = 0; i < rep->n; i++)
		if (rep->checks[i].status == ADA_DIAG_FAIL)
			return &rep->checks[i];
	return NULL;
}

size_t ada_diag_count(const struct ada_diag_report *rep, enum ada_diag_status s)
{
	size_t n = 0;
	for (size_t i = 0; i < rep->n; i++)
		n += rep->checks[i].status == s;
	return n;
}

void ada_diag_sentence(const struct ada_diag_check *c, char *buf, size_t cap)
{
	int used = snprintf(buf, cap, "%s", c->message);
	for (size_t i = 0; i < c->nsteps && used >= 0 && (size_t)used < cap; i++)
		used += snprintf(buf + used, cap - (size_t)used, "; %s", c->steps[i]);
}

const char *ada_diag_status_name(enum ada_diag_status s)
{
	return s == ADA_DIAG_OK ? "ok" : s == ADA_DIAG_WARN ? "warn" : "fail";
}

static json_t *diag_check_json(const struct ada_diag_check *c)
{
	json_t *steps = json_array();
	for (size_t i = 0; steps && i < c->nsteps; i++)
		json_array_append_new(steps, json_string(c->steps[i]));
	return json_pack("{s:s, s:s, s:s, s:b, s:s, s:o*}", "id", c->id, "what", c->what, "status",
	                 ada_diag_status_name(c->status), "fixable", c->fixable, "message",
	                 c->message, "remediation", steps);
}

json_t *ada_diag_json(const struct ada_diag_report *rep)
{
	json_t *checks = json_array();
	for (size_t i = 0; checks && i < rep->n; i++)
		json_array_append_new(checks, diag_check_json(&rep->checks[i]));
	size_t failed = ada_diag_count(rep, ADA_DIAG_FAIL);
	json_t *pid = rep->pid ? json_integer(rep->pid) : json_null();
	return json_pack("{s:s, s:o*, s:b, s:I, s:I, s:o*}", "target", rep->target, "pid", pid,
	                 "ok", failed == 0, "failed", (json_int_t)failed, "warnings",
	                 (json_int_t)ada_diag_count(rep, ADA_DIAG_WARN), "checks", checks);
}
