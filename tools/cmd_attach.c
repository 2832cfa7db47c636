/*
 * ada attach PID [options]
 *
 * Records a process that already runs, then detaches and leaves it
 * running (issue 10). Order, so that a refusal leaves nothing behind:
 * the options, the checks of `ada diagnose PID` (src/diag), the session
 * (src/recorder, attached mode); then every thread of PID is stopped
 * (src/inject), libada_agent.so is loaded with dlopen on one of them and
 * configured by ada_agent_attach() with a text written into the process
 * (no environment: src/hook/agent_attach.c), which creates the arena and
 * patches while every thread is stopped; the threads resume and the
 * drain records as for `ada record`. On SIGINT/SIGTERM/SIGHUP, after
 * --duration, or at the process's exit: every thread is stopped again,
 * ada_agent_detach() restores every patched entry, the threads resume,
 * the drain takes what is left and finalizes. The pauses (every thread
 * stopped) are in the summary and the manifest.
 *
 * Threads: the main thread does the ptrace work (tracees belong to the
 * thread that seized them) and waits; the drain thread records.
 * Exit status: 0, 1 (the recording failed), 2 (refused: nothing done).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "control.h"
#include "diag.h"
#include "fs.h"
#include "inject.h"
#include "keysym.h"
#include "record.h"
#include "ring.h"
#include "recorder.h"

#define ATTACH_TEXT_MAX 65536
#define ATTACH_MOVES_MAX 2048 /* threads; the text holds about as many */
#define ATTACH_ARGV_MAX 256
#define ATTACH_DETACH_TRIES 250 /* 20 ms apart */

static volatile sig_atomic_t attach_stop_sig;
static struct ada_recorder *attach_rec; /* SIGUSR2 */

static void attach_on_stop(int sig)
{
	attach_stop_sig = sig;
}

static void attach_on_manual(int sig)
{
	(void)sig;
	if (attach_rec)
		ada_recorder_request_manual(attach_rec);
}

/* SIGINT/SIGTERM/SIGHUP stay blocked but inside ppoll (no lost wake-up). */
static void attach_signals(sigset_t *during_wait)
{
	struct sigaction sa = {0};
	sigset_t block;
	sa.sa_handler = attach_on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = attach_on_manual;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, during_wait);
	sigdelset(during_wait, SIGINT);
	sigdelset(during_wait, SIGTERM);
	sigdelset(during_wait, SIGHUP);
}

/* The process's argv, for the manifest (NUL-separated in /proc). */
static char **attach_argv(pid_t pid, char *buf, size_t cap)
{
	static char *argv[ATTACH_ARGV_MAX + 1];
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	size_t k = 0;
	if (n > 0) {
		buf[n] = '\0';
		for (ssize_t i = 0; i < n && k < ATTACH_ARGV_MAX; i += (ssize_t)strlen(buf + i) + 1)
			argv[k++] = buf + i;
	}
	argv[k] = NULL;
	return argv;
}

/* The threads the agent may move: busy[k] of the text is thread
 * who[k]'s pc, and the agent answers in moved[k] (agent_attach.c). */
struct attach_moves {
	size_t n;
	uint32_t who[ATTACH_MOVES_MAX];
	uint64_t moved[ATTACH_MOVES_MAX];
};

/* Appends ",HEX" lists of where the stopped threads are (agent_attach.c). */
static int attach_lists(const struct ada_inject *in, char *t, size_t cap, size_t used,
                        struct attach_moves *mv)
{
	static const char *const keys[3] = {"busy", "restart", "tls"};
	mv->n = 0;
	for (int k = 0; k < 3; k++) {
		used += (size_t)snprintf(t + used, cap - used, "%s=", keys[k]);
		for (size_t i = 0; i < ada_inject_threads(in) && used < cap; i++) {
			bool sc = false;
			uint64_t pc = ada_inject_thread_pc(in, i, &sc);
			uint64_t v = k == 0   ? pc
			             : k == 1 ? (sc ? pc - 2 : 0)
			                      : ada_inject_thread_tls(in, i);
			if (v && k == 0 && mv->n == ATTACH_MOVES_MAX)
				return -1;
			if (v && k == 0)
				mv->who[mv->n++] = (uint32_t)i;
			if (v)
				used += (size_t)snprintf(t + used, cap - used, "%s%llx",
				                         t[used - 1] == '=' ? "" : ",",
				                         (unsigned long long)v);
		}
		if (used >= cap)
			return -1;
		t[used++] = '\n';
	}
	t[used] = '\0';
	return (int)used;
}

