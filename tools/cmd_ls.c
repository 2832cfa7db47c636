/*
 * ada ls [DIR]: the sessions under an output directory (default
 * ./ada_traces, as `ada record --out`), newest first: start, pids, command,
 * duration, events, detail windows, how the processes ended, size on disk.
 * Everything comes from the manifests and the directory sizes; nothing is
 * followed through a symbolic link, and listings are bounded
 * (ADA_FS_WALK_MAX_ENTRIES). A session is a directory named session_* or
 * holding pid_N directories, whatever its name; DIR may be one, hold
 * several, or hold directories that hold them (one level: several --out
 * directories).
 *
 * Exit status: 0; 1 when a session could not be read (the others are
 * listed); 2 for bad usage, a DIR that is not a directory, or no session
 * (one sentence saying what to do).
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

#define LS_PIDS_WIDTH 22 /* the PIDS column: the first pids, then "+N more" */

struct ls_row {
	char *name;      /* session_YYYYMMDD_HHMMSS, or as DIR names it */
	char start[32];  /* from the name: YYYY-MM-DD hh:mm:ss */
	char *pids;      /* every pid, "4242,4243" */
	size_t pids_len; /* of pids */
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

/* Appends ",pid" (or "pid") to r->pids. -ENOMEM. */
static int ls_add_pid(struct ls_row *r, uint32_t pid)
{
	char *n = realloc(r->pids, r->pids_len + 13);

	if (!n)
		return -ENOMEM;
	r->pids = n;
	r->pids_len +=
	    (size_t)snprintf(n + r->pids_len, 13, "%s%" PRIu32, r->pids_len ? "," : "", pid);
	return 0;
}

/* One process's manifest (or retired line) into r. */
static void ls_man(json_t *m, struct ls_row *r)
{
	json_t *v;

	if (r->npids == 1) {
		const char *s = json_string_value(json_array_get(json_object_get(m, "program"), 0));
		const char *b = s ? strrchr(s, '/') : NULL;
		snprintf(r->prog, sizeof(r->prog), "%s", b ? b + 1 : s ? s : "?");
		rd_mask(r->prog); /* the program's argv[0]: not the terminal's */
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
}

static void ls_pid(const struct ada_atf_pid *p, struct ls_row *r, uint32_t *bad)
{
	json_t *m = NULL;

	r->npids++;
	if (ls_add_pid(r, p->pid))
		(*bad)++;
	if (ada_manifest_read(p->dir, &m)) {
		(*bad)++;
		ada_log("%s: no readable manifest.json", p->dir);
		return;
	}
	ls_man(m, r);
	json_decref(m);
}

/* A retired process (retired.jsonl): counted as its manifest was. */
static int ls_retired(json_t *line, void *arg)
{
	struct ls_row *r = arg;
	r->npids++;
	if (ls_add_pid(r, (uint32_t)json_integer_value(json_object_get(line, "pid"))))
		return -ENOMEM;
	ls_man(line, r);
	return 0;
}

/* [DIR/]session_YYYYMMDD_HHMMSS -> "YYYY-MM-DD HH:MM:SS" (else "-"). */
static void ls_start(const char *name, char *out, size_t len)
{
	const char *base = strrchr(name, '/');
	unsigned y, mo, d, h, mi, s;

	if (sscanf(base ? base + 1 : name, "session_%4u%2u%2u_%2u%2u%2u", &y, &mo, &d, &h, &mi,
	           &s) == 6)
		snprintf(out, len, "%04u-%02u-%02u %02u:%02u:%02u", y, mo, d, h, mi, s);
	else
		snprintf(out, len, "-");
}

/* The row of the session at path, entry name of the directory parent;
 * shown as shown. */
static int ls_session(int parent, const char *path, const char *name, const char *shown,
                      struct ls_row *r, uint32_t *bad)
{
	struct ada_atf_tree *tree;
	int fd, err = ada_atf_tree_scan(path, &tree);

	memset(r, 0, sizeof(*r));
	snprintf(r->exit, sizeof(r->exit), "?");
	r->name = strdup(shown);
	if (!r->name)
		return -ENOMEM;
	rd_mask(r->name); /* a directory name: whoever could write --out chose it */
	ls_start(shown, r->start, sizeof(r->start));
	if (err)
		return err;
	for (size_t i = 0; i < tree->npids; i++)
		ls_pid(&tree->pids[i], r, bad);
	ada_atf_tree_free(tree);
	if (ada_retired_foreach(path, ls_retired, r, NULL) < 0)
		(*bad)++;
	if (!ada_fs_open_dir(parent, name, &fd)) {
		r->bytes = ls_du(fd, 0);
		close(fd);
	}
	return 0;
}

/* Newest first: by the start the name tells, then by name. */
static int ls_cmp(const void *pa, const void *pb)
{
	const struct ls_row *a = pa, *b = pb;
	int c = strcmp(b->start, a->start);

	return c ? c : strcmp(b->name, a->name);
}

/* The PIDS column: as many pids as fit LS_PIDS_WIDTH with "+N more". */
static const char *ls_pids_col(const struct ls_row *r, char *buf, size_t len)
{
	char more[32];
	size_t keep = 0, shown = 0;

	if (!r->pids || r->pids_len <= LS_PIDS_WIDTH)
		return r->pids ? r->pids : "-";
	for (size_t i = 0; i <= r->pids_len; i++) {
		if (r->pids[i] != ',' && r->pids[i])
			continue;
		snprintf(more, sizeof(more), " +%" PRIu32 " more", r->npids - (uint32_t)shown - 1);
		if (shown && i + strlen(more) > LS_PIDS_WIDTH)
			break;
		keep = i;
		shown++;
	}
	snprintf(more, sizeof(more), " +%" PRIu32 " more", r->npids - (uint32_t)shown);
	snprintf(buf, len, "%.*s%s", (int)keep, r->pids, more);
	return buf;
}

static void ls_print(const struct ls_row *r, size_t n, bool json)
{
	char d[32], sz[32], pids[64];
	int w = 25; /* the SESSION column: as wide as the longest name */

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(r[i].name);
		if (len > (size_t)w && len < 200)
			w = (int)len;
	}
	if (!json)
		printf("%-*s %-19s %-22s %-20s %10s %12s %7s %-10s %9s\n", w, "SESSION", "START",
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
			json_object_set_new(o, "pid_list", json_string(r[i].pids ? r[i].pids : ""));
			json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
			printf("\n");
			json_decref(o);
			continue;
		}
		printf("%-*s %-19s %-22s %-20s %10s %12" PRIu64 " %7" PRIu64 " %-10s %9s\n", w,
		       r[i].name, r[i].start, ls_pids_col(&r[i], pids, sizeof(pids)), r[i].prog,
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
		yes = (!strncmp(de->d_name, "pid_", 4) &&
		       ada_fs_entry_kind(dirfd(d), de) == ADA_FS_DIR) ||
		      (!strcmp(de->d_name, ADA_RETIRED_NAME) &&
		       ada_fs_entry_kind(dirfd(d), de) == ADA_FS_REG);
	if (d)
		closedir(d);
	return yes;
}

struct ls_rows {
	struct ls_row *v;
	size_t n, cap;
};

/* Adds the row of the session name in fd (path dir), shown as shown. */
static int ls_add(struct ls_rows *rs, int fd, const char *dir, const char *name, const char *shown,
                  uint32_t *bad)
{
	char path[4096];

	if (rs->n == rs->cap) {
		size_t nc = rs->cap ? rs->cap * 2 : 64;
		struct ls_row *nr = realloc(rs->v, nc * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		rs->v = nr;
		rs->cap = nc;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int e = ls_session(fd, path, name, shown, &rs->v[rs->n], bad);
	if (e == -ENOMEM)
		return e;
	rs->n++;
	return 0;
}

/* The sessions in fd (path dir): each directory named session_* or
 * holding pid_N directories (whatever its name); at the top (prefix NULL)
 * also those one level down, shown as SUB/NAME (a directory of --out
 * directories). */
static int ls_collect(const char *dir, int fd, const char *prefix, struct ls_rows *rs,
                      uint32_t *bad)
{
	DIR *d = ada_fs_opendir(fd, ".");
	struct dirent *de;
	char shown[512], path[4096];
	int sub, err = d ? 0 : -errno;

	while (!err && (de = readdir(d)) && rs->n < LS_MAX_SESSIONS) {
		if (de->d_name[0] == '.' || ada_fs_entry_kind(dirfd(d), de) != ADA_FS_DIR ||
		    ada_fs_open_dir(dirfd(d), de->d_name, &sub))
			continue;
		snprintf(shown, sizeof(shown), "%s%s%s", prefix ? prefix : "", prefix ? "/" : "",
		         de->d_name);
		if (!strncmp(de->d_name, "session_", 8) || ls_is_session(sub)) {
			err = ls_add(rs, dirfd(d), dir, de->d_name, shown, bad);
		} else if (!prefix) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			err = ls_collect(path, sub, de->d_name, rs, bad);
		}
		close(sub);
	}
	if (d)
		closedir(d);
	return err;
}

/* DIR missing, or holding no session: one sentence saying what to do. */
static int ls_none(const char *dir, bool given, int err)
{
	if (!given && err == -ENOENT)
		ada_log("no ./ada_traces here, where `ada record` puts its sessions: run ada ls "
		        "where you recorded, or name the directory: ada ls DIR");
	else if (err == -ENOENT)
		ada_log("%s: no such directory; ada ls DIR takes the directory `ada record --out "
		        "DIR` wrote to, or one session in it",
		        dir);
	else if (err)
		ada_log("%s: %s", dir, strerror(-err));
	else
		ada_log("%s: no sessions here (a session is a directory of pid_N directories, as "
		        "`ada record --out %s` makes)",
		        dir, dir);
	return 2;
}

static int ls_one(const char *dir, struct ls_rows *rs, uint32_t *bad)
{
	const char *b = strrchr(dir, '/');

	rs->v = calloc(1, sizeof(*rs->v));
	if (!rs->v)
		return -ENOMEM;
	rs->n = 1;
	return ls_session(AT_FDCWD, dir, dir, b && b[1] ? b + 1 : dir, rs->v, bad);
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	const char *dir = "ada_traces";
	struct ls_rows rs = {0};
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
	if (err)
		return ls_none(dir, optind == argc - 1, err);
	(void)ada_fs_root_add(dir); /* below it no link is followed (fs.h) */
	err = ls_is_session(fd) ? ls_one(dir, &rs, &bad) : ls_collect(dir, fd, NULL, &rs, &bad);
	close(fd);
	if (!err && !rs.n)
		return ls_none(dir, true, 0);
	qsort(rs.v, rs.n, sizeof(*rs.v), ls_cmp);
	if (!err)
		ls_print(rs.v, rs.n, json);
	for (size_t i = 0; i < rs.n; i++) {
		free(rs.v[i].name);
		free(rs.v[i].pids);
	}
	free(rs.v);
	if (err) {
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	return bad ? 1 : 0;
}
