/*
 * ada validate DIR: checks every ATF file of every pid_N/thread_K/ at or
 * under DIR (all retention generations, their detail files and links),
 * plus each pid's manifest.json and module_<ID>.syms, whose problems are
 * warnings. One line per problem, "path: offset N: what is wrong", then a
 * summary. Exit 0 only when there is no error; 1 when there are; 2 for a
 * usage error, a missing path or no traces at all.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf.h"
#include "cmd.h"
#include "manifest.h"
#include "read.h"
#include "symbols.h"

struct validate_ctx {
	struct ada_atf_report rep;
	bool quiet; /* errors only */
};

static void validate_problem(void *ctx, enum ada_atf_severity sev, const char *path, uint64_t off,
                             const char *msg)
{
	struct validate_ctx *v = ctx;

	if (sev == ADA_ATF_WARNING && v->quiet)
		return;
	printf("%s: offset %" PRIu64 ": %s%s\n", path, off,
	       sev == ADA_ATF_WARNING ? "warning: " : "", msg);
}

/* The sentence every reader says of a file that shrank under it (read.c,
 * rd_shrank); counted as an error by the validator. */
static void validate_shrank(void *ctx, const char *path)
{
	(void)ctx;
	ada_log("%s shrank while being read: what lay past its new end read as zeros, not as "
	        "its events; read what was there",
	        path);
}

static void validate_warn(struct validate_ctx *v, const char *path, const char *fmt,
                          const char *arg)
{
	char msg[400];

	snprintf(msg, sizeof(msg), fmt, arg);
	v->rep.warnings++;
	validate_problem(v, ADA_ATF_WARNING, path, 0, msg);
}

static void validate_syms_warn(void *ctx, const char *path, uint64_t line, const char *msg)
{
	struct validate_ctx *v = ctx;
	char buf[400];

	if (line)
		snprintf(buf, sizeof(buf), "line %" PRIu64 ": %s", line, msg);
	else
		snprintf(buf, sizeof(buf), "%s", msg);
	v->rep.warnings++;
	validate_problem(v, ADA_ATF_WARNING, path, 0, buf);
}

static json_t *validate_manifest(struct validate_ctx *v, const char *pid_dir)
{
	char path[4096];
	json_t *doc = NULL;
	int err = ada_manifest_read(pid_dir, &doc);
	const char *state;

	snprintf(path, sizeof(path), "%s/%s", pid_dir, ADA_MANIFEST_NAME);
	if (err == -ENOENT)
		validate_warn(v, path, "%s", "missing; the ATF files are still checked");
	else if (err == -EBADMSG)
		validate_warn(v, path, "%s",
		              "damaged (not an ada-manifest JSON object); the ATF files are "
		              "still checked");
	else if (err)
		validate_warn(v, path, "cannot read: %s", strerror(-err));
	if (!doc)
		return NULL;
	state = ada_manifest_state(doc);
	if (!state)
		validate_warn(v, path, "%s", "has no \"state\"");
	else if (!strcmp(state, "recording"))
		validate_warn(
		    v, path, "state is \"%s\": the recording was not finalized (try `ada recover`)",
		    state);
	return doc;
}

/* Events on disk for thread dir (all generations, whole events only). */
static uint64_t validate_events_on_disk(const char *dir)
{
	struct ada_atf_thread *t;
	uint64_t n = 0;

	if (ada_atf_thread_open(dir, ADA_ATF_OPEN_SALVAGE, &t))
		return 0;
	for (size_t i = 0; i < t->ngen; i++)
		n += t->gen[i].index ? ada_atf_index_count(t->gen[i].index) : 0;
	ada_atf_thread_free(t);
	return n;
}

/* The disk budget deleted every file of the manifest's thread i, and its
 * directory (docs/format.md, "Bounded disk"): no directory is expected. */
static bool validate_retired_whole(const json_t *doc, size_t i)
{
	json_t *t = json_array_get(json_object_get(doc, "threads"), i);
	return json_is_true(json_object_get(t, "retired_whole"));
}

/* A finalized manifest must describe the thread directories there are:
 * each listed thread exists and its event count matches the files. */
static void validate_manifest_threads(struct validate_ctx *v, const struct ada_atf_pid *p,
                                      const json_t *doc)
{
	const char *state = ada_manifest_state(doc);
	struct ada_manifest_thread mt;
	char path[4096], msg[200];

	if (!state || !strcmp(state, "recording"))
		return; /* counts are not final yet */
	snprintf(path, sizeof(path), "%s/%s", p->dir, ADA_MANIFEST_NAME);
	for (size_t i = 0; i < ada_manifest_thread_count(doc); i++) {
		if (ada_manifest_thread_get(doc, i, &mt) || validate_retired_whole(doc, i))
			continue;
		size_t k = 0;
		while (k < p->nthreads && p->thread_ids[k] != mt.thread)
			k++;
		if (k == p->nthreads) {
			snprintf(msg, sizeof(msg),
			         "lists thread %u, but there is no thread_%u directory", mt.thread,
			         mt.thread);
			validate_warn(v, path, "%s", msg);
			continue;
		}
		uint64_t disk = validate_events_on_disk(p->thread_dirs[k]);
		if (disk != mt.events) {
			snprintf(msg, sizeof(msg),
			         "says thread %u has %" PRIu64 " events, its files hold %" PRIu64,
			         mt.thread, mt.events, disk);
			validate_warn(v, path, "%s", msg);
		}
	}
}

