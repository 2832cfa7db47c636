/*
 * ada serve [--dir DIR] [--out DIR]: the per-user control daemon (serve.h,
 * docs/control.md "ada serve"). Started by hand (or by the systemd user
 * unit in contrib/); SIGINT or SIGTERM stops it, and it stops the
 * recordings it started first (each finalizes its session).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "fs.h"
#include "serve.h"

#define SERVE_STOP_WAIT_SEC 30 /* recordings finalizing when the daemon stops */

static void sv_usage(FILE *f)
{
	fprintf(f, "usage: ada serve [--dir DIR] [--out DIR]\n"
	           "  A control daemon for this user: JSON-RPC 2.0 on DIR/ctl/control.sock\n"
	           "  (spawn, attach, diagnose, list, status, stop, call: docs/control.md).\n"
	           "  --dir DIR   its directory, private to the user (default\n"
	           "              $XDG_RUNTIME_DIR/ada-serve, else /tmp/ada-serve-UID)\n"
	           "  --out DIR   where sessions go unless a request says (default ./ada_traces)\n"
	           "  Stops on SIGINT or SIGTERM, stopping the recordings it started first.\n");
}

static int sv_default_dir(char *dir, size_t cap)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	int n = run && run[0] == '/' ? snprintf(dir, cap, "%s/ada-serve", run)
	                             : snprintf(dir, cap, "/tmp/ada-serve-%u", (unsigned)geteuid());
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

/* An absolute form of path (relative to the working directory). */
static int sv_absolute(const char *path, char *out, size_t cap)
{
	char cwd[PATH_MAX];
	int n = path[0] == '/'             ? snprintf(out, cap, "%s", path)
	        : getcwd(cwd, sizeof(cwd)) ? snprintf(out, cap, "%s/%s", cwd, path)
	                                   : -1;
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

/* Whether a daemon answers on DIR's socket (a stale one from a daemon
 * that was killed does not). */
static bool sv_alive(int dir_fd)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/ctl/control.sock", dir_fd);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool up = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return up;
}

/* Listens in dir_fd, replacing what a killed daemon left. */
static int sv_listen(struct ada_control *c, int dir_fd, const char *dir)
{
	int rc = ada_control_listen(c, dir_fd);
	if (rc != -EEXIST)
		return rc;
	if (sv_alive(dir_fd)) {
		ada_log("ada serve is already running on %s/ctl/control.sock", dir);
		return -EALREADY;
	}
	int ctl;
	if (ada_fs_open_dir(dir_fd, "ctl", &ctl) == 0) { /* ours: dir_fd is private */
		unlinkat(ctl, "control.sock", 0);
		close(ctl);
	}
	unlinkat(dir_fd, "ctl", AT_REMOVEDIR);
	return ada_control_listen(c, dir_fd);
}

static int sv_setup(struct serve *s, const char *dir, const char *out, int *dir_fd)
{
	char why[512] = "";
	int logs, rc = ada_fs_walk(dir, geteuid(), ADA_FS_WALK_CREATE, dir_fd, why, sizeof(why));
	struct stat st;

	if (rc == 0 && (fstat(*dir_fd, &st) < 0 || (st.st_mode & 077)))
		rc = -EPERM,
		snprintf(why, sizeof(why), "%s is open to other users (chmod 700)", dir);
	if (rc == 0)
		rc = ada_fs_mkdir(*dir_fd, "logs", 0, &logs);
	if (rc < 0) {
		ada_log("%s: %s", dir, why[0] ? why : strerror(-rc));
		return rc;
	}
	close(logs);
	ssize_t k = readlink("/proc/self/exe", s->ada, sizeof(s->ada) - 1);
	s->ada[k > 0 ? k : 0] = '\0';
	snprintf(s->logs, sizeof(s->logs), "%s/logs", dir);
	if (sv_absolute(out, s->out, sizeof(s->out)) || k <= 0) {
		ada_log("%s: path too long", out);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Until SIGINT/SIGTERM: reaps the children. Then stops the recordings and
 * waits (bounded) for them to finalize. */
static void sv_loop(struct serve *s, const sigset_t *set)
{
	int sig;
	while ((sig = sigwaitinfo(set, NULL)) == SIGCHLD || sig == SIGHUP ||
	       (sig < 0 && errno == EINTR))
		serve_reap(s);
	size_t n = serve_stop_all(s);
	if (n)
		ada_log("stopping %zu recording%s", n, n == 1 ? "" : "s");
	struct timespec tick = {1, 0};
	for (int t = 0; t < SERVE_STOP_WAIT_SEC && n; t++) {
		sigtimedwait(set, NULL, &tick);
		serve_reap(s);
		pthread_mutex_lock(&s->mu);
		n = 0;
		for (size_t i = 0; i < s->n; i++)
			n += s->rec[i].running;
		pthread_mutex_unlock(&s->mu);
	}
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {{"dir", required_argument, NULL, 'd'},
	                                     {"out", required_argument, NULL, 'o'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {0}};
	static struct serve s = {.mu = PTHREAD_MUTEX_INITIALIZER};
	char dir[PATH_MAX] = "";
	const char *out = "ada_traces";
	int c, dir_fd = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'd' && sv_absolute(optarg, dir, sizeof(dir)) == 0)
			continue;
		if (c == 'o') {
			out = optarg;
			continue;
		}
		sv_usage(c == 'h' ? stdout : stderr);
		return c == 'h' ? 0 : 2;
	}
	if (optind != argc || (!dir[0] && sv_default_dir(dir, sizeof(dir)))) {
		sv_usage(stderr);
		return 2;
	}
	if (sv_setup(&s, dir, out, &dir_fd) < 0)
		return 1;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT), sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD), sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the poll thread: it inherits the mask */
	struct ada_control_host h = {.session_fd = -1,
	                             .methods = serve_methods,
	                             .nmethods = serve_nmethods,
	                             .methods_only = true,
	                             .ctx = &s};
	struct ada_control *ctl = NULL;
	int rc = ada_control_new(&h, &ctl);
	if (!rc)
		rc = sv_listen(ctl, dir_fd, dir);
	if (!rc)
		rc = ada_control_start(ctl);
	if (rc) {
		if (rc != -EALREADY)
			ada_log("%s: cannot listen: %s", dir, strerror(-rc));
		ada_control_free(ctl);
		close(dir_fd);
		return 1;
	}
	printf("%s/ctl/control.sock\n", dir);
	fflush(stdout);
	sv_loop(&s, &set);
	ada_control_free(ctl);
	close(dir_fd);
	return 0;
}
