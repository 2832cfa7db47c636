/*
 * The drain's processes: finding a new arena (a read of the arena
 * directory when the budget page's count of names moved, every second,
 * and after each reap), admitting it (the recording's
 * user, a regular file, a process of ours, not a reused pid) and making
 * its wal_proc and pid_N directory.
 *
 * Threads: the drain thread only (drain.c), which owns every wal_proc.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arena_internal.h"
#include "drain_internal.h"
#include "fs.h"
#include "ring.h"
#include "ring_bell.h"

/* At most this many refused arenas remembered (16 bytes each). */
#define WAL_IGNORED_MAX (1u << 20)
/* Above any pid_max Linux allows (PID_MAX_LIMIT on 64-bit): no process. */
#define WAL_PID_LIMIT (1l << 22)
/* A scan under a forced stop gives up after this long. */
#define WAL_SCAN_STOP_NS 200000000ull

struct wal_proc *drain_find(struct ada_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid)
			return r->procs[i];
	return NULL;
}

/* pid_N could not be made ours (a planted link, another user's directory,
 * a full disk): the process's events are counted lost; told (o.notice) and
 * in the manifests' warnings, and the exit status is non-zero. */
static void drain_no_pid_dir(struct ada_recorder *r, struct wal_proc *p, int rc)
{
	char msg[PATH_MAX + 200];
	bool fd_limit = rc == -EMFILE || rc == -ENFILE;
	if (fd_limit)
		p->dir_err = rc; /* its threads' events are fd_limit drops (drain.c) */
	snprintf(msg, sizeof(msg), "%s: %s; the events of process %d are not written%s", p->dir,
	         rc == -ELOOP   ? "a symbolic link, not a directory of ada's"
	         : rc == -EPERM ? "a directory of another user"
	                        : strerror(-rc),
	         (int)p->pid,
	         fd_limit ? ", counted as fd_limit drops (the recorder's limit of open files: "
	                    "raise it, ulimit -n)"
	                  : "");
	wal_notice(r, "%s", msg);
	json_array_append_new(r->warnings, json_string(msg));
	if (!r->error && !fd_limit)
		r->error = rc;
}

/* The arena refused for reason k: the first of a reason is told (o.notice)
 * and put in the manifests' warnings as it was; each later one only
 * counts, and that warning is rewritten with the count. A directory of
 * fake arena names costs one sentence and one manifest entry per reason,
 * not one per name. The finished processes' manifests are marked stale
 * so that the end writes them again (drain_restate()). */
static void drain_refuse(struct ada_recorder *r, enum wal_refusal k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void drain_refuse(struct ada_recorder *r, enum wal_refusal k, const char *fmt, ...)
{
	struct wal_admit *a = &r->admit;
	if (a->refused[k]++ == 0) {
		char buf[PATH_MAX + 256];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		a->first[k] = strdup(buf);
		a->warn_at[k] = json_array_size(r->warnings);
		wal_note(r, NULL, "%s", buf);
		return;
	}
	char buf[PATH_MAX + 384];
	snprintf(buf, sizeof(buf), "%s (and %llu more arenas ignored for the same reason)",
	         a->first[k] ? a->first[k] : "ignored an arena",
	         (unsigned long long)(a->refused[k] - 1));
	if (a->warn_at[k] < json_array_size(r->warnings))
		json_array_set_new(r->warnings, a->warn_at[k], json_string(buf));
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->finished && r->procs[i]->man_warnings > a->warn_at[k])
			r->procs[i]->man_warnings = a->warn_at[k];
}

static int64_t drain_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000ll + ts->tv_nsec;
}

/* The pid's holder started after the arena file got its name (its ctime,
 * which only the kernel sets: a rename sets it too), so the holder did
 * not put it there: whoever did, under that pid's name, is gone and the
 * kernel gave its pid to the holder before the drain looked (a
 * descendant that ended at once, its pid taken by a stranger). Within a
 * clock tick of each other (the start time's resolution) it is not known:
 * false, and the holder is judged as the maker. */
