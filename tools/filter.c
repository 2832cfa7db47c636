/*
 * The reading commands' filters (filter.h): parsing, the time range of a
 * pid, and the --function/--depth state machine the walkers go through.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <string.h>

#include "cmd.h"
#include "filter.h"

int rd_filter_opt(struct rd_filter *f, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case RD_OPT_THREAD:
	case RD_OPT_PID:
		if (!rd_parse_u64(arg, &v) || v > UINT32_MAX)
			break;
		*(c == RD_OPT_THREAD ? &f->have_thread : &f->have_pid) = true;
		*(c == RD_OPT_THREAD ? &f->thread : &f->pid) = (uint32_t)v;
		return 0;
	case RD_OPT_FROM:
		f->from_s = arg;
		return 0;
	case RD_OPT_TO:
		f->to_s = arg;
		return 0;
	case RD_OPT_WINDOW:
		if (!rd_parse_u64(arg, &f->window))
			break;
		f->have_window = true;
		return 0;
	case RD_OPT_FUNCTION:
		f->glob = arg;
		return 0;
	case RD_OPT_DEPTH:
		if (!rd_parse_u64(arg, &v) || !v || v > UINT32_MAX)
			break;
		f->depth = (uint32_t)v;
		return 0;
	default:
		return 1;
	}
	ada_log("bad value '%s' for --%s", arg,
	        c == RD_OPT_THREAD   ? "thread (N of thread_N)"
	        : c == RD_OPT_PID    ? "pid (a process id)"
	        : c == RD_OPT_WINDOW ? "window (a window id)"
	                             : "depth (1 or more)");
	return 2;
}

int rd_filter_check(const struct rd_filter *f)
{
	uint64_t a, b;

	if (f->from_s && f->to_s && rd_parse_time(f->from_s, 0, &a) == 0 &&
	    rd_parse_time(f->to_s, 0, &b) == 0 && (*f->from_s == '+') == (*f->to_s == '+') &&
	    a > b) {
		ada_log("--from is after --to: nothing to show");
		return 2;
	}
	return 0;
}

void rd_filter_usage(FILE *out, bool calls)
{
	fprintf(out, "  --pid P          only process P\n"
	             "  --thread N       only thread_N\n"
	             "  --from/--to T    only events with from <= ts <= to: nanoseconds, or an\n"
	             "                   offset from the recording's start (+1.5s, +200ms, +30us)\n"
	             "  --window N       only the time range of trigger window N (ada windows)\n");
	if (calls)
		fprintf(
		    out,
		    "  --function GLOB  only calls of matching functions and what they call\n"
		    "  --depth N        only N levels (below the matched call with --function)\n");
}

bool rd_filter_wants_pid(const struct rd_filter *f, uint32_t pid)
{
	return !f->have_pid || f->pid == pid;
}

int rd_filter_check_pid(const struct rd_filter *f, const struct ada_atf_tree *tree, const char *dir)
{
	for (size_t i = 0; f->have_pid && i < tree->npids; i++)
		if (tree->pids[i].pid == f->pid)
			return 0;
	if (!f->have_pid)
		return 0;
	ada_log("%s: no pid_%" PRIu32 " directory (--pid)", dir, f->pid);
	return 1;
}

struct ada_atf_tree *rd_filter_open_tree(const struct rd_filter *f, const char *dir, int *rc)
{
	struct ada_atf_tree *tree = cmd_open_tree(dir);
	if (!tree) {
		*rc = 2;
		return NULL;
	}
	if (rd_filter_check_pid(f, tree, dir)) {
		ada_atf_tree_free(tree);
		*rc = 1;
		return NULL;
	}
	return tree;
}

bool rd_filter_wants_thread(const struct rd_filter *f, uint32_t thread)
{
	return !f->have_thread || f->thread == thread;
}

/* The time range of window id in the manifest. */
static int filter_window(const json_t *m, uint64_t id, uint64_t *from, uint64_t *to)
{
	const json_t *ws = json_object_get(json_object_get(m, "flight_recorder"), "windows"), *w;
	size_t i;

	json_array_foreach(ws, i, w)
	{
		const json_t *wid = json_object_get(w, "id"), *f = json_object_get(w, "from_ns"),
		             *t = json_object_get(w, "to_ns");
		if (!json_is_integer(wid) || (uint64_t)json_integer_value(wid) != id ||
		    !json_is_integer(f) || !json_is_integer(t))
			continue;
		*from = (uint64_t)json_integer_value(f);
		*to = (uint64_t)json_integer_value(t);
		return 0;
	}
	return -ENOENT;
}

