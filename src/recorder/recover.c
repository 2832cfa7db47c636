/*
 * Recovery: `ada recover` for a session whose recorder died.
 *
 * Threads: single-threaded (the `ada recover` command).
 *
 * Each unfinished index file is finalized from what is on disk
 * (src/wal/finalize.c, ada_wal_disk_*), with the leftovers drained from
 * the arena appended (converted with the clock anchor the early manifest
 * recorded).
 * Known limit: events the drain had already taken out of the ring but
 * whose write had not completed when the recorder died are lost (at most
 * the staging buffers in flight); the file stays valid.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest.h"
#include "ring.h"
#include "fs.h"
#include "arena_internal.h"
#include "atf.h"
#include "detail_internal.h"
#include "fork_files.h"
#include "recorder_internal.h"

#define REC_BATCH 4096u /* events converted per append: bounds recover's memory */

struct rec_ctx {
	struct ada_recover_report *rep;
	struct ada_arena *arena;
	bool link_refused; /* a path of the process held a link: left as it was */
	struct ada_tsc_clock clk;
	bool use_tsc;
	/* The manifest's arch (ATF_ARCH_*) and whether its counter is one this
	 * machine cannot read (the clock then comes from the manifest's
	 * anchor or the arena's: rec_clock_foreign()). */
	uint8_t arch;
	bool foreign;
	bool arena_bad; /* its mapping faulted: no more reads */
	int32_t pid;    /* from the pid_N directory, not from the arena */
	json_t *threads;
	json_t *quarantine, *warnings;
	uint64_t corrupt;
	struct atf_index_event *buf; /* REC_BATCH events */
	/* The crash record the agent left in the arena (checked), turned into
	 * the faulting thread's EXCEPTION marker and the manifest's `crash`. */
	bool crash;
	struct ada_crash_info ci;
	uint64_t crash_ns;    /* its time on the session clock */
	int64_t crash_thread; /* the faulting thread's number, -1 until found */
	bool crash_marked;    /* the marker was appended */
	json_t *stacks;       /* each thread's open frames at the end */
	/* The threads' waits for ring space, as their slots say (the live
	 * drain's metrics.ring_waits / ring_waited_ns). */
	uint64_t ring_waits, ring_waited_ns;
	/* What the disk budget deleted, as the recorder kept it on disk
	 * (retention.c): the manifest's retention facts. */
	struct wal_retention retention;
	/* pid_N/.ring_slots: each thread's slot, generation and ring base */
	struct wal_ring_table ring_table;
	uint64_t time_skipped; /* the current file's, by rec_time_skip() */
};

static void rec_say(struct rec_ctx *c, const char *sentence)
{
	json_array_append_new(c->warnings, json_string(sentence));
	if (c->rep->notice)
		c->rep->notice(c->rep->notice_arg, sentence);
}

/* path, below the session, was reached through a symbolic link (made
 * since the session was listed): not read, not written; said, and an
 * error. */
static void rec_link_refused(struct rec_ctx *c, const char *path)
{
	char msg[PATH_MAX + 160];
	snprintf(msg, sizeof(msg),
	         "%s: not recovered: its path inside the session holds a symbolic link, and ada "
	         "never follows or writes through a link it did not create",
	         path);
	rec_say(c, msg);
	c->rep->errors++;
	c->rep->links_skipped++;
	c->link_refused = true;
}

/* A slot that broke the protocol: counted and reported once. */
static void rec_quarantined(struct rec_ctx *c, uint32_t slot, uint32_t seq, uint32_t tid)
{
	struct ada_slot_fault f;
	if (!ada_slot_fault(c->arena, slot, &f))
		return;
	for (size_t i = 0; i < json_array_size(c->quarantine); i++)
		if (json_integer_value(json_object_get(json_array_get(c->quarantine, i), "slot")) ==
		    slot)
			return;
	uint64_t left = ada_slot_unconsumed(c->arena, slot);
	char what[256], sentence[512];
	ada_slot_fault_text(&f, what, sizeof(what));
	snprintf(sentence, sizeof(sentence),
	         "pid %d thread %u (tid %u) broke the ring protocol: %s; its slot is "
	         "quarantined and %llu events left in it are counted as corrupt drops",
	         (int)c->pid, seq, tid, what, (unsigned long long)left);
	json_t *o = json_object();
	json_object_set_new(o, "slot", json_integer(slot));
	json_object_set_new(o, "thread", json_integer(seq));
	json_object_set_new(o, "tid", json_integer(tid));
	json_object_set_new(o, "fault", json_integer(f.code));
	json_object_set_new(o, "corrupt_events", json_integer((json_int_t)left));
	json_object_set_new(o, "reason", json_string(sentence));
	json_array_append_new(c->quarantine, o);
	c->corrupt += left;
	c->rep->quarantined++;
	c->rep->corrupt_drops += left;
	rec_say(c, sentence);
}

/* Converts and checks up to k ring events into c->buf; returns how many
 * are good (fewer: the slot is quarantined at the next one). */
static size_t rec_convert(struct rec_ctx *c, uint32_t slot, const struct atf_index_event *ev,
                          size_t k, uint32_t tid, uint64_t ts_max, uint64_t pos)
{
	for (size_t j = 0; j < k; j++) {
		struct atf_index_event e = ev[j]; /* one read, then only the copy */
		uint32_t why;
		uint64_t value;
		if (wal_event_bad(&e, tid, ts_max)) {
			wal_events_first_bad(&e, 1, tid, ts_max, &why, &value);
			ada_slot_quarantine(c->arena, slot, ADA_FAULT_EVENT, pos + j, why, value);
			return j;
		}
		if (c->use_tsc)
			e.timestamp_ns = ada_tsc_clock_to_ns(&c->clk, e.timestamp_ns);
		c->buf[j] = e;
	}
	return k;
}

/* How many of the k converted events in c->buf lead with a time no
 * later than the file's last event's (t1 of a file with events): the
 * ring's copies of events already on disk when no ring record says where
 * the file ends (missing: a put that failed; or not used). Per thread
 * times never go back, so the first later one ends the run: *done. Only
 * then: recover converts with the manifest's one anchor, the drain with
 * the anchors it had, so times near the end may differ by some ns; an
 * event the file did not hold within them is skipped too (counted, said):
 * duplicates never. */
