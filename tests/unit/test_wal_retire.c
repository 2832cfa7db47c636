/*
 * Retiring a finished process the disk budget emptied (src/recorder/retire.c)
 * and reading the session's retired.jsonl back (src/atf/manifest.c):
 * the line keeps the manifest's counting keys and leaves its lists out;
 * a ready process's pid_N/ goes, its line is appended and its counts are
 * the recorder's sums; a process not finished, still holding files, or
 * whose pid a process holds stays; a retired.jsonl planted as a link is
 * not written through: the process keeps its directory, said once; the
 * reader skips lines that are not a
 * retired process's and those whose pid_N/ is still there.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "manifest.h"
#include "recorder_internal.h"

/* No Linux process has it (above PID_MAX_LIMIT): kill() says ESRCH. */
#define FREE_PID 4194400

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_retire.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static json_int_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A final manifest as the recorder writes one: threads, modules, windows
 * (the second reached this process), hook details, zero drops. */
static json_t *manifest(int pid, json_int_t end_ns)
{
	json_t *m = json_pack(
	    "{s:s, s:i, s:i, s:s, s:I, s:I, s:{s:i, s:n, s:b}, s:i, s:{s:I, s:i},"
	    " s:{s:{s:i, s:i}, s:{s:i, s:i}}, s:{s:I, s:i, s:i, s:i},"
	    " s:{s:s, s:i, s:o}, s:[{s:i}], s:[{s:i}],"
	    " s:{s:i, s:{s:i}, s:{s:i}, s:[], s:{s:i}}, s:{s:[{s:i, s:[]}, {s:i, s:[{}], s:i}]},"
	    " s:[s, s], s:[s]}",
	    "format", "ada-manifest", "version", 1, "pid", pid, "state", "complete",
	    "start_time_ns", (json_int_t)1000, "end_time_ns", end_ns, "exit", "status", 3, "signal",
	    "abnormal", 0, "lost_events", 0, "retention", "retired_events", (json_int_t)500,
	    "retired_threads", 1, "drops", "index", "ring_full", 0, "recorder_gone", 4, "detail",
	    "ring_full", 0, "corrupt", 0, "metrics", "events_written", (json_int_t)500,
	    "ring_waits", 2, "index_bytes", 900, "index_events", 500, "detail", "mode", "triggered",
	    "records", 7, "keysym", json_object(), "threads", "thread", 1, "modules", "id", 1,
	    "hook", "installed", 12, "skipped", "tiny", 3, "untraced_calls", "recorder_gone", 2,
	    "hot_functions", "hook_time_us", "total", 40, "flight_recorder", "windows", "id", 1,
	    "threads", "id", 2, "threads", "records", 7, "warnings", "one", "two", "program",
	    "/bin/prog");
	assert_non_null(m);
	return m;
}

static void test_line_keys(void **state)
{
	(void)state;
	json_t *man = manifest(42, 5000);
	json_t *argv = json_array();
	for (int i = 0; i < 40; i++)
		json_array_append_new(argv, json_string("word"));
	json_object_set_new(man, "program", argv);
	json_t *l = wal_retired_line(man);
	assert_true(json_is_true(json_object_get(l, "retired")));
	assert_int_equal(num(l, "pid"), 42);
	assert_string_equal(json_string_value(json_object_get(l, "format")), "ada-manifest");
	assert_int_equal(num(json_object_get(l, "metrics"), "events_written"), 500);
	assert_int_equal(num(json_object_get(l, "metrics"), "ring_waits"), 2);
	assert_int_equal(num(json_object_get(l, "retention"), "retired_events"), 500);
	assert_int_equal(num(json_object_get(l, "exit"), "status"), 3);
	/* Drops: the reasons that count, none of the zeros. */
	json_t *ix = json_object_get(json_object_get(l, "drops"), "index");
	assert_int_equal(json_object_size(ix), 1);
	assert_int_equal(num(ix, "recorder_gone"), 4);
	assert_int_equal(json_object_size(json_object_get(json_object_get(l, "drops"), "detail")),
	                 0);
	/* The hook's counts and untraced calls, not its lists. */
	json_t *h = json_object_get(l, "hook");
	assert_int_equal(num(json_object_get(h, "untraced_calls"), "recorder_gone"), 2);
	assert_int_equal(num(h, "installed"), 12);
	assert_int_equal(num(json_object_get(h, "hook_time_us"), "total"), 40);
	assert_null(json_object_get(h, "hot_functions"));
	assert_int_equal(num(json_object_get(l, "detail"), "records"), 7);
	assert_null(json_object_get(json_object_get(l, "detail"), "keysym"));
	/* One of the two windows reached it, with its 7 records. */
	assert_int_equal(num(l, "windows"), 1);
	assert_int_equal(num(l, "window_records"), 7);
	assert_int_equal(num(l, "threads_recorded"), 1);
	assert_int_equal(json_array_size(json_object_get(l, "program")), 16);
	assert_null(json_object_get(l, "threads"));
	assert_null(json_object_get(l, "modules"));
	assert_null(json_object_get(l, "warnings"));
	assert_null(json_object_get(l, "flight_recorder"));
	json_decref(l);
	json_decref(man);
}

