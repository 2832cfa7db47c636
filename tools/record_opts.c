/*
 * What ada record and ada attach share besides their options (struct
 * rec_args, parsed by record_table.c): the checks before anything is
 * created, the ring and agent configuration, the control socket and the
 * summary.
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
#include "manifest.h"
#include "ring.h"
#include "ring_reaped.h"
#include "wal.h"

#include "record.h"

/* Appends key=value to ADA_HOOK_CONFIG (agent options, src/hook/hook.h). */
int record_hook_opt(struct rec_args *a, const char *key, const char *v)
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
		uint64_t per_call =
		    8 + (a->detail_fp ? ADA_DREC_CALL_FP_WORDS : ADA_DREC_CALL_WORDS) * 8 +
		    ((a->stack_bytes + 7) & ~7ull) + 8 +
		    (a->detail_fp ? ADA_DREC_RETURN_FP_WORDS : ADA_DREC_RETURN_WORDS) * 8;
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
static int record_detail_hook_config(struct rec_args *a)
{
	if (a->detail_mode == ADA_DETAIL_NEVER)
		return 0;
	if (a->ks_given && record_keysym_agent(a) < 0)
		return -1;
	size_t used = strlen(a->hook_config);
	int n = snprintf(a->hook_config + used, sizeof(a->hook_config) - used,
	                 "%sdetail=1;stack-bytes=%llu%s", used ? ";" : "",
	                 (unsigned long long)a->stack_bytes, a->detail_fp ? ";detail-fp=1" : "");
	if (n < 0 || (size_t)n >= sizeof(a->hook_config) - used) {
		ada_log("too many --exclude/--include/--detail-symbols options");
		return -1;
	}
	return 0;
}

