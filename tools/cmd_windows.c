/*
 * ada windows DIR|PID: every trigger window of a recording — trigger, fire
 * time, pre- and post-roll asked and reached, detail records, records
 * lost, note.
 *
 * Two sources, one shape: a finished session's windows come from its
 * manifests (docs/manifest.md, flight_recorder.windows: every manifest
 * lists every window, session-wide, with this process's records, losses
 * and per-thread reach, summed and maxed here over the processes); a live
 * recording's from its control socket's `windows` method (src/control,
 * the client side in client.c: the most recent ADA_LIVE_MAX_WINDOWS, with
 * what the drain has published, no records yet). Both are turned into the
 * same list of window objects (wn_norm_*), which the text and --json
 * outputs print.
 *
 * Exit status: 0; 1 when a manifest could not be read (the others are
 * shown) or the recording could not be reached; 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "cmd.h"
#include "control.h"
#include "manifest.h"
#include "read.h"

/* What the printers read: the windows, normalized, and where they came from. */
struct wn_doc {
	json_t *windows; /* the normalized window objects, by id */
	bool live;
	json_int_t total;  /* live: windows so far (the list holds the latest) */
	uint64_t start_ns; /* the session's start (0: unknown) */
	uint32_t damaged;
	struct ada_wall_anchor wall; /* the first manifest's (realtime_ns 0: none) */
	bool wall_time;              /* --time wall */
};

/* ------------------------------------------------- reading the input */

/* A non-negative integer of o, or -1 when absent or not one: a manifest
 * and a control answer are input, checked here once. */
