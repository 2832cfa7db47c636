/* Private to src/diag: how a check is filled in. */
#ifndef ADA_DIAG_INTERNAL_H
#define ADA_DIAG_INTERNAL_H

#include "diag.h"

/* Appends a check (NULL when the report is full: the caller skips it). */
struct ada_diag_check *diag_add(struct ada_diag_report *rep, const char *id, const char *what);
/* Sets status, fixable and the message (printf-style). */
void diag_set(struct ada_diag_check *c, enum ada_diag_status s, bool fixable, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Appends one remediation step (printf-style); extra steps are dropped. */
void diag_step(struct ada_diag_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Reads a small file whole (at most cap - 1 bytes, NUL-terminated);
 * the length, or -errno. */
ssize_t diag_read_small(const char *path, char *buf, size_t cap);
/* The value after "key:" in /proc/PID/status-style text, NULL when absent
 * (points into text; ends at the newline). */
const char *diag_field(const char *text, const char *key);

/* The groups (diag_program.c, diag_process.c, diag_host.c). */
void diag_program(const struct ada_diag_opts *o, const char *path, struct ada_diag_report *rep);
/* false when the process does not exist (the PROGRAM checks are skipped). */
bool diag_process(const struct ada_diag_opts *o, struct ada_diag_report *rep);
void diag_process_libc(pid_t pid, struct ada_diag_report *rep);
void diag_host(const struct ada_diag_opts *o, struct ada_diag_report *rep);

#endif
