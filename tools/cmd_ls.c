/*
 * ada ls [DIR]: the sessions under an output directory (default
 * ./ada_traces, as `ada record --out`), newest first: start, pids, command,
 * duration, events, detail windows, how the processes ended, size on disk.
 * Everything comes from the manifests and the directory sizes; nothing is
 * followed through a symbolic link, and listings are bounded
 * (ADA_FS_WALK_MAX_ENTRIES). DIR may also be one session, or a pid_N
 * directory's parent that is not named session_*.
 *
 * Exit status: 0; 1 when a session could not be read (the others are
 * listed); 2 for bad usage or a DIR that is not a directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "cmd.h"
#include "fs.h"
#include "manifest.h"
#include "read.h"

#define LS_MAX_SESSIONS 100000u
#define LS_MAX_DEPTH 8

struct ls_row {
	char *name;      /* session_YYYYMMDD_HHMMSS */
	char start[32];  /* from the name: YYYY-MM-DD hh:mm:ss */
	char pids[96];   /* "4242" or "4242 +2" */
	char prog[128];  /* the first process's program */
	char exit[64];   /* "exit 0", "SIGSEGV", "recording", "?" */
	uint64_t t0, t1; /* CLOCK_BOOTTIME range of the processes */
	uint64_t events, windows, bytes;
	uint32_t npids;
	bool abnormal;
};

/* Bytes allocated under fd (st_blocks), without following links. */
static uint64_t ls_du(int fd, unsigned depth)
{
	DIR *d = depth < LS_MAX_DEPTH ? ada_fs_opendir(fd, ".") : NULL;
	struct dirent *de;
	struct stat st;
	uint64_t sum = 0;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n++ < ADA_FS_WALK_MAX_ENTRIES) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		sum += (uint64_t)st.st_blocks * 512;
		int sub;
		if (S_ISDIR(st.st_mode) && !ada_fs_open_dir(dirfd(d), de->d_name, &sub)) {
			sum += ls_du(sub, depth + 1);
			close(sub);
		}
	}
	closedir(d);
	return sum;
}

static uint64_t ls_u64(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
	                                                       : 0;
}

/* "exit 0", "SIGSEGV", "killed", "recording"... from one manifest. */
static void ls_exit(const json_t *m, struct ls_row *r)
{
	const json_t *e = json_object_get(m, "exit"), *c = json_object_get(m, "crash");
	const char *state = ada_manifest_state(m),
	           *sn = json_string_value(json_object_get(c, "signal_name"));

	if (json_is_true(json_object_get(e, "abnormal")) || json_is_object(c)) {
		r->abnormal = true;
		if (sn)
			snprintf(r->exit, sizeof(r->exit), "SIG%s", sn);
		else
			snprintf(r->exit, sizeof(r->exit), "signal %" PRIu64, ls_u64(e, "signal"));
	} else if (state && !strcmp(state, "recording")) {
		snprintf(r->exit, sizeof(r->exit), "recording");
	} else if (json_is_integer(json_object_get(e, "status"))) {
		snprintf(r->exit, sizeof(r->exit), "exit %" PRId64,
		         (int64_t)json_integer_value(json_object_get(e, "status")));
	}
}

