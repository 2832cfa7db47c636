/*
 * What ada record and ada attach share: their options (struct rec_args,
 * parsed by record_parse), the checks before anything is created, the
 * ring and agent configuration, the control socket and the summary.
 * cmd_record.c spawns a program, cmd_attach.c attaches to a running one.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "diag.h"
#include "control.h"
#include "fs.h"
#include "keysym.h"
#include "ring.h"
#include "wal.h"

#include "record.h"

static void record_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: ada record [options] -- PROGRAM [ARGS...]\n"
	    "\n"
	    "Records every call and return of PROGRAM into DIR/session_YYYYMMDD_HHMMSS/.\n"
	    "Exits with PROGRAM's status (128 + signal) whatever happened to the recording\n"
	    "(a problem is said on stderr and in the manifest). What PROGRAM leaves running\n"
	    "is waited for 2 s at most after it exits, then named and left running untraced.\n"
	    "  --out DIR          where sessions go (default ./ada_traces)\n"
	    "  --ring-mb N        index ring per thread, in MiB (rounded down to a power of two)\n"
	    "  --peak-rate R      size rings for R events/s per thread ...\n"
	    "  --burst-ms W       ... over a burst of W ms: capacity K = R x W / 1000 events,\n"
	    "                     rounded up to a power of two (default W = 50)\n"
	    "  --max-threads N    full-size ring slots per process (default %u)\n"
	    "  --thread-limit N   threads of a process recorded at once (default %u):\n"
	    "                     those past --max-threads get 16 KiB index rings (and\n"
	    "                     8 KiB detail rings), given memory as they start and\n"
	    "                     counted against --max-shm-mb; past N a thread waits\n"
	    "                     for a slot while the others progress, then its\n"
	    "                     events are dropped and counted (no_slot)\n"
	    "  --overflow MODE    wait (default: lossless, the thread waits for the drain)\n"
	    "                     or drop (count and drop when a ring is full)\n"
	    "  --drain-cpu N      pin the drain thread to CPU N (default: not pinned: on a\n"
	    "                     small machine the scheduler places it better than a\n"
	    "                     fixed CPU that the program's threads also want)\n"
	    "  --segment-mb N     preallocation step of index files (default 64)\n"
	    "  --flush POLICY     off | interval:MS | bytes:N | rotate (default interval:1000)\n"
	    "  --safe             fsync at every new segment and at close\n"
	    "  --index-format F   atf (default: ATF v2, 32 bytes per event) or compact\n"
	    "                     (the compact index, ATC1: a few bytes per event; `ada\n"
	    "                     export --format atf` gives ATF v2 files of it)\n"
	    "  --index-block-kb N compact index blocks of N KiB (4..1024, default 64)\n"
	    "  --max-disk-mb N    keep the session within N MiB (every file it writes\n"
	    "                     counts): the oldest index generations are deleted\n"
	    "                     first, and stderr says so. 0: no limit. Default: 10%%\n"
	    "                     of the free space of DIR's file system at the start,\n"
	    "                     at most 4 GiB (at least 1 MiB)\n"
	    "  --max-shm-mb N     ceiling on the shared memory of the recording (the sum\n"
	    "                     of its arenas' sizes): a process that would pass it\n"
	    "                     runs untraced, counted and told. 0: no limit. Default:\n"
	    "                     half of the free space of /dev/shm at the start\n"
	    "  --no-follow        do not record the children PROGRAM starts\n"
	    "  --no-agent         do not preload libada_agent.so (PROGRAM links the\n"
	    "                     producer API itself)\n"
	    "  --exclude MOD[,MOD...]        do not hook these modules (path or file\n"
	    "                                name globs, e.g. 'libc.so*')\n"
	    "  --include MOD[,MOD...]        hook only these modules\n"
	    "  --exclude-symbol GLOB[,...]   do not hook these functions\n"
	    "  --include-symbol GLOB[,...]   hook only these functions\n"
	    "                     (globs are fnmatch(3); options may repeat; a default\n"
	    "                     list of functions that cannot be traced is always\n"
	    "                     excluded: see docs/hooks.md)\n"
	    "  --analysis-threads N  1 (default) or 2: on a cold start (no cached\n"
	    "                     analysis of a module yet) share the analysis with a\n"
	    "                     second thread; glibc then counts the program as\n"
	    "                     multi-threaded for good (stdio and malloc take locks)\n"
	    "  --detail MODE      the detail lane (registers and a stack snapshot per call\n"
	    "                     and return): triggered (default: kept in memory, only\n"
	    "                     trigger windows are written; the ring overwriting what\n"
	    "                     no window wanted is counted apart, not as drops, and a\n"
	    "                     window's records already overwritten are window_lost\n"
	    "                     drops), always (every record is written) or never\n"
	    "                     (index lane only, the fastest)\n"
	    "  --detail-overflow MODE  --detail always with a full detail ring: wait (the\n"
	    "                     thread waits for the drain, as --overflow wait does;\n"
	    "                     the default unless --overflow drop) or overwrite (the\n"
	    "                     program never waits; a record overwritten first is a\n"
	    "                     detail_overwritten drop)\n"
	    "  --stack-bytes N    stack bytes captured per call, 0 to 512 (default 128)\n"
	    "  --detail-mb N      detail ring per thread, in MiB (1 to 1024, rounded down\n"
	    "                     to a power of two; default 1, or sized for the\n"
	    "                     --pre-roll-sec when triggers are given: docs/benchmarks.md)\n"
	    "  --detail-symbols GLOB[,...]  only these functions enter the detail lane\n"
	    "                     (default: every hooked function)\n"
	    "  --key-symbols FILE the functions that enter the detail lane, one\n"
	    "                     MODULE_GLOB:SYMBOL_GLOB a line (# comments); change\n"
	    "                     them live with `ada keysym`\n"
	    "  --blob MODULE_ID=FILE  key symbols of one module: a CRoaring portable\n"
	    "                     bitmap of symbol indexes (repeatable)\n"
	    "Flight recorder (detail windows around triggers):\n"
	    "  --trigger SPEC     persist a detail window when SPEC fires (repeatable):\n"
	    "                     crash | symbol=GLOB | p99=function:GLOB>DURATION (also\n"
	    "                     latency=; DURATION like 50ms, 200us, 1.5s) |\n"
	    "                     p99=function:GLOB (slower than its own running p99) |\n"
	    "                     time=HH:MM-HH:MM (local) | manual (SIGUSR2 to ada)\n"
	    "  --pre-roll-sec S   detail kept before a fire (default 5; fractions allowed)\n"
	    "  --post-roll-sec S  detail kept after a fire (default 1)\n"
	    "  --max-windows N    at most N windows (default %u; overlapping fires merge)\n"
	    "  --trigger-holdoff-ms MS  a trigger that fired ignores its fires for MS\n"
	    "                     (default 1000), but for a call slower than every one\n"
	    "                     it fired on meanwhile (latency and p99 triggers)\n",
	    ADA_ARENA_DEFAULT_MAX_THREADS, ADA_ARENA_DEFAULT_THREAD_LIMIT,
	    ADA_TRIGGER_DEFAULT_MAX_WINDOWS);
}

static void attach_usage(FILE *f)
{
	fprintf(f, "usage: ada attach PID [options]\n"
	           "\n"
	           "Records the running process PID from now on, as ada record would have, then\n"
	           "detaches and leaves it running untouched: on SIGINT or SIGTERM, after\n"
	           "--duration, or when the process exits. Every thread is stopped while the\n"
	           "agent is loaded and its hooks are set (the pause, in the summary and the\n"
	           "manifest). Checks first what `ada diagnose PID` checks.\n"
	           "  --duration SEC     detach after SEC seconds (fractions allowed)\n"
	           "  --call-timeout SEC how long the agent's dlopen in the process may take\n"
	           "                     (default 10): a thread stopped while holding a lock\n"
	           "                     dlopen needs would make it wait for ever\n"
	           "The options of ada record apply (but --no-agent): see ada record --help.\n");
}

static int record_u64(const char *opt, const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-') {
		ada_log("%s wants a non-negative number, not '%s'", opt, v);
		return -1;
	}
	*out = x;
	return 0;
}

enum {
	OPT_OUT = 256,
	OPT_RING_MB,
	OPT_PEAK,
	OPT_BURST,
	OPT_THREADS,
	OPT_THREAD_LIMIT,
	OPT_OVERFLOW,
	OPT_DRAIN_CPU,
	OPT_SEGMENT,
	OPT_INDEX_FORMAT,
	OPT_INDEX_BLOCK,
	OPT_FLUSH,
	OPT_SAFE,
	OPT_MAXDISK,
	OPT_MAXSHM,
	OPT_NOFOLLOW,
	OPT_NOAGENT,
	OPT_HELP,
	OPT_EXCLUDE,
	OPT_INCLUDE,
	OPT_EXCLUDE_SYM,
	OPT_INCLUDE_SYM,
	OPT_ANALYSIS_THREADS,
	OPT_TRIGGER,
	OPT_PRE_ROLL,
	OPT_POST_ROLL,
	OPT_MAX_WINDOWS,
	OPT_HOLDOFF,
	OPT_DETAIL,
	OPT_STACK_BYTES,
	OPT_DETAIL_MB,
	OPT_DETAIL_SYMS,
	OPT_DETAIL_OVERFLOW,
	OPT_KEY_SYMS,
	OPT_BLOB,
	OPT_DURATION,     /* ada attach only */
	OPT_CALL_TIMEOUT, /* ada attach only */
};

