/*
 * ada record [options] -- PROGRAM [ARGS...]
 *
 * Checks PROGRAM before anything is created (a bad program leaves no
 * session behind), creates the session through the recorder core
 * (src/wal), spawns PROGRAM with the agent preloaded and the ADA_*
 * environment, becomes the child subreaper so every descendant is ours to
 * reap, lets the drain run until every process is gone, prints a one-line
 * summary and, as the last line on stderr, the session directory. Exits
 * with PROGRAM's status (128 + signal when a signal killed it).
 *
 * Threads: the main thread parses, spawns and waits for the drain thread;
 * it also forwards SIGTERM/SIGHUP to PROGRAM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <jansson.h>
#include <libelf.h>
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
#include "ring.h"
#include "wal.h"

struct rec_args {
	const char *out;
	uint64_t ring_mb, peak_rate, burst_ms;
	uint32_t max_threads;
	int overflow;
	int drain_cpu;
	uint64_t segment_mb, max_disk_mb;
	struct ada_flush_policy flush;
	bool follow, agent;
	/* Agent options (src/hook: ADA_HOOK_CONFIG, ';'-separated key=value)
	 * collected from --exclude/--include/... go here. */
	char hook_config[4096];
	char **prog_argv;
};

static void record_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: ada record [options] -- PROGRAM [ARGS...]\n"
	    "\n"
	    "Records every call and return of PROGRAM into DIR/session_YYYYMMDD_HHMMSS/.\n"
	    "  --out DIR          where sessions go (default ./ada_traces)\n"
	    "  --ring-mb N        index ring per thread, in MiB (rounded down to a power of two)\n"
	    "  --peak-rate R      size rings for R events/s per thread ...\n"
	    "  --burst-ms W       ... over a burst of W ms: capacity K = R x W / 1000 events,\n"
	    "                     rounded up to a power of two (default W = 50)\n"
	    "  --max-threads N    ring slots per process (default %u)\n"
	    "  --overflow MODE    wait (default: lossless, the thread waits for the drain)\n"
	    "                     or drop (count and drop when a ring is full)\n"
	    "  --drain-cpu N      pin the drain thread to CPU N (default: not pinned: on a\n"
	    "                     small machine the scheduler places it better than a\n"
	    "                     fixed CPU that the program's threads also want)\n"
	    "  --segment-mb N     preallocation step of index files (default 64)\n"
	    "  --flush POLICY     off | interval:MS | bytes:N | rotate (default interval:1000)\n"
	    "  --safe             fsync at every new segment and at close\n"
	    "  --max-disk-mb N    keep the session within N MiB: the oldest index\n"
	    "                     generations are deleted first\n"
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
	    "                     excluded: see docs/hooks.md)\n",
	    ADA_ARENA_DEFAULT_MAX_THREADS);
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
	OPT_OVERFLOW,
	OPT_DRAIN_CPU,
	OPT_SEGMENT,
	OPT_FLUSH,
	OPT_SAFE,
	OPT_MAXDISK,
	OPT_NOFOLLOW,
	OPT_NOAGENT,
	OPT_HELP,
	OPT_EXCLUDE,
	OPT_INCLUDE,
	OPT_EXCLUDE_SYM,
	OPT_INCLUDE_SYM,
};

static const struct option record_opts[] = {
    {"out", required_argument, 0, OPT_OUT},
    {"ring-mb", required_argument, 0, OPT_RING_MB},
    {"peak-rate", required_argument, 0, OPT_PEAK},
    {"burst-ms", required_argument, 0, OPT_BURST},
    {"max-threads", required_argument, 0, OPT_THREADS},
    {"overflow", required_argument, 0, OPT_OVERFLOW},
    {"drain-cpu", required_argument, 0, OPT_DRAIN_CPU},
    {"segment-mb", required_argument, 0, OPT_SEGMENT},
    {"flush", required_argument, 0, OPT_FLUSH},
    {"safe", no_argument, 0, OPT_SAFE},
    {"max-disk-mb", required_argument, 0, OPT_MAXDISK},
    {"no-follow", no_argument, 0, OPT_NOFOLLOW},
    {"no-agent", no_argument, 0, OPT_NOAGENT},
    {"help", no_argument, 0, OPT_HELP},
    {"exclude", required_argument, 0, OPT_EXCLUDE},
    {"include", required_argument, 0, OPT_INCLUDE},
    {"exclude-symbol", required_argument, 0, OPT_EXCLUDE_SYM},
    {"include-symbol", required_argument, 0, OPT_INCLUDE_SYM},
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
		a->max_threads = (uint32_t)x;
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
		return record_u64("--max-disk-mb", v, &a->max_disk_mb);
	case OPT_NOFOLLOW:
		a->follow = false;
		return 0;
	case OPT_NOAGENT:
		a->agent = false;
		return 0;
	case OPT_HELP:
		record_usage(stdout);
		return 1;
	case OPT_EXCLUDE:
		return record_hook_opt(a, "exclude", v);
	case OPT_INCLUDE:
		return record_hook_opt(a, "include", v);
	case OPT_EXCLUDE_SYM:
		return record_hook_opt(a, "exclude-symbol", v);
	case OPT_INCLUDE_SYM:
		return record_hook_opt(a, "include-symbol", v);
	default:
		record_usage(stderr);
		return -1;
	}
}

