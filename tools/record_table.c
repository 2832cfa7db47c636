/*
 * The options of ada record and ada attach, declared once: record_table[]
 * holds each option's name, argument, parser, the field of struct rec_args
 * it fills, its usage lines and the end-to-end tests that show its effect.
 * From it come the getopt array (record_longopts), the usage text
 * (record_usage, attach_usage) and the list e2e.opt.coverage checks (the
 * hidden --option-tests, tests/integration/record_options.py).
 *
 * Threads: the CLI's main thread, before anything is created.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "keysym.h"
#include "ring.h"
#include "wal.h"

#include "record.h"

struct record_opt;
/* One word an option takes and the int its field then gets. */
struct record_choice {
	const char *word;
	int value;
};
typedef int (*record_parse_fn)(struct rec_args *a, const struct record_opt *o, const char *v);

struct record_opt {
	const char *name; /* the long option, without "--" */
	const char *arg;  /* its argument in the usage; NULL: it takes none */
	record_parse_fn parse;
	size_t field;      /* offsetof(struct rec_args, ...): what a generic parser fills */
	const char *help;  /* usage lines ('\n' between them); "%u" stands for dflt */
	unsigned dflt;     /* the default the help shows */
	const char *tests; /* the CTest tests that show its effect (e2e.opt.coverage) */
	const struct record_choice *choices; /* record_opt_choice's words, {NULL} last */
	const char *heading;                 /* a usage line before it */
	unsigned col;                        /* the help's column when not RECORD_USAGE_COL */
	unsigned flags;
};
#define RECORD_OPT_ATTACH 1u /* ada attach only: in its usage, not record's */
#define RECORD_OPT_HIDDEN 2u /* in no usage */
#define RECORD_USAGE_COL 21
#define RECORD_OPT_VAL 256 /* getopt's value of record_table[i]: RECORD_OPT_VAL + i */

#define F(m) offsetof(struct rec_args, m) /* a record_opt's field */

/* ---- generic parsers: o->field says where the value goes ---- */

static void *record_opt_field(struct rec_args *a, const struct record_opt *o)
{
	return (char *)a + o->field;
}

/* A non-negative decimal number; -1 (said) when it is not one. */
static int record_opt_number(const struct record_opt *o, const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-') {
		ada_log("--%s wants a non-negative number, not '%s'", o->name, v);
		return -1;
	}
	*out = x;
	return 0;
}

static int record_opt_u64(struct rec_args *a, const struct record_opt *o, const char *v)
{
	return record_opt_number(o, v, record_opt_field(a, o));
}

/* A number into a uint32_t field, larger ones clamped. */
static int record_opt_u32(struct rec_args *a, const struct record_opt *o, const char *v)
{
	uint64_t x;
	if (record_opt_number(o, v, &x) < 0)
		return -1;
	*(uint32_t *)record_opt_field(a, o) = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
	return 0;
}

static int record_opt_str(struct rec_args *a, const struct record_opt *o, const char *v)
{
	*(const char **)record_opt_field(a, o) = v;
	return 0;
}

/* --verbose, --detail-fp: a bool field set to true. */
static int record_opt_on(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)v;
	*(bool *)record_opt_field(a, o) = true;
	return 0;
}

/* --no-follow, --no-agent: a bool field set to false. */
static int record_opt_off(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)v;
	*(bool *)record_opt_field(a, o) = false;
	return 0;
}

/* Seconds, 0 to 3600, fractions allowed, into a uint64_t field of ns. */
static int record_opt_seconds(struct rec_args *a, const struct record_opt *o, const char *v)
{
	uint64_t *ns = record_opt_field(a, o);
	if (ada_trigger_parse_seconds(v, ns) < 0 || *ns > 3600ull * 1000000000ull) {
		ada_log("--%s wants seconds between 0 and 3600 (fractions allowed, e.g. 0.5), not "
		        "'%s'",
		        o->name, v);
		return -1;
	}
	return 0;
}

/* An agent option (ADA_HOOK_CONFIG key = the option's name). */
static int record_opt_hook(struct rec_args *a, const struct record_opt *o, const char *v)
{
	return record_hook_opt(a, o->name, v);
}

/* One of o->choices into an int field; else "--detail is triggered,
 * always or never, not 'x'". */
