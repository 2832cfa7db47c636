/*
 * What the disk budget deleted from a process whose recording goes on,
 * kept on disk for `ada recover`: the files are gone, so only the
 * recorder knows their events, bytes and times, and a recorder that dies
 * would take the manifest's `retention` facts with it.
 *
 * Threads: wal_retention_save and wal_retention_drop on the drain thread
 * (budget.c, manifest.c); the reader on the `ada recover` command's.
 *
 * pid_N/.retention (0600, never through a link) is text, kept each time
 * the budget deletes a file of a process not finished yet, removed once
 * the final manifest says it all:
 *
 *   ada-retention 1
 *   symbols_deleted 0|1
 *   thread K tid T gens G events E bytes B until U whole 0|1
 *
 * a thread line per thread the budget deleted something of, its counts
 * so far (the manifest's per-thread retired_* and retired_whole). A
 * deletion appends the thread's new line (O_APPEND, one write); the file
 * is written whole again (ada_fs_replace) once the lines appended are
 * twice those of a whole file. The reader takes each thread's last line,
 * and drops a last line without its newline (a recorder killed while
 * appending). A recorder killed between deleting a file and its line
 * loses that file's counts (said in docs/format.md). Read back as input
 * from a place the user owns: every line checked, its size and its
 * lines bounded.
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
#define RETENTION_LINE 160               /* a thread line's room, numbers at their widest */
#define RETENTION_MAX_BYTES (64u << 20)  /* what recover reads of it, at most */
#define RETENTION_MAX_THREADS (1u << 21) /* thread lines taken, at most */

/* t's line (its cumulative counts) into out, which has RETENTION_LINE. */
static size_t retention_text(char *out, const struct wal_thread *t)
{
	int n = snprintf(out, RETENTION_LINE,
	                 "thread %u tid %u gens %u events %llu bytes %llu until %llu whole %d\n",
	                 t->seq, t->tid, t->retired_gens, (unsigned long long)t->retired_events,
	                 (unsigned long long)t->retired_bytes,
	                 (unsigned long long)t->retired_until_ns, t->final_retired);
	return n > 0 && n < RETENTION_LINE ? (size_t)n : 0;
}

/* The whole file anew: one line per thread with something deleted. */
static void retention_rewrite(struct wal_proc *p)
{
	size_t cap = 64 + (size_t)p->nthreads * RETENTION_LINE, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return;
	n += (size_t)snprintf(buf, cap, "ada-retention 1\nsymbols_deleted %d\n", p->syms_retired);
	uint32_t lines = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct wal_thread *t = p->threads[i];
		if (t->retired_gens || t->final_retired) {
			n += retention_text(buf + n, t); /* cap has a line's room for each */
			lines++;
		}
	}
	if (ada_fs_replace(p->dir_fd, RETENTION_NAME, buf, n, false) == 0) {
		p->retention_saved = true;
		p->retention_lines = lines;
		p->retention_appended = 0;
	}
	free(buf);
}

/* t's new line at the end of the file (the reader takes a thread's last
 * line): one write, whatever the number of threads. */
static bool retention_append(struct wal_proc *p, const struct wal_thread *t)
{
	char line[RETENTION_LINE];
	size_t n = retention_text(line, t);
	int fd = -1;
	if (!n || ada_fs_open_file(p->dir_fd, RETENTION_NAME, O_WRONLY | O_APPEND, &fd) < 0)
		return false;
	bool ok = ada_fs_write_all(fd, line, n) == 0;
	close(fd);
	return ok;
}

void wal_retention_save(struct wal_proc *p, const struct wal_thread *t)
{
	if (p->finished || p->dir_fd < 0)
		return; /* its manifest says it (wal_manifests_restale) */
	/* Appended, and written whole again once the lines appended are
	 * twice those of a whole file: each deletion costs a line, not a
	 * line per thread (a process with many threads whose finished ones
	 * the budget deletes one by one). */
	if (t && p->retention_saved && p->retention_appended < 2 * p->retention_lines + 16 &&
	    retention_append(p, t)) {
		p->retention_appended++;
		wal_kill_point("retention_appended");
	} else {
		retention_rewrite(p);
	}
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

/* Reads the file of fd into a buffer of its own (NUL-terminated), *len
 * bytes. */
static char *retention_read(int fd, size_t *len)
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
	*len = n;
	return buf;
}

static int retention_cmp(const void *a, const void *b)
{
	const struct wal_retention_thread *x = a, *y = b;
	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	return (x->order > y->order) - (x->order < y->order);
}

/* Sorted by thread, each thread's last line only (the file appends a
 * thread's new counts after its old ones). */
static void retention_last_only(struct wal_retention *rt)
{
	if (!rt->n)
		return;
	qsort(rt->threads, rt->n, sizeof(*rt->threads), retention_cmp);
	size_t k = 0;
	for (size_t i = 0; i < rt->n; i++) {
		if (k && rt->threads[k - 1].seq == rt->threads[i].seq)
			k--;
		rt->threads[k++] = rt->threads[i];
	}
	rt->n = k;
}

static void retention_add(struct wal_retention *rt, const struct wal_retention_thread *t,
                          size_t *cap)
{
	if (rt->n >= RETENTION_MAX_THREADS) {
		rt->bad_lines++;
		return;
	}
	if (rt->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		void *v = realloc(rt->threads, nc * sizeof(*rt->threads));
		if (!v) {
			rt->bad_lines++;
			return;
		}
		rt->threads = v;
		*cap = nc;
	}
	rt->threads[rt->n] = *t;
	rt->threads[rt->n].order = (uint32_t)rt->n;
	rt->n++;
}

static void retention_parse(char *buf, size_t len, struct wal_retention *rt)
{
	/* A last line without its newline is one a recorder killed while
	 * appending did not finish: the counts before it stand. */
	while (len && buf[len - 1] != '\n')
		buf[--len] = '\0';
	char *save = NULL, *line = strtok_r(buf, "\n", &save);
	if (!line || strcmp(line, "ada-retention 1"))
		return;
	rt->found = true;
	size_t cap = 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		struct wal_retention_thread t;
		int syms = 0, used = 0;
		if (sscanf(line, "symbols_deleted %d%n", &syms, &used) == 1 && !line[used] &&
		    (syms == 0 || syms == 1))
			rt->symbols_deleted = syms == 1;
		else if (retention_line(line, &t))
			retention_add(rt, &t, &cap);
		else
			rt->bad_lines++;
	}
	retention_last_only(rt);
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
	size_t len = 0;
	char *buf = retention_read(fd, &len);
	close(fd);
	if (buf)
		retention_parse(buf, len, rt);
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

static int retention_seq_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct wal_retention_thread *)a)->seq,
	         y = ((const struct wal_retention_thread *)b)->seq;
	return (x > y) - (x < y);
}

/* rt's entry of thread seq (rt sorted by seq, one each), NULL when none. */
static struct wal_retention_thread *retention_of(const struct wal_retention *rt, json_int_t seq)
{
	if (seq < 0 || seq > UINT32_MAX)
		return NULL;
	struct wal_retention_thread key = {.seq = (uint32_t)seq};
	if (!rt->n) /* bsearch's array may not be NULL, even when empty */
		return NULL;
	return bsearch(&key, rt->threads, rt->n, sizeof(key), retention_seq_cmp);
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
