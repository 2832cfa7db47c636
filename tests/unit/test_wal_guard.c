/*
 * A fault in the arena in the middle of a manifest's build (WAL_GUARDED,
 * src/recorder/arena_internal.h): the target truncated its arena file
 * under the recorder's mapping, and the read's SIGBUS jumps to the fault
 * branch. What the write built so far must all be freed there (the
 * manifest, wal_manifest_abandon) -- a sub-object not yet linked into it
 * too: each builder reads the arena before it allocates. Only an
 * address-sanitizer build sees a leak (LeakSanitizer at exit): the
 * Release run checks that the fault is taken and the write given up.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "arena_internal.h"
#include "recorder_internal.h"

#define CONFIG "max_threads=2,index_events=4096,detail_bytes=65536"

static char guard_dir[] = "/tmp/ada_guard.XXXXXX";
static bool guard_made;

/* Removes the test's directory, failed or not. */
static int guard_teardown(void **state)
{
	(void)state;
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", guard_dir);
	return !guard_made || system(cmd) == 0 ? 0 : -1;
}

/* The manifest's write of a process whose arena file was cut to nothing
 * after the recorder mapped it: faults at the first read of the arena,
 * the write given up, nothing it built left (LeakSanitizer). */
static void test_manifest_fault_frees_all(void **state)
{
	(void)state;
	char path[64];
	assert_true(guard_made = mkdtemp(guard_dir) != NULL);
	snprintf(path, sizeof(path), "%s/%d.ring", guard_dir, (int)getpid());
	struct ada_arena_config cfg;
	assert_int_equal(ada_arena_config_parse(CONFIG, strlen(CONFIG), &cfg), 0);
	struct ada_arena *made = NULL, *a = NULL;
	assert_int_equal(ada_arena_create(path, &cfg, &made, NULL), 0);
	assert_int_equal(ada_arena_open(path, &a), 0);
	assert_int_equal(truncate(path, 0), 0);
	struct ada_recorder *r = calloc(1, sizeof(*r));
	struct wal_proc *p = calloc(1, sizeof(*p));
	assert_non_null(r);
	assert_non_null(p);
	p->pid = getpid();
	p->arena = a;
	p->arena_path = path;
	p->dir_fd = -1;
	assert_int_equal(wal_guard_install(), 0);
	volatile bool faulted = false;
	WAL_GUARDED(p->arena, wal_manifest_write(r, p, "recording"), {
		wal_manifest_abandon(r);
		faulted = true;
	});
	assert_true(faulted);
	assert_null(r->man_building);
	ada_arena_close(a);
	ada_arena_close(made);
	free(p);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_manifest_fault_frees_all, guard_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
