/*
 * The recorder's verbose log (`ada record -v`, `--log FILE`): what happens
 * while it happens — a process admitted, each module its agent hooked
 * (the new pid_N/module_<ID>.syms: its functions hooked and skipped by
 * reason, a dlopen's module as it arrives), trigger windows opening and
 * closing, a process ending. One line each, prefixed with the time since
 * the recording started, written whole to the log descriptor.
 *
 * Runs on the drain thread (wal_vlog_tick, at the drain's reclaim
 * cadence; pid_N/ is looked at every VLOG_MODULES_NS at most). The .syms
 * files are the target's: read bounded and parsed by src/atf, as the
 * key-symbol sets read them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "recorder_internal.h"
#include "symbols.h"

#define VLOG_MODULES_NS 100000000ull /* look at pid_N/ at most this often */
#define VLOG_MAX_MODULES 4096        /* module ids remembered per process */
#define VLOG_MAX_REASONS 16          /* skip reasons named per module */

struct vlog_proc {
	pid_t pid;
	bool ended;
	uint64_t modules_at; /* when pid_N/ was last looked at */
	uint32_t nmods;
	uint32_t mods[VLOG_MAX_MODULES]; /* module ids already said */
};

struct wal_vlog {
	struct vlog_proc *procs; /* by the recorder's process index */
	size_t nprocs;
	size_t windows_said;
	bool *closed_said; /* by window index, windows_said of them */
};

void wal_vlog(struct ada_recorder *r, const char *fmt, ...)
{
	char line[1024];
	if (!r->o.vlog)
		return;
	uint64_t t = ada_boottime_ns() - r->start_ns;
	int n = snprintf(line, sizeof(line), "ada: +%" PRIu64 ".%03" PRIu64 "s ", t / 1000000000u,
	                 t / 1000000u % 1000u);
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = n < (int)sizeof(line) - 1 ? n : (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(r->o.vlog_fd, line, (size_t)n) < 0) {
		/* a log that cannot be written is not worth stopping the drain */
	}
}

int wal_vlog_init(struct ada_recorder *r)
{
	if (!r->o.vlog)
		return 0;
	r->vlog = calloc(1, sizeof(*r->vlog));
	return r->vlog ? 0 : -ENOMEM;
}

void wal_vlog_fini(struct ada_recorder *r)
{
	if (!r->vlog)
		return;
	free(r->vlog->procs);
	free(r->vlog->closed_said);
	free(r->vlog);
	r->vlog = NULL;
}

static bool vlog_module_said(struct vlog_proc *vp, uint32_t id)
{
	for (uint32_t i = 0; i < vp->nmods; i++)
		if (vp->mods[i] == id)
			return true;
	if (vp->nmods < VLOG_MAX_MODULES)
		vp->mods[vp->nmods++] = id;
	return false;
}

/* "module 3 /usr/lib/x.so: 812 hooked, 40 skipped (jump_table 21, ...)" */
static void vlog_module(struct ada_recorder *r, pid_t pid, const struct ada_syms_module *m)
{
	const char *why[VLOG_MAX_REASONS];
	uint64_t count[VLOG_MAX_REASONS], hooked = 0, skipped = 0;
	size_t nwhy = 0;
	char tail[512] = "";
	for (size_t i = 0; i < m->nfuncs; i++) {
		const char *s = m->funcs[i].status ? m->funcs[i].status : "?";
		if (!strcmp(s, "hooked")) {
			hooked++;
			continue;
		}
		skipped++;
		size_t k = 0;
		while (k < nwhy && strcmp(why[k], s))
			k++;
		if (k == nwhy && nwhy < VLOG_MAX_REASONS)
			why[nwhy] = s, count[nwhy++] = 0;
		if (k < nwhy)
			count[k]++;
	}
	for (size_t k = 0, n = 0; k < nwhy; k++)
		n += (size_t)snprintf(tail + n, n < sizeof(tail) ? sizeof(tail) - n : 0,
		                      "%s%s %" PRIu64, k ? ", " : " (", why[k], count[k]);
	wal_vlog(r,
	         "pid %d: module %" PRIu32 " %s: %" PRIu64 " functions hooked, %" PRIu64
	         " skipped%s%s",
	         (int)pid, m->module_id, m->path ? m->path : "?", hooked, skipped, tail,
	         nwhy ? ")" : "");
}