static bool drain_named_before_holder(pid_t pid, const struct stat *st)
{
	uint64_t ticks = ada_proc_start_ticks(pid);
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec rt, bt;
	if (!ticks || hz <= 0 || clock_gettime(CLOCK_REALTIME, &rt) != 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &bt) != 0)
		return false;
	int64_t tick = 1000000000ll / hz;
	/* The ctime on CLOCK_BOOTTIME, where the start time is counted. */
	int64_t named = drain_ts_ns(&st->st_ctim) - (drain_ts_ns(&rt) - drain_ts_ns(&bt));
	return named + tick < (int64_t)ticks * tick;
}

/* Who made the arena file: the recorder's own user, a regular file, and
 * a process the recorder may wait for (wal_pid_check()), or one gone
 * whose pid a stranger holds now (drain_named_before_holder(): *alive 0,
 * *taken). The descriptor stays open to check the file's size later.
 * Returns the descriptor, or -1 (reported when it is a stranger's). */
static int drain_arena_admit(struct ada_recorder *r, const char *path, pid_t pid, int *alive,
                             ino_t *ino, bool *taken)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	char why[256];
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		drain_refuse(
		    r, WAL_REFUSE_NOT_OURS,
		    "ignored arena %s: it is not a regular file owned by the recording's user",
		    path);
		close(fd);
		return -1;
	}
	*ino = st.st_ino;
	*alive = wal_pid_check(r, pid, drain_ts_ns(&st.st_ctim), why, sizeof(why));
	if (*alive < 0 && drain_named_before_holder(pid, &st)) {
		*alive = 0; /* read what it left, as of any process gone */
		*taken = true;
	}
	if (*alive < 0) {
		drain_refuse(r, WAL_REFUSE_STRANGER, "%s", why);
		close(fd);
		return -1;
	}
	return fd;
}

/* Slot tables kept for the next process (drain_slot_tables_free): their
 * entries all zero again. Any thread may free a process (the drain, the
 * recorder's end): under a lock of their own. */
#define SLOT_TABLES_KEPT 4
/* Kept only when at most this many slots' entries were written: the
 * clearing is a few cache lines, not the pages a munmap would free. */
#define SLOT_TABLES_CLEAR_MAX 64u

static struct {
	pthread_mutex_t lock;
	void *map[SLOT_TABLES_KEPT];
	size_t len[SLOT_TABLES_KEPT];
} slot_tables_kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A kept mapping of len bytes, or NULL. */
static void *slot_tables_take(size_t len)
{
	void *m = NULL;
	pthread_mutex_lock(&slot_tables_kept.lock);
	for (int i = 0; i < SLOT_TABLES_KEPT && !m; i++)
		if (slot_tables_kept.map[i] && slot_tables_kept.len[i] == len) {
			m = slot_tables_kept.map[i];
			slot_tables_kept.map[i] = NULL;
		}
	pthread_mutex_unlock(&slot_tables_kept.lock);
	return m;
}

/* Keeps m (len bytes, all zero); false when every place is taken. */
static bool slot_tables_keep(void *m, size_t len)
{
	bool kept = false;
	pthread_mutex_lock(&slot_tables_kept.lock);
	for (int i = 0; i < SLOT_TABLES_KEPT && !kept; i++)
		if (!slot_tables_kept.map[i]) {
			slot_tables_kept.map[i] = m;
			slot_tables_kept.len[i] = len;
			kept = true;
		}
	pthread_mutex_unlock(&slot_tables_kept.lock);
	return kept;
}

/* The tables' layout in m for n slots (drain_slot_tables_new). */
static void slot_tables_point(struct wal_proc *p, void *m, size_t n)
{
	/* The 8-byte tables first: every table starts 8-byte aligned. */
	p->by_slot = m;
	p->slot_dlocked = (uint64_t *)(p->by_slot + n);
	p->slot_noted = (uint8_t *)(p->slot_dlocked + n);
	p->slot_locked = p->slot_noted + n;
}

int drain_slot_tables_new(struct wal_proc *p)
{
	size_t n = p->max_threads; /* the arena's, checked when it was opened */
	size_t len = n * (2 * sizeof(uint64_t) + 2);
	void *m = slot_tables_take(len);
	if (!m)
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	slot_tables_point(p, m, n);
	p->slot_tables_len = len;
	p->slot_tables_hi = 0;
	return 0;
}

