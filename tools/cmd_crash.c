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
#define CRASH_MAX_OTHERS 64  /* other threads' pcs read from the manifest */

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
	uint8_t arch; /* the manifest's (ATF_ARCH_*): the registers' names */
	/* The other threads where the crash handler found them (manifest
	 * crash.other_threads): others_read is how ("proc", "seccomp", ...),
	 * NULL when the manifest has none. */
	const char *others_read;
	size_t n_others;
	uint64_t others_omitted;
	struct cr_other {
		uint32_t tid;
		bool running, shown;
		int64_t nr; /* -1: blocked outside a system call */
		uint64_t pc, sp;
	} others[CRASH_MAX_OTHERS];
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

static uint64_t cr_hex(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && !strncmp(s, "0x", 2) ? strtoull(s + 2, NULL, 16) : 0;
}

/* crash.other_threads: each entry checked (a tid, a state), the rest
 * skipped. */
static void cr_others_from_manifest(const json_t *c, struct cr_death *d)
{
	const json_t *o = json_object_get(c, "other_threads"), *e;
	size_t i;

	d->others_read = json_string_value(json_object_get(o, "read"));
	if (json_is_integer(json_object_get(o, "omitted")))
		d->others_omitted = (uint64_t)json_integer_value(json_object_get(o, "omitted"));
	json_array_foreach(json_object_get(o, "threads"), i, e)
	{
		const char *st = json_string_value(json_object_get(e, "state"));
		json_int_t tid = json_integer_value(json_object_get(e, "tid"));
		if (!st || tid <= 0 || tid > UINT32_MAX || d->n_others == CRASH_MAX_OTHERS)
			continue;
		struct cr_other *x = &d->others[d->n_others++];
		x->tid = (uint32_t)tid;
		x->running = !strcmp(st, "running");
		x->nr = json_is_integer(json_object_get(e, "syscall"))
		            ? json_integer_value(json_object_get(e, "syscall"))
		            : -1;
		x->pc = cr_hex(json_object_get(e, "pc"));
		x->sp = cr_hex(json_object_get(e, "sp"));
		x->running = x->running || !x->pc;
	}
}

