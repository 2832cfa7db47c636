/*
 * Validator, cross-file part: the links between an index file and its
 * detail file, the has_detail_file flag, and a thread directory with its
 * retention generations (timestamps non-decreasing across them).
 *
 * Threads: CLI only. Both files are opened with the SALVAGE readers, which
 * only hand out events lying wholly inside the buffers, so a damaged file
 * still gets its links checked as far as it can be read, safely.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "atf_internal.h"
#include "cidx.h"
#include "fs.h"

static void __attribute__((format(printf, 5, 6)))
lreport(struct ada_atf_report *r, const char *path, uint64_t off, uint64_t *shown, const char *fmt,
        ...)
{
	char msg[512];
	va_list ap;
	uint32_t cap = r->max_per_file ? r->max_per_file : 50;

	r->errors++;
	if ((*shown)++ >= cap || !r->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->fn(r->ctx, ADA_ATF_ERROR, path, off, msg);
}

static void links_hidden(struct ada_atf_report *r, const char *path, uint64_t shown)
{
	char msg[96];
	uint32_t cap = r->max_per_file ? r->max_per_file : 50;

	if (shown <= cap || !r->fn)
		return;
	snprintf(msg, sizeof(msg), "%" PRIu64 " more link problems in this file not shown",
	         shown - cap);
	r->fn(r->ctx, ADA_ATF_ERROR, path, 0, msg);
}

struct links {
	struct ada_atf_report *r;
	const char *ipath, *dpath;
	const uint8_t *dbuf;
	const struct ada_atf_index *ix;
	const struct ada_atf_detail *d; /* NULL: no usable detail file */
	uint64_t ishown, dshown;
};

/* index event -> detail event -> back to the same index event */
static void links_forward(struct links *l)
{
	uint64_t n = ada_atf_index_count(l->ix), eo = ada_atf_index_header(l->ix)->events_offset;
	uint64_t dn = l->d ? ada_atf_detail_count(l->d) : 0;

	for (uint64_t i = 0; i < n; i++) {
		const struct atf_index_event *ev = ada_atf_index_get(l->ix, i);
		uint64_t off = eo + i * ATF_INDEX_EVENT_SIZE + 28;
		uint32_t ds = ev->detail_seq;
		if (ds == ATF_NO_DETAIL)
			continue;
		if (!l->dpath)
			lreport(l->r, l->ipath, off, &l->ishown,
			        "link: event %" PRIu64 " has detail_seq %" PRIu32
			        " but the thread has no detail file",
			        i, ds);
		else if (ds >= dn)
			lreport(l->r, l->ipath, off, &l->ishown,
			        "link: event %" PRIu64 " has detail_seq %" PRIu32
			        ", past the %" PRIu64 " readable events of %s",
			        i, ds, dn, l->dpath);
		else if (ada_atf_detail_get(l->d, ds)->index_seq != i)
			lreport(l->r, l->ipath, off, &l->ishown,
			        "link: event %" PRIu64 " -> detail_seq %" PRIu32
			        " whose index_seq is %" PRIu32 ", not %" PRIu64,
			        i, ds, ada_atf_detail_get(l->d, ds)->index_seq, i);
	}
}

static void links_backward_one(struct links *l, uint64_t j, const struct atf_detail_event_header *e)
{
	uint64_t off = (uint64_t)((const uint8_t *)e - l->dbuf);
	uint64_t n = ada_atf_index_count(l->ix);
	const struct atf_index_event *ev;
	const struct atf_detail_function_payload *p;

	if (e->index_seq >= n) {
		lreport(l->r, l->dpath, off + 8, &l->dshown,
		        "link: detail event %" PRIu64 " has index_seq %" PRIu32
		        ", past the %" PRIu64 " events of %s",
		        j, e->index_seq, n, l->ipath);
		return;
	}
	ev = ada_atf_index_get(l->ix, e->index_seq);
	if (ev->detail_seq != j) {
		lreport(l->r, l->dpath, off + 8, &l->dshown,
		        "link: detail event %" PRIu64 " -> index_seq %" PRIu32
		        " whose detail_seq is %" PRIu32 ", not %" PRIu64,
		        j, e->index_seq, ev->detail_seq, j);
		return;
	}
	if (e->timestamp != ev->timestamp_ns)
		lreport(l->r, l->dpath, off + 16, &l->dshown,
		        "link: detail event %" PRIu64 " timestamp %" PRIu64
		        " differs from its index event's %" PRIu64,
		        j, e->timestamp, ev->timestamp_ns);
	p = ada_atf_detail_function(e, NULL);
	if (p && p->function_id != ev->function_id)
		lreport(l->r, l->dpath, off + 24, &l->dshown,
		        "link: detail event %" PRIu64 " function_id 0x%" PRIx64
		        " differs from its index event's 0x%" PRIx64,
		        j, p->function_id, ev->function_id);
}

static void links_flag(struct links *l)
{
	bool flag = ada_atf_index_header(l->ix)->flags & ATF_INDEX_FLAG_HAS_DETAIL;

	if (flag && !l->dpath)
		lreport(l->r, l->ipath, 8, &l->ishown,
		        "has_detail_file flag is set but there is no detail file");
	else if (!flag && l->dpath)
		lreport(l->r, l->ipath, 8, &l->ishown,
		        "has_detail_file flag is clear but %s exists", l->dpath);
}