static const struct option record_opts[] = {
    {"out", required_argument, 0, OPT_OUT},
    {"ring-mb", required_argument, 0, OPT_RING_MB},
    {"peak-rate", required_argument, 0, OPT_PEAK},
    {"burst-ms", required_argument, 0, OPT_BURST},
    {"max-threads", required_argument, 0, OPT_THREADS},
    {"thread-limit", required_argument, 0, OPT_THREAD_LIMIT},
    {"overflow", required_argument, 0, OPT_OVERFLOW},
    {"drain-cpu", required_argument, 0, OPT_DRAIN_CPU},
    {"segment-mb", required_argument, 0, OPT_SEGMENT},
    {"index-format", required_argument, 0, OPT_INDEX_FORMAT},
    {"index-block-kb", required_argument, 0, OPT_INDEX_BLOCK},
    {"flush", required_argument, 0, OPT_FLUSH},
    {"safe", no_argument, 0, OPT_SAFE},
    {"max-disk-mb", required_argument, 0, OPT_MAXDISK},
    {"max-shm-mb", required_argument, 0, OPT_MAXSHM},
    {"no-follow", no_argument, 0, OPT_NOFOLLOW},
    {"no-agent", no_argument, 0, OPT_NOAGENT},
    {"help", no_argument, 0, OPT_HELP},
    {"exclude", required_argument, 0, OPT_EXCLUDE},
    {"include", required_argument, 0, OPT_INCLUDE},
    {"exclude-symbol", required_argument, 0, OPT_EXCLUDE_SYM},
    {"include-symbol", required_argument, 0, OPT_INCLUDE_SYM},
    {"analysis-threads", required_argument, 0, OPT_ANALYSIS_THREADS},
    {"trigger", required_argument, 0, OPT_TRIGGER},
    {"pre-roll-sec", required_argument, 0, OPT_PRE_ROLL},
    {"post-roll-sec", required_argument, 0, OPT_POST_ROLL},
    {"max-windows", required_argument, 0, OPT_MAX_WINDOWS},
    {"trigger-holdoff-ms", required_argument, 0, OPT_HOLDOFF},
    {"detail", required_argument, 0, OPT_DETAIL},
    {"stack-bytes", required_argument, 0, OPT_STACK_BYTES},
    {"detail-mb", required_argument, 0, OPT_DETAIL_MB},
    {"detail-symbols", required_argument, 0, OPT_DETAIL_SYMS},
    {"detail-overflow", required_argument, 0, OPT_DETAIL_OVERFLOW},
    {"key-symbols", required_argument, 0, OPT_KEY_SYMS},
    {"blob", required_argument, 0, OPT_BLOB},
    {"duration", required_argument, 0, OPT_DURATION},
    {"call-timeout", required_argument, 0, OPT_CALL_TIMEOUT},
    {0, 0, 0, 0},
};

