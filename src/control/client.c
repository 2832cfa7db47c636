/*
 * The client side: finding a recording from a pid or a directory, and one
 * JSON-RPC call over its socket (the `ada arm/disarm/trigger/status`
 * thin clients; docs/control.md "Discovery").
 *
 * Discovery of a pid's session, in this order:
 *   1. the per-user registry (registry.c), which the recording keeps for
 *      its own pid (`ada record`, `ada attach`) and every traced process;
 *   2. the process's arena: its mapping of <pid>.ring in /proc/PID/maps,
 *      matched by device and inode with a registered process that maps
 *      the same file (ctl_registry_by_arena) -- a traced process not yet
 *      registered; the program can rewrite its environment and title, not
 *      its mappings;
 *   3. ADA_SESSION_DIR in /proc/PID/environ, the environment it was
 *      started with (a recording that has no registry);
 *   4. the same for each child of the pid (a recorder with no registry).
 * The kernel lets us read /proc/PID/maps and environ only for a process
 * we may ptrace-read: our own (or any, as root) -- which is the
 * permission check we want: another user's pid gives EACCES, "permission
 * denied", and nothing else.
 *
 * Trust: the environment is the target's (it may rewrite it), so the
 * directory it names is checked as if a stranger had named it: the
 * session directory must belong to the caller (or the caller is root),
 * ctl/ must be a real directory of the same owner that no one else can
 * enter (opened O_NOFOLLOW), the socket a socket of that owner, and the
 * server's SO_PEERCRED that owner again. The socket is reached through
 * /proc/self/fd/<ctl/> so nothing can be swapped between the checks and
 * the connect.
 *
 * Printing: root may ask another user's process, whose environment names
 * the socket -- so whatever comes back, and every sentence in why, may be
 * the work of a hostile server meant for root's terminal. Both are made
 * printable where they enter (client_printable(): every control character,
 * C0, DEL and C1, becomes '?'), and a session directory whose name has one
 * is refused, so the commands may print what they get as it is.
 * Threads: reentrant; nothing printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control_internal.h"
#include "fs.h"

#define CLIENT_ENVIRON_MAX (1u << 20) /* /proc/PID/environ read at most */
#define CLIENT_CHILDREN_MAX 64        /* children of `ada record` asked */
#define CLIENT_ARENAS_MAX 8           /* arenas of one process (exec, fork) */
#define CLIENT_ANSWER_MAX (16u << 20) /* one answer line, at most */
#define CLIENT_TIMEOUT_MS 30000       /* run-away guard: the server answers in ms */

/* The length of the control character at s (left bytes there): 1 for C0
 * or DEL, 2 for C1 in UTF-8 (U+0080..U+009F: C2 80..C2 9F), 0 for none. */
static size_t client_control_len(const char *s, size_t left)
{
	unsigned char b = (unsigned char)s[0];
	if (b < 0x20 || b == 0x7f)
		return 1;
	if (b == 0xc2 && left > 1 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f)
		return 2;
	return 0;
}

static bool client_has_control(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (client_control_len(s + i, n - i))
			return true;
	return false;
}

/* s[0..n) made printable in place: each control character becomes one
 * '?'. Returns the new length (a C1 character is two bytes, '?' one). */
static size_t client_printable(char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; o++) {
		size_t k = client_control_len(s + i, n - i);
		s[o] = k ? '?' : s[i];
		i += k ? k : 1;
	}
	return o;
}

void ada_control_printable_json(json_t *j)
{
	size_t i, klen;
	const char *k;
	json_t *v, *tmp;
	if (json_is_string(j) && client_has_control(json_string_value(j), json_string_length(j))) {
		char *t = strndup(json_string_value(j), json_string_length(j));
		size_t n = t ? client_printable(t, json_string_length(j)) : 0;
		if (!t || json_string_setn_nocheck(j, t, n) < 0)
			json_string_set(j, "?");
		free(t);
	}
	json_array_foreach(j, i, v) ada_control_printable_json(v);
	/* Keys by length: a NUL ends none early (json_loads refuses one, but
	 * the walk need not rely on that). */
	json_object_keylen_foreach_safe(j, tmp, k, klen, v)
	{
		ada_control_printable_json(v);
		if (!client_has_control(k, klen))
			continue;
		char *nk = malloc(klen + 1);
		if (nk) { /* the new key has no control character: not changed again */
			memcpy(nk, k, klen);
			json_object_setn(j, nk, client_printable(nk, klen), v);
		}
		free(nk);
		json_object_deln(j, k, klen);
	}
}

