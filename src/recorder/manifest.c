/*
 * pid_N/manifest.json as the recorder writes it: early (state
 * "recording", the arena path, the clock anchor: what `ada recover` needs)
 * and at finalize (state "complete": exit status, abnormal flag, signal,
 * threads and their retention generations, drops by lane and reason,
 * warnings, metrics, ring and wal config).
 *
 * Threads: the drain thread (and `ada recover`, single-threaded).
 * The file is replaced atomically (temp file + rename), so a reader or a
 * crash never sees half a manifest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"
#include "manifest.h"
#include "ring.h"
#include "keysym.h"
#include "arena_internal.h"
#include "detail_internal.h"
#include "fork_files.h"
#include "recorder_internal.h"
#include "spares.h"

static const char *const man_lane[ADA_LANE_COUNT] = {"index", "detail"};

int wal_json_write_atomic(int dirfd, json_t *root)
{
	return dirfd < 0 ? -ENOENT : ada_manifest_writeat(dirfd, root);
}

uint64_t wal_proc_drops(const struct wal_proc *p)
{
	uint64_t n = 0;
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			n += p->drops[l][k];
	return n;
}

static json_t *man_drops(struct ada_recorder *r, struct wal_proc *p)
{
	wal_drops_read(r, p);
	wal_drops_fold(r, p);
	json_t *o = json_object();
	for (int l = 0; l < ADA_LANE_COUNT; l++) {
		json_t *lane = json_object();
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			if (k != ADA_DROP_WINDOW_LOST) /* a shortfall: detail.window_lost */
				json_object_set_new(lane, ada_drop_reason_name((unsigned)k),
				                    json_integer((json_int_t)p->drops[l][k]));
		json_object_set_new(o, man_lane[l], lane);
	}
	return o;
}

static json_t *man_clock(const struct ada_recorder *r)
{
	json_t *c = json_object();
	json_object_set_new(c, "type", json_string("boottime"));
	json_object_set_new(c, "clock_type", json_integer(ATF_CLOCK_BOOTTIME));
	json_object_set_new(c, "domain", json_string("CLOCK_BOOTTIME"));
	json_object_set_new(c, "source", json_string(r->use_tsc ? "tsc" : "clock_gettime"));
	json_object_set_new(c, "wall_anchor",
	                    json_pack("{s:I, s:I, s:I}", "boottime_ns",
	                              (json_int_t)r->wall.boottime_ns, "realtime_ns",
	                              (json_int_t)r->wall.realtime_ns, "uncertainty_ns",
	                              (json_int_t)r->wall.uncertainty_ns));
	if (r->use_tsc && r->clk.n) {
		const struct ada_tsc_map *m = &r->clk.maps[r->clk.n - 1];
		json_t *a = json_object();
		json_object_set_new(a, "tsc", json_integer((json_int_t)m->tsc0));
		json_object_set_new(a, "ns", json_integer((json_int_t)m->ns0));
		json_object_set_new(a, "mult", json_integer((json_int_t)m->mult));
		json_object_set_new(a, "shift", json_integer(m->shift));
		json_object_set_new(c, "anchor", a);
		/* ns per tick = mult / 2^shift */
		double hz = 1e9 * (double)(1ull << m->shift) / (double)m->mult;
		json_object_set_new(c, "tsc_hz", json_integer((json_int_t)hz));
		json_object_set_new(c, "anchors", json_integer(r->clk.n));
		static const char *const calib[] = {"measured", "kernel", "cached", "target"};
		json_object_set_new(c, "calibration", json_string(calib[r->tsc_calib]));
	}
	return c;
}

/* One index file of a thread's "files", as its summary s says: a kept
 * generation's (generation: its number) or the current file's once final
 * (generation null, with its CRC-32). Consumes generation. */
static json_t *man_file(uint32_t seq, const char *name, json_t *generation, uint64_t first_seq,
                        const struct ada_wal_file_summary *s, bool crc)
{
	json_t *o = json_object();
	char path[96];
	snprintf(path, sizeof(path), "thread_%u/%s", seq, name);
	json_object_set_new(o, "file", json_string(name));
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "generation", generation);
	json_object_set_new(o, "first_seq", json_integer((json_int_t)first_seq));
	json_object_set_new(o, "events", json_integer((json_int_t)s->events));
	json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
	json_object_set_new(o, "time_start_ns", json_integer((json_int_t)s->time_start_ns));
	json_object_set_new(o, "time_end_ns", json_integer((json_int_t)s->time_end_ns));
	if (crc)
		json_object_set_new(o, "crc32", json_integer(s->crc));
	json_object_set_new(o, "encoding", json_string(ada_index_format_name(s->encoding)));
	return o;
}

static json_t *man_gen(const struct wal_gen *g)
{
	char name[64];
	snprintf(name, sizeof(name), "index.g%u.atf", g->g);
	struct ada_wal_file_summary s = {.events = g->events,
	                                 .bytes = g->bytes,
	                                 .time_start_ns = g->t0,
	                                 .time_end_ns = g->t1,
	                                 .encoding = g->encoding};
	return man_file(g->t->seq, name, json_integer(g->g), g->first_seq, &s, false);
}

void wal_thread_index_bytes(const struct wal_thread *t, uint64_t *bytes, uint64_t *events)
{
	*bytes = t->retired_bytes;
	*events = t->retired_events;
	for (size_t g = 0; g < t->ngens; g++) {
		*bytes += t->gens[g].bytes;
		*events += t->gens[g].events;
	}
	if (t->final_retired)
		return; /* in retired_bytes already */
	*bytes += t->f ? ada_wal_file_bytes(t->f) : t->last.bytes;
	*events += t->f ? ada_wal_file_events(t->f) : t->last.events;
}

