/*
 * ada serve: a per-user control daemon (docs/control.md "ada serve"). It
 * listens on DIR/ctl/control.sock (DIR private to its user; the socket
 * served by src/control, so the same peer check, limits and JSON-RPC 2.0)
 * and answers methods of its own: spawn and attach start `ada record` and
 * `ada attach` as its children, diagnose runs `ada diagnose --json`, list,
 * status, stop and call reach the recordings it started, call forwarding
 * any of a recording's own methods (arm, trigger, windows, keysym …).
 *
 * Threads: the methods run on the control poll thread; the daemon's main
 * thread reaps the children (serve_reap). The recordings table is shared
 * under serve.mu.
 */
#ifndef ADA_TOOLS_SERVE_H
#define ADA_TOOLS_SERVE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "control.h"

#define SERVE_MAX 64u          /* recordings the daemon keeps track of */
#define SERVE_ARGS_MAX 256u    /* program arguments plus options of one spawn */
#define SERVE_SESSION_WAIT 10u /* seconds spawn waits for the session to exist */

struct serve_rec {
	unsigned id;            /* 1, 2 …: the daemon's name for it */
	bool attach;            /* ada attach, else ada record */
	pid_t pid;              /* of `ada record` / `ada attach` */
	pid_t target;           /* attach: the process */
	bool running;           /* not reaped yet */
	int wait_status;        /* once reaped */
	char session[PATH_MAX]; /* "" until found */
	char log[PATH_MAX];     /* its stdout and stderr (and the program's) */
	char what[256];         /* the program or the pid, for list */
};

struct serve {
	pthread_mutex_t mu; /* the table: the poll thread and the reaper */
	struct serve_rec rec[SERVE_MAX];
	size_t n;
	unsigned next_id;
	char ada[PATH_MAX];  /* this ada's executable: the children run it */
	char out[PATH_MAX];  /* where sessions go by default (absolute) */
	char logs[PATH_MAX]; /* DIR/logs: the children's output */
};

/* The method table (serve.c), for ada_control_host.methods. */
extern const struct ada_control_method serve_methods[];
extern const size_t serve_nmethods;

/* Reaps the children that ended (the main thread, on SIGCHLD). */
void serve_reap(struct serve *s);
/* SIGINT to every recording still running (the daemon is stopping): each
 * finalizes its session. Returns how many were signalled. */
size_t serve_stop_all(struct serve *s);

#endif
