/*
 * The PROCESS checks: may ada stop this pid with ptrace and load the
 * agent into it? Everything comes from /proc (status, maps, ns, limits)
 * and /proc/sys; the process is never stopped or signalled. The kernel's
 * own answer closes the list: opening /proc/PID/mem goes through the same
 * ptrace access check (PTRACE_MODE_ATTACH, Yama included) as the attach,
 * so "ptrace" is what the kernel says, and the checks before it say why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag_internal.h"

#define DIAG_CAP_SYS_PTRACE 19

struct diag_proc {
	pid_t pid;
	char status[8192];
	unsigned uid[4], gid[4];
	bool have_ids;
	bool cap_ptrace; /* ours */
};

/* Whether this process has capability bit cap in CapEff. */
static bool diag_self_cap(int cap)
{
	char buf[8192];
	if (diag_read_small("/proc/self/status", buf, sizeof(buf)) < 0)
		return false;
	const char *v = diag_field(buf, "CapEff");
	unsigned long long eff = v ? strtoull(v, NULL, 16) : 0;
	return (eff >> cap) & 1;
}

static void diag_user_name(unsigned uid, char *buf, size_t cap)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(buf, cap, "%s", pw.pw_name);
	else
		snprintf(buf, cap, "uid %u", uid);
}

/* "process": it exists, is a process (not a thread, not a zombie). */
static bool diag_alive(struct diag_proc *p, struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "process", "the process is running");
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	if (!c)
		return false;
	if (diag_read_small(path, p->status, sizeof(p->status)) < 0) {
		diag_set(
		    c, ADA_DIAG_FAIL, false,
		    "no process has pid %d: it has exited, or it runs in another pid namespace "
		    "(a container) that ada cannot see",
		    (int)p->pid);
		diag_step(c, "check the pid with ps; for a process in a container, run ada inside "
		             "that container");
		return false;
	}
	const char *st = diag_field(p->status, "State"), *tg = diag_field(p->status, "Tgid");
	if (tg && atoi(tg) != p->pid) {
		diag_set(c, ADA_DIAG_FAIL, true, "%d is a thread of process %d, not a process",
		         (int)p->pid, atoi(tg));
		diag_step(c, "give the process id %d instead", atoi(tg));
		return false;
	}
	if (st && (*st == 'Z' || *st == 'X')) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "pid %d has exited (a zombie its parent has not "
		         "reaped)",
		         (int)p->pid);
		diag_step(c, "start the program again and give the new pid, or record it from its "
		             "start with ada record");
		return false;
	}
	if (p->pid == getpid()) {
		diag_set(c, ADA_DIAG_FAIL, true, "pid %d is ada itself", (int)p->pid);
		diag_step(c, "give the pid of the program to record");
		return false;
	}
	const char *u = diag_field(p->status, "Uid"), *g = diag_field(p->status, "Gid");
	p->have_ids =
	    u && g &&
	    sscanf(u, "%u %u %u %u", &p->uid[0], &p->uid[1], &p->uid[2], &p->uid[3]) == 4 &&
	    sscanf(g, "%u %u %u %u", &p->gid[0], &p->gid[1], &p->gid[2], &p->gid[3]) == 4;
	diag_set(c, ADA_DIAG_OK, false, "pid %d is running", (int)p->pid);
	return true;
}

/* "owner": the kernel lets a user trace a process whose real, effective
 * and saved ids are all theirs; CAP_SYS_PTRACE may trace any. */