static size_t rec_time_skip(struct rec_ctx *c, size_t k, const struct ada_wal_disk_file *rf,
                            bool *done)
{
	size_t d = 0;
	while (!*done && d < k && rf->s.events && c->buf[d].timestamp_ns <= rf->s.t1)
		d++;
	*done = *done || d < k || !rf->s.events;
	c->time_skipped += d;
	return d;
}

/* Appends what one slot's ring still holds to rf, after dropping the
 * first skip events (already on disk by the ring record) or, by_time (no
 * record used), those no later than the file's end (rec_time_skip): at
 * most one ring's worth (a process that still runs gets no more),
 * REC_BATCH events at a time. Returns the events appended. */
static uint64_t rec_drain_slot(struct rec_ctx *c, uint32_t slot, uint32_t tid, uint64_t skip,
                               bool by_time, struct ada_wal_disk_file *rf)
{
	bool timed = !by_time;
	uint64_t added = 0, budget = ada_arena_config_of(c->arena)->index_events;
	if (c->use_tsc && !ada_tsc_clock_ready(&c->clk))
		return 0; /* another machine's counter and nothing to convert it with */
	uint64_t now = !c->use_tsc  ? UINT64_MAX - WAL_TSC_SLACK
	               : c->foreign ? ada_tsc_clock_counter_at(&c->clk, ada_boottime_ns())
	                            : ada_tsc_read();
	uint64_t ts_max = now > UINT64_MAX - WAL_TSC_SLACK ? UINT64_MAX : now + WAL_TSC_SLACK;
	while (budget) {
		const struct atf_index_event *ev;
		size_t k = ada_index_ring_peek(c->arena, slot, &ev);
		if (k == 0)
			break;
		if (k > budget)
			k = (size_t)budget;
		if (skip) {
			size_t d = skip < k ? (size_t)skip : k;
			ada_index_ring_release(c->arena, slot, d);
			skip -= d;
			budget -= d;
			continue;
		}
		if (k > REC_BATCH)
			k = REC_BATCH;
		size_t j = rec_convert(c, slot, ev, k, tid, ts_max, added);
		size_t d = rec_time_skip(c, j, rf, &timed);
		if (j > d && ada_wal_disk_append(rf, c->buf + d, j - d) < 0)
			break;
		ada_index_ring_release(c->arena, slot, j);
		added += j - d;
		budget -= j;
		if (j < k)
			break;
	}
	return added;
}

struct rec_side {
	bool ok;
	uint32_t slot, gen;
	uint64_t base;
	uint32_t file_gen; /* WAL_RING_FILE_GEN_NONE: not known */
};

/* Which ring positions thread seq's index.atf holds (ring_table.c). */
static void rec_sidecar(struct rec_ctx *c, const char *dir, uint32_t seq, struct rec_side *sd)
{
	struct wal_ring_base b;
	memset(sd, 0, sizeof(*sd));
	if (wal_ring_table_lookup(&c->ring_table, dir, seq, &b))
		*sd = (struct rec_side){.ok = true,
		                        .slot = b.slot,
		                        .gen = b.gen,
		                        .base = b.base,
		                        .file_gen = b.file_gen};
}

static int rec_slot_of(struct rec_ctx *c, uint32_t seq, const struct rec_side *sd,
                       struct ada_slot_info *si)
{
	if (!c->arena)
		return -1;
	if (sd->ok) {
		if (sd->slot >= ada_arena_max_threads(c->arena))
			return -1;
		if (ada_slot_read_checked(c->arena, sd->slot, si) != 0) {
			rec_quarantined(c, sd->slot, seq, 0); /* said and counted, if a fault */
			return -1;
		}
		bool same = si->state != ADA_SLOT_FREE && si->thread_seq == seq &&
		            si->generation == sd->gen;
		return same ? (int)sd->slot : -1;
	}
	uint32_t n = ada_arena_slots_used(c->arena);
	for (uint32_t s = 0; s < n; s++) {
		if (ada_slot_read_checked(c->arena, s, si) != 0)
			continue;
		if (si->state != ADA_SLOT_FREE && si->thread_seq == seq)
			return (int)s;
	}
	return -1;
}

static void rec_note_file(struct rec_ctx *c, json_t *files, const char *name,
                          const struct ada_wal_file_summary *s)
{
	json_t *o = json_object();
	uint32_t g = 0;
	bool gen = sscanf(name, "index.g%u.atf", &g) == 1;
	json_object_set_new(o, "file", json_string(name));
	json_object_set_new(o, "generation", gen ? json_integer(g) : json_null());
	json_object_set_new(o, "events", json_integer((json_int_t)s->events));
	json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
	json_object_set_new(o, "time_start_ns", json_integer((json_int_t)s->time_start_ns));
	json_object_set_new(o, "time_end_ns", json_integer((json_int_t)s->time_end_ns));
	json_object_set_new(o, "encoding", json_string(ada_index_format_name(s->encoding)));
	json_array_append_new(files, o);
	c->rep->files++;
	c->rep->events_on_disk += s->events;
}

/* What de is, never following it; links are counted (recover says so). */
static enum ada_fs_kind rec_kind(struct rec_ctx *c, DIR *d, const struct dirent *de)
{
	enum ada_fs_kind k = ada_fs_entry_kind(dirfd(d), de);
	if (k == ADA_FS_LINK)
		c->rep->links_skipped++;
	return k;
}

/* The faulting thread's last index event, as the live drain writes it
 * (flight.c: flight_marker; docs/format.md, the fatal-signal marker). */
static int rec_crash_marker(struct rec_ctx *c, struct ada_wal_disk_file *rf)
{
	struct atf_index_event e = {
	    .timestamp_ns = c->crash_ns,
	    .function_id = c->ci.addr,
	    .thread_id = c->ci.tid,
	    .event_kind = ATF_EVENT_EXCEPTION,
	    .call_depth = ADA_SIGNAL_MARKER_FLAG | (uint32_t)c->ci.signo,
	    .detail_seq = ATF_NO_DETAIL,
	};
	return ada_wal_disk_append(rf, &e, 1); /* clamps the time to the last event's */
}

/* A headerless index file gets the header the drain would have written
 * (the thread's tid when its slot is known, 0 otherwise) and so becomes an
 * empty file that the arena's events, if any, are appended to. */
static int rec_give_header(struct rec_ctx *c, int fd, const char *path, uint32_t tid)
{
	struct atf_index_header h;
	wal_fill_header(&h, tid, c->arch, ATF_CLOCK_BOOTTIME);
	int rc = wal_pwrite_all(fd, &h, sizeof(h), 0);
	char msg[PATH_MAX + 160];
	snprintf(msg, sizeof(msg),
	         "%s had no header (the recorder was killed as it created the file); it was "
	         "given one and holds only what the ring still had",
	         path);
	if (rc == 0)
		rec_say(c, msg);
	return rc;
}

