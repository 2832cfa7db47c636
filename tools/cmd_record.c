/*
 * ada record [options] -- PROGRAM [ARGS...]
 *
 * Checks PROGRAM before anything is created (a bad program leaves no
 * session behind), creates the session through the recorder core
 * (src/recorder), spawns PROGRAM with the agent preloaded and the ADA_*
 * environment, becomes the child subreaper so every descendant is ours to
 * reap, lets the drain run until the program is gone and so is what it
 * left running (2 s at most: docs/internals.md), prints a one-line
 * summary and, as the last line on stderr, the session directory. Exits
 * with PROGRAM's status (128 + signal when a signal killed it) whatever
 * happened to the recording (that is said on stderr and in the manifest).
 * A text file without #! runs with /bin/sh, as a shell would run it.
 *
 * Threads: the main thread parses, spawns and waits for the drain thread;
 * it also forwards SIGTERM/SIGHUP, and SIGINT/SIGQUIT sent by a process
 * (not the terminal, which signals PROGRAM itself), to PROGRAM. PROGRAM
 * starts with the signal dispositions and mask ada was started with.
 */
#define _GNU_SOURCE
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
#include "recorder.h"

#include "record.h"

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

/* PROGRAM is found on PATH here; what it is (an executable ELF for this
 * machine, dynamic, not setuid...) is src/diag's to say, the same words
 * as `ada diagnose`. */
static int record_check_program(const struct rec_args *a, char *path, size_t cap)
{
	const char *name = a->prog_argv[0];
	if (record_which(name, path, cap) < 0) {
		ada_log("cannot run '%s': no such program", name);
		return -1;
	}
	struct ada_diag_opts o = {.groups = ADA_DIAG_PROGRAM, .path = path, .agent = a->agent};
	struct ada_diag_report *rep = malloc(sizeof(*rep));
	int rc = rep && ada_diag_run(&o, rep) == 0 ? cmd_diag_refuse("record", rep) : -1;
	if (!rep)
		ada_log("cannot check '%s': %s", name, strerror(ENOMEM));
	free(rep);
	return rc;
}

/* The dispositions and mask ada was started with: PROGRAM gets them, as
 * it would from `env` or `time` (nohup's ignored SIGHUP, a background
 * job's ignored SIGINT/SIGQUIT), and ada keeps an ignored one ignored. */
static const int record_sigs[4] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
static bool record_sig_ignored[4];
static sigset_t record_orig_mask;
static struct rlimit record_orig_nofile; /* record_raise_nofile() */

static void record_save_signals(void)
{
	for (int i = 0; i < 4; i++) {
		struct sigaction old;
		record_sig_ignored[i] =
		    sigaction(record_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN;
	}
	sigprocmask(SIG_SETMASK, NULL, &record_orig_mask);
}

static void record_child(const struct rec_args *a, struct ada_recorder *r, const char *path,
                         const char *ring_cfg, const char *agent, int errfd)
{
	for (int i = 0; i < 4; i++)
		signal(record_sigs[i], record_sig_ignored[i] ? SIG_IGN : SIG_DFL);
	sigprocmask(SIG_SETMASK, &record_orig_mask, NULL);
	if (record_orig_nofile.rlim_cur != RLIM_INFINITY)
		setrlimit(RLIMIT_NOFILE, &record_orig_nofile);
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
	if (e == ENOEXEC) {
		/* A text file without #! (src/diag said so): run it with /bin/sh,
		 * as a shell or execvp would. */
		size_t n = 0;
		while (a->prog_argv[n])
			n++;
		char **sh = calloc(n + 2, sizeof(*sh));
		if (sh) {
			sh[0] = (char *)"/bin/sh";
			sh[1] = (char *)path;
			for (size_t i = 1; i < n; i++)
				sh[i + 1] = a->prog_argv[i];
			execv("/bin/sh", sh);
		}
	}
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* the parent sees EOF and a 127 exit instead */
	}
	_exit(127);
}

static volatile sig_atomic_t record_child_pid;
static struct ada_recorder *record_rec; /* for SIGUSR2; set before it is installed */

/* SIGUSR2: a manual trigger (async-signal-safe: one atomic add). */
static void record_manual(int sig)
{
	(void)sig;
	if (record_rec)
		ada_recorder_request_manual(record_rec);
}
static volatile sig_atomic_t record_sigints;

/* SIGTERM also stops the recorder (within 2 s, finalizing what it has),
 * whatever the program does with the signal. */
static void record_forward(int sig)
{
	if (record_child_pid > 0)
		kill(record_child_pid, sig);
	if (sig == SIGTERM && record_rec)
		ada_recorder_stop(record_rec);
}

/* The terminal sends SIGINT and SIGQUIT to PROGRAM too (si_code
 * SI_KERNEL): the first SIGINT is PROGRAM's business (the recorder stays
 * to finalize what it leaves behind); a second one means "stop now". One
 * sent by a process (kill: SI_USER, SI_QUEUE) may have been sent to ada
 * alone: it is passed on to PROGRAM. */
