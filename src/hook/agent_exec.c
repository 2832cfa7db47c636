/*
 * Starting children with an environment of the program's choosing (not
 * hook context; issue 14).
 *
 * ada passes LD_PRELOAD and the ADA_* variables through the environment
 * (docs/internals.md). A program that execs or spawns with an explicit
 * environment (execve, execle, execvpe, posix_spawn's envp), or that
 * cleared its own before exec* (nginx), would silently start its child
 * untraced. So the agent exports the exec family and posix_spawn{,p}: the
 * preloaded definitions come first for every call through a PLT, and each
 * gives the real function (dlsym(RTLD_NEXT), resolved at start-up) the
 * program's environment with our variables put back in -- as they were
 * when the agent started (struct agent_env) -- when following children,
 * and taken out (the agent's entry of LD_PRELOAD and the five ADA_*
 * variables; the user's own preloads stay) with --no-follow. With
 * --no-follow the constructor also takes them out of the program's own
 * environment, so children started any other way (system, popen, a
 * shell's) do not load the agent either.
 *
 * system() and popen() hand environ to glibc's internal spawn, which no
 * PLT reaches: when following and the program's environment lacks our
 * variables (it cleared them), environ points at a rewritten copy on the
 * wrapper's stack for the duration of the call, then back. Another thread
 * that reads the environment meanwhile sees our variables too; one that
 * changes it meanwhile keeps its change (environ is only put back when it
 * still points at the copy).
 *
 * Not covered: raw execve system calls.
 *
 * Threads: any; also a vfork child, which shares the parent's memory: the
 * wrappers use only the stack and what the constructor prepared (no
 * malloc, no dlsym, no lock).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"

#define EXEC_EXPORT __attribute__((visibility("default")))
#define EXEC_NVARS 5

extern char **environ;

static const char *const exec_names[EXEC_NVARS] = {
    "ADA_ARENA_DIR", "ADA_SESSION_DIR", "ADA_RING_CONFIG", "ADA_HOOK_CONFIG", "ADA_PLAN_CACHE"};

static struct {
	bool ready;             /* the agent runs: environments are rewritten */
	bool follow;            /* put our variables in (else take them out) */
	char *vars[EXEC_NVARS]; /* "NAME=value" of those that were set */
	const char *agent_path; /* this library, as the loader opened it */
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
	             const posix_spawnattr_t *, char *const[], char *const[]);
	int (*spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
	              const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
} exec_st;

static bool exec_is_ours(const char *e)
{
	for (int i = 0; i < EXEC_NVARS; i++) {
		size_t n = strlen(exec_names[i]);
		if (!strncmp(e, exec_names[i], n) && e[n] == '=')
			return true;
	}
	return false;
}

/* Whether the LD_PRELOAD token [t, t+n) is this agent. */
static bool exec_token_is_agent(const char *t, size_t n)
{
	const char *a = exec_st.agent_path;
	if (a && strlen(a) == n && !strncmp(t, a, n))
		return true;
	static const char base[] = "libada_agent.so";
	return n >= sizeof(base) - 1 &&
	       !strncmp(t + n - (sizeof(base) - 1), base, sizeof(base) - 1) &&
	       (n == sizeof(base) - 1 || t[n - sizeof(base)] == '/');
}

/* "LD_PRELOAD=" + [agent + ":"] + the program's other preloads into out
 * (cap bytes); NULL when that would be empty. */
static char *exec_preload(const char *theirs, char *out, size_t cap)
{
	size_t o = 0;
	int w = snprintf(out, cap, "LD_PRELOAD=%s", exec_st.follow ? exec_st.agent_path : "");
	if (w < 0 || (size_t)w >= cap)
		return NULL;
	o = (size_t)w;
	bool any = exec_st.follow;
	for (const char *t = theirs ? theirs : ""; *t;) {
		size_t n = strcspn(t, ": ");
		if (n && !exec_token_is_agent(t, n) && o + n + 2 < cap) {
			if (any)
				out[o++] = ':';
			memcpy(out + o, t, n);
			o += n;
			any = true;
		}
		t += n + (t[n] != '\0');
	}
	out[o] = '\0';
	return any ? out : NULL;
}

