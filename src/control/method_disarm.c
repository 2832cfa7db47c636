/*
 * disarm {"trigger": SPEC} | {"id": N} | {"all": true} -> {"removed": N}
 * Removes armed triggers: every one whose spec text is SPEC, the one with
 * that id (from arm or list_triggers), or all. Removing nothing is not an
 * error (removed: 0): a client can tell.
 */
#include <errno.h>
#include <string.h>

#include "control_internal.h"

/* Removes every armed trigger whose text is text (when given), whose id
 * is id, or every one (id < 0). */
static json_int_t disarm_where(struct ctl_call *k, const char *text, json_int_t id)
{
	struct ada_trigger_spec s[ADA_TRIGGER_MAX];
	uint32_t ids[ADA_TRIGGER_MAX];
	size_t n = ada_trigger_list_ids(k->c->h.trig, s, ids, ADA_TRIGGER_MAX);
	json_int_t removed = 0;
	for (size_t i = 0; i < n; i++) {
		bool hit = text ? !strcmp(s[i].text, text) : id < 0 || ids[i] == (uint64_t)id;
		/* -ENOENT: another client removed it meanwhile; not ours to count */
		if (hit && ada_trigger_remove(k->c->h.trig, ids[i]) == 0)
			removed++;
	}
	return removed;
}

void ctl_method_disarm(struct ctl_call *k)
{
	json_t *t = json_object_get(k->params, "trigger");
	json_t *id = json_object_get(k->params, "id");
	json_t *all = json_object_get(k->params, "all");
	int given = (t != NULL) + (id != NULL) + (all != NULL);
	if (given != 1 || (t && !json_is_string(t)) || (id && !json_is_integer(id)) ||
	    (all && !json_is_true(all)) || (id && json_integer_value(id) < 0)) {
		ctl_fail(k, ADA_RPC_INVALID_PARAMS,
		         "disarm takes one of \"trigger\": SPEC, \"id\": N or \"all\": true");
		return;
	}
	struct ada_trigger_spec s;
	char why[400];
	const char *text = NULL;
	if (t) {
		/* The spec as the engine keeps it (the parsed text). */
		if (ada_trigger_parse(json_string_value(t), &s, why, sizeof(why)) < 0) {
			ctl_fail(k, ADA_RPC_INVALID_PARAMS, "%s", why);
			return;
		}
		text = s.text;
	}
	json_int_t n = disarm_where(k, text, all ? -1 : json_integer_value(id));
	k->result = json_pack("{s:I}", "removed", n);
}