static void diag_owner(const struct diag_proc *p, struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "owner", "the process is ours to trace");
	if (!c || !p->have_ids)
		return;
	unsigned me = getuid(), myg = getgid();
	bool same = p->uid[0] == me && p->uid[1] == me && p->uid[2] == me && p->gid[0] == myg &&
	            p->gid[1] == myg && p->gid[2] == myg;
	char who[64];
	diag_user_name(p->uid[1], who, sizeof(who));
	if (same) {
		diag_set(c, ADA_DIAG_OK, false, "pid %d runs as you (%s)", (int)p->pid, who);
	} else if (p->cap_ptrace && p->uid[1] != geteuid()) {
		/* Root may trace it, but the agent inside runs with the process's
		 * rights: it could not write the session and arenas ada makes
		 * private to its own user (0700), and ada will not open them up. */
		diag_set(c, ADA_DIAG_FAIL, true,
		         "pid %d runs as %s and ada as uid %u: the agent ada loads into it runs as "
		         "%s and could not write the recording, which ada keeps private to its own "
		         "user",
		         (int)p->pid, who, (unsigned)geteuid(), who);
		diag_step(c, "run ada attach as %s (for example sudo -u %s ada attach %d)", who,
		          who, (int)p->pid);
	} else if (p->cap_ptrace) {
		diag_set(c, ADA_DIAG_OK, false,
		         "pid %d runs as %s, and ada has CAP_SYS_PTRACE, which may trace it",
		         (int)p->pid, who);
	} else {
		diag_set(c, ADA_DIAG_FAIL, true,
		         "pid %d runs as %s (uid %u/%u/%u, gid %u/%u/%u) and ada as uid %u gid %u: "
		         "a user may only trace processes whose every user and group id is theirs",
		         (int)p->pid, who, p->uid[0], p->uid[1], p->uid[2], p->gid[0], p->gid[1],
		         p->gid[2], me, myg);
		diag_step(c, "run ada attach as %s (for example sudo -u %s ada attach %d)", who,
		          who, (int)p->pid);
		diag_step(c, "or run it as root (sudo ada attach %d)", (int)p->pid);
	}
}

/* "dumpable": a process that changed credentials (setuid, or prctl
 * PR_SET_DUMPABLE 0) may be traced only with CAP_SYS_PTRACE. No /proc
 * field says so, but the kernel shows it (task_dump_owner()): the files
 * under /proc/PID of a process that is not dumpable belong to root (of its
 * user namespace) instead of its effective user. Not the directory
 * /proc/PID itself: that one always shows the effective user, so a file
 * inside it is what is looked at. A process whose effective user is root
 * shows nothing either way, and only root may trace it anyway. */
static void diag_dumpable(const struct diag_proc *p, struct ada_diag_report *rep)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	if (!p->have_ids || stat(path, &st) < 0)
		return;
	struct ada_diag_check *c = diag_add(rep, "dumpable", "the process is dumpable");
	if (!c)
		return;
	if (p->uid[1] == 0)
		diag_set(c, ADA_DIAG_OK, false,
		         "pid %d runs as root: dumpable or not, only root may trace it",
		         (int)p->pid);
	else if (st.st_uid == p->uid[1])
		diag_set(c, ADA_DIAG_OK, false, "pid %d is dumpable", (int)p->pid);
	else if (p->cap_ptrace)
		diag_set(c, ADA_DIAG_OK, false,
		         "pid %d is not dumpable, but ada has CAP_SYS_PTRACE, which may trace it",
		         (int)p->pid);
	else {
		diag_set(
		    c, ADA_DIAG_FAIL, true,
		    "pid %d is not dumpable (it changed credentials, as a setuid program does, "
		    "or asked not to be with prctl(PR_SET_DUMPABLE, 0); its /proc files belong "
		    "to uid %u, not to its user %u): only a tracer with CAP_SYS_PTRACE may "
		    "attach to it",
		    (int)p->pid, (unsigned)st.st_uid, p->uid[1]);
		diag_step(c, "run ada attach as root (sudo ada attach %d)", (int)p->pid);
		diag_step(c, "or record the program from its start with ada record, which needs no "
		             "ptrace");
	}
}

static const char *const diag_yama_meaning[] = {
    "classic: a user may trace their own processes",
    "restricted: a process may trace only its own descendants, unless the tracer has "
    "CAP_SYS_PTRACE",
    "admin-only: only a tracer with CAP_SYS_PTRACE may attach",
    "no attach: no process may attach with ptrace until the next reboot",
};

/* "yama": kernel.yama.ptrace_scope. `ada attach` is never the target's
 * ancestor, so from 1 up it needs CAP_SYS_PTRACE; 3 forbids it. */
