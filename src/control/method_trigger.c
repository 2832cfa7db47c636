/*
 * trigger {"note"?: TEXT} -> {"fired_ns": T, "armed_manual": BOOL}
 * Fires `manual` now, as SIGUSR2 to `ada record` does, with a note that
 * the window's record in the manifest keeps. A recording started without
 * `--trigger manual` gets one armed first (armed_manual: true; it shows in
 * list_triggers): asking to fire is asking for the trigger. The drain,
 * woken before the answer (the host's wake: it may sleep on its doorbell),
 * applies the fire at its next 10 ms tick; hold-off, merge and max-windows
 * rules apply as to any fire (their counts are in status).
 */
#include <string.h>

#include "control_internal.h"

/* Arms `manual` (at at_ns) unless one is armed: 1 when it did, 0, -1
 * after ctl_fail(). */
static int trigger_arm_manual(struct ctl_call *k, uint64_t at_ns)
{
	if (ada_trigger_armed(k->c->h.trig, ADA_TRIGGER_MANUAL))
		return 0;
	struct ada_trigger_spec s;
	if (ada_trigger_parse("manual", &s, NULL, 0) < 0 ||
	    ada_trigger_add(k->c->h.trig, &s, at_ns, NULL) < 0) {
		ctl_fail(
		    k, ADA_RPC_REFUSED,
		    "no manual trigger is armed and none can be (%d triggers armed): disarm one",
		    ADA_TRIGGER_MAX);
		return -1;
	}
	return 1;
}

void ctl_method_trigger(struct ctl_call *k)
{
	json_t *note = json_object_get(k->params, "note");
	if (note && (!json_is_string(note) || json_string_length(note) >= ADA_TRIGGER_NOTE_MAX ||
	             memchr(json_string_value(note), 0, json_string_length(note)))) {
		ctl_fail(k, ADA_RPC_INVALID_PARAMS,
		         "\"note\" must be a string of at most %d bytes (no NUL)",
		         ADA_TRIGGER_NOTE_MAX - 1);
		return;
	}
	if (ctl_refuse_no_detail(k))
		return;
	uint64_t now = ctl_now_ns();
	int armed = trigger_arm_manual(k, now);
	if (armed < 0)
		return;
	if (ada_trigger_fire_manual_note(k->c->h.trig, now, note ? json_string_value(note) : NULL) <
	    0) {
		ctl_fail(
		    k, ADA_RPC_REFUSED,
		    "64 manual fires are queued and the drain has not taken them yet: try again");
		return;
	}
	k->result = json_pack("{s:I,s:b}", "fired_ns", (json_int_t)now, "armed_manual", armed);
}