/* pid_<pid>/ under dir with its manifest, agent.json and a module file. */
static int make_pid_dir(int pid, json_int_t end_ns)
{
	char path[128];
	int fd;
	snprintf(path, sizeof(path), "%s/pid_%d", dir, pid);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/pid_%d", dir, pid);
	json_t *m = manifest(pid, end_ns);
	assert_int_equal(ada_manifest_write(path, m), 0);
	json_decref(m);
	fd = openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	int a = openat(fd, "agent.json", O_WRONLY | O_CREAT, 0600);
	assert_true(a >= 0);
	assert_int_equal(write(a, "{}", 2), 2);
	close(a);
	a = openat(fd, "module_1.syms", O_WRONLY | O_CREAT, 0600);
	assert_true(a >= 0);
	close(a);
	return fd;
}

static struct wal_proc *proc(int pid, bool finished)
{
	struct wal_proc *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	p->pid = pid;
	p->pidfd = p->arena_fd = -1;
	p->dir_fd = make_pid_dir(pid, 5000);
	assert_true(asprintf(&p->dir, "%s/pid_%d", dir, pid) > 0);
	p->finished = finished;
	p->drops[ADA_LANE_INDEX][ADA_DROP_RING_FULL] = 5;
	p->rec_drops[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST] = 9;
	return p;
}

static bool exists(const char *name)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static int count_line(json_t *line, void *arg)
{
	(void)line;
	(*(int *)arg)++;
	return 0;
}

static void test_retire_procs(void **state)
{
	(void)state;
	struct ada_recorder r = {0};
	r.o.max_disk_bytes = 1 << 20;
	r.budget.retired_gens = 1; /* at its budget */
	r.retired.fd = r.shm.dir_fd = -1;
	r.session_fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(r.session_fd >= 0);
	struct wal_proc *ready = proc(FREE_PID, true), *running = proc(FREE_PID + 1, false);
	struct wal_proc *held = proc(getpid(), true); /* a process holds its pid */
	struct wal_proc *files = proc(FREE_PID + 2, true);
	struct wal_thread *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->p = files;
	t->dir_fd = -1;
	t->has_dir = true; /* its file is there: not emptied */
	files->threads = calloc(1, sizeof(*files->threads));
	files->threads[0] = t;
	files->nthreads = 1;
	struct wal_proc *procs[] = {running, ready, held, files};
	r.procs = malloc(sizeof(procs));
	memcpy(r.procs, procs, sizeof(procs));
	r.nprocs = 4;
	r.retired.finished_held = 3;
	wal_retire_procs(&r, false); /* nothing pending: nothing looked at */
	assert_int_equal(r.nprocs, 4);
	wal_retire_procs(&r, true);
	assert_int_equal(r.nprocs, 3);
	assert_ptr_equal(r.procs[0], running);
	assert_ptr_equal(r.procs[1], held);
	assert_ptr_equal(r.procs[2], files);
	assert_int_equal(r.retired.procs, 1);
	assert_int_equal(r.retired.finished_held, 2);
	assert_int_equal(r.retired.sums.drops_by[ADA_LANE_INDEX][ADA_DROP_RING_FULL], 5);
	assert_int_equal(r.retired.sums.drops, 5);
	assert_int_equal(r.retired.sums.window_lost, 9);
	char name[32];
	snprintf(name, sizeof(name), "pid_%d", FREE_PID);
	assert_false(exists(name));
	snprintf(name, sizeof(name), "pid_%d", (int)getpid());
	assert_true(exists(name));
	int n = 0;
	uint64_t bad = 0;
	assert_int_equal(ada_retired_foreach(dir, count_line, &n, &bad), 1);
	assert_int_equal(n, 1);
	assert_int_equal(bad, 0);
	for (size_t i = 0; i < r.nprocs; i++)
		wal_proc_free(r.procs[i]);
	free(r.procs);
	wal_retire_fini(&r);
	close(r.session_fd);
}

