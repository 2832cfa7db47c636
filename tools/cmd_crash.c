/*
 * ada crash DIR: for a process that died abnormally, what `gdb bt` on a
 * core would say, without a core: the signal, the faulting thread and
 * address (the manifest's crash section, else the index lane's
 * fatal-signal marker), and every thread's call stack at the moment of
 * death — the frames still open at the end of its index files, innermost
 * first (src/analyze), with the argument registers where a persisted
 * detail window holds the CALL's record.
 *
 * Exit status: 0 (a session without a crash says so); 1 when a file was
 * damaged or skipped (the rest is still shown); 2 for bad usage.
 */
#define _GNU_SOURCE /* sigabbrev_np */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "read.h"
#include "symbols.h"

#define CRASH_MAX_FRAMES 256 /* shown per thread; the rest is counted */

static const char *const cr_regs[6] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};

struct cr_opts {
	bool json;
	enum ada_demangle dm;
};

/* What the process's death was, from the manifest and the marker. */
struct cr_death {
	bool abnormal, caught, have_addr;
	int sig;
	uint64_t addr;
	int64_t faulting_thread; /* thread_N, -1 when unknown */
	uint32_t faulting_tid;
	uint64_t time_ns;
	const char *note;
	/* The faulting thread's registers from the signal context (manifest
	 * crash.context), atf_detail_signal_payload's order. */
	bool have_ctx;
	uint64_t regs[ATF_SIGNAL_NREGS];
};

static void cr_marker(void *ctx, uint64_t ts, uint32_t sig, uint64_t addr)
{
	struct cr_death *d = ctx;
	/* The marker is in the faulting thread's file: the walker's caller
	 * knows which thread that is and fills faulting_thread. */
	d->abnormal = true;
	if (!d->sig)
		d->sig = (int)sig;
	if (!d->have_addr) {
		d->addr = addr;
		d->have_addr = true;
	}
	if (!d->time_ns)
		d->time_ns = ts;
	d->caught = true;
}

static void cr_from_manifest(const json_t *m, struct cr_death *d)
{
	const json_t *c = json_object_get(m, "crash"), *e = json_object_get(m, "exit");
	const char *a;

	d->faulting_thread = -1;
	if (json_is_true(json_object_get(e, "abnormal")))
		d->abnormal = true;
	if (json_is_integer(json_object_get(e, "signal")))
		d->sig = (int)json_integer_value(json_object_get(e, "signal"));
	if (!json_is_object(c))
		return;
	d->abnormal = true;
	if (json_is_integer(json_object_get(c, "signal")))
		d->sig = (int)json_integer_value(json_object_get(c, "signal"));
	d->caught = json_is_true(json_object_get(c, "caught"));
	a = json_string_value(json_object_get(c, "address"));
	if (a && !strncmp(a, "0x", 2)) {
		d->addr = strtoull(a + 2, NULL, 16);
		d->have_addr = true;
	}
	if (json_is_integer(json_object_get(c, "faulting_thread")))
		d->faulting_thread = json_integer_value(json_object_get(c, "faulting_thread"));
	if (json_is_integer(json_object_get(c, "faulting_tid")))
		d->faulting_tid = (uint32_t)json_integer_value(json_object_get(c, "faulting_tid"));
	if (json_is_integer(json_object_get(c, "time_ns")))
		d->time_ns = (uint64_t)json_integer_value(json_object_get(c, "time_ns"));
	d->note = json_string_value(json_object_get(c, "note"));
	const json_t *regs = json_object_get(json_object_get(c, "context"), "registers");
	for (uint32_t i = 0; json_is_object(regs) && i < ATF_SIGNAL_NREGS; i++) {
		const char *v =
		    json_string_value(json_object_get(regs, ada_atf_signal_reg_name(i)));
		if (!v || strncmp(v, "0x", 2))
			return; /* incomplete: no frame #0 from it */
		d->regs[i] = strtoull(v + 2, NULL, 16);
	}
	d->have_ctx = json_is_object(regs);
}

