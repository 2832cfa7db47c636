/*
 * The drain's live view (src/recorder/live.c, ada_recorder_live) through the
 * recorder core: a forked child links the producer API, emits N events and
 * then waits on a pipe; two reader threads copy the view over and over
 * while the drain publishes it (TSan runs this: the view is shared only
 * under the publish mutex). Checks: the view is there from the start, its
 * counts never exceed what was emitted and never go back, it reaches N
 * while the child waits (a poll on a condition, bounded), and the final
 * view after the end says ended with N events, like the summary.
 *
 * A process's warning the recorder rewrites in place (the ring table's
 * "N index files", wal_ring_table_failed) reads in the view as the
 * process's array says it now, while it runs and once it has finished.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder_internal.h"
#include "ring.h"

#define N_EVENTS 200000ull

static void child(const struct ada_recorder *r, const char *cfg, int rfd)
{
	setenv("ADA_ARENA_DIR", ada_recorder_arena_dir(r), 1);
	setenv("ADA_RING_CONFIG", cfg, 1);
	if (ada_producer_init_from_env() < 0)
		_exit(3);
	for (uint64_t i = 0; i < N_EVENTS; i++)
		ada_emit(i, i & 1 ? ATF_EVENT_RETURN : ATF_EVENT_CALL, 1);
	char c;
	_exit(read(rfd, &c, 1) == 1 ? 0 : 4); /* until the test has looked */
}

struct reader {
	struct ada_recorder *r;
	atomic_int *stop;
	uint64_t reads, bad; /* this reader's own */
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct ada_recorder_live *v = malloc(sizeof(*v));
	uint64_t last = 0, last_seq = 0;
	for (;;) {
		/* one more read after stop: the final view is published by then */
		bool last_round = atomic_load(rd->stop);
		if (ada_recorder_live(rd->r, v) == 0) {
			rd->reads++;
			/* never more than emitted, never backwards, one process */
			if (v->events > N_EVENTS || v->events < last || v->seq < last_seq ||
			    v->nprocs > 1)
				rd->bad++;
			last = v->events;
			last_seq = v->seq;
		}
		if (last_round)
			break;
	}
	free(v);
	return NULL;
}

static void test_live_view(void **state)
{
	(void)state;
	char out[] = "/tmp/ada_wal_live_XXXXXX";
	assert_non_null(mkdtemp(out));
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 2;
	cfg.timestamp_source = ADA_TS_CLOCK;
	/* room for every event: no wait for the drain, so no wait markers
	 * (docs/format.md) and the view's count is the program's */
	cfg.index_events = 262144;
	char txt[ADA_ARENA_CONFIG_TEXT_MAX];
	assert_true(ada_arena_config_format(&cfg, txt, sizeof(txt)) > 0);
	const char *argv[] = {"live-child", NULL};
	struct ada_recorder_opts o = {.out_dir = out,
	                              .drain_cpu = -1,
	                              .follow = true,
	                              .force_clock = true,
	                              .ring_config = txt,
	                              .program_argv = argv,
	                              .detail_mode = ADA_DETAIL_NEVER};
	struct ada_recorder *r;
	assert_int_equal(ada_recorder_new(&o, &r), 0);
	struct ada_recorder_live *v = malloc(sizeof(*v));
	assert_int_equal(ada_recorder_live(r, v), -EAGAIN); /* nothing published yet */
	int p[2];
	assert_int_equal(pipe(p), 0);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		child(r, txt, p[0]);
	}
	close(p[0]);
	assert_int_equal(ada_recorder_start(r, pid), 0);
	atomic_int stop = 0;
	struct reader rd[2] = {{.r = r, .stop = &stop}, {.r = r, .stop = &stop}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &rd[i]), 0);
	/* The child waits: the view must reach N (bounded poll, 120 s). */
	int tries = 0;
	while ((ada_recorder_live(r, v) < 0 || v->events < N_EVENTS) && tries++ < 120000)
		usleep(1000);
	assert_int_equal(v->events, N_EVENTS);
	assert_int_equal(v->nprocs, 1);
	assert_int_equal(v->procs[0].pid, pid);
	assert_false(v->procs[0].finished);
	assert_false(v->ended);
	assert_int_equal(v->detail_mode, ADA_DETAIL_NEVER);
	for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
		assert_int_equal(v->drops[k], 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	close(p[1]);
	struct ada_record_summary sum;
	assert_int_equal(ada_recorder_wait(r, &sum), 0);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(rd[i].bad, 0);
		assert_true(rd[i].reads > 0);
	}
	assert_int_equal(ada_recorder_live(r, v), 0);
	assert_true(v->ended);
	assert_int_equal(v->events, sum.events);
	assert_true(v->procs[0].finished);
	assert_int_equal(v->nrings, 0); /* no live thread any more */
	free(v);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", out);
	assert_int_equal(system(cmd), 0);
	ada_recorder_free(r);
}

