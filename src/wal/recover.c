/*
 * Recovery: finalize index files from what is on disk, and `ada recover`
 * for a session whose recorder died.
 *
 * Threads: single-threaded (the `ada recover` command, or the drain when
 * a write failed and a file must be rebuilt from its own bytes).
 *
 * An unfinished index file is [header placeholder][events][zeros...]: the
 * placeholder carries magic, thread id and arch but footer_offset 0; the
 * zero tail is the preallocated, never written part of the last segment.
 * The scan keeps events up to the first all-zero slot (event_kind 0), an
 * impossible kind, a timestamp that goes backwards or a partial slot at
 * the end, recomputes the CRC-32 and the time range, appends the leftovers
 * drained from the arena (converted with the clock anchor the early
 * manifest recorded), writes footer and header and cuts the file.
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
#include "wal_internal.h"

#define REC_CHUNK (1u << 20)

struct rec_scan {
	uint64_t events, t0, t1;
	uint32_t crc;
};

static bool rec_event_ok(const struct atf_index_event *e, uint64_t last)
{
	if (e->event_kind < ATF_EVENT_CALL || e->event_kind > ATF_EVENT_EXCEPTION)
		return false; /* kind 0: the zero tail; anything else: garbage */
	return e->timestamp_ns >= last;
}

/* Scans events from offset 64 up to limit; fills s. */
static int rec_scan_events(int fd, uint64_t limit, struct rec_scan *s)
{
	uint8_t *buf = malloc(REC_CHUNK);
	if (!buf)
		return -ENOMEM;
	uint64_t off = ATF_HEADER_SIZE, last = 0;
	bool stop = false;
	while (!stop && off + ATF_INDEX_EVENT_SIZE <= limit) {
		uint64_t want = limit - off < REC_CHUNK ? limit - off : REC_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n < (ssize_t)ATF_INDEX_EVENT_SIZE)
			break;
		size_t k = 0, whole = (size_t)n / ATF_INDEX_EVENT_SIZE;
		const struct atf_index_event *ev = (const void *)buf;
		while (k < whole && rec_event_ok(&ev[k], last))
			last = ev[k++].timestamp_ns;
		stop = k < whole;
		if (k) {
			if (s->events == 0)
				s->t0 = ev[0].timestamp_ns;
			s->t1 = last;
			s->crc = wal_crc32(s->crc, buf, k * ATF_INDEX_EVENT_SIZE);
			s->events += k;
		}
		off += (uint64_t)k * ATF_INDEX_EVENT_SIZE;
		if ((size_t)n % ATF_INDEX_EVENT_SIZE)
			stop = true;
	}
	free(buf);
	return 0;
}

/* A finalized file: header, footer and length agree. */
static bool rec_is_final(int fd, const struct atf_index_header *h, uint64_t size,
                         struct atf_index_footer *ft)
{
	if (h->footer_offset < ATF_HEADER_SIZE || h->footer_offset + ATF_FOOTER_SIZE != size)
		return false;
	if (pread(fd, ft, sizeof(*ft), (off_t)h->footer_offset) != (ssize_t)sizeof(*ft))
		return false;
	return !memcmp(ft->magic, ATF_INDEX_FOOTER_MAGIC, 4) &&
	       ft->event_count * ATF_INDEX_EVENT_SIZE + ATF_HEADER_SIZE == h->footer_offset;
}

static int rec_append(int fd, struct rec_scan *s, const struct atf_index_event *extra, size_t n)
{
	if (!n)
		return 0;
	struct atf_index_event *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	uint64_t last = s->t1;
	for (size_t i = 0; i < n; i++) {
		tmp[i] = extra[i];
		if (tmp[i].timestamp_ns < last)
			tmp[i].timestamp_ns = last;
		last = tmp[i].timestamp_ns;
	}
	uint64_t off = ATF_HEADER_SIZE + s->events * ATF_INDEX_EVENT_SIZE;
	int r = wal_pwrite_all(fd, tmp, n * sizeof(*tmp), off);
	if (r == 0) {
		if (s->events == 0)
			s->t0 = tmp[0].timestamp_ns;
		s->t1 = last;
		s->crc = wal_crc32(s->crc, tmp, n * sizeof(*tmp));
		s->events += n;
	}
	free(tmp);
	return r;
}

