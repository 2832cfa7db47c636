/*
 * Which ring positions each thread's unfinished index file holds, kept on
 * disk for `ada recover`: pid_N/.ring_slots, one 32-byte record per ring
 * slot at offset slot x 32, written in place (pwrite, no fsync: a killed
 * recorder's writes are in the page cache) each time the drain opens a
 * thread's index.atf (the thread's start and each rotation):
 *
 *   u32 magic "ARS2" | u32 slot | u32 thread_seq | u32 generation |
 *   u64 base | u32 crc32 of the 24 bytes before and the 4 after |
 *   u32 file generation
 *
 * "file event i is ring position base + i of slot `slot` while it holds
 * generation `generation` of thread `thread_seq`, in the index.atf that
 * becomes index.g<file generation>.atf when it is rotated". The file
 * generation is what tells a stale record from the current file's: a
 * rotation's put that fails leaves the record of the file before, whose
 * base is not the current file's; recover, finding index.g<G>.atf with G
 * at or past the record's file generation, knows the record is that
 * rotated file's and does not use it (its base taken for the current
 * file's would read ring events already on disk a second time). Each
 * index.atf the drain opens has a file generation of its own (a rotation
 * that could not keep its file as a generation skips its G too).
 * "ARS1" records (recorders before this; the last word 0, the CRC of the
 * 24 bytes before it only) have none: used as before. A slot a later thread
 * takes gets that thread's record over the earlier one's, whose file is
 * final by then (a slot is freed only once its ring is empty); recover
 * checks a record against the arena's slot (same thread, same generation)
 * before it uses it, as it did the per-thread thread_K/.ring_base files
 * this replaces (a create, a write, a close, and at the end the folder's
 * open, an unlink and a close per thread; now one pwrite; old sessions'
 * files are still read, recover.c). Removed with the final manifest.
 *
 * When that manifest cannot be written (a full disk past the reserve),
 * the finished process's record 0 is replaced by a "drained" record:
 *
 *   u32 magic "ARSD" | u32 0 | 16 bytes 0 | u32 crc32 as above | u32 0
 *
 * "every ring of this process was drained into its files, which are
 * final": its arena is removed next, and recover, finding it gone, says
 * the manifest is not final rather than that the rings' events are lost.
 * An in-place write of a block the file has: no new space. Slot 0's
 * record is not needed any more (its file is final). Readers before it
 * skip it as a record ada does not write.
 *
 * Threads: the writer on the drain thread; the reader on the `ada
 * recover` command's. Read back as input from a place the user owns:
 * every record checked (magic, its own slot, CRC), the file's size bounded
 * by the slot limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fs.h"
#include "ring.h"
#include "recorder_internal.h"

#define RING_TABLE_NAME ".ring_slots"
#define RING_TABLE_MAGIC1 0x31535241u  /* "ARS1": no file generation */
#define RING_TABLE_MAGIC 0x32535241u   /* "ARS2" */
#define RING_TABLE_DRAINED 0x44535241u /* "ARSD": the process was drained */
#define RING_TABLE_CHUNK 256u          /* records read at a time */

struct ring_table_rec {
	uint32_t magic, slot, seq, gen;
	uint64_t base;
	uint32_t crc, file_gen; /* ARS1: 0 */
};
_Static_assert(sizeof(struct ring_table_rec) == WAL_RING_TABLE_REC, "32-byte records");

/* Bytes 0-23, then (ARS2) the file generation: every word but the CRC's
 * own is checked, as ARS1's last word was (it had to be 0). */
static uint32_t ring_table_crc(const struct ring_table_rec *r)
{
	uLong c = crc32(0, (const unsigned char *)r, offsetof(struct ring_table_rec, crc));
	if (r->magic == RING_TABLE_MAGIC)
		c = crc32(c, (const unsigned char *)&r->file_gen, sizeof(r->file_gen));
	return (uint32_t)c;
}

/* pid_N/.ring_slots, made on the first thread's file: anything already
 * under the name (a planted file or link: pid_N/ may be the agent's) is
 * removed first, never written through. */
static int ring_table_open(struct wal_proc *p)
{
	int fd = -1, rc = ada_fs_create(p->dir_fd, RING_TABLE_NAME, O_WRONLY, &fd);
	if (rc == -EEXIST && unlinkat(p->dir_fd, RING_TABLE_NAME, 0) == 0)
		rc = ada_fs_create(p->dir_fd, RING_TABLE_NAME, O_WRONLY, &fd);
	return rc < 0 ? rc : fd;
}