static int client_why(char *why, size_t cap, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int client_why(char *why, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && cap) {
		vsnprintf(why, cap, fmt, ap);
		why[client_printable(why, strlen(why))] = '\0';
	}
	va_end(ap);
	return rc;
}

/* ADA_SESSION_DIR from /proc/pid/environ: 0, -EACCES, -ESRCH, -ENOENT. */
static int client_environ_dir(pid_t pid, char *dir, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	char *buf = malloc(CLIENT_ENVIRON_MAX + 1);
	ssize_t n = buf ? read(fd, buf, CLIENT_ENVIRON_MAX) : -1;
	int e = errno;
	close(fd);
	if (n < 0) {
		free(buf);
		return buf ? -e : -ENOMEM;
	}
	buf[n] = '\0';
	int rc = -ENOENT;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		if (strncmp(p, "ADA_SESSION_DIR=", 16) || p[16] != '/')
			continue;
		rc = (size_t)snprintf(dir, cap, "%s", p + 16) < cap ? 0 : -ENAMETOOLONG;
		break;
	}
	free(buf);
	return rc;
}

/* The identity of one /proc/PID/maps line's file when it is an arena
 * (its name ends in ".ring", deleted or not): false otherwise. */
static bool client_maps_key(const char *line, struct ctl_arena_key *k)
{
	char dev[24], path[PATH_MAX];
	unsigned long long ino;
	int n = sscanf(line, "%*s %*s %*s %23s %llu %4095[^\n]", dev, &ino, path);
	if (n != 3 || ino == 0)
		return false;
	size_t len = strlen(path);
	static const char del[] = " (deleted)";
	if (len >= sizeof(del) - 1 && !strcmp(path + len - (sizeof(del) - 1), del))
		len -= sizeof(del) - 1;
	if (len < 5 || strncmp(path + len - 5, ".ring", 5))
		return false;
	snprintf(k->id, sizeof(k->id), "%s %llu", dev, ino);
	return true;
}

/* Calls fn on the arena keys of pid's maps until it returns true. */
static int client_maps_each(pid_t pid, bool (*fn)(const struct ctl_arena_key *, void *), void *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	char *line = NULL;
	size_t cap = 0;
	struct ctl_arena_key k;
	int rc = 0;
	while (!rc && getline(&line, &cap, f) > 0)
		rc = client_maps_key(line, &k) && fn(&k, arg);
	free(line);
	fclose(f);
	return rc;
}

struct client_keys {
	struct ctl_arena_key *keys;
	int n, max;
};

static bool client_keys_add(const struct ctl_arena_key *k, void *arg)
{
	struct client_keys *c = arg;
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->keys[i].id, k->id))
			return false;
	c->keys[c->n++] = *k;
	return c->n == c->max;
}

int ctl_proc_arenas(pid_t pid, struct ctl_arena_key *keys, int max)
{
	struct client_keys c = {keys, 0, max};
	int rc = max > 0 ? client_maps_each(pid, client_keys_add, &c) : 0;
	return rc < 0 ? rc : c.n;
}

static bool client_keys_has(const struct ctl_arena_key *k, void *arg)
{
	const struct client_keys *c = arg;
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->keys[i].id, k->id))
			return true;
	return false;
}

bool ctl_proc_maps_any(pid_t pid, const struct ctl_arena_key *keys, int n)
{
	struct client_keys c = {(struct ctl_arena_key *)keys, n, n};
	return client_maps_each(pid, client_keys_has, &c) == 1;
}

/* Steps 1 to 3 of the discovery (top of file) for one pid of uid's. */
static int client_lookup(pid_t pid, uid_t uid, char *dir, size_t cap)
{
	struct ctl_arena_key keys[CLIENT_ARENAS_MAX];
	if (ctl_registry_lookup(NULL, uid, pid, dir, cap) == 0)
		return 0;
	int n = ctl_proc_arenas(pid, keys, CLIENT_ARENAS_MAX);
	if (n > 0 && ctl_registry_by_arena(NULL, uid, keys, n, dir, cap) == 0)
		return 0;
	return client_environ_dir(pid, dir, cap);
}

/* A recorder without a registry: one of its children is asked. */
static int client_children_dir(pid_t pid, uid_t uid, char *dir, size_t cap)
{
	char path[96], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	char *save = NULL;
	int i = 0;
	for (char *t = strtok_r(buf, " \n", &save); t && i < CLIENT_CHILDREN_MAX;
	     t = strtok_r(NULL, " \n", &save), i++)
		if (client_lookup((pid_t)atoi(t), uid, dir, cap) == 0)
			return 0;
	return -ENOENT;
}