static void cr_from_manifest(const json_t *m, struct cr_death *d)
{
	const json_t *c = json_object_get(m, "crash"), *e = json_object_get(m, "exit");
	const char *a;

	d->faulting_thread = -1;
	a = json_string_value(json_object_get(m, "arch"));
	d->arch = a && !strcmp(a, "arm64") ? ATF_ARCH_ARM64 : ATF_ARCH_X86_64;
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
	cr_others_from_manifest(c, d);
	const json_t *regs = json_object_get(json_object_get(c, "context"), "registers");
	for (uint32_t i = 0; json_is_object(regs) && i < ATF_SIGNAL_NREGS; i++) {
		const char *v = json_string_value(
		    json_object_get(regs, ada_atf_signal_reg_name_for(d->arch, i)));
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

static void cr_pc_find(struct rd_pid *rp, uint64_t pc, struct cr_top *top)
{
	top->found = rp->syms && ada_symtab_by_addr(rp->syms, pc, &top->at);
	top->nm = top->found && top->at.function_id ? ada_names_get(rp->names, top->at.function_id)
	                                            : NULL;
}

static void cr_top_find(struct rd_pid *rp, const struct cr_death *d, struct cr_top *top)
{
	cr_pc_find(rp, d->regs[ATF_SIGNAL_REG_PC], top);
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
		       ada_atf_signal_reg_name_for(d->arch, i), d->regs[i]);
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
		json_object_set_new(regs, ada_atf_signal_reg_name_for(d->arch, i),
		                    json_string(hex));
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

/* ada's waits for ring space inside an open frame so far (its wait_ns
 * holds the walker's total at its call until it ends). */
static uint64_t cr_waited(const struct ada_frames *w, const struct ada_frame *f)
{
	uint64_t now = ada_frames_stats(w)->wait_ns;
	return now > f->wait_ns ? now - f->wait_ns : 0;
}

static json_t *cr_frame_json(struct rd_pid *rp, const struct ada_atf_thread *t,
                             const struct ada_frame *f, uint64_t waited)
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
	json_object_set_new(o, "ada_wait_ns", json_integer((json_int_t)waited));
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

/* "called X before" is the program's time since the call: without ada's
 * waits (waited) in between. */
static void cr_frame_text(struct rd_pid *rp, const struct ada_atf_thread *t,
                          const struct ada_frame *f, size_t n, uint64_t death, uint64_t waited)
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
	if (death >= f->call_ns) {
		uint64_t d = death - f->call_ns;
		printf("  called %s before", rd_fmt_ns(d > waited ? d - waited : 0, b, sizeof(b)));
		if (waited)
			printf(" (and ada waited %s)", rd_fmt_ns(waited, b, sizeof(b)));
	}
	printf("\n");
}

static struct cr_other *cr_other_of(struct cr_death *d, uint32_t tid)
{
	for (size_t i = 0; i < d->n_others; i++)
		if (d->others[i].tid == tid)
			return &d->others[i];
	return NULL;
}

static const char *cr_other_state(const struct cr_other *x, char *buf, size_t len)
{
	if (x->running)
		snprintf(buf, len, "running at the crash (its pc was not read)");
	else if (x->nr >= 0)
		snprintf(buf, len, "blocked in system call %" PRId64, x->nr);
	else
		snprintf(buf, len, "blocked (not in a system call)");
	return buf;
}

/* Another thread's frame #0 (on_record false: a function of its own
 * above the open frames) or its pc under the innermost open frame. */
static void cr_other_text(const struct cr_other *x, const struct cr_top *top, bool on_record)
{
	char st[64];

	if (x->running) {
		printf("       %s\n", cr_other_state(x, st, sizeof(st)));
		return;
	}
	if (!on_record) {
		if (top->nm)
			printf("  #0   %s+0x%" PRIx64, top->nm->name, top->at.offset);
		else if (top->found)
			printf("  #0   %s+0x%" PRIx64, cr_base(top->at.module), top->at.offset);
		else
			printf("  #0   0x%" PRIx64, x->pc);
		printf("  [%s]  no frame on record\n", top->found ? cr_base(top->at.module) : "?");
	}
	printf("       pc 0x%" PRIx64, x->pc);
	if (top->nm)
		printf(" (%s+0x%" PRIx64 ")", top->nm->name, top->at.offset);
	printf(", sp 0x%" PRIx64 ", %s\n", x->sp, cr_other_state(x, st, sizeof(st)));
}

static void cr_other_json(json_t *o, const struct cr_other *x, const struct cr_top *top,
                          bool on_record)
{
	json_t *a = json_object();
	char hex[24];

	json_object_set_new(a, "state",
	                    json_string(x->running  ? "running"
	                                : x->nr < 0 ? "blocked"
	                                            : "syscall"));
	json_object_set_new(a, "syscall",
	                    x->nr >= 0 && !x->running ? json_integer(x->nr) : json_null());
	snprintf(hex, sizeof(hex), "0x%" PRIx64, x->pc);
	json_object_set_new(a, "pc", x->running ? json_null() : json_string(hex));
	snprintf(hex, sizeof(hex), "0x%" PRIx64, x->sp);
	json_object_set_new(a, "sp", x->running ? json_null() : json_string(hex));
	json_object_set_new(a, "function", top->nm ? json_string(top->nm->name) : json_null());
	json_object_set_new(
	    a, "module", top->found && top->at.module ? json_string(top->at.module) : json_null());
	json_object_set_new(a, "offset",
	                    top->found ? json_integer((json_int_t)top->at.offset) : json_null());
	json_object_set_new(a, "on_record", json_boolean(on_record));
	json_object_set_new(o, "at_crash", a);
}

/* Where a thread was at the crash: the faulting thread's pc from the
 * signal context, another's from crash.other_threads (*ox). Returns
 * whether there is a pc; *on_record: the innermost open frame holds it. */
static bool cr_thread_top(struct rd_pid *rp, struct cr_death *d, struct ada_frames *w,
                          bool faulting, uint32_t tid, struct cr_top *top, struct cr_other **ox,
                          bool *on_record)
{
	size_t depth = ada_frames_depth(w);

	*ox = faulting ? NULL : cr_other_of(d, tid);
	*on_record = false;
	if (*ox)
		(*ox)->shown = true;
	if (faulting && d->have_ctx)
		cr_top_find(rp, d, top);
	else if (*ox && !(*ox)->running)
		cr_pc_find(rp, (*ox)->pc, top);
	else
		return false;
	*on_record =
	    depth && top->nm && ada_frames_at(w, depth - 1)->function_id == top->at.function_id;
	return true;
}

/* The thread's stack as JSON: frame #0 of its own first when the pc is
 * in no open frame. */
static void cr_thread_json(struct rd_pid *rp, const struct ada_atf_thread *t,
                           const struct cr_death *d, struct ada_frames *w, json_t *o,
                           const struct cr_top *top, const struct cr_other *ox, bool with_top,
                           bool on_record)
{
	json_t *frames = json_array();
	size_t depth = ada_frames_depth(w),
	       shown = depth < CRASH_MAX_FRAMES ? depth : CRASH_MAX_FRAMES;

	if (ox)
		cr_other_json(o, ox, top, on_record);
	if (with_top && !on_record && !ox) {
		json_t *f0 = json_object();
		cr_top_json(f0, d, top, false);
		json_array_append_new(frames, f0);
	}
	for (size_t k = 0; k < shown; k++) {
		const struct ada_frame *fr = ada_frames_at(w, depth - 1 - k);
		json_t *f = cr_frame_json(rp, t, fr, cr_waited(w, fr));
		if (k == 0 && on_record && !ox)
			cr_top_json(f, d, top, true);
		json_array_append_new(frames, f);
	}
	json_object_set_new(o, "frames", frames);
	json_object_set_new(o, "frames_omitted", json_integer((json_int_t)(depth - shown)));
}

static void cr_thread_text(struct rd_pid *rp, const struct ada_atf_thread *t,
                           const struct cr_death *d, struct ada_frames *w, const struct cr_top *top,
                           const struct cr_other *ox, bool with_top, bool on_record, uint64_t death)
{
	size_t depth = ada_frames_depth(w),
	       shown = depth < CRASH_MAX_FRAMES ? depth : CRASH_MAX_FRAMES;
	size_t first = with_top && !on_record ? 1 : 0; /* the open frames' first number */

	if (ox && (!with_top || !on_record))
		cr_other_text(ox, top, false);
	else if (with_top && !on_record)
		cr_top_text(d, top, false);
	for (size_t k = 0; k < shown; k++) {
		const struct ada_frame *fr = ada_frames_at(w, depth - 1 - k);
		cr_frame_text(rp, t, fr, k + first, death, cr_waited(w, fr));
		if (k == 0 && on_record && ox)
			cr_other_text(ox, top, true);
		else if (k == 0 && on_record)
			cr_top_text(d, top, true);
	}
	if (depth > shown)
		printf("  ... %zu outer frames not shown\n", depth - shown);
}

/* One thread: walk it to the end without finishing, then read the stack. */
static int cr_thread(struct rd_pid *rp, size_t i, struct cr_death *d, json_t *threads, bool json)
{
	static const struct ada_frames_ops ops = {.marker = cr_marker};
	struct ada_atf_thread *t;
	struct ada_frames *w;
	int err = rd_thread_open(rp, i, &t);

	if (err || !t)
		return err;
	err = ada_frames_new(&ops, d, &w);
	if (err)
		goto out_thread;
	rd_thread_walk(t, w, 0, UINT64_MAX, false);
	if (ada_frames_stats(w)->markers && d->faulting_thread < 0)
		d->faulting_thread = t->thread;
	uint32_t tid = rd_thread_tid(rp, t);
	bool faulting = d->faulting_thread == (int64_t)t->thread;
	uint64_t death = d->time_ns ? d->time_ns : ada_frames_stats(w)->last_ns;
	/* Frame #0 is the function holding the pc: the innermost open frame
	 * when that is it, else one of its own above the open frames (a
	 * function not hooked, or a call not recorded). */
	struct cr_top top = {0};
	struct cr_other *ox;
	bool on_record, with_top = cr_thread_top(rp, d, w, faulting, tid, &top, &ox, &on_record);
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "thread", json_integer(t->thread));
		json_object_set_new(o, "tid", json_integer(tid));
		json_object_set_new(o, "faulting", json_boolean(faulting));
		cr_thread_json(rp, t, d, w, o, &top, ox, with_top, on_record);
		json_array_append_new(threads, o);
	} else {
		printf("Thread %" PRIu32 " (tid %" PRIu32 ")%s:%s\n", t->thread, tid,
		       faulting ? ", the faulting thread" : "",
		       ada_frames_depth(w) || with_top || ox ? "" : " no open frames");
		cr_thread_text(rp, t, d, w, &top, ox, with_top, on_record, death);
	}
	ada_frames_free(w);
