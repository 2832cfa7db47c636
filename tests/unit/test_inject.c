/*
 * src/inject against a real process (tests/targets/t_attach.c): every
 * thread stopped, a dlopen and a call run in the target on a stopped
 * thread, every thread resumed -- twice -- while two threads are busy in
 * calls and one is blocked in read(). The target must then finish with
 * its own checks passed (sums recounted, signal mask, the read's data:
 * the interrupted read() was restarted, not failed) and exit status 42.
 * Refusals: a pid that does not exist, a process another tracer holds
 * (the target untouched).
 *
 * Handshakes only: the target's "ready" line, then its reader thread
 * seen in read() in /proc/PID/task/TID/syscall; alarm() is a run-away
 * guard, never a synchronisation.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "inject.h"

struct target {
	pid_t pid;
	int in, out; /* its stdin (we write), its stdout (we read) */
};

static void target_start(struct target *t)
{
	int pin[2], pout[2];
	assert_int_equal(pipe2(pin, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pout, O_CLOEXEC), 0);
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(T_ATTACH, T_ATTACH, (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	t->in = pin[1];
	t->out = pout[0];
}

/* Reads the target's stdout until EOF (the guard is the test's alarm). */
static void target_output(struct target *t, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(t->out, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
}

static void target_ready(struct target *t)
{
	char line[16] = {0};
	size_t len = 0;
	while (len < 6 && read(t->out, line + len, 1) == 1)
		len++;
	assert_string_equal(line, "ready\n");
}

/* The thread blocked in read(0, ...): syscall 0 with first argument 0;
 * its tid, or 0. */
static pid_t target_reader_tid(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	pid_t found = 0;
	while (d && !found && (de = readdir(d))) {
		char p[320], buf[256] = {0};
		snprintf(p, sizeof(p), "/proc/%d/task/%s/syscall", (int)pid, de->d_name);
		FILE *f = fopen(p, "re");
		if (f && fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 0x0 ", 6))
			found = (pid_t)atoi(de->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static void wait_reading(pid_t pid)
{
	while (!target_reader_tid(pid)) /* a state, not a time: alarm guards */
		usleep(1000);
}

/* One attach: stop, dlopen the library (first round) or not, probe, resume. */
static void inject_round(pid_t pid, int x, bool load)
{
	char why[512] = "";
	struct ada_inject *in = NULL;
	int rc = ada_inject_stop(pid, &in, why, sizeof(why));
	if (rc)
		fail_msg("stop: %s", why);
	assert_int_equal(ada_inject_threads(in), 4);
	/* The calls run on the reader, stopped inside read() with SIGUSR1
	 * blocked: the hardest thread to leave as it was (its read must be
	 * restarted, its mask kept; the target checks both). */
	ssize_t reader = -1;
	for (size_t i = 0; i < ada_inject_threads(in); i++) {
		bool sc = false;
		assert_true(ada_inject_thread_pc(in, i, &sc) != 0);
		if (sc && ada_inject_thread_tid(in, i) == target_reader_tid(pid))
			reader = (ssize_t)i;
	}
	assert_true(reader >= 0);
	assert_int_equal(ada_inject_use_thread(in, (size_t)reader), 0);
	uint64_t ret = 0, fn = 0;
	if (load) {
		const char *lib = T_LIB;
		size_t len = strlen(lib) + 1;
		assert_int_equal(ada_inject_dlopen_addr(pid, &fn, why, sizeof(why)), 0);
		uint64_t args[2] = {ada_inject_scratch_addr(in, len), RTLD_NOW};
		rc = ada_inject_call(in, fn, args, 2, lib, len, &ret, why, sizeof(why));
		if (rc)
			fail_msg("dlopen call: %s", why);
		assert_true(ret != 0);
	}
	assert_int_equal(ada_inject_symbol(pid, "libt_inject", "t_inject_probe", &fn), 0);
	uint64_t a = (uint64_t)x;
	rc = ada_inject_call(in, fn, &a, 1, NULL, 0, &ret, why, sizeof(why));
	if (rc)
		fail_msg("probe call: %s", why);
	assert_int_equal((int)ret, 3 * x + 1);
	uint64_t pause = ada_inject_resume(in);
	assert_true(pause > 0);
	print_message("pause %.3f ms (%s)\n", pause / 1e6, load ? "dlopen + call" : "call");
}

static void test_inject_threads(void **state)
{
	(void)state;
	alarm(120);
	struct target t;
	target_start(&t);
	target_ready(&t);
	wait_reading(t.pid);
	inject_round(t.pid, 41, true);
	inject_round(t.pid, 7, false); /* attaching again works */
	/* Before the reader is released, it is back in read(): restarted. */
	wait_reading(t.pid);
	assert_int_equal(write(t.in, "go\n", 3), 3);
	char out[1024];
	target_output(&t, out, sizeof(out));
	int st = 0;
	assert_int_equal(waitpid(t.pid, &st, 0), t.pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 42)
		fail_msg("target status 0x%x, output:\n%s", st, out);
	assert_non_null(strstr(out, "read go\n"));
	assert_non_null(strstr(out, "mask ok\n"));
	assert_non_null(strstr(out, "busy 0 ok\n"));
	assert_non_null(strstr(out, "busy 1 ok\n"));
	close(t.in);
	close(t.out);
	alarm(0);
}

static void test_inject_no_such_pid(void **state)
{
	(void)state;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0); /* reaped: the pid is free */
	char why[512] = "";
	struct ada_inject *in = NULL;
	assert_int_equal(ada_inject_stop(pid, &in, why, sizeof(why)), -ESRCH);
	assert_non_null(strstr(why, "no process has pid"));
}

/* A process another tracer holds (here: this test, by PTRACE_TRACEME). */
static void test_inject_traced(void **state)
{
	(void)state;
	alarm(60);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		char c;
		while (read(p[0], &c, 1) < 0)
			;
		_exit(5);
	}
	close(p[0]);
	/* The child is traced once TRACEME returned; wait for the state. */
	for (;;) {
		char path[64], buf[4096] = {0};
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		FILE *f = fopen(path, "re");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = '\0';
		char want[64];
		snprintf(want, sizeof(want), "TracerPid:\t%d\n", (int)getpid());
		if (strstr(buf, want))
			break;
		usleep(1000);
	}
	char why[512] = "";
	struct ada_inject *in = NULL;
	assert_int_equal(ada_inject_stop(pid, &in, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "another tracer"));
	/* Untouched: it runs on and exits with its own status. */
	assert_int_equal(write(p[1], "x", 1), 1);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	close(p[1]);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inject_threads),
	    cmocka_unit_test(test_inject_no_such_pid),
	    cmocka_unit_test(test_inject_traced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
