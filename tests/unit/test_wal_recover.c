/*
 * `ada recover` (src/recorder/recover.c) on a session whose recorder was
 * killed between a thread directory's mkdir and its index file's
 * creation: thread_K/ is there, empty. Recover takes the session (the
 * manifest is marked recovered), lists no file for that thread and sorts
 * nothing: qsort's array is NULL then (the undefined-behaviour build
 * checks). No arena: the manifest names none.
 *
 * The manifest is input (the recorded user can rewrite it): recover, run
 * as root, removes a dead process's arena and its arena directory only
 * when the arena is a file in that directory and the directory is named
 * as the recorder names one (ada-*). A manifest naming a valid arena
 * and an empty directory of someone else's (/run/sshd) as its
 * arena_dir must leave that directory alone, and a device named as the
 * arena (/dev/watchdog arms on open) is not opened. An ada-* directory
 * that ada could not have made (not 0700, or in a place others can
 * write) is left with its arena too, and that is said.
 *
 * A killed recording's processes the recorder had finalized ("complete")
 * name arenas it removed once drained: recover says nothing of them. The
 * arenas of processes it had not finalized that are gone are counted for
 * one sentence (rep.arenas_gone) and named in each one's manifest, not
 * one notice (a line on stderr) each.
 *
 * A process the recorder drained and finished but whose final manifest
 * it could not write (a full disk) has its arena removed all the same:
 * pid_N/.ring_slots says it was drained (wal_ring_table_drained), and
 * recover says the manifest was not final, not that the arena is gone
 * (not counted in rep.arenas_gone). Before, such a process counted as an
 * arena gone with its rings' events "not recovered".
 *
 * A rotation whose pid_N/.ring_slots put fails (forced: the table's
 * descriptor made read-only) leaves the record of the file before it,
 * now index.g0.atf. Its base taken for the current index.atf's would
 * append ring events already on disk a second time; its file generation
 * says it is the rotated file's, and recover finds the current file's
 * end by time instead: every ring event on disk once.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "manifest.h"
#include "recorder_internal.h"
#include "ring.h"

#define RECOVER_PID 4194301 /* past the default pid_max: no such process */

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ada_recover.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_empty_thread_dir(void **state)
{
	(void)state;
	char pid_dir[128], tdir[160];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, RECOVER_PID);
	snprintf(tdir, sizeof(tdir), "%s/thread_0", pid_dir);
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	assert_int_equal(mkdir(tdir, 0700), 0);
	json_t *m = ada_manifest_new(RECOVER_PID);
	json_object_set_new(m, "state", json_string("recording"));
	json_object_set_new(m, "clock", json_pack("{s:s}", "source", "clock_gettime"));
	assert_int_equal(ada_manifest_write(pid_dir, m), 0);
	json_decref(m);

	struct ada_recover_report rep = {0};
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.files, 0);
	assert_int_equal(rep.events_on_disk, 0);
	json_t *man = NULL;
	assert_int_equal(ada_manifest_read(pid_dir, &man), 0);
	assert_string_equal(ada_manifest_state(man), "recovered");
	json_decref(man);
}

/* An arena at path made by a child that has exited: its pid, dead. */
static pid_t recover_dead_arena(const char *path)
{
	static const char cfgtext[] = "max_threads=1,index_events=64,detail_bytes=0";
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ada_arena_config cfg;
		struct ada_arena *a = NULL;
		ada_arena_config_default(&cfg);
		_exit(ada_arena_config_parse(cfgtext, strlen(cfgtext), &cfg) == 0 &&
		              ada_arena_create(path, &cfg, &a, NULL) == 0
		          ? 0
		          : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return pid;
}

/* The sentences recover told (rep.notice: what `ada recover` prints). */
static char told[4096];

static void recover_notice(void *arg, const char *sentence)
{
	(void)arg;
	size_t n = strlen(told);
	snprintf(told + n, sizeof(told) - n, "%s\n", sentence);
}

/* A session of one process whose manifest names arena and arena_dir. */
static void recover_with_arena(const char *arena, const char *adir, pid_t pid)
{
	char pid_dir[128];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, (int)pid);
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	json_t *m = ada_manifest_new((int32_t)pid);
	json_object_set_new(m, "state", json_string("recording"));
	json_object_set_new(m, "clock", json_pack("{s:s}", "source", "clock_gettime"));
	json_object_set_new(m, "arena", json_string(arena));
	json_object_set_new(m, "arena_dir", json_string(adir));
	assert_int_equal(ada_manifest_write(pid_dir, m), 0);
	json_decref(m);
	struct ada_recover_report rep = {.notice = recover_notice};
	told[0] = '\0';
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.arenas_found, 1);
}

