/*
 * The status of children the program reaps itself (not hook context;
 * issue 14).
 *
 * The recorder learns a process's exit status from waitpid when it reaps
 * it (it is the child subreaper), or from the agent when the process
 * called exit() or died of a signal the agent catches. A child reaped by
 * its own traced parent and killed by a signal no agent sees (SIGTERM,
 * SIGKILL: multiprocessing's pool workers) would end with status and
 * signal unknown. So the agent exports the wait family: each calls the
 * real function and, when it reaped a child (not WNOWAIT, not a stop or a
 * continue), writes the raw wait status as decimal text into
 * $ADA_SESSION_DIR/pid_<child>/reaped_status -- only when that directory
 * exists (the child was recorded), is ours and is not a link; the file is
 * made anew (O_EXCL), never written through a link. The drain reads it when it
 * finalizes that process (src/wal/drain.c, manifest.c).
 *
 * Threads: any, also from a signal handler (a SIGCHLD handler that
 * reaps): only open/write/close, the stack and what the constructor
 * prepared; errno is kept.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_internal.h"

#define WAIT_EXPORT __attribute__((visibility("default")))

static struct {
	char dir[PATH_MAX]; /* the session directory, "" when not recording */
	pid_t (*wait4)(pid_t, int *, int, struct rusage *);
	int (*waitid)(idtype_t, id_t, siginfo_t *, int);
} wait_st;

static void *wait_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Resolved here, so that a wrapper called from a signal handler does not
 * call dlsym; on first use only when the agent did not start. */
void agent_wait_setup(void)
{
	if (agent.session_dir[0] && strlen(agent.session_dir) < sizeof(wait_st.dir) - 64)
		strcpy(wait_st.dir, agent.session_dir);
	wait_st.wait4 = wait_next("wait4");
	wait_st.waitid = wait_next("waitid");
}

/* Decimal digits of v (v >= 0) at p; returns the end. */
static char *wait_itoa(char *p, unsigned v)
{
	char tmp[16];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < 16);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* pid_<pid> under the session, a directory of ours: opened without
 * following a link at it (a planted pid_N link is not written through),
 * and only when it belongs to us. -1 otherwise. */
static int wait_open_pid_dir(pid_t pid)
{
	char name[32] = "pid_";
	*wait_itoa(name + 4, (unsigned)pid) = '\0';
	int sfd = open(wait_st.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return -1;
	int dfd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(sfd);
	struct stat st;
	if (dfd >= 0 && (fstat(dfd, &st) < 0 || st.st_uid != geteuid())) {
		close(dfd);
		dfd = -1;
	}
	return dfd;
}

static void wait_note(pid_t pid, int status)
{
	if (pid <= 0 || !wait_st.dir[0] || !(WIFEXITED(status) || WIFSIGNALED(status)))
		return;
	int saved = errno;
	int dfd = wait_open_pid_dir(pid);
	if (dfd >= 0) {
		/* A new file, never one that is there (a link planted there, or
		 * the note of an earlier process with this pid). */
		unlinkat(dfd, "reaped_status", 0);
		int fd = openat(dfd, "reaped_status",
		                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			char text[16], *e = wait_itoa(text, (unsigned)status);
			*e++ = '\n';
			if (write(fd, text, (size_t)(e - text)) < 0) {
				/* the status stays unknown, as without the wrapper */
			}
			close(fd);
		}
		close(dfd);
	}
	errno = saved;
}

#define WAIT_REAL(field, name)                                                                     \
	do {                                                                                       \
		if (!wait_st.field)                                                                \
			wait_st.field = wait_next(name);                                           \
	} while (0)

WAIT_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	WAIT_REAL(wait4, "wait4");
	if (!wait_st.wait4) {
		errno = ENOSYS;
		return -1;
	}
	int st = 0;
	pid_t r = wait_st.wait4(pid, &st, options, ru);
	if (r > 0) {
		if (status)
			*status = st;
		wait_note(r, st);
	}
	return r;
}

WAIT_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	return wait4(pid, status, options, NULL);
}

WAIT_EXPORT pid_t wait(int *status)
{
	return wait4(-1, status, 0, NULL);
}

WAIT_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	return wait4(-1, status, options, ru);
}

WAIT_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	WAIT_REAL(waitid, "waitid");
	if (!wait_st.waitid) {
		errno = ENOSYS;
		return -1;
	}
	int r = wait_st.waitid(idtype, id, info, options);
	if (r == 0 && info && !(options & WNOWAIT) && info->si_pid > 0) {
		if (info->si_code == CLD_EXITED)
			wait_note(info->si_pid, (info->si_status & 0xff) << 8);
		else if (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)
			wait_note(info->si_pid, (info->si_status & 0x7f) |
			                            (info->si_code == CLD_DUMPED ? 0x80 : 0));
	}
	return r;
}
