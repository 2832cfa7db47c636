/*
 * The control socket's slow lane: one worker thread that answers the
 * methods that may take long -- `keysym` waits for the drain to apply
 * the set (up to its run-away guard), and both it and `arm` read every
 * process's module tables to say which names match -- so that the poll
 * thread never waits behind them and `status`, `windows`, `trigger` and
 * the rest are answered at once however busy the drain is.
 *
 * One request at a time: the poll thread hands over a copy of the line
 * (ctl_slow_hand) and holds that client's later lines until the answer
 * is back (ctl_slow_take, woken by done_fd); a slow request of another
 * client waits in its own input buffer meanwhile. A client that leaves
 * first loses its answer (it is matched by the client's id, never by a
 * pointer the poll thread may have freed).
 *
 * Threads: these methods touch nothing of the server's but its host,
 * whose trigger engine, key-symbol hand-over and session files are safe
 * from any thread (control.h); line, resp, done and stop are under mu.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "control_internal.h"

bool ctl_slow_method(const char *line, size_t len)
{
	json_t *req = json_loadb(line, len, JSON_DECODE_ANY, NULL);
	const char *m = json_string_value(json_object_get(req, "method"));
	bool slow = m && (!strcmp(m, "keysym") || !strcmp(m, "arm"));
	json_decref(req);
	return slow;
}

static void *slow_main(void *arg)
{
	struct ada_control *c = arg;
	struct ctl_slow *w = &c->slow;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && !w->line)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		char *line = w->line;
		size_t len = w->len;
		pthread_mutex_unlock(&w->mu);
		char *resp = NULL;
		ada_control_handle(c, line, len, &resp);
		pthread_mutex_lock(&w->mu);
		free(w->line);
		w->line = NULL;
		w->resp = resp;
		w->done = true;
		uint64_t one = 1;
		if (write(w->done_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write of 1 cannot fail but for overflow */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int ctl_slow_start(struct ada_control *c)
{
	struct ctl_slow *w = &c->slow;
	w->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->done_fd < 0)
		return -errno;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	int rc = pthread_create(&w->thr, NULL, slow_main, c);
	if (rc) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		close(w->done_fd);
		w->done_fd = -1;
		return -rc;
	}
	pthread_setname_np(w->thr, "ada-control-slow");
	w->started = true;
	return 0;
}

bool ctl_slow_hand(struct ada_control *c, uint64_t client_id, const char *line, size_t len)
{
	struct ctl_slow *w = &c->slow;
	if (w->client_id)
		return false; /* busy: the line waits in its client's buffer */
	char *copy = malloc(len);
	if (!copy)
		return false;
	memcpy(copy, line, len);
	pthread_mutex_lock(&w->mu);
	w->line = copy;
	w->len = len;
	w->client_id = client_id;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	w->handed++;
	return true;
}

bool ctl_slow_take(struct ada_control *c, uint64_t *client_id, char **resp)
{
	struct ctl_slow *w = &c->slow;
	uint64_t n;
	if (read(w->done_fd, &n, sizeof(n)) < 0) {
		/* nothing signalled (EAGAIN): done says the same below */
	}
	pthread_mutex_lock(&w->mu);
	bool done = w->done;
	*resp = w->resp;
	w->resp = NULL;
	w->done = false;
	pthread_mutex_unlock(&w->mu);
	if (!done)
		return false;
	*client_id = w->client_id;
	w->client_id = 0;
	return true;
}

void ctl_slow_stop(struct ada_control *c)
{
	struct ctl_slow *w = &c->slow;
	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thr, NULL);
	free(w->line);
	free(w->resp);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	close(w->done_fd);
	w->done_fd = -1;
	w->started = false;
}