void wal_proc_index_bytes(const struct wal_proc *p, uint64_t *bytes, uint64_t *events)
{
	*bytes = p->done_sums.index_bytes;
	*events = p->done_sums.index_events;
	for (size_t i = 0; i < p->nopen; i++) {
		uint64_t b, e;
		if (p->open[i]->summed)
			continue; /* in done_sums */
		wal_thread_index_bytes(p->open[i], &b, &e);
		*bytes += b;
		*events += e;
	}
}

/* "files": the kept generations, oldest first, then the current file
 * (generation null) once it is final. */
static bool man_exists(int dirfd, const char *name);

static json_t *man_thread(const struct wal_thread *t)
{
	json_t *o = json_object();
	json_object_set_new(o, "thread", json_integer(t->seq));
	json_object_set_new(o, "tid", json_integer(t->tid));
	json_t *files = json_array();
	char name[64];
	/* Relative to pid_N (the drain keeps no thread_K descriptor open). */
	int dfd = t->p->dir_fd;
	for (size_t i = 0; i < t->ngens; i++) {
		snprintf(name, sizeof(name), "thread_%u/index.g%u.atf", t->seq, t->gens[i].g);
		if (man_exists(dfd, name)) /* only files that exist */
			json_array_append_new(files, man_gen(&t->gens[i]));
	}
	snprintf(name, sizeof(name), "thread_%u/index.atf", t->seq);
	if (t->done && !t->f && man_exists(dfd, name))
		json_array_append_new(
		    files, man_file(t->seq, "index.atf", json_null(), t->base_seq, &t->last, true));
	json_object_set_new(o, "files", files);
	json_object_set_new(o, "retired_events", json_integer((json_int_t)t->retired_events));
	json_object_set_new(o, "retired_bytes", json_integer((json_int_t)t->retired_bytes));
	json_object_set_new(o, "retired_until_ns", json_integer((json_int_t)t->retired_until_ns));
	json_object_set_new(o, "retired_whole", json_boolean(t->final_retired));
	json_object_set_new(o, "lost_events", json_integer((json_int_t)t->lost));
	json_object_set_new(o, "segments", json_integer((json_int_t)t->segments));
	json_object_set_new(o, "flushes", json_integer((json_int_t)t->flushes));
	json_object_set_new(o, "syncs", json_integer((json_int_t)t->syncs));
	json_object_set_new(o, "ring_waits", json_integer((json_int_t)t->ring_waits));
	json_object_set_new(o, "ring_waited_ns", json_integer((json_int_t)t->ring_wait_ns));
	json_t *d = wal_detail_thread_json(t);
	if (d)
		json_object_set_new(o, "detail", d);
	return o;
}

/* What the detail lane kept and lost (loss.c, docs/manifest.md): records
 * persisted; overwritten, records the rings overwrote that no window
 * wanted (--detail triggered: information, not drops; always: the
 * detail_overwritten drops); window_lost, records windows wanted that
 * the rings had overwritten (the windows' shortfall, not drops), and the
 * shortest pre-roll a window achieved. Called after wal_drops_fold(). */
static void man_detail_counts(json_t *o, const struct wal_proc *p)
{
	json_object_set_new(o, "records", json_integer((json_int_t)wal_detail_proc_records(p)));
	json_object_set_new(o, "overwritten", json_integer((json_int_t)p->detail_overwritten));
	uint64_t waits, ns;
	wal_detail_proc_waits(p, &waits, &ns);
	json_object_set_new(o, "waits", json_integer((json_int_t)waits));
	json_object_set_new(o, "waited_ns", json_integer((json_int_t)ns));
	json_object_set_new(
	    o, "window_lost",
	    json_integer((json_int_t)p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST]));
	json_object_set_new(o, "window_missed", wal_window_missed_json(p->window_missed));
	if (p->pre_asked_ns) {
		json_object_set_new(o, "pre_roll_asked_ns",
		                    json_integer((json_int_t)p->pre_asked_ns));
		json_object_set_new(o, "pre_roll_achieved_ns",
		                    json_integer((json_int_t)p->pre_got_ns));
	}
}

/* The flight recorder's detail lane as configured (docs/manifest.md). */
static json_t *man_detail(const struct ada_recorder *r, const struct wal_proc *p)
{
	static const char *const mode[] = {"triggered", "always", "never"};
	json_t *o = json_object();
	uint32_t m = r->o.detail_mode <= ADA_DETAIL_NEVER ? r->o.detail_mode : 0;
	const struct ada_arena_config *c = p->arena ? ada_arena_config_of(p->arena) : NULL;
	json_object_set_new(o, "mode", json_string(mode[m]));
	json_object_set_new(o, "stack_bytes",
	                    json_integer(m == ADA_DETAIL_NEVER ? 0 : r->o.stack_bytes));
	if (c)
		json_object_set_new(o, "ring_bytes", json_integer((json_int_t)c->detail_bytes));
	if (c && m == ADA_DETAIL_ALWAYS) /* a full ring: wait for the drain, or overwrite */
		json_object_set_new(o, "overflow",
		                    json_string(c->detail_wait ? "wait" : "overwrite"));
	json_t *set = json_object();
	if (m == ADA_DETAIL_NEVER) {
		json_object_set_new(set, "kind", json_string("none"));
	} else if (r->o.detail_symbols && *r->o.detail_symbols) {
		json_object_set_new(set, "kind", json_string("symbols"));
		json_object_set_new(set, "globs", json_string(r->o.detail_symbols));
	} else if (wal_keysym_spec(r) && !ada_keysym_spec_is_all(wal_keysym_spec(r))) {
		/* --key-symbols / --blob, or `ada keysym` since: detail.keysym */
		json_object_set_new(set, "kind", json_string("key_symbols"));
	} else {
		json_object_set_new(set, "kind", json_string("all"));
	}
	json_object_set_new(o, "set", set);
	man_detail_counts(o, p);
	if (p->detail_ring_suggest) /* what the windows lost says the ring should have been */
		json_object_set_new(o, "ring_suggest_bytes",
		                    json_integer((json_int_t)p->detail_ring_suggest));
	json_t *ks = wal_keysym_json(r, p);
	if (ks)
		json_object_set_new(o, "keysym", ks);
	return o;
}

