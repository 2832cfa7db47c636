/*
 * The manifest's flight_recorder.windows[]: what each window asked, what
 * each thread kept of it, what it lost or missed and why, and the
 * functions that filled its rings (flight.c counts all of it).
 *
 * Threads: the drain thread (manifest writes).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "symbols.h"
#include "flight_internal.h"

json_t *wal_window_missed_json(const uint64_t missed[ADA_WINDOW_MISS_COUNT])
{
	json_t *o = json_object();
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
		json_object_set_new(o, ada_window_miss_name(k),
		                    json_integer((json_int_t)missed[k]));
	return o;
}

/* What thread t holds of window wi: records, and the pre/post-roll
 * achieved (its ring's oldest record at the first persist bounds the
 * pre-roll; the newest at the last one, the post-roll). */
static json_t *flight_window_thread(const struct wal_thread *t, const struct wal_flight_tw *fw,
                                    const struct ada_trigger_window *w)
{
	json_t *o = json_object();
	json_object_set_new(o, "thread", json_integer(t->seq));
	json_object_set_new(o, "tid", json_integer(t->tid));
	json_object_set_new(o, "records", json_integer((json_int_t)fw->records));
	json_object_set_new(o, "bytes", json_integer((json_int_t)fw->bytes));
	json_object_set_new(o, "unlinked", json_integer((json_int_t)fw->unlinked));
	json_object_set_new(o, "window_lost", json_integer((json_int_t)fw->lost));
	if (fw->lost_estimated)
		json_object_set_new(o, "window_lost_estimated", json_true());
	uint64_t missed = 0;
	for (unsigned k = 0; k < ADA_WINDOW_MISS_COUNT; k++)
		missed += fw->missed[k];
	if (missed) /* only then: a manifest of many windows and threads stays small */
		json_object_set_new(o, "window_missed", wal_window_missed_json(fw->missed));
	if (fw->missed_estimated)
		json_object_set_new(o, "window_missed_estimated", json_true());
	json_object_set_new(o, "errors", json_integer(fw->errors));
	json_object_set_new(o, "copies", json_integer(fw->calls));
	json_object_set_new(o, "copies_skipped", json_integer((json_int_t)fw->skipped));
	if (fw->oldest_ns) {
		json_object_set_new(
		    o, "pre_achieved_ns",
		    json_integer((json_int_t)wal_flight_pre_achieved(w, fw->oldest_ns)));
	} else {
		json_object_set_new(o, "pre_achieved_ns", json_null()); /* its ring was empty */
	}
	if (fw->newest_ns) {
		uint64_t to = fw->newest_ns < w->to_ns ? fw->newest_ns : w->to_ns;
		json_object_set_new(
		    o, "post_achieved_ns",
		    json_integer(to > w->fire_ns ? (json_int_t)(to - w->fire_ns) : 0));
	} else {
		json_object_set_new(o, "post_achieved_ns", json_null());
	}
	return o;
}

static json_t *flight_window_threads(const struct wal_proc *p, size_t wi,
                                     const struct ada_trigger_window *w, uint64_t *records,
                                     uint64_t *lost, uint64_t missed[ADA_WINDOW_MISS_COUNT])
{
	json_t *a = json_array();
	for (size_t j = 0; j < p->nthreads; j++) {
		const struct wal_thread *t = p->threads[j];
		const struct wal_flight_tw *fw = wal_flight_tw_of(t, wi);
		uint64_t m = 0;
		for (unsigned k = 0; fw && k < ADA_WINDOW_MISS_COUNT; k++) {
			missed[k] += fw->missed[k];
			m += fw->missed[k];
		}
		if (!fw || (!fw->calls && !fw->lost && !m))
			continue;
		*records += fw->records;
		*lost += fw->lost;
		json_array_append_new(a, flight_window_thread(t, fw, w));
	}
	return a;
}

/* The key-symbol set in force when w fired: the last version published
 * to p at or before the fire (0: the agent's own start-time set), or null
 * when versions published later than the ones kept may have covered it. */
