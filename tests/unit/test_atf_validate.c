/* The validator catches each kind of corruption with the right message and
 * offset, accepts valid files, and never reads outside its buffer (every
 * truncation and many byte flips run under ASan in CI). */
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

#define MAXP 64
struct problems {
	size_t n;
	char msg[MAXP][600];
	uint64_t off[MAXP];
};

static void collect(void *ctx, enum ada_atf_severity sev, const char *path, uint64_t off,
                    const char *msg)
{
	struct problems *p = ctx;
	(void)sev;
	if (p->n < MAXP) {
		snprintf(p->msg[p->n], sizeof(p->msg[0]), "%s: %s", path, msg);
		p->off[p->n++] = off;
	}
}

/* The offset of the first problem whose text contains s; fails if none. */
static uint64_t find(const struct problems *p, const char *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (strstr(p->msg[i], s))
			return p->off[i];
	for (size_t i = 0; i < p->n; i++)
		print_message("  problem: %s\n", p->msg[i]);
	fail_msg("no problem mentions \"%s\"", s);
	return 0;
}

struct pair {
	struct tbuf ix, d;
};

/* thread with 4 events, events 1 and 3 linked to detail 0 and 1 */
static struct pair mk_pair(void)
{
	struct atf_index_event ev[4] = {t_ev(100, 5, 9, ATF_EVENT_CALL, 1, ATF_NO_DETAIL),
	                                t_ev(110, 6, 9, ATF_EVENT_CALL, 2, 0),
	                                t_ev(120, 6, 9, ATF_EVENT_RETURN, 2, ATF_NO_DETAIL),
	                                t_ev(130, 5, 9, ATF_EVENT_RETURN, 1, 1)};
	struct t_detail_rec r[2] = {t_drec(1, 9, 110, 6), t_drec(3, 9, 130, 5)};
	struct pair p = {t_index(ev, 4, 9, 1), t_detail(r, 2, 9)};
	return p;
}

static uint64_t run(struct pair *pr, struct problems *p, bool with_detail)
{
	struct ada_atf_report r = {.fn = collect, .ctx = p};
	struct ada_atf_vfile vi, vd;

	memset(p, 0, sizeof(*p));
	ada_atf_validate_index_buf("ix", pr->ix.p, pr->ix.len, &r, &vi);
	if (with_detail)
		ada_atf_validate_detail_buf("d", pr->d.p, pr->d.len, &r, &vd);
	ada_atf_validate_links_buf("ix", pr->ix.p, pr->ix.len, with_detail ? "d" : NULL, pr->d.p,
	                           with_detail ? pr->d.len : 0, &r);
	return r.errors;
}

static void valid_pair(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;

	(void)state;
	assert_int_equal(run(&pr, &p, true), 0);
	free(pr.ix.p);
	free(pr.d.p);
}

static void flipped_event_byte_is_crc_error(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;

	(void)state;
	pr.ix.p[64 + 32 + 10] ^= 0x40; /* inside event 1's function_id */
	assert_true(run(&pr, &p, true) > 0);
	assert_int_equal(find(&p, "ix: CRC-32 mismatch"), 64 + 4 * 32 + 4);
	pr.d.p[64 + 30] ^= 1; /* inside detail 0's payload */
	run(&pr, &p, true);
	assert_int_equal(find(&p, "d: CRC-32 mismatch"), 64 + 2 * 124 + 4);
	free(pr.ix.p);
	free(pr.d.p);
}

static void truncated_is_count_error(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;

	(void)state;
	pr.ix.len -= 40; /* footer and part of the last event gone */
	assert_true(run(&pr, &p, true) > 0);
	assert_int_equal(find(&p, "ix: event count: header says 4 events"), 28);
	find(&p, "truncated");
	pr.d.len -= 70;
	run(&pr, &p, true);
	find(&p, "d: bytes_length");
	free(pr.ix.p);
	free(pr.d.p);
}

