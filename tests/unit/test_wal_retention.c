/*
 * Retention generations (--max-disk-mb) through the recorder core: a
 * forked child links the producer API and emits N events on one thread
 * whose function_id is the event's global sequence number; the recorder
 * runs with a small budget. Checks: the kept files are index.g<G>.atf
 * (ascending G) then index.atf, each a standalone file whose index_seq
 * starts at 0; the manifest's first_seq of each file is the function_id
 * (= global seq) of its first event and matches the events before it;
 * retired_events + kept events = N; the bytes on disk stay in budget.
 *
 * A rotation whose rename is refused (a directory planted at the
 * generation's name) retires that file at once; the rotations after it
 * keep theirs as generations, each listed in the manifest and none left
 * on disk unlisted.
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
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"
#include "recorder.h"

#define N_EVENTS 3000000ull /* 96 MB of events */
#define BUDGET (8ull << 20)

static void child(const struct ada_recorder *r, const char *cfg)
{
	setenv("ADA_ARENA_DIR", ada_recorder_arena_dir(r), 1);
	setenv("ADA_RING_CONFIG", cfg, 1);
	if (ada_producer_init_from_env() < 0)
		_exit(3);
	for (uint64_t i = 0; i < N_EVENTS; i++)
		ada_emit(i, i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	_exit(0);
}

/* A finalized file: its events (ada's wait markers included, as the
 * manifest counts them), the first and last of the program's own
 * (function_id = its global seq; UINT64_MAX when none) and its size. */
static void file_info(const char *path, uint64_t *first, uint64_t *last, uint64_t *count,
                      uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	struct atf_index_header h;
	assert_int_equal(pread(fd, &h, 64, 0), 64);
	assert_memory_equal(h.magic, "ATI2", 4);
	assert_int_equal((uint64_t)st.st_size, h.footer_offset + 64);
	*count = (h.footer_offset - 64) / 32;
	*first = *last = UINT64_MAX;
	static struct atf_index_event e[4096];
	for (uint64_t at = 0; at < *count;) {
		uint64_t n = *count - at < 4096 ? *count - at : 4096;
		assert_int_equal(pread(fd, e, n * 32, (off_t)(64 + at * 32)), (ssize_t)(n * 32));
		for (uint64_t i = 0; i < n; i++) {
			if (e[i].call_depth == ADA_WAIT_MARKER_BEGIN ||
			    e[i].call_depth == ADA_WAIT_MARKER_END)
				continue;
			if (*first == UINT64_MAX)
				*first = e[i].function_id;
			*last = e[i].function_id;
		}
		at += n;
	}
	*size = (uint64_t)st.st_size;
	close(fd);
}

static void test_generations(void **state)
{
	(void)state;
	char out[] = "/tmp/ada_wal_ret_XXXXXX";
	assert_non_null(mkdtemp(out));
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 2;
	cfg.timestamp_source = ADA_TS_CLOCK; /* no calibration wait needed */
	char txt[ADA_ARENA_CONFIG_TEXT_MAX];
	assert_true(ada_arena_config_format(&cfg, txt, sizeof(txt)) > 0);
	const char *argv[] = {"retention-child", NULL};
	struct ada_recorder_opts o = {
	    .out_dir = out,
	    .drain_cpu = -1,
	    .max_disk_bytes = BUDGET,
	    .follow = true,
	    .force_clock = true,
	    .ring_config = txt,
	    .program_argv = argv,
	};
	struct ada_recorder *r;
	assert_int_equal(ada_recorder_new(&o, &r), 0);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t pid = fork();
	if (pid == 0)
		child(r, txt);
	assert_int_equal(ada_recorder_start(r, pid), 0);
	struct ada_record_summary sum;
	assert_int_equal(ada_recorder_wait(r, &sum), 0);
	assert_int_equal(sum.exit_status, 0);
	/* the program's events and ada's two markers per wait for room */
	assert_true(sum.events >= N_EVENTS);

	char pid_dir[512], path[600];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", ada_recorder_session_dir(r), (int)pid);
	snprintf(path, sizeof(path), "%s/manifest.json", pid_dir);
	json_t *man = json_load_file(path, 0, NULL);
	assert_non_null(man);
	json_t *t = json_array_get(json_object_get(man, "threads"), 0);
	json_t *files = json_object_get(t, "files");
	uint64_t retired = (uint64_t)json_integer_value(json_object_get(t, "retired_events"));
	assert_true(retired > 0);
	assert_true(json_array_size(files) >= 2); /* generations kept besides index.atf */
	uint64_t next_seq = UINT64_MAX, kept = 0, bytes = 0;
	int64_t last_gen = -1;
	for (size_t i = 0; i < json_array_size(files); i++) {
		json_t *f = json_array_get(files, i);
		json_t *g = json_object_get(f, "generation");
		bool current = i + 1 == json_array_size(files);
		assert_true(current ? json_is_null(g) : json_is_integer(g));
		if (!current) {
			assert_true(json_integer_value(g) > last_gen); /* ascending G */
			last_gen = json_integer_value(g);
		}
		snprintf(path, sizeof(path), "%s/%s", pid_dir,
		         json_string_value(json_object_get(f, "path")));
		uint64_t first, last, count, size;
		file_info(path, &first, &last, &count, &size);
		assert_int_equal(count, json_integer_value(json_object_get(f, "events")));
		/* the kept generations continue each other, seq by seq */
		if (first != UINT64_MAX) {
			if (next_seq != UINT64_MAX)
				assert_int_equal(first, next_seq);
			next_seq = last + 1;
		}
		kept += count;
		bytes += size;
	}
	uint64_t waits = (uint64_t)json_integer_value(
	    json_object_get(json_object_get(man, "metrics"), "ring_waits"));
	assert_int_equal(retired + kept, N_EVENTS + 2 * waits);
	assert_int_equal(sum.events, N_EVENTS + 2 * waits);
	assert_int_equal(next_seq, N_EVENTS); /* the newest kept is the last */
	assert_true(bytes <= BUDGET);
	json_decref(man);
	ada_recorder_free(r);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
	assert_int_equal(system(cmd), 0);
}

#define REFUSED_EVENTS 1000000ull /* 32 MB: about 15 rotations in 8 MiB */

/* The child of test_rename_refused: a few events (its thread's file is
 * made), then the rest once the parent wrote a byte into go. */
static void child_held(const struct ada_recorder *r, const char *cfg, int go)
{
	setenv("ADA_ARENA_DIR", ada_recorder_arena_dir(r), 1);
	setenv("ADA_RING_CONFIG", cfg, 1);
	if (ada_producer_init_from_env() < 0)
		_exit(3);
	uint64_t i = 0;
	for (; i < 10; i++)
		ada_emit(i, i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	char c;
	if (read(go, &c, 1) != 1)
		_exit(4);
	for (; i < REFUSED_EVENTS; i++)
		ada_emit(i, i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	_exit(0);
}

/* Whether files (a manifest thread's) lists thread_0/name. */
static bool listed(json_t *files, const char *name)
{
	char want[300];
	snprintf(want, sizeof(want), "thread_0/%s", name);
	for (size_t i = 0; i < json_array_size(files); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(files, i), "path")),
		            want))
			return true;
	return false;
}

