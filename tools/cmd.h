/* The ada command's subcommands and its one logging function. */
#ifndef ADA_TOOLS_CMD_H
#define ADA_TOOLS_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ada_command {
	const char *name;
	const char *help;
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
};

int cmd_record(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
/* ada export --format atf (cmd_export_atf.c): the tree under src as ATF v2
 * files under out; 0, or 1 when a file was not exported. */
int cmd_export_atf(const char *src, const char *out);
int cmd_flame(int argc, char **argv);
int cmd_crash(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_windows(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
/* ada diagnose PATH --functions (diagnose_functions.c): 0, 1 when PATH
 * cannot be analysed, 2 when the report cannot be written. */
int diagnose_functions(const char *path, bool json);
int cmd_attach(int argc, char **argv);
int cmd_arm(int argc, char **argv);
int cmd_disarm(int argc, char **argv);
int cmd_trigger(int argc, char **argv);
int cmd_keysym(int argc, char **argv);

/* cmd_orphans.c: recovers the user's arena directories whose recorder
 * died, one line each; all: manual ones too (ada recover --all). The
 * number recovered, or -errno. */
int cmd_orphans_recover(bool all);
/* The same, unless ADA_NO_RECOVER_ORPHANS says not to. */
void cmd_orphans_on_start(void);

/* cmd_ctl.c: the live-control commands' shared part. 0, or -1 after one
 * sentence on stderr. */
typedef struct json_t json_t;
int cmd_ctl_open(const char *target, int *fd);
/* One call (params consumed); *result a new reference. */
int cmd_ctl_call(int fd, const char *method, json_t *params, json_t **result);
/* Fills params from a command's options: 0, 1 (--help printed: done) or -1
 * (said why); the target (PID|DIR) is then argv[optind]. */
typedef int (*cmd_ctl_parse_fn)(int argc, char **argv, json_t *params);
/* A live-control command: its options (parse), one call of method to the
 * recording argv[optind]. Returns the exit status: 0 with *result (a new
 * reference) when answered, 0 with *result NULL after --help, 2 for bad
 * options, 1 when the recording could not be reached or refused (said). */
int cmd_ctl_command(int argc, char **argv, const char *method, cmd_ctl_parse_fn parse,
                    json_t **result);
/* "; near: a, b" from a reply's array of close names into buf ("" when
 * none), for the sentence that says a glob matched nothing. */
const char *cmd_ctl_near_names(const json_t *near, char *buf, size_t len);
/* ns as "1.23 s", "4.5 ms" or "67 us" in buf. */
const char *cmd_ctl_span(uint64_t ns, char *buf, size_t cap);
/* One line: a `status` answer, live or from cmd_ctl_status_from_manifests;
 * then a line per recent window when the answer lists them (live), and
 * the first few of its warnings (the manifests' sentences). */
void cmd_ctl_print_status(FILE *f, const char *name, json_t *st);
/* The `status` object of a finished session, from its manifests (NULL:
 * not a readable directory). */
json_t *cmd_ctl_status_from_manifests(const char *session);

struct ada_atf_tree;
/* Registers dir, the directory the user named, as a session root
 * (ada_fs_root_add): its own links are followed once, and no link below
 * it ever is, whoever shaped the session. cmd_open_tree() does it. */
void cmd_session_root(const char *dir);
/* Scans DIR (a pid_N directory or one above it) for traces; NULL after
 * saying on stderr what is wrong (not a directory, nothing found). */
struct ada_atf_tree *cmd_open_tree(const char *dir);

/* As root (cmd_root.c): 0, or -1 after one sentence saying which place
 * another user owns or can write and what to do. Not root: 0. */
int cmd_root_check_record(const char *out, bool agent);
/* Where the agent keeps its plan cache, which ada passes it (ADA_PLAN_CACHE,
 * attach's cache=): $XDG_CACHE_HOME/ada/plans, else $HOME/.cache/ada/plans
 * when $HOME/.cache is already a directory -- ada never makes a .cache in
 * a HOME that has none (a HOME set to a git work tree would commit it) --
 * else NULL (no cache). buf holds the answer. */
const char *cmd_plan_cache_dir(char *buf, size_t cap);
int cmd_root_check_recover(const char *dir);

struct ada_diag_report;
/* After src/diag's checks: 0 when none failed, else -1 after one line
 * "cannot VERB: <what is wrong>; <what to do>" (cmd_record.c). */
int cmd_diag_refuse(const char *verb, const struct ada_diag_report *rep);

/* One line on stderr, prefixed "ada: ". */
void ada_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cmd_keysym.c: shared with ada record (--key-symbols, --blob) and its
 * control host (the keysym method). */
struct ada_keysym_spec;
int cmd_keysym_read_rules(struct ada_keysym_spec *s, const char *path, char *why, size_t cap);
int cmd_keysym_read_blob(struct ada_keysym_spec *s, const char *arg, char *why, size_t cap);
int cmd_keysym_host(void *ctx, json_t *params, json_t **result, char *why, size_t cap);
uint64_t cmd_keysym_version(void *ctx);
json_t *cmd_keysym_cover(void *ctx);

#endif