/* ada attach detached from a process that runs on (its pidfd has not
 * become readable): it has no exit yet. */
static bool man_detached(const struct ada_recorder *r, const struct wal_proc *p)
{
	struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
	return r->o.attached && !p->reaped && p->pidfd >= 0 && poll(&pfd, 1, 0) == 0;
}

/* Exit status, signal and the abnormal flag, from waitpid when we reaped
 * the process, else from its zombie or its reaper's table of reaped
 * children (drain_end.c, wait_notes.c), else from what its own agent
 * wrote into the arena. */
static void man_exit(json_t *root, const struct ada_recorder *r, struct wal_proc *p)
{
	int v = 0; /* the arena first: a fault there leaves nothing built (WAL_GUARDED) */
	uint32_t ps = p->arena ? ada_arena_process_state(p->arena, &v) : ADA_PROC_RUNNING;
	json_t *e = json_object();
	bool abnormal = false, detached = man_detached(r, p);
	int sig = 0, status = -1;
	bool known = p->reaped || p->other_known;
	int ws = p->reaped ? p->wstatus : p->other_status;
	if (detached) {
		/* still running: no exit to tell */
	} else if (known && WIFSIGNALED(ws)) {
		sig = WTERMSIG(ws);
		abnormal = true;
	} else if (known) {
		status = WEXITSTATUS(ws);
	} else if (ps == ADA_PROC_CRASHED) {
		sig = v;
		abnormal = true;
	} else if (ps == ADA_PROC_EXITED) {
		status = v;
	} else {
		abnormal = true; /* vanished without a word: status unknown */
	}
	p->exit_unknown = !detached && !known && ps == ADA_PROC_RUNNING;
	json_object_set_new(e, "status", status >= 0 ? json_integer(status) : json_null());
	json_object_set_new(e, "signal", sig ? json_integer(sig) : json_null());
	if (sig)
		json_object_set_new(e, "signal_name",
		                    json_string(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?"));
	json_object_set_new(e, "abnormal", json_boolean(abnormal));
	if (r->o.attached)
		json_object_set_new(e, "detached", json_boolean(detached));
	json_object_set_new(root, "exit", e);
	json_object_set_new(root, "abnormal", json_boolean(abnormal));
}

json_t *ada_drain_json(const struct ada_live_drain *d)
{
	char why[160];
	return json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s?}", "doorbell", d->doorbell,
	                 "passes", (json_int_t)d->passes, "sleeps", (json_int_t)d->sleeps, "rung",
	                 (json_int_t)d->rung, "empty_rings", (json_int_t)d->empty_rings, "averted",
	                 (json_int_t)d->averted, "looks", (json_int_t)d->looks, "looks_found",
	                 (json_int_t)d->looks_found, "polling",
	                 ada_drain_polling_why(d->polling_err, why, sizeof(why)));
}

/* The drain's passes and its sleeps on the doorbell so far (drain_sleep.c). */
static json_t *man_drain(const struct ada_recorder *r)
{
	struct ada_live_drain d;
	drain_bell_counts(r, &d);
	return ada_drain_json(&d);
}

/* The spare thread directories (spares.c): how many threads got one, and
 * why the others did not. */
static json_t *man_spares(const struct ada_recorder *r)
{
	struct wal_spares_counts c;
	wal_spares_counts(r->spares, &c);
	return json_pack(
	    "{s:b, s:I, s:I, s:I, s:I, s:I, s:s?, s:I, s:s?}", "enabled", r->spares != NULL, "made",
	    (json_int_t)c.made, "used", (json_int_t)c.used, "none_ready", (json_int_t)c.empty,
	    "name_taken", (json_int_t)c.taken_names, "move_failed", (json_int_t)c.move_failed,
	    "move_error", c.move_err ? strerror(-c.move_err) : NULL, "make_failed",
	    (json_int_t)c.make_failed, "make_error", c.make_err ? strerror(-c.make_err) : NULL);
}

