/*
 * A forked child's files made by the recorder from the note in its arena
 * (src/recorder/fork_files.c): a note with values the agent never writes
 * is refused (counted by reason, in the process's warnings, settled in
 * the arena so the child writes its own), never followed; the noted files
 * are linked only when they are the very files noted (inode), a planted
 * link or a replaced file refused and removed; the exit counts noted in
 * the arena are folded into the agent.json made the child's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fork_files.h"
#include "manifest.h"
#include "recorder_internal.h"
#include "test_arena.h"

#define PARENT 100
#define CHILD 200

/* A session directory with pid_100/ (two modules and agent.json, as an
 * agent writes them) and an empty pid_200/. */
struct sess {
	char dir[64];
	int sfd, pfd, cfd;
	uint64_t ino[3]; /* module_1.syms, module_2.syms, agent.json */
};

static uint64_t put(int dfd, const char *name, const char *text)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	return (uint64_t)st.st_ino;
}

static void sess_new(struct sess *s)
{
	strcpy(s->dir, "/tmp/ada_fork_files.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	s->sfd = open(s->dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(mkdirat(s->sfd, "pid_100", 0700), 0);
	assert_int_equal(mkdirat(s->sfd, "pid_200", 0700), 0);
	s->pfd = openat(s->sfd, "pid_100", O_RDONLY | O_DIRECTORY);
	s->cfd = openat(s->sfd, "pid_200", O_RDONLY | O_DIRECTORY);
	assert_true(s->sfd >= 0 && s->pfd >= 0 && s->cfd >= 0);
	put(s->pfd, "module_1.body", "b1");
	put(s->pfd, "module_2.body", "b2");
	s->ino[0] = put(s->pfd, "module_1.syms", "s1");
	s->ino[1] = put(s->pfd, "module_2.syms", "s2");
	s->ino[2] =
	    put(s->pfd, "agent.json",
	        "{\"pid\": 100, \"untraced_calls\": {\"agent_work\": 5, \"thread_exit\": 1},"
	        " \"unmatched_returns\": {\"returns\": 3}, \"stack_switches\": {},"
	        " \"recorder_gone\": {\"noticed\": false}, \"agent_json_writes\": 2,"
	        " \"symbol_files\": {\"written\": 2}, \"modules\": [{\"module_id\": 1},"
	        " {\"module_id\": 2}], \"argv\": [\"t\"]}");
}

static void sess_free(struct sess *s)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	assert_int_equal(system(cmd), 0);
	close(s->pfd);
	close(s->cfd);
	close(s->sfd);
}

static void note_of(const struct sess *s, struct ada_fork_note *n)
{
	memset(n, 0, sizeof(*n));
	n->parent_pid = PARENT;
	n->next_id = 3;
	n->n_modules = 2;
	n->json_ino = s->ino[2];
	n->mods[0] = (struct ada_fork_module){1, 0, s->ino[0]};
	n->mods[1] = (struct ada_fork_module){2, 0, s->ino[1]};
}

static uint64_t ino_at(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Every value the agent never writes: refused as a bad note. */
static void test_note_check(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	struct ada_fork_note n;
	note_of(&s, &n);
	assert_int_equal(wal_fork_note_check(&n, CHILD), 0);
	for (int k = 0; k < 10; k++) {
		note_of(&s, &n);
		switch (k) {
		case 0:
			n.parent_pid = 0;
			break;
		case 1:
			n.parent_pid = -7;
			break;
		case 2:
			n.parent_pid = 1 << 23;
			break;
		case 3:
			n.parent_pid = CHILD;
			break;
		case 4:
			n.n_modules = ADA_FORK_MODULES_MAX + 1;
			break;
		case 5:
			n.next_id = 0;
			break;
		case 6:
			n.mods[1].id = 1;
			break; /* twice */
		case 7:
			n.mods[1].id = 3;
			break; /* not below next_id */
		case 8:
			n.mods[0].syms_ino = 0;
			break;
		default:
			n.json_ino = 0;
			break;
		}
		assert_int_equal(wal_fork_note_check(&n, CHILD), WAL_FORK_BAD_NOTE + 1);
		assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n),
		                 WAL_FORK_BAD_NOTE + 1);
	}
	assert_int_equal(ino_at(s.cfd, "module_1.syms"), 0); /* nothing made */
	sess_free(&s);
}