static void test_rename_refused(void **state)
{
	(void)state;
	char out[] = "/tmp/ada_wal_ret_XXXXXX";
	assert_non_null(mkdtemp(out));
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 2;
	cfg.timestamp_source = ADA_TS_CLOCK;
	char txt[ADA_ARENA_CONFIG_TEXT_MAX];
	assert_true(ada_arena_config_format(&cfg, txt, sizeof(txt)) > 0);
	const char *argv[] = {"retention-child", NULL};
	struct ada_recorder_opts o = {
	    .out_dir = out,
	    .drain_cpu = -1,
	    .max_disk_bytes = BUDGET,
	    .follow = true,
	    .force_clock = true,
	    .ring_config = txt,
	    .program_argv = argv,
	};
	struct ada_recorder *r;
	assert_int_equal(ada_recorder_new(&o, &r), 0);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		child_held(r, txt, go[0]);
	}
	close(go[0]);
	assert_int_equal(ada_recorder_start(r, pid), 0);
	char tdir[512], path[600];
	snprintf(tdir, sizeof(tdir), "%s/pid_%d/thread_0", ada_recorder_session_dir(r), (int)pid);
	snprintf(path, sizeof(path), "%s/index.atf", tdir);
	for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++) /* a guard, not a timing */
		usleep(10000);
	snprintf(path, sizeof(path), "%s/index.g0.atf", tdir);
	assert_int_equal(mkdir(path, 0700), 0); /* the first rotation's rename fails */
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	struct ada_record_summary sum;
	assert_int_equal(ada_recorder_wait(r, &sum), 0);
	assert_int_equal(sum.exit_status, 0);

	snprintf(path, sizeof(path), "%s/pid_%d/manifest.json", ada_recorder_session_dir(r),
	         (int)pid);
	json_t *man = json_load_file(path, 0, NULL);
	assert_non_null(man);
	json_t *t = json_array_get(json_object_get(man, "threads"), 0);
	json_t *files = json_object_get(t, "files");
	assert_true(json_array_size(files) >= 2); /* generations kept after the refusal */
	DIR *d = opendir(tdir);
	assert_non_null(d);
	struct dirent *de;
	unsigned gens = 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "index.g", 7) || de->d_type != DT_REG)
			continue;
		gens++;
		if (!listed(files, de->d_name))
			fail_msg("%s is on disk and not in the manifest", de->d_name);
	}
	closedir(d);
	assert_true(gens >= 1);
	json_decref(man);
	ada_recorder_free(r);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generations),
	    cmocka_unit_test(test_rename_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