static int client_dir_of_pid(const char *target, char *dir, size_t cap, char *why, size_t wcap)
{
	char *end;
	long pid = strtol(target, &end, 10);
	if (*end || pid <= 0 || pid > INT_MAX)
		return client_why(why, wcap, -EINVAL, "'%s' is neither a pid nor a directory",
		                  target);
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	if (stat(path, &st) < 0)
		return client_why(why, wcap, -ESRCH, "there is no process %ld (has it ended?)",
		                  pid);
	if (geteuid() != 0 && st.st_uid != geteuid())
		return client_why(why, wcap, -EACCES, "permission denied");
	int rc = client_lookup((pid_t)pid, st.st_uid, dir, cap);
	if (rc == -ENOENT)
		rc = client_children_dir((pid_t)pid, st.st_uid, dir, cap);
	if (rc == -EACCES || rc == -EPERM)
		return client_why(why, wcap, -EACCES, "permission denied");
	if (rc == -ESRCH)
		return client_why(why, wcap, rc, "there is no process %ld (has it ended?)", pid);
	if (rc < 0)
		return client_why(why, wcap, -ENOENT,
		                  "process %ld is not recorded by ada (neither the registry, its "
		                  "arena nor its environment names a session)",
		                  pid);
	if (client_has_control(dir, strlen(dir))) /* printed later: refused here */
		return client_why(why, wcap, -EPERM,
		                  "refusing the session process %ld names: its path has control "
		                  "characters",
		                  pid);
	return 0;
}

int ada_control_session_of(const char *target, char *dir, size_t dir_cap, char *why, size_t cap)
{
	struct stat st;
	if (!*target)
		return client_why(why, cap, -EINVAL, "no pid or directory given");
	bool digits = strspn(target, "0123456789") == strlen(target);
	if (digits && (stat(target, &st) < 0 || !S_ISDIR(st.st_mode)))
		return client_dir_of_pid(target, dir, dir_cap, why, cap); /* "1234": a pid */
	if (stat(target, &st) < 0 && errno == EACCES)
		return client_why(why, cap, -EACCES, "permission denied");
	if (stat(target, &st) < 0 || !S_ISDIR(st.st_mode))
		return client_why(why, cap, -ENOENT, "'%s' is neither a pid nor a directory",
		                  target);
	/* a pid_N directory: its session is the parent */
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	bool pid_dir = !strncmp(base, "pid_", 4);
	int n = snprintf(dir, dir_cap, "%s%s", target, pid_dir ? "/.." : "");
	return n < 0 || (size_t)n >= dir_cap ? -ENAMETOOLONG : 0;
}

/* ctl/ and its socket are the owner's and private; 0 or -EPERM/-ENOENT. */
static int client_check_ctl(int sfd, uid_t owner, int *ctl_fd, char *why, size_t cap)
{
	struct stat st;
	int rc = ada_fs_open_dir(sfd, ADA_CONTROL_DIR, ctl_fd);
	if (rc == -ENOENT)
		return client_why(why, cap, -ECONNREFUSED,
		                  "the recording has ended (no control socket): `ada status DIR` "
		                  "shows its summary");
	if (rc == -EACCES)
		return client_why(why, cap, -EACCES, "permission denied");
	if (rc < 0)
		return client_why(
		    why, cap, -EPERM,
		    "refusing the session's ctl/: it is not a directory of ada's (%s)",
		    strerror(-rc));
	if (fstat(*ctl_fd, &st) < 0 || st.st_uid != owner || (st.st_mode & 077))
		return client_why(why, cap, -EPERM,
		                  "refusing the session's ctl/: it is not private to its owner");
	if (fstatat(*ctl_fd, ADA_CONTROL_SOCK, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return client_why(why, cap, -ECONNREFUSED,
		                  "the recording has ended (no control socket): `ada status DIR` "
		                  "shows its summary");
	if (!S_ISSOCK(st.st_mode) || st.st_uid != owner)
		return client_why(why, cap, -EPERM,
		                  "refusing ctl/%s: it is not the recording's socket",
		                  ADA_CONTROL_SOCK);
	return 0;
}

static int client_connect(int ctl_fd, uid_t owner, int *out, char *why, size_t cap)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", ctl_fd, ADA_CONTROL_SOCK);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return client_why(why, cap, -errno, "cannot make a socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		close(fd);
		if (e == EACCES)
			return client_why(why, cap, -EACCES, "permission denied");
		return client_why(why, cap, -ECONNREFUSED,
		                  "the recording has ended (its control socket does not answer): "
		                  "`ada status DIR` shows its summary");
	}
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != owner) {
		close(fd);
		return client_why(why, cap, -EPERM,
		                  "refusing the control socket: the process behind it is not the "
		                  "recording's user");
	}
	*out = fd;
	return 0;
}