static int record_parse(struct rec_args *a, int argc, char **argv)
{
	memset(a, 0, sizeof(*a));
	a->out = "ada_traces";
	a->drain_cpu = -1;
	a->follow = a->agent = true;
	a->flush = (struct ada_flush_policy){.mode = ADA_FLUSH_INTERVAL, .value = 1000};
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "+h", record_opts, NULL)) != -1) {
		int r = record_opt(a, c == 'h' ? OPT_HELP : c, optarg);
		if (r)
			return r;
	}
	if (optind >= argc) {
		ada_log("no program given: ada record [options] -- PROGRAM [ARGS...]");
		return -1;
	}
	a->prog_argv = argv + optind;
	return 0;
}

/* ---- checking PROGRAM before anything is created ---- */

static int record_which(const char *name, char *out, size_t cap)
{
	if (strchr(name, '/')) {
		snprintf(out, cap, "%s", name);
		return access(out, F_OK) == 0 ? 0 : -errno;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(out, cap, "%.*s/%s", (int)len, len ? path : ".", name);
		struct stat st;
		if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		path += len + (colon ? 1 : 0);
	}
	return -ENOENT;
}

/* 1: dynamic ELF, 0: static ELF, -1: not ELF / unreadable. */
static int record_elf_dynamic(int fd)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -1;
	}
	size_t n = 0;
	int dyn = 0;
	if (elf_getphdrnum(e, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				dyn = 1;
		}
	elf_end(e);
	return dyn;
}

static int record_check_program(const struct rec_args *a, char *path, size_t cap)
{
	const char *name = a->prog_argv[0];
	if (record_which(name, path, cap) < 0) {
		ada_log("cannot run '%s': no such program", name);
		return -1;
	}
	struct stat st;
	if (stat(path, &st) < 0 || S_ISDIR(st.st_mode)) {
		ada_log("cannot run '%s': it is a directory, not a program", name);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
		ada_log("cannot run '%s': it is not an executable file", name);
		return -1;
	}
	if (a->agent && (st.st_mode & (S_ISUID | S_ISGID))) {
		ada_log("cannot record '%s': it is setuid/setgid, and the loader ignores "
		        "LD_PRELOAD for such programs; record a copy without the setuid bit",
		        name);
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char magic[4] = {0};
	if (fd < 0 || read(fd, magic, sizeof(magic)) < 2) {
		ada_log("cannot read '%s': %s", name, strerror(errno ? errno : EIO));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = 0;
	if (magic[0] == '#' && magic[1] == '!') {
		rc = 0; /* a script: the agent goes into its interpreter */
	} else if (memcmp(magic, "\177ELF", 4)) {
		ada_log("cannot run '%s': it is neither an ELF executable nor a script", name);
		rc = -1;
	} else if (a->agent && record_elf_dynamic(fd) == 0) {
		ada_log("cannot record '%s': it is statically linked, so LD_PRELOAD cannot load "
		        "the agent; rebuild it dynamically, or link it with the producer API "
		        "(ada_producer) and use --no-agent",
		        name);
		rc = -1;
	} else if (record_elf_dynamic(fd) < 0) {
		ada_log("cannot run '%s': it is not a valid ELF file", name);
		rc = -1;
	}
	close(fd);
	return rc;
}

/* ---- the ring config and the environment ---- */

static int record_ring_config(const struct rec_args *a, bool tsc, char *buf, size_t cap)
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
	cfg.overflow = (uint32_t)a->overflow;
	cfg.timestamp_source = tsc ? ADA_TS_TSC : ADA_TS_CLOCK;
	if (ada_arena_config_valid(&cfg) < 0) {
		ada_log("the ring settings are out of range (ring %llu events, %u threads): see "
		        "ada record --help",
		        (unsigned long long)cfg.index_events, cfg.max_threads);
		return -1;
	}
	return ada_arena_config_format(&cfg, buf, cap) < 0 ? -1 : 0;
}

static int record_agent_path(char *buf, size_t cap)
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

static void record_child(const struct rec_args *a, struct ada_recorder *r, const char *path,
                         const char *ring_cfg, const char *agent, int errfd)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	setenv("ADA_SESSION_DIR", ada_recorder_session_dir(r), 1);
	setenv("ADA_ARENA_DIR", ada_recorder_arena_dir(r), 1);
	setenv("ADA_RING_CONFIG", ring_cfg, 1);
	setenv("ADA_HOOK_CONFIG", a->hook_config, 1);
	if (agent) {
		const char *old = getenv("LD_PRELOAD");
		char *pre = NULL;
		if (old && *old && asprintf(&pre, "%s:%s", agent, old) > 0)
			setenv("LD_PRELOAD", pre, 1);
		else
			setenv("LD_PRELOAD", agent, 1);
	}
	execv(path, a->prog_argv);
	int e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* the parent sees EOF and a 127 exit instead */
	}
	_exit(127);
}