static int record_opt_choice(struct rec_args *a, const struct record_opt *o, const char *v)
{
	char words[128] = "";
	size_t n = 0;
	for (const struct record_choice *c = o->choices; c->word; c++, n++)
		if (!strcmp(v, c->word)) {
			*(int *)record_opt_field(a, o) = c->value;
			return 0;
		}
	for (size_t i = 0; i < n; i++)
		snprintf(words + strlen(words), sizeof(words) - strlen(words), "%s%s",
		         i == 0      ? ""
		         : i + 1 < n ? ", "
		                     : " or ",
		         o->choices[i].word);
	ada_log("--%s is %s, not '%s'", o->name, words, v);
	return -1;
}

/* ---- the options with their own parsers ---- */

static int record_opt_drain_cpu(struct rec_args *a, const struct record_opt *o, const char *v)
{
	uint64_t x;
	if (record_opt_number(o, v, &x) < 0)
		return -1;
	a->drain_cpu = (int)x;
	return 0;
}

/* --index-block-kb: whole KiB, 4 to 1024 (docs/format.md, compact blocks). */
static int record_opt_index_block(struct rec_args *a, const struct record_opt *o, const char *v)
{
	uint64_t kb;
	if (record_opt_number(o, v, &kb) < 0)
		return -1;
	if (kb < 4 || kb > 1024) {
		ada_log("--index-block-kb is 4 to 1024, not '%s'", v);
		return -1;
	}
	a->index_block = (uint32_t)(kb << 10);
	return 0;
}

static int record_opt_flush(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)o;
	if (ada_flush_parse(v, &a->flush) < 0) {
		ada_log("--flush is off, interval:MS, bytes:N or rotate, not '%s'", v);
		return -1;
	}
	return 0;
}

static int record_opt_safe(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)o, (void)v;
	a->flush.safe = 1;
	return 0;
}

/* --max-disk-mb, --max-shm-mb: MiB that still fit in bytes. */
static int record_opt_budget_mb(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u64(a, o, v) < 0)
		return -1;
	if (*(uint64_t *)record_opt_field(a, o) > (UINT64_MAX >> 21)) {
		ada_log("--%s %s is more than any %s; use 0 for no limit", o->name, v,
		        o->field == F(max_disk_mb) ? "disk holds" : "machine has");
		return -1;
	}
	return 0;
}

static int record_opt_analysis_threads(struct rec_args *a, const struct record_opt *o,
                                       const char *v)
{
	if (strcmp(v, "1") && strcmp(v, "2")) {
		ada_log("--analysis-threads takes 1 or 2, not '%s' (e.g. --analysis-threads 2)", v);
		return -1;
	}
	return record_opt_hook(a, o, v);
}

/* --count-live: 0 or 1 (the agent's count-live). */
static int record_opt_count_live(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (strcmp(v, "0") && strcmp(v, "1")) {
		ada_log("--count-live takes 0 or 1, not '%s' (e.g. --count-live 0)", v);
		return -1;
	}
	return record_opt_hook(a, o, v);
}

/* --overhead-budget: a whole percentage, 1..100. */
static int record_opt_overhead_budget(struct rec_args *a, const struct record_opt *o, const char *v)
{
	char *end = NULL;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (errno || end == v || *end || n < 1 || n > 100 || v[0] == '-' || v[0] == '+') {
		ada_log("--overhead-budget takes a whole percentage from 1 to 100, not '%s' (e.g. "
		        "--overhead-budget 10)",
		        v);
		return -1;
	}
	return record_opt_hook(a, o, v);
}

static int record_opt_stack_bytes(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u64(a, o, v) < 0)
		return -1;
	if (a->stack_bytes > ATF_DETAIL_STACK_MAX) {
		ada_log("--stack-bytes takes 0 to %u bytes, not '%s'", ATF_DETAIL_STACK_MAX, v);
		return -1;
	}
	return 0;
}

static int record_opt_detail_mb(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u64(a, o, v) < 0)
		return -1;
	if (a->detail_mb < 1 || a->detail_mb > (ADA_DETAIL_MAX_BYTES >> 20)) {
		ada_log("--detail-mb takes 1 to %llu MiB per thread, not '%s'",
		        (unsigned long long)(ADA_DETAIL_MAX_BYTES >> 20), v);
		return -1;
	}
	return 0;
}

