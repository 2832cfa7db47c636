/*
 * Trampolines staged and copied into their block (agent_stage.c): the
 * bytes of each window land where they were emitted, the gaps between
 * them are zeros as in a fresh block, the undo entries arrive in order,
 * and the one staging buffer kept for the process starts every install
 * clean -- including after one whose last trampoline failed half written
 * past the end of what was used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "agent_internal.h"

struct agent_state agent;

#define BLK (256u << 10) /* more than one window (64 KiB) */

/* A fresh block as an install gets one: zeros. */
static uint8_t *block(void)
{
	uint8_t *b = mmap(NULL, BLK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_ptr_not_equal(b, MAP_FAILED);
	return b;
}

/* One install: a trampoline of len bytes of value (i % 250) + 1 every 16
 * aligned slot from used, n of them; returns the used end. want gets the
 * block's expected bytes. */
static size_t install(struct agent_stage *st, uint8_t *blk, uint8_t *want, size_t used, size_t n,
                      struct hook_patch *undo)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = 24 + i % 100;
		uint8_t *at = agent_stage_at(st, blk, used);
		memset(at, (int)(i % 250) + 1, len);
		memset(want + used, (int)(i % 250) + 1, len);
		struct hook_patch *u = agent_stage_undo_at(st, i);
		*u = (struct hook_patch){.addr = 0x1000 + i, .len = 5};
		used += (len + 15) & ~(size_t)15;
	}
	(void)undo;
	return used;
}

static void test_stage_windows(void **state)
{
	(void)state;
	uint8_t *blk = block(), *want = calloc(1, BLK);
	struct hook_patch *undo = calloc(1200, sizeof(*undo));
	assert_non_null(want);
	assert_non_null(undo);
	struct agent_stage st;
	agent_stage_init(&st, 64, undo);
	assert_non_null(st.buf);
	size_t used = install(&st, blk, want, 64, 1100, undo); /* ~100 KiB: two windows */
	assert_true(used > (64u << 10));
	agent_stage_flush(&st, blk, used, true);
	assert_null(st.buf);
	assert_memory_equal(blk, want, BLK);
	for (size_t i = 0; i < 1100; i++)
		assert_int_equal(undo[i].addr, 0x1000 + i);
	munmap(blk, BLK);

	/* The next install: the kept buffer, all zeros again, even after a
	 * trampoline left bytes past what was used. */
	blk = block();
	memset(want, 0, BLK);
	agent_stage_init(&st, 32, undo);
	used = install(&st, blk, want, 32, 10, undo);
	memset(agent_stage_at(&st, blk, used), 0xee, 40); /* failed half written */
	agent_stage_flush(&st, blk, used, true);
	munmap(blk, BLK);
	blk = block();
	memset(want, 0, BLK);
	agent_stage_init(&st, 32, undo);
	for (size_t i = 0; i < (64u << 10); i++)
		assert_int_equal(st.buf[i], 0);
	used = install(&st, blk, want, 32, 3, undo);
	agent_stage_flush(&st, blk, used + 64, true); /* a gap at the end */
	assert_memory_equal(blk, want, BLK);
	munmap(blk, BLK);
	free(want);
	free(undo);
}

/* ada attach writes in place: no buffer. */
static void test_stage_attached(void **state)
{
	(void)state;
	uint8_t *blk = block();
	struct hook_patch undo[2];
	struct agent_stage st;
	agent.attached = true;
	agent_stage_init(&st, 16, undo);
	assert_null(st.buf);
	assert_ptr_equal(agent_stage_at(&st, blk, 48), blk + 48);
	assert_ptr_equal(agent_stage_undo_at(&st, 1), &undo[1]);
	agent_stage_flush(&st, blk, 64, true);
	agent.attached = false;
	munmap(blk, BLK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stage_windows),
	    cmocka_unit_test(test_stage_attached),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
