/*
 * The recorder's side of "the arena is untrusted input" (DESIGN.md
 * decision 9): the event fields the drain checks, quarantine reports,
 * the thread-directory rate, whose arenas we accept, and the recorder's
 * own drop counts. The ring-protocol checks themselves (head, tail, slot
 * states, identity) are in src/ring/consumer.c.
 *
 * Threads: the drain thread (and `ada recover`, single-threaded).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena_internal.h"
#include "drain_internal.h"
#include "detail_internal.h"
#include "recorder_internal.h"

size_t wal_events_first_bad(const struct atf_index_event *ev, size_t n, uint32_t tid,
                            uint64_t ts_max, uint32_t *why, uint64_t *value)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t bad = wal_event_bad(&ev[i], tid, ts_max);
		if (!bad)
			continue;
		const struct atf_index_event *e = &ev[i];
		if (bad & 1) {
			*why = ADA_EVENT_BAD_KIND;
			*value = e->event_kind;
		} else if (bad & 2) {
			*why = ADA_EVENT_BAD_THREAD;
			*value = e->thread_id;
		} else if (bad & 4) {
			*why = ADA_EVENT_BAD_DETAIL;
			*value = e->detail_seq;
		} else if (bad & 8) {
			*why = ADA_EVENT_BAD_DEPTH;
			*value = e->call_depth;
		} else {
			*why = ADA_EVENT_BAD_TIME;
			*value = e->timestamp_ns;
		}
		return i;
	}
	return n;
}

uint64_t wal_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void note_emit(struct ada_recorder *r, const char *sentence)
{
	if (r->o.notice)
		r->o.notice(r->o.notice_arg, sentence);
}

void wal_notice(struct ada_recorder *r, const char *fmt, ...)
{
	if (!r->o.notice)
		return;
	char buf[PATH_MAX + 512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	note_emit(r, buf);
}

void wal_note(struct ada_recorder *r, struct wal_proc *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (p && p->warnings) {
		json_array_append_new(p->warnings, json_string(buf));
	} else {
		json_array_append_new(r->warnings, json_string(buf));
	}
	note_emit(r, buf);
}

void wal_note_quarantine(struct ada_recorder *r, struct wal_proc *p, uint32_t slot,
                         const struct wal_thread *t, uint64_t pending)
{
	struct ada_slot_fault f;
	if (!p->arena || !p->slot_noted || slot >= p->max_threads || p->slot_noted[slot] ||
	    !ada_slot_fault(p->arena, slot, &f))
		return;
	drain_slot_touch(p, slot);
	p->slot_noted[slot] = 1;
	uint64_t left = ada_slot_unconsumed(p->arena, slot);
	left = left > pending ? left - pending : 0;
	p->rec_drops[ADA_LANE_INDEX][ADA_DROP_CORRUPT] += left;
	char what[256], sentence[512];
	ada_slot_fault_text(&f, what, sizeof(what));
	if (t)
		snprintf(sentence, sizeof(sentence),
		         "pid %d thread %u (tid %u) broke the ring protocol: %s; its slot is "
		         "quarantined, the %llu events before stay written and %llu left in the "
		         "ring are counted as corrupt drops",
		         (int)p->pid, t->seq, t->tid, what,
		         (unsigned long long)(t->f ? ada_wal_file_events(t->f) : t->last.events),
		         (unsigned long long)left);
	else
		snprintf(sentence, sizeof(sentence),
		         "pid %d slot %u broke the ring protocol: %s; the slot is quarantined and "
		         "%llu events left in it are counted as corrupt drops",
		         (int)p->pid, slot, what, (unsigned long long)left);
	json_t *o = json_object();
	json_object_set_new(o, "slot", json_integer(slot));
	json_object_set_new(o, "thread", t ? json_integer(t->seq) : json_null());
	json_object_set_new(o, "tid", t ? json_integer(t->tid) : json_null());
	json_object_set_new(o, "fault", json_integer(f.code));
	json_object_set_new(o, "corrupt_events", json_integer((json_int_t)left));
	json_object_set_new(o, "reason", json_string(sentence));
	if (p->quarantine)
		json_array_append_new(p->quarantine, o);
	else
		json_decref(o);
	if (p->warnings)
		json_array_append_new(p->warnings, json_string(sentence));
	note_emit(r, sentence);
}

/* Token bucket: WAL_THREAD_DIR_BURST directories at once (or the
 * process's slots, when it has more: --thread-limit), then
 * WAL_THREAD_DIR_RATE a second. A program that starts threads faster for
 * long still gets its first ones and a steady trickle; the events of the
 * refused ones are counted (thread_limit), never written silently. */
