/*
 * The reading commands' shared steps (read.h). CLI only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "control.h"
#include "fs.h"
#include "manifest.h"
#include "read.h"
#include "symbols.h"
#include "trigger.h"

static void rd_syms_warn(void *ctx, const char *path, uint64_t line, const char *msg)
{
	(void)ctx;
	if (line)
		ada_log("%s: line %" PRIu64 ": %s", path, line, msg);
	else
		ada_log("%s: %s", path, msg);
}

/* The first event time of the pid's threads, for a manifest without one. */
static uint64_t rd_first_event(const struct ada_atf_pid *p)
{
	uint64_t t0 = UINT64_MAX;

	for (size_t i = 0; i < p->nthreads; i++) {
		struct ada_atf_thread *t;
		if (ada_atf_thread_open(p->thread_dirs[i], ADA_ATF_OPEN_SALVAGE, &t))
			continue;
		for (size_t g = 0; g < t->ngen; g++) {
			const struct atf_index_event *ev =
			    t->gen[g].index ? ada_atf_index_get(t->gen[g].index, 0) : NULL;
			if (ev && ev->timestamp_ns < t0)
				t0 = ev->timestamp_ns;
		}
		ada_atf_thread_free(t);
	}
	return t0 == UINT64_MAX ? 0 : t0;
}

/* image[] and nimages (read.h): thread_dirs are sorted by N, the order
 * the recorder made them in. -ENOMEM. */
static int rd_images(struct rd_pid *rp)
{
	bool main_seen = false;

	rp->nimages = 1;
	rp->image = calloc(rp->p->nthreads ? rp->p->nthreads : 1, sizeof(*rp->image));
	if (!rp->image)
		return -ENOMEM;
	for (size_t i = 0; i < rp->p->nthreads; i++) {
		uint32_t tid =
		    rp->manifest ? ada_manifest_tid_of(rp->manifest, rp->p->thread_ids[i]) : 0;
		if (tid && tid == rp->p->pid) {
			rp->nimages += main_seen;
			main_seen = true;
		}
		rp->image[i] = rp->nimages - 1;
	}
	return 0;
}

bool rd_thread_new_image(const struct rd_pid *rp, size_t i)
{
	return i && rp->image[i] != rp->image[i - 1];
}

/* What the disk budget deleted of this process, from its manifest's
 * retention: the reading shows the rest, and says which part is missing. */
static void rd_say_retired(const struct rd_pid *rp)
{
	json_t *ret = rp->manifest ? json_object_get(rp->manifest, "retention") : NULL;
	json_t *ev = json_object_get(ret, "retired_events");
	json_t *until = json_object_get(ret, "retired_until_ns");
	json_t *whole = json_object_get(ret, "retired_threads");
	if (!json_is_integer(ev) || json_integer_value(ev) <= 0)
		return;
	uint64_t u = json_is_integer(until) && json_integer_value(until) > 0
	                 ? (uint64_t)json_integer_value(until)
	                 : 0;
	/* A process with nothing left shows nothing: said once, not once
	 * per process (a fork-heavy session has thousands). */
	static bool whole_told;
	if (rp->p->nthreads == 0) {
		if (!whole_told)
			ada_log(
			    "%s: the disk budget deleted every event of this process (said once: "
			    "other processes left with no thread file are not named; each "
			    "manifest's retention says what went)",
			    rp->p->dir);
		whole_told = true;
		return;
	}
	char when[64] = "";
	if (u > rp->t0)
		snprintf(when, sizeof(when), ", recorded before +%.6f s",
		         (double)(u - rp->t0) / 1e9);
	ada_log("%s: the disk budget deleted the oldest %" PRId64 " events of this process%s "
	        "(%" PRId64 " of its threads entirely); what is shown is the rest (its manifest's "
	        "retention and threads[].retired_* say what went)",
	        rp->p->dir, (int64_t)json_integer_value(ev), when,
	        json_is_integer(whole) ? (int64_t)json_integer_value(whole) : 0);
}

