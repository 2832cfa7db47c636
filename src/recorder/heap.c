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
 * And one of the writer's: its pool of staging buffers (src/wal) keeps
 * every buffer it made, up to 96 MiB, so each peak of files open at once
 * or of writes in flight raised the recorder's heap for the rest of the
 * recording (the 30-minute soak's grew by ~1 MiB a minute). Every
 * WAL_HEAP_POOL_NS the buffers no write took since the last look are
 * freed (each is a mapping of its own: given back whole). At the same
 * look, the recorder's own two: the detail snapshot buffer (as large as
 * the largest detail ring a window copied, up to 1 GiB) and the windows'
 * pool of free blocks (up to 32 MiB), each freed when nothing took it
 * since the last look (no window needed them for 10-20 s).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>

#include "detail_pd.h"
#include "recorder_internal.h"

/* Blocks at least this large get their own mapping (glibc's default
 * before it starts raising it). */
#define WAL_HEAP_MMAP_THRESHOLD (128u << 10)
/* How long a staging buffer may stay unused before it is freed. */
#define WAL_HEAP_POOL_NS (10ull * 1000000000ull)

/* The period of the pools' looks: WAL_HEAP_POOL_NS, or (test hook,
 * e2e.heap_idle_pools) ADA_TEST_HEAP_POOL_MS milliseconds. */
static uint64_t heap_pool_period_ns = WAL_HEAP_POOL_NS;

void wal_heap_setup(void)
{
	(void)mallopt(M_MMAP_THRESHOLD, WAL_HEAP_MMAP_THRESHOLD);
	const char *v = getenv("ADA_TEST_HEAP_POOL_MS");
	unsigned long ms = v ? strtoul(v, NULL, 10) : 0;
	if (ms > 0 && ms < 600000)
		heap_pool_period_ns = (uint64_t)ms * 1000000ull;
}

/* The snapshot buffer and the windows' free blocks, freed when nothing
 * took them since the last look (the span tick has its own buffer, and
 * its rare full copy does not count as a use: detail_persist.c). */
static void wal_heap_recorder_pools(struct ada_recorder *r)
{
	if (!r->dsnap.used && r->dsnap.buf) {
		free(r->dsnap.buf);
		r->dsnap.buf = NULL;
		r->dsnap.cap = 0;
	}
	r->dsnap.used = false;
	if (!r->flight.mem_pool_used)
		wal_detail_pool_free(r);
	r->flight.mem_pool_used = false;
}

/* The pools unused for a period freed. */
static void wal_heap_pool(struct ada_recorder *r)
{
	uint64_t now = wal_now_ns();
	if (now - r->heap_pool_ns < heap_pool_period_ns)
		return;
	r->heap_pool_ns = now;
	(void)ada_wal_io_trim(r->io);
	wal_heap_recorder_pools(r);
}

void wal_heap_tick(struct ada_recorder *r)
{
	wal_heap_pool(r);
	size_t finished = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		finished += r->procs[i]->finished;
	if (finished == r->heap_finished_trimmed)
		return;
	r->heap_finished_trimmed = finished;
	(void)malloc_trim(0);
}

void wal_heap_pools(const struct ada_recorder *r, struct ada_recorder_live *v)
{
	uint32_t made = 0, free_now = 0;
	if (r->io) {
		ada_wal_io_buffers(r->io, &made, &free_now);
		v->heap_staging_bytes = (uint64_t)made * ada_wal_io_buffer_bytes(r->io);
		v->heap_spare_bytes = ada_wal_io_spare_bytes(r->io);
	}
	v->heap_window_bytes = r->flight.mem_bytes + (uint64_t)r->flight.mem_pool_n * PD_BLOCK;
	v->heap_snapshot_bytes = r->dsnap.cap + r->dsnap.ends_cap;
}