bool drain_slot_tables_clear(struct wal_proc *p)
{
	size_t n = p->max_threads, hi = p->slot_tables_hi;
	if (!p->by_slot || hi > SLOT_TABLES_CLEAR_MAX || hi > n)
		return false;
	memset(p->by_slot, 0, hi * sizeof(*p->by_slot));
	memset(p->slot_dlocked, 0, hi * sizeof(*p->slot_dlocked));
	memset(p->slot_noted, 0, hi);
	memset(p->slot_locked, 0, hi);
	p->slot_tables_hi = 0;
	return true;
}

void drain_slot_tables_free(struct wal_proc *p)
{
	if (p->by_slot &&
	    !(drain_slot_tables_clear(p) && slot_tables_keep(p->by_slot, p->slot_tables_len)))
		munmap(p->by_slot, p->slot_tables_len);
	p->by_slot = NULL;
	p->slot_dlocked = NULL;
	p->slot_noted = p->slot_locked = NULL;
	p->slot_tables_len = 0;
	p->slot_tables_hi = 0;
}

void drain_free_proc(struct wal_proc *p)
{
	if (p->arena_fd >= 0)
		close(p->arena_fd);
	ada_arena_close(p->arena);
	json_decref(p->quarantine);
	json_decref(p->warnings);
	drain_slot_tables_free(p);
	free(p->arena_path);
	free(p->dir);
	free(p);
}

/* The pidfd was opened after the arena's maker ended and the kernel gave
 * its pid to a later process (the maker's start time, kept in the arena,
 * is not that process's): the maker is gone. Read after the pidfd, so the
 * start time is of the pidfd's process or of a still later one (gone
 * then, too). Unknown either side (0): the pid must do. */
bool drain_creator_gone(const struct wal_proc *p)
{
	uint32_t made = ada_arena_start_time(p->arena);
	uint64_t now = made ? ada_proc_start_ticks(p->pid) : 0;
	return now && (uint32_t)now != made;
}

/* The arena's code must be the recording's architecture (an aarch64
 * program's processes under qemu-user are all aarch64: an x86_64 program
 * it ran natively, with the aarch64 agent in LD_PRELOAD, has no agent).
 * When ada cannot read that architecture's counter, the arena's stated
 * frequency and anchor give the clock (drain_clock_anchor). 0, or -1
 * when refused (said once). */
static int drain_arena_origin(struct ada_recorder *r, struct wal_proc *p)
{
	struct ada_arena_origin o;
	ada_arena_origin(p->arena, &o);
	/* In the raw time the notes of reaps carry: the counter, or ns with
	 * ts=clock. Untrusted: it only ever dates p's own status. */
	bool ns = ada_arena_config_of(p->arena)->timestamp_source == ADA_TS_CLOCK;
	p->born_raw = ns ? o.anchor_ns : o.anchor_counter;
	uint8_t arch = o.machine == EM_AARCH64 ? ATF_ARCH_ARM64 : ATF_ARCH_X86_64;
	if (arch != r->arch) {
		drain_refuse(r, WAL_REFUSE_OTHER_ARCH,
		             "ignored arena %s: its process runs %s code, the recording is of %s",
		             p->arena_path, arch == ATF_ARCH_ARM64 ? "arm64" : "x86_64",
		             r->arch == ATF_ARCH_ARM64 ? "arm64" : "x86_64");
		return -1;
	}
	p->arch = arch;
	if (!r->foreign_counter || !r->use_tsc)
		return 0;
	uint64_t mult;
	if (ada_arena_config_of(p->arena)->timestamp_source != ADA_TS_TSC ||
	    !ada_tsc_mult_from_hz(o.counter_hz, &mult)) {
		drain_refuse(r, WAL_REFUSE_OTHER_ARCH,
		             "ignored arena %s: it states no counter frequency ada can convert "
		             "(%llu Hz)",
		             p->arena_path, (unsigned long long)o.counter_hz);
		return -1;
	}
	drain_clock_anchor(r, o.anchor_counter, o.anchor_ns, mult);
	return 0;
}

