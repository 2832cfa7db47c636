/*
 * Tests of ada_producer_init_from_env(): arena creation from ADA_ARENA_DIR /
 * ADA_RING_CONFIG (<pid>.ring.tmp.<random> renamed to <pid>.ring), the exec re-open (the
 * old image's slots become EXITED and exec-orphaned), a forked child
 * leaving its parent's arena alone and making its own, a process that
 * finds an earlier process's <pid>.ring (another start time: a reused pid)
 * leaving it alone and making <pid>.<start ticks>.ring, the
 * /proc/PID/stat start-time parser, the recorder's liveness as a producer
 * judges it (ring_recorder_state) and the retirement of an arena at ada
 * attach's detach (ada_producer_retire_arena / _reap_retired), and
 * ada_arena_open()'s refusal of what is not a regular file.
 *
 * The exec test re-executes this binary (/proc/self/exe --after-exec) in a
 * forked child; that second image checks itself and reports by exit code.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring_internal.h" /* the control block: a stale arena made to order */

#define CONFIG "max_threads=4,index_events=64,overflow=drop"

static char test_dir[64];

static int fx_setup(void **state)
{
	(void)state;
	snprintf(test_dir, sizeof(test_dir), "/dev/shm/ada-ring-env-XXXXXX");
	if (!mkdtemp(test_dir))
		return -1;
	setenv("ADA_ARENA_DIR", test_dir, 1);
	setenv("ADA_RING_CONFIG", CONFIG, 1);
	return 0;
}

static int fx_teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void ring_path(char *out, size_t cap, int pid, const char *ext)
{
	snprintf(out, cap, "%s/%d.%s", test_dir, pid, ext);
}

/* Finds the non-free slot whose thread_seq is seq; fails when absent. */
static void slot_by_seq(struct ada_arena *a, uint32_t seq, struct ada_slot_info *out)
{
	for (uint32_t s = 0; s < ada_arena_max_threads(a); s++) {
		ada_arena_slot_info(a, s, out);
		if (out->state != ADA_SLOT_FREE && out->thread_seq == seq)
			return;
	}
	fail_msg("no slot with thread_seq %u", seq);
}

static void test_env_errors(void **state)
{
	(void)state;
	unsetenv("ADA_ARENA_DIR");
	assert_int_equal(ada_producer_init_from_env(), -ENOENT);
	setenv("ADA_ARENA_DIR", test_dir, 1);
	setenv("ADA_RING_CONFIG", "index_events=1000", 1);
	assert_int_equal(ada_producer_init_from_env(), -EINVAL);
	setenv("ADA_ARENA_DIR", "/nonexistent/ada", 1);
	setenv("ADA_RING_CONFIG", CONFIG, 1);
	assert_int_equal(ada_producer_init_from_env(), -ENOENT);
	assert_null(ada_producer_arena());
}

/* Runs in the re-executed image: the arena must be the one the first
 * image made, with its slot orphaned; then this image produces too. */
static int after_exec(void)
{
	if (ada_producer_init_from_env() != 0)
		return 10;
	struct ada_arena *a = ada_producer_arena();
	if (!(ada_arena_flags(a) & ADA_ARENA_F_EXEC_REOPENED))
		return 11;
	struct ada_slot_info si;
	uint32_t orphans = 0;
	for (uint32_t s = 0; s < ada_arena_max_threads(a); s++) {
		ada_arena_slot_info(a, s, &si);
		if (si.state == ADA_SLOT_EXITED && si.exec_orphaned && si.head - si.tail == 3)
			orphans++;
		else if (si.state != ADA_SLOT_FREE)
			return 12;
	}
	if (orphans != 1)
		return 13;
	ada_emit_call(100);
	ada_emit_return(100);
	return 0;
}