void ada_atf_validate_links_buf(const char *ipath, const void *ibuf, size_t ilen, const char *dpath,
                                const void *dbuf, size_t dlen, struct ada_atf_report *r)
{
	struct ada_atf_index *ix = NULL;
	struct ada_atf_detail *d = NULL;
	struct links l = {.r = r, .ipath = ipath, .dpath = dpath, .dbuf = dbuf};

	/* Files too damaged to read were already reported on their own. */
	if (ada_atf_index_open_mem(ibuf, ilen, ADA_ATF_OPEN_SALVAGE, &ix))
		return;
	if (dpath && ada_atf_detail_open_mem(dbuf, dlen, ADA_ATF_OPEN_SALVAGE, &d))
		d = NULL;
	l.ix = ix;
	l.d = d;
	links_flag(&l);
	if (dpath && !d)
		goto out; /* unreadable detail file: reported on its own */
	links_forward(&l);
	for (uint64_t j = 0; d && j < ada_atf_detail_count(d); j++)
		links_backward_one(&l, j, ada_atf_detail_get(d, j));
	links_hidden(r, ipath, l.ishown);
	if (dpath)
		links_hidden(r, dpath, l.dshown);
out:
	ada_atf_detail_free(d);
	ada_atf_index_free(ix);
}

/* ------------------------------------------------------------ thread */

static void thread_report(struct ada_atf_report *r, const char *path, uint64_t off, const char *msg)
{
	r->errors++;
	if (r->fn)
		r->fn(r->ctx, ADA_ATF_ERROR, path, off, msg);
}

/* A file that shrank while it was read (atf_guard.c): told, an error. */
static void validate_shrank(struct ada_atf_report *r, const char *path, const struct atf_map *m)
{
	if (!path || !atf_map_shrank(m))
		return;
	r->errors++;
	if (r->shrank)
		r->shrank(r->ctx, path);
}

static void validate_gen(struct ada_atf_gen *g, struct ada_atf_report *r, struct ada_atf_vfile *iv)
{
	struct atf_map im, dm = {0};
	struct ada_atf_vfile dv;
	char msg[300];
	int err = atf_map_file_whole(g->index_path, &im);

	memset(iv, 0, sizeof(*iv));
	if (err) {
		snprintf(msg, sizeof(msg), "cannot read: %s", strerror(-err));
		thread_report(r, g->index_path, 0, msg);
		return;
	}
	/* A compact index is decoded once: its links are checked on the ATF v2
	 * form its validation made (the same events a salvaging reader gets
	 * from a file whose every block decodes). */
	uint8_t *v2 = NULL;
	size_t v2len = 0;
	if (ada_cidx_is_compact(im.base, im.len))
		atf_cidx_validate_keep(g->index_path, im.base, im.len, r, iv, &v2, &v2len);
	else
		ada_atf_validate_index_buf(g->index_path, im.base, im.len, r, iv);
	if (g->detail_path) {
		err = atf_map_file(g->detail_path, &dm);
		if (err) {
			snprintf(msg, sizeof(msg), "cannot read: %s", strerror(-err));
			thread_report(r, g->detail_path, 0, msg);
		} else {
			ada_atf_validate_detail_buf(g->detail_path, dm.base, dm.len, r, &dv);
		}
	}
	ada_atf_validate_links_buf(g->index_path, v2 ? v2 : im.base, v2 ? v2len : im.len,
	                           g->detail_path, dm.base, dm.len, r);
	free(v2);
	validate_shrank(r, g->index_path, &im);
	validate_shrank(r, g->detail_path, &dm);
	atf_map_release(&dm);
	atf_map_release(&im);
}

/* A detail.g<G>.atf / detail.atf whose index file is missing. */
static void thread_orphans(const struct ada_atf_thread *t, struct ada_atf_report *r)
{
	DIR *d = ada_fs_opendir(AT_FDCWD, t->dir);
	struct dirent *de;
	char name[64], msg[160];

	if (!d)
		return;
	for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); n++) {
		if (strncmp(de->d_name, "detail.", 7))
			continue;
		bool matched = false;
		for (size_t i = 0; i < t->ngen && !matched; i++) {
			ada_atf_gen_name(name, sizeof(name), true, t->gen[i].generation);
			matched = !strcmp(name, de->d_name);
		}
		if (matched)
			continue;
		char *path = atf_strdup_printf("%s/%s", t->dir, de->d_name);
		snprintf(msg, sizeof(msg), "detail file without a matching index file");
		thread_report(r, path ? path : de->d_name, 0, msg);
		free(path);
	}
	closedir(d);
}

int ada_atf_validate_thread(const char *dir, struct ada_atf_report *r)
{
	struct ada_atf_thread *t;
	struct ada_atf_vfile cur, prev = {0};
	const char *prev_path = NULL;
	char msg[300];
	int err = ada_atf_thread_scan(dir, &t);

	if (err == -ENOENT) {
		thread_report(r, dir, 0, "thread directory holds no index.atf");
		return 0;
	}
	if (err)
		return err;
	for (size_t i = 0; i < t->ngen; i++) {
		validate_gen(&t->gen[i], r, &cur);
		/* Generations continue one timeline: no step back between them. */
		if (prev_path && prev.count && cur.count && cur.first_ts < prev.last_ts) {
			snprintf(msg, sizeof(msg),
			         "first timestamp %" PRIu64 " is before the last timestamp %" PRIu64
			         " of the previous generation %s",
			         cur.first_ts, prev.last_ts, prev_path);
			thread_report(r, t->gen[i].index_path, ATF_HEADER_SIZE, msg);
		}
		if (cur.count) {
			prev = cur;
			prev_path = t->gen[i].index_path;
		}
	}
	thread_orphans(t, r);
	ada_atf_thread_free(t);
	return 0;
}