/* Frame #0 of the faulting thread: the function holding the pc, named
 * from the symbol tables (module+offset when no function holds it). */
struct cr_top {
	struct ada_symtab_addr at;
	bool found;
	const struct ada_name *nm; /* when at.function_id */
};

static void cr_top_find(struct rd_pid *rp, const struct cr_death *d, struct cr_top *top)
{
	top->found = rp->syms && ada_symtab_by_addr(rp->syms, d->regs[ATF_SIGNAL_REG_PC], &top->at);
	top->nm = top->found && top->at.function_id ? ada_names_get(rp->names, top->at.function_id)
	                                            : NULL;
}

/* The x86_64 argument registers, by their index in the context. */
static const uint32_t cr_arg_regs[6] = {5, 4, 1, 2, 8, 9}; /* rdi rsi rdx rcx r8 r9 */

static const char *cr_base(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	return b ? b + 1 : path ? path : "?";
}

/* Frame #0 of its own (on_record false), or the pc and registers under
 * the innermost open frame, which holds the pc (on_record). */
static void cr_top_text(const struct cr_death *d, const struct cr_top *top, bool on_record)
{
	uint64_t pc = d->regs[ATF_SIGNAL_REG_PC];

	if (!on_record) {
		if (top->nm)
			printf("  #0   %s+0x%" PRIx64, top->nm->name, top->at.offset);
		else if (top->found)
			printf("  #0   %s+0x%" PRIx64, cr_base(top->at.module), top->at.offset);
		else
			printf("  #0   0x%" PRIx64, pc);
		printf(" (");
		for (int i = 0; i < 6; i++)
			printf("%s%s=0x%" PRIx64, i ? ", " : "", cr_regs[i],
			       d->regs[cr_arg_regs[i]]);
		printf(")  [%s]  %s\n", top->found ? cr_base(top->at.module) : "?",
		       top->nm ? "no frame on record (not hooked, or its call not recorded)"
		               : "in no known function");
	}
	printf("       pc 0x%" PRIx64, pc);
	if (top->nm)
		printf(" (%s+0x%" PRIx64 ")", top->nm->name, top->at.offset);
	printf(", registers at the signal:");
	for (uint32_t i = 0; i < ATF_SIGNAL_NREGS; i++)
		printf("%s %s=0x%" PRIx64, i % 6 == 0 ? "\n        " : "",
		       ada_atf_signal_reg_name(i), d->regs[i]);
	printf("\n");
}

/* The pc and registers (into o, a frame); with on_record false, o is
 * frame #0 of its own: function, module, offset, args at the signal. */
static void cr_top_json(json_t *o, const struct cr_death *d, const struct cr_top *top,
                        bool on_record)
{
	json_t *regs = json_object();
	char hex[24];

	if (!on_record) {
		json_t *args = json_object();
		json_object_set_new(o, "function",
		                    top->nm ? json_string(top->nm->name) : json_null());
		json_object_set_new(o, "mangled",
		                    top->nm && top->nm->mangled ? json_string(top->nm->mangled)
		                                                : json_null());
		json_object_set_new(o, "module",
		                    top->found && top->at.module ? json_string(top->at.module)
		                                                 : json_null());
		json_object_set_new(o, "function_id",
		                    top->nm ? json_integer((json_int_t)top->at.function_id)
		                            : json_null());
		json_object_set_new(o, "depth", json_null());
		json_object_set_new(o, "call_ns", json_null());
		for (int i = 0; i < 6; i++) {
			snprintf(hex, sizeof(hex), "0x%" PRIx64, d->regs[cr_arg_regs[i]]);
			json_object_set_new(args, cr_regs[i], json_string(hex));
		}
		json_object_set_new(o, "args", args);
	}
	json_object_set_new(o, "on_record", json_boolean(on_record));
	snprintf(hex, sizeof(hex), "0x%" PRIx64, d->regs[ATF_SIGNAL_REG_PC]);
	json_object_set_new(o, "pc", json_string(hex));
	json_object_set_new(o, "offset",
	                    top->found ? json_integer((json_int_t)top->at.offset) : json_null());
	for (uint32_t i = 0; i < ATF_SIGNAL_NREGS; i++) {
		snprintf(hex, sizeof(hex), "0x%" PRIx64, d->regs[i]);
		json_object_set_new(regs, ada_atf_signal_reg_name(i), json_string(hex));
	}
	json_object_set_new(o, "registers", regs);
}