static json_t *man_wal(const struct ada_recorder *r)
{
	json_t *w = json_object();
	static const char *const modes[] = {"off", "interval", "bytes", "rotate"};
	json_object_set_new(w, "segment_bytes", json_integer((json_int_t)r->o.segment_bytes));
	json_object_set_new(w, "flush", json_string(modes[r->o.flush.mode & 3]));
	json_object_set_new(w, "flush_value", json_integer((json_int_t)r->o.flush.value));
	json_object_set_new(w, "safe", json_boolean(r->o.flush.safe));
	uint32_t refused = 0;
	bool uncached = r->io && ada_wal_io_uncached(r->io, &refused);
	json_object_set_new(w, "uncached_writes", json_boolean(uncached));
	json_object_set_new(w, "uncached_refused", json_integer(refused));
	uint32_t dfiles = 0, dfall = 0;
	const char *dwhy = NULL;
	bool direct = r->io && ada_wal_io_direct(r->io, &dfiles, &dfall, &dwhy);
	json_object_set_new(w, "direct", json_boolean(direct));
	json_object_set_new(w, "direct_files", json_integer(dfiles));
	json_object_set_new(w, "direct_fallback", json_integer(dfall));
	json_object_set_new(w, "direct_fallback_reason", dwhy ? json_string(dwhy) : json_null());
	json_object_set_new(w, "inline_files",
	                    json_integer(r->io ? (json_int_t)ada_wal_io_inline_files(r->io) : 0));
	json_object_set_new(w, "staging_buffer_bytes",
	                    json_integer(r->io ? (json_int_t)ada_wal_io_buffer_bytes(r->io) : 0));
	json_object_set_new(w, "links_failed",
	                    json_integer(r->io ? (json_int_t)ada_wal_io_links_failed(r->io) : 0));
	json_object_set_new(w, "max_disk_bytes", json_integer((json_int_t)r->o.max_disk_bytes));
	json_object_set_new(w, "crc32", json_string(ada_wal_crc32_impl()));
	json_object_set_new(w, "index_format",
	                    json_string(ada_index_format_name(r->o.index_format)));
	json_object_set_new(w, "drain_cpu",
	                    r->o.drain_cpu >= 0 ? json_integer(r->o.drain_cpu) : json_null());
	json_object_set_new(w, "thread_spares", man_spares(r));
	return w;
}

/* The disk budget in effect and what it deleted from this process's
 * threads (docs/format.md, "Bounded disk"). */
static json_t *man_retention(const struct ada_recorder *r, const struct wal_proc *p)
{
	uint64_t gens = 0, events = 0, bytes = 0, whole = 0, until = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct wal_thread *t = p->threads[i];
		gens += t->retired_gens;
		events += t->retired_events;
		bytes += t->retired_bytes;
		whole += t->final_retired;
		until = t->retired_until_ns > until ? t->retired_until_ns : until;
	}
	json_t *o = json_object();
	const char *src = !r->o.max_disk_bytes   ? "unbounded"
	                  : r->budget.is_default ? "default"
	                                         : "--max-disk-mb";
	json_object_set_new(o, "budget", json_string(src));
	json_object_set_new(o, "budget_bytes", json_integer((json_int_t)r->o.max_disk_bytes));
	json_object_set_new(o, "retired_generations", json_integer((json_int_t)gens));
	json_object_set_new(o, "retired_events", json_integer((json_int_t)events));
	json_object_set_new(o, "retired_bytes", json_integer((json_int_t)bytes));
	json_object_set_new(o, "retired_threads", json_integer((json_int_t)whole));
	json_object_set_new(o, "retired_until_ns", json_integer((json_int_t)until));
	json_object_set_new(o, "symbols_deleted", json_boolean(p->syms_retired));
	return o;
}

/* What the ceiling cost: processes given smaller detail rings, and
 * processes not recorded, each with its sentence (null when none). */
static void man_shm_short(json_t *o, const struct ada_shm_budget_view *v)
{
	char why[512];
	json_object_set_new(o, "reduced_processes", json_integer((json_int_t)v->reduced_procs));
	json_object_set_new(o, "reduced_detail_bytes_min",
	                    json_integer((json_int_t)v->reduced_detail_min));
	json_object_set_new(o, "reduced_why",
	                    ada_shm_budget_reduced_why(v, why, sizeof(why)) ? json_string(why)
	                                                                    : json_null());
	json_object_set_new(o, "untraced_why",
	                    ada_shm_budget_untraced_why(v, why, sizeof(why)) ? json_string(why)
	                                                                     : json_null());
	json_object_set_new(o, "arena_failed_processes", json_integer((json_int_t)v->failed_procs));
	json_object_set_new(o, "arena_failed_why",
	                    ada_shm_budget_failed_why(v, why, sizeof(why)) ? json_string(why)
	                                                                   : json_null());
}

/* The recording's shared memory at the time of writing (shm.c). */
static json_t *man_shm(const struct ada_recorder *r)
{
	struct ada_shm_budget_view v;
	wal_shm_read(r, &v);
	json_t *o = json_object();
	json_object_set_new(o, "ceiling_bytes", json_integer((json_int_t)v.ceiling));
	json_object_set_new(o, "in_use_bytes", json_integer((json_int_t)v.reserved));
	json_object_set_new(o, "peak_bytes", json_integer((json_int_t)v.peak));
	json_object_set_new(o, "arenas", json_integer((json_int_t)v.arenas));
	json_object_set_new(o, "untraced_processes", json_integer((json_int_t)v.refused_procs));
	json_object_set_new(o, "delayed_processes", json_integer((json_int_t)v.waited_procs));
	json_object_set_new(o, "pid_reused_arenas", json_integer((json_int_t)r->pid_reused));
	json_object_set_new(o, "pooled_arenas", json_integer((json_int_t)r->shm.pooled));
	json_object_set_new(o, "pool_hits", json_integer((json_int_t)r->shm.pool_hits));
	json_object_set_new(o, "pool_misses", json_integer((json_int_t)r->shm.pool_misses));
	json_object_set_new(o, "pool_made", json_integer((json_int_t)r->shm.pool_made));
	json_object_set_new(o, "pool_make_failed",
	                    json_integer((json_int_t)r->shm.pool_make_failed));
	man_shm_short(o, &v);
	return o;
}

