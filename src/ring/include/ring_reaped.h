/*
 * ada ring: the table of children a process reaped itself (reaped.c).
 *
 * The wait family's wrappers (src/hook/agent_wait.c) note each child the
 * program reaps -- its pid, its raw wait status, when -- in a table of
 * ADA_REAPED_SLOTS entries in the reaper's control block; the drain reads
 * them to learn the status of a recorded child it did not reap itself
 * (src/recorder/wait_notes.c).
 *
 * Protocol: a writer (any thread, also a signal handler) takes position
 * pos = reaped_head++ (atomic, relaxed: the position only names the
 * entry), stores seq = 2*pos + 1 in entry pos % ADA_REAPED_SLOTS, then
 * the fields and a check word over (seq, fields), each with release, then
 * seq = 2*pos + 2 with release. The drain keeps its own cursor: for each
 * position k in [cursor, head) it loads seq with acquire, accepts the
 * entry only when seq == 2*k + 2 before and after reading the fields
 * (acquire each) and the check word matches; seq past that is a later
 * lap (the entry was overwritten before the drain read it: counted), seq
 * below it a write still under way (read at the next look). Two writers
 * a lap apart on one entry (256 reaps while one writer is between its
 * stores) can leave a mix of both: the check word refuses it. Everything
 * is the target's word: the reader checks every field.
 */
#ifndef ADA_RING_REAPED_H
#define ADA_RING_REAPED_H

#include <stdbool.h>
#include <stdint.h>

struct ada_arena;

#define ADA_REAPED_SLOTS 256u
/* Any thread, also from a signal handler: atomics only, errno untouched.
 * status is the raw wait status (WIFEXITED or WIFSIGNALED), ts_raw the
 * arena's raw timestamp (ada_timestamp_raw's source). */
void ada_arena_note_reaped(struct ada_arena *a, int32_t pid, int32_t status, uint64_t ts_raw);
/* One entry as the drain accepted it: pid 1 .. ADA_REAPED_PID_MAX, status
 * a plausible exit or signal status (0 .. 0xffff), ts_raw unchecked. */
#define ADA_REAPED_PID_MAX (1 << 22) /* the kernel's PID_MAX_LIMIT */
struct ada_reaped_note {
	int32_t pid;
	int32_t status;
	uint64_t ts_raw;
};
/* What one read of the table found beside the notes. */
struct ada_reaped_counts {
	uint64_t overwritten; /* positions a later lap took before they were read */
	uint64_t refused;     /* entries torn, never completed (final) or implausible */
};
/* Drain: the entries at positions [*cursor, head) not read before, into
 * out (at most ADA_REAPED_SLOTS); returns how many. *cursor advances past
 * what was read, overwritten or refused; it stops at an entry whose write
 * is under way unless final (the process is gone: such an entry is
 * refused) or the table has moved a whole lap past it. A head below
 * *cursor (the target's word went back) reads nothing. */
uint32_t ada_arena_reaped_take(const struct ada_arena *a, uint64_t *cursor, bool final,
                               struct ada_reaped_note out[ADA_REAPED_SLOTS],
                               struct ada_reaped_counts *counts);

#endif
