/*
 * ada ring: the recording's shared-memory ceiling -- the sum of the sizes
 * of the arenas that exist at once in the arena directory.
 *
 * The recorder creates <arena dir>/shm.budget (one page: the ceiling and
 * the counters below) before it starts the program. A process about to
 * create its arena reserves the arena's full size there first; when the
 * reservation would pass the ceiling it is refused and counted, and the
 * process runs untraced (the recorder tells: stderr, manifests, `ada
 * status`). The recorder gives the bytes back when it removes an arena.
 * Sizes are the arenas' full sizes (ada_arena_size_for), not the pages
 * touched so far: an arena can grow to that as threads claim slots, and
 * the ceiling must hold whatever the program does.
 *
 * Threads/processes: any number of traced processes reserve concurrently
 * (a CAS loop on `reserved`); the recorder's drain releases; `ada status`
 * reads. Nothing here is hook context. The file is written by the target
 * too, so a reader never trusts it for memory safety: it is one fixed-size
 * page whose magic is checked, and every count is only a number to report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring_internal.h"

#define SHM_BUDGET_MAGIC 0x7465676475626873ull /* "shbudget" */
#define SHM_BUDGET_SIZE 4096u
#define SHM_WAIT_MS 1000u
#define SHM_BELL_AWAKE 0u
#define SHM_BELL_ASLEEP 1u
#define SHM_BELL_RUNG 2u

struct ada_shm_budget {
	uint64_t magic;
	uint64_t ceiling; /* bytes; 0 = none (counted all the same) */
	_Atomic uint64_t reserved;
	_Atomic uint64_t peak;
	_Atomic uint64_t refused_procs;
	_Atomic uint64_t refused_bytes;
	_Atomic uint64_t arenas;       /* reserved and not yet released */
	_Atomic uint64_t waited_procs; /* had to wait for room, then got it */
	/* The recorder that made the file (its pid and start ticks), which
	 * producers ask whether it is still there before they stop waiting
	 * for a drain that stands still (producer.c). 0: unknown (an older
	 * recorder). */
	int32_t recorder_pid;
	/* The recorder set it as its recording ended (ada_shm_budget_end):
	 * no process creates an arena in the directory from then on. */
	_Atomic uint32_t ended;
	uint64_t recorder_start;
	/* Arena names renamed into the directory so far
	 * (ada_shm_budget_named): the drain reads the directory when it
	 * moved. The drain used to watch the directory with inotify, whose
	 * descriptor's close waits for an SRCU grace period of the kernel's
	 * once its watch is gone: at every recording's end. */
	_Atomic uint64_t named;
	/* Processes given smaller detail rings than the recording's (the
	 * whole arena did not fit under the ceiling), the smallest ring
	 * given, and, for the sentences that tell why (the *_why functions
	 * below), what the last one asked (its whole arena) and the room
	 * there was; likewise what the last refused process asked (its
	 * smallest arena) and the room. Numbers to report only. */
	_Atomic uint64_t reduced_procs, reduced_detail_min, reduced_need, reduced_room;
	_Atomic uint64_t refused_need, refused_room;
	/* The recorder derived the ceiling from the arena file system's free
	 * space (ada_shm_budget_set_from_fs): the sentences say /dev/shm. */
	uint32_t ceiling_from_fs;
	/* Processes that could not make their arena for another reason than
	 * the ceiling (ada_shm_budget_failed), and the first one's errno. */
	_Atomic uint32_t failed_errno;
	_Atomic uint64_t failed_procs;
	/* The drain's doorbell (ada_shm_budget_bell_*): SHM_BELL_AWAKE, or
	 * SHM_BELL_ASLEEP while the drain waits on it (a futex), or
	 * SHM_BELL_RUNG once a producer took it from ASLEEP and woke it. One
	 * word for every arena of the recording: the drain can wait on one
	 * futex only, and a new process rings before the drain knows its
	 * arena. Its own line: producers read it at each chunk of events. */
	alignas(ADA_CACHELINE) _Atomic uint32_t bell;
};

_Static_assert(sizeof(struct ada_shm_budget) <= SHM_BUDGET_SIZE, "one page");