int record_agent_config(struct rec_args *a)
{
	size_t used = strlen(a->hook_config);
	if (!a->follow)
		snprintf(a->hook_config + used, sizeof(a->hook_config) - used, "%sfollow=0",
		         used ? ";" : "");
	return record_detail_hook_config(a);
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
		a = ada_json_loadfd(fd, ADA_AGENT_JSON_MAX);
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

/* The images traced by offsets for want of symbols: one sentence each on
 * ada's stderr -- not the program's, where the agent runs -- once per
 * path over the session's processes. */
static void record_tell_stripped(const struct ada_agent_sums *g)
{
	for (uint32_t i = 0; i < g->nstripped && i < ADA_AGENT_STRIPPED_MAX; i++) {
		const char *path = g->stripped[i].path, *base = strrchr(path, '/');
		fprintf(stderr,
		        "ada: %s has no symbol table: %lld of its functions, found from .eh_frame, "
		        "are named %s+0xOFFSET (its debug file names them; docs/hooks.md)\n",
		        path, (long long)g->stripped[i].functions, base ? base + 1 : path);
	}
}

/* Calls the agents did not trace, over every process (issue 14: whatever
 * is untraced is on the summary; docs/hooks.md, untraced_calls), as the
 * recorder summed them from each process's agent.json. */
static void record_print_untraced(const int64_t *sum)
{
	if (sum[4] > 0)
		fprintf(stderr,
		        "ada: %lld returns were not traced: their frames were cut at %lld stack "
		        "switches by copying (greenlet); see pid_*/agent.json\n",
		        (long long)sum[4], (long long)sum[3]);
	if (sum[5] > 0)
		fprintf(stderr,
		        "ada: %lld calls were not traced after the program's threads judged the "
		        "recorder gone (its drain stood still past their timeout): their events "
		        "are in drops as recorder_gone; see pid_*/agent.json\n",
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

/* The count-only functions and the budget's moves; when the program waited
 * for ring space, where to look (the budget, the hottest functions). */
static void record_print_count_only(const struct ada_record_summary *s, const struct rec_args *a)
{
	const int64_t *sum = s->agents.counted;
	const char *moved = s->agents.moved, *hot = s->agents.hot;
	if (moved[0])
		fprintf(
		    stderr,
		    "ada: --overhead-budget moved %lld functions to count-only: %s%s; their calls "
		    "before the move are events, after it exact counts (ada report, ada status)\n",
		    (long long)sum[2], moved, sum[2] > 6 ? ", ..." : "");
	if (sum[3])
		fprintf(
		    stderr,
		    "ada: --overhead-budget started %lld functions count-only that it moved in an "
		    "earlier run of the same binary (remembered by build-id beside the plan cache: "
		    "docs/hooks.md, Overhead budget)\n",
		    (long long)sum[3]);
	if (sum[1])
		fprintf(stderr,
		        "ada: %lld calls of %lld count-only functions counted exactly, without "
		        "events (ada report lists them)\n",
		        (long long)sum[0], (long long)sum[1]);
	if (s->agents.excl[0]) {
		size_t shown = 1;
		for (const char *c = s->agents.excl; *c; c++)
			shown += *c == ',';
		char more[96] = "";
		if ((int64_t)shown < s->agents.excl_n)
			snprintf(more, sizeof(more),
			         " and %lld more (count_only.over_budget in the manifest)",
			         (long long)(s->agents.excl_n - (int64_t)shown));
		fprintf(stderr,
		        "ada: --overhead-budget: counts still cost ~%.0f %% of the program's CPU "
		        "(%.1f M calls at ~1.2 ns, an estimate); --exclude-symbol %s%s would bring "
		        "them to ~%.0f %% (docs/hooks.md, Pathological symbols)\n",
		        s->agents.excl_cost_pct, (double)s->agents.excl_calls / 1e6, s->agents.excl,
		        more, s->agents.excl_would_pct);
	}
	if (s->ring_waits && !strstr(a->hook_config, "overhead-budget="))
		fprintf(
		    stderr,
		    "ada: tracing slowed the program (it waited for ring space): "
		    "--overhead-budget 10 moves the hottest short functions to count-only%s%s%s; "
		    "docs/hooks.md, Pathological symbols\n",
		    hot[0] ? " (the last events came from: " : "", hot, hot[0] ? ")" : "");
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

/* A duration for a person: "23 ms", "5 s", "1.5 s", "800 us". */
static void record_span(char *buf, size_t cap, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, cap, "%.3g s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, cap, "%.3g ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.3g us", (double)ns / 1e3);
}

/* The records windows wanted that were neither written nor overwritten,
 * with their reasons ("; 12 records windows wanted were not written
 * (unread_at_end 10, bad_link 2) ..."), or "" when none. */
static void record_window_missed(const struct ada_record_summary *s, char *buf, size_t len)
{
	uint64_t n = 0;
	char why[120] = "";
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++) {
		n += s->window_missed[k];
		int w =
		    s->window_missed[k] && at < sizeof(why)
		        ? snprintf(why + at, sizeof(why) - at, "%s%s %llu", at ? ", " : "",
		                   ada_window_miss_name(k), (unsigned long long)s->window_missed[k])
		        : 0;
		at += w > 0 ? (size_t)w : 0;
	}
	if (n)
		snprintf(buf, len,
		         "; %llu records windows wanted were not written (%s: ada status DIR "
		         "says which window; not drops)",
		         (unsigned long long)n, why);
}

/* --detail triggered: what the flight recorder kept. Its rings overwriting
 * what no window wanted is how it works, not a loss; what a window wanted
 * and its ring no longer held (window_lost) is the window's shortfall,
 * told as what it achieved, with the reason and the change that holds
 * it: not a drop either (the index lane has every call). */
static void record_print_flight(const struct ada_record_summary *s)
{
	uint64_t lost = s->window_lost;
	char why[900] = "", hint[400] = "", got[32] = "", asked[32] = "", rate[96] = "",
	     held[96] = "";
	uint64_t mib = 1;
	while (mib << 20 < s->detail_ring_suggest && mib < (ADA_DETAIL_MAX_BYTES >> 20) * 2)
		mib *= 2;
	/* What this run's rate says the ring should be: sizing from a
	 * measured rate, for the next run. */
	if (s->detail_ring_suggest && mib <= (ADA_DETAIL_MAX_BYTES >> 20) && s->fill_hint[0])
		snprintf(hint, sizeof(hint),
		         "; at this run's rate --detail-mb %llu would have held them, or the same "
		         "ring without %s in the detail set (--detail-symbols, ada keysym: they "
		         "filled it; `ada windows DIR` says it for each window)",
		         (unsigned long long)mib, s->fill_hint);
	else if (s->detail_ring_suggest && mib <= (ADA_DETAIL_MAX_BYTES >> 20))
		snprintf(hint, sizeof(hint),
		         "; at this run's rate --detail-mb %llu would have held them",
		         (unsigned long long)mib);
	else if (s->detail_ring_suggest && s->fill_hint[0])
		snprintf(hint, sizeof(hint),
		         "; at this run's rate even --detail-mb %llu would not hold them: the ring "
		         "without %s in the detail set would (--detail-symbols, ada keysym)",
		         (unsigned long long)(ADA_DETAIL_MAX_BYTES >> 20), s->fill_hint);
	else if (s->detail_ring_suggest)
		snprintf(hint, sizeof(hint),
		         "; at this run's rate even --detail-mb %llu would not hold them: narrow "
		         "--detail-symbols",
		         (unsigned long long)(ADA_DETAIL_MAX_BYTES >> 20));
	record_span(got, sizeof(got), s->pre_got_ns);
	record_span(asked, sizeof(asked), s->pre_asked_ns);
	/* The reason in numbers: the ring, and the rate it filled at. */
	if (s->pre_ring_bytes && s->pre_got_ns)
		snprintf(rate, sizeof(rate), ": a %.3g MiB ring per thread held %s at %.3g MiB/s",
		         (double)s->pre_ring_bytes / (1 << 20), got,
		         (double)s->pre_ring_bytes / (1 << 20) / ((double)s->pre_got_ns / 1e9));
	/* Held back for the program: the other reason the windows were late. */
	if (lost && s->windows_yielded)
		snprintf(held, sizeof(held),
		         "; the CPU was contended: their persist yielded to the program %llu "
		         "times",
		         (unsigned long long)s->windows_yielded);
	if (lost && s->pre_asked_ns)
		snprintf(why, sizeof(why),
		         "; windows got less than they asked: pre-roll achieved %s of %s, %llu "
		         "records windows wanted were already overwritten (window_lost: the detail "
		         "ring filled faster than the windows reached back%s; not drops)%s%s",
		         got, asked, (unsigned long long)lost, rate, held, hint);
	else if (lost)
		snprintf(why, sizeof(why),
		         "; %llu records windows wanted were already overwritten (window_lost: the "
		         "detail ring turned over before the drain persisted them, not drops)%s%s",
		         (unsigned long long)lost, held, hint);
	char missed[200] = "";
	record_window_missed(s, missed, sizeof(missed));
	fprintf(stderr,
	        "ada: flight recorder: %llu window%s persisted, %llu detail records persisted, "
	        "%llu older detail records overwritten in memory (not drops)%s%s\n",
	        (unsigned long long)s->windows, s->windows == 1 ? "" : "s",
	        (unsigned long long)s->detail_records, (unsigned long long)s->detail_overwritten,
	        why, missed);
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

/* The first line: events, rate, processes, drops, disk, the drain. */
static void record_print_recorded(const struct ada_record_summary *s)
{
	double rate = s->seconds > 0 ? (double)s->events / s->seconds : 0;
	char why[256];
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
}

/* Processes the recording left out: the shared-memory ceiling, pid reuse,
 * arenas the recorder never read. */
static void record_print_left_out(const struct ada_record_summary *s)
{
	char why[512];
	/* Recorded, with less detail: the index lane whole. */
	if (ada_shm_budget_reduced_why(&s->shm, why, sizeof(why)))
		fprintf(stderr, "ada: %s\n", why);
	if (ada_shm_budget_untraced_why(&s->shm, why, sizeof(why)))
		fprintf(stderr, "ada: %s\n", why);
	if (ada_shm_budget_failed_why(&s->shm, why, sizeof(why)))
		fprintf(stderr, "ada: %s\n", why);
	if (s->pid_reused)
		fprintf(
		    stderr,
		    "ada: %u process%s not recorded: each took the pid of an earlier process of "
		    "the recording (pid reuse; a larger kernel.pid_max makes it rarer)\n",
		    s->pid_reused, s->pid_reused == 1 ? " was" : "es were");
	const struct ada_wait_status_counts *w = &s->wait_statuses;
	if (w->unknown || w->overwritten || w->refused)
		fprintf(
		    stderr,
		    "ada: %llu process%s exit status unknown; %llu note%s of children reaped by "
		    "their traced parent overwritten in the reaper's table before the recorder "
		    "read them (it reaped more than %u while the recorder was behind), %llu "
		    "refused (torn or implausible)\n",
		    (unsigned long long)w->unknown, w->unknown == 1 ? "'s" : "es'",
		    (unsigned long long)w->overwritten, w->overwritten == 1 ? "" : "s",
		    ADA_REAPED_SLOTS, (unsigned long long)w->refused);
	/* Nothing lost: said when it cost the program (ten or more, a tenth). */
	if (s->pool_misses >= 10 && s->pool_misses * 10 >= s->pool_hits + s->pool_misses)
		fprintf(stderr,
		        "ada: %llu of %llu processes made their arena file anew: the arena pool "
		        "was empty (the recorder behind the program's forks), so each cleared "
		        "its first ring pages itself\n",
		        (unsigned long long)s->pool_misses,
		        (unsigned long long)(s->pool_hits + s->pool_misses));
	if (s->shm_leftover)
		fprintf(stderr,
		        "ada: removed %u entr%s of the arena directory that the recorder had not "
		        "read (arenas it refused or that were never completed)\n",
		        s->shm_leftover, s->shm_leftover == 1 ? "y" : "ies");
}

/* The drain's fallback: it polled instead of sleeping on its doorbell
 * (nothing lost; the recorder's CPU while the program was idle). */
static void record_print_drain(const struct ada_record_summary *s)
{
	char why[160];
	if (ada_drain_polling_why(s->drain_polling_err, why, sizeof(why)))
		fprintf(
		    stderr,
		    "ada: the drain polled every 1 ms instead of sleeping while the program was "
		    "idle: %s; nothing was lost, it cost the recorder CPU (the manifest's "
		    "drain.polling)\n",
		    why);
}

/* What the disk took away: the budget's retired generations, a full disk. */
static void record_print_disk(const struct ada_record_summary *s)
{
	char cut[160] = "";
	if (s->retired_cut)
		snprintf(cut, sizeof(cut),
		         ", %llu of them a live thread's file ended early to be deleted (the files "
		         "being written filled the budget)",
		         (unsigned long long)s->retired_cut);
	if (s->retired_gens)
		fprintf(
		    stderr,
		    "ada: the disk budget of %.1f MiB%s deleted the %llu oldest index "
		    "generation%s (%llu events, %llu bytes), %llu of them the last file of a "
		    "finished thread (its directory with it)%s; the session keeps the most recent "
		    "data, and each manifest's retention says what went\n",
		    (double)s->budget_bytes / 1048576.0, s->budget_default ? " (the default)" : "",
		    (unsigned long long)s->retired_gens, s->retired_gens == 1 ? "" : "s",
		    (unsigned long long)s->retired_events, (unsigned long long)s->retired_bytes,
		    (unsigned long long)s->retired_threads, cut);
	if (s->disk_full)
		fprintf(stderr,
		        "ada: the disk filled up: recording stopped early, %llu events were "
		        "not written; the files hold what was written and are valid%s\n",
		        (unsigned long long)s->lost_enospc,
		        s->detail_cut ? " (the detail files cut back to their last whole record)"
		                      : "");
	if (s->detail_cut)
		fprintf(stderr,
		        "ada: %llu detail record%s could not be written and %s cut from the detail "
		        "files, their index events unlinked (each thread's manifest: detail.cut)\n",
		        (unsigned long long)s->detail_cut, s->detail_cut == 1 ? "" : "s",
		        s->detail_cut == 1 ? "was" : "were");
	if (s->manifests_failed)
		fprintf(stderr,
		        "ada: the manifests of %u process%s could not be written (the first "
		        "reason is above); their files are valid, ada recover can rebuild a "
		        "manifest\n",
		        s->manifests_failed, s->manifests_failed == 1 ? "" : "es");
	if (s->detail_removed)
		fprintf(
		    stderr,
		    "ada: %llu detail file%s could not be sealed, not even empty, and %s removed "
		    "(each thread's manifest: detail.files_removed)\n",
		    (unsigned long long)s->detail_removed, s->detail_removed == 1 ? "" : "s",
		    s->detail_removed == 1 ? "was" : "were");
}

/* One warning for a glob of the command line ("WHAT matches no hooked
 * function; near: ...") that matched no hooked function of the whole
 * recording; nothing when the recording wrote no module table
 * (--no-agent) or the tables cannot be read. */
static void record_warn_unmatched(const char *dir, const char *what, const char *glob)
{
	struct ada_names_match m;
	char line[800];
	if (ada_control_names_match(dir, glob, &m) < 0 || m.scanned == 0 || m.hooked)
		return;
	ada_names_match_sentence(what, &m, line, sizeof(line));
	ada_log("%s", line);
}

/* The symbol, latency and p99 triggers and the --detail-symbols globs
 * given at the start, checked now that every module the program loaded
 * has its table: a name that matched nothing is said, not silently kept
 * (it could not be checked at the start, before the program ran). A
 * trigger that fired is not: the tables left on disk may not have its
 * function any more (the budget deletes a finished process's). */
static void record_print_unmatched(const struct rec_args *a, const char *dir,
                                   const struct ada_trigger_engine *e)
{
	char what[ADA_TRIGGER_TEXT_MAX + 64];
	for (size_t i = 0; i < a->ntriggers; i++) {
		const struct ada_trigger_spec *t = &a->triggers[i];
		if (t->kind != ADA_TRIGGER_SYMBOL && t->kind != ADA_TRIGGER_LATENCY &&
		    t->kind != ADA_TRIGGER_P99)
			continue;
		if (e && ada_trigger_fired(e, t->text))
			continue;
		snprintf(what, sizeof(what), "--trigger %s never fired: it", t->text);
		record_warn_unmatched(dir, what, t->glob);
	}
	for (const char *p = a->detail_symbols; *p;) {
		size_t n = strcspn(p, ",");
		char glob[ADA_TRIGGER_GLOB_MAX];
		snprintf(glob, sizeof(glob), "%.*s", (int)(n < sizeof(glob) ? n : sizeof(glob) - 1),
		         p);
		snprintf(what, sizeof(what),
		         "--detail-symbols %s put nothing in the detail lane: it", glob);
		if (n)
			record_warn_unmatched(dir, what, glob);
		p += n + (p[n] == ',');
	}
}

void record_print_summary(const struct ada_record_summary *s, const struct rec_args *a,
                          const char *dir, const struct ada_trigger_engine *e)
{
	record_print_recorded(s);
	if (s->detail_mode == ADA_DETAIL_TRIGGERED)
		record_print_flight(s);
	else if (s->detail_mode == ADA_DETAIL_ALWAYS)
		record_print_always(s);
	record_print_left_out(s);
	record_print_drain(s);
	record_print_disk(s);
	record_tell_stripped(&s->agents);
	record_print_untraced(s->agents.untraced);
	record_print_count_only(s, a);
	record_print_unmatched(a, dir, e);
	fprintf(stderr, "%s\n", dir); /* last: scripts take the session from it */
}

static int record_live(void *ctx, struct ada_recorder_live *out)
{
	return ada_recorder_live(ctx, out);
}

static void record_wake(void *ctx)
{
	ada_recorder_wake(ctx);
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
	    .wake = record_wake,
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

struct ada_control *record_control_start(struct ada_control *c)
{
	if (c && ada_control_start(c) < 0) {
		ada_log("the control socket could not start: `ada arm/disarm/trigger/status PID` "
		        "cannot reach this recording; it records all the same");
		ada_control_free(c);
		return NULL;
	}
	return c;
}

/* The recorder's options: what ada record and ada attach were given. */
static void record_recorder_opts(const struct rec_args *a, const char *ring_cfg, bool tsc,
                                 char *const *argv, struct ada_recorder_opts *o)
{
	*o = (struct ada_recorder_opts){
	    .out_dir = a->out,
	    .drain_cpu = a->drain_cpu,
	    .segment_bytes = a->segment_mb << 20,
	    .max_disk_bytes = a->max_disk_mb == UINT64_MAX ? 0 : a->max_disk_mb << 20,
	    .max_disk_default = a->max_disk_mb == UINT64_MAX,
	    .max_shm_bytes = a->max_shm_mb == UINT64_MAX ? 0 : a->max_shm_mb << 20,
	    .max_shm_default = a->max_shm_mb == UINT64_MAX,
	    .flush = a->flush,
	    .index_format = (uint8_t)a->index_format,
	    .cidx_block = a->index_block,
	    .follow = a->follow,
	    .force_clock = !tsc,
	    .target_arch = a->target_arch,
	    .ring_config = ring_cfg,
	    .program_argv = (const char *const *)argv,
	    .triggers = a->triggers,
	    .ntriggers = a->ntriggers,
	    .flight = a->flight,
	    .detail_mode = a->detail_mode,
	    .stack_bytes = (uint32_t)a->stack_bytes,
	    .persist_share_pct = (uint32_t)a->persist_share,
	    .window_mem_bytes = a->window_mem_mb << 20,
	    .detail_symbols = a->detail_symbols[0] ? a->detail_symbols : NULL,
	    .key_symbols = a->ks,
	    .attached = a->attach,
	    .notice = record_notice,
	    .vlog = a->verbose || a->log_path,
	    .vlog_fd = STDERR_FILENO,
	};
}

/* --log FILE: the verbose log's descriptor (stderr for -v alone); -1
 * after saying why. A link is not followed: FILE is the user's to name,
 * not a place someone else may point elsewhere. */
static int record_log_fd(const struct rec_args *a)
{
	if (!a->log_path)
		return STDERR_FILENO;
	int fd = open(a->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		ada_log("--log %s: %s", a->log_path, strerror(errno));
	return fd;
}

int record_create(struct rec_args *a, const char *ring_cfg, bool tsc, char *const *argv,
                  struct ada_recorder **r)
{
	struct ada_recorder_opts o;
	if (a->ks_given && a->detail_mode == ADA_DETAIL_NEVER) {
		ada_log(
		    "--key-symbols and --blob choose what enters the detail lane, which --detail "
		    "never turns off: drop one of them");
		return -1;
	}
	record_recorder_opts(a, ring_cfg, tsc, argv, &o);
	if (o.vlog && (o.vlog_fd = record_log_fd(a)) < 0)
		return -1;
	int rc = ada_recorder_new(&o, r);
	ada_keysym_spec_free(a->ks); /* the recorder keeps its own copy */
	a->ks = NULL;
	if (rc < 0) {
		ada_log("cannot create the session under '%s': %s", a->out, strerror(-rc));
		return -1;
	}
	return 0;
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
