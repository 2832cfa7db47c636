/*
 * ada dump DIR: prints the events of every pid_N at or under DIR, as text
 * (a call tree: one line per event indented by depth, durations on the
 * returns, detail records under their call) or as JSON lines (--format
 * jsonl; keys in docs/dump.md, which other tools rely on). Per thread in
 * file order, or all threads of a pid merged by timestamp (--merge).
 * Filters: one thread (--thread), a time range (--from/--to, in ns or as
 * offsets from the recording's start like +1.5s), a detail window
 * (--window N: its time range), the calls of functions matching a glob and
 * everything under them (--function), a depth limit (--depth; relative to
 * the matched call with --function). Retention generations are visited
 * oldest first. Damaged files are read as far as they are whole, with a
 * warning (tools/read.c).
 *
 * Each thread's events also go through a frame walker (src/analyze), which
 * gives a return its duration; it keeps only the open frames.
 *
 * Speed: lines are formatted by hand into a buffer and written with one
 * fwrite into a 1 MiB stdio buffer; no JSON objects are built per event.
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

#include "analyze.h"
#include "atf.h"
#include "cmd.h"
#include "manifest.h"
#include "filter.h"
#include "read.h"
#include "symbols.h"

struct dump_opts {
	bool jsonl, merge;
	enum ada_demangle dm;
	struct rd_filter f;
	enum rd_time_form time; /* --time */
};

/* Per-thread state: the frame walker and the --function filter. */
struct dump_thr {
	struct ada_frames *w;
	struct rd_filter_calls calls; /* --function */
	bool have_dur;                /* the event just pushed ended a frame: */
	uint64_t dur;                 /* its duration (without ada's waits) */
	uint64_t dur_wait;            /* ada's waits inside it */
	bool have_wait;               /* the event just pushed ended an ada wait: */
	uint64_t wait_len;            /* its length */
	uint64_t end_seq;             /* and where it was */
	uint32_t end_src;
};

/* Per-pid state while dumping. */
struct dump_pid {
	const struct dump_opts *o;
	struct rd_pid rp;
	int64_t pid; /* printed as "pid" when >= 0 (several pid dirs) */
	uint64_t from, to;
	uint32_t thread_seen;
};

/* What each merge source / thread walk needs to print one event. */
struct dump_src {
	uint32_t thread;
	uint32_t gen_index;
	const struct ada_atf_gen *gen;
	struct dump_thr *st;
};

/* ------------------------------------------------------- line buffer */

/* One output line. Variable parts (names, stack hex) stop LN_RESERVE
 * bytes before the end, so the fixed keys after them always fit and every
 * line stays valid JSON, however long a symbol name is. */
#define LN_RESERVE 1024
#define LN_STR_MAX 4096 /* input bytes kept of one string (name, path) */
struct line {
	char b[1 << 16];
	size_t n;
};

static void ln_str(struct line *l, const char *s)
{
	size_t k = strlen(s);
	if (k > sizeof(l->b) - l->n - 1)
		k = sizeof(l->b) - l->n - 1;
	memcpy(l->b + l->n, s, k);
	l->n += k;
}

static void ln_u64(struct line *l, uint64_t v)
{
	char t[24];
	int i = sizeof(t);
	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if ((size_t)(sizeof(t) - i) < sizeof(l->b) - l->n) {
		memcpy(l->b + l->n, t + i, sizeof(t) - i);
		l->n += sizeof(t) - i;
	}
}

static void ln_hex(struct line *l, uint64_t v)
{
	char t[24];
	snprintf(t, sizeof(t), "\"0x%" PRIx64 "\"", v);
	ln_str(l, t);
}

/* A JSON string (quoted, escaped), or null. Bounded by the buffer. */
static void ln_jstr(struct line *l, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	if (!s) {
		ln_str(l, "null");
		return;
	}
	ln_str(l, "\"");
	for (size_t k = 0; s[k] && k < LN_STR_MAX && l->n + LN_RESERVE < sizeof(l->b); k++) {
		unsigned char c = (unsigned char)s[k];
		if (c == '"' || c == '\\') {
			l->b[l->n++] = '\\';
			l->b[l->n++] = (char)c;
		} else if (c < 0x20) {
			memcpy(l->b + l->n, "\\u00", 4);
			l->b[l->n + 4] = hex[c >> 4];
			l->b[l->n + 5] = hex[c & 15];
			l->n += 6;
		} else {
			l->b[l->n++] = (char)c;
		}
	}
	ln_str(l, "\"");
}

