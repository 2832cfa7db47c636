/*
 * ada keysym PID|DIR (--symbols GLOB[,GLOB...] | --file FILE | --blob MODULE_ID=FILE...)
 *
 * Replaces the key-symbol set (which functions enter the detail ring) of a
 * running recording: the thin client of the control method `keysym`
 * (docs/control.md). Also the recorder's side of that method
 * (cmd_keysym_host, called on the control thread) and the readers of
 * `--key-symbols FILE` / `--blob MODULE_ID=FILE` that `ada record` shares.
 *
 * Method params: {"symbols": ["GLOB", ...]} (each is *:GLOB), {"rules":
 * ["MODULE_GLOB:SYMBOL_GLOB", ...]}, {"blobs": [{"module_id": N, "path":
 * "/absolute/file"}]} (read by the recorder: same user, SO_PEERCRED), any
 * combination; an empty object means every hooked function.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "control.h"
#include "keysym.h"
#include "recorder.h"

#define KEYSYM_RULES_MAX (1u << 20) /* a --key-symbols file, at most */
#define KEYSYM_BLOB_MAX (64u << 20) /* a --blob file, at most */

/* The whole of a regular file of at most max bytes; why on failure. */
static int keysym_slurp(const char *path, size_t max, char **buf, size_t *len, char *why,
                        size_t cap)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		snprintf(why, cap, "%s",
		         fd < 0 ? strerror(errno)
		                : "not a regular file of at most "
		                  "the size allowed");
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	*buf = malloc((size_t)st.st_size + 1);
	ssize_t n = *buf ? read(fd, *buf, (size_t)st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		snprintf(why, cap, "cannot read it");
		return -EIO;
	}
	(*buf)[n] = 0; /* a C string too (the client splits lines) */
	*len = (size_t)n;
	return 0;
}

int cmd_keysym_read_rules(struct ada_keysym_spec *s, const char *path, char *why, size_t cap)
{
	char *buf;
	size_t len;
	int err = keysym_slurp(path, KEYSYM_RULES_MAX, &buf, &len, why, cap);
	if (err)
		return err;
	err = ada_keysym_spec_parse_file(s, buf, len, why, cap);
	free(buf);
	return err;
}

/* "ID=FILE": the module id (decimal, below 2^24) and the file. */
static int keysym_blob_arg(const char *arg, uint32_t *id, const char **file)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (end == arg || *end != '=' || !end[1] || v >= ADA_KEYSYM_MAX_MODULES || arg[0] == '-')
		return -EINVAL;
	*id = (uint32_t)v;
	*file = end + 1;
	return 0;
}

static int keysym_add_blob_file(struct ada_keysym_spec *s, uint32_t id, const char *file, char *why,
                                size_t cap)
{
	char *buf;
	size_t len;
	int err = keysym_slurp(file, KEYSYM_BLOB_MAX, &buf, &len, why, cap);
	if (err)
		return err;
	err = ada_keysym_spec_add_blob(s, id, buf, len, why, cap);
	free(buf);
	return err;
}

int cmd_keysym_read_blob(struct ada_keysym_spec *s, const char *arg, char *why, size_t cap)
{
	uint32_t id;
	const char *file;
	if (keysym_blob_arg(arg, &id, &file) < 0) {
		snprintf(why, cap,
		         "wants MODULE_ID=FILE (a module id below 2^24 from the manifest's "
		         "modules, and a CRoaring portable bitmap file)");
		return -EINVAL;
	}
	return keysym_add_blob_file(s, id, file, why, cap);
}

/* ---- the recorder's side of the method (control thread) ---- */

static int keysym_params_rules(struct ada_keysym_spec *s, json_t *arr, bool star, char *why,
                               size_t cap)
{
	size_t i;
	json_t *v;
	if (arr && !json_is_array(arr)) {
		snprintf(why, cap, "\"symbols\" and \"rules\" are arrays of strings");
		return -EINVAL;
	}
	json_array_foreach(arr, i, v)
	{
		const char *g = json_string_value(v);
		char line[1100];
		if (!g || strlen(g) > 1024 || (star && strchr(g, ':'))) {
			snprintf(why, cap, "%s",
			         star ? "\"symbols\" holds globs without ':' (strings)"
			              : "\"rules\" holds MODULE_GLOB:SYMBOL_GLOB strings");
			return -EINVAL;
		}
		snprintf(line, sizeof(line), "%s%s", star ? "*:" : "", g);
		int err = ada_keysym_spec_add_rule(s, line, strlen(line), why, cap);
		if (err)
			return err;
	}
	return 0;
}