int rd_pid_open(const struct ada_atf_pid *p, enum ada_demangle dm, struct rd_pid *out)
{
	json_t *v;
	int err;

	memset(out, 0, sizeof(*out));
	out->p = p;
	if (ada_manifest_read(p->dir, &out->manifest) == -EBADMSG)
		ada_log("%s/%s: damaged; reading the traces without it", p->dir, ADA_MANIFEST_NAME);
	/* Its strings (a crash's note, the other threads' states, windows'
	 * notes) are printed as they are: whoever could write pid_N/ chose
	 * them, so their control characters become '?' here, once. */
	ada_control_printable_json(out->manifest);
	err = ada_symtab_load(p->dir, out->manifest, rd_syms_warn, NULL, &out->syms);
	if (!err)
		err = ada_names_new(out->syms, dm, &out->names);
	if (!err)
		err = rd_images(out);
	if (err) {
		rd_pid_close(out);
		return err;
	}
	v = out->manifest ? json_object_get(out->manifest, "start_time_ns") : NULL;
	out->t0 = json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
	                                                          : rd_first_event(p);
	if (!out->manifest || !rd_wall_anchor(out->manifest, &out->wall))
		out->wall = (struct ada_wall_anchor){0};
	rd_say_retired(out);
	return 0;
}

void rd_pid_close(struct rd_pid *rp)
{
	free(rp->image);
	ada_names_free(rp->names);
	ada_symtab_free(rp->syms);
	json_decref(rp->manifest);
	memset(rp, 0, sizeof(*rp));
}

const char *rd_strerror(int err)
{
	return err == -ELOOP ? RD_LINK_SENTENCE : strerror(-err);
}

static void rd_warn_gen(struct rd_pid *rp, const struct ada_atf_gen *g)
{
	rp->damaged += (g->index_err != 0) + (g->detail_path && g->detail_err);
	if (g->index_err)
		ada_log("%s: skipped: %s (run `ada validate`)", g->index_path,
		        g->index_err == -EBADMSG ? "not a readable ATF index file"
		                                 : rd_strerror(g->index_err));
	if (g->detail_path && g->detail_err)
		ada_log("%s: detail not shown: %s", g->detail_path,
		        g->detail_err == -EBADMSG ? "not a readable ATF detail file"
		                                  : rd_strerror(g->detail_err));
}

/* Strict first; a damaged file is reopened for whatever whole events it
 * holds, and said so. */
static void rd_salvage(struct rd_pid *rp, struct ada_atf_gen *g)
{
	if (g->index_err == -EBADMSG &&
	    !ada_atf_index_open(g->index_path, ADA_ATF_OPEN_SALVAGE, &g->index)) {
		g->index_err = 0;
		rp->damaged++;
		ada_log("%s: damaged; showing its %" PRIu64 " whole events (run `ada validate`)",
		        g->index_path, ada_atf_index_count(g->index));
	}
	if (g->detail_err == -EBADMSG &&
	    !ada_atf_detail_open(g->detail_path, ADA_ATF_OPEN_SALVAGE, &g->detail)) {
		g->detail_err = 0;
		rp->damaged++;
		ada_log("%s: damaged; showing its %" PRIu64 " whole detail events", g->detail_path,
		        ada_atf_detail_count(g->detail));
	}
	rd_warn_gen(rp, g);
}

int rd_thread_open(struct rd_pid *rp, size_t i, struct ada_atf_thread **out)
{
	const char *dir = rp->p->thread_dirs[i];
	int err = ada_atf_thread_open(dir, 0, out);

	if (err == -ENOENT || err == -EINVAL) {
		ada_log("%s: no index.atf; skipped", dir);
		rp->damaged++;
		*out = NULL;
		return 0;
	}
	if (err == -ELOOP) { /* the thread_K read was swapped for a link */
		ada_log("%s: skipped: %s", dir, RD_LINK_SENTENCE);
		rp->damaged++;
		*out = NULL;
		return 0;
	}
	if (err)
		return err;
	for (size_t g = 0; g < (*out)->ngen; g++)
		rd_salvage(rp, &(*out)->gen[g]);
	return 0;
}