static void test_arena_dir_not_ours(void **state)
{
	(void)state;
	char other[128], victim[128], arena[160];
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(mkdir(victim, 0700), 0);
	snprintf(arena, sizeof(arena), "%s/1.ring", other);
	pid_t pid = recover_dead_arena(arena);
	recover_with_arena(arena, victim, pid);
	struct stat st;
	assert_int_equal(stat(victim, &st), 0); /* not rmdir'd */
	assert_int_equal(stat(arena, &st), 0);  /* not in arena_dir: not removed */
}

static void test_arena_dir_removed(void **state)
{
	(void)state;
	char adir[128], arena[160];
	snprintf(adir, sizeof(adir), "%s/ada-session-x", dir);
	assert_int_equal(mkdir(adir, 0700), 0);
	snprintf(arena, sizeof(arena), "%s/1.ring", adir);
	pid_t pid = recover_dead_arena(arena);
	recover_with_arena(arena, adir, pid);
	struct stat st;
	assert_int_equal(stat(arena, &st), -1);
	assert_int_equal(stat(adir, &st), -1);
}

/* An ada-* directory of mode 0755 (mkdtemp makes 0700): not ada's. */
static void test_arena_dir_mode(void **state)
{
	(void)state;
	char adir[128], arena[160];
	snprintf(adir, sizeof(adir), "%s/ada-session-x", dir);
	assert_int_equal(mkdir(adir, 0700), 0);
	assert_int_equal(chmod(adir, 0755), 0);
	snprintf(arena, sizeof(arena), "%s/1.ring", adir);
	pid_t pid = recover_dead_arena(arena);
	recover_with_arena(arena, adir, pid);
	struct stat st;
	assert_int_equal(stat(arena, &st), 0);
	assert_int_equal(stat(adir, &st), 0);
	assert_non_null(strstr(told, "not a directory ada made for its arena"));
}

/* An ada-* directory in a directory anyone may write (not sticky): whoever
 * could have swapped it; left. */
static void test_arena_dir_open_place(void **state)
{
	(void)state;
	char place[128], adir[160], arena[192];
	snprintf(place, sizeof(place), "%s/open", dir);
	assert_int_equal(mkdir(place, 0700), 0);
	assert_int_equal(chmod(place, 0777), 0);
	snprintf(adir, sizeof(adir), "%s/ada-session-x", place);
	assert_int_equal(mkdir(adir, 0700), 0);
	snprintf(arena, sizeof(arena), "%s/1.ring", adir);
	pid_t pid = recover_dead_arena(arena);
	recover_with_arena(arena, adir, pid);
	struct stat st;
	assert_int_equal(stat(arena, &st), 0);
	assert_int_equal(stat(adir, &st), 0);
	assert_non_null(strstr(told, "not a directory ada made for its arena"));
}

static void test_arena_device(void **state)
{
	(void)state;
	char pid_dir[128];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, RECOVER_PID);
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	json_t *m = ada_manifest_new(RECOVER_PID);
	json_object_set_new(m, "state", json_string("recording"));
	json_object_set_new(m, "arena", json_string("/dev/zero"));
	assert_int_equal(ada_manifest_write(pid_dir, m), 0);
	json_decref(m);
	struct ada_recover_report rep = {0};
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.arenas_found, 0);
	json_t *man = NULL;
	assert_int_equal(ada_manifest_read(pid_dir, &man), 0);
	char *w = json_dumps(json_object_get(man, "warnings"), 0);
	assert_non_null(strstr(w, "ignored arena /dev/zero: not a regular file (not opened)"));
	free(w);
	json_decref(man);
}

/* One process's directory with a manifest in state, naming arena. */
static void recover_pid_naming(int pid, const char *state, const char *arena)
{
	char pid_dir[128];
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, pid);
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	json_t *m = ada_manifest_new(pid);
	json_object_set_new(m, "state", json_string(state));
	json_object_set_new(m, "clock", json_pack("{s:s}", "source", "clock_gettime"));
	json_object_set_new(m, "arena", json_string(arena));
	assert_int_equal(ada_manifest_write(pid_dir, m), 0);
	json_decref(m);
}