static int validate_pid(struct validate_ctx *v, const struct ada_atf_pid *p)
{
	struct ada_symtab *st = NULL;
	json_t *doc = validate_manifest(v, p->dir);
	int err = ada_symtab_load(p->dir, doc, validate_syms_warn, v, &st);

	ada_symtab_free(st);
	if (!err && doc)
		validate_manifest_threads(v, p, doc);
	json_t *ret =
	    doc ? json_object_get(json_object_get(doc, "retention"), "retired_threads") : NULL;
	bool retired = json_is_integer(ret) && json_integer_value(ret) > 0;
	json_decref(doc);
	if (err)
		return err;
	if (p->nthreads == 0 &&
	    !retired) /* else the budget deleted them, and the manifest says so */
		validate_warn(v, p->dir, "%s",
		              "no thread_N directories: the process recorded no events");
	for (size_t i = 0; i < p->nthreads; i++) {
		err = ada_atf_validate_thread(p->thread_dirs[i], &v->rep);
		if (err) {
			ada_log("%s: cannot read the directory: %s", p->thread_dirs[i],
			        rd_strerror(err));
			v->rep.errors++;
		}
	}
	return 0;
}

/* A retired process's line (retired.jsonl): nothing of it is left to
 * check but that it says what it counts. */
static int validate_retired_one(json_t *line, void *arg)
{
	struct validate_ctx *v = arg;
	char pid[32];
	snprintf(pid, sizeof(pid), "%lld",
	         (long long)json_integer_value(json_object_get(line, "pid")));
	if (!json_is_integer(json_object_get(json_object_get(line, "metrics"), "events_written")))
		validate_warn(v, ADA_RETIRED_NAME,
		              "the line of process %s counts no events_written", pid);
	return 0;
}

/* The session's retired processes: their count (0: none), their lines
 * checked; a line that is not one is a warning. */
static int validate_retired(struct validate_ctx *v, const char *dir)
{
	uint64_t bad = 0;
	char path[4096], msg[200];
	snprintf(path, sizeof(path), "%s/%s", dir, ADA_RETIRED_NAME);
	int n = ada_retired_foreach(dir, validate_retired_one, v, &bad);
	if (n < 0) {
		snprintf(msg, sizeof(msg), "cannot be read (%s)", strerror(-n));
		validate_warn(v, path, "%s", msg);
	}
	if (bad) {
		snprintf(msg, sizeof(msg), "%" PRIu64 " lines are not a retired process's", bad);
		validate_warn(v, path, "%s", msg);
	}
	return n > 0 ? n : 0;
}

static void validate_usage(FILE *f)
{
	fprintf(f, "usage: ada validate [--quiet] [--max-per-file N] DIR\n"
	           "  Checks every pid_N/thread_K/*.atf at or under DIR against the ATF v2\n"
	           "  format; prints one line per problem (path: offset N: what is wrong).\n"
	           "  --quiet           print errors only, not warnings\n"
	           "  --max-per-file N  show at most N problems per file (default 50)\n"
	           "  Exit status: 0 all valid, 1 problems found, 2 bad usage or no traces.\n");
}

static int validate_args(int argc, char **argv, struct validate_ctx *v, const char **dir)
{
	static const struct option opts[] = {
	    {"quiet", no_argument, NULL, 'q'},
	    {"max-per-file", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		if (c == 'q') {
			v->quiet = true;
		} else if (c == 'm') {
			v->rep.max_per_file = (uint32_t)strtoul(optarg, NULL, 10);
		} else if (c == 'h') {
			validate_usage(stdout);
			return 0;
		} else {
			validate_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		ada_log("validate takes one directory; run `ada validate --help`");
		return 2;
	}
	*dir = argv[optind];
	return -1;
}

int cmd_validate(int argc, char **argv)
{
	struct validate_ctx v = {.rep = {.fn = validate_problem, .shrank = validate_shrank}};
	struct ada_atf_tree *tree = NULL;
	const char *dir = NULL;
	size_t nthreads = 0;
	int rc = validate_args(argc, argv, &v, &dir), err = 0;

	if (rc >= 0)
		return rc;
	v.rep.ctx = &v;
	cmd_session_root(dir);
	int retired = validate_retired(&v, dir);
	/* A session the budget retired every process of holds no pid_N. */
	if (retired && ada_atf_tree_scan(dir, &tree) != 0)
		tree = NULL;
	if (!tree)
		tree = cmd_open_tree(dir);
	if (!tree)
		return 2;
	for (size_t i = 0; i < tree->npids && !err; i++) {
		err = validate_pid(&v, &tree->pids[i]);
		nthreads += tree->pids[i].nthreads;
	}
	if (err)
		ada_log("%s: %s", dir, strerror(-err));
	if (retired)
		printf("%s: %d process%s retired (every file deleted by the disk budget; %s)\n",
		       dir, retired, retired == 1 ? "" : "es", ADA_RETIRED_NAME);
	printf("%s: %zu process%s, %zu thread%s: %" PRIu64 " error%s, %" PRIu64 " warning%s: %s\n",
	       dir, tree->npids, tree->npids == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s",
	       v.rep.errors, v.rep.errors == 1 ? "" : "s", v.rep.warnings,
	       v.rep.warnings == 1 ? "" : "s", v.rep.errors || err ? "INVALID" : "valid");
	ada_atf_tree_free(tree);
	return v.rep.errors || err ? 1 : 0;
}