/* A file that shrank while it was read: one sentence, counted as damage
 * (what was read past its new end was zeros, not events). */
static bool rd_shrank(struct rd_pid *rp, const char *path, bool shrank)
{
	if (!shrank)
		return false;
	rp->damaged++;
	ada_log("%s shrank while being read: what lay past its new end read as zeros, not as "
	        "its events; read what was there",
	        path);
	return true;
}

void rd_thread_close(struct rd_pid *rp, struct ada_atf_thread *t)
{
	for (size_t g = 0; t && g < t->ngen; g++) {
		const struct ada_atf_gen *gn = &t->gen[g];
		if (gn->detail)
			rd_shrank(rp, gn->detail_path, ada_atf_detail_shrank(gn->detail));
		if (gn->index && rd_shrank(rp, gn->index_path, ada_atf_index_shrank(gn->index)))
			continue; /* its blocks that did not decode are the shrink's */
		uint64_t bad = t->gen[g].index ? ada_atf_index_undecoded(t->gen[g].index) : 0;
		if (!bad)
			continue;
		rp->damaged++;
		ada_log("%s: damaged: %" PRIu64 " compact block%s did not decode; the events "
		        "from the first are not shown (run `ada validate`)",
		        t->gen[g].index_path, bad, bad == 1 ? "" : "s");
	}
	ada_atf_thread_free(t);
}

struct rd_walk {
	struct ada_frames *w;
	uint32_t gen;
	uint64_t fed;
};

static int rd_walk_run(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	struct rd_walk *rw = ctx;
	ada_frames_push_many(rw->w, ev, n, rw->gen, seq);
	rw->fed += n;
	return 0;
}

uint64_t rd_thread_walk(const struct ada_atf_thread *t, struct ada_frames *w, uint64_t from,
                        uint64_t to, bool finish)
{
	uint64_t n = 0;

	for (size_t g = 0; g < t->ngen; g++) {
		const struct ada_atf_index *ix = t->gen[g].index;
		struct rd_walk rw = {w, (uint32_t)g, 0};
		uint64_t b, e;
		if (!ix)
			continue;
		ada_atf_index_range(ix, from, to, &b, &e);
		/* A block that does not decode ends the file's events: counted by
		 * the index, said by rd_thread_close(). */
		(void)ada_atf_index_walk(ix, b, e, rd_walk_run, &rw);
		n += rw.fed;
	}
	if (finish)
		ada_frames_finish(w);
	return n;
}

uint32_t rd_thread_tid(const struct rd_pid *rp, const struct ada_atf_thread *t)
{
	uint32_t tid = rp->manifest ? ada_manifest_tid_of(rp->manifest, t->thread) : 0;

	for (size_t g = 0; !tid && g < t->ngen; g++)
		if (t->gen[g].index)
			tid = ada_atf_index_header(t->gen[g].index)->thread_id;
	return tid;
}

const char *rd_program(const struct rd_pid *rp, char *buf, size_t len)
{
	json_t *prog = rp->manifest ? json_object_get(rp->manifest, "program") : NULL;
	const char *s = json_string_value(json_array_get(prog, 0));

	if (s && *s) {
		const char *b = strrchr(s, '/');
		snprintf(buf, len, "%s", b && b[1] ? b + 1 : s);
	} else {
		snprintf(buf, len, "pid %" PRIu32, rp->p->pid);
	}
	return rd_mask(buf);
}

/* The bytes of the UTF-8 character at s (2 to 4; s[0] >= 0x80), 0 when
 * it is not one (a stray or cut sequence, an overlong form, a surrogate,
 * past U+10FFFF: what jansson refuses). Reads no byte past a NUL. */