/* Appends key=value to ADA_HOOK_CONFIG (agent options, src/hook/hook.h). */
static int record_hook_opt(struct rec_args *a, const char *key, const char *v)
{
	size_t used = strlen(a->hook_config);
	if (!*v || strchr(v, ';') || strchr(v, '=')) {
		ada_log("--%s takes globs separated by ',' (no ';' or '='), not '%s'", key, v);
		return -1;
	}
	int n = snprintf(a->hook_config + used, sizeof(a->hook_config) - used, "%s%s=%s",
	                 used ? ";" : "", key, v);
	if (n < 0 || (size_t)n >= sizeof(a->hook_config) - used) {
		ada_log("too many --exclude/--include options");
		return -1;
	}
	return 0;
}

/* --trigger SPEC: checked here, before anything is created. */
static int record_trigger(struct rec_args *a, const char *v)
{
	char why[400];
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

static int record_seconds(const char *opt, const char *v, uint64_t *ns)
{
	if (ada_trigger_parse_seconds(v, ns) < 0 || *ns > 3600ull * 1000000000ull) {
		ada_log("%s wants seconds between 0 and 3600 (fractions allowed, e.g. 0.5), not "
		        "'%s'",
		        opt, v);
		return -1;
	}
	return 0;
}

/* The flight recorder's options; 0 or -1 (bad). */
static int record_flight_opt(struct rec_args *a, int c, const char *v)
{
	uint64_t x = 0;
	switch (c) {
	case OPT_TRIGGER:
		return record_trigger(a, v);
	case OPT_PRE_ROLL:
		return record_seconds("--pre-roll-sec", v, &a->flight.pre_ns);
	case OPT_POST_ROLL:
		return record_seconds("--post-roll-sec", v, &a->flight.post_ns);
	case OPT_MAX_WINDOWS:
		if (record_u64("--max-windows", v, &x) < 0)
			return -1;
		if (x == 0 || x > 100000) {
			ada_log("--max-windows wants 1 to 100000 windows, not '%s'", v);
			return -1;
		}
		a->flight.max_windows = (uint32_t)x;
		return 0;
	default: /* OPT_HOLDOFF */
		if (record_u64("--trigger-holdoff-ms", v, &x) < 0)
			return -1;
		if (x > 86400000) {
			ada_log("--trigger-holdoff-ms wants at most 86400000 (a day), not '%s'", v);
			return -1;
		}
		a->flight.holdoff_ns = x * 1000000;
		return 0;
	}
}

/* The detail lane's options; -1 (reported) when bad. */
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

static int record_detail_opt(struct rec_args *a, int c, const char *v)
{
	switch (c) {
	case OPT_DETAIL:
		if (!strcmp(v, "triggered"))
			a->detail_mode = ADA_DETAIL_TRIGGERED;
		else if (!strcmp(v, "always"))
			a->detail_mode = ADA_DETAIL_ALWAYS;
		else if (!strcmp(v, "never"))
			a->detail_mode = ADA_DETAIL_NEVER;
		else {
			ada_log("--detail is triggered, always or never, not '%s'", v);
			return -1;
		}
		return 0;
	case OPT_STACK_BYTES:
		if (record_u64("--stack-bytes", v, &a->stack_bytes) < 0)
			return -1;
		if (a->stack_bytes > ATF_DETAIL_STACK_MAX) {
			ada_log("--stack-bytes takes 0 to %u bytes, not '%s'", ATF_DETAIL_STACK_MAX,
			        v);
			return -1;
		}
		return 0;
	case OPT_DETAIL_MB:
		if (record_u64("--detail-mb", v, &a->detail_mb) < 0)
			return -1;
		if (a->detail_mb < 1 || a->detail_mb > (ADA_DETAIL_MAX_BYTES >> 20)) {
			ada_log("--detail-mb takes 1 to %llu MiB per thread, not '%s'",
			        (unsigned long long)(ADA_DETAIL_MAX_BYTES >> 20), v);
			return -1;
		}
		return 0;
	case OPT_DETAIL_OVERFLOW:
		if (!strcmp(v, "wait"))
			a->detail_overflow = 1;
		else if (!strcmp(v, "overwrite"))
			a->detail_overflow = 0;
		else {
			ada_log("--detail-overflow is wait or overwrite, not '%s'", v);
			return -1;
		}
		return 0;
	default: /* OPT_DETAIL_SYMS */
		if (!*v || strchr(v, ';') || strchr(v, '=')) {
			ada_log(
			    "--detail-symbols takes globs separated by ',' (no ';' or '='), not "
			    "'%s'",
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
}

/* --key-symbols FILE and --blob MODULE_ID=FILE (src/keysym: the spec). */
static int record_keysym_opt(struct rec_args *a, int c, const char *v)
{
	char why[320] = "";
	if (!a->ks && ada_keysym_spec_new(&a->ks) < 0) {
		ada_log("out of memory");
		return -1;
	}
	a->ks_given = true;
	if (c == OPT_KEY_SYMS) {
		int err = cmd_keysym_read_rules(a->ks, v, why, sizeof(why));
		if (err)
			ada_log("--key-symbols %s: %s", v, why);
		return err ? -1 : 0;
	}
	int err = cmd_keysym_read_blob(a->ks, v, why, sizeof(why));
	if (err)
		ada_log("--blob %s: %s", v, why);
	return err ? -1 : 0;
}

/* One option; returns 0, 1 (--help: done) or -1 (bad). */
static int record_opt(struct rec_args *a, int c, const char *v)
{
	uint64_t x = 0;
	switch (c) {
	case OPT_OUT:
		a->out = v;
		return 0;
	case OPT_RING_MB:
		return record_u64("--ring-mb", v, &a->ring_mb);
	case OPT_PEAK:
		return record_u64("--peak-rate", v, &a->peak_rate);
	case OPT_BURST:
		return record_u64("--burst-ms", v, &a->burst_ms);
	case OPT_THREADS:
		if (record_u64("--max-threads", v, &x) < 0)
			return -1;
		a->max_threads = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
		return 0;
	case OPT_THREAD_LIMIT:
		if (record_u64("--thread-limit", v, &x) < 0)
			return -1;
		a->thread_limit = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
		return 0;
	case OPT_OVERFLOW:
		if (strcmp(v, "wait") && strcmp(v, "drop")) {
			ada_log("--overflow is wait or drop, not '%s'", v);
			return -1;
		}
		a->overflow = !strcmp(v, "drop") ? ADA_OVERFLOW_DROP : ADA_OVERFLOW_WAIT;
		return 0;
	case OPT_DRAIN_CPU:
		if (record_u64("--drain-cpu", v, &x) < 0)
			return -1;
		a->drain_cpu = (int)x;
		return 0;
	case OPT_SEGMENT:
		return record_u64("--segment-mb", v, &a->segment_mb);
	case OPT_INDEX_FORMAT:
		if (strcmp(v, "atf") && strcmp(v, "compact")) {
			ada_log("--index-format is atf or compact, not '%s'", v);
			return -1;
		}
		a->index_format = !strcmp(v, "compact") ? ADA_INDEX_COMPACT : ADA_INDEX_ATF;
		return 0;
	case OPT_INDEX_BLOCK:
		if (record_u64("--index-block-kb", v, &x) < 0)
			return -1;
		if (x < 4 || x > 1024) {
			ada_log("--index-block-kb is 4 to 1024, not '%s'", v);
			return -1;
		}
		a->index_block = (uint32_t)(x << 10);
		return 0;
	case OPT_FLUSH:
		if (ada_flush_parse(v, &a->flush) < 0) {
			ada_log("--flush is off, interval:MS, bytes:N or rotate, not '%s'", v);
			return -1;
		}
		return 0;
	case OPT_SAFE:
		a->flush.safe = 1;
		return 0;
	case OPT_MAXDISK:
		if (record_u64("--max-disk-mb", v, &a->max_disk_mb) < 0)
			return -1;
		if (a->max_disk_mb > (UINT64_MAX >> 21)) {
			ada_log("--max-disk-mb %s is more than any disk holds; use 0 for no limit",
			        v);
			return -1;
		}
		return 0;
	case OPT_MAXSHM:
		if (record_u64("--max-shm-mb", v, &a->max_shm_mb) < 0)
			return -1;
		if (a->max_shm_mb > (UINT64_MAX >> 21)) {
			ada_log("--max-shm-mb %s is more than any machine has; use 0 for no limit",
			        v);
			return -1;
		}
		return 0;
	case OPT_NOFOLLOW:
		a->follow = false;
		return 0;
	case OPT_NOAGENT:
		a->agent = false;
		return 0;
	case OPT_HELP:
		if (a->attach)
			attach_usage(stdout);
		else
			record_usage(stdout);
		return 1;
	case OPT_DURATION:
		if (!a->attach) {
			ada_log("--duration is an option of ada attach; ada record ends with its "
			        "program");
			return -1;
		}
		return record_seconds("--duration", v, &a->duration_ns);
	case OPT_CALL_TIMEOUT:
		if (!a->attach) {
			ada_log("--call-timeout is an option of ada attach");
			return -1;
		}
		if (record_seconds("--call-timeout", v, &a->call_timeout_ns) < 0)
			return -1;
		if (a->call_timeout_ns == 0) {
			ada_log("--call-timeout wants more than 0 seconds");
			return -1;
		}
		return 0;
	case OPT_EXCLUDE:
		return record_hook_opt(a, "exclude", v);
	case OPT_INCLUDE:
		return record_hook_opt(a, "include", v);
	case OPT_EXCLUDE_SYM:
		return record_hook_opt(a, "exclude-symbol", v);
	case OPT_ANALYSIS_THREADS:
		if (strcmp(v, "1") && strcmp(v, "2")) {
			ada_log(
			    "--analysis-threads takes 1 or 2, not '%s' (e.g. --analysis-threads 2)",
			    v);
			return -1;
		}
		return record_hook_opt(a, "analysis-threads", v);
	case OPT_INCLUDE_SYM:
		return record_hook_opt(a, "include-symbol", v);
	case OPT_TRIGGER:
	case OPT_PRE_ROLL:
	case OPT_POST_ROLL:
	case OPT_MAX_WINDOWS:
	case OPT_HOLDOFF:
		return record_flight_opt(a, c, v);
	case OPT_DETAIL:
	case OPT_STACK_BYTES:
	case OPT_DETAIL_MB:
	case OPT_DETAIL_SYMS:
	case OPT_DETAIL_OVERFLOW:
		return record_detail_opt(a, c, v);
	case OPT_KEY_SYMS:
	case OPT_BLOB:
		return record_keysym_opt(a, c, v);
	default:
		if (a->attach)
			attach_usage(stderr);
		else
			record_usage(stderr);
		return -1;
	}
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

/* --detail always: does a thread with a full detail ring wait for the
 * drain? --detail-overflow, else what --overflow says for the index lane. */
static uint32_t record_detail_wait(const struct rec_args *a)
{
	if (a->detail_mode != ADA_DETAIL_ALWAYS)
		return 0;
	if (a->detail_overflow >= 0)
		return (uint32_t)a->detail_overflow;
	return a->overflow == ADA_OVERFLOW_WAIT;
}

int record_parse(struct rec_args *a, int argc, char **argv, bool attach)
{
	memset(a, 0, sizeof(*a));
	a->attach = attach;
	a->out = "ada_traces";
	a->drain_cpu = -1;
	a->max_disk_mb = UINT64_MAX; /* not given: the default budget */
	a->max_shm_mb = UINT64_MAX;  /* not given: the default ceiling */
	a->follow = a->agent = true;
	a->stack_bytes = 128;
	a->detail_overflow = -1; /* not given: follows --overflow */
	a->call_timeout_ns = ADA_ATTACH_CALL_TIMEOUT_NS;
	a->flush = (struct ada_flush_policy){.mode = ADA_FLUSH_INTERVAL, .value = 1000};
	a->flight = (struct ada_trigger_opts){.pre_ns = ADA_TRIGGER_DEFAULT_PRE_NS,
	                                      .post_ns = ADA_TRIGGER_DEFAULT_POST_NS,
	                                      .max_windows = ADA_TRIGGER_DEFAULT_MAX_WINDOWS,
	                                      .holdoff_ns = ADA_TRIGGER_DEFAULT_HOLDOFF_NS};
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "+h", record_opts, NULL)) != -1) {
		int r = record_opt(a, c == 'h' ? OPT_HELP : c, optarg);
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

/* One sentence for the first failed check of rep; -1 when one failed. */
int cmd_diag_refuse(const char *verb, const struct ada_diag_report *rep)
{
	const struct ada_diag_check *c = ada_diag_first_fail(rep);
	if (!c)
		return 0;
	char line[2048];
	ada_diag_sentence(c, line, sizeof(line));
	ada_log("cannot %s: %s", verb, line);
	return -1;
}

/* The machine: room for --out and the rings, io_uring (what would make
 * the recording fail once started). Warnings are `ada diagnose`'s. */
int record_check_host(const struct rec_args *a, const struct ada_arena_config *ring)
{
	struct ada_diag_opts o = {
	    .groups = ADA_DIAG_HOST, .out_dir = a->out, .ring = ring, .agent = a->agent};
	struct ada_diag_report *rep = malloc(sizeof(*rep));
	int rc = rep && ada_diag_run(&o, rep) == 0 ? cmd_diag_refuse("record", rep) : -1;
	if (!rep)
		ada_log("cannot check the machine: %s", strerror(ENOMEM));
	free(rep);
	return rc;
}

/* ---- the ring config and the environment ---- */

/* The detail ring per thread: --detail-mb rounded down to a power of two.
 * Without it: ADA_DETAIL_DEFAULT_MB, or, when triggers are armed, room for
 * the pre-roll at an assumed ADA_DETAIL_ASSUMED_CALLS calls a second per
 * thread (one CALL and one RETURN record each), rounded up to a power of
 * two and capped at ADA_DETAIL_DERIVED_MAX_MB (docs/benchmarks.md says
 * what a ring holds at measured rates). None with --detail never. */
#define ADA_DETAIL_DEFAULT_MB 1u
#define ADA_DETAIL_ASSUMED_CALLS 100000ull
#define ADA_DETAIL_DERIVED_MAX_MB 16u
static uint64_t record_detail_bytes(const struct rec_args *a)
{
	if (a->detail_mode == ADA_DETAIL_NEVER)
		return 0;
	uint64_t want = (uint64_t)ADA_DETAIL_DEFAULT_MB << 20, p = 1;
	if (a->detail_mb) {
		want = a->detail_mb << 20;
	} else if (a->ntriggers) {
		/* ring bytes per call: header words + CALL record + stack, RETURN record */
		uint64_t per_call = 8 + ADA_DREC_CALL_WORDS * 8 + ((a->stack_bytes + 7) & ~7ull) +
		                    8 + ADA_DREC_RETURN_WORDS * 8;
		uint64_t ms = a->flight.pre_ns / 1000000;
		uint64_t need = ADA_DETAIL_ASSUMED_CALLS * per_call / 1000 * (ms ? ms : 1);
		uint64_t cap = (uint64_t)ADA_DETAIL_DERIVED_MAX_MB << 20;
		want = need > cap ? cap : need < want ? want : need;
		while (p < want)
			p *= 2;
		return p;
	}
	while (p * 2 <= want)
		p *= 2;
	return p;
}

/* --key-symbols / --blob: the agent's own set until the recorder
 * publishes the first (src/keysym): the rules as key-symbol=MOD:SYM when
 * they all fit its config, else none at all ("!:!" matches no module),
 * so start-up calls miss detail rather than get it unasked. */
static int record_keysym_agent(struct rec_args *a)
{
	size_t n = ada_keysym_spec_rules(a->ks);
	bool fits = n > 0 && n <= 32; /* ADA_HOOK_MAX_GLOBS (src/hook/hook.h) */
	for (size_t i = 0; fits && i < n; i++) {
		const char *m, *s;
		ada_keysym_spec_rule(a->ks, i, &m, &s);
		fits = !strpbrk(m, ",;=:") && !strpbrk(s, ",;=") && strlen(m) + strlen(s) < 500;
	}
	if (!fits)
		return record_hook_opt(a, "key-symbol", "!:!");
	for (size_t i = 0; i < n; i++) {
		const char *m, *s;
		char rule[1024];
		ada_keysym_spec_rule(a->ks, i, &m, &s);
		snprintf(rule, sizeof(rule), "%s:%s", m, s);
		if (record_hook_opt(a, "key-symbol", rule) < 0)
			return -1;
	}
	return 0;
}

/* The agent's side of the detail lane (ADA_HOOK_CONFIG); the
 * --detail-symbols globs were added while parsing. */
int record_detail_hook_config(struct rec_args *a)
{
	if (a->detail_mode == ADA_DETAIL_NEVER)
		return 0;
	if (a->ks_given && record_keysym_agent(a) < 0)
		return -1;
	size_t used = strlen(a->hook_config);
	int n = snprintf(a->hook_config + used, sizeof(a->hook_config) - used,
	                 "%sdetail=1;stack-bytes=%llu", used ? ";" : "",
	                 (unsigned long long)a->stack_bytes);
	if (n < 0 || (size_t)n >= sizeof(a->hook_config) - used) {
		ada_log("too many --exclude/--include/--detail-symbols options");
		return -1;
	}
	return 0;
}

int record_ring_config(const struct rec_args *a, bool tsc, struct ada_arena_config *out, char *buf,
                       size_t cap)
{
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	if (a->ring_mb) {
		uint64_t ev = (a->ring_mb << 20) / ATF_INDEX_EVENT_SIZE, p = 1;
		while (p * 2 <= ev)
			p *= 2;
		cfg.index_events = p;
	}
	if (a->peak_rate)
		cfg.index_events =
		    ada_ring_capacity_for_rate(a->peak_rate, a->burst_ms ? a->burst_ms : 50);
	if (a->max_threads)
		cfg.max_threads = a->max_threads;
	/* Spill slots up to the thread limit (none when it is not above
	 * max_threads), with rings no bigger than the full ones. */
	uint32_t limit = a->thread_limit ? a->thread_limit : ADA_ARENA_DEFAULT_THREAD_LIMIT;
	if (limit > cfg.max_threads) {
		cfg.spill_threads = limit - cfg.max_threads;
		cfg.spill_events = ADA_ARENA_DEFAULT_SPILL_EVENTS;
		if (cfg.spill_events > cfg.index_events)
			cfg.spill_events = (uint32_t)cfg.index_events;
	}
	cfg.overflow = (uint32_t)a->overflow;
	cfg.timestamp_source = tsc ? ADA_TS_TSC : ADA_TS_CLOCK;
	cfg.detail_bytes = record_detail_bytes(a);
	cfg.detail_wait = record_detail_wait(a);
	/* The key-symbol area: 1 MiB per process with the detail lane. */
	cfg.keysym_log2 = a->detail_mode == ADA_DETAIL_NEVER ? 0 : 20;
	if (ada_arena_config_valid(&cfg) < 0) {
		ada_log("the ring settings are out of range (ring %llu events, %u threads, thread "
		        "limit %u, at most %u): see ada record --help",
		        (unsigned long long)cfg.index_events, cfg.max_threads, limit,
		        ADA_ARENA_SLOTS_LIMIT);
		return -1;
	}
	*out = cfg;
	return ada_arena_config_format(&cfg, buf, cap) < 0 ? -1 : 0;
}

int record_agent_path(char *buf, size_t cap)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -1;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(buf, cap, "%.*s/libada_agent.so", (int)(cap - 32), self) >= cap)
		return -1;
	return access(buf, R_OK) == 0 ? 0 : -1;
}

/* The drain's notices (a quarantined thread, an ignored arena). */
void record_notice(void *arg, const char *sentence)
{
	(void)arg;
	ada_log("%s", sentence);
}

/* The agent's pid_N/agent.json of the main process: hook counts and time
 * (issue 4 asks for them at the end of the run). Silent when absent. */
void record_print_hooks(const char *dir, pid_t pid)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/pid_%d/agent.json", dir, (int)pid) >=
	    sizeof(path))
		return;
	int fd = -1;
	json_t *a = NULL;
	if (ada_fs_open_file(AT_FDCWD, path, O_RDONLY, &fd) == 0) {
		a = json_loadfd(fd, 0, NULL);
		close(fd);
	}
	if (!json_is_object(a)) {
		json_decref(a);
		return;
	}
	json_int_t skipped = 0;
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(a, "skipped"), k, v) skipped += json_integer_value(v);
	json_t *t = json_object_get(a, "hook_time_us");
	fprintf(stderr,
	        "ada: hooked %lld functions (%lld skipped) in %.1f ms (arena set-up %.1f ms)\n",
	        (long long)json_integer_value(json_object_get(a, "installed")), (long long)skipped,
	        (double)json_integer_value(json_object_get(t, "total")) / 1e3,
	        (double)json_integer_value(json_object_get(t, "arena")) / 1e3);
	json_decref(a);
}

