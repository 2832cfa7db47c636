/*
 * ada recover's small steps on a pid directory's files that need nothing
 * of a recovery's state (recover.c's rec_ctx): a manifest read or begun
 * anew, an index file's generation order, a header never written, a new
 * index.atf.
 *
 * Threads: the caller's (ada recover, the orphan scan).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "manifest.h"
#include "recorder_internal.h"

/* Index file names in generation order: index.g<G>.atf by G, then
 * index.atf (qsort on an array of names). */
int rec_gen_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	uint32_t gx = UINT32_MAX, gy = UINT32_MAX;
	sscanf(x, "index.g%u.atf", &gx);
	sscanf(y, "index.g%u.atf", &gy);
	return gx < gy ? -1 : gx > gy;
}

/* True when the first len bytes of fd hold nothing but zeros, or fewer
 * than len bytes exist: the recorder died between creating the file and
 * writing its header (segment.c and detail_file.c write the header before
 * anything else, synchronously), so nothing was ever written into it. */
bool rec_never_written(int fd, size_t len)
{
	unsigned char b[ATF_HEADER_SIZE];
	if (len > sizeof(b))
		len = sizeof(b);
	ssize_t got = pread(fd, b, len, 0);
	if (got < 0)
		return false;
	for (ssize_t i = 0; i < got; i++)
		if (b[i])
			return false;
	return true;
}

/* A new index.atf in the thread directory tfd with the header the drain
 * writes: 0 or -errno. */
int rec_new_index(int tfd, uint32_t tid, uint8_t arch)
{
	int fd = -1, rc = ada_fs_create(tfd, "index.atf", O_RDWR, &fd);
	if (rc < 0)
		return rc;
	struct atf_index_header h;
	wal_fill_header(&h, tid, arch, ATF_CLOCK_BOOTTIME);
	rc = wal_pwrite_all(fd, &h, sizeof(h), 0);
	close(fd);
	return rc;
}

/* pid_dir's manifest, or a new one when it is lost or damaged. */
json_t *rec_manifest_load(const char *pid_dir)
{
	json_t *man = NULL;
	if (ada_manifest_read(pid_dir, &man) < 0 || !man) {
		unsigned pid = 0;
		const char *b = strrchr(pid_dir, '/');
		sscanf(b ? b + 1 : pid_dir, "pid_%u", &pid);
		man = ada_manifest_new((int32_t)pid); /* lost or damaged: start anew */
	}
	return man;
}
