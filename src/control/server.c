/*
 * The control socket's server: one poll thread serving every client,
 * and the slow lane (slow.c) answering `keysym` and `arm` beside it, so
 * that nothing the poll thread does waits for the drain or scans files
 * per process: `status` is answered at once however busy the drain is.
 *
 * Protocol of a connection: the peer's credentials are checked at accept
 * (SO_PEERCRED: the recording's user or root; anyone else gets one
 * ADA_RPC_PERMISSION error line and is closed). Then lines: each complete
 * line is one request, answered by ada_control_handle() in order. A line
 * longer than ADA_CONTROL_LINE_MAX gets one ADA_RPC_INVALID_REQUEST error
 * and the connection is closed once it is written (there is no way to
 * find the next request in a stream that broke the bound). A client that
 * leaves mid-line leaves nothing behind: a partial line is never handled.
 * A client that does not read its answers stops being read (its answers
 * wait in a bounded buffer), and past ADA_CONTROL_OUT_MAX it is closed:
 * no client holds the others up.
 *
 * No client holds the socket shut either (the traced program is the same
 * user and knows the session, so it can connect as often as it likes): a
 * connection that completes no request for ADA_CONTROL_IDLE_SEC -- idle,
 * half a line written, or its answers unread -- is closed; bytes that do
 * not end a line do not count as activity. With ADA_CONTROL_CLIENTS_MAX
 * clients connected, one more is still served: the client that has been
 * quiet longest gets one ADA_RPC_BUSY line and is closed to make room, so
 * a new `ada status` (whose request is already waiting when it is
 * accepted) is answered however many idle connections there are.
 *
 * Threads: ada_control_listen/start/free on the owner's thread; everything else
 * here on the poll thread, which owns the clients (the slow lane sees only
 * a copy of a request line). The hand-over: the
 * thread is created after the state is set, and free wakes it (eventfd)
 * and joins it before touching anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control_internal.h"
#include "fs.h"

#define CTL_SAMPLE_NS 1000000000ull /* CPU sample period (status's cpu_pct) */

struct ctl_client {
	int fd;
	char *in; /* ADA_CONTROL_LINE_MAX bytes */
	size_t in_len;
	char *out;
	size_t out_len, out_off, out_cap;
	uint64_t last_ns; /* accepted, or last request completed / answer bytes sent */
	bool closing;     /* close once out is written */
	uint64_t id;      /* unique in this server: the slow lane's answers find it */
	/* Its next request waits for the slow lane (in it, or for it to be
	 * free): its later lines wait too, in order, and it is not idle. */
	bool held;
};

bool ada_control_peer_allowed(uid_t peer, uid_t owner)
{
	return peer == owner || peer == 0;
}

void ada_control_set_owner(struct ada_control *c, uid_t owner)
{
	c->owner = owner;
}

void ada_control_set_idle_timeout(struct ada_control *c, uint64_t ns)
{
	c->idle_ns = ns;
}

int ada_control_new(const struct ada_control_host *h, struct ada_control **out)
{
	struct ada_control *c = calloc(1, sizeof(*c));
	if (!c || !(c->live = calloc(1, sizeof(*c->live)))) {
		free(c);
		return -ENOMEM;
	}
	c->h = *h;
	c->owner = geteuid();
	c->idle_ns = (uint64_t)ADA_CONTROL_IDLE_SEC * 1000000000ull;
	c->listen_fd = c->wake_fd = c->ctl_fd = c->session_fd = c->reg_fd = -1;
	*out = c;
	return 0;
}

/* ---- one client ---- */

static int ctl_out_append(struct ctl_client *cl, const char *s, size_t n)
{
	if (cl->out_len + n + 1 > ADA_CONTROL_OUT_MAX)
		return -ENOBUFS;
	if (cl->out_len + n + 1 > cl->out_cap) {
		size_t cap = (cl->out_len + n + 1) * 2;
		char *b = realloc(cl->out, cap);
		if (!b)
			return -ENOMEM;
		cl->out = b;
		cl->out_cap = cap;
	}
	memcpy(cl->out + cl->out_len, s, n);
	cl->out[cl->out_len + n] = '\n';
	cl->out_len += n + 1;
	return 0;
}