static void gone_notice(void *arg, const char *sentence)
{
	(*(int *)arg) += strstr(sentence, "is gone") != NULL;
}

static void test_arenas_gone_counted(void **state)
{
	(void)state;
	char arena[128];
	for (int i = 0; i < 40; i++) { /* drained and finalized: removed */
		snprintf(arena, sizeof(arena), "%s/shm/%d.ring", dir, RECOVER_PID - 1 - i);
		recover_pid_naming(RECOVER_PID - 1 - i, "complete", arena);
	}
	for (int i = 0; i < 2; i++) { /* not finalized: genuinely missing */
		snprintf(arena, sizeof(arena), "%s/shm/%d.ring", dir, RECOVER_PID - 100 - i);
		recover_pid_naming(RECOVER_PID - 100 - i, "recording", arena);
	}
	int notices = 0;
	struct ada_recover_report rep = {.notice = gone_notice, .notice_arg = &notices};
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.pids, 42);
	assert_int_equal(notices, 0);
	assert_int_equal(rep.arenas_gone, 2);
	char pid_dir[128];
	json_t *man = NULL;
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, RECOVER_PID - 100);
	assert_int_equal(ada_manifest_read(pid_dir, &man), 0);
	char *w = json_dumps(json_object_get(man, "warnings"), 0);
	assert_non_null(strstr(w, "is gone: whatever its rings still held is not recovered"));
	free(w);
	json_decref(man);
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, RECOVER_PID - 1);
	assert_int_equal(ada_manifest_read(pid_dir, &man), 0);
	assert_string_equal(ada_manifest_state(man), "complete"); /* untouched */
	json_decref(man);
}

/* pid_N/.ring_slots as the drain leaves a finished process whose final
 * manifest failed: slot 0's and slot 1's records, then record 0 replaced
 * by the drained record. */
static void drained_table(const char *pid_dir)
{
	struct wal_proc p = {.dir = (char *)pid_dir, .ring_table_fd = -1};
	p.dir_fd = open(pid_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);
	assert_int_equal(wal_ring_table_drained(&p), -ENOENT); /* no table yet */
	for (uint32_t slot = 0; slot < 2; slot++) {
		struct wal_thread t = {.p = &p, .slot = slot, .seq = slot, .slot_gen = 1};
		assert_int_equal(wal_ring_table_put(&p, &t), 0);
	}
	assert_int_equal(wal_ring_table_drained(&p), 0);
	wal_ring_table_close(&p);
	close(p.dir_fd);
}

static void test_drained_not_gone(void **state)
{
	(void)state;
	char arena[128], pid_dir[128];
	snprintf(arena, sizeof(arena), "%s/shm/%d.ring", dir, RECOVER_PID);
	recover_pid_naming(RECOVER_PID, "recording", arena); /* the early manifest */
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, RECOVER_PID);
	drained_table(pid_dir);
	struct wal_ring_table tb;
	wal_ring_table_load(pid_dir, &tb);
	assert_true(tb.drained);
	assert_int_equal(tb.bad, 0);
	assert_int_equal(tb.n, 1); /* slot 1's; slot 0's replaced */
	wal_ring_table_free(&tb);
	int notices = 0;
	struct ada_recover_report rep = {.notice = gone_notice, .notice_arg = &notices};
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.pids, 1);
	assert_int_equal(rep.arenas_gone, 0);
	assert_int_equal(notices, 0);
	json_t *man = NULL;
	assert_int_equal(ada_manifest_read(pid_dir, &man), 0);
	assert_string_equal(ada_manifest_state(man), "recovered");
	char *w = json_dumps(json_object_get(man, "warnings"), 0);
	assert_null(strstr(w, "is gone"));
	assert_non_null(strstr(w, "could not write its final manifest"));
	free(w);
	json_decref(man);
}

#define ROT_EVENTS 40 /* in the ring: 0-9 in index.g0.atf, 10-29 in index.atf */

/* A child that emits ROT_EVENTS calls into an arena it makes in adir and
 * exits: its slot 0 holds them all, nothing released. */
