/*
 * The agent's start-up and its files (not hook context).
 *
 * agent_init() is the constructor of libada_agent.so: it runs on the main
 * thread before main(), and does nothing unless ADA_ARENA_DIR is set (so
 * the library can be loaded by anything without effect). Otherwise:
 * arena (ring.h), return trampoline, discovery + hooking of every image
 * (agent_install.c), the files under $ADA_SESSION_DIR/pid_<pid>/
 * (pid_<pid>/module_<ID>.syms, agent.json), fork/thread/crash handling
 * (agent_process.c), and last the switch that lets the handlers record.
 *
 * The agent prints nothing on success; a problem is one line on stderr
 * starting "ada-agent:" and the program runs on, traced or not.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "agent_printf_internal.h"
#include "fs.h"
#include "plancache_internal.h"
#include "ring.h"

/* Linker-defined bounds of the agent's own mapping. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

struct agent_state agent = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

void agent_log(const char *fmt, ...)
{
	static const char prefix[] = "ada-agent: ";
	char line[512];
	size_t k = sizeof(prefix) - 1;
	memcpy(line, prefix, k);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line + k, sizeof(line) - k - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - k - 2)
		n = (int)(sizeof(line) - k - 2);
	k += (size_t)n;
	line[k++] = '\n';
	/* One write, the prefix included: lines of concurrent processes (a
	 * shell's pipeline) do not interleave. */
	ssize_t w = write(2, line, k);
	(void)w;
}

uint64_t agent_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes name under dirfd through a private temporary file with an
 * unpredictable name, renamed into place (fs.h), so readers see whole
 * files and a planted link is never written through. fill returns 0 or
 * -errno. */
static int agent_write_file(int dirfd, const char *name, int (*fill)(FILE *, const void *),
                            const void *arg)
{
	char tmp[ADA_FS_TMP_NAME_MAX];
	int fd = -1, err = ada_fs_create_tmp(dirfd, name, O_WRONLY, tmp, &fd);
	if (err)
		return err;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
	} else {
		/* Ours alone (under agent.lock): no stream lock, and so no
		 * cleanup region per call, each a traced libc function passed
		 * under the guard once libc is hooked (agent_json_string). */
		__fsetlocking(f, FSETLOCKING_BYCALLER);
		err = fill(f, arg);
		if ((ferror(f) | fclose(f)) && !err)
			err = -EIO;
	}
	if (err) {
		unlinkat(dirfd, tmp, 0);
		return err;
	}
	return ada_fs_commit(dirfd, tmp, name);
}

/* What agent_fill_syms writes: the module and its body's name and length. */
struct agent_syms_args {
	struct agent_module *m;
	const char *body;
	size_t body_len;
	uint64_t hash;
};

static int agent_fill_syms(FILE *f, const void *arg)
{
	const struct agent_syms_args *a = arg;
	struct agent_module *m = a->m;
	struct ada_hook_module_info mi = {m->id, m->path, m->base};
	int err = ada_hook_syms_write_v2(f, &mi, &m->st, a->hash, a->body, a->body_len);
	struct stat st;
	m->syms_ino = !err && fstat(fileno(f), &st) == 0 ? st.st_ino : 0;
	m->table_xxh64 = a->hash;
	m->syms_written = !err;
	return err;
}

/* By hand: a forked child names its parent's files (agent_fork_defer). */
static void agent_syms_name(const struct agent_module *m, char *name, size_t cap)
{
	if (!agent_name_dec(name, cap, "module_", m->id, ".syms") && cap)
		name[0] = '\0';
}

static void agent_body_name(const struct agent_module *m, char *name, size_t cap)
{
	snprintf(name, cap, "module_%" PRIu32 ".body", m->id);
}

/* pid_<pid>/module_<ID>.body (shared by content, agent_syms.c), then the
 * module_<ID>.syms that names it (version 2, docs/format.md). */
static int agent_write_syms(int pid_fd, struct agent_module *m)
{
	char name[64], body[64];
	struct agent_syms_args a = {m, body, 0, 0};
	agent_syms_name(m, name, sizeof(name));
	agent_body_name(m, body, sizeof(body));
	uint64_t t0 = agent_now_ns();
	int err = agent_put_body(pid_fd, m, body, &a.hash, &a.body_len);
	if (!err)
		err = agent_write_file(pid_fd, name, agent_fill_syms, &a);
	if (!err)
		agent.syms_written++;
	m->ns_files = agent_now_ns() - t0;
	return err;
}

void agent_json_string(FILE *f, const char *s)
{
	putc_unlocked('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			putc_unlocked('\\', f);
			putc_unlocked(c, f);
		} else if (c < 0x20) {
			putc_unlocked('\\', f);
			putc_unlocked('u', f);
			agent_put_hex(f, c, 4);
		} else {
			putc_unlocked(c, f);
		}
	}
	putc_unlocked('"', f);
}

/* Length of the valid UTF-8 sequence at s (1 to 4), 0 when invalid. */
static size_t agent_utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80         ? 1
	           : (s[0] >> 5) == 6  ? 2
	           : (s[0] >> 4) == 14 ? 3
	           : (s[0] >> 3) == 30 ? 4
	                               : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] >> 6) != 2)
			return 0;
	return n;
}

/* A string the program chose (an argument): invalid UTF-8 becomes '?', so
 * agent.json stays JSON a reader accepts. */