out_thread:
	rd_thread_close(rp, t);
	return err;
}

/* The threads the crash handler found that no thread file holds (never
 * traced: no call of theirs was recorded, or the agent's own). */
static void cr_untraced(struct rd_pid *rp, struct cr_death *d, json_t *threads, bool json)
{
	for (size_t i = 0; i < d->n_others; i++) {
		struct cr_other *x = &d->others[i];
		struct cr_top top = {0};
		if (x->shown)
			continue;
		if (!x->running)
			cr_pc_find(rp, x->pc, &top);
		if (json) {
			json_t *o = json_object();
			json_object_set_new(o, "thread", json_null());
			json_object_set_new(o, "tid", json_integer(x->tid));
			json_object_set_new(o, "faulting", json_false());
			cr_other_json(o, x, &top, false);
			json_object_set_new(o, "frames", json_array());
			json_object_set_new(o, "frames_omitted", json_integer(0));
			json_array_append_new(threads, o);
		} else {
			printf("Thread - (tid %" PRIu32 "): not traced\n", x->tid);
			cr_other_text(x, &top, false);
		}
	}
	if (d->others_omitted && !json)
		printf("(%" PRIu64 " more threads: the crash handler reads at most %d)\n",
		       d->others_omitted, CRASH_MAX_OTHERS);
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
	if (!err)
		cr_untraced(rp, d, threads, json);
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
		} else if (c == 'd') {
			if (rd_demangle_opt(optarg, &o->dm))
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
