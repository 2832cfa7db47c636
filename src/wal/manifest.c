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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manifest.h"
#include "ring.h"
#include "wal_internal.h"

static const char *const man_lane[ADA_LANE_COUNT] = {"index", "detail"};
static const char *const man_reason[ADA_DROP_REASON_COUNT] = {"ring_full", "drain_lag",
                                                              "detail_overwritten", "no_slot"};

int wal_json_write_atomic(const char *dir, json_t *root)
{
	return ada_manifest_write(dir, root);
}

uint64_t wal_proc_drops(const struct wal_proc *p)
{
	uint64_t n = 0;
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			n += p->drops[l][k];
	return n;
}

static json_t *man_drops(struct wal_proc *p)
{
	if (p->arena)
		ada_arena_drop_totals(p->arena, p->drops);
	json_t *o = json_object();
	for (int l = 0; l < ADA_LANE_COUNT; l++) {
		json_t *lane = json_object();
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			json_object_set_new(lane, man_reason[k],
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
	}
	return c;
}

static json_t *man_gen(const struct wal_gen *g)
{
	json_t *o = json_object();
	char name[64];
	snprintf(name, sizeof(name), "index.g%u.atf", g->g);
	char path[96];
	snprintf(path, sizeof(path), "thread_%u/%s", g->t->seq, name);
	json_object_set_new(o, "file", json_string(name));
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "generation", json_integer(g->g));
	json_object_set_new(o, "first_seq", json_integer((json_int_t)g->first_seq));
	json_object_set_new(o, "events", json_integer((json_int_t)g->events));
	json_object_set_new(o, "bytes", json_integer((json_int_t)g->bytes));
	json_object_set_new(o, "time_start_ns", json_integer((json_int_t)g->t0));
	json_object_set_new(o, "time_end_ns", json_integer((json_int_t)g->t1));
	return o;
}

/* "files": the kept generations, oldest first, then the current file
 * (generation null) once it is final. */
static json_t *man_thread(const struct wal_thread *t)
{
	json_t *o = json_object();
	json_object_set_new(o, "thread", json_integer(t->seq));
	json_object_set_new(o, "tid", json_integer(t->tid));
	json_t *files = json_array();
	for (size_t i = 0; i < t->ngens; i++)
		json_array_append_new(files, man_gen(&t->gens[i]));
	if (t->done && !t->f) {
		json_t *c = json_object();
		char path[64];
		snprintf(path, sizeof(path), "thread_%u/index.atf", t->seq);
		json_object_set_new(c, "file", json_string("index.atf"));
		json_object_set_new(c, "path", json_string(path));
		json_object_set_new(c, "generation", json_null());
		json_object_set_new(c, "first_seq", json_integer((json_int_t)t->base_seq));
		json_object_set_new(c, "events", json_integer((json_int_t)t->last.events));
		json_object_set_new(c, "bytes", json_integer((json_int_t)t->last.bytes));
		json_object_set_new(c, "time_start_ns",
		                    json_integer((json_int_t)t->last.time_start_ns));
		json_object_set_new(c, "time_end_ns",
		                    json_integer((json_int_t)t->last.time_end_ns));
		json_object_set_new(c, "crc32", json_integer(t->last.crc));
		json_array_append_new(files, c);
	}
	json_object_set_new(o, "files", files);
	json_object_set_new(o, "retired_events", json_integer((json_int_t)t->retired_events));
	json_object_set_new(o, "retired_bytes", json_integer((json_int_t)t->retired_bytes));
	json_object_set_new(o, "lost_events", json_integer((json_int_t)t->lost));
	return o;
}

/* Exit status, signal and the abnormal flag, from waitpid when we reaped
 * the process, else from what its agent wrote into the arena. */