int ada_control_open(const char *target, int *out, char *why, size_t cap)
{
	char dir[PATH_MAX];
	int rc = ada_control_session_of(target, dir, sizeof(dir), why, cap);
	if (rc < 0)
		return rc;
	/* The session directory: the caller's own (root may reach anyone's). */
	int sfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (sfd < 0)
		return client_why(why, cap, errno == EACCES ? -EACCES : -ENOENT,
		                  errno == EACCES ? "permission denied"
		                                  : "the session directory %s is gone",
		                  dir);
	if (fstat(sfd, &st) < 0 || (geteuid() != 0 && st.st_uid != geteuid())) {
		close(sfd);
		return client_why(why, cap, -EACCES, "permission denied");
	}
	int ctl_fd = -1;
	rc = client_check_ctl(sfd, st.st_uid, &ctl_fd, why, cap);
	if (rc == 0)
		rc = client_connect(ctl_fd, st.st_uid, out, why, cap);
	if (ctl_fd >= 0)
		close(ctl_fd);
	close(sfd);
	return rc;
}

/* ---- one call ---- */

static int client_send(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -ECONNRESET;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One line (without its newline) into a malloc'd *line. */
static int client_recv_line(int fd, char **line)
{
	size_t len = 0, cap = 4096;
	char *b = malloc(cap);
	while (b) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, CLIENT_TIMEOUT_MS);
		if (r < 0 && errno == EINTR) {
			free(b);
			return -EINTR;
		}
		if (r == 0) {
			free(b);
			return -ETIMEDOUT;
		}
		if (len + 1 == cap) {
			char *nb = cap < CLIENT_ANSWER_MAX ? realloc(b, cap * 2) : NULL;
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
		ssize_t n = recv(fd, b + len, cap - len - 1, 0);
		if (n <= 0) {
			free(b);
			return -ECONNRESET;
		}
		char *nl = memchr(b + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			*line = b;
			return 0;
		}
	}
	free(b);
	return -ENOMEM;
}

int ada_control_call(int fd, const char *method, json_t *params, json_t **result, char *why,
                     size_t cap)
{
	static int seq;
	json_t *req = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", ++seq, "method", method);
	if (req && params)
		json_object_set(req, "params", params);
	json_decref(params);
	char *s = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!s)
		return client_why(why, cap, -ENOMEM, "out of memory");
	size_t n = strlen(s);
	s[n] = '\n'; /* json_dumps' NUL becomes the line end */
	int rc = client_send(fd, s, n + 1);
	free(s);
	char *line = NULL;
	if (rc == 0)
		rc = client_recv_line(fd, &line);
	if (rc == -ETIMEDOUT)
		return client_why(why, cap, rc, "the recorder did not answer within %d s",
		                  CLIENT_TIMEOUT_MS / 1000);
	if (rc == -EINTR)
		return client_why(why, cap, rc, "interrupted");
	if (rc < 0)
		return client_why(why, cap, rc, "the recording ended (its control socket closed)");
	json_t *ans = json_loads(line, 0, NULL), *err = json_object_get(ans, "error");
	free(line);
	ada_control_printable_json(ans);
	rc = 0;
	if (json_is_object(err)) {
		rc = (int)json_integer_value(json_object_get(err, "code"));
		client_why(why, cap, rc < 0 ? rc : ADA_RPC_INTERNAL, "%s",
		           json_string_value(json_object_get(err, "message"))
		               ? json_string_value(json_object_get(err, "message"))
		               : "the recorder answered an error without a message");
		rc = rc < 0 ? rc : ADA_RPC_INTERNAL;
	} else if (!json_object_get(ans, "result")) {
		rc =
		    client_why(why, cap, ADA_RPC_INTERNAL, "the recorder's answer is not JSON-RPC");
	} else {
		*result = json_incref(json_object_get(ans, "result"));
	}
	json_decref(ans);
	return rc;
}