/* ------------------------------------------------------------ detail */

static const char *const x86_regs[8] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax", "rdx_ret"};
static const char *const arm_regs[8] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};

/* The registers a detail event holds, by name (docs/format.md): on x86_64
 * a call has rdi..r9 and rax (x_regs[0..6]), a return rax and rdx
 * (x_regs[6..7]); arm64 and other types show all eight. */
struct reg_view {
	int first, count;
	const char *const *names;
};

static struct reg_view detail_regs(const struct ada_atf_detail *d,
                                   const struct atf_detail_event_header *e)
{
	static const char *const x86_ret[8] = {"", "", "", "", "", "", "rax", "rdx"};
	if (ada_atf_detail_header(d)->arch == ATF_ARCH_ARM64)
		return (struct reg_view){0, 8, arm_regs};
	if (ada_atf_detail_is_call(e->event_type))
		return (struct reg_view){0, 7, x86_regs};
	if (e->event_type == ATF_DETAIL_FUNCTION_RETURN ||
	    e->event_type == ATF_DETAIL_FUNCTION_RETURN_FP)
		return (struct reg_view){6, 2, x86_ret};
	return (struct reg_view){0, 8, x86_regs};
}

static const char *detail_type_name(uint16_t t)
{
	return ada_atf_detail_is_call(t)                                               ? "call"
	       : t == ATF_DETAIL_FUNCTION_RETURN || t == ATF_DETAIL_FUNCTION_RETURN_FP ? "return"
	       : t == ATF_DETAIL_SIGNAL_CONTEXT ? "signal_context"
	                                        : NULL;
}

/* The vector registers of a _FP record (docs/format.md): a call has
 * xmm0..7, a return xmm0 and xmm1. *n is how many; NULL when none. */
static const uint64_t *detail_xmm(const struct atf_detail_event_header *e, uint64_t out[8],
                                  uint32_t *n)
{
	const uint64_t *x = ada_atf_detail_xmm(e);
	if (!x)
		return NULL;
	memcpy(out, x, ATF_DETAIL_XMM_WORDS * 8); /* unaligned in the file */
	*n = e->event_type == ATF_DETAIL_FUNCTION_CALL_FP ? ATF_DETAIL_XMM_WORDS : 2;
	return out;
}

static double detail_double(uint64_t raw)
{
	double d;
	memcpy(&d, &raw, sizeof(d));
	return d;
}

/* jsonl: "xmm": {"xmm0": {"raw": "0x…", "double": D}, …}; a double that
 * JSON cannot spell (NaN, infinities) is null, the raw bits say it. */
static void json_xmm(struct line *l, const struct atf_detail_event_header *e)
{
	uint64_t x[8];
	uint32_t n;
	char t[64];

	if (!detail_xmm(e, x, &n))
		return;
	ln_str(l, ",\"xmm\":{");
	for (uint32_t i = 0; i < n; i++) {
		double d = detail_double(x[i]);
		snprintf(t, sizeof(t), "%s\"xmm%u\":{\"raw\":", i ? "," : "", i);
		ln_str(l, t);
		ln_hex(l, x[i]);
		if (isfinite(d))
			snprintf(t, sizeof(t), ",\"double\":%.17g}", d);
		else
			snprintf(t, sizeof(t), ",\"double\":null}");
		ln_str(l, t);
	}
	ln_str(l, "}");
}

/* text: "| xmm0=1.5 (0x3ff8000000000000) …", one line under the registers. */
static void text_xmm(struct line *l, const struct atf_detail_event_header *e, uint32_t indent)
{
	uint64_t x[8];
	uint32_t n;
	char t[96];

	if (!detail_xmm(e, x, &n))
		return;
	snprintf(t, sizeof(t), "\n%*s|", 43 + 2 * indent, "");
	ln_str(l, t);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(t, sizeof(t), " xmm%u=%.17g (0x%" PRIx64 ")", i, detail_double(x[i]),
		         x[i]);
		ln_str(l, t);
	}
}