static int ring_table_write(struct wal_proc *p, const struct wal_thread *t)
{
	if (p->dir_fd < 0)
		return -EBADF;
	if (!p->ring_table_open) {
		int fd = ring_table_open(p);
		if (fd < 0)
			return fd; /* tried again at the next thread's file */
		p->ring_table_fd = fd;
		p->ring_table_open = true;
	}
	struct ring_table_rec rec = {
	    .magic = RING_TABLE_MAGIC,
	    .slot = t->slot,
	    .seq = t->seq,
	    .gen = t->slot_gen,
	    .base = t->ring_next,
	    .file_gen = t->next_gen, /* its name once rotated */
	};
	rec.crc = ring_table_crc(&rec);
	off_t at = (off_t)t->slot * WAL_RING_TABLE_REC;
	ssize_t n = pwrite(p->ring_table_fd, &rec, sizeof(rec), at);
	return n == (ssize_t)sizeof(rec) ? 0 : n < 0 ? -errno : -ENOSPC;
}

/* The drained record (wal_ring_table_drained), all of it as written. */
static struct ring_table_rec ring_table_drained_rec(void)
{
	struct ring_table_rec rec = {.magic = RING_TABLE_DRAINED};
	rec.crc = ring_table_crc(&rec);
	return rec;
}

int wal_ring_table_drained(struct wal_proc *p)
{
	if (!p->ring_table_open)
		return -ENOENT; /* no table: recover cannot be told (no thread file) */
	struct ring_table_rec rec = ring_table_drained_rec();
	ssize_t n = pwrite(p->ring_table_fd, &rec, sizeof(rec), 0);
	return n == (ssize_t)sizeof(rec) ? 0 : n < 0 ? -errno : -ENOSPC;
}

int wal_ring_table_put(struct wal_proc *p, const struct wal_thread *t)
{
	int rc = ring_table_write(p, t);
	if (rc < 0 && p->ring_table_fails++ == 0)
		p->ring_table_err = rc;
	return rc;
}

/* Without its record recover finds where a file ends by the file's last
 * event's time instead (recover.c rec_time_skip): one sentence per
 * process. A rotation's put rewrites the thread's own record in place
 * (its blocks are there: no ENOSPC, no new descriptor), so it fails only
 * on an I/O error; the record left then is the file before's, which
 * recover tells by its file generation while that file is on disk
 * (docs/format.md): said here all the same. */
void wal_ring_table_failed(struct ada_recorder *r, struct wal_proc *p)
{
	char msg[384];
	snprintf(msg, sizeof(msg),
	         "pid %d: the ring positions of %u index file%s could not be kept in "
	         "pid_N/.ring_slots (first: %s); after a recorder crash `ada recover` finds "
	         "where they end by their last event's time",
	         (int)p->pid, p->ring_table_fails, p->ring_table_fails == 1 ? "" : "s",
	         strerror(-p->ring_table_err));
	if (!p->warnings)
		return;
	if (p->ring_table_fails > 1 && p->ring_table_warn < json_array_size(p->warnings)) {
		json_array_set_new(p->warnings, p->ring_table_warn, json_string(msg));
		return;
	}
	p->ring_table_warn = json_array_size(p->warnings);
	wal_note(r, p, "%s", msg);
}

void wal_ring_table_close(struct wal_proc *p)
{
	if (p->ring_table_open)
		close(p->ring_table_fd);
	p->ring_table_open = false;
}

void wal_ring_table_drop(struct wal_proc *p)
{
	bool had = p->ring_table_open;
	wal_ring_table_close(p);
	if (had && p->dir_fd >= 0)
		unlinkat(p->dir_fd, RING_TABLE_NAME, 0);
}

/* One record read back: true when it is one the drain wrote for slot s. */
static bool ring_table_check(const struct ring_table_rec *r, uint32_t s)
{
	return (r->magic == RING_TABLE_MAGIC || (r->magic == RING_TABLE_MAGIC1 && !r->file_gen)) &&
	       r->slot == s && r->crc == ring_table_crc(r);
}

/* Record 0 replaced by the drained record. */
static bool ring_table_is_drained(const struct ring_table_rec *r, uint32_t s)
{
	struct ring_table_rec d = ring_table_drained_rec();
	return s == 0 && !memcmp(r, &d, sizeof(d));
}