/* --from/--to T: 0, or -1 after one sentence. */
static int filter_time(const char *opt, const char *v, uint64_t base, uint64_t *out)
{
	int rc = rd_parse_time(v, base, out);
	if (rc == -EDOM)
		ada_log("%s %s has no unit: an offset needs one (ns, us, ms or s), e.g. %sms", opt,
		        v, v);
	else if (rc < 0)
		ada_log("bad value '%s' for %s: nanoseconds, or +1.5s, +200ms, +30us from the "
		        "recording's start",
		        v, opt);
	return rc < 0 ? -1 : 0;
}

int rd_filter_range(const struct rd_filter *f, const struct rd_pid *rp, uint64_t *from,
                    uint64_t *to)
{
	uint64_t wf, wt;

	*from = 0;
	*to = UINT64_MAX;
	if (f->from_s && filter_time("--from", f->from_s, rp->t0, from) < 0)
		return -EINVAL;
	if (f->to_s && filter_time("--to", f->to_s, rp->t0, to) < 0)
		return -EINVAL;
	if (f->have_window) {
		if (!rp->manifest || filter_window(rp->manifest, f->window, &wf, &wt)) {
			ada_log("%s: no window %" PRIu64
			        " in its manifest (ada windows lists them)",
			        rp->p->dir, f->window);
			return -EINVAL;
		}
		*from = wf > *from ? wf : *from;
		*to = wt < *to ? wt : *to;
	}
	return 0;
}

static bool filter_match(const char *glob, struct ada_names *names, uint64_t fid)
{
	const struct ada_name *nm = ada_names_get(names, fid);

	return !fnmatch(glob, nm->name, 0) || (nm->mangled && !fnmatch(glob, nm->mangled, 0));
}

bool rd_filter_event(const struct rd_filter *f, struct ada_names *names, struct rd_filter_calls *st,
                     const struct atf_index_event *ev, uint32_t *depth)
{
	bool marker =
	    ev->event_kind == ATF_EVENT_EXCEPTION && (ev->call_depth & ADA_SIGNAL_MARKER_FLAG);
	uint32_t d = marker ? 1 : ev->call_depth;

	*depth = marker ? 64 : d;
	if (f->glob) {
		if (!st->inside && ev->event_kind == ATF_EVENT_CALL &&
		    filter_match(f->glob, names, ev->function_id)) {
			st->inside = true;
			st->base = d;
		}
		if (!st->inside || (!marker && d < st->base)) {
			st->inside = false;
			return false;
		}
		if (!marker && d == st->base && ev->event_kind != ATF_EVENT_CALL)
			st->inside = false; /* the matched call ends here; this line is its last */
		d = marker ? 1 : d - st->base + 1;
		*depth = marker ? 64 : d;
	}
	return marker || !f->depth || d <= f->depth;
}

struct rd_filter_run {
	const struct rd_filter *f;
	struct ada_names *names;
	struct ada_frames *w;
	struct rd_filter_calls st;
	uint32_t gen;
	uint64_t n;
};

static int rd_filter_run(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	struct rd_filter_run *r = ctx;
	uint32_t depth;

	for (uint64_t i = 0; i < n; i++)
		if (rd_filter_event(r->f, r->names, &r->st, &ev[i], &depth)) {
			ada_frames_push(r->w, &ev[i], r->gen, seq + i);
			r->n++;
		}
	return 0;
}

uint64_t rd_filter_walk(const struct rd_filter *f, struct ada_names *names,
                        const struct ada_atf_thread *t, struct ada_frames *w, uint64_t from,
                        uint64_t to, bool finish)
{
	struct rd_filter_run r = {.f = f, .names = names, .w = w};

	if (!f->glob && !f->depth)
		return rd_thread_walk(t, w, from, to, finish);
	for (size_t g = 0; g < t->ngen; g++) {
		const struct ada_atf_index *ix = t->gen[g].index;
		uint64_t b, e;
		if (!ix)
			continue;
		ada_atf_index_range(ix, from, to, &b, &e);
		r.gen = (uint32_t)g;
		/* A block that does not decode: said by rd_thread_close(). */
		(void)ada_atf_index_walk(ix, b, e, rd_filter_run, &r);
	}
	if (finish)
		ada_frames_finish(w);
	return r.n;
}