/* Each --detail-symbols glob is the rule *:GLOB of the key-symbol spec. */
static int record_keysym_globs(struct rec_args *a, const char *globs)
{
	char why[320];
	if (!a->ks && ada_keysym_spec_new(&a->ks) < 0)
		return -1;
	for (const char *p = globs; *p;) {
		size_t n = strcspn(p, ",");
		char rule[1100];
		snprintf(rule, sizeof(rule), "*:%.*s", (int)(n < 1024 ? n : 1024), p);
		if (n &&
		    ada_keysym_spec_add_rule(a->ks, rule, strlen(rule), why, sizeof(why)) < 0) {
			ada_log("--detail-symbols: %s", why);
			return -1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

static int record_opt_detail_symbols(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)o;
	if (!*v || strchr(v, ';') || strchr(v, '=')) {
		ada_log("--detail-symbols takes globs separated by ',' (no ';' or '='), not '%s'",
		        v);
		return -1;
	}
	if (strlen(a->detail_symbols) + strlen(v) + 2 > sizeof(a->detail_symbols)) {
		ada_log("--detail-symbols: too many globs (at most %zu characters in all)",
		        sizeof(a->detail_symbols) - 1);
		return -1;
	}
	if (a->detail_symbols[0])
		strcat(a->detail_symbols, ",");
	strcat(a->detail_symbols, v);
	/* The recorder's sets take them as *:GLOB; the agent matches them
	 * itself until the first set is published. */
	if (record_keysym_globs(a, v) < 0)
		return -1;
	return record_hook_opt(a, "detail-symbol", v);
}

/* --key-symbols FILE and --blob MODULE_ID=FILE (src/keysym: the spec). */
static int record_opt_keysym(struct rec_args *a, const struct record_opt *o, const char *v)
{
	char why[320] = "";
	if (!a->ks && ada_keysym_spec_new(&a->ks) < 0) {
		ada_log("out of memory");
		return -1;
	}
	a->ks_given = true;
	int err = !strcmp(o->name, "key-symbols")
	              ? cmd_keysym_read_rules(a->ks, v, why, sizeof(why))
	              : cmd_keysym_read_blob(a->ks, v, why, sizeof(why));
	if (err)
		ada_log("--%s %s: %s", o->name, v, why);
	return err ? -1 : 0;
}

/* --trigger SPEC: checked here, before anything is created. */
static int record_opt_trigger(struct rec_args *a, const struct record_opt *o, const char *v)
{
	char why[400];
	(void)o;
	if (a->ntriggers == ADA_TRIGGER_MAX) {
		ada_log("too many --trigger options (at most %d)", ADA_TRIGGER_MAX);
		return -1;
	}
	if (ada_trigger_parse(v, &a->triggers[a->ntriggers], why, sizeof(why)) < 0) {
		ada_log("--trigger: %s", why);
		return -1;
	}
	a->ntriggers++;
	return 0;
}

static int record_opt_max_windows(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u32(a, o, v) < 0)
		return -1;
	if (a->flight.max_windows == 0 || a->flight.max_windows > 100000) {
		ada_log("--max-windows wants 1 to 100000 windows, not '%s'", v);
		return -1;
	}
	return 0;
}

static int record_opt_holdoff(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u64(a, o, v) < 0)
		return -1;
	if (a->flight.holdoff_ns > 86400000) {
		ada_log("--trigger-holdoff-ms wants at most 86400000 (a day), not '%s'", v);
		return -1;
	}
	a->flight.holdoff_ns *= 1000000; /* given in ms */
	return 0;
}

static int record_opt_window_mem(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u64(a, o, v) < 0)
		return -1;
	if (a->window_mem_mb == 0 || a->window_mem_mb > 65536) {
		ada_log("--window-mem-mb wants MiB from 1 to 65536, not '%s'", v);
		return -1;
	}
	return 0;
}

static int record_opt_persist_share(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (record_opt_u64(a, o, v) < 0)
		return -1;
	if (a->persist_share == 0 || a->persist_share > 100) {
		ada_log("--persist-share wants a percentage from 1 to 100, not '%s'", v);
		return -1;
	}
	return 0;
}

static int record_opt_duration(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (!a->attach) {
		ada_log("--duration is an option of ada attach; ada record ends with its program");
		return -1;
	}
	return record_opt_seconds(a, o, v);
}

static int record_opt_call_timeout(struct rec_args *a, const struct record_opt *o, const char *v)
{
	if (!a->attach) {
		ada_log("--call-timeout is an option of ada attach");
		return -1;
	}
	if (record_opt_seconds(a, o, v) < 0)
		return -1;
	if (a->call_timeout_ns == 0) {
		ada_log("--call-timeout wants more than 0 seconds");
		return -1;
	}
	return 0;
}

