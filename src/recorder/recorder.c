/*
 * The recorder core: session and arena directories, the drain thread's
 * life, and the end-of-run summary.
 *
 * Threads: ada_recorder_new/start/wait/free run on the caller's thread
 * (the `ada record` main thread); between start and wait the drain thread
 * (drain.c) owns everything in struct ada_recorder except main_pid, which
 * is fixed before it starts. pthread_create/join order the hand-over.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "ring.h"
#include "arena_internal.h"
#include "detail_internal.h"
#include "recorder_internal.h"
#include "spares.h"

void *wal_drain_main(void *arg);

int wal_mkdir(const char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	return -errno;
}

static int rec_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *q = buf + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		int r = wal_mkdir(buf);
		*q = '/';
		if (r < 0)
			return r;
	}
	return wal_mkdir(buf);
}

/* OUT, created as needed. As root every directory on the way must be one
 * only root can change (fs.h), so no other user can have planted a link
 * that redirects the session; cmd_record says so before this runs. */
static int rec_out_dir(struct ada_recorder *r, int *out)
{
	if (geteuid() == 0)
		return ada_fs_walk(r->out_dir, 0, ADA_FS_WALK_CREATE, out, NULL, 0);
	int rc = rec_mkdir_p(r->out_dir);
	if (rc < 0)
		return rc;
	/* The user's own choice, so a link they named is followed; below it
	 * nothing is. */
	*out = open(r->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return *out < 0 ? -errno : 0;
}

/* OUT/session_YYYYMMDD_HHMMSS, or ..._2, _3 ... when taken: created new
 * (0700, never an existing one) and opened once, as r->session_fd; every
 * file of the session is created relative to it. */
static int rec_session_dir(struct ada_recorder *r)
{
	char stamp[32], name[64];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm);
	int out_fd = -1, rc = rec_out_dir(r, &out_fd);
	if (rc < 0)
		return rc;
	/* The session path is printed and put in the environment: absolute. */
	char *abs = realpath(r->out_dir, NULL);
	rc = abs ? -EEXIST : -errno;
	if (abs) {
		free(r->out_dir);
		r->out_dir = abs;
	}
	for (int i = 1; i < 1000 && rc == -EEXIST; i++) {
		if (i == 1)
			snprintf(name, sizeof(name), "session_%s", stamp);
		else
			snprintf(name, sizeof(name), "session_%s_%d", stamp, i);
		rc = ada_fs_mkdir(out_fd, name, ADA_FS_EXCL, &r->session_fd);
	}
	close(out_fd);
	/* Held for the recorder's life (the kernel lets go when it dies):
	 * recovery takes the session only with the exclusive lock
	 * (orphans.c ada_recover_lock), whatever /proc says of the recorder
	 * from another pid namespace or a busy machine. */
	if (rc == 0 && flock(r->session_fd, LOCK_SH | LOCK_NB) < 0)
		rc = -errno;
	/* ... and past its death until its last write landed: a killed
	 * recorder's io_uring writes end after the process (ada_wal_io_hold). */
	int held = rc == 0 ? ada_wal_io_hold(r->io, r->session_fd) : 0;
	if (held < 0) {
		char msg[200];
		snprintf(msg, sizeof(msg),
		         "the session's lock is not tied to the writes in flight (%s): an `ada "
		         "recover` run the moment a killed recorder is gone may read a file its "
		         "last write still lands in",
		         strerror(-held));
		json_array_append_new(r->warnings, json_string(msg));
	}
	if (rc == 0 && asprintf(&r->session_dir, "%s/%s", r->out_dir, name) < 0) {
		r->session_dir = NULL;
		rc = -ENOMEM;
	}
	return rc;
}

/* SHM/ada-<session>-XXXXXX, made by mkdtemp: an unpredictable name, 0700,
 * ours -- another user can neither guess it in advance to block the
 * recording nor write in it. The agent learns it from ADA_ARENA_DIR. */
static int rec_arena_dir(struct ada_recorder *r)
{
	const char *shm = r->o.shm_dir ? r->o.shm_dir : "/dev/shm";
	const char *base = strrchr(r->session_dir, '/');
	base = base ? base + 1 : r->session_dir;
	if (asprintf(&r->arena_dir, "%s/ada-%s-XXXXXX", shm, base) < 0) {
		r->arena_dir = NULL;
		return -ENOMEM;
	}
	if (!mkdtemp(r->arena_dir))
		return -errno;
	return 0;
}