/* Opens and checks the arena; 0, or -1 when it is not one we record. */
static int drain_proc_arena(struct ada_recorder *r, struct wal_proc *p)
{
	int alive = 0;
	p->arena_fd =
	    drain_arena_admit(r, p->arena_path, p->pid, &alive, &p->arena_ino, &p->pid_taken);
	if (p->arena_fd < 0 || ada_arena_open_fd(p->arena_fd, &p->arena) < 0)
		return -1;
	if (ada_arena_pid(p->arena) != p->pid) {
		drain_refuse(r, WAL_REFUSE_OTHER_PID,
		             "ignored arena %s: it says it belongs to process %d", p->arena_path,
		             (int)ada_arena_pid(p->arena));
		return -1;
	}
	if (drain_arena_origin(r, p) < 0)
		return -1;
	/* Not our child (yet): a pidfd tells when it is gone, without the
	 * pid-reuse race of kill(pid, 0). Gone already: never wait for it. */
	p->our_child = !r->o.attached && p->pid == r->main_pid;
	p->pidfd = p->our_child ? -1 : (int)syscall(SYS_pidfd_open, p->pid, 0);
	p->vanished = alive == 0 || (!p->our_child && p->pidfd < 0);
	if (!p->vanished && !p->our_child && drain_creator_gone(p)) {
		close(p->pidfd); /* another process's: it would wait for that one */
		p->pidfd = -1;
		p->vanished = p->pid_taken = true;
	}
	return 0;
}

/* The set's slot for (pid, ino): one hash, linear probing. */
static size_t drain_ignored_slot(const struct wal_admit *a, pid_t pid, ino_t ino)
{
	uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)pid << 17);
	h ^= h >> 29;
	size_t i = (size_t)h & (a->cap - 1);
	while (a->set[i].pid && (a->set[i].pid != pid || a->set[i].ino != ino))
		i = (i + 1) & (a->cap - 1);
	return i;
}

/* Arenas we refused, so each file is reported once: the same pid with
 * another inode is a later process's arena, looked at anew. */
static bool drain_ignored(const struct ada_recorder *r, pid_t pid, ino_t ino)
{
	const struct wal_admit *a = &r->admit;
	return a->cap && a->set[drain_ignored_slot(a, pid, ino)].pid == pid;
}

/* Doubles the set (kept at most half full); false when out of memory. */
static bool drain_ignored_grow(struct wal_admit *a)
{
	size_t cap = a->cap ? a->cap * 2 : 1024;
	struct wal_admit b = {.set = calloc(cap, sizeof(*b.set)), .cap = cap};
	if (!b.set)
		return false;
	for (size_t i = 0; i < a->cap; i++)
		if (a->set[i].pid)
			b.set[drain_ignored_slot(&b, a->set[i].pid, a->set[i].ino)] = a->set[i];
	free(a->set);
	a->set = b.set;
	a->cap = cap;
	return true;
}

/* Past WAL_IGNORED_MAX refusals (or out of memory) a refused file is not
 * remembered: a rescan looks at it, and counts it, again. Told once. */
static void drain_ignore(struct ada_recorder *r, pid_t pid, ino_t ino)
{
	struct wal_admit *a = &r->admit;
	if (a->n >= WAL_IGNORED_MAX || ((a->n + 1) * 2 > a->cap && !drain_ignored_grow(a))) {
		if (!a->full_told)
			wal_note(
			    r, NULL,
			    "more than %zu arenas were refused: later ones are not remembered, "
			    "and each rescan of the arena directory counts them again",
			    a->n);
		a->full_told = true;
		return;
	}
	size_t i = drain_ignored_slot(a, pid, ino);
	if (!a->set[i].pid) {
		a->set[i].pid = pid;
		a->set[i].ino = ino;
		a->n++;
	}
}

/* The later process given pid writes its side files (module files,
 * agent.json) into the earlier one's pid_N/ all the same: the disk
 * budget scans that directory again until the pid is free (budget.c
 * wal_budget_scan_proc), so that they count; the newest pid_N/ of pid. */
static void drain_side_watch(struct ada_recorder *r, pid_t pid)
{
	for (size_t i = r->nprocs; i-- > 0;)
		if (r->procs[i]->pid == pid) {
			r->procs[i]->side_watch = true;
			return;
		}
}

/* <pid>.ring of a pid whose process this recording has finished (and
 * whose arena it removed): the kernel gave the pid to a later process.
 * Its directory pid_N/ holds the earlier process's files, so the later
 * one is not recorded: told once per file, and counted (summary line,
 * manifests' shm.pid_reused_arenas, ada status). */