static void agent_json_text(FILE *f, const char *s)
{
	char buf[4100];
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && o < sizeof(buf) - 5;) {
		size_t n = agent_utf8_len(p);
		if (!n) {
			buf[o++] = '?';
			p++;
			continue;
		}
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	buf[o] = '\0';
	agent_json_string(f, buf);
}

static void agent_json_skips(FILE *f, const uint64_t *sk)
{
	bool first = true;
	putc_unlocked('{', f);
	for (int r = 1; r < ADA_SKIP_REASON_COUNT; r++) {
		if (!sk[r])
			continue;
		agent_printf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", hook_skip_name(r), sk[r]);
		first = false;
	}
	putc_unlocked('}', f);
}

/* "build_id" (hex, or null) and "table_xxh64" (as in the .syms header,
 * or null before it is written): the manifest's modules[] copies them. */
static void agent_json_ids(FILE *f, const struct agent_module *m)
{
	agent_puts("\"build_id\": ", f);
	if (!m->st.build_id_len)
		agent_puts("null", f);
	for (size_t i = 0; i < m->st.build_id_len; i++) {
		if (!i)
			putc_unlocked('"', f);
		agent_put_hex(f, m->st.build_id[i], 2);
	}
	agent_puts(m->st.build_id_len ? "\", \"table_xxh64\": " : ", \"table_xxh64\": ", f);
	if (m->syms_written)
		agent_printf(f, "\"%016" PRIx64 "\", ", m->table_xxh64);
	else
		agent_puts("null, ", f);
	/* a module the program does not trace (--include) tells nothing */
	agent_printf(f, "\"fde_functions\": %zu, ", m->wanted ? m->st.n_fde : 0);
	/* of "installed": hooked in the padding form (docs/hooks.md) */
	agent_printf(f, "\"padding_form\": %zu, ", m->n_pad);
	/* of "installed": hooked in the far form (arm64, agent_far.c) */
	agent_printf(f, "\"far_form\": %zu, ", m->n_far);
}

static void agent_json_module(FILE *f, const struct agent_module *m)
{
	agent_printf(f, "    {\"module_id\": %" PRIu32 ", \"path\": ", m->id);
	agent_json_string(f, m->path);
	agent_printf(f, ", \"load_base\": \"0x%" PRIx64 "\", \"symbol_source\": \"%s\", ", m->base,
	             ada_symtab_source_name(m->st.source));
	agent_json_ids(f, m);
	agent_printf(
	    f, "\"unloaded\": %s, \"functions\": %zu, \"installed\": %" PRIu64 ", \"skipped\": ",
	    m->gone ? "true" : "false", m->st.count, m->installed);
	agent_json_skips(f, m->skipped);
	agent_printf(f, ", \"symbols_us\": %" PRIu64 ", \"patching_us\": %" PRIu64,
	             m->ns_symbols / 1000, m->ns_patching / 1000);
	agent_printf(f,
	             ", \"prepare_us\": %" PRIu64 ", \"xref_us\": %" PRIu64
	             ", \"trampolines_us\": %" PRIu64 ", \"patch_us\": %" PRIu64,
	             m->ns_prepare / 1000, m->ns_xref / 1000, m->ns_emit / 1000,
	             m->ns_apply / 1000);
	agent_printf(f,
	             ", \"cache_load_us\": %" PRIu64 ", \"verdicts_us\": %" PRIu64
	             ", \"files_us\": %" PRIu64,
	             m->ns_cache_load / 1000, m->ns_verdicts / 1000, m->ns_files / 1000);
	static const char *const cache_names[] = {"off", "hit", "miss"};
	static const char *const stext_names[] = {"patched", "shared", "written"};
	agent_printf(f,
	             ", \"plan_cache\": \"%s\", \"symtab_cache\": \"%s\", \"text\": \"%s\", "
	             "\"analysis_threads\": %d}",
	             cache_names[m->cache], cache_names[m->symcache], stext_names[m->stext],
	             m->par ? 2 : 1);
}

/* The plan cache's and the symbol-table cache's counts over the modules. */
static void agent_json_caches(FILE *f)
{
	uint64_t cache[3] = {0}, sym[3] = {0};
	for (size_t i = 0; i < agent.n_mods; i++) {
		cache[agent.mods[i].cache]++;
		sym[agent.mods[i].symcache]++;
	}
	agent_printf(f,
	             ",\n  \"plan_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
	             ", \"off\": %" PRIu64 ", \"untrusted\": %" PRIu64 ", \"rejected\": %" PRIu64
	             ", \"decoded\": %" PRIu64 ", \"file_checked\": %" PRIu64
	             ", \"fit_known\": %" PRIu64 "}",
	             cache[AGENT_CACHE_HIT], cache[AGENT_CACHE_MISS], cache[AGENT_CACHE_OFF],
	             agent.cache_untrusted, agent.cache_rejected, agent.cache_decoded,
	             agent.cache_file_checked, agent.cache_fit_known);
	agent_printf(f,
	             ",\n  \"symtab_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
	             ", \"off\": %" PRIu64 ", \"refused\": %" PRIu64 "}",
	             sym[AGENT_CACHE_HIT], sym[AGENT_CACHE_MISS], sym[AGENT_CACHE_OFF],
	             agent.symcache_refused);
	const uint64_t *w = agent.stext_why;
	agent_printf(
	    f,
	    ",\n  \"shared_text\": {\"mapped\": %" PRIu64 ", \"written\": %" PRIu64
	    ", \"off\": %" PRIu64 ", \"unplaced\": %" PRIu64 ", \"unchecked\": %" PRIu64
	    ", \"written_on\": %" PRIu64 ", \"refused\": %" PRIu64 ", \"failed\": %" PRIu64 "}",
	    agent.stext_mapped, agent.stext_written, w[AGENT_STEXT_WHY_OFF],
	    w[AGENT_STEXT_WHY_UNPLACED], w[AGENT_STEXT_WHY_UNCHECKED],
	    w[AGENT_STEXT_WHY_WRITTEN_ON], w[AGENT_STEXT_WHY_REFUSED], w[AGENT_STEXT_WHY_FAILED]);
}

