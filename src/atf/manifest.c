/*
 * manifest.json: atomic write (ada_fs_replace: a private temporary file
 * with an unpredictable name, fsync, renameat) and read, plus the
 * accessors dump and validate use. Threads: the recorder's main thread
 * writes; the CLI reads. Never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_internal.h"
#include "fs.h"
#include "manifest.h"

json_t *ada_manifest_new(int32_t pid)
{
	return json_pack("{s:s, s:i, s:i, s:s}", "format", ADA_MANIFEST_FORMAT, "version",
	                 ADA_MANIFEST_VERSION, "pid", (json_int_t)pid, "state", "recording");
}

int ada_manifest_writeat(int dirfd, const json_t *doc)
{
	return ada_manifest_writeat_sync(dirfd, doc, true);
}

int ada_manifest_writeat_sync(int dirfd, const json_t *doc, bool sync)
{
	if (!json_is_object(doc))
		return -EINVAL;
	return ada_json_writeat(dirfd, ADA_MANIFEST_NAME, doc, sync);
}

int ada_json_writeat(int dirfd, const char *name, const json_t *doc, bool sync)
{
	size_t n = 0;
	char *text = ada_json_dumps_indent2(doc, &n); /* json_dumps' INDENT(2) text */
	if (!text)
		return -ENOMEM;
	char *nl = realloc(text, n + 2);
	int err = -ENOMEM;
	if (nl) {
		text = nl;
		memcpy(text + n, "\n", 2);
		err = ada_fs_replace(dirfd, name, text, n + 1, sync);
	}
	free(text);
	return err;
}

int ada_manifest_write(const char *pid_dir, const json_t *doc)
{
	int fd, err = ada_fs_open_dir(AT_FDCWD, pid_dir, &fd);
	if (err)
		return err;
	err = ada_manifest_writeat(fd, doc);
	close(fd);
	return err;
}

static int manifest_check(json_t *doc, json_t **out)
{
	json_t *fmt = json_object_get(doc, "format");

	*out = NULL;
	if (!json_is_object(doc) || !json_is_string(fmt) ||
	    strcmp(json_string_value(fmt), ADA_MANIFEST_FORMAT)) {
		json_decref(doc);
		return -EBADMSG;
	}
	*out = doc;
	return 0;
}

int ada_manifest_parse(const char *buf, size_t len, json_t **out)
{
	json_error_t jerr;
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);

	*out = NULL;
	if (!doc)
		return -EBADMSG;
	return manifest_check(doc, out);
}

char *ada_json_readfd(int fd, size_t max, size_t *out_len)
{
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			char *nb =
			    cap < max ? realloc(buf, cap * 2 > max ? max + 1 : cap * 2) : NULL;
			if (!nb) {
				free(buf);
				return NULL; /* past max, or no memory */
			}
			buf = nb;
			cap = cap * 2 > max ? max + 1 : cap * 2;
		}
	}
	if (buf && len > max) {
		free(buf);
		return NULL;
	}
	*out_len = len;
	return buf;
}

json_t *ada_json_loadfd(int fd, size_t max)
{
	size_t len = 0;
	char *buf = ada_json_readfd(fd, max, &len);
	json_t *doc = buf ? json_loadb(buf, len, 0, NULL) : NULL;
	free(buf);
	return doc;
}

int ada_manifest_read(const char *pid_dir, json_t **out)
{
	struct atf_map m;
	char *path = atf_strdup_printf("%s/%s", pid_dir, ADA_MANIFEST_NAME);
	int err;

	*out = NULL;
	if (!path)
		return -ENOMEM;
	err = atf_map_file(path, &m);
	free(path);
	if (err)
		return err;
	err = ada_manifest_parse((const char *)m.base, m.len, out);
	if (!err && atf_map_shrank(&m)) { /* zeros past its new end: not what was written */
		json_decref(*out);
		*out = NULL;
		err = -EBADMSG;
	}
	atf_map_release(&m);
	return err;
}

/* The recorder appends a process's line before it removes pid_N/: a
 * recorder stopped between the two leaves both, and the directory (the
 * same process: the same end_time_ns) is what counts. */
static bool retired_still_dir(const char *session, json_t *line)
{
	char *dir = atf_strdup_printf("%s/pid_%lld", session,
	                              (long long)json_integer_value(json_object_get(line, "pid")));
	json_t *man = NULL;
	bool same = dir && ada_manifest_read(dir, &man) == 0 &&
	            json_integer_value(json_object_get(man, "end_time_ns")) ==
	                json_integer_value(json_object_get(line, "end_time_ns"));
	json_decref(man);
	free(dir);
	return same;
}

