/*
 * ada control: live control of a running recording over a Unix socket
 * (issue 9; docs/control.md is the protocol reference).
 *
 * The socket: <session>/ctl/control.sock, the directory 0700 and the
 * socket 0600, both created through src/fs (never through a link). Every
 * connection's peer is checked with SO_PEERCRED: the recording's user or
 * root, anyone else gets one "permission denied" error and is closed.
 *
 * The protocol: JSON-RPC 2.0, one request per line (at most
 * ADA_CONTROL_LINE_MAX bytes with its newline), one response line per
 * request that has an id (a notification gets none), in order per
 * connection. A bad request gets a JSON-RPC error and changes nothing.
 *
 * Threads (the server side):
 *   - ada_control_new/listen/start/free: the owner's thread (`ada record`).
 *   - the poll thread (started by ada_control_start) serves every client:
 *     it accepts, reads lines, runs ada_control_handle() and writes the
 *     answers; it never blocks on one client (non-blocking sockets, bounded
 *     buffers, at most ADA_CONTROL_CLIENTS_MAX at once, each closed after
 *     ADA_CONTROL_IDLE_SEC without a complete request, the quietest closed
 *     when one more connects: server.c).
 *   - ada_control_handle() is the whole request logic without sockets
 *     (unit tests call it directly); the methods reach the recording only
 *     through the host's any-thread functions (the trigger engine's
 *     add/remove/fire, the drain's published live view), so nothing a
 *     client does can block the drain.
 * The client side (ada_control_open/call) is for the `ada` thin clients.
 * Errors are 0 / -errno unless said otherwise; nothing here prints.
 */
#ifndef ADA_CONTROL_H
#define ADA_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "trigger.h"
#include "recorder.h"

#define ADA_CONTROL_DIR "ctl"
#define ADA_CONTROL_SOCK "control.sock"
#define ADA_CONTROL_LINE_MAX 65536u    /* one request, newline included */
#define ADA_CONTROL_CLIENTS_MAX 32u    /* connections served at once */
#define ADA_CONTROL_OUT_MAX (4u << 20) /* unread answers kept per client */
#define ADA_CONTROL_IDLE_SEC 30u       /* without a complete request: closed */

/* JSON-RPC 2.0 error codes (the spec's, then ours in -32000..-32099). */
enum ada_rpc_error {
	ADA_RPC_PARSE_ERROR = -32700,      /* not JSON */
	ADA_RPC_INVALID_REQUEST = -32600,  /* JSON, not a request (or too long) */
	ADA_RPC_METHOD_NOT_FOUND = -32601, /* no such method */
	ADA_RPC_INVALID_PARAMS = -32602,   /* bad or missing params */
	ADA_RPC_INTERNAL = -32603,         /* out of memory and the like */
	ADA_RPC_REFUSED = -32000,          /* valid, but the recording cannot do it */
	ADA_RPC_PERMISSION = -32001,       /* the peer is neither the user nor root */
	ADA_RPC_NOT_AVAILABLE = -32002,    /* method known but not available yet */
	ADA_RPC_BUSY = -32003,             /* closed: too many clients, or idle */
};

/* A method the host answers itself (`ada serve`'s spawn, attach …):
 * params is the request's params object (borrowed); on success *result is
 * a new reference; on failure one sentence in why, and -EINVAL answers
 * ADA_RPC_INVALID_PARAMS, -ENOENT ADA_RPC_INVALID_PARAMS too (no such
 * recording), anything else ADA_RPC_REFUSED. Runs on the poll thread. */
struct ada_control_method {
	const char *name;
	int (*fn)(void *ctx, json_t *params, json_t **result, char *why, size_t cap);
};

/* What the recording offers the methods. All function pointers may be
 * called on the poll thread at any time between ada_control_listen() and
 * ada_control_free(); ctx is passed back. */
struct ada_control_host {
	struct ada_trigger_engine *trig; /* arm, disarm, trigger, list_triggers */
	uint32_t detail_mode;            /* enum ada_detail_mode: `never` refuses triggers */
	int session_fd;                  /* pid_N/agent.json (hooks); -1: none */
	const char *session_dir;         /* absolute: the registry's entries; NULL: none */
	const char *registry_dir;        /* tests: instead of the per-user registry */
	/* The drain's published view (ada_recorder_live); -EAGAIN: none yet. */
	int (*live)(void *ctx, struct ada_recorder_live *out);
	/* After a method that changes what the drain does succeeded (arm,
	 * disarm, trigger), before its answer: a drain asleep on its doorbell
	 * acts on it at once, not at its next timer (ada_recorder_wake).
	 * NULL: nothing to wake. `keysym` wakes the drain itself. */
	void (*wake)(void *ctx);
	/* `keysym` (issue 9 part 4/5, the keysym engineer): NULL until it lands
	 * (the method answers ADA_RPC_NOT_AVAILABLE). params is the request's
	 * params object (borrowed). On success *result is a new reference. On
	 * failure one sentence in why; -EINVAL answers ADA_RPC_INVALID_PARAMS,
	 * anything else ADA_RPC_REFUSED. */
	int (*keysym)(void *ctx, json_t *params, json_t **result, char *why, size_t cap);
	/* Methods of the host's own, looked up before the recording's; with
	 * methods_only the recording's are not offered at all (a daemon that
	 * is no recording). */
	const struct ada_control_method *methods;
	size_t nmethods;
	bool methods_only;
	/* The key-symbol set version in force, for `status` (NULL: none). */
	uint64_t (*keysym_version)(void *ctx);
	/* What that version covers, for `status` (NULL, or it returns NULL:
	 * none); a new reference (ada_recorder_keysym_cover). */
	json_t *(*keysym_cover)(void *ctx);
	void *ctx;
};