static void man_exit(json_t *root, struct wal_proc *p)
{
	json_t *e = json_object();
	bool abnormal = false;
	int sig = 0, status = -1;
	int v = 0;
	uint32_t ps = p->arena ? ada_arena_process_state(p->arena, &v) : ADA_PROC_RUNNING;
	if (p->reaped && WIFSIGNALED(p->wstatus)) {
		sig = WTERMSIG(p->wstatus);
		abnormal = true;
	} else if (p->reaped) {
		status = WEXITSTATUS(p->wstatus);
	} else if (ps == ADA_PROC_CRASHED) {
		sig = v;
		abnormal = true;
	} else if (ps == ADA_PROC_EXITED) {
		status = v;
	} else {
		abnormal = true; /* vanished without a word: status unknown */
	}
	json_object_set_new(e, "status", status >= 0 ? json_integer(status) : json_null());
	json_object_set_new(e, "signal", sig ? json_integer(sig) : json_null());
	if (sig)
		json_object_set_new(e, "signal_name",
		                    json_string(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?"));
	json_object_set_new(e, "abnormal", json_boolean(abnormal));
	json_object_set_new(root, "exit", e);
	json_object_set_new(root, "abnormal", json_boolean(abnormal));
}

static json_t *man_wal(const struct ada_recorder *r)
{
	json_t *w = json_object();
	static const char *const modes[] = {"off", "interval", "bytes", "rotate"};
	json_object_set_new(w, "segment_bytes", json_integer((json_int_t)r->o.segment_bytes));
	json_object_set_new(w, "flush", json_string(modes[r->o.flush.mode & 3]));
	json_object_set_new(w, "flush_value", json_integer((json_int_t)r->o.flush.value));
	json_object_set_new(w, "safe", json_boolean(r->o.flush.safe));
	json_object_set_new(w, "max_disk_bytes", json_integer((json_int_t)r->o.max_disk_bytes));
	json_object_set_new(w, "drain_cpu",
	                    r->o.drain_cpu >= 0 ? json_integer(r->o.drain_cpu) : json_null());
	return w;
}

static json_t *man_metrics(const struct ada_recorder *r, const struct wal_proc *p)
{
	json_t *m = json_object();
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	json_object_set_new(m, "events_written", json_integer((json_int_t)p->events));
	json_object_set_new(m, "batches", json_integer((json_int_t)h->count));
	json_object_set_new(m, "batch_latency_ns_p50",
	                    json_integer((json_int_t)ada_lat_hist_quantile(h, 0.5)));
	json_object_set_new(m, "batch_latency_ns_p99",
	                    json_integer((json_int_t)ada_lat_hist_quantile(h, 0.99)));
	double secs = (double)(ada_boottime_ns() - r->start_ns) / 1e9;
	json_object_set_new(m, "seconds", json_real(secs));
	json_object_set_new(m, "events_per_sec",
	                    json_real(secs > 0 ? (double)p->events / secs : 0));
	return m;
}

static json_t *man_threads(const struct wal_proc *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < p->nthreads; i++)
		json_array_append_new(a, man_thread(p->threads[i]));
	return a;
}

static json_t *man_ring(const struct wal_proc *p)
{
	if (!p->arena)
		return json_null();
	const struct ada_arena_config *c = ada_arena_config_of(p->arena);
	json_t *o = json_object();
	json_object_set_new(o, "max_threads", json_integer(c->max_threads));
	json_object_set_new(o, "index_events", json_integer((json_int_t)c->index_events));
	json_object_set_new(o, "index_bytes",
	                    json_integer((json_int_t)(c->index_events * ATF_INDEX_EVENT_SIZE)));
	json_object_set_new(o, "detail_bytes", json_integer((json_int_t)c->detail_bytes));
	json_object_set_new(o, "overflow",
	                    json_string(c->overflow == ADA_OVERFLOW_DROP ? "drop" : "wait"));
	json_object_set_new(o, "timestamps",
	                    json_string(c->timestamp_source == ADA_TS_CLOCK ? "clock" : "tsc"));
	json_object_set_new(o, "high_watermark_pct", json_integer(c->high_watermark_pct));
	json_object_set_new(o, "low_watermark_pct", json_integer(c->low_watermark_pct));
	uint32_t fl = ada_arena_flags(p->arena);
	json_object_set_new(o, "mlocked", json_boolean(!(fl & ADA_ARENA_F_MLOCK_FAILED)));
	json_object_set_new(o, "huge_pages",
	                    json_boolean(fl & (ADA_ARENA_F_THP | ADA_ARENA_F_HUGETLB)));
	return o;
}

/* The agent's pid_N/agent.json (hook counts and timings, modules) goes
 * into the manifest as "hook" and "modules" (docs/manifest.md). */
static json_t *man_module(json_t *m)
{
	json_t *o = json_object();
	json_int_t id = json_integer_value(json_object_get(m, "module_id"));
	char syms[64];
	snprintf(syms, sizeof(syms), "modules/module_%lld.syms", (long long)id);
	json_object_set_new(o, "id", json_integer(id));
	json_object_set(o, "path", json_object_get(m, "path"));
	json_object_set(o, "build_id", json_object_get(m, "build_id"));
	json_object_set(o, "load_base", json_object_get(m, "load_base"));
	json_object_set_new(o, "symbols", json_string(syms));
	json_object_set(o, "functions", json_object_get(m, "functions"));
	json_object_set(o, "hooked", json_object_get(m, "installed"));
	json_object_set(o, "skipped", json_object_get(m, "skipped"));
	json_object_set(o, "unloaded", json_object_get(m, "unloaded"));
	return o;
}

static void man_agent(json_t *root, const struct wal_proc *p)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/agent.json", p->dir);
	json_t *a = json_load_file(path, 0, NULL);
	if (!json_is_object(a)) {
		json_decref(a);
		return;
	}
	json_t *mods = json_object_get(a, "modules"), *out = json_array();
	size_t i;
	json_t *m;
	json_array_foreach(mods, i, m) json_array_append_new(out, man_module(m));
	json_object_set_new(root, "modules", out);
	json_object_del(a, "modules");
	json_object_set_new(root, "hook", a);
}