/* The ring events thread si's record says are already on disk: the file
 * ends at ring position base + events, which must lie within what the
 * ring holds (tail <= end <= head, and no wrap): a record that says
 * otherwise is stale (a put that failed) or lies (pid_N/ is writable by
 * the target's user) and is not used, said once; the file's own end by
 * time decides then (rec_time_skip). */
static uint64_t rec_record_skip(struct rec_ctx *c, const struct rec_side *sd,
                                const struct ada_slot_info *si, uint64_t events, bool *used)
{
	*used = false;
	if (!sd->ok)
		return 0;
	uint64_t end = sd->base + events;
	*used = end >= sd->base && end >= si->tail && end <= si->head;
	if (*used)
		return end - si->tail;
	char msg[320];
	snprintf(msg, sizeof(msg),
	         "pid %d thread %u: its ring record (base %llu, %llu events on disk) does not fit "
	         "the ring (positions %llu to %llu): not used; the file's last event's time "
	         "tells where it ends",
	         (int)c->pid, si->thread_seq, (unsigned long long)sd->base,
	         (unsigned long long)events, (unsigned long long)si->tail,
	         (unsigned long long)si->head);
	c->rep->ring_records_rejected++;
	rec_say(c, msg);
	return 0;
}

/* Ring events taken as already on disk by their time (rec_time_skip),
 * no ring record used: counted and said. */
static void rec_time_said(struct rec_ctx *c, uint32_t seq)
{
	if (!c->time_skipped)
		return;
	char msg[320];
	snprintf(msg, sizeof(msg),
	         "pid %d thread %u: %llu ring events (no usable ring record) were no later than "
	         "its index file's last event: taken as already on disk, not written again",
	         (int)c->pid, seq, (unsigned long long)c->time_skipped);
	c->rep->events_skipped_by_time += c->time_skipped;
	rec_say(c, msg);
}

/* Finalizes one index file; for the current one of a thread whose slot
 * is still in the arena, first appends what the ring still holds (the
 * part that was not yet durable when the recorder died; the part
 * already on disk is skipped). */
static int rec_file_of(struct rec_ctx *c, const char *path, int slot,
                       const struct ada_slot_info *si, const struct rec_side *sd,
                       struct ada_wal_file_summary *s, uint64_t *n)
{
	struct ada_wal_disk_file rf;
	int fd = -1, rc = ada_fs_open_file(AT_FDCWD, path, O_RDWR, &fd);
	if (rc == 0)
		rc = ada_wal_disk_scan(fd, &rf);
	if (rc == -EPROTO && rec_never_written(fd, sizeof(struct atf_index_header)) &&
	    (rc = rec_give_header(c, fd, path, slot >= 0 ? si->tid : 0)) == 0)
		rc = ada_wal_disk_scan(fd, &rf);
	if (rc < 0) {
		char msg[PATH_MAX + 160];
		snprintf(msg, sizeof(msg),
		         "%s was left as it is (%s): `ada validate` will say what is wrong with it",
		         path, rc == -EPROTO ? "not an ATF index file" : strerror(-rc));
		rec_say(c, msg);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	*n = 0;
	if (slot >= 0 && !c->arena_bad) {
		bool used;
		volatile uint64_t skip = rec_record_skip(c, sd, si, rf.s.events, &used);
		c->time_skipped = 0;
		WAL_GUARDED(c->arena,
		            *n = rec_drain_slot(c, (uint32_t)slot, si->tid, skip, !used, &rf),
		            c->arena_bad = true);
		if (!c->arena_bad)
			rec_quarantined(c, (uint32_t)slot, si->thread_seq, si->tid);
		rec_time_said(c, si->thread_seq);
	}
	if (slot >= 0 && c->crash && !c->crash_marked && si->tid == c->ci.tid &&
	    rec_crash_marker(c, &rf) == 0) {
		c->crash_marked = true;
		c->crash_thread = si->thread_seq;
		(*n)++;
	}
	rc = ada_wal_disk_finish(&rf, *n > 0, s);
	close(fd);
	return rc;
}

/* Each detail file of a thread dir the recorder left unfinished:
 * finalized against its index file (recover_detail.c), said in the
 * thread's manifest entry and, when something was lost, in a warning. */
static void rec_detail_files(struct rec_ctx *c, const char *dir, uint32_t seq, char **dnames,
                             size_t nd, json_t *t)
{
	json_t *arr = NULL;
	for (size_t i = 0; i < nd; i++) {
		char dpath[PATH_MAX], ipath[PATH_MAX];
		snprintf(dpath, sizeof(dpath), "%s/%s", dir, dnames[i]);
		snprintf(ipath, sizeof(ipath), "%s/index%s", dir, dnames[i] + strlen("detail"));
		struct wal_recover_detail st;
		int rc = wal_recover_detail_file(ipath, dpath, &st);
		char msg[PATH_MAX + 256];
		if (rc < 0) {
			snprintf(
			    msg, sizeof(msg),
			    "thread %u: %s was left as it is (%s): `ada validate` will say what is "
			    "wrong with it",
			    seq, dnames[i], strerror(-rc));
			rec_say(c, msg);
			c->rep->errors++;
			continue;
		}
		if (!st.unfinished)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "file", json_string(dnames[i]));
		json_object_set_new(o, "records", json_integer((json_int_t)st.records));
		json_object_set_new(o, "bytes_dropped", json_integer((json_int_t)st.bytes_dropped));
		json_object_set_new(o, "links_restored",
		                    json_integer((json_int_t)st.links_restored));
		json_object_set_new(o, "links_cleared", json_integer((json_int_t)st.links_cleared));
		if (!arr)
			arr = json_array();
		json_array_append_new(arr, o);
		if (st.bytes_dropped || st.links_cleared) {
			snprintf(
			    msg, sizeof(msg),
			    "thread %u: %s was unfinished; %llu detail records kept, %llu bytes "
			    "after them dropped (torn by the kill), %llu index links to records "
			    "never written cleared",
			    seq, dnames[i], (unsigned long long)st.records,
			    (unsigned long long)st.bytes_dropped,
			    (unsigned long long)st.links_cleared);
			rec_say(c, msg);
		}
	}
	if (arr)
		json_object_set_new(t, "detail_recovered", arr);
}