static int ring_table_cmp(const void *a, const void *b)
{
	const struct wal_ring_base *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Every record of fd (size bytes, at most the slot limit's) into tb. */
static void ring_table_read(int fd, uint64_t size, struct wal_ring_table *tb)
{
	struct ring_table_rec buf[RING_TABLE_CHUNK];
	uint64_t nrec = size / WAL_RING_TABLE_REC;
	nrec = nrec < ADA_ARENA_SLOTS_LIMIT ? nrec : ADA_ARENA_SLOTS_LIMIT;
	if (nrec && !(tb->v = calloc(nrec, sizeof(*tb->v))))
		return;
	for (uint64_t s = 0; s < nrec;) {
		uint64_t k = nrec - s < RING_TABLE_CHUNK ? nrec - s : RING_TABLE_CHUNK;
		ssize_t got =
		    pread(fd, buf, k * WAL_RING_TABLE_REC, (off_t)(s * WAL_RING_TABLE_REC));
		if (got <= 0)
			break;
		k = (uint64_t)got / WAL_RING_TABLE_REC;
		for (uint64_t i = 0; i < k; i++, s++) {
			const struct ring_table_rec *r = &buf[i];
			static const struct ring_table_rec none;
			if (!memcmp(r, &none, sizeof(none)))
				continue; /* a slot no thread of a file had (a hole) */
			if (ring_table_is_drained(r, (uint32_t)s)) {
				tb->drained = true;
				continue;
			}
			if (!ring_table_check(r, (uint32_t)s)) {
				tb->bad++;
				continue;
			}
			tb->v[tb->n++] = (struct wal_ring_base){
			    .slot = r->slot,
			    .seq = r->seq,
			    .gen = r->gen,
			    .base = r->base,
			    .file_gen = r->magic == RING_TABLE_MAGIC ? r->file_gen
			                                             : WAL_RING_FILE_GEN_NONE};
		}
		if (k == 0)
			break;
	}
	if (tb->n) /* v is NULL for a file shorter than a record */
		qsort(tb->v, tb->n, sizeof(*tb->v), ring_table_cmp);
}

void wal_ring_table_load(const char *pid_dir, struct wal_ring_table *tb)
{
	char path[PATH_MAX + 16];
	struct stat st;
	int fd = -1;
	memset(tb, 0, sizeof(*tb));
	snprintf(path, sizeof(path), "%s/" RING_TABLE_NAME, pid_dir);
	if (ada_fs_open_file(AT_FDCWD, path, O_RDONLY, &fd) < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		tb->found = true;
		ring_table_read(fd, (uint64_t)st.st_size, tb);
	}
	close(fd);
}

bool wal_ring_table_find(const struct wal_ring_table *tb, uint32_t seq, struct wal_ring_base *out)
{
	struct wal_ring_base key = {.seq = seq};
	const struct wal_ring_base *b =
	    tb->n ? bsearch(&key, tb->v, tb->n, sizeof(*tb->v), ring_table_cmp) : NULL;
	if (b)
		*out = *b;
	return b != NULL;
}

/* Sessions recorded before the table: thread_K/.ring_base, one text line
 * the drain wrote per thread (no file generation). */
static bool ring_table_legacy(const char *dir, struct wal_ring_base *out)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/.ring_base", dir);
	int fd = -1;
	FILE *fp = NULL;
	unsigned long long base;
	if (ada_fs_open_file(AT_FDCWD, path, O_RDONLY, &fd) == 0 && !(fp = fdopen(fd, "r")))
		close(fd);
	if (!fp)
		return false;
	bool ok = fscanf(fp, "slot %u generation %u base %llu", &out->slot, &out->gen, &base) == 3;
	out->base = base;
	out->file_gen = WAL_RING_FILE_GEN_NONE;
	fclose(fp);
	return ok;
}

bool wal_ring_table_lookup(const struct wal_ring_table *tb, const char *thread_dir, uint32_t seq,
                           struct wal_ring_base *out)
{
	return wal_ring_table_find(tb, seq, out) || ring_table_legacy(thread_dir, out);
}

bool wal_ring_table_rotated(uint32_t file_gen, char *const *names, size_t n)
{
	uint32_t g;
	if (file_gen == WAL_RING_FILE_GEN_NONE)
		return false;
	for (size_t i = 0; i < n; i++)
		if (sscanf(names[i], "index.g%u.atf", &g) == 1 && g >= file_gen)
			return true;
	return false;
}

void wal_ring_table_remove(const char *pid_dir)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/" RING_TABLE_NAME, pid_dir);
	(void)ada_fs_unlink_path(path); /* none is fine */
}

void wal_ring_table_free(struct wal_ring_table *tb)
{
	free(tb->v);
	memset(tb, 0, sizeof(*tb));
}