static int record_opt_help(struct rec_args *a, const struct record_opt *o, const char *v);
static int record_opt_option_tests(struct rec_args *a, const struct record_opt *o, const char *v);

/* ---- the table ---- */

static const struct record_opt record_table[] = {
    {"out", "DIR", record_opt_str, F(out), "where sessions go (default ./ada_traces)",
     .tests = "e2e.opt.out"},
    {"ring-mb", "N", record_opt_u64, F(ring_mb),
     "index ring per thread, in MiB (rounded down to a power of two)", .tests = "e2e.opt.ring_mb"},
    {"peak-rate", "R", record_opt_u64, F(peak_rate), "size rings for R events/s per thread ...",
     .tests = "e2e.opt.peak_rate"},
    {"burst-ms", "W", record_opt_u64, F(burst_ms),
     "... over a burst of W ms: capacity K = R x W / 1000 events,\n"
     "rounded up to a power of two (default W = 50)",
     .tests = "e2e.opt.burst_ms"},
    {"max-threads", "N", record_opt_u32, F(max_threads),
     "full-size ring slots per process (default %u)", ADA_ARENA_DEFAULT_MAX_THREADS,
     .tests = "e2e.opt.max_threads"},
    {"thread-limit", "N", record_opt_u32, F(thread_limit),
     "threads of a process recorded at once (default %u):\n"
     "those past --max-threads get 16 KiB index rings (and\n"
     "8 KiB detail rings), given memory as they start and\n"
     "counted against --max-shm-mb; past N a thread waits\n"
     "for a slot while the others progress, then its\n"
     "events are dropped and counted (no_slot)",
     ADA_ARENA_DEFAULT_THREAD_LIMIT, .tests = "e2e.opt.thread_limit"},
    {"overflow", "MODE", record_opt_choice, F(overflow),
     "wait (default: lossless, the thread waits for the drain)\n"
     "or drop (count and drop when a ring is full)",
     .tests = "e2e.opt.overflow_drop e2e.opt.overflow_wait",
     .choices = (const struct record_choice[]){{"wait", ADA_OVERFLOW_WAIT},
                                               {"drop", ADA_OVERFLOW_DROP},
                                               {NULL, 0}}},
    {"drain-cpu", "N", record_opt_drain_cpu, 0,
     "pin the drain thread to CPU N (default: not pinned: on a\n"
     "small machine the scheduler places it better than a\n"
     "fixed CPU that the program's threads also want)",
     .tests = "e2e.opt.drain_cpu"},
    {"segment-mb", "N", record_opt_u64, F(segment_mb),
     "preallocation step of index files (default 64)", .tests = "e2e.opt.segment_mb"},
    {"index-format", "F", record_opt_choice, F(index_format),
     "compact (default: the compact index, ATC1, a few bytes\n"
     "per event; `ada export --format atf` gives ATF v2 files\n"
     "of it) or atf (ATF v2 written directly, 32 bytes per\n"
     "event, for tools that read the files while recording)",
     .tests = "e2e.compact_roundtrip pipeline_atf_exact e2e.atf_flight_always_wait",
     .choices = (const struct record_choice[]){{"atf", ADA_INDEX_ATF},
                                               {"compact", ADA_INDEX_COMPACT},
                                               {NULL, 0}}},
    {"index-block-kb", "N", record_opt_index_block, 0,
     "compact index blocks of N KiB (4..1024, default 64)", .tests = "e2e.compact_roundtrip"},
    {"flush", "POLICY", record_opt_flush, 0,
     "off | interval:MS | bytes:N | rotate (default interval:1000)",
     .tests = "e2e.opt.flush_off e2e.opt.flush_interval e2e.opt.flush_bytes e2e.opt.flush_rotate"},
    {"safe", NULL, record_opt_safe, 0, "fsync at every new segment and at close",
     .tests = "e2e.opt.safe"},
    {"max-disk-mb", "N", record_opt_budget_mb, F(max_disk_mb),
     "keep the session within N MiB (every file it writes\n"
     "counts): the oldest index generations are deleted\n"
     "first, and stderr says so. 0: no limit. Default: 10%\n"
     "of the free space of DIR's file system at the start,\n"
     "at most 4 GiB (at least 1 MiB)",
     .tests = "e2e.opt.max_disk_mb pipeline_maxdisk bounded_budget"},
    {"max-shm-mb", "N", record_opt_budget_mb, F(max_shm_mb),
     "ceiling on the shared memory of the recording (the sum\n"
     "of its arenas' sizes): a process that would pass it\n"
     "gets smaller detail rings, or, when not even those fit,\n"
     "runs untraced; both counted and told. 0: no limit.\n"
     "Default: half of the free space of /dev/shm at the start",
     .tests = "bounded_shm_ceiling bounded_shm_small"},
    {"verbose", NULL, record_opt_on, F(verbose),
     "(-v) say on stderr what happens as it happens: processes\n"
     "recorded and ended, each module hooked (functions hooked and\n"
     "skipped, by reason), modules dlopen'ed, windows opening\n"
     "and closing",
     .tests = "e2e.opt.verbose"},
    {"log", "FILE", record_opt_str, F(log_path),
     "the same log into FILE (created or truncated, 0600)", .tests = "e2e.opt.verbose"},
    {"no-follow", NULL, record_opt_off, F(follow), "do not record the children PROGRAM starts",
     .tests = "e2e.fork_exec_nofollow.O2"},
    {"no-agent", NULL, record_opt_off, F(agent),
     "do not preload libada_agent.so (PROGRAM links the\n"
     "producer API itself)",
     .tests = "pipeline_exact"},
    {"exclude", "MOD[,MOD...]", record_opt_hook, 0,
     "do not hook these modules (path or file\n"
     "           name globs, e.g. 'libc.so*')",
     .tests = "e2e.exclude_module.O2", .col = 32},
    {"include", "MOD[,MOD...]", record_opt_hook, 0, "hook only these modules",
     .tests = "e2e.include_module.O2", .col = 32},
    {"exclude-symbol", "GLOB[,...]", record_opt_hook, 0, "do not hook these functions",
     .tests = "e2e.exclude_symbol.O2", .col = 32},
    {"include-symbol", "GLOB[,...]", record_opt_hook, 0,
     "hook only these functions\n"
     "(globs are fnmatch(3); options may repeat; a default\n"
     "list of functions that cannot be traced is always\n"
     "excluded: see docs/hooks.md)",
     .tests = "e2e.opt.include_symbol", .col = 32},
    {"count-only", "GLOB[,...]", record_opt_hook, 0,
     "keep an exact call count of these functions and\n"
     "write no events for them (a few ns a call; report,\n"
     "flame and the manifest show the counts; their returns\n"
     "are not traced: docs/hooks.md, Count-only functions)",
     .tests = "e2e.count_only", .col = 32},
    {"count-live", "0|1", record_opt_count_live, 0,
     "with --count-only and no --overhead-budget: 1\n"
     "(default) a thread of the agent's keeps the counts\n"
     "ada status shows live (a look a second); 0: none,\n"
     "and glibc keeps a single-threaded program's stdio and\n"
     "malloc lock-free (docs/hooks.md, Live counts)",
     .tests = "e2e.live_counts_alone e2e.live_counts_off", .col = 32},
    {"overhead-budget", "PCT", record_opt_overhead_budget, 0,
     "1..100: while tracing costs a thread more than PCT %\n"
     "of its CPU time, move its hottest short functions to\n"
     "count-only (listed in the manifest, the summary and\n"
     "ada status; docs/hooks.md, Overhead budget)",
     .tests = "e2e.overhead_budget", .col = 32},
    {"analysis-threads", "N", record_opt_analysis_threads, 0,
     "1 (default) or 2: on a cold start (no cached\n"
     "analysis of a module yet) share the analysis with a\n"
     "second thread; glibc then counts the program as\n"
     "multi-threaded for good (stdio and malloc take locks)",
     .tests = "e2e.cold_start"},
    {"detail", "MODE", record_opt_choice, F(detail_mode),
     "the detail lane (registers and a stack snapshot per call\n"
     "and return): triggered (default: kept in memory, only\n"
     "trigger windows are written; the ring overwriting what\n"
     "no window wanted is counted apart, not as drops, and a\n"
     "window's records already overwritten are window_lost\n"
     "drops), always (every record is written) or never\n"
     "(index lane only, the fastest)",
     .tests = "e2e.detail_always.O2 e2e.detail_never.O2 e2e.detail_bad_options",
     .choices = (const struct record_choice[]){{"triggered", ADA_DETAIL_TRIGGERED},
                                               {"always", ADA_DETAIL_ALWAYS},
                                               {"never", ADA_DETAIL_NEVER},
                                               {NULL, 0}}},
    {"detail-overflow", "MODE", record_opt_choice, F(detail_overflow),
     "--detail always with a full detail ring: wait (the\n"
     "thread waits for the drain, as --overflow wait does;\n"
     "the default unless --overflow drop) or overwrite (the\n"
     "program never waits; a record overwritten first is a\n"
     "detail_overwritten drop)",
     .tests = "e2e.flight_always_wait e2e.flight_always_wait_stopped "
              "e2e.flight_always_overwrite e2e.flight_bad_options",
     .choices = (const struct record_choice[]){{"wait", 1}, {"overwrite", 0}, {NULL, 0}}},
    {"stack-bytes", "N", record_opt_stack_bytes, F(stack_bytes),
     "stack bytes captured per call, 0 to 512 (default 128)",
     .tests = "e2e.detail_stack32.O2 e2e.detail_always.O2 e2e.detail_bad_options"},
    {"detail-fp", NULL, record_opt_on, F(detail_fp),
     "detail records also carry the float/double argument\n"
     "registers xmm0-7 (calls) and return registers xmm0-1\n"
     "(returns); the member records are then written in C,\n"
     "not in the trampolines' machine code",
     .tests = "e2e.detail_fp.O2"},
    {"detail-mb", "N", record_opt_detail_mb, F(detail_mb),
     "detail ring per thread, in MiB (1 to 1024, rounded down\n"
     "to a power of two; default 1, or sized for the\n"
     "--pre-roll-sec when triggers are given: docs/benchmarks.md)",
     .tests = "e2e.detail_always.O2 e2e.detail_bad_options"},
    {"detail-symbols", "GLOB[,...]", record_opt_detail_symbols, 0,
     "only these functions enter the detail lane\n"
     "(default: every hooked function)",
     .tests = "e2e.detail_symbols.O2 e2e.detail_bad_options e2e.opt.unmatched_names"},
    {"key-symbols", "FILE", record_opt_keysym, 0,
     "the functions that enter the detail lane, one\n"
     "MODULE_GLOB:SYMBOL_GLOB a line (# comments); change\n"
     "them live with `ada keysym`",
     .tests = "e2e.keysym_key_file e2e.keysym_bad"},
    {"blob", "MODULE_ID=FILE", record_opt_keysym, 0,
     "key symbols of one module: a CRoaring portable\n"
     "bitmap of symbol indexes (repeatable)",
     .tests = "e2e.keysym_blob e2e.keysym_bad"},
    {"trigger", "SPEC", record_opt_trigger, 0,
     "persist a detail window when SPEC fires (repeatable):\n"
     "crash | symbol=GLOB | p99=function:GLOB>DURATION (also\n"
     "latency=; DURATION like 50ms, 200us, 1.5s) |\n"
     "p99=function:GLOB (slower than its own running p99) |\n"
     "time=HH:MM-HH:MM (local) | manual (SIGUSR2 to ada)",
     .tests = "e2e.flight_crash_segv e2e.flight_latency e2e.flight_symbol e2e.flight_manual "
              "e2e.flight_bad_options e2e.opt.unmatched_names",
     .heading = "Flight recorder (detail windows around triggers):"},
    {"pre-roll-sec", "S", record_opt_seconds, F(flight.pre_ns),
     "detail kept before a fire (default 5; fractions allowed)",
     .tests = "e2e.flight_crash_segv e2e.flight_latency"},
    {"post-roll-sec", "S", record_opt_seconds, F(flight.post_ns),
     "detail kept after a fire (default 1)", .tests = "e2e.flight_latency"},
    {"max-windows", "N", record_opt_max_windows, F(flight.max_windows),
     "at most N windows (default %u; overlapping fires merge)", ADA_TRIGGER_DEFAULT_MAX_WINDOWS,
     .tests = "e2e.flight_max_windows"},
    {"trigger-holdoff-ms", "MS", record_opt_holdoff, F(flight.holdoff_ns),
     "a trigger that fired ignores its fires for MS\n"
     "(default 1000), but for a call slower than every one\n"
     "it fired on meanwhile (latency and p99 triggers)",
     .tests = "e2e.flight_holdoff"},
    {"persist-share", "PCT", record_opt_persist_share, F(persist_share),
     "while the CPU is contended, windows are written with\n"
     "at most PCT percent of the CPU an always-runnable\n"
     "thread gets (default %u; 100: never held back, the\n"
     "program may slow while windows are written)",
     ADA_PERSIST_SHARE_DEFAULT,
     .tests = "e2e.flight_window_lost_yield e2e.flight_window_share_full"},
    {"window-mem-mb", "N", record_opt_window_mem, F(window_mem_mb),
     "windows take their detail records out of the rings\n"
     "every pass into at most N MiB of the recorder's\n"
     "memory, where they wait to be written while the CPU\n"
     "is contended (default: none; the copy costs CPU)",
     .tests = "e2e.flight_window_mem"},
    {"duration", "SEC", record_opt_duration, F(duration_ns),
     "detach after SEC seconds (fractions allowed)", .tests = "e2e.attach_duration",
     .flags = RECORD_OPT_ATTACH},
    {"call-timeout", "SEC", record_opt_call_timeout, F(call_timeout_ns),
     "how long the agent's dlopen in the process may take\n"
     "(default 10): a thread stopped while holding a lock\n"
     "dlopen needs would make it wait for ever",
     .tests = "e2e.attach_loader_lock", .flags = RECORD_OPT_ATTACH},
    {"help", NULL, record_opt_help, .flags = RECORD_OPT_HIDDEN},
    {"option-tests", NULL, record_opt_option_tests, .flags = RECORD_OPT_HIDDEN},
};
#define RECORD_NOPTS (sizeof(record_table) / sizeof(record_table[0]))

