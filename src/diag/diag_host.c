/*
 * The HOST checks: room on the disk for --out and in /dev/shm for the
 * arenas, RLIMIT_MEMLOCK against the arena (the rings are mlocked), the
 * io_uring the drain writes with, and an invariant TSC for the clock.
 * Nothing is created: the io_uring probe makes a ring of one entry and
 * closes it at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "atf_format.h"
#include "diag_internal.h"
#include "ring.h"
#include "clock.h"

#define DIAG_MIB (1024.0 * 1024.0)
#define DIAG_DISK_FAIL (1ull << 20)  /* below this nothing useful fits */
#define DIAG_DISK_WARN (64ull << 20) /* one default index segment */
#define DIAG_CAP_IPC_LOCK 14
#define DIAG_CAP_SYS_ADMIN 21

/* Capability bit cap in CapEff of pid (0: ada itself). */
static bool diag_has_cap(pid_t pid, int cap)
{
	char buf[8192], path[64];
	snprintf(path, sizeof(path), pid ? "/proc/%d/status" : "/proc/self/status", (int)pid);
	if (diag_read_small(path, buf, sizeof(buf)) < 0)
		return false;
	const char *v = diag_field(buf, "CapEff");
	return v && ((strtoull(v, NULL, 16) >> cap) & 1);
}

/* The nearest existing directory at or above path (the session's
 * parents are created as needed). */
static void diag_existing_dir(const char *path, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s", path);
	struct statvfs sv;
	while (statvfs(buf, &sv) < 0) {
		char *slash = strrchr(buf, '/');
		if (!slash) {
			snprintf(buf, cap, ".");
			return;
		}
		if (slash == buf) {
			buf[1] = '\0';
			return;
		}
		*slash = '\0';
	}
}

static void diag_disk(const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	const char *out = o->out_dir ? o->out_dir : "ada_traces";
	char dir[PATH_MAX];
	struct statvfs sv;
	struct ada_diag_check *c = diag_add(rep, "disk", "free disk space for --out");
	if (!c)
		return;
	diag_existing_dir(out, dir, sizeof(dir));
	if (statvfs(dir, &sv) < 0 || access(dir, W_OK | X_OK) < 0) {
		diag_set(c, ADA_DIAG_FAIL, true, "ada cannot write sessions under '%s' (%s)", out,
		         strerror(errno));
		diag_step(c, "choose an --out directory you may write");
		return;
	}
	uint64_t free_b = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (free_b < DIAG_DISK_FAIL) {
		diag_set(c, ADA_DIAG_FAIL, true, "the file system of '%s' has %.1f MiB free", out,
		         free_b / DIAG_MIB);
		diag_step(c, "free some space there, or choose another --out directory");
	} else if (free_b < DIAG_DISK_WARN) {
		diag_set(c, ADA_DIAG_WARN, true,
		         "the file system of '%s' has only %.1f MiB free: a busy recording fills "
		         "it within seconds (the disk budget keeps the newest data)",
		         out, free_b / DIAG_MIB);
		diag_step(c, "free some space there, or choose another --out directory");
	} else {
		diag_set(c, ADA_DIAG_OK, false, "the file system of '%s' has %.0f MiB free", out,
		         free_b / DIAG_MIB);
	}
}

static void diag_ring_config(const struct ada_diag_opts *o, struct ada_arena_config *cfg)
{
	if (o->ring)
		*cfg = *o->ring;
	else
		ada_arena_config_default(cfg);
}

static uint64_t diag_arena_bytes(const struct ada_diag_opts *o)
{
	struct ada_arena_config cfg;
	diag_ring_config(o, &cfg);
	return ada_arena_size_for(&cfg);
}