static size_t rd_utf8_len(const unsigned char *s)
{
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	unsigned lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
	unsigned hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
	if (s[0] < 0xe0 || s[0] > 0xf4 || s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
		return 0;
	return s[0] < 0xf0 ? 3 : (s[3] & 0xc0) == 0x80 ? 4 : 0;
}

char *rd_mask(char *s)
{
	char *o = s;
	for (const unsigned char *i = (const unsigned char *)s; *i;) {
		size_t n = *i < 0x80 ? 1 : rd_utf8_len(i);
		bool c1 = n == 2 && i[0] == 0xc2 && i[1] <= 0x9f; /* U+0080..U+009F */
		if (n == 0 || c1 || *i < 0x20 || *i == 0x7f) {
			*o++ = '?';
			i += n ? n : 1;
			continue;
		}
		for (; n > 0; n--)
			*o++ = (char)*i++;
	}
	*o = '\0';
	return s;
}

bool rd_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

int rd_parse_time(const char *s, uint64_t base, uint64_t *out)
{
	uint64_t d;
	if (*s != '+')
		return rd_parse_u64(s, out) ? 0 : -EINVAL;
	int rc = ada_trigger_parse_duration(s + 1, &d);
	if (rc == 0 && d > UINT64_MAX - base)
		rc = -ERANGE;
	if (rc == 0)
		*out = base + d;
	return rc;
}

static size_t rd_index_hash(struct rd_key k, size_t mask)
{
	uint64_t h = (k.a ^ ((uint64_t)k.b << 40 | k.b)) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 24) & mask;
}

/* The first empty slot from k's own. */
static size_t rd_index_free_slot(const uint32_t *slots, size_t n, struct rd_key k)
{
	size_t i = rd_index_hash(k, n - 1);
	while (slots[i])
		i = (i + 1) & (n - 1);
	return i;
}

int rd_index_reserve(struct rd_index *x, rd_key_fn key, const void *entries)
{
	if ((x->len + 1) * 2 <= x->nslots)
		return 0;
	size_t n = x->nslots ? x->nslots * 2 : 4096;
	uint32_t *sl = calloc(n, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	for (size_t i = 0; i < x->nslots; i++)
		if (x->slots[i])
			sl[rd_index_free_slot(sl, n, key(entries, x->slots[i] - 1))] = x->slots[i];
	free(x->slots);
	x->slots = sl;
	x->nslots = n;
	return 0;
}

uint32_t *rd_index_slot(const struct rd_index *x, rd_key_fn key, const void *entries,
                        struct rd_key k)
{
	size_t i = rd_index_hash(k, x->nslots - 1);
	for (; x->slots[i]; i = (i + 1) & (x->nslots - 1)) {
		struct rd_key e = key(entries, x->slots[i] - 1);
		if (e.a == k.a && e.b == k.b)
			break;
	}
	return &x->slots[i];
}

void rd_index_put(struct rd_index *x, uint32_t *slot, uint32_t pos)
{
	*slot = pos + 1;
	x->len++;
}

void rd_index_free(struct rd_index *x)
{
	free(x->slots);
	*x = (struct rd_index){0};
}

const char *rd_fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.2f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	return buf;
}

bool rd_wall_anchor(const json_t *manifest, struct ada_wall_anchor *out)
{
	const json_t *a = json_object_get(json_object_get(manifest, "clock"), "wall_anchor");
	json_int_t b = json_integer_value(json_object_get(a, "boottime_ns"));
	json_int_t w = json_integer_value(json_object_get(a, "realtime_ns"));
	json_int_t u = json_integer_value(json_object_get(a, "uncertainty_ns"));
	if (b <= 0 || w <= 0 || u < 0)
		return false;
	*out = (struct ada_wall_anchor){(uint64_t)b, (uint64_t)w, (uint64_t)u};
	return true;
}

