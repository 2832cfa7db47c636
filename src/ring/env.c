/*
 * ada ring: ada_producer_init() and ada_producer_init_from_env() -- how a
 * traced process (the agent, or a program linking ada_producer) finds or
 * creates its arena. The agent passes the values it read from the
 * environment at start-up: the program may clear or change its
 * environment before it forks.
 *
 * Threads: called once at process start (agent init), in a forked child
 * (atfork child handler: only one thread exists there), or after exec (the
 * new image's init). Never from hook context.
 *
 * Files (docs/internals.md): <ADA_ARENA_DIR>/<pid>.ring.tmp.<random> (an
 * unpredictable name, O_EXCL, 0600; fs.h) is created and
 * initialised, then renamed to <pid>.ring, so the drain (which reads the
 * directory when the budget page's count of names moved) only ever sees
 * complete arenas. An existing <pid>.ring with
 * our pid and our start time means this process called exec: the old
 * image's threads are all gone, so its ACTIVE slots become EXITED and
 * exec-orphaned (the drain frees them once empty without asking tgkill,
 * whose answer for the main thread's tid -- now ours -- would be "alive").
 *
 * One with our pid and another start time is an earlier process's whose
 * pid the kernel gave us before the recorder finished it (and removed the
 * file): never touched (its events are the recorder's to read). We make
 * <pid>.<start ticks>.ring instead, which the recorder tells and counts as
 * a reused pid (src/recorder/drain.c); an exec of ours finds it by that name
 * first. Start times come from /proc/self/stat, read here only (never on
 * the hot path), or in a forked child from two readings of the clock the
 * kernel stamps it with, around the fork, when they fall in one tick
 * (env_fork_start_ticks); without /proc (0) the pid alone decides.
 *
 * A forked child (the inherited handle is its parent's) looks for no
 * arena of its own: it has not called exec, so a <pid>.ring there can
 * only be an earlier process's. It publishes its new arena with
 * RENAME_NOREPLACE, under <pid>.<start ticks>.ring when that fails with
 * EEXIST, and keeps its parent's mapping of the budget file and the
 * recorder's identity (issue 32: a fork's start opens nothing it does
 * not need).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "ring_internal.h"

ADA_FORK_PATH static int env_config(const char *txt, struct ada_arena_config *cfg)
{
	if (!txt || !*txt) {
		ada_arena_config_default(cfg);
		return 0;
	}
	return ada_arena_config_parse(txt, strlen(txt), cfg);
}

/* CLOCK_BOOTTIME when this thread last prepared a fork (0: never): a
 * forked child's only thread is a copy of the forking one, so its copy is
 * a time before its own start (ada_producer_fork_prepare). */
static __thread uint64_t env_fork_ns __attribute__((tls_model("initial-exec")));
/* sysconf(_SC_CLK_TCK), asked in the parent (0: not yet): the child then
 * touches no page of sysconf's. Relaxed: every thread stores the same value. */
static _Atomic long env_fork_hz;

ADA_FORK_PATH static uint64_t env_boottime_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ada_producer_fork_prepare(void)
{
	/* The child's own arena takes its consumer entries as they come to
	 * it (ring_consumers_keep); a refusal leaves it to map new ones. */
	struct ada_arena *a = ada_producer_arena();
	if (a)
		ring_consumers_wipe_on_fork(a);
	ring_arena_fork_prepare();
	if (!atomic_load_explicit(&env_fork_hz, memory_order_relaxed))
		atomic_store_explicit(&env_fork_hz, sysconf(_SC_CLK_TCK), memory_order_relaxed);
	env_fork_ns = env_boottime_ns();
}

ADA_FORK_PATH bool ring_start_ticks_between(uint64_t before_ns, uint64_t after_ns, long hz,
                                            uint64_t *ticks)
{
	if (hz <= 0 || 1000000000 % hz != 0 || !before_ns || before_ns > after_ns)
		return false;
	uint64_t unit = 1000000000ull / (uint64_t)hz;
	if (before_ns / unit != after_ns / unit)
		return false;
	*ticks = after_ns / unit;
	return true;
}