static json_t *man_metrics(const struct ada_recorder *r, const struct wal_proc *p)
{
	json_t *m = json_object();
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	/* Written = taken from the rings and in a file (not lost to a full
	 * disk); the budget may have deleted some since (retention). */
	json_object_set_new(m, "events_written",
	                    json_integer((json_int_t)(p->events - wal_proc_lost(p))));
	json_object_set_new(m, "batches", json_integer((json_int_t)h->count));
	json_object_set_new(m, "batch_latency_ns_p50",
	                    json_integer((json_int_t)ada_lat_hist_quantile(h, 0.5)));
	json_object_set_new(m, "batch_latency_ns_p99",
	                    json_integer((json_int_t)ada_lat_hist_quantile(h, 0.99)));
	double secs = (double)(ada_boottime_ns() - r->start_ns) / 1e9;
	json_object_set_new(m, "seconds", json_real(secs));
	json_object_set_new(m, "events_per_sec",
	                    json_real(secs > 0 ? (double)p->events / secs : 0));
	/* What the drain running behind cost the program: its threads'
	 * waits for ring space (--overflow wait), and how long they took. */
	uint64_t waits, ns;
	wal_proc_ring_waits(p, &waits, &ns);
	json_object_set_new(m, "ring_waits", json_integer((json_int_t)waits));
	json_object_set_new(m, "ring_waited_ns", json_integer((json_int_t)ns));
	/* What the index encoding costs on disk: every index file's bytes
	 * (those the budget deleted since included) over their events. */
	uint64_t ib, ie;
	wal_proc_index_bytes(p, &ib, &ie);
	json_object_set_new(m, "index_bytes", json_integer((json_int_t)ib));
	json_object_set_new(m, "index_events", json_integer((json_int_t)ie));
	json_object_set_new(m, "index_bytes_per_event",
	                    json_real(ie ? (double)ib / (double)ie : 0));
	return m;
}

uint64_t wal_proc_lost(const struct wal_proc *p)
{
	uint64_t lost = p->done_sums.lost;
	for (size_t i = 0; i < p->nopen; i++)
		lost += p->open[i]->summed ? 0 : p->open[i]->lost;
	return lost;
}

static bool man_exists(int dirfd, const char *name)
{
	struct stat st;
	return dirfd >= 0 && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Only the thread directories that exist: a thread whose directory could
 * not be made (disk full) has its events in lost_events, and a warning
 * says how many such threads there are. */
static json_t *man_threads(const struct wal_proc *p, json_t *warn)
{
	json_t *a = json_array();
	uint32_t missing = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		char name[32];
		snprintf(name, sizeof(name), "thread_%u", p->threads[i]->seq);
		if (p->threads[i]->refused) /* never got a thread_K/: thread_limit drops */
			continue;
		/* A thread the budget deleted whole stays listed: its
		 * retired_* say what went (docs/format.md, "Bounded disk"). */
		if (p->threads[i]->final_retired || man_exists(p->dir_fd, name))
			json_array_append_new(a, man_thread(p->threads[i]));
		else
			missing++;
	}
	if (missing) {
		char msg[160];
		snprintf(msg, sizeof(msg),
		         "%u thread%s left no files (disk full, or the error told above): their "
		         "events are in lost_events",
		         missing, missing == 1 ? "" : "s");
		json_array_append_new(warn, json_string(msg));
	}
	return a;
}

/* From the arena while there is one, else as the last write read it. */
static json_t *man_ring(struct wal_proc *p)
{
	if (p->arena) {
		p->ring_cfg = *ada_arena_config_of(p->arena);
		p->ring_flags = ada_arena_flags(p->arena); /* before o: see wal_manifest_write */
		p->ring_known = true;
	}
	if (!p->ring_known)
		return json_null();
	const struct ada_arena_config *c = &p->ring_cfg;
	uint32_t fl = p->ring_flags;
	json_t *o = json_object();
	json_object_set_new(o, "max_threads", json_integer(c->max_threads));
	json_object_set_new(o, "index_events", json_integer((json_int_t)c->index_events));
	json_object_set_new(o, "index_bytes",
	                    json_integer((json_int_t)(c->index_events * ATF_INDEX_EVENT_SIZE)));
	json_object_set_new(o, "detail_bytes", json_integer((json_int_t)c->detail_bytes));
	/* Spill slots: the threads past max_threads, with small rings. */
	json_object_set_new(o, "thread_limit",
	                    json_integer((json_int_t)c->max_threads + c->spill_threads));
	json_object_set_new(o, "spill_index_events", json_integer((json_int_t)c->spill_events));
	json_object_set_new(
	    o, "spill_detail_bytes",
	    json_integer((json_int_t)(c->spill_threads ? ada_spill_detail_bytes(c) : 0)));
	json_object_set_new(o, "overflow",
	                    json_string(c->overflow == ADA_OVERFLOW_DROP ? "drop" : "wait"));
	json_object_set_new(o, "timestamps",
	                    json_string(c->timestamp_source == ADA_TS_CLOCK ? "clock" : "tsc"));
	json_object_set_new(o, "high_watermark_pct", json_integer(c->high_watermark_pct));
	json_object_set_new(o, "mlocked", json_boolean(!(fl & ADA_ARENA_F_MLOCK_FAILED)));
	json_object_set_new(o, "huge_pages",
	                    json_boolean(fl & (ADA_ARENA_F_THP | ADA_ARENA_F_HUGETLB)));
	json_object_set_new(o, "recycled", json_boolean(fl & ADA_ARENA_F_RECYCLED));
	/* smaller detail rings than the recording's: shm.reduced_why says why */
	json_object_set_new(o, "detail_reduced", json_boolean(fl & ADA_ARENA_F_DETAIL_REDUCED));
	return o;
}