static json_t *flight_window_keysym(const struct ada_trigger_window *w, const struct wal_proc *p)
{
	const json_t *v;
	json_int_t found = 0;
	size_t i;
	json_array_foreach(p->ks_versions, i, v)
	{
		json_int_t t = json_integer_value(json_object_get(v, "time_ns"));
		if (t > 0 && (uint64_t)t <= w->fire_ns)
			found = json_integer_value(json_object_get(v, "version"));
		else if (t > 0)
			return json_integer(found);
	}
	return p->ks_versions_dropped ? json_null() : json_integer(found);
}

#define FLIGHT_FILLERS_SHOWN 5u

/* Window wi's fillers over p's threads, merged by function (the first
 * 32 functions the threads' lists name), heaviest first by the bytes
 * they surely had (bytes - err), into out (at most WAL_FILL_TOP, bytes
 * being those sure bytes, err 0); returns how many, and *total the bytes
 * of every record the copies found. */
static size_t flight_fillers(const struct wal_proc *p, size_t wi, struct wal_fill *out,
                             uint64_t *total)
{
	size_t n = 0;
	*total = 0;
	memset(out, 0, sizeof(*out));
	struct {
		uint64_t fn, bytes;
	} all[WAL_FILL_TOP * 4];
	for (size_t j = 0; j < p->nthreads; j++) {
		const struct wal_flight_tw *fw = wal_flight_tw_of(p->threads[j], wi);
		if (!fw)
			continue;
		*total += fw->fill.total;
		for (uint32_t i = 0; i < WAL_FILL_TOP; i++) {
			const struct wal_fill *f = &fw->fill;
			size_t k = 0;
			while (k < n && all[k].fn != f->fn[i])
				k++;
			if (!f->bytes[i] || (k == n && n == sizeof(all) / sizeof(all[0])))
				continue; /* past the merge's room: the lighter ones */
			if (k == n) {
				all[k].fn = f->fn[i];
				all[k].bytes = 0;
				n++;
			}
			all[k].bytes += f->bytes[i] - f->err[i]; /* what it surely had */
		}
	}
	size_t m = 0;
	for (; m < WAL_FILL_TOP && m < n; m++) { /* selection: a few entries */
		size_t best = m;
		for (size_t k = m + 1; k < n; k++)
			if (all[k].bytes > all[best].bytes)
				best = k;
		uint64_t fn = all[best].fn, b = all[best].bytes;
		if (!b)
			break; /* none of the rest surely filled anything */
		all[best] = all[m];
		out->fn[m] = fn;
		out->bytes[m] = b;
	}
	return m;
}

/* How many of the n fillers f (heaviest first), left out of the detail
 * set, would have freed the share of the ring the lost records needed at
 * the same ring size: the fewest whose bytes are at least
 * lost / (records + lost) of all (0: the listed ones are not enough). An
 * estimate: the lost records are taken to be like the ones kept. */
static size_t flight_hold_count(const struct wal_fill *f, size_t n, uint64_t total,
                                uint64_t records, uint64_t lost)
{
	uint64_t cum = 0;
	for (size_t i = 0; i < n && total; i++) {
		cum += f->bytes[i];
		if ((unsigned __int128)cum * (records + lost) >= (unsigned __int128)lost * total)
			return i + 1;
	}
	return 0;
}

/* fn's name in p's symbol files, or its id written into buf. */
static const char *flight_fill_name(const struct wal_proc *p, uint64_t fn, char *buf, size_t len)
{
	const char *name = NULL, *mod = NULL;
	if (p->syms && ada_symtab_resolve(p->syms, fn, &name, &mod) && name)
		return name;
	snprintf(buf, len, "0x%" PRIx64, fn);
	return buf;
}

/* A window that lost records: the functions whose records filled the
 * rings ("fillers": bytes and share, heaviest first) and the fewest of
 * them whose records, left out of the detail set, would have held it
 * ("hold_without", flight_hold_count; null when not enough). */