static int keysym_params_blobs(struct ada_keysym_spec *s, json_t *arr, char *why, size_t cap)
{
	size_t i;
	json_t *v;
	if (arr && !json_is_array(arr)) {
		snprintf(why, cap, "\"blobs\" is an array of {module_id, path}");
		return -EINVAL;
	}
	json_array_foreach(arr, i, v)
	{
		json_t *id = json_object_get(v, "module_id");
		const char *path = json_string_value(json_object_get(v, "path"));
		if (!json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) >= ADA_KEYSYM_MAX_MODULES || !path || path[0] != '/') {
			snprintf(why, cap,
			         "each blob needs a module_id below 2^24 and an absolute path");
			return -EINVAL;
		}
		char inner[320];
		int err = keysym_add_blob_file(s, (uint32_t)json_integer_value(id), path, inner,
		                               sizeof(inner));
		if (err) {
			snprintf(why, cap, "blob %s: %s", path, inner);
			return -EINVAL;
		}
	}
	return 0;
}

/* The "symbols" globs that match no hooked function of the recording's
 * module tables, into res's "unmatched": [{"glob", "near": [...]}] (none
 * when no table was written yet: nothing can be told). */
static void keysym_unmatched(void *ctx, json_t *params, json_t *res)
{
	json_t *un = json_array(), *g;
	size_t i;
	json_array_foreach(json_object_get(params, "symbols"), i, g)
	{
		struct ada_names_match m;
		if (ada_control_names_match(ada_recorder_session_dir(ctx), json_string_value(g),
		                            &m) < 0 ||
		    m.scanned == 0 || m.hooked)
			continue;
		json_t *near = json_array();
		for (size_t k = 0; k < m.nnear; k++)
			json_array_append_new(near, json_string(m.near[k]));
		json_array_append_new(un, json_pack("{s:O,s:o}", "glob", g, "near", near));
	}
	json_object_set_new(res, "unmatched", un);
}

int cmd_keysym_host(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct ada_keysym_spec *s;
	if (params && !json_is_object(params)) {
		snprintf(why, cap, "keysym takes an object: symbols, rules and/or blobs");
		return -EINVAL;
	}
	if (ada_keysym_spec_new(&s) < 0)
		return -ENOMEM;
	int err = keysym_params_rules(s, json_object_get(params, "symbols"), true, why, cap);
	if (!err)
		err = keysym_params_rules(s, json_object_get(params, "rules"), false, why, cap);
	if (!err)
		err = keysym_params_blobs(s, json_object_get(params, "blobs"), why, cap);
	if (err) {
		ada_keysym_spec_free(s);
		return err == -ENOMEM ? err : -EINVAL;
	}
	err = ada_recorder_keysym_set(ctx, s, result, why, cap); /* consumes s */
	if (err == 0 && json_is_object(*result))
		keysym_unmatched(ctx, params, *result);
	return err;
}

uint64_t cmd_keysym_version(void *ctx)
{
	return ada_recorder_keysym_version(ctx);
}

json_t *cmd_keysym_cover(void *ctx)
{
	return ada_recorder_keysym_cover(ctx);
}

/* ---- the client ---- */

static void keysym_usage(FILE *f)
{
	fprintf(f, "usage: ada keysym PID|DIR (--symbols GLOB[,GLOB...] | --file FILE |\n"
	           "                          --blob MODULE_ID=FILE...)\n"
	           "\n"
	           "Replaces the key-symbol set (the functions whose calls enter the detail\n"
	           "ring) of the running recording of PID (any traced process of it) or of the\n"
	           "session directory DIR. Later calls follow the new set.\n"
	           "  --symbols GLOBS   these function names, in every module\n"
	           "  --file FILE       lines MODULE_GLOB:SYMBOL_GLOB (# comments)\n"
	           "  --blob ID=FILE    module ID's members: a CRoaring portable bitmap of symbol\n"
	           "                    indexes (repeatable)\n");
}

/* --file: checked here (the sentence names the line), sent as lines. */
static int keysym_file_rules(struct ada_keysym_spec *s, const char *path, json_t *rules, char *why,
                             size_t cap)
{
	char *buf;
	size_t len;
	int err = keysym_slurp(path, KEYSYM_RULES_MAX, &buf, &len, why, cap);
	if (err)
		return err;
	err = ada_keysym_spec_parse_file(s, buf, len, why, cap);
	for (size_t i = 0; !err && i < len;) {
		size_t n = strcspn(buf + i, "\n"), k = strspn(buf + i, " \t\r");
		if (k < n && buf[i + k] != '#')
			json_array_append_new(rules, json_stringn(buf + i, n));
		i += n + 1;
	}
	free(buf);
	return err;
}

