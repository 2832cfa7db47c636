/*
 * The recorder's heap over a recording of many processes. What a
 * finished process leaves behind is freed when it finishes (drain_end.c,
 * flight.c); what stays is its record for the manifests and the summary
 * (docs/internals.md, "Memory over many processes"). Two things of the
 * allocator's own would still make the recorder's RSS grow:
 * - glibc raises its mmap threshold to the size of each large block
 *   freed (up to 32 MiB), after which the per-file buffers (the compact
 *   encoder's, the recent-event window) and the symbol tables come from
 *   the arenas instead of their own mappings, and a long-lived small
 *   block between them keeps the pages; a fixed threshold keeps large
 *   blocks in mappings of their own, returned whole on free;
 * - free memory inside the arenas is returned to the system only from
 *   their top: the drain's tick trims them (malloc_trim) once a second
 *   at most, and only after a process finished since the last trim.
 */
#define _GNU_SOURCE
#include <malloc.h>

#include "recorder_internal.h"

/* Blocks at least this large get their own mapping (glibc's default
 * before it starts raising it). */
#define WAL_HEAP_MMAP_THRESHOLD (128u << 10)

void wal_heap_setup(void)
{
	(void)mallopt(M_MMAP_THRESHOLD, WAL_HEAP_MMAP_THRESHOLD);
}

void wal_heap_tick(struct ada_recorder *r)
{
	size_t finished = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		finished += r->procs[i]->finished;
	if (finished == r->heap_finished_trimmed)
		return;
	r->heap_finished_trimmed = finished;
	(void)malloc_trim(0);
}