/* The noted files linked (the very inodes); a name there already left
 * alone; no parent directory, no child directory refused. */
static void test_make_links(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	struct ada_fork_note n;
	note_of(&s, &n);
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), 0);
	assert_int_equal(ino_at(s.cfd, "module_1.syms"), s.ino[0]);
	assert_int_equal(ino_at(s.cfd, "module_2.syms"), s.ino[1]);
	assert_int_equal(ino_at(s.cfd, "agent.json"), s.ino[2]);
	assert_int_equal(ino_at(s.cfd, "module_2.body"), ino_at(s.pfd, "module_2.body"));
	/* Again (the child took its note back and linked them itself). */
	assert_int_equal(wal_fork_files_make(s.sfd, s.pfd, s.cfd, CHILD, &n), 0);
	n.parent_pid = 101;
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), WAL_FORK_NO_PARENT + 1);
	note_of(&s, &n);
	assert_int_equal(wal_fork_files_make(s.sfd, -1, -1, CHILD, &n), WAL_FORK_NO_DIR + 1);
	sess_free(&s);
}

/* A file replaced after the note, or a planted symlink: not linked. */
static void test_make_refuses_other_files(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	struct ada_fork_note n;
	note_of(&s, &n);
	/* Kept under another name: its inode is not given to the copy. */
	assert_int_equal(renameat(s.pfd, "module_2.syms", s.pfd, "kept"), 0);
	put(s.pfd, "module_2.syms", "copy");
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), WAL_FORK_NOT_NOTED + 1);
	assert_int_equal(ino_at(s.cfd, "module_2.syms"), 0); /* removed again */
	assert_int_equal(ino_at(s.cfd, "agent.json"), 0);
	assert_int_equal(renameat(s.pfd, "module_1.syms", s.pfd, "kept1"), 0);
	assert_int_equal(symlinkat("/etc/passwd", s.pfd, "module_1.syms"), 0);
	assert_int_equal(unlinkat(s.cfd, "module_1.syms", 0), 0);
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), WAL_FORK_NOT_NOTED + 1);
	assert_int_equal(ino_at(s.cfd, "module_1.syms"), 0);
	sess_free(&s);
}

/* The parent's agent.json rewritten after the fork (a dlopen added
 * module 3, count-only counts): the child's made from it as at the fork;
 * one that lists a noted module twice, or not at all, refused. */
static void test_make_derives_json(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	struct ada_fork_note n;
	note_of(&s, &n);
	assert_int_equal(renameat(s.pfd, "agent.json", s.pfd, "kept"), 0);
	put(s.pfd, "agent.json",
	    "{\"pid\": 100, \"modules\": [{\"module_id\": 1}, {\"module_id\": 2, \"unloaded\": "
	    "true}, {\"module_id\": 3}], \"count_only\": {\"functions\": []}}");
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), 0);
	int fd = openat(s.cfd, "agent.json", O_RDONLY);
	json_t *a = ada_json_loadfd(fd, 1 << 20);
	close(fd);
	json_t *mods = json_object_get(a, "modules");
	assert_int_equal(json_array_size(mods), 2);
	assert_true(json_is_false(json_object_get(json_array_get(mods, 1), "unloaded")));
	assert_null(json_object_get(a, "count_only"));
	assert_non_null(json_object_get(a, "fork_files"));
	assert_int_equal(json_integer_value(json_object_get(a, "pid")), PARENT);
	json_decref(a);
	assert_int_equal(unlinkat(s.cfd, "agent.json", 0), 0);
	assert_int_equal(unlinkat(s.pfd, "agent.json", 0), 0);
	put(s.pfd, "agent.json",
	    "{\"pid\": 100, \"modules\": [{\"module_id\": 1}, {\"module_id\": 1}, "
	    "{\"module_id\": 2}]}");
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), WAL_FORK_NOT_NOTED + 1);
	assert_int_equal(unlinkat(s.pfd, "agent.json", 0), 0);
	put(s.pfd, "agent.json", "{\"pid\": 100, \"modules\": [{\"module_id\": 1}]}");
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), WAL_FORK_NOT_NOTED + 1);
	assert_int_equal(ino_at(s.cfd, "agent.json"), 0);
	sess_free(&s);
}

