/*
 * ada export DIR --format chrome -o FILE: the recording as Chrome
 * trace-event JSON, which the Perfetto UI, chrome://tracing and speedscope
 * load. One track per thread (pid, tid), one complete event ("X") per
 * call, instant events ("i") for trigger fires, detail windows, the fatal
 * signal and exception exits, the detail record's registers as the
 * arguments of the calls that have one, and process and thread names as
 * metadata ("M").
 *
 * Streamed: each thread's events go through the frame walker
 * (src/analyze), and a call's event is written when its frame ends; only
 * the stack of open frames is kept, so memory does not depend on the
 * recording's length. Lines are formatted by hand into a buffer (no JSON
 * object per event). A progress bar goes to stderr when it is a terminal
 * and the export takes over a second.
 *
 * Perfetto's protobuf format is not written: Debian has no maintained C
 * library that encodes Perfetto's TrackEvent (protobuf-c would need
 * Perfetto's .proto files vendored and kept in step), and the Perfetto UI
 * opens this JSON as it is.
 *
 * Exit status: 0; 1 when a file was damaged or skipped (the rest is
 * exported) or the output could not be written; 2 for bad usage.
 */
#define _GNU_SOURCE /* sigabbrev_np */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "filter.h"
#include "read.h"

struct ex_opts {
	const char *out;
	bool atf; /* --format atf: cmd_export_atf.c */
	enum ada_demangle dm;
	struct rd_filter f;
};

struct ex_state {
	FILE *f;
	const struct ex_opts *o;
	struct rd_pid *rp;
	const struct ada_atf_thread *t;
	uint32_t pid, tid;
	uint64_t from, to; /* the pid's time range (the filters') */
	bool any;          /* a process was written: the next one's line starts with a comma */
	struct rd_progress pg;
};

/* ------------------------------------------------------------ format */

static void ex_u64(FILE *f, uint64_t v)
{
	char t[24];
	int i = sizeof(t);

	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(t + i, 1, sizeof(t) - i, f);
}

/* Nanoseconds as microseconds with three decimals (trace-event time). */
static void ex_us(FILE *f, uint64_t ns)
{
	char t[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
	             (char)('0' + ns % 10)};
	ex_u64(f, ns / 1000);
	fwrite(t, 1, 4, f);
}

/* ,"pid":P,"tid":T,"ts":US */
static void ex_where(struct ex_state *s, uint64_t ts)
{
	fputs(",\"pid\":", s->f);
	ex_u64(s->f, s->pid);
	fputs(",\"tid\":", s->f);
	ex_u64(s->f, s->tid);
	fputs(",\"ts\":", s->f);
	ex_us(s->f, ts);
}

static void ex_hexarg(FILE *f, const char *k, uint64_t v, bool *first)
{
	fprintf(f, "%s\"%s\":\"0x%" PRIx64 "\"", *first ? "" : ",", k, v);
	*first = false;
}

static const struct atf_detail_function_payload *
ex_detail(const struct ada_atf_thread *t, uint32_t src, uint32_t seq, uint64_t fid, uint16_t type)
{
	const struct atf_detail_event_header *de;
	const uint8_t *stack;

	if (seq == ATF_NO_DETAIL || src >= t->ngen || !t->gen[src].detail)
		return NULL;
	de = ada_atf_detail_get(t->gen[src].detail, seq);
	/* The _FP form (6, 7) of the type (3, 4) is the same record with the
	 * vector registers. */
	if (!de || (de->event_type != type && de->event_type != type + 3))
		return NULL;
	const struct atf_detail_function_payload *p = ada_atf_detail_function(de, &stack);
	return p && p->function_id == fid ? p : NULL;
}

/* The arguments of a call's event: how it ended when not by RETURN, and
 * the registers of its detail records (docs/format.md, x86_64 names). */
static void ex_args(struct ex_state *s, const struct ada_frame *fr, enum ada_frame_end how)
{
	static const char *const regs[6] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};
	static const char *const ends[] = {"return", "exception", "open", "orphan"};
	const struct atf_detail_function_payload *c = ex_detail(
	    s->t, fr->call_src, fr->call_detail, fr->function_id, ATF_DETAIL_FUNCTION_CALL);
	const struct atf_detail_function_payload *r =
	    how == ADA_END_RETURN ? ex_detail(s->t, fr->end_src, fr->end_detail, fr->function_id,
	                                      ATF_DETAIL_FUNCTION_RETURN)
	                          : NULL;
	bool first = true;

	if (how == ADA_END_RETURN && !c && !r && !fr->wait_ns)
		return;
	fputs(",\"args\":{", s->f);
	if (how != ADA_END_RETURN) {
		fprintf(s->f, "\"end\":\"%s\"", ends[how]);
		first = false;
	}
	for (int i = 0; c && i < 6; i++)
		ex_hexarg(s->f, regs[i], c->x_regs[i], &first);
	if (r) {
		ex_hexarg(s->f, "return_rax", r->x_regs[6], &first);
		ex_hexarg(s->f, "return_rdx", r->x_regs[7], &first);
	}
	if (fr->wait_ns) { /* the slice is the wall time; this much of it was ada's */
		fputs(first ? "\"ada_wait_us\":" : ",\"ada_wait_us\":", s->f);
		ex_us(s->f, fr->wait_ns);
	}
	fputs("}", s->f);
}