static void test_retire_planted(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, ADA_RETIRED_NAME);
	assert_int_equal(symlink("/dev/null", path), 0);
	struct ada_recorder r = {0};
	r.o.max_disk_bytes = 1 << 20;
	r.budget.retired_gens = 1;
	r.retired.fd = r.shm.dir_fd = -1;
	r.warnings = json_array();
	r.session_fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(r.session_fd >= 0);
	r.session_dir = dir;
	r.procs = malloc(sizeof(*r.procs));
	r.procs[0] = proc(FREE_PID, true);
	r.nprocs = 1;
	wal_retire_procs(&r, true);
	wal_retire_procs(&r, true); /* not tried again, not said again */
	assert_int_equal(r.nprocs, 1);
	assert_int_equal(r.retired.procs, 0);
	assert_int_equal(r.retired.failed, 1);
	assert_int_equal(json_array_size(r.warnings), 1);
	char name[32];
	snprintf(name, sizeof(name), "pid_%d", FREE_PID);
	assert_true(exists(name));
	wal_proc_free(r.procs[0]);
	free(r.procs);
	wal_retire_fini(&r);
	json_decref(r.warnings);
	close(r.session_fd);
	unlink(path);
}

struct seen {
	int n;
	json_int_t pids[8];
};

static int note_line(json_t *line, void *arg)
{
	struct seen *s = arg;
	if (s->n < 8)
		s->pids[s->n] = num(line, "pid");
	s->n++;
	return 0;
}

static void test_read_skips(void **state)
{
	(void)state;
	/* 7: kept; garbage; 8: its pid_8/ is still there (the same process);
	 * 9: pid_9/ is a later process's (another end); a line not ended yet. */
	close(make_pid_dir(8, 5000));
	close(make_pid_dir(9, 7777));
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, ADA_RETIRED_NAME);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"format\":\"ada-manifest\",\"pid\":7,\"end_time_ns\":5000}\n"
	           "not json\n"
	           "{\"format\":\"ada-manifest\",\"pid\":8,\"end_time_ns\":5000}\n"
	           "{\"format\":\"other\",\"pid\":10}\n"
	           "{\"format\":\"ada-manifest\",\"pid\":9,\"end_time_ns\":5000}\n"
	           "{\"format\":\"ada-manif");
	fclose(f);
	struct seen s = {0};
	uint64_t bad = 0;
	assert_int_equal(ada_retired_foreach(dir, note_line, &s, &bad), 2);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.pids[0], 7);
	assert_int_equal(s.pids[1], 9);
	assert_int_equal(bad, 2); /* the cut last line is one being appended: not bad */
	/* No file: nothing, no error. */
	unlink(path);
	assert_int_equal(ada_retired_foreach(dir, note_line, &s, &bad), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_line_keys),
	    cmocka_unit_test_setup_teardown(test_retire_procs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retire_planted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_skips, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