static size_t exec_count(char *const v[])
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* The environment to pass instead of envp, in out (room for
 * exec_count(envp) + EXEC_NVARS + 2 entries); lp holds the LD_PRELOAD
 * entry. */
static char *const *exec_env(char *const envp[], char **out, char *lp, size_t lpcap)
{
	size_t o = 0;
	const char *theirs = NULL;
	for (size_t i = 0; envp && envp[i]; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11))
			theirs = envp[i] + 11;
		else if (!exec_is_ours(envp[i]))
			out[o++] = envp[i];
	}
	for (int i = 0; exec_st.follow && i < EXEC_NVARS; i++) {
		if (exec_st.vars[i])
			out[o++] = exec_st.vars[i];
	}
	char *p = exec_preload(theirs, lp, lpcap);
	if (p)
		out[o++] = p;
	out[o] = NULL;
	return out;
}

/* Declares the rewritten environment `env` of envp on the caller's
 * stack (VLAs: nothing allocated, vfork-safe). */
#define EXEC_ENV(env, envp)                                                                        \
	size_t env##_n = exec_count(envp) + EXEC_NVARS + 2;                                        \
	size_t env##_lpn = 32 + (exec_st.agent_path ? strlen(exec_st.agent_path) : 0) +            \
	                   exec_env_preload_len(envp);                                             \
	char *env##_v[env##_n];                                                                    \
	char env##_lp[env##_lpn];                                                                  \
	char *const *env = exec_st.ready ? exec_env(envp, env##_v, env##_lp, env##_lpn) : (envp)

static size_t exec_env_preload_len(char *const envp[])
{
	for (size_t i = 0; envp && envp[i]; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11))
			return strlen(envp[i]);
	}
	return 0;
}

static void *exec_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* The program's own environment without our variables (--no-follow). */
static void exec_clean_own_env(void)
{
	for (int i = 0; i < EXEC_NVARS; i++)
		unsetenv(exec_names[i]);
	const char *lp = getenv("LD_PRELOAD");
	if (!lp)
		return;
	size_t cap = strlen(lp) + 32;
	char *buf = malloc(cap);
	char *keep = buf ? exec_preload(lp, buf, cap) : NULL;
	if (keep)
		setenv("LD_PRELOAD", keep + 11, 1);
	else
		unsetenv("LD_PRELOAD");
	free(buf);
}

void agent_exec_setup(void)
{
	Dl_info di;
	if (dladdr((void *)&agent_exec_setup, &di) && di.dli_fname)
		exec_st.agent_path = strdup(di.dli_fname);
	const char *vals[EXEC_NVARS] = {agent.env.arena_dir, agent.env.session_dir,
	                                agent.env.ring_config, agent.env.hook_config,
	                                agent.env.plan_cache};
	for (int i = 0; i < EXEC_NVARS; i++) {
		if (vals[i] && asprintf(&exec_st.vars[i], "%s=%s", exec_names[i], vals[i]) < 0)
			exec_st.vars[i] = NULL;
	}
	exec_st.execve = exec_next("execve");
	exec_st.execveat = exec_next("execveat");
	exec_st.fexecve = exec_next("fexecve");
	exec_st.execvpe = exec_next("execvpe");
	exec_st.spawn = exec_next("posix_spawn");
	exec_st.spawnp = exec_next("posix_spawnp");
	exec_st.system = exec_next("system");
	exec_st.popen = exec_next("popen");
	exec_st.follow = agent.cfg.follow;
	if (!exec_st.follow)
		exec_clean_own_env();
	exec_st.ready = exec_st.agent_path != NULL;
}

static int exec_missing(void)
{
	errno = ENOSYS;
	return -1;
}

/* The real function; resolved here only when the agent is loaded but did
 * not start (no ADA_ARENA_DIR): then the wrappers pass everything through. */
#define EXEC_REAL(field, name)                                                                     \
	do {                                                                                       \
		if (!exec_st.field)                                                                \
			exec_st.field = exec_next(name);                                           \
	} while (0)

EXEC_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	EXEC_REAL(execve, "execve");
	if (!exec_st.execve)
		return exec_missing();
	EXEC_ENV(env, envp);
	return exec_st.execve(path, argv, env);
}

EXEC_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                         int flags)
{
	EXEC_REAL(execveat, "execveat");
	if (!exec_st.execveat)
		return exec_missing();
	EXEC_ENV(env, envp);
	return exec_st.execveat(dirfd, path, argv, env, flags);
}