int ada_retired_foreach(const char *session, int (*fn)(json_t *line, void *arg), void *arg,
                        uint64_t *bad)
{
	struct atf_map m;
	char *path = atf_strdup_printf("%s/%s", session, ADA_RETIRED_NAME);
	if (!path)
		return -ENOMEM;
	int err = atf_map_file(path, &m), n = 0;
	free(path);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	if (m.len > ADA_RETIRED_MAX) {
		atf_map_release(&m);
		return -EFBIG;
	}
	const char *p = (const char *)m.base, *end = p + m.len;
	while (p < end && !err) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* a line being appended (the recorder runs): not one yet */
		const char *e = nl;
		json_t *line = NULL;
		/* A line cut short (a full disk) or not one the recorder writes. */
		if (e > p && (ada_manifest_parse(p, (size_t)(e - p), &line) != 0 ||
		              !json_is_integer(json_object_get(line, "pid")))) {
			if (bad)
				(*bad)++;
		} else if (line && !retired_still_dir(session, line)) {
			err = fn(line, arg);
			n++;
		}
		json_decref(line);
		p = e + 1;
	}
	atf_map_release(&m);
	return err < 0 ? err : n;
}

const char *ada_manifest_state(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "state"));
}

int64_t ada_manifest_pid(const json_t *doc)
{
	json_t *p = json_object_get(doc, "pid");
	return json_is_integer(p) ? (int64_t)json_integer_value(p) : -1;
}

static uint64_t manifest_u64(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_integer(v))
		return (uint64_t)json_integer_value(v);
	/* Addresses may be written as "0x..." strings (JSON numbers are
	 * doubles for many readers). */
	if (json_is_string(v))
		return strtoull(json_string_value(v), NULL, 0);
	return 0;
}

size_t ada_manifest_module_count(const json_t *doc)
{
	return json_array_size(json_object_get(doc, "modules"));
}

int ada_manifest_module_get(const json_t *doc, size_t i, struct ada_manifest_module *out)
{
	json_t *m = json_array_get(json_object_get(doc, "modules"), i);

	memset(out, 0, sizeof(*out));
	if (!json_is_object(m) || !json_is_integer(json_object_get(m, "id")))
		return -EINVAL;
	out->id = (uint32_t)json_integer_value(json_object_get(m, "id"));
	out->path = json_string_value(json_object_get(m, "path"));
	out->build_id = json_string_value(json_object_get(m, "build_id"));
	out->symbols = json_string_value(json_object_get(m, "symbols"));
	out->load_base = manifest_u64(m, "load_base");
	return 0;
}

size_t ada_manifest_thread_count(const json_t *doc)
{
	return json_array_size(json_object_get(doc, "threads"));
}

int ada_manifest_thread_get(const json_t *doc, size_t i, struct ada_manifest_thread *out)
{
	json_t *t = json_array_get(json_object_get(doc, "threads"), i);
	json_t *files, *f;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(t) || !json_is_integer(json_object_get(t, "thread")))
		return -EINVAL;
	out->thread = (uint32_t)json_integer_value(json_object_get(t, "thread"));
	out->tid = (uint32_t)manifest_u64(t, "tid");
	files = json_object_get(t, "files");
	json_array_foreach(files, k, f) out->events += manifest_u64(f, "events");
	return 0;
}

uint32_t ada_manifest_tid_of(const json_t *doc, uint32_t thread)
{
	struct ada_manifest_thread t;
	size_t n = ada_manifest_thread_count(doc);
	size_t c = thread < n ? thread : n ? n - 1 : 0;

	/* The recorder lists threads nearly in the order of their numbers
	 * (in the order its drain met them): look outward from where thread
	 * N would be, so a reader asking for each of 10 000 threads does not
	 * scan the whole list each time. Every entry is still visited once. */
	for (size_t d = 0; d <= n; d++) {
		if (d <= c && !ada_manifest_thread_get(doc, c - d, &t) && t.thread == thread)
			return t.tid;
		if (d && c + d < n && !ada_manifest_thread_get(doc, c + d, &t) &&
		    t.thread == thread)
			return t.tid;
	}
	return 0;
}

uint64_t ada_count_only_uncalled(const json_t *count_only)
{
	json_int_t n = json_integer_value(json_object_get(count_only, "uncalled"));
	/* The agent writes a uint32_t: more is a lie, kept small enough that
	 * the readers' sums over the processes cannot overflow. */
	return n <= 0 ? 0 : n > (json_int_t)UINT32_MAX ? UINT32_MAX : (uint64_t)n;
}