#define REC_STACK_DEPTH (1u << 16) /* frames tracked by depth; deeper ones counted only */
#define REC_STACK_SHOWN 64u

/* The open frames at the end of a thread's index file, innermost first
 * (the index lane's view of its stack at death). */
static void rec_open_frames(struct rec_ctx *c, const char *path, uint32_t seq, uint32_t tid)
{
	/* Through the reader: an ATF v2 or a compact (ATC1) file alike. */
	struct ada_atf_index *ix = NULL;
	uint64_t *fn = calloc(REC_STACK_DEPTH + 1, sizeof(*fn));
	if (!fn || ada_atf_index_open(path, 0, &ix) < 0) {
		free(fn);
		return;
	}
	uint64_t n = ada_atf_index_count(ix);
	uint32_t top = 0;
	for (uint64_t i = 0; i < n; i++) {
		const struct atf_index_event *e = ada_atf_index_get(ix, i);
		uint32_t d = e->call_depth;
		if (d & ADA_SIGNAL_MARKER_FLAG)
			continue;
		if (e->event_kind == ATF_EVENT_CALL) {
			top = d;
			if (d <= REC_STACK_DEPTH)
				fn[d] = e->function_id;
		} else if (d > 0) {
			top = d - 1;
		}
	}
	ada_atf_index_free(ix);
	json_t *o = json_object(), *frames = json_array();
	uint32_t shown = 0;
	for (uint32_t d = top; d > 0 && shown < REC_STACK_SHOWN; d--) {
		if (d > REC_STACK_DEPTH || !fn[d])
			continue;
		char id[32];
		snprintf(id, sizeof(id), "0x%llx", (unsigned long long)fn[d]);
		json_t *f = json_object();
		json_object_set_new(f, "function_id", json_string(id));
		json_object_set_new(f, "depth", json_integer(d));
		json_array_append_new(frames, f);
		shown++;
	}
	json_object_set_new(o, "thread", json_integer(seq));
	json_object_set_new(o, "tid", json_integer(tid));
	json_object_set_new(o, "depth", json_integer(top));
	json_object_set_new(o, "frames", frames);
	json_object_set_new(o, "frames_omitted", json_integer(top > shown ? top - shown : 0));
	json_array_append_new(c->stacks, o);
	free(fn);
}

/* The recorder was killed as it rotated: the old index.atf is a
 * generation already and the new one was never created, while the slot's
 * ring still holds what came after. Makes the file (true when it did), so
 * those events are kept. */
static bool rec_current_missing(struct rec_ctx *c, const char *dir, char **names, size_t nn,
                                uint32_t tid)
{
	for (size_t i = 0; i < nn; i++)
		if (!strcmp(names[i], "index.atf"))
			return false;
	int tfd = -1;
	if (ada_fs_open_dir(AT_FDCWD, dir, &tfd) < 0)
		return false;
	int rc = rec_new_index(tfd, tid, c->arch);
	close(tfd);
	char msg[PATH_MAX + 160];
	snprintf(msg, sizeof(msg),
	         "%s had no current index.atf (the recorder was killed as it started a new "
	         "generation); one was made for what the ring still held",
	         dir);
	if (rc == 0)
		rec_say(c, msg);
	return rc == 0;
}

/* A growable list of file names. */
struct rec_names {
	char **v;
	size_t n, cap;
};

/* Appends a copy of name; false when out of memory (nothing appended). */
static bool rec_names_add(struct rec_names *l, const char *name, size_t step)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : step;
		char **nb = realloc(l->v, cap * sizeof(*l->v));
		if (!nb)
			return false;
		l->v = nb;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(name)))
		return false;
	l->n++;
	return true;
}

/* The thread directory's index files (names, in generation order) and
 * detail files (dnames). */
static void rec_thread_list(struct rec_ctx *c, DIR *d, struct rec_names *names,
                            struct rec_names *dnames)
{
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		if (rec_kind(c, d, de) != ADA_FS_REG || !strstr(de->d_name, ".atf"))
			continue;
		if (!strncmp(de->d_name, "detail", 6)) {
			rec_names_add(dnames, de->d_name, 4);
			continue;
		}
		if (strncmp(de->d_name, "index", 5))
			continue;
		if (!rec_names_add(names, de->d_name, 16))
			break;
	}
	if (names->n) /* v is NULL for a thread_K/ without index files */
		qsort(names->v, names->n, sizeof(names->v[0]), rec_gen_cmp);
}

/* Finalizes each index file of dir (the current one with what slot's ring
 * still holds) and notes it in files; frees the names. */
static void rec_index_files(struct rec_ctx *c, const char *dir, struct rec_names *names, int slot,
                            const struct ada_slot_info *si, const struct rec_side *sd,
                            json_t *files)
{
	for (size_t i = 0; i < names->n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, names->v[i]);
		struct ada_wal_file_summary s = {0};
		uint64_t n = 0;
		int rc = rec_file_of(c, path, !strcmp(names->v[i], "index.atf") ? slot : -1, si, sd,
		                     &s, &n);
		if (rc == 0) {
			c->rep->events_from_arena += n;
			rec_note_file(c, files, names->v[i], &s);
		} else {
			c->rep->errors++;
		}
		free(names->v[i]);
	}
	free(names->v);
}

/* The thread's entry of the manifest, with its waits for ring space,
 * from a slot that passed the checks (shown, never trusted to size
 * anything). */
static void rec_thread_note(struct rec_ctx *c, json_t *t, uint32_t seq, int slot,
                            const struct ada_slot_info *si, json_t *files)
{
	json_object_set_new(t, "thread", json_integer(seq));
	json_object_set_new(t, "tid", json_integer(slot >= 0 ? si->tid : 0));
	json_object_set_new(t, "files", files);
	uint64_t waits = 0, wns = 0;
	if (slot >= 0 && !c->arena_bad)
		WAL_GUARDED(c->arena, ada_index_ring_waits(c->arena, (uint32_t)slot, &waits, &wns),
		            c->arena_bad = true);
	json_object_set_new(t, "ring_waits", json_integer((json_int_t)waits));
	json_object_set_new(t, "ring_waited_ns", json_integer((json_int_t)wns));
	c->ring_waits += waits;
	c->ring_waited_ns += wns;
	json_array_append_new(c->threads, t);
}

/* A record of a file rotated since (wal_ring_table_rotated): not used
 * (counted, said); the file's end by time decides. */