/* The configuration text ada_agent_attach() parses. */
static int attach_text(const struct rec_args *a, struct ada_recorder *r, const char *ring_cfg,
                       const struct ada_inject *in, char *t, size_t cap, struct attach_moves *mv)
{
	/* The plan cache directory, as the agent would find it from ada's own
	 * environment (src/hook/plancache.c); "": none. */
	char cache[PATH_MAX];
	if (ada_fs_cache_dir("plans", cache, sizeof(cache)) < 0)
		cache[0] = '\0';
	int n = snprintf(t, cap, "session=%s\narena=%s\nring=%s\nhook=%s\ncache=%s\n",
	                 ada_recorder_session_dir(r), ada_recorder_arena_dir(r), ring_cfg,
	                 a->hook_config, cache);
	if (n < 0 || (size_t)n >= cap)
		return -1;
	return attach_lists(in, t, cap - 1, (size_t)n, mv);
}

/* dlopen failed in the target: its dlerror() text, read from its memory. */
static void attach_dlerror(struct ada_inject *in, pid_t pid, char *why, size_t cap)
{
	uint64_t fn = 0, s = 0;
	char msg[512] = "";
	if (ada_inject_symbol(pid, "libc.so.6", "dlerror", &fn) == 0 &&
	    ada_inject_call(in, fn, NULL, 0, NULL, 0, &s, NULL, 0) == 0 && s) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? pread(fd, msg, sizeof(msg) - 1, (off_t)s) : -1;
		if (fd >= 0)
			close(fd);
		msg[n > 0 ? n : 0] = '\0';
	}
	snprintf(why, cap, "dlopen of the agent failed in pid %d%s%s", (int)pid, msg[0] ? ": " : "",
	         msg);
}

/* The agent patched functions some stopped threads were inside of and
 * says where each resumes instead (its trampoline's copy of the same
 * instruction): every such pc is set before any thread runs, or the
 * thread would resume in the middle of a patch. 0, or -1 with why. */
static int attach_move(struct ada_inject *in, pid_t pid, struct attach_moves *mv, char *why,
                       size_t cap)
{
	for (size_t k = 0; k < mv->n; k++) {
		if (!mv->moved[k])
			continue;
		int err = ada_inject_thread_set_pc(in, mv->who[k], mv->moved[k]);
		if (err && err != -EINVAL) { /* -EINVAL: it exited meanwhile */
			snprintf(why, cap, "cannot move thread %d of pid %d out of a patch: %s",
			         (int)ada_inject_thread_tid(in, mv->who[k]), (int)pid,
			         strerror(-err));
			return -1;
		}
	}
	return 0;
}

/* ada_agent_attach(text, len, moved, n) on a stopped thread, its data
 * the text then the moved[] slots (8-aligned), read back afterwards. */
static int attach_start(struct ada_inject *in, uint64_t fn, const char *text, size_t tlen,
                        struct attach_moves *mv, uint64_t *ret, char *why, size_t cap)
{
	static char data[ATTACH_TEXT_MAX + 8 + sizeof(mv->moved)];
	size_t off = (tlen + 7) & ~(size_t)7, dlen = off + mv->n * sizeof(uint64_t);
	if (dlen > ATTACH_TEXT_MAX) {
		snprintf(why, cap, "too many threads for one attach");
		return -1;
	}
	memcpy(data, text, tlen);
	memset(data + tlen, 0, dlen - tlen);
	uint64_t base = ada_inject_scratch_addr(in, dlen);
	uint64_t args[4] = {base, tlen, base + off, mv->n};
	if (ada_inject_call(in, fn, args, 4, data, dlen, ret, why, cap) < 0)
		return -1;
	memset(mv->moved, 0, sizeof(mv->moved));
	if (ada_inject_peek(in, base + off, mv->moved, mv->n * sizeof(uint64_t)) < 0) {
		snprintf(why, cap, "cannot read where the agent moved the threads");
		return -1;
	}
	return 0;
}

/* dlopen(agent) in the target, for at most timeout_ns: a thread stopped
 * while it holds a lock dlopen needs (the loader's, while a constructor
 * runs; a malloc arena's) would make it wait for ever. Abandoned there,
 * the call has taken nothing (it waits to), and its thread gets its
 * registers back (inject.h). 0, or -1 with why. */
