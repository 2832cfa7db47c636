/*
 * ada serve's methods (serve.h): starting recordings as children, finding
 * their sessions, and reaching them through their own control sockets.
 * Every parameter is a client's input: checked for type and length before
 * it becomes an argument of a child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

#define SERVE_DIAG_OUT_MAX (4u << 20) /* bytes of `ada diagnose --json` read */
#define SERVE_DIAG_WAIT_MS 60000      /* diagnose: the child's time */

static void serve_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ params */

/* The strings of params[key] appended to argv (an absent key adds none).
 * -EINVAL with why when it is not an array of strings or too long. */
static int serve_strings(json_t *params, const char *key, bool required, const char **argv,
                         size_t *argc, char *why, size_t cap)
{
	const json_t *a = json_object_get(params, key), *v;
	size_t i;

	if (!a && !required)
		return 0;
	if (!json_is_array(a) || (required && !json_array_size(a))) {
		snprintf(why, cap, "\"%s\" must be %s array of strings", key,
		         required ? "a non-empty" : "an");
		return -EINVAL;
	}
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || !*s || strlen(s) >= PATH_MAX) {
			snprintf(why, cap, "\"%s\"[%zu] must be a non-empty string shorter than %d",
			         key, i, PATH_MAX);
			return -EINVAL;
		}
		if (*argc >= SERVE_ARGS_MAX - 2) {
			snprintf(why, cap, "too many arguments (at most %u in all)",
			         SERVE_ARGS_MAX - 8);
			return -EINVAL;
		}
		argv[(*argc)++] = s;
	}
	return 0;
}

/* An optional absolute path params[key] (NULL when absent). */
static int serve_path(json_t *params, const char *key, const char **out, char *why, size_t cap)
{
	const json_t *v = json_object_get(params, key);

	*out = NULL;
	if (!v)
		return 0;
	*out = json_string_value(v);
	if (!*out || (*out)[0] != '/' || strlen(*out) >= PATH_MAX) {
		snprintf(why, cap, "\"%s\" must be an absolute path", key);
		return -EINVAL;
	}
	return 0;
}

/* The recording params["id"] names, under s->mu (NULL: said in why). */
static struct serve_rec *serve_find(struct serve *s, json_t *params, char *why, size_t cap)
{
	json_int_t id = json_integer_value(json_object_get(params, "id"));

	for (size_t i = 0; i < s->n; i++)
		if (s->rec[i].id == (unsigned)id && id > 0)
			return &s->rec[i];
	snprintf(why, cap, "no recording %lld: `list` shows the daemon's recordings",
	         (long long)id);
	return NULL;
}

/* ----------------------------------------------------------- children */

/* The child: stdout to out_fd, stderr to err_fd (-1: /dev/null), stdin
 * from /dev/null, a session of its own (a signal to the daemon's terminal
 * is not for it). */
static void serve_exec(const char *ada, char *const *argv, int out_fd, int err_fd, const char *cwd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	setsid();
	if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 ||
	    dup2(err_fd >= 0 ? err_fd : null, 2) < 0 || (cwd && chdir(cwd) < 0))
		_exit(126);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* the daemon blocks what it waits for */
	execv(ada, argv);
	_exit(127);
}

