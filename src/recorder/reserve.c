/*
 * Room for the last words: when the disk fills, the final manifests must
 * still be written (decision 8: whatever was recorded stays valid and says
 * what happened). The session keeps <session>/.reserve, RESERVE_BYTES
 * allocated at the start; a manifest write that fails for want of space
 * gives back a piece of it (ftruncate frees the blocks at once) and tries
 * again. The reserve is removed at the end of the recording.
 *
 * Threads: wal_reserve_setup / wal_reserve_end on the caller's thread
 * (before the drain starts, after it is joined); wal_manifest_commit on
 * the drain thread and, after the join, the caller's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fs.h"
#include "manifest.h"
#include "recorder_internal.h"

#define RESERVE_BYTES (1u << 20) /* ~100 final manifests of 10 KiB */
#define RESERVE_STEP (64u << 10)
#define RESERVE_NAME ".reserve"

/* A failure to reserve is not fatal (the disk may already be nearly full):
 * the manifests are then written as space allows. */
void wal_reserve_setup(struct ada_recorder *r)
{
	r->reserve.fd = -1;
	int fd;
	if (ada_fs_create(r->session_fd, RESERVE_NAME, O_RDWR, &fd) != 0)
		return;
	uint64_t want = RESERVE_BYTES;
	/* Never more than an eighth of the disk budget. */
	if (r->o.max_disk_bytes && want > r->o.max_disk_bytes / 8)
		want = r->o.max_disk_bytes / 8 / RESERVE_STEP * RESERVE_STEP;
	while (want && fallocate(fd, 0, 0, (off_t)want) != 0)
		want = want > RESERVE_STEP ? want - RESERVE_STEP : 0;
	r->reserve.fd = fd;
	r->reserve.bytes = want;
}

/* Gives back up to RESERVE_STEP bytes; false when nothing is left. */
static bool reserve_release(struct ada_recorder *r)
{
	if (r->reserve.fd < 0 || !r->reserve.bytes)
		return false;
	uint64_t keep = r->reserve.bytes > RESERVE_STEP ? r->reserve.bytes - RESERVE_STEP : 0;
	if (ftruncate(r->reserve.fd, (off_t)keep) != 0)
		return false;
	r->reserve.bytes = keep;
	r->reserve.used = true;
	return true;
}

/* Writes dirfd/manifest.json (atomically; fsync only with --safe), using
 * the reserve when the disk is full. */
int wal_manifest_commit(struct ada_recorder *r, int dirfd, json_t *root)
{
	if (dirfd < 0)
		return -ENOENT;
	int rc;
	for (;;) {
		rc = ada_manifest_writeat_sync(dirfd, root, r->o.flush.safe);
		if ((rc != -ENOSPC && rc != -EDQUOT) || !reserve_release(r))
			break;
	}
	if (rc < 0 && !r->manifest_error)
		r->manifest_error = rc;
	return rc;
}

void wal_reserve_end(struct ada_recorder *r)
{
	if (r->reserve.fd < 0)
		return;
	close(r->reserve.fd);
	r->reserve.fd = -1;
	r->reserve.bytes = 0;
	unlinkat(r->session_fd, RESERVE_NAME, 0);
}
