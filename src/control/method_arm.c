/*
 * arm {"trigger": SPEC, "pre_roll_sec"?: S, "post_roll_sec"?: S}
 *   -> {"id": N, "trigger": SPEC, "armed_ns": T}
 * Adds a trigger (every form of `ada record --trigger`) to the running
 * recording. It fires only on events stamped at or after armed_ns
 * (CLOCK_BOOTTIME, the events' clock): the engine compares each event with
 * it, so the trigger is live for every event after the answer, whenever
 * the drain gets to them. Its pre-roll reaches back into what the detail
 * rings already hold.
 */
#include <errno.h>
#include <string.h>

#include "control_internal.h"

void ctl_method_arm(struct ctl_call *k)
{
	json_t *t = json_object_get(k->params, "trigger");
	if (!json_is_string(t)) {
		ctl_fail(k, ADA_RPC_INVALID_PARAMS,
		         "arm needs \"trigger\": a trigger spec such as \"symbol=main\"");
		return;
	}
	struct ada_trigger_spec s;
	char why[400];
	if (ada_trigger_parse(json_string_value(t), &s, why, sizeof(why)) < 0) {
		ctl_fail(k, ADA_RPC_INVALID_PARAMS, "%s", why);
		return;
	}
	const struct ada_trigger_opts *o = ada_trigger_engine_opts(k->c->h.trig);
	s.pre_ns = o->pre_ns;
	s.post_ns = o->post_ns;
	int pre = ctl_param_seconds(k, "pre_roll_sec", &s.pre_ns);
	int post = pre < 0 ? -1 : ctl_param_seconds(k, "post_roll_sec", &s.post_ns);
	if (pre < 0 || post < 0 || ctl_refuse_no_detail(k))
		return;
	s.own_roll = pre == 0 || post == 0;
	uint32_t id;
	uint64_t now = ctl_now_ns();
	int rc = ada_trigger_add(k->c->h.trig, &s, now, &id);
	if (rc == -ENOSPC) {
		ctl_fail(
		    k, ADA_RPC_REFUSED,
		    "%d triggers are armed already, the most a recording takes: disarm one first",
		    ADA_TRIGGER_MAX);
		return;
	}
	if (rc < 0) {
		ctl_fail(k, ADA_RPC_INTERNAL, "the trigger could not be armed (%s)", strerror(-rc));
		return;
	}
	k->result = json_pack("{s:i,s:s,s:I,s:f,s:f}", "id", (json_int_t)id, "trigger", s.text,
	                      "armed_ns", (json_int_t)now, "pre_roll_sec", (double)s.pre_ns / 1e9,
	                      "post_roll_sec", (double)s.post_ns / 1e9);
}