static void drain_pid_reused(struct ada_recorder *r, pid_t pid, ino_t ino)
{
	drain_ignore(r, pid, ino);
	r->pid_reused++;
	drain_side_watch(r, pid);
	drain_refuse(
	    r, WAL_REFUSE_REUSED_AFTER,
	    "ignored the arena of process %d: that pid was reused by a later process after "
	    "the recorded process %d ended; the later process's events are not written "
	    "(a larger kernel.pid_max makes the reuse rarer)",
	    (int)pid, (int)pid);
}

/* <pid>.<start ticks>.ring: a later process given the pid of a process
 * whose <pid>.ring was still there (the recorder had not finished it)
 * made it instead of touching that one (src/ring/env.c). pid_N/ is the
 * earlier process's, so the later one is not recorded: told once per
 * file, and counted with drain_pid_reused()'s. The caller removes the
 * name (drain_remove_named()) or remembers its inode. */
static void drain_reused_while_read(struct ada_recorder *r, pid_t pid)
{
	r->pid_reused++;
	drain_side_watch(r, pid);
	drain_refuse(
	    r, WAL_REFUSE_REUSED_WHILE,
	    "ignored the arena of process %d: that pid was reused by a later process while "
	    "the recorder was still reading the earlier process %d; the later process's "
	    "events are not written (a larger kernel.pid_max makes the reuse rarer)",
	    (int)pid, (int)pid);
}

/* The pid of an arena file name: <pid>.ring (*taken false) or
 * <pid>.<digits>.ring (*taken true); 0 for any other name (a .tmp. file
 * being made, a stranger's). */
static pid_t drain_arena_name(const char *name, bool *taken)
{
	char *end;
	if (*name < '1' || *name > '9')
		return 0;
	long pid = strtol(name, &end, 10);
	if (pid <= 0 || pid > INT32_MAX)
		return 0;
	*taken = false;
	if (!strcmp(end, ".ring"))
		return (pid_t)pid;
	if (end[0] != '.' || end[1] < '0' || end[1] > '9')
		return 0;
	const char *q = end + 1;
	while (*q >= '0' && *q <= '9')
		q++;
	*taken = true;
	return strcmp(q, ".ring") ? 0 : (pid_t)pid;
}

/* A wal_proc for the arena file name of pid (inode ino), its arena
 * opened and checked and its per-slot tables made; room for it in
 * r->procs. NULL when it is not one we record (ignored from now on) or
 * out of memory. */
static struct wal_proc *drain_proc_new(struct ada_recorder *r, const char *name, long pid,
                                       ino_t ino)
{
	struct wal_proc *p = calloc(1, sizeof(*p));
	void *arr = drain_grow(r->procs, &r->capprocs, r->nprocs + 1, sizeof(*r->procs));
	if (!p || !arr) {
		free(p);
		return NULL;
	}
	r->procs = arr;
	p->pid = (pid_t)pid;
	p->pidfd = -1;
	p->dir_fd = -1;
	p->arena_fd = -1;
	p->arch = r->arch; /* drain_arena_origin() checks its arena says so */
	p->opened_ns = wal_now_ns();
	if (asprintf(&p->arena_path, "%s/%s", r->arena_dir, name) < 0 ||
	    asprintf(&p->dir, "%s/pid_%ld", r->session_dir, pid) < 0 ||
	    drain_proc_arena(r, p) < 0) {
		drain_ignore(r, p->pid, ino);
		drain_free_proc(p);
		return NULL;
	}
	p->max_threads = ada_arena_max_threads(p->arena);
	p->ring_events = ada_arena_config_of(p->arena)->index_events;
	p->high_watermark_pct = ada_arena_config_of(p->arena)->high_watermark_pct;
	p->quarantine = json_array();
	p->warnings = json_array();
	if (drain_slot_tables_new(p) < 0 || !p->quarantine || !p->warnings) {
		drain_free_proc(p);
		return NULL;
	}
	wal_wait_notes_admitted(r, p);
	return p;
}

/* A name refused for good (drain_open_arena_ino()) is removed at once,
 * while the program runs, and counted with what the end removes
 * (wal_shm_finish()): a directory flooded with fake names would
 * otherwise cost one unlink per name after the program exited. Only
 * names the recorder never reads, whatever file comes to hold them: a
 * pid-reuse name, an empty file where an arena would be complete, a
 * stranger's. Removing a name its maker still maps takes nothing from
 * it (the end would remove it anyway); one that a same-user process
 * renamed there meanwhile is lost as if that process had removed it
 * itself, which it may as well. */