static void diag_yama(const struct diag_proc *p, struct ada_diag_report *rep)
{
	char buf[32];
	struct ada_diag_check *c = diag_add(rep, "yama", "Yama ptrace_scope allows the attach");
	if (!c)
		return;
	if (diag_read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) < 0) {
		diag_set(c, ADA_DIAG_OK, false, "the Yama security module is not active");
		return;
	}
	int v = atoi(buf);
	const char *m = v >= 0 && v <= 3 ? diag_yama_meaning[v] : "unknown";
	if (v <= 0 || (v < 3 && p->cap_ptrace)) {
		diag_set(c, ADA_DIAG_OK, false, "kernel.yama.ptrace_scope is %d (%s)%s", v, m,
		         v > 0 ? "; ada has CAP_SYS_PTRACE" : "");
	} else if (v < 3) {
		diag_set(c, ADA_DIAG_FAIL, true, "kernel.yama.ptrace_scope is %d (%s)", v, m);
		diag_step(c, "run ada attach as root (sudo ada attach %d), which the policy allows",
		          (int)p->pid);
		diag_step(c, "or record the program from its start with ada record, which needs no "
		             "ptrace");
	} else {
		diag_set(c, ADA_DIAG_FAIL, false, "kernel.yama.ptrace_scope is %d (%s)", v, m);
		diag_step(c, "record the program from its start with ada record, which needs no "
		             "ptrace");
	}
}

/* "tracer": one tracer per process; a debugger already holds it. */
static void diag_tracer(const struct diag_proc *p, struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "tracer", "no debugger is attached");
	const char *t = diag_field(p->status, "TracerPid");
	if (!c || !t)
		return;
	int tr = atoi(t);
	if (!tr) {
		diag_set(c, ADA_DIAG_OK, false, "pid %d is not traced by anyone", (int)p->pid);
		return;
	}
	char path[64], comm[64] = "?";
	snprintf(path, sizeof(path), "/proc/%d/comm", tr);
	if (diag_read_small(path, comm, sizeof(comm)) > 0)
		comm[strcspn(comm, "\n")] = '\0';
	diag_set(c, ADA_DIAG_FAIL, true,
	         "pid %d is already traced by pid %d (%s), and a process can have only one tracer",
	         (int)p->pid, tr, comm);
	diag_step(c, "detach the debugger from it (gdb: detach; strace: stop it), then attach "
	             "again");
}

/* "seccomp": the agent opens, maps and locks memory in the target. */
static void diag_seccomp(const struct diag_proc *p, struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "seccomp", "no seccomp policy in the way");
	const char *s = diag_field(p->status, "Seccomp");
	const char *f = diag_field(p->status, "Seccomp_filters");
	if (!c)
		return;
	int mode = s ? atoi(s) : 0;
	if (mode == 0) {
		diag_set(c, ADA_DIAG_OK, false, "pid %d runs without seccomp", (int)p->pid);
	} else if (mode == 1) {
		diag_set(
		    c, ADA_DIAG_FAIL, false,
		    "pid %d runs in strict seccomp mode (only read, write, exit and sigreturn): "
		    "the agent's first other system call would kill it",
		    (int)p->pid);
		diag_step(c, "record the program with ada record instead, before it enters "
		             "strict mode");
	} else {
		diag_set(
		    c, ADA_DIAG_WARN, false,
		    "pid %d runs under %d seccomp filter%s: if a filter forbids a system call "
		    "the agent makes (openat, mmap, mprotect, mlock, ...), the call fails or the "
		    "process is killed, and ada cannot read the filter's rules",
		    (int)p->pid, f ? atoi(f) : 1, f && atoi(f) == 1 ? "" : "s");
		diag_step(c, "if the program's sandbox is yours to configure, record it with ada "
		             "record in a test environment first");
	}
}

/* "namespace": the agent in the target must open the session's files and
 * shared memory by the recorder's paths. */