static int attach_dlopen(struct ada_inject *in, pid_t pid, const char *agent, uint64_t timeout_ns,
                         char *why, size_t cap)
{
	uint64_t fn = 0, h = 0;
	size_t alen = strlen(agent) + 1;
	if (ada_inject_dlopen_addr(pid, &fn, why, cap) < 0)
		return -1;
	uint64_t args[2] = {ada_inject_scratch_addr(in, alen), RTLD_NOW};
	ada_inject_set_call_timeout(in, timeout_ns);
	int rc = ada_inject_call(in, fn, args, 2, agent, alen, &h, why, cap);
	if (rc == -ETIMEDOUT)
		snprintf(why, cap,
		         "dlopen of the agent did not return within %.1f s in pid %d: one of its "
		         "threads, stopped by the attach, holds a lock dlopen needs (the dynamic "
		         "loader's, while it loads a library, or malloc's); the call was abandoned "
		         "and the process runs on as it was. Try again later (--call-timeout SEC "
		         "sets the limit)",
		         (double)timeout_ns / 1e9, (int)pid);
	if (rc == 0 && !h)
		attach_dlerror(in, pid, why, cap);
	ada_inject_set_call_timeout(in, 0); /* the agent's calls cannot be abandoned */
	return rc < 0 || !h ? -1 : 0;
}

/* Loads and starts the agent on a stopped thread. 0, or -1 with why. */
static int attach_load(struct ada_inject *in, pid_t pid, const char *agent, uint64_t timeout_ns,
                       const char *text, size_t tlen, struct attach_moves *mv, char *why,
                       size_t cap)
{
	uint64_t fn = 0, ret = 0;
	if (attach_dlopen(in, pid, agent, timeout_ns, why, cap) < 0)
		return -1;
	if (ada_inject_symbol(pid, "libada_agent.so", "ada_agent_attach", &fn) < 0) {
		snprintf(why, cap, "the agent loaded into pid %d has no ada_agent_attach",
		         (int)pid);
		return -1;
	}
	if (attach_start(in, fn, text, tlen, mv, &ret, why, cap) < 0)
		return -1;
	int err = (int)(int32_t)ret;
	/* Also when the agent failed halfway: what it patched stays patched. */
	if (attach_move(in, pid, mv, why, cap) < 0)
		return -1;
	if (err == -EALREADY) {
		snprintf(why, cap,
		         "pid %d is recorded already (by ada record, or another ada attach)",
		         (int)pid);
		return -1;
	}
	if (err == -EBUSY) {
		snprintf(
		    why, cap,
		    "a thread of pid %d, stopped by the attach, is inside the agent (loading a "
		    "library or forking); try again",
		    (int)pid);
		return -1;
	}
	if (err) {
		snprintf(why, cap,
		         "the agent could not start in pid %d (%s); its stderr may say more",
		         (int)pid, strerror(-err));
		return -1;
	}
	return 0;
}

/* Stops every thread, loads and starts the agent, resumes. The pause, or
 * 0 after saying why (the process runs on, untouched but for a loaded,
 * inactive agent when the failure came after the dlopen). */
static uint64_t attach_inject(const struct rec_args *a, struct ada_recorder *r, pid_t pid,
                              const char *agent, const char *ring_cfg)
{
	char why[1024] = "";
	static char text[ATTACH_TEXT_MAX];
	struct ada_inject *in = NULL;
	if (ada_inject_stop(pid, &in, why, sizeof(why)) < 0) {
		ada_log("cannot attach to pid %d: %s", (int)pid, why);
		return 0;
	}
	static struct attach_moves mv;
	int tlen = attach_text(a, r, ring_cfg, in, text, sizeof(text), &mv);
	int rc = tlen < 0 ? -1
	                  : attach_load(in, pid, agent, a->call_timeout_ns, text, (size_t)tlen, &mv,
	                                why, sizeof(why));
	if (tlen < 0)
		snprintf(why, sizeof(why), "pid %d has too many threads for one attach", (int)pid);
	uint64_t pause = ada_inject_resume(in);
	if (rc < 0) {
		ada_log("cannot attach to pid %d: %s", (int)pid, why);
		return 0;
	}
	return pause ? pause : 1;
}

