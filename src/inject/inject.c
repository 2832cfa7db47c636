/*
 * Stopping every thread of a process, a function call on one of them,
 * and resuming them all (the protocol is in inject.h).
 *
 * Threads: the caller's thread only. ptrace requests are bound to the
 * thread that seized the tracee, so one thread must do stop, call and
 * resume.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "inject_internal.h"

#define INJECT_MAX_THREADS 65536
#define INJECT_MAX_ROUNDS 1000 /* listings of /proc/PID/task before giving up */

struct inject_thread {
	pid_t tid;
	int sig;   /* the signal it was stopped for (0: our interrupt) */
	bool gone; /* exited while we held it */
	struct inject_regs regs;
};

struct ada_inject {
	pid_t pid;
	int mem_fd; /* /proc/PID/mem */
	uint64_t t0;
	size_t n, cap;
	struct inject_thread *th;
	bool chosen; /* calls go to th[caller] (ada_inject_use_thread) */
	size_t caller;
	uint64_t call_timeout_ns; /* 0: none */
};

static uint64_t inject_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void inject_why(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	if (!why || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

static bool inject_has(const struct ada_inject *in, pid_t tid)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->th[i].tid == tid)
			return true;
	return false;
}

/* Waits for tid's stop after the interrupt: the interrupt's event stop,
 * or a signal-delivery stop that came first (kept: its signal is passed
 * on at resume). 0, or -ESRCH when the thread exited. */
static int inject_wait_stop(struct inject_thread *t)
{
	for (;;) {
		int st;
		pid_t r = waitpid(t->tid, &st, __WALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return -ESRCH;
		if (!WIFSTOPPED(st))
			continue;
		int event = st >> 16;
		if (event == PTRACE_EVENT_STOP) {
			t->sig = 0;
			return 0;
		}
		if (event == 0) { /* signal-delivery stop: hold it there */
			t->sig = WSTOPSIG(st);
			return 0;
		}
		/* another event (exec, exit): let it go on to our stop */
		ptrace(PTRACE_CONT, t->tid, 0, 0);
	}
}

/* Whether thread tid of pid has exited (a zombie or dead task, or gone
 * from /proc): the kernel refuses to seize such a thread with EPERM. */
static bool inject_exited(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold anything */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Seizes and interrupts one new thread. 0, 1 (it exited meanwhile), or
 * -errno. */
static int inject_take(struct ada_inject *in, pid_t tid)
{
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 16;
		struct inject_thread *th =
		    cap <= INJECT_MAX_THREADS ? realloc(in->th, cap * sizeof(*th)) : NULL;
		if (!th)
			return -ENOMEM;
		in->th = th;
		in->cap = cap;
	}
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
		int err = errno;
		return err == ESRCH || (err == EPERM && inject_exited(in->pid, tid)) ? 1 : -err;
	}
	struct inject_thread *t = &in->th[in->n];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	in->n++;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || inject_wait_stop(t) < 0) {
		t->gone = true;
		return 1;
	}
	return inject_arch_get_regs(tid, &t->regs);
}

/* One listing of /proc/PID/task: takes every thread not yet held.
 * Returns how many were new, or -errno. */
static int inject_round(struct ada_inject *in, char *why, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)in->pid);
	DIR *d = opendir(path);
	if (!d) {
		inject_why(why, cap, "no process has pid %d", (int)in->pid);
		return -ESRCH;
	}
	int fresh = 0, err = 0;
	struct dirent *de;
	while (!err && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || inject_has(in, tid))
			continue;
		int r = inject_take(in, tid);
		if (r < 0) {
			err = r;
			inject_why(why, cap,
			           r == -EPERM
			               ? "the kernel refuses to let ada trace pid %d (another "
			                 "tracer holds it, or ada may not trace it: run ada "
			                 "diagnose %d)"
			               : "cannot stop thread %d of pid %d: %s",
			           r == -EPERM ? (int)in->pid : tid,
			           r == -EPERM ? (int)in->pid : (int)in->pid, strerror(-r));
		} else if (r == 0) {
			fresh++;
		}
	}
	closedir(d);
	return err ? err : fresh;
}

