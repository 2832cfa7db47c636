/*
 * ada record [options] -- PROGRAM [ARGS...]
 *
 * Checks PROGRAM before anything is created (a bad program leaves no
 * session behind), creates the session through the recorder core
 * (src/recorder), spawns PROGRAM with the agent preloaded and the ADA_*
 * environment, becomes the child subreaper so every descendant is ours to
 * reap, lets the drain run until the program is gone and so is what it
 * left running (2 s at most: docs/internals.md), prints a one-line
 * summary and, as the last line on stderr, the session directory. Ends as
 * PROGRAM ended whatever happened to the recording (that is said on stderr
 * and in the manifest): with its exit status, or killed by the signal that
 * killed it (no core of ada's own). Like a shell, 127 when PROGRAM does
 * not exist and 126 when it cannot be executed; 2 for ada's own refusals.
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

/* A shell's status for a program that cannot run: 127 when there is no
 * such file, 126 when there is one that cannot be executed (a directory,
 * no execute permission, not a program for this machine, a #! naming no
 * runnable interpreter); 2 when PROGRAM would run but ada cannot record it
 * (static, setuid: ada's refusal, not the program's end). */
static int record_unrunnable_status(const struct ada_diag_report *rep)
{
	const struct ada_diag_check *c = ada_diag_first_fail(rep);
	if (c && (!strcmp(c->id, "path") || !strcmp(c->id, "elf")))
		return 126;
	return 2;
}

/* PROGRAM is found on PATH here; what it is (an executable ELF for this
 * machine, dynamic, not setuid...) is src/diag's to say, the same words
 * as `ada diagnose`. 0, or ada's exit status after one sentence. */
static int record_check_program(struct rec_args *a, char *path, size_t cap)
{
	const char *name = a->prog_argv[0];
	if (record_which(name, path, cap) < 0) {
		ada_log("cannot run '%s': no such program", name);
		return 127;
	}
	a->target_arch = record_emul_arch(path);
	struct ada_diag_opts o = {.groups = ADA_DIAG_PROGRAM,
	                          .path = path,
	                          .agent = a->agent,
	                          .emulated = a->target_arch != 0};
	struct ada_diag_report *rep = malloc(sizeof(*rep));
	if (!rep) {
		ada_log("cannot check '%s': %s", name, strerror(ENOMEM));
		return 2;
	}
	int rc = ada_diag_run(&o, rep) == 0 ? cmd_diag_refuse("record", rep) : -1;
	int status = rc < 0 ? record_unrunnable_status(rep) : 0;
	free(rep);
	return status;
}

/* The dispositions and mask ada was started with: PROGRAM gets them, as
 * it would from `env` or `time` (nohup's ignored SIGHUP, a background
 * job's ignored SIGINT/SIGQUIT), and ada keeps an ignored one ignored. */
static const int record_sigs[4] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
static bool record_sig_ignored[4];
static bool record_chld_ignored; /* SIGCHLD as ada found it: PROGRAM gets it back */
static sigset_t record_orig_mask;
static struct rlimit record_orig_nofile; /* record_raise_nofile() */

