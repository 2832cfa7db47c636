/*
 * What the disk budget deleted from a process whose recording goes on,
 * kept on disk for `ada recover`: the files are gone, so only the
 * recorder knows their events, bytes and times, and a recorder that dies
 * would take the manifest's `retention` facts with it.
 *
 * Threads: wal_retention_save and wal_retention_drop on the drain thread
 * (budget.c, manifest.c); the reader on the `ada recover` command's.
 *
 * pid_N/.retention (0600, written whole by ada_fs_replace: never a part
 * of it, never through a link) is text, rewritten each time the budget
 * deletes a file of a process not finished yet, removed once the final
 * manifest says it all:
 *
 *   ada-retention 1
 *   symbols_deleted 0|1
 *   thread K tid T gens G events E bytes B until U whole 0|1
 *
 * one thread line per thread the budget deleted something of (the
 * manifest's per-thread retired_* and retired_whole). A recorder killed
 * between deleting a file and rewriting this one loses that file's
 * counts (said in docs/format.md). Read back as input from a place the
 * user owns: every line checked, its size and its lines bounded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "recorder_internal.h"

#define RETENTION_NAME ".retention"
#define RETENTION_LINE 160             /* a thread line's room, numbers at their widest */
#define RETENTION_MAX_BYTES (8u << 20) /* what recover reads of it, at most */
#define RETENTION_MAX_THREADS 65536u   /* thread lines taken, at most */

void wal_retention_save(struct wal_proc *p)
{
	if (p->finished || p->dir_fd < 0)
		return; /* its manifest says it (wal_manifests_restale) */
	size_t cap = 64 + (size_t)p->nthreads * RETENTION_LINE, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return;
	n += (size_t)snprintf(buf, cap, "ada-retention 1\nsymbols_deleted %d\n", p->syms_retired);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct wal_thread *t = p->threads[i];
		if (!t->retired_gens && !t->final_retired)
			continue;
		if (n >= cap - RETENTION_LINE)
			break; /* never: cap has a line's room for each thread */
		n += (size_t)snprintf(buf + n, cap - n,
		                      "thread %u tid %u gens %u events %llu bytes %llu until %llu "
		                      "whole %d\n",
		                      t->seq, t->tid, t->retired_gens,
		                      (unsigned long long)t->retired_events,
		                      (unsigned long long)t->retired_bytes,
		                      (unsigned long long)t->retired_until_ns, t->final_retired);
	}
	if (ada_fs_replace(p->dir_fd, RETENTION_NAME, buf, n, false) == 0)
		p->retention_saved = true;
	free(buf);
	wal_kill_point("retention_saved");
}

void wal_retention_drop(struct wal_proc *p)
{
	if (p->retention_saved && p->dir_fd >= 0)
		unlinkat(p->dir_fd, RETENTION_NAME, 0);
	p->retention_saved = false;
}

/* One thread line, checked; false when it is not one. */
static bool retention_line(const char *line, struct wal_retention_thread *t)
{
	unsigned seq, tid, gens;
	unsigned long long ev, by, until;
	int whole, used = 0;
	if (sscanf(line, "thread %u tid %u gens %u events %llu bytes %llu until %llu whole %d%n",
	           &seq, &tid, &gens, &ev, &by, &until, &whole, &used) != 7 ||
	    line[used] || (whole != 0 && whole != 1))
		return false;
	*t = (struct wal_retention_thread){.seq = seq,
	                                   .tid = tid,
	                                   .gens = gens,
	                                   .events = ev,
	                                   .bytes = by,
	                                   .until_ns = until,
	                                   .whole = whole};
	return true;
}

/* Reads the file of fd into a buffer of its own (NUL-terminated). */
static char *retention_read(int fd)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		ssize_t k = read(fd, buf + n, cap - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == cap && cap < RETENTION_MAX_BYTES) {
			char *b = realloc(buf, cap * 2 + 1);
			if (!b)
				break;
			buf = b;
			cap *= 2;
		} else if (n == cap) {
			break;
		}
	}
	if (buf)
		buf[n] = '\0';
	return buf;
}

static void retention_parse(char *buf, struct wal_retention *rt)
{
	char *save = NULL, *line = strtok_r(buf, "\n", &save);
	if (!line || strcmp(line, "ada-retention 1"))
		return;
	int syms = 0, used = 0;
	line = strtok_r(NULL, "\n", &save);
	if (!line || sscanf(line, "symbols_deleted %d%n", &syms, &used) != 1 || line[used])
		return;
	rt->found = true;
	rt->symbols_deleted = syms == 1;
	size_t cap = 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		struct wal_retention_thread t;
		if (!retention_line(line, &t)) {
			rt->bad_lines++;
			continue;
		}
		if (rt->n >= RETENTION_MAX_THREADS) {
			rt->bad_lines++;
			continue;
		}
		if (rt->n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			void *v = realloc(rt->threads, nc * sizeof(*rt->threads));
			if (!v)
				return;
			rt->threads = v;
			cap = nc;
		}
		rt->threads[rt->n++] = t;
	}
}

