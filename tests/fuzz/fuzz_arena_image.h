/*
 * Shared by fuzz_arena.c and fuzz_recover.c: turns fuzzer bytes into an
 * arena file on a memfd. The first byte selects:
 *   even: the bytes are the whole file, as they are (open must reject what
 *         is not an arena, and never read outside the file);
 *   odd:  the bytes are the file's contents over a small valid geometry
 *         (1..4 slots of 64 events, a detail ring or not, chosen by the
 *         second byte): the header fields ada_arena_open() insists on are
 *         set right, everything else (slot states, tids, sequence numbers,
 *         generations, head, tail, counters, events, process state) is the
 *         fuzzer's, so it explores what the consumer's checks see.
 * The arena's pid is FUZZ_ARENA_PID, a pid no process has.
 */
#ifndef FUZZ_ARENA_IMAGE_H
#define FUZZ_ARENA_IMAGE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring_internal.h"

#define FUZZ_ARENA_PID 0x3ffffff0 /* above PID_MAX_LIMIT: never a process */

static int fuzz_write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes the image into the empty file fd: 0, or -1. */
static int fuzz_arena_write(int fd, const uint8_t *data, size_t size)
{
	if (size < 2)
		return -1;
	if (!(data[0] & 1))
		return fuzz_write_all(fd, data + 1, size - 1);
	struct ada_arena_config cfg;
	ada_arena_config_default(&cfg);
	cfg.max_threads = 1u + (data[1] & 3u);
	cfg.index_events = 64;
	cfg.detail_bytes = (data[1] & 4) ? 4096 : 0;
	cfg.overflow = (data[1] >> 3) & 1;
	cfg.timestamp_source = (data[1] >> 4) & 1;
	struct ring_geometry g;
	if (ring_geometry(&cfg, &g) != 0)
		return -1;
	uint8_t *img = calloc(1, g.total);
	if (!img)
		return -1;
	size_t n = size - 2 < g.total ? size - 2 : g.total;
	memcpy(img, data + 2, n);
	struct ada_arena_control *c = (struct ada_arena_control *)img;
	c->magic = ADA_ARENA_MAGIC;
	c->version = ADA_ARENA_VERSION;
	c->control_size = sizeof(*c);
	c->layout_size = g.total;
	c->desc_offset = g.desc_offset;
	c->slots_offset = g.slots_offset;
	c->slot_stride = g.slot_stride;
	c->detail_offset = g.detail_offset;
	c->keysym_offset = g.keysym_offset;
	c->config = cfg;
	c->pid = FUZZ_ARENA_PID;
	int rc = fuzz_write_all(fd, img, g.total);
	free(img);
	return rc;
}

/* The image as a memfd (the caller closes it), or -1. */
__attribute__((unused)) static int fuzz_arena_image(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_arena", MFD_CLOEXEC);
	if (fd >= 0 && fuzz_arena_write(fd, data, size) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

#endif