/* ----------------------------------------------------------- walking */

static void ex_leave(void *ctx, const struct ada_frame *fr, enum ada_frame_end how,
                     struct ada_frame *parent)
{
	struct ex_state *s = ctx;
	const char *name = ada_names_get(s->rp->names, fr->function_id)->name;

	(void)parent;
	fputs(",\n{\"ph\":\"X\",\"name\":", s->f);
	rd_json_str(s->f, name);
	ex_where(s, fr->call_ns);
	fputs(",\"dur\":", s->f);
	ex_us(s->f, fr->end_ns - fr->call_ns);
	ex_args(s, fr, how);
	fputs("}", s->f);
	if (how == ADA_END_EXCEPTION) {
		fputs(",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"exception\",\"name\":", s->f);
		char buf[300];
		snprintf(buf, sizeof(buf), "exception exit: %s", name);
		rd_json_str(s->f, buf);
		ex_where(s, fr->end_ns);
		fputs("}", s->f);
	}
}

static void ex_marker(void *ctx, uint64_t ts, uint32_t sig, uint64_t addr)
{
	struct ex_state *s = ctx;
	const char *abbrev = sigabbrev_np((int)sig);

	fprintf(s->f,
	        ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"crash\",\"name\":\"signal %" PRIu32
	        " (SIG%s)\"",
	        sig, abbrev ? abbrev : "?");
	ex_where(s, ts);
	fprintf(s->f, ",\"args\":{\"fault_address\":\"0x%" PRIx64 "\"}}", addr);
}

/* ada's wait for ring space: a slice of its own, inside the frames it
 * was taken out of. */
static void ex_wait(void *ctx, uint64_t begin_ns, uint64_t end_ns)
{
	struct ex_state *s = ctx;

	fputs(",\n{\"ph\":\"X\",\"cat\":\"ada\",\"name\":\"ada: waiting for ring space\"", s->f);
	ex_where(s, begin_ns);
	fputs(",\"dur\":", s->f);
	ex_us(s->f, end_ns > begin_ns ? end_ns - begin_ns : 0);
	fputs("}", s->f);
}

struct ex_run {
	struct ex_state *s;
	struct ada_frames *w;
	uint32_t gen;
};

static int ex_run(void *ctx, const struct atf_index_event *ev, uint64_t seq, uint64_t n)
{
	struct ex_run *r = ctx;
	ada_frames_push_many(r->w, ev, n, r->gen, seq);
	rd_progress_add(&r->s->pg, n);
	return 0;
}

/* One thread, generation by generation, a run of the sequential walk at
 * a time so the progress bar moves inside a long thread too. */
static void ex_walk(struct ex_state *s, struct ada_frames *w)
{
	if (s->o->f.glob || s->o->f.depth) { /* event by event: filter.c */
		rd_filter_walk(&s->o->f, s->rp->names, s->t, w, s->from, s->to, true);
		for (size_t g = 0; g < s->t->ngen; g++)
			if (s->t->gen[g].index)
				rd_progress_add(&s->pg, ada_atf_index_count(s->t->gen[g].index));
		return;
	}
	for (size_t g = 0; g < s->t->ngen; g++) {
		const struct ada_atf_index *ix = s->t->gen[g].index;
		struct ex_run r = {s, w, (uint32_t)g};
		uint64_t b = 0, n = 0;
		if (ix)
			ada_atf_index_range(ix, s->from, s->to, &b, &n);
		/* A block that does not decode: said by rd_thread_close(). */
		if (ix)
			(void)ada_atf_index_walk(ix, b, n, ex_run, &r);
	}
	ada_frames_finish(w);
}

static void ex_meta(FILE *f, const char *what, uint32_t pid, uint32_t tid, const char *name,
                    bool first)
{
	fprintf(f,
	        "%s{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
	        ",\"args\":{\"name\":",
	        first ? "" : ",\n", what, pid, tid);
	rd_json_str(f, name);
	fputs("}}", f);
}