static int rec_write_final(int fd, const struct atf_index_header *old, const struct rec_scan *s,
                           struct ada_wal_file_summary *sum)
{
	struct ada_wal_file_summary v = {
	    .events = s->events,
	    .time_start_ns = s->t0,
	    .time_end_ns = s->t1,
	    .crc = s->crc,
	};
	struct atf_index_header h;
	struct atf_index_footer ft;
	wal_fill_header(&h, old->thread_id, old->arch ? old->arch : WAL_ARCH,
	                old->clock_type ? old->clock_type : ATF_CLOCK_BOOTTIME);
	h.flags = old->flags;
	wal_fill_final(&h, &ft, &v);
	int r = wal_pwrite_all(fd, &ft, sizeof(ft), h.footer_offset);
	if (r == 0)
		r = wal_pwrite_all(fd, &h, sizeof(h), 0);
	if (r == 0 && ftruncate(fd, (off_t)(h.footer_offset + ATF_FOOTER_SIZE)) < 0)
		r = -errno;
	v.bytes = h.footer_offset + ATF_FOOTER_SIZE;
	if (sum)
		*sum = v;
	return r;
}

int ada_wal_finalize_path(const char *path, const struct atf_index_event *extra, size_t n_extra,
                          struct ada_wal_file_summary *sum)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct atf_index_header h;
	struct atf_index_footer ft;
	struct stat st;
	struct rec_scan s = {0};
	int r = -EPROTO;
	if (fstat(fd, &st) < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, ATF_INDEX_MAGIC, 4) || h.event_size != ATF_INDEX_EVENT_SIZE)
		goto out;
	if (rec_is_final(fd, &h, (uint64_t)st.st_size, &ft)) {
		s = (struct rec_scan){ft.event_count, ft.time_start_ns, ft.time_end_ns,
		                      ft.checksum};
		if (n_extra == 0) {
			r = 0;
			if (sum)
				*sum = (struct ada_wal_file_summary){.events = s.events,
				                                     .bytes = (uint64_t)st.st_size,
				                                     .time_start_ns = s.t0,
				                                     .time_end_ns = s.t1,
				                                     .crc = s.crc};
			goto out;
		}
	} else {
		r = rec_scan_events(fd, (uint64_t)st.st_size, &s);
		if (r < 0)
			goto out;
	}
	r = rec_append(fd, &s, extra, n_extra);
	if (r == 0)
		r = rec_write_final(fd, &h, &s, sum);
out:
	close(fd);
	return r;
}

/* ---- ada recover ---- */

struct rec_ctx {
	struct ada_recover_report *rep;
	struct ada_arena *arena;
	struct ada_tsc_clock clk;
	bool use_tsc;
	json_t *threads;
};

/* Takes everything left in one slot's ring, converted to ns, after
 * dropping the first skip events (already on disk). */
static int rec_drain_slot(struct rec_ctx *c, uint32_t slot, uint64_t skip,
                          struct atf_index_event **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	for (;;) {
		const struct atf_index_event *ev;
		size_t k = ada_index_ring_peek(c->arena, slot, &ev);
		if (k == 0)
			return 0;
		if (skip) {
			size_t d = skip < k ? (size_t)skip : k;
			ada_index_ring_release(c->arena, slot, d);
			skip -= d;
			continue;
		}
		if (*n + k > cap) {
			cap = (*n + k) * 2;
			void *nb = realloc(*out, cap * sizeof(**out));
			if (!nb)
				return -ENOMEM;
			*out = nb;
		}
		for (size_t i = 0; i < k; i++) {
			(*out)[*n + i] = ev[i];
			if (c->use_tsc)
				(*out)[*n + i].timestamp_ns =
				    ada_tsc_clock_to_ns(&c->clk, ev[i].timestamp_ns);
		}
		*n += k;
		ada_index_ring_release(c->arena, slot, k);
	}
}

struct rec_side {
	bool ok;
	uint32_t slot, gen;
	uint64_t base;
};

/* thread_K/.ring_base written by the drain (see drain.c). */
static void rec_sidecar(const char *dir, struct rec_side *sd)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/.ring_base", dir);
	FILE *fp = fopen(path, "re");
	unsigned long long base;
	memset(sd, 0, sizeof(*sd));
	if (!fp)
		return;
	sd->ok = fscanf(fp, "slot %u generation %u base %llu", &sd->slot, &sd->gen, &base) == 3;
	sd->base = base;
	fclose(fp);
}

