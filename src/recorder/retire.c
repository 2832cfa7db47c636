/*
 * Retiring a finished process the disk budget has emptied: its pid_N/
 * (manifest.json, agent.json, the module files the budget left) is
 * replaced by one line of the session's retired.jsonl, and
 * its wal_proc by the sums the recording's totals need (struct
 * wal_retired). A recording of thousands of short processes under a
 * budget then keeps neither ~20 KiB on disk nor ~12 KiB of the
 * recorder's memory per process it finished long ago (docs/manifest.md,
 * "Retired processes").
 *
 * Threads: the drain thread only.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena_internal.h"
#include "drain_internal.h"
#include "flight_internal.h"
#include "fs.h"
#include "manifest.h"

/* A manifest read back to be retired: at most this long. */
#define RETIRE_MANIFEST_MAX (16u << 20)
/* argv words a line keeps of the program (the rest are counted). */
#define RETIRE_ARGV_MAX 16u

/* Every thread's files are gone (or it never had any). */
static bool retire_no_files(const struct wal_proc *p, bool *had)
{
	*had = false;
	for (size_t j = 0; j < p->nthreads; j++) {
		const struct wal_thread *t = p->threads[j];
		if (t->has_dir && !t->final_retired)
			return false;
		*had |= t->has_dir;
	}
	return true;
}

/* No process holds pid now, and no arena of that pid waits in the arena
 * directory: a later process given the pid would otherwise write its
 * side files into the pid_N/ being removed. A process that takes the
 * pid after this look starts its agent (ms) after the removal (us). */