static void rec_side_stale(struct rec_ctx *c, const struct rec_names *names, uint32_t seq,
                           struct rec_side *sd)
{
	if (!sd->ok || !wal_ring_table_rotated(sd->file_gen, names->v, names->n))
		return;
	sd->ok = false;
	char msg[320];
	snprintf(msg, sizeof(msg),
	         "pid %d thread %u: its ring record is that of index.g%u.atf, a file rotated "
	         "since (its current file's record was not written: a put that failed, or the "
	         "recorder died first): not used; the file's last event's time tells where it ends",
	         (int)c->pid, seq, sd->file_gen);
	c->rep->ring_records_rejected++;
	rec_say(c, msg);
}

/* Finalizes the generations and the current file of one thread dir. */
static void rec_thread(struct rec_ctx *c, const char *dir, uint32_t seq)
{
	DIR *d = ada_fs_opendir(AT_FDCWD, dir);
	if (!d && errno == ELOOP) /* swapped for a link, or one above it, since listed */
		rec_link_refused(c, dir);
	if (!d)
		return;
	struct rec_names names = {0}, dnames = {0};
	rec_thread_list(c, d, &names, &dnames);
	closedir(d);
	json_t *t = json_object(), *files = json_array();
	struct ada_slot_info si = {0};
	struct rec_side sd;
	rec_sidecar(c, dir, seq, &sd);
	rec_side_stale(c, &names, seq, &sd);
	int slot = -1;
	if (c->arena && !c->arena_bad)
		WAL_GUARDED(c->arena, slot = rec_slot_of(c, seq, &sd, &si), c->arena_bad = true);
	if (c->arena_bad)
		slot = -1;
	if (slot >= 0 && rec_current_missing(c, dir, names.v, names.n, si.tid))
		rec_names_add(&names, "index.atf", 16);
	rec_index_files(c, dir, &names, slot, &si, &sd, files);
	/* the index files are final now */
	rec_detail_files(c, dir, seq, dnames.v, dnames.n, t);
	rd_cidx_note_sizes(dir, files); /* their links' tails were written again */
	for (size_t i = 0; i < dnames.n; i++)
		free(dnames.v[i]);
	free(dnames.v);
	if (c->crash) {
		char ipath[PATH_MAX + 16];
		snprintf(ipath, sizeof(ipath), "%s/index.atf", dir);
		rec_open_frames(c, ipath, seq, slot >= 0 ? si.tid : 0);
	}
	char side[PATH_MAX + 16];
	snprintf(side, sizeof(side), "%s/.ring_base", dir);
	(void)ada_fs_unlink_path(side); /* none is fine */
	rec_thread_note(c, t, seq, slot, &si, files);
}

/* Slots with events whose thread never got a file: make one. At most
 * max_threads of them, each checked like any slot. */
static void rec_orphan_slot(struct rec_ctx *c, const char *pid_dir, const struct ada_slot_info *si)
{
	char dir[PATH_MAX], name[32];
	snprintf(name, sizeof(name), "thread_%u", si->thread_seq);
	snprintf(dir, sizeof(dir), "%s/%s", pid_dir, name);
	int pfd = -1, tfd = -1;
	/* Made like the drain makes them: 0700/0600, no link followed. */
	int made = -1;
	if (ada_fs_open_dir(AT_FDCWD, pid_dir, &pfd) == 0 && ada_fs_mkdir(pfd, name, 0, &tfd) == 0)
		made = rec_new_index(tfd, si->tid, c->arch);
	if (pfd >= 0)
		close(pfd);
	if (tfd >= 0)
		close(tfd);
	if (made < 0)
		return;
	rec_thread(c, dir, si->thread_seq);
}

/* Slots that may hold events: reads the arena's count (guarded: the file
 * may have shrunk). */
static uint32_t rec_slots_used(struct rec_ctx *c)
{
	volatile uint32_t n = 0;
	WAL_GUARDED(c->arena, n = ada_arena_slots_used(c->arena), c->arena_bad = true);
	return n;
}

static void rec_orphan_slots(struct rec_ctx *c, const char *pid_dir)
{
	if (!c->arena || c->arena_bad)
		return;
	uint32_t n = rec_slots_used(c);
	for (uint32_t s = 0; s < n && !c->arena_bad; s++) {
		struct ada_slot_info si;
		int rc = -EPROTO;
		WAL_GUARDED(c->arena, rc = ada_slot_read_checked(c->arena, s, &si),
		            c->arena_bad = true);
		if (rc == -EPROTO && !c->arena_bad)
			rec_quarantined(c, s, 0, 0);
		if (rc != 0 || si.state == ADA_SLOT_FREE || si.head == si.tail)
			continue;
		rec_orphan_slot(c, pid_dir, &si);
	}
}

/* What the arena knows and the early manifest could not: drops by lane
 * and reason (corrupt: what recover itself quarantined; the arena's own
 * counters for it are ignored), and how the process ended, as its agent
 * recorded it (exit status or fatal signal; unknown otherwise). */
struct rec_arena_end {
	uint64_t d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	uint32_t state;
	int info;
};

static void rec_read_end(struct rec_ctx *c, struct rec_arena_end *e)
{
	ada_arena_drop_totals(c->arena, e->d);
	e->state = ada_arena_process_state(c->arena, &e->info);
}

/* The manifest's `crash`, as the live drain writes it (flight.c), from
 * the crash record; the stacks are the open frames of each thread's index
 * file (function ids: recover does not read the symbol files). */
static json_t *rec_crash_json(struct rec_ctx *c)
{
	/* The arena's other threads first, guarded (the target may have
	 * truncated it since): a fault leaves nothing built. */
	json_t *volatile others = NULL;
	if (c->arena && !c->arena_bad)
		WAL_GUARDED(c->arena, others = wal_crash_others_json(c->arena), {
			c->arena_bad = true;
			rec_say(c, "the arena file shrank while recover read it: the crash's other "
			           "threads are not told");
		});
	json_t *o = json_object();
	char addr[32];
	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)c->ci.addr);
	json_object_set_new(o, "abnormal", json_true());
	json_object_set_new(o, "signal", json_integer(c->ci.signo));
	json_object_set_new(
	    o, "signal_name",
	    json_string(sigabbrev_np(c->ci.signo) ? sigabbrev_np(c->ci.signo) : "?"));
	json_object_set_new(o, "time_ns", json_integer((json_int_t)c->crash_ns));
	json_object_set_new(o, "caught", json_true());
	json_object_set_new(o, "faulting_tid", json_integer(c->ci.tid));
	json_object_set_new(o, "faulting_thread",
	                    c->crash_thread >= 0 ? json_integer(c->crash_thread) : json_null());
	json_object_set_new(o, "address", json_string(addr));
	json_object_set_new(o, "si_code", json_integer(c->ci.code));
	json_object_set_new(o, "context", wal_crash_context_json(&c->ci, c->arch));
	if (others)
		json_object_set_new(o, "other_threads", others);
	json_object_set_new(o, "recovered", json_true());
	json_object_set_new(o, "note",
	                    json_string("written by ada recover from the crash record "
	                                "the agent left in the arena: the recorder "
	                                "did not finish; no window was persisted"));
	json_object_set(o, "stacks", c->stacks);
	return o;
}

