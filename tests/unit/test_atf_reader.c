/* Readers, time ranges, thread directories and the k-way merge. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_atf_util.h"

static void index_get_and_bounds(void **state)
{
	struct atf_index_event ev[5];
	struct ada_atf_index *ix;
	uint64_t b, e;

	(void)state;
	for (int i = 0; i < 5; i++)
		ev[i] = t_ev(100 + 10 * (uint64_t)(i / 2 * 2), 7, 1, 1, 1,
		             ATF_NO_DETAIL); /* 100 100 120 120 140 */
	struct tbuf f = t_index(ev, 5, 1, 0);
	assert_int_equal(ada_atf_index_open_mem(f.p, f.len, 0, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), 5);
	assert_int_equal(ada_atf_index_get(ix, 4)->timestamp_ns, 140);
	assert_null(ada_atf_index_get(ix, 5));
	assert_int_equal(ada_atf_index_lower_bound(ix, 120), 2);
	assert_int_equal(ada_atf_index_upper_bound(ix, 120), 4);
	assert_int_equal(ada_atf_index_lower_bound(ix, 1000), 5);
	ada_atf_index_range(ix, 101, 130, &b, &e);
	assert_int_equal(b, 2);
	assert_int_equal(e, 4);
	ada_atf_index_range(ix, 0, 99, &b, &e); /* before the file: header skip */
	assert_int_equal(e - b, 0);
	ada_atf_index_range(ix, 141, 500, &b, &e);
	assert_int_equal(e - b, 0);
	ada_atf_index_range(ix, 0, UINT64_MAX, &b, &e);
	assert_int_equal(b, 0);
	assert_int_equal(e, 5);
	ada_atf_index_free(ix);
	free(f.p);
}

static void index_empty_and_bad(void **state)
{
	struct ada_atf_index *ix = NULL;
	uint64_t b, e;

	(void)state;
	struct tbuf f = t_index(NULL, 0, 1, 0);
	assert_int_equal(ada_atf_index_open_mem(f.p, f.len, 0, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), 0);
	assert_null(ada_atf_index_get(ix, 0));
	ada_atf_index_range(ix, 0, UINT64_MAX, &b, &e);
	assert_int_equal(e - b, 0);
	ada_atf_index_free(ix);
	/* Empty file, short file, wrong magic: refused, not read. */
	assert_int_equal(ada_atf_index_open_mem(NULL, 0, ADA_ATF_OPEN_SALVAGE, &ix), -EBADMSG);
	assert_int_equal(ada_atf_index_open_mem(f.p, 63, ADA_ATF_OPEN_SALVAGE, &ix), -EBADMSG);
	f.p[0] = 'X';
	assert_int_equal(ada_atf_index_open_mem(f.p, f.len, ADA_ATF_OPEN_SALVAGE, &ix), -EBADMSG);
	free(f.p);
}

static void index_truncated_and_bogus_count(void **state)
{
	struct atf_index_event ev[4];
	struct ada_atf_index *ix;

	(void)state;
	for (int i = 0; i < 4; i++)
		ev[i] = t_ev(10 + (uint64_t)i, 1, 1, 1, 1, ATF_NO_DETAIL);
	struct tbuf f = t_index(ev, 4, 1, 0);
	/* Cut inside event 3: strict refuses, salvage keeps events 0..2. */
	assert_int_equal(ada_atf_index_open_mem(f.p, 64 + 3 * 32 + 5, 0, &ix), -EBADMSG);
	assert_int_equal(ada_atf_index_open_mem(f.p, 64 + 3 * 32 + 5, ADA_ATF_OPEN_SALVAGE, &ix),
	                 0);
	assert_int_equal(ada_atf_index_count(ix), 3);
	ada_atf_index_free(ix);
	/* Header claims 2^32-1 events and a footer far away. */
	struct atf_index_header h;
	memcpy(&h, f.p, 64);
	h.event_count = UINT32_MAX;
	h.footer_offset = UINT64_MAX - 10;
	memcpy(f.p, &h, 64);
	assert_int_equal(ada_atf_index_open_mem(f.p, f.len, 0, &ix), -EBADMSG);
	assert_int_equal(ada_atf_index_open_mem(f.p, f.len, ADA_ATF_OPEN_SALVAGE, &ix), 0);
	assert_int_equal(ada_atf_index_count(ix), 4); /* the footer at the end is found */
	ada_atf_index_free(ix);
	free(f.p);
}