int ada_inject_stop(pid_t pid, struct ada_inject **out, char *why, size_t cap)
{
	struct ada_inject *in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->pid = pid;
	in->mem_fd = -1;
	in->t0 = inject_now();
	int r = 1;
	for (int round = 0; r > 0 && round < INJECT_MAX_ROUNDS; round++)
		r = inject_round(in, why, cap);
	if (r > 0) {
		inject_why(why, cap, "pid %d creates threads faster than ada can stop them",
		           (int)pid);
		r = -EAGAIN;
	}
	if (r == 0 && in->n == 0) {
		inject_why(why, cap, "no process has pid %d", (int)pid);
		r = -ESRCH;
	}
	char mem[64];
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
	if (r == 0 && (in->mem_fd = open(mem, O_RDWR | O_CLOEXEC)) < 0) {
		r = -errno;
		inject_why(why, cap, "cannot open the memory of pid %d: %s", (int)pid,
		           strerror(-r));
	}
	if (r < 0) {
		ada_inject_resume(in);
		return r;
	}
	*out = in;
	return 0;
}

int inject_mem_fd(const struct ada_inject *in)
{
	return in->mem_fd;
}

static const struct inject_thread *inject_caller(const struct ada_inject *in)
{
	if (in->chosen)
		return &in->th[in->caller];
	for (size_t i = 0; i < in->n; i++)
		if (!in->th[i].gone && in->th[i].sig == 0)
			return &in->th[i];
	return NULL;
}

pid_t inject_call_tid(const struct ada_inject *in)
{
	const struct inject_thread *t = inject_caller(in);
	return t ? t->tid : 0;
}

const struct inject_regs *inject_call_regs(const struct ada_inject *in)
{
	const struct inject_thread *t = inject_caller(in);
	return t ? &t->regs : NULL;
}

pid_t ada_inject_thread_tid(const struct ada_inject *in, size_t i)
{
	return i < in->n ? in->th[i].tid : 0;
}

uint64_t ada_inject_thread_tls(const struct ada_inject *in, size_t i)
{
	return i < in->n ? inject_arch_tls(&in->th[i].regs) : 0;
}

int ada_inject_use_thread(struct ada_inject *in, size_t i)
{
	if (i >= in->n || in->th[i].gone || in->th[i].sig)
		return -EINVAL;
	in->chosen = true;
	in->caller = i;
	return 0;
}

size_t ada_inject_threads(const struct ada_inject *in)
{
	return in->n;
}

uint64_t ada_inject_thread_pc(const struct ada_inject *in, size_t i, bool *in_syscall)
{
	const struct inject_regs *r = &in->th[i].regs;
	if (in_syscall)
		*in_syscall = inject_arch_in_syscall(r);
	return inject_arch_pc(r);
}

void inject_reap_exits(struct ada_inject *in, pid_t except)
{
	for (size_t i = 0; i < in->n; i++) {
		struct inject_thread *t = &in->th[i];
		int st;
		if (t->gone || t->tid == except)
			continue;
		/* Held threads are stopped: the only news they can have is
		 * their exit (a fatal signal to the process). */
		pid_t r = waitpid(t->tid, &st, __WALL | WNOHANG);
		if (r < 0 || (r == t->tid && (WIFEXITED(st) || WIFSIGNALED(st))))
			t->gone = true;
	}
}

void ada_inject_set_call_timeout(struct ada_inject *in, uint64_t ns)
{
	in->call_timeout_ns = ns;
}

uint64_t inject_call_timeout(const struct ada_inject *in)
{
	return in->call_timeout_ns;
}

int ada_inject_thread_set_pc(struct ada_inject *in, size_t i, uint64_t pc)
{
	if (i >= in->n || in->th[i].gone)
		return -EINVAL;
	struct inject_regs r;
	int rc = inject_arch_get_regs(in->th[i].tid, &r);
	if (rc)
		return rc;
	inject_arch_set_pc(&r, pc);
	rc = inject_arch_set_regs(in->th[i].tid, &r);
	if (rc)
		return rc;
	inject_arch_set_pc(&in->th[i].regs, pc);
	return 0;
}

int ada_inject_peek(const struct ada_inject *in, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(in->mem_fd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

uint64_t ada_inject_resume(struct ada_inject *in)
{
	if (!in)
		return 0;
	for (size_t i = 0; i < in->n; i++)
		if (!in->th[i].gone)
			ptrace(PTRACE_DETACH, in->th[i].tid, 0, (void *)(long)in->th[i].sig);
	uint64_t pause = inject_now() - in->t0;
	if (in->mem_fd >= 0)
		close(in->mem_fd);
	free(in->th);
	free(in);
	return pause;
}