static void test_create_then_exec_reopen(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (ada_producer_init_from_env() != 0)
			_exit(2);
		for (int i = 0; i < 3; i++)
			ada_emit_call((uint64_t)i);
		execl("/proc/self/exe", "test_ring_env", "--after-exec", (char *)NULL);
		_exit(3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char path[128];
	struct stat sb;
	ring_path(path, sizeof(path), pid, "tmp");
	assert_int_not_equal(stat(path, &sb), 0); /* renamed away */
	ring_path(path, sizeof(path), pid, "ring");
	struct ada_arena *a;
	assert_int_equal(ada_arena_open(path, &a), 0);
	assert_int_equal(ada_arena_pid(a), pid);
	assert_int_equal(ada_arena_config_of(a)->max_threads, 4);
	assert_int_equal(ada_arena_config_of(a)->overflow, ADA_OVERFLOW_DROP);
	struct ada_slot_info old, cur;
	slot_by_seq(a, 0, &old);
	slot_by_seq(a, 1, &cur);
	assert_int_equal(old.state, ADA_SLOT_EXITED);
	assert_int_equal(old.exec_orphaned, 1);
	assert_int_equal(old.head - old.tail, 3);
	assert_int_equal(old.tid, pid);
	assert_int_equal(cur.state, ADA_SLOT_ACTIVE); /* main thread: no destructor */
	assert_int_equal(cur.tid, pid);
	assert_int_equal(cur.head - cur.tail, 2);
	ada_arena_close(a);
}

static void test_fork_child_makes_its_own(void **state)
{
	(void)state;
	assert_int_equal(ada_producer_init_from_env(), 0);
	struct ada_arena *mine = ada_producer_arena();
	assert_non_null(mine);
	assert_int_equal(ada_producer_init_from_env(), 0); /* twice: same arena */
	assert_ptr_equal(ada_producer_arena(), mine);
	ada_emit_call(1);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* What the agent's atfork child handler does. */
		if (ada_producer_init_from_env() != 0)
			_exit(2);
		if (ada_arena_pid(ada_producer_arena()) != getpid())
			_exit(3);
		ada_emit_call(2);
		ada_emit_call(3);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	ada_emit_call(4);
	const struct atf_index_event *e;
	assert_int_equal(ada_index_ring_peek(mine, 0, &e) + ada_index_ring_peek(mine, 1, &e) +
	                     ada_index_ring_peek(mine, 2, &e) + ada_index_ring_peek(mine, 3, &e),
	                 2); /* the child wrote nothing here */
	char path[128];
	ring_path(path, sizeof(path), pid, "ring");
	struct ada_arena *child;
	assert_int_equal(ada_arena_open(path, &child), 0);
	struct ada_slot_info si;
	slot_by_seq(child, 0, &si);
	assert_int_equal(si.head - si.tail, 2);
	assert_int_equal(si.tid, pid);
	ada_arena_close(child);
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(mine);
}

/* Whether /proc/self/maps names path (a mapping of that file here). */
static bool maps_has(const char *path)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, path) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* One generation of test_fork_chain_exact: sets up as the agent's atfork
 * child handler does, checks that the parent's arena (parent_ring, NULL
 * for none) is not mapped here, emits n calls and reads them back through
 * its own handle, checked (ada_slot_read_checked, ada_index_ring_peek),
 * and consumes them, so that the handle's consumer entries hold what a
 * child must not find in its own: the entries come to it as zeros
 * (MADV_WIPEONFORK) and are its new arena's. 0 or a code. */
static int chain_generation(uint32_t n, const char *parent_ring)
{
	if (ada_producer_init_from_env() != 0)
		return 2;
	struct ada_arena *a = ada_producer_arena();
	if (!a || ada_arena_pid(a) != getpid())
		return 3;
	if (parent_ring && maps_has(parent_ring))
		return 4;
	for (uint32_t i = 0; i < n; i++)
		ada_emit_call(i);
	struct ada_slot_info si;
	uint32_t s = 0;
	for (; s < ada_arena_max_threads(a); s++)
		if (ada_slot_read_checked(a, s, &si) == 0 && si.state == ADA_SLOT_ACTIVE &&
		    si.tid == (uint32_t)getpid())
			break;
	if (s == ada_arena_max_threads(a))
		return 5;
	if (si.head - si.tail != n || ada_slot_fault(a, s, NULL))
		return 6;
	const struct atf_index_event *e;
	size_t got = ada_index_ring_peek(a, s, &e);
	if (got != n)
		return 7;
	ada_index_ring_release(a, s, got);
	/* Prepared as the agent's atfork prepare handler does. */
	ada_producer_fork_prepare();
	return 0;
}

/* Generation depth of test_fork_chain_exact (the top process is 0): its
 * arena's events are read back from the file, by its parent. */