EXEC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	EXEC_REAL(fexecve, "fexecve");
	if (!exec_st.fexecve)
		return exec_missing();
	EXEC_ENV(env, envp);
	return exec_st.fexecve(fd, argv, env);
}

EXEC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	EXEC_REAL(execvpe, "execvpe");
	if (!exec_st.execvpe)
		return exec_missing();
	EXEC_ENV(env, envp);
	return exec_st.execvpe(file, argv, env);
}

EXEC_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXEC_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl-style argument lists, collected on the stack. */
#define EXEC_ARGS(argv, arg0, last_named)                                                          \
	size_t argv##_n = 1;                                                                       \
	va_list argv##_ap;                                                                         \
	va_start(argv##_ap, last_named);                                                           \
	while (va_arg(argv##_ap, char *) != NULL)                                                  \
		argv##_n++;                                                                        \
	va_end(argv##_ap);                                                                         \
	char *argv[argv##_n + 1];                                                                  \
	argv[0] = (char *)(arg0);                                                                  \
	va_start(argv##_ap, last_named);                                                           \
	for (size_t argv##_i = 1; argv##_i <= argv##_n; argv##_i++)                                \
	argv[argv##_i] = va_arg(argv##_ap, char *)

EXEC_EXPORT int execl(const char *path, const char *arg, ...)
{
	EXEC_ARGS(argv, arg, arg);
	va_end(argv_ap);
	return execve(path, argv, environ);
}

EXEC_EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXEC_ARGS(argv, arg, arg);
	va_end(argv_ap);
	return execvpe(file, argv, environ);
}

EXEC_EXPORT int execle(const char *path, const char *arg, ...)
{
	EXEC_ARGS(argv, arg, arg);
	char *const *envp = va_arg(argv_ap, char *const *);
	va_end(argv_ap);
	return execve(path, argv, envp);
}

EXEC_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	EXEC_REAL(spawn, "posix_spawn");
	if (!exec_st.spawn)
		return ENOSYS;
	EXEC_ENV(env, envp);
	return exec_st.spawn(pid, path, fa, attr, argv, env);
}

EXEC_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                             const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	EXEC_REAL(spawnp, "posix_spawnp");
	if (!exec_st.spawnp)
		return ENOSYS;
	EXEC_ENV(env, envp);
	return exec_st.spawnp(pid, file, fa, attr, argv, env);
}

/* Whether the program's own environment already starts a child as
 * exec_env() would (the common case: nothing to rewrite). */
static bool exec_environ_complete(void)
{
	for (int i = 0; i < EXEC_NVARS; i++) {
		if (!exec_st.vars[i])
			continue;
		bool found = false;
		for (size_t k = 0; environ && environ[k] && !found; k++)
			found = !strcmp(environ[k], exec_st.vars[i]);
		if (!found)
			return false;
	}
	const char *lp = getenv("LD_PRELOAD");
	for (const char *t = lp ? lp : ""; *t;) {
		size_t n = strcspn(t, ": ");
		if (n && exec_token_is_agent(t, n))
			return true;
		t += n + (t[n] != '\0');
	}
	return false;
}

static bool exec_needs_environ(void)
{
	return exec_st.ready && exec_st.follow && !exec_environ_complete();
}

EXEC_EXPORT int system(const char *cmd)
{
	EXEC_REAL(system, "system");
	if (!exec_st.system)
		return exec_missing();
	if (!cmd || !exec_needs_environ())
		return exec_st.system(cmd);
	char **saved = environ;
	EXEC_ENV(env, saved);
	environ = (char **)env;
	int r = exec_st.system(cmd);
	if (environ == (char **)env)
		environ = saved;
	return r;
}

EXEC_EXPORT FILE *popen(const char *cmd, const char *type)
{
	EXEC_REAL(popen, "popen");
	if (!exec_st.popen) {
		errno = ENOSYS;
		return NULL;
	}
	if (!exec_needs_environ())
		return exec_st.popen(cmd, type);
	char **saved = environ;
	EXEC_ENV(env, saved);
	environ = (char **)env;
	FILE *r = exec_st.popen(cmd, type);
	if (environ == (char **)env)
		environ = saved;
	return r;
}