/* The agent's pid_N/agent.json (hook counts and timings, modules) goes
 * into the manifest as "hook" and "modules" (docs/manifest.md). */
static json_t *man_module(json_t *m)
{
	json_t *o = json_object();
	json_int_t id = json_integer_value(json_object_get(m, "module_id"));
	char syms[64];
	snprintf(syms, sizeof(syms), "module_%lld.syms", (long long)id);
	json_object_set_new(o, "id", json_integer(id));
	json_object_set(o, "path", json_object_get(m, "path"));
	json_object_set(o, "build_id", json_object_get(m, "build_id"));
	json_object_set(o, "table_xxh64", json_object_get(m, "table_xxh64"));
	json_object_set(o, "load_base", json_object_get(m, "load_base"));
	json_object_set_new(o, "symbols", json_string(syms));
	json_object_set(o, "functions", json_object_get(m, "functions"));
	json_object_set(o, "hooked", json_object_get(m, "installed"));
	json_object_set(o, "skipped", json_object_get(m, "skipped"));
	json_object_set(o, "unloaded", json_object_get(m, "unloaded"));
	return o;
}

/* agent.json's "modules" as the manifest's (a new array). */
static json_t *man_modules(json_t *mods)
{
	json_t *out = json_array(), *m;
	size_t i;
	json_array_foreach(mods, i, m) json_array_append_new(out, man_module(m));
	return out;
}

/* pid_N/agent.json parsed (through cache when given); *out as
 * wal_agent_parse gives it. */
static json_t *man_agent_load(int pid_dir_fd, struct wal_agent_cache *cache, json_t **out)
{
	/* Written by the agent into our pid_N: read without following a link. */
	int fd = -1;
	json_t *a = NULL;
	*out = NULL;
	if (pid_dir_fd < 0 || ada_fs_open_file(pid_dir_fd, "agent.json", O_RDONLY, &fd) != 0)
		return NULL;
	size_t len = 0;
	char *buf = ada_json_readfd(fd, ADA_AGENT_JSON_MAX, &len);
	close(fd);
	if (buf)
		a = wal_agent_parse(cache, buf, len, man_modules, out);
	free(buf);
	return a;
}

/* sums (NULL: none) gets what the summary takes from agent.json; cache
 * (NULL: none) spares the parse of a list the last file had too. fx: a
 * noted fork child's counts at its exit (fork_files.c), folded into the
 * file made its own; own: the counts a process left in its arena for its
 * own file (ada_arena_exit_note), folded in and the file written back. */
void wal_manifest_agent(json_t *root, int pid_dir_fd, struct ada_agent_sums *sums,
                        struct wal_agent_cache *cache, const struct ada_fork_exit *fx,
                        const struct ada_fork_exit *own)
{
	json_t *out = NULL, *a = man_agent_load(pid_dir_fd, cache, &out);
	if (!json_is_object(a)) {
		json_decref(a);
		json_decref(out);
		return;
	}
	/* A forked child that ended without its own: its parent's, made its
	 * own (agent_inherit.c) and written back so every reader sees it. */
	json_t *pid = json_object_get(root, "pid");
	bool inherited =
	    json_is_integer(pid) && wal_agent_inherit(a, (pid_t)json_integer_value(pid));
	/* Counts at the exit: a noted fork child's, into the file made its
	 * own (fork_files.c); a process's own file's, which it left in its
	 * arena instead of writing it again (src/hook/agent.c
	 * agent_exit_note). */
	bool own_file =
	    !inherited && json_is_integer(pid) && json_equal(json_object_get(a, "pid"), pid);
	const struct ada_fork_exit *x = inherited ? fx : own_file ? own : NULL;
	if (x)
		wal_fork_exit_fold(a, x);
	/* Written back so every reader sees it (a failed write leaves an
	 * inherited file saying whose it is). */
	if (inherited || x)
		(void)wal_agent_inherit_write(pid_dir_fd, a);
	/* A budget run whose counts cost more than it: what to exclude. */
	wal_exclude_hint(json_object_get(a, "count_only"));
	if (sums)
		wal_agent_sums_fold(sums, a);
	if (!out)
		out = man_modules(json_object_get(a, "modules"));
	json_object_set_new(root, "modules", out);
	json_object_del(a, "modules");
	/* The image that ran last (after an exec, not what ada started). */
	json_t *argv = json_object_get(a, "argv");
	if (json_is_array(argv) && json_array_size(argv) > 0)
		json_object_set(root, "program", argv);
	json_object_del(a, "argv");
	/* Count-only functions' calls: a top-level section, as the events'. */
	json_t *co = json_object_get(a, "count_only");
	if (json_is_object(co)) {
		json_object_set(root, "count_only", co);
		json_object_del(a, "count_only");
	}
	json_object_set_new(root, "hook", a);
}