static struct ada_arena *arena_new(void)
{
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 1;
	cfg.index_events = 64;
	cfg.spill_threads = 0;
	cfg.spill_events = 0;
	return test_arena_new(&cfg);
}

/* The drain's take: a hostile note refused, counted by its reason, told
 * in the process's warnings, settled REFUSED; a good one made, MADE; a
 * process that noted nothing looked at again. */
static void test_take(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	struct ada_recorder *r = calloc(1, sizeof(*r));
	struct wal_proc *p = calloc(1, sizeof(*p));
	assert_non_null(r);
	assert_non_null(p);
	r->session_fd = s.sfd;
	r->warnings = json_array();
	p->pid = CHILD;
	p->dir_fd = s.cfd;
	p->warnings = json_array();
	p->arena = arena_new();
	wal_fork_files_take(r, p);
	assert_false(p->fork_seen); /* nothing noted yet */
	struct ada_fork_note n;
	note_of(&s, &n);
	n.n_modules = 0xffffffffu; /* garbage: never used as a bound */
	ada_arena_fork_note(p->arena, &n);
	wal_fork_files_take(r, p);
	assert_true(p->fork_seen);
	assert_int_equal(r->fork_refused[WAL_FORK_BAD_NOTE], 1);
	assert_int_equal(r->fork_made, 0);
	assert_int_equal(json_array_size(p->warnings), 1);
	assert_int_equal(ada_arena_fork_state(p->arena), ADA_FORK_REFUSED);
	assert_int_equal(ino_at(s.cfd, "agent.json"), 0);
	json_t *c = wal_fork_counts_json(r);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(c, "refused"), "bad_note")), 1);
	json_decref(c);
	ada_arena_close(p->arena);
	p->arena = arena_new();
	p->fork_seen = false;
	note_of(&s, &n);
	ada_arena_fork_note(p->arena, &n);
	wal_fork_files_take(r, p);
	assert_int_equal(r->fork_made, 1);
	assert_int_equal(ada_arena_fork_state(p->arena), ADA_FORK_MADE);
	assert_int_equal(ino_at(s.cfd, "agent.json"), s.ino[2]);
	ada_arena_close(p->arena);
	json_decref(p->warnings);
	json_decref(r->warnings);
	free(p);
	free(r);
	sess_free(&s);
}

/* The exit counts noted in the arena reach the manifest: the parent's
 * agent.json linked, made the child's, with the child's counts. */
static void test_exit_fold(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	struct ada_fork_note n;
	note_of(&s, &n);
	assert_int_equal(wal_fork_files_make(s.sfd, -1, s.cfd, CHILD, &n), 0);
	struct ada_arena *a = arena_new();
	struct ada_fork_exit e, got;
	memset(&e, 0, sizeof(e));
	assert_false(ada_arena_fork_exit_read(a, &got));
	for (int i = 0; i < ADA_FORK_EXIT_COUNTS; i++)
		e.untraced[i] = 10 + (uint64_t)i;
	e.gone_noticed = 1;
	e.gone_drops = 77;
	ada_arena_fork_exit(a, &e);
	assert_true(ada_arena_fork_exit_read(a, &got));
	json_t *root = json_pack("{s:i}", "pid", CHILD);
	wal_manifest_agent(root, s.cfd, NULL, NULL, &got, NULL);
	json_t *h = json_object_get(root, "hook");
	assert_non_null(h);
	json_t *un = json_object_get(h, "untraced_calls");
	assert_int_equal(json_integer_value(json_object_get(un, "agent_work")), 10);
	assert_int_equal(json_integer_value(json_object_get(un, "thread_exit")), 18);
	assert_int_equal(json_integer_value(json_object_get(un, "recorder_gone")), 19);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(h, "unmatched_returns"), "returns")),
	    14);
	json_t *rg = json_object_get(h, "recorder_gone");
	assert_true(json_is_true(json_object_get(rg, "noticed")));
	assert_int_equal(json_integer_value(json_object_get(rg, "drain_lag_drops")), 77);
	assert_string_equal(json_string_value(json_object_get(h, "exit_counts")), "arena");
	assert_int_equal(json_integer_value(json_object_get(h, "inherited_from")), PARENT);
	assert_int_equal(json_integer_value(json_object_get(h, "agent_json_writes")), 0);
	json_decref(root);
	/* Written back as the child's: the parent's file untouched. */
	assert_true(ino_at(s.cfd, "agent.json") != s.ino[2]);
	assert_int_equal(ino_at(s.pfd, "agent.json"), s.ino[2]);
	ada_arena_close(a);
	sess_free(&s);
}