static void detail_get_both_ways(void **state)
{
	struct t_detail_rec r[2] = {t_drec(1, 9, 20, 5), t_drec(3, 9, 40, 6)};
	struct ada_atf_detail *d;
	const uint8_t *stack;

	(void)state;
	struct tbuf f = t_detail(r, 2, 9);
	assert_int_equal(ada_atf_detail_open_mem(f.p, f.len, 0, &d), 0);
	assert_int_equal(ada_atf_detail_count(d), 2);
	assert_int_equal(ada_atf_detail_get(d, 1)->index_seq, 3);
	assert_null(ada_atf_detail_get(d, 2));
	const struct atf_detail_function_payload *p =
	    ada_atf_detail_function(ada_atf_detail_get(d, 0), &stack);
	assert_non_null(p);
	assert_int_equal(p->function_id, 5);
	assert_int_equal(p->x_regs[0], 0xdead);
	ada_atf_detail_free(d);
	/* A total_length running past the footer: strict refuses; salvage
	 * keeps the first event only. */
	uint32_t bad = 5000;
	memcpy(f.p + 64 + sizeof(r[0]), &bad, 4);
	assert_int_equal(ada_atf_detail_open_mem(f.p, f.len, 0, &d), -EBADMSG);
	assert_int_equal(ada_atf_detail_open_mem(f.p, f.len, ADA_ATF_OPEN_SALVAGE, &d), 0);
	assert_int_equal(ada_atf_detail_count(d), 1);
	ada_atf_detail_free(d);
	/* total_length smaller than a header: the walk cannot loop forever. */
	bad = 0;
	memcpy(f.p + 64, &bad, 4);
	assert_int_equal(ada_atf_detail_open_mem(f.p, f.len, ADA_ATF_OPEN_SALVAGE, &d), 0);
	assert_int_equal(ada_atf_detail_count(d), 0);
	ada_atf_detail_free(d);
	free(f.p);
}

/* Equal timestamps across threads come out by (thread, rank, seq),
 * whatever order the sources were added in. */