static void json_detail(struct line *l, const struct ada_atf_detail *d,
                        const struct atf_detail_event_header *e)
{
	const uint8_t *stack;
	const struct atf_detail_function_payload *p = ada_atf_detail_function(e, &stack);
	struct reg_view rv = detail_regs(d, e);
	static const char hex[] = "0123456789abcdef";

	ln_str(l, ",\"detail\":{\"type\":");
	if (detail_type_name(e->event_type))
		ln_jstr(l, detail_type_name(e->event_type));
	else
		ln_u64(l, e->event_type);
	ln_str(l, ",\"flags\":");
	ln_u64(l, e->flags);
	const struct atf_detail_signal_payload *sp = ada_atf_detail_signal(e);
	if (sp) {
		ln_str(l, ",\"signal\":");
		ln_u64(l, (uint64_t)(uint32_t)sp->signo);
		ln_str(l, ",\"si_code\":");
		ln_str(l, sp->si_code < 0 ? "-" : "");
		ln_u64(l,
		       sp->si_code < 0 ? (uint64_t) - (int64_t)sp->si_code : (uint64_t)sp->si_code);
		ln_str(l, ",\"fault_addr\":");
		ln_hex(l, sp->fault_addr);
		ln_str(l, ",\"pc\":");
		ln_hex(l, sp->regs[ATF_SIGNAL_REG_PC]);
		ln_str(l, ",\"regs\":{");
		for (uint32_t i = 0; i < ATF_SIGNAL_NREGS; i++) {
			ln_str(l, i ? ",\"" : "\"");
			ln_str(l, ada_atf_signal_reg_name_for(ada_atf_detail_header(d)->arch, i));
			ln_str(l, "\":");
			ln_hex(l, sp->regs[i]);
		}
		ln_str(l, "}");
	}
	if (p) {
		ln_str(l, ",\"regs\":{");
		for (int i = rv.first; i < rv.first + rv.count; i++) {
			ln_str(l, i > rv.first ? ",\"" : "\"");
			ln_str(l, rv.names[i]);
			ln_str(l, "\":");
			ln_hex(l, p->x_regs[i]);
		}
		ln_str(l, "}");
		json_xmm(l, e);
		ln_str(l, ",\"lr\":");
		ln_hex(l, p->lr);
		ln_str(l, ",\"fp\":");
		ln_hex(l, p->fp);
		ln_str(l, ",\"sp\":");
		ln_hex(l, p->sp);
		ln_str(l, ",\"stack_size\":");
		ln_u64(l, p->stack_size);
		ln_str(l, ",\"stack_hex\":\"");
		for (uint16_t i = 0; i < p->stack_size && l->n + LN_RESERVE < sizeof(l->b); i++) {
			l->b[l->n++] = hex[stack[i] >> 4];
			l->b[l->n++] = hex[stack[i] & 15];
		}
		ln_str(l, "\"");
	}
	ln_str(l, "}");
}

static const struct atf_detail_event_header *linked_detail(const struct ada_atf_gen *g,
                                                           const struct atf_index_event *ev)
{
	if (ev->detail_seq == ATF_NO_DETAIL || !g->detail)
		return NULL;
	return ada_atf_detail_get(g->detail, ev->detail_seq);
}

/* The fatal-signal marker's keys. */
static void json_signal(struct line *l, const struct atf_index_event *ev)
{
	uint32_t sig = ev->call_depth & ~ADA_SIGNAL_MARKER_FLAG;
	const char *abbrev = sig && sig < 65 ? sigabbrev_np((int)sig) : NULL;
	char name[32];

	snprintf(name, sizeof(name), "SIG%s", abbrev ? abbrev : "?");
	ln_str(l, ",\"signal\":");
	ln_u64(l, sig);
	ln_str(l, ",\"signal_name\":");
	ln_jstr(l, name);
	ln_str(l, ",\"fault_addr\":");
	ln_u64(l, ev->function_id);
}

/* The lengths the event ended: an ada wait's, a frame's and ada's waits
 * inside it. */
static void json_times(struct line *l, const struct dump_thr *st)
{
	if (st->have_wait) {
		ln_str(l, ",\"wait_ns\":");
		ln_u64(l, st->wait_len);
	}
	if (st->have_dur && st->dur_wait) {
		ln_str(l, ",\"ada_wait_ns\":");
		ln_u64(l, st->dur_wait);
	}
	if (st->have_dur) { /* last: older readers match the keys before it */
		ln_str(l, ",\"duration_ns\":");
		ln_u64(l, st->dur);
	}
}

/* The other threads at the crash (the manifest's crash.other_threads),
 * under the fatal-signal marker: each one's tid, state and the function
 * holding its pc (docs/reading.md). */
