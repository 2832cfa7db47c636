/*
 * What a function glob matches in a recording (control.h,
 * ada_control_names_match): the functions of every module table a traced
 * process wrote (pid_N/module_*.syms under the session; pid_N/modules/
 * in a session recorded before the files moved up), by the
 * rule of the symbol triggers (ada_trigger_name_match). When no hooked
 * function matches, the closest hooked names: those containing the glob's
 * literal text (case ignored), else the smallest edit distances within a
 * third of its length.
 *
 * Threads: any (the control thread for `arm` and `keysym`, the CLI's main
 * thread at the end of `ada record`); nothing shared. The .syms files are
 * written by the traced program: opened without following links, at most
 * NAMES_SYMS_MAX bytes each, parsed by ada_syms_parse_at (bounds-checked).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "fs.h"
#include "symbols.h"
#include "trigger.h"

#define NAMES_SYMS_MAX (64u << 20)
#define NAMES_KEY_MAX 64 /* the literal text compared, at most */

/* The glob's literal text, lower case: "*Foo?bar" -> "foobar". */
static void names_key(const char *glob, char *key)
{
	size_t n = 0;
	for (const char *g = glob; *g && n + 1 < NAMES_KEY_MAX; g++)
		if (!strchr("*?[]\\", *g))
			key[n++] = (char)tolower((unsigned char)*g);
	key[n] = '\0';
}

/* Levenshtein distance of a and b (lower-cased), or max + 1 once it is
 * past max. */
static unsigned names_distance(const char *a, const char *b, unsigned max)
{
	unsigned row[NAMES_KEY_MAX + 1];
	size_t la = strlen(a), lb = strlen(b);
	if (lb >= NAMES_KEY_MAX || (la > lb ? la - lb : lb - la) > max)
		return max + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0], best = row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned sub = diag + (a[i - 1] != tolower((unsigned char)b[j - 1]));
			unsigned v = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
			row[j] = v < sub ? v : sub;
			diag = up;
			best = row[j] < best ? row[j] : best;
		}
		if (best > max)
			return max + 1;
	}
	return row[lb];
}

struct names_scan {
	const char *glob;
	char key[NAMES_KEY_MAX];
	unsigned max;                      /* the farthest a near name may be */
	unsigned dist[ADA_NAMES_NEAR_MAX]; /* of out->near[i] */
	struct ada_names_match *out;
};

/* Keeps name among the closest (sorted by distance, no duplicates). */
static void names_near(struct names_scan *s, const char *name)
{
	struct ada_names_match *o = s->out;
	unsigned d = strcasestr(name, s->key) ? 0 : names_distance(s->key, name, s->max);
	if (d > s->max || strlen(name) >= sizeof(o->near[0]))
		return;
	for (size_t i = 0; i < o->nnear; i++)
		if (!strcmp(o->near[i], name))
			return;
	size_t at = o->nnear;
	while (at > 0 && s->dist[at - 1] > d)
		at--;
	if (at >= ADA_NAMES_NEAR_MAX)
		return;
	size_t last = o->nnear < ADA_NAMES_NEAR_MAX ? o->nnear : ADA_NAMES_NEAR_MAX - 1;
	for (size_t i = last; i > at; i--) {
		memcpy(o->near[i], o->near[i - 1], sizeof(o->near[0]));
		s->dist[i] = s->dist[i - 1];
	}
	snprintf(o->near[at], sizeof(o->near[0]), "%s", name);
	s->dist[at] = d;
	if (o->nnear < ADA_NAMES_NEAR_MAX)
		o->nnear++;
}

static void names_module(struct names_scan *s, const struct ada_syms_module *m)
{
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct ada_syms_func *f = &m->funcs[i];
		bool hooked = f->status && !strcmp(f->status, "hooked");
		if (!f->name)
			continue;
		s->out->scanned += hooked;
		if (!ada_trigger_name_match(s->glob, f->name)) {
			if (hooked && s->key[0])
				names_near(s, f->name);
			continue;
		}
		if (hooked) {
			s->out->hooked++;
		} else if (s->out->skipped++ == 0) {
			snprintf(s->out->skip_name, sizeof(s->out->skip_name), "%s", f->name);
			snprintf(s->out->skip_why, sizeof(s->out->skip_why), "%s",
			         f->status ? f->status : "not hooked");
		}
	}
}

/* One module_*.syms under modules_fd (pid_N/ or an older session's
 * pid_N/modules/); an unreadable one is skipped. */
static void names_file(struct names_scan *s, int modules_fd, const char *name)
{
	int fd;
	struct stat st;
	if (ada_fs_open_file(modules_fd, name, O_RDONLY, &fd))
		return;
	char *buf = NULL;
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && st.st_size <= NAMES_SYMS_MAX &&
	    (buf = malloc((size_t)st.st_size + 1)))
		n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	struct ada_syms_module *m = NULL;
	if (n >= 0 && ada_syms_parse_at(modules_fd, buf, (size_t)n, NAMES_SYMS_MAX, &m, NULL) == 0)
		names_module(s, m);
	ada_syms_module_free(m);
	free(buf);
}

/* Every module_*.syms of the directory name under at. */
static void names_dir(struct names_scan *s, int at, const char *name)
{
	DIR *d = ada_fs_opendir(at, name);
	if (!d)
		return;
	struct dirent *de;
	for (unsigned k = 0; k < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); k++) {
		size_t l = strlen(de->d_name);
		if (!strncmp(de->d_name, "module_", 7) && l > 12 &&
		    !strcmp(de->d_name + l - 5, ".syms"))
			names_file(s, dirfd(d), de->d_name);
	}
	closedir(d);
}

/* Every module table of one pid_N directory. */
static void names_pid(struct names_scan *s, int session_fd, const char *pid_dir)
{
	int pid_fd;
	if (ada_fs_open_dir(session_fd, pid_dir, &pid_fd))
		return;
	names_dir(s, pid_fd, ".");
	names_dir(s, pid_fd, "modules"); /* an older session's */
	close(pid_fd);
}

int ada_control_names_match(const char *session_dir, const char *glob, struct ada_names_match *out)
{
	struct names_scan s = {.glob = glob, .out = out};
	memset(out, 0, sizeof(*out));
	names_key(glob, s.key);
	s.max = (unsigned)strlen(s.key) / 3;
	s.max = s.max < 2 ? 2 : s.max;
	int session_fd;
	int err = ada_fs_open_dir(AT_FDCWD, session_dir, &session_fd);
	if (err)
		return err;
	DIR *d = fdopendir(session_fd);
	if (!d) {
		err = -errno;
		close(session_fd);
		return err;
	}
	struct dirent *de;
	/* Up to the first process with a match: a session of a thousand
	 * forks needs not be read whole to say yes (the control thread
	 * serves every client). */
	for (unsigned k = 0; k < ADA_FS_WALK_MAX_ENTRIES && !out->hooked && (de = readdir(d)); k++)
		if (!strncmp(de->d_name, "pid_", 4))
			names_pid(&s, dirfd(d), de->d_name);
	closedir(d);
	return 0;
}

void ada_names_match_sentence(const char *what, const struct ada_names_match *m, char *buf,
                              size_t cap)
{
	int n = snprintf(buf, cap, "%s matches no hooked function", what);
	if (m->skipped && n >= 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, " (%s is not hooked: %s)", m->skip_name,
		              m->skip_why);
	for (size_t i = 0; i < m->nnear && n >= 0 && (size_t)n < cap; i++)
		n += snprintf(buf + n, cap - (size_t)n, "%s%s", i ? ", " : "; near: ", m->near[i]);
}