/* The argument registers of a frame's CALL, when a detail window kept it. */
static const struct atf_detail_function_payload *cr_args(const struct ada_atf_thread *t,
                                                         const struct ada_frame *f,
                                                         uint64_t xmm[ATF_DETAIL_XMM_WORDS],
                                                         bool *have_xmm)
{
	const struct atf_detail_event_header *de;
	const uint8_t *stack;

	*have_xmm = false;
	if (f->call_detail == ATF_NO_DETAIL || f->call_src >= t->ngen ||
	    !t->gen[f->call_src].detail)
		return NULL;
	de = ada_atf_detail_get(t->gen[f->call_src].detail, f->call_detail);
	if (!de || !ada_atf_detail_is_call(de->event_type))
		return NULL;
	const struct atf_detail_function_payload *p = ada_atf_detail_function(de, &stack);
	if (!p || p->function_id != f->function_id)
		return NULL;
	const uint64_t *x = ada_atf_detail_xmm(de); /* --detail-fp */
	if (x) {
		memcpy(xmm, x, ATF_DETAIL_XMM_WORDS * 8); /* unaligned in the file */
		*have_xmm = true;
	}
	return p;
}

static double cr_double(uint64_t raw)
{
	double d;
	memcpy(&d, &raw, sizeof(d));
	return d;
}

static json_t *cr_frame_json(struct rd_pid *rp, const struct ada_atf_thread *t,
                             const struct ada_frame *f)
{
	const struct ada_name *nm = ada_names_get(rp->names, f->function_id);
	uint64_t xmm[ATF_DETAIL_XMM_WORDS];
	bool have_xmm;
	const struct atf_detail_function_payload *p = cr_args(t, f, xmm, &have_xmm);
	json_t *o = json_object(), *args = json_null();
	char hex[24], name[8];

	json_object_set_new(o, "function", json_string(nm->name));
	json_object_set_new(o, "mangled", nm->mangled ? json_string(nm->mangled) : json_null());
	json_object_set_new(o, "module", nm->module ? json_string(nm->module) : json_null());
	json_object_set_new(o, "function_id", json_integer((json_int_t)f->function_id));
	json_object_set_new(o, "depth", json_integer(f->depth));
	json_object_set_new(o, "call_ns", json_integer((json_int_t)f->call_ns));
	if (p) {
		args = json_object();
		for (int i = 0; i < 6; i++) {
			snprintf(hex, sizeof(hex), "0x%" PRIx64, p->x_regs[i]);
			json_object_set_new(args, cr_regs[i], json_string(hex));
		}
		/* xmm0..7 as raw bits and as doubles (null when not finite). */
		for (uint32_t i = 0; have_xmm && i < ATF_DETAIL_XMM_WORDS; i++) {
			double d = cr_double(xmm[i]);
			snprintf(hex, sizeof(hex), "0x%" PRIx64, xmm[i]);
			snprintf(name, sizeof(name), "xmm%u", i);
			json_object_set_new(args, name,
			                    json_pack("{s:s,s:o}", "raw", hex, "double",
			                              isfinite(d) ? json_real(d) : json_null()));
		}
	}
	json_object_set_new(o, "args", args);
	return o;
}