bool wal_thread_dir_allowed(struct wal_proc *p, uint64_t now_ns)
{
	/* As many at once as the process may have threads recorded at once
	 * (its slots: the recorder's thread limit), at least the burst. */
	double burst = (double)p->max_threads > WAL_THREAD_DIR_BURST ? (double)p->max_threads
	                                                             : WAL_THREAD_DIR_BURST;
	if (p->dir_tokens_ns == 0) {
		p->dir_tokens = burst;
		p->dir_tokens_ns = now_ns;
	}
	double add = (double)(now_ns - p->dir_tokens_ns) / 1e9 * WAL_THREAD_DIR_RATE;
	p->dir_tokens_ns = now_ns;
	p->dir_tokens += add;
	if (p->dir_tokens > burst)
		p->dir_tokens = burst;
	if (p->dir_tokens < 1.0) {
		p->dirs_refused++;
		return false;
	}
	p->dir_tokens -= 1.0;
	return true;
}

/* The arena's drop counters only grow, and no faster than one drop per
 * nanosecond per slot (a drop costs more than that): a value that goes
 * back or jumps further was written by someone else. Then the counters
 * are frozen at the last plausible values and the manifest says so. */
void wal_drops_read(struct ada_recorder *r, struct wal_proc *p)
{
	if (!p->arena || p->drops_bad)
		return;
	uint64_t now = wal_now_ns(), d[ADA_LANE_COUNT][ADA_DROP_REASON_COUNT];
	uint64_t dt = p->drops_read_ns ? now - p->drops_read_ns : now - p->opened_ns;
	uint64_t jump = (dt + 1000000000ull) * (uint64_t)p->max_threads + (1ull << 20);
	ada_arena_drop_totals(p->arena, d);
	for (int l = 0; l < ADA_LANE_COUNT; l++)
		for (int k = 0; k < ADA_DROP_REASON_COUNT; k++) {
			if (wal_drop_is_recorders(k) || k == ADA_DROP_WINDOW_LOST)
				continue; /* ours, not the arena's */
			uint64_t was = p->arena_drops[l][k];
			if (d[l][k] < was || d[l][k] - was > jump) {
				p->drops_bad = true;
				wal_note(
				    r, p,
				    "pid %d wrote its arena's %s drop counter (%llu after %llu): "
				    "drop "
				    "counts from then on are unknown; the manifest keeps the last "
				    "plausible ones",
				    (int)p->pid, ada_drop_reason_name((unsigned)k),
				    (unsigned long long)d[l][k], (unsigned long long)was);
				return;
			}
		}
	memcpy(p->arena_drops, d, sizeof(d));
	p->drops_read_ns = now;
}

void wal_drops_fold(const struct ada_recorder *r, struct wal_proc *p)
{
	wal_drops_account(p->arena_drops, p->rec_drops, r->o.detail_mode, p->drops,
	                  &p->detail_overwritten);
}

int wal_stat_ppid(const char *buf)
{
	const char *rp = strrchr(buf, ')');
	int ppid;
	char state;
	if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	/* 'X': reaped. A read that races the reap's release of the task gets
	 * ppid 0 (the kernel no longer reaches its parent) with state Z or X:
	 * the process is gone. A live one with ppid 0 has its parent outside
	 * our pid namespace: not ours, the walk ends there. */
	if (ppid < 0 || state == 'X' || (state == 'Z' && ppid == 0))
		return -1;
	return ppid;
}

/* The walk's recorder and root: a parent the recorder already records,
 * alive, ends the walk as the root would (check_recorded_alive). */
struct check_walk {
	const struct ada_recorder *r;
	pid_t root;
};

/* pid is a process we record that has not exited: its pidfd (which names
 * that process, not its pid) is not readable yet, or it is the program
 * we started and have not reaped. Such a process's pid is nobody else's
 * while it lives, and it lived at the read of its child's parent just
 * before; under ada record (our subreaper: an orphan of the program's
 * tree comes to us) it is a descendant while it lives, and so is that
 * child. Not when attached: an orphan there goes to init. */
static bool check_recorded_alive(const struct ada_recorder *r, pid_t pid)
{
	if (r->o.attached)
		return false;
	if (pid == r->main_pid && !r->main_reaped)
		return true;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct wal_proc *p = r->procs[i];
		/* vanished, pid_taken: the pidfd may be a later holder's. */
		if (p->pid != pid || p->finished || p->gone || p->vanished || p->pid_taken ||
		    p->pidfd < 0)
			continue;
		struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
		if (poll(&pfd, 1, 0) == 0)
			return true;
	}
	return false;
}

/* ppid of pid from /proc/PID/stat (wal_stat_ppid()); -1 when gone or
 * unreadable; the walk's root when that parent is a live process we
 * record (one read for a forked child, not one per generation). */
static pid_t check_read_ppid(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return (pid_t)wal_stat_ppid(buf);
}

static pid_t check_ppid(pid_t pid, void *arg)
{
	const struct check_walk *w = arg;
	pid_t up = check_read_ppid(pid);
	/* The kernel reads the state before the parent: a child reaped
	 * between the two reads shows a live state with ppid 0, as a process
	 * whose parent is outside our pid namespace does. Only the latter is
	 * still there when asked again (bounded_reaprace under load). */
	if (up == 0)
		up = check_read_ppid(pid);
	return up > 0 && check_recorded_alive(w->r, up) ? w->root : up;
}