/* untraced_calls of one pid_N/agent.json added to sum[0..2]: shadow_full,
 * unmatched_return, nested_signal (the agent's own work is not the
 * program's calls); its stack_switches to sum[3..4]: switches, frames_cut;
 * its calls after it judged the recorder gone to sum[5]. */
static void record_add_untraced(const char *path, json_int_t sum[6])
{
	int fd = -1;
	json_t *a = NULL;
	if (ada_fs_open_file(AT_FDCWD, path, O_RDONLY, &fd) == 0) {
		a = json_loadfd(fd, 0, NULL);
		close(fd);
	}
	json_t *u = json_object_get(a, "untraced_calls");
	static const char *const keys[3] = {"shadow_full", "unmatched_return", "nested_signal"};
	for (int k = 0; k < 3; k++) {
		json_int_t v = json_integer_value(json_object_get(u, keys[k]));
		if (v > 0)
			sum[k] += v;
	}
	/* Returns not traced: frames cut by a stack switch (greenlet). */
	/* The drain stood still past the producers' timeout: the agent
	 * stopped tracing (docs/hooks.md, untraced_calls.recorder_gone). */
	json_int_t gone = json_integer_value(json_object_get(u, "recorder_gone"));
	if (gone > 0)
		sum[5] += gone;
	json_t *w = json_object_get(a, "stack_switches");
	static const char *const wkeys[2] = {"switches", "frames_cut"};
	for (int k = 0; k < 2; k++) {
		json_int_t v = json_integer_value(json_object_get(w, wkeys[k]));
		if (v > 0)
			sum[3 + k] += v;
	}
	json_decref(a);
}