static void agent_json_tail(FILE *f);

static void agent_json_body(FILE *f)
{
	uint64_t installed = 0, sk[ADA_SKIP_REASON_COUNT] = {0};
	for (size_t i = 0; i < agent.n_mods; i++) {
		installed += agent.mods[i].installed;
		for (int r = 0; r < ADA_SKIP_REASON_COUNT; r++)
			sk[r] += agent.mods[i].skipped[r];
	}
	agent_printf(f,
	             "{\n  \"pid\": %d,\n  \"hook_time_us\": {\"arena\": %" PRIu64
	             ", \"discovery\": %" PRIu64,
	             (int)getpid(), agent.ns_arena / 1000, agent.ns_discovery / 1000);
	agent_printf(f,
	             ", \"symbols\": %" PRIu64 ", \"patching\": %" PRIu64 ", \"files\": %" PRIu64,
	             agent.ns_symbols / 1000, agent.ns_patching / 1000, agent.ns_files / 1000);
	agent_printf(f,
	             ", \"total\": %" PRIu64 "},\n  \"installed\": %" PRIu64 ",\n  \"skipped\": ",
	             agent.ns_total / 1000, installed);
	agent_json_skips(f, sk);
	agent_json_caches(f);
	uint64_t par = 0;
	for (size_t i = 0; i < agent.n_mods; i++)
		par += agent.mods[i].par;
	agent_printf(f,
	             ",\n  \"analysis_threads\": {\"two_threads\": %" PRIu64
	             ", \"helper_failed\": %" PRIu64 "}",
	             par, agent.par_fallback);
	struct hook_patch_cow cow;
	hook_patch_cow_stats(&cow);
	agent_printf(f,
	             ",\n  \"text_pages\": {\"dropped\": %" PRIu64 ", \"kept\": %" PRIu64
	             ", \"failed\": %" PRIu64 ", \"kernel_refused\": %" PRIu64
	             ", \"prefaulted\": %" PRIu64 ", \"populate_refused\": %" PRIu64
	             ", \"whole\": %" PRIu64 "}",
	             cow.dropped, cow.kept, cow.failed, cow.kernel_refused, cow.prefaulted,
	             cow.populate_refused, cow.whole);
	agent_printf(f,
	             ",\n  \"symbol_files\": {\"written\": %" PRIu64 ", \"shared\": %" PRIu64
	             ", \"share_failed\": %" PRIu64 ", \"bodies_written\": %" PRIu64
	             ", \"bodies_shared\": %" PRIu64 ", \"bodies_refused\": %" PRIu64
	             ", \"bodies_unstored\": %" PRIu64 "}",
	             agent.syms_written, agent.syms_shared, agent.syms_share_failed,
	             agent.syms_bodies_written, agent.syms_bodies_shared, agent.syms_bodies_refused,
	             agent.syms_bodies_unstored);
	/* This one counted: the write it is part of. */
	agent_printf(f, ",\n  \"agent_json_writes\": %" PRIu64, agent.json_writes + 1);
	uint64_t un[AGENT_UNTRACED_COUNT];
	agent_untraced_counts(un);
	agent_printf(f,
	             ",\n  \"untraced_calls\": {\"agent_work\": %" PRIu64
	             ", \"shadow_full\": %" PRIu64 ", \"nested_signal\": %" PRIu64
	             ", \"unmatched_return\": %" PRIu64 ", \"thread_exit\": %" PRIu64
	             ", \"recorder_gone\": %" PRIu64 "}",
	             un[0], un[1], un[2], un[3], un[AGENT_UNTRACED_THREAD_EXIT],
	             un[AGENT_UNTRACED_RECORDER_GONE]);
	agent_printf(f,
	             ",\n  \"unmatched_returns\": {\"returns\": %" PRIu64
	             ", \"threads_stopped\": %" PRIu64 "}",
	             un[4], un[5]);
	agent_printf(
	    f, ",\n  \"stack_switches\": {\"switches\": %" PRIu64 ", \"frames_cut\": %" PRIu64 "}",
	    un[6], un[7]);
	uint64_t gone_drops;
	bool gone = ada_producer_drain_gone(&gone_drops);
	agent_printf(f,
	             ",\n  \"recorder_gone\": {\"noticed\": %s, \"drain_lag_drops\": %" PRIu64 "}",
	             gone ? "true" : "false", gone_drops);
	agent_count_json(f);
	if (agent_count_is_exiting())
		agent_budget_hot_json(f);
	if (agent.fork_why) { /* a forked child that wrote its files itself: why */
		agent_puts(",\n  \"fork_files\": ", f);
		agent_json_string(f, agent.fork_why);
	}
	if (agent.attached) /* threads ada attach moved into a trampoline */
		agent_printf(f, ",\n  \"moved_at_attach\": %" PRIu64, agent.moved_at_attach);
	agent_printf(f, ",\n  \"trampoline_bytes\": %zu,\n  \"modules\": [\n",
	             agent.mem ? hook_mem_mapped_bytes(agent.mem) : (size_t)0);
	agent_json_tail(f);
}