/* A forked child's start time without /proc (issue 32: the read was a
 * large part of a subshell's arena set-up): the kernel stamps a new
 * process's start with CLOCK_BOOTTIME inside fork, and /proc/PID/stat
 * shows it in clock ticks, rounded down; the fork's prepare handler read
 * the same clock before and we read it now, after, so when both readings
 * fall in one tick, that tick is the start time. */
ADA_FORK_PATH static bool env_fork_start_ticks(uint64_t *ticks)
{
	uint64_t before = env_fork_ns;
	env_fork_ns = 0;
	long hz = atomic_load_explicit(&env_fork_hz, memory_order_relaxed);
	return before && ring_start_ticks_between(before, env_boottime_ns(), hz, ticks);
}

/* From /proc/self/stat: a function of its own, so that its 1 KiB buffer
 * is no part of env_start_ticks' frame (a forked child's stack pages are
 * its parent's, a copy-on-write fault each it reaches down to). */
__attribute__((noinline)) static uint64_t env_proc_start_ticks(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 ? ada_stat_start_ticks(buf, (size_t)n) : 0;
}

/* Our start time (clock ticks since boot), 0 when /proc cannot tell. */
ADA_FORK_PATH static uint64_t env_start_ticks(bool forked)
{
	uint64_t ticks;
	if (forked && env_fork_start_ticks(&ticks))
		return ticks;
	return env_proc_start_ticks();
}

/* The arena is this process's own (we called exec): our pid and, when
 * both are known, our start time. */
static bool env_ours(const struct ada_arena *a, uint32_t start)
{
	uint32_t theirs = ada_arena_start_time(a);
	return ada_arena_pid(a) == (int32_t)getpid() && (!start || !theirs || theirs == start);
}

/* Opens path when it is this process's own arena: 0; -ENOENT when there
 * is none; -ESTALE (closed again, untouched) when it is another
 * process's; another -errno when it is not an arena. */
static int env_open_ours(const char *path, uint32_t start, struct ada_arena **out)
{
	struct ada_arena *a = NULL;
	int err = ada_arena_open(path, &a);
	if (err)
		return err;
	if (!env_ours(a, start)) {
		ada_arena_close(a);
		return -ESTALE;
	}
	*out = a;
	return 0;
}

/* After exec: every slot the old image held is orphaned. */
static int env_adopt_exec(struct ada_arena *a)
{
	/* The old image's slots: the count it kept is ours to trust. */
	uint32_t used = ring_slots_used(a);
	for (uint32_t s = 0; s < used; s++) {
		struct ada_slot_desc *d = &a->desc[s];
		atomic_store_explicit(&d->exec_orphaned, 1, memory_order_relaxed);
		/* Relaxed: page tables do not survive exec; the new image's
		 * producers map the slot's pages again (producer_populate). */
		atomic_fetch_and_explicit(&d->populated, ~RING_POP_MAPPED, memory_order_relaxed);
		/* Release: publishes exec_orphaned with EXITED; pairs with the
		 * acquire in slot_state() (slots.c). A slot caught half-claimed
		 * by a thread that exec killed is orphaned too; a FREE one gets
		 * exec_orphaned reset when it is next claimed. */
		uint32_t expect = ADA_SLOT_ACTIVE;
		if (!atomic_compare_exchange_strong_explicit(&d->state, &expect, ADA_SLOT_EXITED,
		                                             memory_order_release,
		                                             memory_order_relaxed) &&
		    expect == RING_SLOT_CLAIMING)
			atomic_compare_exchange_strong_explicit(&d->state, &expect, ADA_SLOT_EXITED,
			                                        memory_order_release,
			                                        memory_order_relaxed);
	}
	atomic_fetch_or_explicit(&a->ctl->flags, ADA_ARENA_F_EXEC_REOPENED, memory_order_relaxed);
	ring_arena_lock(a, NULL); /* mlock does not survive exec */
	return 0;
}

/* What a forked child takes over from its parent's handle of the same
 * arena directory (the same recording): the budget file's mapping and
 * the recorder's identity, so that it opens neither file again. */
struct env_inherit {
	bool forked;
	struct ada_shm_budget *budget;
	int32_t rec_pid;
	uint64_t rec_start;
};

/* Publishes the arena at tmp under ring; a forked child (inh->forked)
 * never replaces a file there (RENAME_NOREPLACE): it cannot be its own
 * (it has not called exec), only an earlier process's of the same pid
 * that the recorder has not finished, so it takes the reused-pid name
 * mine instead (*reused). -EINVAL: the file system cannot say. */