static int keysym_opt(json_t *params, int c, const char *v)
{
	char why[400] = "";
	struct ada_keysym_spec *s;
	if (ada_keysym_spec_new(&s) < 0)
		return -1;
	int err = 0;
	if (c == 's') { /* checked here too, for a message before connecting */
		json_t *a = json_object_get(params, "symbols");
		for (const char *p = v; *p;) {
			size_t n = strcspn(p, ",");
			char g[1100];
			snprintf(g, sizeof(g), "*:%.*s", (int)(n < 1024 ? n : 1024), p);
			if (!n || strchr(g + 2, ':') ||
			    ada_keysym_spec_add_rule(s, g, strlen(g), why, sizeof(why)) < 0) {
				ada_log("--symbols takes globs separated by ',' (no ':'), not '%s'",
				        v);
				err = -1;
				break;
			}
			json_array_append_new(a, json_stringn(p, n));
			p += n + (p[n] == ',');
		}
	} else if (c == 'f') {
		err = keysym_file_rules(s, v, json_object_get(params, "rules"), why, sizeof(why));
		if (err)
			ada_log("--file %s: %s", v, why);
	} else {
		uint32_t id;
		const char *file;
		char abs[PATH_MAX];
		err = cmd_keysym_read_blob(s, v, why, sizeof(why));
		if (err)
			ada_log("--blob %s: %s", v, why);
		else if (keysym_blob_arg(v, &id, &file) == 0 && realpath(file, abs))
			json_array_append_new(
			    json_object_get(params, "blobs"),
			    json_pack("{s:i,s:s}", "module_id", (int)id, "path", abs));
	}
	ada_keysym_spec_free(s);
	return err ? -1 : 0;
}

static int keysym_parse(int argc, char **argv, json_t *params)
{
	static const struct option opts[] = {{"symbols", required_argument, 0, 's'},
	                                     {"file", required_argument, 0, 'f'},
	                                     {"blob", required_argument, 0, 'b'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	int c, given = 0;
	json_object_set_new(params, "symbols", json_array());
	json_object_set_new(params, "rules", json_array());
	json_object_set_new(params, "blobs", json_array());
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			keysym_usage(stdout);
			return 1;
		}
		if (c == '?') {
			keysym_usage(stderr);
			return -1;
		}
		if (keysym_opt(params, c, optarg) < 0)
			return -1;
		given++;
	}
	if (optind != argc - 1 || !given) {
		ada_log("ada keysym needs a PID or DIR and --symbols, --file or --blob: ada keysym "
		        "PID --symbols 'handle_*'");
		return -1;
	}
	return 0;
}

/* "key-symbol set version N: pid P 12 members (module 1 bitset 12), ..." */
static void keysym_print(json_t *res)
{
	size_t i, j;
	json_t *p, *m;
	printf("key-symbol set version %lld:",
	       (long long)json_integer_value(json_object_get(res, "version")));
	json_array_foreach(json_object_get(res, "processes"), i, p)
	{
		const char *err = json_string_value(json_object_get(p, "error"));
		printf("%s pid %lld ", i ? ";" : "",
		       (long long)json_integer_value(json_object_get(p, "pid")));
		if (err) {
			printf("failed: %s", err);
			continue;
		}
		printf("%lld members",
		       (long long)json_integer_value(json_object_get(p, "members")));
		json_array_foreach(json_object_get(p, "modules"), j, m)
		    printf("%smodule %lld %s %lld", j ? ", " : " (",
		           (long long)json_integer_value(json_object_get(m, "id")),
		           json_string_value(json_object_get(m, "container")),
		           (long long)json_integer_value(json_object_get(m, "members")));
		if (json_array_size(json_object_get(p, "modules")))
			printf(")");
	}
	printf("\n");
}

/* "--symbols GLOB matches no hooked function; near: a, b", a line each. */
static void keysym_say_unmatched(json_t *res)
{
	size_t i;
	json_t *u;
	json_array_foreach(json_object_get(res, "unmatched"), i, u)
	{
		char names[400];
		ada_log("--symbols %s matches no hooked function: no function enters the detail "
		        "lane through it%s",
		        json_string_value(json_object_get(u, "glob")),
		        cmd_ctl_near_names(json_object_get(u, "near"), names, sizeof(names)));
	}
}

int cmd_keysym(int argc, char **argv)
{
	json_t *res;
	int rc = cmd_ctl_command(argc, argv, "keysym", keysym_parse, &res);
	if (!res)
		return rc;
	keysym_print(res);
	keysym_say_unmatched(res);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(res, "processes"), i, p) if (json_object_get(p, "error"))
	    rc = 1;
	json_decref(res);
	return rc;
}