const char *rd_fmt_wall(uint64_t wall_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(wall_ns / 1000000000ull);
	struct tm tm;
	char date[40], zone[8];
	if (!localtime_r(&secs, &tm) || !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) ||
	    !strftime(zone, sizeof(zone), "%z", &tm)) {
		snprintf(buf, len, "%" PRIu64, wall_ns);
		return buf;
	}
	snprintf(buf, len, "%s.%09" PRIu64 "%s", date, (uint64_t)(wall_ns % 1000000000u), zone);
	return buf;
}

int rd_parse_time_form(const char *s, enum rd_time_form *out)
{
	if (!strcmp(s, "boot"))
		*out = RD_TIME_BOOT;
	else if (!strcmp(s, "wall"))
		*out = RD_TIME_WALL;
	else
		return -EINVAL;
	return 0;
}

int rd_demangle_opt(const char *arg, enum ada_demangle *out)
{
	if (!ada_demangle_parse(arg, out))
		return 0;
	ada_log("bad value '%s' for --demangle: full, simple or no", arg);
	return 2;
}

static double rd_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void rd_progress_init(struct rd_progress *pg, const char *what, uint64_t total)
{
	memset(pg, 0, sizeof(*pg));
	pg->what = what;
	pg->total = total ? total : 1;
	pg->tty = isatty(STDERR_FILENO);
	pg->t_start = pg->tty ? rd_now() : 0;
	pg->next_check = 1u << 20;
}

void rd_progress_add(struct rd_progress *pg, uint64_t n)
{
	pg->done += n;
	if (!pg->tty || pg->done < pg->next_check)
		return;
	pg->next_check = pg->done + (1u << 20); /* look at the clock every 1 Mi events */
	double el = rd_now() - pg->t_start;
	if (el < 1.0)
		return;
	unsigned pct = (unsigned)(pg->done * 100 / pg->total);
	unsigned bar = pct > 100 ? 30 : pct * 30 / 100;
	fprintf(stderr, "\r%s [%.*s%*s] %3u%% %" PRIu64 " events, %.1f s", pg->what, (int)bar,
	        "##############################", (int)(30 - bar), "", pct > 100 ? 100 : pct,
	        pg->done, el);
	pg->shown = true;
}

void rd_progress_end(struct rd_progress *pg)
{
	if (pg->shown)
		fprintf(stderr, "\r%*s\r", 79, "");
}

int rd_out_open(struct rd_out *o, const char *path)
{
	char *dir, *slash;
	int fd, err;

	memset(o, 0, sizeof(*o));
	o->dirfd = -1;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	o->name = strdup(slash ? slash + 1 : path);
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	err =
	    o->name && *o->name ? ada_fs_open_dir(AT_FDCWD, slash ? dir : ".", &o->dirfd) : -EISDIR;
	free(dir);
	if (!err)
		err = ada_fs_create_tmp(o->dirfd, o->name, O_WRONLY, o->tmp, &fd);
	if (!err && !(o->f = fdopen(fd, "w"))) {
		err = -errno;
		close(fd);
		unlinkat(o->dirfd, o->tmp, 0);
	}
	if (err) {
		if (o->dirfd >= 0)
			close(o->dirfd);
		free(o->name);
		memset(o, 0, sizeof(*o));
	}
	return err;
}

int rd_out_commit(struct rd_out *o)
{
	int err = 0;

	if (o->f == stdout)
		return fflush(stdout) ? -errno : 0;
	if (fflush(o->f) || ferror(o->f))
		err = -errno ? -errno : -EIO;
	if (fclose(o->f) && !err)
		err = -errno;
	if (err)
		unlinkat(o->dirfd, o->tmp, 0);
	else
		err = ada_fs_commit(o->dirfd, o->tmp, o->name);
	close(o->dirfd);
	free(o->name);
	memset(o, 0, sizeof(*o));
	return err;
}

void rd_out_abort(struct rd_out *o)
{
	if (!o->f || o->f == stdout)
		return;
	fclose(o->f);
	unlinkat(o->dirfd, o->tmp, 0);
	close(o->dirfd);
	free(o->name);
	memset(o, 0, sizeof(*o));
}