ADA_FORK_PATH static int env_publish(const char *tmp, const char *ring, const char *mine,
                                     bool forked, bool *reused)
{
	if (!forked)
		return rename(tmp, ring) == 0 ? 0 : -errno;
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, ring, RENAME_NOREPLACE) == 0)
		return 0;
	int err = errno;
	if (err == EINVAL || err == ENOSYS) /* no RENAME_NOREPLACE here: look first */
		err = faccessat(AT_FDCWD, ring, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ? EEXIST
		      : rename(tmp, ring) == 0                                  ? 0
		                                                                : errno;
	if (err != EEXIST || !mine)
		return -err;
	*reused = true;
	return rename(tmp, mine) == 0 ? 0 : -errno;
}

/* Creates and publishes the arena; budget (NULL: none) is asked again
 * once the name is published: a recording that ended meanwhile
 * (ada_shm_budget_end) may have cleared the directory already, so the
 * name is removed again (-ESRCH) rather than left for no one to remove. */
ADA_FORK_PATH static int env_create(const char *tmp, const char *ring, const char *mine,
                                    const struct ada_arena_config *cfg, uint32_t flags,
                                    uint32_t start, bool forked,
                                    const struct ada_shm_budget *budget, bool *reused,
                                    struct ada_arena **out)
{
	int err = ring_arena_create(tmp, cfg, start, out, NULL); /* O_EXCL */
	if (err)
		return err;
	if (flags) /* before the name is published: the drain sees them */
		ada_arena_set_flags(*out, flags);
	err = env_publish(tmp, ring, mine, forked, reused);
	if (!err && ring_budget_ended(budget)) {
		unlink(*reused && mine ? mine : ring);
		err = -ESRCH;
	}
	if (err) {
		ada_arena_close(*out);
		*out = NULL;
		unlink(tmp);
	}
	return err;
}

/* The last ada_producer_init() of this process was refused by the
 * recording itself (its shared-memory ceiling, or its end), which the
 * recorder counts and tells: not a failure to count or print here. Only
 * the reservation step sets it: a file system's own -EDQUOT (a quota on
 * the arena directory) comes after it and is a failure like any other.
 * Written and read only by the thread that sets the process up. */
static bool env_refused;

bool ada_producer_refused(void)
{
	return env_refused;
}

/* Test hook (test_ring_env fs_quota_counted): ADA_TEST_ARENA_ERRNO=N makes
 * the step after the reservation, where the file is made, fail with -N,
 * as a file system's quota (EDQUOT) would; no quota mount is needed. */
ADA_FORK_PATH static int env_test_errno(void)
{
	const char *v = secure_getenv("ADA_TEST_ARENA_ERRNO");
	int n = v ? atoi(v) : 0;
	return n > 0 && n < 4096 ? -n : 0;
}

/* A new arena counts against the recording's shared-memory ceiling
 * (shm_budget.c): over it, smaller detail rings (the arena says so,
 * ADA_ARENA_F_DETAIL_REDUCED), or, when not even those fit, -EDQUOT and
 * the process runs untraced (env_refused). Its spill slots count one by
 * one as threads first claim them. -ESRCH: the recording ended, untraced
 * too. Any error after the reservation is the file system's. */
ADA_FORK_PATH static int env_create_reserved(const char *dir, const char *ring, const char *mine,
                                             const struct ada_arena_config *cfg, uint32_t start,
                                             const struct env_inherit *inh, bool *reused,
                                             struct ada_arena **out)
{
	char tmp[ring_path_cap(strlen(ring) + sizeof(".tmp.") + 16)]; /* ada_fs_tmp_name */
	if (ada_fs_tmp_name(ring, tmp, sizeof(tmp)))
		return -ENAMETOOLONG;
	/* No budget file (a recorder without one, a program run by hand): no
	 * ceiling. */
	struct ada_shm_budget *b = inh->budget;
	if (!b && ada_shm_budget_open_dir(dir, &b) != 0)
		b = NULL;
	struct ada_arena_config fit = *cfg;
	uint64_t size;
	int err = ada_shm_budget_take_arena(b, &fit, &size);
	uint32_t flags = fit.detail_bytes != cfg->detail_bytes ? ADA_ARENA_F_DETAIL_REDUCED : 0;
	env_refused = err == -EDQUOT || err == -ESRCH;
	if (!err) {
		err = env_test_errno();
		if (!err)
			err = env_create(tmp, ring, mine, &fit, flags, start, inh->forked, b,
			                 reused, out);
		env_refused = err == -ESRCH; /* the recording ended meanwhile */
		if (err && b)                /* not recorded: failed (env_count_failed) or ended */
			ada_shm_budget_untake(b, size, flags != 0);
	}
	if (b != inh->budget)
		ada_shm_budget_close(b);
	return err;
}