static void others_one(struct dump_pid *dp, const json_t *e, struct line *l, bool json)
{
	const char *st = json_string_value(json_object_get(e, "state"));
	const char *pc = json_string_value(json_object_get(e, "pc"));
	const json_t *nr = json_object_get(e, "syscall");
	struct ada_symtab_addr at;
	const char *fn = NULL;
	char t[160];

	if (pc && !strncmp(pc, "0x", 2) && dp->rp.syms &&
	    ada_symtab_by_addr(dp->rp.syms, strtoull(pc + 2, NULL, 16), &at))
		fn = at.function_id ? ada_names_get(dp->rp.names, at.function_id)->name : NULL;
	if (json) {
		snprintf(t, sizeof(t), "{\"tid\":%" JSON_INTEGER_FORMAT ",\"state\":",
		         json_integer_value(json_object_get(e, "tid")));
		ln_str(l, t);
		ln_jstr(l, st);
		ln_str(l, ",\"syscall\":");
		ln_str(l, json_is_integer(nr) ? "" : "null");
		if (json_is_integer(nr))
			ln_u64(l, (uint64_t)json_integer_value(nr));
		ln_str(l, ",\"pc\":");
		ln_jstr(l, pc);
		ln_str(l, ",\"function\":");
		ln_jstr(l, fn);
		ln_str(l, ",\"offset\":");
		ln_str(l, fn ? "" : "null");
		if (fn)
			ln_u64(l, at.offset);
		ln_str(l, "}");
		return;
	}
	snprintf(t, sizeof(t), "\n%43s| thread tid %" JSON_INTEGER_FORMAT " at the crash: %s", "",
	         json_integer_value(json_object_get(e, "tid")), st ? st : "?");
	ln_str(l, t);
	if (json_is_integer(nr)) {
		snprintf(t, sizeof(t), " %" JSON_INTEGER_FORMAT, json_integer_value(nr));
		ln_str(l, t);
	}
	if (pc) {
		ln_str(l, ", pc ");
		ln_str(l, pc);
	}
	if (fn) {
		snprintf(t, sizeof(t), " (%.100s+0x%" PRIx64 ")", fn, at.offset);
		ln_str(l, t);
	}
}

static void others_emit(struct dump_pid *dp, struct line *l, bool json)
{
	const json_t *o =
	    json_object_get(json_object_get(dp->rp.manifest, "crash"), "other_threads");
	const json_t *a = json_object_get(o, "threads"), *e;
	size_t i;

	if (!json_is_array(a))
		return;
	if (json)
		ln_str(l, ",\"other_threads\":[");
	json_array_foreach(a, i, e)
	{
		if (json && i)
			ln_str(l, ",");
		others_one(dp, e, l, json);
	}
	if (json)
		ln_str(l, "]");
}

/* jsonl: one object per event, keys in docs/dump.md's order. */
static void json_event(struct dump_pid *dp, const struct dump_src *s, uint64_t seq,
                       const struct atf_index_event *ev, struct line *l)
{
	const char *kind = ada_atf_kind_name(ev->event_kind);
	const struct atf_detail_event_header *de = linked_detail(s->gen, ev);
	const struct ada_name *nm = ada_names_get(dp->rp.names, ev->function_id);
	/* The fatal-signal marker (docs/format.md) is no frame: its kind is
	 * "signal" and its depth null, so a reader pairing calls by depth
	 * skips it; the signal is in "signal" and "signal_name". */
	bool wait = ada_wait_marker(ev->event_kind, ev->call_depth);
	bool marker = !wait && ev->event_kind == ATF_EVENT_EXCEPTION &&
	              (ev->call_depth & ADA_SIGNAL_MARKER_FLAG);

	ln_str(l, "{");
	if (dp->pid >= 0) {
		ln_str(l, "\"pid\":");
		ln_u64(l, (uint64_t)dp->pid);
		ln_str(l, ",");
	}
	ln_str(l, "\"ts\":");
	ln_u64(l, ev->timestamp_ns);
	if (dp->rp.wall.realtime_ns) {
		ln_str(l, ",\"wall_ns\":");
		ln_u64(l, ada_wall_from_boottime(&dp->rp.wall, ev->timestamp_ns));
	}
	ln_str(l, ",\"tid\":");
	ln_u64(l, ev->thread_id);
	ln_str(l, ",\"thread\":");
	ln_u64(l, s->thread);
	ln_str(l, ",\"kind\":");
	if (wait)
		ln_jstr(l, ev->call_depth == ADA_WAIT_MARKER_BEGIN ? "ada_wait_begin"
		                                                   : "ada_wait_end");
	else if (kind)
		ln_jstr(l, marker ? "signal" : kind);
	else
		ln_u64(l, ev->event_kind);
	ln_str(l, ",\"depth\":");
	if (marker || wait)
		ln_str(l, "null");
	else
		ln_u64(l, ev->call_depth);
	ln_str(l, ",\"function_id\":");
	ln_u64(l, ev->function_id);
	ln_str(l, ",\"function\":");
	ln_jstr(l, nm->known ? nm->name : NULL);
	if (nm->known) {
		ln_str(l, ",\"mangled\":");
		ln_jstr(l, nm->mangled);
	}
	ln_str(l, ",\"module\":");
	ln_jstr(l, nm->module);
	ln_str(l, ",\"index_seq\":");
	ln_u64(l, seq);
	if (s->gen->generation != ADA_ATF_CURRENT_GEN) {
		ln_str(l, ",\"generation\":");
		ln_u64(l, s->gen->generation);
	}
	ln_str(l, ",\"detail_seq\":");
	if (ev->detail_seq == ATF_NO_DETAIL)
		ln_str(l, "null");
	else
		ln_u64(l, ev->detail_seq);
	if (de)
		json_detail(l, s->gen->detail, de);
	if (marker) {
		json_signal(l, ev);
		others_emit(dp, l, true);
	}
	json_times(l, s->st);
	ln_str(l, "}\n");
}