/* The modules of p whose .syms appeared since the last look. */
static void vlog_modules(struct ada_recorder *r, struct wal_proc *p, struct vlog_proc *vp)
{
	DIR *d = p->dir_fd < 0 ? NULL : ada_fs_opendir(p->dir_fd, ".");
	if (!d)
		return;
	struct dirent *e;
	/* pid_N/ holds thread_K/ and the process's other files too. */
	for (unsigned seen = 0;
	     seen < ADA_FS_WALK_MAX_ENTRIES && vp->nmods < VLOG_MAX_MODULES && (e = readdir(d));
	     seen++) {
		char *buf, *end;
		size_t len;
		unsigned long id =
		    wal_is_syms_name(e->d_name) ? strtoul(e->d_name + 7, &end, 10) : 0;
		struct ada_syms_module *m = NULL;
		if (!wal_is_syms_name(e->d_name) || vlog_module_said(vp, (uint32_t)id))
			continue;
		if (wal_syms_read(dirfd(d), e->d_name, &buf, &len))
			continue;
		if (ada_syms_parse_at(dirfd(d), buf, len, WAL_KS_SYMS_MAX, &m, NULL) == 0)
			vlog_module(r, p->pid, m);
		ada_syms_module_free(m);
		free(buf);
	}
	closedir(d);
}

static void vlog_procs(struct ada_recorder *r, struct wal_vlog *v, uint64_t now)
{
	if (r->nprocs > v->nprocs) {
		struct vlog_proc *np = realloc(v->procs, r->nprocs * sizeof(*np));
		if (!np)
			return;
		memset(np + v->nprocs, 0, (r->nprocs - v->nprocs) * sizeof(*np));
		for (size_t i = v->nprocs; i < r->nprocs; i++) {
			np[i].pid = r->procs[i]->pid;
			wal_vlog(r, "pid %d: recording (%s)", (int)np[i].pid, r->procs[i]->dir);
		}
		v->procs = np;
		v->nprocs = r->nprocs;
	}
	for (size_t i = 0; i < v->nprocs; i++) {
		struct wal_proc *p = r->procs[i];
		struct vlog_proc *vp = &v->procs[i];
		if (!vp->ended && now - vp->modules_at >= VLOG_MODULES_NS) {
			vp->modules_at = now;
			vlog_modules(r, p, vp);
		}
		if (p->finished && !vp->ended) {
			vp->ended = true;
			vlog_modules(r, p, vp); /* what it hooked at the last moment */
			wal_vlog(r, "pid %d: ended, %" PRIu64 " events", (int)p->pid,
			         p->events - wal_proc_lost(p));
		}
	}
}

static void vlog_windows(struct ada_recorder *r, struct wal_vlog *v)
{
	size_t n = r->flight.trig ? ada_trigger_window_count(r->flight.trig) : 0;
	if (n > v->windows_said) {
		bool *c = realloc(v->closed_said, n * sizeof(*c));
		if (!c)
			return;
		memset(c + v->windows_said, 0, (n - v->windows_said) * sizeof(*c));
		v->closed_said = c;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ada_trigger_window *w = ada_trigger_window_at(r->flight.trig, i);
		if (i >= v->windows_said) {
			wal_vlog(r,
			         "window %" PRIu32
			         " opened by %s, from %.3f s before to %.3f s after",
			         w->id, w->trigger, (double)(w->fire_ns - w->from_ns) / 1e9,
			         (double)(w->to_ns - w->fire_ns) / 1e9);
			v->windows_said = i + 1;
		}
		if (w->closed && !v->closed_said[i]) {
			v->closed_said[i] = true;
			wal_vlog(r, "window %" PRIu32 " closed: persisted to its end", w->id);
		}
	}
}

void wal_vlog_proc_retiring(struct ada_recorder *r, size_t i)
{
	struct wal_vlog *v = r->vlog;
	if (!v || i >= v->nprocs)
		return;
	if (!v->procs[i].ended)
		wal_vlog(r, "pid %d: ended, %" PRIu64 " events", (int)r->procs[i]->pid,
		         r->procs[i]->events - wal_proc_lost(r->procs[i]));
	wal_vlog(r, "pid %d: retired (its files deleted by the disk budget)",
	         (int)r->procs[i]->pid);
	memmove(&v->procs[i], &v->procs[i + 1], (v->nprocs - i - 1) * sizeof(*v->procs));
	v->nprocs--;
}

void wal_vlog_tick(struct ada_recorder *r)
{
	if (!r->vlog)
		return;
	vlog_procs(r, r->vlog, ada_boottime_ns());
	vlog_windows(r, r->vlog);
}