/* The live view's text of pid's warning that contains what. */
static const char *live_warning(struct ada_recorder *r, struct ada_recorder_live *v, pid_t pid,
                                const char *what)
{
	wal_live_publish(r, true, false);
	assert_int_equal(ada_recorder_live(r, v), 0);
	for (uint32_t i = 0; i < v->nwarnings; i++)
		if (v->warnings[i].pid == pid && strstr(v->warnings[i].text, what))
			return v->warnings[i].text;
	return "";
}

/* The ring table's put fails (a directory at its name) once more. */
static void ring_table_fail(struct ada_recorder *r, struct wal_proc *p, uint32_t seq)
{
	struct wal_thread t = {.p = p, .slot = 1, .seq = seq, .slot_gen = 1, .ring_next = 7};
	assert_true(wal_ring_table_put(p, &t) < 0);
	wal_ring_table_failed(r, p);
}

/* The recording and directory of test_proc_warning_rewritten, undone by
 * lw_teardown even when an assertion failed. */
static struct {
	char out[64];
	struct ada_recorder *r;
	struct ada_recorder_live *v;
} lw;

static int lw_teardown(void **state)
{
	(void)state;
	free(lw.v);
	ada_recorder_discard(lw.r); /* the arena directory in /dev/shm too */
	ada_recorder_free(lw.r);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lw.out);
	return lw.out[0] ? system(cmd) : 0;
}

static void test_proc_warning_rewritten(void **state)
{
	(void)state;
	snprintf(lw.out, sizeof(lw.out), "/tmp/ada_wal_livew_XXXXXX");
	assert_non_null(mkdtemp(lw.out));
	const char *argv[] = {"live-warn", NULL};
	struct ada_recorder_opts o = {.out_dir = lw.out,
	                              .drain_cpu = -1,
	                              .follow = true,
	                              .force_clock = true,
	                              .program_argv = argv,
	                              .detail_mode = ADA_DETAIL_NEVER};
	assert_int_equal(ada_recorder_new(&o, &lw.r), 0); /* not started: no drain thread */
	struct ada_recorder *r = lw.r;
	struct wal_proc *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	*p = (struct wal_proc){.pid = 4242, .pidfd = -1, .arena_fd = -1, .warnings = json_array()};
	r->procs = realloc(r->procs, sizeof(*r->procs));
	r->capprocs = 1;
	r->procs[r->nprocs++] = p; /* freed with the recorder */
	assert_true(asprintf(&p->dir, "%s/pid_4242", lw.out) > 0);
	char slots[256];
	snprintf(slots, sizeof(slots), "%s/.ring_slots", p->dir);
	assert_int_equal(mkdir(p->dir, 0700), 0);
	assert_int_equal(mkdir(slots, 0700), 0);
	p->dir_fd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct ada_recorder_live *v = lw.v = malloc(sizeof(*v));
	ring_table_fail(r, p, 1);
	assert_non_null(strstr(live_warning(r, v, 4242, "ring positions"), "of 1 index file "));
	ring_table_fail(r, p, 2);
	assert_non_null(strstr(live_warning(r, v, 4242, "ring positions"), "of 2 index files"));
	ring_table_fail(r, p, 3); /* and it finishes before the next build */
	p->finished = true;
	assert_non_null(strstr(live_warning(r, v, 4242, "ring positions"), "of 3 index files"));
	assert_int_equal(v->nprocs, 1);
	assert_true(v->procs[0].finished);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_live_view),
	    cmocka_unit_test_teardown(test_proc_warning_rewritten, lw_teardown)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
