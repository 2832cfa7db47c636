/*
 * JSON-RPC 2.0 request handling, without any socket: one line in, one
 * line out (ada_control_handle). The order of checks is the spec's: not
 * JSON -> -32700; not a request object (jsonrpc "2.0", a string method, an
 * id that is a string, a number or null, params an object when present)
 * -> -32600; no such method -> -32601; then the method checks its params
 * (-32602) before it changes anything.
 *
 * Threads: the poll thread (or a test), and the slow lane's worker
 * (slow.c) for `keysym` and `arm`, which touch only the host's state
 * (safe from any thread), never the server's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control_internal.h"

static const char rpc_oom[] =
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"out of memory\"}}";

void ctl_fail(struct ctl_call *k, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
	k->code = code;
	json_decref(k->result);
	k->result = NULL;
}

uint64_t ctl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *rpc_dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s ? s : strdup(rpc_oom);
}

/* msg with every byte outside printable ASCII as '?': jansson's parse
 * error text quotes the bytes near the error, which may not be UTF-8,
 * and json_pack refuses a string that is not (the reply then had no
 * error object: fuzz.control). Used only when it refused. */
static void rpc_printable(const char *msg, char *out, size_t cap)
{
	size_t i = 0;
	for (; msg[i] && i + 1 < cap; i++)
		out[i] = (msg[i] >= 0x20 && msg[i] < 0x7f) ? msg[i] : '?';
	out[i] = '\0';
}

/* {"jsonrpc":"2.0","id":id,"error":{"code":code,"message":msg}}; id may
 * be NULL (unknown: null). */
static char *rpc_error(json_t *id, int code, const char *msg)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", msg);
	if (!e) { /* not UTF-8 */
		char text[512];
		rpc_printable(msg, text, sizeof(text));
		e = json_pack("{s:i,s:s}", "code", code, "message", text);
	}
	json_t *o = json_pack("{s:s,s:O?,s:o}", "jsonrpc", "2.0", "id", id, "error", e);
	if (o && !id)
		json_object_set_new(o, "id", json_null());
	return rpc_dump(o);
}

static char *rpc_result(json_t *id, json_t *result)
{
	return rpc_dump(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* A request object is valid: 0, or -32600 with why. */
static int rpc_check_request(json_t *req, const char **why)
{
	json_t *v = json_object_get(req, "jsonrpc");
	json_t *id = json_object_get(req, "id");
	json_t *params = json_object_get(req, "params");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0")) {
		*why = "a request needs \"jsonrpc\": \"2.0\"";
		return ADA_RPC_INVALID_REQUEST;
	}
	if (!json_is_string(json_object_get(req, "method"))) {
		*why = "a request needs a \"method\" string";
		return ADA_RPC_INVALID_REQUEST;
	}
	if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id)) {
		*why = "\"id\" must be a string, an integer or null";
		return ADA_RPC_INVALID_REQUEST;
	}
	if (params && !json_is_object(params)) {
		/* by-position params are valid JSON-RPC, but no method takes them */
		*why = "\"params\" must be an object (named parameters)";
		return json_is_array(params) ? ADA_RPC_INVALID_PARAMS : ADA_RPC_INVALID_REQUEST;
	}
	return 0;
}

/* A method of the host's (ada_control_host.methods). */
static void rpc_host_method(struct ctl_call *k, const struct ada_control_method *m)
{
	char why[400] = "the method failed";
	json_t *res = NULL;
	int rc = m->fn(k->c->h.ctx, k->params, &res, why, sizeof(why));
	if (rc < 0) {
		json_decref(res);
		ctl_fail(k,
		         rc == -EINVAL || rc == -ENOENT ? ADA_RPC_INVALID_PARAMS : ADA_RPC_REFUSED,
		         "%s", why);
		return;
	}
	k->result = res ? res : json_object();
}

static const struct ada_control_method *rpc_host_find(const struct ada_control *c, const char *name)
{
	for (size_t i = 0; i < c->h.nmethods; i++)
		if (!strcmp(c->h.methods[i].name, name))
			return &c->h.methods[i];
	return NULL;
}

static char *rpc_call(struct ada_control *c, json_t *req)
{
	json_t *id = json_object_get(req, "id");
	bool notify = id == NULL;
	const char *why = NULL;
	int code = rpc_check_request(req, &why);
	if (code) /* an id of the wrong type is not echoed */
		return rpc_error(json_is_string(id) || json_is_integer(id) ? id : NULL, code, why);
	const char *name = json_string_value(json_object_get(req, "method"));
	const struct ada_control_method *hm = rpc_host_find(c, name);
	const struct ctl_method *m = hm || c->h.methods_only ? NULL : ctl_method_find(name);
	if (!m && !hm)
		return notify ? NULL : rpc_error(id, ADA_RPC_METHOD_NOT_FOUND, "no such method");
	json_t *params = json_object_get(req, "params");
	struct ctl_call k = {.c = c, .params = params ? json_incref(params) : json_object()};
	if (!k.params)
		return strdup(rpc_oom);
	if (hm)
		rpc_host_method(&k, hm);
	else
		m->fn(&k);
	/* Before the answer: once the client has it, the drain was rung. */
	if (m && m->wakes && !k.code && k.result && c->h.wake)
		c->h.wake(c->h.ctx);
	json_decref(k.params);
	if (notify) {
		json_decref(k.result);
		return NULL;
	}
	if (k.code || !k.result) {
		json_decref(k.result);
		return rpc_error(id, k.code ? k.code : ADA_RPC_INTERNAL,
		                 k.code ? k.msg : "the method gave no result");
	}
	return rpc_result(id, k.result);
}

void ada_control_handle(struct ada_control *c, const char *line, size_t len, char **resp)
{
	json_error_t err;
	/* JSON_REJECT_DUPLICATES: {"method":"status","method":"arm"} is not
	 * one request. */
	json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
	if (!req) {
		char msg[300];
		snprintf(msg, sizeof(msg), "parse error: %s", err.text);
		*resp = rpc_error(NULL, ADA_RPC_PARSE_ERROR, msg);
		return;
	}
	if (json_is_array(req))
		*resp = rpc_error(NULL, ADA_RPC_INVALID_REQUEST,
		                  "batches are not supported: send one request per line");
	else if (!json_is_object(req))
		*resp = rpc_error(NULL, ADA_RPC_INVALID_REQUEST, "a request is a JSON object");
	else
		*resp = rpc_call(c, req);
	json_decref(req);
}