/* ---- the usage text ---- */

/* One help line; "%u" in it is o->dflt. */
static void record_usage_line(FILE *f, const struct record_opt *o, const char *s, size_t len)
{
	const char *u = memmem(s, len, "%u", 2);
	if (!u) {
		fprintf(f, "%.*s\n", (int)len, s);
		return;
	}
	fprintf(f, "%.*s%u%.*s\n", (int)(u - s), s, o->dflt, (int)(len - (size_t)(u - s) - 2),
	        u + 2);
}

/* "  --name ARG" padded to the help's column (two spaces past it), then
 * the help, its further lines at RECORD_USAGE_COL. */
static void record_usage_entry(FILE *f, const struct record_opt *o)
{
	char head[64];
	int n = snprintf(head, sizeof(head), "  --%s%s%s", o->name, o->arg ? " " : "",
	                 o->arg ? o->arg : "");
	int col = o->col ? (int)o->col : RECORD_USAGE_COL;
	if (o->heading)
		fprintf(f, "%s\n", o->heading);
	fprintf(f, "%s%*s", head, n < col ? col - n : 2, "");
	for (const char *s = o->help, *nl;; s = nl + 1) {
		nl = strchr(s, '\n');
		if (s != o->help)
			fprintf(f, "%*s", RECORD_USAGE_COL, "");
		record_usage_line(f, o, s, nl ? (size_t)(nl - s) : strlen(s));
		if (!nl)
			break;
	}
}