/* A signal context record (docs/format.md): the pc, then every register,
 * six a line, under the marker's columns (the marker has no depth). */
static void text_signal(struct line *l, const struct atf_detail_event_header *e, uint8_t arch)
{
	const struct atf_detail_signal_payload *sp = ada_atf_detail_signal(e);
	char t[96];

	if (!sp)
		return;
	snprintf(t, sizeof(t), "\n%43s| signal context: pc=0x%" PRIx64, "",
	         sp->regs[ATF_SIGNAL_REG_PC]);
	ln_str(l, t);
	for (uint32_t i = 0; i < ATF_SIGNAL_NREGS; i++) {
		if (i % 6 == 0) {
			snprintf(t, sizeof(t), "\n%43s|", "");
			ln_str(l, t);
		}
		snprintf(t, sizeof(t), " %s=0x%" PRIx64, ada_atf_signal_reg_name_for(arch, i),
		         sp->regs[i]);
		ln_str(l, t);
	}
}

/* The detail record under its event, indented to it: registers by name,
 * then the stack snapshot 16 bytes a line, offsets from sp. */
static void text_detail(struct line *l, const struct ada_atf_detail *d,
                        const struct atf_detail_event_header *e, uint32_t indent)
{
	const uint8_t *stack;
	const struct atf_detail_function_payload *p = ada_atf_detail_function(e, &stack);
	struct reg_view rv = detail_regs(d, e);
	char t[96];

	if (!p) {
		text_signal(l, e, ada_atf_detail_header(d)->arch);
		return;
	}
	snprintf(t, sizeof(t), "\n%*s| ", 43 + 2 * indent, ""); /* under the name */
	ln_str(l, t);
	for (int i = rv.first; i < rv.first + rv.count; i++) {
		snprintf(t, sizeof(t), "%s=0x%" PRIx64 " ", rv.names[i], p->x_regs[i]);
		ln_str(l, t);
	}
	snprintf(t, sizeof(t), "lr=0x%" PRIx64 " fp=0x%" PRIx64 " sp=0x%" PRIx64, p->lr, p->fp,
	         p->sp);
	ln_str(l, t);
	text_xmm(l, e, indent);
	for (uint32_t o = 0; o < p->stack_size && l->n + LN_RESERVE < sizeof(l->b); o += 16) {
		snprintf(t, sizeof(t), "\n%*s| sp+0x%03x:", 43 + 2 * indent, "", o);
		ln_str(l, t);
		for (uint32_t k = o; k < o + 16 && k < p->stack_size; k++) {
			snprintf(t, sizeof(t), " %02x", stack[k]);
			ln_str(l, t);
		}
	}
}