static void diag_shm(const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	const char *shm = o->shm_dir ? o->shm_dir : "/dev/shm";
	uint64_t need = diag_arena_bytes(o);
	struct statvfs sv;
	struct ada_diag_check *c = diag_add(rep, "shm", "shared memory for the rings");
	if (!c)
		return;
	if (statvfs(shm, &sv) < 0 || access(shm, W_OK | X_OK) < 0) {
		diag_set(c, ADA_DIAG_FAIL, true, "ada cannot create the rings in %s (%s)", shm,
		         strerror(errno));
		diag_step(c,
		          "run ada where %s is a writable tmpfs (it is on every usual Linux "
		          "system)",
		          shm);
		return;
	}
	uint64_t free_b = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (free_b < need) {
		diag_set(c, ADA_DIAG_FAIL, true,
		         "%s has %.1f MiB free, less than the %.1f MiB of one process's rings", shm,
		         free_b / DIAG_MIB, need / DIAG_MIB);
		diag_step(c, "remove files of yours that are left in %s", shm);
		diag_step(c, "or ask for smaller rings (--ring-mb, --max-threads, --detail-mb)");
	} else if (free_b < 4 * need) {
		diag_set(
		    c, ADA_DIAG_WARN, true,
		    "%s has %.1f MiB free: room for the rings of %llu process%s (%.1f MiB each); "
		    "more processes run untraced, counted",
		    shm, free_b / DIAG_MIB, (unsigned long long)(free_b / need),
		    free_b / need == 1 ? "" : "es", need / DIAG_MIB);
		diag_step(c,
		          "remove files of yours that are left in %s, or ask for smaller rings "
		          "(--ring-mb, --max-threads)",
		          shm);
	} else {
		diag_set(c, ADA_DIAG_OK, false, "%s has %.0f MiB free (%.1f MiB per process)", shm,
		         free_b / DIAG_MIB, need / DIAG_MIB);
	}
}

/* The memlock limit that applies where the rings are mapped: the
 * target's own when attaching ("Max locked memory" of /proc/PID/limits). */
static bool diag_memlock_limit(pid_t pid, uint64_t *cur, uint64_t *max)
{
	if (!pid) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
			return false;
		*cur = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
		*max = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max;
		return true;
	}
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	if (diag_read_small(path, buf, sizeof(buf)) < 0)
		return false;
	const char *l = strstr(buf, "Max locked memory");
	char a[32], b[32];
	if (!l || sscanf(l + 17, "%31s %31s", a, b) != 2)
		return false;
	*cur = !strcmp(a, "unlimited") ? UINT64_MAX : strtoull(a, NULL, 10);
	*max = !strcmp(b, "unlimited") ? UINT64_MAX : strtoull(b, NULL, 10);
	return true;
}

/* The rings are mlocked as each thread claims its slot (ring.h): the
 * limit decides how many threads' rings stay in memory. */
static void diag_memlock(const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	struct ada_arena_config cfg;
	diag_ring_config(o, &cfg);
	uint64_t per = cfg.index_events * ATF_INDEX_EVENT_SIZE + cfg.detail_bytes, cur, max;
	uint64_t need = per * cfg.max_threads;
	pid_t pid = o->attach ? o->pid : 0;
	if (!diag_memlock_limit(pid, &cur, &max))
		return;
	struct ada_diag_check *c = diag_add(rep, "memlock", "RLIMIT_MEMLOCK holds the rings");
	if (!c)
		return;
	const char *whose = pid ? "the process's" : "the";
	if (cur == UINT64_MAX || cur >= need) {
		diag_set(c, ADA_DIAG_OK, false,
		         "%s RLIMIT_MEMLOCK (%s) locks the rings of all %u threads a process may "
		         "have",
		         whose, cur == UINT64_MAX ? "unlimited" : "large enough", cfg.max_threads);
	} else if (diag_has_cap(pid, DIAG_CAP_IPC_LOCK)) {
		diag_set(
		    c, ADA_DIAG_OK, false,
		    "%s RLIMIT_MEMLOCK is %.1f MiB, but CAP_IPC_LOCK lets every ring be locked",
		    whose, cur / DIAG_MIB);
	} else {
		diag_set(c, ADA_DIAG_WARN, true,
		         "%s RLIMIT_MEMLOCK (%.1f MiB) locks the rings of %llu of the %u threads a "
		         "process may have (%.1f MiB each): the others' rings may be swapped out "
		         "under memory pressure, slowing those threads (the manifest says so)",
		         whose, cur / DIAG_MIB, (unsigned long long)(cur / per), cfg.max_threads,
		         per / DIAG_MIB);
		if (max == UINT64_MAX || max >= need)
			diag_step(c,
			          "raise the soft limit to %llu KiB (ulimit -l %llu in the shell "
			          "that starts the program, or LimitMEMLOCK= for a service)",
			          (unsigned long long)(need >> 10),
			          (unsigned long long)(need >> 10));
		diag_step(c,
		          "ask for smaller rings or fewer thread slots (--ring-mb, --max-threads)");
	}
}