int wal_manifest_write(struct ada_recorder *r, struct wal_proc *p, const char *state)
{
	json_t *root = ada_manifest_new(p->pid);
	if (!root)
		return -ENOMEM;
	json_object_set_new(root, "state", json_string(state));
	json_object_set_new(root, "start_time_ns", json_integer((json_int_t)r->start_ns));
	if (strcmp(state, "recording"))
		json_object_set_new(root, "end_time_ns",
		                    json_integer((json_int_t)ada_boottime_ns()));
	json_object_set_new(root, "ring", man_ring(p));
	json_object_set_new(root, "arena", json_string(p->arena_path));
	json_object_set_new(root, "arena_dir", json_string(r->arena_dir));
	json_object_set_new(root, "recorder_pid", json_integer(getpid()));
	json_t *argv = json_array();
	for (size_t i = 0; r->o.program_argv && r->o.program_argv[i]; i++)
		json_array_append_new(argv, json_string(r->o.program_argv[i]));
	json_object_set_new(root, "program", argv);
	json_object_set_new(root, "os", json_string("linux"));
	json_object_set_new(root, "arch",
	                    json_string(WAL_ARCH == ATF_ARCH_X86_64 ? "x86_64" : "arm64"));
	json_object_set_new(root, "clock", man_clock(r));
	json_object_set_new(root, "ring_config", json_string(r->o.ring_config));
	json_object_set_new(root, "wal", man_wal(r));
	json_object_set_new(root, "threads", man_threads(p));
	json_object_set_new(root, "drops", man_drops(p));
	json_t *warn = json_deep_copy(r->warnings);
	if (p->arena && (ada_arena_flags(p->arena) & ADA_ARENA_F_MLOCK_FAILED))
		json_array_append_new(warn,
		                      json_string("mlock refused: ring pages may be swapped"));
	if (ada_wal_io_disk_full(r->io))
		json_array_append_new(
		    warn, json_string("disk full: recording stopped, files hold what was written"));
	json_object_set_new(root, "warnings", warn);
	json_object_set_new(root, "disk_full", json_boolean(ada_wal_io_disk_full(r->io)));
	uint64_t lost = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		lost += p->threads[i]->lost;
	json_object_set_new(root, "lost_events", json_integer((json_int_t)lost));
	if (strcmp(state, "recording")) {
		man_exit(root, p);
		man_agent(root, p);
	}
	json_object_set_new(root, "metrics", man_metrics(r, p));
	int rc = wal_json_write_atomic(p->dir, root);
	json_decref(root);
	return rc;
}