/* The detail mode the recorder wrote in the early manifest (its default,
 * triggered, when it is not there). */
static uint32_t rec_detail_mode(json_t *man)
{
	const char *m = json_string_value(json_object_get(json_object_get(man, "detail"), "mode"));
	if (m && !strcmp(m, "always"))
		return ADA_DETAIL_ALWAYS;
	if (m && !strcmp(m, "never"))
		return ADA_DETAIL_NEVER;
	return ADA_DETAIL_TRIGGERED;
}

static void rec_fold_arena(struct rec_ctx *c, json_t *man)
{
	struct rec_arena_end e = {.state = ADA_PROC_RUNNING};
	if (c->arena && !c->arena_bad)
		WAL_GUARDED(c->arena, rec_read_end(c, &e), c->arena_bad = true);
	if (c->arena_bad)
		e = (struct rec_arena_end){.state = ADA_PROC_RUNNING};
	uint64_t rec[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT] = {{0}}, over;
	rec[ADA_LANE_INDEX][ADA_DROP_CORRUPT] = c->corrupt;
	/* Its windows died with the recorder (none is persisted here), so no
	 * window_lost; detail_overwritten counts as the mode says (loss.c).
	 * With --detail always, which overwritten records the drain had
	 * persisted died with it too: every one counts (an upper bound). */
	uint32_t mode = rec_detail_mode(man);
	if (mode == ADA_DETAIL_ALWAYS)
		rec[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN] =
		    e.d[ADA_LANE_DETAIL][ADA_DROP_DETAIL_OVERWRITTEN];
	wal_drops_account(e.d, rec, mode, e.d, &over);
	json_t *detail = json_object_get(man, "detail");
	if (json_is_object(detail))
		json_object_set_new(detail, "overwritten", json_integer((json_int_t)over));
	json_t *drops = json_object();
	static const char *const lanes[ADA_LANE_COUNT] = {"index", "detail"};
	for (int l = 0; l < ADA_LANE_COUNT; l++) {
		json_t *lane = json_object();
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++)
			json_object_set_new(lane, ada_drop_reason_name((unsigned)k),
			                    json_integer((json_int_t)e.d[l][k]));
		json_object_set_new(drops, lanes[l], lane);
	}
	json_object_set_new(man, "drops", drops);
	bool exited = e.state == ADA_PROC_EXITED;
	bool crashed = e.state == ADA_PROC_CRASHED && e.info > 0 && e.info < 65;
	json_t *x = json_object();
	json_object_set_new(x, "status", exited ? json_integer(e.info) : json_null());
	json_object_set_new(x, "signal", crashed ? json_integer(e.info) : json_null());
	if (crashed && sigabbrev_np(e.info))
		json_object_set_new(x, "signal_name", json_string(sigabbrev_np(e.info)));
	json_object_set_new(x, "abnormal", json_boolean(!exited));
	json_object_set_new(man, "exit", x);
	if (c->crash && !exited)
		json_object_set_new(man, "crash", rec_crash_json(c));
}

/* The arena's crash record, checked: a signal number and a time. */
static void rec_crash_read(struct rec_ctx *c)
{
	struct ada_crash_info ci;
	if (!ada_arena_crash_info(c->arena, &ci) || ci.signo <= 0 || ci.signo >= 65)
		return;
	c->ci = ci;
	c->crash = true;
	c->crash_ns = !c->use_tsc                    ? ci.ts_raw
	              : ada_tsc_clock_ready(&c->clk) ? ada_tsc_clock_to_ns(&c->clk, ci.ts_raw)
	                                             : 0;
}

/* No anchor saved: calibrate now (same TSC, same boot). */
static void rec_clock_calibrate(struct rec_ctx *c)
{
	ada_tsc_clock_init(&c->clk, ada_tsc_read(), ada_boottime_ns());
	uint64_t mult;
	if (ada_tsc_known_mult(&mult) != ADA_TSC_MEASURED)
		ada_tsc_clock_seed(&c->clk, mult);
	while (!ada_tsc_clock_ready(&c->clk)) {
		usleep(1000);
		ada_tsc_clock_sample(&c->clk, ada_tsc_read(), ada_boottime_ns());
	}
}

static void rec_clock_from(struct rec_ctx *c, json_t *man)
{
	json_t *clk = json_object_get(man, "clock");
	const char *src = json_string_value(json_object_get(clk, "source"));
	json_t *a = json_object_get(clk, "anchor");
	const char *arch = json_string_value(json_object_get(man, "arch"));
	c->arch = arch && !strcmp(arch, "arm64") ? ATF_ARCH_ARM64 : ATF_ARCH_X86_64;
	c->foreign = c->arch != WAL_ARCH;
	c->use_tsc = src && !strcmp(src, "tsc");
	if (c->use_tsc && json_is_object(a)) {
		struct ada_tsc_map m = {
		    .tsc0 = (uint64_t)json_integer_value(json_object_get(a, "tsc")),
		    .ns0 = (uint64_t)json_integer_value(json_object_get(a, "ns")),
		    .mult = (uint64_t)json_integer_value(json_object_get(a, "mult")),
		    .shift = (uint32_t)json_integer_value(json_object_get(a, "shift")),
		};
		ada_tsc_clock_set(&c->clk, &m);
	} else if (c->use_tsc && !c->foreign) {
		rec_clock_calibrate(c);
	}
}

/* A manifest without a clock (the recorder died before writing one and
 * no sibling had one): the arena says what its stamps are. */
static void rec_clock_of_arena(struct rec_ctx *c)
{
	c->use_tsc = ada_arena_config_of(c->arena)->timestamp_source != ADA_TS_CLOCK;
	if (c->use_tsc && !c->foreign)
		rec_clock_calibrate(c);
}