/* Staging buffers an eighth of a thread's index ring, 64 KiB to 1 MiB.
 * The ring space of a batch is released only when its write has
 * completed (docs/format.md), so the events in a staging buffer and in
 * its write still occupy the ring: with the default rings, buffers of
 * half a ring kept the program waiting for ring space hundreds of times
 * a run, an eighth did not, and bigger rings changed nothing once the
 * buffer was an eighth of them already (docs/benchmarks.md, "Pacing and
 * staging buffers").
 * Sizes are whole 4 KiB blocks (O_DIRECT): rings are powers of two of at
 * least ADA_RING_MIN_EVENTS events. */
static uint32_t rec_buffer_bytes(const char *ring_config)
{
	struct ada_arena_config cfg;
	if (!ring_config || !*ring_config ||
	    ada_arena_config_parse(ring_config, strlen(ring_config), &cfg) != 0)
		ada_arena_config_default(&cfg);
	uint64_t bytes = cfg.index_events * ATF_INDEX_EVENT_SIZE / 8;
	/* ADA_WAL_BUFFER_KB=N: buffers of N KiB instead (to compare) */
	const char *kb = getenv("ADA_WAL_BUFFER_KB");
	if (kb && strtoull(kb, NULL, 10) > 0)
		bytes = strtoull(kb, NULL, 10) << 10 & ~(uint64_t)(4096 - 1);
	if (bytes < (64u << 10))
		bytes = 64u << 10;
	if (bytes > (1u << 20))
		bytes = 1u << 20;
	return (uint32_t)bytes;
}

static int rec_copy_opts(struct ada_recorder *r, const struct ada_recorder_opts *o)
{
	r->o = *o;
	r->out_dir = strdup(o->out_dir ? o->out_dir : "ada_traces");
	r->ring_config = strdup(o->ring_config ? o->ring_config : "");
	if (!r->out_dir || !r->ring_config)
		return -ENOMEM;
	size_t n = 0;
	while (o->program_argv && o->program_argv[n])
		n++;
	r->argv_copy = calloc(n + 1, sizeof(char *));
	if (!r->argv_copy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(r->argv_copy[i] = strdup(o->program_argv[i])))
			return -ENOMEM;
	r->o.program_argv = (const char *const *)r->argv_copy;
	r->o.ring_config = r->ring_config;
	r->o.out_dir = r->out_dir;
	if (!r->o.segment_bytes)
		r->o.segment_bytes = 64ull << 20;
	return 0;
}

/* The disk budget: --max-disk-mb, or by default a share of the free space
 * of the file system the session is on (budget.c), measured once the
 * session directory exists. */
static void rec_budget(struct ada_recorder *r)
{
	if (r->o.max_disk_default) {
		r->o.max_disk_bytes = wal_budget_default(r->session_dir);
		r->budget.is_default = true;
	}
	if (!r->o.max_disk_bytes)
		return;
	/* Several generations must fit in the budget, so segments and the
	 * rotation size are fractions of it. */
	r->budget.gen_bytes = r->o.max_disk_bytes / 4;
	uint64_t seg = r->o.max_disk_bytes / 16;
	if (seg < 65536)
		seg = 65536;
	if (r->o.segment_bytes > seg)
		r->o.segment_bytes = seg;
}

int ada_recorder_new(const struct ada_recorder_opts *o, struct ada_recorder **out)
{
	wal_heap_setup(); /* before the threads: the whole process's allocator */
	struct ada_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->session_fd = -1;
	r->reserve.fd = -1;
	r->shm.dir_fd = -1;
	r->retired.fd = -1;
	r->self_start_ticks = ada_proc_start_ticks(getpid());
	r->warnings = json_array();
	int rc = r->warnings ? rec_copy_opts(r, o) : -ENOMEM;
	struct ada_wal_io_opts io_opts = {.buffer_bytes = rec_buffer_bytes(r->ring_config)};
	if (rc == 0)
		rc = ada_wal_io_new(&io_opts, &r->io);
	if (rc == 0)
		rc = wal_flight_init(r);
	if (rc == 0)
		rc = wal_keysym_init(r, o->key_symbols);
	if (rc == 0)
		rc = wal_vlog_init(r);
	if (rc == 0)
		rc = wal_live_init(r);
	r->o.triggers = NULL; /* copied into the engine: the caller's array may go */
	r->o.ntriggers = 0;
	if (rc == 0)
		rc = rec_session_dir(r);
	if (rc == 0) {
		rec_budget(r);
		wal_reserve_setup(r);
	}
	if (rc == 0)
		rc = rec_arena_dir(r);
	if (rc == 0)
		rc = wal_shm_setup(r);
	if (rc == 0) /* whose arenas these are, for the scan that finds them orphaned */
		rc = ada_orphan_mark(r->arena_dir, r->session_dir);
	if (rc < 0) {
		ada_recorder_discard(r);
		ada_recorder_free(r);
		return rc;
	}
	r->arch = o->target_arch ? o->target_arch : WAL_ARCH;
	r->foreign_counter = r->arch != WAL_ARCH;
	r->use_tsc = !o->force_clock && (r->foreign_counter || ada_tsc_invariant());
	if (r->use_tsc && r->foreign_counter) {
		/* Not ready until the first arena states its counter
		 * (wal_clock_anchor): no event comes before its arena. */
		r->tsc_calib = ADA_TSC_TARGET;
	} else if (r->use_tsc) {
		uint64_t tsc, ns;
		ada_tsc_sample_pair(&tsc, &ns);
		ada_tsc_clock_init(&r->clk, tsc, ns);
		/* The kernel's slope or this boot's cached one: no 5 ms
		 * calibration before the drain can convert (start-up). */
		uint64_t mult;
		r->tsc_calib = ada_tsc_known_mult(&mult);
		if (r->tsc_calib != ADA_TSC_MEASURED)
			ada_tsc_clock_seed(&r->clk, mult);
	}
	*out = r;
	return 0;
}