static json_int_t wn_int(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

static void wn_set_int(json_t *o, const char *k, json_int_t v)
{
	json_object_set_new(o, k, v >= 0 ? json_integer(v) : json_null());
}

static void wn_copy_str(json_t *to, const json_t *from, const char *k)
{
	const json_t *v = json_object_get(from, k);
	json_object_set_new(to, k,
	                    json_is_string(v) ? json_string(json_string_value(v)) : json_null());
}

/* The window as its fire made it: the fields both sources share. */
static json_t *wn_norm_new(const json_t *w)
{
	json_t *o = json_object();
	json_int_t fire = wn_int(w, "fire_ns"), from = wn_int(w, "from_ns"),
	           to = wn_int(w, "to_ns");
	json_int_t pre = wn_int(w, "pre_roll_ns"), post = wn_int(w, "post_roll_ns");

	wn_set_int(o, "id", wn_int(w, "id"));
	wn_copy_str(o, w, "trigger");
	wn_set_int(o, "fire_ns", fire);
	wn_set_int(o, "from_ns", from);
	wn_set_int(o, "to_ns", to);
	if (pre < 0 && fire >= 0 && from >= 0 && from <= fire)
		pre = fire - from;
	if (post < 0 && fire >= 0 && to >= fire)
		post = to - fire;
	wn_set_int(o, "pre_roll_ns", pre);
	wn_set_int(o, "pre_achieved_ns", -1);
	wn_set_int(o, "post_roll_ns", post);
	wn_set_int(o, "post_achieved_ns", -1);
	wn_set_int(o, "records", -1);
	wn_set_int(o, "window_lost", -1);
	wn_set_int(o, "fires", wn_int(w, "fires"));
	wn_copy_str(o, w, "note");
	wn_set_int(o, "tid", wn_int(w, "tid"));
	wn_copy_str(o, w, "function_id");
	json_object_set_new(o, "function", json_null()); /* named by wn_name_fn() */
	wn_set_int(o, "duration_ns", wn_int(w, "duration_ns"));
	wn_set_int(o, "threshold_ns", wn_int(w, "threshold_ns"));
	wn_set_int(o, "keysym_version", wn_int(w, "keysym_version"));
	return o;
}

/* Adds v to o[k] (null counts as 0), or keeps the larger with keep_max. */
static void wn_add(json_t *o, const char *k, json_int_t v, bool keep_max)
{
	json_int_t cur = wn_int(o, k);

	if (v < 0)
		return;
	if (cur < 0)
		cur = keep_max ? v : 0;
	wn_set_int(o, k, keep_max ? (v > cur ? v : cur) : cur + v);
}

/* Adds w's window_missed (records it wanted that were neither written
 * nor overwritten, by reason) to n's. */
static void wn_add_missed(json_t *n, const json_t *w)
{
	const json_t *m = json_object_get(w, "window_missed"), *v;
	const char *k;
	json_t *to = json_object_get(n, "window_missed");
	if (!json_is_object(m))
		return;
	if (!to) {
		to = json_object();
		json_object_set_new(n, "window_missed", to);
	}
	json_object_foreach((json_t *)m, k, v) wn_add(to, k, json_integer_value(v), false);
}

/* ", N wanted records not written (reason n, ...)" for window w, when any. */
static void wn_missed_text(const json_t *w)
{
	const json_t *m = json_object_get(w, "window_missed"), *v;
	const char *k;
	json_int_t n = 0;
	bool first = true;
	json_object_foreach((json_t *)m, k, v) n +=
	    json_integer_value(v) > 0 ? json_integer_value(v) : 0;
	if (n <= 0)
		return;
	printf(" (%" PRId64 " wanted records not written:", (int64_t)n);
	json_object_foreach((json_t *)m, k, v)
	{
		if (json_integer_value(v) <= 0)
			continue;
		printf("%s %s %" PRId64, first ? "" : ",", k, (int64_t)json_integer_value(v));
		first = false;
	}
	printf(")");
}

/* One process's part of window w (a manifest's entry) into n. */
static void wn_norm_proc(json_t *n, const json_t *w, int64_t pid)
{
	const json_t *ths = json_object_get(w, "threads"), *th;
	json_t *procs = json_object_get(n, "processes"), *p = json_object();
	const json_t *closed = json_object_get(w, "closed");
	size_t i;

	wn_add(n, "records", wn_int(w, "records") < 0 ? 0 : wn_int(w, "records"), false);
	wn_add(n, "window_lost", wn_int(w, "window_lost") < 0 ? 0 : wn_int(w, "window_lost"),
	       false);
	wn_add_missed(n, w);
	json_array_foreach(ths, i, th)
	{
		wn_add(n, "pre_achieved_ns", wn_int(th, "pre_achieved_ns"), true);
		wn_add(n, "post_achieved_ns", wn_int(th, "post_achieved_ns"), true);
	}
	if (json_is_false(closed))
		json_object_set_new(n, "closed", json_false());
	wn_set_int(p, "pid", pid);
	wn_set_int(p, "records", wn_int(w, "records"));
	wn_set_int(p, "window_lost", wn_int(w, "window_lost"));
	/* What filled the rings of a window that lost records (docs/manifest.md):
	 * per process, and the first process's on the window. */
	for (const char *const *k = (const char *const[]){"fillers", "hold_without", NULL}; *k;
	     k++) {
		json_t *v = json_object_get(w, *k);
		if (!v)
			continue;
		json_object_set_new(p, *k, json_deep_copy(v));
		if (!json_object_get(n, *k))
			json_object_set_new(n, *k, json_deep_copy(v));
	}
	json_object_set_new(p, "closed", json_boolean(!json_is_false(closed)));
	json_object_set_new(p, "threads", json_is_array(ths) ? json_deep_copy(ths) : json_array());
	json_array_append_new(procs, p);
}

static json_t *wn_find(json_t *list, json_int_t id)
{
	size_t i;
	json_t *w;

	json_array_foreach(list, i, w) if (wn_int(w, "id") == id) return w;
	return NULL;
}

static bool wn_has_tid(const json_t *m, json_int_t tid)
{
	struct ada_manifest_thread th;

	for (size_t i = 0; i < ada_manifest_thread_count(m); i++)
		if (!ada_manifest_thread_get(m, i, &th) && th.tid == tid)
			return true;
	return false;
}

/* Names n's function (a latency or symbol fire's) when the thread that
 * fired is this process's: function ids are a process's own. rp is
 * opened on first use (its symbol files), *open says so. */
static void wn_name_fn(json_t *n, const json_t *m, const struct ada_atf_pid *p, struct rd_pid *rp,
                       bool *open)
{
	const char *id = json_string_value(json_object_get(n, "function_id"));
	char *end;

	if (!id || strncmp(id, "0x", 2) || !json_is_null(json_object_get(n, "function")) ||
	    !wn_has_tid(m, wn_int(n, "tid")))
		return;
	uint64_t fid = strtoull(id + 2, &end, 16);
	if (*end || (!*open && rd_pid_open(p, ADA_DEMANGLE_FULL, rp)))
		return;
	*open = true;
	const struct ada_name *nm = ada_names_get(rp->names, fid);
	if (nm->known)
		json_object_set_new(n, "function", json_string(nm->name));
}

/* One manifest's windows into d. */
static void wn_manifest(struct wn_doc *d, const json_t *m, const struct ada_atf_pid *p)
{
	const json_t *ws = json_object_get(json_object_get(m, "flight_recorder"), "windows"), *w;
	json_int_t start = wn_int(m, "start_time_ns");
	struct rd_pid rp;
	bool open = false;
	size_t i;

	if (start > 0 && (!d->start_ns || (uint64_t)start < d->start_ns))
		d->start_ns = (uint64_t)start;
	if (!d->wall.realtime_ns && !rd_wall_anchor(m, &d->wall))
		d->wall = (struct ada_wall_anchor){0};
	json_array_foreach(ws, i, w)
	{
		json_int_t id = wn_int(w, "id");
		json_t *n = id >= 0 ? wn_find(d->windows, id) : NULL;
		if (id < 0)
			continue;
		if (!n) {
			n = wn_norm_new(w);
			json_object_set_new(n, "closed", json_true());
			json_object_set_new(n, "processes", json_array());
			wn_set_int(n, "records", 0);
			wn_set_int(n, "window_lost", 0);
			json_array_append_new(d->windows, n);
		}
		wn_norm_proc(n, w, ada_manifest_pid(m));
		wn_name_fn(n, m, p, &rp, &open);
	}
	if (open)
		rd_pid_close(&rp);
}

static int wn_from_manifests(struct wn_doc *d, const char *dir)
{
	struct ada_atf_tree *tree = cmd_open_tree(dir);

	if (!tree)
		return 2;
	for (size_t i = 0; i < tree->npids; i++) {
		json_t *m = NULL;
		if (ada_manifest_read(tree->pids[i].dir, &m)) {
			ada_log("%s: no readable %s; its windows are not counted",
			        tree->pids[i].dir, ADA_MANIFEST_NAME);
			d->damaged++;
			continue;
		}
		ada_control_printable_json(m); /* its notes are printed: input */
		wn_manifest(d, m, &tree->pids[i]);
		json_decref(m);
	}
	ada_atf_tree_free(tree);
	return -1;
}

/* The `windows` method's answer (docs/control.md) into d. */
static int wn_from_socket(struct wn_doc *d, int fd, const char *session)
{
	char why[512];
	json_t *res = NULL, *w;
	size_t i;

	if (ada_control_call(fd, "windows", NULL, &res, why, sizeof(why))) {
		ada_log("%s", why);
		return 1;
	}
	d->live = true;
	d->total = wn_int(res, "total");
	json_array_foreach(json_object_get(res, "windows"), i, w)
	{
		json_t *n = wn_norm_new(w);
		json_object_set_new(n, "closed",
		                    json_boolean(json_is_true(json_object_get(w, "persisted"))));
		json_array_append_new(d->windows, n);
	}
	json_decref(res);
	/* The start, for the fire times: the manifests written at the start. */
	struct ada_atf_tree *tree = NULL;
	for (size_t k = 0; !ada_atf_tree_scan(session, &tree) && k < tree->npids; k++) {
		json_t *m = NULL;
		if (!ada_manifest_read(tree->pids[k].dir, &m)) {
			json_int_t s = wn_int(m, "start_time_ns");
			if (s > 0 && (!d->start_ns || (uint64_t)s < d->start_ns))
				d->start_ns = (uint64_t)s;
			if (!d->wall.realtime_ns && !rd_wall_anchor(m, &d->wall))
				d->wall = (struct ada_wall_anchor){0};
		}
		json_decref(m);
	}
	ada_atf_tree_free(tree);
	return -1;
}

/* ---------------------------------------------------------- printing */

static const char *wn_ns(const json_t *w, const char *k, char *buf, size_t len)
{
	json_int_t v = wn_int(w, k);
	return v < 0 ? "-" : rd_fmt_ns((uint64_t)v, buf, len);
}

static const char *wn_fired(const struct wn_doc *d, const json_t *w, char *buf, size_t len)
{
	json_int_t f = wn_int(w, "fire_ns");
	char b[32];

	if (f < 0)
		return "-";
	if (d->wall_time && d->wall.realtime_ns)
		return rd_fmt_wall(ada_wall_from_boottime(&d->wall, (uint64_t)f), buf, len);
	if (d->start_ns && (uint64_t)f >= d->start_ns)
		snprintf(buf, len, "+%s", rd_fmt_ns((uint64_t)f - d->start_ns, b, sizeof(b)));
	else
		snprintf(buf, len, "%" PRId64, (int64_t)f);
	return buf;
}

static void wn_row(const struct wn_doc *d, const json_t *w)
{
	char f[48], b[4][32], r[24], l[24];
	int fw = d->wall_time ? 34 : 12;
	json_int_t rec = wn_int(w, "records"), lost = wn_int(w, "window_lost");
	const char *note = json_string_value(json_object_get(w, "note"));
	const char *trig = json_string_value(json_object_get(w, "trigger"));

	snprintf(r, sizeof(r), "%" PRId64, (int64_t)rec);
	snprintf(l, sizeof(l), "%" PRId64, (int64_t)lost);
	printf("%4" PRId64 " %*s %10s %10s %10s %10s %8s %6s  %s", (int64_t)wn_int(w, "id"), fw,
	       wn_fired(d, w, f, sizeof(f)), wn_ns(w, "pre_roll_ns", b[0], 32),
	       wn_ns(w, "pre_achieved_ns", b[1], 32), wn_ns(w, "post_roll_ns", b[2], 32),
	       wn_ns(w, "post_achieved_ns", b[3], 32), rec < 0 ? "-" : r, lost < 0 ? "-" : l,
	       trig ? trig : "?");
	if (json_is_string(json_object_get(w, "function")))
		printf(" [%s]", json_string_value(json_object_get(w, "function")));
	if (wn_int(w, "duration_ns") >= 0)
		printf(" took %s, over %s", wn_ns(w, "duration_ns", b[0], 32),
		       wn_ns(w, "threshold_ns", b[1], 32));
	if (wn_int(w, "fires") > 1)
		printf(" (%" PRId64 " fires merged)", (int64_t)wn_int(w, "fires"));
	if (wn_int(w, "keysym_version") > 0)
		printf(" (key symbols v%" PRId64 ")", (int64_t)wn_int(w, "keysym_version"));
	if (json_is_false(json_object_get(w, "closed")))
		printf(d->live ? " (not persisted yet)"
		               : " (cut short by the end of the recording)");
	wn_missed_text(w);
	if (note) {
		printf("  note: ");
		rd_json_str(stdout, note);
	}
	printf("\n");
	if (lost > 0 && json_array_size(json_object_get(w, "fillers"))) {
		rd_window_fillers(stdout, w, "      the detail rings filled with",
		                  " (--detail-symbols, ada keysym)");
		printf("\n");
	}
}

static void wn_text(const struct wn_doc *d, const char *target)
{
	size_t n = json_array_size(d->windows), i;
	json_t *w;

	printf("%s: %zu window%s", target, n, n == 1 ? "" : "s");
	if (d->live && d->total > (json_int_t)n)
		printf(" (the latest %zu of %" PRId64 ")", n, (int64_t)d->total);
	printf("%s\n", d->live ? ", recording: records and reach are known once it ends" : "");
	if (!n)
		return;
	printf("%4s %*s %10s %10s %10s %10s %8s %6s  %s\n", "ID", d->wall_time ? 34 : 12, "FIRED",
	       "PRE", "REACHED", "POST", "REACHED", "RECORDS", "LOST", "TRIGGER");
	json_array_foreach(d->windows, i, w) wn_row(d, w);
}

static void wn_json(const struct wn_doc *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "live", json_boolean(d->live));
	wn_set_int(o, "start_time_ns", d->start_ns ? (json_int_t)d->start_ns : -1);
	if (d->wall.realtime_ns) {
		const json_t *w;
		size_t i;
		json_array_foreach(d->windows, i, w)
		{
			json_int_t f = wn_int(w, "fire_ns");
			if (f >= 0)
				wn_set_int(
				    (json_t *)w, "fire_wall_ns",
				    (json_int_t)ada_wall_from_boottime(&d->wall, (uint64_t)f));
		}
	}
	wn_set_int(o, "total", d->live ? d->total : (json_int_t)json_array_size(d->windows));
	json_object_set(o, "windows", d->windows);
	json_dumpf(o, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	printf("\n");
	json_decref(o);
}

/* -------------------------------------------------------------- main */

static void wn_usage(FILE *f)
{
	fprintf(f, "usage: ada windows [--json] [--time boot|wall] DIR|PID\n"
	           "  Every trigger window of a recording: trigger, fire time (from the start),\n"
	           "  pre- and post-roll asked and reached, detail records, records lost, note.\n"
	           "  A finished session from its manifests; a running recording (its pid, or\n"
	           "  its directory) through its control socket.\n"
	           "  --json       one JSON document (keys: docs/reading.md)\n"
	           "  --time wall  fire times as local date and time (default: from the start)\n");
}

/* The windows of target into d: live when its socket answers, else from
 * the manifests. -1 when d is filled, else the exit status. */
static int wn_collect(struct wn_doc *d, const char *target)
{
	char why[512], dir[PATH_MAX];
	struct stat st;
	bool is_dir = stat(target, &st) == 0 && S_ISDIR(st.st_mode);
	if (is_dir)
		cmd_session_root(target);
	int fd = -1, rc = ada_control_session_of(target, dir, sizeof(dir), why, sizeof(why));

	if (rc == 0)
		rc = ada_control_open(target, &fd, why, sizeof(why));
	if (rc == 0) {
		rc = wn_from_socket(d, fd, dir);
		close(fd);
		return rc;
	}
	if (rc == -ECONNREFUSED) /* ended: its summary is in the manifests */
		return wn_from_manifests(d, is_dir ? target : dir);
	ada_log("%s", why);
	return 1;
}

int cmd_windows(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
	                                     {"time", required_argument, NULL, 'W'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {0}};
	enum rd_time_form form = RD_TIME_BOOT;
	struct wn_doc d = {0};
	bool json = false;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'W' && rd_parse_time_form(optarg, &form)) {
			ada_log("bad value '%s' for --time: boot or wall", optarg);
			return 2;
		} else if (c != 'j' && c != 'W') {
			wn_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
		json |= c == 'j';
	}
	d.wall_time = form == RD_TIME_WALL;
	if (optind != argc - 1) {
		ada_log("windows takes one directory or pid; run `ada windows --help`");
		return 2;
	}
	d.windows = json_array();
	rc = wn_collect(&d, argv[optind]);
	if (rc < 0 && d.wall_time && !d.wall.realtime_ns)
		ada_log("%s: no wall-clock anchor in its manifests (an older ada's recording); "
		        "fire times are from the start",
		        argv[optind]);
	if (rc < 0 && json)
		wn_json(&d);
	else if (rc < 0)
		wn_text(&d, argv[optind]);
	json_decref(d.windows);
	if (rc >= 0)
		return rc;
	if (fflush(stdout)) {
		ada_log("stdout: %s", strerror(errno));
		return 1;
	}
	return d.damaged ? 1 : 0;
}