static int rec_thread_dirs(struct rec_ctx *c, const char *pid_dir)
{
	DIR *d = ada_fs_opendir(AT_FDCWD, pid_dir);
	if (!d)
		return -errno;
	struct dirent *de;
	for (unsigned i = 0; i < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)); i++) {
		unsigned seq;
		char tail;
		if (rec_kind(c, d, de) != ADA_FS_DIR ||
		    sscanf(de->d_name, "thread_%u%c", &seq, &tail) != 1)
			continue;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/%s", pid_dir, de->d_name);
		rec_thread(c, dir, seq);
	}
	closedir(d);
	return 0;
}

/* Another machine's counter and no anchor in the manifest (the recorder
 * died before it wrote one): the arena's own, when it states a usable
 * frequency (ada_arena_origin). */
static void rec_clock_foreign(struct rec_ctx *c)
{
	struct ada_arena_origin o;
	uint64_t mult;
	if (!c->use_tsc || !c->foreign || ada_tsc_clock_ready(&c->clk) || !c->arena)
		return;
	ada_arena_origin(c->arena, &o);
	if (!ada_tsc_mult_from_hz(o.counter_hz, &mult))
		return;
	struct ada_tsc_map m = {
	    .tsc0 = o.anchor_counter, .ns0 = o.anchor_ns, .mult = mult, .shift = 32};
	ada_tsc_clock_set(&c->clk, &m);
}

/* An arena the manifest names is gone. A final manifest's ("complete")
 * is gone because the recorder drained it and then removed it (or put it
 * in the arena pool): nothing is missing, nothing is said. So is one whose
 * final manifest the recorder could not write, which pid_N/.ring_slots
 * says (drained): nothing of its rings is missing, but what only that
 * manifest had is, and that is said. Another's is counted for the
 * caller's one sentence (a killed recording's dozens of processes would
 * otherwise print a line each) and said in the process's own manifest
 * only. */
static void rec_arena_gone(struct rec_ctx *c, const char *arena, bool final)
{
	if (final)
		return;
	if (c->ring_table.drained) {
		json_array_append_new(
		    c->warnings,
		    json_string("the recorder drained this process's arena and removed it but "
		                "could not write its final manifest: its files hold every event "
		                "it took; what only that manifest had (its exit, drop and wait "
		                "counts) is not known"));
		return;
	}
	char msg[PATH_MAX + 160];
	snprintf(msg, sizeof(msg),
	         "the arena %s is gone: whatever its rings still held is not recovered", arena);
	json_array_append_new(c->warnings, json_string(msg));
	c->rep->arenas_gone++;
}

/* Opens the arena the manifest names into c->arena (left NULL when it is
 * gone, unreadable, not a regular file or another process's: said in the
 * warnings). The path is input: a device is not opened (root's O_RDWR
 * open, with its side effects, before ada_arena_open's fstat). final: the
 * manifest is the recorder's final one (rec_arena_gone). */
static void rec_arena_open(struct rec_ctx *c, const char *arena, bool final)
{
	struct stat st;
	int arc = !c->buf || !arena ? -ENOENT
	          : lstat(arena, &st) == 0 && !S_ISREG(st.st_mode)
	              ? -EINVAL
	              : ada_arena_open(arena, &c->arena);
	if (c->buf && arena && arc == -ENOENT) {
		rec_arena_gone(c, arena, final);
	} else if (c->buf && arena && arc < 0) {
		char msg[PATH_MAX + 160];
		if (arc == -EINVAL)
			snprintf(
			    msg, sizeof(msg),
			    "ignored arena %s: not a regular file (not opened): events its rings "
			    "still held are lost",
			    arena);
		else
			snprintf(msg, sizeof(msg),
			         "the arena %s could not be read (%s): events its rings still held "
			         "are lost",
			         arena, strerror(-arc));
		rec_say(c, msg);
	}
	if (arc == 0) {
		c->rep->arenas_found++;
		if (ada_arena_pid(c->arena) != c->pid) {
			char msg[PATH_MAX + 128];
			snprintf(msg, sizeof(msg),
			         "ignored arena %s: it says it belongs to process %d, not %d",
			         arena, (int)ada_arena_pid(c->arena), (int)c->pid);
			rec_say(c, msg);
			ada_arena_close(c->arena);
			c->arena = NULL;
		}
	}
}

/* A forked child's files its recorder had not made from its note (it
 * was killed first): made now (fork_files.c); its exit counts into *fx. */
static bool rec_fork_files(struct rec_ctx *c, int dfd, const char *pid_dir,
                           struct ada_fork_exit *fx)
{
	char msg[256];
	bool have = c->arena &&
	            wal_fork_files_recover(c->arena, dfd, pid_dir, c->pid, fx, msg, sizeof(msg));
	if (c->arena && msg[0])
		rec_say(c, msg);
	return have;
}

/* The manifest of a process whose recording did not end: state
 * "recovered", its threads, metrics, the arena's counts and warnings;
 * written in pid_dir. Consumes c->threads. */
static void rec_manifest_recovered(struct rec_ctx *c, json_t *man, const char *pid_dir,
                                   uint64_t events_before)
{
	struct ada_recover_report *rep = c->rep;
	json_object_set_new(man, "state", json_string("recovered"));
	wal_retention_apply(man, c->threads, &c->retention);
	if (c->retention.bad_lines)
		rec_say(c, "pid_N/.retention has lines ada does not write: skipped (the retention "
		           "counts may be short)");
	json_object_set_new(man, "threads", c->threads);
	json_object_set_new(man, "recovered_events_from_arena",
	                    json_integer((json_int_t)rep->events_from_arena));
	json_t *m = json_object();
	json_object_set_new(m, "events_written",
	                    json_integer((json_int_t)(rep->events_on_disk - events_before)));
	json_object_set_new(m, "ring_waits", json_integer((json_int_t)c->ring_waits));
	json_object_set_new(m, "ring_waited_ns", json_integer((json_int_t)c->ring_waited_ns));
	json_object_set_new(man, "metrics", m);
	rec_fold_arena(c, man);
	/* The program's end, as its agent recorded it: a recording whose
	 * recorder was killed says so by its state, not by calling a clean
	 * exit abnormal. */
	const json_t *ab = json_object_get(json_object_get(man, "exit"), "abnormal");
	json_object_set_new(man, "abnormal", json_boolean(!json_is_false(ab)));
	int dfd = -1;
	/* The hooks and the calls left untraced. */
	if (ada_fs_open_dir(AT_FDCWD, pid_dir, &dfd) == 0 && !json_object_get(man, "hook")) {
		struct ada_fork_exit fx, own;
		bool have_fx = rec_fork_files(c, dfd, pid_dir, &fx);
		bool have_own = c->arena && ada_arena_exit_note_read(c->arena, &own);
		wal_manifest_agent(man, dfd, NULL, NULL, have_fx ? &fx : NULL,
		                   have_own ? &own : NULL);
	}
	json_t *w = json_object_get(man, "warnings");
	if (!json_is_array(w))
		json_object_set_new(man, "warnings", w = json_array());
	json_array_extend(w, c->warnings);
	json_object_set(man, "quarantined", c->quarantine);
	if (dfd >= 0) {
		wal_json_write_atomic(dfd, man);
		close(dfd);
	}
}