/* What a function glob matches among the functions of a recording's
 * module tables (every pid_N/module_*.syms under session_dir; pid_N/modules/
 * in an older session), by the rule of symbol triggers
 * (ada_trigger_name_match). The processes are read until one has a match
 * (all of them when none has). Any thread; reads files the traced
 * programs wrote (bounded). 0, or -errno of opening session_dir. */
#define ADA_NAMES_NEAR_MAX 3
struct ada_names_match {
	uint64_t hooked;  /* hooked functions that match in the first process that has any */
	uint64_t skipped; /* functions that match but are not hooked */
	uint64_t scanned; /* hooked functions looked at (0: no module table yet) */
	char skip_name[128], skip_why[64]; /* the first skipped one and why */
	/* When none matched: the closest hooked names, closest first (the
	 * glob's text contained in them, case ignored, or a small edit
	 * distance). */
	size_t nnear;
	char near[ADA_NAMES_NEAR_MAX][128];
};
int ada_control_names_match(const char *session_dir, const char *glob, struct ada_names_match *out);
/* "WHAT matches no hooked function (f is not hooked: why); near: a, b". */
void ada_names_match_sentence(const char *what, const struct ada_names_match *m, char *buf,
                              size_t cap);

struct ada_control;

/* Copies *h. -ENOMEM. */
int ada_control_new(const struct ada_control_host *h, struct ada_control **out);
/* Stops the poll thread (if any), closes every client, removes ctl/ and
 * its socket. NULL is a no-op. */
void ada_control_free(struct ada_control *c);

/* Creates ctl/ (0700, new) under session_fd and ctl/control.sock (0600),
 * listening: from here a client can connect (it waits in the backlog).
 * -EEXIST (ctl/ exists), other -errno. */
int ada_control_listen(struct ada_control *c, int session_fd);
/* Starts the poll thread that serves the clients. Separate from listen so
 * that `ada record` can fork the program while it is still single-threaded
 * and yet have the socket in place before the program runs. -EINVAL (not
 * listening, or started), -errno of pthread_create. */
int ada_control_start(struct ada_control *c);

/* Who may connect: uid (the recording's user) and root. Pure: tests. */
bool ada_control_peer_allowed(uid_t peer, uid_t owner);
/* The owner the peer check compares with (default geteuid()); tests
 * set another to exercise the refusal without a second user. */
void ada_control_set_owner(struct ada_control *c, uid_t owner);
/* How long a client may go without completing a request (default
 * ADA_CONTROL_IDLE_SEC); tests set less. Before ada_control_start(). */
void ada_control_set_idle_timeout(struct ada_control *c, uint64_t ns);

/* One request line (len bytes, no newline needed) -> one response line
 * (malloc'd, NUL-terminated, no newline) into *resp, or *resp = NULL for
 * a notification. Never fails: an allocation failure answers
 * ADA_RPC_INTERNAL from a static text. Any thread; one at a time per c. */
void ada_control_handle(struct ada_control *c, const char *line, size_t len, char **resp);

/* ---- the client side: finding a recording and calling it ---- */

/* Connects to the control socket of the recording named by target: a pid
 * (digits: any traced process of the recording, or `ada record` itself)
 * or a session directory (or one of its pid_N). A pid's session comes from
 * its environment (ADA_SESSION_DIR), else from the per-user registry
 * (registry.c: processes whose environment does not say, e.g. attached). The socket is trusted only
 * when ctl/ is a real directory private to the session's owner, the
 * socket is theirs, and the server's SO_PEERCRED is theirs too; a caller
 * that is neither that user nor root gets -EACCES. *fd on success; on
 * failure one sentence in why:
 * -EACCES (permission denied), -ESRCH (no such process), -ENOENT (not
 * recorded / no session there), -ECONNREFUSED (the recording has ended:
 * its summary is in the manifests), -EPERM (something planted), -errno. */
int ada_control_open(const char *target, int *fd, char *why, size_t cap);
/* The session directory ada_control_open() found for target (also when
 * the recording has ended: -ECONNREFUSED). 0 or -errno as above. */
int ada_control_session_of(const char *target, char *dir, size_t dir_cap, char *why, size_t cap);
/* The per-user registry's stale entries removed (ctl_registry_prune):
 * `ada recover` after a recorder was killed. Returns how many. */
int ada_control_registry_prune(void);
/* Sends {"jsonrpc":"2.0","id":N,"method":method,"params":params} (params
 * consumed, may be NULL) and reads its answer. 0 with *result (new
 * reference); a JSON-RPC error code (<= -32000) with its message in why;
 * or -errno (the connection failed; -ECONNRESET: the recording ended). */
int ada_control_call(int fd, const char *method, json_t *params, json_t **result, char *why,
                     size_t cap);
/* Every string and key in j made printable, in place: each control
 * character (C0, DEL, C1 in UTF-8) becomes one '?'. For what a terminal
 * is shown from input: a server's answer (ada_control_call does it), the
 * manifests and agent.json of pid_N/ (the target's user can write there). */
void ada_control_printable_json(json_t *j);

#endif