/* Queues one answer line (resp consumed; NULL: a notification). */
static void ctl_answer(struct ctl_client *cl, char *resp)
{
	if (resp && ctl_out_append(cl, resp, strlen(resp)) < 0)
		cl->closing = true; /* it does not read what it asked for */
	free(resp);
}

/* Writes what is queued; false when the client is gone. */
static bool ctl_flush(struct ctl_client *cl)
{
	while (cl->out_off < cl->out_len) {
		ssize_t n =
		    send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		cl->out_off += (size_t)n;
		cl->last_ns = ctl_now_ns(); /* it reads: a slow reader is not idle */
	}
	cl->out_off = cl->out_len = 0;
	return !cl->closing;
}

/* Handles every complete line in the input buffer. */
static void ctl_lines(struct ada_control *c, struct ctl_client *cl)
{
	size_t start = 0;
	char *nl;
	while (!cl->closing && !cl->held &&
	       (nl = memchr(cl->in + start, '\n', cl->in_len - start))) {
		size_t len = (size_t)(nl - (cl->in + start));
		char *resp = NULL;
		if (len && cl->in[start + len - 1] == '\r')
			len--; /* `nc -C`, telnet */
		if (len && c->slow.started && ctl_slow_method(cl->in + start, len)) {
			cl->held = true; /* answered by the lane (ctl_slow_answered) */
			cl->last_ns = ctl_now_ns();
			if (ctl_slow_hand(c, cl->id, cl->in + start, len))
				start = (size_t)(nl - cl->in) + 1;
			break; /* not handed: the line stays for when the lane is free */
		}
		if (len) { /* an empty line is no request: ignored, and not activity */
			ada_control_handle(c, cl->in + start, len, &resp);
			cl->last_ns = ctl_now_ns();
		}
		ctl_answer(cl, resp);
		start = (size_t)(nl - cl->in) + 1;
	}
	memmove(cl->in, cl->in + start, cl->in_len - start);
	cl->in_len -= start;
	if (!cl->held && cl->in_len == ADA_CONTROL_LINE_MAX) {
		char msg[160];
		snprintf(msg, sizeof(msg),
		         "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"a "
		         "request line is longer than %u bytes\"}}",
		         ADA_RPC_INVALID_REQUEST, ADA_CONTROL_LINE_MAX);
		ctl_answer(cl, strdup(msg));
		c->oversized++;
		cl->closing = true;
	}
}

/* Reads what is there; false when the client is gone (EOF: a partial
 * line it left is dropped with it). */
static bool ctl_read(struct ada_control *c, struct ctl_client *cl)
{
	for (;;) {
		if (cl->closing || cl->out_len || cl->held) /* answers first: back-pressure */
			return true;
		ssize_t n = recv(cl->fd, cl->in + cl->in_len, ADA_CONTROL_LINE_MAX - cl->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		if (n == 0)
			return false;
		cl->in_len += (size_t)n;
		ctl_lines(c, cl);
	}
}

static void ctl_client_free(struct ctl_client *cl)
{
	close(cl->fd);
	free(cl->in);
	free(cl->out);
	free(cl);
}

/* ---- accepting ---- */

/* Writes one error line, best effort (a client that does not read it
 * loses it: nothing waits). */
static void ctl_tell(int fd, int code, const char *msg)
{
	char line[256];
	int n = snprintf(
	    line, sizeof(line),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}\n", code,
	    msg);
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* gone already, or its buffer is full: nothing to tell */
	}
}

/* Tells a connection we will not serve why, and closes it. */
static void ctl_refuse(int fd, int code, const char *msg)
{
	ctl_tell(fd, code, msg);
	close(fd);
}

static void ctl_drop(struct ada_control *c, size_t i)
{
	ctl_client_free(c->clients[i]);
	c->clients[i] = c->clients[--c->nclients];
}