static void cr_frame_text(struct rd_pid *rp, const struct ada_atf_thread *t,
                          const struct ada_frame *f, size_t n, uint64_t death)
{
	const struct ada_name *nm = ada_names_get(rp->names, f->function_id);
	uint64_t xmm[ATF_DETAIL_XMM_WORDS];
	bool have_xmm;
	const struct atf_detail_function_payload *p = cr_args(t, f, xmm, &have_xmm);
	const char *mod = nm->module ? strrchr(nm->module, '/') : NULL;
	char b[32];

	printf("  #%-3zu %s", n, nm->name);
	if (p) {
		printf(" (");
		for (int i = 0; i < 6; i++)
			printf("%s%s=0x%" PRIx64, i ? ", " : "", cr_regs[i], p->x_regs[i]);
		for (uint32_t i = 0; have_xmm && i < ATF_DETAIL_XMM_WORDS; i++)
			printf(", xmm%u=%.17g (0x%" PRIx64 ")", i, cr_double(xmm[i]), xmm[i]);
		printf(")");
	}
	printf("  [%s]", mod ? mod + 1 : nm->module ? nm->module : "?");
	if (death >= f->call_ns)
		printf("  called %s before\n", rd_fmt_ns(death - f->call_ns, b, sizeof(b)));
	else
		printf("\n");
}

/* One thread: walk it to the end without finishing, then read the stack. */
static int cr_thread(struct rd_pid *rp, size_t i, struct cr_death *d, json_t *threads, bool json)
{
	static const struct ada_frames_ops ops = {.marker = cr_marker};
	struct ada_atf_thread *t;
	struct ada_frames *w;
	uint64_t markers;
	int err = rd_thread_open(rp, i, &t);

	if (err || !t)
		return err;
	err = ada_frames_new(&ops, d, &w);
	if (err)
		goto out_thread;
	rd_thread_walk(t, w, 0, UINT64_MAX, false);
	markers = ada_frames_stats(w)->markers;
	if (markers && d->faulting_thread < 0)
		d->faulting_thread = t->thread;
	uint32_t tid = rd_thread_tid(rp, t);
	bool faulting = d->faulting_thread == (int64_t)t->thread;
	size_t depth = ada_frames_depth(w),
	       shown = depth < CRASH_MAX_FRAMES ? depth : CRASH_MAX_FRAMES;
	uint64_t death = d->time_ns ? d->time_ns : ada_frames_stats(w)->last_ns;
	/* The faulting thread's frame #0 is the function holding the pc: the
	 * innermost open frame when that is it, else one of its own above the
	 * open frames (a function not hooked, or a call not recorded). */
	struct cr_top top = {0};
	bool with_top = faulting && d->have_ctx, on_record = false;
	if (with_top) {
		cr_top_find(rp, d, &top);
		on_record = depth && top.nm &&
		            ada_frames_at(w, depth - 1)->function_id == top.at.function_id;
	}
	size_t first = with_top && !on_record ? 1 : 0; /* the open frames' first number */
	if (json) {
		json_t *o = json_object(), *frames = json_array();
		json_object_set_new(o, "thread", json_integer(t->thread));
		json_object_set_new(o, "tid", json_integer(tid));
		json_object_set_new(o, "faulting", json_boolean(faulting));
		if (with_top && !on_record) {
			json_t *f0 = json_object();
			cr_top_json(f0, d, &top, false);
			json_array_append_new(frames, f0);
		}
		for (size_t k = 0; k < shown; k++) {
			json_t *f = cr_frame_json(rp, t, ada_frames_at(w, depth - 1 - k));
			if (k == 0 && on_record)
				cr_top_json(f, d, &top, true);
			json_array_append_new(frames, f);
		}
		json_object_set_new(o, "frames", frames);
		json_object_set_new(o, "frames_omitted", json_integer((json_int_t)(depth - shown)));
		json_array_append_new(threads, o);
	} else {
		printf("Thread %" PRIu32 " (tid %" PRIu32 ")%s:%s\n", t->thread, tid,
		       faulting ? ", the faulting thread" : "",
		       depth || with_top ? "" : " no open frames");
		if (with_top && !on_record)
			cr_top_text(d, &top, false);
		for (size_t k = 0; k < shown; k++) {
			cr_frame_text(rp, t, ada_frames_at(w, depth - 1 - k), k + first, death);
			if (k == 0 && on_record)
				cr_top_text(d, &top, true);
		}
		if (depth > shown)
			printf("  ... %zu outer frames not shown\n", depth - shown);
	}
	ada_frames_free(w);
out_thread:
	rd_thread_close(rp, t);
	return err;
}