/* kernel.io_uring_disabled: 0 allowed, 1 only for kernel.io_uring_group
 * (and CAP_SYS_ADMIN), 2 nobody. Then the probe says what the kernel (or
 * a seccomp filter, as containers install) really does. */
static void diag_io_uring(struct ada_diag_report *rep)
{
	char buf[32];
	struct ada_diag_check *c = diag_add(rep, "io_uring", "io_uring for the writer");
	if (!c)
		return;
	int dis = diag_read_small("/proc/sys/kernel/io_uring_disabled", buf, sizeof(buf)) > 0
	              ? atoi(buf)
	              : 0;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	long fd = syscall(__NR_io_uring_setup, 1, &p);
	int err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close((int)fd);
	if (!err) {
		diag_set(c, ADA_DIAG_OK, false,
		         "io_uring is available (kernel.io_uring_disabled %d)", dis);
	} else if (err == ENOSYS) {
		diag_set(c, ADA_DIAG_FAIL, false,
		         "this kernel has no io_uring (older than 5.1, or built without it), which "
		         "ada writes its files with");
		diag_step(c, "record on a machine whose kernel has io_uring (5.6 or newer)");
	} else if (dis == 1 && !diag_has_cap(0, DIAG_CAP_SYS_ADMIN)) {
		char g[32] = "?";
		if (diag_read_small("/proc/sys/kernel/io_uring_group", g, sizeof(g)) > 0)
			g[strcspn(g, "\n")] = '\0';
		diag_set(c, ADA_DIAG_FAIL, true,
		         "io_uring is limited to the members of group %s on this machine "
		         "(kernel.io_uring_disabled is 1), and ada writes its files with it",
		         g);
		diag_step(c, "run ada as a user in group %s, or as root", g);
	} else {
		diag_set(
		    c, ADA_DIAG_FAIL, false,
		    "io_uring is refused to ada (%s; kernel.io_uring_disabled is %d, or a seccomp "
		    "profile such as a container's forbids it), and ada writes its files with it",
		    strerror(err), dis);
		diag_step(c, "record where io_uring is allowed (outside that container or "
		             "service sandbox)");
	}
}

static void diag_tsc(struct ada_diag_report *rep)
{
	struct ada_diag_check *c = diag_add(rep, "tsc", "an invariant TSC for the clock");
	if (!c)
		return;
	if (ada_tsc_invariant())
		diag_set(c, ADA_DIAG_OK, false,
		         "the TSC is invariant (constant_tsc, nonstop_tsc): events are timed by "
		         "rdtsc");
	else
		diag_set(c, ADA_DIAG_WARN, false,
		         "the CPU has no invariant TSC (constant_tsc and nonstop_tsc in "
		         "/proc/cpuinfo): events are timed with clock_gettime, which costs more "
		         "per event, and the manifest says so");
	if (c->status == ADA_DIAG_WARN)
		diag_step(c, "nothing is needed to record; for cheaper timing, record on a machine "
		             "(or a virtual machine configured to expose it) whose CPU has an "
		             "invariant TSC");
}

void diag_host(const struct ada_diag_opts *o, struct ada_diag_report *rep)
{
	diag_disk(o, rep);
	diag_shm(o, rep);
	diag_memlock(o, rep);
	diag_io_uring(rep);
	diag_tsc(rep);
}