static void drain_remove_refused(struct ada_recorder *r, const char *name)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", r->arena_dir, name) >= (int)sizeof(path))
		return;
	wal_shm_hold(r, path);
	if (unlink(path) == 0)
		r->shm.leftover++;
}

/* Arenas refused so far, every reason (drain_refuse()). */
static uint64_t drain_refusals(const struct ada_recorder *r)
{
	uint64_t n = 0;
	for (int k = 0; k < WAL_REFUSE_COUNT; k++)
		n += r->admit.refused[k];
	return n;
}

/* A name refused by its form alone, whatever file it holds: a pid-reuse
 * name (<pid>.<digits>.ring, refused and counted as such) or a pid no
 * Linux process can have (quietly). Removed without a look at the file:
 * one system call a name, where a flood would otherwise cost a stat, an
 * unlink and a place in the set of refused inodes. True when handled
 * (removed, or gone already); false when it cannot be removed so (a
 * directory), for the look that refuses and remembers it. */
static bool drain_remove_named(struct ada_recorder *r, const char *name, pid_t pid, bool taken)
{
	char path[PATH_MAX];
	struct stat st;
	if (snprintf(path, sizeof(path), "%s/%s", r->arena_dir, name) >= (int)sizeof(path))
		return false;
	/* A pid-reuse name's file holds its maker's reservation; a fake name
	 * (a flood's empty files) is not opened. */
	if (taken && fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_size > 0)
		wal_shm_hold(r, path);
	if (unlink(path) != 0)
		return errno == ENOENT;
	r->shm.leftover++;
	if (taken)
		drain_reused_while_read(r, pid);
	return true;
}

/* drain_open_arena() with the name's inode when the caller knows it
 * (readdir's d_ino: a rescan of many names costs no stat each), 0 when
 * not. */