static void broken_links(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;
	uint32_t v = 1;

	(void)state;
	memcpy(pr.ix.p + 64 + 32 + 28, &v, 4); /* event 1 -> detail 1 (whose index_seq is 3) */
	/* keep the CRC right so only the link is wrong */
	struct atf_index_footer f;
	memcpy(&f, pr.ix.p + 64 + 128, 64);
	f.checksum = ada_atf_crc32(0, pr.ix.p + 64, 128);
	memcpy(pr.ix.p + 64 + 128, &f, 64);
	assert_true(run(&pr, &p, true) > 0);
	assert_int_equal(find(&p, "ix: link: event 1 -> detail_seq 1 whose index_seq is 3"),
	                 64 + 32 + 28);
	assert_int_equal(find(&p, "d: link: detail event 0 -> index_seq 1 whose detail_seq is 1"),
	                 64 + 8);
	/* no detail file at all, flag still set */
	run(&pr, &p, false);
	assert_int_equal(find(&p, "has_detail_file flag is set"), 8);
	find(&p, "but the thread has no detail file");
	free(pr.ix.p);
	free(pr.d.p);
}

static void wrong_magic_garbage_empty(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;
	struct ada_atf_report r = {.fn = collect, .ctx = &p};
	struct ada_atf_vfile vi;
	uint8_t garbage[1000];

	(void)state;
	pr.ix.p[0] = 'Z';
	run(&pr, &p, true);
	assert_int_equal(find(&p, "wrong magic \"ZTI2\""), 0);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 131 + 7);
	memset(&p, 0, sizeof(p));
	ada_atf_validate_index_buf("g", garbage, sizeof(garbage), &r, &vi);
	assert_int_equal(p.n, 1);
	find(&p, "not an ATF index file");
	memset(&p, 0, sizeof(p));
	ada_atf_validate_index_buf("e", NULL, 0, &r, &vi);
	find(&p, "file is 0 bytes, shorter than the 64-byte index header");
	assert_false(vi.usable);
	free(pr.ix.p);
	free(pr.d.p);
}

static void huge_bogus_event_count(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;
	uint32_t huge = UINT32_MAX;

	(void)state;
	memcpy(pr.ix.p + 28, &huge, 4);
	assert_true(run(&pr, &p, true) > 0);
	assert_int_equal(
	    find(&p, "event count: header says 4294967295 events, the events section holds 4"), 28);
	free(pr.ix.p);
	free(pr.d.p);
}

static void header_fields_and_order(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;
	uint64_t ts = 50, fo = 12345;

	(void)state;
	memcpy(pr.ix.p + 64 + 64, &ts, 8); /* event 2 goes back in time */
	pr.ix.p[24] = 32;                  /* still 32 */
	run(&pr, &p, true);
	assert_int_equal(find(&p, "event 2: timestamp 50 goes back from 110"), 64 + 64);
	free(pr.ix.p);
	free(pr.d.p);
	pr = mk_pair();
	memcpy(pr.ix.p + 40, &fo, 8);
	run(&pr, &p, true);
	find(&p, "footer_offset 12345 is not events_offset 64 plus a multiple of 32");
	pr.ix.p[24] = 31;
	run(&pr, &p, true);
	assert_int_equal(find(&p, "event_size is 31"), 24);
	free(pr.ix.p);
	free(pr.d.p);
}

static void detail_walk_errors(void **state)
{
	struct pair pr = mk_pair();
	struct problems p;
	uint32_t tl = 23;

	(void)state;
	memcpy(pr.d.p + 64 + 124, &tl, 4);
	assert_true(run(&pr, &p, true) > 0);
	assert_int_equal(find(&p, "detail event 1: total_length 23 does not fit"), 64 + 124);
	find(&p, "d: event count: header says 2 detail events, the walk found 1");
	free(pr.ix.p);
	free(pr.d.p);
}

/* Every prefix of a valid file, in a buffer of exactly that size: ASan
 * turns any read past the end into a failure. */