/* One try: stops every thread, restores the entries, resumes. 0 and
 * the pause, -EBUSY (a stopped thread held the agent's lock: it must
 * run to let go), -1 (gone, or failed: said). */
static int attach_detach_once(pid_t pid, uint64_t *pause)
{
	char why[1024] = "";
	struct ada_inject *in = NULL;
	uint64_t fn = 0, ret = 0;
	if (ada_inject_stop(pid, &in, why, sizeof(why)) < 0)
		return -1; /* gone meanwhile: nothing to restore */
	int rc = ada_inject_symbol(pid, "libada_agent.so", "ada_agent_detach", &fn);
	if (rc == 0)
		rc = ada_inject_call(in, fn, NULL, 0, NULL, 0, &ret, why, sizeof(why));
	*pause = ada_inject_resume(in);
	if (rc == 0 && (int32_t)ret == -EBUSY)
		return -EBUSY;
	if (rc < 0 || (int32_t)ret != 0) {
		ada_log(
		    "detaching from pid %d did not restore every hooked function (%s); it runs on",
		    (int)pid, rc < 0 ? why : strerror(-(int32_t)ret));
		return -1;
	}
	return 0;
}

/* Stops every thread, restores the entries, resumes; the pause or 0.
 * A thread that held the agent's lock when stopped (inside a fork or a
 * dlopen) is let run a little and the detach tried again. */
static uint64_t attach_detach(pid_t pid)
{
	uint64_t pause = 0;
	for (int i = 0; i < ATTACH_DETACH_TRIES; i++) {
		int rc = attach_detach_once(pid, &pause);
		if (rc != -EBUSY)
			return rc == 0 ? pause : 0;
		struct timespec ts = {0, 20000000}; /* 20 ms */
		nanosleep(&ts, NULL);
	}
	ada_log("detaching from pid %d did not restore every hooked function (a thread stayed "
	        "inside the agent); it runs on",
	        (int)pid);
	return 0;
}

/* Until a signal, --duration or the process's exit. */
static void attach_wait(pid_t pid, uint64_t duration_ns, const sigset_t *during)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct timespec end, now;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)(duration_ns / 1000000000ull);
	end.tv_nsec += (long)(duration_ns % 1000000000ull);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (!attach_stop_sig && pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		struct timespec left, *tl = NULL;
		if (duration_ns) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > end.tv_sec ||
			    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
				break;
			left.tv_sec = end.tv_sec - now.tv_sec;
			left.tv_nsec = end.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			tl = &left;
		}
		if (ppoll(&p, 1, tl, during) > 0)
			break; /* it exited */
	}
	if (pidfd >= 0)
		close(pidfd);
}

static int attach_pid_arg(const char *s, pid_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT32_MAX)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

/* Options, agent, root checks, rings, src/diag: 0, 1 (help), or 2. */
static int attach_prepare(int argc, char **argv, struct rec_args *a, pid_t *pid, char *agent,
                          char *ring_cfg, struct ada_arena_config *ring)
{
	if (argc < 2 || argv[1][0] == '-') {
		int rc = record_parse(a, argc, argv, true);
		if (rc)
			return rc > 0 ? 1 : 2;
		ada_log("no pid given: ada attach PID [options]");
		return 2;
	}
	if (attach_pid_arg(argv[1], pid) < 0) {
		ada_log("ada attach wants a process id, not '%s'", argv[1]);
		return 2;
	}
	int rc = record_parse(a, argc - 1, argv + 1, true);
	if (rc)
		return rc > 0 ? 1 : 2;
	if (record_agent_path(agent, PATH_MAX) < 0) {
		ada_log("libada_agent.so is not next to the ada command; rebuild ada");
		return 2;
	}
	if (cmd_root_check_record(a->out ? a->out : "ada_traces", true) < 0 ||
	    record_ring_config(a, ada_tsc_invariant(), ring, ring_cfg, ADA_ARENA_CONFIG_TEXT_MAX) <
	        0 ||
	    record_agent_config(a) < 0)
		return 2;
	struct ada_diag_opts o = {.groups = ADA_DIAG_PROGRAM | ADA_DIAG_PROCESS | ADA_DIAG_HOST,
	                          .pid = *pid,
	                          .out_dir = a->out,
	                          .ring = ring,
	                          .agent = true,
	                          .attach = true};
	struct ada_diag_report *rep = malloc(sizeof(*rep));
	char verb[64];
	snprintf(verb, sizeof(verb), "attach to pid %d", (int)*pid);
	rc = rep && ada_diag_run(&o, rep) == 0 ? cmd_diag_refuse(verb, rep) : -1;
	free(rep);
	return rc < 0 ? 2 : 0;
}

