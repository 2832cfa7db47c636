/*
 * keysym {...}: replaces the key-symbol set (issue 9 parts 4 and 5, built
 * by the keysym work). The recorder side is reached through the host's
 * keysym function; until a recording offers one, the method answers
 * ADA_RPC_NOT_AVAILABLE ("not available yet"), and nothing changes.
 */
#include <errno.h>

#include "control_internal.h"

void ctl_method_keysym(struct ctl_call *k)
{
	struct ada_control *c = k->c;
	if (!c->h.keysym) {
		ctl_fail(k, ADA_RPC_NOT_AVAILABLE,
		         "method not available yet: this recorder cannot replace key-symbol sets");
		return;
	}
	char why[400] = "the key-symbol set could not be replaced";
	json_t *res = NULL;
	int rc = c->h.keysym(c->h.ctx, k->params, &res, why, sizeof(why));
	if (rc < 0) {
		json_decref(res);
		ctl_fail(k, rc == -EINVAL ? ADA_RPC_INVALID_PARAMS : ADA_RPC_REFUSED, "%s", why);
		return;
	}
	k->result = res ? res : json_object();
}
