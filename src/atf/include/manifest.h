/*
 * ada manifest: pid_N/manifest.json, read and written with jansson.
 * The schema (keys and meaning) is in docs/manifest.md.
 *
 * Writers build the document with jansson and hand it to
 * ada_manifest_write(), which replaces manifest.json atomically (a
 * temporary file in the same directory, fsync, rename), so a reader or a
 * crash never sees half a manifest. Errors are 0 / -errno; nothing prints.
 */
#ifndef ADA_MANIFEST_H
#define ADA_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define ADA_MANIFEST_FORMAT "ada-manifest"
#define ADA_MANIFEST_VERSION 1
#define ADA_MANIFEST_NAME "manifest.json"
/* The session's retired processes, one JSON object a line (docs/manifest.md,
 * "Retired processes"). */
#define ADA_RETIRED_NAME "retired.jsonl"

/* A new document with format, version, pid and state "recording" set
 * (the other keys are the writer's). NULL when out of memory. */
json_t *ada_manifest_new(int32_t pid);

/* Writes doc as pid_dir/manifest.json (indented, keys in insertion order).
 * Errors: -EINVAL (doc not an object), -ENOMEM, -errno of open/write/
 * fsync/rename. The old manifest stays in place when anything fails. */
int ada_manifest_write(const char *pid_dir, const json_t *doc);
/* The same in the directory dirfd (the recorder's pid_N descriptor): the
 * file is 0600, its temporary name unpredictable, nothing is followed. */
int ada_manifest_writeat(int dirfd, const json_t *doc);
/* The same, with the fsync before the rename only when sync is true (the
 * recorder syncs with --safe only, as it does its index files: an fsync
 * per process costs a fork-heavy program's recording tens of ms each). */
int ada_manifest_writeat_sync(int dirfd, const json_t *doc, bool sync);
/* Any JSON document written so, as dirfd/name (a forked child's
 * agent.json the recorder makes its own). */
int ada_json_writeat(int dirfd, const char *name, const json_t *doc, bool sync);

/* The JSON document in the file fd, read in one go (jansson's
 * json_loadfd reads a byte per system call: 2 400 of them for a forked
 * child's agent.json); NULL when it is not JSON or longer than max bytes.
 * The caller json_decref()s it and closes fd. */
json_t *ada_json_loadfd(int fd, size_t max);
/* The file fd's bytes in a new buffer (*len of them, not NUL-ended), read
 * as ada_json_loadfd reads them; NULL past max bytes or out of memory. */
char *ada_json_readfd(int fd, size_t max, size_t *len);
/* What readers of an agent.json accept at most (a program with thousands
 * of modules writes a few MiB). */
#define ADA_AGENT_JSON_MAX (64u << 20)

/* The session's retired processes (retired.jsonl, at most ADA_RETIRED_MAX
 * bytes): fn is called with each line's object (a manifest's keys, with
 * "retired": true; borrowed), in order; a line whose process still has
 * its pid_N/ (the same end_time_ns: the recorder stopped before removing
 * it) is skipped, since the directory counts. Lines that are not such an
 * object are counted in *bad (when bad is not NULL); a last line without its
 * newline is one being appended, left out. Returns the lines
 * given to fn (0: no file), fn's first negative return, or -errno
 * (-EFBIG: too long). */
#define ADA_RETIRED_MAX (512u << 20)
int ada_retired_foreach(const char *session, int (*fn)(json_t *line, void *arg), void *arg,
                        uint64_t *bad);

/* Reads pid_dir/manifest.json into *out (caller json_decref()s it).
 * Errors: -ENOENT (missing), -EBADMSG (not JSON, not an object, or its
 * "format" is not "ada-manifest"), -ENOMEM. *out is NULL on error. */
int ada_manifest_read(const char *pid_dir, json_t **out);
/* Same over a buffer (for the fuzz target). */
int ada_manifest_parse(const char *buf, size_t len, json_t **out);

/* ---- accessors (borrowed references; NULL / 0 when absent or wrong type) */

const char *ada_manifest_state(const json_t *doc);
int64_t ada_manifest_pid(const json_t *doc); /* -1 when absent */

struct ada_manifest_module {
	uint32_t id;
	const char *path;     /* NULL when absent */
	const char *build_id; /* NULL when absent */
	const char *symbols;  /* relative path of the .syms file, or NULL */
	uint64_t load_base;
};
/* Number of entries of "modules"; module i into *out (0 or -EINVAL when
 * entry i is not an object with a numeric "id"). */
size_t ada_manifest_module_count(const json_t *doc);
int ada_manifest_module_get(const json_t *doc, size_t i, struct ada_manifest_module *out);

struct ada_manifest_thread {
	uint32_t thread; /* N of thread_N */
	uint32_t tid;
	uint64_t events; /* sum over "files" */
};
size_t ada_manifest_thread_count(const json_t *doc);
int ada_manifest_thread_get(const json_t *doc, size_t i, struct ada_manifest_thread *out);
/* The tid recorded for thread_N, or 0 when the manifest does not say. */
uint32_t ada_manifest_tid_of(const json_t *doc, uint32_t thread);

/* The count-only functions a `count_only` object (a manifest's or an
 * agent.json's) counts but does not list, never having been called: its
 * "uncalled"; 0 when absent (an older file lists them all) or negative
 * (the file is input), at most UINT32_MAX (the agent's type: a larger
 * value is a lie, and readers add it up over processes).
 * docs/manifest.md, hooks.count_only. */
uint64_t ada_count_only_uncalled(const json_t *count_only);

#endif