const char *ada_recorder_session_dir(const struct ada_recorder *r)
{
	return r->session_dir;
}

const char *ada_recorder_arena_dir(const struct ada_recorder *r)
{
	return r->arena_dir;
}

int ada_recorder_session_fd(const struct ada_recorder *r)
{
	return r->session_fd;
}

bool ada_recorder_uses_tsc(const struct ada_recorder *r)
{
	return r->use_tsc;
}

/* Spare thread directories (spares.c) where a new inode is dear: not on
 * tmpfs, where a thread's mkdir and create cost the drain less than the
 * move and the maker's wake-ups (docs/benchmarks.md, "Spare thread
 * directories"). ADA_THREAD_SPARES=1 turns them on anywhere (the tests),
 * =0 off (to compare). Without them, or when the maker cannot start, the
 * drain makes every thread's directory and index.atf itself. */
static void rec_spares_start(struct ada_recorder *r)
{
	const char *v = getenv("ADA_THREAD_SPARES");
	struct statfs sf;
	bool on = v && *v ? strcmp(v, "0") != 0
	                  : fstatfs(r->session_fd, &sf) == 0 && sf.f_type != TMPFS_MAGIC;
	if (!on || r->session_fd < 0 || wal_spares_new(r->session_fd, &r->spares) < 0)
		r->spares = NULL;
}

int ada_recorder_start(struct ada_recorder *r, pid_t main_pid)
{
	r->main_pid = main_pid;
	r->start_ns = ada_boottime_ns();
	ada_wall_anchor_read(&r->wall);
	rec_spares_start(r);
	int rc = pthread_create(&r->thr, NULL, wal_drain_main, r);
	if (rc) {
		wal_spares_free(r->spares);
		r->spares = NULL;
		return -rc;
	}
	pthread_setname_np(r->thr, "ada-drain"); /* for top, perf, gdb */
	r->started = true;
	return 0;
}

void ada_recorder_set_attach(struct ada_recorder *r, uint64_t realtime_ns, uint64_t pause_ns,
                             uint64_t detach_pause_ns)
{
	atomic_store_explicit(&r->attach.time_ns, realtime_ns, memory_order_relaxed);
	atomic_store_explicit(&r->attach.pause_ns, pause_ns, memory_order_relaxed);
	atomic_store_explicit(&r->attach.detach_pause_ns, detach_pause_ns, memory_order_relaxed);
	/* Release: the three values above with it; pairs with the acquire in
	 * man_attach() (manifest.c). */
	atomic_store_explicit(&r->attach.set, 1, memory_order_release);
}

void ada_recorder_stop(struct ada_recorder *r)
{
	/* Read by drain_stop_now(); nothing else is published with it. */
	atomic_store_explicit(&r->stop_req, 1, memory_order_relaxed);
	ada_recorder_wake(r);
}