int wal_ppid_chain(pid_t pid, pid_t root, pid_t (*ppid_of)(pid_t, void *), void *arg)
{
	pid_t q = pid;
	/* Bounded: a chain longer than this is not a process tree we made. */
	for (int depth = 0; depth < 4096 && q > 1; depth++) {
		pid_t up = ppid_of(q, arg);
		if (up == root)
			return 1;
		if (up < 0)
			return q == pid ? 0 : -1;
		q = up; /* 0: a live parent outside our pid namespace, not ours */
	}
	return -2;
}

int wal_reaped_add(struct wal_reaped *e, pid_t pid, int st, int64_t now_ns)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 16;
		struct wal_reaped_pid *v = realloc(e->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = (struct wal_reaped_pid){
	    .pid = pid, .status = st, .scan = e->scans, .reaped_ns = now_ns};
	return 0;
}

/* pid's newest entry (the last added), or -1. */
static ssize_t reaped_newest(const struct wal_reaped *e, pid_t pid)
{
	for (size_t i = e->n; i-- > 0;)
		if (e->v[i].pid == pid)
			return (ssize_t)i;
	return -1;
}

bool wal_reaped_has(const struct wal_reaped *e, pid_t pid, int64_t named_ns)
{
	ssize_t i = reaped_newest(e, pid);
	return i >= 0 && named_ns < e->v[i].reaped_ns;
}

bool wal_reaped_take(struct wal_reaped *e, pid_t pid, int64_t named_ns, int *st)
{
	ssize_t i = reaped_newest(e, pid);
	bool ours = i >= 0 && named_ns < e->v[i].reaped_ns;
	if (ours)
		*st = e->v[i].status;
	size_t k = 0;
	for (size_t j = 0; j < e->n; j++)
		if (e->v[j].pid != pid)
			e->v[k++] = e->v[j];
	e->n = k;
	return ours;
}

uint64_t wal_reaped_scan_begin(struct wal_reaped *e)
{
	return ++e->scans;
}

void wal_reaped_scanned(struct wal_reaped *e, uint64_t began)
{
	size_t k = 0;
	for (size_t i = 0; i < e->n; i++)
		if (e->v[i].scan >= began) /* reaped during that scan: the next one decides */
			e->v[k++] = e->v[i];
	e->n = k;
	if (k == 0) { /* a burst of reaps leaves no peak behind */
		free(e->v);
		e->v = NULL;
		e->cap = 0;
	}
}

void wal_reaped_free(struct wal_reaped *e)
{
	free(e->v);
	*e = (struct wal_reaped){0};
}

int wal_pid_check(struct ada_recorder *r, pid_t pid, int64_t named_ns, char *why, size_t cap)
{
	if (pid == r->main_pid)
		return 1;
	if (wal_reaped_has(&r->reaped, pid, named_ns))
		return 1; /* we reaped it: it was our descendant */
	/* ada attach: the attached process is the root of what we record. */
	struct check_walk w = {r, r->o.attached ? r->main_pid : getpid()};
	/* -1: a parent exited meanwhile, its children are ours now: walk
	 * again (a few times: a fork-heavy tree may lose another meanwhile). */
	int rc = wal_ppid_chain(pid, w.root, check_ppid, &w);
	for (int again = 0; rc == -1 && again < 4; again++)
		rc = wal_ppid_chain(pid, w.root, check_ppid, &w);
	if (rc >= 0)
		return rc;
	snprintf(why, cap,
	         "ignored the arena of process %d: that process is not a descendant of the "
	         "recorded program",
	         (int)pid);
	return -1;
}

/* ---- SIGBUS guard ---- */

static __thread struct wal_guard *guard_top;

/* A SIGBUS inside the live guard's mapping: that arena's file lost its
 * pages; jump back to the guard. Anything else: the default action. */
static void guard_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	struct wal_guard *g = guard_top;
	const uint8_t *addr = si->si_addr;
	if (g && si->si_code > 0 && addr >= g->lo && addr < g->hi)
		siglongjmp(g->env, 1);
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig); /* sent by someone: deliver it as it was meant */
	                    /* A fault: returning re-executes the access, now with SIG_DFL. */
}

int wal_guard_install(void)
{
	static bool done;
	if (done)
		return 0;
	struct sigaction sa = {0};
	sa.sa_sigaction = guard_sigbus;
	/* NODEFER: SIGBUS stays unblocked after the jump (sigsetjmp does not
	 * save the mask: no syscall per guard). */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		return -errno;
	done = true;
	return 0;
}

void wal_guard_push(struct wal_guard *g, const struct ada_arena *a)
{
	const void *base = NULL;
	uint64_t size = 0;
	if (a)
		ada_arena_mapping(a, &base, &size);
	g->lo = base;
	g->hi = (const uint8_t *)base + size;
	g->prev = guard_top;
	guard_top = g;
}

void wal_guard_pop(struct wal_guard *g)
{
	guard_top = g->prev;
}