/* A finished process's manifest written again (the budget deleted its
 * files, a warning came later): what its final manifest took from
 * agent.json is taken from that manifest. A later process given the pid
 * writes its own agent.json into pid_N/ (its arena refused, it is not
 * recorded): that one must not become this process's hook counts. */
static void man_agent_kept(json_t *root, int pid_dir_fd)
{
	static const char *const keys[] = {"hook", "modules", "program", "count_only", NULL};
	int fd = -1;
	if (pid_dir_fd < 0 || ada_fs_open_file(pid_dir_fd, ADA_MANIFEST_NAME, O_RDONLY, &fd) != 0)
		return;
	json_t *old = ada_json_loadfd(fd, ADA_AGENT_JSON_MAX);
	close(fd);
	for (const char *const *k = keys; *k; k++) {
		json_t *v = json_object_get(old, *k);
		if (v)
			json_object_set(root, *k, v);
	}
	json_decref(old);
}

/* The session's counts of statuses from reapers' tables and of those
 * unknown; p is counted once, by its first final manifest (man_exit said
 * whether its status is unknown), which then shows it. */
static void man_wait_statuses(json_t *root, struct ada_recorder *r, struct wal_proc *p,
                              const char *state)
{
	if (p->exit_unknown && !p->exit_unknown_counted && strcmp(state, "recording") &&
	    (p->gone || p->vanished)) { /* not one left running */
		p->exit_unknown_counted = true;
		r->wait_notes.c.unknown++;
	}
	json_object_set_new(root, "wait_statuses", wal_wait_notes_manifest_json(r));
}

/* The recording's fork notes so far. A final manifest makes its own
 * process's files from its note first (man_final would, after this
 * count): the last manifest written counts every note made. */
static void man_fork_notes(json_t *root, struct ada_recorder *r, struct wal_proc *p,
                           const char *state)
{
	if (strcmp(state, "recording"))
		wal_fork_files_take(r, p);
	json_object_set_new(root, "fork_notes", wal_fork_counts_json(r));
}

/* A final manifest's exit, and what the agent wrote: agent.json the first
 * time, the first final manifest's copy of it after. */
static void man_final(json_t *root, struct ada_recorder *r, struct wal_proc *p)
{
	man_exit(root, r, p);
	if (p->agent_final) {
		man_agent_kept(root, p->dir_fd);
		return;
	}
	/* A forked child's note not read yet, and its exit counts: from the
	 * arena while it is there (read before anything here allocates). */
	struct ada_fork_exit fx, own;
	bool have_fx = p->arena && ada_arena_fork_exit_read(p->arena, &fx);
	bool have_own = p->arena && ada_arena_exit_note_read(p->arena, &own);
	wal_fork_files_take(r, p);
	/* Summed once, though a manifest that failed is built again. */
	wal_manifest_agent(root, p->dir_fd, p->agent_summed ? NULL : &r->agent_sums,
	                   &r->agent_cache, have_fx ? &fx : NULL, have_own ? &own : NULL);
	p->agent_summed = true;
}

/* A manifest that could not be written: told once (stderr, warnings);
 * written again at the end (drain.c drain_restate), and the summary
 * counts those that still are not (ada_record_summary.manifests_failed). */
static void man_failed(struct ada_recorder *r, struct wal_proc *p, int rc)
{
	if (r->manifest_fail_told)
		return;
	r->manifest_fail_told = true;
	wal_note(r, p, "%s/manifest.json: cannot be written (%s)%s; tried again at the end", p->dir,
	         strerror(-rc),
	         rc == -EMFILE || rc == -ENFILE
	             ? ": the recorder has as many files open as it may (fd_limit; raise ulimit -n)"
	             : "");
}

/* ada attach: "attached": true and "attach": {time, pauses}. */
static void man_attach(json_t *root, struct ada_recorder *r)
{
	json_object_set_new(root, "attached", json_boolean(r->o.attached));
	/* Pairs with the release in ada_recorder_set_attach(). */
	if (!r->o.attached || !atomic_load_explicit(&r->attach.set, memory_order_acquire))
		return;
	uint64_t t = atomic_load_explicit(&r->attach.time_ns, memory_order_relaxed);
	uint64_t pa = atomic_load_explicit(&r->attach.pause_ns, memory_order_relaxed);
	uint64_t pd = atomic_load_explicit(&r->attach.detach_pause_ns, memory_order_relaxed);
	json_object_set_new(root, "attach",
	                    json_pack("{s:I, s:I, s:o}", "time_realtime_ns", (json_int_t)t,
	                              "pause_ns", (json_int_t)pa, "detach_pause_ns",
	                              pd ? json_integer((json_int_t)pd) : json_null()));
}

/* The program's argv, as `ada record` was given it. */
static json_t *man_program(const struct ada_recorder *r)
{
	json_t *argv = json_array();
	for (size_t i = 0; r->o.program_argv && r->o.program_argv[i]; i++)
		json_array_append_new(argv, json_string(r->o.program_argv[i]));
	return argv;
}

/* Where the process's arena is and which recorder wrote this (recover and
 * the orphan scan read these), and what it ran. */
static void man_recorder(json_t *root, const struct ada_recorder *r, const struct wal_proc *p)
{
	json_object_set_new(root, "arena", json_string(p->arena_path));
	json_object_set_new(root, "arena_dir", json_string(r->arena_dir));
	json_object_set_new(root, "recorder_pid", json_integer(getpid()));
	json_object_set_new(root, "recorder_start_ticks",
	                    json_integer((json_int_t)r->self_start_ticks));
	json_object_set_new(root, "program", man_program(r));
}