static void attach_print(pid_t pid, double secs, uint64_t pause, uint64_t dpause)
{
	fprintf(stderr,
	        "ada: attached to pid %d for %.2f s; every thread was stopped %.2f ms to attach, "
	        "%s%.2f ms to detach\n",
	        (int)pid, secs, (double)pause / 1e6, dpause ? "" : "(it had exited) ",
	        (double)dpause / 1e6);
}

/* When the agent was loaded (wall clock) and for how long every thread
 * was stopped for it; when the drain started (boot clock). */
struct attach_times {
	uint64_t wall_ns, pause_ns, t0;
};

/* The process runs traced from here: every thread stopped while the
 * agent loads and hooks, then the drain. 0, or the exit status after the
 * session was discarded (said). */
static int attach_begin(struct rec_args *a, struct ada_recorder *r, pid_t pid, const char *agent,
                        const char *ring_cfg, struct attach_times *t)
{
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	t->wall_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	t->pause_ns = attach_inject(a, r, pid, agent, ring_cfg);
	if (!t->pause_ns) {
		ada_recorder_discard(r);
		ada_recorder_free(r);
		return 2;
	}
	ada_recorder_set_attach(r, t->wall_ns, t->pause_ns, 0);
	/* One line scripts can wait for: the process runs traced from here. */
	fprintf(stderr,
	        "ada: attached to pid %d (every thread stopped %.2f ms); recording into %s\n",
	        (int)pid, (double)t->pause_ns / 1e6, ada_recorder_session_dir(r));
	t->t0 = ada_boottime_ns();
	int rc = ada_recorder_start(r, pid);
	if (rc < 0) {
		ada_log("cannot start the drain: %s", strerror(-rc));
		attach_detach(pid);
		ada_recorder_discard(r);
		ada_recorder_free(r);
		return 1;
	}
	return 0;
}

/* Until a signal, --duration or the process's exit; then detached, the
 * drain finished, the summary. The exit status. */
static int attach_until_end(struct rec_args *a, struct ada_recorder *r, pid_t pid,
                            const struct attach_times *t, const sigset_t *during)
{
	struct ada_control *ctl = record_control_start(record_control(r, a));
	attach_rec = r;
	attach_wait(pid, a->duration_ns, during);
	uint64_t dpause = attach_detach(pid);
	double secs = (double)(ada_boottime_ns() - t->t0) / 1e9;
	ada_recorder_set_attach(r, t->wall_ns, t->pause_ns, dpause);
	ada_recorder_stop(r);
	struct ada_record_summary s = {0};
	int rc = ada_recorder_wait(r, &s);
	attach_rec = NULL;
	ada_control_free(ctl);
	record_print_hooks(ada_recorder_session_dir(r), pid);
	attach_print(pid, secs, t->pause_ns, dpause);
	record_print_summary(&s, a, ada_recorder_session_dir(r), ada_recorder_triggers(r));
	ada_recorder_free(r);
	return s.disk_full || rc < 0 ? 1 : 0;
}

int cmd_attach(int argc, char **argv)
{
	static struct rec_args a;
	static char agent[PATH_MAX], ring_cfg[ADA_ARENA_CONFIG_TEXT_MAX], argbuf[8192];
	struct ada_arena_config ring;
	struct ada_recorder *r;
	struct attach_times t;
	struct rlimit nofile;
	sigset_t during;
	pid_t pid = 0;
	int rc = attach_prepare(argc, argv, &a, &pid, agent, ring_cfg, &ring);
	if (rc)
		return rc == 1 ? 0 : rc;
	record_raise_nofile(&nofile); /* nothing to give back: the process runs already */
	if (record_create(&a, ring_cfg, ada_tsc_invariant(),
	                  attach_argv(pid, argbuf, sizeof(argbuf)), &r) < 0)
		return 2;
	attach_signals(&during);
	rc = attach_begin(&a, r, pid, agent, ring_cfg, &t);
	return rc ? rc : attach_until_end(&a, r, pid, &t, &during);
}