/* In a forked child the inherited arena is the parent's: never write it
 * (its budget mapping and recorder identity are kept in *inh). */
ADA_FORK_PATH static bool env_forget_parent(struct env_inherit *inh)
{
	struct ada_arena *old = ada_producer_arena();
	if (!old)
		return false;
	if (ada_arena_pid(old) == (int32_t)getpid())
		return true; /* already set up in this process */
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	inh->forked = true;
	inh->budget = old->budget;
	ring_budget_map(inh->budget);
	inh->rec_pid = old->rec_pid;
	inh->rec_start = old->rec_start;
	old->budget = NULL; /* ours now */
	ring_consumers_keep(old);
	ada_arena_close(old);
	return false;
}

/* A forked child's arena: always a new one (see env_publish). */
ADA_FORK_PATH static int env_open_forked(const char *dir, const char *ring, const char *mine,
                                         const struct ada_arena_config *cfg, uint32_t start,
                                         const struct env_inherit *inh, bool *reused,
                                         struct ada_arena **out)
{
	int err = env_create_reserved(dir, ring, start ? mine : NULL, cfg, start, inh, reused, out);
	if (err == -EEXIST)
		err = -EPROTO; /* no start time to tell ours from a stale file by */
	return err;
}

/* Any other start (the first, or after exec): ours to adopt when the
 * file is this process's (we called exec), else a new one. */
static int env_open_started(const char *dir, const char *ring, const char *mine,
                            const struct ada_arena_config *cfg, uint32_t start,
                            const struct env_inherit *inh, bool *reused, struct ada_arena **out)
{
	/* Ours under the reused-pid name (an exec after we made it) first. */
	int err = start ? env_open_ours(mine, start, out) : -ENOENT;
	*reused = err == 0;
	if (err == -ENOENT) {
		err = env_open_ours(ring, start, out);
		if (err == -ENOENT)
			err = env_create_reserved(dir, ring, NULL, cfg, start, inh, reused, out);
		else if (err == -ESTALE && start) { /* an earlier process's: not ours to touch */
			err = env_create_reserved(dir, mine, NULL, cfg, start, inh, reused, out);
			*reused = true;
		} else if (err == 0)
			err = env_adopt_exec(*out);
	} else if (err == 0) {
		err = env_adopt_exec(*out);
	}
	if (err == -ESTALE)
		err = -EPROTO; /* no start time to tell ours from a stale file by */
	return err;
}

/* The name a's file was published under and its inode, for the wait for
 * ring space (producer.c): gone already (a recorder that refused it at
 * once) is ino 0. Unknown (no memory, another error) leaves it unasked. */
ADA_FORK_PATH static void env_note_published(struct ada_arena *a, const char *path)
{
	struct stat st;
	/* The inode its maker saw (a pool file's fstat): the rename kept it. */
	if (a->file_ino)
		a->pub_ino = a->file_ino;
	else if (stat(path, &st) == 0)
		a->pub_ino = (uint64_t)st.st_ino;
	else if (errno != ENOENT)
		return;
	a->pub_path = strdup(path);
}

/* No arena for this process (err), for another reason than the ceiling
 * (counted where it refused) or the recording's end (nothing to record
 * then; both env_refused): counted in the recording's budget page, with
 * its reason, so the recorder tells it (manifests, `ada status`, the
 * summary line) and not only this process's stderr. A file system's
 * -EDQUOT (a quota) is such a failure: only the reservation's is the
 * ceiling's. A forked child uses its parent's mapping; another process
 * maps the page for the count (none there: no recording to tell). */