static void every_truncation_is_safe(void **state)
{
	struct pair pr = mk_pair();
	struct ada_atf_report r = {0};
	struct ada_atf_vfile v;

	(void)state;
	for (size_t n = 0; n <= pr.ix.len; n++) {
		uint8_t *b = malloc(n ? n : 1);
		memcpy(b, pr.ix.p, n);
		ada_atf_validate_index_buf("ix", b, n, &r, &v);
		ada_atf_validate_links_buf("ix", b, n, "d", pr.d.p, pr.d.len, &r);
		free(b);
	}
	for (size_t n = 0; n <= pr.d.len; n++) {
		uint8_t *b = malloc(n ? n : 1);
		memcpy(b, pr.d.p, n);
		ada_atf_validate_detail_buf("d", b, n, &r, &v);
		ada_atf_validate_links_buf("ix", pr.ix.p, pr.ix.len, "d", b, n, &r);
		free(b);
	}
	/* Each byte flipped to 0xff and 0x00 in turn. */
	for (size_t i = 0; i < pr.d.len; i++) {
		uint8_t save = pr.d.p[i];
		for (int k = 0; k < 2; k++) {
			pr.d.p[i] = k ? 0xff : 0;
			ada_atf_validate_detail_buf("d", pr.d.p, pr.d.len, &r, &v);
			ada_atf_validate_links_buf("ix", pr.ix.p, pr.ix.len, "d", pr.d.p, pr.d.len,
			                           &r);
		}
		pr.d.p[i] = save;
	}
	assert_true(r.errors > 0);
	free(pr.ix.p);
	free(pr.d.p);
}

static void put(const char *dir, const char *name, struct tbuf b)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
	fclose(f);
	free(b.p);
}

/* Retention generations: each file valid on its own and linked to its own
 * detail file; time must not go back from one generation to the next. */
static void thread_generations(void **state)
{
	char root[] = "/tmp/ada_atf_gens_XXXXXX", dir[128], cmd[160];
	struct atf_index_event old[2] = {t_ev(10, 1, 9, 1, 1, 0),
	                                 t_ev(20, 1, 9, 2, 1, ATF_NO_DETAIL)};
	struct atf_index_event cur[2] = {t_ev(30, 1, 9, 1, 1, ATF_NO_DETAIL),
	                                 t_ev(40, 1, 9, 2, 1, ATF_NO_DETAIL)};
	struct t_detail_rec r = t_drec(0, 9, 10, 1);
	struct problems p;
	struct ada_atf_report rep = {.fn = collect, .ctx = &p};

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/thread_0", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	put(dir, "index.g3.atf", t_index(old, 2, 9, 1));
	put(dir, "detail.g3.atf", t_detail(&r, 1, 9));
	put(dir, "index.atf", t_index(cur, 2, 9, 0));
	memset(&p, 0, sizeof(p));
	assert_int_equal(ada_atf_validate_thread(dir, &rep), 0);
	assert_int_equal(rep.errors, 0);
	/* the current file now starts before the older generation ends */
	cur[0].timestamp_ns = 15;
	put(dir, "index.atf", t_index(cur, 2, 9, 0));
	put(dir, "detail.atf", t_detail(&r, 1, 9)); /* flag clear, links to event 0 */
	assert_int_equal(ada_atf_validate_thread(dir, &rep), 0);
	assert_int_equal(find(&p, "first timestamp 15 is before the last timestamp 20"), 64);
	find(&p, "has_detail_file flag is clear");
	put(dir, "detail.g7.atf", t_detail(&r, 1, 9));
	assert_int_equal(ada_atf_validate_thread(dir, &rep), 0);
	find(&p, "detail.g7.atf: detail file without a matching index file");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(valid_pair),
	    cmocka_unit_test(flipped_event_byte_is_crc_error),
	    cmocka_unit_test(truncated_is_count_error),
	    cmocka_unit_test(broken_links),
	    cmocka_unit_test(wrong_magic_garbage_empty),
	    cmocka_unit_test(huge_bogus_event_count),
	    cmocka_unit_test(header_fields_and_order),
	    cmocka_unit_test(detail_walk_errors),
	    cmocka_unit_test(every_truncation_is_safe),
	    cmocka_unit_test(thread_generations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