static void merge_equal_timestamps(void **state)
{
	struct atf_index_event a[3] = {t_ev(10, 1, 100, 1, 1, ATF_NO_DETAIL),
	                               t_ev(20, 2, 100, 1, 2, ATF_NO_DETAIL),
	                               t_ev(20, 3, 100, 2, 2, ATF_NO_DETAIL)};
	struct atf_index_event b[3] = {t_ev(5, 4, 200, 1, 1, ATF_NO_DETAIL),
	                               t_ev(20, 5, 200, 1, 2, ATF_NO_DETAIL),
	                               t_ev(30, 6, 200, 2, 2, ATF_NO_DETAIL)};
	struct atf_index_event c[1] = {
	    t_ev(20, 7, 200, 1, 3, ATF_NO_DETAIL)}; /* thread 1, later generation */
	struct ada_atf_index *ia, *ib, *ic;
	uint64_t want_fid[] = {4, 1, 2, 3, 5, 7, 6};

	(void)state;
	struct tbuf fa = t_index(a, 3, 100, 0), fb = t_index(b, 3, 200, 0),
	            fc = t_index(c, 1, 200, 0);
	assert_int_equal(ada_atf_index_open_mem(fa.p, fa.len, 0, &ia), 0);
	assert_int_equal(ada_atf_index_open_mem(fb.p, fb.len, 0, &ib), 0);
	assert_int_equal(ada_atf_index_open_mem(fc.p, fc.len, 0, &ic), 0);
	for (int order = 0; order < 2; order++) {
		struct ada_atf_merge *m;
		struct ada_atf_merge_item it;
		size_t k = 0;
		assert_int_equal(ada_atf_merge_new(&m), 0);
		if (order == 0) {
			ada_atf_merge_add(m, ia, 0, 3, 0, 0, NULL);
			ada_atf_merge_add(m, ib, 0, 3, 1, 0, NULL);
			ada_atf_merge_add(m, ic, 0, 1, 1, 1, NULL);
		} else {
			ada_atf_merge_add(m, ic, 0, 1, 1, 1, NULL);
			ada_atf_merge_add(m, ib, 0, 3, 1, 0, NULL);
			ada_atf_merge_add(m, ia, 0, 3, 0, 0, NULL);
		}
		while (ada_atf_merge_next(m, &it)) {
			assert_true(k < 7);
			assert_int_equal(it.ev->function_id, want_fid[k]);
			k++;
		}
		assert_int_equal(k, 7);
		ada_atf_merge_free(m);
	}
	ada_atf_index_free(ia);
	ada_atf_index_free(ib);
	ada_atf_index_free(ic);
	free(fa.p);
	free(fb.p);
	free(fc.p);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	if (n)
		assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* Generations come oldest first, index.atf last; an empty index.atf is
 * reported by its open error, not hidden. */
static void thread_dir_generations(void **state)
{
	char root[] = "/tmp/ada_atf_reader_XXXXXX", dir[128], p[192];
	struct atf_index_event ev = t_ev(1, 1, 1, 1, 1, ATF_NO_DETAIL);
	struct ada_atf_thread *t;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/thread_12", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	struct tbuf f = t_index(&ev, 1, 1, 0);
	const char *names[] = {"index.g10.atf", "index.g2.atf", "index.atf", "detail.g2.atf"};
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		write_file(p, f.p, i == 2 ? 0 : f.len); /* index.atf is empty */
	}
	assert_int_equal(ada_atf_thread_open(dir, 0, &t), 0);
	assert_int_equal(t->thread, 12);
	assert_int_equal(t->ngen, 3);
	assert_int_equal(t->gen[0].generation, 2);
	assert_non_null(t->gen[0].detail_path); /* exists (its content is not a detail file) */
	assert_int_equal(t->gen[0].detail_err, -EBADMSG);
	assert_int_equal(t->gen[1].generation, 10);
	assert_null(t->gen[1].detail_path);
	assert_int_equal(t->gen[2].generation, ADA_ATF_CURRENT_GEN);
	assert_int_equal(t->gen[2].index_err, -EBADMSG);
	assert_null(t->gen[2].index);
	ada_atf_thread_free(t);
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
	rmdir(root);
	free(f.p);
}

/* ada_atf_index_done() drops pages from the resident set, never data: a
 * file of 300 000 events (9.6 MB) reads the same after it. */
static void index_done_keeps_data(void **state)
{
	char path[] = "/tmp/ada_test_done_XXXXXX";
	int fd = mkstemp(path);
	struct ada_atf_file_info info;
	struct ada_atf_writer *w;
	struct ada_atf_index *ix;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	ada_atf_file_info_native(&info, 7);
	assert_int_equal(ada_atf_writer_new(path, false, &info, &w), 0);
	for (uint64_t i = 0; i < 300000; i++) {
		struct atf_index_event ev = t_ev(1000 + i, i * 3, 7, 1 + (i & 1), 1, ATF_NO_DETAIL);
		assert_int_equal(ada_atf_writer_index(w, &ev), 0);
	}
	assert_int_equal(ada_atf_writer_finish(w), 0);
	assert_int_equal(ada_atf_index_open(path, 0, &ix), 0);
	ada_atf_index_done(ix, 0, 300000);
	ada_atf_index_done(ix, 5, 3);      /* empty range */
	ada_atf_index_done(ix, 0, 900000); /* past the end: ignored */
	for (uint64_t i = 0; i < 300000; i += 997)
		assert_int_equal(ada_atf_index_get(ix, i)->function_id, i * 3);
	ada_atf_index_free(ix);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(index_get_and_bounds),
	    cmocka_unit_test(index_done_keeps_data),
	    cmocka_unit_test(index_empty_and_bad),
	    cmocka_unit_test(index_truncated_and_bogus_count),
	    cmocka_unit_test(detail_get_both_ways),
	    cmocka_unit_test(merge_equal_timestamps),
	    cmocka_unit_test(thread_dir_generations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