static void text_event(struct dump_pid *dp, const struct dump_src *s, uint64_t seq,
                       const struct atf_index_event *ev, uint32_t depth, struct line *l)
{
	const char *kind = ada_atf_kind_name(ev->event_kind);
	const struct atf_detail_event_header *de = linked_detail(s->gen, ev);
	const struct ada_name *nm = ada_names_get(dp->rp.names, ev->function_id);
	const char *mod = nm->module;
	char t[160], w[48];

	depth = depth > 64 ? 64 : depth; /* a signal marker, or very deep: 64 */
	if (dp->o->time == RD_TIME_WALL)
		snprintf(t, sizeof(t), "%s T%-3u %-7u #%-6" PRIu64 " ",
		         rd_fmt_wall(ada_wall_from_boottime(&dp->rp.wall, ev->timestamp_ns), w,
		                     sizeof(w)),
		         s->thread, ev->thread_id, seq);
	else
		snprintf(t, sizeof(t), "%20" PRIu64 " T%-3u %-7u #%-6" PRIu64 " ", ev->timestamp_ns,
		         s->thread, ev->thread_id, seq);
	ln_str(l, t);
	for (uint32_t i = 1; i < depth; i++)
		ln_str(l, "  ");
	ln_str(l, kind ? (ev->event_kind == ATF_EVENT_CALL     ? "-> "
	                  : ev->event_kind == ATF_EVENT_RETURN ? "<- "
	                                                       : "!! ")
	               : "?? ");
	if (ada_wait_marker(ev->event_kind, ev->call_depth)) {
		ln_str(l, ev->call_depth == ADA_WAIT_MARKER_BEGIN ? "ada waits for ring space"
		                                                  : "ada's wait ended");
		if (s->st->have_wait) {
			ln_str(l, "  ");
			ln_str(l, rd_fmt_ns(s->st->wait_len, t, sizeof(t)));
		}
		mod = NULL;
	} else if (ev->event_kind == ATF_EVENT_EXCEPTION &&
	           (ev->call_depth & ADA_SIGNAL_MARKER_FLAG)) {
		snprintf(t, sizeof(t), "signal %u, fault address 0x%" PRIx64,
		         ev->call_depth & ~ADA_SIGNAL_MARKER_FLAG, ev->function_id);
		ln_str(l, t);
		mod = NULL;
	} else {
		ln_str(l, nm->name);
	}
	if (mod) {
		const char *b = strrchr(mod, '/');
		ln_str(l, " (");
		ln_str(l, b ? b + 1 : mod);
		ln_str(l, ")");
	}
	if (s->st->have_dur) {
		ln_str(l, "  ");
		ln_str(l, rd_fmt_ns(s->st->dur, t, sizeof(t)));
		if (s->st->dur_wait) {
			ln_str(l, " (and ada waited ");
			ln_str(l, rd_fmt_ns(s->st->dur_wait, t, sizeof(t)));
			ln_str(l, ")");
		}
	}
	if (de)
		text_detail(l, s->gen->detail, de, depth);
	if (ev->event_kind == ATF_EVENT_EXCEPTION && (ev->call_depth & ADA_SIGNAL_MARKER_FLAG))
		others_emit(dp, l, false);
	ln_str(l, "\n");
}

/* ----------------------------------------------------------- filters */

static void dump_leave(void *ctx, const struct ada_frame *f, enum ada_frame_end how,
                       struct ada_frame *parent)
{
	struct dump_thr *st = ctx;

	(void)parent;
	if (how != ADA_END_RETURN && how != ADA_END_EXCEPTION)
		return;
	st->have_dur = true;
	st->dur = ada_frame_ns(f);
	st->dur_wait = f->wait_ns;
	st->end_seq = f->end_seq;
	st->end_src = f->end_src;
}

/* ada's wait for ring space ended (its END marker is the event just
 * pushed): the line shows its length. */
static void dump_wait(void *ctx, uint64_t begin_ns, uint64_t end_ns)
{
	struct dump_thr *st = ctx;

	st->have_wait = true;
	st->wait_len = end_ns > begin_ns ? end_ns - begin_ns : 0;
}

/* A wait marker is shown one level inside the innermost open frame (the
 * frame its time is taken out of), as the filter counts depths. */
static uint32_t dump_wait_depth(const struct dump_pid *dp, const struct dump_thr *st)
{
	size_t n = ada_frames_depth(st->w);
	const struct ada_frame *top = n ? ada_frames_at(st->w, n - 1) : NULL;
	uint32_t d = top ? top->depth + 1 : 1;

	if (dp->o->f.glob)
		d = st->calls.inside && d > st->calls.base ? d - st->calls.base + 1 : 1;
	return d;
}

static void dump_event(struct dump_pid *dp, const struct dump_src *s, uint64_t seq,
                       const struct atf_index_event *ev)
{
	static struct line l; /* 64 KiB: not on the stack; the CLI is single-threaded */
	uint32_t depth;

	s->st->have_dur = s->st->have_wait = false;
	ada_frames_push(s->st->w, ev, s->gen_index, seq);
	if (s->st->have_dur && (s->st->end_seq != seq || s->st->end_src != s->gen_index))
		s->st->have_dur = false;
	if (!rd_filter_event(&dp->o->f, dp->rp.names, &s->st->calls, ev, &depth))
		return;
	if (ada_wait_marker(ev->event_kind, ev->call_depth))
		depth = dump_wait_depth(dp, s->st);
	l.n = 0;
	if (dp->o->jsonl)
		json_event(dp, s, seq, ev, &l);
	else
		text_event(dp, s, seq, ev, depth, &l);
	fwrite(l.b, 1, l.n, stdout);
}