static int chain_fork(uint32_t depth, uint32_t last)
{
	char mine[128];
	ring_path(mine, sizeof(mine), getpid(), "ring");
	pid_t kid = fork();
	if (kid < 0)
		return 20;
	if (kid == 0) {
		int rc = chain_generation(depth + 2, mine); /* generation g emits g + 1 */
		if (!rc && depth + 1 < last)
			rc = chain_fork(depth + 1, last);
		_exit(rc);
	}
	int st;
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return 21;
	if (WEXITSTATUS(st))
		return WEXITSTATUS(st);
	char path[128];
	struct ada_arena *child;
	ring_path(path, sizeof(path), kid, "ring");
	if (ada_arena_open(path, &child) != 0)
		return 22;
	struct ada_slot_info si;
	uint32_t found = 0;
	for (uint32_t s = 0; s < ada_arena_max_threads(child); s++) {
		ada_arena_slot_info(child, s, &si);
		if (si.state != ADA_SLOT_FREE)
			found += si.tid == (uint32_t)kid && si.head == depth + 2 ? 1 : 100;
	}
	ada_arena_close(child);
	return found == 1 ? 0 : 23;
}

/* A child of a child of a child, each forked after the atfork prepare:
 * each records exactly its own calls into its own arena, its parent's
 * arena is not mapped in it, and the consumer entries it inherited as
 * zeros (and took for its own arena) hold nothing of its parent's. */