static void record_save_signals(void)
{
	for (int i = 0; i < 4; i++) {
		struct sigaction old;
		record_sig_ignored[i] =
		    sigaction(record_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN;
	}
	struct sigaction chld;
	record_chld_ignored = sigaction(SIGCHLD, NULL, &chld) == 0 && chld.sa_handler == SIG_IGN;
	sigprocmask(SIG_SETMASK, NULL, &record_orig_mask);
}

static void record_child(const struct rec_args *a, struct ada_recorder *r, const char *path,
                         const char *ring_cfg, const char *agent, int errfd)
{
	for (int i = 0; i < 4; i++)
		signal(record_sigs[i], record_sig_ignored[i] ? SIG_IGN : SIG_DFL);
	signal(SIGCHLD, record_chld_ignored ? SIG_IGN : SIG_DFL);
	sigprocmask(SIG_SETMASK, &record_orig_mask, NULL);
	if (record_orig_nofile.rlim_cur != RLIM_INFINITY)
		setrlimit(RLIMIT_NOFILE, &record_orig_nofile);
	setenv("ADA_SESSION_DIR", ada_recorder_session_dir(r), 1);
	setenv("ADA_ARENA_DIR", ada_recorder_arena_dir(r), 1);
	setenv("ADA_RING_CONFIG", ring_cfg, 1);
	setenv("ADA_HOOK_CONFIG", a->hook_config, 1);
	char cache[PATH_MAX]; /* the plan cache: ada's choice, never the program's HOME */
	if (cmd_plan_cache_dir(cache, sizeof(cache)))
		setenv("ADA_PLAN_CACHE", cache, 1);
	else
		unsetenv("ADA_PLAN_CACHE");
	if (a->target_arch) {
		record_emul_exec(a, path); /* the agent into the guest only */
		int e = errno;
		if (write(errfd, &e, sizeof(e)) < 0) {
			/* the parent sees EOF and a 127 exit instead */
		}
		_exit(127);
	}
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

/* SIGCHLD: a drain asleep on its doorbell reaps the child now
 * (async-signal-safe: an atomic add and at most one futex wake). */
static void record_child_ended(int sig)
{
	(void)sig;
	if (record_rec)
		ada_recorder_wake(record_rec);
}

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
	sa.sa_handler = record_child_ended;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_sigaction = record_interrupt;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	if (!record_sig_ignored[0])
		sigaction(SIGINT, &sa, NULL);
	if (!record_sig_ignored[1])
		sigaction(SIGQUIT, &sa, NULL);
}

/* Forks PROGRAM; returns its pid, or -1 when exec failed (reported;
 * *exec_err: exec's errno, 0 when fork failed). */
static pid_t record_spawn(const struct rec_args *a, struct ada_recorder *r, const char *path,
                          const char *ring_cfg, const char *agent, int *exec_err)
{
	*exec_err = 0;
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
		*exec_err = e;
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

/* Everything checked before the session is created: PROGRAM, the agent,
 * root's places, the rings, the machine. 0, or ada's exit status after
 * one sentence (record_check_program's 127 and 126, else 2). */
static int record_prepare(struct rec_args *a, char *path, char *agent, char *ring_cfg, bool *tsc)
{
	int status = record_check_program(a, path, PATH_MAX);
	if (status)
		return status;
	if (a->target_arch && record_emul_prepare(a) < 0)
		return 2;
	if (a->agent && !a->target_arch && record_agent_path(agent, PATH_MAX) < 0) {
		ada_log("libada_agent.so is not next to the ada command; rebuild ada, or use "
		        "--no-agent");
		return 2;
	}
	if (cmd_root_check_record(a->out ? a->out : "ada_traces", a->agent) < 0)
		return 2;
	/* The program's own counter (arm64's states its rate) when emulated. */
	*tsc = a->target_arch || ada_tsc_invariant();
	struct ada_arena_config ring;
	if (record_ring_config(a, *tsc, &ring, ring_cfg, ADA_ARENA_CONFIG_TEXT_MAX) < 0 ||
	    record_agent_config(a) < 0 || record_check_host(a, &ring) < 0)
		return 2;
	return 0;
}

/* PROGRAM could not start: nothing to record, the session is removed. */
static void record_abandon(struct ada_recorder *r, struct ada_control *ctl)
{
	signal(SIGUSR2, SIG_IGN); /* nothing to fire any more */
	record_rec = NULL;
	ada_control_free(ctl);
	ada_recorder_discard(r);
	ada_recorder_free(r);
}

/* Ends ada as PROGRAM ended, killed by sig, so that its parent sees
 * WIFSIGNALED (a shell says "Segmentation fault", subprocess -11), once
 * the recording is finalized and the summary printed. Without a core of
 * ada's own: the program's core, if any, is the one that tells. Returns
 * only when sig does not end a process (then the caller exits 128 + sig). */
static void record_die_like(int sig)
{
	struct rlimit no_core = {0, 0};
	sigset_t set;
	fflush(NULL);
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

/* The drain records PROGRAM pid until it and what it left are gone; the
 * summary; PROGRAM's status. */
static int record_until_end(const struct rec_args *a, struct ada_recorder *r,
                            struct ada_control *ctl, pid_t pid)
{
	struct ada_record_summary s = {.exit_status = 1};
	int rc = ada_recorder_start(r, pid);
	if (rc == 0)
		rc = ada_recorder_wait(r, &s);
	else
		record_without_drain(pid, rc, &s);
	ada_control_free(ctl); /* its clients see the end (EOF) */
	record_print_hooks(ada_recorder_session_dir(r), pid);
	record_print_summary(&s, a, ada_recorder_session_dir(r), ada_recorder_triggers(r));
	signal(SIGUSR2, SIG_IGN); /* nothing to fire any more */
	record_rec = NULL;
	ada_recorder_free(r);
	/* The program's end, whatever happened to the recording: a
	 * recording problem is on stderr (above) and in the manifests. */
	if (s.abnormal && s.exit_status > 128)
		record_die_like(s.exit_status - 128);
	return s.exit_status;
}

int cmd_record(int argc, char **argv)
{
	struct rec_args a;
	char path[PATH_MAX], agent[PATH_MAX], ring_cfg[ADA_ARENA_CONFIG_TEXT_MAX];
	bool tsc;
	struct ada_recorder *r;
	int rc = record_parse(&a, argc, argv, false);
	if (rc)
		return rc > 0 ? 0 : 2;
	rc = record_prepare(&a, path, agent, ring_cfg, &tsc);
	if (rc)
		return rc;
	if (record_create(&a, ring_cfg, tsc, a.prog_argv, &r) < 0)
		return 2;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	struct ada_control *ctl = record_control(r, &a);
	record_rec = r;
	record_save_signals();
	record_raise_nofile(&record_orig_nofile);
	record_signals();
	int exec_err;
	pid_t pid = record_spawn(&a, r, path, ring_cfg, a.agent ? agent : NULL, &exec_err);
	if (pid < 0) {
		record_abandon(r, ctl);
		return exec_err == ENOENT ? 127 : exec_err ? 126 : 2; /* as a shell */
	}
	record_child_pid = pid;
	return record_until_end(&a, r, record_control_start(ctl), pid);
}