static int rec_slot_of(struct rec_ctx *c, uint32_t seq, const struct rec_side *sd,
                       struct ada_slot_info *si)
{
	if (!c->arena)
		return -1;
	if (sd->ok) {
		if (sd->slot >= ada_arena_max_threads(c->arena))
			return -1;
		ada_arena_slot_info(c->arena, sd->slot, si);
		bool same = si->state != ADA_SLOT_FREE && si->thread_seq == seq &&
		            si->generation == sd->gen;
		return same ? (int)sd->slot : -1;
	}
	uint32_t n = ada_arena_max_threads(c->arena);
	for (uint32_t s = 0; s < n; s++) {
		ada_arena_slot_info(c->arena, s, si);
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
	json_array_append_new(files, o);
	c->rep->files++;
	c->rep->events_on_disk += s->events;
}

static int rec_gen_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	uint32_t gx = UINT32_MAX, gy = UINT32_MAX;
	sscanf(x, "index.g%u.atf", &gx);
	sscanf(y, "index.g%u.atf", &gy);
	return gx < gy ? -1 : gx > gy;
}

/* Finalizes the generations and the current file of one thread dir. */
static void rec_thread(struct rec_ctx *c, const char *dir, uint32_t seq)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char **names = NULL;
	size_t nn = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "index", 5) || !strstr(de->d_name, ".atf"))
			continue;
		if (nn == cap) {
			cap = cap ? cap * 2 : 16;
			char **nb = realloc(names, cap * sizeof(*names));
			if (!nb)
				break;
			names = nb;
		}
		if (!(names[nn] = strdup(de->d_name)))
			break;
		nn++;
	}
	closedir(d);
	qsort(names, nn, sizeof(names[0]), rec_gen_cmp);
	json_t *t = json_object(), *files = json_array();
	struct ada_slot_info si = {0};
	struct rec_side sd;
	rec_sidecar(dir, &sd);
	int slot = rec_slot_of(c, seq, &sd, &si);
	for (size_t i = 0; i < nn; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		struct atf_index_event *extra = NULL;
		size_t n = 0;
		struct ada_wal_file_summary s = {0};
		int rc = ada_wal_finalize_path(path, NULL, 0, &s);
		if (rc == 0 && !strcmp(names[i], "index.atf") && slot >= 0) {
			/* The ring still holds what was not yet durable when the
			 * recorder died; the part already on disk is skipped. */
			uint64_t on_disk_end = sd.base + s.events;
			uint64_t skip = sd.ok && on_disk_end > si.tail ? on_disk_end - si.tail : 0;
			rec_drain_slot(c, (uint32_t)slot, skip, &extra, &n);
			if (n)
				rc = ada_wal_finalize_path(path, extra, n, &s);
		}
		if (rc == 0) {
			c->rep->events_from_arena += n;
			rec_note_file(c, files, names[i], &s);
		} else {
			c->rep->errors++;
		}
		free(extra);
		free(names[i]);
	}
	free(names);
	char side[PATH_MAX + 16];
	snprintf(side, sizeof(side), "%s/.ring_base", dir);
	unlink(side);
	json_object_set_new(t, "thread", json_integer(seq));
	json_object_set_new(t, "tid", json_integer(slot >= 0 ? si.tid : 0));
	json_object_set_new(t, "files", files);
	json_array_append_new(c->threads, t);
}

/* Slots with events whose thread never got a file: make one. */
static void rec_orphan_slots(struct rec_ctx *c, const char *pid_dir)
{
	if (!c->arena)
		return;
	uint32_t n = ada_arena_max_threads(c->arena);
	for (uint32_t s = 0; s < n; s++) {
		struct ada_slot_info si;
		ada_arena_slot_info(c->arena, s, &si);
		if (si.state == ADA_SLOT_FREE || si.head == si.tail)
			continue;
		char dir[PATH_MAX], path[PATH_MAX + 16];
		snprintf(dir, sizeof(dir), "%s/thread_%u", pid_dir, si.thread_seq);
		snprintf(path, sizeof(path), "%s/index.atf", dir);
		if (wal_mkdir(dir) < 0)
			continue;
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			continue;
		struct atf_index_header h;
		wal_fill_header(&h, si.tid, WAL_ARCH, ATF_CLOCK_BOOTTIME);
		wal_pwrite_all(fd, &h, sizeof(h), 0);
		close(fd);
		rec_thread(c, dir, si.thread_seq);
	}
}

