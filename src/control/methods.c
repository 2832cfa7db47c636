/*
 * The method table and what the methods share. Each method lives in its
 * own file, method_<name>.c; adding one is a line here and a file there.
 * Threads: the poll thread (or a test), one call at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "control_internal.h"

/* wakes: a trigger armed (a time trigger needs the drain's 10 ms tick) or
 * removed, a manual fire (its window opens at the drain's next tick): a
 * drain asleep on its doorbell would act on them only at its timer.
 * keysym's host function wakes the drain itself (and waits for it). */
static const struct ctl_method ctl_methods[] = {
    {"status", ctl_method_status, false},
    {"arm", ctl_method_arm, true},
    {"disarm", ctl_method_disarm, true},
    {"trigger", ctl_method_trigger, true},
    {"list_triggers", ctl_method_list_triggers, false},
    {"windows", ctl_method_windows, false},
    {"keysym", ctl_method_keysym, false},
};

const struct ctl_method *ctl_method_find(const char *name)
{
	for (size_t i = 0; i < sizeof(ctl_methods) / sizeof(ctl_methods[0]); i++)
		if (!strcmp(ctl_methods[i].name, name))
			return &ctl_methods[i];
	return NULL;
}

int ctl_param_seconds(struct ctl_call *k, const char *key, uint64_t *ns)
{
	json_t *v = json_object_get(k->params, key);
	if (!v)
		return 1;
	double s = json_number_value(v);
	if (!json_is_number(v) || !(s >= 0 && s <= 3600)) {
		ctl_fail(k, ADA_RPC_INVALID_PARAMS,
		         "\"%s\" must be a number of seconds from 0 to 3600", key);
		return -1;
	}
	*ns = (uint64_t)(s * 1e9 + 0.5);
	return 0;
}

bool ctl_live(struct ctl_call *k)
{
	struct ada_control *c = k->c;
	if (!c->h.live || c->h.live(c->h.ctx, c->live) < 0) {
		ctl_fail(k, ADA_RPC_REFUSED,
		         "the recording has no statistics yet (its drain publishes them once a "
		         "second): ask again");
		return false;
	}
	return true;
}

bool ctl_refuse_no_detail(struct ctl_call *k)
{
	if (k->c->h.detail_mode != ADA_DETAIL_NEVER)
		return false;
	ctl_fail(k, ADA_RPC_REFUSED,
	         "this recording runs with --detail never: it keeps no detail rings, so a trigger "
	         "has nothing to persist; restart it with --detail triggered");
	return true;
}

json_t *ctl_window_json(const struct ada_trigger_window *w, const struct ada_live_window_got *g)
{
	json_t *o = json_pack("{s:i,s:s,s:I,s:I,s:I,s:i,s:b}", "id", (json_int_t)w->id, "trigger",
	                      w->trigger, "fire_ns", (json_int_t)w->fire_ns, "from_ns",
	                      (json_int_t)w->from_ns, "to_ns", (json_int_t)w->to_ns, "fires",
	                      (json_int_t)w->fires, "persisted", w->closed);
	if (!o)
		return NULL;
	if (w->note[0])
		json_object_set_new(o, "note", json_string(w->note));
	if (w->tid)
		json_object_set_new(o, "tid", json_integer(w->tid));
	if (w->fn_id) {
		char id[32];
		snprintf(id, sizeof(id), "0x%" PRIx64, w->fn_id);
		json_object_set_new(o, "function_id", json_string(id));
	}
	if (w->duration_ns) {
		json_object_set_new(o, "duration_ns", json_integer((json_int_t)w->duration_ns));
		json_object_set_new(o, "threshold_ns", json_integer((json_int_t)w->threshold_ns));
	}
	/* What it got so far: the line `ada status DIR` prints once it ends. */
	json_object_set_new(
	    o, "pre_roll_ns",
	    json_integer((json_int_t)(w->fire_ns > w->from_ns ? w->fire_ns - w->from_ns : 0)));
	json_object_set_new(o, "pre_achieved_ns", json_integer((json_int_t)g->pre_achieved_ns));
	json_object_set_new(o, "records", json_integer((json_int_t)g->records));
	json_object_set_new(o, "window_lost", json_integer((json_int_t)g->lost));
	json_t *m = json_object();
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
		json_object_set_new(m, ada_window_miss_name(k),
		                    json_integer((json_int_t)g->missed[k]));
	json_object_set_new(o, "window_missed", m);
	return o;
}
