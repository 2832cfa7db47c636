/*
 * libFuzzer target for the control socket's request handler
 * (src/control: ada_control_handle, every method's params checks): one
 * input is one request line, as a client sends it. The recording is a
 * real trigger engine and an empty published view.
 * Invariants (abort when broken): every request with an id, and every
 * line that is not a request, gets exactly one answer; the answer is a
 * JSON-RPC 2.0 object with exactly one of result and error; a line that is
 * not JSON is answered -32700.
 */
#include <stdlib.h>
#include <string.h>

#include "control.h"

static struct ada_trigger_engine *fuzz_e;
static struct ada_control *fuzz_c;

static int fuzz_live(void *ctx, struct ada_recorder_live *out)
{
	(void)ctx;
	memset(out, 0, sizeof(*out));
	out->seq = 1;
	return 0;
}

static void fuzz_setup(void)
{
	struct ada_trigger_opts o = {.pre_ns = 1000000000ull, .post_ns = 1000000000ull};
	struct ada_control_host h = {.session_fd = -1, .live = fuzz_live};
	if (ada_trigger_engine_new(&o, &fuzz_e) < 0)
		abort();
	h.trig = fuzz_e;
	if (ada_control_new(&h, &fuzz_c) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *d, size_t n)
{
	if (!fuzz_c)
		fuzz_setup();
	char *resp = NULL;
	ada_control_handle(fuzz_c, (const char *)d, n, &resp);
	json_error_t err;
	json_t *in = json_loadb((const char *)d, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
	if (!resp) { /* only a valid notification goes unanswered */
		if (!json_is_object(in) || json_object_get(in, "id"))
			abort();
		json_decref(in);
		return 0;
	}
	json_t *out = json_loads(resp, 0, NULL);
	if (!json_is_object(out) || !json_is_string(json_object_get(out, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(out, "jsonrpc")), "2.0") ||
	    !json_object_get(out, "id") ||
	    !json_object_get(out, "result") == !json_object_get(out, "error"))
		abort();
	if (!in && json_integer_value(json_object_get(json_object_get(out, "error"), "code")) !=
	               ADA_RPC_PARSE_ERROR)
		abort();
	/* The drain's side: take manual fires, so the queue keeps room. */
	ada_trigger_tick(fuzz_e, 1, 0);
	json_decref(out);
	json_decref(in);
	free(resp);
	return 0;
}