static const char *cr_signame(int sig, char *buf, size_t len)
{
	const char *s = sig > 0 ? sigabbrev_np(sig) : NULL;
	snprintf(buf, len, "SIG%s", s ? s : "?");
	return buf;
}

/* The first thread (index) of the image the process died in: the threads
 * before it ran programs it replaced by exec (read.h), dead by then. */
static size_t cr_first_of_last(const struct rd_pid *rp)
{
	size_t i = rp->p->nthreads;

	while (i && rp->image[i - 1] == rp->nimages - 1)
		i--;
	return i;
}

static void cr_header_text(struct rd_pid *rp, const struct cr_death *d)
{
	char prog[256], sn[32];

	printf("== %s (pid %" PRIu32 "): killed by signal %d (%s)",
	       rd_program(rp, prog, sizeof(prog)), rp->p->pid, d->sig,
	       cr_signame(d->sig, sn, sizeof(sn)));
	if (d->have_addr)
		printf(", fault address 0x%" PRIx64, d->addr);
	printf("\n");
	if (d->faulting_thread >= 0)
		printf("faulting thread: %" PRId64 " (tid %" PRIu32 ")%s\n", d->faulting_thread,
		       d->faulting_tid,
		       rp->nimages > 1 && d->faulting_tid == rp->p->pid
		           ? ", the main thread of the program it exec'd last"
		           : "");
	else
		printf("faulting thread: unknown%s%s\n", d->note ? ": " : "",
		       d->note ? d->note : "");
	size_t first = cr_first_of_last(rp);
	if (first == 1)
		printf("program images: %" PRIu32 " (exec); the stacks are the last one's, "
		       "thread %" PRIu32 " ran the earlier one\n",
		       rp->nimages, rp->p->thread_ids[0]);
	else if (first > 1)
		printf("program images: %" PRIu32 " (exec); the stacks are the last one's, "
		       "threads %" PRIu32 "-%" PRIu32 " ran the earlier ones\n",
		       rp->nimages, rp->p->thread_ids[0], rp->p->thread_ids[first - 1]);
}

static json_t *cr_header_json(struct rd_pid *rp, const struct cr_death *d)
{
	json_t *o = json_object();
	char prog[256], sn[32], a[24];

	json_object_set_new(o, "pid", json_integer(rp->p->pid));
	json_object_set_new(o, "program", json_string(rd_program(rp, prog, sizeof(prog))));
	json_object_set_new(o, "signal", json_integer(d->sig));
	json_object_set_new(o, "signal_name", json_string(cr_signame(d->sig, sn, sizeof(sn))));
	snprintf(a, sizeof(a), "0x%" PRIx64, d->addr);
	json_object_set_new(o, "fault_address", d->have_addr ? json_string(a) : json_null());
	json_object_set_new(o, "faulting_thread",
	                    d->faulting_thread >= 0 ? json_integer(d->faulting_thread)
	                                            : json_null());
	json_object_set_new(o, "faulting_tid",
	                    d->faulting_tid ? json_integer(d->faulting_tid) : json_null());
	json_object_set_new(o, "caught", json_boolean(d->caught));
	json_t *earlier = json_array();
	for (size_t i = 0; i < cr_first_of_last(rp); i++)
		json_array_append_new(earlier, json_integer(rp->p->thread_ids[i]));
	json_object_set_new(o, "images", json_integer(rp->nimages));
	json_object_set_new(o, "earlier_image_threads", earlier);
	return o;
}

