/* ada control, private: the server's state and the method table. */
#ifndef ADA_CONTROL_INTERNAL_H
#define ADA_CONTROL_INTERNAL_H

#include <pthread.h>

#include "control.h"

/* CPU time and memory of the recorder and of the traced processes,
 * sampled by the poll thread once a second (procstat.c). */
struct ctl_cpu_sample {
	uint64_t at_ns;        /* CLOCK_BOOTTIME */
	uint64_t self_ticks;   /* utime + stime of `ada record` */
	uint64_t target_ticks; /* the same summed over the live traced pids */
};

/* slow.c: the worker that answers the methods that may take long (keysym,
 * arm) so that the poll thread never waits behind them. */
struct ctl_slow {
	pthread_t thr;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *line; /* under mu: the request handed over (NULL: none) */
	size_t len;
	char *resp; /* under mu: its answer, when done */
	bool done, stop;
	int done_fd;        /* eventfd: an answer is ready (the poll thread polls it) */
	uint64_t client_id; /* poll thread: whose request is in the lane (0: none) */
	uint64_t handed;    /* poll thread: requests answered there (status) */
};

struct ada_control {
	struct ada_control_host h;
	uid_t owner;
	/* procstat.c: last two samples; the status method reads them on the
	 * poll thread, which also takes them: no lock. */
	struct ctl_cpu_sample cpu_prev, cpu_last;
	struct ada_recorder_live *live; /* scratch for the methods (60 KiB) */
	/* server.c */
	int listen_fd, wake_fd, ctl_fd, session_fd;
	bool thread_started;
	pthread_t thr;
	struct ctl_client *clients[ADA_CONTROL_CLIENTS_MAX];
	size_t nclients;
	uint64_t next_client_id;
	struct ctl_slow slow;
	uint64_t idle_ns; /* a client without a complete request this long: closed */
	/* counted, for status */
	uint64_t refused_peers, refused_busy, oversized, evicted, timed_out;
	/* registry.c: the pids this recording registered (the traced
	 * processes; reg_self: the recorder's own pid too) */
	int reg_fd;
	pid_t reg[ADA_LIVE_MAX_PROCS];
	size_t nreg;
	bool reg_self;
	int reg_error; /* why there is no registry (0: there is one) */
};

/* One call being answered. A method sets result (a new reference) or
 * calls ctl_fail(). */
struct ctl_call {
	struct ada_control *c;
	json_t *params; /* the request's params object (borrowed), never NULL */
	json_t *result;
	int code; /* 0 or enum ada_rpc_error */
	char msg[400];
};

void ctl_fail(struct ctl_call *k, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef void (*ctl_method_fn)(struct ctl_call *k);
struct ctl_method {
	const char *name;
	ctl_method_fn fn;
	bool wakes; /* changes what the drain does: the host's wake once it succeeded */
};
/* methods.c: the table (one method per method_<name>.c). */
const struct ctl_method *ctl_method_find(const char *name);

void ctl_method_status(struct ctl_call *k);
void ctl_method_arm(struct ctl_call *k);
void ctl_method_disarm(struct ctl_call *k);
void ctl_method_trigger(struct ctl_call *k);
void ctl_method_list_triggers(struct ctl_call *k);
void ctl_method_windows(struct ctl_call *k);
void ctl_method_keysym(struct ctl_call *k);

/* Shared by methods: CLOCK_BOOTTIME ns (the events' clock). */
uint64_t ctl_now_ns(void);
/* params[key] as seconds in [0, 3600] into ns: 0, 1 when absent, -1
 * after ctl_fail(). */
int ctl_param_seconds(struct ctl_call *k, const char *key, uint64_t *ns);
/* The live view into c->live; false after ctl_fail() when there is none. */
bool ctl_live(struct ctl_call *k);
/* One window as JSON (status, windows). */
json_t *ctl_window_json(const struct ada_trigger_window *w, const struct ada_live_window_got *g);
/* A "--detail never" recording refuses triggers: true after ctl_fail(). */
bool ctl_refuse_no_detail(struct ctl_call *k);

/* registry.c (control.h's discovery fallback). base: a test's directory
 * instead of the per-user place. */
int ctl_registry_path(uid_t uid, char *path, size_t cap);
int ctl_registry_open(const char *base, uid_t uid, bool create, int *fd);
int ctl_registry_add(int fd, pid_t pid, const char *session);
void ctl_registry_remove(int fd, pid_t pid);
/* Removes the entries of processes gone (or whose pid was reused) and
 * anything that is not an entry: what recorders that were killed left.
 * Bounded by ADA_FS_WALK_MAX_ENTRIES. Returns how many it removed. */
int ctl_registry_prune(int fd);
int ctl_registry_lookup(const char *base, uid_t uid, pid_t pid, char *dir, size_t cap);

/* An arena mapping's identity: "<dev> <inode>" as /proc/PID/maps spells
 * them (fields 4 and 5), of a file whose name ends in ".ring". */
struct ctl_arena_key {
	char id[64];
};
/* client.c: the arenas pid maps, at most max keys; the count or -errno. */
int ctl_proc_arenas(pid_t pid, struct ctl_arena_key *keys, int max);
/* client.c: whether pid maps one of keys[0..n) (its whole maps read). */
bool ctl_proc_maps_any(pid_t pid, const struct ctl_arena_key *keys, int n);
/* The session of the registered process of uid (a recorder, or a traced
 * process of its session) that maps one of keys[0..n): the process a
 * key came from is then of that recording. 0 or -ENOENT. */
int ctl_registry_by_arena(const char *base, uid_t uid, const struct ctl_arena_key *keys, int n,
                          char *dir, size_t cap);
void ctl_registry_sync(struct ada_control *c);
void ctl_registry_clear(struct ada_control *c);

/* slow.c. Whether a request line asks for a method of the slow lane. */
bool ctl_slow_method(const char *line, size_t len);
/* Starts the worker (0, or -errno: the poll thread then answers every
 * method itself, as it can). */
int ctl_slow_start(struct ada_control *c);
/* Hands a copy of one request line to the worker: false when a request is
 * in the lane already (or no memory: the poll thread answers it). */
bool ctl_slow_hand(struct ada_control *c, uint64_t client_id, const char *line, size_t len);
/* The lane's answer once it is ready (done_fd readable): true with the
 * client's id and the response line (NULL: a notification). */
bool ctl_slow_take(struct ada_control *c, uint64_t *client_id, char **resp);
/* Stops and joins the worker (after the request in it, if any). */
void ctl_slow_stop(struct ada_control *c);

/* procstat.c */
void ctl_cpu_sample(struct ada_control *c);
/* {"cpu_pct", "cpu_seconds", "rss_bytes"} of the recorder and of the live
 * traced pids in c->live. */
json_t *ctl_proc_usage(struct ada_control *c, bool target);
uint64_t ctl_proc_ticks(pid_t pid, uint64_t *rss_bytes);

#endif
