/*
 * A forked child's files from the note in its arena (ring.h,
 * ada_fork_note; the agent's side: src/hook/agent.c agent_fork_defer).
 * The child writes no file at its fork: the recorder links its parent's
 * module files and agent.json into pid_<child>/ when it reads the note,
 * each checked to be the file the child noted (its inode); readers see
 * the same files as if the child had linked them. A child that ends with
 * only counts to say notes them in its arena too (ada_fork_exit), folded
 * into the agent.json the final manifest makes the child's.
 */
#ifndef ADA_FORK_FILES_H
#define ADA_FORK_FILES_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ring.h"

struct ada_recorder;
struct wal_proc;

/* Why a note was refused (ada_recorder.fork_refused[], the manifests'
 * "fork_notes"): each told once, and in the process's warnings. */
enum wal_fork_refusal {
	WAL_FORK_BAD_NOTE = 0,  /* values the agent never writes */
	WAL_FORK_NO_PARENT = 1, /* no pid_<parent>/ of ours to link from */
	WAL_FORK_NOT_NOTED = 2, /* a file there is not the one noted (inode) */
	WAL_FORK_NO_DIR = 3,    /* pid_<child>/ could not be made ours */
	WAL_FORK_REFUSE_COUNT = 4,
};
const char *wal_fork_refusal_name(int k);

/* "fork_files" of an agent.json the recorder made from a parent's
 * rewritten after the fork. */
#define WAL_FORK_DERIVED                                                                           \
	"made by the recorder from its parent's agent.json as rewritten after the fork"

/* Checks note n of process pid; 0 when usable, else WAL_FORK_BAD_NOTE + 1. */
int wal_fork_note_check(const struct ada_fork_note *n, pid_t pid);
/* Links the noted files from session_fd's pid_<parent>/ (parent_fd when
 * >= 0: that directory, open already) into pid_dir_fd. 0, or the refusal
 * + 1. A name already there is left alone (the child, or an image it
 * exec'd, wrote its own). */
int wal_fork_files_make(int session_fd, int parent_fd, int pid_dir_fd, pid_t pid,
                        const struct ada_fork_note *n);
/* Drain (and a final manifest): p's note when it is there and not read
 * yet, made or refused, and settled in the arena. Reads the arena: the
 * caller guards it (WAL_GUARDED). */
void wal_fork_files_take(struct ada_recorder *r, struct wal_proc *p);
/* ada recover: the note of arena a (process pid, its pid_N/ pid_dir,
 * open as dfd) made when its recorder had not; msg (cap bytes) says a
 * refusal, "" otherwise. True with *fx when the child noted exit counts. */
bool wal_fork_files_recover(struct ada_arena *a, int dfd, const char *pid_dir, pid_t pid,
                            struct ada_fork_exit *fx, char *msg, size_t cap);
/* a, pid's agent.json as wal_agent_inherit made it from its parent's,
 * with the child's exit counts e folded in ("exit_counts": "arena"). */
void wal_fork_exit_fold(json_t *a, const struct ada_fork_exit *e);
/* The manifests' "fork_notes": {"made", "refused": {reason: n}}. */
json_t *wal_fork_counts_json(const struct ada_recorder *r);

#endif