/* Starts `ada argv…` into a new table entry; *rec on success. */
static int serve_start(struct serve *s, const char **argv, const char *cwd, const char *what,
                       struct serve_rec **rec, char *why, size_t cap)
{
	pthread_mutex_lock(&s->mu);
	if (s->n == SERVE_MAX) {
		pthread_mutex_unlock(&s->mu);
		snprintf(why, cap, "the daemon tracks %u recordings already", SERVE_MAX);
		return -EBUSY;
	}
	struct serve_rec *r = &s->rec[s->n];
	*r = (struct serve_rec){.id = ++s->next_id};
	snprintf(r->what, sizeof(r->what), "%s", what);
	int fd = snprintf(r->log, sizeof(r->log), "%s/%u.log", s->logs, r->id) < (int)sizeof(r->log)
	             ? open(r->log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
	             : (errno = ENAMETOOLONG, -1);
	pid_t pid = fd < 0 ? -1 : fork();
	if (pid == 0)
		serve_exec(s->ada, (char *const *)argv, fd, fd, cwd);
	int err = fd < 0 || pid < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (!err) {
		r->pid = pid;
		r->running = true;
		s->n++;
		*rec = r;
	}
	pthread_mutex_unlock(&s->mu);
	if (err)
		snprintf(why, cap, "cannot start ada: %s", strerror(err));
	return -err;
}

/* The session a finished recording wrote, from its log's last line (ada
 * record and ada attach print the directory last, on stderr): a recording
 * that ended before its control thread registered it is found too. "" when
 * the line is not an existing session directory. */
static void serve_session_from_log(const char *log, char *dir, size_t cap)
{
	char buf[PATH_MAX + 512];
	struct stat st;
	int fd = open(log, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	dir[0] = 0;
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t at = end > (off_t)sizeof(buf) - 1 ? end - (off_t)(sizeof(buf) - 1) : 0;
	ssize_t n = end > 0 ? pread(fd, buf, (size_t)(end - at), at) : 0;
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	char *line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	const char *base = strrchr(line, '/');
	if (line[0] == '/' && base && !strncmp(base + 1, "session_", 8) && strlen(line) < cap &&
	    lstat(line, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(dir, cap, "%s", line);
}

/* Waits (bounded) until the recording's session directory is known: the
 * per-user registry names it by the pid of `ada record`/`ada attach`, or
 * once it ended, its log's last line. */
static void serve_find_session(struct serve *s, struct serve_rec *r)
{
	char pid[24], dir[PATH_MAX], why[256];
	bool running = true;

	snprintf(pid, sizeof(pid), "%d", (int)r->pid);
	for (unsigned t = 0; t < SERVE_SESSION_WAIT * 50; t++) {
		int rc = ada_control_session_of(pid, dir, sizeof(dir), why, sizeof(why));
		pthread_mutex_lock(&s->mu);
		running = r->running;
		if (rc == 0 || rc == -ECONNREFUSED)
			snprintf(r->session, sizeof(r->session), "%s", dir);
		pthread_mutex_unlock(&s->mu);
		if (rc == 0 || rc == -ECONNREFUSED)
			return;
		if (!running)
			break;
		serve_sleep_ms(20);
	}
	if (running)
		return; /* still starting: `list` says "no session yet" */
	serve_session_from_log(r->log, dir, sizeof(dir));
	pthread_mutex_lock(&s->mu);
	if (!r->session[0])
		snprintf(r->session, sizeof(r->session), "%s", dir);
	pthread_mutex_unlock(&s->mu);
}

static json_t *serve_rec_json(const struct serve_rec *r)
{
	json_t *o = json_pack("{s:i, s:s, s:i, s:b, s:s, s:s}", "id", (int)r->id, "kind",
	                      r->attach ? "attach" : "record", "pid", (int)r->pid, "running",
	                      r->running, "log", r->log, "what", r->what);
	json_object_set_new(o, "session", r->session[0] ? json_string(r->session) : json_null());
	if (r->attach)
		json_object_set_new(o, "target", json_integer(r->target));
	if (!r->running && WIFEXITED(r->wait_status))
		json_object_set_new(o, "exit_status", json_integer(WEXITSTATUS(r->wait_status)));
	else if (!r->running && WIFSIGNALED(r->wait_status))
		json_object_set_new(o, "signal", json_integer(WTERMSIG(r->wait_status)));
	return o;
}

/* Starts a recording (ada record or ada attach) and answers with it. */
static int serve_launch(struct serve *s, const char **argv, const char *cwd, const char *what,
                        pid_t target, json_t **result, char *why, size_t cap)
{
	struct serve_rec *r = NULL;
	int rc = serve_start(s, argv, cwd, what, &r, why, cap);
	if (rc < 0)
		return rc;
	r->attach = target != 0;
	r->target = target;
	serve_find_session(s, r);
	pthread_mutex_lock(&s->mu);
	*result = serve_rec_json(r);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* ------------------------------------------------------------ methods */

static int serve_spawn(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct serve *s = ctx;
	const char *argv[SERVE_ARGS_MAX], *out, *cwd;
	size_t argc = 0;

	argv[argc++] = "ada";
	argv[argc++] = "record";
	int rc = serve_path(params, "out", &out, why, cap);
	if (!rc)
		rc = serve_path(params, "cwd", &cwd, why, cap);
	if (rc)
		return rc;
	argv[argc++] = "--out";
	argv[argc++] = out ? out : s->out;
	rc = serve_strings(params, "options", false, argv, &argc, why, cap);
	if (!rc) {
		argv[argc++] = "--";
		rc = serve_strings(params, "program", true, argv, &argc, why, cap);
	}
	if (rc)
		return rc;
	argv[argc] = NULL;
	const char *prog = json_string_value(json_array_get(json_object_get(params, "program"), 0));
	return serve_launch(s, argv, cwd, prog, 0, result, why, cap);
}

static int serve_attach(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct serve *s = ctx;
	const char *argv[SERVE_ARGS_MAX], *out;
	char pid[24];
	size_t argc = 0;
	json_int_t p = json_integer_value(json_object_get(params, "pid"));

	if (p <= 0 || p > INT32_MAX) {
		snprintf(why, cap, "\"pid\" must be the process id to attach to");
		return -EINVAL;
	}
	snprintf(pid, sizeof(pid), "%lld", (long long)p);
	int rc = serve_path(params, "out", &out, why, cap);
	if (rc)
		return rc;
	argv[argc++] = "ada";
	argv[argc++] = "attach";
	argv[argc++] = pid;
	argv[argc++] = "--out";
	argv[argc++] = out ? out : s->out;
	rc = serve_strings(params, "options", false, argv, &argc, why, cap);
	if (rc)
		return rc;
	argv[argc] = NULL;
	return serve_launch(s, argv, NULL, pid, (pid_t)p, result, why, cap);
}

/* Reads the child's stdout through fd until it closes (bounded). */
static int serve_read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 65536;
	*len = 0;
	*buf = malloc(cap);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (*buf && poll(&p, 1, SERVE_DIAG_WAIT_MS) > 0) {
		if (*len + 1 == cap && cap < SERVE_DIAG_OUT_MAX) {
			char *b = realloc(*buf, cap * 2);
			if (!b)
				break;
			*buf = b;
			cap *= 2;
		}
		ssize_t k = read(fd, *buf + *len, cap - 1 - *len);
		if (k <= 0)
			return k == 0 ? 0 : -errno;
		*len += (size_t)k;
		if (*len + 1 == cap && cap >= SERVE_DIAG_OUT_MAX)
			return -EFBIG;
	}
	return *buf ? -ETIMEDOUT : -ENOMEM;
}

/* `ada diagnose TARGET --json [--out DIR]`, its JSON as the answer. */
static int serve_diagnose(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct serve *s = ctx;
	const char *path = json_string_value(json_object_get(params, "path")), *out;
	json_int_t p = json_integer_value(json_object_get(params, "pid"));
	char pid[24];
	int pipefd[2];

	if ((!path) == (p <= 0) || (path && (path[0] != '/' || strlen(path) >= PATH_MAX))) {
		snprintf(why, cap, "give \"path\" (an absolute path of a program) or \"pid\"");
		return -EINVAL;
	}
	int rc = serve_path(params, "out", &out, why, cap);
	if (rc)
		return rc;
	snprintf(pid, sizeof(pid), "%lld", (long long)p);
	const char *argv[] = {
	    "ada", "diagnose", path ? path : pid, "--json", "--out", out ? out : s->out, NULL};
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid_t c = fork();
	if (c == 0)
		serve_exec(s->ada, (char *const *)argv, pipefd[1], -1, NULL);
	close(pipefd[1]);
	char *buf = NULL;
	size_t len = 0;
	rc = c < 0 ? -errno : serve_read_all(pipefd[0], &buf, &len);
	close(pipefd[0]);
	if (c > 0 && rc < 0)
		kill(c, SIGKILL);
	json_error_t e;
	*result = rc == 0 ? json_loadb(buf, len, 0, &e) : NULL;
	free(buf);
	if (!*result)
		snprintf(why, cap, "ada diagnose gave no report (%s)",
		         rc ? strerror(-rc) : "its output is not JSON");
	return *result ? 0 : -EIO;
}

static int serve_list(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct serve *s = ctx;
	json_t *a = json_array();

	(void)params, (void)why, (void)cap;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		json_array_append_new(a, serve_rec_json(&s->rec[i]));
	pthread_mutex_unlock(&s->mu);
	*result = json_pack("{s:o}", "recordings", a);
	return 0;
}

/* method with params on recording id's own control socket. */
static int serve_forward(struct serve *s, json_t *params, const char *method, json_t *args,
                         json_t **result, char *why, size_t cap)
{
	char session[PATH_MAX];
	int fd;

	pthread_mutex_lock(&s->mu);
	struct serve_rec *r = serve_find(s, params, why, cap);
	if (r)
		snprintf(session, sizeof(session), "%s", r->session);
	pthread_mutex_unlock(&s->mu);
	json_incref(args);
	int rc = !r ? -ENOENT : !session[0] ? -EAGAIN : ada_control_open(session, &fd, why, cap);
	if (!rc) {
		rc = ada_control_call(fd, method, args, result, why, cap);
		args = NULL;
		close(fd);
	} else if (rc == -EAGAIN) {
		snprintf(why, cap, "recording %lld has no session yet (its log says why)",
		         (long long)json_integer_value(json_object_get(params, "id")));
	}
	json_decref(args);
	return rc == 0 ? 0 : rc <= -32000 || rc == -ECONNREFUSED ? -EPROTO : rc;
}

static int serve_status(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct serve *s = ctx;
	json_t *st = NULL, *rec;

	pthread_mutex_lock(&s->mu);
	struct serve_rec *r = serve_find(s, params, why, cap);
	rec = r ? serve_rec_json(r) : NULL;
	bool running = r && r->running;
	pthread_mutex_unlock(&s->mu);
	if (!rec)
		return -ENOENT;
	if (running && serve_forward(s, params, "status", NULL, &st, why, cap) == 0)
		json_object_set_new(rec, "status", st);
	*result = rec;
	return 0;
}

/* What Ctrl-C in a terminal does: SIGINT to the process group the child
 * leads (serve_exec: setsid) — `ada record` and its program, which ends,
 * and the recording finalizes; `ada attach` alone (its target is in a
 * group of its own), which detaches. */
static bool serve_interrupt(const struct serve_rec *r)
{
	return kill(-r->pid, SIGINT) == 0 || kill(r->pid, SIGINT) == 0;
}

static int serve_stop(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	struct serve *s = ctx;

	pthread_mutex_lock(&s->mu);
	struct serve_rec *r = serve_find(s, params, why, cap);
	bool sent = r && r->running && serve_interrupt(r);
	*result = r ? json_pack("{s:b}", "stopping", sent) : NULL;
	pthread_mutex_unlock(&s->mu);
	return r ? 0 : -ENOENT;
}

static int serve_call(void *ctx, json_t *params, json_t **result, char *why, size_t cap)
{
	const char *method = json_string_value(json_object_get(params, "method"));
	json_t *args = json_object_get(params, "params");

	if (!method || (args && !json_is_object(args))) {
		snprintf(why, cap,
		         "give \"id\", \"method\" (a recording's method: status, arm, "
		         "disarm, trigger, list_triggers, windows, keysym) and \"params\"");
		return -EINVAL;
	}
	return serve_forward(ctx, params, method, args, result, why, cap);
}

const struct ada_control_method serve_methods[] = {
    {"spawn", serve_spawn}, {"attach", serve_attach}, {"diagnose", serve_diagnose},
    {"list", serve_list},   {"status", serve_status}, {"stop", serve_stop},
    {"call", serve_call},
};
const size_t serve_nmethods = sizeof(serve_methods) / sizeof(serve_methods[0]);

/* ------------------------------------------------------------ daemon */

void serve_reap(struct serve *s)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; i < s->n; i++)
			if (s->rec[i].running && s->rec[i].pid == pid) {
				s->rec[i].running = false;
				s->rec[i].wait_status = st;
			}
		pthread_mutex_unlock(&s->mu);
	}
}

size_t serve_stop_all(struct serve *s)
{
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		n += s->rec[i].running && serve_interrupt(&s->rec[i]);
	pthread_mutex_unlock(&s->mu);
	return n;
}
