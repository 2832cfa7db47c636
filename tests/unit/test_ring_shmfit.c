/*
 * A process's arena against the recording's shared-memory ceiling
 * (src/ring/shm_budget.c, ada_shm_budget_take_arena): the whole arena when
 * it fits; else the largest detail rings (halved, down to 4 KiB) that fit
 * now, counted as reduced with what it asked and the room there was; when
 * not even those fit, refused (untraced), counted with its smallest
 * arena. The sentences that tell why (ada_shm_budget_*_why) name the
 * ceiling's origin and what to do. The producer's set-up marks a reduced
 * arena (ADA_ARENA_F_DETAIL_REDUCED) and makes it with the smaller rings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h"

#define CONFIG "max_threads=2,index_events=4096,detail_bytes=1048576"

struct fx {
	char dir[64];
	int dfd;
	struct ada_arena_config cfg;
	uint64_t full; /* the whole arena's budget size */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/dev/shm/ada-test-shmfit-XXXXXX");
	if (!mkdtemp(f->dir) || ada_arena_config_parse(CONFIG, strlen(CONFIG), &f->cfg) != 0)
		return -1;
	f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->full = ada_arena_budget_size_for(&f->cfg);
	*state = f;
	return f->dfd >= 0 ? 0 : -1;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char path[128];
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	snprintf(path, sizeof(path), "%s/%d.ring", f->dir, (int)getpid());
	unlink(path);
	unlinkat(f->dfd, ADA_SHM_BUDGET_NAME, 0);
	close(f->dfd);
	rmdir(f->dir);
	free(f);
	return 0;
}

static uint64_t size_with_detail(const struct ada_arena_config *cfg, uint64_t d)
{
	struct ada_arena_config c = *cfg;
	c.detail_bytes = d;
	return ada_arena_budget_size_for(&c);
}

/* Room for the whole arena: taken whole, nothing counted. */
static void test_fit_whole(void **state)
{
	struct fx *f = *state;
	struct ada_shm_budget *b = NULL;
	assert_int_equal(ada_shm_budget_create(f->dfd, f->full, &b), 0);
	struct ada_arena_config c = f->cfg;
	uint64_t bytes = 0;
	assert_int_equal(ada_shm_budget_take_arena(b, &c, &bytes), 0);
	assert_int_equal(bytes, f->full);
	assert_int_equal(c.detail_bytes, f->cfg.detail_bytes);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.reserved, f->full);
	assert_int_equal(v.reduced_procs, 0);
	assert_int_equal(v.refused_procs, 0);
	char why[512];
	assert_false(ada_shm_budget_reduced_why(&v, why, sizeof(why)));
	assert_string_equal(why, "");
	assert_false(ada_shm_budget_untraced_why(&v, why, sizeof(why)));
	ada_shm_budget_close(b);
}

/* Room for a quarter of the detail rings, not half: the largest that fits,
 * at once, counted with the whole arena asked and the room. */
static void test_fit_smaller(void **state)
{
	struct fx *f = *state;
	uint64_t quarter = size_with_detail(&f->cfg, f->cfg.detail_bytes / 4);
	uint64_t half = size_with_detail(&f->cfg, f->cfg.detail_bytes / 2);
	assert_true(quarter < half && half < f->full);
	struct ada_shm_budget *b = NULL;
	assert_int_equal(ada_shm_budget_create(f->dfd, f->full + half - 1, &b), 0);
	ada_shm_budget_set_from_fs(b);
	struct ada_arena_config c = f->cfg;
	uint64_t bytes = 0;
	assert_int_equal(ada_shm_budget_take_arena(b, &c, &bytes), 0); /* whole */
	c = f->cfg;
	assert_int_equal(ada_shm_budget_take_arena(b, &c, &bytes), 0);
	assert_int_equal(c.detail_bytes, f->cfg.detail_bytes / 4);
	assert_int_equal(bytes, quarter);
	assert_int_equal(c.index_events, f->cfg.index_events); /* the index lane whole */
	assert_int_equal(c.max_threads, f->cfg.max_threads);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.reserved, f->full + quarter);
	assert_int_equal(v.reduced_procs, 1);
	assert_int_equal(v.reduced_detail_min, f->cfg.detail_bytes / 4);
	assert_int_equal(v.reduced_need, f->full);
	assert_int_equal(v.reduced_room, half - 1);
	assert_int_equal(v.refused_procs, 0);
	assert_int_equal(v.waited_procs, 0);
	assert_int_equal(v.arenas, 2);
	char why[512];
	assert_true(ada_shm_budget_reduced_why(&v, why, sizeof(why)));
	assert_non_null(strstr(why, "1 process was recorded with smaller detail rings (down to 256 "
	                            "KiB a thread)"));
	assert_non_null(strstr(why, "(half of the free space of /dev/shm)"));
	assert_non_null(strstr(why, "give /dev/shm more room or lower --detail-mb"));
	ada_shm_budget_close(b);
}

/* A ceiling below even the smallest arena: refused at once (no wait that
 * could help), counted with that smallest size; the sentence says so. */
