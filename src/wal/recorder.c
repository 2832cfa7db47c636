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
#include <sys/inotify.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "wal_internal.h"

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

/* OUT/session_YYYYMMDD_HHMMSS, or ..._2, _3 ... when taken. */
static int rec_session_dir(struct ada_recorder *r)
{
	char stamp[32], path[PATH_MAX];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm);
	int rc = rec_mkdir_p(r->out_dir);
	if (rc < 0)
		return rc;
	/* The session path is printed and put in the environment: absolute. */
	char *abs = realpath(r->out_dir, NULL);
	if (!abs)
		return -errno;
	free(r->out_dir);
	r->out_dir = abs;
	for (int i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(path, sizeof(path), "%s/session_%s", r->out_dir, stamp);
		else
			snprintf(path, sizeof(path), "%s/session_%s_%d", r->out_dir, stamp, i);
		if (mkdir(path, 0755) == 0) {
			r->session_dir = strdup(path);
			return r->session_dir ? 0 : -ENOMEM;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static int rec_arena_dir(struct ada_recorder *r)
{
	const char *shm = r->o.shm_dir ? r->o.shm_dir : "/dev/shm";
	const char *base = strrchr(r->session_dir, '/');
	base = base ? base + 1 : r->session_dir;
	if (asprintf(&r->arena_dir, "%s/ada-%s-%d", shm, base, (int)getpid()) < 0) {
		r->arena_dir = NULL;
		return -ENOMEM;
	}
	if (mkdir(r->arena_dir, 0700) < 0)
		return -errno;
	r->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (r->inotify_fd < 0)
		return -errno;
	if (inotify_add_watch(r->inotify_fd, r->arena_dir, IN_MOVED_TO | IN_CREATE) < 0)
		return -errno;
	return 0;
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
	if (r->o.max_disk_bytes) {
		/* Several generations must fit in the budget, so segments and
		 * the rotation size are fractions of it. */
		r->gen_bytes = r->o.max_disk_bytes / 4;
		uint64_t seg = r->o.max_disk_bytes / 16;
		if (seg < 65536)
			seg = 65536;
		if (r->o.segment_bytes > seg)
			r->o.segment_bytes = seg;
	}
	return 0;
}

int ada_recorder_new(const struct ada_recorder_opts *o, struct ada_recorder **out)
{
	struct ada_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->inotify_fd = -1;
	r->warnings = json_array();
	int rc = r->warnings ? rec_copy_opts(r, o) : -ENOMEM;
	if (rc == 0)
		rc = ada_wal_io_new(NULL, &r->io);
	if (rc == 0)
		rc = rec_session_dir(r);
	if (rc == 0)
		rc = rec_arena_dir(r);
	if (rc < 0) {
		ada_recorder_discard(r);
		ada_recorder_free(r);
		return rc;
	}
	r->use_tsc = !o->force_clock && ada_tsc_invariant();
	if (r->use_tsc) {
		uint64_t tsc, ns;
		ada_tsc_sample_pair(&tsc, &ns);
		ada_tsc_clock_init(&r->clk, tsc, ns);
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

bool ada_recorder_uses_tsc(const struct ada_recorder *r)
{
	return r->use_tsc;
}

int ada_recorder_start(struct ada_recorder *r, pid_t main_pid)
{
	r->main_pid = main_pid;
	r->start_ns = ada_boottime_ns();
	int rc = pthread_create(&r->thr, NULL, wal_drain_main, r);
	if (rc)
		return -rc;
	pthread_setname_np(r->thr, "ada-drain"); /* for top, perf, gdb */
	r->started = true;
	return 0;
}

static void rec_summary(struct ada_recorder *r, struct ada_record_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->events = r->events_total - r->lost_total;
	s->lost_enospc = r->lost_total;
	s->disk_bytes = r->disk_closed;
	s->seconds = (double)(ada_boottime_ns() - r->start_ns) / 1e9;
	const struct ada_lat_hist *h = ada_wal_io_latency(r->io);
	s->latency_p50_ns = ada_lat_hist_quantile(h, 0.5);
	s->latency_p99_ns = ada_lat_hist_quantile(h, 0.99);
	s->disk_full = ada_wal_io_disk_full(r->io);
	s->processes = (uint32_t)r->nprocs;
	for (size_t i = 0; i < r->nprocs; i++)
		s->drops += wal_proc_drops(r->procs[i]);
	int st = r->main_status;
	if (!r->main_reaped) {
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
	rmdir(r->arena_dir); /* empty after a clean finish: every arena unlinked */
	if (sum)
		rec_summary(r, sum);
	if (ada_wal_io_disk_full(r->io))
		return -ENOSPC;
	return r->error;
}

static void rec_rm_tree(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char sub[PATH_MAX];
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			if (de->d_type == DT_DIR)
				rec_rm_tree(sub);
			else
				unlink(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

void ada_recorder_discard(struct ada_recorder *r)
{
	if (!r || r->started)
		return;
	if (r->session_dir)
		rec_rm_tree(r->session_dir);
	if (r->arena_dir)
		rec_rm_tree(r->arena_dir);
	r->discarded = true;
}

static void rec_free_proc(struct wal_proc *p)
{
	for (size_t j = 0; j < p->nthreads; j++) {
		struct wal_thread *t = p->threads[j];
		if (t->f)
			ada_wal_file_finalize(t->f, NULL);
		free(t->gens);
		free(t->dir);
		free(t);
	}
	ada_arena_close(p->arena);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p->threads);
	free(p->by_slot);
	free(p->dir);
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
		rec_free_proc(r->procs[i]);
	free(r->procs);
	ada_wal_io_free(r->io);
	if (r->inotify_fd >= 0)
		close(r->inotify_fd);
	for (size_t i = 0; r->argv_copy && r->argv_copy[i]; i++)
		free(r->argv_copy[i]);
	free(r->argv_copy);
	json_decref(r->warnings);
	free(r->early_pid);
	free(r->early_status);
	free(r->out_dir);
	free(r->ring_config);
	free(r->session_dir);
	free(r->arena_dir);
	free(r);
}