/* ---------------------------------------------------------- threads */

static void dump_thread_linear(struct dump_pid *dp, const struct ada_atf_thread *t,
                               struct dump_thr *st)
{
	for (size_t i = 0; i < t->ngen; i++) {
		const struct ada_atf_gen *g = &t->gen[i];
		struct dump_src s = {t->thread, (uint32_t)i, g, st};
		uint64_t b, e;
		if (!g->index)
			continue;
		ada_atf_index_range(g->index, dp->from, dp->to, &b, &e);
		for (uint64_t k = b; k < e; k++)
			dump_event(dp, &s, k, ada_atf_index_get(g->index, k));
	}
}

static int dump_merge_add(struct ada_atf_merge *m, struct dump_pid *dp,
                          const struct ada_atf_thread *t, struct dump_src *srcs,
                          struct dump_thr *st)
{
	for (size_t i = 0; i < t->ngen; i++) {
		const struct ada_atf_gen *g = &t->gen[i];
		uint64_t b, e;
		srcs[i] = (struct dump_src){t->thread, (uint32_t)i, g, st};
		if (!g->index)
			continue;
		ada_atf_index_range(g->index, dp->from, dp->to, &b, &e);
		int err = ada_atf_merge_add(m, g->index, b, e, t->thread, (uint32_t)i, &srcs[i]);
		if (err)
			return err;
	}
	return 0;
}

/* All threads of one pid, by timestamp. */
static int dump_pid_merged(struct dump_pid *dp, struct ada_atf_thread **ts, struct dump_thr *st,
                           size_t n)
{
	struct ada_atf_merge *m;
	struct ada_atf_merge_item it;
	struct dump_src **srcs = calloc(n ? n : 1, sizeof(*srcs));
	int err = srcs ? ada_atf_merge_new(&m) : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		srcs[i] = calloc(ts[i]->ngen ? ts[i]->ngen : 1, sizeof(**srcs));
		err = srcs[i] ? dump_merge_add(m, dp, ts[i], srcs[i], &st[i]) : -ENOMEM;
	}
	while (!err && ada_atf_merge_next(m, &it))
		dump_event(dp, it.user, it.index_seq, it.ev);
	if (srcs)
		ada_atf_merge_free(m);
	for (size_t i = 0; srcs && i < n; i++)
		free(srcs[i]);
	free(srcs);
	return err;
}

static int dump_threads(struct dump_pid *dp, struct ada_atf_thread **ts, struct dump_thr *st,
                        size_t n)
{
	static const struct ada_frames_ops ops = {.leave = dump_leave, .wait = dump_wait};
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = ada_frames_new(&ops, &st[i], &st[i].w);
	if (!err && dp->o->merge)
		err = dump_pid_merged(dp, ts, st, n);
	for (size_t i = 0; !err && !dp->o->merge && i < n; i++)
		dump_thread_linear(dp, ts[i], &st[i]);
	for (size_t i = 0; i < n; i++)
		ada_frames_free(st[i].w);
	return err;
}

static int dump_pid(struct dump_pid *dp, const struct ada_atf_pid *p)
{
	size_t cap = p->nthreads ? p->nthreads : 1, n = 0;
	struct ada_atf_thread **ts = calloc(cap, sizeof(*ts));
	struct dump_thr *st = calloc(cap, sizeof(*st));
	int err = ts && st ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < p->nthreads; i++) {
		if (!rd_filter_wants_thread(&dp->o->f, p->thread_ids[i]))
			continue;
		dp->thread_seen++;
		err = rd_thread_open(&dp->rp, i, &ts[n]);
		n += !err && ts[n];
	}
	if (!err)
		err = dump_threads(dp, ts, st, n);
	for (size_t i = 0; i < n; i++)
		rd_thread_close(&dp->rp, ts[i]);
	free(ts);
	free(st);
	return err;
}

/* -------------------------------------------------------------- main */