static void rec_clock_from(struct rec_ctx *c, json_t *man)
{
	json_t *clk = json_object_get(man, "clock");
	const char *src = json_string_value(json_object_get(clk, "source"));
	json_t *a = json_object_get(clk, "anchor");
	c->use_tsc = src && !strcmp(src, "tsc");
	if (c->use_tsc && json_is_object(a)) {
		struct ada_tsc_map m = {
		    .tsc0 = (uint64_t)json_integer_value(json_object_get(a, "tsc")),
		    .ns0 = (uint64_t)json_integer_value(json_object_get(a, "ns")),
		    .mult = (uint64_t)json_integer_value(json_object_get(a, "mult")),
		    .shift = (uint32_t)json_integer_value(json_object_get(a, "shift")),
		};
		ada_tsc_clock_set(&c->clk, &m);
	} else if (c->use_tsc) {
		/* No anchor saved: calibrate now (same TSC, same boot). */
		ada_tsc_clock_init(&c->clk, ada_tsc_read(), ada_boottime_ns());
		while (!ada_tsc_clock_ready(&c->clk)) {
			usleep(1000);
			ada_tsc_clock_sample(&c->clk, ada_tsc_read(), ada_boottime_ns());
		}
	}
}

static int rec_thread_dirs(struct rec_ctx *c, const char *pid_dir)
{
	DIR *d = opendir(pid_dir);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned seq;
		char tail;
		if (sscanf(de->d_name, "thread_%u%c", &seq, &tail) != 1)
			continue;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/%s", pid_dir, de->d_name);
		rec_thread(c, dir, seq);
	}
	closedir(d);
	return 0;
}

static int rec_pid(const char *pid_dir, struct ada_recover_report *rep)
{
	json_t *man = NULL;
	if (ada_manifest_read(pid_dir, &man) < 0 || !man) {
		unsigned pid = 0;
		const char *b = strrchr(pid_dir, '/');
		sscanf(b ? b + 1 : pid_dir, "pid_%u", &pid);
		man = ada_manifest_new((int32_t)pid); /* lost or damaged: start anew */
	}
	const char *st0 = ada_manifest_state(man);
	json_int_t rpid = json_integer_value(json_object_get(man, "recorder_pid"));
	if (st0 && !strcmp(st0, "recording") && rpid > 0 && rpid != getpid() &&
	    kill((pid_t)rpid, 0) == 0) {
		/* Its recorder still runs: two drains of one ring would corrupt
		 * both the ring and the files. */
		json_decref(man);
		return -EBUSY;
	}
	struct rec_ctx c = {.rep = rep, .threads = json_array()};
	uint64_t events_before = rep->events_on_disk;
	rec_clock_from(&c, man);
	const char *arena = json_string_value(json_object_get(man, "arena"));
	if (arena && ada_arena_open(arena, &c.arena) == 0)
		rep->arenas_found++;
	rec_thread_dirs(&c, pid_dir);
	rec_orphan_slots(&c, pid_dir);
	const char *state = json_string_value(json_object_get(man, "state"));
	bool was_final = state && !strcmp(state, "complete");
	if (!was_final) {
		json_object_set_new(man, "state", json_string("recovered"));
		json_object_set_new(man, "threads", c.threads);
		json_object_set_new(man, "abnormal", json_true());
		json_object_set_new(man, "recovered_events_from_arena",
		                    json_integer((json_int_t)rep->events_from_arena));
		json_t *m = json_object();
		json_object_set_new(
		    m, "events_written",
		    json_integer((json_int_t)(rep->events_on_disk - events_before)));
		json_object_set_new(man, "metrics", m);
		wal_json_write_atomic(pid_dir, man);
	} else {
		json_decref(c.threads);
	}
	if (c.arena) {
		int32_t pid = ada_arena_pid(c.arena);
		ada_arena_close(c.arena);
		if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) {
			unlink(arena);
			const char *adir = json_string_value(json_object_get(man, "arena_dir"));
			if (adir)
				rmdir(adir);
		}
	}
	json_decref(man);
	rep->pids++;
	return 0;
}

static bool rec_is_pid_dir(const char *name)
{
	unsigned pid;
	char tail;
	return sscanf(name, "pid_%u%c", &pid, &tail) == 1;
}

int ada_wal_recover(const char *dir, struct ada_recover_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	if (rec_is_pid_dir(base))
		return rec_pid(dir, rep);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int busy = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!rec_is_pid_dir(de->d_name))
			continue;
		char sub[PATH_MAX];
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		int rc = rec_pid(sub, rep);
		if (rc == -EBUSY)
			busy = rc;
	}
	closedir(d);
	if (busy)
		return busy;
	return rep->pids ? 0 : -ENOENT;
}