/* The options whose flags are exactly `flags`. */
static void record_usage_entries(FILE *f, unsigned flags)
{
	for (size_t i = 0; i < RECORD_NOPTS; i++)
		if (record_table[i].flags == flags)
			record_usage_entry(f, &record_table[i]);
}

static void record_usage(FILE *f)
{
	fputs("usage: ada record [options] -- PROGRAM [ARGS...]\n"
	      "\n"
	      "Records every call and return of PROGRAM into DIR/session_YYYYMMDD_HHMMSS/.\n"
	      "Ends as PROGRAM ended, whatever happened to the recording (a problem is said\n"
	      "on stderr and in the manifest): with its exit status, or killed by its signal\n"
	      "(no core of its own); like a shell, 127 when PROGRAM does not exist and 126\n"
	      "when it cannot be executed. What PROGRAM leaves running\n"
	      "is waited for 2 s at most after it exits, then named and left running untraced.\n",
	      f);
	record_usage_entries(f, 0);
}

static void attach_usage(FILE *f)
{
	fputs("usage: ada attach PID [options]\n"
	      "\n"
	      "Records the running process PID from now on, as ada record would have, then\n"
	      "detaches and leaves it running untouched: on SIGINT or SIGTERM, after\n"
	      "--duration, or when the process exits. Every thread is stopped while the\n"
	      "agent is loaded and its hooks are set (the pause, in the summary and the\n"
	      "manifest). Checks first what `ada diagnose PID` checks.\n",
	      f);
	record_usage_entries(f, RECORD_OPT_ATTACH);
	fputs("The options of ada record apply (but --no-agent): see ada record --help.\n", f);
}