static int ex_thread(struct ex_state *s, size_t i)
{
	static const struct ada_frames_ops ops = {
	    .leave = ex_leave, .marker = ex_marker, .wait = ex_wait};
	struct ada_atf_thread *t;
	struct ada_frames *w;
	char name[64];
	int err;

	if (!rd_filter_wants_thread(&s->o->f, s->rp->p->thread_ids[i]))
		return 0;
	err = rd_thread_open(s->rp, i, &t);
	if (err || !t)
		return err;
	s->t = t;
	s->tid = rd_thread_tid(s->rp, t);
	if (s->tid == s->pid) /* the viewers add the tid themselves */
		snprintf(name, sizeof(name), "main");
	else
		snprintf(name, sizeof(name), "thread %" PRIu32, t->thread);
	ex_meta(s->f, "thread_name", s->pid, s->tid, name, false);
	fprintf(s->f,
	        ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRIu32
	        ",\"tid\":%" PRIu32 ",\"args\":{\"sort_index\":%" PRIu32 "}}",
	        s->pid, s->tid, t->thread);
	err = ada_frames_new(&ops, s, &w);
	if (!err)
		ex_walk(s, w);
	ada_frames_free(w);
	rd_thread_close(s->rp, t);
	return err;
}

/* ------------------------------------------------- manifest instants */

static uint64_t ex_jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
	                                                       : 0;
}

static void ex_instant_p(struct ex_state *s, const char *cat, const char *name, uint64_t ts,
                         const json_t *args)
{
	if (ts < s->from || ts > s->to)
		return;
	fprintf(s->f, ",\n{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"%s\",\"name\":", cat);
	rd_json_str(s->f, name);
	s->tid = s->pid;
	ex_where(s, ts);
	if (args) {
		char *a = json_dumps(args, JSON_COMPACT | JSON_ENSURE_ASCII);
		if (a)
			fprintf(s->f, ",\"args\":%s", a);
		free(a);
	}
	fputs("}", s->f);
}

/* Trigger fires, window edges and the death, from the manifest. */
static void ex_manifest_instants(struct ex_state *s)
{
	const json_t *m = s->rp->manifest, *fr = json_object_get(m, "flight_recorder");
	const json_t *wins = json_object_get(fr, "windows"), *w,
	             *crash = json_object_get(m, "crash");
	char name[512];
	size_t i;

	json_array_foreach(wins, i, w)
	{
		const char *trig = json_string_value(json_object_get(w, "trigger"));
		uint64_t id = ex_jnum(w, "id");
		json_t *args = json_pack("{sIsIsI}", "window", (json_int_t)id, "from_ns",
		                         (json_int_t)ex_jnum(w, "from_ns"), "to_ns",
		                         (json_int_t)ex_jnum(w, "to_ns"));
		snprintf(name, sizeof(name), "trigger: %s", trig ? trig : "?");
		ex_instant_p(s, "trigger", name, ex_jnum(w, "fire_ns"), args);
		snprintf(name, sizeof(name), "window %" PRIu64 " opens", id);
		ex_instant_p(s, "window", name, ex_jnum(w, "from_ns"), args);
		snprintf(name, sizeof(name), "window %" PRIu64 " closes", id);
		ex_instant_p(s, "window", name, ex_jnum(w, "to_ns"), args);
		json_decref(args);
	}
	if (json_is_object(crash) && ex_jnum(crash, "time_ns")) {
		const char *sn = json_string_value(json_object_get(crash, "signal_name"));
		snprintf(name, sizeof(name), "died of signal %" PRIu64 " (SIG%s)",
		         ex_jnum(crash, "signal"), sn ? sn : "?");
		ex_instant_p(s, "crash", name, ex_jnum(crash, "time_ns"), crash);
	}
}

static uint64_t ex_count(const struct ada_atf_pid *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->nthreads; i++) {
		struct ada_atf_thread *t;
		if (ada_atf_thread_open(p->thread_dirs[i], ADA_ATF_OPEN_SALVAGE, &t))
			continue;
		for (size_t g = 0; g < t->ngen; g++)
			n += t->gen[g].index ? ada_atf_index_count(t->gen[g].index) : 0;
		ada_atf_thread_free(t);
	}
	return n;
}

static int ex_pid(const struct ex_opts *o, struct ex_state *s, const struct ada_atf_pid *p,
                  uint32_t *damaged)
{
	struct rd_pid rp;
	char prog[256], name[300];
	int err = rd_pid_open(p, o->dm, &rp);

	if (err)
		return err;
	err = rd_filter_range(&o->f, &rp, &s->from, &s->to);
	if (err) {
		rd_pid_close(&rp);
		return err;
	}
	s->rp = &rp;
	s->pid = p->pid;
	snprintf(name, sizeof(name), "%s", rd_program(&rp, prog, sizeof(prog)));
	ex_meta(s->f, "process_name", p->pid, 0, name, !s->any); /* viewers add the pid */
	s->any = true;
	for (size_t i = 0; i < p->nthreads && !err; i++)
		err = ex_thread(s, i);
	if (!err && rp.manifest)
		ex_manifest_instants(s);
	*damaged += rp.damaged;
	rd_pid_close(&rp);
	return err;
}