/* The faulting thread first (as gdb starts with it), then the others of
 * the program image it died in. */
static int cr_threads(struct rd_pid *rp, struct cr_death *d, json_t *threads, bool json)
{
	int err = 0;
	size_t first = cr_first_of_last(rp);

	for (size_t i = first; i < rp->p->nthreads && !err; i++)
		if ((int64_t)rp->p->thread_ids[i] == d->faulting_thread)
			err = cr_thread(rp, i, d, threads, json);
	for (size_t i = first; i < rp->p->nthreads && !err; i++)
		if ((int64_t)rp->p->thread_ids[i] != d->faulting_thread)
			err = cr_thread(rp, i, d, threads, json);
	return err;
}

static int cr_pid(const struct cr_opts *o, const struct ada_atf_pid *p, json_t *procs,
                  uint32_t *damaged, uint32_t *crashed)
{
	struct cr_death d = {.faulting_thread = -1};
	struct rd_pid rp;
	json_t *threads = json_array(), *head = NULL;
	int err = rd_pid_open(p, o->dm, &rp);

	if (err)
		return err;
	if (rp.manifest)
		cr_from_manifest(rp.manifest, &d);
	if (!d.abnormal) {
		/* No manifest verdict: a fatal-signal marker in the files decides. */
		for (size_t i = 0; i < p->nthreads && !err && !d.abnormal; i++) {
			json_t *scratch = json_array();
			err = cr_thread(&rp, i, &d, scratch, true);
			json_decref(scratch);
		}
	}
	if (!err && d.abnormal) {
		(*crashed)++;
		if (o->json) {
			head = cr_header_json(&rp, &d);
			err = cr_threads(&rp, &d, threads, true);
			json_object_set(head, "threads", threads);
			json_array_append_new(procs, head);
		} else {
			cr_header_text(&rp, &d);
			err = cr_threads(&rp, &d, threads, false);
		}
	}
	json_decref(threads);
	*damaged += rp.damaged;
	rd_pid_close(&rp);
	return err;
}

static void cr_usage(FILE *f)
{
	fprintf(f, "usage: ada crash [--json] [--demangle full|simple|no] DIR\n"
	           "  For each process under DIR that died of a signal: the signal, the faulting\n"
	           "  thread and address, and every thread's call stack at the moment of death,\n"
	           "  innermost first, with the arguments where a detail window holds them.\n");
}

static int cr_args_parse(int argc, char **argv, struct cr_opts *o, const char **dir)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"demangle", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j') {
			o->json = true;
		} else if (c == 'd' && !ada_demangle_parse(optarg, &o->dm)) {
			continue;
		} else if (c == 'd') {
			ada_log("bad value '%s' for --demangle: full, simple or no", optarg);
			return 2;
		} else if (c == 'h') {
			cr_usage(stdout);
			return 0;
		} else {
			cr_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		ada_log("crash takes one directory; run `ada crash --help`");
		return 2;
	}
	*dir = argv[optind];
	return -1;
}

int cmd_crash(int argc, char **argv)
{
	struct cr_opts o = {0};
	const char *dir = NULL;
	uint32_t damaged = 0, crashed = 0;
	int rc = cr_args_parse(argc, argv, &o, &dir), err = 0;

	if (rc >= 0)
		return rc;
	struct ada_atf_tree *tree = cmd_open_tree(dir);
	if (!tree)
		return 2;
	json_t *procs = json_array();
	for (size_t i = 0; i < tree->npids && !err; i++)
		err = cr_pid(&o, &tree->pids[i], procs, &damaged, &crashed);
	if (!err && o.json) {
		json_t *doc = json_pack("{sO}", "processes", procs);
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	} else if (!err && !crashed) {
		printf("%s: no process died of a signal (%zu process%s)\n", dir, tree->npids,
		       tree->npids == 1 ? "" : "es");
	}
	json_decref(procs);
	ada_atf_tree_free(tree);
	if (err) {
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	return damaged ? 1 : 0;
}