static void ls_pid(const struct ada_atf_pid *p, struct ls_row *r, uint32_t *bad)
{
	json_t *m = NULL, *v;
	size_t len = strlen(r->pids);

	if (r->npids++ == 0)
		snprintf(r->pids, sizeof(r->pids), "%" PRIu32, p->pid);
	else if (len + 12 < sizeof(r->pids))
		snprintf(r->pids + len, sizeof(r->pids) - len, ",%" PRIu32, p->pid);
	if (ada_manifest_read(p->dir, &m)) {
		(*bad)++;
		ada_log("%s: no readable manifest.json", p->dir);
		return;
	}
	if (r->npids == 1) {
		const char *s = json_string_value(json_array_get(json_object_get(m, "program"), 0));
		const char *b = s ? strrchr(s, '/') : NULL;
		snprintf(r->prog, sizeof(r->prog), "%s", b ? b + 1 : s ? s : "?");
		ls_exit(m, r);
	} else if (!r->abnormal) {
		struct ls_row other = {
		    0}; /* an abnormal child shows instead of the parent's exit */
		ls_exit(m, &other);
		if (other.abnormal) {
			r->abnormal = true;
			memcpy(r->exit, other.exit, sizeof(r->exit));
		}
	}
	uint64_t t0 = ls_u64(m, "start_time_ns"), t1 = ls_u64(m, "end_time_ns");
	if (t0 && (!r->t0 || t0 < r->t0))
		r->t0 = t0;
	if (t1 > r->t1)
		r->t1 = t1;
	v = json_object_get(json_object_get(m, "metrics"), "events_written");
	if (json_is_integer(v)) {
		r->events += ls_u64(json_object_get(m, "metrics"), "events_written");
	} else { /* an older or recovered manifest: what its thread files hold */
		struct ada_manifest_thread th;
		for (size_t i = 0; i < ada_manifest_thread_count(m); i++)
			if (!ada_manifest_thread_get(m, i, &th))
				r->events += th.events;
	}
	size_t nw =
	    json_array_size(json_object_get(json_object_get(m, "flight_recorder"), "windows"));
	if (nw > r->windows)
		r->windows = nw; /* windows are session-wide: every manifest lists them */
	json_decref(m);
}

/* session_YYYYMMDD_HHMMSS -> "YYYY-MM-DD HH:MM:SS" (else "-"). */
static void ls_start(const char *name, char *out, size_t len)
{
	unsigned y, mo, d, h, mi, s;

	if (sscanf(name, "session_%4u%2u%2u_%2u%2u%2u", &y, &mo, &d, &h, &mi, &s) == 6)
		snprintf(out, len, "%04u-%02u-%02u %02u:%02u:%02u", y, mo, d, h, mi, s);
	else
		snprintf(out, len, "-");
}

static int ls_session(int parent, const char *path, const char *name, struct ls_row *r,
                      uint32_t *bad)
{
	struct ada_atf_tree *tree;
	int fd, err = ada_atf_tree_scan(path, &tree);

	memset(r, 0, sizeof(*r));
	snprintf(r->exit, sizeof(r->exit), "?");
	r->name = strdup(name);
	if (!r->name)
		return -ENOMEM;
	ls_start(name, r->start, sizeof(r->start));
	if (err)
		return err;
	for (size_t i = 0; i < tree->npids; i++)
		ls_pid(&tree->pids[i], r, bad);
	ada_atf_tree_free(tree);
	if (!ada_fs_open_dir(parent, name, &fd)) {
		r->bytes = ls_du(fd, 0);
		close(fd);
	}
	return 0;
}

static int ls_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ls_row *)b)->name, ((const struct ls_row *)a)->name);
}

static void ls_print(const struct ls_row *r, size_t n, bool json)
{
	char d[32], sz[32];

	if (!json)
		printf("%-25s %-19s %-14s %-20s %10s %12s %7s %-10s %9s\n", "SESSION", "START",
		       "PIDS", "COMMAND", "DURATION", "EVENTS", "WINDOWS", "END", "SIZE");
	for (size_t i = 0; i < n; i++) {
		if (r[i].bytes >= 1 << 20)
			snprintf(sz, sizeof(sz), "%.1f MiB", (double)r[i].bytes / (1 << 20));
		else
			snprintf(sz, sizeof(sz), "%.1f KiB", (double)r[i].bytes / 1024);
		if (json) {
			json_t *o = json_pack(
			    "{sssssisssIsIsIsssbsI}", "session", r[i].name, "start", r[i].start,
			    "pids", (int)r[i].npids, "command", r[i].prog, "duration_ns",
			    (json_int_t)(r[i].t1 > r[i].t0 ? r[i].t1 - r[i].t0 : 0), "events",
			    (json_int_t)r[i].events, "windows", (json_int_t)r[i].windows, "end",
			    r[i].exit, "abnormal", r[i].abnormal, "bytes", (json_int_t)r[i].bytes);
			json_object_set_new(o, "pid_list", json_string(r[i].pids));
			json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
			printf("\n");
			json_decref(o);
			continue;
		}
		printf("%-25s %-19s %-14s %-20s %10s %12" PRIu64 " %7" PRIu64 " %-10s %9s\n",
		       r[i].name, r[i].start, r[i].pids, r[i].prog,
		       r[i].t1 > r[i].t0 ? rd_fmt_ns(r[i].t1 - r[i].t0, d, sizeof(d)) : "-",
		       r[i].events, r[i].windows, r[i].exit, sz);
	}
}