/* Calls the agents did not trace, over every process (issue 14: whatever
 * is untraced is on the summary; docs/hooks.md, untraced_calls). */
static void record_print_untraced(const char *dir)
{
	json_int_t sum[6] = {0, 0, 0, 0, 0, 0};
	DIR *d = ada_fs_opendir(AT_FDCWD, dir);
	if (!d)
		return;
	struct dirent *de;
	char path[PATH_MAX];
	for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)) != NULL; n++) {
		int pid;
		char tail;
		if (sscanf(de->d_name, "pid_%d%c", &pid, &tail) != 1 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s/agent.json", dir, de->d_name) >=
		        sizeof(path))
			continue;
		record_add_untraced(path, sum);
	}
	closedir(d);
	if (sum[4] > 0)
		fprintf(stderr,
		        "ada: %lld returns were not traced: their frames were cut at %lld stack "
		        "switches by copying (greenlet); see pid_*/agent.json\n",
		        (long long)sum[4], (long long)sum[3]);
	if (sum[5] > 0)
		fprintf(stderr,
		        "ada: %lld calls were not traced after the program's threads judged the "
		        "recorder gone (its drain stood still past their timeout); see "
		        "pid_*/agent.json\n",
		        (long long)sum[5]);
	if (sum[0] + sum[1] + sum[2] == 0)
		return;
	fprintf(stderr,
	        "ada: %lld calls were not traced (shadow stack full %lld, threads stopped after "
	        "a return no frame matched %lld, signal handlers nested too deep %lld); see "
	        "pid_*/agent.json\n",
	        (long long)(sum[0] + sum[1] + sum[2]), (long long)sum[0], (long long)sum[1],
	        (long long)sum[2]);
}

