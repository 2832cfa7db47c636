/*
 * arm {"trigger": SPEC, "pre_roll_sec"?: S, "post_roll_sec"?: S, "pending"?: B}
 *   -> {"id": N, "trigger": SPEC, "armed_ns": T, "matched": M, "near": [NAME...]}
 * Adds a trigger (every form of `ada record --trigger`) to the running
 * recording. It fires only on events stamped at or after armed_ns
 * (CLOCK_BOOTTIME, the events' clock): the engine compares each event with
 * it, so the trigger is live for every event after the answer, whenever
 * the drain gets to them. Its pre-roll reaches back into what the detail
 * rings already hold.
 *
 * A symbol, latency or p99 trigger whose glob matches no hooked function
 * of the module tables written so far is refused, the closest names in
 * the sentence, unless "pending" is true (a module not loaded yet will
 * have it): then it is armed and the answer says matched 0 and the near
 * names. "matched" is null when nothing can be told (no function glob,
 * no session directory, no module table yet).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "control_internal.h"

/* What s's glob matches (arm_check's *m); false when it cannot be told. */
static bool arm_match(struct ctl_call *k, const struct ada_trigger_spec *s,
                      struct ada_names_match *m)
{
	bool fn = s->kind == ADA_TRIGGER_SYMBOL || s->kind == ADA_TRIGGER_LATENCY ||
	          s->kind == ADA_TRIGGER_P99;
	return fn && k->c->h.session_dir &&
	       ada_control_names_match(k->c->h.session_dir, s->glob, m) == 0 && m->scanned > 0;
}

/* Refuses (false) a glob that matches nothing unless "pending" is true;
 * *known: whether m says anything. */
static bool arm_check(struct ctl_call *k, const struct ada_trigger_spec *s,
                      struct ada_names_match *m, bool *known)
{
	json_t *p = json_object_get(k->params, "pending");
	if (p && !json_is_boolean(p)) {
		ctl_fail(k, ADA_RPC_INVALID_PARAMS, "\"pending\" is true or false");
		return false;
	}
	*known = arm_match(k, s, m);
	if (!*known || m->hooked || json_is_true(p))
		return true;
	char line[600];
	ada_names_match_sentence(s->text, m, line, sizeof(line));
	ctl_fail(k, ADA_RPC_REFUSED,
	         "%s; nothing armed (`ada arm --pending`, \"pending\": true, arms it for a "
	         "module not loaded yet)",
	         line);
	return false;
}

static json_t *arm_near(const struct ada_names_match *m)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < m->nnear; i++)
		json_array_append_new(a, json_string(m->near[i]));
	return a;
}

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
	struct ada_names_match m;
	bool known;
	if (!arm_check(k, &s, &m, &known))
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
	k->result = json_pack("{s:i,s:s,s:I,s:f,s:f,s:o,s:o}", "id", (json_int_t)id, "trigger",
	                      s.text, "armed_ns", (json_int_t)now, "pre_roll_sec",
	                      (double)s.pre_ns / 1e9, "post_roll_sec", (double)s.post_ns / 1e9,
	                      "matched", known ? json_integer((json_int_t)m.hooked) : json_null(),
	                      "near", arm_near(known ? &m : &(struct ada_names_match){0}));
}