void wal_retention_load(const char *pid_dir, struct wal_retention *rt)
{
	memset(rt, 0, sizeof(*rt));
	int dfd = -1, fd = -1;
	if (ada_fs_open_dir(AT_FDCWD, pid_dir, &dfd) < 0)
		return;
	int rc = ada_fs_open_file(dfd, RETENTION_NAME, O_RDONLY, &fd);
	close(dfd);
	if (rc < 0)
		return;
	char *buf = retention_read(fd);
	close(fd);
	if (buf)
		retention_parse(buf, rt);
	free(buf);
}

void wal_retention_remove(const char *pid_dir)
{
	int dfd = -1;
	if (ada_fs_open_dir(AT_FDCWD, pid_dir, &dfd) < 0)
		return;
	unlinkat(dfd, RETENTION_NAME, 0);
	close(dfd);
}

void wal_retention_free(struct wal_retention *rt)
{
	free(rt->threads);
	memset(rt, 0, sizeof(*rt));
}

static int retention_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct wal_retention_thread *)a)->seq,
	         y = ((const struct wal_retention_thread *)b)->seq;
	return (x > y) - (x < y);
}

/* rt's entry of thread seq (rt sorted by seq), NULL when none. */
static struct wal_retention_thread *retention_of(const struct wal_retention *rt, json_int_t seq)
{
	if (seq < 0 || seq > UINT32_MAX)
		return NULL;
	struct wal_retention_thread key = {.seq = (uint32_t)seq};
	return bsearch(&key, rt->threads, rt->n, sizeof(key), retention_cmp);
}

static void retention_set_thread(json_t *o, const struct wal_retention_thread *t)
{
	json_object_set_new(o, "retired_events", json_integer(t ? (json_int_t)t->events : 0));
	json_object_set_new(o, "retired_bytes", json_integer(t ? (json_int_t)t->bytes : 0));
	json_object_set_new(o, "retired_until_ns", json_integer(t ? (json_int_t)t->until_ns : 0));
	json_object_set_new(o, "retired_whole", json_boolean(t && t->whole));
}

/* The threads whose every file went (and thread_K/ with them), whose
 * entries no thread on disk took (listed): on disk they are no more, in
 * the manifest they stay, their files empty. */
static void retention_whole_threads(json_t *threads, const struct wal_retention *rt)
{
	for (size_t i = 0; i < rt->n; i++) {
		const struct wal_retention_thread *t = &rt->threads[i];
		if (t->listed || !t->whole)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "thread", json_integer(t->seq));
		json_object_set_new(o, "tid", json_integer(t->tid));
		json_object_set_new(o, "files", json_array());
		json_object_set_new(o, "ring_waits", json_integer(0));
		json_object_set_new(o, "ring_waited_ns", json_integer(0));
		retention_set_thread(o, t);
		json_array_append_new(threads, o);
	}
}

void wal_retention_apply(json_t *man, json_t *threads, struct wal_retention *rt)
{
	if (rt->n)
		qsort(rt->threads, rt->n, sizeof(*rt->threads), retention_cmp);
	for (size_t j = 0; j < json_array_size(threads); j++) {
		json_t *o = json_array_get(threads, j);
		struct wal_retention_thread *t =
		    retention_of(rt, json_integer_value(json_object_get(o, "thread")));
		retention_set_thread(o, t);
		if (t)
			t->listed = true;
	}
	retention_whole_threads(threads, rt);
	uint64_t gens = 0, events = 0, bytes = 0, whole = 0, until = 0;
	for (size_t i = 0; i < rt->n; i++) {
		const struct wal_retention_thread *t = &rt->threads[i];
		if (!t->listed && !t->whole)
			continue; /* a thread neither on disk nor deleted whole: not counted */
		gens += t->gens;
		events += t->events;
		bytes += t->bytes;
		whole += t->whole;
		until = t->until_ns > until ? t->until_ns : until;
	}
	if (!rt->found)
		return; /* a recorder that kept none: the manifest's own, as it was */
	json_t *ret = json_object_get(man, "retention");
	if (!json_is_object(ret))
		json_object_set_new(man, "retention", ret = json_object());
	json_object_set_new(ret, "retired_generations", json_integer((json_int_t)gens));
	json_object_set_new(ret, "retired_events", json_integer((json_int_t)events));
	json_object_set_new(ret, "retired_bytes", json_integer((json_int_t)bytes));
	json_object_set_new(ret, "retired_threads", json_integer((json_int_t)whole));
	json_object_set_new(ret, "retired_until_ns", json_integer((json_int_t)until));
	json_object_set_new(ret, "symbols_deleted", json_boolean(rt->symbols_deleted));
}