void wal_manifest_abandon(struct ada_recorder *r)
{
	json_decref(r->man_building);
	r->man_building = NULL;
}

/* Writes root; test hook (bounded_manifest_lost):
 * ADA_TEST_FINAL_MANIFEST_FAIL=1 makes every final manifest's write fail
 * with -ENOSPC, as a full disk past the manifests' reserve does. */
static int man_commit(struct ada_recorder *r, const struct wal_proc *p, json_t *root,
                      const char *state)
{
	const char *v = getenv("ADA_TEST_FINAL_MANIFEST_FAIL");
	if (!v || strcmp(v, "1") || !strcmp(state, "recording"))
		return wal_manifest_commit(r, p->dir_fd, root);
	if (!r->manifest_error)
		r->manifest_error = -ENOSPC;
	return -ENOSPC;
}

/* A fault in the arena (the target truncated it: WAL_GUARDED's jump)
 * can come at any read of it below; the manifest itself is freed then
 * (r->man_building, wal_manifest_abandon), so every part of it reads
 * what it needs from the arena before it allocates, and is linked into
 * the manifest before the next read: nothing is held only in a local
 * across a read (test_wal_guard, under ASan). */
int wal_manifest_write(struct ada_recorder *r, struct wal_proc *p, const char *state)
{
	json_t *root = ada_manifest_new(p->pid);
	if (!root)
		return -ENOMEM;
	r->man_building = root;
	json_object_set_new(root, "state", json_string(state));
	json_object_set_new(root, "start_time_ns", json_integer((json_int_t)r->start_ns));
	if (strcmp(state, "recording"))
		json_object_set_new(root, "end_time_ns",
		                    json_integer((json_int_t)ada_boottime_ns()));
	json_object_set_new(root, "ring", man_ring(p));
	wal_drops_read(r, p); /* man_detail's counts as man_drops' */
	wal_drops_fold(r, p);
	/* From this write's counts while the arena is there to size from;
	 * kept after (the summary's, the arena gone). Not the largest of the
	 * writes: an earlier one, with fewer records persisted against the
	 * same losses, asked for more than this run's rate needs. */
	if (p->arena)
		p->detail_ring_suggest = wal_flight_ring_suggest(p);
	wal_flight_preroll_short(r, p); /* kept too: the summary's */
	uint64_t lost = p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST];
	if (lost > p->fill_hint_lost) { /* kept too; the threads' fills grow with the losses */
		wal_flight_fill_hint(r, p, p->fill_hint, sizeof(p->fill_hint));
		p->fill_hint_lost = lost;
	}
	json_object_set_new(root, "detail", man_detail(r, p));
	man_recorder(root, r, p);
	man_attach(root, r);
	json_object_set_new(root, "os", json_string("linux"));
	json_object_set_new(root, "arch",
	                    json_string(p->arch == ATF_ARCH_ARM64 ? "arm64" : "x86_64"));
	json_object_set_new(root, "clock", man_clock(r));
	json_object_set_new(root, "ring_config", json_string(r->o.ring_config));
	json_object_set_new(root, "wal", man_wal(r));
	json_object_set_new(root, "drain", man_drain(r));
	json_object_set_new(root, "retention", man_retention(r, p));
	json_object_set_new(root, "shm", man_shm(r));
	man_fork_notes(root, r, p, state);
	bool mlock_failed = p->arena && (ada_arena_flags(p->arena) & ADA_ARENA_F_MLOCK_FAILED);
	p->mlock_refused |= mlock_failed; /* for the live view: it reads no arena */
	json_t *drops = man_drops(r, p);  /* the arena read before warn, linked last, is made */
	json_t *warn = json_deep_copy(r->warnings);
	p->man_warnings = json_array_size(r->warnings);
	json_object_set_new(root, "threads", man_threads(p, warn));
	json_object_set_new(root, "drops", drops);
	if (mlock_failed)
		json_array_append_new(warn,
		                      json_string("mlock refused: ring pages may be swapped"));
	if (ada_wal_io_disk_full(r->io))
		json_array_append_new(
		    warn, json_string("disk full: recording stopped, files hold what was written"));
	json_array_extend(warn, p->warnings);
	json_object_set_new(root, "warnings", warn);
	json_object_set_new(root, "quarantined",
	                    p->quarantine ? json_deep_copy(p->quarantine) : json_array());
	json_object_set_new(root, "disk_full", json_boolean(ada_wal_io_disk_full(r->io)));
	json_object_set_new(root, "lost_events", json_integer((json_int_t)wal_proc_lost(p)));
	if (strcmp(state, "recording"))
		man_final(root, r, p);
	man_wait_statuses(root, r, p, state);
	if (r->flight.trig)
		wal_flight_manifest(root, r, p);
	json_object_set_new(root, "metrics", man_metrics(r, p));
	int rc = man_commit(r, p, root, state);
	r->man_building = NULL;
	json_decref(root);
	if (rc == 0 && strcmp(state, "recording")) {
		wal_retention_drop(p); /* said by the final manifest now */
		/* its files are final: recover needs no ring bases */
		wal_ring_table_drop(p);
		p->agent_final = true;
	}
	/* No pid_N/ at all is said elsewhere; one the limit of open files
	 * kept closed is opened again at the end (drain.c drain_restate). */
	p->manifest_failed = rc < 0 && (p->dir_fd >= 0 || p->dir_err);
	if (p->manifest_failed)
		man_failed(r, p, rc);
	return rc;
}