static void record_usage_to(const struct rec_args *a, FILE *f)
{
	if (a->attach)
		attach_usage(f);
	else
		record_usage(f);
}

static int record_opt_help(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)o, (void)v;
	record_usage_to(a, stdout);
	return 1;
}

/* The hidden --option-tests: "--option test [test...]" a line, each option
 * of `ada record --help` and `ada attach --help` with the tests that show
 * its effect. */
static int record_opt_option_tests(struct rec_args *a, const struct record_opt *o, const char *v)
{
	(void)a, (void)o, (void)v;
	for (size_t i = 0; i < RECORD_NOPTS; i++)
		if (record_table[i].tests)
			printf("--%s %s\n", record_table[i].name, record_table[i].tests);
	return 1;
}

/* ---- parsing ---- */

static void record_longopts(struct option *out)
{
	for (size_t i = 0; i < RECORD_NOPTS; i++)
		out[i] = (struct option){record_table[i].name,
		                         record_table[i].arg ? required_argument : no_argument,
		                         NULL, RECORD_OPT_VAL + (int)i};
	out[RECORD_NOPTS] = (struct option){0, 0, 0, 0};
}

static void record_defaults(struct rec_args *a, bool attach)
{
	memset(a, 0, sizeof(*a));
	a->attach = attach;
	a->out = "ada_traces";
	a->drain_cpu = -1;
	a->max_disk_mb = UINT64_MAX; /* not given: the default budget */
	a->max_shm_mb = UINT64_MAX;  /* not given: the default ceiling */
	a->follow = a->agent = true;
	a->stack_bytes = 128;
	a->persist_share = ADA_PERSIST_SHARE_DEFAULT;
	a->index_format = ADA_INDEX_COMPACT;
	a->detail_overflow = -1; /* not given: follows --overflow */
	a->call_timeout_ns = ADA_ATTACH_CALL_TIMEOUT_NS;
	a->flush = (struct ada_flush_policy){.mode = ADA_FLUSH_INTERVAL, .value = 1000};
	a->flight = (struct ada_trigger_opts){.pre_ns = ADA_TRIGGER_DEFAULT_PRE_NS,
	                                      .post_ns = ADA_TRIGGER_DEFAULT_POST_NS,
	                                      .max_windows = ADA_TRIGGER_DEFAULT_MAX_WINDOWS,
	                                      .holdoff_ns = ADA_TRIGGER_DEFAULT_HOLDOFF_NS};
}