/* " (ring_full N, ...)": the drop reasons that counted, both lanes summed
 * (`ada status` prints them the same way). */
static void record_drop_reasons(const struct ada_record_summary *s, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < ADA_DROP_REASON_COUNT && used < cap; k++) {
		uint64_t n = s->drops_by[0][k] + s->drops_by[1][k];
		if (!n)
			continue;
		int w = snprintf(buf + used, cap - used, "%s%s %llu", used ? ", " : " (",
		                 ada_drop_reason_name((unsigned)k), (unsigned long long)n);
		if (w < 0 || (size_t)w >= cap - used)
			break;
		used += (size_t)w;
	}
	if (used && used + 2 <= cap)
		memcpy(buf + used, ")", 2);
}

/* --detail triggered: what the flight recorder kept. Its rings overwriting
 * what no window wanted is how it works, not a loss (the drops above
 * count window_lost, what a window wanted and did not get). */
static void record_print_flight(const struct ada_record_summary *s)
{
	uint64_t lost = s->drops_by[ADA_LANE_DETAIL][ADA_DROP_WINDOW_LOST];
	char why[256] = "", hint[160] = "";
	uint64_t mib = 1;
	while (mib << 20 < s->detail_ring_suggest && mib < (ADA_DETAIL_MAX_BYTES >> 20) * 2)
		mib *= 2;
	/* What this run's rate says the ring should be: sizing from a
	 * measured rate, for the next run. */
	if (s->detail_ring_suggest && mib <= (ADA_DETAIL_MAX_BYTES >> 20))
		snprintf(hint, sizeof(hint),
		         "; at this run's rate --detail-mb %llu would have held them",
		         (unsigned long long)mib);
	else if (s->detail_ring_suggest)
		snprintf(hint, sizeof(hint),
		         "; at this run's rate even --detail-mb %llu would not hold them: narrow "
		         "--detail-symbols",
		         (unsigned long long)(ADA_DETAIL_MAX_BYTES >> 20));
	if (lost)
		snprintf(why, sizeof(why),
		         ", %llu records windows wanted were already overwritten "
		         "(window_lost drops)%s",
		         (unsigned long long)lost, hint);
	fprintf(stderr,
	        "ada: flight recorder: %llu window%s persisted, %llu detail records persisted, "
	        "%llu older detail records overwritten in memory (not drops)%s\n",
	        (unsigned long long)s->windows, s->windows == 1 ? "" : "s",
	        (unsigned long long)s->detail_records, (unsigned long long)s->detail_overwritten,
	        why);
}

