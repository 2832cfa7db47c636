/*
 * windows -> {"total": N, "persisted": N, "windows": [...]}: the trigger
 * windows so far (the most recent ADA_LIVE_MAX_WINDOWS), from the view the
 * drain published last (at most a second old, or 10 ms after a window
 * opened). "persisted": the drain wrote the window to its end.
 */
#include "control_internal.h"

void ctl_method_windows(struct ctl_call *k)
{
	if (!ctl_live(k))
		return;
	const struct ada_recorder_live *v = k->c->live;
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < v->nwindows; i++)
		json_array_append_new(a, ctl_window_json(&v->windows[i], &v->windows_got[i]));
	k->result = json_pack("{s:I,s:I,s:o}", "total", (json_int_t)v->windows_total, "persisted",
	                      (json_int_t)v->windows_closed, "windows", a);
}