static void diag_namespace(const struct diag_proc *p, struct ada_diag_report *rep)
{
	char a[128], b[128], path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)p->pid);
	ssize_t na = readlink("/proc/self/ns/mnt", a, sizeof(a) - 1);
	ssize_t nb = readlink(path, b, sizeof(b) - 1);
	if (na < 0 || nb < 0)
		return; /* not permitted: the ptrace checks say why */
	struct ada_diag_check *c = diag_add(rep, "namespace", "the same mount namespace");
	if (!c)
		return;
	if (na == nb && !memcmp(a, b, (size_t)na)) {
		diag_set(c, ADA_DIAG_OK, false, "pid %d sees the same files as ada", (int)p->pid);
		return;
	}
	diag_set(c, ADA_DIAG_FAIL, true,
	         "pid %d runs in another mount namespace (a container): the agent inside it could "
	         "not open the session's shared memory and files",
	         (int)p->pid);
	diag_step(c, "run ada inside that container (the same mount and pid namespaces)");
}

/* "libc": dlopen comes from the target's libc (glibc >= 2.34). After the
 * program checks, so that a static program is called static first. */
void diag_process_libc(pid_t pid, struct ada_diag_report *rep)
{
	const struct diag_proc q = {.pid = pid}, *p = &q;
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	bool libc = false;
	for (int i = 0; i < 1000000 && fgets(line, sizeof(line), f); i++)
		if (strstr(line, "/libc.so.6") || strstr(line, "/libc-2.")) {
			libc = true;
			break;
		}
	fclose(f);
	struct ada_diag_check *c = diag_add(rep, "libc", "a C library that can dlopen the agent");
	if (!c)
		return;
	if (libc) {
		diag_set(c, ADA_DIAG_OK, false, "pid %d has the GNU C library mapped", (int)p->pid);
		return;
	}
	diag_set(c, ADA_DIAG_FAIL, false,
	         "pid %d has no GNU C library mapped (a static program, or another libc), so "
	         "there is no dlopen to load the agent with",
	         (int)p->pid);
	diag_step(c, "rebuild the program dynamically linked against glibc, or record it from its "
	             "start with ada record if it is dynamic");
}

/* "ptrace": the kernel's answer (/proc/PID/mem needs ptrace attach rights). */
static void diag_ptrace(const struct diag_proc *p, const struct ada_diag_report *before,
                        struct ada_diag_report *rep)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)p->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	struct ada_diag_check *c = diag_add(rep, "ptrace", "the kernel lets ada trace it");
	if (!c)
		return;
	if (!err) {
		diag_set(c, ADA_DIAG_OK, false, "the kernel lets ada trace pid %d", (int)p->pid);
		return;
	}
	bool explained = ada_diag_first_fail(before) != NULL;
	diag_set(c, ADA_DIAG_FAIL, !explained || err == EACCES || err == EPERM,
	         "the kernel refuses ada the right to trace pid %d (%s)%s", (int)p->pid,
	         strerror(err),
	         explained ? ": the failed checks above say why"
	                   : ": a security module (SELinux, AppArmor) may forbid it");
	if (explained)
		diag_step(c, "do what the failed checks above say; this one follows from them");
	else
		diag_step(c, "run ada attach as root, or ask the administrator which policy "
		             "forbids tracing it");
}

bool diag_process(const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	struct diag_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return false;
	p->pid = o->pid;
	p->cap_ptrace = diag_self_cap(DIAG_CAP_SYS_PTRACE);
	bool alive = diag_alive(p, rep);
	if (alive) {
		char exe[64];
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p->pid);
		ssize_t n = readlink(exe, rep->target, sizeof(rep->target) - 1);
		if (n < 0)
			snprintf(rep->target, sizeof(rep->target), "%s", exe);
		diag_owner(p, rep);
		diag_dumpable(p, rep);
		diag_yama(p, rep);
		diag_tracer(p, rep);
		diag_seccomp(p, rep);
		diag_namespace(p, rep);
		diag_ptrace(p, rep, rep);
	} else {
		snprintf(rep->target, sizeof(rep->target), "pid %d", (int)p->pid);
	}
	free(p);
	return alive;
}