static volatile sig_atomic_t record_child_pid;

static void record_forward(int sig)
{
	if (record_child_pid > 0)
		kill(record_child_pid, sig);
}

static void record_signals(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = record_forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The terminal sends these to PROGRAM too; the recorder stays to
	 * finalize what PROGRAM leaves behind. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
}

/* Forks PROGRAM; returns its pid, or -1 when exec failed (reported). */
static pid_t record_spawn(const struct rec_args *a, struct ada_recorder *r, const char *path,
                          const char *ring_cfg, const char *agent)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		record_child(a, r, path, ring_cfg, agent, pfd[1]);
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		ada_log("cannot start '%s': %s", a->prog_argv[0], strerror(errno));
		return -1;
	}
	int e = 0;
	ssize_t n = read(pfd[0], &e, sizeof(e));
	close(pfd[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		ada_log("cannot start '%s': %s", a->prog_argv[0], strerror(e));
		return -1;
	}
	return pid;
}

/* The agent's pid_N/agent.json of the main process: hook counts and time
 * (issue 4 asks for them at the end of the run). Silent when absent. */
static void record_print_hooks(const char *dir, pid_t pid)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/pid_%d/agent.json", dir, (int)pid) >=
	    sizeof(path))
		return;
	json_t *a = json_load_file(path, 0, NULL);
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

static void record_print_summary(const struct ada_record_summary *s, const char *dir)
{
	double rate = s->seconds > 0 ? (double)s->events / s->seconds : 0;
	fprintf(stderr,
	        "ada: recorded %llu events (%.2f M/s) from %u process%s in %.2f s, drops %llu, "
	        "disk %llu bytes, drain latency p50 %.2f ms p99 %.2f ms%s\n",
	        (unsigned long long)s->events, rate / 1e6, s->processes,
	        s->processes == 1 ? "" : "es", s->seconds, (unsigned long long)s->drops,
	        (unsigned long long)s->disk_bytes, (double)s->latency_p50_ns / 1e6,
	        (double)s->latency_p99_ns / 1e6, s->abnormal ? ", program ended abnormally" : "");
	if (s->disk_full)
		fprintf(stderr,
		        "ada: the disk filled up: recording stopped early, %llu events were "
		        "not written; the files hold what was written and are valid\n",
		        (unsigned long long)s->lost_enospc);
	fprintf(stderr, "%s\n", dir);
}

int cmd_record(int argc, char **argv)
{
	struct rec_args a;
	int rc = record_parse(&a, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	char path[PATH_MAX], agent[PATH_MAX], ring_cfg[ADA_ARENA_CONFIG_TEXT_MAX];
	if (record_check_program(&a, path, sizeof(path)) < 0)
		return 2;
	if (a.agent && record_agent_path(agent, sizeof(agent)) < 0) {
		ada_log("libada_agent.so is not next to the ada command; rebuild ada, or use "
		        "--no-agent");
		return 2;
	}
	if (!a.follow)
		snprintf(a.hook_config + strlen(a.hook_config),
		         sizeof(a.hook_config) - strlen(a.hook_config), "%sfollow=0",
		         a.hook_config[0] ? ";" : "");
	bool tsc = ada_tsc_invariant();
	if (record_ring_config(&a, tsc, ring_cfg, sizeof(ring_cfg)) < 0)
		return 2;
	struct ada_recorder_opts o = {
	    .out_dir = a.out,
	    .drain_cpu = a.drain_cpu,
	    .segment_bytes = a.segment_mb << 20,
	    .max_disk_bytes = a.max_disk_mb << 20,
	    .flush = a.flush,
	    .follow = a.follow,
	    .force_clock = !tsc,
	    .ring_config = ring_cfg,
	    .program_argv = (const char *const *)a.prog_argv,
	};
	struct ada_recorder *r;
	rc = ada_recorder_new(&o, &r);
	if (rc < 0) {
		ada_log("cannot create the session under '%s': %s", a.out, strerror(-rc));
		return 2;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	record_signals();
	pid_t pid = record_spawn(&a, r, path, ring_cfg, a.agent ? agent : NULL);
	if (pid < 0) {
		ada_recorder_discard(r);
		ada_recorder_free(r);
		return 2;
	}
	record_child_pid = pid;
	struct ada_record_summary s = {.exit_status = 1};
	rc = ada_recorder_start(r, pid);
	if (rc == 0)
		rc = ada_recorder_wait(r, &s);
	else
		ada_log("cannot start the drain: %s", strerror(-rc));
	record_print_hooks(ada_recorder_session_dir(r), pid);
	record_print_summary(&s, ada_recorder_session_dir(r));
	ada_recorder_free(r);
	if (s.disk_full || rc < 0)
		return s.exit_status ? s.exit_status : 1;
	return s.exit_status;
}