/* agent.json's modules, the images not hooked and argv, to its end. */
static void agent_json_tail(FILE *f)
{
	for (size_t i = 0; i < agent.n_mods; i++) {
		agent_json_module(f, &agent.mods[i]);
		agent_puts(i + 1 < agent.n_mods ? ",\n" : "\n", f);
	}
	agent_puts("  ],\n  \"not_hooked\": [", f);
	for (size_t i = 0; i < agent.n_ign; i++) {
		agent_puts(i ? ", {\"path\": " : "{\"path\": ", f);
		agent_json_string(f, agent.ign[i].path);
		agent_printf(f, ", \"why\": \"%s\"}", agent.ign[i].why);
	}
	agent_puts("],\n  \"argv\": [", f);
	for (size_t i = 0; agent.env.argv && agent.env.argv[i]; i++) {
		agent_puts(i ? ", " : "", f);
		agent_json_text(f, agent.env.argv[i]);
	}
	agent_puts("]\n}\n", f);
}

static int agent_fill_json(FILE *f, const void *arg)
{
	(void)arg;
	agent_json_body(f);
	struct stat st;
	agent.json_ino = fstat(fileno(f), &st) == 0 ? st.st_ino : 0;
	return 0;
}

/* pid_<pid> under the session sfd, opened (and made, 0700, when the drain
 * has not yet) without following a link. The module files go there too
 * (module_<ID>.syms and .body): no directory of their own, whose inode
 * each process paid (docs/internals.md, "Session layout"). */
static int agent_open_dirs_at(int sfd, int *pid_fd)
{
	char name[32];
	snprintf(name, sizeof(name), "pid_%d", (int)getpid());
	*pid_fd = -1;
	return ada_fs_mkdir(sfd, name, 0, pid_fd);
}

/* pid_<pid>/ once this process wrote its files there (files_pid): opened
 * by its path, without the session's open and the mkdirat that would find
 * it there (three system calls of a forked child's agent.json at exit),
 * the last component not followed and the owner checked as
 * ada_fs_mkdir() checks it. -ENOENT: not yet ours, or gone. */