static pid_t rot_child(const char *adir)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (ada_producer_init(adir, "max_threads=1,index_events=64,detail_bytes=0") != 0)
			_exit(1);
		for (uint64_t i = 0; i < ROT_EVENTS; i++)
			ada_emit_call(i + 1);
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return pid;
}

/* An index file as a killed drain leaves it: no header yet (recover gives
 * it one), then events [from, to) of ev. */
static void rot_file(const char *tdir, const char *name, const struct atf_index_event *ev,
                     size_t from, size_t to)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", tdir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	static const char header[64];
	assert_int_equal(fwrite(header, 1, sizeof(header), f), sizeof(header));
	assert_int_equal(fwrite(ev + from, sizeof(*ev), to - from, f), to - from);
	assert_int_equal(fclose(f), 0);
}

/* pid_N/.ring_slots as the drain leaves it: index.atf's record (file
 * generation 0, base 0), then the rotation's put (base 10, file
 * generation 1) failing. */
static void rot_table(const char *pid_dir, uint32_t slot_gen)
{
	struct wal_proc p = {.dir = (char *)pid_dir, .ring_table_fd = -1};
	p.dir_fd = open(pid_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(p.dir_fd >= 0);
	struct wal_thread t = {.p = &p, .slot = 0, .seq = 0, .slot_gen = slot_gen};
	assert_int_equal(wal_ring_table_put(&p, &t), 0);
	char path[256];
	snprintf(path, sizeof(path), "%s/.ring_slots", pid_dir);
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	close(p.ring_table_fd);
	p.ring_table_fd = ro; /* the fault: the next pwrite fails */
	t.ring_next = 10;
	t.next_gen = 1;
	assert_true(wal_ring_table_put(&p, &t) < 0);
	wal_ring_table_close(&p);
	close(p.dir_fd);
}

static void test_rotation_put_failed(void **state)
{
	(void)state;
	char adir[128], arena[192], pid_dir[128], tdir[160];
	snprintf(adir, sizeof(adir), "%s/ada-rot", dir);
	assert_int_equal(mkdir(adir, 0700), 0);
	pid_t pid = rot_child(adir);
	snprintf(arena, sizeof(arena), "%s/%d.ring", adir, (int)pid);
	/* The ring's events, given times that surely increase. */
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_open(arena, &a), 0);
	const struct atf_index_event *ev;
	assert_int_equal(ada_index_ring_peek(a, 0, &ev), ROT_EVENTS);
	struct atf_index_event copy[ROT_EVENTS];
	for (size_t i = 0; i < ROT_EVENTS; i++) {
		((struct atf_index_event *)ev)[i].timestamp_ns = 1000 * (i + 1);
		copy[i] = ev[i];
	}
	struct ada_slot_info si;
	ada_arena_slot_info(a, 0, &si);
	ada_arena_close(a);

	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", dir, (int)pid);
	snprintf(tdir, sizeof(tdir), "%s/thread_0", pid_dir);
	assert_int_equal(mkdir(pid_dir, 0700), 0);
	assert_int_equal(mkdir(tdir, 0700), 0);
	rot_file(tdir, "index.g0.atf", copy, 0, 10);
	rot_file(tdir, "index.atf", copy, 10, 30);
	rot_table(pid_dir, si.generation);
	json_t *m = ada_manifest_new((int32_t)pid);
	json_object_set_new(m, "state", json_string("recording"));
	json_object_set_new(m, "clock", json_pack("{s:s}", "source", "clock_gettime"));
	json_object_set_new(m, "arena", json_string(arena));
	json_object_set_new(m, "arena_dir", json_string(adir));
	assert_int_equal(ada_manifest_write(pid_dir, m), 0);
	json_decref(m);

	struct ada_recover_report rep = {0};
	assert_int_equal(ada_wal_recover(dir, &rep), 0);
	assert_int_equal(rep.arenas_found, 1);
	/* Events 30-39 only: none of 10-29 a second time. */
	assert_int_equal(rep.events_from_arena, ROT_EVENTS - 30);
	assert_int_equal(rep.events_on_disk, ROT_EVENTS);
	assert_int_equal(rep.ring_records_rejected, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_empty_thread_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arena_dir_not_ours, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arena_dir_removed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arena_device, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arenas_gone_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drained_not_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rotation_put_failed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arena_dir_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arena_dir_open_place, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