static int shm_budget_map(int fd, struct ada_shm_budget **out)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size != SHM_BUDGET_SIZE)
		return -EPROTO;
	void *p = mmap(NULL, SHM_BUDGET_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	struct ada_shm_budget *b = p;
	if (b->magic != SHM_BUDGET_MAGIC) {
		munmap(p, SHM_BUDGET_SIZE);
		return -EPROTO;
	}
	*out = b;
	return 0;
}

int ada_shm_budget_create(int dirfd, uint64_t ceiling, struct ada_shm_budget **out)
{
	int fd = openat(dirfd, ADA_SHM_BUDGET_NAME,
	                O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int err = ftruncate(fd, SHM_BUDGET_SIZE) == 0 ? 0 : -errno;
	void *p = err ? MAP_FAILED
	              : mmap(NULL, SHM_BUDGET_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!err && p == MAP_FAILED)
		err = -errno;
	close(fd);
	if (err) {
		unlinkat(dirfd, ADA_SHM_BUDGET_NAME, 0);
		return err;
	}
	struct ada_shm_budget *b = p;
	b->ceiling = ceiling;
	b->recorder_pid = (int32_t)getpid();
	char st[1024];
	int sfd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = sfd >= 0 ? read(sfd, st, sizeof(st)) : -1;
	if (sfd >= 0)
		close(sfd);
	b->recorder_start = n > 0 ? ada_stat_start_ticks(st, (size_t)n) : 0;
	b->magic = SHM_BUDGET_MAGIC;
	*out = b;
	return 0;
}

int ada_shm_budget_open(const char *path, struct ada_shm_budget **out)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = shm_budget_map(fd, out);
	close(fd);
	return err;
}

ADA_FORK_PATH void ring_budget_map(struct ada_shm_budget *b)
{
#ifdef MADV_POPULATE_WRITE
	if (b)
		madvise(b, SHM_BUDGET_SIZE, MADV_POPULATE_WRITE); /* else the first touch faults */
#else
	(void)b;
#endif
}

ADA_FORK_PATH void ada_shm_budget_close(struct ada_shm_budget *b)
{
	if (b)
		munmap(b, SHM_BUDGET_SIZE);
}

static void shm_budget_peak(struct ada_shm_budget *b, uint64_t now)
{
	uint64_t p = atomic_load_explicit(&b->peak, memory_order_relaxed);
	while (p < now && !atomic_compare_exchange_weak_explicit(
	                      &b->peak, &p, now, memory_order_relaxed, memory_order_relaxed))
		;
}

/* Room under the ceiling now (0: none left, or no ceiling). */
static uint64_t shm_budget_room(const struct ada_shm_budget *b)
{
	uint64_t cur = atomic_load_explicit(&b->reserved, memory_order_relaxed);
	return b->ceiling > cur ? b->ceiling - cur : 0;
}

static void shm_budget_refused(struct ada_shm_budget *b, uint64_t bytes)
{
	atomic_fetch_add_explicit(&b->refused_procs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->refused_bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&b->refused_need, bytes, memory_order_relaxed);
	atomic_store_explicit(&b->refused_room, shm_budget_room(b), memory_order_relaxed);
}

/* Counters only: nothing else is published with them (relaxed). */
static int shm_budget_add(struct ada_shm_budget *b, uint64_t bytes)
{
	uint64_t cur = atomic_load_explicit(&b->reserved, memory_order_relaxed);
	for (;;) {
		if (b->ceiling && (bytes > b->ceiling || cur > b->ceiling - bytes))
			return -EDQUOT;
		if (atomic_compare_exchange_weak_explicit(&b->reserved, &cur, cur + bytes,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed))
			break;
	}
	shm_budget_peak(b, cur + bytes);
	return 0;
}

int ada_shm_budget_grow(struct ada_shm_budget *b, uint64_t bytes)
{
	return shm_budget_add(b, bytes);
}

static int shm_budget_try(struct ada_shm_budget *b, uint64_t bytes)
{
	int err = shm_budget_add(b, bytes);
	if (err == 0)
		atomic_fetch_add_explicit(&b->arenas, 1, memory_order_relaxed);
	return err;
}

int ada_shm_budget_take(struct ada_shm_budget *b, uint64_t bytes)
{
	int err = shm_budget_try(b, bytes);
	if (err)
		shm_budget_refused(b, bytes);
	return err;
}