static void env_count_failed(const char *dir, struct ada_shm_budget *inherited, int err)
{
	if (env_refused)
		return;
	struct ada_shm_budget *b = inherited;
	if (!b && ada_shm_budget_open_dir(dir, &b) != 0)
		return;
	ada_shm_budget_failed(b, err);
	if (b != inherited)
		ada_shm_budget_close(b);
}

int ada_producer_init_from_env(void)
{
	/* secure_getenv: a set-uid program must not take its arena from the
	 * environment of whoever started it. */
	return ada_producer_init(secure_getenv("ADA_ARENA_DIR"), secure_getenv("ADA_RING_CONFIG"));
}

/* v in decimal at out (room for 20 digits); the digits written. */
ADA_FORK_PATH static size_t env_put_dec(char *out, uint64_t v)
{
	char d[20];
	size_t n = 0;
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(d));
	for (size_t i = 0; i < n; i++)
		out[i] = d[n - 1 - i];
	return n;
}

/* dir/<pid>.ring, or dir/<pid>.<ticks>.ring with ticks, into out; false
 * when it does not fit. By hand, no snprintf: its code, tables and stack
 * are pages a forked child would fault in for two names. */
ADA_FORK_PATH static bool env_ring_name(char *out, size_t cap, const char *dir, uint64_t pid,
                                        const uint64_t *ticks)
{
	size_t n = strlen(dir);
	if (n + 1 + 20 + 1 + 20 + sizeof(".ring") > cap)
		return false;
	memcpy(out, dir, n);
	out[n++] = '/';
	n += env_put_dec(out + n, pid);
	if (ticks) {
		out[n++] = '.';
		n += env_put_dec(out + n, *ticks);
	}
	memcpy(out + n, ".ring", sizeof(".ring"));
	return true;
}

ADA_FORK_PATH int ada_producer_init(const char *dir, const char *ring_config)
{
	env_refused = false;
	if (!dir || !*dir)
		return -ENOENT;
	struct ada_arena_config cfg;
	struct env_inherit inh = {0};
	if (env_forget_parent(&inh))
		return 0;
	if (env_config(ring_config, &cfg) != 0) {
		ring_consumers_drop_spare();
		env_count_failed(dir, inh.budget, -EINVAL);
		ada_shm_budget_close(inh.budget);
		return -EINVAL;
	}
	size_t cap =
	    ring_path_cap(strlen(dir) + 1 + 20 + 1 + 20 + sizeof(".ring")); /* env_ring_name */
	char ring[cap], mine[cap];
	int pid = (int)getpid();
	uint64_t ticks = env_start_ticks(inh.forked);
	uint32_t start = (uint32_t)ticks;
	int err = 0;
	if (!env_ring_name(ring, sizeof(ring), dir, (uint64_t)pid, NULL) ||
	    !env_ring_name(mine, sizeof(mine), dir, (uint64_t)pid, &ticks))
		err = -ENAMETOOLONG;
	struct ada_arena *a = NULL;
	bool reused = false;
	if (!err && inh.forked)
		err = env_open_forked(dir, ring, mine, &cfg, start, &inh, &reused, &a);
	if (!err && !inh.forked)
		err = env_open_started(dir, ring, mine, &cfg, start, &inh, &reused, &a);
	ring_consumers_drop_spare(); /* taken by our arena, or to no use */
	if (err) {
		ada_arena_close(a);
		env_count_failed(dir, inh.budget, err);
		ada_shm_budget_close(inh.budget);
		return err;
	}
	a->pid_reused = reused;
	env_note_published(a, reused ? mine : ring);
	if (inh.forked) {
		a->budget = inh.budget; /* the same file: no need to open it again */
		a->rec_pid = inh.rec_pid;
		a->rec_start = inh.rec_start;
	} else {
		/* For the spill slots' reservations and the drain's doorbell
		 * (neither without a budget file). */
		if (ada_shm_budget_open_dir(dir, &a->budget) != 0)
			a->budget = NULL;
		ring_budget_recorder(dir, &a->rec_pid, &a->rec_start);
	}
	ada_producer_set_arena(a);
	/* The name is published (rename): counted for the drain, which reads
	 * the directory then; a drain asleep comes now, not at its timer. */
	ada_shm_budget_named(a->budget);
	return 0;
}