static int dump_one_pid(const struct dump_opts *o, const struct ada_atf_pid *p, bool several,
                        uint32_t *threads_seen, uint32_t *damaged)
{
	struct dump_pid dp = {.o = o, .pid = several ? (int64_t)p->pid : -1};
	int err = rd_pid_open(p, o->dm, &dp.rp);

	if (err)
		return err;
	err = rd_filter_range(&o->f, &dp.rp, &dp.from, &dp.to);
	if (!err && o->time == RD_TIME_WALL && !dp.rp.wall.realtime_ns) {
		ada_log("%s: its manifest has no wall-clock anchor (recorded by an older ada); use "
		        "--time boot",
		        p->dir);
		err = -EINVAL;
	}
	if (err) {
		rd_pid_close(&dp.rp);
		return err;
	}
	if (several && !o->jsonl)
		printf("== %s (pid %" PRIu32 ")\n", p->dir, p->pid);
	err = dump_pid(&dp, p);
	*threads_seen += dp.thread_seen;
	*damaged += dp.rp.damaged;
	rd_pid_close(&dp.rp);
	return err;
}

static void dump_usage(FILE *f)
{
	fprintf(
	    f, "usage: ada dump [--format text|jsonl] [--merge] [--pid P] [--thread N] [--from T]\n"
	       "                [--to T] [--window N] [--function GLOB] [--depth N]\n"
	       "                [--demangle M] [--time boot|wall] DIR\n"
	       "  Prints the events under DIR (a pid_N directory or any directory above).\n"
	       "  --format jsonl   one JSON object per event (keys: docs/dump.md)\n"
	       "  --merge          all threads of a process in timestamp order\n");
	rd_filter_usage(f, true);
	fprintf(
	    f, "  --demangle M     C++ names: full (default), simple (no parameters), no\n"
	       "  --time FORM      boot: CLOCK_BOOTTIME ns (default); wall: local date and time\n");
}

static int dump_opt(int c, struct dump_opts *o)
{
	int rc = rd_filter_opt(&o->f, c, optarg);

	if (rc != 1)
		return rc;
	switch (c) {
	case 'f':
		if (strcmp(optarg, "text") && strcmp(optarg, "jsonl"))
			break;
		o->jsonl = !strcmp(optarg, "jsonl");
		return 0;
	case 'm':
		o->merge = true;
		return 0;
	case 'd':
		if (ada_demangle_parse(optarg, &o->dm))
			break;
		return 0;
	case 'W':
		if (rd_parse_time_form(optarg, &o->time))
			break;
		return 0;
	case 'h':
		dump_usage(stdout);
		return 1;
	default:
		dump_usage(stderr);
		return 2;
	}
	ada_log("bad value '%s' for --%s", optarg,
	        c == 'f'   ? "format"
	        : c == 'd' ? "demangle (full, simple or no)"
	                   : "time (boot or wall)");
	return 2;
}

static int dump_args(int argc, char **argv, struct dump_opts *o, const char **dir)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"merge", no_argument, NULL, 'm'},
	    RD_FILTER_OPT_SELECT,
	    RD_FILTER_OPT_CALLS,
	    {"demangle", required_argument, NULL, 'd'},
	    {"time", required_argument, NULL, 'W'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = dump_opt(c, o)))
			return rc == 1 ? 0 : rc;
	if (optind != argc - 1) {
		ada_log("dump takes one directory; run `ada dump --help`");
		return 2;
	}
	if (rd_filter_check(&o->f))
		return 2;
	*dir = argv[optind];
	return -1;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts o = {0};
	struct ada_atf_tree *tree;
	const char *dir = NULL;
	uint32_t threads_seen = 0, damaged = 0;
	static char outbuf[1 << 20];
	int rc = dump_args(argc, argv, &o, &dir), err = 0;

	if (rc >= 0)
		return rc;
	tree = rd_filter_open_tree(&o.f, dir, &rc);
	if (!tree)
		return rc;
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	for (size_t i = 0; i < tree->npids && !err; i++)
		if (rd_filter_wants_pid(&o.f, tree->pids[i].pid))
			err = dump_one_pid(&o, &tree->pids[i], tree->npids > 1, &threads_seen,
			                   &damaged);
	ada_atf_tree_free(tree);
	if (fflush(stdout) != 0 && !err)
		err = -errno;
	if (err == -EINVAL)
		return 2; /* said */
	if (err) {
		ada_log("%s: %s", dir, strerror(-err));
		return 1;
	}
	if (o.f.have_thread && !threads_seen) {
		ada_log("%s: no thread_%" PRIu32 " directory", dir, o.f.thread);
		return 1;
	}
	return damaged ? 1 : 0; /* what could be read was printed; the rest is reported */
}
