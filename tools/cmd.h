/* The ada command's subcommands and its one logging function. */
#ifndef ADA_TOOLS_CMD_H
#define ADA_TOOLS_CMD_H

#include <stdbool.h>

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
int cmd_flame(int argc, char **argv);
int cmd_crash(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);

struct ada_atf_tree;
/* Scans DIR (a pid_N directory or one above it) for traces; NULL after
 * saying on stderr what is wrong (not a directory, nothing found). */
struct ada_atf_tree *cmd_open_tree(const char *dir);

/* As root (cmd_root.c): 0, or -1 after one sentence saying which place
 * another user owns or can write and what to do. Not root: 0. */
int cmd_root_check_record(const char *out, bool agent);
int cmd_root_check_recover(const char *dir);

struct ada_diag_report;
/* After src/diag's checks: 0 when none failed, else -1 after one line
 * "cannot VERB: <what is wrong>; <what to do>" (cmd_record.c). */
int cmd_diag_refuse(const char *verb, const struct ada_diag_report *rep);

/* One line on stderr, prefixed "ada: ". */
void ada_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