void ada_shm_budget_shrink(struct ada_shm_budget *b, uint64_t bytes)
{
	uint64_t cur = atomic_load_explicit(&b->reserved, memory_order_relaxed);
	/* Never below zero, whatever a target wrote into the page. */
	while (!atomic_compare_exchange_weak_explicit(&b->reserved, &cur,
	                                              cur > bytes ? cur - bytes : 0,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

void ada_shm_budget_release(struct ada_shm_budget *b, uint64_t bytes)
{
	ada_shm_budget_shrink(b, bytes);
	uint64_t n = atomic_load_explicit(&b->arenas, memory_order_relaxed);
	while (n && !atomic_compare_exchange_weak_explicit(
	                &b->arenas, &n, n - 1, memory_order_relaxed, memory_order_relaxed))
		;
}

ADA_FORK_PATH void ada_shm_budget_untake(struct ada_shm_budget *b, uint64_t bytes, bool reduced)
{
	ada_shm_budget_release(b, bytes);
	uint64_t n = atomic_load_explicit(&b->reduced_procs, memory_order_relaxed);
	/* Never below zero, whatever a target wrote into the page. */
	while (reduced && n &&
	       !atomic_compare_exchange_weak_explicit(&b->reduced_procs, &n, n - 1,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

void ada_shm_budget_read(const struct ada_shm_budget *b, struct ada_shm_budget_view *v)
{
	v->ceiling = b->ceiling;
	v->reserved = atomic_load_explicit(&b->reserved, memory_order_relaxed);
	v->peak = atomic_load_explicit(&b->peak, memory_order_relaxed);
	v->refused_procs = atomic_load_explicit(&b->refused_procs, memory_order_relaxed);
	v->refused_bytes = atomic_load_explicit(&b->refused_bytes, memory_order_relaxed);
	v->arenas = atomic_load_explicit(&b->arenas, memory_order_relaxed);
	v->waited_procs = atomic_load_explicit(&b->waited_procs, memory_order_relaxed);
	v->reduced_procs = atomic_load_explicit(&b->reduced_procs, memory_order_relaxed);
	v->reduced_detail_min = atomic_load_explicit(&b->reduced_detail_min, memory_order_relaxed);
	v->reduced_need = atomic_load_explicit(&b->reduced_need, memory_order_relaxed);
	v->reduced_room = atomic_load_explicit(&b->reduced_room, memory_order_relaxed);
	v->refused_need = atomic_load_explicit(&b->refused_need, memory_order_relaxed);
	v->refused_room = atomic_load_explicit(&b->refused_room, memory_order_relaxed);
	v->ceiling_from_fs = b->ceiling_from_fs != 0;
	/* Pairs with the release fetch_add in ada_shm_budget_failed(): a count
	 * seen comes with the first one's errno. */
	v->failed_procs = atomic_load_explicit(&b->failed_procs, memory_order_acquire);
	v->failed_errno = atomic_load_explicit(&b->failed_errno, memory_order_relaxed);
}

void ada_shm_budget_failed(struct ada_shm_budget *b, int err)
{
	if (!b)
		return;
	uint32_t none = 0;
	atomic_compare_exchange_strong_explicit(&b->failed_errno, &none, (uint32_t)-err,
	                                        memory_order_relaxed, memory_order_relaxed);
	/* Pairs with the acquire load in ada_shm_budget_read(): the errno
	 * first, so a reader that sees the count sees a reason. */
	atomic_fetch_add_explicit(&b->failed_procs, 1, memory_order_release);
}

void ada_shm_budget_set_from_fs(struct ada_shm_budget *b)
{
	b->ceiling_from_fs = 1;
}

/* The budget size of cfg's arena with the smallest detail rings
 * shm_budget_try_smaller() would give it. */
ADA_FORK_PATH static uint64_t shm_budget_smallest(const struct ada_arena_config *cfg)
{
	struct ada_arena_config c = *cfg;
	if (c.detail_bytes > ADA_DETAIL_MIN_BYTES)
		c.detail_bytes = ADA_DETAIL_MIN_BYTES;
	return ada_arena_budget_size_for(&c);
}

/* The arena of cfg with its detail rings halved until it fits under the
 * ceiling now, down to ADA_DETAIL_MIN_BYTES: 0 with cfg->detail_bytes
 * and *bytes set to what was reserved, or -EDQUOT (nothing taken). The
 * index rings and the slots are never cut: the index lane records every
 * call; the detail lane's windows are best effort (a smaller ring holds a
 * shorter pre-roll). */
ADA_FORK_PATH static int shm_budget_try_smaller(struct ada_shm_budget *b,
                                                struct ada_arena_config *cfg, uint64_t *bytes)
{
	struct ada_arena_config c = *cfg;
	uint64_t room = shm_budget_room(b);
	while (c.detail_bytes / 2 >= ADA_DETAIL_MIN_BYTES) {
		c.detail_bytes /= 2;
		uint64_t size = ada_arena_budget_size_for(&c);
		if (size > room)
			continue; /* not worth a try: smaller still */
		if (shm_budget_try(b, size) != 0)
			continue; /* another process took the room meanwhile */
		atomic_fetch_add_explicit(&b->reduced_procs, 1, memory_order_relaxed);
		atomic_store_explicit(&b->reduced_need, *bytes, memory_order_relaxed);
		atomic_store_explicit(&b->reduced_room, room, memory_order_relaxed);
		uint64_t m = atomic_load_explicit(&b->reduced_detail_min, memory_order_relaxed);
		while ((m == 0 || c.detail_bytes < m) &&
		       !atomic_compare_exchange_weak_explicit(&b->reduced_detail_min, &m,
		                                              c.detail_bytes, memory_order_relaxed,
		                                              memory_order_relaxed))
			;
		*cfg = c;
		*bytes = size;
		return 0;
	}
	return -EDQUOT;
}

/* Over the ceiling, a new process takes smaller detail rings at once
 * (shm_budget_try_smaller: a process recorded, its index lane whole, and
 * no delay at its start); when not even the smallest fits, it waits (1 ms
 * steps, SHM_WAIT_MS at most) for the drain to remove the arenas of
 * processes that ended -- in a fork storm they end faster than the drain
 * finalizes them -- and is refused only then. All three are counted. */
static int shm_budget_take_waiting(struct ada_shm_budget *b, struct ada_arena_config *cfg,
                                   uint64_t *bytes)
{
	if (ring_budget_ended(b))
		return -ESRCH;
	uint64_t full = *bytes;
	for (unsigned ms = 0;; ms++) {
		*bytes = full;
		if (shm_budget_try(b, full) == 0 || shm_budget_try_smaller(b, cfg, bytes) == 0) {
			if (ms)
				atomic_fetch_add_explicit(&b->waited_procs, 1,
				                          memory_order_relaxed);
			return 0;
		}
		if (ms >= SHM_WAIT_MS || shm_budget_smallest(cfg) > b->ceiling)
			break;
		/* The drain frees room by removing ended processes' arenas:
		 * a drain asleep must come to it. */
		ada_shm_budget_ring(b);
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	shm_budget_refused(b, shm_budget_smallest(cfg));
	*bytes = full;
	return -EDQUOT;
}

static int shm_budget_path(const char *dir, char *path, size_t cap)
{
	int n = snprintf(path, cap, "%s/%s", dir, ADA_SHM_BUDGET_NAME);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int ada_shm_budget_open_dir(const char *dir, struct ada_shm_budget **out)
{
	char path[PATH_MAX];
	if (shm_budget_path(dir, path, sizeof(path)) != 0)
		return -ENAMETOOLONG;
	return ada_shm_budget_open(path, out);
}

ADA_FORK_PATH int ada_shm_budget_take_arena(struct ada_shm_budget *b, struct ada_arena_config *cfg,
                                            uint64_t *bytes)
{
	*bytes = ada_arena_budget_size_for(cfg);
	return b ? shm_budget_take_waiting(b, cfg, bytes) : 0;
}

void ada_shm_budget_end(struct ada_shm_budget *b)
{
	/* seq_cst, then the fence: the store is visible before the recorder
	 * lists the directory to clear it; pairs with the fence and the load
	 * in ring_budget_ended() after a producer published its arena name. */
	atomic_store_explicit(&b->ended, 1, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

ADA_FORK_PATH bool ring_budget_ended(const struct ada_shm_budget *b)
{
	/* Pairs with ada_shm_budget_end(): a name published before this load
	 * is seen by the recorder's clearing, or this load sees the end. */
	atomic_thread_fence(memory_order_seq_cst);
	return b && atomic_load_explicit(&b->ended, memory_order_seq_cst) != 0;
}

void ring_budget_recorder(const char *dir, int32_t *pid, uint64_t *start)
{
	struct ada_shm_budget *b = NULL;
	*pid = 0;
	*start = 0;
	if (ada_shm_budget_open_dir(dir, &b) != 0)
		return;
	*pid = b->recorder_pid;
	*start = b->recorder_start;
	ada_shm_budget_close(b);
}

int ring_budget_retire(struct ada_shm_budget *b)
{
	if (!b)
		return 0;
	void *p = mmap(b, SHM_BUDGET_SIZE, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? -errno : 0;
}

/* ---- the drain's doorbell ----
 * The drain sleeps while every ring is idle instead of polling; a
 * producer that has work for it wakes it from its cold path only (a
 * chunk of events, a claim, a full ring, a thread's or a process's end,
 * a new arena). The lost wake-up is closed as in Dekker's: the drain
 * stores ASLEEP, fences, then looks at every ring once more before it
 * waits; a producer publishes (head, state, a name), fences, then reads
 * the bell. One of the two sees the other's store. The word is the
 * target's to write too: a wait is bounded by its timeout, and a wake
 * that finds nothing is the drain's to count and pace (drain.c). */

ADA_FORK_PATH void ada_shm_budget_ring(struct ada_shm_budget *b)
{
	if (!b)
		return;
	/* Orders what the caller published (a head, a slot state, a process
	 * state, an arena's name) before the bell's load; pairs with the
	 * fence in ada_shm_budget_bell_arm(). */
	atomic_thread_fence(memory_order_seq_cst);
	uint32_t v = atomic_load_explicit(&b->bell, memory_order_relaxed);
	if (v != SHM_BELL_ASLEEP)
		return; /* awake, or another ringer was first: no syscall */
	/* Relaxed: the fence above ordered the caller's stores; only one
	 * ringer wins, so a sleep costs one wake however many ring. */
	if (!atomic_compare_exchange_strong_explicit(&b->bell, &v, SHM_BELL_RUNG,
	                                             memory_order_relaxed, memory_order_relaxed))
		return;
	int saved = errno; /* hook context: the program's errno is kept */
	syscall(SYS_futex, &b->bell, FUTEX_WAKE, 1, NULL, NULL, 0);
	errno = saved;
}

ADA_FORK_PATH void ada_shm_budget_named(struct ada_shm_budget *b)
{
	if (!b)
		return;
	/* Release: after the caller's rename (a system call); pairs with the
	 * acquire load in ada_shm_budget_names(), after which the drain reads
	 * the directory. The ring's fence orders it before the bell's load. */
	atomic_fetch_add_explicit(&b->named, 1, memory_order_release);
	ada_shm_budget_ring(b);
}

uint64_t ada_shm_budget_names(const struct ada_shm_budget *b)
{
	/* Pairs with the release add in ada_shm_budget_named(): a name
	 * counted is in the directory the caller reads next. */
	return atomic_load_explicit(&b->named, memory_order_acquire);
}

void ada_shm_budget_bell_arm(struct ada_shm_budget *b)
{
	/* Relaxed: the fence below orders it; a ringer's CAS is its partner. */
	atomic_store_explicit(&b->bell, SHM_BELL_ASLEEP, memory_order_relaxed);
	/* Orders the store above before the drain's last look at the rings;
	 * pairs with the fence in ada_shm_budget_ring(). */
	atomic_thread_fence(memory_order_seq_cst);
}

/* The bell back to AWAKE; whether a producer had rung it. */
static bool shm_bell_take(struct ada_shm_budget *b)
{
	/* Relaxed: the rings are read again after this, each with its own
	 * acquire (head, state); the bell only says when to look. */
	return atomic_exchange_explicit(&b->bell, SHM_BELL_AWAKE, memory_order_relaxed) !=
	       SHM_BELL_ASLEEP;
}

bool ada_shm_budget_bell_disarm(struct ada_shm_budget *b)
{
	return shm_bell_take(b);
}

int ada_shm_budget_bell_wait(struct ada_shm_budget *b, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
	                      .tv_nsec = (long)(ns % 1000000000u)};
	/* A shared futex (the page is every process's): returns at once when
	 * the word is no longer ASLEEP, at a wake, a signal or the timeout. */
	long rc = syscall(SYS_futex, &b->bell, FUTEX_WAIT, SHM_BELL_ASLEEP, &ts, NULL, 0);
	int err = rc == 0 || errno == EAGAIN || errno == EINTR || errno == ETIMEDOUT ? 0 : -errno;
	bool rung = shm_bell_take(b);
	return err ? err : rung;
}

/* ---- why, in one sentence (the summary, the manifests, `ada status`) ---- */

static double shm_mib(uint64_t bytes)
{
	return (double)bytes / 1048576.0;
}

/* "the shared-memory ceiling of C MiB (whence)" */
static void shm_ceiling_text(const struct ada_shm_budget_view *v, char *buf, size_t cap)
{
	snprintf(buf, cap, "the shared-memory ceiling of %.1f MiB (%s)", shm_mib(v->ceiling),
	         v->ceiling_from_fs ? "half of the free space of /dev/shm" : "--max-shm-mb");
}

static bool shm_why_done(int n, char *buf, size_t cap)
{
	if (n < 0 && cap)
		buf[0] = '\0';
	return n >= 0;
}

bool ada_shm_budget_untraced_why(const struct ada_shm_budget_view *v, char *buf, size_t cap)
{
	char c[96];
	if (cap)
		buf[0] = '\0';
	if (!v->refused_procs)
		return false;
	shm_ceiling_text(v, c, sizeof(c));
	int n = snprintf(
	    buf, cap,
	    "%llu process%s ran untraced: %s was reached (peak %.1f MiB): an arena needs %.1f "
	    "MiB even with the smallest detail rings, %.1f MiB was free; %s, or lower --ring-mb "
	    "or --max-threads",
	    (unsigned long long)v->refused_procs, v->refused_procs == 1 ? "" : "es", c,
	    shm_mib(v->peak), shm_mib(v->refused_need), shm_mib(v->refused_room),
	    v->ceiling_from_fs ? "give /dev/shm more room" : "raise --max-shm-mb");
	return shm_why_done(n, buf, cap);
}

bool ada_shm_budget_failed_why(const struct ada_shm_budget_view *v, char *buf, size_t cap)
{
	if (cap)
		buf[0] = '\0';
	if (!v->failed_procs)
		return false;
	/* The errno is the target's to write: strerror only of a small one;
	 * 0 (a page the target wrote over) is no reason. */
	char e[64];
	if (!v->failed_errno)
		snprintf(e, sizeof(e), "a reason not recorded");
	else if (v->failed_errno < 4096)
		snprintf(e, sizeof(e), "%s", strerror((int)v->failed_errno));
	else
		snprintf(e, sizeof(e), "error %u", v->failed_errno);
	int n = snprintf(buf, cap,
	                 "%llu process%s ran untraced: %s could not make %s arena (the first: "
	                 "%s), not for the shared-memory ceiling; each said so on its own stderr",
	                 (unsigned long long)v->failed_procs, v->failed_procs == 1 ? "" : "es",
	                 v->failed_procs == 1 ? "it" : "they",
	                 v->failed_procs == 1 ? "its" : "their", e);
	return shm_why_done(n, buf, cap);
}

bool ada_shm_budget_reduced_why(const struct ada_shm_budget_view *v, char *buf, size_t cap)
{
	char c[96];
	if (cap)
		buf[0] = '\0';
	if (!v->reduced_procs)
		return false;
	shm_ceiling_text(v, c, sizeof(c));
	int n = snprintf(
	    buf, cap,
	    "%llu process%s recorded with smaller detail rings (down to %llu KiB a thread): the "
	    "whole arena needs %.1f MiB, %.1f MiB was free under %s; their index lanes are whole, "
	    "their detail windows shorter; %s or lower --detail-mb",
	    (unsigned long long)v->reduced_procs, v->reduced_procs == 1 ? " was" : "es were",
	    (unsigned long long)(v->reduced_detail_min >> 10), shm_mib(v->reduced_need),
	    shm_mib(v->reduced_room), c,
	    v->ceiling_from_fs ? "give /dev/shm more room" : "raise --max-shm-mb");
	return shm_why_done(n, buf, cap);
}