static void record_interrupt(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if ((si->si_code == SI_USER || si->si_code == SI_QUEUE) && record_child_pid > 0)
		kill(record_child_pid, sig);
	if (sig == SIGINT && ++record_sigints >= 2 && record_rec)
		ada_recorder_stop(record_rec);
}

static void record_signals(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = record_forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (!record_sig_ignored[2])
		sigaction(SIGTERM, &sa, NULL);
	if (!record_sig_ignored[3])
		sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = record_manual;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_sigaction = record_interrupt;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	if (!record_sig_ignored[0])
		sigaction(SIGINT, &sa, NULL);
	if (!record_sig_ignored[1])
		sigaction(SIGQUIT, &sa, NULL);
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

/* The drain could not start: nothing is recorded, but the program runs
 * and its status is still ada's. */
static void record_without_drain(pid_t pid, int err, struct ada_record_summary *s)
{
	ada_log("cannot start the drain (%s): nothing is recorded; waiting for the program",
	        strerror(-err));
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	s->exit_status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	s->abnormal = WIFSIGNALED(st);
}

int cmd_record(int argc, char **argv)
{
	struct rec_args a;
	int rc = record_parse(&a, argc, argv, false);
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
	if (cmd_root_check_record(a.out ? a.out : "ada_traces", a.agent) < 0)
		return 2;
	bool tsc = ada_tsc_invariant();
	struct ada_arena_config ring;
	if (record_ring_config(&a, tsc, &ring, ring_cfg, sizeof(ring_cfg)) < 0 ||
	    record_detail_hook_config(&a) < 0 || record_check_host(&a, &ring) < 0)
		return 2;
	struct ada_recorder_opts o = {
	    .out_dir = a.out,
	    .drain_cpu = a.drain_cpu,
	    .segment_bytes = a.segment_mb << 20,
	    .max_disk_bytes = a.max_disk_mb == UINT64_MAX ? 0 : a.max_disk_mb << 20,
	    .max_disk_default = a.max_disk_mb == UINT64_MAX,
	    .max_shm_bytes = a.max_shm_mb == UINT64_MAX ? 0 : a.max_shm_mb << 20,
	    .max_shm_default = a.max_shm_mb == UINT64_MAX,
	    .flush = a.flush,
	    .index_format = a.index_format,
	    .cidx_block = a.index_block,
	    .follow = a.follow,
	    .force_clock = !tsc,
	    .ring_config = ring_cfg,
	    .program_argv = (const char *const *)a.prog_argv,
	    .triggers = a.triggers,
	    .ntriggers = a.ntriggers,
	    .flight = a.flight,
	    .detail_mode = a.detail_mode,
	    .stack_bytes = (uint32_t)a.stack_bytes,
	    .detail_symbols = a.detail_symbols[0] ? a.detail_symbols : NULL,
	    .key_symbols = a.ks,
	    .notice = record_notice,
	};
	struct ada_recorder *r;
	if (a.ks_given && a.detail_mode == ADA_DETAIL_NEVER) {
		ada_log(
		    "--key-symbols and --blob choose what enters the detail lane, which --detail "
		    "never turns off: drop one of them");
		return 2;
	}
	rc = ada_recorder_new(&o, &r);
	ada_keysym_spec_free(a.ks); /* the recorder keeps its own copy */
	a.ks = NULL;
	if (rc < 0) {
		ada_log("cannot create the session under '%s': %s", a.out, strerror(-rc));
		return 2;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	struct ada_control *ctl = record_control(r, &a);
	record_rec = r;
	record_save_signals();
	record_raise_nofile(&record_orig_nofile);
	record_signals();
	pid_t pid = record_spawn(&a, r, path, ring_cfg, a.agent ? agent : NULL);
	if (pid < 0) {
		signal(SIGUSR2, SIG_IGN); /* nothing to fire any more */
		record_rec = NULL;
		ada_control_free(ctl);
		ada_recorder_discard(r);
		ada_recorder_free(r);
		return 2;
	}
	record_child_pid = pid;
	if (ctl && ada_control_start(ctl) < 0) {
		ada_log("the control socket could not start: `ada arm/disarm/trigger/status PID` "
		        "cannot reach this recording; it records all the same");
		ada_control_free(ctl);
		ctl = NULL;
	}
	struct ada_record_summary s = {.exit_status = 1};
	rc = ada_recorder_start(r, pid);
	if (rc == 0)
		rc = ada_recorder_wait(r, &s);
	else
		record_without_drain(pid, rc, &s);
	ada_control_free(ctl); /* its clients see the end (EOF) */
	record_print_hooks(ada_recorder_session_dir(r), pid);
	record_print_summary(&s, ada_recorder_session_dir(r));
	signal(SIGUSR2, SIG_IGN); /* nothing to fire any more */
	record_rec = NULL;
	ada_recorder_free(r);
	/* The program's status, whatever happened to the recording: a
	 * recording problem is on stderr (above) and in the manifests. */
	return s.exit_status;
}