/* --detail always promises every record: say what to do when the rings
 * lapped the drain (--detail-overflow overwrite, or a wait that gave up
 * on a drain that stopped moving). */
static void record_print_always(const struct ada_record_summary *s)
{
	uint64_t lost = s->drops_by[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	/* What keeping every record cost the program (--detail-overflow wait). */
	if (s->detail_waits)
		fprintf(
		    stderr,
		    "ada: --detail always: the program's threads waited %llu times (%.3f s in all) "
		    "for the drain to persist detail records; a larger --detail-mb or a narrower "
		    "--detail-symbols waits less\n",
		    (unsigned long long)s->detail_waits, (double)s->detail_waited_ns / 1e9);
	if (!lost)
		return;
	fprintf(stderr,
	        "ada: --detail always: %llu detail records were overwritten before the drain "
	        "persisted them (detail_overwritten drops); --detail-overflow wait (the "
	        "default), a larger --detail-mb (up to %llu MiB per thread) or a narrower "
	        "--detail-symbols keeps them\n",
	        (unsigned long long)lost, (unsigned long long)(ADA_DETAIL_MAX_BYTES >> 20));
}

void record_print_summary(const struct ada_record_summary *s, const char *dir)
{
	double rate = s->seconds > 0 ? (double)s->events / s->seconds : 0;
	char why[256];
	_Static_assert(ADA_LANE_COUNT <= 2 && ADA_DROP_REASON_COUNT <= 8, "drops_by size");
	record_drop_reasons(s, why, sizeof(why));
	/* The drain thread's CPU per event: what recording costs the machine
	 * besides the program's own hooks (the kernel's write-back apart). */
	double drain_ns = s->events ? (double)s->drain_cpu_ns / (double)s->events : 0;
	/* The index encoding's cost on disk (--index-format). */
	double bpe = s->index_events ? (double)s->index_bytes / (double)s->index_events : 0;
	fprintf(stderr,
	        "ada: recorded %llu events (%.2f M/s) from %u process%s in %.2f s, drops "
	        "%llu%s, disk %llu bytes (index %.2f bytes/event), drain latency p50 %.2f ms "
	        "p99 %.2f ms, drain CPU %.3f s (%.1f ns/event)%s\n",
	        (unsigned long long)s->events, rate / 1e6, s->processes,
	        s->processes == 1 ? "" : "es", s->seconds, (unsigned long long)s->drops, why,
	        (unsigned long long)s->disk_bytes, bpe, (double)s->latency_p50_ns / 1e6,
	        (double)s->latency_p99_ns / 1e6, (double)s->drain_cpu_ns / 1e9, drain_ns,
	        s->abnormal ? ", program ended abnormally" : "");
	/* Lossless, but not free: what the drain running behind cost. */
	if (s->ring_waits)
		fprintf(
		    stderr,
		    "ada: the program's threads waited %llu time%s (%.3f s in all) for ring "
		    "space while the drain wrote behind them; a larger --ring-mb absorbs bursts, "
		    "a faster disk a higher sustained rate\n",
		    (unsigned long long)s->ring_waits, s->ring_waits == 1 ? "" : "s",
		    (double)s->ring_waited_ns / 1e9);
	if (s->detail_mode == ADA_DETAIL_TRIGGERED)
		record_print_flight(s);
	else if (s->detail_mode == ADA_DETAIL_ALWAYS)
		record_print_always(s);
	if (s->untraced_procs)
		fprintf(stderr,
		        "ada: %llu process%s ran untraced: the shared-memory ceiling of %.1f MiB "
		        "was reached (peak %.1f MiB)\n",
		        (unsigned long long)s->untraced_procs, s->untraced_procs == 1 ? "" : "es",
		        (double)s->shm_ceiling / 1048576.0, (double)s->shm_peak / 1048576.0);
	if (s->pid_reused)
		fprintf(
		    stderr,
		    "ada: %u process%s not recorded: each took the pid of an earlier process of "
		    "the recording (pid reuse; a larger kernel.pid_max makes it rarer)\n",
		    s->pid_reused, s->pid_reused == 1 ? " was" : "es were");
	if (s->shm_leftover)
		fprintf(stderr,
		        "ada: removed %u entr%s of the arena directory that the recorder had not "
		        "read (arenas it refused or that were never completed)\n",
		        s->shm_leftover, s->shm_leftover == 1 ? "y" : "ies");
	if (s->retired_gens)
		fprintf(
		    stderr,
		    "ada: the disk budget of %.1f MiB%s deleted the %llu oldest index "
		    "generation%s (%llu events, %llu bytes); the session keeps the most recent "
		    "data\n",
		    (double)s->budget_bytes / 1048576.0, s->budget_default ? " (the default)" : "",
		    (unsigned long long)s->retired_gens, s->retired_gens == 1 ? "" : "s",
		    (unsigned long long)s->retired_events, (unsigned long long)s->retired_bytes);
	if (s->disk_full)
		fprintf(stderr,
		        "ada: the disk filled up: recording stopped early, %llu events were "
		        "not written; the files hold what was written and are valid\n",
		        (unsigned long long)s->lost_enospc);
	record_print_untraced(dir);
	fprintf(stderr, "%s\n", dir); /* last: scripts take the session from it */
}

static int record_live(void *ctx, struct ada_recorder_live *out)
{
	return ada_recorder_live(ctx, out);
}

/* The control socket (src/control): `ada arm/disarm/trigger/status PID`
 * and any JSON-RPC client. Listening before PROGRAM starts (a client that
 * comes at once waits in the backlog); its thread starts after the fork
 * (ada_control_start), so the child is forked from a single thread.
 * Without it the recording still runs (said). */
struct ada_control *record_control(struct ada_recorder *r, const struct rec_args *a)
{
	struct ada_control_host h = {
	    .trig = ada_recorder_triggers(r),
	    .detail_mode = a->detail_mode,
	    .session_fd = ada_recorder_session_fd(r),
	    .session_dir = ada_recorder_session_dir(r),
	    .live = record_live,
	    .keysym = cmd_keysym_host,
	    .keysym_version = cmd_keysym_version,
	    .keysym_cover = cmd_keysym_cover,
	    .ctx = r,
	};
	struct ada_control *c = NULL;
	int rc = ada_control_new(&h, &c);
	if (rc == 0)
		rc = ada_control_listen(c, h.session_fd);
	if (rc < 0) {
		ada_log("no control socket (%s): `ada arm/disarm/trigger/status PID` cannot reach "
		        "this recording; it records all the same",
		        strerror(-rc));
		ada_control_free(c);
		return NULL;
	}
	return c;
}

void record_raise_nofile(struct rlimit *orig)
{
	if (getrlimit(RLIMIT_NOFILE, orig) != 0) {
		orig->rlim_cur = orig->rlim_max = RLIM_INFINITY; /* nothing to give back */
		return;
	}
	struct rlimit up = *orig;
	up.rlim_cur = up.rlim_max;
	if (up.rlim_cur != orig->rlim_cur && setrlimit(RLIMIT_NOFILE, &up) != 0) {
		/* the drain counts what it cannot open (lost events, a warning) */
	}
}