static void test_fork_chain_exact(void **state)
{
	(void)state;
	assert_int_equal(chain_generation(1, NULL), 0);
	struct ada_arena *mine = ada_producer_arena();
	assert_int_equal(chain_fork(0, 3), 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(mine);
}

/* A forked child that cannot make its arena for another reason than the
 * shared-memory ceiling (here: no file descriptor left, RLIMIT_NOFILE)
 * runs untraced, and is counted in the recording's budget page with its
 * reason, so the recorder can tell it (manifests, `ada status`, summary);
 * the ceiling's own count stays 0. The child's exit code is its errno. */
static void test_fork_child_arena_failed_counted(void **state)
{
	(void)state;
	int dfd = open(test_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	struct ada_shm_budget *b;
	assert_int_equal(ada_shm_budget_create(dfd, 0, &b), 0);
	close(dfd);
	assert_int_equal(ada_producer_init_from_env(), 0);
	struct ada_arena *mine = ada_producer_arena();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int lowest = dup(0);
		if (lowest < 0)
			_exit(100);
		close(lowest);
		struct rlimit rl = {.rlim_cur = (rlim_t)lowest, .rlim_max = (rlim_t)lowest};
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(101);
		int err = ada_producer_init_from_env();
		_exit(err < 0 && err > -100 ? -err : 102);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	int err = WEXITSTATUS(st);
	assert_true(err > 0 && err < 100);
	assert_int_not_equal(err, EDQUOT);
	struct ada_shm_budget_view v;
	ada_shm_budget_read(b, &v);
	assert_int_equal(v.failed_procs, 1);
	assert_int_equal(v.failed_errno, err);
	assert_int_equal(v.refused_procs, 0);
	char why[512];
	assert_true(ada_shm_budget_failed_why(&v, why, sizeof(why)));
	assert_non_null(strstr(why, "1 process ran untraced"));
	assert_non_null(strstr(why, strerror(err)));
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(mine);
	ada_shm_budget_close(b);
}

/* Reads the budget page of test_dir (made with ceiling) after one
 * ada_producer_init_from_env() that must fail with -want. */
static void env_init_fails(uint64_t ceiling, int want, struct ada_shm_budget_view *v)
{
	int dfd = open(test_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	struct ada_shm_budget *b;
	assert_int_equal(ada_shm_budget_create(dfd, ceiling, &b), 0);
	close(dfd);
	assert_int_equal(ada_producer_init_from_env(), -want);
	assert_null(ada_producer_arena());
	ada_shm_budget_read(b, v);
	ada_shm_budget_close(b);
}

/* A file system's own EDQUOT (a quota on the arena directory; here the
 * test hook, this kernel's tmpfs having no quota) is not the recording's
 * shared-memory ceiling: counted as an arena failure with its reason, its
 * reservation given back, and not "refused" (the agent says it). Before,
 * every -EDQUOT was taken for the ceiling: no count, no message. */
static void test_fs_quota_counted(void **state)
{
	(void)state;
	setenv("ADA_TEST_ARENA_ERRNO", "122", 1); /* EDQUOT */
	assert_int_equal(EDQUOT, 122);
	struct ada_shm_budget_view v;
	env_init_fails(0, EDQUOT, &v);
	unsetenv("ADA_TEST_ARENA_ERRNO");
	assert_false(ada_producer_refused());
	assert_int_equal(v.failed_procs, 1);
	assert_int_equal(v.failed_errno, EDQUOT);
	assert_int_equal(v.refused_procs, 0);
	assert_int_equal(v.reserved, 0);
	char why[512];
	assert_true(ada_shm_budget_failed_why(&v, why, sizeof(why)));
	assert_non_null(strstr(why, strerror(EDQUOT)));
}

/* The ceiling's own -EDQUOT (the reservation's, before any file is made)
 * stays a refusal: counted there, not among the arena failures. */
static void test_ceiling_edquot_refused(void **state)
{
	(void)state;
	struct ada_shm_budget_view v;
	env_init_fails(4096, EDQUOT, &v); /* smaller than any arena: at once */
	assert_true(ada_producer_refused());
	assert_int_equal(v.refused_procs, 1);
	assert_int_equal(v.failed_procs, 0);
}

/* A forked child whose pid names a file already there (an earlier
 * process's arena the recorder has not removed) leaves it untouched and
 * publishes its own under <pid>.<start ticks>.ring, as reused. Exit code:
 * 0 when so. */
static int forked_over_stale(void)
{
	char path[128], data[16] = "not yours";
	ring_path(path, sizeof(path), (int)getpid(), "ring");
	FILE *f = fopen(path, "w");
	if (!f || fwrite(data, 1, sizeof(data), f) != sizeof(data) || fclose(f) != 0)
		return 10;
	if (ada_producer_init_from_env() != 0)
		return 11;
	struct ada_arena *a = ada_producer_arena();
	if (!a || ada_arena_pid(a) != getpid() || !ada_arena_pid_reused(a))
		return 12;
	char got[16] = {0};
	f = fopen(path, "r");
	if (!f || fread(got, 1, sizeof(got), f) != sizeof(got) || memcmp(got, data, sizeof(got)))
		return 13;
	fclose(f);
	char mine[160];
	snprintf(mine, sizeof(mine), "%s/%d.%u.ring", test_dir, (int)getpid(),
	         ada_arena_start_time(a));
	struct stat st;
	return stat(mine, &st) == 0 ? 0 : 14;
}

static void test_fork_child_never_replaces(void **state)
{
	(void)state;
	assert_int_equal(ada_producer_init_from_env(), 0);
	struct ada_arena *mine = ada_producer_arena();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(forked_over_stale());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(mine);
}

/* Makes mlock fail in this (child) process: no locked memory allowed, and
 * no CAP_IPC_LOCK to override that when we run as root. */
static int refuse_mlock(void)
{
	struct rlimit rl = {0, 0};
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return -1;
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -1;
	data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &hdr, data) == 0 ? 0 : -1;
}

/* mlock refusal is not an error: the create succeeds and says so, to the
 * caller and (in the file) to the recorder. */
static void test_mlock_refusal_reported(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	print_message("skip: the sanitizer runtime replaces mlock() by a no-op that succeeds\n");
	skip();
#endif
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (refuse_mlock() != 0)
			_exit(77);
		char path[128];
		ring_path(path, sizeof(path), getpid(), "ring");
		struct ada_arena_config c;
		ada_arena_config_default(&c);
		c.max_threads = 1;
		c.index_events = 1024;
		struct ada_arena *a;
		bool failed = false;
		if (ada_arena_create(path, &c, &a, &failed) != 0)
			_exit(2);
		if (!failed || ada_arena_mlocked(a))
			_exit(3);
		_exit(ada_arena_flags(a) & ADA_ARENA_F_MLOCK_FAILED ? 0 : 4);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skip: cannot take RLIMIT_MEMLOCK and CAP_IPC_LOCK away\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
	char path[128];
	ring_path(path, sizeof(path), pid, "ring");
	struct ada_arena *a;
	assert_int_equal(ada_arena_open(path, &a), 0);
	assert_true(ada_arena_flags(a) & ADA_ARENA_F_MLOCK_FAILED);
	ada_arena_close(a);
}

/* A /proc/PID/stat text: a command name with spaces and ')', fields 3..21,
 * field 22 = start, then more. */
static size_t stat_text(char *buf, size_t cap, const char *start)
{
	int n = snprintf(buf, cap, "4242 (a b) c)) S");
	for (int f = 4; f < 22; f++)
		n += snprintf(buf + n, cap - (size_t)n, " %d", f * 11);
	n += snprintf(buf + n, cap - (size_t)n, " %s 17 0 3\n", start);
	return (size_t)n;
}

static void test_stat_start_ticks(void **state)
{
	(void)state;
	char buf[512];
	size_t n = stat_text(buf, sizeof(buf), "987654321");
	assert_int_equal(ada_stat_start_ticks(buf, n), 987654321);
	/* Cut short anywhere inside or before field 22: never a smaller number. */
	size_t at = (size_t)(strstr(buf, " 987654321") - buf);
	for (size_t k = 0; k <= at + 10; k++)
		assert_int_equal(ada_stat_start_ticks(buf, k), 0);
	assert_int_equal(ada_stat_start_ticks(buf, at + 11), 987654321); /* its space */
	/* The last field of the text, ended by the newline. */
	int m = snprintf(buf, sizeof(buf), "1 (x) S");
	for (int f = 4; f < 22; f++)
		m += snprintf(buf + m, sizeof(buf) - (size_t)m, " 0");
	m += snprintf(buf + m, sizeof(buf) - (size_t)m, " 55\n");
	assert_int_equal(ada_stat_start_ticks(buf, (size_t)m), 55);
	n = stat_text(buf, sizeof(buf), "12x4");
	assert_int_equal(ada_stat_start_ticks(buf, n), 0); /* not a number */
	n = stat_text(buf, sizeof(buf), "-5");
	assert_int_equal(ada_stat_start_ticks(buf, n), 0);
	n = stat_text(buf, sizeof(buf), "99999999999999999999999");
	assert_int_equal(ada_stat_start_ticks(buf, n), 0); /* past 2^64 */
	n = stat_text(buf, sizeof(buf), "18446744073709551615");
	assert_int_equal(ada_stat_start_ticks(buf, n), UINT64_MAX);
	assert_int_equal(ada_stat_start_ticks("no paren here at all", 20), 0);
	assert_int_equal(ada_stat_start_ticks("1 (x) S 2 3", 11), 0); /* too few fields */
	assert_int_equal(ada_stat_start_ticks(NULL, 10), 0);
	assert_int_equal(ada_stat_start_ticks(buf, 0), 0);
	/* This process's own. */
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t r = read(fd, buf, sizeof(buf));
	close(fd);
	assert_true(r > 0);
	assert_true(ada_stat_start_ticks(buf, (size_t)r) > 0);
}

static uint64_t self_start_ticks(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	return r > 0 ? ada_stat_start_ticks(buf, (size_t)r) : 0;
}

static void producer_drop(void)
{
	struct ada_arena *a = ada_producer_arena();
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

/* In a child: its <pid>.ring made to look like an earlier process's (the
 * start time of another process with this pid), then the producer set
 * up again: it must leave that arena alone, make <pid>.<ticks>.ring, and
 * adopt that one when set up once more (as after an exec). */
static int reused_child(void)
{
	if (ada_producer_init_from_env() != 0)
		return 2;
	struct ada_arena *a = ada_producer_arena();
	if (ada_arena_pid_reused(a) || ada_arena_start_time(a) == 0)
		return 3;
	ada_emit_call(1);
	a->ctl->start_time ^= 0x5a5a; /* an earlier process's now */
	producer_drop();
	if (ada_producer_init_from_env() != 0)
		return 4;
	a = ada_producer_arena();
	if (!ada_arena_pid_reused(a) || ada_arena_pid(a) != getpid())
		return 5;
	ada_emit_call(2);
	ada_emit_call(3);
	producer_drop();
	if (ada_producer_init_from_env() != 0) /* as after exec: ours again */
		return 6;
	a = ada_producer_arena();
	if (!ada_arena_pid_reused(a) || !(ada_arena_flags(a) & ADA_ARENA_F_EXEC_REOPENED))
		return 7;
	ada_emit_call(4);
	producer_drop();
	return 0;
}

/* A forked child names its start time from two clock readings around
 * the fork when they fall in one tick (env.c, env_fork_start_ticks):
 * the rule, then 40 real children, each of which compares its arena's
 * start time with /proc/self/stat's (exit 0 when equal). */
static void test_fork_start_ticks(void **state)
{
	(void)state;
	uint64_t t = 0;
	assert_true(ring_start_ticks_between(1230000000ull, 1239999999ull, 100, &t));
	assert_int_equal(t, 123);
	assert_false(
	    ring_start_ticks_between(1239999999ull, 1240000000ull, 100, &t)); /* two ticks */
	assert_false(ring_start_ticks_between(0, 1239999999ull, 100, &t));    /* no stamp */
	assert_false(
	    ring_start_ticks_between(1239999999ull, 1230000000ull, 100, &t)); /* backwards */
	assert_false(ring_start_ticks_between(1230000000ull, 1230000001ull, 0, &t));
	assert_false(ring_start_ticks_between(1230000000ull, 1230000001ull, 1024, &t));
	assert_true(ring_start_ticks_between(1230000000ull, 1230000001ull, 1000, &t));
	assert_int_equal(t, 1230);
	assert_int_equal(ada_producer_init_from_env(), 0);
	for (int i = 0; i < 40; i++) {
		ada_producer_fork_prepare();
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			char buf[1024];
			int fd = open("/proc/self/stat", O_RDONLY);
			ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
			uint64_t proc = n > 0 ? ada_stat_start_ticks(buf, (size_t)n) : 0;
			if (ada_producer_init_from_env() != 0)
				_exit(2);
			_exit(ada_arena_start_time(ada_producer_arena()) == (uint32_t)proc ? 0 : 1);
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	struct ada_arena *a = ada_producer_arena();
	ada_producer_reset_thread();
	ada_producer_set_arena(NULL);
	ada_arena_close(a);
}

static void test_reused_pid_not_adopted(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(reused_child());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* The earlier arena: untouched (one event, not orphaned, no exec). */
	char path[128];
	ring_path(path, sizeof(path), pid, "ring");
	struct ada_arena *old, *mine;
	assert_int_equal(ada_arena_open(path, &old), 0);
	assert_false(ada_arena_flags(old) & ADA_ARENA_F_EXEC_REOPENED);
	struct ada_slot_info si;
	slot_by_seq(old, 0, &si);
	assert_int_equal(si.state, ADA_SLOT_ACTIVE);
	assert_int_equal(si.exec_orphaned, 0);
	assert_int_equal(si.head - si.tail, 1);
	/* The later process's: <pid>.<its start ticks>.ring, the only other. */
	char prefix[32], name[PATH_MAX];
	int plen = snprintf(prefix, sizeof(prefix), "%d.", (int)pid), found = 0;
	DIR *d = opendir(test_dir);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		unsigned long long t;
		char tail[8];
		if (strncmp(de->d_name, prefix, (size_t)plen) || !strcmp(de->d_name + plen, "ring"))
			continue;
		assert_int_equal(sscanf(de->d_name + plen, "%llu.%7s", &t, tail), 2);
		assert_string_equal(tail, "ring");
		assert_true(t >= self_start_ticks()); /* started after us */
		snprintf(name, sizeof(name), "%s/%s", test_dir, de->d_name);
		found++;
	}
	closedir(d);
	assert_int_equal(found, 1);
	assert_int_equal(ada_arena_open(name, &mine), 0);
	assert_int_equal(ada_arena_pid(mine), pid);
	assert_int_equal(ada_arena_start_time(mine) ^ 0x5a5a, ada_arena_start_time(old));
	slot_by_seq(mine, 0, &si);
	assert_int_equal(si.exec_orphaned, 1);
	assert_int_equal(si.head - si.tail, 2);
	slot_by_seq(mine, 1, &si);
	assert_int_equal(si.head - si.tail, 1);
	ada_arena_close(old);
	ada_arena_close(mine);
}

/* Lines of /proc/self/maps that name test_dir. */
static int maps_in_test_dir(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, test_dir) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Retired: no mapping of the file is left, the old range is private
 * memory a late event still lands in (no fault), and the reap frees it. */
static void test_retire_gives_back(void **state)
{
	(void)state;
	assert_int_equal(ada_producer_init_from_env(), 0);
	ada_emit(1, ATF_EVENT_CALL, 1); /* this thread owns a slot now */
	struct ada_arena *a = ada_producer_arena();
	struct atf_index_event *ev = ada_producer_tls.events;
	assert_non_null(a);
	assert_non_null(ev);
	assert_true(maps_in_test_dir() > 0);
	assert_int_equal(ada_producer_retire_arena(), 0);
	assert_null(ada_producer_arena());
	assert_int_equal(maps_in_test_dir(), 0);
	/* The thread's state still points into the range, as a frame open
	 * at the detach would: its event goes to private zero pages. */
	assert_int_equal(ev[0].function_id, 0);
	ada_emit(2, ATF_EVENT_RETURN, 1);
	assert_int_equal(ev[1].function_id, 2);
	ada_producer_reset_thread();
	assert_int_equal(ada_producer_reap_retired(), 1);
	assert_int_equal(ada_producer_reap_retired(), 0);
}

static uint64_t start_of(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	return n > 0 ? ada_stat_start_ticks(buf, (size_t)n) : 0;
}

/* ada_arena_open() of what is not a regular file: refused before any open
 * for reading or writing (a device's open has side effects, a FIFO's
 * releases a reader waiting for a writer). Whether it was opened is what
 * inotify says: IN_OPEN comes of a real open, not of an O_PATH one. */
static void test_open_refuses_non_regular(void **state)
{
	(void)state;
	struct ada_arena *a = NULL;
	char fifo[128], link[128], ev[4096];
	snprintf(fifo, sizeof(fifo), "%s/fifo.ring", test_dir);
	snprintf(link, sizeof(link), "%s/link.ring", test_dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink("/dev/zero", link), 0);
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, fifo, IN_OPEN) >= 0);
	assert_true(inotify_add_watch(in, "/dev/zero", IN_OPEN) >= 0);
	alarm(10); /* a blocking open of the FIFO ends the test */
	assert_int_equal(ada_arena_open("/dev/zero", &a), -EPROTO);
	assert_int_equal(ada_arena_open(fifo, &a), -EPROTO);
	assert_int_equal(ada_arena_open(link, &a), -EPROTO);
	assert_int_equal(ada_arena_open(test_dir, &a), -EISDIR);
	assert_int_equal(ada_arena_open("/nonexistent-ada-ring", &a), -ENOENT);
	alarm(0);
	assert_null(a);
	errno = 0;
	assert_int_equal(read(in, ev, sizeof(ev)), -1); /* no IN_OPEN: nothing was opened */
	assert_int_equal(errno, EAGAIN);
	close(in);
}

/* Running, stopped by a signal, gone, another process under the pid. */
static void test_recorder_state(void **state)
{
	(void)state;
	uint64_t me = start_of(getpid());
	assert_true(me != 0);
	assert_int_equal(ring_recorder_state(0, 0), RING_RECORDER_UNKNOWN);
	errno = 1234;
	assert_int_equal(ring_recorder_state(getpid(), me), RING_RECORDER_RUNNING);
	assert_int_equal(errno, 1234); /* kept: the hook context's rule */
	assert_int_equal(ring_recorder_state(getpid(), me + 1), RING_RECORDER_GONE);
	pid_t kid = fork();
	if (kid == 0) {
		for (;;)
			pause();
	}
	assert_true(kid > 0);
	uint64_t ks = start_of(kid);
	assert_int_equal(kill(kid, SIGSTOP), 0);
	int st;
	assert_int_equal(waitpid(kid, &st, WUNTRACED), kid);
	assert_int_equal(ring_recorder_state(kid, ks), RING_RECORDER_STOPPED);
	kill(kid, SIGKILL);
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_int_equal(ring_recorder_state(kid, ks), RING_RECORDER_GONE);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--after-exec") == 0)
		return after_exec();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_env_errors, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_create_then_exec_reopen, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fork_child_makes_its_own, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fork_child_never_replaces, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fork_chain_exact, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fork_child_arena_failed_counted, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_fs_quota_counted, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_ceiling_edquot_refused, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_mlock_refusal_reported, fx_setup, fx_teardown),
	    cmocka_unit_test(test_stat_start_ticks),
	    cmocka_unit_test_setup_teardown(test_fork_start_ticks, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_reused_pid_not_adopted, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_retire_gives_back, fx_setup, fx_teardown),
	    cmocka_unit_test(test_recorder_state),
	    cmocka_unit_test_setup_teardown(test_open_refuses_non_regular, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