void wal_proc_fold(struct wal_proc_sums *s, const struct wal_proc *p)
{
	uint64_t waits, ns;
	s->detail_records += wal_detail_proc_records(p);
	s->detail_overwritten += p->detail_overwritten;
	wal_detail_proc_waits(p, &waits, &ns);
	s->detail_waits += waits;
	s->detail_waited_ns += ns;
	wal_proc_ring_waits(p, &waits, &ns);
	s->ring_waits += waits;
	s->ring_waited_ns += ns;
	s->window_lost += p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST];
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
		s->window_missed[k] += p->window_missed[k];
	if (p->pre_asked_ns && (!s->pre_asked_ns || p->pre_got_ns < s->pre_got_ns)) {
		s->pre_asked_ns = p->pre_asked_ns;
		s->pre_got_ns = p->pre_got_ns;
		s->pre_ring_bytes = p->pre_ring_bytes;
	}
	if (p->fill_hint[0] && p->fill_hint_lost > s->fill_hint_lost) {
		s->fill_hint_lost = p->fill_hint_lost;
		memcpy(s->fill_hint, p->fill_hint, sizeof(s->fill_hint));
	}
	if (p->detail_ring_suggest > s->detail_ring_suggest)
		s->detail_ring_suggest = p->detail_ring_suggest;
	s->drops += wal_proc_drops(p);
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			s->drops_by[l][k] += p->drops[l][k];
}

/* Every process's sums, the retired ones' with them, into s. */
static void rec_summary_procs(const struct ada_recorder *r, struct ada_record_summary *s)
{
	struct wal_proc_sums q = r->retired.sums;
	for (size_t i = 0; i < r->nprocs; i++)
		wal_proc_fold(&q, r->procs[i]);
	s->detail_records = q.detail_records;
	s->detail_overwritten = q.detail_overwritten;
	s->detail_waits = q.detail_waits;
	s->detail_waited_ns = q.detail_waited_ns;
	s->ring_waits = q.ring_waits;
	s->ring_waited_ns = q.ring_waited_ns;
	s->window_lost = q.window_lost;
	memcpy(s->window_missed, q.window_missed, sizeof(s->window_missed));
	s->pre_asked_ns = q.pre_asked_ns;
	s->pre_got_ns = q.pre_got_ns;
	s->pre_ring_bytes = q.pre_ring_bytes;
	snprintf(s->fill_hint, sizeof(s->fill_hint), "%s", q.fill_hint);
	s->detail_ring_suggest = q.detail_ring_suggest;
	s->drops = q.drops;
	memcpy(s->drops_by, q.drops_by, sizeof(s->drops_by));
}

static void rec_summary(struct ada_recorder *r, struct ada_record_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->events = r->events_total - r->lost_total;
	s->lost_enospc = r->lost_total;
	wal_budget_scan(r); /* every process is finished: final sizes */
	s->disk_bytes = r->budget.disk_closed + r->budget.side_bytes;
	s->budget_bytes = r->o.max_disk_bytes;
	s->budget_default = r->budget.is_default;
	s->retired_gens = r->budget.retired_gens;
	s->retired_events = r->budget.retired_events;
	s->retired_bytes = r->budget.retired_bytes;
	s->retired_threads = r->budget.retired_threads;
	s->retired_cut = r->budget.retired_cut;
	s->detail_cut = r->detail_cut;
	s->detail_removed = r->detail_removed;
	for (size_t i = 0; i < r->nprocs; i++)
		s->manifests_failed += r->procs[i]->manifest_failed;
	s->drain_cpu_ns = r->drain_cpu_ns;
	ada_wal_io_final(r->io, &s->index_bytes, &s->index_events);
	struct ada_shm_budget_view v;
	wal_shm_read(r, &v);
	s->shm_ceiling = v.ceiling;
	s->shm_peak = v.peak;
	s->untraced_procs = v.refused_procs;
	s->shm = v;
	s->shm_leftover = r->shm.leftover;
	s->pid_reused = r->pid_reused;
	s->wait_statuses = (struct ada_wait_status_counts){
	    r->wait_notes.c.unknown, r->wait_notes.c.overwritten, r->wait_notes.c.refused};
	s->pool_hits = r->shm.pool_hits;
	s->pool_misses = r->shm.pool_misses;
	s->seconds = (double)(ada_boottime_ns() - r->start_ns) / 1e9;
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	s->latency_p50_ns = ada_lat_hist_quantile(h, 0.5);
	s->latency_p99_ns = ada_lat_hist_quantile(h, 0.99);
	s->disk_full = ada_wal_io_disk_full(r->io);
	s->processes = (uint32_t)r->nprocs + r->retired.procs;
	s->detail_mode = r->o.detail_mode;
	s->windows = r->flight.trig ? ada_trigger_window_count(r->flight.trig) : 0;
	s->windows_yielded = r->flight.yield.held;
	rec_summary_procs(r, s);
	s->agents = r->agent_sums;
	int st = r->main_status;
	if (r->o.attached) {
		s->exit_status = 0; /* not our child: ada attach's own status */
	} else if (!r->main_reaped) {
		s->exit_status = 1;
		s->abnormal = true;
	} else if (WIFSIGNALED(st)) {
		s->exit_status = 128 + WTERMSIG(st);
		s->abnormal = true;
	} else {
		s->exit_status = WEXITSTATUS(st);
	}
}