static void drain_open_arena_ino(struct ada_recorder *r, const char *name, ino_t known)
{
	bool taken = false;
	long pid = drain_arena_name(name, &taken);
	if (!pid)
		return;
	struct wal_proc *old = drain_find(r, (pid_t)pid);
	if (old && !old->finished && !taken)
		return; /* the file we are reading */
	if (r->o.follow == false && r->main_pid && pid != r->main_pid)
		return;
	if ((taken || pid > WAL_PID_LIMIT) && drain_remove_named(r, name, (pid_t)pid, taken))
		return;
	/* Which file: its inode, never following a link planted under the
	 * name. Gone already (0): nothing to read or to tell. */
	char path[PATH_MAX];
	struct stat st;
	ino_t ino = 0;
	/* d_ino is st_ino on the file systems arenas live on; where it is not
	 * (overlayfs), the set misses and the stat below decides. */
	if (known && drain_ignored(r, (pid_t)pid, known))
		return;
	if (snprintf(path, sizeof(path), "%s/%s", r->arena_dir, name) < (int)sizeof(path) &&
	    fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ino = st.st_ino;
	if (drain_ignored(r, (pid_t)pid, ino))
		return;
	if (taken) {
		if (ino) {
			drain_ignore(r, (pid_t)pid, ino);
			drain_reused_while_read(r, (pid_t)pid);
			drain_remove_refused(r, name);
		}
		return;
	}
	if (old) {
		/* The finished process's own file (its unlink failed) is not news. */
		if (ino && ino != old->arena_ino) {
			drain_pid_reused(r, (pid_t)pid, ino);
			drain_remove_refused(r, name);
		}
		return;
	}
	/* An arena is sized before its rename publishes it (src/ring/env.c):
	 * an empty file of ours under the name is no arena, refused quietly as
	 * ada_arena_open_fd() would, without the open and the ppid walk. */
	if (ino && S_ISREG(st.st_mode) && st.st_size == 0 && st.st_uid == geteuid()) {
		drain_ignore(r, (pid_t)pid, ino);
		drain_remove_refused(r, name);
		return;
	}
	uint64_t refused = drain_refusals(r);
	struct wal_proc *p = drain_proc_new(r, name, pid, ino);
	if (!p) {
		if (drain_refusals(r) != refused) /* refused, not failed */
			drain_remove_refused(r, name);
		return;
	}
	/* The agent may have made it first (agent.json): ours either way. */
	int rc = ada_fs_mkdir(r->session_fd, strrchr(p->dir, '/') + 1, 0, &p->dir_fd);
	if (rc < 0)
		drain_no_pid_dir(r, p, rc);
	struct stat ast;
	if (wal_reaped_take(&r->reaped, p->pid,
	                    fstat(p->arena_fd, &ast) == 0 ? drain_ts_ns(&ast.st_ctim) : INT64_MAX,
	                    &p->wstatus))
		p->reaped = p->our_child = true;
	r->procs[r->nprocs++] = p;
	/* A second process: the program forks, its next children want files
	 * in the pool before any of them has finished. */
	wal_shm_pool_admitted(r, p->arena);
	wal_flight_proc_start(r, p);
	/* Its early manifest waits: most processes of a build or a script
	 * end sooner, and their final manifest is all they need. */
	p->admit_ns = wal_now_ns();
}

/* Test hook (orphan_young): ADA_TEST_NO_EARLY_MANIFEST=1 keeps every
 * process in that window for good, so that a recorder killed under it
 * leaves processes with no manifest (a window too short to hit from
 * outside). Read once, by the drain thread alone. */
static bool drain_no_early_manifest(void)
{
	static int hook = -1;
	if (hook < 0) {
		const char *v = getenv("ADA_TEST_NO_EARLY_MANIFEST");
		hook = v && !strcmp(v, "1");
	}
	return hook;
}

void drain_early_manifest(struct ada_recorder *r, struct wal_proc *p, uint64_t now)
{
	if (p->early_manifest || p->finished || !p->arena ||
	    now < p->admit_ns + WAL_EARLY_MANIFEST_NS || drain_no_early_manifest())
		return;
	p->early_manifest = true;
	WAL_GUARDED(p->arena, wal_manifest_write(r, p, "recording"), {
		wal_manifest_abandon(r);
		drain_arena_lost(r, p, 0);
	});
}

void drain_open_arena(struct ada_recorder *r, const char *name)
{
	drain_open_arena_ino(r, name, 0);
}

/* The arena directory's names, each looked at (drain_open_arena_ino):
 * read through the directory descriptor kept since wal_shm_setup with
 * ada_fs_dirents (a scan per new arena: opendir's path walk and 32 KiB
 * from the heap were most of a scan's own cost with many short
 * processes). A forced stop (SIGTERM, a second SIGINT) cuts a long scan
 * short after WAL_SCAN_STOP_NS: a directory full of names must not hold
 * the end. */
void drain_scan_dir(struct ada_recorder *r)
{
	int fd = r->shm.dir_fd >= 0 ? openat(r->shm.dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
	                            : open(r->arena_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct ada_fs_dirents d;
	uint64_t t0 = wal_now_ns(), scan = wal_reaped_scan_begin(&r->reaped);
	unsigned n = 0;
	ada_fs_dirents_init(&d, fd);
	for (const struct dirent64 *de; (de = ada_fs_dirents_next(&d));) {
		drain_open_arena_ino(r, de->d_name, de->d_type == DT_LNK ? 0 : de->d_ino);
		/* relaxed: a hint, as in drain_nap() */
		if (++n % 256 == 0 && atomic_load_explicit(&r->stop_req, memory_order_relaxed) &&
		    wal_now_ns() - t0 > WAL_SCAN_STOP_NS) {
			close(fd);
			return;
		}
	}
	/* A whole scan: an arena of a pid reaped before it began was admitted
	 * in it, or is none. */
	if (d.err == 0)
		wal_reaped_scanned(&r->reaped, scan);
	close(fd);
}

bool drain_names(struct ada_recorder *r, bool due)
{
	/* The count first, then the directory: a name counted after this
	 * read moves the count again, and the next pass reads it. */
	uint64_t n = r->bell.page ? ada_shm_budget_names(r->bell.page) : r->bell.names_seen;
	bool moved = n != r->bell.names_seen;
	if (!moved && !due)
		return false;
	r->bell.names_seen = n;
	drain_scan_dir(r);
	return moved;
}