/* A process's own agent.json whose counts at its exit went into its
 * arena (ada_arena_exit_note): folded in and written back as its own --
 * no inherited_from -- and never taken for a fork child's counts, nor
 * these for its. */
static void test_exit_own_fold(void **state)
{
	(void)state;
	struct sess s;
	sess_new(&s);
	uint64_t before =
	    put(s.cfd, "agent.json",
	        "{\"pid\": 200, \"untraced_calls\": {\"agent_work\": 5, \"thread_exit\": 0},"
	        " \"unmatched_returns\": {\"returns\": 0}, \"stack_switches\": {},"
	        " \"recorder_gone\": {\"noticed\": false}, \"agent_json_writes\": 1,"
	        " \"modules\": [{\"module_id\": 1}], \"argv\": [\"t\"]}");
	struct ada_arena *a = arena_new();
	struct ada_fork_exit e, got;
	memset(&e, 0, sizeof(e));
	for (int i = 0; i < ADA_FORK_EXIT_COUNTS; i++)
		e.untraced[i] = 20 + (uint64_t)i;
	ada_arena_exit_note(a, &e);
	assert_false(ada_arena_fork_exit_read(a, &got)); /* not a fork child's */
	assert_true(ada_arena_exit_note_read(a, &got));
	json_t *root = json_pack("{s:i}", "pid", CHILD);
	wal_manifest_agent(root, s.cfd, NULL, NULL, NULL, &got);
	json_t *h = json_object_get(root, "hook");
	assert_non_null(h);
	json_t *un = json_object_get(h, "untraced_calls");
	assert_int_equal(json_integer_value(json_object_get(un, "agent_work")), 20);
	assert_int_equal(json_integer_value(json_object_get(un, "thread_exit")), 28);
	assert_string_equal(json_string_value(json_object_get(h, "exit_counts")), "arena");
	assert_null(json_object_get(h, "inherited_from"));
	assert_int_equal(json_integer_value(json_object_get(h, "agent_json_writes")), 1);
	json_decref(root);
	/* Written back (a new file by rename), with the counts. */
	assert_true(ino_at(s.cfd, "agent.json") != before);
	int fd = openat(s.cfd, "agent.json", O_RDONLY);
	json_t *back = json_loadfd(fd, 0, NULL);
	close(fd);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(back, "untraced_calls"),
	                                                    "agent_work")),
	                 20);
	json_decref(back);
	/* A fork child's counts published instead are not taken for these. */
	ada_arena_fork_exit(a, &e);
	assert_false(ada_arena_exit_note_read(a, &got));
	ada_arena_close(a);
	sess_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_note_check),
	    cmocka_unit_test(test_make_links),
	    cmocka_unit_test(test_make_refuses_other_files),
	    cmocka_unit_test(test_make_derives_json),
	    cmocka_unit_test(test_take),
	    cmocka_unit_test(test_exit_fold),
	    cmocka_unit_test(test_exit_own_fold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
