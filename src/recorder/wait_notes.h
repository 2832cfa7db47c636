/*
 * The statuses of children their traced parent reaped, from the reapers'
 * tables of reaped children (wait_notes.c). Private to the recorder
 * module.
 */
#ifndef ADA_RECORDER_WAIT_NOTES_H
#define ADA_RECORDER_WAIT_NOTES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct ada_recorder;
struct wal_proc;

/* A note for a pid no process of the
 * recording has yet waits in pending[pid % WAL_WAIT_PENDING] for the
 * arena of that pid (pid 0: free). */
struct wal_wait_note {
	int32_t pid, status;
	uint64_t ts_raw; /* when reaped, the arenas' raw time */
};
#define WAL_WAIT_PENDING 1024u
struct wal_wait_notes {
	struct wal_wait_note *pending; /* NULL until the first note waits */
	struct wal_wait_counts {
		uint64_t read;        /* notes taken from the reapers' tables */
		uint64_t given;       /* made a process's status */
		uint64_t overwritten; /* a later reap took an entry before the drain read it */
		uint64_t refused;     /* torn, never completed, or implausible */
		uint64_t unclaimed;   /* waited for a process that never came, put out by another */
		uint64_t unknown;     /* processes finished with their status unknown */
	} c, shown;                   /* shown: as the last manifest written has them */
};

/* Reads p's table of the children it reaped from its cursor (final: p is
 * gone, a write under way never completes) and gives each note to the
 * recorded process of that pid born before the reap, or keeps it for
 * one to come. Reads the arena: the caller guards it (WAL_GUARDED). */
void wal_wait_notes_take(struct ada_recorder *r, struct wal_proc *p, bool final);
/* A process just admitted (born_raw set): a note waiting for its pid. */
void wal_wait_notes_admitted(struct ada_recorder *r, struct wal_proc *p);
/* The session's counts (manifests, live view, summary). */
json_t *wal_wait_notes_json(const struct ada_recorder *r);
/* The session's counts as a manifest shows them (wal_wait_notes_unshown). */
json_t *wal_wait_notes_manifest_json(struct ada_recorder *r);
/* Whether the counts moved since the last manifest written: a note read
 * after the last process finished is in no manifest yet. */
bool wal_wait_notes_unshown(const struct ada_recorder *r);
void wal_wait_notes_free(struct wal_wait_notes *w);

#endif
