/*
 * The agent's start-up and its files (not hook context).
 *
 * agent_init() is the constructor of libada_agent.so: it runs on the main
 * thread before main(), and does nothing unless ADA_ARENA_DIR is set (so
 * the library can be loaded by anything without effect). Otherwise:
 * arena (ring.h), return trampoline, discovery + hooking of every image
 * (agent_install.c), the files under $ADA_SESSION_DIR/pid_<pid>/
 * (modules/module_<ID>.syms, agent.json), fork/thread/crash handling
 * (agent_process.c), and last the switch that lets the handlers record.
 *
 * The agent prints nothing on success; a problem is one line on stderr
 * starting "ada-agent:" and the program runs on, traced or not.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "plancache_internal.h"
#include "ring.h"

/* Linker-defined bounds of the agent's own mapping. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

struct agent_state agent = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

void agent_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write: lines of concurrent processes do not interleave. */
	ssize_t w = write(2, "ada-agent: ", 11);
	w = write(2, line, (size_t)n);
	(void)w;
}

uint64_t agent_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int agent_mkdir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Writes via a temporary name and renames, so readers see whole files. */
static int agent_write_syms(const char *dir, const struct agent_module *m)
{
	char path[PATH_MAX + 128], tmp[PATH_MAX + 144];
	snprintf(path, sizeof(path), "%s/module_%" PRIu32 ".syms", dir, m->id);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	struct ada_hook_module_info mi = {m->id, m->path, m->base};
	int err = ada_hook_syms_write(f, &mi, &m->st);
	if (fclose(f) != 0 && !err)
		err = -EIO;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static void agent_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void agent_json_skips(FILE *f, const uint64_t *sk)
{
	bool first = true;
	fputc('{', f);
	for (int r = 1; r < ADA_SKIP_REASON_COUNT; r++) {
		if (!sk[r])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", hook_skip_name(r), sk[r]);
		first = false;
	}
	fputc('}', f);
}

static void agent_json_module(FILE *f, const struct agent_module *m)
{
	fprintf(f, "    {\"module_id\": %" PRIu32 ", \"path\": ", m->id);
	agent_json_string(f, m->path);
	fprintf(f, ", \"load_base\": \"0x%" PRIx64 "\", \"symbol_source\": \"%s\", ", m->base,
	        ada_symtab_source_name(m->st.source));
	fprintf(f,
	        "\"unloaded\": %s, \"functions\": %zu, \"installed\": %" PRIu64 ", \"skipped\": ",
	        m->gone ? "true" : "false", m->st.count, m->installed);
	agent_json_skips(f, m->skipped);
	fprintf(f, ", \"symbols_us\": %" PRIu64 ", \"patching_us\": %" PRIu64, m->ns_symbols / 1000,
	        m->ns_patching / 1000);
	fprintf(f,
	        ", \"prepare_us\": %" PRIu64 ", \"xref_us\": %" PRIu64
	        ", \"trampolines_us\": %" PRIu64 ", \"patch_us\": %" PRIu64,
	        m->ns_prepare / 1000, m->ns_xref / 1000, m->ns_emit / 1000, m->ns_apply / 1000);
	static const char *const cache_names[] = {"off", "hit", "miss"};
	fprintf(f, ", \"plan_cache\": \"%s\"}", cache_names[m->cache]);
}

static void agent_json_body(FILE *f)
{
	uint64_t installed = 0, sk[ADA_SKIP_REASON_COUNT] = {0}, cache[3] = {0};
	for (size_t i = 0; i < agent.n_mods; i++) {
		installed += agent.mods[i].installed;
		cache[agent.mods[i].cache]++;
		for (int r = 0; r < ADA_SKIP_REASON_COUNT; r++)
			sk[r] += agent.mods[i].skipped[r];
	}
	fprintf(f,
	        "{\n  \"pid\": %d,\n  \"hook_time_us\": {\"arena\": %" PRIu64
	        ", \"discovery\": %" PRIu64,
	        (int)getpid(), agent.ns_arena / 1000, agent.ns_discovery / 1000);
	fprintf(f, ", \"symbols\": %" PRIu64 ", \"patching\": %" PRIu64 ", \"files\": %" PRIu64,
	        agent.ns_symbols / 1000, agent.ns_patching / 1000, agent.ns_files / 1000);
	fprintf(f, ", \"total\": %" PRIu64 "},\n  \"installed\": %" PRIu64 ",\n  \"skipped\": ",
	        agent.ns_total / 1000, installed);
	agent_json_skips(f, sk);
	fprintf(f,
	        ",\n  \"plan_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
	        ", \"off\": %" PRIu64 "}",
	        cache[AGENT_CACHE_HIT], cache[AGENT_CACHE_MISS], cache[AGENT_CACHE_OFF]);
	uint64_t un[3];
	agent_untraced_counts(un);
	fprintf(f,
	        ",\n  \"untraced_calls\": {\"agent_work\": %" PRIu64 ", \"shadow_full\": %" PRIu64
	        ", \"nested_signal\": %" PRIu64 "}",
	        un[0], un[1], un[2]);
	fprintf(f, ",\n  \"trampoline_bytes\": %zu,\n  \"modules\": [\n",
	        agent.mem ? hook_mem_mapped_bytes(agent.mem) : (size_t)0);
	for (size_t i = 0; i < agent.n_mods; i++) {
		agent_json_module(f, &agent.mods[i]);
		fputs(i + 1 < agent.n_mods ? ",\n" : "\n", f);
	}
	fputs("  ],\n  \"not_hooked\": [", f);
	for (size_t i = 0; i < agent.n_ign; i++) {
		fputs(i ? ", {\"path\": " : "{\"path\": ", f);
		agent_json_string(f, agent.ign[i].path);
		fprintf(f, ", \"why\": \"%s\"}", agent.ign[i].why);
	}
	fputs("]\n}\n", f);
}

static int agent_write_json(const char *pid_dir)
{
	char path[PATH_MAX + 128], tmp[PATH_MAX + 144];
	snprintf(path, sizeof(path), "%s/agent.json", pid_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	agent_json_body(f);
	int err = (ferror(f) | fclose(f)) ? -EIO : 0;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int agent_write_files(bool all_modules, size_t first_new)
{
	char pid_dir[PATH_MAX + 32], mod_dir[PATH_MAX + 48];
	if (!agent.session_dir[0])
		return 0;
	uint64_t t0 = agent_now_ns();
	snprintf(pid_dir, sizeof(pid_dir), "%s/pid_%d", agent.session_dir, (int)getpid());
	snprintf(mod_dir, sizeof(mod_dir), "%s/modules", pid_dir);
	int err = agent_mkdir(pid_dir);
	if (!err)
		err = agent_mkdir(mod_dir);
	for (size_t i = all_modules ? 0 : first_new; !err && i < agent.n_mods; i++) {
		if (!agent.mods[i].gone)
			err = agent_write_syms(mod_dir, &agent.mods[i]);
	}
	agent.ns_files += agent_now_ns() - t0;
	if (!err)
		err = agent_write_json(pid_dir);
	if (err)
		agent_log("cannot write the symbol files under %s (%s)", pid_dir, strerror(-err));
	return err;
}

/* After exec the new image writes into the same pid_<pid>/ as the old one,
 * whose events keep their module ids: continue numbering after the
 * highest modules/module_<ID>.syms already there. */
static void agent_continue_ids(void)
{
	char dir[PATH_MAX + 48];
	if (!agent.session_dir[0])
		return;
	snprintf(dir, sizeof(dir), "%s/pid_%d/modules", agent.session_dir, (int)getpid());
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		unsigned id;
		char tail;
		if (sscanf(de->d_name, "module_%u.sym%c", &id, &tail) == 2 && tail == 's' &&
		    id >= agent.next_id)
			agent.next_id = id + 1;
	}
	closedir(d);
}

static int agent_read_config(void)
{
	const char *txt = getenv("ADA_HOOK_CONFIG");
	const char *sess = getenv("ADA_SESSION_DIR");
	if (sess && strlen(sess) < sizeof(agent.session_dir))
		strcpy(agent.session_dir, sess);
	int err = ada_hook_config_parse(txt ? txt : "", txt ? strlen(txt) : 0, &agent.cfg);
	if (err)
		agent_log("bad ADA_HOOK_CONFIG \"%s\" (%s); nothing is traced", txt,
		          strerror(-err));
	return err;
}

/* Size of the xsave area the handlers' cold paths save vector state in
 * (handlers.c); 0 selects fxsave. */
static uint32_t agent_xsave_size(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 0;
	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b == 0 || b > 4096)
		return 0;
	return b;
}

static int agent_start(void)
{
	int err = agent_read_config();
	if (err)
		return err;
	uint64_t t0 = agent_now_ns();
	err = ada_producer_init_from_env();
	agent.ns_arena = agent_now_ns() - t0;
	if (err) {
		agent_log("cannot open the arena in %s (%s); nothing is traced",
		          getenv("ADA_ARENA_DIR"), strerror(-err));
		return err;
	}
	agent_hot.pid = getpid();
	agent_hot.xsave_size = agent_xsave_size();
	agent_hot.self_lo = (uint64_t)(uintptr_t)__ehdr_start;
	agent_hot.self_len = (uint64_t)(uintptr_t)_end - agent_hot.self_lo;
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
	err = agent_process_setup();
	if (err)
		return err;
	agent_write_files(true, 0);
	return 0;
}

__attribute__((constructor)) static void agent_init(void)
{
	if (!getenv("ADA_ARENA_DIR"))
		return;
	uint64_t t0 = agent_now_ns();
	agent_guard_enter();
	pthread_mutex_lock(&agent.lock);
	int err = agent_start();
	agent.ns_total = agent_now_ns() - t0;
	if (!err) {
		agent_write_files(false, agent.n_mods); /* agent.json again, with the total */
		agent_hot.active = 1;
	}
	pthread_mutex_unlock(&agent.lock);
	agent_guard_leave();
}