/* DIR itself is one session when it holds pid_N directories. */
static bool ls_is_session(int fd)
{
	DIR *d = ada_fs_opendir(fd, ".");
	struct dirent *de;
	bool yes = false;
	unsigned n = 0;

	while (d && !yes && (de = readdir(d)) && n++ < ADA_FS_WALK_MAX_ENTRIES)
		yes = !strncmp(de->d_name, "pid_", 4) &&
		      ada_fs_entry_kind(dirfd(d), de) == ADA_FS_DIR;
	if (d)
		closedir(d);
	return yes;
}

static int ls_collect(const char *dir, int fd, struct ls_row **rows, size_t *n, uint32_t *bad)
{
	DIR *d = ada_fs_opendir(fd, ".");
	struct dirent *de;
	size_t cap = 0;
	char path[4096];
	int err = d ? 0 : -errno;

	while (!err && (de = readdir(d)) && *n < LS_MAX_SESSIONS) {
		if (strncmp(de->d_name, "session_", 8) ||
		    ada_fs_entry_kind(dirfd(d), de) != ADA_FS_DIR)
			continue;
		if (*n == cap) {
			struct ls_row *nr =
			    realloc(*rows, (cap = cap ? cap * 2 : 64) * sizeof(*nr));
			if (!nr) {
				err = -ENOMEM;
				break;
			}
			*rows = nr;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int e = ls_session(fd, path, de->d_name, &(*rows)[*n], bad);
		if (e == -ENOMEM)
			err = e;
		else
			(*n)++;
	}
	if (d)
		closedir(d);
	return err;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	const char *dir = "ada_traces";
	struct ls_row *rows = NULL;
	size_t n = 0;
	uint32_t bad = 0;
	bool json = false;
	int c, fd, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else {
			fprintf(c == 'h' ? stdout : stderr,
			        "usage: ada ls [--json] [DIR]\n"
			        "  The sessions under DIR (default ./ada_traces), newest first.\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc - 1) {
		ada_log("ls takes at most one directory");
		return 2;
	}
	if (optind == argc - 1)
		dir = argv[optind];
	err = ada_fs_open_dir(AT_FDCWD, dir, &fd);
	if (err) {
		ada_log("%s: %s", dir,
		        err == -ENOENT ? "no such directory (no recording made here "
		                         "yet? `ada record --out DIR` makes one)"
		                       : strerror(-err));
		return 2;
	}
	if (ls_is_session(fd)) {
		rows = calloc(1, sizeof(*rows));
		const char *b = strrchr(dir, '/');
		err = rows ? ls_session(AT_FDCWD, dir, dir, rows, &bad) : -ENOMEM;
		if (rows && b && b[1]) {
			free(rows->name);
			rows->name = strdup(b + 1);
			ls_start(b + 1, rows->start, sizeof(rows->start));
		}
		n = rows && rows->name ? 1 : 0;
	} else {
		err = ls_collect(dir, fd, &rows, &n, &bad);
	}
	close(fd);
	qsort(rows, n, sizeof(*rows), ls_cmp);
	if (!err)
		ls_print(rows, n, json);
	for (size_t i = 0; i < n; i++)
		free(rows[i].name);
	free(rows);
	if (err) {
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	return bad ? 1 : 0;
}