static void test_fit_refused(void **state)
{
	struct fx *f = *state;
	uint64_t smallest = size_with_detail(&f->cfg, ADA_DETAIL_MIN_BYTES);
	struct ada_shm_budget *b = NULL;
	assert_int_equal(ada_shm_budget_create(f->dfd, smallest - 1, &b), 0);
	struct ada_arena_config c = f->cfg;
	uint64_t bytes = 0;
	assert_int_equal(ada_shm_budget_take_arena(b, &c, &bytes), -EDQUOT);
	assert_int_equal(c.detail_bytes, f->cfg.detail_bytes);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.reserved, 0);
	assert_int_equal(v.refused_procs, 1);
	assert_int_equal(v.refused_need, smallest);
	assert_int_equal(v.refused_room, smallest - 1);
	assert_int_equal(v.reduced_procs, 0);
	char why[512];
	assert_true(ada_shm_budget_untraced_why(&v, why, sizeof(why)));
	assert_non_null(strstr(why, "1 process ran untraced: the shared-memory ceiling of "));
	assert_non_null(strstr(why, "(--max-shm-mb) was reached"));
	assert_non_null(strstr(why, "raise --max-shm-mb, or lower --ring-mb or --max-threads"));
	ada_shm_budget_close(b);
}

/* The sentence for processes that could not make their arena says the
 * first one's reason; the page is the target's to write, so an errno of 0
 * (no reason) or a large one is said as such, never as "error 0". */
static void test_failed_why_reason(void **state)
{
	(void)state;
	struct ada_shm_budget_view v = {.failed_procs = 2, .failed_errno = ENOSPC};
	char why[512];
	assert_true(ada_shm_budget_failed_why(&v, why, sizeof(why)));
	assert_non_null(strstr(why, "2 processes ran untraced: they could not make their arena"));
	assert_non_null(strstr(why, strerror(ENOSPC)));
	v.failed_errno = 0;
	assert_true(ada_shm_budget_failed_why(&v, why, sizeof(why)));
	assert_null(strstr(why, "error 0"));
	assert_non_null(strstr(why, "(the first: a reason not recorded)"));
	v.failed_errno = 70000;
	assert_true(ada_shm_budget_failed_why(&v, why, sizeof(why)));
	assert_non_null(strstr(why, "(the first: error 70000)"));
	v.failed_procs = 0;
	assert_false(ada_shm_budget_failed_why(&v, why, sizeof(why)));
	assert_string_equal(why, "");
}

/* No detail rings to cut (--detail never): the whole arena or nothing. */
static void test_fit_no_detail(void **state)
{
	struct fx *f = *state;
	struct ada_arena_config c = f->cfg;
	c.detail_bytes = 0;
	uint64_t size = ada_arena_budget_size_for(&c);
	struct ada_shm_budget *b = NULL;
	assert_int_equal(ada_shm_budget_create(f->dfd, size - 1, &b), 0);
	uint64_t bytes = 0;
	assert_int_equal(ada_shm_budget_take_arena(b, &c, &bytes), -EDQUOT);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.refused_procs, 1);
	assert_int_equal(v.refused_need, size);
	assert_int_equal(v.reduced_procs, 0);
	ada_shm_budget_close(b);
}

/* The producer's set-up: an arena made with the smaller rings, marked. */
static void test_fit_producer_marks(void **state)
{
	struct fx *f = *state;
	struct ada_shm_budget *b = NULL;
	uint64_t half = size_with_detail(&f->cfg, f->cfg.detail_bytes / 2);
	assert_int_equal(ada_shm_budget_create(f->dfd, f->full - 1, &b), 0);
	char text[ADA_ARENA_CONFIG_TEXT_MAX];
	assert_true(ada_arena_config_format(&f->cfg, text, sizeof(text)) > 0);
	assert_int_equal(ada_producer_init(f->dir, text), 0);
	struct ada_arena *a = ada_producer_arena();
	assert_non_null(a);
	assert_int_equal(ada_arena_config_of(a)->detail_bytes, f->cfg.detail_bytes / 2);
	assert_true(ada_arena_flags(a) & ADA_ARENA_F_DETAIL_REDUCED);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.reserved, half);
	assert_int_equal(v.reduced_procs, 1);
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	ada_shm_budget_close(b);
}

/* A forked child given smaller detail rings that then cannot make its
 * arena (no file descriptor left) gives its reservation back and is
 * counted once, among the processes that ran untraced: not also among
 * those recorded with smaller rings, which it never was. */
static void test_fit_reduced_then_failed(void **state)
{
	struct fx *f = *state;
	struct ada_shm_budget *b = NULL;
	uint64_t half = size_with_detail(&f->cfg, f->cfg.detail_bytes / 2);
	assert_int_equal(ada_shm_budget_create(f->dfd, f->full + half, &b), 0);
	char text[ADA_ARENA_CONFIG_TEXT_MAX];
	assert_true(ada_arena_config_format(&f->cfg, text, sizeof(text)) > 0);
	assert_int_equal(ada_producer_init(f->dir, text), 0); /* the whole arena: room for half */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int lowest = dup(0);
		if (lowest < 0)
			_exit(100);
		close(lowest);
		struct rlimit rl = {.rlim_cur = (rlim_t)lowest, .rlim_max = (rlim_t)lowest};
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(101);
		int err = ada_producer_init(f->dir, text);
		_exit(err < 0 && err > -100 ? -err : 102);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) > 0 && WEXITSTATUS(st) < 100);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.failed_procs, 1);
	assert_int_equal(v.reduced_procs, 0);
	assert_int_equal(v.reserved, f->full); /* the parent's only */
	char why[512];
	assert_false(ada_shm_budget_reduced_why(&v, why, sizeof(why)));
	struct ada_arena *a = ada_producer_arena(); /* the parent's, closed as the other cases do */
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
	ada_shm_budget_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fit_whole, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fit_smaller, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fit_refused, fx_setup, fx_teardown),
	    cmocka_unit_test(test_failed_why_reason),
	    cmocka_unit_test_setup_teardown(test_fit_no_detail, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fit_producer_marks, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fit_reduced_then_failed, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