int ada_recorder_wait(struct ada_recorder *r, struct ada_record_summary *sum)
{
	if (!r->started)
		return -EINVAL;
	pthread_join(r->thr, NULL);
	r->started = false;
	wal_shm_finish(r); /* nothing is left in the arena directory, nor it */
	wal_reserve_end(r);
	if (sum) {
		rec_summary(r, sum);
		sum->drain_polling_err = -r->bell.refused; /* the doorbell's fallback */
	}
	if (ada_wal_io_disk_full(r->io))
		return -ENOSPC;
	return r->error;
}

/* Removes name under dirfd and what it holds, never following a link
 * (a link is removed, not its target) and at most depth levels deep. */
static void rec_rm_tree(int at, const char *name, int depth)
{
	DIR *d = depth > 0 ? ada_fs_opendir(at, name) : NULL;
	if (d) {
		struct dirent *de;
		for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++) {
			enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
			if (k == ADA_FS_DIR)
				rec_rm_tree(dirfd(d), de->d_name, depth - 1);
			else if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	}
	unlinkat(at, name, AT_REMOVEDIR);
}

void ada_recorder_discard(struct ada_recorder *r)
{
	if (!r || r->started)
		return;
	/* session_YYYY/pid_N/thread_K/file: depth 4 is enough. */
	if (r->session_dir)
		rec_rm_tree(AT_FDCWD, r->session_dir, 4);
	if (r->arena_dir)
		rec_rm_tree(AT_FDCWD, r->arena_dir, 1);
	r->discarded = true;
}

void wal_proc_free(struct wal_proc *p)
{
	wal_flight_free(p);
	wal_keysym_proc_free(p);
	for (size_t j = 0; j < p->nthreads; j++) {
		struct wal_thread *t = p->threads[j];
		if (t->f)
			ada_wal_file_finalize(t->f, NULL);
		free(t->gens);
		wal_detail_free(t);
		free(t->dir);
		if (t->dir_fd >= 0)
			close(t->dir_fd);
		free(t);
	}
	ada_arena_close(p->arena);
	if (p->arena_fd >= 0)
		close(p->arena_fd);
	json_decref(p->quarantine);
	json_decref(p->warnings);
	drain_slot_tables_free(p);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p->threads);
	free(p->seq_set);
	free(p->open);
	free(p->sealed);
	free(p->sealed_blocks);
	free(p->dir);
	wal_ring_table_close(p);
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	free(p->arena_path);
	free(p);
}

void ada_recorder_free(struct ada_recorder *r)
{
	if (!r)
		return;
	if (r->started)
		pthread_join(r->thr, NULL);
	for (size_t i = 0; i < r->nprocs; i++)
		wal_proc_free(r->procs[i]);
	free(r->procs);
	if (r->shm.budget != r->bell.page)
		ada_shm_budget_close(r->shm.budget);
	ada_shm_budget_close(r->bell.page); /* the same page, kept for the bell */
	if (r->shm.dir_fd >= 0)
		close(r->shm.dir_fd);
	if (r->reserve.fd >= 0)
		close(r->reserve.fd);
	wal_spares_free(r->spares); /* stopped by the drain's end unless it never ran */
	ada_wal_io_free(r->io);
	if (r->session_fd >= 0)
		close(r->session_fd);
	for (size_t i = 0; r->argv_copy && r->argv_copy[i]; i++)
		free(r->argv_copy[i]);
	free(r->argv_copy);
	json_decref(r->warnings);
	wal_agent_cache_free(&r->agent_cache);
	wal_retire_fini(r);
	wal_flight_fini(r);
	wal_keysym_fini(r);
	wal_vlog_fini(r);
	wal_live_fini(r);
	wal_reaped_free(&r->reaped);
	wal_wait_notes_free(&r->wait_notes);
	free(r->admit.set);
	for (int k = 0; k < WAL_REFUSE_COUNT; k++)
		free(r->admit.first[k]);
	free(r->out_dir);
	free(r->ring_config);
	free(r->dsnap.buf);
	free(r->dsnap.ends);
	free(r->session_dir);
	free(r->arena_dir);
	free(r);
}