/* Makes room for one more client: the one quiet longest is told and
 * closed. Whatever it had asked and not read is lost with it; a client
 * that is using its connection is quiet for less time than an idle one. */
static void ctl_evict(struct ada_control *c)
{
	size_t oldest = 0;
	for (size_t i = 1; i < c->nclients; i++)
		if (c->clients[i]->last_ns < c->clients[oldest]->last_ns)
			oldest = i;
	if (!c->clients[oldest]->out_len) /* not inside an answer */
		ctl_tell(c->clients[oldest]->fd, ADA_RPC_BUSY,
		         "closed to make room for another client: this connection was "
		         "the one idle longest of too many");
	ctl_drop(c, oldest);
	c->evicted++;
}

static void ctl_accept(struct ada_control *c)
{
	int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr) ||
	    !ada_control_peer_allowed(cr.uid, c->owner)) {
		c->refused_peers++;
		ctl_refuse(fd, ADA_RPC_PERMISSION, "permission denied");
		return;
	}
	struct ctl_client *cl = calloc(1, sizeof(*cl));
	if (!cl || !(cl->in = malloc(ADA_CONTROL_LINE_MAX))) {
		free(cl);
		c->refused_busy++;
		ctl_refuse(fd, ADA_RPC_BUSY, "out of memory for another client: try again later");
		return;
	}
	if (c->nclients == ADA_CONTROL_CLIENTS_MAX)
		ctl_evict(c);
	cl->fd = fd;
	cl->id = ++c->next_client_id;
	cl->last_ns = ctl_now_ns();
	c->clients[c->nclients++] = cl;
}

/* Closes every client that completed no request within c->idle_ns. */
static void ctl_expire(struct ada_control *c, uint64_t now)
{
	for (size_t i = c->nclients; i-- > 0;) {
		if (c->clients[i]->last_ns + c->idle_ns > now || c->clients[i]->held)
			continue; /* also one served after now was read; held: we owe it */
		if (!c->clients[i]->out_len)
			ctl_tell(c->clients[i]->fd, ADA_RPC_BUSY,
			         "closed: no complete request for too long");
		ctl_drop(c, i);
		c->timed_out++;
	}
}

/* ---- the loop ---- */

/* The slow lane's answer to its client (unless it left), then the lines
 * that waited: that client's, and the slow requests of others that
 * waited for the lane (the first of them takes it). */
static void ctl_slow_answered(struct ada_control *c)
{
	uint64_t id;
	char *resp;
	if (!ctl_slow_take(c, &id, &resp))
		return;
	for (size_t i = 0; i < c->nclients; i++) {
		struct ctl_client *cl = c->clients[i];
		if (cl->id != id)
			continue;
		ctl_answer(cl, resp);
		resp = NULL;
		cl->held = false;
		cl->last_ns = ctl_now_ns();
		ctl_lines(c, cl);
	}
	free(resp); /* its client left */
	for (size_t i = 0; i < c->nclients; i++) {
		struct ctl_client *cl = c->clients[i];
		if (cl->held && cl->id != c->slow.client_id) {
			cl->held = false;
			ctl_lines(c, cl);
		}
	}
}

/* One client's events; false when it is to be closed. */
static bool ctl_serve(struct ada_control *c, struct ctl_client *cl, short re)
{
	if ((re & POLLIN) && !ctl_read(c, cl))
		return false;
	if (cl->out_len && !ctl_flush(cl))
		return false;
	if (cl->closing && !cl->out_len)
		return false;
	if ((re & (POLLERR | POLLNVAL)) || ((re & POLLHUP) && !(re & POLLIN)))
		return false;
	return true;
}