void rd_json_str(FILE *f, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	putc('"', f);
	for (size_t k = 0; s[k] && k < 4096; k++) {
		unsigned char c = (unsigned char)s[k];
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc(c, f);
		} else if (c < 0x20 || c >= 0x7f) {
			/* Control bytes, and bytes that may not be UTF-8 (names
			 * come from untrusted files): always valid JSON. */
			fputs("\\u00", f);
			putc(hex[c >> 4], f);
			putc(hex[c & 15], f);
		} else {
			putc(c, f);
		}
	}
	putc('"', f);
}

void rd_window_fillers(FILE *f, const json_t *w, const char *lead, const char *held)
{
	const json_t *fs = json_object_get(w, "fillers"),
	             *hold = json_object_get(w, "hold_without");
	const json_t *x;
	size_t i;

	if (!json_array_size(fs))
		return;
	fputs(lead, f);
	json_array_foreach(fs, i, x)
	{
		const char *name = json_string_value(json_object_get(x, "function"));
		const char *id = json_string_value(json_object_get(x, "function_id"));
		if (!name)
			name = id ? id : "?";
		fprintf(f, "%s %s %.0f %%", i ? "," : "", name,
		        100.0 * json_number_value(json_object_get(x, "share")));
	}
	if (!json_array_size(hold))
		return;
	fputs("; without ", f);
	json_array_foreach(hold, i, x)
	{
		const char *name = json_string_value(x);
		fprintf(f, "%s%s", i ? ", " : "", name ? name : "?");
	}
	fprintf(f, " in the detail set%s it would have held", held);
}

json_t *rd_count_only_json(const struct rd_pid *rp)
{
	json_t *co = rp->manifest ? json_object_get(rp->manifest, "count_only") : NULL;
	json_t *fns = json_object_get(co, "functions");
	return json_is_array(fns) ? json_deep_copy(fns) : json_array();
}

uint64_t rd_count_only_uncalled(const struct rd_pid *rp)
{
	return ada_count_only_uncalled(rp->manifest ? json_object_get(rp->manifest, "count_only")
	                                            : NULL);
}

void rd_count_only_text(const struct rd_pid *rp, FILE *f, const char *indent)
{
	json_t *co = rp->manifest ? json_object_get(rp->manifest, "count_only") : NULL;
	json_t *fns = json_object_get(co, "functions"), *e;
	size_t i;
	/* The functions never called: counted, not listed (hooks.md). */
	uint64_t uncalled = ada_count_only_uncalled(co);
	if (json_array_size(fns) == 0 && uncalled == 0)
		return;
	bool final = json_is_true(json_object_get(co, "final"));
	fprintf(f, "%scount-only functions (exact calls, no events, not timed%s):\n", indent,
	        final ? ""
	              : "; the process did not exit normally: threads still running "
	                "at its end are not in these counts");
	json_array_foreach(fns, i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		json_int_t calls = json_integer_value(json_object_get(e, "calls"));
		const char *moved = json_string_value(json_object_get(e, "moved"));
		char *shown = name ? strdup(name) : NULL; /* agent.json's: the target's */
		fprintf(f, "%s%10lld  %s", indent, (long long)calls, shown ? rd_mask(shown) : "?");
		free(shown);
		if (moved && !strcmp(moved, "budget"))
			fprintf(f,
			        "  (moved by --overhead-budget after %lld ms: %lld calls/s, mean "
			        "%lld ns)",
			        (long long)json_integer_value(json_object_get(e, "moved_after_ms")),
			        (long long)json_integer_value(json_object_get(e, "calls_per_s")),
			        (long long)json_integer_value(json_object_get(e, "mean_ns")));
		fputc('\n', f);
	}
	if (uncalled > 0)
		fprintf(f, "%s%10d  (%lld more count-only functions never called)\n", indent, 0,
		        (long long)uncalled);
}
