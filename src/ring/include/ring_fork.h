/*
 * ada ring: a forked child's note of the files it leaves to the recorder,
 * in its arena's control block (included by ring.h).
 */
#ifndef ADA_RING_FORK_H
#define ADA_RING_FORK_H

#include <stdbool.h>
#include <stdint.h>

struct ada_arena;

/* A forked child's files, left to the recorder (docs/internals.md,
 * "A forked child's files"). At the fork the child's agent writes no file:
 * it notes in its arena whose fork it is and which of that process's files
 * in pid_<parent_pid>/ are its own (each by inode), and the recorder links
 * them into pid_<pid>/ when it reads the note. At exit a child whose run
 * left only counts notes those (struct ada_fork_exit), and the recorder
 * folds them into the agent.json it made. Untrusted on the recorder's
 * side: every field is checked (src/recorder/fork_files.c). */
#define ADA_FORK_MODULES_MAX 32
struct ada_fork_module {
	uint32_t id;
	uint32_t reserved;
	uint64_t syms_ino; /* pid_<parent_pid>/module_<id>.syms */
};
struct ada_fork_note {
	int32_t parent_pid; /* the process whose pid_N/ holds the files */
	uint32_t n_modules; /* entries of mods[], at most ADA_FORK_MODULES_MAX */
	uint32_t next_id;   /* the agent's next module id: above every id it has */
	uint32_t reserved;
	uint64_t json_ino; /* pid_<parent_pid>/agent.json */
	struct ada_fork_module mods[ADA_FORK_MODULES_MAX];
};
/* What a noted child's agent.json at exit says that its parent's does not
 * (agent.c agent_json_body): the untraced-call counts (in the agent's
 * order: agent_work, shadow_full, nested_signal, unmatched_return,
 * returns, threads_stopped, switches, frames_cut, thread_exit,
 * recorder_gone) and whether it judged the recorder gone. */
#define ADA_FORK_EXIT_COUNTS 10
struct ada_fork_exit {
	uint64_t untraced[ADA_FORK_EXIT_COUNTS];
	uint64_t gone_drops;
	uint32_t gone_noticed;
	uint32_t reserved;
};
enum ada_fork_state {
	ADA_FORK_NONE = 0,       /* no note: not a noted fork */
	ADA_FORK_NOTED = 1,      /* the child noted; the recorder has not read it */
	ADA_FORK_TAKEN_BACK = 2, /* the child wrote its files itself after all */
	ADA_FORK_MADE = 3,       /* the recorder made pid_<pid>/ from the note */
	ADA_FORK_REFUSED = 4,    /* the recorder refused the note: the child writes */
};
/* Child: the note, then the state NOTED (release). */
void ada_arena_fork_note(struct ada_arena *a, const struct ada_fork_note *n);
/* The state (acquire: the note's fields are then readable). */
uint32_t ada_arena_fork_state(const struct ada_arena *a);
/* A copy of the note (the caller checks it). */
void ada_arena_fork_note_read(const struct ada_arena *a, struct ada_fork_note *out);
/* NOTED -> to, once (compare-exchange); returns the state found. */
uint32_t ada_arena_fork_settle(struct ada_arena *a, uint32_t to);
/* Child at exit: the counts, then the exit state (release). */
void ada_arena_fork_exit(struct ada_arena *a, const struct ada_fork_exit *e);
/* Recorder: a copy of the exit counts; false when the child noted none. */
bool ada_arena_fork_exit_read(const struct ada_arena *a, struct ada_fork_exit *out);
/* The same counts from a process whose agent.json is its own and would
 * change at its exit only by them (src/hook/agent.c agent_exit_note):
 * the recorder folds them into that file when the process is gone,
 * instead of the process writing it again at its exit. A state of their
 * own, so that a noted fork child's counts are never taken for these. */
void ada_arena_exit_note(struct ada_arena *a, const struct ada_fork_exit *e);
bool ada_arena_exit_note_read(const struct ada_arena *a, struct ada_fork_exit *out);

#endif