static bool retire_pid_free(const struct ada_recorder *r, pid_t pid)
{
	char name[32];
	struct stat st;
	if (kill(pid, 0) == 0 || errno != ESRCH)
		return false;
	snprintf(name, sizeof(name), "%d.ring", (int)pid);
	return r->shm.dir_fd < 0 || fstatat(r->shm.dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0;
}

/* Whether p is retired now: finished and final, its manifest written
 * and current, every data file of it deleted by the budget (its symbol
 * files with them), no later process given its pid known to write into
 * its directory (side_watch), its pid free. A process that
 * never had a data file is retired once the session has reached its
 * budget (the budget deletes the oldest data then; such a directory is
 * nothing but the overhead it would keep). */
static bool retire_ready(const struct ada_recorder *r, const struct wal_proc *p)
{
	bool had;
	if (!p->finished || p->dir_fd < 0 || p->manifest_failed || p->retention_stale ||
	    p->retention_saved || p->side_watch || p->crash_thread || !retire_no_files(p, &had))
		return false;
	if (had ? !p->syms_retired : !r->budget.retired_gens)
		return false;
	/* A pid the recorder trusts as its own (the program's, one it reaped
	 * whose arena a scan has not passed yet: arena_check.c) keeps its
	 * process: a later process given it would be taken for that one. */
	if (p->pid == r->main_pid || wal_reaped_has(&r->reaped, p->pid, INT64_MIN))
		return false;
	return retire_pid_free(r, p->pid);
}

/* The keys of obj named in keys (NULL-terminated) into out, when present. */
static void retire_copy(json_t *out, json_t *obj, const char *const *keys)
{
	for (; *keys; keys++) {
		json_t *v = json_object_get(obj, *keys);
		if (v)
			json_object_set(out, *keys, v);
	}
}

/* {lane: {reason: n}} without the zeros. */
static json_t *retire_drops(json_t *drops)
{
	json_t *out = json_object(), *lane, *v;
	const char *ln, *k;
	json_object_foreach(drops, ln, lane)
	{
		json_t *o = json_object();
		json_object_foreach(lane, k, v) if (json_integer_value(v)) json_object_set(o, k, v);
		json_object_set_new(out, ln, o);
	}
	return out;
}

/* The windows that reached the process (records or losses in it), and
 * their records. */
static void retire_windows(json_t *line, json_t *man)
{
	json_t *ws = json_object_get(json_object_get(man, "flight_recorder"), "windows"), *w;
	json_int_t n = 0, records = 0;
	size_t i;
	json_array_foreach(ws, i, w)
	{
		if (!json_array_size(json_object_get(w, "threads")))
			continue;
		n++;
		records += json_integer_value(json_object_get(w, "records"));
	}
	json_object_set_new(line, "windows", json_integer(n));
	json_object_set_new(line, "window_records", json_integer(records));
}

static json_t *retire_program(json_t *argv)
{
	json_t *out = json_array();
	for (size_t i = 0; i < json_array_size(argv) && i < RETIRE_ARGV_MAX; i++)
		json_array_append(out, json_array_get(argv, i));
	return out;
}

/* The retired line of man (the process's final manifest): the keys the
 * recording's totals and `ada status` read, in the manifest's shapes
 * (docs/manifest.md, "Retired processes"). */
json_t *wal_retired_line(json_t *man)
{
	static const char *const top[] = {
	    "format",        "version",     "pid",  "state",       "attached",
	    "start_time_ns", "end_time_ns", "exit", "lost_events", "arena_dir",
	    "disk_full",     "retention",   "shm",  "count_only",  NULL};
	static const char *const metrics[] = {
	    "events_written",       "events_per_sec", "batch_latency_ns_p50",
	    "batch_latency_ns_p99", "ring_waits",     "ring_waited_ns",
	    "index_bytes",          "index_events",   NULL};
	static const char *const detail[] = {"mode",
	                                     "records",
	                                     "overwritten",
	                                     "waits",
	                                     "waited_ns",
	                                     "window_lost",
	                                     "window_missed",
	                                     "pre_roll_asked_ns",
	                                     "pre_roll_achieved_ns",
	                                     NULL};
	static const char *const hook[] = {"installed", "skipped", "untraced_calls", NULL};
	static const char *const crash[] = {"abnormal", "signal", "signal_name", "time_ns", NULL};
	json_t *line = json_object();
	retire_copy(line, man, top);
	json_object_set_new(line, "retired", json_true());
	json_object_set_new(line, "program", retire_program(json_object_get(man, "program")));
	json_object_set_new(line, "drops", retire_drops(json_object_get(man, "drops")));
	json_t *m = json_object(), *d = json_object(), *h = json_object();
	retire_copy(m, json_object_get(man, "metrics"), metrics);
	json_object_set_new(line, "metrics", m);
	retire_copy(d, json_object_get(man, "detail"), detail);
	json_object_set_new(line, "detail", d);
	json_t *mh = json_object_get(man, "hook");
	retire_copy(h, mh, hook);
	json_t *tt = json_object_get(json_object_get(mh, "hook_time_us"), "total");
	if (tt)
		json_object_set_new(h, "hook_time_us", json_pack("{s:O}", "total", tt));
	json_object_set_new(line, "hook", h);
	json_t *c = json_object_get(man, "crash");
	if (json_is_object(c)) {
		json_t *co = json_object();
		retire_copy(co, c, crash);
		json_object_set_new(line, "crash", co);
	}
	json_t *q = json_object_get(man, "quarantined");
	if (json_array_size(q))
		json_object_set(line, "quarantined", q);
	json_object_set_new(
	    line, "threads_recorded",
	    json_integer((json_int_t)json_array_size(json_object_get(man, "threads"))));
	retire_windows(line, man);
	return line;
}

/* Appends line to <session>/retired.jsonl (opened once, append-only, no
 * link followed), in one write. */
static int retire_append(struct ada_recorder *r, json_t *line, size_t *len)
{
	if (r->retired.fd < 0) {
		int rc = ada_fs_create(r->session_fd, ADA_RETIRED_NAME, O_WRONLY | O_APPEND,
		                       &r->retired.fd);
		if (rc < 0)
			return rc;
	}
	char *s = json_dumps(line, JSON_COMPACT);
	if (!s)
		return -ENOMEM;
	size_t n = strlen(s);
	char *buf = realloc(s, n + 2);
	if (!buf) {
		free(s);
		return -ENOMEM;
	}
	buf[n] = '\n';
	int rc = ada_fs_write_all(r->retired.fd, buf, n + 1);
	free(buf);
	*len = n + 1;
	return rc;
}

/* Removes name under at and what it holds, never following a link, at
 * most depth levels deep. */
static void retire_rm(int at, const char *name, int depth)
{
	DIR *d = depth > 0 ? ada_fs_opendir(at, name) : NULL;
	if (d) {
		struct dirent *de;
		for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (ada_fs_entry_kind(dirfd(d), de) == ADA_FS_DIR)
				retire_rm(dirfd(d), de->d_name, depth - 1);
			else
				unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	}
	unlinkat(at, name, AT_REMOVEDIR);
}

/* pid_N/ goes: its manifest last but one (a reader that finds both the
 * directory and the line takes the directory, ada_retired_read), then
 * the directory. */
static void retire_dir(struct ada_recorder *r, struct wal_proc *p)
{
	static const char *const names[] = {"agent.json", ".retention", ".ring_slots", NULL};
	for (const char *const *n = names; *n; n++)
		unlinkat(p->dir_fd, *n, 0);
	DIR *d = ada_fs_opendir(p->dir_fd, ".");
	struct dirent *de;
	for (unsigned n = 0; d && n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++)
		if (!strncmp(de->d_name, "thread_", 7))
			retire_rm(dirfd(d), de->d_name, 1);
		else if (!strncmp(de->d_name, "module_", 7)) /* .syms, .body */
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	unlinkat(p->dir_fd, ADA_MANIFEST_NAME, 0);
	retire_rm(r->session_fd, strrchr(p->dir, '/') + 1, 2);
}

/* What the windows got of p's threads, kept per window (the live view's
 * wal_flight_window_got adds it): a window's counts stay what they were. */
static void retire_windows_fold(struct ada_recorder *r, const struct wal_proc *p)
{
	struct wal_retired *s = &r->retired;
	size_t nw = r->flight.trig ? ada_trigger_window_count(r->flight.trig) : 0;
	if (nw > s->nwin) {
		struct ada_live_window_got *a = realloc(s->win, nw * sizeof(*a));
		if (!a)
			return;
		memset(a + s->nwin, 0, (nw - s->nwin) * sizeof(*a));
		s->win = a;
		s->nwin = nw;
	}
	for (size_t j = 0; j < p->nthreads; j++) {
		const struct wal_thread *t = p->threads[j];
		for (size_t wi = t->fw_base; wi < t->nfw && wi < s->nwin; wi++) {
			const struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
			const struct ada_trigger_window *w =
			    ada_trigger_window_at(r->flight.trig, wi);
			struct ada_live_window_got *g = &s->win[wi];
			g->records += fw->records;
			g->lost += fw->lost;
			for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
				g->missed[k] += fw->missed[k];
			uint64_t got =
			    w && fw->oldest_ns ? wal_flight_pre_achieved(w, fw->oldest_ns) : 0;
			g->pre_achieved_ns = got > g->pre_achieved_ns ? got : g->pre_achieved_ns;
		}
	}
}

void wal_retired_window_got(const struct ada_recorder *r, size_t wi, struct ada_live_window_got *g)
{
	if (wi >= r->retired.nwin)
		return;
	const struct ada_live_window_got *s = &r->retired.win[wi];
	g->records += s->records;
	g->lost += s->lost;
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
		g->missed[k] += s->missed[k];
	g->pre_achieved_ns =
	    s->pre_achieved_ns > g->pre_achieved_ns ? s->pre_achieved_ns : g->pre_achieved_ns;
}

/* Its counts into the retired processes' sums (rec_summary's; the live
 * view folded it as it finished) and its windows' (the live view's). */
static void retire_fold(struct ada_recorder *r, struct wal_proc *p)
{
	r->retired.procs++;
	wal_proc_fold(&r->retired.sums, p);
	retire_windows_fold(r, p);
}

/* The manifest p's directory holds (its final one). */
static json_t *retire_manifest(const struct wal_proc *p)
{
	int fd;
	if (ada_fs_open_file(p->dir_fd, ADA_MANIFEST_NAME, O_RDONLY, &fd) < 0)
		return NULL;
	json_t *man = ada_json_loadfd(fd, RETIRE_MANIFEST_MAX);
	close(fd);
	const char *state = ada_manifest_state(man);
	if (!json_is_object(man) || !state || !strcmp(state, "recording")) {
		json_decref(man);
		return NULL;
	}
	return man;
}

/* Retires procs[i]: false when it stays (its line could not be written). */
static bool retire_one(struct ada_recorder *r, size_t i)
{
	struct wal_proc *p = r->procs[i];
	json_t *man = retire_manifest(p);
	json_t *line = man ? wal_retired_line(man) : NULL;
	size_t len = 0;
	int rc = line ? retire_append(r, line, &len) : -EINVAL;
	json_decref(line);
	json_decref(man);
	if (rc < 0) {
		r->retired.failed++;
		p->retire_failed = true; /* not tried again: it keeps its directory */
		if (!r->retired.fail_told)
			wal_note(r, NULL,
			         "%s/%s: a retired process's line cannot be written (%s): the "
			         "processes the disk budget emptied keep their directories",
			         r->session_dir, ADA_RETIRED_NAME, strerror(-rc));
		r->retired.fail_told = true;
		return false;
	}
	retire_dir(r, p);
	/* The budget's side files until the next scan: its directory's bytes
	 * as last scanned go, its line comes. */
	uint64_t gone = p->side_bytes < r->budget.side_bytes ? p->side_bytes : r->budget.side_bytes;
	r->budget.side_bytes = r->budget.side_bytes - gone + len;
	retire_fold(r, p);
	wal_live_proc_retiring(r, i);
	wal_vlog_proc_retiring(r, i);
	memmove(&r->procs[i], &r->procs[i + 1], (r->nprocs - i - 1) * sizeof(*r->procs));
	r->nprocs--;
	r->retired.finished_held--;
	wal_proc_free(p);
	return true;
}

void wal_retire_procs(struct ada_recorder *r, bool all)
{
	if (!r->o.max_disk_bytes || r->session_fd < 0 || (!all && !r->retired.pending))
		return;
	r->retired.pending = 0;
	for (size_t i = 0; i < r->nprocs;) {
		struct wal_proc *p = r->procs[i];
		if (!p->retire_failed && retire_ready(r, p) && retire_one(r, i))
			continue;
		i++;
	}
	if (r->retired.finished_held > r->retired.held_max)
		r->retired.held_max = r->retired.finished_held;
}

void wal_retire_fini(struct ada_recorder *r)
{
	if (r->retired.fd >= 0)
		close(r->retired.fd);
	r->retired.fd = -1;
	free(r->retired.win);
	r->retired.win = NULL;
	r->retired.nwin = 0;
}
