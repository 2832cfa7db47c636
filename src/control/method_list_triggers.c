/*
 * list_triggers -> {"triggers": [{"id", "trigger", "kind", "pre_roll_sec",
 * "post_roll_sec"}]}: the armed set, as the next event will see it.
 */
#include "control_internal.h"

void ctl_method_list_triggers(struct ctl_call *k)
{
	struct ada_trigger_spec s[ADA_TRIGGER_MAX];
	uint32_t ids[ADA_TRIGGER_MAX];
	size_t n = ada_trigger_list_ids(k->c->h.trig, s, ids, ADA_TRIGGER_MAX);
	const struct ada_trigger_opts *o = ada_trigger_engine_opts(k->c->h.trig);
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		uint64_t pre = s[i].own_roll ? s[i].pre_ns : o->pre_ns;
		uint64_t post = s[i].own_roll ? s[i].post_ns : o->post_ns;
		json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:f,s:f}", "id",
		                                   (json_int_t)ids[i], "trigger", s[i].text, "kind",
		                                   ada_trigger_kind_name(s[i].kind), "pre_roll_sec",
		                                   (double)pre / 1e9, "post_roll_sec",
		                                   (double)post / 1e9));
	}
	k->result = json_pack("{s:o}", "triggers", a);
}