/* Closes the arena; once its process is gone, removes the arena file and
 * (when only its budget page is left) the arena directory: only an arena
 * in a directory ada could have made for it (rec_arena_dir_open: named
 * ada-*, not a link, ours, 0700, in a place no one else can change),
 * unlinked relative to that directory (a manifest naming another
 * directory removes nothing; a refused directory is said). */
static void rec_arena_release(struct rec_ctx *c, json_t *man, const char *arena)
{
	ada_arena_close(c->arena);
	const char *adir = json_string_value(json_object_get(man, "arena_dir"));
	int dfd = -1;
	if (c->pid <= 0 || kill(c->pid, 0) == 0 || errno != ESRCH)
		return;
	int rc = rec_arena_in_dir(arena, adir) ? rec_arena_dir_open(adir, &dfd) : -EPERM;
	if (rc == 0) {
		unlinkat(dfd, strrchr(arena, '/') + 1, 0);
		close(dfd);
		wal_shm_remove_dir(adir);
	} else if (rc != -ENOENT) {
		char msg[2 * PATH_MAX + 200];
		snprintf(msg, sizeof(msg),
		         "arena directory %s: not a directory ada made for its arena (a link, "
		         "another user's, not 0700, or in a place others can change): %s was "
		         "read but is left there",
		         adir ? adir : "(none)", arena);
		rec_say(c, msg);
	}
}

/* The end of rec_pid(): the manifest written (not for a process already
 * complete, or recovered before: again), the arena released, c freed.
 * A process whose files were reached through a link is left as it was,
 * its arena too: a later recover, once the link is gone, reads what the
 * rings hold. */
static void rec_pid_finish(struct rec_ctx *c, json_t *man, const char *pid_dir, const char *arena,
                           bool again, uint64_t events_before)
{
	const char *state = json_string_value(json_object_get(man, "state"));
	if (!((state && !strcmp(state, "complete")) || again || c->link_refused)) {
		rec_manifest_recovered(c, man, pid_dir, events_before);
		wal_retention_remove(pid_dir);  /* the manifest says it now */
		wal_ring_table_remove(pid_dir); /* the files are final */
	} else {
		json_decref(c->threads);
	}
	wal_retention_free(&c->retention);
	wal_ring_table_free(&c->ring_table);
	if (c->arena && c->link_refused)
		ada_arena_close(c->arena);
	else if (c->arena)
		rec_arena_release(c, man, arena);
	json_decref(c->quarantine);
	json_decref(c->warnings);
	json_decref(c->stacks);
	free(c->buf);
}

int rec_pid(const char *pid_dir, struct ada_recover_report *rep)
{
	json_t *man = rec_manifest_load(pid_dir);
	int named = rec_recorder_running(man) ? -EBUSY : rec_name_arena(pid_dir, man);
	if (named < 0) {
		json_decref(man);
		return -EBUSY;
	}
	json_int_t mpid = json_integer_value(json_object_get(man, "pid"));
	struct rec_ctx c = {.rep = rep,
	                    .threads = json_array(),
	                    .quarantine = json_array(),
	                    .warnings = json_array(),
	                    .pid = (int32_t)mpid,
	                    .crash_thread = -1,
	                    .stacks = json_array(),
	                    .buf = malloc(REC_BATCH * sizeof(struct atf_index_event))};
	uint64_t events_before = rep->events_on_disk;
	rec_clock_from(&c, man);
	wal_guard_install();
	const char *arena = json_string_value(json_object_get(man, "arena"));
	/* Recovered before (by hand, or by the scan of orphans.c) and its
	 * arena gone since: final; a second pass would only lose what the
	 * first one read from the arena (tids, waits, drops, exit). */
	const char *st0 = ada_manifest_state(man);
	bool again = st0 && !strcmp(st0, "recovered") && arena && access(arena, F_OK) != 0 &&
	             errno == ENOENT;
	if (again)
		arena = NULL;
	/* No manifest, or one that names no arena: the recorder died before
	 * it wrote the early one (a process younger than its first 20 ms,
	 * drain_early_manifest) or it was damaged. Its files are finalized
	 * from disk; what its rings held is not read, and that is said. */
	if (!arena && !again && st0 && strcmp(st0, "complete"))
		rec_say(&c,
		        "no manifest named this process's arena (the recorder died before writing "
		        "it) and none was found in the session's arena directory: what its rings "
		        "still held is not recovered");
	if (named)
		rec_say(&c, "the recorder died before writing this process's manifest: its arena "
		            "was found in the session's arena directory and read");
	wal_ring_table_load(pid_dir, &c.ring_table); /* drained: rec_arena_gone */
	rec_arena_open(&c, arena, st0 && !strcmp(st0, "complete"));
	if (c.arena && !json_object_get(man, "clock"))
		rec_clock_of_arena(&c);
	if (c.arena)
		WAL_GUARDED(c.arena, rec_clock_foreign(&c); rec_crash_read(&c), c.arena_bad = true);
	wal_retention_load(pid_dir, &c.retention);
	if (c.ring_table.bad)
		rec_say(&c, "pid_N/.ring_slots has records ada does not write: skipped (their "
		            "threads' ring events are read as if it had none)");
	if (rec_thread_dirs(&c, pid_dir) == -ELOOP)
		rec_link_refused(&c, pid_dir);
	rec_orphan_slots(&c, pid_dir);
	if (c.arena_bad)
		rec_say(&c,
		        "the arena file shrank while recover read it: what was read is written, "
		        "the rest of it is lost");
	rec_pid_finish(&c, man, pid_dir, arena, again, events_before);
	json_decref(man);
	rep->pids++;
	return 0;
}
