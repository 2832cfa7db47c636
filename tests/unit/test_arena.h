/* A private arena for the ring unit tests: made in /dev/shm under a fresh
 * name and unlinked at once (the mapping is all a test needs), so a killed
 * run leaves nothing in /dev/shm. */
#ifndef ADA_TEST_ARENA_H
#define ADA_TEST_ARENA_H

#include <stdlib.h>
#include <unistd.h>

#include "ring.h"

/* cmocka.h is the includer's (it needs its own headers before it). */
static inline struct ada_arena *test_arena_new(const struct ada_arena_config *cfg)
{
	char path[] = "/dev/shm/ada-test-arena-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	struct ada_arena *a = NULL;
	assert_int_equal(ada_arena_create(path, cfg, &a, NULL), 0);
	unlink(path);
	return a;
}

#endif