/* One option (getopt's c); returns 0, 1 (--help: done) or -1 (bad). */
static int record_opt(struct rec_args *a, int c, const char *v)
{
	if (c == 'h')
		return record_opt_help(a, NULL, v);
	if (c < RECORD_OPT_VAL || c >= RECORD_OPT_VAL + (int)RECORD_NOPTS) {
		record_usage_to(a, stderr);
		return -1;
	}
	const struct record_opt *o = &record_table[c - RECORD_OPT_VAL];
	return o->parse(a, o, v);
}

/* ada attach PID [options]: nothing may follow the options, and the agent
 * is what attaching loads. */
static int record_attach_rest(struct rec_args *a, int argc, char **argv)
{
	if (optind < argc) {
		ada_log("ada attach takes the pid first and options after it, not '%s'",
		        argv[optind]);
		return -1;
	}
	if (!a->agent) {
		ada_log("--no-agent cannot be used with ada attach: attaching loads the agent");
		return -1;
	}
	return 0;
}

/* --detail-overflow only means something with --detail always: in
 * triggered mode the ring overwrites by design (only windows are kept). */
static int record_check_detail_overflow(const struct rec_args *a)
{
	if (a->detail_overflow < 0 || a->detail_mode == ADA_DETAIL_ALWAYS)
		return 0;
	ada_log("--detail-overflow needs --detail always (the other modes persist no record "
	        "outside trigger windows); e.g. --detail always --detail-overflow wait");
	return -1;
}

int record_parse(struct rec_args *a, int argc, char **argv, bool attach)
{
	struct option longopts[RECORD_NOPTS + 1];
	record_defaults(a, attach);
	record_longopts(longopts);
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "+hv", longopts, NULL)) != -1) {
		a->verbose |= c == 'v';
		int r = c == 'v' ? 0 : record_opt(a, c, optarg);
		if (r)
			return r;
	}
	if (attach) {
		int r = record_attach_rest(a, argc, argv);
		return r ? r : record_check_detail_overflow(a);
	}
	if (optind >= argc) {
		ada_log("no program given: ada record [options] -- PROGRAM [ARGS...]");
		return -1;
	}
	a->prog_argv = argv + optind;
	return record_check_detail_overflow(a);
}
