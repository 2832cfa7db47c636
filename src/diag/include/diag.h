/*
 * ada diag: can ada record this program, or attach to this process, on
 * this machine? (issue 10 item 4; DESIGN.md decision 8.)
 *
 * Each check reads the system -- the file, /proc/PID, /proc/sys, the file
 * systems, the limits -- and never changes anything: no binary is written,
 * no process is stopped, no setting is touched. A check ends ok, warn (it
 * will work, with a cost the user should know) or fail (the operation is
 * doomed). A warn or fail carries one sentence saying what is wrong and,
 * in order, what to do (never nothing: ada_diag_run() sees to it);
 * `fixable` tells apart what the user can fix (permissions, limits, a
 * flag) from what they cannot (a static or protected binary, a kernel
 * policy). The remedies never weaken the system's security: they name the
 * right user, a copy, a flag, a limit.
 *
 * Users: `ada diagnose` prints every check; `ada record` and `ada attach`
 * run the checks that concern them before creating anything and stop with
 * the first failure's sentence (ada_diag_sentence()).
 *
 * Not thread-safe; nothing here prints. Errors are 0 / -errno.
 */
#ifndef ADA_DIAG_H
#define ADA_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct ada_arena_config;

enum ada_diag_status {
	ADA_DIAG_OK = 0,
	ADA_DIAG_WARN = 1,
	ADA_DIAG_FAIL = 2,
};

#define ADA_DIAG_MAX_CHECKS 24
#define ADA_DIAG_MAX_STEPS 4
#define ADA_DIAG_TEXT_MAX 400

struct ada_diag_check {
	const char *id;   /* stable name: "path", "elf", "static", "ptrace", ... */
	const char *what; /* what is checked, a few words */
	enum ada_diag_status status;
	bool fixable; /* warn/fail: the user can fix it (ok: false) */
	char message[ADA_DIAG_TEXT_MAX];
	size_t nsteps; /* remediation steps, in the order to try them */
	char steps[ADA_DIAG_MAX_STEPS][ADA_DIAG_TEXT_MAX];
};

struct ada_diag_report {
	char target[4096]; /* the path, or the pid's executable */
	pid_t pid;         /* 0: a path was diagnosed */
	size_t n;
	struct ada_diag_check checks[ADA_DIAG_MAX_CHECKS];
};

/* Which groups of checks run. */
#define ADA_DIAG_PROGRAM 0x1u /* the file: exists, ELF for this arch, dynamic, setuid, caps */
#define ADA_DIAG_PROCESS 0x2u /* the pid: alive, ptrace permission, seccomp, libc dlopen */
#define ADA_DIAG_HOST 0x4u    /* disk for --out, /dev/shm, RLIMIT_MEMLOCK, io_uring, TSC */

struct ada_diag_opts {
	unsigned groups;     /* ADA_DIAG_* */
	const char *path;    /* PROGRAM: the file (resolved by the caller) */
	pid_t pid;           /* PROCESS: the process (its executable is the PROGRAM) */
	const char *out_dir; /* HOST: where sessions go (default ./ada_traces) */
	const char *shm_dir; /* HOST: the arenas' file system (default /dev/shm) */
	/* HOST: the rings asked for (ring.h; NULL: the defaults). */
	const struct ada_arena_config *ring;
	bool agent;  /* the agent is to be loaded (not --no-agent) */
	bool attach; /* the agent is to be injected into a running pid */
	/* PROGRAM: an aarch64 program is fine on this x86_64 machine: ada
	 * record runs it under qemu-user (tools/record_emul.c). */
	bool emulated;
};

/* Runs the checks of o->groups into rep (every field set). 0, or
 * -EINVAL (no group, PROGRAM without a path, PROCESS without a pid). */
int ada_diag_run(const struct ada_diag_opts *o, struct ada_diag_report *rep);

/* The first failed check, NULL when none failed. */
const struct ada_diag_check *ada_diag_first_fail(const struct ada_diag_report *rep);
/* How many checks ended with status s. */
size_t ada_diag_count(const struct ada_diag_report *rep, enum ada_diag_status s);
/* One line for a refusal: "<message>; <step 1>; <step 2>..." (truncated
 * to cap). */
void ada_diag_sentence(const struct ada_diag_check *c, char *buf, size_t cap);
/* The report as JSON (new reference; NULL when out of memory):
 * {"target", "pid", "ok", "failed", "warnings", "checks": [{"id", "what",
 * "status": "ok"|"warn"|"fail", "fixable", "message", "remediation": []}]} */
json_t *ada_diag_json(const struct ada_diag_report *rep);
/* "ok", "warn" or "fail". */
const char *ada_diag_status_name(enum ada_diag_status s);

#endif
