/* What ada record and ada attach share (tools/record_table.c: the options;
 * tools/record_opts.c: the rest). */
#ifndef ADA_TOOLS_RECORD_H
#define ADA_TOOLS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "trigger.h"
#include "recorder.h"

struct ada_arena_config;
struct ada_control;
struct ada_keysym_spec;

struct rec_args {
	const char *out;
	uint64_t ring_mb, peak_rate, burst_ms;
	uint32_t max_threads;
	uint32_t thread_limit; /* 0: ADA_ARENA_DEFAULT_THREAD_LIMIT */
	int overflow;
	int drain_cpu;
	uint64_t segment_mb, max_disk_mb, max_shm_mb;
	struct ada_flush_policy flush;
	int index_format;     /* --index-format (enum ada_index_format) */
	uint32_t index_block; /* --index-block-kb, in bytes; 0: the default */
	bool follow, agent;
	bool verbose;         /* -v, --verbose: the recorder's log to stderr */
	const char *log_path; /* --log FILE: the same log to FILE */
	/* Detail lane (--detail, --stack-bytes, --detail-mb, --detail-symbols). */
	int detail_mode; /* enum ada_detail_mode */
	uint64_t stack_bytes, detail_mb;
	uint64_t persist_share;    /* --persist-share, percent */
	uint64_t window_mem_mb;    /* --window-mem-mb, MiB (0: the default) */
	bool detail_fp;            /* --detail-fp: the records carry xmm0..7 */
	int detail_overflow;       /* --detail-overflow: 1 wait, 0 overwrite, -1 not given */
	char detail_symbols[1024]; /* every --detail-symbols, ','-joined (manifest) */
	/* Key symbols (--key-symbols, --blob, and --detail-symbols as *:GLOB):
	 * the recorder's spec; NULL: every hooked function. */
	struct ada_keysym_spec *ks;
	bool ks_given; /* --key-symbols or --blob */
	/* Agent options (src/hook: ADA_HOOK_CONFIG, ';'-separated key=value)
	 * collected from --exclude/--include/... go here. */
	char hook_config[4096];
	char **prog_argv;
	/* The flight recorder: --trigger (repeatable), --pre-roll-sec, ... */
	struct ada_trigger_spec triggers[ADA_TRIGGER_MAX];
	size_t ntriggers;
	struct ada_trigger_opts flight;
	/* ada attach: the process (its argv is read from /proc) and
	 * --duration SEC (0: until SIGINT/SIGTERM or the process's exit). */
	bool attach;
	uint64_t duration_ns;
	/* --call-timeout SEC: the bound of the injected dlopen (cmd_attach.c). */
	uint64_t call_timeout_ns;
	/* An aarch64 PROGRAM on x86_64 (record_emul.c): ATF_ARCH_ARM64, and
	 * what runs it: qemu-aarch64, the aarch64 C library's root and the
	 * aarch64 agent. 0: a program of this machine. */
	uint8_t target_arch;
	char emul_qemu[PATH_MAX], emul_sysroot[PATH_MAX], emul_agent[PATH_MAX];
};
#define ADA_ATTACH_CALL_TIMEOUT_NS 10000000000ull

/* Parses the options, from the one table of them (record_table.c; ada
 * record: then -- PROGRAM ARGS; ada attach: argv[0] is the pid, options
 * only). 0, 1 (--help printed: done) or -1 (said why). */
int record_parse(struct rec_args *a, int argc, char **argv, bool attach);
/* Appends key=value to the agent's options (hook_config); -1 (said) when
 * v is not a ','-separated glob list or does not fit. */
int record_hook_opt(struct rec_args *a, const char *key, const char *v);
/* The machine's checks (src/diag): 0, or -1 after one sentence. */
int record_check_host(const struct rec_args *a, const struct ada_arena_config *ring);
/* The agent's options beyond the parsed ones (--no-follow, the detail
 * lane, the key symbols) into hook_config; -1 (said) when too long. */
int record_agent_config(struct rec_args *a);
/* The ring config (*out and its text); -1 (said) when out of range. */
int record_ring_config(const struct rec_args *a, bool tsc, struct ada_arena_config *out, char *buf,
                       size_t cap);
/* libada_agent.so next to the ada command; -1 when it is not there. */
int record_agent_path(char *buf, size_t cap);
/* record_emul.c: ATF_ARCH_ARM64 when path is an aarch64 ELF file and this
 * ada is x86_64 (it runs the program under qemu-user), 0 otherwise. */
uint8_t record_emul_arch(const char *path);
/* Finds qemu-aarch64, the aarch64 sysroot and (unless --no-agent) the
 * aarch64 agent into a's emul_* fields; -1 after one sentence. */
int record_emul_prepare(struct rec_args *a);
/* The command that runs path under qemu (argv, at most cap entries with
 * the NULL; nargs + 8 suffice): qemu -L SYSROOT [-E preload] -0 ARGV0
 * path ARGS. Returns the entries before the NULL, 0 when cap is short. */
size_t record_emul_argv(const struct rec_args *a, const char *path, const char *preload,
                        char **argv, size_t cap);
/* In the child: execs qemu running path, the agent in the guest's
 * LD_PRELOAD (ADA_* come from the environment, which qemu passes on).
 * Returns only when the exec failed (errno). */
void record_emul_exec(const struct rec_args *a, const char *path);
/* The drain's notices, on stderr. */
void record_notice(void *arg, const char *sentence);
/* The hook counts of pid's agent.json, and the summary lines (with a
 * warning for each function glob of a that matched no hooked function and,
 * for a trigger, never fired in e: the recording's engine, its drain
 * stopped; may be NULL). */
void record_print_hooks(const char *dir, pid_t pid);
void record_print_summary(const struct ada_record_summary *s, const struct rec_args *a,
                          const char *dir, const struct ada_trigger_engine *e);
/* Raises ada's own RLIMIT_NOFILE soft limit to the hard one (the drain
 * holds one index file per live thread: 10 000 threads alive at once need
 * more than the usual 1 024) and keeps the old limit in *orig, which the
 * program is given back before exec (it runs as without ada). */
void record_raise_nofile(struct rlimit *orig);
/* The control socket of recording r; NULL (said) when it cannot listen. */
struct ada_control *record_control(struct ada_recorder *r, const struct rec_args *a);
/* Starts c's thread: c, or NULL (said, c freed) when it cannot; NULL: NULL. */
struct ada_control *record_control_start(struct ada_control *c);
/* The session of a (its key symbols consumed), for the program argv; 0,
 * or -1 after one sentence. */
int record_create(struct rec_args *a, const char *ring_cfg, bool tsc, char *const *argv,
                  struct ada_recorder **r);

#endif