static int ex_tree(const struct ex_opts *o, const struct ada_atf_tree *tree, FILE *f,
                   uint32_t *damaged)
{
	struct ex_state s = {.f = f, .o = o};
	uint64_t total = 0;
	int err = 0;

	for (size_t i = 0; i < tree->npids; i++)
		if (rd_filter_wants_pid(&o->f, tree->pids[i].pid))
			total += ex_count(&tree->pids[i]);
	rd_progress_init(&s.pg, "export", total);
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"ada export\"},"
	      "\"traceEvents\":[\n",
	      f);
	for (size_t i = 0; i < tree->npids && !err; i++)
		if (rd_filter_wants_pid(&o->f, tree->pids[i].pid))
			err = ex_pid(o, &s, &tree->pids[i], damaged);
	fputs("\n]}\n", f);
	rd_progress_end(&s.pg);
	return err;
}

/* -------------------------------------------------------------- main */

static void ex_usage(FILE *f)
{
	fprintf(
	    f, "usage: ada export --format chrome -o FILE [--demangle full|simple|no]\n"
	       "                  [--pid P] [--thread N] [--from T] [--to T] [--window N]\n"
	       "                  [--function GLOB] [--depth N] DIR\n"
	       "       ada export --format atf -o OUTDIR DIR\n"
	       "  Writes every pid_N under DIR as Chrome trace-event JSON (Perfetto UI,\n"
	       "  chrome://tracing, speedscope): one track per thread, one complete event\n"
	       "  per call, instants for triggers, windows, crashes and exception exits.\n"
	       "  A long recording is best cut to a window or a time range for the viewers.\n"
	       "  -o FILE          the output file (replaced whole at the end), or - for stdout\n");
	rd_filter_usage(f, true);
	fprintf(f, "  --format atf copies DIR under OUTDIR as strict ATF v2 files: compact\n"
	           "  index files (--index-format compact) become 32-byte-event index.atf.\n");
}

static int ex_args_parse(int argc, char **argv, struct ex_opts *o, const char **dir)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"demangle", required_argument, NULL, 'd'},
	    RD_FILTER_OPT_SELECT,
	    RD_FILTER_OPT_CALLS,
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	bool chrome = false, filtered = false;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if ((rc = rd_filter_opt(&o->f, c, optarg)) != 1) {
			if (rc)
				return rc;
			filtered = true;
		} else if (c == 'f' && !strcmp(optarg, "chrome")) {
			chrome = true;
		} else if (c == 'f' && !strcmp(optarg, "atf")) {
			chrome = o->atf = true;
		} else if (c == 'f') {
			ada_log("--format %s: ada exports chrome (trace-event JSON, which the "
			        "Perfetto UI opens too) or atf (ATF v2 files)",
			        optarg);
			return 2;
		} else if (c == 'o') {
			o->out = optarg;
		} else if (c == 'd' && rd_demangle_opt(optarg, &o->dm)) {
			return 2;
		} else if (c == 'h') {
			ex_usage(stdout);
			return 0;
		} else if (c != 'd') {
			ex_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || !o->out || !chrome) {
		ada_log("export takes --format chrome, -o FILE and one directory; run `ada export "
		        "--help`");
		return 2;
	}
	if (filtered && o->atf) {
		ada_log("--format atf copies the whole recording: the filters are for --format "
		        "chrome");
		return 2;
	}
	if (rd_filter_check(&o->f))
		return 2;
	*dir = argv[optind];
	return -1;
}

int cmd_export(int argc, char **argv)
{
	struct ex_opts o = {0};
	struct rd_out out;
	const char *dir = NULL;
	uint32_t damaged = 0;
	static char buf[1 << 20];
	int rc = ex_args_parse(argc, argv, &o, &dir), err;

	if (rc >= 0)
		return rc;
	if (o.atf)
		return cmd_export_atf(dir, o.out);
	struct ada_atf_tree *tree = rd_filter_open_tree(&o.f, dir, &rc);
	if (!tree)
		return rc;
	err = rd_out_open(&out, o.out);
	if (err) {
		ada_log("%s: cannot create it: %s", o.out, strerror(-err));
		ada_atf_tree_free(tree);
		return 1;
	}
	setvbuf(out.f, buf, _IOFBF, sizeof(buf));
	err = ex_tree(&o, tree, out.f, &damaged);
	ada_atf_tree_free(tree);
	if (err) {
		rd_out_abort(&out);
		if (err == -EINVAL)
			return 2; /* a filter said what is wrong */
		ada_log("%s: %s; nothing written", dir, strerror(-err));
		return 1;
	}
	err = rd_out_commit(&out);
	if (err) {
		ada_log("%s: %s", o.out, strerror(-err));
		return 1;
	}
	return damaged ? 1 : 0;
}