static void *ctl_main(void *arg)
{
	struct ada_control *c = arg;
	struct pollfd pf[3 + ADA_CONTROL_CLIENTS_MAX];
	ctl_cpu_sample(c);
	ctl_registry_sync(c);
	for (;;) {
		size_t n = c->nclients;
		pf[0] = (struct pollfd){.fd = c->wake_fd, .events = POLLIN};
		pf[1] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
		pf[2] =
		    (struct pollfd){.fd = c->slow.started ? c->slow.done_fd : -1, .events = POLLIN};
		for (size_t i = 0; i < n; i++) /* held: nothing read until the lane answers */
			pf[3 + i] =
			    (struct pollfd){.fd = c->clients[i]->fd,
			                    .events = (short)(c->clients[i]->out_len ? POLLOUT
			                                      : c->clients[i]->held  ? 0
			                                                             : POLLIN)};
		int rc = poll(pf, 3 + n, (int)(CTL_SAMPLE_NS / 1000000));
		if (rc < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		uint64_t now = ctl_now_ns();
		if (now - c->cpu_last.at_ns >= CTL_SAMPLE_NS) {
			ctl_cpu_sample(c);    /* fresh c->live */
			ctl_registry_sync(c); /* pid -> session for `ada arm PID` */
		}
		if (rc <= 0) {
			ctl_expire(c, now);
			continue;
		}
		/* Clients first, from the last (ctl_drop moves the last one in). */
		for (size_t i = n; i-- > 0;)
			if (pf[3 + i].revents && !ctl_serve(c, c->clients[i], pf[3 + i].revents))
				ctl_drop(c, i);
		if (pf[2].revents & POLLIN)
			ctl_slow_answered(c);
		ctl_expire(c, now); /* after serving: a request just read counts */
		if (pf[1].revents & POLLIN)
			ctl_accept(c);
	}
	return NULL;
}

/* Binds ctl/control.sock through /proc/self/fd/<ctl_fd>: the directory we
 * opened (and made), whatever its path is now, and no length limit from
 * the session's path. */
static int ctl_bind(struct ada_control *c)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", c->ctl_fd,
	         ADA_CONTROL_SOCK);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0)
		return -errno;
	if (bind(c->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -errno;
	/* ctl/ is 0700 already; 0600 says the same on the socket itself. */
	if (fchmodat(c->ctl_fd, ADA_CONTROL_SOCK, 0600, 0) < 0)
		return -errno;
	return listen(c->listen_fd, 64) < 0 ? -errno : 0;
}

int ada_control_listen(struct ada_control *c, int session_fd)
{
	int rc = ada_fs_mkdir(session_fd, ADA_CONTROL_DIR, ADA_FS_EXCL, &c->ctl_fd);
	if (rc < 0)
		return rc;
	c->session_fd = session_fd;
	/* The registry is a fallback of discovery: without it the socket
	 * still serves (status counts it: registry_error). */
	c->reg_error = c->h.session_dir
	                   ? -ctl_registry_open(c->h.registry_dir, geteuid(), true, &c->reg_fd)
	                   : 0;
	if (c->reg_fd >= 0) /* what killed recorders left, before adding ours */
		ctl_registry_prune(c->reg_fd);
	return ctl_bind(c);
}

int ada_control_start(struct ada_control *c)
{
	if (c->listen_fd < 0 || c->thread_started)
		return -EINVAL;
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* Without the lane (it could not start) the poll thread answers the
	 * slow methods itself, as it did before the lane. */
	(void)ctl_slow_start(c);
	int rc = c->wake_fd < 0 ? -errno : -pthread_create(&c->thr, NULL, ctl_main, c);
	if (rc == 0) {
		pthread_setname_np(c->thr, "ada-control");
		c->thread_started = true;
	}
	return rc;
}

void ada_control_free(struct ada_control *c)
{
	if (!c)
		return;
	if (c->thread_started) {
		uint64_t one = 1;
		if (write(c->wake_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write of 1 cannot fail but for overflow */
		}
		pthread_join(c->thr, NULL);
	}
	ctl_slow_stop(c);
	for (size_t i = 0; i < c->nclients; i++)
		ctl_client_free(c->clients[i]);
	ctl_registry_clear(c);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	if (c->ctl_fd >= 0) {
		unlinkat(c->ctl_fd, ADA_CONTROL_SOCK, 0);
		close(c->ctl_fd);
		unlinkat(c->session_fd, ADA_CONTROL_DIR, AT_REMOVEDIR);
	}
	free(c->live);
	free(c);
}