static int agent_open_pid_dir_again(int *pid_fd)
{
	char path[PATH_MAX + 32];
	if (agent.files_pid != getpid())
		return -ENOENT;
	int n = snprintf(path, sizeof(path), "%s/pid_%d", agent.session_dir, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	int fd = -1, err = ada_fs_open_dir(AT_FDCWD, path, &fd);
	if (err)
		return err;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	*pid_fd = fd;
	return 0;
}

/* agent_open_dirs_at() in the session. The session is opened afresh on
 * each call rather than kept: the program may close or reuse any
 * descriptor the agent held. */
static int agent_open_dirs(int *pid_fd)
{
	*pid_fd = -1;
	if (agent_open_pid_dir_again(pid_fd) == 0)
		return 0;
	int sfd = -1, err = ada_fs_open_dir(AT_FDCWD, agent.session_dir, &sfd);
	if (!err)
		err = agent_open_dirs_at(sfd, pid_fd);
	if (sfd >= 0)
		close(sfd);
	return err;
}

/* pid_<pid>/ is not ours when the kernel gave us the pid of a process the
 * recorder had not finished yet (ring.h, ada_arena_pid_reused): the
 * recorder tells and counts us as not recorded, and the files there are
 * the earlier process's. */
static bool agent_pid_dir_ours(void)
{
	return agent.session_dir[0] && !ada_arena_pid_reused(ada_producer_arena());
}

/* agent.json (when json), then the one warning a process gives about its
 * files, and pid_<pid>/ closed. */
static int agent_files_done(int err, bool json, int pid_fd)
{
	if (!err && json) {
		err = agent_write_file(pid_fd, "agent.json", agent_fill_json, NULL);
		if (!err) {
			agent.json_pid = getpid();
			agent.json_writes++;
		} else {
			agent.json_ino = 0; /* no file of ours to link */
		}
	}
	/* Once per process: the files are rewritten on every dlopen. */
	static pid_t warned;
	if (err && warned != getpid()) {
		warned = getpid();
		agent_log("cannot write the symbol files under %s/pid_%d (%s)", agent.session_dir,
		          (int)getpid(), strerror(-err));
	}
	if (pid_fd >= 0)
		close(pid_fd);
	return err;
}

static void agent_fork_take_back(const char *why);

/* The symbol files of every module (all_modules) or of those from
 * first_new on, then agent.json when json. */
static int agent_write_files_json(bool all_modules, size_t first_new, bool json)
{
	if (!agent_pid_dir_ours())
		return 0;
	agent_fork_take_back("it wrote files later (a dlopen, its exit)");
	uint64_t t0 = agent_now_ns();
	int pid_fd, err = agent_open_dirs(&pid_fd);
	for (size_t i = all_modules ? 0 : first_new; !err && i < agent.n_mods; i++) {
		if (!agent.mods[i].gone)
			err = agent_write_syms(pid_fd, &agent.mods[i]);
	}
	if (!err)
		agent.files_pid = getpid();
	agent.ns_files += agent_now_ns() - t0;
	return agent_files_done(err, json, pid_fd);
}

int agent_write_files(bool all_modules, size_t first_new)
{
	return agent_write_files_json(all_modules, first_new, true);
}

int agent_write_syms_from(size_t first_new)
{
	return agent_write_files_json(false, first_new, false);
}

/* Links module m's .syms and .body from the pid_<N>/ of the process that
 * wrote them (src_fd) into ours (pid_fd), and checks that what got linked
 * is that very file (its inode): the name could have been replaced
 * meanwhile (a dlopen rewrote it, or the parent is gone and its pid was
 * reused). */
static bool agent_link_syms(int src_fd, int pid_fd, const struct agent_module *m)
{
	char name[64];
	agent_syms_name(m, name, sizeof(name));
	char body[64];
	agent_body_name(m, body, sizeof(body));
	/* The body first: a reader that sees the .syms finds it. */
	if (!m->syms_written || !m->syms_ino ||
	    (linkat(src_fd, body, pid_fd, body, 0) != 0 && errno != EEXIST))
		return false;
	/* There already: the recorder linked it from this process's note
	 * (fork_files.c) before the note was taken back. */
	bool there = linkat(src_fd, name, pid_fd, name, 0) != 0;
	if (there && errno != EEXIST)
		return false;
	struct stat st;
	if (fstatat(pid_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_ino == m->syms_ino)
		return true;
	if (!there)
		unlinkat(pid_fd, name, 0);
	return false;
}

/* The parent's pid_<files_pid>/ under the session sfd, where its module
 * files are, opened without following a link; -1 when there is none. */
static int agent_open_parent_dir(int sfd)
{
	char name[32];
	int fd = -1;
	if (agent.files_pid <= 0 || agent.files_pid == getpid())
		return -1;
	snprintf(name, sizeof(name), "pid_%d", (int)agent.files_pid);
	return ada_fs_open_dir(sfd, name, &fd) == 0 ? fd : -1;
}

/* A forked child's agent.json at the fork: its parent's file (src_pfd,
 * the parent's pid_<N>/) linked into ours, when the child has nothing of
 * its own to say yet but counts at zero: every symbol file linked, no
 * count-only section (whose counts restart at the fork). The child writes
 * its own at exit; one that ends without (killed, _exit) is made its own
 * by the recorder from this one (src/recorder/agent_inherit.c, which
 * knows it by its "pid"). Checked to be the very file the parent wrote
 * (its inode), as agent_link_syms() checks. False: write our own. */
static bool agent_link_json(int src_pfd, int pid_fd)
{
	/* agent.json is the parent's own only when it wrote it there too. */
	if (src_pfd < 0 || pid_fd < 0 || agent.json_pid != agent.files_pid || !agent.json_ino ||
	    agent.syms_written || agent.syms_share_failed || agent_count_any() ||
	    linkat(src_pfd, "agent.json", pid_fd, "agent.json", 0) != 0)
		return false;
	struct stat st;
	if (fstatat(pid_fd, "agent.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_ino == agent.json_ino) {
		agent.json_pid = getpid();
		return true;
	}
	unlinkat(pid_fd, "agent.json", 0);
	return false;
}

/* The forked child's files written now, by itself: its parent's linked
 * where they are the parent's (by inode), its own written where not;
 * agent.json linked or written when json. */
static int agent_write_files_forked_now(bool json)
{
	uint64_t t0 = agent_now_ns();
	/* The session once for both (a fork's start opens what it must). */
	int sfd = -1, src_fd = -1, pid_fd = -1;
	int err = ada_fs_open_dir(AT_FDCWD, agent.session_dir, &sfd);
	if (!err) {
		src_fd = agent_open_parent_dir(sfd);
		err = agent_open_dirs_at(sfd, &pid_fd);
		close(sfd);
	}
	for (size_t i = 0; !err && i < agent.n_mods; i++) {
		struct agent_module *m = &agent.mods[i];
		if (m->gone)
			continue;
		if (src_fd >= 0 && agent_link_syms(src_fd, pid_fd, m)) {
			agent.syms_shared++;
			continue;
		}
		agent.syms_share_failed += m->syms_written;
		err = agent_write_syms(pid_fd, m);
	}
	bool linked = !err && json && agent_link_json(src_fd, pid_fd);
	if (src_fd >= 0)
		close(src_fd);
	if (!err)
		agent.files_pid = getpid();
	agent.ns_files += agent_now_ns() - t0;
	return agent_files_done(err, json && !linked, pid_fd);
}

/* Whether pid_<files_pid>/name is the regular file of inode ino (one
 * fstatat by path: no directory opened). The last component is not
 * followed; a link planted higher up leads to that very file or fails. */
static bool agent_parent_file_is(const char *name, ino_t ino)
{
	size_t d = strlen(agent.session_dir), k = strlen(name);
	/* Sized to the name (at most PATH_MAX + 96, as ever): a forked
	 * child's stack pages are its parent's, a copy-on-write fault each. */
	size_t need = d + sizeof("/pid_/") + 20 + k;
	if (need > PATH_MAX + 96 || !ino)
		return false;
	char path[need];
	struct stat st;
	return agent_pid_path(path, need, agent.session_dir, agent.files_pid, name) &&
	       fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_ino == ino;
}

/* The note's modules: every loaded module's file, the parent's own
 * (its inode, looked at now). NULL, or why not. */
static const char *agent_fork_note_modules(struct ada_fork_note *n)
{
	char name[64];
	for (size_t i = 0; i < agent.n_mods; i++) {
		const struct agent_module *m = &agent.mods[i];
		if (m->gone)
			continue;
		if (!m->syms_written || !m->syms_ino)
			return "a module without a symbol file of its parent's";
		if (n->n_modules == ADA_FORK_MODULES_MAX)
			return "more modules than a note holds";
		agent_syms_name(m, name, sizeof(name));
		if (!agent_parent_file_is(name, m->syms_ino))
			return "its parent's symbol file was replaced";
		n->mods[n->n_modules++] = (struct ada_fork_module){m->id, 0, m->syms_ino};
	}
	return NULL;
}

/* A forked child's files left to the recorder: the arena notes whose
 * fork this is and which of the parent's files are this process's (the
 * same address space, so the same tables), checked to be the files the
 * parent wrote (one fstatat each); the recorder links them into
 * pid_<pid>/ when it reads the note (src/recorder/fork_files.c). Nothing
 * is written here. NULL when noted, else why not (the child then writes
 * them itself, as before: agent.json's "fork_files"). */
static const char *agent_fork_defer(void)
{
	struct ada_arena *a = ada_producer_arena();
	struct ada_fork_note n;
	memset(&n, 0, sizeof(n));
	/* agent_hot.pid: getpid(), set by the child's fork handler. */
	if (!a || agent.files_pid <= 0 || agent.files_pid == agent_hot.pid)
		return "its parent wrote no symbol files";
	/* A count-only section: counts of its own from the start (restart
	 * at the fork), in an agent.json of its own. */
	if (agent_count_any())
		return "count-only functions";
	if (agent.json_pid != agent.files_pid || !agent.json_ino)
		return "its parent's agent.json is elsewhere";
	n.parent_pid = agent.files_pid;
	n.next_id = agent.next_id;
	n.json_ino = (uint64_t)agent.json_ino;
	const char *why = agent_fork_note_modules(&n);
	if (!why && !agent_parent_file_is("agent.json", agent.json_ino))
		why = "its parent's agent.json was replaced";
	if (why)
		return why;
	ada_arena_fork_note(a, &n);
	agent.fork_noted_pid = agent_hot.pid;
	agent.fork_noted_mods = n.n_modules;
	return NULL;
}

int agent_write_files_forked(void)
{
	/* This process's counts start now: what the parent wrote is its own. */
	agent.syms_written = agent.syms_shared = agent.syms_share_failed = 0;
	agent.syms_bodies_written = agent.syms_bodies_shared = 0;
	agent.syms_bodies_refused = agent.syms_bodies_unstored = 0;
	agent.json_writes = 0;
	agent.fork_noted_pid = 0;
	if (!agent_pid_dir_ours())
		return 0;
	agent.fork_why = agent_fork_defer();
	return agent.fork_why ? agent_write_files_forked_now(true) : 0;
}

/* A noted child that writes files after all (a dlopen; an exit with more
 * than counts to say): the note is settled first, so that the recorder
 * and the child never both make pid_<pid>/. Made by the recorder
 * already: its links are there. Else the child makes them now. */
static void agent_fork_take_back(const char *why)
{
	if (agent.fork_noted_pid != getpid())
		return;
	agent.fork_noted_pid = 0;
	struct ada_arena *a = ada_producer_arena();
	uint32_t was = a ? ada_arena_fork_settle(a, ADA_FORK_TAKEN_BACK) : ADA_FORK_REFUSED;
	if (was == ADA_FORK_MADE) {
		agent.syms_shared = agent.fork_noted_mods;
		agent.files_pid = getpid();
		return;
	}
	if (was == ADA_FORK_REFUSED)
		agent.fork_why = "the recorder refused its note";
	else if (!agent.fork_why) /* agent_fork_exit() may have said more */
		agent.fork_why = why;
	(void)agent_write_files_forked_now(false);
}

_Static_assert(ADA_FORK_EXIT_COUNTS == AGENT_UNTRACED_COUNT, "the exit note's counts");

/* What the process's agent.json would say at its exit that its last one
 * did not: the counts an exit note carries (ring_fork.h). */
static void agent_exit_counts(struct ada_fork_exit *e)
{
	memset(e, 0, sizeof(*e));
	agent_untraced_counts(e->untraced);
	e->gone_noticed = ada_producer_drain_gone(&e->gone_drops);
}

/* A noted child's exit: when its agent.json would differ from its
 * parent's only by counts, those go into its arena (the recorder folds
 * them into the agent.json it made) and no file is written. False: write
 * agent.json (fork_why says why). */
static bool agent_fork_exit(void)
{
	struct ada_arena *a = ada_producer_arena();
	/* agent_hot.pid is getpid() here (process_at_exit checked it). */
	if (!agent.fork_noted_pid || agent.fork_noted_pid != agent_hot.pid || !a)
		return false;
	if (agent_count_any() || agent_budget_hot_any()) {
		agent.fork_why = agent_count_any() ? "count-only functions at its exit"
		                                   : "hot functions at its exit";
		return false;
	}
	struct ada_fork_exit e;
	agent_exit_counts(&e);
	ada_arena_fork_exit(a, &e);
	/* After the counts: a note the recorder refused meanwhile makes no
	 * agent.json, so this process writes its own after all. */
	uint32_t st = ada_arena_fork_state(a);
	return st == ADA_FORK_NOTED || st == ADA_FORK_MADE;
}

/* A process whose agent.json is its own and whose run changed only
 * counts since it wrote it (no count-only function, no budget, no hot
 * function, not attached; a dlopen writes it again at once): the
 * counts go into its arena, and the recorder folds them into that file
 * when the process is gone (src/recorder/manifest.c). Writing it again
 * at the exit -- the text, a new file, the rename over the old -- was a
 * tenth of an exec'd child's start-up and exit (docs/benchmarks.md).
 * False: write it (no arena, not the file this process wrote, or the
 * recorder gone). */
static bool agent_exit_note(void)
{
	struct ada_arena *a = ada_producer_arena();
	if (!a || agent.attached || agent.json_pid != agent_hot.pid || !agent.json_writes ||
	    !agent.json_ino || agent_count_any() || agent_budget_hot_any() || !agent_pid_dir_ours())
		return false;
	struct ada_fork_exit e;
	agent_exit_counts(&e);
	if (e.gone_noticed)
		return false; /* nobody to fold them: the file says it */
	ada_arena_exit_note(a, &e);
	return true;
}

int agent_write_files_at_exit(void)
{
	if (agent_fork_exit() || agent_exit_note())
		return 0;
	return agent_write_files(false, agent.n_mods);
}

/* After exec the new image writes into the same pid_<pid>/ as the old one,
 * whose events keep their module ids: continue numbering after the
 * highest module_<ID>.syms already there. */
static void agent_continue_ids(void)
{
	char dir[PATH_MAX + 48];
	if (!agent_pid_dir_ours())
		return;
	snprintf(dir, sizeof(dir), "%s/pid_%d", agent.session_dir, (int)getpid());
	/* A forked image's modules the recorder has not linked yet: its note
	 * says how far their ids go (the program's own arena: trusted). */
	struct ada_arena *a = ada_producer_arena();
	if (a && ada_arena_fork_state(a) != ADA_FORK_NONE) {
		struct ada_fork_note n;
		ada_arena_fork_note_read(a, &n);
		if (n.next_id > agent.next_id && n.next_id < (1u << 24))
			agent.next_id = n.next_id;
	}
	DIR *d = ada_fs_opendir(AT_FDCWD, dir);
	if (!d)
		return;
	struct dirent *de;
	for (unsigned n = 0; n < ADA_FS_WALK_MAX_ENTRIES && (de = readdir(d)) != NULL; n++) {
		unsigned id;
		char tail;
		if (sscanf(de->d_name, "module_%u.sym%c", &id, &tail) == 2 && tail == 's' &&
		    id >= agent.next_id)
			agent.next_id = id + 1;
	}
	closedir(d);
}

/* secure_getenv: in a set-uid or set-gid program the environment is its
 * caller's, and it must not choose where the agent writes. */
static char *agent_env_copy(const char *name)
{
	const char *v = secure_getenv(name);
	return v ? strdup(v) : NULL;
}

/* argv, copied: at most 256 arguments of at most 4096 bytes each shown
 * (the manifest's "program"; the rest is cut, never read past). */
static char **agent_argv_copy(int argc, char **argv)
{
	size_t n = argc > 0 && argv ? (size_t)argc : 0;
	n = n > 256 ? 256 : n;
	char **v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n && argv[i]; i++)
		v[i] = strndup(argv[i], 4096);
	return v;
}

static int agent_argc;
static char **agent_argv;

/* Everything the agent will ever need from the environment, read now
 * (agent_internal.h, struct agent_env). */
static void agent_env_read(void)
{
	struct agent_env *e = &agent.env;
	e->argv = agent_argv_copy(agent_argc, agent_argv);
	e->ld_preload = agent_env_copy("LD_PRELOAD");
	e->arena_dir = agent_env_copy("ADA_ARENA_DIR");
	e->session_dir = agent_env_copy("ADA_SESSION_DIR");
	e->ring_config = agent_env_copy("ADA_RING_CONFIG");
	e->hook_config = agent_env_copy("ADA_HOOK_CONFIG");
	e->plan_cache = agent_env_copy("ADA_PLAN_CACHE");
	e->debug_root = agent_env_copy("ADA_DEBUG_ROOT");
	if (plan_cache_dir(e->plan_cache, agent.cache_dir, sizeof(agent.cache_dir)) != 0)
		agent.cache_dir[0] = '\0'; /* no cache */
}

static int agent_read_config(void)
{
	if (!agent.attached) /* ada attach wrote agent.env (agent_attach.c) */
		agent_env_read();
	const char *txt = agent.env.hook_config, *sess = agent.env.session_dir;
	if (sess && strlen(sess) < sizeof(agent.session_dir))
		strcpy(agent.session_dir, sess);
	int err = ada_hook_config_parse(txt ? txt : "", txt ? strlen(txt) : 0, &agent.cfg);
	if (err)
		agent_log("bad ADA_HOOK_CONFIG \"%s\" (%s); nothing is traced", txt,
		          strerror(-err));
	/* A test's way to the count blocks' pointer form (ada record sets
	 * ADA_HOOK_CONFIG itself): what a program that uses %gs gets. */
	if (secure_getenv("ADA_TEST_COUNT_NO_GS"))
		agent.cfg.count_gs = false;
	/* Likewise the inline count blocks without the copy form. */
	if (secure_getenv("ADA_TEST_COUNT_NO_COPY"))
		agent.cfg.count_copy = false;
	/* Likewise --count-only without the live counts' thread. */
	if (secure_getenv("ADA_TEST_COUNT_NO_LIVE"))
		agent.cfg.count_live = false;
	/* A kernel before 5.14 (no MADV_POPULATE_*): every populate refused. */
	if (secure_getenv("ADA_TEST_NO_POPULATE"))
		hook_mem_populate_refuse(true);
	return err;
}

static int agent_start(void)
{
	int err = agent_read_config();
	if (err)
		return err;
	agent_exec_setup();
	agent_wait_setup();
	uint64_t t0 = agent_now_ns();
	err = ada_producer_init(agent.env.arena_dir, agent.env.ring_config);
	agent.ns_arena = agent_now_ns() - t0;
	if (err) {
		/* Refused: the recording's shared-memory ceiling, which the
		 * recorder counts and tells once for all such processes, or
		 * the recording ended (a program that outlives it runs
		 * untraced). Any other error -- a file system's quota, EDQUOT
		 * too -- is counted in the budget page and said here. */
		if (!ada_producer_refused())
			agent_log("cannot open the arena in %s (%s); nothing is traced",
			          agent.env.arena_dir, strerror(-err));
		return err;
	}
	agent_hot.pid = getpid();
	agent_hot.xsave_size = hook_arch_xsave_size(); /* handlers.c, handlers_fpu */
	agent_hot.self_lo = (uint64_t)(uintptr_t)__ehdr_start;
	agent_hot.self_len = (uint64_t)(uintptr_t)_end - agent_hot.self_lo;
	/* The detail lane needs the config's consent and a detail ring. */
	const struct ada_arena *arena = ada_producer_arena();
	agent_hot.detail_on =
	    agent.cfg.detail && arena && ada_arena_config_of(arena)->detail_bytes != 0;
	agent_hot.detail_stack = agent.cfg.stack_bytes;
	agent_hot.detail_fp = agent.cfg.detail_fp;
	agent_hot.detail_meta_call = ada_drec_meta(agent.cfg.detail_fp ? ATF_DETAIL_FUNCTION_CALL_FP
	                                                               : ATF_DETAIL_FUNCTION_CALL,
	                                           0, agent_hot.detail_stack);
	agent_hot.detail_words = (agent_hot.detail_stack + 7) / 8;
	agent_hot.detail_call_len =
	    ((agent.cfg.detail_fp ? ADA_DREC_CALL_FP_WORDS : ADA_DREC_CALL_WORDS) +
	     agent_hot.detail_words) *
	    8;
	if (agent_hot.detail_on)
		agent_detail_set_init();
	agent_keysym_attach();
	agent_continue_ids();
	err = hook_mem_new(&agent.mem);
	if (!err)
		err = agent_make_return_trampoline();
	if (err) {
		agent_log("cannot map the return trampoline (%s); nothing is traced",
		          strerror(-err));
		return err;
	}
	agent.cache_agent_hash = plan_cache_self_hash((uint64_t)(uintptr_t)&agent_start);
	agent_scan();
	agent_note_main_stack(); /* while the scan's maps snapshot holds */
	err = agent_process_setup();
	if (err)
		return err;
	/* The symbol files; agent.json once, by agent_boot with the total. */
	agent_write_files_json(true, 0, false);
	return 0;
}

int agent_boot(void)
{
	uint64_t t0 = agent_now_ns();
	agent_guard_enter();
	pthread_mutex_lock(&agent.lock);
	int err = agent_start();
	agent.ns_total = agent_now_ns() - t0;
	if (!err) {
		agent_write_files(false, agent.n_mods); /* agent.json again, with the total */
		/* Before active: the budget thread's start is not traced (it
		 * would claim a ring slot). Not under ada attach, whose stopped
		 * threads are the program's: there it starts after. */
		if (!agent.attached)
			agent_budget_start(true);
		agent_hot.active = 1;
	}
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
	if (!err && agent.attached)
		agent_budget_start(false);
	return err;
}

/* The agent is linked with -z initfirst (src/hook/CMakeLists.txt): the
 * loader calls this before the executable's .preinit_array and before any
 * other library's initialiser, so functions that run there are hooked when
 * they run (issue 14). libc's own initialisers have not run yet then, and
 * environ is still NULL: the loader hands the environment to every
 * initialiser, and libc will set environ to that same array when its turn
 * comes. Where the flag is not honoured (another loader, a second initfirst
 * library) this runs at the usual time, after them, with environ set. */
__attribute__((constructor)) static void agent_init(int argc, char **argv, char **envp)
{
	agent_argc = argc;
	agent_argv = argv;
	if (!environ && envp)
		environ = envp;
	if (!secure_getenv("ADA_ARENA_DIR"))
		return;
	agent_boot();
}