static void flight_window_fillers(json_t *o, const struct wal_proc *p, size_t wi, uint64_t records,
                                  uint64_t lost)
{
	struct wal_fill f;
	uint64_t total;
	size_t n = flight_fillers(p, wi, &f, &total);
	size_t hold = flight_hold_count(&f, n, total, records, lost);
	json_t *a = json_array(), *h = hold ? json_array() : json_null();
	for (size_t i = 0; i < n && total; i++) {
		const char *name = NULL, *mod = NULL;
		char id[32];
		snprintf(id, sizeof(id), "0x%" PRIx64, f.fn[i]);
		if (!p->syms || !ada_symtab_resolve(p->syms, f.fn[i], &name, &mod))
			name = NULL;
		if (i < FLIGHT_FILLERS_SHOWN)
			json_array_append_new(a, json_pack("{s:o,s:s,s:I,s:f}", "function",
			                                   name ? json_string(name) : json_null(),
			                                   "function_id", id, "bytes",
			                                   (json_int_t)f.bytes[i], "share",
			                                   (double)f.bytes[i] / (double)total));
		if (i < hold)
			json_array_append_new(h, json_string(name ? name : id));
	}
	json_object_set_new(o, "fillers", a);
	json_object_set_new(o, "hold_without", h);
}

void wal_flight_fill_hint(const struct ada_recorder *r, const struct wal_proc *p, char *buf,
                          size_t len)
{
	size_t worst = SIZE_MAX;
	uint64_t worst_lost = 0, worst_records = 0;
	buf[0] = '\0';
	for (size_t wi = 0; r->flight.trig && wi < ada_trigger_window_count(r->flight.trig); wi++) {
		uint64_t records = 0, lost = 0;
		for (size_t j = 0; j < p->nthreads; j++) {
			const struct wal_flight_tw *fw = wal_flight_tw_of(p->threads[j], wi);
			if (fw) {
				records += fw->records;
				lost += fw->lost;
			}
		}
		if (lost > worst_lost) {
			worst = wi;
			worst_lost = lost;
			worst_records = records;
		}
	}
	if (worst == SIZE_MAX)
		return;
	struct wal_fill f;
	uint64_t total;
	size_t n = flight_fillers(p, worst, &f, &total);
	size_t hold = flight_hold_count(&f, n, total, worst_records, worst_lost);
	size_t at = 0;
	for (size_t i = 0; i < hold && at < len; i++) {
		char id[32];
		int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
		                 flight_fill_name(p, f.fn[i], id, sizeof(id)));
		if (k < 0 || (size_t)k >= len - at) {
			buf[0] = '\0'; /* too long to say on one line: ada windows says it */
			return;
		}
		at += (size_t)k;
	}
}

json_t *wal_flight_window_json(const struct ada_trigger_window *w, const struct wal_proc *p,
                               size_t wi)
{
	json_t *o = json_object();
	json_object_set_new(o, "id", json_integer(w->id));
	json_object_set_new(o, "trigger", json_string(w->trigger));
	json_object_set_new(o, "fire_ns", json_integer((json_int_t)w->fire_ns));
	json_object_set_new(o, "from_ns", json_integer((json_int_t)w->from_ns));
	json_object_set_new(o, "to_ns", json_integer((json_int_t)w->to_ns));
	json_object_set_new(o, "fires", json_integer(w->fires));
	json_object_set_new(o, "keysym_version", flight_window_keysym(w, p));
	if (w->note[0])
		json_object_set_new(o, "note", json_string(w->note));
	if (w->fn_id) {
		char id[32];
		snprintf(id, sizeof(id), "0x%" PRIx64, w->fn_id);
		json_object_set_new(o, "function_id", json_string(id));
	}
	if (w->tid)
		json_object_set_new(o, "tid", json_integer(w->tid));
	if (w->duration_ns) {
		json_object_set_new(o, "duration_ns", json_integer((json_int_t)w->duration_ns));
		json_object_set_new(o, "threshold_ns", json_integer((json_int_t)w->threshold_ns));
	}
	json_object_set_new(o, "pre_roll_ns", json_integer((json_int_t)(w->fire_ns - w->from_ns)));
	json_object_set_new(o, "post_roll_ns", json_integer((json_int_t)(w->to_ns - w->fire_ns)));
	uint64_t records = 0, lost = 0, missed[ADA_WINDOW_MISS_COUNT] = {0};
	json_t *threads = flight_window_threads(p, wi, w, &records, &lost, missed);
	json_object_set_new(o, "threads", threads);
	json_object_set_new(o, "records", json_integer((json_int_t)records));
	json_object_set_new(o, "window_lost", json_integer((json_int_t)lost));
	json_object_set_new(o, "window_missed", wal_window_missed_json(missed));
	if (lost)
		flight_window_fillers(o, p, wi, records, lost);
	json_object_set_new(o, "closed", json_boolean(w->closed));
	return o;
}
